"""Writes paper_figs/modalities.png: the support set of one concept-IID test episode of the
demo space in the three modalities a learner can be given -- schema (objects at their
location bins), rendered picture and log-mel spectrogram of the synthesised sound
(:func:`bayes_concepts.plots.plot_modalities`): all five positives and the first hard
negatives, one column per scene.

    .venv/bin/python paper_figs/modalities.py [SPACE_DIR]   # default spaces/demo
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from bayes_concepts.spaces.hypothesis_space import HypothesisSpace
from bayes_concepts.episodes import EpisodeSampler
from bayes_concepts.plots import plot_modalities
from bayes_concepts.scenes.sound import SoundSettings, _hz_to_mel
from bayes_concepts.splits import curi_splits

N_SCENES = 9                # plot_modalities takes n // 2 negatives: 5 positives + 4 negatives
HEIGHT, WIDTH = 160, 240    # CURI's picture size (the learners' default is 80 x 120)
N_MELS = 64


def _band_of(hz: float, rate: int) -> float:
    """Where a frequency sits on the spectrogram's mel-band axis (band k spans [k, k+1])."""
    lo, hi = _hz_to_mel(0.0), _hz_to_mel(rate / 2)
    return float((_hz_to_mel(hz) - lo) / (hi - lo) * (N_MELS + 1) - 0.5)


def main(space_dir: str = "spaces/demo", episode_seed: int = 0, index: int = 0) -> Path:
    space = HypothesisSpace.load(space_dir)
    episodes = EpisodeSampler(space).sample(curi_splits(space)["concept_iid"].test, index + 1, "hard",
                                            seed=episode_seed)
    fig = Figure(figsize=(2.05 * N_SCENES + 1.2, 6.6), layout="constrained")
    axes = np.asarray(fig.subplots(3, N_SCENES, squeeze=False))
    _, data = plot_modalities(space, episodes, index, axes=axes, n_scenes=N_SCENES, height=HEIGHT, width=WIDTH)
    labels = np.asarray(episodes.support_labels[index])
    n_pos, n_neg = int(data["label"].sum()), int((data["label"] == 0).sum())
    rate = SoundSettings().rate
    ticks = [250, 500, 1000, 2000, 3000]
    for k, ax in enumerate(axes[2]):
        ax.set_yticks([_band_of(f, rate) for f in ticks], [f"{f:,}" if k == 0 else "" for f in ticks])
        ax.tick_params(axis="y", labelsize=7, length=2)
        ax.set_ylim(0, N_MELS)
    axes[2, 0].set_ylabel("sound: log-mel\nfrequency (Hz)", fontsize=10)
    axes[1, 0].set_ylabel(f"image\n{HEIGHT}×{WIDTH} pixels", fontsize=10)
    h = int(episodes.concept[index])
    fig.suptitle(f"One episode (Concept IID test, hard negatives): {n_pos} positive (+) and {n_neg} of the "
                 f"{int((labels == 0).sum())} negative ({chr(0x2212)}) support scenes, each as schema, "
                 f"picture and sound\ntrue concept: {space.program(h).readable}", fontsize=11)
    out = Path(__file__).with_suffix(".png")
    fig.savefig(out, dpi=110, metadata={"Software": None})
    return out


if __name__ == "__main__":
    print(main(*sys.argv[1:2]))
