"""Boolean formulas and their satisfiability, for the equivalence prover.

A *formula* is a small nested-tuple form, cheaper to build than sympy expressions
(the quantifier expansions of :mod:`bayes_concepts.synonyms.prover` build formulas with
thousands of nodes):

* ``True`` / ``False``;
* ``("v", name)`` -- a variable; ``name`` is any hashable;
* ``("not", f)``, ``("and", (f, ...))``, ``("or", (f, ...))``, ``("iff", f, g)``.

Build formulas with :func:`not_`, :func:`and_`, :func:`or_` and :func:`iff`, which fold
constants, flatten nested ``and``/``or`` and remove double negations.
:func:`satisfiable` decides satisfiability with sympy's DPLL solver on a Tseitin
encoding (sympy's own conversion to CNF distributes and can blow up exponentially).
"""
from __future__ import annotations

import sympy
from sympy.assumptions.cnf import EncodedCNF
from sympy.logic.boolalg import And, Equivalent, Not, Or
from sympy.logic.inference import satisfiable as sympy_satisfiable


def var(name) -> tuple:
    """The variable ``name`` (any hashable) as a formula."""
    return ("v", name)


def not_(f):
    """¬f, with ¬True = False, ¬False = True and ¬¬f = f."""
    if f is True or f is False:
        return not f
    return f[1] if f[0] == "not" else ("not", f)


def _nary(op: str, parts, unit: bool):
    flat = []
    for f in parts:
        if f is (not unit):
            return not unit
        if f is unit:
            continue
        if f[0] == op:
            flat.extend(f[1])
        else:
            flat.append(f)
    if not flat:
        return unit
    return flat[0] if len(flat) == 1 else (op, tuple(flat))


def and_(*parts):
    """The conjunction of ``parts`` (``True`` when there are none)."""
    return _nary("and", parts, True)


def or_(*parts):
    """The disjunction of ``parts`` (``False`` when there are none)."""
    return _nary("or", parts, False)


def iff(a, b):
    """a ↔ b."""
    if a is True:
        return b
    if a is False:
        return not_(b)
    if b is True or b is False:
        return iff(b, a)
    return ("iff", a, b)


def fold(f, leaf, constant, negation, conjunction, disjunction, equivalence):
    """Rebuild a formula bottom-up with other constructors.

    ``leaf(name)`` replaces a variable, ``constant(bool)`` a constant, and
    ``negation(x)``, ``conjunction(*xs)``, ``disjunction(*xs)``, ``equivalence(x, y)`` the
    nodes, applied to the folded children.
    """
    def rebuild(g):
        if g is True or g is False:
            return constant(g)
        op = g[0]
        if op == "v":
            return leaf(g[1])
        if op == "not":
            return negation(rebuild(g[1]))
        if op == "iff":
            return equivalence(rebuild(g[1]), rebuild(g[2]))
        parts = [rebuild(h) for h in g[1]]
        return conjunction(*parts) if op == "and" else disjunction(*parts)

    return rebuild(f)


def substitute(f, leaf):
    """``f`` with every variable ``("v", name)`` replaced by the formula ``leaf(name)``
    (which may be ``True``/``False``: the result is folded again)."""
    return fold(f, leaf, bool, not_, and_, or_, iff)


def variables(f):
    """The variable names of ``f`` in order of appearance, repeats included (a generator;
    ``dict.fromkeys(variables(f))`` keeps each once)."""
    if f is True or f is False:
        return
    if f[0] == "v":
        yield f[1]
    elif f[0] == "not":
        yield from variables(f[1])
    elif f[0] == "iff":
        yield from variables(f[1])
        yield from variables(f[2])
    else:
        for g in f[1]:
            yield from variables(g)


def to_sympy(f, symbol=None):
    """``f`` as a sympy boolean expression; ``symbol(name)`` makes the symbol of a variable
    (default ``sympy.Symbol(str(name))``)."""
    symbol = symbol or (lambda name: sympy.Symbol(str(name)))
    return fold(f, symbol, lambda c: sympy.true if c else sympy.false, Not, And, Or, Equivalent)


def tseitin_clauses(f) -> tuple:
    """The Tseitin encoding of a formula that is not a constant.

    Returns
    -------
    clauses : list of set of int
        CNF clauses over literals ``±k`` (``k`` ≥ 1), satisfiable iff ``f`` is.
    variable_of : dict
        ``("var", name) -> k`` for the formula's variables; auxiliary gate variables
        are keyed ``("gate", i)``.
    """
    variable_of, clauses, gate_of = {}, [], {}

    def new(key) -> int:
        if key not in variable_of:
            variable_of[key] = len(variable_of) + 1
        return variable_of[key]

    def literal(g) -> int:
        op = g[0]
        if op == "v":
            return new(("var", g[1]))
        if op == "not":
            return -literal(g[1])
        if id(g) in gate_of:
            return gate_of[id(g)][0]
        if op in ("and", "or"):
            inputs = [literal(c) for c in g[1]]
            gate = new(("gate", len(variable_of)))
            if op == "and":
                clauses.extend({-gate, v} for v in inputs)
                clauses.append({gate, *(-v for v in inputs)})
            else:
                clauses.extend({gate, -v} for v in inputs)
                clauses.append({-gate, *inputs})
        elif op == "iff":
            a, b = literal(g[1]), literal(g[2])
            gate = new(("gate", len(variable_of)))
            clauses.extend([{-gate, -a, b}, {-gate, a, -b}, {gate, a, b}, {gate, -a, -b}])
        else:
            raise ValueError(f"not a boolean formula node: {op!r}")
        gate_of[id(g)] = (gate, g)  # g kept alive so that its id stays unique
        return gate

    clauses.append({literal(f)})
    return clauses, variable_of


def satisfiable(f) -> bool:
    """Whether some assignment of the variables makes ``f`` true (sympy's ``dpll2`` on the
    Tseitin encoding, :func:`tseitin_clauses`)."""
    if f is True or f is False:
        return f
    clauses, variable_of = tseitin_clauses(f)
    symbols = {sympy.Symbol(f"_b{k}"): k for k in range(1, len(variable_of) + 1)}
    return sympy_satisfiable(EncodedCNF(clauses, symbols), algorithm="dpll2") is not False


def valid(f) -> bool:
    """Whether ``f`` is true under every assignment (¬f is unsatisfiable)."""
    return not satisfiable(not_(f))
