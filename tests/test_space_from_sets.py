"""``space from-sets``: concepts given as item sets in a JSON Lines or CSV file.

A small file round-trips into the space built from Python with the same sets (the same
gap); bad files are one line and exit 2, or counted exclusions."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from bayes_concepts.cli import main
from bayes_concepts.gap import compute_gap, summarise
from bayes_concepts.spaces import load_space
from bayes_concepts.spaces.extension_space import ExtensionSpace
from bayes_concepts.spaces.sets_file import read_sets
from bayes_concepts.splits import make_split

COLOURS, SHAPES = ("red", "blue", "green"), ("sq", "ci")
N_ITEMS = 60
SPLIT = 'name = "unseen"\nkind = "held_out"\n[held_out]\npairs = [["red", "sq"], ["blue", "ci"]]\n'


def _labels(j):
    return COLOURS[j % 3], SHAPES[j // 30]


def _sets() -> dict:
    """concept name -> item indices: each colour, each shape, each colour-shape pair."""
    out = {c: [j for j in range(N_ITEMS) if _labels(j)[0] == c] for c in COLOURS}
    out.update({s: [j for j in range(N_ITEMS) if _labels(j)[1] == s] for s in SHAPES})
    out.update({f"{c} {s}": [j for j in range(N_ITEMS) if _labels(j) == (c, s)] for c in COLOURS for s in SHAPES})
    return out


def _write(tmp_path, form: str = "jsonl", extra: dict | None = None):
    sets = {**_sets(), **(extra or {})}
    items = tmp_path / "items.csv"
    items.write_text("item,colour,shape\n" + "".join(f"i{j},{_labels(j)[0]},{_labels(j)[1]}\n"
                                                    for j in range(N_ITEMS)))
    if form == "jsonl":
        f = tmp_path / "sets.jsonl"
        f.write_text("".join(json.dumps({"concept": k, "items": [f"i{j}" for j in v]}) + "\n" for k, v in sets.items()))
    elif form == "long":
        f = tmp_path / "sets.csv"
        f.write_text("concept,item\n" + "".join(f"{k},i{j}\n" for k, v in sets.items() for j in v))
    else:
        f = tmp_path / "sets.csv"
        f.write_text("concept,items\n" + "".join(f"{k},{' '.join(f'i{j}' for j in v)}\n" for k, v in sets.items()))
    spec = tmp_path / "unseen.toml"
    spec.write_text(SPLIT)
    return f, items, spec


def _gap_rows(space, split):
    ds = compute_gap(space, {"unseen": split}, ("hard",), n_episodes=60, seed=2)
    return summarise(ds, n_boot=50)


@pytest.mark.parametrize("form", ["jsonl", "long", "wide"])
def test_round_trip_gives_the_gap_of_the_space_built_from_python(tmp_path, capsys, form):
    f, items, spec = _write(tmp_path, form)
    out = tmp_path / "space"
    assert main(["space", "from-sets", str(f), str(out), "--items", str(items), "--split", str(spec)]) == 0
    text = capsys.readouterr().out
    assert "11 concepts over 60 items" in text and "split unseen: train 9, val 0, test 2" in text
    loaded = load_space(out)
    sets = _sets()
    labels = {"colour": [_labels(j)[0] for j in range(N_ITEMS)], "shape": [_labels(j)[1] for j in range(N_ITEMS)]}
    built = ExtensionSpace.from_extensions(list(sets.values()), list(sets), item_names=[f"i{j}" for j in range(N_ITEMS)],
                                           item_labels=labels)
    assert loaded.descriptions == built.descriptions
    assert np.array_equal(loaded.signatures, built.signatures)
    assert np.array_equal(loaded.scene_codes, built.scene_codes)
    a = _gap_rows(loaded, make_split(loaded, spec))
    b = _gap_rows(built, make_split(built, spec))
    assert [r["gap"] for r in a] == [r["gap"] for r in b]
    assert a[0]["gap"]["map"] > 0  # the held-out pairs are unknown to the weak oracle: a gap to compare


def test_without_items_file_the_items_are_the_named_ids(tmp_path):
    f, _, _ = _write(tmp_path)
    sets = read_sets(f)
    assert len(sets.item_names) == N_ITEMS and sets.item_labels is None
    space = sets.space()
    assert space.schema.names == ("item",) and space.n_concepts == 11


def test_empty_small_repeated_and_equal_concepts_are_counted(tmp_path, capsys):
    f, items, _ = _write(tmp_path, "jsonl", {"nothing": [], "two": [0, 1], "red again": _sets()["red"]})
    f.write_text(f.read_text() + json.dumps({"concept": "rep", "items": ["i0", "i0", "i1", "i2", "i3"]}) + "\n")
    out = tmp_path / "space"
    assert main(["space", "from-sets", str(f), str(out), "--items", str(items), "--min-count", "3"]) == 0
    text = capsys.readouterr().out
    assert "excluded: 1 concept with no item (nothing)" in text
    assert "excluded: 1 concept too small (two)" in text
    assert "note: 1 item repeated within a concept (rep: i0)" in text
    assert "note: 1 concept with the same items as another (red again = red)" in text
    space = load_space(out)
    assert "nothing" not in space.descriptions and "two" not in space.descriptions
    assert space.synonym_class(space.find("red again")) == space.synonym_class(space.find("red"))
    assert space.count(space.find("rep")) == 4


def test_items_in_no_concept_are_counted(tmp_path):
    f, items, _ = _write(tmp_path)
    items.write_text(items.read_text() + "extra,red,sq\n")
    sets = read_sets(f, items=items)
    assert sets.notes["unused_items"]["count"] == 1 and sets.notes["unused_items"]["first"] == ["extra"]
    assert sets.space().n_scenes == N_ITEMS + 1


@pytest.mark.parametrize("edit, message", [
    (lambda s, i: s.write_text(s.read_text() + '{"concept": "odd", "items": ["i1", "nope"]}\n'),
     r"sets.jsonl line 12: concept 'odd' names item 'nope', which the items file .* does not list"),
    (lambda s, i: s.write_text(s.read_text() + '{"concept": "red", "items": ["i1"]}\n'),
     r"sets.jsonl line 12: concept 'red' is named twice \(first on line 1\)"),
    (lambda s, i: s.write_text(s.read_text() + '{"concept": "  ", "items": ["i1"]}\n'),
     r"sets.jsonl line 12: the concept name must be a non-empty string"),
    (lambda s, i: s.write_text(s.read_text() + '{"concept": "x", "items": "i1"}\n'),
     r"sets.jsonl line 12: items must be a list"),
    (lambda s, i: s.write_text(s.read_text() + '{"concept": "x"\n'), r"sets.jsonl line 12: not JSON"),
    (lambda s, i: s.write_text(s.read_text() + '{"concept": "x", "items": [true]}\n'),
     r"sets.jsonl line 12: an item id must be a string or a whole number"),
    (lambda s, i: i.write_text(i.read_text() + "i3,red,sq\n"), r"items.csv line 62: item 'i3' is listed twice"),
    (lambda s, i: i.write_text(i.read_text() + "i99,red\n"), r"items.csv line 62: 2 fields, the header has 3"),
    (lambda s, i: i.write_text(i.read_text().replace("item,", "thing,", 1)), r"items.csv line 1: the header has no item"),
    (lambda s, i: s.write_text('{"concept": "a", "items": []}\n'), r"sets.jsonl: every concept is empty"),
])
def test_bad_files_are_one_line_and_exit_2(tmp_path, capsys, edit, message):
    f, items, _ = _write(tmp_path)
    edit(f, items)
    out = tmp_path / "space"
    rc = main(["space", "from-sets", str(f), str(out), "--items", str(items)])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert re.search(message, err), err
    assert not out.exists()


@pytest.mark.parametrize("text, message", [
    ("concept\nred\n", r"sets.csv line 1: the header needs a concept column and one of item"),
    ("concept,item,items\nred,i1,i2\n", r"the header needs a concept column and one of item"),
    ("concept,items\nred,i1\nred,i2\n", r"sets.csv line 3: concept 'red' is named twice \(first on line 2\)"),
    ("concept,item\n,i1\n", r"sets.csv line 2: an empty concept name"),
])
def test_bad_csv_is_one_line_and_exit_2(tmp_path, capsys, text, message):
    f = tmp_path / "sets.csv"
    f.write_text(text)
    rc = main(["space", "from-sets", str(f), str(tmp_path / "space")])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and re.search(message, err), err


def test_a_spec_that_makes_no_split_writes_nothing(tmp_path, capsys):
    f, items, spec = _write(tmp_path)
    spec.write_text('name = "bad"\nkind = "held_out"\n[held_out]\ntokens = ["purple"]\n')
    rc = main(["space", "from-sets", str(f), str(tmp_path / "space"), "--items", str(items), "--split", str(spec)])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "purple" in err, err
    assert not (tmp_path / "space").exists()
    rc = main(["space", "from-sets", str(tmp_path / "sets.txt"), str(tmp_path / "space")])
    assert rc == 2 and "JSON Lines (.jsonl) or CSV" in capsys.readouterr().err
