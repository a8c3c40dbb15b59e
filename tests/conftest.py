"""Fixtures shared by the test modules: one small hypothesis space per test session.

``small_space`` is built once (20,000 program samples, 5,000 scenes, seed 0) and shared
by every module whose tests hold for any small space.  A module whose assertions depend on
a particular build (its size, seed or ``min_count``) builds its own space and says why.

``clevr_space`` is its relational twin: one small ``clevr`` preset space (2,000 program
samples plus CLOSURE's families, 3,000 scenes with positions and relations, seed 0), built
once and shared by the modules whose tests hold for any small clevr space
(``test_relational``, ``test_relational_space``, ``test_relational_downstream``,
``test_plots``).  Its first build in a process costs ~15-20 s (CLOSURE's and CLEVR's template programs are
parsed and scored, then cached), so one build serves them all: under pytest-xdist worker gw0 starts
building and saving it in a process of its own as the session starts, and every worker reads that
copy when it first needs it (``built_once``; without xdist the first test to need it builds it).

The shared spaces are read by many modules: a test must not modify them (their arrays,
``params`` or ``path``).  To test saving, save a copy made with
``dataclasses.replace(small_space)`` -- saving sets the saved object's ``path``.

Threads: under pytest-xdist (``make test``: one worker per core) each worker runs on its own share
of the cores, ``cores // workers`` of them (:data:`WORKER_THREADS`).  numba's and torch's thread
pools (both OpenMP here, which spins while it waits) size themselves to every core, and training
sets torch to every core it may run on, so two workers would run twice as many busy threads as
there are cores, each parallel loop waiting for a thread the other worker holds: torch's training
loops ran 2-7x slower that way.  So each worker is pinned to its share of the cores
(``os.sched_setaffinity``, which the processes it starts -- commands, notebook kernels --
inherit, and which numba, torch and the trainer read), after numba has sized its pool from every
core: the tests that vary numba's threads still get two (:func:`pytest_configure`), everything
else runs on one.  ``OMP_NUM_THREADS`` (torch, BLAS) is set too, before anything loads them.
Kernels give the same numbers for any number of threads.  A run without xdist, or with
``BAYES_CONCEPTS_TEST_THREADS=default`` (to time the suite against the libraries' own defaults),
limits nothing.
"""
from __future__ import annotations

import os
import sys


def worker_threads() -> int | None:
    """Each pytest-xdist worker's share of this process's cores (at least 1), or None outside
    xdist or when ``BAYES_CONCEPTS_TEST_THREADS=default`` (nothing is limited: the libraries'
    own defaults, for timing the suite against them; ``share``, the default, limits)."""
    how = os.environ.get("BAYES_CONCEPTS_TEST_THREADS", "share")
    if how not in ("share", "default"):
        raise SystemExit(f"error: BAYES_CONCEPTS_TEST_THREADS={how!r}: expected share or default")
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers or how == "default":
        return None
    return max(1, len(_cores()) // max(1, int(workers)))


def _cores() -> list:
    """The cores this process may run on, in order."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))


#: this worker's share of the cores (None: not limited), fixed before the worker is pinned
WORKER_THREADS = worker_threads()
if WORKER_THREADS is not None:  # before numpy, torch or numba are imported (they read it once)
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, str(WORKER_THREADS))

import dataclasses  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import pytest  # noqa: E402

from bayes_concepts.cli import main  # noqa: E402
from bayes_concepts.collector import collect_less  # noqa: E402
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace  # noqa: E402


def pytest_configure(config):
    """The test modules' assertion rewriting kept (pytest's ``.pyc`` in ``tests/__pycache__``, not
    in git) also where ``PYTHONDONTWRITEBYTECODE`` is set: rewriting every module again was half of
    each worker's collection (11.3 s, 4.8 s once kept).  Only this process: the commands, kernels
    and scripts the tests start see the variable as it was.

    Under pytest-xdist: this worker's numba threads limited to its share of the cores, then the
    worker (and every process it starts) pinned to its own cores -- numba first, so that its pool
    is sized from every core and a test may still ask for more threads than its share."""
    sys.dont_write_bytecode = False
    if WORKER_THREADS is None:
        return
    import numba
    numba.set_num_threads(min(WORKER_THREADS, numba.config.NUMBA_NUM_THREADS))
    if hasattr(os, "sched_setaffinity"):
        cores, index = _cores(), int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
        first = (index * WORKER_THREADS) % len(cores)
        os.sched_setaffinity(0, cores[first:first + WORKER_THREADS])


#: where each test file's measured seconds are (``figures.test.file_seconds``, written by
#: ``benchmarks/suite_time.py``)
SUITE_TIME = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "suite_time.json"


def file_seconds() -> dict:
    """``{"test_x.py": seconds}`` of the last measured ``make test`` run ({} where there is none)."""
    import json
    try:
        return dict(json.loads(SUITE_TIME.read_text())["figures"]["test"]["file_seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, the test files longest first (their seconds in the last measured run,
    :func:`file_seconds`; a file not measured yet before them all, the most tests first), each
    file's tests in their own order.  ``--dist loadfile`` hands a worker a whole file at a time in
    this order (the Makefile turns off xdist's own, most tests first, which left the few long
    files -- notebooks, examples, the toy suite -- for last, and a worker idle while another ran
    them).  Outside xdist the order is left alone."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # the workers collect; xdist schedules their order
        return
    seconds = file_seconds()
    files: dict = {}
    for item in items:
        files.setdefault(item.path.name, []).append(item)
    unmeasured = sorted((f for f in files if f not in seconds), key=lambda f: -len(files[f]))
    measured = sorted((f for f in files if f in seconds), key=lambda f: -seconds[f])
    items[:] = [item for f in unmeasured + measured for item in files[f]]


def pytest_collection_finish(session):
    """Each test process collects garbage as the ``bayes-concepts`` command does
    (:func:`~bayes_concepts.collector.collect_less`): the collected tests and the imports frozen out of
    the collector's reach, the youngest generation collected every 50,000 allocations.  The tests
    build thousands of long-lived syntax trees, spaces and datasets; Python's default (every 700)
    walked them again and again: ~10 % of the in-process tests' time.  Reference counting still
    frees everything at once, and the collector still runs."""
    collect_less()


SMALL_BUILD = dict(samples=20_000, scenes=5_000, seed=0)
#: the shared clevr space: the size test_relational_downstream was written for (its sampled
#: programs beside CLOSURE's ~1,600 concepts); the other modules need only *a* clevr space
CLEVR_BUILD = dict(samples=2_000, scenes=3_000, seed=0)


@pytest.fixture(autouse=True)
def _shared_spaces_left_unsaved(request):
    """After each test: the shared spaces it used are still unsaved (``path`` None).  A test that
    saved one itself (not a ``dataclasses.replace`` copy) would hand every later test -- in
    whatever order the files run -- a space with a folder behind it."""
    yield
    for name in ("small_space", "clevr_space"):
        if name in request.fixturenames and request.getfixturevalue(name).path is not None:
            pytest.fail(f"{request.node.nodeid} saved the shared {name} (save dataclasses.replace({name}))",
                        pytrace=False)


@pytest.fixture(scope="session")
def small_space() -> HypothesisSpace:
    """The shared in-memory space (never saved: its ``path`` stays None)."""
    return HypothesisSpace.build(**SMALL_BUILD)


@pytest.fixture(scope="session")
def small_space_dir(small_space, tmp_path_factory):
    """A saved copy of ``small_space`` (a directory, for the CLI, scripts and notebooks).

    The copy is saved rather than ``small_space`` itself so that ``small_space.path``
    stays None whichever fixtures a run happens to use.  Do not write into it.
    """
    return saved_copy(small_space, tmp_path_factory, "small_space")


@pytest.fixture(scope="session")
def clevr_space(tmp_path_factory) -> HypothesisSpace:
    """The shared in-memory clevr space (its ``path`` is None).  Built once per test run: under
    pytest-xdist the first worker to ask builds and saves it (:func:`built_once`), the others
    read that copy."""
    space, _ = built_once(tmp_path_factory, "clevr_space", lambda: HypothesisSpace.build("clevr", **CLEVR_BUILD))
    return space


@pytest.fixture(scope="session")
def clevr_space_dir(clevr_space, tmp_path_factory):
    """A saved copy of ``clevr_space`` (positions and packed relations included).  Do not
    write into it: copy it first (``shutil.copytree``) to damage or extend it."""
    return shared_folder(tmp_path_factory, "clevr_space") / "space"  # clevr_space saved it there


#: the background build of the shared clevr space: ``python -c BUILD_CLEVR TESTS_FOLDER SHARED_FOLDER``
BUILD_CLEVR = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from conftest import CLEVR_BUILD, build_into
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.collector import collect_less
collect_less()
build_into(Path(sys.argv[2]), lambda: HypothesisSpace.build("clevr", **CLEVR_BUILD))
"""


@pytest.fixture(scope="session", autouse=True)
def _clevr_space_built_beside_the_first_tests(request, tmp_path_factory):
    """Under pytest-xdist, worker gw0 starts building the shared clevr space (:func:`clevr_space`)
    in a process of its own as the session starts, beside its first tests, when some test of the
    run uses it.  Built in line instead, by the first worker to ask, the other worker sat idle
    waiting for it if it asked during the build (~15 s each run).  The space is the one
    ``built_once`` would build (the same call); whoever asks first waits on the same lock."""
    import subprocess
    import sys
    if os.environ.get("PYTEST_XDIST_WORKER") != "gw0" or \
            not any("clevr_space" in getattr(item, "fixturenames", ()) for item in request.session.items):
        yield
        return
    folder = shared_folder(tmp_path_factory, "clevr_space")
    log = folder / "background_build.log"
    with open(log, "w") as out:  # a file, not a pipe nobody reads until the end
        build = subprocess.Popen([sys.executable, "-c", BUILD_CLEVR, str(Path(__file__).parent), str(folder)],
                                 stdout=out, stderr=subprocess.STDOUT)
    yield
    if build.poll() is None:
        build.kill()
    build.wait()
    assert build.returncode in (0, -9), f"the shared clevr space's background build failed: {log.read_text()[-2000:]}"


def built_once(tmp_path_factory, name: str, build) -> tuple:
    """``(space, saved folder)``: the space ``build()`` returns, built once per test run and saved
    into ``name/space`` of the run's temporary folder; under pytest-xdist that folder is shared by
    the workers (:func:`build_into`: one builds while the others wait, then read its copy).  The
    space returned is in memory either way (``path`` None, arrays read into memory), so a test
    sees the same space whichever process built it."""
    folder = shared_folder(tmp_path_factory, name)
    space = build_into(folder, build)
    if space is None:
        loaded = HypothesisSpace.load(folder / "space")
        arrays = {f.name: np.array(getattr(loaded, f.name)) for f in dataclasses.fields(loaded)
                  if isinstance(getattr(loaded, f.name), np.ndarray)}
        space = dataclasses.replace(loaded, path=None, **arrays)
    return space, folder / "space"


def build_into(folder: Path, build):
    """Under ``folder/lock``: unless ``folder/space`` holds a saved space, ``build()`` and save it
    there, returning the space built; None when it was there (saved by another process)."""
    import fcntl
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "space" / "manifest.json").exists():
            return None
        space = build()
        dataclasses.replace(space).save(folder / "space")
        return space


def shared_folder(tmp_path_factory, name: str) -> Path:
    """The folder ``name`` of this test run's temporary folder, shared by pytest-xdist's workers
    (made if missing)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, above each worker's own
    folder = root / name
    folder.mkdir(exist_ok=True)
    return folder


#: the domain argument of the oracles' test-bank kernels as the oracles pass it for a target with no
#: question domain (an empty array); tests of those kernels pass it, and the labels read-only
#: (``bits.read_only``), so they run -- and load from numba's cache -- the compiled code the oracles
#: run (numba compiles a kernel once per type of its arguments)
EVERYWHERE = np.zeros(0, np.uint64)


def saved_copy(space, tmp_path_factory, name: str):
    """A copy of ``space`` saved into a new temporary folder ``name``: its ``space`` subfolder
    (the space itself keeps its ``path``)."""
    path = tmp_path_factory.mktemp(name) / "space"
    dataclasses.replace(space).save(path)
    return path


def run(argv, capsys) -> tuple:
    """``(status, stdout, stderr)`` of the CLI run in-process (a usage error exits)."""
    try:
        status = main([str(a) for a in argv])
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def assert_one_line_error(status, err, *needles):
    assert status == 2, err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "error" in err and "Traceback" not in err
    for needle in needles:
        assert needle in err, (needle, err)


#: hxm97's published layout of MIT-States, cut to a fixture (tests/fixtures/pairs_hxm97)
HXM97_PAIRS = Path(__file__).resolve().parent / "fixtures" / "pairs_hxm97" / "mitstates_pair_split"


def czsl_pairs(tmp_path) -> Path:
    """The hxm97 fixture's pairs in CZSL's own layout (train/val/test_pairs.txt): 6 train, 2
    val-only, 4 test pairs (7 test concepts of the unseen-pairs split with the novel atoms new,
    shiny and boat)."""
    d = tmp_path / "czsl"
    d.mkdir()
    (d / "train_pairs.txt").write_text((HXM97_PAIRS / "seen_pairs.txt").read_text())
    (d / "val_pairs.txt").write_text("wet car\ndry fish\n")
    (d / "test_pairs.txt").write_text("dry cat\nold dog\nshiny boat\nnew dog\n")
    return d


class TrainingClock:
    """A stand-in for :mod:`time` in the training loop: scoring takes ``per_episode`` seconds an
    episode (plus ``per_validation`` a call), a step ``step`` seconds; nothing else takes time,
    so a budget rule is checked exactly, whatever else the machine is doing."""

    def __init__(self, learner, step: float, per_episode: float = 0.0, per_validation: float = 0.0):
        self.t = 1000.0
        evaluate, loss = learner.evaluate, learner.episode_loss

        def timed_evaluate(episodes, *a, **k):
            self.t += per_validation + per_episode * len(episodes)
            return evaluate(episodes, *a, **k)

        def timed_loss(*a, **k):
            self.t += step
            return loss(*a, **k)
        learner.evaluate, learner.episode_loss = timed_evaluate, timed_loss

    def perf_counter(self):
        return self.t
