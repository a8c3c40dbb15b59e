"""Results as an ``xarray.Dataset``, stored as netCDF.

Dimensions ``split``, ``negatives``, ``learner``, ``episode``.  Variables (metrics
are fractions in [0, 1]; entropies in nats):

====================== ===================================== ========================================
``ap``                 (split, negatives, learner, episode)  average precision on the test bank
``ap_bound``           (split, negatives, learner, episode)  a certified bound on |ap - exact AP|
                                                             (0: exact; see OracleSettings.ap_tolerance)
``cba``                (split, negatives, learner, episode)  class-balanced accuracy on the query set
``posterior_entropy``  (split, negatives, learner, episode)  entropy of the posterior over concepts
``predictive_entropy`` (split, negatives, learner, episode)  mean binary entropy of the query
                                                             predictive
``empty``              (split, negatives, learner, episode)  no concept of the learner fits the
                                                             support
``weak_empty``         (split, negatives, episode)           ``empty`` of the weak oracle
``concept``            (split, negatives, episode)           the episode's true concept id
``query_pred``         (split, negatives, learner, episode,  each learner's p(y = 1) for the query
                       query)                                scenes (NaN where a learner was not
                                                             scored)
====================== ===================================== ========================================

Attributes: ``space_manifest_sha256``, ``oracle_settings`` (JSON), ``seed``,
``episodes_per_cell``, ``query_negatives``, ``toolkit_version``, ``learners`` (JSON:
name -> what the learner is: ``oracle``, a reference learner, or a model with its
architecture, split, seed and weights checksum), ``splits`` (JSON: name -> the spec each
split was made from, the protocol that treated it, its concepts' sha256 and sizes, so a
figure can draw the results' own split again: :func:`bayes_concepts.gap.recorded_splits`).
The oracles are the learners
``strong`` and ``weak``; models and reference learners are more entries along
``learner``, scored on the same episodes (NaN on splits they were not scored on).
``query_pred`` and ``ap_bound`` are optional (results written before they existed lack them);
the attribute ``ap_tolerance`` is the AP tolerance the oracles were given (0: exact).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr

from .errors import BayesConceptsError

METRICS = ("ap", "cba", "posterior_entropy", "predictive_entropy")
REQUIRED = (*METRICS, "empty", "concept")


class ResultsError(BayesConceptsError):
    """A results file that cannot be read or lacks what the toolkit needs."""


def validate(ds: xr.Dataset, where: str = "results") -> xr.Dataset:
    missing = [v for v in REQUIRED if v not in ds.variables]
    if missing:
        raise ResultsError(f"{where}: missing variables {', '.join(missing)}")
    for dim in ("split", "negatives", "learner", "episode"):
        if dim not in ds.dims:
            raise ResultsError(f"{where}: missing dimension {dim!r}")
    return ds


def save_results(ds: xr.Dataset, path) -> Path:
    """Write ``ds`` to netCDF atomically (a temporary file ``.<name>.<random>.partial`` of
    this write's own in the same folder, then rename: concurrent writes of one path each
    leave a whole file, the last to finish wins).

    Missing parent folders of ``path`` are created (as ``space build`` creates the folders
    above its output).  A ``path`` that is a directory, a parent that is a file, or a folder
    that cannot be written raises :class:`ResultsError` naming the path."""
    path = Path(path)
    validate(ds)
    if path.is_dir():
        raise ResultsError(f"{path}: is a directory; give a results file name (e.g. results.nc)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in (path.parent, *path.parent.parents) if p.exists() and not p.is_dir()), path.parent)
        raise ResultsError(f"{path}: cannot create its folder: {blocker} is a file, not a folder") from None
    except PermissionError:
        first = next((p for p in path.parent.parents if p.is_dir()), path.parent)
        raise ResultsError(f"{path}: cannot create folder {path.parent} (permission denied in {first})") from None
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise ResultsError(f"{path}: cannot write into {path.parent} (permission denied)")
    # a temporary name of this write's own (two runs writing the same path at once each write
    # a whole file of their own and the last rename wins: never a shared ``.partial``)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    os.close(fd)
    tmp = Path(name)
    enc = {v: {"zlib": True, "complevel": 4} for v in ds.data_vars}
    try:
        ds.to_netcdf(tmp, engine="netcdf4", encoding=enc)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's files are 0600; results are meant to be shared
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # only left over when the write failed
    return path


def load_results(path) -> xr.Dataset:
    """Read a results netCDF file written by :func:`save_results` (dims split × negatives ×
    learner × episode); a missing or foreign file is a :class:`ResultsError` naming it."""
    path = Path(path)
    if not path.exists():
        raise ResultsError(f"{path}: no such results file")
    try:
        with xr.open_dataset(path, engine="netcdf4") as ds:
            loaded = ds.load()
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: cannot read as netCDF results ({exc})") from None
    for v in ("empty", "weak_empty"):
        if v in loaded and loaded[v].dtype != bool:
            loaded[v] = loaded[v].astype(bool)
    return validate(loaded, str(path))


def empty_dataset(splits, negatives, learners, n_episodes, n_query: int | None = None) -> xr.Dataset:
    """A results Dataset of NaN metrics (``empty`` False, ``concept`` -1) for the given
    coordinates; with ``n_query``, also ``query_pred`` (NaN) over a ``query`` dimension."""
    shape = (len(splits), len(negatives), len(learners), n_episodes)
    dims4 = ("split", "negatives", "learner", "episode")
    coords = {"split": list(splits), "negatives": list(negatives), "learner": list(learners),
              "episode": np.arange(n_episodes)}
    data = {m: (dims4, np.full(shape, np.nan)) for m in METRICS}
    data["empty"] = (dims4, np.zeros(shape, bool))
    data["concept"] = (("split", "negatives", "episode"), np.full(shape[:2] + shape[3:], -1, np.int64))
    if n_query is not None:
        coords["query"] = np.arange(n_query)
        data["query_pred"] = ((*dims4, "query"), np.full((*shape, n_query), np.nan))
    return xr.Dataset(data, coords=coords)
