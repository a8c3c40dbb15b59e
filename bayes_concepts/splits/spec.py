"""Reading and checking a split spec (TOML), with the line of every error; the registry of held-out split rules."""
from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ProgramError
from ..registry import Registry, describe
from ..resources import DataFileError, curi_splits_dir
from ..text_files import read_text

from .split import (ITEMS, KINDS, SplitSpecError, _COUNT_KEYS, _EPISODE_KEYS, _FRACTION_KEYS, _INT_TOKEN, _KIND_KEYS,
                    _NAME, _TOP_KEYS)


# ====================================================================== locating lines
class _Record:
    __slots__ = ("path", "line", "header", "atoms")

    def __init__(self, path, line, header):
        self.path, self.line, self.header, self.atoms = path, line, header, []


def _scan_toml(text: str) -> list:
    """Lines of the keys of a (syntactically valid) TOML document.

    Returns one record per table header and per key assignment: its full key path, its line,
    and the strings and bare words of its value with their lines.
    """
    records, prefix = [], ()
    i, n, line = 0, len(text), 1

    def read_string(i, line):
        q = text[i]
        triple = text.startswith(q * 3, i)
        j = i + (3 if triple else 1)
        out = []
        while j < n:
            c = text[j]
            if triple and text.startswith(q * 3, j):
                return "".join(out), j + 3, line
            if not triple and c == q:
                return "".join(out), j + 1, line
            if c == "\\" and q == '"' and j + 1 < n:
                out.append(text[j:j + 2])
                j += 2
                continue
            if c == "\n":
                line += 1
            out.append(c)
            j += 1
        return "".join(out), j, line

    def read_bare(i):
        j = i
        while j < n and (text[j].isalnum() or text[j] in "_-+.:"):
            j += 1
        return text[i:j], j

    def read_key(i, line, stop):
        parts = []
        while i < n and text[i] != stop:
            c = text[i]
            if c in " \t.":
                i += 1
            elif c in "\"'":
                s, i, line = read_string(i, line)
                parts.append(s)
            else:
                word, j = read_bare(i)
                if j == i:  # should not happen in valid TOML; step on
                    j = i + 1
                parts.extend(w for w in word.split(".") if w)
                i = j
        return tuple(parts), i + 1, line

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t\r":
            i += 1
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif c == "[":
            double = text.startswith("[[", i)
            keys, i, line = read_key(i + (2 if double else 1), line, "]")
            if double:
                i += 1
            prefix = keys
            records.append(_Record(prefix, line, True))
        else:
            start_line = line
            keys, i, line = read_key(i, line, "=")
            rec = _Record(prefix + keys, start_line, False)
            records.append(rec)
            depth = 0
            while i < n:
                c = text[i]
                if c in "\"'":
                    at = line
                    s, i, line = read_string(i, line)
                    rec.atoms.append((s, at))
                elif c == "#":
                    while i < n and text[i] != "\n":
                        i += 1
                elif c == "\n":
                    if depth == 0:
                        break
                    line += 1
                    i += 1
                elif c in "[{":
                    depth += 1
                    i += 1
                elif c in "]}":
                    depth -= 1
                    i += 1
                elif c.isalnum() or c in "_-+.":
                    word, i = read_bare(i)
                    rec.atoms.append((word, line))
                else:
                    i += 1
    return records


class _Where:
    """Names the spec (file or ``<spec 'name'>``) and finds lines of keys and tokens in it."""

    def __init__(self, path=None, text=None, label=None):
        self.path = None if path is None else str(path)
        self.label = self.path or label or "<split spec>"
        self._records = _scan_toml(text) if text is not None else []

    def line(self, keys=(), atom=None):
        keys = tuple(keys)
        recs = self._records
        rec = next((r for r in recs if not r.header and r.path == keys), None)
        sub = None
        if rec is None:  # a key inside an inline table: find the table, then the key in it
            cands = [r for r in recs if not r.header and len(r.path) < len(keys) and keys[:len(r.path)] == r.path]
            if cands:
                rec = max(cands, key=lambda r: len(r.path))
                sub = keys[len(rec.path)]
        if rec is None:
            hdr = next((r for r in recs if r.header and r.path == keys), None)
            return hdr.line if hdr is not None else None
        for want in ([atom] if atom is not None else []) + ([sub] if sub is not None else []):
            hit = next((ln for a, ln in rec.atoms if a == want), None)
            if hit is not None:
                return hit
        return rec.line

    def error(self, message, keys=(), atom=None, line=None) -> SplitSpecError:
        if line is None:
            line = self.line(keys, atom)
        message = " ".join(str(message).split())
        if line is None:
            return SplitSpecError(f"{self.label}: {message}")
        return SplitSpecError(f"{self.label} line {line}: {message}")


# ==================================================================== reading a spec
def default_splits_dir() -> Path:
    """CURI's split specs ``hypotheses/splits/``: the installed copy, or the source tree's."""
    try:
        return curi_splits_dir()
    except DataFileError as exc:
        raise SplitSpecError(f"cannot find the split specs: {exc}; pass spec files explicitly") from None


def _read(path) -> tuple:
    path = Path(path)
    text = read_text(path, SplitSpecError, "split spec")
    where = _Where(path, text)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\s*\(at line (\d+), column (\d+)\)", msg)
        if m:
            raise where.error(f"invalid TOML: {msg[:m.start()]} (column {m.group(2)})",
                              line=int(m.group(1))) from None
        if "(at end of document)" in msg:
            last = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
            raise where.error(f"invalid TOML: {msg.replace(' (at end of document)', '')} (at end of file)",
                              line=last) from None
        raise where.error(f"invalid TOML: {msg}") from None
    return raw, where


def load_spec(path, grammar=None) -> dict:
    """Read and validate the split spec file ``path``; return the spec with defaults filled in.

    With a ``grammar`` (a :class:`~bayes_concepts.lot.Grammar`) the tokens are checked against
    it as well; explicit programs and emptiness are checked by :func:`make_split`.
    """
    raw, where = _read(path)
    spec = _validate(raw, where, default_name=Path(path).stem)
    if grammar is not None:
        _check_tokens(spec, grammar, where)
    return spec


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _type_name(v) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "a table"}.get(type(v), type(v).__name__)


def _validate(raw: dict, where: _Where, default_name=None) -> dict:
    if not isinstance(raw, dict):
        raise where.error(f"a split spec must be a table of keys, got {_type_name(raw)}")
    for key in raw:
        if key not in _TOP_KEYS:
            raise where.error(f"unknown key {key!r} (expected one of {', '.join(_TOP_KEYS)})", (key,))

    spec = {}
    name = raw.get("name", default_name)
    if name is None:
        raise where.error("missing key 'name'")
    if not isinstance(name, str) or not _NAME.match(name):
        raise where.error(f"name must be a string of letters, digits, '_', '.' or '-', got {name!r}", ("name",))
    spec["name"] = name
    desc = raw.get("description", "")
    if not isinstance(desc, str):
        raise where.error(f"description must be a string, got {_type_name(desc)}", ("description",))
    spec["description"] = desc
    if "kind" not in raw:
        raise where.error('missing key \'kind\' (expected kind = "all", "random" or "held_out")')
    kind = raw["kind"]
    if kind not in KINDS:
        raise where.error(f'kind must be "all", "random" or "held_out", got {kind!r}', ("kind",))
    spec["kind"] = kind
    for key in raw:
        if key in ("name", "description", "kind") or key in _KIND_KEYS[kind]:
            continue
        users = [k for k in KINDS if key in _KIND_KEYS[k]]
        shown = "[held_out]" if key == "held_out" else repr(key)
        raise where.error(f"{shown} cannot be used with kind = {kind!r} (contradictory rules: it applies to kind = "
                          f"{' or '.join(repr(k) for k in users)})", (key,))

    def integer(key, default, minimum=0):
        v = raw.get(key, default)
        if not _is_int(v) or v < minimum:
            raise where.error(f"{key} must be an integer >= {minimum}, got {v!r}", (key,))
        return v

    def boolean(key, default):
        v = raw.get(key, default)
        if not isinstance(v, bool):
            raise where.error(f"{key} must be true or false, got {v!r}", (key,))
        return v

    def val_fraction(default):
        v = raw.get("val_fraction", default)
        if not _is_number(v) or not 0 <= v < 1:
            raise where.error(f"val_fraction must be a number in [0, 1), got {v!r}", ("val_fraction",))
        return float(v)

    if kind == "all":
        spec["val_fraction"] = val_fraction(0.0)
        spec["val_seed"] = integer("val_seed", 0)
    elif kind == "random":
        spec["fractions"] = _validate_fractions(raw.get("fractions"), where)
        spec["seed"] = integer("seed", 0)
        spec["synonym_aware"] = boolean("synonym_aware", True)
    else:
        spec["held_out"] = _validate_held_out(raw.get("held_out"), where)
        spec["synonym_aware"] = boolean("synonym_aware", False)
        spec["val_fraction"] = val_fraction(0.1)
        spec["val_seed"] = integer("val_seed", 0)
        if "val_programs" in raw:  # the held-out concepts that are val (in neither oracle), given by name
            vp = raw["val_programs"]
            if not isinstance(vp, list) or not all(isinstance(x, str) for x in vp):
                raise where.error(f"val_programs must be an array of concept programs (strings), got "
                                  f"{_type_name(vp)}", ("val_programs",))
            if vp and spec["val_fraction"] > 0 and "val_fraction" in raw:
                raise where.error("val_programs and val_fraction > 0 contradict each other: give one way of "
                                  "choosing val", ("val_programs",))
            spec["val_programs"] = list(vp)
            spec["val_fraction"] = 0.0
    if "episodes" in raw:  # the episode shape of this split's episodes
        ep = raw["episodes"]
        if not isinstance(ep, dict):
            raise where.error(f"episodes must be a table such as {{positives = 5, negatives = 20}}, got "
                              f"{_type_name(ep)}", ("episodes",))
        for key, v in ep.items():
            if key not in _EPISODE_KEYS:
                raise where.error(f"unknown key {key!r} in [episodes] (expected {', '.join(_EPISODE_KEYS)})",
                                  ("episodes", key))
            if not _is_int(v) or v < _EPISODE_KEYS[key]:
                raise where.error(f"episodes.{key} must be an integer >= {_EPISODE_KEYS[key]}, got {v!r}",
                                  ("episodes", key))
        spec["episodes"] = dict(ep)
    if "items" in raw:  # which items each side's episodes are drawn from (an image-level split: "by-set")
        items = raw["items"]
        if items not in ITEMS:
            raise where.error(f"items must be {' or '.join(repr(x) for x in ITEMS)} (by-set: each side's episodes "
                              f"from the items of its own set), got {items!r}", ("items",))
        spec["items"] = items
    return spec


def _validate_fractions(fr, where) -> dict:
    if fr is None:
        raise where.error("kind = 'random' needs fractions = {train = ..., val = ..., test = ...}", ("kind",))
    if not isinstance(fr, dict):
        raise where.error(f"fractions must be a table such as {{train = 0.8, val = 0.05, test = 0.15}}, "
                          f"got {_type_name(fr)}", ("fractions",))
    out = {}
    for key, v in fr.items():
        if key not in _FRACTION_KEYS:
            raise where.error(f"unknown key {key!r} in fractions (expected train, val, test)", ("fractions", key))
        if not _is_number(v) or not 0 <= v <= 1:
            raise where.error(f"fractions.{key} must be a number in [0, 1], got {v!r}", ("fractions", key))
    for key in _FRACTION_KEYS:
        out[key] = float(fr.get(key, 0.0))
    total = sum(out.values())
    if abs(total - 1.0) > 1e-9:
        raise where.error(f"fractions sum to {total:g}, expected 1 (train + val + test)", ("fractions",))
    for key in ("train", "test"):
        if out[key] <= 0:
            raise where.error(f"fractions.{key} must be > 0", ("fractions", key))
    return out


def _token(v, where, keys, what):
    if _is_int(v) and v >= 0:
        return str(v)
    if isinstance(v, str) and len(v.split()) == 1 and v.strip() == v:
        return v
    raise where.error(f"{what} must be a single token (a string such as 'red' or 'color?', or an integer), "
                      f"got {v!r}", keys, v if isinstance(v, str) else None)


def _token_list(v, where, key, what=None):
    keys = ("held_out", key)
    if not isinstance(v, list) or not v:
        raise where.error(f"held_out.{key} must be a non-empty array, got {v!r}", keys)
    return [_token(t, where, keys, what or f"each entry of held_out.{key}") for t in v]


# ======================================================================= split rules
@dataclass(frozen=True)
class SplitRule:
    """A held-out rule: the key ``name`` of a ``[held_out]`` table.

    holds_out(space, value, table) -> bool (n_concepts,): which concepts the rule holds out,
        given its validated ``value`` and the whole validated ``[held_out]`` table (for
        options such as ``pairs_require_any``).
    validate(value, where, key) -> the value to store (raise ``where.error(msg, ("held_out", key))``
        on bad input); default: accept any value.
    tokens(value) -> grammar tokens the value names (checked against the space's grammar).
    options: auxiliary keys of ``[held_out]`` the rule reads; each must come with the rule.
    """

    name: str
    holds_out: Callable
    validate: Callable | None = None
    tokens: Callable | None = None
    options: dict = field(default_factory=dict)

    @property
    def summary(self) -> str:
        """The first paragraph of the rule function's docstring, on one line (help texts)."""
        return describe(self.holds_out)


class SplitRuleRegistry(Registry):
    """Held-out split rules.  A new rule is one registered function::

        @split_rules.register("max_count")
        def max_count(space, value, table):
            '''hold out concepts true on more than ``value`` scenes'''
            return np.asarray(space.counts) > value

    after which a spec may say ``[held_out] max_count = 500``.  Keyword arguments of
    ``register``: ``validate``, ``tokens`` and ``options`` (see :class:`SplitRule`).
    """

    def register(self, name, obj=None, *, validate=None, tokens=None, options=None, replace: bool = False):
        def add(fn):
            Registry.register(self, name, SplitRule(name, fn, validate, tokens, dict(options or {})), replace=replace)
            return fn
        return add if obj is None else add(obj)

    def keys(self) -> tuple:
        """Every key a ``[held_out]`` table may hold: the rules, each followed by its options."""
        out = []
        for name, rule in self.items():
            out.append(name)
            out.extend(rule.options)
        return tuple(out)


split_rules = SplitRuleRegistry("split rule")


def _validate_pairs(pairs, where, key):
    keys = ("held_out", key)
    if not isinstance(pairs, list) or not pairs:
        raise where.error(f"held_out.pairs must be a non-empty array of [token, token] pairs, got {pairs!r}", keys)
    out = []
    for p in pairs:
        if not isinstance(p, list) or len(p) != 2:
            raise where.error(f"each entry of held_out.pairs must be a pair [token, token], got {p!r}", keys,
                              next((t for t in p if isinstance(t, str)), None) if isinstance(p, list) else None)
        a, b = (_token(t, where, keys, "each token of a pair") for t in p)
        if a == b:
            raise where.error(f"held_out.pairs has the pair [{a!r}, {b!r}] of identical tokens "
                              "(use tokens = [...] to hold out a single token)", keys, a)
        out.append([a, b])
    return out


def _validate_counts(counts, where, key):
    keys = ("held_out", key)
    if not isinstance(counts, list) or not counts:
        raise where.error("held_out.counts must be a non-empty array of tables {value = ..., number = ...}, "
                          f"got {counts!r}", keys)
    out = []
    for c in counts:
        if not isinstance(c, dict):
            raise where.error(f"each entry of held_out.counts must be a table {{value = ..., number = ...}}, "
                              f"got {c!r}", keys)
        for k in c:
            if k not in _COUNT_KEYS:
                raise where.error(f"unknown key {k!r} in a held_out.counts entry (expected value, number)", keys, k)
        for k in _COUNT_KEYS:
            if k not in c:
                raise where.error(f"a held_out.counts entry is missing {k!r} (expected {{value = ..., "
                                  "number = ...}})", keys, str(c.get("value")) if "value" in c else None)
        value = _token(c["value"], where, keys, "held_out.counts value")
        number = c["number"]
        if not _is_int(number) or number < 0:
            raise where.error(f"held_out.counts number must be an integer >= 0, got {number!r}", keys, value)
        out.append({"value": value, "number": number})
    return out


def _validate_min_length(v, where, key):
    if not _is_int(v) or v < 1:
        raise where.error(f"held_out.min_length must be an integer >= 1, got {v!r}", ("held_out", key))
    return v


def _validate_programs(progs, where, key):
    keys = ("held_out", key)
    if not isinstance(progs, list) or not progs:
        raise where.error(f"held_out.programs must be a non-empty array of postfix program strings, got {progs!r}",
                          keys)
    for p in progs:
        if not isinstance(p, str):
            raise where.error(f"each entry of held_out.programs must be a string, got {p!r}", keys)
    return list(progs)


def _binder_names(grammar) -> dict:
    """The binder tokens of ``grammar`` (``filter:y``, ...) -> their operator (``filter``)."""
    from ..lot.operators import split_binder
    out = {}
    for tok, kind in grammar.token_kinds.items():
        name, var = split_binder(tok)
        if kind == "operator" and var is not None:
            out[tok] = name
    return out


def _token_sets(space) -> list:
    """Each concept's tokens; a binder token ``filter:y`` also counts as ``filter``."""
    binders = _binder_names(space.grammar) if space.has_grammar else {}
    sets = []
    for p in space.programs:
        toks = p.split()
        if binders:
            toks = toks + [binders[t] for t in toks if t in binders]
        sets.append(frozenset(toks))
    return sets


@split_rules.register("tokens", validate=lambda v, where, key: _token_list(v, where, key),
                      tokens=lambda v: list(v))
def _tokens_rule(space, value, table):
    """the concept's program uses any of these tokens (a binder named alone, filter, matches it
    over every variable: filter:y, filter:z, ...)"""
    wanted = frozenset(value)
    return np.fromiter((not wanted.isdisjoint(t) for t in _token_sets(space)), bool, space.n_concepts)


@split_rules.register("pairs", validate=_validate_pairs, tokens=lambda v: [t for p in v for t in p],
                      options={"pairs_require_any": (lambda v, where, key: _token_list(v, where, key), list)})
def _pairs_rule(space, value, table):
    """the program uses both tokens of some pair (and, with pairs_require_any, one of those tokens; a
    binder named alone matches it over every variable)"""
    pairs = [tuple(p) for p in value]
    need = frozenset(table.get("pairs_require_any", ()))
    return np.fromiter(((not need or not need.isdisjoint(t)) and any(a in t and b in t for a, b in pairs)
                        for t in _token_sets(space)), bool, space.n_concepts)


@split_rules.register("counts", validate=_validate_counts, tokens=lambda v: [c["value"] for c in v])
def _counts_rule(space, value, table):
    """the program compares count= of a constant value with an integer constant"""
    wanted = {(c["value"], str(c["number"])) for c in value}
    mask = np.zeros(space.n_concepts, bool)
    for i, t in enumerate(_token_sets(space)):
        if "count=" in t and _has_count_compare(space.program(i).root, wanted):
            mask[i] = True
    return mask


@split_rules.register("min_length", validate=_validate_min_length)
def _min_length_rule(space, value, table):
    """the program has at least this many tokens"""
    return np.asarray(space.lengths) >= value


def _variable_tokens(grammar) -> tuple:
    """(object variables, binder tokens -> binder name) of a grammar with binders; empty
    otherwise."""
    binders = _binder_names(grammar)
    return (frozenset(getattr(grammar, "variables", ())) if binders else frozenset()), binders


def _skeleton(tokens, variables, binders) -> tuple:
    """Tokens with variable names blanked (variables ``_``, binders by their name)."""
    return tuple("_" if t in variables else binders.get(t, t) for t in tokens)


def alpha_normal_tokens(program) -> tuple:
    """The postfix tokens of a parsed program with every bound variable renamed by the depth
    of its binder (``filter:v1`` over the outermost, ``v2`` inside it, ...; ``x`` of a final
    quantifier kept): alpha-equivalent programs -- equal up to the names of their bound
    variables -- have equal tokens."""
    from ..lot.operators import split_binder
    out = []
    todo = [(program.root, {}, 0, False)]
    while todo:
        node, env, depth, expanded = todo.pop()
        if expanded or not node.children:
            if node.kind == "binder":
                out.append(f"{split_binder(node.op)[0]}:v{depth + 1}")
            elif node.kind == "variable" and node.op in env:
                out.append(env[node.op])
            else:
                out.append(node.op)
            continue
        todo.append((node, env, depth, True))
        kids = []
        for k, child in enumerate(node.children):
            if node.kind == "binder" and k == len(node.children) - 1:
                kids.append((child, {**env, split_binder(node.op)[1]: f"v{depth + 1}"}, depth + 1, False))
            else:
                kids.append((child, env, depth, False))
        todo.extend(reversed(kids))
    return tuple(out)


def find_alpha_equivalent(space, program):
    """The id of the concept of ``space`` that equals ``program`` (a postfix string or a
    Program) up to the names of its bound variables, or None.  Tries the exact program
    first (:meth:`space.find`); a space whose language has no binders has no other match.
    Raises :class:`~bayes_concepts.errors.ProgramError` when the program does not parse."""
    from ..lot import Program
    p = program if isinstance(program, Program) else Program.parse(program, space.grammar)
    i = space.find(p)
    variables, binders = _variable_tokens(space.grammar)
    if i is not None or not binders:
        return i
    p = p.collapsed()
    want, key = _skeleton(p.tokens, variables, binders), alpha_normal_tokens(p)
    for j, text in enumerate(space.programs):
        tokens = text.split()
        if len(tokens) == len(want) and _skeleton(tokens, variables, binders) == want \
                and alpha_normal_tokens(space.program(j)) == key:
            return j
    return None


@split_rules.register("programs", validate=_validate_programs)
def _programs_rule(space, value, table):
    """these programs (each must be a concept of the space, up to the names of bound variables)"""
    mask = np.zeros(space.n_concepts, bool)
    for p in value:
        try:
            i = find_alpha_equivalent(space, p) if space.has_grammar else space.find(p)
        except ProgramError as exc:
            raise SplitRuleError(f"held_out.programs entry {p!r} does not parse ({exc})", p) from None
        if i is None:
            raise SplitRuleError(f"held_out.programs entry {p!r} is not a concept of the space "
                                 f"({space.n_concepts:,} concepts)", p)
        mask[i] = True
    return mask


class SplitRuleError(ValueError):
    """Raised by a rule's ``holds_out`` for a value that does not fit the space; ``atom`` is the
    offending token or program (its line is looked up in the spec)."""

    def __init__(self, message, atom=None):
        super().__init__(message)
        self.atom = atom


def _validate_held_out(h, where) -> dict:
    keys = split_rules.keys()
    if h is None:
        raise where.error("kind = 'held_out' needs a [held_out] table with at least one rule "
                          f"({', '.join(keys)})", ("kind",))
    if not isinstance(h, dict):
        raise where.error(f"held_out must be a table, got {_type_name(h)}", ("held_out",))
    for key in h:
        if key not in keys:
            hint = " -- top-level keys must come before the [held_out] table" if key in _TOP_KEYS else ""
            raise where.error(f"unknown key {key!r} in [held_out] (expected one of {', '.join(keys)}){hint}",
                              ("held_out", key))
    if not h:
        raise where.error(f"[held_out] has no rule (expected any of {', '.join(keys)})", ("held_out",))
    out = {}
    for name, rule in split_rules.items():
        if name in h:
            out[name] = rule.validate(h[name], where, name) if rule.validate else h[name]
        for opt, (validate, _) in rule.options.items():
            if opt in h:
                if name not in h:
                    raise where.error(f"held_out.{opt} needs held_out.{name} (it restricts which programs "
                                      f"a {name[:-1] if name.endswith('s') else name} holds out)", ("held_out", opt))
                out[opt] = validate(h[opt], where, opt)
    return out


def _grammar_name(grammar) -> str:
    """How messages name ``grammar``: "the grammar clevr.pcfg" for a grammar file, "the grammar
    of the space spaces/x" for a space's own copy (every space calls it grammar.pcfg, so its
    file name alone says nothing)."""
    src = Path(str(grammar.source))
    if src.name == "grammar.pcfg" and (src.parent / "manifest.json").is_file():
        return f"the grammar of the space {src.parent}"
    return f"the grammar {src.name}"


def _check_tokens(spec: dict, grammar, where: _Where):
    h = spec.get("held_out")
    if not h:
        return
    kinds = grammar.token_kinds
    gname = _grammar_name(grammar)
    hint = getattr(grammar, "token_hint", None)  # a space of descriptions (ExtensionSpace) names its own tokens
    binders = sorted(set(_binder_names(grammar).values())) if not hint else []
    if hint:
        expected = f"not a token of the space's concept descriptions: expected {hint}"
    elif binders:
        variables = " ".join(getattr(grammar, "variables", ("x",)))
        example = "filter" if "filter" in binders else binders[0]
        expected = (f"not a token of {gname}: expected a value such as 'red', a property such as "
                    f"'color?', an operator or relation of its operators line, a binder alone ({' or '.join(binders)}: "
                    f"over any variable) or with its variable ({example}:y), a variable ({variables}), S or "
                    "an integer")
    else:
        expected = (f"not a token of {gname}: expected a value such as 'red', a property such as "
                    "'color?', an operator, x, S, non-x-S or an integer")

    def known(tok, key):
        if tok in kinds or _INT_TOKEN.match(tok) or tok in binders:
            return
        raise where.error(f"unknown token {tok!r} in held_out.{key} ({expected})", ("held_out", key), tok)

    for name, rule in split_rules.items():
        if name in h and rule.tokens:
            for tok in rule.tokens(h[name]):
                known(tok, name)
        for opt, (_, tokens) in rule.options.items():
            if opt in h and tokens:
                for tok in tokens(h[opt]):
                    known(tok, opt)
    if h.get("counts") and not hint and "count=" not in kinds:
        first = h["counts"][0]["value"]
        raise where.error(f"held_out.counts holds out CURI's count= comparisons, and {gname} has no "
                          "count= operator; hold out its own counting with tokens = [\"count\"] or a pair such as "
                          "pairs = [[\"count\", \"2\"]]", ("held_out", "counts"), first)
    for c in h.get("counts", ()):
        if not (_INT_TOKEN.match(c["value"]) or kinds.get(c["value"]) == "value"):
            raise where.error(f"held_out.counts value {c['value']!r} is not a constant (expected a value such as "
                              "'green' or an integer)", ("held_out", "counts"), c["value"])


def _has_count_compare(root, wanted: set) -> bool:
    """Whether a ``=``/``>`` node compares ``count=`` of constant value v with the integer
    constant k, for some (v, k) in ``wanted`` (either operand order)."""
    for node in root.walk():
        if node.kind != "compare" or len(node.children) != 2:
            continue
        a, b = node.children
        for cnt, other in ((a, b), (b, a)):
            if cnt.kind == "count" and other.kind == "constant":
                value = cnt.children[1]
                if value.kind == "constant" and (value.op, other.op) in wanted:
                    return True
    return False
