"""Indexes derived from a space's signatures, for large spaces built on disk, chunk by chunk.

* the **per-scene concept index** (the transposed signatures): uint64 (n_scenes,
  ceil(n_concepts/64)), bit h of row s says concept h is true on scene s -- what hard
  negatives (union mode) and the oracles' consistency tests read;
* the **block counts** of the signatures (:func:`bayes_concepts.bits.block_counts`, blocks of
  64 words): int32 (n_concepts, ceil(n_words/64) + 1), what the episode sampler's
  select-by-rank reads.

A small space keeps them in memory.  A space whose index would exceed
:data:`INDEX_IN_MEMORY_BYTES` (CURI's 990,000 scenes: 2.5 GB) gets them as ``.npy`` files,
written in column blocks of the signatures (so neither the signatures nor the index are
ever in memory whole) and memory-mapped: into the space's ``index/`` folder
(:data:`~bayes_concepts.engine.store.INDEX_DIR`, not part of the manifest; recorded with the
manifest's sha256 and rebuilt when stale), beside signatures spilled during a build, or in a
temporary folder when the space's folder is read-only.  Processes that share a machine (Dask
workers) share one copy in the page cache; a lock keeps two of them from building it at once.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

from ..bits import block_counts, transpose_bits
from ..scale import release_pages
from .store import INDEX_DIR

#: Indexes larger than this are memory-mapped files instead of arrays in memory (bytes).
INDEX_IN_MEMORY_BYTES = 256 << 20
#: Column blocks of the signatures read at a time while building the index (bytes).
BLOCK_BYTES = 128 << 20
#: Words per block of the block counts (:data:`bayes_concepts.episodes.BLOCK`).
COUNT_BLOCK = 64
INDEX_VERSION = 1


def index_bytes(space) -> int:
    """Bytes of the per-scene concept index of ``space``."""
    return 8 * int(space.n_scenes) * ((int(space.n_concepts) + 63) // 64)


def _signature_file(space):
    """The ``.npy`` file ``space.signatures`` is memory-mapped from, or None."""
    base = space.signatures
    while base is not None and not isinstance(base, np.memmap):
        base = getattr(base, "base", None)
    name = getattr(base, "filename", None)
    return Path(name) if name else None


def _key(space) -> str:
    """What the index was built from: the space's manifest sha256, or the signature file's
    path, size and modification time."""
    sha = space.manifest_sha256() if getattr(space, "path", None) is not None else None
    if sha:
        return f"manifest:{sha}"
    f = _signature_file(space)
    st = f.stat()
    return f"file:{f}:{st.st_size}:{st.st_mtime_ns}"


def _writable_dir(d: Path) -> bool:
    try:
        d.mkdir(exist_ok=True)
    except OSError:
        return False
    return os.access(d, os.W_OK | os.X_OK)


def index_directory(space) -> Path | None:
    """Where ``space``'s on-disk indexes live: ``<space>/index`` for a saved space (a temporary
    folder if that is read-only), ``index/`` beside spilled signatures, None for a space whose
    signatures are in memory and not saved (its indexes stay in memory)."""
    if getattr(space, "path", None) is not None:
        d = Path(space.path) / INDEX_DIR
        if _writable_dir(d):
            return d
        sha = space.manifest_sha256()
        d = Path(tempfile.gettempdir()) / f"bayes_concepts_index_{sha[:16]}"
        return d if _writable_dir(d) else None
    f = _signature_file(space)
    if f is not None and _writable_dir(f.parent / INDEX_DIR):
        return f.parent / INDEX_DIR
    return None


def _on_disk(space) -> bool:
    return index_bytes(space) > INDEX_IN_MEMORY_BYTES and index_directory(space) is not None


def scene_concepts(space) -> np.ndarray:
    """The per-scene concept index of ``space``: uint64 (n_scenes, ceil(n_concepts/64)), in
    memory or memory-mapped (see the module docstring)."""
    if not _on_disk(space):
        return transpose_bits(np.asarray(space.signatures), space.n_scenes)
    return _load(space, "scene_concepts.npy")


def signature_block_counts(space) -> np.ndarray:
    """:func:`bayes_concepts.bits.block_counts` of ``space.signatures`` (blocks of
    :data:`COUNT_BLOCK` words): int32 (n_concepts, ceil(n_words/64) + 1)."""
    if not _on_disk(space):
        return block_counts(np.ascontiguousarray(space.signatures), COUNT_BLOCK)
    return np.array(_load(space, "block_counts.npy"))


def _load(space, name: str) -> np.ndarray:
    d = index_directory(space)
    key = _key(space)
    if not _current(d, key):
        import fcntl
        with open(d / ".lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if not _current(d, key):
                    build_index(space, d, key)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
    return np.load(d / name, mmap_mode="r", allow_pickle=False)


def _current(d: Path, key: str) -> bool:
    try:
        meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (isinstance(meta, dict) and meta.get("key") == key and meta.get("version") == INDEX_VERSION
            and all((d / f).is_file() for f in ("scene_concepts.npy", "block_counts.npy")))


def _npy_writer(path: Path, shape, dtype):
    f = open(path, "wb")
    np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                                             "fortran_order": False, "shape": tuple(int(s) for s in shape)})
    return f


def build_index(space, d: Path, key: str):
    """Write ``scene_concepts.npy`` and ``block_counts.npy`` of ``space`` into ``d``, reading the
    signatures one column block (a multiple of 64 words) at a time; files appear atomically."""
    sig = space.signatures
    n, n_words = sig.shape
    n_scenes = int(space.n_scenes)
    hw = (n + 63) // 64
    words = max(COUNT_BLOCK, (BLOCK_BYTES // max(1, 8 * n)) // COUNT_BLOCK * COUNT_BLOCK)
    n_count_blocks = -(-n_words // COUNT_BLOCK)
    cum = np.zeros((n, n_count_blocks + 1), np.int32)
    tag = f".tmp-{os.getpid()}"
    sc_tmp = d / ("scene_concepts.npy" + tag)
    try:
        with _npy_writer(sc_tmp, (n_scenes, hw), np.uint64) as f:
            total = np.zeros(n, np.int64)
            for w0 in range(0, n_words, words):
                w1 = min(w0 + words, n_words)
                block = np.array(sig[:, w0:w1], np.uint64)
                release_pages(sig)
                per_word = np.bitwise_count(block).astype(np.int64)
                for b0 in range(0, w1 - w0, COUNT_BLOCK):
                    cum[:, (w0 + b0) // COUNT_BLOCK] = total
                    total += per_word[:, b0: b0 + COUNT_BLOCK].sum(axis=1)
                s0 = 64 * w0
                f.write(transpose_bits(block, min(64 * w1, n_scenes) - s0).data)
                del block, per_word
            cum[:, -1] = total
            f.flush()
            os.fsync(f.fileno())
        with _npy_writer(d / ("block_counts.npy" + tag), cum.shape, np.int32) as f:
            f.write(np.ascontiguousarray(cum).data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(sc_tmp, d / "scene_concepts.npy")
        os.replace(d / ("block_counts.npy" + tag), d / "block_counts.npy")
        meta = d / ("meta.json" + tag)
        meta.write_text(json.dumps({"key": key, "version": INDEX_VERSION, "n_concepts": n, "n_scenes": n_scenes}))
        os.replace(meta, d / "meta.json")
    finally:
        for f in d.glob("*" + tag):
            f.unlink(missing_ok=True)
