"""ConceptWorld's five baselines (learners.grid_nets) and their per-experiment training and F1
scoring (suites.conceptworld.baselines): shapes, learning a trivially separable concept,
F1 against scikit-learn's, no scene label reaching a net, one-line errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score

from bayes_concepts.learners.grid_nets import GridNetError, grid_nets, make_grid_net, parameter_count
from bayes_concepts.scenes.grid import EMPTY, GRID_COLORS
from bayes_concepts.spaces.extension_space import ExtensionSpace
from bayes_concepts.suites.conceptworld.baselines import (SEED_EXPERIMENTS, BaselineError, BaselineSettings,
                                                          ExperimentData, GridNetLearner, experiment_data, f1_per_class, grid_images,
                                                          predict_classes, run_baselines, space_images,
                                                          train_grid_net)
from bayes_concepts.suites.conceptworld.space import conceptworld_space

NETS = ("mlp", "cnn", "resnet18", "wren", "predinet")
@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One torch thread: these nets are small, and threads only contend on a shared machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


SMALL = {"resnet18": {"width": 8}, "cnn": {"channels": 8}, "wren": {"channels": 16, "g_hidden": 16, "f_hidden": 16}}


def test_the_five_nets_are_registered_in_the_seeds_order():
    assert tuple(grid_nets.names()) == NETS


@pytest.mark.parametrize("name", NETS)
@pytest.mark.parametrize("k", [2, 5])
def test_each_net_maps_pictures_to_class_logits(name, k):
    torch.manual_seed(0)
    net = make_grid_net(name, k)
    out = net(torch.rand(3, 3, 32, 32))
    assert out.shape == (3, k) and out.dtype == torch.float32 and torch.isfinite(out).all()
    assert parameter_count(net) > 0


def test_the_seeds_sizes_where_kept():
    # ResNet-18 cut after layer 2 (the seed's), the MLP's 128 hidden units, PrediNet's sizes
    assert parameter_count(make_grid_net("mlp", 3)) == 3 * 32 * 32 * 128 + 128 + 128 * 3 + 3
    resnet = make_grid_net("resnet18", 3)
    assert resnet.head.in_features == 128 == resnet.feature_size and len(resnet.layer1) == 2 and len(resnet.layer2) == 2
    predinet = make_grid_net("predinet", 3)
    assert (predinet.heads, predinet.relations, predinet.key_size) == (2, 2, 16)


def _separable(n: int, seed: int) -> ExperimentData:
    """Scenes of 150 scattered points, all red (class 0) or all blue (class 1)."""
    rng = np.random.default_rng(seed)
    grids = np.full((n, 32, 32), EMPTY, np.int8)
    labels = rng.integers(0, 2, n)
    for g, lab in zip(grids, labels):
        g.flat[rng.choice(32 * 32, 150, replace=False)] = 1 if lab == 0 else 0
    return ExperimentData("toy", ("red", "blue"), grids, labels.astype(np.int64), {}, GRID_COLORS, {})


@pytest.mark.parametrize("name", NETS)
def test_each_net_learns_a_trivially_separable_concept(name):
    data = _separable(64, 1)
    s = BaselineSettings(epochs=10, patience=10, val_fraction=0.1, batch_size={name: 16}, lr=3e-3,
                         net_options={name: SMALL.get(name, {})})
    lines = []
    net, record = train_grid_net(name, data, seed=0, settings=s, log=lines.append)
    pred = predict_classes(net, grid_images(data.train_grids, data.colors))
    assert f1_per_class(data.train_labels, pred, 2).mean() >= 0.9
    assert record["val_loss"] < np.log(2) and 1 <= record["best_epoch"] <= record["epochs"]
    assert len(lines) == record["epochs"] and lines[0].startswith(f"[{name} toy seed 0] epoch 1/10")


def test_training_is_seeded():
    data = _separable(40, 2)
    s = BaselineSettings(epochs=2, batch_size={"cnn": 16}, net_options={"cnn": {"channels": 4}})
    a, _ = train_grid_net("cnn", data, seed=3, settings=s)
    b, _ = train_grid_net("cnn", data, seed=3, settings=s)
    x = grid_images(data.train_grids, data.colors)
    assert torch.equal(a(x), b(x))


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5).flatmap(lambda k: st.tuples(
    st.just(k), st.lists(st.tuples(st.integers(0, k - 1), st.integers(0, k - 1)), min_size=1, max_size=40))))
def test_f1_equals_scikit_learns(case):
    k, pairs = case
    t, p = np.array(pairs).T
    ours = f1_per_class(t, p, k)
    theirs = f1_score(t, p, labels=list(range(k)), average=None, zero_division=0)
    np.testing.assert_allclose(ours, theirs, atol=1e-12)


def _space_with_sources(sources, grids):
    names = [f"{j}:" + ";".join(f"{x}.{y}.{int(g[y, x])}" for y, x in zip(*np.nonzero(g >= 0)))
             for j, g in enumerate(grids)]
    member = np.zeros((2, len(grids)), bool)
    member[0, ::2] = member[1, 1::2] = True
    return ExtensionSpace.from_extensions(member, ["a", "b"], item_names=names, item_labels={"source": list(sources)},
                                          params={"kind": "conceptworld", "grid_size": 32,
                                                  "colors": list(GRID_COLORS)})


def test_no_scene_label_reaches_a_net():
    """The pictures come from the grid cells only: shuffling the scenes' ``source`` labels (the
    concept that generated each one) changes neither the pictures nor any net's outputs."""
    data = _separable(12, 4)
    sources = [f"concept_{j % 3}" for j in range(12)]
    shuffled = list(np.random.default_rng(0).permutation(sources))
    assert shuffled != sources
    a = space_images(_space_with_sources(sources, data.train_grids))
    b = space_images(_space_with_sources(shuffled, data.train_grids))
    assert torch.equal(a, b) and torch.equal(a, grid_images(data.train_grids, GRID_COLORS))
    for name in NETS:
        torch.manual_seed(0)
        net = make_grid_net(name, 3, **SMALL.get(name, {})).eval()
        assert torch.equal(net(a), net(b))


def test_a_net_as_a_few_shot_learner_scores_by_prototype_distances():
    """The episode form: prototypes of the net's features; the logit is the squared distance
    to the negative prototype minus that to the positive one (written out here), and a
    shuffled ``source`` label changes nothing."""
    data = _separable(12, 5)
    sources = [f"concept_{j % 3}" for j in range(12)]
    torch.manual_seed(0)
    net = make_grid_net("cnn", 2, channels=4).eval()
    a = GridNetLearner(_space_with_sources(sources, data.train_grids), net, "cnn")
    b = GridNetLearner(_space_with_sources(sources[::-1], data.train_grids), net, "cnn")
    support, labels, query = [0, 1, 2, 3], [1, 0, 1, 0], [4, 5, 6, 7, 8]
    got = a.fit(support, labels).decision_function(query)
    with torch.no_grad():
        f = net.features(grid_images(data.train_grids, GRID_COLORS)).double().numpy()
    c_p, c_n = f[[0, 2]].mean(axis=0), f[[1, 3]].mean(axis=0)
    want = ((f[query] - c_n) ** 2).sum(axis=1) - ((f[query] - c_p) ** 2).sum(axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(b.fit(support, labels).decision_function(query), got)
    p = a.predict_proba(query)
    assert p.shape == (5,) and ((p >= 0) & (p <= 1)).all()


def test_space_images_are_the_spaces_grids():
    space = conceptworld_space(depth=2, per_concept=1, broken_per_concept=0, noise_scenes=1)
    img = space_images(space, [0, 3])
    rgb = grid_images(space.grids()[[0, 3]], space.params["colors"])
    assert img.shape == (2, 3, 32, 32) and torch.equal(img, rgb)


def test_experiment_data_follows_the_seeds_tables():
    s = BaselineSettings(scale=0.01, test_scale=0.01)
    d = experiment_data("boxworld", seed=0, settings=s)
    assert d.classes == ("solution", "distractor", "2x2 square")
    assert d.counts["train"] == {"solution": 10, "distractor": 10, "2x2 square": 10}
    assert set(d.tests) == {"length 3", "length 5"}
    (g3, l3), (g5, l5) = d.tests["length 3"], d.tests["length 5"]
    assert d.train_grids.shape == (30, 32, 32) and d.train_labels.tolist() == [0] * 10 + [1] * 10 + [2] * 10
    # the 2x2 square class is tested on the same scenes at both lengths (as the seed), the others not
    assert np.array_equal(g3[l3 == 2], g5[l5 == 2]) and not np.array_equal(g3[l3 == 0], g5[l5 == 0])
    again = experiment_data("boxworld", seed=0, settings=s)
    other = experiment_data("boxworld", seed=1, settings=s)
    assert np.array_equal(again.train_grids, d.train_grids) and not np.array_equal(other.train_grids, d.train_grids)
    for e, spec in SEED_EXPERIMENTS.items():
        assert all(set(per) == set(spec["classes"]) for per in spec["test"].values()), e


def test_run_baselines_returns_a_tidy_f1_table():
    s = BaselineSettings(scale=0.02, test_scale=0.02, epochs=1, net_options={"cnn": {"channels": 4}})
    r = run_baselines(["mlp", "cnn"], ["scaling"], seeds=[0], settings=s)
    f1 = r.f1
    assert set(f1.columns) >= {"learner", "experiment", "condition", "seed", "concept", "f1", "support"}
    assert len(f1) == 2 * (4 + 1) and set(f1.concept) == {"blue", "red", "stripes", "checkerboard", "macro"}
    assert f1.f1.between(0, 1).all()
    macro = f1[f1.concept == "macro"].set_index("learner").f1
    per = f1[f1.concept != "macro"].groupby("learner").f1.mean()
    np.testing.assert_allclose(macro.sort_index(), per.sort_index())
    assert list(r.trainings.learner) == ["mlp", "cnn"] and (r.trainings.train_cpu_seconds > 0).all()


def _learner():
    data = _separable(4, 6)
    return GridNetLearner(_space_with_sources(["a"] * 4, data.train_grids), make_grid_net("cnn", 2, channels=4), "cnn")


@pytest.mark.parametrize("call, match", [
    (lambda: make_grid_net("vgg", 3), r"unknown grid net 'vgg' \(expected one of mlp, cnn"),
    (lambda: make_grid_net("cnn", 1), r"GridCNN: n_classes must be a whole number >= 2, got 1"),
    (lambda: make_grid_net("cnn", 3, image_size=8), r"GridCNN: image_size must be a whole number >= 16"),
    (lambda: make_grid_net("mlp", 3, depth=4), r"grid net mlp: .*depth"),
    (lambda: make_grid_net("wren", 3)(torch.rand(2, 32, 32)), r"GridWReN: expected float pictures \(B, 3, 32, 32\)"),
    (lambda: make_grid_net("mlp", 3)(torch.zeros(2, 3, 32, 32, dtype=torch.uint8)), r"got \(2, 3, 32, 32\) torch.uint8"),
    (lambda: experiment_data("recursion"), r"no ConceptWorld experiment 'recursion' \(there are productivity"),
    (lambda: BaselineSettings(scale=0).check(), r"BaselineSettings.scale must be a positive number, got 0"),
    (lambda: BaselineSettings(epochs=1.5).check(), r"BaselineSettings.epochs must be a whole number >= 1"),
    (lambda: BaselineSettings(noise=(3, 1)).check(), r"BaselineSettings.noise must be \(lo, hi\)"),
    (lambda: grid_images(np.zeros((2, 32, 32)), GRID_COLORS), r"grid_images: expected int grids"),
    (lambda: grid_images(np.full((1, 32, 32), 7, np.int8), GRID_COLORS), r"colour indices must be in -1..4"),
    (lambda: f1_per_class([0, 1], [0], 2), r"f1_per_class: y_true and y_pred must be 1-D of one length"),
    (lambda: run_baselines(["alexnet"], ["scaling"]), r"no grid net 'alexnet'"),
    (lambda: run_baselines(["mlp"], ["scaling"], jobs=0), r"jobs must be a whole number >= 1, got 0"),
    (lambda: space_images(ExtensionSpace.from_extensions(np.ones((1, 2), bool), ["x"])), r"not a ConceptWorld space"),
    (lambda: GridNetLearner(ExtensionSpace.from_extensions(np.ones((1, 2), bool), ["x"]), None, "n"),
     r"GridNetLearner: not a ConceptWorld space"),
    (lambda: _learner().fit([0, 1], [1, 1]), r"cnn: labels must be 0/1, one per support scene, with both classes"),
    (lambda: _learner().fit([0, 99], [1, 0]), r"cnn: scene ids must be in 0..3"),
    (lambda: _learner().fit([0.5, 1.5], [1, 0]), r"cnn: scenes must be scene ids of the space \(ints\)"),
    (lambda: _learner().predict_proba([0]), r"cnn: call fit\(\) before predicting"),
])
def test_bad_input_is_one_line(call, match):
    with pytest.raises((GridNetError, BaselineError)) as info:
        call()
    assert "\n" not in str(info.value)
    info.match(match)
