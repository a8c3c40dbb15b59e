"""Fitting an ideal observer's prior and noise parameters to judgements (pyro, NUTS).

A learner (a network, an oracle, a person) answered the query scenes of a batch of
episodes.  We ask which ideal observer (the Bayesian oracle: ``length`` prior with rate β,
``noisy`` likelihood with label-noise rate ε) best explains the answers, allowing a
lapse rate λ (with probability λ the answer is a coin flip):

    r(u) = λ/2 + (1 - λ)·p_{β,ε}(y = 1 | u, support)          (response probability)

Responses, an array (E, Q) aligned with ``episodes.query_scenes`` (NaN = not answered):

* ``kind="binary"``: 0/1 answers, y ~ Bernoulli(r(u));
* ``kind="graded"``: probabilities / ratings in [0, 1], y ~ Beta(r·κ, (1 - r)·κ) with a
  concentration κ (mean r(u), variance r(1 - r)/(κ + 1)).  A Beta density is infinite or
  zero at exactly 0 and 1, and people's ratings often sit there, so responses within
  ``censor`` c (default 1e-3) of 0 or 1 are treated as **censored**: their likelihood is
  P(Y ≤ c) = I_c(rκ, (1 - r)κ) (resp. P(Y ≥ 1 - c) = I_c((1 - r)κ, rκ)), the regularised
  incomplete beta function (:func:`log_beta_cdf_small`, a differentiable series).  Unlike
  clipping the data to [c, 1 - c], this keeps the model consistent: parameters fitted to
  data simulated from the Beta model are recovered without bias.  How many responses
  were censored is recorded in the result's attrs.

Priors (:class:`Priors`): β ~ HalfNormal(1); ε = 0.5·Beta(1, 3) on (0, 0.5) (mean 0.125);
λ ~ Beta(1, 9) (mean 0.1); κ ~ LogNormal(log 20, 1) (graded only).  ε is sampled as
the Beta variable ``epsilon_unit`` = 2ε and reported as ``epsilon``.

The posterior is an ``xarray.Dataset`` laid out like the ``posterior`` group of an ArviZ
InferenceData (variables with dims ``(chain, draw)``); ``arviz.InferenceData(posterior=ds)``
wraps it if ArviZ is installed, and ``ds.to_netcdf(path)`` saves it.
"""
from __future__ import annotations

import json
import random
import time
import warnings
from dataclasses import asdict, dataclass

import numpy as np
import pyro
import pyro.distributions as dist
import torch
import xarray as xr
from pyro.infer import MCMC, NUTS
from pyro.infer.autoguide.initialization import init_to_median

from .data import DTYPE, ObserverData, oracle_predictive, prepare_observer_data

KINDS = ("binary", "graded")
GRADED_CENSOR = 1e-3
SERIES_TERMS = 64
_TINY = 1e-12


@dataclass(frozen=True)
class Priors:
    """Hyper-parameters of the priors (see the module docstring)."""

    beta_scale: float = 1.0            # beta ~ HalfNormal(beta_scale)
    epsilon_a: float = 1.0             # epsilon = 0.5 * Beta(epsilon_a, epsilon_b)
    epsilon_b: float = 3.0
    lapse_a: float = 1.0               # lapse ~ Beta(lapse_a, lapse_b)
    lapse_b: float = 9.0
    concentration_loc: float = float(np.log(20.0))   # kappa ~ LogNormal(loc, scale), graded only
    concentration_scale: float = 1.0

    def as_dict(self) -> dict:
        return asdict(self)


def _t(x):
    return torch.tensor(float(x), dtype=DTYPE)


def response_probability(predictive: torch.Tensor, lapse) -> torch.Tensor:
    """r = lapse/2 + (1 - lapse)·p, kept strictly inside (0, 1)."""
    lapse = torch.as_tensor(lapse, dtype=predictive.dtype)
    if lapse.dim():
        lapse = lapse[..., None, None]
    r = 0.5 * lapse + (1.0 - lapse) * predictive
    return r.clamp(_TINY, 1.0 - _TINY)


def log_beta_cdf_small(x: float, a: torch.Tensor, b: torch.Tensor, terms: int = SERIES_TERMS) -> torch.Tensor:
    """log I_x(a, b), the Beta(a, b) CDF at a small x (0 < x ≪ 1), differentiable in a and b.

    I_x(a, b) = x^a (1 - x)^b / (a·B(a, b)) · F(a + b, 1; a + 1; x) (DLMF 8.17.8), and the
    hypergeometric series Σ_n (a + b)_n / (a + 1)_n x^n converges factorially while
    n < (a + b) and geometrically (ratio ≤ x) after, so ``terms`` = 64 gives full float64
    accuracy for a + b up to ~10^4 at x = 1e-3."""
    a, b = torch.broadcast_tensors(a, b)
    n = torch.arange(1, terms, dtype=a.dtype)
    ratios = torch.log(a[..., None] + b[..., None] + n - 1) - torch.log(a[..., None] + n) + float(np.log(x))
    log_terms = torch.cat([torch.zeros_like(a)[..., None], torch.cumsum(ratios, dim=-1)], dim=-1)
    log_series = torch.logsumexp(log_terms, dim=-1)
    log_beta_fn = torch.lgamma(a) + torch.lgamma(b) - torch.lgamma(a + b)
    return a * float(np.log(x)) + b * float(np.log1p(-x)) - torch.log(a) - log_beta_fn + log_series


class CensoredBeta(dist.TorchDistribution):
    """Beta(concentration1, concentration0) observed with censoring: a value ≤ ``censor``
    only says Y ≤ censor, a value ≥ 1 - ``censor`` only says Y ≥ 1 - censor (see the module
    docstring).  ``sample`` returns plain Beta draws."""

    arg_constraints = {"concentration1": dist.constraints.positive, "concentration0": dist.constraints.positive}
    support = dist.constraints.unit_interval
    has_rsample = False

    def __init__(self, concentration1, concentration0, censor: float = GRADED_CENSOR, validate_args=None):
        self.concentration1, self.concentration0 = torch.broadcast_tensors(
            torch.as_tensor(concentration1), torch.as_tensor(concentration0))
        self.censor = float(censor)
        self._beta = dist.Beta(self.concentration1, self.concentration0)
        super().__init__(self.concentration1.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = torch.Size(batch_shape)
        return CensoredBeta(self.concentration1.expand(batch_shape), self.concentration0.expand(batch_shape),
                            self.censor)

    def sample(self, sample_shape=torch.Size()):
        return self._beta.sample(sample_shape)

    def log_prob(self, value):
        c = self.censor
        a, b = self.concentration1, self.concentration0
        value, a, b = torch.broadcast_tensors(value, a, b)
        low, high = value <= c, value >= 1.0 - c
        v = torch.clamp(value, c, 1.0 - c)
        out = ((a - 1.0) * torch.log(v) + (b - 1.0) * torch.log1p(-v)
               - (torch.lgamma(a) + torch.lgamma(b) - torch.lgamma(a + b)))
        # the series only for the censored entries (few), not for every response
        out = out.index_put((low,), log_beta_cdf_small(c, a[low], b[low]))
        return out.index_put((high,), log_beta_cdf_small(c, b[high], a[high]))


def observer_model(data: ObserverData, obs_index: torch.Tensor, y: torch.Tensor | None, kind: str = "binary",
                   priors: Priors = Priors(), censor: float = GRADED_CENSOR):
    """The pyro model.  obs_index: long (N,) flat indices into the (E, Q) response grid;
    y: (N,) observed responses (None to sample them)."""
    beta = pyro.sample("beta", dist.HalfNormal(_t(priors.beta_scale)))
    eps_unit = pyro.sample("epsilon_unit", dist.Beta(_t(priors.epsilon_a), _t(priors.epsilon_b)))
    lapse = pyro.sample("lapse", dist.Beta(_t(priors.lapse_a), _t(priors.lapse_b)))
    if kind == "graded":
        kappa = pyro.sample("concentration", dist.LogNormal(_t(priors.concentration_loc),
                                                            _t(priors.concentration_scale)))
    p = oracle_predictive(beta, 0.5 * eps_unit, data).reshape(-1)[obs_index]
    r = response_probability(p, lapse)
    with pyro.plate("responses", obs_index.shape[0]):
        if kind == "binary":
            pyro.sample("y", dist.Bernoulli(probs=r), obs=y)
        else:
            pyro.sample("y", CensoredBeta(r * kappa, (1.0 - r) * kappa, censor), obs=y)


def _check_responses(responses, shape, kind):
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    y = np.asarray(responses, np.float64)
    if y.shape != tuple(shape):
        raise ValueError(f"responses have shape {y.shape}, expected {tuple(shape)} (episodes × query scenes)")
    seen = ~np.isnan(y)
    if not seen.any():
        raise ValueError("no responses (all NaN)")
    vals = y[seen]
    if kind == "binary" and not np.isin(vals, (0.0, 1.0)).all():
        raise ValueError("binary responses must be 0 or 1 (NaN for missing); use kind='graded' for probabilities")
    if kind == "graded" and ((vals < 0) | (vals > 1)).any():
        raise ValueError("graded responses must lie in [0, 1]")
    return y, seen


@dataclass
class _Sampling:
    samples: dict
    divergences: int
    diagnostics: dict
    seconds: float


def _run_chain(model_args, seed, num_samples, warmup_steps, jit_compile, progress, target_accept_prob):
    pyro.set_rng_seed(seed)
    kernel = NUTS(observer_model, target_accept_prob=target_accept_prob, jit_compile=jit_compile, full_mass=True,
                  ignore_jit_warnings=True, init_strategy=init_to_median(num_samples=15))
    mcmc = MCMC(kernel, num_samples=num_samples, warmup_steps=warmup_steps, num_chains=1,
                disable_progbar=not progress)
    t0 = time.perf_counter()
    mcmc.run(*model_args)
    seconds = time.perf_counter() - t0
    samples = {k: v.detach().numpy().astype(np.float64) for k, v in mcmc.get_samples().items()}
    diag = mcmc.diagnostics()
    div = diag.get("divergences", {})
    n_div = int(sum(len(v) for v in div.values())) if isinstance(div, dict) else 0
    summary = {k: {s: float(np.asarray(v).ravel()[0]) for s, v in d.items()}
               for k, d in diag.items() if k in samples and isinstance(d, dict)}
    acc = diag.get("acceptance rate", {})
    if isinstance(acc, dict) and acc:
        summary["acceptance_rate"] = float(np.mean([float(v) for v in acc.values()]))
    return _Sampling(samples, n_div, summary, seconds)


def _chain_seeds(seed: int, num_chains: int) -> list[int]:
    states = np.random.SeedSequence(int(seed)).spawn(num_chains)
    return [int(s.generate_state(1, np.uint32)[0]) for s in states]


def fit_ideal_observer(space, episodes, responses, kind: str = "binary", num_samples: int = 500,
                       warmup_steps: int = 500, num_chains: int = 1, seed: int = 0, *, concepts=None,
                       priors: Priors | None = None, data: ObserverData | None = None, group: bool = True,
                       max_extra_mistakes: int | None = None, censor: float = GRADED_CENSOR,
                       target_accept_prob: float = 0.8, jit_compile: bool = True, num_threads: int | None = 1,
                       progress: bool = False) -> xr.Dataset:
    """Posterior over (β, ε, lapse[, concentration]) given a learner's responses, by NUTS.

    space, episodes: the hypothesis space and the Episodes the responses refer to;
    responses: (E, Q) array aligned with ``episodes.query_scenes`` (NaN = missing);
    kind: ``binary`` (0/1) or ``graded`` (in [0, 1]); concepts: the observer's concept set
    (default all concepts of the space); data: a precomputed :class:`ObserverData` (else
    built with ``group`` / ``max_extra_mistakes``, see :mod:`.data`).  Chains run one after
    the other, chain c seeded from ``SeedSequence(seed)``; pyro's, torch's, numpy's and
    Python's global random states are restored afterwards.  NUTS uses a dense mass matrix
    (β and ε are strongly anti-correlated a posteriori); ``jit_compile`` traces the
    potential with TorchScript (several times faster; same draws up to float rounding);
    ``num_threads`` sets torch's intra-op threads during sampling (1 is fastest for these
    small tensors; restored afterwards; None leaves it alone).

    Returns an ``xarray.Dataset`` with variables ``beta``, ``epsilon``, ``lapse`` (and
    ``concentration`` for graded data), dims ``(chain, draw)``; attrs record the settings,
    seeds, priors, sampler diagnostics and the concept set (netCDF-serialisable).
    """
    priors = priors or Priors()
    if data is None:
        data = prepare_observer_data(space, episodes, concepts, group=group, max_extra_mistakes=max_extra_mistakes)
    y, seen = _check_responses(responses, (data.n_episodes, data.n_query), kind)
    if not 0 < censor < 0.5:
        raise ValueError(f"censor must be in (0, 0.5), got {censor}")
    vals = y[seen]
    n_censored = int(((vals <= censor) | (vals >= 1 - censor)).sum()) if kind == "graded" else 0
    obs_index = torch.as_tensor(np.flatnonzero(seen.ravel()), dtype=torch.long)
    y_obs = torch.as_tensor(y.ravel()[seen.ravel()], dtype=DTYPE)
    seeds = _chain_seeds(seed, num_chains)

    py_state, np_state, threads = random.getstate(), np.random.get_state(), torch.get_num_threads()
    try:
        if num_threads:
            torch.set_num_threads(int(num_threads))
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*torch\.jit\.trace.*", category=DeprecationWarning)
            runs = [_run_chain((data, obs_index, y_obs, kind, priors, censor), s, num_samples, warmup_steps,
                               jit_compile, progress, target_accept_prob) for s in seeds]
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
        torch.set_num_threads(threads)

    def stack(name):
        return np.stack([r.samples[name] for r in runs])

    variables = {"beta": stack("beta"), "epsilon": 0.5 * stack("epsilon_unit"), "lapse": stack("lapse")}
    if kind == "graded":
        variables["concentration"] = stack("concentration")
    ds = xr.Dataset({k: (("chain", "draw"), v) for k, v in variables.items()},
                    coords={"chain": np.arange(num_chains), "draw": np.arange(num_samples)})
    ds["beta"].attrs["long_name"] = "rate of the length prior exp(-beta*l(h))"
    ds["epsilon"].attrs["long_name"] = "label-noise rate of the noisy likelihood"
    ds["lapse"].attrs["long_name"] = "lapse rate (response = coin flip)"
    if kind == "graded":
        ds["concentration"].attrs["long_name"] = "Beta concentration of graded responses"

    n_concepts = int(space.n_concepts) if space is not None else -1
    all_concepts = n_concepts == len(data.concepts)
    bound = data.pruning_bound(float(variables["beta"].max()), float(min(variables["epsilon"].max(), 0.4999)))
    sha = space.manifest_sha256() if space is not None else None
    ds.attrs.update({
        "group": "posterior",
        "model": "ideal observer: length prior exp(-beta*l), noisy(epsilon) likelihood, lapse",
        "kind": kind,
        "likelihood": ("Bernoulli(lapse/2 + (1-lapse)*p)" if kind == "binary" else
                       "Beta(r*concentration, (1-r)*concentration) censored within `censor` of 0 and 1, "
                       "r = lapse/2 + (1-lapse)*p"),
        "priors": json.dumps(priors.as_dict()),
        "num_samples": int(num_samples), "warmup_steps": int(warmup_steps), "num_chains": int(num_chains),
        "seed": int(seed), "chain_seeds": json.dumps(seeds),
        "sampler": f"NUTS (pyro {pyro.__version__}, torch {torch.__version__}), target_accept_prob="
                   f"{target_accept_prob}",
        "divergences": int(sum(r.divergences for r in runs)),
        "diagnostics": json.dumps([r.diagnostics for r in runs]),
        "sampling_seconds": float(sum(r.seconds for r in runs)),
        "n_episodes": int(data.n_episodes), "n_query": int(data.n_query), "n_observations": int(seen.sum()),
        "censor": float(censor), "n_censored": n_censored,
        "concepts": "all" if all_concepts else json.dumps(data.concepts.tolist()),
        "n_concepts": int(len(data.concepts)),
        "grouped": int(data.group),
        "max_extra_mistakes": -1 if data.max_extra_mistakes is None else int(data.max_extra_mistakes),
        "pruning_bound_at_posterior_max": float(bound.max()),
        "space": sha or "",
        "episodes_meta": json.dumps(getattr(episodes, "meta", {}) or {}, sort_keys=True, default=str),
    })
    return ds


def concepts_from_attrs(ds: xr.Dataset):
    """The concept set a fit used (None = every concept of the space)."""
    c = ds.attrs.get("concepts", "all")
    return None if c == "all" else np.asarray(json.loads(c), np.int64)


def _hdi(x: np.ndarray, prob: float):
    x = np.sort(x)
    n = len(x)
    k = max(int(np.ceil(prob * n)), 1)
    if k >= n:
        return float(x[0]), float(x[-1])
    widths = x[k - 1:] - x[: n - k + 1]
    i = int(np.argmin(widths))
    return float(x[i]), float(x[i + k - 1])


def posterior_summary(ds: xr.Dataset, prob: float = 0.9, interval: str = "hdi", var_names=None) -> dict:
    """Per variable: mean, sd, median and a ``prob`` interval (``low``, ``high``) pooled over
    chains and draws; ``interval``: ``hdi`` (shortest interval holding ``prob`` of the draws)
    or ``eti`` (equal-tailed quantiles).  Both intervals are always reported as
    ``hdi_low``/``hdi_high`` and ``eti_low``/``eti_high`` too."""
    if interval not in ("hdi", "eti"):
        raise ValueError(f"interval must be 'hdi' or 'eti', got {interval!r}")
    if not 0 < prob < 1:
        raise ValueError(f"prob must be in (0, 1), got {prob}")
    out = {}
    for name in var_names or [v for v in ds.data_vars if set(ds[v].dims) == {"chain", "draw"}]:
        x = np.asarray(ds[name].values, np.float64).ravel()
        hdi = _hdi(x, prob)
        eti = tuple(float(v) for v in np.quantile(x, [(1 - prob) / 2, (1 + prob) / 2]))
        low, high = hdi if interval == "hdi" else eti
        out[name] = {"mean": float(x.mean()), "sd": float(x.std(ddof=1)) if len(x) > 1 else 0.0,
                     "median": float(np.median(x)), "low": low, "high": high, "prob": prob, "interval": interval,
                     "hdi_low": hdi[0], "hdi_high": hdi[1], "eti_low": eti[0], "eti_high": eti[1]}
    return out


def simulate_learner(space, episodes, beta: float, epsilon: float, lapse: float = 0.0, kind: str = "binary",
                     seed: int = 0, *, concentration: float = 20.0, concepts=None,
                     data: ObserverData | None = None) -> np.ndarray:
    """Responses (E, Q) float64 of a simulated ideal-observer learner with known parameters:
    binary 0/1 draws from Bernoulli(r) or graded draws from Beta(r·κ, (1 - r)·κ), with
    r = lapse/2 + (1 - lapse)·p_{β,ε}(y = 1 | u, support).  numpy ``default_rng(seed)``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not 0 < epsilon < 0.5 or beta < 0 or not 0 <= lapse <= 1:
        raise ValueError("need beta >= 0, 0 < epsilon < 0.5 and 0 <= lapse <= 1")
    if data is None:
        data = prepare_observer_data(space, episodes, concepts)
    with torch.no_grad():
        r = response_probability(oracle_predictive(beta, epsilon, data), lapse).numpy()
    rng = np.random.default_rng(seed)
    if kind == "binary":
        return (rng.random(r.shape) < r).astype(np.float64)
    return rng.beta(r * concentration, (1 - r) * concentration)
