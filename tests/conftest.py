"""Fixtures shared by the test modules: one small hypothesis space per test session.

``small_space`` is built once (20,000 program samples, 5,000 scenes, seed 0) and shared
by every module whose tests hold for any small space.  A module whose assertions depend on
a particular build (its size, seed or ``min_count``) builds its own space and says why.

``clevr_space`` is its relational twin: one small ``clevr`` preset space (2,000 program
samples plus CLOSURE's families, 3,000 scenes with positions and relations, seed 0), built
once and shared by the modules whose tests hold for any small clevr space
(``test_relational``, ``test_relational_space``, ``test_relational_downstream``,
``test_plots``).  Its first build in a process costs ~15-20 s (CLOSURE's and CLEVR's template programs are
parsed and scored, then cached), so one build serves them all.

The shared spaces are read by many modules: a test must not modify them (their arrays,
``params`` or ``path``).  To test saving, save a copy made with
``dataclasses.replace(small_space)`` -- saving sets the saved object's ``path``.
"""
from __future__ import annotations

import dataclasses

import pytest

from bayes_concepts.cli import main
from bayes_concepts.spaces.hypothesis_space import HypothesisSpace

SMALL_BUILD = dict(samples=20_000, scenes=5_000, seed=0)
#: the shared clevr space: the size test_relational_downstream was written for (its sampled
#: programs beside CLOSURE's ~1,600 concepts); the other modules need only *a* clevr space
CLEVR_BUILD = dict(samples=2_000, scenes=3_000, seed=0)


@pytest.fixture(scope="session")
def small_space() -> HypothesisSpace:
    """The shared in-memory space (never saved: its ``path`` stays None)."""
    return HypothesisSpace.build(**SMALL_BUILD)


@pytest.fixture(scope="session")
def small_space_dir(small_space, tmp_path_factory):
    """A saved copy of ``small_space`` (a directory, for the CLI, scripts and notebooks).

    The copy is saved rather than ``small_space`` itself so that ``small_space.path``
    stays None whichever fixtures a run happens to use.  Do not write into it.
    """
    return saved_copy(small_space, tmp_path_factory, "small_space")


@pytest.fixture(scope="session")
def clevr_space() -> HypothesisSpace:
    """The shared in-memory clevr space (never saved: its ``path`` stays None)."""
    return HypothesisSpace.build("clevr", **CLEVR_BUILD)


@pytest.fixture(scope="session")
def clevr_space_dir(clevr_space, tmp_path_factory):
    """A saved copy of ``clevr_space`` (positions and packed relations included).  Do not
    write into it: copy it first (``shutil.copytree``) to damage or extend it."""
    return saved_copy(clevr_space, tmp_path_factory, "clevr_space")


def saved_copy(space, tmp_path_factory, name: str):
    """A copy of ``space`` saved into a new temporary folder ``name``: its ``space`` subfolder
    (the space itself keeps its ``path``)."""
    path = tmp_path_factory.mktemp(name) / "space"
    dataclasses.replace(space).save(path)
    return path


def run(argv, capsys) -> tuple:
    """``(status, stdout, stderr)`` of the CLI run in-process (a usage error exits)."""
    try:
        status = main([str(a) for a in argv])
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def assert_one_line_error(status, err, *needles):
    assert status == 2, err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "error" in err and "Traceback" not in err
    for needle in needles:
        assert needle in err, (needle, err)
