"""Issue 42, what was left: ``gap``, ``audit`` and ``ladder`` on a pair space with a split no
episode can be drawn from refuse up front in one line naming the split, the counts and the fix
(item 6 for every command, not the audit alone), and they repeat the notes of the space's build
(``params["layout_notes"]``: e.g. attributes ``seen_attrs.txt`` lists that no seen pair uses).

The fixture is hxm97's published layout (``tests/fixtures/pairs_hxm97/``), its pairs also
written in CZSL's own layout for a space of synthetic items."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from bayes_concepts.cli import main
from bayes_concepts.episodes import EpisodeError, episode_shapes
from bayes_concepts.gap import compute_gap
from bayes_concepts.ladder import ladder_profile
from bayes_concepts.splits import make_split
from bayes_concepts.suites.pairs import pair_space, read_pairs_layout
from conftest import czsl_pairs

HX = Path(__file__).resolve().parent / "fixtures" / "pairs_hxm97"
IMGS, PAIRS = HX / "mitstates_img_split", HX / "mitstates_pair_split"


def _run(capsys, *argv):
    rc = main([str(a) for a in argv])
    return rc, capsys.readouterr()


@pytest.fixture
def five_per_pair(tmp_path, capsys) -> Path:
    """A saved pair space of 5 synthetic items per pair, with splits unseen_pairs (no test
    concept has the 10 items of a 5+20 episode) and seen_k1 (1 test concept has)."""
    out = tmp_path / "s"
    rc, io = _run(capsys, "space", "from-pairs", out, "--pairs-dir", czsl_pairs(tmp_path), "--items-per-pair", "5",
                  "--k", "1")
    assert rc == 0, io.err
    return out


# ======================================== a split no episode can be drawn from: one line, up front
def _assert_names_split_counts_and_fix(text: str):
    assert "split unseen_pairs: none of its 7 test concepts has 10 or more items" in text, text
    assert "(5 support + 5 query positives)" in text
    assert "rebuild with --items-per-pair >= 10 (each pair has 5 synthetic items now)" in text
    assert "--episode-shape 2,20,3,20" in text


@pytest.mark.parametrize("command", ["gap", "ladder", "audit"])
def test_undrawable_split_is_one_line_naming_split_counts_and_fix(five_per_pair, capsys, command):
    rc, io = _run(capsys, command, five_per_pair, "--episodes", "10")
    err = io.err.strip().splitlines()
    assert rc == 2 and len(err) == 1, io.err
    _assert_names_split_counts_and_fix(err[0])
    assert "comp gap" not in io.err  # refused before the first cell, not inside the sampler


def test_undrawable_split_is_refused_before_the_ladder_builds_its_rungs(five_per_pair, capsys, monkeypatch):
    import bayes_concepts.ladder as ladder

    def never(*args, **kwargs):
        raise AssertionError("the ladder ran on a split no episode can be drawn from")

    monkeypatch.setattr(ladder, "rung_learner", never)  # the library refuses before it makes any rung
    rc, io = _run(capsys, "ladder", five_per_pair, "--episodes", "10")
    assert rc == 2 and "split unseen_pairs" in io.err, io.err


def test_a_split_with_one_drawable_concept_still_runs_and_the_suggested_shape_works(five_per_pair, capsys):
    rc, io = _run(capsys, "gap", five_per_pair, "--episodes", "4", "--split", "seen_k1", "--negatives", "hard")
    assert rc == 0, io.err
    assert "seen_k1: episodes 5+20 support, 5+20 query; 1 usable test concept" in io.out
    rc, io = _run(capsys, "gap", five_per_pair, "--episodes", "4", "--split", "unseen_pairs", "--negatives", "hard",
                  "--episode-shape", "2,20,3,20")
    assert rc == 0, io.err
    assert "unseen_pairs: episodes 2+20 support, 3+20 query; 7 usable test concepts, 0 excluded" in io.out


def _unseen_split(space):
    return make_split(space, tomllib.loads(space.spec_files["unseen_pairs.toml"]))


def test_compute_gap_and_ladder_profile_refuse_with_the_split_and_the_fix(tmp_path):
    space = pair_space(read_pairs_layout(None, czsl_pairs(tmp_path), items_per_pair=5))
    splits = {"unseen_pairs": _unseen_split(space)}
    for run in (lambda: compute_gap(space, splits, "hard", 4), lambda: ladder_profile(space, splits, n_episodes=4),
                lambda: episode_shapes(space, splits)):
        with pytest.raises(EpisodeError) as exc:
            run()
        _assert_names_split_counts_and_fix(str(exc.value))
        assert "\n" not in str(exc.value)


def test_real_items_too_few_name_the_episode_shape_and_a_fitting_shape_runs():
    space = pair_space(read_pairs_layout(IMGS, PAIRS))  # 3 images per test pair
    splits = {"unseen_pairs": _unseen_split(space)}
    with pytest.raises(EpisodeError, match=r"split unseen_pairs: none of its 7 test concepts has 10 or more items") \
            as exc:
        compute_gap(space, splits, "hard", 4)
    assert "--items-per-pair" not in str(exc.value)
    assert "--episode-shape 1,20,2,20" in str(exc.value)  # 3 items: 1 support + 2 query positives
    ds = compute_gap(space, splits, "hard", 4, episode_shape="1,5,2,5")
    assert json.loads(ds.attrs["excluded"])["unseen_pairs"]["usable"] == 7


def test_a_space_of_scenes_says_scenes(tmp_path):
    """Outside a pair space the unit is the space's: scenes."""
    space = pair_space(read_pairs_layout(None, czsl_pairs(tmp_path), items_per_pair=5))
    space.params.pop("kind")
    with pytest.raises(EpisodeError, match="has 10 or more scenes"):
        episode_shapes(space, {"unseen_pairs": _unseen_split(space)})


# ============================================================== the build's notes, repeated
NOTES = ("noted by the space's build, seen attrs unused: 1 (shiny): attributes seen_attrs.txt lists that no seen "
         "pair uses: novel atoms of the split",
         "noted by the space's build, seen objs omitted: 1 (car): objects a seen pair uses that seen_objs.txt does "
         "not list")


@pytest.fixture
def hxm97_space(tmp_path, capsys) -> Path:
    out = tmp_path / "hx"
    rc, io = _run(capsys, "space", "from-pairs", out, "--items", IMGS, "--pairs-dir", PAIRS, "--k", "1")
    assert rc == 0 and "note: 1 attribute of seen_attrs.txt in no seen pair (shiny)" in io.out, io.err
    return out


def test_gap_repeats_the_layout_notes(hxm97_space, capsys):
    rc, io = _run(capsys, "gap", hxm97_space, "--episodes", "4", "--negatives", "hard", "--episode-shape", "1,5,1,5")
    assert rc == 0, io.err
    for note in NOTES:
        assert note in io.out, io.out
    assert "left out by the space's build, val pairs: 2 (wet car, dry fish)" in io.out  # as before


@pytest.mark.parametrize("split", ["unseen_pairs", "all"])
def test_audit_repeats_the_layout_notes(hxm97_space, capsys, split):
    rc, io = _run(capsys, "audit", hxm97_space, "--episodes", "4", "--episode-shape", "1,5,1,5", "--split", split)
    assert rc == 0, io.err
    for note in NOTES:
        assert io.out.count(note) == 1, io.out


def test_a_space_without_notes_has_no_note_lines(five_per_pair, capsys):
    rc, io = _run(capsys, "gap", five_per_pair, "--episodes", "4", "--split", "seen_k1", "--negatives", "hard")
    assert rc == 0 and "noted by the space's build" not in io.out, io.err

