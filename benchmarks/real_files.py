"""The audit of the real benchmarks' published files (issue 42): C-GQA's natural split, MIT-States
with hxm97's realistic-CZSL split, and RLCL's lists (``rlcl_lists.json``, referenced).

* **C-GQA** (``c-gqa``): the pair lists of its natural split
  (``compositional-split-natural/{train,val,test}_pairs.txt``, as in
  minho511/Compositional-Zero-Shot-Learning-Demo's ``dataset/cgqa/``), without image metadata:
  every listed pair gets ``--items-per-pair`` synthetic items (default 20), stated in the
  summary.
* **MIT-States** (``mit-states``): hxm97's per-image labels (``mitstates_img_split/``: 53,753
  images, ``path attribute object``, no header) and its realistic pair split
  (``mitstates_pair_split/``: ``seen_pairs`` + ``*_unseen_comps`` / ``*_unseen_pairs``, joined
  per side by :func:`bayes_concepts.suites.pairs.read_pairs_layout`), as
  hxm97/A-Dynamic-Learning-Method-towards-Realistic-Compositional-Zero-Shot-Learning has them.
* **RLCL** (``rlcl``): its lists alone are audited by ``benchmarks/rlcl_lists.py``
  (``rlcl_lists.json``); here its ``mit_states`` lists (``api/datasets/assets/mit_states``, as in
  bighuang624/RL-CZSL) are read with MIT-States' real per-image labels (``--items``: hxm97's
  ``mitstates_img_split``), with RLCL's episode worlds (``--worlds 5``) beside ``--k 1``.
  Pairs no list names keep their items in the bank (counted and named: ``layout_notes``).

Each benchmark is built as ``bayes-concepts space from-pairs ... --k 1`` builds it (MIT-States with
``--image-level`` too, since hxm97's lists give each image's set: every split then has its
image-level twin ``NAME_by_set``, whose test episodes and test bank are the test-set images), audited
(gap with hard and easy negatives, intervals, its three parts, divergences, exclusions), and
scored by the oracle ladder (:func:`bayes_concepts.ladder.ladder_profile` with the default
rungs, summarised by :func:`~bayes_concepts.ladder.ladder_summary`), with the same episodes.

Usage: ``python benchmarks/real_files.py c-gqa DIR`` (``DIR`` holds
``compositional-split-natural/``), ``python benchmarks/real_files.py mit-states DIR`` (``DIR``
holds ``mitstates_img_split/`` and ``mitstates_pair_split/``) or ``python
benchmarks/real_files.py rlcl ASSETS --items DIR/mitstates_img_split`` (``ASSETS``: RLCL's
``api/datasets/assets``); ``--episodes`` (2,000), ``--k``
(1), ``--seed``.  Writes ``benchmarks/results/real_cgqa.json``, ``real_mitstates.json`` or
``real_rlcl_mitstates.json``; the
files themselves are never copied, only their sha256 recorded.
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

from bayes_concepts.ladder import ladder_profile, ladder_summary
from bayes_concepts.suites.pairs import build_pair_space
from bayes_concepts.report import audit_splits
from bayes_concepts.spaces import load_space
from bayes_concepts.splits import make_split

from _summary import RESULTS, gap_in_parts, write_summary

SOURCES = {"c-gqa": "github.com/minho511/Compositional-Zero-Shot-Learning-Demo dataset/cgqa/compositional-split-natural",
           "mit-states": "github.com/hxm97/A-Dynamic-Learning-Method-towards-Realistic-Compositional-Zero-Shot-Learning "
                         "mitstates_img_split, mitstates_pair_split",
           "rlcl": "github.com/bighuang624/RL-CZSL api/datasets/assets/mit_states, with the items of "
                   "github.com/hxm97/A-Dynamic-Learning-Method-towards-Realistic-Compositional-Zero-Shot-Learning "
                   "mitstates_img_split"}
OUT = {"c-gqa": "real_cgqa", "mit-states": "real_mitstates", "rlcl": "real_rlcl_mitstates"}


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _inputs(kind: str, root: Path, items_per_pair: int) -> tuple:
    """``(items or None, pairs_dir, items_per_pair or None)`` of a benchmark's files under ``root``."""
    if kind == "c-gqa":
        d = root / "compositional-split-natural"
        return None, d if d.is_dir() else root, items_per_pair
    if kind == "rlcl":
        d = root / "mit_states"
        return None, d if d.is_dir() else root, None
    return root / "mitstates_img_split", root / "mitstates_pair_split", None


def audit_benchmark(kind: str, root: Path, work: Path, args) -> dict:
    items, pairs_dir, ipp = _inputs(kind, root, args.items_per_pair)
    worlds = ()
    if kind == "rlcl":
        if args.items is None:
            raise SystemExit("real_files: rlcl needs --items (hxm97's mitstates_img_split: MIT-States' labels)")
        items, worlds = Path(args.items), (5,)
    t0 = time.perf_counter()
    # hxm97's image lists say each image's set: MIT-States is also audited image-level (NAME_by_set splits)
    image_level = kind == "mit-states" and not args.no_image_level
    lines = build_pair_space(work, items, pairs_dir, ks=tuple(args.k), seed=args.seed, items_per_pair=ipp,
                             worlds=worlds, image_level=image_level)
    build_s = time.perf_counter() - t0
    for ln in lines:
        print(ln, flush=True)
    space = load_space(work)
    splits = {f.stem: make_split(space, f) for f in sorted((work / "splits").glob("*.toml"))}
    t1 = time.perf_counter()
    reports = audit_splits(space, splits, n_episodes=args.episodes, seed=args.seed)
    audit_s = time.perf_counter() - t1
    t2 = time.perf_counter()
    ds = ladder_profile(space, splits, None, ("hard", "easy"), args.episodes, seed=args.seed)
    rows = ladder_summary(ds, n_boot=1000, seed=args.seed)
    ladder_s = time.perf_counter() - t2
    p = space.params
    out = {"source": SOURCES[kind], "inputs_sha256": p["sources"],
           "items": {"count": space.n_scenes, "synthetic_per_pair": ipp,
                     "note": (f"synthetic: {ipp} per listed pair (no image metadata); the real images' counts play "
                              "no part" if ipp else "the real per-image labels")},
           "pairs": p["pairs"], "concepts": space.n_concepts, "image_level": image_level,
           **({"item_sets": p["item_sets"]} if image_level and "item_sets" in p else {}),
           "excluded": {k: {"count": v["count"], "first": v["first"]} for k, v in p.get("excluded", {}).items()},
           "layout_notes": {k: {"count": v["count"], "first": v["first"]} for k, v in p.get("layout_notes", {}).items()},
           "build_lines": lines, "build_seconds": round(build_s, 2), "audit_seconds": round(audit_s, 2),
           "ladder_seconds": round(ladder_s, 2), "splits": {}, "ladder": rows}
    for r in reports:
        entry = {"sizes": r["split_object"].sizes(), "usable_test_concepts": r["episodes"]["usable"],
                 "too_small": {"count": r["episodes"]["excluded"]["count"],
                               "first": r["episodes"]["excluded"]["first"]},
                 "atom_divergence": r["divergence"]["atom_divergence"],
                 "compound_divergence": r["divergence"]["compound_divergence"], "seconds": round(r["seconds"], 2)}
        entry.update(gap_in_parts(r["gap"]))
        entry["solved_at"] = {row["negatives"]: row["solved_at"] for row in rows if row["split"] == r["split"]}
        out["splits"][r["split"]] = entry
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("benchmark", choices=sorted(SOURCES), help="which real benchmark")
    ap.add_argument("root", help="the folder holding its files, laid out as its repository has them")
    ap.add_argument("--items-per-pair", type=int, default=20, help="c-gqa: synthetic items per listed pair (20)")
    ap.add_argument("--items", default=None, help="rlcl: MIT-States' per-image labels (hxm97's mitstates_img_split)")
    ap.add_argument("--k", type=int, nargs="+", default=[1], help="also the seen_kK splits (default 1)")
    ap.add_argument("--episodes", type=int, default=2000, help="episodes per split and negatives (2,000)")
    ap.add_argument("--no-image-level", action="store_true",
                    help="mit-states: leave out the image-level twins NAME_by_set (test episodes and test bank from "
                         "the test-set images; default: audited beside the pair-level splits)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="summary path (default benchmarks/results/real_<name>.json)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="real_files_") as tmp:
        figures = audit_benchmark(args.benchmark, Path(args.root), Path(tmp) / "space", args)
    figures["wall_seconds"] = round(time.perf_counter() - t0, 1)
    figures["peak_rss_mb"] = round(peak_mb(), 1)
    for name, e in figures["splits"].items():
        h = e["hard"]
        print(f"{name:13s} test {e['sizes']['test']:5d} (drawable {e['usable_test_concepts']})  gap hard "
              f"{h['gap']:5.1f} [{h['gap_ci'][0]:.1f}, {h['gap_ci'][1]:.1f}] = arr {h['parts']['novel_arrangements']:.1f}"
              f" + comp {h['parts']['novel_compounds']:.1f} + atoms {h['parts']['novel_atoms']:.1f}; easy "
              f"{e['easy']['gap']:5.1f}; solved at {e['solved_at']}", flush=True)
    path = write_summary(args.out or RESULTS / f"{OUT[args.benchmark]}.json", f"real files: {args.benchmark}", figures,
                         episodes=args.episodes, seed=args.seed, k=args.k, rlcl="benchmarks/results/rlcl_lists.json")
    print(f"{figures['wall_seconds']} s, peak {figures['peak_rss_mb']} MB; wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
