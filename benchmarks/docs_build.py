"""How long ``make docs`` takes: the guide, the API reference and the notebooks, built with every
code cell and notebook executed, first with an empty execution cache (cold), then again with
the cache the first build wrote (warm), then ``make docs-check`` (nothing executed).

    python benchmarks/docs_build.py [--space DIR]

Each build runs the command ``make docs`` runs (``sphinx-build -W --keep-going -q -b html``,
``BAYES_CONCEPTS_DOCS_EXECUTE=cache``, ``MPLBACKEND=Agg``, the notebooks on ``--space``, the demo
space by default) into a fresh temporary output folder, so the cold build starts with no
doctrees and no cache; numba's kernel cache is the one already on the machine.  Writes
``benchmarks/results/docs_build.json``: each build's wall time, CPU time of its process tree and
peak RSS.  Times on a shared machine are noisy: compare the builds of one run.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import RESULTS, write_summary  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _build(out: Path, execute: str, env: dict) -> dict:
    sphinx = Path(sys.executable).with_name("sphinx-build")
    cmd = [str(sphinx), "-W", "--keep-going", "-q", "-b", "html", "-d", str(out / "doctrees"), "docs",
           str(out / "html")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, env=dict(env, BAYES_CONCEPTS_DOCS_EXECUTE=execute, BAYES_CONCEPTS_DOCS_CACHE=str(out / "cache")),
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode:
        raise SystemExit(f"sphinx-build failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
    return {"wall_s": round(wall, 1), "cpu_s": round((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), 1),
            "peak_rss_mb_largest_child": round(after.ru_maxrss / 1024)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--space", default=str(ROOT / "spaces" / "demo"),
                    help="the space the notebooks run on (default spaces/demo; built with --preset demo if missing)")
    args = ap.parse_args(argv)
    space = Path(args.space).resolve()
    if not (space / "manifest.json").exists():
        subprocess.run([str(Path(sys.executable).with_name("bayes-concepts")), "space", "build", str(space),
                        "--preset", "demo", "--quiet"], check=True)
    env = dict(os.environ, BAYES_CONCEPTS_SPACE=str(space), MPLBACKEND="Agg")
    figures = {}
    with tempfile.TemporaryDirectory(prefix="docs_build_") as tmp:
        out = Path(tmp)
        for name, execute in (("cold", "cache"), ("warm", "cache")):
            figures[name] = _build(out, execute, env)
            print(f"make docs, {name} cache: {figures[name]}", flush=True)
    with tempfile.TemporaryDirectory(prefix="docs_check_") as tmp:
        figures["docs_check"] = _build(Path(tmp), "off", env)
        print(f"make docs-check: {figures['docs_check']}", flush=True)
    pages = [p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts and "notebooks" not in p.parts[-2:-1]]
    figures["pages_with_code_cells"] = sum("{code-cell}" in p.read_text(encoding="utf-8") for p in pages)
    figures["code_cells"] = sum(p.read_text(encoding="utf-8").count("```{code-cell}") for p in pages)
    figures["notebooks"] = len(list((ROOT / "notebooks").glob("*.ipynb")))
    write_summary(RESULTS / "docs_build.json", "make docs: cold and warm execution cache, and make docs-check",
                  figures, space=str(space.relative_to(ROOT)) if space.is_relative_to(ROOT) else str(space))
    return 0


if __name__ == "__main__":
    sys.exit(main())
