"""Building a hypothesis space: the pipeline as stage functions.

::

    sample programs -> dedupe -> rejection rules           (sample_stage; or given programs)
    -> execute on the scene bank -> keep concepts true on   (scene_bank_stage, firing_filter)
       <= max_rate and >= min_count scenes
    -> collapse the quantifier of x-free programs -> dedupe (collapse_and_dedupe)
    -> signatures, synonym classes, test bank               (synonym_classes, draw_test_bank)

:func:`build_fields` runs them from sampled programs, or from given ones (CURI's released
hypothesis strings, say), and returns the fields of a
:class:`~bayes_concepts.spaces.hypothesis_space.HypothesisSpace`.
"""
from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from ..bits import unpack_bits
from ..collector import fewer_collections
from ..errors import BayesConceptsError, ProgramError
from ..lot.grammar import Grammar, curi_grammar, load_grammar
from ..lot.program import Program
from ..lot.rejection import rejection_reason
from ..lot.sampler import sample_programs
from ..presets import PRESETS, Preset, PresetRegistry, ProgramSource, preset_params, program_sources  # noqa: F401
from ..registry import Registry
from ..resources import data_file
from ..scenes import (SceneBank, load_clevr_scenes, read_scenes_jsonl, sample_clevr_scenes, sample_scenes,
                      scenes_to_arrays, scenes_to_codes)
from ..scale import Scheduler
from ..engine.chunked import count_programs, signatures_stage
from ..engine.executor import bank_block, compile_for, compile_with_domains
from ..engine.test_bank import draw_test_bank

#: Build options beside the sizes and seeds:
#:
#: * ``retries``: ``"whole"`` redraws a failed derivation from the start symbol (the PCFG
#:   conditioned on depth and on no constant-vs-constant comparison); ``"local"`` is the
#:   release's sampler (:mod:`bayes_concepts.lot.local_retries`), whose ``max_depth`` counts
#:   as the release counts it (a nonterminal *at* max_depth fails);
#: * ``location_bins``: None (bins 1..8, the grammar's constants) or ``(first, last)`` for
#:   the ``clevr`` scene sampler (the release's ``(0, 7)``, with a grammar whose location
#:   values include 0);
#: * ``filter_bounds``: ``"closed"`` keeps concepts true on >= ``min_count`` scenes and
#:   <= ``max_rate`` of them; ``"open"`` (the release's) on > ``min_count`` and < ``max_rate``;
#: * ``grammar_file``: a grammar of ``hypotheses/`` used when no grammar is given.
#:
#: A :class:`ProgramSource` adds options of its own (default None: off).
DEFAULTS = dict(samples=2_000_000, scenes=990_000, scene_sampler="clevr", max_depth=None, seed=0,
                min_count=10, max_rate=0.10, test_positives=3, retries="whole", location_bins=None,
                filter_bounds="closed", grammar_file=None)
#: Options recorded in a space's manifest only when they differ from DEFAULTS (so spaces built
#: before they existed keep their manifests); every program source's options are too.
_OPTIONAL_PARAMS = ("retries", "location_bins", "filter_bounds")
FILTER_BOUNDS = ("closed", "open")


# ------------------------------------------------------------------ presets and program sources
# Preset, PRESETS, preset_params, ProgramSource and program_sources live in bayes_concepts.presets
# (light: the command line reads them while building its parser); named here as before.


def _source_defaults() -> dict:
    return {k: v for _, source in program_sources.items() for k, v in source.params.items()}


def resolve_params(preset=None, **given) -> dict:
    """Build parameters: ``given`` values that are not None, else the preset's, else DEFAULTS."""
    if preset is not None and preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r} (expected one of {', '.join(PRESETS.names())})")
    if preset is not None and PRESETS.get(preset).make is not None:
        raise ValueError(f"preset {preset!r} builds its own space, not sampled programs: build_space({preset!r})")
    p = dict(DEFAULTS)
    p.update(_source_defaults())
    p.update(preset_params(preset))
    p.update({k: v for k, v in given.items() if v is not None})
    return p


def _tqdm(progress):
    from tqdm.auto import tqdm

    def bar(iterable=None, **kw):
        return tqdm(iterable, disable=not progress, leave=False, **kw)
    return bar


def sample_stage(grammar, n, seed, max_depth, bar, log, stages, retries="whole") -> tuple:
    """Sample ``n`` programs, dedupe, parse and apply the grammar's rejection rules.

    Returns (programs: list of Program, log_probs: list of float), in order of first draw."""
    sample = sample_programs(int(n), grammar, seed=int(seed), max_depth=max_depth, retries=retries)
    rows = np.ascontiguousarray(sample.tokens)
    _, first = np.unique(rows.view(f"V{rows.shape[1]}").ravel(), return_index=True)
    first.sort()
    stages.update({"sampled": len(sample), "unique": int(len(first))})
    log(f"sampled {len(sample):,} programs ({sample.attempts:,} draws): {len(first):,} unique")
    voc = sample.vocabulary
    programs, logp = [], []
    for i in bar(first.tolist(), desc="parse + reject", unit="prog"):
        prog = Program.parse(" ".join(voc[k] for k in rows[i, : sample.lengths[i]]), grammar)
        if rejection_reason(prog) is None:
            programs.append(prog)
            logp.append(sample.log_prob[i])
    stages["after_rejection"] = len(programs)
    log(f"rejection rules: {len(programs):,} kept")
    return programs, logp


def given_programs_stage(texts, grammar, reject, where, bar, log, stages) -> tuple:
    """Parse given program strings (CURI's released form accepted), dedupe, and apply the
    grammar's rejection rules if ``reject``.  Log-probabilities come from the grammar (-inf
    for a program it cannot derive).  Returns (programs, log_probs)."""
    seen, programs, logp = set(), [], []
    n = 0
    for lineno, text in enumerate(bar(texts, desc="parse", unit="prog"), 1):
        if not text.strip():
            continue
        n += 1
        try:
            prog = Program.parse(text, grammar)
        except ProgramError as exc:
            raise BayesConceptsError(f"{where} line {lineno}: {exc}") from None
        if prog.postfix in seen:
            continue
        seen.add(prog.postfix)
        if reject and rejection_reason(prog) is not None:
            continue
        programs.append(prog)
        logp.append(prog.log_prob(grammar))
    stages.update({"given": n, "unique": len(seen), "after_rejection": len(programs)})
    log(f"{n:,} programs given: {len(seen):,} unique, {len(programs):,} after the rejection rules")
    return programs, logp


def scene_bank_codes(p, scenes_from, schema, seed):
    if schema.relations:
        return _relational_scene_arrays(p, scenes_from, schema, seed)
    if not scenes_from:
        if p["scene_sampler"] not in ("clevr", "uniform"):
            raise ValueError(f"unknown scene sampler {p['scene_sampler']!r} (expected 'clevr' or 'uniform')")
        return sample_scenes(int(p["scenes"]), p["scene_sampler"], schema, seed=seed,
                             location_bins=p.get("location_bins")), None
    if p.get("location_bins") is not None:
        raise ValueError("location_bins applies to sampled scene banks, not to scenes read from files")
    codes, sources = [], []
    for f in scenes_from:
        f = Path(f)
        scenes = load_clevr_scenes(f, schema) if f.suffix == ".json" else read_scenes_jsonl(f, schema)
        c, _ = scenes_to_codes(scenes, schema, where=str(f))
        codes.append(c)
        sources.append({"file": f.name, "sha256": hashlib.sha256(f.read_bytes()).hexdigest(), "scenes": len(c)})
    return np.concatenate(codes, axis=0), sources



def _relational_scene_arrays(p, scenes_from, schema, seed):
    """Scenes of a schema with relations: ``((codes, positions, relations), sources)``."""
    if not scenes_from:
        if p["scene_sampler"] != "clevr":
            raise ValueError(f"scenes with relations are sampled by the clevr sampler, not {p['scene_sampler']!r}")
        codes, positions = sample_clevr_scenes(int(p["scenes"]), schema, seed=seed)
        return (codes, positions, None), None
    parts, sources = [], []
    for f in scenes_from:
        f = Path(f)
        scenes = load_clevr_scenes(f, schema) if f.suffix == ".json" else read_scenes_jsonl(f, schema)
        parts.append(scenes_to_arrays(scenes, schema, where=str(f)))
        sources.append({"file": f.name, "sha256": hashlib.sha256(f.read_bytes()).hexdigest(),
                        "scenes": len(parts[-1][0])})
    codes = np.concatenate([c for c, _, _ in parts], axis=0)
    positions = None if any(q is None for _, q, _ in parts) else np.concatenate([q for _, q, _ in parts], axis=0)
    relations = np.concatenate([r for _, _, r in parts], axis=0)
    return (codes, positions, relations), sources


def scene_bank_stage(p, scenes_from, grammar, seed) -> tuple:
    """The scene bank: sampled (``p["scene_sampler"]``, ``p["scenes"]``) or read from files.
    Returns (SceneBank, sources or None); records the bank size in ``p``."""
    if grammar.schema.relations:
        (codes, positions, relations), sources = scene_bank_codes(p, scenes_from, grammar.schema, int(seed))
        if sources is not None:
            p["scenes"] = int(len(codes))
            p["scenes_from"] = sources
        return SceneBank(codes, grammar.schema, positions=positions, relations=relations), sources
    schema = grammar.schema if not scenes_from else grammar.schema.with_max_objects(10)
    codes, sources = scene_bank_codes(p, scenes_from, schema, int(seed))
    if sources is not None:
        n_slots = int(max(1, (codes[:, :, 0] >= 0).sum(1).max()))
        codes = np.ascontiguousarray(codes[:, :n_slots])
        schema = grammar.schema.with_max_objects(max(n_slots, grammar.schema.min_objects))
        p["scenes"] = int(len(codes))
        p["scenes_from"] = sources
    return SceneBank.from_codes(codes, schema), sources


def firing_filter(counts, n_scenes, min_count, max_rate, bounds="closed") -> np.ndarray:
    """bool (n,): concepts true on at least ``min_count`` and at most ``max_rate`` of the scenes
    (``bounds="closed"``), or on more than ``min_count`` and less than ``max_rate``
    (``"open"``, CURI's release: ``count > 10`` and ``count / N < 0.1``)."""
    if bounds == "closed":
        return (counts >= int(min_count)) & (counts <= float(max_rate) * n_scenes)
    if bounds == "open":
        return (counts > int(min_count)) & (counts / n_scenes < float(max_rate))
    raise ValueError(f"filter_bounds must be one of {', '.join(map(repr, FILTER_BOUNDS))}, got {bounds!r}")


def collapse_and_dedupe(programs, logp, counts, keep) -> tuple:
    """Collapse the quantifier of x-free programs (log-prob of both quantifiers: + log 2),
    dedupe, and order by (length, postfix).  Returns (concepts, log_probs, counts)."""
    collapsed = {}
    for i in np.flatnonzero(keep):
        prog = programs[i]
        c = prog.collapsed()
        lp = logp[i] + (math.log(2.0) if c is not prog else 0.0)
        collapsed.setdefault(c.postfix, (c, lp, int(counts[i])))
    order = sorted(collapsed, key=lambda s: (len(s.split()), s))
    return ([collapsed[s][0] for s in order], np.array([collapsed[s][1] for s in order], np.float64),
            np.array([collapsed[s][2] for s in order], np.int64))


def _with_source(source: ProgramSource, programs, logp, grammar, p, log, stages) -> tuple:
    """The programs plus those of ``source`` not among them yet (nothing when its options are off)."""
    extra = source.programs(grammar, p)
    if not extra:
        return programs, logp
    groups = extra if isinstance(extra, Mapping) else {source.stage: extra}
    seen = {prog.postfix for prog in programs}
    total = 0
    for stage, group in groups.items():
        added = 0
        for prog, lp in group:
            if prog.postfix not in seen:
                seen.add(prog.postfix)
                programs.append(prog)
                logp.append(lp)
                added += 1
        stages[stage] = added
        total += added
    log(source.describe(p, total))
    return programs, logp


@fewer_collections()
def build_fields(p, grammar=None, scenes_from=None, programs=None, programs_source=None, reject=True,
                 progress=False, log=None, scheduler=None, spill=None) -> dict:
    """Run the build; returns the keyword arguments of ``HypothesisSpace``.

    p: resolved parameters (:func:`resolve_params`); grammar: a Grammar, a grammar file or
    None (CURI's); programs: program strings to use instead of sampling (then ``samples`` is
    ignored), ``programs_source`` names them in errors and the manifest; reject: apply the
    grammar's rejection rules to given programs.  scheduler: a started
    :class:`bayes_concepts.scale.Scheduler` the execute stages map their scene chunks on (None:
    this process); spill: where the signatures go (:func:`.chunked.signatures_stage`).
    Python's garbage collector runs less often meanwhile (:func:`~bayes_concepts.collector.fewer_collections`).
    """
    log = log or (lambda s: None)
    sched = scheduler or Scheduler()
    bar = _tqdm(progress)
    times, stages = {}, {}
    t0 = time.perf_counter()
    if grammar is None:
        grammar = load_grammar(data_file(p["grammar_file"])) if p.get("grammar_file") else curi_grammar()
    elif not isinstance(grammar, Grammar):
        grammar = load_grammar(grammar)
    grammar_text = Path(grammar.source).read_text(encoding="utf-8")
    seeds = np.random.SeedSequence(int(p["seed"])).generate_state(3, np.uint32)
    p["max_depth"] = grammar.max_depth if p["max_depth"] is None else int(p["max_depth"])

    t = time.perf_counter()
    if programs is None:
        programs, logp = sample_stage(grammar, p["samples"], seeds[0], p["max_depth"], bar, log, stages,
                                      p.get("retries", "whole"))
    else:
        texts = list(programs)
        programs, logp = given_programs_stage(texts, grammar, reject, programs_source or "<programs>", bar, log,
                                              stages)
    for _, source in program_sources.items():
        programs, logp = _with_source(source, programs, logp, grammar, p, log, stages)
    times["programs"] = time.perf_counter() - t

    t = time.perf_counter()
    bank, sources = scene_bank_stage(p, scenes_from, grammar, seeds[1])
    times["scenes"] = time.perf_counter() - t
    t = time.perf_counter()
    bank_rows = bank_block(bank, grammar)
    # question domains (programs with unique referents or domain constraints; other spaces'
    # manifests stay as they were): a concept defined on no scene of the bank is dropped
    with_domains = grammar.is_relational and any(prog.has_domain for prog in programs)
    if with_domains:
        programs, logp, counts = empty_domain_stage(programs, logp, bank, bank_rows, grammar, sched, log, stages)
    else:
        plan = compile_for(programs, bank, grammar)
        counts = count_programs(plan, bank_rows, bank.n_scenes, sched)
        del plan
    bounds = p.get("filter_bounds", "closed")
    keep = firing_filter(counts, bank.n_scenes, p["min_count"], p["max_rate"], bounds)
    stages["after_firing_filter"] = int(keep.sum())
    times["execute"] = time.perf_counter() - t
    lo, hi = (">=", "<=") if bounds == "closed" else (">", "<")
    log(f"executed on {bank.n_scenes:,} scenes: {int(keep.sum()):,} true on {lo} {p['min_count']} and "
        f"{hi} {p['max_rate']:.0%} of scenes")

    concepts, log_pcfg, kept_counts = collapse_and_dedupe(programs, logp, counts, keep)
    stages["after_collapse_dedupe"] = len(concepts)
    log(f"collapsed x-free quantifiers: {len(concepts):,} concepts")

    t = time.perf_counter()
    # the concepts with a domain get it from the same plan (their sub-programs compiled and run once)
    which = [i for i, c in enumerate(concepts) if c.has_domain] if with_domains else []
    plan = compile_with_domains(concepts, bank, grammar, which) if which else compile_for(concepts, bank, grammar)
    streamed = signatures_stage(plan, bank_rows, bank.n_scenes, kept_counts, int(p["test_positives"]),
                                int(seeds[2]), sched, spill=spill, extra=len(which))  # also classes, test bank
    del plan
    signatures, final_counts, classes = streamed["signatures"], streamed["counts"], streamed["classes"]
    stages["synonym_classes"] = int(classes.max()) + 1 if len(classes) else 0
    times["signatures"] = time.perf_counter() - t - streamed["test_bank_seconds"]
    log(f"synonym classes: {stages['synonym_classes']:,}")

    test_bank = streamed["test_bank"]
    domain_fields = {}
    if with_domains:
        domain_fields = domains_stage(which, streamed["extra"], bank, test_bank)
        if len(domain_fields["domain_ids"]):
            classes = refine_classes(classes, domain_fields["domain_ids"], domain_fields["domains"])
            stages["synonym_classes"] = int(classes.max()) + 1 if len(classes) else 0
        stages["with_domain"] = int(len(domain_fields["domain_ids"]))
        log(f"question domains: {stages['with_domain']:,} concepts are defined on fewer than every scene; "
            f"synonym classes (extension and domain): {stages['synonym_classes']:,}")
    del bank_rows
    stages["test_bank"] = test_bank.n_scenes
    times["test_bank"] = streamed["test_bank_seconds"]
    times["total"] = time.perf_counter() - t0
    log(f"test bank: {test_bank.n_scenes:,} scenes")

    params = {k: p[k] for k in ("samples", "scenes", "scene_sampler", "max_depth", "seed", "min_count",
                                "max_rate", "test_positives")}
    source_params = _source_defaults()
    defaults = {**DEFAULTS, **source_params}
    for k in (*_OPTIONAL_PARAMS, *source_params):
        if p.get(k, defaults[k]) != defaults[k]:
            params[k] = list(p[k]) if k == "location_bins" else p[k]
    if sources is not None:
        params["scene_sampler"] = None
        params["scenes_from"] = sources
    if "given" in stages:
        params["samples"] = None
        params["programs_from"] = {"source": str(programs_source or "<programs>"), "programs": stages["given"],
                                   "sha256": hashlib.sha256("\n".join(texts).encode()).hexdigest(),
                                   "rejection_rules": bool(reject)}
    params["grammar"] = {"file": Path(grammar.source).name,
                         "sha256": hashlib.sha256(grammar_text.encode()).hexdigest()}
    fields = dict(programs=[c.postfix for c in concepts], lengths=np.array([c.length for c in concepts], np.int16),
                  log_pcfg=log_pcfg, counts=final_counts, synonym_classes=classes, signatures=signatures,
                  scene_codes=bank.codes, test_bank=test_bank, params=params, stages=stages, grammar=grammar,
                  grammar_text=grammar_text, build_seconds=times)
    if bank.relation_bits is not None:  # scenes with relations keep them (and their positions, if any)
        fields.update(scene_positions=bank.positions, scene_relations=packed_relations(bank))
    if domain_fields and len(domain_fields["domain_ids"]):
        fields.update(domain_fields)
    return fields


def empty_domain_stage(programs, logp, bank, bank_rows, grammar, sched, log, stages) -> tuple:
    """Drop the programs defined on no scene of the bank (a constraint or a unique referent
    that never holds): counted in ``stages["empty_domain"]`` and logged with an example.
    Returns (programs, log_probs, counts): ``counts`` int64, each kept program's extension
    size on the bank, counted in the same pass as the domains (one plan of extensions and
    domains: the sub-programs a program's value and its domain share are compiled and run
    once)."""
    n = len(programs)
    which = [i for i, prog in enumerate(programs) if prog.has_domain]
    both = count_programs(compile_with_domains(programs, bank, grammar, which), bank_rows, bank.n_scenes, sched)
    counts, domain_counts = both[:n], both[n:]
    empty = {which[k] for k in np.flatnonzero(domain_counts == 0).tolist()}
    stages["empty_domain"] = len(empty)
    if empty:
        first = programs[min(empty)].postfix
        log(f"question domains: {len(empty):,} concepts are defined on no scene of the bank and are dropped "
            f"(e.g. {first[:120]!r})")
    kept = [i for i in range(n) if i not in empty]
    return [programs[i] for i in kept], [logp[i] for i in kept], counts[np.asarray(kept, np.int64)]


def domains_stage(which, doms, bank, test_bank) -> dict:
    """The domains of the concepts defined on fewer than every scene, from the domains ``doms``
    (uint64 (len(which), ceil(N/64)), padding bits 0) of the concepts at the indexes ``which``
    (those with unique referents or domain constraints): ``domain_ids`` int64 (D,) ascending,
    ``domains`` uint64 (D, ceil(N/64)) packed like signatures, ``test_domains`` uint64 (D,
    ceil(T/64)) on the test-bank scenes."""
    from ..bits import gather_bits

    partial = np.bitwise_count(doms).sum(axis=1) < bank.n_scenes
    ids = np.asarray(which, np.int64)[partial]
    doms = np.ascontiguousarray(doms[partial])
    return dict(domain_ids=ids, domains=doms, test_domains=gather_bits(doms, test_bank.scene_ids))


def refine_classes(classes, domain_ids, domains) -> np.ndarray:
    """Synonym classes split so that two concepts share one only if their extensions (the
    given ``classes``) and their domains agree (a concept not in ``domain_ids`` is defined on
    every scene); numbered in order of first member, as :func:`synonym_classes`."""
    keys = {}
    out = np.empty(len(classes), np.int32)
    rows = {int(i): k for k, i in enumerate(np.asarray(domain_ids).tolist())}
    for i, c in enumerate(np.asarray(classes).tolist()):
        k = rows.get(i)
        key = (c, None if k is None else np.asarray(domains[k]).tobytes())
        out[i] = keys.setdefault(key, len(keys))
    return out


#: Scenes per block when a bank's relations are packed (a multiple of 64).
_RELATION_BLOCK = 1 << 15


def packed_relations(bank) -> np.ndarray:
    """A bank's relations as a space keeps them: uint8 (n_scenes, ceil(R·S·S/8)), row ``i``
    the bool array ``bank.relations()[i]`` (R, S, S) flattened in (r, a, b) order and packed
    little-endian (``np.packbits(..., bitorder="little")``); computed block by block from the
    bank's bitsets, so the unpacked array is never held whole."""
    R, S, n = len(bank.relation_names), bank.n_slots, bank.n_scenes
    out = np.empty((n, -(-R * S * S // 8)), np.uint8)
    for lo in range(0, n, _RELATION_BLOCK):
        hi = min(n, lo + _RELATION_BLOCK)
        bits = unpack_bits(np.ascontiguousarray(bank.relation_bits[..., lo // 64: -(-hi // 64)]), hi - lo)
        out[lo:hi] = np.packbits(np.moveaxis(bits, -1, 0).reshape(hi - lo, -1), axis=1, bitorder="little")
    return out


def synonym_classes(signatures: np.ndarray) -> np.ndarray:
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


