"""``posterior DIR --support FILE``: the oracles' posterior and predictive for a support set."""
from __future__ import annotations

import json
import sys

from ..errors import BayesConceptsError
from ..command_registry import command
from ..options import whole
from ..run_args import one_split, oracle_options, resolve_args, split_option
from ..terminal import print_json


def _posterior_arguments(p):
    p.add_argument("dir", metavar="DIR", help="a saved hypothesis space")
    p.add_argument("--support", required=True, metavar="FILE.jsonl", help='scenes with a "label": 0|1 field')
    p.add_argument("--query", metavar="FILE.jsonl", help="scenes to predict p(y = 1) for")
    split_option(p, "also the weak oracle of this split (one; default: the strong oracle over all concepts)")
    p.add_argument("--spec", nargs="+", metavar="FILE", help="split spec files (TOML) defining more splits")
    p.add_argument("--negatives", choices=["hard", "easy"], default="hard",
                   help="how the support negatives were drawn (the size likelihood depends on it; default hard)")
    p.add_argument("--top", type=whole(0), default=10, help="concepts to list (0: every concept with p > 0)")
    oracle_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


@command("posterior", order=100, arguments=_posterior_arguments, compiles=True,
         help="posterior and predictive of the oracles for a support set")
def cmd_posterior(args) -> int:
    from ..oracles import strong_and_weak, Oracle
    from ..scenes import read_scenes_jsonl
    name = one_split(args, "the weak oracle is one split's")
    run = resolve_args(args, splits=[name] if name else {})
    space, settings = run.space, run.settings
    schema = space.schema.with_max_objects(max(space.schema.max_objects, 10))
    support = read_scenes_jsonl(args.support, schema)
    if not support:
        raise BayesConceptsError(f"{args.support}: no support scenes")
    labels = []
    for i, s in enumerate(support, 1):
        if s.get("label") not in (0, 1) or isinstance(s.get("label"), bool):
            raise BayesConceptsError(f"{args.support} line {i}: label: expected 0 or 1, got {s.get('label')!r}")
        labels.append(s["label"])
    _check_consistent_labels(support, labels, args.support, settings)
    query = read_scenes_jsonl(args.query, schema) if args.query else []
    if args.query and not query:
        raise BayesConceptsError(f"--query {args.query}: no scenes in the file (it is empty or holds only blank lines)")
    hard = args.negatives == "hard"
    if name:
        split = run.splits[name]
        oracles = dict(zip(("strong", "weak"), strong_and_weak(space, split, settings)))
    else:
        import numpy as np
        oracles = {"strong": Oracle(space, np.arange(space.n_concepts), settings, "strong")}
    out = {}
    for name, oracle in oracles.items():
        oracle.fit(support, labels, hard=hard)
        ids, probs = oracle.posterior()
        top = len(ids) if args.top == 0 else args.top
        out[name] = {"posterior": [{"id": int(i), "program": space.programs[i], "p": float(p)}
                                   for i, p in zip(ids[:top], probs[:top]) if p > 0],
                     "predictive": [float(v) for v in oracle.predict_proba(query)] if query else [],
                     "empty": bool(oracle.empty_), "n_concepts": int(len(ids))}
    if args.json:
        print_json(out)
        return 0
    for name, r in out.items():
        print(f"{name} oracle: {r['n_concepts']:,} concept{'' if r['n_concepts'] == 1 else 's'} fit"
              f"{'s' if r['n_concepts'] == 1 else ''} the support" +
              (" (none fit: weak-empty policy applies)" if r["empty"] else ""))
        for row in r["posterior"]:
            print(f"  {row['p']:8.4f}  {space.program(row['id']).readable}   [#{row['id']}]")
        for j, p in enumerate(r["predictive"]):
            print(f"  query {j}: p(y=1) = {p:.4f}")
    return 0


def _check_consistent_labels(scenes, labels, where, settings):
    """The same scene (the same objects, in any order) labelled both 1 and 0 fits no concept:
    an error, unless the likelihood allows wrong labels (``noisy``) or the weak-empty policy
    is not ``zero`` -- then a note on stderr."""
    seen = {}
    for i, (scene, label) in enumerate(zip(scenes, labels), 1):
        key = tuple(sorted(json.dumps(o, sort_keys=True) for o in scene["objects"]))
        j, other = seen.setdefault(key, (i, label))
        if other != label:
            text = (f"{where} lines {j} and {i}: the same scene is labelled {other} and {label}, so no concept fits "
                    "the support")
            if settings.likelihood == "noisy" or settings.weak_empty != "zero":
                print(f"bayes-concepts: note: {text}", file=sys.stderr)
                return
            raise BayesConceptsError(f"{text} (every posterior probability would be 0); fix the labels, or model "
                                     "label noise with --likelihood noisy")
