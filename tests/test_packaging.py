"""Packaging: a wheel built from the source tree works on its own, outside the tree.

One wheel is built per module (``pip wheel --no-deps --no-build-isolation --no-index``
from a copy of the files a build reads, so nothing is written into the repository).
It is installed, not editable, into a fresh virtual environment in ``tmp_path``.  That
environment takes the heavy dependencies (numpy, numba, torch, ...) from the running
one through a ``.pth`` line naming its site-packages; ``.pth`` files inside a folder
added that way are not processed, so the running environment's editable-install hook
stays off, and the tests check that ``bayes_concepts`` is imported from the fresh
environment.  Commands run with the working directory in ``tmp_path``, away from the
source tree.  The data lookups (:mod:`bayes_concepts.resources`) are also checked on the
wheel read as a zip archive, with the bare source tree on ``PYTHONPATH``, and in the
running (editable) environment.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from bayes_concepts import resources
from bayes_concepts.errors import BayesConceptsError, GrammarError
from bayes_concepts.lot.grammar import default_grammar_path
from bayes_concepts.splits import SplitSpecError, default_splits_dir

ROOT = Path(__file__).resolve().parents[1]
CURI_SPLITS = {"instance_iid", "concept_iid", "counting", "extrinsic", "intrinsic", "boolean", "binding_color",
               "binding_shape", "complexity"}
BUILD_INPUTS = ("pyproject.toml", "README.md", "bayes_concepts", "hypotheses")


def clean_env(**extra) -> dict:
    """The environment for a child process, without anything pointing into an environment or tree."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(extra)
    return env


def run(cmd, cwd, env=None, timeout=600) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env or clean_env(), capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def site_packages(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def fresh_venv(path: Path, wheel: Path | None = None) -> Path:
    """A new virtual environment (with ``wheel`` installed, not editable) whose dependencies
    resolve into the running one."""
    run([sys.executable, "-m", "venv", "--without-pip", path], cwd=path.parent)
    if wheel is not None:  # installed before the .pth line exists, so pip sees no other bayes_concepts
        run([sys.executable, "-m", "pip", "--python", path / "bin" / "python", "install", "--no-deps", "--no-index",
             "--quiet", wheel], cwd=path.parent)
    parents = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site_packages(path) / "_parent_env.pth").write_text("".join(f"{p}\n" for p in parents))
    return path


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """``(wheel, src)``: the wheel, and the snapshot of the source files it was built from."""
    base = tmp_path_factory.mktemp("packaging")
    src = base / "src"
    src.mkdir()
    for name in [*BUILD_INPUTS, *(p.name for p in ROOT.glob("LICEN[CS]E*"))]:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, src / name)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
         src, "-w", base / "wheels"], cwd=base)
    wheels = list((base / "wheels").glob("bayes_concepts-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0], src


@pytest.fixture(scope="module")
def venv(build, tmp_path_factory):
    """A fresh environment with the wheel installed (not editable)."""
    return fresh_venv(tmp_path_factory.mktemp("installed") / "venv", wheel=build[0])


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


PROBE = """
import json, sys
import bayes_concepts
from bayes_concepts.lot.grammar import default_grammar_path
from bayes_concepts.splits import default_splits_dir
print(json.dumps({"module": bayes_concepts.__file__, "grammar": str(default_grammar_path()),
                  "splits": sorted(str(p) for p in default_splits_dir().glob("*.toml")),
                  "finders": [getattr(f, "__name__", type(f).__name__) for f in sys.meta_path]}))
"""


# ------------------------------------------------------------------------------------------ the wheel
def test_wheel_holds_every_module_the_grammar_and_the_nine_split_specs(build):
    wheel, src = build
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        modules = {p.relative_to(src).as_posix() for p in (src / "bayes_concepts").rglob("*.py")}
        assert modules <= names, f"modules missing from the wheel (list them in pyproject.toml): {modules - names}"
        assert zf.read("bayes_concepts/hypotheses/curi.pcfg") == (src / "hypotheses" / "curi.pcfg").read_bytes()
        specs = {n for n in names if n.startswith("bayes_concepts/hypotheses/splits/") and n.endswith(".toml")}
        assert {Path(n).stem for n in specs} == CURI_SPLITS
        assert {Path(n).name for n in specs} == {p.name for p in (src / "hypotheses" / "splits").glob("*.toml")}
        for name in specs:
            assert zf.read(name) == (src / "hypotheses" / "splits" / Path(name).name).read_bytes()
        data = {"bayes_concepts/" + f.relative_to(src).as_posix() for f in (src / "hypotheses").rglob("*")
                if f.is_file() and "__pycache__" not in f.parts}
        assert data <= names, f"data files missing from the wheel (see package-data in pyproject.toml): {data - names}"
        assert "bayes_concepts/hypotheses/splits/README.md" in names
        assert not any(n.startswith("hypotheses/") for n in names), "the data folder must ship inside the package"
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in metadata
    requires = {line.split(":", 1)[1].strip().replace(" ", "") for line in metadata.splitlines()
                if line.startswith("Requires-Dist:") and "extra ==" not in line}
    assert "torch==2.13.0" in requires
    assert any(r.startswith("safetensors") for r in requires)


# -------------------------------------------------------------------------------- installed from it
def test_installed_package_and_its_data_come_from_the_fresh_environment(venv, build, tmp_path):
    _, src = build
    out = json.loads(run([venv / "bin" / "python", "-c", PROBE], cwd=tmp_path).stdout)
    installed = site_packages(venv).resolve()
    assert Path(out["module"]).resolve().is_relative_to(installed / "bayes_concepts")
    assert not any("editable" in f.lower() for f in out["finders"]), out["finders"]
    grammar = Path(out["grammar"])
    assert grammar.resolve() == installed / "bayes_concepts" / "hypotheses" / "curi.pcfg"
    assert grammar.read_bytes() == (src / "hypotheses" / "curi.pcfg").read_bytes()
    assert {Path(p).stem for p in out["splits"]} == CURI_SPLITS
    assert all(Path(p).resolve().is_relative_to(installed) for p in out["splits"])


def test_installed_cli_builds_a_space_and_lists_its_splits(venv, build, tmp_path):
    _, src = build
    cli = venv / "bin" / "bayes-concepts"
    built = run([cli, "space", "build", "X", "--preset", "demo", "--samples", "20000", "--scenes", "5000"],
                cwd=tmp_path)
    assert "built X" in built.stdout + built.stderr
    manifest = json.loads((tmp_path / "X" / "manifest.json").read_text())
    assert manifest["params"]["grammar"]["sha256"] == sha256(src / "hypotheses" / "curi.pcfg")
    assert manifest["params"]["samples"] == 20_000
    info = json.loads(run([cli, "space", "info", "X", "--json"], cwd=tmp_path).stdout)
    assert 0 < info["concepts"] <= 20_000

    # the nine split specs come from the wheel (the gap itself is the same code as in the tree, tested
    # there: computing it here would compile every numba kernel a second time, ~1.5 min of the suite)
    listed = json.loads(run([cli, "splits", "X", "--json"], cwd=tmp_path).stdout)
    assert set(listed["splits"]) == CURI_SPLITS
    assert all(listed["splits"][name]["test"] for name in CURI_SPLITS)


def test_installed_cli_reports_bad_input_in_one_line(venv, tmp_path):
    proc = subprocess.run([str(venv / "bin" / "bayes-concepts"), "explain", "x color? = exists="], cwd=tmp_path,
                          env=clean_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


# --------------------------------------------------------------------- other ways of finding the data
def test_data_found_inside_a_zipped_wheel(build, monkeypatch):
    """Data read from a zip archive (here the wheel itself) is copied out to real files, once.

    (The package as a whole does not run from a zip: numba's on-disk cache needs real files.)"""
    wheel, src = build
    packaged = zipfile.Path(wheel, "bayes_concepts/hypotheses/")
    monkeypatch.setattr(resources, "_candidates", lambda parts: [packaged.joinpath(*parts)])
    resources._data_file.cache_clear()
    try:
        grammar = resources.default_grammar_path()
        splits = resources.curi_splits_dir()
        assert grammar == resources._extraction_dir() / "curi.pcfg"
        assert grammar.read_bytes() == (src / "hypotheses" / "curi.pcfg").read_bytes()
        assert splits == resources._extraction_dir() / "splits"
        for spec in (src / "hypotheses" / "splits").iterdir():
            assert (splits / spec.name).read_bytes() == spec.read_bytes()
        assert {p.stem for p in splits.glob("*.toml")} == CURI_SPLITS
        assert resources.default_grammar_path() is grammar  # copied once
    finally:
        resources._data_file.cache_clear()


def test_data_found_in_a_bare_source_tree(tmp_path):
    """The repository on PYTHONPATH, nothing installed: the top-level hypotheses/ folder is used."""
    bare = fresh_venv(tmp_path / "bare")
    out = json.loads(run([bare / "bin" / "python", "-c", PROBE], cwd=tmp_path,
                         env=clean_env(PYTHONPATH=str(ROOT))).stdout)
    assert Path(out["module"]) == ROOT / "bayes_concepts" / "__init__.py"
    assert Path(out["grammar"]) == ROOT / "hypotheses" / "curi.pcfg"
    assert {Path(p) for p in out["splits"]} == set((ROOT / "hypotheses" / "splits").glob("*.toml"))


def test_data_found_in_the_running_environment():
    """This process (an editable install, or the tree on PYTHONPATH) reads the source tree's files."""
    import bayes_concepts
    if not Path(bayes_concepts.__file__).resolve().is_relative_to(ROOT):
        pytest.skip("bayes_concepts is not imported from this source tree")
    assert default_grammar_path() == ROOT / "hypotheses" / "curi.pcfg"
    assert default_splits_dir() == ROOT / "hypotheses" / "splits"
    assert resources.data_file("splits", "counting.toml") == ROOT / "hypotheses" / "splits" / "counting.toml"


# ----------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("parts", [("no_such_file.pcfg",), ("splits", "no_such_split.toml")])
def test_missing_data_file_is_one_line_error_naming_it(parts):
    with pytest.raises(resources.DataFileError, match="/".join(parts)) as info:
        resources.data_file(*parts)
    assert isinstance(info.value, BayesConceptsError) and "\n" not in str(info.value)


@pytest.mark.parametrize("part", ["..", ".", "", "splits/counting.toml", "/etc"])
def test_data_file_rejects_path_components_that_are_not_plain_names(part):
    with pytest.raises(resources.DataFileError, match="plain names"):
        resources.data_file(part)


def test_default_lookups_raise_their_own_errors_when_the_data_is_gone(monkeypatch):
    monkeypatch.setattr(resources, "_candidates", lambda parts: [])
    resources._data_file.cache_clear()
    try:
        with pytest.raises(GrammarError, match="curi.pcfg.*pass a grammar file explicitly"):
            default_grammar_path()
        with pytest.raises(SplitSpecError, match="splits.*pass spec files explicitly"):
            default_splits_dir()
    finally:
        resources._data_file.cache_clear()
