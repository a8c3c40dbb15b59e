"""``ladder-validate DIR --published FILE``: does the ladder predict difficulty on your conditions?

Every rung and every baseline predictor (compound and atom divergence, the test concepts'
length and number, the unseen-token share, the chance level where the protocol gives it, the
memoriser) ranked against the published difficulty of many conditions, with ties as ties,
the direct test where a rung singles out one condition, and each rung's ρ minus the best
predictor's and compound divergence's."""
from __future__ import annotations

from ..command_registry import command
from ..options import LazyHelp, describe_choices, lazy_registry, whole
from ..run_args import protocol_option, resolve_args
from ..terminal import print_json, progress_output


def _arguments(p):
    p.add_argument("dir", metavar="DIR", help="a saved concept space")
    p.add_argument("--published", metavar="NAME|FILE", required=True,
                   help="the published results of your conditions: a TOML file in the published-results format "
                        "(hypotheses/published/README.md) or a built-in benchmark's name; at least 4 of its "
                        "conditions must be splits of the space")
    p.add_argument("--split", nargs="+", metavar="NAME", default=None,
                   help="splits to score (default: all of the protocol's or the space's)")
    p.add_argument("--spec", nargs="+", metavar="FILE", help="split spec files (TOML): your conditions")
    protocol_option(p)
    p.add_argument("--rungs", nargs="+", metavar="RUNG", default=None,
                   help=LazyHelp(lambda: "rungs to score (default: memoriser compound atom bounded_length "
                                          "learned_prior strong); registered: "
                                          + describe_choices(lazy_registry("rungs", "rungs")())))
    p.add_argument("--negatives", choices=["hard", "easy"], default="hard", help="support negatives (default hard)")
    p.add_argument("--measure", default=None, help="the published measure to rank (default: the file's own)")
    p.add_argument("--episodes", type=whole(1), default=1_000, help="test episodes per condition (default 1,000)")
    p.add_argument("--n-boot", type=whole(10), default=2000, help="bootstrap replicates (default 2,000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the episodes and the bootstrap (default 0)")
    p.add_argument("--json", action="store_true", help="print the table as JSON")


@command("ladder-validate", order=81, arguments=_arguments, compiles=True,
         help="does the ladder predict difficulty? every rung and baseline predictor ranked against published "
              "results on your conditions")
def cmd_ladder_validate(args) -> int:
    from .. import published as pub
    from ..ladder import format_correlations
    from ..validation import ValidationError, validate_conditions
    published = pub.load(args.published) if args.published in pub.benchmarks() else pub.read(args.published)
    run = resolve_args(args, splits=args.split)
    space, splits = run.space, run.splits
    known = set(map(str, published.conditions()))
    common = [s for s in splits if s in known]
    if len(common) < 4:  # before any work
        raise ValidationError(f"{args.published}: {len(common)} of its conditions are splits here "
                              f"({', '.join(common) or 'none'}); a validation needs at least 4")
    rungs = args.rungs or ["memoriser", "compound", "atom", "bounded_length", "learned_prior", "strong"]
    options = {"settings": run.settings, **run.episode_options}
    with progress_output():
        out = validate_conditions(space, {s: splits[s] for s in common}, published, rungs=rungs,
                                  negatives=args.negatives, n_episodes=args.episodes, seed=args.seed,
                                  n_boot=args.n_boot, measure=args.measure, progress=not args.json,
                                  chance_levels=run.chance_levels(), **options)
    if args.json:
        print_json(out)
        return 0
    print(format_correlations(out, f"{published.benchmark} models"))
    left = [s for s in splits if s not in known]
    if left:
        print(f"  ({len(left)} split(s) without published numbers, not scored: {', '.join(left)})")
    return 0
