"""CLOSURE's families (``hypotheses/closure/families.toml``, ``bayes_concepts.suites.closure``).

The programs the module writes are checked by a typed stack machine written here from
``notes/relational_spec.md`` alone (token arities and types, variable binding, closed
referring expressions under ``unique``), not by the module's own template parser; when the
relational grammar file ``hypotheses/clevr.pcfg`` exists they are also parsed by
:meth:`bayes_concepts.lot.program.Program.parse`.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bayes_concepts.suites.closure import (CLEVR_VALUES, COUNT_ANSWERS, ClosureFamilyError, Family, FamilyDrop,
                                    answer_chance, default_families_path, family_concepts, family_drops,
                                    family_instances, fill_instances, fill_programs, instantiate, load_families,
                                    load_reported, render_question, sample_filling)
from bayes_concepts.errors import BayesConceptsError
from bayes_concepts.suites.closure.families import _postfix

ROOT = Path(__file__).resolve().parents[1]
CLEVR_PCFG = ROOT / "hypotheses" / "clevr.pcfg"
TESTS = ("embed_spa_mat", "embed_mat_spa", "compare_mat", "compare_mat_spa", "and_mat_spa", "or_mat", "or_mat_spa")
KINDS = {"embed_spa_mat": "exist", "embed_mat_spa": "exist", "compare_mat": "yes_no_same",
         "compare_mat_spa": "yes_no_same", "and_mat_spa": "query", "or_mat": "count", "or_mat_spa": "count"}
MODELS = ("FiLM", "MAC", "NS-VQA", "PG-Tensor-NMN", "PG-Vector-NMN", "GT-Tensor-NMN", "GT-Vector-NMN")


@pytest.fixture(scope="module")
def families():
    return load_families()


@pytest.fixture(scope="module")
def concepts(families):
    """Concepts of every family for a few seeds and filter budgets."""
    out = {}
    for seed in (0, 1):
        for max_filters in (1, 2, 4):
            for name, progs in family_concepts(families, 25, seed, max_filters=max_filters).items():
                out.setdefault(name, []).extend(progs)
    return out


# ------------------------------------------------------------------ a checker from the spec
VALUE_TYPE = {v: t.upper() for t in ("color", "shape", "material", "size") for v in CLEVR_VALUES[t]}
PROPERTY_TYPE = {"color?": "COLOR", "shape?": "SHAPE", "material?": "MATERIAL", "size?": "SIZE"}
RELATIONS = {"left", "right", "front", "behind", "same_color", "same_shape", "same_material", "same_size"}
ORDERED = {"NUM", "INT", "SIZE"}


class Item:
    def __init__(self, type_, free=frozenset(), bound=frozenset(), bare_scene=False):
        self.type, self.free, self.bound, self.bare_scene = type_, frozenset(free), frozenset(bound), bare_scene


def check_program(program: str) -> None:
    """Assert that ``program`` is one well-typed closed BOOL of the relational language."""
    stack: list = []

    def pop(*types):
        assert len(stack) >= len(types), f"{program!r}: stack underflow"
        items = stack[len(stack) - len(types):]
        del stack[len(stack) - len(types):]
        for item, want in zip(items, types):
            assert want is None or item.type == want, f"{program!r}: got {item.type}, wanted {want}"
        return items

    for token in program.split():
        if token == "S":
            stack.append(Item("SET", bare_scene=True))
        elif token in ("x", "y", "z", "w"):
            stack.append(Item("OBJ", free={token}))
        elif token in VALUE_TYPE:
            stack.append(Item(VALUE_TYPE[token]))
        elif token.isdigit():
            stack.append(Item("INT"))
        elif token in PROPERTY_TYPE:
            (obj,) = pop("OBJ")
            stack.append(Item(PROPERTY_TYPE[token], obj.free, obj.bound))
        elif token == "unique":
            (s,) = pop("SET")
            assert not s.free, f"{program!r}: unique of a set that names bound variable(s) {set(s.free)}"
            assert not s.bare_scene, f"{program!r}: 'S unique' is no description"
            stack.append(Item("OBJ", s.free, s.bound))
        elif token in ("exist", "count"):
            (s,) = pop("SET")
            stack.append(Item("BOOL" if token == "exist" else "NUM", s.free, s.bound))
        elif token.split(":")[0] in ("filter", "exists", "forall") and ":" in token:
            var = token.split(":", 1)[1]
            assert var in ("x", "y", "z", "w"), f"{program!r}: binder of unknown variable {var!r}"
            s, body = pop("SET", "BOOL")
            assert var in body.free, f"{program!r}: {token} does not use its variable"
            assert var not in body.bound and var not in s.bound and var not in s.free, \
                f"{program!r}: {token} re-binds or shadows {var}"
            free = s.free | (body.free - {var})
            stack.append(Item("SET" if token.startswith("filter") else "BOOL", free, s.bound | body.bound | {var}))
        elif token in ("union", "intersect"):
            a, b = pop("SET", "SET")
            assert not a.bare_scene and not b.bare_scene, f"{program!r}: {token} of the whole scene"
            stack.append(Item("SET", a.free | b.free, a.bound | b.bound))
        elif token in RELATIONS:
            a, b = pop("OBJ", "OBJ")
            stack.append(Item("BOOL", a.free | b.free, a.bound | b.bound))
        elif token in ("=", ">"):
            a, b = pop(None, None)
            if token == "=":
                assert a.type == b.type or {a.type, b.type} == {"NUM", "INT"}, f"{program!r}: {a.type} = {b.type}"
            else:
                assert a.type in ORDERED and b.type in ORDERED, f"{program!r}: {a.type} > {b.type}"
            assert "BOOL" not in (a.type, b.type) and "SET" not in (a.type, b.type)
            stack.append(Item("BOOL", a.free | b.free, a.bound | b.bound))
        elif token in ("and", "or"):
            a, b = pop("BOOL", "BOOL")
            stack.append(Item("BOOL", a.free | b.free, a.bound | b.bound))
        elif token == "not":
            (a,) = pop("BOOL")
            stack.append(a)
        else:
            raise AssertionError(f"{program!r}: token {token!r} is not in the relational language")
    assert len(stack) == 1, f"{program!r}: leaves {len(stack)} items"
    assert stack[0].type == "BOOL", f"{program!r}: leaves a {stack[0].type}"
    assert not stack[0].free, f"{program!r}: unbound variable(s) {set(stack[0].free)}"


def test_the_checker_rejects_what_the_spec_forbids():
    check_program("S y color? blue = filter:y unique S z S y color? red = filter:y unique left filter:z "
                  "unique same_size")
    for bad in ("S y color? blue = filter:y",                        # a SET, not a BOOL
                "y color? blue =",                                   # y unbound
                "S y color? blue = y z left and filter:y exist",     # z unbound
                "S unique color? blue =",                            # no description
                "S y S y color? red = filter:y unique left filter:y count 2 =",    # y re-bound inside y
                "S z S z y left filter:y unique same_color exists:z",              # unique names z
                "S y color? cube = filter:y exist"):                 # COLOR = SHAPE
        with pytest.raises(AssertionError):
            check_program(bad)


# ------------------------------------------------------------------------------ the file
def test_every_family_loads_with_its_baseline(families):
    assert default_families_path() == ROOT / "hypotheses" / "closure" / "families.toml"
    tests = [f for f in families.values() if f.role == "test"]
    train = [f for f in families.values() if f.role == "train"]
    assert tuple(f.name for f in tests) == TESTS
    assert len(train) == 7
    for f in tests:
        assert f.answer_kind == KINDS[f.name]
        base = families[f.baseline]
        assert base.role == "train" and base.baseline_of == f.name and base.answer_kind == f.answer_kind
        assert f.has_attribute and not base.has_attribute, f.name          # matching vs spatial only
        assert isinstance(f, Family) and f.source.startswith("Figure 8")
        assert base.source.startswith("Figure 9")


def test_every_family_renders_questions_with_every_slot_filled(families):
    rng = np.random.default_rng(5)
    for f in families.values():
        for _ in range(20):
            filling = sample_filling(f, rng=rng)
            text = render_question(f, filling)
            assert "<" not in text and "[" not in text and "  " not in text, text
            assert text.endswith("?")


def test_closure_constraints_blank_the_matched_and_queried_slots(families):
    rng = np.random.default_rng(1)
    for f in families.values():
        for _ in range(50):
            filling = sample_filling(f, rng=rng, max_filters=4)
            slots = dict(filling.slots)
            if f.has_attribute and f.has_query:
                assert filling.attribute != filling.query
            if f.has_query:
                assert filling.query in f.query_attributes
            for g in f.attribute_blank_groups:
                letter = {"size": "Z", "color": "C", "material": "M", "shape": "S"}[filling.attribute]
                assert slots[f"<{letter}{'' if g == 1 else g}>"] is None
            for g in f.query_blank_groups:
                letter = {"size": "Z", "color": "C", "material": "M", "shape": "S"}[filling.query]
                assert slots[f"<{letter}{'' if g == 1 else g}>"] is None


# --------------------------------------------------------------------------- instantiation
def test_instantiation_is_deterministic_per_seed(families):
    for f in families.values():
        a = instantiate(f, rng=7, n=15)
        assert a == instantiate(f, rng=np.random.default_rng(7), n=15)
        assert a != instantiate(f, rng=8, n=15)
        assert len(a) == len(set(a))
    one = family_concepts(families, 10, seed=3)
    assert one == family_concepts(families, 10, seed=3)
    assert one == {n: [i.program for i in v] for n, v in family_instances(families, 10, seed=3).items()}
    assert one != family_concepts(families, 10, seed=4)
    # a family's concepts do not depend on which others are drawn with it
    alone = family_concepts([families["or_mat"]], 10, seed=3)
    assert alone == {"or_mat": one["or_mat"]}
    assert family_concepts(["or_mat"], 10, seed=3) == alone


def test_every_program_is_well_formed_and_closed(concepts):
    assert set(concepts) == set(load_families())
    for name, programs in concepts.items():
        assert programs, name
        for p in programs:
            for part in p.split(" where "):  # the program, then each domain constraint
                check_program(part)


def test_each_question_becomes_one_concept_per_answer(families):
    rng = np.random.default_rng(2)
    for f in families.values():
        for _ in range(10):
            filling = sample_filling(f, rng=rng)
            instances = fill_instances(f, filling)
            progs = [i.program for i in instances]
            assert progs == fill_programs(f, filling)
            assert {i.question for i in instances} == {render_question(f, filling)}
            if f.answer_kind == "query":
                values = CLEVR_VALUES[filling.query]
                assert [i.answer for i in instances] == list(values)
                for i in instances:
                    program, *constraints = i.program.split(" where ")
                    assert program.endswith(f" {filling.query}? {i.answer} =")
                    # and_mat_spa and its baseline: OUT_NEQ (the two intersected sets differ) is
                    # the question's domain, beside the program, not a conjunct of it
                    assert len(constraints) == 1 and constraints[0].endswith(" or exists:y")
            elif f.answer_kind == "count":
                assert [i.answer for i in instances] == list(COUNT_ANSWERS)
                assert [p.split()[-3:] for p in progs] == [["count", str(k), "="] for k in COUNT_ANSWERS]
            else:
                assert [i.answer for i in instances] == ["yes"]
            if f.answer_kind == "exist":
                assert progs[0].split()[-2:] == ["filter:y", "exist"]
            if f.answer_kind == "yes_no_same":  # "yes" is the same <Q>; OUT_NEQ (two objects) is the domain
                program, constraint = progs[0].split(" where ")
                assert program.split()[-3:] == ["unique", f"{filling.query}?", "="]
                assert constraint.split()[-4:] == ["shape?", "=", "not", "or"] and "same_shape" in constraint


def test_relations_and_matching_follow_the_filling(families):
    f = families["and_mat_spa"]
    filling = sample_filling(f, rng=11)
    tokens = fill_programs(f, filling)[0].split()
    assert f"same_{filling.attribute}" in tokens
    assert dict(filling.relations)["<R2>"] in tokens
    assert not any("<" in t or "@" in t for t in tokens)


def test_bound_variables_are_named_by_nesting_depth(families):
    f = families["embed_spa_mat"]                                  # three nested referents
    default = instantiate(f, rng=0, n=8)
    for p in default:
        binders = [t for t in p.split() if ":" in t]
        assert binders == ["filter:x", "filter:z", "filter:y"], p  # innermost first in postfix
    rename = {"x": "w", "filter:x": "filter:w"}
    grammar_names = instantiate(f, rng=0, n=8, variables=("y", "z", "w"))
    assert grammar_names == [" ".join(rename.get(t, t) for t in p.split()) for p in default]
    with pytest.raises(ClosureFamilyError, match="nests 3 binders"):
        instantiate(f, rng=0, n=1, variables=("y", "z"))
    with pytest.raises(ClosureFamilyError, match="variables must be"):
        instantiate(f, rng=0, n=1, variables=("y", "y", "z"))


def test_max_filters_bounds_the_filters_of_each_referring_expression(families):
    for f in families.values():
        # filter chains, the copies in the OUT_NEQ constraints included (each referent twice)
        chains = sum("@" in t for t in f.program.split()) + sum(
            2 * sum("@" in t for t in _postfix(side)) for _, *sides in f.constraints for side in sides)
        for k in (1, 2, 3, 4):
            for p in instantiate(f, rng=0, n=10, max_filters=k):
                n_filters = sum(t in ("color?", "shape?", "material?", "size?") for t in p.split())
                # property tokens outside filter chains: <Q>? of the program, `shape?` twice in
                # an OUT_NEQ constraint between two referents
                n_filters -= f.program.split().count("<Q>?") + sum(
                    2 for _, a, _ in f.constraints if a[0] == "unique")
                assert n_filters <= k * chains


def test_programs_fit_the_parser_s_length_limit(families):
    from bayes_concepts.lot.program import MAX_PROGRAM_TOKENS
    for f in families.values():
        assert max(len(part.split()) for p in instantiate(f, rng=0, n=30, max_filters=4)
                   for part in p.split(" where ")) <= MAX_PROGRAM_TOKENS


@pytest.mark.skipif(not CLEVR_PCFG.is_file(),
                    reason="hypotheses/clevr.pcfg (the relational grammar of notes/relational_spec.md) "
                           "is not in the tree yet; only the spec's stack check ran")
def test_programs_parse_in_the_relational_grammar(concepts):
    from bayes_concepts.lot.grammar import load_grammar
    from bayes_concepts.lot.program import Program
    grammar = load_grammar(CLEVR_PCFG)
    for programs in concepts.values():
        for p in programs:
            Program.parse(p, grammar)


# -------------------------------------------------------------------------------- reported
def test_reported_numbers_cover_every_model_and_family():
    rep = load_reported()
    assert rep.models == MODELS
    for table in (rep.zero_shot, rep.baseline):
        assert set(table) == set(MODELS)
        for model in MODELS:
            assert set(table[model]) == set(TESTS)
            assert all(0 <= a.mean <= 100 for a in table[model].values())
    assert set(rep.zero_shot_mac_original) == set(TESTS)
    assert set(rep.clevr_val) >= set(MODELS)
    assert all("Table" in s for s in rep.sources.values())
    # spot checks against the paper's Tables 1, 3 and 5
    assert rep.zero_shot["MAC"]["compare_mat"] == (65.3, 8.6)
    assert rep.baseline["NS-VQA"]["and_mat_spa"] == (100.0, None)
    assert rep.clevr_val["FiLM"] == (97.0, 0.56)
    assert rep.drop("MAC", "compare_mat") == pytest.approx(99.2 - 65.3)
    with pytest.raises(ClosureFamilyError, match="no reported"):
        rep.drop("MAC", "nonexistent")


def test_the_149_reported_numbers_are_all_there_and_unchanged():
    rep = load_reported()
    tables = (rep.zero_shot, rep.baseline, rep.few_shot)
    n = sum(len(per) for table in tables for per in table.values()) + len(rep.clevr_val) + len(rep.zero_shot_mac_original)
    assert n == 149
    assert rep.zero_shot["GT-Vector-NMN"]["and_mat_spa"] == (86.3, 2.5)
    assert rep.baseline["FiLM"]["or_mat_spa"] == (75.0, 2.1)
    assert rep.few_shot["NS-VQA (weak)"]["and_mat_spa"] == (51.2, 5.8)
    assert rep.zero_shot_mac_original["or_mat"] == (57.8, 7.7)
    assert rep.clevr_val["GT-Tensor-NMN-FiLM"] == (94.8, 1.7)


def test_chance_levels_by_answer_kind(families):
    assert {f: answer_chance(families[f]) for f in ("embed_spa_mat", "compare_mat", "or_mat")} == \
        {"embed_spa_mat": 50.0, "compare_mat": 50.0, "or_mat": pytest.approx(100 / 3)}
    # and_mat_spa: <A> uniform over the 4 attributes, <Q> uniform over the other 3, so each
    # attribute is queried a quarter of the time: (1/8 + 1/3 + 1/2 + 1/2) / 4
    assert answer_chance(families["and_mat_spa"]) == pytest.approx(100 * (1 / 8 + 1 / 3 + 1 / 2 + 1 / 2) / 4)
    assert answer_chance("and_mat_spa") == answer_chance(families["and_mat_spa"])
    rep = load_reported()
    assert rep.chance == {f: answer_chance(families[f]) for f in TESTS}
    assert rep.answer_kinds == KINDS


def test_drops_absolute_and_against_chance():
    rows = family_drops()
    assert len(rows) == 49 and all(isinstance(r, FamilyDrop) for r in rows)
    assert [r.family for r in rows[::7]] == list(TESTS) and [r.model for r in rows[:7]] == list(MODELS)
    rep = load_reported()
    for r in rows:
        assert r.drop == rep.drop(r.model, r.family)
        assert r.baseline == rep.baseline[r.model][r.family].mean and r.zero_shot == rep.zero_shot[r.model][r.family].mean
        assert r.normalised_drop == pytest.approx((r.baseline - r.zero_shot) / (r.baseline - r.chance), abs=1e-6)
        assert r.answer_kind == KINDS[r.family]
    by = {(r.family, r.model): r for r in rows}
    assert by["embed_spa_mat", "GT-Vector-NMN"].normalised_drop == 0
    # FiLM on or_mat: 91 -> 34.4, chance 33.3: down to (about) chance
    assert by["or_mat", "FiLM"].normalised_drop == pytest.approx(56.6 / (91 - 100 / 3), abs=1e-6)
    assert by["or_mat", "FiLM"].normalised_drop > 0.98
    assert rep.normalised_drop("MAC", "compare_mat") == pytest.approx(33.9 / 49.2, abs=1e-6)


# ------------------------------------------------------------------------------- bad input
GOOD = """
[[family]]
name = "t"
role = "test"
baseline = "b"
question = "Is there a <Z> <C> <M> <S> that is the same <A> as the <Z2> <C2> <M2> <S2>?"
answer_kind = "exist"
program = "S <Z><C><M><S>@z z S <Z2><C2><M2><S2>@y filter:y unique same_<A> and exists:z"
attribute_blank_groups = [1, 2]

[[family]]
name = "b"
role = "train"
baseline_of = "t"
question = "Is there a <Z> <C> <M> <S> [that is] <R> the <Z2> <C2> <M2> <S2>?"
answer_kind = "exist"
program = "S <Z><C><M><S>@z z S <Z2><C2><M2><S2>@y filter:y unique <R> and exists:z"
"""


def test_a_user_file_loads_and_instantiates(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(GOOD)
    fams = load_families(path)
    assert list(fams) == ["t", "b"]
    for p in family_concepts(fams, 20, 0)["t"]:
        check_program(p)


@pytest.mark.parametrize("old,new,message", [
    ('role = "train"', 'role = "dev"', "family #2 ('b'): role must be one of train, test"),
    ('answer_kind = "exist"\nprogram = "S <Z><C><M><S>@z z S <Z2><C2><M2><S2>@y filter:y unique <R>',
     'answer_kind = "count"\nprogram = "S <Z><C><M><S>@z z S <Z2><C2><M2><S2>@y filter:y unique <R>',
     "family #2 ('b'): answer_kind 'count' needs an <ANS>"),
    ("same_<A> and exists:z", "same_<A> and and exists:z", "family #1 ('t'): program is not one postfix"),
    ("same_<A> and exists:z", "same_<A> nand exists:z", "family #1 ('t'): program has unknown token(s) 'nand'"),
    ('baseline = "b"', 'baseline = "zz"', "family 't': baseline 'zz' is not a role = \"train\" family"),
    ('baseline_of = "t"', 'baseline_of = "t2"', "family 't': baseline 'b' does not name it back"),
    ("attribute_blank_groups = [1, 2]", "attribute_blank_groups = [1, 5]",
     "family #1 ('t'): attribute_blank_groups names slot group(s) [5]"),
    ("attribute_blank_groups = [1, 2]", "colour = 1", "family #1 ('t'): unknown key(s) colour"),
    ("as the <Z2> <C2> <M2> <S2>?", "as the <Z2> <C2> <S2>?", "family #1 ('t'): question slot group 2 has only"),
    ('name = "t"', 'name = "b"', "family #2 ('b'): name 'b' is already used"),
    ('role = "test"', 'role = "test"\nrole = "train"', "invalid TOML"),
])
def test_bad_files_raise_one_line_errors_naming_file_and_entry(tmp_path, old, new, message):
    path = tmp_path / "bad.toml"
    assert old in GOOD
    path.write_text(GOOD.replace(old, new, 1))
    with pytest.raises(ClosureFamilyError) as info:
        load_families(path)
    text = str(info.value)
    assert "\n" not in text and text.startswith(str(path)) and message in text, text
    assert isinstance(info.value, BayesConceptsError)


def test_missing_file_and_bad_arguments(tmp_path, families):
    with pytest.raises(ClosureFamilyError, match="cannot read"):
        load_families(tmp_path / "none.toml")
    f = families["or_mat"]
    for kwargs, match in ((dict(rng=0, n=-1), "n must be"), (dict(rng=0, n=3, max_filters=0), "max_filters"),
                          (dict(rng="seed", n=3), "rng must be"), (dict(rng=0, n=3, values={"colour": ["red"]}),
                                                                    "unknown key 'colour'")):
        with pytest.raises(ClosureFamilyError, match=match):
            instantiate(f, **kwargs)
    with pytest.raises(ClosureFamilyError, match="unknown CLOSURE family"):
        instantiate("or_matt", rng=0, n=1)
    # a smaller vocabulary is honoured
    progs = instantiate(f, {"color": ["red"], "shape": ["cube"]}, rng=0, n=10)
    assert not any(c in p.split() for p in progs for c in CLEVR_VALUES["color"] if c != "red")


def _table_rows(text):
    return [line.strip("|").split("|") for line in text.splitlines() if line.startswith("| ")]


def test_the_readme_s_drop_tables_and_examples_match_the_data():
    readme = (ROOT / "hypotheses" / "closure" / "README.md").read_text()
    rep = load_reported()
    absolute, against = readme.split("### Drops against chance")
    drops = {r[0].strip(): [float(c) for c in r[1:]] for r in _table_rows(absolute.split("## Reported accuracies")[1])
             if r[0].strip() in MODELS}
    assert set(drops) == set(MODELS)
    for model, values in drops.items():
        assert values == [round(rep.drop(model, f), 1) for f in TESTS], model
    rows = _table_rows(against.split("## Fidelity notes")[0])
    normalised = {r[0].strip(): [float(c) for c in r[1:]] for r in rows if r[0].strip() in MODELS}
    assert set(normalised) == set(MODELS)
    for model, values in normalised.items():
        assert values == [round(rep.normalised_drop(model, f), 2) for f in TESTS], model
    chance = next(r for r in rows if r[0].strip() == "chance (%)")
    assert [float(c) for c in chance[1:]] == [round(rep.chance[f], 1) for f in TESTS]
    kinds = next(r for r in rows if r[0].strip() == "answer kind")
    assert [c.strip() for c in kinds[1:]] == [KINDS[f] for f in TESTS]
    table = readme.split("## The families")[1].split("## ")[0]
    examples = [r[-1].strip().strip("`") for r in _table_rows(table) if r[0].strip().strip("`") in load_families()]
    examples = [e for e in examples if e]
    assert len(examples) == 13
    for p in examples:
        for part in p.split(" where "):  # the program, then each domain constraint
            check_program(part)
