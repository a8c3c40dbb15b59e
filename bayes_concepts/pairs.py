"""Attribute-object benchmarks: compositional zero-shot learning and RLCL.

MIT-States, UT-Zappos, C-GQA and RLCL label every item (an image) with one
(attribute, object) pair and hold out *unseen pairs*.  Their common layout::

    items file        one item per line: its name, attribute and object (and a set)
    DIR/train_pairs.txt   one pair per line, "attribute object"
    DIR/val_pairs.txt
    DIR/test_pairs.txt

:func:`read_pairs_layout` reads it (every bad line is a :class:`PairsLayoutError`
naming the file and line), :func:`pair_space` turns it into an
:class:`~bayes_concepts.spaces.extension_space.ExtensionSpace`, and
:func:`unseen_pairs_spec` / :func:`reference_limited_spec` give split specs.

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
  are *not* concepts: the Bayesian audit puts val concepts in neither oracle, so they
  would change nothing but the scene of their items, which stay in the bank.
* **The split** (:func:`unseen_pairs_spec`): train = ``train_pairs`` (CZSL's *seen*
  pairs) and the primitives that occur in one of them; test = test pairs that are not
  train pairs (*unseen*), and primitives that occur in no seen pair.  Pairs of
  ``test_pairs`` that are also in ``train_pairs`` (CZSL's seen test pairs) are train.

Reference-limited splits (RLCL)
===============================

:func:`reference_limited_spec` keeps only ``k`` seen pairs per attribute (drawn with a
seed from the attribute's pairs in the space) and holds out every other pair; primitives
follow the same rule as above.  The spec it returns lists the held-out concepts
(``[held_out] programs = [...]``) and names ``k`` and the seed in its description, so a
saved spec file (:func:`spec_to_toml`) says exactly which pairs are unseen.

Items file
==========

Tab-separated text with a header line naming the columns (``item`` or ``image``,
``attribute`` or ``attr``, ``object`` or ``obj``, optional ``set``), or JSON Lines /
a JSON list of objects with those keys (CZSL's metadata records ``{"image", "attr",
"obj", "set"}``).  Names must be single tokens (no whitespace), as in the pair files.
"""
from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .spaces.extension_space import ExtensionSpace, description_log_prob
from .errors import BayesConceptsError
from .splits import make_split

__all__ = ["PairsLayout", "PairsLayoutError", "read_pairs_layout", "pair_space", "unseen_pairs_spec",
           "reference_limited_spec", "seen_pairs_per_attribute", "spec_to_toml", "build_pair_space", "PAIR_FILES"]

PAIR_FILES = ("train_pairs.txt", "val_pairs.txt", "test_pairs.txt")
ROLES = ("attribute", "object")
_COLUMNS = {"item": ("item", "image", "name"), "attribute": ("attribute", "attr"), "object": ("object", "obj"),
            "set": ("set", "split")}


class PairsLayoutError(BayesConceptsError):
    """A malformed attribute-object layout; the message names the file and line."""


@dataclass
class PairsLayout:
    """An attribute-object benchmark as read from disk.

    items, attributes, objects : lists of str, (N,)
        Item names and their labels, in file order.
    sets : list of str or None, (N,)
        The items file's ``set`` column when present (recorded, not used).
    pairs : dict ``train``/``val``/``test`` -> list of (attribute, object), in file order.
    sources : dict file name -> sha256.
    """

    items: list
    attributes: list
    objects: list
    sets: list | None
    pairs: dict
    sources: dict = field(default_factory=dict)

    @property
    def n_items(self) -> int:
        return len(self.items)

    def pair_counts(self) -> dict:
        """``{(attribute, object): items}``."""
        out = {}
        for a, o in zip(self.attributes, self.objects):
            out[(a, o)] = out.get((a, o), 0) + 1
        return out


# ================================================================================ reading
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


def _read_items(path: Path) -> tuple:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PairsLayoutError(f"{path}: cannot read the items file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise PairsLayoutError(f"{path}: the items file is not UTF-8 text ({exc.reason})") from None
    records = []  # (line, dict)
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PairsLayoutError(f"{path} line {exc.lineno}: not valid JSON ({exc.msg})") from None
        if not isinstance(data, list):
            raise PairsLayoutError(f"{path}: expected a JSON list of item objects")
        records = [(None, r, f"{path} item {k}") for k, r in enumerate(data)]
    elif path.suffix == ".jsonl":
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append((lineno, json.loads(line), f"{path} line {lineno}"))
            except json.JSONDecodeError as exc:
                raise PairsLayoutError(f"{path} line {lineno}: not valid JSON ({exc.msg})") from None
    else:
        lines = text.splitlines()
        header_at = next((k for k, ln in enumerate(lines) if ln.strip() and not ln.startswith("#")), None)
        if header_at is None:
            raise PairsLayoutError(f"{path}: no header line (expected columns item, attribute, object[, set])")
        sep = "\t" if "\t" in lines[header_at] else None
        header = lines[header_at].split(sep)
        cols = _column_index(header, f"{path} line {header_at + 1}")
        for k in range(header_at + 1, len(lines)):
            line = lines[k]
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split(sep)
            if len(fields) != len(header):
                raise PairsLayoutError(f"{path} line {k + 1}: {len(fields)} fields, the header has {len(header)}")
            records.append((k + 1, {key: fields[i].strip() for key, i in cols.items()}, f"{path} line {k + 1}"))
    items, attrs, objs, sets = [], [], [], []
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
        items.append(str(got["item"]))
        attrs.append(_token(got["attribute"], where, "attribute"))
        objs.append(_token(got["object"], where, "object"))
        sets.append(str(got["set"]) if "set" in got else None)
    if not items:
        raise PairsLayoutError(f"{path}: no items")
    names = {}
    for (_, _, where), name in zip(records, items):
        if name in names:
            raise PairsLayoutError(f"{where}: item {name!r} appears twice (first at {names[name]})")
        names[name] = where
    return items, attrs, objs, (sets if any(s is not None for s in sets) else None)


def _read_pairs(path: Path, attributes: set, objects: set, counts: dict) -> list:
    if not path.exists():
        raise PairsLayoutError(f"{path}: missing (a pairs directory holds {', '.join(PAIR_FILES)})")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise PairsLayoutError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise PairsLayoutError(f"{path}: not UTF-8 text ({exc.reason})") from None
    out, seen = [], {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        toks = line.split()
        if len(toks) != 2:
            raise PairsLayoutError(f"{path} line {lineno}: expected 'attribute object' (two tokens), "
                                   f"got {len(toks)}: {line.strip()!r}")
        a, o = toks
        if a not in attributes:
            raise PairsLayoutError(f"{path} line {lineno}: attribute {a!r} labels no item of the items file")
        if o not in objects:
            raise PairsLayoutError(f"{path} line {lineno}: object {o!r} labels no item of the items file")
        if (a, o) not in counts:
            raise PairsLayoutError(f"{path} line {lineno}: no item is labelled with the pair ({a}, {o})")
        if (a, o) in seen:
            raise PairsLayoutError(f"{path} line {lineno}: the pair ({a}, {o}) is listed twice (first on line "
                                   f"{seen[(a, o)]})")
        seen[(a, o)] = lineno
        out.append((a, o))
    return out


def read_pairs_layout(items, pairs_dir) -> PairsLayout:
    """Read an items file and a directory of ``train_pairs.txt``, ``val_pairs.txt`` and
    ``test_pairs.txt``; a malformed file is a :class:`PairsLayoutError` naming file and line."""
    items, pairs_dir = Path(items), Path(pairs_dir)
    if not pairs_dir.is_dir():
        raise PairsLayoutError(f"{pairs_dir}: not a directory (expected one holding {', '.join(PAIR_FILES)})")
    names, attrs, objs, sets = _read_items(items)
    counts = {}
    for a, o in zip(attrs, objs):
        counts[(a, o)] = counts.get((a, o), 0) + 1
    pairs = {f.split("_")[0]: _read_pairs(pairs_dir / f, set(attrs), set(objs), counts) for f in PAIR_FILES}
    if not pairs["train"]:
        raise PairsLayoutError(f"{pairs_dir / 'train_pairs.txt'}: no pairs (the seen pairs are needed)")
    sources = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
               for p in [items, *(pairs_dir / f for f in PAIR_FILES)]}
    return PairsLayout(names, attrs, objs, sets, pairs, sources)


# ============================================================================ the space
def _tokens_of(attributes, objects) -> dict:
    """(role, value) -> description token; a name used in both roles is prefixed by its role."""
    both = set(attributes) & set(objects)
    out = {}
    for role, values in (("attribute", attributes), ("object", objects)):
        for v in values:
            out[(role, v)] = f"{role}:{v}" if v in both else v
    return out


def pair_space(layout: PairsLayout, primitives: bool = True, test_positives: int = 3, seed: int = 0,
               min_count: int = 1) -> ExtensionSpace:
    """The pair space of an attribute-object benchmark (see the module docstring).

    Concept order: the attributes alone, the objects alone (both sorted; only with
    ``primitives``), then the pairs of train and test (sorted).  The space carries the
    seen-vs-unseen split spec as ``spec_files["unseen_pairs.toml"]``.
    """
    attr_values, attr_code = np.unique(np.array(layout.attributes, dtype=str), return_inverse=True)
    obj_values, obj_code = np.unique(np.array(layout.objects, dtype=str), return_inverse=True)
    attr_values, obj_values = attr_values.tolist(), obj_values.tolist()
    a_index = {a: k for k, a in enumerate(attr_values)}
    o_index = {o: k for k, o in enumerate(obj_values)}
    token = _tokens_of(attr_values, obj_values)
    pairs = sorted(set(layout.pairs["train"]) | set(layout.pairs["test"]))
    concepts = []  # (parts, mask)
    if primitives:
        concepts += [(((("attribute", a),)), attr_code == k) for k, a in enumerate(attr_values)]
        concepts += [(((("object", o),)), obj_code == k) for k, o in enumerate(obj_values)]
    pair_code = attr_code * len(obj_values) + obj_code  # one integer per (attribute, object)
    concepts += [((("attribute", a), ("object", o)), pair_code == a_index[a] * len(obj_values) + o_index[o])
                 for a, o in pairs]
    n_values = {"attribute": len(attr_values), "object": len(obj_values)}
    params = {"kind": "pairs", "primitives": bool(primitives), "sources": layout.sources,
              "pairs": {k: len(v) for k, v in layout.pairs.items()}}
    space = ExtensionSpace.from_extensions(
        np.stack([m for _, m in concepts]) if concepts else np.zeros((0, layout.n_items), bool),
        [" ".join(token[p] for p in parts) for parts, _ in concepts], item_names=layout.items,
        item_labels={"attribute": layout.attributes, "object": layout.objects},
        parts=[parts for parts, _ in concepts], log_probs=[description_log_prob(p, n_values) for p, _ in concepts],
        min_count=min_count, test_positives=test_positives, seed=seed, params=params)
    spec = unseen_pairs_spec(space, layout.pairs["train"])
    return space.with_spec_files({"unseen_pairs.toml": spec_to_toml(spec)})


def _pair_ids(space) -> dict:
    """``{(attribute, object): concept id}`` of the two-part concepts of a pair space."""
    out = {}
    for i, parts in enumerate(() if space.has_programs else space.parts):  # programs have no parts: no pairs
        roles = [r for r, _ in parts]
        if roles == ["attribute", "object"]:
            out[(parts[0][1], parts[1][1])] = i
    return out


def _held_out_given_seen(space, seen_pairs) -> np.ndarray:
    """bool (n,): pairs not in ``seen_pairs``, and primitives that occur in no seen pair."""
    seen = set(map(tuple, seen_pairs))
    seen_values = {("attribute", a) for a, _ in seen} | {("object", o) for _, o in seen}
    held = np.zeros(space.n_concepts, bool)
    for i, parts in enumerate(space.parts):
        if len(parts) == 2:
            held[i] = (parts[0][1], parts[1][1]) not in seen
        elif len(parts) == 1:
            held[i] = tuple(parts[0]) not in seen_values
    return held


def unseen_pairs_spec(space, seen_pairs, name: str = "unseen_pairs") -> dict:
    """The seen-vs-unseen split as a spec dict: every pair not in ``seen_pairs`` (and every
    primitive in no seen pair) held out as test, no val."""
    held = _held_out_given_seen(space, seen_pairs)
    return {"name": name, "kind": "held_out", "synonym_aware": False, "val_fraction": 0.0,
            "description": "seen pairs (train_pairs.txt) vs unseen pairs (test pairs not in train_pairs.txt)",
            "held_out": {"programs": [space.descriptions[i] for i in np.flatnonzero(held)]}}


def seen_pairs_per_attribute(space, k: int, seed: int = 0) -> list:
    """``k`` pairs per attribute (all of them when it has at most ``k``), drawn with ``seed``
    from the attribute's pairs in the space (in concept order): the seen pairs of an
    RLCL-style reference-limited split."""
    rng = np.random.default_rng(seed)
    by_attr = {}
    for (a, o), i in sorted(_pair_ids(space).items(), key=lambda kv: kv[1]):
        by_attr.setdefault(a, []).append((a, o))
    seen = []
    for a in sorted(by_attr):
        ps = by_attr[a]
        pick = rng.permutation(len(ps))[: int(k)]
        seen += [ps[j] for j in sorted(pick)]
    return seen


def reference_limited_spec(space, k: int, seed: int = 0, name: str | None = None) -> dict:
    """An RLCL-style split spec: ``k`` seen pairs per attribute (:func:`seen_pairs_per_attribute`),
    every other pair (and every primitive in no seen pair) held out as test, no val.  The held-out
    concepts are listed in the spec (``held_out.programs``)."""
    if not _pair_ids(space):
        raise PairsLayoutError("reference-limited splits need a space of (attribute, object) pairs "
                               "(bayes_concepts.pairs.pair_space, or bayes-concepts space from-pairs)")
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise PairsLayoutError(f"k (seen pairs per attribute) must be an integer >= 1, got {k!r}")
    held = _held_out_given_seen(space, seen_pairs_per_attribute(space, int(k), int(seed)))
    if not held.any():
        raise PairsLayoutError(f"k = {k} keeps every pair of every attribute: nothing would be held out")
    return {"name": name or f"seen_k{k}", "kind": "held_out", "synonym_aware": False, "val_fraction": 0.0,
            "description": f"reference-limited (RLCL): {k} seen pair(s) per attribute, drawn with seed {seed}",
            "held_out": {"programs": [space.descriptions[i] for i in np.flatnonzero(held)]}}


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        if len(v) > 4:
            return "[\n" + "".join(f"  {_toml_value(x)},\n" for x in v) + "]"
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def spec_to_toml(spec: dict) -> str:
    """A split spec dict (as the specs of this module) as the text of a TOML spec file."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in spec.items() if k != "held_out"]
    if "held_out" in spec:
        lines += ["", "[held_out]"] + [f"{k} = {_toml_value(v)}" for k, v in spec["held_out"].items()]
    return "\n".join(lines) + "\n"


def _s(n: int) -> str:
    """The plural ending of a count: ``'s'`` unless ``n`` is 1."""
    return "" if n == 1 else "s"


def _seen_test_note(layout) -> str:
    """`` of which 1 also in train_pairs.txt (seen: a train concept of the split, e.g. wet dog)``
    for test pairs that are train pairs too (CZSL's generalized test set), else ``""``."""
    train = {tuple(p) for p in layout.pairs["train"]}
    seen = [p for p in layout.pairs["test"] if tuple(p) in train]
    if not seen:
        return ""
    example = " ".join(seen[0])
    return (f" of which {len(seen):,} also in train_pairs.txt (seen pairs: train concepts of the split, e.g. "
            f"{example!r})")


def build_pair_space(out, items, pairs_dir, primitives: bool = True, ks=(), seed: int = 0,
                     overwrite: bool = False) -> list:
    """``bayes-concepts space from-pairs``: read the layout, build the pair space with its
    ``unseen_pairs`` split spec (and a ``seen_k<K>`` spec per ``ks``), save it to ``out``
    (atomically; the specs in ``out/splits/``).  Returns the summary lines to print."""
    import time
    if Path(out).exists() and not overwrite:
        raise FileExistsError(f"{out} already exists (pass --force to replace it)")
    t = time.perf_counter()
    layout = read_pairs_layout(items, pairs_dir)
    space = pair_space(layout, primitives=primitives, seed=seed)
    for k in ks:
        spec = reference_limited_spec(space, k, seed)
        space = space.with_spec_files({f"{spec['name']}.toml": spec_to_toml(spec)})
    splits = {}
    for fname, text in sorted(space.spec_files.items()):  # every spec must make a split before anything is saved
        splits[fname] = make_split(space, tomllib.loads(text))
    space.save(out, overwrite=overwrite)
    n_pairs = sum(1 for p in space.parts if len(p) == 2)
    lines = [f"built {out} in {time.perf_counter() - t:.1f} s: {space.n_concepts:,} concepts ({n_pairs:,} pairs"
             + (f", {space.n_concepts - n_pairs:,} attributes and objects alone" if primitives else "")
             + f") over {space.n_scenes:,} items; {space.n_synonym_classes:,} synonym classes",
             f"pair files: train {len(layout.pairs['train']):,}, val {len(layout.pairs['val']):,}, "
             f"test {len(layout.pairs['test']):,} pair{_s(len(layout.pairs['test']))}" + _seen_test_note(layout)
             + f" ({len(set(layout.attributes)):,} attribute{_s(len(set(layout.attributes)))}, "
               f"{len(set(layout.objects)):,} object{_s(len(set(layout.objects)))})"]
    for fname, split in splits.items():
        sz = split.sizes()
        lines.append(f"split {split.name}: train {sz['train']:,}, test {sz['test']:,} concept{_s(sz['test'])} "
                     f"({Path(out) / 'splits' / fname})")
    lines.append(f"next: bayes-concepts audit {out} --report {Path(out).name}_audit.md")
    return lines
