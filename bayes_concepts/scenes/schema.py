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
"""
from __future__ import annotations

from dataclasses import dataclass, field


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
    """

    attributes: tuple
    max_objects: int = 5
    min_objects: int = 1
    sample_min_objects: int = 2
    _by_name: dict = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "_by_name", {a.name: a for a in self.attributes})
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

    def with_max_objects(self, max_objects: int) -> "SceneSchema":
        return SceneSchema(self.attributes, max_objects=max_objects,
                           min_objects=self.min_objects,
                           sample_min_objects=min(self.sample_min_objects, max_objects))


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
