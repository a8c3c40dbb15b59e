"""The figures' extension points: a modality draws its own items (a new one is one module,
drawn by the modalities figure and the episode view without a change to the figures), a
suite's figure is one registration in ``plots.figures`` that ``write_figures`` writes, and
the figures package imports no benchmark."""
import subprocess
import sys
from functools import partial
from types import MappingProxyType

import numpy as np
import pandas as pd
import pytest

from bayes_concepts import plots
from bayes_concepts.episodes import sample_episodes
from bayes_concepts.modalities import Modality, modalities
from bayes_concepts.results import empty_dataset
from bayes_concepts.splits import curi_splits


class Census(Modality):
    """A toy modality: the number of objects of a scene, int16 (1,); drawn as one bar whose
    height is that number, reported as ``objects_counted``."""

    name = "census"
    summary = "how many objects a scene holds"
    defaults = MappingProxyType({})
    dtype = np.dtype(np.int16)
    in_episode_view = True
    item_noun = "count"

    def item_shape(self, settings):
        return (1,)

    def render(self, codes, schema, settings):
        return (np.asarray(codes)[:, :, 0] >= 0).sum(axis=1).astype(np.int16)[:, None]

    def draw_items(self, axes, items, settings, *, fill=False):
        drawn = []
        for ax, item in zip(axes, items):
            ax.bar([0], [int(item[0])], gid="census")
            drawn.append({"objects_counted": int(item[0])})
        return drawn

    def drawn_size(self, settings):
        return (1, 2)


class Silent(Census):
    """The same renderings, drawn by no figure (it defines no draw_items)."""

    name = "silent"
    draw_items = Modality.draw_items


@pytest.fixture
def census():
    kind = modalities.register("census", Census())
    yield kind
    modalities.unregister("census")


@pytest.fixture(scope="module")
def episodes(small_space):
    return sample_episodes(small_space, curi_splits(small_space)["counting"], "test", "hard", n=3, seed=1)


def _objects(space, scene):
    return len(space.scene(int(scene))["objects"])


def test_a_modality_that_draws_gets_its_own_row_in_the_modalities_figure(small_space, episodes, census):
    axes, data = plots.plot_modalities(small_space, episodes, 1, n_scenes=3, height=24, width=36)
    assert axes.shape == (4, 3)  # schema, image, sound, then census in registration order
    assert axes[3, 0].get_ylabel() == "census"
    assert list(data["objects_counted"]) == [_objects(small_space, s) for s in data["scene"]]
    heights = [next(p for p in ax.patches if p.get_gid() == "census").get_height() for ax in axes[3]]
    assert heights == list(data["objects_counted"])
    assert {"image_mean", "spectrogram_max"} <= set(data.columns)  # the built-in rows are drawn as before


def test_a_modality_that_does_not_draw_is_left_out_of_the_figures(small_space, episodes):
    modalities.register("silent", Silent())
    try:
        assert not modalities.get("silent").draws and modalities.get("image").draws
        axes, data = plots.plot_modalities(small_space, episodes, 1, n_scenes=3, height=24, width=36)
        assert axes.shape == (3, 3) and "objects_counted" not in data.columns
        with pytest.raises(ValueError, match="modality must be 'schema' or 'image'"):
            plots.plot_episode(small_space, episodes, 0, modality="silent")
    finally:
        modalities.unregister("silent")


def test_the_episode_view_draws_a_scene_as_a_modality_that_stands_in_its_place(small_space, episodes, census):
    view, data = plots.plot_episode(small_space, episodes, 0, modality="census")
    support = [a for a in view.figure.axes if (a.get_gid() or "").startswith("support:")]
    assert len(support) == len(episodes.support_scenes[0]) and all(a.patches for a in support)
    first = data.drop_duplicates(["set", "position"])
    assert list(first["objects_counted"]) == [_objects(small_space, s) for s in first["scene"]]
    assert "each count is one scene rendered as a count" in view.figure._suptitle.get_text()
    with pytest.raises(ValueError, match="modality must be 'schema' or 'image' or 'census', got 'sound'"):
        plots.plot_episode(small_space, episodes, 0, modality="sound")


def _results(splits, protocol=None):
    """A small results Dataset with random metrics (strong above weak)."""
    ds = empty_dataset(splits, ("hard",), ("strong", "weak"), 20)
    rng = np.random.default_rng(3)
    for split in splits:
        ds["ap"].loc[dict(split=split, learner="strong")] = rng.uniform(0.8, 1.0, (1, 20))
        ds["ap"].loc[dict(split=split, learner="weak")] = rng.uniform(0.0, 0.4, (1, 20))
        for var in ("cba", "posterior_entropy", "predictive_entropy"):
            ds[var].loc[dict(split=split)] = rng.uniform(0.0, 1.0, (1, 2, 20))
    ds["empty"][:] = False
    if protocol:
        ds.attrs["protocol"] = protocol
    return ds


def test_a_registered_figure_is_written_after_the_built_in_ones(small_space, tmp_path):
    @plots.figures.register("toy_synonyms")
    def toy(given):
        """The synonym classes again, for results of protocol toy."""
        if given.results.attrs.get("protocol") != "toy":
            return {}
        return {"toy_synonyms": partial(plots.plot_synonym_classes, given.space)}

    try:
        assert plots.figures.names()[-1] == "toy_synonyms"
        paths = plots.write_figures(_results(["a", "b"], "toy"), small_space, tmp_path / "toy", formats=("png",),
                                    n_boot=10, dpi=30)
        names = [p.name for p in paths]
        assert names[-2:] == ["toy_synonyms.png", "toy_synonyms.csv"]
        assert names.index("synonym_classes.png") < names.index("toy_synonyms.png")
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "toy" / "toy_synonyms.csv"),
                                      pd.read_csv(tmp_path / "toy" / "synonym_classes.csv"))
        other = plots.write_figures(_results(["a", "b"]), small_space, tmp_path / "other", formats=("png",),
                                    n_boot=10, dpi=30)
        assert not any(p.name.startswith("toy_") for p in other)
    finally:
        plots.figures.unregister("toy_synonyms")


def test_closure_families_are_written_for_results_of_a_closure_protocol(small_space, tmp_path):
    from bayes_concepts.suites.closure.plots import plot_closure_families
    families = ["embed_spa_mat", "compare_mat", "or_mat"]
    for protocol, written in (("closure", True), ("closure-baselines", True), (None, False)):
        out = tmp_path / str(protocol)
        ds = _results(families, protocol)
        names = [p.name for p in plots.write_figures(ds, small_space, out, formats=("png",), n_boot=10, dpi=30)]
        assert ("closure_families.csv" in names) is written
        if written:
            _, data = plot_closure_families(ds, n_boot=10)
            assert np.allclose(pd.read_csv(out / "closure_families.csv")["gap"], data["gap"])


def test_the_figures_package_imports_no_benchmark_suite():
    code = ("import sys, bayes_concepts.plots; "
            "print(sorted(m for m in sys.modules if m.startswith('bayes_concepts.suites')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_registering_a_figure_loads_no_plotting_library():
    """A suite or plugin registers its figure (the registry loads every built-in and suite figure
    to check the name) without matplotlib or seaborn, about 0.7 s of a process's start; asking
    a registered entry for its figures, or for a plot function, loads them."""
    code = ("import sys\nfrom bayes_concepts.plots import figures\n"
            "figures.register('mine', lambda given: {})\n"
            "print(sorted(m for m in ('matplotlib', 'seaborn') if m in sys.modules), "
            "{'comp_gap', 'closure_families', 'mine'} <= set(figures.names()))\n"
            "from bayes_concepts.plots import plot_comp_gap\n"
            "print(sorted(m for m in ('matplotlib', 'seaborn') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines() == ["[] True", "['matplotlib', 'seaborn']"]
