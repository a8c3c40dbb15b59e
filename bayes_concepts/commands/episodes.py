"""``episodes DIR``: sample episodes of a split into a file; ``episodes show FILE INDEX``: one of them."""
from __future__ import annotations

from ..errors import BayesConceptsError
from ..command_registry import command
from ..options import Given, whole
from ..preflight import check_output_file
from ..run_args import (cell_options, episode_shape, episode_shape_option, hard_mode_option, one_split, open_space, protocol_option,
                        resolve_args, split_option)
from ..terminal import counted


def _episodes_arguments(p):
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    split_option(p, "the split whose concepts the episodes are drawn for (one)", required=True)
    p.add_argument("--spec", nargs="+", metavar="FILE", help="split spec files (TOML) defining more splits")
    p.add_argument("--negatives", choices=["hard", "easy"], required=True,
                   help="negatives of the support set: hard (true under a consistent alternative) or easy (random)")
    p.add_argument("--query-negatives", choices=["hard", "easy", "random"], default=None, action=Given,
                   help="negatives of the query set (default: as --negatives, with --protocol the protocol's; "
                        "random: CURI's released code)")
    hard_mode_option(p, protocol=True)
    protocol_option(p, help_text="draw from a split of this protocol: --split names one of its splits (a CLOSURE "
                                 "family such as embed_spa_mat, a ConceptWorld condition), the episodes drawn as its "
                                 "comp gap draws them (query negatives, hard-negative mode) unless --query-negatives "
                                 "or --hard-mode are given; the file records the protocol")
    p.add_argument("--n", type=whole(1), required=True, help="episodes to draw")
    episode_shape_option(p)
    p.add_argument("--side", choices=["train", "val", "test"], default="test",
                   help="which concepts of the split (default test)")
    p.add_argument("--seed", type=whole(0), default=0, help="seed of the episodes (a whole number >= 0; default 0)")
    p.add_argument("--out", required=True, metavar="FILE.npz", help="the episodes file to write")
    p.add_argument("--force", action="store_true",
                   help="let --out replace an episodes file bayes-concepts wrote earlier (a file it did not write is "
                        "never replaced)")


@command("episodes", order=60, arguments=_episodes_arguments, compiles=True,
         help="sample episodes (or: episodes show FILE INDEX)")
def cmd_episodes(args) -> int:
    from ..episodes import check_episodes_file, sample_episodes
    from ..scale import check_memory, episodes_bytes
    check_output_file(args.out, "--out")
    out_target = check_episodes_file(args.out, args.force, "--out")  # nothing there the toolkit did not write
    check_memory(episodes_bytes(args.n), f"--n {args.n}", "draw fewer episodes")
    name = one_split(args, "an episodes file holds the episodes of one split")
    run = resolve_args(args, splits=[name])  # the protocol's episodes, unless given here
    eps = run.sample_episodes(name, side=args.side, negatives=args.negatives, n=args.n, seed=args.seed)
    eps.save(args.out, target=out_target)
    topup = eps.meta["support_topup"] + eps.meta["query_topup"]
    print(f"wrote {counted(len(eps), args.negatives + '-negative episode')} of {name}/{args.side} to "
          f"{args.out} ({counted(len(set(eps.concept.tolist())), 'distinct concept')}; "
          f"{counted(topup, 'random top-up negative')})")
    return 0


def _describe_scene(scene: dict) -> str:
    """Objects as 'large red metal cube @(3,5)': every attribute but the location, then x, y; an
    object with a 3-D position (a scene with relations) as 'red metal cube @(-1.33,0.87)', its
    ground-plane coordinates."""
    def one(o):
        words = " ".join(str(v) for k, v in o.items() if k not in ("x", "y", "3d_coords"))
        if "x" in o and "y" in o:
            return words + f" @({o['x']},{o['y']})"
        xyz = o.get("3d_coords")
        return words + (f" @({xyz[0]:.2f},{xyz[1]:.2f})" if xyz else "")
    return "; ".join(one(o) for o in scene["objects"])


def _check_episodes_file(path):
    """An episodes file is an ``.npz`` (a zip archive): anything else -- a scene file, a
    ``.npy`` array, text -- is one line saying what the file is instead."""
    from ..episodes import EpisodeError
    from ..text_files import zip_file_kind
    kind = zip_file_kind(path, "episodes file", EpisodeError)
    if kind == "zip":
        return
    if kind == "JSON text":
        kind = "JSON text (a scene file?)"
    raise EpisodeError(f"{path}: not an episodes file (expected the .npz that 'bayes-concepts episodes --out' "
                       f"writes; this is {kind})")


def _show_arguments(p):
    p.add_argument("file", metavar="FILE.npz", help="an episodes file written by 'bayes-concepts episodes'")
    p.add_argument("index", type=whole(0), help="the episode's index (0-based)")
    p.add_argument("--space", metavar="DIR", help="the space the episodes came from (default: from --space)")


@command("episodes show", order=10, arguments=_show_arguments, own_parser=True, help=None,
         description="one episode of an episodes file")
def cmd_episodes_show(args) -> int:
    from ..episodes import Episodes
    _check_episodes_file(args.file)
    eps = Episodes.load(args.file)
    if not 0 <= args.index < len(eps):
        raise BayesConceptsError(f"episode index {args.index} out of range ({counted(len(eps), 'episode')} in "
                                 f"{args.file})")
    space = open_space(args.space) if args.space else None
    if space is not None:
        eps.check_space(space, args.file)
    e, c = args.index, int(eps.concept[args.index])
    meta = eps.meta
    print(f"episode {e} of {args.file}: split {meta.get('split')}/{meta.get('side')}, {meta.get('negatives')} "
          f"negatives (query: {meta.get('query_negatives')}), seed {meta.get('seed')}")
    print(f"concept #{c}" + (f": {space.program(c).readable}   ({space.programs[c]})" if space else
                              "  (pass --space DIR for programs and scenes)"))
    for side in ("support", "query"):
        print(f"\n{side}:")
        for k in range(getattr(eps, f"{side}_scenes").shape[1]):
            sid = int(getattr(eps, f"{side}_scenes")[e, k])
            lab = int(getattr(eps, f"{side}_labels")[e, k])
            flags = []
            if getattr(eps, f"{side}_topup")[e, k]:
                flags.append("random top-up")
            if getattr(eps, f"{side}_relabelled")[e, k]:
                flags.append("random, relabelled positive")
            src = int(getattr(eps, f"{side}_source")[e, k])
            if src >= 0:
                flags.append(f"hard negative via #{src}" + (f" {space.program(src).readable}" if space else ""))
            scene = _describe_scene(space.scene(sid)) if space else ""
            print(f"  {'+' if lab else '-'} scene {sid:>7}  {scene}" + (f"   [{', '.join(flags)}]" if flags else ""))
    return 0


def _export_arguments(p):
    cell_options(p, "the splits whose test episodes to export, or 'all' (default), as gap scores them",
                 "support negatives: hard, easy or both (default), as gap's",
                 "negatives of the query set (default: as --negatives, with --protocol the protocol's)")
    hard_mode_option(p, protocol=True)
    protocol_option(p, help_text="export the episodes of this protocol's splits, drawn as its comp gap draws them "
                                 "(query negatives, hard-negative mode) unless --query-negatives or --hard-mode "
                                 "are given")
    p.add_argument("--episodes", type=whole(1), required=True,
                   help="test episodes per split and negatives: the --episodes of the gap, ladder or audit run "
                        "that scores the predictions")
    episode_shape_option(p)
    p.add_argument("--seed", type=whole(0), default=0,
                   help="seed of the episodes: the --seed of the run that scores the predictions (default 0)")
    p.add_argument("--render", metavar="MODALITY", default=None,
                   help="also store the exported scenes rendered in this modality (image: uint8 pictures of "
                        "the default size; sound: clips), array 'pictures'")
    p.add_argument("--out", required=True, metavar="FILE.npz", help="the export file to write")
    p.add_argument("--answers", metavar="FILE.npz", default=None,
                   help="also write the query labels (withheld from the export) to this file, for one's own checks")
    p.add_argument("--force", action="store_true",
                   help="let --out and --answers replace files bayes-concepts wrote earlier (a file it did not "
                        "write is never replaced)")


@command("episodes export", order=20, arguments=_export_arguments, own_parser=True, help=None, compiles=True,
         description="export the test episodes a gap, ladder or audit run scores (ids, support labels, the test "
                     "bank, the scenes as JSON), for a model outside the toolkit; its predictions file is scored "
                     "with gap/ladder/audit --predictions FILE")
def cmd_episodes_export(args) -> int:
    from ..export import check_export_file, export_episodes, write_export
    from pathlib import Path
    if args.answers is not None and Path(args.answers).resolve() == Path(args.out).resolve():
        raise BayesConceptsError(f"--answers {args.answers}: the same file as --out; give another file")
    check_output_file(args.out, "--out")
    target = check_export_file(args.out, args.force, "--out")  # nothing there the toolkit did not write
    answers_target = None
    if args.answers is not None:
        check_output_file(args.answers, "--answers")
        answers_target = check_export_file(args.answers, args.force, "--answers", answers=True)
    run = resolve_args(args, "export")  # the protocol's episodes, unless given here (as gap draws them)
    negatives = ("hard", "easy") if args.negatives == "both" else (args.negatives,)
    ex = export_episodes(run.space, run.splits, negatives, args.episodes, args.seed, episode_shape=run.episode_shape,
                         skip_undrawable=run.skip_undrawable,
                         protocol=run.protocol.name if run.protocol is not None else None, modality=args.render,
                         **run.episode_options)
    written = write_export(ex, args.out, target=target, answers=args.answers, answers_target=answers_target)
    ident = ex.identity
    print(f"wrote {counted(len(ident['cells']), 'cell')} of {counted(args.episodes, 'episode')} "
          f"({', '.join(sorted({c['split'] for c in ident['cells']}))}; {'/'.join(negatives)} negatives), the test "
          f"bank ({len(ex.test_bank):,} scenes) and {counted(len(ex.scene_ids), 'scene')} to {args.out}"
          + (f"; query labels to {written[1]}" if len(written) > 1 else "")
          + f"; episodes sha256 {ident['episodes_sha256'][:12]}…")
    for name in ident["not_scored"]:
        print(f"{name}: not exported: no episode can be drawn for it (gap leaves it out too)")
    return 0
