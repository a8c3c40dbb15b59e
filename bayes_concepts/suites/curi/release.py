"""CURI's public release as it ran: its hypotheses' strings, its Binding rule and its oracle scores.

:func:`release_string` writes a program as the release printed it, and
:func:`release_oracle_scores` scores episodes with the release's float32 weak posterior and
its AP pool (:func:`release_pool`).  The release's prior and likelihood, ``pcfg_release``
and ``size_release``, are built-ins of :data:`~bayes_concepts.oracles.priors` and
:data:`~bayes_concepts.oracles.likelihoods`.
"""
from __future__ import annotations

import numpy as np

from ...bits import gather_bits, nth_set_bits, unpack_bits
from ...metrics import average_precision, class_balanced_accuracy
from ...oracles import Oracle
from ...oracles.likelihoods import size_release_likelihood
from ...oracles.priors import pcfg_release_prior
from ...protocols import mixed_values

#: Tokens the release's strings carry and our canonical form drops.
RELEASE_BINDER = ("lambda", "S.")


# ------------------------------------------------------------------- released strings
def release_string(program) -> str:
    """``program`` (a :class:`~bayes_concepts.lot.Program`) written as CURI's release printed
    its hypotheses: sizes by the grammar's aliases (``0.7``/``0.35``), ``lambda S.`` before the
    final quantifier, or at the end of an x-free program whose quantifier was dropped
    (``x color? red = lambda S. exists=``, ``S color? brown count= 3 = lambda S.``).
    :meth:`Program.parse` reads it back."""
    spelled = {}
    for alias, value in program.grammar.aliases.items():
        spelled.setdefault(value, alias)
    tokens = [spelled.get(t, t) for t in program.tokens]
    if program.quantifier is not None:
        return " ".join(tokens[:-1] + list(RELEASE_BINDER) + tokens[-1:])
    return " ".join(tokens + list(RELEASE_BINDER))


def release_token_counts(space) -> np.ndarray:
    """int64 (n_concepts,): tokens of each concept's released string (``lambda`` and ``S.``
    included), the release's hypothesis length."""
    return np.fromiter((len(release_string(space.program(i)).split()) for i in range(space.n_concepts)),
                       np.int64, space.n_concepts)


# ------------------------------------------------------------- the release's oracle scores
def release_pool(space, per_concept: int = 3, seed: int = 0) -> np.ndarray:
    """The release's AP pool: ``per_concept`` scenes drawn *with replacement* from every
    concept's extension (so a scene may appear several times): int64 (n_concepts * per_concept,)
    scene-bank ids, concept by concept."""
    counts = np.asarray(space.counts, np.int64)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 3303]))
    ranks = (rng.random((len(counts), per_concept)) * counts[:, None]).astype(np.int64)
    ids = nth_set_bits(np.asarray(space.signatures), ranks, np.full(len(counts), per_concept, np.int64))
    return ids.ravel()


def release_oracle_scores(space, split, settings, episodes, n=None, masked32: bool = True, pool=None) -> dict:
    """AP and CBA per episode of the strong and the weak oracle, computed as CURI's release
    computed them: the weak posterior is the strong oracle's posterior (over
    ``split.strong_concepts``, else H_train ∪ H_test) restricted to H_train and renormalised.

    masked32: True -- in float32 with 1e-12 added to the normaliser, as the release's data
    loader did (a weak posterior whose training mass is tiny then predicts almost 0
    everywhere, and exactly 0 where that mass underflows); False -- in float64 without the
    guard, which is our weak oracle exactly (the tests compare it with ``Oracle.evaluate``).
    pool: scene-bank ids AP is computed on (e.g. :func:`release_pool`); default the space's
    test bank.  A slow per-episode path (``n``: only the first n episodes).

    Returns float64 (n,) arrays ``strong_ap``, ``strong_cba``, ``weak_ap``, ``weak_cba`` and
    ``train_mass`` (the strong posterior's mass on H_train, float64)."""
    n = len(episodes) if n is None else min(int(n), len(episodes))
    strong_ids = getattr(split, "strong_concepts", None)
    strong_ids = np.union1d(split.train, split.test) if strong_ids is None else strong_ids
    strong = Oracle(space, strong_ids, settings, "strong")
    in_train = np.zeros(space.n_concepts, bool)
    in_train[split.train] = True
    hard = episodes.meta.get("negatives", "hard") == "hard"
    drawn = int(episodes.meta.get("n_positive", 5))
    if pool is None:
        pool_sig, n_pool = np.asarray(space.test_bank.signatures), space.test_bank.n_scenes
    else:
        pool = np.asarray(pool, np.int64)
        pool_sig, n_pool = gather_bits(np.asarray(space.signatures), pool), len(pool)
    query_rows = space.scene_concepts()
    dtype = np.float32 if masked32 else np.float64
    out = {k: np.empty(n) for k in ("strong_ap", "strong_cba", "weak_ap", "weak_cba", "train_mass")}

    def scores(ids, p, e):
        pred = np.zeros(n_pool, dtype)
        for lo in range(0, len(ids), 256):  # a block of candidates' labels at a time
            rows = unpack_bits(pool_sig[ids[lo:lo + 256]], n_pool).astype(dtype)
            pred += p[lo:lo + 256].astype(dtype) @ rows
        ap = average_precision(pred.astype(np.float64), unpack_bits(pool_sig[int(episodes.concept[e])], n_pool))
        q = episodes.query_scenes[e]
        if len(ids):
            bits = (query_rows[q][:, ids >> 6] >> (ids & 63).astype(np.uint64)) & np.uint64(1)
            q_pred = (bits.astype(dtype) * p[None, :]).sum(axis=1, dtype=dtype)
        else:
            q_pred = np.zeros(len(q))
        return ap, class_balanced_accuracy(np.asarray(q_pred, np.float64), episodes.query_labels[e])

    for e in range(n):
        strong.fit(episodes.support_scenes[e], episodes.support_labels[e], hard=hard, positives_drawn=drawn)
        ids, probs = strong.posterior()
        out["strong_ap"][e], out["strong_cba"][e] = scores(ids, probs.astype(dtype), e)
        keep = in_train[ids]
        w_ids, p = ids[keep], probs[keep].astype(dtype)
        out["train_mass"][e] = float(probs[keep].sum())
        if masked32:
            p = p / (p.sum(dtype=dtype) + dtype(1e-12))
        elif len(p):
            p = p / p.sum()
        out["weak_ap"][e], out["weak_cba"][e] = scores(w_ids, p, e)
    return out


__all__ = ["RELEASE_BINDER", "release_string", "release_token_counts", "mixed_values", "release_pool",
           "release_oracle_scores", "pcfg_release_prior", "size_release_likelihood"]
