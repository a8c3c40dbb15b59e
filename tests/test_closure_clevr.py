"""CLEVR's question templates as concepts (``hypotheses/closure/clevr_templates.toml``), and
CLOSURE's families against their functional programs.

The concepts :mod:`bayes_concepts.suites.closure` writes are checked against a CLEVR executor written
here from the meaning of CLEVR's functions (scene, filter, relate, same_<attr>, union,
intersect, count, exist, query_<attr>, equal_<attr>, equal_integer, less_than, greater_than).
It runs a question's node list on a scene: the question is valid when every ``unique`` finds
one object, and CLEVR's ``OUT_NEQ i j`` asks the outputs of nodes i and j to differ (for a
node that filters and then counts or picks, its count or its object).  A concept must be true
exactly on the scenes where its question is valid, every OUT_NEQ holds and the answer is the
one the concept stands for.  The concepts' truth values come from the bit-sliced executor
(which ``tests/test_relational.py`` checks against the interpreter).
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from bayes_concepts.suites.closure import (CLEVR_DEPTH_VARIABLES, CLEVR_TEMPLATE_FILES, CLEVR_VALUES, COUNT_ANSWERS,
                                    ClevrTemplate, ClosureFamilyError, Filling, Instance, answer_chance,
                                    clevr_concepts, clevr_fill_instances, clevr_filling, clevr_instances,
                                    clevr_rejection, default_clevr_templates_path, family_rejection,
                                    fill_instances, load_clevr_templates, load_families, render_clevr_question,
                                    sample_clevr_filling, sample_filling)
from bayes_concepts.engine import compile_for, run, signature_bits
from bayes_concepts.engine.executor import evaluate_with_domains
from bayes_concepts.errors import BayesConceptsError
from bayes_concepts.lot import Program
from bayes_concepts.lot.grammar import load_grammar
from bayes_concepts.resources import data_file
from bayes_concepts.scenes import SceneBank

from test_closure_families import check_program

ROOT = Path(__file__).resolve().parents[1]
GRAMMAR = load_grammar(data_file("clevr.pcfg"))
ATTRS = ("size", "color", "material", "shape")
LETTER = {"Z": "size", "C": "color", "M": "material", "S": "shape"}
INVALID = object()


# ------------------------------------------------------------------ an executor of CLEVR's programs
def parse_nodes(texts):
    """Node strings ``"TYPE [SIDE ...] [<- INPUT ...]"`` -> ``[(type, side, inputs)]``."""
    out = []
    for text in texts:
        head, _, tail = text.partition("<-")
        words = head.split()
        out.append((words[0], tuple(words[1:]), tuple(int(w) for w in tail.split())))
    return out


def run_clevr(nodes, scene, slots, relations, failures=None):
    """Outputs of every node of a filled question on ``scene`` (INVALID after a failed unique);
    ``failures`` (a list) gets ``"missing"`` or ``"doubled"`` for each unique that fails."""
    objs = scene["objects"]
    every = list(range(len(objs)))

    def filt(members, side):
        for s in side:
            if s.startswith("<R"):
                continue
            value = slots.get(s)
            if value is not None:
                members = [o for o in members if objs[o][LETTER[s[1]]] == value]
        return members

    def unique(members):
        if len(members) != 1 and failures is not None:
            failures.append("doubled" if members else "missing")
        return members[0] if len(members) == 1 else INVALID

    out = []
    for kind, side, inputs in nodes:
        args = [out[i] for i in inputs]
        if any(a is INVALID for a in args):
            out.append(INVALID)
            continue
        if kind == "scene":
            v = every
        elif kind.startswith("relate"):
            related = sorted(scene["relationships"][relations[side[0]]][args[0]])
            v = filt(related, side)
        elif kind.startswith("filter_") and kind[7:] in ATTRS:
            v = filt(args[0], side)
        elif kind.startswith("filter"):
            v = filt(args[0], side)
        elif kind.startswith("same_"):
            a = kind[5:]
            v = [o for o in every if o != args[0] and objs[o][a] == objs[args[0]][a]]
        elif kind == "union":
            v = sorted(set(args[0]) | set(args[1]))
        elif kind == "intersect":
            v = sorted(set(args[0]) & set(args[1]))
        elif kind.startswith("query_"):
            v = objs[args[0]][kind[6:]]
        elif kind.startswith("equal_") and kind != "equal_integer":
            v = args[0] == args[1]
        elif kind == "equal_integer":
            v = args[0] == args[1]
        elif kind == "less_than":
            v = args[0] < args[1]
        elif kind == "greater_than":
            v = args[0] > args[1]
        elif kind in ("count", "exist"):
            v = args[0]
        else:
            raise AssertionError(kind)
        # what the node outputs: a picked object, a count, an existence
        if kind.endswith("unique"):
            v = unique(v)
        elif kind.endswith("count"):
            v = len(v)
        elif kind.endswith("exist"):
            v = len(v) > 0
        out.append(v)
    return out


def expected_truth(nodes, out_neq, scene, slots, relations, answer):
    """Whether the concept of ``answer`` holds on ``scene`` (see the module docstring)."""
    return truth_of(run_clevr(nodes, scene, slots, relations), out_neq, answer)


def truth_of(outputs, out_neq, answer):
    """:func:`expected_truth` from the nodes' outputs on the scene (:func:`run_clevr`)."""
    result = outputs[-1]
    if result is INVALID:
        return False
    if any(outputs[i] == outputs[j] for i, j in out_neq):
        return False
    if isinstance(result, bool):
        return result == (answer == "yes")
    return result == answer


def expected_domain(nodes, out_neq, scene, slots, relations):
    """Whether CLEVR asks the question about ``scene``: every ``unique`` finds one object and
    every OUT_NEQ holds (the question's domain)."""
    return domain_of(run_clevr(nodes, scene, slots, relations), out_neq)


def domain_of(outputs, out_neq):
    """:func:`expected_domain` from the nodes' outputs on the scene."""
    return outputs[-1] is not INVALID and not any(outputs[i] == outputs[j] for i, j in out_neq)


def outputs_coincide(nodes, out_neq, scene, slots, relations, answer):
    """The question is valid with this answer but some OUT_NEQ fails (what the constraint removes)."""
    return coincide_of(run_clevr(nodes, scene, slots, relations), out_neq, answer)


def coincide_of(outputs, out_neq, answer):
    """:func:`outputs_coincide` from the nodes' outputs on the scene."""
    result = outputs[-1]
    if result is INVALID or not any(outputs[i] == outputs[j] for i, j in out_neq):
        return False
    return (result == (answer == "yes")) if isinstance(result, bool) else result == answer


# ------------------------------------------------------------------ scenes
def random_scenes(n, seed, low=3, high=7, density=0.35):
    """Scene dicts with random attributes and random relationships, and their bank."""
    schema = GRAMMAR.schema
    rng = np.random.default_rng(seed)
    S, R = schema.max_objects, len(schema.relations)
    codes = np.full((n, S, schema.n_attributes), -1, np.int8)
    relations = np.zeros((n, R, S, S), bool)
    scenes = []
    for i in range(n):
        k = int(rng.integers(low, high + 1))
        for a, attr in enumerate(schema.attributes):
            codes[i, :k, a] = rng.integers(0, attr.n_values, k)
        rel = rng.random((R, k, k)) < density
        rel[:, np.arange(k), np.arange(k)] = False
        relations[i, :, :k, :k] = rel
        objects = [{attr.name: attr.values[codes[i, s, a]] for a, attr in enumerate(schema.attributes)}
                   for s in range(k)]
        lists = {r: [sorted(int(a) for a in np.flatnonzero(rel[j, :, b])) for b in range(k)]
                 for j, r in enumerate(schema.relations)}
        scenes.append({"objects": objects, "relationships": lists})
    return SceneBank(codes, schema, relations=relations), scenes


def scene_of(objects, relationships=None):
    """One scene from ``[(size, color, material, shape), ...]``; no relations unless given."""
    k = len(objects)
    lists = relationships or {r: [[] for _ in range(k)] for r in GRAMMAR.schema.relations}
    return {"objects": [dict(zip(ATTRS, o)) for o in objects], "relationships": lists}


def bank_of(scenes):
    schema = GRAMMAR.schema
    S, R = schema.max_objects, len(schema.relations)
    codes = np.full((len(scenes), S, schema.n_attributes), -1, np.int8)
    relations = np.zeros((len(scenes), R, S, S), bool)
    for i, scene in enumerate(scenes):
        for s, obj in enumerate(scene["objects"]):
            for a, attr in enumerate(schema.attributes):
                codes[i, s, a] = attr.values.index(obj[attr.name])
        for j, r in enumerate(schema.relations):
            for b, members in enumerate(scene["relationships"][r]):
                for a in members:
                    relations[i, j, a, b] = True
    return SceneBank(codes, schema, relations=relations)


def truth_values(programs, bank):
    parsed = [Program.parse(p, GRAMMAR) for p in programs]
    return signature_bits(run(compile_for(parsed, bank, GRAMMAR), bank), bank.n_scenes)


def domains(programs, bank):
    """bool (n, scenes): the executor's domains of ``programs`` (one pass with the extensions)."""
    ext, dom = evaluate_with_domains(programs, bank, GRAMMAR)
    assert (signature_bits(ext, bank.n_scenes) == truth_values(programs, bank)).all()
    return signature_bits(dom, bank.n_scenes)


@pytest.fixture(scope="module")
def scenes():
    return random_scenes(400, seed=3)


@pytest.fixture(scope="module")
def templates():
    return load_clevr_templates()


def raw_templates():
    with open(default_clevr_templates_path(), "rb") as f:
        return {t["name"]: t for t in tomllib.load(f)["template"]}


# ------------------------------------------------------------------ the file
def test_all_ninety_templates_of_the_nine_files_load(templates):
    assert default_clevr_templates_path() == ROOT / "hypotheses" / "closure" / "clevr_templates.toml"
    counts = {f: sum(t.file == f for t in templates.values()) for f in CLEVR_TEMPLATE_FILES}
    assert counts == {"zero_hop": 6, "one_hop": 6, "two_hop": 6, "three_hop": 6, "single_and": 5, "single_or": 8,
                      "same_relate": 28, "comparison": 16, "compare_integer": 9}
    kinds = {}
    for t in templates.values():
        assert isinstance(t, ClevrTemplate)
        kinds[t.answer_kind] = kinds.get(t.answer_kind, 0) + 1
    assert kinds == {"count": 21, "exist": 12, "query": 32, "yes_no_same": 16, "compare_count": 9}
    # spot checks against CLEVR's JSON
    t = templates["single_and_2"]
    assert t.out_neq == ((2, 5),) and t.null_slots == {"<C3>"} and t.query_attribute == "color"
    assert templates["comparison_8"].out_neq == ((5, 1),)
    assert templates["compare_integer_3"].out_neq == ()


def test_the_question_renders_with_every_slot_filled_or_blank(templates):
    t = templates["one_hop_3"]
    filling = clevr_filling(t, {"<Z>": "large", "<S>": "cube", "<R>": "left", "<M2>": "metal"})
    assert render_clevr_question(t, filling) == "What color is the metal thing that is left of the large cube?"
    rng = np.random.default_rng(0)
    for t in templates.values():
        text = render_clevr_question(t, sample_clevr_filling(t, rng=rng))
        assert "<" not in text and "[" not in text and "  " not in text and text.endswith("?"), text


def test_null_slots_stay_empty_and_descriptions_that_need_a_word_get_one(templates):
    rng = np.random.default_rng(1)
    for t in templates.values():
        for _ in range(30):
            filling = sample_clevr_filling(t, rng=rng, max_filters=4)
            slots = dict(filling.slots)
            assert all(slots[s] is None for s in t.null_slots), t.name
            for _, group, required in t.slot_groups:
                filled = sum(slots[s] is not None for s in group)
                assert filled >= required and filled <= 4
            assert [r for r, _ in filling.relations] == list(t.relation_slots)


# ------------------------------------------------------------------ every template against the executor
def test_every_template_s_concepts_equal_its_program_on_scenes(templates, scenes):
    """All 90 templates: a few fillings each, every answer's concept, 400 random scenes."""
    bank, dicts = scenes
    raw = raw_templates()
    cases = []
    for name, t in templates.items():
        rng = np.random.default_rng(sum(map(ord, name)))
        nodes = parse_nodes(raw[name]["nodes"])
        for k in (1, 1, 1, 2, 2, 2):
            filling = sample_clevr_filling(t, rng=rng, max_filters=k)
            for inst in clevr_fill_instances(t, filling):
                cases.append((name, nodes, t.out_neq, dict(filling.slots), dict(filling.relations), inst))
    bits = truth_values([c[-1].program for c in cases], bank)
    doms = domains([c[-1].program for c in cases], bank)
    positives, excluded, corners = {}, {}, {}
    for (name, nodes, out_neq, slots, relations, inst), got, dom in zip(cases, bits, doms):
        failures = []  # the reference interpreter runs once per scene; its outputs answer all three
        outputs = [run_clevr(nodes, s, slots, relations, failures) for s in dicts]
        want = np.array([truth_of(o, out_neq, inst.answer) for o in outputs])
        wrong = np.flatnonzero(want != got)
        assert not len(wrong), f"{name} {inst.program!r} on scene {wrong[0]}: {dicts[wrong[0]]}"
        want_dom = np.array([domain_of(o, out_neq) for o in outputs])
        wrong = np.flatnonzero(want_dom != dom)
        assert not len(wrong), f"{name} {inst.program!r}: domain differs on scene {wrong[0]}: {dicts[wrong[0]]}"
        file = name.rsplit("_", 1)[0]
        positives[file] = positives.get(file, 0) + int(want.sum())
        excluded[file] = excluded.get(file, 0) + sum(coincide_of(o, out_neq, inst.answer) for o in outputs)
        if any(kind.endswith("unique") for kind, _, _ in nodes):
            corners.setdefault(file, set()).update(failures)
    assert all(positives[f] > 0 for f in CLEVR_TEMPLATE_FILES), positives  # the check is not vacuous
    # the twins met scenes where a referent is missing and where it is doubled, in every file with one
    assert corners and all(c == {"missing", "doubled"} for c in corners.values()), corners
    # OUT_NEQ removed answers in every file that has it
    assert all(excluded[f] > 0 for f in ("comparison", "single_and", "single_or", "compare_integer")), excluded


def test_every_program_is_closed_well_typed_and_parses(templates):
    for name, progs in clevr_concepts(templates, 15, seed=2, max_filters=4).items():
        for p in progs:
            for part in p.split(" where "):  # the program, then each domain constraint
                check_program(part)
                assert len(part.split()) <= 256
            Program.parse(p, GRAMMAR)


def test_the_first_compare_integer_template_is_never_answered_yes(templates):
    t = templates["compare_integer_0"]
    assert t.never_yes and "OUT_NEQ" in t.never_yes
    assert clevr_instances([t], 10, 0) == {"compare_integer_0": []}
    for name in ("compare_integer_1", "compare_integer_2", "compare_integer_6"):
        assert templates[name].never_yes is None


# ------------------------------------------------------------------ one hand-written concept per file
def differ(a, b):
    """The domain constraint (OUT_NEQ) that two referents ``a``, ``b`` are two objects: one has
    the other's shape only if they are two (same_* never holds between an object and itself)."""
    return f"{a} {b} same_shape {a} shape? {b} shape? = not or"


HAND_WRITTEN = [
    ("zero_hop_1", {"<C>": "red", "<S>": "cube"}, "yes",
     "S y color? red = y shape? cube = and filter:y exist"),
    ("one_hop_0", {"<C>": "blue", "<R>": "left", "<Z2>": "large"}, 2,
     "S y size? large = y S z color? blue = filter:z unique left and filter:y count 2 ="),
    ("two_hop_2", {"<C>": "red", "<R>": "behind", "<S2>": "cube", "<R2>": "front", "<M3>": "metal"}, "large",
     "S y material? metal = y S z shape? cube = z S x color? red = filter:x unique behind and filter:z unique "
     "front and filter:y unique size? large ="),
    ("three_hop_1", {"<S>": "sphere", "<R>": "left", "<R2>": "right", "<R3>": "front", "<C4>": "green"}, "yes",
     "S y color? green = y S z S x S w shape? sphere = filter:w unique left filter:x unique right filter:z unique "
     "front and filter:y exist"),
    ("single_and_1", {"<C>": "red", "<R>": "left", "<M2>": "metal", "<R2>": "behind", "<S3>": "cube"}, "small",
     # the size of the cube both behind the metal thing and left of the red thing; OUT_NEQ: the two sets differ
     "S y shape? cube = y S z color? red = filter:z unique left and y S z material? metal = filter:z unique behind "
     "and filter:y unique size? small = where "
     "S y S z color? red = filter:z unique left y S z material? metal = filter:z unique behind not and "
     "y S z material? metal = filter:z unique behind y S z color? red = filter:z unique left not and or exists:y"),
    ("single_or_0", {"<C>": "red", "<S2>": "cube"}, 3,
     # how many red things or cubes; OUT_NEQ: the red things are not the cubes
     "S y color? red = filter:y S y shape? cube = filter:y union count 3 = where "
     "S y color? red = y shape? cube = not and y shape? cube = y color? red = not and or exists:y"),
    ("same_relate_13", {"<S>": "cylinder", "<Z2>": "small"}, 1,
     "S y size? small = y S z shape? cylinder = filter:z unique same_color and filter:y count 1 ="),
    ("comparison_1", {"<S>": "cube", "<S2>": "sphere"}, "yes",
     # do the cube and the sphere have the same colour, asked where they are two objects
     "S y shape? cube = filter:y unique color? S y shape? sphere = filter:y unique color? = where "
     + differ("S y shape? cube = filter:y unique", "S y shape? sphere = filter:y unique")),
    ("compare_integer_8", {"<Z>": "large", "<R>": "left", "<C2>": "red", "<S3>": "cube", "<R2>": "right"}, "yes",
     # more red things left of the large thing than things right of the cube; the anchors differ
     "S y color? red = y S z size? large = filter:z unique left and filter:y count "
     "S y S z shape? cube = filter:z unique right filter:y count > where "
     + differ("S y size? large = filter:y unique", "S y shape? cube = filter:y unique")),
]


@pytest.mark.parametrize("name,values,answer,program", HAND_WRITTEN, ids=[h[0].rsplit("_", 1)[0] for h in HAND_WRITTEN])
def test_a_hand_written_concept_of_each_file_equals_its_template_s(name, values, answer, program, templates, scenes):
    t = templates[name]
    filling = clevr_filling(t, values)
    instances = clevr_fill_instances(t, filling)
    assert all(isinstance(i, Instance) for i in instances)
    mine = {i.answer: i.program for i in instances}
    assert mine[answer] == program
    # the same truth values as the template's program run by CLEVR's functions
    bank, dicts = scenes
    nodes = parse_nodes(raw_templates()[name]["nodes"])
    got = truth_values([program], bank)[0]
    want = np.array([expected_truth(nodes, t.out_neq, s, dict(filling.slots), dict(filling.relations), answer)
                     for s in dicts])
    assert (got == want).all()
    assert set(mine) == ({"yes"} if t.answer_kind in ("exist", "yes_no_same", "compare_count") else
                         set(COUNT_ANSWERS) if t.answer_kind == "count" else set(CLEVR_VALUES[t.query_attribute]))


def test_out_neq_excludes_the_scene_where_both_expressions_name_one_object(templates):
    t = templates["comparison_3"]  # do the <Z> <C> <M> thing and the <Z2> <C2> <M2> thing have the same shape?
    filling = clevr_filling(t, {"<C>": "blue", "<Z2>": "large"})
    (inst,) = clevr_fill_instances(t, filling)
    assert inst.program == ("S y color? blue = filter:y unique shape? S y size? large = filter:y unique shape? = where "
                            + differ("S y color? blue = filter:y unique", "S y size? large = filter:y unique"))
    one = scene_of([("small", "red", "rubber", "cube"), ("large", "blue", "metal", "sphere"),
                    ("small", "green", "rubber", "cylinder")])   # the blue thing is the large thing
    two = scene_of([("small", "blue", "rubber", "sphere"), ("large", "red", "metal", "sphere"),
                    ("small", "green", "rubber", "cube")])       # two spheres
    nodes = parse_nodes(raw_templates()["comparison_3"]["nodes"])
    slots, rel = dict(filling.slots), dict(filling.relations)
    assert run_clevr(nodes, one, slots, rel)[-1] is True       # CLEVR's program alone says yes
    assert not expected_truth(nodes, t.out_neq, one, slots, rel, "yes")
    assert truth_values([inst.program], bank_of([one, two]))[0].tolist() == [False, True]
    assert domains([inst.program], bank_of([one, two]))[0].tolist() == [False, True]  # `one` is outside


def test_fillings_that_fail_out_neq_everywhere_are_not_concepts(templates):
    t = templates["comparison_1"]
    same = clevr_filling(t, {"<S>": "cube", "<S2>": "cube"})        # the cube and the cube
    assert "OUT_NEQ" in clevr_rejection(t, same) and clevr_fill_instances(t, same) == []
    t = templates["single_and_0"]                                    # both left of the cube and left of the cube
    same = clevr_filling(t, {"<S>": "cube", "<R>": "left", "<S2>": "cube", "<R2>": "left"})
    assert "degenerate" in clevr_rejection(t, same)
    assert clevr_rejection(t, clevr_filling(t, {"<S>": "cube", "<R>": "left", "<S2>": "cube", "<R2>": "right"})) is None
    for name, insts in clevr_instances(templates, 40, 1).items():
        for i in insts:
            assert " same_shape S y shape? cube = filter:y unique S y shape? cube" not in i.program
            assert "S y shape? cube = filter:y unique shape? S y shape? cube = filter:y unique shape? =" not in i.program


def test_instantiation_is_deterministic_and_keeps_the_answers(templates):
    a = clevr_instances(templates, 8, seed=5)
    assert a == clevr_instances(templates, 8, seed=5) and a != clevr_instances(templates, 8, seed=6)
    assert clevr_instances(["same_relate_4"], 8, seed=5) == {"same_relate_4": a["same_relate_4"]}
    assert {n: [i.program for i in v] for n, v in a.items()} == clevr_concepts(templates, 8, seed=5)
    for name, insts in a.items():
        t = templates[name]
        assert len({i.program for i in insts}) == len(insts)
        for i in insts:
            if t.answer_kind == "count":
                assert i.answer in COUNT_ANSWERS and i.program.split()[-2:] == [str(i.answer), "="] or "exists:" in i.program
            elif t.answer_kind == "query":
                assert i.answer in CLEVR_VALUES[t.query_attribute] and f"{t.query_attribute}? {i.answer} =" in i.program
            else:
                assert i.answer == "yes"
    # templates that have fewer fillings than asked for give what they have
    assert len(clevr_instances(["zero_hop_4"], 100, 0)["zero_hop_4"]) < 100 * len(CLEVR_VALUES["color"])


def test_three_hop_needs_four_variables(templates):
    t = templates["three_hop_2"]
    progs = [i.program for i in clevr_template_instances_of(t)]
    assert all({"filter:y", "filter:z", "filter:x", "filter:w"} <= set(p.split()) for p in progs)
    with pytest.raises(ClosureFamilyError, match="nests 4 binders"):
        clevr_fill_instances(t, sample_clevr_filling(t, rng=0), variables=("y", "z", "w"))
    assert CLEVR_DEPTH_VARIABLES == ("y", "z", "x", "w")


def clevr_template_instances_of(t):
    from bayes_concepts.suites.closure import clevr_template_instances
    return clevr_template_instances(t, rng=0, n=5)


def test_chance_of_a_template_s_answers(templates):
    assert answer_chance(templates["zero_hop_4"]) == pytest.approx(100 / 8)
    assert answer_chance(templates["zero_hop_5"]) == 50.0
    assert answer_chance(templates["one_hop_0"]) == pytest.approx(100 / 3)
    assert answer_chance(templates["compare_integer_4"]) == 50.0


# ------------------------------------------------------------------ CLOSURE's families against their programs
# Each family's functional program in its own slot numbering (Figures 8 and 9), with CLOSURE's
# OUT_NEQ constraints (the released meta-templates: the compared objects of the compare
# families, the two intersected sets of and_mat_spa; CLEVR's comparison and single_and for
# the baselines).  <A> and <Q> stand for the matched and queried attribute.
FAMILY_PROGRAMS = {
    "embed_spa_mat": (["scene", "filter_unique <Z3> <C3> <M3> <S3> <- 0", "relate_filter_unique <R> <Z2> <C2> <M2> <S2> <- 1",
                       "same_<A> <- 2", "filter_exist <Z> <C> <M> <S> <- 3"], ()),
    "embed_mat_spa": (["scene", "filter_unique <Z3> <C3> <M3> <S3> <- 0", "same_<A> <- 1",
                       "filter_unique <Z2> <C2> <M2> <S2> <- 2", "relate_filter_exist <R> <Z> <C> <M> <S> <- 3"], ()),
    "compare_mat": (["scene", "filter_unique <Z2> <C2> <M2> <S2> <- 0", "same_<A> <- 1",
                     "filter_unique <Z> <C> <M> <S> <- 2", "query_<Q> <- 3", "scene",
                     "filter_unique <Z3> <C3> <M3> <S3> <- 5", "query_<Q> <- 6", "equal_<Q> <- 4 7"], ((3, 6),)),
    "compare_mat_spa": (["scene", "filter_unique <Z2> <C2> <M2> <S2> <- 0", "same_<A> <- 1",
                         "filter_unique <Z> <C> <M> <S> <- 2", "query_<Q> <- 3", "scene",
                         "filter_unique <Z4> <C4> <M4> <S4> <- 5", "relate_filter_unique <R2> <Z3> <C3> <M3> <S3> <- 6",
                         "query_<Q> <- 7", "equal_<Q> <- 4 8"], ((3, 7),)),
    "and_mat_spa": (["scene", "filter_unique <Z3> <C3> <M3> <S3> <- 0", "same_<A> <- 1", "scene",
                     "filter_unique <Z2> <C2> <M2> <S2> <- 3", "relate <R2> <- 4", "intersect <- 2 5",
                     "filter_unique <Z> <C> <M> <S> <- 6", "query_<Q> <- 7"], ((2, 5),)),
    "or_mat": (["scene", "filter <Z> <C> <M> <S> <- 0", "scene", "filter_unique <Z3> <C3> <M3> <S3> <- 2",
                "same_<A> <- 3", "filter <Z2> <C2> <M2> <S2> <- 4", "union <- 1 5", "count <- 6"], ()),
    "or_mat_spa": (["scene", "filter_unique <Z2> <C2> <M2> <S2> <- 0", "relate_filter <R> <Z> <C> <M> <S> <- 1",
                    "scene", "filter_unique <Z4> <C4> <M4> <S4> <- 3", "same_<A> <- 4",
                    "filter <Z3> <C3> <M3> <S3> <- 5", "union <- 2 6", "count <- 7"], ()),
    "embed_spa_mat_baseline": (["scene", "filter_unique <Z3> <C3> <M3> <S3> <- 0",
                                "relate_filter_unique <R2> <Z2> <C2> <M2> <S2> <- 1",
                                "relate_filter_exist <R> <Z> <C> <M> <S> <- 2"], ()),
    "compare_mat_baseline": (["scene", "filter_unique <Z2> <C2> <M2> <S2> <- 0",
                              "relate_filter_unique <R> <Z> <C> <M> <S> <- 1", "query_<Q> <- 2", "scene",
                              "filter_unique <Z3> <C3> <M3> <S3> <- 4", "query_<Q> <- 5", "equal_<Q> <- 3 6"],
                             ((2, 5),)),
    "compare_mat_spa_baseline": (["scene", "filter_unique <Z2> <C2> <M2> <S2> <- 0",
                                  "relate_filter_unique <R> <Z> <C> <M> <S> <- 1", "query_<Q> <- 2", "scene",
                                  "filter_unique <Z4> <C4> <M4> <S4> <- 4",
                                  "relate_filter_unique <R2> <Z3> <C3> <M3> <S3> <- 5", "query_<Q> <- 6",
                                  "equal_<Q> <- 3 7"], ((2, 6),)),
    "and_mat_spa_baseline": (["scene", "filter_unique <Z2> <C2> <M2> <S2> <- 0", "relate <R> <- 1", "scene",
                              "filter_unique <Z3> <C3> <M3> <S3> <- 3", "relate <R2> <- 4", "intersect <- 2 5",
                              "filter_unique <Z> <C> <M> <S> <- 6", "query_<Q> <- 7"], ((2, 5),)),
    "or_mat_baseline": (["scene", "filter <Z> <C> <M> <S> <- 0", "scene", "filter_unique <Z3> <C3> <M3> <S3> <- 2",
                         "relate_filter <R> <Z2> <C2> <M2> <S2> <- 3", "union <- 1 4", "count <- 5"], ()),
    "or_mat_spa_baseline": (["scene", "filter_unique <Z2> <C2> <M2> <S2> <- 0",
                             "relate_filter <R> <Z> <C> <M> <S> <- 1", "scene", "filter_unique <Z4> <C4> <M4> <S4> <- 3",
                             "relate_filter <R2> <Z3> <C3> <M3> <S3> <- 4", "union <- 2 5", "count <- 6"], ()),
}
FAMILY_PROGRAMS["embed_mat_spa_baseline"] = FAMILY_PROGRAMS["embed_spa_mat_baseline"]


def family_nodes(name, filling):
    texts, out_neq = FAMILY_PROGRAMS[name]
    texts = [t.replace("<A>", filling.attribute or "").replace("<Q>", filling.query or "") for t in texts]
    return parse_nodes(texts), out_neq


def test_every_family_s_concepts_equal_its_program_on_scenes(scenes):
    bank, dicts = scenes
    families = load_families()
    assert set(FAMILY_PROGRAMS) == set(families)
    cases = []
    for name, f in families.items():
        rng = np.random.default_rng(sum(map(ord, name)))
        for k in (1, 1, 1, 1, 2, 2, 2, 2):
            filling = sample_filling(f, rng=rng, max_filters=k)
            if family_rejection(f, filling):
                continue
            nodes, out_neq = family_nodes(name, filling)
            for inst in fill_instances(f, filling):
                cases.append((name, nodes, out_neq, filling, inst))
    bits = truth_values([c[-1].program for c in cases], bank)
    doms = domains([c[-1].program for c in cases], bank)
    positives, corners = {}, {}
    for (name, nodes, out_neq, filling, inst), got, dom in zip(cases, bits, doms):
        slots, rel = dict(filling.slots), dict(filling.relations)
        failures = []  # the reference interpreter runs once per scene; its outputs answer both
        outputs = [run_clevr(nodes, s, slots, rel, failures) for s in dicts]
        want = np.array([truth_of(o, out_neq, inst.answer) for o in outputs])
        wrong = np.flatnonzero(want != got)
        assert not len(wrong), f"{name} {inst.program!r} on scene {wrong[0]}: {dicts[wrong[0]]}"
        want_dom = np.array([domain_of(o, out_neq) for o in outputs])
        wrong = np.flatnonzero(want_dom != dom)
        assert not len(wrong), f"{name} {inst.program!r}: domain differs on scene {wrong[0]}: {dicts[wrong[0]]}"
        positives[name] = positives.get(name, 0) + int(want.sum())
        corners.setdefault(name, set()).update(failures)
    assert all(v > 0 for v in positives.values()), positives
    # every family met scenes where a referent is missing and where it is doubled
    assert set(corners) == set(families) and all(c == {"missing", "doubled"} for c in corners.values()), corners


def family_filling(family, slots, relations=(), attribute=None, query=None):
    """A family's filling by hand: ``slots`` the filled ones, every other blank."""
    names = [f"<{letter}{'' if g == 1 else g}>" for g in family.groups for letter in "ZCMS"]
    assert set(slots) <= set(names)
    return Filling(tuple((s, slots.get(s)) for s in names), tuple(relations), attribute, query)


HAND_WRITTEN_FAMILIES = [
    ("embed_spa_mat", {"<S>": "cube", "<C2>": "red", "<S3>": "sphere"}, (("<R>", "left"),), "size", None, "yes",
     "S y shape? cube = y S z color? red = z S x shape? sphere = filter:x unique left and filter:z unique same_size "
     "and filter:y exist"),
    ("embed_mat_spa", {"<M>": "metal", "<S2>": "cube", "<C3>": "blue"}, (("<R>", "behind"),), "size", None, "yes",
     "S y material? metal = y S z shape? cube = z S x color? blue = filter:x unique same_size and filter:z unique "
     "behind and filter:y exist"),
    ("compare_mat", {"<Z>": "large", "<S2>": "cube", "<M3>": "metal"}, (), "color", "shape", "yes",
     "S y size? large = y S z shape? cube = filter:z unique same_color and filter:y unique shape? "
     "S y material? metal = filter:y unique shape? = where "
     + differ("S y size? large = y S z shape? cube = filter:z unique same_color and filter:y unique",
              "S y material? metal = filter:y unique")),
    ("compare_mat_spa", {"<Z>": "large", "<S2>": "cube", "<C4>": "red"}, (("<R2>", "front"),), "color", "shape", "yes",
     "S y size? large = y S z shape? cube = filter:z unique same_color and filter:y unique shape? "
     "S y S z color? red = filter:z unique front filter:y unique shape? = where "
     + differ("S y size? large = y S z shape? cube = filter:z unique same_color and filter:y unique",
              "S y S z color? red = filter:z unique front filter:y unique")),
    ("and_mat_spa", {"<S>": "cube", "<C2>": "red", "<M3>": "metal"}, (("<R2>", "left"),), "size", "color", "blue",
     "S y shape? cube = y S z color? red = filter:z unique left and y S z material? metal = filter:z unique same_size "
     "and filter:y unique color? blue = where "
     "S y S z color? red = filter:z unique left y S z material? metal = filter:z unique same_size not and "
     "y S z material? metal = filter:z unique same_size y S z color? red = filter:z unique left not and or exists:y"),
    ("or_mat", {"<S>": "cube", "<C2>": "red", "<S3>": "sphere"}, (), "size", None, 2,
     "S y shape? cube = filter:y S y color? red = y S z shape? sphere = filter:z unique same_size and filter:y "
     "union count 2 ="),
    ("or_mat_spa", {"<C>": "red", "<S2>": "cube", "<M3>": "metal", "<C4>": "blue"}, (("<R>", "right"),), "shape",
     None, 3,
     "S y color? red = y S z shape? cube = filter:z unique right and filter:y S y material? metal = y S z color? "
     "blue = filter:z unique same_shape and filter:y union count 3 ="),
]


@pytest.mark.parametrize("name,slots,relations,attribute,query,answer,program", HAND_WRITTEN_FAMILIES,
                         ids=[h[0] for h in HAND_WRITTEN_FAMILIES])
def test_a_hand_written_concept_of_each_closure_family_equals_its_instantiation(
        name, slots, relations, attribute, query, answer, program, scenes):
    f = load_families()[name]
    filling = family_filling(f, slots, relations, attribute, query)
    mine = {i.answer: i.program for i in fill_instances(f, filling)}
    assert mine[answer] == program
    bank, dicts = scenes
    nodes, out_neq = family_nodes(name, filling)
    want = [expected_truth(nodes, out_neq, s, dict(filling.slots), dict(filling.relations), answer) for s in dicts]
    assert truth_values([program], bank)[0].tolist() == want


def test_out_neq_in_closure_s_compare_family_excludes_the_co_referent_scene():
    f = load_families()["compare_mat"]
    # There is another large thing that is the same color as the cube; does it have the same shape as the metal thing?
    filling = family_filling(f, {"<Z>": "large", "<S2>": "cube", "<M3>": "metal"}, (), "color", "shape")
    (inst,) = fill_instances(f, filling)
    one = scene_of([("small", "red", "rubber", "cube"), ("large", "red", "metal", "sphere"),
                    ("small", "blue", "rubber", "cylinder")])   # both expressions name the large red sphere
    two = scene_of([("small", "red", "rubber", "cube"), ("large", "red", "rubber", "sphere"),
                    ("small", "blue", "metal", "sphere")])      # two spheres
    nodes, out_neq = family_nodes("compare_mat", filling)
    slots, rel = dict(filling.slots), dict(filling.relations)
    assert run_clevr(nodes, one, slots, rel)[-1] is True and not expected_truth(nodes, out_neq, one, slots, rel, "yes")
    assert truth_values([inst.program], bank_of([one, two]))[0].tolist() == [False, True]
    # a filling whose two intersected sets are always the same is never asked
    base = load_families()["and_mat_spa_baseline"]
    same = family_filling(base, {"<S2>": "cube", "<S3>": "cube"}, (("<R>", "left"), ("<R2>", "left")), None, "color")
    assert family_rejection(base, same) and family_rejection(base, family_filling(
        base, {"<S2>": "cube", "<S3>": "cube"}, (("<R>", "left"), ("<R2>", "right")), None, "color")) is None


# ------------------------------------------------------------------ bad input
GOOD = '''
[[template]]
name = "mine_0"
question = "Are there any <Z> <C> <M> <S>s?"
nodes = ["scene", "filter_exist <Z> <C> <M> <S> <- 0"]
constraints = ["NULL <Z>"]
'''


def test_a_user_template_file_loads(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text(GOOD)
    (t,) = load_clevr_templates(path).values()
    assert t.answer_kind == "exist" and t.null_slots == {"<Z>"}
    assert all(" size? " not in i.program for i in clevr_instances([t], 20, 0)["mine_0"])


@pytest.mark.parametrize("old,new,message", [
    ('"filter_exist', '"filter_exists', "node 1: unknown node type 'filter_exists'"),
    ("<- 0\"]", "<- 3\"]", "node 1 (filter_exist): input 3 is not an earlier node"),
    ("<- 0\"]", "<- 0\", \"query_color <- 1\"]", "node 2 (query_color) takes OBJ, got BOOL"),
    ('"NULL <Z>"', '"NULL <Q>"', "constraint 'NULL <Q>' names '<Q>', which is not an attribute slot"),
    ('"NULL <Z>"', '"OUT_NEQ 0 1"', "constraint 'OUT_NEQ 0 1' must name two nodes of one output type"),
    ('"NULL <Z>"', '"OUT_NEQ 1 7"', "constraint 'OUT_NEQ 1 7' names node 7, which the template lacks (nodes 0..1)"),
    ('"NULL <Z>"', '"NOT_EQ 0 1"', "constraint 'NOT_EQ 0 1': unknown kind 'NOT_EQ' (known: NULL, OUT_NEQ)"),
    ("filter_exist <Z> <C> <M> <S>", "filter_exist <Z> <C> <M>", "takes side inputs ZCMS"),
    ('name = "mine_0"', 'name = "mine"', "name must be '<file>_<index>'"),
    ('question = "Are there any <Z> <C> <M> <S>s?"', 'question = "Are there any <C> <M> <S>s?"',
     "the question's slots differ"),
    ('constraints = ["NULL <Z>"]', 'constraints = ["NULL <Z>"]\ncolour = 1', "unknown key(s) colour"),
])
def test_bad_template_files_raise_one_line_errors(tmp_path, old, new, message):
    path = tmp_path / "bad.toml"
    assert old in GOOD
    path.write_text(GOOD.replace(old, new, 1))
    with pytest.raises(ClosureFamilyError) as info:
        load_clevr_templates(path)
    text = str(info.value)
    assert "\n" not in text and text.startswith(str(path)) and "template #1" in text and message in text, text
    assert isinstance(info.value, BayesConceptsError)


def test_bad_fillings_and_arguments(templates):
    t = templates["zero_hop_4"]
    for values, match in (({"<C>": "red"}, "must stay empty"), ({"<Q>": "red"}, "no slot"),
                          ({"<S>": "red"}, "not a CLEVR shape")):
        with pytest.raises(ClosureFamilyError, match=re.escape(match)):
            clevr_filling(t, values)
    with pytest.raises(ClosureFamilyError, match="need a relation"):
        clevr_filling(templates["one_hop_0"], {"<S>": "cube"})
    with pytest.raises(ClosureFamilyError, match="unknown CLEVR template"):
        clevr_instances(["zero_hop_99"], 2, 0)
    with pytest.raises(ClosureFamilyError, match="seed must be"):
        clevr_instances(None, 2, -1)
    with pytest.raises(ClosureFamilyError, match="max_filters"):
        sample_clevr_filling(t, rng=0, max_filters=5)
    with pytest.raises(ClosureFamilyError, match="cannot read"):
        load_clevr_templates(ROOT / "no such file.toml")


# ------------------------------------------------------------------ the README's numbers
def _readme_rows(section_start, section_end):
    text = (ROOT / "hypotheses" / "closure" / "README.md").read_text()
    body = text.split(section_start)[1].split(section_end)[0]
    return [[c.strip() for c in line.strip("|").split("|")] for line in body.splitlines() if line.startswith("| ")]


def test_the_readme_s_clevr_table_matches_the_templates(templates):
    from bayes_concepts.spaces.build import PRESETS
    from bayes_concepts.suites.closure.presets import CLEVR_PER_TEMPLATE
    assert PRESETS["clevr"]["clevr_per_template"] == CLEVR_PER_TEMPLATE == 50
    rows = {r[0]: r for r in _readme_rows("## CLEVR's question templates", "## Reported accuracies")
            if r[0] in CLEVR_TEMPLATE_FILES}
    assert set(rows) == set(CLEVR_TEMPLATE_FILES)
    made = clevr_instances(templates, CLEVR_PER_TEMPLATE, 0)
    for file, row in rows.items():
        mine = [t for t in templates.values() if t.file == file]
        assert int(row[1]) == len(mine)
        assert int(row[4].replace("-", "0")) == sum(bool(t.null_slots) for t in mine)
        assert int(row[5].replace(",", "")) == sum(len(made[t.name]) for t in mine)


def test_the_readme_s_measured_table_matches_the_committed_results():
    import json
    from bayes_concepts.suites.closure import family_drops
    results = ROOT / "benchmarks" / "results"
    clevr = json.loads((results / "closure_gap.json").read_text())
    base = json.loads((results / "closure_gap_baselines.json").read_text())
    assert clevr["protocol"] == "closure" and base["protocol"] == "closure-baselines"
    assert clevr["episodes_per_cell"] == base["episodes_per_cell"] == 5000
    assert clevr["space_manifest_sha256"] == base["space_manifest_sha256"]
    cell = {(p, r["split"], r["negatives"]): r for p, d in (("clevr", clevr), ("base", base)) for r in d["results"]}
    drops = family_drops()
    rows = [r for r in _readme_rows("## Measured", "## Fidelity notes") if r[0] in load_families()]
    assert len(rows) == 7
    for r in rows:
        f = r[0]
        mine = [d for d in drops if d.family == f]
        assert r[2] == f"{np.mean([d.drop for d in mine]):.1f}" and r[3] == f"{np.mean([d.normalised_drop for d in mine]):.2f}"
        for col, who in ((4, "clevr"), (6, "base")):
            gaps = [f"{cell[who, f, neg]['gap']['map']:.1f}" for neg in ("hard", "easy")]
            empty = [f"{100 * cell[who, f, neg]['weak_empty_share']:.1f}" for neg in ("hard", "easy")]
            assert r[col] == " / ".join(gaps) and r[col + 1] == " / ".join(empty), (f, who)


# ------------------------------------------------------------------ protocols closure and closure-baselines
def test_protocol_closure_trains_on_all_of_clevr_and_closure_baselines_on_the_baselines(clevr_space):
    import dataclasses
    from bayes_concepts.protocols import protocols
    from bayes_concepts.splits import SplitSpecError
    assert clevr_space.params["clevr_per_template"] == 50
    full, base = protocols.get("closure").splits(clevr_space), protocols.get("closure-baselines").splits(clevr_space)
    assert list(full) == list(base) == list(HAND_WRITTEN_FAMILIES_NAMES)
    clevr = set(p for ps in clevr_concepts(None, 50, 0).values() for p in ps)
    for name in full:
        a, b = full[name], base[name]
        assert set(b.train.tolist()) < set(a.train.tolist())          # the baselines are CLEVR questions too
        assert (a.test == b.test).all() and not set(a.test.tolist()) & set(a.train.tolist())
        assert a.spec["train"] == "clevr" and b.spec["train"] == "baselines" and a.spec["per_template"] == 50
        extra = {clevr_space.programs[i] for i in set(a.train.tolist()) - set(b.train.tolist())}
        assert extra <= clevr and any(" same_size " in p for p in extra)  # same_relate's matching in training
    assert protocols.get("closure").info()["train"] == "clevr"
    older = dataclasses.replace(clevr_space, params={k: v for k, v in clevr_space.params.items()
                                                     if k != "clevr_per_template"})
    with pytest.raises(SplitSpecError, match="closure-baselines"):
        protocols.get("closure").splits(older)
    assert list(protocols.get("closure-baselines").splits(older)) == list(base)


HAND_WRITTEN_FAMILIES_NAMES = ("embed_spa_mat", "embed_mat_spa", "compare_mat", "compare_mat_spa", "and_mat_spa",
                               "or_mat", "or_mat_spa")
