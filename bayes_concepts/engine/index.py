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

import numba
import numpy as np

from ..bits import block_counts, popcount64, transpose_bits
from ..scale import release_pages
from .rows import RowFile
from .store import INDEX_DIR, derived_folders, manifest_sha256, mapped_file, npy_layout

#: Indexes larger than this are memory-mapped files instead of arrays in memory (bytes).
INDEX_IN_MEMORY_BYTES = 256 << 20
#: Column blocks of the signatures read at a time while building the index (bytes).
BLOCK_BYTES = 256 << 20
#: Words per block of the block counts (:data:`bayes_concepts.episodes.BLOCK`).
COUNT_BLOCK = 64
INDEX_VERSION = 1


def index_bytes_for(n_concepts: int, n_scenes: int) -> int:
    """Bytes of the per-scene concept index of a space of this size."""
    return 8 * int(n_scenes) * ((int(n_concepts) + 63) // 64)


def index_bytes(space) -> int:
    """Bytes of the per-scene concept index of ``space``."""
    return index_bytes_for(space.n_concepts, space.n_scenes)


def file_key(f: Path) -> str:
    """The key of an index built from the signature file ``f``: its path, size and mtime."""
    st = Path(f).stat()
    return f"file:{Path(f).resolve()}:{st.st_size}:{st.st_mtime_ns}"


def _key(space) -> str:
    """What the index was built from: the space's manifest sha256, or the signature file's
    path, size and modification time."""
    sha = space.manifest_sha256() if space.path is not None else None
    if sha:
        return f"manifest:{sha}"
    return file_key(mapped_file(space.signatures))


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
    if space.path is not None:
        d = Path(space.path) / INDEX_DIR
        if _writable_dir(d):
            return d
        sha = space.manifest_sha256()
        d = Path(tempfile.gettempdir()) / f"bayes_concepts_index_{sha[:16]}"
        return d if _writable_dir(d) else None
    f = mapped_file(space.signatures)
    if f is not None and _writable_dir(f.parent / INDEX_DIR):
        return f.parent / INDEX_DIR
    return None


def _on_disk(space) -> bool:
    return index_bytes(space) > INDEX_IN_MEMORY_BYTES and index_directory(space) is not None


def scene_concepts(space):
    """The per-scene concept index of ``space``: uint64 (n_scenes, ceil(n_concepts/64)), an
    array in memory, or for a large space a :class:`~bayes_concepts.engine.rows.RowFile` (rows
    read on demand through its mapping, or with pread where a mapped-page budget is set that it
    does not fit: :meth:`~bayes_concepts.engine.rows.RowFile.through_mapping`)."""
    if not _on_disk(space):
        return transpose_bits(np.asarray(space.signatures), space.n_scenes)
    return RowFile(_load(space, "scene_concepts.npy"))


def signature_block_counts(space) -> np.ndarray:
    """:func:`bayes_concepts.bits.block_counts` of ``space.signatures`` (blocks of
    :data:`COUNT_BLOCK` words): int32 (n_concepts, ceil(n_words/64) + 1)."""
    if not _on_disk(space):
        return block_counts(np.ascontiguousarray(space.signatures), COUNT_BLOCK)
    return np.load(_load(space, "block_counts.npy"), allow_pickle=False)


def _load(space, name: str) -> Path:
    """The path of index file ``name`` of ``space``, built first if missing or stale."""
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
    return d / name


def _current(d: Path, key: str) -> bool:
    try:
        meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (isinstance(meta, dict) and meta.get("key") == key and meta.get("version") == INDEX_VERSION
            and all(_whole(d / f) for f in ("scene_concepts.npy", "block_counts.npy")))


def _whole(path: Path) -> bool:
    """``path`` is a ``.npy`` file holding the bytes its header describes (an index file cut
    short, by a full disk or a copy, is rebuilt rather than read past its end)."""
    try:
        npy_layout(path)
    except (OSError, ValueError):
        return False
    return True


def _npy_writer(path: Path, shape, dtype):
    f = open(path, "wb")
    np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                                             "fortran_order": False, "shape": tuple(int(s) for s in shape)})
    return f


@numba.njit(parallel=True, cache=True)
def _accumulate_counts(block, w0, running, cum):
    """Block counts from a column block (words w0..): cum[i, b] = set bits of row i before word
    64·b, for the block starts b inside it; running: set bits so far per row (updated)."""
    for i in numba.prange(block.shape[0]):
        r = running[i]
        for w in range(block.shape[1]):
            g = w0 + w
            if g % 64 == 0:
                cum[i, g // 64] = r
            r += popcount64(block[i, w])
        running[i] = r


class IndexWriter:
    """Writes the indexes of a space into directory ``d`` from its column blocks of signatures,
    given in order (a block of words w0.. holding ``n_here`` scenes): the per-scene rows are
    appended as they come, the block counts accumulate; :meth:`finish` makes the files appear
    (atomically) with their key."""

    def __init__(self, d: Path, n_concepts: int, n_scenes: int, n_words: int):
        self.d = Path(d)
        self.d.mkdir(parents=True, exist_ok=True)
        self.n, self.n_scenes = int(n_concepts), int(n_scenes)
        self.tag = f".tmp-{os.getpid()}-{id(self)}"
        self.rows = _npy_writer(self.d / ("scene_concepts.npy" + self.tag), (self.n_scenes, (self.n + 63) // 64),
                                np.uint64)
        self.cum = np.zeros((self.n, -(-int(n_words) // COUNT_BLOCK) + 1), np.int32)
        self.running = np.zeros(self.n, np.int64)
        self.next_word = 0

    def add(self, w0: int, block: np.ndarray, n_here: int):
        if w0 != self.next_word:
            raise ValueError(f"index blocks must come in order: expected word {self.next_word}, got {w0}")
        block = np.ascontiguousarray(block, np.uint64)
        self.rows.write(transpose_bits(block, int(n_here)).data)
        _accumulate_counts(block, int(w0), self.running, self.cum)
        self.next_word = w0 + block.shape[1]

    def finish(self, key: str):
        self.cum[:, -1] = self.running
        self.rows.flush()
        os.fsync(self.rows.fileno())
        self.rows.close()
        with _npy_writer(self.d / ("block_counts.npy" + self.tag), self.cum.shape, np.int32) as f:
            f.write(np.ascontiguousarray(self.cum).data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(self.d / ("scene_concepts.npy" + self.tag), self.d / "scene_concepts.npy")
        os.replace(self.d / ("block_counts.npy" + self.tag), self.d / "block_counts.npy")
        _write_meta(self.d, key, self.n, self.n_scenes)

    def abort(self):
        if not self.rows.closed:
            self.rows.close()
        for f in self.d.glob("*" + self.tag):
            f.unlink(missing_ok=True)


def _write_meta(d: Path, key: str, n_concepts: int, n_scenes: int):
    tmp = d / f"meta.json.tmp-{os.getpid()}"
    tmp.write_text(json.dumps({"key": key, "version": INDEX_VERSION, "n_concepts": int(n_concepts),
                               "n_scenes": int(n_scenes)}))
    os.replace(tmp, d / "meta.json")


def build_index(space, d: Path, key: str):
    """Write ``scene_concepts.npy`` and ``block_counts.npy`` of ``space`` into ``d``, reading the
    signatures one column block (a multiple of 64 words) at a time; files appear atomically."""
    sig = space.signatures
    n, n_words = sig.shape
    n_scenes = int(space.n_scenes)
    words = max(COUNT_BLOCK, (BLOCK_BYTES // max(1, 8 * n)) // COUNT_BLOCK * COUNT_BLOCK)
    writer = IndexWriter(d, n, n_scenes, n_words)
    try:
        for w0 in range(0, n_words, words):
            w1 = min(w0 + words, n_words)
            block = np.array(sig[:, w0:w1], np.uint64)
            release_pages(sig)
            writer.add(w0, block, min(64 * w1, n_scenes) - 64 * w0)
            del block
        writer.finish(key)
    except BaseException:
        writer.abort()
        raise


def adopt_build_index(space, path: Path):
    """After ``space`` (built with spilled signatures) was saved to ``path``: give the saved space
    the index the build wrote beside the spilled file (hard links, keyed by the saved manifest),
    so that it is not built again from the signatures."""
    f = mapped_file(space.signatures)
    if f is None:
        return
    src = f.parent / INDEX_DIR
    try:
        if not _current(src, file_key(f)):
            return
        dst = Path(path) / INDEX_DIR
        dst.mkdir(exist_ok=True)
        for name in ("scene_concepts.npy", "block_counts.npy"):
            (dst / name).unlink(missing_ok=True)
            os.link(src / name, dst / name)
        _write_meta(dst, f"manifest:{manifest_sha256(path)}", space.n_concepts, space.n_scenes)
    except OSError:
        return  # built again on first use


@derived_folders.register(INDEX_DIR)
def own_index_files(space_dir) -> set:
    """Every file under ``<space_dir>/index``: the toolkit writes that folder alone."""
    folder = Path(space_dir) / INDEX_DIR
    return {str(f.relative_to(space_dir)) for f in folder.rglob("*")} if folder.is_dir() else set()


def cached_arrays(space, name: str, build, version: int = 1) -> dict:
    """Arrays derived from a saved ``space`` that are slow to compute and small to keep (e.g.
    every concept's grammar derivations): ``build()`` -> dict of name -> numpy array (no
    objects), kept in the space's index folder as ``<name>.npz`` with the space's key and
    ``version``, and read back (without pickle) while they are current.  An unsaved space, or
    one whose index folder cannot be written, computes them every time."""
    d = index_directory(space) if space.path is not None else None
    if d is None:
        return build()
    key = f"{_key(space)}:v{int(version)}"
    path = d / f"{name}.npz"
    try:
        with np.load(path, allow_pickle=False) as f:
            if str(f["__key__"]) == key:
                return {k: f[k] for k in f.files if k != "__key__"}
    except (OSError, KeyError, ValueError, EOFError):
        pass
    arrays = build()
    tmp = d / f".{name}.{os.getpid()}.tmp.npz"
    try:
        np.savez(tmp, __key__=np.array(key), **arrays)
        os.replace(tmp, path)  # whole or not at all: a reader never sees half a file
    except OSError:
        tmp.unlink(missing_ok=True)
    return arrays
