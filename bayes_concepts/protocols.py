"""Protocols: which splits, oracles and episodes a comp-gap table is computed with.

CURI's numbers come from its public release, which differs from the paper's text in its
splits and oracles.  A :class:`Protocol` names one complete recipe, so a
table says how it was made and two tables can be told apart:

``paper``
    the paper's text: the nine splits of ``hypotheses/splits/`` (held-out val carved from
    the held-out concepts), the length prior w = exp(-0.2·l(h)), the deterministic
    (``consistent``) likelihood, hard negatives in support *and* query, the strong oracle
    over H_train ∪ H_test.
``curi-release``
    what the release computed: the nine splits of ``hypotheses/splits_curi_release/``
    (the release's held-out pairs and token rules, Binding dropping programs that mix
    held-out and training values, Complexity counted on the release's strings, val = test),
    the sampler's log-probability as prior (``pcfg_release``), the release's size likelihood as
    it ran (``size_release``: its positive count was always 0, so only the -log(N - |h|) term
    of every support scene remains; with random negatives the posterior is the prior on the
    consistent concepts), random query negatives, the weak posterior = the strong one restricted to H_train and
    renormalised (all zeros when nothing fits: ``weak_empty="zero"``), the strong oracle over
    every concept.

Both score AP on the space's test bank (3 positives per concept) and CBA on the query set.

>>> proto = protocols.get("curi-release")                       # doctest: +SKIP
>>> ds = proto.compute_gap(space, n_episodes=20_000)             # doctest: +SKIP
>>> ds.attrs["protocol"]                                         # doctest: +SKIP
'curi-release'

The prior and the likelihood the release's protocol names, ``pcfg_release`` and
``size_release``, are built-ins of :data:`~bayes_concepts.oracles.priors` and
:data:`~bayes_concepts.oracles.likelihoods` (:func:`pcfg_release_prior` and
:func:`size_release_likelihood` are importable from here too);
:func:`release_string` writes a program as the release printed it, :func:`mixed_values` finds
the programs the release's Binding splits dropped, and :func:`release_oracle_scores` scores
episodes with the release's float32 weak posterior and its AP pool.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from .bits import gather_bits, nth_set_bits, unpack_bits
from .errors import BayesConceptsError, ProgramError
from .gap import compute_gap
from .metrics import average_precision, class_balanced_accuracy
from .oracles import Oracle, OracleSettings
from .oracles.likelihoods import size_release_likelihood
from .oracles.priors import pcfg_release_prior
from .registry import Registry
from .resources import data_file
from .splits import Split, SplitSpecError, make_split, spec_files

#: Tokens the release's strings carry and our canonical form drops.
RELEASE_BINDER = ("lambda", "S.")


# ------------------------------------------------------------------- released strings
def release_string(program) -> str:
    """``program`` (a :class:`~bayes_concepts.lot.Program`) written as CURI's release printed
    its hypotheses: sizes by the grammar's aliases (``0.7``/``0.35``), ``lambda S.`` before the
    final quantifier, or at the end of an x-free program whose quantifier was dropped
    (``x color? red = lambda S. exists=``, ``S color? brown count= 3 = lambda S.``).
    :meth:`Program.parse` reads it back."""
    spelled = {}
    for alias, value in program.grammar.aliases.items():
        spelled.setdefault(value, alias)
    tokens = [spelled.get(t, t) for t in program.tokens]
    if program.quantifier is not None:
        return " ".join(tokens[:-1] + list(RELEASE_BINDER) + tokens[-1:])
    return " ".join(tokens + list(RELEASE_BINDER))


def release_token_counts(space) -> np.ndarray:
    """int64 (n_concepts,): tokens of each concept's released string (``lambda`` and ``S.``
    included), the release's hypothesis length."""
    return np.fromiter((len(release_string(space.program(i)).split()) for i in range(space.n_concepts)),
                       np.int64, space.n_concepts)


# --------------------------------------------------------------- the release's Binding rule
def mixed_values(space, held_out) -> np.ndarray:
    """bool (n_concepts,): programs that use one of the ``held_out`` values *and* another
    value of the same type (another colour, another shape); CURI's release dropped them from
    its Binding splits (neither trained on nor tested)."""
    value_of = space.grammar.value_of
    held = frozenset(held_out)
    others = frozenset(v for v, t in value_of.items() if t in {value_of.get(h) for h in held} and v not in held)
    return np.fromiter((not held.isdisjoint(t) and not others.isdisjoint(t)
                        for t in (frozenset(p.split()) for p in space.programs)), bool, space.n_concepts)


# ------------------------------------------------------------- the release's oracle scores
def release_pool(space, per_concept: int = 3, seed: int = 0) -> np.ndarray:
    """The release's AP pool: ``per_concept`` scenes drawn *with replacement* from every
    concept's extension (so a scene may appear several times): int64 (n_concepts * per_concept,)
    scene-bank ids, concept by concept."""
    counts = np.asarray(space.counts, np.int64)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 3303]))
    ranks = (rng.random((len(counts), per_concept)) * counts[:, None]).astype(np.int64)
    ids = nth_set_bits(np.asarray(space.signatures), ranks, np.full(len(counts), per_concept, np.int64))
    return ids.ravel()


def release_oracle_scores(space, split, settings, episodes, n=None, masked32: bool = True, pool=None) -> dict:
    """AP and CBA per episode of the strong and the weak oracle, computed as CURI's release
    computed them: the weak posterior is the strong oracle's posterior (over
    ``split.strong_concepts``, else H_train ∪ H_test) restricted to H_train and renormalised.

    masked32: True -- in float32 with 1e-12 added to the normaliser, as the release's data
    loader did (a weak posterior whose training mass is tiny then predicts almost 0
    everywhere, and exactly 0 where that mass underflows); False -- in float64 without the
    guard, which is our weak oracle exactly (the tests compare it with ``Oracle.evaluate``).
    pool: scene-bank ids AP is computed on (e.g. :func:`release_pool`); default the space's
    test bank.  A slow per-episode path (``n``: only the first n episodes).

    Returns float64 (n,) arrays ``strong_ap``, ``strong_cba``, ``weak_ap``, ``weak_cba`` and
    ``train_mass`` (the strong posterior's mass on H_train, float64)."""
    n = len(episodes) if n is None else min(int(n), len(episodes))
    strong_ids = getattr(split, "strong_concepts", None)
    strong_ids = np.union1d(split.train, split.test) if strong_ids is None else strong_ids
    strong = Oracle(space, strong_ids, settings, "strong")
    in_train = np.zeros(space.n_concepts, bool)
    in_train[split.train] = True
    hard = episodes.meta.get("negatives", "hard") == "hard"
    drawn = int(episodes.meta.get("n_positive", 5))
    if pool is None:
        pool_sig, n_pool = np.asarray(space.test_bank.signatures), space.test_bank.n_scenes
    else:
        pool = np.asarray(pool, np.int64)
        pool_sig, n_pool = gather_bits(np.asarray(space.signatures), pool), len(pool)
    query_rows = space.scene_concepts()
    dtype = np.float32 if masked32 else np.float64
    out = {k: np.empty(n) for k in ("strong_ap", "strong_cba", "weak_ap", "weak_cba", "train_mass")}

    def scores(ids, p, e):
        pred = np.zeros(n_pool, dtype)
        for lo in range(0, len(ids), 256):  # a block of candidates' labels at a time
            rows = unpack_bits(pool_sig[ids[lo:lo + 256]], n_pool).astype(dtype)
            pred += p[lo:lo + 256].astype(dtype) @ rows
        ap = average_precision(pred.astype(np.float64), unpack_bits(pool_sig[int(episodes.concept[e])], n_pool))
        q = episodes.query_scenes[e]
        if len(ids):
            bits = (query_rows[q][:, ids >> 6] >> (ids & 63).astype(np.uint64)) & np.uint64(1)
            q_pred = (bits.astype(dtype) * p[None, :]).sum(axis=1, dtype=dtype)
        else:
            q_pred = np.zeros(len(q))
        return ap, class_balanced_accuracy(np.asarray(q_pred, np.float64), episodes.query_labels[e])

    for e in range(n):
        strong.fit(episodes.support_scenes[e], episodes.support_labels[e], hard=hard, positives_drawn=drawn)
        ids, probs = strong.posterior()
        out["strong_ap"][e], out["strong_cba"][e] = scores(ids, probs.astype(dtype), e)
        keep = in_train[ids]
        w_ids, p = ids[keep], probs[keep].astype(dtype)
        out["train_mass"][e] = float(probs[keep].sum())
        if masked32:
            p = p / (p.sum(dtype=dtype) + dtype(1e-12))
        elif len(p):
            p = p / p.sum()
        out["weak_ap"][e], out["weak_cba"][e] = scores(w_ids, p, e)
    return out


# ---------------------------------------------------------------------------- protocols
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
        for one run (recorded in ``attrs["protocol_overrides"]``); an unknown override, and the bad
        input :func:`~bayes_concepts.gap.compute_gap` refuses, raise a one-line
        :class:`~bayes_concepts.errors.BayesConceptsError`."""
        known = {"settings", "query_negatives", "hard_mode"}
        bad = set(overrides) - known
        if bad:
            raise BayesConceptsError(f"protocol {self.name}: unknown override {', '.join(sorted(bad))} "
                                     f"(expected {', '.join(sorted(known))})")
        splits = self.splits(space, names) if splits is None else splits
        ds = compute_gap(space, splits, negatives, n_episodes, overrides.get("settings", self.settings), seed,
                         query_negatives=overrides.get("query_negatives", self.query_negatives),
                         hard_mode=overrides.get("hard_mode", self.hard_mode), progress=progress)
        return self.record(ds, overrides)

    def record(self, ds, overrides: dict | None = None):
        """Mark results ``ds`` as computed by this protocol (``attrs["protocol"]``,
        ``"protocol_info"`` and, when any, ``"protocol_overrides"``); returns ``ds``."""
        ds.attrs["protocol"] = self.name
        ds.attrs["protocol_info"] = json.dumps(self.info(), sort_keys=True)
        if overrides:
            ds.attrs["protocol_overrides"] = json.dumps(
                {k: (v.as_dict() if isinstance(v, OracleSettings) else v) for k, v in overrides.items()},
                sort_keys=True)
        return ds


@lru_cache(maxsize=4)
def _closure_family_programs(per_family: int, per_template: int | None = None) -> tuple:
    """``(families, family programs, CLEVR template programs)``: CLOSURE's families and
    ``per_family`` instantiations of each; ``per_template`` instantiations of each of CLEVR's
    templates (``{}`` for None); seed 0, as ``space build --preset clevr`` draws them."""
    from .closure import clevr_concepts, family_concepts, load_families
    families = load_families()
    clevr = clevr_concepts(None, per_template, 0) if per_template else {}
    return families, family_concepts(families, per_family, 0), clevr


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
    (:func:`bayes_concepts.closure.clevr_concepts`, ``clevr_per_template`` of each) and of the
    CLEVR baseline templates CLOSURE derives its tests from (its Appendix F, Figure 9).
    ``train = "baselines"`` (protocol ``closure-baselines``): the baselines' concepts only.
    Family concepts are :func:`bayes_concepts.closure.family_concepts` (``per_family`` of each,
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

    def info(self) -> dict:
        """The protocol as a JSON-able dict, with what its weak oracle trains on."""
        return {**super().info(), "train": self.train}

    def spec_files(self) -> list:
        return []

    def family_programs(self, space) -> tuple:
        """``(families, programs)``: the family file's families and ``per_family`` instantiations
        of each (seed 0), read and drawn once per process and size."""
        families, programs, _ = _closure_family_programs(int(space.params.get("closure_per_family")
                                                             or self.per_family))
        return families, programs

    def clevr_programs(self, space) -> dict:
        """Template name -> the instantiations of CLEVR's templates the space was built with
        (its ``clevr_per_template``, seed 0); ``{}`` when it was built without them."""
        per_template = space.params.get("clevr_per_template")
        if not per_template:
            return {}
        return _closure_family_programs(int(space.params.get("closure_per_family") or self.per_family),
                                        int(per_template))[2]

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
        from .closure import load_reported
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

    def spec_files(self) -> list:
        return []

    def compute_gap(self, space, names=None, negatives=("hard", "easy"), n_episodes: int = 20_000, seed: int = 0,
                    progress: bool = False, splits=None, **overrides):
        """:meth:`Protocol.compute_gap`, with the multi-class accuracy of :meth:`annotate`."""
        splits = self.splits(space, names) if splits is None else splits
        ds = super().compute_gap(space, names, negatives, n_episodes, seed, progress, splits, **overrides)
        return self.annotate(space, splits, ds, overrides.get("settings", self.settings), seed, n_episodes)

    def annotate(self, space, splits, ds, settings: OracleSettings | None = None, seed: int = 0,
                 n_episodes: int | None = None):
        """The seed's multi-class form beside the binary gap: per split, the strong and the weak
        oracle's accuracy at telling which of the condition's concepts a scene shows
        (:func:`~bayes_concepts.conceptworld.multiclass.multiclass_accuracy`; min(n_episodes,
        :attr:`multiclass_episodes`) episodes), as JSON in ``ds.attrs["multiclass"]``; returns ``ds``."""
        from .conceptworld.multiclass import multiclass_accuracy
        from .oracles import strong_and_weak
        n = min(int(n_episodes or self.multiclass_episodes), self.multiclass_episodes)
        out = {}
        for name, split in splits.items():
            strong, weak = strong_and_weak(space, split, settings or self.settings)
            out[name] = multiclass_accuracy(space, split, {"strong": strong, "weak": weak}, n_episodes=n, seed=seed)
        ds.attrs["multiclass"] = json.dumps(out, sort_keys=True)
        return ds

    def splits(self, space, names=None) -> dict:
        from .conceptworld.space import experiment_splits
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
        from .conceptworld.space import condition_slug, load_reported
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
            from .conceptworld.multiclass import format_multiclass
            lines.append(format_multiclass(json.loads(ds.attrs["multiclass"])))
        return "\n".join(lines)


#: The named protocols.
protocols = Registry("protocol")

protocols.register("paper", Protocol(
    "paper", "the paper's text: its nine splits, length prior (beta 0.2), deterministic likelihood, hard query "
    "negatives", "splits", OracleSettings(prior="length", beta=0.2, likelihood="consistent", weak_empty="zero")))
protocols.register("curi-release", Protocol(
    "curi-release", "CURI's public release: its splits, the sampler's prior, its size likelihood as it ran "
    "(negatives only), random query negatives, strong oracle over every concept", "splits_curi_release",
    OracleSettings(prior="pcfg_release", likelihood="size_release", weak_empty="zero"), query_negatives="random",
    strong_knows_all=True, drop_mixed=("binding_color", "binding_shape")))


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


_CW_SETTINGS = OracleSettings(prior="length", beta=0.2, likelihood="size", weak_empty="zero")
for _exp, _text in (("productivity", "sequences of 1-2 squares in training, 3, 5, 7 in test"),
                    ("boxworld", "Box-World key-lock chains of 1-2 in training, 3 and 5 in test"),
                    ("scaling", "2x2 patterns of points in training, of 2x2 squares (4x4) in test"),
                    ("substitution", "pairs of squares in training, one or two pentominoes substituted in test")):
    protocols.register(f"conceptworld-{_exp}", ConceptWorldProtocol(
        f"conceptworld-{_exp}", f"ConceptWorld's {_exp} experiment on a ConceptWorld space (--preset conceptworld): "
        f"{_text}; weak = its training concepts, strong = every concept; length prior, size likelihood",
        "conceptworld", _CW_SETTINGS, strong_knows_all=True, experiment=_exp))


def get_protocol(name) -> Protocol:
    """The registered protocol ``name`` (a :class:`Protocol` passes through)."""
    return name if isinstance(name, Protocol) else protocols.get(name)


__all__ = ["Protocol", "ClosureProtocol", "ConceptWorldProtocol", "protocols", "get_protocol", "release_string", "release_token_counts",
           "mixed_values", "pcfg_release_prior", "size_release_likelihood", "release_pool", "release_oracle_scores",
           "RELEASE_BINDER"]
