"""Everything derived from a space's files, built on first use and kept with the space.

A :class:`SpaceIndex` belongs to one space (``space.index``): no other object keeps
derived state about a space, and nothing is ever set on a space from outside it.  Each
structure is computed once, on the first call that needs it:

===========================  =============================================================
``scene_concepts()``         per-scene concept bitsets, uint64 (n_scenes, ceil(n/64)): the
                             transposed signatures (an array, or a row file for a large
                             saved space; :mod:`bayes_concepts.engine.index`)
``class_representatives()``  int64 (n_classes,): the first concept of each synonym class
``test_bank_index()``        CSR ``(ptr, idx)`` of the test-bank scenes each synonym class is
                             true on: int64 (n_classes + 1,), int32 (nnz,)
``test_bank_scene_classes``  the transpose, split into lanes by class id (what the noisy
                             oracle's test-bank scores sum)
``positives_in_test_bank``   int64 (n,): test-bank scenes each concept is true on
``test_domain_rows()``       the test-bank domains of the concepts that have one, and each
                             concept's row (question domains: a target's ranking is over it)
``concept_ids()``            dict: a concept's description string -> its id
``item_ids()``               dict: an item's name -> its id (spaces of named items)
``scene_bank()``             the scene bank as packed bitsets (spaces over scenes), with
                             positions and relations when the space keeps them
``derived(name, build)``     any other structure a later stage derives from the space (the
                             episode sampler's tables): ``build()`` runs once per name
===========================  =============================================================
"""
from __future__ import annotations

import numpy as np

from ..bits import pack_bits, set_bit_positions
from ..engine import index as _disk_index
from ..engine.test_bank import scene_class_lanes
from ..scenes import SceneBank

__all__ = ["SpaceIndex"]


class SpaceIndex:
    """The derived structures of one space (see the module docstring); ``space.index``."""

    def __init__(self, space):
        self.space = space
        self._built: dict = {}

    def _memo(self, name: str, build):
        if name not in self._built:
            self._built[name] = build()
        return self._built[name]

    def derived(self, name: str, build):
        """The structure ``name`` derived from the space: ``build()`` the first time, then kept.
        For later stages (the episode sampler) that must not hang state on the space."""
        return self._memo(f"derived:{name}", build)

    def scene_concepts(self):
        """uint64 (n_scenes, ceil(n_concepts/64)); bit h of row s: concept h is true on scene s.
        An array in memory for small spaces, else a
        :class:`~bayes_concepts.engine.rows.RowFile` (``rows[ids]`` gives an array)."""
        return self._memo("scene_concepts", lambda: _disk_index.scene_concepts(self.space))

    def scene_outside(self):
        """uint64 (n_scenes, ceil(n_concepts/64)); bit h of row s: scene s is outside concept
        h's domain (h cannot have produced a labelled scene s).  None when every concept is
        defined on every scene (no question domains)."""
        return self._memo("scene_outside", self._build_scene_outside)

    def _build_scene_outside(self):
        if not self.space.has_domains:
            return None
        from ..bits import transpose_bits
        rows, row_of = self.outside_rows()
        full = np.zeros((self.space.n_concepts, rows.shape[1]), np.uint64)
        full[row_of >= 0] = rows[row_of[row_of >= 0]]
        return transpose_bits(full, self.space.n_scenes)

    def outside_rows(self) -> tuple:
        """``(rows, row_of)``: :meth:`scene_outside` concept by concept -- bit s of
        ``rows[row_of[h]]`` (uint64 (D, ceil(n_scenes/64))) is set when scene s is outside concept
        h's domain; ``row_of`` int64 (n_concepts,), -1 for a concept defined on every scene.
        uint64 (0, 1) and int64 (0,) in a space without question domains.  The episode sampler
        reads one concept's row per episode (a few KB that stay in cache) where
        :meth:`scene_outside` has one scattered row per scene tried."""
        return self._memo("outside_rows", self._build_outside_rows)

    def _build_outside_rows(self):
        space = self.space
        if not space.has_domains:
            return np.zeros((0, 1), np.uint64), np.zeros(0, np.int64)
        ids = np.asarray(space.domain_ids, np.int64)
        rows = np.ascontiguousarray(~np.asarray(space.domains) & pack_bits(np.ones(space.n_scenes, bool)))
        row_of = np.full(space.n_concepts, -1, np.int64)
        row_of[ids] = np.arange(len(ids))
        return rows, row_of

    def test_domain_rows(self) -> tuple:
        """``(test_domains, domain_row)``: the test-bank domains of the concepts that have one,
        uint64 (D, ceil(T/64)), and each concept's row in it, int64 (n_concepts,) (-1: defined on
        every scene); uint64 (0, 1) and int64 (0,) in a space without question domains (what the
        test-bank scoring kernels read: a target's ranking is over its domain)."""
        return self._memo("test_domain_rows", self._build_test_domain_rows)

    def _build_test_domain_rows(self) -> tuple:
        space = self.space
        if not space.has_domains:
            return np.zeros((0, 1), np.uint64), np.zeros(0, np.int64)
        rows = np.full(space.n_concepts, -1, np.int64)
        ids = np.asarray(space.domain_ids, np.int64)
        rows[ids] = np.arange(len(ids))
        return np.ascontiguousarray(space.test_domains, np.uint64), rows

    def class_representatives(self) -> np.ndarray:
        """int64 (n_classes,): the first concept of each synonym class."""
        return self._memo("class_representatives", lambda: np.unique(
            self.space.synonym_classes, return_index=True)[1].astype(np.int64))

    def test_bank_index(self) -> tuple:
        """The test-bank scenes each synonym class is true on, CSR ``(ptr, idx)``: int64
        (n_classes + 1,), int32 (nnz,)."""
        return self._memo("test_bank_index", self._build_test_bank_index)

    def _build_test_bank_index(self) -> tuple:
        bank = self.space.test_bank
        return set_bit_positions(np.asarray(bank.signatures)[self.class_representatives()], bank.n_scenes)

    def test_bank_scene_classes(self) -> tuple:
        """The synonym classes each test-bank scene belongs to, in lanes by class id:
        ``(lane_ptr, classes)``, int64 (T·4 + 1,) and uint16 (int32 past 65,536 classes)
        (nnz,); see :func:`~bayes_concepts.engine.test_bank.scene_class_lanes`."""
        return self._memo("test_bank_scene_classes", lambda: scene_class_lanes(
            *self.test_bank_index(), self.space.test_bank.n_scenes))

    def positives_in_test_bank(self) -> np.ndarray:
        """int64 (n_concepts,): test-bank scenes each concept is true on."""
        return self._memo("positives_in_test_bank", lambda: np.bitwise_count(
            np.asarray(self.space.test_bank.signatures)).sum(axis=1, dtype=np.int64))

    def concept_ids(self) -> dict:
        """A concept's description string (``space.programs[i]``) -> ``i``."""
        return self._memo("concept_ids", lambda: {p: i for i, p in enumerate(self.space.programs)})

    def item_ids(self) -> dict:
        """An item's name -> its id (spaces whose items have names)."""
        return self._memo("item_ids", lambda: {name: j for j, name in enumerate(self.space.item_names)})

    def scene_bank(self):
        """The scene bank as a :class:`~bayes_concepts.scenes.SceneBank` (bitsets packed once),
        with the scenes' positions and relations when the space has them (its
        ``positions()`` and ``relations()``: program spaces whose scenes carry relations)."""
        return self._memo("scene_bank", self._build_scene_bank)

    def _build_scene_bank(self):
        space = self.space
        codes = np.asarray(space.scene_codes)
        relations = space.relations()
        if relations is None:
            return SceneBank.from_codes(codes, space.schema)
        return SceneBank(codes, space.schema, positions=space.positions(), relations=relations)

    def __repr__(self):
        return f"SpaceIndex(built: {', '.join(self._built) or 'nothing yet'})"
