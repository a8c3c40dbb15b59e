"""The build's execute stages over scene chunks, in-process or on Dask.

The signatures of a chunk of scenes are a column block of words (a chunk is a multiple of 64
scenes), so the executor maps over scene chunks (:func:`count_programs`,
:func:`signatures_stage`) with :class:`bayes_concepts.scale.Scheduler` -- the same code in
this process and on a cluster -- and the blocks come back in chunk order to:

* a :class:`SignatureSink`: an array in memory, or a ``.npy`` file written block by block and
  memory-mapped when done (large spaces: no process ever holds all signatures);
* the per-concept popcounts, the synonym classes (:class:`SynonymRefiner`: the partition of
  concepts by equal signature, refined block by block, exact), the test bank's candidate
  scenes (:func:`resolve_ranks`) with every concept's labels on them, and, for a large space
  spilled to disk, its per-scene concept index (:class:`.index.IndexWriter`): each block is
  seen once, and the signatures are never read back.

Every result equals the one-shot functions of :mod:`.build`, :mod:`.executor` and
:mod:`.test_bank` (tests compare them); results do not depend on the chunk size or on where
the chunks ran.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
import weakref
from pathlib import Path

import numba
import numpy as np

from ..bits import _select_in_words, gather_bits, popcount64
from ..scale import Scheduler, release_pages
from . import index
from .executor import REGISTER_BYTES
from .kernels import run_plan
from .store import SPILLED_FILES
from .test_bank import TestBank, choose_test_scenes

#: Scenes per task of the execute stages (a multiple of 64): 2048 words.
SCENE_CHUNK = 1 << 17
#: Signatures larger than this are written to a file (memory-mapped), not kept in memory.
SPILL_BYTES = 1 << 30


def scene_chunks(n_scenes: int, chunk_scenes: int | None = None) -> list:
    """``[(w0, w1, n), ...]``: word ranges of the scene chunks and the scenes each holds.

    chunk_scenes: scenes per chunk, rounded up to a multiple of 64 (default :data:`SCENE_CHUNK`)."""
    cw = max(1, -(-int(chunk_scenes or SCENE_CHUNK) // 64))
    n_words = -(-int(n_scenes) // 64)
    return [(w0, min(w0 + cw, n_words), min(64 * min(w0 + cw, n_words), n_scenes) - 64 * w0)
            for w0 in range(0, n_words, cw)]


def execute_chunk(task, instructions, n_regs, n_outputs, count_only):
    """Run a plan on one scene chunk.  task: ``(w0, w1, n_scenes, bank_rows)`` with the chunk's
    bank rows uint64 (n_bank_rows, w1 - w0).  Returns int64 (n_outputs,) popcounts if
    ``count_only``, else the block of signatures uint64 (n_outputs, w1 - w0)."""
    w0, w1, n, rows = task
    cw = int(np.clip(REGISTER_BYTES // (8 * max(n_regs, 1)), 16, 128))  # as executor.chunk_words_for
    out, counts = run_plan(instructions, np.ascontiguousarray(rows), n_regs, n_outputs, cw, count_only, n)
    return counts if count_only else out


def _tasks(bank_rows, n_scenes, chunk_scenes):
    for w0, w1, n in scene_chunks(n_scenes, chunk_scenes):
        yield (w0, w1, n, np.ascontiguousarray(bank_rows[:, w0:w1]))


def count_programs(plan, bank_rows, n_scenes, scheduler: Scheduler, chunk_scenes: int | None = None) -> np.ndarray:
    """Scenes each output of ``plan`` is true on: int64 (n_outputs,) (= :func:`.executor.count`)."""
    total = np.zeros(plan.n_outputs, np.int64)
    shared = dict(instructions=plan.instructions, n_regs=plan.n_regs, n_outputs=plan.n_outputs, count_only=True)
    for counts in scheduler.map(execute_chunk, _tasks(bank_rows, n_scenes, chunk_scenes), shared):
        total += counts
    return total


# ---------------------------------------------------------------------------------- the sink
def _npy_header(shape, dtype) -> bytes:
    """The header ``np.save`` writes for an array of ``shape`` and ``dtype`` (format 1.0)."""
    import io
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                                               "fortran_order": False, "shape": tuple(int(s) for s in shape)})
    return buf.getvalue()


class SignatureSink:
    """Where the blocks of signatures uint64 (n_rows, n_words) go: an array in memory
    (``path`` None) or the ``.npy`` file ``path``, written block by block (never all in
    memory) and memory-mapped read-only by :meth:`finish`."""

    def __init__(self, n_rows: int, n_words: int, path=None):
        self.shape = (int(n_rows), int(n_words))
        self.path = None if path is None else Path(path)
        if self.path is None:
            self.array = np.zeros(self.shape, np.uint64)
        else:
            header = _npy_header(self.shape, np.uint64)
            self.offset = len(header)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(self._fd, header)
            os.ftruncate(self._fd, self.offset + 8 * self.shape[0] * self.shape[1])

    def write(self, w0: int, block: np.ndarray):
        """Put ``block`` uint64 (n_rows, w) at words ``w0:w0+w`` of every row."""
        if self.path is None:
            self.array[:, w0: w0 + block.shape[1]] = block
            return
        block = np.ascontiguousarray(block, np.uint64)
        row_bytes = 8 * self.shape[1]
        for i in range(self.shape[0]):
            os.pwrite(self._fd, block[i].data, self.offset + i * row_bytes + 8 * w0)

    def read(self, w0: int, w1: int) -> np.ndarray:
        """Words ``w0:w1`` of every row: uint64 (n_rows, w1 - w0), a copy."""
        if self.path is None:
            return np.ascontiguousarray(self.array[:, w0:w1])
        out = np.empty((self.shape[0], w1 - w0), np.uint64)
        row_bytes = 8 * self.shape[1]
        for i in range(self.shape[0]):
            os.preadv(self._fd, [out[i].data], self.offset + i * row_bytes + 8 * w0)
        return out

    def finish(self) -> np.ndarray:
        """The signatures: the array, or the file memory-mapped read-only."""
        if self.path is None:
            return self.array
        os.fsync(self._fd)
        os.close(self._fd)
        self._fd = None
        return np.load(self.path, mmap_mode="r", allow_pickle=False)

    def close(self):
        if self.path is not None and getattr(self, "_fd", None) is not None:
            os.close(self._fd)
            self._fd = None




SPILL_PREFIX = "bayes_concepts_build_"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process
    return True


def remove_stale_spills(where=None):
    """Delete spill directories of processes that no longer run (a build killed before its
    temporary files could be removed).  Their names carry the pid of the process that made them."""
    for d in Path(where or tempfile.gettempdir()).glob(SPILL_PREFIX + "*"):
        pid = d.name[len(SPILL_PREFIX):].split("_", 1)[0]
        if pid.isdigit() and d.is_dir() and not d.is_symlink() and not _alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)


def spill_directory(where=None) -> Path:
    """A new directory for spilled signatures (under ``where``, default the temp directory),
    named after this process; spill directories of dead processes are removed first."""
    remove_stale_spills(where)
    return Path(tempfile.mkdtemp(prefix=f"{SPILL_PREFIX}{os.getpid()}_", dir=where))


# ------------------------------------------------------------------------------ synonym classes
@numba.njit(parallel=True, cache=True)
def _row_hashes(block, out):
    """Two 64-bit hashes of every row of ``block`` (uint64 (n, w)) into ``out`` uint64 (n, 2)."""
    for i in numba.prange(block.shape[0]):
        a = np.uint64(0x9E3779B97F4A7C15)
        b = np.uint64(0xC2B2AE3D27D4EB4F)
        for w in range(block.shape[1]):
            v = block[i, w]
            a = (a ^ v) * np.uint64(0xFF51AFD7ED558CCD)
            a ^= a >> np.uint64(29)
            b = (b + v) * np.uint64(0xC4CEB9FE1A85EC53)
            b ^= b >> np.uint64(31)
        out[i, 0] = a
        out[i, 1] = b


class SynonymRefiner:
    """The partition of rows into classes of equal signatures, refined block by block.

    Each :meth:`add` splits every class by the rows' words in the block (hashes, then an exact
    comparison with the class's first member; a hash collision is split exactly), so after
    every block two rows share a class iff they are equal on all blocks so far.
    :meth:`classes` numbers the classes in order of their first member: the same int32
    array as :func:`bayes_concepts.spaces.build.synonym_classes` on the whole signatures."""

    def __init__(self, n_rows: int):
        self.group = np.zeros(int(n_rows), np.int64)

    def add(self, block: np.ndarray):
        n = len(self.group)
        if n == 0:
            return
        block = np.ascontiguousarray(block, np.uint64)
        h = np.empty((n, 2), np.uint64)
        _row_hashes(block, h)
        keys = np.empty((n, 3), np.uint64)
        keys[:, 0] = self.group.astype(np.uint64)
        keys[:, 1:] = h
        _, new = np.unique(keys, axis=0, return_inverse=True)
        new = new.ravel().astype(np.int64)
        first = np.full(new.max() + 1, -1, np.int64)
        first[new[::-1]] = np.arange(n - 1, -1, -1)  # the first member of each class
        rep = first[new]
        same = np.ones(n, bool)
        for lo in range(0, n, 4096):  # bounded temporaries
            same[lo: lo + 4096] = (block[lo: lo + 4096] == block[rep[lo: lo + 4096]]).all(axis=1)
        if not same.all():  # a hash collision: split those rows by their exact words
            nxt = int(new.max()) + 1
            exact = {}
            for i in np.flatnonzero(~same).tolist():
                key = (int(new[i]), block[i].tobytes())
                if key not in exact:
                    exact[key] = nxt
                    nxt += 1
                new[i] = exact[key]
        self.group = new

    def classes(self) -> np.ndarray:
        n = len(self.group)
        if n == 0:
            return np.zeros(0, np.int32)
        _, first = np.unique(self.group, return_index=True)
        order = np.empty(self.group.max() + 1, np.int64)
        order[self.group[np.sort(first)]] = np.arange(len(first))
        return order[self.group].astype(np.int32)


# ----------------------------------------------------------------------------------- test bank
def draw_ranks(counts, k, seed) -> tuple:
    """The ranks :func:`~bayes_concepts.engine.test_bank.draw_test_bank` draws: (ranks int64
    (n, 4k), n_ranks int64 (n,)), from the same generator in the same order."""
    rng = np.random.default_rng(seed)
    n = len(counts)
    n_cand = 4 * k
    ranks = np.empty((n, n_cand), np.int64)
    n_ranks = np.minimum(counts, n_cand)
    for i in range(n):
        ranks[i, : n_ranks[i]] = rng.choice(counts[i], size=n_ranks[i], replace=False)
    return ranks, n_ranks


@numba.njit(parallel=True, cache=True)
def resolve_ranks(block, s0, before, ranks, n_ranks, out):
    """Scene ids of the ranks that fall in this block: for row i and r < n_ranks[i] with
    before[i] <= ranks[i, r] < before[i] + (set bits of block[i]), out[i, r] = s0 + the scene
    of that set bit.  before: int64 (n,) set bits of the row in earlier blocks."""
    for i in numba.prange(block.shape[0]):
        here = 0
        for w in range(block.shape[1]):
            here += popcount64(block[i, w])
        for r in range(n_ranks[i]):
            q = ranks[i, r] - before[i]
            if 0 <= q < here:
                out[i, r] = s0 + _select_in_words(block[i], 0, block.shape[1], 0, q)


@numba.njit(parallel=True, cache=True)
def _gather_block(block, s0, local, positions, out):
    """Labels of every row of ``block`` (scenes s0..) on scenes ``local`` (global ids, int64 (m,)):
    bit ``positions[j]`` of out[i] is bit ``local[j] - s0`` of block[i]."""
    for i in numba.prange(block.shape[0]):
        for j in range(local.shape[0]):
            s = local[j] - s0
            t = positions[j]
            bit = (block[i, s >> 6] >> np.uint64(s & 63)) & np.uint64(1)
            out[i, t >> 6] |= bit << np.uint64(t & 63)


# ------------------------------------------------------------------------------------ the stage
def _index_threshold() -> int:
    return index.INDEX_IN_MEMORY_BYTES  # read at call time: tests lower it


def _file_key(signatures) -> str:
    return index.file_key(Path(signatures.filename))


def signatures_stage(plan, bank_rows, n_scenes, counts, test_positives, seed, scheduler: Scheduler,
                     chunk_scenes: int | None = None, spill=None, extra: int = 0) -> dict:
    """Signatures of ``plan``'s outputs over the scene bank, their popcounts, synonym classes and
    the test bank, one scene chunk at a time.

    counts: int64 (n,) the outputs' popcounts as the count stage found them (the test bank's
    ranks are drawn from them before any block is run; checked against the blocks).  spill:
    None (a file when the signatures exceed :data:`SPILL_BYTES`), False (in memory), True (a
    file in a new temporary directory) or a directory for the file.  Returns a dict:
    ``signatures`` (array or read-only memmap), ``counts``, ``classes``, ``test_bank``,
    ``test_bank_seconds``, and ``extra``: uint64 (extra, n_words) (padding bits 0), the plan's last
    ``extra`` outputs, which are not signatures (the concepts' domains, run in the same pass:
    :func:`~bayes_concepts.engine.executor.compile_with_domains`), kept in memory."""
    n_rows = plan.n_outputs - int(extra)
    n_words = -(-int(n_scenes) // 64)
    chunk_scenes = chunk_scenes or max(64, SCENE_CHUNK // 2)  # blocks of all outputs come back to this process
    if spill is None:
        spill = 8 * n_rows * n_words > SPILL_BYTES
    spill_dir = None
    if spill is True:
        spill_dir = spill_directory()
    elif spill is not False:
        spill_dir = Path(spill)
        spill_dir.mkdir(parents=True, exist_ok=True)
    sink = SignatureSink(n_rows, n_words, None if spill_dir is None else spill_dir / "signatures.npy")
    index_writer = None
    if spill_dir is not None and index.index_bytes_for(n_rows, n_scenes) > _index_threshold():
        index_writer = index.IndexWriter(spill_dir / "index", n_rows, n_scenes, n_words)
    try:
        refiner = SynonymRefiner(n_rows)
        seen = np.zeros(n_rows, np.int64)
        ranks, n_ranks = draw_ranks(np.asarray(counts, np.int64), int(test_positives), int(seed))
        candidates = np.full(ranks.shape, -1, np.int64)
        # every concept's labels on every candidate scene of the test bank, gathered from the
        # blocks as they pass (the candidates come in scene order): no second pass over the file
        cand_scenes, n_cand = [], 0
        cand_labels = np.zeros((n_rows, (int(n_ranks.sum()) + 63) // 64), np.uint64)
        shared = dict(instructions=plan.instructions, n_regs=plan.n_regs, n_outputs=plan.n_outputs, count_only=False)
        chunks = scene_chunks(n_scenes, chunk_scenes)
        blocks = scheduler.map(execute_chunk, _tasks(bank_rows, n_scenes, chunk_scenes), shared)
        extra_rows = np.zeros((int(extra), n_words), np.uint64)
        for (w0, w1, n_here), block in zip(chunks, blocks):
            if extra:
                extra_rows[:, w0:w1] = block[n_rows:]
                block = block[:n_rows]
            sink.write(w0, block)
            refiner.add(block)
            resolve_ranks(block, 64 * w0, seen, ranks, n_ranks, candidates)
            here = np.unique(candidates[(candidates >= 64 * w0) & (candidates < 64 * w0 + n_here)])
            if len(here):
                _gather_block(block, 64 * w0, here, np.arange(n_cand, n_cand + len(here)), cand_labels)
                cand_scenes.append(here)
                n_cand += len(here)
            if index_writer is not None:
                index_writer.add(w0, block, n_here)
            seen += np.bitwise_count(block).sum(axis=1, dtype=np.int64)
            del block
        if not np.array_equal(seen, counts):
            raise AssertionError("the signatures' popcounts differ from the count stage's")
        t = time.perf_counter()
        ids, drawn_for = choose_test_scenes(candidates, n_ranks, seen, int(test_positives))
        cand_scenes = np.concatenate(cand_scenes) if cand_scenes else np.zeros(0, np.int64)
        test_sig = gather_bits(cand_labels, np.searchsorted(cand_scenes, ids))
        del cand_labels
        signatures = sink.finish()
        if index_writer is not None:
            index_writer.finish(_file_key(signatures))
        test_bank_seconds = time.perf_counter() - t
    except BaseException:
        sink.close()
        if index_writer is not None:
            index_writer.abort()
        if spill is True and spill_dir is not None:
            shutil.rmtree(spill_dir, ignore_errors=True)
        raise
    if spill is True:  # the temporary directory goes when the signatures do
        SPILLED_FILES.add(str(Path(signatures.filename).resolve()))
        weakref.finalize(signatures, shutil.rmtree, str(spill_dir), True)
    release_pages(signatures)
    return dict(signatures=signatures, counts=seen, classes=refiner.classes(),
                test_bank=TestBank(ids, drawn_for, test_sig), test_bank_seconds=test_bank_seconds, extra=extra_rows)
