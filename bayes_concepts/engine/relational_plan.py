"""Compile relational programs into the bitset plan of :mod:`.kernels`.

A value is a strided *view* of bitset rows: each axis of the view is an object variable
(``y``: its slot), the element axis ``#`` of a set (a set is one membership row per object
slot), or the value axis ``~v`` of a one-hot value (one row per value).  Row of a view at
an assignment of its axes = ``off + sum(stride * index)``; an axis a value does not have is
a broadcast.  So

* ``y color?`` costs nothing: it is the bank's colour rows, with axis ``y`` over slots;
* ``a b left`` is the bank's relation rows ``(a, b)`` (``S × S`` per relation), with the
  axes named after the two variables -- or, for ``unique`` referents, ANDed with the
  referent's membership and ORed over its slot;
* a binder over ``y`` renames the body's axis ``y`` to the set's ``#`` and reduces it
  (OR for ``exists``, AND for ``forall``, none for ``filter``).

Cost: a value with ``k`` free variables has ``slots**k`` rows per value, so time and memory
grow with objects² for a body under two nested binders (objects³ for three).  Every
``unique`` adds its *presupposition* (its set has exactly one member) to the values computed
from it; a program's output is its value ANDed with all of them (the unique-referent rule of
:mod:`bayes_concepts.lot.relational_operators`).

The builder reuses :class:`.plan.PlanBuilder`'s instruction emission, hash-consing and
register allocation; only the values differ.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product

import numpy as np

from ..lot.grammar import NUM
from ..lot.operators import operator_of, split_binder
from ..lot.program import Node, Program
from . import kernels as K
from .plan import BANK, BankLayout, Const, PlanBuilder

VALUE = "~v"   # the value axis of a one-hot
ELEMENT = "#"  # the element axis of a set


def _axis_order(name: str) -> tuple:
    """Canonical axis order of dense values: the value axis outermost, the element axis last."""
    return (0 if name == VALUE else 2 if name == ELEMENT else 1, name)


@dataclass(frozen=True)
class View:
    """Rows ``off + sum(stride * index)`` of register ``vreg``; ``axes``: ``(name, stride,
    size)`` triples in canonical order; ``presup``: closed boolean views it presupposes."""

    vreg: int
    off: int
    axes: tuple = ()
    presup: frozenset = frozenset()

    def axis(self, name):
        return next((a for a in self.axes if a[0] == name), None)

    def stride(self, name) -> int:
        a = self.axis(name)
        return 0 if a is None else a[1]

    def names(self) -> tuple:
        return tuple(a[0] for a in self.axes)

    def at(self, assignment: dict) -> int:
        return self.off + sum(s * assignment[n] for n, s, _ in self.axes if n in assignment)

    @property
    def n_values(self) -> int:
        a = self.axis(VALUE)
        return 0 if a is None else a[2]


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Referent:
    """``unique(SET)``: the set's membership view (axis ``#``) and its presuppositions."""
    members: View


@dataclass(frozen=True)
class ListOf:
    """A property of a set (CURI's lists): membership and the one-hot over ``#``."""
    members: View
    values: View


def _rename(view: View, old: str, new: str) -> View:
    """Axis ``old`` becomes ``new``; if the view already has ``new``, they are the diagonal."""
    a = view.axis(old)
    if a is None:
        return view
    b = view.axis(new)
    axes = [x for x in view.axes if x[0] not in (old, new)]
    axes.append((new, a[1] + (b[1] if b else 0), a[2]))
    return replace(view, axes=tuple(sorted(axes, key=lambda x: _axis_order(x[0]))))


def _with_presup(view: View, *others) -> View:
    extra = frozenset().union(*(o.presup for o in others if isinstance(o, View)))
    return view if extra <= view.presup else replace(view, presup=view.presup | extra)


class RelationalLayout(BankLayout):
    """The bank block of :class:`BankLayout`, then ``S × S`` rows per relation (``a*S + b``:
    object in slot a is r of the object in slot b), in ``relations`` order, then ``S × S`` rows
    "different objects, both present" (``non-x-S``).

    relations: spatial relation names (rows from the bank's ``relation_bits``) and
    ``same_<attribute>`` names (computed from the attribute rows)."""

    def __init__(self, schema, value_offset, n_slots, relations=()):
        super().__init__(schema, value_offset, n_slots)
        self.relations = tuple(relations)
        base = self.n_rows
        S2 = n_slots * n_slots
        self.relation_offset = {r: base + i * S2 for i, r in enumerate(self.relations)}
        self.different = base + len(self.relations) * S2
        self.n_rows = self.different + S2

    def block(self, bank) -> np.ndarray:
        """The bank block for ``bank``: uint64 (n_rows, n_words)."""
        S, w = self.n_slots, bank.n_words
        head = BankLayout.rows_of(bank)
        present = np.asarray(bank.present)
        extra = []
        for r in self.relations:
            if r.startswith("same_"):
                a = self.schema.attribute_index(r[5:])
                rows = np.asarray(bank.bits)[self.value_offset[a]:self.value_offset[a] + self.schema.attributes[a].n_values]
                same = np.bitwise_or.reduce(rows[:, :, None, :] & rows[:, None, :, :], axis=0)
                same[np.arange(S), np.arange(S)] = 0
                extra.append(same.reshape(S * S, w))
            else:
                k = list(self.schema.relations).index(r)
                extra.append(np.asarray(bank.relation_bits[k]).reshape(S * S, w))
        diff = present[:, None, :] & present[None, :, :]
        diff[np.arange(S), np.arange(S)] = 0
        extra.append(diff.reshape(S * S, w))
        return np.ascontiguousarray(np.concatenate([head] + extra, axis=0))


def relational_layout(bank, grammar) -> RelationalLayout:
    """The layout of ``bank`` with the relations ``grammar`` declares."""
    relations = [op for op in grammar.operators if operator_of(op) is not None and operator_of(op).kind == "relation"]
    return RelationalLayout(bank.schema, bank.value_offset, bank.n_slots, relations)


class RelationalPlanBuilder(PlanBuilder):
    """Accumulates programs of any registered operators into one plan (see the module doc)."""

    def __init__(self, grammar, layout: RelationalLayout):
        super().__init__(grammar, layout)
        self.ONES = View(BANK, layout.ones)
        self.ZEROS = View(BANK, layout.zeros)
        self.ALL = View(BANK, layout.present, ((ELEMENT, 1, self.S),))
        #: id(program) -> (program, its _domain_parts): a program added for its extension and
        #: for its domain (compile_with_domains) is walked once; the program is kept so that
        #: its id is not reused
        self._parts_of: dict = {}

    # ---------------------------------------------------------------- primitives
    def _dense(self, axes) -> View:
        """A new register block over ``axes`` (``(name, size)`` pairs), canonical layout."""
        axes = sorted(axes, key=lambda a: _axis_order(a[0]))
        strides, step = [], 1
        for _, size in reversed(axes):
            strides.append(step)
            step *= size
        strides.reverse()
        v = self._new(step)
        return View(v, 0, tuple((n, s, size) for (n, size), s in zip(axes, strides)))

    @staticmethod
    def _union_axes(*views) -> list:
        sizes = {}
        for view in views:
            for n, _, size in view.axes:
                sizes[n] = min(size, sizes.get(n, size))
        return sorted(sizes.items(), key=lambda a: _axis_order(a[0]))

    @staticmethod
    def _assignments(axes):
        names = [n for n, _ in axes]
        for combo in product(*(range(size) for _, size in axes)):
            yield dict(zip(names, combo))

    def _elementwise(self, op, a: View, b: View | None = None) -> View:
        views = (a,) if b is None else (a, b)
        axes = self._union_axes(*views)
        out = self._dense(axes)
        if not axes:
            self._emit(op, (out.vreg, 0), (a.vreg, a.off), 0, (b.vreg, b.off) if b else (-1, 0), 0, 1)
        else:
            last, n = axes[-1]
            for at in self._assignments(axes[:-1]):
                self._emit(op, (out.vreg, out.at(at)), (a.vreg, a.at(at)), a.stride(last),
                           (b.vreg, b.at(at)) if b else (-1, 0), b.stride(last) if b else 0, n)
        return _with_presup(out, *views)

    def _and(self, a, b):
        return self._elementwise(K.OP_AND, a, b)

    def _or(self, a, b):
        return self._elementwise(K.OP_OR, a, b)

    def _reduce(self, op, view: View, axis: str, start: int = 0, count: int | None = None) -> View:
        """OR (AND) of ``view`` over ``axis`` indices ``start .. start+count-1``."""
        a = view.axis(axis)
        if a is None:
            return view
        count = a[2] - start if count is None else count
        if count <= 0:
            return _with_presup(self.ZEROS if op == K.OP_REDUCE_OR else self.ONES, view)
        base = replace(view, off=view.off + start * a[1], axes=tuple(x for x in view.axes if x[0] != axis))
        if count == 1:
            return base
        rest = [(n, size) for n, _, size in base.axes]
        out = self._dense(rest)
        if not rest:
            self._emit(op, (out.vreg, 0), (base.vreg, base.off), a[1], n=1, n2=count)
        else:
            last, n = rest[-1]
            for at in self._assignments(rest[:-1]):
                self._emit(op, (out.vreg, out.at(at)), (base.vreg, base.at(at)), a[1], sb=base.stride(last),
                           n=n, n2=count)
        return _with_presup(out, view)

    def _count(self, members: View) -> View:
        """One-hot over 0..slots of the number of set rows along ``#``."""
        a = members.axis(ELEMENT)
        S = self.S
        rest = [(n, size) for n, _, size in members.axes if n != ELEMENT]
        if a is None:  # a set that is the same row for every slot cannot occur; keep it exact anyway
            raise AssertionError("a set value without its element axis")
        n_blocks = int(np.prod([size for _, size in rest[:-1]])) if len(rest) > 1 else 1
        last_size = rest[-1][1] if rest else 1
        block = last_size * (S + 1)
        v = self._new(n_blocks * block)
        strides, step = {}, block
        for name, size in reversed(rest[:-1]):
            strides[name] = step
            step *= size
        axes = [(VALUE, 1, S + 1)]
        if rest:
            axes.append((rest[-1][0], S + 1, last_size))
        axes += [(n, strides[n], size) for n, size in rest[:-1]]
        out = View(v, 0, tuple(sorted(axes, key=lambda x: _axis_order(x[0]))))
        last = rest[-1][0] if rest else None
        for at in self._assignments(rest[:-1]):
            dst = out.at(at)
            self._emit(K.OP_COUNT, (v, dst), (members.vreg, members.at(at)), a[1],
                       sb=members.stride(last) if last else 0, n=last_size, n2=a[2])
        return _with_presup(out, members)

    def _select(self, view: View, code: int) -> View:
        """Row of value ``code`` of a one-hot (no value: the zeros row)."""
        a = view.axis(VALUE)
        if not 0 <= code < a[2]:
            return _with_presup(self.ZEROS, view)
        return replace(view, off=view.off + code * a[1], axes=tuple(x for x in view.axes if x[0] != VALUE))

    def _equal(self, a, b) -> View:
        if isinstance(a, Const) and isinstance(b, Const):
            return self.ONES if a.code == b.code else self.ZEROS
        if isinstance(a, Const):
            a, b = b, a
        if isinstance(b, Const):
            return self._select(a, b.code)
        return self._reduce(K.OP_REDUCE_OR, self._and(a, b), VALUE)

    def _greater(self, a, b) -> View:
        if isinstance(a, Const) and isinstance(b, Const):
            return self.ONES if a.code > b.code else self.ZEROS
        if isinstance(b, Const):  # a > c: values above c
            return self._reduce(K.OP_REDUCE_OR, a, VALUE, b.code + 1)
        if isinstance(a, Const):  # c > b: values below c
            return self._reduce(K.OP_REDUCE_OR, b, VALUE, 0, min(a.code, b.n_values))
        k = min(a.n_values, b.n_values)
        acc = None
        for v in range(1, k):
            term = self._and(self._select(a, v), self._reduce(K.OP_REDUCE_OR, b, VALUE, 0, v))
            acc = term if acc is None else self._or(acc, term)
        return acc if acc is not None else _with_presup(self.ZEROS, a, b)

    def _object_axis(self, obj, placeholder: str):
        """(view factor, axis name) for one side of a relation or a property."""
        if isinstance(obj, Var):
            return None, obj.name
        return _rename(obj.members, ELEMENT, placeholder), placeholder

    def _on_objects(self, view: View, *sides) -> View:
        """Bind the placeholder axes of ``view`` to the objects ``sides``: ``(obj, placeholder)``."""
        for obj, placeholder in sides:
            factor, name = self._object_axis(obj, placeholder)
            if factor is None:
                view = _rename(view, placeholder, name)
            else:
                view = self._reduce(K.OP_REDUCE_OR, self._and(factor, view), placeholder)
        return view

    # ---------------------------------------------------------------- compiling
    def _domain_parts(self, program: Program) -> tuple:
        """``(value, parts)``: the program's value without its presuppositions, and the closed
        boolean views whose AND is the concept's domain -- the presuppositions of the program
        (sorted), then per domain constraint its presuppositions and its value."""
        seen = self._parts_of.get(id(program))
        if seen is not None and seen[0] is program:
            return seen[1]
        value = self._node(program.root)
        parts = sorted(value.presup, key=lambda v: (v.vreg, v.off))
        for _, root in program.constraints:
            c = self._node(root)
            parts += [p for p in sorted(c.presup, key=lambda v: (v.vreg, v.off)) if p not in parts]
            bare = replace(c, presup=frozenset())
            if bare not in parts:
                parts.append(bare)
        out = replace(value, presup=frozenset()), tuple(parts)
        self._parts_of[id(program)] = (program, out)
        return out

    def _store(self, value: View) -> int:
        idx = self.n_outputs
        self.n_outputs += 1
        self._emit(K.OP_STORE, (-1, 0), (value.vreg, value.off), b=(-2, idx))
        return idx

    def add(self, program: Program) -> int:
        """Output of the concept's extension: its value ANDed with its domain."""
        value, parts = self._domain_parts(program)
        for p in parts:
            value = replace(self._and(value, p), presup=frozenset())
        return self._store(value)

    def add_domain(self, program: Program) -> int:
        """Output of the concept's domain (every scene for a program without ``unique`` and
        constraints); sub-programs shared with extensions added to the same plan run once."""
        _, parts = self._domain_parts(program)
        dom = self.ONES
        for p in parts:
            dom = p if dom is self.ONES else replace(self._and(dom, p), presup=frozenset())
        return self._store(dom)

    def _compute(self, node: Node, ch):
        kind, op = node.kind, node.op
        if kind == "constant":
            return Const(self.grammar.constant_code(node))
        if kind == "variable":
            if op == "S":
                return self.ALL
            if op == "non-x-S":
                diff = View(BANK, self.layout.different, ((ELEMENT, self.S, self.S), ("x", 1, self.S)))
                return diff
            return Var(op)
        if kind == "property":
            return self._property(op, ch[0])
        if kind == "compare":
            return self._equal(ch[0], ch[1]) if op == "=" else self._greater(ch[0], ch[1])
        if kind == "logic":
            if op == "not":
                return self._elementwise(K.OP_NOT, ch[0])
            return self._elementwise(K.OP_AND if op == "and" else K.OP_OR, ch[0], ch[1])
        if kind in ("set_quantifier", "count"):
            return self._over_list(op, ch[0], ch[1])
        if kind == "quantifier":
            return self.exists(Node("exists:x", (), "BOOL", "binder", node.position), self.ALL, ch[0]) \
                if op == "exists=" else self.forall(Node("forall:x", (), "BOOL", "binder", node.position),
                                                    self.ALL, ch[0])
        operator = operator_of(op)
        if operator is None or operator.compile is None:
            raise ValueError(f"operator {op!r} has no bit-sliced kernel")
        return operator.compile(self, node, ch)

    def _property(self, token, obj):
        a = self._attr_index[token]
        n_values = self.layout.schema.attributes[a].n_values
        rows = View(BANK, self.layout.value_row(a, 0), ((VALUE, self.S, n_values), ("@p", 1, self.S)))
        if isinstance(obj, View):  # a property of a set: CURI's list
            return ListOf(obj, _rename(rows, "@p", ELEMENT))
        return self._on_objects(rows, (obj, "@p"))

    def _over_list(self, op, lst: ListOf, value):
        match = self._equal(lst.values, value)
        if op == "count=":
            return self._count(self._and(lst.members, match))
        if op == "exists=":
            return self._reduce(K.OP_REDUCE_OR, self._and(lst.members, match), ELEMENT)
        every = self._reduce(K.OP_REDUCE_AND, self._elementwise(K.OP_ORNOT, match, lst.members), ELEMENT)
        return self._and(every, self._reduce(K.OP_REDUCE_OR, lst.members, ELEMENT))  # CURI: false on empty

    # ---------------------- kernels of xor and iff (bayes_concepts.lot.boolean_operators)
    def xor(self, node, a, b):
        """a ⊕ b = (a ∨ b) ∧ ¬(a ∧ b)."""
        return self._elementwise(K.OP_ANDNOT, self._or(a, b), self._and(a, b))

    def iff(self, node, a, b):
        """a ↔ b = ¬(a ⊕ b)."""
        return self._elementwise(K.OP_NOT, self.xor(node, a, b))

    # ------------------------------------------- kernels of the relational operators
    def filter(self, node, members, body):
        var = split_binder(node.op)[1]
        return self._and(members, _rename(body, var, ELEMENT))

    def exists(self, node, members, body):
        return self._reduce(K.OP_REDUCE_OR, self.filter(node, members, body), ELEMENT)

    def forall(self, node, members, body):
        var = split_binder(node.op)[1]
        holds = self._elementwise(K.OP_ORNOT, _rename(body, var, ELEMENT), members)
        return self._reduce(K.OP_REDUCE_AND, holds, ELEMENT)

    def exist(self, node, members):
        return self._reduce(K.OP_REDUCE_OR, members, ELEMENT)

    def count(self, node, members):
        return self._count(members)

    def union(self, node, a, b):
        return self._or(a, b)

    def intersect(self, node, a, b):
        return self._and(a, b)

    def unique(self, node, members):
        exactly_one = replace(self._select(self._count(members), 1), presup=frozenset())
        return Referent(replace(members, presup=members.presup | {exactly_one}))

    def relation(self, node, a, b):
        off = self.layout.relation_offset[node.op]
        rows = View(BANK, off, (("@a", self.S, self.S), ("@b", 1, self.S)))
        return self._on_objects(rows, (a, "@a"), (b, "@b"))

    same = relation

    def offset(self, node, value, k):
        n = value.n_values
        out = self._dense([(n2, size) for n2, _, size in value.axes])
        shifted = replace(value, off=value.off - k.code * value.stride(VALUE))
        for v in range(n):
            src = replace(shifted, off=shifted.off + v * value.stride(VALUE))
            src = replace(src, axes=tuple(x for x in value.axes if x[0] != VALUE))
            row = src if 0 <= v - k.code < n else self.ZEROS
            dst = replace(out, off=out.off + v * out.stride(VALUE), axes=tuple(x for x in out.axes if x[0] != VALUE))
            rest = [(m, size) for m, _, size in dst.axes]
            if not rest:
                self._emit(K.OP_OR, (dst.vreg, dst.off), (row.vreg, row.off), 0, (BANK, self.layout.zeros), 0, 1)
            else:
                last, size = rest[-1]
                for at in self._assignments(rest[:-1]):
                    self._emit(K.OP_OR, (dst.vreg, dst.at(at)), (row.vreg, row.at(at)), row.stride(last),
                               (BANK, self.layout.zeros), 0, size)
        return _with_presup(out, value)

