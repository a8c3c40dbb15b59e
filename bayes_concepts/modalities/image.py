"""The ``image`` modality: scenes ray traced as CLEVR-like pictures
(:func:`~bayes_concepts.scenes.render.render_scenes`).

Options: ``height``, ``width`` (pixels, default 80 × 120) and ``supersample`` (rays per
pixel along each axis, default 2).  A bank is uint8 (n_scenes, height, width, 3), RGB,
row 0 at the top, cached as ``image_<height>x<width>_ss<supersample>.npy``.  Its
fingerprint is the source of the renderer and of its camera.  Scenes of a schema with
relations (no ``x``/``y`` attributes) are placed by their objects' ``positions``.
"""
from __future__ import annotations

from types import MappingProxyType

import numpy as np

from ..scenes import camera
from ..scenes import render as renderer
from .base import Modality, modalities

__all__ = ["Image", "IMAGE"]


class Image(Modality):
    """Pictures: uint8 (height, width, 3) RGB per scene."""

    name = "image"
    summary = "scenes as CLEVR-like pictures, uint8 (height, width, 3) RGB"
    defaults = MappingProxyType({"height": renderer.DEFAULT_HEIGHT, "width": renderer.DEFAULT_WIDTH,
                                 "supersample": 2})
    dtype = np.dtype(np.uint8)
    sources = (renderer, camera)
    encoder_defaults = defaults
    in_episode_view = True
    item_noun = "picture"

    def make_settings(self, options: dict) -> dict:
        h, w, ss = renderer._check_resolution(options["height"], options["width"], options["supersample"])
        return {"height": int(h), "width": int(w), "supersample": int(ss)}

    def item_shape(self, settings: dict) -> tuple:
        return (settings["height"], settings["width"], 3)

    def render(self, codes, schema, settings: dict, positions=None) -> np.ndarray:
        """``positions``: the objects' 3-D centres, float (n, S, 3), which place them (a schema
        with relations has no ``x``/``y`` attributes; see :func:`~bayes_concepts.scenes.render.render_scenes`)."""
        return renderer.render_scenes(codes, schema, positions=positions, height=settings["height"],
                                      width=settings["width"], supersample=settings["supersample"])

    def file_name(self, settings: dict) -> str:
        return f"image_{settings['height']}x{settings['width']}_ss{settings['supersample']}.npy"

    def draw_items(self, axes, items, settings: dict, *, fill: bool = False) -> list:
        """Each picture as it is (``fill``: stretched to its Axes, smoothed); reports its mean
        pixel value (``image_mean``)."""
        drawn = []
        for ax, picture in zip(axes, items):
            if fill:
                ax.imshow(picture, interpolation="antialiased", aspect="auto")
            else:
                ax.imshow(picture, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
            drawn.append({"image_mean": float(np.asarray(picture).mean())})
        return drawn

    def row_label(self, settings: dict) -> str:
        return f"image\n{settings['height']}×{settings['width']}"

    def legend_note(self, settings: dict) -> str:
        return (f"pictures: {settings['height']}×{settings['width']} pixels, rendered\nfrom the scene codes "
                "(CLEVR-like);\nmetal shiny, rubber matte;\nx bins left to right, y bins far to near")


IMAGE = modalities.register(Image.name, Image())
