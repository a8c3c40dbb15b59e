"""A trained model belongs to the space and the split it was trained on.

Training records both in the model's history (the card's ``training`` entry):

``training.space``
    the training space's manifest sha256 (``"unsaved"`` for a space never saved), its path
    when saved, and its numbers of concepts and scenes;
``training.split``, ``training.split_sha256``
    the split's name and the sha256 of its train/val/test concept sets
    (:meth:`bayes_concepts.splits.Split.concepts_sha256`).

Scoring a model on a space with another manifest, or on a split with other concepts (a
split of the same name made by another spec included), would test it on concepts it may
have trained on.  :func:`check_scoring` makes that a one-line :class:`LearnerError` naming
both sides, unless the caller allows it explicitly (``--allow-other-space``,
``allow_other_space=True``); :func:`bayes_concepts.gap.compute_gap` then records what was
allowed in the results (each learner's ``scored_on`` entry).

What cannot be told apart is let through and recorded as ``"unverified"``: a model trained
on a space that was never saved, scored on a space with the same numbers of concepts and
scenes; a model whose card predates split hashes.

>>> check_scoring(read_card("models/relnet"), space, "concept_iid", split)    # doctest: +SKIP
{'space_check': 'same', 'split_check': 'same', ...}
"""
from __future__ import annotations

from pathlib import Path

from .protocol import LearnerError

UNSAVED = "unsaved"
#: the override's name in results
OVERRIDE = "allow_other_space"
HINT = "pass --allow-other-space (API: allow_other_space=True) to score it anyway"


def space_record(space) -> dict:
    """What a model's card records of the space it was trained on."""
    path = space.path
    return {"manifest_sha256": space.manifest_sha256() or UNSAVED, "path": str(Path(path).resolve()) if path else None,
            "n_concepts": int(space.n_concepts), "n_scenes": int(space.n_scenes)}


def training_of(card) -> dict | None:
    """The ``training`` entry of a card (or of a learner's card); None when not trained."""
    if not isinstance(card, dict):
        card = getattr(card, "card", None)
    training = card.get("training") if isinstance(card, dict) else None
    return training if isinstance(training, dict) else None


def trained_space(card: dict) -> dict | None:
    """The training space's record: the history's ``space``, else (older cards) the card's."""
    training = training_of(card) or {}
    found = training.get("space") or card.get("space")
    return found if isinstance(found, dict) else None


def _space_text(record: dict) -> str:
    digest = record.get("manifest_sha256") or UNSAVED
    where = record.get("path") or "an unsaved space"
    if digest == UNSAVED:
        sizes = ", ".join(f"{record[k]:,} {k[2:]}" for k in ("n_concepts", "n_scenes") if isinstance(record.get(k), int))
        return f"{where} (not saved{'; ' + sizes if sizes else ''})"
    return f"{where} (manifest sha256 {digest[:12]})"


def compare_spaces(trained: dict | None, space, same_object: bool = False) -> str:
    """``same``, ``other`` or ``unverified``: whether ``space`` is the space ``trained`` records."""
    if same_object:
        return "same"
    if not trained:
        return "unverified"
    here = space_record(space)
    a, b = trained.get("manifest_sha256") or UNSAVED, here["manifest_sha256"]
    if a != UNSAVED and b != UNSAVED:
        return "same" if a == b else "other"
    if any(k in trained and trained[k] != here[k] for k in ("n_concepts", "n_scenes")):
        return "other"
    return "unverified"


def model_label(card: dict, name: str | None = None, path=None) -> str:
    label = f"model {name or card.get('name') or '?'!r}"
    return f"{label} ({path})" if path else label


def check_space(card: dict, space, *, label: str, allow_other_space: bool = False, same_object: bool = False,
                hint: str = HINT) -> str:
    """Raise a one-line :class:`LearnerError` when ``space`` is not the space the model
    (``card``) was trained on, unless ``allow_other_space``; returns the comparison."""
    trained = trained_space(card)
    verdict = compare_spaces(trained, space, same_object)
    if verdict == "other" and not allow_other_space:
        raise LearnerError(f"{label} was trained on space {_space_text(trained)} and is scored on space "
                           f"{_space_text(space_record(space))}: its training concepts may be test concepts there; "
                           f"{hint}")
    return verdict


def check_scoring(card: dict, space, split_name: str, split, *, label: str | None = None,
                  allow_other_space: bool = False, same_object: bool = False, hint: str = HINT) -> dict:
    """Check that a trained model (its ``card``) is scored on its own space and on a split
    with its training split's concepts; a one-line :class:`LearnerError` naming both sides
    otherwise, unless ``allow_other_space``.  Returns the record the results keep: the
    space and split scored, each comparison (``same``, ``other``, ``unverified``) and the
    override when one let a mismatch through."""
    label = label or model_label(card)
    training = training_of(card) or {}
    space_check = check_space(card, space, label=label, allow_other_space=allow_other_space,
                              same_object=same_object, hint=hint)
    here = split.concepts_sha256()
    trained_name, trained_hash = training.get("split"), training.get("split_sha256")
    split_check = "unverified" if not trained_hash else "same" if trained_hash == here else "other"
    if split_check == "other" and not allow_other_space:
        what = (f"another split named {split_name!r} (concepts sha256 {here[:12]}): the same name with other "
                f"train/val/test concepts" if trained_name == split_name else
                f"split {split_name!r} (concepts sha256 {here[:12]}), which has other concepts")
        raise LearnerError(f"{label} was trained on split {trained_name!r} (concepts sha256 {trained_hash[:12]}) "
                           f"and is scored on {what}; {hint}")
    here_space = space_record(space)
    record = {"space_manifest_sha256": here_space["manifest_sha256"], "space_path": here_space["path"],
              "split": split_name, "split_sha256": here, "space_check": space_check, "split_check": split_check,
              "override": OVERRIDE if "other" in (space_check, split_check) else None}
    return record


def check_learners(space, splits: dict, table: dict, allow_other_space: bool = False) -> dict:
    """:func:`check_scoring` for every trained model of a :func:`~bayes_concepts.gap.compute_gap`
    learner table (name -> {split name: learner}); ``{(name, split name): record}``.  A
    learner loaded with ``allow_other_space=True`` carries the override itself."""
    out = {}
    for name, per_split in table.items():
        for split_name, learner in per_split.items():
            card = getattr(learner, "card", None)
            if training_of(card) is None:
                continue  # untrained, or not a model with a card: nothing to check
            same = getattr(learner, "training_space", None) is space
            allowed = allow_other_space or bool(getattr(learner, "allow_other_space", False))
            out[(name, split_name)] = check_scoring(
                card, space, split_name, splits[split_name],
                label=model_label(card, name, getattr(learner, "model_dir", None)),
                allow_other_space=allowed, same_object=same)
    return out
