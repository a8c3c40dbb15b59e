"""The test bank of a hypothesis space: the scenes mAP is computed on.

For every concept, ``test_positives`` distinct positive scenes are drawn from the scene bank
(CURI: 3 per concept), avoiding scenes already drawn for an earlier concept when possible;
the labels of every concept on all drawn scenes are kept packed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..bits import gather_bits, nth_set_bits, unpack_bits


@dataclass
class TestBank:
    """Scenes for mAP: ``test_positives`` positives of every concept, with every concept's labels.

    scene_ids:    int64 (T,) indices into the space's scene bank.
    drawn_for:    int32 (T,) the concept each scene was drawn as a positive for.
    signatures:   uint64 (n_concepts, ceil(T/64)) packed labels of every concept on the T scenes.
    """

    scene_ids: np.ndarray
    drawn_for: np.ndarray
    signatures: np.ndarray

    @property
    def n_scenes(self) -> int:
        return len(self.scene_ids)

    def labels(self, concept: int) -> np.ndarray:
        """bool (T,): which test-bank scenes ``concept`` is true on."""
        return unpack_bits(np.asarray(self.signatures[concept]), self.n_scenes)

    def label_matrix(self, concepts=None) -> np.ndarray:
        """bool (len(concepts), T) (all concepts by default)."""
        sig = self.signatures if concepts is None else self.signatures[np.asarray(concepts)]
        return unpack_bits(np.asarray(sig), self.n_scenes)


def draw_test_bank(signatures, counts, k, seed) -> TestBank:
    """``k`` distinct positives per concept (seeded), avoiding scenes already drawn for an
    earlier concept when the concept has enough other positives."""
    rng = np.random.default_rng(seed)
    n, _ = signatures.shape
    n_cand = 4 * k
    ranks = np.empty((n, n_cand), np.int64)
    n_ranks = np.minimum(counts, n_cand)
    for i in range(n):
        ranks[i, : n_ranks[i]] = rng.choice(counts[i], size=n_ranks[i], replace=False)
    candidates = nth_set_bits(signatures, ranks, n_ranks)
    ids, drawn_for = choose_test_scenes(candidates, n_ranks, counts, k)
    return TestBank(ids, drawn_for, gather_bits(signatures, ids))


def choose_test_scenes(candidates, n_ranks, counts, k) -> tuple:
    """Up to ``k`` scenes per concept from its candidates (int64 (n, m), the first
    ``n_ranks[i]`` of row i valid), preferring scenes not chosen for an earlier concept and
    taking earlier ones only when too few are fresh.  Returns (scene ids int64 (T,),
    drawn_for int32 (T,)).  :func:`draw_test_bank` and the chunked build both choose this way."""
    used = set()
    ids, drawn_for = [], []
    for i in range(len(counts)):
        cand = candidates[i, : n_ranks[i]].tolist()
        fresh = [s for s in cand if s not in used][:k]
        if len(fresh) < min(k, counts[i]):
            fresh += [s for s in cand if s not in fresh][: min(k, counts[i]) - len(fresh)]
        used.update(fresh)
        ids.extend(fresh)
        drawn_for.extend([i] * len(fresh))
    return np.array(ids, np.int64), np.array(drawn_for, np.int32)


#: the per-scene class lists are split by class id modulo this many lanes (see
#: :func:`scene_class_lanes`)
N_LANES = 4


@numba.njit(cache=True)
def _lane_sizes(ptr, idx, sizes):
    for c in range(ptr.shape[0] - 1):
        for i in range(ptr[c], ptr[c + 1]):
            sizes[idx[i] * N_LANES + c % N_LANES] += 1


@numba.njit(cache=True)
def _fill_lanes(ptr, idx, out_ptr, out_cls):
    fill = out_ptr[:-1].copy()
    for c in range(ptr.shape[0] - 1):
        lane = c % N_LANES
        for i in range(ptr[c], ptr[c + 1]):
            key = idx[i] * N_LANES + lane
            out_cls[fill[key]] = c
            fill[key] += 1


def scene_class_lanes(ptr, idx, n_scenes: int):
    """The classes of each test scene from the scenes of each class (CSR ``(ptr, idx)``), split
    into :data:`N_LANES` lanes by class id: ``(lane_ptr, classes)``, int64 (n_scenes·N_LANES + 1,)
    and the smallest of uint16/int32 that holds a class id.  Lane j of scene t,
    ``classes[lane_ptr[N_LANES·t + j]:lane_ptr[N_LANES·t + j + 1]]``, holds its classes c with
    c % N_LANES == j, ascending."""
    ptr, idx = np.asarray(ptr, np.int64), np.asarray(idx)
    n_cls = len(ptr) - 1
    sizes = np.zeros(n_scenes * N_LANES, np.int64)
    _lane_sizes(ptr, idx, sizes)
    lane_ptr = np.zeros(n_scenes * N_LANES + 1, np.int64)
    lane_ptr[1:] = np.cumsum(sizes)
    classes = np.empty(len(idx), np.uint16 if n_cls <= 65536 else np.int32)
    _fill_lanes(ptr, idx, lane_ptr, classes)
    return lane_ptr, classes
