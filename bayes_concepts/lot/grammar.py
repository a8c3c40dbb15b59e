"""Reading a PCFG from a grammar file, and the vocabulary it defines.

The grammar file format is documented at the top of ``hypotheses/curi.pcfg``.
A grammar file is the single source of truth for a domain.
A :class:`Grammar` holds

* the *vocabulary* (value types, their constants, property tokens) that the
  program parser and type checker use, and the scene schema it implies
  (:attr:`Grammar.schema`: one attribute per property's attribute, with the
  object-count limits of the ``objects MIN SAMPLE_MIN MAX`` line; without that
  line 1, 2 and 5, CURI's);
* the names of the rejection rules that apply to its programs, in order
  (:attr:`Grammar.rejection_rules`, from the ``reject RULE ...`` lines; a grammar
  without such a line applies none).  Each name must be registered in
  :data:`bayes_concepts.lot.rejection_rules`, otherwise reading the file
  fails with a :class:`GrammarError` naming the file and line;
* the productions with normalised probabilities;
* array forms of both for the numba sampler (:meth:`Grammar.tables`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from ..errors import GrammarError
from ..resources import DataFileError, default_grammar_path as packaged_grammar_path
from ..scenes.schema import Attribute, SceneSchema
from ..text_files import read_text
from .operators import BINDER_SEPARATOR, CURI_OPERATORS, operator_of, operators as registered_operators
from .rule_registry import rejection_rules as registered_rules

#: CURI's operator tokens: the operators of a grammar file without an ``operators`` line.
OPERATORS = CURI_OPERATORS
#: Tokens naming the object variable and the two sets (every grammar has them).
VARIABLES = ("x", "S", "non-x-S")
_VARIABLE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
#: Tokens accepted in CURI's released strings and dropped.
IGNORED = ("lambda", "S.")
#: Comparison operators: a program comparing two constants is rejected by the sampler.
COMPARISONS = ("=", ">")
NUM = "NUM"
#: Object-count limits ``(min_objects, sample_min_objects, max_objects)`` of a grammar
#: file without an ``objects`` line (CURI's: 1..5 objects valid, 2..5 sampled).
DEFAULT_OBJECTS = (1, 2, 5)
_INT = re.compile(r"^[0-9]+$")


@dataclass(frozen=True)
class ValueType:
    """A type of property value: its name, constants (as tokens) and whether ``>`` applies."""

    name: str
    values: tuple
    ordered: bool

    @property
    def integer(self) -> bool:
        return all(_INT.match(v) for v in self.values)


@dataclass(frozen=True)
class Property:
    """A property token (``color?``): the scene attribute it reads and its value type."""

    token: str
    attribute: str
    type: str


@dataclass(frozen=True)
class Production:
    lhs: str
    rhs: tuple
    prob: float
    line: int


class Grammar:
    """A PCFG over CURI-style postfix programs, read from a ``.pcfg`` file.

    ``objects``: ``(min_objects, sample_min_objects, max_objects)`` of the scenes of the
    domain (:attr:`schema`); ``rejection_rules``: names of registered rejection rules
    that apply to the grammar's programs, in order (default none).
    """

    def __init__(self, value_types, properties, productions, start, max_depth, source="<grammar>", *,
                 objects=DEFAULT_OBJECTS, rejection_rules=(), aliases=None, operators=None, variables=(),
                 relations=()):
        self.value_types = {t.name: t for t in value_types}
        self.properties = {p.token: p for p in properties}
        self.productions = tuple(productions)
        self.start = start
        self.max_depth = max_depth
        self.source = source
        self.min_objects, self.sample_min_objects, self.max_objects = (int(k) for k in objects)
        self.rejection_rules = tuple(rejection_rules)
        self.aliases = dict(aliases or {})
        #: the operators the language uses (an ``operators`` line; CURI's eight without one)
        self.operators = tuple(operators) if operators is not None else CURI_OPERATORS
        #: the object variables binders may bind, besides x (a ``variables`` line)
        self.variables = tuple(dict.fromkeys(("x",) + tuple(variables)))
        #: the relations between objects the domain's scenes carry (a ``relations`` line)
        self.relations = tuple(relations)
        self.nonterminals = tuple(dict.fromkeys(p.lhs for p in self.productions))
        self._by_lhs = {nt: tuple(p for p in self.productions if p.lhs == nt) for nt in self.nonterminals}
        self._check()

    # ------------------------------------------------------------------ reading
    @classmethod
    def from_file(cls, path) -> "Grammar":
        path = Path(path)
        text = read_text(path, GrammarError, "grammar file")
        return cls.from_text(text, source=str(path))

    @classmethod
    def from_text(cls, text: str, source: str = "<grammar>") -> "Grammar":
        value_types, properties, groups, rejection_rules, aliases = [], [], [], [], {}
        start, max_depth, objects = None, 6, None
        declared = {}  # 'operators' / 'variables' / 'relations' -> names
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            where = f"{source} line {lineno}"
            words = line.split()
            if "->" in words:
                arrow = words.index("->")
                if arrow != 1:
                    raise GrammarError(f"{where}: a rule needs exactly one symbol before '->'")
                lhs, rest = words[0], words[2:]
                weight = Fraction(1)
                if "@" in rest:
                    at = rest.index("@")
                    if at != len(rest) - 2:
                        raise GrammarError(f"{where}: '@' must be followed by exactly one weight at the end of the line")
                    try:
                        weight = Fraction(rest[-1])
                    except (ValueError, ZeroDivisionError):
                        raise GrammarError(f"{where}: weight {rest[-1]!r} is not a number") from None
                    if weight <= 0:
                        raise GrammarError(f"{where}: weight must be positive, got {rest[-1]}")
                    rest = rest[:at]
                alternatives, current = [], []
                for w in rest:
                    if w == "|":
                        alternatives.append(tuple(current))
                        current = []
                    else:
                        current.append(w)
                alternatives.append(tuple(current))
                if any(len(a) == 0 for a in alternatives):
                    raise GrammarError(f"{where}: empty alternative in rule for {lhs}")
                groups.append((lhs, alternatives, weight, lineno))
            elif words[0] == "value":
                ordered = len(words) > 2 and words[2] == "<"
                values = tuple(words[3:] if ordered else words[2:])
                if len(words) < 3 or not values:
                    raise GrammarError(f"{where}: expected 'value TYPE [<] v1 v2 ...'")
                if len(set(values)) != len(values):
                    raise GrammarError(f"{where}: repeated value in type {words[1]}")
                value_types.append(ValueType(words[1], values, ordered))
            elif words[0] == "property":
                if len(words) != 4 or not words[1].endswith("?"):
                    raise GrammarError(f"{where}: expected 'property TOKEN? ATTRIBUTE TYPE'")
                properties.append(Property(words[1], words[2], words[3]))
            elif words[0] == "start":
                if len(words) != 2:
                    raise GrammarError(f"{where}: expected 'start SYMBOL'")
                start = words[1]
            elif words[0] == "max_depth":
                if len(words) != 2 or not _INT.match(words[1]):
                    raise GrammarError(f"{where}: expected 'max_depth N' with a whole number N")
                max_depth = int(words[1])
            elif words[0] == "objects":
                if objects is not None:
                    raise GrammarError(f"{where}: a second 'objects' line")
                objects = _read_objects(words, where)
            elif words[0] == "reject":
                rejection_rules.extend(_read_reject(words, rejection_rules, where))
            elif words[0] in ("operators", "variables", "relations"):
                declared[words[0]] = _read_names(words, declared, where)
            elif words[0] == "alias":
                if len(words) != 3 or words[1] in aliases:
                    raise GrammarError(f"{where}: expected 'alias TOKEN VALUE' with a TOKEN not aliased before")
                aliases[words[1]] = (words[2], where)
            else:
                raise GrammarError(f"{where}: cannot read {words[0]!r} (expected a rule 'LHS -> ...', "
                                   "'value', 'property', 'start', 'max_depth', 'objects', 'reject', 'alias', 'operators', "
                                   "'variables' or 'relations')")
        if start is None:
            raise GrammarError(f"{source}: no 'start SYMBOL' line")
        # normalise: each LHS's group weights sum to 1, split evenly inside a group
        totals = {}
        for lhs, alternatives, weight, _ in groups:
            totals[lhs] = totals.get(lhs, 0) + weight
        productions = []
        for lhs, alternatives, weight, lineno in groups:
            share = weight / totals[lhs] / len(alternatives)
            productions.extend(Production(lhs, alt, float(share), lineno) for alt in alternatives)
        known = {v for t in value_types for v in t.values}
        for token, (value, where) in aliases.items():
            if value not in known or token in known:
                raise GrammarError(f"{where}: alias {token} {value}: the value must be a constant of a 'value' "
                                   "type and the alias must not be one")
        return cls(value_types, properties, productions, start, max_depth, source,
                   objects=objects or DEFAULT_OBJECTS, rejection_rules=rejection_rules,
                   aliases={t: v for t, (v, _) in aliases.items()}, operators=declared.get("operators"),
                   variables=declared.get("variables", ()), relations=declared.get("relations", ()))

    def _check(self):
        src = self.source
        if not 1 <= self.min_objects <= self.sample_min_objects <= self.max_objects:
            raise GrammarError(f"{src}: objects {self.min_objects} {self.sample_min_objects} {self.max_objects}: "
                               "need 1 <= MIN <= SAMPLE_MIN <= MAX")
        for name in self.rejection_rules:
            if name not in registered_rules:
                raise GrammarError(f"{src}: {_unknown_rule(name, registered_rules)}")
        for name in self.operators:
            if name not in registered_operators:
                raise GrammarError(f"{src}: operators: unknown operator {name!r} (registered: "
                                   f"{' '.join(registered_operators.names())}; a new operator is registered in "
                                   "bayes_concepts.lot.operators.operators before the grammar is read)")
        for name in self.variables:
            if not _VARIABLE_NAME.match(name) or name in VARIABLES[1:]:
                raise GrammarError(f"{src}: variables: {name!r} is not a variable name (lower-case letters, digits, _)")
            if name in registered_operators or name in self.properties:
                raise GrammarError(f"{src}: variables: {name!r} is also an operator or property token")
        for p in self.properties.values():
            if p.type not in self.value_types:
                raise GrammarError(f"{src}: property {p.token} has unknown type {p.type!r}")
        attributes = {p.attribute for p in self.properties.values()}
        for name in self.operators:
            op = registered_operators.get(name)
            if op.kind == "relation" and op.check is not None:
                if name.startswith("same_") and name[5:] not in attributes:
                    raise GrammarError(f"{src}: operators: {name} compares attribute {name[5:]!r}, which no "
                                       "property of this grammar reads")
                if not name.startswith("same_") and name not in self.relations:
                    raise GrammarError(f"{src}: operators: relation {name!r} is not on the 'relations' line "
                                       f"(the scene schema's relations: {' '.join(self.relations) or 'none'})")
        if self.start not in self._by_lhs:
            raise GrammarError(f"{src}: start symbol {self.start!r} has no rule")
        known = self.token_kinds
        for p in self.productions:
            for sym in p.rhs:
                if sym in self._by_lhs:
                    continue
                if sym not in known:
                    raise GrammarError(f"{src} line {p.line}: {sym!r} is neither a nonterminal (no rule has it "
                                       "on the left) nor a known token (operator, variable, property or value)")
        seen = {}
        for t in self.value_types.values():
            for v in t.values:
                if not _INT.match(v) and v in seen:
                    raise GrammarError(f"{src}: value {v!r} belongs to both {seen[v]} and {t.name}")
                seen[v] = t.name
                if v in self.operators or v in VARIABLES or v in self.variables or v in self.properties:
                    raise GrammarError(f"{src}: value {v!r} is also an operator, variable or property token")

    # ---------------------------------------------------------------- vocabulary
    @cached_property
    def token_kinds(self) -> dict:
        """Map token -> kind: 'operator', 'variable', 'property', 'value' (non-integer constants)."""
        kinds = {}
        for name in self.operators:
            if registered_operators.get(name).binds:
                kinds.update({f"{name}{BINDER_SEPARATOR}{v}": "operator" for v in self.variables})
            else:
                kinds[name] = "operator"
        kinds.update({t: "variable" for t in VARIABLES + self.variables})
        kinds.update({t: "property" for t in self.properties})
        for vt in self.value_types.values():
            for v in vt.values:
                kinds[v] = "integer" if _INT.match(v) else "value"
        for p in self.productions:  # integer literals (counts) a grammar without integer types uses
            kinds.update({sym: "integer" for sym in p.rhs if _INT.match(sym) and sym not in kinds})
        return kinds

    @cached_property
    def value_of(self) -> dict:
        """Map non-integer constant token -> its value type name."""
        return {v: vt.name for vt in self.value_types.values() for v in vt.values if not _INT.match(v)}

    def constant_code(self, node) -> int:
        """The integer code a constant node of a program stands for: a number (type ``NUM`` or
        ``INT``) is itself, a value its index among its value type's values."""
        if node.type in (NUM, "INT"):
            return int(node.op)
        return self.value_types[node.type].values.index(node.op)

    def is_integer(self, token: str) -> bool:
        return bool(_INT.match(token))

    @cached_property
    def schema(self) -> SceneSchema:
        """The scene schema the properties read (attribute names, values, order)."""
        attrs = {}
        for p in self.properties.values():
            vt = self.value_types[p.type]
            values = tuple(int(v) for v in vt.values) if vt.integer else vt.values
            if p.attribute in attrs and attrs[p.attribute].values != values:
                raise GrammarError(f"{self.source}: attribute {p.attribute!r} is read with two different types")
            attrs[p.attribute] = Attribute(p.attribute, values, vt.ordered)
        return SceneSchema(tuple(attrs.values()), max_objects=self.max_objects, min_objects=self.min_objects,
                           sample_min_objects=self.sample_min_objects, relations=self.relations)

    @property
    def is_relational(self) -> bool:
        """Whether the language goes beyond CURI's: an operator other than CURI's eight, or an
        object variable besides x.  Its programs are compiled by the relational plan builder."""
        return any(op not in CURI_OPERATORS for op in self.operators) or len(self.variables) > 1

    # ------------------------------------------------------------ probabilities
    def rules(self, lhs: str) -> tuple:
        return self._by_lhs[lhs]

    def is_nonterminal(self, symbol: str) -> bool:
        return symbol in self._by_lhs

    @cached_property
    def tables(self) -> "GrammarTables":
        return GrammarTables.build(self)

    def __repr__(self):
        return (f"Grammar({self.source!r}, {len(self.nonterminals)} nonterminals, "
                f"{len(self.productions)} productions, start={self.start}, max_depth={self.max_depth})")


@dataclass(frozen=True)
class GrammarTables:
    """Plain arrays describing a grammar, for numba kernels.

    Symbols ``0 .. n_nonterminals-1`` are nonterminals (in :attr:`Grammar.nonterminals`
    order); symbol ``n_nonterminals + t`` is terminal token ``tokens[t]``.

    prod_start:  int32 (n_nonterminals + 1,)  productions of NT k are ``prod_start[k]:prod_start[k+1]``
    prod_cumprob: float64 (n_productions,)    cumulative probability within each NT
    prod_logp:   float64 (n_productions,)    log probability
    rhs_start:   int32 (n_productions + 1,)   rhs symbols of production p are ``rhs[rhs_start[p]:rhs_start[p+1]]``
    rhs:         int32 (total rhs length,)
    token_arity: int8 (n_tokens,)   operands a token pops (quantifiers: 2; 1 when they end a program)
    token_is_constant: bool (n_tokens,)
    token_is_comparison: bool (n_tokens,)
    """

    tokens: tuple
    n_nonterminals: int
    prod_start: np.ndarray
    prod_cumprob: np.ndarray
    prod_logp: np.ndarray
    rhs_start: np.ndarray
    rhs: np.ndarray
    token_arity: np.ndarray
    token_is_constant: np.ndarray
    token_is_comparison: np.ndarray
    start_symbol: int

    @classmethod
    def build(cls, g: Grammar) -> "GrammarTables":
        nts = g.nonterminals
        nt_id = {nt: i for i, nt in enumerate(nts)}
        tokens = tuple(dict.fromkeys(s for p in g.productions for s in p.rhs if s not in nt_id))
        tok_id = {t: len(nts) + i for i, t in enumerate(tokens)}
        prods = [p for nt in nts for p in g.rules(nt)]
        prod_start = np.zeros(len(nts) + 1, np.int32)
        for k, nt in enumerate(nts):
            prod_start[k + 1] = prod_start[k] + len(g.rules(nt))
        probs = np.array([p.prob for p in prods])
        cum = np.empty_like(probs)
        for k in range(len(nts)):
            a, b = prod_start[k], prod_start[k + 1]
            cum[a:b] = np.cumsum(probs[a:b])
            cum[b - 1] = 1.0  # guard against rounding: the last alternative always catches u < 1
        rhs_start = np.zeros(len(prods) + 1, np.int32)
        rhs = []
        for i, p in enumerate(prods):
            rhs.extend(nt_id[s] if s in nt_id else tok_id[s] for s in p.rhs)
            rhs_start[i + 1] = len(rhs)
        kinds = g.token_kinds
        arity = np.array([token_arity(t, kinds) for t in tokens], np.int8)
        is_const = np.array([kinds[t] in ("value", "integer") for t in tokens], bool)
        is_cmp = np.array([t in COMPARISONS for t in tokens], bool)
        return cls(tokens, len(nts), prod_start, cum, np.log(probs), rhs_start,
                   np.array(rhs, np.int32), arity, is_const, is_cmp, nt_id[g.start])


def _read_objects(words, where) -> tuple:
    """``objects MIN SAMPLE_MIN MAX`` -> ``(MIN, SAMPLE_MIN, MAX)``."""
    if len(words) != 4 or not all(_INT.match(w) for w in words[1:]):
        raise GrammarError(f"{where}: expected 'objects MIN SAMPLE_MIN MAX' with whole numbers "
                           "(objects in a valid scene, fewest objects a sampled scene has, most objects)")
    lo, sample_lo, hi = (int(w) for w in words[1:])
    if not 1 <= lo <= sample_lo <= hi:
        raise GrammarError(f"{where}: objects {lo} {sample_lo} {hi}: need 1 <= MIN <= SAMPLE_MIN <= MAX")
    return lo, sample_lo, hi


def _unknown_rule(name, registry) -> str:
    return (f"unknown rejection rule {name!r} (known: {', '.join(registry)}; a new rule is a function "
            "registered with bayes_concepts.lot.rejection_rules.register before the grammar is read)")


def _read_reject(words, earlier, where) -> list:
    """``reject RULE ...`` -> the rule names, each registered and not named before."""
    if len(words) < 2:
        raise GrammarError(f"{where}: expected 'reject RULE [RULE ...]' naming at least one rejection rule")
    names = []
    for name in words[1:]:
        if name not in registered_rules:
            raise GrammarError(f"{where}: {_unknown_rule(name, registered_rules)}")
        if name in earlier or name in names:
            raise GrammarError(f"{where}: rejection rule {name!r} is named twice")
        names.append(name)
    return names


def _read_names(words, declared, where) -> tuple:
    """``operators|variables|relations NAME ...`` -> the names (each once, the line once)."""
    if words[0] in declared:
        raise GrammarError(f"{where}: a second '{words[0]}' line")
    names = tuple(words[1:])
    if not names:
        raise GrammarError(f"{where}: expected '{words[0]} NAME [NAME ...]'")
    if len(set(names)) != len(names):
        raise GrammarError(f"{where}: {words[0]}: a name is given twice")
    return names


def token_arity(token: str, kinds: dict) -> int:
    """Number of operands a token takes (CURI's set quantifiers: 2)."""
    kind = kinds[token]
    if kind in ("value", "integer", "variable"):
        return 0
    if kind == "property" or token == "not":
        return 1
    op = operator_of(token)
    if op is not None and token not in CURI_OPERATORS:
        return op.arity
    return 2


def default_grammar_path() -> Path:
    """CURI's grammar ``hypotheses/curi.pcfg``: the installed copy, or the source tree's."""
    try:
        return packaged_grammar_path()
    except DataFileError as exc:
        raise GrammarError(f"cannot find the default grammar: {exc}; pass a grammar file explicitly") from None


@lru_cache(maxsize=None)
def _load_cached(path: str) -> Grammar:
    return Grammar.from_file(path)


def load_grammar(path=None) -> Grammar:
    """Load a grammar file (default: CURI's), cached per path."""
    return _load_cached(str(Path(path).resolve()) if path is not None else str(default_grammar_path()))


def default_schema() -> SceneSchema:
    """The scene schema of the default grammar file (CURI's, equal to
    :data:`~bayes_concepts.scenes.schema.CURI_SCHEMA`)."""
    return load_grammar().schema


@lru_cache(maxsize=1)
def curi_grammar() -> Grammar:
    """CURI's grammar, as shipped in ``hypotheses/curi.pcfg`` (loaded once per process)."""
    return load_grammar()

