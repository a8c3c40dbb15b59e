"""Programs of the language of thought: parsing, type checking and serialisation.

A program is a postfix token string, e.g.
``x locationY? 6 > exists=`` (∃x∈S: locationY(x) > 6).  :meth:`Program.parse`
builds a typed syntax tree; any malformed input raises :class:`ProgramError`
naming the token position (0-based, counted in the string as given) and what
was expected there.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import ProgramError
from .grammar import IGNORED, NUM, Grammar, curi_grammar, token_arity
from .logprob import derivation_log_prob, derivation_log_probs
from .operators import (CURI_OPERATORS, OperatorTypeError, latex_text, operator_named, operator_of, operators,
                        split_binder)

BOOL, OBJ, SET, INT = "BOOL", "OBJ", "SET", "INT"
QUANTIFIERS = {"exists=": "exists", "for-all=": "forall"}

#: The most tokens a program may have (``lambda``/``S.`` not counted).  CURI's grammar
#: yields at most 64 at its default depth 6 and 256 at depth 8.  The limit keeps every
#: recursive walk over a syntax tree (rendering, log-probability, compilation) within
#: Python's recursion limit and the cubic-time log-probability parse within seconds; a
#: longer program is a :class:`ProgramError`, never a RecursionError.
MAX_PROGRAM_TOKENS = 256
#: The deepest nesting of operators a program may have (its syntax tree's height, the
#: leaves at height 1).  Sampled CURI programs nest about 10 levels; the limit keeps the
#: recursive tree walks of other modules within Python's recursion limit.
MAX_PROGRAM_NESTING = 128
#: Programs longer than this many characters are abbreviated in error messages.
_SHOWN_CHARS = 160
_IGNORED = frozenset(IGNORED)
#: The token that separates a program from its domain constraints:
#: ``PROGRAM where C1 [where C2 ...]`` -- each ``C`` a BOOL program of the same language that
#: must hold on a scene for the concept to be defined there (CLEVR's OUT_NEQ constraints).
#: The constraints are data beside the program: ``tokens``, ``root``, ``length`` and
#: ``log_prob`` are the program's; ``postfix`` (the concept's identity) names both.
WHERE = "where"
#: How many strings :meth:`Program.parse` remembers per grammar (the memo is emptied when full;
#: a clevr-preset space has about 35,000 programs).
PARSE_MEMO = 65_536
#: (grammar's content, the registered operators, given tokens) -> (tokens, root, constraints):
#: the memo of :meth:`Program.parse`
_PARSED: dict = {}
#: grammar -> its content as a string (what parsing reads of it), computed once per grammar object
_GRAMMAR_KEYS: "weakref.WeakKeyDictionary[Grammar, str]" = weakref.WeakKeyDictionary()


def _grammar_key(grammar: Grammar) -> str:
    """Everything of ``grammar`` that parsing reads (types, properties, rules, start, depth,
    aliases, operators, variables, relations, objects), as one string: two grammar objects with
    equal keys parse every string alike."""
    key = _GRAMMAR_KEYS.get(grammar)
    if key is None:
        key = repr((grammar.value_types, grammar.properties, grammar.productions, grammar.start,
                    grammar.max_depth, grammar.aliases, grammar.operators, grammar.variables, grammar.relations,
                    grammar.min_objects, grammar.sample_min_objects, grammar.max_objects, grammar.rejection_rules))
        _GRAMMAR_KEYS[grammar] = key
    return key


def list_of(t: str) -> str:
    return f"LIST[{t}]"


def element_type(t: str) -> str | None:
    return t[5:-1] if t.startswith("LIST[") else None


@dataclass(frozen=True)
class Node:
    """A node of a program's syntax tree.

    op:       the token (``"color?"``, ``"="``, ``"red"``, ``"x"``, ...).
    children: operand subtrees, in postfix order.
    type:     ``BOOL``, ``OBJ``, ``SET``, a value type (``COLOR``, ``LOC``, ``NUM``, ...),
              ``LIST[T]`` for a property of a set, or ``INT`` for an integer literal
              not yet bound to ``LOC``/``NUM`` by its context.
    kind:     ``constant``, ``variable``, ``property``, ``compare``, ``logic``,
              ``set_quantifier``, ``count`` or ``quantifier`` (the final ∃x/∀x).
    position: index of the token in the canonical postfix token list.
    """

    op: str
    children: tuple
    type: str
    kind: str
    position: int

    def postfix(self) -> list:
        """The subtree's tokens in postfix order."""
        return _postorder_ops(self)

    def prefix(self) -> list:
        """The subtree's tokens in prefix (Polish) order."""
        return [n.op for n in self.walk()]

    def walk(self):
        """The subtree's nodes in prefix order (this node first), without recursion."""
        todo = [self]
        while todo:
            node = todo.pop()
            yield node
            todo.extend(reversed(node.children))

    @property
    def size(self) -> int:
        """Number of nodes of the subtree."""
        return sum(1 for _ in self.walk())


class Program:
    """A parsed, type-checked program.

    Attributes: ``tokens`` (canonical postfix tokens, ``lambda``/``S.`` dropped),
    ``root`` (:class:`Node`), ``grammar``, ``constraints`` (the domain constraints written
    after :data:`WHERE`: a tuple of ``(tokens, root)``, one per constraint, each a BOOL
    program; empty for most programs).  Two programs are equal iff their canonical strings
    (:attr:`postfix`, constraints included) are equal.

    The concept's *domain* (the scenes on which it is defined) is where every ``unique`` of
    the program and of its constraints finds exactly one object and every constraint holds;
    a program without ``unique`` and constraints is defined on every scene.
    """

    __slots__ = ("tokens", "root", "grammar", "constraints", "__dict__")

    def __init__(self, tokens: tuple, root: Node, grammar: Grammar, constraints: tuple = ()):
        self.tokens = tokens
        self.root = root
        self.grammar = grammar
        self.constraints = tuple(constraints)

    # ----------------------------------------------------------------- parsing
    @classmethod
    def parse(cls, text, grammar: Grammar | None = None) -> "Program":
        """Parse a postfix program string (or token sequence).  ``lambda`` and ``S.`` are
        dropped and the grammar's aliases (CURI's ``0.7``/``0.35`` for large/small) replaced.

        A string parsed before under a grammar of the same content (the same file loaded again
        is another object of the same content) gives its syntax tree again, from a memo of the
        last :data:`PARSE_MEMO` strings parsed (a space's programs are parsed again by every
        look-up: ``find``, ``program(i)``, a protocol's splits, in every process that loads the
        space); malformed input is parsed, and refused, every time."""
        grammar = grammar or curi_grammar()
        given = text.split() if isinstance(text, str) else list(text)
        if cls is not Program:
            return cls._parse_given(given, grammar)
        # the registered operators are part of the key: one registered, replaced or removed since
        # is parsed afresh
        key = (_grammar_key(grammar), tuple((n, id(o)) for n, o in operators._entries.items()), tuple(given))
        parsed = _PARSED.get(key)
        if parsed is None:
            program = cls._parse_given(given, grammar)
            if len(_PARSED) >= PARSE_MEMO:
                _PARSED.clear()
            _PARSED[key] = (program.tokens, program.root, program.constraints)
            return program
        return cls(parsed[0], parsed[1], grammar, parsed[2])

    @classmethod
    def _parse_given(cls, given: list, grammar: Grammar) -> "Program":
        """:meth:`parse` of the tokens ``given``, without the memo."""
        shown = _abbreviate(given)
        if _IGNORED.isdisjoint(given):  # nothing dropped: token k of the program is token k as given
            positions, kept = range(len(given)), given
        else:
            positions = [i for i, t in enumerate(given) if t not in _IGNORED]
            kept = [given[i] for i in positions]
        longest = max(len(seg.split()) for seg in " ".join(kept).split(f" {WHERE} ")) \
            if WHERE in given else len(positions)
        if longest > MAX_PROGRAM_TOKENS:
            raise ProgramError(f"{longest:,} tokens: programs (and each domain constraint) may have at most "
                               f"{MAX_PROGRAM_TOKENS} (bayes_concepts.lot.program.MAX_PROGRAM_TOKENS)", shown, None)
        aliases = grammar.aliases
        tokens = tuple(map(aliases.get, kept, kept)) if aliases else tuple(kept)
        if WHERE not in tokens:
            return cls(tokens, _parse_postfix(tokens, positions, grammar, shown), grammar)
        if not grammar.is_relational:
            raise ProgramError(f"{WHERE!r}: domain constraints are for relational languages (a grammar with "
                               "binders and unique), not this one", shown, positions[tokens.index(WHERE)])
        cuts = [k for k, t in enumerate(tokens) if t == WHERE] + [len(tokens)]
        parts = []
        for lo, hi in zip([0] + [c + 1 for c in cuts[:-1]], cuts):
            if lo == hi:
                at = positions[cuts[len(parts)] if len(parts) < len(cuts) - 1 else lo - 1]
                raise ProgramError(f"{WHERE!r} needs a program before it and a BOOL constraint after it", shown, at)
            seg = tokens[lo:hi]
            parts.append((seg, _parse_postfix(seg, positions[lo:hi], grammar, shown)))
        (main, root), constraints = parts[0], tuple(parts[1:])
        return cls(main, root, grammar, constraints)

    @classmethod
    def from_prefix(cls, text, grammar: Grammar | None = None) -> "Program":
        """Parse the Polish (prefix) form written by :attr:`prefix`."""
        grammar = grammar or curi_grammar()
        given = text.split() if isinstance(text, str) else list(text)
        if not given:
            raise ProgramError("empty program", "", None)
        if len(given) > MAX_PROGRAM_TOKENS:
            raise ProgramError(f"{len(given):,} tokens: programs may have at most {MAX_PROGRAM_TOKENS} "
                               "(bayes_concepts.lot.program.MAX_PROGRAM_TOKENS)", _abbreviate(given), None)
        # The mirror image of a prefix string is a postfix string of the mirrored tree,
        # except that a leading quantifier stays a quantifier.
        tokens = [t for t in given if t not in IGNORED]
        if not tokens:
            raise ProgramError("empty program (only 'lambda'/'S.')", _abbreviate(given), None)
        postfix = _prefix_to_postfix(tokens, grammar, _abbreviate(given))
        return cls.parse(postfix, grammar)

    # ------------------------------------------------------------ serialising
    @property
    def postfix(self) -> str:
        """The canonical string: the program's tokens, then ``where C`` per constraint."""
        if not self.constraints:
            return " ".join(self.tokens)
        return " ".join(self.tokens + tuple(t for c, _ in self.constraints for t in (WHERE, *c)))

    @property
    def bare(self) -> "Program":
        """The program without its domain constraints (itself when it has none): what the
        recombiners (atoms, compounds) and the synonym prover read."""
        return self if not self.constraints else Program(self.tokens, self.root, self.grammar)

    @property
    def has_domain(self) -> bool:
        """Whether the concept may be undefined on some scene: it has a ``unique`` (a referent
        that must exist and be unique) or a domain constraint."""
        return bool(self.constraints) or any(n.kind == "unique" for n in self.root.walk())

    @cached_property
    def domain_text(self) -> str:
        """The concept's domain in words: ``every scene``, or where its referents are unique
        and its constraints hold (readable form)."""
        parts = []
        if any(n.kind == "unique" for n in self.root.walk()) or any(
                n.kind == "unique" for _, root in self.constraints for n in root.walk()):
            parts.append("every referent under unique exists and is unique")
        parts += [_render(root, UNICODE, top=True) for _, root in self.constraints]
        return "every scene" if not parts else "scenes where " + "; ".join(parts)

    @cached_property
    def constraint_programs(self) -> tuple:
        """The constraints as :class:`Program` s of their own."""
        return tuple(Program(tokens, root, self.grammar) for tokens, root in self.constraints)

    @cached_property
    def prefix(self) -> str:
        return " ".join(self.root.prefix())

    @property
    def length(self) -> int:
        """l(h): number of tokens of the postfix form (``lambda``/``S.`` excluded)."""
        return len(self.tokens)

    @property
    def quantifier(self) -> str | None:
        """``"exists"``, ``"forall"`` or ``None`` for a program without the final quantifier."""
        return QUANTIFIERS[self.root.op] if self.root.kind == "quantifier" else None

    @property
    def uses_x(self) -> bool:
        """Whether the body mentions the object variable (``x`` or ``non-x-S``)."""
        return "x" in self.tokens or "non-x-S" in self.tokens

    @property
    def body(self) -> Node:
        return self.root.children[0] if self.quantifier else self.root

    def collapsed(self) -> "Program":
        """The program without its quantifier if its body does not use x (same meaning on
        every scene with at least one object); otherwise the program itself."""
        if self.quantifier is None or self.uses_x:
            return self
        return Program(self.tokens[:-1], self.body, self.grammar, self.constraints)

    @cached_property
    def readable(self) -> str:
        """The paper's readable form, e.g. ``∃x∈S: color(x) = blue ∧ shape(x) = cube``; a
        program with constraints adds `` | where C₁; C₂`` (its domain constraints)."""
        text = _render(self.root, UNICODE, top=True)
        if self.constraints:
            text += " | where " + "; ".join(_render(root, UNICODE, top=True) for _, root in self.constraints)
        return text

    @cached_property
    def latex(self) -> str:
        """A LaTeX (math mode) form of :attr:`readable`."""
        text = _render(self.root, LATEX, top=True)
        if self.constraints:
            text += r" \mid \text{where } " + r";\ ".join(_render(root, LATEX, top=True) for _, root in self.constraints)
        return text

    def log_prob(self, grammar: Grammar | None = None) -> float:
        """PCFG log-probability (natural log) of the program under ``grammar``.

        A program without the final quantifier (a collapsed x-free program) stands
        for both ``… exists=`` and ``… for-all=``; its probability is their sum.
        """
        grammar = grammar or self.grammar
        if self.quantifier is None and not grammar.is_relational:
            return float(np.logaddexp(*(derivation_log_prob(self.tokens + (q,), grammar)[0]
                                        for q in QUANTIFIERS)))
        return derivation_log_prob(self.tokens, grammar)[0]

    @staticmethod
    def log_probs(programs, grammar: Grammar) -> list:
        """:meth:`log_prob` of each of ``programs`` under ``grammar``, in order (bit for bit the
        same floats), the inside probabilities of the spans they share computed once
        (:func:`~bayes_concepts.lot.logprob.derivation_log_probs`): thousands of programs
        filled in from a few templates score in a fraction of one call each."""
        sequences, parts = [], []
        for p in programs:
            if p.quantifier is None and not grammar.is_relational:
                parts.append((len(sequences), 2))
                sequences.extend(p.tokens + (q,) for q in QUANTIFIERS)
            else:
                parts.append((len(sequences), 1))
                sequences.append(p.tokens)
        lps = [lp for lp, _ in derivation_log_probs(sequences, grammar)]
        return [float(np.logaddexp(*lps[i:i + n])) if n == 2 else lps[i] for i, n in parts]

    def derivation_depth(self, grammar: Grammar | None = None) -> int:
        """Depth of the program's most probable derivation (start symbol at depth 0)."""
        grammar = grammar or self.grammar
        tokens = self.tokens if self.quantifier or grammar.is_relational else self.tokens + ("exists=",)
        return derivation_log_prob(tokens, grammar)[1]

    def __eq__(self, other):
        return (isinstance(other, Program) and self.tokens == other.tokens
                and tuple(c for c, _ in self.constraints) == tuple(c for c, _ in other.constraints))

    def __hash__(self):
        return hash((self.tokens, tuple(c for c, _ in self.constraints)))

    def __str__(self):
        return self.postfix

    def __repr__(self):
        return f"Program({self.postfix!r})"


def _postorder_ops(root: Node) -> list:
    """Tokens of ``root``'s subtree in postfix order, without recursion."""
    return [node.op for node in postorder_nodes(root)]


def _height(root: Node) -> int:
    """Height of the syntax tree (a leaf: 1), without recursion."""
    best, todo = 0, [(root, 1)]
    while todo:
        node, h = todo.pop()
        best = max(best, h)
        todo.extend((c, h + 1) for c in node.children)
    return best


# --------------------------------------------------------------------- parser
def _abbreviate(tokens: list) -> str:
    """The program as given, for error messages: whole, or its start and end with the
    number of tokens when it is longer than ``_SHOWN_CHARS`` characters."""
    text = " ".join(tokens)
    if len(text) <= _SHOWN_CHARS:
        return text
    head, tail, used = [], [], 0
    for t in tokens:
        if used + len(t) > _SHOWN_CHARS // 2 and head:
            break
        head.append(t[:_SHOWN_CHARS // 2])
        used += len(t) + 1
    used = 0
    for t in reversed(tokens[len(head):]):
        if used + len(t) > _SHOWN_CHARS // 4 and tail:
            break
        tail.append(t[-(_SHOWN_CHARS // 4):])
        used += len(t) + 1
    return f"{' '.join(head)} … {' '.join(reversed(tail))} ({len(tokens):,} tokens)"


def _describe(t: str) -> str:
    if t == INT:
        return "an integer"
    if t.startswith("LIST["):
        return f"a list of {element_type(t)}"
    return {BOOL: "a BOOL", OBJ: "an object", SET: "a set"}.get(t, f"a {t}")


def _describe_in(t: str, grammar: Grammar) -> str:
    """As :func:`_describe`; CURI's language has one object, x."""
    return "the object x" if t == OBJ and not grammar.is_relational else _describe(t)


def _unify(a: Node, b: Node, grammar: Grammar):
    """Type shared by two compared operands, or None.  An integer literal takes the
    type of the other side (LOC if it is a LOC value, NUM)."""
    ta, tb = a.type, b.type
    if ta == tb:
        return NUM if ta == INT else ta
    if ta == INT:
        a, b, ta, tb = b, a, tb, ta
    if tb == INT and _int_fits(b.op, ta, grammar):
        return ta
    return None


def _int_fits(token: str, t: str, grammar: Grammar) -> bool:
    if t == NUM:
        return True
    vt = grammar.value_types.get(t)
    return vt is not None and token in vt.values


def _retype(node: Node, t: str) -> Node:
    if node.type == INT:
        return Node(node.op, node.children, t, node.kind, node.position)
    return node


# What a token is to the parser, from its grammar's token kinds (the branches of _parse_postfix,
# in the order they are tried there)
_VALUE, _INTEGER, _VARIABLE, _OPERATOR, _PROPERTY, _COMPARE, _LOGIC, _NOT, _COUNT, _QUANTIFIER, _UNSUPPORTED = range(11)
_INTEGER_ENTRY = (_INTEGER, None, None)
#: grammar -> (its token kinds, token -> (code, a, b), variable name -> bit, number of bits, relational?):
#: what :func:`_parse_postfix` reads of a grammar, built once per grammar object (again if its
#: token kinds are replaced)
_PARSE_TABLES: "weakref.WeakKeyDictionary[Grammar, tuple]" = weakref.WeakKeyDictionary()


def _parse_table(grammar: Grammar) -> tuple:
    """The parse table of ``grammar``: each token of its vocabulary with the branch of
    :func:`_parse_postfix` it takes and what that branch reads (a value's type; a variable's
    type and the bit of the object variable it uses; an operator's registry name and bound
    variable; a property's value type and list type).  Object variables are bits of an int:
    a subtree's scope summary is ``free | binders << n_bits`` (the variables free in it, as
    :func:`free_variables` counts them, and those its binders bind)."""
    kinds = grammar.token_kinds
    table = _PARSE_TABLES.get(grammar)
    if table is not None and table[0] is kinds:
        return table
    bits: dict = {"x": 1}

    def bit(var):
        if var not in bits:
            bits[var] = 1 << len(bits)
        return bits[var]

    value_of, properties = grammar.value_of, grammar.properties
    entries = {}
    for tok, kind in kinds.items():
        if kind == "value":
            entries[tok] = (_VALUE, value_of.get(tok), None)  # None: looked up (and missed) when parsed
        elif kind == "integer":
            entries[tok] = _INTEGER_ENTRY
        elif kind == "variable":
            used = 0 if tok == "S" else bit("x" if tok == "non-x-S" else tok)
            entries[tok] = (_VARIABLE, SET if tok in ("S", "non-x-S") else OBJ, used)
        elif kind == "operator" and tok not in CURI_OPERATORS:
            name, var = split_binder(tok)
            if var is not None:
                bit(var)
            entries[tok] = (_OPERATOR, name, var)
        elif kind == "property":
            prop = properties.get(tok)
            entries[tok] = (_PROPERTY, None, None) if prop is None else (_PROPERTY, prop.type, list_of(prop.type))
        elif tok in ("=", ">"):
            entries[tok] = (_COMPARE, None, None)
        elif tok in ("and", "or"):
            entries[tok] = (_LOGIC, None, None)
        elif tok == "not":
            entries[tok] = (_NOT, None, None)
        elif tok == "count=":
            entries[tok] = (_COUNT, None, None)
        elif tok in QUANTIFIERS:
            entries[tok] = (_QUANTIFIER, None, None)
        else:
            entries[tok] = (_UNSUPPORTED, None, None)
    table = (kinds, entries, bits, len(bits), grammar.is_relational)
    _PARSE_TABLES[grammar] = table
    return table


def _underflow(what: str, depth: int) -> str:
    return (f"stack underflow: expects {what}, but only {depth} "
            f"value{'s' if depth != 1 else ''} precede{'s' if depth == 1 else ''} it")


_new_object = object.__new__
_set_field = object.__setattr__


def _node(op, children, type, kind, position) -> Node:
    """``Node(op, children, type, kind, position)``: the same object, built without the call of
    the class and its ``__init__`` (the fields set as that ``__init__`` sets them, so that the
    instance keeps the compact attribute storage a dataclass instance has)."""
    node = _new_object(Node)
    _set_field(node, "op", op)
    _set_field(node, "children", children)
    _set_field(node, "type", type)
    _set_field(node, "kind", kind)
    _set_field(node, "position", position)
    return node


def _parse_postfix(tokens, positions, grammar: Grammar, shown: str) -> Node:
    """The syntax tree of the postfix ``tokens`` (one program or one domain constraint), type
    checked and scope checked; ``positions``: each token's index in the program as given.

    One pass over the tokens: a stack of nodes and, beside it, each node's scope summary (see
    :func:`_parse_table`), so that a program whose variables are all bound, whose binders
    shadow none and whose ``unique`` s take closed sets is accepted without walking its tree
    again; anything else (or an operator of a kind the summary does not follow) is judged by
    :func:`_check_scopes`, which names the first error.  A program of more tokens than
    :data:`MAX_PROGRAM_NESTING` has its trees' heights measured."""
    if not tokens:
        raise ProgramError("empty program (expected a postfix program such as 'x color? red = exists=')", shown, None)
    kinds, table, bits, n_bits, relational = _parse_table(grammar)
    free_mask = (1 << n_bits) - 1
    x_bit = bits["x"]
    stack: list[Node] = []
    scopes: list[int] = []  # each node's scope summary
    suspect = False  # whether _check_scopes must judge the tree
    n = len(tokens)
    append, scope = stack.append, scopes.append

    def fail(msg, i):
        tok = tokens[i] if len(tokens[i]) <= 40 else tokens[i][:40] + "…"
        raise ProgramError(f"{tok!r}: {msg}", shown, positions[i])

    for i, tok in enumerate(tokens):
        entry = table.get(tok)
        if entry is None:
            if grammar.is_integer(tok):
                entry = _INTEGER_ENTRY
            else:
                fail(_unknown_token(tok, grammar), i)
        code = entry[0]
        if code == _VARIABLE:
            append(_node(tok, (), entry[1], "variable", i))
            scope(entry[2])
        elif code == _VALUE:
            append(_node(tok, (), entry[1] if entry[1] is not None else grammar.value_of[tok], "constant", i))
            scope(0)
        elif code == _INTEGER:
            append(_node(tok, (), INT, "constant", i))
            scope(0)
        elif code == _OPERATOR:
            name, var = entry[1], entry[2]
            op = operator_named(name, var)
            if op is None:  # declared by the grammar, its registration removed or replaced since
                fail(f"names no registered operator{' that binds a variable' if var is not None else ''} (the "
                     f"grammar declares {tok!r}; register {name!r} before parsing its programs)", i)
            arity = op.arity
            if len(stack) < arity:
                fail(_underflow(f"{op.arity} operand{'s' if op.arity != 1 else ''} ({op.signature})", len(stack)), i)
            args = stack[-arity:]
            del stack[-arity:]
            summaries = scopes[-arity:]
            del scopes[-arity:]
            try:
                result = op.check(args, grammar, tok)
            except OperatorTypeError as exc:
                fail(f"{exc} ({op.name}: {op.signature})", i)
            if result == INT:
                result = NUM
            kind = op.kind
            append(_node(tok, tuple(args), result, kind, i))
            if kind == "binder" and var is not None:
                # free_variables: the first operand's free variables and the last's but var;
                # _check_scopes: a binder of var inside the last operand shadows this one
                b = bits.get(var, 0)
                if arity == 2 and b:
                    if summaries[1] & (b << n_bits):
                        suspect = True
                    scope(summaries[0] | (summaries[1] & ~b) | (b << n_bits))
                    continue
                suspect = True  # not the two operands (SET BOOL) the summary follows
            elif kind == "unique":
                if arity != 1 or summaries[0] & free_mask:  # names a variable (or not the one operand)
                    suspect = True
            elif kind in ("binder", "variable", "quantifier"):  # kinds _check_scopes reads that
                suspect = True  # this summary does not follow
            if arity == 2:
                scope(summaries[0] | summaries[1])
            elif arity == 1:
                scope(summaries[0])
            else:
                merged = 0
                for s in summaries:
                    merged |= s
                scope(merged)
        elif code == _PROPERTY:
            if not stack:
                fail(_underflow("one operand (an object or a set)" if relational else "one operand (x or a set)", 0), i)
            arg = stack.pop()
            vtype = entry[1] if entry[1] is not None else grammar.properties[tok].type
            if arg.type == OBJ:
                append(_node(tok, (arg,), vtype, "property", i))
            elif arg.type == SET:
                append(_node(tok, (arg,), entry[2] if entry[1] is not None else list_of(vtype), "property", i))
            else:
                fail(f"expects an object or a set, got {_describe_in(arg.type, grammar)}" if relational else
                     f"expects x or a set (S, non-x-S), got {_describe_in(arg.type, grammar)}", i)
        elif code == _COMPARE:
            if len(stack) < 2:
                fail(_underflow("two operands", len(stack)), i)
            b = stack.pop()
            a = stack.pop()
            ta, tb = a.type, b.type
            t = (NUM if ta == INT else ta) if ta == tb else _unify(a, b, grammar)
            if t is None and INT in (ta, tb) and ta != tb:
                lit, other = (a, b) if ta == INT else (b, a)
                vt = grammar.value_types.get(other.type)
                if vt is not None:
                    fail(f"integer {lit.op} is not a {other.type} value (expected one of "
                         f"{' '.join(vt.values)})", i)
            if t is None or t in (BOOL, OBJ, SET) or t.startswith("LIST["):
                fail(f"cannot compare {_describe_in(ta, grammar)} with {_describe_in(tb, grammar)} "
                     "(expected two values of the same type)", i)
            if tok == ">" and not (t == NUM or grammar.value_types[t].ordered):
                ordered = sorted([NUM] + [v.name for v in grammar.value_types.values() if v.ordered])
                fail(f"'>' needs an ordered type ({', '.join(ordered)}), got {t}", i)
            if ta == INT:
                a = _node(a.op, a.children, t, a.kind, a.position)
            if tb == INT:
                b = _node(b.op, b.children, t, b.kind, b.position)
            append(_node(tok, (a, b), BOOL, "compare", i))
            s = scopes.pop()
            scopes[-1] |= s
        elif code == _LOGIC:
            if len(stack) < 2:
                fail(_underflow("two BOOL operands", len(stack)), i)
            b = stack.pop()
            a = stack.pop()
            for arg in (a, b):
                if arg.type != BOOL:
                    fail(f"expects BOOL operands, got {_describe_in(arg.type, grammar)}", i)
            append(_node(tok, (a, b), BOOL, "logic", i))
            s = scopes.pop()
            scopes[-1] |= s
        elif code == _NOT:
            if not stack:
                fail(_underflow("one BOOL operand", 0), i)
            a = stack.pop()
            if a.type != BOOL:
                fail(f"expects a BOOL operand, got {_describe_in(a.type, grammar)}", i)
            append(_node(tok, (a,), BOOL, "logic", i))
        elif code == _COUNT:
            if len(stack) < 2:
                fail(_underflow("a list and a value", len(stack)), i)
            v = stack.pop()
            lst = stack.pop()
            append(_node(tok, _list_and_value(lst, v, i, fail, grammar), NUM, "count", i))
            s = scopes.pop()
            scopes[-1] |= s
        elif code == _QUANTIFIER:
            if len(stack) >= 2 and stack[-2].type.startswith("LIST["):
                v = stack.pop()
                lst = stack.pop()
                append(_node(tok, _list_and_value(lst, v, i, fail, grammar), BOOL, "set_quantifier", i))
                s = scopes.pop()
                scopes[-1] |= s
                continue
            if len(stack) == 0:
                fail("stack underflow: expects a BOOL body (quantifier over x∈S) or a list and a value", i)
            top = stack[-1]
            if top.type != BOOL:
                fail(f"quantifier over a non-boolean: expects a BOOL body, got {_describe_in(top.type, grammar)}", i)
            if i != n - 1:
                fail("a quantifier over x∈S must be the last token (a set quantifier expects a list and a value)", i)
            if len(stack) != 1:
                fail(f"quantifier leaves {len(stack) - 1} more value{'s' if len(stack) > 2 else ''} on the stack "
                     "(expected exactly one BOOL body)", i)
            stack[-1] = _node(tok, (top,), BOOL, "quantifier", i)
            s = scopes[-1]
            if s & (x_bit << n_bits):  # a binder of x inside: shadowing
                suspect = True
            scopes[-1] = (s & ~x_bit) | (x_bit << n_bits)
        else:  # pragma: no cover - every kind is handled above
            fail("unsupported token", i)

    if n > MAX_PROGRAM_NESTING:  # no tree of n nodes or fewer is deeper than n
        for node in stack:
            height = _height(node)
            if height > MAX_PROGRAM_NESTING:
                raise ProgramError(f"{tokens[node.position]!r}: operators nested {height} levels deep; programs may "
                                   f"nest at most {MAX_PROGRAM_NESTING} (bayes_concepts.lot.program.MAX_PROGRAM_NESTING)",
                                   shown, positions[node.position])
    if len(stack) > 1:
        extra = stack[1]
        first = min(node.position for node in extra.walk())
        span = " ".join(tokens[first:extra.position + 1])
        raise ProgramError(
            f"leftover values: the program leaves {len(stack)} values on the stack (expected exactly one BOOL); "
            f"nothing uses the {_describe_in(extra.type, grammar).split(' ', 1)[-1]} computed by {span!r}",
            shown, positions[first])
    root = stack[0]
    if root.type != BOOL:
        raise ProgramError(f"{tokens[-1]!r}: the program computes {_describe_in(root.type, grammar)}, expected a BOOL",
                           shown, positions[-1])
    if suspect or scopes[0] & free_mask:
        _check_scopes(root, grammar, tokens, positions, shown)
    return root


def _unknown_token(tok: str, grammar: Grammar) -> str:
    """Why a token is not in the grammar's vocabulary."""
    name, var = split_binder(tok)
    if name in operators:
        op = operators.get(name)
        if op.binds and var is None:
            return (f"the binder {name} needs a variable: write {name}:VAR with VAR one of "
                    f"{' '.join(grammar.variables)}")
        if name not in grammar.operators:
            return f"operator {name!r} is not declared by this grammar (its operators: {' '.join(grammar.operators)})"
        if var is not None:
            return f"{var!r} is not a variable of this grammar (its variables: {' '.join(grammar.variables)})"
    listed = {"exists=": 0, "for-all=": 1, "count=": 2}  # CURI's eight as CURI lists them
    shown = sorted((t for t in grammar.operators if not operators.get(t).binds), key=lambda t: listed.get(t, -1))
    ops = " ".join(shown)
    binders = " ".join(f"{t}:VAR" for t in grammar.operators if operators.get(t).binds)
    variables = " ".join(grammar.variables[1:])
    return ("unknown token (expected a value, a property such as color?, an operator "
            f"({ops}{' ' + binders if binders else ''}), x{', ' + variables if variables else ''}, S or non-x-S)")


def _binder_var(node: Node) -> str | None:
    if node.kind == "quantifier":
        return "x"
    return split_binder(node.op)[1] if node.kind == "binder" else None


def free_variables(root: Node) -> dict:
    """Map node id -> frozenset of the object variables free in that subtree (``non-x-S``
    counts as a use of x), computed bottom-up without recursion."""
    free = {}
    for node in postorder_nodes(root):
        if node.kind == "variable":
            here = frozenset() if node.op == "S" else frozenset({"x" if node.op == "non-x-S" else node.op})
        else:
            here = frozenset().union(*(free[id(c)] for c in node.children))
            var = _binder_var(node)
            if var is not None:
                here = free[id(node.children[0])] if node.kind == "binder" else frozenset()
                body = free[id(node.children[-1])] - {var}
                here = here | body
        free[id(node)] = here
    return free


def value_stand_ins(grammar: Grammar) -> dict:
    """Value token -> the first value of its type, for every non-integer value of ``grammar``:
    what :func:`program_shape` writes in place of a value.  (Integers stay: which type they
    take, ``LOC`` or ``NUM``, depends on where they stand.)"""
    first = {}
    for tok, kind in grammar.token_kinds.items():
        if kind == "value" and not grammar.is_integer(tok):
            first.setdefault(grammar.value_of[tok], tok)
    return {tok: first[grammar.value_of[tok]] for tok, kind in grammar.token_kinds.items()
            if kind == "value" and not grammar.is_integer(tok)}


def program_shape(text: str, grammar: Grammar, stand_in: dict) -> tuple:
    """``(tokens, shape)`` of a program string: its tokens as :meth:`Program.parse` reads them
    (``lambda`` and ``S.`` dropped, aliases replaced; token k is the k-th postfix node of the
    main program), and the same tokens with each value replaced by its ``stand_in``
    (:func:`value_stand_ins`).  Programs of one shape have one syntax tree but for their value
    leaves: a tool that walks the trees of many programs parses one per shape (thousands of a
    space's programs differ only in a colour or a material) and reads each program's own values
    from its tokens."""
    aliases = grammar.aliases
    tokens = [aliases.get(t, t) for t in text.split() if t not in _IGNORED]
    return tokens, tuple(stand_in.get(t, t) for t in tokens)


def postorder_nodes(root: Node) -> list:
    """The nodes of a syntax tree in postfix order (the order of the program's tokens), without
    recursion."""
    out, todo = [], [(root, False)]
    while todo:
        node, expanded = todo.pop()
        if expanded or not node.children:
            out.append(node)
            continue
        todo.append((node, True))
        todo.extend((c, False) for c in reversed(node.children))
    return out


def _check_scopes(root: Node, grammar: Grammar, tokens, positions, shown):
    """Every variable is bound by an enclosing binder (x: by the final quantifier or a binder
    of x); no binder binds a variable an enclosing binder already binds; ``unique`` takes a
    set that names no bound variable."""
    todo = [(root, frozenset())]
    free = None
    while todo:
        node, bound = todo.pop()
        var = _binder_var(node)
        if node.kind == "variable" and node.op != "S":
            used = "x" if node.op == "non-x-S" else node.op
            if used not in bound:
                if used == "x" and not grammar.is_relational:
                    raise ProgramError(f"{node.op!r} used without a quantifier (end the program with exists= or "
                                       "for-all= to bind x)", shown, positions[node.position])
                binders = " or ".join(f"{b}:{used}" for b in grammar.operators if operators.get(b).binds)
                how = f"{binders}" + (" or a final exists=/for-all=" if used == "x" else "")
                raise ProgramError(f"{node.op!r}: variable {used} is not bound here (no {how} encloses it)",
                                   shown, positions[node.position])
        if node.kind == "unique":
            free = free or free_variables(root)
            names = sorted(free[id(node.children[0])])
            if names:
                raise ProgramError(f"{tokens[node.position]!r}: unique needs a set that names no bound variable, "
                                   f"this one depends on {', '.join(names)}", shown, positions[node.position])
        if var is not None:
            if var in bound:
                raise ProgramError(f"{tokens[node.position]!r}: binds {var} again inside a binder of {var} "
                                   "(shadowing; use another variable)", shown, positions[node.position])
            if node.kind == "binder":
                todo.append((node.children[0], bound))
            todo.append((node.children[-1], bound | {var}))
            continue
        todo.extend((c, bound) for c in node.children)


def _list_and_value(lst: Node, v: Node, i, fail, grammar):
    et = element_type(lst.type)
    if et is None:
        fail(f"expects a list (a property of S or non-x-S) and a value, got {_describe_in(lst.type, grammar)} "
             f"and {_describe_in(v.type, grammar)}", i)
    if v.type == et or (v.type == INT and _int_fits(v.op, et, grammar)):
        return (lst, _retype(v, et))
    fail(f"expects a {et} value to compare the list's elements with, got {_describe_in(v.type, grammar)}", i)


def _prefix_to_postfix(tokens: list, grammar: Grammar, shown: str) -> list:
    kinds = grammar.token_kinds

    def arity(t):
        k = kinds.get(t)
        if k is None:
            return 0  # integers or unknown tokens: the postfix parser reports unknown ones
        return token_arity(t, kinds)

    def read(i):
        """Parse the subtree starting at i; return (postfix tokens, next index)."""
        if i >= len(tokens):
            raise ProgramError("prefix program ends early: an operator is missing operands", shown, len(tokens) - 1)
        out, j = [], i + 1
        for _ in range(arity(tokens[i])):
            sub, j = read(j)
            out.extend(sub)
        return out + [tokens[i]], j

    if tokens[0] in QUANTIFIERS:
        sub, j = read(1)
        if j == len(tokens):
            return sub + [tokens[0]]
    out, j = read(0)
    if j != len(tokens):
        raise ProgramError("leftover tokens after a complete prefix program", shown, j)
    return out


# ------------------------------------------------------------------ rendering
@dataclass(frozen=True)
class _Style:
    exists: str
    forall: str
    and_: str
    or_: str
    not_: str
    minus_x: str
    gt: str
    word: callable
    func: callable


UNICODE = _Style("∃x∈S: ", "∀x∈S: ", " ∧ ", " ∨ ", "¬", "S−x", " > ",
                 lambda w: w, lambda f: f)
LATEX = _Style(r"\exists x \in S:\ ", r"\forall x \in S:\ ", r" \land ", r" \lor ", r"\lnot ",
               r"S_{-x}", " > ", lambda w: w if w.isdigit() else rf"\text{{{latex_text(w)}}}",
               lambda f: rf"\operatorname{{{latex_text(f)}}}")


def _render(node: Node, st: _Style, top=False) -> str:
    op, ch = node.op, node.children
    if node.kind == "quantifier":
        return (st.exists if op == "exists=" else st.forall) + _render(ch[0], st, top=True)
    if node.kind == "constant":
        return st.word(op)
    if node.kind == "variable":
        return {"S": "S", "non-x-S": st.minus_x}.get(op, op)
    if node.kind == "property":
        return f"{st.func(op.rstrip('?'))}({_render(ch[0], st)})"
    if node.kind == "compare":
        return f"{_render(ch[0], st)}{' = ' if op == '=' else st.gt}{_render(ch[1], st)}"
    if node.kind in ("set_quantifier", "count"):
        name = {"exists=": "any", "for-all=": "all", "count=": "count"}[op]
        return f"{st.func(name)}({_render(ch[0], st)} = {_render(ch[1], st)})"
    if op not in CURI_OPERATORS:
        operator = operator_of(op)
        form = operator.unicode if st is UNICODE else operator.latex
        texts = [_render(c, st, top=node.kind == "binder" and k == len(ch) - 1) for k, c in enumerate(ch)]
        text = form(texts, split_binder(op)[1])
        return f"({text})" if node.kind == "binder" and node.type == BOOL and not top else text
    if op == "not":
        inner = _render(ch[0], st, top=True)
        bare = ch[0].kind == "set_quantifier" or ch[0].op == "not"
        return st.not_ + (inner if bare else f"({inner})")
    sep = st.and_ if op == "and" else st.or_
    text = sep.join(_render(c, st) for c in ch)
    return text if top else f"({text})"
