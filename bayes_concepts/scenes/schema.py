"""The scene schema: which attributes an object has and which values each takes.

A scene is a list of 1..``max_objects`` objects; every object has one value per
attribute.  Values are stored as small integer *codes*: the index of the value in
``Attribute.values`` (so for ordered attributes code order is value order, e.g.
``small`` = 0 < ``large`` = 1, location bin 1 = code 0).

A domain's schema comes from its grammar file (``Grammar.schema``: attributes from
the ``property`` lines, object-count limits from the ``objects`` line);
:data:`CURI_SCHEMA` is CURI's, equal to the schema of the default grammar file
``hypotheses/curi.pcfg`` (:func:`bayes_concepts.lot.grammar.default_schema`), and the
schema every scene function of this package defaults to.

A schema may also name the *spatial relations* its scenes carry
(``SceneSchema.relations``; CLEVR's are :data:`CLEVR_RELATIONS`).  Scenes of such a
schema carry, besides the attribute codes, the relation of every ordered pair of
objects (see :mod:`bayes_concepts.scenes.relations`).  The default, no relations, is
every schema that existed before relations did.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType

#: scene labels that name how a scene was generated, not what it shows: a ConceptWorld space's
#: items carry ``source``, the concept each grid was drawn from (the answer).  No learner reads
#: it as a feature and no figure draws it as a scene's property.
GENERATOR_LABELS = frozenset({"source"})


@dataclass(frozen=True)
class Attribute:
    """One object attribute.

    name:    key in the JSON object (``"color"``, ``"x"``, ...).
    values:  the admissible values, in code order (str or int).
    ordered: whether ``>`` is defined on it (size, location).
    """

    name: str
    values: tuple
    ordered: bool = False

    def code(self, value) -> int:
        """Code of ``value``; raises ``KeyError`` if it is not admissible."""
        return self._index()[value]

    def _index(self) -> dict:
        return {v: i for i, v in enumerate(self.values)}

    @property
    def n_values(self) -> int:
        return len(self.values)


@dataclass(frozen=True)
class SceneSchema:
    """Attributes of objects and the admissible number of objects per scene.

    ``min_objects``/``max_objects`` bound the number of objects a *valid* scene
    may have; samplers draw between ``sample_min_objects`` and ``max_objects``.
    ``relations`` names the spatial relations the scenes carry, in order (a tuple of
    distinct strings; CLEVR: :data:`CLEVR_RELATIONS`); empty (the default): none.
    """

    attributes: tuple
    max_objects: int = 5
    min_objects: int = 1
    sample_min_objects: int = 2
    relations: tuple = ()
    _by_name: dict = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "_by_name", {a.name: a for a in self.attributes})
        object.__setattr__(self, "relations", _relation_names(self.relations))
        if not 1 <= self.min_objects <= self.sample_min_objects <= self.max_objects:
            raise ValueError(
                "need 1 <= min_objects <= sample_min_objects <= max_objects, got "
                f"{self.min_objects}, {self.sample_min_objects}, {self.max_objects}")

    def attribute(self, name: str) -> Attribute:
        return self._by_name[name]

    def attribute_index(self, name: str) -> int:
        return [a.name for a in self.attributes].index(name)

    @property
    def names(self) -> tuple:
        return tuple(a.name for a in self.attributes)

    @property
    def n_attributes(self) -> int:
        return len(self.attributes)

    @property
    def n_relations(self) -> int:
        return len(self.relations)

    def with_max_objects(self, max_objects: int) -> "SceneSchema":
        return SceneSchema(self.attributes, max_objects=max_objects,
                           min_objects=self.min_objects,
                           sample_min_objects=min(self.sample_min_objects, max_objects),
                           relations=self.relations)

    def with_relations(self, relations) -> "SceneSchema":
        """The same schema whose scenes carry the spatial relations ``relations``
        (names, e.g. :data:`CLEVR_RELATIONS`; ``()``: none)."""
        return replace(self, relations=relations)


def _relation_names(relations) -> tuple:
    """``relations`` as a tuple of distinct non-empty strings (``ValueError`` otherwise)."""
    if isinstance(relations, str):
        raise ValueError(f"relations must be a sequence of names, got the string {relations!r}")
    names = tuple(relations)
    bad = [r for r in names if not isinstance(r, str) or not r or r != r.strip()]
    if bad:
        raise ValueError(f"relation names must be non-empty strings without spaces around, got {bad[0]!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"relation names must be distinct, got {list(names)}")
    return names


CURI_ATTRIBUTES = (
    Attribute("color", ("gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow")),
    Attribute("shape", ("cube", "sphere", "cylinder")),
    Attribute("material", ("rubber", "metal")),
    Attribute("size", ("small", "large"), ordered=True),
    Attribute("x", tuple(range(1, 9)), ordered=True),
    Attribute("y", tuple(range(1, 9)), ordered=True),
)

#: CURI's scenes: 2-5 objects sampled, 1-5 accepted when read from a file.
CURI_SCHEMA = SceneSchema(CURI_ATTRIBUTES, max_objects=5)
#: CLEVR-sized scenes: up to 10 objects.
CLEVR_SCHEMA = CURI_SCHEMA.with_max_objects(10)

#: CLEVR's four spatial relations (the names of its scene files' ``"relationships"``).
CLEVR_RELATIONS = ("left", "right", "front", "behind")
#: Unit vectors on the ground plane (world x, y, z) of CLEVR's relations: the
#: ``"directions"`` recorded in CLEVR v1.0's released scene files (e.g.
#: ``CLEVR_val_000000``; its generator derives them from the camera of its base scene).
#: ``right = -left`` and ``front = -behind``.
CLEVR_DIRECTIONS = MappingProxyType({
    "left": (-0.6563112735748291, -0.7544902563095093, 0.0),
    "right": (0.6563112735748291, 0.7544902563095093, 0.0),
    "front": (0.754490315914154, -0.6563112735748291, 0.0),
    "behind": (-0.754490315914154, 0.6563112735748291, 0.0),
})
#: Threshold of CLEVR's relations (``eps`` of ``compute_all_relationships`` in CLEVR's
#: ``render_images.py``): object a is ``r`` of object b iff
#: ``dot(pos_a - pos_b, direction_r) > eps``.
CLEVR_RELATION_EPS = 0.2
