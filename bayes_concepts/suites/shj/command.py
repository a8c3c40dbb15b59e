"""Shepard, Hovland & Jenkins' category structures: ``people shj`` (the ideal observer fitted to
people's errors; the preset ``shj`` is in :mod:`.presets`)."""
from __future__ import annotations

import json
from pathlib import Path

from ...errors import BayesConceptsError
from ...command_registry import command, command_group
from ...options import Given, given_options, grammar_path, whole
from ...preflight import check_output_dir


command_group("people", help="ideal observers against people's category learning", order=150)


def _shj_arguments(p):
    p.add_argument("--language", default="and_or_not", metavar="NAME|FILE", action=Given,
                   help="the observer's language: and_or_not (hypotheses/shj.pcfg, the default), and_not or xor_iff, "
                        "or a boolean grammar file")
    p.add_argument("--space", metavar="DIR",
                   help="a saved space built with 'space build OUT --preset shj' (instead of --language)")
    p.add_argument("--prior", choices=["length", "pcfg"], default="length",
                   help="the prior over concepts: length (exp(-beta * shortest description length), the default) or "
                        "pcfg (the grammar's probability to the power beta)")
    p.add_argument("--method", choices=["svi", "nuts"], default="svi",
                   help="svi (a multivariate normal guide, about two minutes here; the default) or nuts (exact "
                        "MCMC; far slower: each step evaluates the model many times)")
    p.add_argument("--steps", type=whole(1), action=Given, default=300,
                   help="optimisation steps of svi (default 300); refused with --method nuts")
    p.add_argument("--samples", type=whole(1), default=1000, help="posterior draws kept (default 1000)")
    p.add_argument("--warmup", type=whole(0), action=Given, default=300,
                   help="warm-up steps of nuts (default 300); refused with --method svi")
    p.add_argument("--orders", type=whole(1), default=None,
                   help="average the block errors over this many sampled random trial orders (seeded by --seed) "
                        "instead of exactly over all orders (the default; sampling is faster, with Monte Carlo "
                        "error)")
    p.add_argument("--draws", type=whole(1), default=100,
                   help="posterior draws whose curves the figure and the predictive check use (default 100)")
    p.add_argument("--compare", action="store_true",
                   help="also compare every language with both priors by the marginal likelihood (grid quadrature) "
                        "and held-out blocks (about five minutes); without it the fit is checked against its own "
                        "grid posterior")
    p.add_argument("--human", metavar="FILE.csv",
                   help="your own study: a cell table (type,block,errors,trials, a subject column optional; or "
                        "type,block,p_error with n or --trials) or a trial-by-trial file (subject,type,block,trial "
                        "and correct, or response and category; stimulus optional); default Nosofsky et al. (1994)")
    p.add_argument("--name", metavar="NAME",
                   help="the study's name in the figure, the printout and the JSON (default the --human file's stem)")
    p.add_argument("--trials", type=whole(1), metavar="N",
                   help="trials behind each cell of a --human table of rates without an n column (e.g. learners x "
                        "16); refused for tables that carry counts")
    p.add_argument("--structures", metavar="FILE.csv",
                   help="other category structures (type,d1,d2,d3,category); default Shepard et al. (1961); named "
                        "as SHJ's six only when each type is the SHJ type of its number")
    p.add_argument("--unbalanced", action="store_true",
                   help="accept --structures whose categories differ in size (refused by default), fitted and "
                        "named as your own")
    p.add_argument("--seed", type=whole(0), default=0,
                   help="seed of the fit, the posterior draws and any sampled orders (a whole number >= 0; default 0)")
    p.add_argument("--out", metavar="DIR",
                   help="write shj_people.png/.pdf (the figure), shj_people.csv and shj_people_order.csv (its "
                        "numbers) and shj_people.json (the summary) into DIR")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")


#: Bytes per sampled SHJ trial order while its prefix counts are made: a block of 16 trials
#: over 8 stimuli, int64 one-hot, cumulative and sorted copies.
_SHJ_ORDER_BYTES = 4 * 16 * 8 * 8


@command("people shj", order=10, arguments=_shj_arguments, compiles=True,
         help="fit the sequential ideal observer's beta, epsilon and lapse rate to people's errors on the six "
              "structures of Shepard, Hovland & Jenkins (Nosofsky et al. 1994's 6 x 16 error table, or your own "
              "study with --human) and write the figure, its numbers and a summary")
def cmd_people_shj(args) -> int:
    given = given_options(args)
    if args.method == "nuts" and "steps" in given:
        raise BayesConceptsError("--steps sets the svi optimisation: it does not apply with --method nuts")
    if args.method == "svi" and "warmup" in given:
        raise BayesConceptsError("--warmup sets the nuts warm-up: it does not apply with --method svi")
    if args.space and "language" in given:
        raise BayesConceptsError("give --space or --language, not both (a saved space has its own language)")
    for option, path in (("--human", args.human), ("--structures", args.structures)):
        if path and not Path(path).is_file():
            raise BayesConceptsError(f"{option} {path}: no such file")
    if args.trials is not None and not args.human:
        raise BayesConceptsError("--trials gives the trials behind a --human table of rates: give --human too")
    if args.unbalanced and not args.structures:
        raise BayesConceptsError("--unbalanced accepts --structures of unequal categories: give --structures too")
    from .people import read_human
    human = read_human(args.human, trials=args.trials, name=args.name)   # bad files fail before any work
    if args.out:
        check_output_dir(args.out, "--out")
    from .boolean import SHJ_LANGUAGES
    language = args.language
    if not args.space and language not in SHJ_LANGUAGES:
        if not Path(language).is_file() and not language.endswith(".pcfg"):
            raise BayesConceptsError(f"--language {language}: expected one of {', '.join(SHJ_LANGUAGES)} or a grammar "
                                     "file")
        language = str(grammar_path(language))
        if not Path(language).is_file():
            raise BayesConceptsError(f"--language {args.language}: no such grammar file")
    if args.orders:  # the sampled orders' prefix counts are held at once: refused before any work
        from ...scale import check_memory
        check_memory(args.orders * _SHJ_ORDER_BYTES, f"--orders {args.orders:,}",
                     "sample fewer orders (or leave --orders out: the exact average over all orders)",
                     f"the prefix counts of {args.orders:,} trial orders")
    space = None
    if args.space:
        from ...spaces import load_space
        space = load_space(args.space)
    from .analysis import shj_analysis
    run = shj_analysis(language, args.prior, space=space, method=args.method, steps=args.steps,
                       num_samples=args.samples, warmup_steps=args.warmup,
                       states="sampled" if args.orders else "exact", n_orders=args.orders or 32, seed=args.seed,
                       draws=args.draws, compare=args.compare, human=human, structures=args.structures,
                       unbalanced=args.unbalanced, out=args.out, progress=not args.json)
    s = run["summary"]
    if args.json:
        from .analysis import _json_default
        print(json.dumps(s, default=_json_default))
        return 0
    par = s["parameters"]
    h, st = s["human"], s["structures"]
    print(f"people: {h['name']} ({h['file'] or 'array'}, sha256 {(h['sha256'] or '-')[:12]}; {h['trials_total']:,} "
          f"trials, {h['errors_total']:,} errors, {h['blocks']} blocks); structures: {st['name']}"
          + ("" if st["kind"] == "shj" else " (your own)"))
    print(f"{s['language']}, {s['prior']} prior, {s['method']} ({s['times']['fit_seconds']:.0f} s):")
    for name in ("beta", "epsilon", "lapse"):
        v = par[name]
        print(f"  {name:8s} {v['mean']:.4f}   {v['prob']:.0%} interval [{v['low']:.4f}, {v['high']:.4f}]")
    print(f"  block errors, model vs people ({s['cells']} cells): r = {s['correlation']:.3f}, "
          f"RMSE = {s['rmse']:.3f}; {s['ppc']['cells_inside']}/{s['ppc']['cells']} cells inside the "
          f"{s['ppc']['prob']:.0%} predictive interval")
    print("  mean error per type   " + "  ".join(f"{t}: {v['people']:.3f}/{v['model']:.3f}"
                                               for t, v in s["mean_error_per_type"].items()) + "  (people/model)")
    po, ag = s["people_order"], s["agreement"]
    print(f"  order, people: {po['order']}  (told apart at {po['prob']:.0%} from the counts; observed "
          f"{po['point']})")
    print(f"  order, model:  {s['order_model']}")
    tau = ag["kendall_tau"]
    print(f"  verdict: {ag['text']}; Kendall's tau {tau['at_mean']:.2f} (posterior {tau['mean']:.2f} "
          f"[{tau['low']:.2f}, {tau['high']:.2f}])")
    if "order_check" in s:
        print(f"  published order {s['human_order']}: {'reproduced' if s['order_check']['reproduced'] else 'missed'}"
              + (f"; fails {', '.join(s['order_check']['failed'])}" if s['order_check']['failed'] else ""))
    if "comparison" in s:
        c = s["comparison"]
        print("  language/prior          log evidence   held-out log density   order")
        for key, v in c.items():
            if isinstance(v, dict):
                print(f"  {key:22s} {v['log_evidence']:12.1f}   {v['held_out']['log_predictive']:20.1f}   "
                      f"{v['order_model']}")
        print(f"  best by evidence: {c['best_by_evidence']}; best on held-out blocks: {c['best_by_held_out']}")
    for path in run["paths"]:
        print(f"wrote {path}")
    return 0
