"""ConceptWorld learners (issue 40, item 2): the seed's five baselines trained per experiment
and scored with F1 per class and test condition, beside the seed's Tables 4, 6, 8 and 10.

Each of mlp, cnn, resnet18 (from scratch), wren and predinet
(:mod:`bayes_concepts.learners.grid_nets`) is trained on each experiment's training scenes
(productivity, boxworld, scaling, substitution) for every seed and scored on each test
condition (:mod:`bayes_concepts.suites.conceptworld.baselines`).  The summary holds, per
learner, experiment, condition and class, our F1 (mean, standard deviation and per-seed
values) beside the seed's, CPU seconds per training, and a statement of where the ordering
over conditions (and, for scaling, over classes) agrees with the seed's.

One torch thread per training; ``--jobs N`` runs trainings in N processes (spawned, one
thread each).  Imports are light: numpy, scipy, numba (the ConceptWorld generator), torch and
pandas; the suites' and learners' package registrations are skipped (:func:`_bare_packages`),
so it runs from the repository root with ``PYTHONPATH=.`` on a machine without the package
installed.  ``--episodes N`` (optional) also scores every trained net few-shot on N episodes
per protocol split of a built ConceptWorld space (``--space``, default ``spaces/cw``),
beside the strong and weak oracles (mAP, CBA); that stage uses the comp gap, which needs the
package's full dependencies (xarray, dask).

Usage::

    python benchmarks/conceptworld_learners.py --quick            # seconds; benchmarks/out/
    python benchmarks/conceptworld_learners.py --jobs 4           # full: benchmarks/results/conceptworld_learners.json
    python benchmarks/conceptworld_learners.py --jobs 4 --episodes 2000   # and the episode form on spaces/cw
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import tomllib
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch: idle OpenMP threads must not spin

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _summary import RESULTS, write_summary  # noqa: E402  (benchmarks/ is not a package)



def _bare_packages(*names: str) -> None:
    """Make each package importable without running its ``__init__``: ``bayes_concepts.suites``
    loads every suite (figures, matplotlib, seaborn) and ``bayes_concepts.learners`` every
    learner (safetensors); this benchmark needs the ConceptWorld generator and the grid nets
    only, so it runs on numpy, numba, torch and pandas.  Spawned workers re-run this module's
    top level, so they import the same way."""
    import importlib.util
    for name in names:
        if name in sys.modules:
            continue
        parent, _, leaf = name.rpartition(".")
        module = importlib.util.module_from_spec(importlib.util.find_spec(name))
        sys.modules[name] = module
        setattr(sys.modules[parent], leaf, module)


import bayes_concepts  # noqa: E402  (its names load on first use)

_bare_packages("bayes_concepts.suites", "bayes_concepts.suites.conceptworld", "bayes_concepts.learners")

from bayes_concepts.errors import BayesConceptsError  # noqa: E402
from bayes_concepts.resources import data_file  # noqa: E402
from bayes_concepts.suites.conceptworld.baselines import (FULL_SETTINGS, QUICK_SETTINGS, SEED_EXPERIMENTS,  # noqa: E402
                                                          SEED_MODEL_NAMES, episode_form, run_baselines)

LEARNERS = ("mlp", "cnn", "resnet18", "wren", "predinet")
#: F1 differences smaller than this are "level" when orderings are compared
LEVEL = 0.02
#: the budget each learner and experiment must stay within (all seeds together)
CPU_BUDGET_SECONDS = 600.0


def seed_rows(reported: dict, experiment: str, learner: str) -> tuple:
    """(the seed's model name used, {class: {condition: F1}}) for our learner, or (None, {})."""
    models = reported.get(experiment, {}).get("models", {})
    name = SEED_MODEL_NAMES[learner]
    if name not in models and name == "ResNet":
        name = "ResNet (pretrained)"
    return (name, models[name]) if name in models else (None, {})


def direction(a: float, b: float) -> str:
    return "level" if abs(b - a) < LEVEL else ("up" if b > a else "down")


def orderings(ours: dict, seed: dict, conditions: list, classes: list) -> list:
    """Per class (and the macro mean), F1's direction between consecutive conditions, ours and
    the seed's, and whether they agree (``level`` agrees with anything within LEVEL)."""
    out = []
    for c in classes + ["macro"]:
        if c == "macro":
            o = [float(np.mean([ours[k][cond] for k in classes])) for cond in conditions]
            s = ([float(np.mean([seed[k][cond] for k in classes])) for cond in conditions]
                 if all(k in seed for k in classes) else None)
        else:
            o = [ours[c][cond] for cond in conditions]
            s = [seed[c][cond] for cond in conditions] if c in seed else None
        if s is None:
            continue
        for i in range(len(conditions) - 1):
            do, ds = direction(o[i], o[i + 1]), direction(s[i], s[i + 1])
            out.append({"concept": c, "from": conditions[i], "to": conditions[i + 1], "ours": do, "seed": ds,
                        "agrees": do == ds or "level" in (do, ds)})
    return out


def class_order(ours: dict, seed: dict, condition: str, classes: list) -> dict:
    """For a one-condition experiment (scaling): the classes ranked by F1, ours and the seed's,
    and Spearman's rho between the two rankings."""
    o = np.array([ours[c][condition] for c in classes])
    s = np.array([seed[c][condition] for c in classes])
    ro, rs = np.argsort(np.argsort(-o)), np.argsort(np.argsort(-s))
    rho = float(np.corrcoef(ro, rs)[0, 1]) if len(classes) > 2 else float("nan")
    return {"ours": [classes[i] for i in np.argsort(-o)], "seed": [classes[i] for i in np.argsort(-s)],
            "spearman": rho}


def learner_order(table: dict, reported: dict, experiment: str, conditions: list, learners: list) -> list:
    """Per condition: learners ranked by macro F1, ours and the seed's (ResNet: pretrained
    where the seed reported no other), and Spearman's rho."""
    out = []
    for cond in conditions:
        ours, theirs = [], []
        for m in learners:
            _, rows = seed_rows(reported, experiment, m)
            classes = list(table[m]["classes"])
            if not rows or not all(c in rows for c in classes):
                continue
            ours.append(table[m]["macro"][cond]["mean"])
            theirs.append(float(np.mean([rows[c][cond] for c in classes])))
        names = [m for m in learners if seed_rows(reported, experiment, m)[1]]
        if len(ours) < 3:
            continue
        ro, rs = np.argsort(np.argsort(-np.array(ours))), np.argsort(np.argsort(-np.array(theirs)))
        out.append({"condition": cond, "ours": [names[i] for i in np.argsort(-np.array(ours))],
                    "seed": [names[i] for i in np.argsort(-np.array(theirs))],
                    "spearman": float(np.corrcoef(ro, rs)[0, 1])})
    return out


def summarise(results, reported: dict, learners: list, experiments: list) -> tuple:
    """(figures, note lines): the JSON figures and the plain-text statement of agreement."""
    f1 = results.f1
    tr = results.trainings
    figures, notes = {}, []
    for e in experiments:
        spec = SEED_EXPERIMENTS[e]
        conditions, classes = list(spec["test"]), list(spec["classes"])
        table = {}
        for m in learners:
            rows = f1[(f1.learner == m) & (f1.experiment == e)]
            if rows.empty:
                continue
            per = {}
            for c in classes + ["macro"]:
                per[c] = {}
                for cond in conditions:
                    v = rows[(rows.concept == c) & (rows.condition == cond)].sort_values("seed")
                    per[c][cond] = {"mean": float(v.f1.mean()), "sd": float(v.f1.std(ddof=1)) if len(v) > 1 else None,
                                    "per_seed": [round(float(x), 4) for x in v.f1]}
            seed_name, seed_f1 = seed_rows(reported, e, m)
            t = tr[(tr.learner == m) & (tr.experiment == e)]
            ours_mean = {c: {cond: per[c][cond]["mean"] for cond in conditions} for c in classes}
            entry = {"classes": classes, "f1": {c: per[c] for c in classes}, "macro": per["macro"],
                     "seed_model": seed_name,
                     "seed_f1": {c: seed_f1.get(c) for c in classes},
                     "cpu_seconds": {"per_training": [round(float(x), 2) for x in t.train_cpu_seconds],
                                     "data_per_training": [round(float(x), 2) for x in t.data_cpu_seconds],
                                     "total": round(float(t.train_cpu_seconds.sum() + t.data_cpu_seconds.sum()
                                                          + t.test_cpu_seconds.sum()), 1),
                                     "within_budget": bool(t.train_cpu_seconds.sum() + t.data_cpu_seconds.sum()
                                                           + t.test_cpu_seconds.sum() <= CPU_BUDGET_SECONDS)},
                     "epochs": [int(x) for x in t.epochs], "best_epoch": [int(x) for x in t.best_epoch],
                     "parameters": int(t.parameters.iloc[0]), "n_train": int(t.n_train.iloc[0])}
            if "validation" in t:  # did it learn? every seed's validation accuracy above a random guess's
                entry["validation"] = [v for v in t.validation]
                entry["learned"] = bool(all(v["learned"] for v in t.validation))
            if len(conditions) > 1 and seed_f1:
                entry["ordering_over_conditions"] = orderings(ours_mean, seed_f1, conditions, classes)
            elif seed_f1:
                entry["ordering_over_classes"] = class_order(ours_mean, seed_f1, conditions[0], classes)
            table[m] = entry
        figures[e] = {"seed_table": spec["table"], "conditions": conditions, "learners": table,
                      "ordering_over_learners": learner_order(table, reported, e, conditions, list(table))}
        for m, entry in table.items():
            if "ordering_over_conditions" in entry:
                steps = entry["ordering_over_conditions"]
                agree = [s for s in steps if s["agrees"]]
                macro = [s for s in steps if s["concept"] == "macro"]
                notes.append(f"{e}, {m} (seed: {entry['seed_model']}): {len(agree)}/{len(steps)} steps between "
                             f"conditions move as the seed's; macro F1 "
                             + "; ".join(f"{s['from']} -> {s['to']}: ours {s['ours']}, seed {s['seed']}"
                                         f"{'' if s['agrees'] else ' (disagrees)'}" for s in macro))
            elif "ordering_over_classes" in entry:
                o = entry["ordering_over_classes"]
                notes.append(f"{e}, {m} (seed: {entry['seed_model']}): classes by F1, ours {' > '.join(o['ours'])}; "
                             f"seed {' > '.join(o['seed'])} (Spearman {o['spearman']:.2f})")
        for lo in figures[e]["ordering_over_learners"]:
            notes.append(f"{e}, {lo['condition']}: learners by macro F1, ours {' > '.join(lo['ours'])}; seed "
                         f"{' > '.join(lo['seed'])} (Spearman {lo['spearman']:.2f})")
    return figures, notes


def episode_table(space, experiment: str, nets: dict, n_episodes: int) -> list:
    """Per split and negatives: the oracles' mAP and CBA and each learner's mean over seeds
    (with the per-seed values), every net on the same episodes (:func:`episode_form`)."""
    named = {f"{m} seed {sd}": net for (m, e, sd), net in nets.items() if e == experiment}
    rows = episode_form(space, experiment, named, n_episodes=n_episodes, seed=0)
    out = {}
    for r in rows:
        key = (r["split"], r["negatives"])
        cell = out.setdefault(key, {"split": r["split"], "condition": r["condition"], "negatives": r["negatives"],
                                    "episodes": r["episodes"], "learners": {}})
        name = r["learner"].split(" seed ")[0]
        entry = cell["learners"].setdefault(name, {"map_per_seed": [], "cba_per_seed": []})
        entry["map_per_seed"].append(round(float(r["map"]), 2))
        entry["cba_per_seed"].append(round(float(r["cba"]), 2))
    for cell in out.values():
        for entry in cell["learners"].values():
            entry["map"] = float(np.mean(entry["map_per_seed"]))
            entry["cba"] = float(np.mean(entry["cba_per_seed"]))
    return list(out.values())


def print_episode_tables(figures: dict) -> None:
    for e, fig in figures.items():
        cells = fig.get("episode_form") or []
        if not cells:
            continue
        names = list(cells[0]["learners"])
        print(f"\n{e}, episode form (mAP / CBA, %, mean over seeds):")
        print(f"  {'split':<18}{'negatives':<10}" + "".join(f"{n:>14}" for n in names))
        for c in cells:
            print(f"  {c['split']:<18}{c['negatives']:<10}" + "".join(
                f"{c['learners'][n]['map']:>7.1f}/{c['learners'][n]['cba']:<6.1f}" for n in names))


def print_tables(figures: dict) -> None:
    for e, fig in figures.items():
        conds = fig["conditions"]
        print(f"\n{e} ({fig['seed_table']}): F1 ours (mean over seeds) | seed's")
        print(f"  {'learner':<10}{'class':<18}" + "".join(f"{c:>22}" for c in conds) + f"{'CPU s':>9}")
        for m, entry in fig["learners"].items():
            for c in entry["classes"] + ["macro"]:
                ours = entry["f1"][c] if c != "macro" else entry["macro"]
                seed = entry["seed_f1"].get(c) if c != "macro" else None
                cells = "".join(f"{ours[k]['mean']:>12.2f} | " + (f"{seed[k]:<7.2f}" if seed and k in seed else f"{'-':<7}")
                                for k in conds)
                cpu = f"{entry['cpu_seconds']['total']:>9.1f}" if c == "macro" else ""
                print(f"  {m:<10}{c:<18}{cells}{cpu}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="seconds: 5-10 %% of the seed's scenes, a few epochs, one seed")
    ap.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 (default 3; 1 with --quick)")
    ap.add_argument("--learners", default=",".join(LEARNERS), help="comma-separated (default all five)")
    ap.add_argument("--experiments", default=",".join(SEED_EXPERIMENTS), help="comma-separated (default all four)")
    ap.add_argument("--jobs", type=int, default=1, help="trainings in this many processes, one thread each")
    ap.add_argument("--episodes", type=int, default=0,
                    help="also score each trained net few-shot (prototypes of its features) on this many episodes per "
                    "protocol split and negatives of --space, beside the strong and weak oracles (mAP, CBA; default 0: "
                    "skip)")
    ap.add_argument("--space", default="spaces/cw", help="the ConceptWorld space of --episodes (build it with "
                    "'bayes-concepts space build spaces/cw --preset conceptworld')")
    ap.add_argument("--out", default=None, help="summary JSON (default benchmarks/results/conceptworld_learners.json; "
                    "with --quick benchmarks/out/conceptworld_learners_quick.json)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    settings = QUICK_SETTINGS if args.quick else FULL_SETTINGS
    n_seeds = args.seeds if args.seeds is not None else (1 if args.quick else 3)
    learners = [x for x in args.learners.split(",") if x]
    experiments = [x for x in args.experiments.split(",") if x]
    out = Path(args.out) if args.out else (Path(__file__).resolve().parent / "out" / "conceptworld_learners_quick.json"
                                           if args.quick else RESULTS / "conceptworld_learners.json")
    if n_seeds < 1 or args.jobs < 1 or args.episodes < 0:
        print("error: --seeds and --jobs must be >= 1, --episodes >= 0", file=sys.stderr)
        return 2
    space = None
    t0 = time.perf_counter()
    try:
        if args.episodes:
            from bayes_concepts.spaces.concept_space import load_space
            space = load_space(args.space)
        results = run_baselines(learners, experiments, seeds=range(n_seeds), settings=settings, jobs=args.jobs,
                                log=lambda line: print(line, flush=True), keep_nets=bool(args.episodes))
    except BayesConceptsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    wall = time.perf_counter() - t0
    reported = tomllib.loads(Path(data_file("conceptworld", "reported.toml")).read_text(encoding="utf-8"))
    figures, notes = summarise(results, reported, learners, experiments)
    if args.episodes:
        t1 = time.perf_counter()
        for e in experiments:
            figures[e]["episode_form"] = episode_table(space, e, results.nets, args.episodes)
        print_episode_tables(figures)
        print(f"episode form: {time.perf_counter() - t1:.0f} s wall")
    print_tables(figures)
    print("\nordering (F1 differences under %.2f count as level):" % LEVEL)
    for line in notes:
        print("  " + line)
    tr = results.trainings
    write_summary(out, "conceptworld_learners", figures,
                  scale="quick" if args.quick else "full", seeds=list(range(n_seeds)), learners=learners,
                  experiments=experiments, settings=results.settings, jobs=args.jobs,
                  wall_seconds=round(wall, 1), cpu_seconds_total=round(float(tr.train_cpu_seconds.sum()
                                                                              + tr.data_cpu_seconds.sum()
                                                                              + tr.test_cpu_seconds.sum()), 1),
                  inputs="RGB pictures float32 (3, 32, 32) in [0, 1], one pixel per grid point, black where empty; "
                         "no scene label is read",
                  deviations=["ResNet-18 trained from scratch: no ImageNet weights can be downloaded; compared with "
                              "the seed's non-pretrained ResNet where reported (productivity), else its pretrained one",
                              "CNN with 32 channels (the seed's 128) at the full scale",
                              "learning rate 1e-3 for every net (the seed: 1e-5 for WReN and PrediNet over 100 epochs)",
                              "at most 30 epochs or 180 CPU seconds per training, early stopping with patience 5 on "
                              "a 10 % validation hold-out (the seed: 100 epochs, early stopping)",
                              "3 seeds (the seed: 10)"],
                  ordering_note=notes, level=LEVEL,
                  episode_form=({"space": args.space, "episodes": args.episodes, "how": "each trained net's last hidden "
                                 "layer embeds a scene's picture; an episode's support gives the positive and negative "
                                 "prototypes (logit = squared distance to the negative minus to the positive); the "
                                 "strong and weak oracles on the same episodes"} if args.episodes else None))
    print(f"\nwrote {out} ({wall:.0f} s wall)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
