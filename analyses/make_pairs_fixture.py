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
    .venv/bin/python analyses/make_pairs_fixture.py --published DIR   # the published-format fixture

The published-format fixture (:func:`make_published_fixture`, no randomness) mimics the
files users fetch, with what makes them hard: CZSL's ``compositional-split-natural/``
pair files and its metadata records (as JSON; with ``NA`` records), an image folder of
``<attribute object>/`` sub-folders (MIT-States), RLCL-style JSON pair lists (and the same
lists spelled as RLCL's repository spells them: ``train_cgqa.json``, ``val_utzap.json``,
``test_mit.json`` of ``"attribute_object"`` names, in ``rlcl-as-published/``), a test pair
that no item has, attributes and objects that occur only in val pairs, pairs too small for
an episode, and a second pair layout with no unseen pair (``seen-only/``).
"""
from __future__ import annotations

import argparse
import json
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


#: (attribute, object): items of the published-format fixture; 0 = listed but no item has it
PUBLISHED_ITEMS = {
    ("ancient", "bottle"): 12, ("ancient", "car"): 12, ("broken", "bottle"): 12, ("broken", "chair"): 11,
    ("wet", "dog"): 14, ("wet", "car"): 12, ("painted", "wall"): 12, ("painted", "chair"): 12, ("rusty", "car"): 12,
    ("rusty", "bottle"): 3, ("ancient", "dog"): 12, ("broken", "car"): 12, ("wet", "wall"): 4, ("painted", "dog"): 12,
    ("rusty", "chair"): 12, ("broken", "wall"): 0, ("wet", "chair"): 12, ("narrow", "castle"): 12, ("wet", "bottle"): 12,
    ("painted", "bottle"): 10,
}
PUBLISHED_TRAIN = [("ancient", "bottle"), ("ancient", "car"), ("broken", "bottle"), ("broken", "chair"),
                   ("wet", "dog"), ("wet", "car"), ("painted", "wall"), ("painted", "chair"), ("rusty", "car"),
                   ("rusty", "bottle")]
PUBLISHED_VAL = [("wet", "chair"), ("narrow", "castle"), ("painted", "bottle"), ("ancient", "car")]
PUBLISHED_TEST = [("ancient", "bottle"), ("ancient", "dog"), ("broken", "car"), ("broken", "wall"), ("wet", "wall"),
                  ("painted", "dog"), ("rusty", "chair"), ("wet", "bottle")]


def make_published_fixture(out: Path, images: bool = True) -> dict:
    """Write the published-format fixture into ``out``; returns ``{relative path: bytes}``
    (image files not counted).  Items: ``<attr>_<obj>/<k>.jpg``; unseen pairs' items are in
    set ``test``, val pairs' in ``val``, the rest ``train``; two metadata records are NA."""
    out = Path(out)
    records = []
    for (a, o), n in PUBLISHED_ITEMS.items():
        s = "test" if (a, o) in PUBLISHED_TEST and (a, o) not in PUBLISHED_TRAIN else (
            "val" if (a, o) in PUBLISHED_VAL and (a, o) not in PUBLISHED_TRAIN else "train")
        records += [{"image": f"{a}_{o}/{k:04d}.jpg", "attr": a, "obj": o, "set": s} for k in range(n)]
    records += [{"image": "unlabelled/0000.jpg", "attr": "NA", "obj": "car", "set": "NA"},
                {"image": "unlabelled/0001.jpg", "attr": "wet", "obj": "dog", "set": "NA"}]
    lines = lambda ps: "".join(f"{a} {o}\n" for a, o in ps)  # noqa: E731
    seen_test = [p for p in PUBLISHED_TEST if p in PUBLISHED_TRAIN]
    files = {
        "czsl/metadata_compositional-split-natural.json": json.dumps(records, indent=0) + "\n",
        "czsl/compositional-split-natural/train_pairs.txt": lines(PUBLISHED_TRAIN),
        "czsl/compositional-split-natural/val_pairs.txt": lines(PUBLISHED_VAL),
        "czsl/compositional-split-natural/test_pairs.txt": lines(PUBLISHED_TEST),
        "czsl/items.tsv": "image\tattr\tobj\tset\n" + "".join(
            f"{r['image']}\t{r['attr']}\t{r['obj']}\t{r['set']}\n" for r in records if "NA" not in r.values()),
        "rlcl/train.json": json.dumps([list(p) for p in PUBLISHED_TRAIN]) + "\n",
        "rlcl/val.json": json.dumps([list(p) for p in PUBLISHED_VAL]) + "\n",
        "rlcl/test.json": json.dumps([" ".join(p) for p in PUBLISHED_TEST]) + "\n",
        # RLCL's own spelling: lists named after their source dataset, "attribute_object" names
        "rlcl-as-published/train_cgqa.json": json.dumps(["_".join(p) for p in PUBLISHED_TRAIN]) + "\n",
        "rlcl-as-published/val_utzap.json": json.dumps(["_".join(p) for p in PUBLISHED_VAL]) + "\n",
        "rlcl-as-published/test_mit.json": json.dumps(["_".join(p) for p in PUBLISHED_TEST]) + "\n",
        "seen-only/train_pairs.txt": lines(PUBLISHED_TRAIN + [p for p in PUBLISHED_TEST if p not in PUBLISHED_TRAIN]),
        "seen-only/val_pairs.txt": "",
        "seen-only/test_pairs.txt": lines(seen_test),
    }
    written = {}
    for name, text in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text, encoding="utf-8")
        written[name] = len(text.encode())
    if images:  # MIT-States' image folder: images/<attribute object>/<file>
        for r in records:
            if "NA" not in r.values():
                f = out / "images" / f"{r['attr']} {r['obj']}" / r["image"].split("/")[1]
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_bytes(b"")
    return written


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "tests" / "fixtures" / "pairs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--published", type=Path, metavar="DIR", help="write the published-format fixture into DIR instead")
    args = p.parse_args(argv)
    if args.published:
        written = make_published_fixture(args.published)
        for name, size in written.items():
            print(f"{args.published / name}: {size:,} bytes")
        return written
    written = make_fixture(args.out, args.seed)
    for name, size in written.items():
        print(f"{args.out / name}: {size:,} bytes")
    return written


if __name__ == "__main__":
    main()
