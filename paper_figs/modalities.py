"""Writes paper_figs/modalities.png: the support set of one concept-IID test episode of the
demo space as schema, rendered pictures and log-mel spectrograms
(:func:`bayes_concepts.plots.plot_modalities`).

    .venv/bin/python paper_figs/modalities.py [SPACE_DIR]   # default spaces/demo
"""
from __future__ import annotations

import sys
from pathlib import Path

from bayes_concepts.engine.space import HypothesisSpace
from bayes_concepts.episodes import EpisodeSampler
from bayes_concepts.plots import plot_modalities
from bayes_concepts.splits import curi_splits


def main(space_dir: str = "spaces/demo", episode_seed: int = 0, index: int = 0) -> Path:
    space = HypothesisSpace.load(space_dir)
    episodes = EpisodeSampler(space).sample(curi_splits(space)["concept_iid"].test, index + 1, "hard",
                                            seed=episode_seed)
    fig, _ = plot_modalities(space, episodes, index)
    out = Path(__file__).with_suffix(".png")
    fig.savefig(out, dpi=110)
    return out


if __name__ == "__main__":
    print(main(*sys.argv[1:2]))
