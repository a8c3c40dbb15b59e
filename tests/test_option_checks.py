"""Issue 56, items B and C: the ladder's options checked before any work, --split taking several
names everywhere, an option given twice refused, and episodes --protocol."""
from __future__ import annotations

import time

import numpy as np
import pytest

from conftest import assert_one_line_error, run


@pytest.fixture
def no_work(monkeypatch):
    """Drawing episodes or scoring fails the test if reached: refusals come before any work."""
    import bayes_concepts.episodes
    import bayes_concepts.gap
    import bayes_concepts.ladder

    def boom(*a, **k):
        raise AssertionError("work started before the options were checked")
    for module, name in ((bayes_concepts.ladder, "ladder_profile"), (bayes_concepts.gap, "compute_gap"),
                         (bayes_concepts.episodes, "sample_episodes"), (bayes_concepts.episodes, "episode_shapes")):
        monkeypatch.setattr(module, name, boom)


# ------------------------------------------------------------------ B: the ladder's checks
def test_ladder_without_strong_is_refused_before_work_naming_the_fix(small_space_dir, capsys, no_work):
    t = time.perf_counter()
    status, _, err = run(["ladder", small_space_dir, "--rungs", "memoriser", "compound", "atom",
                          "--split", "counting", "--episodes", "50"], capsys)
    assert time.perf_counter() - t < 5
    assert_one_line_error(status, err, "strong oracle is missing", "add strong",
                          "--rungs memoriser compound atom strong")


@pytest.mark.parametrize("rungs, option, values, needle", [
    (["memoriser", "strong"], "--alpha", ["2"], "no learned-prior rung"),
    (["memoriser", "strong", "learned_prior[alpha=3]"], "--alpha", ["2", "5"], "no learned-prior rung"),
    (["memoriser", "atom", "strong"], "--budget", ["10", "100"], "no sampling rung"),
])
def test_a_curve_no_chosen_rung_takes_is_refused_not_ignored(small_space_dir, capsys, no_work, rungs, option,
                                                             values, needle):
    status, _, err = run(["ladder", small_space_dir, "--rungs", *rungs, option, *values, "--split", "counting",
                          "--episodes", "50"], capsys)
    assert_one_line_error(status, err, f"{option} {' '.join(values)}", needle, f"leave {option} out")


def test_a_curve_a_chosen_rung_takes_passes_the_check(small_space_dir, capsys, no_work):
    # the check lets it through: the next thing reached is the (patched) work
    with pytest.raises(AssertionError, match="work started"):
        run(["ladder", small_space_dir, "--rungs", "memoriser", "learned_prior", "strong", "--alpha", "2",
             "--split", "counting", "--episodes", "5", "--published", "none"], capsys)


# ------------------------------------------------------------------ C: options given twice, several splits
@pytest.mark.parametrize("argv, option", [
    (["gap", "SPACE", "--split", "counting", "--split", "boolean"], "--split"),
    (["ladder", "SPACE", "--split", "counting", "--split", "boolean"], "--split"),
    (["gap", "SPACE", "--episodes", "10", "--episodes", "20"], "--episodes"),
    (["gap", "SPACE", "--prior", "length", "--prior", "uniform"], "--prior"),  # a Given option
    (["gap", "SPACE", "--json", "--json"], "--json"),
    (["episodes", "SPACE", "--split", "a", "--negatives", "hard", "--n", "1", "--out", "e.npz", "--n", "2"], "--n"),
    (["audit", "SPACE", "--spec", "a.toml", "--spec", "b.toml"], "--spec"),
])
def test_an_option_given_twice_is_one_line_naming_it(argv, option, capsys, no_work):
    status, _, err = run(argv, capsys)
    assert_one_line_error(status, err, f"{option} given twice")


def test_repeatable_options_still_repeat(small_space_dir, capsys, no_work):
    with pytest.raises(AssertionError, match="work started"):  # --learner is meant to be repeated
        run(["gap", small_space_dir, "--split", "counting", "--episodes", "5", "--learner", "random",
             "--learner", "prototype"], capsys)


def test_gap_scores_several_splits_named_after_one_split(small_space_dir, capsys):
    status, out, err = run(["gap", small_space_dir, "--split", "counting", "boolean", "--episodes", "20", "--json"],
                           capsys)
    assert status == 0, err
    import json
    assert sorted({r["split"] for r in json.loads(out)["results"]}) == ["boolean", "counting"]


def test_all_beside_split_names_is_refused(small_space_dir, capsys, no_work):
    status, _, err = run(["gap", small_space_dir, "--split", "all", "counting"], capsys)
    assert_one_line_error(status, err, "--split all counting", "'all' stands alone")


@pytest.mark.parametrize("argv, needle", [
    (["episodes", "SPACE", "--split", "counting", "boolean", "--negatives", "hard", "--n", "1", "--out", "e.npz"],
     "an episodes file holds the episodes of one split"),
    (["train", "SPACE", "--split", "counting", "boolean", "--learner", "schema-average", "--out", "M"],
     "a model is trained on one split"),
])
def test_one_split_commands_say_why_several_are_refused(argv, needle, small_space_dir, tmp_path, capsys, no_work,
                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, _, err = run([small_space_dir if a == "SPACE" else a for a in argv], capsys)
    assert_one_line_error(status, err, "--split counting boolean", needle)


# ------------------------------------------------------------------ C: episodes --protocol
def test_episodes_draws_a_closure_family_with_protocol(clevr_space_dir, tmp_path, capsys):
    from bayes_concepts.episodes import Episodes
    from bayes_concepts.protocols import get_protocol
    from bayes_concepts.spaces import load_space
    space = load_space(clevr_space_dir)
    protocol = get_protocol("closure")
    family = sorted(protocol.splits(space))[0]
    out = tmp_path / "e.npz"
    status, text, err = run(["episodes", clevr_space_dir, "--protocol", "closure", "--split", family,
                             "--negatives", "hard", "--n", "6", "--out", out], capsys)
    assert status == 0, err
    eps = Episodes.load(out)
    assert len(eps) == 6 and eps.meta["protocol"] == "closure" and eps.meta["split"] == family
    test = set(protocol.splits_with(space, [family])[family].test.tolist())
    assert set(np.asarray(eps.concept).tolist()) <= test  # drawn from the family's test concepts
    # without --protocol the family is not a split of the space
    status, _, err = run(["episodes", clevr_space_dir, "--split", family, "--negatives", "hard", "--n", "6",
                          "--out", tmp_path / "f.npz"], capsys)
    assert status == 2 and family in err and not (tmp_path / "f.npz").exists()
