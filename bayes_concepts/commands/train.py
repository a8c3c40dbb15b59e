"""``train DIR``: meta-train a neural baseline (CURI's prototypical networks) on a split."""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import BayesConceptsError
from ..command_registry import command
from ..options import Given, LazyChoices, lazy_registry, whole
from ..preflight import check_output_dir
from ..run_args import hard_mode_option, one_split, open_space, protocol_option, resolve_args, split_option
from ..terminal import caused_by_interrupt, counted


def _train_arguments(p):
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    split_option(p, "train on this split's train concepts, validate on its val concepts (one; with --protocol: one "
                    "of the protocol's splits)", required=True)
    p.add_argument("--spec", nargs="+", metavar="FILE", help="split spec files (TOML) defining more splits")
    p.add_argument("--learner", required=True, metavar="ENCODER-POOLING",
                   help="architecture: schema-average, schema-concat, schema-relnet or schema-transformer "
                        "(image-... and sound-... likewise); with --modality, just the pooling")
    p.add_argument("--modality", choices=LazyChoices(lazy_registry("learners.encoders", "encoders")), metavar="ENCODER",
                   help="how scenes are shown to the learner (the encoder part of --learner)")
    p.add_argument("--out", required=True, metavar="MODEL_DIR",
                   help="directory for the weights and card (the card records the space's manifest sha256 and "
                        "the split's concept sets: gap scores the model there only)")
    p.add_argument("--negatives", choices=["hard", "easy"], default="hard", help="negatives of the training episodes (default hard)")
    p.add_argument("--query-negatives", choices=["hard", "easy", "random"], default=None, action=Given,
                   help="negatives of the query sets (default: as --negatives; with --protocol, the protocol's)")
    hard_mode_option(p, protocol=True)
    protocol_option(p, help_text="train on a split of this protocol: --split names one of its splits (a CLOSURE "
                                 "family such as embed_spa_mat, a ConceptWorld condition), episodes drawn as its comp "
                                 "gap draws them (query negatives, hard-negative mode) unless --query-negatives or "
                                 "--hard-mode are given; the card records the protocol")
    p.add_argument("--budget", metavar="TIME",
                   help="wall-clock budget of this command, e.g. 90s, 30m, 2h (default 30m unless --steps).  "
                        "It counts from the command's start (loading the space included) to the written model; with "
                        "--resume it is this run's own budget, from this command's start (the runs before do not "
                        "count against it, and the run makes a new warm-up and cosine decay over it).  A "
                        "training step starts only when it and the closing validation and save are expected to end "
                        "within the budget, each expected to take as long as the slowest of its recent runs, so the "
                        "command ends about when the budget is spent, not a step and a validation later (the first "
                        "validation is always made, however long it takes).  The schedule scales to the budget: "
                        "warm-up takes at most a tenth of the steps it affords, and unless --val-every and "
                        "--val-episodes are given, validation about a fifth of it.  The card's training.budget "
                        "records what was used.")
    p.add_argument("--steps", type=int, help="most training steps")
    p.add_argument("--alpha", type=float, default=0.0, help="weight of the concept loss (default 0)")
    p.add_argument("--profile", default="cpu", metavar="NAME",
                   help="the training settings and architecture options not given here.  cpu (the default): "
                        "chosen for a CPU: Adam 1e-3 with 100 warm-up steps (at most a tenth of the steps the "
                        "budget affords) then a cosine decay to the end of the budget, 64 episodes per step, no batch norm in the relation net's g, the image "
                        "encoder's small CNN at 80 x 120.  curi: CURI's published settings: a constant Adam "
                        "rate (schema 1e-3, image 1e-4, sound 5e-5), 64 episodes per step for schemas and 8 for "
                        "images and sounds, batch norm in the relation net's g, ResNet-18 to layer 3 at 160 x 240 "
                        "for images (slow on a CPU).  Options given here win over the profile; the card records "
                        "both")
    p.add_argument("--batch", type=whole(1), default=None,
                   help="episodes per step (default: the profile's; cpu 64, curi 64 for schemas and 8 for "
                        "images and sounds)")
    p.add_argument("--lr", type=float, default=None,
                   help="Adam's learning rate (default: the profile's; cpu 1e-3 with warm-up and cosine decay, "
                        "curi constant 1e-3 for schemas, 1e-4 for images, 5e-5 for sounds)")
    p.add_argument("--val-every", type=int, default=None,
                   help="steps between validations (default 500, more when a budget's steps are short)")
    p.add_argument("--val-episodes", type=int, default=None,
                   help="validation episodes (val concepts) per check (default 1000, fewer, down to 100, when they "
                        "would take more than a fifth of the budget)")
    p.add_argument("--patience", type=int, default=10, help="validations without improvement before stopping (0: never)")
    p.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="auto",
                   help="arithmetic precision (auto: bf16 on a CPU with fast bfloat16 products, else fp32)")
    p.add_argument("--threads", type=whole(1), help="torch threads, 1 to the cores this process may use (more is "
                   "refused; default: every core)")
    p.add_argument("--name", help="the model's name in results (default ENCODER-POOLING)")
    p.add_argument("--seed", type=whole(0), default=0,
                   help="seed of initialisation and episodes (a whole number >= 0; default 0)")
    p.add_argument("--resume", action="store_true", help="continue the run saved in MODEL_DIR")


@command("train", order=90, arguments=_train_arguments, compiles=True,
         help="meta-train a neural baseline (CURI's prototypical networks) on a split")
def cmd_train(args) -> int:
    from ..learners import ProtoNetLearner, parse_architecture
    from ..learners.profiles import resolve_profile
    from ..learners.training import format_duration, parse_duration
    from ..scale import Interrupted
    from ..learners.features import check_learner_space
    _check_train_options(args)
    one_split(args, "a model is trained on one split")  # before any work
    space = open_space(args.dir)
    check_learner_space(space)  # before the split: a ConceptWorld space has no learner to train
    name = one_split(args, "a model is trained on one split")
    run = resolve_args(args, splits=[name], space=space)  # the protocol's episodes, unless given here
    split = run.splits[name]
    encoder, pooling = parse_architecture(learner_with_modality(args.learner, args.modality))
    profiled, encoder_options, pooling_options = resolve_profile(
        args.profile, encoder, pooling, explicit={"batch_episodes": args.batch, "lr": args.lr})
    learner = ProtoNetLearner(space, encoder, pooling, alpha=args.alpha, seed=args.seed, precision=args.precision,
                              name=args.name, encoder_options=encoder_options, pooling_options=pooling_options)
    options = dict(negatives=args.negatives, val_every=args.val_every, val_episodes=args.val_episodes,
                   patience=args.patience, threads=args.threads, max_steps=args.steps,
                   budget_s=parse_duration(args.budget) if args.budget else None, **profiled)
    try:
        h = run.train(name, learner, out=args.out, resume=args.resume, started=getattr(args, "started", None),
                      **options)
    except BaseException as exc:
        if caused_by_interrupt(exc):  # Ctrl-C, or an error while the checkpoint was written after it
            raise Interrupted(_train_interrupted(args.out)) from None
        raise
    print(f"{learner.name} on {split.name}: {counted(h['steps'], 'step')} ({counted(h['episodes'], 'episode')}, "
          f"{format_duration(h['wall_s'])}, {h['episodes_per_s']:.0f} episodes/s, stopped: {h['stopped']}); "
          f"best validation mAP {100 * h['best_val_map']:.1f} at step {h['best_step']:,} "
          f"({h['validation_side']} concepts); training profile {args.profile}; model written to {args.out}")
    return 0


def learner_with_modality(learner: str, modality) -> str:
    """``--learner relnet --modality image`` -> ``image-relnet``; ``--learner image-relnet`` as given;
    an error when ``--modality`` contradicts the learner's encoder."""
    if modality is None:
        return learner
    if "-" not in learner:
        return f"{modality}-{learner}"
    if learner.split("-", 1)[0] != modality:
        raise BayesConceptsError(f"--learner {learner} and --modality {modality} disagree: give --learner POOLING "
                                 f"with --modality, or --learner {modality}-{learner.split('-', 1)[1]}")
    return learner


#: What ``train --out DIR`` writes into DIR (with ``.partial`` siblings while writing them).
_MODEL_FILES = ("card.json", "model.safetensors", "checkpoint.json", "checkpoint.safetensors")


def _check_train_options(args):
    """Before any work: ``--threads`` within the cores this process may use, and ``--out`` a
    new or empty directory, or one holding only what train writes (a run to --resume)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if args.threads is not None and args.threads > cores:
        raise BayesConceptsError(f"--threads {args.threads}: more than the {cores} core(s) this process may use; "
                                 f"give 1 to {cores}, or leave it out for all of them")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise BayesConceptsError(f"--out {args.out}: exists and is not a directory")
    if out.is_dir():
        own = {*_MODEL_FILES, *(f + ".partial" for f in _MODEL_FILES)}
        foreign = sorted(p.name for p in out.iterdir() if p.name not in own)
        if foreign:
            listed = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise BayesConceptsError(f"--out {args.out}: holds files train did not write ({listed}); give a new or "
                                     "empty directory (or a model directory to --resume)")
    check_output_dir(args.out, "--out")


def _train_interrupted(out) -> str:
    """What an interrupted ``train`` left in ``out``: its unfinished ``.partial`` files removed,
    and the checkpoint to --resume from, if one was written."""
    out = Path(out)
    removed = []
    for name in _MODEL_FILES:
        partial = out / (name + ".partial")
        if partial.is_file():
            partial.unlink()
            removed.append(partial.name)
    try:
        step = json.loads((out / "checkpoint.json").read_text())["state"]["step"]
        kept = f"{out} keeps the checkpoint of step {step:,}: continue with --resume, or delete {out}"
    except (OSError, ValueError, KeyError, TypeError):
        kept = f"no checkpoint was written to {out}"
    return f"while training: {kept}" + (f" (unfinished {', '.join(removed)} removed)" if removed else "")
