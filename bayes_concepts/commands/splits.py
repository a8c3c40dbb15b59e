"""``splits DIR``: the sizes and leakage of a space's splits; ``splits search``: the hardest fair split."""
from __future__ import annotations

import json
import time
from pathlib import Path

from ..command_registry import command
from ..options import finite, whole
from ..preflight import check_output_file
from ..run_args import episode_shape_option, protocol_option, resolve_args
from ..terminal import log_line


def _splits_arguments(p):
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    p.add_argument("--spec", nargs="+", metavar="FILE", help="extra split spec files (TOML)")
    protocol_option(p)
    p.add_argument("--json", action="store_true", help="print the concept ids of every side as JSON")


@command("splits", order=50, arguments=_splits_arguments,
         help="train/val/test sizes and synonym leakage of every split")
def cmd_splits(args) -> int:
    """Sizes and leakage of the space's splits.  Without --protocol and --spec, a space built
    with CURI's release grammar lists the splits of protocol ``curi-release`` (and says so), as
    every command does; a space that offers no split at all is an error."""
    from ..splits import splits_json, splits_table
    run = resolve_args(args, "list", splits=None)
    if args.json:
        print(json.dumps(splits_json(run.space, run.splits)))
    else:
        print(splits_table(run.space, run.splits))
        if run.chosen_by_space:
            print(f"splits of {run.describe()}")
    return 0


def _search_arguments(p):
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    p.add_argument("--objective", default="gap", metavar="gap|gap:RUNG|compound-divergence",
                   help="what to maximise: the hard-negative mAP gap (a proxy on a fixed pool of episodes in the "
                        "loop, a proper evaluation at the end), the gap of any rung of the oracle ladder "
                        "(gap:atom, gap:compound, gap:learned_prior[alpha=10], ...: strong minus that rung; every "
                        "swap re-scores the whole pool, so give fewer --pool-episodes) or the compound divergence "
                        "(default gap, the memoriser's)")
    p.add_argument("--pairs-out", metavar="DIR",
                   help="pair spaces: also write the split found as pair files, DIR/train_pairs.txt and "
                        "DIR/test_pairs.txt (\"attribute object\" per line), for a CZSL codebase")
    p.add_argument("--constraint", action="append", metavar="NAME<=VALUE",
                   help="a bound the split must meet: atom-divergence or compound-divergence, with <= or >= "
                        "(repeatable; default atom-divergence<=0.02)")
    p.add_argument("--test-share", type=finite, default=0.2,
                   help="share of the concepts on the test side (default 0.2)")
    p.add_argument("--share-tolerance", type=finite, default=0.01,
                   help="how far the test share may stray from --test-share (default 0.01)")
    p.add_argument("--method", choices=["anneal", "greedy"], default="anneal",
                   help="simulated annealing (default) or greedy ascent over swaps of synonym classes")
    p.add_argument("--iterations", type=whole(1), default=None,
                   help="steps of the search; with it the result depends only on the seed (default: until --budget)")
    p.add_argument("--budget", type=finite, default=300.0, metavar="SECONDS",
                   help="wall-clock seconds of the search loop at most (default 300)")
    p.add_argument("--pool-episodes", type=whole(100), default=20_000,
                   help="episodes of the gap proxy's fixed pool (default 20,000)")
    p.add_argument("--episodes", type=whole(1), default=2000,
                   help="test episodes per negatives of the final audit of the split found (default 2000)")
    episode_shape_option(p, "of the gap proxy's pool, the divergences' weights and the final audit, and written "
                             "into the spec as its [episodes] table")
    p.add_argument("--name", default="searched", help="the split's name in the spec (default searched)")
    p.add_argument("--seed", type=whole(0), default=0, help="seed of the search, its pool and the audit (default 0)")
    p.add_argument("--out", required=True, metavar="SPEC.toml", help="the split spec to write")


@command("splits search", order=10, arguments=_search_arguments, compiles=True, own_parser=True, help=None,
         description="search the held-out set (whole synonym classes) that maximises the comp gap or the compound "
                     "divergence under constraints, and write its split spec with its audit")
def cmd_splits_search(args) -> int:
    """``splits search``: run :func:`bayes_concepts.split_search.search_split`, audit the split
    found, write its spec (the audit as comments on top) and check that the file makes the same
    split again."""
    import re
    from ..gap import format_audit
    from ..params import SEARCH_PARAMS, check_param
    from ..split_search import SearchError, objective_rung, parse_constraint, spec_toml
    from ..splits import make_split
    objective_rung(args.objective)  # a bad objective before any work
    constraints = [parse_constraint(c) for c in (args.constraint or ["atom-divergence<=0.02"])]
    for option, name, value in (("--test-share", "test_share", args.test_share),
                                 ("--share-tolerance", "share_tolerance", args.share_tolerance),
                                 ("--budget", "budget_s", args.budget)):  # as search_split declares them
        check_param(option, value, SEARCH_PARAMS[name], SearchError)
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$", args.name):
        raise SearchError(f"--name {args.name!r}: letters, digits, '_', '.' or '-'")
    check_output_file(args.out, "--out", create_parents=True)
    run = resolve_args(args, splits={})  # the oracle settings and episode shape (the search makes its own split)
    space = run.space
    objective_rung(args.objective, space)  # a rung that cannot apply to this space
    if args.pairs_out:
        from ..suites.pairs import check_pair_files_target
        check_pair_files_target(space, args.pairs_out)
    t = time.perf_counter()
    log_line(f"searching {args.dir}: objective {args.objective}, constraints "
         f"{', '.join(f'{a}{b}{c:g}' for a, b, c in constraints)}, test share {args.test_share:g} "
         f"(± {args.share_tolerance:g}), {args.method}, seed {args.seed}")
    result = run.search_split(args.objective, test_share=args.test_share, share_tolerance=args.share_tolerance,
                              constraints=constraints, seed=args.seed, iterations=args.iterations, budget_s=args.budget,
                              method=args.method, pool_episodes=args.pool_episodes, name=args.name, log=log_line)
    log_line(f"auditing the split found ({args.episodes:,} test episodes per negatives) ...")
    report = run.audit_split(result.split, n_episodes=args.episodes, seed=args.seed)
    text = format_audit(report)
    from ..gap import ci_text
    hard = next(r for r in report["gap"] if r["negatives"] == "hard")
    summary = [f"split search ({result.settings['method']}, seed {args.seed}) on {args.dir}: objective "
               f"{args.objective}, {result.iterations:,} steps ({result.accepted:,} accepted) in "
               f"{result.seconds:.0f} s",
               f"constraints: {', '.join(result.settings['constraints']) or 'none'}; test share "
               f"{result.test_share:.3f} (asked {args.test_share:g} ± {args.share_tolerance:g})",
               f"in the loop: {args.objective} {result.value:.4g}"
               + (" (proxy on the fixed pool)" if args.objective.startswith("gap") else "")
               + f"; audit: hard-negative mAP gap {hard['gap']['map']:.1f} {ci_text(*hard['gap']['map_ci'])}"]
    body = spec_toml(result.spec, [*summary, "", *text.splitlines()])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    tmp.write_text(body, encoding="utf-8")
    tmp.replace(out)
    again = make_split(space, out)
    if again.concepts_sha256() != result.split.concepts_sha256():  # the spec must make the split it describes
        raise SearchError(f"{out}: the spec written does not make the split found again (a bug: please report it)")
    print(text)
    print("\n" + "\n".join(summary))
    if args.pairs_out:
        from ..suites.pairs import write_pair_files
        written = write_pair_files(space, result.split, args.pairs_out)
        print("pair files written: " + ", ".join(f"{p} ({n:,} pairs)" for p, n in written))
    print(f"spec written to {out} (bayes-concepts gap {args.dir} --spec {out} --split {result.split.name}); "
          f"{time.perf_counter() - t:.0f} s in all")
    return 0
