"""The command line as registered commands (bayes_concepts/command_registry.py, bayes_concepts/commands/):
the parser is assembled from the registry, groups hold their commands, commands with a parser
of their own claim their words, a plugin's command runs like a built-in one, and the choices
of --preset and render --modality come from their registries."""
from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pytest

from bayes_concepts import cli, command_registry, options
from bayes_concepts.modalities import Modality, modalities
from conftest import assert_one_line_error, run, saved_copy


def _subparsers(parser) -> dict:
    return parser._subparsers._group_actions[0].choices if parser._subparsers is not None else {}


def test_every_registered_command_is_in_the_parser_in_its_group():
    parser = cli.build_parser()
    for _, cmd in command_registry.commands.items():
        found, place = True, parser
        for word in cmd.words:
            choices = _subparsers(place)
            if word not in choices:
                found = False
                break
            place = choices[word]
        assert found != cmd.own_parser, cmd.name  # own-parser commands are parsed apart
        if found and not cmd.is_group:
            assert place.get_default("func") is cmd.run and place.get_default("command_entry") is cmd
    assert list(_subparsers(parser)) == [c.words[0] for c in command_registry.subcommands()]
    assert list(_subparsers(_subparsers(parser)["space"])) == ["build", "from-pairs", "from-sets", "info", "show"]


@pytest.mark.parametrize("argv, name, rest", [
    (["episodes", "show", "eps.npz", "3"], "episodes show", ["eps.npz", "3"]),
    (["splits", "search", "DIR", "--out", "s.toml"], "splits search", ["DIR", "--out", "s.toml"]),
])
def test_a_command_with_a_parser_of_its_own_claims_its_words(argv, name, rest):
    cmd, parser = cli.own_parser(argv)
    assert cmd.name == name and parser.prog == f"bayes-concepts {name}"
    args = parser.parse_args(rest)
    assert args.dir == "DIR" if name == "splits search" else args.index == 3
    assert cli.own_parser(["episodes", "DIR", "--split", "x"]) is None  # 'episodes DIR' is the main parser's
    assert cli.own_parser(["splits", "DIR"]) is None


def test_the_commands_that_compile_the_kernels_say_so():
    compiling = {c.name for _, c in command_registry.commands.items() if c.compiles}
    assert compiling == {"gap", "ladder", "ladder-validate", "audit", "demo", "posterior", "space build", "splits search", "train",
                         "people shj", "episodes", "episodes export", "compile"}


def test_a_plugin_command_runs_like_a_built_in_one(capsys):
    def add_arguments(p):
        p.add_argument("--n", type=options.whole(1), default=2)

    @command_registry.command("hello", help="say hello", order=1000, arguments=add_arguments)
    def hello(args) -> int:
        print("hello " * args.n)
        return 0
    try:
        assert run(["hello", "--n", "3"], capsys)[:2] == (0, "hello hello hello \n")
        assert_one_line_error(*run(["hello", "--n", "0"], capsys)[::2], "argument --n: must be a whole number >= 1, got 0")
        assert "say hello" in cli.build_parser().format_help()
    finally:
        command_registry.commands.unregister("hello")


def test_preset_choices_come_from_the_registries(capsys):
    from bayes_concepts.spaces.build import PRESETS
    assert {"demo", "paper", "curi", "clevr", "shj", "conceptworld"} <= set(PRESETS.names())  # one registry
    assert PRESETS.get("shj").make is not None and PRESETS.get("demo").make is None
    status, _, err = run(["space", "build", "OUT", "--preset", "nope"], capsys)
    assert_one_line_error(status, err, "invalid choice: 'nope'", *(repr(n) for n in PRESETS.names()))


def test_a_presets_own_option_goes_with_it_only(tmp_path, capsys):
    status, _, err = run(["space", "build", tmp_path / "a", "--definitions", "d.toml"], capsys)
    assert_one_line_error(status, err, "--definitions is ConceptWorld's definitions file: it goes with --preset "
                                       "conceptworld")
    status, _, err = run(["space", "build", tmp_path / "b", "--preset", "shj", "--definitions", "d.toml"], capsys)
    assert_one_line_error(status, err, "--preset shj enumerates every concept", "--definitions does not apply")


class _Census(Modality):
    """How many objects a scene holds, times ``scale``: int16 (1,) per scene."""
    name = "census"
    summary = "object counts"
    defaults = MappingProxyType({"scale": 1})
    dtype = np.dtype(np.int16)

    def item_shape(self, settings):
        return (1,)

    def render(self, codes, schema, settings):
        counts = (np.asarray(codes)[:, :, 0] >= 0).sum(axis=1) * settings["scale"]
        return counts.astype(np.int16)[:, None]


@pytest.fixture
def census():
    modalities.register("census", _Census())
    yield
    modalities.unregister("census")


def test_render_takes_its_modalities_from_the_registry(census, small_space, tmp_path_factory, tmp_path, capsys):
    space_dir = saved_copy(small_space, tmp_path_factory, "census_space")
    status, out, err = run(["render", space_dir, "--bank", "--modality", "census"], capsys)
    assert status == 0, err
    assert out.startswith(f"census renderings of {small_space.n_scenes:,} scenes: int16 ({small_space.n_scenes}, 1)")
    status, _, err = run(["render", space_dir, "3", "--modality", "census", "--out", tmp_path / "a.png"], capsys)
    assert_one_line_error(status, err, "render --modality census: one scene is written as a picture (image) or a "
                                       "sound (sound)")
    status, _, err = run(["render", space_dir, "3", "--sound", "--modality", "image", "--out", tmp_path / "a.wav"],
                         capsys)
    assert_one_line_error(status, err, "--sound and --modality image disagree")
    wav = tmp_path / "b.wav"
    status, out, err = run(["render", space_dir, "3", "--modality", "sound", "--out", wav], capsys)
    assert status == 0 and wav.read_bytes()[:4] == b"RIFF", err
    status, _, err = run(["render", space_dir, "3", "--modality", "nope", "--out", wav], capsys)
    assert_one_line_error(status, err, "invalid choice: 'nope'", "'census'")


@pytest.mark.slow  # about a minute on a cold numba cache (it compiles the demo's kernels)
def test_compile_runs_the_demos_job_on_a_small_space_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    """``compile`` (what ``make venv`` runs) fills numba's cache by running the demo's job on a
    small space in a temporary folder, which it removes; a bad option is a one-line error."""
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    status, out, err = run(["compile", "--episodes", "2"], capsys)
    assert status == 0, err
    assert "compiled and cached the kernels of demo, gap, ladder and the learners" in out
    # torch's own cache folder (torch._dynamo makes it in the temporary folder when imported) is not ours
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("torchinductor_")] == []
    assert_one_line_error(*run(["compile", "--episodes", "0"], capsys)[::2], "--episodes", "must be a whole number >= 1")
