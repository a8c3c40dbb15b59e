"""Modalities: the ways a bank of scenes is rendered as arrays (pictures, sounds, ...).

Every modality is a :class:`Modality` object in the registry :data:`modalities`, and owns
everything that is particular to it:

* its **renderer**: :meth:`Modality.render` turns scene codes into an array (the built-in
  ones wrap :func:`~bayes_concepts.scenes.render.render_scenes` and
  :func:`~bayes_concepts.scenes.sound.synthesize_scenes`);
* the **options** a bank takes, their defaults and checks (:attr:`Modality.defaults`,
  :meth:`Modality.settings`: options -> the complete, JSON-able settings);
* its **cache format**: :attr:`Modality.dtype`, the shape of one scene's rendering
  (:meth:`Modality.item_shape`), the file name of a cached bank (:meth:`Modality.file_name`)
  and the renderer's :meth:`~Modality.fingerprint` (a changed renderer makes cached banks
  stale);
* its **encoder defaults** (:attr:`Modality.encoder_defaults`): the options the learners'
  encoder of that modality renders with unless told otherwise;
* its **drawing**: :meth:`Modality.draw_items` draws rendered items into matplotlib Axes
  (with :meth:`Modality.row_label`, :meth:`Modality.legend_note`, :meth:`Modality.drawn_size`
  and :attr:`Modality.in_episode_view`), so the figures
  (:func:`~bayes_concepts.plots.plot_modalities`, :func:`~bayes_concepts.plots.plot_episode`)
  show every modality that draws without naming any.  The drawing code calls methods of the
  Axes it is given and imports nothing above this package.

Built in: ``image`` (:mod:`.image`: uint8 (H, W, 3) pictures) and ``sound`` (:mod:`.sound`:
float32 (n_samples,) clips).  The cache of rendered banks in a saved space's ``rendered/``
folder (:mod:`bayes_concepts.engine.rendered`) stores whatever a modality renders, without
knowing any modality.

Adding a modality is one module with one registration; ``space.rendered_bank(name,
**options)`` then renders and caches it like the built-in ones::

    import numpy as np
    from types import MappingProxyType
    from bayes_concepts.modalities import Modality, modalities

    class Census(Modality):
        '''How many objects a scene holds, times ``scale``: int16 (1,) per scene.'''
        name = "census"
        defaults = MappingProxyType({"scale": 1})
        dtype = np.dtype(np.int16)

        def item_shape(self, settings):
            return (1,)

        def render(self, codes, schema, settings):
            counts = (np.asarray(codes)[:, :, 0] >= 0).sum(axis=1) * settings["scale"]
            return counts.astype(np.int16)[:, None]

    modalities.register(Census.name, Census())
    space.rendered_bank("census", scale=2)       # rendered/census_<settings key>.npy

Layering: this package sits above :mod:`bayes_concepts.scenes` and below
:mod:`bayes_concepts.engine`; it imports neither the engine, the language nor anything
built on them.
"""
from __future__ import annotations

from .base import Modality, ModalityError, modalities, settings_key

__all__ = ["Modality", "ModalityError", "modalities", "settings_key"]
