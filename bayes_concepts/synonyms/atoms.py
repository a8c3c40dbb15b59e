"""Canonical atoms: a program as a quantifier over a boolean combination of atoms.

An *atom* is a maximal non-boolean sub-program: a comparison (``=``, ``>``) or a set
quantifier (``exists=``/``for-all=`` over a list).  Atoms are canonicalised so that
syntactically different but trivially equal atoms are one: ``a = b`` and ``b = a`` are
one atom, and ``c > t`` with a constant ``c`` is written ``¬(t > c−1)`` (every ordered
type -- location, size, count -- is discrete), so ``3 > locationY(x)`` is
``¬(locationY(x) > 2)``.

Terms (the operands of atoms) are nested tuples:

* ``("num", n)`` -- a number constant;
* ``("const", type, code)`` -- a value constant by its code (``code`` may be −1: one
  below the smallest value, from normalising ``c > t``);
* ``("var", "x" | "S" | "non-x-S")``;
* ``("prop", attribute, term)`` -- a property of an object or a set;
* ``("count", list_term, value_term)``.

Atom keys are ``("cmp", op, a, b)`` and ``("setq", "exists" | "forall", list, value)``.

Only programs of CURI's operators have a form: the operators registered with
``prover="curi"`` (:mod:`bayes_concepts.lot.operators`).  A program that uses any other
operator (the relational ones: binders ``filter:y``, ``exist``, ``count``, ``unique``,
relations, ...) is *not provable* (:func:`unprovable_operators`; :meth:`AtomTable.form`
raises :class:`NotProvable`): its synonyms are decided by signatures only.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import BayesConceptsError
from ..lot.grammar import Grammar, curi_grammar
from ..lot.operators import operator_of, split_binder
from ..lot.program import Program
from . import sat

#: syntax-tree node kinds that are no operator (leaves and properties)
_NOT_OPERATORS = ("constant", "variable", "property")


class NotProvable(BayesConceptsError):
    """A program that uses operators the synonym prover does not reason about; ``program``
    is its postfix text, ``operators`` those operators' names (binders without their
    variable), in order of first use."""

    def __init__(self, program: str, operators: tuple):
        self.program, self.operators = program, tuple(operators)
        super().__init__(f"{program!r} is not provable: the synonym prover reasons about CURI's operators only, not "
                         f"{', '.join(self.operators)}; its synonyms are decided by signatures only")


def unprovable_operators(program) -> tuple:
    """The operators of a parsed program that the synonym prover does not reason about
    (registered with ``prover`` other than ``"curi"``), binders by their name
    (``filter:y`` -> ``filter``), each once in order of first use; ``()`` for a program of
    CURI's operators."""
    out = []
    for node in program.root.walk():
        if node.kind in _NOT_OPERATORS:
            continue
        op = operator_of(node.op)
        if op is None or op.prover != "curi":
            out.append(op.name if op is not None else split_binder(node.op)[0])
    return tuple(dict.fromkeys(out))


def unprovable_tokens(grammar) -> dict:
    """The operator tokens of ``grammar`` the synonym prover does not reason about, each
    with its operator's name (``{"filter:y": "filter", "exist": "exist", ...}``; empty
    for CURI's grammar): a program is not provable iff one of its tokens is a key (a fast
    test on the postfix text, without parsing)."""
    out = {}
    for tok, kind in grammar.token_kinds.items():
        if kind != "operator":
            continue
        op = operator_of(tok)
        if op is None or op.prover != "curi":
            out[tok] = op.name if op is not None else split_binder(tok)[0]
    return out


def uses_x(term) -> bool:
    """Whether a term or atom key mentions ``x`` (directly or through ``S−x``)."""
    if isinstance(term, tuple):
        if term[:1] == ("var",) and term[1] in ("x", "non-x-S"):
            return True
        return any(uses_x(t) for t in term)
    return False


def is_constant(term) -> bool:
    return term[0] in ("num", "const")


@dataclass(frozen=True)
class Atom:
    """A canonical atom.

    Attributes
    ----------
    key : tuple
        ``("cmp", op, a, b)`` or ``("setq", quantifier, list, value)``.
    kind : str
        ``own`` (properties of x and constants only), ``count`` (a comparison with a
        count), ``setq`` (a set quantifier) or ``const`` (two constants).
    uses_x : bool
        Whether it mentions x or S−x.
    op : str
        ``=``/``>`` for comparisons, ``exists``/``forall`` for set quantifiers.
    terms : tuple
        The two operand terms.
    own_of : tuple or None
        For a set quantifier over S with an x-free value, the key of the own atom
        ``P(x) = value`` it quantifies over x.
    """

    key: tuple
    kind: str
    uses_x: bool
    op: str
    terms: tuple
    own_of: tuple | None = None


@dataclass(frozen=True)
class ProgramForm:
    """A program as a quantifier over a boolean formula of atoms.

    Attributes
    ----------
    quantifier : {"exists", "forall", None}
        The final ∃x∈S / ∀x∈S, or None for an x-free (collapsed) program.
    body : formula
        A :mod:`~bayes_concepts.synonyms.sat` formula whose variables are atom keys.
    atoms : tuple
        The atom keys of the body, each once, in order of appearance.
    normal : formula
        A syntactic normal form of the body (and/or flattened, operands deduplicated
        and sorted): two bodies with equal normal forms are equivalent.
    """

    quantifier: str | None
    body: object
    atoms: tuple
    normal: object


def normal_form(f):
    """A syntactic normal form of a formula: ``and``/``or`` operands normalised,
    deduplicated and sorted (commutativity, associativity, idempotence); double
    negations are already gone in formulas built by :mod:`~bayes_concepts.synonyms.sat`."""
    if f is True or f is False or f[0] == "v":
        return f
    if f[0] == "not":
        return sat.not_(normal_form(f[1]))
    if f[0] == "iff":
        return ("iff", *sorted((normal_form(f[1]), normal_form(f[2])), key=repr))
    parts = sorted(set(normal_form(g) for g in f[1]), key=repr)
    return sat.and_(*parts) if f[0] == "and" else sat.or_(*parts)


class AtomTable:
    """The canonical atoms of the programs seen so far, and each program's form.

    Parameters
    ----------
    grammar : Grammar, optional
        The grammar programs are parsed with (default: CURI's).

    Attributes
    ----------
    atoms : dict
        Atom key -> :class:`Atom`, for every atom registered so far.
    """

    def __init__(self, grammar: Grammar | None = None):
        self.grammar = grammar or curi_grammar()
        self.atoms: dict = {}
        self._forms: dict = {}

    def form(self, program) -> ProgramForm:
        """The (cached) :class:`ProgramForm` of a program (postfix string or Program).

        Raises
        ------
        NotProvable
            When the program uses an operator the prover does not reason about."""
        text = program if isinstance(program, str) else program.postfix
        if text not in self._forms:
            parsed = Program.parse(text, self.grammar)
            unprovable = unprovable_operators(parsed)
            if unprovable:
                raise NotProvable(text, unprovable)
            body = self._formula(parsed.body)
            atoms = tuple(dict.fromkeys(sat.variables(body)))
            self._forms[text] = ProgramForm(parsed.quantifier, body, atoms, normal_form(body))
        return self._forms[text]

    def own_equals(self, attribute: str, value) -> tuple:
        """The key of the own atom ``P(x) = value`` (registered if new); ``attribute`` is an
        attribute name, ``value`` an x-free term."""
        a, b = sorted((("prop", attribute, ("var", "x")), value), key=repr)
        return self._comparison("=", a, b)

    # ------------------------------------------------------------ canonical atoms
    def _term(self, node):
        kind = node.kind
        if kind == "constant":
            if node.type == "NUM":
                return ("num", int(node.op))
            return ("const", node.type, self.grammar.value_types[node.type].values.index(node.op))
        if kind == "variable":
            return ("var", node.op)
        if kind == "property":
            return ("prop", self.grammar.properties[node.op].attribute, self._term(node.children[0]))
        if kind == "count":
            return ("count", self._term(node.children[0]), self._term(node.children[1]))
        raise ValueError(f"not a value term: {node.op} ({kind})")

    def _comparison(self, op: str, a, b) -> tuple:
        if op == "=":
            a, b = sorted((a, b), key=repr)
        key = ("cmp", op, a, b)
        if key not in self.atoms:
            if is_constant(a) and is_constant(b):
                kind = "const"
            elif a[0] == "count" or b[0] == "count":
                kind = "count"
            else:  # properties of x and constants (a property of S is a list: not comparable)
                kind = "own"
            self.atoms[key] = Atom(key, kind, uses_x(key), op, (a, b))
        return key

    def _atom(self, node):
        """The formula of a comparison or set quantifier node: its canonical atom, or
        ``¬(t > c−1)`` for ``c > t`` with a constant ``c``."""
        if node.kind == "compare":
            a, b = self._term(node.children[0]), self._term(node.children[1])
            if node.op == ">" and is_constant(a) and not is_constant(b):
                below = ("num", a[1] - 1) if a[0] == "num" else ("const", a[1], a[2] - 1)
                return sat.not_(sat.var(self._comparison(">", b, below)))
            return sat.var(self._comparison(node.op, a, b))
        if node.kind == "set_quantifier":
            values, value = self._term(node.children[0]), self._term(node.children[1])
            quantifier = "exists" if node.op == "exists=" else "forall"
            key = ("setq", quantifier, values, value)
            if key not in self.atoms:
                own = None
                if values[2] == ("var", "S") and not uses_x(value):
                    own = self.own_equals(values[1], value)
                self.atoms[key] = Atom(key, "setq", uses_x(key), quantifier, (values, value), own_of=own)
            return sat.var(key)
        raise ValueError(f"not an atom: {node.op} ({node.kind})")

    def _formula(self, node):
        if node.kind == "logic":
            parts = [self._formula(c) for c in node.children]
            if node.op == "not":
                return sat.not_(parts[0])
            return sat.and_(*parts) if node.op == "and" else sat.or_(*parts)
        return self._atom(node)

    # ------------------------------------------------------------------ display
    def term_text(self, term) -> str:
        """A readable form of a term, e.g. ``color(S−x)``."""
        kind = term[0]
        if kind == "num":
            return str(term[1])
        if kind == "const":
            values = self.grammar.value_types[term[1]].values
            if term[2] < 0:  # one below the smallest value (from normalising c > t)
                return str(int(values[0]) - 1) if str(values[0]).isdigit() else f"(below {values[0]})"
            return str(values[term[2]])
        if kind == "var":
            return {"x": "x", "S": "S", "non-x-S": "S−x"}[term[1]]
        if kind == "prop":
            name = next(p.token for p in self.grammar.properties.values() if p.attribute == term[1]).rstrip("?")
            return f"{name}({self.term_text(term[2])})"
        if kind == "count":
            return f"count({self.term_text(term[1])} = {self.term_text(term[2])})"
        raise ValueError(f"not a term: {term!r}")

    def atom_text(self, key) -> str:
        """A readable form of an atom, e.g. ``any(color(S−x) = red)``."""
        if key[0] == "cmp":
            return f"{self.term_text(key[2])} {key[1]} {self.term_text(key[3])}"
        quantifier = "any" if key[1] == "exists" else "all"
        return f"{quantifier}({self.term_text(key[2])} = {self.term_text(key[3])})"
