"""Boolean concepts over a few stimuli, enumerated exhaustively from a grammar.

Category-learning experiments in cognitive science (Shepard, Hovland & Jenkins 1961 and their
replications) use a handful of stimuli that vary on a few binary dimensions, one stimulus at a
time.  With N stimuli there are only 2^N concepts (8 stimuli: 256), so instead of sampling
programs the way a CURI space is built, every program of a grammar is accounted for: a dynamic
program over *truth tables* gives, for every concept,

* its shortest description length l_min(h) (tokens, the quantifier included) and one shortest
  program (of those, the most probable one under the PCFG);
* the number of programs of each length that denote it (its synonyms), up to ``max_length``;
* its PCFG probability: the summed probability of every program denoting it, of any length
  (``log_prob_sum``: the concept's probability under the grammar), and that of its most
  probable single program (``log_prob_best``).

A truth table is an integer t in [0, 2^N): bit j is the concept's label of stimulus j.
Stimuli are every combination of the attribute values in the grammar's schema order, stimulus
j the mixed-radix number of its value codes with the first attribute most significant (for
three binary dimensions d1 d2 d3: j = 4·d1 + 2·d2 + d3, the row order of the human data).

Which grammars can be enumerated: one object per scene (``objects 1 1 1``) and every
production either made of tokens only (a literal such as ``x d1? 1 =``, evaluated on every
stimulus by the interpreter) or of nonterminals followed by one operator (``BOOL BOOL and``,
``BOOL not``, the final ``BOOL exists=``), whose truth function is the operator's interpreter
semantics.  Anything else is refused with the production's line.

Two dynamic programs do it.  By length: the programs of length L of nonterminal A with
production ``B C op`` are the pairs of programs of B of length a and of C of length
L - 1 - a, and the truth table of each pair is ``op`` applied bitwise; :func:`combine_sum`
reduces the outer product of two rows of per-truth-table numbers by the operator's table
(every term is non-negative: no cancellation).  Over all lengths: fixed points of the same
recursions with sums (the inside probabilities), maxima (the most probable program) and
(shortest, then most probable) pairs (:func:`combine_max`, :func:`combine_shortest`); the
shortest lengths found both ways must agree.  Counts are float64: exact up to 2^53 and
accurate to rounding beyond.  Every shortest program is parsed and evaluated on every
stimulus by the interpreter before it is returned.  :func:`combine_slow` is the kernels'
slow twin.

>>> concepts = enumerate_concepts("and_or_not")                  # doctest: +SKIP
>>> concepts.min_length[0b10101010], concepts.shortest[0b10101010]   # doctest: +SKIP
(5, 'x d3? 1 = exists=')
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ...errors import BayesConceptsError
from ...lot.grammar import Grammar, load_grammar
from ...lot.operators import operator_of
from ...lot.program import Program
from ...engine.interpreter import evaluate
from ...resources import data_file

#: The languages compared on Shepard, Hovland & Jenkins' structures: name -> grammar file of
#: ``hypotheses/``.  Same literals, same weights; they differ in their connectives.
SHJ_LANGUAGES = {"and_or_not": "shj.pcfg", "and_not": "shj_and_not.pcfg", "xor_iff": "shj_xor_iff.pcfg"}
#: Most stimuli a grammar's domain may have (2^8 = 256 truth tables).
MAX_STIMULI = 8
#: Default longest program whose synonyms are counted length by length (tokens): the shortest
#: program of every concept of the three languages is shorter.
DEFAULT_MAX_LENGTH = 64
QUANTIFIERS = ("exists=", "for-all=")


class BooleanGrammarError(BayesConceptsError):
    """A grammar whose concepts cannot be enumerated over its stimuli (names the line)."""


def language_grammar(language) -> Grammar:
    """The grammar of ``language``: a name of :data:`SHJ_LANGUAGES`, a grammar file or a Grammar."""
    if isinstance(language, Grammar):
        return language
    if isinstance(language, str) and language in SHJ_LANGUAGES:
        return load_grammar(data_file(SHJ_LANGUAGES[language]))
    path = Path(str(language))
    if path.suffix == ".pcfg" or path.is_file():
        if not path.is_file():
            raise BayesConceptsError(f"grammar file {path}: no such file")
        return load_grammar(path)
    raise BayesConceptsError(f"unknown language {language!r} (expected one of {', '.join(SHJ_LANGUAGES)} "
                             "or a grammar file)")


def language_name(grammar: Grammar) -> str:
    """The :data:`SHJ_LANGUAGES` name of a grammar read from one of those files, else its file name."""
    name = Path(grammar.source).name
    return next((k for k, v in SHJ_LANGUAGES.items() if v == name), name)


def stimuli_codes(grammar: Grammar) -> np.ndarray:
    """int64 (N, A): every combination of attribute value codes, first attribute most significant."""
    attrs = grammar.schema.attributes
    n = math.prod(len(a.values) for a in attrs)
    if not attrs or n > MAX_STIMULI:
        raise BooleanGrammarError(f"{grammar.source}: {n} stimuli (the product of the attributes' value counts); "
                                  f"concepts can be enumerated over at most {MAX_STIMULI}")
    return np.array(list(itertools.product(*(range(len(a.values)) for a in attrs))), np.int64).reshape(n, len(attrs))


def stimulus_scenes(grammar: Grammar) -> list:
    """The stimuli as scene dicts (one object each), in stimulus order."""
    attrs = grammar.schema.attributes
    return [{"objects": [{a.name: a.values[int(c)] for a, c in zip(attrs, row)}]} for row in stimuli_codes(grammar)]


def truth_table(labels) -> int:
    """The truth table (int) of labels (N,) over the stimuli: bit j = label of stimulus j."""
    labels = np.asarray(labels).astype(bool).ravel()
    return int(np.dot(labels.astype(np.int64), 1 << np.arange(len(labels), dtype=np.int64)))


def extensions(n_stimuli: int, tables=None) -> np.ndarray:
    """bool (T, N): the label of every stimulus under truth tables ``tables`` (default all 2^N)."""
    tables = np.arange(1 << n_stimuli) if tables is None else np.asarray(tables, np.int64)
    return ((tables[:, None] >> np.arange(n_stimuli)[None, :]) & 1).astype(bool)


# ============================================================================ productions
@dataclass(frozen=True)
class _Production:
    lhs: str
    children: tuple        # nonterminals (empty for a literal)
    table: np.ndarray | None  # truth table (int) of a literal, or the operator's result table
    tokens: int            # terminal tokens it emits itself
    prob: float
    rhs: tuple
    line: int


def operator_table(token: str, arity: int, n_stimuli: int) -> np.ndarray:
    """The truth tables an operator makes of its operands' truth tables: int64 (2^N,) for one
    operand, (2^N, 2^N) for two.  Its truth function is its registered interpreter semantics
    (a final quantifier over a one-object scene is the identity)."""
    op = operator_of(token)
    size = 1 << n_stimuli
    full = size - 1
    if token in QUANTIFIERS and arity == 1:
        kind = "quantifier"
    elif op is None or op.interpret is None:
        raise BooleanGrammarError(f"operator {token!r} has no interpreter semantics")
    else:
        kind = op.kind
    world = SimpleNamespace(n_objects=1)

    def truth(values):
        node = SimpleNamespace(op=token, kind=kind, children=tuple(SimpleNamespace(value=v) for v in values))
        return bool(op.interpret(lambda child, env: child.value, node, {}, world))

    grids = np.meshgrid(*([np.arange(size)] * arity), indexing="ij")
    out = np.zeros(grids[0].shape, np.int64)
    for values in itertools.product((False, True), repeat=arity):
        if truth(values):
            mask = np.full(grids[0].shape, full, np.int64)
            for g, v in zip(grids, values):
                mask &= g if v else (~g & full)
            out |= mask
    return out


def _productions(grammar: Grammar, scenes: list) -> list:
    n = len(scenes)
    nts = set(grammar.nonterminals)
    out = []
    for p in grammar.productions:
        where = f"{grammar.source} line {p.line}"
        kids = [s for s in p.rhs if s in nts]
        if not kids:
            text = " ".join(p.rhs)
            if p.rhs[-1] not in QUANTIFIERS:
                text += " exists="
            try:
                prog = Program.parse(text, grammar)
                labels = [evaluate(prog, s, grammar) for s in scenes]
            except BayesConceptsError as exc:
                raise BooleanGrammarError(f"{where}: {' '.join(p.rhs)!r} is not a boolean literal ({exc})") from None
            out.append(_Production(p.lhs, (), np.int64(truth_table(labels)), len(p.rhs), p.prob, p.rhs, p.line))
            continue
        if len(p.rhs) == 1:
            raise BooleanGrammarError(f"{where}: {p.lhs} -> {' '.join(p.rhs)}: a unit production; write the "
                                      "alternatives of its nonterminal in its place")
        if p.rhs[: len(kids)] != tuple(kids) or len(p.rhs) != len(kids) + 1:
            raise BooleanGrammarError(f"{where}: {p.lhs} -> {' '.join(p.rhs)}: cannot enumerate it (a production "
                                      "is either tokens only or nonterminals followed by one operator)")
        if len(kids) > 2:
            raise BooleanGrammarError(f"{where}: operators of more than two operands are not enumerated")
        token = p.rhs[-1]
        table = operator_table(token, len(kids), n)
        out.append(_Production(p.lhs, tuple(kids), table, 1, p.prob, p.rhs, p.line))
    return out


# ============================================================================ the kernels
def combine_sum(table: np.ndarray, a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Per result truth table, the summed products of the operands' numbers.

    table: int64 (T,) or (T, T) (:func:`operator_table`); a, b: float64 (T,) (b only for two
    operands); or a, b: float64 (K, T) stacks, summed over their K rows (the pairs of operand
    lengths that make one program length).  Returns float64 (T,):
    out[r] = Σ_k Σ_{table[t1, t2] = r} a[k, t1]·b[k, t2].  All terms are non-negative.
    """
    size = table.shape[0]
    if b is None:
        w = np.asarray(a).reshape(-1, size).sum(axis=0)
    else:
        a2, b2 = np.asarray(a).reshape(-1, size), np.asarray(b).reshape(-1, size)
        # einsum, not a BLAS matrix product: BLAS threads crawl on a busy machine at this size
        w = np.multiply.outer(a2[0], b2[0]) if len(a2) == 1 else np.einsum("ki,kj->ij", a2, b2)
    return np.bincount(table.ravel(), weights=w.ravel(), minlength=size)


def combine_max(table: np.ndarray, a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Per result truth table, the largest product of the operands' numbers (0 where none).
    table, a, b: as :func:`combine_sum` (single rows).  Returns float64 (T,)."""
    return _SortedTable.of(table).max(a, b)


def combine_shortest(table: np.ndarray, len_a, p_a, len_b=None, p_b=None) -> tuple:
    """Per result truth table, the shortest combination and, of those, the most probable.

    len_*: float64 (T,) shortest lengths of the operands' concepts (``inf``: none); p_*: the
    probability of their most probable shortest program.  Returns (length (T,), probability (T,))
    with length = len_a[t1] + len_b[t2] minimised over the operands making r, probability the
    largest p_a[t1]·p_b[t2] among the minimisers (``inf`` and 0 where no operands make r)."""
    return _SortedTable.of(table).shortest(len_a, p_a, len_b, p_b)


def combine_slow(table, a, b=None, how="sum", len_a=None, len_b=None):
    """The kernels above by an explicit loop over operand truth tables (their slow twin).
    ``how``: ``sum``, ``max`` (single rows a, b) or ``shortest`` (then a, b are the
    probabilities and len_a, len_b the lengths; returns (lengths, probabilities))."""
    size = table.shape[0]
    pairs = [(t1, None) for t1 in range(size)] if b is None else [(t1, t2) for t1 in range(size) for t2 in range(size)]
    if how == "sum":
        a2 = np.asarray(a, float).reshape(-1, size)
        b2 = None if b is None else np.asarray(b, float).reshape(-1, size)
        out = [0.0] * size
        for k in range(a2.shape[0]):
            for t1, t2 in pairs:
                r = int(table[t1]) if t2 is None else int(table[t1, t2])
                out[r] += float(a2[k, t1]) * (1.0 if t2 is None else float(b2[k, t2]))
        return np.array(out)
    if how == "max":
        out = [0.0] * size
        for t1, t2 in pairs:
            r = int(table[t1]) if t2 is None else int(table[t1, t2])
            out[r] = max(out[r], float(a[t1]) * (1.0 if t2 is None else float(b[t2])))
        return np.array(out)
    lengths, probs = [math.inf] * size, [0.0] * size
    for t1, t2 in pairs:
        r = int(table[t1]) if t2 is None else int(table[t1, t2])
        ln = float(len_a[t1]) + (0.0 if t2 is None else float(len_b[t2]))
        pr = float(a[t1]) * (1.0 if t2 is None else float(b[t2]))
        if ln < lengths[r] or (ln == lengths[r] and pr > probs[r]):
            lengths[r], probs[r] = ln, pr
    return np.array(lengths), np.array(probs)


class _SortedTable:
    """An operator table with its entries sorted by result: grouped maxima and minima by reduceat."""

    _cache: dict = {}

    @classmethod
    def of(cls, table):
        """The sorted form of ``table`` (cached by its contents)."""
        hit = cls._cache.get(id(table))
        if hit is not None and hit[0] is table:
            return hit[1]
        key = (table.shape, hashlib.sha1(np.ascontiguousarray(table).view(np.uint8)).hexdigest())
        found = cls._cache.get(key)
        if found is None:
            found = cls._cache[key] = cls(table)
        cls._cache[id(table)] = (table, found)
        return found

    def __init__(self, table):
        flat = table.ravel()
        self.order = np.argsort(flat, kind="stable")
        self.present, self.starts, self.sizes = np.unique(flat[self.order], return_index=True, return_counts=True)
        self.size = table.shape[0]
        self.shape = table.shape

    def operands(self, r: int) -> np.ndarray:
        """int64 (n, arity): the operand truth tables the operator maps to ``r``, in ascending order."""
        i = np.searchsorted(self.present, r)
        if i == len(self.present) or self.present[i] != r:
            return np.zeros((0, len(self.shape)), np.int64)
        idx = np.sort(self.order[self.starts[i]: self.starts[i] + self.sizes[i]])
        return np.stack(np.unravel_index(idx, self.shape), axis=1).astype(np.int64)

    def _sorted(self, a, b, op):
        return (np.asarray(a, float) if b is None else op.outer(a, b)).ravel()[self.order]

    def max(self, a, b=None):
        out = np.zeros(self.size)
        out[self.present] = np.maximum.reduceat(self._sorted(a, b, np.multiply), self.starts)
        return out

    def shortest(self, len_a, p_a, len_b=None, p_b=None):
        lens = self._sorted(len_a, len_b, np.add)
        probs = self._sorted(p_a, p_b, np.multiply)
        gmin = np.minimum.reduceat(lens, self.starts)
        tied = lens == np.repeat(gmin, self.sizes)
        gmax = np.maximum.reduceat(np.where(tied, probs, 0.0), self.starts)
        out_len, out_p = np.full(self.size, np.inf), np.zeros(self.size)
        out_len[self.present], out_p[self.present] = gmin, np.where(np.isfinite(gmin), gmax, 0.0)
        return out_len, out_p


# ============================================================================ enumeration
@dataclass(frozen=True)
class BooleanConcepts:
    """Every concept over the stimuli of a one-object grammar (see the module docstring).

    Arrays over truth tables t = 0 .. 2^N - 1 (N stimuli), lengths L = 0 .. max_length tokens:

    min_length : int64 (2^N,)
        Shortest description length l_min(h) in tokens (-1: no program denotes it).
    shortest : tuple of str (2^N,)
        A shortest program (postfix) of each concept, the most probable of the shortest ones
        ('' where none).
    n_programs : float64 (max_length + 1, 2^N)
        Programs of each length denoting each concept (its synonyms).
    prob_by_length : float64 (max_length + 1, 2^N)
        Summed PCFG probability of those programs.
    prob_sum : float64 (2^N,)
        Summed PCFG probability of *every* program denoting the concept, of any length (the
        inside probabilities' fixed point, to a relative 1e-13): the concept's probability.
    prob_best, prob_shortest : float64 (2^N,)
        Probability of the concept's most probable program, and of its most probable
        shortest program.
    """

    grammar: Grammar
    stimuli: np.ndarray
    max_length: int
    min_length: np.ndarray
    shortest: tuple
    n_programs: np.ndarray
    prob_by_length: np.ndarray
    prob_sum: np.ndarray
    prob_best: np.ndarray
    prob_shortest: np.ndarray
    seconds: float = field(default=0.0, compare=False)

    @property
    def n_stimuli(self) -> int:
        return int(len(self.stimuli))

    @property
    def n_concepts(self) -> int:
        return 1 << self.n_stimuli

    @property
    def reachable(self) -> np.ndarray:
        """bool (2^N,): some program denotes the concept."""
        return self.min_length >= 0

    @property
    def synonyms(self) -> np.ndarray:
        """float64 (2^N,): programs up to ``max_length`` tokens denoting each concept."""
        return self.n_programs.sum(axis=0)

    @property
    def shortest_synonyms(self) -> np.ndarray:
        """float64 (2^N,): programs of the shortest length denoting each concept (0: longer than
        ``max_length`` or unreachable)."""
        ml = self.min_length
        ok = (ml >= 0) & (ml <= self.max_length)
        return np.where(ok, self.n_programs[np.clip(ml, 0, self.max_length), np.arange(self.n_concepts)], 0.0)

    @property
    def log_prob_sum(self) -> np.ndarray:
        """float64 (2^N,): log of :attr:`prob_sum` (nats; -inf: unreachable)."""
        with np.errstate(divide="ignore"):
            return np.log(self.prob_sum)

    @property
    def log_prob_best(self) -> np.ndarray:
        """float64 (2^N,): log PCFG probability of each concept's most probable program."""
        with np.errstate(divide="ignore"):
            return np.log(self.prob_best)

    @property
    def mass(self) -> float:
        """Summed probability of every program of the grammar (1 for a PCFG whose derivations end)."""
        return float(self.prob_sum.sum())

    def extension(self, t: int) -> np.ndarray:
        """bool (N,): the labels of concept ``t``."""
        return extensions(self.n_stimuli, [t])[0]

    def table(self):
        """A pandas DataFrame, one row per truth table: ``truth_table``, ``labels`` (a 0/1 string in
        stimulus order), ``positives``, ``min_length``, ``shortest``, ``readable``,
        ``shortest_synonyms``, ``synonyms`` (up to ``max_length``), ``log_prob_sum``,
        ``log_prob_best``."""
        import pandas as pd
        ext = extensions(self.n_stimuli)
        readable = [Program.parse(s, self.grammar).readable if s else "" for s in self.shortest]
        return pd.DataFrame({"truth_table": np.arange(self.n_concepts),
                             "labels": ["".join(map(str, r.astype(int))) for r in ext],
                             "positives": ext.sum(axis=1), "min_length": self.min_length,
                             "shortest": list(self.shortest), "readable": readable,
                             "shortest_synonyms": self.shortest_synonyms, "synonyms": self.synonyms,
                             "log_prob_sum": self.log_prob_sum, "log_prob_best": self.log_prob_best})


def enumerate_concepts(language="and_or_not", max_length: int | None = None) -> BooleanConcepts:
    """Enumerate the programs of ``language`` by truth table (see the module docstring).

    language: a name of :data:`SHJ_LANGUAGES`, a grammar file or a Grammar (one object per
    scene, at most 8 stimuli, productions as the module docstring says); max_length: longest
    program whose synonyms are counted by length (default :data:`DEFAULT_MAX_LENGTH`; the
    shortest lengths, shortest programs and probabilities do not depend on it).  Cached per
    (grammar, its text, max_length) in this process.
    """
    grammar = language_grammar(language)
    max_length = DEFAULT_MAX_LENGTH if max_length is None else int(max_length)
    if not 1 <= max_length <= 1000:
        raise BayesConceptsError(f"max_length must be in 1..1000, got {max_length}")
    source = Path(grammar.source)
    text = source.read_text(encoding="utf-8") if source.is_file() else repr(grammar)
    return _enumerate(grammar, hashlib.sha256(text.encode()).hexdigest(), max_length)


#: Inside probabilities: stop when no concept's probability changes by more than this, relatively.
_SUM_TOLERANCE = 1e-13
_MAX_ITERATIONS = 20_000


@lru_cache(maxsize=16)
def _enumerate(grammar: Grammar, text_sha: str, max_length: int) -> BooleanConcepts:
    t0 = time.perf_counter()
    if grammar.max_objects != 1:
        raise BooleanGrammarError(f"{grammar.source}: scenes of up to {grammar.max_objects} objects; enumerated "
                                  "concepts need one stimulus per scene (objects 1 1 1)")
    codes = stimuli_codes(grammar)
    scenes = stimulus_scenes(grammar)
    size = 1 << len(codes)
    prods = _productions(grammar, scenes)
    leaves = [p for p in prods if not p.children]
    ops = [p for p in prods if p.children]
    nts = grammar.nonterminals

    def zeros():
        return {nt: np.zeros(size) for nt in nts}

    # numbers and probabilities of programs by length: lengths 1..max_length, all terms >= 0
    count = {nt: np.zeros((max_length + 1, size)) for nt in nts}
    prob = {nt: np.zeros((max_length + 1, size)) for nt in nts}
    for L in range(1, max_length + 1):
        for p in leaves:
            if p.tokens == L:
                count[p.lhs][L, int(p.table)] += 1.0
                prob[p.lhs][L, int(p.table)] += p.prob
        for p in ops:
            rest = L - p.tokens
            if len(p.children) == 1:
                if rest >= 1:
                    (k,) = p.children
                    count[p.lhs][L] += combine_sum(p.table, count[k][rest])
                    prob[p.lhs][L] += p.prob * combine_sum(p.table, prob[k][rest])
                continue
            if rest >= 2:
                k1, k2 = p.children
                la = np.arange(1, rest)
                count[p.lhs][L] += combine_sum(p.table, count[k1][la], count[k2][rest - la])
                prob[p.lhs][L] += p.prob * combine_sum(p.table, prob[k1][la], prob[k2][rest - la])

    # fixed points over all lengths: summed (inside), largest, and shortest-then-largest probabilities
    leaf_sum, leaf_best = zeros(), zeros()
    leaf_len = {nt: np.full(size, np.inf) for nt in nts}
    leaf_short = zeros()
    for p in leaves:
        t = int(p.table)
        leaf_sum[p.lhs][t] += p.prob
        leaf_best[p.lhs][t] = max(leaf_best[p.lhs][t], p.prob)
        if p.tokens < leaf_len[p.lhs][t] or (p.tokens == leaf_len[p.lhs][t] and p.prob > leaf_short[p.lhs][t]):
            leaf_len[p.lhs][t], leaf_short[p.lhs][t] = p.tokens, p.prob
    inside, best = zeros(), zeros()
    shortest_len = {nt: np.full(size, np.inf) for nt in nts}
    shortest_p = zeros()
    for iteration in range(_MAX_ITERATIONS):
        new_in = {nt: leaf_sum[nt].copy() for nt in nts}
        new_best = {nt: leaf_best[nt].copy() for nt in nts}
        new_len = {nt: leaf_len[nt].copy() for nt in nts}
        new_short = {nt: leaf_short[nt].copy() for nt in nts}
        for p in ops:
            kids = p.children
            second = (lambda d: d[kids[1]]) if len(kids) == 2 else (lambda d: None)
            new_in[p.lhs] += p.prob * combine_sum(p.table, inside[kids[0]], second(inside))
            np.maximum(new_best[p.lhs], p.prob * combine_max(p.table, best[kids[0]], second(best)),
                       out=new_best[p.lhs])
            ln, pr = combine_shortest(p.table, shortest_len[kids[0]], shortest_p[kids[0]], second(shortest_len),
                                      second(shortest_p))
            ln = ln + p.tokens
            pr = pr * p.prob
            cur_len, cur_p = new_len[p.lhs], new_short[p.lhs]
            better = (ln < cur_len) | ((ln == cur_len) & (pr > cur_p))
            cur_len[better], cur_p[better] = ln[better], pr[better]
        settled = all(np.array_equal(new_best[nt], best[nt]) and np.array_equal(new_len[nt], shortest_len[nt])
                      and np.array_equal(new_short[nt], shortest_p[nt]) for nt in nts)
        change = max(float(np.max(np.abs(new_in[nt] - inside[nt]) / np.maximum(new_in[nt], 1e-300))) for nt in nts)
        inside, best, shortest_len, shortest_p = new_in, new_best, new_len, new_short
        if settled and change < _SUM_TOLERANCE:
            break
    else:  # pragma: no cover - a subcritical PCFG converges geometrically
        raise BooleanGrammarError(f"{grammar.source}: the probabilities of its programs did not converge in "
                                  f"{_MAX_ITERATIONS:,} iterations")

    start = grammar.start
    min_length = np.where(np.isfinite(shortest_len[start]), shortest_len[start], -1).astype(np.int64)
    counted = count[start] > 0
    first = np.where(counted.any(axis=0), counted.argmax(axis=0), -1)
    within = (min_length >= 0) & (min_length <= max_length)
    if not np.array_equal(first[within], min_length[within]) or (first[~within] != -1).any():  # pragma: no cover
        raise AssertionError("enumeration error: the shortest lengths disagree with the counts by length")
    shortest = _shortest_programs(ops, leaves, shortest_len, shortest_p, start, size, grammar, scenes)
    return BooleanConcepts(grammar=grammar, stimuli=codes, max_length=max_length, min_length=min_length,
                           shortest=shortest, n_programs=count[start], prob_by_length=prob[start],
                           prob_sum=inside[start], prob_best=best[start], prob_shortest=shortest_p[start],
                           seconds=time.perf_counter() - t0)


def _shortest_programs(ops, leaves, lengths, probs, start, size, grammar, scenes) -> tuple:
    """For every truth table the most probable of its shortest programs, rebuilt from the fixed
    point (first production, then smallest operand truth tables, on ties), then checked by
    parsing it and evaluating it on every stimulus."""
    by_lhs = {}
    for p in leaves + ops:
        by_lhs.setdefault(p.lhs, []).append(p)
    order = {id(p): i for i, p in enumerate(ops + leaves)}

    def build(nt, t):
        L, target = lengths[nt][t], probs[nt][t]
        for p in sorted(by_lhs[nt], key=lambda q: (q.line, order[id(q)])):
            if not p.children:
                if p.tokens == L and int(p.table) == t and math.isclose(p.prob, target, rel_tol=1e-9):
                    return list(p.rhs)
                continue
            k = p.children
            pairs = _SortedTable.of(p.table).operands(t)                          # (n, arity)
            ln = sum(lengths[kid][pairs[:, j]] for j, kid in enumerate(k)) + p.tokens
            pr = p.prob * np.prod([probs[kid][pairs[:, j]] for j, kid in enumerate(k)], axis=0)
            hits = np.flatnonzero((ln == L) & np.isclose(pr, target, rtol=1e-9, atol=0.0))
            if len(hits):
                chosen = pairs[hits[0]]
                return [tok for j, kid in enumerate(k) for tok in build(kid, int(chosen[j]))] + [p.rhs[-1]]
        raise AssertionError(f"no shortest derivation of {nt} for truth table {t}")  # pragma: no cover

    out = []
    for t in range(size):
        if not np.isfinite(lengths[start][t]):
            out.append("")
            continue
        text = " ".join(build(start, t))
        prog = Program.parse(text, grammar)
        labels = [evaluate(prog, s, grammar) for s in scenes]
        if truth_table(labels) != t or prog.length != lengths[start][t]:  # pragma: no cover - the check
            raise AssertionError(f"enumeration error: {text!r} is not concept {t} of length {lengths[start][t]}")
        out.append(prog.postfix)
    return tuple(out)


# ============================================================================ the space
def boolean_space(language="and_or_not", max_length: int | None = None, *, seed: int = 0,
                  include_trivial: bool = False):
    """The concepts of ``language`` as a :class:`~bayes_concepts.spaces.HypothesisSpace`.

    One concept per truth table (its shortest program, the most probable of those), over a
    scene bank of the N stimuli, one scene each, in stimulus order.  Fields: ``lengths`` the
    shortest description length l_min(h) (tokens); ``log_pcfg`` the summed PCFG log-probability
    of every program denoting the concept (the concept's probability under the grammar);
    ``counts`` its positives; every concept is its own synonym class.
    ``include_trivial``: keep the empty and the full concept (default: the 2^N - 2 others).
    The manifest's ``params["enumerated"]`` records the language, ``max_length`` (of the synonym
    counts), every concept's truth table, its synonyms up to ``max_length`` and at its shortest
    length, and the log-probability of its most probable program.  Saved and loaded like any
    space.
    """
    from ...spaces import build as _build
    from ...spaces.hypothesis_space import HypothesisSpace

    concepts = enumerate_concepts(language, max_length)
    grammar = concepts.grammar
    n = concepts.n_stimuli
    keep = [t for t in range(concepts.n_concepts) if concepts.shortest[t]
            and (include_trivial or 0 < bin(t).count("1") < n)]
    p = _build.resolve_params(None, scenes=n, seed=seed, min_count=0 if include_trivial else 1,
                              max_rate=1.0 if include_trivial else (n - 1) / n, test_positives=1)
    with tempfile.TemporaryDirectory(prefix="bayes_concepts_stimuli_") as tmp:
        path = Path(tmp) / f"{Path(grammar.source).stem}_stimuli.jsonl"
        path.write_text("".join(json.dumps(s) + "\n" for s in stimulus_scenes(grammar)), encoding="utf-8")
        fields = _build.build_fields(p, grammar, [path], programs=[concepts.shortest[t] for t in keep],
                                     programs_source=f"enumerated from {Path(grammar.source).name}", reject=False)
    by_program = {concepts.shortest[t]: t for t in keep}
    tables = np.array([by_program[s] for s in fields["programs"]], np.int64)
    fields["log_pcfg"] = concepts.log_prob_sum[tables]
    fields["params"]["enumerated"] = {
        "language": language_name(grammar), "max_length": concepts.max_length,
        "truth_tables": tables.tolist(), "synonyms": concepts.synonyms[tables].tolist(),
        "shortest_synonyms": concepts.shortest_synonyms[tables].tolist(),
        "log_prob_best": concepts.log_prob_best[tables].tolist()}
    return HypothesisSpace(**fields)


def space_truth_tables(space) -> np.ndarray:
    """int64 (n_concepts,): each concept's truth table over the space's scene bank (its N stimuli)."""
    from ...bits import unpack_bits
    bits = unpack_bits(np.asarray(space.signatures), space.n_scenes)
    return (bits.astype(np.int64) << np.arange(space.n_scenes, dtype=np.int64)[None, :]).sum(axis=1)


__all__ = ["SHJ_LANGUAGES", "MAX_STIMULI", "DEFAULT_MAX_LENGTH", "BooleanConcepts", "BooleanGrammarError",
           "language_grammar", "language_name", "stimuli_codes", "stimulus_scenes", "truth_table", "extensions",
           "operator_table", "combine_sum", "combine_max", "combine_shortest", "combine_slow", "enumerate_concepts",
           "boolean_space",
           "space_truth_tables"]
