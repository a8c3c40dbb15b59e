"""A saved space on disk: a directory of plain files, written atomically and checksummed.

Every kind of space is stored the same way; the kinds differ only in their concept table's
columns, a few files of their own and a section of the manifest:

=====================  ==========================================================
``manifest.json``      format version, kind of space, build parameters, seed, counts,
                       survivors per stage, and the sha256 and size of every other file
``concepts.jsonl``     one concept per line, in id order: ``id``, the kind's description
                       (``program`` or ``description``, ...), ``length``, a log-probability,
                       ``count``, ``synonym_class``
``signatures.npy``     uint64 (n_concepts, ceil(n_scenes/64)), memory-mapped on load
``scenes.npy``         int8 or int16 (n_scenes, max_objects, n_attributes) scene codes
``test_scene_ids.npy`` int64 (T,) test-bank scenes (indices into the scene bank)
``test_drawn_for.npy`` int32 (T,) the concept each test scene was drawn for
``test_signatures.npy`` uint64 (n_concepts, ceil(T/64)) labels on the test bank
(the kind's files)     ``grammar.pcfg`` for a program space; ``items.json``,
                       ``vocabulary.json`` and ``splits/*.toml`` for a space of items
(optional arrays)      only in spaces that have them (:data:`OPTIONAL_ARRAYS`): a
                       program space whose scenes carry relations adds
                       ``scene_relations.npy`` and, when its scenes have positions,
                       ``scene_positions.npy``; a space with concepts defined on
                       fewer than every scene (question domains) adds
                       ``domain_ids.npy``, ``domains.npy`` and ``test_domains.npy``
=====================  ==========================================================

A space without optional arrays lists none in its manifest, so its files and manifest
are exactly what they were before optional arrays existed.

Folders derived from those files (the per-scene concept index ``index/``, rendered
pictures and sounds ``rendered/``) are not listed in ``manifest.json``, so they leave the
space's identity unchanged; each is declared in :data:`derived_folders`.

No pickle: ``.npy`` files are read with ``allow_pickle=False``.  A save is written to
``<dir>.partial`` and renamed into place only when complete, so an interrupted save never
leaves a directory that loads (:func:`write_space_directory`, :func:`read_space_directory`).

This module knows files, not space classes: the kinds of space and :func:`load_space`
live in :mod:`bayes_concepts.spaces`.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np

from ..errors import BayesConceptsError
from ..output_files import fsync_dir as _fsync_dir, nearest_existing_folder
from ..registry import Registry
from ..scale import Interrupted, held_interrupts, release_pages
from .. import text_files

#: Version of the on-disk layout; a space of another version must be rebuilt.
FORMAT_VERSION = 2
#: Folder of a saved space for indexes derived from its files (the per-scene concept index of
#: large spaces, :mod:`.index`): not listed in the manifest, rebuilt when missing or stale,
#: and deleted with the space.
INDEX_DIR = "index"

#: The arrays every kind of space saves: file -> (allowed dtypes, the first being what others
#: are cast to; number of dimensions).  ``signatures.npy`` is memory-mapped on load.
SPACE_ARRAYS = {
    "signatures.npy": ((np.uint64,), 2),
    "scenes.npy": ((np.int8, np.int16), 3),
    "test_scene_ids.npy": ((np.int64,), 1),
    "test_drawn_for.npy": ((np.int32,), 1),
    "test_signatures.npy": ((np.uint64,), 2),
}
MAPPED_ARRAYS = ("signatures.npy",)
#: Arrays a kind of space may add (same form as :data:`SPACE_ARRAYS`), written and listed in
#: the manifest only by spaces that have them; each has one row per scene of the bank.  A kind
#: names those it reads (``read_space_directory(optional_arrays=...)``); any other is an
#: unexpected file.
#:
#: * ``scene_positions.npy``: float32 (n_scenes, max_objects, 3), the objects' centres
#:   (world x, y, z in CLEVR's units), NaN in empty slots;
#: * ``scene_relations.npy``: uint8 (n_scenes, ceil(R * S * S / 8)), the bool relation array
#:   ``rel[i, r, a, b]`` (object a is relation r of object b, S = max_objects) of each scene
#:   flattened in (r, a, b) order and packed with ``np.packbits(..., bitorder="little")``.
OPTIONAL_ARRAYS = {
    "scene_positions.npy": ((np.float32,), 3),
    "scene_relations.npy": ((np.uint8,), 2),
    # question domains: the ids (ascending) of the concepts defined on fewer than every scene,
    # their domains packed like signatures, and those on the test-bank scenes
    "domain_ids.npy": ((np.int64,), 1),
    "domains.npy": ((np.uint64,), 2),
    "test_domains.npy": ((np.uint64,), 2),
}

#: The optional arrays with one row per scene of the bank (the others, the question domains',
#: have one row per concept with a domain; the space's kind checks them).
PER_SCENE_ARRAYS = ("scene_positions.npy", "scene_relations.npy")

#: Folders of a saved space that the toolkit derives from its files (not in the manifest):
#: folder name -> ``own_files(space_dir)``, the paths (relative to the space directory, as
#: strings) of the files the toolkit wrote there.  A save may replace a space whose folders
#: hold only those.  Declared by the modules that write them, imported on first use.
derived_folders = Registry("derived folder of a saved space",
                           builtins=("bayes_concepts.engine.index", "bayes_concepts.engine.rendered"))

#: Resolved paths of ``.npy`` files a build spilled its signatures to (written once, never
#: changed afterwards): a save may hard-link them instead of copying them (:func:`_save_npy`).
SPILLED_FILES: set = set()


class SpaceError(BayesConceptsError):
    """A directory that is not a valid saved hypothesis space; names the file."""


def version_advice(found, reads: int, what: str) -> str:
    """What to do about a ``what`` of format version ``found`` when this toolkit reads
    ``reads``: a newer one needs a newer toolkit (rebuilding would not help), an older or
    unknown one is rebuilt."""
    if isinstance(found, int) and not isinstance(found, bool) and found > reads:
        return (f"it was written by a newer bayes-concepts: upgrade the toolkit "
                f"(pip install --upgrade bayes-concepts) to read this {what}")
    return f"rebuild the {what} with this toolkit"


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _fsync_write(path: Path, data: bytes):
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


#: ``_save_npy`` writes arrays in blocks of rows of about this many bytes.
SAVE_BLOCK_BYTES = 64 << 20


def _save_npy(path: Path, array: np.ndarray):
    """Write ``array`` as ``.npy`` (the bytes ``np.save`` writes) in blocks of rows, so that a
    memory-mapped array larger than memory is copied without being read in whole."""
    array = np.asanyarray(array)
    if _link_spilled(path, array):
        return
    with open(path, "wb") as f:
        if array.ndim == 0 or array.dtype.hasobject:
            np.save(f, np.ascontiguousarray(array), allow_pickle=False)
        else:
            np.lib.format.write_array_header_1_0(f, np.lib.format.header_data_from_array_1_0(
                np.ascontiguousarray(array[:0])) | {"shape": array.shape})
            rows = max(1, SAVE_BLOCK_BYTES // max(1, array[:1].nbytes))
            for lo in range(0, len(array), rows):
                f.write(np.ascontiguousarray(array[lo: lo + rows]).data)
                release_pages(array)
        f.flush()
        os.fsync(f.fileno())


def mapped_file(array) -> Path | None:
    """The ``.npy`` file a memory-mapped ``array`` maps whole (same shape and dtype as the
    mapping), or None for an array in memory or a view of part of a mapping."""
    base = array
    while base is not None and not isinstance(base, np.memmap):
        base = getattr(base, "base", None)
    name = getattr(base, "filename", None)
    if name is None or base.shape != np.shape(array) or base.dtype != getattr(array, "dtype", None):
        return None
    return Path(name)


def _link_spilled(path: Path, array: np.ndarray) -> bool:
    """Hard-link ``path`` to the file ``array`` is memory-mapped from when that is a whole
    ``.npy`` the build spilled (:data:`SPILLED_FILES`: written once, never changed): a large
    space is saved without a second copy.  False when that is not the case or the file
    system cannot link (then the caller writes the array)."""
    base = array
    while base is not None and not isinstance(base, np.memmap):
        base = getattr(base, "base", None)
    name = getattr(base, "filename", None)
    if (not name or str(Path(name).resolve()) not in SPILLED_FILES
            or array.shape != base.shape or array.dtype != base.dtype or not array.flags.c_contiguous
            or array.__array_interface__["data"][0] != base.__array_interface__["data"][0]):
        return False
    try:
        os.link(name, path)
    except OSError:
        return False
    return True


#: A file the toolkit writes first into every directory it is filling or about to delete
#: (``<dir>.partial`` while a space is written, the old space while it is replaced) and
#: removes from the finished space last.  A directory holding it never loads, and a later
#: save to the same path may delete it: it is the toolkit's own unfinished work.
UNFINISHED = ".bayes_concepts_unfinished"
_UNFINISHED_TEXT = b"bayes-concepts is writing or replacing this directory; if no save is running, it was interrupted\n"


def _owner_line() -> bytes:
    """The marker's second line: which process writes the directory (``pid N host H``)."""
    import socket
    return f"pid {os.getpid()} host {socket.gethostname()}\n".encode()


def _marker_owner(d: Path):
    """``(pid, host)`` of the process that marked directory ``d`` unfinished, or None (no
    marker, or one written before markers named their writer)."""
    try:
        words = (d / UNFINISHED).read_text(encoding="utf-8", errors="replace").split()
        i = words.index("pid")
        return int(words[i + 1]), words[words.index("host") + 1]
    except (OSError, ValueError, IndexError):
        return None


def _busy_owner(d: Path):
    """The pid of another live process of this machine that is writing (or replacing)
    directory ``d`` right now, or None."""
    import socket
    owner = _marker_owner(d) if _is_unfinished(d) else None
    if owner is None or owner[1] != socket.gethostname() or owner[0] == os.getpid():
        return None
    try:
        os.kill(owner[0], 0)
    except ProcessLookupError:
        return None  # the writer is gone: its leftovers are an interrupted save's
    except OSError:
        pass  # alive, someone else's
    try:  # a pid reused by a process that is no Python (the writer was killed long ago)
        cmdline = Path(f"/proc/{owner[0]}/cmdline").read_bytes().lower()
        if b"python" not in cmdline and b"bayes" not in cmdline:
            return None
    except OSError:
        pass
    return owner[0]


def _ours(d: Path) -> bool:
    """Whether directory ``d`` holds this process's own unfinished-marker."""
    import socket
    return _is_unfinished(d) and _marker_owner(d) == (os.getpid(), socket.gethostname())


class ConcurrentSaveError(SpaceError):
    """Another process is saving a space to the same directory at the same time."""


def _concurrent(path: Path, pid=None) -> ConcurrentSaveError:
    """The loser's one line when two saves to ``path`` run at once: ``pid``, the other
    process, when it was seen before this save wrote anything; None when it took over this
    save's ``.partial`` meanwhile."""
    if pid:
        return ConcurrentSaveError(f"another bayes-concepts process (pid {pid}) is saving a space to {path} right "
                                   "now: nothing was written; let it finish, then run this again (with --force to "
                                   "replace its space)")
    return ConcurrentSaveError(f"another bayes-concepts process started saving a space to {path} at the same time "
                               f"and took over {path.name}.partial: nothing of this save was kept; run one save to "
                               f"{path} at a time")


def _sidecars(path: Path) -> tuple:
    """``(partial, old)``: where a space for ``path`` is written first, and where the space it
    replaces is moved before it is deleted."""
    return path.with_name(path.name + ".partial"), path.with_name(path.name + ".old")


def _is_unfinished(d: Path) -> bool:
    return d.is_dir() and not d.is_symlink() and (d / UNFINISHED).is_file()


def _is_empty_dir(d: Path) -> bool:
    return d.is_dir() and not d.is_symlink() and not any(d.iterdir())


def _foreign_files(d: Path) -> list:
    """Files and folders under directory ``d`` that are not part of the saved space there:
    everything when its ``manifest.json`` is not a readable space manifest."""
    found = sorted(str(f.relative_to(d)) for f in d.rglob("*") if not f.is_dir() or f.is_symlink())
    try:
        manifest = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
        ok = (isinstance(manifest, dict) and manifest.get("format") == "bayes_concepts.hypothesis_space"
              and isinstance(manifest.get("files"), dict))
    except (OSError, ValueError, RecursionError):
        ok = False
    if not ok:
        return found or sorted(str(f.relative_to(d)) for f in d.rglob("*"))
    known = {*manifest["files"], "manifest.json", UNFINISHED}
    for _, own_files in derived_folders.items():
        known |= own_files(d)
    return [f for f in found if f not in known]


def check_save_target(path, overwrite: bool = False) -> Path:
    """Check, before any work, that a space may be saved to directory ``path``; deletes nothing.

    Allowed: a path that does not exist (its parent is created), an empty directory, a
    directory this toolkit left unfinished (it holds the :data:`UNFINISHED` marker), and, with
    ``overwrite``, a saved space holding only its own files.  Anything else -- a file, a
    directory with other content, a space without ``overwrite``, an unwritable parent, a
    ``<path>.partial`` or ``<path>.old`` the toolkit did not write -- raises
    :class:`SpaceError` (:class:`FileExistsError` for an existing space without
    ``overwrite``) naming it.  Returns ``path`` as a Path."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise SpaceError(f"{path} exists and is not a directory: refusing to replace it with a hypothesis space")
    for d in (path, *_sidecars(path)):
        busy = _busy_owner(d)
        if busy:
            raise _concurrent(path, busy)
    if path.is_dir() and not _is_unfinished(path) and any(path.iterdir()):
        foreign = _foreign_files(path)
        if foreign:
            listed = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            kind = ("is not a hypothesis space" if not (path / "manifest.json").is_file()
                    else "holds files that are not part of its hypothesis space")
            raise SpaceError(f"{path} {kind} ({listed}): refusing to delete what bayes-concepts did not write; "
                             "choose another directory, or move those files away")
        if not overwrite:
            raise FileExistsError(f"{path} already exists (pass overwrite=True / --force to replace it)")
    for side in _sidecars(path):
        if (side.exists() or side.is_symlink()) and not _is_unfinished(side) and not _is_empty_dir(side):
            raise SpaceError(f"{side} exists and was not left by an interrupted bayes-concepts save (no {UNFINISHED} "
                             f"marker): refusing to delete it; move it away to save a space to {path}")
    parent, problem = nearest_existing_folder(path.parent)
    if problem == "not a directory":
        raise SpaceError(f"{parent} is not a directory: cannot create {path}")
    if problem:
        raise SpaceError(f"{parent}: permission denied (cannot create {path.name if parent == path.parent else path})")
    return path


def _remove_unfinished(d: Path):
    """Delete directory ``d``, which holds the :data:`UNFINISHED` marker, removing the marker
    last: a deletion cut short leaves a directory that is still recognisably ours."""
    for child in d.iterdir():
        if child.name == UNFINISHED:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    (d / UNFINISHED).unlink()
    d.rmdir()


def start_directory(path, overwrite: bool) -> tuple:
    """``(path, partial)``: the directory a space will be written to (checked with
    :func:`check_save_target`) and the ``.partial`` directory it is written into first
    (created holding only the :data:`UNFINISHED` marker).  Leftovers of an interrupted save
    to ``path`` (they hold the marker) are deleted; nothing else is."""
    path = check_save_target(path, overwrite)
    partial, old = _sidecars(path)
    for leftover in (partial, old):
        if _is_unfinished(leftover):
            _remove_unfinished(leftover)
        elif _is_empty_dir(leftover):  # a save killed between creating it and marking it
            leftover.rmdir()
    try:
        partial.mkdir(parents=True)
    except FileExistsError:  # another save made it between the check and here
        raise _concurrent(path) from None
    _fsync_write(partial / UNFINISHED, _UNFINISHED_TEXT + _owner_line())
    return path, partial


def abandon_directory(partial: Path, path: Path, exc: BaseException):
    """After a save to ``path`` written into ``partial`` failed with ``exc`` before its commit:
    remove ``partial`` when it is still this process's, and raise what to say -- an
    :class:`Interrupted` for Ctrl-C, a :class:`ConcurrentSaveError` when another process took
    ``partial`` over, ``exc`` otherwise -- naming what is left and how it is cleaned up."""
    if not _ours(partial):
        if isinstance(exc, KeyboardInterrupt):
            raise Interrupted(f"while saving {path}: nothing was written to {path}") from None
        raise _concurrent(path) from None
    try:
        _remove_unfinished(partial)
        left = None
    except OSError as cleanup:
        left = f"{partial} is left ({cleanup.strerror or cleanup}): delete it, or the next save to {path} deletes it"
    if isinstance(exc, KeyboardInterrupt):
        raise Interrupted(f"while saving {path}: " + (left or f"the unfinished {partial.name} was removed and "
                                                              f"nothing was written to {path}")) from None
    raise exc


def file_entries(partial: Path, names) -> dict:
    """The manifest's ``files`` table: sha256 and size of each of ``names`` in ``partial``."""
    return {name: {"sha256": _sha256_file(partial / name), "bytes": (partial / name).stat().st_size}
            for name in names}


def commit_directory(partial: Path, path: Path, manifest: dict):
    """Write ``manifest.json`` (with its ``self_sha256``) into ``partial`` and rename ``partial``
    to ``path``, replacing an existing directory only once the new one is complete."""
    manifest["self_sha256"] = _manifest_digest(manifest)
    _fsync_write(partial / "manifest.json", _manifest_bytes(manifest))
    _fsync_dir(partial)
    with held_interrupts():  # Ctrl-C here waits for the space to be in place
        _commit(partial, path)


def _commit(partial: Path, path: Path):
    _, old = _sidecars(path)
    if path.exists():
        # mark the old directory first: from here on it is unfinished work of ours, which
        # never loads and which the next save to this path deletes if this one is killed
        if not _is_unfinished(path):
            _fsync_write(path / UNFINISHED, _UNFINISHED_TEXT + _owner_line())
        path.rename(old)
    partial.rename(path)
    _fsync_dir(path.parent)
    (path / UNFINISHED).unlink()  # the commit point: from now on the new space loads
    _fsync_dir(path)
    if old.exists():
        _remove_unfinished(old)


def _manifest_bytes(manifest: dict) -> bytes:
    """``manifest.json`` as the toolkit writes it: sorted keys, two-space indents, a final newline."""
    return (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()


def _manifest_digest(manifest: dict) -> str:
    """sha256 of the manifest's canonical JSON without its own ``self_sha256`` field."""
    body = {k: v for k, v in manifest.items() if k != "self_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def read_manifest(path, kind: str | None = "program") -> dict:
    """The checked manifest of the space directory ``path``.  ``kind``: the kind of space
    expected (``"program"``: a HypothesisSpace, ``"extension"``, ...; None: any kind, whose
    own files are then checked by its loader)."""
    path = Path(path)
    mf = path / "manifest.json"
    if not path.is_dir():
        raise SpaceError(f"{path}: no such hypothesis-space directory")
    if not mf.exists():
        partial = " (an unfinished build?)" if path.name.endswith(".partial") or _is_unfinished(path) else ""
        raise SpaceError(f"{mf}: missing; {path} is not a saved hypothesis space{partial}")
    if _is_unfinished(path):
        raise SpaceError(f"{mf}: part of an unfinished save (bayes-concepts was interrupted while writing or "
                         f"replacing {path}; its {UNFINISHED} marker is still there): build the space again")
    try:
        written = mf.read_bytes()
        manifest = json.loads(written.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise SpaceError(f"{mf}: not valid JSON ({str(exc)[:200]})") from None
    except OSError as exc:
        raise SpaceError(f"{mf}: cannot be read ({exc.strerror or exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != "bayes_concepts.hypothesis_space":
        raise SpaceError(f"{mf}: not a hypothesis-space manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise SpaceError(f"{mf}: format version {manifest.get('format_version')!r}, this toolkit reads version "
                         f"{FORMAT_VERSION}; {version_advice(manifest.get('format_version'), FORMAT_VERSION, 'space')}")
    if manifest.get("self_sha256") != _manifest_digest(manifest):
        raise SpaceError(f"{mf}: checksum mismatch (its content does not match its self_sha256); "
                         "the manifest is damaged")
    if written != _manifest_bytes(manifest):
        # the space's identity is the sha256 of these bytes: the same content laid out otherwise
        # would be another identity for the same space
        raise SpaceError(f"{mf}: not laid out as bayes-concepts writes it (spaces or line breaks changed); "
                         "the manifest is damaged")
    found = space_kind(manifest)
    if kind is not None and found != kind:
        raise SpaceError(f"{mf}: a space of kind {found!r}, not a {kind!r} space; read it with "
                         "bayes_concepts.load_space (any kind)")
    files = manifest.get("files")
    if not isinstance(files, dict):
        raise SpaceError(f"{mf}: the file list is damaged (no 'files' table)")
    for name, info in files.items():
        rel = Path(name)
        if (rel.is_absolute() or ".." in rel.parts or not rel.parts or not isinstance(info, dict)
                or not isinstance(info.get("sha256"), str) or type(info.get("bytes")) is not int):
            raise SpaceError(f"{mf}: the file list is damaged (entry {name!r})")
    counts = manifest.get("counts")
    if (not isinstance(counts, dict) or not isinstance(manifest.get("params"), dict)
            or not isinstance(manifest.get("stages"), dict)
            or any(type(counts.get(k)) is not int or counts[k] < 0
                   for k in ("concepts", "scenes", "test_bank", "synonym_classes"))):
        raise SpaceError(f"{mf}: counts, params or stages are damaged")
    return manifest


def manifest_sha256(path) -> str:
    """The identity of a saved space: the sha256 (hex) of its ``manifest.json`` as written.

    This is what results and episodes files record (``space_manifest_sha256``, ``space``)
    and what :meth:`HypothesisSpace.manifest_sha256` returns.  (The manifest's own
    ``self_sha256`` field is only an integrity check of the manifest's other fields.)"""
    mf = Path(path) / "manifest.json"
    try:
        return hashlib.sha256(mf.read_bytes()).hexdigest()
    except OSError as exc:
        raise SpaceError(f"{mf}: cannot be read ({exc.strerror or exc})") from None


def space_kind(manifest: dict) -> str:
    """The kind of space a manifest describes: its ``kind`` field, ``"program"`` when absent."""
    return manifest.get("kind", "program")


def check_files(path: Path, manifest: dict, verify: bool = True):
    """Every file the manifest lists exists with the listed size (and sha256 if ``verify``)."""
    for name, info in manifest["files"].items():
        f = path / name
        if not f.is_file():
            raise SpaceError(f"{f}: missing (listed in manifest.json)")
        size = f.stat().st_size
        if size != info.get("bytes"):
            raise SpaceError(f"{f}: {size:,} bytes, manifest.json says {info.get('bytes'):,} (truncated or changed)")
        if verify and _sha256_file(f) != info.get("sha256"):
            raise SpaceError(f"{f}: checksum mismatch (sha256 differs from manifest.json); the file is damaged")


def npy_layout(file) -> tuple:
    """``(shape, dtype, offset of the data, fortran_order)`` of a ``.npy`` file, read from its header alone,
    after checking that the file holds exactly the bytes the header describes (a truncated or
    padded file would be mapped past its end, or read short).  Raises ValueError saying what
    is wrong (not naming the file: the caller does)."""
    fmt = np.lib.format
    file = Path(file)
    with open(file, "rb") as f:
        version = fmt.read_magic(f)
        if version not in ((1, 0), (2, 0)):
            raise ValueError(f"unsupported .npy format version {version}")
        read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, fortran_order, dtype = read_header(f)
        offset = f.tell()
    if dtype.hasobject:
        raise ValueError("object arrays are not read (no pickle)")
    expected = offset + int(np.prod(shape, dtype=object)) * dtype.itemsize
    size = file.stat().st_size
    if expected != size:
        raise ValueError(f"the header describes {expected:,} bytes, the file holds {size:,}")
    return shape, dtype, offset, fortran_order


def read_array(file: Path, dtypes, ndim: int, mmap: bool = False) -> np.ndarray:
    """A ``.npy`` file (no pickle) of one of ``dtypes`` and ``ndim`` dimensions, memory-mapped
    if ``mmap``; anything else is a :class:`SpaceError` naming the file.  The header is
    checked against the file's size before any data is read, so a damaged header never
    makes numpy allocate what the file does not hold."""
    try:
        npy_layout(file)
        a = np.load(file, mmap_mode="r" if mmap else None, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - numpy's header parser raises many kinds (TokenError, ...)
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise SpaceError(f"{file}: cannot be read as .npy ({reason})") from None
    if a.dtype not in [np.dtype(d) for d in dtypes] or a.ndim != ndim:
        names = " or ".join(np.dtype(d).name for d in dtypes)
        raise SpaceError(f"{file}: expected a {ndim}-d {names} array, got {a.ndim}-d {a.dtype}")
    return a


def _read_text(file: Path) -> str:
    return text_files.read_text(file, SpaceError)


def _check_field(row: dict, key: str, types, lo=None, hi=None):
    """``row[key]`` is of ``types`` (never a bool) and, for numbers, within [lo, hi]."""
    v = row[key]
    if isinstance(v, bool) or not isinstance(v, types):
        raise ValueError(f"{key}: expected {getattr(types, '__name__', 'a number')}, got {v!r}"[:200])
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ValueError(f"{key}: {v!r} outside [{lo}, {hi if hi is not None else 'inf'}]")


def write_space_directory(path, overwrite: bool, *, concepts: list, texts: dict, arrays: dict,
                          manifest: dict) -> Path:
    """Write a space to directory ``path`` atomically (see :func:`start_directory`,
    :func:`commit_directory`); returns the path.

    concepts: one dict per concept, in id order (the lines of ``concepts.jsonl``); texts:
    file name -> bytes (the kind's own files, ``splits/NAME.toml`` included); arrays: file
    name -> array for every file of :data:`SPACE_ARRAYS` (cast to the first allowed dtype
    when of another) and for those of :data:`OPTIONAL_ARRAYS` the space has (an absent or
    None one is neither written nor listed); manifest: every field but ``files`` and
    ``self_sha256``, which are added here."""
    unknown = [name for name in arrays if name not in SPACE_ARRAYS and name not in OPTIONAL_ARRAYS]
    if unknown:
        raise ValueError(f"write_space_directory: {unknown[0]!r} is not an array a space saves")
    optional = [name for name in OPTIONAL_ARRAYS if arrays.get(name) is not None]
    path, partial = start_directory(path, overwrite)
    try:
        lines = [json.dumps(row) for row in concepts]
        _fsync_write(partial / "concepts.jsonl", ("\n".join(lines) + "\n" if lines else "").encode())
        for name, data in texts.items():
            (partial / name).parent.mkdir(parents=True, exist_ok=True)
            _fsync_write(partial / name, data)
        for name in (*SPACE_ARRAYS, *optional):
            dtypes = {**SPACE_ARRAYS, **OPTIONAL_ARRAYS}[name][0]
            a = np.asanyarray(arrays[name])
            _save_npy(partial / name, a if a.dtype in [np.dtype(d) for d in dtypes] else a.astype(dtypes[0]))
        names = ["concepts.jsonl", *texts, *SPACE_ARRAYS, *optional]
        entries = file_entries(partial, names)
        if not _ours(partial):  # another save to the same path deleted or replaced ours
            raise _concurrent(path)
    except (KeyboardInterrupt, OSError) as exc:  # Ctrl-C, a full disk, a partial taken over
        abandon_directory(partial, path, exc)
    commit_directory(partial, path, {**manifest, "files": entries})
    return path


def read_space_directory(path, kind: str, *, files: tuple, fields: tuple, others: str | None = None,
                         optional_arrays: tuple = (), verify: bool = True) -> tuple:
    """Read and check a saved space of ``kind``: ``(manifest, arrays, columns)``.

    files: the kind's own files, which must be listed in the manifest; others: the folder
    (``"splits/"``) of any further files the kind may list, None if it lists no others;
    fields: ``(key, types, lo, hi)`` of the ``concepts.jsonl`` columns besides ``id``
    (``lo``/``hi`` None for strings and lists); optional_arrays: the files of
    :data:`OPTIONAL_ARRAYS` the kind may list (which of them a space must have is the
    kind's to check).  ``arrays`` maps each file of :data:`SPACE_ARRAYS` to its array
    (``signatures.npy`` memory-mapped), and each optional array the manifest lists to its
    array (one row per scene, checked here); ``columns`` maps each field to its list of
    values.  Sizes are always checked against the manifest; sha256 too if ``verify``; the
    arrays' shapes against the manifest's counts and the concept table.
    Anything wrong is a :class:`SpaceError` naming the file."""
    path = Path(path)
    mf = path / "manifest.json"
    manifest = read_manifest(path, kind=kind)
    expected = ("concepts.jsonl", *files, *SPACE_ARRAYS)
    missing = [f for f in expected if f not in manifest["files"]]
    if missing:
        raise SpaceError(f"{mf}: the file list is damaged (missing {', '.join(missing)})")
    listed = tuple(f for f in optional_arrays if f in OPTIONAL_ARRAYS and f in manifest["files"])
    extra = [f for f in manifest["files"]
             if f not in expected and f not in listed and not (others and f.startswith(others))]
    if extra:
        raise SpaceError(f"{mf}: the file list is damaged (expected {', '.join(expected)}"
                         f"{f' and {others}*' if others else ''}; found {extra[0]!r})")
    check_files(path, manifest, verify)
    arrays = {name: read_array(path / name, dtypes, ndim, mmap=name in MAPPED_ARRAYS)
              for name, (dtypes, ndim) in SPACE_ARRAYS.items()}
    c = manifest["counts"]
    for name in listed:
        dtypes, ndim = OPTIONAL_ARRAYS[name]
        arrays[name] = read_array(path / name, dtypes, ndim)
        if name in PER_SCENE_ARRAYS and arrays[name].shape[0] != c["scenes"]:
            raise SpaceError(f"{path / name}: {arrays[name].shape[0]:,} rows, manifest.json counts "
                             f"{c['scenes']:,} scenes")
    columns = {key: [] for key, *_ in fields}
    cfile = path / "concepts.jsonl"
    for lineno, line in enumerate(_read_text(cfile).splitlines(), 1):
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError("not a JSON object")
            if row["id"] != lineno - 1:
                raise ValueError(f"id {row['id']!r} out of order")
            for key, types, lo, hi in fields:
                _check_field(row, key, types, lo, hi)
                columns[key].append(row[key])
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise SpaceError(f"{cfile} line {lineno}: {str(exc)[:200]}") from None
    n = len(next(iter(columns.values()))) if columns else 0
    classes = columns.get("synonym_class", [])
    codes = arrays["scenes.npy"]
    if (n != c["concepts"] or arrays["signatures.npy"].shape != (n, -(-c["scenes"] // 64))
            or arrays["test_signatures.npy"].shape != (n, -(-c["test_bank"] // 64))
            or codes.shape[0] != c["scenes"] or len(arrays["test_scene_ids.npy"]) != c["test_bank"]
            or len(arrays["test_drawn_for.npy"]) != c["test_bank"]
            or (n and int(np.max(classes)) + 1 != c["synonym_classes"])):
        raise SpaceError(f"{path}: file sizes disagree with manifest.json counts")
    ids, drawn = arrays["test_scene_ids.npy"], arrays["test_drawn_for.npy"]
    if len(ids) and (ids.min() < 0 or ids.max() >= c["scenes"] or drawn.min() < 0 or drawn.max() >= n):
        raise SpaceError(f"{path / 'test_scene_ids.npy'} or test_drawn_for.npy: ids out of range")
    return manifest, arrays, columns


def read_text(file: Path) -> str:
    """A text file of a saved space; a :class:`SpaceError` naming it if unreadable or not UTF-8."""
    return _read_text(file)
