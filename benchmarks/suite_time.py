"""How long the test suite takes: ``make test``'s pytest (every test not marked ``slow``) and
``make test-all``'s (every test), each run as the Makefile runs it (``-n auto --dist loadfile
--no-loadscope-reorder``).

    python benchmarks/suite_time.py [--runs test all] [--durations FILE] [--default-threads] [--first-run]

Each run is a fresh ``python -m pytest`` in the repository root with pytest's cache off; its
wall time, the CPU time of its process tree, the tests passed, skipped and failed, and its
twenty slowest tests (setup plus call, from pytest's JUnit XML) and the seconds of each test
file (``file_seconds``: what ``tests/conftest.py`` orders the files by, longest first) are
recorded.  Numba's kernel cache is the one already on the machine: run it after ``make venv`` (which fills it) and after
one earlier run of the suite if the tests' own kernels should be counted as cached.  Writes
``benchmarks/results/suite_time.json``; ``--durations FILE`` also keeps the ``make test`` run's
pytest output (``--durations=80``).  Times on a shared machine are noisy: the load average at
the start is recorded with the machine, and each run's mean one-minute load average while it ran
(sampled every 5 s; the suite itself adds about one per worker).

``--first-run`` times ``make test`` as a fresh checkout runs it (as CI does) and then again, side
by side in one session: numba's cache is a new empty folder (``NUMBA_CACHE_DIR``) that
``bayes-concepts compile`` fills first, as ``make venv`` does; the first pytest run then also
compiles the kernels only the tests use (recorded as ``test_first_run``, with ``compile_s``, the
install's compile), the second (``test``) finds them cached.  The folder is removed afterwards.

``--default-threads`` also times ``make test`` with ``BAYES_CONCEPTS_TEST_THREADS=default`` (each
xdist worker left with the libraries' own thread counts instead of pinned to its share of the
cores, see ``tests/conftest.py``), just before the ordinary run, recorded as
``test_default_threads``: the two side by side in one session.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import RESULTS, write_summary  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: the pytest arguments of each Makefile target (after ``python -m pytest tests``)
RUNS = {"test": ["-n", "auto", "--dist", "loadfile", "--no-loadscope-reorder", "-m", "not slow"],
        "all": ["-n", "auto", "--dist", "loadfile", "--no-loadscope-reorder"]}


def _run(name: str, keep: Path | None, env: dict | None = None) -> dict:
    loads, done = [], threading.Event()

    def sample():
        while not done.wait(5.0):
            loads.append(os.getloadavg()[0])
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with tempfile.TemporaryDirectory(prefix="suite_time_") as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "tests", *RUNS[name], "-p", "no:cacheprovider", "-q",
               "--durations=80", "-o", "junit_family=xunit2", f"--junitxml={junit}"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        done.set()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if keep is not None:
            keep.write_text(r.stdout + r.stderr)
        cases = list(ET.parse(junit).iter("testcase")) if junit.exists() else []
    skipped = sum(c.find("skipped") is not None for c in cases)
    failed = sum(c.find("failure") is not None or c.find("error") is not None for c in cases)
    slowest = sorted(((float(c.get("time")), f"{c.get('classname')}::{c.get('name')}") for c in cases), reverse=True)
    by_file: dict = {}
    for c in cases:  # classname: tests.test_x (a module's tests) or tests.test_x.TestClass
        file = c.get("classname").removeprefix("tests.").split(".")[0] + ".py"
        by_file[file] = by_file.get(file, 0.0) + float(c.get("time"))
    prefix = "".join(f"{k}={v} " for k, v in (env or {}).items() if os.environ.get(k) != v)
    return {"command": prefix + "python -m pytest tests " + " ".join(RUNS[name]), "exit_status": r.returncode,
            "wall_s": round(wall, 1),
            "cpu_s": round((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), 1),
            "tests": len(cases), "passed": len(cases) - skipped - failed, "skipped": skipped, "failed": failed,
            "summed_test_s": round(sum(t for t, _ in slowest), 1),
            "load_avg_during": round(sum(loads) / len(loads), 2) if loads else None,
            "slowest": [{"test": n.removeprefix("tests."), "s": round(t, 1)} for t, n in slowest[:20]],
            "file_seconds": {k: round(v, 2) for k, v in sorted(by_file.items(), key=lambda kv: -kv[1])}}


def _cpu_model() -> str | None:
    """The processor's model name (``/proc/cpuinfo``), or None where it cannot be read."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", nargs="+", choices=sorted(RUNS), default=["test", "all"],
                    help="which targets' pytest to time (default both: test, then all)")
    ap.add_argument("--durations", type=Path, default=None,
                    help="write the make test run's pytest output (with --durations=80) to this file")
    ap.add_argument("--default-threads", action="store_true",
                    help="also time make test with each worker's threads left at the libraries' defaults "
                         "(BAYES_CONCEPTS_TEST_THREADS=default), just before the ordinary run")
    ap.add_argument("--first-run", action="store_true",
                    help="time make test's pytest with numba's cache as a fresh checkout has it (a new folder "
                         "filled by bayes-concepts compile), then again with what that run cached")
    args = ap.parse_args(argv)
    if args.default_threads and "test" not in args.runs:
        ap.error("--default-threads times make test: give --runs test (or leave --runs out)")
    if args.first_run and args.runs != ["test"]:
        ap.error("--first-run times make test twice: give --runs test")
    old = RESULTS / "suite_time.json"
    figures = {}
    if old.exists():  # a run of one target keeps the other's committed figures
        import json
        test_only = ("test_default_threads", "test_first_run")  # made by a run of make test
        figures = {k: v for k, v in json.loads(old.read_text())["figures"].items()
                   if k not in args.runs and not (k in test_only and "test" in args.runs)}
    # the ordinary runs as make runs them: each worker pinned to its share of the cores
    ordinary = {k: v for k, v in os.environ.items() if k != "BAYES_CONCEPTS_TEST_THREADS"}
    cache = None
    if args.first_run:  # a fresh checkout's cache: empty, then filled by compile as make venv fills it
        import shutil
        cache = Path(tempfile.mkdtemp(prefix="suite_time_numba_"))
        ordinary["NUMBA_CACHE_DIR"] = str(cache)
        t0 = time.perf_counter()
        done = subprocess.run([str(Path(sys.executable).with_name("bayes-concepts")), "compile"], env=ordinary,
                              capture_output=True, text=True)
        compile_s = round(time.perf_counter() - t0, 1)
        if done.returncode:
            print(done.stderr[-2000:], file=sys.stderr)
            shutil.rmtree(cache, ignore_errors=True)
            return 1
        print(f"bayes-concepts compile into an empty cache: {compile_s} s", flush=True)
    todo = [(name, name, ordinary) for name in args.runs]
    if args.first_run:
        todo.insert(0, ("test_first_run", "test", ordinary))
    if args.default_threads:
        todo.insert(args.runs.index("test"), ("test_default_threads", "test",
                                              dict(os.environ, BAYES_CONCEPTS_TEST_THREADS="default")))
    for key, name, env in todo:
        figures[key] = _run(name, args.durations if key == "test" else None, env)
        f = figures[key]
        print(f"{key}: {f['wall_s']} s wall, {f['cpu_s']} s CPU, {f['summed_test_s']} s summed over tests, "
              f"{f['passed']} passed, {f['skipped']} skipped, {f['failed']} failed, load {f['load_avg_during']}",
              flush=True)
        if f["exit_status"]:
            print(f"pytest exited {f['exit_status']}: the figures are recorded, and the run is not a clean one",
                  file=sys.stderr)
    if cache is not None:
        figures["test_first_run"]["compile_s"] = compile_s
        shutil.rmtree(cache, ignore_errors=True)
    write_summary(RESULTS / "suite_time.json", "the test suite's pytest: make test and make test-all", figures,
                  cpu_model=_cpu_model())
    return 0 if all(f["exit_status"] == 0 for f in figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
