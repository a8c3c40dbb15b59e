"""Scene samplers: ``uniform`` and ``clevr``.

Both return the array form of :mod:`bayes_concepts.scenes.codes`: an ``int8``
array ``codes`` of shape ``(n, schema.max_objects, schema.n_attributes)``, ``-1``
in empty slots (``n_objects = (codes[:, :, 0] >= 0).sum(1)``).

Common to both samplers: the number of objects of a scene is uniform on
``schema.sample_min_objects .. schema.max_objects`` (2..5 for CURI, as in CURI's
modified CLEVR renderer) and every non-location attribute of every object is
uniform over its values, independently.

``uniform``
    The location bins ``x`` and ``y`` are uniform and independent too.

``clevr``
    Needs the schema attributes ``size`` (values among ``small``/``large``, CLEVR's
    radii) and ``x``, ``y`` (location bins ``1..n``); a schema without them is a
    :class:`~bayes_concepts.errors.SceneError` naming what is missing (use
    ``uniform`` for such a domain).  Any other attributes are sampled uniformly.
    Locations are made like CLEVR's renderer makes them, then binned:

    * every object is a disc of radius 0.7 (``large``) or 0.35 (``small``);
    * object centres are uniform on the ground plane ``[-3, 3]^2``, subject to
      CLEVR's minimum-distance rule ``dist(c_i, c_j) - r_i - r_j >= 0.25`` for
      every pair.  *Our choice:* we draw the positions of a whole scene jointly
      and redraw them all until every pair satisfies the rule (rejection
      sampling), i.e. positions are uniform over the valid configurations given
      the sizes.  It is implemented as sequential placement that restarts the
      scene from its first object at the first violation, which is the same
      distribution.  CLEVR's own script instead retries a single object up to 50
      times before restarting, also rejects pairs closer than a 0.4 margin along
      the left/right/front/behind directions, shrinks cubes' radius by
      sqrt(2) and jitters the camera; none of that is reproduced;
    * the centre of an object is at height ``z = radius``;
    * centres are projected through the fixed camera of
      :mod:`bayes_concepts.scenes.camera` (Blender's default camera at about
      (7.36, -6.93, 4.96) looking at the origin, 35 mm lens, 32 mm sensor,
      480x320 image) and binned into 8x8 (``floor(px*8/480)+1``,
      ``floor(py*8/320)+1`` with ``py`` from the top, clipped to 1..8).

    The result has CURI's centre bias: objects cluster in the middle y bins
    (the ground plane, seen obliquely, covers only the middle of the image).

Determinism: the output is a function of ``(n, sampler, schema, seed)`` only
(``seed`` is anything :func:`numpy.random.default_rng` accepts: an int, a
:class:`~numpy.random.SeedSequence` or a :class:`~numpy.random.Generator`, which
is then advanced).  Random numbers are drawn in this order: the object counts,
then one ``(n, max_objects)`` block per sampled attribute in schema order,
then (``clevr``) the positions scene by scene.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from ..errors import SceneError
from .camera import pixels_to_bins, project_points
from .schema import CURI_SCHEMA, SceneSchema

__all__ = [
    "SAMPLERS",
    "CLEVR_RADII",
    "CLEVR_PLANE_HALF_WIDTH",
    "CLEVR_MIN_DIST",
    "sample_scenes",
    "sample_clevr_positions",
    "clevr_schema_problems",
]

SAMPLERS = ("clevr", "uniform")
#: Radius of an object by size value (CLEVR's ``size_mapping``).
CLEVR_RADII = {"small": 0.35, "large": 0.7}
#: Objects' centres are uniform on ``[-h, h]^2``.
CLEVR_PLANE_HALF_WIDTH = 3.0
#: CLEVR's ``--min_dist``: minimum gap between two objects' discs.
CLEVR_MIN_DIST = 0.25
#: Give up on a scene after this many single-object draws (impossible layouts).
_MAX_DRAWS_PER_SCENE = 20_000_000
_CHUNK = 1 << 16


@numba.njit(nogil=True)  # no on-disk cache: numba pickles its cache index
def _place_discs(rng, radii, n_objects, half, min_dist, max_draws, out):  # pragma: no cover
    """Joint rejection sampling of disc centres, scene by scene.

    radii (m, S) float64, n_objects (m,) int64, out (m, S, 2) float64 (written).
    Returns -1, or the index of a scene that could not be placed.
    """
    m = radii.shape[0]
    for i in range(m):
        k = n_objects[i]
        placed = 0
        draws = 0
        while placed < k:
            if draws >= max_draws:
                return i
            x = rng.uniform(-half, half)
            y = rng.uniform(-half, half)
            draws += 1
            r = radii[i, placed]
            ok = True
            for j in range(placed):
                dx = x - out[i, j, 0]
                dy = y - out[i, j, 1]
                if math.sqrt(dx * dx + dy * dy) - r - radii[i, j] < min_dist:
                    ok = False
                    break
            if ok:
                out[i, placed, 0] = x
                out[i, placed, 1] = y
                placed += 1
            else:
                placed = 0
    return -1


def sample_clevr_positions(radii, n_objects, seed=0, *, half_width=CLEVR_PLANE_HALF_WIDTH,
                           min_dist=CLEVR_MIN_DIST):
    """Ground-plane positions of objects under CLEVR's minimum-distance rule.

    Parameters
    ----------
    radii : float array (m, S)
        Radius of the object in each slot (slots ``>= n_objects[i]`` ignored).
    n_objects : int array (m,)
        Objects per scene; they occupy slots ``0 .. n_objects[i]-1``.
    seed : int, SeedSequence or Generator

    Returns
    -------
    xy : float64 array (m, S, 2)
        Centres, uniform on ``[-half_width, half_width]^2`` conditioned on
        ``dist - r_i - r_j >= min_dist`` for every pair; NaN in empty slots.
    """
    rng = np.random.default_rng(seed)
    radii = np.ascontiguousarray(radii, dtype=np.float64)
    n_objects = np.ascontiguousarray(n_objects, dtype=np.int64)
    if radii.ndim != 2 or n_objects.shape != (radii.shape[0],):
        raise ValueError(f"radii must be (m, S) and n_objects (m,), got {radii.shape} "
                         f"and {n_objects.shape}")
    if n_objects.size and (n_objects.min() < 0 or n_objects.max() > radii.shape[1]):
        raise ValueError("n_objects must be in 0..S")
    out = np.full(radii.shape + (2,), np.nan)
    bad = _place_discs(rng, radii, n_objects, float(half_width), float(min_dist),
                       _MAX_DRAWS_PER_SCENE, out)
    if bad >= 0:
        raise SceneError(
            f"clevr sampler: could not place {n_objects[bad]} objects with radii "
            f"{np.round(radii[bad, :n_objects[bad]], 3).tolist()} on the "
            f"[-{half_width}, {half_width}]^2 plane at minimum distance {min_dist}")
    return out


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    return int(n)


def clevr_schema_problems(schema: SceneSchema, location_bins=None) -> list:
    """What keeps the ``clevr`` sampler from sampling ``schema``'s scenes (empty list: nothing).

    It needs an attribute ``size`` whose values all have a CLEVR radius
    (:data:`CLEVR_RADII`) and attributes ``x`` and ``y`` with values ``1..n`` (with
    ``location_bins=(first, last)``: values that include ``first..last``).
    """
    names = schema.names
    missing = [a for a in ("size", "x", "y") if a not in names]
    problems = []
    if missing:
        problems.append(f"the schema has no attribute {' or '.join(repr(a) for a in missing)} "
                        f"(its attributes: {', '.join(names)})")
    if "size" in names:
        unknown = [v for v in schema.attribute("size").values if v not in CLEVR_RADII]
        if unknown:
            problems.append(f"size {', '.join(repr(v) for v in unknown)} has no CLEVR radius "
                            f"(known: {', '.join(CLEVR_RADII)})")
    for a in ("x", "y"):
        if a in names:
            values = list(schema.attribute(a).values)
            if location_bins is not None:
                missing = [b for b in range(location_bins[0], location_bins[1] + 1) if b not in values]
                if missing:
                    problems.append(f"{a} values {values} lack the location bins {missing}")
            elif values != list(range(1, len(values) + 1)):
                problems.append(f"{a} values must be the bins 1..n, got {values}")
    return problems


def _location_bins(location_bins) -> tuple | None:
    if location_bins is None:
        return None
    try:
        first, last = (int(b) for b in location_bins)
    except (TypeError, ValueError):
        raise ValueError(f"location_bins must be (first, last), e.g. (0, 7), got {location_bins!r}") from None
    if not 0 <= first <= last:
        raise ValueError(f"location_bins must satisfy 0 <= first <= last, got {location_bins!r}")
    return first, last


def sample_scenes(n: int, sampler: str = "clevr", schema: SceneSchema | None = None,
                  seed=0, *, location_bins=None) -> np.ndarray:
    """Sample ``n`` scenes.

    Parameters
    ----------
    n : int
        Number of scenes.
    sampler : {"clevr", "uniform"}
        See the module docstring.
    schema : SceneSchema, optional
        Default: CURI's (:data:`~bayes_concepts.scenes.schema.CURI_SCHEMA`).  ``uniform`` samples any
        schema; ``clevr`` needs attributes ``size`` (values small/large), ``x`` and
        ``y`` (see :func:`clevr_schema_problems`).
    seed : int, SeedSequence or Generator
    location_bins : (first, last), optional
        ``clevr`` only: bin the image into ``last - first + 1`` columns and rows numbered
        ``first..last`` (values of the ``x``/``y`` attributes; the default numbers them
        ``1..n`` over all ``n`` values).  ``(0, 7)`` is CURI's release, whose bins run 0..7
        while its grammar's location constants run 1..8 (``hypotheses/curi_release.pcfg``
        declares the values 0..8 for that).

    Returns
    -------
    codes : int8 ndarray, shape (n, schema.max_objects, schema.n_attributes)
        ``-1`` in empty slots; objects fill slots ``0..k-1``.
    """
    n = _check_n(n)
    if sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r} (expected one of {', '.join(SAMPLERS)})")
    schema = CURI_SCHEMA if schema is None else schema
    location_bins = _location_bins(location_bins)
    if location_bins is not None and sampler != "clevr":
        raise ValueError(f"location_bins applies to the clevr sampler only, not {sampler!r}")
    if sampler == "clevr":
        problems = clevr_schema_problems(schema, location_bins)
        if problems:
            raise SceneError("the clevr sampler cannot sample this domain: " + "; ".join(problems)
                             + " (the uniform sampler samples any schema)")
    S, A = schema.max_objects, schema.n_attributes
    rng = np.random.default_rng(seed)
    n_objects = rng.integers(schema.sample_min_objects, schema.max_objects + 1, size=n)
    empty = np.arange(S)[None, :] >= n_objects[:, None]
    codes = np.empty((n, S, A), dtype=np.int8)

    positional = ("x", "y") if sampler == "clevr" else ()
    for a, attr in enumerate(schema.attributes):
        if attr.name in positional:
            continue
        codes[:, :, a] = rng.integers(0, attr.n_values, size=(n, S), dtype=np.int8)

    if sampler == "clevr":
        _clevr_locations(codes, n_objects, schema, rng, location_bins)
    codes[empty] = -1
    return codes


def _clevr_locations(codes, n_objects, schema, rng, location_bins=None) -> None:
    """Fill the x/y codes of ``codes`` in place (chunks of ``_CHUNK`` scenes)."""
    a_size = schema.attribute_index("size")
    a_x, a_y = schema.attribute_index("x"), schema.attribute_index("y")
    x_attr, y_attr = schema.attribute("x"), schema.attribute("y")
    if location_bins is not None:
        _binned_locations(codes, n_objects, schema, rng, location_bins)
        return
    radius_of_code = np.array([CLEVR_RADII[v] for v in schema.attribute("size").values])
    n = codes.shape[0]
    for lo in range(0, n, _CHUNK):
        hi = min(n, lo + _CHUNK)
        radii = radius_of_code[codes[lo:hi, :, a_size]]
        xy = sample_clevr_positions(radii, n_objects[lo:hi], rng)
        xyz = np.concatenate([xy, radii[:, :, None]], axis=2)
        xyz = np.nan_to_num(xyz)  # empty slots: any finite point, masked later
        px, py, _ = project_points(xyz)
        bx, by = pixels_to_bins(px, py, x_attr.n_values, y_attr.n_values)
        codes[lo:hi, :, a_x] = bx - 1
        codes[lo:hi, :, a_y] = by - 1


def _binned_locations(codes, n_objects, schema, rng, location_bins) -> None:
    """:func:`_clevr_locations` with bins numbered ``first..last`` (values, stored as their
    codes in the x/y attributes)."""
    a_size = schema.attribute_index("size")
    a_x, a_y = schema.attribute_index("x"), schema.attribute_index("y")
    first, last = location_bins
    code_of = {a: np.array([schema.attribute(a).values.index(b) for b in range(first, last + 1)], np.int8)
               for a in ("x", "y")}
    radius_of_code = np.array([CLEVR_RADII[v] for v in schema.attribute("size").values])
    for lo in range(0, codes.shape[0], _CHUNK):
        hi = min(codes.shape[0], lo + _CHUNK)
        radii = radius_of_code[codes[lo:hi, :, a_size]]
        xy = sample_clevr_positions(radii, n_objects[lo:hi], rng)
        xyz = np.nan_to_num(np.concatenate([xy, radii[:, :, None]], axis=2))
        px, py, _ = project_points(xyz)
        bx, by = pixels_to_bins(px, py, last - first + 1, last - first + 1, first=first)
        codes[lo:hi, :, a_x] = code_of["x"][bx - first]
        codes[lo:hi, :, a_y] = code_of["y"][by - first]
