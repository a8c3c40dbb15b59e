"""Figures: files are written, what is drawn equals what the results Dataset / space hold,
and every ``plot_*`` function follows one convention (draws on the axes it is given, makes
a figure only when none is, returns ``(axes, data)`` with ``data`` the numbers drawn)."""
import inspect
import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.image import imread

from bayes_concepts import plots, report
from bayes_concepts.episodes import sample_episodes
from bayes_concepts.gap import compute_gap
from bayes_concepts.splits import curi_splits
from bayes_concepts.suites.closure import plots as closure_plots


@pytest.fixture(scope="module")
def space(small_space):
    return small_space


@pytest.fixture(scope="module")
def splits(space):
    return curi_splits(space)


@pytest.fixture(scope="module")
def ds(space, splits):
    return compute_gap(space, splits, n_episodes=200)


@pytest.fixture(scope="module")
def episodes(space, splits):
    return sample_episodes(space, splits["counting"], "test", "hard", n=4, seed=1)


@pytest.fixture(scope="module")
def gap_fig(ds):
    return plots.plot_comp_gap(ds, "hard", n_boot=200)


def mean_pct(ds, metric, split, learner, negatives="hard"):
    return 100 * float(np.nanmean(ds[metric].sel(split=split, learner=learner, negatives=negatives).values))


def expected_order(ds, negatives="hard"):
    gaps = {s: mean_pct(ds, "ap", s, "strong", negatives) - mean_pct(ds, "ap", s, "weak", negatives)
            for s in ds.split.values.tolist()}
    return sorted(gaps, key=lambda s: -gaps[s])


def errorbars(ax):
    """{label: (x, y, [(lo, hi), ...])} of the errorbar series drawn on ax."""
    out = {}
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer) and c.lines[0] is not None:
            segs = c.lines[2][0].get_segments()
            out[c.get_label()] = (np.asarray(c.lines[0].get_xdata(), float), np.asarray(c.lines[0].get_ydata(), float),
                                  [(s[0, 1], s[1, 1]) for s in segs])
    return out


# ------------------------------------------------------------------ comp gap

def test_comp_gap_data_equals_the_dataset(ds, gap_fig):
    _, data = gap_fig
    order = expected_order(ds)
    assert len(set(order)) == len(order) == ds.sizes["split"]
    for metric in ("ap", "cba"):
        d = data[data.metric == metric]
        assert d.drop_duplicates("split").sort_values("order")["split"].tolist() == order
        for split in order:
            for learner in ("strong", "weak"):
                row = d[(d.split == split) & (d.learner == learner)].iloc[0]
                assert row["mean"] == pytest.approx(mean_pct(ds, metric, split, learner), abs=1e-9)
                assert row["ci_lo"] <= row["mean"] + 1e-9 and row["mean"] <= row["ci_hi"] + 1e-9
                assert row["episodes"] == 200
            g = d[(d.split == split) & (d.learner == "strong")].iloc[0]
            assert g["gap"] == pytest.approx(mean_pct(ds, metric, split, "strong") - mean_pct(ds, metric, split, "weak"),
                                             abs=1e-9)
            assert g["gap_ci_lo"] <= g["gap"] + 1e-9 <= g["gap_ci_hi"] + 2e-9
    # Instance IID's gap is zero by construction; binding splits lead
    iid = data[(data.split == "instance_iid") & (data.learner == "strong")]
    assert np.allclose(iid["gap"], 0)
    assert order[-1] == "instance_iid"


def test_comp_gap_artists_show_the_dataset_means(ds, gap_fig):
    axes, data = gap_fig
    order = expected_order(ds)
    assert axes.shape == (2,) and list(axes[0].figure.axes) == list(axes)
    top, bottom = axes
    assert [t.get_text() for t in bottom.get_xticklabels()] == [plots.split_label(s) for s in order]
    assert "Binding (colour)" in [t.get_text() for t in bottom.get_xticklabels()]
    assert "mAP (%)" in top.get_ylabel() and "accuracy (%)" in bottom.get_ylabel()
    for ax, metric in ((top, "ap"), (bottom, "cba")):
        series = errorbars(ax)
        assert set(series) == {"strong oracle", "weak oracle"}
        for learner in ("strong", "weak"):
            x, y, segs = series[plots.learner_label(learner)]
            assert np.array_equal(np.round(x), np.arange(len(order)))
            assert np.allclose(y, [mean_pct(ds, metric, s, learner) for s in order])
            d = data[(data.metric == metric) & (data.learner == learner)].sort_values("order")
            assert np.allclose([lo for lo, _ in segs], d["ci_lo"]) and np.allclose([hi for _, hi in segs], d["ci_hi"])
        colors = {lab: c.lines[0].get_color() for c in ax.containers if isinstance(c, ErrorbarContainer)
                  for lab in [c.get_label()]}
        assert colors["strong oracle"] == plots.LEARNER_COLORS["strong"]
        assert colors["weak oracle"] == plots.LEARNER_COLORS["weak"]
        # the gap written at each split
        texts = {t.get_gid(): t.get_text() for t in ax.texts if (t.get_gid() or "").startswith("gap:")}
        assert len(texts) == len(order)
        for s in order:
            gap = mean_pct(ds, metric, s, "strong") - mean_pct(ds, metric, s, "weak")
            assert texts[f"gap:{metric}:{s}"].split("\n")[0] == f"{gap:.1f}"


def test_comp_gap_extra_learner_is_another_series(ds):
    extra = ds.sel(learner=["weak"]).assign_coords(learner=["relnet"])
    extra["ap"] = extra["ap"] * 0.5 + 0.25
    both = xr.concat([ds[["ap", "cba", "posterior_entropy", "predictive_entropy", "empty"]], extra[
        ["ap", "cba", "posterior_entropy", "predictive_entropy", "empty"]]], dim="learner")
    both["concept"] = ds["concept"]
    axes, data = plots.plot_comp_gap(both.sel(negatives=["hard"]), n_boot=50)
    series = errorbars(axes[0])
    assert set(series) == {"strong oracle", "weak oracle", "relnet"}
    order = expected_order(ds)
    assert np.allclose(series["relnet"][1], [mean_pct(both, "ap", s, "relnet") for s in order])
    assert len({c.lines[0].get_color() for c in axes[0].containers if isinstance(c, ErrorbarContainer)}) == 3
    assert set(data.learner) == {"strong", "weak", "relnet"}


def test_missing_negatives_is_a_clear_error(ds):
    with pytest.raises(ValueError, match="no 'easy' negatives"):
        plots.plot_comp_gap(ds.sel(negatives=["hard"]), "easy")


# ------------------------------------------------------------------ entropy

def test_plot_entropies_equals_the_dataset(ds):
    axes, data = plots.plot_entropies(ds, n_boot=100)
    order = expected_order(ds)
    assert axes.shape == (2,) and list(axes[0].figure.axes) == list(axes)
    for ax, var in zip(axes, ("posterior_entropy", "predictive_entropy")):
        assert "nats" in ax.get_ylabel()
        for learner in ("strong", "weak"):
            cell = ds.sel(negatives="hard", learner=learner)
            want = []
            for s in order:
                c = cell.sel(split=s)
                ok = ~c["empty"].values & np.isfinite(c[var].values)
                want.append(float(c[var].values[ok].mean()) if ok.any() else 0.0)
            bars = [p for p in ax.patches if p.get_gid() == f"{var}:{learner}"]
            assert len(bars) == len(order)
            assert np.allclose([b.get_height() for b in sorted(bars, key=lambda b: b.get_x())], want)
            d = data[(data.entropy == var) & (data.learner == learner)].sort_values("order")
            assert d["split"].tolist() == order
            assert np.allclose(np.nan_to_num(d["mean"].to_numpy()), want)
    # the strong oracle always has a posterior; the weak one's coverage is 1 - weak_empty
    weak = data[(data.learner == "weak") & (data.entropy == "posterior_entropy")].set_index("split")
    for s in order:
        assert weak.loc[s, "episodes"] == int((~ds["weak_empty"].sel(split=s, negatives="hard")).sum())
    assert (data[data.learner == "strong"]["episodes"] == 200).all()


# ------------------------------------------------------------------ the space

def test_plot_synonym_classes(space):
    ax, data = plots.plot_synonym_classes(space)
    assert isinstance(ax, Axes) and ax.figure.axes == [ax]
    assert ax.get_yscale() == "log"
    sizes = np.unique(space.synonym_classes, return_counts=True)[1]
    assert data["n_classes"].sum() == space.n_synonym_classes == len(sizes)
    assert data["n_concepts"].sum() == space.n_concepts
    for size, n in zip(*np.unique(sizes, return_counts=True)):
        assert data.set_index("class_size").loc[size, "n_classes"] == n
    bars = sorted(ax.patches, key=lambda p: p.get_x())
    shown = data[data.n_classes > 0]
    assert np.allclose([b.get_height() for b in bars], shown["n_classes"])
    assert np.allclose([b.get_x() + b.get_width() / 2 for b in bars], shown["class_size"])


def test_plot_scene_properties(space):
    axes, data = plots.plot_scene_properties(space)
    assert axes.shape == (2, 3)  # six attributes in rows of three
    names = [a.name for a in space.schema.attributes]
    assert list(dict.fromkeys(data["attribute"])) == names
    counts = {n: {} for n in names}
    for j in range(space.n_scenes):  # recount from the scene dicts
        for o in space.scene(j)["objects"]:
            for n in names:
                counts[n][str(o[n])] = counts[n].get(str(o[n]), 0) + 1
    for n in names:
        d = data[data.attribute == n].set_index("value")
        assert d["share"].sum() == pytest.approx(100)
        for v, c in counts[n].items():
            assert d.loc[v, "count"] == c
    visible = [ax for ax in axes.ravel() if ax.get_visible()]
    assert len(visible) == 6
    titles = [ax.get_title() for ax in visible]
    assert titles[0] == "colour" and titles[4].startswith("x bin") and titles[5].startswith("y bin")
    for ax, n in zip(visible, names):
        bars = [p for p in ax.patches if p.get_gid() == f"prop:{n}"]
        assert np.allclose([b.get_height() for b in bars], data[data.attribute == n]["share"])


# ------------------------------------------------------------------ episode view

def test_plot_episode_draws_every_scene(space, splits, ds, episodes):
    strong, weak = plots.oracles_for(space, splits["counting"], ds)
    e = 1
    view, data = plots.plot_episode(space, episodes, e, strong, weak, top=3)
    fig = view.figure
    assert fig.axes[0] is view and tuple(fig.get_size_inches()) == pytest.approx(data.attrs["size_inches"])
    for side in ("support", "query"):
        scenes = getattr(episodes, f"{side}_scenes")[e]
        labels = getattr(episodes, f"{side}_labels")[e]
        topup = getattr(episodes, f"{side}_topup")[e]
        axes = {ax.get_gid(): ax for ax in fig.axes if (ax.get_gid() or "").startswith(side + ":")}
        assert len(axes) == len(scenes) == 25
        for k, (sid, lab) in enumerate(zip(scenes, labels)):
            ax = axes[f"{side}:{k}"]
            title = ax.get_title()
            assert title.startswith("+" if lab else "\u2212")
            assert ("top-up" in title) == bool(topup[k])
            objs = space.scene(int(sid))["objects"]
            assert len(ax.collections) - 2 == len(objs)  # one marker per object + two grid-line collections
            assert ax.get_ylim()[0] > ax.get_ylim()[1]  # y bin 1 at the top
            rows = data[(data.set == side) & (data.position == k)]
            assert (rows["scene"] == sid).all() and (rows["label"] == lab).all() and len(rows) == len(objs)
    text = next(t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid() == "concepts_text")
    h = int(episodes.concept[e])
    assert space.program(h).readable in text
    concepts = data.attrs["concepts"]
    for name, oracle in (("strong", strong), ("weak", weak)):
        ids, probs = oracle.fit(episodes.support_scenes[e].tolist(), episodes.support_labels[e], hard=True).posterior()
        mine = concepts[concepts.role == f"{name} oracle"]
        assert mine["concept"].tolist() == ids[:3].tolist()
        assert np.allclose(mine["probability"], probs[:3])
        for c, p in zip(ids[:3], probs[:3]):
            assert f"p = {p:.3f}" in text and space.program(int(c)).readable in text


def test_plot_episode_flags_relabelled_scenes(space, splits):
    eps = sample_episodes(space, splits["instance_iid"], "test", "easy", n=60, seed=0)
    flagged = np.flatnonzero(eps.support_relabelled.any(1))
    if len(flagged) == 0:
        pytest.skip("no relabelled scene in these episodes")
    e = int(flagged[0])
    view, data = plots.plot_episode(space, eps, e)
    for k in np.flatnonzero(eps.support_relabelled[e]):
        ax = next(a for a in view.figure.axes if a.get_gid() == f"support:{k}")
        assert ax.get_title() == "+ relabelled"
    assert data[data.relabelled]["label"].eq(1).all()


# ------------------------------------------------------------------ files

def test_write_figures(tmp_path, space, splits, ds, episodes):
    oracles = plots.oracles_for(space, splits["counting"], ds)
    paths = plots.write_figures(ds, space, tmp_path, episodes=episodes, oracles=oracles, n_boot=100)
    names = {p.name for p in paths}
    for stem in ("comp_gap_hard", "comp_gap_easy", "entropy", "synonym_classes", "scene_properties",
                 "episode_view"):
        for ext in ("png", "pdf", "csv"):
            assert f"{stem}.{ext}" in names
    for p in paths:
        assert p.exists() and p.stat().st_size > 0
        if p.suffix == ".png":
            img = imread(p)
            assert img.ndim == 3 and min(img.shape[:2]) > 300
        if p.suffix == ".pdf":
            assert p.read_bytes()[:5] == b"%PDF-"
    gap = pd.read_csv(tmp_path / "comp_gap_hard.csv")
    strong = gap[(gap.metric == "ap") & (gap.learner == "strong")].sort_values("order")
    assert strong["split"].tolist() == expected_order(ds)
    assert np.allclose(strong["gap"], [mean_pct(ds, "ap", s, "strong") - mean_pct(ds, "ap", s, "weak")
                                       for s in expected_order(ds)])
    # PNG at 150 dpi: the comp-gap figure's size in inches times 150
    axes, _ = plots.plot_comp_gap(ds, n_boot=10)
    w, h = axes[0].figure.get_size_inches()
    assert imread(tmp_path / "comp_gap_hard.png").shape[:2] == (round(h * 150), round(w * 150))


def test_write_figures_without_easy_or_episodes(tmp_path, space, ds):
    paths = plots.write_figures(ds.sel(negatives=["hard"]), space, tmp_path, formats=("png",), n_boot=50)
    names = {p.name for p in paths}
    assert "comp_gap_hard.png" in names and "comp_gap_easy.png" not in names
    assert not any(n.startswith("episode_view") for n in names)
    assert not any(n.endswith(".pdf") for n in names)


def test_a_given_split_order_is_kept(ds):
    order = sorted(ds.split.values.tolist())
    axes, data = plots.plot_comp_gap(ds, "easy", n_boot=20, order=order)
    assert [t.get_text() for t in axes[1].get_xticklabels()] == [plots.split_label(s) for s in order]
    assert data[(data.learner == "weak") & (data.metric == "ap")].sort_values("order")["split"].tolist() == order
    with pytest.raises(ValueError, match="not in the results"):
        plots.plot_entropies(ds, order=["nope"])


# ------------------------------------------------------------------ one convention for every plot_*
# For each public plot_* function: (the axes to hand it, given the fixtures; a call drawing on
# them; a check that the numbers returned are the numbers drawn).  Inputs are small.

def bar_heights(ax, gid):
    bars = sorted((p for p in ax.patches if p.get_gid() == gid), key=lambda p: p.get_x())
    return np.array([b.get_height() for b in bars])


def check_comp_gap(axes, data, ds):
    for ax, metric in zip(axes, ("ap", "cba")):
        d = data[data.metric == metric]
        for learner, (x, y, segs) in errorbars(ax).items():
            name = {plots.learner_label(lr): lr for lr in set(d.learner)}[learner]
            s = d[d.learner == name].sort_values("order")
            assert np.allclose(y, s["mean"]) and np.allclose([lo for lo, _ in segs], s["ci_lo"])
            assert np.allclose([hi for _, hi in segs], s["ci_hi"])
        texts = [t.get_text().split("\n")[0] for t in ax.texts if (t.get_gid() or "").startswith("gap:")]
        gaps = d[d.learner == "strong"].sort_values("order")["gap"]
        assert texts == [f"{g:.1f}" for g in gaps]


def check_entropies(axes, data, ds):
    for ax, var in zip(axes, plots.ENTROPIES):
        for learner in set(data.learner):
            d = data[(data.entropy == var) & (data.learner == learner)].sort_values("order")
            assert np.allclose(bar_heights(ax, f"{var}:{learner}"), np.nan_to_num(d["mean"]))


def check_synonym_classes(ax, data, ds):
    shown = data[data.n_classes > 0]
    assert np.array_equal(bar_heights(ax, "synonym_bars"), shown["n_classes"])


def check_scene_properties(axes, data, ds):
    names = list(dict.fromkeys(data.attribute))
    flat = axes.ravel()
    for ax, name in zip(flat, names):
        assert np.allclose(bar_heights(ax, f"prop:{name}"), data[data.attribute == name]["share"])
    assert not any(ax.get_visible() for ax in flat[len(names):])


def check_episode(ax, data, ds):
    # drawn in a given Axes, the scenes are its inset axes; on a new figure, the figure's axes
    scenes = {a.get_gid(): a for a in ax.child_axes + ax.figure.axes
              if (a.get_gid() or "").split(":")[0] in ("support", "query")}
    per_scene = data.groupby(["set", "position"]).size()
    assert len(scenes) == len(per_scene)
    for (side, k), n_objects in per_scene.items():
        assert len(scenes[f"{side}:{k}"].collections) - 2 == n_objects  # markers + two grid-line collections


def check_modalities(axes, data, ds):
    for k, row in data.iterrows():
        picture = axes[1, k].get_images()[0].get_array()
        spectrogram = axes[2, k].get_images()[0].get_array()
        assert float(picture.mean()) == pytest.approx(row["image_mean"])
        assert spectrogram.shape == row["spectrogram_shape"]
        assert float(spectrogram.max()) == pytest.approx(row["spectrogram_max"])
        assert axes[0, k].get_title().endswith(f"scene {row['scene']}")


def check_gap_vs_divergence(ax, data, audit):
    points = np.vstack([c.lines[0].get_xydata() for c in ax.containers if isinstance(c, ErrorbarContainer)])
    assert np.allclose(points, data[["compound_divergence", "map_gap_hard"]].to_numpy())


def check_gap_intervals(ax, data, audit):
    widths = [p.get_width() for p in ax.patches]
    assert np.allclose(widths, pd.concat([data[data.negatives == n]["gap"] for n in ("hard", "easy")]))


def check_side_distributions(ax, data, audit):
    widths = np.array([p.get_width() for p in ax.patches])
    assert np.allclose(widths, np.concatenate([data["p_train"], data["p_test"]]))


@pytest.fixture(scope="module")
def audit(space, splits):
    reports = report.audit_splits(space, {k: splits[k] for k in ("counting", "binding_color", "instance_iid")},
                                  n_episodes=30)
    return report.audit_frame(reports)


#: name -> (module, the axes to give it: a function of a new Figure, the call, the check)
_PARTS = {}


def _parts_ds(space, splits):
    """Results with the atom and compound oracles (made once per module)."""
    if "ds" not in _PARTS:
        _PARTS["ds"] = compute_gap(space, {k: splits[k] for k in ("boolean", "complexity", "binding_color")},
                                   n_episodes=60, seed=1, parts=True)
    return _PARTS["ds"]


def check_gap_parts(ax, data, ds):
    parts = data[data.kind == "part"]
    drawn = [p for p in ax.patches if str(p.get_gid() or "").startswith("part:")]
    assert len(drawn) == len(parts)
    heights = {(p.get_gid(), round(p.get_x() + p.get_width() / 2)): p.get_height() for p in drawn}
    for _, r in parts.iterrows():
        assert np.isclose(heights[(f"part:{r['part']}", r["order"])], r["height"])


CASES = {
    "plot_gap_parts": (plots, lambda f: f.add_subplot(),
                       lambda a, x: plots.plot_gap_parts(_parts_ds(x["space"], x["splits"]), n_boot=50, ax=a),
                       check_gap_parts),
    "plot_comp_gap": (plots, lambda f: f.subplots(2, 1, sharex=True),
                      lambda a, x: plots.plot_comp_gap(x["ds"], "hard", n_boot=50, axes=a), check_comp_gap),
    "plot_entropies": (plots, lambda f: f.subplots(2, 1),
                       lambda a, x: plots.plot_entropies(x["ds"], n_boot=50, axes=a), check_entropies),
    "plot_synonym_classes": (plots, lambda f: f.add_subplot(),
                             lambda a, x: plots.plot_synonym_classes(x["space"], ax=a), check_synonym_classes),
    "plot_scene_properties": (plots, lambda f: f.subplots(2, 4),
                              lambda a, x: plots.plot_scene_properties(x["space"], axes=a), check_scene_properties),
    "plot_episode": (plots, lambda f: f.add_axes((0, 0, 1, 1)),
                     lambda a, x: plots.plot_episode(x["space"], x["episodes"], 1, ax=a), check_episode),
    "plot_modalities": (plots, lambda f: f.subplots(3, 3),
                        lambda a, x: plots.plot_modalities(x["space"], x["episodes"], 2, axes=a, n_scenes=3,
                                                           height=24, width=36), check_modalities),
    "plot_closure_families": (closure_plots, lambda f: f.add_subplot(),
                              lambda a, x: closure_plots.plot_closure_families(x["closure_ds"], ax=a, n_boot=50),
                              lambda ax, data, ds: check_closure_families(ax, data)),
    "plot_gap_vs_divergence": (report, lambda f: f.add_subplot(),
                               lambda a, x: report.plot_gap_vs_divergence(x["audit"], ax=a), check_gap_vs_divergence),
    "plot_gap_intervals": (report, lambda f: f.add_subplot(),
                           lambda a, x: report.plot_gap_intervals(x["audit"], ax=a), check_gap_intervals),
    "plot_side_distributions": (report, lambda f: f.add_subplot(),
                                lambda a, x: report.plot_side_distributions(x["space"], x["splits"]["counting"],
                                                                            "atom", 5, ax=a),
                                check_side_distributions),
}


def test_every_public_plot_function_is_covered_and_old_names_are_gone():
    for module in (plots, report, closure_plots):
        public = {n for n in module.__all__ if inspect.isfunction(getattr(module, n))}
        drawing = {n for n in public if n.startswith("plot_")}
        assert drawing == {n for n, case in CASES.items() if case[0] is module}
        for n in drawing:
            params = inspect.signature(getattr(module, n)).parameters
            assert ("ax" in params) != ("axes" in params), n  # one of the two, defaulting to a new figure
            assert params.get("ax", params.get("axes")).default is None
            assert "data" in getattr(module, n).__doc__ and "Returns ``(ax" in " ".join(
                getattr(module, n).__doc__.split()), n
    for old in ("comp_gap_figure", "entropy_figure", "synonym_histogram", "scene_property_histograms",
                "episode_figure"):
        assert not hasattr(plots, old)


@pytest.mark.parametrize("name", CASES)
def test_plot_draws_on_the_axes_it_is_given(name, space, splits, ds, episodes, audit, closure_ds):
    module, make_axes, call, check = CASES[name]
    inputs = {"space": space, "splits": splits, "ds": ds, "episodes": episodes, "audit": audit,
              "closure_ds": closure_ds}
    fig = Figure(figsize=(16, 12))
    given = make_axes(fig)
    drawn, data = call(given, inputs)
    assert isinstance(data, pd.DataFrame) and len(data)
    if isinstance(given, Axes):
        assert drawn is given
    else:  # the same Axes, in the shape they were given
        assert isinstance(drawn, np.ndarray) and drawn.shape == np.shape(given)
        assert all(a is b for a, b in zip(drawn.ravel(), np.ravel(given)))
    assert all(a.figure is fig for a in np.ravel(drawn)) and len(fig.axes) == np.size(given)  # no new axes
    check(drawn, data, inputs["audit"] if module is report else inputs["ds"])


@pytest.mark.parametrize("name", CASES)
def test_plot_makes_a_figure_when_given_no_axes(name, space, splits, ds, episodes, audit, closure_ds):
    module, make_axes, call, check = CASES[name]
    inputs = {"space": space, "splits": splits, "ds": ds, "episodes": episodes, "audit": audit,
              "closure_ds": closure_ds}
    drawn, data = call(None, inputs)
    again, _ = call(None, inputs)
    first = np.ravel(drawn)
    assert isinstance(first[0], Axes) and np.ravel(again)[0].figure is not first[0].figure
    assert all(a.figure is first[0].figure for a in first)
    check(drawn, data, audit if module is report else ds)


def test_wrong_number_of_axes_is_a_clear_error(ds, space, episodes):
    fig = Figure()
    with pytest.raises(ValueError, match="draws on 2 axes, got 3"):
        plots.plot_comp_gap(ds, n_boot=10, axes=fig.subplots(3, 1))
    with pytest.raises(ValueError, match="at least 6 axes, got 4"):
        plots.plot_scene_properties(space, axes=fig.subplots(2, 2))
    with pytest.raises(ValueError, match="draws on 9 axes, got 6"):
        plots.plot_modalities(space, episodes, 2, axes=fig.subplots(2, 3), n_scenes=3, height=24, width=36)


# ------------------------------------------------------------------ CLOSURE's families

CLOSURE_FAMILIES = ["embed_spa_mat", "embed_mat_spa", "compare_mat", "compare_mat_spa", "and_mat_spa", "or_mat",
                    "or_mat_spa"]


@pytest.fixture(scope="module")
def closure_ds():
    """A results Dataset shaped like protocol closure's (the seven families as splits, plus one
    split that is no family), with metrics drawn at random: each family its own gap."""
    from bayes_concepts.results import empty_dataset
    splits = CLOSURE_FAMILIES + ["not_a_family"]
    ds = empty_dataset(splits, ("hard", "easy"), ("strong", "weak"), 60)
    rng = np.random.default_rng(7)
    for k, split in enumerate(splits):
        for neg in ("hard", "easy"):
            ds["ap"].loc[dict(split=split, negatives=neg, learner="strong")] = rng.uniform(0.85, 1.0, 60)
            ds["ap"].loc[dict(split=split, negatives=neg, learner="weak")] = rng.uniform(0, 0.1 + 0.05 * k, 60)
            for var, top in (("cba", 1.0), ("posterior_entropy", 2.0), ("predictive_entropy", 0.7)):
                ds[var].loc[dict(split=split, negatives=neg)] = rng.uniform(0.0, top, (2, 60))
    ds["weak_empty"] = ds["empty"].sel(learner="weak", drop=True)
    return ds


def scatter_points(ax, gid):
    return np.asarray([c for c in ax.collections if c.get_gid() == gid][0].get_offsets(), float)


def check_closure_families(ax, data):
    """What is drawn is ``data``: the circles at (gap, mean drop), their error bars the gap's
    interval, each model's markers at (gap, its drop), a label per family."""
    assert np.allclose(scatter_points(ax, "closure:mean"), data[["gap", "mean_drop"]].to_numpy())
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 1
    segs = bars[0].lines[2][0].get_segments()
    assert np.allclose([s[0, 0] for s in segs], data["gap_ci_lo"]) and np.allclose([s[1, 0] for s in segs],
                                                                                   data["gap_ci_hi"])
    drops = data.attrs["drops"]
    for model in dict.fromkeys(drops["model"]):
        per = drops[drops.model == model].set_index("family")["drop"].reindex(data["family"]).to_numpy()
        pts = scatter_points(ax, f"closure:model:{model}")
        assert np.allclose(pts[:, 0], data["gap"]) and np.allclose(pts[:, 1], per, equal_nan=True)
    labels = {t.get_gid(): t.get_text() for t in ax.texts if (t.get_gid() or "").startswith("closure:label:")}
    assert labels == {f"closure:label:{f}": f for f in data["family"]}


def test_closure_families_data_equals_the_dataset_and_the_reported_drops(closure_ds):
    from scipy.stats import spearmanr

    from bayes_concepts.suites.closure import load_reported
    from bayes_concepts.gap import paired_bootstrap
    rep = load_reported()
    ax, data = closure_plots.plot_closure_families(closure_ds, negatives="easy", n_boot=200, seed=3)
    assert data["family"].tolist() == CLOSURE_FAMILIES  # the split that is no family is left out
    assert (data["negatives"] == "easy").all() and (data["episodes"] == 60).all()
    for _, r in data.iterrows():
        cell = closure_ds.sel(split=r["family"], negatives="easy")
        gap = paired_bootstrap(100 * cell["ap"].sel(learner="strong").values,
                               100 * cell["ap"].sel(learner="weak").values, 200, 3)
        assert (r["gap"], r["gap_ci_lo"], r["gap_ci_hi"]) == pytest.approx(gap)
        assert r["gap_ci_lo"] <= r["gap"] <= r["gap_ci_hi"]
        drops = [rep.drop(m, r["family"]) for m in rep.models]
        assert r["mean_drop"] == pytest.approx(np.mean(drops))
        assert (r["min_drop"], r["max_drop"], r["n_models"]) == (min(drops), max(drops), len(rep.models))
    # the weak oracle's ap rises with the split's position, so the gap falls: rank 1 is the first family
    assert data["gap_rank"].tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert data.sort_values("drop_rank")["family"].iloc[0] == "and_mat_spa"  # CLOSURE's largest mean drop
    expect = spearmanr(data["gap"], data["mean_drop"])
    assert data.attrs["spearman"] == pytest.approx({"rho": expect.statistic, "p": expect.pvalue, "n": 7})
    by_model = data.attrs["spearman_by_model"].set_index("model")
    assert by_model.index.tolist() == list(rep.models)
    mac = [rep.drop("MAC", f) for f in CLOSURE_FAMILIES]
    assert by_model.loc["MAC", "rho"] == pytest.approx(spearmanr(data["gap"], mac).statistic)
    assert len(data.attrs["drops"]) == 7 * len(rep.models)
    check_closure_families(ax, data)


def test_closure_families_axes_say_what_and_in_which_units(closure_ds):
    ax, data = closure_plots.plot_closure_families(closure_ds, n_boot=50)
    assert "comp gap" in ax.get_xlabel() and "percentage points" in ax.get_xlabel()
    assert "drop" in ax.get_ylabel() and "percentage points" in ax.get_ylabel()
    rho = data.attrs["spearman"]["rho"]
    shown = f"{rho:+.2f}".replace("-", "\u2212")
    assert f"\u03c1(gap, mean drop) = {shown}" in ax.get_title() and "60 test episodes" in ax.get_title()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("FiLM (\u03c1 = ") for t in legend) and any("mean over models" in t for t in legend)


def test_closure_families_takes_summarised_rows_the_gap_json_and_own_drops(closure_ds):
    from bayes_concepts.gap import summarise
    _, from_ds = closure_plots.plot_closure_families(closure_ds, n_boot=100)
    rows = summarise(closure_ds, n_boot=100)
    for given in (rows, {"results": rows}):
        _, from_rows = closure_plots.plot_closure_families(given, n_boot=100)
        pd.testing.assert_frame_equal(from_rows, from_ds)
    own = {"my_model": {"or_mat": 30.0, "and_mat_spa": 10.0, "embed_spa_mat": 20.0}}
    ax, data = closure_plots.plot_closure_families(closure_ds, reported=own, n_boot=50)
    assert data["family"].tolist() == ["embed_spa_mat", "and_mat_spa", "or_mat"]  # families with a drop
    assert data["mean_drop"].tolist() == [20.0, 10.0, 30.0]
    check_closure_families(ax, data)


def test_closure_families_of_the_committed_full_size_results():
    import json
    from pathlib import Path
    path = Path(__file__).parents[1] / "benchmarks" / "results" / "closure_gap.json"
    results = json.loads(path.read_text())
    ax, data = closure_plots.plot_closure_families(results)
    rows = {r["split"]: r for r in results["results"] if r["negatives"] == "hard"}
    assert data["family"].tolist() == CLOSURE_FAMILIES and (data["episodes"] == 5000).all()
    for _, r in data.iterrows():
        assert r["gap"] == rows[r["family"]]["gap"]["map"]
        assert [r["gap_ci_lo"], r["gap_ci_hi"]] == rows[r["family"]]["gap"]["map_ci"]
    assert -1 <= data.attrs["spearman"]["rho"] <= 1
    check_closure_families(ax, data)


def test_closure_families_on_a_tiny_clevr_space_agrees_with_the_gap_table(clevr_space):
    """End to end: a clevr space (the session's small one), protocol closure, the figure's
    numbers = the table's."""
    from bayes_concepts.gap import summarise
    from bayes_concepts.protocols import protocols
    ds = protocols.get("closure").compute_gap(clevr_space, negatives="hard", n_episodes=30)
    ax, data = closure_plots.plot_closure_families(ds)
    table = {r["split"]: r["gap"] for r in summarise(ds)}
    # a family with no concept that has enough scenes in its domain is not scored, and is said so
    not_scored = set((json.loads(ds.attrs.get("excluded", "{}")).get("not_scored") or {}))
    assert len(not_scored) <= 1
    assert data["family"].tolist() == [f for f in CLOSURE_FAMILIES if f not in not_scored]
    for _, r in data.iterrows():
        assert r["gap"] == pytest.approx(table[r["family"]]["map"])
        assert [r["gap_ci_lo"], r["gap_ci_hi"]] == pytest.approx(table[r["family"]]["map_ci"])
    check_closure_families(ax, data)


def test_closure_families_errors(ds, closure_ds):
    with pytest.raises(ValueError, match="no split of the results is a CLOSURE family"):
        closure_plots.plot_closure_families(ds, n_boot=10)  # CURI's splits
    with pytest.raises(ValueError, match="no 'easy' negatives"):
        closure_plots.plot_closure_families(closure_ds.sel(negatives=["hard"]), negatives="easy", n_boot=10)
    with pytest.raises(ValueError, match="no 'easy' negatives"):
        from bayes_concepts.gap import summarise
        closure_plots.plot_closure_families(summarise(closure_ds.sel(negatives=["hard"]), n_boot=10), negatives="easy")
    with pytest.raises(ValueError, match="reported must be"):
        closure_plots.plot_closure_families(closure_ds, reported=[1, 2], n_boot=10)
    with pytest.raises(ValueError, match="results must be"):
        closure_plots.plot_closure_families("closure_gap.json")


def test_the_episode_view_writes_out_items_whose_values_no_glyph_keeps_apart(small_space):
    """A pair space's 30 objects would share markers (two values drawn alike), so each item is
    written out; CURI's few colours and shapes are still drawn as glyphs."""
    from bayes_concepts.episodes import EpisodeSampler
    from bayes_concepts.plots.episodes import LabelView, ObjectsView, scene_view
    from bayes_concepts.plots.objects import glyphs_repeat, scene_styles
    from bayes_concepts.spaces.extension_space import ExtensionSpace
    attrs = [f"a{i}" for i in range(4)]
    objs = [f"thing{j}" for j in range(30)]
    items = [(a, o) for a in attrs for o in objs for _ in range(3)]
    labels = {"attribute": [a for a, _ in items], "object": [o for _, o in items]}
    ext = [np.flatnonzero([a == x for x, _ in items]) for a in attrs]
    ext += [np.flatnonzero([o == y for _, y in items]) for o in objs]
    pairs = ExtensionSpace.from_extensions(ext, attrs + objs, item_labels=labels)
    assert glyphs_repeat(*scene_styles(pairs.schema)) == ("object",)
    assert isinstance(scene_view(pairs), LabelView) and isinstance(scene_view(small_space), ObjectsView)
    assert glyphs_repeat(*scene_styles(small_space.schema)) == ()
    eps = EpisodeSampler(pairs).sample(np.arange(len(attrs)), 2, "hard", seed=0)
    ax, data = plots.plot_episode(pairs, eps, 0)
    fig = ax.figure
    for k, sid in enumerate(eps.support_scenes[0]):
        sax = next(a for a in fig.axes if a.get_gid() == f"support:{k}")
        a, o = items[int(sid)]
        assert [t.get_text() for t in sax.texts] == [f"{a}\n{o}"]
    assert set(data["object"]) <= set(objs) and len(data) == eps.support_scenes.shape[1] + eps.query_scenes.shape[1]
