"""Issue 42 build 1: ``bayes-concepts data fetch NAME DIR`` lays the published files out as their
repositories have them -- tested offline, from a local copy (``--from``) and with the download
served from that copy (no network)."""
from __future__ import annotations

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


def _copy_of(tmp_path, name) -> Path:
    """A local copy of benchmark ``name``'s repository: its files at their paths (the hxm97
    fixture for MIT-States' files it has, a line per other file)."""
    root = tmp_path / f"copy_{name}"
    for path in data.PUBLISHED[name].files:
        f = root / path
        f.parent.mkdir(parents=True, exist_ok=True)
        own = HX / path
        f.write_bytes(own.read_bytes() if own.is_file() else b"wet dog\n")
    return root


def test_fetch_from_a_local_copy_lays_files_out_as_the_repository(tmp_path, capsys):
    copy = _copy_of(tmp_path, "mit-states")
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


def test_download_urls_are_the_pinned_raw_files(tmp_path, monkeypatch):
    copy = _copy_of(tmp_path, "c-gqa")
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
