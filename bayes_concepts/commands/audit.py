"""``audit DIR``: audit splits (sizes, leakage, comp gap, coverage, entropies, divergences), with a
one-page difficulty report."""
from __future__ import annotations

import time

from ..command_registry import command
from ..options import predictions_option, whole
from ..preflight import check_gap_memory, check_output_file
from ..run_args import (ap_tolerance_option, episode_shape_option, oracle_options, protocol_option,
                        resolve_args, split_option)
from ..terminal import counted, progress_output


def _audit_arguments(p):
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    p.add_argument("--spec", nargs="+", metavar="FILE",
                   help="split spec files (default: the space's own splits; with --protocol, added to its splits)")
    split_option(p, "audit only these splits (or 'all'); default: the --spec splits, else all (with --protocol: "
                    "the protocol's and the --spec splits)")
    p.add_argument("--episodes", type=whole(1), default=2000,
                   help="test episodes per split and negatives (default 2000)")
    episode_shape_option(p)
    p.add_argument("--report", metavar="OUT.md|OUT.html",
                   help="also write a one-page difficulty report (Markdown with PNGs, or one HTML file)")
    p.add_argument("--ladder", action="store_true",
                   help="also score the oracle ladder's default rungs on the same hard-negative episodes and print "
                        "(and, with --report, show) each split's ladder profile: where it stops being hard")
    protocol_option(p)
    predictions_option(p)
    oracle_options(p, protocol=True)
    ap_tolerance_option(p)


@command("audit", order=110, arguments=_audit_arguments, compiles=True,
         help="audit splits: sizes, leakage, comp gap, coverage, entropies, divergences")
def cmd_audit(args) -> int:
    """Audit splits.  With --protocol, the protocol's splits (and any --spec splits) with its
    oracle settings and query negatives (an oracle option given explicitly replaces the
    protocol's value).  Without --protocol and --spec, a space built with CURI's release grammar
    is audited as protocol ``curi-release`` (its splits and oracle settings; the output says
    so), as every command does; a space that offers no split at all is an error."""
    check_gap_memory(args.episodes, 2)  # the least it can need (one split, hard and easy): before any import
    from ..report import report_format, write_report
    from ..splits import load_spec
    if args.report:  # a report that cannot be written is an error before any work, not after it
        report_format(args.report)
        check_output_file(args.report, "--report", create_parents=True)  # write_report creates its folders
    # --split, else the --spec files' splits (without --protocol), else every split on offer
    names = args.split or ([load_spec(s)["name"] for s in args.spec] if args.spec and not args.protocol else None)
    run = resolve_args(args, "audit", splits=names)
    check_gap_memory(args.episodes, 2 * len(run.splits))
    learners = run.predictions(args.predictions, args.name, ("hard", "easy"), args.episodes, args.seed)
    t = time.perf_counter()
    reports = run.audit(args.episodes, args.seed, learners=learners)
    print("\n".join(run.audit_lines(reports)))
    ladder_rows = None
    if args.ladder:
        with progress_output():
            ds = run.ladder(None, ("hard",), args.episodes, args.seed, progress=True)
        report = run.ladder_report(ds, seed=args.seed)
        ladder_rows = report["rows"]
        print("\nthe oracle ladder (hard negatives):\n" + run.ladder_lines(ds, report)[0])
    if args.report:
        paths = write_report(run.space, reports, args.report, settings=run.settings, seed=args.seed, title=run.title,
                             ladder=ladder_rows)
        print(f"\nreport: {paths[0]}" + (f" (+ {counted(len(paths) - 1, 'figure')})" if len(paths) > 1 else ""))
    print(run.audit_footer(len(reports), args.episodes, time.perf_counter() - t))
    return 0
