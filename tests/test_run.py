"""One run, settled in the library: each command and its Python twin on the same arguments give
the same answer, bit for bit (``bayes_concepts.run``).

Every command (``gap``, ``ladder``, ``audit``, ``splits``, ``train --steps 2``, ``splits search
--iterations 2``) is run from the command line and through :func:`bayes_concepts.resolve` on the
same space and arguments, on four kinds of space: a CURI-grammar space, a space built with CURI's
release grammar (computed as protocol ``curi-release`` by both, without being asked), a clevr
space (CLOSURE's families through ``--protocol closure``) and a pair space.  Results files are
compared variable by variable and attribute by attribute (the wall times aside); printed tables
are compared as text; a refusal must be the same one line on both sides.
"""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

import bayes_concepts as bc
from bayes_concepts.errors import BayesConceptsError
from conftest import run

FIXTURES = Path(__file__).parent / "fixtures" / "saved_spaces"

#: per kind of space: (its folder, or the name of a fixture giving it), the command-line
#: arguments choosing the split, and the same as resolve()'s keyword arguments
SPACES = {
    "curi": (FIXTURES / "program", ["--split", "concept_iid"], dict(splits=["concept_iid"])),
    "release": (FIXTURES / "curi_release", ["--split", "complexity"], dict(splits=["complexity"])),
    "clevr": ("clevr_space_dir", ["--protocol", "closure", "--split", "and_mat_spa"],
              dict(protocol="closure", splits=["and_mat_spa"])),
    "pairs": (FIXTURES / "pairs", ["--split", "unseen_pairs"], dict(splits=["unseen_pairs"])),
}
REFUSED = []  # (command, message) of the twins that both refused
VOLATILE = {"seconds", "wall_s", "elapsed_s", "created"}


@pytest.fixture(params=sorted(SPACES))
def case(request):
    where, cli_split, api_split = SPACES[request.param]
    path = request.getfixturevalue(where) if isinstance(where, str) else where
    return request.param, path, cli_split, api_split


def _same_results(a, b):
    """Two results Datasets hold the same numbers and attributes (bit for bit; wall times aside)."""
    assert sorted(a.data_vars) == sorted(b.data_vars)
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)
    for name in a.coords:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)
    keys = (set(a.attrs) | set(b.attrs)) - VOLATILE
    assert {k: a.attrs.get(k) for k in keys} == {k: b.attrs.get(k) for k in keys}


def _twin(cli, api, capsys):
    """Run the command line ``cli`` and the Python ``api()``; both succeed (returns stdout and
    api's value) or both refuse with the same message."""
    status, out, err = run(cli, capsys)
    try:
        value = api()
    except BayesConceptsError as exc:
        assert status == 2 and str(exc) in err, (cli, err, str(exc))
        REFUSED.append((cli[0], str(exc)))
        return None, None
    assert status == 0, (cli, err)
    return out, value


def test_gap(case, tmp_path, capsys):
    kind, path, cli_split, api_split = case
    out = tmp_path / "gap.nc"
    printed, ds = _twin(["gap", path, *cli_split, "--episodes", "6", "--negatives", "hard", "--out", out],
                        lambda: bc.resolve(bc.load_space(path), **api_split).gap(("hard",), 6, 0), capsys)
    if ds is not None:
        _same_results(bc.load_results(out), ds)
        assert bc.format_table(bc.summarise(ds)) in printed


def test_ladder(case, tmp_path, capsys):
    kind, path, cli_split, api_split = case
    out = tmp_path / "ladder.nc"
    rungs = ["memoriser", "atom", "strong"]

    def api():
        from bayes_concepts.ladder import parse_rungs
        run_ = bc.resolve(bc.load_space(path), **api_split)
        return run_.ladder(parse_rungs(rungs, None, None, run_.space), ("hard",), 6, 0)
    printed, ds = _twin(["ladder", path, *cli_split, "--rungs", *rungs, "--episodes", "6", "--negatives", "hard",
                         "--published", "none", "--n-boot", "10", "--out", out], api, capsys)
    if ds is not None:
        _same_results(bc.load_results(out), ds)


def test_audit(case, capsys):
    kind, path, cli_split, api_split = case
    printed, reports = _twin(["audit", path, *cli_split, "--episodes", "6"],
                             lambda: bc.resolve(bc.load_space(path), what="audit", **api_split).audit(6, 0), capsys)
    if reports is not None:
        assert bc.format_audit(reports[0]) in printed


def test_splits(case, capsys):
    kind, path, cli_split, api_split = case
    protocol = [a for a in cli_split[:2] if cli_split[0] == "--protocol"]
    api = {k: v for k, v in api_split.items() if k == "protocol"}
    if kind == "release":  # the tiny fixture cannot make the release's extrinsic split: both refuse alike
        pass
    from bayes_concepts.splits import splits_json
    printed, run_ = _twin(["splits", path, *protocol, "--json"],
                          lambda: bc.resolve(bc.load_space(path), what="list", **api), capsys)
    if run_ is not None:
        assert json.loads(printed) == json.loads(json.dumps(splits_json(run_.space, run_.splits)))


def _tensors(path) -> tuple:
    """A safetensors file's tensors (their table and bytes), its free-text metadata aside."""
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    table = json.loads(raw[8:8 + n])
    table.pop("__metadata__", None)
    return table, raw[8 + n:]


def test_train(case, tmp_path, capsys):
    kind, path, cli_split, api_split = case
    from bayes_concepts.learners import ProtoNetLearner
    from bayes_concepts.learners.profiles import resolve_profile
    from bayes_concepts.learners.protonet import parse_architecture
    common = ["--learner", "schema-average", "--steps", "2", "--val-episodes", "8", "--seed", "0", "--threads", "1"]

    def api():
        run_ = bc.resolve(bc.load_space(path), **api_split)
        name = api_split["splits"][0]
        encoder, pooling = parse_architecture("schema-average")
        profiled, enc, pool = resolve_profile("cpu", encoder, pooling, explicit={"batch_episodes": None, "lr": None})
        learner = ProtoNetLearner(run_.space, encoder, pooling, alpha=0.0, seed=0, precision="auto", name=None,
                                  encoder_options=enc, pooling_options=pool)
        run_.train(name, learner, out=tmp_path / "api", resume=False, started=None, negatives="hard", val_every=None,
                   val_episodes=8, patience=10, threads=1, max_steps=2, budget_s=None, **profiled)
        return tmp_path / "api"
    printed, api_dir = _twin(["train", path, *cli_split, *common, "--out", tmp_path / "cli"], api, capsys)
    if api_dir is not None:
        a, b = (json.loads((d / "card.json").read_text()) for d in (tmp_path / "cli", api_dir))
        for card in (a, b):
            card.get("training", {}).pop("wall_s", None)
        assert _tensors(tmp_path / "cli" / "model.safetensors") == _tensors(api_dir / "model.safetensors")
        assert a["training"]["split"] == b["training"]["split"] and a["training"]["steps"] == b["training"]["steps"]


def test_split_search(case, tmp_path, capsys):
    kind, path, cli_split, api_split = case
    out = tmp_path / "found.toml"
    knobs = dict(test_share=0.2, share_tolerance=0.1, constraints=["atom-divergence<=1"], seed=0, iterations=2,
                 pool_episodes=100, method="anneal", name="searched")
    printed, result = _twin(
        ["splits", "search", path, "--objective", "compound-divergence", "--iterations", "2", "--test-share", "0.2",
         "--share-tolerance", "0.1", "--constraint", "atom-divergence<=1", "--pool-episodes", "100",
         "--episodes", "6", "--out", out],
        lambda: bc.resolve(bc.load_space(path), splits={}).search_split("compound-divergence", **knobs), capsys)
    if result is not None:
        written = tomllib.loads(out.read_text())
        assert written == json.loads(json.dumps(result.spec))


def test_the_twins_ran():
    """Only listing every split of the tiny CURI-grammar fixtures is refused (their extrinsic
    split holds no concept), and both sides refused it with the same line; everything else ran."""
    assert {command for command, _ in REFUSED} <= {"splits"}


@pytest.mark.parametrize("argv", [
    ["gap", "--split", "complexity", "--episodes", "3", "--negatives", "hard"],
    ["ladder", "--split", "complexity", "--episodes", "3", "--negatives", "hard", "--rungs", "memoriser", "strong",
     "--published", "none", "--n-boot", "10"],
    ["audit", "--split", "complexity", "--episodes", "3"],
])
def test_a_release_grammar_space_is_computed_as_curi_release_by_every_command(argv, capsys):
    """One behaviour on a space built with CURI's release grammar: the protocol's splits *and*
    its oracle settings (audit included), said in the output."""
    status, out, err = run([argv[0], SPACES["release"][0], *argv[1:]], capsys)
    assert status == 0, err
    assert "protocol curi-release (" in out and "built with CURI's release grammar" in out
    assert '"likelihood": "size_release"' in out  # the protocol's oracle settings, not the options' defaults


def test_the_library_functions_take_a_run():
    """compute_gap, ladder_profile and audit_splits take a Run as they take a space, and refuse
    what the Run settles itself given beside it."""
    from bayes_concepts.ladder import ladder_profile
    from bayes_concepts.report import audit_splits
    run_ = bc.resolve(SPACES["release"][0], splits=["complexity"])
    _same_results(bc.compute_gap(run_, negatives="hard", n_episodes=4), run_.gap("hard", 4))
    _same_results(ladder_profile(run_, rungs=["memoriser", "strong"], negatives="hard", n_episodes=4),
                  run_.ladder(["memoriser", "strong"], "hard", 4))
    assert bc.format_audit(audit_splits(run_, n_episodes=4)[0]) == bc.format_audit(run_.audit(4)[0])
    with pytest.raises(BayesConceptsError, match="settings: a Run settles these itself"):
        bc.compute_gap(run_, settings=bc.OracleSettings(), n_episodes=4)
