"""The comp gap's cells in chunks: the oracles' results of each (split, negatives) cell,
computed chunk by chunk of episodes on a :class:`~bayes_concepts.scale.Scheduler`.

A cell's episodes are cut into ranges of at most :data:`GAP_CHUNK` episodes
(:func:`episode_chunks`); :func:`gap_chunk`, one task, draws one range exactly as the whole
cell would draw it and scores it with the split's strong and weak oracles; :func:`gap_cells`
maps the tasks on a scheduler and joins each cell's chunks back in order, so the values are
the same wherever the chunks ran.  :func:`~bayes_concepts.gap.compute_gap` is built on it.

Workers get a space by path (:class:`SpaceRef`): a cluster needs the space saved, on a file
system every worker reads (the same path on every machine).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .engine.rows import file_backed_rss
from .episodes import ARRAY_FIELDS, Episodes, sampler_for
from .oracles import Oracle, strong_and_weak
from .scale import ScaleError, Scheduler, mapped_rss_budget, release_pages
from .spaces import load_space
from .splits import side_space

__all__ = ["GAP_CHUNK", "MAPPED_RSS_BUDGET", "NESTED_ORACLES", "SpaceRef", "space_ref", "resolve_space", "episode_chunks", "draw_cell", "gap_chunk", "gap_cells"]

#: Episodes per task of :func:`~bayes_concepts.gap.compute_gap`: big enough that a task's
#: fixed costs (two oracles, one sampler call) are small, small enough that the pages of a
#: memory-mapped space one task touches stay bounded.
GAP_CHUNK = 2_500

#: A task drops the pages of the space's files it read through their mappings (signatures,
#: the sampler's rows) once the process's file-backed resident set passes this (bytes;
#: :func:`mapped_rss_budget`).  Dropping them after every task costs their page faults again
#: at the next task (the ladder on a CURI-scale space at 1,000 episodes a cell took 81 s that
#: way, 45 s keeping them; ``benchmarks/results/ladder_speed.json`` has the whole change side by
#: side); keeping them costs nothing but resident pages
#: shared with the page cache, which the kernel reclaims under memory pressure (never
#: anonymous memory).  Lower it where resident pages are counted against a quota.
#: None: read from the environment by each task.
MAPPED_RSS_BUDGET: int | None = None

#: The oracles between the weak and the strong one, scored when a gap is asked for in parts
#: (their concept sets: :func:`~bayes_concepts.divergence.nested_concepts`).
NESTED_ORACLES = ("atom", "compound")


# ---------------------------------------------------------------------------- spaces on workers
@dataclass(frozen=True)
class SpaceRef:
    """A saved space as workers find it: its directory and the sha256 of its manifest."""

    path: str
    manifest_sha256: str


#: The space this worker process last loaded from a :class:`SpaceRef` (one at a time).
_SPACES: dict = {}


def space_ref(space, scheduler: Scheduler):
    """What a task gets for ``space``: the space itself in-process, a :class:`SpaceRef` for a
    cluster (the space must be saved)."""
    if not scheduler.distributed:
        return space
    sha = space.manifest_sha256()
    if not sha:
        raise ScaleError("a Dask cluster reads the space from disk: save the space first (space.save(path)) "
                         "and give every worker the same path")
    return SpaceRef(str(os.path.abspath(space.path)), sha)


def resolve_space(ref):
    """The space a task works on: ``ref`` itself, or the space a :class:`SpaceRef` names,
    loaded once per worker process (and checked to be the same space)."""
    if not isinstance(ref, SpaceRef):
        return ref
    space = _SPACES.get(ref)
    if space is None:
        space = load_space(ref.path, verify=False)
        if space.manifest_sha256() != ref.manifest_sha256:
            raise ScaleError(f"{ref.path}: the space on this worker is not the one the job was started with "
                             f"(manifest sha256 {space.manifest_sha256()[:12]}…, expected {ref.manifest_sha256[:12]}…)")
        _SPACES.clear()  # one space per worker at a time
        _SPACES[ref] = space
    return space


# ------------------------------------------------------------------------------- the comp gap
def episode_chunks(n_episodes: int, chunk: int = GAP_CHUNK) -> list:
    """``[(lo, hi), ...]``: episode ranges of at most ``chunk`` episodes covering ``n_episodes``
    (one empty range for none)."""
    chunk = max(1, int(chunk))
    return [(lo, min(lo + chunk, n_episodes)) for lo in range(0, n_episodes, chunk)] or [(0, 0)]


def draw_cell(bank, name: str, split, n_episodes: int, negatives: str, seed: int, query_negatives, hard_mode,
              shape=None, part=None):
    """The test episodes of a (split, negatives) cell as the comp gap draws them (``part``:
    episodes lo:hi of them, drawn exactly as the whole cell would draw them): on ``bank``, the
    split's :func:`~bayes_concepts.splits.side_space` (its test-set items for a by-set split),
    with the split's episode ``shape`` (a dict of
    :class:`~bayes_concepts.episodes.EpisodeShape` fields; default 5+20 each) and the cell's
    seed.  The difficulty report redraws an audited cell with it."""
    shape = shape or {}
    return sampler_for(bank).sample(split.test, n_episodes, negatives, seed=seed, query_negatives=query_negatives,
                                    hard_mode=hard_mode, meta={"split": name, "side": "test"}, part=part,
                                    n_positive=shape.get("positives", 5), n_negative=shape.get("negatives", 20),
                                    n_query_positive=shape.get("query_positives"),
                                    n_query_negative=shape.get("query_negatives"))


def gap_chunk(task, space, splits, settings, n_episodes, query_negatives, hard_mode, keep_episodes, nested=None,
              shapes=None):
    """One task of the comp gap: episodes ``lo:hi`` of a (split, negatives) cell, drawn exactly as
    the whole cell would draw them, scored by the split's strong and weak oracles.  A by-set split
    (``items = "by-set"``) draws and scores them on its test-set items
    (:func:`bayes_concepts.splits.side_space`: support, queries, test bank and the size
    likelihood's counts there); its episodes' scene ids are then that bank's.

    task: ``(split name, negatives, cell seed, lo, hi)``; splits: name -> Split; nested: None,
    or split name -> ``{"atom": ids, "compound": ids}``
    (:func:`~bayes_concepts.divergence.nested_concepts`), to score the atom and the compound
    oracle too.  Returns ``(concept int32 (hi-lo,), {"strong": result, "weak": result[, "atom":
    result, "compound": result]}, episodes or None, topup int32 (hi-lo,))`` with each result the
    dict of :data:`bayes_concepts.learners.scoring.RESULT_KEYS` and ``topup`` each episode's
    number of hard negatives (support and query) drawn at random for want of hard ones."""
    from .learners.scoring import score_learners  # the learners package loads torch-backed models
    name, negatives, seed, lo, hi = task
    space = resolve_space(space)
    split = splits[name]
    bank = side_space(space, split, "test")  # a by-set split: the test-set items (splits.side_space)
    try:
        eps = draw_cell(bank, name, split, n_episodes, negatives, seed, query_negatives, hard_mode,
                        (shapes or {}).get(name), part=(lo, hi))
        strong, weak = strong_and_weak(bank, split, settings)
        oracles = {"strong": strong, "weak": weak}
        if nested is not None:
            oracles.update({kind: Oracle(bank, nested[name][kind], settings, kind) for kind in NESTED_ORACLES})
        results = score_learners(bank, eps, oracles)
    finally:
        budget = MAPPED_RSS_BUDGET if MAPPED_RSS_BUDGET is not None else mapped_rss_budget()
        if file_backed_rss() > budget:  # the space's files read through their mappings
            release_pages(space.signatures)
            sampler_for(bank).release_pages()
    topup = (eps.support_topup.sum(axis=1) + eps.query_topup.sum(axis=1)).astype(np.int32)
    return eps.concept, results, (eps if keep_episodes else None), topup


def _concat_episodes(parts: list) -> Episodes:
    """One :class:`~bayes_concepts.episodes.Episodes` from the chunks of one batch, in order."""
    meta = {k: v for k, v in parts[0].meta.items() if k != "part"}
    for key in ("support_topup", "query_topup"):
        meta[key] = int(sum(p.meta.get(key, 0) for p in parts))
    return Episodes(**{f: np.concatenate([getattr(p, f) for p in parts]) for f in ARRAY_FIELDS}, meta=meta)


def gap_cells(space, splits: dict, cells: list, n_episodes: int, settings, seed_of, query_negatives, hard_mode,
              keep_episodes: bool, scheduler: Scheduler, chunk: int | None = None, nested: dict | None = None,
              shapes: dict | None = None):
    """The oracles' results of every (split name, negatives) cell of ``cells``, in order.

    Each cell's ``n_episodes`` are cut into chunks of ``chunk`` (default :data:`GAP_CHUNK`)
    episodes, mapped with :func:`gap_chunk` on ``scheduler``; seed_of(name, negatives) gives a
    cell's seed; ``nested`` (split name -> atom and compound concept ids) adds the atom and the
    compound oracle.  Yields ``(name, negatives, concept int32 (n,), {"strong": result, "weak":
    result, ...}, episodes or None, topup int32 (n,))``: the same values, in the same order,
    wherever the chunks ran."""
    ranges = episode_chunks(n_episodes, chunk or GAP_CHUNK)
    tasks = [(name, neg, int(seed_of(name, neg)), lo, hi) for name, neg in cells for lo, hi in ranges]
    shared = dict(space=space_ref(space, scheduler), splits={name: splits[name] for name, _ in cells},
                  settings=settings, n_episodes=n_episodes, query_negatives=query_negatives, hard_mode=hard_mode,
                  keep_episodes=keep_episodes,
                  nested=None if nested is None else {name: nested[name] for name, _ in cells},
                  shapes=shapes)
    parts = []
    for task, part in zip(tasks, scheduler.map(gap_chunk, tasks, shared)):
        parts.append(part)
        if len(parts) == len(ranges):
            concept = np.concatenate([p[0] for p in parts])
            results = {learner: {key: np.concatenate([p[1][learner][key] for p in parts])
                                 for key in parts[0][1][learner]} for learner in parts[0][1]}
            eps = _concat_episodes([p[2] for p in parts]) if keep_episodes else None
            yield task[0], task[1], concept, results, eps, np.concatenate([p[3] for p in parts])
            parts = []
