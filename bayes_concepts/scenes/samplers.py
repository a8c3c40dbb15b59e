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
    ``uniform`` for such a domain; a schema with relations needs only ``size``, and
    is not binned where it lacks ``x``/``y``).  Any other attributes are sampled
    uniformly.  Locations are made like CLEVR's renderer makes them, then binned:

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
      sqrt(2) and jitters the camera; for a schema without relations none of
      that is reproduced;
    * a schema with relations (``schema.relations``, e.g. CLEVR's left/right/front/
      behind) is placed with CLEVR's two further rules, since they shape its
      relations: the margin rule (a new object is rejected when
      ``0 < dot(new - old, d) < 0.4`` for an earlier object and one of the four
      directions ``d`` of :data:`~bayes_concepts.scenes.schema.CLEVR_DIRECTIONS`, so
      every pair of objects is at least 0.4 apart along left/right and along
      front/behind, or exactly level) and its retries (50 draws per object, then the
      scene starts over from its first object).  Unlike CLEVR, a restart keeps the
      objects' sizes (CLEVR draws them again); cubes keep their full radius and the
      camera is fixed, as above.  :func:`sample_clevr_scenes` also returns the
      centres, from which :class:`~bayes_concepts.scenes.bank.SceneBank` computes the
      relations (:mod:`bayes_concepts.scenes.relations`);
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
from .schema import CLEVR_DIRECTIONS, CLEVR_RELATIONS, CURI_SCHEMA, SceneSchema

__all__ = [
    "SAMPLERS",
    "CLEVR_RADII",
    "CLEVR_PLANE_HALF_WIDTH",
    "CLEVR_MIN_DIST",
    "CLEVR_MARGIN",
    "CLEVR_TRIES_PER_OBJECT",
    "sample_scenes",
    "sample_clevr_scenes",
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
#: CLEVR's ``--margin``: along each of its four directions, two objects' centres are
#: at least this far apart (or exactly level); used for schemas with relations.
CLEVR_MARGIN = 0.4
#: CLEVR's ``--max_retries``: draws for one object before the scene starts over.
CLEVR_TRIES_PER_OBJECT = 50
#: Give up on a scene after this many single-object draws (impossible layouts).
_MAX_DRAWS_PER_SCENE = 20_000_000
_CHUNK = 1 << 16


@numba.njit(nogil=True, cache=True)
def _place_discs(rng, radii, n_objects, half, min_dist, margin, dirs, tries_per_object,
                 max_draws, out):  # pragma: no cover
    """Sequential placement of disc centres, scene by scene.

    radii (m, S) float64, n_objects (m,) int64, dirs (K, 2) float64, out (m, S, 2)
    float64 (written).  A draw for the next object is kept when it passes both rules
    against every object already placed; after ``tries_per_object`` rejected draws for
    one object the scene restarts from its first object.  Returns -1, or the index
    of a scene that could not be placed within ``max_draws`` draws.
    """
    m = radii.shape[0]
    for i in range(m):
        k = n_objects[i]
        placed = 0
        tries = 0
        draws = 0
        while placed < k:
            if draws >= max_draws:
                return i
            x = rng.uniform(-half, half)
            y = rng.uniform(-half, half)
            draws += 1
            tries += 1
            r = radii[i, placed]
            ok = True
            for j in range(placed):
                dx = x - out[i, j, 0]
                dy = y - out[i, j, 1]
                if math.sqrt(dx * dx + dy * dy) - r - radii[i, j] < min_dist:
                    ok = False
                    break
                if margin > 0.0:
                    for q in range(dirs.shape[0]):
                        along = dx * dirs[q, 0] + dy * dirs[q, 1]
                        if 0.0 < along < margin:
                            ok = False
                            break
                    if not ok:
                        break
            if ok:
                out[i, placed, 0] = x
                out[i, placed, 1] = y
                placed += 1
                tries = 0
            elif tries >= tries_per_object:
                placed = 0
                tries = 0
    return -1


def sample_clevr_positions(radii, n_objects, seed=0, *, half_width=CLEVR_PLANE_HALF_WIDTH,
                           min_dist=CLEVR_MIN_DIST, margin=0.0, tries_per_object=1):
    """Ground-plane positions of objects under CLEVR's placement rules.

    Parameters
    ----------
    radii : float array (m, S)
        Radius of the object in each slot (slots ``>= n_objects[i]`` ignored).
    n_objects : int array (m,)
        Objects per scene; they occupy slots ``0 .. n_objects[i]-1``.
    seed : int, SeedSequence or Generator
    margin : float
        CLEVR's ``--margin`` rule when ``> 0``: a new object is rejected when, for
        some earlier object and one of the four directions ``d`` of
        :data:`~bayes_concepts.scenes.schema.CLEVR_DIRECTIONS`,
        ``0 < dot(new - old, d) < margin``.  ``0`` (default): no such rule.
    tries_per_object : int
        Draws for one object before the scene restarts from its first object.  ``1``
        (default) makes the positions uniform over the valid configurations (joint
        rejection); CLEVR's generator uses 50 (:data:`CLEVR_TRIES_PER_OBJECT`).

    Returns
    -------
    xy : float64 array (m, S, 2)
        Centres on ``[-half_width, half_width]^2`` with ``dist - r_i - r_j >= min_dist``
        for every pair (and the margin rule); NaN in empty slots.
    """
    rng = np.random.default_rng(seed)
    radii = np.ascontiguousarray(radii, dtype=np.float64)
    n_objects = np.ascontiguousarray(n_objects, dtype=np.int64)
    if radii.ndim != 2 or n_objects.shape != (radii.shape[0],):
        raise ValueError(f"radii must be (m, S) and n_objects (m,), got {radii.shape} "
                         f"and {n_objects.shape}")
    if n_objects.size and (n_objects.min() < 0 or n_objects.max() > radii.shape[1]):
        raise ValueError("n_objects must be in 0..S")
    if isinstance(tries_per_object, bool) or int(tries_per_object) != tries_per_object \
            or tries_per_object < 1:
        raise ValueError(f"tries_per_object must be a positive integer, got {tries_per_object!r}")
    dirs = np.ascontiguousarray(
        [CLEVR_DIRECTIONS[r][:2] for r in CLEVR_RELATIONS], dtype=np.float64)
    out = np.full(radii.shape + (2,), np.nan)
    bad = _place_discs(rng, radii, n_objects, float(half_width), float(min_dist),
                       float(margin), dirs, int(tries_per_object), _MAX_DRAWS_PER_SCENE, out)
    if bad >= 0:
        rule = f" and margin {margin}" if margin > 0 else ""
        raise SceneError(
            f"clevr sampler: could not place {n_objects[bad]} objects with radii "
            f"{np.round(radii[bad, :n_objects[bad]], 3).tolist()} on the "
            f"[-{half_width}, {half_width}]^2 plane at minimum distance {min_dist}{rule}")
    return out


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    return int(n)


def clevr_schema_problems(schema: SceneSchema, location_bins=None) -> list:
    """What keeps the ``clevr`` sampler from sampling ``schema``'s scenes (empty list: nothing).

    It needs an attribute ``size`` whose values all have a CLEVR radius
    (:data:`CLEVR_RADII`) and attributes ``x`` and ``y`` with values ``1..n`` (with
    ``location_bins=(first, last)``: values that include ``first..last``).  A schema
    with relations may lack ``x`` and ``y``: its objects are placed (and their
    relations found) without location bins.
    """
    names = schema.names
    needed = ("size",) if schema.relations else ("size", "x", "y")
    missing = [a for a in needed if a not in names]
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
        ``y`` (a schema with relations: ``size`` only; see :func:`clevr_schema_problems`).
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
        ``-1`` in empty slots; objects fill slots ``0..k-1``.  For ``clevr`` the
        codes of :func:`sample_clevr_scenes` with the same arguments.
    """
    return _sample(n, sampler, schema, seed, location_bins)[0]


def sample_clevr_scenes(n: int, schema: SceneSchema | None = None, seed=0, *,
                        location_bins=None):
    """Sample ``n`` scenes with the ``clevr`` sampler, keeping the objects' positions.

    Same arguments and the same ``codes`` as ``sample_scenes(n, "clevr", schema, seed,
    location_bins=...)``.  A schema with relations (``schema.relations``) is placed
    with CLEVR's margin rule and retries (see the module docstring).

    Returns
    -------
    codes : int8 ndarray (n, S, A)
        As :func:`sample_scenes`.
    positions : float32 ndarray (n, S, 3)
        Objects' centres ``(x, y, z)`` in world units: ``x, y`` on the ground plane
        ``[-3, 3]^2``, ``z`` = the object's radius; NaN in empty slots.  Rounded to
        float32 (like the ``3d_coords`` of CLEVR's files).
    """
    codes, xyz = _sample(n, "clevr", schema, seed, location_bins)
    return codes, xyz.astype(np.float32)


def _sample(n, sampler, schema, seed, location_bins):
    """``(codes, xyz)`` of :func:`sample_scenes` (``xyz``: float64 (n, S, 3) centres for
    ``clevr``, NaN in empty slots; ``None`` for ``uniform``)."""
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

    xyz = None
    if sampler == "clevr":
        xyz = _clevr_locations(codes, n_objects, schema, rng, location_bins)
    codes[empty] = -1
    return codes, xyz


def _placement(schema: SceneSchema) -> dict:
    """Keyword arguments of :func:`sample_clevr_positions` for ``schema``'s scenes."""
    if schema.relations:
        return dict(margin=CLEVR_MARGIN, tries_per_object=CLEVR_TRIES_PER_OBJECT)
    return {}


def _clevr_locations(codes, n_objects, schema, rng, location_bins=None) -> np.ndarray:
    """Fill the x/y codes of ``codes`` in place (chunks of ``_CHUNK`` scenes); return the
    centres, float64 ``(n, S, 3)`` (``z`` = radius), NaN in empty slots.

    Bins are numbered ``first..last`` with ``location_bins``, else ``1..n`` over the
    ``n`` values of ``x`` (columns) and of ``y`` (rows); a bin is stored as the code of
    that value in the attribute.  A location attribute the schema lacks (only a schema
    with relations may) is skipped.
    """
    a_size = schema.attribute_index("size")
    located = [a for a in ("x", "y") if a in schema.names]
    if location_bins is None:
        first = 1
        n_bins = {a: schema.attribute(a).n_values if a in located else 1 for a in ("x", "y")}
    else:
        first, last = location_bins
        n_bins = {"x": last - first + 1, "y": last - first + 1}
    code_of = {a: np.array([schema.attribute(a).values.index(b)
                            for b in range(first, first + n_bins[a])], np.int8)
               for a in located}
    radius_of_code = np.array([CLEVR_RADII[v] for v in schema.attribute("size").values])
    placement = _placement(schema)
    n = codes.shape[0]
    centres = np.full((n, codes.shape[1], 3), np.nan)
    for lo in range(0, n, _CHUNK):
        hi = min(n, lo + _CHUNK)
        radii = radius_of_code[codes[lo:hi, :, a_size]]
        xy = sample_clevr_positions(radii, n_objects[lo:hi], rng, **placement)
        xyz = np.concatenate([xy, radii[:, :, None]], axis=2)
        centres[lo:hi] = np.where(np.isnan(xy[:, :, :1]), np.nan, xyz)
        if not located:
            continue
        px, py, _ = project_points(np.nan_to_num(xyz))  # empty slots: masked later
        bins = dict(zip(("x", "y"), pixels_to_bins(px, py, n_bins["x"], n_bins["y"], first=first)))
        for a in located:
            codes[lo:hi, :, schema.attribute_index(a)] = code_of[a][bins[a] - first]
    return centres
