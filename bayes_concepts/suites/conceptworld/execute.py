"""The fast ConceptWorld executor: per-colour bitmaps, shifts and ANDs.

Scenes are int8 (S, N, N) grids (:mod:`bayes_concepts.scenes.grid`); their bitmaps are
bool (S, C, N, N).  How each form of concept runs:

* **objects** (shapes and objects made of them) compile to fixed patterns
  (:class:`~bayes_concepts.conceptworld.definitions.Variant`): the anchors of a pattern --
  bool (S, N, N), True where an instance has its top-left corner -- are, per same-colour
  group, an OR over allowed colours of an AND of the colour's bitmap shifted by each point's
  offset, ANDed over groups.  "There is a red 2x2 square" is four shifted bitmaps ANDed
  and an ``any``.
* **relations between objects** (lifted from point relations) are evaluated once per
  pair of patterns on every relative offset of a (2N-1) x (2N-1) window, by their
  definitions: an offset table.
* **exists** over two objects joins the two anchor lists of each scene and looks the
  offset of every pair up in the table.
* **chains** are a dynamic programme over chain length: the anchors where a chain of k
  objects can end (per set of element kinds seen so far) are the OR, over the table's
  offsets, of the shifted anchors for k - 1, ANDed with the element's anchors.  So a
  sequence of 7 squares is 7 rounds of a few shifts.
* **Box-World** finds its pieces with bitmaps, looks their relations up in offset tables,
  and walks the resulting small graph of each scene
  (:func:`~bayes_concepts.conceptworld.boxworld.boxworld_lengths`).

:func:`evaluate_concepts` is the entry point: bool (n_concepts, S).  Everything is exact:
the tests compare it with the point-by-point interpreter
(:mod:`~bayes_concepts.conceptworld.interpret`) on random grids and every concept.
"""
from __future__ import annotations

import ast

import numpy as np

from ...scenes.grid import grid_bitmaps
from .boxworld import boxworld_lengths
from .definitions import ConceptDef, Definitions, DefinitionsError, Variant, check_grids, compile_expr

__all__ = ["evaluate_concepts", "anchors", "offset_table", "CHUNK"]

#: scenes per block of bitmaps (bool (CHUNK, C, N, N) at a time)
CHUNK = 2048


def anchors(v: Variant, bitmaps: np.ndarray) -> np.ndarray:
    """bool (S, N, N): where an instance of pattern ``v`` has its top-left corner.
    ``bitmaps``: bool (S, C, N, N)."""
    S, C, N, _ = bitmaps.shape
    h, w = v.height, v.width
    out = np.zeros((S, N, N), bool)
    if h > N or w > N:
        return out
    H, W = N - h + 1, N - w + 1
    acc = np.ones((S, H, W), bool)
    for group in v.groups:
        ok = v.allowed[list(group)].all(axis=0)
        g = np.zeros((S, H, W), bool)
        for c in np.flatnonzero(ok):
            a = np.ones((S, H, W), bool)
            for i in group:
                dy, dx = v.offsets[i]
                a &= bitmaps[:, c, dy:dy + H, dx:dx + W]
            g |= a
        acc &= g
    out[:, :H, :W] = acc
    return out


def _points(v: Variant, dy, dx, color) -> tuple:
    """The points of pattern ``v`` placed at (dy, dx) (arrays allowed), all of ``color``."""
    return tuple((dx + int(ox), dy + int(oy), color) for oy, ox in v.offsets)


def offset_table(defs: Definitions, fn, names: tuple, va: Variant, vb: Variant, colors=None) -> np.ndarray:
    """bool (2N-1, 2N-1): ``[dy + N - 1, dx + N - 1]`` is True when the expression ``fn`` holds
    with ``names[0]`` = pattern ``va`` at the origin and ``names[1]`` = pattern ``vb`` at
    (dy, dx) (anchor offsets).  ``colors``: (colour of va, colour of vb); None: the relation
    must not depend on colour (checked), a :class:`DefinitionsError` otherwise."""
    N = defs.size
    d = np.arange(-(N - 1), N)
    DY, DX = np.meshgrid(d, d, indexing="ij")

    def run(ca, cb):
        env = {names[0]: _points(va, 0, 0, ca), names[1]: _points(vb, DY, DX, cb)}
        return np.broadcast_to(np.asarray(fn(env), bool), DY.shape).copy()

    if colors is not None:
        return run(*colors)
    t = run(0, 0)
    if not (np.array_equal(t, run(0, 1)) and np.array_equal(t, run(1, 0))):
        raise DefinitionsError(f"{defs.source}: a relation between {va.object} and {vb.object} depends on colour; "
                               "chains and exists join objects by colour-free relations")
    return t


def _shift(a: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """out[..., y, x] = a[..., y - dy, x - dx] (False outside)."""
    out = np.zeros_like(a)
    N = a.shape[-1]
    ys, yd = (slice(0, N - dy), slice(dy, N)) if dy >= 0 else (slice(-dy, N), slice(0, N + dy))
    xs, xd = (slice(0, N - dx), slice(dx, N)) if dx >= 0 else (slice(-dx, N), slice(0, N + dx))
    out[..., yd, xd] = a[..., ys, xs]
    return out


class _Executor:
    def __init__(self, defs: Definitions):
        self.defs = defs
        self.tables = {}

    def table(self, key, fn, names, va, vb):
        k = (key, va.geometry, vb.geometry)
        if k not in self.tables:
            self.tables[k] = offset_table(self.defs, fn, names, va, vb)
        return self.tables[k]

    # ------------------------------------------------------------------ forms
    def run(self, c: ConceptDef, bitmaps, cache) -> np.ndarray:
        if c.form == "exists":
            return self.exists(c, bitmaps, cache)
        if c.form == "chain":
            return self.chain(c, bitmaps, cache)
        if c.form == "any":
            out = np.zeros(bitmaps.shape[0], bool)
            for name in c.entry["any"]:
                sub = self.defs.concept(f"{name} {c.n}" if c.n is not None else name)
                out |= self.run(sub, bitmaps, cache)
            return out
        return self.boxworld(c, bitmaps, cache)

    def anchors_of(self, obj, bitmaps, cache):
        """[(variant, anchors (S, N, N))] of object ``obj``."""
        if obj not in cache:
            cache[obj] = [(v, anchors(v, bitmaps)) for v in self.defs.variants(obj)]
        return cache[obj]

    def exists(self, c, bitmaps, cache):
        defs = self.defs
        where = f"{defs.source} [concept.{c.family}] exists"
        tree = ast.parse(" ".join(c.entry["exists"].split()), mode="eval").body
        terms = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And) else [tree]
        objs, rels = {}, []
        for t in terms:
            if not (isinstance(t, ast.Call) and isinstance(t.func, ast.Name)
                    and all(isinstance(a, ast.Name) for a in t.args)):
                raise DefinitionsError(f"{where}: the fast executor reads an 'and' of calls on the variables "
                                       f"({ast.unparse(t)!r} is not one)")
            args = [a.id for a in t.args]
            kind = defs.kind_of(t.func.id)
            if kind == "object" and len(args) == 1 and args[0] not in objs:
                objs[args[0]] = t.func.id
            elif kind == "relation" and len(args) == 2:
                rels.append((t.func.id, args))
            else:
                raise DefinitionsError(f"{where}: {ast.unparse(t)!r}: give each variable one object and relate "
                                       "the variables by relations")
        names = sorted(objs)
        S = bitmaps.shape[0]
        out = np.zeros(S, bool)
        if len(names) == 1 and not rels:
            for _, a in self.anchors_of(objs[names[0]], bitmaps, cache):
                out |= a.reshape(S, -1).any(axis=1)
            return out
        if len(names) != 2:
            raise DefinitionsError(f"{where}: the fast executor joins one or two objects (use a chain for more)")
        xa, xb = names
        N = defs.size
        for va, aa in self.anchors_of(objs[xa], bitmaps, cache):
            sa, ya, xxa = np.nonzero(aa)
            if not len(sa):
                continue
            for vb, ab in self.anchors_of(objs[xb], bitmaps, cache):
                sb, yb, xxb = np.nonzero(ab)
                if not len(sb):
                    continue
                ok_table = np.ones((2 * N - 1, 2 * N - 1), bool)
                for rel, args in rels:
                    fn = defs.fn(rel)
                    if args == [xa, xb]:
                        t = self.table(rel, fn, ("X", "Y"), va, vb)
                    else:  # R(xb, xa): table of (vb at origin, va at d), read at -d
                        t = self.table(rel, fn, ("X", "Y"), vb, va)[::-1, ::-1]
                    ok_table &= t
                lo = np.searchsorted(sb, sa, "left")
                hi = np.searchsorted(sb, sa, "right")
                cnt = hi - lo
                ia = np.repeat(np.arange(len(sa)), cnt)
                ib = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt) + np.repeat(lo, cnt)
                hit = ok_table[yb[ib] - ya[ia] + N - 1, xxb[ib] - xxa[ia] + N - 1]
                out[sa[ia[hit]]] = True
        return out

    def chain(self, c, bitmaps, cache):
        defs = self.defs
        kinds = list(c.entry["of"])
        full = (1 << len(kinds)) - 1
        each = bool(c.entry.get("each", False))
        fn = defs.fn(c.entry["chain"])
        # element geometries, and per geometry the kind mask of the instance at each anchor
        geos = {}
        for k, obj in enumerate(kinds):
            for v, a in self.anchors_of(obj, bitmaps, cache):
                g = geos.setdefault(v.geometry, [v, np.zeros(a.shape, np.int16)])
                g[1] |= a.astype(np.int16) << k
        keys = list(geos)
        S, N = bitmaps.shape[0], defs.size
        states = {g: {} for g in keys}  # geometry -> {kind set: anchors where a chain can end}
        for g in keys:
            mask = geos[g][1]
            for m in np.unique(mask[mask > 0]):
                states[g][int(m)] = mask == m
        offsets = {}
        for g1 in keys:
            for g2 in keys:
                t = self.table(c.entry["chain"], fn, ("X", "Y"), geos[g1][0], geos[g2][0])
                d = np.argwhere(t) - (N - 1)
                if len(d) > 256:
                    raise DefinitionsError(f"{defs.source} [concept.{c.family}]: chain relation {c.entry['chain']} "
                                           f"holds at {len(d)} offsets; a chain needs a relation of nearby objects")
                offsets[g1, g2] = [tuple(x) for x in d.tolist()]
        for _ in range(int(c.n) - 1):
            new = {g: {} for g in keys}
            for g2 in keys:
                mask2 = geos[g2][1]
                reach = {}
                for g1 in keys:
                    for s, a in states[g1].items():
                        if not a.any():
                            continue
                        r = reach.setdefault(s, np.zeros((S, N, N), bool))
                        for dy, dx in offsets[g1, g2]:
                            r |= _shift(a, dy, dx)
                for s, r in reach.items():
                    for m in np.unique(mask2[mask2 > 0]):
                        hit = r & (mask2 == m)
                        key = s | int(m)
                        if key in new[g2]:
                            new[g2][key] |= hit
                        else:
                            new[g2][key] = hit
            states = new
        out = np.zeros(S, bool)
        for g in keys:
            for s, a in states[g].items():
                if not each or s == full:
                    out |= a.reshape(S, -1).any(axis=1)
        return out

    def boxworld(self, c, bitmaps, cache):
        if c.entry["boxworld"] not in ("solution", "distractor"):
            raise DefinitionsError(f"{self.defs.source} [concept.{c.family}] boxworld: expected solution or "
                                   "distractor")
        if ("boxworld",) not in cache:  # every Box-World concept reads the same walks of a scene
            cache[("boxworld",)] = self._boxworld_all(bitmaps)
        sol, dis = cache[("boxworld",)]
        want = sol if c.entry["boxworld"] == "solution" else dis
        return np.array([c.n in w for w in want], bool)

    def _boxworld_all(self, bitmaps):
        defs = self.defs
        bw = defs.boxworld
        piece = bw["piece"]
        (v,) = defs.variants(piece)
        gem_mask = defs.color_mask(bw["gem"])
        S, C, N, _ = bitmaps.shape
        per_color = []
        for col in range(C):
            if not v.allowed[:, col].all():
                continue
            allowed = np.zeros_like(v.allowed)
            allowed[:, col] = True
            a = anchors(Variant(v.object, v.offsets, allowed, v.groups), bitmaps)
            per_color.append((col, a))
        locks_fn = compile_expr(bw["locks"], defs, f"{defs.source} [boxworld] locks")
        opens_fn = compile_expr(bw["opens"], defs, f"{defs.source} [boxworld] opens")
        locks_t = self.table("bw-locks", locks_fn, ("O", "L"), v, v)
        opens_t = {(ca, cb): offset_table(defs, opens_fn, ("K", "L"), v, v, (ca, cb))
                   for ca, _ in per_color for cb, _ in per_color}
        pieces = [[] for _ in range(S)]
        for col, a in per_color:
            s, y, x = np.nonzero(a)
            for k in range(len(s)):
                pieces[s[k]].append((int(y[k]), int(x[k]), col))
        max_n = max(int(e.get("lengths", [1, 1])[1]) for e in defs.concepts.values() if "boxworld" in e)
        sol, dis = [], []
        for s in range(S):
            ps = pieces[s]
            m = len(ps)
            if m < 3:
                sol.append(set())
                dis.append(set())
                continue
            is_gem = [bool(gem_mask[p[2]]) for p in ps]
            locks, opens = set(), set()
            for i, (yi, xi, ci) in enumerate(ps):
                for j, (yj, xj, cj) in enumerate(ps):
                    if i == j:
                        continue
                    d = (yj - yi + N - 1, xj - xi + N - 1)
                    if locks_t[d]:
                        locks.add((j, i))  # O = i at the origin, L = j
                    if opens_t[ci, cj][d]:
                        opens.add((i, j))
            a, b = boxworld_lengths(m, is_gem, locks, opens, max_n)
            sol.append(a)
            dis.append(b)
        return sol, dis


def evaluate_concepts(defs: Definitions, concepts, grids: np.ndarray, chunk: int = CHUNK) -> np.ndarray:
    """bool (n_concepts, S): which scenes satisfy which concepts.

    defs: the definitions; concepts: :class:`ConceptDef` list (or names); grids: int8
    (S, N, N) with N = ``defs.size``.  Scenes are processed ``chunk`` at a time."""
    concepts = [defs.concept(c) if isinstance(c, str) else c for c in concepts]
    grids = np.asarray(grids)
    if grids.ndim != 3:
        raise DefinitionsError(f"grids: expected a stack of grids (S, {defs.size}, {defs.size}), got shape "
                               f"{grids.shape}")
    grids = check_grids(defs, grids)  # the interpreter's rule too
    ex = _Executor(defs)
    out = np.zeros((len(concepts), len(grids)), bool)
    for lo in range(0, len(grids), chunk):
        bm = grid_bitmaps(grids[lo:lo + chunk], defs.n_colors)
        cache = {}
        for i, c in enumerate(concepts):
            out[i, lo:lo + chunk] = ex.run(c, bm, cache)
    return out
