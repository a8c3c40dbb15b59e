"""The audit of RLCL's published pair lists, as a user who has its code but not its images runs it (issue 25).

RLCL's repository ships its splits as JSON lists of ``"attribute_object"`` names under
``api/datasets/assets/``: the cross-dataset benchmark ``attr_obj`` (train C-GQA 1,076 pairs,
val UT-Zappos 136, test MIT-States 556: the seed's Table 3), its verb-object twin
``action_obj`` (train HICO, val Visual Genome, test imSitu), and per-dataset lists
(``mit_states``, ``cgqa``, ``utzap``, ``hico``, ``vcoco``).  The images are a separate
download, so each layout is built from its lists alone with ``--items-per-pair`` synthetic
items per listed pair (every pair the same number of items; the real counts play no part),
exactly as ``bayes-concepts space from-pairs DIR --pairs-dir LISTS --items-per-pair N --k 1 2 3
--worlds 5`` builds it, and every split it saves is audited (comp gap with hard and easy
negatives, in its three parts, coverage, divergences, exclusions), timed per layout.

Usage: ``python benchmarks/rlcl_lists.py ASSETS [--items-per-pair 20] [--episodes 2000]``
where ``ASSETS`` is ``api/datasets/assets`` of a copy of RLCL's code.  The summary goes to
``--out`` (default ``benchmarks/results/rlcl_lists.json``); the lists themselves are not
copied, only their sha256 are recorded.
"""
from __future__ import annotations

import argparse
import hashlib
import resource
import sys
import tempfile
import time
from pathlib import Path

from bayes_concepts.errors import BayesConceptsError
from bayes_concepts.suites.pairs import build_pair_space
from bayes_concepts.report import audit_splits
from bayes_concepts.spaces import load_space
from bayes_concepts.splits import make_split

from _summary import gap_in_parts, write_summary

ROOT = Path(__file__).resolve().parents[1]
LAYOUTS = ("attr_obj", "action_obj", "mit_states", "cgqa", "utzap", "hico", "vcoco")


def audit_layout(lists: Path, work: Path, args) -> dict:
    t0 = time.perf_counter()
    lines = build_pair_space(work, None, lists, ks=(1, 2, 3), worlds=(5,), seed=args.seed,
                             items_per_pair=args.items_per_pair)
    build_s = time.perf_counter() - t0
    space = load_space(work)
    splits = {f.stem: make_split(space, f) for f in sorted((work / "splits").glob("*.toml"))}
    t1 = time.perf_counter()
    reports = audit_splits(space, splits, n_episodes=args.episodes, seed=args.seed)
    audit_s = time.perf_counter() - t1
    out = {"lists": {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(lists.glob("*.json"))},
           "pairs": space.params["pairs"], "concepts": space.n_concepts, "items": space.n_scenes,
           "excluded": {k: {"count": v["count"], "first": v["first"]}
                        for k, v in space.params.get("excluded", {}).items()},
           "build_lines": lines, "build_seconds": build_s, "audit_seconds": audit_s, "splits": {}}
    for r in reports:
        name = r["split"]
        entry = {"sizes": r["split_object"].sizes(), "usable_test_concepts": r["episodes"]["usable"],
                 "too_small": r["episodes"]["excluded"]["count"],
                 "atom_divergence": r["divergence"]["atom_divergence"],
                 "compound_divergence": r["divergence"]["compound_divergence"], "seconds": r["seconds"]}
        entry.update(gap_in_parts(r["gap"]))
        out["splits"][name] = entry
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("assets", help="RLCL's api/datasets/assets folder (one sub-folder of JSON lists per layout)")
    ap.add_argument("--layouts", nargs="+", default=list(LAYOUTS), metavar="NAME",
                    help=f"the sub-folders to audit (default: {' '.join(LAYOUTS)})")
    ap.add_argument("--items-per-pair", type=int, default=20,
                    help="synthetic items per listed pair (default 20: MIT-States has about 27 images per pair)")
    ap.add_argument("--episodes", type=int, default=2000, help="test episodes per split and negatives (default 2000)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the spaces' splits and the episodes (default 0)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "rlcl_lists.json"),
                    help="the JSON summary (default benchmarks/results/rlcl_lists.json)")
    args = ap.parse_args()
    assets = Path(args.assets)
    missing = [n for n in args.layouts if not (assets / n).is_dir()]
    if missing:
        print(f"rlcl_lists: {assets}: no sub-folder {', '.join(missing)} (give RLCL's api/datasets/assets)",
              file=sys.stderr)
        return 2
    figures = {}
    with tempfile.TemporaryDirectory(prefix="rlcl_lists_") as tmp:
        for name in args.layouts:
            try:
                figures[name] = audit_layout(assets / name, Path(tmp) / name, args)
            except BayesConceptsError as exc:
                print(f"rlcl_lists: {name}: {exc}", file=sys.stderr)
                return 2
            f = figures[name]
            print(f"{name}: built in {f['build_seconds']:.1f} s, audited {len(f['splits'])} splits in "
                  f"{f['audit_seconds']:.1f} s", flush=True)
            for split, e in f["splits"].items():
                h = e["hard"]
                print(f"  {split:13s} test {e['sizes']['test']:5d}  gap hard {h['gap']:5.1f} = arr "
                      f"{h['parts']['novel_arrangements']:5.1f} + comp {h['parts']['novel_compounds']:5.1f} + atoms "
                      f"{h['parts']['novel_atoms']:5.1f}; easy {e['easy']['gap']:5.1f}; atom div "
                      f"{e['atom_divergence']:.3f}", flush=True)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    path = write_summary(args.out, "rlcl_lists", figures, assets=str(assets), items_per_pair=args.items_per_pair,
                         episodes=args.episodes, seed=args.seed, peak_mb=peak_mb,
                         total_seconds=sum(f["build_seconds"] + f["audit_seconds"] for f in figures.values()))
    print(f"peak {peak_mb:.0f} MB; wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
