"""The bit-sliced executor equals the slow interpreter on random programs and scenes."""
import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bayes_concepts.engine import compile_for, evaluate, evaluate_programs, popcount, run, signature_bits
from bayes_concepts.lot import Program, curi_grammar, sample_programs
from bayes_concepts.scenes import CLEVR_SCHEMA, CURI_SCHEMA, SceneBank, sample_scenes

G = curi_grammar()
TYPES = {t: vt.values for t, vt in G.value_types.items()}
PROPS = {}
for tok, prop in G.properties.items():
    PROPS.setdefault(prop.type, []).append(tok)
ORDERED = [t for t, vt in G.value_types.items() if vt.ordered] + ["NUM"]


@st.composite
def value_expr(draw, t, x_ok, depth):
    """Postfix tokens of an expression of value type t (or NUM)."""
    if t == "NUM":
        if depth > 0 and draw(st.booleans()):
            lt = draw(st.sampled_from(sorted(TYPES)))
            return (draw(list_expr(lt, x_ok)) + draw(value_expr(lt, x_ok, 0)) + ["count="])
        return [str(draw(st.integers(0, 6)))]
    if x_ok and draw(st.booleans()):
        return ["x", draw(st.sampled_from(PROPS[t]))]
    return [draw(st.sampled_from(TYPES[t]))]


@st.composite
def list_expr(draw, t, x_ok):
    sets = ["S", "non-x-S"] if x_ok else ["S"]
    return [draw(st.sampled_from(sets)), draw(st.sampled_from(PROPS[t]))]


@st.composite
def bool_expr(draw, x_ok, depth):
    kinds = ["compare", "set"] + (["and", "or", "not"] if depth > 0 else [])
    kind = draw(st.sampled_from(kinds))
    if kind in ("and", "or"):
        return draw(bool_expr(x_ok, depth - 1)) + draw(bool_expr(x_ok, depth - 1)) + [kind]
    if kind == "not":
        return draw(bool_expr(x_ok, depth - 1)) + ["not"]
    if kind == "set":
        t = draw(st.sampled_from(sorted(TYPES)))
        return draw(list_expr(t, x_ok)) + draw(value_expr(t, x_ok, 0)) + [draw(st.sampled_from(["exists=", "for-all="]))]
    t = draw(st.sampled_from(sorted(TYPES) + ["NUM"]))
    op = draw(st.sampled_from(["=", ">"] if t in ORDERED else ["="]))
    return draw(value_expr(t, x_ok, depth)) + draw(value_expr(t, x_ok, depth)) + [op]


@st.composite
def random_program(draw):
    """Well-typed programs of any shape the language allows, not only what the PCFG favours
    (constant comparisons, NUM against NUM, deep nesting, counts up to 6, ...)."""
    if draw(st.booleans()):
        body = draw(bool_expr(True, 3))
        return " ".join(body + [draw(st.sampled_from(["exists=", "for-all="]))])
    return " ".join(draw(bool_expr(False, 3)))


def scene_strategy(max_objects):
    obj = st.fixed_dictionaries({a.name: st.sampled_from(a.values) for a in CURI_SCHEMA.attributes})
    return st.builds(lambda objs: {"objects": objs}, st.lists(obj, min_size=1, max_size=max_objects))


def agree(programs, scenes, schema):
    bank = SceneBank.from_scenes(scenes, schema)
    fast = signature_bits(evaluate_programs(programs, bank), bank.n_scenes)
    for i, p in enumerate(programs):
        slow = [evaluate(p, s) for s in scenes]
        assert fast[i].tolist() == slow, (p, [j for j in range(len(scenes)) if fast[i, j] != slow[j]][:3])
    return len(programs) * len(scenes)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(random_program(), min_size=1, max_size=12), st.lists(scene_strategy(5), min_size=1, max_size=20))
def test_random_typed_programs_on_random_scenes(programs, scenes):
    agree([Program.parse(p) for p in programs], scenes, CURI_SCHEMA)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.lists(scene_strategy(5), min_size=1, max_size=20))
def test_grammar_programs_on_random_scenes(seed, scenes):
    sample = sample_programs(12, seed=seed)
    agree([Program.parse(s) for s in sample.strings()], scenes, CURI_SCHEMA)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(random_program(), min_size=1, max_size=8), st.lists(scene_strategy(10), min_size=1, max_size=12))
def test_clevr_sized_scenes(programs, scenes):
    agree([Program.parse(p) for p in programs], scenes, CLEVR_SCHEMA)


EDGE_PROGRAMS = [
    "non-x-S color? red for-all= exists=", "non-x-S color? red for-all= not for-all=",
    "non-x-S shape? x shape? for-all= exists=", "S locationY? x locationX? count= 1 > exists=",
    "non-x-S locationX? x locationY? count= S size? large count= > exists=",
    "x locationX? x locationY? > x size? small > or not exists=", "S color? gray count= 0 =",
    "0 S material? metal count= >", "S color? x color? count= non-x-S shape? x shape? count= = for-all=",
    "non-x-S size? x size? exists= not exists=", "5 S locationX? 3 count= > not", "3 3 =", "2 1 >",
    "non-x-S material? metal count= 4 = exists=", "S shape? sphere for-all= x color? cyan = or for-all=",
]


@pytest.mark.parametrize("sampler, schema", [("uniform", CURI_SCHEMA), ("clevr", CURI_SCHEMA),
                                             ("uniform", CLEVR_SCHEMA)])
def test_ten_thousand_pairs(sampler, schema):
    """At least 10,000 (program, scene) pairs per setting: grammar samples and edge programs,
    scenes of 1..max objects (one-object scenes included, for the empty S−x)."""
    programs = [Program.parse(s) for s in sample_programs(300, seed=7).strings()]
    programs += [Program.parse(p) for p in EDGE_PROGRAMS]
    codes = sample_scenes(40, sampler, schema, seed=3)
    one = sample_scenes(10, "uniform", schema, seed=4)
    one[:, 1:, :] = -1  # scenes with a single object
    scenes = [SceneBank.from_codes(codes, schema).scene(j) for j in range(40)]
    scenes += [SceneBank.from_codes(one, schema).scene(j) for j in range(10)]
    assert agree(programs, scenes, schema) >= 10_000


def test_results_do_not_depend_on_chunking_or_threads():
    bank = SceneBank.sample(5000, "clevr", seed=0)
    programs = [Program.parse(s) for s in sample_programs(200, seed=1).strings()]
    plan = compile_for(programs, bank)
    a = run(plan, bank, chunk_words=16)
    b = run(plan, bank, chunk_words=128)
    n = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        c = run(plan, bank)
    finally:
        numba.set_num_threads(n)
    assert np.array_equal(a, b) and np.array_equal(a, c)


def test_padding_bits_are_zero_and_popcount_counts():
    bank = SceneBank.sample(100, "uniform", seed=0)  # 100 scenes: 36 padding bits in word 1
    sig = evaluate_programs(["3 3 =", "x color? red = not exists="], bank)
    assert sig.shape == (2, 2)
    assert popcount(sig)[0] == 100
    assert int(sig[0, 1]) == (1 << 36) - 1
    assert popcount(sig)[1] == signature_bits(sig, 100)[1].sum()


def test_shared_subprograms_are_computed_once():
    bank = SceneBank.sample(64, "uniform", seed=0)
    one = compile_for(["S color? red count= 2 = x shape? cube = and exists="], bank)
    two = compile_for(["S color? red count= 2 = x shape? cube = and exists=",
                       "S color? red count= 2 = x shape? cube = or exists=",
                       "S color? red count= 2 = x shape? cube = and exists="], bank)
    count_steps = lambda plan: int((plan.instructions[:, 0] == 7).sum())
    assert count_steps(one) == count_steps(two) == 1
    # the second and third programs add: one OR, one quantifier (2 steps), and three stores
    assert two.n_instructions == one.n_instructions + 3 + 2


def test_count_mode_equals_popcount_of_signatures():
    from bayes_concepts.engine import count
    bank = SceneBank.sample(3001, "clevr", seed=2)  # a partial last word
    programs = [Program.parse(s) for s in sample_programs(300, seed=9).strings()] + [Program.parse("3 3 =")]
    plan = compile_for(programs, bank)
    counts = count(plan, bank, chunk_words=16)
    assert np.array_equal(counts, popcount(run(plan, bank)))
    assert counts[-1] == 3001
