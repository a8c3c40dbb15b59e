"""The sampling learner's cost per episode at budgets N = 100, 1,000, 10,000, with the strong
oracle's beside it (same episodes, same process, same threads).

    python benchmarks/sampling_cost.py [SPACE_DIR] [--episodes 2000] [--budgets 100 1000 10000]

SPACE_DIR: a saved space (default: a clevr preset space built here,
``HypothesisSpace.build("clevr", samples=2000, scenes=3000, seed=0)``).  Its splits: the
``closure`` protocol's families when the space holds them, else the space's ``concept_iid``
split.  Per split and kind of negatives, ``--episodes`` test episodes are drawn once; each
learner's ``evaluate`` is timed ``--repeat`` times (after a warm-up on the first cell) and the
best run counts.  Prints and writes ``benchmarks/results/sampling_cost.json``: µs per episode
(all cells pooled: their best times summed over their episodes), per cell, the mean number of
distinct hypotheses drawn, mAP, and the seconds a ladder of CLOSURE's seven families at
5,000 episodes per cell (hard and easy: 70,000 episodes) would spend on each learner at
these rates.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bayes_concepts as bc  # noqa: E402
from _summary import RESULTS, write_summary  # noqa: E402
from bayes_concepts.episodes import sampler_for  # noqa: E402
from bayes_concepts.oracles import Oracle  # noqa: E402
from bayes_concepts.protocols import get_protocol  # noqa: E402
from bayes_concepts.rungs import rung_learner, strong_concepts  # noqa: E402

LADDER_EPISODES = 7 * 2 * 5_000  # CLOSURE's seven families, hard and easy, 5,000 episodes each


def best_time(fn, repeat: int):
    out, best = None, np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def load(space_dir):
    if space_dir is None:
        t = time.perf_counter()
        space = bc.HypothesisSpace.build("clevr", samples=2000, scenes=3000, seed=0, progress=False)
        return space, "HypothesisSpace.build('clevr', samples=2000, scenes=3000, seed=0)", time.perf_counter() - t
    return bc.load_space(space_dir), str(space_dir), 0.0


def splits_of(space):
    """(protocol name, settings, {name: split}): CLOSURE's families, else concept_iid."""
    closure = get_protocol("closure")
    try:
        return "closure", closure.settings, closure.splits(space)
    except bc.BayesConceptsError:
        return None, bc.OracleSettings(), bc.load_splits(space, ["concept_iid"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("space", nargs="?", default=None, help="a saved space (default: a clevr preset space built here)")
    ap.add_argument("--episodes", type=int, default=2000,
                    help="test episodes per split and negatives (default 2000)")
    ap.add_argument("--budgets", type=int, nargs="+", default=[100, 1000, 10000], help="budgets N (draws per episode)")
    ap.add_argument("--negatives", nargs="+", default=["hard", "easy"], choices=["hard", "easy"])
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per learner and cell; the best counts (default 3)")
    ap.add_argument("--out", default=str(RESULTS / "sampling_cost.json"), help="the JSON summary to write")
    args = ap.parse_args()
    space, source, build_s = load(args.space)
    protocol, settings, splits = splits_of(space)
    sampler = sampler_for(space)
    print(f"{space}; {len(splits)} splits ({protocol or 'concept_iid'}), {args.episodes:,} episodes per cell, "
          f"best of {args.repeat}, {numba.get_num_threads()} numba threads")
    names = ["strong"] + [f"sampling[n={n}]" for n in args.budgets]
    seconds = {name: 0.0 for name in names}
    episodes = 0
    cells = []
    for split_name, split in splits.items():
        learners = {"strong": Oracle(space, strong_concepts(split), settings, "strong")}
        for n in args.budgets:
            learners[f"sampling[n={n}]"] = rung_learner("sampling", space, split, settings, n=n)
        for negatives in args.negatives:
            eps = sampler.sample(split.test, args.episodes, negatives, seed=0,
                                 meta={"split": split_name, "side": "test"})
            cell = {"split": split_name, "negatives": negatives, "episodes": len(eps),
                    "strong_concepts": int(len(learners["strong"].concepts)), "learners": {}}
            for name, learner in learners.items():
                if not cells:  # warm-up on the first cell: compiles the kernels
                    learner.evaluate(eps)
                t, out = best_time(lambda: learner.evaluate(eps), args.repeat)
                seconds[name] += t
                entry = {"us_per_episode": 1e6 * t / len(eps), "map": 100 * float(np.nanmean(out["ap"])),
                         "empty_share": float(np.mean(out["empty"]))}
                if "n_hypotheses" in out:
                    entry["mean_hypotheses"] = float(np.mean(out["n_hypotheses"]))
                cell["learners"][name] = entry
            episodes += len(eps)
            cells.append(cell)
            print(f"{split_name:<16}{negatives:<5} " + "  ".join(
                f"{name} {e['us_per_episode']:.1f} us" for name, e in cell["learners"].items()))
    pooled = {name: 1e6 * s / episodes for name, s in seconds.items()}
    ladder = {name: us * LADDER_EPISODES / 1e6 for name, us in pooled.items()}
    print("pooled us per episode: " + ", ".join(f"{k} {v:.1f}" for k, v in pooled.items()))
    print(f"a CLOSURE ladder at 5,000 episodes per cell ({LADDER_EPISODES:,} episodes), s: "
          + ", ".join(f"{k} {v:.1f}" for k, v in ladder.items()))
    figures = {"us_per_episode": pooled, "ratio_to_strong": {k: v / pooled["strong"] for k, v in pooled.items()},
               "closure_ladder_seconds_at_5000_per_cell": ladder, "episodes_timed": episodes, "cells": cells}
    path = write_summary(args.out, "sampling_cost", figures, space=source, space_summary=repr(space),
                         space_build_seconds=build_s, space_manifest_sha256=space.manifest_sha256(),
                         protocol=protocol, settings=settings.as_dict(), budgets=args.budgets,
                         episodes_per_cell=args.episodes, repeat=args.repeat, numba_threads=numba.get_num_threads(),
                         units="us_per_episode: microseconds of evaluate() wall time per episode (best of repeat); "
                               "map: percent")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
