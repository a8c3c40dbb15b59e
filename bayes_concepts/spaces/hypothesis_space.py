"""The hypothesis space: concepts as programs of a grammar over a bank of scenes.

A :class:`HypothesisSpace` is the :class:`~bayes_concepts.spaces.concept_space.ConceptSpace`
whose concepts are programs (canonical postfix strings of a grammar's language) and whose
bank holds scenes of objects.  It is made by :meth:`HypothesisSpace.build` (sampled
programs), :meth:`HypothesisSpace.from_programs` (given programs; both run the stages of
:mod:`.build`) or :meth:`HypothesisSpace.load` (a saved directory).

On disk (``manifest.json`` has no ``kind``, or ``"program"``): the files of every space
(:mod:`bayes_concepts.engine.store`), ``concepts.jsonl`` with ``program`` and ``log_pcfg``
columns, and ``grammar.pcfg``, the grammar the space was built from.  A space whose
grammar's scenes carry relations (``relations`` line; CLEVR's left, right, front, behind)
also keeps them, as ``scene_relations.npy`` (uint8 (N, ceil(R·S·S/8)): each scene's bool
(R, S, S) relation array flattened and packed with ``np.packbits(..., bitorder="little")``),
and its objects' 3-D positions, as ``scene_positions.npy`` (float32 (N, S, 3), NaN in
empty slots; absent when the scenes were read from files without ``3d_coords``).  Other
spaces have neither file, and their manifests are what they were before these files existed.

>>> space = HypothesisSpace.build(preset="demo")          # doctest: +SKIP
>>> space.n_concepts, space.n_scenes                        # doctest: +SKIP
>>> space.program(0).readable, space.count(0)              # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..bits import transpose_bits
from ..engine import store as _store
from ..engine.executor import evaluate_programs
from ..engine.rendered import rendered_bank
from ..engine.store import FORMAT_VERSION
from ..engine.test_bank import TestBank
from ..lot.grammar import Grammar
from ..lot.program import Program
from ..scale import scheduler_scope
from ..scenes import SceneBank
from ..scenes.codes import codes_to_scene
from ..scenes.relations import relationships_lists
from . import build as _build
from .concept_space import ConceptSpace, space_kinds

__all__ = ["HypothesisSpace", "TestBank", "FORMAT_VERSION", "PRESETS"]

PRESETS = _build.PRESETS
#: the kind's own file
GRAMMAR_FILE = "grammar.pcfg"
#: the optional arrays of a space whose scenes carry relations, and the fields holding them
POSITIONS_FILE, RELATIONS_FILE = "scene_positions.npy", "scene_relations.npy"
SCENE_ARRAYS = {POSITIONS_FILE: "scene_positions", RELATIONS_FILE: "scene_relations"}
#: the optional arrays of a space with question domains, and the fields holding them
DOMAIN_ARRAYS = {"domain_ids.npy": "domain_ids", "domains.npy": "domains", "test_domains.npy": "test_domains"}
#: the concept table's columns besides ``id``: (key, types, lowest, highest)
CONCEPT_FIELDS = (("program", str, None, None), ("length", int, 1, 32767), ("log_pcfg", (int, float), -np.inf, 0.0),
                  ("count", int, 0, None), ("synonym_class", int, 0, None))


@space_kinds.register("program")
@dataclass(eq=False, kw_only=True, repr=False)
class HypothesisSpace(ConceptSpace):
    """A hypothesis space: programs (ids 0..n-1, ordered by length then postfix string), their
    truth values on a scene bank of N scenes, synonym classes and the test bank.

    Make one with :meth:`build` (sampled programs), :meth:`from_programs` (given programs)
    or :meth:`load` (a saved directory).  Besides every space's fields
    (:class:`~bayes_concepts.spaces.concept_space.ConceptSpace`):

    Attributes
    ----------
    programs : list of str, (n,)
        Canonical postfix strings (x-free programs collapsed).
    log_pcfg : float64 ndarray, (n,)
        PCFG log-probability (nats; collapsed programs: both quantifiers).
    scene_codes : int8 ndarray, (N, max_objects, n_attributes)
        The scene bank (value codes, -1 for absent objects; see ``bayes_concepts.scenes.codes``).
    grammar : Grammar
        The domain: value types, properties, object limits, rejection rules.
    grammar_text : str
        The grammar file's text, saved with the space.
    scene_positions : float32 ndarray, (N, max_objects, 3), or None
        The objects' centres (world x, y, z in CLEVR's units; x, y on the ground in [-3, 3]),
        NaN in empty slots: only for scenes with relations (and then None when the scenes
        were read from files without positions).
    scene_relations : uint8 ndarray, (N, ceil(R·max_objects²/8)), or None
        The scenes' relations packed (see the module docstring; :meth:`relations` unpacks
        them): given exactly when the grammar's scenes carry relations.  A bool
        (N, R, S, S) array given to the constructor is packed.

    Examples
    --------
    >>> space = HypothesisSpace.build("demo")                   # doctest: +SKIP
    >>> space.program(0).readable, space.count(0), space.synonyms(0)   # doctest: +SKIP
    """

    programs: list
    grammar: Grammar
    grammar_text: str
    scene_positions: np.ndarray | None = None
    scene_relations: np.ndarray | None = None

    kind = "program"
    has_programs = True
    has_grammar = True
    has_pictures = True

    def __post_init__(self):
        if self.scene_positions is not None:
            self.scene_positions = np.asarray(self.scene_positions, np.float32)
        rel = self.scene_relations
        if rel is not None and np.asarray(rel).dtype == np.bool_:
            rel = np.asarray(rel)
            self.scene_relations = np.packbits(rel.reshape(len(rel), -1), axis=1, bitorder="little")

    # ------------------------------------------------------------------ access
    def program(self, i: int) -> Program:
        return Program.parse(self.programs[i], self.grammar)

    @property
    def schema(self):
        return self.grammar.schema.with_max_objects(int(self.scene_codes.shape[1]))

    def scene(self, j: int) -> dict:
        """Scene ``j`` of the bank as a dict in the JSON Lines scene format.  Scenes with
        positions give every object its ``"3d_coords"`` ``[x, y, z]``; scenes with relations
        add the scene's ``"relationships"`` (CLEVR's form: ``relationships[r][b]`` lists the
        objects that are ``r`` of object ``b``)."""
        scene = codes_to_scene(self.scene_codes[j], self.schema)
        if self.scene_positions is not None:
            for obj, xyz in zip(scene["objects"], self.scene_positions[j]):
                obj["3d_coords"] = [float(v) for v in xyz]
        if self.scene_relations is not None:
            scene["relationships"] = relationships_lists(self.relations([j])[0], self.schema.relations,
                                                         len(scene["objects"]))
        return scene

    def positions(self, scenes=None):
        """float32 (n, S, 3): the objects' 3-D centres in ``scenes`` (bank ids, or a slice;
        None: every scene), NaN in empty slots; None when the scenes have no positions."""
        if self.scene_positions is None:
            return None
        return self.scene_positions if scenes is None else self.scene_positions[_rows(scenes)]

    def relations(self, scenes=None):
        """The relations of ``scenes`` (bank ids, or a slice; None: every scene) unpacked:
        bool (n, R, S, S), ``[i, r, a, b]`` iff in scene ``i`` object ``a`` is
        ``schema.relations[r]`` of object ``b`` (as ``scene_bank().relations()``); None when
        the scenes carry no relations."""
        if self.scene_relations is None:
            return None
        packed = self.scene_relations if scenes is None else self.scene_relations[_rows(scenes)]
        return unpack_relations(packed, len(self.schema.relations), int(self.scene_codes.shape[1]))

    def scene_bank(self) -> SceneBank:
        """The scene bank as a :class:`SceneBank` (bitsets packed on first use)."""
        return self.index.scene_bank()

    def scene_rows(self, scenes) -> np.ndarray:
        """Per-scene concept bitsets uint64 (n, ceil(n_concepts/64)) of scenes given as bank ids
        (rows of :meth:`scene_concepts`) or as scene dicts (every concept evaluated on them)."""
        scenes = list(scenes)
        if all(isinstance(s, (int, np.integer)) for s in scenes):
            return self.scene_concepts()[np.asarray(scenes, np.int64)]
        bank = SceneBank.from_scenes(scenes, self.schema.with_max_objects(
            max(self.schema.max_objects, max(len(s["objects"]) for s in scenes))))
        return transpose_bits(evaluate_programs(self.programs, bank, self.grammar), bank.n_scenes)

    def rendered_bank(self, modality: str = "image", **options) -> np.ndarray:
        """Every scene of the bank as a picture (uint8 (N, H, W, 3)) or a sound (float32
        (N, n_samples)), rendered once into the space directory's ``rendered/`` folder and
        then read back memory-mapped with its checksum verified (see
        :func:`~bayes_concepts.engine.rendered.rendered_bank` for ``options``).  Does not
        change the space's manifest or identity."""
        return rendered_bank(self, modality, **options)

    def find(self, program) -> int | None:
        """Id of a program (string or Program; an uncollapsed x-free form is collapsed), or None.

        A string that is one of the space's programs as stored (:attr:`programs`, each the
        canonical form of its program: parsed, collapsed and written out again it is itself)
        is looked up without parsing it (a protocol looks up thousands); any other string is
        parsed, collapsed and looked up."""
        ids = self.index.concept_ids()
        if isinstance(program, str):
            found = ids.get(program)
            if found is not None:
                return found
        p = program if isinstance(program, Program) else Program.parse(program, self.grammar)
        return ids.get(p.collapsed().postfix)

    def _own_fields(self) -> tuple:
        return (self.grammar_text,)

    def _own_arrays(self) -> dict:
        return {POSITIONS_FILE: self.scene_positions, RELATIONS_FILE: self.scene_relations,
                **{name: getattr(self, key) for name, key in DOMAIN_ARRAYS.items()}}

    # ------------------------------------------------------------------ store
    def _concept_rows(self) -> list:
        return [{"id": i, "program": prog, "length": int(self.lengths[i]), "log_pcfg": float(self.log_pcfg[i]),
                 "count": int(self.counts[i]), "synonym_class": int(self.synonym_classes[i])}
                for i, prog in enumerate(self.programs)]

    def _own_files(self) -> dict:
        return {GRAMMAR_FILE: self.grammar_text.encode("utf-8")}

    def _manifest_section(self) -> dict:
        return {"counts": {"max_objects": int(self.scene_codes.shape[1])}}

    @classmethod
    def load(cls, path, verify: bool = True) -> "HypothesisSpace":
        """Read a saved space; ``verify`` checks every file's sha256 against the manifest."""
        manifest, common, columns = cls._read(path, "program", (GRAMMAR_FILE,), CONCEPT_FIELDS, verify=verify,
                                              optional_arrays={**SCENE_ARRAYS, **DOMAIN_ARRAYS})
        path = Path(path)
        max_objects = manifest["counts"].get("max_objects")
        codes = common["scene_codes"]
        if type(max_objects) is not int or codes.shape[1] != max_objects:
            raise _store.SpaceError(f"{path}: file sizes disagree with manifest.json counts")
        if not (max(columns["count"], default=0) <= manifest["counts"]["scenes"]):
            raise _store.SpaceError(f"{path / 'concepts.jsonl'}: a count exceeds the number of scenes")
        grammar_text = _store.read_text(path / GRAMMAR_FILE)
        grammar = Grammar.from_text(grammar_text, source=str(path / GRAMMAR_FILE))
        if codes.shape[2] != len(grammar.schema.attributes):
            raise _store.SpaceError(f"{path / 'scenes.npy'}: {codes.shape[2]} attributes per object, the grammar's "
                                    f"scene schema has {len(grammar.schema.attributes)}")
        cls._check_codes(path, codes, grammar.schema, -1)
        _check_scene_arrays(path, codes, grammar.schema.relations, common["scene_positions"],
                            common["scene_relations"])
        _check_domain_arrays(path, len(columns["program"]), common)
        return cls(programs=columns["program"], log_pcfg=np.array(columns["log_pcfg"], np.float64), grammar=grammar,
                   grammar_text=grammar_text, **common)

    # ------------------------------------------------------------------ build
    @classmethod
    def build(cls, preset: str | None = None, *, grammar=None, samples: int | None = None,
              scenes: int | None = None, scene_sampler: str | None = None, scenes_from=None,
              max_depth: int | None = None, seed: int | None = None, min_count: int | None = None,
              max_rate: float | None = None, test_positives: int | None = None,
              progress: bool = False, log=None, scheduler=None, spill=None) -> "HypothesisSpace":
        """Build a space from sampled programs.  Arguments left as None come from ``preset``
        (``demo``/``paper``), else from :data:`~bayes_concepts.spaces.build.DEFAULTS`.

        grammar: a Grammar or grammar file path (default CURI's); samples: programs drawn;
        scenes: scene-bank size when sampling; scene_sampler: ``clevr`` or ``uniform``;
        scenes_from: JSON Lines (``.jsonl``) or CLEVR scene-json (``.json``) files to use
        as the scene bank instead; max_depth: derivation depth (grammar's default 6);
        seed: master seed; min_count / max_rate: the firing filter (scenes, fraction);
        test_positives: positives per concept in the test bank.  ``log(str)`` receives stage
        summaries.  scheduler: where the executor's scene chunks run (None: this process;
        ``"local:N"``: a LocalCluster of N processes; a Dask scheduler address; a
        :class:`~bayes_concepts.scale.Scheduler`): the space is the same wherever it ran.
        spill: where the signatures are kept while building (None: in memory up to 1 GiB, else
        a temporary file, memory-mapped; False: in memory; True: a temporary file; a directory).
        """
        p = _build.resolve_params(preset, samples=samples, scenes=scenes, scene_sampler=scene_sampler,
                                  max_depth=max_depth, seed=seed, min_count=min_count, max_rate=max_rate,
                                  test_positives=test_positives)
        with scheduler_scope(scheduler) as sched:
            return cls(**_build.build_fields(p, grammar, scenes_from, progress=progress, log=log, scheduler=sched,
                                             spill=spill))

    @classmethod
    def from_programs(cls, programs, *, grammar=None, scenes: int | None = None, scene_sampler: str | None = None,
                      scenes_from=None, seed: int | None = None, min_count: int | None = None,
                      max_rate: float | None = None, test_positives: int | None = None, reject: bool = True,
                      source: str | None = None, progress: bool = False, log=None, scheduler=None,
                      spill=None) -> "HypothesisSpace":
        """Build a space from given programs instead of sampled ones.

        programs: program strings (postfix; CURI's released form with ``lambda``, ``S.`` and
        sizes written ``0.7``/``0.35`` is accepted), or a path to a file of one program per
        line.  The same stages as :meth:`build` run on them: dedupe, the grammar's rejection
        rules (``reject``), execution, the firing filter, collapse, dedupe, synonym classes,
        test bank; log-probabilities come from the grammar.  Other arguments as in
        :meth:`build` (defaults: CURI's 990,000 clevr scenes, seed 0; ``scheduler`` and ``spill``
        as there).
        """
        if isinstance(programs, (str, Path)) and Path(programs).is_file():
            source = source or str(programs)
            try:
                programs = Path(programs).read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                raise ValueError(f"{source}: cannot read programs ({exc})") from None
        elif isinstance(programs, str):
            raise ValueError(f"{programs}: no such file of programs (pass a list of program strings or a file)")
        p = _build.resolve_params(None, scenes=scenes, scene_sampler=scene_sampler, seed=seed, min_count=min_count,
                                  max_rate=max_rate, test_positives=test_positives)
        with scheduler_scope(scheduler) as sched:
            return cls(**_build.build_fields(p, grammar, scenes_from, programs=list(programs),
                                             programs_source=source, reject=reject, progress=progress, log=log,
                                             scheduler=sched, spill=spill))


def _check_domain_arrays(path: Path, n_concepts: int, common: dict):
    """A loaded space's domain arrays: all three or none; ids ascending, unique, in range; one
    domain row per id over the scene bank and over the test bank."""
    got = [common.get(key) for key in DOMAIN_ARRAYS.values()]
    if all(a is None for a in got):
        return
    if any(a is None for a in got):
        missing = [name for name, a in zip(DOMAIN_ARRAYS, got) if a is None]
        raise _store.SpaceError(f"{path / missing[0]}: missing (a space with question domains keeps "
                                f"{', '.join(DOMAIN_ARRAYS)})")
    ids, doms, test = got
    if len(ids) and (np.any(np.diff(ids) <= 0) or ids[0] < 0 or ids[-1] >= n_concepts):
        raise _store.SpaceError(f"{path / 'domain_ids.npy'}: ids must be ascending concept ids in 0..{n_concepts - 1}")
    n_words, t_words = common["signatures"].shape[1], common["test_bank"].signatures.shape[1]
    if doms.shape != (len(ids), n_words) or test.shape != (len(ids), t_words):
        raise _store.SpaceError(f"{path / 'domains.npy'}: shapes {doms.shape} and {test.shape}, expected "
                                f"{(len(ids), n_words)} and {(len(ids), t_words)}")


def _rows(scenes):
    """Bank ids (anything array-like) as an int64 index; a slice as it is."""
    return scenes if isinstance(scenes, slice) else np.asarray(scenes, np.int64)


def unpack_relations(packed, n_relations: int, n_slots: int) -> np.ndarray:
    """Packed relation rows (uint8 (n, ceil(R·S·S/8)), as in ``scene_relations.npy``) -> bool
    (n, R, S, S)."""
    packed = np.asarray(packed, np.uint8)
    n, size = len(packed), n_relations * n_slots * n_slots
    return np.unpackbits(packed, axis=1, count=size, bitorder="little").reshape(
        n, n_relations, n_slots, n_slots).astype(bool)


#: scenes per block when a loaded space's relations are checked
_CHECK_BLOCK = 1 << 15


def _check_scene_arrays(path: Path, codes: np.ndarray, names: tuple, positions, relations):
    """A loaded space's positions and relations agree with its grammar and scenes: relations
    exactly when the scenes carry them (positions only then), one row per scene of the right
    size, positions finite for every object and NaN in empty slots, relations only between
    two different objects of a scene.  Anything else is a :class:`SpaceError` naming the file."""
    n, S = codes.shape[:2]
    if not names:
        for name, a in ((POSITIONS_FILE, positions), (RELATIONS_FILE, relations)):
            if a is not None:
                raise _store.SpaceError(f"{path / name}: the grammar's scenes carry no relations, so the space "
                                        "keeps no positions or relations (the file does not belong here)")
        return
    if relations is None:
        raise _store.SpaceError(f"{path / RELATIONS_FILE}: missing (the grammar's scenes carry relations: "
                                f"{', '.join(names)}; manifest.json does not list the file)")
    occupied = codes[:, :, 0] >= 0
    if positions is not None:
        if positions.shape != (n, S, 3):
            raise _store.SpaceError(f"{path / POSITIONS_FILE}: shape {positions.shape}, expected {(n, S, 3)}")
        finite = np.isfinite(positions)
        bad = (occupied & ~finite.all(axis=2)) | (~occupied & finite.any(axis=2))
        if bad.any():
            i, slot = np.argwhere(bad)[0]
            what = "object's position is not finite" if occupied[i, slot] else "empty slot has a position (not NaN)"
            raise _store.SpaceError(f"{path / POSITIONS_FILE}: scene {i}, slot {slot}: the {what}")
    R = len(names)
    width = -(-R * S * S // 8)
    if relations.shape != (n, width):
        raise _store.SpaceError(f"{path / RELATIONS_FILE}: shape {relations.shape}, expected {(n, width)} "
                                f"({R} relations of {S} objects, packed)")
    if (R * S * S) % 8 and n and (relations[:, -1] >> ((R * S * S) % 8)).any():
        raise _store.SpaceError(f"{path / RELATIONS_FILE}: padding bits set (the file is damaged)")
    distinct = ~np.eye(S, dtype=bool)
    for lo in range(0, n, _CHECK_BLOCK):
        rel = unpack_relations(relations[lo: lo + _CHECK_BLOCK], R, S)
        occ = occupied[lo: lo + _CHECK_BLOCK]
        bad = rel & ~(occ[:, None, :, None] & occ[:, None, None, :] & distinct)
        if bad.any():
            i, r, a, b = np.argwhere(bad)[0]
            raise _store.SpaceError(f"{path / RELATIONS_FILE}: scene {lo + i}: {names[r]} of slots {a} and {b} is "
                                    "set, but one of them is empty or they are the same object")
