"""The rungs that are oracles over a concept set fixed by the split: the memoriser, the two
recombiners, the length-bounded learner and the strong oracle (:mod:`bayes_concepts.rungs`).
Each is an :class:`~bayes_concepts.oracles.Oracle` with the settings' prior over its set."""
from __future__ import annotations

import numpy as np

from ..divergence import concept_structure, nested_concepts
from ..oracles import Oracle
from .rung import Rung, rungs, strong_concepts


def memoriser_concepts(space, split) -> np.ndarray:
    """The memoriser's concepts: the split's training concepts."""
    return np.asarray(np.unique(split.train), np.int64)


def bounded_length_concepts(space, split) -> np.ndarray:
    """The strong oracle's concepts whose description length is at most the longest training
    concept's (``space.lengths``: tokens for programs, 1 + depth for ConceptWorld)."""
    strong = strong_concepts(split)
    train = np.asarray(split.train, np.int64)
    if len(train) == 0:
        return train
    cap = np.asarray(space.lengths)[train].max()
    return np.union1d(train, strong[np.asarray(space.lengths)[strong] <= cap])


def _oracle_rung(name, concepts_of):
    def build(space, split, settings):
        return Oracle(space, concepts_of(space, split), settings, name)
    return build


rungs.register("memoriser", Rung(
    "memoriser", "the training concepts only (the weak oracle)",
    "knows exactly the split's training concepts, with the oracles' prior over them",
    _oracle_rung("memoriser", memoriser_concepts),
    position=0, default=True, oracle="weak", columns=("memoriser",)))

rungs.register("compound", Rung(
    "compound", "recombiner: every concept whose atoms and compounds all occur in training concepts",
    "knows every concept of the strong oracle whose atoms (tokens; bound variables renamed away) and "
    "compounds (parent-child sub-trees; a pair's attribute-object pair; ConceptWorld's definition edges) all "
    "occur in some training concept",
    _oracle_rung("compound", lambda space, split: nested_concepts(space, split,
                                                                 structure=concept_structure(space))["compound"]),
    position=10, default=True, oracle="compound", columns=("compound",)))

rungs.register("atom", Rung(
    "atom", "recombiner: every concept whose atoms all occur in training concepts",
    "knows every concept of the strong oracle whose atoms all occur in some training concept (pairs: every "
    "pair whose attribute and object were both seen)",
    _oracle_rung("atom", lambda space, split: nested_concepts(space, split,
                                                             structure=concept_structure(space))["atom"]),
    position=20, default=True, oracle="atom", columns=("atom",)))

rungs.register("bounded_length", Rung(
    "bounded_length", "the strong oracle's concepts no longer than the longest training concept",
    "knows every concept of the strong oracle whose description length is at most the longest training "
    "concept's (a learner that never composes deeper than it was shown)",
    _oracle_rung("bounded_length", bounded_length_concepts),
    position=30, default=True, columns=("bounded_length",)))

rungs.register("strong", Rung(
    "strong", "every concept of the split (the strong oracle)",
    "knows every concept of the split (train and test), with the oracles' prior",
    _oracle_rung("strong", lambda space, split: strong_concepts(split)),
    position=1000, default=True, oracle="strong"))
