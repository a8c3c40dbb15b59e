"""Issue 42, item 8: image-level (by-set) splits of pair spaces.

``space from-pairs --image-level`` records each item's set and saves, beside every split, its
twin ``<name>_by_set`` (``items = "by-set"``): test episodes (support and queries) and the
test bank come from the test-set items only, and the oracles' size likelihood counts |ext h|
there.  The items are written in hxm97's published image-list format
(``damp_mud/SAM_2193.jpg damp mud``, one file per set, no header)."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

from bayes_concepts.cli import main
from bayes_concepts.episodes import sample_episodes
from bayes_concepts.gap_cells import gap_chunk
from bayes_concepts.oracles import OracleSettings, strong_and_weak
from bayes_concepts.splits import make_split
from bayes_concepts.suites.pairs import PairsLayoutError, pair_space, read_pairs_layout

FIXTURE = Path(__file__).parent / "fixtures" / "pairs"
#: manifest.json sha256 of ``space from-pairs`` on the fixture without --image-level, as the code
#: before image-level splits (commit 19984b1) built it
MANIFEST_BEFORE = "8f5d4c0a6a2c487c6afc351d74892b54af0d7efaffe18495d4e6943a45605aa2"
FILES_BEFORE = ["concepts.jsonl", "items.json", "manifest.json", "scenes.npy", "signatures.npy",
                "splits/unseen_pairs.toml", "test_drawn_for.npy", "test_scene_ids.npy", "test_signatures.npy",
                "vocabulary.json"]
UNSEEN_PAIRS_TOML_BEFORE = "666ecd79c33450a8223b5843d3908b50fe0713012b31eca1d4003658c3ccca67"


def _rows(tsv: Path) -> list:
    """(image, attribute, object, set) of the fixture's TSV, read in plain Python."""
    return [tuple(ln.split("\t")) for ln in tsv.read_text().splitlines()[1:] if ln.strip()]


def _hxm97_items(rows, folder: Path) -> Path:
    """The items as hxm97's mitstates_img_split/: train_imgs.txt, val_imgs.txt, test_imgs.txt."""
    folder.mkdir(parents=True, exist_ok=True)
    for side in ("train", "val", "test"):
        (folder / f"{side}_imgs.txt").write_text("".join(f"{img} {a} {o}\n" for img, a, o, s in rows if s == side))
    return folder


def _image_level_space(tmp_path: Path, capsys) -> Path:
    """The fixture's items as hxm97's image lists, built with --image-level into tmp_path/space."""
    items = _hxm97_items(_rows(FIXTURE / "items.tsv"), tmp_path / "mitstates_img_split")
    out = tmp_path / "space"
    assert main(["space", "from-pairs", str(out), "--items", str(items), "--pairs-dir", str(FIXTURE),
                 "--image-level"]) == 0
    capsys.readouterr()
    return out


def _sha(path: Path) -> str:
    import hashlib
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------ (a) end to end
def test_image_level_build_gap_and_audit_end_to_end(tmp_path, capsys):
    items = _hxm97_items(_rows(FIXTURE / "items.tsv"), tmp_path / "mitstates_img_split")
    out = tmp_path / "space"
    assert main(["space", "from-pairs", str(out), "--items", str(items), "--pairs-dir", str(FIXTURE),
                 "--image-level", "--k", "2"]) == 0
    built = capsys.readouterr().out
    n_test = sum(1 for r in _rows(FIXTURE / "items.tsv") if r[3] == "test")
    assert "split unseen_pairs_by_set:" in built and "split seen_k2_by_set:" in built
    assert f"test episodes from the {n_test:,} test-set items" in built
    spec = (out / "splits" / "unseen_pairs_by_set.toml").read_text()
    assert 'items = "by-set"' in spec
    assert main(["gap", str(out), "--split", "unseen_pairs_by_set", "--episodes", "60", "--json"]) == 0
    out_json = json.loads(capsys.readouterr().out)
    rows = out_json["results"]
    assert out_json["excluded"]["space_notes"]["items_by_set"]["count"] == sum(
        1 for r in _rows(FIXTURE / "items.tsv") if r[3] != "test")
    hard = next(r for r in rows if r["negatives"] == "hard")
    assert hard["split"] == "unseen_pairs_by_set" and hard["episodes"] == 60
    assert 0 < hard["gap"]["map"] <= 100
    assert main(["audit", str(out), "--split", "unseen_pairs_by_set", "--episodes", "60"]) == 0
    audit = capsys.readouterr().out
    assert "audit of split 'unseen_pairs_by_set'" in audit
    n_other = sum(1 for r in _rows(FIXTURE / "items.tsv") if r[3] != "test")
    assert f"by-set splits (items = 'by-set'): {n_other:,} items of other sets left out of their test episodes" in audit


# ------------------------------------------------------------------- (b) the slow twin
TINY = {  # (attribute, object): (train items, test items)
    ("wet", "dog"): (6, 2), ("wet", "cat"): (5, 1), ("dry", "dog"): (6, 3), ("old", "car"): (4, 2),
    ("dry", "car"): (0, 7), ("old", "dog"): (0, 6), ("wet", "car"): (0, 5),
}
TINY_TRAIN = [("wet", "dog"), ("wet", "cat"), ("dry", "dog"), ("old", "car")]
TINY_TEST = [("dry", "car"), ("old", "dog"), ("wet", "car"), ("wet", "dog")]


def _tiny(tmp_path):
    rows = []
    for (a, o), (n_train, n_test) in TINY.items():
        rows += [(f"{a}_{o}/tr{k}.jpg", a, o, "train") for k in range(n_train)]
        rows += [(f"{a}_{o}/te{k}.jpg", a, o, "test") for k in range(n_test)]
    items = _hxm97_items(rows, tmp_path / "imgs")
    pairs = tmp_path / "pairs"
    pairs.mkdir()
    (pairs / "train_pairs.txt").write_text("".join(f"{a} {o}\n" for a, o in TINY_TRAIN))
    (pairs / "val_pairs.txt").write_text("")
    (pairs / "test_pairs.txt").write_text("".join(f"{a} {o}\n" for a, o in TINY_TEST))
    space = pair_space(read_pairs_layout(items, pairs), image_level=True)
    split = make_split(space, __import__("tomllib").loads(space.spec_files["unseen_pairs_by_set.toml"]))
    return space, split, {img: (a, o, s) for img, a, o, s in rows}


def _true_on(parts, label) -> bool:
    a, o = label[:2]
    return all((a if role == "attribute" else o) == value for role, value in parts)


def _brute_posterior(space, concepts, label_of, bank_names, support, labels, n_drawn):
    """The size-likelihood posterior in plain Python: prior exp(-0.2 l(h)), each drawn positive
    1/|h|, each hard negative 1/(N - |h|), |h| and N counted on ``bank_names`` (item names)."""
    n = len(bank_names)
    weights = {}
    for i in concepts:
        parts = space.parts[i]
        ext = sum(_true_on(parts, label_of[name]) for name in bank_names)
        if any(_true_on(parts, label_of[name]) != bool(y) for name, y in zip(support, labels)):
            continue
        w = math.exp(-0.2 * len(parts)) * (1 / ext) ** n_drawn
        w *= (1 / (n - ext)) ** (len(labels) - n_drawn) if n > ext else 0.0
        weights[i] = w
    total = sum(weights.values())
    return {i: w / total for i, w in weights.items() if w > 0}


def test_image_level_episodes_and_posterior_against_plain_python(tmp_path):
    from bayes_concepts.splits import side_items, side_space
    space, split, label = _tiny(tmp_path)
    names = space.item_names
    test_set = {img for img, (_, _, s) in label.items() if s == "test"}
    every = list(label)
    # the episodes the gap draws: support, queries and the test bank all from the test set
    bank = side_space(space, split, "test")
    assert sorted(bank.item_names) == sorted(test_set)
    assert np.array_equal(bank.item_names, [names[j] for j in side_items(space, split, "test")])
    assert {bank.item_names[j] for j in bank.test_bank.scene_ids} <= test_set
    shape = {"positives": 2, "negatives": 3, "query_positives": 2, "query_negatives": 3}
    concept, results, eps, _ = gap_chunk(("unseen_pairs_by_set", "hard", 7, 0, 40), space, {split.name: split},
                                      OracleSettings(), 40, None, "union", True, shapes={split.name: shape})
    for field in ("support_scenes", "query_scenes"):
        assert {bank.item_names[j] for j in getattr(eps, field).ravel()} <= test_set
    # sample_episodes gives the space's own item ids, of the test set only
    full = sample_episodes(space, split, "test", "hard", 30, seed=3, n_positive=2, n_negative=3)
    assert {names[j] for j in full.support_scenes.ravel()} | {names[j] for j in full.query_scenes.ravel()} <= test_set
    assert full.meta["items"]["set"] == "test" and full.meta["items"]["items"] == len(test_set)
    # the oracles' posteriors are Bayes with |h| and N counted on the test set
    strong, weak = strong_and_weak(bank, split, OracleSettings())
    differs = False
    for e in range(len(eps)):
        sup = eps.support_scenes[e]
        labels = eps.support_labels[e].tolist()
        sup_names = [bank.item_names[j] for j in sup]
        for oracle in (strong, weak):
            ids, probs = oracle.fit(sup, labels, hard=True, positives_drawn=2).posterior()
            got = {int(i): float(p) for i, p in zip(ids, probs) if p > 0}
            want = _brute_posterior(space, oracle.concepts.tolist(), label, bank.item_names, sup_names, labels, 2)
            assert got.keys() == want.keys()
            for i in want:
                assert got[i] == pytest.approx(want[i], rel=1e-9)
            # counted on every item instead, the posterior would be another one (where two concepts fit)
            other = _brute_posterior(space, oracle.concepts.tolist(), label, every, sup_names, labels, 2)
            differs |= len(want) > 1 and any(abs(other.get(i, 0) - p) > 1e-6 for i, p in want.items())
            # and the predictive on the queries is the posterior's mixture
            query = [bank.item_names[j] for j in eps.query_scenes[e]]
            pred = oracle.predict_proba(eps.query_scenes[e])
            brute = [sum(p for i, p in want.items() if _true_on(space.parts[i], label[q])) for q in query]
            assert pred == pytest.approx(brute, abs=1e-12)
    assert differs, "the test-set counts must matter somewhere, or this test could not tell them apart"
    # the whole space is refused for a by-set split's oracles, not silently counted on every item
    with pytest.raises(Exception, match="by set"):
        strong_and_weak(space, split, OracleSettings())


# ------------------------------------------------------------------------ (c) refusals
def test_image_level_without_a_set_column_is_refused_in_one_line(tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["space", "from-pairs", str(out), "--items-per-pair", "12", "--pairs-dir", str(FIXTURE),
                 "--image-level"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--image-level needs each item's set" in err[0] and "synthetic" in err[0]
    assert not out.exists()
    items = tmp_path / "items.tsv"
    items.write_text("".join("\t".join(r[:3]) + "\n" for r in [("image", "attr", "obj")] + _rows(FIXTURE / "items.tsv")))
    with pytest.raises(PairsLayoutError, match="--image-level needs each item's set"):
        pair_space(read_pairs_layout(items, FIXTURE), image_level=True)


def test_a_by_set_spec_on_a_space_without_sets_is_refused_in_one_line(tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["space", "from-pairs", str(out), "--items", str(FIXTURE / "items.tsv"), "--pairs-dir",
                 str(FIXTURE)]) == 0
    spec = tmp_path / "by_set.toml"
    spec.write_text((out / "splits" / "unseen_pairs.toml").read_text().replace(
        'kind = "held_out"', 'kind = "held_out"\nitems = "by-set"').replace('name = "unseen_pairs"', 'name = "x"'))
    capsys.readouterr()
    assert main(["gap", str(out), "--spec", str(spec), "--episodes", "10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "line 3" in err[0] and "records no item's set" in err[0]
    spec.write_text(spec.read_text().replace('"by-set"', '"per-image"'))
    assert main(["gap", str(out), "--spec", str(spec), "--episodes", "10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "items must be 'all' or 'by-set'" in err[0]


# ------------------------------------------------------------------ (d) nothing else changes
def test_the_build_without_image_level_is_unchanged(tmp_path):
    out = tmp_path / "s"
    assert main(["space", "from-pairs", str(out), "--items", str(FIXTURE / "items.tsv"), "--pairs-dir",
                 str(FIXTURE)]) == 0
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == FILES_BEFORE
    assert _sha(out / "manifest.json") == MANIFEST_BEFORE
    manifest = json.loads((out / "manifest.json").read_text())
    assert "item_set_codes" not in manifest["params"]
    # with --image-level, the pair-level split is the same file; only the twin and the sets are new
    il = tmp_path / "il"
    assert main(["space", "from-pairs", str(il), "--items", str(FIXTURE / "items.tsv"), "--pairs-dir",
                 str(FIXTURE), "--image-level"]) == 0
    assert _sha(il / "splits" / "unseen_pairs.toml") == UNSEEN_PAIRS_TOML_BEFORE
    assert sorted(str(p.relative_to(il)) for p in il.rglob("*") if p.is_file()) == sorted(
        FILES_BEFORE + ["splits/unseen_pairs_by_set.toml"])
    for name in ("signatures.npy", "scenes.npy", "test_scene_ids.npy", "concepts.jsonl", "items.json"):
        assert _sha(il / name) == _sha(out / name)


def test_the_report_of_a_by_set_split_redraws_its_episodes_on_the_test_set_items(tmp_path, capsys):
    """The report's episode view redraws the audited episodes (before: from every item, which
    stopped the report with 'the redrawn episodes differ')."""
    out = _image_level_space(tmp_path, capsys)
    report = tmp_path / "report.md"
    assert main(["audit", str(out), "--split", "unseen_pairs_by_set", "--episodes", "40", "--report",
                 str(report)]) == 0
    text = report.read_text()
    assert "## An episode" in text and (tmp_path / "report_files" / "episode.png").stat().st_size > 0


def test_the_report_redraws_episodes_of_another_shape(tmp_path, capsys):
    """Episodes drawn with another shape than 5+20 are redrawn alike (before: redrawn 5+20,
    so the report showed an episode the audit never scored)."""
    from bayes_concepts.report import audit_splits, hardest_episode
    from bayes_concepts import load_space
    from bayes_concepts.splits import load_splits
    out = tmp_path / "space"
    assert main(["space", "from-pairs", str(out), "--items", str(FIXTURE / "items.tsv"), "--pairs-dir",
                 str(FIXTURE)]) == 0
    capsys.readouterr()
    space = load_space(out)
    splits = load_splits(space, ["unseen_pairs"], specs=[out / "splits" / "unseen_pairs.toml"])
    (rep,) = audit_splits(space, splits, n_episodes=30, episode_shape="3,8")
    eps, index, strong, weak, shown = hardest_episode(space, rep)
    assert shown is space and eps.support_scenes.shape[1] == 3 + 8 and eps.support_labels[:, :3].all()
    assert strong.evaluate(eps)["ap"][index] - weak.evaluate(eps)["ap"][index] == pytest.approx(
        np.nanmax(rep["results"]["ap"].sel(split="unseen_pairs", negatives="hard", learner="strong").values
                  - rep["results"]["ap"].sel(split="unseen_pairs", negatives="hard", learner="weak").values))


def test_training_on_a_by_set_split_is_refused_in_one_line(tmp_path, capsys):
    """The spec's items field is refused by training, not ignored (before: it trained on every item)."""
    out = _image_level_space(tmp_path, capsys)
    code = main(["train", str(out), "--split", "unseen_pairs_by_set", "--learner", "schema-average", "--steps", "2",
                 "--out", str(tmp_path / "model")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "draws its episodes by set" in err[0]
    assert not (tmp_path / "model").exists()


def test_the_ladder_scores_its_rungs_on_a_by_set_splits_test_set_items(tmp_path, capsys):
    """The ladder's rungs of a by-set split are made on its test-set items, as its oracles are
    (before: refused); a rung made on every item is refused in one line, never scored on them."""
    from bayes_concepts import load_space
    from bayes_concepts.errors import BayesConceptsError
    from bayes_concepts.gap import compute_gap
    from bayes_concepts.ladder import ladder_profile
    from bayes_concepts.rungs.rung import rung_learner
    from bayes_concepts.splits import load_splits, side_space
    out = _image_level_space(tmp_path, capsys)
    space = load_space(out)
    name = "unseen_pairs_by_set"
    splits = load_splits(space, [name], specs=[out / "splits" / f"{name}.toml"])
    ds = ladder_profile(space, splits, ["memoriser", "compound", "atom", "strong"], ("hard",), 50, seed=3)
    bank = side_space(space, splits[name], "test")
    assert bank is not space and bank.n_scenes < space.n_scenes
    atom = {name: rung_learner("atom", bank, splits[name])}
    again = compute_gap(space, splits, ("hard",), 50, seed=3, learners={"atom_by_hand": atom}, parts=False)
    label = [lr for lr in ds["learner"].values if str(lr).startswith("atom")][0]
    assert np.array_equal(ds["ap"].sel(learner=label).values, again["ap"].sel(learner="atom_by_hand").values,
                          equal_nan=True)
    assert np.array_equal(ds["ap"].sel(learner="memoriser").values, again["ap"].sel(learner="weak").values,
                          equal_nan=True)
    with pytest.raises(BayesConceptsError, match="not made on its test-set items"):
        compute_gap(space, splits, ("hard",), 20, learners={"atom_everywhere": {name: rung_learner("atom", space, splits[name])}})
    assert main(["ladder", str(out), "--split", name, "--episodes", "30"]) == 0
    assert "unseen_pairs_by_set" in capsys.readouterr().out


def test_the_splits_table_says_where_a_by_set_splits_test_episodes_come_from(tmp_path, capsys):
    """Pair-level and by-set twins have the same sizes; the table tells them apart."""
    out = _image_level_space(tmp_path, capsys)
    n_test = sum(1 for r in _rows(FIXTURE / "items.tsv") if r[3] == "test")
    n_all = len(_rows(FIXTURE / "items.tsv"))
    assert main(["splits", str(out)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].rstrip().endswith("test episodes from")
    assert next(r for r in table if r.startswith("unseen_pairs ")).rstrip().endswith("every item")
    assert next(r for r in table if r.startswith("unseen_pairs_by_set")).rstrip().endswith(
        f"{n_test:,} test-set items of {n_all:,}")
    assert main(["splits", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["splits"]
    assert doc["unseen_pairs_by_set"]["items"] == {"rule": "by-set", "test_items": n_test}
    assert "items" not in doc["unseen_pairs"]


# ------------------------------------------------ side_space against its definition, at random
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402


@st.composite
def _spaces_with_sets(draw):
    """A random item space (some concepts empty, some of every item) whose items carry random
    sets, test set never empty; steered into the corners: a set holding no item of a concept,
    and one holding all of them."""
    n_items = draw(st.integers(1, 90))
    n_concepts = draw(st.integers(1, 12))
    member = np.array(draw(st.lists(st.lists(st.booleans(), min_size=n_items, max_size=n_items),
                                    min_size=n_concepts, max_size=n_concepts)), bool)
    member[0] = True  # a concept of every item
    sets = draw(st.lists(st.sampled_from(["train", "val", "test"]), min_size=n_items, max_size=n_items))
    sets[draw(st.integers(0, n_items - 1))] = "test"
    return member, sets


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_spaces_with_sets())
def test_side_space_is_the_space_restricted_to_the_sets_items(case):
    from bayes_concepts.spaces.extension_space import ExtensionSpace
    from bayes_concepts.splits import Split, encode_item_sets, side_items, side_space
    member, sets = case
    space = ExtensionSpace.from_extensions(member, [f"c{i}" for i in range(len(member))],
                                           params={"item_set_codes": encode_item_sets(sets)})
    n = space.n_concepts  # concepts without an item are not kept
    split = Split("s_by_set", np.arange(n // 2), [], np.arange(n // 2, n), {"items": "by-set"})
    kept = [j for j, s in enumerate(sets) if s == "test"]
    bank = side_space(space, split, "test")
    assert list(side_items(space, split, "test")) == kept
    assert bank.n_scenes == len(kept) and bank.params["item_subset"]["left_out"] == len(sets) - len(kept)
    assert bank.n_concepts == n and list(bank.programs) == list(space.programs)  # the same concepts, same ids
    for k, name in enumerate(space.programs):
        row = member[int(name[1:])]
        want = [t for t, j in enumerate(kept) if row[j]]
        assert list(bank.items(k)) == want and int(bank.counts[k]) == len(want)
    tb = bank.test_bank  # drawn among the set's items: every id is one of them
    assert np.all((np.asarray(tb.scene_ids) >= 0) & (np.asarray(tb.scene_ids) < len(kept)))
    # the same concepts share a synonym class exactly when their extensions in the set agree
    cls = np.asarray(bank.synonym_classes)
    for a in range(bank.n_concepts):
        for b in range(a + 1, bank.n_concepts):
            assert (cls[a] == cls[b]) == np.array_equal(bank.items(a), bank.items(b))
