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
from bayes_concepts import cli, options, run_args
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
    assert set(run_args.PROTOCOL_FIXES) == fixed
    for dest in fixed:
        assert isinstance(actions[dest], options.Given), dest
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
def test_protocol_options_given_explicitly_are_overrides(release_space, option, value, key, field):
    args = cli.build_parser().parse_args(["gap", "SPACE", "--protocol", "curi-release", option, value])
    run = run_args.resolve_args(args, splits=["complexity"], space=release_space)
    protocol, overrides = run.protocol, run.overrides
    assert set(overrides) == {key}
    if field:
        assert str(getattr(overrides["settings"], field)) == value
        others = {f.name for f in dataclasses.fields(OracleSettings)} - {field}
        assert all(getattr(overrides["settings"], f) == getattr(protocol.settings, f) for f in others)
    else:
        assert overrides[key] == value
    assert run_args.override_text(args, run) == f"protocol curi-release overridden by {option} {value}"


def test_protocol_without_options_has_no_overrides(release_space):
    args = cli.build_parser().parse_args(["gap", "SPACE", "--protocol", "curi-release"])
    run = run_args.resolve_args(args, splits=["complexity"], space=release_space)
    assert run.overrides == {} and run_args.override_text(args, run) == "protocol curi-release"


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


def test_gap_of_a_release_space_is_the_protocols(release_dir, workdir, capsys):
    """gap, like splits, audit and ladder, computes a release-grammar space as protocol
    curi-release (its splits and oracle settings) and says so."""
    args = ["gap", release_dir, "--split", "complexity", "--episodes", "3"]
    status, out, err = run(args, capsys)
    assert status == 0, err
    assert "protocol curi-release (" in out and "built with CURI's release grammar" in out
    chosen = json.loads(run([*args, "--json"], capsys)[1])
    given = json.loads(run([*args, "--protocol", "curi-release", "--json"], capsys)[1])
    assert chosen["results"] == given["results"] and chosen["settings"] == given["settings"]
    assert chosen["settings"]["likelihood"] == "size_release"


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


# =========================================== the second list, items 1, 5, 6, 8 and 9 (more)
import os
import signal
import subprocess
import sys
import threading
import time
import textwrap

from bayes_concepts.engine import store
from bayes_concepts.scale import MemoryLimitError, check_memory, format_bytes

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
#: Runs the command line in a child whose address space is capped at 4 GB (so that a request
#: that does allocate what it asks for fails quickly instead of filling the machine), then
#: prints its peak resident memory in kB on stderr's last line: VmHWM of /proc/self/status,
#: the peak of this program's own memory (getrusage's ru_maxrss also counts the resident set
#: of the pytest process it was forked from, hundreds of MB once the fixtures are built).
PEAK = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    from bayes_concepts.cli import main

    def peak_kb():
        try:
            with open("/proc/self/status") as fh:
                return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
        except (OSError, StopIteration):
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        status = main(sys.argv[1:])
    finally:
        sys.stdout.flush()
        print(f"peak_kb {peak_kb()}", file=sys.stderr)
    sys.exit(status)
""")


def _run_measured(argv, cwd, timeout=300):
    """``(status, stdout, stderr without the peak line, peak MB)`` of the CLI in a capped child."""
    proc = subprocess.run([sys.executable, "-c", PEAK, *map(str, argv)], capture_output=True, text=True, env=ENV,
                          cwd=cwd, timeout=timeout)
    *err, peak = proc.stderr.splitlines(keepends=True)
    assert peak.startswith("peak_kb "), proc.stderr
    return proc.returncode, proc.stdout, "".join(err), int(peak.split()[1]) / 1024


# ----------------------------------------------------- item 1: memory, estimated up front
@pytest.mark.parametrize("argv, option", [
    (["gap", "{space}", "--split", "counting", "--episodes", "99999999999999999999"], "--episodes"),
    (["gap", "{space}", "--split", "counting", "--negatives", "hard", "--episodes", "100000000"], "--episodes"),
    (["audit", "{space}", "--split", "counting", "--episodes", "100000000"], "--episodes"),
    (["demo", "--space", "{space}", "--episodes", "100000000"], "--episodes"),
    (["episodes", "{space}", "--split", "counting", "--negatives", "hard", "--n", "10000000000", "--out",
      "e.npz"], "--n"),
])
def test_a_request_that_cannot_fit_is_refused_up_front(argv, option, small_space_dir, tmp_path):
    argv = [a.replace("{space}", str(small_space_dir)) for a in argv]
    status, out, err, peak = _run_measured(argv, tmp_path)
    assert_one_line_error(status, err, f"{option} {argv[argv.index(option) + 1]}", "needs about", "available")
    # The refusal comes before numba, scipy and xarray are imported (the parser reads the
    # registries' names lazily): ~20 MB, where the old behaviour grew to 22 GB.
    assert peak < 200, f"a refused request peaked at {peak:.0f} MB"
    assert list(tmp_path.iterdir()) == []


def test_check_memory_names_the_estimate():
    check_memory(10, "--n 1", available=100)
    with pytest.raises(MemoryLimitError, match=r"^--n 5: needs about 2 GB of memory \(x\), more than the 1 GB "
                                               r"available; fewer$"):
        check_memory(2e9, "--n 5", "fewer", "x", available=1e9)
    assert format_bytes(2.5e6) == "2.5 MB" and format_bytes(12) == "12 bytes"


@pytest.mark.parametrize("max_objects", ["1000000", "100000000"])
def test_eval_cost_follows_the_scenes_not_max_objects(max_objects, tmp_path):
    scene = {"objects": [{"color": "red", "shape": "cube", "material": "metal", "size": "large", "x": 3, "y": 5},
                         {"color": "blue", "shape": "cube", "material": "metal", "size": "large", "x": 1, "y": 1}]}
    (tmp_path / "s.jsonl").write_text((json.dumps(scene) + "\n") * 10)
    argv = ["eval", PROGRAM, "x color? blue = for-all=", "--scenes", "s.jsonl"]
    t = time.perf_counter()
    status, out, err, peak = _run_measured([*argv, "--max-objects", max_objects], tmp_path, timeout=120)
    seconds = time.perf_counter() - t
    assert status == 0, err
    status, default, _, base = _run_measured(argv, tmp_path, timeout=120)
    assert status == 0 and out == default == "1 0\n" * 10
    assert peak < base + 50, f"--max-objects {max_objects}: {peak:.0f} MB against {base:.0f} MB without it"
    assert seconds < 60


# ------------------------------------------- item 6: Ctrl-C at every stage, plugins that fail
def _interrupt(argv, after: str, delay: float, cwd, timeout=400):
    """Run the CLI, send SIGINT ``delay`` s after a stderr line containing ``after`` (at once
    for ""), return ``(status, stderr, whether the signal was sent)``."""
    proc = subprocess.Popen([sys.executable, "-m", "bayes_concepts.cli", *map(str, argv)], cwd=cwd, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines, sent = [], []

    def read():
        for line in proc.stderr:
            lines.append(line)
            if not sent and after in line:
                time.sleep(delay)
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)
                    sent.append(True)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        status = proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(10)
    return status, "".join(lines), bool(sent)


def _interrupted_cleanly(status, err, *needles):
    last = err.splitlines()[-1]
    assert status == 130, err
    assert "Traceback" not in err and "Error" not in err and "Fatal" not in err, err
    assert last.startswith("bayes-concepts: interrupted"), err
    for needle in needles:
        assert needle in last, (needle, last)


@pytest.mark.parametrize("stage", ["sampled", "rejection rules", "executed on"],
                         ids=["parse-reject", "executor", "signatures"])
def test_ctrl_c_during_space_build(stage, tmp_path):
    """SIGINT while the build runs the stage after ``stage``'s line (the executor stage runs
    numba kernels: an interrupt there was a SystemError or a segmentation fault): exit 130,
    one line, nothing written.  A build that ends before the signal is retried bigger."""
    for scenes in (200_000, 800_000, 2_000_000):
        status, err, sent = _interrupt(["space", "build", "OUT", "--samples", "200000", "--scenes", scenes],
                                       stage, 0.3, tmp_path)
        if sent and status != 0:
            break
        shutil.rmtree(tmp_path / "OUT", ignore_errors=True)
    else:
        pytest.skip("every build ended before the interrupt")
    _interrupted_cleanly(status, err, "nothing was written to OUT")
    assert list(tmp_path.iterdir()) == []


SAVE_INTERRUPTED = textwrap.dedent("""
    import os, signal, sys
    from bayes_concepts.engine import store
    real = store._save_npy
    def save(path, array):                   # Ctrl-C while the arrays are written
        real(path, array)
        os.kill(os.getpid(), signal.SIGINT)
    store._save_npy = save
    from bayes_concepts.cli import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.mark.parametrize("force", [False, True], ids=["fresh", "force"])
def test_ctrl_c_during_a_save_removes_the_partial_folder_and_says_so(force, tmp_path):
    args = ["space", "build", "OUT", "--samples", "2000", "--scenes", "1000", "--quiet"]
    if force:
        assert subprocess.run([sys.executable, "-m", "bayes_concepts.cli", *args], cwd=tmp_path, env=ENV,
                              capture_output=True).returncode == 0
        before = snapshot_of(tmp_path / "OUT")
    # SIGINT back to its default in the child: a suite started in the background (`make test &`) runs with
    # SIGINT ignored, which children inherit, and the toolkit leaves an ignored SIGINT ignored, as a shell does
    proc = subprocess.run([sys.executable, "-c", SAVE_INTERRUPTED, *args, "--seed", "1", *(["--force"] * force)],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    _interrupted_cleanly(proc.returncode, proc.stderr, "while saving OUT", "OUT.partial was removed",
                         "nothing was written to OUT")
    assert proc.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == (["OUT"] if force else [])
    if force:
        assert snapshot_of(tmp_path / "OUT") == before  # the space it was to replace is untouched


def snapshot_of(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_ctrl_c_during_train(small_space_dir, tmp_path):
    status, err, sent = _interrupt(["train", small_space_dir, "--split", "counting", "--learner", "schema-relnet",
                                    "--out", "M", "--steps", "100000", "--val-every", "20", "--val-episodes", "50",
                                    "--threads", "1"], "step", 2.0, tmp_path)
    assert sent, err
    _interrupted_cleanly(status, err, "while training", "M")
    assert "--resume" in err.splitlines()[-1] or "no checkpoint" in err.splitlines()[-1]
    assert not [p for p in (tmp_path / "M").iterdir() if p.name.endswith(".partial")]


@pytest.mark.parametrize("source, needle", [
    ("raise RuntimeError('boom')", "importing it raised RuntimeError at {module}.py line 1: boom"),
    ("from bayes_concepts.oracles import priors\npriors.register('length', lambda *a: 0)",
     "a prior named 'length' is already registered"),
    ("import no_such_module_anywhere", "No module named 'no_such_module_anywhere'"),
])
def test_a_plugin_that_fails_is_one_line_naming_it(source, needle, tmp_path, monkeypatch, capsys):
    module = f"plugin_{abs(hash(source)) % 10**8}"
    (tmp_path / f"{module}.py").write_text(source + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    status, _, err = run(["--plugin", module, "sample", "--n", "1"], capsys)
    assert_one_line_error(status, err, f"--plugin {module}", needle.format(module=module))


# -------------------------------------------- item 8: messages that say what was wrong
def test_the_loser_of_two_concurrent_saves_is_told(tmp_path, workdir, capsys):
    """A save running in another live process (its marker names its pid) is neither deleted
    nor overwritten: the second save says so in one line and writes nothing."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        partial = workdir / "race.partial"
        partial.mkdir()
        (partial / store.UNFINISHED).write_text(f"writing\npid {other.pid} host {__import__('socket').gethostname()}\n")
        (partial / "concepts.jsonl").write_text("{}\n")
        status, _, err = run(["space", "build", "race", "--samples", "2000", "--scenes", "1000", "--quiet",
                              "--force"], capsys)
        assert_one_line_error(status, err, f"pid {other.pid}", "is saving a space to race right now",
                              "nothing was written")
        assert (partial / "concepts.jsonl").read_text() == "{}\n" and not (workdir / "race").exists()
    finally:
        other.kill()
        other.wait()
    # once the other process is gone, its leftovers are an interrupted save's: the next build cleans up
    status, _, err = run(["space", "build", "race", "--samples", "2000", "--scenes", "1000", "--quiet"], capsys)
    assert status == 0, err
    assert sorted(p.name for p in workdir.iterdir()) == ["race"]


def test_a_save_whose_partial_folder_is_taken_over_says_so(workdir, capsys, monkeypatch):
    real = store._save_npy

    def save(path, array):  # another process deletes this save's .partial and starts its own
        real(path, array)
        if path.name == "signatures.npy":
            (path.parent / store.UNFINISHED).write_text("writing\npid 1 host elsewhere\n")
    monkeypatch.setattr(store, "_save_npy", save)
    status, _, err = run(["space", "build", "race", "--samples", "2000", "--scenes", "1000", "--quiet"], capsys)
    assert_one_line_error(status, err, "started saving a space to race at the same time", "nothing of this save")


@pytest.mark.parametrize("content, kind", [
    ('{"objects": []}\n', "JSON text"), (b"\x93NUMPY\x01\x00", "a NumPy .npy array"), ("", "an empty file")])
def test_episodes_show_of_a_file_of_another_type(content, kind, workdir, capsys):
    path = workdir / "file.jsonl"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    status, _, err = run(["episodes", "show", "file.jsonl", "0"], capsys)
    assert_one_line_error(status, err, "file.jsonl: not an episodes file", kind)
    assert "allow_pickle" not in err


# ------------------------------------------------------------------- item 9: consistency
def test_gap_out_creates_missing_folders(release_dir, workdir, capsys):
    status, _, err = run(["gap", release_dir, "--protocol", "curi-release", *GAP, "--out", "new/deeper/res.nc"],
                         capsys)
    assert status == 0, err
    assert (workdir / "new" / "deeper" / "res.nc").is_file()


def test_gap_out_under_a_file_is_refused(release_dir, workdir, capsys):
    (workdir / "afile").write_text("x")
    status, _, err = run(["gap", release_dir, "--protocol", "curi-release", *GAP, "--out", "afile/res.nc"], capsys)
    assert_one_line_error(status, err, "--out afile/res.nc", "afile is not a directory")


@pytest.mark.parametrize("extra, needle", [
    (["--threads", "0"], "--threads: must be a whole number >= 1, got 0"),
    (["--threads", "100000"], "--threads 100000: more than the"),
])
def test_train_threads_out_of_range(extra, needle, workdir, capsys):
    status, _, err = run(["train", "SPACE", "--split", "s", "--learner", "schema-relnet", "--out", "M", *extra],
                         capsys)
    assert_one_line_error(status, err, needle)
    assert list(workdir.iterdir()) == []


def test_train_out_holding_the_users_files_is_refused(workdir, capsys):
    (workdir / "M").mkdir()
    (workdir / "M" / "notes.txt").write_text("mine")
    status, _, err = run(["train", "SPACE", "--split", "s", "--learner", "schema-relnet", "--out", "M"], capsys)
    assert_one_line_error(status, err, "--out M", "notes.txt", "train did not write")
    assert sorted(p.name for p in (workdir / "M").iterdir()) == ["notes.txt"]


def test_space_build_quiet_prints_no_stage_lines(workdir, capsys):
    status, out, err = run(["space", "build", "q", "--samples", "2000", "--scenes", "1000", "--quiet"], capsys)
    assert status == 0 and err == "", err
    assert "built q" in out


def test_posterior_says_one_concept_in_the_singular(release_dir, workdir, capsys):
    """A support labelled by one concept on every scene of the (tiny) space: the concepts that
    fit are counted with the right number ("1 concept fits", "2 concepts fit")."""
    import numpy as np
    space = bc.load_space(release_dir)
    classes = np.asarray(space.synonym_classes)
    c = int(np.flatnonzero(np.bincount(classes)[classes] == 1)[0])  # a concept without synonyms
    row = np.asarray(space.signatures[c])
    labels = [int(row[j // 64] >> np.uint64(j % 64)) & 1 for j in range(space.n_scenes)]
    (workdir / "support.jsonl").write_text("".join(json.dumps({"objects": space.scene(j)["objects"], "label": y})
                                                   + "\n" for j, y in enumerate(labels)))
    status, out, err = run(["posterior", release_dir, "--support", "support.jsonl", "--top", "1"], capsys)
    assert status == 0, err
    first = out.splitlines()[0]
    n = int(first.split(":")[1].split()[0].replace(",", ""))
    assert first.startswith(f"strong oracle: {n:,} concept{'' if n == 1 else 's'} fit{'s' if n == 1 else ''} the")
    assert "1 concepts" not in out and "1 concept fit " not in out


# ---------------------------------------------------- item 5: a pair both seen and tested
PAIRS = Path(__file__).parent / "fixtures" / "pairs"


def test_from_pairs_says_which_test_pairs_are_also_train_pairs(workdir, capsys):
    """CZSL's generalized test sets list seen pairs too (the fixture, as MIT-States, does), so a
    pair in both train_pairs.txt and test_pairs.txt is not refused; the summary says how many
    there are and that the split counts them as train concepts, naming one -- so "test 16
    pairs" next to fewer test concepts is explained on the line itself."""
    d = workdir / "layout"
    shutil.copytree(PAIRS, d)
    train = (d / "train_pairs.txt").read_text().splitlines()
    test = (d / "test_pairs.txt").read_text().splitlines()
    seen = [p for p in test if p in train]
    status, out, _ = run(["space", "from-pairs", "out", "--items", d / "items.tsv", "--pairs-dir", d], capsys)
    line = next(l for l in out.splitlines() if l.startswith("pair files:"))
    assert status == 0 and f"of which {len(seen)} also in train_pairs.txt" in line and repr(seen[0]) in line, line
    added = next(p for p in train if p not in test)
    (d / "test_pairs.txt").write_text("\n".join(test + [added]) + "\n")
    status, out, _ = run(["space", "from-pairs", "out2", "--items", d / "items.tsv", "--pairs-dir", d], capsys)
    line = next(l for l in out.splitlines() if l.startswith("pair files:"))
    assert status == 0 and f"test {len(test) + 1} pairs of which {len(seen) + 1} also in train_pairs.txt" in line
    (d / "test_pairs.txt").write_text("\n".join(p for p in test if p not in train) + "\n")
    status, out, _ = run(["space", "from-pairs", "out3", "--items", d / "items.tsv", "--pairs-dir", d], capsys)
    assert status == 0 and "also in train_pairs.txt" not in out
