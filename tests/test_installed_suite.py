"""An installed suite is found the way the package's own suites are: a wheel of a toy suite,
built in a temporary folder and installed into a temporary virtual environment, declares its
package in the entry-point group ``bayes_concepts.suites``; ``import bayes_concepts``, a
notebook-style script and the command line then all see its protocol, preset and command, with
no ``--plugin`` and no file of the toolkit touched."""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from test_toy_suite import TOY_PROTOCOL

ROOT = Path(__file__).resolve().parents[1]

PYPROJECT = '''
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "toysuite"
version = "0.0.1"

[project.entry-points."bayes_concepts.suites"]
toysuite = "toysuite"

[tool.setuptools]
packages = ["toysuite"]
'''

PROTOCOLS = """
import numpy as np

from bayes_concepts.oracles import OracleSettings
from bayes_concepts.protocols import Protocol, protocols
from bayes_concepts.splits import Split
""" + TOY_PROTOCOL

PRESETS = '''
"""The toy suite's space, buildable from Python and from the command line."""
import numpy as np

from bayes_concepts.presets import PRESETS, Preset


def toy_space(seed=0):
    from bayes_concepts.spaces import ExtensionSpace
    extensions = [np.arange(k * 20, k * 20 + 20) for k in range(3)]
    return ExtensionSpace.from_extensions(extensions, ["a", "b", "c"], n_items=60, seed=seed, params={"kind": "toy"})


PRESETS.register("toy3", Preset("three toy concepts over 60 items", make=toy_space))
'''

COMMAND = '''
"""The toy suite's own command."""
from bayes_concepts.command_registry import command


def _arguments(p):
    p.add_argument("name")


@command("toy-hello", help="the toy suite's own command", order=900, arguments=_arguments)
def toy_hello(args):
    print(f"hello {args.name} from the toy suite")
    return 0
'''

NOTEBOOK = '''
import bayes_concepts as bc

space = bc.build_space("toy3")               # the installed suite's preset, from Python
run = bc.resolve(space, protocol="toy")      # its protocol
ds = run.gap(negatives="hard", n_episodes=20, seed=0)
print(sorted(run.splits), ds.attrs["protocol"], float(ds["ap"].sel(learner="strong").mean()))
'''


def _run(argv, **kwargs):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=600, **kwargs)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh virtual environment holding the toy suite's wheel (not editable); bayes_concepts
    and its dependencies resolve into the running environment, this tree's package first."""
    base = tmp_path_factory.mktemp("toysuite")
    src = base / "src"
    (src / "toysuite").mkdir(parents=True)
    (src / "pyproject.toml").write_text(PYPROJECT)
    (src / "toysuite" / "__init__.py").write_text('"""A toy benchmark suite."""\n')
    for name, text in (("protocols", PROTOCOLS), ("presets", PRESETS), ("command", COMMAND)):
        (src / "toysuite" / f"{name}.py").write_text(textwrap.dedent(text))
    r = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
              src, "-w", base / "wheels"], cwd=base)
    assert r.returncode == 0, r.stderr[-2000:]
    wheel, = (base / "wheels").glob("toysuite-*.whl")
    env_dir = base / "venv"
    assert _run([sys.executable, "-m", "venv", "--without-pip", env_dir]).returncode == 0
    r = _run([sys.executable, "-m", "pip", "--python", env_dir / "bin" / "python", "install", "--no-deps",
              "--no-index", "--quiet", wheel])
    assert r.returncode == 0, r.stderr[-2000:]
    site = env_dir / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    parents = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "_parent_env.pth").write_text("".join(f"{p}\n" for p in parents))
    return env_dir


def _python(venv, *argv, cwd):
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(cwd), "MPLBACKEND": "Agg"}
    return _run([venv / "bin" / "python", *argv], cwd=cwd, env=env)


def test_import_bayes_concepts_sees_the_installed_suite(venv, tmp_path):
    r = _python(venv, "-c", "import bayes_concepts as bc; print('toy' in bc.protocols.protocols, "
                            "'toy3' in bc.PRESETS, bc.registry.suite_packages()[-1])", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["True", "True", "toysuite"]


def test_a_notebook_style_script_uses_the_installed_suite(venv, tmp_path):
    (tmp_path / "nb.py").write_text(NOTEBOOK)
    r = _python(venv, "nb.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("['b_and_c'] toy ")


def test_the_command_line_sees_the_installed_suite(venv, tmp_path):
    space = tmp_path / "toy_space"
    r = _python(venv, "-m", "bayes_concepts.cli", "space", "build", space, "--preset", "toy3", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    r = _python(venv, "-m", "bayes_concepts.cli", "splits", space, "--protocol", "toy", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "b_and_c" in r.stdout
    r = _python(venv, "-m", "bayes_concepts.cli", "toy-hello", "world", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "hello world from the toy suite", r.stderr[-2000:]


def test_outside_the_venv_the_suite_is_unknown(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = _run([sys.executable, "-c", "import bayes_concepts as bc; print('toy' in bc.protocols.protocols)"],
             cwd=tmp_path, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr[-2000:]
