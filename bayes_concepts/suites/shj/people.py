"""People's data for the SHJ fit: what a study measured, read as counts, named and checked.

A study of the six structures is a table of errors per type and block.  Three formats are
read (columns in any order; :func:`read_human`):

* **counts** ``type,block,errors,trials`` (optionally ``subject`` first: one row per learner,
  type and block, summed over the learners);
* **rates** ``type,block,p_error`` with ``n`` (trials behind each cell) as a column or given
  once (``trials=``, ``--trials``); the errors are round(p·n).  The published table of
  Nosofsky et al. (1994) is a rates table without ``n``: recognised by its sha256, its
  cells are 640 trials (40 learners × 16 trials);
* **trial by trial** ``subject,type,block,trial`` and either ``correct`` (1/0, true/false) or
  ``response,category`` (an error when they differ), ``stimulus`` optional: one row per
  answer, counted per type and block.

Every format becomes a :class:`HumanData`: errors and trials per cell (int64 (6, B)), the
rates as given, the study's name (default the file's stem), the file's sha256, and whether it
is the published table.  :func:`read_structures` reads the category structures and names them:
Shepard, Hovland & Jenkins' six when each type is its SHJ type up to the symmetries of the cube
and the swap of the two categories, otherwise the user's own (each type's category sizes and
the SHJ type it is equivalent to, if any, recorded); an unbalanced structure is refused unless
asked for.  :func:`people_order` gives the people's order of the types with its uncertainty
(from the counts) and :func:`order_agreement` the model's agreement with it over the posterior.
"""
from __future__ import annotations

import csv
import hashlib
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import xarray as xr

from ...errors import BayesConceptsError
from ...resources import data_file
from ...text_files import read_text

TYPES = ("I", "II", "III", "IV", "V", "VI")
#: Learners per type in Nosofsky et al. (1994).
LEARNERS_PER_TYPE = 40
#: The published table (``hypotheses/human/nosofsky1994_shj_errors.csv``): its sha256 and name.
PUBLISHED_SHA256 = "78520be4330d4d4d1fbebe5920187f74e7de4ab631a732de296671cf184c2f65"
PUBLISHED_NAME = "Nosofsky et al. 1994"
#: Trials per cell of the published table: 40 learners × 16 trials.
PUBLISHED_TRIALS = LEARNERS_PER_TYPE * 16
#: The shipped structures of Shepard, Hovland & Jenkins (1961).
SHJ_NAME = "Shepard, Hovland & Jenkins (1961)"
#: Most blocks a table may have.
MAX_BLOCKS = 1000

COUNTS, RATES, TRIALS = ("type", "block", "errors", "trials"), ("type", "block", "p_error"), \
    ("subject", "type", "block", "trial")
FORMATS_TEXT = ("a cell table (type,block,errors,trials; or type,block,p_error with n) or a trial-by-trial file "
                "(subject,type,block,trial and correct, or response and category; stimulus optional)")


class HumanDataError(BayesConceptsError):
    """A human-data table that cannot be read (names the file, line and field)."""


def sha256_of(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ============================================================================ reading tables
def _csv(path: Path):
    """(header, [(lineno, fields)]) of a CSV, blank lines skipped, fields stripped."""
    text = read_text(path, HumanDataError, "the human data")
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None or not any(h.strip() for h in header):
        raise HumanDataError(f"{path} line 1: expected a header, got an empty file")
    header = [h.strip().lower() for h in header]
    header[0] = header[0].lstrip("\ufeff")                           # a spreadsheet's byte-order mark
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise HumanDataError(f"{path} line 1: column {dup[0]} is given twice")
    rows = []
    for lineno, row in enumerate(reader, 2):
        if not row or not any(v.strip() for v in row):
            continue
        if len(row) != len(header):
            raise HumanDataError(f"{path} line {lineno}: expected {len(header)} fields, got {len(row)}")
        rows.append((lineno, [v.strip() for v in row]))
    return header, rows


def _rows(path: Path, columns: tuple) -> list:
    """The rows of a CSV whose header must be exactly ``columns``."""
    text = read_text(path, HumanDataError, "the human data")
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None or tuple(h.strip() for h in header) != columns:
        raise HumanDataError(f"{path} line 1: expected the header {','.join(columns)}, got "
                             f"{','.join(header) if header else 'an empty file'}")
    rows = []
    for lineno, row in enumerate(reader, 2):
        if not row or not any(v.strip() for v in row):
            continue
        if len(row) != len(columns):
            raise HumanDataError(f"{path} line {lineno}: expected {len(columns)} fields, got {len(row)}")
        rows.append((lineno, [v.strip() for v in row]))
    return rows


def _number(value, path, lineno, column, kind=float, low=None, high=None):
    if value == "":
        raise HumanDataError(f"{path} line {lineno}: {column} is empty")
    try:
        x = kind(value)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise HumanDataError(f"{path} line {lineno}: {column} {value!r} is not {what}") from None
    if (low is not None and x < low) or (high is not None and x > high) or (kind is float and not math.isfinite(x)):
        raise HumanDataError(f"{path} line {lineno}: {column} {value} is outside [{low}, {high}]")
    return x


def _format(path: Path, header: list) -> str:
    cols = set(header)
    if cols & {"trial", "correct", "response", "category"}:
        kind, need = "trial-by-trial file", list(TRIALS)
        if "correct" in cols and cols & {"response", "category"}:
            raise HumanDataError(f"{path} line 1: give correct, or response and category, not both")
        need += ["correct"] if "correct" in cols or not cols & {"response", "category"} else ["response", "category"]
        allowed = set(need) | {"stimulus"}
        fmt = "trials"
    elif cols & {"errors", "trials"}:
        kind, need, allowed, fmt = "cell table of counts", list(COUNTS), set(COUNTS) | {"subject"}, "counts"
    elif "p_error" in cols:
        kind, need, allowed, fmt = "cell table of rates", list(RATES), set(RATES) | {"n"}, "rates"
    else:
        raise HumanDataError(f"{path} line 1: expected the columns of {FORMATS_TEXT}; got {','.join(header)}")
    missing = [c for c in need if c not in cols]
    if missing:
        raise HumanDataError(f"{path} line 1: a {kind} needs the column{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(missing)} (has {','.join(header)})")
    extra = [c for c in header if c not in allowed]
    if extra:
        optional = sorted(allowed - set(need))
        raise HumanDataError(f"{path} line 1: column {extra[0]} does not belong in a {kind} (columns: "
                             f"{', '.join(need)}{'; optional ' + ', '.join(optional) if optional else ''})")
    return fmt


_TRUE, _FALSE = {"1", "true", "yes", "correct"}, {"0", "false", "no", "error", "wrong"}


def _read_trials(path, header, rows, block_size):
    """errors, trials (dict (type, block) -> int), subjects per type."""
    col = {c: i for i, c in enumerate(header)}
    answer = ["correct"] if "correct" in col else ["response", "category"]
    errors, trials, seen, per_block, subjects, empty = {}, {}, {}, {}, {}, {}
    for lineno, row in rows:
        subject = row[col["subject"]]
        if not subject:
            raise HumanDataError(f"{path} line {lineno}: subject is empty")
        t = _number(row[col["type"]], path, lineno, "type", int, 1, 6)
        subjects.setdefault((subject, t), lineno)
        if all(row[col[c]] == "" for c in ["block", "trial", *answer]):
            empty.setdefault((subject, t), lineno)      # a learner listed without a trial
            continue
        b = _number(row[col["block"]], path, lineno, "block", int, 1, MAX_BLOCKS)
        k = _number(row[col["trial"]], path, lineno, "trial", int, 1, None)
        key = (subject, t, b, k)
        if key in seen:
            raise HumanDataError(f"{path} line {lineno}: subject {subject} type {t} block {b} trial {k} is given "
                                 f"twice (line {seen[key]})")
        seen[key] = lineno
        if "stimulus" in col and row[col["stimulus"]] == "":
            raise HumanDataError(f"{path} line {lineno}: stimulus is empty (leave the column out if it is unknown)")
        if answer == ["correct"]:
            v = row[col["correct"]].lower()
            if v not in _TRUE | _FALSE:
                raise HumanDataError(f"{path} line {lineno}: correct {row[col['correct']]!r} is not 1/0 or "
                                     "true/false" if v else f"{path} line {lineno}: correct is empty")
            wrong = v in _FALSE
        else:
            r, c = row[col["response"]], row[col["category"]]
            for name, v in (("response", r), ("category", c)):
                if v == "":
                    raise HumanDataError(f"{path} line {lineno}: {name} is empty")
            wrong = r != c
        n = per_block[(subject, t, b)] = per_block.get((subject, t, b), 0) + 1
        if n > block_size:
            raise HumanDataError(f"{path} line {lineno}: subject {subject} has more than {block_size} trials in "
                                 f"type {t} block {b} (the observer's blocks show each of the stimuli "
                                 f"{block_size // 8} times)")
        errors[(t, b)] = errors.get((t, b), 0) + int(wrong)
        trials[(t, b)] = trials.get((t, b), 0) + 1
    with_trials = {(s, t) for s, t, _ in per_block}
    for (s, t), lineno in subjects.items():
        if (s, t) not in with_trials:
            raise HumanDataError(f"{path} line {lineno}: subject {s} (type {t}) has no trials")
        if (s, t) in empty:
            raise HumanDataError(f"{path} line {empty[(s, t)]}: block, trial and the answer are empty")
    per_type = {}
    for s, t in with_trials:
        per_type[t] = per_type.get(t, 0) + 1
    return errors, trials, per_type


def _read_cells(path, header, rows, fmt, n_given):
    col = {c: i for i, c in enumerate(header)}
    errors, trials, rates, seen, subj_trials, subj_line = {}, {}, {}, {}, {}, {}
    for lineno, row in rows:
        subject = row[col["subject"]] if "subject" in col else None
        if subject == "":
            raise HumanDataError(f"{path} line {lineno}: subject is empty")
        t = _number(row[col["type"]], path, lineno, "type", int, 1, 6)
        b = _number(row[col["block"]], path, lineno, "block", int, 1, MAX_BLOCKS)
        key = (subject, t, b)
        if key in seen:
            who = f"subject {subject} " if subject is not None else ""
            raise HumanDataError(f"{path} line {lineno}: {who}type {t} block {b} is given twice")
        seen[key] = lineno
        if fmt == "counts":
            e = _number(row[col["errors"]], path, lineno, "errors", int, 0, None)
            n = _number(row[col["trials"]], path, lineno, "trials", int, 0 if subject is not None else 1, None)
            if e > n:
                raise HumanDataError(f"{path} line {lineno}: errors {e} exceed trials {n}")
        else:
            p = _number(row[col["p_error"]], path, lineno, "p_error", float, 0.0, 1.0)
            if "n" in col:
                n = _number(row[col["n"]], path, lineno, "n", int, 1, None)
            else:
                n = n_given
            e = int(round(p * n))
            rates[(t, b)] = p
        errors[(t, b)] = errors.get((t, b), 0) + e
        trials[(t, b)] = trials.get((t, b), 0) + n
        if subject is not None:
            subj_trials[(subject, t)] = subj_trials.get((subject, t), 0) + n
            subj_line.setdefault((subject, t), lineno)
    for key, n in subj_trials.items():
        if n == 0:
            raise HumanDataError(f"{path} line {subj_line[key]}: subject {key[0]} (type {key[1]}) has no trials")
    per_type = None
    if subj_trials:
        per_type = {}
        for s, t in subj_trials:
            per_type[t] = per_type.get(t, 0) + 1
    return errors, trials, rates, per_type


def _grid(path, errors, trials):
    types = sorted({k[0] for k in trials})
    if types != list(range(1, 7)):
        raise HumanDataError(f"{path}: needs types 1 to 6, has {', '.join(map(str, types)) or 'none'}")
    n_blocks = max(k[1] for k in trials)
    for t in types:
        missing = [b for b in range(1, n_blocks + 1) if (t, b) not in trials]
        if missing:
            raise HumanDataError(f"{path}: type {t} lacks block {missing[0]} (every type needs blocks 1..{n_blocks})")
        empty = [b for b in range(1, n_blocks + 1) if trials[(t, b)] == 0]
        if empty:
            raise HumanDataError(f"{path}: type {t} block {empty[0]} has no trials")
    e = np.array([[errors[(t, b)] for b in range(1, n_blocks + 1)] for t in types], np.int64)
    n = np.array([[trials[(t, b)] for b in range(1, n_blocks + 1)] for t in types], np.int64)
    return e, n


# ============================================================================ the study
@dataclass(frozen=True)
class HumanData:
    """A study's errors per type and block, as counts, with its name and provenance.

    errors, trials: int64 (6, B); rates: float64 (6, B), the proportions as given (a rates
    table) or errors/trials; name: the study's name; source: the file (None for an array);
    sha256: the file's; format: ``counts``, ``rates``, ``trials`` (trial by trial) or
    ``array``; published: whether it is Nosofsky et al.'s (1994) table (by sha256);
    subjects: learners per type (a file with a subject column), else None."""

    errors: np.ndarray
    trials: np.ndarray
    rates: np.ndarray
    name: str
    source: str | None = None
    sha256: str | None = None
    format: str = "array"
    published: bool = False
    subjects: tuple | None = None

    @property
    def n_blocks(self) -> int:
        return int(self.errors.shape[1])

    def table(self) -> xr.DataArray:
        """The rates as a DataArray (type 1..6, block 1..B)."""
        da = xr.DataArray(np.asarray(self.rates, np.float64), dims=("type", "block"),
                          coords={"type": np.arange(1, 7), "block": np.arange(1, self.n_blocks + 1)}, name="p_error")
        da.attrs.update({"source": Path(self.source).name if self.source else self.name, "name": self.name,
                         "units": "proportion of trials answered wrongly"})
        return da

    def trials_per_cell(self):
        """One number when every cell has as many trials, else {"min", "max"}."""
        lo, hi = int(self.trials.min()), int(self.trials.max())
        return lo if lo == hi else {"min": lo, "max": hi}

    def provenance(self) -> dict:
        """JSON-ready: name, file, sha256, format, whether published, and the counts."""
        return {"name": self.name, "file": self.source, "sha256": self.sha256, "format": self.format,
                "published": bool(self.published), "blocks": self.n_blocks,
                "trials_per_cell": self.trials_per_cell(), "errors_total": int(self.errors.sum()),
                "trials_total": int(self.trials.sum()),
                "subjects_per_type": (dict(zip(TYPES, map(int, self.subjects))) if self.subjects else None),
                "errors": self.errors.tolist(), "trials": self.trials.tolist()}


def _check_counts(errors, trials, where):
    if errors.shape != trials.shape or errors.ndim != 2 or errors.shape[0] != 6 or errors.shape[1] < 1:
        raise HumanDataError(f"{where}: errors and trials must both be (6, blocks), got {errors.shape} and "
                             f"{trials.shape}")
    if (trials < 1).any():
        t, b = np.argwhere(trials < 1)[0]
        raise HumanDataError(f"{where}: type {t + 1} block {b + 1} has no trials")
    if (errors < 0).any() or (errors > trials).any():
        t, b = np.argwhere((errors < 0) | (errors > trials))[0]
        raise HumanDataError(f"{where}: type {t + 1} block {b + 1}: errors {errors[t, b]} outside 0..trials "
                             f"{trials[t, b]}")


def read_human(source=None, *, trials=None, name: str | None = None, block_size: int = 16) -> HumanData:
    """A study as :class:`HumanData` (see the module docstring for the formats).

    source: a CSV file (default the published table), a :class:`HumanData` (renamed by
    ``name``), or an array (6, B) of rates, which needs ``trials``; trials: the trials behind
    each cell of a rates table without an ``n`` column (a whole number, or (6, B)); refused for
    tables that carry their counts.  name: the study's name (default the file's stem; the
    published table is ``Nosofsky et al. 1994``).  block_size: most trials a learner may
    have in one block (a trial-by-trial file)."""
    if isinstance(source, HumanData):
        if trials is not None:
            raise HumanDataError("trials: the study has its counts already")
        return replace(source, name=name) if name else source
    if source is not None and not isinstance(source, (str, Path)):
        rates = np.asarray(source, np.float64)
        if rates.ndim != 2 or rates.shape[0] != 6:
            raise HumanDataError(f"the human table must be (6, blocks), got {rates.shape}")
        if trials is None:
            raise HumanDataError("a table of rates needs the trials behind each cell (trials=)")
        if not np.isfinite(rates).all() or (rates < 0).any() or (rates > 1).any():
            raise HumanDataError("the human table's rates must lie in [0, 1]")
        n = np.broadcast_to(np.asarray(trials, np.int64), rates.shape).copy()
        e = np.rint(rates * n).astype(np.int64)
        _check_counts(e, n, "the human table")
        return HumanData(e, n, rates, name or "unnamed table")
    path = Path(source) if source is not None else data_file("human", "nosofsky1994_shj_errors.csv")
    if not path.is_file():
        raise HumanDataError(f"{path}: no such file")
    header, rows = _csv(path)
    fmt = _format(path, header)
    sha = sha256_of(path)
    published = sha == PUBLISHED_SHA256
    if trials is not None:
        trials = int(trials)
        if trials < 1:
            raise HumanDataError(f"trials must be a whole number >= 1, got {trials}")
        if fmt != "rates" or "n" in header:
            raise HumanDataError(f"{path}: --trials is for a table of rates without an n column; this "
                                 f"{'file' if fmt != 'rates' else 'table'} has its counts")
    if not rows:
        raise HumanDataError(f"{path}: no rows below the header")
    subjects, rates = None, None
    if fmt == "trials":
        errors, counts, per_type = _read_trials(path, header, rows, block_size)
    else:
        n_given = trials
        unknown = fmt == "rates" and "n" not in header and n_given is None and not published
        if fmt == "rates" and "n" not in header and n_given is None:
            n_given = PUBLISHED_TRIALS if published else 1       # unknown: every row is checked first
        errors, counts, rates, per_type = _read_cells(path, header, rows, fmt, n_given)
    e, n = _grid(path, errors, counts)
    if fmt != "trials" and unknown:
        raise HumanDataError(f"{path}: a table of rates needs the trials behind each cell: add a column n "
                             "(type,block,p_error,n), give --trials N, or give counts (type,block,errors,trials)")
    if per_type is not None:
        subjects = tuple(int(per_type.get(t, 0)) for t in range(1, 7))
    if fmt == "rates" and "subject" not in header:
        r = np.array([[rates[(t, b)] for b in range(1, e.shape[1] + 1)] for t in range(1, 7)], np.float64)
    else:
        r = e / n
    default = PUBLISHED_NAME if published else path.stem
    return HumanData(e, n, r, name or default, str(path), sha, fmt, published, subjects)


def human_errors(path=None, trials=None) -> xr.DataArray:
    """The human error table: float64 DataArray (type 1..6, block 1..B), proportions of errors
    (:func:`read_human`; default Nosofsky et al. 1994's table)."""
    return read_human(path, trials=trials).table()


def error_counts(p_error, n_trials: int = PUBLISHED_TRIALS) -> np.ndarray:
    """int64 counts of errors: round(p·n) (n = learners × trials per block)."""
    return np.rint(np.asarray(p_error, np.float64) * n_trials).astype(np.int64)


# ============================================================================ the structures
@dataclass(frozen=True)
class Structures:
    """Six category structures over the stimuli, named.

    labels: bool (6, N); name; source: the file (None: an array); sha256; kind ``shj`` (type k
    is Shepard, Hovland & Jenkins' type k, up to the cube's symmetries and the swap of the
    categories) or ``own``; sizes: int (6, 2) stimuli in category 0 and 1; shj_types: the SHJ
    type each is equivalent to (None: none, e.g. unbalanced)."""

    labels: np.ndarray
    name: str
    source: str | None
    sha256: str | None
    kind: str
    sizes: np.ndarray
    shj_types: tuple

    @property
    def unbalanced(self) -> bool:
        return bool((self.sizes[:, 0] != self.sizes[:, 1]).any())

    def provenance(self) -> dict:
        return {"name": self.name, "file": self.source, "sha256": self.sha256, "kind": self.kind,
                "unbalanced": self.unbalanced,
                "types": {TYPES[i]: {"sizes": [int(a), int(b)], "shj_type": self.shj_types[i]}
                          for i, (a, b) in enumerate(self.sizes)}}


def shj_structures(path=None, stimuli=None) -> np.ndarray:
    """bool (6, N): the category of every stimulus under each type I..VI.

    path: a CSV ``type,d1,d2,d3,category`` (default ``hypotheses/human/shj_structures.csv``);
    stimuli: the stimuli as scene dicts (:func:`~bayes_concepts.suites.shj.boolean.stimulus_scenes`),
    whose attribute names must be the file's dimension columns (default: d1 d2 d3 coded 0/1,
    stimulus j = 4·d1 + 2·d2 + d3).  Only read: :func:`read_structures` checks and names them."""
    path = Path(path) if path is not None else data_file("human", "shj_structures.csv")
    dims = ("d1", "d2", "d3")
    rows = _rows(path, ("type",) + dims + ("category",))
    if stimuli is None:
        keys = [tuple((j >> (2 - i)) & 1 for i in range(3)) for j in range(8)]
    else:
        objs = [s["objects"][0] for s in stimuli]
        if any(set(o) != set(dims) for o in objs):
            raise HumanDataError(f"{path}: the stimuli have dimensions {', '.join(sorted(objs[0]))}, the file "
                                 f"{', '.join(dims)}")
        keys = [tuple(int(o[d]) for d in dims) for o in objs]
    index = {k: j for j, k in enumerate(keys)}
    out = np.full((6, len(keys)), -1, np.int64)
    for lineno, (t, a, b, c, cat) in rows:
        t = _number(t, path, lineno, "type", int, 1, 6)
        key = tuple(_number(v, path, lineno, d, int, 0, 1) for v, d in zip((a, b, c), dims))
        if out[t - 1, index[key]] != -1:
            raise HumanDataError(f"{path} line {lineno}: type {t} stimulus {key} is given twice")
        out[t - 1, index[key]] = _number(cat, path, lineno, "category", int, 0, 1)
    missing = np.argwhere(out < 0)
    if len(missing):
        t, j = missing[0]
        raise HumanDataError(f"{path}: type {t + 1} lacks stimulus {keys[j]} (every type labels all 8 stimuli)")
    return out.astype(bool)


def _canonical(labels, perms) -> tuple:
    """The smallest labelling of a structure's orbit under ``perms`` and the category swap."""
    moved = np.asarray(labels, bool)[np.asarray(perms)]                     # (G, N)
    forms = np.concatenate([moved, ~moved]).astype(np.int64)
    return tuple(forms[np.lexsort(forms.T[::-1])][0].tolist())


def shj_classes(labels, codes=None) -> tuple:
    """The SHJ type (``"I"`` .. ``"VI"``) each structure (bool (K, N)) is equivalent to, up to the
    symmetries of the stimuli (codes (N, A), default three binary dimensions) and the swap of
    the two categories; None where none."""
    from ...cogsci.sequential import stimulus_symmetries
    base = np.array([[(j >> (2 - i)) & 1 for i in range(3)] for j in range(8)], np.int64)
    codes = base if codes is None else np.asarray(codes, np.int64)
    labels = np.asarray(labels, bool)
    if codes.shape != base.shape or labels.shape[1] != 8:
        return tuple(None for _ in labels)
    perms = stimulus_symmetries(codes)
    ref_labels = shj_structures(None)
    # the shipped structures are over the base stimuli; map them onto ``codes`` order
    order = [int(4 * r[0] + 2 * r[1] + r[2]) for r in codes.tolist()]
    ref = {_canonical(ref_labels[k][order], perms): TYPES[k] for k in range(6)}
    return tuple(ref.get(_canonical(s, perms)) for s in labels)


def read_structures(source=None, *, stimuli=None, codes=None, unbalanced: bool = False,
                    name: str | None = None) -> Structures:
    """Six structures, checked and named (:class:`Structures`).

    source: a CSV (``type,d1,d2,d3,category``; default Shepard, Hovland & Jenkins'), an array
    bool (6, N) or a :class:`Structures`; stimuli, codes: the space's stimuli (scene dicts) and
    their value codes (default three binary dimensions in stimulus order); unbalanced: accept
    a type whose categories differ in size (refused by default: the six SHJ structures split
    the stimuli 4/4), named as such.  A type with one category only is always refused."""
    if isinstance(source, Structures):
        return source
    if source is None or isinstance(source, (str, Path)):
        path = Path(source) if source is not None else data_file("human", "shj_structures.csv")
        if not path.is_file():
            raise HumanDataError(f"{path}: no such file")
        labels = shj_structures(path, stimuli)
        where, src, sha = str(path), str(path), sha256_of(path)
        default = SHJ_NAME if source is None else path.stem
    else:
        labels = np.asarray(source, bool)
        if labels.ndim != 2 or labels.shape[0] != 6:
            raise HumanDataError(f"the structures must be (6, stimuli), got {labels.shape}")
        where, src, sha, default = "the structures", None, None, "own structures"
    ones = labels.sum(axis=1)
    sizes = np.stack([labels.shape[1] - ones, ones], axis=1).astype(np.int64)
    for i, (a, b) in enumerate(sizes):
        if a == 0 or b == 0:
            raise HumanDataError(f"{where}: type {i + 1} puts all {labels.shape[1]} stimuli in category "
                                 f"{0 if b == 0 else 1}: there is nothing to learn")
        if a != b and not unbalanced:
            raise HumanDataError(f"{where}: type {i + 1} splits the stimuli {a}/{b} (category 0/1), not "
                                 f"{labels.shape[1] // 2}/{labels.shape[1] // 2}: an unbalanced structure is none of "
                                 "Shepard, Hovland & Jenkins' (give --unbalanced to fit it as your own)")
    classes = shj_classes(labels, codes)
    kind = "shj" if classes == TYPES else "own"
    return Structures(labels, name or default, src, sha, kind, sizes, classes)


# ============================================================================ orders
def type_order(means) -> str:
    """The order of the six types by mean error, easiest first (``I < II < III = IV ...`` uses
    ``<`` between different values, to 3 decimals)."""
    means = np.round(np.asarray(means, np.float64), 3)
    order = np.argsort(means, kind="stable")
    parts = [TYPES[order[0]]]
    for a, b in zip(order[:-1], order[1:]):
        parts.append(("= " if means[b] == means[a] else "< ") + TYPES[b])
    return " ".join(parts)


def _pairs_text(a, b) -> str:
    return f"{TYPES[a]} < {TYPES[b]}"


def people_order(data: HumanData, *, prob: float = 0.95, n_draws: int = 4000, seed: int = 0) -> dict:
    """The people's order of the six types by mean error over the blocks, with its uncertainty.

    Each cell's error rate is drawn from its posterior given the counts (Beta(k + ½, n - k + ½),
    Jeffreys), ``n_draws`` times (seeded); a type's mean error is the mean of its blocks'.  The
    types are sorted by their observed mean errors; a type joins the group before it unless it
    is more error-prone than every member of that group with probability >= ``prob``.
    Returns ``order`` (``"I < II < {III, IV, V} < VI"``: braces join types the counts do not
    tell apart), ``point`` (the observed order, :func:`type_order` style), ``prob``,
    ``comparisons`` ({"A < B": P} for every pair of types in different groups: what people's
    data say), ``groups``, ``means`` (observed) and ``draws`` (n_draws, 6).  The types inside
    braces are listed in their own order (I..VI), not by their means."""
    if not 0.5 < prob < 1:
        raise BayesConceptsError(f"prob must be in (0.5, 1), got {prob}")
    rng = np.random.default_rng(seed)
    k, n = data.errors.astype(np.float64), data.trials.astype(np.float64)
    draws = rng.beta(k + 0.5, n - k + 0.5, size=(int(n_draws),) + k.shape).mean(axis=2)     # (draws, 6)
    means = np.asarray(data.rates, np.float64).mean(axis=1)
    below = (draws[:, :, None] < draws[:, None, :]).mean(axis=0)                            # P(a < b)
    order = np.argsort(np.round(means, 12), kind="stable")
    groups = [[int(order[0])]]
    for t in order[1:]:
        if all(below[g, t] >= prob for g in groups[-1]):
            groups.append([int(t)])
        else:
            groups[-1].append(int(t))
    text = " < ".join(TYPES[g[0]] if len(g) == 1 else "{" + ", ".join(TYPES[x] for x in sorted(g)) + "}"
                      for g in groups)
    comparisons = {}
    for i, ga in enumerate(groups):
        for gb in groups[i + 1:]:
            for a in ga:
                for b in gb:
                    comparisons[_pairs_text(a, b)] = float(below[a, b])
    return {"order": text, "point": type_order(means), "prob": float(prob), "comparisons": comparisons,
            "groups": [[TYPES[x] for x in g] for g in groups], "means": means, "draws": draws,
            "n_draws": int(n_draws), "seed": int(seed)}


def _pair_index(name: str):
    a, b = name.split(" < ")
    return TYPES.index(a), TYPES.index(b)


def _tau(x, y) -> float:
    """Kendall's tau-a of two vectors of six (ties count as neither concordant nor discordant)."""
    x, y = np.asarray(x), np.asarray(y)
    iu = np.triu_indices(len(x), 1)
    sx = np.sign(x[:, None] - x[None, :])[iu]
    sy = np.sign(y[:, None] - y[None, :])[iu]
    return float((sx * sy).sum() / len(sx))


def order_agreement(people: dict, model_means, model_draws, *, prob: float = 0.9, name: str = "people") -> dict:
    """How well the model's order of the types agrees with the people's (:func:`people_order`).

    model_means: (6,) the posterior-mean mean errors; model_draws: (D, 6) the same per
    posterior draw.  Returns ``comparisons`` ({"A < B": the fraction of posterior draws that obey
    it} for every comparison people's counts support), ``probability`` (the fraction of draws
    obeying all of them at once), ``failed`` (those the posterior-mean means break, at the 3
    decimals the orders are printed with: a tie is named), ``kendall_tau`` (rank agreement of
    the model's and the people's mean errors: at the posterior mean, and its mean and ``prob``
    interval over the posterior draws, each paired with a draw of the people's means) and
    ``verdict``: ``agrees`` (nothing failed), ``disagrees`` (Kendall's tau at the posterior mean
    <= 0: the model orders the types against people more than with them), ``partly agrees``,
    or ``no order`` (people's counts tell no two types apart); ``text`` says it in a sentence."""
    m = np.round(np.asarray(model_means, np.float64), 3)
    md = np.asarray(model_draws, np.float64)
    comps = list(people["comparisons"])
    per, failed = {}, []
    ok = np.ones(len(md), bool)
    for c in comps:
        a, b = _pair_index(c)
        hold = md[:, a] < md[:, b]
        per[c] = float(hold.mean())
        ok &= hold
        if m[a] == m[b]:
            failed.append(f"{c} (ties {TYPES[a]} and {TYPES[b]})")
        elif not m[a] < m[b]:
            failed.append(c)
    pd_ = people["draws"]
    taus = np.array([_tau(pd_[i % len(pd_)], md[i]) for i in range(len(md))])
    lo, hi = (1 - prob) / 2, (1 + prob) / 2
    tau = _tau(np.round(people["means"], 3), m)
    if not comps:
        verdict = "no order"
        text = (f"the counts of {name} tell no two types apart at {people['prob']:.0%}: there is no order to agree "
                "with")
    else:
        verdict = "agrees" if not failed else ("disagrees" if tau <= 0 else "partly agrees")
        text = (f"the model's order {verdict} with people's in {name} ({people['order']}): "
                f"{float(ok.mean()):.0%} of posterior draws obey all {len(comps)} comparisons the counts support"
                + (f"; the posterior-mean errors (to 3 decimals) fail {', '.join(failed)}" if failed else ""))
    return {"verdict": verdict, "text": text, "probability": float(ok.mean()), "comparisons": per, "failed": failed,
            "kendall_tau": {"at_mean": tau, "mean": float(taus.mean()), "low": float(np.quantile(taus, lo)),
                            "high": float(np.quantile(taus, hi)), "prob": float(prob)}}


__all__ = ["TYPES", "LEARNERS_PER_TYPE", "PUBLISHED_SHA256", "PUBLISHED_NAME", "PUBLISHED_TRIALS", "SHJ_NAME",
           "HumanDataError", "HumanData", "read_human", "human_errors", "error_counts", "Structures",
           "shj_structures", "shj_classes", "read_structures", "type_order", "people_order", "order_agreement",
           "sha256_of"]
