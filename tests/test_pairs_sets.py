"""Issue 42, item 8: reference-limited splits per object (``--k-by object``), and the items'
``set`` column: counted per set against the seen and unseen pairs, image-level splits refused."""
import json
from pathlib import Path

import pytest

from bayes_concepts.cli import main
from bayes_concepts.suites.pairs import (PairsLayoutError, build_pair_space, pair_space, read_pairs_layout,
                                  reference_limited_spec)
from bayes_concepts.splits import make_split

FIXTURE = Path(__file__).parent / "fixtures" / "pairs"


def _space():
    return pair_space(read_pairs_layout(FIXTURE / "items.tsv", FIXTURE))


def _pairs_of(space, ids):
    return [tuple(v for _, v in space.parts[i]) for i in ids if len(space.parts[i]) == 2]


@pytest.mark.parametrize("k", [1, 2])
def test_k_per_object_keeps_at_most_k_seen_pairs_per_object_and_no_object_is_novel(k):
    space = _space()
    spec = reference_limited_spec(space, k, seed=3, by="object")
    assert spec["name"] == f"seen_k{k}_obj" and "per object" in spec["description"]
    split = make_split(space, spec)
    seen = _pairs_of(space, split.train)
    held = _pairs_of(space, split.test)
    every = seen + held
    per_obj = {}
    for a, o in seen:
        per_obj[o] = per_obj.get(o, 0) + 1
    total = {}
    for a, o in every:
        total[o] = total.get(o, 0) + 1
    # every object keeps min(k, its pairs) seen pairs: at most k, and none is left without one
    assert per_obj == {o: min(k, n) for o, n in total.items()}
    assert held, "something is held out"
    # so every held-out pair's object is a seen object (a train primitive), never a novel one
    train_desc = {space.descriptions[i] for i in split.train}
    test_desc = {space.descriptions[i] for i in split.test}
    seen_attrs = {a for a, _ in seen}
    for a, o in held:
        assert o in per_obj
        assert o in train_desc or f"object:{o}" in train_desc
    # attributes in no seen pair are the split's novel atoms (test primitives), and only they
    attrs = {a for a, _ in every}
    for a in attrs:
        assert (a in test_desc or f"attribute:{a}" in test_desc) == (a not in seen_attrs)


def test_k_per_attribute_stays_the_default():
    space = _space()
    assert reference_limited_spec(space, 1, seed=3) == reference_limited_spec(space, 1, seed=3, by="attribute")
    assert reference_limited_spec(space, 1, seed=3)["name"] == "seen_k1"
    with pytest.raises(PairsLayoutError, match="by .* must be one of attribute, object"):
        reference_limited_spec(space, 1, by="colour")


def test_cli_k_by_object_saves_seen_kK_obj(tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["space", "from-pairs", str(out), "--items", str(FIXTURE / "items.tsv"), "--pairs-dir", str(FIXTURE),
                 "--k", "1", "--k-by", "object"]) == 0
    assert (out / "splits" / "seen_k1_obj.toml").is_file() and not (out / "splits" / "seen_k1.toml").exists()
    assert "split seen_k1_obj:" in capsys.readouterr().out


def _expected_sets():
    """Per set, the items of seen (train) pairs, of unseen (test, not train) pairs and of other
    pairs, counted straight from the fixture's files."""
    train = {tuple(ln.split()) for ln in (FIXTURE / "train_pairs.txt").read_text().splitlines() if ln.strip()}
    test = {tuple(ln.split()) for ln in (FIXTURE / "test_pairs.txt").read_text().splitlines() if ln.strip()}
    out = {}
    for line in (FIXTURE / "items.tsv").read_text().splitlines()[1:]:
        _, a, o, side = line.split("\t")
        kind = "seen" if (a, o) in train else "unseen" if (a, o) in test else "other"
        out.setdefault(side, {"seen": 0, "unseen": 0, "other": 0})[kind] += 1
    return out


def test_the_build_counts_each_sets_items_of_seen_and_unseen_pairs(tmp_path):
    expected = _expected_sets()
    assert expected["test"]["seen"] and expected["test"]["unseen"]  # the fixture has both kinds of test image
    lines = build_pair_space(tmp_path / "s", FIXTURE / "items.tsv", FIXTURE)
    note = [ln for ln in lines if ln.startswith("note: the items' set column")]
    assert len(note) == 1
    for side in ("train", "val", "test"):
        c = expected[side]
        assert (f"{side} {sum(c.values()):,} (seen pairs {c['seen']:,}, unseen pairs {c['unseen']:,}, "
                f"other pairs {c['other']:,})") in note[0]
    assert "--image-level adds image-level twins" in note[0]
    manifest = json.loads(next((tmp_path / "s").glob("manifest*.json")).read_text())
    assert manifest["params"]["item_sets"] == expected


def test_no_set_column_no_note(tmp_path):
    items = tmp_path / "items.tsv"
    items.write_text("".join("\t".join(ln.split("\t")[:3]) + "\n"
                             for ln in (FIXTURE / "items.tsv").read_text().splitlines()))
    lines = build_pair_space(tmp_path / "s", items, FIXTURE)
    assert not any("set column" in ln for ln in lines)


def test_image_level_without_a_set_column_is_refused_in_one_line(tmp_path, capsys):
    """(--image-level with a set column builds: tests/test_image_level.py.)"""
    items = tmp_path / "items.tsv"
    items.write_text("".join("\t".join(ln.split("\t")[:3]) + "\n"
                             for ln in (FIXTURE / "items.tsv").read_text().splitlines()))
    with pytest.raises(PairsLayoutError, match="--image-level needs each item's set"):
        build_pair_space(tmp_path / "s", items, FIXTURE, image_level=True)
    assert main(["space", "from-pairs", str(tmp_path / "c"), "--items", str(items),
                 "--pairs-dir", str(FIXTURE), "--image-level"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--image-level needs each item's set" in err
    assert not (tmp_path / "c").exists()
