"""The command line's argument types and the options several commands share.

Argument types refuse a bad value in one line (:func:`whole`, :func:`finite`: the constraints
the API declares, :mod:`bayes_concepts.params`); an option is stored once (:class:`Parser`), and
an option given explicitly is told from one left out (:class:`Given`).  The options several
commands take (:func:`oracle_options`, :func:`protocol_option`, :func:`split_option`, ...) have
their choices and help from the registries, read only when needed (building the parser imports
nothing heavy).  :func:`resolve_args` turns the arguments into the
:class:`~bayes_concepts.run.Run` the command computes with.  The registry of commands is
:mod:`bayes_concepts.command_registry`; what commands print, :mod:`bayes_concepts.terminal`; the
checks made before any work, :mod:`bayes_concepts.preflight`.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from .errors import BayesConceptsError
from .params import Interval, cli_type


def grammar_of(args):
    """The grammar the global ``--grammar`` names (:func:`grammar_path`), else CURI's."""
    from .lot import curi_grammar, load_grammar
    return load_grammar(grammar_path(args.grammar)) if args.grammar else curi_grammar()


def grammar_path(text):
    """``--grammar``'s file: a path that exists, else a grammar shipped in the package named as
    ``clevr.pcfg``, ``clevr`` or ``hypotheses/clevr.pcfg`` (the source tree's name, which a
    wheel install has under the package), else the path as given (loading it names it)."""
    if text is None or Path(text).exists():
        return text
    p = Path(text)
    if p.parent in (Path("."), Path("hypotheses")):
        from .resources import DataFileError, data_file
        try:
            return data_file(p.name if p.suffix == ".pcfg" else p.name + ".pcfg")
        except DataFileError:
            pass
    return text


def check_depth_option(grammar, max_depth):
    """Raise, naming ``--max-depth``, unless ``grammar`` can derive a program within ``max_depth``."""
    from .lot.sampler import check_max_depth
    try:
        check_max_depth(grammar, max_depth)
    except BayesConceptsError as exc:
        raise BayesConceptsError(f"--max-depth {max_depth}: {exc}") from None


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (as the toolkit's other errors), and
    whose options store once: an option given twice (``--split a --split b``) is an error
    naming it, never the last one silently winning (see :class:`Once`; options meant to be
    repeated say so with ``action="append"``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, action in ((None, OnceStore), ("store", OnceStore), ("store_const", OnceStoreConst),
                             ("store_true", OnceStoreTrue), ("store_false", OnceStoreFalse)):
            self.register("action", name, action)  # argument groups share these

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class Once:
    """Mixin of a storing argparse action: an option given a second time on one command line
    is a usage error naming it (a list goes after one ``--split a b``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if self.option_strings:
            seen = getattr(namespace, "_once", set())
            if self.dest in seen:
                several = " with all its values after it (e.g. --split a b)" if self.nargs in ("+", "*") else ""
                parser.error(f"{option_string} given twice: give it once{several}")
            namespace._once = seen | {self.dest}
        super().__call__(parser, namespace, values, option_string)


class OnceStore(Once, argparse._StoreAction):
    pass


class OnceStoreConst(Once, argparse._StoreConstAction):
    pass


class OnceStoreTrue(Once, argparse._StoreTrueAction):
    pass


class OnceStoreFalse(Once, argparse._StoreFalseAction):
    pass


class Given(Once, argparse._StoreAction):
    """Store action that also records the option as given on the command line (in
    ``args._given``), so an option given with its default value is told from one left out."""

    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        namespace._given = set(getattr(namespace, "_given", ())) | {self.dest}


def given_options(args) -> set:
    """The ``dest`` names of the :class:`Given` options given on the command line."""
    return set(getattr(args, "_given", ()))


def whole(minimum: int):
    """argparse type: a whole number >= ``minimum`` (:class:`~bayes_concepts.params.Interval`, as
    the API checks it)."""
    return cli_type(Interval(int, minimum))


#: argparse type: a finite float (no nan, inf or overflow).
finite = cli_type(Interval(float))


def results_out_option(p, help_text: str = "also write the per-episode results (netCDF)", default=None):
    """--out FILE (a results file) and --force (let it replace a results file written earlier)."""
    p.add_argument("--out", metavar="results.nc", default=default, help=help_text)
    p.add_argument("--force", action="store_true",
                   help="let --out replace a results file bayes-concepts wrote earlier (a file it did not write is "
                        "never replaced)")


def predictions_option(p):
    """--predictions FILE (repeatable) and --name NAME (one per file): a model outside the
    toolkit scored from its predictions file (:mod:`bayes_concepts.predictions`)."""
    p.add_argument("--predictions", action="append", metavar="FILE.npz",
                   help="also score a model from its predictions file (query probabilities and test-bank scores for "
                        "the episodes of 'episodes export' with this run's splits, negatives, --episodes, --seed and "
                        "episode shape), on the same episodes and metrics as an in-process learner; repeatable")
    p.add_argument("--name", action="append", metavar="NAME",
                   help="the model's name in the results, one per --predictions file in order (default: the file's "
                        "own name, else its stem)")


def lazy_registry(module: str, name: str):
    """A thunk giving the registry ``name`` of ``bayes_concepts.<module>``, imported when first
    called: building the parser imports nothing heavy, so a request refused before any work (e.g.
    too many episodes for the memory) never pays for numba, scipy and xarray."""
    def load():
        from importlib import import_module
        return getattr(import_module(f"{__package__}.{module}"), name)
    return load


class LazyChoices:
    """Names as argparse ``choices``, read on first use (a value given for the option, an error
    message, --help) from ``load()``: a registry (its names) or any iterable of names.  Options
    using it set a ``metavar``: argparse would otherwise spell every choice into the usage line
    when the option is added."""

    def __init__(self, load):
        self._load = load

    def _names(self) -> tuple:
        return tuple(self._load())

    def __contains__(self, value) -> bool:
        return value in self._names()

    def __iter__(self):
        return iter(self._names())


class LazyHelp:
    """An option's help text built when help is shown (it describes a registry's entries)."""

    def __init__(self, make):
        self._make = make

    def __str__(self) -> str:
        return self._make()

    def __mod__(self, params) -> str:  # argparse expands %(default)s and the like with "%"
        return self._make() % params

    def strip(self) -> str:
        return self._make().strip()

    def __contains__(self, text) -> bool:
        return text in self._make()


def describe_choices(registry) -> str:
    from .registry import describe
    return "; ".join(f"{name}: {describe(obj)}" for name, obj in registry.items()).replace("%", "%%")  # help text
