"""Hypothesis-space build benchmark (issue 3): stage-by-stage wall time and peak memory.

Each preset is built in its own subprocess so that its peak RSS is its own.  A
sampling thread reads the process's resident set size every 20 ms and charges
it to the stage running at that moment (stages end where the build logs).

Usage: ``python benchmarks/space_build.py [--presets demo paper]``; writes
``benchmarks/out/space_build.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import RESULTS, write_summary  # noqa: E402  (benchmarks/ is not a package)

STAGES = ["sample + dedupe", "parse + reject", "scene bank + execute + filter", "collapse + dedupe",
          "signatures + synonyms", "test bank", "save"]


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def one(preset: str) -> dict:
    from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
    stage = {"i": 0}
    peaks = [0.0] * len(STAGES)
    marks = [time.perf_counter()]
    done = threading.Event()

    def poll():
        while not done.is_set():
            i = min(stage["i"], len(STAGES) - 1)
            peaks[i] = max(peaks[i], rss_mb())
            time.sleep(0.02)

    def log(_msg):
        i = min(stage["i"], len(STAGES) - 1)
        peaks[i] = max(peaks[i], rss_mb())
        marks.append(time.perf_counter())
        stage["i"] += 1

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    t0 = time.perf_counter()
    space = HypothesisSpace.build(preset, log=log)
    stage["i"] = len(STAGES) - 1
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        t = time.perf_counter()
        space.save(Path(tmp) / "space")
        marks.append(time.perf_counter())
        disk = sum(f.stat().st_size for f in (Path(tmp) / "space").iterdir())
        t_load = time.perf_counter()
        HypothesisSpace.load(Path(tmp) / "space")
        t_load = time.perf_counter() - t_load
    done.set()
    thread.join()
    import resource
    seconds = [b - a for a, b in zip(marks[:-1], marks[1:])]
    return {"preset": preset, "concepts": int(space.n_concepts), "scenes": int(space.n_scenes),
            "params": space.params, "stages_survivors": space.stages,
            "stage_seconds": dict(zip(STAGES, seconds)), "stage_peak_rss_mb": dict(zip(STAGES, peaks)),
            "build_seconds": t - t0, "save_seconds": marks[-1] - t, "load_seconds_verified": t_load,
            "wall_seconds": marks[-1] - t0, "disk_mb": disk / 2**20,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", nargs="+", default=["demo", "paper"])
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--out", default="benchmarks/out/space_build.json")
    ap.add_argument("--results", default=str(RESULTS / "space_build.json"),
                    help="the small committed summary of this run (JSON; default benchmarks/results/space_build.json)")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    results = []
    for preset in args.presets:
        proc = subprocess.run([sys.executable, __file__, "--one", preset], capture_output=True, text=True)
        if proc.returncode:
            sys.exit(proc.stderr)
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        results.append(r)
        print(f"\n== {preset}: {r['wall_seconds']:.1f} s wall (build {r['build_seconds']:.1f} s, save "
              f"{r['save_seconds']:.1f} s), peak RSS {r['peak_rss_mb']:,.0f} MB, {r['disk_mb']:,.0f} MB on disk, "
              f"verified load {r['load_seconds_verified']:.1f} s")
        print(f"{'stage':<32}{'seconds':>9}{'peak RSS MB':>13}")
        for s in STAGES:
            print(f"{s:<32}{r['stage_seconds'].get(s, 0):>9.1f}{r['stage_peak_rss_mb'].get(s, 0):>13,.0f}")
        print("survivors: " + ", ".join(f"{k} {v:,}" for k, v in r["stages_survivors"].items()))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))
    write_summary(args.results, "space build, stage by stage", {r["preset"]: r for r in results})


if __name__ == "__main__":
    main()
