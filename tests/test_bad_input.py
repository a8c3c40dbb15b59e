"""Bad input on the command line, as a new user would give it: every case exits with status
2 and one line on stderr naming the option, file or token, with no traceback, leaves no file
behind and deletes nothing the toolkit did not write.  Also: interrupted saves (killed at
any step, fresh and --force replacements) leave nothing that loads and nothing that blocks
the next build; `space info` prints the one manifest hash results and episodes record.

Commands run in-process through ``bayes_concepts.cli.main`` in a fresh working directory
(an exception would fail the test); the cases that could hang, and the broken pipe, run
as subprocesses with a timeout.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from bayes_concepts.cli import main
from bayes_concepts.engine import store
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.engine.store import UNFINISHED, SpaceError
from bayes_concepts.episodes import Episodes
from bayes_concepts.errors import BayesConceptsError
from bayes_concepts.lot.program import MAX_PROGRAM_NESTING, MAX_PROGRAM_TOKENS
from bayes_concepts.results import load_results
from conftest import assert_one_line_error, run

ENV = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
RED = {"color": "red", "shape": "cube", "material": "metal", "size": "large", "x": 3, "y": 5}
BLUE = dict(RED, color="blue")
TINY = dict(samples=2_000, scenes=1_000)


# ------------------------------------------------------------------------------ helpers
def snapshot(root: Path) -> dict:
    """Every path under ``root`` with the sha256 of its content (None for directories)."""
    out = {}
    for p in sorted(root.rglob("*")):
        out[str(p.relative_to(root))] = None if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out



def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def other_space_dir(tmp_path_factory):
    """A second saved space (another seed): episodes of the shared space do not belong to it."""
    path = tmp_path_factory.mktemp("other") / "other"
    HypothesisSpace.build(**TINY, seed=1).save(path)
    return path


@pytest.fixture(scope="module")
def episodes_file(small_space_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("eps") / "eps.npz"
    assert main(["episodes", str(small_space_dir), "--split", "counting", "--negatives", "hard", "--n", "5",
                 "--out", str(path)]) == 0
    return path


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A fresh current directory; the test asserts that bad input leaves it unchanged."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---------------------------------------------------------------- 1. data loss: never delete
def test_demo_refuses_a_directory_that_is_not_a_space(workdir, capsys):
    (workdir / "mydir" / "sub").mkdir(parents=True)
    (workdir / "mydir" / "notes.txt").write_text("x\n")
    before = snapshot(workdir)
    status, _, err = run(["demo", "--space", "mydir", "--episodes", "10"], capsys)
    assert_one_line_error(status, err, "mydir", "notes.txt", "not a hypothesis space")
    assert snapshot(workdir) == before


def test_space_build_force_refuses_a_directory_that_is_not_a_space(workdir, capsys):
    (workdir / "mydir" / "sub").mkdir(parents=True)
    (workdir / "mydir" / "notes.txt").write_text("x\n")
    before = snapshot(workdir)
    status, _, err = run(["space", "build", "mydir", "--samples", "2000", "--scenes", "1000", "--force"], capsys)
    assert_one_line_error(status, err, "mydir", "notes.txt")
    assert snapshot(workdir) == before


def test_force_refuses_a_space_holding_other_files(small_space, workdir, capsys):
    dataclasses.replace(small_space).save(workdir / "sp")
    (workdir / "sp" / "my_notes.md").write_text("mine\n")
    before = snapshot(workdir)
    status, _, err = run(["space", "build", "sp", "--samples", "2000", "--scenes", "1000", "--force"], capsys)
    assert_one_line_error(status, err, "sp", "my_notes.md")
    assert snapshot(workdir) == before
    with pytest.raises(SpaceError, match="my_notes.md"):
        dataclasses.replace(small_space).save(workdir / "sp", overwrite=True)
    assert snapshot(workdir) == before


@pytest.mark.parametrize("what", ["file", "foreign partial", "foreign old"])
def test_save_refuses_files_and_foreign_sidecars(small_space, workdir, what):
    if what == "file":
        (workdir / "out").write_text("a file, not a directory\n")
    else:
        side = workdir / ("out.partial" if what == "foreign partial" else "out.old")
        side.mkdir()
        (side / "keep.txt").write_text("mine\n")
    before = snapshot(workdir)
    with pytest.raises(SpaceError, match="out"):
        dataclasses.replace(small_space).save(workdir / "out", overwrite=True)
    assert snapshot(workdir) == before


def test_build_into_an_empty_directory_and_replace_a_space(small_space, workdir, capsys):
    (workdir / "empty").mkdir()
    status, _, err = run(["space", "build", "empty", "--samples", "2000", "--scenes", "1000", "--quiet"], capsys)
    assert status == 0, err
    first = HypothesisSpace.load(workdir / "empty")
    status, _, err = run(["space", "build", "empty", "--samples", "2000", "--scenes", "1000", "--seed", "1",
                          "--force", "--quiet"], capsys)
    assert status == 0, err
    assert HypothesisSpace.load(workdir / "empty") != first
    assert sorted(p.name for p in workdir.iterdir()) == ["empty"]


# --------------------------------------------------------------------------------- 2. hangs
@pytest.mark.parametrize("argv, needle", [
    (["sample", "--n", "1", "--max-depth", "2"], "--max-depth 2"),
    (["space", "build", "X", "--preset", "demo", "--max-depth", "2"], "--max-depth 2"),
    (["sample", "--n", "1", "--max-depth", "40"], "--max-depth 40"),
])
def test_impossible_depth_is_an_error_at_once(argv, needle, tmp_path):
    t = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "bayes_concepts.cli", *argv], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=ENV)
    assert_one_line_error(proc.returncode, proc.stderr, needle)
    assert time.monotonic() - t < 60
    assert list(tmp_path.iterdir()) == []


def test_smallest_depth_named_in_the_error_works():
    from bayes_concepts.lot import curi_grammar, sample_programs
    from bayes_concepts.lot.sampler import check_max_depth
    with pytest.raises(BayesConceptsError, match="smallest max_depth that yields programs is 3"):
        check_max_depth(curi_grammar(), 2)
    assert len(sample_programs(50, max_depth=3, seed=0)) == 50


# ----------------------------------------------------------------------------- 3. tracebacks
@pytest.mark.parametrize("beta", ["nan", "inf", "-inf", "1e308"])
def test_gap_beta_out_of_range(beta, small_space_dir, workdir, capsys):
    status, _, err = run(["gap", small_space_dir, "--split", "counting", "--episodes", "20", "--beta", beta], capsys)
    assert_one_line_error(status, err, "--beta")
    assert list(workdir.iterdir()) == []


def test_empty_builds_are_refused_and_empty_spaces_summarised(small_space, workdir, capsys):
    status, _, err = run(["space", "build", "empty_space", "--preset", "demo", "--samples", "0"], capsys)
    assert_one_line_error(status, err, "--samples")
    status, _, err = run(["space", "info", "empty_space"], capsys)
    assert_one_line_error(status, err, "empty_space")
    # a build in which no concept survives writes nothing
    status, _, err = run(["space", "build", "tiny", "--samples", "5", "--scenes", "50", "--quiet"], capsys)
    last = err.splitlines()[-1]                 # after the build's stage summaries
    assert status == 2 and last.startswith("bayes-concepts: error: no concept survives") and "tiny" in last
    assert list(workdir.iterdir()) == []
    # a space with no concepts (from the API) is summarised, not a ZeroDivisionError
    empty = dataclasses.replace(small_space, programs=[], lengths=small_space.lengths[:0],
                                log_pcfg=small_space.log_pcfg[:0], counts=small_space.counts[:0],
                                synonym_classes=small_space.synonym_classes[:0],
                                signatures=np.asarray(small_space.signatures)[:0],
                                test_bank=dataclasses.replace(small_space.test_bank,
                                                              scene_ids=small_space.test_bank.scene_ids[:0],
                                                              drawn_for=small_space.test_bank.drawn_for[:0],
                                                              signatures=np.zeros((0, 0), np.uint64)))
    empty.save(workdir / "empty")
    status, out, err = run(["space", "info", "empty"], capsys)
    assert status == 0, err
    assert "0 concepts" in out
    status, out, _ = run(["space", "info", "empty", "--json"], capsys)
    assert json.loads(out)["concepts"] == 0


def long_and_chain(n_tokens: int) -> str:
    return "x color? red = " + " ".join(["x color? red = and"] * ((n_tokens - 5) // 5)) + " exists="


def test_explain_10000_tokens_and_eval_2500_token_chain(workdir, capsys):
    status, _, err = run(["explain", long_and_chain(10_005)], capsys)
    assert_one_line_error(status, err, "10,005 tokens", f"at most {MAX_PROGRAM_TOKENS}")
    assert len(err) < 600                      # the program is abbreviated, not printed whole
    scenes = write_jsonl(workdir / "s.jsonl", [{"objects": [RED]}])
    status, _, err = run(["eval", long_and_chain(2_505), "--scenes", scenes], capsys)
    assert_one_line_error(status, err, "2,505 tokens")
    deep = "x color? red = " + " ".join(["not"] * MAX_PROGRAM_NESTING) + " exists="
    status, _, err = run(["explain", deep], capsys)
    assert_one_line_error(status, err, "nested", str(MAX_PROGRAM_NESTING))


def test_programs_at_the_limits_work(workdir, capsys):
    """The longest and the deepest programs allowed go through every command that walks
    their trees (rendering, log-probability, execution) without a RecursionError."""
    deepest = "x color? red = " + " ".join(["not"] * (MAX_PROGRAM_NESTING - 4)) + " exists="
    longest = long_and_chain(MAX_PROGRAM_TOKENS)
    scenes = write_jsonl(workdir / "s.jsonl", [{"objects": [RED]}, {"objects": [BLUE]}])
    for program in (deepest, longest):
        status, out, err = run(["explain", "--json", program], capsys)
        assert status == 0, err
        assert json.loads(out)["length"] == len(program.split())
        status, out, err = run(["eval", program, "--scenes", scenes], capsys)
        assert status == 0, err
    assert out.split() == ["1", "0"]            # the and-chain of 'color(x) = red'


# ------------------------------------------------------------------------ 4. silent wrong answers
def test_episodes_show_checks_the_space(episodes_file, small_space_dir, other_space_dir, workdir, capsys):
    status, out, err = run(["episodes", "show", episodes_file, "3", "--space", small_space_dir], capsys)
    assert status == 0, err
    status, _, err = run(["episodes", "show", episodes_file, "3", "--space", other_space_dir], capsys)
    assert_one_line_error(status, err, "eps.npz", "another space", str(other_space_dir))
    status, _, err = run(["episodes", "show", episodes_file, "99"], capsys)
    assert_one_line_error(status, err, "99", "out of range")
    status, _, err = run(["episodes", "show", episodes_file, "-1"], capsys)
    assert_one_line_error(status, err, "index")


def test_episodes_load_rejects_damaged_files(episodes_file, workdir):
    data = dict(np.load(episodes_file, allow_pickle=False))
    data["support_labels"] = data["support_labels"][:, :2]          # a shape that cannot be right
    np.savez(workdir / "bad.npz", **data)
    with pytest.raises(BayesConceptsError, match="support_labels"):
        Episodes.load(workdir / "bad.npz")
    (workdir / "zip.npz").write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(BayesConceptsError, match="zip.npz"):
        Episodes.load(workdir / "zip.npz")


def test_posterior_top_and_contradictory_support(small_space_dir, workdir, capsys):
    support = write_jsonl(workdir / "sup.jsonl", [dict(objects=[RED], label=1), dict(objects=[BLUE], label=0)])
    status, _, err = run(["posterior", small_space_dir, "--support", support, "--top", "-1"], capsys)
    assert_one_line_error(status, err, "--top")
    status, out, err = run(["posterior", small_space_dir, "--support", support, "--top", "0", "--json"], capsys)
    assert status == 0, err
    listed = json.loads(out)["strong"]
    assert len(listed["posterior"]) == listed["n_concepts"]          # --top 0: every concept with p > 0
    contra = write_jsonl(workdir / "contra.jsonl", [dict(objects=[RED, BLUE], label=1),
                                                    dict(objects=[BLUE, RED], label=0)])
    status, _, err = run(["posterior", small_space_dir, "--support", contra], capsys)
    assert_one_line_error(status, err, "contra.jsonl lines 1 and 2", "labelled 1 and 0", "--likelihood noisy")
    status, out, err = run(["posterior", small_space_dir, "--support", contra, "--likelihood", "noisy"], capsys)
    assert status == 0 and "note" in err and "contra.jsonl" in err


def test_a_spec_named_like_a_curi_split_is_an_error(small_space_dir, workdir, capsys):
    spec = workdir / "my_counting.toml"
    spec.write_text('name = "counting"\nkind = "held_out"\n[held_out]\ntokens = ["cube"]\n')
    status, _, err = run(["splits", small_space_dir, "--spec", spec], capsys)
    assert_one_line_error(status, err, "my_counting.toml", "'counting'")
    status, _, err = run(["gap", small_space_dir, "--split", "counting", "--spec", spec, "--episodes", "5"], capsys)
    assert_one_line_error(status, err, "my_counting.toml")


def test_space_show_verifies_checksums(small_space_dir, workdir, capsys):
    copy = workdir / "copy"
    shutil.copytree(small_space_dir, copy)
    sig = copy / "signatures.npy"
    data = bytearray(sig.read_bytes())
    data[-1] ^= 0xFF                                   # one flipped byte in the data, size unchanged
    sig.write_bytes(bytes(data))
    status, _, err = run(["space", "show", copy, "0"], capsys)
    assert_one_line_error(status, err, "signatures.npy", "checksum")
    status, out, err = run(["space", "show", copy, "0", "--no-verify"], capsys)
    assert status == 0 and "not verified" in err and "program" in out
    status, _, err = run(["space", "show", small_space_dir, "-1"], capsys)
    assert_one_line_error(status, err, "concept id -1")


# -------------------------------------------------------------------------------- 5. outputs
def strict_json(text: str):
    """json.loads that refuses NaN and infinities (not JSON)."""
    def bad(name):
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=bad)


def test_gap_rejects_zero_episodes_and_json_has_settings(small_space_dir, workdir, capsys):
    status, out, err = run(["gap", small_space_dir, "--split", "counting", "--episodes", "0", "--json"], capsys)
    assert_one_line_error(status, err, "--episodes")
    assert out == ""
    status, out, err = run(["gap", small_space_dir, "--split", "counting", "--episodes", "20", "--json",
                            "--beta", "0.3", "--seed", "7"], capsys)
    assert status == 0, err
    doc = strict_json(out)
    assert doc["seed"] == 7 and doc["settings"]["beta"] == 0.3 and doc["episodes_per_cell"] == 20
    assert doc["space_manifest_sha256"] == HypothesisSpace.load(small_space_dir).manifest_sha256()
    assert [r["split"] for r in doc["results"]] == ["counting", "counting"]


@pytest.mark.parametrize("target, needle", [("a_dir", "is a directory"), ("a_file/x.nc", "a_file is not a directory")])
def test_output_paths_are_checked_before_computing(target, needle, small_space_dir, workdir, capsys):
    """(A missing folder is no error for gap --out and demo --out: they create it, as space build does.)"""
    (workdir / "a_dir").mkdir()
    (workdir / "a_file").write_text("x")
    before = snapshot(workdir)
    t = time.monotonic()
    status, _, err = run(["gap", small_space_dir, "--split", "counting", "--episodes", "20000", "--out", target],
                         capsys)
    assert_one_line_error(status, err, "--out", target, needle)
    assert time.monotonic() - t < 10                    # refused before 2 x 20,000 episodes
    assert snapshot(workdir) == before                  # no a_dir.partial
    status, _, err = run(["episodes", small_space_dir, "--split", "counting", "--negatives", "hard", "--n", "5",
                          "--out", target], capsys)
    assert_one_line_error(status, err, "--out", needle)
    status, _, err = run(["demo", "--space", "spaces/demo", "--out", target], capsys)
    assert_one_line_error(status, err, "--out", needle)
    assert snapshot(workdir) == before


def test_unwritable_output_directory(small_space_dir, workdir, capsys):
    if os.geteuid() == 0:
        pytest.skip("root can write anywhere")
    locked = workdir / "locked"
    locked.mkdir(mode=0o500)
    status, _, err = run(["gap", small_space_dir, "--split", "counting", "--out", locked / "x.nc"], capsys)
    assert_one_line_error(status, err, "permission denied")


def test_broken_pipe_ends_quietly(small_space_dir):
    """Output into a pipe whose reader has gone (``| head -c 10``): status 0, nothing on stderr."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "bayes_concepts.cli", "splits", str(small_space_dir), "--json"],
                              stdout=write, stderr=subprocess.PIPE, timeout=120, env=ENV)
    finally:
        os.close(write)
    assert proc.returncode == 0 and proc.stderr == b""


def test_one_manifest_hash(small_space_dir, episodes_file, workdir, capsys):
    space = HypothesisSpace.load(small_space_dir)
    sha = space.manifest_sha256()
    assert sha == hashlib.sha256((small_space_dir / "manifest.json").read_bytes()).hexdigest()
    assert sha == store.manifest_sha256(small_space_dir)
    status, out, _ = run(["space", "info", small_space_dir], capsys)
    assert status == 0 and f"manifest sha256 {sha}" in out
    status, out, _ = run(["space", "info", small_space_dir, "--json"], capsys)
    assert json.loads(out)["manifest_sha256"] == sha
    assert Episodes.load(episodes_file).meta["space"] == sha
    status, _, err = run(["gap", small_space_dir, "--split", "counting", "--episodes", "10", "--out", "r.nc",
                          "--negatives", "hard"], capsys)
    assert status == 0, err
    assert load_results(workdir / "r.nc").attrs["space_manifest_sha256"] == sha


def test_progress_lines_when_stderr_is_a_file(small_space_dir, tmp_path):
    with open(tmp_path / "log.txt", "w") as log:
        proc = subprocess.run([sys.executable, "-m", "bayes_concepts.cli", "gap", str(small_space_dir), "--split",
                               "counting", "--episodes", "20"], stdout=subprocess.PIPE, stderr=log, timeout=300,
                              env=ENV)
    assert proc.returncode == 0
    text = (tmp_path / "log.txt").read_text()
    assert "comp gap" in text and "\r" not in text


def test_every_option_has_help():
    from bayes_concepts.cli import build_parser
    parser = build_parser()
    missing = []

    def visit(p, name):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, subparser in action.choices.items():
                    visit(subparser, f"{name} {sub}")
            elif not action.help:
                missing.append(f"{name}: {'/'.join(action.option_strings) or action.dest}")
    visit(parser, "bayes-concepts")
    assert missing == []


# ------------------------------------------------- interrupted saves: killed at any step
class Crash(Exception):
    """Stands for SIGKILL: nothing after the crash point runs (the save has no cleanup code)."""


def _steps(monkeypatch, crash_at=None) -> list:
    """Count the file-system steps of a save (writes, fsyncs, renames, deletions) and raise
    :class:`Crash` before step ``crash_at``.  Returns the list of steps taken."""
    taken = []

    def wrap(owner, name):
        real = getattr(owner, name)

        def step(*args, **kw):
            if crash_at is not None and len(taken) == crash_at:
                raise Crash(f"killed before {name} {args[0] if args else ''}")
            taken.append(f"{name} {Path(str(args[0])).name if args else ''}")
            return real(*args, **kw)
        monkeypatch.setattr(owner, name, step)

    for name in ("_fsync_write", "_save_npy", "_fsync_dir"):
        wrap(store, name)
    wrap(store.shutil, "rmtree")
    for name in ("rename", "unlink", "rmdir", "mkdir"):
        wrap(pathlib.Path, name)
    return taken


def _state(out: Path, new, old) -> str:
    """'new', 'old' or 'none': what ``out`` loads as; the sidecars must never load."""
    for side in (out.with_name(out.name + ".partial"), out.with_name(out.name + ".old")):
        if side.exists():
            with pytest.raises(SpaceError):
                HypothesisSpace.load(side)
    if not out.exists():
        return "none"
    try:
        loaded = HypothesisSpace.load(out)
    except SpaceError:
        return "none"
    assert loaded in (new, old)
    return "new" if loaded == new else "old"


@pytest.fixture(scope="module")
def tiny_spaces():
    return HypothesisSpace.build(**TINY, seed=0), HypothesisSpace.build(**TINY, seed=1)


def _count_steps(monkeypatch, tmp_path, save) -> int:
    taken = _steps(monkeypatch)
    save(tmp_path / "count")
    monkeypatch.undo()
    return len(taken)


@pytest.mark.parametrize("replace", [False, True], ids=["fresh", "force"])
def test_killed_at_every_step_of_a_save(tiny_spaces, tmp_path, monkeypatch, replace):
    old, new = tiny_spaces
    if replace:
        dataclasses.replace(old).save(tmp_path / "count")
    n = _count_steps(monkeypatch, tmp_path, lambda p: dataclasses.replace(new).save(p, overwrite=replace))
    assert n >= 15                          # directories, 7 data files, manifest, renames, fsyncs, marker
    seen = set()
    for k in range(n + 1):
        root = tmp_path / f"k{k}"
        root.mkdir()
        out = root / "out"
        if replace:
            dataclasses.replace(old).save(out)
        _steps(monkeypatch, crash_at=k)
        try:
            dataclasses.replace(new).save(out, overwrite=replace)
            assert k == n
        except Crash:
            assert k < n
        monkeypatch.undo()
        state = _state(out, new, old if replace else None)
        seen.add(state)
        # the next build -- the same command -- succeeds and cleans up after the killed one
        dataclasses.replace(new).save(out, overwrite=replace or state == "new")
        assert HypothesisSpace.load(out) == new
        assert sorted(p.name for p in root.iterdir()) == ["out"]
        assert not (out / UNFINISHED).exists()
    assert seen == ({"old", "none", "new"} if replace else {"none", "new"})


KILLABLE = textwrap.dedent("""
    import pathlib, sys, time
    from pathlib import Path
    real = pathlib.Path.rename
    def rename(self, target):
        result = real(self, target)
        if str(target).endswith(".old"):        # mid-replacement: the old space moved aside
            Path(sys.argv[1]).write_text("ready")
            time.sleep(600)
        return result
    pathlib.Path.rename = rename
    from bayes_concepts.cli import main
    sys.exit(main(sys.argv[2:]))
""")


def test_sigkill_during_force_replacement(tmp_path):
    out, ready = tmp_path / "OUT", tmp_path / "ready"
    args = ["space", "build", str(out), "--samples", "2000", "--scenes", "1000", "--quiet"]
    first = subprocess.run([sys.executable, "-m", "bayes_concepts.cli", *args], capture_output=True, env=ENV,
                           timeout=300)
    assert first.returncode == 0, first.stderr.decode()
    again = [*args, "--seed", "1", "--force"]
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE, str(ready), *again], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=ENV)
    try:
        deadline = time.monotonic() + 240
        while not ready.exists():
            assert proc.poll() is None, f"build exited early: {proc.stderr.read().decode()}"
            assert time.monotonic() < deadline, "build never reached the replacement"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    for d in (out, tmp_path / "OUT.partial", tmp_path / "OUT.old"):
        if d.exists():
            with pytest.raises(SpaceError):
                HypothesisSpace.load(d)
    done = subprocess.run([sys.executable, "-m", "bayes_concepts.cli", *again], capture_output=True, env=ENV,
                          timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["OUT", "ready"]
    assert HypothesisSpace.load(out) == HypothesisSpace.build(**TINY, seed=1)
