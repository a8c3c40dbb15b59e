"""Learners benchmark: CURI's neural baselines on a CURI-scale space, measured in one run.

1. Training throughput (episodes/s, sampling included, validation excluded) of the
   schema encoder with each pooling (average, concat, relnet, transformer), and of a
   naive relation network for comparison (every one of the 5 × 5 slot pairs
   concatenated and pushed through g in float32, as CURI's release did).
   Target: >= 200 episodes/s for the schema relation net.
2. Scoring time of 20,000 test episodes (Concept IID, hard negatives) for one model:
   each distinct scene embedded once, the test bank once, then prototype distances.
   Target: <= 60 s.
3. With the training budget (default 30 minutes each), the schema relation net on
   Concept IID, Counting and Binding (colour) with hard negatives: test mAP and CBA on
   20,000 test episodes, next to both oracles on the same episodes and next to CURI's
   published mAP (Tables 4, 9, 1: 60.7, 57.4, 15.3).  Target: Concept IID mAP >= 50.

Writes ``benchmarks/out/learners.json`` and ``benchmarks/out/learners.txt``; the trained
models go to ``benchmarks/out/models/`` (weights are not committed).

Usage::

    bayes-concepts space build spaces/paper --preset paper      # ~1 min, 2.6 GB; never commit it
    python benchmarks/learners.py spaces/paper [--budget 30m] [--episodes 20000] [--skip-budget]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

if "--spin" not in sys.argv:
    # OpenMP threads that spin while waiting burn the cores other jobs need on a shared machine
    # (here: 2 threads at ~1/5 of one thread's speed under load); set before torch and numba load.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import torch

from bayes_concepts.engine.space import HypothesisSpace
from bayes_concepts.episodes import EpisodeSampler
from bayes_concepts.gap import cell_seed, compute_gap, summarise
from bayes_concepts.learners import ProtoNetLearner, load_model, score_learner
from bayes_concepts.learners.training import available_cores, parse_duration
from bayes_concepts.splits import curi_splits

#: CURI's published test mAP (%) of the schema relation net, hard negatives (seed paper, Tables 4, 9, 1)
CURI_RELNET_MAP = {"concept_iid": 60.7, "counting": 57.4, "binding_color": 15.3}
POOLINGS = ("average", "concat", "relnet", "transformer")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def throughput(space, split, pooling: str, steps: int, naive: bool = False, warmup: int = 5) -> dict:
    """Episodes per second of meta-training (64 episodes per step), sampling included, after a
    warm-up run of ``warmup`` steps; also episodes per CPU-second of this process (which
    the other jobs on a shared machine disturb less than wall time)."""
    result = None
    for n in (warmup, steps):
        learner = ProtoNetLearner(space, "schema", pooling, seed=0, precision="fp32" if naive else "auto")
        if naive:
            pool = learner.model.pooling
            pool.forward = pool.forward_reference
        learner.model.train()
        learner.evaluate = lambda episodes: {"ap": np.zeros(len(episodes)), "cba": np.zeros(len(episodes))}
        cpu0 = time.process_time()
        h = learner.train(split, max_steps=n, val_every=10 * n, val_episodes=1, progress=False)
        result = {"pooling": pooling + (" (naive, fp32)" if naive else ""), "episodes_per_s": h["episodes_per_s"],
                  "steps": h["steps"], "train_s": h["train_s"], "precision": learner.precision,
                  "cpu_s": time.process_time() - cpu0,
                  "episodes_per_cpu_s": h["episodes"] / (time.process_time() - cpu0)}
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("space")
    ap.add_argument("--steps", type=int, default=60, help="training steps per throughput measurement")
    ap.add_argument("--episodes", type=int, default=20_000, help="test episodes for scoring")
    ap.add_argument("--budget", default="30m", help="training budget per split for the accuracy runs")
    ap.add_argument("--splits", nargs="+", default=list(CURI_RELNET_MAP))
    ap.add_argument("--skip-budget", action="store_true", help="only throughput and scoring time")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the models of an earlier run in OUT/models (finished ones are loaded, "
                         "interrupted ones resumed to their budget)")
    ap.add_argument("--spin", action="store_true", help="keep OpenMP's default (spinning) wait policy")
    ap.add_argument("--out", default="benchmarks/out")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    space = HypothesisSpace.load(args.space)
    splits = curi_splits(space)
    info = {"space": args.space, "concepts": space.n_concepts, "scenes": space.n_scenes,
            "test_bank": space.test_bank.n_scenes, "cores": available_cores(), "torch": torch.__version__,
            "load_avg_start": os.getloadavg(), "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default")}
    def emit(*new_lines):
        """Print lines as they come and keep the files current (a long run may be cut short)."""
        lines.extend(new_lines)
        print("\n".join(new_lines), flush=True)
        (out / "learners.json").write_text(json.dumps(info, indent=2, default=float))
        (out / "learners.txt").write_text("\n".join(lines) + "\n")

    lines = []
    emit(f"space {args.space}: {space.n_concepts:,} concepts, {space.n_scenes:,} scenes, test bank "
             f"{space.test_bank.n_scenes:,}; {available_cores()} cores; load average at start "
             f"{info['load_avg_start'][0]:.1f}; OMP_WAIT_POLICY {info['omp_wait_policy']}")

    # 1. training throughput, side by side
    rows = [throughput(space, splits["concept_iid"], p, args.steps) for p in POOLINGS]
    rows.append(throughput(space, splits["concept_iid"], "relnet", max(10, args.steps // 3), naive=True))
    info["throughput"] = rows
    emit("", "training throughput (schema encoder, 64 episodes per step, episode sampling included):")
    relnet = next(r for r in rows if r["pooling"] == "relnet")["episodes_per_s"]
    for r in rows:
        emit(f"  {r['pooling']:<22} {r['episodes_per_s']:>7.0f} episodes/s  {r['episodes_per_cpu_s']:>6.0f} "
                     f"episodes/CPU-s  ({r['precision']}, {r['steps']} steps; time per episode "
                     f"{relnet / r['episodes_per_s']:.2f}x relnet's)")
    emit(f"  target: relnet >= 200 episodes/s -> {'met' if relnet >= 200 else 'MISSED'}")

    # 2. scoring 20,000 test episodes for one model (a briefly trained relnet)
    model = ProtoNetLearner(space, "schema", "relnet", seed=0)
    model.train(splits["concept_iid"], max_steps=20, val_every=1000, val_episodes=20, progress=False)
    eps = EpisodeSampler(space).sample(splits["concept_iid"].test, args.episodes, "hard",
                                       seed=cell_seed(0, "concept_iid", "hard"))
    model.weights_changed()
    t, cpu = time.perf_counter(), time.process_time()
    r = score_learner(model, space, eps)
    score_s, score_cpu_s = time.perf_counter() - t, time.process_time() - cpu
    unique = len(np.unique(np.concatenate([eps.support_scenes.ravel(), eps.query_scenes.ravel()])))
    info["scoring"] = {"episodes": args.episodes, "seconds": score_s, "cpu_seconds": score_cpu_s,
                       "distinct_scenes_embedded": unique,
                       "test_bank_scenes": space.test_bank.n_scenes, "map": float(np.nanmean(r["ap"]))}
    emit("", f"scoring {args.episodes:,} test episodes (one relnet): {score_s:.1f} s, {score_cpu_s:.1f} CPU-s ({unique:,} distinct "
             f"support/query scenes + {space.test_bank.n_scenes:,} test-bank scenes embedded once); "
             f"target <= 60 s -> {'met' if score_s <= 60 else 'MISSED'}")

    # 3. the relation net with the training budget, next to the oracles and CURI's numbers
    if not args.skip_budget:
        budget = parse_duration(args.budget)
        info["budget_s"] = budget
        results = []
        emit("", f"schema relnet, hard negatives, {args.budget} training budget per split, "
                 f"{args.episodes:,} test episodes (mAP / CBA, %):",
             f"  {'split':<15}{'weak':>13}{'relnet':>13}{'strong':>13}{'CURI relnet mAP':>17}"
             f"{'steps':>9}{'ep/s':>6}")
        for name in args.splits:
            split = splits[name]
            model_dir = out / "models" / f"relnet_{name}"
            learner = ProtoNetLearner(space, "schema", "relnet", seed=0, name="relnet")
            saved = json.loads((model_dir / "checkpoint.json").read_text())["state"] \
                if args.reuse and (model_dir / "checkpoint.json").exists() else None
            if saved is not None and saved.get("stopped") in ("budget", "early_stopping", "max_steps"):
                learner = load_model(model_dir, space, name="relnet")
                h = learner.card["training"]
            else:
                h = learner.train(split, budget=budget, out=model_dir, resume=saved is not None,
                                  progress="auto", log=lambda line: print(line, flush=True))
            ds = compute_gap(space, {name: split}, ("hard",), args.episodes, seed=0,
                             learners={"relnet": {name: learner}})
            row = summarise(ds, n_boot=200)[0]
            res = {"split": name, "weak": row["weak"], "strong": row["strong"], "relnet": row["learners"]["relnet"],
                   "curi_relnet_map": CURI_RELNET_MAP.get(name), "training": {
                       k: h[k] for k in ("steps", "episodes", "wall_s", "episodes_per_s", "best_step", "best_val_map",
                                         "stopped")}}
            results.append(res)
            info["budget_runs"] = results
            m = res["relnet"]
            emit(f"  {name:<15}{row['weak']['map']:>6.1f} /{row['weak']['cba']:>5.1f}{m['map']:>6.1f} /"
                 f"{m['cba']:>5.1f}{row['strong']['map']:>6.1f} /{row['strong']['cba']:>5.1f}"
                 f"{res['curi_relnet_map'] or float('nan'):>17.1f}{h['steps']:>9,}{h['episodes_per_s']:>6.0f}")
        cid = next((r for r in results if r["split"] == "concept_iid"), None)
        if cid:
            emit(f"  target: Concept IID test mAP >= 50 -> {'met' if cid['relnet']['map'] >= 50 else 'MISSED'}"
                 f" ({cid['relnet']['map']:.1f})")
    info["wall_s"] = time.perf_counter() - t0
    info["peak_rss_mb"] = peak_rss_mb()
    info["load_avg_end"] = os.getloadavg()
    emit("", f"wall {info['wall_s']:.0f} s; peak RSS {info['peak_rss_mb']:,.0f} MB; load average at end "
             f"{info['load_avg_end'][0]:.1f} (the machine is shared: throughput scales with the idle cores)")


if __name__ == "__main__":
    main()
