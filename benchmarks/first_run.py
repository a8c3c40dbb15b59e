"""The first run's numba compilation: ``bayes-concepts demo`` with an empty kernel cache, then
again with the cache the first run wrote (the space already built by then, so the second run
also skips the build: its time is the demo's work alone).

    python benchmarks/first_run.py

Both runs use a fresh ``NUMBA_CACHE_DIR`` and space folder under a temporary directory.
Writes ``benchmarks/results/first_run.json``: the two wall times and their difference (the
compilation, plus the demo space's build of a few seconds).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import RESULTS, write_summary  # noqa: E402


def main() -> int:
    exe = Path(sys.executable).with_name("bayes-concepts")
    times = {}
    with tempfile.TemporaryDirectory(prefix="first_run_") as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(tmp) / "numba"))
        for run in ("cold", "warm"):
            t0 = time.perf_counter()
            r = subprocess.run([str(exe), "demo", "--space", f"{tmp}/space", "--out", f"{tmp}/{run}.nc",
                                "--figures", f"{tmp}/{run}_figs"], env=env, capture_output=True, text=True)
            times[run] = round(time.perf_counter() - t0, 1)
            if r.returncode:
                print(r.stderr[-2000:], file=sys.stderr)
                return 1
            announced = "compiling the numba kernels once" in r.stderr
            times[f"{run}_announced"] = announced
            print(f"{run}: {times[run]} s (announced: {announced})", flush=True)
    times["compile_and_build_s"] = round(times["cold"] - times["warm"], 1)
    write_summary(RESULTS / "first_run.json", "the first run's numba compilation (bayes-concepts demo)", times)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
