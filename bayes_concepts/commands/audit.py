"""``audit DIR``: audit splits (sizes, leakage, comp gap, coverage, entropies, divergences), with a
one-page difficulty report."""
from __future__ import annotations

import json
import time

from ..options import (ap_tolerance_option, check_gap_memory, check_output_file, command, counted,
                       dropped_conditions_note, episode_shape, episode_shape_option, no_splits_error, open_space,
                       oracle_options, oracle_settings, override_text, progress_output, protocol_of, protocol_option,
                       protocol_overrides, protocol_splits, release_protocol, split_names, split_option, splits_for,
                       whole)


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
    is audited on the splits of protocol ``curi-release`` (with the oracle settings of the
    options; the output says so); a space that offers no split at all is an error."""
    check_gap_memory(args.episodes, 2)  # the least it can need (one split, hard and easy): before any import
    from ..gap import format_audit
    from ..report import audit_frame, audit_splits, format_audit_table, report_format, write_report
    from ..splits import load_spec
    oracle_settings(args)  # a bad --beta or --epsilon is an error before any work
    if args.report:  # a report that cannot be written is an error before any work, not after it
        report_format(args.report)
        check_output_file(args.report, "--report", create_parents=True)  # write_report creates its folders
    space = open_space(args.dir)
    protocol = protocol_of(args)
    overrides = protocol_overrides(args, protocol) if protocol is not None else {}
    if args.split:
        names = split_names(args)
    elif protocol is not None:  # every split of the protocol, and the --spec files' splits
        names = None
    else:  # the --spec files' splits, else every split the space offers (CURI's nine, or its saved specs)
        names = [load_spec(s)["name"] for s in args.spec] if args.spec else None
    auto = protocol is None and not args.spec and release_protocol(space)  # a release-grammar space
    if protocol is not None:
        splits = protocol_splits(space, protocol, names, args.spec)
    else:
        splits = protocol_splits(space, auto, names) if auto else splits_for(space, names, args.spec)
    if not splits:
        raise no_splits_error(args, "audit", space)
    check_gap_memory(args.episodes, 2 * len(splits))
    settings = overrides.get("settings", protocol.settings) if protocol is not None else oracle_settings(args)
    episodes = ({"query_negatives": protocol.query_negatives, "hard_mode": protocol.hard_mode}
                if protocol is not None else {})
    t = time.perf_counter()
    reports = audit_splits(space, splits, args.episodes, settings, args.seed, episode_shape=episode_shape(args),
                           **episodes)
    print(format_audit(reports[0]) if len(reports) == 1 else format_audit_table(audit_frame(reports)))
    if len(reports) > 1:
        from ..report import episode_note
        for line in episode_note(reports):
            print(line)
    if protocol is not None and protocol.left_out_note(splits):
        print(protocol.left_out_note(splits))
    for line in dropped_conditions_note(splits):
        print(line)
    ladder_rows = None
    if args.ladder:
        from ..ladder import format_ladder, ladder_profile, ladder_summary
        with progress_output():
            ds = ladder_profile(space, splits, None, ("hard",), args.episodes, settings, args.seed,
                                progress=True, episode_shape=episode_shape(args), **episodes)
        ladder_rows = ladder_summary(ds, seed=args.seed)
        print("\nthe oracle ladder (hard negatives):\n" + format_ladder(ladder_rows))
    if args.report:
        title = f"Difficulty report: protocol {protocol.name}" if protocol is not None else None
        paths = write_report(space, reports, args.report, settings=settings, seed=args.seed, title=title,
                             ladder=ladder_rows)
        print(f"\nreport: {paths[0]}" + (f" (+ {counted(len(paths) - 1, 'figure')})" if len(paths) > 1 else ""))
    print(f"\n{len(reports)} split(s)"
          + (f" of protocol {auto.name} ({args.dir} was built with CURI's release grammar; oracle settings as "
             "the options give them)" if auto else "")
          + (f" of protocol {protocol.name}" + (f" overridden by {override_text(args)}" if overrides else "")
             + f"; oracle settings {json.dumps(settings.as_dict(), sort_keys=True)}" if protocol is not None else "")
          + f", {args.episodes:,} test episodes per split and negatives; {time.perf_counter() - t:.1f} s")
    return 0
