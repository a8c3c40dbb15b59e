"""Scale-out: one code path that maps a pure function over chunks, in this
process or on a Dask cluster.

A :class:`Scheduler` says where chunk tasks run:

* ``None`` (the default): in this process, one chunk after the other;
* ``"local:N"``: a ``distributed.LocalCluster`` of ``N`` worker processes (one thread each;
  each task's numba kernels get ``cores // N`` threads) started for the job and closed after it;
* an address (``"tcp://10.0.0.5:8786"``, ``"10.0.0.5:8786"``): a running cluster (``dask
  scheduler`` + ``dask worker`` on any number of machines) that the job joins.

:meth:`Scheduler.map` yields ``fn(chunk, **shared)`` for every chunk **in chunk order**,
whatever order the workers finish in, with at most ``window`` chunks submitted but not yet
yielded (memory stays bounded however many chunks there are).  The functions mapped are
pure and their kernels give the same numbers for any number of threads, so a job gives
identical results in-process and on a cluster of any size.  The build maps its executor
over scene chunks (:mod:`bayes_concepts.engine.chunked`), :func:`~bayes_concepts.gap.compute_gap`
maps the oracles over episode chunks (:func:`gap_chunk`).

>>> with Scheduler("local:2") as sched:                       # doctest: +SKIP
...     totals = list(sched.map(np.sum, [np.arange(3), np.arange(5)]))

Workers get a space by path (:class:`SpaceRef`): a cluster needs the space saved, on a file
system every worker reads (the same path on every machine).
"""
from __future__ import annotations

import contextlib
import mmap
import os
import re
from dataclasses import dataclass

import numpy as np

from .errors import BayesConceptsError

__all__ = ["Scheduler", "ScaleError", "SpaceRef", "parse_scheduler", "scheduler_from", "scheduler_scope", "release_pages",
           "gap_chunk", "gap_cells", "episode_chunks", "GAP_CHUNK"]

#: Episodes per task of :func:`~bayes_concepts.gap.compute_gap`: big enough that a task's
#: fixed costs (two oracles, one sampler call) are small, small enough that the pages of a
#: memory-mapped space one task touches stay bounded.
GAP_CHUNK = 2_500


class ScaleError(BayesConceptsError):
    """A scheduler that cannot be used (a malformed ``--scheduler``, an unreachable cluster,
    an unsaved space for a cluster)."""


_ADDRESS = re.compile(r"^(?:(tcp|tls|inproc|ucx|ws|wss)://)?[A-Za-z0-9_.\-\[\]:]+:\d+$")


def parse_scheduler(spec) -> tuple:
    """``(kind, value)`` of a scheduler spec: ``("process", None)`` for None/``""``/
    ``"process"``, ``("local", N)`` for ``"local:N"`` (N >= 1), ``("address", spec)`` for a
    scheduler address (``[protocol://]host:port``).  Anything else is a :class:`ScaleError`."""
    if spec is None or spec in ("", "process", "none"):
        return "process", None
    if not isinstance(spec, str):
        raise ScaleError(f"scheduler: expected None, 'local:N' or a scheduler address, got {spec!r}")
    if spec.startswith("local"):
        m = re.fullmatch(r"local:(\d+)", spec)
        if not m or int(m.group(1)) < 1:
            raise ScaleError(f"scheduler {spec!r}: expected local:N with N >= 1 worker processes (e.g. local:2)")
        return "local", int(m.group(1))
    if not _ADDRESS.match(spec):
        raise ScaleError(f"scheduler {spec!r}: expected local:N or a Dask scheduler address such as "
                         "tcp://host:8786")
    return "address", spec


def _set_threads(threads):
    """Use ``threads`` numba threads in this process (None: leave as is)."""
    if threads:
        import numba
        numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))


def _run_task(fn, chunk, threads, kwargs):
    """What a worker runs: ``fn(chunk, **kwargs)`` with ``threads`` numba threads."""
    _set_threads(threads)
    return fn(chunk, **kwargs)


class Scheduler:
    """Where chunk tasks run; a context manager (a LocalCluster it starts is closed on exit).

    Parameters
    ----------
    spec : None, str or Scheduler
        None (this process), ``"local:N"`` (a LocalCluster of N processes) or a scheduler
        address; a Scheduler is used as it is.
    window : int or None
        Chunks submitted but not yet yielded, at most (default: twice the workers' threads).
    """

    def __init__(self, spec=None, window: int | None = None):
        self.spec = spec
        self.kind, self.value = parse_scheduler(spec)
        self.window = window
        self.client = None
        self._cluster = None
        self.threads_per_task = None

    @property
    def distributed(self) -> bool:
        return self.kind != "process"

    def __enter__(self) -> "Scheduler":
        if self.kind == "process" or self.client is not None:
            return self
        import logging
        from distributed import Client, LocalCluster
        try:
            if self.kind == "local":
                n = self.value
                self._cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                             dashboard_address=":0", silence_logs=logging.ERROR,
                                             memory_limit=0)
                self.client = Client(self._cluster)
                self.threads_per_task = max(1, (os.cpu_count() or 1) // n)
            else:
                self.client = Client(self.value, timeout="30s")
        except (OSError, TimeoutError) as exc:
            self.close()
            raise ScaleError(f"scheduler {self.spec!r}: cannot start or reach the cluster ({exc})") from None
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.client is not None:
            self.client.close()
            self.client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def n_workers(self) -> int:
        if self.client is None:
            return 1
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def _window(self) -> int:
        if self.window:
            return int(self.window)
        if self.client is None:
            return 1
        threads = sum(w.get("nthreads", 1) for w in self.client.scheduler_info().get("workers", {}).values())
        return max(2, 2 * threads)

    def map(self, fn, chunks, shared: dict | None = None):
        """Yield ``fn(chunk, **shared)`` for each of ``chunks``, in chunk order.

        fn: a module-level function (workers import it); chunks: an iterable of picklable
        descriptions of the work (index ranges, a block of rows), drawn as tasks are submitted;
        shared: keyword arguments every task gets (sent to each worker once).  An exception in
        a task is raised here.
        """
        shared = dict(shared or {})
        if self.client is None:
            for chunk in chunks:
                yield fn(chunk, **shared)
            return
        import uuid
        from collections import deque
        client = self.client
        big = {k: v for k, v in shared.items() if not isinstance(v, (int, float, str, bool, type(None)))}
        if big:  # sent to every worker once, not with every task
            scattered = client.scatter(list(big.values()), broadcast=True, hash=False)
            shared.update(zip(big, scattered))
        window = self._window()
        prefix = f"{getattr(fn, '__name__', 'task')}-{uuid.uuid4().hex[:12]}"
        todo = enumerate(chunks)  # drawn lazily: only ``window`` chunks exist at a time
        pending = deque()

        def submit_next() -> bool:
            item = next(todo, None)
            if item is None:
                return False
            i, chunk = item
            pending.append(client.submit(_run_task, fn, chunk, self.threads_per_task, shared, pure=False,
                                         key=f"{prefix}-{i}"))
            return True

        try:
            while len(pending) < window and submit_next():
                pass
            while pending:
                future = pending.popleft()
                result = future.result()
                future.release()
                submit_next()
                yield result
        finally:
            if pending:
                client.cancel(list(pending))


def scheduler_from(spec) -> Scheduler:
    """A :class:`Scheduler` for ``spec`` (a Scheduler is returned as it is)."""
    return spec if isinstance(spec, Scheduler) else Scheduler(spec)


@contextlib.contextmanager
def scheduler_scope(spec):
    """A started :class:`Scheduler` for ``spec``; one this scope started is closed at its end
    (a Scheduler passed in is used and left open)."""
    if isinstance(spec, Scheduler):
        yield spec.__enter__()
        return
    with Scheduler(spec) as sched:
        yield sched


# ---------------------------------------------------------------------------- spaces on workers
@dataclass(frozen=True)
class SpaceRef:
    """A saved space as workers find it: its directory and the sha256 of its manifest."""

    path: str
    manifest_sha256: str


_SPACES: dict = {}


def space_ref(space, scheduler: Scheduler):
    """What a task gets for ``space``: the space itself in-process, a :class:`SpaceRef` for a
    cluster (the space must be saved)."""
    if not scheduler.distributed:
        return space
    sha = space.manifest_sha256() if hasattr(space, "manifest_sha256") else None
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
        from .engine.store import load_space
        space = load_space(ref.path, verify=False)
        if space.manifest_sha256() != ref.manifest_sha256:
            raise ScaleError(f"{ref.path}: the space on this worker is not the one the job was started with "
                             f"(manifest sha256 {space.manifest_sha256()[:12]}…, expected {ref.manifest_sha256[:12]}…)")
        _SPACES.clear()  # one space per worker at a time
        _SPACES[ref] = space
    return space


def _mmaps(arrays):
    """The distinct ``mmap.mmap`` objects behind memory-mapped ``arrays`` (None and in-memory
    arrays are skipped)."""
    seen = set()
    for a in arrays:
        base = a
        while base is not None and not isinstance(base, mmap.mmap):
            base = getattr(base, "_mmap", None) or getattr(base, "base", None)
        if isinstance(base, mmap.mmap) and id(base) not in seen:
            seen.add(id(base))
            yield base


def _advise(arrays, advice):
    if advice is None:
        return
    for m in _mmaps(arrays):
        try:
            m.madvise(advice)
        except (OSError, ValueError):
            pass


def release_pages(*arrays):
    """Drop the pages of memory-mapped ``arrays`` from this process's resident set (the file
    stays in the page cache); a no-op for arrays in memory.  Called after each chunk task so
    that a task's random reads of a large space do not add up in the worker's RSS."""
    _advise(arrays, getattr(mmap, "MADV_DONTNEED", None))


# ------------------------------------------------------------------------------- the comp gap
def episode_chunks(n_episodes: int, chunk: int = GAP_CHUNK) -> list:
    """``[(lo, hi), ...]``: episode ranges of at most ``chunk`` episodes covering ``n_episodes``
    (one empty range for none)."""
    chunk = max(1, int(chunk))
    return [(lo, min(lo + chunk, n_episodes)) for lo in range(0, n_episodes, chunk)] or [(0, 0)]


def gap_chunk(task, space, splits, settings, n_episodes, query_negatives, hard_mode, keep_episodes):
    """One task of the comp gap: episodes ``lo:hi`` of a (split, negatives) cell, drawn exactly as
    the whole cell would draw them, scored by the split's strong and weak oracles.

    task: ``(split name, negatives, cell seed, lo, hi)``; splits: name -> Split.  Returns
    ``(concept int32 (hi-lo,), {"strong": result, "weak": result}, episodes or None)`` with each
    result the dict of :data:`bayes_concepts.learners.scoring.RESULT_KEYS`."""
    from .episodes import sampler_for
    from .learners.scoring import score_learners
    from .oracles import strong_and_weak
    name, negatives, seed, lo, hi = task
    space = resolve_space(space)
    split = splits[name]
    sampler = sampler_for(space)
    try:
        eps = sampler.sample(split.test, n_episodes, negatives, seed=seed, query_negatives=query_negatives,
                             hard_mode=hard_mode, meta={"split": name, "side": "test"}, part=(lo, hi))
        strong, weak = strong_and_weak(space, split, settings)
        results = score_learners(space, eps, {"strong": strong, "weak": weak})
    finally:
        release_pages(space.signatures)
    return eps.concept, results, (eps if keep_episodes else None)


def _concat_episodes(parts: list):
    """One :class:`~bayes_concepts.episodes.Episodes` from the chunks of one batch, in order."""
    from .episodes import ARRAY_FIELDS, Episodes
    meta = {k: v for k, v in parts[0].meta.items() if k != "part"}
    for key in ("support_topup", "query_topup"):
        meta[key] = int(sum(p.meta.get(key, 0) for p in parts))
    return Episodes(**{f: np.concatenate([getattr(p, f) for p in parts]) for f in ARRAY_FIELDS}, meta=meta)


def gap_cells(space, splits: dict, cells: list, n_episodes: int, settings, seed_of, query_negatives, hard_mode,
              keep_episodes: bool, scheduler: Scheduler, chunk: int | None = None):
    """The oracles' results of every (split name, negatives) cell of ``cells``, in order.

    Each cell's ``n_episodes`` are cut into chunks of ``chunk`` (default :data:`GAP_CHUNK`)
    episodes, mapped with :func:`gap_chunk` on ``scheduler``; seed_of(name, negatives) gives a
    cell's seed.  Yields ``(name, negatives, concept int32 (n,), {"strong": result, "weak":
    result}, episodes or None)``: the same values, in the same order, wherever the chunks ran."""
    ranges = episode_chunks(n_episodes, chunk or GAP_CHUNK)
    tasks = [(name, neg, int(seed_of(name, neg)), lo, hi) for name, neg in cells for lo, hi in ranges]
    shared = dict(space=space_ref(space, scheduler), splits={name: splits[name] for name, _ in cells},
                  settings=settings, n_episodes=n_episodes, query_negatives=query_negatives, hard_mode=hard_mode,
                  keep_episodes=keep_episodes)
    parts = []
    for task, part in zip(tasks, scheduler.map(gap_chunk, tasks, shared)):
        parts.append(part)
        if len(parts) == len(ranges):
            concept = np.concatenate([p[0] for p in parts])
            results = {learner: {key: np.concatenate([p[1][learner][key] for p in parts])
                                 for key in parts[0][1][learner]} for learner in parts[0][1]}
            eps = _concat_episodes([p[2] for p in parts]) if keep_episodes else None
            yield task[0], task[1], concept, results, eps
            parts = []
