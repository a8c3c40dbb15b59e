"""The ``mcmc`` rung against its definition (:mod:`bayes_concepts.rungs.mcmc`).

* the chain's stationary distribution: on a tiny grammar whose trees (up to a token bound)
  can be enumerated, with concepts = truth tables over two bits (many trees per concept),
  some concepts given target 0 and unequal likelihoods, the long-run (thinned) visit
  frequencies over concepts match Σ_{trees of c} P_pcfg(tree) · L(c) (chi-square);
* on the shared small CURI space: every visited concept is in the strong set; the learner's
  per-episode numbers equal those of ``Oracle(space, visited, settings)`` fitted on the
  episode's support (query predictions, CBA, AP via the test bank); the same seed gives the
  same numbers whatever the batching; bad knobs, spaces it cannot walk and splits with
  concepts the grammar does not derive are one-line RungErrors.

The stationary test is checked to have power: the chain with the node-count factor left
out fails it by a wide margin (p < 1e-12; p ~ 1e-90 in practice).
"""
from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import chisquare

from bayes_concepts.episodes import sampler_for
from bayes_concepts.lot.grammar import Grammar
from bayes_concepts.lot.logprob import derivations
from bayes_concepts.metrics import average_precision, class_balanced_accuracy
from bayes_concepts.oracles import Oracle, OracleSettings
from bayes_concepts.rungs import LADDER_ORDER, RungError, check_rung, rung_learner, rungs, strong_concepts
from bayes_concepts.rungs import mcmc
from bayes_concepts.rungs.mcmc import MCMCLearner, PCFGTrees, concept_of, concept_tree, run_chain
from bayes_concepts.splits import load_splits

TINY = """
value BIT 0 1
property d1? d1 BIT
property d2? d2 BIT
operators = and or not exists=
start START
objects 1 1 1
START -> BOOL exists=
BOOL -> BOOL BOOL and @ 1
BOOL -> BOOL not @ 1.5
BOOL -> x d1? 1 = | x d2? 1 = @ 2
"""
CAP = 15  # tokens: trees with longer yields have target 0


def truth_table(tokens) -> int:
    """The tiny language's concept of a token string: its truth table over (d1, d2), as a 4-bit id."""
    table = 0
    for k, (d1, d2) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
        stack, i = [], 0
        toks = list(tokens)
        while i < len(toks):
            t = toks[i]
            if t == "x":
                stack.append({"d1?": d1, "d2?": d2}[toks[i + 1]] == 1)
                i += 4
                continue
            if t == "not":
                stack.append(not stack.pop())
            elif t == "and":
                b, a = stack.pop(), stack.pop()
                stack.append(a and b)
            i += 1
        table |= int(stack[-1]) << k
    return table


def enumerate_trees(trees: PCFGTrees, symbol: str, budget: int) -> list:
    """Every tree from ``symbol`` whose yield has at most ``budget`` tokens."""
    out = []
    for rule in trees.rules_of[symbol]:
        slots = [s for s, nt in zip(trees.rhs[rule], trees.is_nt[rule]) if nt]
        left = budget - trees.n_terminals[rule]

        def fill(i, left, kids):
            if i == len(slots):
                out.append(trees.node(rule, tuple(kids)))
                return
            rest = sum(trees.min_len[s] for s in slots[i + 1:])
            for kid in enumerate_trees(trees, slots[i], left - rest):
                fill(i + 1, left - kid[2], kids + [kid])
        if left >= sum(trees.min_len[s] for s in slots):
            fill(0, left, [])
    return out


def test_visit_frequencies_match_the_exact_stationary_distribution(monkeypatch):
    g = Grammar.from_text(TINY, "tiny")
    trees = PCFGTrees(g)
    strong = [c for c in range(16) if c not in (0b0110, 0b1111)]  # two concepts outside the set
    log_l = np.full(16, -np.inf)
    log_l[strong] = np.log(1.0 + np.arange(len(strong)) % 5)  # unequal likelihoods
    cache = {}

    def concept(tokens):
        if tokens not in cache:
            cache[tokens] = truth_table(tokens)
        return cache[tokens]
    exact = np.zeros(16)
    every = enumerate_trees(trees, "START", CAP)
    assert len(every) > 100 and len({trees.tokens(t) for t in every}) == len(every)
    for t in every:
        c = concept(trees.tokens(t))
        exact[c] += math.exp(trees.log_prob(t) + log_l[c]) if log_l[c] > -np.inf else 0.0
    exact /= exact.sum()
    reached = exact > 0
    assert reached.sum() >= 8  # many concepts, several trees each
    start = next(t for t in every if trees.tokens(t) == ("x", "d1?", "1", "=", "exists="))
    n, thin = 150_000, 30
    chain = run_chain(trees, start, n, np.random.default_rng(1), concept, log_l, CAP)
    kept = chain[thin::thin]
    assert set(np.unique(chain)) <= set(np.flatnonzero(reached))
    counts = np.bincount(kept, minlength=16)[reached]
    assert chisquare(counts, exact[reached] * len(kept)).pvalue > 1e-3

    # the test has power: the same chain without the node-count factor log|N(t)| - log|N(t')|
    # (math.log of the node counts, ints, read as 0) targets something else, and is caught
    class NoNodeFactor:
        inf = math.inf

        @staticmethod
        def log(x):
            return 0.0 if isinstance(x, int) else math.log(x)
    monkeypatch.setattr(mcmc, "math", NoNodeFactor)
    wrong = run_chain(trees, start, n, np.random.default_rng(1), concept, log_l, CAP)[thin::thin]
    counts = np.bincount(wrong, minlength=16)[reached]
    assert chisquare(counts, exact[reached] * len(wrong)).pvalue < 1e-12


# ---------------------------------------------------------------------- the CURI space
class World:
    def __init__(self, space):
        self.space = space
        self.split = load_splits(space, ["concept_iid"])["concept_iid"]
        self.sampler = sampler_for(space)

    def episodes(self, n, negatives="hard", seed=0, part=None):
        return self.sampler.sample(self.split.test, n, negatives, seed=seed, part=part,
                                   meta={"split": "concept_iid", "side": "test"})


@pytest.fixture(scope="module")
def world(small_space):
    return World(small_space)


NOISY = OracleSettings(likelihood="noisy")


def test_visited_concepts_are_in_the_strong_set(world):
    strong = set(strong_concepts(world.split).tolist())
    for st_, negatives in ((OracleSettings(), "hard"), (NOISY, "easy")):
        learner = MCMCLearner(world.space, world.split, st_, n=300, seed=2)
        eps = world.episodes(6, negatives, seed=4)
        chains = learner.chains(eps)
        assert all(len(c) == 301 for c in chains)
        for c in chains:
            assert set(np.unique(c).tolist()) <= strong
    # with the noisy likelihood the chain moves between concepts
    assert max(len(np.unique(c)) for c in chains) > 3


def test_the_start_is_the_highest_prior_fitting_concept(world):
    space = world.space
    learner = MCMCLearner(space, world.split, OracleSettings(), n=1)
    eps = world.episodes(4, "hard", seed=1)
    tables = learner._tables(eps.meta, eps.support_scenes.shape[1], None)
    for e in range(4):
        lt = learner.log_target(eps.support_scenes[e], eps.support_labels[e], tables)
        c, tree = learner.start(lt)
        fits = np.flatnonzero(lt > -np.inf)
        assert c in fits and space.log_pcfg[c] == space.log_pcfg[fits].max()
        assert concept_of(space, learner.trees.tokens(tree)) == c
        assert learner.trees.log_prob(tree) <= space.log_pcfg[c] + 1e-12
    # every concept of the space has a tree the chain maps back to it, and its trees' total
    # probability (every derivation, both quantifiers when collapsed) is exp(log_pcfg)
    for c in range(0, space.n_concepts, 7):
        assert concept_of(space, learner.trees.tokens(concept_tree(space, c))) == c
        tokens = tuple(space.programs[c].split())
        total = [lp for end in ((), ("exists=",), ("for-all=",))
                 for lp, uses in derivations(tokens + end, space.grammar) if concept_of(space, learner.trees.tokens(learner.trees.from_uses(uses))) == c]
        assert np.logaddexp.reduce(total) == pytest.approx(space.log_pcfg[c], abs=1e-9)


@pytest.mark.parametrize("st_,negatives", [(OracleSettings(), "hard"), (NOISY, "easy"),
                                           (OracleSettings(likelihood="consistent", weak_empty="prior"), "easy")])
def test_equals_the_oracle_over_the_visited_set(world, st_, negatives):
    space = world.space
    learner = rung_learner("mcmc", space, world.split, st_, n=200, seed=5)
    eps = world.episodes(5, negatives, seed=8)
    out = learner.evaluate(eps)
    visited = learner.visited(eps)
    test_ids = np.asarray(space.test_bank.scene_ids)
    for e in range(len(eps)):
        assert out["n_hypotheses"][e] == len(visited[e])
        twin = Oracle(space, visited[e], st_).fit(eps.support_scenes[e], eps.support_labels[e],
                                                  hard=negatives == "hard", positives_drawn=eps.meta["n_positive"])
        assert out["empty"][e] == twin.empty_
        q = twin.predict_proba(eps.query_scenes[e])
        np.testing.assert_allclose(out["query_pred"][e], q, rtol=0, atol=1e-9)
        assert out["cba"][e] == pytest.approx(class_balanced_accuracy(out["query_pred"][e], eps.query_labels[e]))
        truth = space.test_bank.labels(int(eps.concept[e]))
        ap = average_precision(twin.predict_proba(test_ids), truth)
        assert abs(out["ap"][e] - ap) <= out["ap_bound"][e] + 1e-9 or math.isnan(ap) and math.isnan(out["ap"][e])


def test_same_seed_same_numbers_whatever_the_batching(world):
    learner = MCMCLearner(world.space, world.split, NOISY, n=150, seed=7)
    whole = world.episodes(7, "easy", seed=3)
    ref = learner.evaluate(whole)
    parts = [learner.evaluate(world.episodes(7, "easy", seed=3, part=p)) for p in ((0, 2), (2, 3), (3, 7))]
    for key in ref:
        assert np.array_equal(np.concatenate([p[key] for p in parts]), ref[key], equal_nan=True), key
    again = MCMCLearner(world.space, world.split, NOISY, n=150, seed=7).chains(whole)
    assert all(np.array_equal(a, b) for a, b in zip(again, learner.chains(whole)))
    other = MCMCLearner(world.space, world.split, NOISY, n=150, seed=8).chains(whole)
    assert any(not np.array_equal(a, b) for a, b in zip(other, again))


def test_registered_with_its_knobs_and_definition(world):
    rung = rungs.get("mcmc")
    assert set(rung.knobs) == {"n", "seed"} and rung.knobs["n"][0] == 1000
    assert "min(1, L(c')·|nodes(t)| / (L(c)·|nodes(t')|))" in rung.definition
    assert LADDER_ORDER.index("sampling_learned") + 1 == LADDER_ORDER.index("mcmc")
    learner = rung_learner("mcmc", world.space, world.split, n=1e2)
    assert learner.n == 100 and learner.name == "mcmc[n=100]"


@pytest.mark.parametrize("knobs,needle", [
    ({"n": 0}, "n must"), ({"n": 2.5}, "n must"), ({"n": True}, "n must"), ({"n": "many"}, "n must"),
    ({"n": 10**10}, "n must"), ({"seed": -1}, "seed must"), ({"seed": 0.5}, "seed must"),
    ({"burn_in": 3}, "not 'burn_in'")])
def test_bad_knobs_are_one_line_errors(world, knobs, needle):
    with pytest.raises(RungError) as info:
        check_rung("mcmc", world.space, knobs)
    assert needle in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(RungError):
        rung_learner("mcmc", world.space, world.split, **knobs)


def test_spaces_it_cannot_walk_are_one_line_errors(world):
    extension = SimpleNamespace(kind="extension", has_grammar=False)
    with pytest.raises(RungError, match="cannot apply") as info:
        check_rung("mcmc", extension)
    assert "\n" not in str(info.value)
    lp = np.array(world.space.log_pcfg, np.float64)
    lp[int(strong_concepts(world.split)[0])] = -np.inf
    underived = dataclasses.replace(world.space, log_pcfg=lp)
    assert check_rung("mcmc", underived).name == "mcmc"  # the space is walkable, the split's set is not
    for call in (lambda: rung_learner("mcmc", underived, world.split),
                 lambda: MCMCLearner(underived, world.split, OracleSettings())):
        with pytest.raises(RungError, match="-inf") as info:
            call()
        assert "\n" not in str(info.value)
