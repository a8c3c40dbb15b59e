"""Synonyms: are programs with identical signatures logically equivalent, or do they
coincide only on a scene distribution?  (CURI Appendix B.6.)

Proofs of equivalence live in ``prover`` (over the canonical atoms of ``atoms`` and the
boolean solver of ``sat``), scenes that separate programs in ``counterexamples``, and the
classification of a hypothesis space's synonym classes in ``classify``.

>>> from bayes_concepts.synonyms import prove_equivalent, find_counterexample
>>> prove_equivalent("S locationX? 7 for-all=", "x locationX? 7 = for-all=").level
'first-order'
>>> find_counterexample("x color? red = exists=", "x color? red = for-all=") is not None
True
"""
from .atoms import NotProvable, unprovable_operators, unprovable_tokens
from .classify import (CLASS_COLUMNS, MEMBER_COLUMNS, STATUS, STATUS_ORDER, UNPROVABLE, ProofGroups,
                       SynonymClassification, class_status, classify_synonym_classes, first_occurrence_labels,
                       proof_groups, summarise_statuses)
from .counterexamples import counterexample_bank, find_counterexample, separating_scene
from .prover import (LEVELS, MAX_MINTERMS, EquivalenceProver, ExpansionTooLarge, SynonymError, Verdict,
                     prove_equivalent)

__all__ = ["CLASS_COLUMNS", "MEMBER_COLUMNS", "STATUS", "STATUS_ORDER", "UNPROVABLE", "ProofGroups",
           "SynonymClassification", "class_status", "classify_synonym_classes", "first_occurrence_labels",
           "proof_groups", "summarise_statuses", "counterexample_bank", "find_counterexample", "separating_scene",
           "LEVELS", "MAX_MINTERMS", "EquivalenceProver", "ExpansionTooLarge", "SynonymError", "Verdict",
           "prove_equivalent", "NotProvable", "unprovable_operators", "unprovable_tokens"]
