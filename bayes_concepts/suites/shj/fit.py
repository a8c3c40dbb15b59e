"""Ideal observers against people: Shepard, Hovland & Jenkins' six category structures.

People learned each of the six structures of eight stimuli (three binary dimensions) in
blocks of 16 trials with feedback; Nosofsky et al. (1994) give the proportion of errors per
block for 40 learners per type (``hypotheses/human/``); a study of one's own is read as counts
(:mod:`.people`: errors and trials per cell, or one row per answer).  The ideal observer learns
the same trials (:mod:`.sequential`) over every concept of a boolean language (:mod:`.boolean`):
prior ``length`` (rate β on the shortest description length) or ``pcfg`` (the grammar's
probability to the power β), noisy likelihood ε, lapse λ.  Its expected error per block,
averaged over random trial orders, is fitted to the study with a binomial likelihood on the
numbers of errors k of each cell's n trials (the published table: k = round(p·640) of n = 640,
40 learners × 16 trials):

    k_{type, block} ~ Binomial(n_{type, block}, λ/2 + (1 - λ)·p_{β,ε}(error | type, block)),
    β ~ HalfNormal(1),  ε = 0.5·Beta(1, 1) (uniform on (0, 0.5)),  λ ~ Beta(1, 9).

* :func:`shj_data` gathers what a fit needs (the space's concepts, the structures, the
  counts, the prefix states of the random orders: ``n_orders`` sampled orders, seeded, or
  every state exactly).
* :func:`fit_shj` fits β, ε, λ with pyro: ``svi`` (a multivariate normal guide on the
  unconstrained parameters, Adam; the default: about two minutes here) or ``nuts``.
* :func:`shj_predictions` and :func:`shj_summary`: the posterior's error curves, the
  posterior predictive check (replicated counts per cell and their intervals), the
  correlation of model and human block errors (96 cells), mean errors per type and their
  order, against the people's own order (with its uncertainty from their counts).
* :func:`grid_posterior` and :func:`compare_languages`: the same model on a grid of
  (β, ε, λ): its marginal likelihood by quadrature (the evidence each language and prior
  gives the human table) and a held-out-blocks score (posterior from the odd blocks,
  log predictive density of the even ones).

Results are ``xarray.Dataset`` objects and plain dicts (JSON-ready).
"""
from __future__ import annotations

import contextlib
import json
import math
import time
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyro
import pyro.distributions as dist
import torch
import xarray as xr
from scipy.special import gammaln, logsumexp
from scipy.stats import beta as beta_dist, halfnorm

from ...errors import BayesConceptsError
from ...cogsci.model import Priors, posterior_summary
from ...cogsci.sequential import (DTYPE, MIN_EPSILON, PRIOR_KINDS, Design, PrefixStates, StructureData,
                                  block_errors_torch, epsilon_tables, prefix_states, structure_data, with_lapse)
from .boolean import SHJ_LANGUAGES, boolean_space, language_name, space_truth_tables
from .people import (LEARNERS_PER_TYPE, TYPES, HumanData, HumanDataError, Structures, error_counts,  # noqa: F401
                     human_errors, order_agreement, people_order, read_human, read_structures, shj_structures,
                     type_order)

#: The priors of the SHJ fit (ε uniform on (0, 0.5): the fit lands near 0.4, in the tail of
#: the episode fits' Beta(1, 3)).
SHJ_PRIORS = Priors(beta_scale=1.0, epsilon_a=1.0, epsilon_b=1.0, lapse_a=1.0, lapse_b=9.0)
#: The published order: I < II < {III, IV, V} < VI (mean errors over the 16 blocks), checked
#: only on the published table (Nosofsky et al. 1994) of the six SHJ structures.
HUMAN_ORDER = "I < II < {III, IV, V} < VI"


@contextlib.contextmanager
def torch_threads(n: int | None = 1):
    """Run the block with torch's intra-op threads set to ``n`` (None: unchanged), then restore
    them.  One thread is fastest for these small tensors, and far faster on a busy machine."""
    before = torch.get_num_threads()
    try:
        if n:
            torch.set_num_threads(int(n))
        yield
    finally:
        torch.set_num_threads(before)


# ============================================================================ what a fit needs
@dataclass(frozen=True)
class SHJData:
    """A language's concepts, the six structures, the human counts and the trial design.

    concepts: int64 (H,) truth tables of the observer's concepts; ext: bool (H, N); lengths,
    log_pcfg: float64 (H,); structures: bool (6, N); human: the table of rates (type, block);
    counts: int64 (6, B) errors per cell; n_trials: int64 (6, B) trials per cell (each cell's
    own count); people: the study (:class:`~bayes_concepts.suites.shj.people.HumanData`: name,
    file, sha256); shapes: the structures, named
    (:class:`~bayes_concepts.suites.shj.people.Structures`); structure_data: the kernel's
    tensors."""

    language: str
    prior: str
    concepts: np.ndarray
    ext: np.ndarray
    lengths: np.ndarray
    log_pcfg: np.ndarray
    structures: np.ndarray
    human: xr.DataArray
    counts: np.ndarray
    n_trials: np.ndarray
    design: Design
    states: PrefixStates
    structure_data: StructureData
    space_sha: str
    codes: np.ndarray
    people: HumanData
    shapes: Structures

    @property
    def published(self) -> bool:
        """Whether this is the published study: Nosofsky et al.'s table on the six SHJ structures."""
        return bool(self.people.published and self.shapes.kind == "shj")

    def curves(self, beta, epsilon, lapse=0.0, tables=None) -> np.ndarray:
        """float64 (6, B): expected error per type and block at one parameter value; (..., 6, B)
        when ``beta`` is an array of values (shape ``...``), all scored at once.  ``tables``:
        :meth:`epsilon_tables` of this ``epsilon``, when several calls share it."""
        with torch.no_grad(), torch_threads(1):
            tables = self.epsilon_tables(epsilon) if tables is None else tables
            p = block_errors_torch(torch.as_tensor(np.asarray(beta, np.float64)), None, self.structure_data,
                                   self.prior, tables).numpy()
        return with_lapse(p, lapse)

    def epsilon_tables(self, epsilon) -> tuple:
        """What :meth:`curves` computes from ε alone (:func:`~bayes_concepts.cogsci.sequential.epsilon_tables`),
        ε clipped to [MIN_EPSILON, 0.5)."""
        with torch.no_grad():
            return epsilon_tables(float(np.clip(epsilon, MIN_EPSILON, 0.5 - 1e-12)), self.structure_data)

    def with_states(self, states: PrefixStates) -> "SHJData":
        """The same data with other prefix states (e.g. the exact ones)."""
        sd = structure_data(self.ext, self.structures, self.lengths, self.log_pcfg, self.design, states, self.codes)
        return replace(self, states=states, structure_data=sd)


@lru_cache(maxsize=8)
def _language_space(language: str):
    return boolean_space(language)


def shj_data(language="and_or_not", prior: str = "length", *, space=None, method: str = "exact", n_orders: int = 32,
             seed: int = 0, human=None, structures=None, trials=None, name: str | None = None,
             unbalanced: bool = False) -> SHJData:
    """Everything a fit needs (see :class:`SHJData`).

    language: a name of :data:`~bayes_concepts.suites.shj.boolean.SHJ_LANGUAGES` or a grammar file
    (its space is enumerated, once per process), ignored when ``space`` (a saved or built
    boolean space, :func:`~bayes_concepts.suites.shj.boolean.boolean_space`) is given; prior:
    ``length`` or ``pcfg``; method ``exact`` (every prefix state: the exact average over random
    orders) or ``sampled`` (the states of ``n_orders`` random orders drawn with ``seed``; faster,
    with Monte Carlo error), see :func:`~bayes_concepts.cogsci.sequential.prefix_states`;
    prefix states are merged by the symmetries of each structure (exact).  human: the study
    (a file in any format of :func:`~bayes_concepts.suites.shj.people.read_human`, a
    ``HumanData``, or an array of rates with ``trials``; default the published table), named
    ``name``; structures: a file, an array or a ``Structures`` (default Shepard, Hovland &
    Jenkins'), ``unbalanced`` to accept categories of unequal size."""
    if prior not in PRIOR_KINDS:
        raise BayesConceptsError(f"prior must be one of {', '.join(PRIOR_KINDS)}, got {prior!r}")
    people = read_human(human, trials=trials, name=name)
    if space is None:
        if isinstance(language, str) and language not in SHJ_LANGUAGES and not Path(language).is_file():
            raise BayesConceptsError(f"unknown language {language!r} (expected one of {', '.join(SHJ_LANGUAGES)} "
                                     "or a grammar file)")
        space = _language_space(str(language))
    if space.n_scenes > 8 or space.scene_codes.shape[1] != 1:
        raise BayesConceptsError(f"the space has {space.n_scenes} scenes of up to {space.scene_codes.shape[1]} "
                                 "objects: the SHJ fit needs a boolean space (one stimulus per scene, 8 stimuli)")
    from .boolean import extensions, stimulus_scenes
    tables = space_truth_tables(space)
    n = space.n_scenes
    ext = extensions(n, tables)
    stimuli = [space.scene(j) for j in range(n)]
    if stimuli != stimulus_scenes(space.grammar):
        raise BayesConceptsError("the space's scenes are not its grammar's stimuli in stimulus order: build it with "
                                 "boolean_space or `space build --preset shj`")
    codes = np.asarray(space.scene_codes[:, 0, :], np.int64)
    shapes = read_structures(structures, stimuli=stimuli, codes=codes, unbalanced=unbalanced)
    design = Design(n_stimuli=n, repeats=2, n_blocks=people.n_blocks)
    states = prefix_states(design, method, n_orders, seed)
    lengths = np.asarray(space.lengths, np.float64)
    log_pcfg = np.asarray(space.log_pcfg, np.float64)
    sd = structure_data(ext, shapes.labels, lengths, log_pcfg, design, states, codes)
    return SHJData(language=language_name(space.grammar), prior=prior, concepts=tables, ext=ext, lengths=lengths,
                   log_pcfg=log_pcfg, structures=shapes.labels, human=people.table(), counts=people.errors,
                   n_trials=people.trials, design=design, states=states, structure_data=sd,
                   space_sha=space.manifest_sha256() if space.path else "unsaved", codes=codes, people=people,
                   shapes=shapes)


# ============================================================================ the pyro model
def _t(x):
    return torch.tensor(float(x), dtype=DTYPE)


def shj_model(data: SHJData, counts: torch.Tensor | None, cells: torch.Tensor, priors: Priors = SHJ_PRIORS):
    """The pyro model (see the module docstring).  counts: int (6·B,) errors per cell (flat,
    type-major; None to sample them); cells: long (M,) the flat cells observed."""
    beta = pyro.sample("beta", dist.HalfNormal(_t(priors.beta_scale)))
    eps_unit = pyro.sample("epsilon_unit", dist.Beta(_t(priors.epsilon_a), _t(priors.epsilon_b)))
    lapse = pyro.sample("lapse", dist.Beta(_t(priors.lapse_a), _t(priors.lapse_b)))
    eps = (0.5 * eps_unit).clamp(MIN_EPSILON, 0.5 - 1e-9)
    p = with_lapse(block_errors_torch(beta, eps, data.structure_data, data.prior), lapse)
    p = p.reshape(-1)[cells].clamp(1e-12, 1.0 - 1e-12)
    n = torch.as_tensor(np.asarray(data.n_trials, np.float64).reshape(-1), dtype=DTYPE)[cells]
    with pyro.plate("cells", len(cells)):
        pyro.sample("errors", dist.Binomial(total_count=n, probs=p),
                    obs=None if counts is None else counts[cells])


def _cells(data: SHJData, blocks=None) -> torch.Tensor:
    b = data.design.n_blocks
    blocks = np.arange(1, b + 1) if blocks is None else np.asarray(blocks, np.int64)
    if not len(blocks) or blocks.min() < 1 or blocks.max() > b:
        raise BayesConceptsError(f"blocks must be in 1..{b}, got {blocks.tolist()}")
    return torch.as_tensor((np.arange(6)[:, None] * b + (blocks - 1)[None, :]).ravel(), dtype=torch.long)


def fit_shj(data: SHJData, *, method: str = "svi", steps: int = 300, learning_rate: float = 0.05,
            num_samples: int = 1000, warmup_steps: int = 300, seed: int = 0, priors: Priors = SHJ_PRIORS,
            blocks=None, num_threads: int | None = 1, progress: bool = False) -> xr.Dataset:
    """Fit β, ε and λ to the human counts; returns posterior draws, dims (chain, draw).

    method ``svi``: an ``AutoMultivariateNormal`` guide fitted by Adam for ``steps`` steps
    (``learning_rate``), then ``num_samples`` draws from it; ``nuts``: one NUTS chain of
    ``warmup_steps`` + ``num_samples`` (dense mass matrix).  blocks: the blocks fitted (1-based;
    default all).  Seeded (pyro, torch, numpy); global random states are restored.  attrs hold
    the settings, the run time (``fit_seconds``) and the final ELBO or the NUTS diagnostics.
    """
    if method not in ("svi", "nuts"):
        raise BayesConceptsError(f"method must be 'svi' or 'nuts', got {method!r}")
    for name, v in (("steps", steps), ("num_samples", num_samples), ("warmup_steps", warmup_steps)):
        if int(v) < (0 if name == "warmup_steps" else 1):
            raise BayesConceptsError(f"{name} must be a whole number >= {0 if name == 'warmup_steps' else 1}, got {v}")
    cells = _cells(data, blocks)
    counts = torch.as_tensor(data.counts.reshape(-1), dtype=DTYPE)
    threads = torch.get_num_threads()
    np_state = np.random.get_state()
    info = {}
    t0 = time.perf_counter()
    try:
        if num_threads:
            torch.set_num_threads(int(num_threads))
        with torch.random.fork_rng(devices=[]):
            pyro.set_rng_seed(int(seed))
            pyro.clear_param_store()
            if method == "svi":
                draws = _run_svi(data, counts, cells, priors, steps, learning_rate, num_samples, progress, info)
            else:
                draws = _run_nuts(data, counts, cells, priors, num_samples, warmup_steps, progress, info)
    finally:
        torch.set_num_threads(threads)
        np.random.set_state(np_state)
        pyro.clear_param_store()
    seconds = time.perf_counter() - t0
    ds = xr.Dataset({k: (("chain", "draw"), v[None, :]) for k, v in draws.items()},
                    coords={"chain": [0], "draw": np.arange(len(draws["beta"]))})
    ds["beta"].attrs["long_name"] = ("rate of the length prior exp(-beta*l_min(h))" if data.prior == "length" else
                                     "exponent of the PCFG prior P(h)^beta")
    ds["epsilon"].attrs["long_name"] = "label-noise rate of the noisy likelihood"
    ds["lapse"].attrs["long_name"] = "lapse rate (answer = coin flip)"
    ds.attrs.update({"group": "posterior", "model": "SHJ sequential ideal observer", "language": data.language,
                     "prior": data.prior, "method": method, "steps": int(steps), "learning_rate": float(learning_rate),
                     "num_samples": int(num_samples), "warmup_steps": int(warmup_steps), "seed": int(seed),
                     "priors": json.dumps(priors.as_dict()),
                     "blocks": json.dumps(sorted({int(c) % data.design.n_blocks + 1 for c in cells.tolist()})),
                     "order_states": data.states.method, "n_orders": int(data.states.n_orders),
                     "orders_seed": int(data.states.seed), "n_prefix_states": data.structure_data.n_states,
                     "n_concepts": int(len(data.concepts)), "space": data.space_sha,
                     "human": data.people.name, "human_sha256": data.people.sha256 or "array",
                     "fit_seconds": float(seconds), "sampler": f"{method} (pyro {pyro.__version__}, torch "
                                                               f"{torch.__version__})",
                     **{k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in info.items()}})
    return ds


def _run_svi(data, counts, cells, priors, steps, lr, num_samples, progress, info) -> dict:
    from pyro.infer import SVI, Trace_ELBO
    from pyro.infer.autoguide import AutoMultivariateNormal
    from pyro.infer.autoguide.initialization import init_to_value
    from pyro.optim import ClippedAdam

    init = {"beta": _t(0.3), "epsilon_unit": _t(0.6), "lapse": _t(0.05)}
    guide = AutoMultivariateNormal(shj_model, init_loc_fn=init_to_value(values=init), init_scale=0.05)
    svi = SVI(shj_model, guide, ClippedAdam({"lr": float(lr), "lrd": 0.1 ** (1.0 / max(int(steps), 1))}),
              Trace_ELBO())
    losses = []
    for i in range(int(steps)):
        losses.append(float(svi.step(data, counts, cells, priors)))
        if progress and (i + 1) % 100 == 0:
            print(f"  svi step {i + 1}/{steps}: loss {losses[-1]:.1f}", flush=True)
    with torch.no_grad():
        draws = [guide(data, counts, cells, priors) for _ in range(int(num_samples))]
    info["final_loss"] = float(np.mean(losses[-50:]))
    info["loss_trace"] = [float(x) for x in losses[:: max(1, len(losses) // 50)]]
    return {"beta": np.array([float(d["beta"]) for d in draws]),
            "epsilon": 0.5 * np.array([float(d["epsilon_unit"]) for d in draws]),
            "lapse": np.array([float(d["lapse"]) for d in draws])}


def _run_nuts(data, counts, cells, priors, num_samples, warmup_steps, progress, info) -> dict:
    from pyro.infer import MCMC, NUTS
    from pyro.infer.autoguide.initialization import init_to_value

    init = {"beta": _t(0.3), "epsilon_unit": _t(0.6), "lapse": _t(0.05)}
    kernel = NUTS(shj_model, full_mass=True, init_strategy=init_to_value(values=init), target_accept_prob=0.8)
    mcmc = MCMC(kernel, num_samples=int(num_samples), warmup_steps=int(warmup_steps), num_chains=1,
                disable_progbar=not progress)
    mcmc.run(data, counts, cells, priors)
    s = {k: v.detach().numpy().astype(np.float64) for k, v in mcmc.get_samples().items()}
    diag = mcmc.diagnostics()
    div = diag.get("divergences", {})
    info["divergences"] = int(sum(len(v) for v in div.values())) if isinstance(div, dict) else 0
    info["diagnostics"] = {k: {m: float(np.asarray(v).ravel()[0]) for m, v in d.items()}
                           for k, d in diag.items() if k in s and isinstance(d, dict)}
    return {"beta": s["beta"], "epsilon": 0.5 * s["epsilon_unit"], "lapse": s["lapse"]}


# ============================================================================ predictions and summary
def _draws(posterior: xr.Dataset, max_draws: int | None, seed: int) -> dict:
    d = {v: np.asarray(posterior[v].values, np.float64).ravel() for v in ("beta", "epsilon", "lapse")}
    n = len(d["beta"])
    idx = np.arange(n)
    if max_draws is not None and n > max_draws:
        idx = np.sort(np.random.default_rng(seed).choice(n, size=int(max_draws), replace=False))
    return {k: v[idx] for k, v in d.items()}


def shj_predictions(posterior: xr.Dataset, data: SHJData, *, max_draws: int | None = 200, prob: float = 0.9,
                    seed: int = 0) -> xr.Dataset:
    """The posterior's block errors and its posterior predictive check.

    Returns a Dataset over (type 1..6, block 1..B) with ``human`` (the table), ``model_mean``,
    ``model_low``, ``model_high`` (mean and ``prob`` equal-tailed interval of the error
    probability λ/2 + (1 - λ)·p over ``max_draws`` posterior draws), ``ppc_low``, ``ppc_high``
    (the same interval of replicated proportions k/n, k ~ Binomial(n, that probability) with n
    each cell's own trials, one replicate per draw), ``inside`` (the human proportion inside the
    replicated interval), ``draws`` (draw, type, block): the error probabilities themselves,
    and ``human_errors``, ``human_trials``: the study's counts."""
    if not 0 < prob < 1:
        raise BayesConceptsError(f"prob must be in (0, 1), got {prob}")
    d = _draws(posterior, max_draws, seed)
    with torch_threads(1):
        curves = np.stack([data.curves(b, e, lam) for b, e, lam in zip(d["beta"], d["epsilon"], d["lapse"])])
    rng = np.random.default_rng(seed)
    rep = rng.binomial(data.n_trials, curves) / data.n_trials
    lo, hi = (1 - prob) / 2, (1 + prob) / 2
    human = data.human.values
    ppc_lo, ppc_hi = np.quantile(rep, [lo, hi], axis=0)
    coords = {"type": data.human["type"].values, "block": data.human["block"].values}
    dims = ("type", "block")
    ds = xr.Dataset({"human": (dims, human), "model_mean": (dims, curves.mean(axis=0)),
                     "model_low": (dims, np.quantile(curves, lo, axis=0)),
                     "model_high": (dims, np.quantile(curves, hi, axis=0)),
                     "ppc_low": (dims, ppc_lo), "ppc_high": (dims, ppc_hi),
                     "inside": (dims, (human >= ppc_lo) & (human <= ppc_hi)),
                     "human_errors": (dims, np.asarray(data.counts, np.int64)),
                     "human_trials": (dims, np.asarray(data.n_trials, np.int64)),
                     "draws": (("draw",) + dims, curves)}, coords={**coords, "draw": np.arange(len(curves))})
    ds.attrs.update({"prob": float(prob), "n_draws": int(len(curves)), "seed": int(seed), "language": data.language,
                     "prior": data.prior, "human": data.people.name, "structures": data.shapes.name,
                     "structures_kind": data.shapes.kind,
                     "structures_shj": json.dumps(list(data.shapes.shj_types)),
                     "trials_per_cell": json.dumps(data.people.trials_per_cell())})
    return ds


def order_check(means) -> dict:
    """Whether mean errors (6,) follow the published order I < II < {III, IV, V} < VI, and which
    comparisons fail (for the published study only: a study of one's own is checked against its
    own order, :func:`~bayes_concepts.suites.shj.people.order_agreement`).

    Compared at the 3 decimals :func:`type_order` shows, so an order printed with a tie
    (``I < II = III ...``) is not said to reproduce the strict one: a comparison failed by a
    tie is named as such (``"II < III (ties II and III)"``)."""
    m = np.round(np.asarray(means, np.float64), 3)
    pairs = [(0, 1)] + [p for t in (2, 3, 4) for p in ((1, t), (t, 5))]
    failed = []
    for a, b in pairs:
        name = f"{TYPES[a]} < {TYPES[b]}"
        if m[a] == m[b]:
            failed.append(f"{name} (ties {TYPES[a]} and {TYPES[b]})")
        elif not m[a] < m[b]:
            failed.append(name)
    return {"reproduced": not failed, "failed": failed}


def shj_summary(posterior: xr.Dataset, data: SHJData, predictions: xr.Dataset | None = None, *,
                prob: float = 0.9, order_prob: float = 0.95, seed: int = 0) -> dict:
    """A JSON-ready summary: fitted β, ε, λ (mean, ``prob`` intervals), the correlation and
    RMSE of the posterior-mean block errors against the human ones (all 6·B cells), the mean
    error per type (people and model, with the model's interval) and their orders, the posterior
    predictive coverage and the fit's time; and the verdict against the data given:

    * ``human``, ``structures``: which study and which structures were fitted (name, file,
      sha256, counts; :meth:`~bayes_concepts.suites.shj.people.HumanData.provenance`);
    * ``people_order``: the people's order with its uncertainty from their counts
      (:func:`~bayes_concepts.suites.shj.people.people_order`, types told apart at
      ``order_prob``, seeded by ``seed``);
    * ``agreement``: the model's order against the people's, over the posterior draws
      (:func:`~bayes_concepts.suites.shj.people.order_agreement`: per comparison, all at once,
      Kendall's tau, a verdict);
    * on the published study only (Nosofsky et al.'s table of the six SHJ structures):
      ``human_order`` (the published order), ``order_check`` (whether the posterior-mean curves
      reproduce it) and ``order_probability`` (the fraction of draws obeying each of its
      comparisons)."""
    pred = predictions if predictions is not None else shj_predictions(posterior, data, prob=prob)
    human = pred["human"].values
    model = pred["model_mean"].values
    per_type_draws = pred["draws"].values.mean(axis=2)                          # (draw, type)
    lo, hi = (1 - prob) / 2, (1 + prob) / 2
    m_mean, h_mean = model.mean(axis=1), human.mean(axis=1)
    params = posterior_summary(posterior, prob=prob, interval="eti", var_names=["beta", "epsilon", "lapse"])
    people = people_order(data.people, prob=order_prob, seed=seed)
    agreement = order_agreement(people, m_mean, per_type_draws, prob=prob, name=data.people.name)
    out = {
        "language": data.language, "prior": data.prior, "method": posterior.attrs.get("method"),
        "human": data.people.provenance(), "structures": data.shapes.provenance(),
        "parameters": {k: {"mean": v["mean"], "sd": v["sd"], "low": v["low"], "high": v["high"], "prob": prob}
                       for k, v in params.items()},
        "cells": int(human.size),
        "correlation": float(np.corrcoef(model.ravel(), human.ravel())[0, 1]),
        "rmse": float(np.sqrt(np.mean((model - human) ** 2))),
        "mean_error_per_type": {
            TYPES[i]: {"people": float(h_mean[i]), "model": float(m_mean[i]),
                       "model_low": float(np.quantile(per_type_draws[:, i], lo)),
                       "model_high": float(np.quantile(per_type_draws[:, i], hi))} for i in range(6)},
        "order_people": type_order(h_mean), "order_model": type_order(m_mean),
        "people_order": {k: people[k] for k in ("order", "point", "prob", "comparisons", "groups", "n_draws", "seed")},
        "agreement": agreement,
    }
    if data.published:
        comparisons = {"I < II": (0, 1), "II < III": (1, 2), "II < IV": (1, 3), "II < V": (1, 4), "III < VI": (2, 5),
                       "IV < VI": (3, 5), "V < VI": (4, 5)}
        out.update({"human_order": HUMAN_ORDER, "order_check": order_check(m_mean),
                    "order_probability": {k: float(np.mean(per_type_draws[:, a] < per_type_draws[:, b]))
                                          for k, (a, b) in comparisons.items()}})
    out.update({
        "n_draws": int(pred.attrs["n_draws"]),
        "ppc": {"prob": float(prob), "cells_inside": int(pred["inside"].values.sum()), "cells": int(human.size)},
        "fit_seconds": float(posterior.attrs.get("fit_seconds", float("nan"))),
        "order_states": data.states.method, "n_orders": int(data.states.n_orders),
        "n_prefix_states": data.structure_data.n_states,
    })
    return out


# ============================================================================ grid: evidence and held-out blocks
def _log_prior_grid(beta, eps, lam, priors: Priors):
    return (halfnorm.logpdf(beta, scale=priors.beta_scale)[:, None, None]
            + (beta_dist.logpdf(2 * eps, priors.epsilon_a, priors.epsilon_b) + math.log(2.0))[None, :, None]
            + beta_dist.logpdf(lam, priors.lapse_a, priors.lapse_b)[None, None, :])


def _loglik_grid(curves, lam, counts, n, cells):
    """log-likelihood (n_beta, n_eps, n_lam) of the chosen flat cells."""
    p = with_lapse(curves.reshape(curves.shape[0], curves.shape[1], 1, -1)[..., cells], lam[None, None, :, None])
    p = np.clip(p, 1e-12, 1 - 1e-12)
    k = counts.reshape(-1)[cells].astype(np.float64)
    n = np.broadcast_to(np.asarray(n, np.float64), np.shape(counts)).reshape(-1)[cells]
    const = float((gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)).sum())   # log C(n, k)
    return const + (k * np.log(p) + (n - k) * np.log1p(-p)).sum(axis=-1)


def _edges(values):
    v = np.asarray(values, np.float64)
    w = np.empty_like(v)
    w[1:-1] = (v[2:] - v[:-2]) / 2
    w[0], w[-1] = (v[1] - v[0]) / 2, (v[-1] - v[-2]) / 2
    return w


def grid_posterior(data: SHJData, *, n_grid: int = 16, n_lapse: int = 201, priors: Priors = SHJ_PRIORS,
                   held_out: bool = True, search: SHJData | None = None, n_search=(16, 24),
                   n_zoom: int = 12) -> dict:
    """The model on a grid of (β, ε, λ): evidence, grid posterior, held-out blocks.

    The grid zooms in three stages: a coarse search (``n_search`` nodes of β in [0, 3] for the
    length prior, [0, 6] for pcfg, and of ε in [0.02, 0.48]; λ in [0, 0.5]) and a finer grid
    (``n_zoom`` nodes of β and ε) around its best node, both on ``search`` (default: ``data``
    with 16 sampled orders, cheap; the second stage zooms until its steps are below half a
    posterior sd), then the final ``n_grid`` × ``n_grid`` × ``n_lapse`` grid on ``data`` over
    each parameter's mean ± 6 sd of the second stage (trapezoid weights; the curves are
    evaluated once per (β, ε) node, the lapse is cheap).  Returns a dict: ``log_evidence``
    (log ∫ prior · likelihood over the final box; the integrand outside it is left out, which
    ``edge_mass``, the posterior mass on the box's faces, shows to be negligible when small),
    ``max_log_likelihood`` and where, ``posterior_mean`` and
    ``posterior_sd`` of each parameter, ``held_out`` (posterior from the odd blocks:
    ``log_predictive_even`` = log ∫ p(even | θ) p(θ | odd) dθ, ``log_predictive_odd`` the
    other way round, and their sum ``log_predictive``), the grid and ``seconds``."""
    t0 = time.perf_counter()
    if search is None:
        search = data if data.states.method == "sampled" else data.with_states(
            prefix_states(data.design, "sampled", 16, data.states.seed))
    cells = np.arange(data.counts.size)
    # stage 1: coarse
    b_hi = 3.0 if data.prior == "length" else 6.0
    cb, ce, cl = np.linspace(0.0, b_hi, n_search[0]), np.linspace(0.02, 0.48, n_search[1]), np.linspace(0.0, 0.5, 101)
    ll = _loglik_grid(_curves_grid(search, cb, ce), cl, data.counts, data.n_trials, cells)
    i, j, k = np.unravel_index(np.argmax(ll), ll.shape)
    # stage 2: zoom around the best coarse node until every grid step is below half a posterior sd
    db, de = cb[1] - cb[0], ce[1] - ce[0]
    ranges = {"beta": (max(cb[i] - 1.5 * db, 0.0), cb[i] + 1.5 * db),
              "epsilon": (max(ce[j] - 1.5 * de, 1e-4), min(ce[j] + 1.5 * de, 0.4999)),
              "lapse": (max(cl[k] - 0.06, 0.0), min(cl[k] + 0.06, 1.0))}
    limits = {"beta": (0.0, np.inf), "epsilon": (1e-4, 0.4999), "lapse": (0.0, 1.0)}
    sizes = {"beta": n_zoom, "epsilon": n_zoom, "lapse": 121}
    for _ in range(6):
        axes = {n: np.linspace(*ranges[n], sizes[n]) for n in ranges}
        stage = _grid(search, axes["beta"], axes["epsilon"], axes["lapse"], priors, cells)
        m, sd = stage["posterior_mean"], stage["posterior_sd"]
        steps = {n: axes[n][1] - axes[n][0] for n in axes}
        sd = {n: max(sd[n], steps[n] / 4) for n in sd}
        ranges = {n: (max(m[n] - 6 * sd[n], limits[n][0]), min(m[n] + 6 * sd[n], limits[n][1])) for n in ranges}
        if all(steps[n] <= sd[n] / 2 for n in steps) and stage["edge_mass"] < 1e-3:
            break

    final = _grid(data, np.linspace(*ranges["beta"], n_grid), np.linspace(*ranges["epsilon"], n_grid),
                  np.linspace(*ranges["lapse"], n_lapse), priors, cells, held_out=held_out)
    final["seconds"] = time.perf_counter() - t0
    return final


def _grid(data, betas, epss, lams, priors, cells, held_out=False) -> dict:
    curves = _curves_grid(data, betas, epss)                                     # (nb, ne, 6, B)
    logw = (np.log(_edges(betas))[:, None, None] + np.log(_edges(epss))[None, :, None]
            + np.log(_edges(lams))[None, None, :])
    lp = _log_prior_grid(betas, epss, lams, priors)
    ll = _loglik_grid(curves, lams, data.counts, data.n_trials, cells)
    joint = lp + ll + logw
    log_evidence = float(logsumexp(joint))
    post = np.exp(joint - log_evidence)
    edge = float(post[[0, -1]].sum() + post[:, [0, -1]].sum() + post[:, :, [0, -1]].sum())
    i, j, k = np.unravel_index(np.argmax(ll), ll.shape)
    marg = {"beta": (post.sum(axis=(1, 2)), betas), "epsilon": (post.sum(axis=(0, 2)), epss),
            "lapse": (post.sum(axis=(0, 1)), lams)}
    mean = {n: float((w * v).sum()) for n, (w, v) in marg.items()}
    out = {"log_evidence": log_evidence, "edge_mass": edge, "max_log_likelihood": float(ll[i, j, k]),
           "at_max": {"beta": float(betas[i]), "epsilon": float(epss[j]), "lapse": float(lams[k])},
           "posterior_mean": mean,
           "posterior_sd": {n: float(np.sqrt(max((w * (v - mean[n]) ** 2).sum(), 0.0))) for n, (w, v) in marg.items()},
           "grid": {"beta": [float(betas[0]), float(betas[-1]), len(betas)],
                    "epsilon": [float(epss[0]), float(epss[-1]), len(epss)],
                    "lapse": [float(lams[0]), float(lams[-1]), len(lams)]}}
    if held_out:
        b = data.design.n_blocks
        odd = cells[(cells % b) % 2 == 0]                                       # blocks 1, 3, 5, ...
        ll_odd = _loglik_grid(curves, lams, data.counts, data.n_trials, odd)
        ll_even = ll - ll_odd
        score = {}
        for name, fit, test in (("even", ll_odd, ll_even), ("odd", ll_even, ll_odd)):
            jf = lp + fit + logw
            score[f"log_predictive_{name}"] = float(logsumexp(jf + test) - logsumexp(jf))
        score["log_predictive"] = score["log_predictive_even"] + score["log_predictive_odd"]
        out["held_out"] = score
    return out


def _curves_grid(data: SHJData, betas, epss) -> np.ndarray:
    """float64 (nb, ne, 6, B): :meth:`SHJData.curves` at every (β, ε) node: per ε, its tables
    (:func:`~bayes_concepts.cogsci.sequential.epsilon_tables`) once and every β in one call."""
    out = np.empty((len(betas), len(epss), len(data.structures), data.design.n_blocks))
    betas = np.asarray(betas, np.float64)
    for j, e in enumerate(epss):
        out[:, j] = data.curves(betas, e, tables=data.epsilon_tables(e))
    return out


def compare_languages(languages=tuple(SHJ_LANGUAGES), priors=PRIOR_KINDS, *, method: str = "exact",
                      n_orders: int = 32, seed: int = 0, n_grid: int = 12, n_lapse: int = 201, human=None,
                      structures=None, trials=None, name: str | None = None, unbalanced: bool = False,
                      progress: bool = False) -> dict:
    """Every (language, prior) on the same human table, by :func:`grid_posterior`: log evidence,
    held-out log predictive density, maximum log-likelihood, grid posterior means, and the mean
    errors per type at the grid posterior mean with their order and its agreement with the
    people's (``order_check`` against the published order on the published study only).
    human, structures, trials, name, unbalanced: the study, as :func:`shj_data`.  Returns
    {"<language>/<prior>": dict}, plus ``"best_by_evidence"`` and ``"best_by_held_out"``."""
    out = {}
    human = read_human(human, trials=trials, name=name)
    people = people_order(human, seed=seed)
    for lang in languages:
        for prior in priors:
            t = time.perf_counter()
            data = shj_data(lang, prior, method=method, n_orders=n_orders, seed=seed, human=human,
                            structures=structures, unbalanced=unbalanced)
            g = grid_posterior(data, n_grid=n_grid, n_lapse=n_lapse)
            pm = g["posterior_mean"]
            curves = data.curves(pm["beta"], pm["epsilon"], pm["lapse"])
            means = curves.mean(axis=1)
            agree = order_agreement(people, means, means[None, :], name=human.name)
            g.update({"mean_error_per_type": dict(zip(TYPES, map(float, means))), "order_model": type_order(means),
                      **({"order_check": order_check(means)} if data.published else {}),
                      "agreement": {k: agree[k] for k in ("verdict", "failed")},
                      "correlation": float(np.corrcoef(curves.ravel(), data.human.values.ravel())[0, 1]),
                      "seconds": time.perf_counter() - t})
            out[f"{data.language}/{prior}"] = g
            if progress:
                print(f"  {data.language}/{prior}: log evidence {g['log_evidence']:.1f}, held-out "
                      f"{g['held_out']['log_predictive']:.1f} ({g['seconds']:.0f} s)", flush=True)
    keys = [k for k in out]
    out["best_by_evidence"] = max(keys, key=lambda k: out[k]["log_evidence"])
    out["best_by_held_out"] = max(keys, key=lambda k: out[k]["held_out"]["log_predictive"])
    return out


__all__ = ["LEARNERS_PER_TYPE", "TYPES", "SHJ_PRIORS", "HUMAN_ORDER", "HumanDataError", "torch_threads", "human_errors",
           "shj_structures", "error_counts", "read_human", "read_structures", "people_order", "order_agreement",
           "SHJData", "shj_data", "shj_model", "fit_shj", "shj_predictions",
           "type_order", "order_check", "shj_summary", "grid_posterior", "compare_languages"]
