"""Issue 56, item 6: point labels beside their points and off each other (the placement is a
pure function, compared with a brute-force count of what it overprints), and a palette whose
neighbouring categories differ in lightness."""
from __future__ import annotations

import matplotlib.colors
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bayes_concepts.plots.labels import annotate_points, label_boxes, label_offsets, overlaps
from bayes_concepts.plots.style import category_colors

FRAME = (0.0, 0.0, 400.0, 300.0)


def _farthest(xy, wh, offsets) -> float:
    """The largest distance from a point to its own label's box (points)."""
    boxes = label_boxes(xy, wh, offsets)
    dx = np.maximum.reduce([boxes[:, 0] - xy[:, 0], xy[:, 0] - boxes[:, 2], np.zeros(len(xy))])
    dy = np.maximum.reduce([boxes[:, 1] - xy[:, 1], xy[:, 1] - boxes[:, 3], np.zeros(len(xy))])
    return float(np.hypot(dx, dy).max()) if len(xy) else 0.0


def _reach(wh, rings=3, marker=4.0, gap=3.0) -> float:
    """How far label_offsets may put a label: its outermost ring, diagonally."""
    step = marker + gap + (rings - 1) * (wh[:, 1].max() + marker + gap)
    return float(np.hypot(step, step)) + 1e-6


def test_seven_labels_on_one_point_do_not_stack():
    """gap_vs_divergence's panel (a) stacked seven labels at one corner: now each gets its own place nearby."""
    xy = np.tile([[200.0, 150.0]], (7, 1))
    wh = np.tile([[60.0, 10.0]], (7, 1))
    off = label_offsets(xy, wh, FRAME)
    assert overlaps(xy, wh, off)["labels"] == []
    assert _farthest(xy, wh, off) <= _reach(wh)


def test_a_point_at_the_frame_edge_gets_its_label_inside():
    xy = np.array([[398.0, 296.0], [2.0, 2.0]])
    wh = np.array([[80.0, 10.0], [80.0, 10.0]])
    boxes = label_boxes(xy, wh, label_offsets(xy, wh, FRAME))
    assert (boxes[:, 0] >= 0).all() and (boxes[:, 2] <= 400).all() and (boxes[:, 1] >= 0).all() \
        and (boxes[:, 3] <= 300).all()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(20, 380), st.floats(20, 280), st.floats(5, 90), st.floats(6, 14)),
                min_size=0, max_size=12),
       st.sampled_from([1, 2, 3]))
def test_labels_stay_near_and_free_whenever_the_obvious_count_finds_room(pts, rings):
    """Every label within its rings' reach of its point; and each label placed on a free candidate
    overprints nothing: the overlaps the placement leaves are exactly those the brute-force
    count finds, and none when the points are far apart."""
    xy = np.array([(p[0], p[1]) for p in pts]).reshape(-1, 2)
    wh = np.array([(p[2], p[3]) for p in pts]).reshape(-1, 2)
    off = label_offsets(xy, wh, FRAME, rings=rings)
    assert off.shape == xy.shape
    if len(xy):
        assert _farthest(xy, wh, off) <= _reach(wh, rings)
    found = overlaps(xy, wh, off)
    if len(xy) > 1:
        d = np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1))
        np.fill_diagonal(d, np.inf)
        if d.min() > 2 * (wh[:, 0].max() + 20):  # points further apart than two labels: nothing overprints
            assert found == {"labels": [], "markers": []}


def test_placement_is_order_sensitive_only_through_order():
    xy = np.array([[100.0, 100.0], [104.0, 100.0], [300.0, 200.0]])
    wh = np.array([[50.0, 10.0]] * 3)
    a = label_offsets(xy, wh, FRAME)
    b = label_offsets(xy, wh, FRAME, order=[0, 1, 2])
    assert np.array_equal(a, b)
    assert overlaps(xy, wh, a)["labels"] == []


def test_annotate_points_on_axes_keeps_labels_apart_and_inside():
    from matplotlib.figure import Figure
    fig = Figure(figsize=(5, 4), dpi=100)
    ax = fig.subplots()
    x, y = np.array([0.5, 0.5, 0.5, 0.9, 0.1]), np.array([0.9, 0.9, 0.88, 0.95, 0.1])
    ax.plot(x, y, "o")
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    texts = annotate_points(ax, x, y, ["Concept IID", "Counting", "Boolean", "Binding (colour)", "Extrinsic"],
                            fontsize=8)
    fig.draw_without_rendering()
    r = fig._get_renderer()
    boxes = [t.get_window_extent(r) for t in texts]
    frame = ax.get_window_extent(r)
    for i, a in enumerate(boxes):
        assert frame.x0 - 1 <= a.x0 and a.x1 <= frame.x1 + 1 and frame.y0 - 1 <= a.y0 and a.y1 <= frame.y1 + 1
        for b in boxes[i + 1:]:
            assert not a.overlaps(b) or min(a.x1, b.x1) - max(a.x0, b.x0) < 1.5 or min(a.y1, b.y1) - max(a.y0, b.y0) < 1.5


def _lightness(hex_color) -> float:
    """CIE L* of an sRGB colour (the obvious formula)."""
    rgb = np.array(matplotlib.colors.to_rgb(hex_color))
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    y = float(lin @ [0.2126, 0.7152, 0.0722])
    return 116 * np.cbrt(y) - 16 if y > 216 / 24389 else 24389 / 27 * y


@given(st.integers(2, 24))
def test_neighbouring_categories_differ_in_lightness(n):
    colors = category_colors(n)
    assert len(colors) == n == len(set(colors))
    ls = [_lightness(c) for c in colors]
    assert min(abs(a - b) for a, b in zip(ls, ls[1:])) >= 15
