"""The ladder's validation: the pre-registration file, the table, ladder-validate."""
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from bayes_concepts.validation import (ValidationError, file_sha256, format_validation, read_preregistration,
                                       validation_table)
from conftest import assert_one_line_error, run

ROOT = Path(__file__).resolve().parents[1]
PREREG = ROOT / "benchmarks" / "ladder_validation.toml"


def _prereg(tmp_path, *, rungs=("memoriser", "compound", "strong"), kinds=("schema-average",), split_file="a.toml",
            predictors=("compound_divergence", "memoriser"), sha=None, budget=30) -> Path:
    (tmp_path / "a.toml").write_text('name = "a"\nkind = "random"\nfractions = {train = 0.8, test = 0.2}\n')
    sha = sha or file_sha256(tmp_path / "a.toml")
    text = "\n".join([
        "[study]", 'name = "t"', "seed = 0", "",
        "[rungs]", "names = [" + ", ".join(f'"{r}"' for r in rungs) + "]", "",
        "[predictors]", "names = [" + ", ".join(f'"{p}"' for p in predictors) + "]", "",
        "[learners]", "kinds = [" + ", ".join(f'"{k}"' for k in kinds) + "]", f"budget_s = {budget}", "",
        "[[split]]", 'name = "a"', f'file = "{split_file}"', f'sha256 = "{sha}"', 'half = "confirmatory"', ""])
    path = tmp_path / "prereg.toml"
    path.write_text(text)
    return path


def test_a_good_preregistration_reads(tmp_path):
    p = read_preregistration(_prereg(tmp_path))
    assert p["rung_labels"] == ["memoriser", "compound", "strong"] and p["sha256"] == file_sha256(tmp_path / "prereg.toml")


@pytest.mark.parametrize("kw, needle", [
    ({"rungs": ("memoriser", "oracle9", "strong")}, "unknown rung 'oracle9'"),
    ({"rungs": ("memoriser", "compound")}, "must include strong"),
    ({"kinds": ("schema-average", "nosuch-net")}, "unknown learner 'nosuch-net'"),
    ({"split_file": "missing.toml"}, "unknown split file 'missing.toml'"),
    ({"sha": "0" * 64}, "does not have the sha256"),
    ({"predictors": ("compound_divergence", "vibes")}, "unknown predictor 'vibes'"),
    ({"budget": 600}, "budget_s must be in (0, 180]"),
])
def test_a_bad_preregistration_is_one_line(tmp_path, kw, needle):
    with pytest.raises(ValidationError) as e:
        read_preregistration(_prereg(tmp_path, **kw))
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_the_runner_refuses_a_bad_preregistration_in_one_line_exit_2(tmp_path):
    bad = _prereg(tmp_path, rungs=("memoriser", "oracle9", "strong"))
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "ladder_validation.py"), "summarise", "--prereg",
                        str(bad)], capture_output=True, text=True, cwd=ROOT / "benchmarks")
    assert r.returncode == 2, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "unknown rung 'oracle9'" in lines[0] and "Traceback" not in r.stderr


def _record(name, half, gaps, learner_gap, learned=True, divergence=0.1):
    row = {"split": name, "negatives": "hard", "episodes": 100, "solved_at": None,
           "rungs": {lb: {"gap": g, "gap_se": 0.1} for lb, g in gaps.items()},
           "models": {"net": {"gap": learner_gap, "gap_se": 0.1}}}
    return {"split": name, "half": half, "generator": "g", "rows": [row],
            "predictors": {"compound_divergence": divergence, "n_test_concepts": 10.0},
            "learned": {"net": {"learned": learned, "train_distribution_map": 50.0, "random_map": 5.0}}}


def test_the_table_ranks_rungs_and_predictors_against_each_learner():
    rng = np.random.default_rng(0)
    prereg = {"study": {"seed": 0, "n_boot": 300}, "predictors": {"names": ["compound_divergence", "memoriser"]},
              "learners": {"kinds": ["net"]}, "rung_labels": ["memoriser", "compound", "strong"]}
    recs = []
    for i in range(12):
        d = float(i * 5)
        recs.append(_record(f"s{i}", "confirmatory" if i % 2 else "exploratory",
                            {"memoriser": float(rng.uniform(0, 90)), "compound": d, "strong": 0.0}, d + 0.01,
                            learned=i != 3, divergence=float(rng.uniform())))
    t = validation_table(recs, prereg, "confirmatory")["net"]
    assert t["conditions"] == [f"s{i}" for i in range(1, 12, 2)] and t["not_learned"] == ["s3"]
    assert t["series"]["compound"]["spearman"] == pytest.approx(1.0)
    assert "vs_compare_to" in t["series"]["compound"]
    assert validation_table(recs, prereg, "confirmatory", learned_only=True)["net"]["conditions"] == \
        ["s1", "s5", "s7", "s9", "s11"]
    text = format_validation(validation_table(recs, prereg, "confirmatory"))
    assert "compound divergence (predictor)" in text and "did not learn: s3" in text
    few = validation_table(recs[:6], prereg, "confirmatory")["net"]
    assert few["too_few"] and "too few conditions" in format_validation({"net": few})


def test_ladder_validate_refuses_fewer_than_four_conditions(small_space_dir, capsys):
    status, out, err = run(["ladder-validate", small_space_dir, "--published", "curi", "--split", "counting",
                            "boolean", "binding_color", "--episodes", "10"], capsys)
    assert_one_line_error(status, err, "a validation needs at least 4")


def test_ladder_validate_prints_rungs_and_predictors(small_space_dir, capsys):
    status, out, err = run(["ladder-validate", small_space_dir, "--published", "curi", "--rungs", "memoriser",
                            "compound", "strong", "--episodes", "30", "--n-boot", "50", "--json"], capsys)
    assert status == 0, err
    doc = json.loads(out)
    assert len(doc["conditions"]) >= 5
    assert {"compound_divergence", "atom_divergence", "memoriser"} <= set(doc["predictors"])
    assert doc["rungs"]["compound"]["mean_model"]["n_conditions"] == len(doc["conditions"])


def test_the_committed_preregistration_holds_the_study():
    p = read_preregistration(PREREG)
    assert len(p["split"]) >= 40 and len(p["learners"]["kinds"]) >= 2
    halves = [s["half"] for s in p["split"]]
    assert halves.count("confirmatory") >= 20 and halves.count("exploratory") >= 20
    assert p["learners"]["budget_s"] <= 180
    results = ROOT / "benchmarks" / "results" / "ladder_validation.json"
    if results.exists():  # the results record the file they ran under
        doc = json.loads(results.read_text())
        assert doc["preregistration"]["sha256"] == p["sha256"]
        assert tomllib.loads(PREREG.read_text())["study"]["name"] == "ladder_validation_v1"
