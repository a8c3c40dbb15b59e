"""What separates ConceptWorld's productivity classes?  Linear probes trained on lengths 1-2.

The seed's nets fall with sequence length in experiment 1 (red, blue and mixed east-sequences
of 2x2 squares; trained on lengths 1-2, tested on 3, 5, 7); ours stay flat.  This benchmark
draws the experiment's scenes with our generator (the seed's Table 3 counts, no noise points,
as the baselines use them: ``conceptworld.baselines.experiment_data``) and fits multinomial
logistic regressions (scikit-learn, standardised features) on the training scenes, scored on
each test length (accuracy and per-class F1), on these features of a scene:

* ``colour_counts``: the number of points of each of the five colours;
* ``colour_shares``: the same as shares of the coloured points (the "average pixel value"
  of the seed's MLP, without the length);
* ``colour_changes``: the number of horizontally adjacent point pairs of different colours
  (a colour change along the east-sequence), alone;
* ``colour_present``: whether red is present and whether blue is present (two bits);
* ``pixels``: the raw 32 x 32 RGB picture, flattened (3,072 values: a linear model of what
  the MLP sees); ``pixels_unscaled`` the same without standardising (a pixel rarely coloured
  in training keeps a small weight).

It also counts the squares and colour changes of the mixed sequences per length (their
composition: how many red and blue squares).

Usage::

    python benchmarks/conceptworld_separability.py [--seed 0] [--scale 1.0] [--out FILE]

Writes ``benchmarks/results/conceptworld_separability.json``.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bayes_concepts.scenes.grid import EMPTY, render_grids
from bayes_concepts.suites.conceptworld.baselines import BaselineSettings, experiment_data, f1_per_class

DEFAULT_OUT = Path(__file__).parent / "results" / "conceptworld_separability.json"


def features(grids: np.ndarray, colors: tuple) -> dict:
    """Per feature set: float (S, d) of int8 grids (S, N, N)."""
    g = np.asarray(grids)
    counts = np.stack([(g == k).sum(axis=(1, 2)) for k in range(len(colors))], axis=1).astype(float)
    total = np.maximum(counts.sum(axis=1, keepdims=True), 1)
    left, right = g[:, :, :-1], g[:, :, 1:]
    changes = ((left != EMPTY) & (right != EMPTY) & (left != right)).sum(axis=(1, 2)).astype(float)[:, None]
    red, blue = colors.index("red"), colors.index("blue")
    present = np.stack([counts[:, red] > 0, counts[:, blue] > 0], axis=1).astype(float)
    pixels = render_grids(g, colors).reshape(len(g), -1).astype(float) / 255.0
    return {"colour_counts": counts, "colour_shares": counts / total, "colour_changes": changes,
            "colour_present": present, "pixels": pixels}


def mixed_composition(grids: np.ndarray, colors: tuple) -> dict:
    """Of mixed sequences: mean share of red squares and mean number of colour changes."""
    f = features(grids, colors)
    red = colors.index("red")
    share = f["colour_counts"][:, red] / np.maximum(f["colour_counts"].sum(axis=1), 1)
    return {"scenes": int(len(grids)), "red_share_mean": round(float(share.mean()), 4),
            "red_share_min": round(float(share.min()), 4), "red_share_max": round(float(share.max()), 4),
            "colour_changes_mean": round(float(f["colour_changes"].mean()), 3)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the seed's counts (default 1)")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    settings = BaselineSettings(scale=args.scale, test_scale=args.scale, noise=(0, 0))
    data = experiment_data("productivity", seed=args.seed, settings=settings)
    colors = data.colors
    train = features(data.train_grids, colors)
    probes = {}
    for name in [*train, "pixels_unscaled"]:
        model = (LogisticRegression(max_iter=2000, C=1.0) if name == "pixels_unscaled"
                 else make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, C=1.0)))
        key = "pixels" if name == "pixels_unscaled" else name
        model.fit(train[key], data.train_labels)
        per = {"train_accuracy": round(float((model.predict(train[key]) == data.train_labels).mean()), 4)}
        for cond, (grids, labels) in data.tests.items():
            pred = model.predict(features(grids, colors)[key])
            f1 = f1_per_class(labels, pred, len(data.classes))
            per[cond] = {"accuracy": round(float((pred == labels).mean()), 4),
                         "f1": {c: round(float(v), 4) for c, v in zip(data.classes, f1)}}
        probes[name] = per
        print(f"{name:<15} train {per['train_accuracy']:.3f}  "
              + "  ".join(f"{c} acc {per[c]['accuracy']:.3f} (mixed F1 {per[c]['f1']['mixed']:.3f})"
                          for c in data.tests), flush=True)
    mixed = data.classes.index("mixed")
    composition = {"length 2 (train)": mixed_composition(data.train_grids[data.train_labels == mixed], colors)}
    for cond, (grids, labels) in data.tests.items():
        composition[cond] = mixed_composition(grids[labels == mixed], colors)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent).stdout.strip()
    except OSError:
        commit = ""
    result = {"benchmark": {"script": "benchmarks/conceptworld_separability.py",
                            "argv": sys.argv[1:] if argv is None else argv, "seed": args.seed, "scale": args.scale,
                            "noise_points": [0, 0], "counts": data.counts,
                            "probe": "StandardScaler + multinomial LogisticRegression (C=1, lbfgs), scikit-learn (pixels_unscaled: no scaler)",
                            "wall_seconds": round(time.perf_counter() - t0, 1), "commit": commit,
                            "machine": platform.platform()},
              "classes": list(data.classes), "probes": probes, "mixed_composition": composition}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(composition, indent=1))
    print(f"wall {time.perf_counter() - t0:.0f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
