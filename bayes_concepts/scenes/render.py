"""A deterministic procedural renderer of scenes as CLEVR-like pictures.

No Blender, no GPU: every pixel is ray traced on the CPU by a numba kernel that runs
over the scenes of a batch in parallel (``numba.prange``); a plain numpy twin,
:func:`render_scenes_reference`, traces every ray against every object and specifies
the kernel (the tests compare them on random scenes).

The picture
-----------
* **Camera.** The fixed pinhole camera of :mod:`bayes_concepts.scenes.camera` (the one
  the ``clevr`` sampler bins with): Blender's default camera at about (7.36, -6.93,
  4.96) looking at the origin, 35 mm lens on a 32 mm sensor fitted to the image width.
  At a resolution ``height × width`` the focal length is ``35 / 32 · width`` pixels and
  the principal point is the image centre, so the default 80 × 120 and CURI's 160 × 240
  are CLEVR's 320 × 480 frame scaled down; another aspect ratio crops or widens it.
* **Ground.** An infinite grey plane ``z = 0`` lit by a key light (with hard shadows
  of the objects on the ground), a fill light and ambient light, brightest around the
  world origin.  Rays that miss the plane (only with unusually tall images) see a
  uniform grey sky.
* **Objects.** CLEVR's geometry: a sphere of radius ``r``, a cylinder of radius ``r``
  and height ``2r``, a cube of half-side ``r / √2`` (turned by :data:`CUBE_TURN_DEG`
  about the vertical), all standing on the ground, with ``r`` = 0.7 (``large``) or 0.35
  (``small``).  An object is placed where its centre projects to the *centre* of its
  location bin in CLEVR's 480 × 320 frame (bin ``b`` of ``n`` spans pixels
  ``[(b-1)·480/n, b·480/n)`` in x, likewise in y from the top), which is the inverse of
  the binning rule of the ``clevr`` sampler.  So y bin 1 is far away (small, high in
  the picture) and y bin 8 close to the camera.  Scenes given with ``positions`` (the
  objects' 3-D centres in CLEVR's world units, as the ``clevr`` sampler and CLEVR's
  ``3d_coords`` give them; a schema with relations has no location bins) stand each
  object on the ground at its centre's x, y (CLEVR's ground is [-3, 3]², all of it in
  the picture), seen through the same camera as CLEVR's renderer saw it: the objects
  nearer the camera (bottom of the picture) are larger.  Visibility is exact per ray
  (the nearest surface wins, which is painter's order by depth made exact, and is
  right even when two objects share a bin and interpenetrate).
* **Materials.** ``rubber``: diffuse (Lambert) with a faint broad sheen; ``metal``: a
  darker diffuse part, a tinted reflection of a sky/ground environment and a sharp
  white specular highlight.  Objects do not shadow or reflect each other.
* **Colours.** CLEVR's eight RGB values (``properties.json`` of the CLEVR renderer).
* **Anti-aliasing.** Each pixel is the mean of ``supersample × supersample`` rays on a
  regular grid inside the pixel; the result is rounded to ``uint8``.

``positions``: float (n_scenes, n_slots, 3) (one scene: (n_slots, 3)), the same slots as
the codes; values in empty slots are ignored, an object's must be finite.  When given
they place the objects and the ``x``/``y`` attributes, if any, are not used; when not
given the pixels are exactly what they were before positions could be given.

Attributes are looked up in the schema *by name*; what a schema lacks or names
differently is handled as follows (this is the documented contract):

============ ============================ =================================================
attribute    values understood            if the schema lacks it / has another value
============ ============================ =================================================
``x``/``y``  any number of bins ``n``     **required** unless ``positions`` are given:
                                          :class:`SceneError` if absent
``shape``    cube, sphere, cylinder       absent: every object is a ``sphere``;
                                          another value: :class:`SceneError`
``color``    CLEVR's 8 colour names       absent: every object is ``gray``; another value:
                                          a hue from an evenly spaced palette (by code)
``material`` rubber, metal                absent: every object is ``rubber``; another
                                          value: :class:`SceneError`
``size``     small, large                 absent: every object is ``large``; another value
                                          of an ordered size: radii evenly spaced from
                                          0.35 to 0.7 in code order; else
                                          :class:`SceneError`
============ ============================ =================================================

Determinism: a pixel depends only on its scene's codes (and positions) and the resolution settings
(not on the batch, the thread count or the order of the scenes), in float64 without
``fastmath``.
"""
from __future__ import annotations

import colorsys
import math
from functools import lru_cache
from pathlib import Path

import numba
import numpy as np

from ..errors import BayesConceptsError, SceneError
from .camera import (CAMERA_LOCATION, FOCAL_LENGTH_MM, IMAGE_HEIGHT, IMAGE_WIDTH,
                     SENSOR_WIDTH_MM, camera_axes)
from .codes import check_codes
from .schema import CURI_SCHEMA, SceneSchema

__all__ = [
    "RenderError",
    "CLEVR_COLORS",
    "CUBE_TURN_DEG",
    "DEFAULT_HEIGHT",
    "DEFAULT_WIDTH",
    "render_scenes",
    "render_scene",
    "object_masks",
    "render_scenes_reference",
    "object_geometry",
    "render_scene_png",
]



class RenderError(BayesConceptsError):
    """Bad settings or arrays given to a renderer (image or sound)."""


DEFAULT_HEIGHT = 80
DEFAULT_WIDTH = 120
#: RGB of CLEVR's colours (0..255), from the CLEVR renderer's ``properties.json``.
CLEVR_COLORS = {
    "gray": (87, 87, 87), "red": (173, 35, 35), "blue": (42, 75, 215),
    "green": (29, 105, 20), "brown": (129, 74, 25), "purple": (129, 38, 192),
    "cyan": (41, 208, 208), "yellow": (255, 238, 51),
}
#: Radius of an object by size (CLEVR's ``size_mapping``).
SIZE_RADII = {"small": 0.35, "large": 0.7}
SHAPES = ("cube", "sphere", "cylinder")
SHAPE_CUBE, SHAPE_SPHERE, SHAPE_CYLINDER = 0, 1, 2
#: Every cube is turned by this angle about the vertical axis (CLEVR draws a random
#: angle per object; a scene here has no rotation attribute, so one fixed angle).
CUBE_TURN_DEG = 25.0

# --- lighting (unit vectors point *towards* the light) ---------------------------
_KEY = np.array([-0.45, -0.75, 1.0])
_KEY = _KEY / np.linalg.norm(_KEY)
_FILL = np.array([0.9, -0.2, 0.55])
_FILL = _FILL / np.linalg.norm(_FILL)
_KEY_I, _FILL_I, _AMB_I = 0.62, 0.22, 0.30
_OBJ_KEY, _OBJ_FILL, _OBJ_AMB = 0.70, 0.28, 0.42
_GROUND_ALBEDO = 0.62
_GROUND_SPOT = 9.0          # radius (world units) of the bright disc around the origin
_GROUND_DARK = 0.55          # how much darker the ground is far away than at the origin
_SKY = 0.80
# what a metal object reflects: sky above, ground below, and two broad bright lobes
# around the lights (they draw the bright streaks on metal cylinders and cubes)
_ENV_SKY, _ENV_GROUND = 0.85, 0.16
_ENV_KEY_LOBE, _ENV_FILL_LOBE, _ENV_LOBE_POWER = 0.9, 0.7, 8
_LOBE_A = np.array([-0.45, -0.75, -0.25])
_LOBE_A = _LOBE_A / np.linalg.norm(_LOBE_A)
_LOBE_B = np.array([0.9, -0.2, -0.25])
_LOBE_B = _LOBE_B / np.linalg.norm(_LOBE_B)
_METAL_DIFFUSE, _METAL_REFLECT, _METAL_WHITE, _METAL_SPEC, _METAL_SHINE = 0.15, 1.0, 0.12, 1.10, 90
_RUBBER_SPEC, _RUBBER_SHINE = 0.06, 6
_EPS = 1e-9

# per-object parameter columns (float64 array (n, S, _NP))
_P_VALID, _P_SHAPE, _P_METAL, _P_CX, _P_CY, _P_R, _P_COS, _P_SIN = range(8)
_P_RGB = 8
_NP = 11
_NR = 8  # rect columns: object cols/rows, shadow cols/rows (inclusive bounds)


# ================================================================================
# scene -> per-object geometry (numpy, shared by the kernel and the twin)
# ================================================================================

def _check_resolution(height, width, supersample):
    for name, v, lo in (("height", height, 1), ("width", width, 1), ("supersample", supersample, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise RenderError(f"render: {name} must be an integer >= {lo}, got {v!r}")
    if supersample > 8:
        raise RenderError(f"render: supersample must be at most 8, got {supersample}")
    return int(height), int(width), int(supersample)


def _palette(values) -> np.ndarray:
    """RGB in [0, 1] per colour value: CLEVR's for CLEVR names, else evenly spaced hues."""
    out = np.empty((len(values), 3))
    for i, v in enumerate(values):
        if v in CLEVR_COLORS:
            out[i] = np.array(CLEVR_COLORS[v]) / 255.0
        else:
            out[i] = colorsys.hsv_to_rgb(i / max(len(values), 1), 0.75, 0.8)
    return out


@lru_cache(maxsize=16)
def _attribute_tables(schema: SceneSchema, placed: bool = False):
    """Per attribute of ``schema``: (column index or -1, value table) for the renderer.
    ``placed``: the objects' positions are given, so the schema needs no ``x``/``y``."""
    names = schema.names
    for req in ("x", "y"):
        if req not in names and not placed:
            raise SceneError(f"render: the schema has no {req!r} attribute (needed to place objects): give "
                             "the objects' positions")

    def col(name):
        return schema.attribute_index(name) if name in names else -1

    shape_of = np.array([SHAPE_SPHERE])
    if "shape" in names:
        vals = schema.attribute("shape").values
        bad = [v for v in vals if v not in SHAPES]
        if bad:
            raise SceneError(f"render: shape {bad[0]!r} cannot be drawn (expected one of {', '.join(SHAPES)})")
        shape_of = np.array([SHAPES.index(v) for v in vals])
    metal_of = np.array([0])
    if "material" in names:
        vals = schema.attribute("material").values
        bad = [v for v in vals if v not in ("rubber", "metal")]
        if bad:
            raise SceneError(f"render: material {bad[0]!r} cannot be drawn (expected rubber or metal)")
        metal_of = np.array([v == "metal" for v in vals], dtype=np.int64)
    radius_of = np.array([SIZE_RADII["large"]])
    if "size" in names:
        attr = schema.attribute("size")
        if all(v in SIZE_RADII for v in attr.values):
            radius_of = np.array([SIZE_RADII[v] for v in attr.values])
        elif attr.ordered:
            radius_of = np.linspace(SIZE_RADII["small"], SIZE_RADII["large"], attr.n_values)
        else:
            bad = [v for v in attr.values if v not in SIZE_RADII][0]
            raise SceneError(f"render: size {bad!r} has no radius (expected small or large, "
                             "or an ordered size attribute)")
    rgb_of = _palette(schema.attribute("color").values) if "color" in names else _palette(("gray",))
    return {
        "shape": (col("shape"), shape_of), "material": (col("material"), metal_of),
        "size": (col("size"), radius_of), "color": (col("color"), rgb_of),
        **{k: (col(k), schema.attribute(k).n_values) for k in ("x", "y") if k in names},
    }


def _camera():
    right, up, forward = camera_axes(CAMERA_LOCATION)
    return np.asarray(CAMERA_LOCATION, dtype=np.float64), right, up, forward


def _focal(width) -> float:
    return FOCAL_LENGTH_MM / SENSOR_WIDTH_MM * width


def _centre_height(shape, r):
    """Height of an object's centre above the ground (half its height)."""
    return np.where(shape == SHAPE_CUBE, r / math.sqrt(2.0), r)


def _checked_positions(positions, codes, valid) -> np.ndarray:
    """``positions`` as float64 (n, S, 3) for the padded ``codes`` (n, S, A): the slots given
    (at most S), NaN-free where ``valid``."""
    pos = np.asarray(positions, dtype=np.float64)
    n, S, _ = codes.shape
    if pos.ndim != 3 or pos.shape[0] != n or pos.shape[1] > S or pos.shape[2] != 3:
        raise SceneError(f"render: positions must have shape ({n}, n_slots <= {S}, 3), got {pos.shape}")
    out = np.zeros((n, S, 3))
    out[:, :pos.shape[1]] = pos
    bad = valid & ~np.isfinite(out).all(axis=2)
    if pos.shape[1] < S:
        bad[:, pos.shape[1]:] = valid[:, pos.shape[1]:]
    if bad.any():
        i, slot = np.argwhere(bad)[0]
        raise SceneError(f"render: positions[{i}, {slot}]: the object's position is missing or not finite")
    return out


def object_geometry(codes, schema: SceneSchema = CURI_SCHEMA, positions=None):
    """World geometry of the objects of a batch of scenes.

    Parameters
    ----------
    codes : int array (n_scenes, n_slots, schema.n_attributes)
        Scene codes (see :mod:`bayes_concepts.scenes.codes`), ``-1`` in empty slots.
    schema : SceneSchema
    positions : float array (n_scenes, n_slots, 3), optional
        The objects' centres in world units: each object stands on the ground at its
        centre's x, y (instead of where its ``x``/``y`` bins place it).

    Returns
    -------
    params : float64 ndarray (n_scenes, schema.max_objects, 11)
        Per object: valid (1/0), shape id (0 cube, 1 sphere, 2 cylinder), metal (1/0),
        centre x and y on the ground (world units), radius ``r``, cos and sin of the
        turn about the vertical, RGB in [0, 1].  Empty slots have valid = 0.
    """
    codes, _ = check_codes(codes, schema)
    tab = _attribute_tables(schema, positions is not None)
    n, S, _ = codes.shape
    valid = codes[:, :, 0] >= 0

    def lookup(key):
        c, table = tab[key]
        idx = np.zeros((n, S), dtype=np.int64) if c < 0 else np.maximum(codes[:, :, c], 0)
        return table[idx]

    shape = lookup("shape")
    metal = lookup("material")
    r = lookup("size")
    rgb = lookup("color")
    if positions is not None:
        centre = _checked_positions(positions, codes, valid)
    else:
        (cx_col, nx), (cy_col, ny) = tab["x"], tab["y"]
        px = (np.maximum(codes[:, :, cx_col], 0) + 0.5) * (IMAGE_WIDTH / nx)
        py = (np.maximum(codes[:, :, cy_col], 0) + 0.5) * (IMAGE_HEIGHT / ny)
        origin, right, up, forward = _camera()
        f = _focal(IMAGE_WIDTH)
        d = (forward[None, None, :] + ((px - IMAGE_WIDTH / 2) / f)[..., None] * right
             - ((py - IMAGE_HEIGHT / 2) / f)[..., None] * up)
        h = _centre_height(shape, r)
        t = (h - origin[2]) / d[..., 2]     # d_z < 0 everywhere in CLEVR's frame
        centre = origin + t[..., None] * d

    out = np.zeros((n, S, _NP))
    out[..., _P_VALID] = valid
    out[..., _P_SHAPE] = shape
    out[..., _P_METAL] = metal
    out[..., _P_CX] = centre[..., 0]
    out[..., _P_CY] = centre[..., 1]
    out[..., _P_R] = r
    turn = math.radians(CUBE_TURN_DEG)
    out[..., _P_COS] = math.cos(turn)
    out[..., _P_SIN] = math.sin(turn)
    out[..., _P_RGB:_P_RGB + 3] = rgb
    out[~valid] = 0.0
    return out


def _screen_rects(params, height, width):
    """Conservative pixel rectangles of each object and of its shadow on the ground.

    Returns int64 (n, S, 8): object col0, col1, row0, row1, shadow col0, col1, row0, row1
    (inclusive; empty when col0 > col1).  Computed from the 8 corners of the object's
    bounding box (a vertical prism of half-width r and height 2·centre height) and
    their shadows along the key light onto ``z = 0``.
    """
    n, S, _ = params.shape
    origin, right, up, forward = _camera()
    f = _focal(width)
    r = params[..., _P_R]
    top = 2.0 * _centre_height(params[..., _P_SHAPE], r)
    sx = np.array([-1, 1, -1, 1, -1, 1, -1, 1], dtype=np.float64)
    sy = np.array([-1, -1, 1, 1, -1, -1, 1, 1], dtype=np.float64)
    sz = np.array([0, 0, 0, 0, 1, 1, 1, 1], dtype=np.float64)
    corners = np.stack([params[..., _P_CX, None] + 1.02 * r[..., None] * sx,
                        params[..., _P_CY, None] + 1.02 * r[..., None] * sy,
                        1.02 * top[..., None] * sz], axis=-1)             # (n, S, 8, 3)
    shadows = corners - (corners[..., 2:3] / _KEY[2]) * _KEY              # on z = 0
    rects = np.empty((n, S, _NR), dtype=np.int64)
    for k, pts in enumerate((corners, shadows)):
        rel = pts - origin
        depth = rel @ forward
        with np.errstate(divide="ignore", invalid="ignore"):
            x = width / 2.0 + f * (rel @ right) / depth
            y = height / 2.0 - f * (rel @ up) / depth
        behind = (depth <= 1e-6).any(axis=-1)
        c0 = np.floor(x.min(-1)) - 1
        c1 = np.floor(x.max(-1)) + 1
        r0 = np.floor(y.min(-1)) - 1
        r1 = np.floor(y.max(-1)) + 1
        c0 = np.where(behind, 0, np.clip(c0, 0, width))
        c1 = np.where(behind, width - 1, np.clip(c1, -1, width - 1))
        r0 = np.where(behind, 0, np.clip(r0, 0, height))
        r1 = np.where(behind, height - 1, np.clip(r1, -1, height - 1))
        rects[..., 4 * k + 0] = c0
        rects[..., 4 * k + 1] = c1
        rects[..., 4 * k + 2] = r0
        rects[..., 4 * k + 3] = r1
    invalid = params[..., _P_VALID] == 0
    rects[invalid] = np.array([0, -1, 0, -1, 0, -1, 0, -1])
    return rects


# ================================================================================
# the numba kernel: one ray at a time
# ================================================================================

@numba.njit(inline="always", cache=True)
def _hit_sphere(ox, oy, oz, dx, dy, dz, cx, cy, r):
    """Nearest t > 1e-9 where the ray meets a sphere of radius r centred at (cx, cy, r);
    returns (t, nx, ny, nz) with t = inf on a miss."""
    px, py, pz = ox - cx, oy - cy, oz - r
    b = px * dx + py * dy + pz * dz
    c = px * px + py * py + pz * pz - r * r
    disc = b * b - c
    if disc < 0.0:
        return np.inf, 0.0, 0.0, 0.0
    s = math.sqrt(disc)
    t = -b - s
    if t <= _EPS:
        t = -b + s
        if t <= _EPS:
            return np.inf, 0.0, 0.0, 0.0
    return t, (px + t * dx) / r, (py + t * dy) / r, (pz + t * dz) / r


@numba.njit(inline="always", cache=True)
def _hit_cylinder(ox, oy, oz, dx, dy, dz, cx, cy, r):
    """Nearest t of a ray with a closed vertical cylinder (radius r, z in [0, 2r])."""
    px, py = ox - cx, oy - cy
    hgt = 2.0 * r
    best, nx, ny, nz = np.inf, 0.0, 0.0, 0.0
    a = dx * dx + dy * dy
    if a > 0.0:
        b = px * dx + py * dy
        c = px * px + py * py - r * r
        disc = b * b - a * c
        if disc >= 0.0:
            s = math.sqrt(disc)
            for t in ((-b - s) / a, (-b + s) / a):
                if t > _EPS and t < best:
                    z = oz + t * dz
                    if z >= 0.0 and z <= hgt:
                        best = t
                        nx, ny, nz = (px + t * dx) / r, (py + t * dy) / r, 0.0
    if dz != 0.0:
        for zc, sgn in ((hgt, 1.0), (0.0, -1.0)):
            t = (zc - oz) / dz
            if t > _EPS and t < best:
                qx, qy = px + t * dx, py + t * dy
                if qx * qx + qy * qy <= r * r:
                    best = t
                    nx, ny, nz = 0.0, 0.0, sgn
    return best, nx, ny, nz


@numba.njit(inline="always", cache=True)
def _hit_cube(ox, oy, oz, dx, dy, dz, cx, cy, r, cs, sn):
    """Nearest t of a ray with a cube of half-side r/√2 standing on z = 0, centred at
    (cx, cy), turned by the angle with cosine cs and sine sn about the vertical."""
    a = r / math.sqrt(2.0)
    px, py = ox - cx, oy - cy
    # into the cube's frame (rotate by -angle)
    lx, ly, lz = cs * px + sn * py, -sn * px + cs * py, oz - a
    ex, ey, ez = cs * dx + sn * dy, -sn * dx + cs * dy, dz
    tn, tf = -np.inf, np.inf
    axis, sgn = -1, 0.0
    for k in range(3):
        if k == 0:
            o, e = lx, ex
        elif k == 1:
            o, e = ly, ey
        else:
            o, e = lz, ez
        if e == 0.0:
            if o < -a or o > a:
                return np.inf, 0.0, 0.0, 0.0
            continue
        t1 = (-a - o) / e
        t2 = (a - o) / e
        s = -1.0
        if t1 > t2:
            t1, t2 = t2, t1
            s = 1.0
        if t1 > tn:
            tn, axis, sgn = t1, k, s
        if t2 < tf:
            tf = t2
    if tn > tf or tf <= _EPS:
        return np.inf, 0.0, 0.0, 0.0
    if tn <= _EPS:   # ray starts inside: leave through the far face (normal unused)
        return tf, 0.0, 0.0, 1.0
    # local normal -> world (rotate by +angle)
    if axis == 0:
        return tn, cs * sgn, sn * sgn, 0.0
    if axis == 1:
        return tn, -sn * sgn, cs * sgn, 0.0
    return tn, 0.0, 0.0, sgn


@numba.njit(inline="always", cache=True)
def _hit(p, ox, oy, oz, dx, dy, dz):
    shape = p[_P_SHAPE]
    if shape == SHAPE_SPHERE:
        return _hit_sphere(ox, oy, oz, dx, dy, dz, p[_P_CX], p[_P_CY], p[_P_R])
    if shape == SHAPE_CYLINDER:
        return _hit_cylinder(ox, oy, oz, dx, dy, dz, p[_P_CX], p[_P_CY], p[_P_R])
    return _hit_cube(ox, oy, oz, dx, dy, dz, p[_P_CX], p[_P_CY], p[_P_R], p[_P_COS], p[_P_SIN])


@numba.njit(inline="always", cache=True)
def _nearest(params, objs, n_obj, ox, oy, oz, dx, dy, dz):
    """Nearest of the objects params[objs[:n_obj]] along a ray: (slot or -1, normal)."""
    best, hit = np.inf, -1
    bnx, bny, bnz = 0.0, 0.0, 0.0
    for q in range(n_obj):
        s = objs[q]
        t, nx, ny, nz = _hit(params[s], ox, oy, oz, dx, dy, dz)
        if t < best:
            best, hit, bnx, bny, bnz = t, s, nx, ny, nz
    return hit, bnx, bny, bnz


@numba.njit(inline="always", cache=True)
def _shadowed(params, shads, n_sh, gx, gy):
    """Whether one of the objects params[shads[:n_sh]] blocks the key light at ground (gx, gy)."""
    for q in range(n_sh):
        t, _, _, _ = _hit(params[shads[q]], gx, gy, 0.0, _KEY[0], _KEY[1], _KEY[2])
        if t < np.inf:
            return True
    return False


@numba.njit(inline="always", cache=True)
def _shade(p, nx, ny, nz, dx, dy, dz, rgb):
    """Colour (written to rgb[0:3], in [0, 1] before clipping) of object p at a surface
    point with unit normal n seen along the unit ray direction d."""
    kd = _KEY[0] * nx + _KEY[1] * ny + _KEY[2] * nz
    fd = _FILL[0] * nx + _FILL[1] * ny + _FILL[2] * nz
    diffuse = _OBJ_AMB + _OBJ_KEY * max(kd, 0.0) + _OBJ_FILL * max(fd, 0.0)
    # Blinn half vector between the key light and the viewer (-d)
    hx, hy, hz = _KEY[0] - dx, _KEY[1] - dy, _KEY[2] - dz
    hn = math.sqrt(hx * hx + hy * hy + hz * hz)
    nh = max((nx * hx + ny * hy + nz * hz) / hn, 0.0)
    if p[_P_METAL] != 0.0:
        dn = dx * nx + dy * ny + dz * nz
        rx, ry, rz = dx - 2.0 * dn * nx, dy - 2.0 * dn * ny, dz - 2.0 * dn * nz   # reflected ray
        w = min(max((rz + 0.1) / 0.5, 0.0), 1.0)
        w = w * w * (3.0 - 2.0 * w)
        rk = max(rx * _LOBE_A[0] + ry * _LOBE_A[1] + rz * _LOBE_A[2], 0.0)
        rf = max(rx * _LOBE_B[0] + ry * _LOBE_B[1] + rz * _LOBE_B[2], 0.0)
        env = (_ENV_GROUND + (_ENV_SKY - _ENV_GROUND) * w
               + _ENV_KEY_LOBE * rk ** _ENV_LOBE_POWER + _ENV_FILL_LOBE * rf ** _ENV_LOBE_POWER)
        spec = _METAL_SPEC * nh ** _METAL_SHINE
        for c in range(3):
            base = p[_P_RGB + c]
            rgb[c] = base * (_METAL_DIFFUSE * diffuse + _METAL_REFLECT * env) + _METAL_WHITE * env + spec
    else:
        spec = _RUBBER_SPEC * nh ** _RUBBER_SHINE
        for c in range(3):
            rgb[c] = p[_P_RGB + c] * diffuse + spec


@numba.njit(inline="always", cache=True)
def _to_u8(v):
    v = min(max(v, 0.0), 1.0)
    return np.uint8(math.floor(v * 255.0 + 0.5))


def _ray_table(height, width, ss):
    """Unit directions of all rays: float64 (height*ss, width*ss, 3); ray (y*ss+a, x*ss+b)
    passes through the point (x + (b+0.5)/ss, y + (a+0.5)/ss) of the image plane."""
    origin, right, up, forward = _camera()
    f = _focal(width)
    v = ((np.arange(height)[:, None] + (np.arange(ss)[None, :] + 0.5) / ss).ravel() - height / 2.0) / f
    u = ((np.arange(width)[:, None] + (np.arange(ss)[None, :] + 0.5) / ss).ravel() - width / 2.0) / f
    d = forward + u[None, :, None] * right - v[:, None, None] * up
    return d / np.sqrt((d * d).sum(-1))[..., None]


def _ground_table(rays):
    """Where each ray meets the ground and its grey level there: float64 (..., 4) with
    ground x, y, grey level when lit, grey level in shadow (the sky level for rays that
    miss the ground, whose x, y are 0)."""
    origin = np.asarray(CAMERA_LOCATION, dtype=np.float64)
    dz = rays[..., 2]
    down = dz < 0
    t = np.where(down, -origin[2] / np.where(down, dz, -1.0), 0.0)
    gx = np.where(down, origin[0] + t * rays[..., 0], 0.0)
    gy = np.where(down, origin[1] + t * rays[..., 1], 0.0)
    d2 = (gx * gx + gy * gy) / (_GROUND_SPOT * _GROUND_SPOT)
    spot = _GROUND_ALBEDO * (1.0 - _GROUND_DARK * d2 / (1.0 + d2))
    lit = np.where(down, spot * (_AMB_I + _FILL_I * _FILL[2] + _KEY_I * _KEY[2]), _SKY)
    dark = np.where(down, spot * (_AMB_I + _FILL_I * _FILL[2]), _SKY)
    return np.stack([gx, gy, lit, dark], axis=-1)


@numba.njit(cache=True)
def _pixel_means(values, ss):
    """Mean over each pixel's ss×ss rays, in the kernel's summation order, as uint8."""
    H, W = values.shape[0] // ss, values.shape[1] // ss
    out = np.empty((H, W), dtype=np.uint8)
    inv = 1.0 / (ss * ss)
    for y in range(H):
        for x in range(W):
            acc = 0.0
            for a in range(ss):
                for b in range(ss):
                    acc += values[y * ss + a, x * ss + b]
            out[y, x] = _to_u8(acc * inv)
    return out


@numba.njit(cache=True)
def _render_one(params, rects, background, rays, ground, ss, ox, oy, oz, img, masks, want_masks):
    """Render one scene into img (H, W, 3) uint8 (and masks (S, H, W) if want_masks).

    params (S, 11) and rects (S, 8) of the scene.  Pixels outside every object and
    shadow rectangle keep the background; inside, each of the ss×ss rays is traced
    against the objects whose rectangles contain the pixel.
    """
    S = params.shape[0]
    H, W = background.shape
    inv = 1.0 / (ss * ss)
    for y in range(H):
        for x in range(W):
            g = background[y, x]
            img[y, x, 0] = g
            img[y, x, 1] = g
            img[y, x, 2] = g
    c0, c1, r0, r1 = W, -1, H, -1
    for s in range(S):
        for k in (0, 4):
            if rects[s, k] <= rects[s, k + 1] and rects[s, k + 2] <= rects[s, k + 3]:
                c0 = min(c0, rects[s, k])
                c1 = max(c1, rects[s, k + 1])
                r0 = min(r0, rects[s, k + 2])
                r1 = max(r1, rects[s, k + 3])
    objs = np.empty(S, dtype=np.int64)
    shads = np.empty(S, dtype=np.int64)
    rgb = np.empty(3)
    acc = np.empty(3)
    for y in range(r0, r1 + 1):
        for x in range(c0, c1 + 1):
            n_obj = 0
            n_sh = 0
            for s in range(S):
                if rects[s, 0] <= x <= rects[s, 1] and rects[s, 2] <= y <= rects[s, 3]:
                    objs[n_obj] = s
                    n_obj += 1
                if rects[s, 4] <= x <= rects[s, 5] and rects[s, 6] <= y <= rects[s, 7]:
                    shads[n_sh] = s
                    n_sh += 1
            if n_obj == 0 and n_sh == 0:
                continue
            acc[:] = 0.0
            for a in range(ss):
                ry = y * ss + a
                for b in range(ss):
                    rx = x * ss + b
                    dx, dy, dz = rays[ry, rx, 0], rays[ry, rx, 1], rays[ry, rx, 2]
                    hit, bnx, bny, bnz = _nearest(params, objs, n_obj, ox, oy, oz, dx, dy, dz)
                    if hit >= 0:
                        _shade(params[hit], bnx, bny, bnz, dx, dy, dz, rgb)
                        if want_masks:
                            masks[hit, y, x] = True
                        for c in range(3):
                            acc[c] += rgb[c]
                    else:
                        g = ground[ry, rx, 2]
                        if dz < 0.0 and _shadowed(params, shads, n_sh, ground[ry, rx, 0], ground[ry, rx, 1]):
                            g = ground[ry, rx, 3]
                        for c in range(3):
                            acc[c] += g
            for c in range(3):
                img[y, x, c] = _to_u8(acc[c] * inv)


@numba.njit(parallel=True, cache=True)
def _render_kernel(params, rects, background, rays, ground, ss, origin, out, masks,
                   want_masks):  # pragma: no cover - compiled
    """Render scenes params (n, S, 11), rects (n, S, 8) into out (n, H, W, 3) uint8, and
    their footprints into masks (n, S, H, W) bool if want_masks (else masks is a dummy)."""
    for i in numba.prange(params.shape[0]):
        m = np.int64(i) if want_masks else np.int64(0)
        _render_one(params[i], rects[i], background, rays, ground, ss, origin[0], origin[1], origin[2],
                    out[i], masks[m], want_masks)


@lru_cache(maxsize=8)
def _tables(height, width, ss):
    """(background uint8 (H, W), rays (H*ss, W*ss, 3), ground (H*ss, W*ss, 4)), read-only."""
    rays = _ray_table(height, width, ss)
    ground = _ground_table(rays)
    background = _pixel_means(np.ascontiguousarray(ground[..., 2]), ss)
    for a in (rays, ground, background):
        a.setflags(write=False)
    return background, rays, ground


def _prepare(codes, schema, height, width, supersample, positions=None):
    height, width, supersample = _check_resolution(height, width, supersample)
    arr = np.asarray(codes)
    if arr.ndim != 3:
        raise SceneError(f"render: codes must have shape (n_scenes, n_slots, n_attributes), got {arr.shape}")
    params = object_geometry(arr, schema, positions)
    rects = _screen_rects(params, height, width)
    return params, rects, height, width, supersample


def _run(codes, schema, height, width, supersample, out, want_masks, positions=None):
    params, rects, height, width, ss = _prepare(codes, schema, height, width, supersample, positions)
    n, S, _ = params.shape
    if out is None:
        out = np.empty((n, height, width, 3), dtype=np.uint8)
    elif (not isinstance(out, np.ndarray) or out.dtype != np.uint8 or out.shape != (n, height, width, 3)
          or not out.flags.c_contiguous):
        raise RenderError(f"render: out must be a C-contiguous uint8 array of shape {(n, height, width, 3)}")
    masks = np.zeros((n, S, height, width) if want_masks else (1, 1, 1, 1), dtype=np.bool_)
    background, rays, ground = _tables(height, width, ss)
    _render_kernel(params, rects, background, rays, ground, ss, _camera()[0], out, masks, want_masks)
    return out, masks


def render_scenes(codes, schema: SceneSchema = CURI_SCHEMA, *, positions=None, height: int = DEFAULT_HEIGHT,
                  width: int = DEFAULT_WIDTH, supersample: int = 2, out=None) -> np.ndarray:
    """Render a batch of scenes as CLEVR-like pictures (module docstring: the picture).

    Parameters
    ----------
    codes : int array (n_scenes, n_slots, schema.n_attributes)
        Scene codes, ``-1`` in empty slots (as from
        :func:`~bayes_concepts.scenes.sample_scenes`); validated with
        :func:`~bayes_concepts.scenes.check_codes`.
    schema : SceneSchema
        Attributes are found by name; see the module docstring for what is required.
    positions : float array (n_scenes, n_slots, 3), optional
        The objects' 3-D centres (CLEVR's world units): they place the objects, which a
        schema without ``x``/``y`` attributes (one with relations) needs.
    height, width : int
        Image size in pixels (default 80 × 120; CURI used 160 × 240).
    supersample : int
        Rays per pixel along each axis (1..8; 2 = 4 rays per pixel).
    out : uint8 ndarray (n_scenes, height, width, 3), optional
        Written in place and returned (to render a large bank chunk by chunk).

    Returns
    -------
    images : uint8 ndarray (n_scenes, height, width, 3)
        RGB, row 0 at the top.  The same scene always gives the same pixels.
    """
    return _run(codes, schema, height, width, supersample, out, False, positions)[0]


def _one_scene(scene_codes, positions):
    """One scene's codes (and positions) as a batch of one."""
    arr = np.asarray(scene_codes)
    if arr.ndim != 2:
        raise SceneError(f"render: codes of one scene must have shape (n_slots, n_attributes), got {arr.shape}")
    if positions is None:
        return arr[None], None
    pos = np.asarray(positions)
    if pos.ndim != 2:
        raise SceneError(f"render: positions of one scene must have shape (n_slots, 3), got {pos.shape}")
    return arr[None], pos[None]


def render_scene(scene_codes, schema: SceneSchema = CURI_SCHEMA, positions=None, **kwargs) -> np.ndarray:
    """Render one scene: ``scene_codes`` int (n_slots, n_attributes) (and its objects'
    ``positions`` float (n_slots, 3), see :func:`render_scenes`) -> uint8 (H, W, 3)."""
    codes, pos = _one_scene(scene_codes, positions)
    return render_scenes(codes, schema, positions=pos, **kwargs)[0]


def object_masks(codes, schema: SceneSchema = CURI_SCHEMA, *, positions=None, height: int = DEFAULT_HEIGHT,
                 width: int = DEFAULT_WIDTH, supersample: int = 2):
    """Pixel footprint of every object, as drawn by :func:`render_scenes`.

    Returns ``(images, masks)``: the images (uint8 (n, H, W, 3)) and a bool array
    ``masks`` of shape ``(n_scenes, schema.max_objects, H, W)``; ``masks[i, s, y, x]`` is
    True iff at least one of the pixel's rays sees object ``s`` of scene ``i`` as its
    nearest surface (its colour then enters the pixel).  Empty slots have empty masks;
    an object's shadow is not part of its footprint.  ``positions`` as in :func:`render_scenes`.
    """
    return _run(codes, schema, height, width, supersample, None, True, positions)


# ================================================================================
# the slow obvious twin: every ray against every object, in numpy
# ================================================================================

def _np_hit(kind, O, D, p):
    """Vectorised ray-object intersection: O, D (m, 3) -> t (m,), normals (m, 3)."""
    m = D.shape[0]
    t_best = np.full(m, np.inf)
    nrm = np.zeros((m, 3))
    cx, cy, r = p[_P_CX], p[_P_CY], p[_P_R]
    eps = _EPS

    def take(t, n_new, ok):
        nonlocal t_best, nrm
        better = ok & (t > eps) & (t < t_best)
        t_best = np.where(better, t, t_best)
        nrm = np.where(better[:, None], n_new, nrm)

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if kind == SHAPE_SPHERE:
            P = O - np.array([cx, cy, r])
            b = (P * D).sum(1)
            disc = b * b - ((P * P).sum(1) - r * r)
            s = np.sqrt(np.maximum(disc, 0.0))
            for t in (-b - s, -b + s):
                take(t, (P + t[:, None] * D) / r, disc >= 0)
        elif kind == SHAPE_CYLINDER:
            P = O - np.array([cx, cy, 0.0])
            a = D[:, 0] ** 2 + D[:, 1] ** 2
            b = P[:, 0] * D[:, 0] + P[:, 1] * D[:, 1]
            disc = b * b - a * (P[:, 0] ** 2 + P[:, 1] ** 2 - r * r)
            s = np.sqrt(np.maximum(disc, 0.0))
            for t in ((-b - s) / a, (-b + s) / a):
                z = P[:, 2] + t * D[:, 2]
                n_side = np.stack([(P[:, 0] + t * D[:, 0]) / r, (P[:, 1] + t * D[:, 1]) / r, 0 * t], 1)
                take(t, n_side, (a > 0) & (disc >= 0) & (z >= 0) & (z <= 2 * r))
            for zc, sgn in ((2 * r, 1.0), (0.0, -1.0)):
                t = (zc - P[:, 2]) / D[:, 2]
                q2 = (P[:, 0] + t * D[:, 0]) ** 2 + (P[:, 1] + t * D[:, 1]) ** 2
                take(t, np.tile([0.0, 0.0, sgn], (m, 1)), (D[:, 2] != 0) & (q2 <= r * r))
        else:
            a = r / math.sqrt(2.0)
            cs, sn = p[_P_COS], p[_P_SIN]
            rot = np.array([[cs, sn, 0.0], [-sn, cs, 0.0], [0.0, 0.0, 1.0]])  # world -> cube
            L = (O - np.array([cx, cy, a])) @ rot.T
            E = D @ rot.T
            # a ray meets the cube iff it is inside all three slabs at some t: test each face
            for k in range(3):
                for sgn in (-1.0, 1.0):
                    t = (sgn * a - L[:, k]) / E[:, k]
                    Q = L + t[:, None] * E
                    inside = np.ones(m, dtype=bool)
                    for j in range(3):
                        if j != k:
                            inside &= np.abs(Q[:, j]) <= a
                    n_loc = np.zeros(3)
                    n_loc[k] = sgn
                    take(t, np.tile(n_loc @ rot, (m, 1)), inside & (E[:, k] != 0))
    return t_best, nrm


def render_scenes_reference(codes, schema: SceneSchema = CURI_SCHEMA, *, positions=None,
                            height: int = DEFAULT_HEIGHT, width: int = DEFAULT_WIDTH, supersample: int = 2):
    """Slow twin of :func:`object_masks`: every ray of every pixel against every object.

    Same arguments and returns as :func:`object_masks` (images uint8 (n, H, W, 3),
    masks bool (n, S, H, W)); plain numpy, no screen rectangles, no numba.  For tests.
    """
    params, _, height, width, ss = _prepare(codes, schema, height, width, supersample, positions)
    n, S, _ = params.shape
    origin = _camera()[0]
    _, rays, ground_table = _tables(height, width, ss)
    D = rays.reshape(-1, 3)
    m = D.shape[0]
    O = np.broadcast_to(origin, (m, 3))
    gt = ground_table.reshape(-1, 4)
    G = np.stack([gt[:, 0], gt[:, 1], np.zeros(m)], axis=1)
    key = np.broadcast_to(_KEY, (m, 3))
    half = _KEY - D
    half = half / np.linalg.norm(half, axis=1, keepdims=True)
    images = np.empty((n, height, width, 3), dtype=np.uint8)
    masks = np.zeros((n, S, height, width), dtype=bool)
    for i in range(n):
        best = np.full(m, np.inf)
        hit = np.full(m, -1)
        nrm = np.zeros((m, 3))
        lit = np.ones(m)
        for s in range(S):
            p = params[i, s]
            if p[_P_VALID] == 0:
                continue
            t, n_s = _np_hit(int(p[_P_SHAPE]), O, D, p)
            closer = t < best
            best = np.where(closer, t, best)
            hit = np.where(closer, s, hit)
            nrm = np.where(closer[:, None], n_s, nrm)
            ts, _ = _np_hit(int(p[_P_SHAPE]), G, key, p)
            lit = np.where(np.isfinite(ts), 0.0, lit)
        ground = np.where((lit > 0) | (D[:, 2] >= 0), gt[:, 2], gt[:, 3])
        colour = np.repeat(ground[:, None], 3, axis=1)
        diffuse = (_OBJ_AMB + _OBJ_KEY * np.maximum(nrm @ _KEY, 0.0) + _OBJ_FILL * np.maximum(nrm @ _FILL, 0.0))
        nh = np.maximum((nrm * half).sum(1), 0.0)
        R = D - 2.0 * (D * nrm).sum(1)[:, None] * nrm
        w = np.clip((R[:, 2] + 0.1) / 0.5, 0.0, 1.0)
        env = (_ENV_GROUND + (_ENV_SKY - _ENV_GROUND) * (w * w * (3.0 - 2.0 * w))
               + _ENV_KEY_LOBE * np.maximum(R @ _LOBE_A, 0.0) ** _ENV_LOBE_POWER
               + _ENV_FILL_LOBE * np.maximum(R @ _LOBE_B, 0.0) ** _ENV_LOBE_POWER)
        for s in range(S):
            sel = hit == s
            if not sel.any():
                continue
            p = params[i, s]
            base = p[_P_RGB:_P_RGB + 3]
            if p[_P_METAL]:
                c = base * (_METAL_DIFFUSE * diffuse[sel, None] + _METAL_REFLECT * env[sel, None]) \
                    + (_METAL_WHITE * env[sel] + _METAL_SPEC * nh[sel] ** _METAL_SHINE)[:, None]
            else:
                c = base * diffuse[sel, None] + (_RUBBER_SPEC * nh[sel] ** _RUBBER_SHINE)[:, None]
            colour[sel] = c
            masks[i, s] = sel.reshape(height, ss, width, ss).any(axis=(1, 3))
        mean = colour.reshape(height, ss, width, ss, 3).mean(axis=(1, 3))
        images[i] = np.floor(np.clip(mean, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    return images, masks


# ================================================================================
# files
# ================================================================================

def render_scene_png(scene_codes, schema: SceneSchema, path, positions=None, **kwargs) -> Path:
    """Render one scene (int codes (n_slots, n_attributes); the objects' ``positions``
    float (n_slots, 3) for a schema without ``x``/``y``) and write it as a PNG.

    ``kwargs`` go to :func:`render_scenes` (``height``, ``width``, ``supersample``).
    The file is written to a temporary name next to ``path`` and renamed, so a failure
    never leaves a half-written file.  Returns the path.
    """
    return save_png(render_scene(scene_codes, schema, positions, **kwargs), path)


def save_png(image: np.ndarray, path) -> Path:
    """Write ``image`` (uint8, or float in [0, 1], (H, W, 3)) as an RGB PNG at ``path``: to a
    temporary name next to it, then renamed, so a failure never leaves a half-written file.
    Returns the path (:func:`~bayes_concepts.scenes.grid.write_rgb_png`)."""
    from .grid import write_rgb_png
    return write_rgb_png(image, path)
