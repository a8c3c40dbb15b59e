"""The built-in scene encoders of the three modalities: the ``schema``, ``image`` and
``sound`` entries of :data:`~bayes_concepts.learners.encoders.encoders` (this module is the
registry's built-in module: it registers them, and imports :mod:`.encoders` one way).

All keep the encoder interface of :mod:`.encoders` and feed the same four poolings:

``schema``
    :class:`~bayes_concepts.learners.encoders.SchemaEncoder`: the scenes' attribute codes.
``image``
    ``from_scenes`` renders the scenes in the ``image`` modality
    (:data:`~bayes_concepts.modalities.modalities`; default 80 × 120 pixels, its
    ``encoder_defaults``) as uint8 (n, 3, H, W) -- scenes with 3-D positions (CLEVR's, whose
    schema has relations) at their objects' positions, as ``render`` draws them; ``forward``
    runs a CNN and returns
    every cell of its last feature map as one slot (all present): features
    (B, h·w, object_dim), each cell's channels plus its normalised (row, column)
    through a linear layer.  Backbones: ``small`` (``len(channels)`` 3×3 convolutions of
    stride 2 with batch norm and ReLU: 80 × 120 -> 5 × 8 cells with four layers) or
    ``resnet18`` (CURI's: ResNet-18's stem and layers 1-3, randomly initialised and
    trained with the rest; written here in torch, so torchvision is not needed;
    160 × 240 -> 10 × 15 cells).
``sound``
    ``from_scenes`` synthesises the clips in the ``sound`` modality and takes their log-mel
    spectrograms (:func:`~bayes_concepts.scenes.sound.log_mel_spectrogram`, float32
    (n, 1, n_mels, T)); ``forward`` runs a 2-d CNN of 3×3 convolutions of stride 2 and
    returns every remaining time step as one slot (all present): the channels × mel rows
    of that step through a linear layer, float (B, T', object_dim).

The image and sound encoders are :class:`RenderedEncoder` subclasses: their raw input is
the scene rendered by their modality (:class:`~bayes_concepts.modalities.Modality`) with
the options of :meth:`RenderedEncoder.bank_options`.  Inputs are made per batch;
``embed_batch`` bounds how many scenes one forward pass takes when a learner embeds
without gradients.  When the space was saved with a rendered bank of the encoder's
options (:meth:`~bayes_concepts.spaces.hypothesis_space.HypothesisSpace.rendered_bank`,
``bayes-concepts render SPACE --bank``), ``from_space`` reads it (checksum verified) and
the bank's scenes are read there -- by their bank ids, or, in a space whose scenes have no
positions, by their codes -- instead of rendered or synthesised again: the same pixels and
samples, faster.  Other scenes are rendered as usual.  A modality that cannot express a
space's scenes is refused by ``from_space`` in one line saying why (``sound`` on a space with
relations: its clips place objects by x/y location bins, and these scenes are placed by 3-D
positions; :func:`~bayes_concepts.engine.rendered.cannot_express`).  The scene schema
(relations included) is part of ``config()``, so a saved model is rebuilt exactly and
refuses a space whose scenes are described differently.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import torch
from torch import nn

from ..engine.rendered import cannot_express, find_rendered_bank, takes_positions
from ..modalities import Modality
from ..modalities import modalities as scene_modalities
from ..scenes.schema import Attribute, SceneSchema
from ..scenes.sound import SoundSettings, log_mel_spectrogram, n_frames_for
from .encoders import ObjectSet, SceneEncoder, SchemaEncoder, encoders
from .features import SceneArrays
from .protocol import LearnerError

# registered here, before the image and sound encoders, so the registry lists schema, image, sound
encoders.register("schema", SchemaEncoder)

IMAGE_BACKBONES = ("small", "resnet18")


# ---------------------------------------------------------------- schema <-> JSON
def schema_to_dict(schema: SceneSchema) -> dict:
    """A JSON-able description of a scene schema (inverse: :func:`schema_from_dict`); its
    relations only when it has some (so the configs of models of other spaces are unchanged)."""
    out = {"attributes": [{"name": a.name, "values": list(a.values), "ordered": bool(a.ordered)}
                          for a in schema.attributes],
           "max_objects": int(schema.max_objects), "min_objects": int(schema.min_objects),
           "sample_min_objects": int(schema.sample_min_objects)}
    if schema.relations:
        out["relations"] = list(schema.relations)
    return out


def schema_from_dict(data: dict) -> SceneSchema:
    try:
        attrs = tuple(Attribute(str(a["name"]), tuple(a["values"]), bool(a.get("ordered", False)))
                      for a in data["attributes"])
        return SceneSchema(attrs, max_objects=int(data["max_objects"]), min_objects=int(data["min_objects"]),
                           sample_min_objects=int(data["sample_min_objects"]),
                           relations=tuple(data.get("relations", ())))
    except (KeyError, TypeError, ValueError) as exc:
        raise LearnerError(f"encoder config: not a scene schema ({exc})") from None


def _check_schema(encoder, space) -> None:
    mine, theirs = encoder.schema_config, schema_to_dict(space.schema)
    if mine != theirs:
        def describe(d):
            return ", ".join(f"{a['name']}({len(a['values'])})" for a in d["attributes"]) + \
                f"; up to {d['max_objects']} objects"
        raise LearnerError(f"the space's scenes are described by {describe(theirs)}; the {encoder.modality} "
                           f"encoder was built for {describe(mine)}")


def _positive_ints(values, what: str) -> list:
    out = [int(v) for v in values]
    if not out or min(out) < 1:
        raise LearnerError(f"{what}: expected positive integers, got {list(values)!r}")
    return out


class _BankLookup:
    """Rows of a space's rendered bank, by scene-bank id (:meth:`take_ids`) or, in a space
    whose scenes have no positions (so a scene's codes decide its rendering), by scene codes:
    ``rows(codes)`` is the bank row of every scene (int64 (n,)), or None when one of them is
    not in the bank (or the scenes have positions)."""

    def __init__(self, space, bank: np.ndarray):
        codes = np.ascontiguousarray(np.asarray(space.scene_codes), dtype=np.int8)
        self.bank, self.slots = bank, codes.shape[1]
        placed = space.positions(slice(0, 1)) is not None
        self.index = {} if placed else {row.tobytes(): j for j, row in enumerate(codes)}

    def rows(self, codes: np.ndarray):
        if codes.shape[1] != self.slots or not len(codes):
            return None
        keys = np.ascontiguousarray(codes, dtype=np.int8)
        found = [self.index.get(row.tobytes()) for row in keys]
        return None if any(j is None for j in found) else np.asarray(found, np.int64)

    def take_ids(self, ids) -> np.ndarray:
        """The bank's renderings of scene-bank ids int (n,)."""
        return self._read(np.asarray(ids, np.int64))

    def take(self, codes: np.ndarray):
        rows = self.rows(codes)
        return None if rows is None else self._read(rows)

    def _read(self, rows: np.ndarray) -> np.ndarray:
        order = np.argsort(rows, kind="stable")         # read the memory-mapped file in order
        out = np.empty((len(rows),) + self.bank.shape[1:], self.bank.dtype)
        out[order] = self.bank[rows[order]]
        return out


def _conv_bn_relu(c_in: int, c_out: int, stride: int = 2) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False),
                         nn.BatchNorm2d(c_out), nn.ReLU(inplace=True))


# ---------------------------------------------------------------- ResNet-18 up to layer3
class BasicBlock(nn.Module):
    """ResNet's basic block: two 3×3 convolutions with batch norm, plus the input (through a
    strided 1×1 convolution when the shape changes), then ReLU."""

    def __init__(self, c_in: int, c_out: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(c_out))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + (x if self.downsample is None else self.downsample(x)))


def resnet18_to_layer3() -> nn.Sequential:
    """ResNet-18 (He et al. 2016) from the stem through layer3: 3 -> 256 channels, 1/16 of the
    input size (CURI's image encoder, untrained)."""
    return nn.Sequential(
        nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
        nn.MaxPool2d(3, stride=2, padding=1),
        BasicBlock(64, 64), BasicBlock(64, 64),
        BasicBlock(64, 128, 2), BasicBlock(128, 128),
        BasicBlock(128, 256, 2), BasicBlock(256, 256))


def _grid_features(fmap: torch.Tensor) -> torch.Tensor:
    """Feature map float (B, C, h, w) -> one row per cell with its normalised row and column
    appended: float (B, h·w, C + 2), cells in row-major order."""
    b, c, h, w = fmap.shape
    rows = torch.linspace(-1.0, 1.0, h, device=fmap.device, dtype=fmap.dtype) if h > 1 else fmap.new_zeros(1)
    cols = torch.linspace(-1.0, 1.0, w, device=fmap.device, dtype=fmap.dtype) if w > 1 else fmap.new_zeros(1)
    coords = torch.stack(torch.broadcast_tensors(rows[:, None], cols[None, :]), dim=0)      # (2, h, w)
    x = torch.cat([fmap, coords.expand(b, 2, h, w)], dim=1)
    return x.flatten(2).transpose(1, 2)


class RenderedEncoder(SceneEncoder):
    """Base of encoders whose raw input is the scene rendered in a registered modality
    (:attr:`modality`, a name in :data:`~bayes_concepts.modalities.modalities`).

    A subclass sets ``schema`` (a :class:`SceneSchema`) and ``schema_config`` and
    implements :meth:`bank_options` and ``forward``; :meth:`rendered` gives the
    modality's arrays of a batch of scenes, from the space's cached bank when
    :meth:`from_space` found one of these options."""

    @property
    def renderer(self) -> Modality:
        """The encoder's modality."""
        return scene_modalities.get(self.modality)

    def bank_options(self) -> dict:
        """The modality options this encoder renders with (those of a matching cached bank)."""
        raise NotImplementedError

    @classmethod
    def from_space(cls, space, **options) -> "RenderedEncoder":
        why = cannot_express(space, scene_modalities.get(cls.modality))
        if why:
            raise LearnerError(f"the {cls.modality} encoder: {why}; train the schema or image encoder")
        enc = cls(schema_to_dict(space.schema), **options)
        if space.path is not None and space.has_pictures:
            bank = find_rendered_bank(space, enc.modality, **enc.bank_options())
            if bank is not None:
                enc._bank = _BankLookup(space, bank)
        return enc

    def check_space(self, space) -> None:
        _check_schema(self, space)

    def from_codes(self, codes: np.ndarray) -> torch.Tensor:
        """Raw model input of scenes given by their codes alone (scenes without positions)."""
        return self.from_scenes(SceneArrays(np.asarray(codes)))

    def rendered(self, scenes: SceneArrays) -> np.ndarray:
        """A batch of scenes -> the modality's rendering (n,) + per-scene shape: read from the
        space's cached bank by id (``scenes.ids``, ids of the space the encoder was built from)
        or by codes where it can be, else rendered, at the objects' positions when the scenes
        have them."""
        codes = np.asarray(scenes.codes)
        if codes.ndim != 3 or codes.shape[2] != self.schema.n_attributes:
            raise LearnerError(f"scene codes: expected shape (n, slots, {self.schema.n_attributes}), "
                               f"got {codes.shape}")
        bank = getattr(self, "_bank", None)
        if bank is not None and len(codes):
            out = bank.take_ids(scenes.ids) if scenes.ids is not None else bank.take(codes)
            if out is not None:
                return out
        modality = self.renderer
        extra = {}
        if scenes.positions is not None and takes_positions(modality):
            extra["positions"] = np.asarray(scenes.positions)
        elif self.schema.relations:
            raise LearnerError(f"the {self.modality} encoder draws scenes with relations at their objects' 3-D "
                               "positions, and these scenes come without them: give bank ids, or scene dicts "
                               "with each object's 3d_coords")
        return modality.render(codes, self.schema, modality.settings(**self.bank_options()), **extra)


@encoders.register("image")
class ImageEncoder(RenderedEncoder):
    """Scenes as rendered pictures through a CNN; one slot per cell of its last feature map.

    Parameters
    ----------
    schema : dict
        The scene schema (:func:`schema_to_dict`), which the renderer reads.
    height, width : int, optional
        Picture size in pixels (default: the image modality's ``encoder_defaults``,
        80 × 120; CURI: 160 × 240).
    supersample : int, optional
        Rays per pixel along each axis of the renderer (default 2).
    backbone : {"small", "resnet18"}
    channels : list of int
        Output channels of the ``small`` backbone's stride-2 convolutions (ignored by
        ``resnet18``, which ends with 256).
    object_dim : int
        Feature size K per slot.
    embed_batch : int
        Most scenes per forward pass when embedding without gradients.
    """

    modality = "image"
    #: keys of :meth:`config` that :meth:`from_space` takes (what a saved model is rebuilt with)
    space_options = ("height", "width", "supersample", "backbone", "channels", "object_dim", "embed_batch")

    def __init__(self, schema: dict, height: int | None = None, width: int | None = None,
                 supersample: int | None = None, backbone: str = "small", channels=(32, 64, 64, 64),
                 object_dim: int = 64, embed_batch: int = 256):
        super().__init__()
        self.schema_config = schema_to_dict(schema_from_dict(schema))
        self.schema = schema_from_dict(self.schema_config)
        defaults = self.renderer.encoder_defaults
        size = [defaults[k] if v is None else v for k, v in
                (("height", height), ("width", width), ("supersample", supersample))]
        self.height, self.width, self.supersample = _positive_ints(size, "image size")
        if backbone not in IMAGE_BACKBONES:
            raise LearnerError(f"image encoder: unknown backbone {backbone!r} (expected one of "
                               f"{', '.join(IMAGE_BACKBONES)})")
        self.backbone_kind = backbone
        self.channels = _positive_ints(channels, "image encoder channels")
        self.out_dim = int(object_dim)
        self.embed_batch = int(embed_batch)
        if backbone == "small":
            layers, c = [], 3
            for c_out in self.channels:
                layers.append(_conv_bn_relu(c, c_out))
                c = c_out
            self.backbone = nn.Sequential(*layers)
        else:
            self.backbone, c = resnet18_to_layer3(), 256
        self.project = nn.Linear(c + 2, self.out_dim)
        self.register_buffer("pixel_mean", torch.full((1, 3, 1, 1), 0.5))
        self.register_buffer("pixel_scale", torch.full((1, 3, 1, 1), 0.25))
        self.grid = self._grid_shape()
        self.n_objects = self.grid[0] * self.grid[1]

    def _grid_shape(self) -> tuple:
        was = self.training
        self.eval()
        try:
            with torch.no_grad():
                fmap = self.backbone(torch.zeros(1, 3, self.height, self.width))
        finally:
            self.train(was)
        if fmap.shape[2] < 1 or fmap.shape[3] < 1:
            raise LearnerError(f"image encoder: {self.height} × {self.width} pixels leave no feature map")
        return int(fmap.shape[2]), int(fmap.shape[3])

    def bank_options(self) -> dict:
        return {"height": self.height, "width": self.width, "supersample": self.supersample}

    def config(self) -> dict:
        return {"schema": self.schema_config, "height": self.height, "width": self.width,
                "supersample": self.supersample, "backbone": self.backbone_kind, "channels": list(self.channels),
                "object_dim": self.out_dim, "embed_batch": self.embed_batch}

    def from_scenes(self, scenes: SceneArrays) -> torch.Tensor:
        """A batch of scenes -> the rendered pictures, uint8 tensor (n, 3, H, W)."""
        images = self.rendered(scenes)
        return torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2)))

    def forward(self, images: torch.Tensor) -> ObjectSet:
        x = (images.float() / 255.0 - self.pixel_mean) / self.pixel_scale
        feats = self.project(_grid_features(self.backbone(x)))
        return ObjectSet(feats, torch.ones(feats.shape[:2], dtype=torch.bool, device=feats.device))


@encoders.register("sound")
class SoundEncoder(RenderedEncoder):
    """Scenes as synthesised clips: log-mel spectrogram, a 2-d CNN, one slot per time step.

    Parameters
    ----------
    schema : dict
        The scene schema (:func:`schema_to_dict`), which the synthesiser reads.
    settings : dict, optional
        Fields of :class:`~bayes_concepts.scenes.sound.SoundSettings` (default: the sound
        modality's ``encoder_defaults``, SoundSettings' defaults, 2 s at 8 kHz).
    n_mels, n_fft, hop : int
        Spectrogram settings (defaults 64 bands, 256-sample frames every 128 samples).
    channels : list of int
        Output channels of the stride-2 3×3 convolutions.
    object_dim : int
        Feature size K per slot.
    embed_batch : int
        Most scenes per forward pass when embedding without gradients.
    """

    modality = "sound"
    space_options = ("settings", "n_mels", "n_fft", "hop", "channels", "object_dim", "embed_batch")
    #: log-power values are shifted and scaled by these before the CNN (natural-log units)
    LOG_CENTRE, LOG_SCALE = -7.0, 4.0

    def __init__(self, schema: dict, settings: dict | None = None, n_mels: int = 64, n_fft: int = 256,
                 hop: int = 128, channels=(16, 32, 32), object_dim: int = 64, embed_batch: int = 512):
        super().__init__()
        self.schema_config = schema_to_dict(schema_from_dict(schema))
        self.schema = schema_from_dict(self.schema_config)
        known = {f.name for f in dataclasses.fields(SoundSettings)}
        settings = dict(self.renderer.encoder_defaults["settings"] if settings is None else settings)
        if set(settings) - known:
            raise LearnerError(f"sound encoder: unknown sound settings {sorted(set(settings) - known)} "
                               f"(expected some of {', '.join(sorted(known))})")
        self.settings = SoundSettings(**settings)
        self.n_mels, self.n_fft, self.hop = _positive_ints((n_mels, n_fft, hop), "spectrogram settings")
        self.channels = _positive_ints(channels, "sound encoder channels")
        self.out_dim = int(object_dim)
        self.embed_batch = int(embed_batch)
        self.n_frames = n_frames_for(self.settings.n_samples, self.n_fft, self.hop)
        if self.n_frames < 1:
            raise LearnerError(f"sound encoder: clips of {self.settings.n_samples} samples are shorter than one "
                               f"{self.n_fft}-sample frame")
        layers, c = [], 1
        for c_out in self.channels:
            layers.append(_conv_bn_relu(c, c_out))
            c = c_out
        self.backbone = nn.Sequential(*layers)
        rows, self.n_objects = self.n_mels, self.n_frames
        for _ in self.channels:          # a 3x3 convolution of stride 2, padding 1: n -> ceil(n / 2)
            rows, self.n_objects = (rows + 1) // 2, (self.n_objects + 1) // 2
        self.project = nn.Linear(c * rows + 1, self.out_dim)

    def bank_options(self) -> dict:
        return {"settings": self.settings}

    def config(self) -> dict:
        return {"schema": self.schema_config, "settings": dataclasses.asdict(self.settings), "n_mels": self.n_mels,
                "n_fft": self.n_fft, "hop": self.hop, "channels": list(self.channels), "object_dim": self.out_dim,
                "embed_batch": self.embed_batch}

    def from_scenes(self, scenes: SceneArrays) -> torch.Tensor:
        """A batch of scenes -> log-mel spectrograms float32 tensor (n, 1, n_mels, T)."""
        clips = self.rendered(scenes)
        spec = log_mel_spectrogram(clips, self.settings.rate, n_fft=self.n_fft, hop=self.hop, n_mels=self.n_mels)
        return torch.from_numpy(spec[:, None])

    def forward(self, spec: torch.Tensor) -> ObjectSet:
        x = self.backbone((spec.float() - self.LOG_CENTRE) / self.LOG_SCALE)      # (B, C, rows, T')
        b, c, rows, t = x.shape
        steps = x.permute(0, 3, 1, 2).reshape(b, t, c * rows)
        when = torch.linspace(-1.0, 1.0, t, device=x.device, dtype=x.dtype) if t > 1 else x.new_zeros(1)
        feats = self.project(torch.cat([steps, when[None, :, None].expand(b, t, 1)], dim=2))
        return ObjectSet(feats, torch.ones((b, t), dtype=torch.bool, device=feats.device))
