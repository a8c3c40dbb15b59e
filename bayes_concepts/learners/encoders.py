"""Scene encoders: a modality-specific first stage that turns scenes into a set of
per-object (or per-location) feature vectors, which any pooling of
:mod:`bayes_concepts.learners.poolings` turns into one scene embedding.

The interface every encoder keeps (an encoder is registered in :data:`encoders` under its
modality's name and is used by the same poolings; the built-in ``schema``, ``image`` and
``sound`` encoders are registered by :mod:`.modalities`):

``from_scenes(scenes) -> torch.Tensor``
    the raw model input of a batch of scenes given as
    :class:`~bayes_concepts.learners.features.SceneArrays` (codes, and where the space has
    them, each scene's own positions, relations and bank ids): for the schema encoder the
    codes padded to its slots (with each object's relation row appended when the scenes
    carry relations); an image encoder renders pixels (at the objects' 3-D positions where
    the scenes have them), a sound encoder synthesises clips; on the CPU.
    ``inputs(space, scenes)`` does the same for bank ids or scene dicts, and
    ``from_codes(codes)`` for attribute codes alone (scenes without positions or relations);
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
from .features import ABSENT, SceneArrays, SchemaLayout, relation_rows, scene_arrays
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

    def from_scenes(self, scenes: SceneArrays) -> torch.Tensor:
        """Raw model input of a batch of scenes (default: of their codes alone)."""
        return self.from_codes(scenes.codes)

    def from_codes(self, codes: np.ndarray) -> torch.Tensor:
        """Raw model input of scenes given as attribute codes int (n, S, A) alone."""
        raise NotImplementedError

    def inputs(self, space, scenes) -> torch.Tensor:
        """Raw model input of scenes given as bank ids of ``space`` or scene dicts."""
        return self.from_scenes(scene_arrays(space, scenes))

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
    relations : list of str
        The relations of a space whose scenes carry them (CLEVR's left, right, front,
        behind; empty: none).  Each object then also gets the relation features of
        :mod:`~bayes_concepts.learners.features` (its slot, and its relation bits to every
        slot); the model input of a scene is its codes with the relation rows appended
        (int8 (n, S, A + R·S)), the relations being the scene's own
        (:class:`~bayes_concepts.learners.features.SceneArrays`: ``space.relations(ids)`` for
        bank ids, a scene dict's ``relationships``), so two scenes with the same objects in
        other places get other features.

    Notes
    -----
    The relations of a relational space come from ``space.relations(ids)`` (the space keeps
    them: ``scene_relations.npy``); a space whose scenes should carry relations but that holds
    none is refused with a one-line :class:`LearnerError`, and so are scenes given by their
    codes alone (:meth:`from_codes`), which do not say where the objects stand.
    """

    modality = "schema"

    def __init__(self, feature_names, table_shapes, n_slots: int, object_dim: int = 96, hidden_ratio: int = 3,
                 relations=()):
        super().__init__()
        self.feature_names = [str(n) for n in feature_names]
        self.table_shapes = [tuple(int(v) for v in s) for s in table_shapes]
        self.n_objects = int(n_slots)
        self.out_dim = int(object_dim)
        self.hidden_ratio = int(hidden_ratio)
        self.relations = [str(r) for r in relations]
        n_features = sum(w for _, w in self.table_shapes)
        if self.relations:
            n_features += self.n_objects * (1 + len(self.relations))
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
        if layout.relations:
            _stored_relations(space)
        enc = cls(layout.names, [t.shape for t in layout.tables], layout.n_slots, object_dim, hidden_ratio,
                  relations=layout.relations)
        with torch.no_grad():
            for a, t in enumerate(layout.tables):
                getattr(enc, f"table_{a}").copy_(torch.from_numpy(t))
        return enc

    def config(self) -> dict:
        out = {"feature_names": self.feature_names, "table_shapes": [list(s) for s in self.table_shapes],
               "n_slots": self.n_objects, "object_dim": self.out_dim, "hidden_ratio": self.hidden_ratio}
        if self.relations:  # only then: the configs of models of spaces without relations stay as they were
            out["relations"] = list(self.relations)
        return out

    def check_space(self, space) -> None:
        layout = SchemaLayout.from_schema(space.schema)
        if layout.relations:
            _stored_relations(space)
        if list(layout.names) != self.feature_names:
            raise LearnerError("the space's scene schema gives the features " + ", ".join(layout.names) +
                               "; the model was built for " + ", ".join(self.feature_names))
        if layout.n_slots > self.n_objects:
            raise LearnerError(f"the space's scenes have up to {layout.n_slots} objects; the model was built "
                               f"for {self.n_objects}")

    def from_codes(self, codes: np.ndarray) -> torch.Tensor:
        """Codes int (n, S, A) padded with -1 to (n, n_slots, A), as an int8 tensor (scenes
        without relations; with relations, see :meth:`from_scenes`)."""
        if self.relations:
            raise LearnerError("this schema encoder reads each scene's relations (" + ", ".join(self.relations) +
                               "), which attribute codes alone do not give: give the scenes as bank ids or "
                               "scene dicts with their relationships")
        return self.from_scenes(SceneArrays(np.asarray(codes)))

    def from_scenes(self, scenes: SceneArrays) -> torch.Tensor:
        """Codes int (n, S, A) padded with -1 to (n, n_slots, A), as an int8 tensor; with
        relations, each object's row of the scene's own relations appended: int8
        (n, n_slots, A + R·n_slots)."""
        codes = np.asarray(scenes.codes)
        if codes.ndim != 3 or codes.shape[2] != len(self.table_shapes):
            raise LearnerError(f"scene codes: expected shape (n, slots, {len(self.table_shapes)}), got {codes.shape}")
        padded = self._pad(codes)
        if not self.relations:
            return torch.from_numpy(np.ascontiguousarray(padded, np.int8))
        if scenes.relations is None:
            raise LearnerError("this schema encoder reads each scene's relations (" + ", ".join(self.relations) +
                               "), and these scenes carry none")
        rows = relation_rows(self._pad_relations(scenes.relations, codes.shape[1]), len(self.relations),
                             self.n_objects)
        return torch.from_numpy(np.ascontiguousarray(np.concatenate([padded, rows], axis=2), np.int8))

    def _pad_relations(self, relations, n_given: int) -> np.ndarray:
        """Relations bool (n, R, s, s) of scenes with ``n_given`` slots -> (n, R, n_slots, n_slots):
        empty slots added hold no relation (cut slots are empty, as :meth:`_pad` checks)."""
        rel = np.asarray(relations)
        n, r = len(rel), len(self.relations)
        if rel.shape != (n, r, n_given, n_given):
            raise LearnerError(f"relations: expected shape ({n}, {r}, {n_given}, {n_given}), got {rel.shape}")
        k = min(n_given, self.n_objects)
        out = np.zeros((n, r, self.n_objects, self.n_objects), np.int8)
        out[:, :, :k, :k] = rel[:, :, :k, :k]
        return out

    def _pad(self, codes: np.ndarray) -> np.ndarray:
        """Codes int (n, S, A) padded with -1 (or cut) to (n, n_slots, A)."""
        s = codes.shape[1]
        if s > self.n_objects:
            if (codes[:, self.n_objects:, 0] >= 0).any():
                raise LearnerError(f"a scene has more than the {self.n_objects} objects the model was built for")
            codes = codes[:, : self.n_objects]
        elif s < self.n_objects:
            pad = np.full((len(codes), self.n_objects - s, codes.shape[2]), -1, np.int8)
            codes = np.concatenate([codes, pad], axis=1)
        return codes

    def features(self, codes: torch.Tensor) -> torch.Tensor:
        """The layout's features of codes int (B, S, A) (with relations: the model input of
        :meth:`from_codes`, (B, S, A + R·S)): float32 (B, S, F)."""
        n_attributes = len(self.table_shapes)
        idx = codes[..., :n_attributes].long() + 1
        out = torch.cat([getattr(self, f"table_{a}")[idx[..., a]] for a in range(n_attributes)], dim=-1)
        if not self.relations:
            return out
        rows = codes[..., n_attributes:].float()
        b, s = rows.shape[:2]
        bits = torch.where(rows < 0, torch.full_like(rows, 0.5), rows)
        onehot = torch.eye(s, dtype=out.dtype, device=out.device).expand(b, s, s)
        rel = torch.cat([onehot, bits.to(out.dtype)], dim=-1)
        rel = torch.where((codes[..., 0] >= 0).unsqueeze(-1), rel, torch.full_like(rel, ABSENT))
        return torch.cat([out, rel], dim=-1)

    def forward(self, codes: torch.Tensor) -> ObjectSet:
        return ObjectSet(self.net(self.features(codes)), codes[..., 0] >= 0)


def _stored_relations(space):
    """The space's relations accessor, or a one-line :class:`LearnerError` naming what is
    missing when the space's scenes should carry relations but it holds none."""
    names = ", ".join(space.schema.relations)
    if space.relations(slice(0, 1)) is None:
        raise LearnerError(f"the space's scenes carry relations ({names}) but it holds none (no scene_relations.npy: "
                           "a space saved before relations were kept); the schema encoder needs them for its relation "
                           "features: rebuild the space")
    return space.relations
