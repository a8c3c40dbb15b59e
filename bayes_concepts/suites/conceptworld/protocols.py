"""ConceptWorld's four experiments as protocols (``conceptworld-productivity``, ``-boxworld``, ``-scaling``, ``-substitution``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...oracles import OracleSettings
from ...protocols import Protocol, Suggestion, protocols
from ...results import declare_attribute, get_attr, set_attrs
from ...splits import SplitSpecError

declare_attribute("multiclass", "json", "ConceptWorld protocols: split -> the strong and the weak oracle's accuracy at "
                                        "telling which of the condition's concepts a scene shows")


@dataclass(frozen=True)
class ConceptWorldProtocol(Protocol):
    """One of ConceptWorld's four experiments as comp-gap splits of a ConceptWorld space
    (``space build --preset conceptworld``).

    One split per test condition of ``hypotheses/conceptworld/experiments.toml``: train =
    the experiment's training concepts (the weak oracle's), test = the condition's
    concepts, val empty; the strong oracle knows every concept of the space.  Conditions
    whose concepts the space lacks (built with a smaller depth) are left out and named.
    """

    experiment: str = ""
    #: at most this many multi-class episodes per split (:meth:`annotate`)
    multiclass_episodes: int = 1000

    def suggestion(self, space):
        """ConceptWorld's experiments, for a ConceptWorld space."""
        if (space.params or {}).get("kind") != "conceptworld":
            return None
        names = [n for n, p in protocols.items() if isinstance(p, ConceptWorldProtocol)]
        return Suggestion("|".join(names), "ConceptWorld's experiments",
                          "it is a ConceptWorld space and has no saved split specs")

    def published(self):
        """The seed's F1 of this experiment (:mod:`bayes_concepts.published`, ``conceptworld``)."""
        from ...published import load
        return load("conceptworld", experiment=self.experiment)

    def spec_files(self) -> list:
        return []

    def annotate(self, space, splits, ds, settings: OracleSettings | None = None, seed: int = 0,
                 n_episodes: int | None = None):
        """The seed's multi-class form beside the binary gap: per split, the strong and the weak
        oracle's accuracy at telling which of the condition's concepts a scene shows
        (:func:`~bayes_concepts.conceptworld.multiclass.multiclass_accuracy`; min(n_episodes,
        :attr:`multiclass_episodes`) episodes), as JSON in ``ds.attrs["multiclass"]``; returns ``ds``."""
        from .multiclass import multiclass_accuracy
        from ...oracles import strong_and_weak
        n = min(int(n_episodes or self.multiclass_episodes), self.multiclass_episodes)
        out = {}
        for name, split in splits.items():
            strong, weak = strong_and_weak(space, split, settings or self.settings)
            out[name] = multiclass_accuracy(space, split, {"strong": strong, "weak": weak}, n_episodes=n, seed=seed)
        set_attrs(ds, multiclass=out)
        return ds

    def splits(self, space, names=None) -> dict:
        from .space import experiment_splits
        if space.params.get("kind") != "conceptworld":
            raise SplitSpecError(f"protocol {self.name} needs a ConceptWorld space; build one with "
                                 "space build OUT --preset conceptworld")
        return {n: self.adapt(space, s) for n, s in experiment_splits(space, self.experiment, names).items()}

    @staticmethod
    def left_out_note(splits) -> str:
        """One line on the experiment's concepts the space lacks, or ''."""
        missing = sorted({t for s in splits.values() for side in ("train", "test")
                          for t in (getattr(s, "excluded", None) or {}).get(side, [])})
        return f"concepts of the experiment that are not in the space, left out: {', '.join(missing)}" if missing else ""

    def results_note(self, ds) -> str:
        """The seed's model F1 per condition (mean over its test concepts) beside the gap."""
        from .space import condition_slug, load_reported
        rep = load_reported()[self.experiment]
        splits = [str(s) for s in ds["split"].values]
        conds = {}
        for model in rep["models"].values():
            for per in model.values():
                for c in per:
                    conds.setdefault(condition_slug(c), c)
        lines = [f"the seed's models, F1 on the test concepts ({', '.join(rep['test_concepts'])}; mean; "
                 f"{rep['source']}):", f"  {'model':<22}" + "".join(f"{s:>16}" for s in splits)]
        for model, per in rep["models"].items():
            cells = []
            for s in splits:
                vals = [per[c][conds[s]] for c in rep["test_concepts"] if c in per and conds.get(s) in per[c]]
                cells.append(f"{np.mean(vals):>16.3f}" if vals else f"{'-':>16}")
            lines.append(f"  {model:<22}" + "".join(cells))
        if "multiclass" in ds.attrs:
            from .multiclass import format_multiclass
            lines.append(format_multiclass(get_attr(ds, "multiclass")))
        return "\n".join(lines)


_CW_SETTINGS = OracleSettings(prior="length", beta=0.2, likelihood="size", weak_empty="zero")
for _exp, _text in (("productivity", "sequences of 1-2 squares in training, 3, 5, 7 in test"),
                    ("boxworld", "Box-World key-lock chains of 1-2 in training, 3 and 5 in test"),
                    ("scaling", "2x2 patterns of points in training, of 2x2 squares (4x4) in test"),
                    ("substitution", "pairs of squares in training, one or two pentominoes substituted in test")):
    protocols.register(f"conceptworld-{_exp}", ConceptWorldProtocol(
        f"conceptworld-{_exp}", f"ConceptWorld's {_exp} experiment on a ConceptWorld space (--preset conceptworld): "
        f"{_text}; weak = its training concepts, strong = every concept; length prior, size likelihood",
        "conceptworld", _CW_SETTINGS, strong_knows_all=True, experiment=_exp))
