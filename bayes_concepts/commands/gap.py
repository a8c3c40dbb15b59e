"""``gap DIR``: the compositionality gap of splits, strong vs weak oracle."""
from __future__ import annotations

import time

from ..command_registry import command
from ..options import predictions_option, results_out_option, whole
from ..preflight import check_before_work
from ..run_args import (OVERRIDE_NOTE, ap_tolerance_option, cell_options, episode_shape_option, hard_mode_option,
                        oracle_options, protocol_option, resolve_args, scheduler_option)
from ..terminal import print_json, progress_output


def _gap_arguments(p):
    cell_options(p, "the splits to score, or 'all' (default)", "support negatives: hard, easy or both (default)",
                 "negatives of the query set (default: as --negatives; random: CURI's released code)" + OVERRIDE_NOTE)
    hard_mode_option(p, protocol=True)
    p.add_argument("--episodes", type=whole(1), default=20_000,
                   help="test episodes per split and negatives (default 20,000)")
    episode_shape_option(p)
    protocol_option(p)
    p.add_argument("--learner", action="append", metavar="MODEL_DIR|NAME",
                   help="also score a trained model (scored on its training split) or a reference learner "
                        "(random, prototype) on the same episodes; repeatable.  A model is scored only on the "
                        "space it was trained on (the manifest sha256 its card records) and on a split with its "
                        "training split's concepts; anything else is an error")
    p.add_argument("--allow-other-space", action="store_true",
                   help="score a model on a space or split other than the one it was trained on (its training "
                        "concepts may then be test concepts); the results record the override")
    predictions_option(p)
    oracle_options(p, protocol=True)
    ap_tolerance_option(p)
    results_out_option(p)
    p.add_argument("--parts", action="store_true",
                   help="also score the atom and the compound oracle (concepts whose atoms / atoms and compounds "
                        "all occur in train concepts) on the same episodes and split each gap into novel atoms, novel "
                        "compounds and novel arrangements (about twice the oracles' work)")
    p.add_argument("--json", action="store_true", help="print the table, the settings and the seed as JSON")
    scheduler_option(p, "the oracles' episode chunks", reads_space=True)


@command("gap", order=70, arguments=_gap_arguments, compiles=True,
         help="the compositionality gap of splits: strong vs weak oracle")
def cmd_gap(args) -> int:
    n_learners = (4 if args.parts else 2) + len(args.learner or ()) + len(args.predictions or ())
    negatives = ("hard", "easy") if args.negatives == "both" else (args.negatives,)
    out_target = check_before_work(args, len(negatives), n_learners)  # the least it can need (one split)
    run = resolve_args(args)
    learners = run.learners(args.learner, args.seed, args.allow_other_space)
    learners.update(run.predictions(args.predictions, args.name, negatives, args.episodes, args.seed, taken=learners))
    t = time.perf_counter()
    with progress_output():
        ds = run.gap(negatives, args.episodes, args.seed, learners=learners, progress=not args.json,
                     scheduler=args.scheduler, allow_other_space=args.allow_other_space, parts=args.parts)
    if args.out:
        from ..results import save_results
        save_results(ds, args.out, target=out_target)
    if args.json:
        print_json(run.gap_json(ds, seed=args.seed))
        return 0
    print("\n".join(run.gap_lines(ds, seed=args.seed, seconds=time.perf_counter() - t, out=args.out)))
    return 0
