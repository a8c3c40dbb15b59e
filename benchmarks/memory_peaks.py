"""Peak memory of three runs a user met (issue 56, item 7), before and after, side by side.

Each case runs as its own process, with the toolkit of ``--code DIR`` (a checkout: its root
goes first on ``PYTHONPATH``, so two checkouts can be compared from one script).  Its memory
is read from ``/proc/PID/status`` every 0.1 s: the peak of the anonymous memory (``RssAnon``:
arrays the run allocated) and of the file-backed pages (``RssFile``: a space's memory-mapped
signatures, which the kernel can drop and re-read) are kept apart, because a peak of
mapped pages is not memory the run holds; ``VmHWM`` is the kernel's peak of the two together
(what ``/usr/bin/time`` calls the maximum resident set size).

Cases (each skipped, and said so, when its input is not given):

* ``from_pairs``: ``space from-pairs`` of C-GQA's natural split with 20 synthetic items per
  pair (155,340 items; ``--cgqa DIR``: the folder holding ``train_pairs.txt``, as
  ``data fetch c-gqa`` lays it out);
* ``audit``: ``audit SPACE`` of every split, 2,000 episodes (``--space``: a paper-scale space);
* ``notebook_10``: ``notebooks/10_ladder.ipynb`` executed on ``--space`` (``--notebook-fast``:
  its small curves).

Run::

    python benchmarks/memory_peaks.py --code . --label after --cgqa data/c-gqa/dataset/cgqa/compositional-split-natural \
        --space spaces/paper

Results are merged into ``benchmarks/results/memory_peaks.json`` under the label; ``--env
KEY=VALUE`` runs every case with that environment setting (recorded with the label), e.g.
``BAYES_CONCEPTS_MAPPED_RSS=1G``: the file-backed pages a process may keep (large row files that do
not fit are read with pread; a task drops the mapped pages it read once past it).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "memory_peaks.json"


def _descendants(root: int) -> list:
    """``root`` and every process below it (a notebook's kernel runs in a child)."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    kids.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += kids.get(pid, [])
    return out


def measure(cmd, env, cwd=None) -> dict:
    """Run ``cmd``; the largest single process's (of it and its children) peaks in GB of
    RssAnon, RssFile (+ RssShmem) and VmHWM, wall seconds, exit code."""
    t0 = time.monotonic()
    errors = tempfile.TemporaryFile("w+")  # a file, not a pipe: a long log cannot block the run
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=errors, text=True)
    peak = {"anon": 0, "file": 0, "hwm": 0}
    while p.poll() is None:
        for pid in _descendants(p.pid):
            try:
                with open(f"/proc/{pid}/status") as f:
                    v = {ln.split(":")[0]: int(ln.split()[1]) for ln in f if ln.startswith(("Rss", "VmHWM"))}
            except (OSError, ValueError, IndexError):
                continue
            peak["anon"] = max(peak["anon"], v.get("RssAnon", 0))
            peak["file"] = max(peak["file"], v.get("RssFile", 0) + v.get("RssShmem", 0))
            peak["hwm"] = max(peak["hwm"], v.get("VmHWM", 0))
        time.sleep(0.1)
    errors.seek(0)
    err = errors.read()
    errors.close()
    out = {f"peak_{k}_gb": round(v / 1e6, 3) for k, v in peak.items()}  # kB -> GB
    out.update(seconds=round(time.monotonic() - t0, 1), returncode=p.returncode)
    if p.returncode:
        out["stderr_tail"] = err[-400:]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--code", type=Path, default=ROOT, help="the checkout whose toolkit runs (default this one)")
    ap.add_argument("--label", required=True, help="the entry to write: before, after, ...")
    ap.add_argument("--cgqa", type=Path, help="C-GQA's compositional-split-natural folder (train/val/test_pairs.txt)")
    ap.add_argument("--space", type=Path, help="a paper-scale space for audit and notebook 10")
    ap.add_argument("--cases", nargs="+", default=["from_pairs", "audit", "notebook_10"])
    ap.add_argument("--notebook-fast", action="store_true", help="notebook 10 with its small curves")
    ap.add_argument("--notebook-episodes", type=int, default=2000, help="notebook 10's test episodes per cell")
    ap.add_argument("--env", nargs="+", default=[], metavar="KEY=VALUE",
                    help="environment settings for every case, recorded with the label (e.g. BAYES_CONCEPTS_MAPPED_RSS=1G)")
    args = ap.parse_args(argv)
    code = args.code.resolve()
    extra = dict(kv.split("=", 1) for kv in args.env)
    env = {**os.environ, "PYTHONPATH": str(code), "MPLBACKEND": "Agg", **extra}
    bc = [sys.executable, "-m", "bayes_concepts.cli"]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases:
            if case == "from_pairs" and args.cgqa:
                cmd = bc + ["space", "from-pairs", f"{tmp}/cgqa", "--pairs-dir", str(args.cgqa), "--items-per-pair", "20"]
            elif case == "audit" and args.space:
                cmd = bc + ["audit", str(args.space.resolve()), "--episodes", "2000"]
            elif case == "notebook_10" and args.space:
                env_nb = {**env, "BAYES_CONCEPTS_SPACE": str(args.space.resolve()), "BAYES_CONCEPTS_WORK": tmp,
                          "BAYES_CONCEPTS_EPISODES": str(args.notebook_episodes),
                          **({"BAYES_CONCEPTS_FAST": "1"} if args.notebook_fast else {})}
                cmd = [sys.executable, "-m", "jupyter", "execute", str(code / "notebooks" / "10_ladder.ipynb")]
                results[case] = {**measure(cmd + ["--output", f"{tmp}/10_ladder.ipynb"], env_nb, cwd=str(code / "notebooks")),
                                 "fast": args.notebook_fast, "episodes": args.notebook_episodes}
                print(case, results[case], flush=True)
                continue
            else:
                print(f"{case}: skipped (its input was not given)")
                continue
            results[case] = measure(cmd, env, cwd=tmp)  # not in a checkout: `python -m` puts the cwd first on sys.path
            print(case, results[case], flush=True)
    doc = json.loads(OUT.read_text()) if OUT.exists() else {}
    run = doc.setdefault("runs", {}).setdefault(args.label, {"cases": {}})
    run.update(code=str(code), date=time.strftime("%Y-%m-%d"), cores=os.cpu_count(), env=extra)
    run["cases"].update({case: {**r, "code": str(code)} for case, r in results.items()})  # a case measured
    # again replaces its entry (with the checkout it ran); the others stay
    doc["what"] = ("peak memory (GB) per case: peak_anon_gb = anonymous memory the run allocated, peak_file_gb = "
                   "file-backed pages (a space's memory-mapped signatures, droppable), peak_hwm_gb = the kernel's "
                   "peak resident set (both); see benchmarks/memory_peaks.py")
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
