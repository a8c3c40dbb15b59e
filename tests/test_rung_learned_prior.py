"""The learned-prior rungs (bayes_concepts.rungs.learned_prior): rule probabilities counted by
hand on a three-program training set, the pcfg prior as alpha grows without bound, a slow
pure-Python twin of the counting on random training sets, pair and ConceptWorld spaces by
hand, bad knobs and spaces, and whole episodes scored by the rungs' oracles.  Spaces with
programs the grammar cannot derive (CLOSURE's, in clevr spaces) get the token-tree prior:
counted by hand on three relational programs, the uniform token-tree prior as alpha grows
(a slow pure-Python twin), finite on every concept of every CLOSURE split, and higher on a
split's test concepts when training shares their tokens."""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy.special import logsumexp

from bayes_concepts.suites.conceptworld.space import conceptworld_space
from bayes_concepts.episodes import sampler_for
from bayes_concepts.lot.logprob import derivation_log_prob, derivations
from bayes_concepts.divergence import program_atoms_and_compounds
from bayes_concepts.lot.grammar import load_grammar
from bayes_concepts.lot.program import QUANTIFIERS, Program
from bayes_concepts.suites.pairs import PairsLayout, pair_space, unseen_pairs_spec
from bayes_concepts.oracles import OracleSettings
from bayes_concepts.protocols import protocols
from bayes_concepts.resources import data_file
from bayes_concepts.rungs import RungError, check_rung, rung_learner, rungs, strong_concepts
from bayes_concepts.rungs.learned_prior import (learned_log_weights, learned_prior_model, learned_rule_probabilities,
                                                token_tree)
from bayes_concepts.spaces.extension_space import ExtensionSpace
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.splits import Split, curi_splits, make_split

NONE = np.zeros(0, np.int64)


def split_of(space, train, name="hand") -> Split:
    train = np.unique(np.asarray(train, np.int64))
    return Split(name, train, NONE, np.setdiff1d(np.arange(space.n_concepts), train), {},
                 n_concepts=space.n_concepts)


def normalised(w):
    w = np.asarray(w, np.float64)
    return w - logsumexp(w)


# ============================================================== three programs by hand
THREE = ["x color? red = exists=",                          # A
         "x shape? cube = x color? red = and for-all=",     # B
         "S color? blue count= 2 = exists="]                # C: x-free, stored collapsed
OTHERS = ["x color? blue = exists=", "x material? metal = x color? red = and exists=",
          "S shape? sphere count= 1 > exists=", "x size? large = exists="]


@pytest.fixture(scope="module")
def tiny():
    """Seven given programs on 1,000 scenes (no firing filter: every program stays a concept)."""
    return HypothesisSpace.from_programs(THREE + OTHERS, scenes=1000, max_rate=1.0, min_count=1, seed=0)


def ids(space, programs):
    return [space.find(p) for p in programs]


def test_tiny_space_is_what_the_hand_counts_assume(tiny):
    found = ids(tiny, THREE + OTHERS)
    assert None not in found and len(set(found)) == 7
    assert len(np.unique(tiny.synonym_classes)) == 7
    assert tiny.programs[found[2]] == "S color? blue count= 2 ="  # C is collapsed: two derivations
    assert tiny.programs[found[5]] == "S shape? sphere count= 1 >"


def test_unigram_probabilities_equal_counts_by_hand(tiny):
    # Rule uses of the three training derivations, written out:
    #   A: START->BOOL exists=, BOOL->C C =, C->OBJECT FC, OBJECT->x, FC->color?, C->red
    #   B: START->BOOL for-all=, BOOL->BOOL BOOL and, BOOL->SH SH =, SH->OBJECT FSH, OBJECT->x,
    #      FSH->shape?, SH->cube, BOOL->C C =, C->OBJECT FC, OBJECT->x, FC->color?, C->red
    #   C (collapsed, half a derivation with each quantifier): START->BOOL exists= 1/2,
    #      START->BOOL for-all= 1/2, BOOL->NUM NUM =, NUM->SETFC C count=, SETFC->SET FC, SET->S,
    #      FC->color?, C->blue, NUM->2
    # so BOOL: 5 uses (C C = 2, and 1, SH SH = 1, NUM NUM = 1); C: 5 (OBJECT FC 2, red 2, blue 1);
    # NUM: 2; SET: 1; START: 3 (1.5 each).  Grammar: BOOL weights sum to 28 (C C = has 3, M M =
    # 3, NUM NUM > 1); C: 1/2 for OBJECT FC, 1/16 per colour; NUM: 1/10 per count= form, 1/6
    # per number; SET: 1/2 each.
    a = 2.0
    theta = learned_rule_probabilities(tiny, split_of(tiny, ids(tiny, THREE)), a)
    hand = {
        ("START", "START -> BOOL exists="): (1.5 + a / 2) / (3 + a),
        ("BOOL", "BOOL -> C C ="): (2 + a * 3 / 28) / (5 + a),
        ("BOOL", "BOOL -> BOOL BOOL and"): (1 + a * 3 / 28) / (5 + a),
        ("BOOL", "BOOL -> M M ="): (0 + a * 3 / 28) / (5 + a),
        ("BOOL", "BOOL -> NUM NUM >"): (0 + a * 1 / 28) / (5 + a),
        ("C", "C -> red"): (2 + a / 16) / (5 + a),
        ("C", "C -> blue"): (1 + a / 16) / (5 + a),
        ("C", "C -> OBJECT FC"): (2 + a / 2) / (5 + a),
        ("NUM", "NUM -> 2"): (1 + a / 6) / (2 + a),
        ("NUM", "NUM -> SETFSH SH count="): (0 + a / 10) / (2 + a),
        ("SET", "SET -> S"): (1 + a / 2) / (1 + a),
        ("SH", "SH -> sphere"): (0 + a / 6) / (2 + a),
        ("M", "M -> metal"): 0.25,  # no training use of M: the grammar's own
    }
    for (lhs, rule), p in hand.items():
        assert theta[lhs][rule] == pytest.approx(p, rel=1e-12), rule
    for lhs, table in theta.items():
        assert sum(table.values()) == pytest.approx(1.0, abs=1e-12), lhs

    # two concepts' learned log priors, products of the table above
    w = learned_log_weights(tiny, split_of(tiny, ids(tiny, THREE)), a)
    t = {rule: p for (_, rule), p in hand.items()}
    metal_red = (math.log(t["START -> BOOL exists="]) + math.log(t["BOOL -> BOOL BOOL and"])
                 + math.log(t["BOOL -> M M ="]) + math.log(0.5) + math.log(t["M -> metal"])
                 + math.log(t["BOOL -> C C ="]) + math.log(t["C -> OBJECT FC"]) + math.log(t["C -> red"]))
    assert w[tiny.find(OTHERS[1])] == pytest.approx(metal_red, rel=1e-12)
    # collapsed: both quantifiers' derivations summed, so the START factor is 1
    sphere = (math.log(t["BOOL -> NUM NUM >"]) + math.log(t["NUM -> SETFSH SH count="]) + math.log(t["SET -> S"])
              + math.log(t["SH -> sphere"]) + math.log((0 + a / 6) / (2 + a)))  # NUM -> 1, like NUM -> 2 unused
    assert w[tiny.find(OTHERS[2])] == pytest.approx(sphere, rel=1e-12)


def test_parent_conditioned_probabilities_equal_counts_by_hand(tiny):
    a = 3.0
    theta = learned_rule_probabilities(tiny, split_of(tiny, ids(tiny, THREE)), a, variant="parent")
    # under START->BOOL exists= the BOOL is A's C C = (1) and half of C's NUM NUM = (collapsed)
    under_exists = theta["START -> BOOL exists= [0]"]
    assert under_exists["BOOL -> C C ="] == pytest.approx((1 + a * 3 / 28) / (1.5 + a), rel=1e-12)
    assert under_exists["BOOL -> NUM NUM ="] == pytest.approx((0.5 + a * 0.5 / 28) / (1.5 + a), rel=1e-12)
    # B's left conjunct
    assert theta["BOOL -> BOOL BOOL and [0]"]["BOOL -> SH SH ="] == pytest.approx((1 + a * 3 / 28) / (1 + a))
    # the constant slot of C C = saw red twice (A and B); its object slot never a constant
    assert theta["BOOL -> C C = [1]"]["C -> red"] == pytest.approx((2 + a / 16) / (2 + a), rel=1e-12)
    assert theta["BOOL -> C C = [0]"]["C -> OBJECT FC"] == pytest.approx((2 + a / 2) / (2 + a), rel=1e-12)
    assert theta["BOOL -> C C = [0]"]["C -> red"] == pytest.approx((a / 16) / (2 + a), rel=1e-12)
    assert theta["NUM -> SETFC C count= [1]"]["C -> blue"] == pytest.approx((1 + a / 16) / (1 + a), rel=1e-12)
    assert theta["ROOT"]["START -> BOOL for-all="] == pytest.approx((1.5 + a / 2) / (3 + a), rel=1e-12)
    for context, table in theta.items():
        assert sum(table.values()) == pytest.approx(1.0, abs=1e-12), context


def test_only_the_shortest_program_of_a_synonym_class_counts():
    # two synonyms (the same extension on every scene); the longer one adds nothing
    progs = ["x color? red = exists=", "x color? red = x color? red = and exists=", "x shape? cube = exists="]
    space = HypothesisSpace.from_programs(progs, scenes=600, max_rate=1.0, min_count=1, seed=1, reject=False)
    short, long_ = space.find(progs[0]), space.find(progs[1])
    assert space.synonym_classes[short] == space.synonym_classes[long_]
    one = learned_log_weights(space, split_of(space, [short]), 0.5)
    both = learned_log_weights(space, split_of(space, [short, long_]), 0.5)
    np.testing.assert_array_equal(one, both)
    assert not np.array_equal(one, learned_log_weights(space, split_of(space, [long_]), 0.5))


# ==================================================================== alpha -> infinity
@pytest.mark.parametrize("variant", ["unigram", "parent"])
def test_huge_alpha_gives_the_pcfg_prior(small_space, variant):
    for name, split in curi_splits(small_space).items():
        w = learned_log_weights(small_space, split, 1e12, variant)
        assert w.shape == (small_space.n_concepts,) and w.dtype == np.float64
        np.testing.assert_allclose(normalised(w), normalised(small_space.log_pcfg), rtol=0, atol=1e-6, err_msg=name)
        # and the learned grammar is a proper one: every program's probability at most 1
        assert np.all(learned_log_weights(small_space, split, 1.0, variant) <= 0)


@pytest.fixture(scope="module")
def derivable_clevr(clevr_space):
    """300 of the clevr space's programs that the grammar derives, as a space of their own (so
    its learned prior is the grammar-rule one)."""
    good = np.flatnonzero(np.isfinite(clevr_space.log_pcfg))
    pick = np.random.default_rng(0).choice(good, 300, replace=False)
    return HypothesisSpace.from_programs([clevr_space.programs[i] for i in pick], grammar=clevr_space.grammar,
                                         scenes=400, max_rate=1.0, min_count=1, seed=0)


@pytest.mark.parametrize("variant", ["unigram", "parent"])
def test_huge_alpha_gives_the_pcfg_prior_in_the_relational_grammar(derivable_clevr, variant):
    space = derivable_clevr
    assert np.isfinite(space.log_pcfg).all() and learned_prior_model(space) == "grammar rules"
    rng = np.random.default_rng(0)
    split = split_of(space, rng.choice(space.n_concepts, 60, replace=False))
    w = learned_log_weights(space, split, 1e12, variant)
    np.testing.assert_allclose(normalised(w), normalised(space.log_pcfg), rtol=0, atol=1e-6)
    low = learned_log_weights(space, split, 0.5, variant)
    assert np.all(np.isfinite(low)) and not np.allclose(normalised(low), normalised(w))


def test_derivations_sum_to_the_inside_probability(small_space, clevr_space):
    for space in (small_space, clevr_space):
        g = space.grammar
        for i in range(0, space.n_concepts, max(1, space.n_concepts // 60)):
            toks = space.program(i).tokens
            ds = derivations(toks, g)
            lp = derivation_log_prob(toks, g)[0]
            assert (logsumexp([d[0] for d in ds]) if ds else -np.inf) == pytest.approx(lp, rel=1e-12)


# ===================================================================== slow twin
def slow_trees(tokens, g):
    """Every derivation of tokens as nested (rule, [(slot, subtree), ...]), by trying every rule
    and every way of cutting the span (each symbol covers at least one token)."""
    prods = list(enumerate(g.productions))

    @lru_cache(maxsize=None)
    def cover(sym, i, j):
        if sym not in g.nonterminals:
            return [None] if j == i + 1 and tokens[i] == sym else []
        found = []
        for r, p in prods:
            if p.lhs == sym:
                for kids in cuts(p.rhs, 0, i, j):
                    found.append((r, kids))
        return found

    def cuts(rhs, k, i, j):
        if k == len(rhs) - 1:
            return [[(k, t)] for t in cover(rhs[k], i, j)]
        out = []
        for m in range(i + 1, j - (len(rhs) - k - 1) + 1):
            heads = cover(rhs[k], i, m)
            if heads:
                for rest in cuts(rhs, k + 1, m, j):
                    out.extend([(k, h)] + rest for h in heads)
        return out

    return cover(g.start, 0, len(tokens))


def slow_events(tree, parent=-1, slot=0):
    """((parent, slot, rule), ...) of a tree, terminals left out."""
    r, kids = tree
    out = [(parent, slot, r)]
    for k, child in kids:
        if child is not None:
            out.extend(slow_events(child, r, k))
    return out


def slow_derivation_table(space):
    """Per concept: list of (probability under the grammar, events) of every derivation."""
    g = space.grammar
    table = []
    for i in range(space.n_concepts):
        prog = space.program(i)
        strings = ([prog.tokens + (q,) for q in QUANTIFIERS] if prog.quantifier is None and not g.is_relational
                   else [prog.tokens])
        rows = []
        for toks in strings:
            for tree in slow_trees(toks, g):
                ev = slow_events(tree)
                rows.append((math.prod(g.productions[r].prob for _, _, r in ev), ev))
        table.append(rows)
    return table


def slow_learned(space, table, train, alpha, variant):
    g = space.grammar
    lengths, classes = space.lengths, space.synonym_classes
    best = {}
    for i in sorted(set(int(t) for t in train)):
        c = int(classes[i])
        if c not in best or (lengths[i], i) < (lengths[best[c]], best[c]):
            best[c] = i
    counts, totals = Counter(), Counter()
    for i in best.values():
        z = sum(p for p, _ in table[i])
        for p, ev in table[i]:
            for parent, slot, r in ev:
                key = r if variant == "unigram" else (parent, slot, r)
                ctx = g.productions[r].lhs if variant == "unigram" else (parent, slot)
                counts[key] += p / z
                totals[ctx] += p / z
    out = []
    for rows in table:
        total = 0.0
        for _, ev in rows:
            prob = 1.0
            for parent, slot, r in ev:
                key = r if variant == "unigram" else (parent, slot, r)
                ctx = g.productions[r].lhs if variant == "unigram" else (parent, slot)
                prob *= (counts[key] + alpha * g.productions[r].prob) / (totals[ctx] + alpha)
            total += prob
        out.append(math.log(total) if total > 0 else -math.inf)
    return np.array(out)


_SLOW = {}


def slow_table(space):
    if id(space) not in _SLOW:
        _SLOW[id(space)] = (space, slow_derivation_table(space))
    return _SLOW[id(space)][1]


def training_sets(space):
    n = space.n_concepts
    classes = defaultdict(list)
    for i, c in enumerate(space.synonym_classes):
        classes[int(c)].append(i)
    big = [m for m in classes.values() if len(m) > 1]
    collapsed = [i for i in range(n) if space.program(i).quantifier is None]
    assert big and collapsed
    return st.one_of(
        st.lists(st.integers(0, n - 1), max_size=40),
        st.integers(0, n - 1).map(lambda i: [i]),
        st.sampled_from(big),
        st.tuples(st.sampled_from(collapsed), st.lists(st.integers(0, n - 1), max_size=5)).map(
            lambda t: [t[0], *t[1]]),
        st.just(collapsed[:1]),
    )


@pytest.fixture(scope="module")
def twin_space(small_space):
    slow_table(small_space)  # parse once, off the hypothesis clock
    return small_space


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), alpha=st.sampled_from([0.05, 1.0, 7.5, 400.0]),
       variant=st.sampled_from(["unigram", "parent"]))
def test_slow_twin_equals_the_fast_path(twin_space, data, alpha, variant):
    space = twin_space
    train = data.draw(training_sets(space))
    fast = learned_log_weights(space, split_of(space, train), alpha, variant)
    slow = slow_learned(space, slow_table(space), train, alpha, variant)
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-10)


def test_slow_twin_agrees_with_the_grammar(small_space):
    table = slow_table(small_space)
    assert all(len(rows) == (2 if small_space.program(i).quantifier is None else 1) for i, rows in enumerate(table))
    lp = np.array([math.log(sum(p for p, _ in rows)) for rows in table])
    np.testing.assert_allclose(lp, small_space.log_pcfg, rtol=0, atol=1e-9)


# ======================================================= token trees (programs not derivable)
CLEVR_A = "S y color? red = filter:y exist"                                                  # derivable
CLEVR_B = "S y shape? cube = y S z color? blue = filter:z unique left and filter:y count 2 ="  # derivable
CLEVR_C = "S y S x color? red = filter:x unique right filter:y exist"    # filter:x: not derivable
CLEVR_OTHERS = ["S y size? large = filter:y exist",
                "S y S z material? metal = filter:z unique same_color filter:y count 1 ="]


@pytest.fixture(scope="module")
def tiny_relational():
    """The five programs above in the packaged clevr grammar, on 500 scenes (every one a concept)."""
    return HypothesisSpace.from_programs([CLEVR_A, CLEVR_B, CLEVR_C] + CLEVR_OTHERS,
                                         grammar=load_grammar(data_file("clevr.pcfg")), scenes=500, max_rate=1.0,
                                         min_count=1, seed=0)


def test_tiny_relational_space_is_what_the_hand_counts_assume(tiny_relational):
    space = tiny_relational
    found = ids(space, [CLEVR_A, CLEVR_B, CLEVR_C] + CLEVR_OTHERS)
    assert None not in found and len(set(found)) == 5 and len(np.unique(space.synonym_classes)) == 5
    assert list(np.isfinite(space.log_pcfg[found])) == [True, True, False, True, True]
    assert learned_prior_model(space) == "token tree (1 of 5 concepts are not derivable by the grammar)"
    # C's tree: bound variables renamed away, classes the nodes' result types
    assert token_tree(space.program(found[2])) == [
        ("S", "SET", "filter", 0), ("VAR", "OBJ", "right", 0), ("S", "SET", "filter", 0),
        ("VAR", "OBJ", "color?", 0), ("color?", "COLOR", "=", 0), ("red", "COLOR", "=", 1),
        ("=", "BOOL", "filter", 1), ("filter", "SET", "unique", 0), ("unique", "OBJ", "right", 1),
        ("right", "BOOL", "filter", 1), ("filter", "SET", "exist", 0), ("exist", "BOOL", "ROOT", 0)]


def test_token_tree_probabilities_equal_counts_by_hand(tiny_relational):
    # Token types of the space per class (θ0 = 1/size): SET {S, filter} 2; OBJ {VAR, unique} 2;
    # COLOR {color?, red, blue} 3; SIZE {size?, large} 2; SHAPE {shape?, cube} 2;
    # MATERIAL {material?, metal} 2; BOOL {=, exist, right, same_color, left, and} 6;
    # NUM {count, 1, 2} 3.
    # Nodes of the three training programs, written out:
    #   A: S VAR color? red = filter exist
    #   B: S VAR shape? cube = VAR S VAR color? blue = filter unique left and filter count 2 =
    #   C: S VAR S VAR color? red = filter unique right filter exist
    # so SET: S 5, filter 5 (10); OBJ: VAR 6, unique 2 (8); COLOR: color? 3, red 2, blue 1 (6);
    # SHAPE: shape? 1, cube 1 (2); BOOL: = 5, exist 2, left 1, right 1, and 1 (10);
    # NUM: count 1, 2 1 (2); SIZE and MATERIAL: none.
    space, a = tiny_relational, 2.0
    split = split_of(space, ids(space, [CLEVR_A, CLEVR_B, CLEVR_C]))
    hand = {
        "SET": {"S": (5 + a / 2) / (10 + a), "filter": (5 + a / 2) / (10 + a)},
        "OBJ": {"VAR": (6 + a / 2) / (8 + a), "unique": (2 + a / 2) / (8 + a)},
        "COLOR": {"color?": (3 + a / 3) / (6 + a), "red": (2 + a / 3) / (6 + a), "blue": (1 + a / 3) / (6 + a)},
        "SIZE": {"size?": 0.5, "large": 0.5},
        "SHAPE": {"shape?": (1 + a / 2) / (2 + a), "cube": (1 + a / 2) / (2 + a)},
        "MATERIAL": {"material?": 0.5, "metal": 0.5},
        "BOOL": {"=": (5 + a / 6) / (10 + a), "exist": (2 + a / 6) / (10 + a), "left": (1 + a / 6) / (10 + a),
                 "right": (1 + a / 6) / (10 + a), "and": (1 + a / 6) / (10 + a), "same_color": (a / 6) / (10 + a)},
        "NUM": {"count": (1 + a / 3) / (2 + a), "2": (1 + a / 3) / (2 + a), "1": (a / 3) / (2 + a)},
    }
    theta = learned_rule_probabilities(space, split, a)
    assert theta == {c: pytest.approx(t, rel=1e-12) for c, t in hand.items()}
    for table in theta.values():
        assert sum(table.values()) == pytest.approx(1.0, abs=1e-12)

    w = learned_log_weights(space, split, a)
    t = {tok: p for table in hand.values() for tok, p in table.items()}
    lg = {tok: math.log(p) for tok, p in t.items()}
    size_large = lg["S"] + lg["VAR"] + lg["size?"] + lg["large"] + lg["="] + lg["filter"] + lg["exist"]
    assert w[space.find(CLEVR_OTHERS[0])] == pytest.approx(size_large, rel=1e-12)
    metal = (2 * lg["S"] + 2 * lg["VAR"] + lg["material?"] + lg["metal"] + 2 * lg["="] + 2 * lg["filter"]
             + lg["unique"] + lg["same_color"] + lg["count"] + lg["1"])
    assert w[space.find(CLEVR_OTHERS[1])] == pytest.approx(metal, rel=1e-12)
    # the underivable training program has a finite weight too, a product of the same table
    c = (2 * lg["S"] + 2 * lg["VAR"] + lg["color?"] + lg["red"] + lg["="] + 2 * lg["filter"] + lg["unique"]
         + lg["right"] + lg["exist"])
    assert w[space.find(CLEVR_C)] == pytest.approx(c, rel=1e-12)


def test_parent_conditioned_token_tree_by_hand(tiny_relational):
    # Contexts (parent token, slot, class) of the training nodes, counted from the trees of A, B, C:
    #   ROOT: BOOL -- exist (A, C), = (B); filter [0]: SET -- S 5 times; filter [1]: BOOL -- = (A,
    #   B's inner filter, C's inner filter), and (B), right (C); exist [0]: SET -- filter (A, C);
    #   = [0]: COLOR -- color? 3; = [1]: COLOR -- red (A, C), blue (B); = [0]: NUM -- count (B).
    space, a = tiny_relational, 3.0
    split = split_of(space, ids(space, [CLEVR_A, CLEVR_B, CLEVR_C]))
    theta = learned_rule_probabilities(space, split, a, variant="parent")
    assert theta["ROOT: BOOL"]["exist"] == pytest.approx((2 + a / 6) / (3 + a), rel=1e-12)
    assert theta["ROOT: BOOL"]["and"] == pytest.approx((a / 6) / (3 + a), rel=1e-12)
    assert theta["filter [0]: SET"] == pytest.approx({"S": (5 + a / 2) / (5 + a), "filter": (a / 2) / (5 + a)})
    assert theta["filter [1]: BOOL"]["="] == pytest.approx((3 + a / 6) / (5 + a), rel=1e-12)
    assert theta["filter [1]: BOOL"]["right"] == pytest.approx((1 + a / 6) / (5 + a), rel=1e-12)
    assert theta["= [1]: COLOR"] == pytest.approx({"red": (2 + a / 3) / (3 + a), "blue": (1 + a / 3) / (3 + a),
                                                   "color?": (a / 3) / (3 + a)})
    assert theta["= [1]: NUM"]["1"] == pytest.approx((a / 3) / (1 + a), rel=1e-12)
    assert theta["same_color [1]: OBJ"] == {"VAR": 0.5, "unique": 0.5}  # a context no training node has
    for table in theta.values():
        assert sum(table.values()) == pytest.approx(1.0, abs=1e-12)
    # size? large: S under filter, VAR size? large in unseen contexts, = under filter, filter
    # under exist, exist at the root
    w = learned_log_weights(space, split, a, variant="parent")
    want = (math.log((5 + a / 2) / (5 + a)) + 3 * math.log(0.5) + math.log((3 + a / 6) / (5 + a))
            + math.log((2 + a / 2) / (2 + a)) + math.log((2 + a / 6) / (3 + a)))
    assert w[space.find(CLEVR_OTHERS[0])] == pytest.approx(want, rel=1e-12)


def slow_token_tree(program):
    """(token, class, parent token, slot) per node in postfix order, by recursion from the root;
    binders named by their operator and object variables VAR in a relational grammar."""
    rename = program.grammar.is_relational

    def name(node):
        if rename and ":" in node.op:
            return node.op.split(":")[0]
        if rename and node.kind == "variable" and node.type == "OBJ":
            return "VAR"
        return node.op

    out = []

    def visit(node, parent, slot):
        for k, child in enumerate(node.children):
            visit(child, name(node), k)
        out.append((name(node), node.type, parent, slot))

    visit(program.root, "ROOT", 0)
    return out


_SLOW_TREES = {}


def slow_trees_of(space):
    """Every concept's slow token tree, each program parsed on its own (kept per space)."""
    if id(space) not in _SLOW_TREES:
        _SLOW_TREES[id(space)] = (space, [slow_token_tree(Program.parse(p, space.grammar)) for p in space.programs])
    return _SLOW_TREES[id(space)][1]


def slow_token_learned(space, trees, train, alpha, variant):
    """The learned token-tree log weights by dictionaries and loops (alpha None: the uniform
    token-tree prior)."""
    lengths, classes = space.lengths, space.synonym_classes
    best = {}
    for i in sorted(set(int(t) for t in train)):
        c = int(classes[i])
        if c not in best or (lengths[i], i) < (lengths[best[c]], best[c]):
            best[c] = i
    members = defaultdict(set)
    for tree in trees:
        for tok, cls, _, _ in tree:
            members[cls].add(tok)
    counts, totals = Counter(), Counter()
    for i in best.values():
        for tok, cls, parent, slot in trees[i]:
            ctx = cls if variant == "unigram" else (parent, slot, cls)
            counts[ctx, tok] += 1
            totals[ctx] += 1
    out = []
    for tree in trees:
        lp = 0.0
        for tok, cls, parent, slot in tree:
            if alpha is None:
                lp -= math.log(len(members[cls]))
                continue
            ctx = cls if variant == "unigram" else (parent, slot, cls)
            lp += math.log((counts[ctx, tok] + alpha / len(members[cls])) / (totals[ctx] + alpha))
        out.append(lp)
    return np.array(out)


def test_token_trees_read_programs_as_the_parser_and_divergence_do(clevr_space):
    trees = slow_trees_of(clevr_space)
    for i in range(0, clevr_space.n_concepts, 7):
        prog = clevr_space.program(i)
        tree = token_tree(prog)
        assert tree == trees[i], clevr_space.programs[i]
        assert [t for t, *_ in tree] == program_atoms_and_compounds(prog)[0]


@pytest.fixture(scope="module")
def closure_splits(clevr_space):
    return protocols.get("closure").splits(clevr_space)


@pytest.mark.parametrize("variant", ["unigram", "parent"])
def test_huge_alpha_gives_the_uniform_token_tree_prior(clevr_space, closure_splits, variant):
    assert learned_prior_model(clevr_space) == (f"token tree ({int(np.sum(~np.isfinite(clevr_space.log_pcfg)))} of "
                                                f"{clevr_space.n_concepts} concepts are not derivable by the grammar)")
    uniform = slow_token_learned(clevr_space, slow_trees_of(clevr_space), [], None, variant)
    for split in list(closure_splits.values())[:2] + [split_of(clevr_space, [])]:
        w = learned_log_weights(clevr_space, split, 1e15, variant)  # counts up to ~1e4: off by ~1e-11 a node
        np.testing.assert_allclose(w, uniform, rtol=0, atol=1e-6)
    # and a finite alpha learns: the twin at alpha 1 on a CLOSURE training set
    split = next(iter(closure_splits.values()))
    np.testing.assert_allclose(learned_log_weights(clevr_space, split, 1.0, variant),
                               slow_token_learned(clevr_space, slow_trees_of(clevr_space), split.train, 1.0, variant),
                               rtol=1e-10, atol=1e-10)
    assert not np.allclose(normalised(learned_log_weights(clevr_space, split, 1.0, variant)), normalised(uniform))


@pytest.fixture(scope="module")
def mixed_relational(clevr_space):
    """A few hundred of the clevr space's programs, derivable and not, as a space of their own."""
    finite = np.isfinite(clevr_space.log_pcfg)
    rng = np.random.default_rng(1)
    pick = np.concatenate([rng.choice(np.flatnonzero(finite), 150, replace=False),
                           rng.choice(np.flatnonzero(~finite), 150, replace=False)])
    space = HypothesisSpace.from_programs([clevr_space.programs[i] for i in pick], grammar=clevr_space.grammar,
                                          scenes=400, max_rate=1.0, min_count=1, seed=0)
    slow_trees_of(space)  # parse once, off the hypothesis clock
    return space


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), alpha=st.sampled_from([0.05, 1.0, 7.5, 400.0]),
       variant=st.sampled_from(["unigram", "parent"]))
def test_token_tree_slow_twin_equals_the_fast_path(mixed_relational, data, alpha, variant):
    space = mixed_relational
    n = space.n_concepts
    train = data.draw(st.lists(st.integers(0, n - 1), max_size=60))
    fast = learned_log_weights(space, split_of(space, train), alpha, variant)
    np.testing.assert_allclose(fast, slow_token_learned(space, slow_trees_of(space), train, alpha, variant),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", ["learned_prior", "learned_prior_parent"])
def test_every_concept_of_every_closure_split_has_a_finite_learned_prior(clevr_space, closure_splits, name):
    assert np.isneginf(clevr_space.log_pcfg).any()  # the space these rungs used to give weight 0
    variant = "unigram" if name == "learned_prior" else "parent"
    assert closure_splits
    for split_name, split in closure_splits.items():
        w = learned_log_weights(clevr_space, split, 1.0, variant)
        assert w.shape == (clevr_space.n_concepts,) and np.isfinite(w).all(), split_name
        assert np.all(w <= 0)  # each factor is a probability
    learner = rung_learner(name, clevr_space, split, alpha=2.0)
    on = strong_concepts(split)
    assert np.array_equal(learner.concepts, on) and np.isfinite(learner.log_prior[on]).all()
    assert learner.info() == {"kind": "learned_prior", "model": learned_prior_model(clevr_space),
                              "variant": variant, "alpha": 2.0}
    assert learner.model.startswith("token tree (")
    assert rung_learner(name, clevr_space, split).info()["alpha"] == 1.0  # the default


def test_sharing_tokens_with_the_test_concepts_raises_their_prior(clevr_space, closure_splits):
    # Half of a split's test concepts added to its training set must raise the learned prior
    # of the other half (normalised over the strong oracle's concepts) above what the training
    # set alone gives, and above what as many concepts from elsewhere in the space give.
    rng = np.random.default_rng(0)
    checked = 0
    for split_name, split in closure_splits.items():
        if len(split.test) < 4:
            continue
        test = rng.permutation(split.test)
        seen, unseen = test[:len(test) // 2], test[len(test) // 2:]
        elsewhere = np.setdiff1d(np.arange(clevr_space.n_concepts), np.union1d(split.train, split.test))
        other = rng.choice(elsewhere, len(seen), replace=False)
        on = strong_concepts(split)
        at = np.searchsorted(on, unseen)
        for variant in ("unigram", "parent"):
            mean = {}
            for what, train in (("train", split.train), ("train + test half", np.union1d(split.train, seen)),
                                ("train + others", np.union1d(split.train, other))):
                w = learned_log_weights(clevr_space, split_of(clevr_space, train), 1.0, variant)[on]
                mean[what] = normalised(w)[at].mean()
            assert mean["train + test half"] > mean["train"] + 1e-3, (split_name, variant, mean)
            assert mean["train + test half"] > mean["train + others"] + 1e-3, (split_name, variant, mean)
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("alpha", [0, -2.0, float("inf"), "10"])
def test_bad_alpha_is_refused_on_token_trees(clevr_space, alpha):
    split = split_of(clevr_space, [0, 1])
    for variant in ("unigram", "parent"):
        with pytest.raises(RungError, match="alpha") as e:
            learned_log_weights(clevr_space, split, alpha, variant)
        assert "\n" not in str(e.value)
    with pytest.raises(RungError) as e:
        rung_learner("learned_prior_parent", clevr_space, split, alpha=alpha)
    assert "\n" not in str(e.value)


def test_spaces_the_grammar_derives_keep_the_grammar_rules(small_space, tiny):
    for space in (small_space, tiny):
        assert learned_prior_model(space) == "grammar rules"
    learner = rung_learner("learned_prior", small_space, curi_splits(small_space)["boolean"], alpha=5.0)
    assert learner.info()["model"] == "grammar rules" and learner.model == "grammar rules"


# ============================================================== pairs and ConceptWorld
PAIRS_TRAIN = [("wet", "dog"), ("wet", "cat"), ("dry", "dog"), ("old", "cat"), ("wet", "fox")]
PAIRS_TEST = [("dry", "cat"), ("old", "dog"), ("old", "fox")]


@pytest.fixture(scope="module")
def pairs():
    items, attrs, objs = [], [], []
    for a, o in PAIRS_TRAIN + PAIRS_TEST:
        for k in range(12):
            items.append(f"{a}_{o}_{k}")
            attrs.append(a)
            objs.append(o)
    space = pair_space(PairsLayout(items, attrs, objs, None, {"train": PAIRS_TRAIN, "val": [], "test": PAIRS_TEST}))
    return space, make_split(space, unseen_pairs_spec(space, PAIRS_TRAIN))


def test_pair_space_by_hand(pairs):
    space, split = pairs
    a = 1.5
    # attributes dry old wet (|A| = 3): 1, 1, 3 training pairs; objects cat dog fox (|O| = 3): 2, 2, 1; N = 5
    th_a = {"dry": (1 + a / 3) / (5 + a), "old": (1 + a / 3) / (5 + a), "wet": (3 + a / 3) / (5 + a)}
    th_o = {"cat": (2 + a / 3) / (5 + a), "dog": (2 + a / 3) / (5 + a), "fox": (1 + a / 3) / (5 + a)}
    w = learned_log_weights(space, split, a)
    for i, parts in enumerate(space.parts):
        d = dict(parts)
        want = math.log(th_a[d["attribute"]]) if "attribute" in d else 0.0
        want += math.log(th_o[d["object"]]) if "object" in d else 0.0
        assert w[i] == pytest.approx(want, rel=1e-12), parts
    # pairs ∝ (n_a + α/|A|)(n_o + α/|O|)
    pair = {tuple(v for _, v in p): i for i, p in enumerate(space.parts) if len(p) == 2}
    ratio = w[pair[("old", "fox")]] - w[pair[("dry", "cat")]]
    assert ratio == pytest.approx(math.log((1 + a / 3) * (1 + a / 3)) - math.log((1 + a / 3) * (2 + a / 3)))
    assert learned_rule_probabilities(space, split, a) == {"attribute": pytest.approx(th_a),
                                                           "object": pytest.approx(th_o)}
    # parent: the object given the attribute; dry saw dog once, wet saw dog, cat, fox
    wp = learned_log_weights(space, split, a, variant="parent")
    assert wp[pair[("dry", "cat")]] == pytest.approx(math.log(th_a["dry"]) + math.log((0 + a / 3) / (1 + a)))
    assert wp[pair[("wet", "fox")]] == pytest.approx(math.log(th_a["wet"]) + math.log((1 + a / 3) / (3 + a)))
    prim = [i for i, p in enumerate(space.parts) if len(p) == 1]
    np.testing.assert_array_equal(wp[prim], w[prim])
    # huge alpha: the space's description prior
    np.testing.assert_allclose(learned_log_weights(space, split, 1e12), space.log_pcfg, atol=1e-9)


@pytest.fixture(scope="module")
def cw():
    return conceptworld_space(depth=3, per_concept=4, broken_per_concept=1, noise_scenes=10)


def test_conceptworld_by_hand(cw):
    families = sorted({dict(p)["concept"] for p in cw.parts})
    ns = sorted({dict(p)["n"] for p in cw.parts if len(p) == 2})
    assert ns == ["1", "2", "3"]
    fam_of = {i: dict(p)["concept"] for i, p in enumerate(cw.parts)}
    n_of = {i: dict(p).get("n") for i, p in enumerate(cw.parts)}
    seq = [i for i in fam_of if n_of[i] is not None]
    fixed = [i for i in fam_of if n_of[i] is None]
    f1 = fam_of[seq[0]]
    inst = [i for i in seq if fam_of[i] == f1]
    train = [inst[0], inst[1], fixed[0]]  # n = 1, 2 of family f1, and one concept without n
    a, F, V = 2.0, len(families), 3
    w = learned_log_weights(cw, split_of(cw, train), a)
    for i in range(cw.n_concepts):
        f = fam_of[i]
        n_f = sum(fam_of[t] == f for t in train)
        want = math.log((n_f + a / F) / (3 + a))
        if n_of[i] is not None:
            m = sum(n_of[t] == n_of[i] for t in train)
            want += math.log((m + a / V) / (2 + a))
        assert w[i] == pytest.approx(want, rel=1e-12), cw.programs[i]
    wp = learned_log_weights(cw, split_of(cw, train), a, variant="parent")
    third = [i for i in inst if n_of[i] == "3"][0]
    assert wp[third] == pytest.approx(math.log((2 + a / F) / (3 + a)) + math.log((0 + a / V) / (2 + a)))
    other = [i for i in seq if fam_of[i] != f1 and n_of[i] == "1"][0]
    assert wp[other] == pytest.approx(math.log((0 + a / F) / (3 + a)) + math.log(1 / V))
    assert wp[fixed[0]] == w[fixed[0]]
    table = learned_rule_probabilities(cw, split_of(cw, train), a, variant="parent")
    assert table[f"n | {f1}"]["1"] == pytest.approx((1 + a / V) / (2 + a))


# ===================================================================== refusals
@pytest.mark.parametrize("alpha", [0, -1.0, float("nan"), float("inf"), "1", True, None])
def test_bad_alpha_is_a_one_line_rung_error(small_space, alpha):
    for name in ("learned_prior", "learned_prior_parent"):
        with pytest.raises(RungError) as e:
            check_rung(name, small_space, {"alpha": alpha})
        assert "\n" not in str(e.value) and "alpha" in str(e.value)
        with pytest.raises(RungError) as e:
            rung_learner(name, small_space, split_of(small_space, [0]), alpha=alpha)
        assert "\n" not in str(e.value)
    with pytest.raises(RungError) as e:
        learned_log_weights(small_space, split_of(small_space, [0]), alpha)
    assert "\n" not in str(e.value)


def test_a_space_without_a_grammar_pairs_or_definitions_is_refused(small_space):
    plain = ExtensionSpace.from_extensions(np.eye(12, dtype=bool)[:4].repeat(3, axis=1)[:, :12],
                                           ["a", "b", "c", "d"], min_count=1)
    for name in ("learned_prior", "learned_prior_parent"):
        assert rungs.get(name).applies(small_space) is None
        why = rungs.get(name).applies(plain)
        assert why and "\n" not in why
        with pytest.raises(RungError, match="cannot apply") as e:
            check_rung(name, plain)
        assert "\n" not in str(e.value)
    with pytest.raises(RungError, match="learned prior"):
        learned_log_weights(plain, split_of(plain, [0]), 1.0)
    with pytest.raises(RungError, match="variant"):
        learned_log_weights(small_space, split_of(small_space, [0]), 1.0, variant="grandparent")
    with pytest.raises(RungError, match="outside"):
        learned_log_weights(small_space, split_of(small_space, [small_space.n_concepts + 3]), 1.0)


# ===================================================================== episodes
def test_rungs_score_episodes(small_space):
    split = curi_splits(small_space)["boolean"]
    eps = sampler_for(small_space).sample(split.test, 50, "hard", seed=0)
    aps = {}
    for name in ("learned_prior", "learned_prior_parent"):
        for alpha in (0.1, 10.0):
            learner = rung_learner(name, small_space, split, alpha=alpha)
            assert learner.name == f"{name}[alpha={alpha:g}]"
            assert np.array_equal(learner.concepts, strong_concepts(split))
            ap = learner.evaluate(eps)["ap"]
            assert ap.shape == (50,) and np.isfinite(ap).all()
            aps[name, alpha] = ap
    default = rung_learner("learned_prior", small_space, split)
    assert default.name == "learned_prior"
    np.testing.assert_array_equal(default.evaluate(eps)["ap"], rung_learner(
        "learned_prior", small_space, split, alpha=1.0).evaluate(eps)["ap"])
    # the oracle's prior is the learned one (whatever the settings' prior): with a huge alpha,
    # the strong oracle's pcfg prior
    strong = rung_learner("strong", small_space, split, OracleSettings(prior="pcfg"))
    huge = rung_learner("learned_prior_parent", small_space, split, OracleSettings(prior="length"), alpha=1e12)
    on = strong.concepts
    np.testing.assert_allclose(huge.log_prior[on], strong.log_prior[on], rtol=0, atol=1e-6)
    assert not np.allclose(rung_learner("learned_prior", small_space, split, alpha=0.1).log_prior[on],
                           strong.log_prior[on], atol=1e-3)


def test_weights_do_not_depend_on_the_test_side(small_space):
    split = curi_splits(small_space)["concept_iid"]
    other = Split("other", split.train, NONE, split.train[:3], {}, n_concepts=small_space.n_concepts)
    for variant in ("unigram", "parent"):
        np.testing.assert_array_equal(learned_log_weights(small_space, split, 2.0, variant),
                                      learned_log_weights(small_space, other, 2.0, variant))
