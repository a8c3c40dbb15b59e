"""One scorer for every learner: the same episodes, the same metrics.

:func:`score_learners` scores a set of named learners on one
:class:`~bayes_concepts.episodes.Episodes` batch.  Per episode and learner it
records

* ``ap``: average precision on the space's test bank against the true concept's
  labels (scikit-learn's definition, ties as one threshold), ranking by the
  learner's ``decision_function`` when it has one, else by ``predict_proba``; in a space
  with question domains, over the test-bank scenes in the concept's domain;
* ``cba``: class-balanced accuracy on the query set (positive iff p > 0.5);
* ``predictive_entropy``: mean binary entropy of the query predictions (nats);
* ``posterior_entropy``: entropy of a posterior over concepts (NaN for learners
  without one), ``empty``: the learner had nothing to go on (oracles only);
* ``query_pred``: the query predictions themselves, float64 (E, K);
* ``ap_bound`` (only from a batch method that computes AP to a tolerance, e.g. the oracles'):
  a certified bound on |ap - exact AP| per episode.

A learner with a batch method ``evaluate(episodes)`` (the oracles' numba path, the
prototype learners' embed-once path) is scored by it; any other learner by
``fit``/``predict_proba`` per episode (:func:`evaluate_by_protocol`).  Both give the
same numbers: the tests compare them.
"""
from __future__ import annotations

from typing import Mapping

import numba
import numpy as np

from ..bits import pack_bits, popcount64, unpack_bits
from ..metrics import average_precision_sparse, class_balanced_accuracy_kernel
from .protocol import LearnerError, is_learner

RESULT_KEYS = ("ap", "cba", "posterior_entropy", "predictive_entropy", "empty", "query_pred")


@numba.njit(parallel=True, cache=True)
def ap_rows(scores, concepts, test_signatures, n_positive):
    """AP of every row of ``scores`` (float (E, T): one score per test-bank scene) against
    the test-bank labels of concept ``concepts[e]`` (packed uint64 rows of
    ``test_signatures`` (n_concepts, ceil(T/64)), ``n_positive[c]`` set bits each).
    Returns float64 (E,); NaN where a concept has no positive in the test bank."""
    n_rows, n_items = scores.shape
    out = np.empty(n_rows)
    touched = np.arange(n_items)
    for e in numba.prange(n_rows):
        c = concepts[e]
        out[e] = average_precision_sparse(touched, scores[e], test_signatures[c], n_items, n_positive[c])
    return out


@numba.njit(cache=True)
def _binary_entropy(p):
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -(p * np.log(p) + (1.0 - p) * np.log(1.0 - p))


@numba.njit(cache=True)
def query_metrics(query_pred, query_labels, out_cba, out_entropy):
    """Per row: class-balanced accuracy (positive iff p > 0.5) and mean binary entropy (nats)."""
    for e in range(query_pred.shape[0]):
        out_cba[e] = class_balanced_accuracy_kernel(query_pred[e], query_labels[e])
        h = 0.0
        for j in range(query_pred.shape[1]):
            h += _binary_entropy(query_pred[e, j])
        out_entropy[e] = h / query_pred.shape[1]


def positives_in_test_bank(space) -> np.ndarray:
    """int64 (n_concepts,): test-bank scenes each concept is true on (kept in the space's index)."""
    return space.index.positives_in_test_bank()


@numba.njit(parallel=True, cache=True)
def ap_rows_sorted(scores, ascending, concepts, test_signatures, n_positive):
    """:func:`ap_rows` given also each row of ``scores`` sorted ascending (``ascending``):
    the same numbers (the same counts, summed in the same order), but the items scoring at
    least each distinct positive score are counted by a binary search in the sorted row,
    not by a binary search per item."""
    n_rows, n_items = scores.shape
    out = np.empty(n_rows)
    for e in numba.prange(n_rows):
        c = concepts[e]
        n_pos = n_positive[c]
        if n_pos == 0:
            out[e] = np.nan
            continue
        row = test_signatures[c]
        pv = np.empty(n_pos, scores.dtype)
        k = 0
        for w in range(row.shape[0]):
            word = row[w]
            while word != 0:
                low = word & (~word + np.uint64(1))
                t = w * 64 + popcount64(low - np.uint64(1))
                word = word ^ low
                if t < n_items and k < n_pos:
                    pv[k] = scores[e, t]
                    k += 1
        pv = -np.sort(-pv[:k])  # descending
        srow = ascending[e]
        ap = 0.0
        tp_ge = 0
        j = 0
        while j < k:
            u = pv[j]
            cnt = 0
            while j < k and pv[j] == u:
                cnt += 1
                j += 1
            tp_ge += cnt
            lo, hi = 0, n_items  # first index with srow[i] >= u
            while lo < hi:
                mid = (lo + hi) // 2
                if srow[mid] < u:
                    lo = mid + 1
                else:
                    hi = mid
            ap += (tp_ge / (n_items - lo)) * (cnt / n_pos)
        out[e] = ap
    return out


def _sorted_rows(scores: np.ndarray) -> np.ndarray:
    """``np.sort(scores, axis=1)`` (numpy's vectorised sort), in two threads on two cores or more."""
    from concurrent.futures import ThreadPoolExecutor
    n = len(scores)
    workers = min(numba.get_num_threads(), max(1, n // 8))
    if workers <= 1:
        return np.sort(scores, axis=1)
    out = np.empty_like(scores)
    bounds = np.linspace(0, n, workers + 1).astype(int)

    def part(i):
        out[bounds[i]: bounds[i + 1]] = np.sort(scores[bounds[i]: bounds[i + 1]], axis=1)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(part, range(workers)))
    return out


def ap_on_test_bank(space, scores, concepts) -> np.ndarray:
    """AP per row of ``scores`` float (E, T) (test-bank order) for the true ``concepts`` (E,).

    In a space with question domains, a row whose concept has one is ranked over the test-bank
    scenes in its domain only (the others are no items of its AP): those rows are scored again
    on their domain's scenes, the other rows' numbers are those of the whole bank."""
    scores = np.ascontiguousarray(scores)
    if scores.ndim != 2 or scores.shape[1] != space.test_bank.n_scenes:
        raise LearnerError(f"test-bank scores: expected shape (E, {space.test_bank.n_scenes}), got {scores.shape}")
    if np.isnan(scores).any():
        raise LearnerError("test-bank scores: NaN")
    concepts = np.asarray(concepts, np.int64)
    signatures = np.ascontiguousarray(space.test_bank.signatures)
    out = ap_rows_sorted(scores, _sorted_rows(scores), concepts, signatures, positives_in_test_bank(space))
    test_domains, domain_row = space.index.test_domain_rows()
    if len(domain_row):
        for e in np.flatnonzero(domain_row[concepts] >= 0):
            c = int(concepts[e])
            keep = np.flatnonzero(unpack_bits(test_domains[domain_row[c]], space.test_bank.n_scenes))
            row = np.ascontiguousarray(scores[e, keep][None, :])
            labels = pack_bits(unpack_bits(signatures[c], space.test_bank.n_scenes)[keep])[None, :]
            out[e] = ap_rows_sorted(row, np.sort(row, axis=1), np.zeros(1, np.int64), labels,
                                    np.array([int(np.bitwise_count(labels).sum())], np.int64))[0]
    return out


def _vector(x, n: int, what: str, name: str, e: int) -> np.ndarray:
    try:
        v = np.asarray(x, np.float64)
    except (TypeError, ValueError):
        raise LearnerError(f"learner {name!r}, episode {e}: {what} returned {type(x).__name__}, "
                           f"not numbers") from None
    if v.shape != (n,):
        raise LearnerError(f"learner {name!r}, episode {e}: {what} returned shape {v.shape} for {n} scenes")
    if not np.isfinite(v).all():
        raise LearnerError(f"learner {name!r}, episode {e}: {what} returned a non-finite value")
    return v


def evaluate_by_protocol(learner, space, episodes, name: str = "learner", progress: bool = False) -> dict:
    """Score ``learner`` with ``fit``/``predict_proba`` (and ``decision_function`` for the
    ranking, when it has one) episode by episode; the slow, obvious path every learner
    supports.  Returns the dict of :data:`RESULT_KEYS`."""
    return _complete(_protocol_predictions(learner, space, episodes, name, progress), episodes, name,
                     queries_scored=False)


def _protocol_predictions(learner, space, episodes, name: str, progress: bool) -> dict:
    """AP on the test bank, query predictions, (no) posterior entropy and (never) empty of
    ``learner`` episode by episode; CBA and predictive entropy are left to :func:`_complete`."""
    from tqdm.auto import tqdm
    e_count, k = episodes.query_scenes.shape
    bank_ids = np.asarray(space.test_bank.scene_ids, np.int64)
    rank = getattr(learner, "decision_function", None)
    rank = rank if callable(rank) else learner.predict_proba
    query_pred = np.empty((e_count, k))
    ap = np.empty(e_count)
    concepts = np.asarray(episodes.concept, np.int64)
    block = max(1, min(256, (1 << 25) // max(1, len(bank_ids))))  # episodes whose bank scores are held at once
    scores = np.empty((block, len(bank_ids)))
    for e in tqdm(range(e_count), disable=not progress, desc=name, unit="episode", leave=False):
        fitted = learner.fit(episodes.support_scenes[e], episodes.support_labels[e])
        if fitted is not learner:
            raise LearnerError(f"learner {name!r}: fit must return the learner itself (self)")
        p = _vector(learner.predict_proba(episodes.query_scenes[e]), k, "predict_proba", name, e)
        if (p < 0).any() or (p > 1).any():
            raise LearnerError(f"learner {name!r}, episode {e}: predict_proba returned values outside [0, 1]")
        query_pred[e] = p
        scores[e % block] = _vector(rank(bank_ids), len(bank_ids), "the test-bank ranking", name, e)
        if e % block == block - 1 or e == e_count - 1:
            lo = e - e % block
            ap[lo: e + 1] = ap_on_test_bank(space, scores[: e + 1 - lo], concepts[lo: e + 1])
    return {"ap": ap, "query_pred": query_pred, "posterior_entropy": np.full(e_count, np.nan),
            "empty": np.zeros(e_count, bool)}


def same_space(a, b) -> bool:
    """Whether two spaces are the same (the same object, or saved spaces with one manifest)."""
    if a is b:
        return True
    ha, hb = a.manifest_sha256(), b.manifest_sha256()
    return ha is not None and ha == hb


def _complete(result: dict, episodes, name: str, queries_scored: bool = True) -> dict:
    """A batch method's output checked and completed to :data:`RESULT_KEYS`; with
    ``queries_scored`` False (the protocol's path: query predictions only), its CBA and
    predictive entropy computed from ``result["query_pred"]``."""
    e_count, k = episodes.query_scenes.shape
    if not isinstance(result, Mapping):
        raise LearnerError(f"learner {name!r}: evaluate(episodes) must return a dict, got {type(result).__name__}")
    missing = [key for key in (("ap", "cba") if queries_scored else ("ap",)) if key not in result]
    if missing:
        raise LearnerError(f"learner {name!r}: evaluate(episodes) returned no {', '.join(missing)}")
    out = {}
    for key in ("ap", "cba", "posterior_entropy", "predictive_entropy"):
        v = np.asarray(result[key], np.float64) if key in result else np.full(e_count, np.nan)
        if v.shape != (e_count,):
            raise LearnerError(f"learner {name!r}: evaluate(episodes)[{key!r}] has shape {v.shape}, "
                               f"expected ({e_count},)")
        out[key] = v
    out["empty"] = np.asarray(result.get("empty", np.zeros(e_count, bool)), bool)
    if "query_pred" in result:
        q = np.asarray(result["query_pred"], np.float64)
        if q.shape != (e_count, k):
            raise LearnerError(f"learner {name!r}: evaluate(episodes)['query_pred'] has shape {q.shape}, "
                               f"expected ({e_count}, {k})")
        out["query_pred"] = q
    else:
        out["query_pred"] = np.full((e_count, k), np.nan)
    if "ap_bound" in result:  # a certified bound on |ap - exact AP| (the oracles at an AP tolerance)
        bound = np.asarray(result["ap_bound"], np.float64)
        if bound.shape != (e_count,):
            raise LearnerError(f"learner {name!r}: evaluate(episodes)['ap_bound'] has shape {bound.shape}, "
                               f"expected ({e_count},)")
        out["ap_bound"] = bound
    if not queries_scored or ("predictive_entropy" not in result and "query_pred" in result):
        cba, entropy = np.empty(e_count), np.empty(e_count)
        query_metrics(out["query_pred"], np.ascontiguousarray(episodes.query_labels), cba, entropy)
        out["predictive_entropy"] = entropy
        if not queries_scored:
            out["cba"] = cba
    return out

def score_learner(learner, space, episodes, name: str | None = None, progress: bool = False) -> dict:
    """Score one learner on ``episodes`` of ``space``: its batch ``evaluate`` when it has one
    (and is bound to ``space``), else :func:`evaluate_by_protocol`.  Returns the dict of
    :data:`RESULT_KEYS` (arrays (E,), ``query_pred`` (E, K))."""
    name = name or getattr(learner, "name", None) or type(learner).__name__
    if not is_learner(learner):
        raise LearnerError(f"learner {name!r} ({type(learner).__name__}) has no fit/predict_proba methods")
    batch = getattr(learner, "evaluate", None)
    if callable(batch):
        bound = getattr(learner, "space", None)
        if bound is not None and not same_space(bound, space):
            raise LearnerError(f"learner {name!r} is bound to another space than the one it is scored on")
        result, queries_scored = batch(episodes), True
    else:
        result, queries_scored = _protocol_predictions(learner, space, episodes, name, progress), False
    return _complete(result, episodes, name, queries_scored)


def scoring_key(learner):
    """The learner's ``scoring_key()`` (learners that score a batch of episodes to the same bits
    share one, e.g. two oracles over one concept set with one prior), or None."""
    key = getattr(learner, "scoring_key", None)
    return key() if callable(key) else None


def score_learners(space, episodes, learners: Mapping, progress: bool = False, known: Mapping | None = None) -> dict:
    """Score every learner of ``learners`` (name -> learner) on the same ``episodes``.
    Returns name -> the dict of :data:`RESULT_KEYS`.

    Learners with one :func:`scoring_key` are scored once and the others get copies of its
    numbers (the ladder's rungs often coincide on a split: the atom recombiner knows every
    concept of the strong oracle wherever every test atom occurs in training); ``known``:
    scoring key -> results already computed on these ``episodes`` (the comp gap's own oracles)."""
    done = dict(known or {})
    out = {}
    for name, learner in learners.items():
        key = scoring_key(learner)
        if key is not None and key in done:
            out[name] = {k: np.array(v, copy=True) for k, v in done[key].items()}
            continue
        out[name] = score_learner(learner, space, episodes, name, progress)
        if key is not None:
            done[key] = out[name]
    return out
