"""The noisy likelihood against the size likelihood, and the wide test-bank AP against the
narrow one, side by side in one run (same episodes, same process).

    python benchmarks/noisy.py [SPACE_DIR] [--episodes N] [--splits concept_iid counting]

Prints ms per episode (best of --repeat runs, after a warm-up that compiles the kernels):
size; noisy with exact AP (AP tolerance 0), at the default AP tolerance and on the narrow
path; the ratios; whether the exact wide AP agrees with the narrow one (to 1e-12) and the
certified one with the exact one (to its bound); and the process's peak RSS.
"""
import argparse
import resource
import time

import numpy as np

import bayes_concepts as bc


def best_time(fn, repeat):
    out, best = None, np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("space", nargs="?", default="spaces/demo", help="a saved space (default spaces/demo)")
    ap.add_argument("--episodes", type=int, default=1000, help="hard-negative test episodes per split (default 1000)")
    ap.add_argument("--splits", nargs="+", default=["concept_iid", "counting"], help="splits to score")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per method; the best counts (default 3)")
    args = ap.parse_args()
    space = bc.HypothesisSpace.load(args.space, verify=False)
    print(f"{space}; {args.episodes:,} hard episodes per split, best of {args.repeat}")
    print(f"{'split':<14}{'oracle':<8}{'size ms':>9}{'noisy ms':>10}{'noisy T ms':>12}{'noisy narrow ms':>17}"
          f"{'noisy/size':>12}{'T/exact':>9}{'narrow/wide':>13}  AP equal  within bound")
    for name, split in bc.load_splits(space, args.splits).items():
        eps = bc.EpisodeSampler(space).sample(split.test, args.episodes, "hard", seed=0)
        size = bc.strong_and_weak(space, split, bc.OracleSettings(likelihood="size"))
        noisy = bc.strong_and_weak(space, split, bc.OracleSettings(likelihood="noisy", weak_empty="noisy",
                                                                   ap_tolerance=0))
        certified = bc.strong_and_weak(space, split, bc.OracleSettings(likelihood="noisy", weak_empty="noisy"))
        for k, who in enumerate(("strong", "weak")):
            size[k].evaluate(eps)
            noisy[k].evaluate(eps)
            certified[k].evaluate(eps)
            noisy[k].evaluate(eps, wide=False)
            t_size, _ = best_time(lambda: size[k].evaluate(eps), args.repeat)
            t_wide, r_wide = best_time(lambda: noisy[k].evaluate(eps), args.repeat)
            t_cert, r_cert = best_time(lambda: certified[k].evaluate(eps), args.repeat)
            t_narrow, r_narrow = best_time(lambda: noisy[k].evaluate(eps, wide=False), args.repeat)
            same = np.allclose(r_wide["ap"], r_narrow["ap"], rtol=0, atol=1e-12, equal_nan=True)
            within = bool(np.all(np.abs(r_cert["ap"] - r_wide["ap"]) <= r_cert["ap_bound"] + 1e-12)
                          or np.isnan(r_wide["ap"]).all())
            ms = 1000 / len(eps)
            print(f"{name:<14}{who:<8}{t_size * ms:>9.3f}{t_wide * ms:>10.3f}{t_cert * ms:>12.3f}{t_narrow * ms:>17.3f}"
                  f"{t_wide / t_size:>12.1f}{t_cert / t_wide:>9.2f}{t_narrow / t_wide:>13.2f}  {str(same):<9} {within}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")


if __name__ == "__main__":
    main()
