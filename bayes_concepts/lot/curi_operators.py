"""CURI's eight operators, registered as built-ins of :data:`~bayes_concepts.lot.operators.operators`.

Their type rules are the parser's (:mod:`bayes_concepts.lot.program`: ``exists=`` and
``for-all=`` are the final quantifier over x∈S on a BOOL body, or a set quantifier on a
list and a value); their kernels are those of CURI's plan builder
(:mod:`bayes_concepts.engine.plan`) and of the relational one.  Interpreter semantics, as
CURI defined them: ``for-all=`` over a list is false on an empty list; the final
quantifiers range over the scene's objects.
"""
from __future__ import annotations

from .operators import Operator, operators


def _compare(evaluate, node, env, world):
    a, b = (evaluate(c, env) for c in node.children)
    if a is None or b is None:  # an offset past its type's range: no value, every comparison false
        return False
    return a == b if node.op == "=" else a > b


def _and(evaluate, node, env, world):
    a = evaluate(node.children[0], env)
    b = evaluate(node.children[1], env)
    return bool(a and b)


def _or(evaluate, node, env, world):
    a = evaluate(node.children[0], env)
    b = evaluate(node.children[1], env)
    return bool(a or b)


def _not(evaluate, node, env, world):
    return not evaluate(node.children[0], env)


def _over_list(evaluate, node, env, world):
    """Set quantifiers and ``count=`` on a list (a property of a set) and a value."""
    values, v = evaluate(node.children[0], env), evaluate(node.children[1], env)
    matches = [e == v for e in values]
    if node.op == "count=":
        return sum(matches)
    if node.op == "exists=":
        return any(matches)
    return len(matches) > 0 and all(matches)  # CURI: for-all= is false on an empty list


def _quantifier_or_list(evaluate, node, env, world):
    if node.kind != "quantifier":
        return _over_list(evaluate, node, env, world)
    truths = [evaluate(node.children[0], {**env, "x": i}) for i in range(world.n_objects)]
    return any(truths) if node.op == "exists=" else all(truths)


def _infix(sign):
    return lambda args, var=None: f"{args[0]}{sign}{args[1]}"


_DEFS = (
    ("=", 2, "compare", "T T -> BOOL", _compare, _infix(" = "), _infix(" = "), "equal values"),
    (">", 2, "compare", "T T -> BOOL (T ordered)", _compare, _infix(" > "), _infix(" > "), "greater value"),
    ("and", 2, "logic", "BOOL BOOL -> BOOL", _and, _infix(" ∧ "), _infix(r" \land "), "conjunction"),
    ("or", 2, "logic", "BOOL BOOL -> BOOL", _or, _infix(" ∨ "), _infix(r" \lor "), "disjunction"),
    ("not", 1, "logic", "BOOL -> BOOL", _not, lambda a, v=None: f"¬{a[0]}", lambda a, v=None: rf"\lnot {a[0]}",
     "negation"),
    ("for-all=", 2, "set_quantifier", "LIST[T] T -> BOOL | BOOL -> BOOL (∀x∈S)", _quantifier_or_list,
     lambda a, v=None: f"all({a[0]} = {a[1]})", lambda a, v=None: rf"\operatorname{{all}}({a[0]} = {a[1]})",
     "every element of the list equals the value (false on an empty list); last token: ∀x∈S"),
    ("exists=", 2, "set_quantifier", "LIST[T] T -> BOOL | BOOL -> BOOL (∃x∈S)", _quantifier_or_list,
     lambda a, v=None: f"any({a[0]} = {a[1]})", lambda a, v=None: rf"\operatorname{{any}}({a[0]} = {a[1]})",
     "some element of the list equals the value; last token: ∃x∈S"),
    ("count=", 2, "count", "LIST[T] T -> NUM", _over_list,
     lambda a, v=None: f"count({a[0]} = {a[1]})", lambda a, v=None: rf"\operatorname{{count}}({a[0]} = {a[1]})",
     "number of elements of the list equal to the value"),
)

for _name, _arity, _kind, _sig, _interp, _uni, _tex, _summary in _DEFS:
    operators.register(_name, Operator(_name, _arity, _kind, _sig, interpret=_interp, unicode=_uni, latex=_tex,
                                       prover="curi", summary=_summary))
