"""The program language: parsing, serialisation, readable forms, errors, log-probs."""
import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bayes_concepts.errors import GrammarError, ProgramError
from bayes_concepts.lot import Grammar, Program, curi_grammar, rejection_reason, sample_programs
from bayes_concepts.lot.grammar import default_grammar_path


@pytest.mark.parametrize("postfix, readable", [
    ("x locationY? 6 > exists=", "∃x∈S: locationY(x) > 6"),
    ("S color? brown count= 3 =", "count(color(S) = brown) = 3"),
    ("2 non-x-S color? cyan count= = exists=", "∃x∈S: 2 = count(color(S−x) = cyan)"),
    ("x color? blue = x shape? cube = and exists=", "∃x∈S: color(x) = blue ∧ shape(x) = cube"),
    ("x color? blue = x shape? cube = or not for-all=", "∀x∈S: ¬(color(x) = blue ∨ shape(x) = cube)"),
    ("S locationX? 2 for-all=", "all(locationX(S) = 2)"),
    ("non-x-S size? x size? exists= exists=", "∃x∈S: any(size(S−x) = size(x))"),
])
def test_readable_form(postfix, readable):
    p = Program.parse(postfix)
    assert p.readable == readable
    assert p.postfix == postfix
    assert Program.from_prefix(p.prefix) == p


def test_latex_form():
    p = Program.parse("2 non-x-S color? cyan count= = exists=")
    assert p.latex == (r"\exists x \in S:\ 2 = \operatorname{count}(\operatorname{color}(S_{-x}) = \text{cyan})")


def test_lambda_and_S_dot_are_dropped_and_not_counted():
    p = Program.parse("lambda S. x color? red = exists=")
    assert p.tokens == ("x", "color?", "red", "=", "exists=")
    assert p.length == 5
    assert p == Program.parse("x color? red = exists=")


def test_prefix_form_is_polish_notation():
    assert Program.parse("x locationY? 6 > exists=").prefix == "exists= > locationY? x 6"
    # a set quantifier at the front of a prefix string is not taken for the final quantifier
    p = Program.parse("S color? red exists=")
    assert p.prefix == "exists= color? S red"
    assert Program.from_prefix(p.prefix) == p


def test_uses_x_quantifier_and_collapse():
    p = Program.parse("S color? brown count= 3 = exists=")
    assert p.quantifier == "exists" and not p.uses_x
    q = p.collapsed()
    assert q.postfix == "S color? brown count= 3 =" and q.quantifier is None
    assert Program.parse("non-x-S color? red exists= exists=").uses_x
    x = Program.parse("x color? red = exists=")
    assert x.collapsed() is x


def test_log_prob_by_hand():
    # START -> BOOL exists= (1/2); BOOL -> L L > (1/28); L -> OBJECT FL (1/2);
    # FL -> locationY? (1/2); L -> 6 (1/2 * 1/8); OBJECT, FC: 1
    p = Program.parse("x locationY? 6 > exists=")
    assert p.log_prob() == pytest.approx(math.log(0.5 * (1 / 28) * 0.5 * 0.5 * (1 / 16)))
    # a collapsed program stands for both quantifiers
    c = Program.parse("S color? brown count= 3 =")
    body = Program.parse("S color? brown count= 3 = exists=")
    assert c.log_prob() == pytest.approx(body.log_prob() + math.log(2))


def test_grammar_probabilities_follow_the_marks():
    g = curi_grammar()
    probs = {" ".join(p.rhs): p.prob for p in g.rules("BOOL")}
    assert len(probs) == 22
    assert probs["BOOL BOOL and"] == pytest.approx(3 / 28)
    assert probs["BOOL BOOL or"] == pytest.approx(0.5 / 28)
    assert probs["BOOL not"] == pytest.approx(1 / 28)
    num = {" ".join(p.rhs): p.prob for p in g.rules("NUM")}
    assert num["1"] == pytest.approx(1 / 6) and num["SETFC C count="] == pytest.approx(1 / 10)
    c = {" ".join(p.rhs): p.prob for p in g.rules("C")}
    assert c["red"] == pytest.approx(1 / 16) and c["OBJECT FC"] == pytest.approx(0.5)
    for nt in g.nonterminals:
        assert sum(p.prob for p in g.rules(nt)) == pytest.approx(1.0)


MALFORMED = [
    ("x color? pink = exists=",
     "in program 'x color? pink = exists=', token 2: 'pink': unknown token (expected a value, a property "
     "such as color?, an operator (= > and or not exists= for-all= count=), x, S or non-x-S)"),
    ("x color? red = =",
     "in program 'x color? red = =', token 4: '=': stack underflow: expects two operands, but only 1 value precedes it"),
    ("color?",
     "in program 'color?', token 0: 'color?': stack underflow: expects one operand (x or a set), but only 0 values precede it"),
    ("x color? red = x shape? cube =",
     "in program 'x color? red = x shape? cube =', token 4: leftover values: the program leaves 2 values on the "
     "stack (expected exactly one BOOL); nothing uses the BOOL computed by 'x shape? cube ='"),
    ("x color? 3 =",
     "in program 'x color? 3 =', token 3: '=': integer 3 is not a COLOR value (expected one of gray red blue "
     "green brown purple cyan yellow)"),
    ("x color? x shape? = exists=",
     "in program 'x color? x shape? = exists=', token 4: '=': cannot compare a COLOR with a SHAPE (expected two "
     "values of the same type)"),
    ("x color? exists=",
     "in program 'x color? exists=', token 2: 'exists=': quantifier over a non-boolean: expects a BOOL body, got a COLOR"),
    ("non-x-S color? red exists=",
     "in program 'non-x-S color? red exists=', token 0: 'non-x-S' used without a quantifier (end the program "
     "with exists= or for-all= to bind x)"),
    ("x color? red > exists=",
     "in program 'x color? red > exists=', token 3: '>': '>' needs an ordered type (LOC, NUM, SIZE), got COLOR"),
    ("lambda S. x color? red = and exists=",
     "in program 'lambda S. x color? red = and exists=', token 6: 'and': stack underflow: expects two BOOL "
     "operands, but only 1 value precedes it"),
    ("x color? red = S color? blue exists= exists= exists=",
     "in program 'x color? red = S color? blue exists= exists= exists=', token 8: 'exists=': a quantifier over "
     "x∈S must be the last token (a set quantifier expects a list and a value)"),
    ("S color? red count= exists=",
     "in program 'S color? red count= exists=', token 4: 'exists=': quantifier over a non-boolean: expects a "
     "BOOL body, got a NUM"),
    ("x color? red = x",
     "in program 'x color? red = x', token 4: leftover values: the program leaves 2 values on the stack "
     "(expected exactly one BOOL); nothing uses the object x computed by 'x'"),
    ("", "empty program (expected a postfix program such as 'x color? red = exists=')"),
    ("x S =",
     "in program 'x S =', token 2: '=': cannot compare the object x with a set (expected two values of the same type)"),
]


@pytest.mark.parametrize("text, message", MALFORMED)
def test_malformed_programs_give_exact_messages(text, message):
    with pytest.raises(ProgramError) as info:
        Program.parse(text)
    assert str(info.value).endswith(message)


def test_error_position_counts_lambda_tokens():
    with pytest.raises(ProgramError) as info:
        Program.parse("lambda S. x color? pink = exists=")
    assert info.value.position == 4


def test_x_without_quantifier_is_an_error():
    with pytest.raises(ProgramError, match="'x' used without a quantifier"):
        Program.parse("x color? red =")


@pytest.mark.parametrize("program, rule", [
    ("x color? red = non-x-S shape? cube exists= and for-all=", "top_forall_non_x"),
    ("x color? x color? = exists=", "x_compared_with_itself"),
    ("x locationX? x locationX? > exists=", "x_compared_with_itself"),
    ("S color? x color? exists= exists=", "set_quantifier_over_own_property"),
    ("S size? x size? for-all= for-all=", "set_quantifier_over_own_property"),
    ("x locationX? x locationY? = exists=", None),
    ("non-x-S color? x color? exists= exists=", None),
    ("S locationY? x locationX? exists= exists=", None),
    ("x color? red = non-x-S shape? cube exists= and exists=", None),
])
def test_rejection_rules(program, rule):
    assert rejection_reason(Program.parse(program)) == rule


SAMPLE = sample_programs(3000, seed=11)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, len(SAMPLE) - 1))
def test_sampled_programs_round_trip_and_score(i):
    text = SAMPLE.program_string(i)
    p = Program.parse(text)
    assert p.postfix == text
    assert Program.from_prefix(p.prefix) == p
    assert p.log_prob() == pytest.approx(SAMPLE.log_prob[i], abs=1e-9)
    assert p.derivation_depth() == SAMPLE.depth[i] <= curi_grammar().max_depth


def test_every_sampled_program_round_trips_and_matches_its_recorded_log_prob():
    g = curi_grammar()
    for i, text in enumerate(SAMPLE.strings()):
        p = Program.parse(text)
        assert p.postfix == text
        assert abs(p.log_prob() - SAMPLE.log_prob[i]) < 1e-9
        assert SAMPLE.depth[i] <= g.max_depth
        assert p.derivation_depth() == SAMPLE.depth[i]
        for node in p.root.walk():  # the sampler never compares two constants
            if node.kind == "compare":
                assert not all(c.kind == "constant" for c in node.children)


@pytest.mark.parametrize("max_depth", [3, 4, 5])
def test_sampler_respects_smaller_depths(max_depth):
    s = sample_programs(500, seed=2, max_depth=max_depth)
    assert s.depth.max() <= max_depth
    for text in s.strings()[:100]:
        assert Program.parse(text).derivation_depth() <= max_depth


def test_sampler_is_seeded_and_thread_count_independent():
    import numba
    a = sample_programs(20_000, seed=5)
    n = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        b = sample_programs(20_000, seed=5)
    finally:
        numba.set_num_threads(n)
    assert np.array_equal(a.tokens, b.tokens) and np.array_equal(a.log_prob, b.log_prob)
    c = sample_programs(20_000, seed=6)
    assert not np.array_equal(a.tokens, c.tokens)


def test_sampler_frequencies_follow_the_pcfg():
    """The share of top-level exists= is 1/2 and of the shortest programs matches their probability
    conditioned on the depth and constant-comparison constraints (estimated by attempts)."""
    s = sample_programs(200_000, seed=1)
    last = s.tokens[np.arange(len(s)), s.lengths - 1]
    share = np.mean(np.array(s.vocabulary)[last] == "exists=")
    assert abs(share - 0.5) < 0.005
    # 'x color? x color? = exists=' : p = 1/2 * 3/28 * (1/2)^2 = 3/224, scaled by n/attempts
    target = " ".join(["x", "color?", "x", "color?", "=", "exists="])
    freq = np.mean([t == target for t in s.strings()])
    expected = 3 / 224 * s.attempts / len(s)  # P(program) / P(accepted)
    assert abs(freq - expected) < 4 * math.sqrt(expected / len(s))


def test_grammar_file_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.pcfg"
    bad.write_text("value COLOR red blue\nstart START\nSTART -> BOOL exists=\nBOOL -> C C =\nC -> red | pinkish\n")
    with pytest.raises(GrammarError, match=r"bad.pcfg line 5: .pinkish' is neither a nonterminal"):
        Grammar.from_file(bad)
    bad.write_text("start START\nSTART -> BOOL exists= @ -1\n")
    with pytest.raises(GrammarError, match=r"bad.pcfg line 2: weight must be positive"):
        Grammar.from_file(bad)
    bad.write_text("begin START\n")
    with pytest.raises(GrammarError, match=r"bad.pcfg line 1: cannot read 'begin'"):
        Grammar.from_file(bad)


def test_a_user_grammar_with_a_new_value_parses_and_samples(tmp_path):
    text = default_grammar_path().read_text().replace("cyan yellow", "cyan yellow pink")
    text = text.replace("| cyan | yellow", "| cyan | yellow | pink")
    path = tmp_path / "pink.pcfg"
    path.write_text(text)
    g = Grammar.from_file(path)
    p = Program.parse("x color? pink = exists=", g)
    assert p.readable == "∃x∈S: color(x) = pink"
    assert "pink" in g.schema.attribute("color").values
    assert any("pink" in s for s in sample_programs(5000, g, seed=0).strings())


# --------------------------------------------------------------- the parse memo
def _fresh(text, grammar):
    """The slow twin of the memo: a parse that never looks it up."""
    return Program._parse_given(text.split(), grammar)


def _same_program(a, b, grammar):
    assert (a.tokens, a.root, a.constraints) == (b.tokens, b.root, b.constraints)
    assert a.grammar is grammar and a.postfix == b.postfix and a.readable == b.readable


#: relational programs with ``unique`` and domain constraints (``where``)
CLEVR_PROGRAMS = [
    "S y shape? cube = y S z color? gray = filter:z unique same_size and filter:y exist",
    "S y color? gray = filter:y count 1 =",
    "S y S z S x size? small = filter:x unique left filter:z unique same_size filter:y exist",
    "S y color? red = filter:y unique shape? S y color? blue = filter:y unique shape? = where "
    "S y color? red = filter:y count 1 =",
]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, len(SAMPLE) - 1), min_size=1, max_size=40), st.sampled_from([3, 8, 10_000]),
       st.booleans())
def test_a_memoised_parse_equals_a_fresh_one(picks, memo_size, relational):
    """Programs parsed through the memo (repeated picks hit it; a small PARSE_MEMO empties it
    mid-way; a second grammar object read from the same file shares it) are the programs a
    fresh parse gives: tokens, syntax tree, constraints, each under the grammar it was asked
    for; lambda and S. prefixes, token lists and strings of one program agree; the clevr
    grammar's constraints included."""
    import bayes_concepts.lot.program as program_module
    from bayes_concepts.resources import data_file
    path = data_file("clevr.pcfg") if relational else default_grammar_path()
    grammars = (Grammar.from_file(path), Grammar.from_file(path))
    texts = ([CLEVR_PROGRAMS[i % len(CLEVR_PROGRAMS)] for i in picks] if relational
             else [SAMPLE.program_string(i) for i in picks])
    before = program_module.PARSE_MEMO
    program_module.PARSE_MEMO = memo_size
    try:
        for k, text in enumerate(texts):
            g = grammars[k % 2]
            p = Program.parse(text, g)
            _same_program(p, _fresh(text, g), g)
            _same_program(Program.parse(text, g), p, g)
            _same_program(Program.parse("lambda S. " + text, g), p, g)
            _same_program(Program.parse(text.split(), grammars[(k + 1) % 2]), p, grammars[(k + 1) % 2])
            assert len(program_module._PARSED) <= max(memo_size, before)
    finally:
        program_module.PARSE_MEMO = before


def test_malformed_input_is_refused_every_time_and_an_operator_change_is_seen():
    import bayes_concepts.lot.program as program_module
    from bayes_concepts.lot.operators import operators
    g = Grammar.from_file(default_grammar_path())
    for _ in range(2):
        with pytest.raises(ProgramError, match="'x' used without a quantifier"):
            Program.parse("x color? red =", g)
    assert not [k for k in program_module._PARSED if k[-1] == ("x", "color?", "red", "=")]
    # a grammar of other content (another start symbol's probabilities) does not share the memo
    other = Grammar.from_text(default_grammar_path().read_text().replace("0.5", "0.25", 1))
    assert program_module._grammar_key(other) != program_module._grammar_key(g)
    # an operator replaced after a parse: the string is parsed again (and again after the
    # original is back, as the memo does not know it was the same)
    parses = []
    fresh = Program._parse_given.__func__

    def counted(cls, given, grammar):
        parses.append(tuple(given))
        return fresh(cls, given, grammar)

    text = "x color? red = x shape? cube = and exists="
    p = Program.parse(text, g)
    original = operators.get("and")
    try:
        Program._parse_given = classmethod(counted)
        assert Program.parse(text, g) == p and parses == []
        operators.register("and", dataclasses.replace(original, summary="the same, replaced"), replace=True)
        assert Program.parse(text, g) == p and len(parses) == 1
        assert Program.parse(text, g) == p and len(parses) == 1
    finally:
        operators.register("and", original, replace=True)
        Program._parse_given = classmethod(fresh)
