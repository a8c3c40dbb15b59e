"""A split: train, val and test concept ids, and the spec it was made from."""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import numpy as np

from ..errors import BayesConceptsError

SIDES = ("train", "val", "test")
KINDS = ("all", "random", "held_out")

_TOP_KEYS = ("name", "description", "kind", "fractions", "seed", "held_out", "synonym_aware",
             "val_fraction", "val_seed", "val_programs", "episodes", "items")
#: keys (besides name/description/kind) that each kind accepts
_KIND_KEYS = {
    "all": ("val_fraction", "val_seed", "episodes", "items"),
    "random": ("fractions", "seed", "synonym_aware", "episodes", "items"),
    "held_out": ("held_out", "synonym_aware", "val_fraction", "val_seed", "val_programs", "episodes", "items"),
}
#: the values of a spec's ``items`` key: which items a side's episodes are drawn from.  ``all``
#: (the default, written only when given): every item of the bank; ``by-set``: the items of the
#: set named as the side (train-side episodes from the train set, val from val, test episodes
#: and the test bank from the test set), in a space that records each item's set (a pair space
#: built with a set column and ``--image-level``: CZSL's image-level, generalised setting)
ITEMS = ("all", "by-set")
#: the keys of a spec's [episodes] table (the episode shape: bayes_concepts.episodes.EpisodeShape)
#: and the least value of each
_EPISODE_KEYS = {"positives": 1, "negatives": 0, "query_positives": 1, "query_negatives": 0}
_FRACTION_KEYS = ("train", "val", "test")
_COUNT_KEYS = ("value", "number")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_INT_TOKEN = re.compile(r"^[0-9]+$")


class SplitSpecError(BayesConceptsError):
    """A split spec that cannot be used; the message names the file and line."""


# =============================================================================== Split
@dataclass
class Split:
    """A split of a space's concepts.

    train, val, test: sorted int64 arrays of concept ids.  In every split but Instance IID the
    three are disjoint and cover the space; Instance IID has ``train == test ==`` all.
    spec:        the validated spec dict (defaults filled in).
    source:      the spec file, or None (a dict spec or a predicate).
    n_concepts:  size of the space the split was made for.
    """

    name: str
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    spec: dict
    source: str | None = None
    description: str = ""
    n_concepts: int | None = None

    def __post_init__(self):
        for side in SIDES:
            setattr(self, side, np.unique(np.asarray(getattr(self, side), np.int64)))
        if self.n_concepts is None:
            tops = [int(a[-1]) + 1 for a in (self.train, self.val, self.test) if len(a)]
            self.n_concepts = max(tops, default=0)

    def ids(self, side: str) -> np.ndarray:
        """Concept ids of ``side``: ``train``, ``val``, ``test``, ``held_out`` (val and test)
        or ``all``."""
        if side in SIDES:
            return getattr(self, side)
        if side == "held_out":
            return np.union1d(self.val, self.test)
        if side == "all":
            return np.arange(self.n_concepts, dtype=np.int64)
        raise ValueError(f"unknown side {side!r} (expected train, val, test, held_out or all)")

    def side_of(self, i: int) -> str:
        """The side of concept ``i``: ``'train'``, ``'val'`` or ``'test'``; where sides overlap
        (Instance IID) the sides joined by ``+``, e.g. ``'train+test'``."""
        i = int(i)
        if not 0 <= i < self.n_concepts:
            raise IndexError(f"concept {i} is not in the space (0..{self.n_concepts - 1})")
        found = [s for s in SIDES if _contains(getattr(self, s), i)]
        return "+".join(found) if found else "none"

    def sizes(self) -> dict:
        return {s: int(len(getattr(self, s))) for s in SIDES}

    def concepts_sha256(self) -> str:
        """sha256 of the split's train, val and test concept sets (not of its name): what a
        model trained on the split saw and what it may be tested on.  Two splits with one name
        but other concepts (another space, another spec) have other hashes; a model's card
        records its training split's (:mod:`bayes_concepts.learners.binding`)."""
        h = hashlib.sha256()
        for side in SIDES:
            ids = np.asarray(getattr(self, side), "<i8")
            h.update(f"{side}:{len(ids)}:".encode())
            h.update(ids.tobytes())
        return h.hexdigest()

    def __repr__(self):
        sz = self.sizes()
        return (f"Split({self.name!r}: train {sz['train']:,}, val {sz['val']:,}, test {sz['test']:,} "
                f"of {self.n_concepts:,} concepts)")


def _contains(sorted_ids: np.ndarray, i: int) -> bool:
    k = np.searchsorted(sorted_ids, i)
    return bool(k < len(sorted_ids) and sorted_ids[k] == i)
