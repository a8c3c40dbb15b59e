"""CLOSURE's question families and CLEVR's question templates as binary scene concepts in
the relational language.

CLOSURE (Bahdanau et al., "CLOSURE: Assessing Systematic Generalization of CLEVR Models",
arXiv:1912.05783) tests CLEVR-trained models on seven families of questions that put
CLEVR's *matching* referring expressions ("the cube that is the same size as ...") in
contexts where CLEVR only uses spatial ones, and compares each with the CLEVR template
family it was derived from (its Figures 8 and 9).  ``hypotheses/closure/families.toml`` holds the 14
templates as data: the English question, its answer kind and a postfix program template in
the relational language of ``notes/relational_spec.md`` (the ``clevr`` grammar), plus the
model accuracies the paper reports (its Tables 1-5).  ``hypotheses/closure/clevr_templates.toml``
holds the 90 question templates of CLEVR 1.0 (the nine question-family files the models
were trained on) as functional programs with their constraints.  This module reads both
files and turns templates into concrete concepts:

* :func:`load_families` -- the families of the file, checked, in file order;
* :func:`instantiate` -- fill a family's slots with CLEVR values and return its concepts;
* :func:`family_concepts` -- the unique concepts of several families, one seed for all;
  :func:`family_instances` -- the same with each concept's answer and question;
* :func:`load_clevr_templates`, :func:`clevr_instances`, :func:`clevr_concepts` -- CLEVR's
  templates and their concepts;
* :func:`load_reported` -- the reported accuracies, with each model's drop per family;
  :func:`family_drops` -- the drops with the families' answer kinds and chance levels,
  absolute and chance-normalised.

A question becomes binary concepts by its answer kind: an existence question or a yes/no
question ("does it have the same ...", "are there more ...") *is* a concept (true where the
answer is yes); "what is the Q of ..." becomes one concept "the Q of ... is v" per value v
of Q; "how many ..." becomes "count = k" for k = 1, 2, 3 (CLOSURE's generator only allows
those answers, Appendix F).  Each concept keeps the answer it stands for (:class:`Instance`).

CLEVR's constraints: NULL slots stay empty; ``OUT_NEQ`` (two expressions name different
objects, sets or counts) is part of the concept, which is false where it fails -- two
compared objects are ``a b same_Q`` (``same_*`` holds only between two objects), other
objects, sets and counts get a conjunct saying they differ; a filling whose constraints fail
on every scene (the two expressions are one, a set is intersected with itself) is drawn
again.

>>> fam = load_families()["compare_mat"]
>>> progs = instantiate(fam, rng=0, n=2)
>>> progs == instantiate(fam, rng=0, n=2) and all(p.split()[-2] == "unique" for p in progs)
True

Filling slots (Appendix F): each of ``<Z> <C> <M> <S>`` of a slot group is a size, colour,
material or shape word or blank; a referring expression keeps at least one filter or a
relation.  Per question: ``<A>`` is drawn uniformly from the attributes, ``<Q>`` uniformly
from the family's ``query_attributes`` other than ``<A>``, each relation slot uniformly;
then for each slot group the number of filled slots ``k`` is uniform on
``kmin..min(max_filters, available)`` (``kmin`` = 1 when the group is the whole description
of its referent, else 0), the ``k`` slots are drawn without replacement from those the
family's constraints leave open, and each gets a uniform value.  CLEVR's scene-level
degeneracy check (a question whose answer stays when a relation is dropped) and its
balancing of answers are not applied.

Spelling: bound variables are named by nesting depth (:data:`DEPTH_VARIABLES`, or the
caller's ``variables``; :data:`CLEVR_DEPTH_VARIABLES` for CLEVR's templates), existence is
``SET exist`` and a body lists its filters (size, colour, material, shape) before its
relations, so one concept has one program string.
"""
from __future__ import annotations

import re
import tomllib
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from .errors import BayesConceptsError
from .resources import data_file

#: CLEVR's attribute values (``question_generation/metadata.json`` of clevr-dataset-gen),
#: its four spatial relations, and the attribute names that fill ``<A>`` / ``<Q>``.
CLEVR_VALUES: dict = {
    "color": ("gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow"),
    "shape": ("cube", "sphere", "cylinder"),
    "material": ("rubber", "metal"),
    "size": ("small", "large"),
    "relation": ("left", "right", "front", "behind"),
    "attribute": ("color", "shape", "material", "size"),
}

#: The attributes of a slot group in slot order ``<Z> <C> <M> <S>``.
SLOT_ATTRIBUTES = ("size", "color", "material", "shape")
SLOT_LETTERS = dict(zip(SLOT_ATTRIBUTES, "ZCMS"))

#: Answers a counting question may have: CLOSURE restricts them to 1, 2, 3 (Appendix F).
COUNT_ANSWERS = (1, 2, 3)

ANSWER_KINDS = ("exist", "yes_no_same", "query", "count", "compare_count")
ROLES = ("train", "test")
#: The object variables of the relational spec.
VARIABLES = ("x", "y", "z")
#: Default names of bound variables by nesting depth (outermost binder first): the spec's
#: variables, in the order ``hypotheses/clevr.pcfg`` uses for its first two levels.
DEPTH_VARIABLES = ("y", "z", "x")

#: English words of the relations in a rendered question (CLEVR's phrasing).
RELATION_WORDS = {"left": "left of", "right": "right of", "front": "in front of", "behind": "behind"}

_FAMILY_KEYS = {"name", "role", "question", "answer_kind", "program", "baseline", "baseline_of",
                "attribute_blank_groups", "query_blank_groups", "query_attributes", "source"}
_REQUIRED_KEYS = ("name", "role", "question", "answer_kind", "program")
_MACRO = re.compile(r"^<Z(\d*)><C\1><M\1><S\1>@([a-z])$")
_RELATION_SLOT = re.compile(r"^<R\d*>$")
_QUESTION_SLOT = re.compile(r"<([ZCMSRAQ])(\d*)>")
_BINDER = re.compile(r"^(filter|exists|forall):([a-z])$")
_ARITY = {"unique": 1, "exist": 1, "count": 1, "not": 1,
          "union": 2, "intersect": 2, "=": 2, ">": 2, "and": 2, "or": 2, "+": 2,
          "left": 2, "right": 2, "front": 2, "behind": 2, "same_<A>": 2, "same_<Q>": 2,
          "same_color": 2, "same_shape": 2, "same_material": 2, "same_size": 2}
_PROPERTIES = {"color?", "shape?", "material?", "size?", "<Q>?"}
_LEAVES = {"S", "<ANS>", *VARIABLES}


class ClosureFamilyError(BayesConceptsError):
    """A CLOSURE family file, family or instantiation request that is not valid."""


# ============================================================== families and their templates
def _group_suffix(group: int) -> str:
    return "" if group == 1 else str(group)


def _group_of(suffix: str) -> int:
    return 1 if suffix == "" else int(suffix)


@dataclass(frozen=True)
class Family:
    """One template family: a CLOSURE test (``role="test"``) or a CLEVR baseline (``"train"``).

    ``program`` is the postfix template (see the header of ``families.toml``); slot groups
    are numbered 1 (``<Z> <C> <M> <S>``), 2 (``<Z2> ...``) and so on.
    """

    name: str
    role: str
    question: str
    answer_kind: str
    program: str
    baseline: str | None = None
    baseline_of: str | None = None
    attribute_blank_groups: tuple = ()
    query_blank_groups: tuple = ()
    query_attributes: tuple = CLEVR_VALUES["attribute"]
    source: str = ""

    @cached_property
    def tree(self):
        """The program template as a tree of ``(token, children)`` pairs."""
        return _parse(self.program.split())

    @cached_property
    def groups(self) -> tuple:
        """The slot groups of the template, sorted."""
        return tuple(sorted({_group_of(m.group(1)) for t in self.program.split() if (m := _MACRO.match(t))}))

    @cached_property
    def relation_slots(self) -> tuple:
        """The relation placeholders of the template (``"<R>"``, ``"<R2>"``), sorted."""
        return tuple(sorted({t for t in self.program.split() if _RELATION_SLOT.match(t)}))

    @property
    def has_attribute(self) -> bool:
        """Whether the template matches an attribute ``<A>`` (a ``same_<A>`` relation)."""
        return "same_<A>" in self.program.split()

    @property
    def has_query(self) -> bool:
        """Whether the template reads or compares an attribute ``<Q>`` (``<Q>?`` or ``same_<Q>``)."""
        tokens = self.program.split()
        return "<Q>?" in tokens or "same_<Q>" in tokens

    @cached_property
    def required_groups(self) -> frozenset:
        """Slot groups that are the whole description of their referent: >= 1 filled slot."""
        need = set()

        def walk(node):
            token, kids = node
            if _BINDER.match(token):
                conjuncts = _conjuncts(kids[1])
                if all(_MACRO.match(c[0]) for c in conjuncts):
                    need.update(_group_of(_MACRO.match(c[0]).group(1)) for c in conjuncts)
            for kid in kids:
                walk(kid)

        walk(self.tree)
        return frozenset(need)


def _conjuncts(node) -> list:
    if node[0] == "and":
        return _conjuncts(node[1][0]) + _conjuncts(node[1][1])
    return [node]


def _arity(token: str) -> int:
    if token in _ARITY:
        return _ARITY[token]
    if _BINDER.match(token) or _RELATION_SLOT.match(token):
        return 2
    if token.endswith("?"):
        return 1
    return 0


def _parse(tokens: Sequence[str]):
    """Postfix tokens -> one ``(token, children)`` tree; ``ValueError`` when not exactly one."""
    stack = []
    for i, token in enumerate(tokens):
        k = _arity(token)
        if len(stack) < k:
            raise ValueError(f"token {i} {token!r} needs {k} operand(s), has {len(stack)}")
        kids = tuple(stack[len(stack) - k:]) if k else ()
        del stack[len(stack) - k:]
        stack.append((token, kids))
    if len(stack) != 1:
        raise ValueError(f"the template leaves {len(stack)} expressions, not one")
    return stack[0]


def _postfix(node) -> list:
    out = []

    def walk(n):
        for kid in n[1]:
            walk(kid)
        out.append(n[0])

    walk(node)
    return out


# ====================================================================== reading the file
def default_families_path() -> Path:
    """The packaged ``hypotheses/closure/families.toml`` (see :func:`~bayes_concepts.resources.data_file`)."""
    return data_file("closure", "families.toml")


def _read_toml(path) -> tuple:
    path = Path(path) if path is not None else default_families_path()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ClosureFamilyError(f"{path}: cannot read the CLOSURE family file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ClosureFamilyError(f"{path}: not UTF-8 text ({exc.reason})") from None
    try:
        return path, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ClosureFamilyError(f"{path}: invalid TOML: {exc}") from None


def _known_token(token: str) -> bool:
    if token in _ARITY or token in _PROPERTIES or token in _LEAVES:
        return True
    if _MACRO.match(token) or _RELATION_SLOT.match(token):
        return True
    b = _BINDER.match(token)
    if b:
        return b.group(2) in VARIABLES
    if token.isdigit():
        return True
    return any(token in CLEVR_VALUES[k] for k in ("color", "shape", "material", "size"))


def _int_list(raw, key, fail) -> tuple:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(g, int) and not isinstance(g, bool) for g in value):
        fail(f"{key} must be a list of slot-group numbers, got {value!r}")
    return tuple(value)


def _family(raw, fail) -> Family:
    unknown = sorted(set(raw) - _FAMILY_KEYS)
    if unknown:
        fail(f"unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_FAMILY_KEYS))})")
    for key in _REQUIRED_KEYS:
        if key not in raw:
            fail(f"missing key {key!r}")
    for key in ("name", "role", "question", "answer_kind", "program", "baseline", "baseline_of", "source"):
        if key in raw and (not isinstance(raw[key], str) or not raw[key].strip()):
            fail(f"{key} must be a non-empty string, got {raw[key]!r}")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", raw["name"]):
        fail("name must be letters, digits, '_', '.' or '-'")
    if raw["role"] not in ROLES:
        fail(f"role must be one of {', '.join(ROLES)}, got {raw['role']!r}")
    if raw["answer_kind"] not in ANSWER_KINDS:
        fail(f"answer_kind must be one of {', '.join(ANSWER_KINDS)}, got {raw['answer_kind']!r}")
    queries = raw.get("query_attributes", list(CLEVR_VALUES["attribute"]))
    if (not isinstance(queries, list) or not queries
            or not all(q in CLEVR_VALUES["attribute"] for q in queries) or len(set(queries)) != len(queries)):
        fail(f"query_attributes must be distinct names among {', '.join(CLEVR_VALUES['attribute'])}, got {queries!r}")
    family = Family(name=raw["name"], role=raw["role"], question=raw["question"],
                    answer_kind=raw["answer_kind"], program=raw["program"],
                    baseline=raw.get("baseline"), baseline_of=raw.get("baseline_of"),
                    attribute_blank_groups=_int_list(raw, "attribute_blank_groups", fail),
                    query_blank_groups=_int_list(raw, "query_blank_groups", fail),
                    query_attributes=tuple(queries), source=raw.get("source", ""))
    _check_template(family, fail)
    return family


def _check_template(family: Family, fail) -> None:
    tokens = family.program.split()
    bad = [t for t in tokens if not _known_token(t)]
    if bad:
        fail(f"program has unknown token(s) {', '.join(repr(t) for t in bad)}")
    for t in tokens:
        m = _MACRO.match(t)
        if m and m.group(2) not in VARIABLES:
            fail(f"program token {t!r} names variable {m.group(2)!r} (variables: {', '.join(VARIABLES)})")
    try:
        family.tree
    except ValueError as exc:
        fail(f"program is not one postfix expression: {exc}")
    # The question's slots and the program's placeholders must agree.
    found = [(m.group(1), m.group(2)) for m in _QUESTION_SLOT.finditer(family.question)]
    q_groups = {}
    for letter, suffix in found:
        if letter in "ZCMS":
            q_groups.setdefault(_group_of(suffix), set()).add(letter)
    for g, letters in sorted(q_groups.items()):
        if letters != set("ZCMS"):
            fail(f"question slot group {g} has only {''.join(sorted(letters))} of <Z> <C> <M> <S>")
    if tuple(sorted(q_groups)) != family.groups:
        fail(f"question slot groups {sorted(q_groups)} differ from the program's {list(family.groups)}")
    q_relations = sorted({f"<R{s}>" for letter, s in found if letter == "R"})
    if tuple(q_relations) != family.relation_slots:
        fail(f"question relations {q_relations} differ from the program's {list(family.relation_slots)}")
    if any(letter == "A" for letter, _ in found) != family.has_attribute:
        fail("the question has <A> but the program no same_<A>, or the other way round")
    if any(letter == "Q" for letter, _ in found) != family.has_query:
        fail("the question has <Q> but the program no <Q>? or same_<Q>, or the other way round")
    if any(s for letter, s in found if letter in "AQ"):
        fail("<A> and <Q> take no number")
    has_answer = "<ANS>" in tokens
    if has_answer != (family.answer_kind in ("query", "count")):
        fail(f"answer_kind {family.answer_kind!r} needs {'an' if not has_answer else 'no'} <ANS> in the program")
    if family.answer_kind == "query" and not family.has_query:
        fail("a query family needs <Q>")
    for key, needs, flag in (("attribute_blank_groups", "<A>", family.has_attribute),
                             ("query_blank_groups", "<Q>", family.has_query)):
        groups = getattr(family, key)
        if groups and not flag:
            fail(f"{key} given but the template has no {needs}")
        missing = sorted(set(groups) - set(family.groups))
        if missing:
            fail(f"{key} names slot group(s) {missing} the template does not have")
    if family.has_query and family.has_attribute and len(family.query_attributes) < 2:
        fail("query_attributes needs two names at least: <Q> must differ from <A>")
    if family.role == "test" and family.baseline_of:
        fail("baseline_of is for role = \"train\" entries")
    if family.role == "train" and family.baseline:
        fail("baseline is for role = \"test\" entries")


def _named_entries(path, raw: dict, key: str, parse, others=()) -> dict:
    """The ``[[key]]`` entries of a TOML file read as ``raw``, each parsed by ``parse(entry,
    fail)`` into an object with a unique ``name``: ``{name: object}`` in file order.  Top-level
    keys other than ``key`` and ``others``, no entries, an entry that is not a table and a name
    used twice are one-line :class:`ClosureFamilyError` s naming the file and the entry."""
    allowed = (key, *others)
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise ClosureFamilyError(f"{path}: unknown top-level key(s) {', '.join(unknown)} (allowed: "
                                 f"{', '.join(allowed)})")
    entries = raw.get(key)
    if not isinstance(entries, list) or not entries:
        raise ClosureFamilyError(f"{path}: no [[{key}]] entries")
    out = {}
    for i, entry in enumerate(entries, start=1):
        label = f"{key} #{i}"
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            label += f" ({entry['name']!r})"

        def fail(message, label=label):
            raise ClosureFamilyError(f"{path}: {label}: {message}")

        if not isinstance(entry, dict):
            fail("must be a table")
        obj = parse(entry, fail)
        if obj.name in out:
            fail(f"name {obj.name!r} is already used")
        out[obj.name] = obj
    return out


def load_families(path=None) -> dict:
    """The families of a CLOSURE family file, name -> :class:`Family`, in file order.

    Parameters
    ----------
    path : str or Path, optional
        A TOML file in the format of ``hypotheses/closure/families.toml`` (default: that file).

    Raises
    ------
    ClosureFamilyError
        A one-line message naming the file and the entry for any problem.
    """
    path, raw = _read_toml(path)
    families = _named_entries(path, raw, "family", _family, others=("reported",))
    for family in families.values():
        for key, role in (("baseline", "train"), ("baseline_of", "test")):
            other = getattr(family, key)
            if other is None:
                continue
            back = "baseline_of" if key == "baseline" else "baseline"
            if other not in families or families[other].role != role:
                raise ClosureFamilyError(f"{path}: family {family.name!r}: {key} {other!r} is not a "
                                         f"role = \"{role}\" family of the file")
            if getattr(families[other], back) != family.name:
                raise ClosureFamilyError(f"{path}: family {family.name!r}: {key} {other!r} does not name "
                                         f"it back in its {back}")
    return families


# ========================================================================= instantiation
@dataclass(frozen=True)
class Filling:
    """The values chosen for one question of a family.

    ``slots`` maps every slot of the question (``"<Z2>"``) to a value or ``None`` (blank);
    ``relations`` maps ``"<R>"``/``"<R2>"`` to a relation; ``attribute``/``query`` are the
    attribute names of ``<A>``/``<Q>`` (``None`` when the family has none).
    """

    slots: tuple
    relations: tuple
    attribute: str | None
    query: str | None

    def key(self) -> tuple:
        return (self.slots, self.relations, self.attribute, self.query)


def _values(values) -> Mapping:
    if values is None:
        return CLEVR_VALUES
    if not isinstance(values, Mapping):
        raise ClosureFamilyError(f"values must be a mapping of attribute -> values, got {type(values).__name__}")
    merged = dict(CLEVR_VALUES)
    for key, vals in values.items():
        if key not in CLEVR_VALUES:
            raise ClosureFamilyError(f"values: unknown key {key!r} (allowed: {', '.join(CLEVR_VALUES)})")
        vals = tuple(vals) if not isinstance(vals, str) else None
        if not vals or not all(isinstance(v, str) and v and not any(c.isspace() for c in v) for v in vals):
            raise ClosureFamilyError(f"values[{key!r}] must be a non-empty list of single-token strings")
        if key == "attribute" and not set(vals) <= set(SLOT_ATTRIBUTES):
            raise ClosureFamilyError(f"values['attribute'] must name attributes among {', '.join(SLOT_ATTRIBUTES)}")
        merged[key] = vals
    return merged


def _rng(rng) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng >= 0:
        return np.random.default_rng(int(rng))
    raise ClosureFamilyError(f"rng must be a numpy Generator or a seed >= 0, got {rng!r}")


def sample_filling(family: Family, values=None, *, rng, max_filters: int = 2) -> Filling:
    """Draw the slot values of one question of ``family`` (see the module docstring)."""
    values, rng = _values(values), _rng(rng)
    attribute = query = None
    if family.has_attribute:
        attribute = values["attribute"][rng.integers(len(values["attribute"]))]
    if family.has_query:
        choices = [q for q in family.query_attributes if q != attribute]
        if not choices:
            raise ClosureFamilyError(f"family {family.name!r}: no <Q> differs from <A> = {attribute!r}")
        query = choices[rng.integers(len(choices))]
    relations = tuple((slot, values["relation"][rng.integers(len(values["relation"]))])
                      for slot in family.relation_slots)
    slots = []
    for group in family.groups:
        blank = set()
        if attribute is not None and group in family.attribute_blank_groups:
            blank.add(attribute)
        if query is not None and group in family.query_blank_groups:
            blank.add(query)
        open_ = [a for a in SLOT_ATTRIBUTES if a not in blank]
        low = 1 if group in family.required_groups else 0
        high = min(max_filters, len(open_))
        if high < low:
            raise ClosureFamilyError(f"family {family.name!r}: slot group {group} needs a filled slot "
                                     f"but max_filters = {max_filters}")
        k = int(rng.integers(low, high + 1))
        chosen = {open_[i] for i in rng.choice(len(open_), size=k, replace=False)} if k else set()
        for a in SLOT_ATTRIBUTES:
            slot = f"<{SLOT_LETTERS[a]}{_group_suffix(group)}>"
            value = values[a][rng.integers(len(values[a]))] if a in chosen else None
            slots.append((slot, value))
    return Filling(tuple(slots), relations, attribute, query)


def _chain(group: int, var: str, slots: Mapping):
    node = None
    for a in SLOT_ATTRIBUTES:
        value = slots[f"<{SLOT_LETTERS[a]}{_group_suffix(group)}>"]
        if value is None:
            continue
        atom = ("=", ((f"{a}?", ((var, ()),)), (value, ())))
        node = atom if node is None else ("and", (node, atom))
    return node


def _fill(node, env: Mapping, slots: Mapping, family: Family):
    token, kids = node
    m = _MACRO.match(token)
    if m:
        return _chain(_group_of(m.group(1)), m.group(2), slots)
    built = [_fill(k, env, slots, family) for k in kids]
    token = env.get(token, token)
    if token == "and" and None in built:
        return built[0] if built[1] is None else built[1]
    b = _BINDER.match(token)
    if b and built[1] is None and built[0] is not None:
        if b.group(1) == "filter":
            return built[0]
        if b.group(1) == "exists":
            return ("exist", (built[0],))
    if None in built:
        raise ClosureFamilyError(f"family {family.name!r}: the filling leaves an empty operand of {token!r}")
    return (token, tuple(built))


def _variables(variables) -> tuple:
    if variables is None:
        return DEPTH_VARIABLES
    names = tuple(variables) if not isinstance(variables, str) else ()
    if not names or len(set(names)) != len(names) or not all(
            isinstance(v, str) and re.fullmatch(r"[a-z]", v) for v in names):
        raise ClosureFamilyError(f"variables must be distinct one-letter lowercase names, got {variables!r}")
    return names


def _rename(node, order: tuple, depth: int, scope: Mapping, family: Family):
    """Name each binder's variable by its nesting depth (``order[depth]``), consistently."""
    token, kids = node
    b = _BINDER.match(token)
    if b:
        if depth >= len(order):
            raise ClosureFamilyError(f"family {family.name!r} nests {depth + 1} binders; "
                                     f"variables {order} name only {len(order)}")
        name = order[depth]
        set_ = _rename(kids[0], order, depth, scope, family)
        body = _rename(kids[1], order, depth + 1, {**scope, b.group(2): name}, family)
        return (f"{b.group(1)}:{name}", (set_, body))
    if not kids:
        return (scope.get(token, token) if token in VARIABLES else token, ())
    return (token, tuple(_rename(k, order, depth, scope, family) for k in kids))


class Instance(NamedTuple):
    """One binary concept of a filled question and the answer it stands for.

    ``answer`` is ``"yes"`` for an existence or yes/no question (the concept is true where
    the answer is yes), the value for a query ("the Q of ... is v"), the integer k for a count
    ("how many ... = k"); ``question`` is the filled English question.
    """

    program: str
    answer: str | int
    question: str


def _same_tree(a, b) -> bool:
    return a == b


def _never_true(node) -> bool:
    """Whether a BOOL tree is false on every scene by its form alone: ``a a same_X`` (one
    referent compared with itself), ``P P not and``, ``v v = not``, and what carries them."""
    token, kids = node
    if token.startswith("same_") and len(kids) == 2:
        return _same_tree(kids[0], kids[1])
    if token == "not" and kids[0][0] == "=" and _same_tree(*kids[0][1]):
        return True
    if token == "and":
        a, b = kids
        return (_never_true(a) or _never_true(b) or b == ("not", (a,)) or a == ("not", (b,)))
    if token == "or":
        return _never_true(kids[0]) and _never_true(kids[1])
    if _BINDER.match(token) and token.startswith("exists:"):
        return _never_true(kids[1])
    return False


def _degenerate(node) -> bool:
    """Whether the tree intersects a set with itself (CLEVR's degeneracy check rejects such a
    question on every scene: dropping either relation leaves the answer as it is)."""
    token, kids = node
    if token == "intersect" and _same_tree(kids[0], kids[1]):
        return True
    return any(_degenerate(k) for k in kids)


def _rejection(tree) -> str | None:
    """Why a filled concept is never asked (CLEVR's constraints fail on every scene), or None."""
    if _never_true(tree):
        return "OUT_NEQ fails on every scene (its two expressions are the same)"
    if _degenerate(tree):
        return "degenerate on every scene (a set intersected with itself)"
    return None


def _answers(kind: str, attribute: str | None, values: Mapping) -> list:
    if kind == "query":
        return [str(v) for v in values[attribute]]
    if kind == "count":
        return list(COUNT_ANSWERS)
    return ["yes"]


def _family_trees(family: Family, filling: Filling, values=None, variables=None) -> list:
    """``[(answer, tree)]`` of one filled question, trees renamed by depth."""
    values, order = _values(values), _variables(variables)
    slots = dict(filling.slots)
    env = dict(filling.relations)
    if filling.attribute is not None:
        env["same_<A>"] = f"same_{filling.attribute}"
    if filling.query is not None:
        env["<Q>?"] = f"{filling.query}?"
        env["same_<Q>"] = f"same_{filling.query}"
    out = []
    for answer in _answers(family.answer_kind, filling.query, values):
        if family.answer_kind in ("query", "count"):
            env["<ANS>"] = str(answer)
        out.append((answer, _rename(_fill(family.tree, env, slots, family), order, 0, {}, family)))
    return out


def fill_instances(family: Family, filling: Filling, values=None, *, variables=None) -> list:
    """The :class:`Instance` s of one filled question, one per answer (see the module docstring).

    Bound variables are named by nesting depth from ``variables`` (default
    :data:`DEPTH_VARIABLES`; ``("y", "z", "w")`` gives ``hypotheses/clevr.pcfg``'s names).
    """
    question = render_question(family, filling)
    return [Instance(" ".join(_postfix(tree)), answer, question)
            for answer, tree in _family_trees(family, filling, values, variables)]


def family_rejection(family, filling: Filling) -> str | None:
    """Why CLEVR's generator never asks the filled question of a family (on any scene): its
    two OUT_NEQ expressions are the same, or it intersects a set with itself; else None."""
    family = _family_arg(family)
    return _rejection(_family_trees(family, filling)[0][1])


def fill_programs(family: Family, filling: Filling, values=None, *, variables=None) -> list:
    """The postfix concepts of one filled question, one per answer (:func:`fill_instances`'
    programs)."""
    return [i.program for i in fill_instances(family, filling, values, variables=variables)]


def render_question(family: Family, filling: Filling) -> str:
    """The English question of a filling (optional words kept, blanks dropped)."""
    slots = dict(filling.slots)
    words = {}
    for slot, value in slots.items():
        words[slot] = value if value is not None else ("thing" if slot.startswith("<S") else "")
    words.update({slot: RELATION_WORDS.get(rel, rel) for slot, rel in filling.relations})
    words["<A>"] = filling.attribute or ""
    words["<Q>"] = filling.query or ""
    return _tidy(_QUESTION_SLOT.sub(lambda m: words.get(m.group(0), m.group(0)), family.question))


def _tidy(text: str) -> str:
    text = text.replace("[", "").replace("]", "")
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s+([?;,])", r"\1", text)


def _named(value, cls, load, what: str):
    """``value`` itself when it is a ``cls``, else the entry of ``load()`` it names; anything else
    (or an unknown name) is a one-line :class:`ClosureFamilyError` naming ``what`` it should be."""
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        entries = load()
        if value not in entries:
            raise ClosureFamilyError(f"unknown {what} {value!r} (known: {', '.join(entries)})")
        return entries[value]
    raise ClosureFamilyError(f"{what} must be a {cls.__name__} or a name, got {type(value).__name__}")


def _family_arg(family) -> Family:
    return _named(family, Family, load_families, "CLOSURE family")


def _check_count(n, what="n") -> int:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ClosureFamilyError(f"{what} must be an integer >= 0, got {n!r}")
    return int(n)


def _check_max_filters(max_filters) -> int:
    if not isinstance(max_filters, (int, np.integer)) or isinstance(max_filters, bool) or not 1 <= max_filters <= 4:
        raise ClosureFamilyError(f"max_filters must be an integer in 1..4, got {max_filters!r}")
    return int(max_filters)


def family_instances_of(family, values=None, *, rng, n: int, max_filters: int = 2, variables=None) -> list:
    """The :class:`Instance` s of ``n`` distinct filled questions of ``family`` (see
    :func:`instantiate`), unique by program, in the order drawn."""
    family = _family_arg(family)
    n, max_filters = _check_count(n), _check_max_filters(max_filters)
    values, rng, variables = _values(values), _rng(rng), _variables(variables)
    seen, out, done = set(), {}, 0
    for _ in range(200 * n):
        if done == n:
            break
        filling = sample_filling(family, values, rng=rng, max_filters=max_filters)
        if filling.key() in seen:
            continue
        seen.add(filling.key())
        trees = _family_trees(family, filling, values, variables)
        if _rejection(trees[0][1]) is not None:  # every answer's concept shares the rejected part
            continue
        done += 1
        question = render_question(family, filling)
        for answer, tree in trees:
            program = " ".join(_postfix(tree))
            out.setdefault(program, Instance(program, answer, question))
    return list(out.values())


def instantiate(family, values=None, *, rng, n: int, max_filters: int = 2, variables=None) -> list:
    """Concepts of ``n`` distinct filled questions of ``family``, as postfix program strings.

    Parameters
    ----------
    family : Family or str
        A family (or the name of one of the packaged file).
    values : mapping, optional
        Replacements for entries of :data:`CLEVR_VALUES` (default: CLEVR's values).
    rng : numpy.random.Generator or int
        The random source, or a seed; the result is a function of the seed.
    n : int
        Distinct fillings to draw (fewer when the family has fewer, after ``200 * n`` draws).
        A filling whose concept CLEVR's constraints reject on every scene (two OUT_NEQ
        expressions that are the same, a set intersected with itself) is drawn again.
    max_filters : int
        The most filled slots per slot group, 1..4 (default 2).
    variables : sequence of str, optional
        Names of bound variables by nesting depth (default :data:`DEPTH_VARIABLES`).

    Returns
    -------
    list of str
        The unique concepts, in the order drawn: one per existence or yes/no question,
        one per value of ``<Q>`` for a query, one per count in :data:`COUNT_ANSWERS`
        (:func:`family_instances_of` gives each with its answer).
    """
    return [i.program for i in family_instances_of(family, values, rng=rng, n=n, max_filters=max_filters,
                                                   variables=variables)]


def _chosen_families(families) -> list:
    if families is None:
        families = load_families()
    chosen: Iterable = families.values() if isinstance(families, Mapping) else families
    return [_family_arg(f) for f in chosen]


def _check_seed(seed) -> int:
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ClosureFamilyError(f"seed must be an integer >= 0, got {seed!r}")
    return int(seed)


def family_instances(families=None, n_per_family: int = 20, seed: int = 0, *,
                     values=None, max_filters: int = 2, variables=None) -> dict:
    """Family name -> the :class:`Instance` s of ``n_per_family`` questions of that family
    (:func:`family_concepts` with each concept's answer and question)."""
    seed = _check_seed(seed)
    out = {}
    for family in _chosen_families(families):
        rng = np.random.default_rng([seed, zlib.crc32(family.name.encode("utf-8"))])
        out[family.name] = family_instances_of(family, values, rng=rng, n=n_per_family, max_filters=max_filters,
                                               variables=variables)
    return out


def family_concepts(families=None, n_per_family: int = 20, seed: int = 0, *,
                    values=None, max_filters: int = 2, variables=None) -> dict:
    """Family name -> the unique concepts of ``n_per_family`` questions of that family.

    ``families`` is a mapping name -> :class:`Family` (as :func:`load_families` returns),
    an iterable of families or names, or ``None`` (every family of the packaged file).
    Each family draws from its own generator, seeded by ``seed`` and its name, so a
    family's concepts do not depend on which other families are asked for.
    """
    return {name: [i.program for i in inst] for name, inst in
            family_instances(families, n_per_family, seed, values=values, max_filters=max_filters,
                             variables=variables).items()}

# ================================================================== CLEVR's question templates
#: The nine question-family files of CLEVR 1.0 (``question_generation/CLEVR_1.0_templates``).
CLEVR_TEMPLATE_FILES = ("zero_hop", "one_hop", "two_hop", "three_hop", "single_and", "single_or",
                        "same_relate", "comparison", "compare_integer")
#: Names of bound variables by nesting depth for CLEVR's templates: ``three_hop`` nests four
#: referents; the first three are :data:`DEPTH_VARIABLES`.
CLEVR_DEPTH_VARIABLES = ("y", "z", "x", "w")
#: Answer kind of a question by its last node (yes/no kinds turn into one concept each).
_LAST_NODE_KINDS = {"exist": "exist", "filter_exist": "exist", "relate_filter_exist": "exist",
                    "count": "count", "filter_count": "count", "relate_filter_count": "count",
                    "equal_integer": "compare_count", "less_than": "compare_count", "greater_than": "compare_count"}
_SLOT_LETTER_TYPE = {"Z": "size", "C": "color", "M": "material", "S": "shape", "R": "relation"}
_TEMPLATE_SLOT = re.compile(r"^<([ZCMSR])(\d*)>$")
_TEMPLATE_KEYS = {"name", "question", "nodes", "constraints"}
_SET, _OBJ, _NUM, _BOOL = "SET", "OBJ", "NUM", "BOOL"


def _clevr_signature(kind: str):
    """``(input types, output type, side inputs)`` of a CLEVR node type, or None.  Side inputs:
    ``"group"`` (a slot group <Z#> <C#> <M#> <S#>), ``"rgroup"`` (<R#> then a group),
    ``"relation"`` (<R#>), an attribute name (one slot of it) or ``""`` (none)."""
    outputs = {"": _SET, "unique": _OBJ, "count": _NUM, "exist": _BOOL}
    if kind == "scene":
        return ((), _SET, "")
    for prefix, side in (("relate_filter", "rgroup"), ("filter", "group")):
        if kind == prefix or kind.startswith(prefix + "_"):
            suffix = kind[len(prefix) + 1:]
            if suffix in outputs:
                return (((_OBJ,) if side == "rgroup" else (_SET,)), outputs[suffix], side)
            if prefix == "filter" and suffix in SLOT_ATTRIBUTES:
                return ((_SET,), _SET, suffix)
            return None
    if kind == "relate":
        return ((_OBJ,), _SET, "relation")
    if kind.startswith("same_") and kind[5:] in SLOT_ATTRIBUTES:
        return ((_OBJ,), _SET, "")
    if kind in ("union", "intersect"):
        return ((_SET, _SET), _SET, "")
    if kind in ("count", "exist"):
        return ((_SET,), _NUM if kind == "count" else _BOOL, "")
    if kind.startswith("query_") and kind[6:] in SLOT_ATTRIBUTES:
        return ((_OBJ,), kind[6:], "")
    if kind.startswith("equal_") and kind[6:] in SLOT_ATTRIBUTES:
        return ((kind[6:], kind[6:]), _BOOL, "")
    if kind in ("equal_integer", "less_than", "greater_than"):
        return ((_NUM, _NUM), _BOOL, "")
    return None


@dataclass(frozen=True)
class ClevrTemplate:
    """One of CLEVR's question templates: its functional program and its constraints.

    ``nodes``: ``(type, side inputs, inputs)`` per node, in CLEVR's order; ``constraints``:
    ``("NULL", slot)`` or ``("OUT_NEQ", i, j)`` (template node indices).
    """

    name: str
    question: str
    nodes: tuple
    constraints: tuple

    @property
    def file(self) -> str:
        """The question-family file the template comes from (``"same_relate"``)."""
        return self.name.rsplit("_", 1)[0]

    @property
    def answer_kind(self) -> str:
        """``exist``, ``count``, ``query``, ``yes_no_same`` (equal_<attr>) or ``compare_count``."""
        last = self.nodes[-1][0]
        if last.startswith("query_"):
            return "query"
        if last.startswith("equal_") and last != "equal_integer":
            return "yes_no_same"
        return _LAST_NODE_KINDS[last]

    @property
    def query_attribute(self) -> str | None:
        """The attribute a query template asks for."""
        last = self.nodes[-1][0]
        return last[6:] if last.startswith("query_") else None

    @cached_property
    def null_slots(self) -> frozenset:
        """Slots that stay empty (NULL constraints)."""
        return frozenset(c[1] for c in self.constraints if c[0] == "NULL")

    @cached_property
    def out_neq(self) -> tuple:
        """``(i, j)`` pairs of template nodes whose outputs must differ (OUT_NEQ)."""
        return tuple((c[1], c[2]) for c in self.constraints if c[0] == "OUT_NEQ")

    @cached_property
    def slot_groups(self) -> tuple:
        """``(node index, slots, required)`` per node that describes objects by attributes;
        ``required``: at least one slot is filled (a ``filter`` node, which CLEVR never leaves
        empty; a ``filter_unique`` on the whole scene; a one-attribute ``filter_<attr>``)."""
        out = []
        for i, (kind, side, inputs) in enumerate(self.nodes):
            slots = tuple(s for s in side if not s.startswith("<R"))
            if not slots:
                continue
            required = (kind == "filter" or len(slots) == 1
                        or (kind == "filter_unique" and self.nodes[inputs[0]][0] == "scene"))
            out.append((i, slots, required))
        return tuple(out)

    @cached_property
    def relation_slots(self) -> tuple:
        """The relation slots (``"<R>"``, ``"<R2>"``, ...) in node order."""
        return tuple(s for _, side, _ in self.nodes for s in side if s.startswith("<R"))

    @cached_property
    def never_yes(self) -> str | None:
        """Why no question of the template is ever answered yes, or None: CLEVR's generator
        compares the two counts of ``compare_integer``'s first template with ``OUT_NEQ``, so
        "are there an equal number ..." is always answered no."""
        kind, _, inputs = self.nodes[-1]
        if kind == "equal_integer" and any(set(p) == set(inputs) for p in self.out_neq):
            return "OUT_NEQ makes the two counts differ, so the answer is never yes"
        return None


def default_clevr_templates_path() -> Path:
    """The packaged ``hypotheses/closure/clevr_templates.toml``."""
    return data_file("closure", "clevr_templates.toml")


def _clevr_template(raw, fail) -> ClevrTemplate:
    unknown = sorted(set(raw) - _TEMPLATE_KEYS)
    if unknown:
        fail(f"unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_TEMPLATE_KEYS))})")
    for key in sorted(_TEMPLATE_KEYS):
        if key not in raw:
            fail(f"missing key {key!r}")
    for key in ("name", "question"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            fail(f"{key} must be a non-empty string, got {raw[key]!r}")
    if not re.fullmatch(r"[a-z_]+_\d+", raw["name"]):
        fail(f"name must be '<file>_<index>', got {raw['name']!r}")
    if not isinstance(raw["nodes"], list) or not raw["nodes"] or not all(isinstance(n, str) for n in raw["nodes"]):
        fail("nodes must be a non-empty list of strings")
    if not isinstance(raw["constraints"], list) or not all(isinstance(c, str) for c in raw["constraints"]):
        fail("constraints must be a list of strings")
    nodes, types, slots = [], [], set()
    for i, text in enumerate(raw["nodes"]):
        head, _, tail = text.partition("<-")
        words = head.split()
        if not words:
            fail(f"node {i} is empty")
        kind, side = words[0], tuple(words[1:])
        sig = _clevr_signature(kind)
        if sig is None:
            fail(f"node {i}: unknown node type {kind!r}")
        try:
            inputs = tuple(int(w) for w in tail.split())
        except ValueError:
            fail(f"node {i}: inputs must be node numbers, got {tail.strip()!r}")
        want, output, side_kind = sig
        if len(inputs) != len(want):
            fail(f"node {i} ({kind}) takes {len(want)} input(s), got {len(inputs)}")
        for j in inputs:
            if not 0 <= j < i:
                fail(f"node {i} ({kind}): input {j} is not an earlier node")
        got = tuple(types[j] for j in inputs)
        if got != want:
            fail(f"node {i} ({kind}) takes {' '.join(want) or 'nothing'}, got {' '.join(got)}")
        for s in side:
            m = _TEMPLATE_SLOT.match(s)
            if not m:
                fail(f"node {i}: side input {s!r} is not a slot like <Z2>")
            if s in slots:
                fail(f"node {i}: slot {s} is used twice")
            slots.add(s)
        letters = "".join(_TEMPLATE_SLOT.match(s).group(1) for s in side)
        suffixes = {_TEMPLATE_SLOT.match(s).group(2) for s in side if not s.startswith("<R")}
        expected = {"group": "ZCMS", "rgroup": "RZCMS", "relation": "R", "": ""}.get(
            side_kind, SLOT_LETTERS.get(side_kind, "?"))
        if letters != expected or len(suffixes) > 1:
            fail(f"node {i} ({kind}) takes side inputs {expected or 'none'} (one slot group), "
                 f"got {' '.join(side) or 'none'}")
        nodes.append((kind, side, inputs))
        types.append(output)
    if types[-1] == _SET or types[-1] == _OBJ:
        fail(f"the last node ({nodes[-1][0]}) answers with a {types[-1].lower()}, not a yes/no, count or value")
    constraints = []
    for text in raw["constraints"]:
        words = text.split()
        if len(words) == 2 and words[0] == "NULL" and words[1] in slots and not words[1].startswith("<R"):
            constraints.append(("NULL", words[1]))
        elif len(words) == 3 and words[0] == "OUT_NEQ" and all(w.isdigit() for w in words[1:]):
            i, j = int(words[1]), int(words[2])
            if not (i < len(nodes) and j < len(nodes)) or i == j or types[i] != types[j]:
                fail(f"constraint {text!r} must name two nodes of one output type")
            if types[i] == _SET and any(nodes[k][0] in ("union", "intersect", "scene") for k in (i, j)):
                fail(f"constraint {text!r}: sets compared by OUT_NEQ must be filtered or related ones")
            constraints.append(("OUT_NEQ", i, j))
        else:
            fail(f"constraint {text!r} is neither 'NULL <slot>' nor 'OUT_NEQ i j'")
    template = ClevrTemplate(raw["name"], raw["question"], tuple(nodes), tuple(constraints))
    for i, group, required in template.slot_groups:
        if required and all(s in template.null_slots for s in group):
            fail(f"node {i}: every slot of a description that needs one is NULL")
    found = set(_QUESTION_SLOT.findall(raw["question"]))
    if {f"<{a}{b}>" for a, b in found} != slots:
        fail("the question's slots differ from the nodes' side inputs")
    return template


def load_clevr_templates(path=None) -> dict:
    """CLEVR's question templates, name (``"<file>_<index>"``) -> :class:`ClevrTemplate`, in
    file order (default: ``hypotheses/closure/clevr_templates.toml``).  A bad file or entry is
    a one-line :class:`ClosureFamilyError` naming the file and the entry."""
    path = Path(path) if path is not None else default_clevr_templates_path()
    path, raw = _read_toml(path)
    return _named_entries(path, raw, "template", _clevr_template)


@dataclass(frozen=True)
class ClevrFilling:
    """The values of one question of a CLEVR template: ``slots`` maps every attribute slot
    (``"<C2>"``) to a value or ``None`` (blank), ``relations`` every ``"<R#>"`` to a relation."""

    slots: tuple
    relations: tuple

    def key(self) -> tuple:
        return (self.slots, self.relations)


def _template_arg(template) -> ClevrTemplate:
    return _named(template, ClevrTemplate, load_clevr_templates, "CLEVR template")


def clevr_filling(template, values: Mapping) -> ClevrFilling:
    """A filling given by hand: ``values`` maps slots (``"<Z>"``, ``"<R2>"``) to words; attribute
    slots left out are blank; every relation slot needs a relation."""
    template = _template_arg(template)
    if not isinstance(values, Mapping):
        raise ClosureFamilyError(f"values must be a mapping slot -> word, got {type(values).__name__}")
    slots = [s for _, side, _ in template.nodes for s in side if not s.startswith("<R")]
    unknown = sorted(set(values) - set(slots) - set(template.relation_slots))
    if unknown:
        raise ClosureFamilyError(f"template {template.name}: no slot(s) {', '.join(unknown)}")
    for slot, word in values.items():
        kind = _SLOT_LETTER_TYPE[_TEMPLATE_SLOT.match(slot).group(1)]
        if word not in CLEVR_VALUES[kind]:
            raise ClosureFamilyError(f"template {template.name}: {slot} = {word!r} is not a CLEVR {kind}")
        if slot in template.null_slots:
            raise ClosureFamilyError(f"template {template.name}: {slot} must stay empty (a NULL constraint)")
    missing = [r for r in template.relation_slots if r not in values]
    if missing:
        raise ClosureFamilyError(f"template {template.name}: relation slot(s) {', '.join(missing)} need a relation")
    return ClevrFilling(tuple((s, values.get(s)) for s in slots),
                        tuple((r, values[r]) for r in template.relation_slots))


def sample_clevr_filling(template, values=None, *, rng, max_filters: int = 2) -> ClevrFilling:
    """Draw one filling of a CLEVR template: per slot group, the number of filled slots is
    uniform on ``low..min(max_filters, open slots)`` (``low`` = 1 where the description needs
    one, see :attr:`ClevrTemplate.slot_groups`), the slots uniform among those NULL leaves
    open, each value uniform; each relation uniform."""
    template, values, rng = _template_arg(template), _values(values), _rng(rng)
    return _draw_clevr_filling(template, values, rng, _check_max_filters(max_filters))


def _draw_clevr_filling(template: ClevrTemplate, values: Mapping, rng, max_filters: int) -> ClevrFilling:
    slots = []
    for _, group, required in template.slot_groups:
        open_ = [s for s in group if s not in template.null_slots]
        low, high = (1 if required else 0), min(max_filters, len(open_))
        k = int(rng.integers(low, high + 1))
        chosen = {open_[i] for i in rng.permutation(len(open_))[:k]} if k else set()
        for s in group:
            kind = _SLOT_LETTER_TYPE[s[1]]
            slots.append((s, values[kind][rng.integers(len(values[kind]))] if s in chosen else None))
    relations = tuple((r, values["relation"][rng.integers(len(values["relation"]))]) for r in template.relation_slots)
    return ClevrFilling(tuple(slots), relations)


# Symbolic expressions of a filled template (tuples, so that equal expressions compare equal):
#   sets     ("S",) the scene; ("F", base, conds) the objects of base meeting every cond;
#            ("C", "union" | "intersect", a, b)
#   conds    ("attr", attribute, value); ("rel", relation token, object)
#   objects  ("U", set);  counts ("N", set);  existence ("E", set);  values ("Q", object, attribute)
_SCENE = ("S",)


def _cond_order(conds) -> tuple:
    """Filters first (size, colour, material, shape), then relations in order."""
    attrs = sorted((c for c in conds if c[0] == "attr"), key=lambda c: SLOT_ATTRIBUTES.index(c[1]))
    return tuple(attrs) + tuple(c for c in conds if c[0] != "attr")


def _filtered(base, conds):
    if not conds:
        return base
    if base[0] == "F" and base[1] == _SCENE:
        return ("F", _SCENE, _cond_order(base[2] + tuple(conds)))
    return ("F", base, _cond_order(tuple(conds)))


def _clevr_exprs(template: ClevrTemplate, filling: ClevrFilling):
    """Per template node, its symbolic expression; or ``(None, reason)`` when the filling is
    rejected on every scene (a set intersected with itself)."""
    slots, relations = dict(filling.slots), dict(filling.relations)
    exprs = []
    for kind, side, inputs in template.nodes:
        args = [exprs[j] for j in inputs]
        attrs = tuple(("attr", _SLOT_LETTER_TYPE[_TEMPLATE_SLOT.match(s).group(1)], slots[s])
                      for s in side if not s.startswith("<R") and slots.get(s) is not None)
        if kind == "scene":
            e = _SCENE
        elif kind.startswith(("relate", "filter")):
            base = (("F", _SCENE, (("rel", relations[side[0]], args[0]),)) if kind.startswith("relate")
                    else args[0])
            e = _filtered(base, attrs)
            if kind.endswith("_unique"):
                e = ("U", e)
            elif kind.endswith("_count"):
                e = ("N", e)
            elif kind.endswith("_exist"):
                e = ("E", e)
        elif kind.startswith("same_"):
            e = ("F", _SCENE, (("rel", kind, args[0]),))
        elif kind in ("union", "intersect"):
            a, b = args
            if kind == "intersect" and a == b:
                return None, "degenerate on every scene (a set intersected with itself)"
            if kind == "intersect" and a[0] == "F" and b[0] == "F" and a[1] == _SCENE and b[1] == _SCENE:
                e = ("F", _SCENE, _cond_order(a[2] + b[2]))
            else:
                e = ("C", kind, a, b)
        elif kind == "count":
            e = ("N", args[0])
        elif kind == "exist":
            e = ("E", args[0])
        elif kind.startswith("query_"):
            e = ("Q", args[0], kind[6:])
        else:  # the comparisons: their operands are rendered by _clevr_concepts
            e = (kind, *args)
        exprs.append(e)
    for i, j in template.out_neq:
        if exprs[i] == exprs[j]:
            return None, "OUT_NEQ fails on every scene (its two expressions are the same)"
    return exprs, None


def _var(order: tuple, depth: int, template: ClevrTemplate) -> str:
    if depth >= len(order):
        raise ClosureFamilyError(f"template {template.name!r} nests {depth + 1} binders; "
                                 f"variables {order} name only {len(order)}")
    return order[depth]


def _set_tokens(e, depth: int, order: tuple, template) -> list:
    if e[0] == "S":
        return ["S"]
    if e[0] == "C":
        return _set_tokens(e[2], depth, order, template) + _set_tokens(e[3], depth, order, template) + [e[1]]
    base, conds = e[1], e[2]
    out = _set_tokens(base, depth if base == _SCENE else depth + 1, order, template)
    v = _var(order, depth, template)
    return out + _body_tokens(conds, v, depth, order, template) + [f"filter:{v}"]


def _body_tokens(conds, v: str, depth: int, order: tuple, template) -> list:
    out = []
    for k, c in enumerate(conds):
        if c[0] == "attr":
            out += [v, f"{c[1]}?", c[2], "="]
        else:
            out += [v] + _obj_tokens(c[2], depth + 1, order, template) + [c[1]]
        if k:
            out.append("and")
    return out


def _obj_tokens(e, depth: int, order: tuple, template) -> list:
    return _set_tokens(e[1], depth, order, template) + ["unique"]


def _value_tokens(e, depth, order, template) -> list:
    """Tokens of an object, count or existence expression."""
    if e[0] == "U":
        return _obj_tokens(e, depth, order, template)
    if e[0] == "N":
        return _set_tokens(e[1], depth, order, template) + ["count"]
    if e[0] == "E":
        return _set_tokens(e[1], depth, order, template) + ["exist"]
    raise AssertionError(e)


def _differ_tokens(a, b, order: tuple, template) -> list:
    """Tokens of OUT_NEQ between two expressions of one type, at the top level."""
    if a[0] == "U":  # two objects: one has the other's shape only if they are two objects
        ta, tb = _obj_tokens(a, 0, order, template), _obj_tokens(b, 0, order, template)
        return ta + tb + ["same_shape"] + ta + ["shape?"] + tb + ["shape?", "=", "not", "or"]
    if a[0] == "N":
        return _value_tokens(a, 0, order, template) + _value_tokens(b, 0, order, template) + ["=", "not"]
    # two sets of the scene: some object is in one and not in the other
    if not all(e[0] == "F" and e[1] == _SCENE for e in (a, b)):
        raise ClosureFamilyError(f"template {template.name!r}: OUT_NEQ compares sets that are not filtered or "
                                 "related objects of the scene")
    v = _var(order, 0, template)
    ba, bb = (_body_tokens(e[2], v, 0, order, template) for e in (a, b))
    return ["S"] + ba + bb + ["not", "and"] + bb + ba + ["not", "and", "or", f"exists:{v}"]


def _clevr_concepts(template: ClevrTemplate, filling: ClevrFilling, values: Mapping, order: tuple):
    """``([(answer, program)], None)`` of a filling, or ``([], reason)`` when it is rejected."""
    if template.never_yes:
        return [], template.never_yes
    exprs, reason = _clevr_exprs(template, filling)
    if exprs is None:
        return [], reason
    kind, _, inputs = template.nodes[-1]
    last = exprs[-1]
    pending = list(template.out_neq)

    def consume(i, j):
        for p in list(pending):
            if set(p) == {i, j}:
                pending.remove(p)
                return True
        return False

    answers = _answers(template.answer_kind, template.query_attribute, values)
    if template.answer_kind == "exist":
        heads = [_value_tokens(last, 0, order, template)]
    elif template.answer_kind == "count":
        heads = [_value_tokens(last, 0, order, template) + [str(k), "="] for k in answers]
    elif template.answer_kind == "query":
        obj = _obj_tokens(last[1], 0, order, template)
        heads = [obj + [f"{last[2]}?", v, "="] for v in answers]
    elif template.answer_kind == "yes_no_same":
        attribute = kind[6:]
        (qa, qb) = inputs
        oa, ob = template.nodes[qa][2][0], template.nodes[qb][2][0]
        ta, tb = _obj_tokens(exprs[oa], 0, order, template), _obj_tokens(exprs[ob], 0, order, template)
        if consume(oa, ob):  # OUT_NEQ on the compared objects: two objects with the same <attr>
            heads = [ta + tb + [f"same_{attribute}"]]
        else:
            heads = [ta + [f"{attribute}?"] + tb + [f"{attribute}?", "="]]
    else:  # compare_count
        a, b = inputs
        ta, tb = _value_tokens(exprs[a], 0, order, template), _value_tokens(exprs[b], 0, order, template)
        consume(a, b)  # differing counts: implied by < and >, and equal_integer never says yes
        heads = [{"equal_integer": ta + tb + ["="], "less_than": tb + ta + [">"],
                  "greater_than": ta + tb + [">"]}[kind]]
    tail = []
    for i, j in pending:
        tail += _differ_tokens(exprs[i], exprs[j], order, template) + ["and"]
    return [(answer, " ".join(head + tail)) for answer, head in zip(answers, heads)], None


def render_clevr_question(template, filling: ClevrFilling) -> str:
    """The English question of a filled CLEVR template (its first paraphrase)."""
    template = _template_arg(template)
    words = {s: (v if v is not None else ("thing" if s.startswith("<S") else "")) for s, v in filling.slots}
    words.update({r: RELATION_WORDS.get(v, v) for r, v in filling.relations})
    return _tidy(_QUESTION_SLOT.sub(lambda m: words.get(m.group(0), m.group(0)), template.question))


def clevr_fill_instances(template, filling: ClevrFilling, values=None, *, variables=None) -> list:
    """The :class:`Instance` s of one filled CLEVR template (empty when CLEVR's constraints
    reject the filling on every scene, see :func:`clevr_rejection`)."""
    template, values = _template_arg(template), _values(values)
    order = CLEVR_DEPTH_VARIABLES if variables is None else _variables(variables)
    pairs, _ = _clevr_concepts(template, filling, values, order)
    question = render_clevr_question(template, filling)
    return [Instance(program, answer, question) for answer, program in pairs]


def clevr_rejection(template, filling: ClevrFilling) -> str | None:
    """Why CLEVR's generator never asks the filled question (on any scene), or None."""
    template = _template_arg(template)
    return template.never_yes or _clevr_exprs(template, filling)[1]


def clevr_template_instances(template, values=None, *, rng, n: int, max_filters: int = 2, variables=None) -> list:
    """The :class:`Instance` s of ``n`` distinct accepted fillings of a CLEVR template, unique
    by program, in the order drawn: fewer when it has fewer (the draws stop after ``200 * n``,
    or after ``20 * n + 200`` in a row that bring no new filling); none for a template that
    is never answered yes."""
    template = _template_arg(template)
    n, max_filters = _check_count(n), _check_max_filters(max_filters)
    values, rng = _values(values), _rng(rng)
    order = CLEVR_DEPTH_VARIABLES if variables is None else _variables(variables)
    if template.never_yes:
        return []
    seen, out, done, misses = set(), {}, 0, 0
    for _ in range(200 * n):
        if done == n or misses > 20 * n + 200:  # every filling seen, most likely
            break
        filling = _draw_clevr_filling(template, values, rng, max_filters)
        if filling.key() in seen:
            misses += 1
            continue
        seen.add(filling.key())
        misses = 0
        pairs, _ = _clevr_concepts(template, filling, values, order)
        if not pairs:
            continue
        done += 1
        question = render_clevr_question(template, filling)
        for answer, program in pairs:
            out.setdefault(program, Instance(program, answer, question))
    return list(out.values())


def clevr_instances(templates=None, n_per_template: int = 20, seed: int = 0, *, values=None,
                    max_filters: int = 2, variables=None) -> dict:
    """Template name -> the :class:`Instance` s of ``n_per_template`` questions of it.

    ``templates``: a mapping name -> :class:`ClevrTemplate` (as :func:`load_clevr_templates`
    returns), an iterable of templates or names, or None (all 90 of CLEVR).  Each template
    draws from its own generator, seeded by ``seed`` and its name.
    """
    seed = _check_seed(seed)
    if templates is None:
        templates = load_clevr_templates()
    chosen: Iterable = templates.values() if isinstance(templates, Mapping) else templates
    out = {}
    for template in chosen:
        template = _template_arg(template)
        rng = np.random.default_rng([seed, zlib.crc32(template.name.encode("utf-8"))])
        out[template.name] = clevr_template_instances(template, values, rng=rng, n=n_per_template,
                                                      max_filters=max_filters, variables=variables)
    return out


def clevr_concepts(templates=None, n_per_template: int = 20, seed: int = 0, *, values=None,
                   max_filters: int = 2, variables=None) -> dict:
    """Template name -> the unique concepts of ``n_per_template`` questions of it
    (:func:`clevr_instances`' programs)."""
    return {name: [i.program for i in inst] for name, inst in
            clevr_instances(templates, n_per_template, seed, values=values, max_filters=max_filters,
                            variables=variables).items()}


# ==================================================================== reported accuracies
#: The answer kinds that are yes/no questions (one concept each; chance 50 %).
YES_NO_KINDS = ("exist", "yes_no_same", "compare_count")


def answer_chance(family, values=None) -> float:
    """Chance accuracy (%) on a family's (or a CLEVR template's) questions: a guess uniform
    over the answers a question allows.  Yes/no questions: 50; counts: 100/3 (CLOSURE's
    generator answers 1, 2 or 3, equally often, Appendix F); a query: 100/|values of the
    queried attribute|, averaged over the family's draws of ``<Q>`` (uniform over its
    ``query_attributes`` other than ``<A>``, ``<A>`` uniform over the attributes)."""
    values = _values(values)
    if isinstance(family, str):
        known = load_families()
        family = known[family] if family in known else _template_arg(family)
    kind = family.answer_kind
    if kind in YES_NO_KINDS:
        return 50.0
    if kind == "count":
        return 100.0 / len(COUNT_ANSWERS)
    if isinstance(family, ClevrTemplate):
        return 100.0 / len(values[family.query_attribute])
    attributes = values["attribute"] if family.has_attribute else (None,)
    total = 0.0
    for a in attributes:
        queries = [q for q in family.query_attributes if q != a]
        total += sum(100.0 / len(values[q]) for q in queries) / len(queries)
    return total / len(attributes)


class Accuracy(NamedTuple):
    """A reported accuracy in %: the mean over runs and its standard deviation (``None``
    where the paper prints none)."""

    mean: float
    std: float | None


@dataclass(frozen=True)
class Reported:
    """The accuracies of ``[reported]``.

    ``zero_shot``, ``baseline``, ``few_shot``: model -> family -> :class:`Accuracy`;
    ``clevr_val``: model -> :class:`Accuracy`; ``zero_shot_mac_original``: family ->
    :class:`Accuracy`; ``sources``: table name -> where in the paper it is;
    ``answer_kinds``: test family -> its answer kind; ``chance``: test family -> chance
    accuracy in % (:func:`answer_chance`).
    """

    paper: str
    models: tuple
    zero_shot: dict
    baseline: dict
    few_shot: dict
    clevr_val: dict
    zero_shot_mac_original: dict
    sources: dict
    answer_kinds: dict = field(default_factory=dict)
    chance: dict = field(default_factory=dict)

    def drop(self, model: str, family: str) -> float:
        """Baseline minus zero-shot accuracy (percentage points) of ``model`` on ``family``."""
        try:
            return round(self.baseline[model][family].mean - self.zero_shot[model][family].mean, 6)
        except KeyError:
            raise ClosureFamilyError(f"no reported zero-shot and baseline accuracy of {model!r} "
                                     f"on {family!r}") from None

    def normalised_drop(self, model: str, family: str) -> float:
        """The drop against chance: (baseline - zero-shot) / (baseline - chance), 0 = no drop,
        1 = down to chance (NaN where the baseline is at chance)."""
        drop = self.drop(model, family)
        if family not in self.chance:
            raise ClosureFamilyError(f"no chance level of family {family!r}")
        above = self.baseline[model][family].mean - self.chance[family]
        return round(drop / above, 6) if above > 0 else float("nan")


class FamilyDrop(NamedTuple):
    """One model's accuracy drop on one CLOSURE family, absolute and against chance (in %,
    points, and a fraction for ``normalised_drop``)."""

    family: str
    model: str
    answer_kind: str
    chance: float
    baseline: float
    zero_shot: float
    drop: float
    normalised_drop: float


def family_drops(path=None) -> list:
    """Every reported (family, model) pair: :class:`FamilyDrop` rows in file order of families
    and of ``models``: baseline and zero-shot accuracy, the family's answer kind and chance
    level, the drop (baseline - zero-shot) and the chance-normalised drop
    ((baseline - zero-shot) / (baseline - chance))."""
    rep = load_reported(path)
    out = []
    for family in rep.chance:
        for model in rep.models:
            base, zero = rep.baseline.get(model, {}).get(family), rep.zero_shot.get(model, {}).get(family)
            if base is None or zero is None:
                continue
            out.append(FamilyDrop(family, model, rep.answer_kinds[family], round(rep.chance[family], 6), base.mean,
                                  zero.mean, rep.drop(model, family), rep.normalised_drop(model, family)))
    return out


def load_reported(path=None) -> Reported:
    """The ``[reported]`` table of a CLOSURE family file (default: the packaged one)."""
    path, raw = _read_toml(path)
    rep = raw.get("reported")
    if not isinstance(rep, dict):
        raise ClosureFamilyError(f"{path}: no [reported] table")
    tests = {f["name"] for f in raw.get("family", []) if isinstance(f, dict) and f.get("role") == "test"}

    def fail(where, message):
        raise ClosureFamilyError(f"{path}: [reported.{where}]: {message}")

    def accuracy(where, value) -> Accuracy:
        ok = (isinstance(value, dict) and set(value) <= {"mean", "std"} and "mean" in value
              and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()))
        if not ok:
            fail(where, f"expected {{mean = ..., std = ...}}, got {value!r}")
        std = value.get("std")
        return Accuracy(float(value["mean"]), None if std is None else float(std))

    def per_family(where, table) -> dict:
        if not isinstance(table, dict):
            fail(where, "must be a table")
        unknown = sorted(set(table) - tests)
        if unknown:
            fail(where, f"unknown test famil{'ies' if len(unknown) > 1 else 'y'} {', '.join(unknown)}")
        return {f: accuracy(f"{where}.{f}", v) for f, v in table.items()}

    sources, tables = {}, {}
    for name in ("zero_shot", "baseline", "few_shot"):
        section = dict(rep.get(name, {}))
        sources[name] = section.pop("source", "")
        tables[name] = {model: per_family(f"{name}.{model}", t) for model, t in section.items()}
    section = dict(rep.get("clevr_val", {}))
    sources["clevr_val"] = section.pop("source", "")
    clevr = {model: accuracy(f"clevr_val.{model}", v) for model, v in section.items()}
    section = dict(rep.get("zero_shot_mac_original", {}))
    sources["zero_shot_mac_original"] = section.pop("source", "")
    mac = per_family("zero_shot_mac_original", section)
    unknown = sorted(set(rep) - {"paper", "models", *sources})
    if unknown:
        raise ClosureFamilyError(f"{path}: [reported]: unknown key(s) {', '.join(unknown)}")
    families = {n: f for n, f in load_families(path).items() if f.role == "test"} if raw.get("family") else {}
    return Reported(paper=str(rep.get("paper", "")), models=tuple(rep.get("models", ())),
                    zero_shot=tables["zero_shot"], baseline=tables["baseline"], few_shot=tables["few_shot"],
                    clevr_val=clevr, zero_shot_mac_original=mac, sources=sources,
                    answer_kinds={n: f.answer_kind for n, f in families.items()},
                    chance={n: answer_chance(f) for n, f in families.items()})


__all__ = ["ANSWER_KINDS", "CLEVR_DEPTH_VARIABLES", "CLEVR_TEMPLATE_FILES", "CLEVR_VALUES", "COUNT_ANSWERS",
           "DEPTH_VARIABLES", "YES_NO_KINDS", "Accuracy", "ClevrFilling", "ClevrTemplate", "ClosureFamilyError",
           "Family", "FamilyDrop", "Filling", "Instance", "Reported", "answer_chance", "clevr_concepts",
           "clevr_fill_instances", "clevr_filling", "clevr_instances", "clevr_rejection", "clevr_template_instances",
           "default_clevr_templates_path", "default_families_path", "family_concepts", "family_drops",
           "family_instances", "family_instances_of", "family_rejection", "fill_instances", "fill_programs",
           "instantiate", "load_clevr_templates", "load_families", "load_reported", "render_clevr_question",
           "render_question", "sample_clevr_filling", "sample_filling"]
