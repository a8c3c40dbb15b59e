"""Array form of many scenes, and validation of scenes given as dicts.

A scene as a dict (the JSON Lines form, see :mod:`bayes_concepts.scenes.io`)::

    {"objects": [{"color": "red", "shape": "cube", "material": "metal",
                  "size": "large", "x": 3, "y": 5}, ...]}

The array form of ``n`` scenes under a :class:`SceneSchema` with ``S =
schema.max_objects`` slots and ``A = schema.n_attributes`` attributes:

``codes``
    ``int8`` array of shape ``(n, S, A)``; ``codes[i, s, a]`` is the *code* of
    attribute ``a`` (index of the value in ``schema.attributes[a].values``) of the
    object in slot ``s`` of scene ``i``, or ``-1`` where the slot is empty.  The
    ``k`` objects of a scene fill slots ``0 .. k-1`` in file order.
``n_objects``
    ``int8`` array of shape ``(n,)``, the number of objects per scene; equal to
    ``(codes[:, :, 0] >= 0).sum(1)``.

Every error is a :class:`~bayes_concepts.errors.SceneError` whose message is one
line: ``"<where>: <field>: <what is wrong>"``, e.g.
``"scenes.jsonl line 3: objects[1].color: unknown value 'pink' (expected one of
gray, red, ...)"``.
"""
from __future__ import annotations

import numbers
from functools import lru_cache

import numpy as np

from ..errors import SceneError
from .schema import SceneSchema

__all__ = [
    "scenes_to_codes",
    "codes_to_scene",
    "check_codes",
    "encode_scene",
    "validate_scene",
    "n_objects_of",
]


# ----------------------------------------------------------------------------
# messages
# ----------------------------------------------------------------------------

def _json_type(value) -> str:
    """Name of the JSON type of a parsed value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (numbers.Integral, numbers.Real)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def _show(value) -> str:
    """Short one-line rendering of an offending value (JSON spelling for
    booleans and null, Python ``repr`` otherwise, cut at 60 characters)."""
    if value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (dict, list, tuple)):
        text = f"a JSON {_json_type(value)}"
    else:
        text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return text.replace("\n", " ")


def _fail(where: str, field: str, message: str):
    parts = [p for p in (where, field) if p]
    raise SceneError(": ".join(parts + [message]))


# ----------------------------------------------------------------------------
# dict -> codes
# ----------------------------------------------------------------------------

class _Encoder:
    """Per-schema lookup tables for validating and encoding scene dicts."""

    def __init__(self, schema: SceneSchema):
        self.schema = schema
        self.names = schema.names
        self.name_set = frozenset(self.names)
        self.lookups = []   # per attribute: value -> code
        self.kinds = []     # per attribute: "int" or "str"
        self.expected = []  # per attribute: text after "expected"
        for attr in schema.attributes:
            values = attr.values
            is_int = all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                         for v in values)
            self.kinds.append("int" if is_int else "str")
            self.lookups.append({v: i for i, v in enumerate(values)})
            if is_int and list(values) == list(range(values[0], values[0] + len(values))):
                self.expected.append(f"an integer in {values[0]}..{values[-1]}")
            else:
                self.expected.append("one of " + ", ".join(str(v) for v in values))

    def encode(self, scene, where: str = "") -> list:
        """Validate one scene dict; return its objects' codes as a list of
        tuples (one per object, attribute order of the schema)."""
        schema = self.schema
        if not isinstance(scene, dict):
            _fail(where, "", f"expected a JSON object (a scene), got {_json_type(scene)}")
        if "objects" not in scene:
            _fail(where, "", "missing key 'objects'")
        objects = scene["objects"]
        if not isinstance(objects, (list, tuple)):
            _fail(where, "objects", f"expected an array of objects, got {_json_type(objects)}")
        k = len(objects)
        if not schema.min_objects <= k <= schema.max_objects:
            _fail(where, "objects",
                  f"has {k} objects (expected {schema.min_objects} to {schema.max_objects})")
        out = []
        for i, obj in enumerate(objects):
            field = f"objects[{i}]"
            if not isinstance(obj, dict):
                _fail(where, field, f"expected a JSON object, got {_json_type(obj)}")
            if len(obj) != len(self.names) or not self.name_set.issuperset(obj):
                for key in obj:
                    if key not in self.name_set:
                        _fail(where, field, f"unknown key {_show(key)} (expected "
                              + ", ".join(self.names) + ")")
                for key in self.names:
                    if key not in obj:
                        _fail(where, field, f"missing key '{key}'")
            row = []
            for a, name in enumerate(self.names):
                value = obj[name]
                if self.kinds[a] == "int":
                    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
                        _fail(where, f"{field}.{name}",
                              f"expected {self.expected[a]}, got {_show(value)}")
                    code = self.lookups[a].get(int(value))
                    if code is None:
                        _fail(where, f"{field}.{name}",
                              f"value {int(value)} out of range (expected {self.expected[a]})")
                else:
                    if not isinstance(value, str):
                        _fail(where, f"{field}.{name}",
                              f"expected a string ({self.expected[a]}), got {_show(value)}")
                    code = self.lookups[a].get(value)
                    if code is None:
                        _fail(where, f"{field}.{name}",
                              f"unknown value {_show(value)} (expected {self.expected[a]})")
                row.append(code)
            out.append(tuple(row))
        return out


@lru_cache(maxsize=32)
def _encoder(schema: SceneSchema) -> _Encoder:
    return _Encoder(schema)


def encode_scene(scene, schema: SceneSchema, where: str = "") -> np.ndarray:
    """Validate ``scene`` (a dict) and return its codes.

    Returns an ``int8`` array of shape ``(k, schema.n_attributes)``, one row per
    object in order.  Raises :class:`SceneError` (prefixed with ``where``).
    """
    rows = _encoder(schema).encode(scene, where)
    return np.array(rows, dtype=np.int8).reshape(len(rows), schema.n_attributes)


def validate_scene(scene, schema: SceneSchema, where: str = "") -> None:
    """Check one scene dict against ``schema``; raise :class:`SceneError` if invalid.

    Checked: the scene is a dict with key ``"objects"`` (other top-level keys are
    allowed), a list of ``schema.min_objects .. schema.max_objects`` objects, each
    a dict with exactly the schema's attribute names as keys, string attributes
    one of their values, integer attributes (locations) an ``int`` (not
    ``bool``, not ``float``) among their values.  The message is
    ``"<where>: <field>: <problem>"`` on one line.
    """
    _encoder(schema).encode(scene, where)


def scenes_to_codes(scenes, schema: SceneSchema, where: str = "scene"):
    """Validate a sequence of scene dicts and convert them to array form.

    Parameters
    ----------
    scenes : sequence of dict
        Scenes as dicts (``{"objects": [...]}``, extra keys ignored).
    schema : SceneSchema
    where : str
        Prefix of error messages; the scene's 0-based index is appended
        (``"scene 12: objects[0].x: ..."``).

    Returns
    -------
    codes : int8 ndarray, shape (n_scenes, schema.max_objects, schema.n_attributes)
        ``-1`` in empty slots.
    n_objects : int8 ndarray, shape (n_scenes,)
    """
    enc = _encoder(schema)
    scenes = list(scenes)
    n, S, A = len(scenes), schema.max_objects, schema.n_attributes
    codes = np.full((n, S, A), -1, dtype=np.int8)
    n_objects = np.zeros(n, dtype=np.int8)
    for i, scene in enumerate(scenes):
        rows = enc.encode(scene, f"{where} {i}" if where else f"scene {i}")
        k = len(rows)
        if k:
            codes[i, :k] = rows
        n_objects[i] = k
    return codes, n_objects


# ----------------------------------------------------------------------------
# codes -> dict, and checking arrays
# ----------------------------------------------------------------------------

def codes_to_scene(codes_row, schema: SceneSchema) -> dict:
    """Convert the codes of one scene back to a dict.

    ``codes_row``: integer array of shape ``(n_slots, schema.n_attributes)``
    (one row of a ``codes`` array), ``-1`` in empty slots.  Returns
    ``{"objects": [{name: value, ...}, ...]}`` with Python ``str``/``int``
    values, objects in slot order.  Raises :class:`SceneError` on invalid codes.
    """
    row = np.asarray(codes_row)
    if row.ndim != 2 or row.shape[1] != schema.n_attributes:
        raise SceneError(f"codes of a scene: expected shape (n_slots, {schema.n_attributes}), "
                         f"got {row.shape}")
    objects = []
    ended = False
    for s in range(row.shape[0]):
        slot = row[s]
        if slot[0] < 0:
            ended = True
            if (slot >= 0).any():
                raise SceneError(f"codes slot {s}: partly empty (some codes -1, some not)")
            continue
        if ended:
            raise SceneError(f"codes slot {s}: object after an empty slot")
        obj = {}
        for a, attr in enumerate(schema.attributes):
            c = int(slot[a])
            if not 0 <= c < attr.n_values:
                raise SceneError(f"codes slot {s}: {attr.name} code {c} out of range "
                                 f"0..{attr.n_values - 1}")
            obj[attr.name] = attr.values[c]
        objects.append(obj)
    return {"objects": objects}


def n_objects_of(codes: np.ndarray) -> np.ndarray:
    """Number of objects per scene of a ``codes`` array: ``int8`` ``(n_scenes,)``."""
    return (np.asarray(codes)[:, :, 0] >= 0).sum(axis=1, dtype=np.int8)


def check_codes(codes, schema: SceneSchema):
    """Validate a ``codes`` array and bring it to the schema's slot count.

    ``codes``: integer array ``(n_scenes, n_slots, schema.n_attributes)`` with
    ``n_slots <= schema.max_objects`` (it is padded with empty slots up to
    ``schema.max_objects``).  Checks that every code is ``-1`` or a valid code,
    that a slot is empty in all attributes or in none, that objects fill slots
    ``0..k-1`` and that ``schema.min_objects <= k <= schema.max_objects``.

    Returns ``(codes, n_objects)``: a C-contiguous ``int8`` array of shape
    ``(n_scenes, schema.max_objects, n_attributes)`` and ``int8`` ``(n_scenes,)``.
    """
    arr = np.asarray(codes)
    A, S = schema.n_attributes, schema.max_objects
    if arr.ndim != 3 or arr.shape[2] != A:
        raise SceneError(f"codes: expected shape (n_scenes, n_slots, {A}), got {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise SceneError(f"codes: expected an integer array, got dtype {arr.dtype}")
    if arr.shape[1] > S:
        raise SceneError(f"codes: {arr.shape[1]} slots but the schema allows at most {S} objects")
    out = np.full((arr.shape[0], S, A), -1, dtype=np.int8)
    for a, attr in enumerate(schema.attributes):
        col = arr[:, :, a]
        bad = col < -1
        bad |= col >= attr.n_values
        if bad.any():
            i, s = np.argwhere(bad)[0]
            raise SceneError(f"codes[{i}, {s}, {a}]: {attr.name} code {int(col[i, s])} "
                             f"out of range (expected -1..{attr.n_values - 1})")
        out[:, :arr.shape[1], a] = col
    occupied = out[:, :, 0] >= 0
    mixed = np.zeros_like(occupied)
    for a in range(1, A):  # one (n, S) temporary at a time
        mixed |= (out[:, :, a] >= 0) != occupied
    if mixed.any():
        i, s = np.argwhere(mixed)[0]
        raise SceneError(f"codes[{i}, {s}]: slot partly empty (some codes -1, some not)")
    gap = occupied[:, 1:] & ~occupied[:, :-1]
    if gap.any():
        i, s = np.argwhere(gap)[0]
        raise SceneError(f"codes[{i}, {s + 1}]: object after an empty slot")
    n_objects = occupied.sum(axis=1, dtype=np.int8)
    bad = (n_objects < schema.min_objects) | (n_objects > S)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise SceneError(f"codes[{i}]: has {int(n_objects[i])} objects "
                         f"(expected {schema.min_objects} to {S})")
    return out, n_objects
