"""How much does the comp gap depend on the oracles' prior?

CURI's paper uses a length prior p(h) ∝ exp(−β·l(h)) with β = 0.2, its released
code the PCFG derivation probability.  This script recomputes the comp gap (mAP
and CBA, hard negatives by default) of CURI's nine splits

* for the length prior with β ∈ {0, 0.1, 0.2, 0.5, 1.0} (``--betas``), and
* for the prior kinds ``length`` (β = 0.2), ``pcfg`` and ``uniform`` (``--priors``).

Everything else keeps its default (likelihood ``size``, weak-empty policy ``zero``).
Episodes depend only on the seed, split and negatives, never on the oracle, so every
setting is scored on the *same* episodes: the change of the gap against the default
(length, β = 0.2) is paired by episode and gets a paired bootstrap interval.  Note
that ``uniform`` and ``length`` with β = 0 are the same prior (a check).

Run::

    .venv/bin/python analyses/prior_sensitivity.py --space spaces/demo --episodes 2000

Outputs in ``--out`` (default ``analyses/out/prior_sensitivity/``): ``prior_sensitivity.md``
/ ``.csv`` (one row per setting × split), figures ``gap_vs_beta`` (comp gap against β, one
line per split; mAP and CBA panels), ``gap_vs_beta_per_split`` (one panel per split: change
of both gaps against β = 0.2, paired intervals) and ``gap_by_prior`` (per split, one point
per prior kind) as PNG + PDF, and the scores of every distinct setting as ``results_<setting>.nc``.
"""
from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analyses import _common as C

NAME = "prior_sensitivity"
BETAS = (0.0, 0.1, 0.2, 0.5, 1.0)
PRIORS = ("length", "pcfg", "uniform")
DEFAULT = ("length", 0.2)


def _settings_label(prior: str, beta: float) -> str:
    return f"length β={beta:g}" if prior == "length" else prior


def sweep_settings(betas=BETAS, priors=PRIORS) -> list:
    """[(sweep, label, OracleSettings)]: the β sweep of the length prior, then the prior kinds
    (``length`` at the default β = 0.2)."""
    from bayes_concepts.oracles import OracleSettings
    out = [("beta", _settings_label("length", b), OracleSettings(prior="length", beta=float(b))) for b in betas]
    for kind in priors:
        st = OracleSettings(prior=kind) if kind != "length" else OracleSettings(prior="length", beta=DEFAULT[1])
        out.append(("prior", _settings_label(kind, st.beta), st))
    return out


def run_sweep(space, splits: dict, settings: list, negatives=("hard",), n_episodes: int = 2000, seed: int = 0,
              n_boot: int = 1000, out_dir: Path | None = None) -> pd.DataFrame:
    """Comp gap of every split under every setting; one row per (sweep, setting, split, negatives).
    Identical settings are computed once.  ``*_change`` columns: gap minus the default
    setting's gap on the same episodes, with a paired bootstrap 95 % interval."""
    from bayes_concepts.gap import compute_gap, paired_bootstrap
    from bayes_concepts.oracles import OracleSettings
    from bayes_concepts.results import save_results
    cache = {}

    def results_for(st):
        key = tuple(sorted(st.as_dict().items()))
        if key not in cache:
            cache[key] = compute_gap(space, splits, tuple(negatives), n_episodes, settings=st, seed=seed)
        return cache[key]

    default = results_for(OracleSettings(prior=DEFAULT[0], beta=DEFAULT[1]))

    def per_episode_gap(ds, split, neg, metric):
        c = ds.sel(split=split, negatives=neg)
        return 100 * (c[metric].sel(learner="strong").values - c[metric].sel(learner="weak").values)

    frames, saved = [], set()
    for sweep, label, st in settings:
        ds = results_for(st)
        key = tuple(sorted(st.as_dict().items()))
        if out_dir is not None and key not in saved:  # one file per distinct setting
            saved.add(key)
            tag = label.replace(" ", "_").replace("β=", "beta")
            save_results(ds, Path(out_dir) / f"results_{tag}.nc", overwrite=True)
        t = C.gap_frame(ds, n_boot, seed)
        t.insert(0, "sweep", sweep)
        t.insert(1, "setting", label)
        t.insert(2, "prior", st.prior)
        t.insert(3, "beta", st.beta if st.prior == "length" else np.nan)
        for key, metric in (("map", "ap"), ("cba", "cba")):
            ch = [paired_bootstrap(per_episode_gap(ds, s, n, metric), per_episode_gap(default, s, n, metric),
                                   n_boot, seed) for s, n in zip(t["split"], t["negatives"])]
            t[f"{key}_change"] = [c[0] for c in ch]
            t[f"{key}_change_lo"] = [c[1] for c in ch]
            t[f"{key}_change_hi"] = [c[2] for c in ch]
        t["is_default"] = (st.prior == DEFAULT[0]) and (st.beta == DEFAULT[1])
        frames.append(t)
    df = pd.concat(frames, ignore_index=True)
    df.attrs["oracle_defaults"] = "likelihood size, weak_empty zero, epsilon 0.05"
    return df


def _pivot(df, sweep, key, neg) -> pd.DataFrame:
    d = df[(df.sweep == sweep) & (df.negatives == neg)]
    order = (d[d.is_default].sort_values(f"map_gap", ascending=False)["split"].tolist()
             or list(dict.fromkeys(d["split"])))
    labels = list(dict.fromkeys(d["setting"]))
    rows = []
    for s in order:
        r = {"split": d[d.split == s]["split_label"].iloc[0]}
        for lab in labels:
            x = d[(d.split == s) & (d.setting == lab)].iloc[0]
            r[lab] = C.fmt_ci(x[f"{key}_gap"], x[f"{key}_gap_lo"], x[f"{key}_gap_hi"])
        rows.append(r)
    return pd.DataFrame(rows)


def markdown(df: pd.DataFrame, space, n_episodes: int, seed: int) -> str:
    lines = ["# Prior sensitivity of the comp gap", "", C.space_note(space) + ".",
             f"{n_episodes:,} test episodes per (split, negatives), the same episodes for every setting; seed {seed}; "
             f"other oracle settings at their defaults ({df.attrs.get('oracle_defaults', '')}). "
             "Cells: comp gap strong − weak (percentage points) with paired bootstrap 95 % intervals.", ""]
    for neg in list(dict.fromkeys(df.negatives)):
        for key, name in (("map", "mAP"), ("cba", "CBA")):
            for sweep, what in (("beta", "length prior, β sweep"), ("prior", "prior kind")):
                if not (df.sweep == sweep).any():
                    continue
                t = _pivot(df, sweep, key, neg)
                lines += [f"## {name} gap, {neg} negatives: {what}", "",
                          C.markdown_table(t, align=["left"] + ["right"] * (t.shape[1] - 1)), ""]
    # the largest changes against the default
    d = df[~df.is_default].copy()
    if len(d):
        d["abs"] = d["map_change"].abs()
        top = d.sort_values("abs", ascending=False).drop_duplicates(["split", "negatives"]).head(9)
        t = pd.DataFrame({"split": top.split_label, "negatives": top.negatives, "setting": top.setting,
                          "mAP gap change vs default [95% CI]": [C.fmt_ci(*v) for v in
                                                                 zip(top.map_change, top.map_change_lo,
                                                                     top.map_change_hi)],
                          "CBA gap change vs default [95% CI]": [C.fmt_ci(*v) for v in
                                                                 zip(top.cba_change, top.cba_change_lo,
                                                                     top.cba_change_hi)]})
        big = {k: d.loc[d[f"{k}_change"].abs().idxmax()] for k in ("map", "cba")}
        lines += ["## Largest change of the mAP gap per split against the default (length, β = 0.2)", "",
                  "Paired by episode (every setting scores the same episodes). Largest change over all settings "
                  "and splits: mAP " + ", CBA ".join(
                      f"{b[f'{k}_change']:+.1f} ({b.split_label}, {b.setting})" for k, b in big.items()) + ".", "",
                  C.markdown_table(t, align=["left", "left", "left", "right", "right"]), ""]
        beta0 = df[(df.sweep == "beta") & (df.beta == 0)]
        unif = df[(df.sweep == "prior") & (df.prior == "uniform")]
        if len(beta0) and len(unif):
            m = beta0.set_index(["split", "negatives"])["map_gap"]
            u = unif.set_index(["split", "negatives"])["map_gap"]
            same = bool(np.allclose(m.sort_index().to_numpy(), u.sort_index().to_numpy(), atol=1e-9))
            lines.append(f"Check: `uniform` and `length` with β = 0 are the same prior; their gaps "
                         f"{'agree' if same else '**differ**'}.")
    return "\n".join(lines)


def beta_figure(df: pd.DataFrame, negatives: str = "hard"):
    """Comp gap against β (length prior), one line per split, mAP (left) and CBA (right),
    with paired bootstrap 95 % intervals as bands; the default β = 0.2 marked."""
    d = df[(df.sweep == "beta") & (df.negatives == negatives)]
    splits = (d[d.is_default].sort_values("map_gap", ascending=False)["split"].tolist()
              or list(dict.fromkeys(d.split)))
    colors = C.split_colors(splits)
    with C.style():
        fig = Figure(figsize=(12, 5.2), layout="constrained")
        axes = fig.subplots(1, 2)
        for ax, (key, name) in zip(axes, (("map", "mAP"), ("cba", "CBA"))):
            for s in splits:
                x = d[d.split == s].sort_values("beta")
                ax.plot(x.beta, x[f"{key}_gap"], marker="o", color=colors[s], label=x.split_label.iloc[0],
                        gid=f"{key}:{s}")
                ax.fill_between(x.beta, x[f"{key}_gap_lo"], x[f"{key}_gap_hi"], color=colors[s], alpha=0.15)
            ax.axvline(DEFAULT[1], color="0.4", linestyle=":", linewidth=1)
            ax.set_xlabel("β of the length prior  p(h) ∝ exp(−β·l(h))")
            ax.set_ylabel(f"{name} comp gap (points)")
            ax.set_title(f"{name}, {negatives} negatives")
        axes[1].legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=9, title="split")
        fig.suptitle("Comp gap against the prior's β (dotted: the default 0.2)")
    return fig


def beta_per_split_figure(df: pd.DataFrame, negatives: str = "hard"):
    """One panel per split: the change of the mAP and CBA gap against the default β = 0.2 as a
    function of β, with paired bootstrap 95 % intervals (same episodes for every β), each
    panel on its own scale so small effects show."""
    d = df[(df.sweep == "beta") & (df.negatives == negatives)]
    splits = (d[d.is_default].sort_values("map_gap", ascending=False)["split"].tolist()
              or list(dict.fromkeys(d.split)))
    ncol = 3
    nrow = int(np.ceil(len(splits) / ncol))
    colors = {"map": "#1a9641", "cba": "#7570b3"}
    with C.style():
        fig = Figure(figsize=(12, 3.0 * nrow + 0.8), layout="constrained")
        axes = np.atleast_1d(fig.subplots(nrow, ncol, sharex=True)).ravel()
        for ax, s in zip(axes, splits):
            x = d[d.split == s].sort_values("beta")
            for key, name in (("map", "mAP"), ("cba", "CBA")):
                ax.plot(x.beta, x[f"{key}_change"], marker="o", color=colors[key], label=f"{name} gap",
                        gid=f"{key}:{s}")
                ax.fill_between(x.beta, x[f"{key}_change_lo"], x[f"{key}_change_hi"], color=colors[key], alpha=0.2)
            ax.axhline(0, color="0.3", linewidth=0.8)
            ax.axvline(DEFAULT[1], color="0.4", linestyle=":", linewidth=1)
            base = x[x.is_default]
            sub = (f"gap at β=0.2: mAP {base.map_gap.iloc[0]:.1f}, CBA {base.cba_gap.iloc[0]:.1f}"
                   if len(base) else "")
            ax.set_title(f"{x.split_label.iloc[0]}\n{sub}", fontsize=10)
        for ax in axes[len(splits):]:
            ax.set_visible(False)
        for ax in axes[(nrow - 1) * ncol:]:
            ax.set_xlabel("β")
        for ax in axes[::ncol]:
            ax.set_ylabel("gap − gap at β=0.2 (points)")
        axes[0].legend(fontsize=8)
        fig.suptitle(f"Change of the comp gap against the default prior β = 0.2, per split ({negatives} negatives; "
                     "paired bootstrap 95 % bands)")
    return fig


def prior_figure(df: pd.DataFrame, negatives: str = "hard"):
    """Per split, the comp gap under each prior kind (points with 95 % intervals)."""
    d = df[(df.sweep == "prior") & (df.negatives == negatives)]
    kinds = list(dict.fromkeys(d.setting))
    splits = (d[d.is_default].sort_values("map_gap", ascending=False)["split"].tolist()
              or list(dict.fromkeys(d.split)))
    pal = dict(zip(kinds, ["#1a9641", "#7570b3", "#d95f02", "#1f78b4", "#e7298a"]))
    offs = dict(zip(kinds, np.linspace(-0.2, 0.2, len(kinds)) if len(kinds) > 1 else [0.0]))
    x0 = np.arange(len(splits))
    with C.style():
        fig = Figure(figsize=(max(9.0, 1.1 * len(splits) + 2), 7.5), layout="constrained")
        axes = fig.subplots(2, 1, sharex=True)
        for ax, (key, name) in zip(axes, (("map", "mAP"), ("cba", "CBA"))):
            for k in kinds:
                x = d[d.setting == k].set_index("split").loc[splits]
                y = x[f"{key}_gap"].to_numpy()
                err = np.vstack([y - x[f"{key}_gap_lo"].to_numpy(), x[f"{key}_gap_hi"].to_numpy() - y])
                ax.errorbar(x0 + offs[k], y, yerr=err, fmt="o", color=pal[k], capsize=3, label=k, gid=f"{key}:{k}")
            ax.set_ylabel(f"{name} comp gap (points)")
            ax.legend(title="prior", fontsize=9)
        labels = d.drop_duplicates("split").set_index("split").loc[splits, "split_label"]
        axes[1].set_xticks(x0, labels, rotation=30, ha="right")
        fig.suptitle(f"Comp gap by prior kind ({negatives} negatives; 95 % paired bootstrap intervals)")
    return fig


def main(argv=None) -> pd.DataFrame:
    p = C.parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--betas", type=float, nargs="+", default=list(BETAS), help="β values of the length prior")
    p.add_argument("--priors", nargs="+", default=list(PRIORS), choices=PRIORS, help="prior kinds")
    p.add_argument("--negatives", nargs="+", default=["hard"], choices=("hard", "easy"))
    args = C.parse(p, argv, NAME)
    if any(b < 0 for b in args.betas):
        p.error("--betas must be >= 0")
    from bayes_concepts.splits import curi_splits
    elapsed = C.timer()
    space = C.load_space(args, p)
    df = run_sweep(space, curi_splits(space), sweep_settings(args.betas, args.priors), args.negatives,
                   args.episodes, args.seed, args.boot, args.out)
    C.write_table(df, args.out, NAME)
    md = markdown(df, space, args.episodes, args.seed)
    C.write_markdown(md, args.out, NAME)
    for neg in args.negatives:
        suffix = "" if neg == "hard" else f"_{neg}"
        if (df.sweep == "beta").any():
            C.save_figure(beta_figure(df, neg), args.out, f"gap_vs_beta{suffix}")
            C.save_figure(beta_per_split_figure(df, neg), args.out, f"gap_vs_beta_per_split{suffix}")
        if (df.sweep == "prior").any():
            C.save_figure(prior_figure(df, neg), args.out, f"gap_by_prior{suffix}")
    if not args.quiet:
        print(md)
        print(f"\n[{NAME}: {elapsed():.1f} s; outputs in {args.out}]")
    return df


if __name__ == "__main__":
    main()
