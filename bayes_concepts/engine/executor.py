"""Evaluate many programs on a scene bank: compile to one bitset plan, run it.

>>> from bayes_concepts.scenes import SceneBank
>>> from bayes_concepts.engine import evaluate_programs, signature_bits
>>> bank = SceneBank.sample(1000, "clevr", seed=0)
>>> sig = evaluate_programs(["x color? red = exists=", "S shape? cube count= 2 ="], bank)
>>> sig.shape, sig.dtype                       # (programs, ceil(scenes / 64)) packed words
((2, 16), dtype('uint64'))
>>> signature_bits(sig, bank.n_scenes).shape   # one bool per (program, scene)
(2, 1000)
"""
from __future__ import annotations

import numpy as np

from ..lot.grammar import Grammar, curi_grammar
from ..lot.program import Program
from .kernels import run_plan
from .plan import BankLayout, Plan, PlanBuilder
from .relational_plan import RelationalPlanBuilder, relational_layout

#: Per-thread register file budget: the chunk of scenes a thread works on is sized so that
#: its registers stay near the caches (measured: 64-128 words per chunk is best here).
REGISTER_BYTES = 8 * 2**20


def layout_of(bank, grammar: Grammar | None = None) -> BankLayout:
    """The bank block layout programs of ``grammar`` read: CURI's, or with the relation rows
    a relational grammar needs (:class:`.relational_plan.RelationalLayout`)."""
    if grammar is not None and grammar.is_relational:
        return relational_layout(bank, grammar)
    return BankLayout(bank.schema, bank.value_offset, bank.n_slots)


def bank_block(bank, grammar: Grammar | None = None) -> np.ndarray:
    """The rows of ``bank`` a plan compiled for ``grammar`` reads: uint64 (rows, n_words)."""
    return layout_of(bank, grammar).block(bank)


def compile_for(programs, bank, grammar: Grammar | None = None) -> Plan:
    """Compile ``programs`` (Program objects or postfix strings) for ``bank``'s layout.

    A relational grammar's programs go through :class:`.relational_plan.RelationalPlanBuilder`;
    CURI's language through CURI's :class:`.plan.PlanBuilder`."""
    grammar = grammar or curi_grammar()
    layout = layout_of(bank, grammar)
    builder = (RelationalPlanBuilder if grammar.is_relational else PlanBuilder)(grammar, layout)
    for p in programs:
        builder.add(p if isinstance(p, Program) else Program.parse(p, grammar))
    return builder.finish()


def compile_with_domains(programs, bank, grammar: Grammar, domains_of=None) -> Plan:
    """One plan of a relational grammar whose outputs ``0..n-1`` are the extensions of
    ``programs`` and the next ones their domains (of every program, or of the programs at the
    indexes ``domains_of``, in that order).  Shared sub-programs run once, so extension and
    domain come from one pass."""
    if not grammar.is_relational:
        raise ValueError("only programs of a relational grammar have domains other than every scene")
    builder = RelationalPlanBuilder(grammar, layout_of(bank, grammar))
    programs = [p if isinstance(p, Program) else Program.parse(p, grammar) for p in programs]
    for p in programs:
        builder.add(p)
    for i in range(len(programs)) if domains_of is None else domains_of:
        builder.add_domain(programs[i])
    return builder.finish()


def evaluate_with_domains(programs, bank, grammar: Grammar | None = None, chunk_words: int | None = None) -> tuple:
    """``(extensions, domains)`` of ``programs`` over ``bank``: two uint64 arrays
    (len(programs), ceil(n_scenes/64)), packed like :func:`evaluate_programs`' signatures
    (padding bits 0).  A program's domain is the scenes on which each of its ``unique``
    referents (and those of its constraints) exists and is unique and each of its domain
    constraints holds; every scene for CURI's language.  Extensions lie within domains."""
    grammar = grammar or curi_grammar()
    n = len(programs)
    if not grammar.is_relational:
        ext = evaluate_programs(programs, bank, grammar, chunk_words)
        return ext, _all_scenes(n, bank.n_scenes)
    out = run(compile_with_domains(programs, bank, grammar), bank, chunk_words)
    return out[:n], out[n:]


def _all_scenes(n: int, n_scenes: int) -> np.ndarray:
    """uint64 (n, ceil(n_scenes/64)): every scene's bit set, padding bits 0."""
    out = np.full((n, -(-n_scenes // 64)), np.uint64(0xFFFFFFFFFFFFFFFF))
    if n_scenes % 64 and n:
        out[:, -1] = np.uint64((1 << (n_scenes % 64)) - 1)
    return out


def _rows(plan: Plan, bank) -> np.ndarray:
    return (plan.layout or BankLayout(bank.schema, bank.value_offset, bank.n_slots)).block(bank)


def chunk_words_for(plan: Plan, n_words: int, budget: int = REGISTER_BYTES) -> int:
    """Words per chunk so that one register file stays within ``budget`` bytes (16..128)."""
    return int(np.clip(budget // (8 * max(plan.n_regs, 1)), 16, 128))


def run(plan: Plan, bank, chunk_words: int | None = None, bank_rows: np.ndarray | None = None) -> np.ndarray:
    """Run a compiled plan on ``bank``: uint64 signatures (n_outputs, n_words), padding bits 0.

    ``bank_rows`` (from :meth:`BankLayout.rows_of`) may be passed to reuse it across calls."""
    rows = _rows(plan, bank) if bank_rows is None else bank_rows
    cw = chunk_words or chunk_words_for(plan, bank.n_words)
    out, _ = run_plan(plan.instructions, rows, plan.n_regs, plan.n_outputs, cw, False, bank.n_scenes)
    return out


def count(plan: Plan, bank, chunk_words: int | None = None, bank_rows: np.ndarray | None = None) -> np.ndarray:
    """Number of scenes of ``bank`` each output of ``plan`` is true on: int64 (n_outputs,).

    Same as ``popcount(run(plan, bank))`` without materialising the signatures."""
    rows = _rows(plan, bank) if bank_rows is None else bank_rows
    cw = chunk_words or chunk_words_for(plan, bank.n_words)
    _, counts = run_plan(plan.instructions, rows, plan.n_regs, plan.n_outputs, cw, True, bank.n_scenes)
    return counts


def evaluate_programs(programs, bank, grammar: Grammar | None = None, chunk_words: int | None = None) -> np.ndarray:
    """Signatures of ``programs`` over ``bank``.

    programs: sequence of :class:`Program` or postfix strings.
    bank: a :class:`~bayes_concepts.scenes.SceneBank`.
    Returns uint64 (len(programs), ceil(n_scenes/64)); bit j of word w is the
    program's truth value on scene 64*w + j.
    """
    return run(compile_for(programs, bank, grammar), bank, chunk_words)


def signature_bits(signatures: np.ndarray, n_scenes: int) -> np.ndarray:
    """Unpack packed signatures (..., n_words) to bool (..., n_scenes)."""
    sig = np.ascontiguousarray(signatures)
    as_bytes = sig.astype("<u8", copy=False).view(np.uint8)
    bits = np.unpackbits(as_bytes, axis=-1, bitorder="little")
    return bits[..., :n_scenes].astype(bool)


def popcount(signatures: np.ndarray) -> np.ndarray:
    """Number of set bits per row of packed signatures: int64 (...,)."""
    return np.bitwise_count(signatures).sum(axis=-1, dtype=np.int64)
