"""Cognitive-science analyses: fitting an ideal observer to a learner's or a person's judgements.

The ideal observer is the Bayesian oracle (:mod:`bayes_concepts.oracles`) with the ``length`` prior
(rate β) and the ``noisy`` likelihood (label-noise rate ε).  Typical use::

    from bayes_concepts.cogsci import (prepare_observer_data, oracle_predictive, fit_ideal_observer,
                                       posterior_summary, simulate_learner,
                                       plot_posterior_predictive_check)
    data = prepare_observer_data(space, episodes)            # numpy, once per episode batch
    p = oracle_predictive(0.2, 0.05, data)                    # torch (E, Q), differentiable
    y = simulate_learner(space, episodes, beta=0.6, epsilon=0.1, lapse=0.05, data=data)
    ds = fit_ideal_observer(space, episodes, y, kind="binary", data=data)   # xarray (chain, draw)
    posterior_summary(ds, prob=0.9)["beta"]                   # {'mean', 'low', 'high', ...}
    ax, table = plot_posterior_predictive_check(ds, space, episodes, y, data=data)

Modules: :mod:`.data` (per-episode sufficient statistics, the predictive, pruning bound),
:mod:`.model` (pyro model, NUTS fit, summaries, simulation), :mod:`.ppc` (posterior
predictive check: its table and its figure).

:mod:`.sequential`: trial-by-trial learning, block errors averaged over random orders (the
people suite, :mod:`bayes_concepts.suites.shj`, fits it to Shepard, Hovland and Jenkins's six
category structures).
"""
from .data import ObserverData, concept_bits, log_posterior_cells, oracle_predictive, prepare_observer_data
from .model import (CensoredBeta, Priors, concepts_from_attrs, fit_ideal_observer, log_beta_cdf_small,
                    observer_model, posterior_summary, response_probability, simulate_learner)
from .ppc import plot_posterior_predictive_check, posterior_predictive_check, response_probabilities
from .sequential import Design, block_errors, prefix_states, trial_predictive

__all__ = ["ObserverData", "prepare_observer_data", "concept_bits", "log_posterior_cells", "oracle_predictive",
           "Priors", "observer_model", "CensoredBeta", "log_beta_cdf_small", "response_probability",
           "fit_ideal_observer", "posterior_summary", "concepts_from_attrs", "simulate_learner",
           "posterior_predictive_check", "plot_posterior_predictive_check", "response_probabilities",
           "Design", "block_errors", "prefix_states", "trial_predictive"]
