"""The oracle ladder's rungs: ideal learners between the memoriser and the strong oracle.

A *rung* is a Bayesian learner whose hypothesis space or prior depends on a split's
training concepts only (and on the space).  Each is one registered :class:`Rung` in
:data:`rungs`; :func:`rung_learner` makes the learner of a rung for one split, an object with
``evaluate(episodes)`` (scored like the oracles) and ``fit``/``predict_proba``.

Built in, from the bottom of the ladder to the top:

* ``memoriser``: the training concepts only (the weak oracle);
* ``compound``, ``atom``: the recombiners (concepts whose atoms and compounds, or atoms, all
  occur in training concepts; :func:`~bayes_concepts.divergence.nested_concepts`);
* ``bounded_length``: the strong oracle's concepts no longer than the longest training concept;
* ``sampling``, ``sampling_learned``: a learner that considers only ``n`` hypotheses drawn
  from the grammar's prior (or the learned one) for each episode;
* ``learned_prior``, ``learned_prior_parent``: every concept, with a prior learned from the
  training concepts (unigram and parent-conditioned rule probabilities, concentration
  ``alpha``);
* ``strong``: every concept, the grammar's prior.

>>> learner = rung_learner("learned_prior", space, split, OracleSettings(), alpha=10.0)   # doctest: +SKIP
>>> learner.evaluate(episodes)["ap"]                                                       # doctest: +SKIP
"""
from .rung import (Rung, RungError, check_rung, default_rungs, ladder_order, oracle_names, parse_rung_text,
                   readme_columns, rung_label, rung_learner, rungs, strong_concepts)

__all__ = ["Rung", "RungError", "rungs", "rung_learner", "check_rung", "rung_label", "strong_concepts",
           "parse_rung_text", "ladder_order", "default_rungs", "oracle_names", "readme_columns", "LADDER_ORDER"]


def __getattr__(name):
    if name == "LADDER_ORDER":  # the registered rungs' positions, read when asked for
        return ladder_order()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
