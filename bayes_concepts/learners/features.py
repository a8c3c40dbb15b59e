"""Per-object schema features derived from a scene schema (no torch).

CURI's schema models see each object as a vector: a one-hot block per categorical
attribute (colour 8, shape 3, material 2, size 2) and the normalised pixel
coordinates; slots without an object are all -1 (19 numbers per object in CURI's
release, whose scene files also carried the depth coordinate and a rotation).
:class:`SchemaLayout` derives the same layout from any
:class:`~bayes_concepts.scenes.schema.SceneSchema`: an attribute with string values
becomes a one-hot block, one with integer values (a location bin) one number, the
bin centre scaled to (0, 1): ``(code + 0.5) / n_values``.  For CURI's schema that is
8 + 3 + 2 + 2 one-hot features plus x and y: 17 per object.

A schema whose scenes carry relations (``schema.relations``: CLEVR's left, right, front,
behind) adds *relation features*: the scene's relation bits per ordered object pair, laid
out per object.  The object in slot ``a`` gets its slot as a one-hot block (``slot=0`` ...
``slot=S-1``) and, for every relation ``r`` and slot ``b``, ``rel[r, a, b]``: 1 when it is
``r`` of the object in slot ``b`` (feature ``r:slot=b``), else 0 -- S + R·S features (50 for
CLEVR's 4 relations and 10 slots).  A pooling over pairs (relation network, transformer)
reads the pair (a, b)'s bit from a's row and b's slot.  ``features(codes, relations)``
takes the relations as bool (n, R, S, S) (``space.relations(ids)``; the bit ``rel[i, r, a, b]``
of :mod:`bayes_concepts.scenes.relations`); an unknown bit (-1) is 0.5.

A learner reads each scene's own relations and positions, never looks them up by its attribute
codes (two scenes with the same objects may stand in different places): :class:`SceneArrays`
holds a batch of scenes as arrays -- codes, and where the space has them, the objects' 3-D
positions, the relations and the scenes' bank ids -- and :func:`scene_arrays` makes it from
bank ids of a space (its stored arrays) or from scene dicts (their ``3d_coords`` and
``relationships``).

>>> layout = SchemaLayout.from_schema(space.schema)      # doctest: +SKIP
>>> layout.features(space.scene_codes[:4]).shape          # doctest: +SKIP
(4, 5, 17)
>>> clevr = SchemaLayout.from_schema(clevr_space.schema)                     # doctest: +SKIP
>>> clevr.features(clevr_space.scene_codes[:4], clevr_space.relations(range(4))).shape  # doctest: +SKIP
(4, 10, 65)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..scenes.schema import GENERATOR_LABELS, SceneSchema  # GENERATOR_LABELS: never a learner's feature
from ..scenes.codes import scenes_to_codes
from ..scenes.io import scenes_to_arrays
from .protocol import LearnerError, split_scene_input

ABSENT = -1.0


def generator_labels(schema: SceneSchema) -> list:
    """The attributes of ``schema`` that name how a scene was generated (:data:`GENERATOR_LABELS`)."""
    return [name for name in schema.names if name in GENERATOR_LABELS]


def _refuse_generator_labels(schema: SceneSchema, what: str) -> None:
    found = generator_labels(schema)
    if found:
        raise LearnerError(f"{what}: the scene label {found[0]!r} names how each scene was generated (the answer), "
                           "so it is never a learner's feature")


def check_learner_space(space) -> None:
    """Refuse, in one line, a space no built-in learner can score fairly: a ConceptWorld (grid)
    space, whose scenes are grids that no learner reads yet and whose only item label,
    ``source``, is the concept each scene was generated from; or any space whose scene labels
    include such a generator label (:data:`GENERATOR_LABELS`)."""
    if space.has_grids:
        raise LearnerError("learners are not scored on ConceptWorld spaces yet: their scenes are grids, which no "
                           "learner reads, and their only scene label, 'source', is the concept each scene was "
                           "generated from (the answer); compare the oracles alone (drop --learner)")
    _refuse_generator_labels(space.schema, "learners on this space")


def _is_numeric(attribute) -> bool:
    return all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in attribute.values)


@dataclass(frozen=True)
class SchemaLayout:
    """How an object's attribute codes become numbers.

    Attributes
    ----------
    names : tuple of str
        One name per feature: ``"color=red"`` for one-hot entries, ``"x"`` for a
        normalised numeric attribute.
    tables : tuple of float32 arrays
        One per attribute, shape (n_values + 1, width): row 0 is an absent slot (all
        ``ABSENT``), row ``c + 1`` the features of code ``c``.
    n_slots : int
        Object slots per scene (the schema's ``max_objects``).
    relations : tuple of str
        The relations the scenes carry (empty: no relation features).  Their features come
        after the attributes' in ``names`` (see the module docstring).
    """

    names: tuple
    tables: tuple
    n_slots: int
    relations: tuple = ()

    @classmethod
    def from_schema(cls, schema: SceneSchema) -> "SchemaLayout":
        _refuse_generator_labels(schema, "schema features")
        names, tables = [], []
        for attr in schema.attributes:
            n = attr.n_values
            if _is_numeric(attr):
                t = np.full((n + 1, 1), ABSENT, np.float32)
                t[1:, 0] = (np.arange(n) + 0.5) / n
                names.append(attr.name)
            else:
                t = np.full((n + 1, n), ABSENT, np.float32)
                t[1:] = np.eye(n, dtype=np.float32)
                names.extend(f"{attr.name}={v}" for v in attr.values)
            tables.append(t)
        relations = tuple(getattr(schema, "relations", ()) or ())
        names.extend(relation_feature_names(relations, int(schema.max_objects)))
        return cls(tuple(names), tuple(tables), int(schema.max_objects), relations)

    @property
    def n_features(self) -> int:
        return len(self.names)

    @property
    def n_attribute_features(self) -> int:
        """Features of the attributes (the ``names`` before the relation features)."""
        return sum(t.shape[1] for t in self.tables)

    @property
    def n_attributes(self) -> int:
        return len(self.tables)

    def features(self, codes, relations=None) -> np.ndarray:
        """Features of scenes given as codes: int (n, S, A) with -1 in empty slots
        (:mod:`bayes_concepts.scenes.codes`) -> float32 (n, S, n_features).  A layout with
        relations needs the scenes' ``relations``: bool or int (n, R, S, S), -1 unknown."""
        codes = np.asarray(codes)
        attrs = np.concatenate([t[codes[..., a].astype(np.int64) + 1] for a, t in enumerate(self.tables)], axis=-1)
        if not self.relations:
            return attrs
        if relations is None:
            raise LearnerError(f"the scenes carry relations ({', '.join(self.relations)}): their features need the "
                               "scenes' relations (space.relations(ids))")
        rows = relation_rows(relations, len(self.relations), codes.shape[1])
        return np.concatenate([attrs, relation_features(rows, codes[..., 0] >= 0)], axis=-1)

    def as_dict(self) -> dict:
        return {"names": list(self.names), "n_slots": self.n_slots, "relations": list(self.relations)}


def relation_feature_names(relations, n_slots: int) -> list:
    """Names of the relation features of one object (empty without relations): its slot
    one-hot ``slot=k``, then ``r:slot=b`` for every relation r and slot b."""
    if not relations:
        return []
    return [f"slot={k}" for k in range(n_slots)] + [f"{r}:slot={b}" for r in relations for b in range(n_slots)]


def relation_rows(relations, n_relations: int, n_slots: int) -> np.ndarray:
    """Relations bool/int (n, R, S, S) -> int8 (n, S, R·S): row ``a`` of each scene holds
    ``rel[r, a, b]`` for r, then b (1, 0, or -1 unknown)."""
    rel = np.asarray(relations)
    if rel.ndim != 4 or rel.shape[1:] != (n_relations, n_slots, n_slots):
        raise LearnerError(f"relations: expected shape (n, {n_relations}, {n_slots}, {n_slots}), got {rel.shape}")
    rel = rel.astype(np.int8)
    return np.ascontiguousarray(rel.transpose(0, 2, 1, 3).reshape(len(rel), n_slots, n_relations * n_slots))


def relation_features(rows, present) -> np.ndarray:
    """Relation features float32 (n, S, S + R·S) from :func:`relation_rows`' int (n, S, R·S)
    and the present slots bool (n, S): the slot one-hot, then the bits (unknown -1 -> 0.5);
    every feature of an empty slot is ``ABSENT``."""
    rows = np.asarray(rows)
    n, s = rows.shape[:2]
    bits = np.where(rows < 0, 0.5, rows).astype(np.float32)
    onehot = np.broadcast_to(np.eye(s, dtype=np.float32), (n, s, s))
    out = np.concatenate([onehot, bits], axis=-1)
    out[~np.asarray(present, bool)] = ABSENT
    return out


def bag_of_values(codes, schema: SceneSchema) -> np.ndarray:
    """How many objects of each scene take each value of each attribute (location bins
    included): float32 (n, Σ n_values) from codes int (n, S, A)."""
    _refuse_generator_labels(schema, "bag-of-values features")
    codes = np.asarray(codes)
    blocks = []
    for a, attr in enumerate(schema.attributes):
        col = codes[..., a].astype(np.int64)
        onehot = col[..., None] == np.arange(attr.n_values)
        blocks.append(onehot.sum(axis=1, dtype=np.float32))
    return np.concatenate(blocks, axis=-1)


@dataclass(frozen=True)
class SceneArrays:
    """A batch of n scenes as arrays (what an encoder turns into its model input).

    Attributes
    ----------
    codes : int8 array (n, S, A)
        Attribute codes, -1 in empty slots (:mod:`bayes_concepts.scenes.codes`).
    positions : float32 array (n, S, 3) or None
        The objects' 3-D centres in CLEVR's world units (NaN in empty slots); None when the
        scenes are placed by location bins (no positions).
    relations : bool array (n, R, S, S) or None
        ``[i, r, a, b]``: in scene ``i`` object ``a`` is relation ``r`` of object ``b``; None
        when the scenes carry no relations.
    ids : int64 array (n,) or None
        The scenes' ids in the bank of the space they came from (None: scene dicts), so a
        cached rendering of that space is read by id.
    """

    codes: np.ndarray
    positions: np.ndarray | None = None
    relations: np.ndarray | None = None
    ids: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.codes)

    def rows(self, index) -> "SceneArrays":
        """The scenes at ``index`` (a slice or int array of positions in this batch)."""
        def take(a):
            return None if a is None else a[index]
        return SceneArrays(self.codes[index], take(self.positions), take(self.relations), take(self.ids))


def scene_arrays(space, scenes, schema: SceneSchema | None = None) -> SceneArrays:
    """:class:`SceneArrays` of a learner's scene input: scene-bank ids of ``space`` (its codes,
    positions and relations, as stored) or scene dicts validated against ``schema`` (default the
    space's; with relations, each dict's ``3d_coords`` and ``relationships``, as
    :func:`~bayes_concepts.scenes.io.scenes_to_arrays` reads them)."""
    kind, items = split_scene_input(scenes)
    if kind == "ids":
        ids = scene_ids(space, items)
        return SceneArrays(np.asarray(space.scene_codes[ids]), _or_none(space.positions(ids)),
                           _or_none(space.relations(ids)), ids)
    codes, positions, relations = scenes_to_arrays(items, schema or space.schema)
    return SceneArrays(codes, positions, relations)


def _or_none(array):
    return None if array is None else np.asarray(array)


def scene_codes(space, scenes, schema: SceneSchema | None = None) -> np.ndarray:
    """Codes int8 (n, S, A) of a learner's scene input: scene-bank ids of ``space`` or
    scene dicts (validated against ``schema``, default the space's; a scene with more
    objects than the schema's slots is an error naming it)."""
    kind, items = split_scene_input(scenes)
    if kind == "ids":
        return np.asarray(space.scene_codes[scene_ids(space, items)])
    return scenes_to_codes(items, schema or space.schema)[0]


def scene_ids(space, ids) -> np.ndarray:
    """``ids`` as int64 (n,), checked to be scene-bank ids of ``space``."""
    ids = np.asarray(ids, np.int64).reshape(-1)
    if ids.size and (ids.min() < 0 or ids.max() >= space.n_scenes):
        bad = int(ids[(ids < 0) | (ids >= space.n_scenes)][0])
        raise LearnerError(f"scenes: scene id {bad} is not in the scene bank (0..{space.n_scenes - 1})")
    return ids
