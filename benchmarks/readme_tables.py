"""The guide's measured tables, generated from the committed summaries in ``benchmarks/results/``.

Each generated table sits in a page of the guide (``docs/**/*.md``; the results pages, the
benchmark chapters, the performance page) or in README.md, between two markers::

    <!-- generated: NAME -->
    | ... the table ... |
    <!-- end generated -->

``python benchmarks/readme_tables.py`` rewrites every such block of every page from its source
files; ``--check`` only compares and exits 1 naming each stale block, each table with numbers
that is neither generated nor declared as definitions, and each generated table that is in no
page or in more than one (``tests/test_readme_numbers.py`` runs the check, so a number in the
docs that no committed result gives fails the tests).  ``--page FILE`` restricts both to the
pages named.  A table's numbers are formatted here and nowhere else.
"""
from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from pathlib import Path

from bayes_concepts.rungs import readme_columns

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
README = ROOT / "README.md"
DOCS = ROOT / "docs"
BLOCK = re.compile(r"(<!-- generated: (?P<name>[a-z_]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)

SPLIT_NAMES = {"binding_color": "Binding (colour)", "binding_shape": "Binding (shape)", "boolean": "Boolean",
               "complexity": "Complexity", "concept_iid": "Concept IID", "counting": "Counting",
               "extrinsic": "Extrinsic", "instance_iid": "Instance IID", "intrinsic": "Intrinsic"}


def load(name: str) -> dict:
    """The summary ``benchmarks/results/NAME.json``."""
    return json.loads((RESULTS / f"{name}.json").read_text())


def _gb(mb: float) -> str:
    return f"{mb / 1000:.1f} GB"


def _ci(ci) -> str:
    return f"[{ci[0]:.1f}, {ci[1]:.1f}]"


def _sci(x: float) -> str:
    """4.46e8 -> '4.5 × 10⁸'."""
    exp = len(str(int(abs(x)))) - 1
    sup = str(exp).translate(str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"))
    return f"{x / 10**exp:.1f} × 10{sup}"


def _signed(x: float, digits: int = 1) -> str:
    """+2.5 or −2.8 (a typographic minus, as the docs write it)."""
    return f"{x:+.{digits}f}".replace("-", "−")


def table(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    align = align or "|".join("---" for _ in header)
    lines = ["| " + " | ".join(header) + " |", "|" + align + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def learners() -> str:
    """CURI's learner table: the schema relation net on the nine splits (``learners.json``)."""
    doc = load("learners")
    fig = doc["figures"]
    rows = []
    for r in fig["budget_runs"]:
        m, t = r["relnet"], r["training"]
        curi = f"{r['curi_relnet_map']:.1f} ± {r['curi_relnet_map_std']:.1f}" \
            if r.get("curi_relnet_map_std") is not None else f"{r['curi_relnet_map']:.1f}"
        rows.append([SPLIT_NAMES.get(r["split"], r["split"]), f"{t['steps']:,}", f"{t['episodes_per_s']:.0f}",
                     f"{m['map']:.1f} {_ci(m['map_ci'])}", f"{m['cba']:.1f}", f"{r['weak']['map']:.1f}",
                     f"{r['strong']['map']:.1f}", curi, _signed(r["minus_curi_map"])])
    return table(["split", "steps", "episodes/s", "relation net mAP [95 % CI]", "CBA", "weak oracle mAP",
                  "strong oracle mAP", "CURI's relation net mAP (± sd)", "ours − CURI's"], rows,
                 "---|---:|---:|---:|---:|---:|---:|---:|---:")


def speed() -> str:
    """The Speed table (``executor``, ``space_build``, ``episodes``, ``gap``, ``relational``)."""
    ex, build, eps, gap = (load(n)["figures"] for n in ("executor", "space_build", "episodes", "gap"))
    rel = load("relational")
    paper = build["paper"]
    side = rel["side_by_side"]
    r10, c10 = side["relational_10_slots"], side["curi_10_slots"]
    rows = [
        [f"{ex['programs']:,} programs × {ex['scenes']:,} scenes (`benchmarks/executor.py`)",
         f"{ex['executor_run_s']:.2f} s to run ({ex['executor_compile_s']:.2f} s to compile), "
         f"{ex['ratio_executor_over_slow']:,.0f}× the slow interpreter's program·scenes per second"],
        [f"paper-scale space build, {paper['concepts']:,} concepts × {paper['scenes']:,} scenes "
         "(`benchmarks/space_build.py`)",
         f"{paper['wall_seconds']:.0f} s, {_gb(paper['peak_rss_mb'])} peak RSS (`ru_maxrss`)"],
        [f"{eps['episodes']:,} hard-negative episodes on it, {SPLIT_NAMES.get(eps['split'], eps['split'])} "
         f"(`benchmarks/episodes.py`)",
         f"{eps['hard_s']:.1f} s (+ {eps['index_s']:.1f} s one-off index)"],
        [f"the full comp-gap table on it: 9 splits × hard/easy × {gap['episodes_per_cell']:,} episodes, strong + "
         f"weak, {gap['settings']['likelihood']} likelihood (`benchmarks/gap.py`)",
         f"{gap['wall_s']:.0f} s, {_gb(gap['peak_rss_mb'])} peak RSS (`ru_maxrss`)"
         + (f", of it {_gb(gap['peak_anon_mb'])} anonymous (the rest: the row files, mapped)" if "peak_anon_mb" in gap
            else "") + _size_table_ratio()],
        *_ladder_speed_rows(),
        *_parse_speed_rows(),
        [f"relational programs of `clevr.pcfg` against CURI's of the same lengths ({rel['matched_programs']:,} each, "
         f"{rel['matched_lengths'][0]}–{rel['matched_lengths'][1]} tokens), {rel['settings']['scenes']:,} scenes, "
         "10 object slots (`benchmarks/relational.py`)",
         f"{_sci(r10['evaluations_per_second'])} against {_sci(c10['evaluations_per_second'])} program·scenes/s"],
    ]
    return table(["job", "measured"], rows)


def _parse_speed_rows() -> list:
    """Parsing a space's programs (``parse_speed.json``): this parser against the earlier one (kept
    in the tests as its twin), side by side in one process, with every program equal."""
    if not (RESULTS / "parse_speed.json").exists():
        return []
    f = load("parse_speed")["figures"]
    rows = []
    for name, c in f.items():
        rows.append([f"parsing the {c['programs']:,} programs of a {name} space ({c['tokens_per_program']:.0f} tokens "
                     "on average; `benchmarks/parse_speed.py`)",
                     f"{1000 * c['ms_per_program_now']:.0f} µs a program, {c['ratio']:.2f}× the earlier parser in the "
                     f"same run; {c['ratio_kept']:.2f}× with every parsed program kept alive (the garbage collector's "
                     "passes over them cost both alike); "
                     + ("every program equal" if c["equal"] else "PROGRAMS DIFFER")])
    return rows


def _size_table_ratio() -> str:
    """The size table against earlier code in the same run (``size_table_ratio.json``), or ""."""
    if not (RESULTS / "size_table_ratio.json").exists():
        return ""
    f = load("size_table_ratio")["figures"]
    return (f"; the code at commit {f['before']['commit']} {f['before']['wall_s']:.0f} s one run before it "
            f"({f['ratio']:.2f}×, `benchmarks/size_table_ratio.py`), "
            + ("every result equal" if f["all_equal"] else "RESULTS DIFFER"))


def _ladder_speed_rows() -> list:
    """The ladder's rows of the Speed table (``ladder_speed.json``): this code's wall time and the
    earlier code's, measured one after the other in one run, and whether every number agreed."""
    doc = load("ladder_speed")
    f = doc["figures"]
    what = {"default_ladder": "the default ladder (8 rungs)",
            "curve_ladder": "the benchmark's ladder (14 rungs: learned priors at α = 1, 10, 100, sampling at n = 100, "
                            "1,000, 10,000)"}
    others = {"conceptworld_ladder": "ConceptWorld's benchmark ladder (14 rungs) on the conceptworld preset: 8 "
                                     "conditions",
              "closure_ladder": "CLOSURE's benchmark ladder (14 rungs) on the clevr preset: 7 families"}
    rows = []
    for case, c in f["cases"].items():
        same = c.get("all_equal", c.get("rows_equal"))
        where = (f"{others[case]} × hard/easy × {f['episodes_per_cell']:,} episodes" if case in others else
                 f"{what[case]} on it: 9 splits × hard/easy × {f['episodes_per_cell']:,} episodes")
        rows.append([f"{where} (`benchmarks/ladder_speed.py`)",
                     f"{c['after']['seconds']:.0f} s, {_gb(c['after']['peak_rss_mb'])} peak RSS; "
                     + (f"{c['before_label']}:" if c.get("before_label") else
                        f"the code at commit {c.get('before_commit', doc.get('before_commit', '?'))}")
                     + f" {c['before']['seconds']:.0f} s in the same run ({c['ratio']:.2f}×), "
                     + ("every number equal" if same else "NUMBERS DIFFER")])
    return rows


def noisy_breakdown() -> str:
    """Where the exact noisy likelihood's time goes beside the size likelihood's
    (``noisy_breakdown.json``): per hard cell, ms per episode (strong + weak, sampling not
    timed) of each likelihood and of the noisy run's parts."""
    doc = load("noisy_breakdown")
    f = doc["figures"]
    rows = []
    for cell, c in f["cells"].items():
        ms = c["ms_per_episode_strong_plus_weak"]
        split, neg = cell.rsplit(" ", 1)
        rows.append([f"{SPLIT_NAMES.get(split, split)}, {neg}", f"{ms['size']:.2f}", f"{ms['noisy']:.2f}",
                     f"{c['noisy_over_size']:.1f} ×", f"{ms['noisy_posterior']:.2f}",
                     f"{ms['noisy_deferred']:.2f} ({100 * c['deferred_share_of_oracle_episodes']:.0f} %)",
                     f"{ms['noisy_rest']:.2f}"])
    m = f["mean_ms_per_episode"]
    rows.append(["mean", f"{m['size']:.2f}", f"{m['noisy']:.2f}", f"{f['noisy_over_size']:.1f} ×",
                 f"{m['noisy_posterior']:.2f}", f"{m['noisy_deferred']:.2f}", f"{m['noisy_rest']:.2f}"])
    machine = doc["provenance"]["machine"]
    return (table(["cell", "size", "noisy", "noisy / size", "noisy: posterior", "noisy: too wide to prune "
                   "(share of episodes)", "noisy: query and pruned exact AP"], rows,
                  "---|---:|---:|---:|---:|---:|---:")
            + f"\nms per episode, strong + weak oracle, {doc['episodes_per_cell']:,} episodes per cell, both threads, "
              f"sampling not timed; {doc['provenance']['date'][:10]}, load average "
              f"{machine['load_avg'][0]:.1f} at the end (its own two threads count in it).\n")


def roofline() -> str:
    """Every stage of an episode against the machine's limits (``roofline.json``)."""
    doc = load("roofline")
    f = doc["figures"]
    cells = list(f["cells"].values())
    stages = [("posterior", "posterior (candidates, log weights, normalisation)"),
              ("class_weights", "class weights"), ("query", "query prediction"),
              ("test_bank_scoring", "test-bank scoring"), ("ap", "AP")]

    def agg(lik, key):  # strong + weak, mean over cells; the fraction weighted by time
        ms = [c[lik][o][key]["ms_per_episode"] for c in cells for o in ("strong_stages", "weak_stages")]
        fr = [c[lik][o][key]["fraction_of_limit"] for c in cells for o in ("strong_stages", "weak_stages")]
        return f"{2 * sum(ms) / len(ms):.3f}", f"{sum(m * x for m, x in zip(ms, fr)) / sum(ms):.2f}"
    samp = [c["sampling"] for c in cells]
    rows = [["sampling (hard negatives; both threads)",
             f"{sum(x['ms_per_episode'] for x in samp) / len(samp):.3f}",
             f"{sum(x['fraction_of_limit'] for x in samp) / len(samp):.2f}", "(the same)", ""]]
    for key, name in stages:
        rows.append([name, *agg("size", key), *agg("noisy", key)])
    ev = {lik: sum(c[lik]["evaluate_ms_per_episode_strong_plus_weak"] for c in cells) / len(cells)
          for lik in ("size", "noisy")}
    rows.append(["the whole episode as the oracles run it (both threads; noisy prunes)", f"{ev['size']:.3f}", "",
                 f"{ev['noisy']:.3f}", ""])
    lim = f["limits_one_thread"]
    t = f["table"]
    flat = f["flat_noisy_scoring_ms_per_episode"]
    dense = f["dense_ap_ms"]
    return (table(["stage (ms per episode, strong + weak; one thread)", "size", "fraction of its limit",
                   "noisy, every test scene scored", "fraction of its limit"], rows, "---|---:|---:|---:|---:")
            + f"\n{doc['episodes_per_cell']:,} hard episodes of {', '.join(f['cells'])}, "
              f"{doc['provenance']['date'][:10]}, load average {doc['provenance']['machine']['load_avg'][0]:.1f} at "
              f"the end (other jobs share the 2 cores: compare figures of one run only). This machine's limits, one "
              f"thread, measured in the same run: "
              f"streaming read {lim['stream_read_gb_s']:.1f} GB/s, vector add {lim['vector_add_gadd_s']:.1f} G adds/s, "
              f"random gather {max(lim['gather_l2_ggather_s'], lim['gather_scenes_ggather_s']):.2f} G/s in L2 and "
              f"{lim['gather_beyond_l2_ggather_s']:.2f} G/s beyond L2. The table these cells imply: "
              f"{t['size_table_s_estimate']:,.0f} s (size), {t['noisy_table_s_estimate']:,.0f} s (noisy). "
              f"A flat noisy episode's scoring: {flat['deferred_kernel_incl_ap']:.1f} ms with the deferred "
              f"kernel (exact, float64, 16 episodes a pass, AP included; its pass alone, one thread: "
              f"{flat['rows16_one_thread']:.1f} ms against {flat['rows8_one_thread']:.1f} ms 8 at a time) against "
              f"{flat['torch_csr_f32_B64']:.1f} ms (torch CSR x dense, float32, 64 episodes, no AP) and "
              f"{flat['torch_csr_f64_B64']:.1f} ms (float64); a dense AP over "
              f"the test bank: {dense['metrics_average_precision_dense']:.1f} ms by level against "
              f"{dense['argsort_f64']:.1f} ms for sorting the scores alone.\n")


def curi_split_sizes() -> str:
    """Split sizes of the ``curi-release`` protocol on the ``curi`` space beside the release's
    (``curi_release.json``)."""
    fig = load("curi_release")["figures"]
    rows = []
    for r in fig["split_sizes"]:
        if r.get("release_test") is None or r["release_test"] != r["release_test"]:  # no published size (NaN)
            continue
        dropped = f" ({r['dropped']:,} dropped)" if r["dropped"] else ""
        rel_dropped = f" ({int(r['release_dropped']):,})" if r["dropped"] else ""
        rows.append([SPLIT_NAMES.get(r["split"], r["split"]), f"{r['train']:,} / {r['test']:,}{dropped}",
                     f"{r['test_share_pct']:.2f} %",
                     f"{int(r['release_train']):,} / {int(r['release_test']):,}{rel_dropped}",
                     f"{r['release_test_share_pct']:.2f} %", _signed(r["relative_difference_pct"]) + " %"])
    return table(["split", "train / test (ours)", "test share", "release train / test", "release share", "relative"],
                 rows, "---|---:|---:|---:|---:|---:")


SHJ_LANGUAGE_NAMES = {"and_or_not": "and, or, not", "and_not": "and, not", "xor_iff": "and, or, not, xor, iff"}


def _interval(v: dict, digits: int = 3) -> str:
    return f"{v['mean']:.{digits}f} [{v['low']:.{digits}f}, {v['high']:.{digits}f}]"


def shj_fit() -> str:
    """The ideal observer fitted to people on Shepard, Hovland & Jenkins' six structures (``shj_fit.json``)."""
    f = load("shj_fit")["fit"]
    p, g = f["parameters"], f["grid_check"]["posterior_mean"]
    s = f["settings"]
    rows = [["β, rate of the length prior (per token)", _interval(p["beta"]), f"{g['beta']:.3f}"],
            ["ε, label noise of the likelihood", _interval(p["epsilon"]), f"{g['epsilon']:.3f}"],
            ["λ, lapse rate", _interval(p["lapse"]), f"{g['lapse']:.3f}"],
            [f"model vs people, {f['cells']} block errors", f"r = {f['correlation']:.3f}, RMSE {f['rmse']:.3f}", ""],
            [f"cells inside the {round(f['ppc']['prob'] * 100)} % posterior predictive interval",
             f"{f['ppc']['cells_inside']} of {f['ppc']['cells']}", ""],
            [f"run time ({f['method'].upper()}: {s['steps']} steps; both: every trial order, one thread)",
             f"{f['times']['fit_seconds']:.0f} s", f"{f['times']['grid_seconds']:.0f} s"]]
    return table([f"{SHJ_LANGUAGE_NAMES[f['language']]}, {f['prior']} prior", "SVI posterior mean [90 % interval]",
                  "grid posterior mean"], rows, "---|---:|---:")


def shj_types() -> str:
    """The six types: shortest descriptions in each language, mean errors of people and of the
    fitted observer (``shj_fit.json``)."""
    doc = load("shj_fit")
    f, enum = doc["fit"], doc["enumeration"]
    ranks = {k: r for k, r in zip(("people", "model"), ([], []))}
    for who in ranks:
        values = [v[who] for v in f["mean_error_per_type"].values()]
        ranks[who] = [1 + sum(w < x for w in values) for x in values]
    rows = []
    for i, (t, v) in enumerate(f["mean_error_per_type"].items()):
        rows.append([t] + [str(enum[lang]["structures"][t]["min_length"]) for lang in SHJ_LANGUAGE_NAMES]
                    + [f"{v['people']:.3f}", f"{v['model']:.4f} [{v['model_low']:.4f}, {v['model_high']:.4f}]",
                       f"{ranks['people'][i]} / {ranks['model'][i]}"])
    return table(["type", "l_min: and, or, not", "and, not", "+ xor, iff", "people: mean P(error)",
                  "model [90 %]", "rank people / model"], rows, "---|---:|---:|---:|---:|---:|---:")


def shj_languages() -> str:
    """Every language with both priors: evidence and held-out blocks (``shj_fit.json``)."""
    c = load("shj_fit")["comparison"]
    rows = []
    for key, v in c.items():
        if not isinstance(v, dict):
            continue
        lang, prior = key.split("/")
        pm = v["posterior_mean"]
        rows.append([SHJ_LANGUAGE_NAMES[lang], prior, f"{v['log_evidence']:.1f}",
                     f"{v['held_out']['log_predictive']:.1f}", f"{pm['beta']:.3f}", f"{pm['epsilon']:.3f}",
                     f"{pm['lapse']:.3f}", f"{v['correlation']:.3f}", v["order_model"]])
    return table(["language", "prior", "log evidence", "held-out log density", "β", "ε", "λ", "r", "model's order"],
                 rows, "---|---|---:|---:|---:|---:|---:|---:|---")


def memory_peaks() -> str:
    """The memory table (``memory_peaks.json``): each case's peaks per run (code, environment)."""
    doc = load("memory_peaks")
    what = {"from_pairs": "`space from-pairs`, C-GQA natural split, 20 items per pair (155,340 items)",
            "audit": "`audit spaces/paper` (every split, 2,000 episodes)",
            "notebook_10": "notebook 10 (the ladder) on `spaces/paper`"}
    rows = []
    for case in what:
        for label, run in sorted(doc["runs"].items(), key=lambda kv: (kv[0] != "before", kv[0])):
            c = run["cases"].get(case)
            if c is None:
                continue
            env = ", ".join(f"`{k}={v}`" for k, v in (run.get("env") or {}).items()) or "defaults"
            rows.append([what[case], f"{label} ({env})", f"{c['peak_anon_gb']:.2f} GB", f"{c['peak_file_gb']:.2f} GB",
                         f"{c['peak_hwm_gb']:.2f} GB", f"{c['seconds']:.0f} s"])
    return table(["run", "code (settings)", "peak anonymous", "peak file-backed (mapped)", "peak RSS (VmHWM)",
                  "wall time"], rows, "---|---|---:|---:|---:|---:")


def scaling() -> str:
    """The scaling table (``scale.json``): wall time and per-process peak RSS (``VmHWM``) and
    peak anonymous memory (``RssAnon``) of each job."""
    fig = load("scale")["figures"]

    def mem(job):
        procs = job["processes"]
        return ", ".join(f"{p['peak_rss_mb'] / 1000:.1f} ({p['peak_anon_mb'] / 1000:.1f})" for p in procs) + " GB"

    b1, b2, g = fig["build_in_process"], fig["build_local2"], fig["gap_in_process"]
    rows = [[f"{b1['scenes']:,}-scene build ({b1['counts'].get('concepts', 0):,} concepts), in-process",
             f"{b1['wall_s']:.0f} s", mem(b1)],
            [f"the same, `--scheduler local:2` (in-process / Dask = {fig['ratio_inprocess_over_local2']:.2f})",
             f"{b2['wall_s']:.0f} s", mem(b2) + ("; same manifest" if fig["same_manifest"] else "; OTHER manifest")],
            [f"full comp-gap table on `{g['space']}` ({g['likelihood']} likelihood, {g['episodes_per_cell']:,} "
             "episodes per cell), in-process", f"{g['wall_s']:.0f} s", mem(g)]]
    return table(["job (this 2-core machine)", "wall time", "peak RSS (anonymous) per process"], rows)


def ap_tolerance() -> str:
    """The full table with the size likelihood and the noisy one at three AP tolerances, side
    by side cell by cell in one process (``ap_tolerance.json``)."""
    doc = json.loads((RESULTS / "ap_tolerance.json").read_text())
    names = {"size": "size likelihood", "noisy_default": "noisy, AP tolerance 1e-4 (default)",
             "noisy_1e-3": "noisy, AP tolerance 1e-3", "noisy_exact": "noisy, exact AP (tolerance 0)"}
    rows = []
    for tag, name in names.items():
        v = doc["vs_exact"].get(tag)
        rows.append([name, f"{doc['wall_s'][tag]:,.0f} s", f"{doc['ratio_to_size'][tag]:.1f}×",
                     f"{v['mean_bound']:.1e} / {v['max_bound']:.1e}" if v else "–",
                     f"{v['largest_map_gap_diff']['abs_diff']:.4f} ({v['largest_map_gap_diff']['ci_width_over_10']:.3f})"
                     if v else "–"])
    return (table(["run", "wall time", "× size", "certified bound, mean / max",
                   "largest mAP-gap difference from exact, points (a tenth of that cell's interval)"], rows)
            + f"\n{doc['episodes_per_cell']:,} episodes per cell, {doc['when'][:10]}; peak RSS of the process (all "
              f"four runs): {_gb(doc['peak_rss_mb_process'])}.\n")


def ap_tolerance_sweep() -> str:
    """The size likelihood and the noisy one at several AP tolerances on four hard cells, and
    the noisy posterior alone against the size likelihood's whole episode
    (``ap_tolerance_sweep.json``)."""
    doc = load("ap_tolerance_sweep")
    f = doc["figures"]
    rows = []
    for tag, r in f["runs"].items():
        t = None if tag == "size" else float(tag.split("=")[1])
        name = ("size likelihood" if t is None else "noisy, exact AP (tolerance 0)" if t == 0
                else f"noisy, AP tolerance {t:g}")
        rows.append([name, f"{r['wall_s']:,.1f} s", f"{r['ratio_to_size']:.1f}×",
                     f"{r['mean_bound']:.1e} / {r['max_bound']:.1e}" if t else "–"])
    fl = f["posterior_floor"]
    return (table(["run", "wall time", "× size", "certified bound, mean / max"], rows)
            + f"\n{doc['episodes_per_cell']:,} episodes per cell ({', '.join(doc['cells'])}), "
              f"{doc['provenance']['date'][:10]}. The noisy posterior alone (every concept's weight and the class "
              f"weights; no query prediction, no AP) on the same splits' episodes: {fl['noisy_posterior_only_s']:.1f} s "
              f"against {fl['size_whole_s']:.1f} s for the size likelihood's whole episodes, "
              f"{fl['ratio']:.2f}× ({fl['mean_candidates']:,.0f} candidate concepts per episode on average).\n")


def rlcl_lists() -> str:
    """RLCL's published pair lists audited alone (``rlcl_lists.json``): per layout, the hard
    mAP gap of its own seen/unseen split and of seen_k1 in parts, and of its episode worlds."""
    doc = load("rlcl_lists")
    rows = []
    for name, f in doc["figures"].items():
        s = f["splits"]
        u, k1, w = s["unseen_pairs"]["hard"], s["seen_k1"]["hard"], s["worlds_np5"]
        parts = k1["parts"]
        rows.append([f"`{name}`", " / ".join(f"{f['pairs'][k]:,}" for k in ("train", "val", "test")),
                     f"{u['gap']:.1f} (atoms {u['parts']['novel_atoms']:.1f})",
                     f"{s['unseen_pairs']['atom_divergence']:.2f}",
                     f"{k1['gap']:.1f} = {parts['novel_arrangements']:.1f} + {parts['novel_compounds']:.1f} + "
                     f"{parts['novel_atoms']:.1f}",
                     f"{w['hard']['gap']:.1f} / {w['easy']['gap']:.1f} ({w['sizes']['test']})",
                     f"{f['build_seconds'] + f['audit_seconds']:.1f} s"])
    return table(["lists", "pairs train / val / test", "gap, RLCL's split (novel atoms)", "atom div.",
                  "gap seen_k1 = arr. + comp. + atoms", "gap worlds_np5 hard / easy (test concepts)", "build + audit"],
                 rows)

#: the real files' audits (issue 42): label -> summary name
REAL_FILES = {"C-GQA, natural split": "real_cgqa", "MIT-States, hxm97's realistic split": "real_mitstates",
              "RLCL's `mit_states` lists, MIT-States' labels": "real_rlcl_mitstates"}


def _excluded_short(rec: dict) -> str:
    """``1,252 val-only pairs (sad person, ...)`` for each kind of a summary's exclusions."""
    words = {"empty_pairs": "empty pairs", "na_items": "NA records", "val_pairs": "val-only pairs",
             "val_only_atoms": "val-only atoms", "seen_attrs_unused": "attributes of seen_attrs.txt in no seen pair",
             "seen_objs_unused": "objects of seen_objs.txt in no seen pair",
             "seen_attrs_omitted": "seen pairs' attributes missing from seen_attrs.txt",
             "seen_objs_omitted": "seen pairs' objects missing from seen_objs.txt",
             "unlisted_pairs": "pairs no list names (items kept)", "unlisted_items": "pairs no list names (items dropped)"}
    return "; ".join(f"{v['count']:,} {words.get(k, k)} ({', '.join(v['first'][:2])}"
                     f"{', …' if v['count'] > 2 else ''})" for k, v in rec.items())


def real_files() -> str:
    """The real benchmarks' published files audited (``real_cgqa.json``, ``real_mitstates.json``,
    ``real_rlcl_mitstates.json``): per split,
    the test concepts (drawable), the hard mAP gap with its interval and parts, the easy gap,
    the rung that solves it (hard negatives) and what the build left out (on the first by-set
    split's row, ``NAME_by_set``: the images of other sets its test episodes leave out)."""
    rows = []
    for label, name in REAL_FILES.items():
        f = load(name)["figures"]
        items = (f"{f['items']['count']:,} synthetic ({f['items']['synthetic_per_pair']} per pair)"
                 if f["items"]["synthetic_per_pair"] else f"{f['items']['count']:,} images")
        left = _excluded_short({**f["excluded"], **f.get("layout_notes", {})}) or "nothing"
        sets = f.get("item_sets") or {}
        other = {s: sum(c.values()) for s, c in sets.items() if s != "test"}
        by_set_left = (f"test-set images only: {sum(other.values()):,} of other sets left out ("
                       + ", ".join(f"{s} {n:,}" for s, n in other.items()) + ")") if other else ""
        first_by_set = True
        for k, (split, e) in enumerate(f["splits"].items()):
            h, parts = e["hard"], e["hard"]["parts"]
            note = left if k == 0 else ""
            if split.endswith("_by_set") and first_by_set:
                note, first_by_set = by_set_left, False
            rows.append([label if k == 0 else "", items if k == 0 else "",
                         " / ".join(f"{f['pairs'][s]:,}" for s in ("train", "val", "test")) if k == 0 else "",
                         f"`{split}`", f"{e['sizes']['test']:,} ({e['usable_test_concepts']:,})",
                         f"{h['gap']:.1f} {_ci(h['gap_ci'])} = {_pts(parts['novel_arrangements'])} + "
                         f"{_pts(parts['novel_compounds'])} + {_pts(parts['novel_atoms'])}", f"{e['easy']['gap']:.1f}",
                         e["solved_at"].get("hard") or "–", note])
    return table(["files", "items", "pairs train / val / test", "split", "test concepts (drawable)",
                  "gap hard [95 %] = arr. + comp. + atoms", "gap easy", "solved at (hard)", "left out, noted"], rows)


#: the ladder's summaries shown in the docs, and the rungs of its profile table
LADDER_SUMMARIES = {"CURI": "ladder_curi", "CLOSURE": "ladder_closure", "CLOSURE (baselines only)":
                    "ladder_closure_closure-baselines", "ConceptWorld": "ladder_conceptworld",
                    "RLCL lists": "ladder_pairs"}
#: the ladder's columns, as each rung's registration declares them (bayes_concepts.rungs.readme_columns)
LADDER_COLUMNS = readme_columns()


def _pts(x: float) -> str:
    """A gap in points, one decimal, without a "-0.0"."""
    text = f"{x:.1f}"
    return "0.0" if text == "-0.0" else text


def _ladder_docs() -> dict:
    return {label: load(name) for label, name in LADDER_SUMMARIES.items() if (RESULTS / f"{name}.json").exists()}


def _rung_head(label: str) -> str:
    return (label.replace("learned_prior_parent", "parent prior").replace("learned_prior", "learned prior")
            .replace("bounded_length", "bounded length").replace("[alpha=", " α=").replace("[n=", " n=")
            .replace("]", ""))


def ladder_profiles() -> str:
    """Every benchmark's ladder profile (``ladder_*.json``): per split, hard negatives, each
    rung's mAP gap to the strong oracle, the strong oracle's mAP and where the split is solved."""
    rows = []
    for label, doc in _ladder_docs().items():
        if label == "RLCL lists":  # 35 splits: their own table (ladder_pairs)
            continue
        for r in doc["figures"]["rows"]:
            if r["negatives"] != "hard":
                continue
            split = SPLIT_NAMES.get(r["split"], r["split"])
            rows.append([label, split, *(_pts(r['rungs'][c]['gap']) if c in r["rungs"] else "–"
                                         for c in LADDER_COLUMNS),
                         f"{r['rungs']['strong']['map']:.1f}", _rung_head(r["solved_at"]) if r["solved_at"] else "–"])
    return table(["benchmark", "split", *(_rung_head(c) for c in LADDER_COLUMNS), "strong mAP", "solved at"], rows)


def ladder_spread() -> str:
    """Each rung's spread over a benchmark's splits (largest minus smallest hard-negative gap),
    and the episodes, cells and wall time of each run."""
    rows = []
    for label, doc in _ladder_docs().items():
        f = doc["figures"]
        sp = f["spread"]["hard"]
        n = len({r["split"] for r in f["rows"]})
        rows.append([label, f"{n}", *(f"{sp[c]:.1f}" if c in sp else "–" for c in LADDER_COLUMNS),
                     f"{doc['episodes_per_cell']:,}", f"{f['wall_seconds']:.0f} s"])
    return table(["benchmark", "splits", *(_rung_head(c) for c in LADDER_COLUMNS), "episodes per cell",
                  "wall time"], rows)


def ladder_pairs() -> str:
    """RLCL's pair lists on the ladder (``ladder_pairs.json``): per layout, the range of the
    hard-negative gap over its five splits for the memoriser, the atom recombiner and the
    sampling learner (n = 100), and the strong oracle's mAP."""
    doc = load("ladder_pairs")
    layouts = {}
    for r in doc["figures"]["rows"]:
        if r["negatives"] == "hard":
            layouts.setdefault(r["split"].split("/")[0], []).append(r)

    def span(rows, rung):
        g = [r["rungs"][rung]["gap"] for r in rows]
        return f"{min(g):.1f}–{max(g):.1f}"

    out = [[f"`{name}`", f"{len(rows)}", span(rows, "memoriser"), span(rows, "atom"), span(rows, "sampling[n=100]"),
            f"{min(r['rungs']['strong']['map'] for r in rows):.1f}"] for name, rows in layouts.items()]
    every = [r for rows in layouts.values() for r in rows]
    out.append(["all", f"{len(every)}", span(every, "memoriser"), span(every, "atom"), span(every, "sampling[n=100]"),
                f"{min(r['rungs']['strong']['map'] for r in every):.1f}"])
    return table(["lists", "splits", "memoriser gap", "atom gap", "sampling n=100 gap", "strong mAP (lowest)"], out)


def sampling_cost() -> str:
    """The sampling learner's cost per episode at n = 100, 1,000, 10,000 beside the strong
    oracle's (``sampling_cost.json``: same episodes, same process)."""
    doc = load("sampling_cost")
    f = doc["figures"]
    us, ratio = f["us_per_episode"], f["ratio_to_strong"]
    hyp = {k: sum(c["learners"][k].get("mean_hypotheses", 0) for c in f["cells"]) / len(f["cells"]) for k in us}
    rows = [[_rung_head(k), f"{us[k]:.1f} µs", f"{ratio[k]:.2f}×", f"{hyp[k]:,.0f}" if hyp[k] else "all",
             f"{f['closure_ladder_seconds_at_5000_per_cell'][k]:.1f} s"] for k in us]
    return table(["learner", "per episode", "× strong", "distinct hypotheses", "CLOSURE ladder share"], rows)


def mcmc_cost() -> str:
    """The mcmc rung's cost per chain step and per episode (``mcmc_cost.json``)."""
    f = load("mcmc_cost")["figures"]
    rows = [[k, f"{v['us_per_step']:.1f} µs", f"{v['ms_per_episode']:.1f} ms", f"{v['mean_concepts_visited']:.1f}"]
            for k, v in f.items()]
    return table(["setting, chain steps n", "per step", "per episode (chain + Bayes)", "concepts visited"], rows)


def _rho(e: dict) -> str:
    from bayes_concepts.ladder import rho_text
    return rho_text(e, lambda x: _signed(x, 2))


def _vs(e: dict, key: str = "vs_best") -> str:
    from bayes_concepts.ladder import difference_text
    return difference_text(e.get(key), lambda x: _signed(x, 2))


def ladder_correlations() -> str:
    """Spearman ρ of each rung's and each baseline predictor's hard-negative value with the mean
    published model's difficulty, per benchmark and pooled (``ladder_pooled.json``), with 95 %
    intervals (ties as ties; a rung singling out one condition gets the direct test)."""
    from bayes_concepts.difficulty import predictor_label
    doc = load("ladder_pooled")
    per, pooled = doc["figures"]["per_benchmark"], doc["figures"]["pooled"]
    pooled_p = doc["figures"].get("pooled_predictors", {})
    names = list(per)
    rows = []

    def add(label, entries, p):
        loo = [v for v in p["leave_one_out"].values() if v == v] if p else []
        rows.append([label, *(_rho(e) if e else "–" for e in entries),
                     (_rho({"spearman": p["spearman"], "spearman_ci": p["spearman_ci"]})
                      + (f" ({len(p['benchmarks'])})" if p["benchmarks"] else "")) if p else "–",
                     f"{_signed(min(loo), 2)} to {_signed(max(loo), 2)}" if loo else "–"])

    for c in LADDER_COLUMNS:
        if c in pooled:
            add(_rung_head(c), [per[b]["rungs"][c]["mean_model"] for b in names], pooled[c])
    preds = list(dict.fromkeys(k for b in names for k in per[b].get("predictors", {})))
    for k in preds:
        add(f"*{predictor_label(k)}* (predictor)",
            [per[b]["predictors"][k]["mean_model"] if k in per[b].get("predictors", {}) else None for b in names],
            pooled_p.get(k))
    head = [f"{doc['sources'][b]['published']} ({len(doc['sources'][b]['conditions'])})" for b in names]
    return table(["rung or predictor", *head, "pooled (Fisher z; benchmarks)", "leave one out"], rows)


def ladder_versus() -> str:
    """Each rung's ρ minus the best baseline predictor's ρ, per benchmark (paired bootstrap 95 %
    intervals; ``ladder_pooled.json``)."""
    from bayes_concepts.difficulty import predictor_label
    doc = load("ladder_pooled")
    per = doc["figures"]["per_benchmark"]
    names = list(per)
    rows = [["best predictor", *(predictor_label(per[b].get("best_predictor", {}).get("mean_model") or "–")
                                 for b in names)]]
    for c in LADDER_COLUMNS:
        if all(c in per[b]["rungs"] for b in names):
            rows.append([_rung_head(c), *(_vs(per[b]["rungs"][c]["mean_model"]) for b in names)])
    head = [f"{doc['sources'][b]['published']} ({len(doc['sources'][b]['conditions'])})" for b in names]
    return table(["rung: ρ − ρ(best predictor)", *head], rows)


def ladder_validation() -> str:
    """The pre-registered validation (``ladder_validation.json``): per learner, every rung's and
    predictor's ρ with the learner's difficulty on the confirmatory half, and the difference to
    compound divergence."""
    from bayes_concepts.difficulty import predictor_label
    doc = load("ladder_validation")
    # a learner's difficulty on a split where it did not learn is no measurement: the splits where it learned only
    conf = doc["figures"]["tables"]["confirmatory_learned_only"]
    kinds = list(conf)
    names = list(dict.fromkeys(n for k in kinds for n in conf[k]["series"]))
    rows = []
    for n in names:
        label = f"*{predictor_label(n[2:])}* (predictor)" if n.startswith("p:") else _rung_head(n)
        cells = []
        for k in kinds:
            e = conf[k]["series"].get(n)
            few = "too few splits where it learned" if conf[k].get("too_few") else "–"
            cells += [_rho(e) if e else few, _vs(e, "vs_compare_to") if e else few]
        rows.append([label, *cells])
    head = []
    for k in kinds:
        t = conf[k]
        head += [f"{k}: ρ over the {len(t['conditions'])} splits where it learned ({len(t['not_learned'])} did not: "
                 "left out)", f"{k}: − compound divergence"]
    return table(["rung or predictor", *head], rows)


def conceptworld_learners() -> str:
    """ConceptWorld's five baselines at CPU scale (``conceptworld_learners.json``): macro F1
    per experiment and test condition, ours (mean over seeds) beside the seed's (mean over the
    same classes of its Tables 4, 6, 8, 10), and CPU seconds per learner and experiment."""
    d = load("conceptworld_learners")
    rows = []
    for exp, fig in d["figures"].items():
        conds = fig["conditions"]
        for name, lv in fig["learners"].items():
            if lv.get("learned") is False:  # validation accuracy not above chance: no F1 to compare
                rows.append([exp, name, lv.get("seed_model") or "-", "did not learn (validation accuracy not above "
                             "chance): no F1", f"{lv['cpu_seconds']['total']:.0f}"])
                continue
            seed = lv.get("seed_f1") or {}
            cells = []
            for c in conds:
                ours = lv["macro"][c]["mean"]
                theirs = [v[c] for v in seed.values() if c in v]
                cells.append(f"{c}: {ours:.2f} / {sum(theirs) / len(theirs):.2f}" if theirs else f"{c}: {ours:.2f} / -")
            rows.append([exp, name, lv.get("seed_model") or "-", "; ".join(cells), f"{lv['cpu_seconds']['total']:.0f}"])
    return table(["experiment", "learner", "seed's model", "macro F1 per condition: ours / seed's", "CPU s (3 seeds)"],
                 rows)


def closure_learners() -> str:
    """Our learners on CLOSURE's families (``closure_learners.json``): family mAP and drop
    (validation mAP on held-out baseline instantiations − family mAP, points) with 95 %
    intervals over seeds, beside the mean of CLOSURE's published drops (accuracy points)."""
    d = load("closure_learners")
    rows = []
    for name, m in d["models"].items():
        if m.get("learned") is False or "drop" not in m:  # no drops or rho for a learner that did not learn
            rnd = m.get("random_val_map") or {}
            rows.append([name, "did not learn", "", f"validation mAP {m['val_map']['mean']:.1f} {_ci(m['val_map']['ci95']) if m['val_map']['ci95'] else ''}"
                         + (f", random {rnd['mean']:.1f} {_ci(rnd['ci95']) if rnd.get('ci95') else ''}" if rnd else "") + ": no drops, no ρ", ""])
            continue
        pub = d["published"]["drop"]
        for fam in d["families"]:
            drop = m["drop"][fam]
            theirs = [per[fam] for per in pub.values() if fam in per]
            rows.append([name, fam, f"{m['family_map'][fam]['mean']:.1f}", f"{_signed(drop['mean'])} {_ci(drop['ci95'])}",
                         f"{sum(theirs) / len(theirs):.1f}"])
        rho = m["spearman"]
        rows.append([name, "Spearman ρ with each model's drops", "", "", ", ".join(
            f"{k} {_signed(v['rho'], 2)}" for k, v in rho.items() if v.get("rho") is not None)])
    return table(["learner", "family", "family mAP", "drop (validation − family)", "published drop, mean of models"],
                 rows)


def closure_learning_curve() -> str:
    """The CLOSURE learner's learning curve (``closure_learning_curve.json``): validation mAP and
    CBA every few steps, then the trained model against the random learner on the same
    episodes (held-out instantiations, and training concepts), the test bank ranked whole and
    over the question's domain, with 95 % intervals over episodes."""
    d = load("closure_learning_curve")

    def ci(e) -> str:
        return f"{e['mean']:.1f} {_ci(e['ci95'])}"
    rows = [[f"step {c['step']:,}", f"{c['val_map']:.1f}", f"{c['val_cba']:.1f}",
             "–" if c["train_loss"] is None else f"{c['train_loss']:.2f}", f"{c['elapsed_s']:.0f} s"]
            for c in d["curve"]]
    for side, f in d["final"].items():
        rows.append([f"final, {side} concepts: model / random", f"{ci(f['model']['map'])} / {ci(f['random']['map'])}",
                     f"{ci(f['model']['cba'])} / {ci(f['random']['cba'])}", "learned" if f["learned"]["learned"]
                     else "did not learn (untrained weights kept)" if f["learned"].get("untrained")
                     else "did not learn", ""])
    dom = d.get("in_domain")
    if dom:
        rows.append(["validation, bank ranked whole: model / random / chance",
                     f"{ci(dom['model_all'])} / {ci(dom['random_all'])} / {dom['chance_all']['mean']:.1f}", "", "", ""])
        rows.append(["validation, question's domain only: model / random / chance",
                     f"{ci(dom['model_domain'])} / {ci(dom['random_domain'])} / {dom['chance_domain']['mean']:.1f}",
                     "", "", f"domain {dom['domain_share']['mean']:.0f} % of the bank"])
    return table(["", "validation mAP", "validation CBA", "training loss", "elapsed"], rows)


GENERATORS = {"closure_learning_curve": closure_learning_curve, "conceptworld_learners": conceptworld_learners, "mcmc_cost": mcmc_cost, "sampling_cost": sampling_cost, "ladder_profiles": ladder_profiles, "ladder_spread": ladder_spread, "ladder_pairs": ladder_pairs,
              "ladder_correlations": ladder_correlations, "ladder_versus": ladder_versus, "ladder_validation": ladder_validation, "ap_tolerance": ap_tolerance, "ap_tolerance_sweep": ap_tolerance_sweep, "rlcl_lists": rlcl_lists, "real_files": real_files, "scaling": scaling, "memory_peaks": memory_peaks, "learners": learners, "speed": speed, "roofline": roofline, "noisy_breakdown": noisy_breakdown, "curi_split_sizes": curi_split_sizes, "shj_fit": shj_fit,
              "shj_types": shj_types, "shj_languages": shj_languages}


def suite_time() -> str:
    """How long the test suite's pytest takes (``suite_time.json``): ``make test`` and ``make
    test-all``, wall and CPU time, tests passed and skipped, the machine."""
    doc = load("suite_time")
    m = doc["provenance"]["machine"]
    labels = {"test_first_run": "`make test` on a fresh checkout (numba's cache as `make venv` leaves it)",
              "test": "`make test` (every test not marked `slow`)", "all": "`make test-all` (every test)"}
    rows = []
    for name in ("test_first_run", "test", "all"):
        f = doc["figures"].get(name)
        if f is None:
            continue
        wall = f["wall_s"]
        rows.append([labels[name], f"{int(wall // 60)} min {wall % 60:02.0f} s", f"{f['cpu_s']:,.0f} s",
                     f"{f['passed']:,} passed, {f['skipped']} skipped"
                     + (f", {f['failed']} failed" if f["failed"] else "")])
    machine = f"{m['cores']} cores ({doc.get('cpu_model') or m['processor']}), load average {m['load_avg'][0]:.1f} at the start"
    during = doc["figures"].get("test", {}).get("load_avg_during")
    if during is not None:
        machine += f" and {during:.1f} on average during `make test`, its own workers included"
    note = ""
    default = doc["figures"].get("test_default_threads")
    if default is not None and "test" in doc["figures"]:
        mine = doc["figures"]["test"]
        wall = default["wall_s"]
        note = (f" Just before it, the same with each worker left at the libraries' own thread counts "
                f"(`BAYES_CONCEPTS_TEST_THREADS=default`, not pinned to its core): {int(wall // 60)} min "
                f"{wall % 60:02.0f} s, {default['summed_test_s']:,.0f} s summed over the tests against "
                f"{mine['summed_test_s']:,.0f} s pinned.")
    first = doc["figures"].get("test_first_run")
    if first is not None and "test" in doc["figures"]:
        note += (f" The fresh checkout's run comes first: `bayes-concepts compile` filled a new, empty numba "
                 f"cache ({first['compile_s']:.0f} s, as `make venv` does), and the run compiled the kernels only "
                 f"the tests use; `make test` is the same run again right after it, with them cached.")
    return table(["pytest of", "wall time", "CPU time", "tests"], rows, "---|---:|---:|---") + \
        f"\nMeasured on {machine} (`benchmarks/suite_time.py`, `benchmarks/results/suite_time.json`).{note}\n"


GENERATORS["suite_time"] = suite_time

DEFINITIONS = "<!-- numbers: definitions"


def unsourced_tables(text: str) -> list[tuple[int, str]]:
    """Tables of ``text`` (Markdown) whose body holds a digit outside code spans, that are
    neither generated (inside a generated block) nor declared as definitions by a
    ``<!-- numbers: definitions ... -->`` line right above them: (line number, first body row)."""
    lines = text.splitlines()
    out, inside, i = [], False, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("<!-- generated: "):
            inside = True
        elif line.startswith("<!-- end generated"):
            inside = False
        if line.startswith("|"):
            start = i
            while i < len(lines) and lines[i].startswith("|"):
                i += 1
            body = lines[start + 2:i]
            above = [l for l in lines[max(0, start - 3):start] if l.strip()]
            declared = any(l.startswith(DEFINITIONS) for l in above[-1:])
            numeric = [r for r in body if re.search(r"\d", re.sub(r"`[^`]*`", "", r))]
            if numeric and not inside and not declared:
                out.append((start + 1, numeric[0]))
            continue
        i += 1
    return out


def pages() -> list[Path]:
    """README.md and every Markdown page of the guide (``docs/``, its build folder and the
    notebooks' copies excluded), in a fixed order."""
    found = [p for p in sorted(DOCS.rglob("*.md")) if not {"_build", "notebooks"} & set(p.relative_to(DOCS).parts[:-1])]
    return [README] + found


def _name(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def render(text: str, where: str = "README.md") -> tuple[str, list[str]]:
    """Page ``text`` with every generated block rewritten; and the names of blocks that changed."""
    changed = []

    def sub(m):
        name = m.group("name")
        if name not in GENERATORS:
            raise SystemExit(f"{where}: unknown generated table {name!r} (known: {', '.join(GENERATORS)})")
        try:
            body = GENERATORS[name]()
        except FileNotFoundError as exc:  # its committed result is missing
            changed.append(f"{name} (no {Path(exc.filename).relative_to(ROOT)})")
            return m.group(0)
        if body != m.group("body"):
            changed.append(name)
        return m.group(1) + body + m.group(4)

    return BLOCK.sub(sub, text), changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare only; exit 1 naming each stale table")
    ap.add_argument("--page", "--readme", dest="pages", action="append", metavar="FILE",
                    help="a page to rewrite or check (repeatable; default README.md and every page of docs/)")
    args = ap.parse_args(argv)
    paths = [Path(p) for p in args.pages] if args.pages else pages()
    status, rewritten, where = 0, [], {}
    for path in paths:
        name = _name(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            print(f"{name}: cannot read it ({exc.strerror})", file=sys.stderr)
            return 2
        for m in BLOCK.finditer(text):
            where.setdefault(m.group("name"), []).append(name)
        new, changed = render(text, name)
        if args.check:
            for line, row in unsourced_tables(text):
                print(f"{name} line {line}: a table with numbers that is neither generated from benchmarks/results/ "
                      f"nor declared '{DEFINITIONS} -->': {row[:80]}", file=sys.stderr)
                status = 1
            if changed:
                diff = "".join(difflib.unified_diff(text.splitlines(True), new.splitlines(True), name,
                                                    "generated", n=0))
                print(f"{name}: stale generated table(s): {', '.join(changed)} "
                      f"(run python benchmarks/readme_tables.py)\n{diff}", file=sys.stderr)
                status = 1
        elif changed:
            path.write_text(new, encoding="utf-8")
            rewritten.append(f"{name}: {', '.join(changed)}")
    twice = {n: w for n, w in where.items() if len(w) > 1}
    for n, w in twice.items():
        print(f"generated table {n!r} is in more than one place: {', '.join(w)}", file=sys.stderr)
    if args.check:
        if not args.pages:
            for n in GENERATORS:
                if n not in where:
                    print(f"generated table {n!r} is in no page (README.md, docs/)", file=sys.stderr)
                    status = 1
        return 1 if twice else status
    print(f"{len(rewritten)} page(s) rewritten" + (": " + "; ".join(rewritten) if rewritten else ""))
    return 1 if twice else 0


if __name__ == "__main__":
    sys.exit(main())
