"""Figures: files are written, and what is drawn equals what the results Dataset / space hold."""
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from matplotlib.container import ErrorbarContainer
from matplotlib.image import imread

from bayes_concepts import plots
from bayes_concepts.episodes import sample_episodes
from bayes_concepts.gap import compute_gap
from bayes_concepts.splits import curi_splits


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
    return plots.comp_gap_figure(ds, "hard", n_boot=200)


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
    fig, data = gap_fig
    order = expected_order(ds)
    top, bottom = fig.axes[:2]
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
    fig, data = plots.comp_gap_figure(both.sel(negatives=["hard"]), n_boot=50)
    series = errorbars(fig.axes[0])
    assert set(series) == {"strong oracle", "weak oracle", "relnet"}
    order = expected_order(ds)
    assert np.allclose(series["relnet"][1], [mean_pct(both, "ap", s, "relnet") for s in order])
    assert len({c.lines[0].get_color() for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)}) == 3
    assert set(data.learner) == {"strong", "weak", "relnet"}


def test_missing_negatives_is_a_clear_error(ds):
    with pytest.raises(ValueError, match="no 'easy' negatives"):
        plots.comp_gap_figure(ds.sel(negatives=["hard"]), "easy")


# ------------------------------------------------------------------ entropy

def test_entropy_figure_equals_the_dataset(ds):
    fig, data = plots.entropy_figure(ds, n_boot=100)
    order = expected_order(ds)
    assert len(fig.axes) == 2
    for ax, var in zip(fig.axes, ("posterior_entropy", "predictive_entropy")):
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

def test_synonym_histogram(space):
    fig, data = plots.synonym_histogram(space)
    ax = fig.axes[0]
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


def test_scene_property_histograms(space):
    fig, data = plots.scene_property_histograms(space)
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
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 6
    titles = [ax.get_title() for ax in visible]
    assert titles[0] == "colour" and titles[4].startswith("x bin") and titles[5].startswith("y bin")
    for ax, n in zip(visible, names):
        bars = [p for p in ax.patches if p.get_gid() == f"prop:{n}"]
        assert np.allclose([b.get_height() for b in bars], data[data.attribute == n]["share"])


# ------------------------------------------------------------------ episode view

def test_episode_figure_draws_every_scene(space, splits, ds, episodes):
    strong, weak = plots.oracles_for(space, splits["counting"], ds)
    e = 1
    fig, data = plots.episode_figure(space, episodes, e, strong, weak, top=3)
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


def test_episode_figure_flags_relabelled_scenes(space, splits):
    eps = sample_episodes(space, splits["instance_iid"], "test", "easy", n=60, seed=0)
    flagged = np.flatnonzero(eps.support_relabelled.any(1))
    if len(flagged) == 0:
        pytest.skip("no relabelled scene in these episodes")
    e = int(flagged[0])
    fig, data = plots.episode_figure(space, eps, e)
    for k in np.flatnonzero(eps.support_relabelled[e]):
        ax = next(a for a in fig.axes if a.get_gid() == f"support:{k}")
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
    fig, _ = plots.comp_gap_figure(ds, n_boot=10)
    w, h = fig.get_size_inches()
    assert imread(tmp_path / "comp_gap_hard.png").shape[:2] == (round(h * 150), round(w * 150))


def test_write_figures_without_easy_or_episodes(tmp_path, space, ds):
    paths = plots.write_figures(ds.sel(negatives=["hard"]), space, tmp_path, formats=("png",), n_boot=50)
    names = {p.name for p in paths}
    assert "comp_gap_hard.png" in names and "comp_gap_easy.png" not in names
    assert not any(n.startswith("episode_view") for n in names)
    assert not any(n.endswith(".pdf") for n in names)


def test_a_given_split_order_is_kept(ds):
    order = sorted(ds.split.values.tolist())
    fig, data = plots.comp_gap_figure(ds, "easy", n_boot=20, order=order)
    assert [t.get_text() for t in fig.axes[1].get_xticklabels()] == [plots.split_label(s) for s in order]
    assert data[(data.learner == "weak") & (data.metric == "ap")].sort_values("order")["split"].tolist() == order
    with pytest.raises(ValueError, match="not in the results"):
        plots.entropy_figure(ds, order=["nope"])
