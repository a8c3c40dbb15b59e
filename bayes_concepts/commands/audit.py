"""``audit DIR``: audit splits (sizes, leakage, comp gap, coverage, entropies, divergences), with a
one-page difficulty report."""
from __future__ import annotations

import json
import time

from ..command_registry import command
from ..options import whole
from ..preflight import check_gap_memory, check_output_file
from ..run_args import (ap_tolerance_option, episode_shape_option, oracle_options, override_text, protocol_option,
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
    from ..gap import format_audit
    from ..report import audit_frame, episode_note, format_audit_table, report_format, write_report
    from ..splits import load_spec
    if args.report:  # a report that cannot be written is an error before any work, not after it
        report_format(args.report)
        check_output_file(args.report, "--report", create_parents=True)  # write_report creates its folders
    # --split, else the --spec files' splits (without --protocol), else every split on offer
    names = args.split or ([load_spec(s)["name"] for s in args.spec] if args.spec and not args.protocol else None)
    run = resolve_args(args, "audit", splits=names)
    check_gap_memory(args.episodes, 2 * len(run.splits))
    t = time.perf_counter()
    reports = run.audit(args.episodes, args.seed)
    print(format_audit(reports[0]) if len(reports) == 1 else format_audit_table(audit_frame(reports)))
    for line in [*(episode_note(reports) if len(reports) > 1 else ()), *run.notes()]:
        print(line)
    ladder_rows = None
    if args.ladder:
        from ..ladder import format_ladder, ladder_summary
        with progress_output():
            ds = run.ladder(None, ("hard",), args.episodes, args.seed, progress=True)
        ladder_rows = ladder_summary(ds, seed=args.seed)
        print("\nthe oracle ladder (hard negatives):\n" + format_ladder(ladder_rows))
    if args.report:
        paths = write_report(run.space, reports, args.report, settings=run.settings, seed=args.seed, title=run.title,
                             ladder=ladder_rows)
        print(f"\nreport: {paths[0]}" + (f" (+ {counted(len(paths) - 1, 'figure')})" if len(paths) > 1 else ""))
    how = override_text(args, run)
    print(f"\n{len(reports)} split(s)" + (f" of {how}" if how else "")
          + f"; oracle settings {json.dumps(run.settings.as_dict(), sort_keys=True)}"
          + f", {args.episodes:,} test episodes per split and negatives; {time.perf_counter() - t:.1f} s")
    return 0
