"""The command line's command groups, one module each, registered in :data:`bayes_concepts.command_registry.commands`.

Importing this package registers every built-in command (the registry imports it on first
use).  The modules import :mod:`bayes_concepts.run_args` (the options describing a run and the
:class:`~bayes_concepts.run.Run` they make), :mod:`bayes_concepts.options` and what lies below,
never one another, and import the toolkit's heavy modules inside their functions, so that building the
parser stays cheap.  A benchmark's own commands live in its suite (``command`` modules of
:mod:`bayes_concepts.suites`: ``people shj``, ``space from-pairs``, ``data fetch``), which the registry imports after this
package; a preset is in :data:`bayes_concepts.spaces.build.PRESETS`, whoever builds it.
"""
from __future__ import annotations

from . import audit, episodes, figures, gap, ladder, posterior, programs, render, space, splits, train, validate  # noqa: F401
