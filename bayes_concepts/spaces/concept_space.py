"""The space as a contract: what every kind of concept space holds and answers.

Every stage after the build (splits, episodes, oracles, learners, the gap, reports) reads a
:class:`ConceptSpace` and only what it declares here.  A *kind* of space subclasses it and
differs only in how a concept is described (a program, a pair of labels, ...), how scenes
or items outside the bank are read (:meth:`ConceptSpace.scene_rows`), its vocabulary and
its own files and manifest section.  Kinds are registered in :data:`space_kinds` (one
module and one registration each) and :func:`load_space` reads any of them.

What every space has
--------------------
=======================  ===================================================================
``programs``             list of str (n,): one description string per concept (the canonical
                         postfix program, or the description tokens); split rules match its
                         tokens
``lengths``              int16 (n,): description length l(h), for the ``length`` prior
``log_pcfg``             float64 (n,): description log-probability (nats), the ``pcfg`` prior
``counts``               int64 (n,): |ext h|, scenes (items) of the bank the concept holds
``synonym_classes``      int32 (n,): concepts with identical extensions share a class,
                         numbered in order of their first member
``signatures``           uint64 (n, ceil(N/64)): packed extensions (bit j of word w: scene
                         64·w + j); memory-mapped when loaded
``scene_codes``          int8/int16 (N, max_objects, n_attributes): the scene (item) bank
``test_bank``            :class:`~bayes_concepts.engine.test_bank.TestBank`: where AP is
                         computed
``schema``, ``grammar``  the scenes' attributes; the vocabulary split specs are checked
                         against (a :class:`~bayes_concepts.lot.grammar.Grammar` when
                         ``has_grammar``)
``params``, ``stages``   how it was made; survivors after each stage
``path``                 where it was saved or loaded from (None before a save)
``index``                its :class:`~bayes_concepts.spaces.space_index.SpaceIndex` (every
                         derived structure, built on demand)
=======================  ===================================================================

Capabilities are declared by each kind as class attributes, never guessed:
``has_programs`` (concepts are programs: ``program(i)`` parses, the synonym prover
applies), ``has_grammar`` (``grammar`` is a grammar file's :class:`Grammar`), and
``has_pictures`` (scenes can be rendered as pictures and sounds: ``rendered_bank``); a
space of items declares ``has_grids`` when its items are grids of coloured points.
What a space's scenes carry besides their codes is asked, never probed: ``positions()``
and ``relations()`` give the objects' 3-D centres and the relations between them, or None
(the default: a program space whose scenes carry relations has both, saved as optional
arrays of the store).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from ..bits import unpack_bits
from ..engine import store as _store
from ..engine.index import adopt_build_index
from ..engine.test_bank import TestBank
from ..registry import Registry
from .space_index import SpaceIndex

__all__ = ["ConceptSpace", "SpaceCapabilityError", "space_kinds", "load_space"]


class SpaceCapabilityError(_store.SpaceError):
    """A space asked for something its kind does not have (pictures of a space of items)."""


@dataclass(eq=False, kw_only=True, repr=False)
class ConceptSpace:
    """Concepts (ids 0..n-1), their extensions over a scene or item bank, synonym classes and
    the test bank: what every kind of space holds (see the module docstring for the
    fields, their dtypes and shapes).  Make one through a kind (``HypothesisSpace.build``,
    ``ExtensionSpace.from_extensions``) or :func:`load_space`."""

    lengths: np.ndarray
    log_pcfg: np.ndarray
    counts: np.ndarray
    synonym_classes: np.ndarray
    signatures: np.ndarray
    scene_codes: np.ndarray
    test_bank: TestBank
    params: dict
    stages: dict
    path: Path | None = None
    build_seconds: dict = field(default_factory=dict)
    domain_ids: np.ndarray | None = None
    domains: np.ndarray | None = None
    test_domains: np.ndarray | None = None
    _index: SpaceIndex | None = field(default=None, init=False, repr=False)

    #: the manifest's ``kind`` of this kind of space
    kind: ClassVar[str] = ""
    #: what the space's concepts, scenes and vocabulary allow (declared by each kind)
    has_programs: ClassVar[bool] = False
    has_grammar: ClassVar[bool] = False
    has_pictures: ClassVar[bool] = False
    #: what a scene of the bank is called in messages ("scene", "item")
    scene_noun: ClassVar[str] = "scene"

    @property
    def has_grids(self) -> bool:
        """Whether the bank's scenes are grids of coloured points (read with ``grid(j)``), which
        no attribute code describes; False for every kind but spaces of grid items."""
        return False

    # ------------------------------------------------------------------ sizes
    @property
    def n_concepts(self) -> int:
        return len(self.programs)

    @property
    def n_scenes(self) -> int:
        return int(self.scene_codes.shape[0])

    @property
    def n_synonym_classes(self) -> int:
        return int(np.max(self.synonym_classes)) + 1 if self.n_concepts else 0

    # ------------------------------------------------------------------ one concept
    def length(self, i: int) -> int:
        return int(self.lengths[i])

    def count(self, i: int) -> int:
        return int(self.counts[i])

    def synonym_class(self, i: int) -> int:
        return int(self.synonym_classes[i])

    def synonyms(self, i: int) -> np.ndarray:
        """Ids of the concepts with the same extension as ``i`` (``i`` included)."""
        return np.flatnonzero(self.synonym_classes == self.synonym_classes[i])

    def signature(self, i: int) -> np.ndarray:
        """bool (n_scenes,): the concept's truth value on every scene (item) of the bank."""
        return unpack_bits(np.asarray(self.signatures[i]), self.n_scenes)

    # ------------------------------------------------------------------ question domains
    @property
    def has_domains(self) -> bool:
        """Whether some concept is defined on fewer than every scene (then ``domain_ids``,
        ``domains`` and ``test_domains`` hold their domains; else all three are None)."""
        return self.domain_ids is not None and len(self.domain_ids) > 0

    def domain_row(self, i: int) -> int:
        """Row of concept ``i`` in ``domains``/``test_domains``, or -1 (defined on every scene)."""
        if not self.has_domains:
            return -1
        k = int(np.searchsorted(self.domain_ids, i))
        return k if k < len(self.domain_ids) and int(self.domain_ids[k]) == i else -1

    def domain(self, i: int) -> np.ndarray:
        """bool (n_scenes,): the scenes concept ``i`` is defined on (its extension lies within)."""
        k = self.domain_row(i)
        if k < 0:
            return np.ones(self.n_scenes, bool)
        return unpack_bits(np.asarray(self.domains[k]), self.n_scenes)

    def domain_count(self, i: int) -> int:
        """Number of scenes concept ``i`` is defined on."""
        k = self.domain_row(i)
        return self.n_scenes if k < 0 else int(np.bitwise_count(np.asarray(self.domains[k])).sum())

    def domain_counts(self) -> np.ndarray:
        """int64 (n_concepts,): the number of scenes each concept is defined on."""
        out = np.full(self.n_concepts, self.n_scenes, np.int64)
        if self.has_domains:
            out[np.asarray(self.domain_ids, np.int64)] = np.bitwise_count(np.asarray(self.domains)).sum(
                axis=1, dtype=np.int64)
        return out

    def test_domain(self, i: int) -> np.ndarray:
        """bool (T,): which test-bank scenes concept ``i`` is defined on."""
        k = self.domain_row(i)
        if k < 0:
            return np.ones(self.test_bank.n_scenes, bool)
        return unpack_bits(np.asarray(self.test_domains[k]), self.test_bank.n_scenes)

    def find(self, description) -> int | None:
        """Id of a concept given by its description string, or None (kinds parse other forms)."""
        return self.index.concept_ids().get(description)

    # ------------------------------------------------------------------ derived structures
    @property
    def index(self) -> SpaceIndex:
        """The space's :class:`SpaceIndex`: every structure derived from it, built on demand."""
        if self._index is None:
            self._index = SpaceIndex(self)
        return self._index

    def scene_concepts(self):
        """Per-scene concept bitsets: :meth:`SpaceIndex.scene_concepts`."""
        return self.index.scene_concepts()

    def class_representatives(self) -> np.ndarray:
        """int64 (n_classes,): the first concept of each synonym class."""
        return self.index.class_representatives()

    def test_bank_index(self) -> tuple:
        """CSR ``(ptr, idx)`` of the test-bank scenes of each synonym class:
        :meth:`SpaceIndex.test_bank_index`."""
        return self.index.test_bank_index()

    def test_bank_scene_classes(self) -> tuple:
        """``(lane_ptr, classes)``: :meth:`SpaceIndex.test_bank_scene_classes`."""
        return self.index.test_bank_scene_classes()

    # ------------------------------------------------------------------ what kinds answer
    def program(self, i: int):
        """Concept ``i``'s description object (a parsed program, a pair, ...)."""
        raise NotImplementedError

    def scene(self, j: int) -> dict:
        """Scene (item) ``j`` of the bank as a dict in the JSON Lines scene format."""
        raise NotImplementedError

    def scene_rows(self, scenes) -> np.ndarray:
        """uint64 (n, ceil(n_concepts/64)): which concepts hold on each of ``scenes``, given as
        bank ids or as scene dicts (what a dict may be depends on the kind)."""
        raise NotImplementedError

    def positions(self, scenes=None):
        """float32 (n, max_objects, 3): the 3-D centres of the objects of ``scenes`` (bank ids,
        or a slice; None: every scene), NaN in empty slots; None when the space's scenes have
        no positions (the default; a program space whose scenes carry relations has them)."""
        return None

    def relations(self, scenes=None):
        """bool (n, R, max_objects, max_objects): the relations of ``scenes`` (as in
        :meth:`positions`), ``[i, r, a, b]`` iff in scene ``i`` object ``a`` is relation ``r``
        of object ``b``; None when the space's scenes carry no relations (the default)."""
        return None

    def atoms_and_compounds(self, i: int) -> tuple:
        """(atoms, compounds) of concept ``i`` for the divergence measures (kinds without
        programs; program spaces derive them from the parsed program)."""
        raise SpaceCapabilityError(f"a {self.kind} space derives atoms from its programs")

    def spec_paths(self) -> dict:
        """``{name: path}`` of split specs saved with the space (none unless the kind keeps some)."""
        return {}

    def rendered_bank(self, modality: str = "image", **options) -> np.ndarray:
        """The scene bank rendered as pictures or sounds (kinds with ``has_pictures``)."""
        raise SpaceCapabilityError(f"a space of {self.scene_noun}s ({self.kind}) has no pictures or sounds: "
                                   "its items are given, not scenes that can be drawn")

    # ------------------------------------------------------------------ identity
    def manifest_sha256(self) -> str | None:
        """sha256 of the saved ``manifest.json`` (identifies the space), None if not saved."""
        return None if self.path is None else _store.manifest_sha256(self.path)

    def _own_fields(self) -> tuple:
        """The kind's own values that equality compares (besides every space's arrays)."""
        return ()

    def _own_arrays(self) -> dict:
        """The kind's optional arrays (:data:`~bayes_concepts.engine.store.OPTIONAL_ARRAYS`):
        file name -> array, or None for one this space does not have (then it is neither
        saved nor listed in the manifest).  Equality compares them too."""
        return {}

    def __eq__(self, other) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        arrays = ("lengths", "log_pcfg", "counts", "synonym_classes", "signatures", "scene_codes")
        tb = ("scene_ids", "drawn_for", "signatures")
        return (self.programs == other.programs and self.params == other.params and self.stages == other.stages
                and self._own_fields() == other._own_fields()
                and all(np.array_equal(np.asarray(getattr(self, a)), np.asarray(getattr(other, a))) for a in arrays)
                and all(np.array_equal(np.asarray(getattr(self.test_bank, a)), np.asarray(getattr(other.test_bank, a)))
                        for a in tb)
                and _same_arrays(self._own_arrays(), other._own_arrays()))

    __hash__ = None

    def __repr__(self):
        where = f", path={str(self.path)!r}" if self.path else ""
        return (f"{type(self).__name__}({self.n_concepts:,} concepts, {self.n_synonym_classes:,} synonym classes, "
                f"{self.n_scenes:,} {self.scene_noun}s, test bank {self.test_bank.n_scenes:,}{where})")

    # ------------------------------------------------------------------ store
    def _concept_rows(self) -> list:
        """The lines of ``concepts.jsonl`` (dicts, in id order)."""
        raise NotImplementedError

    def _own_files(self) -> dict:
        """The kind's own files: name -> bytes."""
        raise NotImplementedError

    def _manifest_section(self) -> dict:
        """The kind's fields of ``manifest.json`` (``kind``, extra counts, ...)."""
        return {}

    def _counts(self) -> dict:
        return {"concepts": self.n_concepts, "scenes": self.n_scenes, "test_bank": self.test_bank.n_scenes,
                "synonym_classes": self.n_synonym_classes}

    def save(self, path, overwrite: bool = False) -> Path:
        """Write the space to directory ``path`` atomically (:mod:`bayes_concepts.engine.store`);
        returns the path.  A large build's per-scene index goes with it."""
        section = self._manifest_section()
        manifest = {"format": "bayes_concepts.hypothesis_space", "format_version": _store.FORMAT_VERSION,
                    "params": self.params, "seed": self.params.get("seed"), "stages": self.stages,
                    **section, "counts": {**self._counts(), **section.get("counts", {})}}
        arrays = {"signatures.npy": self.signatures, "scenes.npy": self.scene_codes,
                  "test_scene_ids.npy": self.test_bank.scene_ids, "test_drawn_for.npy": self.test_bank.drawn_for,
                  "test_signatures.npy": self.test_bank.signatures,
                  **{name: a for name, a in self._own_arrays().items() if a is not None}}
        path = _store.write_space_directory(path, overwrite, concepts=self._concept_rows(),
                                            texts=self._own_files(), arrays=arrays, manifest=manifest)
        adopt_build_index(self, path)
        self.path = path
        return path

    @staticmethod
    def _read(path, kind: str, files: tuple, fields: tuple, others=None, verify: bool = True,
              optional_arrays: dict | None = None) -> tuple:
        """``(manifest, fields, columns)`` read through the store: the common constructor
        arguments (arrays, test bank, params, stages, path) and the concept table's columns.
        optional_arrays: file of :data:`~bayes_concepts.engine.store.OPTIONAL_ARRAYS` -> the
        kind's constructor argument that holds it; each is among the arguments, its array
        when the manifest lists the file, else None (the kind checks which it needs)."""
        optional_arrays = dict(optional_arrays or {})
        manifest, arrays, columns = _store.read_space_directory(path, kind, files=files, fields=fields,
                                                                others=others, optional_arrays=tuple(optional_arrays),
                                                                verify=verify)
        common = dict(signatures=arrays["signatures.npy"], scene_codes=arrays["scenes.npy"],
                      counts=np.array(columns["count"], np.int64),
                      synonym_classes=np.array(columns["synonym_class"], np.int32),
                      lengths=np.array(columns["length"], np.int16),
                      test_bank=TestBank(arrays["test_scene_ids.npy"], arrays["test_drawn_for.npy"],
                                         arrays["test_signatures.npy"]),
                      params=manifest["params"], stages=manifest["stages"], path=Path(path),
                      **{key: arrays.get(name) for name, key in optional_arrays.items()})
        return manifest, common, columns

    @staticmethod
    def _check_codes(path, codes, schema, lowest: int):
        """Every attribute's codes in ``lowest``..n_values-1 (-1: an absent object)."""
        if codes.size:
            lo, hi = codes.min(axis=(0, 1)), codes.max(axis=(0, 1))
            for k, attr in enumerate(schema.attributes):
                if lo[k] < lowest or hi[k] >= len(attr.values):
                    raise _store.SpaceError(f"{Path(path) / 'scenes.npy'}: attribute {attr.name!r} has value codes "
                                            f"outside {lowest}..{len(attr.values) - 1}")


def _same_arrays(mine: dict, theirs: dict) -> bool:
    """Two kinds' optional arrays are the same: the same names have arrays, all equal (NaN
    equal to NaN)."""
    mine = {k: v for k, v in mine.items() if v is not None}
    theirs = {k: v for k, v in theirs.items() if v is not None}
    return mine.keys() == theirs.keys() and all(
        np.array_equal(np.asarray(v), np.asarray(theirs[k]), equal_nan=np.asarray(v).dtype.kind == "f")
        for k, v in mine.items())


#: kind of space (the manifest's ``kind``) -> its class; each kind registers itself
space_kinds = Registry("kind of space", builtins=("bayes_concepts.spaces.hypothesis_space",
                                                  "bayes_concepts.spaces.extension_space"))


def load_space(path, verify: bool = True) -> ConceptSpace:
    """Read a saved space of any kind, as its manifest's ``kind`` says; ``verify`` checks
    every file's sha256 against the manifest."""
    kind = _store.space_kind(_store.read_manifest(path, kind=None))
    if kind not in space_kinds:
        raise _store.SpaceError(f"{Path(path) / 'manifest.json'}: unknown kind of space {kind!r} (this toolkit "
                                f"reads {', '.join(space_kinds)})")
    return space_kinds.get(kind).load(path, verify=verify)
