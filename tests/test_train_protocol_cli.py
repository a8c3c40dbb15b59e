"""``train --protocol``: a protocol's split (a CLOSURE family) trained on from the command line."""
import json

from conftest import assert_one_line_error, run


def test_train_on_a_closure_family_from_the_command_line(clevr_space_dir, tmp_path, capsys):
    out = tmp_path / "model"
    status, stdout, err = run(["train", clevr_space_dir, "--protocol", "closure-baselines", "--split",
                               "embed_spa_mat", "--learner", "schema-average", "--out", out, "--steps", "1",
                               "--batch", "2", "--val-episodes", "4", "--val-every", "1", "--threads", "1"], capsys)
    assert status == 0, err
    training = json.loads((out / "card.json").read_text())["training"]
    assert training["protocol"] == "closure-baselines" and training["split"] == "embed_spa_mat"
    assert "embed_spa_mat" in stdout


def test_train_on_a_split_the_protocol_does_not_have_is_one_line(clevr_space_dir, tmp_path, capsys):
    status, _, err = run(["train", clevr_space_dir, "--protocol", "closure-baselines", "--split", "concept_iid",
                          "--learner", "schema-average", "--out", tmp_path / "m", "--steps", "1"], capsys)
    assert_one_line_error(status, err, "concept_iid", "closure-baselines")
