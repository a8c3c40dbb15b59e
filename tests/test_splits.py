"""Splits: CURI's nine spec files against predicates written here
independently of the module's matching code, Concept IID's synonym-class integrity,
Instance IID, user-written specs, predicate splits, statistics, and bad specs with their
one-line ``FILE line N: ...`` messages.

One small space (20,000 samples x 20,000 scenes) is built per module.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.errors import BayesConceptsError
from bayes_concepts.lot import curi_grammar
from bayes_concepts.splits import (Split, SplitSpecError, curi_splits, default_splits_dir, load_spec, make_split,
                                   make_splits, split_from_predicate, split_stats, splits_json, splits_table)

CURI_NAMES = {"instance_iid", "concept_iid", "counting", "extrinsic", "intrinsic", "boolean", "binding_color",
              "binding_shape", "complexity"}


@pytest.fixture(scope="module")
def space():
    # not the shared small space: the bad-spec messages below quote this build's concept count (477)
    return HypothesisSpace.build(samples=20_000, scenes=20_000, seed=0)


@pytest.fixture(scope="module")
def splits(space):
    return curi_splits(space)


@pytest.fixture(scope="module")
def tokens(space):
    return [p.split() for p in space.programs]


def write(tmp_path, text, name="spec.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


# ------------------------------------------------------------ independent predicates
def uses_any(toks, wanted):
    return any(t in wanted for t in toks)


def uses_pair(toks, pairs, require=None):
    if require is not None and not uses_any(toks, require):
        return False
    return any(a in toks and b in toks for a, b in pairs)


def counts_compare(toks, combos):
    """A ``count=`` over a constant value (always the 4 tokens ``SET PROP VALUE count=`` in
    postfix) compared with an integer literal: ``SET PROP V count= N op`` or
    ``N SET PROP V count= op`` (a subtree ending in an integer token is that literal)."""
    for k, t in enumerate(toks):
        if t != "count=":
            continue
        value = toks[k - 1]
        for v, n in combos:
            if value != v:
                continue
            if k + 2 < len(toks) and toks[k + 1] == str(n) and toks[k + 2] in ("=", ">"):
                return True
            if k >= 4 and toks[k - 4] == str(n) and k + 1 < len(toks) and toks[k + 1] in ("=", ">"):
                return True
    return False


PREDICATES = {
    "counting": lambda t: counts_compare(t, [("green", 3), ("purple", 2), ("cyan", 1), ("red", 3), ("cube", 2),
                                             ("sphere", 1)]),
    "extrinsic": lambda t: uses_pair(t, [("7", "gray"), ("1", "red"), ("3", "purple"), ("1", "blue"), ("8", "cyan"),
                                         ("5", "yellow"), ("5", "green"), ("3", "yellow"), ("7", "purple"),
                                         ("2", "blue"), ("3", "cyan")], require={"locationX?", "locationY?"}),
    "intrinsic": lambda t: uses_pair(t, [("green", "metal"), ("purple", "rubber"), ("cyan", "rubber"),
                                         ("red", "metal"), ("green", "rubber")], require={"material?"}),
    "boolean": lambda t: uses_pair(t, [("green", "or"), ("purple", "and"), ("cyan", "and"), ("red", "or"),
                                       ("green", "and")]),
    "binding_color": lambda t: uses_any(t, {"purple", "cyan", "yellow"}),
    "binding_shape": lambda t: "cylinder" in t,
    "complexity": lambda t: len(t) > 10,
}


def check_partition(split, n):
    for side in ("train", "val", "test"):
        a = split.ids(side)
        assert a.dtype == np.int64 and np.all(np.diff(a) > 0)
    assert not np.intersect1d(split.train, split.val).size
    assert not np.intersect1d(split.train, split.test).size
    assert not np.intersect1d(split.val, split.test).size
    assert len(split.train) + len(split.val) + len(split.test) == n


# ------------------------------------------------------------------------ CURI splits
def test_curi_spec_files_are_the_nine(splits):
    assert set(splits) == CURI_NAMES
    assert sorted(p.stem for p in default_splits_dir().glob("*.toml")) == sorted(CURI_NAMES)
    for name, split in splits.items():
        assert split.name == name and Path(split.source).name == f"{name}.toml" and split.description


@pytest.mark.parametrize("name", sorted(PREDICATES))
def test_structured_split_matches_independent_predicate(space, splits, tokens, name):
    split = splits[name]
    n = space.n_concepts
    check_partition(split, n)
    expected = np.array([PREDICATES[name](t) for t in tokens])
    held = np.zeros(n, bool)
    held[split.val] = held[split.test] = True
    bad = np.flatnonzero(held != expected)
    assert not len(bad), [(space.programs[i], split.side_of(i)) for i in bad[:5]]
    assert 0 < expected.sum() < n
    for i in range(n):
        assert split.side_of(i) == ("train" if not expected[i] else ("val" if i in set(split.val) else "test"))
    # val is carved from the held-out side: round(10 %) of it, test keeps the rest
    assert len(split.val) == min(round(0.1 * expected.sum()), expected.sum() - 1)


def test_counting_matches_both_operand_orders(space, splits):
    held = set(splits["counting"].ids("held_out").tolist())
    progs = [space.programs[i] for i in held]
    assert any(p.split()[0].isdigit() for p in progs)          # "N S color? v count= op"
    assert any(not p.split()[0].isdigit() for p in progs)      # "S color? v count= N op"


def test_concept_iid_keeps_synonym_classes_whole(space, splits):
    split = splits["concept_iid"]
    n = space.n_concepts
    check_partition(split, n)
    assert split_stats(space, split)["leakage"] == 0
    side = np.empty(n, object)
    for s in ("train", "val", "test"):
        side[split.ids(s)] = s
    for c in np.unique(space.synonym_classes):
        assert len(set(side[space.synonym_classes == c])) == 1
    assert any(len(space.synonyms(i)) > 1 for i in range(n))  # the check above is not vacuous
    for s, f in (("train", 0.80), ("val", 0.05), ("test", 0.15)):
        assert abs(len(split.ids(s)) / n - f) < 0.03, (s, len(split.ids(s)))


def test_instance_iid_is_train_equals_test_equals_all(space, splits):
    split = splits["instance_iid"]
    everything = np.arange(space.n_concepts)
    assert np.array_equal(split.train, everything) and np.array_equal(split.test, everything)
    assert len(split.val) == 0
    assert split.side_of(0) == "train+test"
    st = split_stats(space, split)
    assert st["leakage"] == st["overlap"] == space.n_concepts


def test_same_seed_same_split_other_seed_other_split(space, splits, tmp_path):
    again = curi_splits(space)
    for name in CURI_NAMES:
        for s in ("train", "val", "test"):
            assert np.array_equal(splits[name].ids(s), again[name].ids(s))
    spec = load_spec(default_splits_dir() / "concept_iid.toml")
    other = make_split(space, dict(spec, seed=1))
    assert not np.array_equal(other.test, splits["concept_iid"].test)
    assert split_stats(space, other)["leakage"] == 0
    spec = load_spec(default_splits_dir() / "complexity.toml")
    assert not np.array_equal(make_split(space, dict(spec, val_seed=5)).val, splits["complexity"].val)


# ------------------------------------------------------------------ user specs, stats
def test_user_spec_membership_and_stats(space, tmp_path):
    programs = space.programs
    explicit = next(p for p in programs if "brown" not in p.split() and len(p.split()) < 9)
    path = write(tmp_path, f"""
        # a user-written split
        name = "brown_or_long"
        description = "brown, a given program, or long"
        kind = "held_out"
        synonym_aware = true
        val_fraction = 0.5
        val_seed = 3

        [held_out]
        tokens = ["brown"]
        min_length = 16
        programs = ["{explicit}"]
        """)
    split = make_split(space, path)
    assert split.name == "brown_or_long" and split.source == str(path)
    assert split.spec["held_out"] == {"tokens": ["brown"], "min_length": 16, "programs": [explicit]}
    n = space.n_concepts
    check_partition(split, n)
    direct = np.array([("brown" in p.split()) or len(p.split()) >= 16 or p == explicit for p in programs])
    classes = space.synonym_classes
    expected = np.isin(classes, classes[direct])
    assert expected.sum() > direct.sum()          # synonym-awareness pulled in more concepts
    held = np.isin(np.arange(n), split.ids("held_out"))
    assert np.array_equal(held, expected)
    # val: whole classes, about half of the held-out concepts
    assert not np.isin(classes[split.val], classes[split.test]).any()
    assert abs(len(split.val) - 0.5 * expected.sum()) <= max(np.bincount(classes[expected]))

    st = split_stats(space, split)
    assert (st["train"], st["val"], st["test"]) == (len(split.train), len(split.val), len(split.test))
    assert st["leakage"] == 0 and st["overlap"] == 0
    for s in ("train", "val", "test"):
        hist = st["length_histogram"][s]
        assert sum(hist.values()) == len(split.ids(s))
        assert hist == {int(l): int(c) for l, c in zip(*np.unique(space.lengths[split.ids(s)], return_counts=True))}
        assert st["mean_length"][s] == pytest.approx(space.lengths[split.ids(s)].mean())

    # the same rules without synonym awareness: leakage = held-out concepts with a train synonym
    plain = make_split(space, dict(split.spec, synonym_aware=False))
    held = plain.ids("held_out")
    train_classes = set(classes[plain.train].tolist())
    assert split_stats(space, plain)["leakage"] == sum(classes[i] in train_classes for i in held) > 0


def test_load_spec_fills_defaults(tmp_path):
    path = write(tmp_path, """
        kind = "held_out"
        [held_out]
        pairs = [["red", 3]]
        """, name="my_pairs.toml")
    assert load_spec(path) == {"name": "my_pairs", "description": "", "kind": "held_out",
                               "held_out": {"pairs": [["red", "3"]]}, "synonym_aware": False,
                               "val_fraction": 0.1, "val_seed": 0}
    path = write(tmp_path, 'kind = "random"\nfractions = {train = 0.9, test = 0.1}\n', name="r.toml")
    assert load_spec(path) == {"name": "r", "description": "", "kind": "random",
                               "fractions": {"train": 0.9, "val": 0.0, "test": 0.1}, "seed": 0,
                               "synonym_aware": True}


def test_instance_iid_with_val(space, tmp_path):
    path = write(tmp_path, 'name = "iid_val"\nkind = "all"\nval_fraction = 0.2\nval_seed = 1\n')
    split = make_split(space, path)
    assert np.array_equal(split.train, split.test) and len(split.train) == space.n_concepts
    assert len(split.val) == round(0.2 * space.n_concepts)
    assert split.side_of(int(split.val[0])) == "train+val+test"


def test_predicate_split(space):
    def uses_not(program):
        return any(node.op == "not" for node in program.root.walk())

    split = split_from_predicate(space, "negation", uses_not, val_fraction=0.2, val_seed=1)
    check_partition(split, space.n_concepts)
    expected = np.array(["not" in p.split() for p in space.programs])
    assert np.array_equal(np.isin(np.arange(space.n_concepts), split.ids("held_out")), expected)
    assert len(split.val) == round(0.2 * expected.sum())
    assert split.spec["kind"] == "predicate" and split.source is None
    aware = split_from_predicate(space, "negation", uses_not, synonym_aware=True)
    assert split_stats(space, aware)["leakage"] == 0 and len(aware.ids("held_out")) >= expected.sum()
    with pytest.raises(SplitSpecError, match=r"^split 'nothing': the predicate holds out no concept"):
        split_from_predicate(space, "nothing", lambda p: False)


def test_table_and_json(space, splits):
    table = splits_table(space, splits)
    lines = table.splitlines()
    assert lines[0].split()[:5] == ["split", "train", "val", "test", "leakage"]
    row = next(l for l in lines if l.startswith("instance_iid"))
    n = f"{space.n_concepts:,}"
    assert row.split()[1:5] == [n, "0", n, n]
    data = splits_json(space, splits)
    json.dumps(data)
    assert set(data) == {"splits"} and set(data["splits"]) == CURI_NAMES
    for name, entry in data["splits"].items():
        assert set(entry) == {"train", "val", "test", "leakage"}
        assert entry["test"] == splits[name].test.tolist()
        assert entry["leakage"] == split_stats(space, splits[name])["leakage"]
    assert data["splits"]["concept_iid"]["leakage"] == 0


def test_split_object(space, splits):
    split = splits["binding_shape"]
    i = int(split.test[0])
    assert split.side_of(i) == "test" and split.side_of(int(split.train[0])) == "train"
    assert np.array_equal(split.ids("held_out"), np.union1d(split.val, split.test))
    assert len(split.ids("all")) == space.n_concepts
    with pytest.raises(IndexError):
        split.side_of(space.n_concepts)
    with pytest.raises(ValueError, match="unknown side"):
        split.ids("dev")
    assert "binding_shape" in repr(split) and isinstance(split, Split)


def test_duplicate_names(space, tmp_path):
    a = write(tmp_path, 'name = "same"\nkind = "all"\n', name="a.toml")
    b = write(tmp_path, '# another\nname = "same"\nkind = "all"\n', name="b.toml")
    with pytest.raises(SplitSpecError) as e:
        make_splits(space, [a, b])
    assert str(e.value) == f"{b} line 2: split name 'same' is already used by {a}"


# ---------------------------------------------------------------------------- bad specs
BAD = [
    ("unknown_key", """
        name = "x"
        kind = "held_out"
        colour = "red"
        [held_out]
        tokens = ["red"]
        """, "line 3: unknown key 'colour' (expected one of name, description, kind, fractions, seed, held_out, "
             "synonym_aware, val_fraction, val_seed, val_programs, episodes, items)"),
    ("unknown_token", """
        kind = "held_out"

        [held_out]
        tokens = [
          "red",
          "magenta",
        ]
        """, "line 6: unknown token 'magenta' in held_out.tokens (not a token of the grammar curi.pcfg: expected a "
             "value such as 'red', a property such as 'color?', an operator, x, S, non-x-S or an integer)"),
    ("empty_held_out", """
        kind = "held_out"
        # no concept is that long
        [held_out]
        min_length = 60
        """, "line 3: the [held_out] rules match no concept of the space (477 concepts): the held-out side would "
             "be empty"),
    ("program_does_not_parse", """
        kind = "held_out"
        [held_out]
        programs = [
          "x color? = exists=",
        ]
        """, "line 4: held_out.programs entry 'x color? = exists=' does not parse (in program 'x color? = "
             "exists=', token 2: '=': stack underflow: expects two operands, but only 1 value precedes it)"),
    ("program_not_in_space", """
        kind = "held_out"
        [held_out]
        programs = ["x color? red = x color? blue = and exists="]
        """, "line 3: held_out.programs entry 'x color? red = x color? blue = and exists=' is not a concept of "
             "the space (477 concepts)"),
    ("random_with_held_out", """
        name = "mixed"
        kind = "random"
        fractions = {train = 0.8, val = 0.05, test = 0.15}

        [held_out]
        tokens = ["red"]
        """, "line 5: [held_out] cannot be used with kind = 'random' (contradictory rules: it applies to kind = "
             "'held_out')"),
    ("fractions_sum", """
        kind = "random"
        fractions = {train = 0.8, val = 0.1, test = 0.15}
        """, "line 2: fractions sum to 1.05, expected 1 (train + val + test)"),
    ("min_length_zero", """
        kind = "held_out"
        [held_out]
        tokens = ["red"]
        min_length = 0
        """, "line 4: held_out.min_length must be an integer >= 1, got 0"),
    ("identical_pair", """
        kind = "held_out"
        [held_out]
        pairs = [["green", "or"],
                 ["red", "red"]]
        """, "line 4: held_out.pairs has the pair ['red', 'red'] of identical tokens (use tokens = [...] to hold "
             "out a single token)"),
    ("val_fraction_one", """
        kind = "held_out"
        val_fraction = 1.0
        [held_out]
        tokens = ["red"]
        """, "line 2: val_fraction must be a number in [0, 1), got 1.0"),
    ("toml_syntax", """
        kind = "held_out"
        [held_out]
        tokens = ["red" "blue"]
        """, "line 3: invalid TOML: Unclosed array (column 17)"),
    ("top_key_after_table", """
        kind = "held_out"
        [held_out]
        tokens = ["red"]
        val_seed = 2
        """, "line 4: unknown key 'val_seed' in [held_out] (expected one of tokens, pairs, pairs_require_any, "
             "counts, min_length, programs) -- top-level keys must come before the [held_out] table"),
    ("dotted_key_unknown_key", """
        kind = "held_out"
        held_out.tokens = ["red"]
        held_out.count = [{value = "red", number = 2}]
        """, "line 3: unknown key 'count' in [held_out] (expected one of tokens, pairs, pairs_require_any, counts, "
             "min_length, programs)"),
    ("count_of_non_constant", """
        kind = "held_out"
        [held_out]
        counts = [
          {value = "green", number = 3},
          {value = "color?", number = 1},
        ]
        """, "line 5: held_out.counts value 'color?' is not a constant (expected a value such as 'green' or an "
             "integer)"),
    ("require_without_pairs", """
        kind = "held_out"
        [held_out]
        tokens = ["red"]
        pairs_require_any = ["material?"]
        """, "line 4: held_out.pairs_require_any needs held_out.pairs (it restricts which programs a pair holds "
             "out)"),
    ("missing_kind", """
        name = "nokind"
        """, ": missing key 'kind' (expected kind = \"all\", \"random\" or \"held_out\")"),
]


@pytest.mark.parametrize("case, text, message", BAD, ids=[b[0] for b in BAD])
def test_bad_spec_messages(space, tmp_path, case, text, message):
    path = write(tmp_path, text, name=f"{case}.toml")
    with pytest.raises(SplitSpecError) as e:
        make_split(space, path)
    got = str(e.value)
    assert isinstance(e.value, BayesConceptsError) and "\n" not in got
    sep = "" if message.startswith(":") else " "
    assert got == f"{path}{sep}{message}"


def test_load_spec_checks_tokens_only_with_a_grammar(tmp_path):
    path = write(tmp_path, 'kind = "held_out"\n[held_out]\ntokens = ["magenta"]\n')
    assert load_spec(path)["held_out"] == {"tokens": ["magenta"]}
    with pytest.raises(SplitSpecError, match=r"line 3: unknown token 'magenta'"):
        load_spec(path, grammar=curi_grammar())
    with pytest.raises(SplitSpecError, match=r"^.*nope\.toml: cannot read split spec"):
        load_spec(tmp_path / "nope.toml")


def test_inline_table_lines(space, tmp_path):
    path = write(tmp_path, """
        kind = "held_out"
        # comment with "green" and [brackets]
        held_out = {tokens = ["red"], pairs = [["cube", "cube"]]}
        """)
    with pytest.raises(SplitSpecError) as e:
        make_split(space, path)
    assert str(e.value).startswith(f"{path} line 3: held_out.pairs has the pair ['cube', 'cube']")


def test_dict_spec_errors_name_the_spec(space):
    with pytest.raises(SplitSpecError) as e:
        make_split(space, {"name": "d", "kind": "all", "seed": 3})
    assert str(e.value) == ("<split spec 'd'>: 'seed' cannot be used with kind = 'all' (contradictory rules: it "
                            "applies to kind = 'random')")


# ------------------------------------------------------------ splits of any grammar
def test_concept_iid_and_instance_iid_for_a_grammar_that_renames_a_colour(tmp_path, capsys):
    """The built-in splits that name no token are offered by name whatever the grammar; CURI's
    others (they name CURI's tokens) stay CURI's, and "all" of such a space is its own specs."""
    from bayes_concepts.cli import main
    from bayes_concepts.resources import data_file
    from bayes_concepts.splits import domain_independent_specs, load_splits
    assert set(domain_independent_specs()) == {"concept_iid", "instance_iid"}
    text = Path(data_file("curi.pcfg")).read_text()
    assert " purple " in text
    grammar = tmp_path / "violet.pcfg"
    grammar.write_text(text.replace("purple", "violet"))
    out = tmp_path / "space"
    assert main(["--grammar", str(grammar), "space", "build", str(out), "--preset", "demo", "--samples", "4000",
                 "--scenes", "2000", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["gap", str(out), "--split", "concept_iid", "--negatives", "hard", "--episodes", "20", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["results"]
    assert row["split"] == "concept_iid" and row["strong"]["map"] >= row["weak"]["map"]
    space = HypothesisSpace.load(out)
    assert any("violet" in p for p in space.programs) and not any("purple" in p for p in space.programs)
    splits = load_splits(space, ["concept_iid", "instance_iid"])
    assert len(splits["instance_iid"].test) == space.n_concepts
    assert len(splits["concept_iid"].train) + len(splits["concept_iid"].val) + len(splits["concept_iid"].test) \
        == space.n_concepts
    with pytest.raises(SplitSpecError, match="unknown split 'counting' .*known: concept_iid, instance_iid"):
        load_splits(space, ["counting"])
    assert load_splits(space) == {}  # "all": its own specs only (none)
    with pytest.raises(SplitSpecError, match="name of a built-in split"):
        load_splits(space, ["concept_iid"], [{"name": "concept_iid", "kind": "all"}])
