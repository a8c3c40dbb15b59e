"""The command line's shared options and argument types, and the registry of its commands.

A command of ``bayes-concepts`` is a :class:`Command` in the registry :data:`commands`: its
words on the command line (``gap``, or ``space build`` inside the group ``space``), its help,
the function adding its arguments and the function running it.  The built-in commands are
registered by the modules of :mod:`bayes_concepts.commands` (one per command group), a
benchmark's own commands by its package in :mod:`bayes_concepts.suites`; a plugin registers
more the same way::

    from bayes_concepts.options import command, whole

    def add_arguments(p):
        p.add_argument("--n", type=whole(1), default=3, help="how many (default 3)")

    @command("hello", help="say hello", order=1000, arguments=add_arguments)
    def hello(args) -> int:
        print("hello " * args.n)
        return 0

Everything else here is shared by the commands: argument types that refuse bad values in
one line (:func:`whole`, :func:`finite`), checks of output paths made before any work, the
options several commands take (:func:`oracle_options`, :func:`protocol_option`, ...), whose
choices and help come from the registries, read only when needed (building the parser imports
nothing heavy), and the progress, log and JSON output helpers.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .errors import BayesConceptsError
from .params import Interval, cli_type
from .registry import Registry
from .run import PROTOCOL_FIXES  # the options a protocol fixes (their dests)


# ------------------------------------------------------------------ the registry of commands
@dataclass(frozen=True)
class Command:
    """One command of ``bayes-concepts``, registered in :data:`commands`.

    ``words`` places it on the command line: ``("gap",)``, or ``("space", "build")`` for a
    command of the group ``space``.  A group (``run`` None) holds commands and takes no
    arguments of its own.  ``add_arguments(parser)`` adds the command's arguments to its
    parser; ``run(args)`` does the work and returns the exit status.  ``order`` places it
    among its group's commands in the help (lower first).  ``compiles``: it runs the numba
    kernels (the first run compiles them, which the command line announces).  ``own_parser``:
    a command line starting with ``words`` is parsed by a parser of its own (prog
    ``bayes-concepts WORDS``, with ``description``) -- how ``episodes show FILE INDEX`` stands
    beside ``episodes DIR ...``; such a command is not listed in its group's help.
    """

    words: tuple
    help: str | None
    order: int
    add_arguments: Callable | None = None
    run: Callable | None = None
    description: str | None = None
    compiles: bool = False
    own_parser: bool = False

    @property
    def name(self) -> str:
        """The command's words as typed: ``space build``."""
        return " ".join(self.words)

    @property
    def is_group(self) -> bool:
        return self.run is None


#: The commands of ``bayes-concepts``: :class:`Command` objects by their words joined with
#: dots (``gap``, ``space.build``); registered with :func:`command` and :func:`command_group`.
commands = Registry("command", builtins=("bayes_concepts.commands", "bayes_concepts.suites:command"))


def command(name: str, *, help: str | None, order: int, arguments: Callable, description: str | None = None,
            compiles: bool = False, own_parser: bool = False):
    """Register the decorated function ``run(args) -> exit status`` as command ``name`` (its
    words separated by spaces, ``"space build"``), whose arguments ``arguments(parser)``
    adds; the other fields as :class:`Command` has them."""
    def add(run):
        words = tuple(name.split())
        commands.register(".".join(words), Command(words, help, order, arguments, run, description, compiles,
                                                   own_parser))
        return run
    return add


def command_group(name: str, *, help: str, order: int) -> Command:
    """Register the group of commands ``name`` (``space``); its commands are registered as
    ``"space NAME"``."""
    words = tuple(name.split())
    group = Command(words, help, order)
    commands.register(".".join(words), group)
    return group


def subcommands(words: tuple = ()) -> list:
    """The commands and groups directly inside group ``words`` (``()``: the top level), in
    their help order."""
    inside = [c for _, c in commands.items() if c.words[:-1] == tuple(words)]
    return sorted(inside, key=lambda c: c.order)  # stable: registration order among equals


# ------------------------------------------------------------------ space build presets
#: Presets of ``space build --preset`` that build a space their own way (enumerated, or made
#: from a benchmark's definitions) instead of sampling programs from a grammar:
#: :class:`PresetBuild` objects by preset name.
preset_builds = Registry("space build preset", builtins=("bayes_concepts.commands", "bayes_concepts.suites:command"))


@dataclass(frozen=True)
class PresetBuild:
    """``space build OUT --preset NAME`` done by ``build(args) -> exit status`` (``args`` as
    the ``space build`` parser gives them); ``summary`` describes it in ``--preset``'s help.
    ``add_arguments(parser)`` adds the preset's own options to ``space build`` (default None
    each), listed in ``options`` as ``(option, dest, what it is)``: given with another preset,
    such an option is a one-line error."""

    summary: str
    build: Callable
    add_arguments: Callable | None = None
    options: tuple = ()


def space_presets() -> tuple:
    """The names ``space build --preset`` takes: the build settings of
    :data:`bayes_concepts.spaces.build.PRESETS`, then the presets of :data:`preset_builds`."""
    from .spaces.build import PRESETS
    return (*PRESETS, *preset_builds.names())


def preset_settings(preset) -> dict:
    """The build settings of ``preset`` (empty for None and for a preset of :data:`preset_builds`)."""
    from .spaces.build import PRESETS, preset_params
    return preset_params(preset) if preset in PRESETS else {}


# ------------------------------------------------------------------ the grammar option
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


# ------------------------------------------------------------------ checking input early
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


def check_output_file(path, option: str, create_parents: bool = False):
    """Raise unless a file can be written at ``path`` (checked before any computation); with
    ``create_parents``, missing parent folders are fine when they can be created (the writer
    creates them, as ``space build`` does)."""
    p = Path(path)
    if p.is_dir():
        raise BayesConceptsError(f"{option} {path}: is a directory; give a file name")
    parent = p.parent
    if parent.exists() and not parent.is_dir():
        raise BayesConceptsError(f"{option} {path}: {parent} is not a directory")
    if create_parents and not parent.exists():
        from .engine.store import nearest_existing_folder
        first, problem = nearest_existing_folder(parent)
        if problem == "not a directory":
            raise BayesConceptsError(f"{option} {path}: {first} is not a directory")
        if problem:
            raise BayesConceptsError(f"{option} {path}: cannot create folders in {first} (permission denied)")
        return
    if not parent.is_dir():
        raise BayesConceptsError(f"{option} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise BayesConceptsError(f"{option} {path}: cannot write into {parent} (permission denied)")
    if p.exists() and not os.access(p, os.W_OK):
        raise BayesConceptsError(f"{option} {path}: the file exists and is not writable")


def results_out_option(p, help_text: str = "also write the per-episode results (netCDF)", default=None):
    """--out FILE (a results file) and --force (let it replace a results file written earlier)."""
    p.add_argument("--out", metavar="results.nc", default=default, help=help_text)
    p.add_argument("--force", action="store_true",
                   help="let --out replace a results file bayes-concepts wrote earlier (a file it did not write is "
                        "never replaced)")


def check_results_out(args, option: str = "--out"):
    """Before any work: the ``--out`` results file of ``args`` may be written (its folder, and
    nothing there but, with ``--force``, a results file the toolkit wrote earlier); the checked
    target for :func:`~bayes_concepts.results.save_results`, None without ``--out``.
    ``--force`` without ``--out`` is refused (it would be ignored)."""
    if getattr(args, "out", None) is None:
        if getattr(args, "force", False):
            raise BayesConceptsError(f"--force: only with {option} (it lets {option} replace a results file "
                                     "bayes-concepts wrote earlier)")
        return None
    check_output_file(args.out, option, create_parents=True)  # save_results creates missing folders
    from .results import check_results_file
    return check_results_file(args.out, getattr(args, "force", False), option)


def check_output_dir(path, option: str):
    """Raise unless directory ``path`` exists or can be created, and files can be written in it."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise BayesConceptsError(f"{option} {path}: exists and is not a directory")
    from .engine.store import nearest_existing_folder
    first, problem = nearest_existing_folder(p)
    if problem == "not a directory":
        raise BayesConceptsError(f"{option} {path}: {first} is not a directory")
    if problem:
        raise BayesConceptsError(f"{option} {path}: cannot write into {first} (permission denied)")


def check_gap_memory(n_episodes: int, n_cells: int, n_learners: int = 2, option: str = "--episodes"):
    """Refuse, before any allocation, a comp-gap run whose results (``n_cells`` cells of
    ``n_episodes`` episodes, ``n_learners`` learners) cannot fit in the memory available:
    one line naming the option, the estimate and what is available."""
    from .scale import check_memory, gap_bytes
    check_memory(gap_bytes(n_episodes, n_cells, n_learners, keep_episodes=n_learners > 2),
                 f"{option} {n_episodes}", "give fewer episodes (or fewer splits)",
                 f"results of {n_cells} cell(s) x {n_learners} learner(s)")


# ------------------------------------------------------------------ output
def json_safe(value):
    """``value`` with NaN and infinities as None and numpy scalars as Python numbers, so the
    printed JSON is valid (the standard has no NaN)."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def print_json(value):
    print(json.dumps(json_safe(value), allow_nan=False, ensure_ascii=False))


class LogProgress:
    """Stands in for stderr while a progress bar runs and stderr is not a terminal: the
    bar's redraws (text starting with a carriage return) become one line every ``every``
    seconds (the first at once); all other text passes through."""

    def __init__(self, stream, every: float = 15.0):
        self.stream, self.every, self.last = stream, every, -math.inf

    def write(self, text):
        if not text.startswith("\r"):
            return self.stream.write(text)
        line = text.strip("\r\n ")
        now = time.monotonic()
        if line and now - self.last >= self.every:
            self.last = now
            self.stream.write(line + "\n")
            self.stream.flush()
        return len(text)

    def flush(self):
        self.stream.flush()


def progress_output():
    """A context manager to run work with progress bars in: on a terminal, nothing; else
    stderr with the bars' redraws throttled into log lines."""
    if sys.stderr.isatty():
        return contextlib.nullcontext()
    return contextlib.redirect_stderr(LogProgress(sys.stderr))


def log_line(msg):
    """Print ``msg`` as one line on stderr (a log line of long work), at once."""
    print(msg, file=sys.stderr, flush=True)


def counted(n: int, word: str, plural: str | None = None) -> str:
    """``1 episode``, ``2,000 episodes``: a count with its noun in the right number."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


@contextlib.contextmanager
def nothing_written(out):
    """Ctrl-C in the block (a build, before its save) says that nothing was written to ``out``."""
    from .scale import Interrupted
    try:
        yield
    except KeyboardInterrupt as exc:
        if isinstance(exc, Interrupted):
            raise
        raise Interrupted(f"while building {out}: nothing was written to {out}") from None


def caused_by_interrupt(exc):
    """The KeyboardInterrupt ``exc`` was raised while handling (or because of), or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, KeyboardInterrupt):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


# ------------------------------------------------------------------ spaces, splits and protocols
def open_space(path):
    """The saved space in folder ``path``, of any kind: a HypothesisSpace, or an ExtensionSpace
    (pair benchmarks, ConceptWorld)."""
    from .spaces import load_space
    return load_space(path)


OVERRIDE_NOTE = "; with --protocol: given explicitly, replaces the protocol's value (recorded as an override)"


def protocol_option(p, help_text: str | None = None):
    p.add_argument("--protocol", choices=LazyChoices(lazy_registry("protocols", "protocols")), metavar="NAME",
                   default=None,
                   help=help_text or LazyHelp(lambda: "compute as a named protocol: its splits, oracle settings and "
                                      "query negatives (" + describe_choices(lazy_registry("protocols", "protocols")()) + "); an "
                                      "oracle or negatives option given explicitly with "
                                      "it replaces the protocol's value for this run, recorded in the results "
                                      "(attrs protocol_overrides) and in the printed settings"))


def resolve_args(args, what: str = "score", splits=None, space=None):
    """The :class:`~bayes_concepts.run.Run` the command line describes (``what``: the verb an
    error names): the space ``DIR``, ``--protocol``, ``--split`` (or ``splits``), ``--spec``,
    ``--episode-shape`` and the oracle and negatives options given explicitly (an option left
    out: the protocol's value, else the library's default, which is the option's).  A refused
    value is one line naming its option."""
    from .run import RunError, resolve
    given = given_options(args)
    settings = {k: getattr(args, k) for k in PROTOCOL_FIXES if k in given}
    try:
        return resolve(space if space is not None else open_space(args.dir), getattr(args, "protocol", None),
                       split_names(args) if splits is None else splits, getattr(args, "spec", None),
                       episode_shape=episode_shape(args), what=what, **settings)
    except RunError as exc:
        if exc.field is not None:
            raise BayesConceptsError(f"--{exc.field.replace('_', '-')} {str(exc).partition(' ')[2]}") from None
        raise


def override_text(args, run) -> str:
    """How the run of ``args`` is computed, as a line's part: ``protocol curi-release overridden
    by --prior length`` (empty without a protocol)."""
    return run.describe(lambda k: f"--{k.replace('_', '-')} {getattr(args, k)}")


# ------------------------------------------------------------------ oracle and episode options
def run_info(ds) -> dict:
    """The run's settings from a results Dataset's attributes, for --json output: the oracle
    settings as an object, the seed, episodes per cell, negatives and the space's hash."""
    info = {}
    for key, value in ds.attrs.items():
        if isinstance(value, str) and value.startswith(("{", "[")):  # attributes holding JSON (settings, ...)
            try:
                value = json.loads(value)
            except ValueError:
                pass
        info["settings" if key == "oracle_settings" else key] = value
    return info


def split_option(p, help_text: str, required: bool = False):
    """--split NAME [NAME ...] (every command takes several names the same way; see
    :func:`split_names`, :func:`one_split`)."""
    p.add_argument("--split", nargs="+", metavar="NAME", required=required, default=None, help=help_text)


def split_names(args):
    """The split names of --split as a list, None for all (left out, or ``all`` alone);
    ``all`` beside other names is an error."""
    names = getattr(args, "split", None)
    if not names or names == ["all"]:
        return None
    if "all" in names:
        raise BayesConceptsError(f"--split {' '.join(names)}: 'all' stands alone (it means every split)")
    return list(names)


def one_split(args, what: str):
    """The one split name of --split for a command that works on one split (``what``: why,
    e.g. "episodes are drawn for one split"), None when left out; several is one line."""
    names = getattr(args, "split", None)
    if names is None:
        return None
    if len(names) != 1:
        raise BayesConceptsError(f"--split {' '.join(names)}: {what}; give one name (run once per split)")
    return names[0]


def episode_shape_option(p, what: str = "for every split, in place of its spec's [episodes] table"):
    p.add_argument("--episode-shape", metavar="P,N[,QP,QN]", default=None,
                   help="episode shape: P positives and N negatives in the support set, QP and QN in the query set "
                        f"(default: as the support; 5,20 when nothing says otherwise); {what}")


def episode_shape(args):
    """The --episode-shape of ``args`` as an EpisodeShape, or None when not given (bad text: one line)."""
    from .episodes import EpisodeShape
    text = getattr(args, "episode_shape", None)
    return None if text is None else EpisodeShape.parse(text, "--episode-shape")


# ------------------------------------------------------------------ choices and help from registries
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


def hard_mode_option(p, protocol: bool = False):
    modes = lazy_registry("episodes", "hard_negative_modes")
    p.add_argument("--hard-mode", choices=LazyChoices(modes), metavar="MODE", default="union", action=Given,
                   help=LazyHelp(lambda: f"how hard negatives are drawn ({describe_choices(modes())}; default union)"
                                  + (OVERRIDE_NOTE if protocol else "")))


def oracle_options(p, protocol: bool = False):
    """--prior, --beta, --likelihood, --epsilon, --weak-empty and --seed; with ``protocol`` (the
    command has --protocol) their help says that, given explicitly, they override the protocol."""
    priors, likelihoods = lazy_registry("oracles", "priors"), lazy_registry("oracles", "likelihoods")
    empty_policies = lazy_registry("oracles", "empty_policies")
    note = OVERRIDE_NOTE if protocol else ""
    p.add_argument("--prior", choices=LazyChoices(priors), metavar="NAME", default="length", action=Given,
                   help=LazyHelp(lambda: f"prior over concepts ({describe_choices(priors())}; default length){note}"))
    p.add_argument("--beta", type=finite, default=0.2, action=Given,
                   help=f"rate of the length prior per token (default 0.2){note}")
    p.add_argument("--likelihood", choices=LazyChoices(likelihoods), metavar="NAME", default="size", action=Given,
                   help=LazyHelp(lambda: f"likelihood of the support labels ({describe_choices(likelihoods())}; "
                                          f"default size){note}"))
    p.add_argument("--epsilon", type=finite, default=0.05, action=Given,
                   help=f"label-noise rate of the noisy likelihood, in (0, 0.5) (default 0.05){note}")
    p.add_argument("--weak-empty", choices=LazyChoices(empty_policies), metavar="POLICY", default="zero",
                   action=Given,
                   help=LazyHelp(lambda: f"what an oracle does when no concept fits the support "
                                          f"({describe_choices(empty_policies())}; default zero){note}"))
    p.add_argument("--seed", type=whole(0), default=0, help="seed of the episodes (a whole number >= 0; default 0)")


def ap_tolerance_option(p):
    """--ap-tolerance (gap and audit; it overrides a protocol's value when given)."""
    p.add_argument("--ap-tolerance", type=finite, default=None, action=Given, metavar="T",
                   help="the largest error allowed in each episode's AP on the test bank, a fraction in [0, 1]: "
                        "AP is computed to within T with a certificate, the results hold each episode's "
                        "certified bound (ap_bound) and the table's footer states T.  0 computes AP exactly.  "
                        "Default: 1e-4 for a likelihood that is not consistent-only (noisy), 0 for the others "
                        "(size, consistent), whose AP is exact anyway: with them a tolerance above 0 holds "
                        "with every bound 0, and applies only to the episodes the noisy weak-empty policy "
                        "scores with the noisy likelihood" + OVERRIDE_NOTE)


def scheduler_option(p, what: str, reads_space: bool = False):
    p.add_argument("--scheduler", metavar="local:N|ADDRESS", default=None,
                   help=f"run {what} on Dask: local:N starts a LocalCluster of N processes on this machine, "
                        "ADDRESS (tcp://host:8786) joins a running cluster whose workers have this package "
                        "installed" + (" and see the space at the same path" if reads_space else "")
                        + "; default: this process.  The "
                        "results are the same, value for value, wherever they run (guide: Scale out with Dask).")
