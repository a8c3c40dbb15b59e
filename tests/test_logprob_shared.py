"""The batch log-probability (``derivation_log_probs``, inside probabilities shared between
programs, splits pruned) equals its slow twin, the plain inside algorithm over every span and
split of one program (``tests/logprob_reference.py``), bit for bit; ``derivation_log_prob`` is
the batch of one: on random
programs of each shipped grammar, on strings the grammar cannot derive (a token dropped,
swapped or changed), on repeats and in any order; and CLOSURE's template programs carry the
log-probability ``Program.log_prob`` gives each (-inf for those the grammar cannot derive)."""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bayes_concepts.lot import Program, sample_programs
from bayes_concepts.lot.grammar import Grammar, load_grammar
from bayes_concepts.lot.logprob import derivation_log_prob, derivation_log_probs, derivations
from logprob_reference import derivation_log_prob as reference_log_prob
from bayes_concepts.resources import data_file

GRAMMARS = {name: load_grammar(data_file(name)) for name in ("clevr.pcfg", "curi.pcfg", "shj.pcfg",
                                                             "shj_xor_iff.pcfg")}
#: SHJ's language with a second way to write a conjunction of three: a string with two ``and``
#: has several derivations, whose probabilities the inside algorithm sums (the shipped grammars
#: give each program one derivation)
GRAMMARS["ambiguous"] = Grammar.from_text(
    data_file("shj.pcfg").read_text(encoding="utf-8").replace("max_depth 6", "max_depth 4")
    + "\nBOOL -> BOOL BOOL BOOL and and @ 0.4\n", "ambiguous")


def _same(a, b) -> bool:
    """Equal (log_prob, depth) pairs, -inf included."""
    return a[1] == b[1] and (a[0] == b[0] or (math.isinf(a[0]) and math.isinf(b[0]) and a[0] < 0 and b[0] < 0))


@st.composite
def token_lists(draw):
    """A grammar and a list of token sequences: sampled programs (some repeated, some truncated
    or with a token dropped, swapped or replaced by another of the grammar's tokens, so that the
    grammar cannot derive them) and now and then an empty one."""
    name = draw(st.sampled_from(sorted(GRAMMARS)))
    g = GRAMMARS[name]
    sample = sample_programs(draw(st.integers(5, 40)), g, seed=draw(st.integers(0, 2**31 - 1)),
                             max_depth=g.max_depth)
    programs = [tuple(s.split()) for s in sample.strings()]
    vocabulary = sorted({t for p in programs for t in p})
    out = []
    for p in programs:
        kind = draw(st.sampled_from(["as is", "as is", "repeat", "drop", "swap", "replace", "prefix", "empty"]))
        if kind == "repeat" and out:
            out.append(draw(st.sampled_from(out)))
        elif kind == "drop" and len(p) > 1:
            k = draw(st.integers(0, len(p) - 1))
            out.append(p[:k] + p[k + 1:])
        elif kind == "swap" and len(p) > 1:
            k = draw(st.integers(0, len(p) - 2))
            out.append(p[:k] + (p[k + 1], p[k]) + p[k + 2:])
        elif kind == "replace":
            k = draw(st.integers(0, len(p) - 1))
            out.append(p[:k] + (draw(st.sampled_from(vocabulary)),) + p[k + 1:])
        elif kind == "prefix":
            out.append(p[:draw(st.integers(1, len(p)))])
        elif kind == "empty":
            out.append(())
        out.append(p)
    return name, draw(st.permutations(out))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(token_lists())
def test_shared_inside_probabilities_equal_one_call_per_program(case):
    name, programs = case
    g = GRAMMARS[name]
    batch = derivation_log_probs(programs, g)
    assert len(batch) == len(programs)
    slow = [reference_log_prob(p, g) for p in programs]
    assert all(_same(a, b) for a, b in zip(batch, slow)), name
    # the corner the perturbations aim at: some strings are not derivable, and they say so
    assert all((lp == -math.inf) == (depth == -1) for lp, depth in batch)


def test_the_ambiguous_grammar_sums_several_derivations():
    g = GRAMMARS["ambiguous"]
    three = tuple("x d1? 0 = x d1? 1 = x d2? 0 = and and exists=".split())
    assert len(derivations(three, g)) == 2
    assert _same(derivation_log_probs([three], g)[0], reference_log_prob(three, g))
    assert derivation_log_prob(three, g) == derivation_log_probs([three], g)[0]


def test_no_programs_and_an_empty_program():
    g = GRAMMARS["clevr.pcfg"]
    assert derivation_log_probs([], g) == []
    assert derivation_log_probs([()], g) == [reference_log_prob((), g)] == [derivation_log_prob((), g)] \
        == [(-math.inf, -1)]


def test_closure_s_template_programs_carry_their_own_log_probability():
    from bayes_concepts.suites.closure.presets import _closure_family_programs
    g = GRAMMARS["clevr.pcfg"]
    out = _closure_family_programs(g, 3, 2)
    assert set(out) == {"closure_families_added", "clevr_templates_added"}
    for stage, programs in out.items():
        assert programs, stage
        for prog, lp in programs:
            assert isinstance(prog, Program) and lp == prog.log_prob(g)
        # some lie outside clevr.pcfg (-inf, as Program.log_prob says), not all
        assert any(lp > -math.inf for _, lp in programs), stage


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(GRAMMARS)), seed=st.integers(0, 2**31 - 1), collapse=st.booleans())
def test_program_log_probs_equal_log_prob_of_each(name, seed, collapse):
    """Program.log_probs (shared spans) is Program.log_prob of each, bit for bit, collapsed
    x-free programs (no quantifier: the sum over both) included."""
    g = GRAMMARS[name]
    sample = sample_programs(60, g, seed=seed, max_depth=g.max_depth)
    progs = [Program.parse(s, g) for s in sample.strings()]
    if collapse:
        progs = [p.collapsed() for p in progs]
    got = Program.log_probs(progs, g)
    want = [p.log_prob(g) for p in progs]
    assert len(got) == len(want)
    assert all(a == b or (math.isinf(a) and math.isinf(b) and a < 0 and b < 0) for a, b in zip(got, want))


def test_program_log_probs_cover_collapsed_programs():
    """The corner above: CURI's collapsed x-free programs have no quantifier and score as the
    sum over both, in the batch as one at a time."""
    g = GRAMMARS["curi.pcfg"]
    progs = [Program.parse(s, g).collapsed() for s in sample_programs(300, g, seed=1, max_depth=g.max_depth).strings()]
    free = [p for p in progs if p.quantifier is None]
    assert len(free) >= 10
    assert Program.log_probs(free, g) == [p.log_prob(g) for p in free]


def test_the_longest_and_the_deepest_programs_allowed():
    from bayes_concepts.lot.program import MAX_PROGRAM_NESTING, MAX_PROGRAM_TOKENS
    g = GRAMMARS["curi.pcfg"]
    longest = "x color? red = " + " ".join(["x color? red = and"] * ((MAX_PROGRAM_TOKENS - 5) // 5)) + " exists="
    deepest = "x color? red = " + " ".join(["not"] * (MAX_PROGRAM_NESTING - 4)) + " exists="
    for text in (longest, deepest):
        tokens = Program.parse(text, g).tokens
        assert derivation_log_prob(tokens, g) == reference_log_prob(tokens, g)
        assert derivation_log_prob(tokens, g)[0] > -math.inf
