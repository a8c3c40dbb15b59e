"""``HypothesisSpace.find`` looks a stored program string up without parsing it; that fast path
gives what parsing, collapsing and looking up gives (its slow twin): every program a space
stores is the canonical form of itself, and any other spelling (``lambda S.``, extra spaces,
an uncollapsed x-free form, a program the space lacks, text that does not parse) still goes
through the parser."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bayes_concepts.errors import ProgramError
from bayes_concepts.lot import Program


def slow_find(space, text):
    """The look-up as it was before the fast path: parse, collapse, look up the postfix."""
    return space.index.concept_ids().get(Program.parse(text, space.grammar).collapsed().postfix)


@pytest.fixture(params=["small_space", "clevr_space"])
def space(request):
    return request.getfixturevalue(request.param)


def test_every_stored_program_is_its_own_canonical_form(space):
    # the fast path's premise, on every program of both shared spaces (CURI's language and CLEVR's)
    for i, text in enumerate(space.programs):
        assert slow_find(space, text) == i, text


def test_a_stored_program_is_found_without_the_parser(space, monkeypatch):
    text = space.programs[len(space.programs) // 2]

    def refuse(*args, **kwargs):
        raise AssertionError("parsed")

    monkeypatch.setattr(Program, "parse", refuse)
    assert space.find(text) == len(space.programs) // 2
    with pytest.raises(AssertionError, match="parsed"):
        space.find("lambda S. " + text)  # not as stored: parsed


def _spellings(space, i: int, kind: str) -> str:
    text = space.programs[i]
    if kind == "lambda":
        return "lambda S. " + text
    if kind == "spaces":
        return "  " + text.replace(" ", "   ") + " "
    if kind == "uncollapsed":  # an x-free CURI program written with its quantifier
        return text + " exists="
    if kind == "dropped":  # one token fewer: usually not a program, or another one
        tokens = text.split()
        return " ".join(tokens[:-1]) if len(tokens) > 1 else text
    return text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_find_equals_parse_collapse_look_up(space, data):
    i = data.draw(st.integers(0, len(space.programs) - 1))
    kind = data.draw(st.sampled_from(["as stored", "lambda", "spaces", "uncollapsed", "dropped"]))
    text = _spellings(space, i, kind)
    try:
        want = slow_find(space, text)
    except ProgramError:
        with pytest.raises(ProgramError):
            space.find(text)
        return
    assert space.find(text) == want
    if kind in ("as stored", "lambda", "spaces"):
        assert want == i
    assert space.find(Program.parse(text, space.grammar)) == want


def test_ids_of_a_protocol_s_texts_are_unchanged(clevr_space):
    from bayes_concepts.protocols import protocols
    proto = protocols.get("closure")
    _, programs = proto.family_programs(clevr_space)
    texts = [t for ts in programs.values() for t in ts][:400]
    fast = [clevr_space.find(t) for t in texts]
    slow = []
    for t in texts:
        try:
            slow.append(slow_find(clevr_space, t))
        except ProgramError:
            slow.append("error")
    assert "error" not in slow
    assert fast == slow and any(i is not None for i in fast)
