"""The small JSON summary every benchmark commits under ``benchmarks/results/``.

A summary holds what produced the figures (the command line, the commit and whether the
tree had uncommitted changes, the date, the machine) beside the figures themselves, so a
number in the docs can be traced to the run that measured it
(``tests/test_readme_numbers.py`` checks that it can).  Large outputs (netCDF results,
models, logs) stay in ``benchmarks/out/``, which is not committed.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _git(*args: str) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=Path(__file__).resolve().parent, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def machine() -> dict:
    """Facts about this machine: Python, processor, usable cores, memory (GiB), torch if loaded."""
    try:
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem_gib = None
    facts = {"python": platform.python_version(), "processor": platform.processor() or platform.machine(),
             "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
             "memory_gib": round(mem_gib, 1) if mem_gib else None, "load_avg": list(os.getloadavg())}
    if "torch" in sys.modules:
        facts["torch"] = sys.modules["torch"].__version__
    return facts


def provenance() -> dict:
    """The command, commit (``dirty`` if the tree had changes), UTC date and machine of this run."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
            "commit": _git("rev-parse", "HEAD"), "dirty": bool(status) if status is not None else None,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine()}


def write_summary(path: str | os.PathLike, benchmark: str, figures: dict, **extra) -> Path:
    """Write ``{"benchmark", "provenance", **extra, "figures"}`` to ``path`` atomically (JSON)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"benchmark": benchmark, "provenance": provenance(), **extra, "figures": figures}
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(json.dumps(doc, indent=2, default=float) + "\n")
    os.replace(tmp, path)
    return path


def gap_in_parts(gap_rows) -> dict:
    """Per negatives setting, an audit's gap in parts as the pair benchmarks' summaries record
    it: each oracle's mAP, the gap with its interval, the CBA gap, the three parts, the share
    of episodes where the weak oracle knows nothing that fits (``gap_rows``: the audit's
    ``gap`` rows, :func:`bayes_concepts.gap.audit`)."""
    from bayes_concepts.gap import GAP_PARTS
    return {row["negatives"]: {
        "map": {lr: row[lr]["map"] for lr in ("weak", "compound", "atom", "strong")},
        "gap": row["gap"]["map"], "gap_ci": row["gap"]["map_ci"], "cba_gap": row["gap"]["cba"],
        "parts": {k: row["parts"]["map"][k] for k in GAP_PARTS},
        "weak_empty_share": row["weak_empty_share"]} for row in gap_rows}
