"""Learners benchmark: CURI's neural baselines on a CURI-scale space, measured in one run.

1. Training throughput (episodes/s, sampling included, validation excluded) of the
   schema encoder with each pooling (average, concat, relnet, transformer), and of a
   naive relation network for comparison (every one of the 5 × 5 slot pairs
   concatenated and pushed through g in float32, as CURI's release did).
   Target: >= 200 episodes/s for the schema relation net.
2. Scoring time of 20,000 test episodes (Concept IID, hard negatives) for one model:
   each distinct scene embedded once, the test bank once, then prototype distances.
   Target: <= 60 s.
3. With the training budget (default 30 minutes each), the schema relation net on all
   nine of CURI's splits with hard negatives: test mAP and CBA on
   20,000 test episodes, next to both oracles on the same episodes and next to CURI's
   published mAP (seed paper Appendix G.7, Tables 1-9, relation-net rows).  Writes the
   committed summary ``benchmarks/results/learners.json`` (budget, steps, episodes/s,
   training curves, test mAP/CBA with intervals, both oracles, CURI's values).

``--modality image|sound`` runs the same measurements for the image or sound encoder
(:mod:`bayes_concepts.learners.modalities`) with the relation net: throughput, and with
the budget its test mAP / CBA on Concept IID, hard negatives, next to CURI's Table 4
(image relation net 58.5, sound relation net 21.8); CURI's image settings (Adam 1e-4,
8 episodes per step; used for sound too), the encoder's defaults unless
``--encoder-options`` (JSON, e.g. ``'{"backbone": "resnet18", "height": 160, "width":
240}'`` for CURI's image encoder).  Its outputs go to ``learners_image.*`` /
``learners_sound.*`` and its models to ``models/image-relnet_*``.

Writes ``benchmarks/out/learners.json`` and ``benchmarks/out/learners.txt``; the trained
models go to ``benchmarks/out/models/`` (weights are not committed).

Usage::

    bayes-concepts space build spaces/paper --preset paper      # ~1 min, 2.6 GB; never commit it
    python benchmarks/learners.py spaces/paper [--budget 30m] [--episodes 20000] [--skip-budget]
    python benchmarks/learners.py spaces/paper --modality image --budget 30m   # image relnet, Concept IID
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

if "--spin" not in sys.argv:
    # OpenMP threads that spin while waiting burn the cores other jobs need on a shared machine
    # (here: 2 threads at ~1/5 of one thread's speed under load); set before torch and numba load.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import torch

from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.episodes import EpisodeSampler
from bayes_concepts.gap import cell_seed, compute_gap, summarise
from bayes_concepts.learners import LearnerError, ProtoNetLearner, load_model, read_card, score_learner
from bayes_concepts.learners.binding import check_scoring
from bayes_concepts.learners.training import available_cores, parse_duration
from bayes_concepts.splits import curi_splits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import write_summary  # noqa: E402  (benchmarks/ is not a package)

#: CURI's published test mAP (%, mean and standard deviation over 3 training runs) of the relation
#: nets with hard negatives, by modality and split (seed paper, Appendix G.7, Tables 1-9: Binding
#: (colour), Boolean, Intrinsic, Concept IID, Instance IID, Extrinsic, Complexity, Binding (shape),
#: Counting; the tables give mAP only, no accuracy).  Trained for 1,000,000 steps on a GPU.
CURI_RELNET_TABLES = {
    "schema": {"binding_color": (15.3, 0.9), "boolean": (51.1, 1.4), "intrinsic": (55.1, 0.9),
               "concept_iid": (60.7, 0.3), "instance_iid": (63.9, 0.4), "extrinsic": (59.8, 0.4),
               "complexity": (52.8, 0.7), "binding_shape": (30.4, 1.5), "counting": (57.4, 4.8)},
    "image": {"binding_color": (14.8, 0.7), "boolean": (38.4, 1.0), "intrinsic": (47.6, 7.5),
              "concept_iid": (58.5, 0.7), "instance_iid": (58.6, 1.3), "extrinsic": (60.8, 1.1),
              "complexity": (45.4, 0.4), "binding_shape": (29.1, 1.8), "counting": (40.3, 2.0)},
    "sound": {"binding_color": (9.2, 0.3), "boolean": (25.5, 0.8), "intrinsic": (24.3, 2.4),
              "concept_iid": (21.8, None), "instance_iid": (22.3, 2.3), "extrinsic": (18.3, 1.7),
              "complexity": (23.3, 1.0), "binding_shape": (17.5, 0.4), "counting": (13.0, 1.7)}}
CURI_RELNET_MAP = {m: {s: v[0] for s, v in t.items()} for m, t in CURI_RELNET_TABLES.items()}
#: the splits the accuracy runs use by default: all nine for the schema encoder, Concept IID for
#: the (slow on a CPU) image and sound encoders
DEFAULT_SPLITS = {"schema": list(CURI_RELNET_TABLES["schema"]), "image": ["concept_iid"], "sound": ["concept_iid"]}
POOLINGS = ("average", "concat", "relnet", "transformer")
#: CURI's training settings by modality (schema: Adam 1e-3, 64 episodes per step; image: 1e-4, 8)
MODALITY_TRAINING = {"schema": {}, "image": {"lr": 1e-4, "batch_episodes": 8},
                     "sound": {"lr": 1e-4, "batch_episodes": 8}}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def throughput(space, split, pooling: str, steps: int | None = None, naive: bool = False, warmup: int = 5,
               encoder: str = "schema", encoder_options: dict | None = None, **settings) -> dict:
    """Episodes per second of meta-training, sampling included, after a warm-up run of
    ``warmup`` steps; also episodes per CPU-second of this process (which the other jobs on a
    shared machine disturb less than wall time) and the load average before and after.
    ``steps`` (default: one drawn block's worth, ``chunk_episodes / batch × block_passes``)
    spans exactly one draw of a block of episodes, so the sampling share is the steady
    state's."""
    from bayes_concepts.learners.training import TrainSettings
    ts = TrainSettings(**settings)
    if steps is None:
        steps, chunk = (ts.chunk_episodes // ts.batch_episodes) * ts.block_passes, ts.chunk_episodes
    else:  # blocks just big enough (the steps draw ceil(steps / passes) batches' worth)
        chunk = min(ts.chunk_episodes, max(ts.batch_episodes, -(-steps // ts.block_passes) * ts.batch_episodes))
    result = None
    for n, chunk in ((warmup, warmup * ts.batch_episodes), (steps, chunk)):
        learner = ProtoNetLearner(space, encoder, pooling, seed=0, precision="fp32" if naive else "auto",
                                  encoder_options=encoder_options)
        if naive:
            pool = learner.model.pooling
            pool.forward = pool.forward_reference
        learner.model.train()
        learner.evaluate = lambda episodes: {"ap": np.zeros(len(episodes)), "cba": np.zeros(len(episodes))}
        load0 = os.getloadavg()[0]
        cpu0 = time.process_time()
        h = learner.train(split, max_steps=n, val_every=10 * n, val_episodes=1, progress=False,
                          **{**settings, "chunk_episodes": chunk})
        cpu = time.process_time() - cpu0
        result = {"pooling": f"{encoder}-{pooling}" + (" (naive, fp32)" if naive else ""),
                  "episodes_per_s": h["episodes_per_s"], "steps": h["steps"], "episodes": h["episodes"],
                  "train_s": h["train_s"], "sampling_s": h["sampling_s"], "precision": learner.precision,
                  "cpu_s": cpu, "episodes_per_cpu_s": h["episodes"] / cpu, "block_passes": ts.block_passes,
                  "load_avg": [load0, os.getloadavg()[0]]}
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("space")
    ap.add_argument("--modality", choices=sorted(CURI_RELNET_MAP), default="schema",
                    help="scene encoder (schema: every pooling's throughput and the three splits; image, "
                         "sound: the relation net on Concept IID, next to CURI's Table 4)")
    ap.add_argument("--encoder-options", type=json.loads, default=None, metavar="JSON",
                    help="encoder options (sizes), e.g. '{\"backbone\": \"resnet18\"}'")
    ap.add_argument("--steps", type=int, default=None,
                    help="training steps per throughput measurement (default: one drawn block's worth)")
    ap.add_argument("--episodes", type=int, default=20_000, help="test episodes for scoring")
    ap.add_argument("--budget", default="30m", help="training budget per split for the accuracy runs")
    ap.add_argument("--splits", nargs="+", default=None,
                    help="splits of the accuracy runs (default: those CURI published for the modality)")
    ap.add_argument("--val-episodes", type=int, default=None,
                    help="validation episodes of the accuracy runs (default: the training default, 1,000)")
    ap.add_argument("--val-every", type=int, default=None,
                    help="training steps between validations of the accuracy runs (default: the training "
                         "default, 500); each validation is a point of the committed training curve")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads of the accuracy runs (default: every core); 1 keeps a run steady on a "
                         "machine that other jobs share")
    ap.add_argument("--skip-throughput", action="store_true", help="no throughput measurements")
    ap.add_argument("--skip-scoring", action="store_true", help="no scoring-time measurement")
    ap.add_argument("--skip-budget", action="store_true", help="only throughput and scoring time")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the models of an earlier run in OUT/models (finished ones are loaded, "
                         "interrupted ones resumed to their budget); a model made on another space or split "
                         "(the manifest and split hashes its card records) is an error")
    ap.add_argument("--spin", action="store_true", help="keep OpenMP's default (spinning) wait policy")
    ap.add_argument("--out", default="benchmarks/out",
                    help="folder for the full outputs (JSON, text log, models; not committed)")
    ap.add_argument("--results", default=None,
                    help="the committed summary of the accuracy runs (default: benchmarks/results/learners.json, "
                         "or learners_MODALITY.json for image and sound); written as each split finishes; not "
                         "written with --skip-budget")
    args = ap.parse_args()
    modality = args.modality
    curi = CURI_RELNET_MAP[modality]
    train_settings = dict(MODALITY_TRAINING[modality])
    split_names = args.splits or DEFAULT_SPLITS[modality]
    stem = "learners" if modality == "schema" else f"learners_{modality}"
    results_path = Path(args.results or Path(__file__).resolve().parent / "results" / f"{stem}.json")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    space = HypothesisSpace.load(args.space)
    splits = curi_splits(space)
    info = {"space": args.space, "concepts": space.n_concepts, "scenes": space.n_scenes,
            "test_bank": space.test_bank.n_scenes, "cores": available_cores(), "torch": torch.__version__,
            "modality": modality, "encoder_options": args.encoder_options, "train_settings": train_settings,
            "load_avg_start": os.getloadavg(), "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default")}
    def emit(*new_lines):
        """Print lines as they come and keep the files current (a long run may be cut short)."""
        lines.extend(new_lines)
        print("\n".join(new_lines), flush=True)
        (out / f"{stem}.json").write_text(json.dumps(info, indent=2, default=float))
        (out / f"{stem}.txt").write_text("\n".join(lines) + "\n")
        if info.get("budget_runs"):
            write_summary(results_path, f"CURI's learner table: the {modality} relation net on "
                          f"{len(info['budget_runs'])} split(s), hard negatives, {args.budget} budget each",
                          figures={k: v for k, v in info.items()}, curi_source=(
                              "seed paper Appendix G.7, Tables 1-9 (relation-net rows, hard negatives, mAP mean and "
                              "std over 3 runs of 1,000,000 steps; no accuracy is published per split)"))

    def make(**kw):
        return ProtoNetLearner(space, modality, "relnet", seed=0, encoder_options=args.encoder_options, **kw)

    lines = []
    emit(f"space {args.space}: {space.n_concepts:,} concepts, {space.n_scenes:,} scenes, test bank "
         f"{space.test_bank.n_scenes:,}; {available_cores()} cores; load average at start "
         f"{info['load_avg_start'][0]:.1f}; OMP_WAIT_POLICY {info['omp_wait_policy']}; encoder {modality}"
         + (f" {json.dumps(args.encoder_options)}" if args.encoder_options else ""))

    # 1. training throughput, side by side
    if not args.skip_throughput:
        if modality == "schema":
            rows = [throughput(space, splits["concept_iid"], p, args.steps) for p in POOLINGS]
            rows.append(throughput(space, splits["concept_iid"], "relnet", 20, naive=True))
        else:
            rows = [throughput(space, splits["concept_iid"], "relnet", args.steps or 40, encoder=modality,
                               encoder_options=args.encoder_options, **train_settings)]
        info["throughput"] = rows
        batch = train_settings.get("batch_episodes", 64)
        emit("", f"training throughput ({modality} encoder, {batch} episodes per step, episode sampling included; "
                 f"each drawn block of episodes used {rows[0]['block_passes']}x):")
        relnet = next(r for r in rows if r["pooling"] == f"{modality}-relnet")["episodes_per_s"]
        for r in rows:
            emit(f"  {r['pooling']:<28} {r['episodes_per_s']:>7.0f} episodes/s  {r['episodes_per_cpu_s']:>6.0f} "
                 f"episodes/CPU-s  ({r['precision']}, {r['steps']} steps, sampling {r['sampling_s']:.1f} of "
                 f"{r['train_s']:.1f} s; load {r['load_avg'][0]:.1f} -> {r['load_avg'][1]:.1f}; time per "
                 f"episode {relnet / r['episodes_per_s']:.2f}x relnet's)")
        if modality == "schema":
            emit(f"  target: relnet >= 200 episodes/s -> {'met' if relnet >= 200 else 'MISSED'}")

    # 2. scoring 20,000 test episodes for one model (a briefly trained relnet)
    if not args.skip_scoring:
        model = make()
        model.train(splits["concept_iid"], max_steps=20, val_every=1000, val_episodes=20, progress=False,
                    **train_settings)
        eps = EpisodeSampler(space).sample(splits["concept_iid"].test, args.episodes, "hard",
                                           seed=cell_seed(0, "concept_iid", "hard"))
        model.weights_changed()
        load0 = os.getloadavg()[0]
        t, cpu = time.perf_counter(), time.process_time()
        r = score_learner(model, space, eps)
        score_s, score_cpu_s = time.perf_counter() - t, time.process_time() - cpu
        unique = len(np.unique(np.concatenate([eps.support_scenes.ravel(), eps.query_scenes.ravel()])))
        info["scoring"] = {"episodes": args.episodes, "seconds": score_s, "cpu_seconds": score_cpu_s,
                           "distinct_scenes_embedded": unique, "load_avg": [load0, os.getloadavg()[0]],
                           "test_bank_scenes": space.test_bank.n_scenes, "map": float(np.nanmean(r["ap"]))}
        emit("", f"scoring {args.episodes:,} test episodes (one {modality} relnet): {score_s:.1f} s, "
                 f"{score_cpu_s:.1f} CPU-s, load {load0:.1f} -> {os.getloadavg()[0]:.1f} ({unique:,} distinct "
                 f"support/query scenes + {space.test_bank.n_scenes:,} test-bank scenes embedded once)"
                 + (f"; target <= 60 s -> {'met' if score_s <= 60 else 'MISSED'}" if modality == "schema" else ""))

    # 3. the relation net with the training budget, next to the oracles and CURI's numbers
    if not args.skip_budget:
        if args.val_episodes:
            train_settings["val_episodes"] = args.val_episodes
        if args.val_every:
            train_settings["val_every"] = args.val_every
        if args.threads:
            train_settings["threads"] = args.threads
            torch.set_num_threads(args.threads)  # scoring too
        budget = parse_duration(args.budget)
        info["budget_s"] = budget
        results = []
        emit("", f"{modality} relnet, hard negatives, {args.budget} training budget per split, "
                 f"{args.episodes:,} test episodes (mAP / CBA, %):",
             f"  {'split':<15}{'weak':>13}{'relnet':>13}{'strong':>13}{'CURI relnet mAP':>17}"
             f"{'steps':>9}{'ep/s':>6}")
        for name in split_names:
            split = splits[name]
            model_dir = out / "models" / (f"relnet_{name}" if modality == "schema" else f"{modality}-relnet_{name}")
            learner = make(name="relnet")
            saved = json.loads((model_dir / "checkpoint.json").read_text())["state"] \
                if args.reuse and (model_dir / "checkpoint.json").exists() else None
            if saved is not None:  # a model of an earlier run: only if made on this space and split
                try:
                    check_scoring(read_card(model_dir) if (model_dir / "card.json").exists()
                                  else {"training": {}}, space, name, split, label=f"model {model_dir}",
                                  hint=f"remove {model_dir} or run without --reuse")
                except LearnerError as exc:
                    sys.exit(f"benchmarks/learners.py --reuse: {exc}")
            if saved is not None and saved.get("stopped") in ("budget", "early_stopping", "max_steps"):
                learner = load_model(model_dir, space, name="relnet")
                h = learner.card["training"]
            else:
                h = learner.train(split, budget=budget, out=model_dir, resume=saved is not None,
                                  progress="auto", log=lambda line: print(line, flush=True), **train_settings)
            ds = compute_gap(space, {name: split}, ("hard",), args.episodes, seed=0,
                             learners={"relnet": {name: learner}})
            row = summarise(ds, n_boot=200)[0]
            res = {"split": name, "weak": row["weak"], "strong": row["strong"], "relnet": row["learners"]["relnet"],
                   "curi_relnet_map": curi.get(name),
                   "curi_relnet_map_std": CURI_RELNET_TABLES[modality].get(name, (None, None))[1], "training": {
                       k: h.get(k) for k in ("steps", "episodes", "wall_s", "train_s", "sampling_s", "episodes_per_s",
                                             "best_step", "best_val_map", "stopped", "settings", "val_curve")}}
            if res["curi_relnet_map"] is not None:
                res["minus_curi_map"] = res["relnet"]["map"] - res["curi_relnet_map"]
            results.append(res)
            info["budget_runs"] = results
            m = res["relnet"]
            emit(f"  {name:<15}{row['weak']['map']:>6.1f} /{row['weak']['cba']:>5.1f}{m['map']:>6.1f} /"
                 f"{m['cba']:>5.1f}{row['strong']['map']:>6.1f} /{row['strong']['cba']:>5.1f}"
                 f"{res['curi_relnet_map'] or float('nan'):>17.1f}{h['steps']:>9,}{h['episodes_per_s']:>6.0f}")
            emit(f"    learning curve ({name}): " + "; ".join(
                f"step {c['step']:,} {c['elapsed_s'] / 60:.1f} min val mAP {100 * c['val_map']:.1f}"
                for c in h["val_curve"]))
        cid = next((r for r in results if r["split"] == "concept_iid"), None)
        if cid and modality == "schema":
            emit(f"  target: Concept IID test mAP >= 50 -> {'met' if cid['relnet']['map'] >= 50 else 'MISSED'}"
                 f" ({cid['relnet']['map']:.1f})")
    info["wall_s"] = time.perf_counter() - t0
    info["peak_rss_mb"] = peak_rss_mb()
    info["load_avg_end"] = os.getloadavg()
    emit("", f"wall {info['wall_s']:.0f} s; peak RSS {info['peak_rss_mb']:,.0f} MB; load average at end "
             f"{info['load_avg_end'][0]:.1f} (the machine is shared: throughput scales with the idle cores)")


if __name__ == "__main__":
    main()
