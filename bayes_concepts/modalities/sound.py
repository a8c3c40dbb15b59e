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


class Sound(Modality):
    """Sounds: float32 (n_samples,) per scene at ``settings["rate"]`` Hz."""

    name = "sound"
    summary = "scenes as synthesised clips, float32 (n_samples,) in [-1, 1]"
    defaults = MappingProxyType({"settings": None})
    dtype = np.dtype(np.float32)
    sources = (synthesiser,)
    encoder_defaults = MappingProxyType({"settings": dataclasses.asdict(SoundSettings())})

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


SOUND = modalities.register(Sound.name, Sound())
