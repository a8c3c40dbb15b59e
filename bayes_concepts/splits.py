"""Splits of a hypothesis space into train / val / test concepts.

A :class:`Split` assigns every concept of a :class:`~bayes_concepts.spaces.hypothesis_space.HypothesisSpace`
to sides ``train``, ``val`` and ``test`` (sorted ``int64`` arrays of concept ids).  CURI's nine
splits (Instance IID, Concept IID, Counting, Extrinsic, Intrinsic, Boolean, Binding (colour),
Binding (shape), Complexity; seed paper Appendix C) are declared as data, one TOML file per
split in ``hypotheses/splits/<name>.toml``; nothing about them is written in this module.
New splits are another spec file, or a Python predicate (:func:`split_from_predicate`).

>>> space = HypothesisSpace.build("demo")                       # doctest: +SKIP
>>> splits = curi_splits(space)                                  # doctest: +SKIP
>>> print(splits_table(space, splits))                           # doctest: +SKIP
>>> make_split(space, "my_split.toml").test                      # doctest: +SKIP

Spec format
===========

A spec file is TOML (read with :mod:`tomllib`).  Top-level keys:

``name``           the split's name (letters, digits, ``_ . -``); default: the file name without ``.toml``.
``description``    free text (default ``""``).
``kind``           ``"all"``, ``"random"`` or ``"held_out"`` (required).

``kind = "all"`` -- Instance IID: ``train == test ==`` every concept.  ``val`` is empty unless
``val_fraction`` > 0, in which case it is a seeded subset (``val_seed``) of the concepts, which
stay in train and test too.  ::

    name = "instance_iid"
    kind = "all"

``kind = "random"`` -- Concept IID: whole synonym classes (concepts with identical signatures)
are shuffled with ``seed`` (default 0) and dealt to the sides in the proportions
``fractions`` (required; ``train``, ``val``, ``test`` in [0, 1], missing ones 0, summing to 1;
train and test > 0).  ``synonym_aware`` (default **true** for this kind) = false deals single
concepts instead of classes.  ::

    name = "concept_iid"
    kind = "random"
    fractions = {train = 0.80, val = 0.05, test = 0.15}
    seed = 0

``kind = "held_out"`` -- rule-based (the structured splits).  A ``[held_out]`` table holds any
of the rules below; a concept matching **any** rule is *held out*, every other concept is train.

``tokens = ["cylinder"]``
    the concept's program uses any of these tokens.
``pairs = [["green", "or"], ["purple", "and"]]``
    the program uses both tokens of some pair (the two tokens must differ).
``pairs_require_any = ["material?"]``
    (only with ``pairs``) a pair counts only if the program also uses one of these tokens --
    CURI's "related to material" / "related to location" condition.
``counts = [{value = "green", number = 3}]``
    the program has a ``count=`` node whose counted value is the constant ``value``, compared
    with ``=`` or ``>`` (either operand order) against the integer constant ``number``.
``min_length = 11``
    the program has at least this many tokens (>= 1).
``programs = ["x color? red = exists="]``
    these programs (postfix; each must parse and be a concept of the space; an x-free
    program given with its quantifier is matched in its collapsed form; in a relational
    language a program that differs from a concept only in the names of its bound variables
    is that concept: :func:`find_alpha_equivalent`).

Tokens are matched against the tokens of the concept's canonical postfix string -- the form in
``space.programs``, whose x-free programs have lost their final quantifier -- whatever role the
token plays there.  So ``"1"`` matches a location 1 and the number 1 alike (CURI's token
heuristic, kept on purpose).  Every token must be a token of the space's grammar (operator,
variable, property, value, relation) or an integer.  In a relational language a binder is
written with its variable (``filter:y``): a rule naming the binder alone (``"filter"``,
``"exists"``, ``"forall"``) matches it over any variable, one naming ``"filter:y"`` only
over ``y``.  ``counts`` reads CURI's ``count=`` comparisons; a grammar without ``count=``
(CLEVR's counts a set with ``count``) has none, and the rule is an error there: hold out
``count`` with ``tokens`` or ``pairs`` instead.

Further keys of a held-out split: ``synonym_aware`` (default false, as in CURI's structured
splits): when true, a synonym class with one held-out member is held out whole, so no train
concept shares a signature with a held-out one.  ``val_fraction`` (default 0.1, in [0, 1)) and
``val_seed`` (default 0): that fraction of the held-out concepts (whole classes when
``synonym_aware``) is drawn, seeded, as ``val``; the rest is ``test``.  ::

    name = "intrinsic"
    description = "colour x material combinations never seen in training"
    kind = "held_out"
    synonym_aware = false
    val_fraction = 0.1
    val_seed = 0

    [held_out]
    pairs = [["green", "metal"], ["purple", "rubber"], ["cyan", "rubber"],
             ["red", "metal"], ["green", "rubber"]]
    pairs_require_any = ["material?"]

Errors
======

Bad specs raise :class:`SplitSpecError` with a one-line message ``FILE line N: what was wrong``:
TOML syntax errors, unknown keys, wrong value types, keys that do not apply to the ``kind``
(e.g. a ``[held_out]`` table in a random split), fractions not summing to 1, ``min_length`` < 1,
a pair of identical tokens, ``val_fraction`` outside [0, 1), unknown tokens, explicit programs
that do not parse or are not concepts of the space, and rules that hold out no concept (or
every concept).  Checks that need the space (tokens, programs, emptiness) run in
:func:`make_split`; :func:`load_spec` checks the rest (and tokens, if given a grammar).
"""
from __future__ import annotations

import hashlib
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from .errors import BayesConceptsError, ProgramError
from .lot.grammar import curi_grammar
from .registry import Registry, describe
from .resources import DataFileError, curi_splits_dir

SIDES = ("train", "val", "test")
KINDS = ("all", "random", "held_out")

_TOP_KEYS = ("name", "description", "kind", "fractions", "seed", "held_out", "synonym_aware",
             "val_fraction", "val_seed", "val_programs", "episodes")
#: keys (besides name/description/kind) that each kind accepts
_KIND_KEYS = {
    "all": ("val_fraction", "val_seed", "episodes"),
    "random": ("fractions", "seed", "synonym_aware", "episodes"),
    "held_out": ("held_out", "synonym_aware", "val_fraction", "val_seed", "val_programs", "episodes"),
}
#: the keys of a spec's [episodes] table (the episode shape: bayes_concepts.episodes.EpisodeShape)
#: and the least value of each
_EPISODE_KEYS = {"positives": 1, "negatives": 0, "query_positives": 1, "query_negatives": 0}
_FRACTION_KEYS = ("train", "val", "test")
_COUNT_KEYS = ("value", "number")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_INT_TOKEN = re.compile(r"^[0-9]+$")


class SplitSpecError(BayesConceptsError):
    """A split spec that cannot be used; the message names the file and line."""


# =============================================================================== Split
@dataclass
class Split:
    """A split of a space's concepts.

    train, val, test: sorted int64 arrays of concept ids.  In every split but Instance IID the
    three are disjoint and cover the space; Instance IID has ``train == test ==`` all.
    spec:        the validated spec dict (defaults filled in).
    source:      the spec file, or None (a dict spec or a predicate).
    n_concepts:  size of the space the split was made for.
    """

    name: str
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    spec: dict
    source: str | None = None
    description: str = ""
    n_concepts: int | None = None

    def __post_init__(self):
        for side in SIDES:
            setattr(self, side, np.unique(np.asarray(getattr(self, side), np.int64)))
        if self.n_concepts is None:
            tops = [int(a[-1]) + 1 for a in (self.train, self.val, self.test) if len(a)]
            self.n_concepts = max(tops, default=0)

    def ids(self, side: str) -> np.ndarray:
        """Concept ids of ``side``: ``train``, ``val``, ``test``, ``held_out`` (val and test)
        or ``all``."""
        if side in SIDES:
            return getattr(self, side)
        if side == "held_out":
            return np.union1d(self.val, self.test)
        if side == "all":
            return np.arange(self.n_concepts, dtype=np.int64)
        raise ValueError(f"unknown side {side!r} (expected train, val, test, held_out or all)")

    def side_of(self, i: int) -> str:
        """The side of concept ``i``: ``'train'``, ``'val'`` or ``'test'``; where sides overlap
        (Instance IID) the sides joined by ``+``, e.g. ``'train+test'``."""
        i = int(i)
        if not 0 <= i < self.n_concepts:
            raise IndexError(f"concept {i} is not in the space (0..{self.n_concepts - 1})")
        found = [s for s in SIDES if _contains(getattr(self, s), i)]
        return "+".join(found) if found else "none"

    def sizes(self) -> dict:
        return {s: int(len(getattr(self, s))) for s in SIDES}

    def concepts_sha256(self) -> str:
        """sha256 of the split's train, val and test concept sets (not of its name): what a
        model trained on the split saw and what it may be tested on.  Two splits with one name
        but other concepts (another space, another spec) have other hashes; a model's card
        records its training split's (:mod:`bayes_concepts.learners.binding`)."""
        h = hashlib.sha256()
        for side in SIDES:
            ids = np.asarray(getattr(self, side), "<i8")
            h.update(f"{side}:{len(ids)}:".encode())
            h.update(ids.tobytes())
        return h.hexdigest()

    def __repr__(self):
        sz = self.sizes()
        return (f"Split({self.name!r}: train {sz['train']:,}, val {sz['val']:,}, test {sz['test']:,} "
                f"of {self.n_concepts:,} concepts)")


def _contains(sorted_ids: np.ndarray, i: int) -> bool:
    k = np.searchsorted(sorted_ids, i)
    return bool(k < len(sorted_ids) and sorted_ids[k] == i)


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
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SplitSpecError(f"{path}: cannot read split spec ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise SplitSpecError(f"{path}: split spec is not UTF-8 text ({exc.reason})") from None
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
    from .lot.operators import split_binder
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
    from .lot.operators import split_binder
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
    from .lot import Program
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


# ==================================================================== making splits
def _held_out_mask(space, spec: dict, where: _Where) -> np.ndarray:
    h = spec["held_out"]
    mask = np.zeros(space.n_concepts, bool)
    for name, rule in split_rules.items():
        if name not in h:
            continue
        try:
            hit = np.asarray(rule.holds_out(space, h[name], h), bool)
        except SplitRuleError as exc:
            raise where.error(str(exc), ("held_out", name), exc.atom) from None
        if hit.shape != mask.shape:
            raise where.error(f"split rule {name!r} returned shape {hit.shape}, expected ({space.n_concepts},)",
                              ("held_out", name))
        mask |= hit
    return mask


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


def _expand_classes(space, mask: np.ndarray) -> np.ndarray:
    classes = np.asarray(space.synonym_classes)
    return np.isin(classes, np.unique(classes[mask]))


def _carve_val(space, held: np.ndarray, fraction: float, seed: int, by_class: bool) -> tuple:
    """Split sorted ids ``held`` into (val, test): ``fraction`` of them (seeded; whole synonym
    classes if ``by_class``) to val; test keeps at least one concept."""
    held = np.asarray(held, np.int64)
    if fraction <= 0 or len(held) < 2:
        return np.empty(0, np.int64), held
    target = min(int(round(fraction * len(held))), len(held) - 1)
    if target <= 0:
        return np.empty(0, np.int64), held
    rng = np.random.default_rng(seed)
    if not by_class:
        val = np.sort(held[rng.permutation(len(held))[:target]])
    else:
        classes = np.asarray(space.synonym_classes)[held]
        units = np.unique(classes)
        taken, total = [], 0
        for u in units[rng.permutation(len(units))]:
            if total >= target:
                break
            size = int((classes == u).sum())
            if total + size > len(held) - 1:
                continue
            taken.append(u)
            total += size
        val = held[np.isin(classes, taken)]
    return val, np.setdiff1d(held, val, assume_unique=True)


def _random_sides(space, fractions: dict, seed: int, by_class: bool) -> dict:
    n = space.n_concepts
    units = np.asarray(space.synonym_classes) if by_class else np.arange(n)
    labels, inverse, sizes = np.unique(units, return_inverse=True, return_counts=True)
    order = np.random.default_rng(seed).permutation(len(labels))
    cut_train = fractions["train"] * n
    cut_val = (fractions["train"] + fractions["val"]) * n
    side_of_unit = np.empty(len(labels), np.int8)
    done = 0.0
    for u in order:
        mid = done + sizes[u] / 2.0
        side_of_unit[u] = 0 if mid < cut_train else (1 if mid < cut_val else 2)
        done += sizes[u]
    side = side_of_unit[inverse.ravel()]
    return {s: np.flatnonzero(side == k) for k, s in enumerate(SIDES)}


def make_split(space, spec_or_path) -> Split:
    """The split of ``space`` that a spec (a file path, or a spec dict as :func:`load_spec`
    returns or as written in a file) describes."""
    if isinstance(spec_or_path, dict):
        label = f"<split spec {spec_or_path.get('name', '?')!r}>"
        where, source = _Where(label=label), None
        spec = _validate(spec_or_path, where)
    else:
        raw, where = _read(spec_or_path)
        source = str(spec_or_path)
        spec = _validate(raw, where, default_name=Path(spec_or_path).stem)
    _check_tokens(spec, space.grammar, where)
    n = space.n_concepts
    kind = spec["kind"]
    if kind == "all":
        everything = np.arange(n, dtype=np.int64)
        val, _ = _carve_val(space, everything, spec["val_fraction"], spec["val_seed"], False)
        sides = {"train": everything, "val": val, "test": everything}
    elif kind == "random":
        sides = _random_sides(space, spec["fractions"], spec["seed"], spec["synonym_aware"])
        for side in ("train", "test"):
            if not len(sides[side]):
                raise where.error(f"the random split leaves {side} empty ({n:,} concepts)", ("fractions",))
    else:
        mask = _held_out_mask(space, spec, where)
        if spec["synonym_aware"]:
            mask = _expand_classes(space, mask)
        if not mask.any():
            raise where.error(f"the [held_out] rules match no concept of the space ({n:,} concepts): "
                              "the held-out side would be empty", ("held_out",))
        if mask.all():
            raise where.error(f"the [held_out] rules match every concept of the space ({n:,}): "
                              "train would be empty", ("held_out",))
        if spec.get("val_programs"):  # val named: each must be a held-out concept of the space
            index = {p: i for i, p in enumerate(space.programs)}
            missing = [p for p in spec["val_programs"] if p not in index]
            if missing:
                raise where.error(f"val_programs names {missing[0]!r}, which is not a concept of the space",
                                  ("val_programs",))
            val = np.array(sorted({index[p] for p in spec["val_programs"]}), np.int64)
            if not mask[val].all():
                raise where.error(f"val_programs names {space.programs[int(val[~mask[val]][0])]!r}, which the "
                                  "[held_out] rules do not hold out (val concepts are held out)", ("val_programs",))
            test = np.setdiff1d(np.flatnonzero(mask), val)
            if not len(test):
                raise where.error("val_programs takes every held-out concept: test would be empty", ("val_programs",))
        else:
            val, test = _carve_val(space, np.flatnonzero(mask), spec["val_fraction"], spec["val_seed"],
                                   spec["synonym_aware"])
        sides = {"train": np.flatnonzero(~mask), "val": val, "test": test}
    return Split(spec["name"], sides["train"], sides["val"], sides["test"], spec, source,
                 spec["description"], n)


def split_from_predicate(space, name: str, predicate: Callable, *, val_fraction: float = 0.1,
                         val_seed: int = 0, synonym_aware: bool = False, description: str = "") -> Split:
    """A held-out split given by ``predicate(program: Program) -> bool`` (True: held out).

    The held-out concepts (whole synonym classes when ``synonym_aware``) are divided into val
    (``val_fraction`` of them, seeded by ``val_seed``) and test, as for spec files.
    """
    label = f"split {name!r}"
    if not isinstance(name, str) or not _NAME.match(name):
        raise SplitSpecError(f"{label}: name must be letters, digits, '_', '.' or '-'")
    if not _is_number(val_fraction) or not 0 <= val_fraction < 1:
        raise SplitSpecError(f"{label}: val_fraction must be a number in [0, 1), got {val_fraction!r}")
    if not _is_int(val_seed) or val_seed < 0:
        raise SplitSpecError(f"{label}: val_seed must be an integer >= 0, got {val_seed!r}")
    n = space.n_concepts
    mask = np.fromiter((bool(predicate(space.program(i))) for i in range(n)), bool, n)
    if synonym_aware:
        mask = _expand_classes(space, mask)
    if not mask.any():
        raise SplitSpecError(f"{label}: the predicate holds out no concept of the space ({n:,} concepts)")
    if mask.all():
        raise SplitSpecError(f"{label}: the predicate holds out every concept of the space ({n:,}): "
                             "train would be empty")
    val, test = _carve_val(space, np.flatnonzero(mask), float(val_fraction), int(val_seed), bool(synonym_aware))
    spec = {"name": name, "description": description, "kind": "predicate",
            "predicate": getattr(predicate, "__qualname__", repr(predicate)),
            "synonym_aware": bool(synonym_aware), "val_fraction": float(val_fraction), "val_seed": int(val_seed)}
    return Split(name, np.flatnonzero(~mask), val, test, spec, None, description, n)


def make_splits(space, specs: Iterable) -> dict:
    """``{name: Split}`` for spec files / dicts, in the given order; two specs with the same
    name are an error."""
    out, origin = {}, {}
    for s in specs:
        split = make_split(space, s)
        if split.name in out:
            where = _Where(split.source, Path(split.source).read_text(encoding="utf-8")) if split.source \
                else _Where(label=f"<split spec {split.name!r}>")
            raise where.error(f"split name {split.name!r} is already used by {origin[split.name]}", ("name",))
        out[split.name] = split
        origin[split.name] = split.source or "a spec given earlier"
    return out


def spec_files(directory=None) -> list:
    """The ``*.toml`` spec files of ``directory`` (default :func:`default_splits_dir`), sorted by name."""
    d = Path(directory) if directory is not None else default_splits_dir()
    if not d.is_dir():
        raise SplitSpecError(f"{d}: not a directory of split specs")
    return sorted(d.glob("*.toml"))


def curi_splits(space, directory=None) -> dict:
    """Every split declared in ``hypotheses/splits/*.toml`` (CURI's nine), as ``{name: Split}``.

    CURI's specs name CURI's tokens: on a space built from another grammar a spec naming a
    token that grammar lacks is an error naming the file and line (use :func:`load_splits`,
    which offers CURI's splits only for CURI-grammar spaces)."""
    files = spec_files(directory)
    if not files:
        raise SplitSpecError(f"{directory or default_splits_dir()}: no split spec files (*.toml)")
    return make_splits(space, files)


def is_curi_grammar(grammar) -> bool:
    """Whether ``grammar`` has CURI's vocabulary (tokens and their kinds), so CURI's split specs apply."""
    return grammar.token_kinds == curi_grammar().token_kinds


def domain_independent_specs() -> dict:
    """``{name: path}`` of the built-in specs that name no token (kinds ``all`` and ``random``:
    Instance IID and Concept IID), which apply to a space of any grammar."""
    found = {}
    for path in spec_files():
        raw, _ = _read(path)
        if raw.get("kind") in ("all", "random"):
            found[str(raw.get("name", path.stem))] = path
    return found


def load_splits(space, names=None, specs=()) -> dict:
    """The splits called ``names`` (default: every available one), as ``{name: Split}``.

    Available: the split spec files ``specs`` (paths or dicts), and CURI's nine built-in
    specs when the space's grammar is CURI's.  Whatever the grammar, the built-in splits
    that name no token (``concept_iid``, ``instance_iid``: :func:`domain_independent_specs`)
    can be asked for by name; "every available one" of a space of another grammar is its own
    specs only.  Only the specs asked for are read and made, so ``names=["counting"]``
    never touches the other eight.  A spec that names its split like a built-in split is an
    error (rename it), as are two specs with one name and an unknown name (the message
    lists the known ones).
    """
    own = {}
    for s in specs or ():
        spec = s if isinstance(s, dict) else load_spec(s)
        name = spec.get("name")
        label = s if not isinstance(s, dict) else f"<split spec {name!r}>"
        if name in own:
            raise SplitSpecError(f"{label}: split name {name!r} is already used by {own[name][1]}")
        own[name] = (s, label)
    curi = is_curi_grammar(space.grammar)
    builtin = {p.stem: p for p in spec_files()} if curi else domain_independent_specs()
    for name, (_, label) in own.items():
        if name in builtin:
            raise SplitSpecError(f"{label}: split name {name!r} is the name of a built-in split "
                                 f"({builtin[name]}); give your split another name")
    everything = (list(builtin) if curi else []) + list(own)
    wanted = everything if names is None or list(names) == ["all"] else list(names)
    unknown = [n for n in wanted if n not in own and n not in builtin]
    if unknown:
        known = list(builtin) + list(own)
        raise SplitSpecError(f"unknown split {', '.join(map(repr, unknown))} (known: {', '.join(known) or 'none'}"
                             + ("" if curi else "; CURI's other splits name CURI's tokens and apply only to "
                                                "CURI-grammar spaces: pass --spec")
                             + ")")
    return {n: make_split(space, own[n][0] if n in own else builtin[n]) for n in dict.fromkeys(wanted)}


# ========================================================================= statistics
def _as_list(splits) -> list:
    return list(splits.values()) if isinstance(splits, dict) else list(splits)


def _leakage(space, split: Split) -> int:
    classes = np.asarray(space.synonym_classes)
    held = split.ids("held_out")
    return int(np.isin(classes[held], classes[split.train]).sum())


def split_stats(space, split: Split) -> dict:
    """Sizes, leakage and lengths of a split.

    leakage: held-out (val or test) concepts whose synonym class has a train member (a concept
    in train itself counts, so for Instance IID every test concept leaks).
    overlap: held-out concepts that are themselves train concepts.
    synonym_classes / mean_length / length_histogram: per side (histogram: {length: concepts}).
    """
    if split.n_concepts != space.n_concepts:
        raise ValueError(f"split {split.name!r} was made for {split.n_concepts:,} concepts, "
                         f"the space has {space.n_concepts:,}")
    classes = np.asarray(space.synonym_classes)
    lengths = np.asarray(space.lengths)
    held = split.ids("held_out")
    out = {"name": split.name, "n_concepts": int(space.n_concepts)}
    out.update(split.sizes())
    out["leakage"] = _leakage(space, split)
    out["overlap"] = int(len(np.intersect1d(split.train, held, assume_unique=True)))
    out["synonym_classes"] = {s: int(len(np.unique(classes[split.ids(s)]))) for s in SIDES}
    out["mean_length"] = {s: (float(lengths[split.ids(s)].mean()) if len(split.ids(s)) else None) for s in SIDES}
    hist = {}
    for s in SIDES:
        ls, cs = np.unique(lengths[split.ids(s)], return_counts=True)
        hist[s] = {int(a): int(b) for a, b in zip(ls, cs)}
    out["length_histogram"] = hist
    return out


def splits_table(space, splits) -> str:
    """A plain-text table: name, train/val/test sizes, leakage, mean length per side."""
    head = ["split", "train", "val", "test", "leakage", "mean l train", "val", "test"]
    rows = []
    for split in _as_list(splits):
        st = split_stats(space, split)
        ml = [("-" if st["mean_length"][s] is None else f"{st['mean_length'][s]:.2f}") for s in SIDES]
        rows.append([split.name, f"{st['train']:,}", f"{st['val']:,}", f"{st['test']:,}", f"{st['leakage']:,}", *ml])
    widths = [max(len(r[k]) for r in [head] + rows) for k in range(len(head))]

    def fmt(r):
        return "  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths))).rstrip()

    lines = [fmt(head), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows]
    lines.append(f"({space.n_concepts:,} concepts, {space.n_synonym_classes:,} synonym classes; leakage = held-out "
                 "concepts with a synonym in train)")
    return "\n".join(lines)


def splits_json(space, splits) -> dict:
    """``{"splits": {name: {"train": [ids], "val": [ids], "test": [ids], "leakage": n}}}``."""
    out = {}
    for split in _as_list(splits):
        out[split.name] = {s: [int(i) for i in split.ids(s)] for s in SIDES}
        out[split.name]["leakage"] = _leakage(space, split)
    return {"splits": out}


__all__ = ["Split", "SplitSpecError", "load_spec", "make_split", "make_splits", "curi_splits", "load_splits",
           "domain_independent_specs",
           "find_alpha_equivalent", "alpha_normal_tokens",
           "is_curi_grammar", "split_rules", "SplitRule", "SplitRuleError", "spec_files",
           "default_splits_dir", "split_from_predicate", "split_stats", "splits_table", "splits_json"]
