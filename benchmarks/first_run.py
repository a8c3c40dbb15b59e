"""The first run's numba compilation: ``bayes-concepts demo`` with an empty kernel cache, then
again with the cache the first run wrote (the space already built by then, so the second run
also skips the build: its time is the demo's work alone); and the install's way: ``bayes-concepts
compile`` (what ``make venv`` runs, and what a ``pip install`` user runs once) into another empty
cache, then ``demo`` with that cache on the space already built.

    python benchmarks/first_run.py

The runs use fresh ``NUMBA_CACHE_DIR`` folders and a space folder under a temporary directory.
Writes ``benchmarks/results/first_run.json``: the wall times; ``compile_and_build_s`` (cold -
warm: the compilation, plus the demo space's build of a few seconds); ``install_compile_s`` (the
``compile`` command's time) and ``after_install_compile_s`` (demo after ``compile`` - warm: the
compilation left to the first ``demo`` after the install).
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
        # the install's way: `bayes-concepts compile` into an empty cache, then the demo
        env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(tmp) / "numba_installed"))
        for run, argv in (("install_compile", ["compile"]),
                          ("after_install", ["demo", "--space", f"{tmp}/space", "--out", f"{tmp}/installed.nc",
                                             "--figures", f"{tmp}/installed_figs"])):
            t0 = time.perf_counter()
            r = subprocess.run([str(exe), *argv], env=env, capture_output=True, text=True)
            times[run] = round(time.perf_counter() - t0, 1)
            if r.returncode:
                print(r.stderr[-2000:], file=sys.stderr)
                return 1
            times[f"{run}_announced"] = "compiling the numba kernels once" in r.stderr
            print(f"{run}: {times[run]} s", flush=True)
    times["compile_and_build_s"] = round(times["cold"] - times["warm"], 1)
    times["install_compile_s"] = times["install_compile"]
    times["after_install_compile_s"] = round(times["after_install"] - times["warm"], 1)
    write_summary(RESULTS / "first_run.json", "the first run's numba compilation (bayes-concepts demo)", times)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
