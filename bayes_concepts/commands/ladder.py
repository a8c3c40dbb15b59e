"""``ladder DIR``: the oracle ladder, every rung's mAP on the same episodes, and rank correlations
with published models."""
from __future__ import annotations

import json
import time
from pathlib import Path

from ..options import (OVERRIDE_NOTE, Given, LazyHelp, check_gap_memory, check_output_dir, check_results_out,
                       command, counted, describe_choices, episode_shape, episode_shape_option, finite,
                       hard_mode_option, lazy_registry, no_splits_error, open_space, oracle_options, oracle_settings,
                       print_json, progress_output, protocol_of, protocol_option, protocol_overrides, protocol_splits,
                       results_out_option, run_info, scheduler_option, splits_for, whole)


def _ladder_arguments(p):
    p.add_argument("dir", metavar="DIR", help="a saved concept space")
    p.add_argument("--split", nargs="+", metavar="NAME", default=None,
                   help="splits to score (default: all of the protocol's or the space's)")
    p.add_argument("--spec", nargs="+", metavar="FILE", help="split spec files (TOML) defining more splits")
    protocol_option(p)
    p.add_argument("--rungs", nargs="+", metavar="RUNG", default=None,
                   help=LazyHelp(lambda: "rungs to score, each NAME or NAME[knob=value,...] (e.g. sampling[n=100]; "
                                          "default: " + " ".join(lazy_registry("ladder", "DEFAULT_RUNGS")()) + "); "
                                          "registered: " + describe_choices(lazy_registry("rungs", "rungs")())))
    p.add_argument("--alpha", nargs="+", type=finite, metavar="A", default=None,
                   help="a curve of the learned priors' concentration alpha (> 0): every rung that takes alpha is "
                        "scored once per value (default: each rung's own, 1)")
    p.add_argument("--budget", nargs="+", type=whole(1), metavar="N", default=None,
                   help="a curve of the sampling learners' budget n (hypotheses drawn per episode, >= 1): every rung "
                        "that takes n is scored once per value (default: each rung's own, 1,000)")
    p.add_argument("--negatives", choices=["hard", "easy", "both"], default="both",
                   help="support negatives: hard, easy or both (default)")
    p.add_argument("--query-negatives", choices=["hard", "easy", "random"], default=None, action=Given,
                   help="negatives of the query set (default: as --negatives)" + OVERRIDE_NOTE)
    hard_mode_option(p, protocol=True)
    p.add_argument("--episodes", type=whole(1), default=5_000,
                   help="test episodes per split and negatives (default 5,000)")
    episode_shape_option(p)
    oracle_options(p, protocol=True)
    p.add_argument("--learner", action="append", metavar="MODEL_DIR|NAME",
                   help="also score a trained model (on its training split) or a reference learner (random, "
                        "prototype) on the ladder's episodes, a column after the rungs; repeatable.  A model is "
                        "scored only on the space it was trained on and on a split with its training split's concepts")
    p.add_argument("--allow-other-space", action="store_true",
                   help="score a model on a space or split other than the one it was trained on (its training "
                        "concepts may then be test concepts)")
    p.add_argument("--published", metavar="NAME|FILE", default=None,
                   help=LazyHelp(lambda: "published model results to correlate with: a benchmark ("
                                 + ", ".join(lazy_registry("published", "published_results")()) + "), a TOML file in "
                                 "the same format, or none (default: the protocol's benchmark, or curi for CURI's "
                                 "splits)"))
    p.add_argument("--n-boot", type=whole(10), default=1000,
                   help="bootstrap resamples for intervals (default 1,000)")
    results_out_option(p)
    p.add_argument("--figures", metavar="DIR", help="write ladder_<negatives>.png/.pdf/.csv (plot_ladder) into DIR")
    p.add_argument("--json", action="store_true", help="print the profiles, spreads and correlations as JSON")
    scheduler_option(p, "the oracles' episode chunks", reads_space=True)


@command("ladder", order=80, arguments=_ladder_arguments, compiles=True,
         help="the oracle ladder: every rung's mAP on the same episodes, from the memoriser to the strong oracle, "
              "and rank correlations with published models")
def cmd_ladder(args) -> int:
    from ..ladder import (format_correlations, format_ladder, ladder_correlations, ladder_profile, ladder_summary,
                         parse_rungs, rung_spreads, strip_draws)
    from ..results import save_results
    oracle_settings(args)
    out_target = check_results_out(args)  # nothing there the toolkit did not write: before any work
    if args.figures:
        check_output_dir(args.figures, "--figures")
    space = open_space(args.dir)
    skipped = []  # default rungs that cannot apply to this space: named, not fatal
    specs = parse_rungs(args.rungs, args.alpha, args.budget, space, skipped=skipped)  # bad rungs: before any work
    _check_chosen_rungs(args, specs)  # no strong oracle, a curve no rung takes: before any work
    protocol = protocol_of(args)
    overrides = protocol_overrides(args, protocol) if protocol is not None else {}
    names = None if not args.split or args.split == ["all"] else list(args.split)
    splits = (protocol_splits(space, protocol, names, args.spec) if protocol is not None
              else splits_for(space, names, args.spec))
    if not splits:
        raise no_splits_error(args, "score", space)
    published = _published_for(args, protocol, space, splits)
    if published is not None:  # against every split the space offers, not only those scored
        every = splits if names is None else (protocol_splits(space, protocol, None, args.spec) if protocol is not None
                                              else splits_for(space, None, args.spec))
        published.check(list(every))
    negatives = ("hard", "easy") if args.negatives == "both" else (args.negatives,)
    check_gap_memory(args.episodes, len(splits) * len(negatives), len(specs) + len(args.learner or ()))
    settings, query_negatives, hard_mode = (
        (oracle_settings(args), args.query_negatives, args.hard_mode) if protocol is None
        else (overrides.get("settings", protocol.settings), overrides.get("query_negatives", protocol.query_negatives),
              overrides.get("hard_mode", protocol.hard_mode)))
    from ..episodes import episode_shapes
    # a split no episode can be drawn from: an error before the rungs -- but a protocol's run of all its splits
    # leaves it out, counted and shown, as gap does
    skip_undrawable = protocol is not None and names is None
    episode_shapes(space, splits, episode_shape(args), skip_undrawable=skip_undrawable)
    models = {}
    if args.learner:
        from ..learners import learners_for_gap
        models = learners_for_gap(space, splits, args.learner, args.seed, allow_other_space=args.allow_other_space)
    t = time.perf_counter()
    with progress_output():
        ds = ladder_profile(space, splits, specs, negatives, args.episodes, settings, args.seed,
                            query_negatives=query_negatives, hard_mode=hard_mode, progress=not args.json,
                            episode_shape=episode_shape(args), scheduler=args.scheduler, models=models,
                            skip_undrawable=skip_undrawable)
    if protocol is not None:
        protocol.record(ds, overrides)
    rows = ladder_summary(ds, n_boot=args.n_boot, seed=args.seed)
    predictors = None
    if published is not None:  # the baseline predictors of difficulty, beside every rung
        from ..difficulty import split_predictors
        predictors = split_predictors(space, splits, episode_shape=episode_shape(args),
                                      chance_levels=protocol.chance_levels() if protocol is not None else None)
    corr = {neg: ladder_correlations(rows, published, neg, n_boot=args.n_boot, seed=args.seed, predictors=predictors)
            for neg in negatives} if published is not None else {}
    if args.out:
        save_results(ds, args.out, target=out_target)
    figures = []
    if args.figures:
        from ..plots import figure_of, plot_ladder
        out = Path(args.figures)
        out.mkdir(parents=True, exist_ok=True)
        for neg in negatives:
            drawn, data = plot_ladder(rows, neg, corr.get(neg), published)
            fig = figure_of(drawn)
            for fmt in ("png", "pdf"):
                path = out / f"ladder_{neg}.{fmt}"
                fig.savefig(path, dpi=150 if fmt == "png" else None, format=fmt,
                            metadata={"CreationDate": None} if fmt == "pdf" else {"Software": None})
                figures.append(str(path))
            data.to_csv(out / f"ladder_{neg}.csv", index=False)
    if args.json:
        print_json({**run_info(ds), "results": rows, "skipped_rungs": [{"rung": n, "why": w} for n, w in skipped],
                     "spread": {neg: rung_spreads(rows, neg) for neg in negatives},
                     "published": None if published is None else {"benchmark": published.benchmark,
                                                                  "measure": published.measure},
                     "correlations": {neg: strip_draws(c) for neg, c in corr.items()}, "figures": figures})
        return 0
    print(format_ladder(rows))
    for name, why in skipped:
        print(f"(rung {name} skipped: {why})")
    for name, rec in (json.loads(ds.attrs.get("excluded", "{}")).get("not_scored") or {}).items():
        print(f"{name}: not scored: {rec['reason']}")
    for neg in negatives:
        spread = rung_spreads(rows, neg)
        print(f"\nspread over splits ({neg}, max − min gap, mAP points): "
              + ", ".join(f"{lb} {v:.1f}" for lb, v in spread.items()))
    for neg, c in corr.items():
        print("\n" + format_correlations(c, f"{published.benchmark} models"))
    print(f"\n{counted(args.episodes, 'test episode')} per cell; "
          + (f"protocol {protocol.name}; " if protocol is not None else "")
          + f"oracle settings {ds.attrs['oracle_settings']}; {time.perf_counter() - t:.1f} s"
          + (f"; results written to {args.out}" if args.out else "")
          + (f"; figures in {args.figures}" if figures else ""))
    return 0


def _check_chosen_rungs(args, specs):
    """The ladder of ``--rungs`` holds the strong oracle (every gap is measured against it), and
    ``--alpha`` and ``--budget`` each reach a rung (a curve no rung takes would be ignored);
    else one line saying what to add."""
    from ..rungs import RungError, parse_rung_text, rungs
    given = " ".join(args.rungs or ())
    if not any(name == "strong" for name, _ in specs):
        raise RungError(f"--rungs {given}: the strong oracle is missing, and every rung's gap is measured against it: "
                        f"add strong (--rungs {given} strong)")
    chosen = [parse_rung_text(str(r)) for r in args.rungs or ()] or [(name, {}) for name, _ in specs]
    for option, values, knob, kind in (("--alpha", args.alpha, "alpha", "learned-prior"),
                                       ("--budget", args.budget, "n", "sampling")):
        if values is not None and not any(knob in rungs.get(n).knobs and knob not in k for n, k in chosen):
            takers = [n for n, r in rungs.items() if knob in r.knobs]
            raise RungError(f"{option} {' '.join(f'{v:g}' for v in values)}: no {kind} rung among --rungs {given} "
                            f"takes it (a rung that takes {knob} without its own [{knob}=...]: "
                            f"{', '.join(takers)}); add one, or leave {option} out")


def _published_for(args, protocol, space, splits):
    """The published results a ladder is compared with: --published NAME|FILE, or by default the
    protocol's (:meth:`~bayes_concepts.protocols.Protocol.published`), else the first registered
    published results whose conditions include every split name (CURI's for CURI's splits); None
    for ``--published none`` or when no default fits."""
    from .. import published as pub
    given = args.published
    if given == "none":
        return None
    if given is not None:
        return pub.load(given) if given in pub.benchmarks() else pub.read(given)
    own = protocol.published() if protocol is not None else None
    if own is not None:
        return own
    for name in pub.published_results.names():
        results = pub.load(name)
        if splits and set(splits) <= set(results.conditions()):
            return results
    return None
