"""The compositionality gap and the audit of a split.

comp gap = M(strong) − M(weak) on a split's test episodes, for M = mAP (test bank)
and CBA (query), with a paired bootstrap 95 % interval over episodes.

In parts (``compute_gap(..., parts=True)``, ``gap --parts``): two more oracles sit between
the weak and the strong one on the same episodes, the *compound oracle* (every concept whose
atoms and compounds all occur in train concepts) and the *atom oracle* (every concept whose
atoms all do; :func:`bayes_concepts.divergence.nested_concepts`).  weak ⊆ compound ⊆ atom ⊆
strong, and the gap is the sum of three differences, each with its paired bootstrap interval:
novel atoms (strong − atom), novel compounds (atom − compound) and novel arrangements of seen
compounds (compound − weak).

>>> ds = compute_gap(space, curi_splits(space), n_episodes=2000)     # doctest: +SKIP
>>> rows = summarise(ds)                                              # doctest: +SKIP
>>> print(format_table(rows))                                         # doctest: +SKIP
"""
from __future__ import annotations

import json
import zlib

import numpy as np
import xarray as xr

from . import __version__
from .bootstrap import resample_means
from .divergence import concept_structure, nested_concepts, nested_sizes, split_divergence
from .episodes import episode_shapes
from .errors import BayesConceptsError
from .gap_cells import NESTED_ORACLES, gap_cells
from .oracles import Oracle, OracleSettings, strong_and_weak
from .results import ResultsError, empty_dataset, get_attr, set_attrs
from .scale import Scheduler, check_memory, gap_bytes, parse_scheduler, scheduler_scope
from .splits import by_set, side_space, split_stats
from .params import FLAG, RUN_PARAMS, Interval, Options, run_given, validate_params, whole_number

LEARNERS = ("strong", "weak")
ORACLES = LEARNERS
#: every oracle's name (no learner may take one): strong, weak and the two between them
ALL_ORACLES = (*ORACLES, *NESTED_ORACLES)
#: the parts of the gap in parts: name -> (upper oracle, lower oracle); they add up to strong − weak
GAP_PARTS = {"novel_atoms": ("strong", "atom"), "novel_compounds": ("atom", "compound"),
             "novel_arrangements": ("compound", "weak")}


def cell_seed(seed: int, split: str, negatives: str) -> int:
    """Seed of one (split, negatives) cell: stable across runs and independent of which
    other splits are computed."""
    ss = np.random.SeedSequence([int(seed), zlib.crc32(split.encode()), zlib.crc32(negatives.encode())])
    return int(ss.generate_state(1, np.uint32)[0])


def _learner_table(learners, split_names) -> dict:
    """``learners`` as name -> {split: learner}.

    Accepts None, a mapping name -> learner (scored on every split) or name -> mapping
    split -> learner (a model per split; scored only on those splits), or a sequence of
    learners (named by their ``name`` attribute)."""
    from collections.abc import Mapping
    from .learners.protocol import LearnerError, is_learner, learner_name
    if learners is None:
        return {}
    if not isinstance(learners, Mapping):
        items = list(learners)
        names = [learner_name(x, f"learner{i}") for i, x in enumerate(items)]
        if len(set(names)) != len(names):
            raise LearnerError(f"learners need distinct names, got {', '.join(names)}")
        learners = dict(zip(names, items))
    table = {}
    for name, value in learners.items():
        name = str(name)
        if name in ALL_ORACLES:
            raise LearnerError(f"the learner names {', '.join(ALL_ORACLES)} are the oracles'; rename learner "
                               f"{name!r}")
        if isinstance(value, Mapping):
            unknown = [s for s in value if s not in split_names]
            if unknown:
                raise LearnerError(f"learner {name!r} is given for split {', '.join(map(str, unknown))}, which is "
                                   f"not among the splits scored ({', '.join(split_names)})")
            per_split = dict(value)
        else:
            per_split = {s: value for s in split_names}
        for s, learner in per_split.items():
            if not is_learner(learner):
                raise LearnerError(f"learner {name!r} ({type(learner).__name__}) has no fit/predict_proba methods")
        table[name] = per_split
    return table


def _named(learners) -> dict:
    """``learners`` as a mapping name -> learner (or name -> {split: learner}); a sequence of
    learners is named by their ``name`` attribute, as :func:`_learner_table` names them."""
    from collections.abc import Mapping
    if isinstance(learners, Mapping):
        return dict(learners)
    from .learners.protocol import learner_name
    return {learner_name(x, f"learner{i}"): x for i, x in enumerate(learners)}


def _learner_info(table: dict, checks: dict | None = None, parts: bool = False) -> dict:
    """Per learner and split: the learner's own ``info()`` and, for a trained model, where it
    was scored and how that compares with where it was trained (``scored_on``: see
    :func:`bayes_concepts.learners.binding.check_scoring`).  The oracles scored: strong and
    weak, and the atom and compound oracles only with ``parts``."""
    info = {name: {"kind": "oracle"} for name in (ALL_ORACLES if parts else ORACLES)}
    for name, per_split in table.items():
        entries = {}
        for s, learner in per_split.items():
            describe = getattr(learner, "info", None)
            entries[s] = describe() if callable(describe) else {"kind": type(learner).__name__}
            if (name, s) in (checks or {}):
                entries[s] = {**entries[s], "scored_on": checks[(name, s)]}
        info[name] = entries
    return info


def _check_gap_input(splits, negatives, n_episodes, seed, query_negatives) -> tuple:
    """Raise a one-line :class:`BayesConceptsError` for input :func:`compute_gap` cannot score;
    returns ``negatives`` as a tuple (a single string is one setting)."""
    if not splits:
        raise BayesConceptsError("no splits to score: give a dict {name: Split} with at least one split "
                                 "(e.g. load_splits(space), or a protocol's splits(space))")
    whole_number("n_episodes", n_episodes, 1, error=BayesConceptsError)
    whole_number("seed", seed, 0, error=BayesConceptsError)
    negatives = (negatives,) if isinstance(negatives, str) else tuple(negatives)
    if not negatives:
        raise BayesConceptsError("negatives is empty: give 'hard', 'easy' or both, e.g. ('hard', 'easy')")
    bad = [n for n in negatives if n not in ("hard", "easy")]
    if bad:
        raise BayesConceptsError(f"negatives must be 'hard' or 'easy' (or a sequence of them), got {bad[0]!r}")
    if len(set(negatives)) != len(negatives):
        raise BayesConceptsError(f"negatives lists a setting twice: {negatives!r}")
    if query_negatives not in (None, "hard", "easy", "random"):
        raise BayesConceptsError(f"query_negatives must be None, 'hard', 'easy' or 'random', got {query_negatives!r}")
    return negatives


@validate_params({**RUN_PARAMS, "parts": FLAG, "skip_undrawable": FLAG, "progress": FLAG,
                  "allow_other_space": FLAG, "query_negatives": [Options({"hard", "easy", "random"}), None]})
def compute_gap(space, splits: dict | None = None, negatives=("hard", "easy"), n_episodes: int = 20_000,
                settings: OracleSettings | None = None, seed: int = 0, query_negatives: str | None = None,
                progress: bool = False, hard_mode: str = "union", learners=None, scheduler=None,
                allow_other_space: bool = False, parts: bool = False, structure=None,
                episode_shape=None, skip_undrawable: bool = False) -> xr.Dataset:
    """Score the strong and weak oracles of every split, and any other ``learners``, on the
    same ``n_episodes`` test episodes per (split, negatives) with the same metrics.  Returns
    the results Dataset (see :mod:`bayes_concepts.results`), the query predictions of every
    learner included.

    learners: None; a mapping name -> learner (scored on every split), or name -> {split:
    learner} (e.g. a model trained on that split; NaN elsewhere); or a sequence of learners
    named by their ``name``.  A learner is anything with ``fit``/``predict_proba``
    (:mod:`bayes_concepts.learners.protocol`); ones with a batch ``evaluate(episodes)`` are
    scored by it.  The oracles' numbers do not depend on which other learners are scored.

    scheduler: where the oracles' episode chunks run (:class:`bayes_concepts.scale.Scheduler`:
    None, this process; ``"local:N"``, a LocalCluster; a Dask scheduler address, for a saved
    space every worker can read; see :mod:`bayes_concepts.gap_cells`); the results are the
    same, value for value.  Other learners
    are scored in this process on the same episodes.

    parts: also score the atom and the compound oracle of every split on the same episodes
    (learners ``atom`` and ``compound`` of the results; concept sets by
    :func:`~bayes_concepts.divergence.nested_concepts`, ``structure`` reusing a
    :func:`~bayes_concepts.divergence.concept_structure`), so that :func:`summarise` splits
    each gap into its three parts; the attribute ``gap_parts`` records each split's oracle
    sizes.  About twice the oracles' work; ``parts`` that is not a bool is an error.

    episode_shape: None (each split's spec ``[episodes]`` table, else 5+20 each), or an
    :class:`~bayes_concepts.episodes.EpisodeShape` (or its dict / ``"P,N[,QP,QN]"`` text) for
    every split.  The attribute ``episode_shape`` records each split's shape, ``excluded`` each
    split's test concepts too small for it (count and first names:
    :func:`~bayes_concepts.episodes.episode_exclusions`) and, for a pair space, what its build
    left out.  Splits whose query sets differ in size are an error (one query axis).

    skip_undrawable: a split none of whose test concepts can be an episode's concept (too few
    positives, or too few negatives in its question's domain) is not scored -- it has no
    coordinate in the results -- and is counted in ``excluded["not_scored"]`` with the reason
    (:func:`~bayes_concepts.episodes.episode_shapes`), instead of stopping the run; a
    protocol's run of all its splits does this.  When no split is left, the error is raised.

    A trained model (a learner whose ``card`` has a ``training`` entry) is scored only on the
    space it was trained on and on splits with its training split's concepts: anything else
    is a one-line :class:`~bayes_concepts.learners.protocol.LearnerError` naming both, unless
    ``allow_other_space`` (or the model was loaded with it); the results' ``learners``
    attribute records each model's training space, split hash, steps and settings, where it
    was scored and any override (:mod:`bayes_concepts.learners.binding`).

    Bad input raises :class:`~bayes_concepts.errors.BayesConceptsError` (one line, before any
    work): no splits, ``n_episodes`` not a whole number >= 1, ``seed`` not a whole number
    >= 0, ``negatives`` empty or other than ``"hard"``/``"easy"`` (a single string, e.g.
    ``"hard"``, is one setting), ``query_negatives`` other than None/hard/easy/random; and a
    request whose results cannot fit in the memory available
    (:class:`~bayes_concepts.scale.MemoryLimitError`, as ``gap --episodes`` is refused).

    space may be a :class:`~bayes_concepts.run.Run` (``bc.resolve(...)``), which settles the
    splits, oracle settings and episodes itself (and a protocol's record of the results):
    ``compute_gap(run, n_episodes=2000)`` is ``run.gap(n_episodes=2000)``."""
    if run_given(space, splits=splits, settings=settings, query_negatives=query_negatives, structure=structure,
                 episode_shape=episode_shape, hard_mode=None if hard_mode == "union" else hard_mode):
        return space.gap(negatives, n_episodes, seed, learners=learners, progress=progress, scheduler=scheduler,
                         allow_other_space=allow_other_space, parts=parts)
    from tqdm.auto import tqdm
    from .learners.scoring import score_learners
    settings = settings or OracleSettings()
    negatives = _check_gap_input(splits, negatives, n_episodes, seed, query_negatives)
    if scheduler is not None and not isinstance(scheduler, Scheduler):
        parse_scheduler(scheduler)  # a bad scheduler before any work
    if not isinstance(parts, (bool, np.bool_)):
        raise BayesConceptsError(f"parts must be True or False, got {parts!r}")
    if not isinstance(skip_undrawable, (bool, np.bool_)):
        raise BayesConceptsError(f"skip_undrawable must be True or False, got {skip_undrawable!r}")
    names = list(splits)
    table = _learner_table(learners, names)
    # a by-set split's episodes hold its test-set items' ids: only learners made on those items
    # (splits.side_space, as the ladder's rungs are) can score them
    image_level = [(n, lr) for n in names if by_set(splits[n]) for lr, per in table.items()
                   if n in per and getattr(per[n], "space", None) is not side_space(space, splits[n], "test")]
    if image_level:
        n, lr = image_level[0]
        raise BayesConceptsError(f"split {n} draws its episodes by set (items = 'by-set'), and learner {lr!r} is not "
                                 "made on its test-set items (splits.side_space(space, split), as the ladder's rungs "
                                 "are): score it on the pair-level split, or the oracles and rungs alone here")
    from .learners.binding import check_learners
    checks = check_learners(space, splits, table, allow_other_space)
    shapes, excluded = episode_shapes(space, splits, episode_shape, skip_undrawable=bool(skip_undrawable))
    if len(shapes) < len(names):  # splits not scored (excluded["not_scored"] says which and why)
        names = [n for n in names if n in shapes]
        splits = {n: splits[n] for n in names}
    all_learners = (*ORACLES, *(NESTED_ORACLES if parts else ()), *table)
    cells = [(s, neg) for s in names for neg in negatives]
    # as the command line does: refuse up front a request whose results cannot fit in memory
    check_memory(gap_bytes(n_episodes, len(cells), len(all_learners), keep_episodes=bool(table)),
                 f"n_episodes {n_episodes:,}", "give fewer episodes (or fewer splits)",
                 f"results of {len(cells)} cell(s) x {len(all_learners)} learner(s)")
    nested = None
    if parts:
        structure = structure if structure is not None else concept_structure(space)
        nested = {name: nested_concepts(space, split, structure=structure) for name, split in splits.items()}
        sizes = nested_sizes(splits, nested)
    ds = None
    oracle_keys = {}  # split -> {oracle: its scoring key}: a learner that is one of them copies its numbers
    with scheduler_scope(scheduler) as sched:
        oracle_cells = gap_cells(space, splits, cells, n_episodes, settings,
                                 lambda name, neg: cell_seed(seed, name, neg), query_negatives, hard_mode,
                                 bool(table), sched, nested=nested, shapes=shapes)
        bar = tqdm(total=len(cells), disable=not progress, desc="comp gap", unit="cell", leave=False)
        for name, neg, concept, scored, eps, topup in oracle_cells:
            if ds is None:
                ds = empty_dataset(names, negatives, all_learners, n_episodes,
                                   n_query=scored["strong"]["query_pred"].shape[1])
                ds["ap_bound"] = xr.zeros_like(ds["ap"])
                ds["topup"] = xr.zeros_like(ds["concept"], dtype=np.int32)
            here = {lr: per_split[name] for lr, per_split in table.items() if name in per_split}
            if here:  # a by-set split's episodes are of its test-set items
                bank = side_space(space, splits[name], "test")
                if name not in oracle_keys:
                    oracle_keys[name] = _oracle_keys(bank, splits[name], settings, None if nested is None else nested[name])
                known = {key: scored[lr] for lr, key in oracle_keys[name].items()}
                scored.update(score_learners(bank, eps, here, known=known))
            sel = {"split": name, "negatives": neg}
            ds["concept"].loc[sel] = concept
            ds["topup"].loc[sel] = topup
            for learner, r in scored.items():
                for m in ("ap", "cba", "posterior_entropy", "predictive_entropy", "empty", "query_pred"):
                    ds[m].loc[dict(sel, learner=learner)] = r[m]
                ds["ap_bound"].loc[dict(sel, learner=learner)] = r.get("ap_bound", 0.0)  # 0: exact
            if bar.n == 0 and not bar.disable and len(cells) > 1:
                # the rate counts from here: the first cell compiles the numba kernels on a first run
                # (40-110 s), and a rate through it estimated minutes for seconds of work
                bar.close()
                bar = tqdm(total=len(cells), initial=1, desc="comp gap", unit="cell", leave=False)
            else:
                bar.update(1)
        bar.refresh()  # the final count drawn (a closing bar with leave=False draws none), so a log ends on it
        bar.close()
    if ds is None:
        ds = empty_dataset(names, negatives, all_learners, n_episodes, n_query=0)
        ds["ap_bound"] = xr.zeros_like(ds["ap"])
    ds["weak_empty"] = ds["empty"].sel(learner="weak", drop=True)
    set_attrs(ds, space_manifest_sha256=space.manifest_sha256() or "unsaved", oracle_settings=settings.as_dict(),
              ap_tolerance=settings.tolerance, seed=seed, episodes_per_cell=n_episodes,
              query_negatives=query_negatives or "same as support", hard_mode=hard_mode, toolkit_version=__version__,
              metric_units="ap, ap_bound, cba: fraction in [0, 1]; entropies: nats",
              learners=_learner_info(table, checks, nested is not None), splits=split_records(splits),
              episode_shape=shapes, excluded=excluded)
    if nested is not None:
        set_attrs(ds, gap_parts=sizes)
    return ds


def _oracle_keys(bank, split, settings, nested) -> dict:
    """The scoring keys (:meth:`~bayes_concepts.oracles.Oracle.scoring_key`) of the oracles the
    gap's tasks score on ``split`` (:func:`~bayes_concepts.gap_cells.gap_chunk`): learner name ->
    key."""
    strong, weak = strong_and_weak(bank, split, settings)
    oracles = {"strong": strong, "weak": weak}
    if nested is not None:
        oracles.update({kind: Oracle(bank, nested[kind], settings, kind) for kind in NESTED_ORACLES})
    return {name: oracle.scoring_key() for name, oracle in oracles.items()}


def split_records(splits: dict) -> dict:
    """What results record of each split scored (``ds.attrs["splits"]``, JSON): name ->
    ``spec`` (the validated spec dict it was made from, so the split can be made again on the
    same space), ``source`` (its spec file, or None), ``protocol`` (the protocol that treated
    it, or None), ``concepts_sha256`` (:meth:`~bayes_concepts.splits.Split.concepts_sha256`:
    tells whether a split made again is the same) and ``sizes`` (concepts per side)."""
    return {name: {"spec": split.spec, "source": split.source, "protocol": getattr(split, "protocol", None),
                   "concepts_sha256": split.concepts_sha256(), "sizes": split.sizes()}
            for name, split in splits.items()}


def recorded_splits(ds: xr.Dataset) -> dict:
    """The split records of results ``ds`` (:func:`split_records`); ``{}`` for results written
    before splits were recorded."""
    records = get_attr(ds, "splits") if ds.attrs.get("splits") else {}
    return records if isinstance(records, dict) else {}


#: the most bytes of resample indices :func:`_resample_blocks` keeps between calls (one set)
RESAMPLE_CACHE_BYTES = 64 * 2**20
_last_resamples: list = [None]  # [(key, blocks)]: replaced whole, so threads never see half of one


def _draw_resample_blocks(n: int, n_boot: int, seed) -> list:
    """The episode indices of ``n_boot`` resamples of ``n`` pairs, as blocks of at most about
    2,000,000 indices (arrays (k, n)), drawn from ``default_rng(seed)`` in order and kept in
    the narrowest of uint16 and int32 that holds them (the means read every index once per
    interval: a quarter of the bytes of int64)."""
    rng = np.random.default_rng(seed)
    block = max(1, 2_000_000 // n)
    narrow = np.uint16 if n <= 2**16 else np.int32 if n <= 2**31 else np.int64
    return [rng.integers(0, n, size=(min(block, n_boot - lo), n)).astype(narrow, copy=False)
            for lo in range(0, n_boot, block)]


def _resample_blocks(n: int, n_boot: int, seed) -> list:
    """:func:`_draw_resample_blocks`, kept for the next call with the same (n, n_boot, seed):
    a summary bootstraps hundreds of differences over the same episodes with the same seed, and
    drawing the indices was three quarters of each interval's time.  Only the last set is kept,
    and only when it is at most :data:`RESAMPLE_CACHE_BYTES`; the arrays are read-only."""
    key = (int(n), int(n_boot), int(seed)) if isinstance(seed, (int, np.integer)) else None
    last = _last_resamples[0]
    if key is not None and last is not None and last[0] == key:
        return last[1]
    blocks = _draw_resample_blocks(n, n_boot, seed)
    if key is not None and sum(b.nbytes for b in blocks) <= RESAMPLE_CACHE_BYTES:
        for b in blocks:
            b.setflags(write=False)
        _last_resamples[0] = (key, blocks)
    return blocks


def paired_bootstrap(strong: np.ndarray, weak: np.ndarray, n_boot: int = 1000, seed: int = 0,
                     level: float = 0.95) -> tuple:
    """Mean of ``strong - weak`` and its percentile bootstrap interval, resampling episodes
    (pairs) with replacement.  NaN pairs are dropped.  Returns (mean, lo, hi); the interval is
    NaN with fewer than 2 pairs (one episode resampled is itself: no interval).  ``n_boot`` not a
    whole number >= 1, a ``level`` outside (0, 1) or arrays of other shapes raise a one-line
    :class:`~bayes_concepts.errors.BayesConceptsError`."""
    whole_number("n_boot", n_boot, 1, error=BayesConceptsError)
    if not isinstance(level, (int, float, np.floating)) or not 0 < level < 1:
        raise BayesConceptsError(f"level must be a number in (0, 1), got {level!r}")
    if np.shape(strong) != np.shape(weak):
        raise BayesConceptsError(f"paired_bootstrap: the two arrays pair episodes and need one shape, got "
                                 f"{np.shape(strong)} and {np.shape(weak)}")
    d = np.asarray(strong, np.float64) - np.asarray(weak, np.float64)
    d = d[~np.isnan(d)]
    if len(d) == 0:
        return (np.nan, np.nan, np.nan)
    if len(d) < 2:
        return (float(d.mean()), np.nan, np.nan)
    means = np.empty(n_boot)
    lo = 0
    for idx in _resample_blocks(len(d), n_boot, seed):
        means[lo: lo + len(idx)] = resample_means(d, idx)  # = d[idx].mean(axis=1), bit for bit
        lo += len(idx)
    a = (1 - level) / 2
    return float(d.mean()), float(np.quantile(means, a)), float(np.quantile(means, 1 - a))


def summarise(ds: xr.Dataset, n_boot: int = 1000, seed: int = 0) -> list:
    """One row per (split, negatives): strong/weak mAP and CBA (percent), gaps with paired
    bootstrap 95 % intervals, weak-empty share, mean entropies (strong oracle; nats) and, when
    other learners were scored, ``learners``: name -> their means with bootstrap intervals and
    their differences from the weak oracle with paired bootstrap intervals (:func:`_learner_row`).

    Results with the atom and compound oracles (``compute_gap(..., parts=True)``) add ``atom``
    and ``compound`` (their means, as ``strong``) and ``parts`` (:func:`gap_parts`)."""
    rows = []
    info = get_attr(ds, "learners", {})
    learners_here = [str(x) for x in ds.learner.values.tolist()]
    has_parts = all(lr in learners_here for lr in NESTED_ORACLES)
    for split in ds.split.values.tolist():
        for neg in ds.negatives.values.tolist():
            cell = ds.sel(split=split, negatives=neg)
            r = {"split": split, "negatives": neg, "episodes": int(cell.sizes["episode"])}
            for learner in ("strong", "weak", *(NESTED_ORACLES if has_parts else ())):
                c = cell.sel(learner=learner)
                r[learner] = {"map": 100 * float(np.nanmean(c["ap"])), "cba": 100 * float(np.nanmean(c["cba"])),
                              "posterior_entropy": float(np.nanmean(c["posterior_entropy"]))
                              if np.isfinite(c["posterior_entropy"]).any() else None,
                              "predictive_entropy": float(np.nanmean(c["predictive_entropy"]))}
            gap = {}
            for metric, key in (("ap", "map"), ("cba", "cba")):
                mean, lo, hi = paired_bootstrap(100 * cell[metric].sel(learner="strong").values,
                                                100 * cell[metric].sel(learner="weak").values, n_boot, seed)
                gap[key], gap[f"{key}_ci"] = mean, [lo, hi]
            r["gap"] = gap
            if has_parts:
                r["parts"] = gap_parts(cell, n_boot, seed)
            models = {}
            for learner in (str(x) for x in ds.learner.values.tolist()):
                ap = cell["ap"].sel(learner=learner).values
                if learner in ALL_ORACLES or not np.isfinite(ap).any():
                    continue
                models[learner] = _learner_row(cell, learner, n_boot, seed)
                from .learners.learned import did_learn  # only where a learner was scored (the package loads torch)
                learned = did_learn((info.get(learner) or {}).get(split) or {})
                if learned is not None:  # a trained model: did it learn? (learners.learned)
                    models[learner]["learned"] = learned
            if models:  # other learners scored in this cell: means and differences from the weak oracle
                r["learners"] = models
            r["weak_empty_share"] = float(cell["weak_empty"].mean())
            if "topup" in ds:  # hard negatives drawn at random for want of hard ones
                t = cell["topup"].values
                r["topup_share"] = float((t > 0).mean()) if t.size else 0.0
                r["topup_negatives"] = int(t.sum())
            if "ap_bound" in ds:  # the AP tolerance and the largest certified bound of the oracles
                r["ap_tolerance"] = float(ds.attrs.get("ap_tolerance", 0.0))
                oracles = [lr for lr in ALL_ORACLES if lr in learners_here]
                r["ap_bound_max"] = float(np.nanmax(cell["ap_bound"].sel(learner=oracles).values, initial=0.0))
            r["posterior_entropy"] = r["strong"]["posterior_entropy"]
            r["predictive_entropy"] = r["strong"]["predictive_entropy"]
            rows.append(r)
    return rows


def gap_parts(cell, n_boot: int = 1000, seed: int = 0) -> dict:
    """The gap of one (split, negatives) cell of results with the four oracles, in parts.

    Returns ``{"map": {...}, "cba": {...}, "episodes": n}``; per metric, for each part of
    :data:`GAP_PARTS` (``novel_atoms`` = strong − atom, ``novel_compounds`` = atom − compound,
    ``novel_arrangements`` = compound − weak) its mean difference in percentage points and
    ``<part>_ci``, its paired bootstrap 95 % interval, and ``total`` (strong − weak).  Means are
    over the episodes where all four oracles have a value, so the three parts add up to
    ``total`` (up to float rounding)."""
    out = {"episodes": 0}
    for metric, key in (("ap", "map"), ("cba", "cba")):
        value = {lr: 100 * cell[metric].sel(learner=lr).values.astype(np.float64) for lr in ALL_ORACLES}
        keep = np.logical_and.reduce([np.isfinite(v) for v in value.values()])
        value = {lr: v[keep] for lr, v in value.items()}
        entry = {}
        for part, (upper, lower) in GAP_PARTS.items():
            mean, lo, hi = paired_bootstrap(value[upper], value[lower], n_boot, seed)
            entry[part], entry[f"{part}_ci"] = mean, [lo, hi]
        entry["total"] = float(np.mean(value["strong"] - value["weak"])) if keep.any() else float("nan")
        out[key] = entry
        out["episodes"] = int(keep.sum())
    return out


def _learner_row(cell, learner: str, n_boot: int, seed: int) -> dict:
    """A learner's entry in a :func:`summarise` row: mean mAP and CBA (percent) with the
    percentile bootstrap 95 % interval of each mean over its episodes (``map_ci``,
    ``cba_ci``), the episodes it was scored on, and ``vs_weak``: the learner − weak oracle
    difference of each metric (percentage points) with its paired bootstrap 95 % interval over
    the same episodes, as the comp gap's strong − weak."""
    row, vs_weak = {}, {}
    for metric, key in (("ap", "map"), ("cba", "cba")):
        own = 100 * cell[metric].sel(learner=learner).values.astype(np.float64)
        weak = 100 * cell[metric].sel(learner="weak").values.astype(np.float64)
        mean, lo, hi = paired_bootstrap(own, np.zeros_like(own), n_boot, seed)  # the mean itself, resampled
        row[key], row[f"{key}_ci"] = mean, [lo, hi]
        diff, dlo, dhi = paired_bootstrap(own, weak, n_boot, seed)
        vs_weak[key], vs_weak[f"{key}_ci"] = diff, [dlo, dhi]
    row["episodes"] = int(np.isfinite(cell["ap"].sel(learner=learner).values).sum())
    row["vs_weak"] = vs_weak
    return row


#: what an interval cell says when there is none (fewer than 2 episodes)
NO_INTERVAL = "[n < 2: no CI]"


def ci_text(lo: float, hi: float, width: int = 0) -> str:
    """``[lo, hi]`` (one decimal, each ``width`` wide), or :data:`NO_INTERVAL` when the interval
    is undefined (an interval needs 2 episodes or more)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return NO_INTERVAL
    return f"[{lo:>{width}.1f}, {hi:>{width}.1f}]"


def format_table(rows: list) -> str:
    """The comp-gap table as text, splits ordered by mAP gap (largest first)."""
    w = max([15] + [len(r["split"]) + 1 for r in rows])
    head = (f"{'split':<{w}}{'neg':<5}{'strong mAP':>11}{'weak mAP':>9}{'mAP gap [95% CI]':>23}"
            f"{'strong CBA':>11}{'weak CBA':>9}{'CBA gap [95% CI]':>23}{'weak empty':>11}{'H post':>8}"
            f"{'H pred':>8}{'episodes':>9}")
    lines = [head, "-" * len(head)]
    for r in sorted(rows, key=lambda r: (r["negatives"], -r["gap"]["map"])):
        g = r["gap"]
        lines.append(
            f"{r['split']:<{w}}{r['negatives']:<5}{r['strong']['map']:>11.1f}{r['weak']['map']:>9.1f}"
            f"{g['map']:>8.1f} {ci_text(*g['map_ci'], width=5)}"
            f"{r['strong']['cba']:>11.1f}{r['weak']['cba']:>9.1f}"
            f"{g['cba']:>8.1f} {ci_text(*g['cba_ci'], width=5)}"
            f"{100 * r['weak_empty_share']:>10.1f}%"
            f"{(r['posterior_entropy'] if r['posterior_entropy'] is not None else float('nan')):>8.2f}"
            f"{r['predictive_entropy']:>8.3f}{r['episodes']:>9,}")
    lines.append("metrics in percent; gap = strong - weak with a paired bootstrap 95% interval over episodes; "
                 "entropies (nats) of the strong oracle")
    lines += topup_lines(rows)
    tolerance = max((r.get("ap_tolerance", 0.0) for r in rows), default=0.0)
    if tolerance > 0:
        lines.append(f"AP within {tolerance:g} of the exact AP in every episode (certified per episode; largest "
                     f"bound {max(r.get('ap_bound_max', 0.0) for r in rows):.2g}); AP tolerance 0 computes it exactly")
    if any("parts" in r for r in rows):
        lines += ["", format_parts(rows)]
    models = list(dict.fromkeys(name for r in rows for name in r.get("learners", {})))
    if models:
        lines += ["", format_models(rows, models)]
    return "\n".join(lines)


def format_parts(rows: list) -> str:
    """The gap in parts as text: per (split, negatives) with parts, the mAP of the four oracles
    (weak, compound, atom, strong) and the three parts of the mAP gap with their paired
    bootstrap 95 % intervals (percentage points), splits ordered as :func:`format_table`."""
    def ci(entry, part) -> str:
        return f"{entry[part]:.1f} {ci_text(*entry[f'{part}_ci'])}"

    body = []
    for r in sorted((r for r in rows if "parts" in r), key=lambda r: (r["negatives"], -r["gap"]["map"])):
        p = r["parts"]["map"]
        body.append([r["split"], r["negatives"], *(f"{r[lr]['map']:.1f}" for lr in ("weak", "compound", "atom",
                                                                                   "strong")),
                     ci(p, "novel_arrangements"), ci(p, "novel_compounds"), ci(p, "novel_atoms"),
                     f"{p['total']:.1f}"])
    head = ["split", "neg", "weak", "compound", "atom", "strong", "novel arrangements", "novel compounds",
            "novel atoms", "mAP gap"]
    widths = [max(len(x[k]) for x in [head] + body) for k in range(len(head))]

    def fmt(cells) -> str:
        return "  ".join(c.ljust(w) if k < 2 else c.rjust(w) for k, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([fmt(head), "  ".join("-" * w for w in widths), *map(fmt, body),
                      "the mAP gap in parts (percentage points, paired bootstrap 95% intervals): novel arrangements = "
                      "compound - weak, novel compounds = atom - compound, novel atoms = strong - atom; the compound "
                      "oracle knows every concept whose atoms and compounds all occur in train concepts, the atom "
                      "oracle every concept whose atoms do; the parts add up to the gap"])


def format_models(rows: list, models: list) -> str:
    """Models and reference learners placed between the oracles, on the same episodes: per
    (split, negatives) and metric, one line of means (percent; weak oracle left, strong oracle
    right; a learner's mean with its bootstrap 95 % interval) and one line of differences from
    the weak oracle (percentage points, paired bootstrap 95 % intervals: a learner's, and under
    the strong oracle the comp gap).  Rows of results in parts also show the compound and the
    atom oracle's means, between the weak one and the learners, so a learner is placed against
    all four oracles."""
    def ci(value, interval) -> str:
        return f"{value:.1f} {ci_text(*interval)}"

    nested = ["compound", "atom"] if any("parts" in r for r in rows) else []  # oracles between weak and strong
    lines_of = []
    for r in sorted(rows, key=lambda r: (r["negatives"], -r["gap"]["map"])):
        for metric in ("map", "cba"):
            label = "mAP" if metric == "map" else "CBA"
            got = r.get("learners", {})
            between = [f"{r[lr][metric]:.1f}" if lr in r else "-" for lr in nested]
            lines_of.append([r["split"], r["negatives"], label, f"{r['weak'][metric]:.1f}", *between,
                             *[ci(got[m][metric], got[m][f"{metric}_ci"]) if m in got else "-" for m in models],
                             f"{r['strong'][metric]:.1f}"])
            lines_of.append(["", "", f"{label} - weak", "", *([""] * len(nested)),
                             *["did not learn" if m in got and got[m].get("learned") is False
                               else ci(got[m]["vs_weak"][metric], got[m]["vs_weak"][f"{metric}_ci"])
                               if m in got and "vs_weak" in got[m] else "-" for m in models],
                             ci(r["gap"][metric], r["gap"][f"{metric}_ci"])])
    head = ["split", "neg", "metric", "weak", *nested, *models, "strong"]
    widths = [max(len(x[k]) for x in [head] + lines_of) for k in range(len(head))]

    def fmt(cells) -> str:
        return "  ".join(c.ljust(w) if k < 3 else c.rjust(w) for k, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines = [fmt(head), "  ".join("-" * w for w in widths)] + [fmt(x) for x in lines_of]
    lines.append("learners on the same test episodes as the oracles, metrics in percent with bootstrap 95% intervals "
                 "of the mean; '- weak': difference from the weak oracle on the same episodes (percentage points, "
                 "paired bootstrap 95% interval; under strong: the comp gap); '-': not scored there"
                 + ("; did not learn: its validation mAP is not above the random learner's (no difference printed)"
                    if any(v.get("learned") is False for r in rows for v in r.get("learners", {}).values()) else ""))
    return "\n".join(lines)


@validate_params({**RUN_PARAMS, "n_worst": Interval(int, 0), "parts": FLAG})
def audit(space, split, n_episodes: int = 2000, settings: OracleSettings | None = None, seed: int = 0,
          n_worst: int = 10, structure=None, query_negatives: str | None = None, hard_mode: str = "union",
          parts: bool = True, episode_shape=None, learners=None) -> dict:
    """A one-page audit of a split: sizes, leakage, comp gap (both metrics, hard and easy
    negatives; with ``parts``, the default, in its three parts: :func:`compute_gap`, and
    ``"oracle_sizes"``, the concepts each of the four oracles knows), weak coverage,
    entropies, atom and compound divergence (``"divergence"``:
    :func:`bayes_concepts.divergence.split_divergence`; ``structure`` reuses a
    :func:`~bayes_concepts.divergence.concept_structure`), and the held-out concepts the weak
    oracle gets most wrong (lowest mean AP over the test episodes in which they were the true
    concept).  ``query_negatives`` and ``hard_mode``: how episodes are drawn, as for
    :func:`compute_gap` (a protocol's); ``episode_shape`` as for :func:`compute_gap`.  The report's
    ``"episodes"`` holds the episode shape, the usable test concepts and the exclusions
    (``excluded``: the split's too-small test concepts, ``space``: what a pair space's build
    left out, and ``notes``: what it noted, :func:`build_note_lines`).  ``learners``: scored on
    the same episodes, as for :func:`compute_gap` (a learner given per split is scored here on
    this split only); the comp-gap rows then place them between the oracles."""
    structure = structure if structure is not None else concept_structure(space)
    if learners is not None:  # name -> {split: learner}: this split's learners only
        from collections.abc import Mapping
        learners = {name: {split.name: v[split.name]} if isinstance(v, Mapping) else v
                    for name, v in _named(learners).items() if not isinstance(v, Mapping) or split.name in v}
    ds = compute_gap(space, {split.name: split}, ("hard", "easy"), n_episodes, settings, seed,
                     query_negatives=query_negatives, hard_mode=hard_mode, parts=parts, structure=structure,
                     episode_shape=episode_shape, learners=learners or None)
    excluded = get_attr(ds, "excluded")
    episodes = {"shape": get_attr(ds, "episode_shape")[split.name],
                "usable": excluded[split.name]["usable"], "excluded": excluded[split.name]["too_small"],
                "space": excluded.get("space", {}), "notes": excluded.get("space_notes", {})}
    rows = summarise(ds)
    cell = ds.sel(split=split.name, negatives="hard")
    concepts = cell["concept"].values
    weak_ap = cell["ap"].sel(learner="weak").values
    strong_ap = cell["ap"].sel(learner="strong").values
    worst = []
    for c in np.unique(concepts):
        sel = concepts == c
        worst.append((float(np.mean(weak_ap[sel])), float(np.mean(strong_ap[sel])), int(sel.sum()), int(c)))
    worst.sort()
    sizes = get_attr(ds, "gap_parts", {}).get(split.name)
    return {"split": split.name, "stats": split_stats(space, split), "gap": rows, "results": ds,
            **({"oracle_sizes": sizes} if sizes else {}), "episodes": episodes,
            "divergence": split_divergence(space, split, structure=structure,
                                           n_positive=episodes["shape"]["positives"],
                                           n_query_positive=episodes["shape"]["query_positives"]),
            "worst": [{"id": c, "program": space.programs[c], "readable": space.program(c).readable,
                       "weak_map": 100 * w, "strong_map": 100 * s, "episodes": n}
                      for w, s, n, c in worst[:n_worst]]}


def zero_gap_notes(space, splits: dict, settings: OracleSettings | None = None) -> list:
    """One line per split whose gap is 0 by construction, saying why (a table's ``0.0 [0.0,
    0.0]`` is otherwise silent): every test concept is a training concept or has a synonym
    in train (the weak oracle knows each one: ``splits`` counts these as leakage), or the
    prior gives every test concept probability 0 (neither oracle ever proposes one)."""
    from .oracles.priors import log_prior
    settings = settings or OracleSettings()
    classes = np.asarray(space.synonym_classes)
    lines = []
    for name, split in splits.items():
        test = np.asarray(split.test, np.int64)
        if not len(test):
            continue
        leak = int(np.isin(classes[test], classes[np.asarray(split.train, np.int64)]).sum())
        if leak == len(test):
            lines.append(f"{name}: every test concept ({leak:,}) is in train or has a synonym there (leakage), so the "
                         "weak oracle knows each one as the strong oracle does: its gap is 0 by construction")
            continue
        strong = getattr(split, "strong_concepts", None)
        strong = np.union1d(split.train, test) if strong is None else np.asarray(strong, np.int64)
        try:
            lp = log_prior(space, strong, settings)
        except BayesConceptsError:
            continue  # the run itself reports a prior that cannot be used
        in_test = np.isin(strong, test)
        if in_test.any() and np.all(np.isneginf(lp[in_test])):
            lines.append(f"{name}: the prior {settings.prior!r} gives every test concept probability 0, so no oracle "
                         "ever proposes one: its gap is 0 by construction")
    return lines


def build_exclusion_lines(space_record: dict | None) -> list:
    """One line per kind of what a space's build left out (count, first names, rule)."""
    lines = []
    for kind, rec in (space_record or {}).items():
        more = ", ..." if rec["count"] > len(rec["first"]) else ""
        lines.append(f"left out by the space's build, {kind.replace('_', ' ')}: {rec['count']:,} "
                     f"({', '.join(rec['first'])}{more}): {rec['rule']}")
    return lines


def topup_lines(rows: list) -> list:
    """One line naming the cells whose hard-negative episodes were topped up with random
    negatives (too few hard negatives: scenes that share the most with the concept), with the
    share of their episodes and the number of such negatives; none when no episode was."""
    hit = [r for r in rows if r.get("topup_negatives")]
    if not hit:
        return []
    cells = ", ".join(f"{r['split']} ({r['negatives']}) {100 * r['topup_share']:.0f} % of episodes, "
                      f"{r['topup_negatives']:,} negatives" for r in hit)
    return [f"hard negatives topped up at random (too few hard negatives for the episode): {cells}"]


def build_note_lines(notes: dict | None) -> list:
    """One line per kind of what a space's build noted without leaving it out (a pair space's
    ``params["layout_notes"]``, e.g. attributes ``seen_attrs.txt`` lists that no seen pair uses,
    pairs no pair file names): count, first names, what the split makes of them.  The record of
    a space that records its items' sets (``"by_set"`` in it:
    :func:`~bayes_concepts.episodes.by_set_note`) says which items by-set splits leave out of
    their test episodes, per set."""
    lines = []
    for kind, rec in (notes or {}).items():
        if not rec.get("count"):
            continue
        shown = list(rec.get("first", []))
        if rec.get("by_set"):
            lines.append(f"by-set splits (items = 'by-set'): {rec['count']:,} items of other sets left out of their "
                         f"test episodes ({', '.join(shown)}): {rec.get('rule', '')}")
            continue
        more = ", ..." if rec["count"] > len(shown) else ""
        lines.append(f"noted by the space's build, {kind.replace('_', ' ')}: {rec['count']:,} "
                     f"({', '.join(shown)}{more}): {rec.get('rule', '')}")
    return lines


def episodes_lines(episodes: dict | None) -> list:
    """The audit's lines on episodes: the shape, the usable and excluded test concepts (count and
    first names, with the rule) and what the space's build left out."""
    if not episodes:
        return []
    sh, ex = episodes["shape"], episodes["excluded"]
    lines = [f"episodes: {sh['positives']}+{sh['negatives']} support, {sh['query_positives']}+"
             f"{sh['query_negatives']} query (positives+negatives); test concepts usable {episodes['usable']:,}, "
             f"excluded {ex['count']:,}" + (f" ({', '.join(ex['first'])}" + (", ..." if ex["count"] > len(ex["first"])
                                                                            else "") + f"): {ex['rule']}"
                                            if ex["count"] else "")]
    lines += build_exclusion_lines(episodes.get("space"))
    lines += build_note_lines(episodes.get("notes"))
    return lines


def format_audit(report: dict) -> str:
    """The audit report of :func:`audit` as one page of text (sizes, leakage, the comp-gap table,
    divergences, weak coverage, the hardest held-out concepts)."""
    st = report["stats"]
    lines = [f"audit of split {report['split']!r}",
             f"sizes: train {st['train']:,}, val {st['val']:,}, test {st['test']:,}; synonym leakage "
             f"{st['leakage']:,} held-out concepts have a synonym in train",
             f"mean length: " + ", ".join(f"{s} {v:.2f}" for s, v in st["mean_length"].items() if v is not None),
             *([] if "divergence" not in report else [
                 f"divergence (Keysers et al. 2020; train vs test, weighted by the episode distribution): atom "
                 f"{report['divergence']['atom_divergence']:.3f}, compound {report['divergence']['compound_divergence']:.3f}"]),
             *([] if "oracle_sizes" not in report else [
                 "oracles: " + ", ".join(f"{k} {report['oracle_sizes'][k]:,}" for k in ("weak", "compound", "atom",
                                                                                        "strong"))
                 + " concepts (compound: atoms and compounds all seen in train; atom: atoms all seen)"]),
             *episodes_lines(report.get("episodes")),
             "", format_table(report["gap"]), "",
             "weak coverage: share of test episodes in which some training concept fits the support: " +
             ", ".join(f"{r['negatives']} {100 * (1 - r['weak_empty_share']):.1f}%" for r in report["gap"]),
             "", "held-out concepts the weak oracle gets most wrong (hard negatives, mean AP over their episodes):",
             f"{'weak mAP':>9}{'strong mAP':>11}{'episodes':>9}  concept"]
    for w in report["worst"]:
        lines.append(f"{w['weak_map']:>9.1f}{w['strong_map']:>11.1f}{w['episodes']:>9}  {w['readable']}   [#{w['id']}]")
    return "\n".join(lines)


def exclusion_lines(ds) -> list:
    """Lines on a gap run's episodes: each split's shape and the test concepts too small for it
    (count, first names, rule), and what the space's build left out and noted (results' attributes)."""
    try:
        shapes = get_attr(ds, "episode_shape", {})
        excluded = get_attr(ds, "excluded", {})
    except ResultsError:
        return []
    lines = []
    for name, sh in shapes.items():
        ex = excluded.get(name, {}).get("too_small", {"count": 0, "first": []})
        lines.append(f"{name}: episodes {sh['positives']}+{sh['negatives']} support, {sh['query_positives']}+"
                     f"{sh['query_negatives']} query; {excluded.get(name, {}).get('usable', 0):,} usable test "
                     f"concepts, {ex['count']:,} excluded" + (f" ({', '.join(ex['first'])}"
                                                             + (", ..." if ex["count"] > len(ex["first"]) else "")
                                                             + f"): {ex['rule']}" if ex["count"] else ""))
    for name, rec in (excluded.get("not_scored") or {}).items():
        lines.append(f"{name}: not scored: {rec['reason']}")
    return lines + build_exclusion_lines(excluded.get("space")) + build_note_lines(excluded.get("space_notes"))
