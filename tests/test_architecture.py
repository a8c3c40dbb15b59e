"""The architecture on one page: the import-linter contract in pyproject.toml, the guide's
layer table and the package's modules agree, and the contract catches an upward import."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bayes_concepts"
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
LINT = Path(sys.executable).with_name("lint-imports")


def _top_layers() -> list:
    """The package-level layers contract: a list of sets of module names, top layer first."""
    (top,) = [c for c in CONTRACTS if c["type"] == "layers" and c["containers"] == ["bayes_concepts"]]
    return [{m.strip() for m in re.split(r"[|:]", layer)} for layer in top["layers"]]


def _children() -> set:
    """The package's direct submodules and subpackages (bar hypotheses/, a data folder)."""
    mods = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    mods |= {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    return mods - {"hypotheses"}


def _readme_layers() -> dict:
    """module -> layer number, from the guide's table of layers (docs/overview.md)."""
    out = {}
    for line in (ROOT / "docs" / "overview.md").read_text().splitlines():
        m = re.match(r"^\| (\d+) \| (.+?) \|", line)
        if m:
            for name in re.findall(r"`(?:bayes_concepts)?\.(\w+)`", m.group(2)):
                out[name] = int(m.group(1))
    return out


def test_the_contract_covers_every_module_of_the_package():
    listed = set().union(*_top_layers())
    assert listed == _children()


def test_the_readme_table_lists_the_contract_s_layers_in_its_order():
    readme = _readme_layers()
    assert set(readme) == _children()
    layers = _top_layers()
    numbers = [{readme[m] for m in layer} for layer in layers]
    assert all(len(n) == 1 for n in numbers), numbers  # one layer of the guide's table per contract layer
    flat = [n.pop() for n in numbers]
    assert flat == sorted(flat, reverse=True), flat  # top first in both


def _lint(package_parent: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run([str(LINT), "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=package_parent,
                          env=env, capture_output=True, text=True, timeout=600)


def test_the_contract_holds_and_fails_on_an_upward_import(tmp_path):
    kept = _lint(ROOT)
    assert kept.returncode == 0, kept.stdout[-3000:]
    copy = tmp_path / "bayes_concepts"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "hypotheses"))
    schema = copy / "scenes" / "schema.py"
    schema.write_text(schema.read_text() + "\n\ndef _upward():\n    from ..gap import compute_gap  # noqa\n")
    broken = _lint(tmp_path)
    assert broken.returncode != 0
    assert "bayes_concepts.scenes.schema -> bayes_concepts.gap" in broken.stdout


def test_git_ignores_no_file_of_the_package():
    """A source file that git ignores never reaches a clone (an ignore pattern once swallowed
    the package's own ``spaces/``)."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        return  # an installed copy or an archive: nothing is committed from here
    out = subprocess.run(["git", "ls-files", "--others", "--ignored", "--exclude-standard", "--", "bayes_concepts",
                          "tests", "hypotheses", "benchmarks", "analyses", "notebooks"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split()
    # benchmarks/out/ holds the benchmarks' full outputs, ignored on purpose
    ignored = [f for f in out if "__pycache__" not in f and not f.endswith(".pyc")
               and not f.startswith(("notebooks/.ipynb_checkpoints", "benchmarks/out/"))]
    assert not ignored, ignored
