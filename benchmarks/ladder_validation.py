"""Does the ladder predict difficulty?  The pre-registered validation on CURI's paper space.

Three stages, one at a time (``bayes_concepts.validation`` does the work):

1. ``splits SPACE``: writes the study's split specs (``benchmarks/ladder_validation/splits/``:
   random concept hold-outs of several sizes, token and token-pair hold-outs, length
   hold-outs, CURI's structured splits, and split search under several objectives and
   constraints) and the pre-registration file ``benchmarks/ladder_validation.toml`` (splits
   with their sha256, halves, rungs, predictors, learners, budget, statistic).  Commit both
   before stage 2: nothing in them changes after the learners run.
2. ``run SPACE`` (one worker per core, side by side): for every split, confirmatory half first, trains each learner kind
   on the split's training concepts within the budget, checks that it learned, scores
   every rung and the learners on the same test episodes, computes the predictors; one
   record per split in ``benchmarks/out/ladder_validation/`` (a finished split is not
   redone: an interrupted run resumes).  Two workers side by side share the queue.
3. ``summarise``: ranks every rung and predictor against each learner's difficulty on the
   confirmatory half (primary), the exploratory half, all splits, and learned splits only;
   writes ``benchmarks/results/ladder_validation.json`` with the pre-registration's sha256
   and the commit that added it.

Usage::

    bayes-concepts space build spaces/paper --preset paper
    python benchmarks/ladder_validation.py splits spaces/paper
    git add benchmarks/ladder_validation.toml benchmarks/ladder_validation && git commit
    python benchmarks/ladder_validation.py run spaces/paper &      # two workers share the queue
    python benchmarks/ladder_validation.py run spaces/paper
    python benchmarks/ladder_validation.py summarise
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from _summary import RESULTS, write_summary  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PREREG = ROOT / "benchmarks" / "ladder_validation.toml"
SPLIT_DIR = ROOT / "benchmarks" / "ladder_validation" / "splits"
RECORDS = ROOT / "benchmarks" / "out" / "ladder_validation"

RUNGS = ["memoriser", "compound", "atom", "bounded_length", "learned_prior[alpha=10]", "learned_prior_parent[alpha=10]",
         "sampling[n=1000]", "strong"]
PREDICTORS = ["compound_divergence", "atom_divergence", "mean_length", "n_test_concepts", "unseen_token_share",
              "memoriser"]
LEARNERS = ["schema-average", "schema-relnet"]
#: the budget per learner and split: Adam steps of 64 episodes (so the budget does not depend on how
#: busy the machine is), with a wall-clock cap of 170 s; idle on this 2-core machine 300 steps of the
#: average-pooling net take ~35 s and 120 of the relation net ~65 s (one thread each)
MAX_STEPS = {"schema-average": 300, "schema-relnet": 120}
BUDGET_S = 170
CURI = ["boolean", "counting", "binding_color", "binding_shape", "extrinsic", "intrinsic", "complexity"]
#: (objective, constraints): split search, 20 % test share, seed 0, 45 s each.  (A rung's gap as
#: the objective, gap:compound or gap:atom, re-scores the whole pool with a new rung at every step:
#: minutes per step on this space, so those searches are not in the study.)
SEARCHES = [("gap", ["atom-divergence<=0.02"]), ("gap", ["compound-divergence<=0.02"]), ("gap", ["atom-divergence<=0.1"]),
            ("compound-divergence", ["atom-divergence<=0.02"]), ("compound-divergence", ["atom-divergence<=0.1"]),
            ("compound-divergence", [])]


def _generated() -> list:
    """(name, generator, spec dict) of every rule-made split."""
    out = []
    for f in (0.05, 0.1, 0.2, 0.35, 0.5):
        for seed in (1, 2):
            out.append((f"random_f{int(f * 100):02d}_s{seed}", "random concepts (whole synonym classes)",
                        {"kind": "random", "fractions": {"train": 1 - f, "test": f}, "seed": seed}))
    for f in (0.2, 0.5):
        out.append((f"random_concepts_f{int(f * 100):02d}", "random concepts (synonyms may straddle)",
                    {"kind": "random", "fractions": {"train": 1 - f, "test": f}, "seed": 3, "synonym_aware": False}))
    for toks in (["red"], ["sphere"], ["metal"], ["large"], ["locationY?"], ["count="], ["or"], ["non-x-S"],
                 ["gray", "blue"], ["size?"]):
        out.append(("tokens_" + "_".join(t.strip("?=").replace("-", "") for t in toks), "token hold-out",
                    {"kind": "held_out", "val_fraction": 0.0, "synonym_aware": True, "held_out": {"tokens": toks}}))
    for pairs in ([["red", "and"]], [["sphere", "count="]], [["metal", "for-all="]], [["blue", "or"], ["yellow", "not"]],
                  [["locationX?", "exists="]], [["cube", "not"]], [["size?", "count="]], [["green", "non-x-S"]]):
        name = "pairs_" + "_".join(f"{a}-{b}" for a, b in pairs).replace("?", "").replace("=", "").replace("non-x-S", "nonxS")
        out.append((name, "token-pair (compound) hold-out",
                    {"kind": "held_out", "val_fraction": 0.0, "synonym_aware": True, "held_out": {"pairs": pairs}}))
    for n in (9, 11, 13):
        out.append((f"length_min{n}", "length hold-out",
                    {"kind": "held_out", "val_fraction": 0.0, "synonym_aware": True, "held_out": {"min_length": n}}))
    return out


def _rule_toml(spec: dict) -> str:
    """A rule-made spec (random, tokens, pairs, min_length) as a TOML spec file's text."""
    out = [f"{k} = {json.dumps(spec[k])}" for k in ("name", "description", "kind")]
    if spec["kind"] == "random":
        fr = ", ".join(f"{k} = {v!r}" for k, v in spec["fractions"].items())
        out += [f"fractions = {{{fr}}}", f"seed = {int(spec['seed'])}"]
        if "synonym_aware" in spec:
            out.append(f"synonym_aware = {'true' if spec['synonym_aware'] else 'false'}")
        return "\n".join(out) + "\n"
    out += [f"synonym_aware = {'true' if spec['synonym_aware'] else 'false'}",
            f"val_fraction = {float(spec['val_fraction'])!r}", "", "[held_out]"]
    out += [f"{k} = {json.dumps(v)}" for k, v in spec["held_out"].items()]
    return "\n".join(out) + "\n"


def stage_splits(args) -> int:
    import numpy as np
    from bayes_concepts.spaces import load_space
    from bayes_concepts.split_search import search_split, spec_toml
    from bayes_concepts.splits import make_split
    from bayes_concepts.splits.make import spec_files
    from bayes_concepts.validation import file_sha256
    if args.prereg != PREREG:
        raise SystemExit("the splits stage writes benchmarks/ladder_validation.toml only")
    if PREREG.exists() and not args.force:
        raise SystemExit(f"{PREREG} exists: a pre-registration is never rewritten (write a new file, or --force "
                         "before anything has run)")
    space = load_space(args.space)
    SPLIT_DIR.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, generator, spec in _generated():
        spec = {"name": name, "description": generator, **spec}
        path = SPLIT_DIR / f"{name}.toml"
        path.write_text(_rule_toml(spec))
        split = make_split(space, path)
        if len(split.test) == 0 or len(split.train) == 0:
            print(f"{name}: empty side, left out", file=sys.stderr)
            path.unlink()
            continue
        print(f"{name}: train {len(split.train):,}, test {len(split.test):,}", file=sys.stderr)
        entries.append((name, generator, path))
    curi = {Path(f).stem: f for f in spec_files()}
    for name in CURI:
        path = SPLIT_DIR / f"curi_{name}.toml"
        text = Path(curi[name]).read_text().replace(f'name = "{name}"', f'name = "curi_{name}"')
        path.write_text(text)
        entries.append((f"curi_{name}", "CURI's structured split", path))
    for i, (objective, constraints) in enumerate(SEARCHES):
        t = time.perf_counter()
        name = f"search_{objective.replace(':', '_').replace('-', '_')}_{i}"
        res = search_split(space, objective, test_share=0.2, constraints=constraints, seed=0, budget_s=args.search_s,
                           name=name, log=lambda line: print(f"  {line}", file=sys.stderr))
        desc = (f"split search: objective {objective}, constraints {', '.join(constraints) or 'none'}, test share 0.2, "
                f"seed 0, {args.search_s:g} s")
        path = SPLIT_DIR / f"{name}.toml"
        path.write_text(spec_toml({**res.spec, "description": desc}))
        entries.append((name, f"split search ({objective}; {', '.join(constraints) or 'no constraint'})", path))
        print(f"{name}: {objective} = {res.value:.3f} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    # halves: within each generator, a seeded shuffle alternates exploratory and confirmatory
    rng = np.random.default_rng(20261129)
    half = {}
    by_gen = {}
    for name, gen, _ in entries:
        by_gen.setdefault(gen.split(" (")[0], []).append(name)
    flip = 0
    for gen in sorted(by_gen):
        names = list(by_gen[gen])
        rng.shuffle(names)
        for j, n in enumerate(names):
            half[n] = ("confirmatory", "exploratory")[(j + flip) % 2]
        flip += len(names)
    lines = ['# The ladder\'s validation study, pre-registered: written by benchmarks/ladder_validation.py splits',
             '# before any learner ran.  Nothing here changes after the learners run: a change is a new file,',
             '# and both are reported.  The runner records this file\'s sha256 and the commit that added it.', '',
             '[study]', 'name = "ladder_validation_v1"', 'space_preset = "paper"',
             f'space_manifest_sha256 = "{space.manifest_sha256()}"', 'seed = 0', 'negatives = "hard"',
             'episodes = 1000', 'train_check_episodes = 500', 'learned_margin = 20.0', 'n_boot = 2000',
             'compare_to = "compound_divergence"',
             'statistic = "Spearman rho (tie-aware ranks: values within 2 standard errors share a rank) between each '
             'rung\'s gap (strong - rung, mAP points) or predictor per split and each learner\'s difficulty (strong mAP - '
             'learner mAP on the same 1,000 hard-negative test episodes); 95 % intervals from a two-level bootstrap '
             '(2,000 replicates: splits resampled, gaps and difficulties redrawn from N(mean, se)); differences to the '
             'best predictor and to compound divergence from the same replicates"',
             'primary = "the confirmatory half, every split whether or not the learner learned"',
             'secondary = "the confirmatory half, splits where the learner learned; the exploratory half; all splits"',
             '', '[rungs]', 'names = [' + ", ".join(f'"{r}"' for r in RUNGS) + ']', '',
             '[predictors]', 'names = [' + ", ".join(f'"{p}"' for p in PREDICTORS) + ']', '',
             '[learners]', 'kinds = [' + ", ".join(f'"{k}"' for k in LEARNERS) + ']',
             f'budget_s = {BUDGET_S}', 'threads = 1', 'val_episodes = 300',
             'max_steps = {' + ", ".join(f'{k} = {v}' for k, v in MAX_STEPS.items()) + '}',
             '# the budget: max_steps Adam steps (64 episodes each, batch of the cpu profile, cosine schedule, no '
             'early stopping) per learner and split, capped at budget_s seconds of wall clock; one torch thread',
             '# a learner "learned" on a split when its mAP on 500 training-distribution episodes (hard negatives, '
             '2,000 training concepts) is at least learned_margin points above the random learner\'s on the same '
             'episodes; a split where it did not is reported, not dropped',
             '# reported beside it, not used by the rule: the same architecture with its initial weights (untrained) on '
             'the same episodes (a prototype net with random features already ranks above the random learner)', '']
    for name, gen, path in entries:
        lines += ['[[split]]', f'name = "{name}"', f'file = "{path.relative_to(PREREG.parent)}"',
                  f'sha256 = "{file_sha256(path)}"', f'generator = "{gen}"', f'half = "{half[name]}"', '']
    PREREG.write_text("\n".join(lines))
    print(f"written {PREREG} ({len(entries)} splits: {sum(h == 'confirmatory' for h in half.values())} confirmatory)",
          file=sys.stderr)
    return 0


def _order(splits: list) -> list:
    """The order splits are run in: the confirmatory half first, then the exploratory, each
    round-robin over the generators, so that a run cut short holds a balanced sample of the
    primary half (the order changes no result)."""
    out = []
    for half in ("confirmatory", "exploratory"):
        groups = {}
        for s in splits:
            if s["half"] == half:
                groups.setdefault(s["generator"].split(" (")[0], []).append(s["name"])
        queues = list(groups.values())
        while any(queues):
            for q in queues:
                if q:
                    out.append(q.pop(0))
    return out


def stage_run(args) -> int:
    import torch
    from bayes_concepts.spaces import load_space
    from bayes_concepts.validation import read_preregistration, run_split
    torch.set_num_threads(1)
    space = load_space(args.space)
    prereg = read_preregistration(args.prereg, space)
    RECORDS.mkdir(parents=True, exist_ok=True)
    names = _order(prereg["split"])
    t0 = time.perf_counter()
    ran = 0
    for k, name in enumerate(names):
        if (RECORDS / f"{name}.json").exists():
            continue
        try:  # a claim per split: workers started side by side share the queue
            fd = os.open(RECORDS / f"{name}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            os.close(fd)
        except FileExistsError:
            continue
        t = time.perf_counter()
        try:
            run_split(space, prereg, name, RECORDS, log=lambda line: print(line, file=sys.stderr, flush=True))
        finally:
            (RECORDS / f"{name}.claim").unlink(missing_ok=True)
        ran += 1
        done = sum((RECORDS / f"{n}.json").exists() for n in names)
        print(f"{name}: {time.perf_counter() - t:.0f} s; {done}/{len(names)} splits done; this worker {ran} in "
              f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return 0


def _prereg_commit() -> str | None:
    try:
        out = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", str(PREREG)], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
        return out[-1] if out else None
    except (OSError, subprocess.CalledProcessError):
        return None


def stage_summarise(args) -> int:
    from bayes_concepts.validation import format_validation, read_preregistration, validation_table
    prereg = read_preregistration(args.prereg)
    records, missing = [], []
    for s in prereg["split"]:
        f = RECORDS / f"{s['name']}.json"
        if f.exists():
            records.append(json.loads(f.read_text()))
        else:
            missing.append(s["name"])
    if missing:
        print(f"{len(missing)} split(s) not run yet: {', '.join(missing)}", file=sys.stderr)
    tables = {"confirmatory": validation_table(records, prereg, "confirmatory"),
              "confirmatory_learned_only": validation_table(records, prereg, "confirmatory", learned_only=True),
              "exploratory": validation_table(records, prereg, "exploratory"),
              "all": validation_table(records, prereg, None)}
    for key, t in tables.items():
        print(f"\n== {key} ==\n{format_validation(t, prereg['study'].get('compare_to', 'compound_divergence'))}")
    per_split = [{"split": r["split"], "half": r["half"], "generator": r["generator"], "sizes": r["sizes"],
                  "learned": r["learned"], "training": r["training"], "predictors": r["predictors"],
                  "gaps": {lb: v["gap"] for lb, v in r["rows"][0]["rungs"].items()},
                  "learner_gaps": {k: v["gap"] for k, v in r["rows"][0].get("models", {}).items()},
                  "seconds": r["seconds"]} for r in records]
    cpu = sum(t["cpu_s"] for r in records for t in r["training"].values())
    figures = {"tables": tables, "splits": per_split, "missing": missing,
               "compute": {"splits_run": len(records), "training_cpu_s": round(cpu, 1),
                           "training_cpu_hours": round(cpu / 3600, 2),
                           "split_seconds_sum": round(sum(r["seconds"] for r in records), 1)}}
    out = write_summary(RESULTS / "ladder_validation.json", "the ladder's pre-registered validation", figures,
                        preregistration={"file": str(PREREG.relative_to(ROOT)), "sha256": prereg["sha256"],
                                         "commit": _prereg_commit()},
                        wall_seconds=args.wall)
    print(f"written {out}", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="stage", required=True)
    p = sub.add_parser("splits", help="write the split specs and the pre-registration file")
    p.add_argument("space", help="CURI's paper space (bayes-concepts space build DIR --preset paper)")
    p.add_argument("--search-s", type=float, default=60.0, help="seconds per split search (default 60)")
    p.add_argument("--force", action="store_true", help="rewrite the pre-registration (only before any run)")
    p = sub.add_parser("run", help="train and score the splits (resumable; start one worker per core: they share "
                                   "the queue, confirmatory splits first)")
    p.add_argument("space")
    p = sub.add_parser("summarise", help="the validation tables and benchmarks/results/ladder_validation.json")
    p.add_argument("--wall", type=float, default=None, help="the run's wall time in seconds, to record")
    for q in (p for p in sub.choices.values()):
        q.add_argument("--prereg", type=Path, default=PREREG,
                       help="the pre-registration file (default benchmarks/ladder_validation.toml)")
    args = ap.parse_args(argv)
    from bayes_concepts.errors import BayesConceptsError
    try:
        return {"splits": stage_splits, "run": stage_run, "summarise": stage_summarise}[args.stage](args)
    except BayesConceptsError as e:  # bad input: one line, exit 2
        print(f"ladder_validation: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
