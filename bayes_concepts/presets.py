"""The one registry of presets: every way to build a space by name (``space build --preset
NAME``, ``bc.build_space(NAME)``), the suites' and installed ones alike, and the registry of
program sources a build adds.  Light on purpose: the command line reads it while building its
parser; the builds themselves are :mod:`bayes_concepts.spaces.build`'s.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from .registry import Registry


@dataclass(frozen=True)
class Preset:
    """A named way to build a space: ``space build OUT --preset NAME``, ``bc.build_space(NAME)``.

    summary: one line for help texts.  params: the build parameters of a space of sampled
    programs (:meth:`HypothesisSpace.build <bayes_concepts.spaces.hypothesis_space.HypothesisSpace.build>`),
    over :data:`DEFAULTS`.  A benchmark whose space is not sampled programs gives ``make``
    instead: ``make(seed=0, **options) -> ConceptSpace`` (what :func:`bayes_concepts.spaces.build_space`
    calls); for the command line, ``cli_build(args) -> exit status`` when the preset reads options
    of ``space build`` (else ``make(seed=...)`` is saved to OUT), ``add_arguments(parser)`` adding
    its own options (default None each), listed in ``options`` as ``(option, dest, what it is)``:
    given with another preset, such an option is a one-line error.  One registry, :data:`PRESETS`,
    holds every preset, whoever builds it.
    """

    summary: str
    params: Mapping = field(default_factory=dict)
    make: Callable | None = None
    cli_build: Callable | None = None
    add_arguments: Callable | None = None
    options: tuple = ()


#: Named build settings, registered by the benchmark suites (:mod:`bayes_concepts.suites`):
#: ``demo`` builds in seconds and is what ``make demo`` and the tests use; ``paper`` is CURI's
#: scale; ``PRESETS["paper"]`` is a preset's parameters.
class PresetRegistry(Registry):
    """The registry of presets; ``PRESETS[name]`` is the parameters of a sampled-program preset."""

    def __getitem__(self, name: str) -> dict:
        return dict(self.get(name).params)


PRESETS = PresetRegistry("preset", builtins=("bayes_concepts.suites:presets",))


def preset_params(name: str | None) -> dict:
    """The build parameters of preset ``name`` (``{}`` for None)."""
    return {} if name is None else dict(PRESETS.get(name).params)


@dataclass(frozen=True)
class ProgramSource:
    """Programs a benchmark adds to a build whose parameters ask for them.

    params: the build options it reads, with their defaults (None: off); they are recorded
    in a space's manifest only when set.  programs: ``programs(grammar, p)`` -> a tuple of
    ``(Program, log-prob)`` for resolved parameters ``p`` (empty when its options are off), or
    a dict ``{stage name: tuple}`` of several groups, each counted as its own stage.
    stage: the build's stage count of the programs it added (of a single tuple).  describe:
    ``describe(p, added)`` -> the build's log line.
    """

    params: Mapping
    programs: Callable
    stage: str
    describe: Callable


#: name -> :class:`ProgramSource`; the benchmark suites register theirs
program_sources = Registry("source of build programs", builtins=("bayes_concepts.suites:presets",))
