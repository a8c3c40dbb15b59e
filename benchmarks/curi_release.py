"""The `curi` preset against CURI's release: the space's size and its split sizes (the tables of docs/benchmarks/curi.md).

Builds the release's space with ``--preset curi`` into SPACE (default ``spaces/curi``) unless
a saved space is there, timing the build (wall seconds, peak RSS of the build's process),
and writes the split sizes of the ``curi-release`` protocol beside the release's
(``analyses/reproduce_curi.py``'s ``split_sizes``) to ``benchmarks/results/curi_release.json``.

Usage: ``python benchmarks/curi_release.py [SPACE] [--rebuild]``
"""
from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import RESULTS, write_summary  # noqa: E402  (benchmarks/ is not a package)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("space", nargs="?", default="spaces/curi", help="the curi space's folder (default spaces/curi)")
    ap.add_argument("--rebuild", action="store_true",
                    help="build it again even if a saved space is there (the build is timed only when it runs)")
    ap.add_argument("--results", default=str(RESULTS / "curi_release.json"),
                    help="the committed summary (default benchmarks/results/curi_release.json)")
    args = ap.parse_args()
    space_dir = Path(args.space)
    build = None
    if args.rebuild or not (space_dir / "manifest.json").exists():
        if args.rebuild and space_dir.exists():
            shutil.rmtree(space_dir)
        t = time.perf_counter()
        subprocess.run([str(Path(sys.executable).parent / "bayes-concepts"), "space", "build", str(space_dir),
                        "--preset", "curi"], check=True)
        build = {"wall_s": time.perf_counter() - t,
                 "peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}
    from analyses.reproduce_curi import RELEASE_CONCEPTS, split_sizes
    from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
    space = HypothesisSpace.load(space_dir)
    sizes = split_sizes(space, "curi-release")
    figures = {"concepts": int(space.n_concepts), "release_concepts": RELEASE_CONCEPTS,
               "synonym_classes": space.n_synonym_classes,
               "build": build, "split_sizes": sizes.to_dict(orient="records")}
    write_summary(args.results, "the curi preset and the curi-release protocol's split sizes", figures)
    print(sizes.to_string(index=False))


if __name__ == "__main__":
    main()
