"""Pair-benchmark benchmark: an attribute-object benchmark of MIT-States' size, end to end.

A synthetic layout with MIT-States' shape (115 attributes, 245 objects, 1,962 pairs of
which 1,262 seen, 53,753 items by default) is written to a scratch directory; then
reading it, building the pair space, saving it, the seen-vs-unseen audit (comp gap with
hard and easy negatives, ``--episodes`` per cell) and the divergences are timed, and the
peak resident memory is reported.  The divergences are also timed against the brute-force
reference (pure Python) on the same split.
Usage: ``python benchmarks/pairs.py [--items 53753] [--episodes 2000] [--out benchmarks/out/pairs.json]``
"""
from __future__ import annotations

import argparse
import json
import math
import resource
import tempfile
import time
import tomllib
from collections import Counter
from pathlib import Path

import numpy as np


def write_layout(d: Path, n_attr: int, n_obj: int, n_pairs: int, n_seen: int, n_items: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    cells = rng.choice(n_attr * n_obj, size=n_pairs, replace=False)
    pairs = [(f"a{c // n_obj}", f"o{c % n_obj}") for c in cells]
    counts = np.maximum(10, rng.multinomial(n_items - 10 * n_pairs, np.full(n_pairs, 1 / n_pairs)) + 10)
    with open(d / "items.tsv", "w") as f:
        f.write("image\tattr\tobj\n")
        for (a, o), n in zip(pairs, counts):
            f.writelines(f"{a}_{o}/{k}.jpg\t{a}\t{o}\n" for k in range(n))
    order = rng.permutation(n_pairs)
    seen = [pairs[i] for i in order[:n_seen]]
    rest = [pairs[i] for i in order[n_seen:]]
    (d / "train_pairs.txt").write_text("".join(f"{a} {o}\n" for a, o in seen))
    half = len(rest) // 2
    (d / "val_pairs.txt").write_text("".join(f"{a} {o}\n" for a, o in rest[:half]))
    (d / "test_pairs.txt").write_text("".join(f"{a} {o}\n" for a, o in rest[half:]))
    return int(counts.sum())


def brute_divergence(space, train, test, beta=0.2):
    def dist(ids, which):
        mass = Counter()
        for i in ids:
            if space.counts[i] < 10:
                continue
            toks = space.descriptions[i].split()
            xs = toks if which == 0 else [" ".join(toks)] if len(toks) == 2 else []
            for x in xs:
                mass[x] += math.exp(-beta * int(space.lengths[i]))
        total = sum(mass.values())
        return {x: m / total for x, m in mass.items()}
    out = []
    for which, alpha in ((0, 0.5), (1, 0.1)):
        p, q = dist(train, which), dist(test, which)
        out.append(1 - sum(p[x] ** alpha * q[x] ** (1 - alpha) for x in p if x in q))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=53_753)
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--out", default="benchmarks/out/pairs.json")
    args = ap.parse_args()
    from bayes_concepts.divergence import split_divergence
    from bayes_concepts.spaces import load_space
    from bayes_concepts.gap import compute_gap, summarise
    from bayes_concepts.suites.pairs import pair_space, read_pairs_layout
    from bayes_concepts.splits import make_split
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        t = time.perf_counter()
        n_items = write_layout(d, 115, 245, 1962, 1262, args.items)
        times["write_layout"] = time.perf_counter() - t
        t = time.perf_counter()
        layout = read_pairs_layout(d / "items.tsv", d)
        times["read_layout"] = time.perf_counter() - t
        t = time.perf_counter()
        space = pair_space(layout)
        times["build_space"] = time.perf_counter() - t
        t = time.perf_counter()
        space.save(d / "space")
        space = load_space(d / "space")
        times["save_and_load"] = time.perf_counter() - t
        split = make_split(space, tomllib.loads(space.spec_files["unseen_pairs.toml"]))
        t = time.perf_counter()
        ds = compute_gap(space, {"unseen_pairs": split}, ("hard", "easy"), args.episodes, seed=0)
        times["gap_hard_and_easy"] = time.perf_counter() - t
        t = time.perf_counter()
        div = split_divergence(space, split)
        times["divergence"] = time.perf_counter() - t
        t = time.perf_counter()
        brute = brute_divergence(space, split.train, split.test)
        times["divergence_brute_force"] = time.perf_counter() - t
        rows = summarise(ds, n_boot=200)
    out = {"items": n_items, "concepts": space.n_concepts, "train": len(split.train), "test": len(split.test),
           "episodes": args.episodes, "seconds": times,
           "map_gap": {r["negatives"]: r["gap"]["map"] for r in rows},
           "atom_divergence": div["atom_divergence"], "compound_divergence": div["compound_divergence"],
           "brute_force_agrees": bool(np.allclose([div["atom_divergence"], div["compound_divergence"]], brute)),
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
