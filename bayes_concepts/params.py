"""Parameter constraints, declared once and checked the same way by the API and the command line.

Modelled on scikit-learn's ``validate_params``: a function declares what each of its parameters
takes (an :class:`Interval` of whole or real numbers, a set of :class:`Options`, a type, None),
and :func:`validate_params` checks a call against the declaration before the body runs, raising
one line that names the parameter, what it takes and what it got::

    @validate_params({"n_episodes": Interval(int, 1), "seed": Interval(int, 0),
                      "negatives": [Options({"hard", "easy"}), tuple, list]})
    def compute_gap(space, splits, negatives=("hard", "easy"), n_episodes=20_000, seed=0): ...

The command line's argument types are made from the same constraints (:func:`cli_type`), and
the declarations make the bad-input tests (:func:`bad_values`, :data:`validated`): every
declared parameter is called with values it must refuse.

:func:`whole_number` is the one "whole number, not bool" check of the package.
"""
from __future__ import annotations

import functools
import inspect
import math
import numbers
from dataclasses import dataclass

from .errors import BayesConceptsError


class ParamError(BayesConceptsError, ValueError):
    """A parameter outside its declared constraint (one line naming it)."""


def whole_number(name: str, value, least: int | None = 0, most: int | None = None, error=ParamError,
                 prefix: str = "", note: str = ""):
    """``value`` as an int when it is a whole number (an int or numpy integer, never a bool)
    within ``[least, most]``; else ``error(f"{prefix}{name} must be a whole number >= least{note},
    got value")`` -- the package's one whole-number check."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or \
            (least is not None and value < least) or (most is not None and value > most):
        bound = (f" in {least}..{most}" if least is not None and most is not None
                 else f" >= {least}" if least is not None else f" <= {most}" if most is not None else "")
        raise error(f"{prefix}{name} must be a whole number{bound}{note}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Interval:
    """Numbers of ``kind`` (``int``: whole numbers, never bools; ``float``: finite reals, ints
    included) between ``left`` and ``right`` (None: unbounded), each end included unless
    ``open_left``/``open_right``."""

    kind: type
    left: float | None = None
    right: float | None = None
    open_left: bool = False
    open_right: bool = False

    def accepts(self, value) -> bool:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral if self.kind is int else numbers.Real):
            return False
        if self.kind is not int and not math.isfinite(value):
            return False
        if self.left is not None and (value < self.left or self.open_left and value == self.left):
            return False
        return not (self.right is not None and (value > self.right or self.open_right and value == self.right))

    def __str__(self) -> str:
        what = "a whole number" if self.kind is int else "a finite number"
        if self.left is not None and self.right is not None:
            return (f"{what} in {'(' if self.open_left else '['}{self.left:g}, {self.right:g}"
                    f"{')' if self.open_right else ']'}")
        if self.left is not None:
            return f"{what} {'>' if self.open_left else '>='} {self.left:g}"
        if self.right is not None:
            return f"{what} {'<' if self.open_right else '<='} {self.right:g}"
        return what

    def bad(self) -> list:
        """Values this interval refuses (for the generated tests)."""
        out = [True, "1", None, math.nan]
        if self.kind is int:
            out.append(1.5)
        if self.left is not None:
            out.append(self.left - 1 if self.kind is int else self.left - 1e-3)
            if self.open_left:
                out.append(self.left)
        if self.right is not None:
            out.append(self.right + 1)
            if self.open_right:
                out.append(self.right)
        return out


@dataclass(frozen=True)
class Options:
    """One of the strings ``names``."""

    names: frozenset

    def __init__(self, names):
        object.__setattr__(self, "names", frozenset(names))

    def accepts(self, value) -> bool:
        return isinstance(value, str) and value in self.names

    def __str__(self) -> str:
        return "one of " + ", ".join(map(repr, sorted(self.names)))

    def bad(self) -> list:
        return ["no-such-" + "-".join(sorted(self.names))[:20], 1]


def _accepts(constraint, value) -> bool:
    if constraint is None:
        return value is None
    if isinstance(constraint, type):
        return isinstance(value, constraint) and not (constraint is int and isinstance(value, bool))
    return constraint.accepts(value)


def _describe(constraint) -> str:
    if constraint is None:
        return "None"
    if isinstance(constraint, type):
        return f"a {constraint.__name__}"
    return str(constraint)


def check_param(name: str, value, constraints, error=ParamError, prefix: str = ""):
    """Raise ``error`` (one line) unless ``value`` meets one of ``constraints`` (a constraint or a
    list of them); returns ``value``."""
    options = constraints if isinstance(constraints, list) else [constraints]
    if not any(_accepts(c, value) for c in options):
        raise error(f"{prefix}{name} must be {' or '.join(_describe(c) for c in options)}, got {value!r}")
    return value


#: The functions declared with :func:`validate_params`: ``{qualified name: function}`` (the
#: generated bad-input tests call each with every declared parameter set to a refused value).
validated: dict = {}


def validate_params(constraints: dict, error=ParamError):
    """Decorator: check the named parameters of every call against ``constraints`` (``{name:
    constraint or [constraints]}``) before the body runs.  The declaration is kept on the
    function (``__param_constraints__``), and the function in :data:`validated`."""
    def wrap(fn):
        signature = inspect.signature(fn)
        unknown = set(constraints) - set(signature.parameters)
        if unknown:
            raise TypeError(f"{fn.__qualname__}: constraints for unknown parameters {sorted(unknown)}")

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            for name, constraint in constraints.items():
                if name in bound.arguments:
                    check_param(name, bound.arguments[name], constraint, error)
            return fn(*args, **kwargs)
        checked.__param_constraints__ = dict(constraints)
        validated[f"{fn.__module__}.{fn.__qualname__}"] = checked
        return checked
    return wrap


def bad_values(constraints) -> list:
    """Values every one of ``constraints`` refuses (for the generated bad-input tests)."""
    options = constraints if isinstance(constraints, list) else [constraints]
    candidates = [v for c in options if hasattr(c, "bad") for v in c.bad()]
    return [v for v in candidates if not any(_accepts(c, v) for c in options)]


def cli_type(constraint, parse=None):
    """An argparse type from a constraint: the text read by ``parse`` (default: ``int`` for a
    whole-number :class:`Interval`, ``float`` otherwise), then checked as the API checks it."""
    import argparse
    read = parse or (int if isinstance(constraint, Interval) and constraint.kind is int else float)

    def convert(text):
        try:
            value = read(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {_describe(constraint)}, got {text!r}") from None
        if not _accepts(constraint, value):
            raise argparse.ArgumentTypeError(f"must be {_describe(constraint)}, got {text}")
        return value
    convert.__name__ = "whole number" if read is int else "number"
    return convert


# ------------------------------------------------------------------ declarations shared by several functions
#: Episodes per cell and seeds, as every computation over episodes takes them.
EPISODES = Interval(int, 1)
SEED = Interval(int, 0)
FLAG = bool
#: What :func:`~bayes_concepts.gap.compute_gap`, the ladder and the audit take.
RUN_PARAMS = {"n_episodes": EPISODES, "seed": SEED}
#: What :func:`~bayes_concepts.split_search.search_split` takes (the command line checks its
#: options with the same declarations).
SEARCH_PARAMS = {"test_share": Interval(float, 0, 1, open_left=True, open_right=True),
                 "share_tolerance": Interval(float, 0, 0.5, open_left=True, open_right=True),
                 "iterations": [Interval(int, 1), None], "budget_s": [Interval(float, 0, open_left=True), None],
                 "pool_episodes": Interval(int, 1), "seed": SEED, "method": Options({"anneal", "greedy"}),
                 "log_every_s": Interval(float, 0, open_left=True)}


class Settled:
    """Base of what settles its own splits, oracle settings and episodes
    (:class:`bayes_concepts.run.Run`): the functions that take a space take one in its place."""


def run_given(given, **settled) -> bool:
    """True when ``given`` is :class:`Settled` (a :class:`~bayes_concepts.run.Run`), after
    checking that none of ``settled`` (what a Run settles: splits, settings, episodes) is given
    beside it; False for a space."""
    if not isinstance(given, Settled):
        return False
    given = sorted(k for k, v in settled.items() if v is not None)
    if given:
        raise ParamError(f"{', '.join(given)}: a Run settles these itself; give them to resolve() instead")
    return True


__all__ = ["Settled", "run_given", "EPISODES", "SEED", "RUN_PARAMS", "SEARCH_PARAMS", "Interval", "Options", "ParamError", "check_param", "validate_params", "validated", "bad_values",
           "cli_type", "whole_number"]
