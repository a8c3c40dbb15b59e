"""The ``bayes-concepts`` command.

Subcommands::

    bayes-concepts explain PROGRAM            readable form, LaTeX, length, PCFG log-prob, uses x
    bayes-concepts eval PROGRAM [PROGRAM ...] --scenes FILE.jsonl [--json]
    bayes-concepts sample [--n N] [--seed S]  draw programs from the grammar
    bayes-concepts space build|info|show      hypothesis spaces
    bayes-concepts splits DIR                 train/val/test sizes and leakage of every split
    bayes-concepts splits search DIR --out SPEC.toml   the hardest fair split (a spec file, with its audit)
    bayes-concepts episodes DIR --split S ... sample episodes; episodes show FILE INDEX
    bayes-concepts gap DIR                    the comp-gap table (strong vs weak oracle)
    bayes-concepts train DIR --split S --learner schema-relnet --out MODEL_DIR   a neural baseline
    bayes-concepts render DIR SCENE_ID [--sound] --out FILE   one scene as a picture (PNG) or sound (WAV)
    bayes-concepts render DIR --bank [--sound]    every scene, cached (checksummed) in DIR/rendered/
    bayes-concepts posterior DIR --support F  the oracles' posterior for a support set
    bayes-concepts audit DIR --spec FILE      a one-page report on a new split
    bayes-concepts figures RESULTS.nc --space DIR --out figs/
    bayes-concepts demo                       the main job on the built-in demo space
    bayes-concepts people shj [--out DIR]     the ideal observer fitted to people (Shepard, Hovland & Jenkins)

Every command is a :class:`~bayes_concepts.command_registry.Command` of the registry
:data:`bayes_concepts.command_registry.commands` (the built-in ones in :mod:`bayes_concepts.commands`);
this module assembles the parser from it and runs the command asked for.

Bad input (a malformed program, a bad scene file, an option out of range, an output
path that cannot be written) prints one line on stderr and exits with status 2, before
any long computation; nothing is left half-written and nothing the toolkit did not write
is deleted.  Output piped into ``head`` ends quietly.  Progress of long work goes to
stderr: bars on a terminal, a line every 15 s when stderr is a file.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from . import __version__
from .errors import BayesConceptsError
from .command_registry import commands, subcommands
from .options import Parser
from .terminal import caused_by_interrupt


def build_parser() -> Parser:
    """The parser of ``bayes-concepts``: its global options, then every registered command (a
    group as a subparser holding its commands), in help order; commands with a parser of their
    own (:attr:`~bayes_concepts.command_registry.Command.own_parser`) are left to :func:`own_parser`."""
    ap = Parser(prog="bayes-concepts", description="Bayesian oracles for compositional concept learning")
    ap.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    ap.add_argument("--plugin", metavar="MODULE", action="append",
                    help="import MODULE first, so the priors, likelihoods, split rules, ... it registers are "
                         "choices (repeatable; installed packages can also register through the entry-point "
                         "group bayes_concepts.plugins)")
    ap.add_argument("--grammar", metavar="FILE|NAME",
                    help="grammar file, or the name of one shipped with the package: curi.pcfg (CURI's language, the "
                         "default), curi_release.pcfg, clevr.pcfg (hypotheses/NAME works from anywhere, a wheel "
                         "install included)")
    sub = ap.add_subparsers(dest="command", required=True)
    _add_commands(sub, ())
    return ap


def _add_commands(sub, words: tuple):
    """Add the commands inside group ``words`` to the subparsers ``sub``."""
    for cmd in subcommands(words):
        if cmd.own_parser:
            continue
        p = sub.add_parser(cmd.words[-1], help=cmd.help, description=cmd.description)
        if cmd.is_group:
            _add_commands(p.add_subparsers(dest=f"{cmd.words[-1]}_command", required=True), cmd.words)
        else:
            cmd.add_arguments(p)
            p.set_defaults(func=cmd.run, command_entry=cmd)


def own_parser(argv):
    """``(command, parser)`` when ``argv`` starts with the words of a command parsed by a parser of
    its own (``episodes show FILE INDEX`` beside ``episodes DIR``), the parser taking the rest of
    ``argv``; else None."""
    for _, cmd in commands.items():
        if cmd.own_parser and list(argv[:len(cmd.words)]) == list(cmd.words):
            p = Parser(prog=f"bayes-concepts {cmd.name}", description=cmd.description)
            cmd.add_arguments(p)
            return cmd, p
    return None


def load_plugins(argv) -> list:
    """Import the modules that register extensions (priors, likelihoods, split rules, ...)
    before the parser takes its choices from the registries: every ``--plugin MODULE`` of
    ``argv``, and every entry point of the group ``bayes_concepts.plugins`` of installed
    packages.  Returns ``argv`` without the ``--plugin`` options."""
    from importlib import import_module
    from .registry import load_installed_plugins
    rest, modules = [], []
    i = 0
    while i < len(argv):
        if argv[i] == "--plugin" and i + 1 < len(argv):
            modules.append(argv[i + 1])
            i += 2
        elif argv[i].startswith("--plugin="):
            modules.append(argv[i].split("=", 1)[1])
            i += 1
        else:
            rest.append(argv[i])
            i += 1
    load_installed_plugins()  # as every registry's first use does: the API and notebooks see them too
    for name in modules:
        try:
            import_module(name)
        except Exception as exc:  # noqa: BLE001
            raise BayesConceptsError(f"--plugin {name}: {_plugin_problem(exc)}") from None
    return rest


def _plugin_problem(exc) -> str:
    """What went wrong importing a plugin module, in a few words (its own line where it raised)."""
    if isinstance(exc, ModuleNotFoundError):
        return f"cannot import it ({exc})"
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, ValueError) and "already registered" in text:
        return (f"{text.replace(' (pass replace=True)', '')}: a plugin registers names of its own (register with "
                "replace=True to replace one on purpose)")
    import traceback
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name} line {frames[-1].lineno}" if frames else ""
    return f"importing it raised {type(exc).__name__}{where}: {text}"


def _silence_stdout():
    """After a broken pipe: point stdout at /dev/null, so that the interpreter's final flush
    of what is still buffered does not fail a second time (with a message on stderr)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file descriptor (tests capture it)
        pass


def _kernels_cached() -> bool:
    """Whether numba's on-disk cache already holds the oracles' kernels, compiled by an earlier
    run: under ``NUMBA_CACHE_DIR`` when it is set (numba then caches nowhere else), else beside
    the module (``__pycache__``)."""
    where = os.environ.get("NUMBA_CACHE_DIR")
    place = Path(where) if where else Path(__file__).resolve().parent / "oracles" / "__pycache__"
    return place.is_dir() and next(place.rglob("kernels.*.nbi"), None) is not None


def run() -> int:
    """The ``bayes-concepts`` command as a process: fewer garbage collections
    (:func:`~bayes_concepts.collector.collect_less`: a command builds millions of small objects
    that stay alive, and each full collection walked all of them again), then :func:`main`, which
    called from Python, as the tests and notebooks do, leaves the interpreter as it was."""
    from .collector import collect_less
    collect_less()
    return main()


def main(argv=None) -> int:
    started = time.perf_counter()  # train --budget counts from here
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        argv = load_plugins(argv)
    except BayesConceptsError as exc:
        print(f"bayes-concepts: error: {exc}", file=sys.stderr)
        return 2
    own = own_parser(argv)
    if own is not None:
        cmd, parser = own
        args = parser.parse_args(argv[len(cmd.words):])
        args.func, args.command_entry = cmd.run, cmd
    else:
        args = build_parser().parse_args(argv)
    args.started = started
    if args.command_entry.compiles:  # a bad memory setting in the environment, before any work
        from .scale import ScaleError, mapped_rss_budget
        try:
            mapped_rss_budget()
        except ScaleError as exc:
            print(f"bayes-concepts: error: {exc}", file=sys.stderr)
            return 2
    # (not inside the test suite, whose checks of one-line errors and quiet runs hold for a
    # fresh clone too; tests/test_ladder.py checks the line itself)
    if args.command_entry.compiles and not os.environ.get("PYTEST_CURRENT_TEST") and not _kernels_cached():
        print("bayes-concepts: compiling the numba kernels once (about a minute on a 2-core machine; later runs "
              "reuse them from the cache, and progress estimates settle after the first step)", file=sys.stderr)
    from .scale import safe_interrupts
    try:
        with safe_interrupts():  # Ctrl-C never inside numba's Python code (a SystemError, a crash)
            status = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's final flush
        return status
    except KeyboardInterrupt as exc:
        return _interrupted(exc)
    except BaseException as exc:
        if caused_by_interrupt(exc):  # an error while unwinding from Ctrl-C: the interrupt is the news
            return _interrupted(caused_by_interrupt(exc))
        return _failure(exc)


def _interrupted(exc) -> int:
    """Ctrl-C: one line (what the interrupted work left and how it is cleaned, when it says), 130."""
    detail = str(exc) if type(exc) is not KeyboardInterrupt else ""
    print("bayes-concepts: interrupted" + (f" {detail}" if detail else ""), file=sys.stderr)
    return 130


def _failure(exc) -> int:
    """The exit status (and one line on stderr) of an exception a command raised."""
    try:
        raise exc
    except BayesConceptsError as exc:
        print(f"bayes-concepts: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into head & co.: stop quietly
        _silence_stdout()
        return 0
    except (FileExistsError, ValueError) as exc:
        print(f"bayes-concepts: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        name = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"bayes-concepts: error:{name}: {exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(run())
