"""The oracle ladder on the seed benchmarks: every rung's profile per split, its spread, and
rank correlations with the published models (issue 39).

Usage (one job at a time; each writes ``benchmarks/results/ladder_<benchmark>.json``)::

    python benchmarks/ladder.py curi spaces/paper                     # CURI's nine splits
    python benchmarks/ladder.py closure spaces/clevr [--protocol closure-baselines]
    python benchmarks/ladder.py conceptworld spaces/cw                 # the eight conditions
    python benchmarks/ladder.py pairs SPACE [SPACE ...] --published rlcl
    python benchmarks/ladder.py pooled                                 # reads the ladder_*.json

Options: ``--episodes`` (5,000 per cell), ``--negatives`` (hard easy), ``--alpha`` (the
learned priors' curve, 1 10 100), ``--budget`` (the sampling learner's curve, 100 1000 10000),
``--rungs`` (default: every built-in rung), ``--seed``.  The summary holds each cell's rung
means, gaps (strong − rung, mAP points) with paired bootstrap intervals and standard errors,
where each split is solved, every rung's spread over the splits, the rank correlations with
the published models (mean model and each model), the rungs' definitions, the wall time and
peak memory.  ``pooled`` recomputes each benchmark's correlations from its summary's rows
(the same seed, so the same numbers) and pools them across benchmarks (Fisher z weighted by
conditions − 3, leave one benchmark out).
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

from _summary import RESULTS, write_summary

from bayes_concepts import published as pub
from bayes_concepts.difficulty import split_predictors
from bayes_concepts.ladder import (ladder_correlations, ladder_profile, ladder_summary, parse_rungs,
                                   pooled_correlations, rung_spreads, strip_draws)
from bayes_concepts.results import get_attr, save_results
from bayes_concepts.rungs import rungs as rung_registry
from bayes_concepts.spaces import load_space

BENCHMARKS = ("curi", "closure", "conceptworld", "pairs")
#: the measure each benchmark's correlations lead with (fixed before any run): CLOSURE's drop
#: against chance, since its families' answers have different chance levels; the others' own
HEADLINE = {"closure": "normalised_drop"}
#: the other measures each benchmark's summary also correlates with
ALSO = {"closure": ["accuracy_drop"]}


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _jobs(kind: str, space, protocol_name: str | None) -> list:
    """``[(splits, protocol or None, prefix)]`` of a benchmark on ``space``: one job per
    protocol, its rows' split names prefixed (``productivity/length_5``) where names repeat
    across jobs."""
    from bayes_concepts.protocols import protocols
    from bayes_concepts.splits import load_splits, make_split
    if kind == "curi":
        return [(load_splits(space), None, "")]
    if kind == "closure":
        proto = protocols.get(protocol_name or "closure")
        return [(proto.splits(space), proto, "")]
    if kind == "conceptworld":
        return [(protocols.get(n).splits(space), protocols.get(n), n.removeprefix("conceptworld-") + "/")
                for n in protocols.names() if n.startswith("conceptworld-")]
    if kind == "pairs":  # the splits `space from-pairs` saved beside the space, named layout/split
        layout = Path(space.path).name
        return [({f.stem: make_split(space, f) for f in sorted((Path(space.path) / "splits").glob("*.toml"))}, None,
                 f"{layout}/")]
    raise SystemExit(f"unknown benchmark {kind!r}")


def run(kind: str, space_dirs: list, args) -> int:
    t0 = time.perf_counter()
    given = args.published or ("none" if kind == "pairs" else kind)
    published = None if given == "none" else (pub.load(given) if given in pub.benchmarks() else pub.read(given))
    all_rows, timing, cells_info, predictors = [], {}, {}, {}
    specs = None
    for d in space_dirs:
        space = load_space(d)
        specs = parse_rungs(args.rungs, args.alpha, args.budget, space)
        for splits, proto, prefix in _jobs(kind, space, args.protocol):
            settings = proto.settings if proto is not None else None
            query_negatives = proto.query_negatives if proto is not None else None
            hard_mode = proto.hard_mode if proto is not None else "union"
            t = time.perf_counter()
            ds = ladder_profile(space, splits, specs, tuple(args.negatives), args.episodes, settings, args.seed,
                                query_negatives=query_negatives, hard_mode=hard_mode, progress=True)
            key = f"{d}:{prefix.rstrip('/')}" if prefix else str(d)
            timing[key] = round(time.perf_counter() - t, 1)
            out_nc = (Path("benchmarks/out") / f"ladder_{kind}{'_' + args.protocol if args.protocol else ''}_"
                      f"{Path(d).name}_{prefix.rstrip('/') or 'all'}.nc")
            save_results(ds, out_nc, overwrite=True)  # per-episode results, kept out of git, for a re-summary
            rows = ladder_summary(ds, n_boot=args.n_boot, seed=args.seed)
            for r in rows:
                r["split"] = prefix + r["split"]
            predictors.update(_predictors(space, splits, proto, prefix))
            all_rows += rows
            cells_info[key] = {"space_manifest_sha256": ds.attrs["space_manifest_sha256"],
                               "splits": [prefix + s for s in splits],
                               "settings": get_attr(ds, "oracle_settings"),
                               "protocol": proto.name if proto is not None else None}
            print(f"{key}: {len(splits)} splits x {len(args.negatives)} negatives x {len(specs)} rungs, "
                  f"{args.episodes:,} episodes per cell: {timing[key]} s", file=sys.stderr)
    measures = args.measures or ([HEADLINE.get(published.benchmark, published.measure),
                                  *ALSO.get(published.benchmark, [])] if published is not None else [])
    headline = measures[0] if measures else None
    by_measure = _by_measure(all_rows, published, args.negatives, measures, args.n_boot, args.seed, predictors)
    corr = by_measure.get(headline, {})
    figures = {"rows": all_rows, "predictors": predictors,
               "spread": {neg: rung_spreads(all_rows, neg) for neg in args.negatives},
               "correlations": corr, "correlations_by_measure": by_measure, "headline_measure": headline,
               "wall_seconds": round(time.perf_counter() - t0, 1), "ladder_seconds": timing,
               "peak_rss_mb": round(peak_mb(), 1)}
    rungs = [{"name": n, "knobs": k, "definition": rung_registry.get(n).definition} for n, k in specs]
    name = args.name or (f"ladder_{kind}" + (f"_{args.protocol}" if args.protocol else ""))
    out = write_summary(RESULTS / f"{name}.json", f"the oracle ladder on {kind}", figures,
                        episodes_per_cell=args.episodes, negatives=list(args.negatives), seed=args.seed,
                        n_boot=args.n_boot, rungs=rungs, spaces=cells_info,
                        published=None if published is None else {"benchmark": published.benchmark,
                                                                   "measure": published.measure,
                                                                   "source": published.source})
    print(f"written {out} ({figures['wall_seconds']} s, peak {figures['peak_rss_mb']} MB)", file=sys.stderr)
    return 0


def _predictors(space, splits: dict, proto, prefix: str) -> dict:
    """The baseline predictors of each split (bayes_concepts.difficulty), named as the rows are."""
    chance = proto.chance_levels() if proto is not None else None
    return {prefix + c: v for c, v in split_predictors(space, splits, chance_levels=chance).items()}


def _by_measure(rows, published, negatives, measures, n_boot, seed, predictors) -> dict:
    if published is None:
        return {}
    return {m: {neg: strip_draws(ladder_correlations(rows, published, neg, n_boot=n_boot, seed=seed, measure=m,
                                                     predictors=predictors))
                for neg in negatives} for m in measures}


def correlate(kind: str, space_dirs: list, args) -> int:
    """Recompute a committed summary's correlations with the baseline predictors beside the
    rungs, from its rows (the same seed and replicates count), on the same spaces (their
    manifest hashes are checked): no episode is scored again."""
    name = args.name or (f"ladder_{kind}" + (f"_{args.protocol}" if args.protocol else ""))
    path = RESULTS / f"{name}.json"
    doc = json.loads(path.read_text())
    fig = doc["figures"]
    predictors = {}
    for d in space_dirs:
        space = load_space(d)
        for splits, proto, prefix in _jobs(kind, space, args.protocol):
            key = f"{d}:{prefix.rstrip('/')}" if prefix else str(d)
            want = doc["spaces"][key]["space_manifest_sha256"]
            if space.manifest_sha256() != want:
                raise SystemExit(f"{d}: manifest {space.manifest_sha256()[:12]} is not the summary's {want[:12]} "
                                 "(rebuild the space as the summary's command did)")
            predictors.update(_predictors(space, splits, proto, prefix))
    published = pub.load(doc["published"]["benchmark"]) if doc.get("published") else None
    measures = list(fig.get("correlations_by_measure") or [])
    fig["predictors"] = predictors
    fig["correlations_by_measure"] = _by_measure(fig["rows"], published, doc["negatives"], measures, doc["n_boot"],
                                                 doc["seed"], predictors)
    fig["correlations"] = fig["correlations_by_measure"].get(fig.get("headline_measure"), {})
    doc["figures"] = fig
    doc.setdefault("recorrelated", []).append({"what": "baseline predictors beside every rung; ties as ties",
                                               "command": " ".join(sys.argv)})
    path.write_text(json.dumps(doc, indent=1, default=float) + "\n")
    print(f"written {path}", file=sys.stderr)
    return 0


def pooled(args) -> int:
    per, sources = {}, {}
    for path in sorted(RESULTS.glob("ladder_*.json")):
        doc = json.loads(path.read_text())
        if "rows" not in doc.get("figures", {}) or path.stem == "ladder_pooled" or not doc.get("published"):
            continue
        if path.stem in args.skip:
            continue
        bench = doc["published"]["benchmark"]
        published = pub.load(bench)
        corr = ladder_correlations(doc["figures"]["rows"], published, args.negatives[0], n_boot=doc["n_boot"],
                                   seed=doc["seed"], measure=doc["figures"].get("headline_measure"),
                                   predictors=doc["figures"].get("predictors"))
        per[path.stem] = corr
        sources[path.stem] = {"published": bench, "conditions": corr["conditions"], "measure": corr["measure"]}
    if not per:
        raise SystemExit("no ladder summaries under benchmarks/results/ (run a benchmark first)")
    figures = {"pooled": pooled_correlations(per), "pooled_predictors": pooled_correlations(per, "predictors"),
               "per_benchmark": {b: strip_draws(c) for b, c in per.items()}}
    out = write_summary(RESULTS / "ladder_pooled.json", "the oracle ladder: rank correlations pooled across benchmarks",
                        figures, negatives=args.negatives[0], sources=sources,
                        method="Fisher z of each benchmark's mean-model Spearman rho, weighted by conditions - 3; "
                               "intervals: the benchmarks' two-level bootstrap replicates pooled replicate by replicate")
    print(f"written {out}", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("benchmark", choices=(*BENCHMARKS, "pooled", "correlate"),
                    help="which benchmark (or pooled; or correlate KIND SPACE...: a committed summary's correlations "
                         "recomputed from its rows with the baseline predictors)")
    ap.add_argument("spaces", nargs="*", help="saved space folder(s) (pairs: one per layout)")
    ap.add_argument("--protocol", default=None, help="closure: closure (default) or closure-baselines")
    ap.add_argument("--published", default=None, help="published results (default: the benchmark's)")
    ap.add_argument("--episodes", type=int, default=5_000, help="episodes per cell (default 5,000)")
    ap.add_argument("--negatives", nargs="+", default=["hard", "easy"], choices=["hard", "easy"])
    ap.add_argument("--rungs", nargs="+", default=None, help="rungs (default: every built-in rung)")
    ap.add_argument("--alpha", nargs="+", type=float, default=[1.0, 10.0, 100.0], help="learned priors' alphas")
    ap.add_argument("--budget", nargs="+", type=int, default=[100, 1000, 10000], help="sampling budgets n")
    ap.add_argument("--measures", nargs="+", default=None,
                    help="published measures to correlate with, the first the headline (default: closure "
                         "normalised_drop then accuracy_drop; the others their primary measure)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--name", default=None, help="summary name (default ladder_<benchmark>[_<protocol>])")
    ap.add_argument("--skip", nargs="*", default=["ladder_closure_closure-baselines"],
                    help="pooled: summaries to leave out (file stems; default the baseline-only CLOSURE variant, so "
                         "each benchmark counts once)")
    args = ap.parse_args(argv)
    if args.benchmark == "pooled":
        return pooled(args)
    if args.benchmark == "correlate":
        if not args.spaces or args.spaces[0] not in BENCHMARKS:
            ap.error("correlate KIND SPACE...")
        return correlate(args.spaces[0], args.spaces[1:], args)
    if not args.spaces:
        ap.error("give the saved space folder(s)")
    return run(args.benchmark, args.spaces, args)


if __name__ == "__main__":
    from bayes_concepts.collector import collect_less
    collect_less()  # a process of its own, as `bayes-concepts ladder` is
    raise SystemExit(main())
