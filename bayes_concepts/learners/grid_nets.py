"""ConceptWorld's five baseline image classifiers, as small torch modules.

Every net maps a batch of grid pictures to class logits:

    x float32 (B, C_in, S, S)  ->  logits float32 (B, K)

with ``C_in`` = 3 (RGB in [0, 1], one pixel per grid point: the seed's 32 x 32 images),
``S`` the picture's side (32) and ``K`` the number of classes.  They are the baselines of
Wu et al.'s ConceptWorld study (its §4 and Appendix 2.1), at CPU scale where the seed's
sizes would not train on a CPU within minutes (the defaults below say where they differ):

``mlp``       one hidden layer of 128 units (the seed's SimpleFeedForward);
``cnn``       two 5 x 5 convolutions, each followed by a 2 x 2 max-pool, then a hidden
              layer (the seed's SimpleConvNet; 128 channels there, 32 here by default);
``resnet18``  ResNet-18 (He et al. 2016) with layers 3 and 4 replaced by identities, as the
              seed did to match the other baselines' size; trained from scratch (the seed
              also used ImageNet weights; none can be downloaded here);
``wren``      a relation network head (Santoro et al. 2017) over the cells of a CNN's
              feature map, the scoring part of WReN (Barrett et al. 2018): three 2 x 2,
              stride-2 convolutions with batch norm, every ordered pair of cells through g,
              summed, then f;
``predinet``  PrediNet (Shanahan et al. 2020): one convolution (kernel 12, stride 6, batch
              norm), per head two attention queries over the cells picking two objects,
              ``relations`` learned scalar comparisons of the pair plus both positions,
              heads concatenated, then an output MLP.

Each net is ``head(features(x))``: ``features`` float32 (B, ``feature_size``), its last
hidden layer (what a few-shot prototype learner embeds scenes with), ``head`` one linear
layer to the K logits.  The registry :data:`grid_nets` holds them by name; :func:`make_grid_net` builds one and
turns bad sizes into one-line :class:`GridNetError`.  Architectures only: training and
scoring live with the ConceptWorld suite.
"""
from __future__ import annotations

import torch
from torch import nn

from ..errors import BayesConceptsError
from ..registry import Registry
from ..params import whole_number

__all__ = ["GridNetError", "grid_nets", "make_grid_net", "parameter_count", "GridMLP", "GridCNN", "GridResNet18",
           "GridWReN", "GridPrediNet"]

grid_nets = Registry("grid net", "ConceptWorld's baseline image classifiers (grid pictures -> class logits).",
                     builtins=("bayes_concepts.learners.grid_nets",))


class GridNetError(BayesConceptsError):
    """A grid net asked for with bad sizes, or given pictures of the wrong shape."""


def _whole(name: str, value, least: int, where: str) -> int:
    return whole_number(name, value, least, error=GridNetError, prefix=f"{where}: ")


class _GridNet(nn.Module):
    """Shared checks: the pictures' shape is stated once, at construction."""

    def __init__(self, n_classes: int, image_size: int, in_channels: int, least_size: int):
        super().__init__()
        where = type(self).__name__
        self.n_classes = _whole("n_classes", n_classes, 2, where)
        self.image_size = _whole("image_size", image_size, least_size, where)
        self.in_channels = _whole("in_channels", in_channels, 1, where)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """float32 (B, K): class logits of pictures x (B, C_in, S, S)."""
        return self.head(self.features(x))

    def check_input(self, x) -> torch.Tensor:
        want = (self.in_channels, self.image_size, self.image_size)
        if not isinstance(x, torch.Tensor) or x.ndim != 4 or tuple(x.shape[1:]) != want or not x.is_floating_point():
            got = (f"{tuple(x.shape)} {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__)
            raise GridNetError(f"{type(self).__name__}: expected float pictures (B, {want[0]}, {want[1]}, {want[2]}), "
                               f"got {got}")
        return x


@grid_nets.register("mlp")
class GridMLP(_GridNet):
    """The seed's SimpleFeedForward: flatten (B, C_in·S·S) -> ``hidden`` ReLU units -> K logits."""

    def __init__(self, n_classes: int, image_size: int = 32, in_channels: int = 3, hidden: int = 128):
        super().__init__(n_classes, image_size, in_channels, 1)
        hidden = _whole("hidden", hidden, 1, "GridMLP")
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size ** 2, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, n_classes)
        self.feature_size = hidden

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """float32 (B, hidden): the hidden layer."""
        return self.body(self.check_input(x))


@grid_nets.register("cnn")
class GridCNN(_GridNet):
    """The seed's SimpleConvNet: conv 5x5 (``channels``) -> ReLU -> max-pool 2 -> conv 5x5 ->
    ReLU -> max-pool 2 -> ``hidden`` ReLU units -> K logits (stride 1, no padding: 32 -> 28 ->
    14 -> 10 -> 5 per side).  The seed used 128 channels; 32 by default here (CPU scale)."""

    def __init__(self, n_classes: int, image_size: int = 32, in_channels: int = 3, channels: int = 32,
                 hidden: int = 128):
        super().__init__(n_classes, image_size, in_channels, 16)
        channels = _whole("channels", channels, 1, "GridCNN")
        hidden = _whole("hidden", hidden, 1, "GridCNN")
        side = ((image_size - 4) // 2 - 4) // 2
        self.body = nn.Sequential(nn.Conv2d(in_channels, channels, 5), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(channels, channels, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                  nn.Linear(channels * side * side, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, n_classes)
        self.feature_size = hidden

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """float32 (B, hidden): the hidden layer after the convolutions."""
        return self.body(self.check_input(x))


class _BasicBlock(nn.Module):
    """ResNet's basic block: two 3x3 convolutions with batch norm and an identity (or 1x1
    projection) shortcut."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = (nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
                         if stride != 1 or c_in != c_out else nn.Identity())

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


@grid_nets.register("resnet18")
class GridResNet18(_GridNet):
    """ResNet-18 (He et al. 2016) as the seed cut it: stem (conv 7x7 stride 2, batch norm,
    ReLU, max-pool 3 stride 2: 32 -> 16 -> 8 per side), layer 1 (two basic blocks of
    ``width`` channels), layer 2 (two of 2·``width``, stride 2: 8 -> 4), layers 3 and 4
    identities, global average pool, a linear layer to K logits.  ``width`` = 64 is
    ResNet-18's.  Random initial weights (the seed's pretrained variant is not available)."""

    def __init__(self, n_classes: int, image_size: int = 32, in_channels: int = 3, width: int = 64):
        super().__init__(n_classes, image_size, in_channels, 8)
        w = _whole("width", width, 1, "GridResNet18")
        self.stem = nn.Sequential(nn.Conv2d(in_channels, w, 7, 2, 3, bias=False), nn.BatchNorm2d(w), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        self.layer1 = nn.Sequential(_BasicBlock(w, w, 1), _BasicBlock(w, w, 1))
        self.layer2 = nn.Sequential(_BasicBlock(w, 2 * w, 2), _BasicBlock(2 * w, 2 * w, 1))
        self.head = nn.Linear(2 * w, n_classes)
        self.feature_size = 2 * w

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """float32 (B, 2·width): layer 2's output, averaged over the picture."""
        return self.layer2(self.layer1(self.stem(self.check_input(x)))).mean(dim=(2, 3))


def _cell_objects(fmap: torch.Tensor) -> torch.Tensor:
    """float (B, n, D + 2): the cells of a feature map (B, D, h, w) as n = h·w objects, each
    its D features and its (row, column) position in [-1, 1]."""
    B, D, h, w = fmap.shape
    rows = torch.linspace(-1, 1, h, device=fmap.device).view(h, 1).expand(h, w)
    cols = torch.linspace(-1, 1, w, device=fmap.device).view(1, w).expand(h, w)
    pos = torch.stack([rows, cols]).reshape(1, 2, h * w).expand(B, 2, h * w)
    return torch.cat([fmap.reshape(B, D, h * w), pos], dim=1).transpose(1, 2)


@grid_nets.register("wren")
class GridWReN(_GridNet):
    """WReN's relation network (Barrett et al. 2018; Santoro et al. 2017) on one picture:
    ``conv_layers`` convolutions (kernel 2, stride 2, ``channels``, batch norm, ReLU; the
    seed's three of 64: 32 -> 4 per side), the n = 16 cells as objects o_i (features and
    position), r = Σ_{i,j} g([o_i, o_j]) over all n² ordered pairs (g: two ReLU layers of
    ``g_hidden``), logits = f(r) (f: one ReLU layer of ``f_hidden``, then K).  g's first
    layer is applied to each object once and summed per pair (the same linear map)."""

    def __init__(self, n_classes: int, image_size: int = 32, in_channels: int = 3, channels: int = 64,
                 conv_layers: int = 3, g_hidden: int = 128, f_hidden: int = 128):
        super().__init__(n_classes, image_size, in_channels, 1)
        where = "GridWReN"
        channels = _whole("channels", channels, 1, where)
        conv_layers = _whole("conv_layers", conv_layers, 1, where)
        g_hidden = _whole("g_hidden", g_hidden, 1, where)
        f_hidden = _whole("f_hidden", f_hidden, 1, where)
        if image_size >> conv_layers < 1:
            raise GridNetError(f"{where}: {conv_layers} stride-2 convolutions leave nothing of a {image_size}-pixel "
                               "picture")
        layers, c = [], in_channels
        for _ in range(conv_layers):
            layers += [nn.Conv2d(c, channels, 2, 2), nn.BatchNorm2d(channels), nn.ReLU()]
            c = channels
        self.conv = nn.Sequential(*layers)
        d = channels + 2
        self.g_first, self.g_second = nn.Linear(d, g_hidden), nn.Linear(d, g_hidden, bias=False)
        self.g_rest = nn.Sequential(nn.ReLU(), nn.Linear(g_hidden, g_hidden), nn.ReLU())
        self.f = nn.Sequential(nn.Linear(g_hidden, f_hidden), nn.ReLU())
        self.head = nn.Linear(f_hidden, n_classes)
        self.feature_size = f_hidden

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """float32 (B, f_hidden): f's hidden layer."""
        o = _cell_objects(self.conv(self.check_input(x)))                 # (B, n, D + 2)
        pairs = self.g_first(o)[:, :, None, :] + self.g_second(o)[:, None, :, :]  # (B, n, n, g_hidden)
        return self.f(self.g_rest(pairs).sum(dim=(1, 2)))


@grid_nets.register("predinet")
class GridPrediNet(_GridNet):
    """PrediNet (Shanahan et al. 2020) with the seed's sizes: one convolution (``channels``
    = 32, kernel 12, stride 6, batch norm, ReLU: 32 -> 4 per side), the n = 16 cells as
    objects L (B, n, D + 2) with positions; keys K = L W_k (``key_size``); per head h two
    queries q1 = W_q1^h flat(L), q2 = W_q2^h flat(L) select E1 = softmax(K q1)ᵀ L and
    E2 = softmax(K q2)ᵀ L; the head's relations are E1's features W_s - E2's features W_s
    (``relations`` scalars, W_s shared by the heads) with both positions appended; the
    heads' outputs (``heads`` · (``relations`` + 4)) go through ``hidden`` ReLU units to K
    logits."""

    def __init__(self, n_classes: int, image_size: int = 32, in_channels: int = 3, channels: int = 32,
                 kernel: int = 12, stride: int = 6, key_size: int = 16, heads: int = 2, relations: int = 2,
                 hidden: int = 64):
        where = "GridPrediNet"
        kernel = _whole("kernel", kernel, 1, where)
        super().__init__(n_classes, image_size, in_channels, kernel)
        channels = _whole("channels", channels, 1, where)
        stride = _whole("stride", stride, 1, where)
        self.key_size = _whole("key_size", key_size, 1, where)
        self.heads = _whole("heads", heads, 1, where)
        self.relations = _whole("relations", relations, 1, where)
        hidden = _whole("hidden", hidden, 1, where)
        side = (image_size - kernel) // stride + 1
        n, d = side * side, channels + 2
        self.conv = nn.Sequential(nn.Conv2d(in_channels, channels, kernel, stride), nn.BatchNorm2d(channels),
                                  nn.ReLU())
        self.keys = nn.Linear(d, self.key_size, bias=False)
        self.queries = nn.Linear(n * d, 2 * self.heads * self.key_size, bias=False)
        self.embed = nn.Linear(channels, self.relations, bias=False)
        self.out = nn.Sequential(nn.Linear(self.heads * (self.relations + 4), hidden), nn.ReLU())
        self.head = nn.Linear(hidden, n_classes)
        self.feature_size = hidden

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """float32 (B, hidden): the output MLP's hidden layer."""
        L = _cell_objects(self.conv(self.check_input(x)))                  # (B, n, d)
        B, n, d = L.shape
        K = self.keys(L)                                                   # (B, n, key)
        Q = self.queries(L.reshape(B, n * d)).view(B, 2 * self.heads, self.key_size)
        att = torch.softmax(torch.einsum("bnk,bqk->bqn", K, Q), dim=-1)    # (B, 2·heads, n)
        E = torch.einsum("bqn,bnd->bqd", att, L).view(B, self.heads, 2, d)
        feats, pos = E[..., :-2], E[..., -2:]
        rel = self.embed(feats[:, :, 0]) - self.embed(feats[:, :, 1])     # (B, heads, relations)
        R = torch.cat([rel, pos[:, :, 0], pos[:, :, 1]], dim=-1).reshape(B, -1)
        return self.out(R)


def make_grid_net(name: str, n_classes: int, image_size: int = 32, in_channels: int = 3, **options) -> nn.Module:
    """A new grid net ``name`` (one of :data:`grid_nets`: mlp, cnn, resnet18, wren, predinet)
    for pictures float (B, ``in_channels``, ``image_size``, ``image_size``) and ``n_classes``
    classes; ``options`` are the net's own sizes (e.g. ``channels``).  An unknown name or
    option is a :class:`GridNetError` naming the choices."""
    try:
        cls = grid_nets.get(name)
    except ValueError as e:
        raise GridNetError(str(e)) from None
    try:
        return cls(n_classes, image_size=image_size, in_channels=in_channels, **options)
    except TypeError as e:
        raise GridNetError(f"grid net {name}: {e}") from None


def parameter_count(net: nn.Module) -> int:
    """The number of trainable parameters of ``net``."""
    return int(sum(p.numel() for p in net.parameters() if p.requires_grad))
