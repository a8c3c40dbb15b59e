"""The registry of rejection rules, :data:`rejection_rules`: name -> ``rule(program) -> bool``
(True: reject the program).

The built-in rules (CURI's three and ``non_x_set_quantifier_over_own_property``) are
registered by :mod:`bayes_concepts.lot.rejection`, imported on the registry's first use; a
grammar file's ``reject`` lines name entries of this registry.
"""
from __future__ import annotations

from ..registry import Registry

#: The named rejection rules: name -> ``rule(program) -> bool``.
rejection_rules = Registry("rejection rule", builtins=("bayes_concepts.lot.rejection",))

__all__ = ["rejection_rules"]
