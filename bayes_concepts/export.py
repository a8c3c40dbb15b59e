"""Episodes exported for a model that lives outside the toolkit (``episodes export``).

A model in another environment (another Python, a GPU machine, JAX, ...) is scored from
files: this module writes what it needs to predict -- every test episode a comp-gap run
(``gap``, ``ladder``, ``audit``) scores, drawn exactly as that run draws them, with the
scenes themselves -- and :mod:`bayes_concepts.predictions` reads its predictions back.

One ``.npz`` file (numpy arrays, no pickle), written in one piece:

``identity`` (str, JSON)
    what the episodes are: ``format``, ``version``, ``space_manifest_sha256``, ``seed``,
    ``episodes_per_cell``, ``negatives``, ``query_negatives`` (None: as the support's),
    ``hard_mode``, ``protocol`` (or None), ``cells`` -- one entry per (split, negatives)
    cell, in order: ``split``, ``negatives``, ``shape`` (positives, negatives,
    query_positives, query_negatives), ``episodes``, ``sha256``
    (:meth:`~bayes_concepts.episodes.Episodes.sha256`) and ``head_sha256`` (of its first
    :data:`~bayes_concepts.episodes.EXPORT_HEAD` episodes) -- ``test_bank_sha256`` and
    ``episodes_sha256`` (of the cells' hashes).  A predictions file copies it verbatim.
``test_bank`` int64 (T,)
    the scene ids of the test bank, in the order a predictions file scores them.
``cell{c}/support_scenes`` int64 (E, K), ``cell{c}/support_labels`` int8 (E, K), ``cell{c}/query_scenes`` int64 (E, Kq)
    cell ``c``'s episodes: support scene ids and 0/1 labels, query scene ids.
``scene_ids`` int64 (N,), ``scenes`` (str, JSON)
    every scene the episodes and the test bank use, once, ascending, and the list of those
    scenes as scene dicts (``{"objects": [{attribute: value, ...}, ...]}``) in that order.
``pictures`` (N, ...), ``pictures_info`` (str, JSON) -- only when asked for
    the same scenes rendered in a modality (``image``: uint8 (N, H, W, 3)) and the
    modality's name and settings.

The query labels are not in the file: a model predicts without them.  They are written
apart, only when asked for (``--answers FILE``: ``identity`` and ``cell{c}/query_labels``
int8 (E, Kq)), for one's own checks.

>>> ex = export_episodes(space, splits, ("hard",), 200, seed=0)          # doctest: +SKIP
>>> write_export(ex, "episodes_export.npz")                             # doctest: +SKIP
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .episodes import EXPORT_FORMAT, EXPORT_HEAD, EXPORT_VERSION, episode_shapes, test_bank_sha256
from .errors import BayesConceptsError
from .gap import _check_gap_input, cell_seed
from .gap_cells import draw_cell
from .scale import check_memory, episodes_bytes
from .splits import by_set

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "ExportError", "EpisodesExport", "export_episodes", "write_export",
           "check_export_file", "is_export_file", "is_answers_file", "read_export", "test_bank_sha256"]



class ExportError(BayesConceptsError):
    """Episodes that cannot be exported as asked, or an export file that cannot be read."""


def _cells_sha256(cells: list) -> str:
    return hashlib.sha256("\n".join(c["sha256"] for c in cells).encode()).hexdigest()


@dataclass
class EpisodesExport:
    """What :func:`export_episodes` drew: the ``identity`` (a dict, see the module docstring),
    the cells' :class:`~bayes_concepts.episodes.Episodes` (query labels included, for
    :meth:`answers`), the test bank's scene ids int64 (T,), the scenes used (ids int64 (N,)
    ascending and their dicts) and, when rendered, their pictures and ``pictures_info``."""

    identity: dict
    episodes: list
    test_bank: np.ndarray
    scene_ids: np.ndarray
    scenes: list
    pictures: np.ndarray | None = None
    pictures_info: dict | None = None

    def identity_text(self) -> str:
        """The identity as the file holds it (sorted JSON)."""
        return json.dumps(self.identity, sort_keys=True)

    def arrays(self) -> dict:
        """The arrays of the export file, by key (no query labels)."""
        out = {"identity": np.array(self.identity_text()), "test_bank": np.asarray(self.test_bank, np.int64),
               "scene_ids": np.asarray(self.scene_ids, np.int64),
               "scenes": np.array(json.dumps(self.scenes, allow_nan=False, ensure_ascii=False))}
        for c, eps in enumerate(self.episodes):
            out[f"cell{c}/support_scenes"] = np.asarray(eps.support_scenes, np.int64)
            out[f"cell{c}/support_labels"] = np.asarray(eps.support_labels, np.int8)
            out[f"cell{c}/query_scenes"] = np.asarray(eps.query_scenes, np.int64)
        if self.pictures is not None:
            out["pictures"] = self.pictures
            out["pictures_info"] = np.array(json.dumps(self.pictures_info, sort_keys=True))
        return out

    def answers(self) -> dict:
        """The arrays of the answers file: ``identity`` and each cell's query labels."""
        out = {"identity": np.array(self.identity_text())}
        for c, eps in enumerate(self.episodes):
            out[f"cell{c}/query_labels"] = np.asarray(eps.query_labels, np.int8)
        return out


def export_episodes(space, splits: dict, negatives=("hard", "easy"), n_episodes: int = 1000, seed: int = 0, *,
                    query_negatives: str | None = None, hard_mode: str = "union", episode_shape=None,
                    skip_undrawable: bool = False, protocol: str | None = None, modality: str | None = None,
                    modality_options: dict | None = None) -> EpisodesExport:
    """The test episodes of every (split, negatives) cell exactly as
    :func:`~bayes_concepts.gap.compute_gap` (and so ``gap``, ``ladder``, ``audit``) draws them
    with the same arguments -- the same cell seeds, shapes and hard-negative mode -- and the
    scenes they use, as an :class:`EpisodesExport` for :func:`write_export`.

    space: a saved space (the export records its manifest hash); splits: name -> Split (not
    drawn by set); ``negatives``, ``n_episodes``, ``seed``, ``query_negatives``,
    ``hard_mode``, ``episode_shape``, ``skip_undrawable``: as for
    :func:`~bayes_concepts.gap.compute_gap`; ``protocol``: the protocol's name, recorded;
    ``modality`` (``"image"``, ``"sound"``; ``modality_options`` its options): also render
    the scenes (:func:`~bayes_concepts.engine.rendered.render_items`).  Bad input is a one-line
    :class:`ExportError` (or the gap's own errors) before any drawing."""
    negatives = _check_gap_input(splits, negatives, n_episodes, seed, query_negatives)
    sha = space.manifest_sha256()
    if not sha:
        raise ExportError("an episodes export records the space's manifest sha256: save the space first "
                          "(space.save(path)) and export from the saved space")
    drawn_by_set = [n for n, s in splits.items() if by_set(s)]
    if drawn_by_set:
        raise ExportError(f"split {drawn_by_set[0]} draws its episodes by set (items = 'by-set'): its scene ids are "
                          "its test set's own, and an export of them is not supported; export the pair-level split")
    shapes, excluded = episode_shapes(space, splits, episode_shape, skip_undrawable=bool(skip_undrawable))
    names = [n for n in splits if n in shapes]
    cells = [(n, neg) for n in names for neg in negatives]
    widths = sum(shapes[n]["positives"] + shapes[n]["negatives"] + shapes[n]["query_positives"]
                 + shapes[n]["query_negatives"] for n, _ in cells)
    check_memory(episodes_bytes(n_episodes, widths, 0), f"--episodes {n_episodes:,}",
                 "export fewer episodes (or fewer splits)", f"{len(cells)} cell(s)")
    episodes, entries = [], []
    for name, neg in cells:
        eps = draw_cell(space, name, splits[name], n_episodes, neg, cell_seed(seed, name, neg), query_negatives,
                        hard_mode, shapes[name])
        episodes.append(eps)
        entries.append({"split": name, "negatives": neg, "shape": dict(shapes[name]), "episodes": len(eps),
                        "sha256": eps.sha256(), "head_sha256": eps.sha256(first=EXPORT_HEAD)})
    bank = np.asarray(space.test_bank.scene_ids, np.int64)
    used = [bank] + [a.ravel() for eps in episodes for a in (eps.support_scenes, eps.query_scenes)]
    scene_ids = np.unique(np.concatenate(used)).astype(np.int64)
    scenes = [space.scene(int(i)) for i in scene_ids]
    identity = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "space_manifest_sha256": sha,
                "seed": int(seed), "episodes_per_cell": int(n_episodes), "negatives": list(negatives),
                "query_negatives": query_negatives, "hard_mode": hard_mode, "protocol": protocol, "cells": entries,
                "not_scored": sorted((excluded.get("not_scored") or {})),
                "test_bank_sha256": test_bank_sha256(bank), "episodes_sha256": _cells_sha256(entries)}
    pictures = info = None
    if modality is not None:
        from .engine.rendered import render_items
        pictures, settings = render_items(space, modality, scene_ids, **(modality_options or {}))
        info = {"modality": modality, "settings": settings, "dtype": str(pictures.dtype),
                "shape": list(pictures.shape[1:])}
    return EpisodesExport(identity, episodes, bank, scene_ids, scenes, pictures, info)


# ------------------------------------------------------------------------------ files
def _zip_names(path) -> set | None:
    import zipfile
    try:
        with zipfile.ZipFile(path) as z:
            return set(z.namelist())
    except (OSError, zipfile.BadZipFile, ValueError):
        return None


def is_export_file(path) -> bool:
    """Whether ``path`` is an episodes export this toolkit wrote (reads the archive's table only)."""
    names = _zip_names(path)
    return names is not None and {"identity.npy", "test_bank.npy", "scene_ids.npy", "scenes.npy"} <= names


def is_answers_file(path) -> bool:
    """Whether ``path`` is an answers file of an export (``identity`` and query labels only)."""
    names = _zip_names(path)
    return (names is not None and "identity.npy" in names and "scenes.npy" not in names
            and any(n.endswith("/query_labels.npy") for n in names))


def check_export_file(path, overwrite: bool = False, option: str | None = None, answers: bool = False):
    """Check, before any work, that an export (or, with ``answers``, an answers file) may be
    written at ``path`` (:func:`bayes_concepts.output_files.check_target`); the target for
    :func:`write_export`."""
    from .output_files import check_target
    return check_target(path, ours=is_answers_file if answers else is_export_file,
                        what="answers file" if answers else "episodes export", overwrite=overwrite, option=option)


def write_export(export: EpisodesExport, path, *, overwrite: bool = False, target=None, answers=None,
                 answers_target=None) -> list:
    """Write ``export`` to ``path`` (and its query labels to ``answers``, when given), each in
    one piece, never over a file the toolkit did not write (:mod:`bayes_concepts.output_files`).
    ``target``/``answers_target``: :func:`check_export_file`'s results, checked before the
    work.  Returns the paths written."""
    from .output_files import write_file
    if target is None:
        target = check_export_file(path, overwrite)
    if answers is not None and answers_target is None:
        answers_target = check_export_file(answers, overwrite, answers=True)

    def writer(arrays):
        def write(tmp):
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, **arrays)
        return write
    out = [write_file(target, writer(export.arrays()), what="episodes export")]
    if answers is not None:
        out.append(write_file(answers_target, writer(export.answers()), what="answers file"))
    return out


def read_export(path) -> dict:
    """An export file as a dict: ``identity`` (a dict), ``test_bank``, ``scene_ids``,
    ``scenes`` (a list of scene dicts), ``cells`` (one dict of arrays per cell:
    ``support_scenes``, ``support_labels``, ``query_scenes``) and, when present,
    ``pictures`` and ``pictures_info``.  Anything else is a one-line :class:`ExportError`."""
    import zipfile
    path = Path(path)
    if not is_export_file(path):
        raise ExportError(f"{path}: not an episodes export (expected the .npz that 'bayes-concepts episodes export' "
                          "writes)")
    try:
        with np.load(path, allow_pickle=False) as data:
            identity = json.loads(str(data["identity"]))
            out = {"identity": identity, "test_bank": data["test_bank"], "scene_ids": data["scene_ids"],
                   "scenes": json.loads(str(data["scenes"])),
                   "cells": [{k: data[f"cell{c}/{k}"] for k in ("support_scenes", "support_labels", "query_scenes")}
                             for c in range(len(identity["cells"]))]}
            if "pictures" in data.files:
                out["pictures"] = data["pictures"]
                out["pictures_info"] = json.loads(str(data["pictures_info"]))
    except (OSError, ValueError, EOFError, KeyError, TypeError, RecursionError, zipfile.BadZipFile) as exc:
        raise ExportError(f"{path}: cannot read the episodes export ({' '.join(str(exc).split())[:200]})") from None
    return out

