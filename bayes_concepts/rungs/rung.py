"""The rung registry and what every rung shares (see :mod:`bayes_concepts.rungs`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import BayesConceptsError
from ..registry import Registry

__all__ = ["Rung", "RungError", "rungs", "rung_learner", "check_rung", "rung_label", "strong_concepts",
           "parse_rung_text", "ladder_order", "default_rungs", "oracle_names", "readme_columns", "whole_number", "budget_problem", "seed_problem", "alpha_problem",
           "checked_knobs", "first_episode_index"]


class RungError(BayesConceptsError):
    """A rung that is unknown, cannot apply to a space, or is given a bad knob."""


def _always(space) -> str | None:
    return None


@dataclass(frozen=True)
class Rung:
    """One rung of the ladder.

    name: its registered name; summary: one line (help texts); definition: what the learner
    knows, fixed before any comparison with models (the ladder's table in the guide, docs/jobs/audit.md).
    ``build(space, split, settings, **knobs)`` -> learner with ``evaluate(episodes)`` (the dict of
    the oracles' results) and ``fit``/``predict_proba``; its ``name`` is set by
    :func:`rung_learner`.  knobs: knob name -> (default, one-line help); only these are
    accepted.  ``applies(space)`` -> None, or the reason the rung cannot apply to that kind of
    space (one line).  ``check_knob(name, value)`` -> None or the reason a value is refused.

    Where it stands on the ladder, declared here and nowhere else: ``position`` (bottom first;
    None: after the positioned rungs, before ``strong``, in the order given), ``default`` (in the
    ladder scored when no rungs are named: :func:`default_rungs`), ``oracle`` (the learner of
    :func:`~bayes_concepts.gap.compute_gap` it is, whose numbers the ladder reuses: ``weak``,
    ``strong``, ``atom``, ``compound``; None) and ``columns`` (its columns in the README's ladder
    tables, e.g. ``("sampling[n=100]", ...)``: :func:`readme_columns`).  A new default rung is one
    module and one registration with ``default=True``."""

    name: str
    summary: str
    definition: str
    build: Callable
    knobs: dict = field(default_factory=dict)
    applies: Callable = _always
    check_knob: Callable | None = None
    position: float | None = None
    default: bool = False
    oracle: str | None = None
    columns: tuple = ()


rungs = Registry("rung", builtins=("bayes_concepts.rungs.oracle_rungs", "bayes_concepts.rungs.learned_prior",
                                   "bayes_concepts.rungs.sampling", "bayes_concepts.rungs.mcmc"))

def ladder_order() -> tuple:
    """The rungs that declare a position, bottom first (the others go after these, before
    ``strong``, in the order given)."""
    placed = [(r.position, name) for name, r in rungs.items() if r.position is not None]
    return tuple(name for _, name in sorted(placed))


def default_rungs() -> tuple:
    """The ladder scored when no rungs are named: the rungs registered with ``default=True``, in
    ladder order."""
    order = ladder_order()
    chosen = [name for name, r in rungs.items() if r.default]
    return tuple(sorted(chosen, key=lambda n: (order.index(n) if n in order else len(order) - 1, n == "strong")))


def oracle_names() -> dict:
    """``{rung: learner}`` for the rungs that are oracles compute_gap scores itself."""
    return {name: r.oracle for name, r in rungs.items() if r.oracle is not None}


def readme_columns() -> tuple:
    """The README's ladder columns, rung by rung in ladder order (each rung's ``columns``)."""
    return tuple(c for name in ladder_order() for c in rungs.get(name).columns)


def whole_number(value) -> int | None:
    """``value`` as an int when it is a whole number (an int, or a finite float with no
    fraction; not a bool), else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and float(value).is_integer():
        return int(value)
    return None


def budget_problem(value, maximum: int, unit: str) -> str | None:
    """Why ``value`` is no budget (a whole number of ``unit`` from 1 to ``maximum``), or None."""
    v = whole_number(value)
    if v is None or not 1 <= v <= maximum:
        return f"must be a whole number of {unit} from 1 to {maximum:.0e}, got {value!r}"
    return None


def seed_problem(value) -> str | None:
    """Why ``value`` is no seed (a whole number >= 0 below 2**63), or None."""
    v = whole_number(value)
    if v is None or not 0 <= v < 2**63:
        return f"must be a whole number >= 0, got {value!r}"
    return None


def alpha_problem(value) -> str | None:
    """Why ``value`` is no concentration (a finite number > 0), or None."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return f"must be a number > 0, got {value!r}"
    if not np.isfinite(float(value)) or float(value) <= 0:
        return f"must be a finite number > 0, got {value!r}"
    return None


def checked_knobs(rung: str, knobs: dict, check) -> dict:
    """``knobs`` if ``check(name, value)`` finds nothing wrong with any, else a one-line
    :class:`RungError` naming the rung and the knob (for a rung's ``build`` called directly)."""
    for k, v in knobs.items():
        why = check(k, v)
        if why:
            raise RungError(f"rung {rung!r}: {k} {why}")
    return knobs


def first_episode_index(meta: dict) -> int:
    """The global index of a batch's first episode within its cell: the start of
    ``meta["part"]`` (a chunk of a cell), else 0; per-episode random streams key on it, so a
    cell scored whole or in chunks draws the same."""
    part = meta.get("part")
    return int(part[0]) if part is not None else 0


def strong_concepts(split) -> np.ndarray:
    """The strong oracle's concepts of ``split``: ``split.strong_concepts`` where a protocol set
    it, else train ∪ test (int64, sorted)."""
    ids = getattr(split, "strong_concepts", None)
    return np.asarray(np.union1d(split.train, split.test) if ids is None else np.unique(ids), np.int64)


def check_rung(name: str, space=None, knobs: dict | None = None) -> Rung:
    """The registered rung ``name``, checked: a :class:`RungError` (one line) for an unknown
    name, a knob the rung does not take or refuses, or a space it cannot apply to (with why)."""
    try:
        rung = rungs.get(name)
    except ValueError as e:
        raise RungError(str(e)) from None
    for k, v in (knobs or {}).items():
        if k not in rung.knobs:
            takes = ", ".join(rung.knobs) or "no knobs"
            raise RungError(f"rung {name!r} takes {takes}, not {k!r}")
        why = rung.check_knob(k, v) if rung.check_knob else None
        if why:
            raise RungError(f"rung {name!r}: {k} {why}")
    if space is not None:
        why = rung.applies(space)
        if why:
            raise RungError(f"rung {name!r} cannot apply to this space: {why}")
    return rung


def rung_label(name: str, knobs: dict | None = None) -> str:
    """A rung's name in results: ``name`` alone, or with its knobs, ``sampling[n=1000]``."""
    knobs = knobs or {}
    if not knobs:
        return name
    return f"{name}[{','.join(f'{k}={_knob_text(v)}' for k, v in sorted(knobs.items()))}]"


def parse_rung_text(text: str) -> tuple:
    """A rung as written on a command line: ``"sampling[n=100,seed=2]"`` -> ``("sampling", {"n":
    100, "seed": 2})`` (values read as int, else float, else kept as text); a bare name has no
    knobs.  Malformed brackets are a one-line :class:`RungError`."""
    text = str(text).strip()
    if "[" not in text:
        return text, {}
    if not text.endswith("]"):
        raise RungError(f"rung {text!r}: knobs go in brackets, e.g. sampling[n=100]")
    name, _, body = text[:-1].partition("[")
    knobs = {}
    for part in filter(None, (p.strip() for p in body.split(","))):
        key, eq, value = part.partition("=")
        if not eq:
            raise RungError(f"rung {text!r}: knob {part!r} needs a value, e.g. alpha=10")
        knobs[key.strip()] = _knob_value(value.strip())
    return name.strip(), knobs


def _knob_value(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _knob_text(v) -> str:
    if isinstance(v, float) and float(v).is_integer():
        return str(int(v))
    return str(v)


def rung_learner(name: str, space, split, settings=None, **knobs):
    """The learner of rung ``name`` for ``split`` of ``space`` (``settings``: an
    :class:`~bayes_concepts.oracles.OracleSettings`; knobs as the rung takes them, defaults
    otherwise).  Its ``name`` is :func:`rung_label` of the knobs given."""
    from ..oracles import OracleSettings
    rung = check_rung(name, space, knobs)
    full = {k: d for k, (d, _) in rung.knobs.items()}
    full.update(knobs)
    learner = rung.build(space, split, settings or OracleSettings(), **full)
    learner.name = rung_label(name, knobs)
    return learner
