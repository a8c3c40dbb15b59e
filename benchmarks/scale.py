"""Scale-out benchmark (the "Scale" issue): wall time and peak RSS of every process.

Each job runs the ``bayes-concepts`` command in a child process; a monitor thread reads
``/proc/<pid>/status`` of the child and of all its descendants (Dask workers) every 0.25 s
and keeps, per process, the peak resident set (``VmHWM``: anonymous *and* file-backed pages,
so memory-mapped signatures a process has touched count) and the largest anonymous part
seen (``RssAnon``: memory the process itself holds).  Jobs:

* ``gap SPACE``: the full comp-gap table (9 splits x hard/easy x 20,000 episodes, size
  likelihood) with ``bayes-concepts gap``; ``--scheduler`` as the command's;
* ``build OUT --scenes N``: ``bayes-concepts space build OUT --preset paper --scenes N``
  (CURI's grammar, 2,000,000 samples) with ``--scheduler``;
* ``overhead``: the 990,000-scene build in-process and with ``--scheduler local:2``: the
  ratio of the wall times is the cluster's overhead (or gain);
* ``all``: what the issue asks for, one job after the other (never two at once): the gap
  table on ``--space`` (default spaces/paper), the overhead pair, the 5,000,000-scene build
  with local:2 and its gap table with local:2;
* ``ap-tolerance SPACE``: the full table four times, side by side in this process, cell by
  cell (:func:`ap_tolerance_job`): the size likelihood, the noisy likelihood at the default AP
  tolerance, at 1e-3 and exact (0); then the wall times and their ratios to the size table,
  the mean and largest certified bound on an episode's AP, and per tolerance the largest difference of any cell's mAP gap from the
  exact run beside a tenth of that cell's bootstrap interval width, written to
  ``benchmarks/results/ap_tolerance.json`` (``--json-out``);
* ``tolerance-sweep SPACE``: the size likelihood and the noisy one at several AP tolerances
  (default 1e-4, 1e-2, 0.1, 0.5), side by side on four splits' hard cells
  (:func:`tolerance_sweep_job`): how much of the noisy table's time the tolerance governs;
  then the noisy posterior alone against the size likelihood's whole episode (the floor no
  AP can lower); written to ``benchmarks/results/ap_tolerance_sweep.json``.

Results go to ``benchmarks/out/scale.json`` (one entry per job, appended) and a table on
stdout.  Usage::

    python benchmarks/scale.py gap spaces/paper [--scheduler local:2] [--episodes 20000] [--likelihood both] [--cold]
    python benchmarks/scale.py build spaces/curi5m --scenes 5000000 --scheduler local:2
    python benchmarks/scale.py overhead [--keep]
    python benchmarks/scale.py all
    python benchmarks/scale.py ap-tolerance spaces/paper [--episodes 20000] [--scheduler local:2]
    python benchmarks/scale.py tolerance-sweep spaces/paper [--tolerances 1e-4 1e-2 0.1 0.5] [--episodes 2000]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import RESULTS, write_summary  # noqa: E402  (benchmarks/ is not a package)

OUT = Path("benchmarks/out")
BIN = Path(sys.executable).parent / "bayes-concepts"


def _status(pid: int) -> dict:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                    out[key] = int(value.split()[0]) / 1024  # MiB
    except OSError:
        pass
    return out


def _children(pid: int) -> list:
    try:
        import psutil
        return [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except Exception:  # noqa: BLE001 - the process may be gone
        return []


def _role(pid: int, root: int) -> str:
    if pid == root:
        return "main"
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "child"
    if "resource_tracker" in cmd:
        return "resource tracker"
    return "dask worker" if "spawn_main" in cmd or "multiprocessing" in cmd else "child"


def run_job(name: str, argv: list, env=None) -> dict:
    """Run ``argv``, watching the memory of it and its descendants; returns the job's figures."""
    peaks: dict = {}
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **(env or {})})
    done = threading.Event()

    def watch():
        while not done.is_set():
            for pid in [proc.pid, *_children(proc.pid)]:
                st = _status(pid)
                if not st:
                    continue
                p = peaks.setdefault(pid, {"role": _role(pid, proc.pid), "peak_rss_mb": 0.0, "peak_anon_mb": 0.0})
                p["peak_rss_mb"] = max(p["peak_rss_mb"], st.get("VmHWM", 0.0))
                p["peak_anon_mb"] = max(p["peak_anon_mb"], st.get("RssAnon", 0.0))
            done.wait(0.25)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        print(f"  | {line}", end="", flush=True)
    rc = proc.wait()
    done.set()
    thread.join()
    wall = time.perf_counter() - t0
    procs = sorted(peaks.values(), key=lambda p: -p["peak_rss_mb"])
    procs = [p for p in procs if p["role"] != "resource tracker"]
    result = {"job": name, "argv": [str(a) for a in argv], "rc": rc, "wall_s": round(wall, 1),
              "processes": procs, "max_peak_rss_mb": round(max((p["peak_rss_mb"] for p in procs), default=0), 1),
              "max_peak_anon_mb": round(max((p["peak_anon_mb"] for p in procs), default=0), 1),
              "tail": lines[-25:]}
    if rc != 0:
        print(f"{name}: exit status {rc}", file=sys.stderr)
    return result


def evict(space) -> int:
    """Drop the files of ``space`` from the page cache (``posix_fadvise(DONTNEED)``; pages
    another process has mapped stay), so that a job starts cold; returns the bytes advised."""
    total = 0
    for f in Path(space).rglob("*"):
        if f.is_file():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                total += f.stat().st_size
            finally:
                os.close(fd)
    return total


def gap_job(space, scheduler=None, episodes=20_000, tag="", code=None, likelihood="size", cold=False) -> dict:
    """The comp-gap table; ``code``: another checkout of the toolkit to run instead (its
    ``PYTHONPATH``), for side-by-side figures with an earlier version; ``cold``: evict the
    space's files from the page cache first."""
    OUT.mkdir(parents=True, exist_ok=True)
    if cold:
        print(f"evicted {evict(space) / 1e9:.1f} GB of {space} from the page cache", flush=True)
    argv = [BIN, "gap", space, "--episodes", str(episodes), "--likelihood", likelihood, "--out",
            OUT / f"scale_gap{tag}.nc"] + (["--scheduler", scheduler] if scheduler else [])
    name = (f"gap {space} ({scheduler or 'in-process'}, {likelihood} likelihood{', cold page cache' if cold else ''}"
            f"{', code ' + str(code) if code else ''})")
    r = run_job(name, argv, env={"PYTHONPATH": str(Path(code).resolve())} if code else None)
    r.update(space=str(space), scheduler=scheduler or "in-process", episodes_per_cell=episodes,
             likelihood=likelihood, cold=cold, code=str(code) if code else "this checkout")
    return r


def build_job(out, scenes, scheduler=None, samples=None) -> dict:
    argv = [BIN, "space", "build", out, "--preset", "paper", "--scenes", str(scenes), "--quiet", "--force"]
    argv += ["--samples", str(samples)] if samples else []
    argv += ["--scheduler", scheduler] if scheduler else []
    r = run_job(f"build {scenes:,} scenes ({scheduler or 'in-process'})", argv)
    r.update(scenes=scenes, scheduler=scheduler or "in-process", out=str(out))
    if r["rc"] == 0:
        manifest = json.loads((Path(out) / "manifest.json").read_text())
        r["counts"] = manifest["counts"]
        import hashlib
        r["manifest_sha256"] = hashlib.sha256((Path(out) / "manifest.json").read_bytes()).hexdigest()
        r["disk_gb"] = round(sum(f.stat().st_size for f in Path(out).rglob("*") if f.is_file()) / 1e9, 2)
    return r


#: the runs of the ``ap-tolerance`` job: name -> OracleSettings fields
AP_TOLERANCE_RUNS = {"size": {"likelihood": "size"},
                     "noisy_default": {"likelihood": "noisy"},
                     "noisy_1e-3": {"likelihood": "noisy", "ap_tolerance": 1e-3},
                     "noisy_exact": {"likelihood": "noisy", "ap_tolerance": 0.0}}


def compare_to_exact(cells_ds, exact_ds) -> dict:
    """How far results ``cells_ds`` (one Dataset per cell, at an AP tolerance) are from the exact
    run's (``exact_ds``, the same cells in the same order): the certified bounds of the oracles'
    APs (mean, largest; fractions) and, per (split, negatives) cell, the difference of the mAP
    gap from the exact run's (percentage points) against a tenth of the exact run's 95 %
    bootstrap interval width; the cell with the largest difference."""
    from bayes_concepts.gap import summarise
    bounds = np.concatenate([ds["ap_bound"].sel(learner=["strong", "weak"]).values.ravel() for ds in cells_ds])
    cells = []
    for ds, exact in zip(cells_ds, exact_ds):
        (r,), (g,) = summarise(exact), summarise(ds)
        width = r["gap"]["map_ci"][1] - r["gap"]["map_ci"][0]
        cells.append({"split": r["split"], "negatives": r["negatives"], "map_gap": g["gap"]["map"],
                      "map_gap_exact": r["gap"]["map"], "abs_diff": abs(g["gap"]["map"] - r["gap"]["map"]),
                      "ci_width_over_10": width / 10})
    worst = max(cells, key=lambda c: c["abs_diff"])
    return {"ap_tolerance": float(cells_ds[0].attrs.get("ap_tolerance", 0.0)),
            "mean_bound": float(np.nanmean(bounds)), "max_bound": float(np.nanmax(bounds)),
            "largest_map_gap_diff": worst,
            "every_cell_within_ci_width_over_10": all(c["abs_diff"] <= c["ci_width_over_10"] for c in cells),
            "cells": cells}


def _interleaved(sp, splits, order, settings, episodes, scheduler=None, warm_every_split=True):
    """Run every setting of ``settings`` (name -> OracleSettings) on every (split, negatives)
    cell of ``order``, cell by cell, the first run rotating from cell to cell (so that a machine
    whose speed drifts weighs on all runs alike).  Kernels are compiled (or loaded) off the
    clock, on the first split or, with ``warm_every_split``, on 50 episodes of every split of
    ``order`` (so that no run pays for the first reads of a split's rows).  Returns
    ({setting: [Dataset per cell]}, {setting: [seconds per cell]}); a run's wall time is the
    sum of its cells'."""
    import bayes_concepts as bc
    tags = list(settings)
    warm = sorted({name for name, _ in order}) if warm_every_split else [next(iter(splits))]
    for name in warm:
        for st in settings.values():
            bc.compute_gap(sp, {name: splits[name]}, negatives=("hard",), n_episodes=50, settings=st,
                           scheduler=scheduler)
    cells = {tag: [] for tag in tags}
    seconds = {tag: [] for tag in tags}
    for i, (name, neg) in enumerate(order):
        line = []
        for tag in tags[i % len(tags):] + tags[:i % len(tags)]:
            t = time.perf_counter()
            ds = bc.compute_gap(sp, {name: splits[name]}, negatives=(neg,), n_episodes=episodes,
                                settings=settings[tag], scheduler=scheduler)
            dt = time.perf_counter() - t
            cells[tag].append(ds)
            seconds[tag].append(dt)
            line.append(f"{tag} {dt:.1f} s")
        print(f"[{i + 1}/{len(order)}] {name} {neg}: " + ", ".join(line), flush=True)
    return cells, seconds


def ap_tolerance_job(space, episodes=20_000, scheduler=None, json_out=Path("benchmarks/results/ap_tolerance.json")):
    """The comp-gap table of ``space`` with the size likelihood and with the noisy likelihood at
    the default AP tolerance, at 1e-3 and exact, side by side in this process: cell by cell
    (split x negatives), the four runs one after the other, starting with a different run in
    each cell, so that a machine whose speed drifts during the hour (this VM's did by half
    between the first and the last of four runs done one after the other) weighs on all four
    alike.  A run's wall time is the sum of its cells' (the space loaded once, the kernels
    compiled before the clock starts).  Writes ``json_out`` and returns what it holds."""
    import resource

    import bayes_concepts as bc
    sp = bc.HypothesisSpace.load(space)
    splits = bc.load_splits(sp)
    settings = {tag: bc.OracleSettings(**fields) for tag, fields in AP_TOLERANCE_RUNS.items()}
    order = [(name, neg) for neg in ("hard", "easy") for name in splits]
    cells, seconds = _interleaved(sp, splits, order, settings, episodes, scheduler, warm_every_split=False)
    wall = {tag: sum(s) for tag, s in seconds.items()}
    tags = list(settings)
    size_s = wall["size"]
    out = {"space": str(space), "episodes_per_cell": episodes, "scheduler": scheduler or "in-process",
           "method": "interleaved cell by cell in one process, the first run rotating; a run's time is the sum of "
                     "its cells'",
           "when": time.strftime("%Y-%m-%d %H:%M:%S"),
           "wall_s": {tag: round(w, 1) for tag, w in wall.items()},
           "ratio_to_size": {tag: round(w / size_s, 3) for tag, w in wall.items()},
           "peak_rss_mb_process": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "vs_exact": {tag: compare_to_exact(cells[tag], cells["noisy_exact"])
                        for tag in ("noisy_default", "noisy_1e-3")}}
    json_out = Path(json_out)
    json_out.parent.mkdir(parents=True, exist_ok=True)
    json_out.write_text(json.dumps(out, indent=2) + "\n")
    for tag in tags:
        print(f"{tag:<14} {out['wall_s'][tag]:>9,.1f} s  {out['ratio_to_size'][tag]:>6.2f} x size")
    for tag, v in out["vs_exact"].items():
        w = v["largest_map_gap_diff"]
        print(f"{tag}: AP tolerance {v['ap_tolerance']:g}, certified bound mean {v['mean_bound']:.2g} max "
              f"{v['max_bound']:.2g}; largest mAP-gap difference from exact {w['abs_diff']:.4f} points "
              f"({w['split']}, {w['negatives']}; a tenth of its interval: {w['ci_width_over_10']:.3f}); every cell "
              f"within: {v['every_cell_within_ci_width_over_10']}")
    print(f"written to {json_out}")
    return out


#: the tolerance sweep's splits (hard negatives): a cheap one, the costliest and two between
SWEEP_SPLITS = ("concept_iid", "binding_color", "counting", "boolean")


def _posterior_only_kernel():
    """A numba kernel doing the noisy path's first step alone, as the oracles' kernel does it:
    every episode's posterior over the oracle's concepts (:func:`episode_candidates`,
    :func:`normalise`) and its class weights, nothing after (no query prediction, no AP)."""
    import numba

    from bayes_concepts.oracles import kernels as K

    @numba.njit(parallel=True)
    def posterior_only(support, labels, rows, omega, log_prior, first, second, classes, n_classes, out_n):
        n_ep, n_concepts = support.shape[0], log_prior.shape[0]
        n_chunks = min(n_ep, 64)
        for chunk in numba.prange(n_chunks):
            ids = np.empty(n_concepts, np.int64)
            logw = np.empty(n_concepts)
            probs = np.empty(n_concepts)
            class_w = np.zeros(n_classes)
            listed = np.empty(n_classes, np.int64)
            for e in range(chunk * n_ep // n_chunks, (chunk + 1) * n_ep // n_chunks):
                n = K.episode_candidates(support[e], labels[e], rows, omega, log_prior, first, second, False, ids,
                                         logw, np.zeros((0, 1), np.uint64))
                K.normalise(logw, n, probs)
                m = K.add_class_weights(ids, probs, n, classes, class_w, listed)
                for q in range(m):
                    class_w[listed[q]] = 0.0
                out_n[e] = n
    return posterior_only


def _posterior_slices(kernel, oracle, first, second, sup, lab, rows_of, classes, out_n):
    """Put every episode (support scenes ``sup``, labels ``lab``) through ``kernel``
    (:func:`_posterior_only_kernel`) for ``oracle`` with the likelihood tables ``first`` and
    ``second``, a slice of support rows at a time as :meth:`Oracle.evaluate` reads them (a
    RowFile on disk, or an array); the candidates' counts go to ``out_n``."""
    from bayes_concepts.oracles.oracle import EVALUATE_SLICE
    n_classes = int(classes.max()) + 1
    for lo in range(0, len(sup), EVALUATE_SLICE):
        s = sup[lo:lo + EVALUATE_SLICE]
        scenes = np.unique(s.ravel())
        kernel(np.searchsorted(scenes, s), lab[lo:lo + EVALUATE_SLICE], np.ascontiguousarray(rows_of[scenes]),
               oracle.omega, oracle.log_prior, first, second, classes, n_classes, out_n[lo:lo + EVALUATE_SLICE])


def posterior_floor(sp, splits, episodes, seed=1):
    """The noisy path's floor against the size likelihood's whole episode, side by side: per
    split (hard negatives) and oracle, ``episodes`` episodes scored whole by the size oracle and
    put through the noisy posterior alone (:func:`_posterior_only_kernel`; support rows read a
    slice at a time as :meth:`Oracle.evaluate` reads them), alternating which goes first, after
    a warm-up of both on the same episodes.  Returns {"size_whole_s", "noisy_posterior_only_s",
    "ratio", "mean_candidates"}."""
    import bayes_concepts as bc
    kernel = _posterior_only_kernel()
    rows_of = sp.scene_concepts()
    classes = np.asarray(sp.synonym_classes, np.int64)
    size_s = post_s = 0.0
    n_cand = []
    for i, (name, split) in enumerate(splits.items()):
        eps = bc.EpisodeSampler(sp).sample(split.test, episodes, "hard", seed=seed)
        sup, lab = np.ascontiguousarray(eps.support_scenes), np.ascontiguousarray(eps.support_labels)
        size = bc.strong_and_weak(sp, split, bc.OracleSettings(likelihood="size"))
        noisy = bc.strong_and_weak(sp, split, bc.OracleSettings(likelihood="noisy"))
        for k in range(2):
            first, second, _ = noisy[k]._tables("noisy", int(eps.meta.get("n_positive", 5)), sup.shape[1], True)
            out_n = np.zeros(episodes, np.int64)

            def posterior(o=noisy[k], first=first, second=second, out_n=out_n):
                _posterior_slices(kernel, o, first, second, sup, lab, rows_of, classes, out_n)

            size[k].evaluate(eps)  # warm: compiled kernels, the split's rows paged in
            posterior()
            runs = [("size", lambda o=size[k]: o.evaluate(eps)), ("post", posterior)]
            for tag, fn in (runs if (2 * i + k) % 2 == 0 else runs[::-1]):
                t = time.perf_counter()
                fn()
                dt = time.perf_counter() - t
                if tag == "size":
                    size_s += dt
                else:
                    post_s += dt
            n_cand.append(out_n.mean())
        print(f"posterior floor: {name} done ({size_s:.1f} s size whole, {post_s:.1f} s noisy posterior alone)",
              flush=True)
    return {"size_whole_s": round(size_s, 2), "noisy_posterior_only_s": round(post_s, 2),
            "ratio": round(post_s / size_s, 3), "mean_candidates": round(float(np.mean(n_cand)), 1)}


def tolerance_sweep_job(space, tolerances=(1e-4, 1e-2, 1e-1, 0.5), episodes=2_000, split_names=SWEEP_SPLITS,
                        json_out=RESULTS / "ap_tolerance_sweep.json"):
    """How the noisy table's time depends on the AP tolerance: the size likelihood and the noisy
    one at each of ``tolerances``, side by side in this process (:func:`_interleaved`) on the
    hard-negative cells of ``split_names``; records per run the wall time, its ratio to the size
    run's and the mean and largest certified bound.  Then the floor no AP can lower: the noisy
    posterior alone against the size likelihood's whole episode (:func:`posterior_floor`).
    Writes ``json_out`` (a summary with provenance)."""
    import resource

    import bayes_concepts as bc
    sp = bc.HypothesisSpace.load(space)
    every = bc.load_splits(sp)
    unknown = [n for n in split_names if n not in every]
    if unknown:
        raise ValueError(f"no split named {', '.join(unknown)} in {space} (it has {', '.join(sorted(every))})")
    splits = {n: every[n] for n in split_names}
    settings = {"size": bc.OracleSettings(likelihood="size")}
    for t in tolerances:
        settings[f"noisy_T={t:g}"] = bc.OracleSettings(likelihood="noisy", ap_tolerance=float(t))
    order = [(name, "hard") for name in splits]
    cells, seconds = _interleaved(sp, splits, order, settings, episodes)
    wall = {tag: sum(s) for tag, s in seconds.items()}
    runs = {}
    for tag, w in wall.items():
        b = np.concatenate([ds["ap_bound"].sel(learner=["strong", "weak"]).values.ravel() for ds in cells[tag]])
        runs[tag] = {"wall_s": round(w, 2), "ratio_to_size": round(w / wall["size"], 3),
                     "mean_bound": float(np.nanmean(b)), "max_bound": float(np.nanmax(b)),
                     "cells_s": {f"{n} {g}": round(dt, 2) for (n, g), dt in zip(order, seconds[tag])}}
    floor = posterior_floor(sp, splits, episodes)
    for tag, r in runs.items():
        print(f"{tag:<16} {r['wall_s']:>8,.1f} s  {r['ratio_to_size']:>6.2f} x size  bound mean {r['mean_bound']:.2g} "
              f"max {r['max_bound']:.2g}")
    print(f"the noisy posterior alone: {floor['noisy_posterior_only_s']:.1f} s against {floor['size_whole_s']:.1f} s "
          f"for the size likelihood's whole episodes ({floor['ratio']:.2f} x; {floor['mean_candidates']:,.0f} "
          f"candidate concepts per episode on average)")
    path = write_summary(json_out, "ap_tolerance_sweep",
                         {"runs": runs, "posterior_floor": floor,
                          "peak_rss_mb_process": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024},
                         space=str(space), episodes_per_cell=episodes, cells=[f"{n} {g}" for n, g in order],
                         method="interleaved cell by cell in one process, the first run rotating, every split warmed "
                                "off the clock; a run's time is the sum of its cells'")
    print(f"written to {path}")
    return runs, floor


def noisy_breakdown_job(space, episodes=3_000, split_names=SWEEP_SPLITS, seed=1,
                        json_out=RESULTS / "noisy_breakdown.json"):
    """Where the exact noisy likelihood's time goes, against the size likelihood's, per hard cell
    of ``split_names``: the same ``episodes`` test episodes scored by both oracles of each
    likelihood (:meth:`Oracle.evaluate`, sampling left out), side by side in this process (the
    first run alternating from cell to cell, every split warmed off the clock), and the noisy
    run cut into its parts -- the posterior alone (:func:`_posterior_only_kernel`: candidates,
    normalisation, class weights), the episodes too wide to prune scored together
    (:func:`~bayes_concepts.oracles.kernels.score_deferred`, timed around the call), and the
    rest (query prediction and the pruned exact AP: spreading class weights bucket by bucket,
    then the exact scores of the scenes still in doubt), by difference.  Writes ``json_out``."""
    import resource

    import bayes_concepts as bc
    from bayes_concepts.oracles import kernels as K
    from bayes_concepts.oracles import oracle as oracle_module
    sp = bc.HypothesisSpace.load(space)
    every = bc.load_splits(sp)
    unknown = [n for n in split_names if n not in every]
    if unknown:
        raise ValueError(f"no split named {', '.join(unknown)} in {space} (it has {', '.join(sorted(every))})")
    kernel = _posterior_only_kernel()
    rows_of = sp.scene_concepts()
    classes = np.asarray(sp.synonym_classes, np.int64)
    deferred = {"s": 0.0, "n": 0}
    score_deferred = K.score_deferred

    def timed_deferred(class_w, which, *rest):
        t = time.perf_counter()
        score_deferred(class_w, which, *rest)
        deferred["s"] += time.perf_counter() - t
        deferred["n"] += len(which)

    cells = {}
    oracle_module.K.score_deferred = timed_deferred
    try:
        for i, name in enumerate(split_names):
            eps = bc.EpisodeSampler(sp).sample(every[name].test, episodes, "hard", seed=seed)
            sup, lab = np.ascontiguousarray(eps.support_scenes), np.ascontiguousarray(eps.support_labels)
            size = bc.strong_and_weak(sp, every[name], bc.OracleSettings(likelihood="size"))
            noisy = bc.strong_and_weak(sp, every[name], bc.OracleSettings(likelihood="noisy"))
            n_drawn = int(eps.meta.get("n_positive", 5))
            tables = [o._tables("noisy", n_drawn, sup.shape[1], True)[:2] for o in noisy]
            n_cand = np.zeros(episodes, np.int64)

            def posterior():
                for o, (first, second) in zip(noisy, tables):
                    _posterior_slices(kernel, o, first, second, sup, lab, rows_of, classes, n_cand)

            runs = {"size": lambda: [o.evaluate(eps) for o in size], "noisy": lambda: [o.evaluate(eps) for o in noisy],
                    "noisy_posterior": posterior}
            for fn in runs.values():  # warm: compiled kernels, the split's rows paged in
                fn()
            order = list(runs) if i % 2 == 0 else list(runs)[::-1]
            took = {}
            for tag in order:
                deferred.update(s=0.0, n=0)
                t = time.perf_counter()
                runs[tag]()
                took[tag] = time.perf_counter() - t
                if tag == "noisy":
                    took["noisy_deferred"], n_deferred = deferred["s"], deferred["n"]
            ms = {k: 1e3 * v / episodes for k, v in took.items()}
            ms["noisy_rest"] = ms["noisy"] - ms["noisy_posterior"] - ms["noisy_deferred"]
            cells[f"{name} hard"] = {
                "ms_per_episode_strong_plus_weak": {k: round(v, 3) for k, v in ms.items()},
                "noisy_over_size": round(ms["noisy"] / ms["size"], 2),
                "deferred_share_of_oracle_episodes": round(n_deferred / (2 * episodes), 3),
                "mean_noisy_candidates": round(float(n_cand.mean()), 1)}
            print(f"{name} hard: size {ms['size']:.2f} ms, noisy {ms['noisy']:.2f} ms per episode "
                  f"({ms['noisy'] / ms['size']:.1f}x): posterior {ms['noisy_posterior']:.2f}, deferred "
                  f"{ms['noisy_deferred']:.2f} ({100 * n_deferred / (2 * episodes):.0f} % of the oracles' episodes), "
                  f"query and pruned AP {ms['noisy_rest']:.2f}", flush=True)
    finally:
        oracle_module.K.score_deferred = score_deferred
    total = {k: round(float(np.mean([c["ms_per_episode_strong_plus_weak"][k] for c in cells.values()])), 3)
             for k in ("size", "noisy", "noisy_posterior", "noisy_deferred", "noisy_rest")}
    path = write_summary(json_out, "noisy_breakdown",
                         {"cells": cells, "mean_ms_per_episode": total,
                          "noisy_over_size": round(total["noisy"] / total["size"], 2),
                          "peak_rss_mb_process": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024},
                         space=str(space), episodes_per_cell=episodes, seed=seed,
                         method="Oracle.evaluate of the strong and the weak oracle on the same episodes (sampling not "
                                "timed), size and noisy side by side in one process, the first run alternating; "
                                "noisy cut into the posterior alone, the deferred scoring (timed around "
                                "score_deferred) and the rest by difference; both threads")
    print(f"written to {path}")
    return cells


def record(result: dict):
    OUT.mkdir(parents=True, exist_ok=True)
    f = OUT / "scale.json"
    runs = json.loads(f.read_text()) if f.exists() else []
    runs.append({**result, "when": time.strftime("%Y-%m-%d %H:%M:%S")})
    f.write_text(json.dumps(runs, indent=2))
    print(summary_line(result), flush=True)


def summary_line(r: dict) -> str:
    procs = ", ".join(f"{p['role']} {p['peak_rss_mb']:,.0f} MB (anon {p['peak_anon_mb']:,.0f})"
                      for p in r["processes"])
    return f"{r['job']}: wall {r['wall_s']:,.0f} s; peak RSS per process: {procs}; exit {r['rc']}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="job", required=True)
    g = sub.add_parser("gap", help="the full comp-gap table of a saved space")
    g.add_argument("space", help="a saved space directory")
    g.add_argument("--scheduler", help="local:N or a Dask scheduler address (default: in-process)")
    g.add_argument("--episodes", type=int, default=20_000, help="test episodes per cell (default 20,000)")
    g.add_argument("--likelihood", choices=["size", "noisy", "both"], default="size",
                   help="the oracles' likelihood; 'both' runs size then noisy, one after the other, and "
                        "prints the ratio of their wall times (default size)")
    g.add_argument("--code", help="run another checkout of the toolkit (e.g. a git worktree of an earlier commit)")
    g.add_argument("--cold", action="store_true",
                   help="drop the space's files from the page cache first (posix_fadvise DONTNEED)")
    b = sub.add_parser("build", help="build a space with CURI's grammar (preset paper)")
    b.add_argument("out", help="the space directory to write (overwritten)")
    b.add_argument("--scenes", type=int, default=990_000, help="scenes in the bank (default 990,000)")
    b.add_argument("--samples", type=int, help="program samples (default: the preset's, 2,000,000)")
    b.add_argument("--scheduler", help="local:N or a Dask scheduler address (default: in-process)")
    o = sub.add_parser("overhead", help="the 990,000-scene build in-process and on local:2")
    o.add_argument("--keep", action="store_true", help="keep the two spaces (default: deleted)")
    a = sub.add_parser("all", help="every job of the issue, one after the other")
    a.add_argument("--space", default="spaces/paper", help="the CURI-scale space (default spaces/paper)")
    a.add_argument("--big", default="spaces/curi5m", help="where to build the 5,000,000-scene space")
    r = sub.add_parser("table", help="the scaling table of docs/performance.md: the comp-gap table of SPACE in-process, then the "
                                     "990,000-scene build in-process and on local:2; writes the committed summary")
    r.add_argument("space", nargs="?", default="spaces/paper", help="a saved CURI-scale space (default spaces/paper)")
    r.add_argument("--results", default=str(RESULTS / "scale.json"),
                   help="the committed summary (default benchmarks/results/scale.json)")
    t = sub.add_parser("ap-tolerance", help="the full table: size, and noisy at the default AP tolerance, 1e-3 and 0")
    t.add_argument("space", help="a saved space directory")
    t.add_argument("--episodes", type=int, default=20_000, help="test episodes per cell (default 20,000)")
    t.add_argument("--scheduler", help="local:N or a Dask scheduler address (default: in-process)")
    t.add_argument("--json-out", default="benchmarks/results/ap_tolerance.json",
                   help="where to write the summary (default benchmarks/results/ap_tolerance.json)")
    w = sub.add_parser("tolerance-sweep", help="size, and noisy at several AP tolerances, on a few hard cells")
    w.add_argument("space", help="a saved space directory")
    w.add_argument("--tolerances", type=float, nargs="+", default=[1e-4, 1e-2, 1e-1, 0.5],
                   help="AP tolerances of the noisy runs, each in [0, 1] (0: exact AP; default 1e-4 1e-2 0.1 0.5)")
    w.add_argument("--episodes", type=int, default=2_000, help="test episodes per cell (default 2,000)")
    w.add_argument("--splits", nargs="+", default=list(SWEEP_SPLITS),
                   help="the splits whose hard-negative cells run (default: " + " ".join(SWEEP_SPLITS) + ")")
    w.add_argument("--json-out", default=str(RESULTS / "ap_tolerance_sweep.json"),
                   help="where to write the summary (default benchmarks/results/ap_tolerance_sweep.json)")
    n = sub.add_parser("noisy-breakdown", help="where the exact noisy likelihood's time goes, beside the size "
                                               "likelihood's, on a few hard cells")
    n.add_argument("space", help="a saved space directory")
    n.add_argument("--episodes", type=int, default=3_000, help="test episodes per cell (default 3,000)")
    n.add_argument("--splits", nargs="+", default=list(SWEEP_SPLITS),
                   help="the splits whose hard-negative cells run (default: " + " ".join(SWEEP_SPLITS) + ")")
    n.add_argument("--json-out", default=str(RESULTS / "noisy_breakdown.json"),
                   help="where to write the summary (default benchmarks/results/noisy_breakdown.json)")
    args = ap.parse_args()
    if args.job == "noisy-breakdown":
        if args.episodes < 1:
            ap.error("--episodes must be >= 1")
        try:
            noisy_breakdown_job(args.space, args.episodes, args.splits, json_out=args.json_out)
        except (OSError, ValueError) as e:
            ap.error(str(e))
        return
    if args.job == "tolerance-sweep":
        if args.episodes < 1 or any(not 0.0 <= t <= 1.0 for t in args.tolerances):
            ap.error("--episodes must be >= 1 and every --tolerances value in [0, 1] (0: exact AP)")
        try:
            tolerance_sweep_job(args.space, args.tolerances, args.episodes, args.splits, args.json_out)
        except (OSError, ValueError) as e:  # a missing space or an unknown split: before any run
            ap.error(str(e))
        return
    if args.job == "table":
        jobs = [gap_job(args.space), build_job("spaces/_scale_inproc", 990_000),
                build_job("spaces/_scale_local2", 990_000, "local:2")]
        for d in ("spaces/_scale_inproc", "spaces/_scale_local2"):
            shutil.rmtree(d, ignore_errors=True)
        if any(j["rc"] for j in jobs):
            raise SystemExit("a job failed: nothing written to " + args.results)
        keep = {k: v for k, v in jobs[0].items() if k != "tail"}
        write_summary(args.results, "scaling out: the comp-gap table and the 990,000-scene build, per process",
                      {"gap_in_process": keep, "build_in_process": {k: v for k, v in jobs[1].items() if k != "tail"},
                       "build_local2": {k: v for k, v in jobs[2].items() if k != "tail"},
                       "ratio_inprocess_over_local2": jobs[1]["wall_s"] / jobs[2]["wall_s"],
                       "same_manifest": jobs[1].get("manifest_sha256") == jobs[2].get("manifest_sha256")})
        return
    if args.job == "ap-tolerance":
        ap_tolerance_job(args.space, args.episodes, args.scheduler, args.json_out)
        return
    if args.job == "gap" and args.likelihood == "both":
        runs = [gap_job(args.space, args.scheduler, args.episodes, tag=f"_{lk}", code=args.code, likelihood=lk,
                        cold=args.cold) for lk in ("size", "noisy")]
        for r in runs:
            record(r)
        print(f"noisy / size wall time = {runs[1]['wall_s'] / runs[0]['wall_s']:.2f}")
    elif args.job == "gap":
        record(gap_job(args.space, args.scheduler, args.episodes, code=args.code, likelihood=args.likelihood,
                       cold=args.cold))
    elif args.job == "build":
        record(build_job(args.out, args.scenes, args.scheduler, args.samples))
    elif args.job in ("overhead", "all"):
        if args.job == "all":
            record(gap_job(args.space))
        pair = [build_job("spaces/_scale_inproc", 990_000), build_job("spaces/_scale_local2", 990_000, "local:2")]
        for r in pair:
            record(r)
        ratio = pair[0]["wall_s"] / pair[1]["wall_s"]
        same = pair[0].get("manifest_sha256") == pair[1].get("manifest_sha256")
        record({"job": "overhead: 990,000-scene build, in-process / local:2 wall time", "rc": 0,
                "wall_s": 0, "processes": [], "ratio_inprocess_over_dask": round(ratio, 3), "same_manifest": same})
        print(f"in-process / local:2 = {ratio:.2f}; same manifest: {same}")
        if not getattr(args, "keep", False):
            for d in ("spaces/_scale_inproc", "spaces/_scale_local2"):
                shutil.rmtree(d, ignore_errors=True)
        if args.job == "all":
            record(build_job(args.big, 5_000_000, "local:2"))
            record(gap_job(args.big, "local:2", tag="_5m"))


if __name__ == "__main__":
    main()
