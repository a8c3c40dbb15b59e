"""Figures of episodes: one episode's support and query scenes, and a support set in every modality.

``plot_episode``
    One episode: support and query scenes drawn top-down on the 8 × 8 location grid,
    with labels, the true concept and the oracles' most probable concepts.
``plot_modalities``
    A few support scenes of one episode as schema and in every modality that draws its
    items (built in: rendered picture and spectrogram).

A scene is drawn by a view (:class:`SceneView`): its objects from its codes
(:class:`ObjectsView`, the default), its grid when the space's items are grids
(:class:`GridView`: ConceptWorld's), or a modality's rendering of it: every
:class:`~bayes_concepts.modalities.Modality` draws its own items
(:meth:`~bayes_concepts.modalities.Modality.draw_items`), so a new modality brings its own
drawing and these figures name none.  :func:`~bayes_concepts.plots.write_figures` writes
the episode view (:mod:`.figure_set`).
"""
from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure  # built directly: no pyplot state, works under any (or no) display

from ..engine.rendered import find_rendered_bank
from ..modalities import modalities
from ..oracles import OracleSettings, strong_and_weak
from ..results import get_attr
from ..scenes.grid import render_grids
from ..scenes.schema import GENERATOR_LABELS
from .objects import draw_objects, draw_objects_at, glyphs_repeat, legend_handles, object_grid, scene_styles
from .style import MINUS, _line_chars, figure_style, given_axes, learner_label, split_label, wrap_lines

__all__ = ["plot_episode", "plot_modalities", "oracles_for", "SceneView", "ObjectsView", "GridView", "ModalityView",
           "scene_view", "legend_note"]


# ---------------------------------------------------------------------------------------
# how a scene is drawn
# ---------------------------------------------------------------------------------------

def legend_note(ax, text: str) -> None:
    """``text`` in a box at the top right of ``ax``: the episode view's legend of a view
    whose items explain themselves (pictures, grids)."""
    ax.text(0.98, 0.97, text, transform=ax.transAxes, ha="right", va="top", fontsize=8.5,
            bbox=dict(boxstyle="round,pad=0.4", fc="white", ec="0.7"))


class SceneView:
    """How the episode view draws scenes (:func:`scene_view`, or :class:`ModalityView` of a
    modality).  A subclass implements :meth:`layout`, :meth:`draw` and
    :meth:`legend`, and may change the class attributes and :meth:`cell`."""

    #: what one drawn scene is in the episode view's title
    noun = "square"
    #: the width (points) of a scene's frame: positive, negative
    frame_widths = (1.8, 0.9)

    def cell(self) -> tuple:
        """``(width, height, row height)`` in inches of one scene's place in the episode view."""
        return 1.25, 1.25, 1.6

    def layout(self) -> str:
        """What a drawn scene shows, for the title (``"grid scene"``)."""
        raise NotImplementedError

    def draw(self, axes, space, scene_ids) -> list:
        """Draw scene ``scene_ids[k]`` of ``space`` into ``axes[k]``; returns one dict per scene:
        the numbers drawn that the view's data reports besides the scene's objects."""
        raise NotImplementedError

    def legend(self, ax) -> None:
        """The legend of the drawn scenes, on ``ax`` (an Axes with its axis off)."""
        raise NotImplementedError


class ObjectsView(SceneView):
    """A scene drawn as its objects, from its codes (:mod:`bayes_concepts.plots.objects`): at
    their 3-D positions seen from above when the space has them (``positioned``:
    ``space.positions`` is not None, CLEVR's scenes), else at their ``x``/``y`` bins, seen
    from above, or in a row in slot order; a legend of how each attribute is drawn.  A
    positioned view reports each object's world ``x``, ``y`` and where it was drawn
    (``view_x``, ``view_y``: :func:`~bayes_concepts.plots.objects.top_down`)."""

    def __init__(self, schema, positioned: bool = False):
        self.schema = schema
        self.positioned = bool(positioned)
        self.encoding, self.styles = scene_styles(schema)
        self.grid = object_grid(schema, self.encoding)

    def layout(self) -> str:
        if self.positioned:
            return "scene seen from above at its objects' positions (CLEVR's camera at the bottom: left, right, " \
                   "front and behind as its relations say)"
        if self.encoding["position"]:
            xs, ys = (self.schema.attribute(a).values for a in self.encoding["position"])
            return f"scene seen from above: x bin {xs[0]}..{xs[-1]} left to right, y bin {ys[0]} at the top"
        return "scene, its objects left to right in slot order"

    def draw(self, axes, space, scene_ids) -> list:
        ids = np.asarray(scene_ids, np.int64)
        positions = space.positions(ids) if self.positioned else None
        drawn = []
        for k, (ax, sid) in enumerate(zip(axes, ids)):
            objects = space.scene(int(sid))["objects"]
            if positions is None:
                draw_objects(ax, objects, self.grid, self.schema, self.encoding, self.styles)
                drawn.append({})
                continue
            at = draw_objects_at(ax, objects, positions[k], self.schema, self.encoding, self.styles)
            drawn.append({"objects": [{"x": float(p[0]), "y": float(p[1]), "view_x": float(u), "view_y": float(v)}
                                      for p, (u, v) in zip(positions[k], at)]})
        return drawn

    def legend(self, ax) -> None:
        nx, ny = self.grid
        where = ("seen from above at their positions" if self.positioned
                 else f"seen from above, {nx}×{ny} bins" if self.encoding["position"] else "in slot order")
        undrawn = f"\nnot drawn: {', '.join(self.encoding['undrawn'])}" if self.encoding["undrawn"] else ""
        ax.legend(handles=legend_handles(self.encoding, self.styles), loc="upper right", fontsize=8.5, ncol=2,
                  title=f"objects ({where}){undrawn}", title_fontsize=9, frameon=True)


class LabelView(SceneView):
    """A scene drawn as the values of its objects, written out (one line per object, its drawn
    attributes' values), for a schema whose values no glyph keeps apart
    (:func:`~bayes_concepts.plots.objects.glyphs_repeat`: a pair space's items, each an
    attribute and an object out of hundreds)."""

    noun = "square"

    def __init__(self, schema, repeated: tuple):
        self.schema = schema
        self.repeated = tuple(repeated)
        self.names = [n for n in schema.names if n not in GENERATOR_LABELS]

    def layout(self) -> str:
        return "item, its " + ", ".join(self.names) + " written out"

    def draw(self, axes, space, scene_ids) -> list:
        for ax, sid in zip(axes, scene_ids):
            objects = space.scene(int(sid))["objects"]
            lines = [" ".join(str(o[n]) for n in self.names if n in o) for o in objects]
            longest = max((len(w) for ln in lines for w in ln.split()), default=1)
            ax.text(0.5, 0.5, "\n".join(w for ln in lines for w in ln.split()), ha="center", va="center",
                    fontsize=max(6.0, min(11.0, 100.0 / max(longest, 1))), transform=ax.transAxes, wrap=True)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
        return [{} for _ in scene_ids]

    def legend(self, ax) -> None:
        legend_note(ax, "each square: its item's " + ", ".join(self.names) + ",\nwritten out (too many values "
                    "for\ncolours or markers: " + ", ".join(self.repeated) + ")")


class GridView(SceneView):
    """A scene that is a grid of coloured points (a space whose items are grids, ``has_grids``:
    ConceptWorld's) drawn as its picture, one pixel a point in its colour, black empty;
    reports how many points it has (``points``)."""

    def __init__(self, space):
        self.size = int(space.grid(0).shape[0])

    def layout(self) -> str:
        return "grid scene"

    def draw(self, axes, space, scene_ids) -> list:
        drawn = []
        for ax, sid in zip(axes, scene_ids):
            grid = space.grid(int(sid))
            ax.imshow(render_grids(grid, space.grid_colors())[0], interpolation="nearest", aspect="auto")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
            drawn.append({"points": int((grid >= 0).sum())})
        return drawn

    def legend(self, ax) -> None:
        legend_note(ax, f"grids: {self.size}×{self.size} points,\none pixel a point, black empty")


def _size_options(kind, height: int, width: int) -> dict:
    """``height`` and ``width`` as the options of modality ``kind``, where it takes them."""
    return {name: int(v) for name, v in (("height", height), ("width", width)) if name in kind.defaults}


def _renderings(space, kind, scene_ids, options: dict) -> np.ndarray:
    """Renderings ``(n,) + item_shape`` of bank scenes in modality ``kind`` with ``options``: from
    the space's cached rendered bank with those options when it has one
    (:meth:`~bayes_concepts.spaces.hypothesis_space.HypothesisSpace.rendered_bank`), else
    rendered now."""
    ids = np.asarray(scene_ids, np.int64)
    bank = None
    if space.path is not None and space.has_pictures:
        bank = find_rendered_bank(space, kind.name, **options)
    if bank is not None:
        return np.asarray(bank[ids])
    return kind.render(np.asarray(space.scene_codes[ids]), space.schema, kind.settings(**options))


class ModalityView(SceneView):
    """A scene drawn as its rendering in a modality that draws its items
    (:meth:`~bayes_concepts.modalities.Modality.draw_items`, stretched to the scene's place,
    which is shaped like one item), with the modality's note as the legend."""

    frame_widths = (2.4, 1.4)

    def __init__(self, kind, options: dict):
        self.kind, self.options = kind, dict(options)
        self.settings = kind.settings(**self.options)
        self.noun = kind.item_noun

    def cell(self) -> tuple:
        ih, iw = self.kind.drawn_size(self.settings)
        cell, cell_h = (1.8, 1.8 * ih / iw) if ih <= iw else (1.25 * iw / ih, 1.25)
        return cell, cell_h, cell_h + 0.35

    def layout(self) -> str:
        return f"scene rendered as a {self.noun}"

    def draw(self, axes, space, scene_ids) -> list:
        items = _renderings(space, self.kind, scene_ids, self.options)
        return self.kind.draw_items(axes, items, self.settings, fill=True)

    def legend(self, ax) -> None:
        legend_note(ax, self.kind.legend_note(self.settings))


def scene_view(space) -> SceneView:
    """The view of ``space``'s scenes in their own form: :class:`GridView` when its items are
    grids (``space.has_grids``), :class:`LabelView` when its schema has more values than a
    colour or a marker can keep apart (a pair space), else :class:`ObjectsView` of its schema."""
    if space.has_grids:
        return GridView(space)
    positioned = space.positions([0]) is not None if space.n_scenes else False
    repeated = () if positioned else glyphs_repeat(*scene_styles(space.schema))
    if repeated:  # two values would look alike: write them out
        return LabelView(space.schema, repeated)
    return ObjectsView(space.schema, positioned=positioned)


# ---------------------------------------------------------------------------------------
# one episode
# ---------------------------------------------------------------------------------------

def _scene_axes_label(label: int, topup: bool, relabelled: bool) -> str:
    text = "+" if label else MINUS
    if topup:
        text += " top-up"
    if relabelled:
        text += " relabelled"
    return text


def _top_concepts(oracle, scenes, labels, hard, top):
    oracle.fit([int(s) for s in scenes], labels, hard=hard)
    ids, probs = oracle.posterior()
    return [(int(i), float(p)) for i, p in zip(ids[:top], probs[:top])], (np.asarray(ids), np.asarray(probs))


def _episode_view_of(space, modality: str, image_size):
    """The view the episode view draws ``space``'s scenes with: ``"schema"`` their own form
    (:func:`scene_view`), else a modality whose items stand in a scene's place."""
    if modality == "schema":
        return scene_view(space)
    placed = [name for name, kind in modalities.items() if kind.draws and kind.in_episode_view]
    if modality not in placed:
        raise ValueError(f"episode view: modality must be 'schema' or {' or '.join(map(repr, placed))}, "
                         f"got {modality!r}")
    kind = modalities.get(modality)
    if not space.has_pictures:
        raise ValueError(f"episode view: a {space.kind} space has no {kind.item_noun}s (use modality='schema')")
    ih, iw = (int(v) for v in image_size)
    return ModalityView(kind, _size_options(kind, ih, iw))


def plot_episode(space, episodes, index: int = 0, strong_oracle=None, weak_oracle=None, top: int = 3, *,
                 modality: str = "schema", image_size=(160, 240), ax=None):
    """Episode ``index`` of ``episodes``: its support and query scenes drawn top-down (objects
    at their (x, y) bins, y bin 1 at the top), each titled with its label (+ / −, flagged
    when a top-up or relabelled), and a text box with the true concept and the ``top`` most
    probable concepts of the oracles (fitted here on the support when given).

    ``modality="image"`` shows every scene as its rendered picture instead
    (:func:`~bayes_concepts.scenes.render.render_scenes` at ``image_size`` = (height, width)
    pixels; read from the space's cached rendered bank of that size when there is one); any
    modality whose items stand in a scene's place
    (:attr:`~bayes_concepts.modalities.Modality.in_episode_view`) is drawn the same way, by
    its own :meth:`~bayes_concepts.modalities.Modality.draw_items`.  A space whose items are
    grids (``space.has_grids``: ConceptWorld's) draws each scene as its grid.

    How an object is drawn derives from the space's schema (:func:`~bayes_concepts.plots.object_encoding`,
    :func:`~bayes_concepts.plots.value_styles`, shown in the legend); for CURI: colour = object colour,
    square / circle / triangle = cube / sphere / cylinder, bigger = large, black ring =
    metal.  A schema without ``x``/``y`` draws a scene's objects in a row, in slot order.

    ``ax``: the Axes whose area the whole view is drawn in (each scene, the text box and
    the legend as inset axes: ``ax.child_axes``; it needs about the size a new figure would
    get, ``data.attrs["size_inches"]``); default a new figure of that size, the view's Axes
    covering it (the scenes are then axes of the figure).  Every scene's Axes has the gid
    ``"support:k"`` / ``"query:k"``.  Returns ``(ax, data)``: ``data`` one row per object
    drawn (set, position in the set, scene id, label, top-up and relabelled flags, the
    object's attribute values; the scene's mean pixel value ``image_mean`` when pictures are
    shown); ``data.attrs["concepts"]`` a DataFrame of the concepts in the text box (role,
    rank, concept id, readable form, posterior probability, whether a synonym of the true
    concept) and ``data.attrs["size_inches"]`` the view's (width, height)."""
    view = _episode_view_of(space, modality, image_size)
    e = int(index)
    if not 0 <= e < len(episodes):
        raise IndexError(f"episode {index} out of range (0..{len(episodes) - 1})")
    h = int(episodes.concept[e])
    hard = episodes.meta.get("negatives", "hard") == "hard"
    sets = {}
    for side in ("support", "query"):
        sets[side] = dict(scenes=np.asarray(getattr(episodes, f"{side}_scenes")[e]),
                          labels=np.asarray(getattr(episodes, f"{side}_labels")[e]),
                          topup=np.asarray(getattr(episodes, f"{side}_topup")[e]),
                          relabelled=np.asarray(getattr(episodes, f"{side}_relabelled")[e]))
    sup = sets["support"]
    classes = np.asarray(space.synonym_classes)
    concept_rows = [{"role": "true concept", "rank": 0, "concept": h, "readable": space.program(h).readable,
                     "probability": np.nan, "synonym_of_true": True}]
    text = [f"true concept (#{h}):  {space.program(h).readable}"]
    for name, oracle in (("strong", strong_oracle), ("weak", weak_oracle)):
        if oracle is None:
            continue
        tops, (ids, probs) = _top_concepts(oracle, sup["scenes"], sup["labels"], hard, top)
        true_mass = float(probs[classes[ids] == classes[h]].sum()) if len(ids) else 0.0
        text.append("")
        if not tops:
            text.append(f"{learner_label(name)}: no concept it knows fits the support")
            continue
        text.append(f"{learner_label(name)} (p(true concept or a synonym) = {true_mass:.2f}), "
                    f"top {len(tops)} of {len(ids):,} consistent concepts:")
        for r, (c, p) in enumerate(tops, 1):
            syn = classes[c] == classes[h]
            mark = "  [= true concept]" if c == h else ("  [synonym of the true concept]" if syn else "")
            line = f"    {r}.  p = {p:.3f}   {space.program(c).readable}{mark}"
            text.append(line if len(line) <= 160 else line[:156] + " ...")
            concept_rows.append({"role": f"{name} oracle", "rank": r, "concept": c,
                                 "readable": space.program(c).readable, "probability": p,
                                 "synonym_of_true": bool(syn)})
    rows = []
    n_per_set = max(len(s["scenes"]) for s in sets.values())
    ncol = 5 if n_per_set > 5 else max(1, n_per_set)
    nrow = int(np.ceil(n_per_set / ncol))
    # fixed layout in inches (constrained layout is slow with 50 axes)
    gap_x, head, set_head, block_gap, margin = 0.2, 0.6, 0.3, 0.5, 0.2
    cell, cell_h, row_h = view.cell()
    block_w = ncol * cell + (ncol - 1) * gap_x
    width = 2 * block_w + block_gap + 2 * margin
    legend_w = 2.6
    # the concepts' text wrapped to its box (left of the legend), the title to the figure: both inside the canvas
    chars = _line_chars(width - 2 * margin - legend_w - 0.3, 9.5)
    text = [w for line in text for w in (textwrap.wrap(line, chars, subsequent_indent=" " * 10,
                                                       drop_whitespace=False) or [""])]
    split = episodes.meta.get("split")
    what = f"split {split_label(split)}, " if split else ""
    view_title = wrap_lines(f"Episode {e} ({what}{episodes.meta.get('negatives', '?')} negatives); each "
                       f"{view.noun} is one {view.layout()}.\n"
                       "Title: label (+ / " + MINUS + "); top-up = random negative filling a hard set, relabelled = "
                       "random scene that satisfies the concept", width - 2 * margin, 11)
    head = max(head, 0.2 + 0.2 * (view_title.count("\n") + 1))
    text_h = max(2.0, 0.19 * len(text) + 0.6)
    height = head + set_head + nrow * row_h + 0.15 + text_h
    with figure_style():
        new_figure = ax is None
        if new_figure:  # the scenes as axes of the figure; ``ax`` an empty, invisible Axes covering it
            fig = Figure(figsize=(width, height))
            ax = fig.add_axes((0, 0, 1, 1), gid="episode_view")
            ax.axis("off")
            ax.patch.set_visible(False)
            add_axes, put_text = fig.add_axes, fig.text
        else:  # the view drawn inside ``ax``: its area is the canvas
            fig, canvas = ax.figure, ax
            canvas.axis("off")

            def add_axes(rect):
                return canvas.inset_axes(rect)

            def put_text(x, y, s, **kw):
                return canvas.text(x, y, s, transform=canvas.transAxes, **kw)

        def box(left, top, w, h):  # inches from the top-left corner -> figure fractions
            return [left / width, 1 - (top + h) / height, w / width, h / height]

        for b, side in enumerate(("support", "query")):
            s = sets[side]
            x0 = margin + b * (block_w + block_gap)
            n_pos = int(s["labels"].sum())
            put_text((x0 + block_w / 2) / width, 1 - (head + 0.05) / height,
                     f"{side} set: {n_pos} positive (+), {len(s['labels']) - n_pos} negative ({MINUS})",
                     ha="center", va="top", fontsize=12, fontweight="bold")
            scene_axes = [add_axes(box(x0 + c * (cell + gap_x), head + set_head + r * row_h + 0.3, cell, cell_h))
                          for r, c in (divmod(k, ncol) for k in range(len(s["scenes"])))]
            extras = view.draw(scene_axes, space, s["scenes"])
            for k, (sax, extra) in enumerate(zip(scene_axes, extras)):
                sid = int(s["scenes"][k])
                lab = int(s["labels"][k])
                title = _scene_axes_label(lab, bool(s["topup"][k]), bool(s["relabelled"][k]))
                sax.set_title(title, fontsize=13 if len(title) == 1 else 9, color="#1a7d36" if lab else "#b2182b",
                              fontweight="bold", pad=2)
                for spine in sax.spines.values():
                    spine.set_visible(True)
                    spine.set_edgecolor("#1a9641" if lab else "#d7191c")
                    spine.set_linewidth(view.frame_widths[0] if lab else view.frame_widths[1])
                sax.set_gid(f"{side}:{k}")
                objects = space.scene(sid)["objects"]
                placed = extra.get("objects") or [{}] * len(objects)  # where each object was drawn, if reported
                per_scene = {key: v for key, v in extra.items() if key != "objects"}
                for o, at in zip(objects, placed):
                    rows.append({"set": side, "position": k, "scene": sid, "label": lab,
                                 "topup": bool(s["topup"][k]), "relabelled": bool(s["relabelled"][k]),
                                 **{a: v for a, v in o.items() if a not in GENERATOR_LABELS}, **per_scene, **at})
        text_top = head + set_head + nrow * row_h + 0.15
        text_ax = add_axes(box(margin, text_top, width - 2 * margin - legend_w, text_h - 0.15))
        legend_ax = add_axes(box(width - margin - legend_w, text_top, legend_w, text_h - 0.15))
        text_ax.axis("off")
        text_ax.text(0.005, 0.97, "\n".join(text), va="top", ha="left", fontsize=9.5,
                     transform=text_ax.transAxes, gid="concepts_text",
                     bbox=dict(boxstyle="round,pad=0.5", fc="#f7f7f7", ec="0.6"))
        legend_ax.axis("off")
        view.legend(legend_ax)
        if new_figure:
            fig.suptitle(view_title, fontsize=11, y=1 - 0.08 / height, va="top")
        else:
            put_text(0.5, 1 - 0.08 / height, view_title, fontsize=11, ha="center", va="top")
    data = pd.DataFrame(rows)
    data.attrs["size_inches"] = (width, height)
    data.attrs["concepts"] = pd.DataFrame(concept_rows)
    return ax, data


def oracles_for(space, split, results=None):
    """Strong and weak oracles of ``split`` with the oracle settings recorded in ``results``
    (``attrs["oracle_settings"]``), else the defaults."""
    settings = None
    if results is not None and "oracle_settings" in results.attrs:
        settings = OracleSettings(**get_attr(results, "oracle_settings"))
    return strong_and_weak(space, split, settings)


# ---------------------------------------------------------------------------------------
# one support set in every modality
# ---------------------------------------------------------------------------------------

def plot_modalities(space, episodes, index: int = 0, axes=None, *, n_scenes: int = 5, height: int = 80,
                    width: int = 120):
    """``n_scenes`` support scenes of episode ``index`` (its first positives, then about
    ``n_scenes // 2`` of its first negatives, fewer when the set has fewer) as a learner sees them in each
    modality: row 1 the schema (objects drawn top-down at their bins, as in
    :func:`plot_episode`), then one row per modality that draws its items, in the modality
    registry's order, each drawn by the modality (a modality that takes ``height`` and
    ``width`` options at ``height × width``).  Built in: row 2 the rendered picture
    (:func:`~bayes_concepts.scenes.render.render_scenes`, ``height × width`` pixels), row 3 the
    log-mel spectrogram of the synthesised sound
    (:func:`~bayes_concepts.scenes.sound.log_mel_spectrogram`, 64 mel bands, time left to right).

    ``axes``: 3 × n Axes to draw on (one row more per further drawing modality), n the number
    of scenes drawn (``n_scenes`` unless the support set has fewer), any array-like read row by
    row into shape (3, n) (e.g. ``fig.subplots(3, n)``); default a new figure.  The legend of
    the schema row (below the panels) and the title go on their figure.  Returns ``(axes,
    data)``: ``axes`` the (3, n) array; ``data`` one row per scene drawn (set position, scene
    id, label, objects as text, and what each modality reports of it: the mean pixel value of
    the picture shown, the spectrogram's shape (bands, frames) and its maximum in natural-log
    power)."""
    e = int(index)
    if not 0 <= e < len(episodes):
        raise IndexError(f"episode {index} out of range (0..{len(episodes) - 1})")
    all_labels = np.asarray(episodes.support_labels[e])
    pos, neg = np.flatnonzero(all_labels == 1), np.flatnonzero(all_labels == 0)
    n_neg = min(len(neg), int(n_scenes) // 2)
    n_pos = min(len(pos), int(n_scenes) - n_neg)
    n_neg = min(len(neg), int(n_scenes) - n_pos)
    chosen = np.concatenate([pos[:n_pos], neg[:n_neg]])
    scenes, labels = np.asarray(episodes.support_scenes[e])[chosen], all_labels[chosen]
    n = len(scenes)
    codes = np.asarray(space.scene_codes[scenes])
    schema = space.schema
    kinds = [kind for _, kind in modalities.items() if kind.draws]
    settings = [kind.settings(**_size_options(kind, height, width)) for kind in kinds]
    renderings = [kind.render(codes, schema, s) for kind, s in zip(kinds, settings)]
    objects = ObjectsView(schema)
    n_rows = 1 + len(kinds)
    with figure_style():
        if axes is None:
            fig = Figure(figsize=(2.3 * n + 0.9, 0.6 + 2.0 * n_rows), layout="constrained")
            axes = np.asarray(fig.subplots(n_rows, n, squeeze=False))
        else:
            axes = given_axes(axes, n_rows * n, "plot_modalities").reshape(n_rows, n)
            fig = axes[0, 0].figure
        rows = []
        objects.draw(axes[0], space, scenes)
        for k in range(n):
            sid, lab = int(scenes[k]), int(labels[k])
            axes[0, k].set_title(f"{'+' if lab else MINUS}  scene {sid}", fontsize=10,
                                 color="#1a7d36" if lab else "#b2182b", fontweight="bold")
            rows.append({"position": k, "scene": sid, "label": lab,
                         "objects": "; ".join(" ".join(str(v) for v in o.values())
                                              for o in space.scene(sid)["objects"])})
        for r, (kind, s, items) in enumerate(zip(kinds, settings, renderings), 1):
            for row, drawn in zip(rows, kind.draw_items(axes[r], items, s)):
                row.update(drawn)
        axes[0, 0].set_ylabel("schema", fontsize=10)
        for r, (kind, s) in enumerate(zip(kinds, settings), 1):
            axes[r, 0].set_ylabel(kind.row_label(s), fontsize=10)
        fig.legend(handles=legend_handles(objects.encoding, objects.styles), loc="outside lower center", ncol=8,
                   fontsize=8, title="schema row: objects seen from above", title_fontsize=8, frameon=False)
        h = int(episodes.concept[e])
        count = {2: "two", 3: "three", 4: "four"}.get(n_rows, str(n_rows))
        fig.suptitle(f"Episode {e}: the support set in {count} modalities; true concept "
                     f"{space.program(h).readable}", fontsize=10)
    return axes, pd.DataFrame(rows)
