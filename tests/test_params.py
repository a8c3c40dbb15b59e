"""Parameter constraints declared once (bayes_concepts/params.py): the bad-input tests are made from
the declarations themselves, and the command line's types check what the API checks.

Every function declared with ``validate_params`` is called with each declared parameter set to
each value its declaration refuses (a bool for a whole number, a number out of its interval, NaN,
a string not among the options, ...) and must raise one line naming the parameter, before any
work (the other arguments are dummies: the check runs before the body).
"""
from __future__ import annotations

import argparse
import inspect
import math

import pytest
from hypothesis import given, strategies as st

import bayes_concepts.gap  # noqa: F401  (the modules whose functions declare their parameters)
import bayes_concepts.ladder  # noqa: F401
import bayes_concepts.report  # noqa: F401
import bayes_concepts.split_search  # noqa: F401
from bayes_concepts.errors import BayesConceptsError
from bayes_concepts.params import Interval, Options, bad_values, check_param, cli_type, validated, whole_number


def _cases():
    for qualname, fn in sorted(validated.items()):
        for name, constraint in fn.__param_constraints__.items():
            for value in bad_values(constraint):
                yield pytest.param(fn, name, value, id=f"{qualname.rsplit('.', 1)[-1]}-{name}-{value!r}")


CASES = list(_cases())


def test_the_api_declares_its_parameters():
    names = {q.rsplit(".", 1)[-1] for q in validated}
    assert {"compute_gap", "ladder_profile", "audit_splits", "audit", "search_split"} <= names
    assert len(CASES) > 50


@pytest.mark.parametrize("fn, name, value", CASES)
def test_a_refused_value_is_one_line_naming_the_parameter(fn, name, value):
    signature = inspect.signature(fn)
    dummies = {p: None for p, v in signature.parameters.items()
               if v.default is inspect.Parameter.empty and v.kind in (v.POSITIONAL_OR_KEYWORD, v.KEYWORD_ONLY)}
    with pytest.raises(BayesConceptsError) as info:
        fn(**{**dummies, name: value})
    text = str(info.value)
    assert "\n" not in text and text.startswith(f"{name} must be") and repr(value) in text


@given(st.one_of(st.integers(-5, 5), st.booleans(), st.floats(allow_nan=True), st.text(max_size=3), st.none()),
       st.integers(-3, 3))
def test_whole_number_is_the_interval_check(value, least):
    """The one whole-number check and the declared Interval agree on every value."""
    ok = Interval(int, least).accepts(value)
    try:
        got = whole_number("n", value, least)
    except BayesConceptsError as exc:
        assert not ok and str(exc) == f"n must be a whole number >= {least}, got {value!r}"
    else:
        assert ok and got == value and type(got) is int


@given(st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.booleans())
def test_interval_ends(value, open_left, open_right):
    iv = Interval(float, 0, 1, open_left, open_right)
    inside = math.isfinite(value) and (0 < value if open_left else 0 <= value) and (value < 1 if open_right
                                                                                    else value <= 1)
    assert iv.accepts(value) == inside


@pytest.mark.parametrize("constraint, text, ok", [
    (Interval(int, 1), "3", True), (Interval(int, 1), "0", False), (Interval(int, 1), "1.5", False),
    (Interval(float), "nan", False), (Interval(float), "inf", False), (Interval(float), "2.5", True),
    (Interval(float, 0, 1, True, True), "1", False),
])
def test_the_command_line_type_checks_as_the_api(constraint, text, ok):
    parse = cli_type(constraint)
    if ok:
        assert check_param("x", parse(text), constraint) == parse(text)
    else:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)


def test_options_and_none():
    c = [Options({"hard", "easy"}), None]
    assert check_param("q", None, c) is None and check_param("q", "hard", c) == "hard"
    with pytest.raises(BayesConceptsError, match="q must be one of 'easy', 'hard' or None, got 'x'"):
        check_param("q", "x", c)
