"""Attribute-object benchmarks: compositional zero-shot learning and RLCL.

MIT-States, UT-Zappos, C-GQA and RLCL label every item (an image) with one
(attribute, object) pair and hold out *unseen pairs*.  Their common layout::

    items             the items and their labels (formats below)
    DIR/train_pairs.txt   one pair per line, "attribute object"
    DIR/val_pairs.txt
    DIR/test_pairs.txt

Each pair file may instead be JSON (``train_pairs.json``, ``train.json``, or the one
``train_<name>.json`` of the directory, as RLCL names its lists ``train_cgqa.json``,
``val_utzap.json``, ``test_mit.json``): a list of pairs, each ``["attribute", "object"]``,
``"attribute object"``, RLCL's ``"attribute_object"`` (one underscore; RLCL writes a space
inside a name as ``.``) or an object with ``attr``/``obj`` (or ``attribute``/``object``)
keys; and ``DIR`` may itself be one JSON file holding ``{"train": [...], "val": [...],
"test": [...]}``.  Each file must exist (an empty one lists no pair).

hxm97's realistic-CZSL split of MIT-States is read as it is published: a pairs directory
holding ``seen_pairs.txt`` (and no ``train_pairs.txt``) is its ``mitstates_pair_split/``,
whose sides are joined here -- train = ``seen_pairs.txt``; val = ``val_unseen_comps.txt`` +
``val_unseen_pairs.txt``; test = ``test_unseen_comps.txt`` + ``test_unseen_pairs.txt`` (the
unseen compositions of seen attributes and objects, then the unseen pairs with a novel
attribute or object).  Its ``seen_attrs.txt`` and ``seen_objs.txt`` are checked against the
seen pairs, which decide: an attribute the list names but no seen pair uses is a novel atom
of the split, an object a seen pair uses that the list omits a seen one; both are counted and
named (``PairsLayout.notes``, the manifest's ``params["layout_notes"]``, lines starting
``note:`` in the build's output).  Its ``mitstates_img_split/`` (``train_imgs.txt``,
``val_imgs.txt``, ``test_imgs.txt``, or one of them) is an items source: see Items below.

Without the items (the images are a large download; RLCL's lists come with its code),
``items_per_pair=N`` gives every listed pair N synthetic items: an audit of the lists
alone, in which every pair has the same number of items.

:func:`read_pairs_layout` reads it (every malformed line is a :class:`PairsLayoutError`
naming the file and line), :func:`pair_space` turns it into an
:class:`~bayes_concepts.spaces.extension_space.ExtensionSpace`, and
:func:`unseen_pairs_spec` / :func:`reference_limited_spec` / :func:`episode_worlds_spec`
give split specs.

What is left out, and why (never silently)
==========================================

Every exclusion below is counted, with the first few names, in ``space from-pairs``'s
output and in the space's manifest (``params["excluded"]``); the audit and the results of
``gap`` repeat them:

* **empty pairs**: a pair that a pair file lists but no item carries (RLCL lists a few
  MIT-States pairs that have no image in the CZSL image set).  It is not a concept.
* **NA items**: records of CZSL's metadata whose attribute, object or set is ``NA``
  (CZSL's own loader skips them).  They are not items.
* **val pairs**: pairs of ``val_pairs.txt`` that are neither train nor test pairs, and
  **val-only atoms**: attributes and objects that occur in no train or test pair (only in
  val pairs, or in no listed pair).  They are not concepts: a split's val concepts are in
  neither oracle, so they could change nothing but the episodes' hard negatives.  Their
  items stay in the bank (negatives of every concept).
* **unlisted pairs**: pairs that items carry but no pair file names (train, val or test).  They
  are not concepts.  By default (``unlisted="keep"``, ``--unlisted keep``) their items stay in
  the bank, and where the pair's attribute or object is a concept they are its positives (an
  item labelled ``wet car`` is wet, whatever the lists say): counted and named as a note
  (``notes["unlisted_pairs"]``: pairs, items, and how many pairs and items join an attribute
  or object alone).  ``unlisted="drop"`` (``--unlisted drop``) leaves their items out (not
  items; CZSL's loaders use only images of listed pairs), counted and named as an exclusion
  (``unlisted_items``).
* **too small for an episode**: a concept with fewer items than the positives of an
  episode (support + query: 10 by default) stays a concept (a hypothesis of the oracles)
  but is never an episode's concept; how many there are depends on the episode shape, so
  the build counts them for the default shape and each audit or gap run for its own
  (:func:`bayes_concepts.episodes.episode_exclusions`).

The pair space
==============

* **Concepts**: every pair of ``train_pairs`` and ``test_pairs`` (extension: the items
  labelled with it) and, with ``primitives=True`` (default), every attribute and every
  object alone (extension: the items with that attribute / object) -- the simpler
  concepts from which a learner could compose an unseen pair.  Descriptions are token
  strings, ``"wet dog"`` for a pair, ``"wet"`` and ``"dog"`` for primitives (a name used
  both as an attribute and as an object is written ``attribute:name`` / ``object:name``);
  lengths 2 and 1; the ``pcfg`` prior reads log p = −Σ log(values of the part's role).
* **Items** are the scenes: all items of the items file, in file order, each a
  one-object scene with attributes ``attribute`` and ``object`` (one-hot schema features
  for the learners).  Items of pairs that are in no pair file stay items (negatives).
* **Validation pairs** that are neither train nor test pairs (CZSL's unseen val pairs)
  are *not* concepts, and neither are attributes or objects that occur only in them (see
  above): nothing of the validation files reaches the test side.
* **The split** (:func:`unseen_pairs_spec`): train = ``train_pairs`` (CZSL's *seen*
  pairs) and the primitives that occur in one of them; test = test pairs that are not
  train pairs (*unseen*), and primitives that occur in no seen pair.  Pairs of
  ``test_pairs`` that are also in ``train_pairs`` (CZSL's seen test pairs) are train.
  A layout with no unseen pair (every test pair seen, or no test pair) has no such split;
  its reference-limited splits below still build.

Reference-limited splits (RLCL)
===============================

:func:`reference_limited_spec` keeps only ``k`` seen pairs per attribute (drawn with a
seed from the attribute's pairs in the space) and holds out every other pair; primitives
follow the same rule as above.  The spec it returns lists the held-out concepts
(``[held_out] programs = [...]``) and names ``k`` and the seed in its description, so a
saved spec file (:func:`spec_to_toml`) says exactly which pairs are unseen.

:func:`episode_worlds_spec` is RLCL's own episode setting, where the limit is the number
of seen compositions *per episode*: a world of ``n_p`` attributes and ``n_p`` objects is
drawn as RLCL's episode sampler draws one -- ``n_p`` pairs sharing no attribute and no
object are seen; every other pair of the space inside the ``n_p`` x ``n_p`` grid is a
candidate; a world needs two candidates or more (else it is drawn again), the first two
(in random order) go one to seen and one to unseen, each further one to seen or unseen with
probability 1/2 -- so a world has between ``n_p + 1`` seen pairs and all but one of its
pairs.  Worlds are drawn one after another from the attributes and objects no earlier
world used, until ``worlds`` are drawn or none can be.  Train = the worlds' seen pairs and
their attributes and objects alone; test = the worlds' unseen pairs; every other concept
is val (``val_programs``: in neither oracle, never an episode's concept).  As worlds share
no attribute or object, the seen pairs of other worlds are false on every item of a
world's pairs: each test episode's weak oracle effectively refers to its own world's seen
pairs only, as in RLCL.

Items
=====

* **Plain text** (any suffix but those below): tab-separated, a header line naming the
  columns (``item`` or ``image``, ``attribute`` or ``attr``, ``object`` or ``obj``,
  optional ``set``), then one item per line; lines starting with ``#`` are comments::

      image	attr	obj	set
      ancient_bottle/0001.jpg	ancient	bottle	train

* **JSON Lines** (``.jsonl``) or a **JSON list** (``.json``) of objects with those keys.
* **CZSL's metadata** (``metadata_compositional-split-natural.t7``, a torch file of
  records ``{"image", "attr", "obj", "set"}``): read with torch when it is installed
  (else a one-line error saying how to convert it to JSON).  Records with ``NA`` are
  dropped and counted (above).
* **hxm97's image lists** (a file ``train_imgs.txt``, ``val_imgs.txt`` or ``test_imgs.txt``,
  or a folder holding them, as ``mitstates_img_split/``): no header, one item per line,
  ``path attribute object`` separated by white space (``damp_mud/SAM_2193.jpg damp mud``);
  the set is the file's (``train``, ``val``, ``test``).
* **An image folder** (a directory): every file under ``DIR/<attribute object>/``, as
  MIT-States ships its images; the item is ``<attribute object>/<file>``.

Attribute and object names must be single tokens (no whitespace), as in the pair files.
"""
from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import BayesConceptsError
from ...text_files import read_text
from ...params import whole_number

PAIR_FILES = ("train_pairs.txt", "val_pairs.txt", "test_pairs.txt")
SIDES = ("train", "val", "test")
ROLES = ("attribute", "object")
#: names an exclusion record lists (the rest are counted)
FIRST = 5
#: a CZSL metadata value meaning "no label": such records are not items
NA = "NA"
_COLUMNS = {"item": ("item", "image", "name"), "attribute": ("attribute", "attr"), "object": ("object", "obj"),
            "set": ("set", "split")}
_RULES = {
    "empty_pairs": "listed in a pair file, but no item carries the pair: not a concept",
    "na_items": "CZSL metadata records whose attr, obj or set is NA: not items",
    "val_pairs": "val pairs that are neither train nor test pairs: not concepts (in neither oracle); their items "
                 "stay in the bank",
    "val_only_atoms": "attributes and objects in no train or test pair: not concepts (their items stay in the bank)",
}


class PairsLayoutError(BayesConceptsError):
    """A malformed attribute-object layout; the message names the file and line."""


def _record(names: list, rule_key: str) -> dict:
    """``{"count", "first", "rule"}``: an exclusion as the manifest and the results record it."""
    return {"count": len(names), "first": [str(x) for x in names[:FIRST]], "rule": _RULES[rule_key]}


@dataclass
class PairsLayout:
    """An attribute-object benchmark as read from disk.

    items, attributes, objects : lists of str, (N,)
        Item names and their labels, in file order (NA records dropped).
    sets : list of str or None, (N,)
        The items file's ``set`` column when present: counted per set against the seen and
        unseen pairs (:func:`set_counts`; the build's note, the manifest's
        ``params["item_sets"]``), not used by any split (:data:`IMAGE_LEVEL`).
    pairs : dict ``train``/``val``/``test`` -> list of (attribute, object), in file order;
        only pairs some item carries.
    sources : dict file name -> sha256.
    empty_pairs : list of str
        ``"FILE: attribute object"`` for each listed pair that no item carries (excluded).
    na_items : list of str
        Names of the metadata records dropped for an NA label.
    notes : dict kind -> ``{"count", "first", "rule"}``
        What the layout's own lists say that the pairs contradict (hxm97's ``seen_attrs.txt``
        naming attributes no seen pair uses, ``seen_objs.txt`` omitting objects seen pairs
        use): nothing is left out, the pairs decide; recorded so that it is not silent.
    """

    items: list
    attributes: list
    objects: list
    sets: list | None
    pairs: dict
    sources: dict = field(default_factory=dict)
    empty_pairs: list = field(default_factory=list)
    na_items: list = field(default_factory=list)
    notes: dict = field(default_factory=dict)
    unlisted_items: dict | None = None

    @property
    def n_items(self) -> int:
        return len(self.items)

    def pair_counts(self) -> dict:
        """``{(attribute, object): items}``."""
        out = {}
        for a, o in zip(self.attributes, self.objects):
            out[(a, o)] = out.get((a, o), 0) + 1
        return out

    def unseen_pairs(self) -> list:
        """Test pairs that are not train pairs, in file order."""
        train = set(self.pairs["train"])
        return [p for p in self.pairs["test"] if p not in train]

    def val_only_pairs(self) -> list:
        """Val pairs that are neither train nor test pairs (not concepts)."""
        known = set(self.pairs["train"]) | set(self.pairs["test"])
        return [p for p in self.pairs["val"] if p not in known]

    def val_only_atoms(self) -> list:
        """``"attribute:a"`` / ``"object:o"`` for labels in no train or test pair (not concepts), sorted."""
        pairs = set(self.pairs["train"]) | set(self.pairs["test"])
        used = {("attribute", a) for a, _ in pairs} | {("object", o) for _, o in pairs}
        every = {("attribute", a) for a in self.attributes} | {("object", o) for o in self.objects}
        return [f"{r}:{v}" for r, v in sorted(every - used)]

    def exclusions(self) -> dict:
        """What the pair space leaves out, by kind: ``{kind: {"count", "first", "rule"}}``
        (kinds with nothing left out are omitted)."""
        out = {"empty_pairs": _record(self.empty_pairs, "empty_pairs"),
               "na_items": _record(self.na_items, "na_items"),
               "val_pairs": _record([f"{a} {o}" for a, o in self.val_only_pairs()], "val_pairs"),
               "val_only_atoms": _record(self.val_only_atoms(), "val_only_atoms")}
        if self.unlisted_items:
            out["unlisted_items"] = self.unlisted_items
        return {k: v for k, v in out.items() if v["count"]}


# ================================================================================ reading
def _read_text(path: Path, what: str = "") -> str:
    """The UTF-8 text of ``path``; a :class:`PairsLayoutError` naming it (and ``what`` it is,
    e.g. ``"the items file "``) when it cannot be read or is not UTF-8."""
    return read_text(path, PairsLayoutError, what.strip())


def _token(value, where: str, what: str) -> str:
    if not isinstance(value, str) or not value or value != value.strip() or len(value.split()) != 1:
        raise PairsLayoutError(f"{where}: {what} must be a single token without whitespace, got {value!r}")
    return value


def _column_index(header: list, where: str) -> dict:
    lowered = [h.strip().lower() for h in header]
    out = {}
    for key, names in _COLUMNS.items():
        hits = [i for i, h in enumerate(lowered) if h in names]
        if len(hits) > 1:
            raise PairsLayoutError(f"{where}: two columns name the {key} ({', '.join(header[i] for i in hits)})")
        if hits:
            out[key] = hits[0]
        elif key != "set":
            raise PairsLayoutError(f"{where}: the header has no {key} column (expected one of "
                                   f"{', '.join(names)}; got {', '.join(header) or 'nothing'})")
    return out


def _folder_records(path: Path) -> list:
    """Records of an image folder: every file under ``path/<attribute object>/``."""
    records = []
    for sub in sorted(p for p in path.iterdir() if p.is_dir()):
        parts = sub.name.split()
        if len(parts) != 2:
            raise PairsLayoutError(f"{sub}: an image folder's sub-folders are named 'attribute object' (two words), "
                                   f"got {sub.name!r}")
        for f in sorted(q for q in sub.rglob("*") if q.is_file()):
            name = f"{sub.name}/{f.relative_to(sub).as_posix()}"
            records.append((None, {"image": name, "attr": parts[0], "obj": parts[1]}, f"{path}: {name}"))
    return records


def _torch_records(path: Path) -> list:
    """Records of a torch file (CZSL's ``metadata_*.t7``): a list of dicts."""
    try:
        import torch
    except ImportError:
        raise PairsLayoutError(f"{path}: reading CZSL's .t7 metadata needs torch, which is not installed; convert it "
                               "once where torch is: python -c \"import json,torch,sys; json.dump(torch.load("
                               "sys.argv[1]), open(sys.argv[2], 'w'))\" FILE.t7 items.json") from None
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a damaged or foreign file: torch raises many kinds
        raise PairsLayoutError(f"{path}: cannot read the torch metadata ({str(exc).splitlines()[0][:160]})") from None
    if not isinstance(data, (list, tuple)):
        raise PairsLayoutError(f"{path}: expected a list of item records, got {type(data).__name__}")
    return [(None, r, f"{path} record {k}") for k, r in enumerate(data)]


def _text_records(path: Path, text: str) -> list:
    lines = text.splitlines()
    header_at = next((k for k, ln in enumerate(lines) if ln.strip() and not ln.startswith("#")), None)
    if header_at is None:
        raise PairsLayoutError(f"{path}: no header line (expected columns item, attribute, object[, set])")
    first = lines[header_at]
    comma = "\t" not in first and "," in first and len(first.split()) == 1  # a CSV file (no tab, no space)
    sep = "\t" if "\t" in first else "," if comma else None
    what = "comma-separated" if comma else "tab-separated" if sep else "space-separated"

    def split(line):
        return next(csv.reader([line])) if comma else line.split(sep)

    header = split(first)
    cols = _column_index(header, f"{path} line {header_at + 1}" + (" (read as comma-separated)" if comma else ""))
    records = []
    for k in range(header_at + 1, len(lines)):
        line = lines[k]
        if not line.strip() or line.startswith("#"):
            continue
        fields = split(line)
        if len(fields) != len(header):
            raise PairsLayoutError(f"{path} line {k + 1}: {len(fields)} fields, the header has {len(header)} (read "
                                   f"as {what})")
        records.append((k + 1, {key: fields[i].strip() for key, i in cols.items()}, f"{path} line {k + 1}"))
    return records


#: hxm97's realistic-CZSL image lists (``mitstates_img_split/``): one per set, no header
IMG_SPLIT_FILES = tuple(f"{side}_imgs.txt" for side in SIDES)


def _img_split_files(path: Path) -> list:
    """The image lists of hxm97's ``img_split`` layout that ``path`` is or holds (a file
    ``<set>_imgs.txt``, or a folder holding one or more of them), else ``[]``."""
    if path.is_file():
        return [path] if path.name in IMG_SPLIT_FILES else []
    if path.is_dir():
        return [path / n for n in IMG_SPLIT_FILES if (path / n).is_file()]
    return []


def _img_split_records(files: list) -> list:
    """Records of hxm97's image lists: each line ``path attribute object`` (white space
    separated, no header); the set is the file's (``train_imgs.txt`` -> ``train``)."""
    records = []
    for f in files:
        side = f.name[: -len("_imgs.txt")]
        for n, line in enumerate(_read_text(f, "the items file ").splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split()
            if len(fields) != 3:
                raise PairsLayoutError(f"{f} line {n}: expected 'path attribute object' (three fields, as hxm97's "
                                       f"{f.name}), got {len(fields)}: {line.strip()[:80]!r}")
            records.append((n, {"image": fields[0], "attr": fields[1], "obj": fields[2], "set": side},
                            f"{f} line {n}"))
    return records


def _read_items(path: Path) -> tuple:
    """``(names, attributes, objects, sets or None, NA names)`` of an items file or image folder."""
    if _img_split_files(path):
        records = _img_split_records(_img_split_files(path))
    elif path.is_dir():
        records = _folder_records(path)
    elif path.suffix in (".t7", ".pt", ".pth"):
        if not path.is_file():
            raise PairsLayoutError(f"{path}: no such items file")
        records = _torch_records(path)
    else:
        text = _read_text(path, "the items file ")
        if path.suffix == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise PairsLayoutError(f"{path} line {exc.lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(data, list):
                raise PairsLayoutError(f"{path}: expected a JSON list of item objects")
            records = [(None, r, f"{path} item {k}") for k, r in enumerate(data)]
        elif path.suffix == ".jsonl":
            records = []
            for lineno, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    records.append((lineno, json.loads(line), f"{path} line {lineno}"))
                except json.JSONDecodeError as exc:
                    raise PairsLayoutError(f"{path} line {lineno}: not valid JSON ({exc.msg})") from None
        else:
            records = _text_records(path, text)
    items, attrs, objs, sets, dropped, wheres = [], [], [], [], [], []
    for _, rec, where in records:
        if not isinstance(rec, dict):
            raise PairsLayoutError(f"{where}: expected an object with item, attribute and object")
        got = {}
        for key, names in _COLUMNS.items():
            hit = [n for n in names if n in rec]
            if not hit and key != "set":
                raise PairsLayoutError(f"{where}: missing {key!r} (one of {', '.join(names)})")
            if hit:
                got[key] = rec[hit[0]]
        if NA in (got["attribute"], got["object"], got.get("set")):  # CZSL's unlabelled records
            dropped.append(str(got["item"]))
            continue
        items.append(str(got["item"]))
        attrs.append(_token(got["attribute"], where, "attribute"))
        objs.append(_token(got["object"], where, "object"))
        sets.append(str(got["set"]) if "set" in got else None)
        wheres.append(where)
    if not items:
        raise PairsLayoutError(f"{path}: no items" + (f" ({len(dropped):,} records, all labelled NA)" if dropped else ""))
    names = {}
    for where, name in zip(wheres, items):
        if name in names:
            raise PairsLayoutError(f"{where}: item {name!r} appears twice (first at {names[name]})")
        names[name] = where
    return items, attrs, objs, (sets if any(s is not None for s in sets) else None), dropped


def _pair_entries(path: Path, side: str, bundle) -> tuple:
    """``(label, [(where, entry text or list), ...])`` of one side's pair list: ``DIR/<side>_pairs.txt``,
    ``DIR/<side>_pairs.json``, ``DIR/<side>.json``, or the ``side`` key of one JSON file ``bundle``."""
    if bundle is not None:
        data, label = bundle
        if side not in data:
            raise PairsLayoutError(f"{label}: no {side!r} list (expected keys train, val, test)")
        return label, _json_entries(data[side], f"{label} {side}")
    if _is_hxm97_pairs(path):  # several files per side, joined in HXM97_SIDES order
        files = _side_files(path, side)
        entries = []
        for f in files:
            entries += [(f"{f} line {n}", line) for n, line in enumerate(_read_text(f).splitlines(), 1)
                        if line.strip() and not line.startswith("#")]
        return " + ".join(f.name for f in files), entries
    f = _side_file(path, side)
    text = _read_text(f)
    if f.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PairsLayoutError(f"{f} line {exc.lineno}: not valid JSON ({exc.msg})") from None
        return f.name, _json_entries(data, str(f))
    return f.name, [(f"{f} line {n}", line) for n, line in enumerate(text.splitlines(), 1)
                    if line.strip() and not line.startswith("#")]


#: hxm97's realistic-CZSL pair split (``mitstates_pair_split/``), read as it is: each side's
#: pairs are these files joined (seen pairs are train; the unseen compositions of seen
#: attributes and objects and the unseen pairs with a novel attribute or object are val or test)
HXM97_SIDES = {"train": ("seen_pairs.txt",), "val": ("val_unseen_comps.txt", "val_unseen_pairs.txt"),
               "test": ("test_unseen_comps.txt", "test_unseen_pairs.txt")}


def _is_hxm97_pairs(path: Path) -> bool:
    """A folder in hxm97's pair-split layout: ``seen_pairs.txt`` and no ``train_pairs.txt``."""
    return path.is_dir() and (path / "seen_pairs.txt").is_file() and not (path / "train_pairs.txt").is_file()


def _side_files(path: Path, side: str) -> list:
    """The files of one side's pairs: one (:func:`_side_file`), or hxm97's several
    (:data:`HXM97_SIDES`; a missing one is a :class:`PairsLayoutError`)."""
    if not _is_hxm97_pairs(path):
        return [_side_file(path, side)]
    missing = [n for n in HXM97_SIDES[side] if not (path / n).is_file()]
    if missing:
        raise PairsLayoutError(f"{path / missing[0]}: missing (hxm97's pair split holds seen_pairs.txt, "
                               "val_unseen_comps.txt, val_unseen_pairs.txt, test_unseen_comps.txt, "
                               "test_unseen_pairs.txt)")
    return [path / n for n in HXM97_SIDES[side]]


def _listed_atom_notes(path: Path, pairs: dict) -> dict:
    """hxm97's ``seen_attrs.txt`` / ``seen_objs.txt`` against the seen pairs: attributes
    (objects) the list names that no seen pair uses -- the split makes them novel atoms
    (test primitives), whatever the list says -- and those seen pairs use that the list
    omits.  ``{kind: {"count", "first", "rule"}}``, kinds with nothing omitted."""
    out = {}
    if not _is_hxm97_pairs(path):
        return out
    seen = pairs["train"]
    for role, fname, k in (("attribute", "seen_attrs.txt", 0), ("object", "seen_objs.txt", 1)):
        f = path / fname
        if not f.is_file():
            continue
        listed = [ln.strip() for ln in _read_text(f).splitlines() if ln.strip() and not ln.startswith("#")]
        used = {p[k] for p in seen}
        unused = [x for x in listed if x not in used]
        omitted = sorted(used - set(listed))
        if unused:
            out[f"{fname[:-4]}_unused"] = {
                "count": len(unused), "first": unused[:FIRST],
                "rule": f"{role}s {fname} lists that no seen pair uses: novel atoms of the split (test "
                        f"primitives), as the seen pairs decide"}
        if omitted:
            out[f"{fname[:-4]}_omitted"] = {
                "count": len(omitted), "first": omitted[:FIRST],
                "rule": f"{role}s a seen pair uses that {fname} does not list: seen atoms of the split (train "
                        f"primitives), as the seen pairs decide"}
    return out


def _side_file(path: Path, side: str) -> Path:
    """The pair file of one side in ``path``: ``<side>_pairs.txt``, ``<side>_pairs.json``,
    ``<side>.json``, or else the one ``<side>_<name>.json`` there (RLCL names its lists after
    their source dataset: ``train_cgqa.json``, ``val_utzap.json``, ``test_mit.json``)."""
    for name in (f"{side}_pairs.txt", f"{side}_pairs.json", f"{side}.json"):
        if (path / name).is_file():
            return path / name
    named = sorted(f for f in path.glob(f"{side}_*.json") if f.is_file())
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        raise PairsLayoutError(f"{path}: {len(named)} {side} lists ({', '.join(f.name for f in named)}); keep one, "
                               f"or name it {side}.json")
    raise PairsLayoutError(f"{path / f'{side}_pairs.txt'}: missing (a pairs directory holds "
                           f"{', '.join(PAIR_FILES)}, or their .json lists)")


def _pair_tokens(entry) -> list:
    """The tokens of one listed pair: ``"wet dog"`` and ``["wet", "dog"]`` give ``["wet", "dog"]``,
    and so does RLCL's ``"wet_dog"`` (one underscore, no space: RLCL's lists join the two names
    with ``_`` and write a space inside a name as ``.``)."""
    if isinstance(entry, list):
        return list(entry)
    toks = entry.split()
    if len(toks) == 1 and toks[0].count("_") == 1:
        toks = toks[0].split("_")
    return toks


def _json_entries(data, label: str) -> list:
    if not isinstance(data, list):
        raise PairsLayoutError(f"{label}: expected a JSON list of pairs, got {type(data).__name__}")
    out = []
    for k, x in enumerate(data):
        where = f"{label} entry {k}"
        if isinstance(x, dict):
            a = next((x[n] for n in _COLUMNS["attribute"] if n in x), None)
            o = next((x[n] for n in _COLUMNS["object"] if n in x), None)
            if a is None or o is None:
                raise PairsLayoutError(f"{where}: a pair object needs attr and obj (or attribute and object) keys")
            x = [a, o]
        if isinstance(x, list) and not all(isinstance(t, str) for t in x):
            raise PairsLayoutError(f"{where}: expected a pair of strings, got {x!r}")
        if not isinstance(x, (str, list)):
            raise PairsLayoutError(f"{where}: expected [attribute, object] or 'attribute object', got {x!r}")
        out.append((where, x))
    return out


def _read_pairs(path: Path, side: str, bundle, counts: dict | None, empty: list) -> list:
    """One side's pairs that some item carries (``counts``: items per pair; None: every pair
    listed); the others are appended to ``empty``."""
    label, entries = _pair_entries(path, side, bundle)
    out, seen = [], {}
    for where, entry in entries:
        toks = _pair_tokens(entry)
        if len(toks) != 2 or not all(toks) or (isinstance(entry, list) and any(len(t.split()) != 1 for t in toks)):
            raise PairsLayoutError(f"{where}: expected 'attribute object' (two tokens) or RLCL's 'attribute_object', "
                                   f"got {len(toks)}: "
                                   f"{entry.strip() if isinstance(entry, str) else entry!r}")
        a, o = toks
        if (a, o) in seen:
            first = seen[(a, o)]
            first = f"on line {first.rsplit(' line ', 1)[1]}" if " line " in first else f"at {first}"
            raise PairsLayoutError(f"{where}: the pair ({a}, {o}) is listed twice (first {first})")
        seen[(a, o)] = where
        if counts is not None and (a, o) not in counts:
            empty.append(f"{label}: {a} {o}")
            continue
        out.append((a, o))
    return out


def synthetic_items(pairs: list, per_pair: int) -> tuple:
    """``(names, attributes, objects)``: ``per_pair`` items for each pair of ``pairs``, named
    ``"attribute_object/k"`` -- the items of an audit of the pair lists alone, when the
    benchmark's images (or their labels) are not at hand."""
    names, attrs, objs = [], [], []
    for a, o in pairs:
        for k in range(per_pair):
            names.append(f"{a}_{o}/{k}")
            attrs.append(a)
            objs.append(o)
    return names, attrs, objs


#: what becomes of items whose pair no list names (``unlisted=``)
UNLISTED = ("keep", "drop")


def _unlisted(attrs, objs, pairs: dict) -> tuple:
    """``(pairs, items per pair)`` of the items whose pair no list (train, val, test) names,
    in order of first item."""
    listed = {p for side in SIDES for p in pairs[side]}
    out = {}
    for a, o in zip(attrs, objs):
        if (a, o) not in listed:
            out[(a, o)] = out.get((a, o), 0) + 1
    return list(out), out


def read_pairs_layout(items, pairs_dir, items_per_pair: int | None = None, unlisted: str = "keep") -> PairsLayout:
    """Read the items (a file or an image folder) and the pair lists (a directory of
    ``train_pairs.txt``, ``val_pairs.txt`` and ``test_pairs.txt`` or their JSON lists, or
    one JSON file with ``train``/``val``/``test`` lists); a malformed file is a
    :class:`PairsLayoutError` naming file and line.  Listed pairs no item carries and NA
    records are left out and recorded (``empty_pairs``, ``na_items``).

    ``items=None`` with ``items_per_pair=N`` audits the lists alone: every listed pair gets N
    items (:func:`synthetic_items`), so no pair is empty and every concept has the same
    number of items per pair; the real images' counts play no part (``sources`` records
    ``"items": "synthetic: N per listed pair"``)."""
    if (items is None) == (items_per_pair is None):
        raise PairsLayoutError("give either the items (a file or an image folder) or items_per_pair, not "
                               + ("both" if items is not None else "neither"))
    if items_per_pair is not None:
        whole_number("items_per_pair", items_per_pair, 1, error=PairsLayoutError)
    pairs_dir = Path(pairs_dir)
    items = None if items is None else Path(items)
    if items is not None and not items.exists():
        raise PairsLayoutError(f"{items}: no such items file or image folder")
    bundle = None
    if pairs_dir.is_file() and pairs_dir.suffix == ".json":
        try:
            data = json.loads(pairs_dir.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise PairsLayoutError(f"{pairs_dir}: not valid JSON ({getattr(exc, 'msg', exc)})") from None
        if not isinstance(data, dict):
            raise PairsLayoutError(f"{pairs_dir}: expected a JSON object with train, val and test lists")
        bundle = (data, pairs_dir.name)
    elif not pairs_dir.is_dir():
        raise PairsLayoutError(f"{pairs_dir}: not a directory (expected one holding {', '.join(PAIR_FILES)}) "
                               "nor a .json file of train/val/test lists")
    empty = []
    if items is None:  # every listed pair, once each in list order, gets its items
        pairs = {side: _read_pairs(pairs_dir, side, bundle, None, empty) for side in SIDES}
        listed = list(dict.fromkeys(p for side in SIDES for p in pairs[side]))
        if not listed:
            raise PairsLayoutError(f"{pairs_dir}: the pair lists name no pair")
        names, attrs, objs = synthetic_items(listed, items_per_pair)
        sets, dropped = None, []
    else:
        names, attrs, objs, sets, dropped = _read_items(items)
        counts = {}
        for a, o in zip(attrs, objs):
            counts[(a, o)] = counts.get((a, o), 0) + 1
        pairs = {side: _read_pairs(pairs_dir, side, bundle, counts, empty) for side in SIDES}
    if unlisted not in UNLISTED:
        raise PairsLayoutError(f"unlisted must be one of {', '.join(UNLISTED)}, got {unlisted!r}")
    loose, loose_n = _unlisted(attrs, objs, pairs)
    unlisted_record = {}
    if loose:
        used_a = {a for side in ("train", "test") for a, _ in pairs[side]}
        used_o = {o for side in ("train", "test") for _, o in pairs[side]}
        joining = [p for p in loose if p[0] in used_a or p[1] in used_o]
        n_items, n_join = sum(loose_n.values()), sum(loose_n[p] for p in joining)
        first = [f"{a} {o} ({loose_n[(a, o)]:,})" for a, o in loose[:FIRST]]
        if unlisted == "drop":
            keep = [(a, o) not in loose_n for a, o in zip(attrs, objs)]
            names = [x for x, k in zip(names, keep) if k]
            attrs = [x for x, k in zip(attrs, keep) if k]
            objs = [x for x, k in zip(objs, keep) if k]
            sets = None if sets is None else [x for x, k in zip(sets, keep) if k]
            unlisted_record = {"unlisted_items": {
                "count": len(loose), "items": n_items, "first": first,
                "rule": f"their {n_items:,} items are not items (--unlisted drop): not in the bank, nor in any "
                        "attribute or object alone"}}
        else:
            unlisted_record = {"unlisted_pairs": {
                "count": len(loose), "items": n_items, "joining": {"pairs": len(joining), "items": n_join},
                "first": first,
                "rule": f"pairs that no pair file names, with {n_items:,} items: not concepts; their items stay in "
                        f"the bank, and those of {len(joining):,} pair{_s(len(joining))} ({n_join:,} items) whose attribute or object "
                        "is a concept are positives of that attribute or object alone (they are that attribute or "
                        "object); --unlisted drop removes them"}}
    if not pairs["train"]:
        raise PairsLayoutError(f"{pairs_dir}: no train pair that an item carries (the seen pairs are needed)")
    files = [pairs_dir] if bundle else [f for side in SIDES for f in _side_files(pairs_dir, side)]
    if not bundle and _is_hxm97_pairs(pairs_dir):
        files += [pairs_dir / n for n in ("seen_attrs.txt", "seen_objs.txt") if (pairs_dir / n).is_file()]
    item_files = [] if items is None else _img_split_files(items) or ([items] if items.is_file() else [])
    sources = {}
    for p in item_files + sorted(files):
        sources[p.name] = hashlib.sha256(p.read_bytes()).hexdigest()
    if items is None:
        sources["items"] = f"synthetic: {items_per_pair} per listed pair"
    elif items.is_dir() and not item_files:
        sources[items.name + "/"] = hashlib.sha256("\n".join(names).encode()).hexdigest()
    notes = {**({} if bundle else _listed_atom_notes(pairs_dir, pairs)),
             **{k: v for k, v in unlisted_record.items() if k == "unlisted_pairs"}}
    layout_ = PairsLayout(names, attrs, objs, sets, pairs, sources, empty, dropped, notes)
    layout_.unlisted_items = unlisted_record.get("unlisted_items")
    return layout_


def _s(n: int) -> str:
    """The plural ending of a count: ``'s'`` unless ``n`` is 1."""
    return "" if n == 1 else "s"
