"""Published model results of the seed papers as data, and one reader for your own.

The oracle ladder sets the ideal learners' gaps beside how real models did on each
benchmark.  This module holds those published numbers as tables, each number with the
paper table it was copied from, in one shape for every benchmark:

* :func:`load` -- a benchmark's published results: ``"curi"`` (CURI's mAP per split, hard
  and easy negatives, and its class-balanced accuracy), ``"closure"`` (CLOSURE's accuracy
  drop per test family), ``"conceptworld"`` (ConceptWorld's F1 per experiment condition),
  ``"rlcl"`` (RLCL's unseen accuracy and more per dataset); :func:`benchmarks` lists them;
* :func:`read` -- a file of your own in the same TOML format
  (``hypotheses/published/README.md`` describes it); :meth:`PublishedResults.write` writes one;
* :class:`PublishedResults` -- the results: a long table (:meth:`~PublishedResults.frame`),
  per-condition values and difficulties (:meth:`~PublishedResults.values`,
  :meth:`~PublishedResults.difficulty`), a check against a space's split names
  (:meth:`~PublishedResults.check`), and your model's numbers beside the published ones
  (:meth:`~PublishedResults.with_model`, :meth:`~PublishedResults.merge`).

**Units.**  Every value is in **percent** (0-100; a difference such as CLOSURE's accuracy drop
in percentage points, -100..100).  A file may be written in fractions (``unit =
"fraction"``, as ConceptWorld prints its F1 scores); they are multiplied by 100 on reading.

Where the numbers live: CURI's and RLCL's in ``hypotheses/published/curi.toml`` and
``rlcl.toml``; CLOSURE's in ``hypotheses/closure/families.toml`` (read through
:func:`bayes_concepts.suites.closure.load_reported`); ConceptWorld's in
``hypotheses/conceptworld/reported.toml`` (Tables 4, 6, 8, 10) and
``hypotheses/published/conceptworld.toml`` (Table 11), both in reported.toml's layout, read
here with their condition names mapped to the split names ConceptWorld's experiments produce.

>>> pub = load("curi")
>>> pub.measure, pub.higher_is_better, len(pub.models()), len(pub.conditions())
('map', True, 11, 9)
>>> float(pub.values("schema relation-net", "hard")["counting"])
57.4
>>> mine = pub.with_model("mine", {"counting": 60.0}, table="ours", negatives="hard")
>>> float(mine.difficulty("mine", "hard")["counting"])
-60.0
"""
from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd

from .errors import BayesConceptsError
from . import text_files
from .registry import Registry
from .text_files import read_text


class PublishedError(BayesConceptsError):
    """A published-results file or call that is not valid; names the file (or call) and key."""


@dataclass(frozen=True)
class Measure:
    """What a value measures: ``higher_is_better`` orients it, ``difference`` allows negative
    values (percentage points in -100..100; otherwise percent in 0..100)."""

    name: str
    higher_is_better: bool
    description: str = ""
    difference: bool = False


#: Measures every file may use without declaring them (a file's ``[measures.<name>]`` adds others).
MEASURES: dict = {m.name: m for m in (
    Measure("map", True, "mean average precision over test episodes (%)"),
    Measure("cba", True, "class-balanced accuracy on the query set (%)"),
    Measure("accuracy", True, "accuracy (%)"),
    Measure("f1", True, "F1 score (%)"),
    Measure("unseen_accuracy", True, "accuracy on unseen compositions (%)"),
    Measure("seen_accuracy", True, "accuracy on seen compositions (%)"),
    Measure("harmonic_mean", True, "harmonic mean of seen and unseen accuracy (%)"),
    Measure("auc", True, "area under the seen-unseen accuracy curve (%)"),
    Measure("baseline_accuracy", True, "accuracy on the closest training-distribution questions (%)"),
    Measure("zero_shot_accuracy", True, "zero-shot accuracy on the generalisation test (%)"),
    Measure("accuracy_drop", False, "baseline accuracy minus zero-shot accuracy (percentage points)",
            difference=True),
    Measure("normalised_drop", False, "the drop against chance, (baseline - zero-shot) / (baseline - chance), "
            "in percent of the baseline's margin above chance (100: down to chance)", difference=True),
)}

#: Columns of :meth:`PublishedResults.frame`, in order.
COLUMNS = ("model", "condition", "negatives", "measure", "value", "table", "experiment", "sd", "ci95", "source")
#: Units a file may be written in, and the factor that turns them into percent.
UNITS = {"percent": 1.0, "fraction": 100.0}
#: The benchmarks :func:`load` knows.

_KEY_COLUMNS = ["experiment", "model", "condition", "negatives", "measure"]
_TOP_KEYS = {"benchmark", "paper", "measure", "unit", "defaults", "measures", "models", "block"}
_BLOCK_KEYS = {"table", "measure", "negatives", "experiment", "unit", "condition", "model", "values", "sd", "ci95",
               "note"}
_DEFAULT_KEYS = ("negatives", "experiment")


# ============================================================================ the results
class PublishedResults:
    """Published (or your own) model results on one benchmark.

    Attributes
    ----------
    benchmark : str
        ``"curi"``, ``"closure"``, ``"conceptworld"``, ``"rlcl"`` or a user file's name for it.
    measure : str
        The primary measure (``"map"``, ``"accuracy_drop"``, ``"f1"``, ``"unseen_accuracy"``):
        what :meth:`values` and :meth:`difficulty` return unless told another.
    measures : dict
        ``{name: Measure}`` of every measure the results use.
    paper : str
        The paper the numbers come from ("" for a user's file that names none).
    defaults : dict
        ``{"negatives" | "experiment": value}`` used when a call leaves that choice open and
        the results hold several (CURI: hard negatives; RLCL: K_sc = 5).
    model_info : dict
        ``{model: {key: value}}``, descriptive fields of a file's ``[models.<name>]`` tables.
    """

    def __init__(self, frame: pd.DataFrame, *, benchmark: str, measure: str, measures: Mapping, paper: str = "",
                 defaults: Mapping | None = None, model_info: Mapping | None = None, sources: Iterable = ()):
        self._frame = frame.reset_index(drop=True)
        self.benchmark = benchmark
        self.measure = measure
        self.measures = dict(measures)
        self.paper = paper
        self.defaults = dict(defaults or {})
        self.model_info = {m: dict(v) for m, v in (model_info or {}).items()}
        self.sources = tuple(dict.fromkeys(sources))

    # ------------------------------------------------------------------ descriptive
    @property
    def source(self) -> str:
        """Where the numbers were read from: a file path, or several joined by ``"; "``."""
        return "; ".join(self.sources)

    @property
    def higher_is_better(self) -> bool:
        """Whether a higher value of the primary measure is better (mAP, F1, accuracy: ``True``;
        a drop: ``False``)."""
        return self.measures[self.measure].higher_is_better

    def __repr__(self) -> str:
        return (f"PublishedResults({self.benchmark!r}, measure={self.measure!r}, {len(self.models())} models x "
                f"{len(self.conditions())} conditions, {len(self._frame)} values, source={self.source!r})")

    def __len__(self) -> int:
        return len(self._frame)

    def frame(self) -> pd.DataFrame:
        """The results in long format, one row per number, columns :data:`COLUMNS`.

        ``model``, ``condition`` (a split name), ``negatives`` (``"hard"``/``"easy"``, or ``""``
        where the benchmark has none), ``measure``, ``value`` (percent), ``table`` (where in the
        paper), ``experiment`` (a sub-table inside which condition names are unique:
        ConceptWorld's experiments, RLCL's K_sc settings; ``""`` where none), ``sd`` and
        ``ci95`` (the printed standard deviation / 95 % interval half-width in percent, NaN
        where none is printed), ``source`` (the file).  A copy: changing it changes nothing here.
        """
        return self._frame.copy()

    def models(self, measure: str | None = None) -> list:
        """Models with a value of ``measure`` (default: the primary one), in file order."""
        rows = self._frame[self._frame.measure == self._measure(measure)]
        return list(dict.fromkeys(rows.model))

    def conditions(self, experiment: str | None = None) -> list:
        """Condition (split) names, in file order; of one experiment when ``experiment`` is given."""
        rows = self._frame if experiment is None else self._frame[self._frame.experiment == self._pick(
            "experiment", experiment, self._frame, "conditions")]
        return list(dict.fromkeys(rows.condition))

    def experiments(self) -> list:
        """The experiments (sub-tables) of the results, in file order; ``[]`` where there are none."""
        return [e for e in dict.fromkeys(self._frame.experiment) if e]

    def experiment(self, name: str) -> "PublishedResults":
        """The results of one experiment (ConceptWorld: ``"productivity"``, ...; RLCL: ``"ksc5"``, ...)."""
        name = self._pick("experiment", name, self._frame, "experiment")
        defaults = {k: v for k, v in self.defaults.items() if k != "experiment"}
        return self._derive(self._frame[self._frame.experiment == name], defaults=defaults)

    # ------------------------------------------------------------------ per condition
    def values(self, model: str | None = None, negatives: str | None = None, *, experiment: str | None = None,
               measure: str | None = None) -> pd.Series:
        """One value per condition: ``model``'s, or with ``model=None`` the mean over the models
        that report the condition (each model counted once).

        Parameters
        ----------
        model : str, optional
            A model of :meth:`models`; ``None``: the mean over models.
        negatives, experiment : str, optional
            Which negatives / experiment; ``None`` is allowed when the results hold only one,
            or the file names a default (CURI: ``"hard"``; RLCL: ``"ksc5"``).
        measure : str, optional
            A measure of :attr:`measures`; default the primary :attr:`measure`.

        Returns
        -------
        pandas.Series
            Indexed by condition (file order), in percent, named after the measure.  Its
            ``attrs["n_models"]`` is ``{condition: number of models averaged}`` (see
            :meth:`n_models`); ``attrs`` also record benchmark, measure, negatives and experiment.
        """
        rows, chosen = self._rows(model, negatives, experiment, measure, "values")
        grouped = rows.groupby("condition", sort=False)["value"]
        order = [c for c in self.conditions() if c in set(rows.condition)]
        series = grouped.mean().reindex(order)
        series.index.name = "condition"
        series.name = chosen["measure"]
        series.attrs = {"benchmark": self.benchmark, **chosen, "model": model,
                        "higher_is_better": self.measures[chosen["measure"]].higher_is_better,
                        "n_models": {str(k): int(v) for k, v in grouped.size().reindex(order).items()}}
        return series

    def n_models(self, negatives: str | None = None, *, experiment: str | None = None,
                 measure: str | None = None) -> pd.Series:
        """How many models report each condition (the counts behind ``values(model=None)``)."""
        series = pd.Series(self.values(None, negatives, experiment=experiment, measure=measure).attrs["n_models"],
                           name="n_models", dtype="int64")
        series.index.name = "condition"
        return series

    def difficulty(self, model: str | None = None, negatives: str | None = None, *, experiment: str | None = None,
                   measure: str | None = None) -> pd.Series:
        """:meth:`values` oriented so that higher = harder for the model: ``-value`` for a
        measure where higher is better (mAP, F1, accuracy), ``value`` for a drop."""
        values = self.values(model, negatives, experiment=experiment, measure=measure)
        out = -values if values.attrs["higher_is_better"] else values.copy()
        out.name = "difficulty"
        out.attrs = dict(values.attrs)
        return out

    # ------------------------------------------------------------------ checks
    def check(self, conditions, models: Iterable | None = None, *, experiment: str | None = None) -> "PublishedResults":
        """Raise :class:`PublishedError` naming the first condition (then model) of the results
        that ``conditions`` (e.g. a space's split names, or a ``{name: Split}`` dict) lack, and the
        file it came from; ``models``, when given, is checked the same way.  ``experiment``
        restricts the check to one experiment.  Returns ``self``."""
        rows = self._frame
        if experiment is not None:
            rows = rows[rows.experiment == self._pick("experiment", experiment, rows, "check")]
        for column, given in (("condition", conditions), ("model", models)):
            if given is None:
                continue
            if isinstance(given, str):
                raise PublishedError(f"check: {column}s must be a list of names, got the string {given!r}")
            known = set(given.keys() if isinstance(given, Mapping) else given)
            missing = rows[~rows[column].isin(known)]
            if len(missing):
                row = missing.iloc[0]
                where = f" (experiment {row.experiment})" if row.experiment else ""
                raise PublishedError(
                    f"{row.source}: {column} {row[column]!r}{where}, from {row.table}, is not among the given "
                    f"{column}s ({', '.join(sorted(map(str, known))) or 'none'})")
        return self

    def coverage(self, conditions) -> tuple:
        """Which of the results' conditions are among ``conditions`` (a space's split names, or
        a ``{name: Split}`` dict): ``(common, not_given)``, each a list of condition names in
        file order.  A condition of an experiment counts as given when its name or
        ``experiment/name`` is (ConceptWorld's splits of one experiment, or ``productivity/length_5``).

        The ladder scores the common conditions and names the others; only ``common == []``
        leaves it nothing to correlate.

        >>> pub = load("curi")
        >>> pub.coverage(["counting", "boolean", "my_split"])
        (['boolean', 'counting'], ['binding_color', 'intrinsic', 'concept_iid', 'instance_iid', 'extrinsic', 'complexity', 'binding_shape'])
        """
        if isinstance(conditions, str):
            raise PublishedError(f"coverage: conditions must be a list of names, got the string {conditions!r}")
        known = set(conditions.keys() if isinstance(conditions, Mapping) else conditions)
        common, not_given = [], []
        for row in self._frame.drop_duplicates(["experiment", "condition"]).itertuples():
            given = [n for n in (row.condition, f"{row.experiment}/{row.condition}" if row.experiment else None)
                     if n in known]
            (common if given else not_given).append(given[0] if given else row.condition)
        common = list(dict.fromkeys(common))
        return common, [c for c in dict.fromkeys(not_given) if c not in common]

    # ------------------------------------------------------------------ your own numbers
    def with_model(self, name: str, values: Mapping, *, table: str, negatives: str = "", experiment: str = "",
                   measure: str | None = None, unit: str = "percent", sd: Mapping | None = None,
                   ci95: Mapping | None = None, allow_new_conditions: bool = False) -> "PublishedResults":
        """These results plus model ``name``'s ``{condition: value}`` (``unit``: ``"percent"``
        or ``"fraction"``), recorded as coming from ``table``.  Conditions must be ones the
        results already hold (of ``experiment``, when given) unless ``allow_new_conditions``;
        a (model, condition, negatives, experiment, measure) already present is an error."""
        where = f"with_model({name!r})"
        info = _measure_info(self.measures, self._measure(measure), where)
        block = {"table": table, "measure": info.name, "negatives": negatives, "experiment": experiment, "unit": unit,
                 "model": name, "values": dict(values)}
        if sd is not None:
            block["sd"] = dict(sd)
        if ci95 is not None:
            block["ci95"] = dict(ci95)
        rows = _block_rows(block, {"measure": info.name, "unit": "percent"}, {info.name: info},
                           lambda key, msg: fail_at(where, key, msg), where)
        if not allow_new_conditions:
            known = set(self._frame.condition if not experiment else
                        self._frame[self._frame.experiment == experiment].condition)
            for row in rows:
                if row["condition"] not in known:
                    raise PublishedError(f"{where}: condition {row['condition']!r} is not among the conditions of "
                                         f"{self.benchmark}{' ' + experiment if experiment else ''} "
                                         f"({', '.join(sorted(known))}); pass allow_new_conditions=True to add it")
        other = PublishedResults(pd.DataFrame(rows, columns=list(COLUMNS)), benchmark=self.benchmark,
                                 measure=self.measure, measures={info.name: info}, sources=[where])
        return self.merge(other)

    def merge(self, other: "PublishedResults") -> "PublishedResults":
        """These results and ``other``'s (same benchmark) together; a measure oriented
        differently in the two, or a number present in both, is an error naming both sources."""
        if not isinstance(other, PublishedResults):
            raise PublishedError(f"merge: expected PublishedResults, got {type(other).__name__}")
        if other.benchmark != self.benchmark:
            raise PublishedError(f"merge: {other.source} holds {other.benchmark!r} results, not {self.benchmark!r}")
        measures = dict(self.measures)
        for name, m in other.measures.items():
            if name in measures and measures[name].higher_is_better != m.higher_is_better:
                raise PublishedError(f"merge: measure {name!r} is higher_is_better = "
                                     f"{str(measures[name].higher_is_better).lower()} in {self.source} but "
                                     f"{str(m.higher_is_better).lower()} in {other.source}")
            measures.setdefault(name, m)
        frame = pd.concat([self._frame, other._frame], ignore_index=True)
        check_duplicates(frame)
        info = {**other.model_info, **self.model_info}
        return PublishedResults(frame, benchmark=self.benchmark, measure=self.measure, measures=measures,
                                paper=self.paper, defaults=self.defaults, model_info=info,
                                sources=self.sources + other.sources)

    def write(self, path) -> Path:
        """Write the results as a file of :func:`read`'s format (percent; one block per
        table, experiment, negatives, measure and model).  Returns the path."""
        q = toml_key
        lines = [f"benchmark = {q(self.benchmark)}"]
        if self.paper:
            lines.append(f"paper = {q(self.paper)}")
        lines += [f"measure = {q(self.measure)}", 'unit = "percent"', ""]
        if self.defaults:
            lines += ["[defaults]"] + [f"{k} = {q(v)}" for k, v in self.defaults.items()] + [""]
        for name in dict.fromkeys(self._frame.measure):
            m = self.measures[name]
            lines += [f"[measures.{q(name)}]", f"higher_is_better = {str(m.higher_is_better).lower()}"]
            if m.description:
                lines.append(f"description = {q(m.description)}")
            if m.difference:
                lines.append("difference = true")
            lines.append("")
        for model, fields in self.model_info.items():
            if fields:
                lines += [f"[models.{q(model)}]"] + [f"{q(k)} = {_toml_scalar(v)}" for k, v in fields.items()] + [""]
        keys = ["table", "experiment", "negatives", "measure", "model"]
        for key, rows in self._frame.groupby(keys, sort=False):
            lines.append("[[block]]")
            lines += [f"{k} = {q(v)}" for k, v in zip(keys, key) if v != "" or k in ("table", "model")]
            lines.append("values = {" + ", ".join(f"{q(c)} = {v!r}" for c, v in zip(rows.condition, rows.value)) + "}")
            for spread in ("sd", "ci95"):
                given = rows[rows[spread].notna()]
                if len(given):
                    lines.append(f"{spread} = {{" + ", ".join(f"{q(c)} = {v!r}" for c, v in
                                                              zip(given.condition, given[spread])) + "}")
            lines.append("")
        path = Path(path)
        path.write_text("\n".join(lines), encoding="utf-8")
        return path

    # ------------------------------------------------------------------ internals
    def _derive(self, frame, **changes) -> "PublishedResults":
        kwargs = dict(benchmark=self.benchmark, measure=self.measure, measures=self.measures, paper=self.paper,
                      defaults=self.defaults, model_info=self.model_info, sources=self.sources)
        kwargs.update(changes)
        return PublishedResults(frame, **kwargs)

    def _measure(self, measure: str | None) -> str:
        if measure is None:
            return self.measure
        if measure not in self.measures:
            raise PublishedError(f"{self.benchmark}: no measure {measure!r} (there are {', '.join(self.measures)})")
        return measure

    def _pick(self, column: str, value, rows: pd.DataFrame, call: str) -> str:
        present = list(dict.fromkeys(rows[column]))
        if value is None:
            if len(present) <= 1:
                return present[0] if present else ""
            if self.defaults.get(column) in present:
                return self.defaults[column]
            raise PublishedError(f"{call}: the {self.benchmark} results hold several {column} values "
                                 f"({', '.join(map(repr, present))}); pick one with {column}=...")
        if value not in present:
            raise PublishedError(f"{call}: no {column} {value!r} in the {self.benchmark} results "
                                 f"(there are {', '.join(map(repr, present)) or 'none'})")
        return value

    def _rows(self, model, negatives, experiment, measure, call):
        measure = self._measure(measure)
        rows = self._frame[self._frame.measure == measure]
        experiment = self._pick("experiment", experiment, rows, call)
        rows = rows[rows.experiment == experiment]
        negatives = self._pick("negatives", negatives, rows, call)
        rows = rows[rows.negatives == negatives]
        if model is not None:
            if model not in set(rows.model):
                raise PublishedError(f"{call}: no model {model!r} with {measure} in the {self.benchmark} results"
                                     f"{' (negatives ' + negatives + ')' if negatives else ''}"
                                     f"{' (experiment ' + experiment + ')' if experiment else ''} "
                                     f"(there are {', '.join(dict.fromkeys(rows.model))})")
            rows = rows[rows.model == model]
        return rows, {"measure": measure, "negatives": negatives, "experiment": experiment}


# ============================================================================ reading files
def fail_at(where: str, key: str, message: str):
    raise PublishedError(f"{where}: {key}: {message}")


def toml_key(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(str(value), ensure_ascii=False)


def _toml_scalar(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return repr(value)
    return toml_key(value)


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _name(value, key, fail) -> str:
    if not isinstance(value, str) or not value.strip():
        fail(key, f"expected a non-empty string, got {value!r}")
    return value


def _measure_info(measures: Mapping, name: str, where: str) -> Measure:
    info = measures.get(name) or MEASURES.get(name)
    if info is None:
        raise PublishedError(f"{where}: measure {name!r} is not known (known: {', '.join(sorted(MEASURES))}); "
                             f"declare it in a [measures.{name}] table with higher_is_better = true/false")
    return info


def _block_rows(block: Mapping, file_defaults: Mapping, measures: Mapping, fail, source: str) -> list:
    """The rows of one block (one table column or row): a list of dicts with :data:`COLUMNS`."""
    unknown = sorted(set(block) - _BLOCK_KEYS)
    if unknown:
        fail(unknown[0], f"unknown key (a block has {', '.join(sorted(_BLOCK_KEYS))})")
    if "table" not in block:
        fail("table", "missing: every block names the paper table its numbers come from")
    table = _name(block["table"], "table", fail)
    measure = _name(block.get("measure", file_defaults["measure"]), "measure", fail)
    if measure not in measures:
        fail("measure", f"{measure!r} is not known (known: {', '.join(sorted(measures))}); "
                        f"declare it in a [measures.{measure}] table")
    info = measures[measure]
    negatives = block.get("negatives", "")
    experiment = block.get("experiment", "")
    for key, value in (("negatives", negatives), ("experiment", experiment)):
        if not isinstance(value, str):
            fail(key, f"expected a string, got {value!r}")
    unit = block.get("unit", file_defaults["unit"])
    if unit not in UNITS:
        fail("unit", f"expected one of {', '.join(map(repr, UNITS))}, got {unit!r}")
    scale = UNITS[unit]
    if ("condition" in block) == ("model" in block):
        fail("condition", "a block has exactly one of condition = ... (values keyed by model) or model = ... "
                          "(values keyed by condition)")
    fixed = "condition" if "condition" in block else "model"
    fixed_value = _name(block[fixed], fixed, fail)
    keyed = "model" if fixed == "condition" else "condition"
    values = block.get("values")
    if not isinstance(values, dict) or not values:
        fail("values", f"expected a non-empty table {{{keyed} = number, ...}}, got {values!r}")
    low, high = (-100.0, 100.0) if info.difference else (0.0, 100.0)
    rows = []
    spreads = {}
    for spread in ("sd", "ci95"):
        table_of = block.get(spread, {})
        if not isinstance(table_of, dict):
            fail(spread, f"expected a table {{{keyed} = number, ...}}, got {table_of!r}")
        for k, v in table_of.items():
            if k not in values:
                fail(f"{spread}.{toml_key(k)}", f"has no value in values (its {keyed}s: {', '.join(values)})")
            if not is_number(v) or v < 0:
                fail(f"{spread}.{toml_key(k)}", f"expected a non-negative number, got {v!r}")
        spreads[spread] = table_of
    for k, v in values.items():
        key = f"values.{toml_key(k)}"
        _name(k, key, fail)
        if not is_number(v):
            fail(key, f"expected a number, got {v!r}")
        percent = round(float(v) * scale, 10)
        if not low <= percent <= high:
            fail(key, f"{v!r} is outside {low / scale:g}..{high / scale:g} ({unit}; measure {measure})")
        row = {"model": fixed_value if fixed == "model" else k, "condition": fixed_value if fixed == "condition" else k,
               "negatives": negatives, "measure": measure, "value": percent, "table": table, "experiment": experiment,
               "source": source}
        for spread, table_of in spreads.items():
            row[spread] = round(float(table_of[k]) * scale, 10) if k in table_of else float("nan")
        rows.append(row)
    return rows


def check_duplicates(frame: pd.DataFrame) -> None:
    dup = frame[frame.duplicated(_KEY_COLUMNS, keep=False)]
    if len(dup):
        first = dup.iloc[0]
        same = dup[(dup[_KEY_COLUMNS] == first[_KEY_COLUMNS]).all(axis=1)]
        a, b = same.iloc[0], same.iloc[1]
        what = ", ".join(f"{k} {first[k]!r}" for k in _KEY_COLUMNS if first[k] != "")
        raise PublishedError(f"{b.source}: two values for {what}: one from {a.table} ({a.source}), "
                             f"one from {b.table}")


def _parse(text: str, where: str) -> PublishedResults:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise PublishedError(f"{where}: not valid TOML: {e}") from None

    def top_fail(key, message):
        fail_at(where, key, message)

    unknown = sorted(set(raw) - _TOP_KEYS)
    if unknown:
        top_fail(unknown[0], f"unknown key (a file has {', '.join(sorted(_TOP_KEYS))})")
    for key in ("benchmark", "measure"):
        if key not in raw:
            top_fail(key, "missing")
    benchmark = _name(raw["benchmark"], "benchmark", top_fail)
    primary = _name(raw["measure"], "measure", top_fail)
    paper = raw.get("paper", "")
    if not isinstance(paper, str):
        top_fail("paper", f"expected a string, got {paper!r}")
    unit = raw.get("unit", "percent")
    if unit not in UNITS:
        top_fail("unit", f"expected one of {', '.join(map(repr, UNITS))}, got {unit!r}")

    measures = dict(MEASURES)
    declared = raw.get("measures", {})
    if not isinstance(declared, dict):
        top_fail("measures", "expected a table of [measures.<name>] tables")
    for name, spec in declared.items():
        key = f"measures.{toml_key(name)}"
        if not isinstance(spec, dict):
            top_fail(key, f"expected a table with higher_is_better = true/false, got {spec!r}")
        bad = sorted(set(spec) - {"higher_is_better", "description", "difference"})
        if bad:
            top_fail(f"{key}.{bad[0]}", "unknown key (a measure has higher_is_better, description, difference)")
        known = MEASURES.get(name)
        hib = spec.get("higher_is_better", None if known is None else known.higher_is_better)
        if not isinstance(hib, bool):
            top_fail(f"{key}.higher_is_better", f"expected true or false, got {hib!r}")
        if known is not None and hib != known.higher_is_better:
            top_fail(f"{key}.higher_is_better", f"{name} is higher_is_better = "
                                                f"{str(known.higher_is_better).lower()} everywhere in the toolkit")
        description = spec.get("description", known.description if known else "")
        difference = spec.get("difference", known.difference if known else False)
        if not isinstance(description, str):
            top_fail(f"{key}.description", f"expected a string, got {description!r}")
        if not isinstance(difference, bool):
            top_fail(f"{key}.difference", f"expected true or false, got {difference!r}")
        measures[name] = Measure(name, hib, description, difference)
    if primary not in measures:
        top_fail("measure", f"{primary!r} is not known (known: {', '.join(sorted(measures))}); declare it in a "
                            f"[measures.{primary}] table")

    models = raw.get("models", {})
    if not isinstance(models, dict):
        top_fail("models", "expected a table of [models.<name>] tables")
    for name, fields in models.items():
        key = f"models.{toml_key(name)}"
        if not isinstance(fields, dict):
            top_fail(key, f"expected a table of descriptive fields, got {fields!r}")
        for k, v in fields.items():
            if not isinstance(v, (str, bool, int, float)):
                top_fail(f"{key}.{k}", f"expected a string, number or boolean, got {v!r}")

    blocks = raw.get("block")
    if not isinstance(blocks, list) or not blocks:
        top_fail("block", "missing: a file has one [[block]] or more, each the numbers of one table column or row")
    headers = [i + 1 for i, line in enumerate(text.splitlines()) if re.match(r"\s*\[\[\s*block\s*\]\]", line)]
    rows = []
    for n, block in enumerate(blocks):
        line = f", line {headers[n]}" if len(headers) == len(blocks) else ""

        def fail(key, message, n=n, line=line):
            raise PublishedError(f"{where}{line}: [[block]] {n + 1}: {key}: {message}")

        if not isinstance(block, dict):
            fail("block", "expected a table")
        rows += _block_rows(block, {"measure": primary, "unit": unit}, measures, fail, where)
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    check_duplicates(frame)
    if not (frame.measure == primary).any():
        top_fail("measure", f"no block holds the primary measure {primary!r}")

    defaults = raw.get("defaults", {})
    if not isinstance(defaults, dict):
        top_fail("defaults", "expected a table")
    for key, value in defaults.items():
        if key not in _DEFAULT_KEYS:
            top_fail(f"defaults.{key}", f"unknown key (defaults may name {', '.join(_DEFAULT_KEYS)})")
        if value not in set(frame[key]):
            top_fail(f"defaults.{key}", f"{value!r} is not a {key} of any block "
                                        f"(there are {', '.join(map(repr, dict.fromkeys(frame[key])))})")
    used = {m: measures[m] for m in dict.fromkeys(frame.measure)}
    return PublishedResults(frame, benchmark=benchmark, measure=primary, measures=used, paper=paper,
                            defaults=defaults, model_info=models, sources=[where])


def read(path) -> PublishedResults:
    """Read a results file in the format of ``hypotheses/published/README.md`` (your own
    model's numbers, or a benchmark's).  Raises :class:`PublishedError` naming the file, the
    line of the offending block and the key."""
    path = Path(path)
    return _parse(read_text(path, PublishedError, "the results file"), str(path))


# ============================================================================ benchmarks
#: benchmark name -> a function of no arguments returning its :class:`PublishedResults`;
#: the benchmark suites (:mod:`bayes_concepts.suites`) register theirs
published_results = Registry("benchmark with published results", builtins=("bayes_concepts.suites:published",))


def benchmarks() -> list:
    """The benchmarks whose published results :func:`load` returns, by name."""
    return sorted(published_results.names())


def load(benchmark: str, *, experiment: str | None = None) -> PublishedResults:
    """The published model results of ``benchmark`` (one of :func:`benchmarks`); of one of its
    experiments when ``experiment`` is given (ConceptWorld: ``"productivity"``, ``"boxworld"``,
    ``"scaling"``, ``"substitution"``; RLCL: ``"ksc5"``, ``"ksc3"``, ``"ksc1"``)."""
    if benchmark not in published_results:
        raise PublishedError(f"no published results for benchmark {benchmark!r} (there are "
                             f"{', '.join(benchmarks())}; read your own file with bayes_concepts.published.read)")
    results = published_results.get(benchmark)()
    return results if experiment is None else results.experiment(experiment)


def short_table(source: str) -> str:
    """``"Table 3 (left)"`` of a source's longer text (the text itself when it names no table)."""
    match = re.match(r"Table \d+(?: \([^)]*\))?", source)
    return match.group(0) if match else source


def read_toml(path: Path) -> dict:
    """A TOML file as a dict; a :class:`PublishedError` naming it when it cannot be read or parsed."""
    return text_files.read_toml(path, PublishedError)


__all__ = ["COLUMNS", "MEASURES", "Measure", "PublishedError", "PublishedResults", "UNITS",
           "benchmarks", "load", "read", "published_results", "read_toml", "short_table",
           "fail_at", "toml_key", "is_number", "check_duplicates"]
