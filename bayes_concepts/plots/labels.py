"""Point labels that stay beside their points and off each other.

:func:`label_offsets` is the placement, a pure function over arrays: for each point, in
order, the first of a ring of candidate places around it (right, left, above, below, the
four corners; then the same ring one step further out, up to ``rings`` steps) whose box is
inside the frame and overlaps no label already placed and no marker; when none is free, the
candidate that overlaps least (never a place far from the point).  :func:`overlaps` counts
what a placement overprints -- the obvious twin the tests compare it with.
:func:`annotate_points` draws labels on an Axes with it, measuring each label's real size.

All sizes and positions are in display points (1/72 inch), y upwards.
"""
from __future__ import annotations

import numpy as np

__all__ = ["label_offsets", "label_boxes", "overlaps", "annotate_points"]

#: the directions of one ring of candidates, (dx, dy) of the box's anchor side, in order of preference
_RING = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1))


def label_boxes(xy, wh, offsets) -> np.ndarray:
    """The boxes ``(x0, y0, x1, y1)`` of labels of size ``wh`` (n, 2) whose lower-left corners
    sit at ``xy + offsets`` (each (n, 2), points)."""
    xy, wh, offsets = (np.asarray(a, np.float64).reshape(-1, 2) for a in (xy, wh, offsets))
    lo = xy + offsets
    return np.hstack([lo, lo + wh])


def _intersect(a, b) -> float:
    """The overlapping area of boxes a and b (0 when they only touch)."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def _marker_box(p, radius) -> tuple:
    return (p[0] - radius, p[1] - radius, p[0] + radius, p[1] + radius)


def _candidates(wh, gap: float, rings: int):
    """Offsets (lower-left corner relative to the point) of the candidate places, nearest first."""
    w, h = wh
    out = []
    for k in range(rings):
        step = gap + k * (h + gap)
        for dx, dy in _RING:
            x = step if dx > 0 else (-step - w if dx < 0 else -w / 2)
            y = step if dy > 0 else (-step - h if dy < 0 else -h / 2)
            if dx == 0 and dy > 0:
                y = gap + k * (h + gap)
            out.append((x, y))
    return out


def label_offsets(xy, wh, frame=None, *, marker_radius: float = 4.0, gap: float = 3.0, rings: int = 3,
                  order=None, obstacles=()) -> np.ndarray:
    """Where each label goes: the offset (points) of its box's lower-left corner from its point.

    Parameters
    ----------
    xy : array (n, 2)
        The points, in display points.
    wh : array (n, 2)
        Each label's width and height, in points.
    frame : (x0, y0, x1, y1), optional
        Labels stay inside it where a candidate allows (the Axes).
    marker_radius : float
        Half the size of the square each point's marker covers; labels keep off every marker.
    gap : float
        Distance between a point's marker edge and its label, in points.
    rings : int
        How many steps out from the point are tried (each a label height further): a label
        is never further than ``gap + (rings - 1) * (h + gap) + w`` from its point.
    order : array of int, optional
        The order in which labels are placed (earlier ones get the nearer places); default as given.
    obstacles : sequence of (x0, y0, x1, y1)
        Further boxes to keep off (error bars, lines), in points.

    Returns
    -------
    numpy.ndarray (n, 2)
        Each label's offset; :func:`label_boxes` turns them into boxes.
    """
    xy = np.asarray(xy, np.float64).reshape(-1, 2)
    wh = np.asarray(wh, np.float64).reshape(-1, 2)
    if len(xy) != len(wh):
        raise ValueError(f"label_offsets: {len(xy)} points but {len(wh)} label sizes")
    n = len(xy)
    markers = [_marker_box(p, marker_radius) for p in xy] + [tuple(b) for b in obstacles]
    placed = []
    out = np.zeros((n, 2))
    for i in (range(n) if order is None else order):
        best, best_cost = None, None
        for off in _candidates(wh[i], marker_radius + gap, rings):
            box = (xy[i, 0] + off[0], xy[i, 1] + off[1], xy[i, 0] + off[0] + wh[i, 0], xy[i, 1] + off[1] + wh[i, 1])
            outside = 0.0
            if frame is not None:
                inner = _intersect(box, frame)
                outside = wh[i, 0] * wh[i, 1] - inner
            cost = outside * 10 + sum(_intersect(box, b) for b in placed) + sum(
                _intersect(box, m) for j, m in enumerate(markers))
            if best_cost is None or cost < best_cost - 1e-9:
                best, best_cost = (off, box), cost
            if cost == 0:
                break
        out[i] = best[0]
        placed.append(best[1])
    return out


def overlaps(xy, wh, offsets, *, marker_radius: float = 4.0) -> dict:
    """What a placement overprints: ``{"labels": pairs of labels that overlap, "markers":
    (label, point) pairs where a label covers a marker}`` (each a list of index pairs)."""
    boxes = label_boxes(xy, wh, offsets)
    xy = np.asarray(xy, np.float64).reshape(-1, 2)
    n = len(boxes)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if _intersect(boxes[i], boxes[j]) > 0]
    marks = [(i, j) for i in range(n) for j in range(n) if _intersect(boxes[i], _marker_box(xy[j], marker_radius)) > 0]
    return {"labels": pairs, "markers": marks}


def annotate_points(ax, x, y, labels, *, marker_radius: float = 4.0, rings: int = 3, order=None, colors=None,
                    xerr=None, yerr=None, **text_kw) -> list:
    """Label each point ``(x[i], y[i])`` (data coordinates) of ``ax`` with ``labels[i]``, placed
    by :func:`label_offsets` inside the Axes, off the other labels and the markers, each label's
    size measured as drawn; a thin leader line joins a label set one step or more away.  Call it
    after the Axes' limits are settled.  ``text_kw`` go to :meth:`~matplotlib.axes.Axes.annotate`.
    ``xerr`` / ``yerr``: (lo, hi) per point in data units, horizontal / vertical error bars the
    labels keep off.
    ``colors``: one text colour per label (default ``text_kw``'s, or the style's).  The same
    label at the same place (one split drawn twice) is written once.  Returns the
    annotations, in the order of ``labels`` (``None`` for a repeated one)."""
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    fig = ax.figure
    ax.get_xlim(), ax.get_ylim()  # settle autoscaled limits before reading positions
    fig.draw_without_rendering()  # and the layout (constrained layout moves the Axes)
    renderer = fig._get_renderer()
    scale = 72.0 / fig.dpi  # display pixels -> points
    xy_all = ax.transData.transform(np.column_stack([x, y])) * scale
    seen, keep = set(), []
    for i, (lb, p) in enumerate(zip(labels, xy_all)):
        key = (str(lb), round(p[0]), round(p[1]))
        if key not in seen and np.all(np.isfinite(p)):
            seen.add(key)
            keep.append(i)
    xy = xy_all[keep]
    texts = [ax.annotate(str(labels[i]), (x[i], y[i]), xytext=(0, 0), textcoords="offset points", ha="left",
                         va="bottom", **({"color": colors[i]} if colors is not None else {}), **text_kw)
             for i in keep]
    wh = np.array([[e.width * scale, e.height * scale] for e in (t.get_window_extent(renderer) for t in texts)])
    frame = tuple((ax.get_window_extent(renderer).get_points() * scale).ravel())
    if order is not None:
        where = {i: k for k, i in enumerate(keep)}
        order = [where[i] for i in order if i in where]
    bars = []
    if xerr is not None:
        lo, hi = (np.asarray(v, np.float64) for v in xerr)
        ends = [ax.transData.transform(np.column_stack([lo, y])) * scale,
                ax.transData.transform(np.column_stack([hi, y])) * scale]
        bars = [(a[0], a[1] - 2.0, b[0], b[1] + 2.0) for a, b in zip(*ends) if np.all(np.isfinite([*a, *b]))]
    if yerr is not None:
        lo, hi = (np.asarray(v, np.float64) for v in yerr)
        ends = [ax.transData.transform(np.column_stack([x, lo])) * scale,
                ax.transData.transform(np.column_stack([x, hi])) * scale]
        bars += [(a[0] - 2.0, a[1], b[0] + 2.0, b[1]) for a, b in zip(*ends) if np.all(np.isfinite([*a, *b]))]
    offsets = label_offsets(xy, wh, frame, marker_radius=marker_radius, rings=rings, order=order, obstacles=bars)
    for t, off, (w, h) in zip(texts, offsets, wh):
        t.set_position(tuple(off))
        dx, dy = max(off[0], -(off[0] + w), 0.0), max(off[1], -(off[1] + h), 0.0)
        if np.hypot(dx, dy) > 1.5 * (marker_radius + 3.0):  # a step out: a leader line shows whose it is
            ax.annotate("", t.xy, xytext=(off[0] + w / 2, off[1] + h / 2), textcoords="offset points",
                        arrowprops=dict(arrowstyle="-", color="0.6", lw=0.6, shrinkA=h / 2, shrinkB=marker_radius))
    out = [None] * len(labels)
    for i, t in zip(keep, texts):
        out[i] = t
    return out
