"""How long a ``bayes-concepts`` process takes to end once its work is done: Python's shutdown,
with everything alive frozen at exit (:func:`bayes_concepts.collector.freeze_at_exit`, what the
command does) and without (the same command with that exit handler replaced by one that does
nothing), side by side in one run.

    python benchmarks/exit_time.py [--runs 3] [--work DIR]

Each case is a fresh process that first registers an exit handler of its own (so it runs last,
after the command's) writing the time, then runs the command as ``bayes-concepts`` does
(:func:`bayes_concepts.cli.run`); *exit* is the time from that handler to the end of the process
(the interpreter's shutdown), *total* the whole process.  Cases: ``space build`` of the small
space (20,000 samples, 5,000 scenes), ``gap`` and ``audit`` on it, and a small ``clevr`` preset
build (300 samples, 1,500 scenes: about a million objects alive at exit).  Medians of ``--runs``
runs, interleaved.  Writes ``benchmarks/results/exit_time.json``.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import RESULTS, write_summary  # noqa: E402

#: the process: ``python -c RUNNER MARK_FILE FREEZE(0/1) ARGV...``
RUNNER = """
import atexit, sys, time
mark, freeze = sys.argv[1], sys.argv[2] == "1"
atexit.register(lambda: open(mark, "w").write(repr(time.time())))   # registered first: runs last
if not freeze:
    import bayes_concepts.collector as collector
    collector.freeze_at_exit = lambda: None
from bayes_concepts.cli import run
sys.argv = ["bayes-concepts", *sys.argv[3:]]
sys.exit(run())
"""

CASES = {
    "space build (small: 20,000 samples, 5,000 scenes)":
        ["space", "build", "small", "--samples", "20000", "--scenes", "5000", "--quiet", "--force"],
    "gap (small space, 2 splits, 100 episodes)":
        ["gap", "small", "--split", "counting", "concept_iid", "--episodes", "100", "--out", "r.nc", "--force"],
    "audit (small space, 100 episodes)": ["audit", "small", "--episodes", "100", "--report", "audit.md"],
    "space build --preset clevr (300 samples, 1,500 scenes)":
        ["space", "build", "clevr", "--preset", "clevr", "--samples", "300", "--scenes", "1500", "--quiet",
         "--force"],
}


def _once(argv, freeze: bool, work: Path) -> tuple:
    mark = work / "mark"
    mark.unlink(missing_ok=True)
    t0 = time.time()
    r = subprocess.run([sys.executable, "-c", RUNNER, str(mark), "1" if freeze else "0", *argv], cwd=work,
                       capture_output=True, text=True)
    end = time.time()
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr[-1000:]}")
    return end - t0, end - float(mark.read_text())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="runs of each case and setting (default 3; medians)")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one)")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    with tempfile.TemporaryDirectory(prefix="exit_time_") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        # the small space first (gap and audit read it), built once, untimed
        subprocess.run([sys.executable, "-m", "bayes_concepts.cli", *CASES[next(iter(CASES))]], cwd=work,
                       check=True, capture_output=True)
        figures = {}
        for name, case in CASES.items():
            runs = {"frozen": [], "not_frozen": []}
            for _ in range(args.runs):
                for key, freeze in (("not_frozen", False), ("frozen", True)):
                    runs[key].append(_once(case, freeze, work))
            figures[name] = {key: {"total_s": round(statistics.median(t for t, _ in rs), 3),
                                   "exit_s": round(statistics.median(e for _, e in rs), 3)}
                             for key, rs in runs.items()}
            f = figures[name]
            print(f"{name}: exit {f['not_frozen']['exit_s']} -> {f['frozen']['exit_s']} s, "
                  f"total {f['not_frozen']['total_s']} -> {f['frozen']['total_s']} s", flush=True)
    write_summary(RESULTS / "exit_time.json", "a command's exit: Python's shutdown with and without "
                  "everything frozen at exit", figures, runs=args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
