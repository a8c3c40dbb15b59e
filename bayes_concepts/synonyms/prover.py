"""Proofs that two programs are equivalent on every valid scene, at three levels.

A program is a quantifier (∃x∈S, ∀x∈S, or none) over a boolean formula of canonical
atoms (:mod:`bayes_concepts.synonyms.atoms`).  Each level is sound: a pair it proves
equivalent is equivalent on every valid scene (1 to ``max_objects`` objects, any
attribute values); each level includes the ones before.

``propositional`` (CURI's "truly synonymous")
    Atoms are opaque propositions.  Two programs with the same quantifier are equivalent
    if ``¬(body₁ ↔ body₂)`` is unsatisfiable (:func:`~bayes_concepts.synonyms.sat.satisfiable`):
    commutations, double negation, De Morgan, absorption, idempotence.
``first-order``
    The quantifier is expanded: ``∃x: F(x)`` is ``⋁ₘ (Eₘ ∧ F|ₘ)`` and ``∀x: F(x)`` is
    ``⋀ₘ (Eₘ → F|ₘ)``, where ``m`` runs over the truth assignments (minterms) of the
    pair's atoms that mention x, and ``Eₘ`` is a fresh variable "some object of S
    satisfies m"; S is never empty (⋁ Eₘ).  A set quantifier over S with an x-free value
    is the same construct (``any(color(S) = red)`` is ``∃x: color(x) = red``).
``domain``
    Facts true of every valid scene.  Atoms about x alone are evaluated on every object
    type (one value per attribute: 6,144 types in CURI's schema), so minterms that no
    object realises are dropped (``size > large`` and ``location > 8`` are false,
    ``size > small`` is ``size = large``, ...).  Counts are integers in their range
    (over S: 0..max_objects; over S−x: 0..max_objects−1; ``count(P(S) = P(x))``:
    1..max_objects), and ``count(P(S) = c) ≥ 1`` iff some object has ``P = c``.  A set
    quantifier over S−x with a constant says which *other* objects have the value.

Not modelled, so "not proved" is only a lower bound on logical equivalence: relations
between two objects (set quantifiers and counts whose value depends on x, e.g.
``all(color(S−x) = color(x))``), counts beyond "at least one", the number of objects in
a scene, other arithmetic.

Programs of a relational language (operators registered without ``prover="curi"``:
binders, ``exist``, ``count``, ``unique``, relations, ``+``, ...) are *not provable*: the
prover does not reason about them, and never proves such a program equivalent to
another (:meth:`EquivalenceProver.verdict` says which operators, in
``Verdict.not_provable``); their synonym classes are decided by signatures only.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import sympy
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from sympy.logic.boolalg import simplify_logic

from ..errors import BayesConceptsError
from ..lot.grammar import Grammar, curi_grammar
from . import sat
from ..lot.program import Program
from .atoms import AtomTable, ProgramForm, unprovable_operators, uses_x

#: the proof levels, weakest first
LEVELS = ("propositional", "first-order", "domain")
#: the default largest number of minterms (x-atom truth assignments) one comparison may expand
MAX_MINTERMS = 4096


class SynonymError(BayesConceptsError):
    """A bad argument to the synonym analysis (an unknown proof level, a bad size)."""


class ExpansionTooLarge(Exception):
    """A first-order or domain comparison whose quantifier expansion has more than
    ``max_minterms`` minterms; ``args[0]`` is the number it would have had."""


@dataclass(frozen=True)
class Verdict:
    """The outcome of :func:`prove_equivalent`.

    Attributes
    ----------
    proved : bool
        Whether the two programs are proved equivalent on every valid scene.
    level : str or None
        The weakest level of :data:`LEVELS` that proves it; None when not proved.
    too_large : bool
        Whether some level gave up because its expansion exceeded ``max_minterms``
        (so a larger limit might still prove the pair).
    not_provable : tuple of str
        The operators of either program that the prover does not reason about (relational
        ones); non-empty means nothing was tried: the pair is not provable by this method.
    """

    proved: bool
    level: str | None
    too_large: bool
    not_provable: tuple = ()


def check_level(level: str) -> str:
    """``level`` if it is one of :data:`LEVELS`; a :class:`SynonymError` otherwise."""
    if level not in LEVELS:
        raise SynonymError(f"proof level {level!r}: expected one of {', '.join(LEVELS)}")
    return level


def linked_components(items: list, links) -> list:
    """Group ``items`` that share a link, transitively.

    Parameters
    ----------
    items : list
        Hashable items.
    links : callable
        ``links(item)`` -> the hashable links of an item; two items sharing any link are
        in one group.

    Returns
    -------
    list of list
        The groups (connected components), in order of their first item; items keep
        their order within a group.
    """
    if not items:
        return []
    link_index, rows, cols = {}, [], []
    for i, item in enumerate(items):
        for link in links(item):
            rows.append(i)
            cols.append(link_index.setdefault(link, len(link_index)))
    incidence = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(items), max(1, len(link_index))))
    _, label = connected_components(incidence @ incidence.T, directed=False)
    groups: dict = {}
    for item, g in zip(items, label.tolist()):
        groups.setdefault(g, []).append(item)
    return list(groups.values())


class EquivalenceProver:
    """Proves CURI programs equivalent at the three levels of :data:`LEVELS`.

    Parameters
    ----------
    grammar : Grammar, optional
        The grammar of the programs (default: CURI's); its scene schema defines the object
        types of the domain level.
    max_objects : int, optional
        The most objects a valid scene has (default: the grammar's schema's).
    max_minterms : int
        A first-order or domain comparison with more minterms raises
        :class:`ExpansionTooLarge`.

    Notes
    -----
    Programs are postfix strings or :class:`~bayes_concepts.lot.Program`; their canonical
    forms are cached, so one prover should serve many comparisons.
    """

    def __init__(self, grammar: Grammar | None = None, max_objects: int | None = None,
                 max_minterms: int = MAX_MINTERMS):
        self.grammar = grammar or curi_grammar()
        schema = self.grammar.schema
        self.max_objects = int(schema.max_objects if max_objects is None else max_objects)
        self.max_minterms = int(max_minterms)
        if self.max_objects < 1:
            raise SynonymError(f"max_objects must be >= 1, got {self.max_objects}")
        if self.max_minterms < 1:
            raise SynonymError(f"max_minterms must be >= 1, got {self.max_minterms}")
        self.table = AtomTable(self.grammar)
        self.atoms = self.table.atoms
        names = [a.name for a in schema.attributes]
        grids = np.indices([a.n_values for a in schema.attributes]).reshape(len(names), -1)
        #: per attribute name: the codes of every object type, int (n_types,)
        self.type_codes = dict(zip(names, grids))
        self.n_types = grids.shape[1]
        self._own_truth: dict = {}
        self._unprovable: dict = {}

    def form(self, program) -> ProgramForm:
        """The canonical :class:`~bayes_concepts.synonyms.atoms.ProgramForm` of a program
        (:class:`~bayes_concepts.synonyms.atoms.NotProvable` for a program the prover does not
        reason about)."""
        return self.table.form(program)

    def unprovable(self, program) -> tuple:
        """The operators of ``program`` the prover does not reason about (cached; ``()``: it
        is provable)."""
        text = program if isinstance(program, str) else program.postfix
        if text not in self._unprovable:
            parsed = program if isinstance(program, Program) else Program.parse(text, self.grammar)
            self._unprovable[text] = unprovable_operators(parsed)
        return self._unprovable[text]

    def provable(self, program) -> bool:
        """Whether the prover reasons about every operator of ``program``."""
        return not self.unprovable(program)

    # ------------------------------------------------------------------ levels
    def propositional(self, program_a, program_b) -> bool:
        """Same quantifier and ``body_a ↔ body_b`` valid with atoms as opaque propositions.
        Bodies with equal syntactic normal forms are accepted without the solver.  False for
        a program the prover does not reason about."""
        if not (self.provable(program_a) and self.provable(program_b)):
            return False
        fa, fb = self.form(program_a), self.form(program_b)
        if fa.quantifier != fb.quantifier:
            return False
        return fa.normal == fb.normal or sat.valid(sat.iff(fa.body, fb.body))

    def equivalent(self, program_a, program_b, level: str) -> bool:
        """Whether the programs are provably equivalent at ``level`` (one of :data:`LEVELS`).

        Raises
        ------
        ExpansionTooLarge
            When a first-order or domain expansion exceeds ``max_minterms``.
        """
        check_level(level)
        if self.propositional(program_a, program_b):
            return True
        if level == "propositional" or not (self.provable(program_a) and self.provable(program_b)):
            return False
        return self._expanded(self.form(program_a), self.form(program_b), domain=level == "domain")

    def verdict(self, program_a, program_b, level: str = "domain") -> Verdict:
        """The weakest level up to ``level`` that proves the programs equivalent (a level that
        is too large to expand is skipped and noted).  For a program the prover does not reason
        about: not proved, with those operators in ``not_provable``."""
        up_to = LEVELS.index(check_level(level))
        unprovable = tuple(dict.fromkeys(self.unprovable(program_a) + self.unprovable(program_b)))
        if unprovable:
            return Verdict(False, None, False, unprovable)
        if self.propositional(program_a, program_b):
            return Verdict(True, "propositional", False)
        too_large = False
        for name in LEVELS[1:up_to + 1]:
            try:
                if self._expanded(self.form(program_a), self.form(program_b), domain=name == "domain"):
                    return Verdict(True, name, too_large)
            except ExpansionTooLarge:
                too_large = True
        return Verdict(False, None, too_large)

    # --------------------------------------------------------- the expansion
    def _expanded(self, fa: ProgramForm, fb: ProgramForm, domain: bool) -> bool:
        forms = (fa, fb)
        minterms = self._minterms(self._x_atoms(forms, domain), domain)
        exists = [sat.var(("E", j)) for j in range(len(minterms))]
        facts = [sat.or_(*exists)]  # S is never empty

        def some(own, value=True):  # "some object has own == value"
            return sat.or_(*[e for e, m in zip(exists, minterms) if m[own] == value])

        if domain:
            facts.extend(self._non_x_set_facts(forms, exists, minterms))
        closed_cache, counted = {}, set()

        def closed(key):  # an atom's formula outside the expansion
            if key not in closed_cache:
                atom = self.atoms[key]
                if atom.kind == "setq" and atom.own_of is not None:  # any / all over S with a constant
                    out = some(atom.own_of) if atom.op == "exists" else sat.not_(some(atom.own_of, False))
                elif domain and atom.kind == "const":
                    va, vb = (t[1] if t[0] == "num" else t[2] for t in atom.terms)
                    out = bool(va == vb if atom.op == "=" else va > vb)
                elif domain and atom.kind == "count":
                    out = self._closed_count(key, facts, some, counted)
                else:
                    out = sat.var(key)
                closed_cache[key] = out
            return closed_cache[key]

        def program(form):
            if form.quantifier is None:
                return sat.substitute(form.body, closed)
            parts = []
            for e, m in zip(exists, minterms):
                body = sat.substitute(form.body, lambda key: m[key] if key in m else closed(key))
                parts.append(sat.and_(e, body) if form.quantifier == "exists" else sat.or_(sat.not_(e), body))
            return sat.or_(*parts) if form.quantifier == "exists" else sat.and_(*parts)

        differ = sat.not_(sat.iff(program(fa), program(fb)))  # before reading facts: it adds count facts
        return not sat.satisfiable(sat.and_(*facts, differ))

    def _x_atoms(self, forms, domain: bool) -> list:
        """The atoms the quantifier expansion assigns: those mentioning x, and the own atoms
        that x-free atoms are linked to."""
        keys = []
        for form in forms:
            for key in form.atoms:
                if self.atoms[key].uses_x:
                    keys.append(key)
                keys.extend(self._linked_own_atoms(key, domain))
        return list(dict.fromkeys(keys))

    def _linked_own_atoms(self, key, domain: bool) -> list:
        """``P(x) = c`` for a set quantifier of P over S (with domain facts, also over S−x)
        with an x-free value c, and (domain facts) for a count of P over S against c."""
        atom = self.atoms[key]
        if atom.kind == "setq":
            values, value = atom.terms
            if atom.own_of is not None:
                return [atom.own_of]
            if domain and values[2] == ("var", "non-x-S") and not uses_x(value):
                return [self.table.own_equals(values[1], value)]
        if domain and atom.kind == "count":
            return [self.table.own_equals(t[1][1], t[2]) for t in atom.terms
                    if t[0] == "count" and t[1][2] == ("var", "S") and not uses_x(t[2])]
        return []

    def _minterms(self, keys, domain: bool) -> list:
        groups = self._feasible_patterns(keys, domain)
        total = 1
        for _, patterns in groups:
            total *= len(patterns)
            if total > self.max_minterms:
                raise ExpansionTooLarge(total)
        minterms = []
        for combo in itertools.product(*[patterns for _, patterns in groups]):
            minterm = {}
            for (group_keys, _), pattern in zip(groups, combo):
                minterm.update(zip(group_keys, pattern))
            minterms.append(minterm)
        return minterms

    def _feasible_patterns(self, keys, domain: bool) -> list:
        """The x-atoms ``keys`` as independent groups with their feasible truth patterns:
        ``[(keys, [pattern, ...]), ...]``.  Without domain facts every atom is free."""
        if not domain:
            return [((k,), [(False,), (True,)]) for k in keys]
        own = [k for k in keys if self.atoms[k].kind == "own"]
        counts = [k for k in keys if self.atoms[k].kind == "count"]
        groups = []
        if own:
            groups.append((tuple(own), _unique_rows([self._own_mask(k) for k in own])))
        for linked in linked_components(counts, lambda k: [t for t in self.atoms[k].terms if t[0] == "count"]):
            groups.append((tuple(linked), _unique_rows(self._count_table(linked)[2])))
        groups.extend(((k,), [(False,), (True,)]) for k in keys if self.atoms[k].kind not in ("own", "count"))
        return groups

    # ------------------------------------------------------------ domain facts
    def _own_mask(self, key) -> np.ndarray:
        """Truth of an own atom on every object type: bool (n_types,)."""
        if key not in self._own_truth:
            a, b = self.atoms[key].terms
            va, vb = self._own_value(a), self._own_value(b)
            truth = (va == vb) if key[1] == "=" else (va > vb)
            self._own_truth[key] = np.broadcast_to(np.asarray(truth, bool), (self.n_types,)).copy()
        return self._own_truth[key]

    def _own_value(self, term):
        if term[0] == "const":
            return term[2]
        if term[0] == "prop" and term[2] == ("var", "x"):
            return self.type_codes[term[1]]
        raise ValueError(f"not a term of x alone: {term}")

    def count_range(self, term) -> np.ndarray:
        """The values a count term can take on a valid scene: int (n_values,)."""
        _, values, value = term
        if values[2] == ("var", "non-x-S"):
            return np.arange(0, self.max_objects)
        if value[0] == "prop" and value[1] == values[1] and value[2] == ("var", "x"):
            return np.arange(1, self.max_objects + 1)  # x itself is counted
        return np.arange(0, self.max_objects + 1)

    def _count_table(self, keys) -> tuple:
        """Every assignment of the count terms of the atoms ``keys`` within their ranges.

        Returns ``(terms, grid, truth)``: the count terms (sorted), ``grid[term]`` int
        (n_assignments,) the term's value per assignment, and per atom of ``keys`` its
        truth bool (n_assignments,).
        """
        terms = sorted({t for k in keys for t in self.atoms[k].terms if t[0] == "count"}, key=repr)
        mesh = np.meshgrid(*[self.count_range(t) for t in terms], indexing="ij")
        grid = {t: m.ravel() for t, m in zip(terms, mesh)}
        n = mesh[0].size
        truth = []
        for k in keys:
            va, vb = (grid[t] if t[0] == "count" else t[1] for t in self.atoms[k].terms)
            truth.append(np.broadcast_to(np.asarray((va == vb) if k[1] == "=" else (va > vb), bool), (n,)))
        return terms, grid, truth

    def _closed_count(self, key, facts: list, some, counted: set):
        """An x-free count atom under domain facts: one indicator variable per value of each
        count term (exactly one true), linked to the E variables (a count over S of an
        x-free value is ≥ 1 iff some object has the value).  Appends the facts of count
        terms not in ``counted`` yet."""
        terms, grid, truth = self._count_table([key])
        indicator = {}
        for t in terms:
            by_value = {int(v): sat.var(("V", t, int(v))) for v in self.count_range(t)}
            indicator[t] = by_value
            if t not in counted:
                counted.add(t)
                options = list(by_value.values())
                facts.append(sat.or_(*options))
                facts.extend(sat.or_(sat.not_(a), sat.not_(b)) for a, b in itertools.combinations(options, 2))
                if t[1][2] == ("var", "S") and not uses_x(t[2]):
                    facts.append(sat.iff(sat.not_(by_value[0]), some(self.table.own_equals(t[1][1], t[2]))))
        return sat.or_(*[sat.and_(*[indicator[t][int(grid[t][i])] for t in terms]) for i in np.flatnonzero(truth[0])])

    def _non_x_set_facts(self, forms, exists, minterms) -> list:
        """Facts linking a set quantifier over S−x with an x-free value to the E variables."""
        facts, seen = [], set()
        for form in forms:
            for key in form.atoms:
                atom = self.atoms[key]
                if key in seen or atom.kind != "setq" or atom.terms[0][2] != ("var", "non-x-S") \
                        or uses_x(atom.terms[1]):
                    continue
                seen.add(key)
                own = self.table.own_equals(atom.terms[0][1], atom.terms[1])
                have = [exists[i] for i, m in enumerate(minterms) if m[own]]
                lack = [exists[i] for i, m in enumerate(minterms) if not m[own]]
                for e, m in zip(exists, minterms):
                    if atom.op == "exists":
                        if m[key]:  # another object has the value
                            facts.append(sat.or_(sat.not_(e), sat.or_(*have)))
                        elif not m[own]:  # nobody has it
                            facts.append(sat.or_(sat.not_(e), sat.not_(sat.or_(*have))))
                        else:  # only x has it: no other minterm with the value occurs
                            facts.append(sat.or_(sat.not_(e), sat.and_(*[sat.not_(h) for h in have if h is not e])))
                    elif m[key]:  # all(P(S−x) = c): S−x is not empty and every other object has c
                        facts.append(sat.or_(sat.not_(e), sat.or_(*have)))
                        facts.append(sat.or_(sat.not_(e), sat.and_(*[sat.not_(h) for h in lack if h is not e])))
        return facts

    # ----------------------------------------------------------------- display
    def skeleton(self, program, letters: dict) -> str:
        """The boolean structure of a program over lettered atoms, e.g. ``∃x: A ∧ ¬B``.

        ``letters`` maps atom keys to letters; new atoms get the next letters (A, B, ...,
        Z, AA, ...) and are added to it, so one dict letters several programs alike.
        Bodies of at most 6 atoms are simplified (sympy ``simplify_logic``, DNF).  A program
        the prover does not reason about raises
        :class:`~bayes_concepts.synonyms.atoms.NotProvable`.
        """
        form = self.form(program)
        for key in form.atoms:
            letters.setdefault(key, _letter(len(letters)))
        expr = sat.to_sympy(form.body, lambda key: sympy.Symbol(letters[key]))
        simplified = simplify_logic(expr, form="dnf") if len(form.atoms) <= 6 else expr
        text = str(simplified).replace("&", "∧").replace("|", "∨").replace("~", "¬")
        return {"exists": "∃x: ", "forall": "∀x: ", None: ""}[form.quantifier] + text

    def atom_text(self, key) -> str:
        """A readable form of an atom key, e.g. ``locationX(x) > 6``."""
        return self.table.atom_text(key)


def _unique_rows(truth: list) -> list:
    """The distinct columns of the stacked truth rows, as tuples of bool (sorted)."""
    return [tuple(bool(v) for v in row) for row in np.unique(np.vstack(truth).T, axis=0)]


def _letter(i: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA, ..."""
    text = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        text = chr(65 + r) + text
    return text


def prove_equivalent(program_a, program_b, grammar: Grammar | None = None, *, level: str = "domain",
                     max_objects: int | None = None, max_minterms: int = MAX_MINTERMS) -> Verdict:
    """Try to prove two programs equivalent on every valid scene.

    Parameters
    ----------
    program_a, program_b : str or Program
        Postfix programs.
    grammar : Grammar, optional
        Their grammar (default: CURI's).
    level : {"propositional", "first-order", "domain"}
        The strongest level to try (each includes the ones before; see the module
        docstring).
    max_objects : int, optional
        The most objects of a valid scene (default: the grammar's schema's).
    max_minterms : int
        First-order/domain comparisons with more minterms are given up (``too_large``).

    Returns
    -------
    Verdict
        ``proved``, the weakest ``level`` that proves it, ``too_large``, and
        ``not_provable`` (the relational operators that keep the prover from trying).  Not
        proved does not mean not equivalent (see
        :func:`~bayes_concepts.synonyms.find_counterexample`).

    Examples
    --------
    >>> prove_equivalent("x locationX? 6 > exists=", "x locationX? 7 = x locationX? 8 = or exists=").level
    'domain'
    """
    prover = EquivalenceProver(grammar, max_objects=max_objects, max_minterms=max_minterms)
    return prover.verdict(program_a, program_b, level)
