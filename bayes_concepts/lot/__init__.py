"""The language of thought: grammar files, programs, the PCFG sampler, rejection rules.

A grammar file (``hypotheses/curi.pcfg``; :class:`Grammar`) defines a domain: value
types, property tokens and the scene attributes they read, object-count limits
(``objects MIN SAMPLE_MIN MAX``, default 1 2 5) and the rejection rules that apply
(``reject RULE ...``; none without that line).  Rejection rules are registered in
:data:`rejection_rules` (``REJECTION_RULES`` is the same registry).

>>> from bayes_concepts.lot import Program
>>> p = Program.parse("x locationY? 6 > exists=")
>>> p.readable
'∃x∈S: locationY(x) > 6'
>>> p.length
5
"""
from .grammar import Grammar, curi_grammar, default_schema, load_grammar
from .program import Node, Program
from .rejection import CURI_RULES, is_rejected, rejection_reason, rejection_rules

#: Former name of :data:`rejection_rules` (iterating it gives the rule names, CURI's three first).
REJECTION_RULES = rejection_rules
from .sampler import ProgramSample, sample_programs

__all__ = ["Grammar", "curi_grammar", "default_schema", "load_grammar", "Node", "Program", "REJECTION_RULES",
           "CURI_RULES", "rejection_rules", "is_rejected", "rejection_reason", "ProgramSample", "sample_programs"]
