"""Does the CLOSURE learner learn?  Its learning curve against the random learner.

Trains one model (default ``schema-relnet``) as ``benchmarks/closure_learners.py`` does (the
CLEVR baselines' concepts of protocol ``closure-baselines``, ``--val-fraction`` of each
template's instantiations held out as validation concepts, hard negatives), validating every
``--val-every`` steps on the same ``--val-episodes`` episodes, and scores, on one set of
``--episodes`` episodes each, the trained model and the random learner on the validation
concepts (held-out instantiations) and on training concepts (the training distribution).
Records the curve (step, validation mAP and CBA, training loss, seconds), the final numbers
with 95 % intervals over episodes, and the chance levels.

Usage::

    python benchmarks/closure_learning_curve.py [--space spaces/clevr] [--steps 400] [--lr 1e-3]
        [--batch 64] [--schedule constant|cosine] [--val-every 50] [--out FILE]

Writes ``benchmarks/results/closure_learning_curve.json`` (``--out``).
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

sys.path.insert(0, str(Path(__file__).parent))
from closure_learners import PROTOCOL, make_learner, validation_concepts  # noqa: E402

from bayes_concepts.episodes import EpisodeSampler  # noqa: E402
from bayes_concepts.learners import RandomLearner, score_learner  # noqa: E402
from bayes_concepts.learners.learned import learned_check, mean_ci  # noqa: E402
from bayes_concepts.protocols import get_protocol  # noqa: E402
from bayes_concepts.spaces import load_space  # noqa: E402

DEFAULT_OUT = Path(__file__).parent / "results" / "closure_learning_curve.json"


def in_domain_ap(learner, space, sampler, concepts, n: int, seed: int, protocol) -> dict:
    """The trained model's and the random ranking's mAP on ``n`` validation episodes, the test
    bank ranked whole (as scored today) and over the concept's question domain only (what the
    model was trained on: it never saw a scene outside a question's domain), with the chance
    level of each (mean share of positives among the ranked scenes).  Points, 95 % intervals."""
    from sklearn.metrics import average_precision_score
    from bayes_concepts.bits import unpack_bits
    eps = sampler.sample(concepts, n, "hard", seed=seed, query_negatives=protocol.query_negatives,
                         hard_mode=protocol.hard_mode)
    bank = learner.bank_embedding()
    n_bank = space.test_bank.n_scenes
    rng = np.random.default_rng(seed)
    rows = {k: [] for k in ("model_all", "model_domain", "random_all", "random_domain", "chance_all",
                            "chance_domain", "domain_share")}
    for e in range(len(eps.concept)):
        c = int(eps.concept[e])
        labels = unpack_bits(np.asarray(space.test_bank.signatures[c]), n_bank)
        dom = space.test_domain(c)
        learner.fit(eps.support_scenes[e], eps.support_labels[e])
        scores = learner.logits(bank, *learner._weights)[0].astype(np.float64)
        noise = rng.random(n_bank)
        if not labels.any():
            continue
        rows["model_all"].append(average_precision_score(labels, scores))
        rows["model_domain"].append(average_precision_score(labels[dom], scores[dom]))
        rows["random_all"].append(average_precision_score(labels, noise))
        rows["random_domain"].append(average_precision_score(labels[dom], noise[dom]))
        rows["chance_all"].append(labels.mean())
        rows["chance_domain"].append(labels[dom].mean())
        rows["domain_share"].append(dom.mean())
    return {k: mean_ci(100 * np.asarray(v)) for k, v in rows.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--space", default="spaces/clevr")
    ap.add_argument("--model", default="schema-relnet")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch", type=int, default=64, help="episodes per Adam step")
    ap.add_argument("--schedule", choices=("constant", "cosine"), default="constant")
    ap.add_argument("--negatives", choices=("hard", "easy"), default="hard",
                    help="support and query negatives of the training episodes (and of the curve's validation "
                         "episodes); the final scoring is on hard negatives either way")
    ap.add_argument("--val-every", type=int, default=50)
    ap.add_argument("--val-episodes", type=int, default=200)
    ap.add_argument("--episodes", type=int, default=500, help="final scoring episodes per side")
    ap.add_argument("--val-fraction", type=float, default=0.2)
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--model-dir", default=None, help="also save the trained model there (weights and card)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    torch.set_num_threads(1)
    space = load_space(args.space)
    protocol = get_protocol(PROTOCOL)
    splits = protocol.splits(space)
    first = splits[next(iter(splits))]
    val = validation_concepts(space, protocol, first, args.val_fraction)
    train_split = replace(first, name="closure_baselines_trained", train=np.setdiff1d(first.train, val), val=val,
                          test=np.zeros(0, np.int64))
    train_split.protocol = PROTOCOL
    learner = make_learner(space, args.model, args.seed, False)
    t = time.perf_counter()
    history = learner.train(train_split, protocol=protocol, val_episodes=args.val_episodes, val_every=args.val_every,
                            threads=1, progress=False, max_steps=args.steps, chunk_episodes=1024, patience=0,
                            lr=args.lr, batch_episodes=args.batch, negatives=args.negatives, lr_schedule=args.schedule,
                            warmup_steps=min(50, args.steps // 10),
                            out=args.model_dir)
    train_s = time.perf_counter() - t
    sampler = EpisodeSampler(space)
    rng = np.random.default_rng(args.seed)
    held_in = np.sort(rng.choice(train_split.train, min(len(train_split.train), len(val)), replace=False))
    final = {}
    for side, concepts, seed in (("validation", val, 10_000), ("training", held_in, 11_000)):
        eps = sampler.sample(concepts, args.episodes, "hard", seed=seed + args.seed,
                             query_negatives=protocol.query_negatives, hard_mode=protocol.hard_mode)
        got = {name: score_learner(lr_, space, eps, name)
               for name, lr_ in (("model", learner), ("random", RandomLearner(space, seed=args.seed)))}
        final[side] = {name: {"map": mean_ci(100 * r["ap"]), "cba": mean_ci(100 * r["cba"])} for name, r in got.items()}
        final[side]["learned"] = learned_check(100 * got["model"]["ap"], 100 * got["random"]["ap"],
                                               100 * got["model"]["cba"], 100 * got["random"]["cba"])
        if history["best_step"] == 0:  # the kept weights are the untrained net's
            final[side]["learned"].update(learned=False, untrained=True)
    domain = in_domain_ap(learner, space, sampler, val, min(args.episodes, 300), 12_000 + args.seed, protocol)
    curve = [{"step": c["step"], "val_map": round(100 * c["val_map"], 3), "val_cba": round(100 * c["val_cba"], 3),
              "train_loss": None if c["train_loss"] is None else round(c["train_loss"], 4),
              "elapsed_s": c["elapsed_s"]} for c in history["val_curve"]]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent).stdout.strip()
    except OSError:
        commit = ""
    result = {"benchmark": {"script": "benchmarks/closure_learning_curve.py",
                            "argv": sys.argv[1:] if argv is None else argv, "space": args.space,
                            "space_manifest_sha256": space.manifest_sha256(),
                            "test_bank_scenes": int(space.test_bank.n_scenes),
                            "test_bank_ranking": "the scorer's at the recorded commit (the whole bank before the ranking over "
                                                 "each question's domain landed, the domain after); in_domain "
                                                 "scores both",
                            "model": args.model, "seed": args.seed, "steps": history["steps"],
                            "episodes_trained": history["episodes"], "lr": args.lr, "batch_episodes": args.batch,
                            "schedule": args.schedule, "negatives": args.negatives, "best_step": history["best_step"], "val_episodes": args.val_episodes,
                            "episodes_scored": args.episodes, "train_seconds": round(train_s, 1),
                            "concepts": {"train": int(len(train_split.train)), "validation": int(len(val))},
                            "torch_threads": 1, "wall_seconds": round(time.perf_counter() - t0, 1),
                            "commit": commit, "machine": platform.platform()},
              "units": "mAP and CBA in points (0-100); intervals: 95 % over episodes",
              "curve": curve, "final": final, "in_domain": domain}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    for c in curve:
        print(f"step {c['step']:>5}  val mAP {c['val_map']:6.2f}  val CBA {c['val_cba']:6.2f}  loss {c['train_loss']}")
    for side, f in final.items():
        print(f"{side}: model mAP {f['model']['map']['mean']:.2f} {f['model']['map']['ci95']}, random "
              f"{f['random']['map']['mean']:.2f} {f['random']['map']['ci95']}; learned: {f['learned']['learned']}")
    print("in-domain check: " + ", ".join(f"{k} {v['mean']:.2f}" for k, v in domain.items()))
    print(f"wall {time.perf_counter() - t0:.0f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
