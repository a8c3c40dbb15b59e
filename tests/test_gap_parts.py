"""The gap in parts: the atom and the compound oracle between the weak and the strong one.

Their concept sets are checked against a brute-force twin written from the definitions
(Python sets of each concept's atoms and parent-child compounds) on random splits of a small
program space and of the synthetic pair space; the three parts add up to the gap in every
cell; on a pair split whose unseen pairs all have seen attributes and objects the atom oracle
knows what the strong one knows; the table, the CLI, the audit and the figure show the parts.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bayes_concepts.divergence import nested_concepts
from bayes_concepts.gap import GAP_PARTS, audit, compute_gap, format_audit, format_table, summarise
from bayes_concepts.learners import RandomLearner
from bayes_concepts.learners.protocol import LearnerError
from bayes_concepts.lot import Program
from bayes_concepts.suites.pairs import pair_space, read_pairs_layout, unseen_pairs_spec
from bayes_concepts.plots import plot_gap_parts
from bayes_concepts.spaces.extension_space import ExtensionSpace
from bayes_concepts.splits import Split, curi_splits, make_split

from conftest import run

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "pairs"


# ========================================================================= the brute-force twin
def _compounds(node) -> set:
    out, stack = set(), [node]
    while stack:
        n = stack.pop()
        for k, c in enumerate(n.children):
            out.add(f"{n.op}({k}:{c.op})")
            stack.append(c)
    return out


def _types(space) -> list:
    """Per concept: (set of atoms, set of compounds), from the definitions."""
    if isinstance(space, ExtensionSpace):
        out = []
        for d in space.descriptions:
            toks = d.split()
            out.append((set(toks), {f"{toks[a]} {toks[b]}" for a in range(len(toks)) for b in range(a + 1, len(toks))}))
        return out
    return [(set(p.split()), _compounds(Program.parse(p, space.grammar).root)) for p in space.programs]


def brute_nested(types, train, candidates) -> tuple:
    """(atom set, compound set) by loops over Python sets."""
    seen_atoms = set().union(*(types[i][0] for i in train)) if len(train) else set()
    seen_compounds = set().union(*(types[i][1] for i in train)) if len(train) else set()
    atom = set(int(i) for i in train)
    compound = set(int(i) for i in train)
    for i in candidates:
        atoms, comps = types[i]
        if atoms <= seen_atoms:
            atom.add(int(i))
            if comps <= seen_compounds:
                compound.add(int(i))
    return atom, compound


def _split(n, side, name="random") -> Split:
    side = np.asarray(side)
    return Split(name, np.flatnonzero(side == 0), np.flatnonzero(side == 2), np.flatnonzero(side == 1), {}, None,
                 "", n)


@pytest.fixture(scope="module")
def program_types(small_space):
    return _types(small_space)


@pytest.fixture(scope="module")
def pairs():
    return pair_space(read_pairs_layout(FIXTURE / "items.tsv", FIXTURE))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_nested_sets_equal_the_brute_force_on_random_program_splits(small_space, program_types, data):
    n = small_space.n_concepts
    weights = data.draw(st.sampled_from([(0.9, 0.08, 0.02), (0.5, 0.4, 0.1), (0.1, 0.8, 0.1)]))
    seed = data.draw(st.integers(0, 2**31 - 1))
    side = np.random.default_rng(seed).choice(3, size=n, p=weights)
    split = _split(n, side)
    got = nested_concepts(small_space, split)
    atom, compound = brute_nested(program_types, split.train, np.union1d(split.train, split.test))
    assert set(got["atom"].tolist()) == atom
    assert set(got["compound"].tolist()) == compound
    strong = set(np.union1d(split.train, split.test).tolist())
    assert set(split.train.tolist()) <= compound <= atom <= strong


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_nested_sets_equal_the_brute_force_on_random_pair_splits(pairs, data):
    n = pairs.n_concepts
    side = np.array(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    split = _split(n, side)
    got = nested_concepts(pairs, split)
    atom, compound = brute_nested(_types(pairs), split.train, np.union1d(split.train, split.test))
    assert set(got["atom"].tolist()) == atom and set(got["compound"].tolist()) == compound


def test_the_compound_oracle_of_a_pair_split_is_its_weak_oracle(pairs):
    """A pair's only compound is the pair: a pair is in the compound set only if it is a train pair."""
    split = make_split(pairs, unseen_pairs_spec(pairs, read_pairs_layout(FIXTURE / "items.tsv", FIXTURE)
                                                .pairs["train"]))
    got = nested_concepts(pairs, split)
    np.testing.assert_array_equal(got["compound"], split.train)
    assert len(got["atom"]) > len(split.train)


def test_candidates_default_to_a_protocols_strong_concepts(small_space):
    split = curi_splits(small_space)["binding_color"]
    split.strong_concepts = np.arange(small_space.n_concepts)  # as protocol curi-release sets it
    try:
        with_val = nested_concepts(small_space, split)
    finally:
        del split.strong_concepts
    plain = nested_concepts(small_space, split)
    assert set(plain["atom"].tolist()) <= set(with_val["atom"].tolist())
    assert not np.isin(split.val, plain["atom"]).any()  # val concepts are in no oracle


# ============================================================================ parts add up
@pytest.fixture(scope="module")
def results(small_space):
    splits = curi_splits(small_space)
    return compute_gap(small_space, splits, n_episodes=200, seed=3, parts=True,
                       learners={"random": RandomLearner(small_space, seed=0)})


def test_parts_add_up_to_the_gap_in_every_cell(results):
    rows = summarise(results, n_boot=200)
    assert len(rows) == 18
    for r in rows:
        for metric in ("map", "cba"):
            p = r["parts"][metric]
            assert sum(p[k] for k in GAP_PARTS) == pytest.approx(p["total"], abs=1e-9)
            assert p["total"] == pytest.approx(r["gap"][metric], abs=1e-9)
            assert r["strong"][metric] - r["weak"][metric] == pytest.approx(r["gap"][metric], abs=1e-9)
        assert "random" in r["learners"] and "atom" not in r.get("learners", {})


def test_the_oracles_numbers_do_not_depend_on_parts(small_space, results):
    splits = curi_splits(small_space)
    plain = compute_gap(small_space, {"boolean": splits["boolean"]}, n_episodes=200, seed=3)
    for lr in ("strong", "weak"):
        np.testing.assert_array_equal(plain["ap"].sel(learner=lr),
                                      results["ap"].sel(split=["boolean"], learner=lr))
    sizes = json.loads(results.attrs["gap_parts"])["boolean"]
    assert sizes["weak"] <= sizes["compound"] <= sizes["atom"] <= sizes["strong"]


def test_instance_iid_has_no_parts(results):
    r = [r for r in summarise(results, n_boot=50) if r["split"] == "instance_iid"][0]
    assert all(r["parts"]["map"][k] == 0 for k in GAP_PARTS)


def test_table_shows_the_parts_and_places_a_learner_against_four_oracles(results):
    text = format_table(summarise(results, n_boot=50))
    assert "novel arrangements" in text and "novel atoms" in text
    models = text.split("learners on the same test episodes")[0].splitlines()
    head = [line for line in models if line.startswith("split") and "random" in line][0].split()
    assert head[3:] == ["weak", "compound", "atom", "random", "strong"]


def test_plot_gap_parts_returns_what_it_drew(results):
    ax, data = plot_gap_parts(results, "hard")
    parts = data[data.kind == "part"]
    assert len(parts) == 3 * 9 and set(data[data.kind == "learner"].learner) == {"random"}
    for split, d in parts.groupby("split"):
        weak = 100 * float(results["ap"].sel(split=split, negatives="hard", learner="weak").mean())
        strong = 100 * float(results["ap"].sel(split=split, negatives="hard", learner="strong").mean())
        first = d[d.part == "novel_arrangements"].iloc[0]
        assert first["bottom"] == pytest.approx(weak, abs=1e-9)  # segments start at the weak oracle
        assert float(d["height"].sum()) == pytest.approx(strong - weak, abs=1e-9)  # and end at the strong one
    drawn = [p for p in ax.patches if str(p.get_gid() or "").startswith("part:")]
    assert len(drawn) == 3 * 9
    with pytest.raises(ValueError, match="parts=True"):
        plot_gap_parts(results.sel(learner=["strong", "weak"]))


def test_a_learner_cannot_take_an_oracles_name(small_space):
    split = curi_splits(small_space)["boolean"]
    with pytest.raises(LearnerError, match="atom"):
        compute_gap(small_space, {"boolean": split}, n_episodes=5, learners={"atom": RandomLearner(small_space)})


def test_parts_must_be_a_bool(small_space):
    from bayes_concepts.errors import BayesConceptsError
    with pytest.raises(BayesConceptsError, match="parts must be a bool"):
        compute_gap(small_space, curi_splits(small_space), n_episodes=5, parts="yes")


# ======================================================================= pairs: atoms all seen
def test_atom_oracle_equals_strong_when_every_unseen_pair_has_seen_atoms(pairs):
    """Seen pairs chosen to cover every attribute and object: each unseen pair is made of seen
    parts, so the atom oracle knows every test pair and scores as the strong oracle does."""
    by_id = {}
    for i, parts in enumerate(pairs.parts):
        if len(parts) == 2:
            by_id[i] = (parts[0][1], parts[1][1])
    seen, covered = [], set()
    for i, (a, o) in sorted(by_id.items()):
        if ("a", a) not in covered or ("o", o) not in covered:
            seen.append((a, o))
            covered |= {("a", a), ("o", o)}
    split = make_split(pairs, unseen_pairs_spec(pairs, seen, name="covered"))
    unseen = [i for i in split.test if len(pairs.parts[i]) == 2]
    assert unseen, "the fixture must leave some pair unseen"
    nested = nested_concepts(pairs, split)
    assert np.isin(split.test, nested["atom"]).all()
    ds = compute_gap(pairs, {"covered": split}, ("hard",), n_episodes=300, seed=1, parts=True)
    r = summarise(ds, n_boot=100)[0]
    assert abs(r["atom"]["map"] - r["strong"]["map"]) <= 1.0
    assert r["parts"]["map"]["novel_atoms"] == pytest.approx(0.0, abs=1.0)
    assert r["gap"]["map"] > 1.0  # the gap is there, all of it in the parts below the atom oracle


# ============================================================================ CLI and audit
def test_cli_gap_parts_json(small_space_dir, capsys):
    status, out, err = run(["gap", str(small_space_dir), "--split", "boolean", "--episodes", "60", "--negatives",
                            "hard", "--parts", "--json"], capsys)
    assert status == 0, err
    row = json.loads(out)["results"][0]
    assert set(row["parts"]["map"]) >= set(GAP_PARTS) and "atom" in row and "compound" in row
    status, out, err = run(["gap", str(small_space_dir), "--split", "boolean", "--episodes", "60", "--negatives",
                            "hard", "--parts"], capsys)
    assert status == 0 and "novel compounds" in out


def test_audit_shows_the_parts(small_space):
    report = audit(small_space, curi_splits(small_space)["complexity"], n_episodes=100)
    text = format_audit(report)
    assert "oracles: weak" in text and "novel arrangements" in text
    sizes = report["oracle_sizes"]
    assert sizes["weak"] <= sizes["compound"] <= sizes["atom"] <= sizes["strong"]
