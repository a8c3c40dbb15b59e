"""CLOSURE's reported accuracies: baseline and zero-shot per family and model, drops, answer chance."""
from __future__ import annotations
from dataclasses import dataclass, field
from typing import NamedTuple

from .families import (COUNT_ANSWERS, ClosureFamilyError, _read_toml, _values, load_families)
from .clevr_templates import (ClevrTemplate, _template_arg)

#: The answer kinds that are yes/no questions (one concept each; chance 50 %).
YES_NO_KINDS = ("exist", "yes_no_same", "compare_count")


def answer_chance(family, values=None) -> float:
    """Chance accuracy (%) on a family's (or a CLEVR template's) questions: a guess uniform
    over the answers a question allows.  Yes/no questions: 50; counts: 100/3 (CLOSURE's
    generator answers 1, 2 or 3, equally often, Appendix F); a query: 100/|values of the
    queried attribute|, averaged over the family's draws of ``<Q>`` (uniform over its
    ``query_attributes`` other than ``<A>``, ``<A>`` uniform over the attributes)."""
    values = _values(values)
    if isinstance(family, str):
        known = load_families()
        family = known[family] if family in known else _template_arg(family)
    kind = family.answer_kind
    if kind in YES_NO_KINDS:
        return 50.0
    if kind == "count":
        return 100.0 / len(COUNT_ANSWERS)
    if isinstance(family, ClevrTemplate):
        return 100.0 / len(values[family.query_attribute])
    attributes = values["attribute"] if family.has_attribute else (None,)
    total = 0.0
    for a in attributes:
        queries = [q for q in family.query_attributes if q != a]
        total += sum(100.0 / len(values[q]) for q in queries) / len(queries)
    return total / len(attributes)


class Accuracy(NamedTuple):
    """A reported accuracy in %: the mean over runs and its standard deviation (``None``
    where the paper prints none)."""

    mean: float
    std: float | None


@dataclass(frozen=True)
class Reported:
    """The accuracies of ``[reported]``.

    ``zero_shot``, ``baseline``, ``few_shot``: model -> family -> :class:`Accuracy`;
    ``clevr_val``: model -> :class:`Accuracy`; ``zero_shot_mac_original``: family ->
    :class:`Accuracy`; ``sources``: table name -> where in the paper it is;
    ``answer_kinds``: test family -> its answer kind; ``chance``: test family -> chance
    accuracy in % (:func:`answer_chance`).
    """

    paper: str
    models: tuple
    zero_shot: dict
    baseline: dict
    few_shot: dict
    clevr_val: dict
    zero_shot_mac_original: dict
    sources: dict
    answer_kinds: dict = field(default_factory=dict)
    chance: dict = field(default_factory=dict)

    def drop(self, model: str, family: str) -> float:
        """Baseline minus zero-shot accuracy (percentage points) of ``model`` on ``family``."""
        try:
            return round(self.baseline[model][family].mean - self.zero_shot[model][family].mean, 6)
        except KeyError:
            raise ClosureFamilyError(f"no reported zero-shot and baseline accuracy of {model!r} "
                                     f"on {family!r}") from None

    def normalised_drop(self, model: str, family: str) -> float:
        """The drop against chance: (baseline - zero-shot) / (baseline - chance), 0 = no drop,
        1 = down to chance (NaN where the baseline is at chance)."""
        drop = self.drop(model, family)
        if family not in self.chance:
            raise ClosureFamilyError(f"no chance level of family {family!r}")
        above = self.baseline[model][family].mean - self.chance[family]
        return round(drop / above, 6) if above > 0 else float("nan")


class FamilyDrop(NamedTuple):
    """One model's accuracy drop on one CLOSURE family, absolute and against chance (in %,
    points, and a fraction for ``normalised_drop``)."""

    family: str
    model: str
    answer_kind: str
    chance: float
    baseline: float
    zero_shot: float
    drop: float
    normalised_drop: float


def family_drops(path=None) -> list:
    """Every reported (family, model) pair: :class:`FamilyDrop` rows in file order of families
    and of ``models``: baseline and zero-shot accuracy, the family's answer kind and chance
    level, the drop (baseline - zero-shot) and the chance-normalised drop
    ((baseline - zero-shot) / (baseline - chance))."""
    rep = load_reported(path)
    out = []
    for family in rep.chance:
        for model in rep.models:
            base, zero = rep.baseline.get(model, {}).get(family), rep.zero_shot.get(model, {}).get(family)
            if base is None or zero is None:
                continue
            out.append(FamilyDrop(family, model, rep.answer_kinds[family], round(rep.chance[family], 6), base.mean,
                                  zero.mean, rep.drop(model, family), rep.normalised_drop(model, family)))
    return out


def load_reported(path=None) -> Reported:
    """The ``[reported]`` table of a CLOSURE family file (default: the packaged one)."""
    path, raw = _read_toml(path)
    rep = raw.get("reported")
    if not isinstance(rep, dict):
        raise ClosureFamilyError(f"{path}: no [reported] table")
    tests = {f["name"] for f in raw.get("family", []) if isinstance(f, dict) and f.get("role") == "test"}

    def fail(where, message):
        raise ClosureFamilyError(f"{path}: [reported.{where}]: {message}")

    def accuracy(where, value) -> Accuracy:
        ok = (isinstance(value, dict) and set(value) <= {"mean", "std"} and "mean" in value
              and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()))
        if not ok:
            fail(where, f"expected {{mean = ..., std = ...}}, got {value!r}")
        std = value.get("std")
        return Accuracy(float(value["mean"]), None if std is None else float(std))

    def per_family(where, table) -> dict:
        if not isinstance(table, dict):
            fail(where, "must be a table")
        unknown = sorted(set(table) - tests)
        if unknown:
            fail(where, f"unknown test famil{'ies' if len(unknown) > 1 else 'y'} {', '.join(unknown)}")
        return {f: accuracy(f"{where}.{f}", v) for f, v in table.items()}

    sources, tables = {}, {}
    for name in ("zero_shot", "baseline", "few_shot"):
        section = dict(rep.get(name, {}))
        sources[name] = section.pop("source", "")
        tables[name] = {model: per_family(f"{name}.{model}", t) for model, t in section.items()}
    section = dict(rep.get("clevr_val", {}))
    sources["clevr_val"] = section.pop("source", "")
    clevr = {model: accuracy(f"clevr_val.{model}", v) for model, v in section.items()}
    section = dict(rep.get("zero_shot_mac_original", {}))
    sources["zero_shot_mac_original"] = section.pop("source", "")
    mac = per_family("zero_shot_mac_original", section)
    unknown = sorted(set(rep) - {"paper", "models", *sources})
    if unknown:
        raise ClosureFamilyError(f"{path}: [reported]: unknown key(s) {', '.join(unknown)}")
    families = {n: f for n, f in load_families(path).items() if f.role == "test"} if raw.get("family") else {}
    return Reported(paper=str(rep.get("paper", "")), models=tuple(rep.get("models", ())),
                    zero_shot=tables["zero_shot"], baseline=tables["baseline"], few_shot=tables["few_shot"],
                    clevr_val=clevr, zero_shot_mac_original=mac, sources=sources,
                    answer_kinds={n: f.answer_kind for n, f in families.items()},
                    chance={n: answer_chance(f) for n, f in families.items()})
