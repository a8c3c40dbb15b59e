"""Relational executor benchmark (issue 23), side by side in one run.

1. Throughput (program x scene evaluations per second, compile + run) of programs sampled
   from ``hypotheses/clevr.pcfg`` against CURI programs of the *same lengths* (the same number
   of programs per length, lengths both grammars produce), on banks of CLEVR-sized scenes
   (10 object slots; CURI's programs also on their own 5-slot bank).  Target: within 5x.
2. Scaling of the relational programs with the objects per scene: banks of at most 3, 5 and
   10 objects (3 sampled at least, as CLEVR; the 3-object bank has exactly 3).
3. Exactness at the acceptance's size: every one of ``--check-programs`` sampled relational
   programs against the slow interpreter on ``--check-scenes`` scenes (mismatches must be 0).

Usage: ``python benchmarks/relational.py [--programs 2000] [--scenes 20000]``; writes a JSON
summary (``--out``, default ``benchmarks/results/relational.json``).
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from bayes_concepts.engine import compile_for, evaluate, run, signature_bits
from bayes_concepts.lot import Program, curi_grammar, load_grammar, sample_programs
from bayes_concepts.resources import data_file
from bayes_concepts.scenes import CLEVR_SCHEMA, SceneBank


def throughput(programs, grammar, bank, repeat=3) -> dict:
    """Best of ``repeat`` (compile + run) over the programs on the bank."""
    run(compile_for(programs[:5], bank, grammar), bank)  # JIT warm-up
    best = None
    for _ in range(repeat):
        t = time.perf_counter()
        plan = compile_for(programs, bank, grammar)
        t_compile = time.perf_counter() - t
        run(plan, bank)
        total = time.perf_counter() - t
        if best is None or total < best["seconds"]:
            best = {"seconds": total, "compile_seconds": t_compile, "instructions": int(plan.n_instructions),
                    "register_rows": int(plan.n_regs)}
    best["evaluations_per_second"] = len(programs) * bank.n_scenes / best["seconds"]
    return best


def same_lengths(relational, curi) -> tuple:
    """Equal numbers of programs per length from the two lists."""
    by_len = [defaultdict(list), defaultdict(list)]
    for side, progs in enumerate((relational, curi)):
        for p in progs:
            by_len[side][p.length].append(p)
    a, b = [], []
    for length in sorted(set(by_len[0]) & set(by_len[1])):
        k = min(len(by_len[0][length]), len(by_len[1][length]))
        a += by_len[0][length][:k]
        b += by_len[1][length][:k]
    return a, b


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=4000, help="programs sampled from each grammar (default 4000)")
    ap.add_argument("--scenes", type=int, default=20_000, help="scenes per bank (default 20,000)")
    ap.add_argument("--check-programs", type=int, default=2000, help="programs checked against the interpreter")
    ap.add_argument("--check-scenes", type=int, default=500, help="scenes they are checked on")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/results/relational.json")
    args = ap.parse_args()
    t_start = time.perf_counter()
    clevr = load_grammar(data_file("clevr.pcfg"))
    curi = curi_grammar()
    rel = [Program.parse(s, clevr) for s in dict.fromkeys(sample_programs(args.programs, clevr, seed=args.seed).strings())]
    cur = [Program.parse(s, curi) for s in dict.fromkeys(sample_programs(args.programs, curi, seed=args.seed).strings())]
    rel_matched, curi_matched = same_lengths(rel, cur)
    print(f"{len(rel_matched)} programs of each grammar with the same lengths "
          f"({min(p.length for p in rel_matched)}..{max(p.length for p in rel_matched)} tokens)", flush=True)

    clevr_bank = SceneBank.sample(args.scenes, "clevr", clevr.schema, seed=args.seed)
    curi_bank10 = SceneBank.sample(args.scenes, "clevr", CLEVR_SCHEMA, seed=args.seed)
    curi_bank5 = SceneBank.sample(args.scenes, "clevr", curi.schema, seed=args.seed)
    side = {
        "relational_10_slots": throughput(rel_matched, clevr, clevr_bank),
        "curi_10_slots": throughput(curi_matched, curi, curi_bank10),
        "curi_5_slots": throughput(curi_matched, curi, curi_bank5),
    }
    ratio = side["curi_10_slots"]["evaluations_per_second"] / side["relational_10_slots"]["evaluations_per_second"]
    for name, r in side.items():
        print(f"{name:<22} {r['evaluations_per_second']:>14,.0f} program·scenes/s  ({r['seconds']:.2f} s)", flush=True)
    print(f"CURI / relational on 10-slot banks: {ratio:.2f}x (target: within 5x)", flush=True)

    scaling = {}
    for k in (3, 5, 10):
        bank = SceneBank.sample(args.scenes, "clevr", clevr.schema.with_max_objects(k), seed=args.seed)
        scaling[str(k)] = throughput(rel_matched, clevr, bank)
        print(f"max {k:>2} objects: {scaling[str(k)]['evaluations_per_second']:>14,.0f} program·scenes/s, "
              f"{scaling[str(k)]['register_rows']:,} register rows", flush=True)

    t = time.perf_counter()
    checked = rel[: args.check_programs]
    bank = SceneBank.sample(args.check_scenes, "clevr", clevr.schema, seed=args.seed + 1)
    scenes = bank.scenes()
    bits = signature_bits(run(compile_for(checked, bank, clevr), bank), bank.n_scenes)
    mismatches = sum(int(bits[i, j] != evaluate(p, scenes[j], clevr))
                     for i, p in enumerate(checked) for j in range(len(scenes)))
    true_somewhere = float(bits.any(axis=1).mean())
    print(f"exactness: {len(checked):,} programs x {len(scenes)} scenes against the interpreter: "
          f"{mismatches} mismatches ({time.perf_counter() - t:.0f} s)", flush=True)

    out = {
        "benchmark": "relational executor (issue 23)",
        "machine": {"python": platform.python_version(), "processor": platform.processor() or platform.machine()},
        "settings": vars(args),
        "matched_programs": len(rel_matched),
        "matched_lengths": [min(p.length for p in rel_matched), max(p.length for p in rel_matched)],
        "side_by_side": side,
        "curi_over_relational_10_slots": ratio,
        "within_5x": bool(ratio <= 5),
        "scaling_with_objects": scaling,
        "exactness": {"programs": len(checked), "scenes": len(scenes), "mismatches": mismatches,
                      "programs_true_on_some_scene": true_somewhere},
        "wall_seconds": time.perf_counter() - t_start,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
