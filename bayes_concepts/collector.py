"""How often Python's garbage collector runs while the toolkit builds many long-lived objects.

A space build parses and keeps thousands of syntax trees (a CLEVR space: ~14,000 trees of ~40
nodes, and the compiled plans' memos), and a ladder parses ~25,000 more.  With Python's default
setting the youngest generation is collected every 700 allocations, and every so often a full
collection walks all of those objects again: a fifth of a CLEVR build's time (a small clevr preset
built from Python: 15.2 -> 11.9 s).  Collected every :data:`COLLECT_EVERY` allocations instead,
the collector still runs (reference cycles are still freed) and reference counting frees
everything else at once, as before.

:func:`fewer_collections` does this for one call and puts the setting back after it (what
:meth:`HypothesisSpace.build <bayes_concepts.spaces.hypothesis_space.HypothesisSpace.build>`
does, so a notebook's build is as fast as the command's); :func:`collect_less` for the rest of
a process of its own (the ``bayes-concepts`` command).
"""
from __future__ import annotations

import atexit
import gc
from contextlib import contextmanager

__all__ = ["COLLECT_EVERY", "collect_less", "fewer_collections", "freeze_at_exit"]

#: allocations between two collections of the youngest generation (Python's default: 700)
COLLECT_EVERY = 50_000


@contextmanager
def fewer_collections(every: int = COLLECT_EVERY):
    """Within the block, the youngest generation is collected every ``every`` allocations (int
    >= 1) unless the process already collects as rarely or not at all (threshold 0); the
    thresholds as they were afterwards, also when the block raises."""
    before = gc.get_threshold()
    if before[0] == 0 or before[0] >= every:
        yield
        return
    gc.set_threshold(every, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def collect_less() -> None:
    """Fewer garbage collections for the rest of this process: what is alive now (the imports)
    is moved out of the collector's reach (``gc.freeze``), the youngest generation is
    collected every :data:`COLLECT_EVERY` allocations, and at exit, once every exit handler
    registered after this call has run, everything still alive is frozen too
    (:func:`freeze_at_exit`).  For a process of its own (the ``bayes-concepts`` command, a
    benchmark script, a test worker); a library call uses :func:`fewer_collections`."""
    gc.freeze()
    if 0 < gc.get_threshold()[0] < COLLECT_EVERY:
        gc.set_threshold(COLLECT_EVERY, *gc.get_threshold()[1:])
    atexit.unregister(freeze_at_exit)  # once, however often this is called
    atexit.register(freeze_at_exit)


def freeze_at_exit() -> None:
    """Everything alive moved out of the collector's reach, for the interpreter's shutdown.

    Python's shutdown runs full collections while it takes every module apart, and they walk
    whatever is alive: a command that built a space spent 0.4-0.6 s there (a small clevr preset
    build, about a million objects, 2.5 s), after its work and its output were done.  Frozen, those
    collections find nothing to walk and the process ends at once; its memory goes back to the
    system as it always does.  Exit handlers (``atexit``, ``weakref.finalize``: temporary folders,
    spilled signatures) run as before; what is not run is ``__del__`` of objects in reference
    cycles still alive at exit, which Python does not promise to run anyway."""
    gc.freeze()
