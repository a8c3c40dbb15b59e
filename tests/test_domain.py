"""The grammar file is the domain.

Grammars other than CURI's -- one that renames a colour, one with a new attribute -- go
through the whole pipeline (space, executor, splits, comp gap, command line, figures);
a grammar file declares the object-count limits and the rejection rules that apply.
Spaces here are tiny (20,000 program samples, 5,000 scenes)."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from matplotlib.colors import to_hex

from bayes_concepts import plots
from bayes_concepts.cli import main
from bayes_concepts.engine import evaluate, evaluate_programs, signature_bits
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.episodes import sample_episodes
from bayes_concepts.errors import GrammarError, SceneError
from bayes_concepts.gap import compute_gap
from bayes_concepts.lot import (CURI_RULES, REJECTION_RULES, Grammar, Program, curi_grammar, is_rejected,
                                rejection_reason, rejection_rules, sample_programs)
from bayes_concepts.lot.grammar import default_grammar_path, default_schema
from bayes_concepts.scenes import CURI_SCHEMA, Attribute, SceneBank, SceneSchema, sample_scenes, validate_scene
from bayes_concepts.scenes.io import load_clevr_scenes, read_scenes_jsonl, write_scenes_jsonl
from bayes_concepts.splits import make_split

BUILD = dict(samples=20_000, scenes=5_000, seed=0)
CURI_TEXT = default_grammar_path().read_text(encoding="utf-8")
TEXTURES = ("smooth", "striped", "dotted")


def _sub(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def texture_grammar_text() -> str:
    """CURI's grammar plus a property ``texture?`` over a new attribute (3 values) with
    productions mirroring the colour ones, and scenes of 1..6 objects (3..6 sampled)."""
    t = CURI_TEXT
    t = _sub(t, "value LOC <      1 2 3 4 5 6 7 8\n",
             "value LOC <      1 2 3 4 5 6 7 8\nvalue TEXTURE    " + " ".join(TEXTURES) + "\n")
    t = _sub(t, "property locationY?  y         LOC\n",
             "property locationY?  y         LOC\nproperty texture?    texture   TEXTURE\n")
    t = _sub(t, "objects 1 2 5\n", "objects 1 3 6\n")
    t = _sub(t, "BOOL -> M M =                  @ 3      # +\n",
             "BOOL -> M M =                  @ 3      # +\nBOOL -> T T = @ 3\n"
             "BOOL -> SETFT T for-all= @ 1\nBOOL -> SETFT T exists= @ 1\n")
    t = _sub(t, "SETFL L count=\n", "SETFL L count= | SETFT T count=\n")
    t = _sub(t, "SETFL -> SET FL\n", "SETFL -> SET FL\nSETFT -> SET FT\n")
    t = _sub(t, "L -> OBJECT FL\n", "L -> OBJECT FL\nT -> " + " | ".join(TEXTURES) + "\nT -> OBJECT FT\n")
    t = _sub(t, "FL -> locationX? | locationY?\n", "FL -> locationX? | locationY?\nFT -> texture?\n")
    return t


@pytest.fixture(scope="module")
def grammar_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("grammars")
    (d / "olive.pcfg").write_text(CURI_TEXT.replace("green", "olive"), encoding="utf-8")
    (d / "texture.pcfg").write_text(texture_grammar_text(), encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def olive_space(grammar_dir):
    return HypothesisSpace.build(grammar=grammar_dir / "olive.pcfg", **BUILD)


@pytest.fixture(scope="module")
def texture_space(grammar_dir):
    return HypothesisSpace.build(grammar=grammar_dir / "texture.pcfg", **BUILD)


def _line_of(text: str, start: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(start))


# ------------------------------------------------------------------ declarations
def test_curi_grammar_declares_its_object_limits_and_three_rules():
    g = curi_grammar()
    assert g.rejection_rules == CURI_RULES == ("top_forall_non_x", "x_compared_with_itself",
                                               "set_quantifier_over_own_property")
    assert (g.min_objects, g.sample_min_objects, g.max_objects) == (1, 2, 5)
    assert g.schema == CURI_SCHEMA == default_schema()  # the schema scene functions default to
    assert REJECTION_RULES is rejection_rules and list(rejection_rules)[:3] == list(CURI_RULES)


def test_without_objects_and_reject_lines_the_defaults_apply():
    text = re.sub(r"(?m)^(objects|reject) .*$", "", CURI_TEXT)
    g = Grammar.from_text(text, source="bare.pcfg")
    assert (g.schema.min_objects, g.schema.sample_min_objects, g.schema.max_objects) == (1, 2, 5)
    assert g.rejection_rules == ()
    twice = "x color? x color? = exists="
    assert rejection_reason(Program.parse(twice, g)) is None          # no rule applies
    assert rejection_reason(Program.parse(twice)) == "x_compared_with_itself"
    assert rejection_reason(Program.parse(twice, g), rules=CURI_RULES) == "x_compared_with_itself"
    assert not is_rejected(Program.parse("x color? x color? = not exists=", g))


def test_objects_line_sets_the_schema_the_samplers_and_the_validation_use(tmp_path):
    path = tmp_path / "big.pcfg"
    path.write_text(_sub(CURI_TEXT, "objects 1 2 5\n", "objects 2 4 7\n"), encoding="utf-8")
    schema = Grammar.from_file(path).schema
    assert (schema.min_objects, schema.sample_min_objects, schema.max_objects) == (2, 4, 7)
    for sampler in ("uniform", "clevr"):
        codes = sample_scenes(400, sampler, schema, seed=1)
        n_objects = (codes[:, :, 0] >= 0).sum(1)
        assert codes.shape[1] == 7 and n_objects.min() == 4 and n_objects.max() == 7
    one = {"objects": [{"color": "red", "shape": "cube", "material": "metal", "size": "large", "x": 1, "y": 2}]}
    validate_scene(one, CURI_SCHEMA)
    with pytest.raises(SceneError, match="has 1 objects .expected 2 to 7"):
        validate_scene(one, schema)
    f = tmp_path / "one.jsonl"
    write_scenes_jsonl(f, [one])
    with pytest.raises(SceneError, match=r"one.jsonl line 1"):
        read_scenes_jsonl(f, schema)


@pytest.mark.parametrize("line, message", [
    ("objects 3 2 5", r"objects 3 2 5: need 1 <= MIN <= SAMPLE_MIN <= MAX"),
    ("objects 0 2 5", r"objects 0 2 5: need 1 <= MIN"),
    ("objects 1 5", r"expected 'objects MIN SAMPLE_MIN MAX'"),
    ("objects 1 two 5", r"expected 'objects MIN SAMPLE_MIN MAX'"),
])
def test_a_bad_objects_line_is_a_one_line_error_naming_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.pcfg"
    text = _sub(CURI_TEXT, "objects 1 2 5\n", line + "\n")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(GrammarError, match=rf"bad.pcfg line {_line_of(text, line)}: {message}") as e:
        Grammar.from_file(path)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("rules, message", [
    ("top_forall_non_x no_such_rule", r"unknown rejection rule 'no_such_rule' \(known: top_forall_non_x, "),
    ("top_forall_non_x top_forall_non_x", r"rejection rule 'top_forall_non_x' is named twice"),
    ("", r"expected 'reject RULE \[RULE ...\]'"),
])
def test_a_bad_reject_line_is_a_one_line_error_naming_file_and_line(tmp_path, rules, message):
    path = tmp_path / "bad.pcfg"
    text = re.sub(r"(?m)^reject .*$", f"reject {rules}".strip(), CURI_TEXT)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(GrammarError, match=rf"bad.pcfg line {_line_of(text, 'reject')}: {message}") as e:
        Grammar.from_file(path)
    assert "\n" not in str(e.value)


def test_a_registered_rule_applies_where_a_grammar_names_it_in_the_grammars_order(tmp_path):
    both = "x color? x color? = S color? x color? exists= and exists="   # breaks rules 2 and 3

    @rejection_rules.register("no_not")
    def no_not(program) -> bool:
        """programs with a negation"""
        return "not" in program.tokens

    try:
        text = re.sub(r"(?m)^reject .*$", "reject no_not\nreject set_quantifier_over_own_property "
                      "x_compared_with_itself", CURI_TEXT)
        g = Grammar.from_text(text, source="mine.pcfg")
        assert g.rejection_rules == ("no_not", "set_quantifier_over_own_property", "x_compared_with_itself")
        assert rejection_reason(Program.parse("x color? red = not exists=", g)) == "no_not"
        assert rejection_reason(Program.parse("x color? red = not exists=")) is None    # CURI's grammar
        assert rejection_reason(Program.parse(both, g)) == "set_quantifier_over_own_property"
        assert rejection_reason(Program.parse(both)) == "x_compared_with_itself"
        # the space build drops what the grammar's rules reject
        path = tmp_path / "mine.pcfg"
        path.write_text(text, encoding="utf-8")
        space = HypothesisSpace.build(grammar=path, samples=5_000, scenes=2_000, seed=0)
        assert space.n_concepts > 0 and not any("not" in p.split() for p in space.programs)
    finally:
        rejection_rules.unregister("no_not")
    with pytest.raises(GrammarError, match="unknown rejection rule 'no_not'"):
        Grammar.from_text(text, source="mine.pcfg")


# ------------------------------------------------------------------ olive for green
def test_renaming_a_value_renames_the_space_and_nothing_else(olive_space, small_space):
    assert not any("green" in p.split() for p in olive_space.programs)
    assert any("olive" in p.split() for p in olive_space.programs)
    assert olive_space.schema.attribute("color").values[3] == "olive"
    assert np.array_equal(olive_space.scene_codes, small_space.scene_codes)
    curi_of = {p.replace("olive", "green"): i for i, p in enumerate(olive_space.programs)}
    assert set(curi_of) == set(small_space.programs)
    for i, p in enumerate(small_space.programs):
        assert np.array_equal(olive_space.signatures[curi_of[p]], small_space.signatures[i]), p


def test_olive_space_random_split_and_comp_gap(olive_space):
    split = make_split(olive_space, {"name": "r", "kind": "random",
                                     "fractions": {"train": 0.8, "val": 0.05, "test": 0.15}})
    assert len(split.test) > 0 and not set(split.train) & set(split.test)
    ds = compute_gap(olive_space, {"r": split}, negatives=("hard",), n_episodes=50, seed=0)
    ap = ds["ap"].sel(split="r", negatives="hard")
    assert ap.shape == (2, 50) and np.isfinite(ap.values).all()
    assert ((0 <= ap.values) & (ap.values <= 1)).all()
    # the strong oracle knows every concept: its AP is never below the weak oracle's mean by chance alone
    assert float(ap.sel(learner="strong").mean()) >= float(ap.sel(learner="weak").mean())


def test_olive_grammar_through_the_command_line(grammar_dir, tmp_path, capsys):
    out = tmp_path / "X"
    assert main(["--grammar", str(grammar_dir / "olive.pcfg"), "space", "build", str(out),
                 "--samples", "20000", "--scenes", "5000", "--quiet"]) == 0
    spec = tmp_path / "r.toml"
    spec.write_text('name = "r"\nkind = "random"\n[fractions]\ntrain = 0.8\nval = 0.05\ntest = 0.15\n',
                    encoding="utf-8")
    capsys.readouterr()
    code = main(["gap", str(out), "--spec", str(spec), "--split", "r", "--episodes", "50"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert re.search(r"(?m)^\s*r\b", captured.out), captured.out


# ------------------------------------------------------------------ a new attribute
def test_texture_grammar_builds_a_space_with_the_new_attribute(texture_space):
    schema = texture_space.schema
    assert schema.attribute("texture").values == TEXTURES
    assert (schema.min_objects, schema.sample_min_objects, schema.max_objects) == (1, 3, 6)
    n_objects = (np.asarray(texture_space.scene_codes)[:, :, 0] >= 0).sum(1)
    assert n_objects.min() == 3 and n_objects.max() == 6
    uses = [p for p in texture_space.programs if "texture?" in p.split()]
    assert uses and any(v in p.split() for p in uses for v in TEXTURES)
    scene = texture_space.scene(0)
    assert all(o["texture"] in TEXTURES for o in scene["objects"])


@st.composite
def texture_scenes(draw, schema):
    obj = st.fixed_dictionaries({a.name: st.sampled_from(a.values) for a in schema.attributes})
    return {"objects": draw(st.lists(obj, min_size=schema.min_objects, max_size=schema.max_objects))}


TEXTURE_GRAMMAR = Grammar.from_text(texture_grammar_text(), source="texture.pcfg")
TEXTURE_PROGRAMS = list(dict.fromkeys(sample_programs(1_500, TEXTURE_GRAMMAR, seed=5).strings()))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(texture_scenes(TEXTURE_GRAMMAR.schema), min_size=1, max_size=40))
def test_texture_programs_executor_equals_interpreter(scenes):
    g = TEXTURE_GRAMMAR
    assert sum("texture?" in p.split() for p in TEXTURE_PROGRAMS) > 50
    bank = SceneBank.from_scenes(scenes, g.schema)
    bits = signature_bits(evaluate_programs(TEXTURE_PROGRAMS, bank, g), bank.n_scenes)
    for i, text in enumerate(TEXTURE_PROGRAMS):
        p = Program.parse(text, g)
        for j, scene in enumerate(scenes):
            assert bits[i, j] == evaluate(p, scene, g), (text, scene)


def test_texture_held_out_split_and_comp_gap(texture_space):
    split = make_split(texture_space, {"name": "no_striped", "kind": "held_out", "synonym_aware": False,
                                       "val_fraction": 0.0, "held_out": {"tokens": ["striped"]}})
    programs = texture_space.programs
    assert len(split.test) and all("striped" in programs[i].split() for i in split.test)
    assert not any("striped" in programs[i].split() for i in split.train)
    ds = compute_gap(texture_space, {"no_striped": split}, negatives=("hard",), n_episodes=50, seed=0)
    ap = ds["ap"].sel(split="no_striped", negatives="hard")
    assert np.isfinite(ap.values).all()
    # the weak oracle never saw a striped concept: the strong one does better on them
    assert float(ap.sel(learner="strong").mean()) > float(ap.sel(learner="weak").mean())


def test_uniform_sampler_samples_any_schema_and_clevr_names_what_it_lacks():
    schema = SceneSchema((Attribute("color", ("red", "blue")), Attribute("texture", TEXTURES)),
                         max_objects=4, sample_min_objects=1)
    codes = sample_scenes(500, "uniform", schema, seed=0)
    assert codes.shape == (500, 4, 2)
    present = codes[:, :, 0] >= 0
    assert set(np.unique(codes[:, :, 1][present])) == {0, 1, 2}
    with pytest.raises(SceneError, match=r"clevr sampler .*no attribute 'size' or 'x' or 'y' "
                                         r"\(its attributes: color, texture\).*uniform") as e:
        sample_scenes(10, "clevr", schema, seed=0)
    assert "\n" not in str(e.value)
    tiny = SceneSchema(tuple(Attribute("size", ("tiny", "large")) if a.name == "size" else a
                             for a in CURI_SCHEMA.attributes))
    with pytest.raises(SceneError, match=r"size 'tiny' has no CLEVR radius"):
        sample_scenes(10, "clevr", tiny, seed=0)


def test_clevr_scene_json_carries_every_schema_attribute(tmp_path):
    schema = TEXTURE_GRAMMAR.schema.with_max_objects(10)
    obj = {"color": "red", "shape": "cube", "material": "metal", "size": "large", "texture": "dotted",
           "pixel_coords": [100.0, 200.0, 9.0], "rotation": 3.0}
    f = tmp_path / "scenes.json"
    f.write_text(json.dumps({"scenes": [{"objects": [obj], "image_index": 0}]}), encoding="utf-8")
    [scene] = load_clevr_scenes(f, schema)
    assert scene["objects"] == [{"color": "red", "shape": "cube", "material": "metal", "size": "large",
                                 "texture": "dotted", "x": 2, "y": 6}]
    del obj["texture"]
    f.write_text(json.dumps({"scenes": [{"objects": [obj]}]}), encoding="utf-8")
    with pytest.raises(SceneError, match=r"scenes\[0\].*objects\[0\].*missing key 'texture'"):
        load_clevr_scenes(f, schema)
    flat = SceneSchema((Attribute("color", ("red",)),))
    with pytest.raises(SceneError, match="no attribute 'x' or 'y'"):
        load_clevr_scenes(f, flat)


# ------------------------------------------------------------------ figures
FLAT_GRAMMAR = """\
value COLOR    red blue green
value TEXTURE  smooth striped dotted
property color?    color    COLOR
property texture?  texture  TEXTURE
start START
objects 1 2 4
START -> BOOL exists= | BOOL for-all=
BOOL -> BOOL BOOL and | BOOL not
BOOL -> C C = | T T = | SETFC C exists= | SETFT T exists=
SETFC -> SET FC
SETFT -> SET FT
C -> red | blue | green
C -> OBJECT FC
T -> smooth | striped | dotted
T -> OBJECT FT
FC -> color?
FT -> texture?
OBJECT -> x
SET -> S | non-x-S
"""


def test_drawing_channels_and_value_styles_derive_from_the_schema():
    enc = plots.object_encoding(TEXTURE_GRAMMAR.schema)
    assert enc == {"position": ("x", "y"), "color": "color", "marker": "shape", "ring": "material",
                   "size": "size", "hatch": "texture", "undrawn": ()}
    flat = Grammar.from_text(FLAT_GRAMMAR, source="flat.pcfg").schema
    assert plots.object_encoding(flat) == {"position": None, "color": "color", "marker": "texture", "ring": None,
                                           "size": None, "hatch": None, "undrawn": ()}
    olive = Grammar.from_text(CURI_TEXT.replace("green", "olive"), source="olive.pcfg").schema
    colours = plots.value_styles(olive.attribute("color"), "color")
    assert colours["olive"] == to_hex("olive") and colours["red"] == plots.OBJECT_COLORS["red"]
    odd = Attribute("color", ("red", "zorp", "blip", "quux"))
    styles = plots.value_styles(odd, "color")
    assert styles == plots.value_styles(odd, "color")                       # deterministic
    assert styles["red"] == plots.OBJECT_COLORS["red"] and len(set(styles.values())) == 4
    markers = plots.value_styles(Attribute("shape", ("cube", "cone", "torus", "cylinder")), "marker")
    assert markers["cube"] == "s" and markers["cylinder"] == "^" and len(set(markers.values())) == 4
    rings = plots.value_styles(Attribute("material", ("rubber", "metal", "glass")), "ring")
    assert rings["metal"] == plots.RING_STYLES["metal"] and len(set(rings.values())) == 3
    sizes = plots.value_styles(Attribute("size", ("tiny", "small", "huge"), ordered=True), "size")
    assert sizes["tiny"] < sizes["small"] < sizes["huge"]


def test_plot_scene_properties_of_a_new_attribute(texture_space, olive_space):
    axes, data = plots.plot_scene_properties(texture_space)
    visible = [ax for ax in axes.ravel() if ax.get_visible()]
    assert [ax.get_title() for ax in visible][-1] == "texture" and len(visible) == 7
    d = data[data.attribute == "texture"]
    assert d["value"].tolist() == list(TEXTURES) and d["share"].sum() == pytest.approx(100)
    axes, data = plots.plot_scene_properties(olive_space)
    bars = [p for ax in axes.ravel() for p in ax.patches if p.get_gid() == "prop:color"]
    colours = data[data.attribute == "color"]
    assert colours.set_index("value").loc["olive", "bar_color"] == "#808000"
    assert [to_hex(b.get_facecolor()) for b in bars] == colours["bar_color"].tolist()


def test_episode_view_draws_the_new_attribute_and_a_schema_without_locations(texture_space, tmp_path):
    split = make_split(texture_space, {"name": "r", "kind": "random", "fractions": {"train": 0.8, "test": 0.2}})
    eps = sample_episodes(texture_space, split, "test", "hard", n=2, seed=0)
    view, data = plots.plot_episode(texture_space, eps, 0)
    fig = view.figure
    hatches = plots.value_styles(texture_space.schema.attribute("texture"), "hatch")
    for k, sid in enumerate(eps.support_scenes[0]):
        ax = next(a for a in fig.axes if a.get_gid() == f"support:{k}")
        objects = texture_space.scene(int(sid))["objects"]
        drawn = sorted((c.get_hatch() or "") for c in ax.collections[:len(objects)])
        assert drawn == sorted(hatches[o["texture"]] for o in objects)
    assert "texture" in data.columns
    legend = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert "texture = striped" in legend and "metal (black ring)" in legend

    path = tmp_path / "flat.pcfg"
    path.write_text(FLAT_GRAMMAR, encoding="utf-8")
    space = HypothesisSpace.build(grammar=path, samples=5_000, scenes=2_000, seed=0, scene_sampler="uniform")
    split = make_split(space, {"name": "r", "kind": "random", "fractions": {"train": 0.8, "test": 0.2}})
    eps = sample_episodes(space, split, "test", "hard", n=2, seed=0)
    view, data = plots.plot_episode(space, eps, 0)
    fig = view.figure
    colours = plots.value_styles(space.schema.attribute("color"), "color")
    for k, sid in enumerate(eps.query_scenes[0]):
        ax = next(a for a in fig.axes if a.get_gid() == f"query:{k}")
        objects = space.scene(int(sid))["objects"]
        for slot, (o, c) in enumerate(zip(objects, ax.collections)):   # in a row, in slot order
            assert tuple(c.get_offsets()[0]) == (slot + 1, 1)
            assert to_hex(c.get_facecolor()[0]) == colours[o["color"]]
