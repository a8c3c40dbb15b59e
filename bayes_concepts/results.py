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
``topup``              (split, negatives, episode)           hard negatives (support and query) the
                                                             episode drew at random for want of hard ones
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
``query_pred``, ``ap_bound`` and ``topup`` are optional (results written before they existed lack them);
the attribute ``ap_tolerance`` is the AP tolerance the oracles were given (0: exact).
Every file :func:`save_results` writes also has the attribute ``format``
(:data:`RESULTS_FORMAT`), by which a later write knows it for the toolkit's own (which
``--force`` may replace; a file the toolkit did not write is never replaced);
:func:`load_results` leaves it out of the Dataset it returns.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
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


#: The global attribute ``format`` of every results file :func:`save_results` writes: how a
#: later write recognises a file of the toolkit's own (which ``--force`` may replace).
RESULTS_FORMAT = "bayes_concepts.results"
#: Attributes every results file written before ``format`` existed holds (compute_gap's).
_EARLIER_ATTRS = ("space_manifest_sha256", "oracle_settings", "toolkit_version", "episodes_per_cell")
_HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"


def is_results_file(path) -> bool:
    """Whether ``path`` is a results file this toolkit wrote: a netCDF-4 file whose global
    attributes say so (``format``), or hold what every run's results held before that
    attribute existed.  Reads the header only; never raises for a foreign file."""
    try:
        with open(path, "rb") as f:
            if f.read(8) != _HDF5_MAGIC:
                return False
        import netCDF4
        with netCDF4.Dataset(path, "r") as nc:
            names = set(nc.ncattrs())
            if "format" in names:
                return nc.getncattr("format") == RESULTS_FORMAT
            return all(a in names for a in _EARLIER_ATTRS)
    except Exception:  # noqa: BLE001 - a damaged or foreign file is simply not ours
        return False


def check_results_file(path, overwrite: bool = False, option: str | None = None):
    """Check, before any work, that a results file may be written at ``path``: nothing there,
    or (with ``overwrite``) a results file this toolkit wrote (:func:`is_results_file`).  A
    file it did not write is never replaced.  Returns the checked target for
    :func:`save_results`; an :class:`~bayes_concepts.output_files.OutputFileError` of one line
    otherwise (``option``, e.g. ``"--out"``, names the option in it)."""
    from .output_files import check_target
    return check_target(path, ours=is_results_file, what="results file", overwrite=overwrite, option=option)


def save_results(ds: xr.Dataset, path, overwrite: bool = False, target=None) -> Path:
    """Write ``ds`` to netCDF at ``path``, in one piece, never over a file the toolkit did not write.

    ``path`` must hold nothing, or with ``overwrite`` a results file written earlier by the
    toolkit (recognised by the attribute ``format`` every results file gets,
    :data:`RESULTS_FORMAT`); anything else -- notes, a figure, a link -- is refused, whatever
    ``overwrite`` says.  ``target``: the result of :func:`check_results_file` called for
    ``path`` before the work (a command checks its ``--out`` first); the file then replaces
    only what was there at that check.  The data go to a temporary file of this write's own
    in the same folder, put in place only when whole: of two writes of one path at once
    exactly one succeeds, the other raises
    :class:`~bayes_concepts.output_files.ConcurrentWriteError` (see
    :mod:`bayes_concepts.output_files`).

    Missing parent folders of ``path`` are created (as ``space build`` creates the folders
    above its output).  A ``path`` that is a directory, a parent that is a file, or a folder
    that cannot be written raises :class:`ResultsError` naming the path."""
    from .output_files import write_file
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
    if target is None:
        target = check_results_file(path, overwrite)
    elif Path(target.path) != path:
        raise ValueError(f"save_results: target {target.path} was checked for another path than {path}")
    out = ds.copy(deep=False)
    out.attrs = {**ds.attrs, "format": RESULTS_FORMAT}
    # deflate at level 1 without the byte shuffle (netCDF4's default with zlib): on a paper-scale
    # CURI results file (9 splits x 2 x 20,000 episodes) 1.0 s to write and 39 MB, against 2.9 s
    # and 52 MB with the shuffle at level 4, one run each (float64 scores and probabilities: the
    # shuffle's byte planes compress worse here); lossless either way
    enc = {v: {"zlib": True, "complevel": 1, "shuffle": False} for v in out.data_vars}
    return write_file(target, lambda tmp: out.to_netcdf(tmp, engine="netcdf4", encoding=enc), what="results file")


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
    loaded.attrs.pop("format", None)  # how the file says it is ours (RESULTS_FORMAT), not a setting of the run
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


# ------------------------------------------------------------------ the attributes: one schema, one writer, one reader
@dataclass(frozen=True)
class Attribute:
    """One attribute of a results Dataset: ``kind`` (``text``, ``int``, ``float`` or ``json``: a
    value netCDF cannot hold, stored as JSON text) and ``meaning``; a json attribute's keys are
    written sorted unless ``sort_keys`` is False (lists whose order is the run's)."""

    kind: str
    meaning: str
    sort_keys: bool = True


#: Every attribute a results Dataset carries: name -> :class:`Attribute`.  The one writer is
#: :func:`set_attrs`, the one reader :func:`get_attr`; a suite declares its own with
#: :func:`declare_attribute`.
ATTRIBUTES: dict = {}


def declare_attribute(name: str, kind: str, meaning: str, sort_keys: bool = True) -> Attribute:
    """Declare the results attribute ``name`` (see :class:`Attribute`); declaring it again the
    same way is a no-op, another way an error."""
    if kind not in ("text", "int", "float", "json"):
        raise ValueError(f"results attribute {name!r}: kind must be text, int, float or json, got {kind!r}")
    attr = Attribute(kind, meaning, sort_keys)
    if ATTRIBUTES.setdefault(name, attr) != attr:
        raise ValueError(f"results attribute {name!r} is declared already, otherwise")
    return attr


for _name, _kind, _meaning, *_sort in (
        ("space_manifest_sha256", "text", "sha256 of the space's manifest.json (\"unsaved\" for a space never saved)"),
        ("oracle_settings", "json", "the oracles' OracleSettings.as_dict(): prior, beta, likelihood, epsilon, "
                                    "weak_empty, ap_tolerance"),
        ("ap_tolerance", "float", "the largest error allowed in each episode's AP (a fraction; 0: exact)"),
        ("seed", "int", "seed of the episodes (each cell's from it, its split and its negatives)"),
        ("episodes_per_cell", "int", "test episodes per (split, negatives)"),
        ("query_negatives", "text", "how the query sets' negatives were drawn (hard, easy, random, or "
                                    "\"same as support\")"),
        ("hard_mode", "text", "how hard negatives were drawn (a name of episodes.hard_negative_modes)"),
        ("toolkit_version", "text", "bayes_concepts.__version__ of the run"),
        ("metric_units", "text", "the units of the metrics"),
        ("learners", "json", "learner -> what it is: oracle, reference learner, rung, or a model with its "
                             "architecture, training split, seed, weights checksum and where it was scored"),
        ("splits", "json", "split -> the spec it was made from, its source file, the protocol that treated it, "
                           "its concepts' sha256 and sizes (gap.split_records)"),
        ("episode_shape", "json", "split -> its episodes' shape: positives, negatives, query_positives, "
                                  "query_negatives"),
        ("excluded", "json", "split -> its test concepts too small for its shape (count, first names, rule) and "
                             "usable count; not_scored: splits left out and why; space, space_notes: what the "
                             "space's build left out and noted"),
        ("gap_parts", "json", "split -> the concepts each of the four oracles knows (compute_gap(parts=True))"),
        ("protocol", "text", "the protocol the results were computed with"),
        ("protocol_info", "json", "that protocol as Protocol.info(): splits folder, settings, negatives, mode, "
                                  "strong_knows_all, drop_mixed"),
        ("protocol_overrides", "json", "the protocol's values this run replaced (settings, query_negatives, "
                                       "hard_mode)"),
        ("ladder", "json", "the ladder's rungs in order: label, rung, knobs, definition", False),
        ("ladder_models", "json", "models scored beside the rungs, in order", False),
        ("ladder_skipped", "json", "default rungs that could not apply to the space, and why", False),
        ("solved_within", "float", "a rung within this many mAP points of the strong oracle has solved a split"),
):
    declare_attribute(_name, _kind, _meaning, *_sort)


def set_attrs(ds, **values):
    """Write the attributes ``values`` on results ``ds`` as :data:`ATTRIBUTES` declares them (a
    json one as JSON text); an undeclared name is an error.  Returns ``ds``."""
    for name, value in values.items():
        attr = ATTRIBUTES.get(name)
        if attr is None:
            raise ResultsError(f"results attribute {name!r} is not declared (results.declare_attribute)")
        ds.attrs[name] = (json.dumps(value, sort_keys=attr.sort_keys, default=str) if attr.kind == "json"
                          else int(value) if attr.kind == "int" else float(value) if attr.kind == "float"
                          else str(value))
    return ds


def get_attr(ds, name: str, default=None):
    """The attribute ``name`` of results ``ds`` as :data:`ATTRIBUTES` declares it (a json one
    parsed), ``default`` when the results lack it; JSON that does not parse is a ResultsError."""
    if name not in ds.attrs:
        return default
    value = ds.attrs[name]
    attr = ATTRIBUTES.get(name)
    if attr is not None and attr.kind == "json" and isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise ResultsError(f"results: attribute {name!r} is not valid JSON") from None
    return value


def attrs_info(ds) -> dict:
    """The run's settings from a results Dataset's attributes, for --json output (each as
    :func:`get_attr` reads it; the oracle settings under ``settings``)."""
    return {"settings" if key == "oracle_settings" else key: get_attr(ds, key) for key in ds.attrs}
