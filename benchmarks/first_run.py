"""The first run's numba compilation: ``bayes-concepts demo`` with an empty kernel cache, then
again with the cache the first run wrote (the space already built by then, so the second run
also skips the build: its time is the demo's work alone); and the install's way: ``bayes-concepts
compile`` (what ``make venv`` runs, and what a ``pip install`` user runs once) into another empty
cache, then ``demo`` with that cache on the space already built, then the README's other jobs
from Python (a space built in memory, the ladder, a learner beside the oracles, the gap with the
noisy likelihood) twice with that cache: the first time is what a user waits for after the install,
the second the same work with nothing left to compile; and the model job's first steps (scenes
drawn and heard, a network trained a few steps and scored beside the oracles) the same way.

    python benchmarks/first_run.py [--json-out FILE]

The runs use fresh ``NUMBA_CACHE_DIR`` folders and a space folder under a temporary directory.
Writes ``benchmarks/results/first_run.json``: the wall times; ``compile_and_build_s`` (cold -
warm: the compilation, plus the demo space's build of a few seconds); ``install_compile_s`` (the
``compile`` command's time), ``after_install_compile_s`` (demo after ``compile`` - warm: the
compilation left to the first ``demo`` after the install) and ``readme_jobs_compile_s`` (the
README's jobs after ``compile``, first time - second time), ``model_job_compile_s`` (the same
for the model job).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import RESULTS, write_summary  # noqa: E402


#: the README's jobs from Python on a space built in memory (what readme_jobs runs)
README_JOBS = """
import bayes_concepts as bc
from bayes_concepts.ladder import ladder_profile
from bayes_concepts.learners import make_learner
space = bc.HypothesisSpace.build("demo", samples=20_000, scenes=5_000, seed=0)
splits = bc.load_splits(space, ["counting"])
bc.compute_gap(space, splits, negatives=("hard", "easy"), n_episodes=200, seed=0)
ladder_profile(space, splits, negatives="hard", n_episodes=100, seed=0, alphas=[10], budgets=[100])
bc.compute_gap(space, splits, negatives=("hard",), n_episodes=100, seed=0,
               learners={"prototype": make_learner(space, "prototype")})
bc.compute_gap(space, splits, negatives=("hard",), n_episodes=100, seed=0,
               settings=bc.OracleSettings(likelihood="noisy"))
"""

#: the model job's first steps from Python (what the guide's model page runs): scenes drawn and
#: heard, a network trained a few steps and scored beside the oracles
MODEL_JOB = """
import bayes_concepts as bc
from bayes_concepts.learners import ProtoNetLearner, check_learner, make_learner
space = bc.HypothesisSpace.build("demo", samples=20_000, scenes=5_000, seed=0)
split = bc.load_splits(space, ["counting"])["counting"]
bc.log_mel_spectrogram(bc.synthesize_scenes(space.scene_codes[:25], space.schema))
bc.render_scenes(space.scene_codes[:25], space.schema)
check_learner(make_learner(space, "prototype"), space, split=split)
net = ProtoNetLearner(space, "schema", "relnet", embedding_dim=32, seed=0)
net.train(split, max_steps=5, val_every=5, val_episodes=50, batch_episodes=8, progress=False)
bc.compute_gap(space, {"counting": split}, negatives=("hard",), n_episodes=100, seed=0, learners={"net": net})
"""


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json-out", default=str(RESULTS / "first_run.json"),
                    help="where the summary goes (default benchmarks/results/first_run.json)")
    args = ap.parse_args(argv)
    exe = Path(sys.executable).with_name("bayes-concepts")
    times = {}
    with tempfile.TemporaryDirectory(prefix="first_run_") as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(tmp) / "numba"))
        for run in ("cold", "warm"):
            t0 = time.perf_counter()
            r = subprocess.run([str(exe), "demo", "--space", f"{tmp}/space", "--out", f"{tmp}/{run}.nc",
                                "--figures", f"{tmp}/{run}_figs"], env=env, capture_output=True, text=True)
            times[run] = round(time.perf_counter() - t0, 1)
            if r.returncode:
                print(r.stderr[-2000:], file=sys.stderr)
                return 1
            announced = "compiling the numba kernels once" in r.stderr
            times[f"{run}_announced"] = announced
            print(f"{run}: {times[run]} s (announced: {announced})", flush=True)
        # the install's way: `bayes-concepts compile` into an empty cache, then the demo
        env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(tmp) / "numba_installed"))
        for run, argv in (("install_compile", ["compile"]),
                          ("after_install", ["demo", "--space", f"{tmp}/space", "--out", f"{tmp}/installed.nc",
                                             "--figures", f"{tmp}/installed_figs"])):
            t0 = time.perf_counter()
            r = subprocess.run([str(exe), *argv], env=env, capture_output=True, text=True)
            times[run] = round(time.perf_counter() - t0, 1)
            if r.returncode:
                print(r.stderr[-2000:], file=sys.stderr)
                return 1
            times[f"{run}_announced"] = "compiling the numba kernels once" in r.stderr
            print(f"{run}: {times[run]} s", flush=True)
        for run, code in (("readme_jobs_after_install", README_JOBS), ("readme_jobs_again", README_JOBS),
                          ("model_job_after_install", MODEL_JOB), ("model_job_again", MODEL_JOB)):
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
            times[run] = round(time.perf_counter() - t0, 1)
            if r.returncode:
                print(r.stderr[-2000:], file=sys.stderr)
                return 1
            print(f"{run}: {times[run]} s", flush=True)
    times["compile_and_build_s"] = round(times["cold"] - times["warm"], 1)
    times["install_compile_s"] = times["install_compile"]
    times["after_install_compile_s"] = round(times["after_install"] - times["warm"], 1)
    times["readme_jobs_compile_s"] = round(times["readme_jobs_after_install"] - times["readme_jobs_again"], 1)
    times["model_job_compile_s"] = round(times["model_job_after_install"] - times["model_job_again"], 1)
    # the package the commands ran (PYTHONPATH can put another checkout's in front), and its commit
    where = subprocess.run([sys.executable, "-c", "import bayes_concepts; print(bayes_concepts.__file__)"],
                           capture_output=True, text=True, check=True).stdout.strip()
    commit = subprocess.run(["git", "-C", str(Path(where).parent), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or None
    write_summary(args.json_out, "the first run's numba compilation (bayes-concepts demo)", times,
                  package={"path": where, "commit": commit})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
