"""Atom and compound divergence (Keysers et al. 2020) against a
brute-force twin written from the definitions, on random small splits of a program space
and of the synthetic pair space; the audit and the report show them beside the comp gap."""
from __future__ import annotations

import math
import sys
import tomllib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bayes_concepts.divergence import (chernoff_coefficient, concept_structure, divergence_table,
                                       program_atoms_and_compounds, split_divergence)
from bayes_concepts.spaces.extension_space import ExtensionSpace
from bayes_concepts.gap import audit, format_audit
from bayes_concepts.lot import Program
from bayes_concepts.suites.pairs import pair_space, read_pairs_layout, reference_limited_spec
from bayes_concepts.report import (audit_frame, audit_splits, format_audit_table, plot_gap_vs_divergence,
                                   rank_disagreements, write_report)
from bayes_concepts.splits import Split, curi_splits, make_split

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "pairs"


# ========================================================================= the brute-force twin
def _tree_compounds(node) -> list:
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        for k, c in enumerate(n.children):
            out.append(f"{n.op}({k}:{c.op})")
            stack.append(c)
    return out


def _parts(space, i) -> tuple:
    """Atoms and compounds of concept i, from the definitions (not the module's code)."""
    if isinstance(space, ExtensionSpace):
        toks = space.descriptions[i].split()
        return toks, [f"{toks[a]} {toks[b]}" for a in range(len(toks)) for b in range(a + 1, len(toks))]
    prog = Program.parse(space.programs[i], space.grammar)
    return space.programs[i].split(), _tree_compounds(prog.root)


def brute_divergence(space, train, test, beta=0.2):
    """Dicts, loops and math.pow: P_side(x) ∝ Σ_h w(h)·count_h(x) with w(h) = exp(−β l(h)) for
    concepts with >= 10 positives; D = 1 − Σ p^α q^(1−α)."""
    def dist(ids, which):
        mass = Counter()
        for i in ids:
            if space.counts[i] < 10:
                continue
            w = math.exp(-beta * int(space.lengths[i]))
            for x in _parts(space, i)[which]:
                mass[x] += w
        total = sum(mass.values())
        return {x: m / total for x, m in mass.items()} if total > 0 else None

    out = []
    for which, alpha in ((0, 0.5), (1, 0.1)):
        p, q = dist(train, which), dist(test, which)
        if p is None or q is None:
            out.append(float("nan"))
            continue
        c = sum(math.pow(p[x], alpha) * math.pow(q[x], 1 - alpha) for x in p if x in q)
        out.append(min(1.0, max(0.0, 1.0 - c)))
    return tuple(out)


def _split(n, train, test, name="random") -> Split:
    return Split(name, np.asarray(train, np.int64), np.empty(0, np.int64), np.asarray(test, np.int64), {}, None, "", n)


@pytest.fixture(scope="module")
def pairs():
    return pair_space(read_pairs_layout(FIXTURE / "items.tsv", FIXTURE))


# ================================================================================ the twin agrees
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_divergences_equal_the_brute_force_on_random_program_splits(small_space, data):
    n = small_space.n_concepts
    side = np.array(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    train, test = np.flatnonzero(side == 0), np.flatnonzero(side == 1)
    beta = data.draw(st.sampled_from([0.0, 0.2, 1.0]))
    d = split_divergence(small_space, _split(n, train, test), beta=beta)
    want = brute_divergence(small_space, train, test, beta)
    np.testing.assert_allclose([d["atom_divergence"], d["compound_divergence"]], want, rtol=1e-9, atol=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_divergences_equal_the_brute_force_on_random_pair_splits(pairs, data):
    n = pairs.n_concepts
    side = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    train, test = np.flatnonzero(side == 0), np.flatnonzero(side == 1)
    d = split_divergence(pairs, _split(n, train, test))
    want = brute_divergence(pairs, train, test)
    np.testing.assert_allclose([d["atom_divergence"], d["compound_divergence"]], want, rtol=1e-9, atol=1e-12,
                               equal_nan=True)


def test_program_atoms_and_compounds():
    atoms, comps = program_atoms_and_compounds(Program.parse("x color? red = x shape? cube = and exists="))
    assert atoms == ["x", "color?", "red", "=", "x", "shape?", "cube", "=", "and", "exists="]
    assert Counter(comps) == Counter(["exists=(0:and)", "and(0:=)", "and(1:=)", "=(0:color?)", "=(1:red)",
                                      "color?(0:x)", "=(0:shape?)", "=(1:cube)", "shape?(0:x)"])


# ================================================================================= the limits
def test_identical_distributions_have_divergence_zero(small_space, pairs):
    for space in (small_space, pairs):
        everything = np.arange(space.n_concepts)
        d = split_divergence(space, _split(space.n_concepts, everything, everything))
        # 0 up to rounding (p^0.1 q^0.9 = p only in exact arithmetic)
        assert d["atom_divergence"] == pytest.approx(0, abs=1e-12)
        assert d["compound_divergence"] == pytest.approx(0, abs=1e-12)
        # a random half on one side and the same half on the other: same distributions
        half = everything[::2]
        d = split_divergence(space, _split(space.n_concepts, half, half.copy()))
        assert d["compound_divergence"] == pytest.approx(0, abs=1e-12)


def test_disjoint_atoms_have_divergence_one():
    ext = [np.arange(k, k + 20) for k in range(0, 120, 20)]
    space = ExtensionSpace.from_extensions(ext, ["a b", "a c", "b c", "x y", "x z", "y z"], n_items=200)
    d = split_divergence(space, _split(6, [0, 1, 2], [3, 4, 5]))
    assert d["atom_divergence"] == 1.0 and d["compound_divergence"] == 1.0
    assert d["n_atoms"] == {"train": 3, "test": 3, "shared": 0} and d["test_compounds_unseen"] == 1.0
    # shared atoms, disjoint compounds: atom divergence below 1, compound divergence 1
    d = split_divergence(space, _split(6, [0, 3], [1, 2, 4, 5]))
    assert 0 < d["atom_divergence"] < 1 and d["compound_divergence"] == 1.0


def test_a_side_without_compounds_has_no_compound_divergence():
    space = ExtensionSpace.from_extensions([np.arange(20), np.arange(20, 40), np.arange(40, 60)],
                                           ["a", "b", "a b"], n_items=60)
    d = split_divergence(space, _split(3, [0, 1], [2]))
    assert math.isnan(d["compound_divergence"]) and d["atom_divergence"] == 0.0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=2, max_size=8), st.lists(st.floats(0, 1), min_size=2, max_size=8),
       st.sampled_from([0.1, 0.5, 0.9]))
def test_chernoff_coefficient_is_a_similarity(p, q, alpha):
    k = min(len(p), len(q))
    p, q = np.array(p[:k]), np.array(q[:k])
    if p.sum() == 0 or q.sum() == 0:
        return
    p, q = p / p.sum(), q / q.sum()
    c = chernoff_coefficient(p, q, alpha)
    assert -1e-12 <= c <= 1 + 1e-12
    assert chernoff_coefficient(p, p, alpha) == pytest.approx(1.0)
    assert c == pytest.approx(sum(a ** alpha * b ** (1 - alpha) for a, b in zip(p, q)))


def test_unseen_pairs_are_compound_disjoint(pairs):
    spec = tomllib.loads(pairs.spec_files["unseen_pairs.toml"])
    d = split_divergence(pairs, make_split(pairs, spec))
    assert d["compound_divergence"] == 1.0 and d["n_compounds"]["shared"] == 0
    assert 0 < d["atom_divergence"] < 1


# ======================================================================== the episode shape
def test_episode_weights_follow_the_episode_shape():
    """A concept weighs in when it has the positives of both sets of the split's episode shape
    (EpisodeShape.needed); the default shape gives the old weights (>= 2 x 5 positives)."""
    from bayes_concepts.divergence import episode_weights
    from bayes_concepts.episodes import EpisodeShape
    sizes, lengths = np.array([3, 6, 10, 15, 25]), np.array([1, 2, 3, 4, 5])
    space = ExtensionSpace.from_extensions([np.arange(k) for k in sizes], list("abcde"), n_items=30,
                                           lengths=lengths, test_positives=1)
    ids = np.arange(5)

    def reference(needed, beta=0.2):
        w = np.where(sizes >= needed, np.exp(-beta * lengths), 0.0)
        return w / w.sum() if w.sum() else w

    old = reference(10)
    np.testing.assert_allclose(episode_weights(space, ids), old)
    np.testing.assert_allclose(episode_weights(space, ids, 0.2, 5, 5), old)
    for text, needed in (("2,20", 4), ("3,20", 6), ("2,20,4,20", 6), ("5,20,10,20", 15), ("10,20,10,20", 20),
                         ("20,20", 40)):
        shape = EpisodeShape.parse(text)
        assert shape.needed == needed
        got = episode_weights(space, ids, 0.2, shape.positives, shape.query_positives)
        np.testing.assert_allclose(got, reference(needed), err_msg=text)
        assert ((got > 0) == (sizes >= shape.needed)).all()
    assert not np.allclose(episode_weights(space, ids, 0.2, 2), old)  # 3 and 6 items now fill an episode
    with pytest.raises(ValueError, match="n_query_positive must be a whole number >= 1, got 0"):
        episode_weights(space, ids, 0.2, 5, 0)


def test_the_audit_weighs_divergence_by_the_split_shape(pairs):
    """audit (and so the report) passes the split's episode shape to split_divergence."""
    from bayes_concepts.divergence import episode_weights
    split = make_split(pairs, tomllib.loads(pairs.spec_files["unseen_pairs.toml"]))
    test = np.asarray(split.test)
    assert (pairs.counts[test] < 20).any() and (pairs.counts[test] >= 20).any()  # the shape matters here
    wide = split_divergence(pairs, split, n_positive=8, n_query_positive=12)
    assert wide["atom_divergence"] != split_divergence(pairs, split)["atom_divergence"]
    assert (episode_weights(pairs, test, 0.2, 8, 12) > 0).sum() < (episode_weights(pairs, test) > 0).sum()
    r = audit(pairs, split, n_episodes=20, episode_shape="8,20,12,20", parts=False)
    assert r["episodes"]["shape"]["query_positives"] == 12
    assert r["divergence"]["atom_divergence"] == wide["atom_divergence"]
    assert audit(pairs, split, n_episodes=20, parts=False)["divergence"] == split_divergence(pairs, split)
    from bayes_concepts.divergence import side_distribution
    from bayes_concepts.report import plot_side_distributions
    _, data = plot_side_distributions(pairs, split, "atom", top=100, episode_shape="8,20,12,20")
    st = concept_structure(pairs)
    q = side_distribution(st.atoms, test, episode_weights(pairs, test, 0.2, 8, 12))
    np.testing.assert_allclose(data["p_test"], q[[st.atom_names.index(t) for t in data["type"]]])


# ======================================================================== audit and report
def test_audit_reports_divergence_beside_the_gap(small_space):
    splits = curi_splits(small_space)
    r = audit(small_space, splits["counting"], n_episodes=60)
    d = split_divergence(small_space, splits["counting"])
    assert r["divergence"]["compound_divergence"] == d["compound_divergence"]
    text = format_audit(r)
    assert f"compound {d['compound_divergence']:.3f}" in text and "mAP gap" in text


def test_divergence_table_of_curi_splits(small_space):
    df = divergence_table(small_space, curi_splits(small_space))
    assert len(df) == 9
    row = df.set_index("split")
    assert row.loc["instance_iid", ["atom_divergence", "compound_divergence"]].tolist() == pytest.approx([0, 0], abs=1e-12)
    assert (df["compound_divergence"].drop(index=df.index[df.split == "instance_iid"]) > 0).all()


def test_audit_table_report_and_rank_comparison(pairs, tmp_path):
    splits = {"unseen_pairs": make_split(pairs, tomllib.loads(pairs.spec_files["unseen_pairs.toml"])),
              "instance_iid": make_split(pairs, {"name": "instance_iid", "kind": "all"}),
              "seen_k1": make_split(pairs, reference_limited_spec(pairs, 1))}
    reports = audit_splits(pairs, splits, n_episodes=60)
    df = audit_frame(reports)
    assert list(df["split"]) == list(splits)
    iid = df.set_index("split").loc["instance_iid"]
    assert iid["map_gap_hard"] == 0 and iid["compound_divergence"] == pytest.approx(0, abs=1e-12)
    assert iid["weak_coverage_hard"] == 100
    assert "compound div." in format_audit_table(df)
    _, drawn = plot_gap_vs_divergence(df)
    assert np.array_equal(drawn["compound_divergence"], df["compound_divergence"])
    rk = rank_disagreements(df)
    assert set(rk["split"]) == set(splits) and np.isfinite(rk.attrs["spearman"])
    paths = write_report(pairs, reports, tmp_path / "r.md")
    page = paths[0].read_text()
    # one row in the audit table, one in the episodes table (usable and excluded concepts)
    assert page.count("| seen_k1 |") == 2 and "## Episodes: usable and excluded concepts" in page
    assert all(p.stat().st_size > 0 for p in paths)
    with pytest.raises(Exception, match="unknown report format"):
        write_report(pairs, reports, tmp_path / "r.pdf")


def test_cli_audit_of_curi_splits(small_space_dir, capsys):
    from bayes_concepts.cli import main
    assert main(["audit", str(small_space_dir), "--episodes", "40"]) == 0
    out = capsys.readouterr().out
    for name in ("binding_color", "counting", "instance_iid", "complexity"):
        assert name in out
    assert "atom div." in out and "9 split(s)" in out


def test_analysis_script_runs(small_space_dir, tmp_path):
    sys.path.insert(0, str(ROOT))
    from analyses import gap_vs_divergence
    table = gap_vs_divergence.main(["--space", str(small_space_dir), "--episodes", "40", "--boot", "50",
                                    "--out", str(tmp_path), "--figures", str(tmp_path / "figs"), "--quiet",
                                    "--ks", "1", "2"])
    assert {"curi", "pairs"} <= set(table["benchmark"])
    assert (tmp_path / "gap_vs_divergence.md").is_file() and (tmp_path / "figs" / "gap_vs_divergence.png").is_file()


# ======================================= atoms and compounds against their definition, node by node
def _atoms_and_compounds_reference(program) -> tuple:
    """The definition, node by node: each node's atom (binders by operator name, object
    variables as one atom, where the grammar binds variables), then ``parent(k:child)`` per edge
    with the parents in prefix order."""
    from bayes_concepts.divergence import VARIABLE_ATOM, _has_binders
    from bayes_concepts.lot.operators import split_binder
    from bayes_concepts.lot.program import postorder_nodes
    rename = _has_binders(program.grammar)

    def atom(node):
        if rename and node.kind == "binder":
            return split_binder(node.op)[0]
        if rename and node.kind == "variable" and node.type == "OBJ":
            return VARIABLE_ATOM
        return node.op
    atoms = [atom(n) for n in postorder_nodes(program.root)]
    compounds = [f"{atom(n)}({k}:{atom(c)})" for n in program.root.walk() for k, c in enumerate(n.children)]
    return atoms, compounds


@pytest.mark.parametrize("grammar_file", ["curi.pcfg", "clevr.pcfg"])
def test_atoms_and_compounds_equal_the_definition_node_by_node(grammar_file):
    from bayes_concepts.divergence import program_atoms_and_compounds
    from bayes_concepts.lot import sample_programs
    from bayes_concepts.lot.grammar import load_grammar
    from bayes_concepts.resources import data_file
    g = load_grammar(data_file(grammar_file))
    programs = [Program.parse(s, g) for s in sample_programs(300, g, seed=3, max_depth=g.max_depth).strings()]
    if grammar_file == "clevr.pcfg":  # the corners renaming is about: binders and bound variables
        assert any(n.kind == "binder" for p in programs for n in p.root.walk())
    for p in programs:
        assert program_atoms_and_compounds(p) == _atoms_and_compounds_reference(p)


@pytest.mark.parametrize("which", ["small_space", "clevr_space"])
def test_concept_structure_parsed_by_shape_equals_every_program_parsed(which, request):
    """concept_structure parses one program per shape (values stood in for) and puts each
    program's values back: the same matrices and column names, in the same order, as parsing
    every program (CURI's aliases, CLEVR's binders and domain constraints included)."""
    from bayes_concepts.divergence import ConceptStructure, _concept_structure, _sparse, program_atoms_and_compounds
    space = request.getfixturevalue(which)
    if which == "clevr_space":
        assert any(" where " in f" {p} " for p in space.programs)  # constraints are part of the shapes
    pairs = [program_atoms_and_compounds(Program.parse(text, space.grammar)) for text in space.programs]
    (am, an), (cm, cn) = _sparse([a for a, _ in pairs], space.n_concepts), _sparse([c for _, c in pairs], space.n_concepts)
    got = _concept_structure(space)
    assert isinstance(got, ConceptStructure)
    assert got.atom_names == an and got.compound_names == cn
    for mine, plain in ((got.atoms, am), (got.compounds, cm)):
        assert np.array_equal(mine.indptr, plain.indptr) and np.array_equal(mine.indices, plain.indices)
        assert np.array_equal(mine.data, plain.data)
