"""Published model results (bayes_concepts.published): every benchmark loads with the counts
its paper's tables hold, numbers equal the paper's (re-read from the seed text where it is on
this machine, else hard-coded with their table and row), difficulty is oriented, user files
round-trip, and bad files are one-line errors naming file and key."""
from __future__ import annotations

import doctest
import math
import re
from pathlib import Path

import pandas as pd
import pytest

import bayes_concepts as bc
from bayes_concepts import published
from bayes_concepts.suites.closure import load_reported as closure_reported
from bayes_concepts.suites.conceptworld.space import condition_slug, load_experiments, load_reported as cw_reported
from bayes_concepts.published import PublishedError, load, read
from bayes_concepts.resources import curi_splits_dir, data_file

SEEDS = Path("/work/shared/seeds")
CURI_SPLITS = sorted(p.stem for p in curi_splits_dir().glob("*.toml"))


def seed_text(prefix: str) -> list:
    files = sorted(SEEDS.glob(f"{prefix}_*.txt")) if SEEDS.is_dir() else []
    if not files:
        pytest.skip("the seed papers' text is not on this machine")
    return files[0].read_text(encoding="utf-8").splitlines()


def cell(results, model, condition, measure=None, negatives="", experiment="", column="value"):
    f = results.frame()
    row = f[(f.model == model) & (f.condition == condition) & (f.measure == (measure or results.measure))
            & (f.negatives == negatives) & (f.experiment == experiment)]
    assert len(row) == 1, (model, condition, measure, negatives, experiment)
    return float(row[column].iloc[0])


# ============================================================================ loading, counts
@pytest.mark.parametrize("name", published.benchmarks())
def test_every_benchmark_loads(name):
    r = load(name)
    f = r.frame()
    assert r.benchmark == name and list(f.columns) == list(published.COLUMNS) and len(f) == len(r)
    assert f.value.map(math.isfinite).all() and (f.table.str.len() > 0).all() and (f.source.str.len() > 0).all()
    assert not f.duplicated(["experiment", "model", "condition", "negatives", "measure"]).any()
    for m in set(f.measure):
        lo = -100 if r.measures[m].difference else 0
        hi = 200 if m == "normalised_drop" else 100  # a zero-shot accuracy below chance drops past it
        assert f[f.measure == m].value.between(lo, hi).all(), m
    assert r.measure in r.measures and r.source and repr(r).startswith("PublishedResults(")


def test_module_is_an_attribute_of_the_package():
    assert bc.published is published and bc.published.load("curi").benchmark == "curi"
    assert sorted(published.benchmarks()) == ["closure", "conceptworld", "curi", "rlcl"]
    with pytest.raises(PublishedError, match="no published results for benchmark 'clevr'"):
        load("clevr")


def test_curi_counts_match_its_tables():
    r = load("curi")
    f = r.frame()
    counts = f.groupby(["measure", "negatives"]).agg(models=("model", "nunique"), conditions=("condition", "nunique"),
                                                     n=("value", "size"))
    # Tables 1-9: 11 models (schema/image x 4 poolings, sound x 3); Tables 10-18: 6 (no transformer,
    # no sound); ICML Table 2 bottom half: 10 (no schema concat), hard negatives only
    assert counts.loc[("map", "hard")].tolist() == [11, 9, 99]
    assert counts.loc[("map", "easy")].tolist() == [6, 9, 54]
    assert counts.loc[("cba", "hard")].tolist() == [10, 9, 90]
    assert len(f) == 243 and r.measure == "map" and r.higher_is_better
    assert sorted(r.conditions()) == CURI_SPLITS
    r.check(CURI_SPLITS)
    assert "schema concat" not in r.models("cba") and len(r.models()) == 11
    tables = set(f[f.measure == "map"].table.str.extract(r"Table (\d+)")[0].astype(int))
    assert tables == set(range(1, 19))
    assert r.model_info["sound concat"] == {"modality": "sound", "pooling": "concat"}


def test_rlcl_counts_match_its_tables():
    r = load("rlcl")
    f = r.frame()
    assert r.measure == "unseen_accuracy" and r.higher_is_better
    assert r.conditions() == ["attr_obj", "action_obj"] and r.experiments() == ["ksc5", "ksc3", "ksc1"]
    assert len(r.models()) == 11 and len(f) == 11 * 2 * 3 * 5
    assert set(f.measure) == {"unseen_accuracy", "seen_accuracy", "harmonic_mean", "primitive1_hm", "primitive2_hm"}
    assert f.ci95.notna().all() and f.sd.isna().all()
    assert set(f.table) == {"Table 4 (Appendix H, RLCL-ATTR)", "Table 5 (Appendix H, RLCL-ACT)"}
    assert [m for m, i in r.model_info.items() if i["side_information"]] == [
        "SymNet", "CGE", "refined-ProtoNet (side information)"]


def test_conceptworld_conditions_are_its_split_names():
    r = load("conceptworld")
    experiments = load_experiments()
    assert r.experiments() == list(experiments) and r.measure == "f1"
    shape = {}
    for name, spec in experiments.items():
        sub = r.experiment(name)
        assert sub.conditions() == [condition_slug(c) for c in spec["conditions"]]
        sub.check([condition_slug(c) for c in spec["conditions"]])
        shape[name] = (len(sub.models()), len(sub.conditions()))
    # Table 4: 6 models (two ResNets); Tables 6, 8: 5; Table 10 + Table 11 (curriculum): 5 + 5
    assert shape == {"productivity": (6, 3), "boxworld": (5, 2), "scaling": (5, 1), "substitution": (10, 2)}
    assert len(r) == 53
    # the published file keeps reported.toml's layout: conceptworld's own reader reads it too
    extra = cw_reported(data_file("published", "conceptworld.toml"))
    assert list(extra) == ["substitution"] and len(extra["substitution"]["models"]) == 5
    # nothing of reported.toml is repeated there
    assert not set(extra["substitution"]["models"]) & set(cw_reported()["substitution"]["models"])


def test_closure_is_the_drop_per_family():
    r = load("closure")
    rep = closure_reported()
    assert r.measure == "accuracy_drop" and not r.higher_is_better
    assert len(r.models()) == 7 and len(r.conditions()) == 7 and len(r) == 7 * 7 * 4
    assert cell(r, "FiLM", "or_mat", "normalised_drop") == pytest.approx(100 * rep.normalised_drop("FiLM", "or_mat"))
    for model in r.models():
        for family in r.conditions():
            assert cell(r, model, family) == rep.drop(model, family)
            assert cell(r, model, family, "zero_shot_accuracy") == rep.zero_shot[model][family].mean
            assert cell(r, model, family, "baseline_accuracy") == rep.baseline[model][family].mean
    assert cell(r, "FiLM", "or_mat") == pytest.approx(91 - 34.4)          # Table 3 - Table 1, FiLM, or_mat


# ============================================================================ numbers = the paper's
def test_hard_coded_spot_values():
    curi, rlcl, cw = load("curi"), load("rlcl"), load("conceptworld")
    # CURI appendix G.7 / G.8 (mAP %, table: row)
    assert cell(curi, "schema relation-net", "counting", negatives="hard") == 57.4              # Table 9
    assert cell(curi, "schema relation-net", "counting", negatives="hard", column="sd") == 4.8
    assert cell(curi, "schema transformer", "binding_color", negatives="hard") == 15.9           # Table 1
    assert cell(curi, "schema avg-pool", "binding_color", negatives="hard") == 14.4              # Table 1 (not 15.1)
    assert cell(curi, "sound relation-net", "concept_iid", negatives="hard") == 21.8             # Table 4, sd NaN
    assert math.isnan(cell(curi, "sound relation-net", "concept_iid", negatives="hard", column="sd"))
    assert cell(curi, "image transformer", "extrinsic", negatives="hard") == 62.1                # Table 6
    assert cell(curi, "schema relation-net", "counting", negatives="easy") == 67.9               # Table 12
    assert cell(curi, "schema concat", "binding_shape", negatives="easy") == 31.0                # Table 18, last row
    # CURI (ICML) Table 2 bottom half: class-balanced accuracy, hard negatives
    assert cell(curi, "schema relation-net", "complexity", "cba", "hard") == 86.5
    assert cell(curi, "image transformer", "counting", "cba", "hard") == 75.6
    assert cell(curi, "sound relation-net", "extrinsic", "cba", "hard") == 78.2
    # RLCL Tables 4 and 5 (%)
    assert cell(rlcl, "refined-ProtoNet (side information)", "attr_obj", experiment="ksc5") == 6.05
    assert cell(rlcl, "refined-ProtoNet (side information)", "attr_obj", experiment="ksc5", column="ci95") == 1.64
    assert cell(rlcl, "CGE", "action_obj", experiment="ksc1") == 4.05
    assert cell(rlcl, "CGE", "action_obj", "harmonic_mean", experiment="ksc1") == 6.41
    assert cell(rlcl, "Baseline++", "attr_obj", "seen_accuracy", experiment="ksc3") == 18.59
    assert cell(rlcl, "ProtoNet", "action_obj", "primitive1_hm", experiment="ksc5") == 45.21
    # ConceptWorld: Table 4 (SimpleConvNet = CNN, length 7: blue .803, red .822, mixed .05) and
    # Table 11 (PrediNet, curriculum, 1 substitution: sequences .1834, .2958, .138)
    assert cell(cw, "CNN", "length_7", experiment="productivity") == pytest.approx(100 * (0.803 + 0.822 + 0.05) / 3)
    assert cell(cw, "PrediNet + curriculum", "1_substitution", experiment="substitution") == pytest.approx(
        100 * (0.1834 + 0.2958 + 0.138) / 3)
    assert cell(cw, "CNN + curriculum", "2_substitutions", experiment="substitution") == 0.0


CURI_TITLES = {"Binding (color)": "binding_color", "Boolean": "boolean", "Intrinsic": "intrinsic",
               "Concept IID": "concept_iid", "Instance IID": "instance_iid", "Extrinsic": "extrinsic",
               "Complexity": "complexity", "Binding (shape)": "binding_shape", "Counting": "counting"}


def test_curi_map_equals_the_seed_text():
    lines = seed_text("000")
    curi = load("curi")
    checked = 0
    for i, line in enumerate(lines):
        m = re.match(r"Table (\d+): Performance on meta-test, sorted based on mAP \(in %\) on (.+) with (\w+) neg",
                     line)
        if not m:
            continue
        split, negatives = CURI_TITLES[m.group(2)], m.group(3)
        for row in lines[i + 2:]:
            parts = row.split()
            if len(parts) != 4 or parts[0] not in ("schema", "image", "sound"):
                break
            model = f"{parts[0]} {parts[1]}"
            assert cell(curi, model, split, negatives=negatives) == float(parts[2]), (m.group(1), row)
            sd = cell(curi, model, split, negatives=negatives, column="sd")
            assert (math.isnan(sd) if parts[3] == "NaN" else sd == float(parts[3])), (m.group(1), row)
            checked += 1
    assert checked == 99 + 54


def test_curi_cba_rows_average_to_the_printed_overall():
    """ICML Table 2's Overall column is the mean of a row's nine splits; the text of that table
    is OCR'd, so the file's rows are checked against it rather than parsed from it."""
    lines = seed_text("002")
    curi = load("curi")
    start = next(i for i, l in enumerate(lines) if "Performance on Splits with Hard Negatives (accuracy metric)" in l)
    seen = 0
    for row in lines[start + 1:start + 11]:
        head = re.match(r"(Image|Schema|Sound)\s+(Average Pool|Relation Net|Transformer|Concat)\s", row)
        model = f"{head.group(1).lower()} " + {"Average Pool": "avg-pool", "Relation Net": "relation-net",
                                               "Transformer": "transformer", "Concat": "concat"}[head.group(2)]
        overall = float(row.split()[-1])
        values = curi.values(model, "hard", measure="cba")
        assert len(values) == 9 and values.mean() == pytest.approx(overall, abs=0.006), model
        seen += 1
    assert seen == 10


def test_rlcl_equals_the_seed_text_and_table_1_is_ksc5():
    lines = seed_text("004")
    rlcl = load("rlcl")
    measures = ["unseen_accuracy", "seen_accuracy", "harmonic_mean", "primitive1_hm", "primitive2_hm"]
    checked = 0
    for table, condition in (("Table 4:", "attr_obj"), ("Table 5:", "action_obj")):
        start = next(i for i, l in enumerate(lines) if l.startswith(table))
        k, side = None, False
        for line in lines[start + 1:]:
            if line.startswith("Table 5:"):
                break
            if re.match(r"K\w*\s*=\s*\d", line.strip()):
                k, side = "ksc" + line.strip()[-1], False
            side = side or line.startswith("Learning with Side")
            nums = re.findall(r"(\d+\.\d\d)\s*±\s*(\d+\.\d\d)", line)
            if len(nums) == 5:
                model = line.split("\t")[0].strip() + (" (side information)" if side and "refined" in line else "")
                for measure, (value, ci) in zip(measures, nums):
                    assert cell(rlcl, model, condition, measure, experiment=k) == float(value), (table, k, model)
                    assert cell(rlcl, model, condition, measure, experiment=k, column="ci95") == float(ci)
                    checked += 1
    assert checked == 330
    start = next(i for i, l in enumerate(lines) if l.startswith("Table 1: Results (%)"))
    side, rows = False, 0
    for line in lines[start + 2:start + 16]:
        side = side or line.startswith("Learning with Side")
        nums = re.findall(r"(\d+\.\d\d)\s*±\s*(\d+\.\d\d)", line)
        if len(nums) == 6:
            model = line.split("\t")[0].strip() + (" (side information)" if side and "refined" in line else "")
            got = [cell(rlcl, model, c, m, experiment="ksc5") for c in ("attr_obj", "action_obj")
                   for m in measures[:3]]
            assert got == [float(v) for v, _ in nums], model
            rows += 1
    assert rows == 11


def test_conceptworld_table_11_equals_the_seed_text():
    lines = seed_text("001")
    table = cw_reported(data_file("published", "conceptworld.toml"))["substitution"]["models"]
    end = next(i for i, l in enumerate(lines) if l.startswith("Table 11:"))
    names = {"ResNet (Pretrained)": "ResNet (pretrained)", "WReN": "WReN", "SimpleConvNet": "CNN",
             "PrediNet": "PrediNet", "SimpleFeedForward": "MLP"}
    model, checked = None, 0
    for line in lines[end - 25:end]:
        for printed, name in names.items():
            if line.startswith(printed + " "):
                model, line = name, line[len(printed) + 1:]
        *concept, one, two = line.split()
        got = table[f"{model} + curriculum"][" ".join(concept).lower()]
        assert got == {"1 substitution": float(one), "2 substitutions": float(two)}, line
        checked += 1
    assert checked == 25


# ============================================================================ per condition
def test_values_mean_over_models_and_counts():
    curi = load("curi")
    hard = curi.values()                                     # the file's default: hard negatives
    f = curi.frame()
    counting = f[(f.measure == "map") & (f.negatives == "hard") & (f.condition == "counting")].value
    assert hard["counting"] == pytest.approx(counting.mean()) and hard.attrs["negatives"] == "hard"
    assert list(hard.index) == curi.conditions() and hard.name == "map"
    assert set(curi.n_models("easy")) == {6} and set(curi.n_models("hard")) == {11}
    assert list(curi.values(negatives="easy").index) == curi.conditions()
    assert set(curi.n_models(measure="cba")) == {10}
    with pytest.raises(PublishedError, match="several experiment values .*pick one with experiment="):
        load("conceptworld").values()
    assert load("rlcl").values().attrs["experiment"] == "ksc5"
    with pytest.raises(PublishedError, match="no model 'nope'"):
        curi.values("nope")
    with pytest.raises(PublishedError, match="no negatives 'medium'"):
        curi.values(negatives="medium")


def test_difficulty_is_oriented_higher_is_harder():
    curi, closure = load("curi"), load("closure")
    v, d = curi.values("schema relation-net", "hard"), curi.difficulty("schema relation-net", "hard")
    assert (d == -v).all() and d.name == "difficulty"
    assert d["binding_color"] > d["instance_iid"]            # 15.3 % mAP is harder than 63.9 %
    v, d = closure.values("FiLM"), closure.difficulty("FiLM")
    assert (d == v).all() and d["or_mat"] > d["embed_spa_mat"]   # a larger drop is harder
    assert (load("rlcl").difficulty() < 0).all()


# ============================================================================ your own numbers
USER = """\
benchmark = "curi"
measure = "map"
unit = "fraction"

[models."my net"]
note = "three seeds"

[[block]]
table = "ours, Table A"
model = "my net"
negatives = "hard"
values = {counting = 0.52, boolean = 0.61}
sd = {counting = 0.01}
"""


def test_user_file_reads_merges_and_round_trips(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(USER)
    mine = read(path)
    assert mine.values("my net", "hard").to_dict() == {"counting": 52.0, "boolean": 61.0}
    assert cell(mine, "my net", "counting", negatives="hard", column="sd") == 1.0
    both = load("curi").merge(mine)
    assert "my net" in both.models() and both.n_models("hard")["counting"] == 12
    assert both.n_models("hard")["binding_color"] == 11 and str(path) in both.source
    both.check(CURI_SPLITS)
    # round trip: written in percent, read back the same
    for results in (mine, both, load("rlcl"), load("conceptworld")):
        again = read(results.write(tmp_path / "again.toml"))
        cols = [c for c in published.COLUMNS if c != "source"]
        pd.testing.assert_frame_equal(again.frame()[cols], results.frame()[cols])
        assert (again.benchmark, again.measure, again.defaults) == (results.benchmark, results.measure,
                                                                    results.defaults)
        assert again.model_info == results.model_info


def test_with_model_adds_and_refuses_duplicates_and_unknown_splits():
    curi = load("curi")
    mine = curi.with_model("mine", {"counting": 0.5, "boolean": 0.25}, table="ours", negatives="hard", unit="fraction")
    assert mine.values("mine", "hard").to_dict() == {"counting": 50.0, "boolean": 25.0}
    assert len(curi.models()) == 11                          # the published set is unchanged
    with pytest.raises(PublishedError, match=r"with_model\('mine'\): condition 'countng' is not among"):
        curi.with_model("mine", {"countng": 50.0}, table="ours", negatives="hard")
    with pytest.raises(PublishedError, match="two values for .*model 'schema relation-net'"):
        curi.with_model("schema relation-net", {"counting": 50.0}, table="ours", negatives="hard")
    with pytest.raises(PublishedError, match="outside 0..100"):
        curi.with_model("mine", {"counting": 150.0}, table="ours", negatives="hard")
    with pytest.raises(PublishedError, match="holds 'rlcl' results, not 'curi'"):
        curi.merge(load("rlcl"))
    sub = load("conceptworld").with_model("mine", {"length_3": 90.0}, table="ours", experiment="productivity")
    assert sub.experiment("productivity").values("mine").to_dict() == {"length_3": 90.0}


def test_unknown_split_in_a_user_file_is_named_with_its_file(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(USER.replace("boolean = 0.61", "booleen = 0.61"))
    with pytest.raises(PublishedError) as err:
        read(path).check(CURI_SPLITS)
    assert str(path) in str(err.value) and "'booleen'" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(PublishedError, match="model 'my net'"):
        read(path).check(read(path).conditions(), models=["other"])
    with pytest.raises(PublishedError, match="condition 'length_3' .*experiment productivity"):
        load("conceptworld").check(["length_5", "length_7"], experiment="productivity")


BAD = [
    (lambda t: t.replace('measure = "map"', 'measure = "map'), "not valid TOML"),
    (lambda t: t.replace('table = "ours, Table A"\n', ""), r"line 8: \[\[block\]\] 1: table: missing"),
    (lambda t: t.replace("counting = 0.52", 'counting = "0.52"'), r'line 8: \[\[block\]\] 1: values."counting": '
                                                                  "expected a number"),
    (lambda t: t.replace("counting = 0.52", "counting = 5.2"), r'values."counting": 5.2 is outside 0..1 \(fraction'),
    (lambda t: t.replace('model = "my net"', 'model = "my net"\ncondition = "counting"'), "exactly one of condition"),
    (lambda t: t.replace("values =", "valeus = {}\nvalues ="), "valeus: unknown key"),
    (lambda t: t.replace("sd = {counting", "sd = {countin"), r'sd."countin": has no value in values'),
    (lambda t: t.replace('negatives = "hard"', 'negatives = "hard"\nmeasure = "brier"'), "'brier' is not known"),
    (lambda t: t + t[t.index("[[block]]"):], r"two values for .*model 'my net', condition 'counting'"),
    (lambda t: t.replace('unit = "fraction"', 'unit = "permille"'), "unit: expected one of"),
    (lambda t: t + '[defaults]\nnegatives = "easy"\n', "defaults.negatives: 'easy' is not a negatives of any block"),
    (lambda t: t.replace('benchmark = "curi"\n', ""), "benchmark: missing"),
    (lambda t: t.replace('[models."my net"]', "[measures.map]\nhigher_is_better = false\n[models.\"my net\"]"),
     "measures.\"map\".higher_is_better: map is higher_is_better = true"),
    (lambda t: t[:t.index("[[block]]")], "block: missing"),
]


@pytest.mark.parametrize("edit, message", BAD)
def test_malformed_files_are_one_line_errors_naming_file_and_key(tmp_path, edit, message):
    path = tmp_path / "bad.toml"
    path.write_text(edit(USER))
    with pytest.raises(PublishedError, match=message) as err:
        read(path)
    text = str(err.value)
    assert text.startswith(str(path)) and "\n" not in text
    assert isinstance(err.value, bc.BayesConceptsError)


def test_module_examples_run():
    assert doctest.testmod(published).failed == 0


def test_missing_file_is_a_one_line_error(tmp_path):
    with pytest.raises(PublishedError, match="cannot read the results file"):
        read(tmp_path / "nope.toml")
