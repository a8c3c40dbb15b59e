"""Every stage after the build on a relational (clevr) space: split specs, divergences, the
synonym analysis, the audit, the program commands and the schema learner's relation features.
Each stage either works on relational programs or refuses them with a one-line error.

The small clevr space the test session shares (``clevr_space``, conftest.py: 2,000 samples x
3,000 scenes, seed 0) is used; the assertions compare the stages' output with the space
itself (its programs, signatures and relations), so they hold for any such build.
"""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from bayes_concepts.divergence import VARIABLE_ATOM, program_atoms_and_compounds, split_divergence
from bayes_concepts.engine.interpreter import evaluate
from bayes_concepts.errors import BayesConceptsError
from bayes_concepts.learners import ProtoNetLearner
from bayes_concepts.learners.encoders import SchemaEncoder
from bayes_concepts.learners.features import SchemaLayout
from bayes_concepts.learners.protocol import LearnerError
from bayes_concepts.lot import Program, load_grammar
from bayes_concepts.resources import data_file
from bayes_concepts.splits import SplitSpecError, find_alpha_equivalent, make_split
from bayes_concepts.synonyms import (STATUS, UNPROVABLE, EquivalenceProver, NotProvable, classify_synonym_classes,
                                     find_counterexample, prove_equivalent, summarise_statuses, unprovable_operators)
from conftest import assert_one_line_error, run

CYLINDER_BLUE = "S y shape? cylinder = y S z color? blue = filter:z unique same_material and filter:y exist"
CYLINDER_BLUE_RENAMED = "S z shape? cylinder = z S w color? blue = filter:w unique same_material and filter:z exist"


@pytest.fixture(scope="module")
def space(clevr_space):
    return clevr_space


@pytest.fixture(scope="module")
def space_dir(clevr_space_dir):
    return clevr_space_dir


@pytest.fixture(scope="module")
def clevr():
    return load_grammar(data_file("clevr.pcfg"))


def held_out(name, **rules):
    return {"name": name, "kind": "held_out", "held_out": rules}


def uses(space, token) -> np.ndarray:
    return np.array([token in p.split() for p in space.programs])


# ------------------------------------------------------------------------------------ splits
@pytest.mark.parametrize("token", ["left", "same_material"])
def test_token_rules_hold_out_the_relational_tokens(space, token):
    split = make_split(space, held_out(f"no_{token}", tokens=[token]))
    want = np.flatnonzero(uses(space, token))
    assert 0 < len(want) < space.n_concepts
    np.testing.assert_array_equal(split.ids("held_out"), want)
    np.testing.assert_array_equal(split.train, np.flatnonzero(~uses(space, token)))


def test_pairs_and_min_length_on_relational_programs(space):
    split = make_split(space, held_out("pairs", pairs=[["left", "cylinder"], ["same_color", "count"]]))
    want = (uses(space, "left") & uses(space, "cylinder")) | (uses(space, "same_color") & uses(space, "count"))
    np.testing.assert_array_equal(split.ids("held_out"), np.flatnonzero(want))
    split = make_split(space, held_out("long", min_length=20))
    np.testing.assert_array_equal(split.ids("held_out"), np.flatnonzero(np.asarray(space.lengths) >= 20))


def test_a_binder_named_alone_matches_it_over_every_variable(space):
    named = make_split(space, held_out("filter_z", tokens=["filter:z"]))
    np.testing.assert_array_equal(named.ids("held_out"), np.flatnonzero(uses(space, "filter:z")))
    alone = make_split(space, held_out("filter_same_shape", pairs=[["filter", "same_shape"]]))
    any_filter = np.array([any(t.startswith("filter:") for t in p.split()) for p in space.programs])
    np.testing.assert_array_equal(alone.ids("held_out"), np.flatnonzero(any_filter & uses(space, "same_shape")))
    with pytest.raises(SplitSpecError, match="match every concept"):  # every clevr concept filters
        make_split(space, held_out("all_filters", tokens=["filter"]))


def test_split_spec_errors_on_a_relational_space(space):
    with pytest.raises(SplitSpecError, match=r"unknown token 'filtr'.*binder alone \(.*filter.*filter:y"):
        make_split(space, held_out("bad", tokens=["filtr"]))
    with pytest.raises(SplitSpecError, match="no count= operator; hold out its own counting"):
        make_split(space, held_out("counts", counts=[{"value": "green", "number": 2}]))


def test_programs_rule_and_space_show_match_up_to_variable_names(space, space_dir, capsys):
    # a concept binding z but not w: rename z to w
    i = next(j for j, p in enumerate(space.programs) if "filter:z" in p.split() and "w" not in p.split()
             and "filter:w" not in p.split())
    text = space.programs[i]
    renamed = " ".join({"z": "w", "filter:z": "filter:w"}.get(t, t) for t in text.split())
    assert renamed != text and space.find(renamed) is None
    assert find_alpha_equivalent(space, renamed) == i
    split = make_split(space, held_out("one", programs=[renamed]))
    np.testing.assert_array_equal(split.ids("held_out"), [i])
    status, out, _ = run(["space", "show", space_dir, renamed], capsys)
    assert status == 0 and f"id          {i}\n" in out and "other names of its bound variables" in out


def test_union_of_sets_with_differently_named_variables_is_alpha_equivalent(space, clevr):
    from bayes_concepts.splits import alpha_normal_tokens
    a = Program.parse("S y color? red = filter:y S y shape? cube = filter:y union count 1 =", clevr)
    b = Program.parse("S y color? red = filter:y S z shape? cube = filter:z union count 1 =", clevr)
    c = Program.parse("S y color? red = filter:y S z shape? cube = filter:z intersect count 1 =", clevr)
    assert alpha_normal_tokens(a) == alpha_normal_tokens(b) != alpha_normal_tokens(c)


def test_splits_and_gap_cli_with_a_relational_spec(space_dir, tmp_path, capsys):
    spec = tmp_path / "no_left.toml"
    spec.write_text('name = "no_left"\nkind = "held_out"\n[held_out]\ntokens = ["left"]\n')
    status, out, err = run(["splits", space_dir, "--spec", spec], capsys)
    assert status == 0 and out.startswith("split") and "no_left" in out, err
    status, out, err = run(["gap", space_dir, "--spec", spec, "--episodes", 20, "--negatives", "hard", "--json"],
                           capsys)
    assert status == 0, err
    (row,) = json.loads(out)["results"]
    assert row["split"] == "no_left" and row["strong"]["map"] >= row["weak"]["map"]
    status, _, err = run(["splits", space_dir], capsys)
    assert_one_line_error(status, err, "no splits to list", "--protocol closure")


# -------------------------------------------------------------------------------- divergence
def test_divergence_renames_variables_away(space, clevr):
    a = program_atoms_and_compounds(Program.parse(CYLINDER_BLUE, clevr))
    b = program_atoms_and_compounds(Program.parse(CYLINDER_BLUE_RENAMED, clevr))
    assert a == b
    atoms, compounds = a
    assert "filter" in atoms and not any(":" in t or t in ("y", "z", "w") for t in atoms)
    assert atoms.count(VARIABLE_ATOM) == 3
    assert "same_material(0:VAR)" in compounds and "filter(1:and)" in compounds
    assert len(atoms) == len(Program.parse(CYLINDER_BLUE, clevr).tokens)
    curi = program_atoms_and_compounds(Program.parse("x color? red = exists="))  # CURI's keep their x
    assert curi == (["x", "color?", "red", "=", "exists="],
                    ["exists=(0:=)", "=(0:color?)", "=(1:red)", "color?(0:x)"])


def test_split_divergence_of_a_relational_split(space):
    split = make_split(space, held_out("no_left", tokens=["left"]))
    d = split_divergence(space, split)
    assert 0 <= d["atom_divergence"] <= 1 and 0 < d["compound_divergence"] <= 1
    assert all(":" not in name for name, _, _ in d["top_atoms"])
    assert any(name == "left" for name, _, _ in d["top_atoms"])


# ---------------------------------------------------------------------------------- synonyms
def test_prover_says_relational_programs_are_not_provable(clevr):
    v = prove_equivalent(CYLINDER_BLUE, CYLINDER_BLUE_RENAMED, clevr)
    assert not v.proved and v.level is None and set(v.not_provable) == {"exist", "filter", "same_material", "unique"}
    prover = EquivalenceProver(clevr)
    assert not prover.equivalent(CYLINDER_BLUE, CYLINDER_BLUE, "domain")
    with pytest.raises(NotProvable, match="not provable.*signatures only") as exc:
        prover.form(CYLINDER_BLUE)
    assert isinstance(exc.value, BayesConceptsError) and "\n" not in str(exc.value)
    assert unprovable_operators(Program.parse("x color? red = exists=")) == ()
    assert prove_equivalent("x color? red = x shape? cube = and exists=",
                            "x shape? cube = x color? red = and exists=").level == "propositional"


def test_counterexamples_of_relational_programs(clevr):
    a = "S y S z shape? cube = filter:z unique left filter:y exist"
    b = "S y S z shape? cube = filter:z unique right filter:y exist"
    scene = find_counterexample(a, b, clevr, n_scenes=2000)
    assert scene is not None and all("3d_coords" in o for o in scene["objects"])
    assert evaluate(a, scene, clevr) != evaluate(b, scene, clevr)
    assert find_counterexample(CYLINDER_BLUE, CYLINDER_BLUE_RENAMED, clevr, n_scenes=2000) is None


def test_synonym_classes_of_a_relational_space_are_decided_by_signatures(space):
    result = classify_synonym_classes(space, check_scenes=2000)
    classes = result.classes
    assert result.violations == 0 and len(classes) > 0
    assert set(classes.status) <= {STATUS["unprovable"], STATUS["refuted"]}
    assert (classes["unprovable"] == classes["size"]).all() and not result.members["provable"].any()
    assert (classes.status == STATUS["unprovable"]).sum() == (~classes.refuted).sum()
    summary = summarise_statuses(classes).set_index("status")
    assert summary.loc[UNPROVABLE, "classes"] == (classes.status == UNPROVABLE).sum()
    assert summary.loc[UNPROVABLE, "concepts"] == classes["size"][classes.status == UNPROVABLE].sum()


def test_cli_reports_unprovable_synonyms(space, space_dir, capsys):
    status, out, err = run(["space", "info", space_dir], capsys)
    assert status == 0, err
    assert f"{space.n_concepts:,} of {space.n_concepts:,} concepts use operators the synonym prover" in out
    status, out, _ = run(["space", "info", space_dir, "--json"], capsys)
    assert json.loads(out)["not_provable_concepts"] == space.n_concepts
    status, out, _ = run(["space", "show", space_dir, "0"], capsys)
    assert status == 0 and "not provable: the synonym prover does not reason about" in out
    status, out, _ = run(["--grammar", data_file("clevr.pcfg"), "explain", CYLINDER_BLUE], capsys)
    assert status == 0 and "synonyms    not provable" in out


# ------------------------------------------------------------------------------------- audit
def test_audit_of_a_relational_space(space_dir, tmp_path, capsys):
    status, _, err = run(["audit", space_dir], capsys)
    assert_one_line_error(status, err, "no splits to audit", "--spec FILE", "--protocol closure")
    spec = tmp_path / "no_same.toml"
    spec.write_text('name = "no_same"\nkind = "held_out"\n[held_out]\ntokens = ["same_material"]\n')
    report = tmp_path / "audit.md"
    status, out, err = run(["audit", space_dir, "--spec", spec, "--episodes", 20, "--report", report], capsys)
    assert status == 0, err
    assert "audit of split 'no_same'" in out and "divergence" in out and report.is_file()
    status, out, err = run(["audit", space_dir, "--protocol", "closure", "--split", "compare_mat", "--episodes", 20],
                           capsys)
    assert status == 0, err
    assert "audit of split 'compare_mat'" in out and "of protocol closure" in out and '"consistent"' in out


def test_audit_help_names_the_protocol_option(capsys):
    status, out, _ = run(["audit", "--help"], capsys)
    assert status == 0 and "--protocol" in out and "closure" in out


# --------------------------------------------------------------------- explain, eval, sample, show
def test_curi_language_says_y_is_unknown(capsys):
    status, _, err = run(["explain", "x locationX? y locationX? >"], capsys)
    assert_one_line_error(status, err, "token 2: 'y'", "y is unknown (unbound) in CURI's language",
                          "--grammar hypotheses/clevr.pcfg")
    status, _, err = run(["explain", "x S left exists="], capsys)
    assert_one_line_error(status, err, "token 2: 'left'", "left is a relational operator")


def test_explain_a_relational_program(capsys):
    status, out, err = run(["--grammar", data_file("clevr.pcfg"), "explain", "--json", CYLINDER_BLUE], capsys)
    assert status == 0, err
    info = json.loads(out)
    assert info["readable"].startswith("{y∈S | shape(y) = cylinder ∧ same_material(y, ι{z∈S")
    assert info["length"] == 17 and np.isfinite(info["log_pcfg"]) and "filter" in info["not_provable"]


@pytest.mark.parametrize("program, needles", [
    ("S y shape? cylinder = filter:y nand exist", ["token 6: 'nand'", "unknown token"]),
    ("S y shape? cylinder = y color? red = xor filter:y exist", ["token 9: 'xor'", "operator 'xor' is not declared"]),
    ("y left", ["token 1: 'left'", "stack underflow"]),
    ("S y y left filter:y exist exist", ["token 6: 'exist'", "must be a set, got a BOOL"]),
    ("S y shape? cylinder = y z left and filter:y exist", ["token 6: 'z'", "variable z is not bound here"]),
    ("S y shape? cylinder = S y color? red = filter:y exist and filter:y exist",
     ["token 10: 'filter:y'", "binds y again"]),
    ("S y shape? cylinder = filter:q exist", ["token 5: 'filter:q'", "'q' is not a variable of this grammar"]),
])
def test_bad_relational_programs_are_one_line_errors(program, needles, capsys):
    status, _, err = run(["--grammar", data_file("clevr.pcfg"), "explain", program], capsys)
    assert_one_line_error(status, err, *needles)


def test_a_relation_the_schema_lacks(tmp_path, capsys):
    text = data_file("clevr.pcfg").read_text()
    text = text.replace("relations left right front behind", "relations left right")
    bad = tmp_path / "bad.pcfg"
    bad.write_text(text)
    status, _, err = run(["--grammar", bad, "explain", "S y color? red = filter:y exist"], capsys)
    assert_one_line_error(status, err, "relation 'front' is not on the 'relations' line")
    lines = [ln.replace(" front behind", "") if ln.startswith("operators") else ln for ln in text.splitlines()]
    lines = [ln.replace("left | right | front | behind", "left | right") for ln in lines]
    lr = tmp_path / "lr.pcfg"
    lr.write_text("\n".join(lines) + "\n")
    status, _, err = run(["--grammar", lr, "explain", "S y S z color? red = filter:z unique front filter:y exist"],
                         capsys)
    assert_one_line_error(status, err, "token 9: 'front'", "not declared by this grammar")


def test_eval_and_sample_with_the_clevr_grammar(space, tmp_path, capsys):
    scenes = tmp_path / "scenes.jsonl"
    ids = list(range(12))
    scenes.write_text("".join(json.dumps(space.scene(j)) + "\n" for j in ids))
    programs = [space.programs[i] for i in range(5)]
    status, out, err = run(["--grammar", data_file("clevr.pcfg"), "eval", *programs, "--scenes", scenes, "--json"],
                           capsys)
    assert status == 0, err
    got = json.loads(out)
    for i, text in enumerate(programs):
        assert got[text] == [int(v) for v in space.signature(i)[ids]]
    status, out, err = run(["--grammar", data_file("clevr.pcfg"), "sample", "--n", 5, "--seed", 1], capsys)
    assert status == 0, err
    clevr = load_grammar(data_file("clevr.pcfg"))
    assert len(out.splitlines()) == 5 and all(Program.parse(line, clevr) for line in out.splitlines())


# ---------------------------------------------------------------------------------- learners
def test_schema_layout_has_relation_features(space):
    layout = SchemaLayout.from_schema(space.schema)
    S, R = space.schema.max_objects, len(space.schema.relations)
    assert layout.relations == tuple(space.schema.relations) and layout.n_attribute_features == 15
    assert layout.n_features == 15 + S + R * S
    ids = np.arange(40)
    rel = space.relations(ids)
    f = layout.features(space.scene_codes[ids], rel)
    present = np.asarray(space.scene_codes[ids])[..., 0] >= 0
    assert (f[~present] == -1).all()
    for (i, r, a, b) in np.argwhere(rel)[:50]:
        assert f[i, a, layout.names.index(f"{space.schema.relations[r]}:slot={b}")] == 1
    assert f[present][:, 15:15 + S].sum() == present.sum()  # one slot one-hot per object
    assert f[present][:, 15 + S:].sum() == rel.sum()
    with pytest.raises(LearnerError, match="need the scenes' relations|needs the scenes' relations"):
        layout.features(space.scene_codes[ids])


def test_schema_encoder_reads_each_scenes_own_relations(space):
    enc = SchemaEncoder.from_space(space, object_dim=8, hidden_ratio=1)
    ids = np.arange(30)
    x = enc.inputs(space, ids)
    assert x.shape == (30, space.schema.max_objects, 4 + 4 * space.schema.max_objects)
    layout = SchemaLayout.from_schema(space.schema)
    with torch.no_grad():
        np.testing.assert_array_equal(enc.features(x).numpy(),
                                      layout.features(space.scene_codes[ids], space.relations(ids)))
    assert enc.config()["relations"] == list(space.schema.relations)
    with pytest.raises(LearnerError, match="attribute codes alone do not give"):
        enc.from_codes(space.scene_codes[ids])


def test_learner_refuses_a_relational_space_without_stored_relations(space):
    bare = dataclasses.replace(space, scene_relations=None)
    with pytest.raises(LearnerError, match=r"carry relations \(left, right, front, behind\) but it holds none"):
        SchemaEncoder.from_space(bare)


def test_protonet_embeds_relational_scenes(space):
    learner = ProtoNetLearner(space, "schema", "relnet", precision="fp32", device="cpu",
                              encoder_options={"object_dim": 8, "hidden_ratio": 1}, embedding_dim=8,
                              pooling_options={"g_hidden": (8,), "g_out": 8, "f_hidden": (8,)})
    emb = learner.embed(np.arange(6))
    assert emb.shape == (6, 8) and np.isfinite(emb).all()
