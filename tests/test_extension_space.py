"""Concept spaces from extensions and attribute-object benchmarks.

The pair space of the synthetic fixture (tests/fixtures/pairs/, written by
analyses/make_pairs_fixture.py) goes through splits, episodes, oracles, the comp gap, the
store, the learners' schema features and the command line; the same concepts written as
programs over one-object scenes give the same oracle numbers."""
from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bayes_concepts.bits import gather_bits
from bayes_concepts.cli import main
from bayes_concepts.spaces.extension_space import ExtensionSpace, ExtensionSpaceError
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.spaces import SpaceError, load_space
from bayes_concepts.engine import test_bank
from bayes_concepts.episodes import sample_episodes
from bayes_concepts.gap import compute_gap, summarise
from bayes_concepts.learners.features import SchemaLayout
from bayes_concepts.oracles import OracleSettings, strong_and_weak
from bayes_concepts.suites.pairs import (PairsLayoutError, pair_space, read_pairs_layout, reference_limited_spec,
                                  seen_pairs_per_attribute, spec_to_toml)
from bayes_concepts.splits import SplitSpecError, make_split

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "pairs"
ITEMS = FIXTURE / "items.tsv"


@pytest.fixture(scope="module")
def layout():
    return read_pairs_layout(ITEMS, FIXTURE)


@pytest.fixture(scope="module")
def space(layout):
    return pair_space(layout)


@pytest.fixture(scope="module")
def unseen(space):
    return make_split(space, tomllib.loads(space.spec_files["unseen_pairs.toml"]))


def _pairs(path):
    return [tuple(line.split()) for line in path.read_text().splitlines() if line.strip()]


# ================================================================= the fixture itself
def test_fixture_is_what_the_script_writes(tmp_path):
    import sys
    sys.path.insert(0, str(ROOT))
    from analyses.make_pairs_fixture import make_fixture
    written = make_fixture(tmp_path, seed=0)
    for name in written:
        assert (tmp_path / name).read_bytes() == (FIXTURE / name).read_bytes(), name
    assert sum(written.values()) < 300_000


# ================================================================= the pair space
def test_pair_space_extensions_are_the_labelled_items(space, layout):
    attrs, objs = np.array(layout.attributes), np.array(layout.objects)
    pairs = set(_pairs(FIXTURE / "train_pairs.txt")) | set(_pairs(FIXTURE / "test_pairs.txt"))
    n_pairs = sum(1 for p in space.parts if len(p) == 2)
    assert n_pairs == len(pairs)
    assert space.n_concepts == len(set(attrs)) + len(set(objs)) + n_pairs
    assert space.n_scenes == len(attrs)
    for i, parts in enumerate(space.parts):
        truth = np.ones(len(attrs), bool)
        for role, value in parts:
            truth &= (attrs if role == "attribute" else objs) == value
        assert np.array_equal(space.signature(i), truth), space.descriptions[i]
        assert space.counts[i] == truth.sum()
        assert space.lengths[i] == len(parts) == len(space.descriptions[i].split())
    i = space.find("wet chair")
    assert space.program(i).readable == "(wet, chair)" and space.program(i).tokens == ("wet", "chair")
    assert space.find(["wet", "chair"]) == i and space.find("wet  dog  cat") is None
    # log p: a uniform choice among the role's values per part
    assert space.log_pcfg[i] == pytest.approx(-np.log(len(set(attrs))) - np.log(len(set(objs))))
    assert space.scene(0) == {"objects": [{"attribute": layout.attributes[0], "object": layout.objects[0]}],
                              "item": layout.items[0]}


def test_val_only_pairs_are_items_not_concepts(space):
    train, test = set(_pairs(FIXTURE / "train_pairs.txt")), set(_pairs(FIXTURE / "test_pairs.txt"))
    val_only = set(_pairs(FIXTURE / "val_pairs.txt")) - train - test
    assert val_only
    for a, o in val_only:
        assert space.find(f"{a} {o}") is None
        assert any(s["objects"][0] == {"attribute": a, "object": o}
                   for s in map(space.scene, range(space.n_scenes)))


def test_unseen_pairs_split(space, unseen):
    train_pairs = set(_pairs(FIXTURE / "train_pairs.txt"))
    test_pairs = set(_pairs(FIXTURE / "test_pairs.txt"))
    train = {space.descriptions[i] for i in unseen.train}
    test = {space.descriptions[i] for i in unseen.test}
    assert {f"{a} {o}" for a, o in test_pairs - train_pairs} == test
    seen_prims = {a for a, _ in train_pairs} | {o for _, o in train_pairs}
    assert train == {f"{a} {o}" for a, o in train_pairs} | seen_prims
    assert len(unseen.val) == 0


def test_instance_iid_gap_is_zero_and_unseen_pairs_have_a_gap(space, unseen):
    iid = make_split(space, {"name": "iid", "kind": "all"})
    ds = compute_gap(space, {"iid": iid, "unseen": unseen}, ("hard", "easy"), n_episodes=150, seed=1)
    rows = {(r["split"], r["negatives"]): r for r in summarise(ds, n_boot=100)}
    for neg in ("hard", "easy"):
        assert rows[("iid", neg)]["gap"]["map"] == 0 and rows[("iid", neg)]["gap"]["cba"] == 0
        # every unseen pair's own concept is unknown to the weak oracle: a large gap
        assert rows[("unseen", neg)]["gap"]["map"] > 50
    assert rows[("unseen", "hard")]["weak_empty_share"] == 1.0  # hard negatives rule out both primitives


def test_episode_labels_are_the_extensions(space, unseen):
    eps = sample_episodes(space, unseen, "test", "hard", n=40, seed=3)
    for e in range(len(eps)):
        truth = space.signature(int(eps.concept[e]))
        for side in ("support", "query"):
            assert np.array_equal(getattr(eps, f"{side}_labels")[e], truth[getattr(eps, f"{side}_scenes")[e]])
    assert set(eps.concept.tolist()) <= set(unseen.test.tolist())


def test_schema_features_are_one_hot_attribute_and_object(space, layout):
    lay = SchemaLayout.from_schema(space.schema)
    feats = lay.features(space.scene_codes[:50])
    assert feats.shape == (50, 1, len(set(layout.attributes)) + len(set(layout.objects)))
    for j in range(50):
        on = {lay.names[k] for k in np.flatnonzero(feats[j, 0])}
        assert on == {f"attribute={layout.attributes[j]}", f"object={layout.objects[j]}"}


# ============================================== the same concepts as programs: same numbers
def _program_space(space, layout, tmp_path) -> HypothesisSpace:
    attrs, objs = sorted(set(layout.attributes)), sorted(set(layout.objects))
    grammar = "\n".join([
        f"value ADJ {' '.join(attrs)}", f"value NOUN {' '.join(objs)}",
        "property attribute? attribute ADJ", "property object? object NOUN",
        "start START", "max_depth 6", "objects 1 1 1",
        "START -> BOOL exists=", "BOOL -> BOOL BOOL and", "BOOL -> A A =", "BOOL -> N N =",
        f"A -> {' | '.join(attrs)}", "A -> OBJECT FA", f"N -> {' | '.join(objs)}", "N -> OBJECT FN",
        "FA -> attribute?", "FN -> object?", "OBJECT -> x", ""])
    (tmp_path / "pairs.pcfg").write_text(grammar)
    with open(tmp_path / "items.jsonl", "w") as f:
        for a, o in zip(layout.attributes, layout.objects):
            f.write(json.dumps({"objects": [{"attribute": a, "object": o}]}) + "\n")

    def program(parts):
        body = [f"x {role}? {value} =" for role, value in parts]
        return " ".join(body) + " and" * (len(body) - 1) + " exists="
    return HypothesisSpace.from_programs([program(p) for p in space.parts], grammar=tmp_path / "pairs.pcfg",
                                         scenes_from=[tmp_path / "items.jsonl"], min_count=1, max_rate=1.0)


@pytest.mark.parametrize("prior, likelihood", [("uniform", "size"), ("length", "size"), ("length", "noisy")])
@pytest.mark.parametrize("negatives", ["hard", "easy"])
def test_program_space_gives_the_same_oracle_numbers(space, layout, unseen, tmp_path, prior, likelihood, negatives):
    progs = _program_space(space, layout, tmp_path)
    assert progs.n_concepts == space.n_concepts and progs.n_scenes == space.n_scenes
    to_prog = np.array([_find_program(progs, p) for p in space.parts])
    assert np.array_equal(np.asarray(progs.signatures)[to_prog], np.asarray(space.signatures))
    # the length prior reads each space's own lengths: give the pair space the programs' lengths
    pairs = dataclasses.replace(space, lengths=np.asarray(progs.lengths)[to_prog].astype(np.int16))
    # one test bank for both: the pair space's scenes, labelled by the program space's signatures
    bank = space.test_bank
    progs = dataclasses.replace(progs, test_bank=test_bank.TestBank(bank.scene_ids, to_prog[bank.drawn_for].astype(np.int32),
                                                          gather_bits(np.asarray(progs.signatures), bank.scene_ids)))
    mapped = dataclasses.replace(unseen, train=to_prog[unseen.train], val=to_prog[unseen.val],
                                 test=to_prog[unseen.test])
    eps = sample_episodes(pairs, unseen, "test", negatives, n=120, seed=5)
    eps_prog = dataclasses.replace(eps, concept=to_prog[eps.concept].astype(np.int32))
    setting = OracleSettings(prior=prior, likelihood=likelihood)
    for a, b in zip(strong_and_weak(pairs, unseen, setting), strong_and_weak(progs, mapped, setting)):
        ra, rb = a.evaluate(eps), b.evaluate(eps_prog)
        for key in ("ap", "cba", "posterior_entropy", "predictive_entropy", "empty", "n_candidates"):
            np.testing.assert_allclose(ra[key], rb[key], rtol=1e-9, atol=1e-12, err_msg=f"{a.name} {key}")
        if a.name == "strong" and (negatives == "easy" or likelihood == "noisy"):
            # not a degenerate comparison: the posterior weighs several concepts in some episodes
            assert (ra["n_candidates"] > 1).any() and (ra["posterior_entropy"] > 1e-6).any()


def _find_program(progs, parts):
    text = " ".join(f"x {r}? {v} =" for r, v in parts) + " and" * (len(parts) - 1) + " exists="
    i = progs.find(text)
    assert i is not None, text
    return i


# ============================================================ reference-limited splits
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.integers(1, 5), seed=st.integers(0, 2**31 - 1))  # the fixture's attributes have 2..6 pairs
def test_reference_limited_split_keeps_k_pairs_per_attribute(space, k, seed):
    split = make_split(space, reference_limited_spec(space, k, seed))
    train = {space.descriptions[i] for i in split.train}
    per_attr = {}
    for parts in space.parts:
        if len(parts) == 2:
            per_attr.setdefault(parts[0][1], []).append(f"{parts[0][1]} {parts[1][1]}")
    seen = set(f"{a} {o}" for a, o in seen_pairs_per_attribute(space, k, seed))
    for a, ps in per_attr.items():
        assert len(seen & set(ps)) == min(k, len(ps))
    pair_train = {d for d in train if len(d.split()) == 2}
    assert pair_train == seen
    held = {space.descriptions[i] for i in split.test}
    assert {d for d in held if len(d.split()) == 2} == {d for ps in per_attr.values() for d in ps} - seen
    assert split.sizes()["val"] == 0
    assert seen_pairs_per_attribute(space, k, seed) == seen_pairs_per_attribute(space, k, seed)


def test_reference_limited_spec_file_round_trip(space, tmp_path):
    spec = reference_limited_spec(space, 2, seed=7)
    f = tmp_path / "seen_k2.toml"
    f.write_text(spec_to_toml(spec))
    a, b = make_split(space, f), make_split(space, spec)
    assert all(np.array_equal(getattr(a, s), getattr(b, s)) for s in ("train", "val", "test"))


def test_reference_limited_splits_need_a_pair_space(small_space, space):
    with pytest.raises(PairsLayoutError, match="need a space of \\(attribute, object\\) pairs"):
        reference_limited_spec(small_space, 1)
    with pytest.raises(PairsLayoutError, match="k \\(seen pairs per attribute\\) must be an integer >= 1"):
        reference_limited_spec(space, 0)


def test_split_tokens_are_checked_against_the_descriptions(space):
    with pytest.raises(SplitSpecError, match="unknown token 'purple'.*an attribute such as"):
        make_split(space, {"name": "x", "kind": "held_out", "held_out": {"tokens": ["purple"]}})
    split = make_split(space, {"name": "no_wet", "kind": "held_out", "val_fraction": 0.0,
                               "held_out": {"tokens": ["wet"]}})
    assert {space.descriptions[i] for i in split.test} == {d for d in space.descriptions if "wet" in d.split()}


# ============================================================================== the store
def test_save_load_round_trip(space, tmp_path):
    copy = dataclasses.replace(space)
    copy.save(tmp_path / "pairs")
    back = ExtensionSpace.load(tmp_path / "pairs")
    assert back == space and back.spec_files == space.spec_files
    assert load_space(tmp_path / "pairs") == space
    assert back.manifest_sha256() and json.loads((tmp_path / "pairs" / "manifest.json").read_text())["kind"] == "extension"
    assert (tmp_path / "pairs" / "splits" / "unseen_pairs.toml").is_file()
    with pytest.raises(SpaceError, match="a space of kind 'extension', not a 'program' space"):
        HypothesisSpace.load(tmp_path / "pairs")
    (tmp_path / "pairs" / "items.json").write_text("[]")
    with pytest.raises(SpaceError, match="items.json"):
        load_space(tmp_path / "pairs")


def test_program_spaces_load_through_load_space(small_space_dir, small_space):
    loaded = load_space(small_space_dir)
    assert isinstance(loaded, HypothesisSpace) and loaded.programs == small_space.programs


# ===================================================================== from_extensions
def test_from_extensions_general():
    ext = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [0, 1], [1, 0], [], [5, 6, 7]]
    s = ExtensionSpace.from_extensions(ext, ["big red", "tiny", "tiny2", "none", "mid"], n_items=300,
                                       min_count=1, lengths=[3, 1, 1, 1, 2])
    assert s.n_concepts == 4 and s.stages["given"] == 5 and s.descriptions == ["big red", "tiny", "tiny2", "mid"]
    assert s.synonym_classes[1] == s.synonym_classes[2] != s.synonym_classes[0]
    assert list(s.lengths) == [3, 1, 1, 2] and s.schema.names == ("item",)
    assert s.scene_codes.dtype == np.int16  # 300 item names are 300 values
    assert s.atoms_and_compounds(0) == (["big", "red"], ["big red"])
    with pytest.raises(ExtensionSpaceError, match="repeats the description 'a'"):
        ExtensionSpace.from_extensions([[0], [1]], ["a", "a"])
    with pytest.raises(ExtensionSpaceError, match="concept 1 holds item 7, outside 0..4"):
        ExtensionSpace.from_extensions([[0], [7]], n_items=5)


# ========================================================================== command line
def test_cli_from_pairs_and_audit_report(tmp_path, capsys):
    out = tmp_path / "pairs"
    assert main(["space", "from-pairs", str(out), "--items", str(ITEMS), "--pairs-dir", str(FIXTURE),
                 "--k", "1", "2"]) == 0
    text = capsys.readouterr().out
    assert "split unseen_pairs: train 36, val 0, test 10" in text and (out / "splits" / "seen_k2.toml").is_file()
    assert main(["space", "info", str(out)]) == 0
    assert "extension space: 46 concepts" in capsys.readouterr().out
    report = tmp_path / "audit.md"
    assert main(["audit", str(out), "--episodes", "60", "--report", str(report)]) == 0
    text = capsys.readouterr().out
    for name in ("unseen_pairs", "seen_k1", "seen_k2"):
        assert name in text
    page = report.read_text()
    assert "compound div." in page and "![" in page and (tmp_path / "audit_files" / "episode.png").is_file()
    assert main(["audit", str(out), "--split", "unseen_pairs", "--episodes", "60",
                 "--report", str(tmp_path / "a.html")]) == 0
    assert "divergence (Keysers et al. 2020" in capsys.readouterr().out
    assert (tmp_path / "a.html").read_text().count("data:image/png;base64") >= 2


def _layout_copy(tmp_path) -> Path:
    d = tmp_path / "layout"
    d.mkdir(parents=True)
    for f in FIXTURE.iterdir():
        (d / f.name).write_bytes(f.read_bytes())
    return d


@pytest.mark.parametrize("file, edit, message", [
    ("train_pairs.txt", lambda t: t + "wet dog cat\n", r"train_pairs.txt line 23: expected 'attribute object'"),
    ("test_pairs.txt", lambda t: "purple dog cat\n" + t, r"test_pairs.txt line 1: expected 'attribute object'"),
    ("val_pairs.txt", lambda t: t + t.splitlines()[0] + "\n",
     r"val_pairs.txt line 10: the pair \(\w+, \w+\) is listed twice \(first on line 1\)"),
    ("items.tsv", lambda t: t.replace("image\tattr", "picture\tattr", 1), r"items.tsv line 1: the header has no item"),
    ("items.tsv", lambda t: t + "extra.jpg\twet\n", r"items.tsv line 677: 2 fields, the header has 4"),
    ("items.tsv", lambda t: t + "extra.jpg\twet dog\tchair\ttrain\n", r"items.tsv line 677: attribute must be a single"),
])
def test_cli_rejects_a_malformed_layout_with_file_and_line(tmp_path, capsys, file, edit, message):
    d = _layout_copy(tmp_path)
    (d / file).write_text(edit((d / file).read_text()))
    rc = main(["space", "from-pairs", str(tmp_path / "out"), "--items", str(d / "items.tsv"), "--pairs-dir", str(d)])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    import re
    assert re.search(message, err), err
    assert not (tmp_path / "out").exists()


def test_missing_pairs_file_and_empty_pair(tmp_path):
    d = _layout_copy(tmp_path)
    (d / "val_pairs.txt").unlink()
    with pytest.raises(PairsLayoutError, match="val_pairs.txt: missing"):
        read_pairs_layout(d / "items.tsv", d)
    d = _layout_copy(tmp_path / "b")
    items = (d / "items.tsv").read_text().splitlines()
    pairs = {tuple(line.split("\t")[1:3]) for line in items[1:]}
    attrs = sorted({a for a, _ in pairs})
    objs = sorted({o for _, o in pairs})
    missing = next((a, o) for a in attrs for o in objs if (a, o) not in pairs)
    (d / "test_pairs.txt").write_text(f"{missing[0]} {missing[1]}\npurple dog\n" + (d / "test_pairs.txt").read_text())
    got = read_pairs_layout(d / "items.tsv", d)  # a listed pair that no item has is left out, and counted
    assert got.empty_pairs == [f"test_pairs.txt: {missing[0]} {missing[1]}", "test_pairs.txt: purple dog"]
    assert got.exclusions()["empty_pairs"]["count"] == 2


def test_items_as_json_lines(tmp_path, layout):
    d = _layout_copy(tmp_path)
    with open(d / "items.jsonl", "w") as f:
        for name, a, o in zip(layout.items, layout.attributes, layout.objects):
            f.write(json.dumps({"image": name, "attr": a, "obj": o, "set": "train"}) + "\n")
    again = read_pairs_layout(d / "items.jsonl", d)
    assert again.items == layout.items and again.attributes == layout.attributes
    a, b = pair_space(again), pair_space(layout)
    assert a.descriptions == b.descriptions and np.array_equal(a.signatures, b.signatures)


def test_scene_rows_of_ids_names_and_labelled_objects(space, layout):
    from bayes_concepts.bits import unpack_bits
    ids = [0, 5, 17]
    by_id = space.scene_rows(ids)
    assert np.array_equal(by_id, space.scene_concepts()[ids])
    by_name = space.scene_rows([{"item": layout.items[j]} for j in ids])
    by_labels = space.scene_rows([{"objects": [{"attribute": layout.attributes[j], "object": layout.objects[j]}]}
                                  for j in ids])
    assert np.array_equal(by_name, by_id) and np.array_equal(by_labels, by_id)
    # an unseen combination of known labels: true for its attribute and its object alone
    row = unpack_bits(space.scene_rows([{"objects": [{"attribute": "wet", "object": "car"}]}])[0], space.n_concepts)
    assert {space.descriptions[i] for i in np.flatnonzero(row)} == {"wet", "car"} - {None} | (
        {"wet car"} if space.find("wet car") is not None else set())
    with pytest.raises(ExtensionSpaceError, match="scene 0: not an item of this space"):
        space.scene_rows([{"item": "no such image"}])


# ------------------------------------------------------------------ issue 56, item 7: membership packed in blocks
@settings(max_examples=60, deadline=None)
@given(st.integers(0, 9), st.integers(1, 200), st.integers(1, 50), st.data())
def test_membership_packed_in_blocks_equals_the_dense_pack(n, n_items, block, data):
    """The block-by-block packing (no dense concepts x items matrix) gives the words and counts
    of packing the whole dense matrix, for id lists (with repeats) and for a bool matrix."""
    import bayes_concepts.spaces.extension_space as es
    from bayes_concepts.bits import pack_bits
    ids = [data.draw(st.lists(st.integers(0, n_items - 1), max_size=2 * n_items)) for _ in range(n)]
    dense = np.zeros((n, n_items), bool)
    for i, a in enumerate(ids):
        dense[i, a] = True
    old = es.MEMBERSHIP_BLOCK_BYTES
    es.MEMBERSHIP_BLOCK_BYTES = block * n_items  # blocks of `block` rows: the last one short, or one block
    try:
        for given in (ids, dense):
            packed, counts, got_n = es._packed_membership(given, n_items, None, None)
            assert got_n == n_items
            assert np.array_equal(packed, pack_bits(dense).reshape(n, (n_items + 63) // 64))
            assert np.array_equal(counts, dense.sum(axis=1))
    finally:
        es.MEMBERSHIP_BLOCK_BYTES = old
