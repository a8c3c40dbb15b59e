"""The mcmc rung's cost: µs per chain step and ms per episode at n = 100 and 1,000 steps, the
chain alone and the whole episode (the chain and the exact Bayes over the visited set), with
the distinct concepts visited.

    python benchmarks/mcmc_cost.py [--episodes 100] [--seed 0]

Space: a small CURI space (``HypothesisSpace.build(samples=20000, scenes=5000, seed=0)``),
split ``concept_iid``, the noisy likelihood with easy negatives (the setting in which more than
one concept fits, so that the chain moves) and the default size likelihood with hard
negatives.  Writes ``benchmarks/results/mcmc_cost.json``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bayes_concepts as bc  # noqa: E402
from _summary import RESULTS, write_summary  # noqa: E402
from bayes_concepts.episodes import sampler_for  # noqa: E402
from bayes_concepts.oracles import OracleSettings  # noqa: E402
from bayes_concepts.rungs.mcmc import MCMCLearner  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=100, help="episodes per setting (default 100)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    space = bc.HypothesisSpace.build(samples=20_000, scenes=5_000, seed=0)
    split = bc.load_splits(space, ["concept_iid"])["concept_iid"]
    figures = {}
    for label, settings, negatives in (("noisy, easy negatives", OracleSettings(likelihood="noisy"), "easy"),
                                       ("size, hard negatives", OracleSettings(), "hard")):
        eps = sampler_for(space).sample(split.test, args.episodes, negatives, seed=args.seed,
                                        meta={"split": "concept_iid", "side": "test"})
        MCMCLearner(space, split, settings, n=100, seed=args.seed).evaluate(eps)  # warm the caches
        for n in (100, 1000):
            learner = MCMCLearner(space, split, settings, n=n, seed=args.seed)
            t0 = time.perf_counter()
            chains = learner.chains(eps)
            t_chain = time.perf_counter() - t0
            t0 = time.perf_counter()
            res = learner.evaluate(eps)
            t_all = time.perf_counter() - t0
            visited = float(np.mean([len(set(np.asarray(c).ravel().tolist())) for c in chains]))
            figures[f"{label}, n={n}"] = {"us_per_step": 1e6 * t_chain / (n * len(eps)),
                                          "ms_per_episode_chain": 1e3 * t_chain / len(eps),
                                          "ms_per_episode": 1e3 * t_all / len(eps),
                                          "mean_concepts_visited": visited,
                                          "map": 100 * float(np.nanmean(res["ap"]))}
            print(label, n, {k: round(v, 2) for k, v in figures[f"{label}, n={n}"].items()}, flush=True)
    path = write_summary(RESULTS / "mcmc_cost.json", "mcmc rung cost", figures, episodes=args.episodes,
                         seed=args.seed, space="HypothesisSpace.build(samples=20000, scenes=5000, seed=0)",
                         split="concept_iid")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
