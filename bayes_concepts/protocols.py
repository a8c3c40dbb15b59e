"""Protocols: which splits, oracles and episodes a comp-gap table is computed with.

A :class:`Protocol` names one complete recipe -- split specs, the oracles' settings, how
query negatives and hard negatives are drawn, what the strong oracle knows -- so a table
says how it was made and two tables can be told apart.  Protocols are registered in
:data:`protocols`; the benchmark suites (:mod:`bayes_concepts.suites`) register theirs:
``paper`` and ``curi-release`` (CURI's text and its public release), ``closure`` and
``closure-baselines`` (CLOSURE's families), ``conceptworld-*`` (ConceptWorld's experiments).

>>> proto = protocols.get("curi-release")                       # doctest: +SKIP
>>> ds = proto.compute_gap(space, n_episodes=20_000)             # doctest: +SKIP
>>> ds.attrs["protocol"]                                         # doctest: +SKIP
'curi-release'

:func:`mixed_values` finds the programs that use a held-out value and another value of the
same type, which a protocol's ``drop_mixed`` splits move out of their test side.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .errors import BayesConceptsError
from .gap import compute_gap
from .oracles import OracleSettings
from .registry import Registry
from .resources import data_file
from .results import set_attrs
from .splits import SplitSpecError, make_split, spec_files


# ------------------------------------------------------------------- the Binding rule
def mixed_values(space, held_out) -> np.ndarray:
    """bool (n_concepts,): programs that use one of the ``held_out`` values *and* another
    value of the same type (another colour, another shape); CURI's release dropped them from
    its Binding splits (neither trained on nor tested)."""
    value_of = space.grammar.value_of
    held = frozenset(held_out)
    others = frozenset(v for v, t in value_of.items() if t in {value_of.get(h) for h in held} and v not in held)
    return np.fromiter((not held.isdisjoint(t) and not others.isdisjoint(t)
                        for t in (frozenset(p.split()) for p in space.programs)), bool, space.n_concepts)


# ---------------------------------------------------------------------------- protocols
@dataclass(frozen=True)
class Suggestion:
    """Protocols to offer for a space that has no split specs: ``names`` as typed after
    ``--protocol`` (``"closure"``, ``"a|b"``), ``what`` they are, and ``why`` the space has no
    splits ("" for the usual reason: its grammar is not CURI's)."""

    names: str
    what: str
    why: str = ""


@dataclass(frozen=True)
class Protocol:
    """A named recipe for the comp-gap table.

    name, description: as shown in tables and stored in results (``ds.attrs["protocol"]``).
    splits_dir: folder of ``hypotheses/`` holding the nine split specs.
    settings: the oracles' prior, likelihood and weak-empty policy.
    query_negatives: None (the query's negatives are like the support's) or ``"random"``.
    hard_mode: how hard negatives are drawn (:data:`~bayes_concepts.episodes.hard_negative_modes`).
    strong_knows_all: the strong oracle knows every concept of the space (else H_train ∪ H_test).
    drop_mixed: names of splits held out by ``tokens`` (values) from whose test side the
        programs that also use another value of the same type are dropped (moved to val,
        which no episode uses): CURI's release did so in its Binding splits.
    """

    name: str
    description: str
    splits_dir: str
    settings: OracleSettings = field(default_factory=OracleSettings)
    query_negatives: str | None = None
    hard_mode: str = "union"
    strong_knows_all: bool = False
    drop_mixed: tuple = ()

    @property
    def summary(self) -> str:
        return self.description

    def spec_files(self) -> list:
        """The protocol's split spec files, sorted by name."""
        return spec_files(data_file(self.splits_dir))

    def splits(self, space, names=None) -> dict:
        """``{name: Split}`` of the protocol's specs (all, or ``names`` in that order); only the
        specs asked for are read.  Splits made by this protocol carry ``strong_concepts`` (when
        the strong oracle knows every concept), ``protocol`` (its name) and, where mixed
        programs were dropped, ``dropped`` (how many)."""
        files = {p.stem: p for p in self.spec_files()}
        wanted = list(files) if names is None or list(names) == ["all"] else list(names)
        unknown = [n for n in wanted if n not in files]
        if unknown:
            raise SplitSpecError(f"protocol {self.name!r} has no split {', '.join(map(repr, unknown))} "
                                 f"(its splits: {', '.join(files)})")
        return {n: self.adapt(space, make_split(space, files[n])) for n in dict.fromkeys(wanted)}

    def splits_with(self, space, names=None, specs=None) -> dict:
        """The protocol's splits (``names``, default all) and the splits of the spec files
        ``specs``, treated by the protocol (a spec split named like one of the protocol's is an error)."""
        from .splits import make_splits
        own = {n: self.adapt(space, s) for n, s in make_splits(space, specs or ()).items()}
        if names is None:
            splits = self.splits(space)
            clash = sorted(set(splits) & set(own))
            if clash:
                raise SplitSpecError(f"split name {clash[0]!r} is a split of protocol {self.name}; rename your split")
            return {**splits, **own}
        return {n: own[n] if n in own else self.splits(space, [n])[n] for n in names}

    def adapt(self, space, split):
        """Apply the protocol's treatment to a split made from a spec: drop mixed programs,
        let the strong oracle know every concept."""
        if split.name in self.drop_mixed and split.spec.get("kind") == "held_out" and \
                "tokens" in split.spec["held_out"]:
            mixed = mixed_values(space, split.spec["held_out"]["tokens"])
            dropped = split.test[mixed[split.test]]
            if len(dropped) == len(split.test):
                raise SplitSpecError(f"split {split.name!r}: every held-out concept mixes held-out and training "
                                     "values; nothing is left to test")
            split = replace(split, val=np.union1d(split.val, dropped), test=np.setdiff1d(split.test, dropped))
            split.dropped = int(len(dropped))
        if self.strong_knows_all:
            split.strong_concepts = np.arange(space.n_concepts, dtype=np.int64)
        split.protocol = self.name
        return split

    def results_note(self, ds) -> str:
        """Lines printed under the protocol's comp-gap table (none for this protocol)."""
        return ""

    def annotate(self, space, splits, ds, settings: OracleSettings | None = None, seed: int = 0,
                 n_episodes: int | None = None):
        """Add what the protocol reports beside the comp gap to results ``ds`` (its attrs);
        returns ``ds`` (nothing for this protocol)."""
        return ds

    @staticmethod
    def left_out_note(splits) -> str:
        """One line on concepts the protocol's splits could not use (none for this protocol)."""
        return ""

    def suggestion(self, space) -> Suggestion | None:
        """What to offer for ``space`` when it has no split specs, if this protocol applies to
        it (none here)."""
        return None

    def published(self):
        """The published model results a ladder of this protocol's splits is compared with by
        default (:class:`~bayes_concepts.published.PublishedResults`), or None (none here)."""
        return None

    def chance_levels(self) -> dict | None:
        """``{condition: percent}``: the chance level of each split's answer, where the answers
        of this protocol's conditions differ in kind (a baseline predictor of difficulty,
        :mod:`bayes_concepts.difficulty`), or None (none here)."""
        return None

    def settings_with(self, **changes) -> OracleSettings:
        return replace(self.settings, **changes)

    def info(self) -> dict:
        """The protocol as a JSON-able dict (what results record)."""
        return {"name": self.name, "splits_dir": self.splits_dir, "settings": self.settings.as_dict(),
                "query_negatives": self.query_negatives or "same as support", "hard_mode": self.hard_mode,
                "strong_knows_all": self.strong_knows_all, "drop_mixed": list(self.drop_mixed)}

    def compute_gap(self, space, names=None, negatives=("hard", "easy"), n_episodes: int = 20_000, seed: int = 0,
                    progress: bool = False, splits=None, **overrides):
        """The comp-gap results Dataset of the protocol's splits (or ``splits``, a dict of splits
        already made); ``overrides`` replace ``settings``, ``query_negatives`` or ``hard_mode``
        for one run (recorded in ``attrs["protocol_overrides"]``), annotated as the ``gap`` command annotates them
        (:meth:`annotate`); an unknown override, and the bad
        input :func:`~bayes_concepts.gap.compute_gap` refuses, raise a one-line
        :class:`~bayes_concepts.errors.BayesConceptsError`.  A run of all the protocol's splits
        (``names`` None) leaves out -- counts and says why, in ``attrs["excluded"]["not_scored"]``
        -- a split none of whose test concepts can be an episode's concept, rather than stopping
        (``compute_gap(..., skip_undrawable=True)``)."""
        known = {"settings", "query_negatives", "hard_mode"}
        bad = set(overrides) - known
        if bad:
            raise BayesConceptsError(f"protocol {self.name}: unknown override {', '.join(sorted(bad))} "
                                     f"(expected {', '.join(sorted(known))})")
        splits = self.splits(space, names) if splits is None else splits
        settings = overrides.get("settings", self.settings)
        ds = compute_gap(space, splits, negatives, n_episodes, settings, seed,
                         query_negatives=overrides.get("query_negatives", self.query_negatives),
                         hard_mode=overrides.get("hard_mode", self.hard_mode), progress=progress,
                         skip_undrawable=names is None)
        scored = set(ds["split"].values.tolist())  # as the gap command records and annotates them
        return self.annotate(space, {n: s for n, s in splits.items() if n in scored}, self.record(ds, overrides),
                             settings, seed, n_episodes)

    def record(self, ds, overrides: dict | None = None):
        """Mark results ``ds`` as computed by this protocol (``attrs["protocol"]``,
        ``"protocol_info"`` and, when any, ``"protocol_overrides"``); returns ``ds``."""
        set_attrs(ds, protocol=self.name, protocol_info=self.info())
        if overrides:
            set_attrs(ds, protocol_overrides={k: (v.as_dict() if isinstance(v, OracleSettings) else v)
                                              for k, v in overrides.items()})
        return ds


#: The named protocols.
protocols = Registry("protocol", builtins=("bayes_concepts.suites:protocols",))







def get_protocol(name) -> Protocol | None:
    """The registered protocol ``name`` (a :class:`Protocol` passes through, None stays None)."""
    return name if name is None or isinstance(name, Protocol) else protocols.get(name)


__all__ = ["Protocol", "Suggestion", "protocols", "get_protocol", "mixed_values"]
