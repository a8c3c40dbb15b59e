"""Saved models: a directory with the weights (safetensors: no pickle, no code) and a JSON card.

``MODEL_DIR/model.safetensors``
    the network's parameters and buffers (the best checkpoint by validation mAP);
``MODEL_DIR/card.json``
    what rebuilds and describes the model: the architecture (encoder, pooling, sizes,
    concept-loss weight and vocabulary), precision, training settings, split (its name and
    the sha256 of its concept sets), seed, the training space (manifest hash, path, sizes),
    steps, wall time, validation curve, and the sha256 of the weights file (checked on
    load); scoring checks the space and split (:mod:`.binding`);
``MODEL_DIR/checkpoint.safetensors`` + ``checkpoint.json``
    the latest training state (weights, Adam moments, random state, step), for
    resuming (:mod:`.training`).

Writes are atomic (temporary name, then rename).  Reading reads JSON and safetensors
only; nothing is unpickled.  This module knows files and cards, not networks: rebuilding a
learner from its card is :func:`bayes_concepts.learners.protonet.load_model`.

>>> save_model(learner, "models/relnet")                         # doctest: +SKIP
>>> card = read_card("models/relnet")                            # doctest: +SKIP
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .. import __version__
from .binding import space_record
from .protocol import LearnerError

CARD = "card.json"
WEIGHTS = "model.safetensors"
FORMAT = "bayes_concepts.model"
FORMAT_VERSION = 1


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def write_tensors_atomic(path: Path, tensors: dict, metadata: dict | None = None) -> str:
    """Write ``tensors`` (name -> tensor) as safetensors atomically; returns the file's sha256."""
    tmp = path.with_name(path.name + ".partial")
    save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, str(tmp), metadata=metadata)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # safetensors creates 0600 files; models are meant to be shared
    digest = sha256_file(tmp)
    os.replace(tmp, path)
    return digest


def read_tensors(path: Path, expected_sha256: str | None = None) -> dict:
    """Tensors of a safetensors file (checked against ``expected_sha256`` when given)."""
    if not path.exists():
        raise LearnerError(f"{path}: missing")
    if expected_sha256 is not None and sha256_file(path) != expected_sha256:
        raise LearnerError(f"{path}: checksum differs from the one its card records (damaged or replaced)")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise LearnerError(f"{path}: cannot read as safetensors ({exc})") from None


def read_card(path) -> dict:
    """The card of a model directory (a :class:`LearnerError` naming the file if it is not one)."""
    path = Path(path)
    card_path = path / CARD
    if not card_path.exists():
        raise LearnerError(f"{path}: not a model directory (no {CARD})")
    try:
        card = json.loads(card_path.read_text())
    except (OSError, ValueError) as exc:
        raise LearnerError(f"{card_path}: cannot read as JSON ({exc})") from None
    if not isinstance(card, dict) or card.get("format") != FORMAT:
        raise LearnerError(f"{card_path}: not a bayes_concepts model card")
    if card.get("format_version") != FORMAT_VERSION:
        from ..engine.store import version_advice
        raise LearnerError(f"{card_path}: format version {card.get('format_version')!r}, this toolkit reads "
                           f"{FORMAT_VERSION}; {version_advice(card.get('format_version'), FORMAT_VERSION, 'model')}")
    return card


def is_model_dir(path) -> bool:
    return (Path(path) / CARD).is_file()


def model_card(learner, extra: dict | None = None) -> dict:
    """The card of a :class:`~bayes_concepts.learners.protonet.ProtoNetLearner` (without the
    weights' checksum, which :func:`save_model` adds)."""
    space = learner.space
    card = {"format": FORMAT, "format_version": FORMAT_VERSION, "name": learner.name, "learner": "protonet",
            "architecture": learner.architecture(), "precision": learner.precision, "seed": learner.seed,
            "space": space_record(space),
            "torch_version": torch.__version__, "toolkit_version": __version__}
    card.update({k: v for k, v in learner.card.items() if k in ("training", "validation")})
    card.update(extra or {})
    return card


def save_model(learner, path, extra: dict | None = None) -> Path:
    """Write ``learner``'s weights and card into directory ``path`` (created if needed)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    card = model_card(learner, extra)
    card["weights"] = WEIGHTS
    card["weights_sha256"] = write_tensors_atomic(path / WEIGHTS, learner.model.state_dict(),
                                                  {"format": FORMAT, "name": learner.name})
    write_json_atomic(path / CARD, card)
    learner.card = card
    return path
