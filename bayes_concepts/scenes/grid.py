"""Grid scenes: coloured points on an N x N grid (ConceptWorld's pictures).

A grid scene is an int8 array (N, N): ``grid[y, x]`` is the colour index of the point in
row ``y`` (0 at the top; south is +1) and column ``x`` (0 at the left; east is +1), or
``EMPTY`` (-1) where the grid has no point.  A batch is int8 (S, N, N).  The default size
and palette are ConceptWorld's: 32 x 32 and blue, red, green, yellow, white; a palette
may be longer (the Box-World definitions add three lock colours).

Array forms
    :func:`grid_bitmaps`  bool (S, C, N, N): one bitmap per colour (what the fast
                          ConceptWorld executor shifts and ANDs)
    :func:`grid_points`   the points of one scene as ``(x, y, colour index)`` tuples
    :func:`render_grids`  uint8 (S, N*scale, N*scale, 3) RGB pictures, black background
    :func:`write_grid_png` one scene as a PNG file of that picture (what ``render`` writes)

Files (JSON Lines, one scene a line)::

    {"size": 32, "points": [[x, y, "red"], [x, y, "blue"], ...]}

:func:`read_grids_jsonl` checks every line and names the file, line and field of a bad
one (:class:`~bayes_concepts.errors.SceneError`); :func:`write_grids_jsonl` writes them.
Text form for item names: :func:`encode_grid` / :func:`decode_grid`
(``"x.y.c;x.y.c;..."``, colour by index).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import SceneError

__all__ = ["EMPTY", "GRID_SIZE", "GRID_COLORS", "COLOR_RGB", "empty_grids", "grid_bitmaps", "grid_points",
           "encode_grid", "decode_grid", "read_grids_jsonl", "write_grids_jsonl", "render_grids",
           "save_grid_png", "write_grid_png", "add_noise_points"]

EMPTY = -1
GRID_SIZE = 32
#: ConceptWorld's five colours.
GRID_COLORS = ("blue", "red", "green", "yellow", "white")
#: RGB of every colour a palette may name.
COLOR_RGB = {"blue": (40, 90, 255), "red": (230, 30, 30), "green": (30, 200, 60), "yellow": (245, 220, 30),
             "white": (255, 255, 255), "cyan": (0, 220, 230), "magenta": (220, 40, 220),
             "orange": (255, 140, 0), "gray": (128, 128, 128), "purple": (130, 50, 200)}


def empty_grids(n: int, size: int = GRID_SIZE) -> np.ndarray:
    """int8 (n, size, size) filled with ``EMPTY``."""
    return np.full((int(n), int(size), int(size)), EMPTY, np.int8)


def grid_bitmaps(grids: np.ndarray, n_colors: int) -> np.ndarray:
    """bool (S, C, N, N): ``out[s, c, y, x]`` is True where scene s has a point of colour c
    at (x, y).  ``grids``: int8 (S, N, N) or (N, N) (then S = 1)."""
    g = np.asarray(grids)
    if g.ndim == 2:
        g = g[None]
    return g[:, None, :, :] == np.arange(int(n_colors), dtype=np.int8)[None, :, None, None]


def grid_points(grid: np.ndarray) -> list:
    """The points of one scene, int8 (N, N): a list of ``(x, y, colour index)``, row by row."""
    ys, xs = np.nonzero(np.asarray(grid) != EMPTY)
    return [(int(x), int(y), int(grid[y, x])) for y, x in zip(ys, xs)]


def encode_grid(grid: np.ndarray) -> str:
    """A scene as text: its points ``x.y.c`` (colour index) joined by ``;``."""
    return ";".join(f"{x}.{y}.{c}" for x, y, c in grid_points(grid))


def decode_grid(text: str, size: int = GRID_SIZE) -> np.ndarray:
    """The int8 (size, size) scene of :func:`encode_grid`'s text."""
    g = np.full((size, size), EMPTY, np.int8)
    for k, part in enumerate(t for t in text.split(";") if t):
        try:
            x, y, c = (int(v) for v in part.split("."))
        except ValueError:
            raise SceneError(f"grid text, point {k}: expected x.y.colour, got {part!r}") from None
        if not (0 <= x < size and 0 <= y < size):
            raise SceneError(f"grid text, point {k}: ({x}, {y}) is outside the {size} x {size} grid")
        g[y, x] = c
    return g


# ==================================================================================== files
def read_grids_jsonl(path, colors=GRID_COLORS, size: int | None = None) -> np.ndarray:
    """int8 (S, N, N) scenes of a JSON Lines file (module docstring); every scene must have
    the same size (``size``, default the first line's).  A bad line is a :class:`SceneError`
    naming the file, line and field."""
    path = Path(path)
    index = {c: k for k, c in enumerate(colors)}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SceneError(f"{path}: cannot read ({exc.strerror})") from None
    out = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path} line {lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SceneError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("points"), list):
            raise SceneError(f"{where}: expected an object with a 'points' list")
        n = rec.get("size", size or GRID_SIZE)
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise SceneError(f"{where}: size: expected a whole number >= 1, got {n!r}")
        size = size or n
        if n != size:
            raise SceneError(f"{where}: size: {n}, earlier scenes have {size}")
        g = np.full((n, n), EMPTY, np.int8)
        for k, p in enumerate(rec["points"]):
            if not (isinstance(p, list) and len(p) == 3):
                raise SceneError(f"{where}: points[{k}]: expected [x, y, colour]")
            x, y, c = p
            for name, v in (("x", x), ("y", y)):
                if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < n:
                    raise SceneError(f"{where}: points[{k}].{name}: expected a whole number in 0..{n - 1}, got {v!r}")
            if c not in index:
                raise SceneError(f"{where}: points[{k}].colour: {c!r} is not one of {', '.join(colors)}")
            if g[y, x] != EMPTY:
                raise SceneError(f"{where}: points[{k}]: ({x}, {y}) is given twice")
            g[y, x] = index[c]
        out.append(g)
    if not out:
        raise SceneError(f"{path}: no scenes")
    return np.stack(out)


def write_grids_jsonl(path, grids: np.ndarray, colors=GRID_COLORS) -> None:
    """Write int8 (S, N, N) scenes as JSON Lines (one scene a line)."""
    grids = np.asarray(grids)
    with open(path, "w", encoding="utf-8") as f:
        for g in grids:
            pts = [[x, y, colors[c]] for x, y, c in grid_points(g)]
            f.write(json.dumps({"size": int(g.shape[0]), "points": pts}) + "\n")


# ================================================================================ pictures
def render_grids(grids: np.ndarray, colors=GRID_COLORS, scale: int = 1) -> np.ndarray:
    """uint8 (S, N*scale, N*scale, 3) RGB pictures of int8 (S, N, N) scenes: one pixel per
    point (``scale`` x ``scale`` with ``scale`` > 1), black where the grid is empty."""
    g = np.asarray(grids)
    if g.ndim == 2:
        g = g[None]
    lut = np.zeros((len(colors) + 1, 3), np.uint8)  # last row: empty
    for k, c in enumerate(colors):
        lut[k] = COLOR_RGB.get(c, (200, 200, 200))
    img = lut[np.where(g == EMPTY, len(colors), g)]
    if scale > 1:
        img = img.repeat(scale, axis=1).repeat(scale, axis=2)
    return img


def write_grid_png(path, grid: np.ndarray, colors=GRID_COLORS, scale: int = 1) -> Path:
    """Write one scene, int8 (N, N), as an RGB PNG of (N*scale, N*scale) pixels: one pixel
    per grid point (a ``scale`` x ``scale`` block with ``scale`` > 1), black where the grid is
    empty -- the seed's 32 x 32 picture at ``scale`` 1.  Written to a temporary name next to
    ``path`` and renamed, so a failure never leaves a half-written file.  Returns the path."""
    g = np.asarray(grid)
    if g.ndim != 2 or g.shape[0] != g.shape[1]:
        raise SceneError(f"write_grid_png {path}: expected one square grid (N, N), got shape {g.shape}")
    if not isinstance(scale, (int, np.integer)) or isinstance(scale, bool) or scale < 1:
        raise SceneError(f"write_grid_png {path}: scale: expected a whole number >= 1, got {scale!r}")
    if g.max(initial=EMPTY) >= len(colors) or g.min(initial=EMPTY) < EMPTY:
        raise SceneError(f"write_grid_png {path}: colour index {int(g.max())} outside the palette of "
                         f"{len(colors)} ({', '.join(colors)})")
    return write_rgb_png(render_grids(g, colors, int(scale))[0], path)


def write_rgb_png(image: np.ndarray, path) -> Path:
    """Write ``image``, uint8 (H, W, 3), or float (H, W, 3) in [0, 1], as an RGB PNG at
    ``path``: to a temporary name next to it, then renamed, so a failure never leaves a
    half-written file.  Returns the path."""
    # Pillow (matplotlib's dependency) in mode RGB: matplotlib's imsave always writes RGBA
    from PIL import Image

    image = np.asarray(image)
    if image.ndim != 3 or image.shape[2] != 3:
        raise SceneError(f"{path}: an RGB picture is (H, W, 3), got shape {image.shape}")
    if image.dtype != np.uint8:
        image = np.round(np.clip(image.astype(np.float64), 0.0, 1.0) * 255).astype(np.uint8)
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp.png")
    try:
        Image.fromarray(np.ascontiguousarray(image), "RGB").save(tmp, format="PNG")
        tmp.replace(path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def save_grid_png(path, grids: np.ndarray, colors=GRID_COLORS, titles=None, columns: int = 6, scale: int = 4):
    """A PNG sheet of scenes, int8 (n, N, N) (``columns`` a row, each scaled by ``scale``),
    with ``titles`` above them when given; returns the path.  Drawn on a figure of its own
    (no pyplot: the caller's backend and open figures are left alone)."""
    from matplotlib.figure import Figure

    g = np.asarray(grids)
    rows = -(-len(g) // columns)
    fig = Figure(figsize=(2.1 * columns, 2.3 * rows))
    axes = fig.subplots(rows, columns, squeeze=False)
    for k, ax in enumerate(axes.ravel()):
        ax.axis("off")
        if k < len(g):
            ax.imshow(render_grids(g[k], colors, scale)[0], interpolation="nearest")
            if titles is not None:
                ax.set_title(str(titles[k]), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path


# ================================================================================== noise
def add_noise_points(grid: np.ndarray, n: int, n_colors: int, rng) -> np.ndarray:
    """``grid`` (int8 (N, N), changed in place and returned) with up to ``n`` isolated points
    of random colours (0..n_colors-1): each lands on a cell whose 8 neighbours and itself are
    empty, so it touches nothing (and no shape of two or more points can use it)."""
    size = grid.shape[0]
    for _ in range(int(n)):
        occ = grid != EMPTY
        pad = np.pad(occ, 1)
        near = np.zeros_like(occ)
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                near |= pad[1 + dy:1 + dy + size, 1 + dx:1 + dx + size]
        free = np.flatnonzero(~near)
        if not len(free):
            break
        cell = int(rng.choice(free))
        grid[cell // size, cell % size] = int(rng.integers(n_colors))
    return grid
