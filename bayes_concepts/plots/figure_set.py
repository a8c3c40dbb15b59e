"""The figures :func:`~bayes_concepts.plots.write_figures` writes of any benchmark's results,
registered in :data:`~bayes_concepts.plots.figures` in the order they are written.

Imported by the registry on its first use, never by the package itself: registering fills
the registry, which imports the benchmark suites (:mod:`bayes_concepts.suites`), whose
figures draw with this package, so it must be whole by then.  Each entry imports its ``plot_*``
function when it is asked for its figures: registering a figure (a suite's, a plugin's) loads
neither matplotlib nor seaborn.
"""
from __future__ import annotations

from functools import partial

from ..scenes.schema import GENERATOR_LABELS
from .registry import figures

__all__: list = []


@figures.register("comp_gap")
def comp_gap_figures(given) -> dict:
    """CURI's Figure 5 per negatives setting the results hold: ``comp_gap_hard``, ``comp_gap_easy``."""
    from .results import plot_comp_gap
    return {f"comp_gap_{neg}": partial(plot_comp_gap, given.results, neg, given.n_boot, given.seed)
            for neg in ("hard", "easy") if neg in given.negatives}


@figures.register("gap_parts")
def gap_parts_figures(given) -> dict:
    """The gap in parts per negatives setting (``gap_parts_hard``, ``gap_parts_easy``), for
    results with the atom and compound oracles."""
    from .results import plot_gap_parts
    from .style import result_learners
    if not {"atom", "compound"} <= set(result_learners(given.results)):
        return {}
    return {f"gap_parts_{neg}": partial(plot_gap_parts, given.results, neg, "ap", given.n_boot, given.seed)
            for neg in ("hard", "easy") if neg in given.negatives}


@figures.register("entropy")
def entropy_figures(given) -> dict:
    """The oracles' entropies (``entropy``), with hard negatives or the first setting the results hold."""
    from .results import plot_entropies
    negatives = "hard" if "hard" in given.negatives else given.negatives[0]
    return {"entropy": partial(plot_entropies, given.results, negatives, given.n_boot, given.seed)}


@figures.register("synonym_classes")
def synonym_figures(given) -> dict:
    """The space's synonym classes (``synonym_classes``)."""
    from .space import plot_synonym_classes
    return {"synonym_classes": partial(plot_synonym_classes, given.space)}


@figures.register("scene_properties")
def scene_property_figures(given) -> dict:
    """The scene bank's object properties (``scene_properties``), when its scenes have any (a
    ConceptWorld space's have none: their only label is how each was generated)."""
    if not any(n not in GENERATOR_LABELS for n in given.space.schema.names):
        return {}
    from .space import plot_scene_properties
    return {"scene_properties": partial(plot_scene_properties, given.space)}


@figures.register("episode_view")
def episode_figures(given) -> dict:
    """The episode view (``episode_view``, with ``episode_view_concepts.csv``), when episodes are given."""
    if given.episodes is None:
        return {}
    from .episodes import plot_episode
    strong, weak = given.oracles if given.oracles is not None else (None, None)
    return {"episode_view": partial(plot_episode, given.space, given.episodes, given.episode_index, strong, weak)}
