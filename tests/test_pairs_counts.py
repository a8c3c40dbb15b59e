"""Issue 42, items 2 and 3: a pair space's build summary counts what the pair files hold, and
says so when the val list is empty."""
from pathlib import Path

from bayes_concepts.suites.pairs import build_pair_space, read_pairs_layout

FIXTURE = Path(__file__).parent / "fixtures" / "pairs"


def test_attribute_and_object_counts_describe_the_pair_files(tmp_path):
    items = tmp_path / "items.tsv"  # the fixture's items and one more, of a pair no list names
    text = (FIXTURE / "items.tsv").read_text()
    last = text.rstrip("\n").split("\n")[-1].split("\t")
    items.write_text(text.rstrip("\n") + "\n" + "\t".join(["zz_extra.jpg", "shiny", "teapot", *last[3:]]) + "\n")
    layout = read_pairs_layout(items, FIXTURE)
    listed = [p for side in ("train", "val", "test") for p in layout.pairs[side]]
    n_attr, n_obj = len({a for a, _ in listed}), len({o for _, o in listed})
    assert (n_attr, n_obj) != (len(set(layout.attributes)), len(set(layout.objects)))  # the items hold more
    lines = build_pair_space(tmp_path / "s", items, FIXTURE)
    text = "\n".join(lines)
    assert f"({n_attr} attributes, {n_obj} objects in the pair files)" in text


def test_an_empty_val_list_is_named_as_such(tmp_path):
    lists = tmp_path / "lists"
    lists.mkdir()
    for side in ("train", "test"):
        (lists / f"{side}_pairs.txt").write_text((FIXTURE / f"{side}_pairs.txt").read_text())
    (lists / "val_pairs.txt").write_text("")
    text = "\n".join(build_pair_space(tmp_path / "s", FIXTURE / "items.tsv", lists))
    assert "the val list is empty" in text and "every val pair is a train or test pair" not in text
    assert "val-only" not in text


def test_a_comma_separated_items_file_is_read_and_named(tmp_path):
    """Issue 44, item 11: a comma-separated items file was split on white space and refused as
    having no item column; it is read as CSV, and its errors say how it was read."""
    text = (FIXTURE / "items.tsv").read_text().replace("\t", ",")
    (tmp_path / "items.csv").write_text(text)
    a = read_pairs_layout(FIXTURE / "items.tsv", FIXTURE)
    b = read_pairs_layout(tmp_path / "items.csv", FIXTURE)
    assert (a.attributes, a.objects) == (b.attributes, b.objects)
    (tmp_path / "bad.csv").write_text(text + "x.jpg,wet\n")
    import pytest
    from bayes_concepts.suites.pairs import PairsLayoutError
    with pytest.raises(PairsLayoutError, match="read as comma-separated"):
        read_pairs_layout(tmp_path / "bad.csv", FIXTURE)


def test_scene_pictures_are_written_as_rgb(tmp_path):
    """Issue 44, item 13: render.save_png wrote RGBA (matplotlib's imsave) while it promises a
    picture of (H, W, 3)."""
    import numpy as np
    from PIL import Image

    from bayes_concepts.scenes.render import save_png
    img = np.zeros((4, 5, 3), np.uint8)
    img[1, 2] = (10, 200, 30)
    save_png(img, tmp_path / "a.png")
    back = Image.open(tmp_path / "a.png")
    assert back.mode == "RGB" and np.array_equal(np.asarray(back), img)
    save_png(img / 255.0, tmp_path / "b.png")
    assert np.array_equal(np.asarray(Image.open(tmp_path / "b.png")), img)
