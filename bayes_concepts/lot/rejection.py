"""CURI's rejection rules for sampled programs (seed 000, Appendix B.2).

A program is rejected if

1. ``top_forall_non_x``: its final quantifier is ``for-all=`` and it mentions ``non-x-S``;
2. ``x_compared_with_itself``: it compares a property of ``x`` with the same property of ``x``
   (``x color? x color? =``, also with ``>``);
3. ``set_quantifier_over_own_property``: it applies ``exists=``/``for-all=`` to ``P(S)`` and
   ``P(x)`` for the same property P (``S color? x color? exists=`` is trivially true for ∃).

The firing-rate filter (true on ≤ 10 % and ≥ 10 scenes) needs a scene bank and
belongs to the hypothesis-space build.
"""
from __future__ import annotations

from .program import Node, Program

RULES = ("top_forall_non_x", "x_compared_with_itself", "set_quantifier_over_own_property")


def _is_x_property(node: Node, prop: str | None = None) -> bool:
    return node.kind == "property" and node.children[0].op == "x" and (prop is None or node.op == prop)


def rejection_reason(program: Program) -> str | None:
    """Name of the first rule that rejects ``program`` (see module docstring), or None."""
    if program.quantifier == "forall" and "non-x-S" in program.tokens:
        return "top_forall_non_x"
    for node in program.root.walk():
        if node.kind == "compare":
            a, b = node.children
            if _is_x_property(a) and _is_x_property(b, a.op):
                return "x_compared_with_itself"
        elif node.kind == "set_quantifier":
            lst, v = node.children
            if lst.children[0].op == "S" and _is_x_property(v, lst.op):
                return "set_quantifier_over_own_property"
    return None


def is_rejected(program: Program) -> bool:
    return rejection_reason(program) is not None
