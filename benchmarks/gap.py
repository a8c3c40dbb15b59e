"""Comp-gap benchmark (issue 5): the full table on a paper-scale space.

9 CURI splits x hard and easy negatives x 20,000 test episodes, strong and weak
oracle, mAP on the test bank and CBA on the query.  Target: <= 10 minutes here.
Reports wall time (episodes, oracles, summary), peak RSS, and writes the table
(``benchmarks/out/gap_table.txt``), the JSON rows and the netCDF results.

Usage: ``python benchmarks/gap.py SPACE_DIR [--episodes 20000] [--likelihood size] ...``
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.gap import compute_gap, format_table, summarise
from bayes_concepts.oracles import OracleSettings
from bayes_concepts.results import save_results
from bayes_concepts.splits import curi_splits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import RESULTS, write_summary  # noqa: E402  (benchmarks/ is not a package)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("space")
    ap.add_argument("--episodes", type=int, default=20_000)
    ap.add_argument("--prior", default="length")
    ap.add_argument("--beta", type=float, default=0.2)
    ap.add_argument("--likelihood", default="size")
    ap.add_argument("--weak-empty", default="zero")
    ap.add_argument("--query-negatives", default=None)
    ap.add_argument("--hard-mode", default="union", choices=["union", "alternative"])
    ap.add_argument("--tag", default="")
    ap.add_argument("--out", default="benchmarks/out")
    ap.add_argument("--results", default=str(RESULTS / "gap.json"),
                    help="the small committed summary of this run (JSON; default benchmarks/results/gap.json)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    space = HypothesisSpace.load(args.space)
    splits = curi_splits(space)
    settings = OracleSettings(prior=args.prior, beta=args.beta, likelihood=args.likelihood,
                              weak_empty=args.weak_empty)
    t1 = time.perf_counter()
    ds = compute_gap(space, splits, ("hard", "easy"), args.episodes, settings, seed=0,
                     query_negatives=args.query_negatives, progress=True, hard_mode=args.hard_mode)
    t2 = time.perf_counter()
    rows = summarise(ds)
    t3 = time.perf_counter()
    table = format_table(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = f"_{args.tag}" if args.tag else ""
    save_results(ds, out / f"gap{tag}.nc", overwrite=True)  # its own earlier run's file, never another
    info = {"space": args.space, "concepts": space.n_concepts, "scenes": space.n_scenes,
            "test_bank": space.test_bank.n_scenes, "episodes_per_cell": args.episodes,
            "settings": settings.as_dict(), "query_negatives": args.query_negatives, "hard_mode": args.hard_mode,
            "load_and_splits_s": t1 - t0, "episodes_and_oracles_s": t2 - t1, "summary_bootstrap_s": t3 - t2,
            "wall_s": time.perf_counter() - t0,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "rows": rows}
    (out / f"gap{tag}.json").write_text(json.dumps(info, indent=2))
    (out / f"gap_table{tag}.txt").write_text(table + "\n")
    write_summary(args.results, "the full comp-gap table (9 splits x hard/easy)", info)
    print(table)
    print(f"\nwall {info['wall_s']:.0f} s (episodes + oracles {t2 - t1:.0f} s, bootstrap {t3 - t2:.0f} s); "
          f"peak RSS {info['peak_rss_mb']:,.0f} MB; target <= 600 s")


if __name__ == "__main__":
    main()
