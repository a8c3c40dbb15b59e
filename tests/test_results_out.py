"""Issue 56, item A: a results file (``--out``) is written like a space -- never over a file the
toolkit did not write, over an earlier results file only with ``--force``, and of two writers
of one path exactly one succeeds."""
from __future__ import annotations

import os
import threading

import pytest

from bayes_concepts.output_files import ConcurrentWriteError, OutputFileError, check_target, write_file
from bayes_concepts.results import check_results_file, empty_dataset, is_results_file, load_results, save_results

from conftest import assert_one_line_error, run

GAP = ["--split", "counting", "--episodes", "20"]


@pytest.fixture
def no_work(monkeypatch):
    """Scoring fails the test if reached: a refusal must come before any work."""
    import bayes_concepts.gap
    import bayes_concepts.ladder

    def boom(*a, **k):
        raise AssertionError("the work started before --out was checked")
    monkeypatch.setattr(bayes_concepts.gap, "compute_gap", boom)
    monkeypatch.setattr(bayes_concepts.ladder, "ladder_profile", boom)


def _results(which=1):
    ds = empty_dataset(["s"], ["hard"], ["strong", "weak"], 10)
    ds["ap"][:] = which
    return ds


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_gap_out_onto_a_foreign_file_is_refused_and_the_file_kept(small_space_dir, tmp_path, capsys, no_work, force):
    notes = tmp_path / "notes.md"
    notes.write_text("my notes\n")
    status, _, err = run(["gap", small_space_dir, *GAP, "--out", notes, *force], capsys)
    assert_one_line_error(status, err, f"--out {notes}", "not a results file bayes-concepts wrote",
                          "even with --force")
    assert notes.read_text() == "my notes\n"
    assert sorted(os.listdir(tmp_path)) == ["notes.md"]


def test_gap_out_onto_an_earlier_results_file_needs_force(small_space_dir, tmp_path, capsys):
    out = tmp_path / "r.nc"
    status, _, err = run(["gap", small_space_dir, *GAP, "--out", out, "--json"], capsys)
    assert status == 0, err
    assert is_results_file(out) and load_results(out).attrs["seed"] == 0
    before = out.read_bytes()
    status, _, err = run(["gap", small_space_dir, *GAP, "--out", out, "--seed", "1"], capsys)
    assert_one_line_error(status, err, f"--out {out}", "an earlier results file", "--force")
    assert out.read_bytes() == before
    status, _, err = run(["gap", small_space_dir, *GAP, "--out", out, "--seed", "1", "--force", "--json"], capsys)
    assert status == 0, err
    assert load_results(out).attrs["seed"] == 1  # replaced
    assert sorted(os.listdir(tmp_path)) == ["r.nc"]


def test_force_without_out_is_refused_not_ignored(small_space_dir, capsys, no_work):
    status, _, err = run(["gap", small_space_dir, *GAP, "--force"], capsys)
    assert_one_line_error(status, err, "--force", "--out")


def test_ladder_out_onto_a_foreign_file_is_refused_before_work(small_space_dir, tmp_path, capsys, no_work):
    notes = tmp_path / "notes.md"
    notes.write_text("x")
    status, _, err = run(["ladder", small_space_dir, "--split", "counting", "--episodes", "20", "--out", notes],
                         capsys)
    assert_one_line_error(status, err, f"--out {notes}", "not a results file")
    assert notes.read_text() == "x"


def test_demo_out_onto_a_foreign_file_is_refused_before_work(small_space_dir, tmp_path, capsys, no_work):
    notes = tmp_path / "results.nc"
    notes.write_text("not netCDF")
    status, _, err = run(["demo", "--space", small_space_dir, "--episodes", "20", "--out", notes, "--figures", ""],
                         capsys)
    assert_one_line_error(status, err, f"--out {notes}", "not a results file")
    assert notes.read_text() == "not netCDF"


def test_a_link_or_a_foreign_netcdf_is_not_ours(tmp_path):
    real = save_results(_results(), tmp_path / "real.nc")
    link = tmp_path / "link.nc"
    link.symlink_to(real)
    with pytest.raises(OutputFileError, match="symbolic link"):
        check_results_file(link, overwrite=True)
    import xarray as xr
    other = tmp_path / "other.nc"
    xr.Dataset({"x": ("a", [1, 2])}, attrs={"title": "someone else's"}).to_netcdf(other, engine="netcdf4")
    assert not is_results_file(other) and is_results_file(real)
    with pytest.raises(OutputFileError, match="not a results file"):
        save_results(_results(), other, overwrite=True)


def test_a_file_written_during_the_run_is_not_replaced(tmp_path):
    path = tmp_path / "r.nc"
    target = check_results_file(path)  # the check before the work: nothing there
    save_results(_results(2), path)  # another run finishes first
    with pytest.raises(ConcurrentWriteError, match="another bayes-concepts run wrote"):
        save_results(_results(1), path, target=target)
    assert int(load_results(path)["ap"].values.flat[0]) == 2
    # the same with --force: both runs were to replace one earlier file; the second is refused
    first, second = check_results_file(path, overwrite=True), check_results_file(path, overwrite=True)
    save_results(_results(3), path, overwrite=True, target=first)
    with pytest.raises(ConcurrentWriteError):
        save_results(_results(4), path, overwrite=True, target=second)
    assert int(load_results(path)["ap"].values.flat[0]) == 3
    assert sorted(os.listdir(tmp_path)) == ["r.nc"]


@pytest.mark.parametrize("overwrite", [False, True])
def test_concurrent_writers_of_one_path_exactly_one_succeeds(tmp_path, overwrite):
    path = tmp_path / "out.bin"
    ours = lambda p: p.read_bytes()[:4] == b"OURS"  # noqa: E731
    if overwrite:
        path.write_bytes(b"OURS earlier")
    n = 8
    barrier = threading.Barrier(n)
    outcome = [None] * n

    def writer(i):
        try:
            target = check_target(path, ours=ours, what="test file", overwrite=overwrite)
            barrier.wait()  # every writer checked before any writes

            def write(tmp):
                with open(tmp, "wb") as f:
                    for _ in range(200):
                        f.write(b"OURS" + bytes([i]) * 4096)
            write_file(target, write, what="test file")
            outcome[i] = "ok"
        except ConcurrentWriteError as exc:
            outcome[i] = str(exc)
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert outcome.count("ok") == 1, outcome
    winner = outcome.index("ok")
    assert all("another bayes-concepts run wrote" in o for o in outcome if o != "ok")
    assert path.read_bytes() == (b"OURS" + bytes([winner]) * 4096) * 200  # whole, one writer's
    assert sorted(os.listdir(tmp_path)) == ["out.bin"]  # no temporary file left


def test_episodes_out_follows_the_same_rules(small_space_dir, tmp_path, capsys, monkeypatch):
    from bayes_concepts.episodes import Episodes
    base = ["episodes", small_space_dir, "--split", "counting", "--negatives", "hard", "--n", "5"]
    notes = tmp_path / "notes.md"
    notes.write_text("my notes\n")
    for force in ([], ["--force"]):
        status, _, err = run([*base, "--out", notes, *force], capsys)
        assert_one_line_error(status, err, f"--out {notes}", "not an episodes file bayes-concepts wrote")
    assert notes.read_text() == "my notes\n"
    out = tmp_path / "e.npz"
    assert run([*base, "--out", out], capsys)[0] == 0
    before = out.read_bytes()
    import bayes_concepts.episodes

    def boom(*a, **k):
        raise AssertionError("episodes drawn before --out was checked")
    with monkeypatch.context() as m:
        m.setattr(bayes_concepts.episodes, "sample_episodes", boom)
        status, _, err = run([*base, "--out", out, "--seed", "4"], capsys)
    assert_one_line_error(status, err, f"--out {out}", "an earlier episodes file", "--force")
    assert out.read_bytes() == before
    assert run([*base, "--out", out, "--seed", "4", "--force"], capsys)[0] == 0
    assert Episodes.load(out).meta["seed"] == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.npz", "notes.md"]
