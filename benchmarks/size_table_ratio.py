"""The full size table (``benchmarks/gap.py``) of two checkouts, compared after both ran one after
the other on the same space (issue 53's side-by-side figure).

    (cd OLD && PYTHONPATH=OLD python benchmarks/gap.py SPACE)
    PYTHONPATH=. python benchmarks/gap.py SPACE
    python benchmarks/size_table_ratio.py --before OLD

Reads each checkout's ``benchmarks/results/gap.json`` (wall time, peak RSS) and
``benchmarks/out/gap.nc`` (every per-episode result), checks every data variable the earlier
results have is equal (NaN equal to NaN), and writes ``benchmarks/results/size_table_ratio.json``.
"""
from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

import numpy as np
import xarray as xr

from _summary import RESULTS, write_summary

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the earlier checkout (its gap.py already run)")
    args = ap.parse_args(argv)
    runs, data = {}, {}
    for label, code in (("before", args.before.resolve()), ("after", ROOT)):
        f = json.loads((code / "benchmarks" / "results" / "gap.json").read_text())["figures"]
        commit = subprocess.run(["git", "-C", str(code), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        runs[label] = {"commit": commit, "wall_s": round(f["wall_s"], 1), "peak_rss_mb": round(f["peak_rss_mb"], 1),
                       "episodes_and_oracles_s": round(f["episodes_and_oracles_s"], 1)}
        data[label] = xr.open_dataset(code / "benchmarks" / "out" / "gap.nc")
    equal = {v: bool(np.array_equal(data["before"][v].values, data["after"][v].values,
                                    equal_nan=data["before"][v].dtype.kind == "f"))
             for v in data["before"].data_vars}
    figures = {**runs, "ratio": round(runs["before"]["wall_s"] / runs["after"]["wall_s"], 2),
               "variables_equal": equal, "all_equal": all(equal.values()),
               "episodes_per_cell": int(data["after"].sizes["episode"])}
    out = write_summary(RESULTS / "size_table_ratio.json", "the full size table, two checkouts one after the other",
                        figures)
    print(f"written {out}: {figures['ratio']}x, all equal: {figures['all_equal']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
