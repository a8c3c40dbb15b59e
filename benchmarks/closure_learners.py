"""Our learners on CLOSURE: trained on the CLEVR baselines' concepts, tested on each family.

CLOSURE (Bahdanau et al., 2019) reports, per test family and model, the *drop*: the model's
accuracy on CLEVR questions of the baseline templates the family was derived from minus its
zero-shot accuracy on the family's questions.  This benchmark measures the same drop for our
meta-learners on a clevr preset space, in mAP (the comp gap's measure, AP on the space's test
bank), so it stands beside the published drops and the ideal observers' gap
(``benchmarks/closure_gap.py``):

1. the training concepts are those of protocol ``closure-baselines`` (the CLEVR baselines'
   instantiations; every family split has the same ones); ``--val-fraction`` of each baseline
   template's instantiations (seed 0, the same for every model and seed) are held out as
   *validation* concepts -- new instantiations of the templates trained on, as CLEVR's
   validation questions were for CLOSURE's baselines;
2. each model (``--models``, default ``schema-relnet``: CURI's schema relation net) is trained
   per seed on the rest with the protocol's episodes (hard negatives, ``hard_mode`` union),
   ``--steps`` Adam steps of 64 episodes (``--budget``: also a time limit), one torch thread,
   the weights of the best validation mAP kept;
3. it is scored on ``--episodes`` episodes of the validation concepts and of each family's
   test concepts; drop = validation mAP - family mAP (mAP points, 0-100), per seed, then the
   mean over seeds with a 95 % t interval;
4. beside them: CLOSURE's published drop per family and model (accuracy points, its Tables;
   :func:`bayes_concepts.suites.closure.load_reported`) and Spearman's rho between our mean
   drops and each published model's over the families.

Usage::

    python benchmarks/closure_learners.py [--space spaces/clevr] [--seeds 0 1 2] [--steps 150]
        [--budget 10m] [--models schema-relnet [image-relnet]] [--episodes 1000] [--quick] [--out FILE]

CPU cost with the defaults (schema-relnet, one thread): a step ~1.1 s, a validation ~9 s
(most of it embedding the 42,228 test-bank scenes), scoring ~45 s: ~4 CPU minutes per seed,
~12 for three.  ``image-relnet`` (16 episodes per step): a step ~2 s, a validation ~25 s,
scoring ~1.5 min: ~8 CPU minutes per seed, plus ~1 minute to render the bank once.

``--quick`` trains tiny networks for a few steps on few episodes (seconds per seed: a check
that the pipeline runs, not a measurement).  ``image-relnet`` renders the space's scene bank
once into its ``rendered/`` folder (``--picture``) and trains the small CNN on it.  Writes
``benchmarks/results/closure_learners.json`` (``--out``).
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from scipy import stats

from bayes_concepts.episodes import EpisodeSampler
from bayes_concepts.learners import ProtoNetLearner, RandomLearner, parse_architecture, score_learner
from bayes_concepts.learners.learned import learned_check
from bayes_concepts.protocols import get_protocol
from bayes_concepts.spaces import load_space
from bayes_concepts.suites.closure import load_reported

PROTOCOL = "closure-baselines"
DEFAULT_OUT = Path(__file__).parent / "results" / "closure_learners.json"
#: architecture options of the --quick run (tiny networks)
QUICK_OPTIONS = {"embedding_dim": 16, "encoder_options": {"object_dim": 16, "hidden_ratio": 1},
                 "pooling_options": {"g_hidden": (16,), "g_out": 16, "f_hidden": (16,)}}
#: the image model's picture size (a bank of the clevr preset's 20,000 scenes: 144 MB, ~1 CPU minute)
PICTURE = {"height": 40, "width": 60, "supersample": 1}
#: four stride-2 convolutions: 40 x 60 -> 3 x 4 cells, so the relation net's g sees 144 pairs per
#: scene (three would leave 5 x 8 cells, 1,600 pairs: ~16 CPU s per step of 16 episodes, ~4 CPU
#: minutes per embedding of the test bank)
IMAGE_OPTIONS = {**PICTURE, "channels": (16, 32, 32, 32), "object_dim": 32}


def validation_concepts(space, protocol, split, fraction: float, seed: int = 0) -> np.ndarray:
    """Concept ids held out for validation: ``fraction`` of each baseline template's
    instantiations in ``split.train`` (at least one of each template with two or more)."""
    families, programs = protocol.family_programs(space)
    train = set(int(i) for i in split.train)
    rng = np.random.default_rng(seed)
    held = []
    for name, texts in programs.items():
        if families[name].role != "train":
            continue
        ids = sorted({i for i in (space.find(t) for t in texts) if i is not None and i in train})
        if len(ids) < 2:
            continue
        k = max(1, int(round(fraction * len(ids))))
        held.extend(rng.choice(ids, size=k, replace=False).tolist())
    return np.array(sorted(set(held)), np.int64)


def mean_interval(values) -> dict:
    """Mean and its 95 % t interval over seeds (the interval is None with one seed)."""
    v = np.asarray(values, float)
    mean = float(v.mean())
    if len(v) < 2:
        return {"mean": round(mean, 3), "ci95": None, "n": len(v)}
    half = float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))
    return {"mean": round(mean, 3), "ci95": [round(mean - half, 3), round(mean + half, 3)], "n": len(v)}


def spearman(x, y) -> dict:
    """Spearman's rho and its p-value (None where undefined: a constant side)."""
    r = stats.spearmanr(np.asarray(x, float), np.asarray(y, float))

    def value(v):
        return None if not np.isfinite(v) else round(float(v), 4)
    return {"rho": value(r.statistic), "p": value(r.pvalue), "n": len(x)}


def mean_ap(learner, sampler, concepts, n: int, seed: int, protocol) -> float:
    """mAP (points) of ``learner`` on ``n`` hard-negative episodes of ``concepts``."""
    episodes = sampler.sample(concepts, n, "hard", seed=seed, query_negatives=protocol.query_negatives,
                              hard_mode=protocol.hard_mode)
    return 100 * float(np.nanmean(learner.evaluate(episodes)["ap"]))


def validation_check(learner, space, sampler, concepts, n: int, seed: int, protocol) -> dict:
    """"Did it learn?" (:func:`bayes_concepts.learners.learned.learned_check`): ``learner``'s
    mAP and CBA on ``n`` hard-negative episodes of the validation ``concepts`` against the
    random learner's on the same episodes, with 95 % intervals over episodes."""
    episodes = sampler.sample(concepts, n, "hard", seed=seed, query_negatives=protocol.query_negatives,
                              hard_mode=protocol.hard_mode)
    ours = score_learner(learner, space, episodes)
    rnd = score_learner(RandomLearner(space, seed=seed), space, episodes, "random")
    return learned_check(100 * ours["ap"], 100 * rnd["ap"], 100 * ours["cba"], 100 * rnd["cba"])


def make_learner(space, model: str, seed: int, quick: bool) -> ProtoNetLearner:
    encoder, pooling = parse_architecture(model)
    options = dict(QUICK_OPTIONS) if quick else {}
    if encoder == "image":
        options["encoder_options"] = {**IMAGE_OPTIONS, **({"channels": (4, 8, 8, 8), "object_dim": 16} if quick else {})}
    return ProtoNetLearner(space, encoder, pooling, seed=seed, device="cpu", **options)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--space", default="spaces/clevr", help="a saved clevr preset space (space build --preset clevr)")
    ap.add_argument("--models", nargs="+", default=["schema-relnet"],
                    help="architectures ENCODER-POOLING (default schema-relnet; image-relnet renders a bank first)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds (default 0 1 2)")
    ap.add_argument("--steps", type=int, default=150, help="training steps per model and seed (default 150)")
    ap.add_argument("--budget", default=None, help="also a time limit per training (e.g. 10m; default none)")
    ap.add_argument("--episodes", type=int, default=1000, help="scored episodes per family and on validation")
    ap.add_argument("--val-episodes", type=int, default=200, help="validation episodes during training")
    ap.add_argument("--val-every", type=int, default=50, help="training steps between validations")
    ap.add_argument("--val-fraction", type=float, default=0.2,
                    help="share of each baseline template's instantiations held out for validation")
    ap.add_argument("--lr", type=float, default=1e-3, help="Adam's learning rate (default 1e-3)")
    ap.add_argument("--schedule", choices=("cosine", "constant"), default="cosine",
                    help="learning-rate schedule (default cosine, the training default)")
    ap.add_argument("--quick", action="store_true", help="tiny networks, a few steps, few episodes (seconds)")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    args = ap.parse_args(argv)
    if args.quick:
        args.episodes, args.val_episodes, args.val_every = min(args.episodes, 40), min(args.val_episodes, 20), 5
    t0 = time.perf_counter()
    torch.set_num_threads(1)
    space = load_space(args.space)
    protocol = get_protocol(PROTOCOL)
    splits = protocol.splits(space)
    families = list(splits)
    first = splits[families[0]]
    val = validation_concepts(space, protocol, first, args.val_fraction)
    train_split = replace(first, name="closure_baselines_trained", train=np.setdiff1d(first.train, val), val=val,
                          test=np.zeros(0, np.int64))
    train_split.protocol = PROTOCOL
    sampler = EpisodeSampler(space)
    rendered = {}
    if any(parse_architecture(m)[0] == "image" for m in args.models):
        t = time.perf_counter()
        space.rendered_bank("image", **PICTURE)
        rendered = {"picture": PICTURE, "seconds": round(time.perf_counter() - t, 1)}
    training = dict(max_steps=12, batch_episodes=8, chunk_episodes=64) if args.quick else \
        dict(max_steps=args.steps, budget=args.budget, chunk_episodes=1024, lr=args.lr, lr_schedule=args.schedule)
    models = {}
    for model in args.models:
        runs = []
        # pictures: CURI's image models took 8 episodes per step; 16 here, as a CPU budget allows
        batch = {"batch_episodes": 16} if parse_architecture(model)[0] == "image" and not args.quick else {}
        for seed in args.seeds:
            learner = make_learner(space, model, seed, args.quick)
            t = time.perf_counter()
            history = learner.train(train_split, protocol=protocol, val_episodes=args.val_episodes,
                                    val_every=args.val_every, threads=1, progress=False, **training, **batch)
            train_s = time.perf_counter() - t
            t = time.perf_counter()
            check = validation_check(learner, space, sampler, val, args.episodes, 10_000 + seed, protocol)
            if history["steps"] > 0 and history["best_step"] == 0:  # the kept weights are the untrained net's
                check.update(learned=False, untrained=True)
            val_map = check["map"]["mean"]
            family_map = {f: mean_ap(learner, sampler, splits[f].test, args.episodes, 20_000 + 100 * seed + k, protocol)
                          for k, f in enumerate(families)}
            runs.append({"seed": seed, "steps": history["steps"], "episodes": history["episodes"],
                         "stopped": history["stopped"], "best_val_map_training": round(100 * history["best_val_map"], 3),
                         "train_seconds": round(train_s, 1), "score_seconds": round(time.perf_counter() - t, 1),
                         "precision": learner.precision, "parameters": learner.architecture()["parameters"],
                         "val_map": round(val_map, 3), "validation": check,
                         "family_map": {f: round(v, 3) for f, v in family_map.items()},
                         **({"drop": {f: round(val_map - v, 3) for f, v in family_map.items()}} if check["learned"]
                            else {})})
            print(f"{model} seed {seed}: {history['steps']} steps in {train_s:.0f} s; val mAP {val_map:.1f} "
                  f"{check['map']['ci95']}, random {check['random_map']['mean']:.1f} {check['random_map']['ci95']}; "
                  + ("drops " + ", ".join(f"{f} {val_map - v:+.1f}" for f, v in family_map.items()) if check["learned"]
                     else "did not learn: no drops"), flush=True)
        learned = all(r["validation"]["learned"] for r in runs)
        models[model] = {"runs": runs, "learned": learned,
                         "learned_rule": "every seed's validation mAP interval above the random learner's on the same "
                                         "episodes (learners.learned)",
                         "val_map": mean_interval([r["val_map"] for r in runs]),
                         "random_val_map": mean_interval([r["validation"]["random_map"]["mean"] for r in runs]),
                         "family_map": {f: mean_interval([r["family_map"][f] for r in runs]) for f in families}}
        if learned:  # a learner that did not learn has no drops and no rho
            models[model]["drop"] = {f: mean_interval([r["drop"][f] for r in runs]) for f in families}
    reported = load_reported()
    published = {m: {f: round(reported.drop(m, f), 2) for f in families} for m in reported.models}
    published_mean = {f: round(float(np.mean([published[m][f] for m in published])), 2) for f in families}
    for model, block in models.items():
        if not block["learned"]:
            continue
        ours = [block["drop"][f]["mean"] for f in families]
        block["spearman"] = {m: spearman(ours, [published[m][f] for f in families]) for m in published}
        block["spearman"]["mean of the published models"] = spearman(ours, [published_mean[f] for f in families])
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent).stdout.strip()
    except OSError:
        commit = ""
    result = {
        "benchmark": {"script": "benchmarks/closure_learners.py", "argv": sys.argv[1:] if argv is None else argv,
                      "quick": args.quick, "protocol": PROTOCOL, "space": args.space,
                      "space_manifest_sha256": space.manifest_sha256(),
                      "test_bank_scenes": int(space.test_bank.n_scenes),
                      "space_params": {k: v for k, v in space.params.items() if k != "grammar"},
                      "seeds": args.seeds, "training": {k: v for k, v in training.items() if v is not None},
                      "torch_threads": 1, "episodes_per_cell": args.episodes, "val_episodes": args.val_episodes,
                      "val_every": args.val_every, "val_fraction": args.val_fraction,
                      "concepts": {"train": int(len(train_split.train)), "validation": int(len(val)),
                                   **{f: int(len(splits[f].test)) for f in families}},
                      "rendered": rendered, "wall_seconds": round(time.perf_counter() - t0, 1), "commit": commit,
                      "machine": platform.platform()},
        "units": "our mAP and drops in points (0-100, AP on the space's test bank, hard negatives); CLOSURE's drops "
                 "in accuracy points (baseline - zero-shot); rho is Spearman's over the families",
        "families": families,
        "models": models,
        "published": {"paper": reported.paper, "drop": published, "mean_drop": published_mean},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    for model, block in models.items():
        print(f"{model}: val mAP {block['val_map']['mean']:.1f}, random {block['random_val_map']['mean']:.1f}"
              + ("" if block["learned"] else ": did not learn (no drops, no rho)"))
        if not block["learned"]:
            continue
        for f in families:
            d = block["drop"][f]
            ci = f"[{d['ci95'][0]:+.1f}, {d['ci95'][1]:+.1f}]" if d["ci95"] else ""
            print(f"  {f:<16} drop {d['mean']:+6.1f} {ci:<16} published mean {published_mean[f]:5.1f}")
        print("  rho with " + ", ".join(f"{m} {r['rho']:+.2f}" if r["rho"] is not None else f"{m} -"
                                         for m, r in block["spearman"].items()))
    print(f"wall {time.perf_counter() - t0:.0f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
