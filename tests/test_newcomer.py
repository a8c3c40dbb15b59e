"""What a newcomer runs into first: options a protocol fixes, empty answers, messages that
do not say what was wrong.  Bad input gets one line naming the option, file or value (exit
2 from the command line, a :class:`BayesConceptsError` from the Python API); an explicit
option is applied or refused, never ignored; nothing answers with an empty table.

The CURI-release space is the small saved fixture ``tests/fixtures/saved_spaces/curi_release``
(copied, since commands may write next to it).
"""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

import bayes_concepts as bc
from bayes_concepts import cli
from bayes_concepts.errors import BayesConceptsError
from bayes_concepts.oracles import OracleSettings
from bayes_concepts.protocols import Protocol, get_protocol
from bayes_concepts.results import ResultsError, load_results, save_results
from conftest import assert_one_line_error, run

FIXTURE = Path(__file__).parent / "fixtures" / "saved_spaces" / "curi_release"
PROGRAM = "x color? red = exists="



@pytest.fixture(scope="module")
def release_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("release") / "curi_release"
    shutil.copytree(FIXTURE, path)
    return path


@pytest.fixture(scope="module")
def release_space(release_dir):
    return bc.load_space(release_dir)


@pytest.fixture(scope="module")
def complexity(release_space):
    return get_protocol("curi-release").splits(release_space, ["complexity"])


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ------------------------------------------------- 1. options a protocol fixes: never ignored
GAP = ["--split", "complexity", "--negatives", "hard", "--episodes", "3"]


def test_every_oracle_setting_is_an_option_that_overrides_a_protocol():
    """Every field of OracleSettings, the query negatives and the hard mode are options of
    ``gap`` that record being given, and their help says what they do with --protocol."""
    gap = cli.build_parser()._subparsers._group_actions[0].choices["gap"]
    actions = {a.dest: a for a in gap._actions}
    fixed = {f.name for f in dataclasses.fields(OracleSettings)} | {"query_negatives", "hard_mode"}
    assert set(cli._PROTOCOL_FIXES) == fixed
    for dest in fixed:
        assert isinstance(actions[dest], cli._Given), dest
        assert "replaces the protocol's value" in actions[dest].help, dest
    assert "replaces the protocol's value" in actions["protocol"].help


@pytest.mark.parametrize("option, value, key, field", [
    ("--prior", "length", "settings", "prior"),               # the parser's default, given explicitly
    ("--beta", "0.2", "settings", "beta"),
    ("--likelihood", "size", "settings", "likelihood"),
    ("--epsilon", "0.05", "settings", "epsilon"),
    ("--weak-empty", "zero", "settings", "weak_empty"),
    ("--hard-mode", "union", "hard_mode", None),
    ("--query-negatives", "random", "query_negatives", None),  # the protocol's own value
])
def test_protocol_options_given_explicitly_are_overrides(option, value, key, field):
    args = cli.build_parser().parse_args(["gap", "SPACE", "--protocol", "curi-release", option, value])
    protocol = cli._protocol(args)
    overrides = cli._protocol_overrides(args, protocol)
    assert set(overrides) == {key}
    if field:
        assert str(getattr(overrides["settings"], field)) == value
        others = {f.name for f in dataclasses.fields(OracleSettings)} - {field}
        assert all(getattr(overrides["settings"], f) == getattr(protocol.settings, f) for f in others)
    else:
        assert overrides[key] == value
    assert cli._override_text(args) == f"{option} {value}"


def test_protocol_without_options_has_no_overrides():
    args = cli.build_parser().parse_args(["gap", "SPACE", "--protocol", "curi-release"])
    assert cli._protocol_overrides(args, cli._protocol(args)) == {}


def test_gap_protocol_prior_is_applied_and_recorded(release_dir, workdir, capsys):
    status, out, err = run(["gap", release_dir, "--protocol", "curi-release", "--prior", "length", *GAP,
                            "--out", "res.nc"], capsys)
    assert status == 0, err
    assert "protocol curi-release overridden by --prior length" in out
    ds = load_results("res.nc")
    assert json.loads(ds.attrs["oracle_settings"])["prior"] == "length"
    assert json.loads(ds.attrs["protocol_overrides"])["settings"]["prior"] == "length"
    assert json.loads(ds.attrs["oracle_settings"])["likelihood"] == "size_release"  # the rest: the protocol's


def test_gap_protocol_bad_override_names_the_option(release_dir, workdir, capsys):
    status, _, err = run(["gap", release_dir, "--protocol", "curi-release", "--epsilon", "0.7", *GAP], capsys)
    assert_one_line_error(status, err, "--epsilon", "0.7")


def test_protocol_compute_gap_unknown_override_is_a_toolkit_error(release_space):
    with pytest.raises(BayesConceptsError, match="unknown override prior"):
        get_protocol("curi-release").compute_gap(release_space, ["complexity"], n_episodes=2, prior="length")


# ------------------------------------------------------------------ 2. no empty answers
@pytest.mark.parametrize("n", [0, -3, 1.5, True, "10"])
def test_compute_gap_refuses_bad_n_episodes(release_space, complexity, n):
    with pytest.raises(BayesConceptsError, match=r"n_episodes must be a whole number >= 1, got") as info:
        bc.compute_gap(release_space, complexity, n_episodes=n)
    assert "\n" not in str(info.value)


def test_compute_gap_takes_one_negatives_string(release_space, complexity):
    ds = bc.compute_gap(release_space, complexity, negatives="hard", n_episodes=2)
    assert ds.negatives.values.tolist() == ["hard"]


@pytest.mark.parametrize("kwargs, needle", [
    (dict(negatives=()), "negatives is empty"),
    (dict(negatives="medium"), "got 'medium'"),
    (dict(negatives=("hard", "hard")), "twice"),
    (dict(seed=-1), "seed must be a whole number >= 0, got -1"),
    (dict(query_negatives="hrad"), "query_negatives"),
])
def test_compute_gap_refuses_bad_input(release_space, complexity, kwargs, needle):
    with pytest.raises(BayesConceptsError, match=needle):
        bc.compute_gap(release_space, complexity, n_episodes=2, **kwargs)


def test_compute_gap_refuses_no_splits(release_space):
    with pytest.raises(BayesConceptsError, match="no splits to score"):
        bc.compute_gap(release_space, {}, n_episodes=2)


def _without_empty_release_splits(monkeypatch):
    """The fixture is too small for the release's extrinsic and intrinsic splits (no concept is
    held out): leave those two out of the protocol, as a bigger space would make them."""
    files = Protocol.spec_files
    monkeypatch.setattr(Protocol, "spec_files",
                        lambda self: [p for p in files(self) if p.stem not in ("extrinsic", "intrinsic")])


def test_splits_of_a_release_space_are_the_protocols(release_dir, workdir, capsys, monkeypatch):
    status, _, err = run(["splits", release_dir], capsys)  # the tiny fixture cannot make every split
    assert_one_line_error(status, err, "extrinsic.toml", "held-out side would be empty")
    _without_empty_release_splits(monkeypatch)
    status, out, err = run(["splits", release_dir], capsys)
    assert status == 0, err
    assert "complexity" in out and "binding_color" in out
    assert "splits of protocol curi-release" in out
    status, out, err = run(["splits", release_dir, "--json"], capsys)
    assert status == 0, err
    assert "complexity" in json.loads(out)["splits"]


def test_audit_of_a_release_space_uses_the_protocols_splits(release_dir, workdir, capsys):
    status, out, err = run(["audit", release_dir, "--split", "complexity", "--episodes", "4"], capsys)
    assert status == 0, err
    assert "1 split(s) of protocol curi-release" in out
    assert "0 split(s)" not in out


def test_gap_of_a_release_space_asks_for_the_protocol(release_dir, workdir, capsys):
    status, _, err = run(["gap", release_dir, "--episodes", "3"], capsys)
    assert_one_line_error(status, err, "--protocol curi-release", str(release_dir))


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_eval_on_an_empty_scene_file(content, json_flag, workdir, capsys):
    (workdir / "none.jsonl").write_text(content)
    status, out, err = run(["eval", PROGRAM, "--scenes", "none.jsonl", *json_flag], capsys)
    assert_one_line_error(status, err, "--scenes none.jsonl", "no scenes")
    assert out == ""


def test_posterior_with_an_empty_query_file(release_dir, workdir, capsys):
    scene = {"objects": [{"color": "red", "shape": "cube", "material": "metal", "size": "large", "x": 3,
                          "y": 5}], "label": 1}
    (workdir / "support.jsonl").write_text(json.dumps(scene) + "\n")
    (workdir / "query.jsonl").write_text("")
    status, out, err = run(["posterior", release_dir, "--support", "support.jsonl", "--query", "query.jsonl"],
                           capsys)
    assert_one_line_error(status, err, "--query query.jsonl", "no scenes")


# ------------------------------------------------- 3. messages that say what was wrong
@pytest.mark.parametrize("argv", [
    ["gap", "SPACE", "--seed", "-1"],
    ["sample", "--seed", "-1"],
    ["episodes", "SPACE", "--split", "s", "--negatives", "hard", "--n", "1", "--out", "e.npz", "--seed", "-1"],
    ["posterior", "SPACE", "--support", "s.jsonl", "--seed", "-1"],
    ["space", "build", "OUT", "--seed", "-1"],
    ["train", "SPACE", "--split", "s", "--learner", "schema-relnet", "--out", "M", "--seed", "-1"],
])
def test_negative_seed_names_the_option(argv, workdir, capsys):
    status, _, err = run(argv, capsys)
    assert_one_line_error(status, err, "--seed", "-1")


@pytest.fixture(scope="module")
def results(release_space, complexity):
    return bc.compute_gap(release_space, complexity, negatives="hard", n_episodes=2)


def test_save_results_creates_missing_folders(results, workdir):
    path = save_results(results, "missing/deeper/x.nc")
    assert path == Path("missing/deeper/x.nc") and path.is_file()
    assert sorted(p.name for p in (workdir / "missing" / "deeper").iterdir()) == ["x.nc"]
    assert load_results(path).attrs["seed"] == 0


def test_save_results_under_a_file_or_onto_a_folder(results, workdir):
    (workdir / "afile").write_text("x")
    with pytest.raises(ResultsError, match="afile is a file, not a folder"):
        save_results(results, "afile/x.nc")
    (workdir / "adir").mkdir()
    with pytest.raises(ResultsError, match="adir: is a directory"):
        save_results(results, "adir")
    assert (workdir / "afile").read_text() == "x" and not any((workdir / "adir").iterdir())
