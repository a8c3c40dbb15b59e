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
from .codes import _fail, _json_type, _show, validate_scene
from .schema import CURI_SCHEMA, SceneSchema

__all__ = ["read_scenes_jsonl", "write_scenes_jsonl", "validate_scene", "load_clevr_scenes"]


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
    :class:`SceneError` naming the file, line and field of the first problem.
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
            validate_scene(scene, schema, where)
            scenes.append(scene)
    return scenes


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
    validated first (errors name ``scene <i>``).  numpy scalars are written as
    JSON numbers.
    """
    name = os.fspath(path)
    scenes = list(scenes)
    if schema is not None:
        for i, scene in enumerate(scenes):
            validate_scene(scene, schema, f"scene {i}")
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
    attributes ``x`` and ``y``; each object needs every other attribute of the
    schema (CURI: ``color``, ``shape``, ``material``, ``size``) and ``pixel_coords``
    ``[px, py, depth]`` (``py`` from the top of a ``width`` x ``height`` image);
    other object keys (``3d_coords``, ``rotation``, ...) are ignored.  Location
    bins: ``x = floor(px * B / width) + 1``, ``y = floor(py * B / height) + 1``
    clipped to ``1..B`` (``B`` = number of x/y values of the schema, 8).

    Returns a list of ``{"objects": [...]}`` dicts in file order; a scene's
    scalar top-level keys (``image_index``, ``image_filename``, ``split``) are
    kept.  Errors name the file and ``scenes[i]``.
    """
    name = os.fspath(path)
    if schema is None:
        schema = CURI_SCHEMA.with_max_objects(max(CURI_SCHEMA.max_objects, 10))
    missing = [a for a in ("x", "y") if a not in schema.names]
    if missing:
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
    x_bins = schema.attribute("x").n_values
    y_bins = schema.attribute("y").n_values
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
            for key in copied + ("pixel_coords",):
                if key not in obj:
                    _fail(where, field, f"missing key '{key}'")
            pc = obj["pixel_coords"]
            if (not isinstance(pc, list) or len(pc) < 2
                    or not _is_number(pc[0]) or not _is_number(pc[1])):
                _fail(where, f"{field}.pixel_coords",
                      f"expected [px, py, depth] with finite numbers, got {_show(pc)}")
            bx, by = pixels_to_bins(pc[0], pc[1], x_bins, y_bins, width=width, height=height)
            new = {key: obj[key] for key in copied}
            new["x"] = int(bx)
            new["y"] = int(by)
            converted.append(new)
        result = {"objects": converted}
        result.update((key, value) for key, value in scene.items()
                      if key != "objects" and (value is None or isinstance(value, (str, int, float))))
        validate_scene(result, schema, where)
        out.append(result)
    return out
