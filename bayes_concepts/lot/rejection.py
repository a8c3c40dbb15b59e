"""Rejection rules for sampled programs: a registry, and CURI's three rules (seed 000, B.2).

A rejection rule is a function ``rule(program) -> bool`` (True: reject the program),
registered under a name in :data:`rejection_rules` (declared in
:mod:`bayes_concepts.lot.rule_registry`, which imports this module on first use).  A grammar file names the rules
that apply to its programs, in order, on ``reject`` lines (format: the header of
``hypotheses/curi.pcfg``); a grammar without a ``reject`` line applies none.
:func:`rejection_reason` tries the rules the program's grammar names, in the
grammar's order, and returns the name of the first that rejects it.

CURI's grammar names its three rules, in this order:

1. ``top_forall_non_x``: the final quantifier is ``for-all=`` and the program
   mentions ``non-x-S``;
2. ``x_compared_with_itself``: a property of ``x`` is compared with the same property
   of ``x`` (``x color? x color? =``, also with ``>``);
3. ``set_quantifier_over_own_property``: ``exists=``/``for-all=`` is applied to ``P(S)``
   and ``P(x)`` for the same property P (``S color? x color? exists=`` is trivially true
   for ∃).

CURI's released hypotheses also lack every program of a fourth kind, registered as
``non_x_set_quantifier_over_own_property`` (``non-x-S P? x P? exists=``/``for-all=``) and
named by the release's grammar ``hypotheses/curi_release.pcfg``.

A new rule is one registered function (register it before loading a grammar file
that names it)::

    from bayes_concepts.lot import rejection_rules

    @rejection_rules.register("no_double_negation")
    def no_double_negation(program) -> bool:
        '''a not directly under a not'''
        return any(n.op == "not" and n.children[0].op == "not" for n in program.root.walk())

The firing-rate filter (true on ≤ 10 % and ≥ 10 scenes) needs a scene bank and
belongs to the hypothesis-space build.
"""
from __future__ import annotations

from .program import Node, Program
from .rule_registry import rejection_rules

#: The rules CURI's grammar file names, in its order.
CURI_RULES = ("top_forall_non_x", "x_compared_with_itself", "set_quantifier_over_own_property")
#: Former name of :data:`CURI_RULES`.
RULES = CURI_RULES


def _is_x_property(node: Node, prop: str | None = None) -> bool:
    return node.kind == "property" and node.children[0].op == "x" and (prop is None or node.op == prop)


@rejection_rules.register("top_forall_non_x")
def top_forall_non_x(program: Program) -> bool:
    """A top-level for-all= together with non-x-S."""
    return program.quantifier == "forall" and "non-x-S" in program.tokens


@rejection_rules.register("x_compared_with_itself")
def x_compared_with_itself(program: Program) -> bool:
    """A property of x compared (= or >) with the same property of x."""
    for node in program.root.walk():
        if node.kind == "compare":
            a, b = node.children
            if _is_x_property(a) and _is_x_property(b, a.op):
                return True
    return False


@rejection_rules.register("set_quantifier_over_own_property")
def set_quantifier_over_own_property(program: Program) -> bool:
    """exists=/for-all= of P(S) against P(x), for the same property P."""
    for node in program.root.walk():
        if node.kind == "set_quantifier":
            lst, v = node.children
            if lst.children[0].op == "S" and _is_x_property(v, lst.op):
                return True
    return False


@rejection_rules.register("non_x_set_quantifier_over_own_property")
def non_x_set_quantifier_over_own_property(program: Program) -> bool:
    """exists=/for-all= of P(S-x) against P(x), for the same property P (``non-x-S color? x
    color? exists=``: some other object shares x's colour).  Not among the paper's rules, but
    no such program occurs in CURI's released hypotheses; named by
    ``hypotheses/curi_release.pcfg``."""
    for node in program.root.walk():
        if node.kind == "set_quantifier":
            lst, v = node.children
            if lst.children[0].op == "non-x-S" and _is_x_property(v, lst.op):
                return True
    return False


def rejection_reason(program: Program, rules=None) -> str | None:
    """Name of the first rule that rejects ``program``, or None.

    ``rules``: names of registered rules to try, in order; default the rules
    ``program.grammar`` names (its ``reject`` lines; none if it has no such line).
    """
    names = program.grammar.rejection_rules if rules is None else ((rules,) if isinstance(rules, str) else rules)
    for name in names:
        if rejection_rules.get(name)(program):
            return name
    return None


def is_rejected(program: Program, rules=None) -> bool:
    """Whether any of the rules (default: those of the program's grammar) rejects ``program``."""
    return rejection_reason(program, rules) is not None
