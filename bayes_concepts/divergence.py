"""Atom and compound divergence of a split (Keysers et al. 2020).

"Measuring compositional generalization" (Keysers et al., ICLR 2020) describes a split
by how differently its train and test sides distribute over *atoms* (the building blocks)
and *compounds* (the ways blocks are put together):

* atom divergence     D_A = 1 − C_0.5(P_train ‖ P_test) over atoms,
* compound divergence D_C = 1 − C_0.1(P_train ‖ P_test) over compounds,

with the Chernoff coefficient C_α(P ‖ Q) = Σ_k p_k^α q_k^(1−α) ∈ [0, 1].  α = 0.5 is
symmetric (the Bhattacharyya coefficient); α = 0.1 weighs the test distribution, so D_C
is near 1 as soon as test compounds are rare in train, whatever train holds beside them.
Both are 0 for identical distributions and 1 for disjoint supports.  CURI calls these
measures complementary to its comp gap: they read the split's *descriptions*, the comp
gap what an ideal learner can infer from the *data*.

What the atoms and compounds of a concept are:

* a program (HypothesisSpace): atoms are the tokens of its canonical postfix form
  (``space.programs``, x-free programs collapsed), counted with multiplicity; compounds
  are its parent–child sub-trees, one per edge of the syntax tree, written
  ``parent(k:child)`` with the child's argument slot k (``=(0:color?)`` in
  ``x color? red =``), also with multiplicity.  In a language with binders
  (``filter:y``, ``exists:y``, ``forall:y``: a grammar whose ``operators`` line declares
  one) the names of object variables are renamed away: a binder token counts as its
  operator (``filter:y`` and ``filter:z`` are the atom ``filter``) and every object
  variable (``x``, ``y``, ...) as the atom :data:`VARIABLE_ATOM`, in atoms and compounds
  alike, so two programs that differ only in their variables' names have the same atoms
  and compounds (``color?(0:VAR)``, ``filter(1:=)``).  Which binder a variable refers to
  is not an atom or compound, as in CURI's language; CURI's programs keep ``x``;
* a description of an :class:`~bayes_concepts.spaces.extension_space.ExtensionSpace`
  (duck-typed: any space with ``atoms_and_compounds(i)``): for an (attribute, object)
  pair the atoms are the attribute and the object, the compound the pair; a primitive
  concept has one atom and no compound.

Each side's distribution is weighted by the *episode distribution*: the concepts of the
side that can fill an episode (at least ``n_positive + n_query_positive`` positives: the
split's episode shape, 5 + 5 by default), each with weight
∝ exp(−β·l(h)) (β = 0.2), contribute their atom (compound) counts:
P_side(a) ∝ Σ_{h ∈ side} w(h) · count_h(a).  A side with no weight on compounds (all its
concepts primitives) has no compound distribution: its divergence is NaN.

>>> d = split_divergence(space, splits["counting"])              # doctest: +SKIP
>>> d["atom_divergence"], d["compound_divergence"]                 # doctest: +SKIP
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .lot.operators import operators, split_binder
from .errors import ProgramError
from .lot.program import Program, postorder_nodes, program_shape, value_stand_ins
from .params import whole_number


def nested_sizes(splits: dict, nested: dict) -> dict:
    """Per split, how many concepts each of the four oracles knows: ``{name: {"strong": n,
    "atom": n, "compound": n, "weak": n}}`` (what the results' ``gap_parts`` attribute records)."""
    out = {}
    for name, split in splits.items():
        strong = getattr(split, "strong_concepts", None)
        strong = np.union1d(split.train, split.test) if strong is None else np.unique(strong)
        out[name] = {"strong": int(len(strong)), "atom": int(len(nested[name]["atom"])),
                     "compound": int(len(nested[name]["compound"])), "weak": int(len(split.train))}
    return out

__all__ = ["ConceptStructure", "concept_structure", "program_atoms_and_compounds", "episode_weights",
           "side_distribution", "chernoff_coefficient", "split_divergence", "divergence_table", "nested_concepts", "nested_sizes",
           "ATOM_ALPHA", "COMPOUND_ALPHA", "VARIABLE_ATOM"]

#: Chernoff α of the atom and the compound divergence (Keysers et al. 2020)
ATOM_ALPHA = 0.5
COMPOUND_ALPHA = 0.1
#: the atom every object variable of a language with binders stands as (names renamed away)
VARIABLE_ATOM = "VAR"


@dataclass
class ConceptStructure:
    """Atom and compound counts of every concept of a space.

    atoms : scipy.sparse.csr_matrix float64 (n_concepts, n_atom_types)
    compounds : scipy.sparse.csr_matrix float64 (n_concepts, n_compound_types)
    atom_names, compound_names : lists of str (the column labels)
    """

    atoms: sp.csr_matrix
    compounds: sp.csr_matrix
    atom_names: list
    compound_names: list


def _has_binders(grammar) -> bool:
    """Whether the grammar's language binds variables by name (declares a binder operator)."""
    return any(name in operators and operators.get(name).binds for name in getattr(grammar, "operators", ()))


def _atom_of(node, rename: bool) -> str:
    """A syntax-tree node's atom: its token, or with ``rename`` a binder's operator name and
    :data:`VARIABLE_ATOM` for an object variable."""
    if not rename:
        return node.op
    if node.kind == "binder":
        return split_binder(node.op)[0]
    if node.kind == "variable" and node.type == "OBJ":
        return VARIABLE_ATOM
    return node.op


def program_atoms_and_compounds(program) -> tuple:
    """(atoms, compounds) of a parsed program: its postfix tokens, and one
    ``parent(k:child)`` per edge of its syntax tree (both lists, with repeats).  In a
    language with binders, variable names are renamed away (see the module docstring)."""
    rename = _has_binders(program.grammar)
    nodes = list(program.root.walk())
    if rename:
        atoms = [_atom_of(node, True) for node in postorder_nodes(program.root)]
    else:
        atoms = list(program.tokens)
    compounds = [f"{_atom_of(node, rename)}({k}:{_atom_of(child, rename)})" for node in nodes
                 for k, child in enumerate(node.children)]
    return atoms, compounds


def _programs_atoms_and_compounds(space):
    """:func:`program_atoms_and_compounds` of each of the space's programs, in id order, parsing
    one program per shape (:func:`~bayes_concepts.lot.program.program_shape`): a value is a
    leaf, its atom its own token and its compound ``parent(k:value)``, so a program's lists are
    its shape's with its own values put back.  (A shape that does not parse -- it cannot, when
    its program does -- falls back to the program itself.)"""
    grammar = space.grammar
    stand_in = value_stand_ins(grammar)
    templates = {}
    for text in space.programs:
        tokens, shape = program_shape(text, grammar, stand_in)
        template = templates.get(shape)
        if template is None:
            try:
                template = templates[shape] = _shape_template(Program.parse(shape, grammar), stand_in)
            except ProgramError:
                yield program_atoms_and_compounds(Program.parse(text, grammar))
                continue
        atoms, compounds, value_atoms, value_compounds = template
        if value_atoms:
            atoms = list(atoms)
            for i in value_atoms:
                atoms[i] = tokens[i]
            compounds = list(compounds)
            for j, i, head in value_compounds:
                compounds[j] = f"{head}{tokens[i]})"
        yield atoms, compounds


def _shape_template(program, stand_in: dict) -> tuple:
    """``(atoms, compounds, value_atoms, value_compounds)`` of a shape: its
    :func:`program_atoms_and_compounds`, the positions of its value atoms, and per compound
    whose child is a value ``(index, the value's position, the compound up to the value)``."""
    atoms, compounds = program_atoms_and_compounds(program)
    tokens = program.tokens
    value_atoms = [i for i, tok in enumerate(tokens) if tok in stand_in]
    value_compounds = []
    j = 0
    for node in program.root.walk():  # the order program_atoms_and_compounds lists the edges in
        for k, child in enumerate(node.children):
            if not child.children and tokens[child.position] in stand_in:
                value_compounds.append((j, child.position, compounds[j][: -len(child.op) - 1]))
            j += 1
    return atoms, compounds, value_atoms, value_compounds


def _sparse(rows: list, n: int) -> tuple:
    names, index, ptr, idx = [], {}, [0], []
    for items in rows:
        for it in items:
            j = index.get(it)
            if j is None:
                j = index[it] = len(names)
                names.append(it)
            idx.append(j)
        ptr.append(len(idx))
    m = sp.csr_matrix((np.ones(len(idx)), np.array(idx, np.int64), np.array(ptr, np.int64)),
                      shape=(n, len(names)))
    m.sum_duplicates()
    return m, names


def concept_structure(space) -> ConceptStructure:
    """Atom and compound counts of every concept of ``space``: from the parsed programs
    (:func:`program_atoms_and_compounds`) of a space of programs, else from the space's own
    ``atoms_and_compounds(i)`` (extension spaces).  Built once per space and kept in its
    ``index`` (a ladder's learned prior, its predictors and the audit all read it; a CLEVR
    space's 14,000 programs are parsed for it); do not modify the matrices."""
    return space.index.derived("divergence.concept_structure", lambda: _concept_structure(space))


def _concept_structure(space) -> ConceptStructure:
    atoms, comps = [], []
    pairs = _programs_atoms_and_compounds(space) if space.has_programs else (
        space.atoms_and_compounds(i) for i in range(space.n_concepts))
    for a, c in pairs:
        atoms.append(a)
        comps.append(c)
    am, an = _sparse(atoms, space.n_concepts)
    cm, cn = _sparse(comps, space.n_concepts)
    return ConceptStructure(am, cm, an, cn)


def episode_weights(space, concepts, beta: float = 0.2, n_positive: int = 5,
                    n_query_positive: int | None = None) -> np.ndarray:
    """float64 (len(concepts),): the probability that an episode of a side made of
    ``concepts`` (int, (n,)) is about each of them -- ∝ exp(−beta·l(h)) over the concepts with
    at least ``n_positive + n_query_positive`` positives (the support's and the query's
    positives, distinct: an :class:`~bayes_concepts.episodes.EpisodeShape`'s ``positives``
    and ``query_positives``, whose sum is its ``needed``; ``n_query_positive`` None: as
    ``n_positive``), 0 for the others (as :mod:`bayes_concepts.episodes` draws).  All zeros
    when no concept can fill an episode.  Plain numbers, not the shape: this module is in the
    episodes' layer and does not import it."""
    needed = _needed(n_positive, n_query_positive)
    concepts = np.asarray(concepts, np.int64)
    w = np.exp(-float(beta) * np.asarray(space.lengths)[concepts].astype(np.float64))
    w[np.asarray(space.counts)[concepts] < needed] = 0.0
    total = w.sum()
    return w / total if total > 0 else w


def _needed(n_positive, n_query_positive) -> int:
    """Positives a concept needs for an episode: ``n_positive + n_query_positive`` (None: as
    ``n_positive``); each a whole number >= 1, else a one-line ValueError naming it."""
    q = n_positive if n_query_positive is None else n_query_positive
    for name, v in (("n_positive", n_positive), ("n_query_positive", q)):
        whole_number(name, v, 1, error=ValueError, prefix="episode_weights: ")
    return int(n_positive) + int(q)


def side_distribution(counts: sp.csr_matrix, concepts, weights) -> np.ndarray:
    """float64 (n_types,): Σ_h weights[h]·counts[h] over ``concepts``, normalised to sum 1;
    all NaN when that sum is 0."""
    concepts = np.asarray(concepts, np.int64)
    mass = np.asarray(counts[concepts].T @ np.asarray(weights, np.float64)).ravel()
    total = mass.sum()
    return mass / total if total > 0 else np.full(counts.shape[1], np.nan)


def chernoff_coefficient(p, q, alpha: float) -> float:
    """C_α(P ‖ Q) = Σ_k p_k^α q_k^(1−α) of two distributions over the same types (float
    arrays of equal shape, each summing to 1); NaN when either is NaN."""
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    if p.shape != q.shape:
        raise ValueError(f"distributions of different shapes {p.shape} and {q.shape}")
    if np.isnan(p).any() or np.isnan(q).any():
        return float("nan")
    both = (p > 0) & (q > 0)  # 0^α = 0 for 0 < α < 1
    return float(np.sum(p[both] ** alpha * q[both] ** (1.0 - alpha)))


def split_divergence(space, split, *, beta: float = 0.2, n_positive: int = 5, n_query_positive: int | None = None,
                     structure=None, train: str = "train", test: str = "test", top: int = 5) -> dict:
    """Atom and compound divergence of ``split`` (train side against test side).

    Returns a dict: ``atom_divergence``, ``compound_divergence`` (floats in [0, 1], rounding
    below 0 or above 1 clipped; NaN where a side has no atoms / compounds with weight), ``atom_alpha``, ``compound_alpha``,
    ``beta``, the number of atom and compound types on each side (``n_atoms``,
    ``n_compounds``: ``{"train": .., "test": .., "shared": ..}``), ``test_compounds_unseen``
    (the test side's compound mass on compounds absent from train, in [0, 1]) and
    ``top_atoms`` / ``top_compounds``: the ``top`` types of the test side with the largest
    excess of test over train probability (``[(name, p_train, p_test), ...]``).
    ``structure``: a :func:`concept_structure` of the space, to reuse across splits;
    ``n_positive``, ``n_query_positive``: the split's episode shape (:func:`episode_weights`).
    """
    st = structure if structure is not None else concept_structure(space)
    ids = {s: np.asarray(split.ids(s), np.int64) for s in (train, test)}
    w = {s: episode_weights(space, ids[s], beta, n_positive, n_query_positive) for s in ids}
    out = {"atom_alpha": ATOM_ALPHA, "compound_alpha": COMPOUND_ALPHA, "beta": float(beta)}
    for kind, counts, names, alpha in (("atom", st.atoms, st.atom_names, ATOM_ALPHA),
                                       ("compound", st.compounds, st.compound_names, COMPOUND_ALPHA)):
        p = side_distribution(counts, ids[train], w[train])
        q = side_distribution(counts, ids[test], w[test])
        c = chernoff_coefficient(p, q, alpha)
        out[f"{kind}_divergence"] = float(np.clip(1.0 - c, 0.0, 1.0)) if np.isfinite(c) else float("nan")
        on_p, on_q = np.nan_to_num(p) > 0, np.nan_to_num(q) > 0
        out[f"n_{kind}s"] = {"train": int(on_p.sum()), "test": int(on_q.sum()), "shared": int((on_p & on_q).sum())}
        excess = np.nan_to_num(q) - np.nan_to_num(p)
        order = np.argsort(-excess, kind="stable")[:top]
        out[f"top_{kind}s"] = [(names[j], float(np.nan_to_num(p[j])), float(np.nan_to_num(q[j])))
                               for j in order if excess[j] > 0]
        if kind == "compound":
            out["test_compounds_unseen"] = float(np.nan_to_num(q)[~on_p].sum()) if on_q.any() else float("nan")
    return out


def divergence_table(space, splits, **kw):
    """A pandas DataFrame: one row per split with its atom and compound divergence and the
    shared atom and compound types (:func:`split_divergence`; the structure is computed once)."""
    import pandas as pd
    st = kw.pop("structure", None) or concept_structure(space)
    rows = []
    for name, split in (splits.items() if isinstance(splits, dict) else ((s.name, s) for s in splits)):
        d = split_divergence(space, split, structure=st, **kw)
        rows.append({"split": name, "atom_divergence": d["atom_divergence"],
                     "compound_divergence": d["compound_divergence"],
                     "test_compounds_unseen": d["test_compounds_unseen"],
                     "atoms_train": d["n_atoms"]["train"], "atoms_test": d["n_atoms"]["test"],
                     "atoms_shared": d["n_atoms"]["shared"], "compounds_train": d["n_compounds"]["train"],
                     "compounds_test": d["n_compounds"]["test"], "compounds_shared": d["n_compounds"]["shared"]})
    return pd.DataFrame(rows)


def nested_concepts(space, split, *, structure=None, candidates=None) -> dict:
    """The concept sets of the two oracles between the weak and the strong one of ``split``.

    * ``"atom"``: the candidates all of whose atoms occur in some train concept, and the train
      concepts (for attribute-object pairs: every pair whose attribute and object are both seen
      in training, and the primitives seen there);
    * ``"compound"``: the candidates of the atom set all of whose compounds (parent-child
      sub-trees) also occur in some train concept, and the train concepts.  A concept with no
      compound (one token, a primitive) is in it exactly when its atom is seen; a pair's only
      compound is the pair itself, so a pair space's compound set is its train set.

    ``candidates``: int ids (default: the strong oracle's concepts, ``split.strong_concepts``
    where a protocol set it, else train ∪ test; val concepts are in no oracle).  So
    train ⊆ compound ⊆ atom ⊆ train ∪ candidates.  Atoms and compounds are those of
    :func:`concept_structure` (``structure`` reuses one), as types (counts do not matter).
    Returns sorted int64 arrays ``{"atom": (a,), "compound": (c,)}``."""
    st = structure if structure is not None else concept_structure(space)
    train = np.asarray(split.train, np.int64)
    if candidates is None:
        candidates = getattr(split, "strong_concepts", None)
        if candidates is None:
            candidates = np.union1d(split.train, split.test)
    candidates = np.asarray(candidates, np.int64)

    def all_seen(counts) -> np.ndarray:
        """bool (n_concepts,): the concept has no type that no train concept has."""
        seen = np.asarray(counts[train].sum(axis=0)).ravel() > 0
        unseen_mass = counts @ (~seen).astype(np.float64)
        return np.asarray(unseen_mass).ravel() == 0

    atom_ok = all_seen(st.atoms)
    compound_ok = atom_ok & all_seen(st.compounds)
    return {"atom": np.union1d(train, candidates[atom_ok[candidates]]),
            "compound": np.union1d(train, candidates[compound_ok[candidates]])}
