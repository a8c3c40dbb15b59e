"""The language of thought: grammar files, programs, the PCFG sampler, rejection rules.

>>> from bayes_concepts.lot import Program
>>> p = Program.parse("x locationY? 6 > exists=")
>>> p.readable
'∃x∈S: locationY(x) > 6'
>>> p.length
5
"""
from .grammar import Grammar, curi_grammar, load_grammar
from .program import Node, Program
from .rejection import RULES as REJECTION_RULES, is_rejected, rejection_reason
from .sampler import ProgramSample, sample_programs

__all__ = ["Grammar", "curi_grammar", "load_grammar", "Node", "Program", "REJECTION_RULES",
           "is_rejected", "rejection_reason", "ProgramSample", "sample_programs"]
