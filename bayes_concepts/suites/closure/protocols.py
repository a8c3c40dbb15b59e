"""CLOSURE's protocols: its seven test families as comp-gap splits of a relational CLEVR space.

``closure`` trains the weak oracle on all of CLEVR (its 90 question templates and the
baselines), as CLOSURE's models were trained; ``closure-baselines`` on the baselines only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import BayesConceptsError, ProgramError
from ...oracles import OracleSettings
from ...protocols import Protocol, Suggestion, protocols
from ...splits import Split, SplitSpecError


#: What a CLOSURE protocol trains the weak oracle on.
CLOSURE_TRAIN = {
    "clevr": "all of CLEVR: the concepts of CLEVR's 90 question templates and of the baselines",
    "baselines": "the CLEVR baselines' concepts only",
}


@dataclass(frozen=True)
class ClosureProtocol(Protocol):
    """CLOSURE's seven test families as comp-gap splits of a relational CLEVR space.

    Every split has the same training concepts and the concepts of one CLOSURE family
    (Figure 8) as its test side; val is empty.  ``train = "clevr"`` (protocol ``closure``):
    the training concepts are all of CLEVR's, as CLOSURE's models were trained on all of
    CLEVR -- the instantiations of its 90 question templates
    (:func:`bayes_concepts.suites.closure.clevr_concepts`, ``clevr_per_template`` of each) and of the
    CLEVR baseline templates CLOSURE derives its tests from (its Appendix F, Figure 9).
    ``train = "baselines"`` (protocol ``closure-baselines``): the baselines' concepts only.
    Family concepts are :func:`bayes_concepts.suites.closure.family_concepts` (``per_family`` of each,
    seed 0: what ``space build --preset clevr`` adds to the space).  Instantiations the space
    lacks (the build's firing filter dropped them: true on too few or too many scenes) are
    counted per split (``split.excluded``) and shown, never silently dropped.
    """

    per_family: int = 100
    train: str = "clevr"

    def __post_init__(self):
        if self.train not in CLOSURE_TRAIN:
            raise BayesConceptsError(f"protocol {self.name}: train must be one of {', '.join(CLOSURE_TRAIN)}, "
                                     f"got {self.train!r}")

    def suggestion(self, space):
        """This protocol, for a space built with CLEVR's grammar (``clevr.pcfg``)."""
        grammar = (space.params or {}).get("grammar") or {}
        if isinstance(grammar, dict) and grammar.get("file") == "clevr.pcfg":
            return Suggestion(self.name, "CLOSURE's families: the space was built with clevr.pcfg")
        return None

    def published(self):
        """CLOSURE's published drops (:mod:`bayes_concepts.published`, ``closure``)."""
        from ...published import load
        return load("closure")

    def chance_levels(self) -> dict:
        """Each family's answer chance level in percent (CLOSURE's reported answer kinds)."""
        from .reported import load_reported
        return {str(f): float(c) for f, c in load_reported().chance.items()}

    def info(self) -> dict:
        """The protocol as a JSON-able dict, with what its weak oracle trains on."""
        return {**super().info(), "train": self.train}

    def spec_files(self) -> list:
        return []

    def family_programs(self, space) -> tuple:
        """``(families, programs)``: the family file's families and ``per_family`` instantiations
        of each (seed 0), read and drawn once per process and size."""
        from .families import load_families, preset_family_concepts
        return load_families(), preset_family_concepts(int(space.params.get("closure_per_family") or self.per_family))

    def clevr_programs(self, space) -> dict:
        """Template name -> the instantiations of CLEVR's templates the space was built with
        (its ``clevr_per_template``, seed 0); ``{}`` when it was built without them."""
        per_template = space.params.get("clevr_per_template")
        if not per_template:
            return {}
        from .clevr_templates import preset_clevr_concepts
        return preset_clevr_concepts(int(per_template))

    def splits(self, space, names=None) -> dict:
        families, programs = self.family_programs(space)
        roles = {f.name: f.role for f in families.values()}
        tests = [n for n in programs if roles[n] == "test"]
        wanted = tests if names is None or list(names) == ["all"] else list(names)
        unknown = [n for n in wanted if n not in tests]
        if unknown:
            raise SplitSpecError(f"protocol {self.name!r} has no split {', '.join(map(repr, unknown))} "
                                 f"(its splits: {', '.join(tests)})")

        def find(text):
            try:
                return space.find(text)
            except ProgramError:  # not a program of this space's language
                return None

        def ids(texts):
            found = [find(t) for t in texts]
            return np.array(sorted({i for i in found if i is not None}), np.int64), sum(i is None for i in found)

        texts = [t for n, ts in programs.items() if roles[n] == "train" for t in ts]
        clevr = self.clevr_programs(space) if self.train == "clevr" else {}
        texts += [t for ts in clevr.values() for t in ts]
        train, train_missing = ids(texts)
        if not len(train):
            raise SplitSpecError(f"protocol {self.name}: none of the CLEVR baseline concepts"
                                 + (" nor of CLEVR's templates" if self.train == "clevr" else "")
                                 + " is a concept of this space; build it with space build --preset clevr")
        if self.train == "clevr" and not clevr:
            raise SplitSpecError(f"protocol {self.name} trains on all of CLEVR's templates, and this space was built "
                                 "without them (no clevr_per_template among its build parameters): rebuild it "
                                 "with space build --preset clevr, or use --protocol closure-baselines")
        out, empty = {}, []
        for name in wanted:
            test, missing = ids(programs[name])
            test = np.setdiff1d(test, train)
            if not len(test):
                empty.append(name)
                continue
            info = {"kind": "closure", "family": name, "per_family": len(programs[name]), "train": self.train}
            if clevr:
                info["per_template"] = int(space.params["clevr_per_template"])
            split = Split(name, train, np.zeros(0, np.int64), test, info, None,
                          f"CLOSURE {name}: test = its concepts, train = {CLOSURE_TRAIN[self.train]}",
                          space.n_concepts)
            split.excluded = {"train": int(train_missing), "test": int(missing)}
            out[name] = self.adapt(space, split)
        if not out or (names is not None and empty):
            raise SplitSpecError(f"protocol {self.name}: no concept of famil{'ies' if len(empty) > 1 else 'y'} "
                                 f"{', '.join(empty)} is in this space (the build's firing filter dropped every "
                                 "instantiation: true on too few scenes); build it with space build --preset clevr "
                                 "and more --scenes")
        for split in out.values():
            split.excluded["families_left_out"] = list(empty)
        return out

    @staticmethod
    def left_out_note(splits) -> str:
        """One line on the instantiations (and whole families) the space lacks, or ''."""
        missing = {n: getattr(s, "excluded", None) or {} for n, s in splits.items()}
        shown = [f"{n} {m['test']}" for n, m in missing.items() if m.get("test")]
        train = max((m.get("train", 0) for m in missing.values()), default=0)
        families = next((m.get("families_left_out") for m in missing.values() if m.get("families_left_out")), [])
        if not (shown or train or families):
            return ""
        return ("instantiations that are not concepts of the space (the build's firing filter dropped them: true on "
                f"too few or too many scenes), left out: training {train}; " + ", ".join(shown)
                + (f"; families with none left, not scored: {', '.join(families)}" if families else ""))

    def results_note(self, ds) -> str:
        """The models' drops CLOSURE reports, per family, absolute and against chance, beside
        the ideal observers' gap."""
        from .reported import load_reported
        rep = load_reported()
        families = [str(s) for s in ds["split"].values]

        def table(title, cell):
            lines = [title, f"  {'model':<16}" + "".join(f"{f:>17}" for f in families)]
            for model in rep.models:
                cells = []
                for f in families:
                    try:
                        cells.append(f"{cell(model, f):>17}")
                    except (KeyError, ValueError):
                        cells.append(f"{'-':>17}")
                lines.append(f"  {model:<16}" + "".join(cells))
            return lines

        lines = [f"training concepts: {CLOSURE_TRAIN[self.train]}"]
        lines += table(f"CLOSURE's reported drops (baseline - zero-shot accuracy, points; {rep.paper}):",
                       lambda m, f: f"{rep.drop(m, f):.1f}")
        chance = "  ".join(f"{f} {rep.chance[f]:.1f}" for f in families if f in rep.chance)
        lines += table(f"drops against chance ((baseline - zero-shot) / (baseline - chance); chance in %: {chance}):",
                       lambda m, f: f"{rep.normalised_drop(m, f):.2f}")
        return "\n".join(lines)


protocols.register("closure", ClosureProtocol(
    "closure", "CLOSURE's seven test families on a CLEVR space (--preset clevr): train = all of CLEVR (the concepts "
    "of its 90 question templates and of the baselines), test = one family's; length prior, deterministic "
    "likelihood, hard query negatives", "closure",
    OracleSettings(prior="length", beta=0.2, likelihood="consistent", weak_empty="zero")))
protocols.register("closure-baselines", ClosureProtocol(
    "closure-baselines", "CLOSURE's seven test families on a CLEVR space (--preset clevr): train = the CLEVR "
    "baselines' concepts only, test = one family's; length prior, deterministic likelihood, hard query negatives",
    "closure", OracleSettings(prior="length", beta=0.2, likelihood="consistent", weak_empty="zero"),
    train="baselines"))
