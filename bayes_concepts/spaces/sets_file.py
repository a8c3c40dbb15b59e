"""Concepts given as item sets in a file: the reader behind ``space from-sets``.

A *sets file* lists concepts and their items, in one of two forms (chosen by the file's
suffix):

* JSON Lines (``.jsonl``): one object per line, ``{"concept": NAME, "items": [ID, ...]}``
  (``name`` is accepted for ``concept``; ids are strings or whole numbers, read as their text);
* CSV (``.csv``; ``.tsv`` tab-separated) with a header: columns ``concept`` and ``item``, one
  row per (concept, item) membership, the rows of a concept anywhere in the file; or columns
  ``concept`` and ``items``, one row per concept, its ids separated by spaces or ``;``.

An optional *items file* (same two forms: JSON Lines objects or CSV rows with an ``item``
column) lists the items, in their order, with any further keys or columns as the items'
labels (the learners' schema features: one-hot per label).  Without one, the items are the
ids the sets file names, in order of first appearance, labelled by their name.

What is refused (one line naming the file and line, :class:`SetsFileError`): a file that
cannot be read or parsed, a missing key or column, a concept named twice (JSON Lines, CSV
``items`` form), an item id the items file does not list, an item listed twice in the items
file, a name that is empty.  What is excluded or noted, counted with the first few names
(:attr:`SetsFile.exclusions`, :attr:`SetsFile.notes`): concepts with no item or fewer than
``min_count`` items (excluded: not concepts), an item repeated within one concept (counted
once), items of the items file in no concept (kept: negatives of every concept), concepts
with the same items as another (kept, one synonym class).

>>> sets = read_sets("concepts.jsonl", items="items.csv")          # doctest: +SKIP
>>> space = sets.space(min_count=1, seed=0)                         # doctest: +SKIP
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..text_files import read_text
from .extension_space import ExtensionSpace, ExtensionSpaceError

__all__ = ["SetsFile", "SetsFileError", "read_sets", "FIRST"]

#: names shown per kind of exclusion
FIRST = 5


class SetsFileError(ExtensionSpaceError):
    """A sets file or items file that cannot be read as one (one line naming file and line)."""


@dataclass
class SetsFile:
    """What a sets file (and its items file) hold.

    ``names``: concept names (unique, as given); ``members``: per concept the item indices
    (int64 arrays into ``item_names``, in the order first given, repeats removed);
    ``item_names``: the N items; ``item_labels``: ``{label: N values}`` or None;
    ``exclusions`` / ``notes``: ``{kind: {"count", "first", "rule"}}``."""
    source: str
    names: list
    members: list
    item_names: list
    item_labels: dict | None
    exclusions: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)

    def space(self, min_count: int = 1, test_positives: int = 3, seed: int = 0,
              spec_files: dict | None = None) -> ExtensionSpace:
        """The :class:`ExtensionSpace` of these sets: concepts with fewer than ``min_count``
        items are left out and counted in :attr:`exclusions` (``too_small``); concepts with
        the same items as another are counted in :attr:`notes` (``same_items``)."""
        if min_count < 1:
            raise SetsFileError(f"min_count must be >= 1, got {min_count}")
        keep = [i for i, m in enumerate(self.members) if len(m) >= min_count]
        small = [self.names[i] for i, m in enumerate(self.members) if 0 < len(m) < min_count]
        _record(self.exclusions, "too_small", small,
                f"fewer than {min_count} items (--min-count): not concepts")
        if not keep:
            raise SetsFileError(f"{self.source}: no concept has {min_count} or more items: no space")
        first = {}
        same = []
        for i in keep:
            key = tuple(sorted(self.members[i].tolist()))
            if key in first:
                same.append(f"{self.names[i]} = {self.names[first[key]]}")
            else:
                first[key] = i
        _record(self.notes, "same_items", same, "the same items as another concept: both kept, one synonym class")
        return ExtensionSpace.from_extensions(
            [self.members[i] for i in keep], [self.names[i] for i in keep], n_items=len(self.item_names),
            item_names=self.item_names, item_labels=self.item_labels, min_count=1,
            test_positives=test_positives, seed=seed,
            params={"sets_from": Path(self.source).name, "min_count": int(min_count),
                    "excluded": {k: int(v["count"]) for k, v in self.exclusions.items()}},
            spec_files=spec_files)

    def exclusion_lines(self) -> list:
        """``excluded: 2 empty concepts (a, b): ...`` and ``note: ...`` lines, one per kind."""
        return _lines(self.exclusions, "excluded: ") + _lines(self.notes, "note: ")


_WORDS = {"empty": ("concept with no item", "concepts with no item"),
          "too_small": ("concept too small", "concepts too small"),
          "repeated_items": ("item repeated within a concept", "items repeated within a concept"),
          "unused_items": ("item of the items file in no concept", "items of the items file in no concept"),
          "same_items": ("concept with the same items as another", "concepts with the same items as another")}


def _record(where: dict, kind: str, names: list, rule: str) -> None:
    if names:
        where[kind] = {"count": len(names), "first": [str(x) for x in names[:FIRST]], "rule": rule}


def _lines(rec: dict, prefix: str) -> list:
    out = []
    for kind, r in rec.items():
        n = int(r["count"])
        more = f", and {n - len(r['first']):,} more" if n > len(r["first"]) else ""
        out.append(f"{prefix}{n:,} {_WORDS[kind][n != 1]} ({', '.join(r['first'])}{more}): {r['rule']}")
    return out


def _id_text(value, where: str) -> str:
    """An item id as text: a non-empty string, or a whole number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise SetsFileError(f"{where}: an item id must be a string or a whole number, got {json.dumps(value)}")
    text = str(value).strip()
    if not text:
        raise SetsFileError(f"{where}: an empty item id")
    return text


def _records(path: Path, what: str) -> tuple:
    """``(form, [(line, {key: value}), ...])`` of a JSON Lines or CSV/TSV file."""
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".csv", ".tsv"):
        raise SetsFileError(f"{path}: a {what} must be JSON Lines (.jsonl) or CSV (.csv, .tsv with tabs), "
                            f"not {suffix or 'a file without suffix'}")
    text = read_text(path, SetsFileError, what)
    rows = []
    if suffix == ".jsonl":
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SetsFileError(f"{path} line {n}: not JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise SetsFileError(f"{path} line {n}: expected a JSON object, got {type(obj).__name__}")
            rows.append((n, obj))
        return "jsonl", rows
    reader = csv.reader(io.StringIO(text), delimiter="\t" if suffix == ".tsv" else ",")
    try:
        table = [(n, r) for n, r in enumerate(reader, 1) if any(c.strip() for c in r)]
    except csv.Error as exc:
        raise SetsFileError(f"{path} line {reader.line_num}: not CSV ({exc})") from None
    if not table:
        raise SetsFileError(f"{path}: empty (a header line is needed)")
    header = [c.strip() for c in table[0][1]]
    if len(set(header)) != len(header) or "" in header:
        raise SetsFileError(f"{path} line {table[0][0]}: the header repeats a column or has an empty one")
    for n, r in table[1:]:
        if len(r) != len(header):
            raise SetsFileError(f"{path} line {n}: {len(r)} fields, the header has {len(header)}")
        rows.append((n, dict(zip(header, (c.strip() for c in r)))))
    return "csv", [(table[0][0], header)] + rows


def _read_items(path: Path) -> tuple:
    """``(names, labels or None)`` of an items file."""
    form, rows = _records(path, "items file")
    if form == "csv":
        header, rows = rows[0][1], rows[1:]
        if "item" not in header:
            raise SetsFileError(f"{path} line 1: the header has no item column")
    names, labels, first = [], {}, {}
    keys = None
    for n, obj in rows:
        if "item" not in obj:
            raise SetsFileError(f"{path} line {n}: no \"item\" key")
        name = _id_text(obj["item"], f"{path} line {n}")
        if name in first:
            raise SetsFileError(f"{path} line {n}: item {name!r} is listed twice (first on line {first[name]})")
        first[name] = n
        others = sorted(k for k in obj if k != "item")
        if keys is None:
            keys = others
        elif others != keys:
            raise SetsFileError(f"{path} line {n}: labels {others}, the first item has {keys}")
        for k in others:
            v = obj[k]
            if isinstance(v, bool) or not isinstance(v, (str, int)) or not str(v).strip():
                raise SetsFileError(f"{path} line {n}: label {k!r} must be a non-empty string or a whole number")
            labels.setdefault(k, []).append(str(v).strip())
        names.append(name)
    if not names:
        raise SetsFileError(f"{path}: no item")
    return names, (labels or None)


def read_sets(path, items=None) -> SetsFile:
    """Read a sets file (and optionally an items file): see the module's docstring for the
    forms, what is refused (:class:`SetsFileError`) and what is counted."""
    path = Path(path)
    item_names, item_labels = _read_items(Path(items)) if items is not None else (None, None)
    index = {name: j for j, name in enumerate(item_names)} if item_names is not None else {}
    form, rows = _records(path, "sets file")
    given = {}  # name -> (line, [item texts])
    if form == "csv":
        header, rows = rows[0][1], rows[1:]
        if "concept" not in header or ("item" in header) == ("items" in header):
            raise SetsFileError(f"{path} line 1: the header needs a concept column and one of item (a row per "
                                "membership) or items (a row per concept, ids separated by spaces or ;)")
        long = "item" in header
        for n, row in rows:
            name = " ".join(row["concept"].split())
            if not name:
                raise SetsFileError(f"{path} line {n}: an empty concept name")
            if long:
                if not row["item"]:
                    raise SetsFileError(f"{path} line {n}: an empty item id")
                given.setdefault(name, (n, []))[1].append(row["item"])
            else:
                if name in given:
                    raise SetsFileError(f"{path} line {n}: concept {name!r} is named twice (first on line "
                                        f"{given[name][0]})")
                given[name] = (n, row["items"].replace(";", " ").split())
    else:
        for n, obj in rows:
            key = "concept" if "concept" in obj else "name" if "name" in obj else None
            if key is None or "items" not in obj:
                raise SetsFileError(f"{path} line {n}: expected {{\"concept\": NAME, \"items\": [ID, ...]}}")
            raw = obj[key]
            if not isinstance(raw, str) or not " ".join(raw.split()):
                raise SetsFileError(f"{path} line {n}: the concept name must be a non-empty string")
            name = " ".join(raw.split())
            if name in given:
                raise SetsFileError(f"{path} line {n}: concept {name!r} is named twice (first on line "
                                    f"{given[name][0]})")
            if not isinstance(obj["items"], list):
                raise SetsFileError(f"{path} line {n}: items must be a list of item ids")
            given[name] = (n, [_id_text(v, f"{path} line {n}") for v in obj["items"]])
    if not given:
        raise SetsFileError(f"{path}: no concept")
    names, members, empty, repeated = [], [], [], []
    order = [] if item_names is None else None
    for name, (n, ids) in given.items():
        idx = []
        seen = set()
        for t in ids:
            if t in seen:
                repeated.append(f"{name}: {t}")
                continue
            seen.add(t)
            if item_names is not None:
                if t not in index:
                    raise SetsFileError(f"{path} line {n}: concept {name!r} names item {t!r}, which the items file "
                                        f"{items} does not list")
            elif t not in index:
                index[t] = len(order)
                order.append(t)
            idx.append(index[t])
        if not idx:
            empty.append(name)
            continue
        names.append(name)
        members.append(np.asarray(idx, np.int64))
    if item_names is None:
        item_names = order
    sets = SetsFile(str(path), names, members, item_names, item_labels)
    _record(sets.exclusions, "empty", empty, "not concepts")
    _record(sets.notes, "repeated_items", repeated, "counted once")
    if items is not None:
        used = np.zeros(len(item_names), bool)
        for m in members:
            used[m] = True
        _record(sets.notes, "unused_items", [item_names[j] for j in np.flatnonzero(~used)],
                "kept as items: a negative of every concept")
    if not names:
        raise SetsFileError(f"{path}: every concept is empty: no space")
    return sets
