"""Scene banks stored column-wise as packed bitsets.

Bit layout (shared with the engine): a set of scenes of a bank of ``N`` scenes is
``n_words = ceil(N / 64)`` ``uint64`` words; bit ``j`` (value ``1 << j``) of word
``w`` is scene ``64 * w + j``; padding bits beyond ``N`` are 0.  Equivalently, the
words are the little-endian bytes of ``numpy.packbits(mask, bitorder="little")``.
"""
from __future__ import annotations

import numpy as np

from ..bits import n_words_for, pack_bits, unpack_bits
from ..errors import SceneError
from .codes import check_codes, codes_to_scene, scenes_to_codes
from .samplers import sample_scenes
from .schema import CURI_SCHEMA, SceneSchema

__all__ = ["SceneBank", "pack_bits", "unpack_bits", "n_words_for"]

def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


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

    All arrays are read-only.  Build with :meth:`from_codes`,
    :meth:`from_scenes` or :meth:`sample`; ``schema`` defaults to CURI's
    (:data:`~bayes_concepts.scenes.schema.CURI_SCHEMA`, the default grammar's), pass
    ``Grammar.schema`` for another domain.
    """

    def __init__(self, codes: np.ndarray, schema: SceneSchema | None = None):
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

    # -- construction -------------------------------------------------------

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
        """Bank of a sequence of scene dicts (validated; errors name ``scene <i>``)."""
        schema = CURI_SCHEMA if schema is None else schema
        codes, _ = scenes_to_codes(scenes, schema)
        return cls(codes, schema)

    @classmethod
    def sample(cls, n: int, sampler: str = "clevr", schema: SceneSchema | None = None,
               seed=0) -> "SceneBank":
        """Bank of ``n`` sampled scenes (see :func:`sample_scenes`)."""
        schema = CURI_SCHEMA if schema is None else schema
        return cls(sample_scenes(n, sampler, schema, seed), schema)

    # -- access ---------------------------------------------------------------

    def __len__(self) -> int:
        return self.n_scenes

    def __repr__(self) -> str:
        return (f"SceneBank(n_scenes={self.n_scenes}, n_slots={self.n_slots}, "
                f"attributes={list(self.schema.names)})")

    def scene(self, j: int) -> dict:
        """Scene ``j`` as a dict ``{"objects": [...]}`` (negative ``j`` counts
        from the end)."""
        j = int(j)
        if not -self.n_scenes <= j < self.n_scenes:
            raise IndexError(f"scene {j} out of range for a bank of {self.n_scenes} scenes")
        return codes_to_scene(self.codes[j], self.schema)

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
        return SceneBank(self.codes[idx], self.schema)
