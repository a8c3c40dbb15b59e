"""The command line's command groups, one module each, registered in :data:`bayes_concepts.options.commands`.

Importing this package registers every built-in command (the registry imports it on first
use).  The modules import :mod:`bayes_concepts.options` and what lies below it, never one
another, and import the toolkit's heavy modules inside their functions, so that building the
parser stays cheap.  The modules of one benchmark's commands (:mod:`.shj`, :mod:`.conceptworld`,
:mod:`.pairs`, :mod:`.data`) hold nothing another command uses.
"""
from __future__ import annotations

from . import audit, data, episodes, figures, gap, ladder, pairs, posterior, programs, render, space, splits, train  # noqa: F401
from . import shj, conceptworld  # noqa: F401,E402 -- in this order: the presets' order in space build --preset's help
