"""CLEVR's spatial relations (left, right, front, behind) of objects on the ground plane.

Orientation convention (CLEVR's): in a scene's ``"relationships"``,
``relationships[name][b]`` lists the objects ``a`` that are ``name`` of object ``b``
("a is left of b").  The array form used here has the same orientation:

``rel``
    ``bool`` array of shape ``(n, R, S, S)`` (one scene: ``(R, S, S)``);
    ``rel[i, r, a, b]`` is True iff in scene ``i`` object ``a`` is ``names[r]`` of
    object ``b``, i.e. ``a in relationships[names[r]][b]``.  Always False when
    ``a == b`` or when slot ``a`` or ``b`` is empty.

The rule (CLEVR's ``compute_all_relationships``): with ``d_r`` the unit direction of
relation ``r`` on the ground plane (:data:`~bayes_concepts.scenes.schema.CLEVR_DIRECTIONS`
by default), object ``a`` is ``r`` of object ``b`` iff
``dot(pos_a - pos_b, d_r) > eps`` (:data:`~bayes_concepts.scenes.schema.CLEVR_RELATION_EPS`
= 0.2).  The dot product is evaluated as CLEVR's generator does it, in float64 and in the
order ``x, y, z``, so that the relations of a CLEVR scene file are reproduced bit for bit.

Positions are world coordinates in CLEVR's units (the ground plane is ``z = 0``; objects'
centres lie in ``[-3, 3]^2``), ``float`` arrays of shape ``(n, S, 3)``; slots
``>= n_objects[i]`` are ignored (NaN there is fine).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .codes import _fail, _json_type, _show
from .schema import CLEVR_DIRECTIONS, CLEVR_RELATION_EPS

__all__ = [
    "direction_vectors",
    "relations_from_positions",
    "relationships_lists",
    "relations_from_lists",
    "first_mismatch",
    "relation_dot",
]

_CHUNK = 1 << 14


def direction_vectors(names, directions=CLEVR_DIRECTIONS) -> np.ndarray:
    """Direction vectors of the relations ``names``, ``float64`` ``(R, 3)``.

    ``directions``: a mapping name -> 3 numbers (CLEVR's per-scene ``"directions"``;
    extra names such as ``above`` are ignored), or an array ``(R, 3)`` in the order of
    ``names``.  Raises ``ValueError`` on a missing name or a wrong shape.
    """
    names = tuple(names)
    if isinstance(directions, Mapping):
        missing = [r for r in names if r not in directions]
        if missing:
            raise ValueError(f"no direction for relation {missing[0]!r} "
                             f"(directions given: {', '.join(map(str, directions))})")
        rows = [directions[r] for r in names]
    else:
        rows = directions
    out = np.asarray(rows, dtype=np.float64).reshape(-1, 3) if len(names) else np.zeros((0, 3))
    if out.shape != (len(names), 3) or not np.isfinite(out).all():
        raise ValueError(f"directions must be {len(names)} finite 3-vectors, got shape "
                         f"{np.shape(rows)}")
    return out


def _per_scene_directions(directions, names, n: int) -> np.ndarray:
    """Directions as ``float64`` ``(n, R, 3)`` (one set for all scenes, or one per scene)."""
    if not isinstance(directions, Mapping):
        arr = np.asarray(directions, dtype=np.float64)
        if arr.ndim == 3:
            if arr.shape != (n, len(names), 3) or not np.isfinite(arr).all():
                raise ValueError(f"per-scene directions must be finite, shape "
                                 f"{(n, len(names), 3)}, got {arr.shape}")
            return arr
    return np.broadcast_to(direction_vectors(names, directions), (n, len(names), 3))


def _present(n_objects, n: int, S: int) -> np.ndarray:
    """``bool (n, S)``: slot ``s`` of scene ``i`` holds an object."""
    k = np.asarray(n_objects)
    if k.shape != (n,) or (n and (k.min() < 0 or k.max() > S)):
        raise ValueError(f"n_objects must be {n} counts in 0..{S}, got shape {k.shape}")
    return np.arange(S)[None, :] < k.astype(np.int64)[:, None]


def relations_from_positions(positions, n_objects, directions, names,
                             eps: float = CLEVR_RELATION_EPS) -> np.ndarray:
    """Relations of every ordered pair of objects, from their positions.

    Parameters
    ----------
    positions : float array (n, S, 3)
        Objects' centres (world x, y, z; CLEVR units); slots ``>= n_objects[i]`` ignored.
    n_objects : int array (n,)
        Objects per scene, in slots ``0 .. n_objects[i]-1``.
    directions : mapping name -> 3-vector, or float array (R, 3) or (n, R, 3)
        Direction of each relation (array rows in the order of ``names``; ``(n, R, 3)``:
        one set per scene).  CLEVR's: :data:`~bayes_concepts.scenes.schema.CLEVR_DIRECTIONS`.
    names : sequence of R relation names.
    eps : float
        Threshold, CLEVR's 0.2.

    Returns
    -------
    rel : bool ndarray (n, R, S, S)
        ``rel[i, r, a, b]`` iff ``a != b``, both present and
        ``dot(pos[i, a] - pos[i, b], d_r) > eps``: object a is ``names[r]`` of object b.
    """
    pos = np.asarray(positions, dtype=np.float64)
    if pos.ndim != 3 or pos.shape[2] != 3:
        raise ValueError(f"positions must have shape (n, S, 3), got {pos.shape}")
    n, S, _ = pos.shape
    names = tuple(names)
    present = _present(n_objects, n, S)
    if not np.isfinite(pos[present]).all():
        raise ValueError("positions of present objects must be finite")
    dirs = _per_scene_directions(directions, names, n)
    pos = np.where(present[:, :, None], pos, 0.0)
    rel = np.zeros((n, len(names), S, S), dtype=bool)
    not_self = ~np.eye(S, dtype=bool)
    for lo in range(0, n, _CHUNK):
        hi = min(n, lo + _CHUNK)
        pair = present[lo:hi, :, None] & present[lo:hi, None, :] & not_self
        diff = pos[lo:hi, :, None, :] - pos[lo:hi, None, :, :]  # [i, a, b] = pos_a - pos_b
        for r in range(len(names)):
            d = dirs[lo:hi, r, None, None, :]
            dot = diff[..., 0] * d[..., 0] + diff[..., 1] * d[..., 1] + diff[..., 2] * d[..., 2]
            rel[lo:hi, r] = (dot > eps) & pair
    return rel


def relation_dot(positions_one_scene, direction, a: int, b: int) -> float:
    """``dot(pos_a - pos_b, direction)`` of one scene (``positions_one_scene``: ``(S, 3)``),
    computed like :func:`relations_from_positions` (for messages)."""
    p = np.asarray(positions_one_scene, dtype=np.float64)
    d = np.asarray(direction, dtype=np.float64)
    diff = p[a] - p[b]
    return float(diff[0] * d[0] + diff[1] * d[1] + diff[2] * d[2])


def relationships_lists(rel_one_scene, names, n_objects: int) -> dict:
    """CLEVR's ``"relationships"`` of one scene from its relation array.

    ``rel_one_scene``: bool ``(R, S, S)`` (``[r, a, b]``: a is ``names[r]`` of b) with
    ``S >= n_objects``.  Returns ``{name: [list_0, ..., list_{k-1}]}`` where
    ``list_b`` is the sorted list of the objects ``a`` that are ``name`` of ``b``
    (plain ``int``), ``k = n_objects``.
    """
    rel = np.asarray(rel_one_scene, dtype=bool)
    k = int(n_objects)
    return {name: [np.flatnonzero(rel[r, :k, b]).tolist() for b in range(k)]
            for r, name in enumerate(names)}


def _indices(entry, k: int, b: int, where: str, field: str) -> list:
    if not isinstance(entry, (list, tuple)):
        _fail(where, field, f"expected an array of object indices, got {_json_type(entry)}")
    seen = []
    for a in entry:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not 0 <= a < k:
            _fail(where, field, f"expected object indices in 0..{k - 1}, got {_show(a)}")
        if a == b:
            _fail(where, field, f"object {b} cannot be related to itself")
        if a in seen:
            _fail(where, field, f"object {int(a)} listed twice")
        seen.append(int(a))
    return seen


def relations_from_lists(relationships, names, n_objects: int, n_slots: int | None = None,
                         *, where: str = "") -> np.ndarray:
    """Inverse of :func:`relationships_lists`: the relation array of one scene.

    ``relationships``: ``{name: [list_0, ..., list_{k-1}]}`` (CLEVR's form; names beyond
    ``names`` are ignored), ``list_b`` = the objects that are ``name`` of object ``b``
    (any order).  Returns bool ``(R, n_slots, n_slots)`` (``n_slots`` defaults to
    ``n_objects``) with ``[r, a, b]`` set iff ``a in relationships[names[r]][b]``.
    Raises :class:`~bayes_concepts.errors.SceneError`
    ``"<where>: relationships.<name>[<b>]: <problem>"``.
    """
    k = int(n_objects)
    S = k if n_slots is None else int(n_slots)
    rel = np.zeros((len(names), S, S), dtype=bool)
    if not isinstance(relationships, Mapping):
        _fail(where, "relationships", f"expected a JSON object, got {_json_type(relationships)}")
    for r, name in enumerate(names):
        field = f"relationships.{name}"
        if name not in relationships:
            _fail(where, "relationships", f"missing relation '{name}'")
        lists = relationships[name]
        if not isinstance(lists, (list, tuple)) or len(lists) != k:
            got = f"{len(lists)} lists" if isinstance(lists, (list, tuple)) else _json_type(lists)
            _fail(where, field, f"expected one list per object ({k}), got {got}")
        for b, entry in enumerate(lists):
            for a in _indices(entry, k, b, where, f"{field}[{b}]"):
                rel[r, a, b] = True
    return rel


def first_mismatch(expected, given):
    """First index ``(r, a, b)`` (C order) where two relation arrays ``(R, S, S)`` differ,
    or ``None`` when they are equal."""
    diff = np.argwhere(np.asarray(expected, bool) != np.asarray(given, bool))
    if len(diff) == 0:
        return None
    return tuple(int(v) for v in diff[0])
