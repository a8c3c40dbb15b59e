"""ConceptWorld (issue 24): build the space, check the generator at scale, score the four
experiments' comp gaps, and write ``benchmarks/results/conceptworld.json``.

Stages:

1. ``build``: ``conceptworld_space`` with the preset's defaults (depth 7, 40 scenes per
   concept); wall seconds per stage and peak RSS.
2. ``draws``: ``--draws`` (default 10,000) generated scenes per concept, each checked by the
   fast executor (every one must satisfy its concept) and, one in ``--slow-every``, by the
   slow interpreter; the same scenes with one of the concept's points removed must not.
3. ``gap``: the comp gap of every protocol (conceptworld-productivity, -boxworld, -scaling,
   -substitution) per test condition and negatives, with paired bootstrap 95 % intervals,
   beside the seed's reported model F1 (mean over the condition's test concepts).

Usage: ``python benchmarks/conceptworld.py [--draws 10000] [--episodes 5000]``.
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import RESULTS, write_summary  # noqa: E402  (benchmarks/ is not a package)

from bayes_concepts.suites.conceptworld.definitions import load_definitions  # noqa: E402
from bayes_concepts.suites.conceptworld.execute import evaluate_concepts  # noqa: E402
from bayes_concepts.suites.conceptworld.generate import break_scene, sample_scenes  # noqa: E402
from bayes_concepts.suites.conceptworld.interpret import interpret  # noqa: E402
from bayes_concepts.suites.conceptworld.space import DEFAULTS, conceptworld_space, condition_slug, load_reported  # noqa: E402
from bayes_concepts.gap import summarise  # noqa: E402
from bayes_concepts.protocols import get_protocol  # noqa: E402

EXPERIMENTS = ("productivity", "boxworld", "scaling", "substitution")


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def draws(n: int, slow_every: int, seed: int = 0, first: int = 0, last: int | None = None, on_concept=None) -> dict:
    """The generator check for the concepts ``first:last`` of the space (in its order); after
    each, ``on_concept(out)`` (e.g. to save what is done so far).  Concept number i draws its
    scenes and breaks them with seeds derived from (seed, i), so a slice gives the same numbers
    as the whole run."""
    defs = load_definitions()
    out = {}
    instances = list(defs.instances(DEFAULTS["depth"]))
    for i, c in enumerate(instances[first:last], start=first):
        rng = np.random.default_rng([seed, i])
        t = time.perf_counter()
        grids, masks = sample_scenes(defs, c, n, seed=int(rng.integers(2**31)))
        t_gen = time.perf_counter() - t
        t = time.perf_counter()
        ok = evaluate_concepts(defs, [c], grids)[0]
        t_fast = time.perf_counter() - t
        broken = np.stack([break_scene(g, m, rng) for g, m in zip(grids, masks)])
        bad = evaluate_concepts(defs, [c], broken)[0]
        slow_idx = range(0, n, slow_every)
        slow_ok = sum(interpret(defs, c, grids[j]) for j in slow_idx)
        slow_bad = sum(interpret(defs, c, broken[j]) for j in slow_idx)
        out[c.name] = {"draws": n, "satisfied": int(ok.sum()), "broken_satisfied": int(bad.sum()),
                       "slow_checked": len(slow_idx), "slow_satisfied": int(slow_ok), "slow_broken_satisfied":
                       int(slow_bad), "generate_s": round(t_gen, 2), "fast_s": round(t_fast, 3)}
        print(f"{c.name:<22} {ok.sum():>6}/{n} satisfy; broken satisfy {bad.sum()}; slow {slow_ok}/{len(slow_idx)}, "
              f"broken {slow_bad}; generate {t_gen:.1f} s, fast {t_fast:.2f} s", flush=True)
        if on_concept is not None:
            on_concept(out)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=10_000, help="generated scenes per concept (default 10,000)")
    ap.add_argument("--slow-every", type=int, default=100, help="check one draw in this many with the interpreter")
    ap.add_argument("--episodes", type=int, default=5_000, help="test episodes per cell of the gap")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--results", default=None,
                    help="where to write the summary (default benchmarks/results/conceptworld.json; with "
                         "--draws-only, conceptworld_draws.json)")
    ap.add_argument("--draws-only", action="store_true",
                    help="only the generator check (e.g. every draw by the interpreter: --slow-every 1); the "
                         "summary is rewritten after each concept")
    ap.add_argument("--concepts", type=int, nargs=2, metavar=("FIRST", "LAST"), default=(0, None),
                    help="with --draws-only: only the concepts FIRST..LAST-1 (space order), e.g. one slice per "
                         "core; join the slices' summaries with --join")
    ap.add_argument("--join", nargs="+", metavar="SUMMARY",
                    help="join the --draws-only summaries of slices into --results")
    args = ap.parse_args(argv)
    if args.join:
        import json
        parts = [json.loads(Path(p).read_text()) for p in args.join]
        checks = {k: v for part in parts for k, v in part["figures"]["draws"].items()}
        names = [c.name for c in load_definitions().instances(DEFAULTS["depth"])]
        missing = [n for n in names if n not in checks]  # slices stopped before their end
        args.results = args.results or str(RESULTS / "conceptworld_draws.json")
        write_summary(args.results, "ConceptWorld: generated scenes checked against their concepts", {
            "draws": checks, "concepts_checked": len(checks), "concepts_missing": missing,
            "seconds": round(sum(p["figures"]["seconds"] for p in parts), 1),
            "peak_rss_mb": max(p["figures"]["peak_rss_mb"] for p in parts)},
            settings={**parts[0]["settings"], "concepts": [None, None], "joined": len(parts)})
        print(f"wrote {args.results}: {len(checks)} of {len(names)} concepts" +
              (f"; missing {', '.join(missing)}" if missing else ""))
        return 0
    if args.draws_only:
        args.results = args.results or str(RESULTS / "conceptworld_draws.json")
        t = time.perf_counter()
        first, last = args.concepts

        def save(checks):
            write_summary(args.results, "ConceptWorld: generated scenes checked against their concepts", {
                "draws": checks, "seconds": round(time.perf_counter() - t, 1), "peak_rss_mb": round(peak_mb(), 1)},
                settings={"draws": args.draws, "slow_every": args.slow_every, "seed": args.seed,
                          "concepts": [first, last]})

        save(draws(args.draws, args.slow_every, args.seed, first, last, on_concept=save))
        print(f"wrote {args.results}")
        return 0
    args.results = args.results or str(RESULTS / "conceptworld.json")

    t = time.perf_counter()
    space = conceptworld_space(seed=args.seed)
    build = {"seconds": round(time.perf_counter() - t, 2), "stages_s": {k: round(v, 2) for k, v in
                                                                      space.build_seconds.items()},
             "peak_rss_mb": round(peak_mb(), 1), "concepts": space.n_concepts, "scenes": space.n_scenes,
             "synonym_classes": space.n_synonym_classes, "params": {k: v for k, v in space.params.items()
                                                                  if k != "definitions"}}
    print(f"build: {build['seconds']} s, {space.n_concepts} concepts over {space.n_scenes:,} scenes; "
          f"peak RSS {build['peak_rss_mb']} MB", flush=True)

    gaps = {}
    reported = load_reported()
    for exp in EXPERIMENTS:
        proto = get_protocol(f"conceptworld-{exp}")
        t = time.perf_counter()
        ds = proto.compute_gap(space, n_episodes=args.episodes, seed=args.seed)
        rows = summarise(ds, seed=args.seed)
        rep = reported[exp]
        conds = {condition_slug(c): c for per in rep["models"].values() for v in per.values() for c in v}
        cells = {}
        for r in rows:
            cond = conds.get(r["split"])
            models = {m: round(float(np.mean([per[c][cond] for c in rep["test_concepts"] if c in per])), 4)
                      for m, per in rep["models"].items()} if cond else {}
            cells.setdefault(r["split"], {"condition": cond, "seed_models_f1": models})[r["negatives"]] = {
                "strong_map": r["strong"]["map"], "weak_map": r["weak"]["map"], "map_gap": r["gap"]["map"],
                "map_gap_ci": r["gap"]["map_ci"], "strong_cba": r["strong"]["cba"], "weak_cba": r["weak"]["cba"],
                "cba_gap": r["gap"]["cba"], "cba_gap_ci": r["gap"]["cba_ci"],
                "weak_empty_share": r["weak_empty_share"], "episodes": r["episodes"]}
            print(f"{exp:<13} {r['split']:<16} {r['negatives']:<4} mAP gap {r['gap']['map']:5.1f} "
                  f"[{r['gap']['map_ci'][0]:5.1f}, {r['gap']['map_ci'][1]:5.1f}]  CBA gap {r['gap']['cba']:5.1f} "
                  f"[{r['gap']['cba_ci'][0]:5.1f}, {r['gap']['cba_ci'][1]:5.1f}]", flush=True)
        gaps[exp] = {"seconds": round(time.perf_counter() - t, 1), "source": rep["source"], "splits": cells}

    checks = draws(args.draws, args.slow_every, args.seed) if args.draws else {}
    figures = {"build": build, "gap": gaps, "draws": checks, "peak_rss_mb": round(peak_mb(), 1)}
    write_summary(args.results, "ConceptWorld: space build, generator checks, comp gap of the four experiments",
                  figures, settings={"episodes": args.episodes, "draws": args.draws, "slow_every": args.slow_every,
                                     "seed": args.seed})
    print(f"wrote {args.results}; peak RSS {figures['peak_rss_mb']} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
