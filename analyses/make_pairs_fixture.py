"""Write the synthetic attribute-object benchmark used by the tests and notebook 04.

The layout is compositional zero-shot learning's (MIT-States, UT-Zappos, C-GQA): an items
file (one image per line with its attribute, object and set) and ``train_pairs.txt``,
``val_pairs.txt``, ``test_pairs.txt`` (one "attribute object" per line).  Everything is
drawn from one seed, so the files are byte-identical on every run:

* 8 attributes x 6 objects; each combination exists with probability 0.75, re-drawn until
  every attribute has at least 3 pairs and every object at least 4;
* every existing pair gets 12..24 items (so any pair can fill an episode's 5 support and 5
  query positives);
* seen (train) pairs: about 60 % of the pairs, chosen so that every attribute and every
  object occurs in at least one of them (as in CZSL, unseen pairs recombine seen
  primitives); the remaining pairs are unseen and split into val (a third) and test;
  val and test also list some seen pairs, as CZSL's files do;
* the ``set`` column follows CZSL: items of unseen pairs are in their pair's set, items
  of seen pairs mostly train, some val and test.

Run from the repository root::

    .venv/bin/python analyses/make_pairs_fixture.py            # writes tests/fixtures/pairs/
    .venv/bin/python analyses/make_pairs_fixture.py --out DIR --seed 1
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
ATTRIBUTES = ("ancient", "broken", "dry", "painted", "ripe", "rusty", "sliced", "wet")
OBJECTS = ("apple", "bottle", "bread", "car", "chair", "dog")


def draw_pairs(rng) -> list:
    while True:
        exists = rng.random((len(ATTRIBUTES), len(OBJECTS))) < 0.75
        if exists.sum(1).min() >= 3 and exists.sum(0).min() >= 4:
            return [(ATTRIBUTES[a], OBJECTS[o]) for a, o in zip(*np.nonzero(exists))]


def choose_seen(pairs, rng, share: float = 0.6) -> set:
    """About ``share`` of the pairs, covering every attribute and object."""
    while True:
        order = rng.permutation(len(pairs))
        seen = {pairs[i] for i in order[: int(round(share * len(pairs)))]}
        if {a for a, _ in seen} == {a for a, _ in pairs} and {o for _, o in seen} == {o for _, o in pairs}:
            return seen


def make_fixture(out: Path, seed: int = 0) -> dict:
    """Write the layout into ``out``; returns ``{file name: bytes written}``."""
    rng = np.random.default_rng(seed)
    pairs = draw_pairs(rng)
    seen = choose_seen(pairs, rng)
    unseen = [p for p in pairs if p not in seen]
    rng.shuffle(unseen)
    n_val = len(unseen) // 3
    val_unseen, test_unseen = sorted(unseen[:n_val]), sorted(unseen[n_val:])
    seen_sorted = sorted(seen)
    extra = rng.permutation(len(seen_sorted))
    val_seen = sorted(seen_sorted[i] for i in extra[:4])
    test_seen = sorted(seen_sorted[i] for i in extra[4:9])
    rows = []
    for a, o in pairs:
        n = int(rng.integers(12, 25))
        for k in range(n):
            if (a, o) in seen:
                s = rng.choice(["train", "val", "test"], p=[0.7, 0.15, 0.15])
            else:
                s = "val" if (a, o) in val_unseen else "test"
            rows.append((f"{a}_{o}/{k:04d}.jpg", a, o, str(s)))
    order = rng.permutation(len(rows))
    rows = [rows[i] for i in order]
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "items.tsv": "image\tattr\tobj\tset\n" + "".join("\t".join(r) + "\n" for r in rows),
        "train_pairs.txt": "".join(f"{a} {o}\n" for a, o in seen_sorted),
        "val_pairs.txt": "".join(f"{a} {o}\n" for a, o in sorted(val_seen + val_unseen)),
        "test_pairs.txt": "".join(f"{a} {o}\n" for a, o in sorted(test_seen + test_unseen)),
    }
    written = {}
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
        written[name] = len(text.encode())
    return written


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "tests" / "fixtures" / "pairs")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    written = make_fixture(args.out, args.seed)
    for name, size in written.items():
        print(f"{args.out / name}: {size:,} bytes")
    return written


if __name__ == "__main__":
    main()
