"""Two more connectives of propositional logic, ``xor`` and ``iff``, registered as built-ins of
:data:`~bayes_concepts.lot.operators.operators`.

CURI's language has ``and``, ``or`` and ``not``.  Studies of which logical primitives people's
concepts are built from compare languages that also have the exclusive or and the
biconditional as single primitives (one token each, instead of a formula of three or more
connectives).  A grammar uses them by naming them on its ``operators`` line
(``hypotheses/shj_xor_iff.pcfg`` does).

=========  =================  ==========================================================
token      signature          meaning (the interpreter's; the bit-sliced kernel equals it)
=========  =================  ==========================================================
``xor``    BOOL BOOL -> BOOL  exactly one of the two operands holds
``iff``    BOOL BOOL -> BOOL  both operands hold or neither does
=========  =================  ==========================================================

Their kernels are the relational plan builder's ``xor`` and ``iff`` methods (a grammar using
them is compiled by that builder); the synonym prover does not reason about them, so
programs using them are compared by their signatures only.
"""
from __future__ import annotations

from .operators import Operator, OperatorTypeError, operators

BOOL = "BOOL"


def _check(args, grammar, token=None):
    for i, arg in enumerate(args):
        if arg.type != BOOL:
            raise OperatorTypeError(f"operand {i + 1} must be a BOOL, got a {arg.type}")
    return BOOL


def _xor(evaluate, node, env, world):
    a = bool(evaluate(node.children[0], env))
    b = bool(evaluate(node.children[1], env))
    return a != b


def _iff(evaluate, node, env, world):
    a = bool(evaluate(node.children[0], env))
    b = bool(evaluate(node.children[1], env))
    return a == b


def _compiler(method):
    def compile_(builder, node, operands):
        return getattr(builder, method)(node, *operands)
    compile_.__name__ = f"compile_{method}"
    return compile_


_DEFS = (
    ("xor", _xor, " ⊕ ", r" \oplus ", "exactly one of the two operands holds"),
    ("iff", _iff, " ↔ ", r" \leftrightarrow ", "both operands hold or neither does"),
)


def _infix(sign):
    return lambda args, var=None: f"({args[0]}{sign}{args[1]})"


for _name, _interp, _uni, _tex, _summary in _DEFS:
    operators.register(_name, Operator(_name, 2, "connective", "BOOL BOOL -> BOOL", check=_check, interpret=_interp,
                                       compile=_compiler(_name), unicode=_infix(_uni), latex=_infix(_tex),
                                       summary=_summary))

__all__ = ["BOOL"]
