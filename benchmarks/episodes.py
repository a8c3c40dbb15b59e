"""Episode sampling benchmark (issue 4): 20,000 hard-negative test episodes on a paper-scale space.

Reports the one-off index time (per-scene concept bitsets + block counts), the
sampling time, and peak RSS.  Target: <= 30 s for the 20,000 episodes.
Usage: ``python benchmarks/episodes.py SPACE_DIR [--split concept_iid] [--n 20000]``
(build the space with ``bayes-concepts space build DIR --preset paper``).
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.episodes import EpisodeSampler

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import RESULTS, write_summary  # noqa: E402  (benchmarks/ is not a package)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("space")
    ap.add_argument("--split", default="concept_iid")
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--out", default="benchmarks/out/episodes.json")
    ap.add_argument("--results", default=str(RESULTS / "episodes.json"),
                    help="the small committed summary of this run (JSON; default benchmarks/results/episodes.json)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    space = HypothesisSpace.load(args.space)
    t_load = time.perf_counter() - t0
    try:
        from bayes_concepts.splits import curi_splits
        split = curi_splits(space)[args.split]
        ids, name = split.test, args.split
    except ImportError:
        ids, name = np.arange(space.n_concepts), "all"
    t = time.perf_counter()
    sampler = EpisodeSampler(space)
    t_index = time.perf_counter() - t
    sampler.sample(ids[:10], 10, "hard", seed=123)  # JIT warm-up (cached on disk after the first run)
    results = {}
    for negatives in ("hard", "easy"):
        t = time.perf_counter()
        eps = sampler.sample(ids, args.n, negatives, seed=0, meta={"split": name, "side": "test"})
        results[negatives] = {"seconds": time.perf_counter() - t,
                              "topup_share": float((eps.support_topup.sum() + eps.query_topup.sum())
                                                   / (2 * eps.support_topup.size * 20 / 25))}
    out = {"space": args.space, "concepts": space.n_concepts, "scenes": space.n_scenes, "split": name,
           "test_concepts": int(len(ids)), "episodes": args.n, "load_s": t_load, "index_s": t_index,
           "hard_s": results["hard"]["seconds"], "easy_s": results["easy"]["seconds"],
           "hard_topup_share": results["hard"]["topup_share"],
           "hard_total_with_index_s": t_index + results["hard"]["seconds"],
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    print(f"{space.n_concepts:,} concepts x {space.n_scenes:,} scenes; split {name}: {len(ids):,} test concepts")
    print(f"index (per-scene concept bitsets, block counts): {t_index:.1f} s")
    print(f"{args.n:,} hard-negative episodes: {out['hard_s']:.2f} s (with index {out['hard_total_with_index_s']:.1f} s;"
          f" target <= 30 s); top-up share of negatives {out['hard_topup_share']:.1%}")
    print(f"{args.n:,} easy-negative episodes: {out['easy_s']:.2f} s; peak RSS {out['peak_rss_mb']:,.0f} MB")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    write_summary(args.results, "episode sampling on a saved space", out)


if __name__ == "__main__":
    main()
