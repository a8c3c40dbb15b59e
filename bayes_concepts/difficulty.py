"""The predictors of a split's difficulty a careful reader tries first, per condition.

A rung of the oracle ladder claims to predict how hard a split is for models; it earns that
claim only against simpler predictors computed on the same conditions:

* ``compound_divergence``, ``atom_divergence``: Keysers et al. (2020)'s divergences of the
  split's train and test sides (:func:`bayes_concepts.divergence.split_divergence`, in
  [0, 1]);
* ``mean_length``: the test concepts' mean description length (tokens);
* ``n_test_concepts``: the number of test concepts;
* ``unseen_token_share``: the share of test concepts with a token (an atom: bound variables
  renamed away; a pair's attribute or object) that no training concept has, in [0, 1];
* ``chance_level``: 100 − the chance level of the answer (percent), where a benchmark's answers
  differ in kind (given per condition by the caller, e.g. CLOSURE's families): a lower chance
  level is read as harder (a drop measured against chance is larger where chance is low);
* ``memoriser``: the memoriser's gap (a rung's, taken from the ladder's rows by
  :func:`bayes_concepts.ladder.ladder_correlations`).

Every predictor is oriented as it is computed (a larger value is read as a harder split);
none is fitted to anything.
"""
from __future__ import annotations

import numpy as np

from .divergence import concept_structure, split_divergence

__all__ = ["PREDICTORS", "PREDICTOR_DEFINITIONS", "split_predictors", "predictor_label"]

#: the predictors computed from a space and its splits, then those supplied from elsewhere
PREDICTORS = ("compound_divergence", "atom_divergence", "mean_length", "n_test_concepts", "unseen_token_share",
              "chance_level", "memoriser")
PREDICTOR_DEFINITIONS = {
    "compound_divergence": "Keysers et al.'s compound divergence of train vs test (episode-weighted, alpha 0.1)",
    "atom_divergence": "Keysers et al.'s atom divergence of train vs test (episode-weighted, alpha 0.5)",
    "mean_length": "mean description length of the test concepts (tokens)",
    "n_test_concepts": "number of test concepts",
    "unseen_token_share": "share of test concepts with a token no training concept has",
    "chance_level": "100 - the answer's chance level (percent), where answers differ in kind: lower chance = harder",
    "memoriser": "the memoriser's gap (strong - memoriser, mAP points)",
}
_LABELS = {"compound_divergence": "compound divergence", "atom_divergence": "atom divergence",
           "mean_length": "mean length", "n_test_concepts": "test concepts", "unseen_token_share": "unseen-token share",
           "chance_level": "low chance level", "memoriser": "memoriser"}


def predictor_label(name: str) -> str:
    """A predictor's name as tables print it."""
    return _LABELS.get(name, name.replace("_", " "))


def split_predictors(space, splits: dict, *, structure=None, chance_levels: dict | None = None,
                     episode_shape=None) -> dict:
    """``{condition: {predictor: value}}`` for every split of ``splits`` (name -> Split).

    structure: a :func:`~bayes_concepts.divergence.concept_structure` of ``space`` to reuse;
    chance_levels: ``{condition: percent}`` where answers differ in kind (absent: no
    ``chance_level``; the predictor is 100 − it); episode_shape: the splits' episode shape (the divergences weigh
    concepts by the episode distribution; default 5+20)."""
    from .episodes import EpisodeShape
    st = structure if structure is not None else concept_structure(space)
    shape = EpisodeShape.parse(episode_shape)
    atoms = (st.atoms > 0).tocsr()
    lengths = np.asarray(space.lengths, np.float64)
    out = {}
    for name, split in splits.items():
        train, test = np.asarray(split.train, np.int64), np.asarray(split.test, np.int64)
        div = split_divergence(space, split, structure=st, n_positive=shape.positives,
                               n_query_positive=shape.query_positives)
        seen = np.asarray(atoms[train].sum(axis=0)).ravel() > 0
        unseen = np.asarray(atoms[test][:, ~seen].sum(axis=1)).ravel() > 0 if len(test) else np.zeros(0, bool)
        row = {"compound_divergence": float(div["compound_divergence"]),
               "atom_divergence": float(div["atom_divergence"]),
               "mean_length": float(lengths[test].mean()) if len(test) else float("nan"),
               "n_test_concepts": float(len(test)),
               "unseen_token_share": float(unseen.mean()) if len(test) else float("nan")}
        if chance_levels is not None and name in chance_levels:
            row["chance_level"] = 100.0 - float(chance_levels[name])
        out[str(name)] = row
    return out
