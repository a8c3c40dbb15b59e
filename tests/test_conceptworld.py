"""ConceptWorld: grid scenes, the definitions file, the fast executor against the slow
interpreter, the generator, the space and the four protocols."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayes_concepts.suites.conceptworld.definitions import DefinitionsError, load_definitions
from bayes_concepts.suites.conceptworld.execute import evaluate_concepts
from bayes_concepts.suites.conceptworld.generate import break_scene, sample_scene, sample_scenes
from bayes_concepts.suites.conceptworld.interpret import Interpreter, interpret
from bayes_concepts.suites.conceptworld.space import conceptworld_space, experiment_splits
from bayes_concepts.errors import SceneError
from bayes_concepts.scenes.grid import (EMPTY, decode_grid, encode_grid, read_grids_jsonl, render_grids,
                                        write_grids_jsonl)

DEFS = load_definitions()
CONCEPTS = DEFS.instances(7)
KEY = {".": EMPTY, "b": 0, "r": 1, "g": 2, "y": 3, "w": 4, "c": 5, "m": 6, "o": 7}


def draw(*rows: str, at=(3, 3)) -> np.ndarray:
    """A 32 x 32 scene from a small drawing (one letter per point, ``.`` empty) at (x, y) = ``at``."""
    g = np.full((32, 32), EMPTY, np.int8)
    for dy, row in enumerate(rows):
        for dx, ch in enumerate(row.replace(" ", "")):
            g[at[1] + dy, at[0] + dx] = KEY[ch]
    return g


def both(concept: str, grid: np.ndarray) -> bool:
    """The concept on the scene by both executors, which must agree."""
    fast = bool(evaluate_concepts(DEFS, [concept], grid[None])[0, 0])
    slow = interpret(DEFS, concept, grid)
    assert fast == slow, (concept, fast, slow)
    return fast


# ------------------------------------------------------------- Table 1, drawn by hand
def test_a_2x2_square_of_any_colours_and_not_three_points():
    assert both("square", draw("rb", "gy"))
    assert not both("square", draw("rb", "g."))
    assert not both("square", draw("r.b", "g.y"))
    assert both("red_square", draw("rr", "rr")) and not both("red_square", draw("rr", "rb"))


def test_the_f_and_z_pentominoes_and_not_their_mirror_images():
    f = draw(".rr", "rr.", ".r.")
    assert both("f_pent", f) and not both("z_pent", f)
    assert not both("f_pent", draw("rr.", ".rr", ".r."))  # the mirrored F
    assert not both("f_pent", draw(".rr", "rb.", ".r."))  # points of two colours
    z = draw("gg.", ".g.", ".gg")
    assert both("z_pent", z) and not both("f_pent", z)
    assert not both("z_pent", draw(".gg", ".g.", "gg."))  # S, the mirrored Z


def test_f_pent_west_of_z_pent():
    scene = draw(".rr.....gg.", "rr.......g.", ".r.......gg")
    assert both("f_pent_west_z_pent", scene)
    swapped = draw("gg.....rr.", ".g....rr..", ".gg....r..")
    assert not both("f_pent_west_z_pent", swapped)
    overlapping_columns = draw(".rr.", "rr..", ".rgg", "...g", "...gg")  # not every point of F west of Z
    assert not both("f_pent_west_z_pent", overlapping_columns)


def test_red_and_blue_sequences_of_length_3():
    red3 = draw("rrrrrr", "rrrrrr")
    assert both("red_seq 3", red3) and both("red_seq 2", red3) and not both("red_seq 4", red3)
    assert not both("blue_seq 3", red3)
    blue3 = draw("bb....", "bbbb..", "..bbbb", "....bb")  # east1 lets each square step one row
    assert both("blue_seq 3", blue3)
    gap = draw("rr.rrrr", "rr.rrrr")
    assert not both("red_seq 3", gap) and both("red_seq 2", gap)
    mixed = draw("rrbbrr", "rrbbrr")
    assert both("mixed_seq 3", mixed) and not both("red_seq 3", mixed) and not both("mixed_seq 3", red3)


def test_a_broken_box_world_chain_is_a_distractor_not_a_solution():
    # free key red; [blue key][red lock]; [white gem][blue lock]
    solved = np.maximum(np.maximum(draw("rr", "rr", at=(2, 2)), draw("bbrr", "bbrr", at=(10, 2))),
                        draw("wwbb", "wwbb", at=(10, 10)))
    assert both("solution 2", solved) and not both("solution 1", solved) and not both("distractor 2", solved)
    broken = solved.copy()
    broken[2:4, 10:12] = KEY["g"]  # the locked key is green: it opens no lock
    assert not both("solution 2", broken) and both("distractor 2", broken)
    no_key = solved.copy()
    no_key[2:4, 2:4] = EMPTY
    assert not both("solution 2", no_key) and not both("distractor 2", no_key)


def test_patterns_at_two_scales():
    checker = draw("rb", "br")
    assert both("checkerboard_2x2", checker) and not both("stripes_2x2", checker)
    assert both("stripes_2x2", draw("rb", "rb"))
    big = draw("rrbb", "rrbb", "bbrr", "bbrr")
    assert both("checkerboard_4x4", big) and both("checkerboard_2x2", big) and not both("stripes_4x4", big)
    assert both("stripes_4x4", draw("rrbb", "rrbb", "rrbb", "rrbb"))


# --------------------------------------------------- fast executor == slow interpreter
def _random_scene(seed: int) -> np.ndarray:
    """A generated scene of a random concept, then randomly edited: points removed,
    recoloured and added near it, and a random filled block -- near misses of everything."""
    rng = np.random.default_rng(seed)
    c = CONCEPTS[int(rng.integers(len(CONCEPTS)))]
    g, m = sample_scene(DEFS, c, rng, (0, 4))
    occupied = np.argwhere(g != EMPTY)
    for _ in range(int(rng.integers(0, 4))):
        y, x = occupied[int(rng.integers(len(occupied)))]
        g[y, x] = EMPTY if rng.random() < 0.5 else int(rng.integers(DEFS.n_colors))
    for _ in range(int(rng.integers(0, 6))):
        y, x = occupied[int(rng.integers(len(occupied)))] + rng.integers(-2, 3, size=2)
        if 0 <= y < 32 and 0 <= x < 32:
            g[y, x] = int(rng.integers(DEFS.n_colors))
    if rng.random() < 0.4:
        y, x = rng.integers(0, 28, size=2)
        g[y:y + int(rng.integers(2, 5)), x:x + int(rng.integers(2, 5))] = int(rng.integers(DEFS.n_colors))
    return g


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_fast_equals_slow_on_random_grids_and_every_concept(seed):
    g = _random_scene(seed)
    fast = evaluate_concepts(DEFS, CONCEPTS, g[None])[:, 0]
    slow = Interpreter(DEFS, g)
    for c, f in zip(CONCEPTS, fast):
        assert bool(f) == slow.holds(c), (c.name, encode_grid(g))


def test_fast_equals_slow_on_generated_scenes_in_a_batch():
    rng = np.random.default_rng(7)
    grids = np.stack([_random_scene(int(s)) for s in rng.integers(0, 2**31, size=12)])
    fast = evaluate_concepts(DEFS, CONCEPTS, grids, chunk=5)  # several chunks
    for j, g in enumerate(grids):
        slow = Interpreter(DEFS, g)
        assert [slow.holds(c) for c in CONCEPTS] == fast[:, j].tolist()


# -------------------------------------------------------------------- the generator
@pytest.mark.parametrize("concept", CONCEPTS, ids=lambda c: c.name)
def test_sampled_scenes_satisfy_their_concept_and_broken_ones_do_not(concept):
    """(benchmarks/conceptworld.py checks 10,000 draws per concept.)"""
    grids, masks = sample_scenes(DEFS, concept, 25, seed=3)
    assert evaluate_concepts(DEFS, [concept], grids)[0].all()
    assert all(interpret(DEFS, concept, g) for g in grids[:2])
    rng = np.random.default_rng(4)
    broken = np.stack([break_scene(g, m, rng) for g, m in zip(grids, masks)])
    assert not evaluate_concepts(DEFS, [concept], broken)[0].any()
    assert not interpret(DEFS, concept, broken[0])


def test_generation_is_seeded():
    a, _ = sample_scenes(DEFS, "f_pent_west_z_pent", 3, seed=5)
    b, _ = sample_scenes(DEFS, "f_pent_west_z_pent", 3, seed=5)
    assert np.array_equal(a, b)


# ---------------------------------------------------------------- files and pictures
def test_grid_jsonl_round_trip_and_bad_lines(tmp_path):
    grids, _ = sample_scenes(DEFS, "mixed_seq 3", 4, seed=1)
    p = tmp_path / "scenes.jsonl"
    write_grids_jsonl(p, grids, DEFS.colors)
    assert np.array_equal(read_grids_jsonl(p, DEFS.colors), grids)
    assert np.array_equal(decode_grid(encode_grid(grids[0])), grids[0])
    p.write_text(json.dumps({"size": 32, "points": [[1, 2, "red"], [40, 2, "red"]]}) + "\n")
    with pytest.raises(SceneError, match=r"line 1: points\[1\]\.x"):
        read_grids_jsonl(p)
    p.write_text(json.dumps({"size": 32, "points": [[1, 2, "pink"]]}) + "\n")
    with pytest.raises(SceneError, match="line 1.*'pink' is not one of"):
        read_grids_jsonl(p)


def test_render_draws_one_pixel_per_point():
    g = draw("rb", at=(0, 0))
    img = render_grids(g, DEFS.colors)
    assert img.shape == (1, 32, 32, 3) and img.dtype == np.uint8
    assert tuple(img[0, 0, 0]) == (230, 30, 30) and tuple(img[0, 5, 5]) == (0, 0, 0)
    assert render_grids(g, DEFS.colors, scale=4).shape == (1, 128, 128, 3)


# ---------------------------------------------------------------- the definitions file
@pytest.mark.parametrize("body, message", [
    ('[point]\nnear = "b.x > a.x"\n[object.bad]\nparts = ["p1", "p2"]\nwhere = "near(p1, p2)"\n',
     r"\[point\] near: used in a shape, but it is not a unit offset"),
    ('[point]\ne1 = "b.x == a.x + 1 and b.y == a.y"\n[object.bad]\nparts = ["p1", "p2", "p3"]\n'
     'where = "e1(p1, p2)"\n', r"\[object.bad\]: point p3 is not tied"),
    ('[point]\ne1 = "b.x == a.x + 1 and b.y == a.y"\n[object.bad]\nparts = ["p1", "p2"]\n'
     'where = "e1(p1, p2) and e1(p2, p1)"\n', "contradict"),
    ('[point]\ne1 = "b.x == a.x +"\n', r"\[point\] e1: not an expression"),
    ('[point]\ne1 = "b.x == a.x + 1 and b.y == a.y and a.color == \'pink\'"\n', "colour 'pink'"),
    ('[relation]\nr = "foo(X, Y)"\n', "'foo' is not defined"),
])
def test_a_bad_definition_is_a_one_line_error_naming_the_entry(tmp_path, body, message):
    p = tmp_path / "defs.toml"
    p.write_text('[grid]\ncolors = ["blue", "red"]\n' + body)
    with pytest.raises(DefinitionsError, match=message) as err:
        load_definitions(p)
    assert "\n" not in str(err.value) and str(p) in str(err.value)


def test_a_user_can_add_a_concept_defined_from_others(tmp_path):
    text = DEFS.source and open(DEFS.source).read()
    p = tmp_path / "more.toml"
    p.write_text(text + '\n[concept.blue_square_north_of_f]\nexists = "f_pent(X) and blue_square(Y) and north(X, Y)"\n')
    defs = load_definitions(p)
    scene = draw("bb..", "bb..", "....", ".gg.", "gg..", ".g..")
    assert evaluate_concepts(defs, ["blue_square_north_of_f"], scene[None])[0, 0]
    assert interpret(defs, "blue_square_north_of_f", scene)
    grids, _ = sample_scenes(defs, "blue_square_north_of_f", 5, seed=0)
    assert evaluate_concepts(defs, ["blue_square_north_of_f"], grids)[0].all()


# ------------------------------------------------------------ the space and protocols
@pytest.fixture(scope="module")
def small_space():
    return conceptworld_space(depth=7, per_concept=12, broken_per_concept=3, noise_scenes=20, seed=1)


def test_the_space_holds_every_concept_and_its_scenes(small_space):
    s = small_space
    assert s.n_concepts == len(CONCEPTS) and s.counts.min() >= 12
    grids = s.grids()
    assert grids.shape == (s.n_scenes, 32, 32)
    j = s.find("red_seq 3")
    assert np.array_equal(evaluate_concepts(DEFS, ["red_seq 3"], grids)[0], s.signature(j))


@pytest.mark.parametrize("experiment, splits", [
    ("productivity", {"length_3", "length_5", "length_7"}), ("boxworld", {"length_3", "length_5"}),
    ("scaling", {"2x2_to_4x4"}), ("substitution", {"1_substitution", "2_substitutions"})])
def test_each_experiment_gives_a_split_per_condition(small_space, experiment, splits):
    from bayes_concepts.protocols import get_protocol
    got = get_protocol(f"conceptworld-{experiment}").splits(small_space)
    assert set(got) == splits
    for sp in got.values():
        assert not np.intersect1d(sp.train, sp.test).size and len(sp.strong_concepts) == small_space.n_concepts


def test_a_protocol_gap_runs_and_grows_with_length(small_space):
    from bayes_concepts.gap import summarise
    from bayes_concepts.protocols import get_protocol
    proto = get_protocol("conceptworld-productivity")
    ds = proto.compute_gap(small_space, negatives=("hard",), n_episodes=60, seed=0)
    rows = {r["split"]: r for r in summarise(ds, n_boot=200)}
    assert rows["length_7"]["gap"]["map"] > rows["length_3"]["gap"]["map"] > 0
    assert all(r["strong"]["map"] > 90 for r in rows.values())
    assert "ResNet" in proto.results_note(ds)


def test_shallow_space_leaves_out_deep_conditions():
    s = conceptworld_space(depth=3, per_concept=11, broken_per_concept=1, noise_scenes=5, seed=0)
    assert set(experiment_splits(s, "productivity")) == {"length_3"}
    with pytest.raises(DefinitionsError, match="no split 'length_5'"):
        experiment_splits(s, "productivity", ["length_5"])


def test_cli_builds_and_scores(tmp_path, capsys):
    from bayes_concepts.cli import main
    out = tmp_path / "cw"
    assert main(["space", "build", str(out), "--preset", "conceptworld", "--max-depth", "3", "--scenes", "11",
                 "--quiet"]) == 0
    assert main(["gap", str(out), "--protocol", "conceptworld-scaling", "--episodes", "30", "--negatives",
                 "hard"]) == 0
    text = capsys.readouterr().out
    assert "2x2_to_4x4" in text and "Table 8" in text and "multi-class form" in text
    assert main(["space", "build", str(tmp_path / "x"), "--preset", "conceptworld", "--samples", "5"]) == 2
    assert "--samples does not apply" in capsys.readouterr().err


# ------------------------------------------------------------ render on a saved space
@pytest.fixture(scope="module")
def saved_space(tmp_path_factory):
    from bayes_concepts.cli import main
    from bayes_concepts.spaces.concept_space import load_space
    out = tmp_path_factory.mktemp("cw") / "space"
    assert main(["space", "build", str(out), "--preset", "conceptworld", "--max-depth", "3", "--scenes", "11",
                 "--quiet"]) == 0
    return load_space(out)


def test_render_draws_a_conceptworld_scene_as_its_grid_picture(saved_space, tmp_path, capsys):
    from PIL import Image

    from bayes_concepts.cli import main
    s = saved_space
    j = int(s.items(s.find("f_pent_west_z_pent"))[0])
    grid = s.grids()[j]
    assert interpret(DEFS, "f_pent_west_z_pent", grid)
    png, big = tmp_path / "scene.png", tmp_path / "big.png"
    assert main(["render", str(s.path), str(j), "--out", str(png)]) == 0
    assert f"scene {j} written to {png} (32 x 32 grid picture" in capsys.readouterr().out
    with Image.open(png) as im:
        assert im.format == "PNG" and im.size == (32, 32)
        pixels = np.asarray(im.convert("RGB"))
    np.testing.assert_array_equal(pixels, render_grids(grid, DEFS.colors)[0])
    assert (pixels.any(axis=-1)).sum() == (grid != EMPTY).sum()  # one pixel a point, black elsewhere
    assert main(["render", str(s.path), str(j), "--out", str(big), "--height", "256", "--width", "256"]) == 0
    with Image.open(big) as im:
        assert im.size == (256, 256)
        np.testing.assert_array_equal(np.asarray(im.convert("RGB")), render_grids(grid, DEFS.colors, scale=8)[0])


@pytest.mark.parametrize("argv_tail, message", [
    (["3", "--sound", "--out", "{tmp}/a.wav"], "render --sound: {space} is a ConceptWorld space"),
    (["3", "--out", "{tmp}/a.png", "--height", "100", "--width", "100"],
     "render --height 100 --width 100: {space} is a ConceptWorld space of 32 x 32 grids"),
    (["3", "--out", "{tmp}/a.png", "--height", "64"], "render --height 64: {space} is a ConceptWorld space"),
    (["3", "--out", "{tmp}/a.png", "--height", "64", "--width", "96"], "the picture is square"),
    (["--bank"], "render --bank: {space} is a ConceptWorld space"),
    (["99999", "--out", "{tmp}/a.png"], "scene id 99999 out of range"),
])
def test_render_refuses_what_does_not_apply_to_grids(saved_space, tmp_path, capsys, argv_tail, message):
    from bayes_concepts.cli import main
    argv = ["render", str(saved_space.path)] + [a.format(tmp=tmp_path) for a in argv_tail]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message.format(space=saved_space.path) in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------ the multi-class form
class _Knows:
    """A stub learner whose posterior is one fixed concept set, uniform (empty: no hypothesis)."""

    def __init__(self, ids):
        self.ids = np.asarray(ids, np.int64)

    def fit(self, scenes, labels, hard=True):
        assert not hard and labels.sum() == 5 and len(labels) == len(scenes)
        self.pos = np.asarray(scenes)[np.asarray(labels) == 1]
        return self

    def posterior(self):
        return self.ids, np.full(len(self.ids), 1.0 / max(len(self.ids), 1))


def test_multiclass_accuracy_of_known_learners(small_space):
    from bayes_concepts.suites.conceptworld.multiclass import _credit, multiclass_accuracy
    from bayes_concepts.protocols import get_protocol
    split = get_protocol("conceptworld-scaling").splits(small_space)["2x2_to_4x4"]
    assert _credit(np.zeros((2, 4)), np.array([0, 3])).tolist() == [0.25, 0.25]
    assert _credit(np.array([[0.0, 2.0, 2.0]]), np.array([1])).tolist() == [0.5]

    class Perfect(_Knows):  # the class's own concept: what the positives share among the test concepts
        def posterior(self):
            own = [i for i in split.test if all(small_space.signature(int(i))[self.pos])]
            return np.asarray(own, np.int64), np.full(len(own), 1.0 / len(own))

    r = multiclass_accuracy(small_space, split, {"perfect": Perfect([]), "none": _Knows([])}, n_episodes=20)
    assert r["K"] == 4 and r["classes"] == [small_space.programs[i] for i in split.test] and not r["excluded"]
    assert r["accuracy"] == {"perfect": 100.0, "none": 25.0} and r["chance"] == 25.0
    assert "gap" not in r and r["interval"]["none"] == [25.0, 25.0]
    with pytest.raises(DefinitionsError, match="shots must be a whole number >= 1, got 0"):
        multiclass_accuracy(small_space, split, {}, shots=0)
    tiny = multiclass_accuracy(small_space, split, {"none": _Knows([])}, shots=500, n_episodes=2)
    assert tiny["K"] == 0 and "no multi-class task" in tiny["note"] and len(tiny["excluded"]) == 4


def test_the_protocols_report_multiclass_accuracy_beside_the_gap(small_space):
    from bayes_concepts.suites.conceptworld.multiclass import format_multiclass
    from bayes_concepts.protocols import get_protocol
    for experiment in ("productivity", "substitution"):
        proto = get_protocol(f"conceptworld-{experiment}")
        ds = proto.compute_gap(small_space, negatives=("hard",), n_episodes=40, seed=0)
        mc = json.loads(ds.attrs["multiclass"])
        assert set(mc) == {str(s) for s in ds["split"].values}
        for r in mc.values():
            assert r["episodes"] == 40 and r["K"] >= 2
            assert r["accuracy"]["strong"] == 100.0  # the strong oracle knows every concept of the condition
            assert r["chance"] - 1e-9 <= r["accuracy"]["weak"] < r["accuracy"]["strong"]
            assert r["gap"] == pytest.approx(r["accuracy"]["strong"] - r["accuracy"]["weak"])
            assert r["gap_interval"][0] <= r["gap"] <= r["gap_interval"][1]
        note = proto.results_note(ds)
        assert format_multiclass(mc) in note and "multi-class form" in note
