"""``ladder DIR``: the oracle ladder, every rung's mAP on the same episodes, and rank correlations
with published models."""
from __future__ import annotations

import time

from ..command_registry import command
from ..options import (Given, LazyHelp, describe_choices, finite, lazy_registry, predictions_option, results_out_option,
                       whole)
from ..preflight import check_before_work, check_gap_memory
from ..run_args import (OVERRIDE_NOTE, episode_shape_option, hard_mode_option, open_space, oracle_options,
                        protocol_option, resolve_args, scheduler_option)
from ..terminal import print_json, progress_output


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
    predictions_option(p)
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
    from ..ladder import parse_rungs
    out_target = check_before_work(args, folders={"--figures": args.figures})
    space = open_space(args.dir)
    skipped = []  # default rungs that cannot apply to this space: named, not fatal
    specs = parse_rungs(args.rungs, args.alpha, args.budget, space, skipped=skipped)  # bad rungs: before the splits
    _check_chosen_rungs(args, specs)  # no strong oracle, a curve no rung takes: before any work
    run = resolve_args(args, splits=args.split, space=space)
    published = run.published(args.published)  # against every split the run offers, not only those scored
    negatives = ("hard", "easy") if args.negatives == "both" else (args.negatives,)
    check_gap_memory(args.episodes, len(run.splits) * len(negatives),
                     len(specs) + len(args.learner or ()) + len(args.predictions or ()))
    learners = run.learners(args.learner, args.seed, args.allow_other_space)
    learners.update(run.predictions(args.predictions, args.name, negatives, args.episodes, args.seed, taken=learners))
    t = time.perf_counter()
    with progress_output():
        ds = run.ladder(specs, negatives, args.episodes, args.seed, learners=learners, progress=not args.json,
                        scheduler=args.scheduler, allow_other_space=args.allow_other_space)
    report = run.ladder_report(ds, published, n_boot=args.n_boot, seed=args.seed)
    if args.out:
        from ..results import save_results
        save_results(ds, args.out, target=out_target)
    figures = []
    if args.figures:
        from ..plots import write_ladder_figures
        figures = write_ladder_figures(report["rows"], negatives, report["correlations"], published, args.figures)
    if args.json:
        print_json(run.ladder_json(ds, report, skipped, figures))
        return 0
    print("\n".join(run.ladder_lines(ds, report, skipped, seconds=time.perf_counter() - t, out=args.out,
                                     figures=args.figures if figures else None)))
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
