"""CURI's neural baselines: prototypical networks over a scene encoder and a pooling.

A :class:`ProtoNet` embeds a scene as ``pooling(encoder(scene))`` (float (N,), CURI:
N = 256) and scores a query scene by its squared distances to the support's
positive and negative prototypes (:mod:`.prototype`).  With ``alpha > 0`` a
:class:`ConceptDecoder` (an LSTM) also learns to spell the true concept's program in
prefix form from the pair of prototypes (CURI's concept loss, weight alpha).

:class:`ProtoNetLearner` is the learner: the protocol (``fit``/``predict_proba``),
the embed-once batch path ``evaluate(episodes)``, ``train`` (see
:mod:`.training`), ``save``/``load``: :func:`load_model` rebuilds a learner from a
directory written by :func:`~bayes_concepts.learners.store.save_model` (files and cards:
:mod:`.store`).

>>> model = ProtoNetLearner(space, "schema", "relnet", seed=0)              # doctest: +SKIP
>>> model.train(split, budget="5m", out="models/relnet")                    # doctest: +SKIP
>>> model.fit(support_ids, labels).predict_proba(query_ids)                 # doctest: +SKIP
"""
from __future__ import annotations

import contextlib
import re
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .binding import check_space, model_label, space_record
from .encoders import encoders
from .features import SceneArrays, scene_arrays
from .poolings import poolings
from .protocol import LearnerError
from .prototype import PrototypeLearner
from .store import CARD, WEIGHTS, read_card, read_tensors, save_model
from .training import train as meta_train

SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>")
PRECISIONS = ("auto", "fp32", "bf16")
#: scenes per forward pass when embedding without gradients
EMBED_BATCH = 8192


def architecture_name(encoder: str, pooling: str) -> str:
    """``schema-relnet`` from ``("schema", "relnet")``."""
    return f"{encoder}-{pooling}"


def parse_architecture(name: str) -> tuple:
    """``"schema-relnet"`` -> ``("schema", "relnet")``, checked against the registries."""
    m = re.fullmatch(r"([A-Za-z0-9_]+)-([A-Za-z0-9_]+)", str(name))
    if not m:
        raise LearnerError(f"learner architecture {name!r}: expected ENCODER-POOLING, e.g. schema-relnet "
                           f"(encoders: {', '.join(encoders)}; poolings: {', '.join(poolings)})")
    enc, pool = m.groups()
    for what, registry, key in (("encoder", encoders, enc), ("pooling", poolings, pool)):
        if key not in registry:
            raise LearnerError(f"learner architecture {name!r}: unknown {what} {key!r} "
                               f"(expected one of {', '.join(registry)})")
    return enc, pool


def resolve_device(device=None) -> torch.device:
    """The given device, else CUDA when available, else the CPU."""
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def bf16_supported(device: torch.device) -> bool:
    """Whether bfloat16 matrix products are fast on ``device`` (CPU: AVX512-BF16 or AMX)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    try:
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def resolve_precision(precision: str, device: torch.device) -> str:
    """``auto`` -> ``bf16`` on a CPU with fast bfloat16 products (several times faster than
    float32 there), else ``fp32``; ``fp32`` and ``bf16`` as given."""
    if precision not in PRECISIONS:
        raise LearnerError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "auto":
        return "bf16" if device.type == "cpu" and bf16_supported(device) else "fp32"
    return precision


# ============================================================================ concept loss
def program_vocabulary(space) -> list:
    """Tokens of the prefix forms of the space's programs, after :data:`SPECIAL_TOKENS`."""
    tokens = set()
    for i in range(space.n_concepts):
        tokens.update(space.program(i).prefix.split())
    return [*SPECIAL_TOKENS, *sorted(tokens)]


def program_tokens(space, vocabulary: list) -> np.ndarray:
    """int64 (n_concepts, L): each concept's prefix tokens as vocabulary indices between
    ``<bos>`` and ``<eos>``, padded with ``<pad>`` (0)."""
    index = {t: i for i, t in enumerate(vocabulary)}
    seqs = []
    for i in range(space.n_concepts):
        toks = space.program(i).prefix.split()
        unknown = [t for t in toks if t not in index]
        if unknown:
            raise LearnerError(f"concept {i}: token {unknown[0]!r} is not in the model's vocabulary")
        seqs.append([1, *(index[t] for t in toks), 2])
    out = np.zeros((len(seqs), max(len(s) for s in seqs)), np.int64)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = s
    return out


class ConceptDecoder(nn.Module):
    """An LSTM that spells a program from a support set's prototypes: at every step the
    input is the previous token's embedding next to the context [c_p, c_n] (float (E, C)).

    Parameters
    ----------
    vocabulary_size : int
    context_dim : int
        Size of the context (2 N).
    embed_dim, hidden_dim : int
    """

    def __init__(self, vocabulary_size: int, context_dim: int, embed_dim: int = 64, hidden_dim: int = 256):
        super().__init__()
        self.vocabulary_size, self.context_dim = int(vocabulary_size), int(context_dim)
        self.embed_dim, self.hidden_dim = int(embed_dim), int(hidden_dim)
        self.embed = nn.Embedding(self.vocabulary_size, self.embed_dim, padding_idx=0)
        self.lstm = nn.LSTM(self.embed_dim + self.context_dim, self.hidden_dim, batch_first=True)
        self.out = nn.Linear(self.hidden_dim, self.vocabulary_size)

    def config(self) -> dict:
        return {"vocabulary_size": self.vocabulary_size, "context_dim": self.context_dim,
                "embed_dim": self.embed_dim, "hidden_dim": self.hidden_dim}

    def loss(self, context: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy (nats per token) of ``tokens`` int (E, L) (``<bos>`` first, padded
        with 0) given ``context`` float (E, C), teacher forced."""
        inp, target = tokens[:, :-1], tokens[:, 1:]
        x = torch.cat([self.embed(inp), context.unsqueeze(1).expand(-1, inp.shape[1], -1)], dim=-1)
        h, _ = self.lstm(x)
        logits = self.out(h).float()
        return nn.functional.cross_entropy(logits.reshape(-1, self.vocabulary_size), target.reshape(-1),
                                           ignore_index=0)


# ============================================================================ the network
class ProtoNet(nn.Module):
    """encoder -> pooling -> embedding (N,); optional concept decoder."""

    def __init__(self, encoder, pooling, decoder: ConceptDecoder | None = None):
        super().__init__()
        self.encoder, self.pooling, self.decoder = encoder, pooling, decoder

    def embed(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.pooling(self.encoder(inputs))

    @staticmethod
    def prototypes(support: torch.Tensor, labels: torch.Tensor):
        """support float (E, K, N), labels 0/1 (E, K) -> (c_p, c_n) float (E, N)."""
        y = labels.to(support.dtype).unsqueeze(-1)
        c_p = (support * y).sum(1) / y.sum(1).clamp(min=1)
        c_n = (support * (1 - y)).sum(1) / (1 - y).sum(1).clamp(min=1)
        return c_p, c_n

    @staticmethod
    def logits(query: torch.Tensor, c_p: torch.Tensor, c_n: torch.Tensor) -> torch.Tensor:
        """||q − c_n||² − ||q − c_p||² for query float (E, Q, N): float (E, Q)."""
        w = 2 * (c_p - c_n)
        b = (c_n * c_n).sum(-1) - (c_p * c_p).sum(-1)
        return torch.einsum("eqn,en->eq", query, w) + b.unsqueeze(1)


def _init_xavier(module: nn.Module):
    """Glorot-uniform weights and zero biases for every linear layer (CURI's initialisation,
    'crucial for training relation networks')."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)


class ProtoNetLearner(PrototypeLearner):
    """A prototypical network as a learner of ``space``.

    Parameters
    ----------
    space : HypothesisSpace
    encoder, pooling : str
        Names in :data:`~bayes_concepts.learners.encoders.encoders` and
        :data:`~bayes_concepts.learners.poolings.poolings`.
    embedding_dim : int
        Scene embedding size N (CURI: 256).
    alpha : float
        Weight of the concept loss (0: no decoder, CURI's default setting).
    seed : int
        Seeds the weight initialisation (and, in :meth:`train`, the episodes).
    precision : ``auto`` | ``fp32`` | ``bf16``
        Arithmetic of the network's matrix products (``bf16``: bfloat16 autocast, float32
        weights and sums); ``auto`` picks ``bf16`` on CPUs with fast bfloat16 units.
    device : str or torch.device, optional
        Default: CUDA if available, else the CPU.
    name : str, optional
        Name in results (default ``ENCODER-POOLING``).
    encoder_options, pooling_options, decoder_options : dict, optional
        Architecture sizes (defaults: CURI's).
    """

    def __init__(self, space, encoder: str = "schema", pooling: str = "relnet", *, embedding_dim: int = 256,
                 alpha: float = 0.0, seed: int = 0, precision: str = "auto", device=None, name: str | None = None,
                 encoder_options: dict | None = None, pooling_options: dict | None = None,
                 decoder_options: dict | None = None, vocabulary: list | None = None):
        super().__init__(space, name or architecture_name(encoder, pooling))
        parse_architecture(architecture_name(encoder, pooling))
        if not (np.isfinite(alpha) and alpha >= 0):
            raise LearnerError(f"alpha must be a number >= 0, got {alpha!r}")
        self.encoder_kind, self.pooling_kind = encoder, pooling
        self.embedding_dim, self.alpha, self.seed = int(embedding_dim), float(alpha), int(seed)
        self.device = resolve_device(device)
        self.precision = resolve_precision(precision, self.device)
        self.card = {}
        #: the space object it was trained on in this process (None: untrained or loaded), the
        #: directory it was loaded from, and whether it may be scored on another space or split
        self.training_space, self.model_dir, self.allow_other_space = None, None, False
        self._tokens = None
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            enc_cls = encoders.get(encoder)
            enc = enc_cls.from_space(space, **(encoder_options or {}))
            pool = poolings.get(pooling)(enc.out_dim, enc.n_objects, self.embedding_dim, **(pooling_options or {}))
            decoder = None
            if self.alpha > 0:
                self.vocabulary = list(vocabulary) if vocabulary is not None else program_vocabulary(space)
                decoder = ConceptDecoder(len(self.vocabulary), 2 * self.embedding_dim, **(decoder_options or {}))
            else:
                self.vocabulary = None
            self.model = ProtoNet(enc, pool, decoder)
            _init_xavier(self.model)
        self.model.to(self.device).eval()

    # ---------------------------------------------------------------- describe
    def architecture(self) -> dict:
        """JSON-able description that rebuilds the network (see :func:`load_model`)."""
        m = self.model
        return {"encoder": {"kind": self.encoder_kind, "config": m.encoder.config()},
                "pooling": {"kind": self.pooling_kind, "config": m.pooling.config()},
                "embedding_dim": self.embedding_dim, "alpha": self.alpha,
                "decoder": m.decoder.config() if m.decoder is not None else None,
                "vocabulary": self.vocabulary,
                "parameters": int(sum(p.numel() for p in m.parameters()))}

    def info(self) -> dict:
        """What the results file records about this learner: architecture, seed, precision,
        and, once trained, its training space (manifest sha256, path, sizes), split (name and
        concept-set sha256), steps, episodes, settings, best validation step and mAP, why
        training stopped, and the weights' sha256 and directory when saved or loaded."""
        training = self.card.get("training") or {}
        space = training.get("space") or self.card.get("space")
        if space is None and training and self.training_space is not None:
            space = space_record(self.training_space)
        return {"kind": "protonet", "architecture": architecture_name(self.encoder_kind, self.pooling_kind),
                "alpha": self.alpha, "seed": self.seed, "precision": self.precision,
                "training_space": space, "split": training.get("split"), "split_sha256": training.get("split_sha256"),
                "steps": training.get("steps"), "episodes": training.get("episodes"),
                "settings": training.get("settings"), "best_step": training.get("best_step"),
                "best_val_map": training.get("best_val_map"), "stopped": training.get("stopped"),
                "weights_sha256": self.card.get("weights_sha256"),
                "validation": self.card.get("validation") or training.get("validation"),
                "model_dir": str(self.model_dir) if self.model_dir else None}

    def __repr__(self):
        n = sum(p.numel() for p in self.model.parameters())
        return (f"ProtoNetLearner({self.name!r}, {self.encoder_kind}-{self.pooling_kind}, {n:,} parameters, "
                f"alpha={self.alpha}, {self.precision} on {self.device})")

    # ---------------------------------------------------------------- network
    def autocast(self):
        """Context for the network's forward passes (bfloat16 autocast when precision is bf16)."""
        if self.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def inputs(self, scenes) -> torch.Tensor:
        """The encoder's model input of a batch of scenes: :class:`SceneArrays`, or attribute
        codes int (n, S, A) of scenes without positions or relations."""
        if isinstance(scenes, SceneArrays):
            return self.model.encoder.from_scenes(scenes)
        return self.model.encoder.from_codes(np.asarray(scenes))

    def embed_codes(self, codes: np.ndarray) -> np.ndarray:
        """Embeddings (eval mode, no gradients) of scenes given as codes: float32 (n, N)."""
        return self.embed_scenes(SceneArrays(np.asarray(codes)))

    def embed_ids(self, ids) -> np.ndarray:
        """Embeddings of scene-bank ids int (n,) of the learner's space, each scene with its own
        relations and positions: float32 (n, N)."""
        return self.embed_scenes(scene_arrays(self.space, np.asarray(ids, np.int64)))

    def embed(self, scenes) -> np.ndarray:
        """Embeddings of scenes given as bank ids or scene dicts: float32 (n, N)."""
        return self.embed_scenes(scene_arrays(self.space, scenes))

    def embed_scenes(self, scenes: SceneArrays) -> np.ndarray:
        """Embeddings (eval mode, no gradients) of a batch of scenes: float32 (n, N)."""
        out = np.empty((len(scenes), self.embedding_dim), np.float32)
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad(), self.autocast():
                step = int(getattr(self.model.encoder, "embed_batch", EMBED_BATCH))
                for lo in range(0, len(scenes), step):
                    x = self.inputs(scenes.rows(slice(lo, lo + step))).to(self.device)
                    out[lo: lo + len(x)] = self.model.embed(x).float().cpu().numpy()
        finally:
            self.model.train(was_training)
        return out

    def concept_tokens(self) -> torch.Tensor:
        """int64 (n_concepts, L) prefix tokens of every concept of the space (concept loss)."""
        if self._tokens is None:
            self._tokens = torch.from_numpy(program_tokens(self.space, self.vocabulary))
        return self._tokens

    def episode_loss(self, support_scenes: np.ndarray, support_labels: np.ndarray, query_scenes: np.ndarray,
                     query_labels: np.ndarray, concepts: np.ndarray | None = None):
        """Training loss of a batch of episodes (train mode, with gradients).

        support_scenes, query_scenes: scene-bank ids int (E, K) of the learner's space (what
        training passes: each scene with its own relations and positions), or attribute codes
        int8 (E, K, S, A) of scenes without positions or relations; labels 0/1 (E, K);
        concepts int (E,) (needed when alpha > 0).  Returns (total, query loss, concept loss or
        None): the mean binary cross-entropy of the query labels (nats) + alpha × the
        decoder's mean token cross-entropy."""
        e, k = support_labels.shape
        kq = query_labels.shape[1]
        support_scenes, query_scenes = np.asarray(support_scenes), np.asarray(query_scenes)
        if support_scenes.ndim == 2 and query_scenes.ndim == 2:
            scenes = scene_arrays(self.space, np.concatenate([support_scenes.reshape(-1), query_scenes.reshape(-1)]))
        else:
            scenes = np.concatenate([support_scenes.reshape(e * k, *support_scenes.shape[2:]),
                                     query_scenes.reshape(e * kq, *query_scenes.shape[2:])])
        x = self.inputs(scenes).to(self.device)
        with self.autocast():
            emb = self.model.embed(x).float()
        support, query = emb[: e * k].reshape(e, k, -1), emb[e * k:].reshape(e, kq, -1)
        ys = torch.as_tensor(np.asarray(support_labels), device=self.device)
        yq = torch.as_tensor(np.asarray(query_labels), device=self.device).float()
        c_p, c_n = ProtoNet.prototypes(support, ys)
        logits = ProtoNet.logits(query, c_p, c_n)
        query_loss = nn.functional.binary_cross_entropy_with_logits(logits, yq)
        concept_loss = None
        total = query_loss
        if self.alpha > 0:
            tokens = self.concept_tokens()[torch.as_tensor(np.asarray(concepts, np.int64))].to(self.device)
            with self.autocast():
                concept_loss = self.model.decoder.loss(torch.cat([c_p, c_n], dim=1), tokens)
            total = query_loss + self.alpha * concept_loss
        return total, query_loss, concept_loss

    # ---------------------------------------------------------------- training
    def train(self, split, **options):
        """Meta-train on ``split``'s train concepts (see :func:`bayes_concepts.learners.training.train`
        for the options).  Returns the training history (dict)."""
        return meta_train(self, split, **options)

    def save(self, path, card: dict | None = None):
        """Write the weights and card into directory ``path`` (:func:`~.store.save_model`)."""
        return save_model(self, path, card)

    @classmethod
    def load(cls, path, space, *, device=None, name: str | None = None, precision: str | None = None,
             allow_other_space: bool = False):
        """The learner saved in ``path``, for ``space`` (:func:`load_model`)."""
        return load_model(path, space, device=device, name=name, precision=precision,
                          allow_other_space=allow_other_space)


def load_model(path, space, *, device=None, name: str | None = None, precision: str | None = None,
               allow_other_space: bool = False):
    """Rebuild the learner saved in ``path`` for ``space`` (whose scene schema must give the
    model's features).  ``precision`` defaults to the card's; ``name`` to the card's.  The
    directory is read by :mod:`.store` (card and checksummed weights, no pickle).

    ``space`` must be the space the model was trained on (the manifest sha256 its card
    records; :mod:`.binding`): another is a one-line :class:`LearnerError` naming both,
    unless ``allow_other_space`` -- which the learner keeps, so that
    :func:`~bayes_concepts.gap.compute_gap` scores it and records the override."""
    path = Path(path)
    card = read_card(path)
    check_space(card, space, label=model_label(card, name, path), allow_other_space=allow_other_space)
    arch = card.get("architecture") or {}
    try:
        enc, pool = arch["encoder"], arch["pooling"]
        enc_cfg, pool_cfg = dict(enc["config"]), dict(pool["config"])
        enc_keys = getattr(encoders.get(enc["kind"]), "space_options", None) if enc["kind"] in encoders else None
        encoder_options = {k: enc_cfg[k] for k in enc_keys or ("object_dim", "hidden_ratio") if k in enc_cfg}
        pooling_options = {k: v for k, v in pool_cfg.items() if k not in ("in_dim", "n_objects", "out_dim")}
        decoder = arch.get("decoder")
        decoder_options = {k: decoder[k] for k in ("embed_dim", "hidden_dim")} if decoder else None
        learner = ProtoNetLearner(space, enc["kind"], pool["kind"], embedding_dim=arch["embedding_dim"],
                                  alpha=arch["alpha"], seed=card.get("seed", 0),
                                  precision=precision or card.get("precision", "fp32"), device=device,
                                  name=name or card.get("name"), encoder_options=encoder_options,
                                  pooling_options=pooling_options, decoder_options=decoder_options,
                                  vocabulary=arch.get("vocabulary"))
    except (KeyError, TypeError) as exc:
        raise LearnerError(f"{path / CARD}: incomplete architecture ({exc})") from None
    learner.model.encoder.check_space(space)
    built = learner.model.encoder.config()
    for key in ("feature_names", "table_shapes", "n_slots", "schema"):
        if key in enc_cfg and enc_cfg[key] != built.get(key):
            raise LearnerError(f"{path}: the model's encoder expects {key} {enc_cfg[key]}; this space gives "
                               f"{built.get(key)}")
    tensors = read_tensors(path / card.get("weights", WEIGHTS), card.get("weights_sha256"))
    expected = learner.model.state_dict().keys()
    missing, unexpected = expected - tensors.keys(), tensors.keys() - expected
    if missing or unexpected:
        raise LearnerError(f"{path / WEIGHTS}: weights do not match the card's architecture "
                           f"(missing {sorted(missing)[:3]}, unexpected {sorted(unexpected)[:3]})")
    learner.model.load_state_dict(tensors)
    learner.model.eval()
    learner.weights_changed()
    learner.card = card
    learner.model_dir, learner.allow_other_space = path, bool(allow_other_space)
    return learner
