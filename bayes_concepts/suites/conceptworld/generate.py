"""ConceptWorld's generator: scenes of a concept, placed breadth-first from its definition.

As the seed's generator does, a concept's scene graph is walked breadth-first from the
first argument of its relations: the first object is drawn (one of its compiled patterns,
a colour per same-colour group among the allowed ones) at a random place; every relation
from a placed object to an unplaced one then places the other object at an offset where
the relation holds (read from the relation's offset table, so it holds by its
definition), inside the grid, on empty cells and touching no other object but its
partner.  A chain places its n elements one after the other this way (with ``each``,
the kinds are drawn so that every kind occurs); ``any`` draws one of its concepts;
Box-World places a free key and n lock pairs [locked object][lock], apart from each
other, coloured so that the key opens the first lock and each locked key the next
(a distractor recolours one key with a colour no lock has).  A dead end is retried.

Free *noise points* are added last: isolated points (no neighbour, diagonals included)
of the scene colours, which no shape of two or more points can use.

:func:`sample_scene` returns the grid and the mask of the concept's own points;
:func:`break_scene` removes one of those points (a distractor scene that must not satisfy
the concept, which the tests check with the interpreter).
"""
from __future__ import annotations

import ast

import numpy as np

from ...errors import BayesConceptsError
from ...scenes.grid import EMPTY, add_noise_points
from .definitions import ConceptDef, Definitions, Variant, compile_expr
from .execute import offset_table

__all__ = ["sample_scene", "sample_scenes", "break_scene", "GenerationError"]


class GenerationError(BayesConceptsError):
    """A concept the generator could not place on the grid (after its retries)."""


class _Dead(Exception):
    pass


class _Generator:
    def __init__(self, defs: Definitions):
        self.defs = defs
        self.tables = {}

    def table(self, key, fn, names, va, vb, colors=None):
        k = (key, va.geometry, vb.geometry, colors)
        if k not in self.tables:
            self.tables[k] = offset_table(self.defs, fn, names, va, vb, colors)
        return self.tables[k]

    # --------------------------------------------------------------- placing
    def colours(self, v: Variant, rng) -> np.ndarray:
        """A colour per point: one per same-colour group, among the allowed ones (scene
        colours first)."""
        cols = np.empty(len(v.offsets), np.int64)
        scene = np.zeros(self.defs.n_colors, bool)
        scene[list(self.defs.scene_colors)] = True
        for g in v.groups:
            ok = v.allowed[list(g)].all(axis=0)
            pick = np.flatnonzero(ok & scene) if (ok & scene).any() else np.flatnonzero(ok)
            cols[list(g)] = int(rng.choice(pick))
        return cols

    def fits(self, grid, owner, v, y, x, partner):
        N = grid.shape[0]
        if y < 0 or x < 0 or y + v.height > N or x + v.width > N:
            return False
        for oy, ox in v.offsets:
            yy, xx = y + oy, x + ox
            if grid[yy, xx] != EMPTY:
                return False
            near = owner[max(yy - 1, 0):yy + 2, max(xx - 1, 0):xx + 2]
            if ((near >= 0) & (near != partner)).any():
                return False
        return True

    def put(self, grid, owner, k, v, y, x, cols):
        for (oy, ox), c in zip(v.offsets, cols):
            grid[y + oy, x + ox] = c
            owner[y + oy, x + ox] = k

    def place_free(self, grid, owner, k, v, cols, rng, margin=0):
        N = grid.shape[0]
        for _ in range(200):
            y = int(rng.integers(0, N - v.height + 1))
            x = int(rng.integers(0, N - v.width + 1))
            if self.fits(grid, owner, v, y, x, -2) and (margin == 0 or self.clear(owner, v, y, x, margin)):
                self.put(grid, owner, k, v, y, x, cols)
                return y, x
        raise _Dead

    @staticmethod
    def clear(owner, v, y, x, margin):
        y0, x0 = max(y - margin, 0), max(x - margin, 0)
        return not (owner[y0:y + v.height + margin, x0:x + v.width + margin] >= 0).any()

    def place_related(self, grid, owner, k, v, cols, table, at, partner, rng):
        N = grid.shape[0]
        d = np.argwhere(table) - (N - 1)
        rng.shuffle(d)
        for dy, dx in d:
            y, x = at[0] + int(dy), at[1] + int(dx)
            if self.fits(grid, owner, v, y, x, partner):
                self.put(grid, owner, k, v, y, x, cols)
                return y, x
        raise _Dead

    # --------------------------------------------------------------- forms
    def scene(self, c: ConceptDef, rng):
        N = self.defs.size
        grid = np.full((N, N), EMPTY, np.int8)
        owner = np.full((N, N), -1, np.int64)
        getattr(self, c.form)(c, grid, owner, rng)
        return grid, owner >= 0

    def any(self, c, grid, owner, rng):
        names = c.entry["any"]
        name = names[int(rng.integers(len(names)))]
        sub = self.defs.concept(f"{name} {c.n}" if c.n is not None else name)
        getattr(self, sub.form)(sub, grid, owner, rng)

    def exists(self, c, grid, owner, rng):
        defs = self.defs
        tree = ast.parse(" ".join(c.entry["exists"].split()), mode="eval").body
        terms = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And) else [tree]
        objs, rels = {}, []
        for t in terms:
            args = [a.id for a in t.args]
            if defs.kind_of(t.func.id) == "object" and len(args) == 1:
                objs.setdefault(args[0], t.func.id)
            else:
                rels.append((t.func.id, args))
        order = [rels[0][1][0]] if rels else sorted(objs)[:1]
        for r, args in rels:  # breadth-first from the first argument
            for a in args:
                if a not in order:
                    order.append(a)
        order += [v for v in sorted(objs) if v not in order]
        placed = {}
        for k, var in enumerate(order):
            vs = defs.variants(objs[var])
            v = vs[int(rng.integers(len(vs)))]
            cols = self.colours(v, rng)
            link = next(((r, a) for r, a in rels if var in a and any(o in placed for o in a if o != var)), None)
            if link is None:
                at = self.place_free(grid, owner, k, v, cols, rng)
            else:
                r, (a0, a1) = link
                other = a0 if a1 == var else a1
                ov, oat, ok_ = placed[other]
                fn = defs.fn(r)
                t = self.table(r, fn, ("X", "Y"), ov, v) if a0 == other else \
                    self.table(r, fn, ("X", "Y"), v, ov)[::-1, ::-1]
                for r2, (b0, b1) in rels:  # every relation to placed objects must hold
                    if (r2, (b0, b1)) == link or var not in (b0, b1):
                        continue
                    o2 = b0 if b1 == var else b1
                    if o2 in placed and o2 == other:
                        t2 = self.table(r2, defs.fn(r2), ("X", "Y"), ov, v) if b0 == other else \
                            self.table(r2, defs.fn(r2), ("X", "Y"), v, ov)[::-1, ::-1]
                        t = t & t2
                at = self.place_related(grid, owner, k, v, cols, t, oat, ok_, rng)
            placed[var] = (v, at, k)

    def chain(self, c, grid, owner, rng):
        defs = self.defs
        kinds = c.entry["of"]
        n = int(c.n)
        for _ in range(100):
            seq = [kinds[int(i)] for i in rng.integers(len(kinds), size=n)]
            if not c.entry.get("each") or set(seq) == set(kinds):
                break
        else:
            raise GenerationError(f"concept {c.name}: cannot draw {n} elements covering every kind of {kinds}")
        fn = defs.fn(c.entry["chain"])
        prev = None
        for k, obj in enumerate(seq):
            vs = defs.variants(obj)
            v = vs[int(rng.integers(len(vs)))]
            cols = self.colours(v, rng)
            if prev is None:
                at = self.place_free(grid, owner, k, v, cols, rng)
            else:
                pv, pat = prev
                at = self.place_related(grid, owner, k, v, cols, self.table(c.entry["chain"], fn, ("X", "Y"), pv, v),
                                        pat, k - 1, rng)
            prev = (v, at)

    def boxworld(self, c, grid, owner, rng):
        defs = self.defs
        bw = defs.boxworld
        (v,) = defs.variants(bw["piece"])
        gem = np.flatnonzero(defs.color_mask(bw["gem"]) & v.allowed.all(axis=0))
        others = np.flatnonzero(~defs.color_mask(bw["gem"]) & v.allowed.all(axis=0))
        n = int(c.n)
        broken = c.entry["boxworld"] == "distractor"
        if len(others) < n + broken:
            raise GenerationError(f"concept {c.name}: needs {n + broken} colours besides the gem's, the grid has "
                                  f"{len(others)}")
        cols = [int(x) for x in rng.permutation(others)[:n + broken]]
        lock_cols = cols[:n]
        key_cols = [lock_cols[0]] + [lock_cols[i] for i in range(1, n)]  # free key, then O_1..O_{n-1}
        if broken:
            key_cols[int(rng.integers(n))] = cols[n]
        locks_fn = compile_expr(bw["locks"], defs, f"{defs.source} [boxworld] locks")
        table = self.table("bw-locks", locks_fn, ("O", "L"), v, v)
        k = 0
        self.place_free(grid, owner, k, v, np.full(4, key_cols[0]), rng, margin=1)
        for i in range(n):
            k += 1
            o_col = key_cols[i + 1] if i + 1 < n else int(rng.choice(gem))
            o_at = self.place_free(grid, owner, k, v, np.full(4, o_col), rng, margin=2)
            k += 1
            self.place_related(grid, owner, k, v, np.full(4, lock_cols[i]), table, o_at, k - 1, rng)


def sample_scene(defs: Definitions, concept, rng, noise=(0, 3), tries: int = 50) -> tuple:
    """(grid int8 (N, N), mask bool (N, N) of the concept's own points) of one scene of
    ``concept`` (a name or :class:`ConceptDef`), with ``noise`` = (lo, hi) isolated noise
    points added; a concept that cannot be placed in ``tries`` attempts is a
    :class:`GenerationError`."""
    c = defs.concept(concept) if isinstance(concept, str) else concept
    gen = _generator(defs)
    for _ in range(tries):
        try:
            grid, mask = gen.scene(c, rng)
        except _Dead:
            continue
        add_noise_points(grid, int(rng.integers(noise[0], noise[1] + 1)), len(defs.scene_colors), rng)
        grid[(grid >= 0) & ~mask] = np.asarray(defs.scene_colors, np.int8)[grid[(grid >= 0) & ~mask]]
        return grid, mask
    raise GenerationError(f"concept {c.name}: no placement found in {tries} attempts on a {defs.size} x {defs.size} "
                          "grid")


_GENERATORS = {}


def _generator(defs) -> _Generator:
    g = _GENERATORS.get(id(defs))
    if g is None or g.defs is not defs:
        g = _GENERATORS[id(defs)] = _Generator(defs)
    return g


def sample_scenes(defs: Definitions, concept, n: int, seed: int = 0, noise=(0, 3)) -> tuple:
    """(grids int8 (n, N, N), masks bool (n, N, N)) of ``n`` scenes of ``concept``, seeded."""
    rng = np.random.default_rng(seed)
    out = [sample_scene(defs, concept, rng, noise) for _ in range(int(n))]
    N = defs.size
    if not out:
        return np.zeros((0, N, N), np.int8), np.zeros((0, N, N), bool)
    return np.stack([g for g, _ in out]), np.stack([m for _, m in out])


def break_scene(grid: np.ndarray, mask: np.ndarray, rng) -> np.ndarray:
    """A copy of ``grid`` with one random point of ``mask`` (the concept's own points) removed."""
    out = grid.copy()
    cells = np.flatnonzero(mask)
    cell = int(rng.choice(cells))
    out.flat[cell] = EMPTY
    return out
