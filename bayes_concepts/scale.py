"""The scheduler: one code path that maps a pure function over chunks, in this process or
on a Dask cluster.

A :class:`Scheduler` says where chunk tasks run:

* ``None`` (the default): in this process, one chunk after the other;
* ``"local:N"``: a ``distributed.LocalCluster`` of ``N`` worker processes (one thread each;
  each task's numba kernels get ``cores // N`` threads) started for the job and closed after it;
* an address (``"tcp://10.0.0.5:8786"``, ``"10.0.0.5:8786"``): a running cluster (``dask
  scheduler`` + ``dask worker`` on any number of machines) that the job joins.

:meth:`Scheduler.map` yields ``fn(chunk, **shared)`` for every chunk **in chunk order**,
whatever order the workers finish in, with at most ``window`` chunks submitted but not yet
yielded (memory stays bounded however many chunks there are).  When the functions mapped are
pure and their kernels give the same numbers for any number of threads, a job gives
identical results in-process and on a cluster of any size.

>>> with Scheduler("local:2") as sched:                       # doctest: +SKIP
...     totals = list(sched.map(np.sum, [np.arange(3), np.arange(5)]))

:func:`release_pages` drops the pages of memory-mapped arrays a task has read from the
process's resident set (tasks call it after each chunk).
"""
from __future__ import annotations

import contextlib
import mmap
import os
import re

from .errors import BayesConceptsError

__all__ = ["Scheduler", "ScaleError", "parse_scheduler", "scheduler_from", "scheduler_scope", "release_pages"]


class ScaleError(BayesConceptsError):
    """A scheduler that cannot be used (a malformed ``--scheduler``, an unreachable cluster),
    or a job that cannot run on it (e.g. an unsaved space for a cluster)."""


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
