"""Learners scored beside the oracles.

* :mod:`.protocol`: the learner protocol (``fit``, ``predict_proba``; optional
  ``decision_function``, ``evaluate``, ``train``);
* :mod:`.scoring`: one scorer for every learner (:func:`score_learners`), used by
  :func:`bayes_concepts.gap.compute_gap`;
* :mod:`.conformance`: :func:`check_learner`, for any user-written learner;
* :mod:`.reference`: ``random`` and ``prototype``, learners that need no training;
* :mod:`.encoders`, :mod:`.poolings`, :mod:`.protonet`: CURI's neural baselines in torch
  (scene encoders; average, concat, relnet and transformer poolings; concept loss;
  :func:`load_model`, a saved model rebuilt);
* :mod:`.modalities`: the built-in encoders (schema, image, sound), registered in
  :data:`encoders` on the registry's first use;
* :mod:`.grid_nets`: ConceptWorld's five baseline image classifiers (mlp, cnn, resnet18,
  wren, predinet) in :data:`grid_nets`, trained per experiment by
  :mod:`bayes_concepts.suites.conceptworld.baselines`;
* :mod:`.training`: meta-training with validation, early stopping, budgets, resuming;
* :mod:`.store`: models on disk (safetensors weights and a JSON card), files only;
* :mod:`.binding`: a trained model is scored on its own space and split only (the card
  records both), unless the caller allows another explicitly.

>>> learner = make_learner(space, "schema-relnet", seed=0)                 # doctest: +SKIP
>>> learner.train(split, budget="30m", out="models/relnet")                # doctest: +SKIP
>>> compute_gap(space, {"concept_iid": split}, learners={"relnet": learner})  # doctest: +SKIP
"""
from __future__ import annotations

import sys
import types
from pathlib import Path

from ..lazy_names import lazy_getattr

#: public name -> the module of this package that defines it, imported on first use (PEP 562): the
#: neural learners load torch, which a command that scores no model (``gap``, ``audit``) never needs
_EXPORTS = {
    "check_scoring": ".binding", "check_space": ".binding", "model_label": ".binding",
    "LearnerCheckError": ".conformance", "check_learner": ".conformance",
    "ObjectSet": ".encoders", "SceneEncoder": ".encoders", "SchemaEncoder": ".encoders", "encoders": ".encoders",
    "GridNetError": ".grid_nets", "grid_nets": ".grid_nets", "make_grid_net": ".grid_nets",
    "SchemaLayout": ".features", "bag_of_values": ".features", "check_learner_space": ".features",
    "poolings": ".poolings",
    "Learner": ".protocol", "LearnerError": ".protocol", "MetaLearner": ".protocol", "is_learner": ".protocol",
    "ProtoNet": ".protonet", "ProtoNetLearner": ".protonet", "load_model": ".protonet",
    "parse_architecture": ".protonet",
    "PrototypeLearner": ".prototype",
    "NearestPrototype": ".reference", "RandomLearner": ".reference", "reference_learners": ".reference",
    "evaluate_by_protocol": ".scoring", "score_learner": ".scoring", "score_learners": ".scoring",
    "is_model_dir": ".store", "read_card": ".store", "save_model": ".store",
    "TrainingProfile": ".profiles", "resolve_profile": ".profiles", "training_profiles": ".profiles",
    "TrainSettings": ".training", "parse_duration": ".training", "train": ".training",
}

__all__ = ["Learner", "MetaLearner", "LearnerError", "LearnerCheckError", "is_learner", "check_learner",
           "score_learner", "score_learners", "evaluate_by_protocol", "RandomLearner", "NearestPrototype",
           "PrototypeLearner", "reference_learners", "ProtoNet", "ProtoNetLearner", "ObjectSet", "SceneEncoder",
           "SchemaEncoder", "SchemaLayout", "bag_of_values", "encoders", "poolings", "TrainSettings", "train",
           "parse_duration", "save_model", "load_model", "read_card", "is_model_dir", "make_learner",
           "parse_architecture", "learners_for_gap", "TrainingProfile", "training_profiles", "resolve_profile", "check_learner_space",
           "grid_nets", "make_grid_net", "GridNetError"]


__getattr__ = lazy_getattr(__name__, _EXPORTS)

#: registries named like the module that holds them: ``learners.encoders`` is the registry
_REGISTRIES = ("encoders", "poolings", "grid_nets")


class _Package(types.ModuleType):
    """This package's module: importing a submodule binds it to its name in the package, and for
    the three registries named like their modules the registry takes that name instead (as when
    the package imported them eagerly), so ``from bayes_concepts.learners import encoders`` is the
    registry whichever module was imported first."""

    def __setattr__(self, name, value):
        if name in _REGISTRIES and isinstance(value, types.ModuleType) and hasattr(value, name):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def make_learner(space, spec: str, *, seed: int = 0, name: str | None = None, **options):
    """A learner of ``space`` from a name: a reference learner (``random``, ``prototype``, or
    any registered in :data:`reference_learners`), an architecture ``ENCODER-POOLING``
    (``schema-relnet``: a new, untrained :class:`ProtoNetLearner`; ``options`` go to it), or
    the path of a saved model directory."""
    from .features import check_learner_space
    from .protonet import ProtoNetLearner, load_model, parse_architecture
    from .protocol import LearnerError
    from .reference import reference_learners
    from .store import is_model_dir
    spec = str(spec)
    check_learner_space(space)
    if spec in reference_learners:
        learner = reference_learners.get(spec)(space, seed=seed)
        if name:
            learner.name = name
        return learner
    if is_model_dir(spec):
        return load_model(spec, space, name=name, **options)
    if Path(spec).exists():
        raise LearnerError(f"{spec}: not a model directory (no card.json)")
    encoder, pooling = parse_architecture(spec)
    return ProtoNetLearner(space, encoder, pooling, seed=seed, name=name, **options)


def learners_for_gap(space, splits, specs, seed: int = 0, allow_other_space: bool = False) -> dict:
    """The ``learners`` argument of :func:`bayes_concepts.gap.compute_gap` from command-line
    specs: a saved model directory (scored on the split it was trained on, which must be
    among ``splits``, on the space it was trained on and with its training split's concepts,
    unless ``allow_other_space``: :mod:`.binding`) or a reference learner name (scored on
    every split)."""
    from .binding import check_scoring, check_space, model_label
    from .features import check_learner_space
    from .protocol import LearnerError
    from .protonet import load_model
    from .reference import reference_learners
    from .store import is_model_dir, read_card
    out = {}
    if specs:
        check_learner_space(space)
    for spec in specs or []:
        if is_model_dir(spec):
            card = read_card(spec)
            trained_on = (card.get("training") or {}).get("split")
            if trained_on not in splits:
                # another space first: its training split need not exist here, so --split would not help
                check_space(card, space, label=model_label(card, card.get("name") or Path(spec).name, spec),
                            allow_other_space=allow_other_space)
                raise LearnerError(f"{spec}: the model was trained on split {trained_on!r}, which is not among the "
                                   f"splits scored ({', '.join(splits)}); pass --split {trained_on}")
            name = card.get("name") or Path(spec).name
            if name in out:
                name = Path(spec).resolve().name
            if name in out:
                raise LearnerError(f"two learners named {name!r}; give the model directories distinct names")
            # before the weights are read: another space or split is refused by its card alone
            check_scoring(card, space, trained_on, splits[trained_on], label=model_label(card, name, spec),
                          allow_other_space=allow_other_space)
            out[name] = {trained_on: load_model(spec, space, name=name, allow_other_space=allow_other_space)}
        elif spec in reference_learners:
            if spec in out:
                raise LearnerError(f"learner {spec!r} given twice")
            out[spec] = make_learner(space, spec, seed=seed)
        else:
            raise LearnerError(f"--learner {spec}: neither a model directory (with card.json) nor a reference "
                               f"learner ({', '.join(reference_learners)})")
    return out
