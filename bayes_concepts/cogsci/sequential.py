"""Learning a category trial by trial, as people learn it in a category-learning experiment.

The design of Shepard, Hovland & Jenkins (1961) and its replications: N stimuli, shown in
blocks; in each block every stimulus appears ``repeats`` times in a random order; the learner
says which category the stimulus belongs to and is then told the answer.  The ideal observer
learns from every answer it has been told:

    w_t(h) ∝ π(h) · ε^m_t(h) · (1 - ε)^(t - m_t(h)),      m_t(h) = #{s < t: h(x_s) ≠ y_s},
    p_t(y = 1) = Σ_h w_t(h)·h(x_t),   p_t(error) = 1 - p_t(y = y_t),

with π the prior over the concepts (H concepts given by their labels of the N stimuli) and ε
the noisy likelihood's label-noise rate.  With a lapse rate λ the learner guesses:
p(error) = λ/2 + (1 - λ)·p_t(error).

* :func:`trial_predictive` gives p_t(y = 1) on given trial sequences (numpy, (R, T, H) at
  once); :func:`trial_predictive_slow` is its slow twin (a loop over trials and concepts).
* :func:`block_errors` gives the error probability of every block *averaged over the random
  orders*.  Because every block shows each stimulus equally often, after b complete blocks
  m(h) = repeats·b·d(h), d(h) the number of stimuli h labels wrongly, whatever the earlier
  orders were; inside a block only the stimuli already shown matter, through their counts c
  (a *prefix state*).  So the expected error of block b is an average over prefix states:
  :func:`prefix_states` lists them exactly (every c ∈ {0..repeats}^N with its hypergeometric
  probability: 6,561 states for 8 stimuli shown twice) or as the states of ``n_orders``
  sampled orders; either way the next stimulus is averaged exactly (probability
  (repeats - c_s)/(N·repeats - |c|)), not sampled.  The weight of h factorises as
  exp(log π(h) - κ·repeats·b·d(h)) · exp(-κ·c·e(h)) (κ = log((1 - ε)/ε), e(h) its wrong
  stimuli), so the sums over concepts are matrix products (:func:`block_errors_torch`,
  differentiable in β and ε): with U = exp(log π - κ·repeats·b·d) and V = exp(-κ·c·e), the
  expected error of block b is Σ_i Σ_h U(h)·V_i(h)·W_i(h) / Σ_h U(h)·V_i(h), where W_i(h) =
  Σ_s weight_i·next_prob_{i,s}·[h(x_s) wrong] is h's expected mistake on the next stimulus
  (two products per block, whatever the number of stimuli).  :func:`block_errors_slow` is its
  slow twin.

The concepts' prior is ``length`` (log π(h) = -β·l(h), l its shortest description length)
or ``pcfg`` (log π(h) = β·log P(h), P its probability under the grammar; β = 1 is the
grammar's own prior, β is an inverse temperature).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import torch

from ..params import whole_number

DTYPE = torch.float64
#: Priors over the concepts of a space: name -> what β multiplies.
PRIOR_KINDS = ("length", "pcfg")
#: Smallest label-noise rate the kernels accept (κ = log((1 - ε)/ε) stays below 14).
MIN_EPSILON = 1e-6


@dataclass(frozen=True)
class Design:
    """The experiment: ``n_stimuli`` stimuli, each shown ``repeats`` times per block, ``n_blocks``
    blocks (Nosofsky et al. 1994: 8, 2, 16)."""

    n_stimuli: int = 8
    repeats: int = 2
    n_blocks: int = 16

    def __post_init__(self):
        for name in ("n_stimuli", "repeats", "n_blocks"):
            v = getattr(self, name)
            whole_number(name, v, 1, error=ValueError)

    @property
    def block_size(self) -> int:
        return self.n_stimuli * self.repeats

    @property
    def n_trials(self) -> int:
        return self.block_size * self.n_blocks


def log_prior(kind: str, beta, lengths, log_pcfg):
    """Unnormalised log prior (H,) (numpy or torch, as ``beta``): ``length``: -β·l; ``pcfg``: β·log P."""
    if kind == "length":
        return -beta * lengths
    if kind == "pcfg":
        return beta * log_pcfg
    raise ValueError(f"prior must be one of {', '.join(PRIOR_KINDS)}, got {kind!r}")


def _check_epsilon(epsilon):
    e = np.asarray(epsilon, np.float64)
    if not ((e >= MIN_EPSILON) & (e < 0.5)).all():
        raise ValueError(f"epsilon must be in [{MIN_EPSILON}, 0.5), got {epsilon}")


# ============================================================================ trial sequences
def sample_orders(design: Design, n: int, seed: int = 0) -> np.ndarray:
    """int64 (n, T): n trial sequences, each block a random order of every stimulus ``repeats``
    times (numpy ``default_rng(seed)``)."""
    rng = np.random.default_rng(seed)
    block = np.repeat(np.arange(design.n_stimuli), design.repeats)
    keys = rng.random((n, design.n_blocks, design.block_size))
    return block[np.argsort(keys, axis=-1)].reshape(n, design.n_trials)


def trial_predictive(ext, log_prior_h, epsilon, stimuli, labels) -> np.ndarray:
    """p(y_t = 1 | x_t, trials before t) of the ideal observer on every trial: float64 (R, T).

    ext: bool (H, N) the concepts' labels of the N stimuli; log_prior_h: float64 (H,)
    (unnormalised); epsilon: label-noise rate; stimuli: int (R, T) the stimulus of each trial;
    labels: bool (R, T) the answer the learner is told after it."""
    _check_epsilon(epsilon)
    ext = np.asarray(ext, bool)
    stimuli = np.atleast_2d(np.asarray(stimuli, np.int64))
    labels = np.atleast_2d(np.asarray(labels, bool))
    shown = ext[:, stimuli].transpose(1, 2, 0)                                  # (R, T, H)
    wrong = shown != labels[:, :, None]
    before = np.cumsum(wrong, axis=1) - wrong                                   # mistakes on earlier trials
    kappa = math.log((1.0 - epsilon) / epsilon)
    logw = np.asarray(log_prior_h, np.float64)[None, None, :] - kappa * before
    logw -= logw.max(axis=-1, keepdims=True)
    w = np.exp(logw)
    return (w * shown).sum(axis=-1) / w.sum(axis=-1)


def trial_predictive_slow(ext, log_prior_h, epsilon, stimuli, labels) -> np.ndarray:
    """:func:`trial_predictive` by Bayes' rule, one trial and one concept at a time (its slow twin)."""
    ext = np.asarray(ext, bool)
    stimuli = np.atleast_2d(stimuli)
    labels = np.atleast_2d(labels)
    out = np.zeros(stimuli.shape)
    for r in range(stimuli.shape[0]):
        weights = [math.exp(float(v)) for v in np.asarray(log_prior_h) - np.max(log_prior_h)]
        for t in range(stimuli.shape[1]):
            x, y = int(stimuli[r, t]), bool(labels[r, t])
            total = sum(weights)
            out[r, t] = sum(w for w, h in zip(weights, ext) if h[x]) / total
            weights = [w * ((1 - epsilon) if bool(h[x]) == y else epsilon) for w, h in zip(weights, ext)]
            top = max(weights)
            weights = [w / top for w in weights]
    return out


def trial_errors(ext, log_prior_h, epsilon, structure, orders, lapse: float = 0.0) -> np.ndarray:
    """float64 (R, T): the probability of an error on every trial of the orders (int (R, T)) when
    learning the category ``structure`` (bool (N,): each stimulus's category), with lapse λ."""
    structure = np.asarray(structure, bool)
    orders = np.atleast_2d(np.asarray(orders, np.int64))
    labels = structure[orders]
    p1 = trial_predictive(ext, log_prior_h, epsilon, orders, labels)
    p_err = np.where(labels, 1.0 - p1, p1)
    return lapse / 2 + (1 - lapse) * p_err


# ============================================================================ prefix states
@dataclass(frozen=True)
class PrefixStates:
    """Where a learner can be inside a block: the counts of the stimuli shown so far.

    counts: int64 (S, N); weight: float64 (S,) so that a block's error is
    Σ_i weight_i Σ_s next_prob_{i,s} · err(state i, next stimulus s) (weights sum to 1);
    next_prob: float64 (S, N) the probability that stimulus s comes next; method: ``exact``
    or ``sampled``; n_orders: the orders sampled (0 for exact); seed."""

    counts: np.ndarray
    weight: np.ndarray
    next_prob: np.ndarray
    method: str
    n_orders: int
    seed: int

    @property
    def n_states(self) -> int:
        return int(len(self.counts))


def _next_prob(counts, design):
    left = design.repeats - counts
    return left / left.sum(axis=1, keepdims=True)


def prefix_states(design: Design, method: str = "exact", n_orders: int = 64, seed: int = 0) -> PrefixStates:
    """The prefix states of a block (see the module docstring).

    ``exact``: every count vector c with |c| < N·repeats, weighted by the probability that a
    random order starts with it, ∏_s C(repeats, c_s) / C(N·repeats, |c|), over N·repeats
    positions; ``sampled``: the prefixes of ``n_orders`` random orders (seeded), identical ones
    merged."""
    n, r, k = design.n_stimuli, design.repeats, design.block_size
    if method == "exact":
        if (r + 1) ** n > 2_000_000:
            raise ValueError(f"{(r + 1) ** n:,} prefix states: too many to list; use method='sampled'")
        counts = np.array(list(itertools.product(range(r + 1), repeat=n)), np.int64).reshape(-1, n)
        size = counts.sum(axis=1)
        counts = counts[size < k]
        size = size[size < k]
        ways = np.prod([[math.comb(r, int(c)) for c in row] for row in counts], axis=1).astype(np.float64)
        weight = ways / np.array([math.comb(k, int(s)) for s in size], np.float64) / k
        return PrefixStates(counts, weight, _next_prob(counts, design), "exact", 0, int(seed))
    if method != "sampled":
        raise ValueError(f"method must be 'exact' or 'sampled', got {method!r}")
    if int(n_orders) < 1:
        raise ValueError(f"n_orders must be >= 1, got {n_orders}")
    one_block = Design(n, r, 1)
    orders = sample_orders(one_block, int(n_orders), seed)                     # (R, k)
    onehot = np.zeros((len(orders), k, n), np.int64)
    onehot[np.arange(len(orders))[:, None], np.arange(k)[None, :], orders] = 1
    prefix = np.cumsum(onehot, axis=1) - onehot                                 # counts before each position
    flat = prefix.reshape(-1, n)
    counts, mult = np.unique(flat, axis=0, return_counts=True)
    weight = mult / float(len(flat))
    return PrefixStates(counts, weight, _next_prob(counts, design), "sampled", int(n_orders), int(seed))


# ============================================================================ symmetries
def stimulus_symmetries(codes) -> np.ndarray:
    """int64 (G, N): the permutations of the N stimuli (value codes (N, A), every combination
    once) made by permuting attributes with equally many values and the values of each
    attribute (three binary dimensions: the 48 symmetries of the cube).  Row 0 is the identity."""
    codes = np.asarray(codes, np.int64)
    n, a = codes.shape
    sizes = codes.max(axis=0) + 1
    index = {tuple(r): j for j, r in enumerate(codes.tolist())}
    if len(index) != n or n != int(np.prod(sizes)):
        raise ValueError("the stimuli must be every combination of the attribute values, each once")
    perms = []
    for order in itertools.permutations(range(a)):
        if any(sizes[i] != sizes[o] for i, o in enumerate(order)):
            continue
        for values in itertools.product(*(itertools.permutations(range(int(sizes[i]))) for i in range(a))):
            new = np.stack([np.asarray(values[i])[codes[:, order[i]]] for i in range(a)], axis=1)
            perms.append([index[tuple(r)] for r in new.tolist()])
    perms = np.unique(np.array(perms, np.int64), axis=0)
    ident = np.arange(n)
    return np.concatenate([ident[None], perms[~(perms == ident).all(axis=1)]])


def invariant_symmetries(perms, ext, structure, *keys) -> np.ndarray:
    """The rows of ``perms`` (G, N) that keep the learning problem the same: they preserve the
    structure's labels (bool (N,)) and map the concepts (bool (H, N)) onto themselves with equal
    ``keys`` (arrays (H,), e.g. lengths and log-probabilities: the prior)."""
    ext = np.asarray(ext, bool)
    structure = np.asarray(structure, bool)
    weights = 1 << np.arange(ext.shape[1], dtype=np.int64)
    tables = ext.astype(np.int64) @ weights
    where = {int(t): i for i, t in enumerate(tables)}
    keep = []
    for g in np.asarray(perms, np.int64):
        if not np.array_equal(structure[g], structure):
            continue
        moved = ext[:, g].astype(np.int64) @ weights
        idx = np.array([where.get(int(t), -1) for t in moved])
        if (idx < 0).any() or not all(np.allclose(np.asarray(k)[idx], np.asarray(k), rtol=1e-12, atol=1e-12)
                                      for k in keys):
            continue
        keep.append(g)
    return np.array(keep, np.int64).reshape(-1, ext.shape[1])


def merge_orbits(states: PrefixStates, perms, repeats: int) -> PrefixStates:
    """Merge prefix states that a symmetry of the learning problem maps onto each other.

    perms: int (G, N) stimulus permutations forming a group that preserves the structure and
    the prior (:func:`invariant_symmetries`); repeats: the design's showings per block.  A
    block's error summed over the next stimulus is then the same in every state of an orbit,
    so one state (the lexicographically smallest count vector of the orbit) carries the
    orbit's summed weight.  Exact, not an approximation."""
    perms = np.asarray(perms, np.int64)
    if len(perms) <= 1:
        return states
    n = states.counts.shape[1]
    base = (int(repeats) + 1) ** np.arange(n - 1, -1, -1, dtype=np.int64)      # count vector -> its number
    images = states.counts[:, perms]                                            # (S, G, N): c∘g
    canon = (images @ base).min(axis=1)                                         # smallest image
    reps, inverse = np.unique(canon, return_inverse=True)
    weight = np.bincount(inverse, weights=states.weight, minlength=len(reps))
    counts = (reps[:, None] // base[None, :]) % (int(repeats) + 1)
    left = int(repeats) - counts
    return PrefixStates(counts.astype(np.int64), weight, left / left.sum(axis=1, keepdims=True), states.method,
                        states.n_orders, states.seed)


# ============================================================================ block errors
@dataclass(frozen=True)
class StructureData:
    """What the block-error kernel needs about K category structures (torch tensors).

    Per structure k (lists of K), with e_k(h) the stimuli concept h labels against the
    structure: distance[k] float64 (H,) their number; prefix_wrong[k] (S_k, H) c_i·e_k(h), the
    mistakes of h on the stimuli shown in prefix state i; next_wrong[k] (S_k, H)
    Σ_s weight_i·next_prob_{i,s}·[s ∈ e_k(h)], h's expected mistake on the stimulus after prefix
    state i (times the state's weight).  lengths, log_pcfg: float64 (H,); design; states: the
    prefix states of each structure (orbits merged when symmetries were given)."""

    distance: list
    prefix_wrong: list
    next_wrong: list
    lengths: torch.Tensor
    log_pcfg: torch.Tensor
    design: Design
    states: list

    @property
    def n_structures(self) -> int:
        return len(self.distance)

    @property
    def n_states(self) -> int:
        """Prefix states over all structures (what one evaluation's cost grows with)."""
        return int(sum(len(w) for w in self.next_wrong))


def structure_data(ext, structures, lengths, log_pcfg, design: Design, states: PrefixStates,
                   codes=None) -> StructureData:
    """Precompute the kernel's tensors.  ext: bool (H, N); structures: bool (K, N) categories;
    lengths, log_pcfg: (H,) the concepts' description lengths and PCFG log-probabilities;
    codes: the stimuli's value codes (N, A): when given, each structure's prefix states are
    merged by the symmetries of its learning problem (:func:`merge_orbits`; exact)."""
    ext = np.asarray(ext, bool)
    structures = np.atleast_2d(np.asarray(structures, bool))
    if ext.shape[1] != design.n_stimuli or structures.shape[1] != design.n_stimuli:
        raise ValueError(f"concepts and structures must label {design.n_stimuli} stimuli, got {ext.shape[1]} and "
                         f"{structures.shape[1]}")
    t = lambda a: torch.as_tensor(np.ascontiguousarray(a), dtype=DTYPE)  # noqa: E731
    perms = stimulus_symmetries(codes) if codes is not None else None
    out = {"distance": [], "prefix_wrong": [], "next_wrong": [], "states": []}
    for structure in structures:
        st = states
        if perms is not None:
            st = merge_orbits(states, invariant_symmetries(perms, ext, structure, lengths, log_pcfg), design.repeats)
        wrong = (ext != structure[None, :]).astype(np.float64)                  # (H, N)
        out["distance"].append(t(wrong.sum(axis=1)))
        out["prefix_wrong"].append(t(st.counts.astype(np.float64) @ wrong.T))
        out["next_wrong"].append(t((st.weight[:, None] * st.next_prob) @ wrong.T))
        out["states"].append(st)
    return StructureData(lengths=t(lengths), log_pcfg=t(log_pcfg), design=design, **out)


def epsilon_tables(epsilon, data: StructureData) -> tuple:
    """What :func:`block_errors_torch` computes from ε alone: ``(kappa, tables)``, κ = log(1 − ε)
    − log ε and, per structure, the rows V = exp(−κ · prefix_wrong) (S, H), 1 for the true
    concept, stacked over V ∘ next_wrong: (2S, H).  A grid over (β, ε) computes them once per ε
    (the same tensors, so the same numbers)."""
    epsilon = torch.as_tensor(epsilon, dtype=DTYPE)
    kappa = torch.log1p(-epsilon) - torch.log(epsilon)
    tables = []
    for pw, nw in zip(data.prefix_wrong, data.next_wrong):
        big_v = torch.exp(-kappa * pw)
        tables.append(torch.cat([big_v, big_v * nw]))
    return kappa, tables


def block_errors_torch(beta, epsilon, data: StructureData, prior: str = "length", tables=None) -> torch.Tensor:
    """Expected error probability of every block, float64 (..., K, B), differentiable in β and ε
    (no lapse: see :func:`with_lapse`).  ``beta``: a scalar, or a tensor of values (shape ``...``)
    scored at once; ``epsilon``: a scalar; ``tables``: ε's :func:`epsilon_tables` already
    computed (``epsilon`` is then not read)."""
    beta = torch.as_tensor(beta, dtype=DTYPE)
    kappa, tables = epsilon_tables(epsilon, data) if tables is None else tables
    d = data.design
    blocks = torch.arange(d.n_blocks, dtype=DTYPE)
    lp = log_prior(prior, beta[..., None], data.lengths, data.log_pcfg)          # (..., H)
    rows = []
    for dist, both in zip(data.distance, tables):
        u = lp[..., None, :] - kappa * d.repeats * blocks[:, None] * dist[None, :]   # (..., B, H)
        big_u = torch.exp(u - u.amax(dim=-1, keepdim=True))
        # [den | wrong] = U @ [V; V ∘ next_wrong].T: per state, Σ_h U·V and Σ_h U·V·next_wrong
        den, wrong = (big_u @ both.T).chunk(2, dim=-1)                          # (..., B, S) each
        rows.append((wrong / den).sum(dim=-1))
    return torch.stack(rows, dim=-2)


def with_lapse(p_error, lapse):
    """λ/2 + (1 - λ)·p (numpy or torch)."""
    return 0.5 * lapse + (1.0 - lapse) * p_error


def block_errors(ext, lengths, log_pcfg, structures, beta: float, epsilon: float, *, prior: str = "length",
                 lapse: float = 0.0, design: Design = Design(), states: PrefixStates | None = None,
                 codes=None) -> np.ndarray:
    """float64 (K, B): each structure's expected error probability per block (exact prefix
    states unless ``states`` is given); arguments as :func:`structure_data` and
    :func:`block_errors_torch`."""
    _check_epsilon(epsilon)
    states = states or prefix_states(design, "exact")
    data = structure_data(ext, structures, lengths, log_pcfg, design, states, codes)
    with torch.no_grad():
        return with_lapse(block_errors_torch(float(beta), float(epsilon), data, prior).numpy(), lapse)


def block_errors_slow(ext, log_prior_h, epsilon, structure, design: Design, states: PrefixStates) -> np.ndarray:
    """float64 (B,): :func:`block_errors` for one structure by an explicit loop over blocks,
    prefix states, next stimuli and concepts (its slow twin)."""
    ext = np.asarray(ext, bool)
    structure = np.asarray(structure, bool)
    out = np.zeros(design.n_blocks)
    for b in range(design.n_blocks):
        total = 0.0
        for c, w_state, q in zip(states.counts, states.weight, states.next_prob):
            weights = []
            for h, lp in zip(ext, log_prior_h):
                m = design.repeats * b * int((h != structure).sum()) + int(sum(int(ci) * int(h[s] != structure[s])
                                                                              for s, ci in enumerate(c)))
                weights.append(float(lp) + m * math.log(epsilon) + (design.repeats * b * design.n_stimuli
                                                                    + int(c.sum()) - m) * math.log1p(-epsilon))
            top = max(weights)
            weights = [math.exp(v - top) for v in weights]
            for s in range(design.n_stimuli):
                if q[s] == 0:
                    continue
                wrong = sum(w for w, h in zip(weights, ext) if h[s] != structure[s]) / sum(weights)
                total += w_state * q[s] * wrong
        out[b] = total
    return out


__all__ = ["Design", "PrefixStates", "StructureData", "PRIOR_KINDS", "MIN_EPSILON", "log_prior", "sample_orders",
           "trial_predictive", "trial_predictive_slow", "trial_errors", "prefix_states", "stimulus_symmetries",
           "invariant_symmetries", "merge_orbits", "structure_data",
           "epsilon_tables", "block_errors_torch", "block_errors", "block_errors_slow", "with_lapse"]
