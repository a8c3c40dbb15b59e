"""Which synonym classes are logically equivalent programs, and which coincide only on
the scene bank?  (CURI Appendix B.6)

A *synonym class* of a space is a set of concepts with identical truth values on
the space's scene bank.  CURI notes that some synonyms are "truly synonymous"
(``A > B`` is ``B < A``) while others are synonymous only "in context of the image
distribution" (e.g. a location is never greater than 8).  For every class with two
or more members this script tries to *prove* its members equivalent and, failing
that, looks for a *counterexample scene* on which two members differ.

Method (all proofs are sound: a pair reported equivalent is equivalent on every
valid scene -- 1 to ``max_objects`` objects, any attribute values):

1. **propositional** (CURI's "truly synonymous"; the method of the brief).  A
   program is a quantifier (∃x∈S, ∀x∈S, or none for a collapsed x-free program)
   over a boolean combination of *atoms*: the maximal non-boolean sub-programs
   (comparisons ``=``/``>`` and set quantifiers ``any``/``all``).  Atoms are
   canonicalised: ``a = b`` and ``b = a`` are one atom, and a comparison ``c > t`` of
   a constant with a term is written ``¬(t > c−1)`` (``3 > locationY(x)`` is
   ``¬(locationY(x) > 2)``; every ordered type -- location, size, count -- is
   discrete).  Each atom becomes a sympy symbol and the program body a
   :mod:`sympy.logic.boolalg` expression.  Two programs with the
   same quantifier are equivalent if ``Not(Equivalent(b1, b2))`` is unsatisfiable
   (:func:`sympy.logic.inference.satisfiable`).  This proves commutations
   (``x color? red = S shape? cube exists= and`` ~ ``S shape? cube exists= x color? red = and``),
   double negations, De Morgan, absorption, idempotence and the like.
2. **first-order** (still pure logic).  The quantifier is taken into account:
   ``∃x: F(x)`` is ``⋁_m (E_m ∧ F|m)`` and ``∀x: F(x)`` is ``⋀_m (E_m → F|m)``, where
   ``m`` runs over the truth assignments (minterms) of the pair's atoms that mention
   ``x`` and ``E_m`` is a fresh symbol "some object of S satisfies m"; a set
   quantifier over S with a constant value is the same thing (``any(color(S) = red)``
   is ``∃x: color(x) = red``; ``all`` is ∀); S is never empty (⋁ E_m).  This proves
   e.g. ``all(locationX(S) = 7)`` ~ ``∀x∈S: locationX(x) = 7`` and pulling x-free
   conjuncts out of a quantifier.
3. **domain facts** (CURI's "synonymous in context", as far as the facts are
   schema facts, true of every valid scene).  Atoms about ``x`` alone (a property of
   x against a constant or another property of x) are interpreted on all 6,144
   object types (colour × shape × material × size × x × y), so each object has
   exactly one value per attribute, ``size > large`` and ``location > 8`` are false,
   ``size > small`` is ``size = large``, ``3 > location`` is ``location ∈ {1, 2}``,
   minterms that no object type realises are dropped; counts are integers in
   their range (over S: 0..max_objects; over S−x: 0..max_objects−1; ``count(P(S) =
   P(x))``: 1..max_objects) and ``count(P(S) = c) ≥ 1`` iff some object has ``P = c``.

   A set quantifier over S−x with a constant is linked to the same symbols
   (``any(P(S−x) = c)`` means some *other* object has ``P = c``; ``all(P(S−x) = c)``
   that there is another object and every other object has it).

Not modelled (so "not provably equivalent by this method" is only a **lower bound
on logical equivalence**): relations between two objects -- set quantifiers and
counts whose value depends on x, such as ``all(color(S−x) = color(x))`` ("every object
shares x's colour") or ``count(shape(S) = shape(x))``, are opaque propositions about x;
counts beyond "at least one" (``count = 2``, sums of counts); the number of objects
in a scene; anything else arithmetic.  The **counterexample search** closes the gap from the
other side: every member of every class is executed on a fresh check bank
(``--check-scenes`` scenes: uniform scenes with 1..max_objects objects, plus
"clumped" scenes whose objects share few values, so rare coincidences such as
"all objects in column 8" occur); two members that differ on a check scene are
*not* logically equivalent -- they coincide only on the space's scene
distribution -- and the scene is reported (re-checked with the slow reference
interpreter).  A class is then

* ``propositional`` / ``first-order`` / ``domain facts``: all members provably
  equivalent, at the weakest level that suffices;
* ``empirical (refuted)``: a counterexample scene separates some members;
* ``empirical (undecided)``: neither proved nor refuted.

Run::

    .venv/bin/python analyses/synonyms.py --space spaces/demo

Outputs in ``--out`` (default ``analyses/out/synonyms/``): ``synonyms.md`` (summary,
method, examples), ``synonyms.csv`` (one row per class), ``synonym_members.csv``
(one row per concept), figure ``synonym_status`` (class sizes by status) as PNG +
PDF.  ``--episodes`` is accepted for uniformity with the other scripts and unused.
"""
from __future__ import annotations

import itertools
import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pandas as pd
import sympy
from matplotlib.figure import Figure
from sympy.logic.boolalg import And, BooleanFalse, BooleanTrue, Equivalent, Not, Or, simplify_logic
from sympy.logic.inference import satisfiable

from analyses import _common as C

NAME = "synonyms"
LEVELS = ("propositional", "first-order", "domain")
STATUS = {"propositional": "propositional", "first-order": "first-order", "domain": "domain facts",
          "refuted": "empirical (refuted)", "undecided": "empirical (undecided)"}
STATUS_ORDER = list(STATUS.values())
#: the largest number of minterms (x-atom truth assignments) a pair comparison may expand
MAX_MINTERMS = 4096


# ===================================================================== the prover
class TooLarge(Exception):
    """A comparison whose quantifier expansion exceeds MAX_MINTERMS."""


@dataclass(frozen=True)
class Atom:
    """A canonical atom.  ``kind``: ``own`` (only properties of x and constants),
    ``count`` (a comparison involving counts), ``setq`` (a set quantifier), ``const``
    (two constants).  ``uses_x``: mentions x or S−x.  ``own_of``: for a set quantifier
    over S with a constant value, the own atom it quantifies (``P(x) = c``)."""

    key: tuple
    kind: str
    uses_x: bool
    op: str = ""
    terms: tuple = ()
    own_of: tuple | None = None
    quant: str = ""


@dataclass
class Form:
    """A program as (quantifier, body IR).  IR: ("and", a, b) | ("or", a, b) | ("not", a) |
    ("atom", key)."""

    quantifier: str | None
    body: tuple
    atoms: tuple = field(default_factory=tuple)
    canon: tuple = ()
    expr: object = None


def _uses_x(t) -> bool:
    if isinstance(t, tuple):
        if t[:1] == ("var",) and t[1] in ("x", "non-x-S"):
            return True
        return any(_uses_x(c) for c in t)
    return False


class Prover:
    """Equivalence of CURI programs at three levels (see the module docstring)."""

    def __init__(self, grammar, max_objects: int = 5, max_minterms: int = MAX_MINTERMS):
        self.grammar = grammar
        self.max_objects = int(max_objects)
        self.max_minterms = int(max_minterms)
        schema = grammar.schema
        self.attr_names = [a.name for a in schema.attributes]
        sizes = [a.n_values for a in schema.attributes]
        grids = np.indices(sizes).reshape(len(sizes), -1)
        #: codes of every object type, per attribute: int (n_types,)
        self.type_codes = {name: grids[i] for i, name in enumerate(self.attr_names)}
        self.n_types = grids.shape[1]
        self.atoms: dict = {}
        self._symbols: dict = {}
        self._forms: dict = {}
        self._masks: dict = {}

    # ------------------------------------------------------------ canonical atoms
    def _term(self, node):
        k = node.kind
        if k == "constant":
            if node.type == "NUM":
                return ("num", int(node.op))
            return ("const", node.type, self.grammar.value_types[node.type].values.index(node.op))
        if k == "variable":
            return ("var", node.op)
        if k == "property":
            return ("prop", self.grammar.properties[node.op].attribute, self._term(node.children[0]))
        if k == "count":
            return ("count", self._term(node.children[0]), self._term(node.children[1]))
        raise ValueError(f"not a value term: {node.op} ({k})")

    def _cmp_atom(self, op, a, b) -> tuple:
        if op == "=":
            a, b = sorted((a, b), key=repr)
        key = ("cmp", op, a, b)
        if key not in self.atoms:
            if a[0] in ("num", "const") and b[0] in ("num", "const"):
                kind = "const"
            elif a[0] == "count" or b[0] == "count":
                kind = "count"
            else:
                kind = "own"  # properties of x and constants (a property of S is a list: not comparable)
            self.atoms[key] = Atom(key, kind, _uses_x(key), op, (a, b))
        return key

    def _atom(self, node):
        """The canonical atom of a comparison or set quantifier: ``("atom", key)``, or
        ``("not", ("atom", key))`` for ``c > t`` with a constant c, which is normalised to
        ``¬(t > c−1)`` (every ordered type is discrete: locations, sizes, counts)."""
        if node.kind == "compare":
            a, b = self._term(node.children[0]), self._term(node.children[1])
            if node.op == ">" and a[0] in ("num", "const") and b[0] not in ("num", "const"):
                below = ("num", a[1] - 1) if a[0] == "num" else ("const", a[1], a[2] - 1)
                return ("not", ("atom", self._cmp_atom(">", b, below)))
            return ("atom", self._cmp_atom(node.op, a, b))
        if node.kind == "set_quantifier":
            lst, val = self._term(node.children[0]), self._term(node.children[1])
            q = "exists" if node.op == "exists=" else "forall"
            key = ("setq", q, lst, val)
            if key not in self.atoms:
                own = None
                if lst[2] == ("var", "S") and not _uses_x(val):
                    a, b = sorted((("prop", lst[1], ("var", "x")), val), key=repr)
                    own = ("cmp", "=", a, b)
                    if own not in self.atoms:
                        self.atoms[own] = Atom(own, "own", True, "=", (a, b))
                self.atoms[key] = Atom(key, "setq", _uses_x(key), q, (lst, val), own_of=own, quant=q)
            return ("atom", key)
        raise ValueError(f"not an atom: {node.op} ({node.kind})")

    def _ir(self, node):
        if node.kind == "logic":
            if node.op == "not":
                return ("not", self._ir(node.children[0]))
            return (node.op, self._ir(node.children[0]), self._ir(node.children[1]))
        return self._atom(node)

    def form(self, program) -> Form:
        """The (cached) canonical form of a program (postfix string or Program)."""
        from bayes_concepts.lot.program import Program
        text = program if isinstance(program, str) else program.postfix
        if text not in self._forms:
            p = Program.parse(text, self.grammar)
            q = p.quantifier
            body = self._ir(p.body)
            atoms = tuple(dict.fromkeys(_ir_atoms(body)))
            self._forms[text] = Form(q, body, atoms, _canon(body))
        return self._forms[text]

    def symbol(self, key):
        if key not in self._symbols:
            self._symbols[key] = sympy.Symbol(f"A{len(self._symbols)}")
        return self._symbols[key]

    # -------------------------------------------------------------- level 1
    def body_expr(self, form: Form):
        """The body as a sympy boolean expression over one symbol per canonical atom (cached)."""
        if form.expr is None:
            form.expr = _to_sympy(form.body, lambda key: self.symbol(key))
        return form.expr

    def propositional(self, p1, p2) -> bool:
        """Same quantifier and ``Equivalent(body1, body2)`` valid (sympy).  Bodies that are equal
        up to commutativity, associativity, idempotence and double negation (a syntactic normal
        form) are accepted without calling the solver."""
        f1, f2 = self.form(p1), self.form(p2)
        if f1.quantifier != f2.quantifier:
            return False
        if f1.canon == f2.canon:
            return True
        return is_valid(Equivalent(self.body_expr(f1), self.body_expr(f2)))

    # ---------------------------------------------------------- levels 2 and 3
    def _own_mask(self, key) -> np.ndarray:
        if key not in self._masks:
            a, b = self.atoms[key].terms
            va, vb = self._own_value(a), self._own_value(b)
            m = (va == vb) if key[1] == "=" else (va > vb)
            self._masks[key] = np.broadcast_to(np.asarray(m, bool), (self.n_types,)).copy()
        return self._masks[key]

    def _own_value(self, t):
        if t[0] == "const":
            return t[2]
        if t[0] == "prop" and t[2] == ("var", "x"):
            return self.type_codes[t[1]]
        raise ValueError(f"not an own term: {t}")

    def count_range(self, t) -> np.ndarray:
        """The values a count term can take on a valid scene."""
        _, lst, val = t
        n = self.max_objects
        if lst[2] == ("var", "non-x-S"):
            return np.arange(0, n)
        if val[0] == "prop" and val[1] == lst[1] and val[2] == ("var", "x"):
            return np.arange(1, n + 1)  # x itself is counted
        return np.arange(0, n + 1)

    def _count_value(self, t, grid: dict):
        if t[0] == "num":
            return t[1]
        if t[0] == "count":
            return grid[t]
        raise ValueError(f"not a count/number term: {t}")

    def _count_table(self, keys):
        """(terms, value grid per term, truth of every atom in ``keys`` on the grid): every
        assignment of the atoms' count terms within their ranges."""
        terms = sorted({t for k in keys for t in self.atoms[k].terms if t[0] == "count"}, key=repr)
        mesh = np.meshgrid(*[self.count_range(t) for t in terms], indexing="ij")
        grid = {t: m.ravel() for t, m in zip(terms, mesh)}
        n = mesh[0].size
        truth = []
        for k in keys:
            a, b = self.atoms[k].terms
            va, vb = self._count_value(a, grid), self._count_value(b, grid)
            truth.append(np.broadcast_to(np.asarray((va == vb) if k[1] == "=" else (va > vb), bool), (n,)))
        return terms, grid, truth

    def _groups(self, keys, domain: bool) -> list:
        """Split the x-atoms ``keys`` into independent groups, each with its feasible patterns:
        [(keys, [pattern, ...])].  Without domain facts every atom is its own free group."""
        if not domain:
            return [((k,), [(False,), (True,)]) for k in keys]
        own = [k for k in keys if self.atoms[k].kind == "own"]
        count = [k for k in keys if self.atoms[k].kind == "count"]
        rest = [k for k in keys if k not in own and k not in count]
        groups = []
        if own:
            mat = np.vstack([self._own_mask(k) for k in own])
            pats = np.unique(mat.T, axis=0)
            groups.append((tuple(own), [tuple(bool(v) for v in row) for row in pats]))
        for ks in _components(count, lambda k: [t for t in self.atoms[k].terms if t[0] == "count"]):
            _, _, truth = self._count_table(ks)
            pats = np.unique(np.vstack(truth).T, axis=0)
            groups.append((tuple(ks), [tuple(bool(v) for v in row) for row in pats]))
        for k in rest:
            groups.append(((k,), [(False,), (True,)]))
        return groups

    def _minterms(self, keys, domain: bool) -> list:
        groups = self._groups(keys, domain)
        total = 1
        for _, pats in groups:
            total *= len(pats)
            if total > self.max_minterms:
                raise TooLarge(total)
        out = []
        for combo in itertools.product(*[pats for _, pats in groups]):
            m = {}
            for (ks, _), pat in zip(groups, combo):
                m.update(zip(ks, pat))
            out.append(m)
        return out

    def _own_eq(self, attr, val):
        """The own atom ``P(x) = val`` (registered)."""
        a, b = sorted((("prop", attr, ("var", "x")), val), key=repr)
        key = ("cmp", "=", a, b)
        if key not in self.atoms:
            self.atoms[key] = Atom(key, "own", True, "=", (a, b))
        return key

    def _induced(self, key, domain: bool):
        """Own atoms an atom is linked to: ``P(x) = c`` for a set quantifier of P over S (or,
        with domain facts, over S−x) with a constant c, and for a count of P over S against c."""
        a = self.atoms[key]
        if a.kind == "setq":
            lst, val = a.terms
            if a.own_of is not None:
                return [a.own_of]
            if domain and lst[2] == ("var", "non-x-S") and not _uses_x(val):
                return [self._own_eq(lst[1], val)]
        if domain and a.kind == "count":
            return [self._own_eq(t[1][1], t[2]) for t in a.terms
                    if t[0] == "count" and t[1][2] == ("var", "S") and not _uses_x(t[2])]
        return []

    def _universe(self, forms, domain: bool) -> list:
        keys = []
        for f in forms:
            for k in f.atoms:
                if self.atoms[k].uses_x:
                    keys.append(k)
                keys.extend(self._induced(k, domain))
        return list(dict.fromkeys(keys))

    def equivalent(self, p1, p2, level: str) -> bool:
        """Whether p1 and p2 are provably equivalent at ``level`` (``propositional``,
        ``first-order`` or ``domain``; each level includes the ones before).  Raises
        :class:`TooLarge` when the quantifier expansion is too big."""
        if level not in LEVELS:
            raise ValueError(f"unknown level {level!r}")
        if self.propositional(p1, p2):
            return True
        if level == "propositional":
            return False
        domain = level == "domain"
        self._fact_done = set()
        forms = [self.form(p1), self.form(p2)]
        minterms = self._minterms(self._universe(forms, domain), domain)
        E = [("v", ("E", j)) for j in range(len(minterms))]
        facts = [b_or(*E)]  # S is never empty

        def some(own, value=True):  # "some object has own == value"
            return b_or(*[e for e, m in zip(E, minterms) if m[own] == value])

        if domain:
            self._sx_facts(forms, E, minterms, facts)
        closed_cache = {}

        def closed(key):
            if key in closed_cache:
                return closed_cache[key]
            a = self.atoms[key]
            if a.kind == "setq" and a.own_of is not None:  # any / all over S with a constant
                out = some(a.own_of) if a.quant == "exists" else b_not(some(a.own_of, False))
            elif domain and a.kind == "const":
                va, vb = (t[1] if t[0] == "num" else t[2] for t in a.terms)
                out = bool(va == vb if a.op == "=" else va > vb)
            elif domain and a.kind == "count":
                out = self._closed_count(key, facts, some)
            else:
                out = ("v", key)
            closed_cache[key] = out
            return out

        def program(f):
            if f.quantifier is None:
                return _to_ir(f.body, closed)
            parts = []
            for e, m in zip(E, minterms):
                body = _to_ir(f.body, lambda key: m[key] if key in m else closed(key))
                parts.append(b_and(e, body) if f.quantifier == "exists" else b_or(b_not(e), body))
            return b_or(*parts) if f.quantifier == "exists" else b_and(*parts)

        g1, g2 = program(forms[0]), program(forms[1])
        return not solve(b_and(*facts, b_not(b_iff(g1, g2))))

    def _sx_facts(self, forms, E, minterms, facts):
        """Domain facts linking a set quantifier over S−x with a constant to the E symbols."""
        seen = set()
        for f in forms:
            for k in f.atoms:
                a = self.atoms[k]
                if k in seen or a.kind != "setq" or a.terms[0][2] != ("var", "non-x-S") or _uses_x(a.terms[1]):
                    continue
                seen.add(k)
                own = self._own_eq(a.terms[0][1], a.terms[1])
                has = [E[i] for i, mm in enumerate(minterms) if mm[own]]
                hasnt = [E[i] for i, mm in enumerate(minterms) if not mm[own]]
                for j, m in enumerate(minterms):
                    e = E[j]
                    if a.quant == "exists":
                        if m[k]:  # another object has the value
                            facts.append(b_or(b_not(e), b_or(*has)))
                        elif not m[own]:  # nobody has it
                            facts.append(b_or(b_not(e), b_not(b_or(*has))))
                        else:  # only x has it: no other minterm with the value exists
                            facts.append(b_or(b_not(e), b_and(*[b_not(x) for x in has if x is not e])))
                    elif m[k]:  # all(P(S−x) = c): S−x is not empty and every other object has c
                        facts.append(b_or(b_not(e), b_or(*has)))
                        facts.append(b_or(b_not(e), b_and(*[b_not(x) for x in hasnt if x is not e])))

    def _closed_count(self, key, facts, some):
        """An x-free count atom under domain facts: value indicators per count term (exactly
        one value in range), linked to the E symbols (count >= 1 iff some object has the value)."""
        terms, grid, truth = self._count_table([key])
        ind = {}
        for t in terms:
            vs = {int(v): ("v", ("V", t, int(v))) for v in self.count_range(t)}
            ind[t] = vs
            if ("counted", t) not in self._fact_done:
                self._fact_done.add(("counted", t))
                syms = list(vs.values())
                facts.append(b_or(*syms))
                facts.extend(b_or(b_not(x), b_not(y)) for x, y in itertools.combinations(syms, 2))
                if t[1][2] == ("var", "S") and not _uses_x(t[2]):
                    facts.append(b_iff(b_not(vs[0]), some(self._own_eq(t[1][1], t[2]))))
        return b_or(*[b_and(*[ind[t][int(grid[t][i])] for t in terms]) for i in np.flatnonzero(truth[0])])

    # ---------------------------------------------------------------- display
    def skeleton(self, program, letters: dict) -> str:
        """The simplified boolean structure of a program over lettered atoms, e.g. ``∃x: A ∧ B``."""
        f = self.form(program)
        for k in f.atoms:
            letters.setdefault(k, _letter(len(letters)))
        expr = _to_sympy(f.body, lambda key: sympy.Symbol(letters[key]))
        simp = simplify_logic(expr, form="dnf") if len(f.atoms) <= 6 else expr
        text = str(simp).replace("&", "∧").replace("|", "∨").replace("~", "¬")
        q = {"exists": "∃x: ", "forall": "∀x: ", None: ""}[f.quantifier]
        return q + text

    def atom_text(self, key) -> str:
        return _atom_text(key, self.grammar)


def _letter(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(65 + r) + s
    return s


def _canon(ir):
    """A syntactic normal form of a body: and/or flattened, operands deduplicated and sorted,
    double negations removed."""
    op = ir[0]
    if op == "atom":
        return ir
    if op == "not":
        c = _canon(ir[1])
        return c[1] if c[0] == "not" else ("not", c)
    kids = []
    for c in (_canon(ir[1]), _canon(ir[2])):
        kids.extend(c[1] if c[0] == op else [c])
    kids = sorted(set(kids), key=repr)
    return kids[0] if len(kids) == 1 else (op, tuple(kids))


def _ir_atoms(ir):
    if ir[0] == "atom":
        yield ir[1]
    else:
        for c in ir[1:]:
            yield from _ir_atoms(c)


def _to_sympy(ir, leaf):
    op = ir[0]
    if op == "atom":
        return leaf(ir[1])
    if op == "not":
        return Not(_to_sympy(ir[1], leaf))
    a, b = _to_sympy(ir[1], leaf), _to_sympy(ir[2], leaf)
    return And(a, b) if op == "and" else Or(a, b)


def _term_text(t, grammar) -> str:
    if t[0] == "num":
        return str(t[1])
    if t[0] == "const":
        values = grammar.value_types[t[1]].values
        if t[2] < 0:  # one below the smallest value (from normalising c > t)
            return str(int(values[0]) - 1) if str(values[0]).isdigit() else f"(below {values[0]})"
        return str(values[t[2]])
    if t[0] == "var":
        return {"x": "x", "S": "S", "non-x-S": "S−x"}[t[1]]
    if t[0] == "prop":
        name = next(p.token for p in grammar.properties.values() if p.attribute == t[1]).rstrip("?")
        return f"{name}({_term_text(t[2], grammar)})"
    if t[0] == "count":
        return f"count({_term_text(t[1], grammar)} = {_term_text(t[2], grammar)})"
    return repr(t)


def _atom_text(key, grammar) -> str:
    if key[0] == "cmp":
        return f"{_term_text(key[2], grammar)} {key[1]} {_term_text(key[3], grammar)}"
    q = "any" if key[1] == "exists" else "all"
    return f"{q}({_term_text(key[2], grammar)} = {_term_text(key[3], grammar)})"


# ----------------------------------------------------------- satisfiability
def _satisfiable(expr) -> bool:
    """Satisfiability of a sympy boolean expression with sympy's DPLL solver on a Tseitin
    encoding (sympy's own CNF conversion distributes and can blow up exponentially)."""
    return solve(_from_sympy(expr))


def is_valid(expr) -> bool:
    """``expr`` (sympy) is a tautology: its negation is unsatisfiable."""
    return not _satisfiable(Not(expr))


def _from_sympy(e):
    if isinstance(e, BooleanTrue):
        return True
    if isinstance(e, BooleanFalse):
        return False
    if e.is_Symbol:
        return ("v", e)
    if isinstance(e, Not):
        return b_not(_from_sympy(e.args[0]))
    if isinstance(e, And):
        return b_and(*[_from_sympy(a) for a in e.args])
    if isinstance(e, Or):
        return b_or(*[_from_sympy(a) for a in e.args])
    if isinstance(e, Equivalent):
        args = [_from_sympy(a) for a in e.args]
        return b_and(*[b_iff(args[0], x) for x in args[1:]])
    raise TypeError(f"unexpected boolean node {type(e).__name__}")


# A small boolean IR for the large formulas of the quantifier levels (building them as sympy
# expressions costs most of the time): True / False, ("v", name), ("not", x),
# ("and", (x, ...)), ("or", (x, ...)), ("iff", x, y); constructors fold constants.
def b_not(x):
    if x is True or x is False:
        return not x
    return x[1] if x[0] == "not" else ("not", x)


def _nary(op, xs, unit):
    out = []
    for x in xs:
        if x is (not unit):
            return not unit
        if x is unit:
            continue
        if x[0] == op:
            out.extend(x[1])
        else:
            out.append(x)
    if not out:
        return unit
    return out[0] if len(out) == 1 else (op, tuple(out))


def b_and(*xs):
    return _nary("and", xs, True)


def b_or(*xs):
    return _nary("or", xs, False)


def b_iff(a, b):
    if a is True:
        return b
    if a is False:
        return b_not(b)
    if b is True or b is False:
        return b_iff(b, a)
    return ("iff", a, b)


def _to_ir(ir, leaf):
    """A program body (atom IR) as a boolean IR formula, atoms mapped by ``leaf``."""
    op = ir[0]
    if op == "atom":
        return leaf(ir[1])
    if op == "not":
        return b_not(_to_ir(ir[1], leaf))
    a, b = _to_ir(ir[1], leaf), _to_ir(ir[2], leaf)
    return b_and(a, b) if op == "and" else b_or(a, b)


def solve(formula) -> bool:
    """Satisfiability of a boolean IR formula: Tseitin-encode it into integer clauses and
    run sympy's DPLL solver (:func:`sympy.logic.inference.satisfiable`, ``dpll2``)."""
    if formula is True or formula is False:
        return formula
    from sympy.assumptions.cnf import EncodedCNF
    var_of, clauses, memo = {}, [], {}

    def new_var(name=None):
        if name is None:
            name = ("aux", len(var_of))
        if name not in var_of:
            var_of[name] = len(var_of) + 1
        return var_of[name]

    def lit(x) -> int:
        if x is True or x is False:  # only inside the root's children after folding: never
            v = new_var(("const", x))
            clauses.append({v})
            return v if x else -v
        op = x[0]
        if op == "v":
            return new_var(("var", x[1]))
        if op == "not":
            return -lit(x[1])
        k = id(x)
        if k in memo:
            return memo[k][0]
        if op in ("and", "or"):
            ls = [lit(c) for c in x[1]]
            g = new_var()
            if op == "and":
                clauses.extend({-g, v} for v in ls)
                clauses.append({g, *(-v for v in ls)})
            else:
                clauses.extend({g, -v} for v in ls)
                clauses.append({-g, *ls})
        elif op == "iff":
            a, b = lit(x[1]), lit(x[2])
            g = new_var()
            clauses.extend([{-g, -a, b}, {-g, a, -b}, {g, a, b}, {g, -a, -b}])
        else:
            raise ValueError(f"unknown boolean IR node {op!r}")
        memo[k] = (g, x)  # keep x alive so its id stays unique
        return g

    clauses.append({lit(formula)})
    syms = [sympy.Symbol(f"_b{i}") for i in range(1, len(var_of) + 1)]
    enc = EncodedCNF(clauses, dict(zip(syms, range(1, len(syms) + 1))))
    return satisfiable(enc, algorithm="dpll2") is not False


def _components(items, links) -> list:
    """Connected components of ``items`` where two items sharing any of ``links(item)`` connect."""
    parent = {i: i for i in items}

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    first = {}
    for i in items:
        for t in links(i):
            if t in first:
                parent[find(i)] = find(first[t])
            else:
                first[t] = i
    comp = defaultdict(list)
    for i in items:
        comp[find(i)].append(i)
    return list(comp.values())


# ================================================================ check bank
def check_bank(schema, n: int, seed: int):
    """A counterexample bank: half uniform scenes with 1..max_objects objects, half
    "clumped" scenes whose objects draw each attribute from one or two values (so
    coincidences that are rare under uniform sampling -- all objects alike, all in one
    column -- occur often).  Returns (SceneBank, codes)."""
    from bayes_concepts.scenes import SceneBank, SceneSchema
    sch = SceneSchema(schema.attributes, max_objects=schema.max_objects, min_objects=1, sample_min_objects=1)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 606]))
    S, A = sch.max_objects, len(sch.attributes)
    sizes = np.array([a.n_values for a in sch.attributes])
    k = rng.integers(1, S + 1, size=n)
    codes = (rng.random((n, S, A)) * sizes).astype(np.int8)
    clumped = np.arange(n) >= n // 2
    # clumped scenes: per (scene, attribute) a pool of 1 or 2 values
    pool = (rng.random((n, 2, A)) * sizes).astype(np.int8)
    use_second = rng.random((n, S, A)) < np.where(rng.random((n, 1, A)) < 0.5, 0.0, 0.5)
    clump = np.where(use_second, pool[:, 1:2, :], pool[:, 0:1, :])
    codes[clumped] = clump[clumped]
    codes[np.arange(S)[None, :] >= k[:, None]] = -1
    return SceneBank.from_codes(codes, sch), codes, sch


# ================================================================== analysis
CLASS_COLUMNS = ["class", "size", "status", "propositional", "first_order", "domain", "refuted", "refuted_multi_object",
                 "groups_propositional", "groups_first_order", "groups_domain", "groups_check_bank", "too_large",
                 "representative", "readable", "concepts", "count", "counterexample"]
MEMBER_COLUMNS = ["concept", "class", "program", "readable", "length", "group_propositional", "group_first_order",
                  "group_domain", "group_check_bank"]

def analyse(space, check_scenes: int = 200_000, seed: int = 0, max_minterms: int = MAX_MINTERMS,
            progress: bool = False, verify: bool = False) -> tuple:
    """Classify every synonym class with >= 2 members.  Returns (classes, members, info): a
    DataFrame with one row per class, one with one row per member concept, and a dict with
    ``violations`` (proofs contradicted by a check scene, or executor/interpreter
    disagreements: must be 0), ``check_scenes`` and the ``prover``.  Pairs that differ on the
    check bank cannot be equivalent and are not tried, unless ``verify`` (a soundness check
    of the prover: it tries them too and counts every proof of such a pair as a violation)."""
    from bayes_concepts.engine import evaluate_programs
    from bayes_concepts.engine.interpreter import evaluate
    from bayes_concepts.scenes import codes_to_scene
    from bayes_concepts.scenes.bank import pack_bits, unpack_bits
    cls = np.asarray(space.synonym_classes)
    sizes = Counter(cls.tolist())
    multi = sorted(c for c, n in sizes.items() if n >= 2)
    member_ids = np.flatnonzero(np.isin(cls, multi))
    prover = Prover(space.grammar, space.schema.max_objects, max_minterms)

    # counterexample search on a fresh check bank
    bank, codes, sch = check_bank(space.schema, check_scenes, seed)
    sig = evaluate_programs([space.programs[i] for i in member_ids], bank, space.grammar) \
        if len(member_ids) else np.zeros((0, 1), np.uint64)
    row_of = {int(i): r for r, i in enumerate(member_ids)}
    # scenes with as many objects as the space's sampler draws at least (CURI: 2)
    n_obj = (codes[:, :, 0] >= 0).sum(axis=1)
    multi_scene = n_obj >= space.schema.sample_min_objects
    multi_mask = pack_bits(multi_scene)

    from tqdm.auto import tqdm
    class_rows, member_rows = [], []
    violations = 0
    for c in tqdm(multi, disable=not progress, desc="synonym classes", leave=False):
        ids = [int(i) for i in np.flatnonzero(cls == c)]
        progs = [space.programs[i] for i in ids]
        # check-bank groups: members with identical truth values on the check bank
        keys = [sig[row_of[i]].tobytes() for i in ids]
        check_group = [list(dict.fromkeys(keys)).index(k) for k in keys]
        keys_multi = [(sig[row_of[i]] & multi_mask).tobytes() for i in ids]
        n_check_multi = len(set(keys_multi))
        # proof groups, level by level (each level merges the previous level's groups)
        reps, group = [], [-1] * len(ids)
        for j in range(len(ids)):  # propositional, against group representatives
            for g, r in enumerate(reps):
                if prover.equivalent(progs[r], progs[j], "propositional"):
                    group[j] = g
                    break
            else:
                group[j] = len(reps)
                reps.append(j)
        for j in range(len(ids)):
            if check_group[j] != check_group[reps[group[j]]]:
                violations += 1  # a proof contradicted by a scene: would be a prover bug
        n_groups = {"propositional": len(reps)}
        too_large = 0
        levels_group = {"propositional": list(group)}
        for level in ("first-order", "domain"):
            # merge groups whose representatives are proved equivalent; only pairs that agree
            # on the check bank can be equivalent, so the others are not tried
            parent = list(range(len(reps)))

            def find(a):
                while parent[a] != a:
                    a = parent[a]
                return a
            for a, b in itertools.combinations(range(len(reps)), 2):
                ra, rb = find(a), find(b)
                differ = check_group[reps[ra]] != check_group[reps[rb]]
                if ra == rb or (differ and not verify):
                    continue
                try:
                    if prover.equivalent(progs[reps[ra]], progs[reps[rb]], level):
                        if differ:
                            violations += 1  # a proof contradicted by a scene: a prover bug
                        else:
                            parent[rb] = ra
                except TooLarge:
                    too_large += 1
            root = [find(g) for g in range(len(reps))]
            order = sorted(set(root), key=lambda r: reps[r])  # new groups in order of first member
            group = [order.index(root[group[j]]) for j in range(len(ids))]
            reps = [group.index(g) for g in range(len(order))]
            n_groups[level] = len(reps)
            levels_group[level] = list(group)
        n_check = len(set(check_group))
        if n_groups["propositional"] == 1:
            status = STATUS["propositional"]
        elif n_groups["first-order"] == 1:
            status = STATUS["first-order"]
        elif n_groups["domain"] == 1:
            status = STATUS["domain"]
        elif n_check > 1:
            status = STATUS["refuted"]
        else:
            status = STATUS["undecided"]
        cex = None
        if n_check > 1:
            # a pair of members and a scene separating them; prefer a scene with as many objects as
            # the space's sampler draws (a scene of the space's distribution's support)
            a = 0
            bits_a = unpack_bits(sig[row_of[ids[a]]], bank.n_scenes)
            s = b = None
            for j in range(len(ids)):
                if check_group[j] == check_group[a]:
                    continue
                diff = np.flatnonzero(bits_a != unpack_bits(sig[row_of[ids[j]]], bank.n_scenes))
                multi = diff[multi_scene[diff]]
                if b is None or len(multi):
                    b, s = j, int(multi[0] if len(multi) else diff[0])
                if len(multi):
                    break
            scene = codes_to_scene(codes[s], sch)
            truth = [bool(evaluate(p, scene, space.grammar)) for p in progs]
            if truth[a] == truth[b]:  # the executor and the reference interpreter disagree
                violations += 1
            cex = {"scene": scene, "first": ids[a], "second": ids[b], "true_for": [i for i, t in zip(ids, truth) if t],
                   "false_for": [i for i, t in zip(ids, truth) if not t]}
        class_rows.append({
            "class": int(c), "size": len(ids), "status": status,
            "propositional": n_groups["propositional"] == 1, "first_order": n_groups["first-order"] == 1,
            "domain": n_groups["domain"] == 1, "refuted": n_check > 1,
            "refuted_multi_object": n_check_multi > 1,
            "groups_propositional": n_groups["propositional"], "groups_first_order": n_groups["first-order"],
            "groups_domain": n_groups["domain"], "groups_check_bank": n_check, "too_large": too_large,
            "representative": progs[0], "readable": space.program(ids[0]).readable,
            "concepts": " ".join(map(str, ids)), "count": int(space.counts[ids[0]]),
            "counterexample": json.dumps(cex) if cex else ""})
        for j, i in enumerate(ids):
            member_rows.append({"concept": i, "class": int(c), "program": progs[j],
                                "readable": space.program(i).readable, "length": int(space.lengths[i]),
                                "group_propositional": levels_group["propositional"][j],
                                "group_first_order": levels_group["first-order"][j],
                                "group_domain": levels_group["domain"][j], "group_check_bank": check_group[j]})
    classes = pd.DataFrame(class_rows, columns=CLASS_COLUMNS)
    members = pd.DataFrame(member_rows, columns=MEMBER_COLUMNS)
    info = {"violations": violations, "check_scenes": int(bank.n_scenes), "prover": prover}
    # light scalars only: pandas deep-copies attrs on every operation
    classes.attrs.update({"violations": violations, "check_scenes": int(bank.n_scenes)})
    return classes, members, info


# =================================================================== reporting
def summary(classes: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for st in STATUS_ORDER:
        d = classes[classes.status == st]
        rows.append({"status": st, "classes": len(d), "concepts": int(d["size"].sum()),
                     "share of classes %": 100 * len(d) / max(1, len(classes)),
                     "largest class": int(d["size"].max()) if len(d) else 0})
    rows.append({"status": "all classes with ≥ 2 members", "classes": len(classes),
                 "concepts": int(classes["size"].sum()) if len(classes) else 0, "share of classes %": 100.0,
                 "largest class": int(classes["size"].max()) if len(classes) else 0})
    return pd.DataFrame(rows)


def _scene_text(scene) -> str:
    return "; ".join(f"{o['size']} {o['color']} {o['material']} {o['shape']} at ({o['x']}, {o['y']})"
                     for o in scene["objects"])


def markdown(classes, members, info, space, args, n_examples: int = 3) -> str:
    prover = info["prover"]
    lines = ["# Synonym classes: logical equivalence or coincidence on the scene bank? (CURI B.6)", "",
             C.space_note(space) + ".",
             f"{len(classes):,} synonym classes have two or more members ({int(classes['size'].sum()) if len(classes) else 0:,} "
             f"concepts); counterexample search on {info['check_scenes']:,} fresh check scenes "
             f"(seed {args.seed}).", "",
             C.markdown_table(summary(classes), align=["left", "right", "right", "right", "right"]), "",
             "* **propositional**: every member provably equivalent with atoms as opaque, canonicalised "
             "propositions (`a = b` is `b = a`; `c > t` is `¬(t > c−1)`) and sympy `Equivalent` + `satisfiable` "
             "-- CURI's \"truly synonymous\";",
             "* **first-order**: provable once the quantifier over x is expanded (still pure logic);",
             "* **domain facts**: provable with facts true of every valid scene (one value per attribute, "
             "value ranges and order, count ranges, count ≥ 1 iff some object has the value, what `any`/`all` over "
             "S−x with a constant say about the other objects);",
             "* **empirical (refuted)**: a check scene separates members: they coincide only on the space's "
             "scene distribution (CURI's synonymy \"in context of the image distribution\");",
             "* **empirical (undecided)**: neither proved nor refuted.", "",
             "\"Not provable by this method\" is a **lower bound** on logical equivalence: relations between two "
             "objects (e.g. `all(color(S−x) = color(x))`, counts of x's own value), counts beyond ≥ 1 and the "
             "number of objects per scene are not modelled, so an undecided class may still be logically "
             "equivalent; a refuted class certainly is not (the separating scene is re-checked with the reference "
             "interpreter).",
             f"Proof/check-bank contradictions: {info['violations']} (must be 0). "
             f"Comparisons abandoned as too large (> {prover.max_minterms:,} minterms): "
             f"{int(classes['too_large'].sum()) if len(classes) else 0}.", ""]
    if len(classes):
        undecided = classes.status.isin([STATUS["refuted"], STATUS["undecided"]])
        partly = classes[undecided & (classes.groups_domain < classes["size"])]
        refuted = classes[classes.status == STATUS["refuted"]]
        only_single = int((~refuted.refuted_multi_object).sum())
        lines += [f"Of the {int(undecided.sum())} classes not proved whole, {len(partly)} contain provably "
                  f"equivalent sub-groups. Of the {len(refuted)} refuted classes, {only_single} are separated only "
                  f"by one-object scenes (valid scenes, but outside the space's sampler, which draws "
                  f"{space.schema.sample_min_objects}..{space.schema.max_objects} objects). The method decided "
                  f"every pair (proof groups = check-bank groups) in "
                  f"{int((classes.groups_domain == classes.groups_check_bank).sum())} of {len(classes)} classes.", ""]
    lines.append("## Examples")
    lines.append("")
    lines.append("Per class: members (postfix — readable — boolean skeleton over lettered atoms, simplified with "
                 "sympy's `simplify_logic`), their proof group (domain level) and check-bank group; members are "
                 "shown round-robin over the proof groups.")
    by_class = members.groupby("class")
    for st in STATUS_ORDER:
        d = classes[classes.status == st].sort_values(["size", "class"], ascending=[False, True])
        if not len(d):
            continue
        # the largest class and a few small ones
        pick = pd.concat([d.head(1), d.iloc[1:].sort_values(["size", "class"]).head(n_examples - 1)])
        lines += ["", f"### {st} ({len(d):,} classes)"]
        for _, r in pick.iterrows():
            mem = by_class.get_group(r["class"])
            letters = {}
            lines += ["", f"Class {r['class']} ({r['size']} members, true on {r['count']:,} bank scenes; proof "
                          f"groups: propositional {r['groups_propositional']}, first-order {r['groups_first_order']}, "
                          f"domain {r['groups_domain']}; check-bank groups {r['groups_check_bank']}):", ""]
            queues = [list(g.itertuples()) for _, g in mem.groupby("group_domain", sort=True)]
            shown = []
            while len(shown) < min(8, len(mem)):
                for q in queues:
                    if q and len(shown) < 8:
                        shown.append(q.pop(0))
            for m in sorted(shown, key=lambda m: (m.group_domain, m.concept)):
                sk = prover.skeleton(m.program, letters)
                lines.append(f"- `{m.program}` — {m.readable} — skeleton `{sk}` (group {m.group_domain}, "
                             f"check group {m.group_check_bank})")
            if len(mem) > len(shown):
                lines.append(f"- … {len(mem) - len(shown)} more (see `synonym_members.csv`)")
            lines.append("- atoms: " + "; ".join(f"{v} = `{prover.atom_text(k)}`" for k, v in letters.items()))
            if r["counterexample"]:
                cex = json.loads(r["counterexample"])
                n = len(cex["scene"]["objects"])

                def ids(xs):
                    return ", ".join("#" + str(i) for i in xs[:10]) + (" …" if len(xs) > 10 else "")
                lines.append(f"- counterexample scene ({n} object{'s' if n > 1 else ''}): {_scene_text(cex['scene'])}"
                             f" — true for {ids(cex['true_for'])}; false for {ids(cex['false_for'])}")
    return "\n".join(lines)


def figure(classes: pd.DataFrame):
    """CURI Figure 13 split by status: number of classes per class size (binned), stacked by
    status; right: share of classes per status."""
    colors = {STATUS["propositional"]: "#1a9641", STATUS["first-order"]: "#66bd63", STATUS["domain"]: "#a6d96a",
              STATUS["undecided"]: "#bdbdbd", STATUS["refuted"]: "#d7191c"}
    with C.style():
        fig = Figure(figsize=(10, 5.2), layout="constrained")
        ax, ax2 = fig.subplots(1, 2, width_ratios=[3, 1.3])
        if len(classes):
            edges = [(2, 2), (3, 3), (4, 4), (5, 5), (6, 10), (11, 20), (21, 10**9)]
            edges = [e for e in edges if e[0] <= int(classes["size"].max())]
            labels = [str(lo) if lo == hi else (f"{lo}–{hi}" if hi < 10**9 else f"> {lo - 1}") for lo, hi in edges]
            x = np.arange(len(edges))
            bottom = np.zeros(len(edges))
            for st in STATUS_ORDER:
                n = np.array([((classes["size"] >= lo) & (classes["size"] <= hi) & (classes.status == st)).sum()
                              for lo, hi in edges], float)
                ax.bar(x, n, bottom=bottom, color=colors[st], label=st, gid=f"status:{st}", width=0.8)
                bottom += n
            ax.set_xticks(x, labels)
            ax.set_xlabel("synonym class size (concepts with identical signatures)")
            ax.set_ylabel("number of classes")
            ax.legend(fontsize=9)
            summ = summary(classes).iloc[:-1]
            ax2.barh(np.arange(len(summ)), summ["share of classes %"], color=[colors[s] for s in summ.status])
            ax2.set_yticks(np.arange(len(summ)), summ.status)
            ax2.invert_yaxis()
            ax2.set_xlabel("share of classes (%)")
        fig.suptitle("Synonym classes: provably equivalent vs equal only on the scene bank")
    return fig


def main(argv=None) -> pd.DataFrame:
    p = C.parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("--check-scenes", type=int, default=200_000,
                   help="scenes of the counterexample check bank (default: %(default)s)")
    p.add_argument("--max-minterms", type=int, default=MAX_MINTERMS,
                   help="give up a first-order/domain comparison beyond this many minterms (default: %(default)s)")
    p.add_argument("--examples", type=int, default=3, help="example classes per status in the Markdown")
    p.add_argument("--verify-proofs", action="store_true",
                   help="also try to prove pairs that a check scene separates, counting any proof as a violation "
                        "(a soundness check of the prover; slower)")
    args = C.parse(p, argv, NAME)
    if args.check_scenes < 1:
        p.error("--check-scenes must be >= 1")
    elapsed = C.timer()
    space = C.load_space(args, p)
    classes, members, info = analyse(space, args.check_scenes, args.seed, args.max_minterms,
                                     progress=not args.quiet, verify=args.verify_proofs)
    C.write_table(classes, args.out, NAME)
    C.write_table(members, args.out, "synonym_members")
    md = markdown(classes, members, info, space, args, args.examples)
    C.write_markdown(md, args.out, NAME)
    C.save_figure(figure(classes), args.out, "synonym_status")
    if not args.quiet:
        print(md)
        print(f"\n[{NAME}: {elapsed():.1f} s; outputs in {args.out}]")
    return classes


if __name__ == "__main__":
    main()
