"""Operators of the language as data: the registry :data:`operators`.

An :class:`Operator` is everything the toolkit knows about one operator token:

* ``name`` and ``arity``; ``binds``: a *binder* (``filter``, ``exists``, ``forall``) is
  written ``NAME:VAR`` (``filter:y``) and binds the object variable ``VAR`` in its last
  operand;
* ``signature``: its typed signature, as text (``"SET BOOL -> SET"``), and ``check``:
  ``check(operands, grammar) -> result type`` for the parser, raising
  :class:`OperatorTypeError` with what is wrong;
* ``interpret``: its meaning for the slow interpreter
  (:mod:`bayes_concepts.engine.interpreter`), ``interpret(evaluate, node, env)`` where
  ``evaluate(child, env)`` evaluates an operand under the variable bindings ``env``;
* ``compile``: its bit-sliced kernel, ``compile(builder, node, operands)`` emitting
  instructions through the relational plan builder (:mod:`bayes_concepts.engine.relational_plan`);
  the eight operators of CURI's language are also compiled by CURI's own plan builder;
* ``unicode`` / ``latex``: ``form(operand_texts, variable) -> str``, the readable forms;
* ``prover``: its meaning for the synonym prover (``"curi"`` for the operators the prover
  reasons about; ``None``: programs using it are compared by their signatures only).

A grammar file declares the operators its language uses on an ``operators`` line (without
one: CURI's eight, :data:`CURI_OPERATORS`).  A new operator is one module that registers an
:class:`Operator`::

    from bayes_concepts.lot.operators import Operator, operators
    operators.register("nand", Operator("nand", 2, "connective", "BOOL BOOL -> BOOL", check=..., ...))
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..registry import Registry

#: CURI's eight operators: what a grammar file without an ``operators`` line uses.
CURI_OPERATORS = ("=", ">", "and", "or", "not", "for-all=", "exists=", "count=")
#: The separator of a binder token: ``filter:y`` is the binder ``filter`` over variable ``y``.
BINDER_SEPARATOR = ":"


class OperatorTypeError(Exception):
    """An operator's operands have the wrong types (the parser adds the token and position)."""


@dataclass(frozen=True)
class Operator:
    """One operator of the language (see the module docstring)."""

    name: str
    arity: int
    kind: str
    signature: str
    check: Callable | None = None
    interpret: Callable | None = None
    compile: Callable | None = None
    unicode: Callable | None = None
    latex: Callable | None = None
    binds: bool = False
    prover: str | None = None
    summary: str = ""


#: The registered operators: name -> :class:`Operator`.  CURI's eight are built in
#: (:mod:`bayes_concepts.lot.curi_operators`), and so are the relational ones
#: (:mod:`bayes_concepts.lot.relational_operators`) and ``xor`` and ``iff``
#: (:mod:`bayes_concepts.lot.boolean_operators`).
operators = Registry("operator", builtins=("bayes_concepts.lot.curi_operators",
                                           "bayes_concepts.lot.relational_operators",
                                           "bayes_concepts.lot.boolean_operators"))


def split_binder(token: str) -> tuple:
    """``"filter:y"`` -> ``("filter", "y")``; any other token -> ``(token, None)``."""
    if BINDER_SEPARATOR in token and not token.startswith(BINDER_SEPARATOR):
        name, _, var = token.partition(BINDER_SEPARATOR)
        return name, var
    return token, None


_TEX_SPECIALS = {c: "\\" + c for c in "_#%&$"}


def latex_text(name: str) -> str:
    """``name`` for LaTeX's text and ``\\operatorname`` arguments: ``_ # % & $`` escaped
    (``same_material`` -> ``same\\_material``; a bare ``_`` would make a subscript)."""
    return "".join(_TEX_SPECIALS.get(c, c) for c in name)


def operator_of(token: str) -> Operator | None:
    """The registered operator a token names (a binder token names its binder), or None."""
    return operator_named(*split_binder(token))


def operator_named(name: str, var: str | None) -> Operator | None:
    """The registered operator ``name``, if a token of it with bound variable ``var`` (None: no
    variable) names it -- a binder needs one, any other operator none -- else None."""
    if name not in operators:
        return None
    op = operators.get(name)
    return op if op.binds == (var is not None) else None


__all__ = ["Operator", "OperatorTypeError", "operators", "operator_of", "operator_named", "split_binder", "CURI_OPERATORS",
           "BINDER_SEPARATOR", "latex_text"]


class PresuppositionFailure(Exception):
    """Raised by the interpreter when ``unique`` finds no object or more than one: the
    concept using it is false on that scene."""
