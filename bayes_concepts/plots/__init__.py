"""Figures of the results Dataset, of a hypothesis space and of its episodes.

One convention, as in ArviZ: every ``plot_*`` function draws into the Axes it is given
(``ax=`` for one panel, ``axes=`` for a grid whose shape it documents), creates a figure
only when none is given (a :class:`matplotlib.figure.Figure` built directly, without
pyplot, so nothing depends on a display or a global figure registry), and returns
``(ax, data)``: the Axes drawn into (for a grid, a NumPy array of Axes of the documented
shape; the figure is ``ax.figure`` / ``axes.flat[0].figure``) and a tidy
:class:`pandas.DataFrame` holding exactly the numbers drawn (bar heights, interval ends,
counts).  A grid's shared legend and its title go on the figure that holds its axes.
Figures read only the results Dataset (:mod:`bayes_concepts.results`) and the space.

>>> axes, data = plot_comp_gap(ds)                                    # doctest: +SKIP
>>> axes, data = plot_entropies(ds)                                   # doctest: +SKIP
>>> ax, data = plot_synonym_classes(space)                            # doctest: +SKIP
>>> axes, data = plot_scene_properties(space)                         # doctest: +SKIP
>>> ax, data = plot_episode(space, episodes, 0, strong, weak)         # doctest: +SKIP
>>> axes, data = plot_modalities(space, episodes, 0)                  # doctest: +SKIP
>>> ax.figure.savefig("episode.png")                                  # doctest: +SKIP
>>> paths = write_figures(ds, space, "figures/")                      # doctest: +SKIP

By what they draw:

- :mod:`.results`: the results and the ladder (``plot_comp_gap``: CURI's Figure 5;
  ``plot_gap_parts``: the gap in its three parts; ``plot_entropies``: CURI ICML Figure 4;
  ``plot_ladder``: ladder profiles, and one rung against published models' difficulty);
- :mod:`.space`: the space (``plot_synonym_classes``: CURI Figure 13;
  ``plot_scene_properties``: CURI Figure 12);
- :mod:`.episodes`: episodes (``plot_episode``: one episode's support and query scenes with
  the oracles' top concepts; ``plot_modalities``: a support set as schema and in every
  modality, each modality drawing its own items);
- :mod:`.objects`: how a scene's objects are drawn from its schema;
- :mod:`.style`: the look and the helpers every figure shares (also :mod:`bayes_concepts.report`'s);
- :mod:`.registry`: :data:`figures`, the figures :func:`write_figures` writes (every figure
  above to PNG and PDF files, with a CSV of each one's ``data``), which a benchmark suite
  adds its own to.

A benchmark's own figures live in its suite (:mod:`bayes_concepts.suites`), e.g. CLOSURE's
families against its models' reported drops,
:func:`bayes_concepts.suites.closure.plots.plot_closure_families`.
"""
from __future__ import annotations

import importlib

#: Where each name this package offers is defined.  They are imported when first asked for (PEP 562),
#: so that a suite registering a figure in :data:`figures` (``from bayes_concepts.plots import
#: figures``) loads neither matplotlib nor seaborn (about 0.7 s) until a figure is drawn.
_WHERE = {
    **dict.fromkeys(("GridView", "ModalityView", "ObjectsView", "SceneView", "oracles_for", "plot_episode",
                     "plot_modalities", "scene_view"), "episodes"),
    **dict.fromkeys(("CHANNEL_ATTRIBUTES", "OBJECT_COLORS", "RING_STYLES", "SHAPE_MARKERS", "SIZE_POINTS",
                     "object_encoding", "value_styles"), "objects"),
    **dict.fromkeys(("FigureInputs", "figures", "write_figures"), "registry"),
    **dict.fromkeys(("ENTROPIES", "ENTROPY_LABELS", "GAP_PARTS_ORDER_ORACLES", "PART_STYLES", "comp_gap_data",
                     "entropy_data", "gap_parts_data", "ladder_data", "plot_comp_gap", "plot_entropies",
                     "plot_gap_parts", "plot_ladder", "write_ladder_figures"), "results"),
    **dict.fromkeys(("ATTRIBUTE_TITLES", "plot_scene_properties", "plot_synonym_classes", "scene_property_data",
                     "synonym_data"), "space"),
    **dict.fromkeys(("FALLBACK_FONTS", "LEARNER_COLORS", "LEARNER_NAMES", "METRIC_LABELS", "MINUS", "SPLIT_NAMES",
                     "bootstrap_mean", "fallback_fonts", "figure_of", "figure_style", "learner_color",
                     "learner_label", "split_label", "split_order"), "style"),
}


_MODULES = ("episodes", "figure_set", "labels", "objects", "registry", "results", "space", "style")


def __getattr__(name: str):
    if name in _MODULES:  # a submodule, as an attribute of the package (imported on first use)
        return importlib.import_module(f"{__name__}.{name}")
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE) | set(_MODULES))


#: ``plot_ladder`` and ``ladder_data`` are importable from here too, outside ``__all__`` as before
__all__ = ["SPLIT_NAMES", "split_label", "learner_label", "learner_color", "split_order", "bootstrap_mean",
           "plot_comp_gap", "plot_entropies", "plot_synonym_classes", "plot_scene_properties", "plot_episode",
           "plot_modalities", "write_figures", "comp_gap_data", "entropy_data",
           "plot_gap_parts", "gap_parts_data",
           "synonym_data", "scene_property_data", "object_encoding", "value_styles", "oracles_for",
           # the figures write_figures writes; how the episode view draws scenes; the shared look
           "figures", "FigureInputs", "scene_view", "SceneView", "ObjectsView", "GridView", "ModalityView",
           "figure_style", "figure_of", "fallback_fonts",
           # tables of names, colours and labels
           "FALLBACK_FONTS", "LEARNER_COLORS", "LEARNER_NAMES", "METRIC_LABELS", "MINUS", "OBJECT_COLORS",
           "SHAPE_MARKERS", "SIZE_POINTS", "RING_STYLES", "CHANNEL_ATTRIBUTES", "ATTRIBUTE_TITLES", "ENTROPIES",
           "ENTROPY_LABELS", "GAP_PARTS_ORDER_ORACLES", "PART_STYLES"]
