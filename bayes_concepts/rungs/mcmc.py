"""The ``mcmc`` rung: a bounded learner whose hypotheses are the states an MCMC chain visits.

Definition (for each episode, support set D):

* target over derivation trees t of the space's grammar (any depth):
  π(t) ∝ P(t) · L̃(c(t)) · [c(t) ∈ strong], where P(t) is the PCFG probability of the tree
  (product of its rules' probabilities), c(t) the concept of its token string (``space.find``:
  the canonical postfix, an x-free program collapsed), the strong set that of the split
  (:func:`~bayes_concepts.rungs.strong_concepts`) and L̃ = L, the oracles' likelihood
  (``settings.likelihood``) of D's labels under c; when no concept of the strong set has
  L > 0 on D, L̃ = 1 (the chain then walks the prior restricted to the strong set).  Summed
  over the trees of a concept, π(c) ∝ L̃(c) · Σ_{t: c(t) = c} P(t), which for CURI-style
  (non-relational) grammars is L̃(c) · exp(log_pcfg[c]) (``log_pcfg`` is the inside
  probability over every derivation, both quantifiers for a collapsed program).
* start X_0: the highest-derivation-probability tree of the concept of the strong set with
  L̃ > 0 and the largest ``log_pcfg`` (ties: the lowest id): no rejection-sampling wait, and
  a state of positive target from the first step.
* step (Metropolis–Hastings, subtree regeneration): pick one of the |N(t)| nonterminal nodes
  of the current tree t uniformly; redraw its subtree from the PCFG from that node's
  nonterminal (no depth limit), giving t'; accept with
  min(1, [L̃(c(t'))·|N(t)|] / [L̃(c(t))·|N(t')|]); a t' with c(t') outside the strong set
  (or no concept of the space at all) has target 0 and is rejected.
  Why only the node counts remain: t' can be reached from t by regenerating at any node u
  such that t and t' agree outside u's subtree (not just the lowest one), so
  q(t'|t) = Σ_u (1/|N(t)|) · P(t'_u | A_u) and q(t|t') = Σ_u (1/|N(t')|) · P(t_u | A_u) over
  the same set of u.  With P(t) = P_out(u) · P(t_u | A_u) and P(t') = P_out(u) · P(t'_u | A_u)
  (the part outside u is shared), every term gives P(t')·P(t_u|A_u) = P(t)·P(t'_u|A_u), so
  P(t')·q(t|t') / (P(t)·q(t'|t)) = |N(t)| / |N(t')|, and the MH ratio π(t')q(t|t') / π(t)q(t'|t)
  is L̃(c(t'))·|N(t)| / (L̃(c(t))·|N(t')|).
  A redraw is abandoned (the step rejects) as soon as the tree's token count must exceed
  1 + the longest program of the strong set (no such tree is a concept of the strong set: a
  collapsed program is one token shorter than its tree), or its subtree exceeds
  :data:`MAX_NODES_PER_TOKEN` nonterminal nodes per token of that bound (only reachable through
  a cycle of unit rules; CURI's grammar has none): the proposal is unchanged, it is only not
  finished once its rejection is certain.
* the learner's hypotheses: the distinct concepts of X_0, X_1, ..., X_n (n chain steps);
  it does exact Bayes over them with the oracles' prior (``settings.prior``, renormalised over
  them) and likelihood, and scores as ``Oracle(space, visited_ids, settings)`` fitted on the
  episode's support (weak-empty policy included).  That is also how it is computed: one
  :class:`~bayes_concepts.oracles.Oracle` per episode (a slow but plain path: the sampling
  rung's kernel draws its own sets and takes no given ones).

Where it applies: program spaces with a grammar (``applies``); a split whose strong set
holds a concept the grammar does not derive (``log_pcfg`` -inf, e.g. CLOSURE's template
programs in a CLEVR space) is refused when the learner is made (one-line RungError), since
the chain could never visit it.

Random streams: episode ``i`` (its global index, ``i`` plus the start of ``meta["part"]``)
runs on a PCG64 generator seeded by (the 64-bit key of (``seed``, "mcmc", split name, side,
negatives), i), so the numbers do not depend on how the cell's episodes are batched.

Cost: the chain runs in Python (a subtree redraw, the tree's tokens, a cached concept lookup):
on the tests' small CURI space (2 shared cores) ~15-20 µs per step, ~2 ms per episode at
n = 100 and ~15 ms at n = 1000, plus ~1-7 ms per episode for its Oracle.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import BayesConceptsError
from ..lot.logprob import derivations
from ..oracles import Oracle
from ..oracles.likelihoods import likelihood_tables
from .rung import (Rung, RungError, budget_problem, checked_knobs, first_episode_index, rungs,
                   seed_problem, strong_concepts, whole_number)
from .sampling import stream_key

__all__ = ["MCMCLearner", "MCMC_DEFINITION", "PCFGTrees", "run_chain", "applies", "underived", "MAX_STEPS",
           "MAX_NODES_PER_TOKEN"]

#: the largest budget ``n`` taken (chain steps per episode; Python steps of tens of µs)
MAX_STEPS = 10**9
#: a redraw is abandoned past this many nonterminal nodes per token of the length bound
MAX_NODES_PER_TOKEN = 64

MCMC_DEFINITION = (
    "for each episode, runs an n-step Metropolis-Hastings chain over derivation trees of the space's grammar and "
    "knows only the distinct concepts of its states X_0..X_n; exact Bayesian inference over them with the oracles' "
    "prior and likelihood, as the oracle over the visited set. The chain: target P_pcfg(t)·L(c(t))·[c(t) in the "
    "strong oracle's set], c(t) the concept of the tree's canonical program and L the oracles' likelihood of the "
    "support (taken as 1 when no concept of the set fits); X_0 the most probable derivation of the highest-log_pcfg "
    "concept of the set that fits; each step picks one of the tree's nonterminal nodes uniformly, redraws its "
    "subtree from the PCFG from that node's nonterminal and accepts with min(1, L(c')·|nodes(t)| / "
    "(L(c)·|nodes(t')|)) (the prior and proposal ratios cancel but for the node counts), a tree whose canonical "
    "program is not in the set being rejected")


# ------------------------------------------------------------------ trees
class PCFGTrees:
    """The grammar as the chain reads it: rules by nonterminal, and tree helpers.

    A tree node is a tuple ``(rule, kids, n_tokens, n_nodes)``: ``rule`` the index of its
    production in ``grammar.productions``, ``kids`` a tuple of nodes for the nonterminals of
    the production's right-hand side (in order), ``n_tokens`` the length of its token yield
    and ``n_nodes`` the number of nonterminal nodes in it (itself included)."""

    def __init__(self, grammar):
        self.grammar = grammar
        prods = grammar.productions
        self.lhs = tuple(p.lhs for p in prods)
        self.rhs = tuple(p.rhs for p in prods)
        self.is_nt = tuple(tuple(grammar.is_nonterminal(s) for s in p.rhs) for p in prods)
        self.n_terminals = tuple(sum(not x for x in nt) for nt in self.is_nt)
        self.rules_of, self.cum_of = {}, {}
        for nt in grammar.nonterminals:
            idx = [k for k, p in enumerate(prods) if p.lhs == nt]
            cum = np.cumsum([prods[k].prob for k in idx])
            self.rules_of[nt] = tuple(idx)
            self.cum_of[nt] = tuple((cum / cum[-1]).tolist())
        self.min_len = _min_lengths(grammar)
        # the growth of the committed length when a nonterminal is expanded by a rule
        self.grow = tuple(sum(self.min_len[s] if nt else 1 for s, nt in zip(self.rhs[k], self.is_nt[k]))
                          - self.min_len[self.lhs[k]] for k in range(len(prods)))

    def node(self, rule: int, kids: tuple) -> tuple:
        return (rule, kids, self.n_terminals[rule] + sum(k[2] for k in kids), 1 + sum(k[3] for k in kids))

    def tokens(self, tree) -> tuple:
        """The token yield of ``tree`` (tuple of str)."""
        out = []
        self._tokens(tree, out)
        return tuple(out)

    def _tokens(self, tree, out):
        rule, kids = tree[0], tree[1]
        it = iter(kids)
        for s, nt in zip(self.rhs[rule], self.is_nt[rule]):
            if nt:
                self._tokens(next(it), out)
            else:
                out.append(s)

    def log_prob(self, tree) -> float:
        """The PCFG log probability of ``tree`` (nats)."""
        return math.log(self.grammar.productions[tree[0]].prob) + sum(self.log_prob(k) for k in tree[1])

    def generate(self, symbol: str, max_tokens: int, max_nodes: int, rng):
        """A subtree drawn from the PCFG from nonterminal ``symbol``, or None as soon as its
        yield must exceed ``max_tokens`` tokens or it exceeds ``max_nodes`` nodes."""
        state = [self.min_len[symbol], 0]  # committed tokens (emitted + pending minima), nodes
        if state[0] > max_tokens:
            return None
        try:
            return self._expand(symbol, max_tokens, max_nodes, rng, state)
        except _TooLong:
            return None

    def _expand(self, symbol, max_tokens, max_nodes, rng, state):
        u = rng.random()
        rules, cum = self.rules_of[symbol], self.cum_of[symbol]
        j = 0
        while j < len(rules) - 1 and u >= cum[j]:
            j += 1
        rule = rules[j]
        state[0] += self.grow[rule]
        state[1] += 1
        if state[0] > max_tokens or state[1] > max_nodes:
            raise _TooLong
        kids = tuple(self._expand(s, max_tokens, max_nodes, rng, state)
                     for s, nt in zip(self.rhs[rule], self.is_nt[rule]) if nt)
        return self.node(rule, kids)

    def at(self, tree, i: int):
        """The node of pre-order index ``i`` (0 = the root) of ``tree``."""
        while i:
            i -= 1
            for kid in tree[1]:
                if i < kid[3]:
                    tree = kid
                    break
                i -= kid[3]
        return tree

    def replace(self, tree, i: int, new):
        """``tree`` with the subtree at pre-order index ``i`` replaced by ``new``."""
        if i == 0:
            return new
        i -= 1
        kids = list(tree[1])
        for j, kid in enumerate(kids):
            if i < kid[3]:
                kids[j] = self.replace(kid, i, new)
                return self.node(tree[0], tuple(kids))
            i -= kid[3]
        raise IndexError(i)

    def from_uses(self, uses) -> tuple:
        """The tree of a derivation given as :func:`~bayes_concepts.lot.logprob.derivations`'
        pre-order ``(parent, slot, rule)`` uses."""
        it = iter(uses)

        def build():
            rule = next(it)[2]
            return self.node(rule, tuple(build() for nt in self.is_nt[rule] if nt))
        return build()


def _min_lengths(grammar) -> dict:
    """nonterminal -> the fewest tokens it derives (10**9 where it derives nothing finite)."""
    best = {nt: 10**9 for nt in grammar.nonterminals}
    changed = True
    while changed:
        changed = False
        for p in grammar.productions:
            total = sum(best[s] if s in best else 1 for s in p.rhs)
            if total < best[p.lhs]:
                best[p.lhs], changed = total, True
    return best


class _TooLong(Exception):
    pass


def run_chain(trees: PCFGTrees, start, n: int, rng, concept_of, log_target, max_tokens: int) -> np.ndarray:
    """The concepts of the chain's states X_0 (``start``), X_1, ..., X_n: int64 (n + 1,).

    trees: the grammar's :class:`PCFGTrees`; start: a tree of positive target; n: steps;
    rng: a numpy Generator; concept_of(tokens) -> concept id (int; < 0: none); log_target:
    float64 (n_concepts,), log L̃ (nats; -inf where the target is 0); max_tokens: no tree
    with a longer yield has positive target.  See the module docstring for the step."""
    t = start
    c = concept_of(trees.tokens(t))
    if c < 0 or log_target[c] == -np.inf:
        raise RungError("rung 'mcmc': the chain's start has target 0")
    max_nodes = MAX_NODES_PER_TOKEN * max_tokens
    out = np.empty(n + 1, np.int64)
    out[0] = c
    lhs = trees.lhs
    for step in range(1, n + 1):
        nn = t[3]
        i = int(rng.integers(nn))
        old = trees.at(t, i)
        new = trees.generate(lhs[old[0]], max_tokens - (t[2] - old[2]), max_nodes, rng)
        if new is not None:
            t2 = trees.replace(t, i, new)
            c2 = concept_of(trees.tokens(t2))
            if c2 >= 0:
                log_a = log_target[c2] - log_target[c] + math.log(nn) - math.log(t2[3])
                if log_a > -np.inf and (log_a >= 0 or math.log(rng.random()) < log_a):
                    t, c = t2, c2
        out[step] = c
    return out


# ------------------------------------------------------------------ what a space gives the chain
def _space_trees(space) -> PCFGTrees:
    return space.index.derived("rungs.mcmc.trees", lambda: PCFGTrees(space.grammar))


def _space_concept_cache(space) -> dict:
    return space.index.derived("rungs.mcmc.concept_of", dict)


def _space_start_trees(space) -> dict:
    return space.index.derived("rungs.mcmc.start_trees", dict)


def concept_of(space, tokens: tuple) -> int:
    """The concept id of a token string (``space.find`` of it; -1 where it is none), cached per space."""
    cache = _space_concept_cache(space)
    c = cache.get(tokens)
    if c is None:
        try:
            found = space.find(" ".join(tokens))
        except (BayesConceptsError, ValueError):
            found = None
        c = cache[tokens] = -1 if found is None else int(found)
    return c


def concept_tree(space, c: int):
    """The most probable derivation tree of concept ``c`` (its program, or the program with a
    quantifier appended when it was collapsed), cached per space; None when there is none."""
    cache = _space_start_trees(space)
    if c not in cache:
        trees = _space_trees(space)
        tokens = tuple(space.programs[c].split())
        best = None
        ends = [()] + [(q,) for q in ("exists=", "for-all=") if q in space.grammar.token_kinds]
        for end in ends:
            try:
                found = derivations(tokens + end, space.grammar)
            except ValueError:
                found = []
            for lp, uses in found:
                tree = trees.from_uses(uses)
                if concept_of(space, trees.tokens(tree)) == c and (best is None or lp > best[0]):
                    best = (lp, tree)
        cache[c] = None if best is None else best[1]
    return cache[c]


def applies(space) -> str | None:
    """Why the mcmc rung cannot walk ``space`` (one line), or None."""
    if not space.has_grammar or not space.has_programs:
        kind = space.kind or type(space).__name__
        return (f"it walks derivation trees of a program space's grammar, and this is "
                f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind} space")
    if not np.any(np.isfinite(np.asarray(space.log_pcfg, np.float64))):
        return "its grammar derives none of its concepts (every log_pcfg is -inf)"
    return None


def underived(space, concepts) -> str | None:
    """Why the chain cannot cover ``concepts`` (int64 ids; one line): some have PCFG
    log-probability -inf (the grammar does not derive them, e.g. CLOSURE's template programs
    in a CLEVR space), or None.  Checked per split by the learner, since ``applies`` sees
    only the space."""
    lp = np.asarray(space.log_pcfg, np.float64)[np.asarray(concepts, np.int64)]
    bad = np.asarray(concepts, np.int64)[~np.isfinite(lp)]
    if len(bad):
        return (f"{len(bad):,} of the split's concepts (e.g. {int(bad[0])}: {space.programs[int(bad[0])]!r}) have "
                "PCFG log-probability -inf: the grammar does not derive them")
    return None


# ------------------------------------------------------------------ the learner
class _OneEpisode:
    """Episode ``e`` of a batch, as :meth:`Oracle.evaluate` reads it."""

    def __init__(self, episodes, e):
        for f in ("support_scenes", "support_labels", "query_scenes", "query_labels", "concept"):
            setattr(self, f, np.asarray(getattr(episodes, f))[e:e + 1])
        self.meta = dict(episodes.meta)

    def __len__(self):
        return 1


class MCMCLearner:
    """A learner whose hypotheses are the concepts an MCMC chain over derivation trees visits
    (see :mod:`bayes_concepts.rungs.mcmc` for the definition and the random streams).

    Parameters
    ----------
    space : a program space (``applies(space)`` is None)
    split : whose strong oracle's concepts are the chain's support; its ``name`` keys the streams
        when episodes do not name their split.
    settings : OracleSettings (likelihood of the chain and of the learner; prior of the learner)
    n : int >= 1, chain steps per episode (the budget)
    seed : int >= 0
    name : the learner's name in results
    """

    def __init__(self, space, split, settings, n: int = 1000, seed: int = 0, name: str = "mcmc"):
        why = applies(space)
        if why:
            raise RungError(f"rung {name!r} cannot apply to this space: {why}")
        self.space, self.settings, self.name = space, settings, name
        self.n, self.seed = int(n), int(seed)
        self.split_name = str(getattr(split, "name", None) or "")
        self.concepts = strong_concepts(split)
        if len(self.concepts) == 0:
            raise RungError(f"rung {name!r}: the split has no concepts for the chain to visit")
        why = underived(space, self.concepts)
        if why:
            raise RungError(f"rung {name!r} cannot apply to this split: {why}")
        #: bool (n_concepts,): the strong set
        self.strong = np.zeros(space.n_concepts, bool)
        self.strong[self.concepts] = True
        #: the longest yield a tree of positive target can have (tokens)
        self.max_tokens = 1 + max(len(space.programs[int(c)].split()) for c in self.concepts)
        self.trees = _space_trees(space)
        self.log_pcfg = np.asarray(space.log_pcfg, np.float64)

    # ------------------------------------------------------------- streams
    def episode_key(self, meta: dict) -> np.uint64:
        """The 64-bit key of a cell's chains: (seed, "mcmc", split, side, negatives)."""
        return stream_key(self.seed, "mcmc", meta.get("split") or self.split_name, meta.get("side") or "",
                          meta.get("negatives", "hard"))

    # ------------------------------------------------------------- the chain
    def log_target(self, support, labels, tables) -> np.ndarray:
        """float64 (n_concepts,): log L̃ of every concept for one support set (int64 (k,) scene
        ids, int8 (k,) labels), -inf outside the strong set or where L = 0; all 0 on the strong
        set when no concept of it has L > 0.  tables: ``likelihood_tables``' (first, second,
        consistent_only)."""
        space = self.space
        first, second, consistent_only = tables
        rows = np.ascontiguousarray(space.scene_concepts()[np.asarray(support, np.int64)], np.uint64)
        bits = np.unpackbits(rows.view(np.uint8), axis=1, bitorder="little")[:, :space.n_concepts].astype(bool)
        labels = np.asarray(labels).astype(bool)
        wp = (~bits[labels]).sum(0)
        wn = bits[~labels].sum(0)
        h = np.arange(space.n_concepts)

        def term(table, a, b):
            return table[h if table.shape[0] > 1 else 0, a if table.shape[1] > 1 else 0,
                         b if table.shape[2] > 1 else 0]
        if consistent_only:
            zero = np.zeros(space.n_concepts, np.int64)
            log_l = term(first, zero, zero) + term(second, zero, zero)
            log_l = np.where((wp + wn) > 0, -np.inf, log_l)
        else:
            log_l = term(first, wp, wn) + term(second, wp, wn)
        log_l = np.where(self.strong, np.broadcast_to(log_l, (space.n_concepts,)), -np.inf)
        if not np.any(log_l > -np.inf):
            log_l = np.where(self.strong, 0.0, -np.inf)
        return log_l

    def start(self, log_target) -> tuple:
        """(concept, tree) where the chain starts: the concept with positive target and the
        largest ``log_pcfg`` (lowest id on ties), its most probable derivation."""
        ok = np.flatnonzero(log_target > -np.inf)
        c = int(ok[np.argmax(self.log_pcfg[ok])])
        tree = concept_tree(self.space, c)
        if tree is None:
            raise RungError(f"rung {self.name!r}: concept {c} ({self.space.programs[c]!r}) has no derivation "
                            "tree in the space's grammar")
        return c, tree

    def _tables(self, meta: dict, k: int, hard_support):
        if hard_support is None:
            hard_support = meta.get("negatives", "hard") == "hard"
        return likelihood_tables(self.settings.likelihood, np.asarray(self.space.counts, np.int64),
                                 self.space.n_scenes, int(meta.get("n_positive", 5)), k, bool(hard_support),
                                 self.settings)

    def chains(self, episodes, hard_support: bool | None = None) -> list:
        """Each episode's chain: int64 (n + 1,) the concepts of X_0..X_n."""
        meta = episodes.meta
        support = np.asarray(episodes.support_scenes, np.int64)
        labels = np.asarray(episodes.support_labels)
        tables = self._tables(meta, support.shape[1], hard_support)
        key, first = int(self.episode_key(meta)), first_episode_index(meta)
        out = []
        for e in range(len(episodes)):
            lt = self.log_target(support[e], labels[e], tables)
            _, tree = self.start(lt)
            rng = np.random.Generator(np.random.PCG64([key, first + e]))
            out.append(run_chain(self.trees, tree, self.n, rng, lambda toks: concept_of(self.space, toks), lt,
                                 self.max_tokens))
        return out

    def visited(self, episodes, hard_support: bool | None = None) -> list:
        """Each episode's hypotheses: the distinct concepts its chain visits (int64, ascending)."""
        return [np.unique(c) for c in self.chains(episodes, hard_support)]

    def evaluate(self, episodes, hard_support: bool | None = None) -> dict:
        """Score a batch of episodes: the arrays of :meth:`Oracle.evaluate` (E,) (``ap``,
        ``ap_bound``, ``cba``, ``posterior_entropy``, ``predictive_entropy`` (nats), ``empty``,
        ``n_candidates``; ``query_pred`` (E, Kq)), each episode's from ``Oracle(space,
        visited, settings)``, plus ``n_hypotheses`` (distinct concepts visited)."""
        e = len(episodes)
        out = {key: np.empty(e) for key in ("ap", "ap_bound", "cba", "posterior_entropy", "predictive_entropy")}
        out["empty"] = np.zeros(e, bool)
        out["n_candidates"] = np.zeros(e, np.int64)
        out["n_hypotheses"] = np.zeros(e, np.int64)
        out["query_pred"] = np.zeros(np.asarray(episodes.query_scenes).shape)
        for i, chain in enumerate(self.chains(episodes, hard_support)):
            ids = np.unique(chain)
            res = Oracle(self.space, ids, self.settings, self.name).evaluate(_OneEpisode(episodes, i),
                                                                            hard_support=hard_support)
            for key in ("ap", "ap_bound", "cba", "posterior_entropy", "predictive_entropy", "empty",
                        "n_candidates", "query_pred"):
                out[key][i] = res[key][0]
            out["n_hypotheses"][i] = len(ids)
        return out

    # ------------------------------------------------------ learner protocol
    def fit(self, scenes, labels, hard: bool = True, positives_drawn: int | None = None) -> "MCMCLearner":
        """Run one chain on a support set (scene ids; 0/1 ``labels``) from the stream (seed,
        "fit", split) and index 0, then fit ``Oracle(space, visited, settings)``.  Sets
        ``visited_`` and ``empty_``."""
        labels = np.asarray(labels, np.int8)
        n_drawn = int(labels.sum()) if positives_drawn is None else int(positives_drawn)
        tables = likelihood_tables(self.settings.likelihood, np.asarray(self.space.counts, np.int64),
                                   self.space.n_scenes, n_drawn, len(labels), bool(hard), self.settings)
        lt = self.log_target(scenes, labels, tables)
        _, tree = self.start(lt)
        rng = np.random.Generator(np.random.PCG64([int(stream_key(self.seed, "fit", self.split_name)), 0]))
        chain = run_chain(self.trees, tree, self.n, rng, lambda toks: concept_of(self.space, toks), lt,
                          self.max_tokens)
        self.visited_ = np.unique(chain)
        self._oracle = Oracle(self.space, self.visited_, self.settings, self.name)
        self._oracle.fit(scenes, labels, hard=hard, positives_drawn=positives_drawn)
        self.empty_ = self._oracle.empty_
        return self

    def predict_proba(self, scenes) -> np.ndarray:
        """p(y = 1 | u, support) for each scene id: float64 (n,)."""
        if getattr(self, "_oracle", None) is None:
            raise RuntimeError("call fit() first")
        return self._oracle.predict_proba(scenes)

    def __repr__(self):
        return f"MCMCLearner({self.name!r}, n={self.n:,}, seed={self.seed}, {len(self.concepts):,} concepts)"


# ------------------------------------------------------------------ knobs and the rung
def check_knob(name: str, value) -> str | None:
    """Why the mcmc rung refuses ``value`` for knob ``name`` (one line), or None."""
    if name == "n":
        return budget_problem(value, MAX_STEPS, "chain steps")
    if name == "seed":
        return seed_problem(value)
    return None


def _build(space, split, settings, n=1000, seed=0):
    checked_knobs("mcmc", {"n": n, "seed": seed}, check_knob)
    return MCMCLearner(space, split, settings, whole_number(n), whole_number(seed), name="mcmc")


rungs.register("mcmc", Rung(
    "mcmc", "a learner whose hypotheses are the concepts an n-step MCMC chain over derivation trees visits",
    MCMC_DEFINITION, _build,
    knobs={"n": (1000, "chain steps per episode (the budget; the hypotheses are the distinct concepts visited)"),
           "seed": (0, "seed of the chains (each episode's from the seed, its cell and its index)")},
    applies=applies, check_knob=check_knob, position=60))
