"""Scene encoders: a modality-specific first stage that turns scenes into a set of
per-object (or per-location) feature vectors, which any pooling of
:mod:`bayes_concepts.learners.poolings` turns into one scene embedding.

The interface every encoder keeps (an encoder is registered in :data:`encoders` under its
modality's name and is used by the same poolings; the built-in ``schema``, ``image`` and
``sound`` encoders are registered by :mod:`.modalities`):

``from_codes(codes) -> torch.Tensor``
    the raw model input of scenes given as attribute codes int8 (n, S, A) (see
    :mod:`bayes_concepts.scenes.codes`): here the codes themselves, padded to the
    encoder's slots; an image encoder renders pixels, a sound encoder synthesises
    clips; on the CPU.  ``inputs(space, scenes)`` does the same for bank ids or dicts;
``forward(inputs) -> ObjectSet``
    ``features`` float (B, O, K) and ``mask`` bool (B, O): which of the O slots hold
    an object; present slots come first in each row (a prefix), so a pooling may group
    scenes by their number of objects.  Per-location features of an image have every
    slot present;
``out_dim`` (K) and ``n_objects`` (O): what a pooling is built for;
``config() -> dict`` / ``from_config(dict)``: JSON-able constructor arguments, so a
saved model is rebuilt from its card and its weights alone;
``check_space(space)``: a clear error when a space's scenes do not fit the encoder.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from ..registry import Registry
from .features import SchemaLayout, scene_codes
from .protocol import LearnerError

#: Scene encoders by modality name: classes with ``from_space(space, **options)`` and
#: ``from_config(config)``.  The built-in ones (``schema``, ``image``, ``sound``) are
#: registered by :mod:`bayes_concepts.learners.modalities`, imported on the registry's first
#: use (this module does not import it).
encoders = Registry("scene encoder", builtins=("bayes_concepts.learners.modalities",))


class ObjectSet(NamedTuple):
    """A batch of scenes as sets of vectors: ``features`` float (B, O, K) and ``mask`` bool
    (B, O), True where a slot holds an object (present slots first in each row)."""

    features: torch.Tensor
    mask: torch.Tensor


class SceneEncoder(nn.Module):
    """Base class of scene encoders (see the module docstring)."""

    modality = "abstract"
    out_dim: int
    n_objects: int

    def from_codes(self, codes: np.ndarray) -> torch.Tensor:
        raise NotImplementedError

    def inputs(self, space, scenes) -> torch.Tensor:
        """Raw model input of scenes given as bank ids of ``space`` or scene dicts."""
        return self.from_codes(scene_codes(space, scenes))

    def config(self) -> dict:
        raise NotImplementedError

    @classmethod
    def from_config(cls, config: dict) -> "SceneEncoder":
        return cls(**config)

    def check_space(self, space) -> None:
        """Raise a :class:`LearnerError` if ``space``'s scenes cannot be encoded."""


class SchemaEncoder(SceneEncoder):
    """CURI's schema encoder (the ``schema`` entry of :data:`encoders`): each object's feature
    vector (:class:`SchemaLayout`: one-hot categorical attributes, normalised location;
    absent slots all -1) through a per-object two-layer network F -> hidden_ratio·F ->
    object_dim (CURI: 1×1 convolutions 19 -> 57 -> 96).

    Parameters
    ----------
    feature_names : list of str
        The layout's feature names (checked against a space's schema on use).
    table_shapes : list of (n_values + 1, width)
        Shapes of the per-attribute lookup tables (their values are buffers, saved with
        the weights).
    n_slots : int
        Object slots per scene.
    object_dim : int
        Output size per object (CURI: 96).
    hidden_ratio : int
        Hidden width as a multiple of the feature count (CURI: 3).
    """

    modality = "schema"

    def __init__(self, feature_names, table_shapes, n_slots: int, object_dim: int = 96, hidden_ratio: int = 3):
        super().__init__()
        self.feature_names = [str(n) for n in feature_names]
        self.table_shapes = [tuple(int(v) for v in s) for s in table_shapes]
        self.n_objects = int(n_slots)
        self.out_dim = int(object_dim)
        self.hidden_ratio = int(hidden_ratio)
        n_features = sum(w for _, w in self.table_shapes)
        if n_features != len(self.feature_names):
            raise LearnerError(f"schema encoder: {len(self.feature_names)} feature names for tables of "
                               f"{n_features} columns")
        for a, shape in enumerate(self.table_shapes):
            self.register_buffer(f"table_{a}", torch.zeros(shape))
        hidden = self.hidden_ratio * n_features
        self.net = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, self.out_dim))

    @classmethod
    def from_space(cls, space, object_dim: int = 96, hidden_ratio: int = 3) -> "SchemaEncoder":
        layout = SchemaLayout.from_schema(space.schema)
        enc = cls(layout.names, [t.shape for t in layout.tables], layout.n_slots, object_dim, hidden_ratio)
        with torch.no_grad():
            for a, t in enumerate(layout.tables):
                getattr(enc, f"table_{a}").copy_(torch.from_numpy(t))
        return enc

    def config(self) -> dict:
        return {"feature_names": self.feature_names, "table_shapes": [list(s) for s in self.table_shapes],
                "n_slots": self.n_objects, "object_dim": self.out_dim, "hidden_ratio": self.hidden_ratio}

    def check_space(self, space) -> None:
        layout = SchemaLayout.from_schema(space.schema)
        if list(layout.names) != self.feature_names:
            raise LearnerError("the space's scene schema gives the features " + ", ".join(layout.names) +
                               "; the model was built for " + ", ".join(self.feature_names))
        if layout.n_slots > self.n_objects:
            raise LearnerError(f"the space's scenes have up to {layout.n_slots} objects; the model was built "
                               f"for {self.n_objects}")

    def from_codes(self, codes: np.ndarray) -> torch.Tensor:
        """Codes int (n, S, A) padded with -1 to (n, n_slots, A), as an int8 tensor."""
        codes = np.asarray(codes)
        if codes.ndim != 3 or codes.shape[2] != len(self.table_shapes):
            raise LearnerError(f"scene codes: expected shape (n, slots, {len(self.table_shapes)}), got {codes.shape}")
        s = codes.shape[1]
        if s > self.n_objects:
            if (codes[:, self.n_objects:, 0] >= 0).any():
                raise LearnerError(f"a scene has more than the {self.n_objects} objects the model was built for")
            codes = codes[:, : self.n_objects]
        elif s < self.n_objects:
            pad = np.full((len(codes), self.n_objects - s, codes.shape[2]), -1, np.int8)
            codes = np.concatenate([codes, pad], axis=1)
        return torch.from_numpy(np.ascontiguousarray(codes, np.int8))

    def features(self, codes: torch.Tensor) -> torch.Tensor:
        """The layout's features of codes int (B, S, A): float32 (B, S, F)."""
        idx = codes.long() + 1
        return torch.cat([getattr(self, f"table_{a}")[idx[..., a]] for a in range(len(self.table_shapes))], dim=-1)

    def forward(self, codes: torch.Tensor) -> ObjectSet:
        return ObjectSet(self.net(self.features(codes)), codes[..., 0] >= 0)
