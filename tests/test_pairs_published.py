"""Pair benchmarks in the formats they are published in (CZSL's pair files and metadata, an
MIT-States image folder, RLCL-style JSON lists), with what makes them hard: a listed pair no
item has, NA metadata records, val-only attributes and objects, pairs too small for an
episode and a layout without unseen pairs.  The fixture is written by
analyses/make_pairs_fixture.py (make_published_fixture)."""
from __future__ import annotations

import importlib.util
import json
import re
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayes_concepts.cli import main
from bayes_concepts.episodes import EpisodeError, EpisodeShape, episode_exclusions, sample_episodes
from bayes_concepts.suites.pairs import (PairsLayoutError, episode_worlds, episode_worlds_spec, pair_space,
                                  read_pairs_layout)
from bayes_concepts.report import constant_note, rank_disagreements
from bayes_concepts.splits import SplitSpecError, make_split

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "analyses"))
from make_pairs_fixture import (PUBLISHED_TEST, PUBLISHED_TRAIN, PUBLISHED_VAL,  # noqa: E402
                                make_published_fixture)


@pytest.fixture(scope="module")
def pub(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("published")
    make_published_fixture(d)
    return d


def czsl(pub):
    return pub / "czsl" / "metadata_compositional-split-natural.json", pub / "czsl" / "compositional-split-natural"


@pytest.fixture(scope="module")
def layout(pub):
    return read_pairs_layout(*czsl(pub))


@pytest.fixture(scope="module")
def space(layout):
    return pair_space(layout)


# ====================================================================== loading as published
def test_every_items_format_gives_the_same_items(pub, layout):
    tsv = read_pairs_layout(pub / "czsl" / "items.tsv", czsl(pub)[1])
    folder = read_pairs_layout(pub / "images", czsl(pub)[1])
    rlcl = read_pairs_layout(pub / "czsl" / "items.tsv", pub / "rlcl")
    assert layout.n_items == tsv.n_items == folder.n_items == 210
    assert sorted(zip(layout.attributes, layout.objects)) == sorted(zip(folder.attributes, folder.objects))
    assert rlcl.pairs == tsv.pairs == layout.pairs
    assert layout.na_items == ["unlabelled/0000.jpg", "unlabelled/0001.jpg"] and tsv.na_items == []


def test_rlcl_lists_as_its_repository_spells_them(pub, layout):
    """RLCL names its lists after their source dataset and joins the two names with '_'."""
    rlcl = read_pairs_layout(pub / "czsl" / "items.tsv", pub / "rlcl-as-published")
    assert rlcl.pairs == layout.pairs
    assert set(rlcl.sources) == {"items.tsv", "train_cgqa.json", "val_utzap.json", "test_mit.json"}


def test_rlcl_names_that_are_not_one_pair_are_one_line(pub, tmp_path, capsys):
    d = tmp_path / "lists"
    d.mkdir()
    for side in ("train", "val", "test"):
        (d / f"{side}_x.json").write_text(json.dumps(["wet_dog"]))
    (d / "test_x.json").write_text(json.dumps(["wet_dog", "wet_big_dog"]))
    with pytest.raises(PairsLayoutError, match=r"test_x.json entry 1: expected 'attribute object'.*got 1"):
        read_pairs_layout(pub / "czsl" / "items.tsv", d)
    (d / "train_y.json").write_text("[]")
    assert main(["space", "from-pairs", str(tmp_path / "s"), "--items", str(pub / "czsl" / "items.tsv"),
                 "--pairs-dir", str(d)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "2 train lists (train_x.json, train_y.json)" in err


def test_items_per_pair_audits_the_lists_alone(pub, tmp_path, capsys):
    lists = czsl(pub)[1]
    listed = set(PUBLISHED_TRAIN) | set(PUBLISHED_VAL) | set(PUBLISHED_TEST)
    synth = read_pairs_layout(None, lists, items_per_pair=11)
    assert synth.n_items == 11 * len(listed)
    assert synth.pair_counts() == {p: 11 for p in listed}
    assert synth.empty_pairs == [] and synth.na_items == []  # every listed pair has its items now
    assert synth.pairs["test"] == PUBLISHED_TEST and synth.sources["items"] == "synthetic: 11 per listed pair"
    # val-only atoms are still left out: the rule is about the lists, not the items
    assert synth.exclusions()["val_only_atoms"]["first"] == ["attribute:narrow", "object:castle"]
    for bad in (0, -1, 2.5, True):
        with pytest.raises(PairsLayoutError, match="items_per_pair must be a whole number"):
            read_pairs_layout(None, lists, items_per_pair=bad)
    out = tmp_path / "synth"
    assert main(["space", "from-pairs", str(out), "--pairs-dir", str(lists), "--items-per-pair", "12"]) == 0
    printed = capsys.readouterr().out
    assert f"over {12 * len(listed)} items (synthetic: 12 per listed pair" in printed
    assert json.loads((out / "manifest.json").read_text())["params"]["sources"]["items"] == \
        "synthetic: 12 per listed pair"
    for extra in ([], ["--items", str(pub / "czsl" / "items.tsv"), "--items-per-pair", "3"]):
        assert main(["space", "from-pairs", str(tmp_path / "x"), "--pairs-dir", str(lists), *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "give --items FILE|DIR or --items-per-pair N" in err
    assert not (tmp_path / "x").exists()


def test_exclusions_are_counted_and_named(layout, space):
    ex = layout.exclusions()
    assert ex["empty_pairs"]["count"] == 1 and ex["empty_pairs"]["first"] == ["test_pairs.txt: broken wall"]
    assert ex["na_items"]["count"] == 2
    assert ex["val_pairs"]["first"] == ["wet chair", "narrow castle", "painted bottle"]
    assert ex["val_only_atoms"]["first"] == ["attribute:narrow", "object:castle"]
    assert all(rec["rule"] for rec in ex.values())
    assert space.params["excluded"] == ex
    # nothing of the val files reaches the space, so nothing reaches a test side
    assert not {"narrow", "castle", "broken wall", "wet chair"} & set(space.descriptions)


def test_torch_metadata_when_torch_is_installed(pub, tmp_path, layout):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    import torch
    records = json.loads(czsl(pub)[0].read_text())
    torch.save(records, tmp_path / "metadata_compositional-split-natural.t7")
    got = read_pairs_layout(tmp_path / "metadata_compositional-split-natural.t7", czsl(pub)[1])
    assert got.items == layout.items and got.na_items == layout.na_items


# ============================================================================= the command
def _build(tmp_path, capsys, items, pairs_dir, *extra):
    out = tmp_path / "space"
    rc = main(["space", "from-pairs", str(out), "--items", str(items), "--pairs-dir", str(pairs_dir), *extra])
    return rc, capsys.readouterr(), out


def test_k_splits_build_without_unseen_pairs(pub, tmp_path, capsys):
    rc, io, out = _build(tmp_path, capsys, pub / "images", pub / "seen-only", "--k", "1", "2", "3")
    assert rc == 0, io.err
    assert sorted(p.name for p in (out / "splits").iterdir()) == ["seen_k1.toml", "seen_k2.toml", "seen_k3.toml"]
    assert "no unseen_pairs split" in io.out
    assert "excluded: 1 empty pair (train_pairs.txt: broken wall)" in io.out
    assert re.search(r"split seen_k1: train \d+, val 0, test \d+ concepts .*2 excluded \(rusty bottle, wet wall\)",
                     io.out)


def test_a_layout_without_unseen_pairs_and_no_k_is_one_line(pub, tmp_path, capsys):
    rc, io, out = _build(tmp_path, capsys, pub / "images", pub / "seen-only")
    assert rc == 2 and len(io.err.strip().splitlines()) == 1 and "no unseen pair" in io.err and "--k" in io.err
    assert not out.exists()


def test_cli_output_audit_and_results_count_every_exclusion(pub, tmp_path, capsys):
    rc, io, out = _build(tmp_path, capsys, *czsl(pub), "--k", "1", "2", "3", "--worlds", "2")
    assert rc == 0, io.err
    for text in ("1 empty pair (test_pairs.txt: broken wall)", "2 NA metadata records", "3 val-only pairs",
                 "2 attributes/objects in no train or test pair (attribute:narrow, object:castle)"):
        assert text in io.out
    assert "split unseen_pairs: train 20, val 0, test 6 concepts" in io.out
    results = tmp_path / "gap.nc"
    assert main(["gap", str(out), "--split", "unseen_pairs", "--episodes", "40", "--negatives", "hard",
                 "--out", str(results)]) == 0
    text = capsys.readouterr().out
    assert "unseen_pairs: episodes 5+20 support, 5+20 query; 5 usable test concepts, 1 excluded (wet wall)" in text
    assert "left out by the space's build, empty pairs: 1 (test_pairs.txt: broken wall)" in text
    import xarray as xr
    with xr.open_dataset(results) as ds:
        excluded = json.loads(ds.attrs["excluded"])
        shape = json.loads(ds.attrs["episode_shape"])
    assert excluded["unseen_pairs"]["too_small"]["first"] == ["wet wall"] and excluded["unseen_pairs"]["usable"] == 5
    assert excluded["space"]["empty_pairs"]["count"] == 1 and excluded["space"]["na_items"]["count"] == 2
    assert shape["unseen_pairs"] == {"positives": 5, "negatives": 20, "query_positives": 5, "query_negatives": 20}
    report = tmp_path / "audit.md"
    assert main(["audit", str(out), "--episodes", "30", "--report", str(report)]) == 0
    text = capsys.readouterr().out
    assert "unseen_pairs: 5 usable test concepts, 1 excluded (wet wall)" in text
    assert "compound divergence is 1.000 on every split (constant" in text and "nan" not in text
    page = report.read_text()
    assert "usable test concepts" in page and "wet wall" in page and "broken wall" in page
    assert "Spearman" not in page and "constant" in page


# ========================================================================== episode shape
def test_episode_shape_from_option_and_spec(pub, tmp_path, capsys):
    rc, io, out = _build(tmp_path, capsys, *czsl(pub), "--episode-shape", "3,10,3,12")
    assert rc == 0, io.err
    spec = tomllib.loads((out / "splits" / "unseen_pairs.toml").read_text())
    assert spec["episodes"] == {"positives": 3, "negatives": 10, "query_positives": 3, "query_negatives": 12}
    assert "5 test concepts can be drawn for episodes, 1 excluded (wet wall): fewer than 6 items" in io.out
    eps_file = tmp_path / "e.npz"
    assert main(["episodes", str(out), "--split", "unseen_pairs", "--negatives", "hard", "--n", "6",
                 "--out", str(eps_file)]) == 0  # the spec's shape
    from bayes_concepts.episodes import Episodes
    eps = Episodes.load(eps_file)
    assert eps.support_scenes.shape == (6, 13) and eps.query_scenes.shape == (6, 15)
    assert eps.meta["n_query_negative"] == 12 and eps.meta["excluded"]["count"] == 1
    assert main(["episodes", str(out), "--split", "unseen_pairs", "--negatives", "hard", "--n", "6",
                 "--episode-shape", "2,4", "--out", str(eps_file), "--force"]) == 0  # the option wins
    assert Episodes.load(eps_file).query_scenes.shape == (6, 6)
    capsys.readouterr()


@pytest.mark.parametrize("shape", ["5", "5,x", "0,20", "5,20,5"])
def test_bad_episode_shape_is_one_line_exit_2(pub, tmp_path, capsys, shape):
    rc, io, _ = _build(tmp_path, capsys, *czsl(pub), "--episode-shape", shape)
    assert rc == 2 and len(io.err.strip().splitlines()) == 1 and "--episode-shape" in io.err


def test_shape_rule_and_sampler(space):
    split = make_split(space, tomllib.loads(space.spec_files["unseen_pairs.toml"]))
    ex = episode_exclusions(space, split.test, EpisodeShape(5, 20))
    assert (ex["count"], ex["first"], ex["usable"]) == (1, ["wet wall"], 5)
    assert episode_exclusions(space, split.test, EpisodeShape(2, 20))["count"] == 0  # wet wall has 4 items
    eps = sample_episodes(space, split, n=200, seed=1, n_positive=2, n_negative=6, n_query_positive=2,
                          n_query_negative=9)
    assert eps.query_labels.shape == (200, 11) and (eps.query_labels[:, :2] == 1).all()
    for e in range(20):  # positives of the two sets are distinct scenes
        assert not set(eps.support_scenes[e, :2]) & set(eps.query_scenes[e, :2])
    wet_wall = space.descriptions.index("wet wall")
    assert wet_wall in set(eps.concept.tolist())
    assert wet_wall not in set(sample_episodes(space, split, n=200, seed=1).concept.tolist())
    with pytest.raises(EpisodeError, match="episode shape: query_positives must be a whole number >= 1"):
        EpisodeShape(5, 20, 0)


def test_spec_episodes_table_is_validated(space):
    spec = tomllib.loads(space.spec_files["unseen_pairs.toml"])
    with pytest.raises(SplitSpecError, match="unknown key 'shots' in \\[episodes\\]"):
        make_split(space, {**spec, "episodes": {"shots": 5}})
    with pytest.raises(SplitSpecError, match="episodes.positives must be an integer >= 1"):
        make_split(space, {**spec, "episodes": {"positives": 0}})


# =================================================================== RLCL's episode setting
def test_episode_worlds_follow_rlcl_sampling(space):
    worlds = episode_worlds(space, n_p=2, seed=3)
    assert worlds
    used_a, used_o = set(), set()
    pairs = {tuple(p[1] for p in parts) for parts in space.parts if len(parts) == 2}
    for seen, unseen in worlds:
        attrs = {a for a, _ in seen + unseen}
        objs = {o for _, o in seen + unseen}
        assert len(attrs) == len(objs) == 2 and not attrs & used_a and not objs & used_o
        assert len(seen) >= 3 and len(unseen) >= 1 and set(seen + unseen) <= pairs  # n_p + 1 <= seen
        used_a |= attrs
        used_o |= objs
    spec = episode_worlds_spec(space, n_p=2, seed=3)
    split = make_split(space, spec)
    assert len(split.test) == sum(len(u) for _, u in worlds)
    assert len(split.train) + len(split.val) + len(split.test) == space.n_concepts
    with pytest.raises(PairsLayoutError, match="no world of 9 attributes x 9 objects"):
        episode_worlds_spec(space, n_p=9)


# ============================================================================ bad input
@pytest.mark.parametrize("edit, message", [
    (lambda d: (d / "rlcl" / "test.json").write_text('[["wet", "dog", "x"]]'), r"test.json entry 0: expected"),
    (lambda d: (d / "rlcl" / "val.json").write_text('{"a": 1}'), r"val.json: expected a JSON list of pairs"),
    (lambda d: (d / "images" / "three word folder").mkdir(), r"three word folder: an image folder's sub-folders"),
    (lambda d: (d / "rlcl" / "train.json").write_text("[1, "), r"train.json line 1: not valid JSON"),
])
def test_bad_published_files_are_one_line_exit_2(tmp_path, capsys, edit, message):
    d = tmp_path / "pub"
    make_published_fixture(d)
    edit(d)
    rc, io, _ = _build(tmp_path, capsys, d / "images", d / "rlcl")
    assert rc == 2 and len(io.err.strip().splitlines()) == 1 and re.search(message, io.err), io.err


# ================================================================================ report
def test_constant_divergence_is_stated_not_correlated():
    df = pd.DataFrame({"split": ["a", "b", "c"], "map_gap_hard": [90.0, 95.0, 99.0],
                       "compound_divergence": [1.0, 1.0, 1.0], "atom_divergence": [0.1, 0.2, 0.3]})
    rk = rank_disagreements(df)
    assert rk.attrs["constant"] == ["compound_divergence"] and np.isnan(rk.attrs["spearman"])
    assert constant_note(df).startswith("compound divergence is 1.000 on every split (constant")
    assert constant_note(df.assign(compound_divergence=[0.1, 0.5, 0.9])) == ""
