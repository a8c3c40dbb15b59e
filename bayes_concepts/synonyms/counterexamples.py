"""Counterexample scenes: a valid scene on which two programs differ proves that they are
not logically equivalent (they can coincide only on some scene distribution).

The search runs the programs with the bit-sliced executor on a *counterexample bank*
(:func:`counterexample_bank`): half uniform scenes with 1 to ``max_objects`` objects,
half "clumped" scenes whose objects draw each attribute from one or two values, so that
coincidences rare under uniform sampling (all objects alike, all in one column) occur
often.  A separating scene is re-checked with the slow reference interpreter.

A schema whose scenes carry relations (CLEVR's left, right, front, behind) places the
objects of the bank with the ``clevr`` sampler (its positions, hence its number of objects
per scene, and CLEVR's margin rule, so every relation is well defined) and computes the
relations from the positions; the attribute codes are drawn as above.
"""
from __future__ import annotations

import numpy as np

from ..engine import evaluate_programs
from ..engine.interpreter import evaluate
from ..lot.grammar import Grammar, curi_grammar
from ..scenes import SceneBank, SceneSchema, unpack_bits
from .prover import SynonymError

#: spawn key of the counterexample bank's random stream (next to the caller's seed)
BANK_STREAM = 606


def counterexample_bank(schema: SceneSchema, n_scenes: int, seed: int = 0) -> SceneBank:
    """A bank of valid scenes for counterexample search.

    Parameters
    ----------
    schema : SceneSchema
        Attributes and ``max_objects``; the bank's schema allows 1 to ``max_objects``
        objects (``min_objects = sample_min_objects = 1``).
    n_scenes : int
        Number of scenes (≥ 1); the first ``n_scenes // 2`` are uniform, the rest clumped.
    seed : int
        Seed; the stream is ``SeedSequence([seed, BANK_STREAM])``.

    Returns
    -------
    SceneBank
        ``bank.codes`` int8 (n_scenes, max_objects, n_attributes), −1 in empty slots; with
        positions and relations when the schema has relations.
    """
    if n_scenes < 1:
        raise SynonymError(f"a counterexample bank needs n_scenes >= 1, got {n_scenes}")
    bank_schema = SceneSchema(schema.attributes, max_objects=schema.max_objects, min_objects=1,
                              sample_min_objects=1, relations=schema.relations)
    rng = np.random.default_rng(np.random.SeedSequence([seed, BANK_STREAM]))
    slots, n_attributes = bank_schema.max_objects, bank_schema.n_attributes
    sizes = np.array([a.n_values for a in bank_schema.attributes])
    n_objects = rng.integers(1, slots + 1, size=n_scenes)
    positions = None
    if bank_schema.relations:
        from ..scenes.samplers import sample_clevr_scenes
        _, positions = sample_clevr_scenes(n_scenes, bank_schema, np.random.SeedSequence([seed, BANK_STREAM, 1]))
        n_objects = np.isfinite(positions[:, :, 0]).sum(axis=1)
    codes = (rng.random((n_scenes, slots, n_attributes)) * sizes).astype(np.int8)
    clumped = np.arange(n_scenes) >= n_scenes // 2
    # clumped scenes: per (scene, attribute) a pool of one or two values
    pool = (rng.random((n_scenes, 2, n_attributes)) * sizes).astype(np.int8)
    second = rng.random((n_scenes, slots, n_attributes)) < np.where(rng.random((n_scenes, 1, n_attributes)) < 0.5,
                                                                    0.0, 0.5)
    clump = np.where(second, pool[:, 1:2, :], pool[:, 0:1, :])
    codes[clumped] = clump[clumped]
    codes[np.arange(slots)[None, :] >= n_objects[:, None]] = -1
    if positions is not None:
        return SceneBank(codes, bank_schema, positions=positions)
    return SceneBank.from_codes(codes, bank_schema)


def separating_scene(signatures: np.ndarray, first: int, n_scenes: int, preferred: np.ndarray | None = None):
    """A member that differs from member ``first`` and a scene separating the two.

    Parameters
    ----------
    signatures : numpy.ndarray
        uint64 (n_programs, n_words): packed truth values on a bank of ``n_scenes`` scenes.
    first : int
        The row every other row is compared with.
    n_scenes : int
        Number of scenes of the bank.
    preferred : numpy.ndarray, optional
        bool (n_scenes,): scenes to prefer (e.g. those with as many objects as a space's
        sampler draws).  The first member (in row order) separated from ``first`` by a
        preferred scene is returned; failing that, the first separated at all.

    Returns
    -------
    tuple of (int, int) or None
        ``(second, scene)``: a row and a scene index with a different truth value than
        ``first`` has there; None when every row equals row ``first``.
    """
    bits = unpack_bits(signatures, n_scenes) if len(signatures) else np.zeros((0, n_scenes), bool)
    differ = bits != bits[first]
    if preferred is not None:
        better = differ & np.asarray(preferred, bool)
        rows = np.flatnonzero(better.any(axis=1))
        if len(rows):
            return int(rows[0]), int(np.flatnonzero(better[rows[0]])[0])
    rows = np.flatnonzero(differ.any(axis=1))
    if not len(rows):
        return None
    return int(rows[0]), int(np.flatnonzero(differ[rows[0]])[0])


def find_counterexample(program_a, program_b, grammar: Grammar | None = None, *, n_scenes: int = 20_000,
                        seed: int = 0, max_objects: int | None = None) -> dict | None:
    """Search a valid scene on which two programs differ.

    Parameters
    ----------
    program_a, program_b : str or Program
        The two programs, as postfix strings or parsed.
    grammar : Grammar, optional
        The grammar they are written in (default: CURI's).
    n_scenes : int
        Size of the :func:`counterexample_bank` searched.
    seed : int
        Seed of the bank.
    max_objects : int, optional
        The most objects per scene (default: the grammar's schema's).

    Returns
    -------
    dict or None
        A scene (``{"objects": [...]}``, the JSON Lines scene format) on which the
        reference interpreter gives the two programs different truth values, preferring
        scenes with at least the schema's ``sample_min_objects`` objects; None when the
        bank holds none (the programs may still differ elsewhere).
    """
    grammar = grammar or curi_grammar()
    schema = grammar.schema if max_objects is None else grammar.schema.with_max_objects(int(max_objects))
    bank = counterexample_bank(schema, n_scenes, seed)
    signatures = evaluate_programs([program_a, program_b], bank, grammar)
    found = separating_scene(signatures, 0, bank.n_scenes, bank.n_objects >= schema.sample_min_objects)
    if found is None:
        return None
    scene = bank.scene(found[1])
    if evaluate(program_a, scene, grammar) == evaluate(program_b, scene, grammar):
        raise RuntimeError(f"the executor separates {program_a!r} and {program_b!r} on {scene}, "
                             "the reference interpreter does not")
    return scene
