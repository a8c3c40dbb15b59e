"""A trained model as a column of the ladder: scored on the ladder's own episodes of its
training split, beside the rungs, never named where a split is solved."""
import json

import numpy as np

from bayes_concepts.cli import main
from bayes_concepts.ladder import format_ladder, ladder_profile, ladder_summary
from bayes_concepts.learners import learners_for_gap
from bayes_concepts.splits import load_splits


def test_a_model_is_a_ladder_column_on_its_training_split(small_space, small_space_dir, tmp_path, capsys):
    out = tmp_path / "avg"
    assert main(["train", str(small_space_dir), "--split", "counting", "--learner", "schema-average", "--steps", "2",
                 "--batch", "4", "--val-every", "2", "--val-episodes", "10", "--precision", "fp32", "--out",
                 str(out)]) == 0
    capsys.readouterr()
    assert main(["ladder", str(small_space_dir), "--split", "counting", "concept_iid", "--negatives", "hard",
                 "--episodes", "20", "--rungs", "memoriser", "strong", "--learner", str(out), "--learner", "random",
                 "--published", "none", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    by_split = {r["split"]: r for r in rows}
    assert set(by_split["counting"]["models"]) == {"schema-average", "random"}
    assert set(by_split["concept_iid"]["models"]) == {"random"}  # the model only on its training split
    assert set(by_split["counting"]["rungs"]) == {"memoriser", "strong"}

    # the same numbers as the gap scores on the same episodes
    from bayes_concepts.spaces import load_space
    space = load_space(small_space_dir)
    splits = load_splits(space, ["counting"])
    models = learners_for_gap(space, splits, [str(out)], 0)
    ds = ladder_profile(space, splits, ["memoriser", "strong"], ("hard",), 20, seed=0, models=models)
    row = ladder_summary(ds, n_boot=50)[0]
    ap = 100 * ds["ap"].sel(split="counting", negatives="hard", learner="schema-average").values
    assert np.isclose(row["models"]["schema-average"]["map"], np.nanmean(ap))
    assert row["solved_at"] in (None, "memoriser")
    assert "schema-average" in format_ladder([row]).splitlines()[0]
