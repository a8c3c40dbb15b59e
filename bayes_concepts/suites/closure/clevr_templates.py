"""CLEVR's 90 question templates as binary scene concepts: read, filled, instantiated (the concepts CLOSURE's models were trained on)."""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

from ...lot.program import WHERE
from ...resources import data_file

from .families import (CLEVR_VALUES, ClosureFamilyError, Instance, RELATION_WORDS, SLOT_ATTRIBUTES, SLOT_LETTERS,
                       _QUESTION_SLOT, _answers, _check_count, _check_max_filters, _check_seed, _named,
                       _named_entries, _read_toml, _rng, _tidy, _values, _variables)

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
#: The kinds of CLEVR's template constraints: NULL (a slot stays empty: a constraint on the
#: filling, checked when a template is filled) and OUT_NEQ (two nodes' outputs differ: a
#: constraint on the scene, the question's domain).
CONSTRAINT_KINDS = ("NULL", "OUT_NEQ")


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
        if not words or words[0] not in CONSTRAINT_KINDS:
            fail(f"constraint {text!r}: unknown kind {words[0] if words else ''!r} "
                 f"(known: {', '.join(CONSTRAINT_KINDS)})")
        if words[0] == "NULL":
            if len(words) != 2:
                fail(f"constraint {text!r}: NULL takes one slot, like 'NULL <C2>'")
            if words[1] not in slots or words[1].startswith("<R"):
                fail(f"constraint {text!r} names {words[1]!r}, which is not an attribute slot of the template "
                     f"(its slots: {' '.join(sorted(x for x in slots if not x.startswith('<R')))})")
            constraints.append(("NULL", words[1]))
        else:
            if len(words) != 3 or not all(w.isdigit() for w in words[1:]):
                fail(f"constraint {text!r}: OUT_NEQ takes two node numbers, like 'OUT_NEQ 3 5'")
            i, j = int(words[1]), int(words[2])
            missing = [k for k in (i, j) if k >= len(nodes)]
            if missing:
                fail(f"constraint {text!r} names node {missing[0]}, which the template lacks "
                     f"(nodes 0..{len(nodes) - 1})")
            if i == j or types[i] != types[j]:
                fail(f"constraint {text!r} must name two nodes of one output type")
            if types[i] == _SET and any(nodes[k][0] in ("union", "intersect", "scene") for k in (i, j)):
                fail(f"constraint {text!r}: sets compared by OUT_NEQ must be filtered or related ones")
            constraints.append(("OUT_NEQ", i, j))
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
        heads = [ta + [f"{attribute}?"] + tb + [f"{attribute}?", "="]]
    else:  # compare_count
        a, b = inputs
        ta, tb = _value_tokens(exprs[a], 0, order, template), _value_tokens(exprs[b], 0, order, template)
        heads = [{"equal_integer": ta + tb + ["="], "less_than": tb + ta + [">"],
                  "greater_than": ta + tb + [">"]}[kind]]
    # CLEVR's OUT_NEQ constraints are the question's domain, written beside the program
    # (``PROGRAM where C``), never conjuncts of it
    tail = []
    for i, j in template.out_neq:
        tail += [WHERE] + _differ_tokens(exprs[i], exprs[j], order, template)
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


@lru_cache(maxsize=4)
def preset_clevr_concepts(per_template: int) -> dict:
    """:func:`clevr_concepts` of every template, ``per_template`` each, seed 0: what ``space
    build --preset clevr`` adds and CLOSURE's protocols train on, drawn once per process (do not
    modify the lists)."""
    return clevr_concepts(None, per_template, 0)


def clevr_concepts(templates=None, n_per_template: int = 20, seed: int = 0, *, values=None,
                   max_filters: int = 2, variables=None) -> dict:
    """Template name -> the unique concepts of ``n_per_template`` questions of it
    (:func:`clevr_instances`' programs)."""
    return {name: [i.program for i in inst] for name, inst in
            clevr_instances(templates, n_per_template, seed, values=values, max_filters=max_filters,
                            variables=variables).items()}


def template_file_concepts(path, n_per_template: int = 20, seed: int = 0) -> tuple:
    """``(programs, silent)`` of a CLEVR-like template file of one's own (the packaged
    ``clevr_templates.toml``'s format, constraints included): the unique concepts of
    ``n_per_template`` questions of each template, in file order, each carrying its domain
    (``PROGRAM where C``), and ``{template name: why it gives none}`` for each template that
    gives no concept (never answered yes, or no filling drawn that its constraints accept).
    What ``space build OUT --templates FILE`` builds from; a bad file or entry is a one-line
    :class:`ClosureFamilyError` naming the file and the entry."""
    templates = load_clevr_templates(path)
    instances = clevr_instances(templates, _check_count(n_per_template, "n_per_template"), seed)
    programs, silent = [], {}
    for name, got in instances.items():
        programs += [i.program for i in got]
        if not got:
            silent[name] = templates[name].never_yes or "no filling drawn that its constraints accept"
    return list(dict.fromkeys(programs)), silent
