"""Reading and writing scenes: our JSON Lines format and CLEVR scene json.

JSON Lines format (``.jsonl``), one scene per line, UTF-8::

    {"objects": [{"color": "red", "shape": "cube", "material": "metal", "size": "large", "x": 3, "y": 5}]}

* every object has exactly the schema's attributes (CURI: ``color``, ``shape``,
  ``material``, ``size``, ``x``, ``y``); an unknown or missing key is an error;
* integer attributes (CURI's location bins ``x``/``y``, 1..8) are JSON integers
  (``true``, ``3.0`` and ``"3"`` are errors);
* a scene has ``schema.min_objects .. schema.max_objects`` objects (1..5 for
  CURI), in slot order;
* other top-level keys (e.g. ``"label"``, ``"id"``) are allowed and kept;
* blank lines are skipped (line numbers still count them); an empty file holds
  0 scenes.

Errors are :class:`~bayes_concepts.errors.SceneError` with a one-line message
naming the file (as given), the 1-based line and the field, e.g.
``scenes.jsonl line 3: objects[1].color: unknown value 'pink' (expected one of
gray, red, blue, green, brown, purple, cyan, yellow)``.

The schema defaults to CURI's (:data:`~bayes_concepts.scenes.schema.CURI_SCHEMA`, the
default grammar's); pass ``Grammar.schema`` of
another domain's grammar file to read its scenes.

Scenes with relations (a schema whose ``relations`` is not empty, e.g. CLEVR's left,
right, front, behind) may also carry, in both formats, CLEVR's keys:

* ``"3d_coords": [x, y, z]`` on every object (all objects of a scene or none; finite
  numbers, world coordinates);
* ``"directions": {name: [x, y, z], ...}`` on the scene (only with ``3d_coords``; a
  vector for each of the schema's relations, other names such as ``above`` ignored;
  default :data:`~bayes_concepts.scenes.schema.CLEVR_DIRECTIONS`);
* ``"relationships": {name: [list_0, ..., list_{k-1}], ...}`` on the scene, where
  ``list_b`` holds the indices of the objects that are ``name`` of object ``b``
  (CLEVR's orientation, :mod:`bayes_concepts.scenes.relations`).

Each such scene needs ``3d_coords`` or ``relationships``.  With both, the relations
computed from the coordinates (CLEVR's rule, eps 0.2) must equal the listed ones,
otherwise the :class:`~bayes_concepts.errors.SceneError` names the scene, relation and
object pair, e.g. ``scenes.json scenes[1]: relationships.left[0]: lists object 2 as
left of object 0, but by their 3d_coords it is not (dot = 0.19, eps 0.2)``.  For a
schema without relations these keys are not part of the format (``3d_coords`` is an
unknown object key, as before).  :func:`scenes_to_arrays` turns such scene dicts into
the arrays a :class:`~bayes_concepts.scenes.bank.SceneBank` is built from.
"""
from __future__ import annotations

import json
import math
import numbers
import os
import tempfile

import numpy as np

from ..errors import SceneError
from .camera import IMAGE_HEIGHT, IMAGE_WIDTH, pixels_to_bins
from .codes import _fail, _json_type, _show, encode_scene, scenes_to_codes, validate_scene
from .relations import (first_mismatch, relation_dot, relations_from_lists,
                        relations_from_positions)
from .schema import CLEVR_DIRECTIONS, CLEVR_RELATION_EPS, CURI_SCHEMA, SceneSchema

__all__ = ["read_scenes_jsonl", "write_scenes_jsonl", "validate_scene", "load_clevr_scenes",
           "check_relational_scene", "scenes_to_arrays"]


def _open_binary(path):
    try:
        return open(path, "rb")
    except OSError as e:
        raise SceneError(f"{os.fspath(path)}: cannot read file: "
                         f"{e.strerror or e.__class__.__name__}") from None


def read_scenes_jsonl(path, schema: SceneSchema | None = None) -> list:
    """Read and validate a JSON Lines scene file (``schema``: default CURI's).

    Returns a list of scene dicts exactly as parsed (``{"objects": [...], ...}``,
    extra top-level keys included), one per non-blank line.  Raises
    :class:`SceneError` naming the file, line and field of the first problem.  With a
    schema with relations, scenes are checked by :func:`check_relational_scene`.
    """
    name = os.fspath(path)
    schema = CURI_SCHEMA if schema is None else schema
    scenes = []
    with _open_binary(path) as f:
        for lineno, raw in enumerate(f, 1):
            where = f"{name} line {lineno}"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                _fail(where, "", f"not UTF-8 text (byte {e.start + 1})")
            if lineno == 1:
                text = text.lstrip("\ufeff")
            if not text.strip():
                continue
            try:
                scene = json.loads(text)
            except json.JSONDecodeError as e:
                _fail(where, "", f"invalid JSON: {e.msg} (column {e.colno})")
            except RecursionError:
                _fail(where, "", "invalid JSON: nested too deeply")
            _validate(scene, schema, where)
            scenes.append(scene)
    return scenes


def _validate(scene, schema: SceneSchema, where: str) -> None:
    """:func:`validate_scene`, or :func:`check_relational_scene` for a schema with relations."""
    if schema.relations:
        check_relational_scene(scene, schema, where)
    else:
        validate_scene(scene, schema, where)


def _to_builtin(value):
    """``json.dumps`` fallback for numpy scalars and arrays."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_scenes_jsonl(path, scenes, *, schema: SceneSchema | None = None) -> None:
    """Write scene dicts as JSON Lines, atomically.

    The lines go to a temporary file in the target's directory which then
    replaces ``path`` (``os.replace``), so readers see the old file or the
    complete new one, never a partial file; on any error the temporary file is
    removed and ``path`` is left untouched.  With ``schema`` given, every scene is
    validated first (errors name ``scene <i>``; a schema with relations: by
    :func:`check_relational_scene`).  numpy scalars and arrays are written as JSON
    numbers and arrays.
    """
    name = os.fspath(path)
    scenes = list(scenes)
    if schema is not None:
        for i, scene in enumerate(scenes):
            _validate(scene, schema, f"scene {i}")
    directory = os.path.dirname(os.path.abspath(name))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(name) + ".",
                               suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            for i, scene in enumerate(scenes):
                try:
                    line = json.dumps(scene, default=_to_builtin, allow_nan=False)
                except (TypeError, ValueError) as e:
                    raise SceneError(f"{name}: scene {i}: cannot write as JSON: {e}") from None
                f.write(line)
                f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, name)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _is_number(v) -> bool:
    return (isinstance(v, numbers.Real) and not isinstance(v, bool)
            and math.isfinite(float(v)))


def load_clevr_scenes(path, schema: SceneSchema | None = None, *,
                      width: int = IMAGE_WIDTH, height: int = IMAGE_HEIGHT) -> list:
    """Read a CLEVR scenes json file and convert it to our scene dicts.

    Accepts ``{"scenes": [scene, ...]}`` (CLEVR's ``*_scenes.json``) or one
    scene ``{"objects": [...]}`` (a per-image file).  ``schema`` (default: CURI's
    with up to 10 objects, CLEVR's limit) must have location
    attributes ``x`` and ``y`` (a schema with relations may lack them, and then
    needs no ``pixel_coords`` nor bins them); each object needs every other attribute of the
    schema (CURI: ``color``, ``shape``, ``material``, ``size``) and ``pixel_coords``
    ``[px, py, depth]`` (``py`` from the top of a ``width`` x ``height`` image);
    other object keys (``3d_coords``, ``rotation``, ...) are ignored, except that a
    schema with relations keeps each object's ``3d_coords`` and the scene's
    ``directions`` and ``relationships`` (checked by :func:`check_relational_scene`:
    relationships that disagree with the coordinates are an error).  Location
    bins: ``x = floor(px * B / width) + 1``, ``y = floor(py * B / height) + 1``
    clipped to ``1..B`` (``B`` = number of x/y values of the schema, 8).

    Returns a list of ``{"objects": [...]}`` dicts in file order; a scene's
    scalar top-level keys (``image_index``, ``image_filename``, ``split``) are
    kept.  Errors name the file and ``scenes[i]``.
    """
    name = os.fspath(path)
    if schema is None:
        schema = CURI_SCHEMA.with_max_objects(max(CURI_SCHEMA.max_objects, 10))
    located = tuple(a for a in ("x", "y") if a in schema.names)
    missing = [a for a in ("x", "y") if a not in located]
    if missing and not schema.relations:
        raise SceneError(f"{name}: CLEVR scenes give locations, but the schema has no attribute "
                         f"{' or '.join(repr(a) for a in missing)} (its attributes: {', '.join(schema.names)})")
    copied = tuple(a for a in schema.names if a not in ("x", "y"))
    with _open_binary(path) as f:
        raw = f.read()
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        _fail(name, "", f"not UTF-8 text (byte {e.start + 1})")
    except json.JSONDecodeError as e:
        _fail(name, "", f"invalid JSON: {e.msg} (line {e.lineno}, column {e.colno})")
    except RecursionError:
        _fail(name, "", "invalid JSON: nested too deeply")
    if isinstance(data, dict) and "scenes" in data:
        raw_scenes, label = data["scenes"], "scenes"
        if not isinstance(raw_scenes, list):
            _fail(name, "scenes", f"expected an array of scenes, got {_json_type(raw_scenes)}")
    elif isinstance(data, dict) and "objects" in data:
        raw_scenes, label = [data], None
    else:
        _fail(name, "", "expected a JSON object with key 'scenes' (CLEVR scenes file)")
    n_bins = {a: schema.attribute(a).n_values if a in located else 1 for a in ("x", "y")}
    needed = copied + (("pixel_coords",) if located else ())
    out = []
    for i, scene in enumerate(raw_scenes):
        where = f"{name} {label}[{i}]" if label else name
        if not isinstance(scene, dict):
            _fail(where, "", f"expected a JSON object (a scene), got {_json_type(scene)}")
        if "objects" not in scene:
            _fail(where, "", "missing key 'objects'")
        objects = scene["objects"]
        if not isinstance(objects, list):
            _fail(where, "objects", f"expected an array of objects, got {_json_type(objects)}")
        converted = []
        for k, obj in enumerate(objects):
            field = f"objects[{k}]"
            if not isinstance(obj, dict):
                _fail(where, field, f"expected a JSON object, got {_json_type(obj)}")
            for key in needed:
                if key not in obj:
                    _fail(where, field, f"missing key '{key}'")
            new = {key: obj[key] for key in copied}
            if located:
                pc = obj["pixel_coords"]
                if (not isinstance(pc, list) or len(pc) < 2
                        or not _is_number(pc[0]) or not _is_number(pc[1])):
                    _fail(where, f"{field}.pixel_coords",
                          f"expected [px, py, depth] with finite numbers, got {_show(pc)}")
                bins = pixels_to_bins(pc[0], pc[1], n_bins["x"], n_bins["y"], width=width, height=height)
                new.update((a, int(b)) for a, b in zip(("x", "y"), bins) if a in located)
            if schema.relations and "3d_coords" in obj:
                new["3d_coords"] = obj["3d_coords"]
            converted.append(new)
        result = {"objects": converted}
        result.update((key, value) for key, value in scene.items()
                      if key != "objects" and (value is None or isinstance(value, (str, int, float))))
        if schema.relations:
            result.update((key, scene[key]) for key in _RELATIONAL_KEYS if key in scene)
        _validate(result, schema, where)
        out.append(result)
    return out


# ----------------------------------------------------------------------------
# scenes with relations
# ----------------------------------------------------------------------------

_RELATIONAL_KEYS = ("directions", "relationships")


def _without_coords(scene):
    """``scene`` with its objects' ``3d_coords`` removed (a shallow copy), for the
    attribute checks; anything malformed is passed on as it is."""
    if not isinstance(scene, dict) or not isinstance(scene.get("objects"), (list, tuple)):
        return scene
    objects = [{k: v for k, v in obj.items() if k != "3d_coords"} if isinstance(obj, dict) else obj
               for obj in scene["objects"]]
    return {**scene, "objects": objects}


def _vector(value, where: str, field: str, what: str) -> list:
    if (not isinstance(value, (list, tuple)) or len(value) != 3
            or not all(_is_number(v) for v in value)):
        _fail(where, field, f"expected {what} with finite numbers, got {_show(value)}")
    return [float(v) for v in value]


def _scene_positions(objects, where: str):
    """float64 ``(k, 3)`` of the objects' ``3d_coords``, or None when no object has them."""
    has = [isinstance(obj, dict) and "3d_coords" in obj for obj in objects]
    if not any(has):
        return None
    if not all(has):
        i = has.index(False)
        _fail(where, f"objects[{i}]", "missing key '3d_coords' (other objects of the scene have one)")
    return np.array([_vector(obj["3d_coords"], where, f"objects[{i}].3d_coords", "[x, y, z]")
                     for i, obj in enumerate(objects)], dtype=np.float64).reshape(-1, 3)


def _scene_directions(scene, names, where: str) -> np.ndarray:
    """float64 ``(R, 3)``: the scene's ``directions`` of ``names``, else CLEVR's."""
    if "directions" not in scene:
        unknown = [r for r in names if r not in CLEVR_DIRECTIONS]
        if unknown:
            _fail(where, "directions", f"missing: no default direction for relation '{unknown[0]}'")
        return np.array([CLEVR_DIRECTIONS[r] for r in names], dtype=np.float64).reshape(-1, 3)
    given = scene["directions"]
    if not isinstance(given, dict):
        _fail(where, "directions", f"expected a JSON object, got {_json_type(given)}")
    rows = []
    for r in names:
        if r not in given:
            _fail(where, "directions", f"missing direction '{r}'")
        rows.append(_vector(given[r], where, f"directions.{r}", "[x, y, z]"))
    return np.array(rows, dtype=np.float64).reshape(-1, 3)


def _mismatch_message(where, names, positions, dirs, listed, r, a, b) -> str:
    dot = relation_dot(positions, dirs[r], a, b)
    name = names[r]
    if listed:
        what = f"lists object {a} as {name} of object {b}, but by their 3d_coords it is not"
    else:
        what = f"does not list object {a} as {name} of object {b}, but by their 3d_coords it is"
    return (f"{where}: relationships.{name}[{b}]: {what} "
            f"(dot = {dot:.6g}, eps {CLEVR_RELATION_EPS})")


def check_relational_scene(scene, schema: SceneSchema, where: str = ""):
    """Validate one scene dict of a schema with relations and return its arrays.

    The objects are checked as by :func:`validate_scene`, their ``3d_coords`` aside;
    then ``3d_coords``, ``directions`` and ``relationships`` as described in the
    module docstring.

    Returns
    -------
    codes : int8 ndarray (k, n_attributes)
    positions : float64 ndarray (k, 3), or None when the objects have no ``3d_coords``
    relations : bool ndarray (R, k, k)
        ``[r, a, b]``: object ``a`` is ``schema.relations[r]`` of object ``b`` (from
        ``relationships`` if given, which then equals the relations computed from the
        coordinates, else computed from them).

    Raises :class:`SceneError` ``"<where>: <field>: <problem>"`` (one line).
    """
    names = schema.relations
    codes = encode_scene(_without_coords(scene), schema, where)
    k = codes.shape[0]
    positions = _scene_positions(scene["objects"], where)
    listed = None
    if "relationships" in scene:
        listed = relations_from_lists(scene["relationships"], names, k, where=where)
    if positions is None:
        if "directions" in scene:
            _fail(where, "directions", "given, but the objects have no '3d_coords'")
        if listed is None:
            _fail(where, "", "a scene with relations needs the objects' '3d_coords' or "
                             "'relationships'")
        return codes, None, listed
    dirs = _scene_directions(scene, names, where)
    computed = relations_from_positions(positions[None], [k], dirs, names)[0]
    if listed is not None:
        bad = first_mismatch(computed, listed)
        if bad is not None:
            r, a, b = bad
            raise SceneError(_mismatch_message(where, names, positions, dirs, bool(listed[r, a, b]),
                                               r, a, b))
    return codes, positions, computed


def scenes_to_arrays(scenes, schema: SceneSchema | None = None, where: str = "scene"):
    """Scene dicts -> the arrays of a :class:`~bayes_concepts.scenes.bank.SceneBank`.

    ``scenes``: a sequence of scene dicts (read by :func:`read_scenes_jsonl` or
    :func:`load_clevr_scenes`, or made by hand); each is validated (errors name
    ``"<where> <i>"``), with :func:`check_relational_scene` when ``schema`` (default
    CURI's) has relations.

    Returns
    -------
    codes : int8 ndarray (n, S, A)
        As :func:`~bayes_concepts.scenes.codes.scenes_to_codes` (``S = schema.max_objects``).
    positions : float32 ndarray (n, S, 3) or None
        The objects' ``3d_coords``, NaN in empty slots; None unless every scene gives
        them (and always for a schema without relations).
    relations : bool ndarray (n, R, S, S) or None
        ``[i, r, a, b]``: in scene ``i`` object ``a`` is ``schema.relations[r]`` of
        object ``b``; None for a schema without relations.

    ``SceneBank(codes, schema, positions=positions, relations=relations)`` is the bank.
    """
    schema = CURI_SCHEMA if schema is None else schema
    if not schema.relations:
        return scenes_to_codes(scenes, schema, where)[0], None, None
    scenes = list(scenes)
    n, S, A, R = len(scenes), schema.max_objects, schema.n_attributes, len(schema.relations)
    codes = np.full((n, S, A), -1, dtype=np.int8)
    positions = np.full((n, S, 3), np.nan, dtype=np.float32)
    relations = np.zeros((n, R, S, S), dtype=bool)
    all_positions = True
    for i, scene in enumerate(scenes):
        rows, pos, rel = check_relational_scene(scene, schema, f"{where} {i}" if where else f"scene {i}")
        k = rows.shape[0]
        codes[i, :k] = rows
        relations[i, :, :k, :k] = rel
        if pos is None:
            all_positions = False
        else:
            positions[i, :k] = pos
    return codes, (positions if all_positions else None), relations
