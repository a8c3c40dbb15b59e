"""The episode sampler against an earlier commit's, side by side in one process.

    python benchmarks/sampler_ratio.py [SPACE_DIR] [--before main] [--episodes 2000] [--rounds 5]
        [--splits concept_iid counting] [--threads 1 2]

``SPACE_DIR`` defaults to ``spaces/paper``.  The sampling kernel of ``bayes_concepts/episodes.py``
as it was at ``--before`` is imported beside today's (relative imports resolve against today's
package), both draw the same hard episodes (the same concepts and seeds) of each split's test
side, rounds interleaved with the first rotating, the best round counting; per split and thread
count: ms per episode of each and their ratio, and whether every array of the two draws is
equal (it must be: the change is a speed change).  Writes
``benchmarks/results/sampler_ratio.json``.  Timings on a shared machine are noisy; the ratio of
the two, measured in the same rounds, is the figure.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import RESULTS, write_summary  # noqa: E402  (benchmarks/ is not a package)
import roofline  # noqa: E402

import bayes_concepts as bc  # noqa: E402
from bayes_concepts import episodes as E  # noqa: E402


module_at = roofline._module_at  # one way to import a module as it was at a commit


def draw(module, sampler, concepts, seeds, k, kq, space):
    """One draw of the sampling kernel of ``module``; returns its support and query sets."""
    from bayes_concepts.engine.rows import row_source
    n = len(concepts)
    sets = [module.EpisodeSets(np.full((n, m), -1, np.int64), np.zeros((n, m), np.int8), np.full((n, m), -1, np.int32),
                               np.zeros((n, m), bool), np.zeros((n, m), bool)) for m in (k, kq)]
    outside = space.index.scene_outside()
    tables = module.SamplerTables(row_source(sampler.signatures), sampler.cum, row_source(sampler.scene_concepts),
                                  space.counts, space.synonym_classes, int(space.n_scenes),
                                  np.zeros((0, 1), np.uint64) if outside is None else outside)
    rules = module.DrawRules(5, 5, True, True, True, float(module.UNION_SCAN), float(module.UNION_EXPLICIT))
    t0 = time.perf_counter()
    module._sample_episodes(concepts, seeds, tables, rules, *sets)
    return time.perf_counter() - t0, sets


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("space", nargs="?", default="spaces/paper")
    ap.add_argument("--before", default="main", help="the commit whose sampler is compared (default main)")
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--splits", nargs="+", default=["concept_iid", "counting"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--json-out", default=str(RESULTS / "sampler_ratio.json"))
    args = ap.parse_args()
    old = module_at(args.before, "bayes_concepts/episodes.py", "bayes_concepts._episodes_before")
    space = bc.HypothesisSpace.load(args.space, verify=False)
    sampler = bc.EpisodeSampler(space)
    cells = {}
    for name, split in bc.load_splits(space, list(args.splits)).items():
        eps = sampler.sample(split.test, args.episodes, "hard", seed=0)  # the concepts and the seeds
        concepts = np.asarray(eps.concept, np.int32)
        seeds = E.block_seeds(0, len(concepts))
        k, kq = eps.support_scenes.shape[1], eps.query_scenes.shape[1]
        for threads in args.threads:
            numba.set_num_threads(threads)
            best = {"before": np.inf, "now": np.inf}
            outs = {}
            for r in range(args.rounds):
                pair = (("before", old), ("now", E))
                for tag, module in (pair if r % 2 == 0 else pair[::-1]):
                    t, outs[tag] = draw(module, sampler, concepts, seeds, k, kq, space)
                    best[tag] = min(best[tag], t)
            equal = all(np.array_equal(a, b) for s0, s1 in zip(outs["before"], outs["now"]) for a, b in zip(s0, s1))
            cell = {"ms_per_episode_before": 1e3 * best["before"] / len(concepts),
                    "ms_per_episode_now": 1e3 * best["now"] / len(concepts),
                    "ratio": best["before"] / best["now"], "equal": bool(equal)}
            cells[f"{name} hard, {threads} thread{'s' * (threads > 1)}"] = cell
            print(f"{name} hard, {threads} threads: {cell['ms_per_episode_before']:.3f} -> "
                  f"{cell['ms_per_episode_now']:.3f} ms/episode (x{cell['ratio']:.2f}), equal: {equal}", flush=True)
    path = write_summary(args.json_out, "sampler_ratio", cells, space=str(args.space), before=args.before,
                         episodes=args.episodes, rounds=args.rounds,
                         method="one process, the two kernels on the same concepts and seeds, rounds interleaved "
                                "(the first rotating), best round; a shared 2-core machine (noisy: the ratio is the "
                                "figure)")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
