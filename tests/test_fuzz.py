"""Property-based fuzzing of every reader of user input: the program parser, the JSON Lines
scene loader, the split-spec loader and the files of a saved space.  Every case either
succeeds or raises the toolkit's own error type (a ``BayesConceptsError`` subclass, whose
message is one line) -- never anything else.

Each test runs ``BAYES_CONCEPTS_FUZZ_EXAMPLES`` examples (default 2,000); each example
takes milliseconds (a tiny saved space: 2,000 samples x 1,000 scenes).
"""
from __future__ import annotations

import json
import math
import os
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.engine.store import SPACE_ARRAYS
from bayes_concepts.spaces.hypothesis_space import GRAMMAR_FILE
from bayes_concepts.errors import BayesConceptsError, ProgramError
from bayes_concepts.lot import Program, curi_grammar, sample_programs
from bayes_concepts.lot.grammar import IGNORED, OPERATORS, VARIABLES
from bayes_concepts.scenes import read_scenes_jsonl
from bayes_concepts.splits import load_spec, make_split

#: the files of a saved program space
FILES = ("concepts.jsonl", GRAMMAR_FILE, *SPACE_ARRAYS)

EXAMPLES = int(os.environ.get("BAYES_CONCEPTS_FUZZ_EXAMPLES", "2000"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])

GRAMMAR = curi_grammar()
VOCABULARY = sorted({*GRAMMAR.token_kinds, *IGNORED, *GRAMMAR.aliases, "0", "9", "10", "-1", "1.5"})
SAMPLED = sample_programs(300, seed=0).strings()
SCHEMA = GRAMMAR.schema


def one_line_error(exc: BaseException):
    """The toolkit's own error, with a one-line message."""
    assert isinstance(exc, BayesConceptsError), f"{type(exc).__name__}: {exc}"
    assert "\n" not in str(exc), str(exc)


# ----------------------------------------------------------------------------- programs
tokens = st.one_of(st.sampled_from(VOCABULARY), st.text(max_size=6).filter(lambda t: t.strip() == t and t),
                   st.from_regex(r"\A-?[0-9]{1,3}\Z"))


@st.composite
def mutated_programs(draw):
    """A sampled program with a few tokens dropped, inserted, replaced or swapped."""
    toks = draw(st.sampled_from(SAMPLED)).split()
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["drop", "insert", "replace", "swap"]))
        i = draw(st.integers(0, max(len(toks) - 1, 0)))
        if op == "drop" and toks:
            del toks[i]
        elif op == "insert":
            toks.insert(i, draw(tokens))
        elif op == "replace" and toks:
            toks[i] = draw(tokens)
        elif op == "swap" and len(toks) > 1:
            j = draw(st.integers(0, len(toks) - 1))
            toks[i], toks[j] = toks[j], toks[i]
    return toks


program_inputs = st.one_of(st.lists(tokens, max_size=30), mutated_programs(),
                           st.text(alphabet=string.printable + "∃λ\u00a0\u2028", max_size=60))


@FUZZ
@given(program_inputs)
def test_program_parser_fuzz(given_tokens):
    text = given_tokens if isinstance(given_tokens, str) else " ".join(given_tokens)
    for parse in (Program.parse, Program.from_prefix):
        try:
            p = parse(text, GRAMMAR)
        except Exception as exc:  # noqa: BLE001 - the property: only the toolkit's errors
            one_line_error(exc)
            assert isinstance(exc, ProgramError)
            continue
        # a program that parses round-trips and renders
        assert Program.parse(p.postfix, GRAMMAR) == p == Program.from_prefix(p.prefix, GRAMMAR)
        assert p.root.postfix() == list(p.tokens) and p.root.size == p.length
        assert p.readable and p.latex
        assert not p.log_prob() > 0


# ------------------------------------------------------------------------------- scenes
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 20) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)
attribute_values = st.one_of(*(st.sampled_from(a.values) for a in SCHEMA.attributes), json_values)
objects = st.dictionaries(st.one_of(st.sampled_from(SCHEMA.names), st.text(max_size=5)), attribute_values,
                          max_size=8)
full_objects = st.fixed_dictionaries({a.name: st.sampled_from(a.values) for a in SCHEMA.attributes})
scenes = st.one_of(
    st.fixed_dictionaries({"objects": st.lists(st.one_of(full_objects, objects), max_size=7)},
                          optional={"label": json_values}),
    json_values)
lines = st.one_of(scenes.map(lambda s: json.dumps(s, allow_nan=True)), st.text(max_size=40),
                  st.binary(max_size=40))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(st.lists(lines, max_size=6))
def test_scene_loader_fuzz(scratch, rows):
    path = scratch / "scenes.jsonl"
    path.write_bytes(b"\n".join(r if isinstance(r, bytes) else r.encode("utf-8", "surrogatepass") for r in rows))
    try:
        got = read_scenes_jsonl(path, SCHEMA)
    except Exception as exc:  # noqa: BLE001
        one_line_error(exc)
        assert str(path) in str(exc)
        return
    assert all(isinstance(s, dict) and SCHEMA.min_objects <= len(s["objects"]) <= SCHEMA.max_objects for s in got)


# -------------------------------------------------------------------------- split specs
def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v) if not (isinstance(v, float) and math.isnan(v)) else "nan"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def toml_text(spec: dict) -> str:
    top = [f"{json.dumps(k)} = {toml_value(v)}" for k, v in spec.items() if not isinstance(v, dict)]
    tables = [f"[{json.dumps(k)}]\n" + "\n".join(f"{json.dumps(a)} = {toml_value(b)}" for a, b in v.items())
              for k, v in spec.items() if isinstance(v, dict)]
    return "\n".join(top + tables) + "\n"


toml_scalars = st.none().map(lambda _: "x") | st.booleans() | st.integers(-5, 30) | st.floats() | st.text(max_size=8)
token_names = st.sampled_from(VOCABULARY) | st.text(max_size=6)
held_out_values = {
    "tokens": st.lists(token_names, max_size=4),
    "pairs": st.lists(st.lists(token_names, max_size=3), max_size=3),
    "counts": st.lists(st.fixed_dictionaries({"value": token_names, "number": st.integers(-2, 6) | st.text(max_size=2)}),
                       max_size=3),
    "min_length": st.integers(-3, 40) | st.floats() | st.text(max_size=3),
    "programs": st.lists(st.sampled_from(SAMPLED) | st.text(max_size=12), max_size=3),
}
held_out = st.dictionaries(st.sampled_from(sorted(held_out_values)) | st.text(max_size=6), toml_scalars,
                           max_size=3).flatmap(
    lambda extra: st.fixed_dictionaries({}, optional=held_out_values).map(lambda d: {**extra, **d}))
spec_dicts = st.fixed_dictionaries({}, optional={
    "name": st.text(max_size=10) | st.sampled_from(["fuzz_split", "counting"]) | st.integers(),
    "kind": st.sampled_from(["held_out", "random", "all", "other"]) | toml_scalars,
    "description": toml_scalars,
    "synonym_aware": st.booleans() | toml_scalars,
    "val_fraction": st.floats(-0.5, 1.5) | toml_scalars,
    "val_seed": st.integers(-3, 5) | toml_scalars,
    "fraction": st.floats(-0.5, 1.5) | toml_scalars,
    "seed": st.integers(-3, 5) | toml_scalars,
    "held_out": held_out,
    "extra": toml_scalars,
})
spec_texts = st.one_of(spec_dicts.map(toml_text), st.text(max_size=80), st.binary(max_size=60))


@pytest.fixture(scope="module")
def tiny_space():
    return HypothesisSpace.build(samples=2_000, scenes=1_000, seed=0)


@FUZZ
@given(spec_texts)
def test_split_spec_loader_fuzz(scratch, tiny_space, text):
    path = scratch / "fuzz_spec.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    for read in (lambda: load_spec(path, GRAMMAR), lambda: make_split(tiny_space, path)):
        try:
            out = read()
        except Exception as exc:  # noqa: BLE001
            one_line_error(exc)
            assert str(path) in str(exc)
            continue
        assert out is not None


# --------------------------------------------------------------------------- space files
@pytest.fixture(scope="module")
def space_copy(tiny_space, tmp_path_factory):
    """A saved copy of the tiny space and the original bytes of each of its files; the
    test damages one file per example and puts it back afterwards."""
    path = tmp_path_factory.mktemp("space") / "space"
    tiny_space.save(path)
    return path, {name: (path / name).read_bytes() for name in (*FILES, "manifest.json")}


damage = st.one_of(
    st.tuples(st.just("replace"), st.binary(max_size=300)),                            # any new content
    st.tuples(st.just("flip"), st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1,
                                        max_size=4)),                                  # size kept
    st.tuples(st.just("truncate"), st.integers(0, 10**6)),
    st.tuples(st.just("append"), st.binary(min_size=1, max_size=40)),
)


@FUZZ
@given(name=st.sampled_from([*FILES, "manifest.json"]), how=damage, verify=st.booleans())
def test_space_files_fuzz(space_copy, name, how, verify):
    path, original = space_copy
    data = bytearray(original[name])
    kind, arg = how
    if kind == "replace":
        data = bytearray(arg)
    elif kind == "flip":
        for pos, mask in arg:
            data[pos % len(data)] ^= mask
    elif kind == "truncate":
        data = data[: arg % (len(data) + 1)]
    else:
        data += arg
    assume(bytes(data) != original[name])
    (path / name).write_bytes(bytes(data))
    try:
        loaded = HypothesisSpace.load(path, verify=verify)
    except Exception as exc:  # noqa: BLE001
        one_line_error(exc)
        assert str(path) in str(exc)
    else:
        # only a damage that keeps the size and skips verification can load; it still reads
        assert not verify and len(data) == len(original[name])
        assert loaded.n_concepts == len(loaded.programs)
    finally:
        (path / name).write_bytes(original[name])


def test_space_copy_is_restored(space_copy, tiny_space):
    path, _ = space_copy
    assert HypothesisSpace.load(path) == tiny_space
