"""Row-wise reads of a large 2-D array kept in a ``.npy`` file, with ``pread(2)``.

A memory-mapped file counts in the resident set of every process that reads it, and a
random read of one row maps more than the row: on a page fault Linux maps the cached pages
around the faulting one too ("fault-around", 64 KiB by default, which ``MADV_RANDOM`` does
not turn off).  Reading scattered 2.5 KB rows of CURI-scale per-scene concept indexes
(2.4 GB at 990,000 scenes, 13 GB at 5,000,000) through a mapping therefore grows a process
towards the size of the whole file.  :class:`RowFile` reads exactly the bytes asked for into
memory the caller owns, so a process holds only what it is working on; the file itself stays
in the page cache, shared by every process of the machine.

Kernels take a **row source** -- the tuple ``(mem, fd, offset, failures)`` made by
:func:`row_source`: an array in memory is ``(array, -1, 0, failures)``; a :class:`RowFile` is,
as :data:`READ_ROWS` says, its file mapped read-only ``(mapping, -1, 0, failures)`` (the
default) or ``(empty (0, n_cols) array, descriptor, byte offset of row 0, failures)``.

A system call per row costs more than the row: drawing CURI-scale episodes spent ~70 % of its
CPU time in the kernel, reading rows with pread (measured: 0.55 ms system CPU per episode
against 0.36 ms of work).  So kernels read a :class:`RowFile` through a read-only mapping of
it: the pages they touch count in the process's *file-backed* resident set (shared with every
process that maps the file, and dropped by :meth:`RowFile.release`, which the comp gap calls
after each chunk), never in its anonymous memory.  Where ``BAYES_CONCEPTS_MAPPED_RSS`` is set,
only the files that fit in it together are read that way, the others with one pread per row
(:meth:`RowFile.through_mapping`); ``READ_ROWS = "pread"`` reads every file with pread (the
slow twin the tests compare it with).  :func:`row_at`,
:func:`words_at` and :func:`word_at` read from either, so one compiled kernel serves small
spaces (arrays) and large ones (files).  A read that fails (an I/O error) cannot raise inside a
parallel loop: it counts in ``failures`` (int64 (1,)), and :meth:`RowFile.check` -- called by
every user after its kernel -- raises for it.
"""
from __future__ import annotations

import mmap
import os
import weakref
from pathlib import Path

import numba
import numpy as np
from numba import types

from ..bits import read_only
from ..scale import mapped_rss_budget
from .store import SpaceError, mapped_file, npy_layout

#: Files at least this large are read as a :class:`RowFile` instead of being memory-mapped
#: whole (bytes).
PREAD_MIN_BYTES = 256 << 20

#: How kernels read a :class:`RowFile` (:func:`row_source`): ``"map"``, through a read-only
#: mapping of the file (no system call per row) where :meth:`RowFile.through_mapping` says the
#: file fits the mapped-page budget, or ``"pread"``, one pread per row for every file.
READ_ROWS = "map"

#: The open row files this process reads through their mappings (:meth:`RowFile.through_mapping`),
#: whose bytes count against a set ``BAYES_CONCEPTS_MAPPED_RSS`` (:func:`mapped_bytes`).
_MAPPED = weakref.WeakSet()


def mapped_bytes() -> int:
    """Bytes of the open row files this process reads through their mappings."""
    return sum(f.nbytes for f in list(_MAPPED))

# pread(2) by symbol name (a ctypes pointer would keep the kernels out of numba's cache); the
# buffer address is passed as an integer, which is how the C ABI passes a pointer
_pread = types.ExternalFunction("pread", types.intp(types.int32, types.intp, types.uintp, types.int64))


@numba.njit(inline="always")
def _read_into(fd, buf, n_bytes, at, failures):
    """Fill the first ``n_bytes`` bytes of ``buf`` from byte ``at`` of file ``fd``; on failure
    zero the rest and count it in ``failures[0]``."""
    done = 0
    while done < n_bytes:
        got = _pread(fd, buf.ctypes.data + done, n_bytes - done, at + done)
        if got <= 0:
            failures[0] += 1
            buf[:] = 0
            return
        done += got


@numba.njit(inline="always")
def row_at(source, i, buf):
    """Row ``i`` of row source ``source``: a view of ``mem[i]``, or ``buf`` (n_cols,) filled
    from the file."""
    mem, fd, offset, failures = source
    if fd < 0:
        return mem[i]
    _read_into(fd, buf, buf.shape[0] * buf.itemsize, offset + i * buf.shape[0] * buf.itemsize, failures)
    return buf


@numba.njit(inline="always")
def words_at(source, i, start, buf):
    """Columns ``start:start + len(buf)`` of row ``i`` of ``source`` (clipped to the row): a
    view of ``mem`` or a prefix of ``buf`` filled from the file."""
    mem, fd, offset, failures = source
    n_cols = mem.shape[1]
    stop = min(n_cols, start + buf.shape[0])
    if fd < 0:
        return mem[i, start:stop]
    _read_into(fd, buf, (stop - start) * buf.itemsize, offset + (i * n_cols + start) * buf.itemsize, failures)
    return buf[:stop - start]


@numba.njit(inline="always")
def word_at(source, i, j, buf):
    """Element ``[i, j]`` of ``source`` (``buf``: scratch of at least one element)."""
    mem, fd, offset, failures = source
    if fd < 0:
        return mem[i, j]
    _read_into(fd, buf, buf.itemsize, offset + (i * mem.shape[1] + j) * buf.itemsize, failures)
    return buf[0]


@numba.njit(parallel=True, cache=True)
def _gather(fd, offset, ids, out, failures):
    n_bytes = out.shape[1] * out.itemsize
    for k in numba.prange(ids.shape[0]):
        _read_into(fd, out[k], n_bytes, offset + ids[k] * n_bytes, failures)


class RowFile:
    """A 2-D array in a ``.npy`` file, read row by row with pread (see the module docstring).

    ``rows[i]``, ``rows[ids]``, ``rows[a:b]`` and, for columns, ``rows[rows_key, j]`` or
    ``rows[rows_key, a:b]`` return arrays in memory; ``shape``, ``dtype`` and ``len`` are those
    of the array in the file.  ``np.asarray(rows)`` reads it whole."""

    def __init__(self, path):
        self.path = Path(path)
        try:  # a file shorter than its header says would be mapped past its end (SIGBUS on a read)
            shape, dtype, offset, fortran_order = npy_layout(self.path)
        except (OSError, ValueError) as exc:
            raise SpaceError(f"{self.path}: cannot be read as a row file ({' '.join(str(exc).split())[:200]})") from None
        if len(shape) != 2 or (fortran_order and min(shape) > 1):
            raise ValueError(f"{self.path}: a row file needs a C-ordered 2-D array, got shape {tuple(shape)}")
        self.shape, self.dtype, self.offset = tuple(int(n) for n in shape), dtype, int(offset)
        self.fd = os.open(self.path, os.O_RDONLY)
        self.failures = np.zeros(1, np.int64)
        self._mapping = None
        self._fits = None  # whether this file is read through its mapping (through_mapping decides it once)

    @property
    def nbytes(self) -> int:
        """Bytes of the array in the file."""
        return int(np.prod(self.shape)) * self.dtype.itemsize

    def through_mapping(self) -> bool:
        """Whether kernels read this file through its mapping (:func:`row_source`), else with
        one pread per row: :data:`READ_ROWS` is ``"map"`` and, where ``BAYES_CONCEPTS_MAPPED_RSS``
        is set (:func:`~bayes_concepts.scale.mapped_rss_budget`), the row files read through
        their mappings in this process, this one included, fit in it.  Random reads through a
        mapping keep every page they touch (and the 64 KiB the kernel maps around it) resident
        until released, so a draw of a few thousand hard episodes of a 990,000-scene space
        maps most of its two 2.5 GB row files; read with pread, nothing of them stays, for
        six to nine times the sampler's time (``benchmarks/roofline.py``'s pread twin).  Decided at the first call and kept (a file
        read one way stays read that way); unset, every file is read through its mapping."""
        if READ_ROWS != "map":
            return False
        if self._fits is None:
            budget = mapped_rss_budget(default=None)
            self._fits = budget is None or mapped_bytes() + self.nbytes <= budget
            if self._fits:
                _MAPPED.add(self)
        return self._fits

    def mapped(self) -> np.ndarray:
        """The whole array as a read-only mapping of the file (made on first use, then kept):
        a row read from it is a memory read, its pages count in the file-backed resident set
        until :meth:`release`."""
        if self._mapping is None:
            self._mapping = np.load(self.path, mmap_mode="r", allow_pickle=False)
        return np.asarray(self._mapping)

    def release(self):
        """Drop the mapped pages this process touched from its resident set (the file stays in
        the page cache; the mapping stays usable).  A no-op before :meth:`mapped`."""
        m = getattr(self._mapping, "_mmap", None)
        if m is not None and hasattr(mmap, "MADV_DONTNEED"):
            try:
                m.madvise(mmap.MADV_DONTNEED)
            except (OSError, ValueError):
                pass

    @property
    def ndim(self) -> int:
        return 2

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key) -> np.ndarray:
        if isinstance(key, tuple):
            if len(key) != 2 or not isinstance(key[1], (int, np.integer, slice)):
                raise IndexError(f"{self.path.name}: index rows, then at most one integer or slice of columns")
            return self[key[0]][..., key[1]]
        if isinstance(key, slice):
            return self._rows(np.arange(*key.indices(self.shape[0]), dtype=np.int64))
        ids = np.asarray(key)
        if ids.dtype == bool:
            ids = np.flatnonzero(ids)
        if not np.issubdtype(ids.dtype, np.integer):
            raise IndexError(f"{self.path.name}: rows are indexed by integers, got {ids.dtype}")
        flat = ids.astype(np.int64).ravel()
        flat = np.where(flat < 0, flat + self.shape[0], flat)
        if flat.size and (flat.min() < 0 or flat.max() >= self.shape[0]):
            raise IndexError(f"{self.path.name}: row index out of range for {self.shape[0]:,} rows")
        out = self._rows(flat)
        return out.reshape(ids.shape + self.shape[1:])

    def _rows(self, ids: np.ndarray) -> np.ndarray:
        out = np.empty((len(ids), self.shape[1]), self.dtype)
        if len(ids) and self.shape[1]:
            _gather(self.fd, self.offset, np.ascontiguousarray(ids), out, self.failures)
            self.check()
        return out

    def check(self):
        """Raise OSError if a read of this file failed since the last check."""
        if self.failures[0]:
            n, self.failures[0] = int(self.failures[0]), 0
            raise OSError(f"{self.path}: {n} read(s) failed (the file is damaged or was truncated)")

    def __array__(self, dtype=None, copy=None):
        whole = self._rows(np.arange(self.shape[0], dtype=np.int64))
        return whole if dtype is None else whole.astype(dtype, copy=False)

    def close(self):
        self._mapping = None
        _MAPPED.discard(self)
        if getattr(self, "fd", -1) >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self):
        self.close()

    def __reduce__(self):  # a copy in another process opens the file again
        return (RowFile, (str(self.path),))

    def __repr__(self) -> str:
        return f"RowFile({str(self.path)!r}, shape={self.shape}, dtype={self.dtype})"


def rows_for_random_reads(array):
    """``array`` as the kernels should read it at random: a :class:`RowFile` for a memory-mapped
    ``.npy`` of :data:`PREAD_MIN_BYTES` or more, else a C-contiguous array."""
    if isinstance(array, RowFile):
        return array
    f = mapped_file(array)
    if f is not None and np.ndim(array) == 2 and array.nbytes >= PREAD_MIN_BYTES:
        return RowFile(f)
    return np.ascontiguousarray(array)


def row_source(rows) -> tuple:
    """``(mem, fd, offset, failures)`` for the kernels (see the module docstring): an array in
    memory is ``(array, -1, 0, zeros)``; a :class:`RowFile` is ``(its mapping, -1, 0, its failure
    counter)`` when it is read through its mapping (:meth:`RowFile.through_mapping`), else
    ``(empty (0, n_cols), fd, offset, its failure counter)``.  ``mem`` is read-only in every
    case (:func:`~bayes_concepts.bits.read_only`), so one compiled kernel reads all three."""
    if isinstance(rows, RowFile) and rows.through_mapping():
        return read_only(rows.mapped()), -1, 0, rows.failures
    if isinstance(rows, RowFile):
        return read_only(np.empty((0, rows.shape[1]), rows.dtype)), rows.fd, rows.offset, rows.failures
    return read_only(rows), -1, 0, np.zeros(1, np.int64)


def file_backed_rss() -> int:
    """This process's file-backed resident set (bytes; ``RssFile`` of ``/proc/self/status``):
    the mapped pages it holds, 0 where the system does not say."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("RssFile:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def check_reads(*rows):
    """Raise for failed reads of any :class:`RowFile` among ``rows`` (arrays are skipped)."""
    for r in rows:
        if isinstance(r, RowFile):
            r.check()
