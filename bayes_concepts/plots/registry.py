"""The figures :func:`write_figures` writes: a registry each benchmark suite adds its own to.

A figure is registered in :data:`figures` as a function of :class:`FigureInputs` (what
``write_figures`` was given) returning ``{file name stem: draw}``: for each file to write,
a function of no arguments that draws the figure on a new figure and returns a ``plot_*``
function's ``(axes, data)``; an empty mapping when the figure does not apply to the inputs
(e.g. CLOSURE's families for results of another protocol).  ``write_figures`` writes them in
the registry's order: the built-in results, space and episode figures, then the suites'::

    from functools import partial
    from bayes_concepts.plots import figures

    @figures.register("my_gap")
    def my_gap_figures(given):
        '''My benchmark's figure of the gap (my_gap.png, .pdf, .csv).'''
        if given.results.attrs.get("protocol") != "my_protocol":
            return {}
        return {"my_gap": partial(plot_my_gap, given.results, n_boot=given.n_boot)}
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..registry import Registry

__all__ = ["FigureInputs", "figures", "write_figures"]

#: The figures :func:`write_figures` writes, by name: functions of :class:`FigureInputs` returning
#: ``{file name stem: draw}`` (module docstring).  Built in: the results, space and episode
#: figures (:mod:`.figure_set`) and the benchmark suites' own (:mod:`bayes_concepts.suites`).
figures = Registry("figure", builtins=("bayes_concepts.plots.figure_set", "bayes_concepts.suites:plots"))


@dataclass(frozen=True)
class FigureInputs:
    """What :func:`write_figures` was given, for the registered figures to draw from.

    ``results``: a results Dataset; ``space``: the space it was computed on; ``episodes``:
    episodes to draw one of (None: no episode view) and ``episode_index`` which; ``oracles``:
    ``(strong, weak)`` oracles whose top concepts the episode view shows, or None;
    ``n_boot``, ``seed``: the bootstrap of every interval drawn.
    """

    results: Any
    space: Any
    episodes: Any = None
    episode_index: int = 0
    oracles: tuple | None = None
    n_boot: int = 1000
    seed: int = 0

    @property
    def negatives(self) -> list:
        """The negatives settings the results hold (``["hard", "easy"]``)."""
        return [str(x) for x in self.results.negatives.values.tolist()]


def write_figures(results, space, out_dir, formats=("png", "pdf"), episodes=None, *, episode_index: int = 0,
                  oracles=None, n_boot: int = 1000, seed: int = 0, dpi: int = 150) -> list:
    """Write every figure of ``results`` (and ``space``) to ``out_dir``, each drawn by its
    ``plot_*`` function on a new figure: every figure registered in :data:`figures` that
    applies, in its order.  Built in: ``comp_gap_hard``,
    ``comp_gap_easy`` (when the results have easy negatives), ``gap_parts_hard`` /
    ``gap_parts_easy`` (results with the atom and compound oracles), ``entropy`` (hard negatives, or
    the first negatives setting present), ``synonym_classes``, ``scene_properties`` and,
    when ``episodes`` is given, ``episode_view`` (episode ``episode_index``; with the top
    concepts of ``oracles = (strong, weak)`` when given); a benchmark suite's own (CLOSURE's
    ``closure_families`` for results of protocol ``closure``).  One file per format (PNG at
    ``dpi``) and one CSV of the drawn values per figure (``<name>.csv``; the episode view
    also ``episode_view_concepts.csv``).  Returns the written paths."""
    from .style import figure_of, save_figure  # matplotlib and seaborn: loaded to draw, not to register
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    given = FigureInputs(results, space, episodes, episode_index, oracles, n_boot, seed)
    jobs = [job for _, make_jobs in figures.items() for job in make_jobs(given).items()]
    paths = []
    for name, draw in jobs:
        drawn, data = draw()
        fig = figure_of(drawn)
        for fmt in formats:
            p = out / f"{name}.{fmt}"
            save_figure(fig, p, fmt, dpi)
            paths.append(p)
        p = out / f"{name}.csv"
        data.to_csv(p, index=False)
        paths.append(p)
        extra = data.attrs.get("concepts")
        if extra is not None:
            p = out / f"{name}_concepts.csv"
            extra.to_csv(p, index=False)
            paths.append(p)
    return paths
