"""Scene banks stored column-wise as packed bitsets.

Bit layout (shared with the engine): a set of scenes of a bank of ``N`` scenes is
``n_words = ceil(N / 64)`` ``uint64`` words; bit ``j`` (value ``1 << j``) of word
``w`` is scene ``64 * w + j``; padding bits beyond ``N`` are 0.  Equivalently, the
words are the little-endian bytes of ``numpy.packbits(mask, bitorder="little")``.

A bank of a schema with relations (``schema.relations``, e.g. CLEVR's left, right,
front, behind) also holds one bitset per (relation, object slot a, object slot b):
``relation_bits[r, a, b]`` = the scenes in which the object in slot ``a`` is
``relations[r]`` of the object in slot ``b`` (CLEVR's orientation: ``a`` is in the
scene's ``relationships[r][b]``; see :mod:`bayes_concepts.scenes.relations`).
"""
from __future__ import annotations

import numpy as np

from ..bits import n_words_for, pack_bits, unpack_bits
from ..errors import SceneError
from .codes import check_codes, codes_to_scene, scenes_to_codes
from .io import scenes_to_arrays
from .relations import relations_from_positions, relationships_lists
from .samplers import sample_clevr_scenes, sample_scenes
from .schema import CLEVR_DIRECTIONS, CURI_SCHEMA, SceneSchema

__all__ = ["SceneBank", "pack_bits", "unpack_bits", "n_words_for"]

def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _pack_relations(rel: np.ndarray) -> np.ndarray:
    """bool ``(n, R, S, S)`` -> uint64 ``(R, S, S, n_words)``, one relation at a time."""
    n, R, S, _ = rel.shape
    out = np.zeros((R, S, S, n_words_for(n)), dtype=np.uint64)
    for r in range(R):
        out[r] = pack_bits(np.moveaxis(rel[:, r], 0, -1))
    return out


class SceneBank:
    """``N`` scenes in array form plus one bitset per (attribute value, slot).

    Attributes
    ----------
    schema : SceneSchema
    n_scenes : int
    n_slots : int
        ``schema.max_objects``.
    n_words : int
        ``ceil(n_scenes / 64)``.
    codes : int8 ndarray (n_scenes, n_slots, n_attributes)
        ``-1`` in empty slots (see :mod:`bayes_concepts.scenes.codes`).
    n_objects : int8 ndarray (n_scenes,)
    value_offset : int64 ndarray (n_attributes,)
        Row of (attribute ``a``, code 0) in ``bits``; the rows of one attribute
        are consecutive in code order, attributes in schema order.
    n_value_rows : int
        Total number of rows of ``bits`` (sum of the attributes' value counts).
    bits : uint64 ndarray (n_value_rows, n_slots, n_words)
        ``bits[value_offset[a] + c, s, w]`` bit ``j`` is 1 iff scene ``64*w + j``
        has an object in slot ``s`` whose attribute ``a`` has code ``c``.
    present : uint64 ndarray (n_slots, n_words)
        Bit set iff the scene has an object in slot ``s``.
    positions : float32 ndarray (n_scenes, n_slots, 3) or None
        Objects' centres (world x, y, z, CLEVR units), NaN in empty slots; None when
        the bank was built without them.
    relation_names : tuple
        ``schema.relations`` (``R`` names; empty: the bank has no relations).
    relation_bits : uint64 ndarray (R, n_slots, n_slots, n_words) or None
        ``relation_bits[r, a, b, w]`` bit ``j`` is 1 iff in scene ``64*w + j`` the
        object in slot ``a`` is ``relation_names[r]`` of the object in slot ``b``;
        None when the schema has no relations.

    All arrays are read-only.  Build with :meth:`from_codes`,
    :meth:`from_scenes` or :meth:`sample`; ``schema`` defaults to CURI's
    (:data:`~bayes_concepts.scenes.schema.CURI_SCHEMA`, the default grammar's), pass
    ``Grammar.schema`` for another domain.

    ``positions`` (float ``(n_scenes, slots, 3)``, slots ``<= max_objects``, values in
    empty slots ignored) and ``relations`` (bool ``(n_scenes, R, slots, slots)``,
    ``[i, r, a, b]``: in scene ``i`` object ``a`` is ``relation_names[r]`` of object
    ``b``) are optional.  A schema with relations needs one of them: relations given
    are used as they are; otherwise they are computed from the positions (rounded to
    float32 first) with CLEVR's rule and directions
    (:func:`~bayes_concepts.scenes.relations.relations_from_positions`,
    :data:`~bayes_concepts.scenes.schema.CLEVR_DIRECTIONS`).
    """

    def __init__(self, codes: np.ndarray, schema: SceneSchema | None = None,
                 positions=None, relations=None):
        schema = CURI_SCHEMA if schema is None else schema
        codes, n_objects = check_codes(codes, schema)
        self.schema = schema
        self.n_scenes = int(codes.shape[0])
        self.n_slots = int(schema.max_objects)
        self.n_words = n_words_for(self.n_scenes)
        self.codes = _readonly(codes)
        self.n_objects = _readonly(n_objects)
        sizes = np.array([a.n_values for a in schema.attributes], dtype=np.int64)
        self.value_offset = _readonly(np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64))
        self.n_value_rows = int(sizes.sum())
        self.bits, self.present = self._pack()
        self.positions = None if positions is None else _readonly(self._positions(positions))
        self.relation_names = schema.relations
        self.relation_bits = None
        if schema.relations:
            self.relation_bits = _readonly(_pack_relations(self._relations(relations)))
        elif relations is not None:
            raise SceneError("relations given, but the schema declares no relations")

    # -- construction -------------------------------------------------------

    def _positions(self, positions) -> np.ndarray:
        """``positions`` checked and padded: float32 ``(n, n_slots, 3)``, NaN in empty slots."""
        pos = np.asarray(positions, dtype=np.float64)
        n, S = self.n_scenes, self.n_slots
        if pos.ndim != 3 or pos.shape[0] != n or pos.shape[1] > S or pos.shape[2] != 3:
            raise SceneError(f"positions: expected shape ({n}, n_slots <= {S}, 3), got {pos.shape}")
        out = np.full((n, S, 3), np.nan, dtype=np.float32)
        out[:, :pos.shape[1]] = pos
        occupied = self.codes[:, :, 0] >= 0
        bad = occupied & ~np.isfinite(out).all(axis=2)
        if bad.any():
            i, slot = np.argwhere(bad)[0]
            raise SceneError(f"positions[{i}, {slot}]: the object's position is not finite")
        out[~occupied] = np.nan
        return out

    def _relations(self, relations) -> np.ndarray:
        """The bank's relations, bool ``(n, R, n_slots, n_slots)``: checked ``relations``
        or, when None, computed from the positions."""
        names, n, S = self.schema.relations, self.n_scenes, self.n_slots
        if relations is None:
            if self.positions is None:
                raise SceneError(f"the schema's scenes carry relations ({', '.join(names)}): "
                                 "give the objects' positions or the relations")
            unknown = [r for r in names if r not in CLEVR_DIRECTIONS]
            if unknown:
                raise SceneError(f"no direction is known for relation {unknown[0]!r} (known: "
                                 f"{', '.join(CLEVR_DIRECTIONS)}): give the relations")
            return relations_from_positions(self.positions, self.n_objects, CLEVR_DIRECTIONS, names)
        rel = np.asarray(relations)
        if (rel.ndim != 4 or rel.shape[:2] != (n, len(names)) or rel.shape[2] > S
                or rel.shape[3] != rel.shape[2]):
            raise SceneError(f"relations: expected shape ({n}, {len(names)}, slots, slots) with "
                             f"slots <= {S}, got {rel.shape}")
        if rel.dtype != np.bool_:
            if rel.size and not np.isin(rel, (0, 1)).all():
                raise SceneError(f"relations: expected booleans, got dtype {rel.dtype}")
            rel = rel != 0
        out = np.zeros((n, len(names), S, S), dtype=bool)
        out[:, :, :rel.shape[2], :rel.shape[3]] = rel
        occupied = self.codes[:, :, 0] >= 0
        allowed = occupied[:, None, :, None] & occupied[:, None, None, :] & ~np.eye(S, dtype=bool)
        bad = out & ~allowed
        if bad.any():
            i, r, a, b = np.argwhere(bad)[0]
            raise SceneError(f"relations[{i}, {r}, {a}, {b}]: {names[r]} of slots {a} and {b} "
                             "set, but one is empty or they are the same object")
        return out

    def _pack(self):
        n, S = self.n_scenes, self.n_slots
        bits = np.zeros((self.n_value_rows, S, self.n_words), dtype=np.uint64)
        present = np.zeros((S, self.n_words), dtype=np.uint64)
        if n == 0:
            return _readonly(bits), _readonly(present)
        for s in range(S):
            slot = np.ascontiguousarray(self.codes[:, s, :].T)  # (A, n)
            present[s] = pack_bits(slot[0] >= 0)
            for a, attr in enumerate(self.schema.attributes):
                col = slot[a]
                onehot = col[None, :] == np.arange(attr.n_values, dtype=np.int8)[:, None]
                off = self.value_offset[a]
                bits[off:off + attr.n_values, s, :] = pack_bits(onehot)
        return _readonly(bits), _readonly(present)

    @classmethod
    def from_codes(cls, codes, schema: SceneSchema | None = None) -> "SceneBank":
        """Bank of the scenes of a ``codes`` array ``(n, n_slots <= max_objects,
        n_attributes)`` (validated, see :func:`check_codes`)."""
        return cls(codes, schema)

    @classmethod
    def from_scenes(cls, scenes, schema: SceneSchema | None = None) -> "SceneBank":
        """Bank of a sequence of scene dicts (validated; errors name ``scene <i>``).

        With a schema with relations the scenes carry positions and/or relations
        (see :func:`~bayes_concepts.scenes.io.scenes_to_arrays`)."""
        schema = CURI_SCHEMA if schema is None else schema
        if schema.relations:
            codes, positions, relations = scenes_to_arrays(scenes, schema)
            return cls(codes, schema, positions=positions, relations=relations)
        codes, _ = scenes_to_codes(scenes, schema)
        return cls(codes, schema)

    @classmethod
    def sample(cls, n: int, sampler: str = "clevr", schema: SceneSchema | None = None,
               seed=0) -> "SceneBank":
        """Bank of ``n`` sampled scenes (see :func:`sample_scenes`).

        For a schema with relations the ``clevr`` sampler's positions are kept
        (:func:`~bayes_concepts.scenes.samplers.sample_clevr_scenes`) and the relations
        computed from them; ``uniform`` places no objects, so it cannot sample such a
        schema."""
        schema = CURI_SCHEMA if schema is None else schema
        if not schema.relations:
            return cls(sample_scenes(n, sampler, schema, seed), schema)
        if sampler != "clevr":
            raise SceneError(f"the {sampler!r} sampler gives no positions, so no relations "
                             f"({', '.join(schema.relations)}): use the clevr sampler")
        codes, positions = sample_clevr_scenes(n, schema, seed)
        return cls(codes, schema, positions=positions)

    # -- access ---------------------------------------------------------------

    def __len__(self) -> int:
        return self.n_scenes

    def __repr__(self) -> str:
        return (f"SceneBank(n_scenes={self.n_scenes}, n_slots={self.n_slots}, "
                f"attributes={list(self.schema.names)})")

    def scene(self, j: int) -> dict:
        """Scene ``j`` as a dict ``{"objects": [...]}`` (negative ``j`` counts
        from the end).  In a bank with positions every object also has
        ``"3d_coords": [x, y, z]``; a bank with relations adds the scene's
        ``"relationships"`` (CLEVR's form,
        :func:`~bayes_concepts.scenes.relations.relationships_lists`)."""
        j = int(j)
        if not -self.n_scenes <= j < self.n_scenes:
            raise IndexError(f"scene {j} out of range for a bank of {self.n_scenes} scenes")
        j %= max(self.n_scenes, 1)
        scene = codes_to_scene(self.codes[j], self.schema)
        if self.positions is not None:
            for obj, xyz in zip(scene["objects"], self.positions[j]):
                obj["3d_coords"] = [float(v) for v in xyz]
        if self.relation_bits is not None:
            word = self.relation_bits[..., j >> 6] >> np.uint64(j & 63)
            rel = (word & np.uint64(1)).astype(bool)
            scene["relationships"] = relationships_lists(rel, self.relation_names,
                                                         int(self.n_objects[j]))
        return scene

    def scenes(self):
        """All scenes as a list of dicts."""
        return [self.scene(j) for j in range(self.n_scenes)]

    def row(self, attribute: str, value) -> int:
        """Row of ``bits`` for ``attribute == value`` (e.g. ``row("color", "red")``)."""
        a = self.schema.attribute_index(attribute)
        attr = self.schema.attributes[a]
        try:
            c = attr.values.index(value)
        except ValueError:
            raise SceneError(f"{attribute}: unknown value {value!r} (expected one of "
                             + ", ".join(str(v) for v in attr.values) + ")") from None
        return int(self.value_offset[a]) + c

    def subset(self, indices) -> "SceneBank":
        """New bank of the scenes ``indices`` (int array, in that order, repeats
        allowed; or a bool mask of length ``n_scenes``)."""
        idx = np.asarray(indices)
        if idx.dtype == np.bool_:
            if idx.shape != (self.n_scenes,):
                raise IndexError(f"boolean mask of shape {idx.shape} for {self.n_scenes} scenes")
        elif idx.size == 0:
            idx = idx.astype(np.int64)
        elif not np.issubdtype(idx.dtype, np.integer):
            raise IndexError(f"indices must be integers or a boolean mask, got {idx.dtype}")
        positions = None if self.positions is None else self.positions[idx]
        relations = None if self.relation_bits is None else self.relations()[idx]
        return SceneBank(self.codes[idx], self.schema, positions=positions, relations=relations)

    def relations(self) -> np.ndarray:
        """The relations unpacked: bool ``(n_scenes, R, n_slots, n_slots)``, ``[i, r, a, b]``
        iff in scene ``i`` object ``a`` is ``relation_names[r]`` of object ``b`` (a new
        array; ``R = 0`` when the schema has no relations)."""
        R, S = len(self.relation_names), self.n_slots
        if self.relation_bits is None:
            return np.zeros((self.n_scenes, R, S, S), dtype=bool)
        return np.moveaxis(unpack_bits(self.relation_bits, self.n_scenes), -1, 0).copy()
