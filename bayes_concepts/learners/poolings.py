"""Poolings: a set of object vectors (:class:`~bayes_concepts.learners.encoders.ObjectSet`,
float (B, O, K) with a presence mask) -> one scene embedding float (B, N).

CURI's four (seed paper, Appendix F; sizes are arguments, defaults are CURI's):

``average``      masked mean over objects, then an MLP K -> 256 -> 512 -> 384 -> N
                 (linear, batch norm, ReLU in the hidden layers);
``concat``       the O object vectors (absent ones zeroed) and the presence mask
                 concatenated, then an MLP O·K + O -> 256 -> 512 -> 256 -> N;
``relnet``       relation network: g over every ordered pair (i, j) of present objects
                 (i = j included), g = 2K -> 256 -> 256 -> 256 -> 256 with ReLU after each
                 layer (``g_norm=True``: batch norm before each ReLU, as CURI's Appendix F
                 gives it; off by default, the CPU profile's choice), summed over pairs, then f = 256 -> 256 -> 256 -> N (linear, ReLU,
                 batch norm in the hidden layers);
``transformer``  4 layers of 2-head self-attention (feed-forward 512) over the present
                 objects, then max, min, sum and mean over objects concatenated and
                 projected linearly to N.

The relation network's first layer is linear in the concatenated pair [o_i, o_j], so it
is computed once per object (W_a o_i and W_b o_j) and added per pair; pairs are formed
only among present objects, all scenes of a batch packed into one list of pair rows
(no padding pairs, no per-group loops), and summed per scene in float32.  :meth:`RelationPooling.forward_reference` is the direct form (every pair
concatenated, then the MLP), kept as its specification and compared in the tests.
"""
from __future__ import annotations

import torch
from torch import nn

from ..registry import Registry
from .encoders import ObjectSet
from .protocol import LearnerError

#: Poolings by name: classes ``(in_dim, n_objects, out_dim, **options)`` with ``config()``.
poolings = Registry("pooling")


def mlp(dims, order: str = "bn_relu") -> nn.Sequential:
    """Linear layers dims[0] -> ... -> dims[-1]; after each hidden layer batch norm then
    ReLU (``bn_relu``) or ReLU then batch norm (``relu_bn``); the last layer is linear."""
    layers = []
    for i in range(len(dims) - 1):
        layers.append(nn.Linear(dims[i], dims[i + 1]))
        if i < len(dims) - 2:
            if order == "bn_relu":
                layers += [nn.BatchNorm1d(dims[i + 1]), nn.ReLU()]
            else:
                layers += [nn.ReLU(), nn.BatchNorm1d(dims[i + 1])]
    return nn.Sequential(*layers)


class Pooling(nn.Module):
    """Base class: ``forward(ObjectSet) -> (B, out_dim)``; ``config()`` gives the JSON-able
    keyword arguments that rebuild it."""

    def __init__(self, in_dim: int, n_objects: int, out_dim: int):
        super().__init__()
        self.in_dim, self.n_objects, self.out_dim = int(in_dim), int(n_objects), int(out_dim)

    def config(self) -> dict:
        return {"in_dim": self.in_dim, "n_objects": self.n_objects, "out_dim": self.out_dim}


@poolings.register("average")
class AveragePooling(Pooling):
    def __init__(self, in_dim: int, n_objects: int, out_dim: int = 256, hidden=(256, 512, 384)):
        super().__init__(in_dim, n_objects, out_dim)
        self.hidden = [int(h) for h in hidden]
        self.mlp = mlp([self.in_dim, *self.hidden, self.out_dim], "bn_relu")

    def config(self) -> dict:
        return {**super().config(), "hidden": self.hidden}

    def forward(self, objects: ObjectSet) -> torch.Tensor:
        m = objects.mask.unsqueeze(-1).to(objects.features.dtype)
        mean = (objects.features * m).sum(1) / m.sum(1).clamp(min=1)
        return self.mlp(mean)


@poolings.register("concat")
class ConcatPooling(Pooling):
    def __init__(self, in_dim: int, n_objects: int, out_dim: int = 256, hidden=(256, 512, 256)):
        super().__init__(in_dim, n_objects, out_dim)
        self.hidden = [int(h) for h in hidden]
        self.mlp = mlp([self.n_objects * self.in_dim + self.n_objects, *self.hidden, self.out_dim], "bn_relu")

    def config(self) -> dict:
        return {**super().config(), "hidden": self.hidden}

    def forward(self, objects: ObjectSet) -> torch.Tensor:
        f, mask = objects
        if f.shape[1] != self.n_objects:
            raise LearnerError(f"concat pooling: built for {self.n_objects} objects, got {f.shape[1]}")
        m = mask.to(f.dtype)
        return self.mlp(torch.cat([(f * m.unsqueeze(-1)).flatten(1), m], dim=1))


#: pair rows are padded to a multiple of this (oneDNN builds a kernel per matrix shape; a new
#: pair count every batch would build new ones every step)
PAIR_BUCKET = 1024


def pair_index(counts: torch.Tensor) -> tuple:
    """Ordered pairs (i, j) of objects within each scene, i = j included, for scenes with
    ``counts`` (B,) present objects listed scene after scene: int64 (scene, i, j) per pair,
    i and j indexing the flat list of present objects, pairs of one scene contiguous."""
    counts = counts.long()
    offsets = torch.cumsum(counts, 0) - counts
    n_pairs = counts * counts
    scene = torch.repeat_interleave(torch.arange(len(counts), device=counts.device), n_pairs)
    first = torch.cumsum(n_pairs, 0) - n_pairs
    r = torch.arange(len(scene), device=counts.device) - first.index_select(0, scene)
    n = counts.index_select(0, scene)
    base = offsets.index_select(0, scene)
    return scene, base + torch.div(r, n, rounding_mode="floor"), base + r % n


@poolings.register("relnet")
class RelationPooling(Pooling):
    def __init__(self, in_dim: int, n_objects: int, out_dim: int = 256, g_hidden=(256, 256, 256), g_out: int = 256,
                 f_hidden=(256, 256), g_norm: bool = False):
        super().__init__(in_dim, n_objects, out_dim)
        self.g_hidden, self.g_out, self.f_hidden = [int(h) for h in g_hidden], int(g_out), [int(h) for h in f_hidden]
        if not isinstance(g_norm, bool):
            raise LearnerError(f"relnet pooling: g_norm must be true or false, got {g_norm!r}")
        self.g_norm = g_norm
        g_dims = [*self.g_hidden, self.g_out]
        self.g_first = nn.Linear(2 * self.in_dim, g_dims[0])  # on [o_i, o_j]; applied factorised
        self.g_rest = nn.ModuleList(nn.Linear(a, b) for a, b in zip(g_dims[:-1], g_dims[1:]))
        # g_norm (CURI's Appendix F): batch norm between each of g's linear layers and its ReLU,
        # its statistics taken over the pair rows of present objects only
        self.g_norms = nn.ModuleList(nn.BatchNorm1d(d) for d in g_dims) if g_norm else None
        self.f = mlp([self.g_out, *self.f_hidden, self.out_dim], "relu_bn")

    def config(self) -> dict:
        return {**super().config(), "g_hidden": self.g_hidden, "g_out": self.g_out, "f_hidden": self.f_hidden,
                **({"g_norm": True} if self.g_norm else {})}

    def _norm(self, layer: int, h: torch.Tensor, n_rows: int) -> torch.Tensor:
        """Batch norm ``layer`` of g on the first ``n_rows`` rows of ``h`` (the real pairs); the
        padding rows after them pass through unnormalised (they are discarded)."""
        if n_rows == len(h):
            return self.g_norms[layer](h)
        if n_rows == 0:
            return h
        return torch.cat([self.g_norms[layer](h[:n_rows]), h[n_rows:]])

    def _g_tail(self, h: torch.Tensor, n_rows: int | None = None) -> torch.Tensor:
        """g's layers after the first, on pair rows ``h`` float (P, H) already through layer 1
        (and its ReLU); ``n_rows``: the real rows among them (default all)."""
        n_rows = len(h) if n_rows is None else n_rows
        for k, layer in enumerate(self.g_rest, 1):
            h = layer(h)
            h = torch.relu_(self._norm(k, h, n_rows) if self.g_norms is not None else h)
        return h

    def pair_sums(self, objects: ObjectSet) -> torch.Tensor:
        """Σ over ordered pairs of present objects of g(o_i, o_j): float32 (B, g_out).

        Packed: the present objects of the batch in one list (P, K), layer 1 as two
        per-object projections (P, H), every pair of one scene as a row gathered from
        them (no padding pairs, no per-group slices), g's other layers on the pair rows,
        and one scatter-add of the pair rows into their scenes."""
        f, mask = objects
        b, o, k = f.shape
        flat = mask.reshape(-1)
        present = f.reshape(b * o, k)[flat] if not bool(flat.all()) else f.reshape(b * o, k)
        w_i, w_j = self.g_first.weight[:, :k], self.g_first.weight[:, k:]
        left = nn.functional.linear(present, w_i, self.g_first.bias)  # (P, H): the i-part of layer 1
        right = nn.functional.linear(present, w_j)  # (P, H): the j-part
        scene, i, j = pair_index(mask.sum(1))
        pad = -len(scene) % PAIR_BUCKET if len(present) else 0
        if pad:  # rows of a discarded extra scene: the matrix shapes repeat, so their kernels are reused
            scene = torch.cat([scene, scene.new_full((pad,), b)])
            i, j = torch.cat([i, i.new_zeros(pad)]), torch.cat([j, j.new_zeros(pad)])
        h = left.index_select(0, i) + right.index_select(0, j)
        n_rows = len(scene) - pad
        h = self._g_tail(torch.relu(self._norm(0, h, n_rows) if self.g_norms is not None else h), n_rows)
        out = torch.zeros(b + 1, h.shape[1], dtype=torch.float32, device=h.device)
        return out.index_add_(0, scene, h.float())[:b]

    def forward(self, objects: ObjectSet) -> torch.Tensor:
        return self.f(self.pair_sums(objects))

    def pair_sums_reference(self, objects: ObjectSet) -> torch.Tensor:
        """The direct form of :meth:`pair_sums`: every pair concatenated, g applied, summed
        over the pairs of present objects (the specification; slow)."""
        f, mask = objects
        b, o, k = f.shape
        pairs = torch.cat([f.unsqueeze(2).expand(b, o, o, k), f.unsqueeze(1).expand(b, o, o, k)], dim=-1)
        keep = (mask.unsqueeze(2) & mask.unsqueeze(1)).reshape(b, o * o, 1)
        if self.g_norms is None:
            h = self._g_tail(torch.relu(self.g_first(pairs.reshape(b * o * o, 2 * k))))
            return (h.reshape(b, o * o, -1) * keep.to(h.dtype)).sum(1).float()
        # with batch norm only the pairs of present objects may enter its statistics
        rows = pairs.reshape(b * o * o, 2 * k)[keep.reshape(-1)]
        h = self._g_tail(torch.relu(self.g_norms[0](self.g_first(rows))))
        full = h.new_zeros(b * o * o, h.shape[1])
        full[keep.reshape(-1)] = h
        return full.reshape(b, o * o, -1).sum(1).float()

    def forward_reference(self, objects: ObjectSet) -> torch.Tensor:
        return self.f(self.pair_sums_reference(objects))


@poolings.register("transformer")
class TransformerPooling(Pooling):
    def __init__(self, in_dim: int, n_objects: int, out_dim: int = 256, heads: int = 2, layers: int = 4,
                 feedforward: int = 512, dropout: float = 0.1):
        super().__init__(in_dim, n_objects, out_dim)
        if self.in_dim % int(heads):
            raise LearnerError(f"transformer pooling: the object size {self.in_dim} is not divisible by "
                               f"{heads} heads")
        self.heads, self.layers, self.feedforward, self.dropout = int(heads), int(layers), int(feedforward), float(dropout)
        layer = nn.TransformerEncoderLayer(self.in_dim, self.heads, self.feedforward, self.dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, self.layers, enable_nested_tensor=False)
        self.project = nn.Linear(4 * self.in_dim, self.out_dim)

    def config(self) -> dict:
        return {**super().config(), "heads": self.heads, "layers": self.layers, "feedforward": self.feedforward,
                "dropout": self.dropout}

    def forward(self, objects: ObjectSet) -> torch.Tensor:
        f, mask = objects
        h = self.encoder(f, src_key_padding_mask=~mask).float()
        m = mask.unsqueeze(-1)
        n = m.sum(1).clamp(min=1)
        big = torch.finfo(h.dtype).max
        pooled = torch.cat([h.masked_fill(~m, -big).amax(1), h.masked_fill(~m, big).amin(1),
                            (h * m).sum(1), (h * m).sum(1) / n], dim=-1)
        return self.project(pooled)
