"""The hypothesis space: CURI's concepts, their signatures, synonyms and test bank.

``HypothesisSpace.build`` runs DESIGN section 5's pipeline::

    sample programs -> dedupe -> rejection rules -> execute on the scene bank
    -> keep concepts true on <= max_rate and >= min_count scenes
    -> collapse the quantifier of x-free programs -> dedupe
    -> length, PCFG log-probability, firing count, synonym classes, test bank

``HypothesisSpace.load(path)`` reads a saved space (see :mod:`.store`).

>>> space = HypothesisSpace.build(preset="demo")          # doctest: +SKIP
>>> space.n_concepts, space.n_scenes                        # doctest: +SKIP
>>> space.program(0).readable, space.count(0)              # doctest: +SKIP
"""
from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..lot.grammar import Grammar, curi_grammar, load_grammar
from ..lot.program import Program
from ..lot.rejection import rejection_reason
from ..lot.sampler import sample_programs
from ..scenes import SceneBank, load_clevr_scenes, read_scenes_jsonl, sample_scenes, scenes_to_codes
from ..scenes.bank import n_words_for, unpack_bits
from ..scenes.codes import codes_to_scene
from .executor import compile_for, count, run
from .plan import BankLayout
from ..bits import gather_bits, nth_set_bits, transpose_bits

FORMAT_VERSION = 2

#: Named build settings.  ``demo`` builds in well under a minute here and is what
#: ``make demo`` and the tests use; ``paper`` is CURI's scale (2,000,000 samples, 990,000 scenes).
PRESETS = {
    "demo": dict(samples=200_000, scenes=100_000, scene_sampler="clevr"),
    "paper": dict(samples=2_000_000, scenes=990_000, scene_sampler="clevr"),
}

DEFAULTS = dict(samples=2_000_000, scenes=990_000, scene_sampler="clevr", max_depth=None, seed=0,
                min_count=10, max_rate=0.10, test_positives=3)


def _tqdm(progress):
    from tqdm.auto import tqdm

    def bar(iterable=None, **kw):
        return tqdm(iterable, disable=not progress, leave=False, **kw)
    return bar


@dataclass
class TestBank:
    """Scenes for mAP: ``test_positives`` positives of every concept, with every concept's labels.

    scene_ids:    int64 (T,) indices into the space's scene bank.
    drawn_for:    int32 (T,) the concept each scene was drawn as a positive for.
    signatures:   uint64 (n_concepts, ceil(T/64)) packed labels of every concept on the T scenes.
    """

    scene_ids: np.ndarray
    drawn_for: np.ndarray
    signatures: np.ndarray

    @property
    def n_scenes(self) -> int:
        return len(self.scene_ids)

    def labels(self, concept: int) -> np.ndarray:
        """bool (T,): which test-bank scenes ``concept`` is true on."""
        return unpack_bits(np.asarray(self.signatures[concept]), self.n_scenes)

    def label_matrix(self, concepts=None) -> np.ndarray:
        """bool (len(concepts), T) (all concepts by default)."""
        sig = self.signatures if concepts is None else self.signatures[np.asarray(concepts)]
        return unpack_bits(np.asarray(sig), self.n_scenes)


@dataclass
class HypothesisSpace:
    """Concepts (ids 0..n-1, ordered by length then postfix string) and their data.

    programs:       list of canonical postfix strings (x-free programs collapsed).
    lengths:        int16 (n,) tokens of the postfix form.
    log_pcfg:       float64 (n,) PCFG log-probability (collapsed programs: both quantifiers).
    counts:         int64 (n,) scenes of the scene bank the concept is true on.
    synonym_classes: int32 (n,) class id; a class is the set of concepts with identical
                    signatures, numbered in order of their first member.
    signatures:     uint64 (n, ceil(N/64)) packed truth values on the scene bank.
    scene_codes:    int8 (N, max_objects, n_attributes) the scene bank (see scenes.codes).
    test_bank:      :class:`TestBank`.
    params:         build parameters; ``stages``: survivors after each stage.
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

    def scene_concepts(self) -> np.ndarray:
        """Per-scene concept bitsets (the transposed signatures): uint64 (n_scenes,
        ceil(n_concepts/64)); bit h of row s says concept h is true on scene s.
        Computed on first use and kept."""
        if getattr(self, "_scene_concepts", None) is None:
            self._scene_concepts = transpose_bits(np.asarray(self.signatures), self.n_scenes)
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

    def manifest_sha256(self) -> str | None:
        """sha256 of the saved ``manifest.json`` (identifies the space), None if not saved."""
        if self.path is None:
            return None
        return hashlib.sha256((Path(self.path) / "manifest.json").read_bytes()).hexdigest()

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
        from .store import save_space
        return save_space(self, path, overwrite=overwrite)

    @classmethod
    def load(cls, path, verify: bool = True) -> "HypothesisSpace":
        from .store import load_space
        return load_space(path, verify=verify)

    # ------------------------------------------------------------------ build
    @classmethod
    def build(cls, preset: str | None = None, *, grammar=None, samples: int | None = None,
              scenes: int | None = None, scene_sampler: str | None = None, scenes_from=None,
              max_depth: int | None = None, seed: int | None = None, min_count: int | None = None,
              max_rate: float | None = None, test_positives: int | None = None,
              progress: bool = False, log=None) -> "HypothesisSpace":
        """Build a space.  Arguments left as None come from ``preset`` (``demo``/``paper``),
        else from :data:`DEFAULTS`.

        grammar: a Grammar or grammar file path (default CURI's); samples: programs drawn;
        scenes: scene-bank size when sampling; scene_sampler: ``clevr`` or ``uniform``;
        scenes_from: JSON Lines (``.jsonl``) or CLEVR scene-json (``.json``) files to use
        as the scene bank instead; max_depth: derivation depth (grammar's default 6);
        seed: master seed; min_count / max_rate: the firing filter; test_positives:
        positives per concept in the test bank.  ``log(str)`` receives stage summaries.
        """
        if preset is not None and preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r} (expected one of {', '.join(PRESETS)})")
        given = dict(samples=samples, scenes=scenes, scene_sampler=scene_sampler, max_depth=max_depth, seed=seed,
                     min_count=min_count, max_rate=max_rate, test_positives=test_positives)
        p = dict(DEFAULTS)
        p.update(PRESETS.get(preset, {}))
        p.update({k: v for k, v in given.items() if v is not None})
        return _build(p, grammar, scenes_from, progress, log or (lambda s: None))


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _scene_bank_codes(p, scenes_from, schema, seed):
    if not scenes_from:
        if p["scene_sampler"] not in ("clevr", "uniform"):
            raise ValueError(f"unknown scene sampler {p['scene_sampler']!r} (expected 'clevr' or 'uniform')")
        return sample_scenes(int(p["scenes"]), p["scene_sampler"], schema, seed=seed), None
    codes, sources = [], []
    for f in scenes_from:
        f = Path(f)
        scenes = load_clevr_scenes(f, schema) if f.suffix == ".json" else read_scenes_jsonl(f, schema)
        c, _ = scenes_to_codes(scenes, schema, where=str(f))
        codes.append(c)
        sources.append({"file": f.name, "sha256": hashlib.sha256(f.read_bytes()).hexdigest(), "scenes": len(c)})
    return np.concatenate(codes, axis=0), sources


def _build(p, grammar, scenes_from, progress, log) -> HypothesisSpace:
    bar = _tqdm(progress)
    times = {}
    t0 = time.perf_counter()
    if grammar is None:
        grammar = curi_grammar()
    elif not isinstance(grammar, Grammar):
        grammar = load_grammar(grammar)
    grammar_text = Path(grammar.source).read_text(encoding="utf-8")
    seeds = np.random.SeedSequence(int(p["seed"])).generate_state(3, np.uint32)
    max_depth = grammar.max_depth if p["max_depth"] is None else int(p["max_depth"])
    p["max_depth"] = max_depth

    # 1. sample and dedupe
    sample = sample_programs(int(p["samples"]), grammar, seed=int(seeds[0]), max_depth=max_depth)
    rows = np.ascontiguousarray(sample.tokens)
    _, first = np.unique(rows.view(f"V{rows.shape[1]}").ravel(), return_index=True)
    first.sort()
    stages = {"sampled": len(sample), "unique": int(len(first))}
    times["sample"] = time.perf_counter() - t0
    log(f"sampled {len(sample):,} programs ({sample.attempts:,} draws): {len(first):,} unique")

    # 2. parse and reject
    t = time.perf_counter()
    voc = sample.vocabulary
    programs, logp = [], []
    for i in bar(first.tolist(), desc="parse + reject", unit="prog"):
        prog = Program.parse(" ".join(voc[k] for k in rows[i, : sample.lengths[i]]), grammar)
        if rejection_reason(prog) is None:
            programs.append(prog)
            logp.append(sample.log_prob[i])
    stages["after_rejection"] = len(programs)
    times["parse_reject"] = time.perf_counter() - t
    log(f"rejection rules: {len(programs):,} kept")

    # 3. scene bank, execute, firing filter
    t = time.perf_counter()
    schema = grammar.schema if not scenes_from else grammar.schema.with_max_objects(10)
    codes, sources = _scene_bank_codes(p, scenes_from, schema, int(seeds[1]))
    if sources is not None:
        n_slots = int(max(1, (codes[:, :, 0] >= 0).sum(1).max()))
        codes = np.ascontiguousarray(codes[:, :n_slots])
        schema = grammar.schema.with_max_objects(max(n_slots, grammar.schema.min_objects))
        p["scenes"] = int(len(codes))
        p["scenes_from"] = sources
    bank = SceneBank.from_codes(codes, schema)
    times["scenes"] = time.perf_counter() - t
    t = time.perf_counter()
    bank_rows = BankLayout.rows_of(bank)
    plan = compile_for(programs, bank, grammar)
    counts = count(plan, bank, bank_rows=bank_rows)
    del plan
    keep = (counts >= int(p["min_count"])) & (counts <= float(p["max_rate"]) * bank.n_scenes)
    stages["after_firing_filter"] = int(keep.sum())
    times["execute"] = time.perf_counter() - t
    log(f"executed on {bank.n_scenes:,} scenes: {int(keep.sum()):,} true on >= {p['min_count']} and "
        f"<= {p['max_rate']:.0%} of scenes")

    # 4. collapse x-free programs, dedupe, order by (length, postfix)
    collapsed = {}
    for i in np.flatnonzero(keep):
        prog = programs[i]
        c = prog.collapsed()
        lp = logp[i] + (math.log(2.0) if c is not prog else 0.0)
        collapsed.setdefault(c.postfix, (c, lp, int(counts[i])))
    order = sorted(collapsed, key=lambda s: (len(s.split()), s))
    concepts = [collapsed[s][0] for s in order]
    stages["after_collapse_dedupe"] = len(concepts)
    log(f"collapsed x-free quantifiers: {len(concepts):,} concepts")

    # 5. signatures of the concepts, synonym classes
    t = time.perf_counter()
    plan = compile_for(concepts, bank, grammar)
    signatures = run(plan, bank, bank_rows=bank_rows)
    del plan, bank_rows
    final_counts = np.bitwise_count(signatures).sum(axis=1, dtype=np.int64)
    assert np.array_equal(final_counts, np.array([collapsed[s][2] for s in order], np.int64))
    classes = _synonym_classes(signatures)
    stages["synonym_classes"] = int(classes.max()) + 1 if len(classes) else 0
    times["signatures"] = time.perf_counter() - t
    log(f"synonym classes: {stages['synonym_classes']:,}")

    # 6. test bank
    t = time.perf_counter()
    test_bank = _draw_test_bank(signatures, final_counts, int(p["test_positives"]), int(seeds[2]))
    stages["test_bank"] = test_bank.n_scenes
    times["test_bank"] = time.perf_counter() - t
    times["total"] = time.perf_counter() - t0
    log(f"test bank: {test_bank.n_scenes:,} scenes")

    params = {k: p[k] for k in ("samples", "scenes", "scene_sampler", "max_depth", "seed", "min_count",
                                "max_rate", "test_positives")}
    if sources is not None:
        params["scene_sampler"] = None
        params["scenes_from"] = sources
    params["grammar"] = {"file": Path(grammar.source).name, "sha256": _sha256_bytes(grammar_text.encode())}
    return HypothesisSpace(
        programs=[c.postfix for c in concepts],
        lengths=np.array([c.length for c in concepts], np.int16),
        log_pcfg=np.array([collapsed[s][1] for s in order], np.float64),
        counts=final_counts, synonym_classes=classes, signatures=signatures, scene_codes=bank.codes,
        test_bank=test_bank, params=params, stages=stages, grammar=grammar, grammar_text=grammar_text,
        build_seconds=times)


def _synonym_classes(signatures: np.ndarray) -> np.ndarray:
    """int32 (n,): concepts with identical signature rows share a class; classes are numbered
    in order of their first member."""
    n = len(signatures)
    classes = np.empty(n, np.int32)
    first_of = {}
    for i in range(n):
        row = np.ascontiguousarray(signatures[i])
        key = hashlib.blake2b(row.view(np.uint8), digest_size=16).digest()
        hit = first_of.get(key)
        if hit is not None and np.array_equal(signatures[hit[0]], row):
            classes[i] = hit[1]
        else:
            if hit is not None:  # a hash collision between different rows: keep them apart
                key = key + i.to_bytes(8, "little")
            first_of[key] = (i, len(first_of))
            classes[i] = first_of[key][1]
    return classes


def _draw_test_bank(signatures, counts, k, seed) -> TestBank:
    """``k`` distinct positives per concept (seeded), avoiding scenes already drawn for an
    earlier concept when the concept has enough other positives."""
    rng = np.random.default_rng(seed)
    n, _ = signatures.shape
    n_cand = 4 * k
    ranks = np.empty((n, n_cand), np.int64)
    n_ranks = np.minimum(counts, n_cand)
    for i in range(n):
        ranks[i, : n_ranks[i]] = rng.choice(counts[i], size=n_ranks[i], replace=False)
    candidates = nth_set_bits(signatures, ranks, n_ranks)
    used = set()
    ids, drawn_for = [], []
    for i in range(n):
        cand = candidates[i, : n_ranks[i]].tolist()
        fresh = [s for s in cand if s not in used][:k]
        if len(fresh) < min(k, counts[i]):
            fresh += [s for s in cand if s not in fresh][: min(k, counts[i]) - len(fresh)]
        used.update(fresh)
        ids.extend(fresh)
        drawn_for.extend([i] * len(fresh))
    ids = np.array(ids, np.int64)
    return TestBank(ids, np.array(drawn_for, np.int32), gather_bits(signatures, ids))
