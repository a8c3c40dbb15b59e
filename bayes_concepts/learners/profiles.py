"""Training profiles: named sets of training settings and architecture options.

A profile fills in whatever the user did not give: the optimiser's schedule, learning
rate and batch size (:class:`~bayes_concepts.learners.training.TrainSettings` fields), the
encoder's options (image size, backbone) and the pooling's options (batch norm in the
relation net's g), by modality and pooling.  An explicit setting always wins over the
profile, and the card records both the profile's name and the settings used.

Built-ins:

``cpu`` (the default)
    Settings chosen to train in minutes on a laptop's CPU: Adam at 1e-3 with 100 steps of
    linear warm-up (at most a tenth of the steps the budget or ``max_steps`` affords, so a short
    run warms up too) and a half-cosine decay to the end of the budget; 64 episodes per step;
    the relation net's g without batch norm; the image encoder's small CNN at 80 × 120
    pixels.
``curi``
    CURI's published settings (seed paper, Appendix E-F): Adam at a constant rate of 1e-3
    for schemas, 1e-4 for images and 5e-5 for sounds, 64 episodes per step for schemas and
    8 for images and sounds; batch norm before each ReLU of the relation net's g (its f has
    it in both profiles); images at 160 × 240 pixels through ResNet-18's stem and layers
    1-3.  CURI trained for 1,000,000 steps on a GPU: on a CPU this profile is slow (the
    image encoder especially), and with a short budget it may score below ``cpu``.

Register another with ``training_profiles.register("name", TrainingProfile(...))``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..registry import Registry
from .protocol import LearnerError

#: Training profiles by name: :class:`TrainingProfile` objects.
training_profiles = Registry("training profile", builtins=(__name__,))

MODALITIES = ("schema", "image", "sound")


@dataclass(frozen=True)
class TrainingProfile:
    """What a profile sets, by modality (the encoder kind) and pooling.

    train: TrainSettings fields for every modality; train_by_modality: more of them per
    modality (these win); encoder_options: per modality; pooling_options: per pooling;
    description: one sentence for ``--help``.
    """

    description: str
    train: dict = field(default_factory=dict)
    train_by_modality: dict = field(default_factory=dict)
    encoder_options: dict = field(default_factory=dict)
    pooling_options: dict = field(default_factory=dict)

    def resolve(self, modality: str, pooling: str) -> tuple[dict, dict, dict]:
        """(TrainSettings fields, encoder options, pooling options) for ``modality`` and ``pooling``."""
        train = {**self.train, **self.train_by_modality.get(modality, {})}
        return train, dict(self.encoder_options.get(modality, {})), dict(self.pooling_options.get(pooling, {}))


def resolve_profile(name: str, modality: str, pooling: str, explicit: dict | None = None,
                    encoder_options: dict | None = None, pooling_options: dict | None = None):
    """The settings of profile ``name`` for a learner, with ``explicit`` TrainSettings fields and
    the given encoder/pooling options winning over it.

    Returns (train settings dict including ``profile``, encoder options, pooling options).
    Raises LearnerError naming the profile if it is unknown.
    """
    if name not in training_profiles.names():
        raise LearnerError(f"unknown training profile {name!r} (expected one of "
                           f"{', '.join(training_profiles.names())})")
    train, enc, pool = training_profiles.get(name).resolve(modality, pooling)
    train.update({k: v for k, v in (explicit or {}).items() if v is not None})
    enc.update(encoder_options or {})
    pool.update(pooling_options or {})
    return {**train, "profile": name}, enc, pool


def describe(name: str) -> str:
    """One line per modality: what profile ``name`` sets (for help and the guide)."""
    profile = training_profiles.get(name)
    parts = []
    for modality in MODALITIES:
        train, enc, _ = profile.resolve(modality, "relnet")
        settings = ", ".join(f"{k} {v}" for k, v in train.items()) or "the training defaults"
        parts.append(f"{modality}: {settings}" + (f"; encoder {enc}" if enc else ""))
    return "; ".join(parts)


training_profiles.register("cpu", TrainingProfile(
    "the default, for a CPU: Adam 1e-3, 100 warm-up steps (at most a tenth of the steps the budget affords) then "
    "a cosine decay to the end of the budget, "
    "64 episodes per step, no batch norm in the relation net's g, the image encoder's small CNN at 80 × 120."))

training_profiles.register("curi", TrainingProfile(
    "CURI's published settings: constant Adam rate (schema 1e-3, image 1e-4, sound 5e-5), 64 episodes per "
    "step for schemas and 8 for images and sounds, batch norm in the relation net's g, ResNet-18 to layer 3 at "
    "160 × 240 for images (slow on a CPU).",
    train={"lr_schedule": "constant", "warmup_steps": 0},
    train_by_modality={"schema": {"lr": 1e-3, "batch_episodes": 64},
                       "image": {"lr": 1e-4, "batch_episodes": 8},
                       "sound": {"lr": 5e-5, "batch_episodes": 8}},
    encoder_options={"image": {"backbone": "resnet18", "height": 160, "width": 240}},
    pooling_options={"relnet": {"g_norm": True}}))
