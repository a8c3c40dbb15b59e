"""The slow ConceptWorld interpreter: the definitions read point by point.

The executable specification the fast executor (:mod:`~bayes_concepts.conceptworld.execute`)
is tested against.  Nothing is compiled to offsets or bitmaps: a shape's instances are
found by binding its parts one at a time to the scene's points (or to instances of the
part's shape) and checking every conjunct of its ``where`` clause -- calls of shapes
expanded into their own conjuncts -- as soon as its variables are bound; objects,
relations and colour predicates are evaluated by their definitions
(:func:`~bayes_concepts.conceptworld.definitions.compile_expr`) on the points.

:func:`interpret` answers one concept on one scene.
"""
from __future__ import annotations

import ast
from itertools import product

import numpy as np

from ...scenes.grid import grid_points
from .boxworld import boxworld_lengths
from .definitions import ConceptDef, Definitions, DefinitionsError, check_grids, compile_expr, points_of

__all__ = ["interpret", "Interpreter"]


class _Rename(ast.NodeTransformer):
    """Rename variables (not called names) of an expression."""

    def __init__(self, names):
        self.names = names

    def visit_Call(self, node):
        node.args = [self.visit(a) for a in node.args]
        return node

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(self.names.get(node.id, node.id), node.ctx), node)


def _key(obj) -> frozenset:
    return frozenset((int(p[0]), int(p[1])) for p in points_of(obj))


class Interpreter:
    """The definitions of ``defs`` evaluated on one scene (int8 (N, N))."""

    def __init__(self, defs: Definitions, grid: np.ndarray):
        self.defs = defs
        self.points = grid_points(grid)
        self._instances = {}
        self._conj = {}

    # ------------------------------------------------------------------- objects
    def conjuncts(self, name: str) -> list:
        """[(compiled conjunct, its variables)] of shape ``name``'s where clause, with calls
        of shapes on parts expanded into the callee's conjuncts."""
        if name in self._conj:
            return self._conj[name]
        defs = self.defs
        e = defs.objects[name]
        out = []

        def expand(text, rename, where):
            tree = ast.parse(" ".join(text.split()), mode="eval").body
            terms = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And) else [tree]
            for t in terms:
                t = _Rename(rename).visit(t)
                if (isinstance(t, ast.Call) and isinstance(t.func, ast.Name) and defs.kind_of(t.func.id) == "object"
                        and "where" in defs.objects[t.func.id] and len(t.args) > 1
                        and all(isinstance(a, ast.Name) for a in t.args)):
                    callee = defs.objects[t.func.id]
                    expand(callee["where"], {p: a.id for (p, _), a in zip(callee["parts"], t.args)},
                           f"{defs.source} [object.{t.func.id}] where")
                    continue
                names = {n.id for n in ast.walk(t) if isinstance(n, ast.Name)} - {
                    n.func.id for n in ast.walk(t) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
                out.append((compile_expr(ast.unparse(t), defs, where, {p: ty for p, ty in e["parts"] if ty}), names))

        expand(e["where"], {}, f"{defs.source} [object.{name}] where")
        self._conj[name] = out
        return out

    def instances(self, name: str) -> list:
        """Every instance of object ``name`` in the scene: tuples of parts (points, or
        instances of the part's shape), one per point set."""
        if name in self._instances:
            return self._instances[name]
        defs = self.defs
        e = defs.objects[name]
        found = {}
        if "is" in e:
            for base, _ in defs.is_alternatives(name):
                for inst in self.instances(base):
                    if defs.object_holds(name, inst):
                        found.setdefault(_key(inst), inst)
        else:
            parts = e["parts"]
            conj = self.conjuncts(name)
            order = [p for p, _ in parts]
            domains = [self.points if t is None else self.instances(t) for _, t in parts]
            checks = []  # conjuncts to test once part k is bound
            for k in range(len(order)):
                bound = set(order[:k + 1])
                checks.append([f for f, names in conj if names <= bound and not names <= set(order[:k])])

            def bind(k, env, used):
                if k == len(order):
                    inst = tuple(env[p] for p in order)
                    found.setdefault(_key(inst), inst)
                    return
                for v in domains[k]:
                    pts = _key(v)
                    if pts & used:
                        continue  # the points of an object are distinct
                    env[order[k]] = v
                    if all(bool(f(env)) for f in checks[k]):
                        bind(k + 1, env, used | pts)
                    del env[order[k]]

            bind(0, {}, frozenset())
        self._instances[name] = list(found.values())
        return self._instances[name]

    # ------------------------------------------------------------------ concepts
    def holds(self, c: ConceptDef) -> bool:
        if c.form == "exists":
            return self.exists(c)
        if c.form == "chain":
            return self.chain(c)
        if c.form == "any":
            return any(self.holds(self.defs.concept(f"{n} {c.n}" if c.n is not None else n)) for n in c.entry["any"])
        return self.boxworld(c)

    def exists(self, c: ConceptDef) -> bool:
        defs = self.defs
        text = c.entry["exists"]
        f = compile_expr(text, defs, f"{defs.source} [concept.{c.family}] exists")
        tree = ast.parse(" ".join(text.split()), mode="eval")
        gen = {}
        for n in ast.walk(tree):
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and defs.kind_of(n.func.id) == "object"
                    and len(n.args) == 1 and isinstance(n.args[0], ast.Name)):
                gen.setdefault(n.args[0].id, n.func.id)
        names = sorted(gen)
        for combo in product(*(self.instances(gen[v]) for v in names)):
            if bool(f(dict(zip(names, combo)))):
                return True
        return False

    def chain(self, c: ConceptDef) -> bool:
        defs = self.defs
        kinds = c.entry["of"]
        rel = defs.fn(c.entry["chain"])
        objs = {}
        for k, o in enumerate(kinds):
            for inst in self.instances(o):
                key = _key(inst)
                if key not in objs:
                    objs[key] = [inst, 0]
                objs[key][1] |= 1 << k
        items = list(objs.values())
        full = (1 << len(kinds)) - 1
        each = bool(c.entry.get("each", False))
        nxt = {i: [j for j, (b, _) in enumerate(items) if bool(rel({"X": items[i][0], "Y": b}))]
               for i in range(len(items))}

        def extend(i, left, seen):
            if left == 0:
                return not each or seen == full
            return any(extend(j, left - 1, seen | items[j][1]) for j in nxt[i])

        return any(extend(i, int(c.n) - 1, m) for i, (_, m) in enumerate(items))

    def boxworld(self, c: ConceptDef) -> bool:
        defs = self.defs
        bw = defs.boxworld
        if c.entry["boxworld"] not in ("solution", "distractor"):
            raise DefinitionsError(f"{defs.source} [concept.{c.family}] boxworld: expected solution or distractor")
        pieces = self.instances(bw["piece"])
        gem = defs.fn(bw["gem"])
        locks_fn = compile_expr(bw["locks"], defs, f"{defs.source} [boxworld] locks")
        opens_fn = compile_expr(bw["opens"], defs, f"{defs.source} [boxworld] opens")
        is_gem = [all(bool(gem({"p": p})) for p in points_of(x)) for x in pieces]
        locks = {(j, i) for i, o in enumerate(pieces) for j, lk in enumerate(pieces)
                 if i != j and bool(locks_fn({"O": o, "L": lk}))}
        opens = {(i, j) for i, k in enumerate(pieces) for j, lk in enumerate(pieces)
                 if i != j and bool(opens_fn({"K": k, "L": lk}))}
        max_n = max(int(e.get("lengths", [1, 1])[1]) for e in defs.concepts.values() if "boxworld" in e)
        sol, dis = boxworld_lengths(len(pieces), is_gem, locks, opens, max_n)
        return c.n in (sol if c.entry["boxworld"] == "solution" else dis)


def interpret(defs: Definitions, concept, grid: np.ndarray) -> bool:
    """Whether scene ``grid`` (int8 (N, N)) satisfies ``concept`` (a name or a
    :class:`ConceptDef`), by the definitions read point by point."""
    c = defs.concept(concept) if isinstance(concept, str) else concept
    grid = check_grids(defs, grid, "grid")  # the executor's rule: the definitions' size and palette
    if grid.ndim != 2:
        raise DefinitionsError(f"grid: expected one grid ({defs.size}, {defs.size}), got shape {grid.shape}")
    return bool(Interpreter(defs, grid).holds(c))
