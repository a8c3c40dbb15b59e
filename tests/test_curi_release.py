"""CURI's release reproduced: the local-retry sampler, the fourth rejection rule, location
bins 0..7, the open filter, the ``curi`` preset, released strings, the release's split rules
and the two protocols.  Everything runs on toy grammars, hand-made
programs or tiny spaces."""
from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_concepts.spaces import build as B
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.lot.grammar import Grammar, curi_grammar, load_grammar
from bayes_concepts.lot.local_retries import RELEASE_RETRIES, sample_local_slow
from bayes_concepts.lot.program import Program
from bayes_concepts.lot.rejection import rejection_reason, rejection_rules
from bayes_concepts.lot.sampler import sample_programs
from bayes_concepts.protocols import get_protocol, mixed_values, protocols
from bayes_concepts.suites.curi.release import release_string, release_token_counts
from bayes_concepts.resources import data_file
from bayes_concepts.scenes.camera import pixels_to_bins
from bayes_concepts.scenes.samplers import sample_scenes
from bayes_concepts.splits import SplitSpecError, make_split

TOY_HEAD = "value V a b\nstart START\nmax_depth 3\n"


def toy(rules: str) -> Grammar:
    """A toy grammar whose terminals are non-constant tokens (x, S, non-x-S, and, not)."""
    return Grammar.from_text(TOY_HEAD + rules, source="<toy>")


def shares(sample) -> dict:
    strings = sample.strings()
    return {s: strings.count(s) / len(strings) for s in set(strings)}


# ------------------------------------------------------------------- local retries
def test_depth_failure_at_the_maximum_even_for_a_terminal():
    # START (depth 0) -> X (1) -> Y (2) -> S: at the release's depth 2 the nonterminal Y fails
    # although its only production is a terminal, so X always ends as x
    g = toy("START -> X and\nX -> Y | x\nY -> S\n")
    two = sample_programs(4_000, g, seed=1, max_depth=2, retries="local")
    assert set(two.strings()) == {"x and"}
    assert np.allclose(two.log_prob, math.log(0.5))  # the derivation's probability, not a conditional one
    assert two.depth.max() == 1
    three = shares(sample_programs(4_000, g, seed=1, max_depth=3, retries="local"))
    assert set(three) == {"x and", "S and"} and abs(three["S and"] - 0.5) < 0.04


def test_a_failing_child_is_redrawn_alone():
    # X -> A A and (1/2) | x (1/2); A -> S (1/2) | B (1/2) and B fails at depth 3.  Retrying each A
    # on its own keeps X's choice: "S S and" has share ~1/2.  Redrawing the whole program
    # conditions on both As succeeding: (1/2 * 1/4) / (1/2 * 1/4 + 1/2) = 1/5.
    g = toy("START -> X not\nX -> A A and | x\nA -> S | B\nB -> non-x-S\n")
    local = shares(sample_programs(40_000, g, seed=2, max_depth=3, retries="local"))
    whole = shares(sample_programs(40_000, g, seed=2, max_depth=2, retries="whole"))
    assert abs(local["S S and not"] - 0.5) < 0.01
    assert abs(whole["S S and not"] - 0.2) < 0.01


def test_failure_passes_to_the_parent_after_eleven_retries():
    # A succeeds with probability 1/16; X -> A and (1/2) | x (1/2).  A is expanded once and
    # re-expanded up to 11 times: it fails with probability (15/16)^12, and then X fails and is
    # expanded again by START.  Share of "S and not" = p / (p + 1/2) with p = (1 - (15/16)^12) / 2.
    g = toy("START -> X not\nX -> A and | x\nA -> S @ 1\nA -> B @ 15\nB -> non-x-S\n")
    got = shares(sample_programs(200_000, g, seed=3, max_depth=3, retries="local"))["S and not"]

    def share(retries):
        p = (1 - (15 / 16) ** (retries + 1)) / 2
        return p / (p + 0.5)

    assert RELEASE_RETRIES == 11
    assert abs(got - share(11)) < 0.004
    assert abs(got - share(10)) > 0.008 and abs(got - share(12)) > 0.008


def test_a_node_whose_children_are_all_constants_fails():
    g = curi_grammar()
    sample = sample_programs(20_000, g, seed=4, max_depth=5, retries="local")
    for s in sample.strings()[:2000]:
        assert rejection_reason(Program.parse(s, g), rules=()) is None
    const = {t for t, k in g.token_kinds.items() if k in ("value", "integer")}
    for row in sample.strings():
        toks = row.split()
        for i in range(2, len(toks)):
            if toks[i] in ("=", ">"):
                assert not (toks[i - 2] in const and toks[i - 1] in const), row


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(4, 6), n=st.integers(1, 300))
def test_kernel_matches_the_recursive_twin_on_curi(seed, depth, n):
    g = curi_grammar()
    fast = sample_programs(n, g, seed=seed, max_depth=depth, retries="local")
    stream = int(np.random.SeedSequence(seed).generate_state(1, np.uint64)[0])
    slow = sample_local_slow(n, g.tables, stream, depth)
    for i, (tokens, logp, deepest) in enumerate(slow):
        assert fast.tokens[i, :fast.lengths[i]].tolist() == tokens
        assert fast.log_prob[i] == logp and fast.depth[i] == deepest
    assert fast.depth.max() <= depth - 1


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), w=st.integers(1, 9), depth=st.integers(2, 4))
def test_kernel_matches_the_recursive_twin_on_toys(seed, w, depth):
    g = toy(f"START -> X not\nX -> A A and @ 2\nX -> x | Y\nY -> A\nA -> S @ 1\nA -> B @ {w}\nB -> non-x-S\n")
    fast = sample_programs(50, g, seed=seed, max_depth=depth, retries="local")
    stream = int(np.random.SeedSequence(seed).generate_state(1, np.uint64)[0])
    for i, (tokens, logp, deepest) in enumerate(sample_local_slow(50, g.tables, stream, depth)):
        assert fast.tokens[i, :fast.lengths[i]].tolist() == tokens and fast.log_prob[i] == logp


def test_local_log_probs_are_the_derivations():
    g = curi_grammar()
    sample = sample_programs(300, g, seed=5, max_depth=5, retries="local")
    for s, lp in zip(sample.strings(), sample.log_prob):
        assert lp == pytest.approx(Program.parse(s, g).log_prob(g), abs=1e-9)


def test_whole_program_sampler_unchanged():
    # today's default output, hashed before the local sampler was added
    s = sample_programs(20_000, seed=0)
    assert hashlib.sha256(s.tokens.tobytes()).hexdigest() == (
        "678b341c39394ae14b644f97cda6266040385e538e321f99dfead1e8ed7d9c72")
    assert s.attempts == sample_programs(20_000, seed=0, retries="whole").attempts


def test_bad_retries():
    with pytest.raises(ValueError, match="retries"):
        sample_programs(10, retries="sometimes")
    with pytest.raises(ValueError, match="max_depth >= 2"):
        sample_programs(10, max_depth=1, retries="local")


# -------------------------------------------------------------- rejection, bins, filter
@pytest.mark.parametrize("text, rejected", [
    ("non-x-S color? x color? exists= exists=", True),
    ("non-x-S locationX? x locationX? for-all= exists=", True),
    ("non-x-S locationX? x locationY? for-all= exists=", False),
    ("S color? x color? exists= exists=", False),          # the paper's third rule, not this one
    ("non-x-S color? red exists= exists=", False),
])
def test_release_rejection_rule(text, rejected):
    rule = rejection_rules.get("non_x_set_quantifier_over_own_property")
    assert rule(Program.parse(text)) is rejected


def test_release_grammar():
    g = load_grammar(data_file("curi_release.pcfg"))
    assert g.rejection_rules[-1] == "non_x_set_quantifier_over_own_property"
    assert g.schema.attribute("x").values == tuple(range(9))
    assert [p.rhs for p in g.productions] == [p.rhs for p in curi_grammar().productions]
    assert np.array_equal(g.tables.prod_logp, curi_grammar().tables.prod_logp)
    # the release's location 0 exists in scenes, no production draws it
    assert "0" not in g.tables.tokens


def test_location_bins_from_zero():
    px = np.array([0.0, 59.9, 60.0, 479.9, 500.0])
    assert pixels_to_bins(px, px * 0, first=0)[0].tolist() == [0, 0, 1, 7, 7]
    assert pixels_to_bins(px, px * 0)[0].tolist() == [1, 1, 2, 8, 8]
    release = load_grammar(data_file("curi_release.pcfg")).schema
    a = sample_scenes(3_000, "clevr", curi_grammar().schema, seed=7)
    b = sample_scenes(3_000, "clevr", release, seed=7, location_bins=(0, 7))
    # the same scenes (same random numbers), every location one bin lower; value = code there
    ix, iy = release.attribute_index("x"), release.attribute_index("y")
    present = a[:, :, 0] >= 0
    assert np.array_equal(a[:, :, :ix][present], b[:, :, :ix][present])
    for k in (ix, iy):
        assert np.array_equal(b[:, :, k][present], a[:, :, k][present])  # code c: value c+1 there, c here
    assert b[:, :, ix][present].max() <= 7
    with pytest.raises(ValueError, match="clevr"):
        sample_scenes(5, "uniform", release, location_bins=(0, 7))
    with pytest.raises(Exception, match="lack"):
        sample_scenes(5, "clevr", curi_grammar().schema, location_bins=(0, 7))


@pytest.mark.parametrize("bounds, expected", [("closed", [False, True, True, True, False]),
                                              ("open", [False, False, True, False, False])])
def test_filter_bounds(bounds, expected):
    counts = np.array([9, 10, 11, 100, 101])
    assert B.firing_filter(counts, 1000, 10, 0.1, bounds).tolist() == expected


def test_curi_preset_tiny():
    p = B.resolve_params("curi", samples=20_000, scenes=5_000)
    assert (p["retries"], p["location_bins"], p["filter_bounds"], p["max_depth"]) == ("local", (0, 7), "open", 5)
    space = HypothesisSpace(**B.build_fields(p))
    assert space.params["retries"] == "local" and space.params["location_bins"] == [0, 7]
    assert space.params["grammar"]["file"] == "curi_release.pcfg"
    assert all(rejection_reason(space.program(i)) is None for i in range(space.n_concepts))
    assert ((space.counts > 10) & (space.counts < 0.1 * space.n_scenes)).all()
    xs = space.scene_codes[:, :, space.schema.attribute_index("x")]
    assert xs[xs >= 0].max() <= 7
    # the paper and demo presets record no new option
    assert "retries" not in HypothesisSpace.build(samples=2_000, scenes=1_000).params


# ------------------------------------------------------------------- released strings
RELEASED = [  # printed by the release's split notebook
    "x locationX? x locationY? > S color? blue for-all= and lambda S. exists=",
    "0.35 x size? = x color? red = and lambda S. for-all=",
    "S shape? cylinder for-all= S color? green for-all= or lambda S.",
    "S color? green for-all= non-x-S size? 0.7 exists= and lambda S. exists=",
    "2 non-x-S color? cyan count= = lambda S. exists=",
]


@pytest.mark.parametrize("text", RELEASED)
def test_released_strings_parse_and_round_trip(text):
    p = Program.parse(text)
    assert release_string(p) == text
    assert "lambda" not in p.postfix and "0.7" not in p.postfix and "0.35" not in p.postfix
    assert Program.parse(release_string(p)) == p
    assert len(text.split()) == p.length + 2


def test_sizes_read_as_constants():
    assert Program.parse("0.35 x size? = lambda S. exists=").postfix == "small x size? = exists="
    assert Program.parse("x size? 0.7 = lambda S. exists=").postfix == "x size? large = exists="


# ----------------------------------------------------------------- the release's splits
class StubSpace:
    """The little of a HypothesisSpace that making a split reads: hand-made programs."""

    has_grammar = True  # a capability every program space declares

    def __init__(self, programs, grammar=None):
        self.grammar = grammar or curi_grammar()
        parsed = [Program.parse(p, self.grammar).collapsed() for p in programs]
        self.programs = [p.postfix for p in parsed]
        self.lengths = np.array([p.length for p in parsed], np.int16)
        self.synonym_classes = np.arange(len(parsed), dtype=np.int32)
        self.log_pcfg = np.array([p.log_prob(self.grammar) for p in parsed])

    @property
    def n_concepts(self):
        return len(self.programs)

    def program(self, i):
        return Program.parse(self.programs[i], self.grammar)


def release_split(name, programs):
    space = StubSpace(programs)
    return space, get_protocol("curi-release").splits(space, [name])[name]


def test_binding_drops_mixed_programs():
    progs = ["x color? red = exists=",                                   # training colour only: train
             "x color? cyan = exists=",                                  # held-out only: test
             "x color? cyan = x shape? cube = and exists=",              # held-out only: test
             "x color? cyan = S color? red exists= and exists=",         # mixed: dropped
             "x shape? cube = exists="]                                  # no colour: train
    space, split = release_split("binding_color", progs)
    assert split.train.tolist() == [0, 4] and split.test.tolist() == [1, 2] and split.val.tolist() == [3]
    assert split.dropped == 1
    assert split.strong_concepts.tolist() == [0, 1, 2, 3, 4]
    plain = make_split(space, data_file("splits_curi_release", "binding_color.toml"))
    assert plain.test.tolist() == [1, 2, 3]  # without the protocol nothing mixed is trained on
    assert mixed_values(space, ["cylinder"]).tolist() == [False] * 5


def test_binding_shape_drops_cylinder_with_cube_or_sphere():
    progs = ["x shape? cylinder = exists=", "x shape? cylinder = S shape? cube exists= and exists=",
             "x shape? sphere = exists=", "x shape? cylinder = x color? red = and exists="]
    _, split = release_split("binding_shape", progs)
    assert split.test.tolist() == [0, 3] and split.val.tolist() == [1] and split.train.tolist() == [2]


def test_counting_pairs_anywhere_in_counting_programs():
    progs = ["S color? red count= 3 = exists=",                          # (3, red) with count=: test
             "S shape? cube count= 3 = x color? red = and exists=",      # 3 and red anywhere: test
             "x locationX? 3 = x color? red = and exists=",              # no count=: train
             "S color? red count= 2 = exists=",                          # (2, red) is not held out: train
             "S color? blue count= 2 > exists="]                         # (2, blue): test
    _, split = release_split("counting", progs)
    assert split.test.tolist() == [0, 1, 4] and split.train.tolist() == [2, 3] and len(split.val) == 0


def test_extrinsic_pairs_need_a_location():
    progs = ["x locationX? 7 = x color? gray = and exists=",             # (7, gray) with location: test
             "S color? gray count= 7 = exists=",                         # no location function: train
             "x locationY? 6 = x color? blue = and exists=",             # (6, blue): test
             "x locationY? 6 = x color? red = and exists="]              # (6, red) not held out: train
    _, split = release_split("extrinsic", progs)
    assert split.test.tolist() == [0, 2] and split.train.tolist() == [1, 3]


def test_complexity_counts_release_tokens():
    progs = ["x color? red = exists=",                                   # 5 tokens + lambda S. = 7: train
             "S color? brown count= 3 =",                                # collapsed: 6 + 2 = 8: train
             "2 non-x-S color? cyan count= = exists=",                   # 7 + 2 = 9: train
             "2 non-x-S color? cyan count= > not exists=",               # 8 + 2 = 10: test
             "x color? red = S shape? cube exists= and exists="]         # 10 + 2 = 12: test
    space, split = release_split("complexity", progs)
    assert release_token_counts(space).tolist() == [7, 8, 9, 10, 12]
    assert split.train.tolist() == [0, 1, 2] and split.test.tolist() == [3, 4]


def test_complexity_spec_is_the_release_token_count(small_space):
    """min_length = 8 of the release's spec holds out exactly the concepts whose released
    string has at least 10 tokens."""
    split = protocols.get("curi-release").splits(small_space, ["complexity"])["complexity"]
    held = np.zeros(small_space.n_concepts, bool)
    held[split.test] = True
    assert np.array_equal(held, release_token_counts(small_space) >= 10)


def test_boolean_and_intrinsic_pairs():
    progs = ["x color? green = x shape? cube = or exists=", "x color? gray = x shape? cube = or exists=",
             "x color? red = x material? metal = and exists=", "x color? red = x material? rubber = and exists="]
    _, boolean = release_split("boolean", progs)
    _, intrinsic = release_split("intrinsic", progs)
    assert boolean.test.tolist() == [0] and intrinsic.test.tolist() == [2]


def test_dropping_every_test_concept_is_an_error():
    with pytest.raises(SplitSpecError, match="every held-out concept mixes"):
        release_split("binding_color", ["x color? red = exists=", "x color? cyan = x color? red = and exists="])


def test_the_release_registers_no_split_rule():
    from bayes_concepts.splits import split_rules
    assert set(split_rules.names()) >= {"tokens", "pairs", "min_length"}
    assert not {"release_values", "min_release_tokens"} & set(split_rules.names())


# ------------------------------------------------------------------------ protocols
def test_protocols(small_space):
    paper, release = protocols.get("paper"), protocols.get("curi-release")
    assert paper.settings.prior == "length" and paper.settings.beta == 0.2
    assert paper.settings.likelihood == "consistent" and paper.query_negatives is None
    assert release.settings.prior == "pcfg_release" and release.settings.likelihood == "size_release"
    assert release.query_negatives == "random" and release.strong_knows_all
    assert {p.stem for p in paper.spec_files()} == {p.stem for p in release.spec_files()}
    ds = release.compute_gap(small_space, ["counting"], ("hard",), n_episodes=50)
    assert ds.attrs["protocol"] == "curi-release" and ds.attrs["query_negatives"] == "random"
    ds = paper.compute_gap(small_space, ["counting"], ("hard",), n_episodes=50)
    assert ds.attrs["protocol"] == "paper"


def test_pcfg_release_prior(small_space):
    from bayes_concepts.oracles.priors import priors
    ids = np.arange(small_space.n_concepts)
    d = priors.get("pcfg_release")(small_space, ids, None) - priors.get("pcfg")(small_space, ids, None)
    x_free = np.array([not small_space.program(i).uses_x for i in ids])
    assert np.allclose(d[x_free], -math.log(2)) and np.allclose(d[~x_free], 0)


def test_release_oracle_scores_exact_path_is_our_oracles(small_space):
    """The slow release-style path without float32 and the 1e-12 guard scores every episode
    as the oracles' numba kernels do; the release's arithmetic changes only tiny-mass weak
    posteriors; the pool draws 3 scenes per concept with replacement."""
    from bayes_concepts.episodes import sample_episodes
    from bayes_concepts.oracles import strong_and_weak
    from bayes_concepts.suites.curi.release import release_oracle_scores, release_pool
    rel = protocols.get("curi-release")
    for name in ("binding_color", "counting"):
        split = rel.splits(small_space, [name])[name]
        for neg in ("hard", "easy"):
            eps = sample_episodes(small_space, split, "test", neg, 60, seed=1, query_negatives="random")
            strong, weak = strong_and_weak(small_space, split, rel.settings)
            ours = {"strong": strong.evaluate(eps), "weak": weak.evaluate(eps)}
            exact = release_oracle_scores(small_space, split, rel.settings, eps, masked32=False)
            release = release_oracle_scores(small_space, split, rel.settings, eps, masked32=True)
            for lr in ("strong", "weak"):
                np.testing.assert_allclose(exact[f"{lr}_ap"], ours[lr]["ap"], atol=1e-3)
                # a query prediction of exactly 0.5 (two concepts of equal weight) may round either way
                clear = (np.abs(ours[lr]["query_pred"] - 0.5) > 1e-9).all(axis=1)
                np.testing.assert_array_equal(exact[f"{lr}_cba"][clear], ours[lr]["cba"][clear])
            # float32 changes nothing else (but where a prediction is within float32 rounding of 0.5)
            big = (release["train_mass"] > 1e-6) & (np.abs(ours["weak"]["query_pred"] - 0.5) > 1e-5).all(axis=1)
            np.testing.assert_array_equal(release["weak_cba"][big], exact["weak_cba"][big])
            tiny = (release["train_mass"] > 0) & (release["train_mass"] < 1e-13)
            assert (release["weak_cba"][tiny] == 0.5).all()  # the guard swamps the mass: nothing predicted positive
    pool = release_pool(small_space, seed=0)
    assert len(pool) == 3 * small_space.n_concepts
    owner = np.repeat(np.arange(small_space.n_concepts), 3)
    assert all(small_space.signature(c)[s] for c, s in zip(owner[::7], pool[::7]))


def test_size_release_likelihood_scores_every_support_scene_as_a_negative():
    from bayes_concepts.oracles.likelihoods import likelihood_tables
    counts = np.array([10, 500, 9_000])
    first, second, consistent_only = likelihood_tables("size_release", counts, 10_000, 5, 25, True, None)
    assert consistent_only and np.allclose(first[:, 0, 0], -25 * np.log(10_000 - counts)) and not second.any()
    first, second, _ = likelihood_tables("size_release", counts, 10_000, 5, 25, False, None)
    assert not first.any() and not second.any()  # random negatives: the posterior is the prior
