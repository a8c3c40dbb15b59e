"""Figures of a hypothesis space: its synonym classes and its scene bank's object properties.

``plot_synonym_classes``
    CURI Figure 13: how many synonym classes (concepts with identical truth values on
    the scene bank) have each size; log-scaled count axis.
``plot_scene_properties``
    CURI Figure 12: share of the scene bank's objects taking each value of each attribute.

:func:`~bayes_concepts.plots.write_figures` writes them (:mod:`.figure_set`).
"""
from __future__ import annotations

import matplotlib
import matplotlib.colors
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure  # built directly: no pyplot state, works under any (or no) display

from ..scenes.schema import GENERATOR_LABELS
from .objects import object_encoding, value_styles
from .style import figure_style, given_axes

__all__ = ["synonym_data", "plot_synonym_classes", "scene_property_data", "plot_scene_properties",
           "ATTRIBUTE_TITLES"]

ATTRIBUTE_TITLES = {"color": "colour", "shape": "shape", "material": "material", "size": "size",
                    "x": "x bin (1 = left of image)", "y": "y bin (1 = top of image)"}


def synonym_data(space) -> pd.DataFrame:
    """Number of synonym classes of each size (1 .. largest; sizes no class has are 0)."""
    sizes = np.bincount(np.asarray(space.synonym_classes, np.int64))
    sizes = sizes[sizes > 0]
    hist = np.bincount(sizes)[1:] if len(sizes) else np.zeros(0, np.int64)
    return pd.DataFrame({"class_size": np.arange(1, len(hist) + 1), "n_classes": hist.astype(np.int64),
                         "n_concepts": hist.astype(np.int64) * np.arange(1, len(hist) + 1)})


def plot_synonym_classes(space, *, ax=None):
    """CURI Figure 13: how many synonym classes have 1, 2, ... members (concepts whose truth
    values agree on every scene of the bank), one bar per class size; count axis log-scaled.

    ``ax``: the Axes to draw on; default a new figure.  Returns ``(ax, data)``: ``data`` =
    :func:`synonym_data`, one row per class size 1 .. largest: ``n_classes`` (the bar
    height; sizes no class has get no bar) and ``n_concepts`` (size × classes)."""
    data = synonym_data(space)
    n_classes = int(data["n_classes"].sum())
    with figure_style():
        if ax is None:
            ax = Figure(figsize=(7.5, 4.6), layout="constrained").subplots()
        shown = data[data.n_classes > 0]
        ax.bar(shown["class_size"], shown["n_classes"], width=0.8 if len(data) <= 60 else 1.0,
               color=sns.color_palette("deep")[0], edgecolor="white", linewidth=0.5, gid="synonym_bars")
        ax.set_yscale("log")
        ax.set_ylim(0.7, max(2.0, float(data["n_classes"].max())) * 2.0)
        ax.set_xlabel("synonym-class size (concepts with an identical truth-value signature)")
        ax.set_ylabel("number of synonym classes (log scale)")
        if len(data) <= 25:
            ax.set_xticks(data["class_size"])
        ax.set_xlim(0.3, len(data) + 0.7)
        single = int(data.loc[data.class_size == 1, "n_classes"].sum())
        ax.set_title(f"Synonymy of concepts: {space.n_concepts:,} concepts form {n_classes:,} classes on "
                     f"{space.n_scenes:,} scenes\n{100 * single / max(1, n_classes):.0f} % of classes have a "
                     f"single member; the largest has {len(data)}", fontsize=11)
    return ax, data



def scene_property_data(space) -> pd.DataFrame:
    """Objects of the scene bank per attribute value: count and share (%) of all objects."""
    codes = np.asarray(space.scene_codes)
    present = codes[:, :, 0] >= 0
    rows = []
    for a, attr in enumerate(space.schema.attributes):
        if attr.name in GENERATOR_LABELS:  # how a scene was generated, not a property of it
            continue
        vals = codes[:, :, a][present].astype(np.int64)
        counts = np.bincount(vals, minlength=attr.n_values)[: attr.n_values]
        total = counts.sum()
        for code, value in enumerate(attr.values):
            rows.append({"attribute": attr.name, "value": str(value), "code": code, "count": int(counts[code]),
                         "share": 100 * counts[code] / total if total else np.nan,
                         "uniform_share": 100 / attr.n_values})
    return pd.DataFrame(rows)


def plot_scene_properties(space, *, axes=None):
    """CURI Figure 12: one panel per attribute of the space's schema (CURI: colour, shape,
    material, size, x bin, y bin) with the share (%) of the scene bank's objects taking each
    value; dashed: the share if values were uniform.  The bars of the attribute the episode
    view draws as colour (:func:`object_encoding`) take its colours (:func:`value_styles`),
    the others one colour.

    ``axes``: at least one Axes per attribute, any shape, taken row by row in schema order
    (those left over are hidden); default a new figure of three columns.  The title goes on
    their figure.  Returns ``(axes, data)``: ``axes`` as given (an array) or the new
    (rows, 3) array; ``data``: :func:`scene_property_data`, one row per (attribute, value):
    ``count``, ``share`` (%, the bar height), ``uniform_share`` (the dashed line), plus
    ``bar_color`` (the bar's colour)."""
    data = scene_property_data(space)
    attrs = list(dict.fromkeys(data["attribute"])) if len(data) else []
    if not attrs:
        raise ValueError("scene properties: the space's scenes carry no property to plot (a ConceptWorld space's "
                         "scenes are grids; their only label, 'source', is how each was generated)")
    colour_attr = object_encoding(space.schema)["color"]
    plain = matplotlib.colors.to_hex(sns.color_palette("deep")[0])
    bar_colors = {a.name: [plain] * a.n_values for a in space.schema.attributes}
    if colour_attr is not None:
        attr = space.schema.attribute(colour_attr)
        styles = value_styles(attr, "color")
        bar_colors[colour_attr] = [styles[v] for v in attr.values]
    data["bar_color"] = [bar_colors[a][c] for a, c in zip(data["attribute"], data["code"])]
    ncol = 3
    nrow = int(np.ceil(len(attrs) / ncol))
    n_obj = int((np.asarray(space.scene_codes)[:, :, 0] >= 0).sum())
    with figure_style():
        if axes is None:
            axes = Figure(figsize=(11, 3.3 * nrow + 0.8), layout="constrained").subplots(nrow, ncol, squeeze=False)
        axes = np.asarray(axes, dtype=object)
        flat = given_axes(axes, len(attrs), "plot_scene_properties", at_least=True)
        fig = flat[0].figure
        for ax, attr in zip(flat, attrs):
            d = data[data.attribute == attr]
            ax.bar(np.arange(len(d)), d["share"], color=list(d["bar_color"]), edgecolor="0.2", linewidth=0.4,
                   gid=f"prop:{attr}")
            ax.axhline(d["uniform_share"].iloc[0], color="0.3", linestyle="--", linewidth=1)
            ax.grid(axis="x", visible=False)
            slanted = sum(len(v) for v in d["value"]) > 24  # long labels (CURI's colours) are slanted
            ax.set_xticks(np.arange(len(d)), d["value"], rotation=35 if slanted else 0,
                          ha="right" if slanted else "center")
            title = ATTRIBUTE_TITLES.get(attr, attr)
            if attr in ("x", "y"):  # the first bin's own name (CURI's release binned from 0)
                title = title.replace("(1 =", f"({d['value'].iloc[0]} =")
            ax.set_title(title, fontsize=11)
            ax.set_ylabel("share of objects (%)")
            ax.set_ylim(0, max(d["share"].max(), d["uniform_share"].iloc[0]) * 1.18)
        for ax in flat[len(attrs):]:
            ax.set_visible(False)
        fig.suptitle(f"Object properties in the scene bank ({space.n_scenes:,} scenes, {n_obj:,} objects); "
                     "dashed line: share if every value were equally common", fontsize=12)
    return axes, data
