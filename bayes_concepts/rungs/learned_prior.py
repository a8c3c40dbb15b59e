"""The learned-prior rungs: every concept of the strong oracle, weighted by a prior whose
parameters are estimated from a split's training concepts only (:mod:`bayes_concepts.rungs`).

Two rungs, one knob each (``alpha`` > 0, the concentration; default 1):

* ``learned_prior`` (unigram).  **Program spaces** (a grammar's programs): production
  probabilities per left-hand side

      θ_r = (n_r + α·θ0_r) / (Σ_{r' with the lhs of r} n_r' + α),

  θ0_r the grammar's own probability of rule r and n_r the uses of r in the derivations of
  the training programs.  Each synonym class that holds a training concept contributes one
  program: its shortest training concept (``space.lengths``; ties: the smallest id).  A
  concept's learned log prior is log Σ_d Π_{r in d} θ_r over its derivations d, the same
  derivations ``space.log_pcfg`` sums over: one for a grammar like CURI's, and for an x-free
  program stored without its final quantifier (collapsed) the two derivations with
  ``exists=`` and with ``for-all=`` appended.  A training program with several derivations
  counts each with its share of the program's probability under θ0 (a collapsed CURI
  program: half a use of each quantifier's start rule, and its body's rules once), so every
  training program adds one derivation's worth of uses.  As α → ∞, θ → θ0 and the prior is
  the ``pcfg`` prior.
  **Pair spaces** (attribute-object pairs, :mod:`bayes_concepts.pairs`): per role,

      θ_a = (n_a + α/|A|) / (N + α),   θ_o = (n_o + α/|O|) / (N + α),

  n_a (n_o) the training pairs with attribute a (object o), N the training pairs, |A| and
  |O| the attributes and objects of the space's concepts.  A pair (a, o) has weight
  θ_a·θ_o ∝ (n_a + α/|A|)(n_o + α/|O|); a primitive (an attribute or an object alone) has
  its one factor, θ_a or θ_o.  Normalising each factor per role keeps pairs and primitives
  on the scale of the space's description prior (log p = −log|A| − log|O| for a pair,
  −log|A| for an attribute), which is the α → ∞ limit.  Training primitives add no counts
  (in a seen/unseen split every training primitive is part of a training pair anyway).
  **ConceptWorld spaces**: a concept of family f (for a family instance, with its n) has
  weight θ_f (·θ_n), θ_f = (n_f + α/|F|)/(N + α) over the space's |F| families (θ0 uniform
  over families), n_f the training concepts of family f, N all training concepts;
  θ_n = (m_n + α/|V|)/(M + α) over the space's |V| values of n, m_n the training family
  instances with that n, M all training family instances.
  Synonym classes are not merged in pair and ConceptWorld spaces: their concepts are
  distinct definitions, whatever their extensions on one bank.

* ``learned_prior_parent`` (parent-conditioned).  Program spaces: the probability of rule r
  at a nonterminal depends on its *context* c = (p, k): the production p whose right-hand
  side holds the nonterminal and its position k there (the start symbol's context is ROOT).
  A context fixes the nonterminal, so

      θ_{r|c} = (n_{c,r} + α·θ0_r) / (n_c + α),   n_c = Σ_{r'} n_{c,r'},

  n_{c,r} the uses of r in context c in the training derivations (counted as above); a
  context no training program uses keeps θ0.  Pair spaces: a pair's object is conditioned
  on its attribute, θ_{o|a} = (n_{a,o} + α/|O|)/(n_a + α), so a pair weighs θ_a·θ_{o|a};
  primitives keep their unigram factor.  ConceptWorld: a family instance's n is
  conditioned on its family, θ_{n|f} = (m_{f,n} + α/|V|)/(m_f + α), m_f the training
  instances of family f; concepts without n weigh θ_f.

Any other kind of space: the rungs do not apply (:func:`applies` says why).

:func:`learned_log_weights` gives the log prior weights (for other rungs, e.g. one that
samples from the learned prior); :func:`learned_rule_probabilities` the learned tables.

>>> w = learned_log_weights(space, split, alpha=10.0, variant="parent")      # doctest: +SKIP
>>> learned_rule_probabilities(space, split, 10.0)["BOOL"]["BOOL -> C C ="]  # doctest: +SKIP
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from ..lot.logprob import derivations
from ..lot.program import QUANTIFIERS
from ..oracles import Oracle
from .rung import Rung, RungError, rungs, strong_concepts

__all__ = ["learned_log_weights", "learned_rule_probabilities", "learning_set", "derivation_strings", "applies",
           "check_alpha", "VARIANTS", "ROOT"]

#: the two variants: rule probabilities per left-hand side, or per (parent rule, slot)
VARIANTS = ("unigram", "parent")
#: the context of the start symbol in the parent-conditioned tables
ROOT = "ROOT"
_INDEX_NAME = "rungs.learned_prior"


# ------------------------------------------------------------------------ checks
def check_alpha(name, value) -> str | None:
    """None if ``value`` is a usable concentration (a finite number > 0), else why not."""
    if name != "alpha":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return f"must be a number > 0, got {value!r}"
    if not math.isfinite(float(value)) or float(value) <= 0:
        return f"must be a finite number > 0, got {value!r}"
    return None


def _space_sort(space) -> str | None:
    """``"program"``, ``"pairs"``, ``"conceptworld"``, or None for a space the rungs cannot use."""
    if getattr(space, "kind", None) == "program" and getattr(space, "has_grammar", False):
        return "program"
    kind = (getattr(space, "params", None) or {}).get("kind")
    if getattr(space, "kind", None) == "extension" and kind in ("pairs", "conceptworld"):
        return kind
    return None


def applies(space) -> str | None:
    """None if a learned prior is defined on ``space``, else the reason (one line)."""
    if _space_sort(space) is not None:
        return None
    kind = getattr(space, "kind", type(space).__name__)
    sub = (getattr(space, "params", None) or {}).get("kind")
    what = f"{kind} space" + (f" of kind {sub!r}" if sub and sub != kind else "")
    return (f"a learned prior needs a grammar's programs, attribute-object pairs or ConceptWorld definitions; "
            f"this is a {what} without them")


def _checked(space, split, alpha, variant) -> tuple:
    why = check_alpha("alpha", alpha)
    if why:
        raise RungError(f"alpha {why}")
    if variant not in VARIANTS:
        raise RungError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    sort = _space_sort(space)
    if sort is None:
        raise RungError(f"learned prior: {applies(space)}")
    train = np.unique(np.asarray(split.train, np.int64))
    if len(train) and (train[0] < 0 or train[-1] >= space.n_concepts):
        raise RungError(f"split {getattr(split, 'name', '')!r} has training ids outside the space's "
                        f"{space.n_concepts:,} concepts")
    return sort, train, float(alpha)


def learning_set(space, train) -> np.ndarray:
    """The concepts whose descriptions a learned prior counts, int64 (m,) sorted: in a program
    space, of each synonym class holding a training concept its shortest training concept
    (``space.lengths``; ties: the smallest id); in other spaces every training concept."""
    train = np.unique(np.asarray(train, np.int64))
    if _space_sort(space) != "program" or len(train) == 0:
        return train
    classes = np.asarray(space.synonym_classes)[train]
    order = np.lexsort((train, np.asarray(space.lengths)[train], classes))
    first = np.ones(len(order), bool)
    first[1:] = classes[order][1:] != classes[order][:-1]
    return np.sort(train[order][first])


# ---------------------------------------------------------- program derivations
@dataclass(frozen=True)
class _Derivations:
    """Every concept's derivations in a program space, as sparse use counts (built once).

    D rows (derivations, grouped by concept in id order), R productions, K (context, rule)
    columns, each an occurring pair.
    row_concept: int64 (D,); row_share: float64 (D,), the derivation's share of its
    concept's probability under θ0; uses: CSR float64 (D, R) rule-use counts; ctx_uses: CSR
    float64 (D, K) uses per (context, rule); col_context, col_rule: int64 (K,); contexts:
    tuple of (parent rule or -1, slot) per context id; theta0, lhs_of: float64/int64 (R,).
    """

    row_concept: np.ndarray
    row_share: np.ndarray
    uses: sparse.csr_matrix
    ctx_uses: sparse.csr_matrix
    col_context: np.ndarray
    col_rule: np.ndarray
    contexts: tuple
    theta0: np.ndarray
    lhs_of: np.ndarray


def derivation_strings(program, grammar) -> list:
    """The token tuples whose derivations make up a program's probability, as ``log_pcfg``
    adds them: the program itself, or for a collapsed x-free program of a grammar that is not
    relational its body with each final quantifier."""
    if program.quantifier is None and not grammar.is_relational:
        return [program.tokens + (q,) for q in QUANTIFIERS]
    return [program.tokens]


def _build_derivations(space) -> _Derivations:
    g = space.grammar
    n_rules = len(g.productions)
    rows, cols, ctx_cols, row_concept, row_lp = [], [], [], [], []
    ctx_id, col_id = {}, {}
    for i in range(space.n_concepts):
        prog = space.program(i)
        for tokens in derivation_strings(prog, g):
            try:
                found = derivations(tokens, g)
            except ValueError as exc:
                raise RungError(f"learned prior: concept {i}: {exc}") from None
            for lp, uses in found:
                d = len(row_concept)
                row_concept.append(i)
                row_lp.append(lp)
                for parent, slot, rule in uses:
                    c = ctx_id.setdefault((parent, slot), len(ctx_id))
                    rows.append(d)
                    cols.append(rule)
                    ctx_cols.append(col_id.setdefault((c, rule), len(col_id)))
    n_rows = len(row_concept)
    row_concept = np.asarray(row_concept, np.int64)
    row_lp = np.asarray(row_lp, np.float64)
    ones = np.ones(len(rows))
    uses = sparse.csr_matrix((ones, (rows, cols)), shape=(n_rows, n_rules))
    ctx_uses = sparse.csr_matrix((ones, (rows, ctx_cols)), shape=(n_rows, len(col_id)))
    uses.sum_duplicates()
    ctx_uses.sum_duplicates()
    pairs = np.array(list(col_id), np.int64).reshape(-1, 2)
    nts = {nt: k for k, nt in enumerate(g.nonterminals)}
    return _Derivations(
        row_concept=row_concept, row_share=np.exp(row_lp - _group_logsumexp(row_lp, row_concept,
                                                                             space.n_concepts)[row_concept]),
        uses=uses, ctx_uses=ctx_uses, col_context=pairs[:, 0], col_rule=pairs[:, 1],
        contexts=tuple(ctx_id), theta0=np.array([p.prob for p in g.productions], np.float64),
        lhs_of=np.array([nts[p.lhs] for p in g.productions], np.int64))


def _derivation_tables(space) -> _Derivations:
    return space.index.derived(f"{_INDEX_NAME}.derivations", lambda: _build_derivations(space))


def _group_logsumexp(values, groups, n) -> np.ndarray:
    """float64 (n,): log Σ exp(values) per group id (``-inf`` for a group with no entry)."""
    top = np.full(n, -np.inf)
    np.maximum.at(top, groups, values)
    safe = np.where(np.isfinite(top), top, 0.0)
    total = np.bincount(groups, np.exp(values - safe[groups]), minlength=n)
    with np.errstate(divide="ignore"):
        return np.where(np.isfinite(top), safe + np.log(total), -np.inf)


def _row_weights(tables: _Derivations, learn: np.ndarray) -> np.ndarray:
    """float64 (D,): each derivation's weight in the counts (its share, for learned concepts)."""
    return np.where(np.isin(tables.row_concept, learn), tables.row_share, 0.0)


def _program_thetas(tables: _Derivations, learn, alpha, variant) -> np.ndarray:
    """Learned probabilities: float64 (R,) per rule (unigram) or (K,) per (context, rule) column."""
    s = _row_weights(tables, learn)
    if variant == "unigram":
        n = tables.uses.T @ s
        total = np.bincount(tables.lhs_of, n, minlength=tables.lhs_of.max() + 1)[tables.lhs_of]
        return (n + alpha * tables.theta0) / (total + alpha)
    n = tables.ctx_uses.T @ s
    total = np.bincount(tables.col_context, n, minlength=len(tables.contexts))[tables.col_context]
    return (n + alpha * tables.theta0[tables.col_rule]) / (total + alpha)


def _program_log_weights(space, learn, alpha, variant) -> np.ndarray:
    tables = _derivation_tables(space)
    theta = _program_thetas(tables, learn, alpha, variant)
    matrix = tables.uses if variant == "unigram" else tables.ctx_uses
    row_lp = matrix @ np.log(theta)
    return _group_logsumexp(row_lp, tables.row_concept, space.n_concepts)


# ------------------------------------------------------- pair and ConceptWorld
@dataclass(frozen=True)
class _Parts:
    """A two-role extension space's concepts as codes (built once).

    first, second: the role names (``attribute``/``object``, or ``concept``/``n``);
    values: (tuple of first-role values, tuple of second-role values);
    a, b: int64 (n,), each concept's code in the first and second role (-1: the concept
    has no part of that role)."""

    first: str
    second: str
    values: tuple
    a: np.ndarray
    b: np.ndarray


def _n_order(v):
    return (0, int(v), v) if str(v).isdigit() else (1, 0, str(v))


def _build_parts(space, first, second) -> _Parts:
    seen = {first: set(), second: set()}
    for parts in space.parts:
        for role, value in parts:
            if role not in seen:
                raise RungError(f"learned prior: a concept has a part of role {role!r}; expected only "
                                f"{first!r} and {second!r}")
            seen[role].add(value)
    va = tuple(sorted(seen[first]))
    vb = tuple(sorted(seen[second], key=_n_order))
    ia, ib = {v: k for k, v in enumerate(va)}, {v: k for k, v in enumerate(vb)}
    a = np.full(space.n_concepts, -1, np.int64)
    b = np.full(space.n_concepts, -1, np.int64)
    for i, parts in enumerate(space.parts):
        d = dict(parts)
        a[i] = ia.get(d.get(first), -1)
        b[i] = ib.get(d.get(second), -1)
    return _Parts(first, second, (va, vb), a, b)


def _part_tables(space, sort) -> _Parts:
    roles = ("attribute", "object") if sort == "pairs" else ("concept", "n")
    return space.index.derived(f"{_INDEX_NAME}.parts", lambda: _build_parts(space, *roles))


def _part_thetas(space, sort, train, alpha, variant) -> tuple:
    """(θ_first (|A|,), θ_second (|B|,), θ_second|first (|A|, |B|) or None), float64."""
    t = _part_tables(space, sort)
    na, nb = len(t.values[0]), len(t.values[1])
    a, b = t.a[train], t.b[train]
    if sort == "pairs":
        pair = (a >= 0) & (b >= 0)
        first_of, second_of = a[pair], b[pair]
    else:
        first_of = a[a >= 0]
        has_n = (a >= 0) & (b >= 0)
        second_of = b[has_n]
    n_first = np.bincount(first_of, minlength=na).astype(np.float64)
    n_second = np.bincount(second_of, minlength=nb).astype(np.float64)
    th_first = (n_first + alpha / max(na, 1)) / (n_first.sum() + alpha)
    th_second = (n_second + alpha / max(nb, 1)) / (n_second.sum() + alpha)
    cond = None
    if variant == "parent":
        both = (a >= 0) & (b >= 0)
        joint = np.zeros((na, nb))
        np.add.at(joint, (a[both], b[both]), 1.0)
        cond = (joint + alpha / max(nb, 1)) / (joint.sum(axis=1, keepdims=True) + alpha)
    return th_first, th_second, cond


def _part_log_weights(space, sort, train, alpha, variant) -> np.ndarray:
    t = _part_tables(space, sort)
    th_first, th_second, cond = _part_thetas(space, sort, train, alpha, variant)
    out = np.zeros(space.n_concepts)
    has_a, has_b = t.a >= 0, t.b >= 0
    out[has_a] += np.log(th_first[t.a[has_a]])
    both = has_a & has_b
    if cond is None:
        out[has_b] += np.log(th_second[t.b[has_b]])
    else:
        alone = has_b & ~has_a
        out[alone] += np.log(th_second[t.b[alone]])
        out[both] += np.log(cond[t.a[both], t.b[both]])
    return out


# ------------------------------------------------------------------ public API
def learned_log_weights(space, split, alpha: float = 1.0, variant: str = "unigram") -> np.ndarray:
    """The learned prior's log weights of every concept of ``space``, from ``split``'s
    training concepts: float64 (n_concepts,), natural log, unnormalised over any subset
    (``-inf`` for a program the grammar cannot derive).  For program spaces each entry is a
    log probability under the learned grammar (the weights of all derivable programs sum to
    at most 1).  ``alpha``: the concentration (> 0); ``variant``: ``"unigram"`` or
    ``"parent"`` (see the module docstring).  A bad alpha or variant, or a space of another
    kind, is a one-line :class:`RungError`.  Derivations are parsed once per space (kept in
    ``space.index``); later calls are sparse products."""
    sort, train, alpha = _checked(space, split, alpha, variant)
    if sort == "program":
        return _program_log_weights(space, learning_set(space, train), alpha, variant)
    return _part_log_weights(space, sort, train, alpha, variant)


def _rule_text(g, r) -> str:
    p = g.productions[r]
    text = f"{p.lhs} -> {' '.join(p.rhs)}"
    same = [q for q in g.rules(p.lhs) if q.rhs == p.rhs]
    return text if len(same) == 1 else f"{text} (line {p.line})"


def learned_rule_probabilities(space, split, alpha: float = 1.0, variant: str = "unigram") -> dict:
    """The learned probability tables, for inspection (floats in [0, 1]).

    Program spaces: ``{lhs: {rule text: θ_r}}`` (unigram), rule text ``"BOOL -> C C ="``;
    parent-conditioned: ``{context: {rule text: θ_{r|c}}}`` with context ``"ROOT"`` or
    ``"<parent rule text> [k]"`` (k the slot, from 0), for every context that occurs in some
    derivation of the space, each listing every rule of its nonterminal.  Pair spaces: ``{"attribute": {a: θ_a},
    "object": {o: θ_o}}`` and with ``variant="parent"`` also ``"object | a"`` tables;
    ConceptWorld: ``{"concept": {family: θ_f}, "n": {n: θ_n}}`` (parent: ``"n | f"``)."""
    sort, train, alpha = _checked(space, split, alpha, variant)
    if sort == "program":
        g = space.grammar
        tables = _derivation_tables(space)
        theta = _program_thetas(tables, learning_set(space, train), alpha, variant)
        out = {}
        if variant == "unigram":
            for r, p in enumerate(g.productions):
                out.setdefault(p.lhs, {})[_rule_text(g, r)] = float(theta[r])
            return out
        s = _row_weights(tables, learning_set(space, train))
        n = tables.ctx_uses.T @ s
        rule_ids = {}
        for r, p in enumerate(g.productions):
            rule_ids.setdefault(p.lhs, []).append(r)
        for c, (parent, slot) in enumerate(tables.contexts):
            name = ROOT if parent < 0 else f"{_rule_text(g, parent)} [{slot}]"
            nt = g.start if parent < 0 else g.productions[parent].rhs[slot]
            here = tables.col_context == c
            counts = dict(zip(tables.col_rule[here].tolist(), n[here].tolist()))
            total = sum(counts.values())
            out[name] = {_rule_text(g, r): (counts.get(r, 0.0) + alpha * tables.theta0[r]) / (total + alpha)
                         for r in rule_ids[nt]}
        return out
    t = _part_tables(space, sort)
    th_first, th_second, cond = _part_thetas(space, sort, train, alpha, variant)
    va, vb = t.values
    out = {t.first: dict(zip(va, th_first.tolist())), t.second: dict(zip(vb, th_second.tolist()))}
    if cond is not None:
        for k, v in enumerate(va):
            out[f"{t.second} | {v}"] = dict(zip(vb, cond[k].tolist()))
    return out


# ------------------------------------------------------------------------ rungs
def _build(name, variant):
    def build(space, split, settings, alpha=1.0):
        weights = learned_log_weights(space, split, alpha, variant)
        return Oracle(space, strong_concepts(split), settings, name, log_weights=weights)
    return build


_KNOBS = {"alpha": (1.0, "concentration of the learned prior: pseudo-uses of the grammar's own probabilities "
                         "per context (> 0; large: the pcfg prior)")}

rungs.register("learned_prior", Rung(
    "learned_prior", "every concept, with rule probabilities learned from the training concepts (unigram)",
    "knows every concept of the strong oracle, with a prior whose rule probabilities are learned from the "
    "training concepts: theta_r = (n_r + alpha*theta0_r) / (sum of n over r's left-hand side + alpha), n_r "
    "the uses of rule r in the derivations of the training programs (one per synonym class: its shortest "
    "training program), theta0 the grammar's probabilities; p(h) = the product of theta over h's derivation "
    "(summed over derivations). Pair spaces: p(a, o) proportional to (n_a + alpha/|A|)(n_o + alpha/|O|), "
    "factors normalised per role, a primitive its one factor; ConceptWorld: the same per family (theta0 "
    "uniform over families) times the same per n for family instances",
    _build("learned_prior", "unigram"), knobs=dict(_KNOBS), applies=applies, check_knob=check_alpha))

rungs.register("learned_prior_parent", Rung(
    "learned_prior_parent", "every concept, with rule probabilities learned per parent rule and slot",
    "knows every concept of the strong oracle, with a prior whose rule probabilities are learned from the "
    "training concepts per context (the parent production and the nonterminal's position in its right-hand "
    "side; the start symbol's context is ROOT): theta_{r|c} = (n_{c,r} + alpha*theta0_r) / (n_c + alpha), "
    "counted as in learned_prior. Pair spaces: a pair's object conditioned on its attribute, "
    "(n_{a,o} + alpha/|O|)/(n_a + alpha); ConceptWorld: a family instance's n conditioned on its family",
    _build("learned_prior_parent", "parent"), knobs=dict(_KNOBS), applies=applies, check_knob=check_alpha))
