"""Executor benchmark (issue 2): the bit-sliced executor against the slow interpreter.

Measured side by side in one run:

1. scene-program evaluations per second of the executor (compile + run, and run
   alone) on 2,000 sampled programs x 100,000 clevr scenes, and of the slow
   interpreter on the same programs over a subset of the scenes; their ratio;
2. one plan step (an AND of two rows) over 990,000 scenes, through the plan
   kernel, against a bare ``numpy.bitwise_and`` of two 990,000-bit arrays.

Targets: >= 1,000x the slow interpreter; a plan step within 2x of the bare AND.
Usage: ``python benchmarks/executor.py [--programs 2000] [--scenes 100000]``.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

from bayes_concepts.engine import compile_for, evaluate, run
from bayes_concepts.engine.kernels import OP_AND, run_plan_chunk
from bayes_concepts.lot import Program, sample_programs
from bayes_concepts.scenes import SceneBank

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import RESULTS, write_summary  # noqa: E402  (benchmarks/ is not a package)


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times), float(np.median(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=2000)
    ap.add_argument("--scenes", type=int, default=100_000)
    ap.add_argument("--slow-programs", type=int, default=200)
    ap.add_argument("--slow-scenes", type=int, default=200)
    ap.add_argument("--step-scenes", type=int, default=990_000)
    ap.add_argument("--out", default="benchmarks/out/executor.json")
    ap.add_argument("--results", default=str(RESULTS / "executor.json"),
                    help="the small committed summary of this run (JSON; default benchmarks/results/executor.json)")
    args = ap.parse_args()
    t_start = time.perf_counter()

    bank = SceneBank.sample(args.scenes, "clevr", seed=0)
    programs = [Program.parse(s) for s in sample_programs(args.programs, seed=1).strings()]
    run(compile_for(programs[:10], bank), bank)  # JIT warm-up

    t = time.perf_counter()
    plan = compile_for(programs, bank)
    t_compile = time.perf_counter() - t
    t_run, t_run_median = best_of(lambda: run(plan, bank), 3)
    evals = len(programs) * bank.n_scenes
    fast_rate = evals / (t_compile + t_run)

    slow_programs = programs[: args.slow_programs]
    slow_scenes = [bank.scene(j) for j in range(args.slow_scenes)]
    t = time.perf_counter()
    for p in slow_programs:
        for s in slow_scenes:
            evaluate(p, s)
    t_slow = time.perf_counter() - t
    slow_rate = len(slow_programs) * len(slow_scenes) / t_slow

    # one plan step over 990,000 scenes vs a bare numpy AND of two 990,000-bit arrays
    n_words = -(-args.step_scenes // 64)
    rng = np.random.default_rng(0)
    regs = rng.integers(0, 2**63, size=(3, n_words), dtype=np.uint64)
    step = np.array([[OP_AND, 2, 0, 0, 1, 0, 1, 0, -1]], np.int64)
    out = np.zeros((1, n_words), np.uint64)
    run_plan_chunk(step, regs, out, 0, n_words, np.zeros(0, np.int64))
    a, b, c = regs[0].copy(), regs[1].copy(), np.empty(n_words, np.uint64)
    reps = 2000
    t_step, t_step_med = best_of(lambda: run_plan_chunk(step, regs, out, 0, n_words, np.zeros(0, np.int64)), reps)
    t_and, t_and_med = best_of(lambda: np.bitwise_and(a, b, out=c), reps)
    assert np.array_equal(regs[2], c)

    result = {
        "programs": len(programs), "scenes": bank.n_scenes,
        "plan_instructions": plan.n_instructions, "plan_registers": plan.n_regs,
        "distinct_subprograms": plan.n_nodes,
        "executor_compile_s": t_compile, "executor_run_s": t_run, "executor_run_median_s": t_run_median,
        "executor_evals_per_s": fast_rate, "executor_run_only_evals_per_s": evals / t_run,
        "slow_pairs": len(slow_programs) * len(slow_scenes), "slow_s": t_slow, "slow_evals_per_s": slow_rate,
        "ratio_executor_over_slow": fast_rate / slow_rate,
        "plan_step_us": t_step * 1e6, "bare_and_us": t_and * 1e6, "plan_step_over_bare_and": t_step / t_and,
        "plan_step_median_us": t_step_med * 1e6, "bare_and_median_us": t_and_med * 1e6,
        "wall_s": time.perf_counter() - t_start,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    print(f"executor   {len(programs):,} programs x {bank.n_scenes:,} scenes: compile {t_compile:.3f} s, "
          f"run {t_run:.3f} s -> {fast_rate:,.0f} evals/s ({evals / t_run:,.0f} run only)")
    print(f"slow       {result['slow_pairs']:,} pairs in {t_slow:.2f} s -> {slow_rate:,.0f} evals/s")
    print(f"ratio      {result['ratio_executor_over_slow']:,.0f}x  (target >= 1,000x)")
    print(f"plan step  {t_step * 1e6:.1f} us vs bare AND {t_and * 1e6:.1f} us over {args.step_scenes:,} scenes "
          f"-> {t_step / t_and:.2f}x  (target <= 2x; medians {t_step_med * 1e6:.1f} / {t_and_med * 1e6:.1f} us)")
    print(f"wall {result['wall_s']:.1f} s, peak RSS {result['peak_rss_mb']:.0f} MB")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    write_summary(args.results, "bit-sliced executor against the slow interpreter", result)


if __name__ == "__main__":
    main()
