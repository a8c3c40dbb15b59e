"""Concept spaces given by extensions: a concept is a set of items.

A :class:`~bayes_concepts.spaces.hypothesis_space.HypothesisSpace` gets its concepts from programs
run over a scene bank.  Many benchmarks have no programs: compositional zero-shot
learning and RLCL label each *item* (an image) with an (attribute, object) pair, and a
concept is the set of items carrying a label.  An :class:`ExtensionSpace` is the
:class:`~bayes_concepts.spaces.concept_space.ConceptSpace` of such a benchmark, so splits,
episodes, oracles, metrics, the comp gap, the audit, the learners' schema features and
the store do not care which kind of space they get.  How its fields read:

=====================  =================================================================
``programs``           one *description* per concept, a token string (``"wet dog"``);
                       split rules match its tokens as they match a program's
``lengths``            description length l(h) (tokens, or given): the ``length`` prior
``log_pcfg``           description log-probability (nats; given, or 0): the ``pcfg`` prior
``counts``             |ext h| in items
``synonym_classes``    concepts with identical extensions share a class
``signatures``         uint64 (n, ceil(N/64)) packed membership of the N items
``scene_codes``        int8/int16 (N, 1, A): each item is a one-object "scene" whose A
                       attributes are its labels (``attribute``, ``object`` for pairs);
                       the learners' schema features are their one-hot codes
``test_bank``          3 positive items per concept, as for program spaces
``grammar``            a :class:`Vocabulary`: the description tokens and their roles,
                       what a split spec's tokens are checked against
``program(i)``         a :class:`Description` (``.readable``, ``.tokens``, ``.length``, ...)
=====================  =================================================================

Items play the role of scenes everywhere (episodes draw item ids; ``space.scene(j)`` is
``{"objects": [{"attribute": "wet", "object": "dog"}]}`` for a pair item).  Oracles take
item ids; a scene dict cannot be evaluated, since an extension says nothing about items
outside the bank.

Build one with :meth:`ExtensionSpace.from_extensions` (any sets of items) or
:func:`bayes_concepts.suites.pairs.pair_space` (an attribute-object benchmark); save and load
it like a HypothesisSpace; :func:`bayes_concepts.spaces.load_space` reads either.

On disk (``manifest.json`` has ``"kind": "extension"``), besides the files of every
space (:mod:`bayes_concepts.engine.store`; ``scenes.npy`` holds int8 or int16 (N, 1, A)
item label codes):

=======================  ===============================================================
``concepts.jsonl``       ``id``, ``description``, ``parts`` ([[role, value], ...]),
                         ``length``, ``log_prob``, ``count``, ``synonym_class``
``items.json``           item names (list of N strings), in item order
``vocabulary.json``      the item schema (attributes, values) and the description roles
``splits/*.toml``        split specs that came with the space (optional)
=======================  ===============================================================
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..bits import pack_bits, unpack_bits
from ..errors import BayesConceptsError
from ..scenes.codes import codes_to_scene
from ..scenes.grid import GRID_COLORS, decode_grid
from ..scenes.schema import Attribute, SceneSchema
from ..engine import store as _store
from ..engine.test_bank import draw_test_bank
from .build import synonym_classes as _synonym_classes
from .concept_space import ConceptSpace, SpaceCapabilityError, space_kinds

__all__ = ["ExtensionSpace", "Description", "Vocabulary", "ExtensionSpaceError", "KIND"]

KIND = "extension"
KIND_VERSION = 1
#: the kind's own files (besides ``splits/*.toml``)
FILES = ("items.json", "vocabulary.json")
#: the concept table's columns besides ``id``: (key, types, lowest, highest)
CONCEPT_FIELDS = (("description", str, None, None), ("parts", list, None, None), ("length", int, 0, 32767),
                  ("log_prob", (int, float), -np.inf, np.inf), ("count", int, 0, None),
                  ("synonym_class", int, 0, None))
_SPEC_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*\.toml$")


class ExtensionSpaceError(BayesConceptsError):
    """Extensions, descriptions or item labels that cannot make a space; names what and where."""


# ============================================================================ descriptions
@dataclass(frozen=True)
class Description:
    """A concept's description: what ``space.program(i)`` returns for an extension space.

    Attributes
    ----------
    text : str
        Tokens separated by single spaces (``"wet dog"``); also ``postfix`` and ``prefix``.
    parts : tuple of (role, value) pairs
        The structured description (``(("attribute", "wet"), ("object", "dog"))``); for a
        description without roles every token is a part of role ``"token"``.
    length : int
        l(h) as the space gives it (default: the number of tokens).
    """

    text: str
    parts: tuple
    length: int

    @property
    def tokens(self) -> tuple:
        return tuple(self.text.split())

    @property
    def postfix(self) -> str:
        return self.text

    @property
    def prefix(self) -> str:
        return self.text

    @property
    def readable(self) -> str:
        if len(self.parts) > 1 and all(role != "token" for role, _ in self.parts):
            return "(" + ", ".join(str(v) for _, v in self.parts) + ")"
        return self.text

    @property
    def latex(self) -> str:
        return r"\text{" + self.readable.replace("_", r"\_") + "}"

    uses_x = False
    quantifier = None

    def collapsed(self) -> "Description":
        return self


@dataclass(frozen=True)
class Vocabulary:
    """The description tokens of an extension space and their roles: the stand-in for a
    grammar where downstream code checks tokens (split specs) or names the domain.

    token_kinds : dict token -> role (``"attribute"``, ``"object"``, ``"token"``, ...)
    roles : tuple of role names, in description order
    source : str, how the vocabulary is named in messages
    """

    token_kinds: dict
    roles: tuple = ()
    source: str = "<extension space vocabulary>"

    @property
    def token_hint(self) -> str:
        """What a valid token looks like, for error messages."""
        examples = []
        for role in self.roles or ("token",):
            tok = next((t for t, r in self.token_kinds.items() if r == role), None)
            if tok is not None:
                examples.append(f"{'an' if role[:1] in 'aeiou' else 'a'} {role} such as {tok!r}")
        return " or ".join(examples) or "a token of a concept description"

    def as_dict(self) -> dict:
        return {"roles": list(self.roles), "token_kinds": dict(sorted(self.token_kinds.items())),
                "source": self.source}


def _schema_to_dict(schema: SceneSchema) -> dict:
    return {"attributes": [{"name": a.name, "values": list(a.values), "ordered": a.ordered}
                           for a in schema.attributes]}


def _schema_from_dict(d: dict) -> SceneSchema:
    attrs = tuple(Attribute(a["name"], tuple(a["values"]), bool(a.get("ordered", False))) for a in d["attributes"])
    return SceneSchema(attrs, max_objects=1, min_objects=1, sample_min_objects=1)


def item_schema(labels: dict) -> tuple:
    """(schema, codes) of per-item labels ``{attribute: sequence of N values}``: one
    categorical attribute per key (values sorted), codes int8 (N, 1, A) -- int16 when an
    attribute has more than 127 values."""
    names = list(labels)
    if not names:
        raise ExtensionSpaceError("item labels: need at least one attribute")
    n = {len(v) for v in labels.values()}
    if len(n) != 1:
        raise ExtensionSpaceError(f"item labels: the attributes label different numbers of items ({sorted(n)})")
    attrs, cols = [], []
    for name in names:
        values = [str(v) for v in labels[name]]
        uniq = tuple(sorted(set(values)))
        attrs.append(Attribute(str(name), uniq))
        index = {v: i for i, v in enumerate(uniq)}
        cols.append(np.fromiter((index[v] for v in values), np.int64, len(values)))
    dtype = np.int8 if max(a.n_values for a in attrs) <= 127 else np.int16
    if max(a.n_values for a in attrs) > np.iinfo(np.int16).max:
        raise ExtensionSpaceError("item labels: an attribute has more than 32,767 values")
    codes = np.stack(cols, axis=1).astype(dtype)[:, None, :] if cols[0].size else np.zeros((0, 1, len(attrs)), dtype)
    return SceneSchema(tuple(attrs), max_objects=1, min_objects=1, sample_min_objects=1), codes


# ============================================================================== the space
@space_kinds.register(KIND)
@dataclass(eq=False, kw_only=True, repr=False)
class ExtensionSpace(ConceptSpace):
    """Concepts given as sets of items (ids 0..n-1 in the order given) and their data.

    Besides every space's fields (:class:`~bayes_concepts.spaces.concept_space.ConceptSpace`;
    ``log_pcfg`` holds description log-probabilities, 0 when none was given):

    Attributes
    ----------
    descriptions : list of str, (n,)
        One token string per concept (also :attr:`programs`); unique.
    parts : list of tuples, (n,)
        Structured descriptions: ((role, value), ...) per concept.
    scene_codes : int8 or int16 ndarray, (N, 1, A)
        Item labels as codes of :attr:`schema` (each item a one-object scene).
    item_names : list of str, (N,)
    schema : SceneSchema
        The item labels' attributes (max_objects 1).
    vocabulary : Vocabulary
        Description tokens and their roles (also :attr:`grammar`).
    spec_files : dict
        Split specs saved with the space: file name -> TOML text.
    """

    descriptions: list
    parts: list
    item_names: list
    schema: SceneSchema
    vocabulary: Vocabulary
    spec_files: dict = field(default_factory=dict)

    kind = KIND
    scene_noun = "item"

    # ------------------------------------------------------------------ access
    @property
    def programs(self) -> list:
        """The descriptions: what split rules and reports read where a program space has programs."""
        return self.descriptions

    @property
    def grammar(self) -> Vocabulary:
        """The vocabulary: split specs check their tokens against ``grammar.token_kinds``."""
        return self.vocabulary

    @property
    def n_items(self) -> int:
        return self.n_scenes

    def program(self, i: int) -> Description:
        return Description(self.descriptions[i], tuple(self.parts[i]), int(self.lengths[i]))

    def scene(self, j: int) -> dict:
        """Item ``j`` as a one-object scene dict; ``"item"`` holds its name."""
        out = codes_to_scene(np.asarray(self.scene_codes[j]), self.schema)
        out["item"] = self.item_names[j]
        return out

    def items(self, i: int) -> np.ndarray:
        """int64: the item ids of concept ``i``'s extension."""
        return np.flatnonzero(self.signature(i))

    def scene_rows(self, scenes) -> np.ndarray:
        """Per-scene concept bitsets uint64 (n, ceil(n_concepts/64)) of scenes given as item ids,
        or as dicts: ``{"item": name}`` (an item of the bank), or -- when the descriptions' roles
        are the item labels, as in a pair space -- a one-object scene such as ``{"objects":
        [{"attribute": "wet", "object": "dog"}]}``, on which a concept is true when every part
        of its description matches the object's label.  A dict that is neither is an
        :class:`ExtensionSpaceError` naming it."""
        scenes = list(scenes)
        if all(isinstance(x, (int, np.integer)) for x in scenes):
            return self.scene_concepts()[np.asarray(scenes, np.int64)]
        item_ids = self.index.item_ids()
        labels = set(self.schema.names)
        by_parts = all(r in labels for p in self.parts for r, _ in p)
        rows = np.zeros((len(scenes), self.n_concepts), bool)
        for k, sc in enumerate(scenes):
            if isinstance(sc, (int, np.integer)):
                rows[k] = unpack_bits(self.scene_concepts()[int(sc)], self.n_concepts)
            elif isinstance(sc, dict) and sc.get("item") in item_ids:
                rows[k] = unpack_bits(self.scene_concepts()[item_ids[sc["item"]]], self.n_concepts)
            elif isinstance(sc, dict) and by_parts and isinstance(sc.get("objects"), list) and len(sc["objects"]) == 1:
                obj = sc["objects"][0]
                rows[k] = [all(str(obj.get(r)) == v for r, v in p) for p in self.parts]
            else:
                raise ExtensionSpaceError(f"scene {k}: not an item of this space (give an item id, {{'item': name}}"
                                          + (", or one object with its labels" if by_parts else "") + ")")
        return pack_bits(rows)

    def find(self, description) -> int | None:
        """Id of a description (string, tokens or a :class:`Description`), or None."""
        text = description.text if isinstance(description, Description) else (
            " ".join(description.split()) if isinstance(description, str) else " ".join(description))
        return self.index.concept_ids().get(text)

    def info(self) -> dict:
        """Counts and histograms (``bayes-concepts space info --json``)."""
        lengths = {int(k): int(c) for k, c in zip(*np.unique(self.lengths, return_counts=True))}
        sizes = np.bincount(self.synonym_classes) if self.n_concepts else np.zeros(0, np.int64)
        return {"kind": KIND, "concepts": self.n_concepts, "items": self.n_scenes,
                "test_bank": self.test_bank.n_scenes, "synonym_classes": self.n_synonym_classes,
                "roles": list(self.vocabulary.roles),
                "item_attributes": {a.name: a.n_values for a in self.schema.attributes},
                "params": self.params, "stages": self.stages, "length_histogram": lengths,
                "items_per_concept": {"min": int(self.counts.min()) if self.n_concepts else 0,
                                      "median": float(np.median(self.counts)) if self.n_concepts else 0.0,
                                      "max": int(self.counts.max()) if self.n_concepts else 0},
                "synonym_class_size_histogram": {int(k): int(c) for k, c in zip(*np.unique(sizes, return_counts=True))},
                "splits": sorted(Path(f).stem for f in self.spec_files)}

    def summary_lines(self) -> list:
        """A few lines describing the space (``bayes-concepts space info``)."""
        d = self.info()
        where = f"{self.path}: " if self.path else ""
        attrs = ", ".join(f"{k} ({v:,} values)" for k, v in d["item_attributes"].items())
        ipc = d["items_per_concept"]
        return [f"{where}extension space: {d['concepts']:,} concepts in {d['synonym_classes']:,} synonym classes, "
                f"{d['items']:,} items, test bank {d['test_bank']:,} items",
                f"item labels: {attrs}; description roles: {', '.join(d['roles']) or 'none'}",
                f"items per concept: min {ipc['min']:,}, median {ipc['median']:,.0f}, max {ipc['max']:,}",
                "description length: " + ", ".join(f"{k}: {c:,}" for k, c in d["length_histogram"].items()),
                f"splits saved with it: {', '.join(d['splits']) or 'none'}"]

    def atoms_and_compounds(self, i: int) -> tuple:
        """(atoms, compounds) of concept ``i`` for the divergence measures and the compound and
        atom oracles: two lists of str, with repeats.

        A space whose builder recorded them, ``params["structure"]`` = ``{description:
        {"atoms": {atom: count}, "compounds": {compound: count}}}`` (ConceptWorld: the leaves
        and edges of each concept's definition graph), gives those, each name repeated by its
        count, in sorted order.  Otherwise the atoms are the concept's parts, named by their
        description tokens (``"wet"``, ``"dog"``; a token has one role); the compounds every
        pair of parts in description order, named by their tokens -- for an (attribute,
        object) pair the pair itself (``"wet dog"``); a one-part concept has none.  A
        ConceptWorld space saved before the structure was recorded is a one-line
        :class:`ExtensionSpaceError` asking for a rebuild (its parts, family and n, are not
        its atoms)."""
        recorded = (self.params or {}).get("structure")
        if recorded is not None:
            return _recorded_structure(recorded, self.descriptions[i])
        if self.has_grids:
            raise ExtensionSpaceError("this ConceptWorld space was built before its definition graphs were recorded "
                                      "(params has no 'structure'), so it has no atoms or compounds; rebuild it with "
                                      "space build OUT --preset conceptworld")
        toks = self.descriptions[i].split()
        parts = toks if len(toks) == len(self.parts[i]) else [f"{r}={v}" for r, v in self.parts[i]]
        comps = [f"{parts[a]} {parts[b]}" for a in range(len(parts)) for b in range(a + 1, len(parts))]
        return parts, comps

    # ------------------------------------------------------------------ grid items
    @property
    def has_grids(self) -> bool:
        """Whether the items are grid scenes: the space's builder recorded ``params["grid_size"]``
        and each item's name is ``"j:<encoded grid>"`` (:func:`bayes_concepts.scenes.grid.encode_grid`)."""
        return "grid_size" in (self.params or {})

    def grid_colors(self) -> tuple:
        """The palette of the grids (colour names, by index)."""
        return tuple((self.params or {}).get("colors") or GRID_COLORS)

    def grid(self, j: int) -> np.ndarray:
        """int8 (size, size): grid scene ``j``, decoded from its item name."""
        if not self.has_grids:
            raise SpaceCapabilityError("this space's items are not grids (no grid_size among its params)")
        return decode_grid(self.item_names[int(j)].split(":", 1)[1], int(self.params["grid_size"]))

    def grids(self) -> np.ndarray:
        """int8 (N_items, size, size): every grid scene, decoded from the item names."""
        return np.stack([self.grid(j) for j in range(len(self.item_names))])

    def with_spec_files(self, spec_files: dict) -> "ExtensionSpace":
        """A copy (sharing the arrays, unsaved) that carries ``spec_files`` (file name -> TOML
        text) besides those it has: the split specs saved with it."""
        return dataclasses.replace(self, spec_files={**self.spec_files, **spec_files}, path=None)

    def spec_paths(self) -> dict:
        """``{name: path}`` of the split specs saved with the space (empty if unsaved)."""
        if self.path is None:
            return {}
        return {Path(f).stem: Path(self.path) / "splits" / f for f in sorted(self.spec_files)}

    def _own_fields(self) -> tuple:
        return ([tuple(p) for p in self.parts], self.item_names, self.schema, self.vocabulary, self.spec_files)

    # ------------------------------------------------------------------ making
    @classmethod
    def from_extensions(cls, extensions, descriptions=None, *, n_items: int | None = None, item_names=None,
                        item_labels: dict | None = None, parts=None, lengths=None, log_probs=None,
                        min_count: int = 1, test_positives: int = 3, seed: int = 0, params: dict | None = None,
                        spec_files: dict | None = None) -> "ExtensionSpace":
        """A space whose concept ``i`` is the set of items ``extensions[i]``.

        Parameters
        ----------
        extensions : sequence of int arrays, or bool array (n, N)
            Item ids of each concept (ids in 0..N-1), or a membership matrix.
        descriptions : sequence of str, optional
            One unique token string per concept (default ``"c0"``, ``"c1"``, ...).
        n_items : int, optional
            N (default: from ``item_names``, ``item_labels``, or the largest id + 1).
        item_names : sequence of str, optional
            Names of the N items (default ``"0"``, ``"1"``, ...).
        item_labels : dict attribute -> sequence of N values, optional
            Item labels (the learners' schema features: one-hot per attribute); default one
            attribute ``item`` whose value is the item's name.
        parts : sequence of ((role, value), ...), optional
            Structured descriptions (default: each token a part of role ``"token"``).
        lengths : int array (n,), optional
            Description lengths for the ``length`` prior (default: number of tokens).
        log_probs : float array (n,), optional
            Description log-probabilities (nats) for the ``pcfg`` prior (default 0).
        min_count : int
            Concepts with fewer items are dropped (recorded in ``stages``).
        test_positives : int
            Positives per concept in the test bank (CURI: 3).
        seed : int
            Seed of the test bank.
        """
        t0 = time.perf_counter()
        packed, counts, n_items = _packed_membership(extensions, n_items, item_names, item_labels)
        n = packed.shape[0]
        if descriptions is None:
            descriptions = [f"c{i}" for i in range(n)]
        descriptions = [_normalise_description(d, i) for i, d in enumerate(descriptions)]
        if len(descriptions) != n:
            raise ExtensionSpaceError(f"descriptions: {len(descriptions)} given for {n} concepts")
        seen = {}
        for i, d in enumerate(descriptions):
            if d in seen:
                raise ExtensionSpaceError(f"descriptions: concept {i} repeats the description {d!r} of concept "
                                          f"{seen[d]} (descriptions must be unique)")
            seen[d] = i
        if parts is None:
            parts = [tuple(("token", t) for t in d.split()) for d in descriptions]
        parts = [tuple((str(r), str(v)) for r, v in p) for p in parts]
        if len(parts) != n:
            raise ExtensionSpaceError(f"parts: {len(parts)} given for {n} concepts")
        lengths = (np.array([len(d.split()) for d in descriptions], np.int64) if lengths is None
                   else np.asarray(lengths))
        log_probs = np.zeros(n) if log_probs is None else np.asarray(log_probs, np.float64)
        for name, arr in (("lengths", lengths), ("log_probs", log_probs)):
            if arr.shape != (n,):
                raise ExtensionSpaceError(f"{name}: shape {arr.shape}, expected ({n},)")
        if not np.issubdtype(lengths.dtype, np.integer) or (n and (lengths.min() < 0 or lengths.max() > 32767)):
            raise ExtensionSpaceError("lengths: expected integers in 0..32767")
        if np.isnan(log_probs).any() or np.isposinf(log_probs).any():
            raise ExtensionSpaceError("log_probs: NaN or +inf")
        if item_names is None:
            item_names = [str(j) for j in range(n_items)]
        item_names = [str(s) for s in item_names]
        if len(item_names) != n_items:
            raise ExtensionSpaceError(f"item_names: {len(item_names)} names for {n_items} items")
        schema, codes = item_schema(item_labels if item_labels is not None else {"item": item_names})
        if codes.shape[0] != n_items:
            raise ExtensionSpaceError(f"item_labels: label {codes.shape[0]} items, expected {n_items}")

        keep = counts >= int(min_count)
        stages = {"given": int(n), "after_min_count": int(keep.sum())}
        idx = np.flatnonzero(keep)
        signatures = packed if len(idx) == n else np.ascontiguousarray(packed[idx])
        counts = counts[idx]
        descriptions = [descriptions[i] for i in idx]
        parts = [parts[i] for i in idx]
        classes = _synonym_classes(signatures)
        stages["synonym_classes"] = int(classes.max()) + 1 if len(classes) else 0
        test_bank = draw_test_bank(signatures, counts, int(test_positives), int(seed))
        stages["test_bank"] = test_bank.n_scenes
        token_kinds = {}
        for p, d in zip(parts, descriptions):
            toks = d.split()
            roles = [r for r, _ in p]
            for t, r in zip(toks, roles if len(roles) == len(toks) else ["token"] * len(toks)):
                if token_kinds.setdefault(t, r) != r:
                    raise ExtensionSpaceError(f"descriptions: token {t!r} has two roles, {token_kinds[t]!r} and "
                                              f"{r!r} (spell the two differently)")
        roles = tuple(dict.fromkeys(r for p in parts for r, _ in p))
        p = {"min_count": int(min_count), "test_positives": int(test_positives), "seed": int(seed)}
        p.update(params or {})
        return cls(descriptions=descriptions, parts=parts, lengths=lengths[idx].astype(np.int16),
                   log_pcfg=log_probs[idx], counts=counts, synonym_classes=classes, signatures=signatures,
                   scene_codes=codes, item_names=item_names, schema=schema,
                   vocabulary=Vocabulary(token_kinds, roles), test_bank=test_bank, params=p, stages=stages,
                   spec_files=dict(spec_files or {}), build_seconds={"total": time.perf_counter() - t0})

    # ------------------------------------------------------------------ store
    def _concept_rows(self) -> list:
        return [{"id": i, "description": d, "parts": [list(x) for x in self.parts[i]],
                 "length": int(self.lengths[i]), "log_prob": float(self.log_pcfg[i]),
                 "count": int(self.counts[i]), "synonym_class": int(self.synonym_classes[i])}
                for i, d in enumerate(self.descriptions)]

    def _own_files(self) -> dict:
        bad = [f for f in self.spec_files if not _SPEC_FILE.match(f)]
        if bad:
            raise ExtensionSpaceError(f"spec_files: {bad[0]!r} is not a plain file name ending in .toml")
        vocab = {"schema": _schema_to_dict(self.schema), "vocabulary": self.vocabulary.as_dict()}
        files = {"items.json": json.dumps(self.item_names, ensure_ascii=False).encode(),
                 "vocabulary.json": json.dumps(vocab, indent=1, ensure_ascii=False).encode()}
        files.update({f"splits/{name}": text.encode("utf-8") for name, text in sorted(self.spec_files.items())})
        return files

    def _manifest_section(self) -> dict:
        return {"kind": KIND, "kind_version": KIND_VERSION}

    @classmethod
    def load(cls, path, verify: bool = True) -> "ExtensionSpace":
        """Read a saved extension space; ``verify`` checks every file's sha256."""
        path = Path(path)
        manifest = _store.read_manifest(path, kind=KIND)
        if manifest.get("kind_version") != KIND_VERSION:
            raise _store.SpaceError(f"{path / 'manifest.json'}: extension-space version "
                                    f"{manifest.get('kind_version')!r}, this toolkit reads version {KIND_VERSION}; "
                                    "rebuild the space")
        manifest, common, columns = cls._read(path, KIND, FILES, CONCEPT_FIELDS, others="splits/", verify=verify)
        for lineno, parts in enumerate(columns["parts"], 1):
            if not all(isinstance(x, list) and len(x) == 2 and all(isinstance(y, str) for y in x) for x in parts):
                raise _store.SpaceError(f"{path / 'concepts.jsonl'} line {lineno}: parts: expected a list of "
                                        "[role, value] string pairs")
        try:
            item_names = json.loads(_store.read_text(path / "items.json"))
            vocab = json.loads(_store.read_text(path / "vocabulary.json"))
            if not isinstance(item_names, list) or not all(isinstance(x, str) for x in item_names):
                raise ValueError("items.json: expected a list of item names")
            schema = _schema_from_dict(vocab["schema"])
            v = vocab["vocabulary"]
            vocabulary = Vocabulary(dict(v["token_kinds"]), tuple(v["roles"]), v.get("source", Vocabulary.source))
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise _store.SpaceError(f"{path}: items.json or vocabulary.json is damaged ({str(exc)[:200]})") from None
        codes, c = common["scene_codes"], manifest["counts"]
        if (len(item_names) != c["scenes"] or codes.shape[1] != 1 or codes.shape[2] != schema.n_attributes
                or max(columns["count"], default=0) > c["scenes"]):
            raise _store.SpaceError(f"{path}: file sizes disagree with manifest.json counts")
        cls._check_codes(path, codes, schema, 0)
        specs = {name.split("/", 1)[1]: _store.read_text(path / name)
                 for name in manifest["files"] if name.startswith("splits/")}
        return cls(descriptions=columns["description"], parts=[tuple(tuple(x) for x in p) for p in columns["parts"]],
                   log_pcfg=np.array(columns["log_prob"], np.float64), item_names=item_names, schema=schema,
                   vocabulary=vocabulary, spec_files=specs, **common)


def _recorded_structure(recorded, description: str) -> tuple:
    """(atoms, compounds) of ``description`` from a space's ``params["structure"]`` (see
    :meth:`ExtensionSpace.atoms_and_compounds`); a missing or malformed entry is a one-line
    :class:`ExtensionSpaceError`."""
    entry = recorded.get(description) if isinstance(recorded, dict) else None
    if not isinstance(entry, dict):
        raise ExtensionSpaceError(f"params['structure'] has no atoms and compounds of concept {description!r}; "
                                  "rebuild the space")
    out = []
    for key in ("atoms", "compounds"):
        counts = entry.get(key)
        if not isinstance(counts, dict) or not all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 1
                for k, v in counts.items()):
            raise ExtensionSpaceError(f"params['structure'] of concept {description!r}: {key} must map names to "
                                      "counts >= 1; rebuild the space")
        out.append([name for name in sorted(counts) for _ in range(counts[name])])
    return tuple(out)


def _normalise_description(d, i) -> str:
    if not isinstance(d, str):
        d = " ".join(str(t) for t in d)
    text = " ".join(d.split())
    if not text:
        raise ExtensionSpaceError(f"descriptions: concept {i} has an empty description")
    return text


#: bytes of the dense membership rows :func:`_packed_membership` holds at once (a block of rows)
MEMBERSHIP_BLOCK_BYTES = 64 << 20


def _membership(extensions, n_items, item_names, item_labels) -> tuple:
    """``(n, N, rows)`` of extensions given as id lists or a bool matrix: ``rows(lo, hi)`` is the
    bool membership (hi - lo, N) of concepts lo..hi-1, built only for that block."""
    if n_items is None and item_names is not None:
        n_items = len(item_names)
    if n_items is None and item_labels:
        n_items = len(next(iter(item_labels.values())))
    if isinstance(extensions, np.ndarray) and extensions.ndim == 2 and extensions.dtype == np.bool_:
        if n_items is not None and extensions.shape[1] != n_items:
            raise ExtensionSpaceError(f"extensions: membership matrix has {extensions.shape[1]} columns, "
                                      f"{n_items} items")
        return extensions.shape[0], extensions.shape[1], lambda lo, hi: extensions[lo:hi]
    ids = []
    for i, ext in enumerate(extensions):
        a = np.asarray(list(ext) if not isinstance(ext, np.ndarray) else ext)
        if a.size and not np.issubdtype(a.dtype, np.integer):
            raise ExtensionSpaceError(f"extensions: concept {i} holds non-integer item ids ({a.dtype})")
        ids.append(a.astype(np.int64).ravel())
    top = max((int(a.max()) + 1 for a in ids if a.size), default=0)
    if n_items is None:
        n_items = top
    for i, a in enumerate(ids):
        if a.size and (a.min() < 0 or a.max() >= n_items):
            bad = int(a[(a < 0) | (a >= n_items)][0])
            raise ExtensionSpaceError(f"extensions: concept {i} holds item {bad}, outside 0..{n_items - 1}")

    def rows(lo, hi):
        member = np.zeros((hi - lo, int(n_items)), bool)
        for k, a in enumerate(ids[lo:hi]):
            member[k, a] = True
        return member
    return len(ids), int(n_items), rows


def _packed_membership(extensions, n_items, item_names, item_labels) -> tuple:
    """``(packed uint64 (n, ceil(N/64)), counts int64 (n,), N)``: the membership of
    :func:`_membership` packed into signature words block by block, so that a dense (n, N)
    matrix of id lists is never built (at most :data:`MEMBERSHIP_BLOCK_BYTES` of it at once)."""
    n, n_items, rows = _membership(extensions, n_items, item_names, item_labels)
    words = (n_items + 63) // 64
    packed = np.zeros((n, words), np.uint64)
    counts = np.zeros(n, np.int64)
    step = max(1, MEMBERSHIP_BLOCK_BYTES // max(1, n_items))
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        block = rows(lo, hi)
        counts[lo:hi] = block.sum(axis=1, dtype=np.int64)
        packed[lo:hi] = pack_bits(block)
    return packed, counts, n_items


def description_log_prob(parts, n_values: dict) -> float:
    """log p of a description whose parts are drawn uniformly from their roles' values:
    Σ_parts −log(number of values of the part's role) (nats)."""
    return -sum(math.log(n_values[r]) for r, _ in parts)

