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
import functools
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
    or ``"PACKAGE:MODULE"``: the module ``MODULE`` of each suite (:func:`suite_packages`: the
    packages ``PACKAGE.SUITES`` lists, then every installed suite, an entry point of the group
    :data:`SUITE_GROUP`; a suite without that module is skipped), as the registries the benchmark
    suites fill name them (``"bayes_concepts.suites:protocols"``), so that only the part of each
    suite a registry needs is imported.  The package's own suites and installed ones are found
    the same way, whoever asks first: ``import bayes_concepts``, a notebook or the command line.
    The modules of the entry points of :data:`PLUGIN_GROUP` (plugins that register on import)
    are imported on the first use of any registry with built-ins (:func:`load_installed_plugins`).  They are imported on the registry's first use, so every
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
            load_installed_plugins()
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


#: The entry-point group of suites: name = the suite's package (``bayes_concepts.suites.curi``,
#: ``toybench``), whose modules ``protocols``, ``presets``, ``published``, ``plots``, ``parts``
#: and ``command`` the registries import when first used.  The package declares its own suites
#: in this group too (pyproject.toml).
SUITE_GROUP = "bayes_concepts.suites"
#: The entry-point group of plugins: a module that registers extensions when imported.
PLUGIN_GROUP = "bayes_concepts.plugins"


@functools.lru_cache(maxsize=None)
def _entry_points(group: str) -> tuple:
    """The installed entry points of ``group`` (read once per process)."""
    from importlib.metadata import entry_points
    return tuple(entry_points(group=group))


def suite_packages(package: str = "bayes_concepts.suites") -> tuple:
    """The suites' packages, in the order registries list their entries: ``package``'s own
    (``package.SUITES``, the order its pyproject declares them in group :data:`SUITE_GROUP`),
    then the installed suites of that group, by entry-point name."""
    own = [f"{package}.{s}" for s in getattr(import_module(package), "SUITES", ())]
    installed = sorted(_entry_points(SUITE_GROUP), key=lambda ep: ep.name)
    return tuple(dict.fromkeys([*own, *(ep.value for ep in installed)]))


_plugins_loaded = False


def load_installed_plugins():
    """Import the module of every entry point of :data:`PLUGIN_GROUP` (once per process); a
    plugin that fails to import is one line naming it."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for ep in _entry_points(PLUGIN_GROUP):
        try:
            ep.load()
        except Exception as exc:  # noqa: BLE001 -- any error of a plugin's code is one line naming it
            from .errors import BayesConceptsError
            text = " ".join(str(exc).split()) or type(exc).__name__
            raise BayesConceptsError(f"plugin {ep.value} (entry point {ep.name} of group {PLUGIN_GROUP}): "
                                     f"{text}") from None


def _builtin_modules(spec: str) -> list:
    """The modules a built-in ``spec`` names (see :class:`Registry`)."""
    if ":" not in spec:
        return [spec]
    package, module = spec.split(":", 1)
    out = []
    for suite in suite_packages(package):
        name = f"{suite}.{module}"
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
    suites = suite_packages(package)

    def rank(origin):
        for i, suite in enumerate(suites):
            if origin == f"{suite}.{module}" or origin.startswith(f"{suite}.{module}."):
                return i
        return None
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
