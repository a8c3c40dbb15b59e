"""The ladder's wall time, two checkouts side by side in one run, and whether their results agree
bit for bit (issue 53, item 1).

    python benchmarks/ladder_speed.py --before /path/to/old/checkout [--space spaces/paper] [--episodes 5000]
        [--curve]

Each case runs ``bayes-concepts ladder SPACE --episodes N --out FILE`` (the default rungs) as
its own process with ``PYTHONPATH`` set to a checkout (``--before``, then this one), one after
the other, and records its wall time and peak RSS (``/usr/bin/time``'s maximum resident set).  ``--curve``
adds the benchmark's ladder (``benchmarks/ladder.py curi``: the learned priors at alpha 1, 10,
100 and the sampling learner at n = 100, 1,000, 10,000; 14 rungs), whose summary rows are
compared instead.  Every data variable of the two results files is compared for equality
(NaN equal to NaN).  The learned prior's derivations are kept in the space's index folder by
the later code: the first run after a space is built parses them (``cold``), later runs read
them; the ``after`` case removes the kept file first unless ``--warm``.  Writes
``benchmarks/results/ladder_speed.json``, keeping the cases a run did not measure (each case
records its own commits and when it was measured).
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

import numpy as np
import xarray as xr

from _summary import RESULTS, write_summary

ROOT = Path(__file__).resolve().parent.parent


def _run(cmd, code: Path, cwd) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code), "MPLBACKEND": "Agg"}
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "MAXRSS_KB %M", *map(str, cmd)], env=env, cwd=cwd, capture_output=True,
                       text=True)
    seconds = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({p.returncode}): {p.stderr[-500:]}")
    peak_kb = int(p.stderr.rsplit("MAXRSS_KB", 1)[1].split()[0])
    return {"seconds": round(seconds, 1), "peak_rss_mb": round(peak_kb / 1024, 1)}


def _commit(checkout: Path) -> str:
    p = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return p.stdout.strip() or "unknown"


def _rows_equal(a, b) -> bool:
    """Summary rows equal, NaN equal to NaN (JSON keeps NaN)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _same(a: Path, b: Path) -> dict:
    da, db = xr.open_dataset(a), xr.open_dataset(b)
    out = {}
    for v in da.data_vars:
        x, y = da[v].values, db[v].values
        out[v] = bool(x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the earlier checkout")
    ap.add_argument("--space", type=Path, default=ROOT / "spaces" / "paper")
    ap.add_argument("--episodes", type=int, default=5000)
    ap.add_argument("--curve", action="store_true", help="also the 14-rung benchmark ladder (benchmarks/ladder.py)")
    ap.add_argument("--warm", action="store_true", help="keep the learned prior's kept derivations for 'after'")
    ap.add_argument("--benchmark", nargs=2, metavar=("NAME", "SPACE"), action="append", default=[],
                    help="also benchmarks/ladder.py NAME SPACE (e.g. conceptworld spaces/cw), rows compared; repeatable")
    ap.add_argument("--only-benchmarks", action="store_true", help="skip the default ladder (keep its recorded case)")
    ap.add_argument("--before-label", default="",
                    help="what the earlier checkout is, recorded with each case it measures (e.g. a commit with a "
                         "results-changing fix applied on top, so both compute the same rows)")
    args = ap.parse_args(argv)
    space = args.space.resolve()
    path = RESULTS / "ladder_speed.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    figures = old.get("figures") or {"space": str(args.space), "episodes_per_cell": args.episodes, "cases": {}}
    jobs = ([("curve_ladder", "curi", space)] if args.curve else []) + [
        (f"{name}_ladder", name, Path(d).resolve()) for name, d in args.benchmark]
    # what each case measured now records (the file keeps the cases a run did not measure)
    case_provenance = {"after_commit": _commit(ROOT), "before_commit": _commit(args.before),
                       "measured": time.strftime("%Y-%m-%d %H:%M"),
                       **({"before_label": args.before_label} if args.before_label else {})}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.only_benchmarks:
            kept = space / "index" / "learned_prior_derivations.npz"
            runs = {}
            for label, code in (("before", args.before.resolve()), ("after", ROOT)):
                if label == "after" and not args.warm:
                    kept.unlink(missing_ok=True)
                out = Path(tmp) / f"{label}.nc"
                cmd = [sys.executable, "-m", "bayes_concepts.cli", "ladder", str(space), "--episodes",
                       str(args.episodes), "--out", str(out)]
                runs[label] = _run(cmd, code, tmp)
                print(label, "default ladder", runs[label], file=sys.stderr, flush=True)
            same = _same(Path(tmp) / "before.nc", Path(tmp) / "after.nc")
            figures["cases"]["default_ladder"] = {
                **runs, "ratio": round(runs["before"]["seconds"] / runs["after"]["seconds"], 2),
                "variables_equal": same, "all_equal": all(same.values()), **case_provenance,
                "derivations": "warm" if args.warm else "cold (parsed in the after run)"}
        for case, name, where in jobs:
            rows, runs = {}, {}
            for label, code in (("before", args.before.resolve()), ("after", ROOT)):
                summary = f"ladder_speed_{label}"
                cmd = [sys.executable, str(code / "benchmarks" / "ladder.py"), name, str(where), "--episodes",
                       str(args.episodes), "--name", summary]
                runs[label] = _run(cmd, code, str(code))
                done = code / "benchmarks" / "results" / f"{summary}.json"
                rows[label] = json.loads(done.read_text())["figures"]["rows"]
                done.unlink()
                print(label, case, runs[label], file=sys.stderr, flush=True)
            figures["cases"][case] = {**runs, "space": str(where), **case_provenance,
                                      "ratio": round(runs["before"]["seconds"] / runs["after"]["seconds"], 2),
                                      "rows_equal": _rows_equal(rows["before"], rows["after"])}
    out = write_summary(path, "the ladder's wall time, before and after, side by side",
                        figures, before=str(args.before), before_commit=_commit(args.before))
    print(f"written {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
