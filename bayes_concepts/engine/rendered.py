"""Rendered banks: a saved space's scenes rendered in a modality (pictures, sounds, ...), cached.

Rendering the scene bank of a space in one of the registered
:data:`~bayes_concepts.modalities.modalities` (``image``: pictures, ``sound``: clips, or
any one added there) is deterministic, so its result is kept next to the space and read
back, memory-mapped, the next time:

>>> images = space.rendered_bank("image")                      # doctest: +SKIP
>>> images.shape, images.dtype                                 # doctest: +SKIP
((100000, 80, 120, 3), dtype('uint8'))

Layout, inside the space directory (:data:`RENDERED_DIR`)::

    rendered/manifest.json              the banks' table (below), with its own self_sha256
    rendered/image_80x120_ss2.npy       uint8 (n_scenes, height, width, 3) RGB pictures
    rendered/sound_8000hz_<key>.npy     float32 (n_scenes, n_samples) mono clips in [-1, 1]
    rendered/<modality>_<...>.npy       a bank of another modality (its file name)
    rendered/.lock                      serialises renders of several processes

This module knows no modality: each :class:`~bayes_concepts.modalities.Modality` says
which options a bank takes, its dtype and per-scene shape, its file name, how to render
it and its renderer's fingerprint; a bank is stored and checked the same way whatever
it holds.  ``rendered/manifest.json`` records, for every bank, its modality, settings,
dtype, shape, the sha256 and size of the file, and the renderer's fingerprint; the
table as a whole records the ``manifest_sha256`` of the space it was rendered from.
The space's own ``manifest.json`` is never touched: a space's identity (what results,
episodes and model files record) is the same with and without rendered banks, and
loading a space checks its files as before.

Checks when a bank is read (each failure is a one-line :class:`SpaceError` naming the
file; nothing is deleted or replaced without ``rebuild=True``):

* the table is valid JSON whose ``self_sha256`` matches, and it was rendered from this
  space (same ``manifest_sha256``);
* the file has the listed size, a ``.npy`` header with the expected dtype and shape,
  and (``verify=True``, the default) the listed sha256;
* the renderer's source is unchanged since the bank was rendered (the modality's
  :meth:`~bayes_concepts.modalities.Modality.fingerprint`; else the bank is stale:
  pictures drawn today could differ);
* a file with a bank's name that the table does not list was not written by the
  toolkit: it is never overwritten or deleted.

A bank is written to ``<name>.bayes_concepts_partial`` in chunks (memory stays bounded),
hashed as it is written, and renamed into place before the table is updated; an
interrupted render leaves no bank that loads.  A space that is not saved, or whose
directory cannot be written, gets its bank rendered in memory (not cached; a warning
says so for the latter).  Saving another space over this one (``overwrite``) deletes
the rendered banks with it: they are the toolkit's own files (:func:`own_files`, declared
in :data:`~bayes_concepts.engine.store.derived_folders`).
"""
from __future__ import annotations

import contextlib
import hashlib
import inspect
import io
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

from ..modalities import Modality, ModalityError, modalities
from .store import SpaceError, _fsync_dir, _fsync_write, _sha256_file, derived_folders, read_array

__all__ = ["RENDERED_DIR", "rendered_bank", "render_items", "find_rendered_bank", "rendered_banks", "bank_settings", "own_files",
           "takes_positions", "cannot_express"]

#: Folder of a saved space that holds its rendered banks.
RENDERED_DIR = "rendered"
_FORMAT = "bayes_concepts.rendered_banks"
_VERSION = 1
_TABLE = "manifest.json"
_LOCK = ".lock"
_PARTIAL = ".bayes_concepts_partial"
#: scenes rendered per chunk while a bank is written
CHUNK = 2048


# ---------------------------------------------------------------- modality and settings
def _modality(name: str) -> Modality:
    try:
        kind = modalities.get(name)
    except ValueError as exc:
        raise SpaceError(f"rendered bank: {exc}") from None
    if kind.name != name:
        raise SpaceError(f"rendered bank: the modality registered as {name!r} is named {kind.name!r} (register a "
                         f"modality under its own name)")
    return kind


def _settings(modality: Modality, options: dict) -> dict:
    try:
        return modality.settings(**options)
    except ModalityError as exc:
        raise SpaceError(f"rendered bank: {exc}") from None


def bank_settings(modality: str, **options) -> dict:
    """The complete settings of a bank of ``modality`` (defaults filled in), as a JSON-able
    dict; the options are the modality's (:attr:`~bayes_concepts.modalities.Modality.defaults`):
    for ``image`` ``height``, ``width``, ``supersample`` (defaults 80, 120, 2), for ``sound``
    ``settings``, a :class:`~bayes_concepts.scenes.sound.SoundSettings` or a dict of its
    fields (default its defaults: 2 s at 8 kHz)."""
    return _settings(_modality(modality), options)


def takes_positions(modality: Modality) -> bool:
    """Whether ``modality``'s renderer places objects at given 3-D positions (its ``render``
    takes ``positions``: ``image`` does, ``sound`` does not)."""
    return "positions" in inspect.signature(modality.render).parameters


def cannot_express(space, modality: Modality) -> str | None:
    """Why ``modality`` cannot express the scenes of ``space`` (one clause), or None when it
    can: scenes of a schema with relations are placed by their objects' 3-D positions (their
    relations follow from them), which a renderer that takes no positions cannot show."""
    if not space.schema.relations or takes_positions(modality):
        return None
    return (f"the {modality.name} modality cannot express this space's relations "
            f"({', '.join(space.schema.relations)}): its scenes are placed by 3-D positions, and the {modality.name} "
            "renderer takes no positions (it places objects by x/y location bins, which these scenes do not have)")


def _check_space(space, modality: Modality):
    if not space.has_pictures:
        raise SpaceError(f"rendered bank: a {space.kind} space has no scenes to render (its items are given)")
    why = cannot_express(space, modality)
    if why:
        raise SpaceError(f"rendered bank: {why}")


def _rendered(space, modality: Modality, settings: dict, codes: np.ndarray, lo: int = 0) -> np.ndarray:
    """``modality``'s rendering of ``codes`` (the bank's scenes from ``lo`` on), checked against
    the bank's dtype and shape.  A space whose scenes have 3-D positions (relational spaces)
    gives them to a modality whose ``render`` takes ``positions``."""
    positions = space.positions(slice(lo, lo + len(codes)))
    extra = {}
    if positions is not None and takes_positions(modality):
        extra["positions"] = np.asarray(positions)
    part = modality.render(codes, space.schema, settings, **extra)
    expected = modality.shape(len(codes), settings)
    if not isinstance(part, np.ndarray) or part.dtype != modality.dtype or part.shape != expected:
        got = f"{part.dtype} {part.shape}" if isinstance(part, np.ndarray) else type(part).__name__
        raise SpaceError(f"rendered bank: the {modality.name} renderer gave {got} for {len(codes)} scenes, "
                         f"expected {modality.dtype} {expected}")
    return part


def _render_all(space, modality: Modality, settings: dict, chunk=CHUNK) -> np.ndarray:
    out = np.empty(modality.shape(space.n_scenes, settings), modality.dtype)
    for lo in range(0, space.n_scenes, chunk):
        out[lo: lo + chunk] = _rendered(space, modality, settings, np.asarray(space.scene_codes[lo: lo + chunk]), lo)
    return out


# ---------------------------------------------------------------- the table
def _digest(table: dict) -> str:
    body = {k: v for k, v in table.items() if k != "self_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _read_table(folder: Path, space_sha: str | None) -> dict:
    """The checked table of ``folder`` (an empty one when the folder has none)."""
    f = folder / _TABLE
    if not f.exists():
        return {"format": _FORMAT, "format_version": _VERSION, "space_manifest_sha256": space_sha, "banks": {}}
    hint = f"; move {folder} away to render again"
    try:
        table = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise SpaceError(f"{f}: cannot be read as the table of rendered banks ({' '.join(str(exc).split())[:150]})"
                         f"{hint}") from None
    if not isinstance(table, dict) or table.get("format") != _FORMAT or table.get("format_version") != _VERSION:
        raise SpaceError(f"{f}: not a table of rendered banks of this toolkit (format version {_VERSION}){hint}")
    if table.get("self_sha256") != _digest(table):
        raise SpaceError(f"{f}: checksum mismatch (its content does not match its self_sha256); the table is "
                         f"damaged{hint}")
    banks = table.get("banks")
    if not isinstance(banks, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("sha256"), str) and type(v.get("bytes")) is int
            and isinstance(v.get("modality"), str) and v["modality"] and isinstance(v.get("settings"), dict)
            and isinstance(v.get("shape"), list) and Path(k).name == k and k.endswith(".npy")
            for k, v in banks.items()):
        raise SpaceError(f"{f}: the list of banks is damaged{hint}")
    if space_sha is not None and table.get("space_manifest_sha256") != space_sha:
        raise SpaceError(f"{f}: rendered from another space (manifest sha256 "
                         f"{str(table.get('space_manifest_sha256'))[:12]}…, this space's is {space_sha[:12]}…)"
                         f"{hint}")
    return table


def _write_table(folder: Path, table: dict):
    table = dict(table)
    table["self_sha256"] = _digest(table)
    tmp = folder / (_TABLE + _PARTIAL)
    _fsync_write(tmp, (json.dumps(table, indent=2, sort_keys=True) + "\n").encode())
    os.replace(tmp, folder / _TABLE)
    _fsync_dir(folder)


@derived_folders.register(RENDERED_DIR)
def own_files(space_dir) -> set:
    """Paths (relative to ``space_dir``, as strings) of the files the toolkit wrote in its
    :data:`RENDERED_DIR`: the table, the banks it lists, the lock and unfinished banks (of a
    registered modality, by their file names).  Empty when the folder has no readable table
    (its files are then nobody's we know)."""
    folder = Path(space_dir) / RENDERED_DIR
    try:
        table = _read_table(folder, None)
    except SpaceError:
        return set()
    if not (folder / _TABLE).is_file():
        return set()
    names = {_TABLE, _LOCK, _TABLE + _PARTIAL, *table["banks"], *(b + _PARTIAL for b in table["banks"])}
    partials = [p.name[:-len(_PARTIAL)] for p in folder.glob("*" + _PARTIAL)]
    if partials:
        names |= {n + _PARTIAL for n in partials if any(kind.owns(n) for _, kind in modalities.items())}
    return {f"{RENDERED_DIR}/{n}" for n in names}


@contextlib.contextmanager
def _locked(folder: Path):
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock between processes
        yield
        return
    with open(folder / _LOCK, "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


# ---------------------------------------------------------------- read and write
def _load(folder: Path, name: str, entry: dict, space, modality: Modality, settings: dict,
          verify: bool) -> np.ndarray:
    f = folder / name
    hint = f"; render it again with rebuild=True (bayes-concepts render {space.path} --bank --rebuild)"
    if entry["modality"] != modality.name or entry["settings"] != settings:
        raise SpaceError(f"{folder / _TABLE}: the entry of {name} describes another bank{hint}")
    if entry.get("renderer") != modality.fingerprint():
        raise SpaceError(f"{f}: stale (rendered by another version of the {modality.name} renderer, whose output "
                         f"may differ){hint}")
    size = f.stat().st_size
    if size != entry["bytes"]:
        raise SpaceError(f"{f}: {size:,} bytes, {RENDERED_DIR}/{_TABLE} says {entry['bytes']:,} (truncated or "
                         f"changed){hint}")
    if verify and _sha256_file(f) != entry["sha256"]:
        raise SpaceError(f"{f}: checksum mismatch (sha256 differs from {RENDERED_DIR}/{_TABLE}); the file is "
                         f"damaged{hint}")
    shape = modality.shape(space.n_scenes, settings)
    arr = read_array(f, (modality.dtype,), len(shape), mmap=True)
    if arr.shape != shape or list(shape) != entry["shape"]:
        raise SpaceError(f"{f}: shape {arr.shape}, expected {shape}{hint}")
    return arr


def _write(folder: Path, name: str, space, modality: Modality, settings: dict, chunk: int, log) -> dict:
    """Render the bank into ``name + _PARTIAL`` chunk by chunk, hashing as it goes, and rename it
    into place; returns its table entry."""
    shape, dtype = modality.shape(space.n_scenes, settings), modality.dtype
    tmp = folder / (name + _PARTIAL)
    h, t0 = hashlib.sha256(), time.perf_counter()
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        head, np.lib.format.header_data_from_array_1_0(np.empty((0,) + shape[1:], dtype)) | {"shape": shape})
    with open(tmp, "wb") as f:
        f.write(head.getvalue())
        h.update(head.getvalue())
        for lo in range(0, shape[0], chunk):
            part = np.ascontiguousarray(_rendered(space, modality, settings,
                                                  np.asarray(space.scene_codes[lo: lo + chunk]), lo))
            data = part.data.cast("B")
            f.write(data)
            h.update(data)
            if log is not None:
                log(f"rendered {min(lo + chunk, shape[0]):,} / {shape[0]:,} scenes ({modality.name})")
        f.flush()
        os.fsync(f.fileno())
    seconds = time.perf_counter() - t0
    os.replace(tmp, folder / name)
    _fsync_dir(folder)
    return {"modality": modality.name, "settings": settings, "dtype": dtype.name, "shape": list(shape),
            "sha256": h.hexdigest(), "bytes": (folder / name).stat().st_size,
            "renderer": modality.fingerprint(), "render_seconds": round(seconds, 3)}


def _folder_of(space) -> Path | None:
    path = space.path
    return None if path is None else Path(path) / RENDERED_DIR


def rendered_bank(space, modality: str = "image", *, verify: bool = True, rebuild: bool = False,
                  chunk: int = CHUNK, log=None, **options) -> np.ndarray:
    """Every scene of ``space``'s bank rendered in ``modality``, cached in the space directory.

    The first call renders the bank and writes it to the space's :data:`RENDERED_DIR`
    folder; later calls (in any process) read it back memory-mapped, after the checks of
    the module docstring.  The values are exactly those of the modality's renderer
    (:meth:`~bayes_concepts.modalities.Modality.render`: for ``image``
    :func:`~bayes_concepts.scenes.render.render_scenes`, for ``sound``
    :func:`~bayes_concepts.scenes.sound.synthesize_scenes`) with the same settings.

    Parameters
    ----------
    space : HypothesisSpace
        A saved space (cached), or an unsaved one (rendered in memory, not cached); a
        space with ``has_pictures``.
    modality : str
        A name in :data:`~bayes_concepts.modalities.modalities` (``"image"``, ``"sound"``).
    **options
        The modality's options (:attr:`~bayes_concepts.modalities.Modality.defaults`;
        ``None`` takes the default).  ``image``: ``height``, ``width``, ``supersample``
        (picture size and rays per pixel per axis, default 80 × 120, 2); ``sound``:
        ``settings``, a :class:`~bayes_concepts.scenes.sound.SoundSettings` or a dict of
        its fields (default 2 s at 8 kHz).
    verify : bool
        Check the bank's sha256 before returning it (its size is always checked).
    rebuild : bool
        Render again and replace the bank even if one is cached (use after a checksum,
        staleness or table error; only files the table lists are replaced).
    chunk : int
        Scenes rendered at a time while writing (bounds memory).
    log : callable, optional
        Receives a line of progress per chunk.

    Returns
    -------
    bank : read-only memory-mapped ndarray
        The modality's dtype, shape (n_scenes,) + its per-scene shape; row ``j`` is scene
        ``j`` of the bank.  ``image``: uint8 (n_scenes, height, width, 3), RGB, row 0 at
        the top; ``sound``: float32 (n_scenes, n_samples) at ``settings.rate`` Hz.

    Raises
    ------
    SpaceError
        Unknown modality or options; a damaged, stale or foreign cache (one line naming
        the file and what to do).
    """
    kind = _modality(modality)
    settings = _settings(kind, options)
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise SpaceError(f"rendered bank: chunk must be a positive integer, got {chunk!r}")
    _check_space(space, kind)
    folder = _folder_of(space)
    if folder is None:
        return _render_all(space, kind, settings, chunk)
    try:
        folder.mkdir(exist_ok=True)
        writable = os.access(folder, os.W_OK | os.X_OK)
    except OSError:
        writable = False
    if not writable:
        found = _find(space, kind, settings, verify)
        if found is not None and not rebuild:
            return found
        warnings.warn(f"{folder}: cannot write there; the {kind.name} bank is rendered in memory, not cached",
                      stacklevel=2)
        return _render_all(space, kind, settings, chunk)
    sha = space.manifest_sha256()
    name = kind.file_name(settings)
    with _locked(folder):
        table = _read_table(folder, sha)
        entry = table["banks"].get(name)
        if entry is not None and (folder / name).is_file() and not rebuild:
            return _load(folder, name, entry, space, kind, settings, verify)
        if entry is None and ((folder / name).exists() or (folder / name).is_symlink()):
            raise SpaceError(f"{folder / name}: exists but was not written by bayes-concepts (not listed in "
                             f"{RENDERED_DIR}/{_TABLE}): refusing to replace it; move it away")
        table["banks"].pop(name, None)
        table["space_manifest_sha256"] = sha
        if not (folder / _TABLE).exists():
            _write_table(folder, table)   # claims the folder before the first bank is written
        table["banks"][name] = _write(folder, name, space, kind, settings, int(chunk), log)
        _write_table(folder, table)
        return _load(folder, name, table["banks"][name], space, kind, settings, verify=False)


def _find(space, modality: Modality, settings: dict, verify: bool) -> np.ndarray | None:
    folder = _folder_of(space)
    if folder is None or not (folder / _TABLE).is_file():
        return None
    name = modality.file_name(settings)
    table = _read_table(folder, space.manifest_sha256())
    entry = table["banks"].get(name)
    if entry is None or not (folder / name).is_file():
        return None
    return _load(folder, name, entry, space, modality, settings, verify)


def find_rendered_bank(space, modality: str = "image", *, verify: bool = True, **options) -> np.ndarray | None:
    """The cached bank of :func:`rendered_bank` if the space has one of ``modality`` with
    these options (checked as there), else None (also for a space without ``has_pictures``);
    never renders.  A damaged or stale cache raises :class:`SpaceError`."""
    kind = _modality(modality)
    settings = _settings(kind, options)
    if not space.has_pictures:
        return None
    return _find(space, kind, settings, verify)


def rendered_banks(space) -> dict:
    """The table of the banks cached for ``space``: file name -> modality, settings, dtype,
    shape, sha256, bytes (empty when none or the space is not saved)."""
    folder = _folder_of(space)
    if folder is None or not (folder / _TABLE).is_file():
        return {}
    return _read_table(folder, space.manifest_sha256())["banks"]


def render_items(space, modality: str, ids, **options) -> tuple:
    """``(array, settings)``: the scenes ``ids`` (bank ids, int (n,)) of ``space`` rendered in
    ``modality`` -- row ``j`` the rendering of scene ``ids[j]``, exactly the values of
    :func:`rendered_bank` for those rows -- without rendering or caching the rest of the bank
    (an episodes export renders only the scenes it holds).  ``settings``: the complete settings
    (:func:`bank_settings`).  The same one-line errors as :func:`rendered_bank` for a modality
    the space cannot be rendered in."""
    kind = _modality(modality)
    _check_space(space, kind)
    settings = _settings(kind, options)
    ids = np.asarray(ids, np.int64)
    out = np.empty(kind.shape(len(ids), settings), kind.dtype)
    for lo in range(0, len(ids), CHUNK):
        part = ids[lo: lo + CHUNK]
        positions = space.positions(part)
        extra = {"positions": np.asarray(positions)} if positions is not None and takes_positions(kind) else {}
        got = kind.render(np.asarray(space.scene_codes[part]), space.schema, settings, **extra)
        if not isinstance(got, np.ndarray) or got.dtype != kind.dtype or got.shape != kind.shape(len(part), settings):
            raise SpaceError(f"rendered bank: the {kind.name} renderer gave an array of the wrong type or shape for "
                             f"{len(part)} scenes")
        out[lo: lo + len(part)] = got
    return out, settings
