"""A hypothesis space on disk (DESIGN section 5): a directory of plain files.

=====================  ==========================================================
``manifest.json``      format version, build parameters, seed, survivors per stage,
                       and the sha256 and size of every other file
``concepts.jsonl``     one concept per line, in id order: ``id``, ``program``
                       (canonical postfix), ``length``, ``log_pcfg``, ``count``,
                       ``synonym_class``
``signatures.npy``     uint64 (n_concepts, ceil(n_scenes/64)), memory-mapped on load
``scenes.npy``         int8 (n_scenes, max_objects, n_attributes) scene codes
``test_scene_ids.npy`` int64 (T,) test-bank scenes (indices into the scene bank)
``test_drawn_for.npy`` int32 (T,) the concept each test scene was drawn for
``test_signatures.npy`` uint64 (n_concepts, ceil(T/64)) labels on the test bank
``grammar.pcfg``       the grammar the space was built from
=====================  ==========================================================

No pickle: ``.npy`` files are read with ``allow_pickle=False``.  A build is
written to ``<dir>.partial`` and renamed into place only when complete, so an
interrupted build never leaves a directory that loads.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np

from ..errors import BayesConceptsError
from ..lot.grammar import Grammar
from .test_bank import TestBank

#: Version of the on-disk layout; a space of another version must be rebuilt.
FORMAT_VERSION = 2

ARRAYS = {
    "signatures.npy": ("signatures", np.uint64, 2),
    "scenes.npy": ("scene_codes", np.int8, 3),
    "test_scene_ids.npy": ("test_scene_ids", np.int64, 1),
    "test_drawn_for.npy": ("test_drawn_for", np.int32, 1),
    "test_signatures.npy": ("test_signatures", np.uint64, 2),
}
FILES = ("concepts.jsonl", "grammar.pcfg", *ARRAYS)


class SpaceError(BayesConceptsError):
    """A directory that is not a valid saved hypothesis space; names the file."""


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


def _save_npy(path: Path, array: np.ndarray):
    with open(path, "wb") as f:
        np.save(f, np.ascontiguousarray(array), allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())


def save_space(space, path, overwrite: bool = False) -> Path:
    """Write ``space`` (a HypothesisSpace) to directory ``path`` atomically; returns the path."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} already exists (pass overwrite=True / --force to replace it)")
    partial = path.with_name(path.name + ".partial")
    if partial.exists():  # left behind by an interrupted build
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    lines = []
    for i, prog in enumerate(space.programs):
        lines.append(json.dumps({"id": i, "program": prog, "length": int(space.lengths[i]),
                                 "log_pcfg": float(space.log_pcfg[i]), "count": int(space.counts[i]),
                                 "synonym_class": int(space.synonym_classes[i])}))
    _fsync_write(partial / "concepts.jsonl", ("\n".join(lines) + "\n" if lines else "").encode())
    _fsync_write(partial / "grammar.pcfg", space.grammar_text.encode("utf-8"))
    values = {"signatures": space.signatures, "scene_codes": space.scene_codes,
              "test_scene_ids": space.test_bank.scene_ids, "test_drawn_for": space.test_bank.drawn_for,
              "test_signatures": space.test_bank.signatures}
    for name, (attr, dtype, _) in ARRAYS.items():
        _save_npy(partial / name, np.asarray(values[attr], dtype=dtype))
    manifest = {
        "format": "bayes_concepts.hypothesis_space",
        "format_version": FORMAT_VERSION,
        "params": space.params,
        "seed": space.params.get("seed"),
        "counts": {"concepts": space.n_concepts, "scenes": space.n_scenes,
                   "test_bank": space.test_bank.n_scenes, "synonym_classes": space.n_synonym_classes,
                   "max_objects": int(space.scene_codes.shape[1])},
        "stages": space.stages,
        "files": {name: {"sha256": _sha256_file(partial / name), "bytes": (partial / name).stat().st_size}
                  for name in FILES},
    }
    manifest["self_sha256"] = _manifest_digest(manifest)
    _fsync_write(partial / "manifest.json", (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())
    if path.exists():
        old = path.with_name(path.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        path.rename(old)
        partial.rename(path)
        shutil.rmtree(old)
    else:
        partial.rename(path)
    space.path = path
    return path


def _manifest_digest(manifest: dict) -> str:
    """sha256 of the manifest's canonical JSON without its own ``self_sha256`` field."""
    body = {k: v for k, v in manifest.items() if k != "self_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def read_manifest(path) -> dict:
    path = Path(path)
    mf = path / "manifest.json"
    if not path.is_dir():
        raise SpaceError(f"{path}: no such hypothesis-space directory")
    if not mf.exists():
        partial = " (an unfinished build?)" if path.name.endswith(".partial") else ""
        raise SpaceError(f"{mf}: missing; {path} is not a saved hypothesis space{partial}")
    try:
        manifest = json.loads(mf.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpaceError(f"{mf}: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != "bayes_concepts.hypothesis_space":
        raise SpaceError(f"{mf}: not a hypothesis-space manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise SpaceError(f"{mf}: format version {manifest.get('format_version')!r}, this toolkit reads version "
                         f"{FORMAT_VERSION}; rebuild the space")
    if manifest.get("self_sha256") != _manifest_digest(manifest):
        raise SpaceError(f"{mf}: checksum mismatch (its content does not match its self_sha256); "
                         "the manifest is damaged")
    files = manifest.get("files")
    if not isinstance(files, dict) or set(files) != set(FILES):
        raise SpaceError(f"{mf}: the file list is damaged (expected {', '.join(FILES)})")
    return manifest


def load_space_fields(path, verify: bool = True) -> dict:
    """Read a saved space: the keyword arguments of ``HypothesisSpace``.  ``verify`` checks
    every file's sha256 against the manifest (sizes are always checked)."""
    path = Path(path)
    manifest = read_manifest(path)
    for name, info in manifest["files"].items():
        f = path / name
        if not f.exists():
            raise SpaceError(f"{f}: missing (listed in manifest.json)")
        size = f.stat().st_size
        if size != info.get("bytes"):
            raise SpaceError(f"{f}: {size:,} bytes, manifest.json says {info.get('bytes'):,} (truncated or changed)")
        if verify and _sha256_file(f) != info.get("sha256"):
            raise SpaceError(f"{f}: checksum mismatch (sha256 differs from manifest.json); the file is damaged")
    arrays = {}
    for name, (attr, dtype, ndim) in ARRAYS.items():
        try:
            a = np.load(path / name, mmap_mode="r" if name == "signatures.npy" else None, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise SpaceError(f"{path / name}: cannot be read as .npy ({exc})") from None
        if a.dtype != dtype or a.ndim != ndim:
            raise SpaceError(f"{path / name}: expected a {ndim}-d {np.dtype(dtype).name} array, "
                             f"got {a.ndim}-d {a.dtype}")
        arrays[attr] = a
    programs, lengths, log_pcfg, counts, classes = [], [], [], [], []
    cfile = path / "concepts.jsonl"
    for lineno, line in enumerate(cfile.read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
            if row["id"] != lineno - 1:
                raise ValueError(f"id {row['id']} out of order")
            programs.append(row["program"])
            lengths.append(row["length"])
            log_pcfg.append(row["log_pcfg"])
            counts.append(row["count"])
            classes.append(row["synonym_class"])
        except (ValueError, KeyError, TypeError) as exc:
            raise SpaceError(f"{cfile} line {lineno}: {exc}") from None
    n = len(programs)
    c = manifest["counts"]
    if (n != c["concepts"] or arrays["signatures"].shape[0] != n or arrays["test_signatures"].shape[0] != n
            or arrays["scene_codes"].shape[0] != c["scenes"] or arrays["scene_codes"].shape[1] != c["max_objects"]
            or len(arrays["test_scene_ids"]) != c["test_bank"]
            or (n and int(np.max(classes)) + 1 != c["synonym_classes"])):
        raise SpaceError(f"{path}: file sizes disagree with manifest.json counts")
    grammar_text = (path / "grammar.pcfg").read_text(encoding="utf-8")
    grammar = Grammar.from_text(grammar_text, source=str(path / "grammar.pcfg"))
    return dict(
        programs=programs, lengths=np.array(lengths, np.int16), log_pcfg=np.array(log_pcfg, np.float64),
        counts=np.array(counts, np.int64), synonym_classes=np.array(classes, np.int32),
        signatures=arrays["signatures"], scene_codes=arrays["scene_codes"],
        test_bank=TestBank(arrays["test_scene_ids"], arrays["test_drawn_for"], arrays["test_signatures"]),
        params=manifest["params"], stages=manifest["stages"], grammar=grammar, grammar_text=grammar_text,
        path=path)
