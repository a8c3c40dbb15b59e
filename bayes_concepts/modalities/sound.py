"""The ``sound`` modality: scenes synthesised as clips
(:func:`~bayes_concepts.scenes.sound.synthesize_scenes`).

Option: ``settings``, a :class:`~bayes_concepts.scenes.sound.SoundSettings` or a dict of
some of its fields (default: its defaults, 2 s at 8 kHz).  A bank is float32
(n_scenes, n_samples), mono samples in [-1, 1], cached as
``sound_<rate>hz_<settings key>.npy``.  Its fingerprint is the synthesiser's source.
"""
from __future__ import annotations

import dataclasses
from types import MappingProxyType

import numpy as np

from ..scenes import sound as synthesiser
from ..scenes.sound import SoundSettings
from .base import Modality, ModalityError, modalities, settings_key

__all__ = ["Sound", "SOUND"]

_FIELDS = tuple(f.name for f in dataclasses.fields(SoundSettings))
#: mel bands of the spectrograms a figure draws of a clip
SPECTROGRAM_BANDS = 64


class Sound(Modality):
    """Sounds: float32 (n_samples,) per scene at ``settings["rate"]`` Hz."""

    name = "sound"
    summary = "scenes as synthesised clips, float32 (n_samples,) in [-1, 1]"
    defaults = MappingProxyType({"settings": None})
    dtype = np.dtype(np.float32)
    sources = (synthesiser,)
    encoder_defaults = MappingProxyType({"settings": dataclasses.asdict(SoundSettings())})
    item_noun = "spectrogram"

    def make_settings(self, options: dict) -> dict:
        settings = options["settings"]
        if settings is None:
            settings = SoundSettings()
        elif isinstance(settings, dict):
            unknown = sorted(set(settings) - set(_FIELDS))
            if unknown:
                raise ModalityError(f"unknown sound settings {unknown} (expected some of {', '.join(_FIELDS)})")
            settings = SoundSettings(**settings)
        elif not isinstance(settings, SoundSettings):
            raise ModalityError(f"settings must be a SoundSettings or a dict, got {type(settings).__name__}")
        return dataclasses.asdict(settings)

    def item_shape(self, settings: dict) -> tuple:
        return (SoundSettings(**settings).n_samples,)

    def render(self, codes, schema, settings: dict) -> np.ndarray:
        return synthesiser.synthesize_scenes(codes, schema, SoundSettings(**settings))

    def file_name(self, settings: dict) -> str:
        return f"sound_{settings['rate']}hz_{settings_key(settings)}.npy"

    def draw_items(self, axes, items, settings: dict, *, fill: bool = False) -> list:
        """Each clip as its log-mel spectrogram (:data:`SPECTROGRAM_BANDS` bands, time left to
        right in seconds), all on one colour scale (the 5th percentile to the maximum of them
        all); reports each one's shape (bands, frames) and maximum in natural-log power."""
        spectrograms = synthesiser.log_mel_spectrogram(np.asarray(items), settings["rate"], n_mels=SPECTROGRAM_BANDS)
        lo, hi = float(np.percentile(spectrograms, 5)), float(spectrograms.max())
        drawn = []
        for ax, spectrogram in zip(axes, spectrograms):
            ax.grid(False)
            ax.imshow(spectrogram, origin="lower", aspect="auto", cmap="magma", vmin=lo, vmax=hi,
                      extent=(0.0, settings["duration"], 0, spectrograms.shape[1]))
            ax.set_yticks([])
            ax.set_xlabel("time (s)", fontsize=8)
            ax.tick_params(labelsize=7)
            drawn.append({"spectrogram_shape": spectrogram.shape, "spectrogram_max": float(spectrogram.max())})
        return drawn

    def row_label(self, settings: dict) -> str:
        return f"sound\nlog-mel ({SPECTROGRAM_BANDS} bands)"

    def legend_note(self, settings: dict) -> str:
        return (f"spectrograms: log-mel, {SPECTROGRAM_BANDS} bands,\n{settings['duration']:g} s clips at "
                f"{settings['rate']} Hz")


SOUND = modalities.register(Sound.name, Sound())
