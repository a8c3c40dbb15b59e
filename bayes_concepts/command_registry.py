"""The registry of the command line's commands.

A command of ``bayes-concepts`` is a :class:`Command` in the registry :data:`commands`: its
words on the command line (``gap``, or ``space build`` inside the group ``space``), its help,
the function adding its arguments and the function running it.  The built-in commands are
registered by the modules of :mod:`bayes_concepts.commands` (one per command group), a
benchmark's own commands by its package in :mod:`bayes_concepts.suites`; a plugin registers
more the same way::

    from bayes_concepts.command_registry import command
    from bayes_concepts.options import whole

    def add_arguments(p):
        p.add_argument("--n", type=whole(1), default=3, help="how many (default 3)")

    @command("hello", help="say hello", order=1000, arguments=add_arguments)
    def hello(args) -> int:
        print("hello " * args.n)
        return 0
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .registry import Registry


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
