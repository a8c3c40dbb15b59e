"""People against the ideal observer on Shepard, Hovland & Jenkins' six structures (issue 26).

Two stages, each a few minutes on a 2-core machine, merged into one JSON summary
(``--out``, default ``benchmarks/results/shj_fit.json``):

1. ``fit``: the sequential ideal observer (language and_or_not, length prior, block errors
   averaged exactly over the random trial orders) fitted to Nosofsky et al.'s (1994) 6 × 16
   error table with pyro (SVI); the posterior's curves and predictive check; its grid
   posterior as a check; the figure ``paper_figs/shj_people.png`` with its numbers beside it.
2. ``compare [LANGUAGE/PRIOR ...]``: the marginal likelihood (grid quadrature) and the
   held-out-blocks score of every language (and_or_not, and_not, xor_iff) with both priors
   (length, pcfg); give some of them to run only those (the others already in the JSON stay).

Also: the enumeration of each language (shortest description lengths of the six structures,
every concept reached) and its time.

Usage: ``python benchmarks/shj_fit.py fit`` then ``python benchmarks/shj_fit.py compare``.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path


from bayes_concepts.suites.shj.boolean import SHJ_LANGUAGES, enumerate_concepts, truth_table
from bayes_concepts.cogsci.sequential import PRIOR_KINDS
from bayes_concepts.suites.shj.fit import TYPES, compare_languages, shj_structures
from bayes_concepts.suites.shj.analysis import _json_default, shj_analysis


def enumeration() -> dict:
    out = {}
    structures = shj_structures()
    for lang in SHJ_LANGUAGES:
        t = time.perf_counter()
        c = enumerate_concepts(lang)
        seconds = time.perf_counter() - t
        tables = [truth_table(s) for s in structures]
        out[lang] = {"seconds": seconds, "reachable": int(c.reachable.sum()), "concepts": c.n_concepts,
                     "mass": c.mass,
                     "structures": {TYPES[i]: {"min_length": int(c.min_length[t]), "shortest": c.table()["readable"][t],
                                               "shortest_synonyms": float(c.shortest_synonyms[t]),
                                               "log_prob_sum": float(c.log_prob_sum[t])}
                                    for i, t in enumerate(tables)}}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stage", choices=["fit", "compare"])
    ap.add_argument("only", nargs="*", help="compare: LANGUAGE/PRIOR pairs to run (default all six)")
    ap.add_argument("--steps", type=int, default=300, help="SVI steps (default 300)")
    ap.add_argument("--draws", type=int, default=100, help="posterior draws for the curves (default 100)")
    ap.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    ap.add_argument("--figures", default="paper_figs", help="folder of the figure (default paper_figs; '' to skip)")
    ap.add_argument("--out", default="benchmarks/results/shj_fit.json", help="the JSON summary")
    args = ap.parse_args()
    out = Path(args.out)
    result = json.loads(out.read_text()) if out.exists() else {}
    result.update({"benchmark": "ideal observer vs people, Shepard, Hovland & Jenkins (issue 26)",
                   "machine": {"python": platform.python_version(), "processor": platform.machine(),
                               "cores_used": 1}})
    if args.stage == "fit":
        result["enumeration"] = enumeration()
        run = shj_analysis("and_or_not", "length", steps=args.steps, draws=args.draws, seed=args.seed,
                           out=args.figures or None, progress=True)
        result["fit"] = run["summary"]
        result["fit"]["paths"] = [str(p) for p in run["paths"]]
    else:
        pairs = [p.split("/") for p in args.only] or [(lang, prior) for lang in SHJ_LANGUAGES for prior in PRIOR_KINDS]
        comparison = {k: v for k, v in result.get("comparison", {}).items() if isinstance(v, dict)}
        for lang, prior in pairs:
            comparison.update({k: v for k, v in compare_languages([lang], [prior], seed=args.seed,
                                                                   progress=True).items() if isinstance(v, dict)})
        keys = list(comparison)
        comparison["best_by_evidence"] = max(keys, key=lambda k: comparison[k]["log_evidence"])
        comparison["best_by_held_out"] = max(keys, key=lambda k: comparison[k]["held_out"]["log_predictive"])
        result["comparison"] = comparison
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=_json_default) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
