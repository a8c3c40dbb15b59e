"""bayes_concepts.synonyms: proofs are sound (proved pairs agree on every scene the slow
interpreter is asked about), counterexamples really separate, and every fast helper
equals an obvious twin on random input."""
import itertools
import json

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, given, settings, strategies as st

from bayes_concepts.engine import evaluate_programs
from bayes_concepts.engine.interpreter import evaluate
from bayes_concepts.errors import BayesConceptsError, ProgramError
from bayes_concepts.lot import Program, curi_grammar, sample_programs
from bayes_concepts.scenes import pack_bits
from bayes_concepts.synonyms import (LEVELS, STATUS_ORDER, EquivalenceProver, ExpansionTooLarge, SynonymError,
                                     classify_synonym_classes, counterexample_bank, find_counterexample,
                                     first_occurrence_labels, proof_groups, prove_equivalent, separating_scene,
                                     summarise_statuses)
from bayes_concepts.synonyms import sat
from bayes_concepts.synonyms.atoms import normal_form
from bayes_concepts.synonyms.prover import linked_components

G = curi_grammar()
SCHEMA = G.schema
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def space(small_space):
    return small_space


@pytest.fixture(scope="module")
def prover(space):
    return EquivalenceProver(space.grammar, space.schema.max_objects)


@st.composite
def scenes(draw, schema=SCHEMA):
    """A valid scene: 1..max_objects objects, any attribute values (shrinks towards alike objects)."""
    n = draw(st.integers(1, schema.max_objects))
    return {"objects": [{a.name: draw(st.sampled_from(a.values)) for a in schema.attributes} for _ in range(n)]}


# ------------------------------------------------------------------------ the prover
def test_prover_levels():
    pr = EquivalenceProver(G, max_objects=5)

    def levels(a, b):
        return [pr.equivalent(a, b, lv) for lv in LEVELS]
    # commutation: propositional
    assert levels("x color? red = S shape? cube exists= and exists=",
                  "S shape? cube exists= x color? red = and exists=") == [True, True, True]
    assert pr.propositional("S shape? cube count= 2 =", "2 S shape? cube count= =")
    # a set quantifier over S is a quantifier over x: first-order, not propositional
    assert levels("S locationX? 7 for-all=", "x locationX? 7 = for-all=") == [False, True, True]
    # value ranges: domain facts only
    assert levels("x locationX? 6 > exists=", "x locationX? 7 = x locationX? 8 = or exists=") == [False, False, True]
    assert levels("x size? small > exists=", "x size? large = exists=") == [False, False, True]
    assert levels("S color? red count= 0 >", "S color? red exists=") == [False, False, True]
    # not equivalent: never proved
    assert levels("x locationX? 6 > exists=", "x locationX? 7 = exists=") == [False, False, False]
    assert levels("x color? red = exists=", "x color? red = for-all=") == [False, False, False]


ALWAYS = "x color? x color? = exists="  # every object has its own colour: true on every scene
NEVER = "x color? x color? = not exists="


@pytest.mark.parametrize("a, b, level", [
    # c > t is ¬(t > c−1), not ¬(t > c)
    ("3 x locationY? > exists=", "x locationY? 2 > not exists=", "propositional"),
    ("3 x locationY? > exists=", "x locationY? 3 > not exists=", None),
    ("2 S color? red count= >", "S color? red count= 1 > not", "propositional"),
    ("2 S color? red count= >", "S color? red count= 2 > not", None),
    # S is never empty, so ∀x: true and ∃x: true agree
    ("x color? red = x color? red = not or for-all=", "x color? red = x color? red = not or exists=", "first-order"),
    # count ranges: over S−x at most max_objects − 1, over S at most max_objects, x counts itself once
    ("non-x-S color? red count= 4 > exists=", NEVER, "domain"),
    ("S color? red count= 5 >", NEVER, "domain"),
    ("non-x-S color? red count= 0 > exists=", ALWAYS, None),
    ("S color? x color? count= 1 > exists=", ALWAYS, None),
    # another object is red (for some x) is not "two red objects"
    ("non-x-S color? red exists= exists=", "S color? red count= 1 >", None),
    # any/all over S−x: what the other objects are
    ("x color? red = not non-x-S color? red exists= and exists=", "S color? red exists= S color? red for-all= not and",
     "domain"),
    ("x color? red = non-x-S color? red for-all= and exists=", "S color? red for-all=", None),
    ("x color? red = not non-x-S color? red for-all= and exists=",  # all others red: there is another
     "x color? red = not non-x-S color? red for-all= and S color? red exists= and exists=", "domain"),
    ("x color? red = non-x-S color? red for-all= and exists=",  # all others red and x red: all red
     "x color? red = non-x-S color? red for-all= and S color? red for-all= and exists=", "domain"),
])
def test_domain_boundaries_are_proved_exactly_when_true(a, b, level):
    """Each pair sits on one fact of the prover: a wrong fact either proves a pair that a
    scene separates or fails to prove a true one."""
    assert prove_equivalent(a, b).level == level
    scene = find_counterexample(a, b, n_scenes=5_000)
    assert (scene is None) == (level is not None)
    if scene is not None:
        assert evaluate(a, scene) != evaluate(b, scene)


def test_prove_equivalent_verdicts():
    v = prove_equivalent("S locationX? 7 for-all=", "x locationX? 7 = for-all=")
    assert (v.proved, v.level, v.too_large) == (True, "first-order", False)
    v = prove_equivalent("S locationX? 7 for-all=", "x locationX? 7 = for-all=", level="propositional")
    assert v.proved is False
    assert prove_equivalent("x color? red = exists=", "x color? red = for-all=").level is None
    # a limit of one minterm gives up the first-order expansion and says so
    v = prove_equivalent("S locationX? 7 for-all=", "x locationX? 7 = for-all=", max_minterms=1)
    assert (v.proved, v.too_large) == (False, True)
    with pytest.raises(ExpansionTooLarge):
        EquivalenceProver(G, max_minterms=1).equivalent("S locationX? 7 for-all=", "x locationX? 7 = for-all=",
                                                        "first-order")


def test_bad_input_is_a_one_line_error():
    with pytest.raises(SynonymError, match="proof level 'fol'"):
        prove_equivalent("x color? red = exists=", "x color? red = exists=", level="fol")
    with pytest.raises(ProgramError):
        prove_equivalent("x color? red = exists=", "x color? = exists=")
    with pytest.raises(BayesConceptsError, match="max_minterms"):
        EquivalenceProver(G, max_minterms=0)
    with pytest.raises(BayesConceptsError, match="n_scenes"):
        counterexample_bank(SCHEMA, 0)


def _rewrite(node, draw) -> list:
    """Postfix tokens of a boolean sub-program rewritten by laws of propositional logic
    (commutation, De Morgan, double negation, symmetry of =), chosen by ``draw``."""
    if node.kind == "logic":
        parts = [_rewrite(c, draw) for c in node.children]
        if node.op == "not":
            return parts[0] + ["not"] + (["not", "not"] if draw(st.booleans()) else [])
        law = draw(st.sampled_from(["keep", "commute", "de_morgan"]))
        if law == "commute":
            parts = parts[::-1]
        if law == "de_morgan":
            dual = "or" if node.op == "and" else "and"
            return parts[0] + ["not"] + parts[1] + ["not", dual, "not"]
        return parts[0] + parts[1] + [node.op]
    if node.kind == "compare" and node.op == "=" and draw(st.booleans()):
        return node.children[1].postfix() + node.children[0].postfix() + ["="]
    return node.postfix()


POOL = sample_programs(400, seed=3).strings()


@SLOW
@given(st.data())
def test_logical_rewrites_are_proved_propositional_and_agree_on_scenes(data):
    program = Program.parse(data.draw(st.sampled_from(POOL)), G)
    root = program.root
    if root.kind == "quantifier":
        rewritten = " ".join(_rewrite(root.children[0], data.draw) + [root.op])
    else:
        rewritten = " ".join(_rewrite(root, data.draw))
    verdict = prove_equivalent(program.postfix, rewritten, G)
    assert verdict.proved and verdict.level == "propositional", (program.postfix, rewritten)
    scene = data.draw(scenes())
    assert evaluate(program, scene, G) == evaluate(rewritten, scene, G)


@pytest.fixture(scope="module")
def synonym_pairs(space, prover):
    """(first member, other member, verdict) for members of the space's synonym classes."""
    classes = np.asarray(space.synonym_classes)
    ids, sizes = np.unique(classes, return_counts=True)
    pairs = []
    for c in ids[sizes >= 2]:
        members = np.flatnonzero(classes == c)
        for other in members[1:5]:
            a, b = space.programs[members[0]], space.programs[other]
            pairs.append((a, b, prover.verdict(a, b)))
    return pairs


def test_space_has_proved_and_unproved_synonyms(synonym_pairs):
    levels = {v.level for _, _, v in synonym_pairs}
    assert set(LEVELS) <= levels and None in levels


@SLOW
@given(st.data())
def test_proved_synonyms_agree_on_every_scene(synonym_pairs, data):
    proved = [(a, b) for a, b, v in synonym_pairs if v.proved]
    a, b = data.draw(st.sampled_from(proved))
    scene = data.draw(scenes())
    assert evaluate(a, scene, G) == evaluate(b, scene, G), (a, b, scene)


def test_proved_synonyms_agree_on_a_counterexample_bank(synonym_pairs):
    proved = [(a, b) for a, b, v in synonym_pairs if v.proved]
    bank = counterexample_bank(SCHEMA, 4_000, seed=11)
    signatures = evaluate_programs([p for pair in proved for p in pair], bank, G)
    np.testing.assert_array_equal(signatures[0::2], signatures[1::2])


# ------------------------------------------------------------------ counterexamples
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_counterexamples_separate_and_never_meet_a_proof(synonym_pairs, data):
    a, b, verdict = data.draw(st.sampled_from(synonym_pairs))
    scene = find_counterexample(a, b, G, n_scenes=3_000, seed=data.draw(st.integers(0, 3)))
    if scene is not None:
        assert not verdict.proved
        assert evaluate(a, scene, G) != evaluate(b, scene, G)


def test_find_counterexample_on_known_pairs():
    scene = find_counterexample("x color? red = exists=", "x color? red = for-all=")
    assert evaluate("x color? red = exists=", scene) != evaluate("x color? red = for-all=", scene)
    assert len(scene["objects"]) >= SCHEMA.sample_min_objects  # a scene of the sampler's support is preferred
    assert find_counterexample("S locationX? 7 for-all=", "x locationX? 7 = for-all=") is None


def test_counterexample_bank():
    bank = counterexample_bank(SCHEMA, 2_000, seed=5)
    n = np.asarray(bank.n_objects)
    assert bank.n_scenes == 2_000 and n.min() == 1 and n.max() == SCHEMA.max_objects
    again = counterexample_bank(SCHEMA, 2_000, seed=5)
    np.testing.assert_array_equal(bank.codes, again.codes)
    assert not np.array_equal(bank.codes, counterexample_bank(SCHEMA, 2_000, seed=6).codes)
    # the second half is clumped: each attribute takes at most two values within a scene
    codes = np.asarray(bank.codes)
    distinct = [[len(set(codes[s, :n[s], a])) for a in range(SCHEMA.n_attributes)] for s in range(1_000, 2_000)]
    assert np.max(distinct) <= 2
    uniform = [[len(set(codes[s, :n[s], a])) for a in range(SCHEMA.n_attributes)] for s in range(1_000)]
    assert np.max(uniform) > 2


def _separating_scene_twin(truth, first, preferred):
    """The obvious loop: the first row separated from ``first`` on a preferred scene, else the
    first row separated at all; its first such scene."""
    fallback = None
    for j in range(len(truth)):
        diff = np.flatnonzero(truth[j] != truth[first])
        if len(diff) and fallback is None:
            fallback = (j, int(diff[0]))
        good = [s for s in diff if preferred[s]]
        if good:
            return j, int(good[0])
    return fallback


@given(st.integers(1, 6), st.integers(1, 150), st.integers(0, 2**32 - 1), st.floats(0, 1))
def test_separating_scene_equals_the_obvious_loop(n_rows, n_scenes, seed, p_equal):
    rng = np.random.default_rng(seed)
    truth = rng.random((n_rows, n_scenes)) < 0.5
    truth[rng.random(n_rows) < p_equal] = truth[0]  # some rows equal to the first
    preferred = rng.random(n_scenes) < 0.5
    first = int(rng.integers(n_rows))
    got = separating_scene(pack_bits(truth), first, n_scenes, preferred)
    assert got == _separating_scene_twin(truth, first, preferred)


# ------------------------------------------------------------------ grouping helpers
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=30))
def test_first_occurrence_labels_equal_the_obvious_index(keys):
    order = list(dict.fromkeys(keys))
    expected = [order.index(k) for k in keys]
    assert first_occurrence_labels(np.array(keys, np.int64).reshape(-1, 2)).tolist() == expected


@given(st.lists(st.frozensets(st.integers(0, 8), min_size=1, max_size=3), max_size=12))
def test_linked_components_equal_naive_merging(links):
    items = list(range(len(links)))
    groups = [{i} for i in items]
    merged = True
    while merged:  # merge any two groups that share a link, until none do
        merged = False
        for g, h in itertools.combinations(range(len(groups)), 2):
            if set().union(*(links[i] for i in groups[g])) & set().union(*(links[i] for i in groups[h])):
                groups[g] |= groups.pop(h)
                merged = True
                break
    expected = sorted(sorted(g) for g in groups)
    got = linked_components(items, lambda i: links[i])
    assert sorted(got) == expected
    assert [g[0] for g in got] == sorted(g[0] for g in got)  # in order of first item


class _PartitionProver:
    """A stand-in prover: programs are ints, equivalent at a level iff their hidden classes at
    that level are equal (each level coarser than the one before); some pairs are too large."""

    def __init__(self, hidden, too_large):
        self.hidden, self.too_large = hidden, too_large

    def equivalent(self, a, b, level):
        if frozenset((a, b)) in self.too_large:
            raise ExpansionTooLarge(0)
        return self.hidden[level][a] == self.hidden[level][b]


@given(st.lists(st.integers(0, 4), min_size=1, max_size=9), st.data())
def test_proof_groups_are_the_hidden_partitions(propositional, data):
    n = len(propositional)
    # each level coarsens the one before through a random map of its classes
    to_first_order = {c: data.draw(st.integers(0, 2)) for c in sorted(set(propositional))}
    first_order = [to_first_order[c] for c in propositional]
    to_domain = {c: data.draw(st.integers(0, 1)) for c in sorted(set(first_order))}
    hidden = {"propositional": propositional, "first-order": first_order,
              "domain": [to_domain[c] for c in first_order]}
    check = hidden["domain"]  # check groups no finer than the truth: nothing is skipped wrongly
    groups = proof_groups(list(range(n)), _PartitionProver(hidden, set()), check)
    assert len(groups.labels["propositional"]) == n
    for level in LEVELS:
        assert groups.labels[level].tolist() == first_occurrence_labels(np.array(hidden[level])).tolist()
    assert groups.too_large == 0 and groups.violations == 0


def test_proof_groups_count_violations_and_too_large():
    hidden = {level: [0, 0, 0] for level in LEVELS}
    # the check bank says member 2 differs: a proof of (0, 2) or (1, 2) is a violation
    groups = proof_groups([0, 1, 2], _PartitionProver(hidden, {frozenset((0, 1))}), [0, 0, 1], verify=True)
    # propositional: (0,1) too large, (0,2) and (1,2) violations; first-order: (0,1) too large again, ...
    assert groups.labels["domain"].tolist() == [0, 1, 2]
    assert groups.violations == 2 * len(LEVELS) and groups.too_large == len(LEVELS)
    # without verify, pairs the check bank separates are tried only at the propositional level
    groups = proof_groups([0, 1, 2], _PartitionProver(hidden, set()), [0, 0, 1])
    assert groups.labels["propositional"].tolist() == [0, 0, 1] and groups.violations == 2


# ---------------------------------------------------------------------- the solver
def _value(f, assignment) -> bool:
    if f is True or f is False:
        return f
    op = f[0]
    if op == "v":
        return assignment[f[1]]
    if op == "not":
        return not _value(f[1], assignment)
    if op == "iff":
        return _value(f[1], assignment) == _value(f[2], assignment)
    values = [_value(g, assignment) for g in f[1]]
    return all(values) if op == "and" else any(values)


def _assignments(*formulas):
    names = sorted(set(itertools.chain.from_iterable(sat.variables(f) for f in formulas)))
    for bits in itertools.product([False, True], repeat=len(names)):
        yield dict(zip(names, bits))


_leaves = st.one_of(st.sampled_from("abcd").map(sat.var), st.booleans())
formulas = st.recursive(_leaves, lambda kids: st.one_of(
    kids.map(sat.not_),
    st.lists(kids, max_size=3).map(lambda fs: sat.and_(*fs)),
    st.lists(kids, max_size=3).map(lambda fs: sat.or_(*fs)),
    st.tuples(kids, kids).map(lambda fg: sat.iff(*fg))), max_leaves=14)


@settings(max_examples=200, deadline=None)
@given(formulas)
def test_satisfiable_equals_truth_tables_and_sympy(f):
    expected = any(_value(f, a) for a in _assignments(f))
    assert sat.satisfiable(f) == expected
    assert (sympy.satisfiable(sat.to_sympy(f)) is not False) == expected
    assert sat.valid(f) == all(_value(f, a) for a in _assignments(f))


@settings(max_examples=200, deadline=None)
@given(formulas, formulas)
def test_constructors_and_normal_form_keep_the_truth_value(f, g):
    for a in _assignments(f, g):
        assert _value(sat.and_(f, g), a) == (_value(f, a) and _value(g, a))
        assert _value(sat.or_(f, g), a) == (_value(f, a) or _value(g, a))
        assert _value(sat.iff(f, g), a) == (_value(f, a) == _value(g, a))
        assert _value(sat.not_(f), a) == (not _value(f, a))
        assert _value(normal_form(f), a) == _value(f, a)
        assert _value(sat.substitute(f, lambda name: sat.not_(sat.var(name))), a) == \
            _value(f, {k: not v for k, v in a.items()})


# ---------------------------------------------------------------- classification
@pytest.fixture(scope="module")
def classified(space):
    return classify_synonym_classes(space, check_scenes=5_000, seed=1)


def test_classification_covers_every_class_and_finds_no_contradiction(classified, space):
    classes, members = classified.classes, classified.members
    class_of = np.asarray(space.synonym_classes)
    ids, sizes = np.unique(class_of, return_counts=True)
    assert sorted(classes["class"]) == sorted(ids[sizes >= 2].tolist())
    assert sorted(members.concept) == sorted(np.flatnonzero(np.isin(class_of, ids[sizes >= 2])).tolist())
    assert classified.violations == 0
    assert set(classes.status) <= set(STATUS_ORDER) and len(set(classes.status)) >= 4
    summary = summarise_statuses(classes)
    assert summary["classes"].iloc[:-1].sum() == summary["classes"].iloc[-1] == len(classes)
    assert summary["concepts"].iloc[-1] == len(members)
    # each level merges the groups of the one before
    for finer, coarser in [("group_propositional", "group_first_order"), ("group_first_order", "group_domain")]:
        assert (members.groupby(["class", finer])[coarser].nunique() == 1).all()


def test_classified_proofs_hold_on_a_fresh_bank_and_counterexamples_separate(classified, space):
    classes, members = classified.classes, classified.members
    bank = counterexample_bank(space.schema, 4_000, seed=99)  # not the bank the classification used
    signatures = evaluate_programs(list(members.program), bank, space.grammar)
    for (c, group), rows in members.groupby(["class", "group_domain"]).groups.items():
        rows = members.index.get_indexer(rows)
        assert (signatures[rows] == signatures[rows[0]]).all(), f"class {c}, proof group {group}"
    refuted = classes[classes.refuted]
    assert len(refuted) and not refuted.domain.any()
    for cex in map(json.loads, refuted.counterexample):
        a, b = space.programs[cex["first"]], space.programs[cex["second"]]
        assert evaluate(a, cex["scene"], space.grammar) != evaluate(b, cex["scene"], space.grammar)
