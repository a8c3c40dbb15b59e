"""The learned-prior rungs: every concept of the strong oracle, weighted by a prior whose
parameters are estimated from a split's training concepts only (:mod:`bayes_concepts.rungs`).

Two rungs, one knob each (``alpha`` > 0, the concentration; default 1).

**Which model a program space gets** (one per space, whatever the split;
:func:`learned_prior_model` names it).  Where the grammar derives every concept of the space
(``space.log_pcfg`` finite everywhere: CURI's spaces), the grammar's rule probabilities are
re-estimated (*grammar rules*, below).  Where some concept is not derivable (CLOSURE's family
programs in a ``clevr`` space, ``log_pcfg == -inf``), every concept of the space, derivable or
not, is weighted by the *token-tree* prior below instead, so that no concept gets weight 0.

* ``learned_prior`` (unigram).  **Program spaces, grammar rules**: production
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
  **Program spaces, token trees**: a program is its syntax tree (the postfix tokens parsed as
  :meth:`~bayes_concepts.lot.program.Program.parse` does), each node a token with bound
  variables renamed away as :func:`~bayes_concepts.divergence.program_atoms_and_compounds`
  does (``filter:y`` and ``filter:z`` are the token ``filter``, every object variable is
  ``VAR``).  A node's *class* is its result type (``BOOL``, ``SET``, ``OBJ``, ``COLOR``,
  ``NUM``, ...; the parser's :attr:`~bayes_concepts.lot.program.Node.type`): the tokens a
  typed grammar would choose among at that node.  Then

      p(h) = Π_{nodes v of h} θ_{t(v)},   θ_t = (n_t + α·θ0_t) / (N_{class of t} + α),

  n_t the nodes of token t (in its class) in the training programs (one per synonym class, as
  above), N_c = Σ_{t in c} n_t, and θ0_t = 1/|c|, uniform over the token types of class c
  that occur anywhere in the space's concepts.  Each class's θ sums to 1; the choice of a
  comparison's operand type is not scored, so p is a weight (unnormalised), as any prior
  here, which the oracle normalises over its concepts.  As α → ∞ the prior is the *uniform
  token-tree prior*, log p(h) = −Σ_v log |class(v)|.
  **Pair spaces** (attribute-object pairs, :mod:`bayes_concepts.suites.pairs`): per role,

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
  context no training program uses keeps θ0.  Token trees: a node's token is conditioned on
  its context c = (parent token, argument slot k, the node's class), the root's parent
  ``ROOT``; the class is part of the context as the nonterminal is in the grammar's (it
  fixes what is chosen among),

      θ_{t|c} = (n_{c,t} + α·θ0_t) / (n_c + α),

  θ0_t uniform over the class as in the unigram, so a context no training program uses
  keeps θ0 and α → ∞ gives the uniform token-tree prior again.
  Pair spaces: a pair's object is conditioned on its attribute,
  θ_{o|a} = (n_{a,o} + α/|O|)/(n_a + α), so a pair weighs θ_a·θ_{o|a}; primitives keep
  their unigram factor.  ConceptWorld: a family instance's n is
  conditioned on its family, θ_{n|f} = (m_{f,n} + α/|V|)/(m_f + α), m_f the training
  instances of family f; concepts without n weigh θ_f.

Any other kind of space: the rungs do not apply (:func:`applies` says why).

:func:`learned_log_weights` gives the log prior weights (for other rungs, e.g. one that
samples from the learned prior); :func:`learned_rule_probabilities` the learned tables;
:func:`learned_prior_model` which model a space gets (also the rungs' learners' ``model``
attribute and ``info()["model"]``).

>>> w = learned_log_weights(space, split, alpha=10.0, variant="parent")      # doctest: +SKIP
>>> learned_rule_probabilities(space, split, 10.0)["BOOL"]["BOOL -> C C ="]  # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from ..divergence import program_atoms_and_compounds
from ..errors import ProgramError
from ..lot.logprob import derivations
from ..lot.program import QUANTIFIERS, Program, postorder_nodes, program_shape, value_stand_ins
from ..oracles import Oracle
from ..registry import Registry
from .rung import Rung, RungError, alpha_problem, rungs, strong_concepts

__all__ = ["learned_log_weights", "learned_rule_probabilities", "learned_prior_model", "learning_set",
           "derivation_strings", "token_tree", "applies", "check_alpha", "LearnedPriorOracle", "VARIANTS", "ROOT",
           "GRAMMAR_RULES"]

#: the two variants: rule probabilities per left-hand side, or per (parent rule, slot)
VARIANTS = ("unigram", "parent")
#: the context of the start symbol in the parent-conditioned tables (and of a token tree's root)
ROOT = "ROOT"
#: the model of a program space whose grammar derives every concept
GRAMMAR_RULES = "grammar rules"
_INDEX_NAME = "rungs.learned_prior"


# ------------------------------------------------------------------------ checks
def check_alpha(name, value) -> str | None:
    """None if ``value`` is a usable concentration (a finite number > 0), else why not."""
    return alpha_problem(value) if name == "alpha" else None


@dataclass(frozen=True)
class PartForm:
    """How the learned prior reads a space of items whose concepts are parts of two roles.

    roles: ``(first, second)``, the role names of the concepts' parts.  complete_only: count
    a role's value only in concepts that have both parts (an attribute-object pair space,
    whose single-part concepts are primitives); else the first role in every concept that has
    it and the second where the first is there too.  description: what
    :func:`learned_prior_model` calls this form.
    """

    roles: tuple
    complete_only: bool
    description: str


#: a space of items' ``params["kind"]`` -> its :class:`PartForm`; the benchmark suites register theirs
part_forms = Registry("space of two-part concepts", builtins=("bayes_concepts.suites:parts",))


def _space_sort(space) -> str | None:
    """``"program"``, a kind of :data:`part_forms`, or None for a space the rungs cannot use."""
    if space.kind == "program" and space.has_grammar:
        return "program"
    kind = (space.params or {}).get("kind")
    if space.kind == "extension" and isinstance(kind, str) and kind in part_forms:
        return kind
    return None


def applies(space) -> str | None:
    """None if a learned prior is defined on ``space``, else the reason (one line)."""
    if _space_sort(space) is not None:
        return None
    kind = space.kind or type(space).__name__
    sub = (space.params or {}).get("kind")
    what = f"{kind} space" + (f" of kind {sub!r}" if sub and sub != kind else "")
    return (f"a learned prior needs a grammar's programs, attribute-object pairs or ConceptWorld definitions; "
            f"this is {'an' if what[:1].lower() in 'aeiou' else 'a'} {what} without them")


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


def _derivation_arrays(tables: _Derivations) -> dict:
    """``tables`` as plain arrays (what the space's index folder keeps)."""
    out = {"contexts": np.array(tables.contexts, np.int64).reshape(-1, 2)}
    for f in ("row_concept", "row_share", "col_context", "col_rule", "theta0", "lhs_of"):
        out[f] = getattr(tables, f)
    for f in ("uses", "ctx_uses"):
        m = getattr(tables, f)
        out.update({f"{f}.data": m.data, f"{f}.indices": m.indices, f"{f}.indptr": m.indptr,
                    f"{f}.shape": np.array(m.shape, np.int64)})
    return out


def _derivations_from_arrays(a: dict) -> _Derivations:
    def csr(f):
        return sparse.csr_matrix((a[f"{f}.data"], a[f"{f}.indices"], a[f"{f}.indptr"]),
                                 shape=tuple(int(x) for x in a[f"{f}.shape"]))
    return _Derivations(row_concept=a["row_concept"], row_share=a["row_share"], uses=csr("uses"),
                        ctx_uses=csr("ctx_uses"), col_context=a["col_context"], col_rule=a["col_rule"],
                        contexts=tuple((int(p), int(s)) for p, s in a["contexts"]), theta0=a["theta0"],
                        lhs_of=a["lhs_of"])


def _derivation_tables(space) -> _Derivations:
    """Every concept's derivations (:class:`_Derivations`), parsed once per saved space (~15 s for
    CURI's 20,000 programs) and kept in its index folder (:func:`~bayes_concepts.engine.index.cached_arrays`)."""
    from ..engine.index import cached_arrays

    def build():
        return _derivations_from_arrays(cached_arrays(
            space, "learned_prior_derivations", lambda: _derivation_arrays(_build_derivations(space))))
    return space.index.derived(f"{_INDEX_NAME}.derivations", build)


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
        return _dirichlet_mean(n, tables.lhs_of, tables.lhs_of.max() + 1, tables.theta0, alpha)
    return _dirichlet_mean(tables.ctx_uses.T @ s, tables.col_context, len(tables.contexts),
                           tables.theta0[tables.col_rule], alpha)


def _dirichlet_mean(n, group, n_groups: int, theta0, alpha: float) -> np.ndarray:
    """The posterior mean probabilities (n_k + alpha·theta0_k) / (N_group(k) + alpha): n, theta0
    float (K,) counts and prior probabilities of K outcomes; group int (K,) the distribution
    (left-hand side, class or context) each outcome belongs to, < n_groups."""
    total = np.bincount(group, n, minlength=n_groups)[group]
    return (n + alpha * theta0) / (total + alpha)


def _program_log_weights(space, learn, alpha, variant) -> np.ndarray:
    tables = _derivation_tables(space)
    theta = _program_thetas(tables, learn, alpha, variant)
    matrix = tables.uses if variant == "unigram" else tables.ctx_uses
    row_lp = matrix @ np.log(theta)
    return _group_logsumexp(row_lp, tables.row_concept, space.n_concepts)


# ------------------------------------------------------------- token trees
def _underivable(space) -> int:
    """How many concepts of a program space the grammar cannot derive (``log_pcfg == -inf``)."""
    return int(np.count_nonzero(~np.isfinite(np.asarray(space.log_pcfg, np.float64))))


def learned_prior_model(space) -> str:
    """Which learned prior ``space`` gets, one line: ``"grammar rules"`` (a program space whose
    grammar derives every concept), ``"token tree (N of M concepts are not derivable by the
    grammar)"`` (any other program space), ``"attribute-object pairs"`` or ``"ConceptWorld
    families"``.  A space of another kind is a one-line :class:`RungError`."""
    sort = _space_sort(space)
    if sort is None:
        raise RungError(f"learned prior: {applies(space)}")
    if sort != "program":
        return part_forms.get(sort).description
    bad = _underivable(space)
    if bad == 0:
        return GRAMMAR_RULES
    return f"token tree ({bad} of {space.n_concepts} concepts are not derivable by the grammar)"


@dataclass(frozen=True)
class _TokenTrees:
    """Every concept of a program space as a token tree, as node counts (built once).

    T token types (a class and a token, as occur in the space's concepts), K occurring
    (context, token type) columns, a context being (parent token or ROOT, slot, class).
    uses: CSR float64 (n_concepts, T) nodes per token type; ctx_uses: CSR float64
    (n_concepts, K) nodes per (context, token type); class_of: int64 (T,) the type's class id;
    theta0: float64 (T,) 1 / (token types of its class); col_context, col_type: int64 (K,);
    classes: tuple of class names (str) by id; types: tuple of (class id, token) by type id;
    contexts: tuple of (parent token, slot, class id) by context id.
    """

    uses: sparse.csr_matrix
    ctx_uses: sparse.csr_matrix
    class_of: np.ndarray
    theta0: np.ndarray
    col_context: np.ndarray
    col_type: np.ndarray
    classes: tuple
    types: tuple
    contexts: tuple


def token_tree(program) -> list:
    """A parsed program's token tree as one (token, class, parent token, slot) per node, in
    postfix order: tokens with bound variables renamed away as
    :func:`~bayes_concepts.divergence.program_atoms_and_compounds` reads them, the class the
    node's result type, the root's parent :data:`ROOT` (slot 0)."""
    tokens = program_atoms_and_compounds(program)[0]
    nodes = postorder_nodes(program.root)
    if len(tokens) != len(nodes):
        raise RungError(f"learned prior: program {program.postfix!r} reads as {len(tokens)} tokens but has "
                        f"{len(nodes)} nodes")
    token_of = {id(node): tok for node, tok in zip(nodes, tokens)}
    context = {id(program.root): (ROOT, 0)}
    for node in nodes:
        for k, child in enumerate(node.children):
            context[id(child)] = (token_of[id(node)], k)
    return [(tok, node.type, *context[id(node)]) for node, tok in zip(nodes, tokens)]


def _space_token_trees(space):
    """Each concept's :func:`token_tree`, in id order, parsing one program per *shape*: a
    program with each (non-integer) value token replaced by the first value of its type has
    the same tree, classes and parents, so programs that differ only in such values share one
    parse, and each keeps its own value tokens (leaves, never parents)."""
    g = space.grammar
    stand_in = value_stand_ins(g)
    shapes = {}
    for i, text in enumerate(space.programs):
        tokens, key = program_shape(text, g, stand_in)
        tree = shapes.get(key)
        if tree is None:
            try:
                tree = shapes[key] = token_tree(Program.parse(key, g))
            except ProgramError as exc:
                raise RungError(f"learned prior: concept {i} ({text!r}) does not parse: "
                                f"{str(exc).splitlines()[0]}") from None
        yield [(tok if tok in stand_in else node[0], *node[1:]) for tok, node in zip(tokens, tree)]


def _build_token_trees(space) -> _TokenTrees:
    class_id, type_id, ctx_id, col_id = {}, {}, {}, {}
    rows, cols, ctx_cols = [], [], []
    for i, tree in enumerate(_space_token_trees(space)):
        for tok, cls, parent, slot in tree:
            c = class_id.setdefault(cls, len(class_id))
            t = type_id.setdefault((c, tok), len(type_id))
            x = ctx_id.setdefault((parent, slot, c), len(ctx_id))
            rows.append(i)
            cols.append(t)
            ctx_cols.append(col_id.setdefault((x, t), len(col_id)))
    ones = np.ones(len(rows))
    uses = sparse.csr_matrix((ones, (rows, cols)), shape=(space.n_concepts, len(type_id)))
    ctx_uses = sparse.csr_matrix((ones, (rows, ctx_cols)), shape=(space.n_concepts, len(col_id)))
    uses.sum_duplicates()
    ctx_uses.sum_duplicates()
    class_of = np.array([c for c, _ in type_id], np.int64)
    size = np.bincount(class_of, minlength=len(class_id)).astype(np.float64)
    pairs = np.array(list(col_id), np.int64).reshape(-1, 2)
    return _TokenTrees(uses=uses, ctx_uses=ctx_uses, class_of=class_of, theta0=1.0 / size[class_of],
                       col_context=pairs[:, 0], col_type=pairs[:, 1], classes=tuple(class_id),
                       types=tuple(type_id), contexts=tuple(ctx_id))


def _token_tables(space) -> _TokenTrees:
    return space.index.derived(f"{_INDEX_NAME}.token_trees", lambda: _build_token_trees(space))


def _token_counts(tables: _TokenTrees, learn, variant) -> np.ndarray:
    """float64 (T,) node counts per token type (unigram) or (K,) per column (parent) over the
    programs ``learn`` (int ids)."""
    s = np.zeros(tables.uses.shape[0])
    s[np.asarray(learn, np.int64)] = 1.0
    return (tables.uses if variant == "unigram" else tables.ctx_uses).T @ s


def _token_thetas(tables: _TokenTrees, learn, alpha, variant) -> np.ndarray:
    """Learned probabilities: float64 (T,) per token type (unigram) or (K,) per column."""
    n = _token_counts(tables, learn, variant)
    if variant == "unigram":
        return _dirichlet_mean(n, tables.class_of, len(tables.classes), tables.theta0, alpha)
    return _dirichlet_mean(n, tables.col_context, len(tables.contexts), tables.theta0[tables.col_type], alpha)


def _token_log_weights(space, learn, alpha, variant) -> np.ndarray:
    tables = _token_tables(space)
    theta = _token_thetas(tables, learn, alpha, variant)
    matrix = tables.uses if variant == "unigram" else tables.ctx_uses
    return np.asarray(matrix @ np.log(theta), np.float64)


def _token_probabilities(space, learn, alpha, variant) -> dict:
    tables = _token_tables(space)
    theta = _token_thetas(tables, learn, alpha, variant)
    names = tables.classes
    if variant == "unigram":
        out = {}
        for t, (c, tok) in enumerate(tables.types):
            out.setdefault(names[c], {})[tok] = float(theta[t])
        return out
    n = _token_counts(tables, learn, variant)
    of_class = {}
    for t, (c, _) in enumerate(tables.types):
        of_class.setdefault(c, []).append(t)
    out = {}
    for x, (parent, slot, c) in enumerate(tables.contexts):
        here = tables.col_context == x
        counts = dict(zip(tables.col_type[here].tolist(), n[here].tolist()))
        total = sum(counts.values())
        name = f"{ROOT}: {names[c]}" if parent == ROOT else f"{parent} [{slot}]: {names[c]}"
        out[name] = {tables.types[t][1]: (counts.get(t, 0.0) + alpha * tables.theta0[t]) / (total + alpha)
                     for t in of_class[c]}
    return out


# ------------------------------------------------------- spaces of two-part concepts
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
    roles = part_forms.get(sort).roles
    return space.index.derived(f"{_INDEX_NAME}.parts", lambda: _build_parts(space, *roles))


def _part_thetas(space, sort, train, alpha, variant) -> tuple:
    """(θ_first (|A|,), θ_second (|B|,), θ_second|first (|A|, |B|) or None), float64."""
    t = _part_tables(space, sort)
    na, nb = len(t.values[0]), len(t.values[1])
    a, b = t.a[train], t.b[train]
    if part_forms.get(sort).complete_only:
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
    training concepts: float64 (n_concepts,), natural log, unnormalised over any subset,
    finite for every concept.  For a program space whose grammar derives every concept each
    entry is a log probability under the learned grammar (the weights of all programs sum to
    at most 1); for any other program space the token-tree prior's log weight
    (:func:`learned_prior_model` says which).  ``alpha``: the concentration (> 0);
    ``variant``: ``"unigram"`` or ``"parent"`` (see the module docstring).  A bad alpha or
    variant, or a space of another kind, is a one-line :class:`RungError`.  Derivations or
    token trees are parsed once per space (kept in ``space.index``); later calls are sparse
    products."""
    sort, train, alpha = _checked(space, split, alpha, variant)
    if sort == "program":
        learn = learning_set(space, train)
        if _underivable(space):
            return _token_log_weights(space, learn, alpha, variant)
        return _program_log_weights(space, learn, alpha, variant)
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
    derivation of the space, each listing every rule of its nonterminal.  Program spaces with
    the token-tree model (:func:`learned_prior_model`): ``{class: {token: θ_t}}`` (unigram,
    ``theta["COLOR"]["red"]``) or ``{context: {token: θ_{t|c}}}`` with context ``"ROOT: BOOL"``
    or ``"<parent token> [k]: <class>"`` (``"filter [1]: BOOL"``), for every context that
    occurs in some concept of the space, each listing every token of its class.  Pair spaces:
    ``{"attribute": {a: θ_a}, "object": {o: θ_o}}`` and with ``variant="parent"`` also
    ``"object | a"`` tables; ConceptWorld: ``{"concept": {family: θ_f}, "n": {n: θ_n}}``
    (parent: ``"n | f"``)."""
    sort, train, alpha = _checked(space, split, alpha, variant)
    if sort == "program" and _underivable(space):
        return _token_probabilities(space, learning_set(space, train), alpha, variant)
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
class LearnedPriorOracle(Oracle):
    """The learner of a learned-prior rung: an :class:`~bayes_concepts.oracles.Oracle` over
    the strong oracle's concepts with the learned log weights, which also records
    ``model`` (str, :func:`learned_prior_model`), ``variant`` and ``alpha`` (float)."""

    def __init__(self, space, concepts, settings, name, log_weights, *, model: str, variant: str, alpha: float):
        super().__init__(space, concepts, settings, name, log_weights=log_weights)
        self.model, self.variant, self.alpha = model, variant, float(alpha)

    def info(self) -> dict:
        """``{"kind": "learned_prior", "model": ..., "variant": ..., "alpha": ...}`` (JSON-ready)."""
        return {"kind": "learned_prior", "model": self.model, "variant": self.variant, "alpha": self.alpha}


def _build(name, variant):
    def build(space, split, settings, alpha=1.0):
        weights = learned_log_weights(space, split, alpha, variant)
        return LearnedPriorOracle(space, strong_concepts(split), settings, name, weights,
                                  model=learned_prior_model(space), variant=variant, alpha=alpha)
    return build


_KNOBS = {"alpha": (1.0, "concentration of the learned prior: pseudo-uses of the grammar's own probabilities "
                         "(or of uniform token probabilities) per context (> 0; large: the pcfg prior, or the "
                         "uniform token-tree prior)")}

rungs.register("learned_prior", Rung(
    "learned_prior", "every concept, with rule (or token-tree) probabilities learned from the training concepts "
    "(unigram)",
    "knows every concept of the strong oracle, with a prior learned from the training programs (one per "
    "synonym class: its shortest training program). Where the grammar derives every concept of the space, its "
    "rule probabilities: theta_r = (n_r + alpha*theta0_r) / (sum of n over r's left-hand side + alpha), n_r "
    "the uses of rule r in the training programs' derivations, theta0 the grammar's probabilities, p(h) = the "
    "product of theta over h's derivation (summed over derivations). Where some concept is not derivable "
    "(CLOSURE's programs), every concept is a token tree (its syntax tree, bound variables renamed away) with "
    "p(h) = the product over its nodes of theta_t = (n_t + alpha*theta0_t) / (N_class + alpha), a node's class "
    "its result type, n_t the token's nodes in the training programs, N_class their sum over the class, theta0 "
    "uniform over the class's tokens in the space (alpha -> inf: the uniform token-tree prior). Pair spaces: "
    "p(a, o) proportional to (n_a + alpha/|A|)(n_o + alpha/|O|), factors normalised per role, a primitive its "
    "one factor; ConceptWorld: the same per family (theta0 uniform over families) times the same per n for "
    "family instances",
    _build("learned_prior", "unigram"), knobs=dict(_KNOBS), applies=applies, check_knob=check_alpha, position=70, default=True,
    columns=("learned_prior[alpha=1]", "learned_prior[alpha=100]")))

rungs.register("learned_prior_parent", Rung(
    "learned_prior_parent", "every concept, with rule (or token) probabilities learned per parent rule (or token) "
    "and slot",
    "knows every concept of the strong oracle, with a prior whose rule probabilities are learned from the "
    "training concepts per context (the parent production and the nonterminal's position in its right-hand "
    "side; the start symbol's context is ROOT): theta_{r|c} = (n_{c,r} + alpha*theta0_r) / (n_c + alpha), "
    "counted as in learned_prior, where the grammar derives every concept. Where some concept is not derivable, "
    "the token-tree prior of learned_prior with each token conditioned on its context c = (parent token, argument "
    "slot, class): theta_{t|c} = (n_{c,t} + alpha*theta0_t) / (n_c + alpha), a context never seen in training "
    "keeping theta0. Pair spaces: a pair's object conditioned on its attribute, "
    "(n_{a,o} + alpha/|O|)/(n_a + alpha); ConceptWorld: a family instance's n conditioned on its family",
    _build("learned_prior_parent", "parent"), knobs=dict(_KNOBS), applies=applies, check_knob=check_alpha, position=80, default=True,
    columns=("learned_prior_parent[alpha=1]",)))
