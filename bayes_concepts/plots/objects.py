"""How a scene's objects are drawn from its codes: the schema view of a scene.

Every object is a marker on a ``(nx, ny)`` grid of cells: at its ``x``/``y`` bins when the
schema has both (seen from above, y bin 1 at the top), else in a row in slot order; a scene
whose objects have 3-D positions (``space.positions``: CLEVR's) is drawn from above at those
positions instead (:func:`draw_objects_at`, turned to CLEVR's camera by :func:`top_down`).  Which
attribute each drawing channel shows (colour, marker, the marker's edge, its area, a hatch)
derives from the schema (:func:`object_encoding`), and how each value looks on its channel
from the attribute's values only (:func:`value_styles`); for CURI: colour = object colour,
square / circle / triangle = cube / sphere / cylinder, bigger = large, black ring = metal.
The episode view, the modalities figure and the scene-properties figure draw with these.
"""
from __future__ import annotations

import matplotlib
import matplotlib.colors
import numpy as np
import seaborn as sns
from matplotlib.lines import Line2D

from ..scenes.schema import CLEVR_DIRECTIONS, GENERATOR_LABELS

__all__ = ["OBJECT_COLORS", "SHAPE_MARKERS", "SIZE_POINTS", "RING_STYLES", "CHANNEL_ATTRIBUTES", "object_encoding",
           "value_styles", "names_its_colour", "scene_styles", "object_grid", "object_cell", "draw_objects",
           "top_down", "GROUND_HALF_WIDTH", "draw_objects_at", "legend_handles"]

#: how CLEVR draws its eight colours
OBJECT_COLORS = {"gray": "#8c8c8c", "red": "#d62728", "blue": "#2b63c8", "green": "#2ca02c",
                 "brown": "#8c564b", "purple": "#8e44ad", "cyan": "#17becf", "yellow": "#f1c40f"}
SHAPE_MARKERS = {"cube": "s", "sphere": "o", "cylinder": "^"}
SIZE_POINTS = {"small": 70.0, "large": 190.0}  # marker area, points²
#: edge of an object's marker by material: (edge colour, line width in points)
RING_STYLES = {"rubber": ("0.55", 0.6), "metal": ("black", 2.0)}
#: which attribute each drawing channel of the episode view shows when the schema has it;
#: channels left free take the schema's other attributes in order (see ``object_encoding``)
CHANNEL_ATTRIBUTES = {"color": "color", "marker": "shape", "ring": "material", "size": "size"}
#: fallbacks, in order, for values the tables above do not know (see ``value_styles``)
_FALLBACK_MARKERS = ("D", "P", "X", "v", "h", "*", "p", "<", ">", "8", "H", "d")
_FALLBACK_RINGS = (("0.55", 0.6), ("black", 2.0), ("#b2182b", 2.0), ("#2166ac", 2.0), ("#762a83", 2.0),
                   ("#e08214", 2.0), ("#1b7837", 2.0))
_HATCHES = ("", "////", "....", "xxxx", "\\\\\\\\", "oo", "----", "++++", "||||", "**")


def object_encoding(schema) -> dict:
    """Which attribute of ``schema`` each drawing channel of a scene shows.

    Returns ``{channel: attribute name or None}`` for ``color``, ``marker``, ``ring``
    (the marker's edge), ``size`` (marker area) and ``hatch``, plus ``position``: the pair
    ``("x", "y")`` when the schema has both (objects drawn at their bins), else None
    (objects drawn in a row in slot order); ``undrawn``: a tuple of the attributes no
    channel shows.  A channel shows the attribute :data:`CHANNEL_ATTRIBUTES` names when
    the schema has it; the channels left free take the schema's remaining attributes in
    schema order (``size`` only an ordered one).
    """
    names = [n for n in schema.names if n not in GENERATOR_LABELS]  # how a scene was made is not its property
    position = ("x", "y") if "x" in names and "y" in names else None
    free = [n for n in names if position is None or n not in position]
    encoding = {"position": position}
    for channel, name in CHANNEL_ATTRIBUTES.items():
        encoding[channel] = name if name in free else None
    taken = {n for c, n in encoding.items() if c != "position" and n is not None}
    free = [n for n in free if n not in taken]
    for channel in ("color", "marker", "ring", "size", "hatch"):
        if encoding.get(channel) is None:
            pick = next((n for n in free if channel != "size" or schema.attribute(n).ordered), None)
            encoding[channel] = pick
            if pick is not None:
                free.remove(pick)
    encoding["undrawn"] = tuple(free)
    return encoding


def _with_fallbacks(values, known: dict, pool) -> dict:
    """``known[v]`` where known, else the entries of ``pool`` not used by known values, in
    value order (cycled when there are more values than entries)."""
    out = {v: known[v] for v in values if v in known}
    spare = [p for p in pool if p not in out.values()] or list(pool)
    for i, v in enumerate(v for v in values if v not in known):
        out[v] = spare[i % len(spare)]
    return out


def names_its_colour(value) -> bool:
    """Whether a value is drawn in the colour it names (CLEVR's, or one matplotlib knows)."""
    return value in OBJECT_COLORS or (isinstance(value, str) and len(value) > 1 and value.isalpha()
                                      and matplotlib.colors.is_color_like(value))


def value_styles(attribute, channel: str) -> dict:
    """How each value of ``attribute`` (a schema :class:`~bayes_concepts.scenes.Attribute`)
    is drawn on ``channel``; deterministic: a function of the attribute's values only.

    ``color``: hex colour: :data:`OBJECT_COLORS`, else the value itself when matplotlib knows
    it as a colour name (``olive``), else a husl palette over the remaining values in value
    order.  ``marker``: :data:`SHAPE_MARKERS`, else unused fallback markers in value order.
    ``ring``: ``(edge colour, line width in points)``: :data:`RING_STYLES`, else unused
    fallbacks (thin grey first, then thick black, red, blue, ...).  ``size``: marker area in
    points²: :data:`SIZE_POINTS` when it knows every value, else evenly spaced from 70 to 190
    in code order.  ``hatch``: a hatch pattern per code, none for the first.
    """
    values = list(attribute.values)
    if channel == "color":
        known = {v: OBJECT_COLORS[v] if v in OBJECT_COLORS else matplotlib.colors.to_hex(v)
                 for v in values if names_its_colour(v)}
        rest = [v for v in values if v not in known]
        palette = [matplotlib.colors.to_hex(c) for c in sns.color_palette("husl", len(rest))] if rest else []
        return {v: known[v] if v in known else palette[rest.index(v)] for v in values}
    if channel == "marker":
        return _with_fallbacks(values, SHAPE_MARKERS, _FALLBACK_MARKERS)
    if channel == "ring":
        return _with_fallbacks(values, RING_STYLES, _FALLBACK_RINGS)
    if channel == "size":
        if all(v in SIZE_POINTS for v in values):
            return {v: SIZE_POINTS[v] for v in values}
        areas = np.linspace(70.0, 190.0, len(values)) if len(values) > 1 else [130.0]
        return {v: float(a) for v, a in zip(values, areas)}
    if channel == "hatch":
        return {v: _HATCHES[i % len(_HATCHES)] for i, v in enumerate(values)}
    raise ValueError(f"unknown drawing channel {channel!r} (expected color, marker, ring, size or hatch)")


def scene_styles(schema) -> tuple:
    """``(encoding, {channel: {value: style}})`` of :func:`object_encoding` and :func:`value_styles`."""
    encoding = object_encoding(schema)
    styles = {c: value_styles(schema.attribute(encoding[c]), c)
              for c in ("color", "marker", "ring", "size", "hatch") if encoding[c] is not None}
    return encoding, styles


def glyphs_repeat(encoding, styles) -> tuple:
    """The attributes whose values a drawing channel cannot keep apart: more values than the
    channel has distinct styles, so two values share a colour or a marker (a pair space's 115
    attributes and 245 objects); ``()`` when every channel keeps its values apart."""
    return tuple(encoding[c] for c, st in styles.items() if len(set(map(str, st.values()))) < len(st))


def object_grid(schema, encoding) -> tuple:
    """``(nx, ny)``: the cells a scene of ``schema`` is drawn on: its ``x`` and ``y`` bins when
    the encoding has a position, else one row of ``max_objects`` slots."""
    if encoding["position"] is not None:
        return tuple(schema.attribute(a).n_values for a in encoding["position"])
    return schema.max_objects, 1


def object_cell(o, k: int, schema, encoding) -> tuple:
    """Grid cell (1-based column, row) of object ``o`` in slot ``k``: its x/y bins (by code
    order) when the encoding has a position, else column ``k + 1`` of row 1."""
    if encoding["position"] is None:
        return k + 1, 1
    ax_name, ay_name = encoding["position"]
    return (schema.attribute(ax_name).values.index(o[ax_name]) + 1,
            schema.attribute(ay_name).values.index(o[ay_name]) + 1)


def draw_objects(ax, objects, grid, schema, encoding, styles):
    """Draw one scene's objects (a list of ``{attribute: value}``) on ``ax``: ``grid = (nx, ny)``
    cells (:func:`object_grid`); ``encoding, styles`` of :func:`scene_styles` decide each
    object's colour, marker, edge, area and hatch."""
    nx, ny = grid

    def style(channel, o, default):
        name = encoding[channel]
        return styles[channel][o[name]] if name is not None else default

    cells = {}
    for k, o in enumerate(objects):
        cells.setdefault(object_cell(o, k, schema, encoding), []).append(o)
    for (bx, by), objs in cells.items():
        k = len(objs)
        # several objects in one bin: spread them around the cell centre
        shifts = [(0.0, 0.0)] if k == 1 else [(0.27 * np.cos(2 * np.pi * i / k), 0.27 * np.sin(2 * np.pi * i / k))
                                              for i in range(k)]
        for o, (dx, dy) in zip(objs, shifts):
            edge, width = style("ring", o, RING_STYLES["rubber"])
            hatch = style("hatch", o, "")
            ax.scatter([bx + dx], [by + dy], s=style("size", o, 130.0), marker=style("marker", o, "o"),
                       c=[style("color", o, "0.5")], edgecolors=edge, linewidths=width, zorder=3,
                       clip_on=False, **({"hatch": hatch} if hatch else {}))
    ax.set_xlim(0.5, nx + 0.5)
    ax.set_ylim(ny + 0.5, 0.5)  # y bin 1 at the top, as in the image
    # the bin grid as two line collections (ticks are slow to build on 50 axes)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    ax.vlines(np.arange(1.5, nx), 0.5, ny + 0.5, colors="0.88", linewidth=0.5, zorder=0)
    ax.hlines(np.arange(1.5, ny), 0.5, nx + 0.5, colors="0.88", linewidth=0.5, zorder=0)
    ax.set_aspect("equal")


#: Half the width of CLEVR's ground square: objects' centres lie in [-3, 3]² (world units).
GROUND_HALF_WIDTH = 3.0


def top_down(positions) -> np.ndarray:
    """Where objects at world ``positions`` (float (..., 3), CLEVR's units) are seen from above
    with CLEVR's camera at the bottom: float (..., 2), the first coordinate along CLEVR's
    ``right`` direction, the second along ``behind`` (so an object drawn left of another is
    ``left`` of it, one drawn higher ``behind`` it, as the relations say)."""
    p = np.asarray(positions, np.float64)[..., :2]
    right = np.asarray(CLEVR_DIRECTIONS["right"][:2])
    behind = np.asarray(CLEVR_DIRECTIONS["behind"][:2])
    return np.stack([p @ right, p @ behind], axis=-1)


def draw_objects_at(ax, objects, positions, schema, encoding, styles) -> np.ndarray:
    """Draw one scene's objects (a list of ``{attribute: value}``) on ``ax`` from above at their
    3-D ``positions`` (float (n_objects, 3) world coordinates, CLEVR's units) in a square panel:
    the ground square's outline, each object at :func:`top_down` of its position with the
    colour, marker, edge, area and hatch of :func:`scene_styles`.  Returns the drawn
    coordinates, float (n_objects, 2)."""
    at = top_down(np.asarray(positions, np.float64)[: len(objects)])

    def style(channel, o, default):
        name = encoding[channel]
        return styles[channel][o[name]] if name is not None else default

    for o, (u, v) in zip(objects, at):
        edge, width = style("ring", o, RING_STYLES["rubber"])
        hatch = style("hatch", o, "")
        ax.scatter([u], [v], s=style("size", o, 130.0), marker=style("marker", o, "o"), c=[style("color", o, "0.5")],
                   edgecolors=edge, linewidths=width, zorder=3, clip_on=False, **({"hatch": hatch} if hatch else {}))
    g = GROUND_HALF_WIDTH
    corners = top_down(np.array([[-g, -g, 0], [g, -g, 0], [g, g, 0], [-g, g, 0], [-g, -g, 0]]))
    ax.plot(corners[:, 0], corners[:, 1], color="0.85", linewidth=0.6, zorder=0)
    reach = float(np.abs(corners).max()) + 0.4
    ax.set_xlim(-reach, reach)
    ax.set_ylim(-reach, reach)  # behind at the top: the camera looks up the panel
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    ax.set_aspect("equal")
    return at


def legend_handles(encoding, styles) -> list:
    """Legend entries of the episode view: one per value of the attributes drawn as marker,
    size, edge and hatch, and as colour when a colour is not named by its value."""
    from matplotlib.patches import Patch

    def label(channel, v):
        name = encoding[channel]
        return str(v) if name == CHANNEL_ATTRIBUTES.get(channel) else f"{name} = {v}"

    handles = []
    for v, m in styles.get("marker", {}).items():
        handles.append(Line2D([], [], marker=m, linestyle="none", color="0.6", markeredgecolor="0.4", markersize=8,
                              label=label("marker", v)))
    for v, area in styles.get("size", {}).items():
        handles.append(Line2D([], [], marker="o", linestyle="none", color="0.6", markeredgecolor="0.4",
                              markersize=np.sqrt(area), label=label("size", v)))
    for v, (edge, width) in sorted(styles.get("ring", {}).items(), key=lambda kv: -kv[1][1]):
        ring = " (black ring)" if edge == "black" else (" (ring)" if width > 1 else "")
        handles.append(Line2D([], [], marker="o", linestyle="none", color="0.8", markeredgecolor=edge,
                              markeredgewidth=width, markersize=9, label=label("ring", v) + ring))
    for v, h in styles.get("hatch", {}).items():
        handles.append(Patch(facecolor="0.85", edgecolor="0.3", hatch=h or None, label=label("hatch", v)))
    colours = styles.get("color", {})
    if any(not names_its_colour(v) for v in colours):
        handles += [Line2D([], [], marker="o", linestyle="none", color=c, markersize=8, label=label("color", v))
                    for v, c in colours.items()]
    return handles
