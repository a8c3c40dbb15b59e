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
import math
import mmap
import os
import re

from .errors import BayesConceptsError

__all__ = ["Scheduler", "ScaleError", "parse_scheduler", "scheduler_from", "scheduler_scope", "release_pages", "mapped_rss_budget",
           "DEFAULT_MAPPED_RSS",
           "MemoryLimitError", "available_memory", "check_memory", "format_bytes", "gap_bytes", "episodes_bytes",
           "scene_bank_bytes", "Interrupted", "safe_interrupts", "held_interrupts"]


class ScaleError(BayesConceptsError):
    """A scheduler that cannot be used (a malformed ``--scheduler``, an unreachable cluster),
    or a job that cannot run on it (e.g. an unsaved space for a cluster)."""


class MemoryLimitError(ScaleError):
    """A request whose estimated memory does not fit in what this process can allocate,
    refused before anything is allocated (:func:`check_memory`)."""


# ------------------------------------------------------------------------ memory, up front
def _meminfo_available():
    """MemAvailable of /proc/meminfo in bytes, or None (not Linux)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_available():
    """What the cgroup (v2, else v1) of this process may still allocate in bytes, or None."""
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_file) as fh:
                limit = fh.read().strip()
            if limit == "max":
                return None
            with open(usage_file) as fh:
                usage = int(fh.read().strip())
            limit = int(limit)
        except (OSError, ValueError):
            continue
        return None if limit >= 1 << 60 else max(0, limit - usage)
    return None


def _address_space_available():
    """What an address-space limit (``ulimit -v``, RLIMIT_AS) leaves to this process, or None."""
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError, AttributeError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    used = 0
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    used = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return max(0, soft - used)


def available_memory():
    """Bytes this process can still allocate: the smallest of MemAvailable (/proc/meminfo),
    what a cgroup memory limit leaves and what an address-space limit (``ulimit -v``) leaves;
    None when none of them is known (then nothing is refused)."""
    known = [v for v in (_meminfo_available(), _cgroup_available(), _address_space_available()) if v is not None]
    return min(known) if known else None


def format_bytes(n) -> str:
    """``1.5 GB``, ``320 MB``, ``4.2e+12 TB``: a byte count for a message (decimal units)."""
    n = float(n)
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            value = n / size
            return f"{value:.3g} {unit}" if value < 1e6 else f"{value:.2g} {unit}"
    return f"{n:.0f} bytes"


def check_memory(need, what: str, hint: str = "", detail: str = "", *, share: float = 0.9, available=None):
    """Raise :class:`MemoryLimitError` when ``need`` bytes (an estimate) exceed ``share`` of
    :func:`available_memory` (or of ``available`` when given): one line naming ``what`` (the
    option and value, e.g. ``--episodes 100000000``), the estimate (and ``detail``, what it
    counts) and what is available, then ``hint``.  Called before the request allocates
    anything."""
    available = available_memory() if available is None else available
    if available is None or need <= share * available:
        return
    raise MemoryLimitError(f"{what}: needs about {format_bytes(need)} of memory" + (f" ({detail})" if detail else "")
                           + f", more than the {format_bytes(available)} available" + (f"; {hint}" if hint else ""))


#: Bytes per query prediction, per metric value and per episode of :class:`Episodes` (its
#: eleven arrays: a concept id, and per support and query scene an id, a label, a source and
#: two flags), used by the estimates below.
_FLOAT, _EPISODE_SLOT = 8, 8 + 8 + 8 + 1 + 1


def episodes_bytes(n_episodes: int, n_support: int = 25, n_query: int = 25) -> int:
    """Bytes of ``n_episodes`` drawn episodes (:class:`~bayes_concepts.episodes.Episodes`),
    twice over (the sampler's arrays and the result)."""
    return 2 * int(n_episodes) * (8 + (n_support + n_query) * _EPISODE_SLOT)


def gap_bytes(n_episodes: int, n_cells: int, n_learners: int = 2, n_query: int = 25,
              keep_episodes: bool = False) -> int:
    """Bytes a comp-gap run of ``n_cells`` (split, negatives) cells of ``n_episodes`` episodes
    scored by ``n_learners`` learners (the two oracles and any others) needs, at least: the
    results Dataset (four float metrics, a flag and ``n_query`` predictions per learner and
    episode, a concept id per episode), one cell's chunks and their join (the two oracles),
    and that cell's episodes when other learners score them too."""
    n = int(n_episodes)
    per_learner = 4 * _FLOAT + 1 + n_query * _FLOAT
    results = n_cells * n * (n_learners * per_learner + 8)
    joining = 2 * n * 2 * per_learner
    return results + joining + (episodes_bytes(n) if keep_episodes else 0)


def scene_bank_bytes(n_scenes: int, slots: int, n_attributes: int, n_relations: int = 0) -> int:
    """Bytes of a scene bank of ``n_scenes`` scenes with ``slots`` object slots: the codes
    (one byte per slot and attribute), positions and relations (``slots**2`` flags per
    relation) when the schema has relations, and the evaluation's per-slot work arrays."""
    n, s = int(n_scenes), int(slots)
    per_scene = s * n_attributes + 8 * s * 4  # codes, and a few float/int per slot while evaluating
    if n_relations:
        per_scene += s * 3 * 4 + n_relations * s * s
    return n * per_scene


# ---------------------------------------------------------------------------------- Ctrl-C
class Interrupted(KeyboardInterrupt):
    """A :class:`KeyboardInterrupt` (Ctrl-C) with a message saying what the interrupted work
    left behind and how it is cleaned up (the command line prints it on one line)."""


#: Top-level packages whose Python code must not be interrupted: numba's dispatcher, compiler
#: and the callbacks its compiled code makes (an exception raised there leaves the process in a
#: state that ends in a SystemError or a segmentation fault).
_UNSAFE_PACKAGES = frozenset({"numba", "llvmlite"})
_POLL_S = 0.05


def _in_unsafe_code(frame) -> bool:
    while frame is not None:
        if frame.f_globals.get("__name__", "").partition(".")[0] in _UNSAFE_PACKAGES:
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def safe_interrupts():
    """Run a block in which Ctrl-C (SIGINT) raises :class:`KeyboardInterrupt` only where it is
    safe: never while Python code of numba or llvmlite is on the stack (then it is raised
    ``0.05`` s later, polled with SIGALRM, once that code has returned).  Outside the main
    thread, or where SIGINT is ignored (a background job), the block runs as it is."""
    import signal
    import threading
    if (threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer")
            or signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, None)):
        yield
        return
    pending, alarm = [], []

    def handler(signum, frame):
        if signum == signal.SIGINT:
            pending.append(signum)
        if not pending:
            return
        if _in_unsafe_code(frame):
            if not alarm:
                alarm.append(signal.signal(signal.SIGALRM, handler))
            signal.setitimer(signal.ITIMER_REAL, _POLL_S)
            return
        pending.clear()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, alarm[0])


@contextlib.contextmanager
def held_interrupts():
    """Run a short block that must not be cut in two (the renames that commit a save): a
    Ctrl-C (SIGINT) arriving meanwhile is delivered again, to the handler in place before, once
    the block is done."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) in (
            signal.SIG_IGN, signal.SIG_DFL, None):
        yield
        return
    got = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if got:
            signal.raise_signal(signal.SIGINT)


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


#: :func:`mapped_rss_budget` when ``BAYES_CONCEPTS_MAPPED_RSS`` is not set (bytes).
DEFAULT_MAPPED_RSS = 6 << 30


def mapped_rss_budget(text: str | None = None, default=DEFAULT_MAPPED_RSS):
    """The file-backed resident set (bytes) a process may keep of the space's files it reads
    through their mappings: ``text`` (default: the environment variable
    ``BAYES_CONCEPTS_MAPPED_RSS``) as bytes or with a K/M/G suffix (``1G``), else ``default``
    (6 GiB; None: say that none was set).  A task drops the pages it read once the process's
    file-backed resident set passes it; a budget that is *set* also decides which large row
    files are read through a mapping at all (:meth:`~bayes_concepts.engine.rows.RowFile.through_mapping`).
    A bad value is a one-line :class:`~bayes_concepts.scale.ScaleError`."""
    text = os.environ.get("BAYES_CONCEPTS_MAPPED_RSS") if text is None else text
    if text is None or not str(text).strip():
        return default
    t = str(text).strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    try:
        value = float(t[:-1] if scale > 1 else t) * scale
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise ScaleError(f"BAYES_CONCEPTS_MAPPED_RSS must be a size in bytes (or with K, M, G: 1G), got {text!r}")
    return int(value)
