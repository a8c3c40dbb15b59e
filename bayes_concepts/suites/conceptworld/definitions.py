"""ConceptWorld's definitions file: read it, interpret its expressions, compile its shapes.

The file (``hypotheses/conceptworld/concepts.toml``; see its comments for the grammar)
has five tables of definitions, each built from the ones before:

=============  ======================================================================
``point``      binary relations on points, ``r(a, b)``: "b is r of a"
``color``      unary colour predicates on a point ``p`` (on an object: every point)
``relation``   binary relations on objects ``R(X, Y)``, lifted from point relations with
               ``all(...)`` / ``any(...)`` over the objects' points
``object``     shapes (``parts`` + ``where``: unit point relations and colours) and
               objects made of them (``is``: a shape and colour predicates, or
               alternatives)
``concept``    scene concepts: ``exists``, ``chain`` (recursive sequences), ``any``,
               ``boxworld``; families with ``lengths`` are instantiated per n
=============  ======================================================================

Expressions use Python's expression syntax; :func:`compile_expr` turns them into small
closures over an environment, never ``eval``.  A point is a tuple ``(x, y, colour
index)`` whose entries may be numpy arrays (the compiler of shapes and relation offsets
evaluates a definition on many placements at once); an object is a tuple of points or of
objects (a composite shape's parts); :func:`points_of` flattens it.

:func:`shape_variants` compiles an object into :class:`Variant` patterns -- fixed point
offsets, per-point allowed colours and same-colour groups -- by probing each point
relation of its ``where`` clause for the unit offset (and colour test) it stands for.

:meth:`Definitions.graph` unfolds a concept into its definition graph: its leaf
definitions (the atoms) and its parent -> child uses (the compounds), which the
divergence measures and the compound and atom oracles read.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from ...resources import data_file
from ...text_files import read_toml
from .expressions import DefinitionsError, _is_point, compile_expr, points_of

__all__ = ["DefinitionsError", "Definitions", "check_grids", "ConceptDef", "Variant", "load_definitions", "compile_expr",
           "points_of", "DEFAULT_FILE", "EXPERIMENTS_FILE"]

DEFAULT_FILE = "conceptworld/concepts.toml"
EXPERIMENTS_FILE = "conceptworld/experiments.toml"
_TABLES = ("point", "color", "relation")


# ============================================================================ the file
@dataclass
class ConceptDef:
    """One scene concept of the file, instantiated: ``name`` (``"red_seq 3"`` for a family),
    ``family`` (the entry), ``n`` (the family's n, or None), ``form`` (``exists``, ``chain``,
    ``any``, ``boxworld``) and the entry's fields."""

    name: str
    family: str
    n: int | None
    form: str
    entry: dict

    @property
    def depth(self) -> int:
        """Composition depth: n for a family (links of a chain, locks of a Box-World path),
        else the number of objects the concept relates."""
        if self.n is not None:
            return int(self.n)
        return len(_free_objects(self.entry.get("exists", "X")))


def _free_objects(text: str) -> list:
    names = {n.id for n in ast.walk(ast.parse(" ".join(text.split()), mode="eval")) if isinstance(n, ast.Name)}
    calls = {n.func.id for n in ast.walk(ast.parse(" ".join(text.split()), mode="eval"))
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return sorted(names - calls)


@dataclass(frozen=True)
class Variant:
    """One compiled pattern of an object.

    object: the object's name (the alternative's, for objects with alternatives).
    offsets: int (k, 2) ``(dy, dx)`` of the k points from the pattern's top-left corner.
    allowed: bool (k, C): colours each point may have.
    groups: tuple of int tuples: points that must share one colour (every point is in one).
    """

    object: str
    offsets: np.ndarray
    allowed: np.ndarray
    groups: tuple

    @property
    def height(self) -> int:
        return int(self.offsets[:, 0].max()) + 1

    @property
    def width(self) -> int:
        return int(self.offsets[:, 1].max()) + 1

    @property
    def geometry(self) -> tuple:
        return tuple(sorted(map(tuple, self.offsets.tolist())))


@dataclass
class Definitions:
    """A read definitions file.  ``colors``: the grid's palette; ``scene_colors``: colour
    indices of free points and of objects whose colour is not fixed; ``tables``: the raw
    ``point``, ``color``, ``relation`` tables; ``objects``: name -> entry (with
    ``point_parts`` / ``shape_parts`` for shapes); ``concepts``: name -> entry;
    ``boxworld``: its table."""

    source: str
    size: int
    colors: tuple
    scene_colors: tuple
    tables: dict
    objects: dict
    concepts: dict
    boxworld: dict
    _fns: dict = field(default_factory=dict, repr=False)
    _variants: dict = field(default_factory=dict, repr=False)

    @property
    def n_colors(self) -> int:
        return len(self.colors)

    def kind_of(self, name: str) -> str | None:
        for t in _TABLES:
            if name in self.tables[t]:
                return t
        return "object" if name in self.objects else None

    def fn(self, name: str):
        """The compiled body of a ``point``, ``color`` or ``relation`` definition."""
        f = self._fns.get(name)
        if f is None:
            kind = self.kind_of(name)
            f = compile_expr(self.tables[kind][name], self, f"{self.source} [{kind}] {name}")
            self._fns[name] = f
        return f

    # ------------------------------------------------------------ objects (slow form)
    def object_holds(self, name: str, value) -> bool:
        """Whether ``value`` (an object: tuple of parts) is a ``name`` object, by its definition."""
        entry = self.objects[name]
        if "is" in entry:
            return bool(self._is_fn(name)({"X": value}))
        parts = entry["parts"]
        if not isinstance(value, tuple) or _is_point(value) or len(value) != len(parts):
            return False
        env = {}
        for (pname, ptype), v in zip(parts, value):
            if ptype is None:
                if not _is_point(v):
                    return False
            elif _is_point(v) or not self.object_holds(ptype, v):
                return False
            env[pname] = v
        pts = points_of(value)
        if len({(int(p[0]), int(p[1])) for p in pts}) != len(pts):
            return False  # the points of an object are distinct
        return bool(self.where_fn(name)(env))

    def where_fn(self, name: str):
        key = ("where", name)
        if key not in self._fns:
            e = self.objects[name]
            self._fns[key] = compile_expr(e["where"], self, f"{self.source} [object.{name}] where",
                                          {p: t for p, t in e["parts"] if t is not None})
        return self._fns[key]

    def _is_fn(self, name: str):
        key = ("is", name)
        if key not in self._fns:
            self._fns[key] = compile_expr(self.objects[name]["is"], self, f"{self.source} [object.{name}] is")
        return self._fns[key]

    def is_alternatives(self, name: str) -> list:
        """An ``is`` object as alternatives: [(base object, [colour predicates])]; its
        expression must be an ``or`` of ``and``s of one object call and colour calls on X."""
        where = f"{self.source} [object.{name}] is"
        tree = ast.parse(" ".join(self.objects[name]["is"].split()), mode="eval").body
        alts = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.Or) else [tree]
        out = []
        for alt in alts:
            terms = alt.values if isinstance(alt, ast.BoolOp) and isinstance(alt.op, ast.And) else [alt]
            base, colors = None, []
            for t in terms:
                if not (isinstance(t, ast.Call) and isinstance(t.func, ast.Name) and len(t.args) == 1
                        and isinstance(t.args[0], ast.Name) and t.args[0].id == "X"):
                    raise DefinitionsError(f"{where}: write alternatives of 'object(X) and colour(X) ...' "
                                           f"({ast.unparse(t)!r} is not)")
                kind = self.kind_of(t.func.id)
                if kind == "object" and base is None:
                    base = t.func.id
                elif kind == "color":
                    colors.append(t.func.id)
                else:
                    raise DefinitionsError(f"{where}: {ast.unparse(t)!r}: each alternative names one object and "
                                           "colour predicates")
            if base is None:
                raise DefinitionsError(f"{where}: an alternative names no object")
            out.append((base, colors))
        return out

    # ---------------------------------------------------------- objects (compiled form)
    def variants(self, name: str) -> list:
        """The :class:`Variant` patterns of object ``name`` (compiled once)."""
        if name not in self._variants:
            if name not in self.objects:
                raise DefinitionsError(f"{self.source}: object {name!r} is not defined")
            self._variants[name] = _compile_object(self, name)
        return self._variants[name]

    @cached_property
    def point_relation_forms(self) -> dict:
        """rel -> its probed form (filled by :meth:`point_form`)."""
        return {}

    def color_mask(self, pred: str) -> np.ndarray:
        """bool (C,): colours a point may have under colour predicate ``pred``."""
        f = self.fn(pred)
        return np.array([bool(f({"p": (0, 0, c)})) for c in range(self.n_colors)])

    def point_form(self, rel: str) -> tuple:
        """``((dy, dx), same_colour)`` of a point relation that is a unit offset (with or
        without "same colour"), probed on a 9 x 9 window at two places; else a
        :class:`DefinitionsError`."""
        if rel in self.point_relation_forms:
            return self.point_relation_forms[rel]
        f = self.fn(rel)
        C = self.n_colors
        dy, dx, ca, cb = np.meshgrid(np.arange(-4, 5), np.arange(-4, 5), np.arange(C), np.arange(C), indexing="ij")
        tables = []
        for ox, oy in ((0, 0), (7, 11)):
            t = f({"a": (ox, oy, ca), "b": (ox + dx, oy + dy, cb)})
            tables.append(np.broadcast_to(np.asarray(t, bool), dy.shape))
        t = tables[0]
        hits = np.argwhere(t.any(axis=(2, 3)))
        eye = np.eye(C, dtype=bool)
        if not np.array_equal(tables[0], tables[1]) or len(hits) != 1:
            raise DefinitionsError(f"{self.source} [point] {rel}: used in a shape, but it is not a unit offset "
                                   "between two points (it must hold for exactly one offset)")
        k = tuple(hits[0])
        cell = t[k]
        if cell.all():
            same = False
        elif np.array_equal(cell, eye):
            same = True
        else:
            raise DefinitionsError(f"{self.source} [point] {rel}: used in a shape, but its colour test is neither "
                                   "none nor 'same colour'")
        form = ((int(k[0]) - 4, int(k[1]) - 4), same)
        self.point_relation_forms[rel] = form
        return form

    # ----------------------------------------------------------------------- concepts
    def instances(self, max_depth: int) -> list:
        """Every concept of the file as a :class:`ConceptDef`, families instantiated for
        n = lo..min(hi, max_depth), in file order."""
        out = []
        for name, e in self.concepts.items():
            form = next(f for f in ("exists", "chain", "any", "boxworld") if f in e)
            if "lengths" in e:
                lo, hi = e["lengths"]
                for n in range(int(lo), min(int(hi), int(max_depth)) + 1):
                    out.append(ConceptDef(f"{name} {n}", name, n, form, e))
            else:
                out.append(ConceptDef(name, name, None, form, e))
        return out

    def concept(self, name: str) -> ConceptDef:
        """The concept ``name`` (``"red_seq 3"`` or ``"square"``)."""
        family, _, n = name.partition(" ")
        e = self.concepts.get(family)
        if e is None:
            raise DefinitionsError(f"{self.source}: no concept {family!r}")
        form = next(f for f in ("exists", "chain", "any", "boxworld") if f in e)
        if ("lengths" in e) != bool(n):
            raise DefinitionsError(f"concept {name!r}: " + ("give its n, e.g. " + repr(f"{family} 3") if "lengths" in e
                                                              else "takes no n"))
        return ConceptDef(name, family, int(n) if n else None, form, e)

    # ------------------------------------------------------------ definition graphs
    def graph(self, concept) -> tuple:
        """(atoms, compounds) of a concept's instantiated definition graph: two lists of str,
        with repeats (one entry per use), in the order the definitions are unfolded.

        ``concept``: a :class:`ConceptDef` or its name (``"red_seq 3"``).  The graph unfolds
        the concept's definition into the tree of the definitions it uses, each use of a
        definition unfolded anew (so the edges below a chain's element repeat once per
        element).  Its nodes are the names of the file's definitions (``point``, ``color``,
        ``relation`` and ``object`` entries) and, for a scene concept, its form (the concept's
        own name is never a node): ``exists``, ``chain``, ``any``, or
        ``boxworld_solution`` / ``boxworld_distractor``.  The *atoms* are its leaves: the
        definitions whose bodies use no other definition (in the packaged file the unit and
        half-plane point relations, ``same_color_point`` and the five colour predicates).
        The *compounds* are its edges, written ``parent(child)``, or ``parent(slot:child)``
        where the file gives the use a slot:

        * a relation or colour/point definition uses each definition its body calls;
        * an object given by ``is`` uses each object and colour predicate its expression
          names (alternatives included);
        * a shape declares its shape parts, ``square_of_squares(0:solid_square)`` (slot: the
          part's position in ``parts``), and uses each call of its ``where`` clause with the
          positions of the parts it is applied to as slot, ``square(0,1:east_point1)``,
          ``checkerboard_2x2(0:red)``, ``square_of_squares(0.1,1.0:east_point1)`` (``A.p2``:
          point 1 of part 0); a shape called on the caller's parts (``square(p1, p2, p3,
          p4)``) unfolds its ``where`` clause only, since its parts are the caller's;
        * ``exists`` uses each object and relation of its expression, and a relation there
          uses the object of each of its variables with the argument's position as slot,
          ``west(0:z_pent)``, ``west(1:f_pent)``;
        * a chain of n elements uses its relation n - 1 times, ``chain(link:east1)``, and for
          each of its n positions every kind of its ``of`` list, ``chain(of:red_square)``
          (``chain(each:red_square)`` when every kind must occur, ``each = true``);
        * ``any`` uses each concept it lists (instantiated with the same n) by that concept's
          form, ``any(chain)``;
        * a Box-World concept with n locks uses the [boxworld] table's entries by their
          field names: 2n + 1 pieces (a free key, n locks, n - 1 locked keys and the gem),
          ``boxworld_solution(piece:solid_square)``, one gem colour, n ``locks`` and n
          ``opens`` relations.

        So a longer family instance repeats its edges: ``red_seq 7`` has no edge type that
        ``red_seq 2`` lacks (only more of each), and a learner that recombines seen edges
        knows chains of any length once it has seen one of two elements."""
        c = self.concept(concept) if isinstance(concept, str) else concept
        atoms, compounds = [], []
        self._unfold_concept(c, atoms, compounds)
        return atoms, compounds

    def _unfold_concept(self, c: ConceptDef, atoms: list, compounds: list) -> str:
        """Unfold scene concept ``c`` into ``atoms``/``compounds``; returns its root node."""
        e = c.entry
        where = f"{self.source} [concept.{c.family}]"
        n = int(c.n) if c.n is not None else 1
        if c.form == "exists":
            terms = _calls(e["exists"], f"{where} exists")
            objs = {t.args[0].id: t.func.id for t in terms if self._kind(t.func.id, where) == "object"
                    and len(t.args) == 1 and isinstance(t.args[0], ast.Name)}
            for t in terms:
                self._use("exists", None, t.func.id, atoms, compounds, where)
                if self.kind_of(t.func.id) == "relation":
                    for k, a in enumerate(t.args):
                        if isinstance(a, ast.Name) and a.id in objs:
                            compounds.append(f"{t.func.id}({k}:{objs[a.id]})")
            return "exists"
        if c.form == "chain":
            for _ in range(n - 1):
                self._use("chain", "link", e["chain"], atoms, compounds, where)
            slot = "each" if e.get("each", False) else "of"
            for _ in range(n):
                for kind in e["of"]:
                    self._use("chain", slot, kind, atoms, compounds, where)
            return "chain"
        if c.form == "any":
            for name in e["any"]:
                sub = self.concept(f"{name} {c.n}" if c.n is not None else name)
                mark = len(compounds)
                root = self._unfold_concept(sub, atoms, compounds)
                compounds.insert(mark, f"any({root})")
            return "any"
        root = f"boxworld_{e['boxworld']}"
        bw = self.boxworld
        bw_where = f"{self.source} [boxworld]"
        for _ in range(2 * n + 1):
            self._use(root, "piece", bw["piece"], atoms, compounds, bw_where)
        self._use(root, "gem", bw["gem"], atoms, compounds, bw_where)
        for field_name in ("locks", "opens"):
            for t in _calls(bw[field_name], f"{bw_where} {field_name}"):
                for _ in range(n):
                    self._use(root, field_name, t.func.id, atoms, compounds, bw_where)
        return root

    def _kind(self, name: str, where: str) -> str:
        kind = self.kind_of(name)
        if kind is None:
            raise DefinitionsError(f"{where}: {name!r} is not defined")
        return kind

    def _use(self, parent: str, slot, child: str, atoms: list, compounds: list, where: str,
             bound: bool = False, path: tuple = ()) -> None:
        """Record the edge parent -> child (with ``slot``, or none) and unfold ``child``."""
        compounds.append(f"{parent}({child})" if slot is None else f"{parent}({slot}:{child})")
        self._unfold(child, atoms, compounds, where, bound, path)

    def _unfold(self, name: str, atoms: list, compounds: list, where: str, bound: bool = False,
                path: tuple = ()) -> None:
        """Unfold definition ``name``: its uses as edges, or itself as an atom when it uses
        none.  ``bound``: a shape called on its caller's parts (its parts are not declared
        again); ``path``: the definitions being unfolded above it (one that uses itself is a
        :class:`DefinitionsError`)."""
        kind = self._kind(name, where)
        if name in path:
            raise DefinitionsError(f"{where}: {name!r} uses itself ({' -> '.join(path + (name,))})")
        path = path + (name,)
        if kind != "object":
            calls = _calls(self.tables[kind][name], f"{self.source} [{kind}] {name}")
            if not calls:
                atoms.append(name)
            for t in calls:
                self._use(name, None, t.func.id, atoms, compounds, f"{self.source} [{kind}] {name}", path=path)
            return
        entry = self.objects[name]
        here = f"{self.source} [object.{name}]"
        if "is" in entry:
            for t in _calls(entry["is"], f"{here} is"):
                self._use(name, None, t.func.id, atoms, compounds, here, path=path)
            return
        parts = entry["parts"]
        index = {p: k for k, (p, _) in enumerate(parts)}
        if not bound:
            for k, (_, ptype) in enumerate(parts):
                if ptype is not None:
                    self._use(name, str(k), ptype, atoms, compounds, here, path=path)
        for t in _calls(entry["where"], f"{here} where"):
            slot = ",".join(self._part_slot(a, parts, index, here) for a in t.args) or None
            callee = t.func.id
            self._use(name, slot, callee, atoms, compounds, here,
                      bound=self._kind(callee, here) == "object" and "parts" in self.objects[callee], path=path)

    def _part_slot(self, arg, parts, index, where: str) -> str:
        """A shape's argument as its slot: ``"k"`` for part k, ``"k.j"`` for point j of part k."""
        if isinstance(arg, ast.Name) and arg.id in index:
            return str(index[arg.id])
        if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) and arg.value.id in index:
            ptype = parts[index[arg.value.id]][1]
            sub = [p for p, _ in self.objects[ptype]["parts"]] if ptype in self.objects else []
            if arg.attr in sub:
                return f"{index[arg.value.id]}.{sub.index(arg.attr)}"
        raise DefinitionsError(f"{where}: {ast.unparse(arg)!r} is not a part or a part's point")


def _calls(text: str, where: str) -> list:
    """The calls of definitions in expression ``text`` (``ast.Call`` nodes whose function is
    a name other than the quantifiers ``all``/``any``), in source order, one per occurrence."""
    try:
        tree = ast.parse(" ".join(str(text).split()), mode="eval").body
    except SyntaxError as exc:
        raise DefinitionsError(f"{where}: not an expression ({exc.msg})") from None
    out = []

    def visit(node):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in ("all", "any"):
            out.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)
    visit(tree)
    return out


def _compile_object(defs: Definitions, name: str) -> list:
    entry = defs.objects[name]
    if "is" in entry:
        out = []
        for base, colors in defs.is_alternatives(name):
            mask = np.ones(defs.n_colors, bool)
            for c in colors:
                mask &= defs.color_mask(c)
            for v in defs.variants(base):
                allowed = v.allowed & mask[None, :]
                if allowed.any(axis=1).all():
                    out.append(Variant(name, v.offsets, allowed, v.groups))
        return out
    # a shape: flatten its parts into points, gather constraints, place the points
    points, allowed, edges, same = [], [], [], []

    def add_shape(sname, prefix, bind):
        e = defs.objects[sname]
        if "is" in e:
            raise DefinitionsError(f"{defs.source} [object.{name}]: part {prefix or sname} is {sname}, an object with "
                                   "'is'; a shape's parts must be points or shapes")
        local = {}
        for pname, ptype in e["parts"]:
            full = bind.get(pname, f"{prefix}{pname}")
            if ptype is None:
                if full not in local.values() and full not in points:
                    points.append(full)
                    allowed.append(np.ones(defs.n_colors, bool))
                local[pname] = full
            else:
                local[pname] = full
                if not any(p.startswith(full + ".") for p in points):
                    add_shape(ptype, full + ".", {})
        where = f"{defs.source} [object.{sname}] where"
        for term in _conjuncts(e["where"], where):
            collect(term, local, {p: t for p, t in e["parts"] if t is not None}, where)

    def resolve(node, local, ptypes, where):
        if isinstance(node, ast.Name) and node.id in local:
            return local[node.id]
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ptypes:
            return f"{local[node.value.id]}.{node.attr}"
        raise DefinitionsError(f"{where}: {ast.unparse(node)!r} is not a part or a part's point")

    def members(ref):
        return [p for p in points if p == ref or p.startswith(ref + ".")]

    def collect(term, local, ptypes, where):
        if not (isinstance(term, ast.Call) and isinstance(term.func, ast.Name)):
            raise DefinitionsError(f"{where}: a shape's where clause is an 'and' of calls ({ast.unparse(term)!r})")
        fname = term.func.id
        kind = defs.kind_of(fname)
        refs = [resolve(a, local, ptypes, where) for a in term.args]
        if kind == "point":
            (dy, dx), sc = defs.point_form(fname)
            edges.append((refs[0], refs[1], dy, dx))
            if sc:
                same.append((refs[0], refs[1]))
        elif kind == "color":
            mask = defs.color_mask(fname)
            for p in members(refs[0]):
                allowed[points.index(p)] &= mask
        elif kind == "object":
            callee = defs.objects[fname]
            if "is" in callee or len(callee["parts"]) != len(refs):
                raise DefinitionsError(f"{where}: {ast.unparse(term)!r}: a shape called with its parts one by one")
            bind = {}
            for (pname, ptype), ref in zip(callee["parts"], refs):
                bind[pname] = ref
            sub_local = dict(bind)
            sub_where = f"{defs.source} [object.{fname}] where"
            for t in _conjuncts(callee["where"], sub_where):
                collect(t, sub_local, {p: t2 for p, t2 in callee["parts"] if t2 is not None}, sub_where)
        else:
            raise DefinitionsError(f"{where}: {fname!r} cannot be used in a shape (a point relation, a colour "
                                   "predicate or a shape)")

    add_shape(name, "", {})
    pos = {points[0]: (0, 0)}
    pending = list(edges)
    while pending:
        progressed = False
        for e in list(pending):
            a, b, dy, dx = e
            if a in pos and b not in pos:
                pos[b] = (pos[a][0] + dy, pos[a][1] + dx)
            elif b in pos and a not in pos:
                pos[a] = (pos[b][0] - dy, pos[b][1] - dx)
            elif a in pos and b in pos:
                if (pos[b][0] - pos[a][0], pos[b][1] - pos[a][1]) != (dy, dx):
                    raise DefinitionsError(f"{defs.source} [object.{name}]: its point relations contradict each "
                                           f"other at {a} and {b}")
            else:
                continue
            pending.remove(e)
            progressed = True
        if not progressed:
            break
    missing = [p for p in points if p not in pos]
    if missing:
        raise DefinitionsError(f"{defs.source} [object.{name}]: point {missing[0]} is not tied to the others by "
                               "unit point relations")
    offs = np.array([pos[p] for p in points], np.int64)
    if len({tuple(o) for o in offs.tolist()}) != len(points):
        raise DefinitionsError(f"{defs.source} [object.{name}]: two of its points fall on the same grid point")
    offs -= offs.min(axis=0)
    parent = list(range(len(points)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for a, b in same:
        parent[find(points.index(a))] = find(points.index(b))
    groups = {}
    for i in range(len(points)):
        groups.setdefault(find(i), []).append(i)
    allowed = np.array(allowed)
    if not allowed.any(axis=1).all():
        raise DefinitionsError(f"{defs.source} [object.{name}]: a point can have no colour")
    return [Variant(name, offs, allowed, tuple(tuple(g) for g in groups.values()))]


def _conjuncts(text: str, where: str) -> list:
    try:
        tree = ast.parse(" ".join(text.split()), mode="eval").body
    except SyntaxError as exc:
        raise DefinitionsError(f"{where}: not an expression ({exc.msg})") from None
    if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And):
        return list(tree.values)
    return [tree]


def load_definitions(path=None) -> Definitions:
    """Read a definitions file (default ``hypotheses/conceptworld/concepts.toml``); a bad
    entry is a :class:`DefinitionsError` naming the file and the entry."""
    path = Path(path) if path is not None else data_file(*DEFAULT_FILE.split("/"))
    raw = read_toml(path, DefinitionsError, "the definitions file")
    src = str(path)
    grid = raw.get("grid", {})
    colors = tuple(grid.get("colors", ("blue", "red", "green", "yellow", "white")))
    scene = tuple(grid.get("scene_colors", colors))
    bad = [c for c in scene if c not in colors]
    if bad:
        raise DefinitionsError(f"{src} [grid] scene_colors: {bad[0]!r} is not in colors")
    size = grid.get("size", 32)
    if not isinstance(size, int) or size < 4:
        raise DefinitionsError(f"{src} [grid] size: expected a whole number >= 4, got {size!r}")
    tables = {}
    seen = {}
    for t in _TABLES:
        tables[t] = dict(raw.get(t, {}))
        for k, v in tables[t].items():
            if not isinstance(v, str):
                raise DefinitionsError(f"{src} [{t}] {k}: expected an expression string")
            if k in seen:
                raise DefinitionsError(f"{src} [{t}] {k}: already defined in [{seen[k]}]")
            seen[k] = t
    objects = {}
    for k, e in raw.get("object", {}).items():
        where = f"{src} [object.{k}]"
        if k in seen:
            raise DefinitionsError(f"{where}: already defined in [{seen[k]}]")
        e = dict(e)
        if ("is" in e) == ("parts" in e):
            raise DefinitionsError(f"{where}: give either parts and where (a shape) or is (from other objects)")
        if "parts" in e:
            if "where" not in e:
                raise DefinitionsError(f"{where}: a shape needs a where clause")
            parts = []
            for p in e["parts"]:
                pname, _, ptype = (s.strip() for s in str(p).partition(":"))
                if ptype and ptype not in objects:
                    raise DefinitionsError(f"{where} parts: {ptype!r} is not an object defined above")
                parts.append((pname, ptype or None))
            e["parts"] = parts
            e["point_parts"] = [p for p, t in parts if t is None]
        objects[k] = e
        seen[k] = "object"
    concepts = {}
    for k, e in raw.get("concept", {}).items():
        forms = [f for f in ("exists", "chain", "any", "boxworld") if f in e]
        if len(forms) != 1:
            raise DefinitionsError(f"{src} [concept.{k}]: give exactly one of exists, chain, any, boxworld")
        if "lengths" in e and not (isinstance(e["lengths"], list) and len(e["lengths"]) == 2
                                   and all(isinstance(v, int) and v >= 1 for v in e["lengths"])):
            raise DefinitionsError(f"{src} [concept.{k}] lengths: expected [lo, hi], whole numbers >= 1")
        if "lengths" in e and e["lengths"][0] > e["lengths"][1]:
            lo, hi = e["lengths"]
            raise DefinitionsError(f"{src} [concept.{k}] lengths: [{lo}, {hi}] has lo > hi, so the family has no "
                                   f"member; give [lo, hi] with lo <= hi (e.g. [{hi}, {lo}])")
        if forms[0] == "chain":
            for o in e.get("of", ()):
                if o not in objects:
                    raise DefinitionsError(f"{src} [concept.{k}] of: {o!r} is not an object")
            if e["chain"] not in tables["relation"]:
                raise DefinitionsError(f"{src} [concept.{k}] chain: {e['chain']!r} is not a relation")
            if "lengths" not in e:
                raise DefinitionsError(f"{src} [concept.{k}]: a chain needs lengths = [lo, hi]")
        if forms[0] == "any":
            for o in e["any"]:
                if o not in concepts:
                    raise DefinitionsError(f"{src} [concept.{k}] any: {o!r} is not a concept defined above")
        concepts[k] = dict(e)
    defs = Definitions(src, size, colors, tuple(colors.index(c) for c in scene), tables, objects, concepts,
                       dict(raw.get("boxworld", {})))
    for t in _TABLES:  # compile every expression now: a bad one is an error at load time
        for k in tables[t]:
            defs.fn(k)
    _check_objects(defs)  # names, syntax and cycles, before an object is compiled
    for k in objects:
        defs.variants(k)
    _check_concepts(defs)
    return defs


def check_grids(defs: Definitions, grids, what: str = "grids") -> np.ndarray:
    """``grids`` (one (N, N) grid or a stack (S, N, N)) as an integer array, checked against
    the definitions: N is the file's ``[grid] size`` and every cell -1 (empty) or a colour
    index of its palette.  The one rule of the executor and the interpreter: anything else
    is a one-line :class:`DefinitionsError` naming ``what``."""
    g = np.asarray(grids)
    n = defs.size
    if g.ndim not in (2, 3) or g.shape[-2:] != (n, n):
        got = " x ".join(map(str, g.shape[-2:])) if g.ndim >= 2 else f"shape {g.shape}"
        raise DefinitionsError(f"{what}: {got} grid{'s' if g.ndim == 3 else ''}, but the definitions "
                               f"({Path(defs.source).name}) are for {n} x {n} grids ([grid] size = {n})")
    if not np.issubdtype(g.dtype, np.integer):
        raise DefinitionsError(f"{what}: expected integer colour indices, got {g.dtype}")
    if g.size and (g.min() < -1 or g.max() >= defs.n_colors):
        bad = int(g[(g < -1) | (g >= defs.n_colors)].flat[0])
        raise DefinitionsError(f"{what}: cell value {bad} is neither -1 (empty) nor a colour index "
                               f"0..{defs.n_colors - 1} of the palette")
    return g


def _parse(text, where: str):
    """The expression ``text`` parsed, or a one-line :class:`DefinitionsError` naming ``where``."""
    if not isinstance(text, str):
        raise DefinitionsError(f"{where}: expected an expression string, got {text!r}")
    try:
        return ast.parse(" ".join(text.split()), mode="eval").body
    except SyntaxError as exc:
        raise DefinitionsError(f"{where}: not an expression ({exc.msg}): {text!r}") from None


def _called(tree, defs: Definitions, where: str) -> list:
    """The names ``tree`` calls, each checked to be a definition of the file (a call of
    anything else -- a constant, an attribute, a variable -- is an error naming ``where``)."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if not isinstance(node.func, ast.Name):
            raise DefinitionsError(f"{where}: {ast.unparse(node.func)!r} is called, but only definitions of the file "
                                   f"can be ({ast.unparse(node)!r})")
        name = node.func.id
        if name in ("all", "any"):
            continue
        if defs.kind_of(name) is None:
            raise DefinitionsError(f"{where}: {name!r} is not defined ({ast.unparse(node)!r}); define it in the file "
                                   "first")
        out.append(name)
    return out


def _check_objects(defs: Definitions) -> None:
    """Every object entry: its expressions parse and call only definitions of the file, and no
    definition (object, relation, point or colour predicate) is defined from itself, directly
    or through others (a cycle)."""
    uses, label = {}, {}
    for t in _TABLES:
        for name, text in defs.tables[t].items():
            where = f"{defs.source} [{t}] {name}"
            uses[name], label[name] = _called(_parse(text, where), defs, where), f"[{t}] {name}"
    for name, e in defs.objects.items():
        label[name] = f"[object.{name}]"
        deps = [t for _, t in e.get("parts", ()) if t is not None]
        for key in ("is", "where"):
            if key in e:
                where = f"{defs.source} [object.{name}] {key}"
                deps += [c for c in _called(_parse(e[key], where), defs, where) if defs.kind_of(c) == "object"]
        uses[name] = deps
    state = {}

    def visit(name, path):
        if state.get(name) == "done":
            return
        if state.get(name) == "open":
            cycle = path[path.index(name):] + [name]
            raise DefinitionsError(f"{defs.source} {label[cycle[0]]}: {cycle[0]!r} uses itself "
                                   f"({' -> '.join(cycle)}); define it from the definitions above it")
        state[name] = "open"
        for dep in uses[name]:
            visit(dep, path + [name])
        state[name] = "done"

    for name in uses:
        visit(name, [])
    for name, e in defs.objects.items():
        if "is" in e:
            defs.is_alternatives(name)


def _check_concepts(defs: Definitions) -> None:
    """Every ``exists`` concept: an ``and`` of one object call per variable and relations
    between those variables, each name defined, each variable bound by an object."""
    for name, e in defs.concepts.items():
        if "exists" not in e:
            continue
        where = f"{defs.source} [concept.{name}] exists"
        tree = _parse(e["exists"], where)
        _called(tree, defs, where)
        terms = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And) else [tree]
        bound, related = {}, []
        for t in terms:
            if not (isinstance(t, ast.Call) and all(isinstance(a, ast.Name) for a in t.args) and not t.keywords):
                raise DefinitionsError(f"{where}: write an 'and' of calls on variables, e.g. 'square(X) and "
                                       f"west(X, Y)' ({ast.unparse(t)!r} is not one)")
            kind, args = defs.kind_of(t.func.id), [a.id for a in t.args]
            if kind == "object" and len(args) == 1 and args[0] not in bound:
                bound[args[0]] = t.func.id
            elif kind == "relation" and len(args) == 2:
                related.append((t, args))
            else:
                raise DefinitionsError(f"{where}: {ast.unparse(t)!r}: give each variable one object and relate "
                                       "the variables by relations (an object takes one variable, a relation two)")
        if not bound:
            raise DefinitionsError(f"{where}: no variable is given an object (e.g. 'square(X)')")
        for t, args in related:
            free = [a for a in args if a not in bound]
            if free:
                raise DefinitionsError(f"{where}: {ast.unparse(t)!r}: variable {free[0]!r} is given no object "
                                       f"(add e.g. 'square({free[0]})', or use {', '.join(sorted(bound))})")
