"""The hypothesis space: concepts, their signatures over a scene bank, synonyms and test bank.

A :class:`HypothesisSpace` is the container every later stage reads (splits, episodes,
oracles, learners).  It is made by :meth:`HypothesisSpace.build` (sampled programs),
:meth:`HypothesisSpace.from_programs` (given programs; both run the stages of
:mod:`.build`) or :meth:`HypothesisSpace.load` (a saved directory; :mod:`.store`).

>>> space = HypothesisSpace.build(preset="demo")          # doctest: +SKIP
>>> space.n_concepts, space.n_scenes                        # doctest: +SKIP
>>> space.program(0).readable, space.count(0)              # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..bits import transpose_bits, unpack_bits
from ..lot.grammar import Grammar
from ..lot.program import Program
from ..scenes import SceneBank
from ..scale import scheduler_scope
from ..scenes.codes import codes_to_scene
from . import build as _build
from . import store as _store
from .store import FORMAT_VERSION
from .test_bank import TestBank, scene_class_lanes

__all__ = ["HypothesisSpace", "TestBank", "FORMAT_VERSION", "PRESETS"]

PRESETS = _build.PRESETS


@dataclass
class HypothesisSpace:
    """A hypothesis space: concepts (ids 0..n-1, ordered by length then postfix string),
    their truth values on a scene bank of N scenes, synonym classes and the test bank.

    Make one with :meth:`build` (sampled programs), :meth:`from_programs` (given programs)
    or :meth:`load` (a saved directory).

    Attributes
    ----------
    programs : list of str, (n,)
        Canonical postfix strings (x-free programs collapsed).
    lengths : int16 ndarray, (n,)
        l(h): tokens of the postfix form.
    log_pcfg : float64 ndarray, (n,)
        PCFG log-probability (nats; collapsed programs: both quantifiers).
    counts : int64 ndarray, (n,)
        |ext h|: scenes of the bank the concept is true on.
    synonym_classes : int32 ndarray, (n,)
        Class id; a class is the set of concepts with identical signatures, numbered in
        order of their first member.
    signatures : uint64 ndarray, (n, ceil(N/64))
        Packed truth values on the scene bank (bit j of word w: scene 64·w + j);
        memory-mapped when loaded.
    scene_codes : int8 ndarray, (N, max_objects, n_attributes)
        The scene bank (value codes, -1 for absent objects; see ``bayes_concepts.scenes.codes``).
    test_bank : TestBank
        The scenes AP is computed on, with every concept's labels there.
    params, stages : dict
        Build parameters; survivors after each build stage.
    grammar : Grammar
        The domain: value types, properties, object limits, rejection rules.
    path : Path or None
        Where the space was saved or loaded from.

    Examples
    --------
    >>> space = HypothesisSpace.build("demo")                   # doctest: +SKIP
    >>> space.program(0).readable, space.count(0), space.synonyms(0)   # doctest: +SKIP
    """

    programs: list
    lengths: np.ndarray
    log_pcfg: np.ndarray
    counts: np.ndarray
    synonym_classes: np.ndarray
    signatures: np.ndarray
    scene_codes: np.ndarray
    test_bank: TestBank
    params: dict
    stages: dict
    grammar: Grammar
    grammar_text: str
    path: Path | None = None
    build_seconds: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ access
    @property
    def n_concepts(self) -> int:
        return len(self.programs)

    @property
    def n_scenes(self) -> int:
        return int(self.scene_codes.shape[0])

    @property
    def n_synonym_classes(self) -> int:
        return int(self.synonym_classes.max()) + 1 if self.n_concepts else 0

    def program(self, i: int) -> Program:
        return Program.parse(self.programs[i], self.grammar)

    def length(self, i: int) -> int:
        return int(self.lengths[i])

    def count(self, i: int) -> int:
        return int(self.counts[i])

    def synonym_class(self, i: int) -> int:
        return int(self.synonym_classes[i])

    def synonyms(self, i: int) -> np.ndarray:
        """Ids of the concepts with the same signature as ``i`` (``i`` included)."""
        return np.flatnonzero(self.synonym_classes == self.synonym_classes[i])

    def signature(self, i: int) -> np.ndarray:
        """bool (n_scenes,): the concept's truth value on every scene of the bank."""
        return unpack_bits(np.asarray(self.signatures[i]), self.n_scenes)

    def scene(self, j: int) -> dict:
        """Scene ``j`` of the bank as a dict in the JSON Lines scene format."""
        return codes_to_scene(self.scene_codes[j], self.grammar.schema.with_max_objects(self.scene_codes.shape[1]))

    @property
    def schema(self):
        return self.grammar.schema.with_max_objects(int(self.scene_codes.shape[1]))

    def scene_bank(self) -> SceneBank:
        """The scene bank as a :class:`SceneBank` (bitsets packed on first use)."""
        if getattr(self, "_bank", None) is None:
            self._bank = SceneBank.from_codes(np.asarray(self.scene_codes), self.schema)
        return self._bank

    def scene_concepts(self):
        """Per-scene concept bitsets (the transposed signatures): uint64 (n_scenes,
        ceil(n_concepts/64)); bit h of row s says concept h is true on scene s.
        Computed on first use and kept: an array in memory for small spaces, else a file
        written chunk by chunk (:mod:`.index`) and read as a
        :class:`~bayes_concepts.engine.rows.RowFile` (``rows[ids]`` gives an array)."""
        if getattr(self, "_scene_concepts", None) is None:
            from .index import scene_concepts
            self._scene_concepts = scene_concepts(self)
        return self._scene_concepts

    def class_representatives(self) -> np.ndarray:
        """int64 (n_classes,): the first concept of each synonym class.  Computed once."""
        if getattr(self, "_class_reps", None) is None:
            self._class_reps = np.unique(self.synonym_classes, return_index=True)[1].astype(np.int64)
        return self._class_reps

    def test_bank_index(self):
        """The test-bank scenes each synonym class is true on, as CSR arrays ``(ptr, idx)``:
        int64 (n_classes + 1,), int32 (nnz,).  Computed on first use and kept."""
        if getattr(self, "_test_index", None) is None:
            first = self.class_representatives()
            sig = self.test_bank.signatures
            ptr = np.zeros(len(first) + 1, np.int64)
            ptr[1:] = np.cumsum(np.bitwise_count(np.asarray(sig)[first]).sum(axis=1, dtype=np.int64))
            idx = np.empty(ptr[-1], np.int32)
            for lo in range(0, len(first), 1024):  # unpack in blocks to bound memory
                bits = unpack_bits(np.asarray(sig[first[lo: lo + 1024]]), self.test_bank.n_scenes)
                idx[ptr[lo]: ptr[min(lo + 1024, len(first))]] = np.nonzero(bits)[1]
            self._test_index = (ptr, idx)
        return self._test_index

    def scene_rows(self, scenes) -> np.ndarray:
        """Per-scene concept bitsets uint64 (n, ceil(n_concepts/64)) of scenes given as bank ids
        (rows of :meth:`scene_concepts`) or as scene dicts (every concept evaluated on them)."""
        scenes = list(scenes)
        if all(isinstance(s, (int, np.integer)) for s in scenes):
            return self.scene_concepts()[np.asarray(scenes, np.int64)]
        from .executor import evaluate_programs
        bank = SceneBank.from_scenes(scenes, self.schema.with_max_objects(
            max(self.schema.max_objects, max(len(s["objects"]) for s in scenes))))
        return transpose_bits(evaluate_programs(self.programs, bank, self.grammar), bank.n_scenes)

    def test_bank_scene_classes(self):
        """The synonym classes each test-bank scene belongs to -- the transpose of
        :meth:`test_bank_index` -- split into lanes by class id (what the noisy oracle's
        test-bank scores sum): ``(lane_ptr, classes)``, int64 (T·4 + 1,) and uint16 (int32 past
        65,536 classes) (nnz,); see :func:`~bayes_concepts.engine.test_bank.scene_class_lanes`.
        Computed on first use and kept."""
        if getattr(self, "_test_scene_classes", None) is None:
            ptr, idx = self.test_bank_index()
            self._test_scene_classes = scene_class_lanes(ptr, idx, self.test_bank.n_scenes)
        return self._test_scene_classes

    def manifest_sha256(self) -> str | None:
        """sha256 of the saved ``manifest.json`` (identifies the space), None if not saved."""
        return None if self.path is None else _store.manifest_sha256(self.path)

    def rendered_bank(self, modality: str = "image", **options) -> np.ndarray:
        """Every scene of the bank as a picture (uint8 (N, H, W, 3)) or a sound (float32
        (N, n_samples)), rendered once into the space directory's ``rendered/`` folder and
        then read back memory-mapped with its checksum verified (see
        :func:`~bayes_concepts.engine.rendered.rendered_bank` for ``options``: height,
        width, supersample, settings, verify, rebuild).  Does not change the space's
        manifest or identity."""
        from .rendered import rendered_bank
        return rendered_bank(self, modality, **options)

    def find(self, program) -> int | None:
        """Id of a program (string or Program; an uncollapsed x-free form is collapsed), or None."""
        if getattr(self, "_index", None) is None:
            self._index = {p: i for i, p in enumerate(self.programs)}
        p = program if isinstance(program, Program) else Program.parse(program, self.grammar)
        return self._index.get(p.collapsed().postfix)

    def log_prior(self, kind: str = "length", beta: float = 0.2, concepts=None) -> np.ndarray:
        """Normalised log prior over ``concepts`` (default all): float64 (len(concepts),).

        kind: a registered prior (:data:`bayes_concepts.oracles.priors`): ``length``
        (w = exp(-beta * l(h)), CURI's), ``pcfg`` (derivation probability), ``uniform``, ...
        """
        from types import SimpleNamespace
        from ..oracles.priors import log_prior
        ids = np.arange(self.n_concepts) if concepts is None else np.asarray(concepts)
        return log_prior(self, ids, SimpleNamespace(prior=kind, beta=beta))

    def __eq__(self, other) -> bool:
        if not isinstance(other, HypothesisSpace):
            return NotImplemented
        return (self.programs == other.programs and self.params == other.params and self.stages == other.stages
                and self.grammar_text == other.grammar_text
                and all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in [
                    (self.lengths, other.lengths), (self.log_pcfg, other.log_pcfg), (self.counts, other.counts),
                    (self.synonym_classes, other.synonym_classes), (self.signatures, other.signatures),
                    (self.scene_codes, other.scene_codes), (self.test_bank.scene_ids, other.test_bank.scene_ids),
                    (self.test_bank.drawn_for, other.test_bank.drawn_for),
                    (self.test_bank.signatures, other.test_bank.signatures)]))

    def __repr__(self):
        where = f", path={str(self.path)!r}" if self.path else ""
        return (f"HypothesisSpace({self.n_concepts:,} concepts, {self.n_synonym_classes:,} synonym classes, "
                f"{self.n_scenes:,} scenes, test bank {self.test_bank.n_scenes:,}{where})")

    # ------------------------------------------------------------------ store
    def save(self, path, overwrite: bool = False) -> Path:
        """Write the space to directory ``path`` atomically (see :mod:`.store`); returns the path."""
        return _store.save_space(self, path, overwrite=overwrite)

    @classmethod
    def load(cls, path, verify: bool = True) -> "HypothesisSpace":
        """Read a saved space; ``verify`` checks every file's sha256 against the manifest."""
        return cls(**_store.load_space_fields(path, verify=verify))

    # ------------------------------------------------------------------ build
    @classmethod
    def build(cls, preset: str | None = None, *, grammar=None, samples: int | None = None,
              scenes: int | None = None, scene_sampler: str | None = None, scenes_from=None,
              max_depth: int | None = None, seed: int | None = None, min_count: int | None = None,
              max_rate: float | None = None, test_positives: int | None = None,
              progress: bool = False, log=None, scheduler=None, spill=None) -> "HypothesisSpace":
        """Build a space from sampled programs.  Arguments left as None come from ``preset``
        (``demo``/``paper``), else from :data:`~bayes_concepts.engine.build.DEFAULTS`.

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
