"""Issue 42 build 1: ``bayes-concepts data fetch NAME DIR`` lays the published files out as their
repositories have them -- tested offline, from a local copy (``--from``) and with the download
served from that copy (no network)."""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bayes_concepts.suites.pairs import fetch as data
from bayes_concepts.cli import main
from bayes_concepts.suites.pairs import read_pairs_layout

HX = Path(__file__).resolve().parent / "fixtures" / "pairs_hxm97"


@pytest.fixture(autouse=True)
def pins(monkeypatch):
    """The published files are not shipped, so the copies here are stand-ins: each test's
    benchmarks are pinned to their stand-ins' sha256 (``pin``) -- the real pins stay untouched
    in :data:`data.PUBLISHED` and are checked for shape below."""
    def pin(name, copy):
        pub = data.PUBLISHED[name]
        sums = {p: hashlib.sha256((copy / p).read_bytes()).hexdigest() for p in pub.files}
        monkeypatch.setitem(data.PUBLISHED, name, dataclasses.replace(pub, sha256=sums))
    return pin


def _copy_of(tmp_path, name, pin=None) -> Path:
    """A local copy of benchmark ``name``'s repository: its files at their paths (the hxm97
    fixture for MIT-States' files it has, a line per other file); pinned with ``pin``."""
    root = tmp_path / f"copy_{name}"
    for path in data.PUBLISHED[name].files:
        f = root / path
        f.parent.mkdir(parents=True, exist_ok=True)
        own = HX / path
        f.write_bytes(own.read_bytes() if own.is_file() else b"wet dog\n")
    if pin is not None:
        pin(name, root)
    return root


def test_fetch_from_a_local_copy_lays_files_out_as_the_repository(tmp_path, capsys, pins):
    copy = _copy_of(tmp_path, "mit-states", pins)
    rc = main(["data", "fetch", "mit-states", str(tmp_path / "out"), "--from", str(copy), "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0 and "fetched 17 files of hxm97/" in out and "--items" in out
    root = tmp_path / "out" / "mit-states"
    record = json.loads((root / "FETCHED.json").read_text())
    assert record["commit"] == data.PUBLISHED["mit-states"].commit
    for path, digest in record["sha256"].items():
        assert hashlib.sha256((root / path).read_bytes()).hexdigest() == digest
    layout = read_pairs_layout(root / "mitstates_img_split", root / "mitstates_pair_split")  # readable as fetched
    assert layout.n_items == 36 and layout.notes["seen_attrs_unused"]["first"] == ["shiny"]


def test_download_urls_are_the_pinned_raw_files(tmp_path, monkeypatch, pins):
    copy = _copy_of(tmp_path, "c-gqa", pins)
    asked = []
    pub = data.PUBLISHED["c-gqa"]
    prefix = f"https://raw.githubusercontent.com/{pub.repo}/{pub.commit}/"

    def urlopen(url, timeout=None):
        asked.append(url)
        assert url.startswith(prefix)
        return io.BytesIO((copy / url[len(prefix):]).read_bytes())

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    root = data.fetch("c-gqa", tmp_path / "out")
    assert len(asked) == 3 and (root / "dataset/cgqa/compositional-split-natural/test_pairs.txt").is_file()
    data.fetch("c-gqa", tmp_path / "out")  # files already there are kept, not downloaded again
    assert len(asked) == 3


def test_incomplete_copy_and_no_network_are_one_line(tmp_path, capsys, monkeypatch):
    copy = _copy_of(tmp_path, "rlcl")
    (copy / data.PUBLISHED["rlcl"].files[0]).unlink()
    rc = main(["data", "fetch", "rlcl", str(tmp_path / "out"), "--from", str(copy)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "missing (1 of 21 files of bighuang624/RL-CZSL" in err[0]

    def offline(url, timeout=None):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(data.DataError, match="cannot download .*--from"):
        data.fetch("rlcl", tmp_path / "out2")


# ------------------------------------------------------------------ issue 56, item 4: pinned files
CGQA_TRAIN = "dataset/cgqa/compositional-split-natural/train_pairs.txt"


def test_every_published_file_has_a_pinned_sha256():
    for name, pub in data.PUBLISHED.items():
        assert set(pub.sha256) == set(pub.files), name
        assert all(len(h) == 64 and set(h) <= set("0123456789abcdef") for h in pub.sha256.values()), name


def test_a_tampered_copy_is_refused_in_one_line_naming_the_file(tmp_path, capsys, pins):
    copy = _copy_of(tmp_path, "c-gqa", pins)
    with open(copy / CGQA_TRAIN, "a") as f:
        f.write("wet cat\n")
    rc = main(["data", "fetch", "c-gqa", str(tmp_path / "out"), "--from", str(copy)])
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "Traceback" not in captured.err
    assert str(copy / CGQA_TRAIN) in err[0] and "is not the pinned" in err[0] and "--unpinned" in err[0]
    assert not (tmp_path / "out").exists()  # nothing written, not even the files that match


def test_the_real_pins_refuse_a_copy_that_is_not_the_published_one(tmp_path, capsys):
    copy = _copy_of(tmp_path, "c-gqa")  # stand-ins, checked against the real pins
    rc = main(["data", "fetch", "c-gqa", str(tmp_path / "out"), "--from", str(copy)])
    assert rc == 2 and "is not the pinned" in capsys.readouterr().err


def test_unpinned_takes_a_changed_copy_and_records_it(tmp_path, capsys, pins):
    copy = _copy_of(tmp_path, "c-gqa", pins)
    with open(copy / CGQA_TRAIN, "a") as f:
        f.write("wet cat\n")
    rc = main(["data", "fetch", "c-gqa", str(tmp_path / "out"), "--from", str(copy), "--unpinned", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0 and "1 UNPINNED" in out and CGQA_TRAIN in out
    record = json.loads((tmp_path / "out" / "c-gqa" / "FETCHED.json").read_text())
    assert record["unpinned"] == [CGQA_TRAIN]
    assert record["files"][CGQA_TRAIN]["pinned"] is False
    assert sum(f["pinned"] for f in record["files"].values()) == 2


def test_a_refetch_that_keeps_the_files_keeps_their_origin(tmp_path, capsys, pins):
    first = _copy_of(tmp_path / "a", "c-gqa", pins)
    assert main(["data", "fetch", "c-gqa", str(tmp_path / "out"), "--from", str(first), "--quiet"]) == 0
    second = _copy_of(tmp_path / "b", "c-gqa")  # the same bytes, somewhere else
    assert main(["data", "fetch", "c-gqa", str(tmp_path / "out"), "--from", str(second), "--quiet"]) == 0
    record = json.loads((tmp_path / "out" / "c-gqa" / "FETCHED.json").read_text())
    assert record["origin"] == str(first)  # the files kept came from the first copy, not the second
    assert {f["origin"] for f in record["files"].values()} == {str(first)}
    # one file replaced with --force... by hand: then only it has the new origin
    (tmp_path / "out" / "c-gqa" / CGQA_TRAIN).unlink()
    assert main(["data", "fetch", "c-gqa", str(tmp_path / "out"), "--from", str(second), "--quiet"]) == 0
    record = json.loads((tmp_path / "out" / "c-gqa" / "FETCHED.json").read_text())
    assert record["origin"].startswith("mixed") and record["files"][CGQA_TRAIN]["origin"] == str(second)
    capsys.readouterr()


def test_a_kept_file_changed_since_is_refused_until_force(tmp_path, capsys, pins):
    copy = _copy_of(tmp_path, "c-gqa", pins)
    assert main(["data", "fetch", "c-gqa", str(tmp_path / "out"), "--from", str(copy), "--quiet"]) == 0
    kept = tmp_path / "out" / "c-gqa" / CGQA_TRAIN
    kept.write_bytes(kept.read_bytes() + b"wet cat\n")
    rc = main(["data", "fetch", "c-gqa", str(tmp_path / "out"), "--from", str(copy), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and str(kept) in err and "--force" in err
    assert main(["data", "fetch", "c-gqa", str(tmp_path / "out"), "--from", str(copy), "--quiet", "--force"]) == 0
    assert kept.read_bytes() == (copy / CGQA_TRAIN).read_bytes()
