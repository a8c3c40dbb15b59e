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
import zlib
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from ...errors import BayesConceptsError
from ...lot.program import WHERE
from ...resources import data_file
from ...text_files import read_toml

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
                "attribute_blank_groups", "query_blank_groups", "query_attributes", "source", "constraints"}
#: The kinds of a family's domain constraints (``constraints = ["OUT_NEQ A | B"]``): OUT_NEQ
#: says that two referents, two sets or two counts (postfix templates A and B of one type)
#: differ; a question is asked only about scenes where it holds (its domain).
FAMILY_CONSTRAINT_KINDS = ("OUT_NEQ",)
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
    constraints: tuple = ()

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
    return path, read_toml(path, ClosureFamilyError, "the CLOSURE family file")


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
                    query_attributes=tuple(queries), source=raw.get("source", ""),
                    constraints=_constraints(raw, fail))
    _check_template(family, fail)
    return family


def _operand_type(tree) -> str | None:
    """``OBJ``, ``SET`` or ``NUM`` of an OUT_NEQ operand template (by its last token), or None."""
    token = tree[0]
    if token == "unique":
        return "OBJ"
    if token == "count":
        return "NUM"
    if token in ("S", "union", "intersect") or token.startswith("filter:") or _MACRO.match(token):
        return "SET"
    return None


def _constraints(raw, fail) -> tuple:
    """``(("OUT_NEQ", tree_a, tree_b), ...)`` of an entry's ``constraints`` (see the file header)."""
    value = raw.get("constraints", [])
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
        fail(f"constraints must be a list of strings like 'OUT_NEQ A | B', got {value!r}")
    out = []
    for text in value:
        words = text.split()
        if not words or words[0] not in FAMILY_CONSTRAINT_KINDS:
            fail(f"constraint {text!r}: unknown kind {words[0] if words else ''!r} "
                 f"(known: {', '.join(FAMILY_CONSTRAINT_KINDS)})")
        if words.count("|") != 1:
            fail(f"constraint {text!r}: OUT_NEQ takes two operand templates, 'OUT_NEQ A | B'")
        cut = words.index("|")
        trees = []
        for side in (words[1:cut], words[cut + 1:]):
            bad = [t for t in side if not _known_token(t)]
            if bad:
                fail(f"constraint {text!r} has unknown token(s) {', '.join(repr(t) for t in bad)}")
            try:
                trees.append(_parse(side))
            except ValueError as exc:
                fail(f"constraint {text!r}: an operand is not one postfix expression: {exc}")
        types = [_operand_type(t) for t in trees]
        if types[0] is None or types[0] != types[1]:
            fail(f"constraint {text!r} must compare two referents, two sets or two counts, "
                 f"got {' and '.join(str(t) for t in types)}")
        out.append(("OUT_NEQ", trees[0], trees[1]))
    return tuple(out)


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
    for _, a, b in family.constraints:
        for side in (a, b):
            extra = sorted({t for t in _postfix(side) if (_MACRO.match(t) or _RELATION_SLOT.match(t))
                            and t.split("@")[0] not in {u.split("@")[0] for u in tokens}})
            if extra:
                fail(f"a constraint names slot(s) {', '.join(extra)}, which the program lacks")
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


def _rejection(tree, constraints=()) -> str | None:
    """Why a filled concept is never asked (CLEVR's constraints fail on every scene), or None."""
    if _never_true(tree) or any(_never_true(c) for c in constraints):
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


def _differ_tree(kind: str, a, b):
    """The BOOL tree saying that two filled, renamed OUT_NEQ operands differ: two referents
    (``a b same_shape a shape? b shape? = not or``: same_* never holds between an object and
    itself), two counts (``a b = not``), or two sets (some object is in one and not in the
    other; each set ``S BODY filter:v`` of the scene)."""
    t = _operand_type(a)
    if t == "OBJ":
        same = ("same_shape", (a, b))
        equal = ("=", (("shape?", (a,)), ("shape?", (b,))))
        return ("or", (same, ("not", (equal,))))
    if t == "NUM":
        return ("not", (("=", (a, b)),))
    bodies = []
    for e in (a, b):
        m = _BINDER.match(e[0])
        if not (m and m.group(1) == "filter" and e[1][0] == ("S", ())):
            raise ClosureFamilyError(f"OUT_NEQ compares sets that are not filtered objects of the scene: {e!r}")
        bodies.append((m.group(2), e[1][1]))
    (va, ba), (vb, bb) = bodies
    if va != vb:
        raise ClosureFamilyError("OUT_NEQ compares sets whose binders have different variables")
    either = ("or", (("and", (ba, ("not", (bb,)))), ("and", (bb, ("not", (ba,))))))
    return (f"exists:{va}", (("S", ()), either))


def _constraint_trees(family: Family, env: Mapping, slots: Mapping, order: tuple) -> list:
    """The BOOL trees of a filled question's domain constraints, renamed by depth."""
    out = []
    for kind, a, b in family.constraints:
        filled = [_rename(_fill(t, env, slots, family), order, 0, {}, family) for t in (a, b)]
        out.append(_differ_tree(kind, *filled))
    return out


def _family_trees(family: Family, filling: Filling, values=None, variables=None) -> list:
    """``[(answer, tree, constraint trees)]`` of one filled question, trees renamed by depth."""
    values, order = _values(values), _variables(variables)
    slots = dict(filling.slots)
    env = dict(filling.relations)
    if filling.attribute is not None:
        env["same_<A>"] = f"same_{filling.attribute}"
    if filling.query is not None:
        env["<Q>?"] = f"{filling.query}?"
        env["same_<Q>"] = f"same_{filling.query}"
    out = []
    constraints = _constraint_trees(family, env, slots, order)
    for answer in _answers(family.answer_kind, filling.query, values):
        if family.answer_kind in ("query", "count"):
            env["<ANS>"] = str(answer)
        out.append((answer, _rename(_fill(family.tree, env, slots, family), order, 0, {}, family), constraints))
    return out


def _concept_text(tree, constraints) -> str:
    """The concept's program string: the program, then ``where C`` per domain constraint."""
    return " ".join(_postfix(tree) + [t for c in constraints for t in [WHERE] + _postfix(c)])


def fill_instances(family: Family, filling: Filling, values=None, *, variables=None) -> list:
    """The :class:`Instance` s of one filled question, one per answer (see the module docstring).

    Bound variables are named by nesting depth from ``variables`` (default
    :data:`DEPTH_VARIABLES`; ``("y", "z", "w")`` gives ``hypotheses/clevr.pcfg``'s names).
    """
    question = render_question(family, filling)
    return [Instance(_concept_text(tree, constraints), answer, question)
            for answer, tree, constraints in _family_trees(family, filling, values, variables)]


def family_rejection(family, filling: Filling) -> str | None:
    """Why CLEVR's generator never asks the filled question of a family (on any scene): its
    two OUT_NEQ expressions are the same, or it intersects a set with itself; else None."""
    family = _family_arg(family)
    _, tree, constraints = _family_trees(family, filling)[0]
    return _rejection(tree, constraints)


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
        if _rejection(trees[0][1], trees[0][2]) is not None:  # every answer's concept shares the rejected part
            continue
        done += 1
        question = render_question(family, filling)
        for answer, tree, constraints in trees:
            program = _concept_text(tree, constraints)
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


@lru_cache(maxsize=4)
def preset_family_concepts(per_family: int) -> dict:
    """:func:`family_concepts` of every family of the packaged file, ``per_family`` each, seed 0:
    what ``space build --preset clevr`` adds and CLOSURE's protocols split on, drawn once per
    process (do not modify the lists)."""
    return family_concepts(None, per_family, 0)


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
