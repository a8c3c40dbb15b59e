"""CLOSURE's families on the ``clevr`` preset: the comp gap with the weak oracle trained on
all of CLEVR (protocol ``closure``) and on the CLEVR baselines only (``closure-baselines``).

Builds the preset space (``space build --preset clevr``: 20,000 sampled programs, 20,000
scenes, CLOSURE's families and CLEVR's 90 question templates) or loads one given with
``--space``, scores both protocols on the same space with the same seed (hard and easy
negatives), and writes one JSON per protocol, each in the form ``bayes-concepts gap --json``
prints plus a ``closure`` block: per family the mAP gap (hard, easy), the weak oracle's
empty rate, the split sizes, the family's answer kind and chance level, the models' mean
absolute and chance-normalised drops, and Spearman's rho of the gap with each.

Usage::

    nice python benchmarks/closure_gap.py [--episodes 5000] [--space DIR] [--out-dir benchmarks/results]

writes ``closure_gap.json`` (protocol closure) and ``closure_gap_baselines.json``.
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from bayes_concepts.suites.closure import family_drops, load_reported
from bayes_concepts.gap import summarise
from bayes_concepts.results import attrs_info
from bayes_concepts.protocols import protocols
from bayes_concepts.spaces import load_space
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace

PROTOCOLS = {"closure": "closure_gap.json", "closure-baselines": "closure_gap_baselines.json"}
KEEP = ("split", "negatives", "episodes", "strong", "weak", "gap", "weak_empty_share", "posterior_entropy",
        "predictive_entropy")


def rho(x, y) -> dict:
    r = spearmanr(np.asarray(x, float), np.asarray(y, float))
    return {"rho": round(float(r.statistic), 4), "p": round(float(r.pvalue), 4), "n": len(x)}


def closure_block(rows, splits) -> dict:
    """Per family: gaps, the weak oracle's empty rate, sizes, drops; rho of gap and drops."""
    rep = load_reported()
    drops = family_drops()
    fams = [str(r["split"]) for r in rows if r["negatives"] == "hard"]
    per = {}
    for f in fams:
        hard = next(r for r in rows if r["split"] == f and r["negatives"] == "hard")
        easy = next((r for r in rows if r["split"] == f and r["negatives"] == "easy"), None)
        mine = [d for d in drops if d.family == f]
        per[f] = {
            "gap_hard": round(hard["gap"]["map"], 3), "gap_hard_ci": [round(v, 3) for v in hard["gap"]["map_ci"]],
            "gap_easy": round(easy["gap"]["map"], 3) if easy else None,
            "weak_empty_hard": hard["weak_empty_share"], "weak_empty_easy": easy["weak_empty_share"] if easy else None,
            "train_concepts": int(len(splits[f].train)), "test_concepts": int(len(splits[f].test)),
            "excluded": {k: v for k, v in getattr(splits[f], "excluded", {}).items()},
            "answer_kind": rep.answer_kinds[f], "chance": round(rep.chance[f], 3),
            "mean_drop": round(float(np.mean([d.drop for d in mine])), 3),
            "mean_normalised_drop": round(float(np.mean([d.normalised_drop for d in mine])), 4),
        }
    out = {"families": per, "spearman": {}}
    pairs = [d for d in drops if d.family in per]
    for neg in ("hard", "easy"):
        gaps = [per[f][f"gap_{neg}"] for f in fams]
        if any(g is None for g in gaps):
            continue
        gap_of = dict(zip(fams, gaps))
        by_model = {}
        for model in rep.models:
            mine = [d for d in pairs if d.model == model]
            by_model[model] = {"drop": rho([gap_of[d.family] for d in mine], [d.drop for d in mine])["rho"],
                               "normalised_drop": rho([gap_of[d.family] for d in mine],
                                                      [d.normalised_drop for d in mine])["rho"]}
        out["spearman"][neg] = {
            "gap_vs_mean_drop": rho(gaps, [per[f]["mean_drop"] for f in fams]),
            "gap_vs_mean_normalised_drop": rho(gaps, [per[f]["mean_normalised_drop"] for f in fams]),
            # every (family, model) pair: the family's gap against that model's drop
            "gap_vs_drop_pooled": rho([gap_of[d.family] for d in pairs], [d.drop for d in pairs]),
            "gap_vs_normalised_drop_pooled": rho([gap_of[d.family] for d in pairs], [d.normalised_drop for d in pairs]),
            "empty_vs_mean_drop": rho([per[f][f"weak_empty_{neg}"] for f in fams], [per[f]["mean_drop"] for f in fams]),
            "by_model": by_model,
        }
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=5000, help="episodes per cell (default 5000)")
    ap.add_argument("--space", help="a saved clevr preset space; built and saved there when the folder has none "
                                    "(default: built in memory)")
    ap.add_argument("--out-dir", default=str(Path(__file__).parent / "results"))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    build_seconds = None
    if args.space and (Path(args.space) / "manifest.json").is_file():
        space = load_space(args.space)
    else:
        t = time.perf_counter()
        space = HypothesisSpace.build("clevr", log=lambda s: print(s, file=sys.stderr))
        build_seconds = round(time.perf_counter() - t, 1)
        if args.space:
            space.save(args.space)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent).stdout.strip()
    except OSError:
        commit = ""
    for name, file in PROTOCOLS.items():
        protocol = protocols.get(name)
        t = time.perf_counter()
        splits = protocol.splits(space)
        ds = protocol.compute_gap(space, negatives=("hard", "easy"), n_episodes=args.episodes, seed=args.seed,
                                  splits=splits)
        rows = summarise(ds, seed=args.seed)
        seconds = round(time.perf_counter() - t, 1)
        result = {**attrs_info(ds), "results": [{k: r[k] for k in KEEP if k in r} for r in rows],
                  "closure": closure_block(rows, splits),
                  "benchmark": {"script": "benchmarks/closure_gap.py", "episodes_per_cell": args.episodes,
                                "space": ("space build --preset clevr" if build_seconds is not None
                                          else f"a saved clevr preset space ({args.space})"),
                                "space_params": {k: v for k, v in space.params.items() if k != "grammar"},
                                "concepts": int(space.n_concepts), "build_seconds": build_seconds,
                                "gap_seconds": seconds, "commit": commit, "machine": platform.platform(),
                                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}}
        path = Path(args.out_dir) / file
        path.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
        block = result["closure"]
        print(f"{name}: {seconds:.0f} s -> {path}")
        for f, v in block["families"].items():
            print(f"  {f:<16} gap hard {v['gap_hard']:6.2f} easy {v['gap_easy']:6.2f}  weak empty "
                  f"{100 * v['weak_empty_hard']:5.1f} / {100 * v['weak_empty_easy']:5.1f} %  train {v['train_concepts']}"
                  f"  test {v['test_concepts']}  drop {v['mean_drop']:5.1f}  normalised {v['mean_normalised_drop']:.3f}")
        for neg, r in block["spearman"].items():
            print(f"  rho ({neg}): gap vs mean drop {r['gap_vs_mean_drop']['rho']:+.2f}, vs mean normalised drop "
                  f"{r['gap_vs_mean_normalised_drop']['rho']:+.2f}; pooled over models {r['gap_vs_drop_pooled']['rho']:+.2f}"
                  f" / {r['gap_vs_normalised_drop_pooled']['rho']:+.2f}")
    print(f"wall {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
