"""The command line's command groups, one module each, registered in :data:`bayes_concepts.options.commands`.

Importing this package registers every built-in command (the registry imports it on first
use).  The modules import :mod:`bayes_concepts.options` and what lies below it, never one
another, and import the toolkit's heavy modules inside their functions, so that building the
parser stays cheap.  A benchmark's own commands live in its suite (``command`` modules of
:mod:`bayes_concepts.suites`: ``people shj``, ``space from-pairs``, ``data fetch``, the shj
and ConceptWorld presets), which the registry imports after this package.
"""
from __future__ import annotations

from . import audit, episodes, figures, gap, ladder, posterior, programs, render, space, splits, train, validate  # noqa: F401
