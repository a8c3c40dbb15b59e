"""A sixth benchmark is one package and its registration: a toy suite in a temporary folder
(a preset of 3 concepts, a protocol, a figure and a subcommand) runs from the command line
with ``--plugin``, touching no file of the toolkit."""
import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: the toy benchmark's protocol (also the installed suite's, tests/test_installed_suite.py)
TOY_PROTOCOL = '''
class ToyProtocol(Protocol):
    """Train on concept a, test on b and c."""

    def spec_files(self):
        return []

    def splits(self, space, names=None):
        split = Split("b_and_c", np.array([0]), np.zeros(0, np.int64), np.array([1, 2]), {"kind": "toy"}, None,
                      "toy: train a, test b and c", space.n_concepts)
        return {"b_and_c": self.adapt(space, split)}


protocols.register("toy", ToyProtocol("toy", "the toy benchmark's one split", "toy",
                                      OracleSettings(prior="length", likelihood="size", weak_empty="zero")))
'''

TOY_SUITE = '''
"""A toy benchmark: three concepts over 60 items, one protocol, one figure, one command."""
from functools import partial

import numpy as np

from bayes_concepts.command_registry import command
from bayes_concepts.presets import PRESETS, Preset
from bayes_concepts.oracles import OracleSettings
from bayes_concepts.plots import figures
from bayes_concepts.protocols import Protocol, protocols
from bayes_concepts.spaces import ExtensionSpace
from bayes_concepts.splits import Split

ITEMS = 60


def build_toy(args):
    """space build OUT --preset toy3: concepts a, b, c are items 0-19, 20-39 and 40-59."""
    extensions = [np.arange(k * 20, k * 20 + 20) for k in range(3)]
    space = ExtensionSpace.from_extensions(extensions, ["a", "b", "c"], n_items=ITEMS, seed=args.seed or 0,
                                           params={"kind": "toy"})
    space.save(args.out, overwrite=args.force)
    print(f"toy space of {space.n_concepts} concepts written to {args.out}")
    return 0


PRESETS.register("toy3", Preset("three toy concepts over 60 items", cli_build=build_toy))


''' + TOY_PROTOCOL + '''

def plot_toy_gap(ds, ax=None):
    """The strong oracle's mean AP per split, one bar each."""
    from matplotlib.figure import Figure
    ax = ax if ax is not None else Figure().add_subplot()
    means = ds["ap"].sel(learner="strong", negatives="hard").mean("episode")
    ax.bar([str(s) for s in means["split"].values], means.values)
    return ax, means.to_dataframe()


@figures.register("toy_gap")
def toy_figures(given):
    if given.results.attrs.get("protocol") != "toy":
        return {}
    return {"toy_gap": partial(plot_toy_gap, given.results)}


def _arguments(p):
    p.add_argument("name", help="whom to greet")


@command("toy-hello", help="the toy benchmark's own command", order=900, arguments=_arguments)
def toy_hello(args):
    print(f"hello {args.name} from the toy benchmark")
    return 0
'''


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    where = tmp_path_factory.mktemp("toy_plugin")
    (where / "toybench.py").write_text(TOY_SUITE, encoding="utf-8")
    return where


def _cli(toy, *argv, cwd):
    env = {"PYTHONPATH": str(toy), "PATH": "/usr/bin:/bin", "HOME": str(cwd), "MPLBACKEND": "Agg",
           "PYTEST_CURRENT_TEST": "toy"}
    return subprocess.run([sys.executable, "-m", "bayes_concepts.cli", "--plugin", "toybench", *argv],
                          capture_output=True, text=True, timeout=600, cwd=cwd, env=env)


def test_a_toy_suite_runs_from_the_command_line_touching_no_toolkit_file(toy, tmp_path):
    before = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "bayes_concepts"],
                            capture_output=True, text=True, cwd=ROOT).stdout
    space = tmp_path / "toy_space"
    r = _cli(toy, "space", "build", str(space), "--preset", "toy3", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "toy space of 3 concepts" in r.stdout

    r = _cli(toy, "space", "build", "--help", cwd=tmp_path)
    assert "toy3" in r.stdout

    results = tmp_path / "toy.nc"
    r = _cli(toy, "gap", str(space), "--protocol", "toy", "--episodes", "30", "--negatives", "hard",
             "--out", str(results), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "b_and_c" in r.stdout

    r = _cli(toy, "figures", str(results), "--space", str(space), "--out", str(tmp_path / "figs"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "figs" / "toy_gap.png").stat().st_size > 0
    assert "strong" in (tmp_path / "figs" / "toy_gap.csv").read_text()

    r = _cli(toy, "toy-hello", "world", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "hello world from the toy benchmark"
    r = _cli(toy, "--help", cwd=tmp_path)
    assert "toy-hello" in r.stdout

    after = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "bayes_concepts"],
                           capture_output=True, text=True, cwd=ROOT).stdout
    assert after == before


def test_without_the_plugin_the_toy_names_are_unknown(toy, tmp_path):
    r = subprocess.run([sys.executable, "-m", "bayes_concepts.cli", "toy-hello", "world"], capture_output=True,
                       text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 2
    assert "toy-hello" in r.stderr


TOY_MODALITY = '''
"""A toy modality: how many objects a scene holds, one int16 per scene, drawn as a bar."""
from types import MappingProxyType

import numpy as np

from bayes_concepts.modalities import Modality, modalities


class Census(Modality):
    """how many objects a scene holds"""

    name = "census"
    summary = "how many objects a scene holds"
    defaults = MappingProxyType({})
    dtype = np.dtype(np.int16)

    def item_shape(self, settings):
        return (1,)

    def render(self, codes, schema, settings):
        return (np.asarray(codes)[:, :, 0] >= 0).sum(axis=1).astype(np.int16)[:, None]

    def draw_items(self, axes, items, settings, *, fill=False):
        for ax, item in zip(axes, items):
            ax.bar([0], [int(item[0])])
        return [{"objects_counted": int(item[0])} for item in items]

    def drawn_size(self, settings):
        return (1, 2)


modalities.register("census", Census())
'''


def test_a_modality_is_its_own_module(toy, small_space, tmp_path):
    """A modality added by one module (a plugin): the command line renders a bank in it and the
    modalities figure draws its row; no file of the toolkit changes."""
    (toy / "census.py").write_text(TOY_MODALITY, encoding="utf-8")
    space_dir = tmp_path / "space"
    dataclasses.replace(small_space).save(space_dir)  # a copy: saving sets the saved object's path
    before = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "bayes_concepts"],
                            capture_output=True, text=True, cwd=ROOT).stdout
    env = {"PYTHONPATH": str(toy), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MPLBACKEND": "Agg",
           "PYTEST_CURRENT_TEST": "toy"}
    run = [sys.executable, "-m", "bayes_concepts.cli", "--plugin", "census"]
    r = subprocess.run([*run, "render", "--help"], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert "census" in r.stdout
    r = subprocess.run([*run, "render", str(space_dir), "--bank", "--modality", "census"], capture_output=True,
                       text=True, timeout=300, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"{small_space.n_scenes:,} scenes: int16 ({small_space.n_scenes}, 1)" in r.stdout
    code = textwrap.dedent(f"""
        import census, numpy as np
        import bayes_concepts as bc
        space = bc.load_space({str(space_dir)!r})
        bank = space.rendered_bank("census")
        assert np.array_equal(bank[:, 0], (np.asarray(space.scene_codes)[:, :, 0] >= 0).sum(axis=1))
        split = bc.make_split(space, {{"name": "r", "kind": "random", "fractions": {{"train": 0.5, "val": 0.0, "test": 0.5}}, "seed": 0}})
        eps = bc.sample_episodes(space, split, n=2, seed=0)
        axes, data = bc.plot_modalities(space, eps, 0, n_scenes=3)
        import json
        print(json.dumps({{"rows": axes.shape[0], "label": axes[-1, 0].get_ylabel(),
                          "counted": [int(x) for x in data["objects_counted"].dropna()]}}))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    drawn = json.loads(r.stdout.strip().splitlines()[-1])
    assert drawn["rows"] == 4 and drawn["label"] == "census"  # schema, image, sound, then the new modality's row
    assert len(drawn["counted"]) == 3 and min(drawn["counted"]) >= 1
    after = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "bayes_concepts"],
                           capture_output=True, text=True, cwd=ROOT).stdout
    assert after == before
