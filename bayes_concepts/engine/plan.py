"""Compile programs into one bitset plan.

Every value a program computes is a set of bitset rows over the scene bank:

* a BOOL that does not depend on x is one row; one that does is ``n_slots`` rows,
  row ``s`` holding the value with x bound to object slot ``s``;
* a property of x (``x color?``) and a count (``count=``) are *one-hot*: one row
  per value (per slot, if x-dependent);
* constants are folded at compile time, so ``x color? red =`` is a row of the
  bank itself and costs nothing.

Sub-programs are hash-consed: a sub-program shared by many programs is computed
once per plan.  Registers are reused once their last reader has run (liveness),
so a plan over hundreds of thousands of programs needs a register file of only
its live rows.  :mod:`.kernels` documents the instruction set.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lot.grammar import Grammar
from ..lot.program import Node, Program
from . import kernels as K

BANK = 0  # virtual register 0 is the scene bank block


@dataclass(frozen=True)
class BoolVal:
    """Rows ``off + s*sstride`` of vreg (``sstride == 0``: independent of x)."""
    vreg: int
    off: int
    sstride: int


@dataclass(frozen=True)
class OneHot:
    """Row of value ``v`` at slot ``s`` is ``off + v*vstride + s*sstride`` of vreg."""
    vreg: int
    off: int
    vstride: int
    sstride: int
    n_values: int


@dataclass(frozen=True)
class Const:
    code: int


@dataclass(frozen=True)
class SetVal:
    non_x: bool


@dataclass(frozen=True)
class SetProp:
    attribute: int  # index into the bank's attributes
    non_x: bool


class XVal:
    pass


X = XVal()


@dataclass
class Plan:
    """A compiled plan: ``instructions`` int64 (n, 9) with physical rows, ``n_regs``
    rows of register file, ``n_outputs`` stored rows; output ``i`` is program ``i``."""

    instructions: np.ndarray
    n_regs: int
    n_outputs: int
    n_bank_rows: int
    n_nodes: int
    #: the bank layout the plan reads (its :meth:`BankLayout.block` gives the bank rows)
    layout: object = None

    @property
    def n_instructions(self) -> int:
        return len(self.instructions)


class BankLayout:
    """Where each (attribute, value, slot) row sits in the bank block.

    Bank block rows: ``(value_offset[a] + code) * n_slots + slot`` for attribute
    values, then ``n_slots`` presence rows, then an all-ones and an all-zeros row.
    """

    def __init__(self, schema, value_offset, n_slots):
        self.schema = schema
        self.n_slots = n_slots
        self.value_offset = [int(v) for v in value_offset]
        n_value_rows = self.value_offset[-1] + schema.attributes[-1].n_values
        self.present = n_value_rows * n_slots
        self.ones = self.present + n_slots
        self.zeros = self.ones + 1
        self.n_rows = self.zeros + 1

    def value_row(self, attribute: int, code: int, slot: int = 0) -> int:
        return (self.value_offset[attribute] + code) * self.n_slots + slot

    def block(self, bank) -> np.ndarray:
        """The bank block this layout describes, for ``bank``."""
        return self.rows_of(bank)

    @staticmethod
    def rows_of(bank) -> np.ndarray:
        """The bank block for ``bank`` (a SceneBank): uint64 (n_rows, n_words)."""
        w = bank.n_words
        ones = np.full((1, w), np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64)
        zeros = np.zeros((1, w), np.uint64)
        return np.ascontiguousarray(np.concatenate(
            [bank.bits.reshape(-1, w), bank.present, ones, zeros], axis=0))


class PlanBuilder:
    """Accumulates programs into one plan; call :meth:`add` per program, then :meth:`finish`."""

    def __init__(self, grammar: Grammar, layout: BankLayout):
        self.grammar = grammar
        self.layout = layout
        self.S = layout.n_slots
        schema = layout.schema
        self._attr_index = {}
        for tok, prop in grammar.properties.items():
            try:
                a = schema.names.index(prop.attribute)
            except ValueError:
                raise ValueError(f"the scene bank has no attribute {prop.attribute!r} (read by {tok})") from None
            expected = grammar.schema.attribute(prop.attribute).values
            if tuple(schema.attributes[a].values) != tuple(expected):
                raise ValueError(f"attribute {prop.attribute!r} has values {schema.attributes[a].values} in the "
                                 f"scene bank but {expected} in the grammar")
            self._attr_index[tok] = a
        self.instr: list = []
        self.vsize = [layout.n_rows]
        self.memo: dict = {}
        self.n_outputs = 0
        self.ONES = BoolVal(BANK, layout.ones, 0)
        self.ZEROS = BoolVal(BANK, layout.zeros, 0)
        self.PRESENT = BoolVal(BANK, layout.present, 1)

    # -------------------------------------------------------------- emitting
    def _new(self, rows: int) -> int:
        self.vsize.append(rows)
        return len(self.vsize) - 1

    def _emit(self, op, dst, a=(-1, 0), sa=0, b=(-1, 0), sb=0, n=1, n2=0, skip=-1):
        """dst, a, b: (vreg, offset) pairs; see kernels for the meaning of each field."""
        self.instr.append((op, dst[0], dst[1], a[0], a[1], sa, b[0], b[1], sb, n, n2, skip))

    def _binary(self, op, x: BoolVal, y: BoolVal) -> BoolVal:
        n = self.S if (x.sstride or y.sstride) else 1
        v = self._new(n)
        self._emit(op, (v, 0), (x.vreg, x.off), x.sstride, (y.vreg, y.off), y.sstride, n)
        return BoolVal(v, 0, 1 if n > 1 else 0)

    def _reduce_values(self, op, h: OneHot, values) -> BoolVal:
        """OR (or AND) over the rows of the given values of a one-hot, per slot."""
        values = [v for v in values if 0 <= v < h.n_values]
        if not values:
            return self.ZEROS if op == K.OP_REDUCE_OR else self.ONES
        if len(values) == 1:
            return BoolVal(h.vreg, h.off + values[0] * h.vstride, h.sstride)
        n = self.S if h.sstride else 1
        contiguous = values == list(range(values[0], values[0] + len(values)))
        assert contiguous
        v = self._new(n)
        self._emit(op, (v, 0), (h.vreg, h.off + values[0] * h.vstride), h.vstride,
                   sb=h.sstride, n=n, n2=len(values))
        return BoolVal(v, 0, 1 if n > 1 else 0)

    def _equal_onehots(self, a: OneHot, b: OneHot) -> BoolVal:
        """OR over values v of a_v & b_v, per slot."""
        k = min(a.n_values, b.n_values)
        n = self.S if (a.sstride or b.sstride) else 1
        tmp = self._new(k * n)
        for v in range(k):
            self._emit(K.OP_AND, (tmp, v * n), (a.vreg, a.off + v * a.vstride), a.sstride,
                       (b.vreg, b.off + v * b.vstride), b.sstride, n)
        out = self._new(n)
        self._emit(K.OP_REDUCE_OR, (out, 0), (tmp, 0), n, sb=1, n=n, n2=k)
        return BoolVal(out, 0, 1 if n > 1 else 0)

    def _greater_onehots(self, a: OneHot, b: OneHot) -> BoolVal:
        """OR over v of a_v & (OR over u < v of b_u), per slot."""
        k = min(a.n_values, b.n_values)
        if k < 2:
            return self.ZEROS
        n = self.S if (a.sstride or b.sstride) else 1
        below = self._new((k - 1) * n)  # block v-1: OR of b_u for u < v
        for v in range(1, k):
            self._emit(K.OP_REDUCE_OR, (below, (v - 1) * n), (b.vreg, b.off), b.vstride, sb=b.sstride, n=n, n2=v)
        tmp = self._new((k - 1) * n)
        for v in range(1, k):
            self._emit(K.OP_AND, (tmp, (v - 1) * n), (a.vreg, a.off + v * a.vstride), a.sstride,
                       (below, (v - 1) * n), 1 if n > 1 else 0, n)
        out = self._new(n)
        self._emit(K.OP_REDUCE_OR, (out, 0), (tmp, 0), n, sb=1, n=n, n2=k - 1)
        return BoolVal(out, 0, 1 if n > 1 else 0)

    # -------------------------------------------------------------- compiling
    def add(self, program: Program) -> int:
        """Add a program; returns its output index (row of the signature matrix)."""
        value = self._node(program.root)
        idx = self.n_outputs
        self.n_outputs += 1
        self._emit(K.OP_STORE, (-1, 0), (value.vreg, value.off), b=(-2, idx))
        return idx

    def _node(self, node: Node):
        children = [self._node(c) for c in node.children]
        key = (node.op, node.type, *map(id, children)) if children else (node.op, node.type)
        # children are memoised values, so id() identifies the sub-program; the entry keeps them
        # alive, so an id in a key is never reused by another object
        hit = self.memo.get(key)
        if hit is not None:
            return hit[0]
        value = self._compute(node, children)
        self.memo[key] = (value, children)
        return value

    def _compute(self, node: Node, ch):
        kind, op, S = node.kind, node.op, self.S
        if kind == "constant":
            return Const(self.grammar.constant_code(node))
        if kind == "variable":
            return X if op == "x" else SetVal(op == "non-x-S")
        if kind == "property":
            a = self._attr_index[op]
            if isinstance(ch[0], XVal):
                return OneHot(BANK, self.layout.value_row(a, 0), S, 1, self.layout.schema.attributes[a].n_values)
            return SetProp(a, ch[0].non_x)
        if kind == "compare":
            return self._compare(op, ch[0], ch[1])
        if kind == "logic":
            if op == "not":
                x = ch[0]
                n = S if x.sstride else 1
                v = self._new(n)
                self._emit(K.OP_NOT, (v, 0), (x.vreg, x.off), x.sstride, n=n)
                return BoolVal(v, 0, 1 if n > 1 else 0)
            return self._binary(K.OP_AND if op == "and" else K.OP_OR, ch[0], ch[1])
        if kind in ("set_quantifier", "count"):
            return self._over_set(op, ch[0], ch[1])
        if kind == "quantifier":
            body = ch[0]
            if not body.sstride:
                return body
            tmp = self._new(S)
            both = K.OP_AND if op == "exists=" else K.OP_ORNOT  # forall: body | ~present
            self._emit(both, (tmp, 0), (body.vreg, body.off), body.sstride, (BANK, self.layout.present), 1, S)
            out = self._new(1)
            red = K.OP_REDUCE_OR if op == "exists=" else K.OP_REDUCE_AND
            self._emit(red, (out, 0), (tmp, 0), 1, n=1, n2=S)
            return BoolVal(out, 0, 0)
        raise AssertionError(kind)

    def _compare(self, op, a, b) -> BoolVal:
        if isinstance(a, Const) and isinstance(b, Const):
            truth = a.code == b.code if op == "=" else a.code > b.code
            return self.ONES if truth else self.ZEROS
        if isinstance(b, Const) or isinstance(a, Const):
            if isinstance(a, Const):
                h, c, h_left = b, a.code, False
            else:
                h, c, h_left = a, b.code, True
            if op == "=":
                return self._reduce_values(K.OP_REDUCE_OR, h, [c])
            if h_left:  # h > c
                return self._reduce_values(K.OP_REDUCE_OR, h, list(range(max(c + 1, 0), h.n_values)))
            return self._reduce_values(K.OP_REDUCE_OR, h, list(range(0, min(c, h.n_values))))  # c > h
        if op == "=":
            return self._equal_onehots(a, b)
        return self._greater_onehots(a, b)

    def _mask(self, lst: SetProp, v):
        """Membership rows (object in slot t has the value): returns (vreg, off, sb)
        where row for x-slot o and object slot t is ``off + t + o*sb``."""
        S, L = self.S, self.layout
        if isinstance(v, Const):  # type checking keeps the code within the attribute's values
            return (BANK, L.value_row(lst.attribute, v.code), 0)
        # v is a property of x: m[o][t] = OR over values of P_val[t] & Q_val[o]
        k = min(v.n_values, L.schema.attributes[lst.attribute].n_values)
        tmp = self._new(k * S)
        m = self._new(S * S)
        for o in range(S):
            for val in range(k):
                self._emit(K.OP_AND, (tmp, val * S), (BANK, L.value_row(lst.attribute, val)), 1,
                           (v.vreg, v.off + val * v.vstride + o * v.sstride), 0, S)
            self._emit(K.OP_REDUCE_OR, (m, o * S), (tmp, 0), S, sb=1, n=S, n2=k)
        return (m, 0, S)

    def _over_set(self, op, lst: SetProp, v) -> BoolVal | OneHot:
        S, L = self.S, self.layout
        mvreg, moff, msb = self._mask(lst, v)
        n = S if (lst.non_x or msb != 0) else 1
        skip = -2 if lst.non_x else -1
        if op == "count=":
            out = self._new(n * (S + 1))
            self._emit(K.OP_COUNT, (out, 0), (mvreg, moff), 1, sb=msb, n=n, n2=S, skip=skip)
            return OneHot(out, 0, 1, (S + 1) if n > 1 else 0, S + 1)
        if op == "exists=":
            out = self._new(n)
            self._emit(K.OP_REDUCE_OR, (out, 0), (mvreg, moff), 1, sb=msb, n=n, n2=S, skip=skip)
            return BoolVal(out, 0, 1 if n > 1 else 0)
        # for-all=: every present object in the set matches, and the set is not empty
        vac = self._new(S * (S if msb else 1))
        for o in range(S if msb else 1):
            self._emit(K.OP_ORNOT, (vac, o * S), (mvreg, moff + o * msb), 1,
                       (BANK, L.present), 1, S)
        out = self._new(n)
        self._emit(K.OP_REDUCE_AND, (out, 0), (vac, 0), 1, sb=S if msb else 0, n=n, n2=S, skip=skip)
        if not lst.non_x:
            return BoolVal(out, 0, 1 if n > 1 else 0)
        # S−x is empty on one-object scenes: require an object in slot 1
        return self._binary(K.OP_AND, BoolVal(out, 0, 1), BoolVal(BANK, L.present + 1, 0))

    # -------------------------------------------------------------- finishing
    def finish(self) -> Plan:
        """Allocate physical rows (reusing dead registers) and return the :class:`Plan`."""
        if not self.instr:
            return Plan(np.zeros((0, 9), np.int64), self.layout.n_rows, 0, self.layout.n_rows, 0, self.layout)
        ins = np.array(self.instr, dtype=np.int64)
        n_ins = len(ins)
        n_v = len(self.vsize)
        last = np.full(n_v, -1, np.int64)
        idx = np.arange(n_ins)
        reads_b = ins[:, 0] != K.OP_STORE
        for col, mask in ((3, None), (6, reads_b), (1, None)):
            v = ins[:, col] if mask is None else np.where(mask, ins[:, col], -1)
            ok = v > 0
            np.maximum.at(last, v[ok], idx[ok])
        first = np.full(n_v, n_ins, np.int64)
        ok = ins[:, 1] > 0
        np.minimum.at(first, ins[ok, 1], idx[ok])
        base = _allocate(first, last, np.array(self.vsize, np.int64), self.layout.n_rows)
        out = np.zeros((n_ins, 9), np.int64)
        out[:, 0] = ins[:, 0]
        out[:, 1] = np.where(ins[:, 1] >= 0, base[np.maximum(ins[:, 1], 0)] + ins[:, 2], 0)
        out[:, 2] = np.where(ins[:, 3] >= 0, base[np.maximum(ins[:, 3], 0)] + ins[:, 4], 0)
        out[:, 3] = ins[:, 5]
        store = ins[:, 0] == K.OP_STORE
        out[:, 4] = np.where(store, ins[:, 7], np.where(ins[:, 6] >= 0, base[np.maximum(ins[:, 6], 0)] + ins[:, 7], 0))
        out[:, 5] = ins[:, 8]
        out[:, 6:9] = ins[:, 9:12]
        n_regs = int(max(self.layout.n_rows, (base + np.array(self.vsize)).max()))
        return Plan(out, n_regs, self.n_outputs, self.layout.n_rows, len(self.memo), self.layout)


def _allocate(first, last, size, n_bank_rows) -> np.ndarray:
    """First-fit register allocation by size class: a vreg lives from its first write
    to its last read (or write); rows of dead vregs are reused by later ones."""
    n_v = len(size)
    base = np.zeros(n_v, np.int64)
    order = np.argsort(first[1:], kind="stable") + 1
    ends = {}
    for v in range(1, n_v):
        ends.setdefault(int(max(last[v], first[v])), []).append(v)
    free: dict = {}
    top = n_bank_rows
    # sweep instructions in order of vreg birth; release vregs whose end has passed
    pending = sorted(ends)
    pi = 0
    for v in order:
        t = first[v]
        if t >= len(first) + 10**12:
            continue
        while pi < len(pending) and pending[pi] < t:
            for dead in ends[pending[pi]]:
                free.setdefault(int(size[dead]), []).append(int(base[dead]))
            pi += 1
        s = int(size[v])
        bucket = free.get(s)
        if bucket:
            base[v] = bucket.pop()
        else:
            base[v] = top
            top += s
    return base


def compile_programs(programs, grammar: Grammar, layout: BankLayout) -> Plan:
    """Compile parsed programs into one plan; output ``i`` is ``programs[i]``."""
    builder = PlanBuilder(grammar, layout)
    for p in programs:
        builder.add(p)
    return builder.finish()
