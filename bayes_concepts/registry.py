"""Named extension points: a :class:`Registry` maps a name to an implementation.

Every place where the toolkit offers a choice (a prior, a likelihood, a weak-empty
policy, a hard-negative mode, a held-out split rule) is a registry, and the command
line takes its choices from it.  Adding a new choice is one decorated function, in
the manner of scikit-learn's scorers or pynndescent's named distances::

    import bayes_concepts as bc

    @bc.priors.register("short_only")
    def short_only(space, concepts, settings):
        '''log weight 0 for programs of <= 8 tokens, -inf otherwise'''
        return np.where(space.lengths[concepts] <= 8, 0.0, -np.inf)

    bc.compute_gap(space, splits, settings=bc.OracleSettings(prior="short_only"))
"""
from __future__ import annotations

import re
import sys
from importlib import import_module
from typing import Callable, Iterator


class Registry:
    """A named collection of implementations of one extension point.

    ``what`` names the kind of thing (``"prior"``) in error messages.  ``names()`` is what a
    command line offers as choices: the built-in entries first, in the order of their
    modules in ``builtins`` and of registration within a module, then the others in
    registration order -- the same whichever module was imported first.

    ``builtins`` names the modules or packages (dotted paths) whose import registers the
    built-in entries (an entry registered by a module inside a built-in package is built in),
    or ``"PACKAGE:MODULE"``: the module ``MODULE`` of each package that ``PACKAGE.SUITES`` lists
    (in that order; a suite without one is skipped), as the registries the benchmark suites
    fill name them (``"bayes_concepts.suites:protocols"``), so that only the part of each suite
    a registry needs is imported.  They are imported on the registry's first use, so every
    built-in name resolves in a fresh process whichever modules happen to have been imported,
    and the module holding the registry never imports the modules that fill it (no import
    cycle).
    """

    def __init__(self, what: str, doc: str = "", builtins: tuple = ()):
        self.what = what
        self._registered: dict = {}
        self._origin: dict = {}  # name -> the module that registered it
        self._builtins = tuple(builtins)
        self._loading = not self._builtins
        if doc:
            self.__doc__ = doc

    @property
    def _entries(self) -> dict:
        if not self._loading:
            self._loading = True  # set first: the modules imported here register into this table
            for spec in self._builtins:
                for module in _builtin_modules(spec):
                    import_module(module)
        return self._registered

    def register(self, name: str, obj=None, *, replace: bool = False):
        """Register ``obj`` under ``name``; used bare as a decorator, ``@registry.register("name")``.

        Registering a name twice is an error unless ``replace=True``.
        """
        if not isinstance(name, str) or not name or name != name.strip() or " " in name:
            raise ValueError(f"a {self.what} name must be a non-empty word, got {name!r}")
        origin = sys._getframe(1).f_globals.get("__name__")

        def add(o):
            if name in self._entries and not replace:
                raise ValueError(f"a {self.what} named {name!r} is already registered (pass replace=True)")
            self._entries[name] = o
            self._origin[name] = origin
            return o

        return add if obj is None else add(obj)

    def unregister(self, name: str):
        """Remove ``name`` (e.g. at the end of a test that registered it)."""
        self.get(name)
        del self._entries[name]

    def get(self, name: str):
        """The implementation registered as ``name``; a ValueError naming the choices if none."""
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise ValueError(f"unknown {self.what} {name!r} (expected one of {', '.join(self.names())})") from None

    def names(self) -> tuple:
        entries = self._entries
        ranks = [_builtin_rank(spec) for spec in self._builtins]

        def rank(name):  # (which built-in, which suite of it); registration order within a rank
            origin = self._origin.get(name) or ""
            return next(((i, r) for i, ranked in enumerate(ranks) if (r := ranked(origin)) is not None),
                        (len(ranks), 0))
        return tuple(sorted(entries, key=rank))

    def __contains__(self, name) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def items(self):
        return [(n, self._entries[n]) for n in self.names()]

    def __repr__(self):
        return f"Registry({self.what!r}: {', '.join(self.names())})"


def _suites_of(package: str) -> tuple:
    return tuple(getattr(import_module(package), "SUITES", ()))


def _builtin_modules(spec: str) -> list:
    """The modules a built-in ``spec`` names (see :class:`Registry`)."""
    if ":" not in spec:
        return [spec]
    package, module = spec.split(":", 1)
    out = []
    for suite in _suites_of(package):
        name = f"{package}.{suite}.{module}"
        try:
            import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # the module exists and fails to import something else
                raise
            continue
        out.append(name)
    return out


def _builtin_rank(spec: str) -> Callable:
    """A function of a registering module's name: its rank within the built-in ``spec`` (0 for
    a module or package spec; the suite's position for ``PACKAGE:MODULE``), or None."""
    if ":" not in spec:
        return lambda origin: 0 if origin == spec or origin.startswith(spec + ".") else None
    package, module = spec.split(":", 1)
    suites = _suites_of(package)

    def rank(origin):
        head, _, rest = origin.partition(package + ".")
        suite, _, tail = rest.partition(".")
        if head or suite not in suites or not (tail == module or tail.startswith(module + ".")):
            return None
        return suites.index(suite)
    return rank


def describe(obj: Callable) -> str:
    """One line on a registered implementation (for help texts): its ``summary`` attribute if
    it has one, else the first paragraph of its docstring -- whole sentences however many
    lines they take, joined into one line, with reStructuredText markup (````code````,
    ``:role:`target```) shown as plain text and without a closing full stop (help texts list
    the choices as ``name: description; name: description``)."""
    summary = getattr(obj, "summary", None)
    if isinstance(summary, str):
        text = summary
    else:
        paragraph = []
        for line in (getattr(obj, "__doc__", None) or "").strip().splitlines():
            if not line.strip():
                break
            paragraph.append(line.strip())
        text = " ".join(paragraph)
    text = _plain(text)
    return text[:-1] if text.endswith(".") and not text.endswith("..") else text


def _plain(text: str) -> str:
    """``text`` on one line without reStructuredText markup: ````x```` -> x,
    ``:func:`~a.b.c``` -> c, ``:data:`name``` -> name."""
    text = re.sub(r":[a-z]+:`~?([^`]*)`", lambda m: m.group(1).rsplit(".", 1)[-1] if "~" in m.group(0)
                  else m.group(1), text)
    text = text.replace("``", "")
    return " ".join(text.split())
