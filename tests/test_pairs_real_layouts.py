"""Issue 42: the real files' layouts as published -- hxm97's realistic-CZSL ``img_split`` and
``pair_split`` (item 7), and a split whose test concepts cannot be drawn (item 6).

The fixture (``tests/fixtures/pairs_hxm97/``) is a few lines written by hand in hxm97's
format (``folder/file attribute object``, no header; ``seen_pairs.txt`` + ``*_unseen_comps`` /
``*_unseen_pairs``; ``seen_attrs.txt`` naming ``shiny``, which only an unseen pair uses, and
``seen_objs.txt`` leaving out ``car``, which seen pairs use)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bayes_concepts.cli import main
from bayes_concepts.errors import BayesConceptsError
from bayes_concepts.suites.pairs import PairsLayoutError, pair_space, read_pairs_layout
from bayes_concepts.report import audit_splits
from bayes_concepts.splits import make_split
from conftest import czsl_pairs

HX = Path(__file__).resolve().parent / "fixtures" / "pairs_hxm97"
IMGS, PAIRS = HX / "mitstates_img_split", HX / "mitstates_pair_split"


def _run(capsys, *argv):
    rc = main([str(a) for a in argv])
    return rc, capsys.readouterr()


# ============================================================ item 7: hxm97's two layouts
def test_hxm97_img_split_is_read_as_items_with_the_set_from_the_file_name():
    layout = read_pairs_layout(IMGS, PAIRS)
    assert layout.n_items == 18 + 5 + 13
    assert layout.items[0] == "wet_dog/img00.jpg" and layout.attributes[0] == "wet" and layout.objects[0] == "dog"
    assert layout.sets[:18] == ["train"] * 18 and layout.sets[18:23] == ["val"] * 5 and layout.sets[-1] == "test"
    for name in ("train_imgs.txt", "val_imgs.txt", "test_imgs.txt", "seen_pairs.txt", "seen_attrs.txt"):
        assert len(layout.sources[name]) == 64
    one = read_pairs_layout(IMGS / "train_imgs.txt", PAIRS)  # one list alone: its items only
    assert one.n_items == 18 and set(one.sets) == {"train"}


def test_a_malformed_img_split_line_names_file_and_line(tmp_path):
    d = tmp_path / "img"
    d.mkdir()
    (d / "train_imgs.txt").write_text("wet_dog/1.jpg wet dog\nwet_dog/2.jpg wet\n")
    with pytest.raises(PairsLayoutError, match=r"train_imgs.txt line 2: expected 'path attribute object'"):
        read_pairs_layout(d, PAIRS)


def test_hxm97_pair_split_is_joined_into_train_val_test():
    layout = read_pairs_layout(IMGS, PAIRS)
    assert layout.pairs["train"] == [("wet", "dog"), ("wet", "cat"), ("dry", "dog"), ("dry", "car"), ("old", "cat"),
                                     ("old", "car")]
    assert layout.pairs["val"] == [("wet", "car"), ("dry", "fish")]
    assert layout.pairs["test"] == [("dry", "cat"), ("old", "dog"), ("shiny", "boat"), ("new", "dog")]
    synthetic = read_pairs_layout(None, PAIRS, items_per_pair=4)  # the pair split alone
    assert synthetic.pairs == layout.pairs and synthetic.n_items == 4 * 12


def test_a_missing_hxm97_pair_file_is_one_line(tmp_path):
    d = tmp_path / "pairs"
    d.mkdir()
    for f in PAIRS.iterdir():
        if f.name != "test_unseen_pairs.txt":
            (d / f.name).write_bytes(f.read_bytes())
    with pytest.raises(PairsLayoutError, match=r"test_unseen_pairs.txt: missing \(hxm97's pair split"):
        read_pairs_layout(IMGS, d)


def test_seen_attrs_naming_no_seen_pair_are_counted_and_named(tmp_path, capsys):
    layout = read_pairs_layout(IMGS, PAIRS)
    assert layout.notes["seen_attrs_unused"]["count"] == 1 and layout.notes["seen_attrs_unused"]["first"] == ["shiny"]
    assert layout.notes["seen_objs_omitted"]["first"] == ["car"]
    space = pair_space(layout)
    assert space.params["layout_notes"] == layout.notes
    split = make_split(space, __import__("tomllib").loads(space.spec_files["unseen_pairs.toml"]))
    assert "shiny" in [space.descriptions[i] for i in split.test]  # a novel atom, as the seen pairs decide
    rc, io = _run(capsys, "space", "from-pairs", tmp_path / "s", "--items", IMGS, "--pairs-dir", PAIRS)
    assert rc == 0, io.err
    assert "note: 1 attribute of seen_attrs.txt in no seen pair (shiny)" in io.out
    assert "note: 1 object of a seen pair missing from seen_objs.txt (car)" in io.out
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert "shiny" in json.dumps(manifest)


# ===================================================== item 6: no test concept can be drawn
def test_undrawable_split_build_names_the_split_and_the_fix(tmp_path, capsys):
    rc, io = _run(capsys, "space", "from-pairs", tmp_path / "s", "--pairs-dir", czsl_pairs(tmp_path), "--items-per-pair", "5")
    assert rc == 0, io.err
    line = next(ln for ln in io.out.splitlines() if ln.startswith("split unseen_pairs"))
    assert "Split unseen_pairs: no test concept drawable" in line
    assert "--items-per-pair >= 10" in line and "--episode-shape" in line


def test_undrawable_split_audit_is_one_line_naming_split_and_fix(tmp_path, capsys):
    rc, io = _run(capsys, "space", "from-pairs", tmp_path / "s", "--pairs-dir", czsl_pairs(tmp_path), "--items-per-pair", "5")
    assert rc == 0, io.err
    rc, io = _run(capsys, "audit", tmp_path / "s", "--episodes", "20")
    err = io.err.strip().splitlines()
    assert rc == 2 and len(err) == 1, io.err
    assert "split unseen_pairs" in err[0] and "--items-per-pair >= 10" in err[0] and "--episode-shape" in err[0]


def test_undrawable_split_of_real_items_names_the_episode_shape_only():
    space = pair_space(read_pairs_layout(IMGS, PAIRS))  # 3 images per test pair: fewer than 10
    split = make_split(space, __import__("tomllib").loads(space.spec_files["unseen_pairs.toml"]))
    split_pairs_only = {"unseen_pairs": split}
    with pytest.raises(BayesConceptsError, match=r"split unseen_pairs: .*--episode-shape") as exc:
        audit_splits(space, split_pairs_only, n_episodes=10)
    assert "--items-per-pair" not in str(exc.value)


# ================================================ item 5: items whose pair no list names
def _with_unlisted(tmp_path) -> Path:
    """The fixture's image lists plus 2 items of ``wet boat`` (attribute and object both
    concepts) and 1 of ``pink hat`` (neither), pairs that no pair file names."""
    d = tmp_path / "img"
    d.mkdir()
    for f in IMGS.iterdir():
        (d / f.name).write_text(f.read_text())
    with open(d / "train_imgs.txt", "a") as f:
        f.write("wet_boat/a.jpg wet boat\nwet_boat/b.jpg wet boat\npink_hat/a.jpg pink hat\n")
    return d


def test_unlisted_pairs_are_counted_named_and_their_share_of_primitives_stated(tmp_path, capsys):
    layout = read_pairs_layout(_with_unlisted(tmp_path), PAIRS)
    note = layout.notes["unlisted_pairs"]
    assert note["count"] == 2 and note["items"] == 3 and note["first"] == ["wet boat (2)", "pink hat (1)"]
    assert note["joining"] == {"pairs": 1, "items": 2}
    space = pair_space(layout)
    assert space.n_scenes == 39 and space.params["layout_notes"]["unlisted_pairs"]["items"] == 3
    rc, io = _run(capsys, "space", "from-pairs", tmp_path / "s", "--items", tmp_path / "img", "--pairs-dir", PAIRS)
    assert rc == 0, io.err
    assert "note: 2 pairs no pair file names (wet boat (2), pink hat (1))" in io.out
    assert "those of 1 pair (2 items) whose attribute or object is a concept are positives" in io.out


def test_unlisted_drop_leaves_their_items_out_counted(tmp_path, capsys):
    layout = read_pairs_layout(_with_unlisted(tmp_path), PAIRS, unlisted="drop")
    assert layout.n_items == 36 and "unlisted_pairs" not in layout.notes
    ex = layout.exclusions()["unlisted_items"]
    assert ex["count"] == 2 and ex["items"] == 3 and ex["first"][0] == "wet boat (2)"
    space = pair_space(layout)
    wet = space.descriptions.index("wet")
    assert space.counts[wet] == 3 + 3 + 1 + 2 + 1  # wet dog, wet cat, val items; no wet boat
    rc, io = _run(capsys, "space", "from-pairs", tmp_path / "s", "--items", tmp_path / "img", "--pairs-dir", PAIRS,
                  "--unlisted", "drop")
    assert rc == 0, io.err
    assert "excluded: 2 pairs no pair file names, their items dropped (wet boat (2), pink hat (1))" in io.out
    with pytest.raises(PairsLayoutError, match="unlisted must be one of keep, drop"):
        read_pairs_layout(IMGS, PAIRS, unlisted="maybe")


def test_few_drawable_test_concepts_are_named_only_when_too_small_ones_are_the_cause(tmp_path, capsys):
    d = czsl_pairs(tmp_path)
    rc, io = _run(capsys, "space", "from-pairs", tmp_path / "s", "--pairs-dir", d, "--items-per-pair", "10")
    line = next(ln for ln in io.out.splitlines() if ln.startswith("split unseen_pairs"))
    assert rc == 0 and "7 test concepts can be drawn" in line and "Split unseen_pairs" not in line
    rc, io = _run(capsys, "space", "from-pairs", tmp_path / "t", "--items", IMGS, "--pairs-dir", PAIRS,
                  "--episode-shape", "2,5,1,5")  # 3 images per test pair: all drawable with 3 positives
    line = next(ln for ln in io.out.splitlines() if ln.startswith("split unseen_pairs"))
    assert rc == 0 and "Split unseen_pairs" not in line, line


def test_few_drawable_test_concepts_name_the_split_and_the_fix(tmp_path, capsys):
    d = tmp_path / "img"
    d.mkdir()
    for f in IMGS.iterdir():
        (d / f.name).write_text(f.read_text())
    with open(d / "test_imgs.txt", "a") as f:  # new dog: 5 images, the other test pairs 3
        f.write("new_dog/img10.jpg new dog\nnew_dog/img11.jpg new dog\n")
    rc, io = _run(capsys, "space", "from-pairs", tmp_path / "s", "--items", d, "--pairs-dir", PAIRS,
                  "--episode-shape", "2,5,2,5")
    line = next(ln for ln in io.out.splitlines() if ln.startswith("split unseen_pairs"))
    assert rc == 0 and "Split unseen_pairs: only 2 test concepts drawable" in line, line
    assert "support + query positives <= 3" in line and "--items-per-pair" not in line
