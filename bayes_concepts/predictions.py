"""A model scored from its predictions file, exactly as a learner in this process.

A model that lives elsewhere predicts the episodes of an export
(:mod:`bayes_concepts.export`, ``episodes export``) and writes a predictions file; ``gap``,
``ladder`` and ``audit`` read it with ``--predictions FILE [--name NAME]``
(:func:`predictions_learners`) and score it with the one scorer every learner goes through
(:func:`bayes_concepts.learners.scoring.score_learners`): AP on the test bank from its
scores, CBA and predictive entropy from its query probabilities, the same bootstrap
intervals -- the numbers an in-process learner with the same predictions gets.

The predictions file is one ``.npz`` (no pickle):

``format`` (str)
    ``"bayes-concepts predictions 1"``.
``identity`` (str)
    the export's ``identity``, copied verbatim (it names the space by its manifest hash,
    the seed, the episode shapes and every cell's episodes hash).
``test_bank`` int (T,)
    the export's ``test_bank``: the scene ids the score columns are for, in that order.
``cell{c}/query`` float (E, Kq)
    p(y = 1 | query scene, support) of every query scene of cell ``c``'s episodes, in [0, 1].
``cell{c}/test_bank_scores`` float (E, T)
    a score per test-bank scene and episode: any finite number that ranks the scenes (a
    logit, a probability); higher = more likely positive; ties are one threshold.
``name`` (str, optional)
    the model's name in results (``--name`` replaces it; default: the file's stem).

Refused, one line each, before any work: a file that is not such an ``.npz``; an identity
of another format or of another space (manifest hash); a test bank other than the space's;
a cell missing or one too many; episodes missing or too many; a shape other than (E, Kq)
and (E, T); NaN, infinite or out-of-range values; an unexpected array.  Against the run
(:meth:`Predictions.check_run`): cells other than those it scores, another seed, number of
episodes, query negatives, hard-negative mode or episode shape, and the first episodes of
each cell redrawn with another hash than the identity's ``head_sha256``.  When a cell is
scored, its episodes' whole hash must be the one the file carries (:class:`PredictionsLearner`):
an identity edited by hand is refused there, before anything is written.
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np

from .episodes import EXPORT_FORMAT, EXPORT_HEAD, EXPORT_VERSION, episode_shapes, test_bank_sha256
from .text_files import zip_file_kind
from .errors import BayesConceptsError

__all__ = ["PREDICTIONS_FORMAT", "PredictionsError", "Predictions", "PredictionsLearner", "read_predictions",
           "predictions_learners", "write_predictions"]

#: The ``format`` string of a predictions file.
PREDICTIONS_FORMAT = "bayes-concepts predictions 1"
_CELL_KEYS = ("query", "test_bank_scores")
_TOP_KEYS = ("format", "identity", "test_bank", "name")
_IDENTITY_KEYS = ("space_manifest_sha256", "seed", "episodes_per_cell", "query_negatives", "hard_mode", "cells",
                  "test_bank_sha256", "episodes_sha256")


class PredictionsError(BayesConceptsError):
    """A predictions file that cannot be scored (as asked); names the file and what is wrong."""


def _kind(path) -> str:
    return zip_file_kind(path, "predictions file", PredictionsError)


def _cell_name(cell: dict) -> str:
    return f"split {cell['split']}, {cell['negatives']} negatives"


class Predictions:
    """A checked predictions file (:func:`read_predictions`): ``path``, ``name``, the export's
    ``identity`` (a dict) and, per cell, its arrays read on demand (:meth:`cell`)."""

    def __init__(self, path, name: str, identity: dict, n_bank: int):
        self.path, self.name, self.identity, self.n_bank = Path(path), name, identity, n_bank

    @property
    def cells(self) -> list:
        return self.identity["cells"]

    def cell(self, c: int) -> tuple:
        """``(query float64 (E, Kq), scores float64 (E, T))`` of cell ``c``, checked."""
        entry = self.cells[c]
        e = int(entry["episodes"])
        sh = entry["shape"]
        kq = int(sh["query_positives"]) + int(sh["query_negatives"])
        with _open(self.path) as data:
            query = _array(data, self.path, f"cell{c}/query", entry, (e, kq), "query scene")
            scores = _array(data, self.path, f"cell{c}/test_bank_scores", entry, (e, self.n_bank), "test-bank scene")
        where = f"{self.path}: cell{c}/query ({_cell_name(entry)})"
        bad = ~np.isfinite(query)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise PredictionsError(f"{where}: {'NaN' if np.isnan(query[i, j]) else 'an infinite value'} at episode "
                                   f"{i}, query scene {j} (probabilities in [0, 1])")
        out = (query < 0) | (query > 1)
        if out.any():
            i, j = np.argwhere(out)[0]
            raise PredictionsError(f"{where}: probability {query[i, j]:g} at episode {i}, query scene {j} is outside "
                                   "[0, 1] (write p(y = 1), not a logit)")
        bad = ~np.isfinite(scores)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise PredictionsError(f"{self.path}: cell{c}/test_bank_scores ({_cell_name(entry)}): "
                                   f"{'NaN' if np.isnan(scores[i, j]) else 'an infinite value'} at episode {i}, "
                                   f"test-bank scene {j} (scores must be finite numbers)")
        return query, scores

    def check_run(self, cells: list, n_episodes: int, seed: int, query_negatives, hard_mode: str, shapes: dict,
                  space=None, splits: dict | None = None):
        """Raise a one-line :class:`PredictionsError` unless the file predicts exactly the
        episodes of a run scoring ``cells`` ([(split, negatives)], in any order) of
        ``n_episodes`` each with ``seed``, ``query_negatives``, ``hard_mode`` and ``shapes``
        (split -> episode shape dict).  Given ``space`` and ``splits``, the first
        :data:`~bayes_concepts.episodes.EXPORT_HEAD` episodes of every cell are redrawn as the
        run draws them and must have the identity's ``head_sha256`` (the whole cell's hash is
        checked when it is scored)."""
        ident, p = self.identity, self.path
        mine = [(c["split"], c["negatives"]) for c in self.cells]
        missing = [c for c in cells if c not in mine]
        if missing:
            s, n = missing[0]
            raise PredictionsError(f"{p}: no predictions for the episodes of split {s} ({n} negatives), which this run "
                                   f"scores (the file has {', '.join(f'{a}/{b}' for a, b in mine) or 'no cell'}): "
                                   "export and predict the same splits and negatives the run scores")
        extra = [c for c in mine if c not in cells]
        if extra:
            s, n = extra[0]
            raise PredictionsError(f"{p}: extra episodes: predictions for split {s} ({n} negatives), which this run "
                                   "does not score; score the splits and negatives the export holds (or export "
                                   "those of this run)")
        for key, mine_v, run_v, option in (("seed", ident["seed"], seed, "--seed"),
                                           ("episodes per cell", ident["episodes_per_cell"], n_episodes, "--episodes"),
                                           ("query negatives", ident["query_negatives"], query_negatives,
                                            "--query-negatives"),
                                           ("hard-negative mode", ident["hard_mode"], hard_mode, "--hard-mode")):
            if mine_v != run_v:
                said = {v: "as the support's" if v is None else v for v in (mine_v, run_v)}
                raise PredictionsError(f"{p}: predicts episodes of {key} {said[mine_v]}, this run draws {key} "
                                       f"{said[run_v]} ({option}): give the export's settings")
        for c in self.cells:
            want = {k: int(v) for k, v in shapes[c["split"]].items()}
            got = {k: int(v) for k, v in c["shape"].items()}
            if got != want:
                raise PredictionsError(f"{p}: the episodes of split {c['split']} have shape {_shape_text(got)} in the "
                                       f"file, {_shape_text(want)} in this run (--episode-shape)")
        if space is None:
            return
        from .gap import cell_seed
        from .gap_cells import draw_cell
        for c in self.cells:
            k = min(EXPORT_HEAD, int(c["episodes"]))
            head = draw_cell(space, c["split"], splits[c["split"]], n_episodes, c["negatives"],
                             cell_seed(seed, c["split"], c["negatives"]), query_negatives, hard_mode,
                             shapes[c["split"]], part=(0, k))
            if head.sha256() != c["head_sha256"]:
                raise PredictionsError(_other_episodes(p, c["split"], c["negatives"], head.sha256()))


def _other_episodes(path, split, negatives, sha: str) -> str:
    return (f"{path}: the episodes this run draws for split {split} ({negatives} negatives) are not those the "
            f"predictions were made for (episodes sha256 {sha[:12]}…): export them again with this toolkit and "
            "predict them")


def _shape_text(sh: dict) -> str:
    return f"{sh['positives']}+{sh['negatives']} support, {sh['query_positives']}+{sh['query_negatives']} query"


class _open:
    """``np.load`` of a predictions file as a context manager, read errors as one line."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        try:
            self.data = np.load(self.path, allow_pickle=False)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise PredictionsError(f"{self.path}: cannot read the predictions file "
                                   f"({' '.join(str(exc).split())[:200]})") from None
        if not hasattr(self.data, "files"):
            raise PredictionsError(f"{self.path}: a single array, not a predictions .npz")
        return self.data

    def __exit__(self, *exc):
        self.data.close()
        return False


def _read(data, path, key):
    try:
        return data[key]
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise PredictionsError(f"{path}: cannot read {key} ({' '.join(str(exc).split())[:200]}; object arrays and "
                               "pickles are refused)") from None


def _text(data, path, key) -> str:
    a = _read(data, path, key)
    if a.dtype.kind not in "U" or a.ndim != 0:
        raise PredictionsError(f"{path}: {key} must be a string (a 0-d str array), got {a.dtype} of shape {a.shape}")
    return str(a)


def _array(data, path, key, entry, shape, what) -> np.ndarray:
    if key not in data.files:
        raise PredictionsError(f"{path}: missing episodes: no {key} ({_cell_name(entry)})")
    a = _read(data, path, key)
    if a.dtype.kind not in "fiu":
        raise PredictionsError(f"{path}: {key} is {a.dtype}, expected real numbers")
    if a.ndim != 2:
        raise PredictionsError(f"{path}: {key} has shape {a.shape}, expected {shape} (episodes x {what}s)")
    if a.shape[0] != shape[0]:
        raise PredictionsError(f"{path}: {key} ({_cell_name(entry)}) has {a.shape[0]:,} episodes, the export "
                               f"{shape[0]:,}: {'missing' if a.shape[0] < shape[0] else 'extra'} episodes")
    if a.shape[1] != shape[1]:
        raise PredictionsError(f"{path}: {key} ({_cell_name(entry)}) has shape {a.shape}, expected {shape} (one "
                               f"column per {what})")
    return a.astype(np.float64)


def _identity(text: str, path) -> dict:
    try:
        ident = json.loads(text)
    except (ValueError, RecursionError):
        raise PredictionsError(f"{path}: identity is not JSON: copy the export's identity verbatim") from None
    if not isinstance(ident, dict) or ident.get("format") != EXPORT_FORMAT or ident.get("version") != EXPORT_VERSION:
        raise PredictionsError(f"{path}: identity is not that of an episodes export (format {EXPORT_FORMAT!r}, "
                               f"version {EXPORT_VERSION}): copy the export's identity verbatim")
    missing = [k for k in _IDENTITY_KEYS if k not in ident]
    cells = ident.get("cells")
    if missing or not isinstance(cells, list) or not all(
            isinstance(c, dict) and {"split", "negatives", "shape", "episodes", "sha256", "head_sha256"} <= set(c)
            and isinstance(c["shape"], dict) for c in cells):
        raise PredictionsError(f"{path}: the identity is damaged (missing "
                               f"{', '.join(missing) or 'its cells'}): copy the export's identity verbatim")
    return ident


def read_predictions(path, space, name: str | None = None) -> Predictions:
    """Read and check the predictions file ``path`` for ``space`` (a saved space): its format,
    its identity, the space's manifest hash, the test bank, every cell's arrays (shapes and
    values).  ``name``: the model's name in results (default: the file's ``name``, else its
    stem).  Returns a :class:`Predictions`; anything wrong is a one-line
    :class:`PredictionsError` naming the file."""
    path = Path(path)
    kind = _kind(path)
    if kind != "zip":
        raise PredictionsError(f"{path}: not a predictions file (expected an .npz of numpy arrays; this is {kind})")
    with _open(path) as data:
        files = set(data.files)
        for key in ("format", "identity", "test_bank"):
            if key not in files:
                raise PredictionsError(f"{path}: not a predictions file (no {key}; see the predictions format)")
        fmt = _text(data, path, "format")
        if fmt != PREDICTIONS_FORMAT:
            raise PredictionsError(f"{path}: format {fmt[:60]!r}, expected {PREDICTIONS_FORMAT!r}")
        ident = _identity(_text(data, path, "identity"), path)
        own = space.manifest_sha256()
        if not own:
            raise PredictionsError("predictions are scored on a saved space (the file names it by its manifest "
                                   "sha256): save the space first")
        theirs = str(ident["space_manifest_sha256"])
        if theirs != own:
            raise PredictionsError(f"{path}: predictions for another space (manifest sha256 {theirs[:12]}…, this "
                                   f"space's {own[:12]}…)")
        bank = np.asarray(space.test_bank.scene_ids, np.int64)
        ids = _read(data, path, "test_bank")
        if ids.dtype.kind not in "iu" or ids.ndim != 1:
            raise PredictionsError(f"{path}: test_bank is {ids.dtype} of shape {ids.shape}, expected the export's "
                                   "scene ids, int (T,)")
        if len(ids) != len(bank):
            raise PredictionsError(f"{path}: test_bank holds {len(ids):,} scene ids, this space's test bank "
                                   f"{len(bank):,}: copy the export's test_bank")
        wrong = np.flatnonzero(ids.astype(np.int64) != bank)
        if len(wrong):
            j = int(wrong[0])
            raise PredictionsError(f"{path}: wrong test-bank ids: column {j} is scene {int(ids[j])}, the test bank's is "
                                   f"scene {int(bank[j])} ({len(wrong):,} columns differ): score the test bank in the "
                                   "export's order")
        if ident["test_bank_sha256"] != test_bank_sha256(bank):
            raise PredictionsError(f"{path}: the identity's test bank is not this space's")
        expected = {f"cell{c}/{k}" for c in range(len(ident["cells"])) for k in _CELL_KEYS}
        unexpected = sorted(files - expected - set(_TOP_KEYS))
        if unexpected:
            cellish = [k for k in unexpected if k.startswith("cell")]
            raise PredictionsError(
                f"{path}: extra episodes: {cellish[0]} (the export has {len(ident['cells'])} cell(s), cell0 to "
                f"cell{len(ident['cells']) - 1})" if cellish else
                f"{path}: unexpected array {unexpected[0]!r} (a predictions file holds "
                f"{', '.join(_TOP_KEYS)} and cell{{c}}/{{{', '.join(_CELL_KEYS)}}})")
        if name is None:
            name = _text(data, path, "name") if "name" in files else path.stem
    if not name or not str(name).strip():
        raise PredictionsError(f"{path}: the model's name is empty: give --name NAME")
    preds = Predictions(path, str(name), ident, len(bank))
    for c in range(len(preds.cells)):
        preds.cell(c)  # every cell's shapes and values, before any work
    return preds


class PredictionsLearner:
    """The learner of a predictions file on one split: its batch ``evaluate(episodes)`` looks
    the episodes up by their hash (:meth:`~bayes_concepts.episodes.Episodes.sha256`) among
    the file's cells and scores the file's numbers as
    :func:`~bayes_concepts.learners.scoring.score_learner` scores any learner's; ``fit`` and
    ``predict_proba`` are refused (a file predicts only the episodes it was written for)."""

    def __init__(self, predictions: Predictions, space, cells: list):
        self.predictions, self.space, self.name = predictions, space, predictions.name
        self._cells = {predictions.cells[c]["sha256"]: c for c in cells}

    def info(self) -> dict:
        ident = self.predictions.identity
        return {"kind": "predictions", "file": str(self.predictions.path), "episodes_sha256": ident["episodes_sha256"]}

    def fit(self, scenes, labels):
        from .learners.protocol import LearnerError
        raise LearnerError(f"{self.predictions.path}: a predictions file predicts only the episodes of its export; it "
                           "cannot be fitted to other support sets")

    def predict_proba(self, scenes):
        return self.fit(scenes, None)

    def evaluate(self, episodes) -> dict:
        """AP of the file's test-bank scores, CBA and predictive entropy of its query
        probabilities, on ``episodes`` (one of the file's cells)."""
        from .learners.scoring import ap_on_test_bank, query_metrics
        h = episodes.sha256()
        if h not in self._cells:
            meta = episodes.meta
            raise PredictionsError(_other_episodes(self.predictions.path, meta.get("split"), meta.get("negatives"), h))
        query, scores = self.predictions.cell(self._cells[h])
        e_count = len(query)
        cba, entropy = np.empty(e_count), np.empty(e_count)
        query_metrics(query, np.ascontiguousarray(episodes.query_labels), cba, entropy)
        return {"ap": ap_on_test_bank(self.space, scores, episodes.concept), "cba": cba, "predictive_entropy": entropy,
                "posterior_entropy": np.full(e_count, np.nan), "empty": np.zeros(e_count, bool), "query_pred": query}

    def __repr__(self):
        return f"PredictionsLearner({self.name!r}, {str(self.predictions.path)!r})"


def predictions_learners(space, splits: dict, files, names=None, *, negatives=("hard", "easy"),
                         n_episodes: int = 20_000, seed: int = 0, query_negatives: str | None = None,
                         hard_mode: str = "union", episode_shape=None, skip_undrawable: bool = False,
                         taken=()) -> dict:
    """The learners of predictions files for a comp-gap run (``learners`` of
    :func:`~bayes_concepts.gap.compute_gap`, ``models`` of
    :func:`~bayes_concepts.ladder.ladder_profile`): ``{name: {split: PredictionsLearner}}``.

    files: predictions files (none: ``{}``); names: None, or one name per file (default: the
    file's ``name``, else its stem); the other arguments are the run's, as given to
    :func:`~bayes_concepts.gap.compute_gap`; ``taken``: names already used by other learners.
    Every file is read and checked against the space and the run before any work
    (:func:`read_predictions`, :meth:`Predictions.check_run`)."""
    files = list(files or ())
    if names is not None and len(list(names)) != len(files):
        raise PredictionsError(f"--name given {len(list(names))} time(s) for {len(files)} --predictions file(s): give "
                               "one name per file, in the same order, or none")
    if not files:
        return {}
    from .gap import ALL_ORACLES, _check_gap_input
    negatives = _check_gap_input(splits, negatives, n_episodes, seed, query_negatives)
    shapes, _ = episode_shapes(space, splits, episode_shape, skip_undrawable=bool(skip_undrawable))
    cells = [(n, neg) for n in splits if n in shapes for neg in negatives]
    out, used = {}, set(taken)
    for i, f in enumerate(files):
        preds = read_predictions(f, space, None if names is None else list(names)[i])
        if preds.name in ALL_ORACLES:
            raise PredictionsError(f"{f}: the name {preds.name!r} is an oracle's; give --name NAME")
        if preds.name in used:
            raise PredictionsError(f"{f}: a learner named {preds.name!r} is already scored; give --name NAME")
        preds.check_run(cells, n_episodes, seed, query_negatives, hard_mode, shapes, space, splits)
        used.add(preds.name)
        by_split = {}
        for c, entry in enumerate(preds.cells):
            by_split.setdefault(entry["split"], []).append(c)
        out[preds.name] = {s: PredictionsLearner(preds, space, cs) for s, cs in by_split.items()}
    return out


def write_predictions(path, export, query, scores, *, name: str | None = None, overwrite: bool = False) -> Path:
    """Write a predictions file for ``export`` (an
    :class:`~bayes_concepts.export.EpisodesExport`, or the dict of
    :func:`~bayes_concepts.export.read_export`): ``query[c]`` float (E, Kq) and ``scores[c]``
    float (E, T) per cell ``c``.  Written in one piece, never over a file the toolkit did not
    write.  (A model outside the toolkit writes the same arrays with ``numpy.savez``.)"""
    from .output_files import check_target, write_file
    identity = export.identity_text() if hasattr(export, "identity_text") else json.dumps(export["identity"],
                                                                                          sort_keys=True)
    bank = export.test_bank if hasattr(export, "test_bank") else export["test_bank"]
    arrays = {"format": np.array(PREDICTIONS_FORMAT), "identity": np.array(identity),
              "test_bank": np.asarray(bank, np.int64)}
    if name is not None:
        arrays["name"] = np.array(str(name))
    for c, (q, s) in enumerate(zip(query, scores)):
        arrays[f"cell{c}/query"] = np.asarray(q, np.float64)
        arrays[f"cell{c}/test_bank_scores"] = np.asarray(s, np.float64)

    def ours(p):
        try:
            with zipfile.ZipFile(p) as z:
                return {"format.npy", "identity.npy", "test_bank.npy"} <= set(z.namelist())
        except (OSError, zipfile.BadZipFile, ValueError):
            return False
    target = check_target(path, ours=ours, what="predictions file", overwrite=overwrite)

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)
    return write_file(target, write, what="predictions file")
