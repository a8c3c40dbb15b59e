"""Which synonym classes are logically equivalent programs, and which coincide only on
the scene bank?  (CURI Appendix B.6)

A *synonym class* of a space is a set of concepts with identical truth values on the
space's scene bank.  CURI notes that some synonyms are "truly synonymous" (``A > B`` is
``B < A``) while others are synonymous only "in context of the image distribution"
(e.g. a location is never greater than 8).  For every class with two or more members
this script tries to *prove* its members equivalent and, failing that, looks for a
*counterexample scene* on which two members differ; the work is done by
:func:`bayes_concepts.synonyms.classify_synonym_classes` (the method: the docstrings of
:mod:`bayes_concepts.synonyms.prover` and :mod:`bayes_concepts.synonyms.classify`, and
``analyses/README.md``).  A class is

* ``propositional`` / ``first-order`` / ``domain facts``: all members provably
  equivalent, at the weakest level that suffices;
* ``empirical (refuted)``: a counterexample scene separates some members;
* ``empirical (undecided)``: neither proved nor refuted.

Run::

    .venv/bin/python analyses/synonyms.py --space spaces/demo

Outputs in ``--out`` (default ``analyses/out/synonyms/``): ``synonyms.md`` (summary,
method, examples), ``synonyms.csv`` (one row per class), ``synonym_members.csv``
(one row per concept), figure ``synonym_status`` (class sizes by status) as PNG +
PDF.  ``--episodes`` is accepted for uniformity with the other scripts and unused.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analyses import _common as C
from bayes_concepts.synonyms import (MAX_MINTERMS, STATUS, STATUS_ORDER, SynonymClassification,
                                     classify_synonym_classes, summarise_statuses)

NAME = "synonyms"


def _scene_text(scene) -> str:
    return "; ".join(f"{o['size']} {o['color']} {o['material']} {o['shape']} at ({o['x']}, {o['y']})"
                     for o in scene["objects"])


def markdown(result: SynonymClassification, space, args, n_examples: int = 3) -> str:
    """The report: summary table, method, examples per status."""
    classes, members, prover = result.classes, result.members, result.prover
    lines = ["# Synonym classes: logical equivalence or coincidence on the scene bank? (CURI B.6)", "",
             C.space_note(space) + ".",
             f"{len(classes):,} synonym classes have two or more members "
             f"({int(classes['size'].sum()) if len(classes) else 0:,} "
             f"concepts); counterexample search on {result.check_scenes:,} fresh check scenes "
             f"(seed {args.seed}).", "",
             C.markdown_table(summarise_statuses(classes), align=["left", "right", "right", "right", "right"]), "",
             "* **propositional**: every member provably equivalent with atoms as opaque, canonicalised "
             "propositions (`a = b` is `b = a`; `c > t` is `¬(t > c−1)`), `body₁ ↔ body₂` checked valid with "
             "sympy's SAT solver (`satisfiable`, DPLL) "
             "-- CURI's \"truly synonymous\";",
             "* **first-order**: provable once the quantifier over x is expanded (still pure logic);",
             "* **domain facts**: provable with facts true of every valid scene (one value per attribute, "
             "value ranges and order, count ranges, count ≥ 1 iff some object has the value, what `any`/`all` over "
             "S−x with a constant say about the other objects);",
             "* **empirical (refuted)**: a check scene separates members: they coincide only on the space's "
             "scene distribution (CURI's synonymy \"in context of the image distribution\");",
             "* **empirical (undecided)**: neither proved nor refuted.", "",
             "\"Not provable by this method\" is a **lower bound** on logical equivalence: relations between two "
             "objects (e.g. `all(color(S−x) = color(x))`, counts of x's own value), counts beyond ≥ 1 and the "
             "number of objects per scene are not modelled, so an undecided class may still be logically "
             "equivalent; a refuted class certainly is not (the separating scene is re-checked with the reference "
             "interpreter).",
             f"Proof/check-bank contradictions: {result.violations} (must be 0). "
             f"Comparisons abandoned as too large (> {prover.max_minterms:,} minterms): "
             f"{int(classes['too_large'].sum()) if len(classes) else 0}.", ""]
    if len(classes):
        undecided = classes.status.isin([STATUS["refuted"], STATUS["undecided"]])
        partly = classes[undecided & (classes.groups_domain < classes["size"])]
        refuted = classes[classes.status == STATUS["refuted"]]
        only_single = int((~refuted.refuted_multi_object).sum())
        lines += [f"Of the {int(undecided.sum())} classes not proved whole, {len(partly)} contain provably "
                  f"equivalent sub-groups. Of the {len(refuted)} refuted classes, {only_single} are separated only "
                  f"by one-object scenes (valid scenes, but outside the space's sampler, which draws "
                  f"{space.schema.sample_min_objects}..{space.schema.max_objects} objects). The method decided "
                  f"every pair (proof groups = check-bank groups) in "
                  f"{int((classes.groups_domain == classes.groups_check_bank).sum())} of {len(classes)} classes.", ""]
    lines.append("## Examples")
    lines.append("")
    lines.append("Per class: members (postfix — readable — boolean skeleton over lettered atoms, simplified with "
                 "sympy's `simplify_logic`), their proof group (domain level) and check-bank group; members are "
                 "shown round-robin over the proof groups.")
    by_class = members.groupby("class")
    for st in STATUS_ORDER:
        d = classes[classes.status == st].sort_values(["size", "class"], ascending=[False, True])
        if not len(d):
            continue
        # the largest class and a few small ones
        pick = pd.concat([d.head(1), d.iloc[1:].sort_values(["size", "class"]).head(n_examples - 1)])
        lines += ["", f"### {st} ({len(d):,} classes)"]
        for _, r in pick.iterrows():
            mem = by_class.get_group(r["class"])
            letters = {}
            lines += ["", f"Class {r['class']} ({r['size']} members, true on {r['count']:,} bank scenes; proof "
                          f"groups: propositional {r['groups_propositional']}, first-order {r['groups_first_order']}, "
                          f"domain {r['groups_domain']}; check-bank groups {r['groups_check_bank']}):", ""]
            queues = [list(g.itertuples()) for _, g in mem.groupby("group_domain", sort=True)]
            shown = []
            while len(shown) < min(8, len(mem)):
                for q in queues:
                    if q and len(shown) < 8:
                        shown.append(q.pop(0))
            for m in sorted(shown, key=lambda m: (m.group_domain, m.concept)):
                sk = prover.skeleton(m.program, letters)
                lines.append(f"- `{m.program}` — {m.readable} — skeleton `{sk}` (group {m.group_domain}, "
                             f"check group {m.group_check_bank})")
            if len(mem) > len(shown):
                lines.append(f"- … {len(mem) - len(shown)} more (see `synonym_members.csv`)")
            lines.append("- atoms: " + "; ".join(f"{v} = `{prover.atom_text(k)}`" for k, v in letters.items()))
            if r["counterexample"]:
                cex = json.loads(r["counterexample"])
                n = len(cex["scene"]["objects"])

                def ids(xs):
                    return ", ".join("#" + str(i) for i in xs[:10]) + (" …" if len(xs) > 10 else "")
                lines.append(f"- counterexample scene ({n} object{'s' if n > 1 else ''}): {_scene_text(cex['scene'])}"
                             f" — true for {ids(cex['true_for'])}; false for {ids(cex['false_for'])}")
    return "\n".join(lines)


#: class-size bins of the figure (inclusive bounds)
SIZE_BINS = [(2, 2), (3, 3), (4, 4), (5, 5), (6, 10), (11, 20), (21, 10**9)]
STATUS_COLORS = {STATUS["propositional"]: "#1a9641", STATUS["first-order"]: "#66bd63", STATUS["domain"]: "#a6d96a",
                 STATUS["undecided"]: "#bdbdbd", STATUS["refuted"]: "#d7191c"}


def status_by_size(classes: pd.DataFrame) -> pd.DataFrame:
    """Number of classes per (class-size bin, status): one row per bin up to the largest
    class, columns ``size`` (bin label), ``lo``, ``hi`` and one per status."""
    largest = int(classes["size"].max()) if len(classes) else 0
    rows = []
    for lo, hi in [b for b in SIZE_BINS if b[0] <= largest]:
        label = str(lo) if lo == hi else (f"{lo}–{hi}" if hi < 10**9 else f"> {lo - 1}")
        inside = (classes["size"] >= lo) & (classes["size"] <= hi)
        rows.append({"size": label, "lo": lo, "hi": hi,
                     **{st: int((inside & (classes.status == st)).sum()) for st in STATUS_ORDER}})
    return pd.DataFrame(rows, columns=["size", "lo", "hi", *STATUS_ORDER])


def figure(classes: pd.DataFrame):
    """CURI Figure 13 split by status: number of classes per class size (binned), stacked by
    status; right: share of classes per status.  Returns (fig, data), ``data`` =
    :func:`status_by_size`."""
    data = status_by_size(classes)
    with C.style():
        fig = Figure(figsize=(10, 5.2), layout="constrained")
        ax, ax2 = fig.subplots(1, 2, width_ratios=[3, 1.3])
        if len(classes):
            x = np.arange(len(data))
            bottom = np.zeros(len(data))
            for st in STATUS_ORDER:
                n = data[st].to_numpy(float)
                ax.bar(x, n, bottom=bottom, color=STATUS_COLORS[st], label=st, gid=f"status:{st}", width=0.8)
                bottom += n
            ax.set_xticks(x, data["size"])
            ax.set_xlabel("synonym class size (concepts with identical signatures)")
            ax.set_ylabel("number of classes")
            ax.legend(fontsize=9)
            summ = summarise_statuses(classes).iloc[:-1]
            ax2.barh(np.arange(len(summ)), summ["share of classes %"], color=[STATUS_COLORS[s] for s in summ.status])
            ax2.set_yticks(np.arange(len(summ)), summ.status)
            ax2.invert_yaxis()
            ax2.set_xlabel("share of classes (%)")
        fig.suptitle("Synonym classes: provably equivalent vs equal only on the scene bank")
    return fig, data


def main(argv=None) -> pd.DataFrame:
    p = C.parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--check-scenes", type=int, default=200_000,
                   help="scenes of the counterexample check bank (default: %(default)s)")
    p.add_argument("--max-minterms", type=int, default=MAX_MINTERMS,
                   help="give up a first-order/domain comparison beyond this many minterms (default: %(default)s)")
    p.add_argument("--examples", type=int, default=3, help="example classes per status in the Markdown")
    p.add_argument("--verify-proofs", action="store_true",
                   help="also try to prove pairs that a check scene separates, counting any proof as a violation "
                        "(a soundness check of the prover; slower)")
    args = C.parse(p, argv, NAME)
    if args.check_scenes < 1:
        p.error("--check-scenes must be >= 1")
    if args.max_minterms < 1:
        p.error("--max-minterms must be >= 1")
    elapsed = C.timer()
    space = C.load_space(args, p)
    result = classify_synonym_classes(space, args.check_scenes, args.seed, args.max_minterms,
                                      progress=not args.quiet, verify=args.verify_proofs)
    C.write_table(result.classes, args.out, NAME)
    C.write_table(result.members, args.out, "synonym_members")
    md = markdown(result, space, args, args.examples)
    C.write_markdown(md, args.out, NAME)
    C.save_figure(figure(result.classes)[0], args.out, "synonym_status")
    if not args.quiet:
        print(md)
        print(f"\n[{NAME}: {elapsed():.1f} s; outputs in {args.out}]")
    return result.classes


if __name__ == "__main__":
    main()
