"""The slow, obvious interpreter: one program on one scene, by the semantics table.

This is the executable specification of the language; the bit-sliced executor is tested
against it.  Values are attribute *codes* (index in the value list, so ordered types compare
by code), counts are ints, lists are Python lists, sets are sorted lists of object indices,
objects are object indices.  Each operator's meaning is its registered ``interpret``
(:mod:`bayes_concepts.lot.operators`); a ``unique`` that finds no object or several makes the
whole program false on the scene -- also a ``unique`` inside a binder whose set is empty, whose
body is never evaluated (a ``unique``'s set names no bound variable, so every ``unique`` of the
program is evaluated once on its own first).  That scene is outside the concept's *domain*
(:func:`evaluate_with_domain`), as is a scene on which one of the program's domain
constraints (``PROGRAM where C``) fails or presupposes a referent that is missing or not
unique; the concept is false there (its extension lies within its domain).  Relations are read from the scene as the scene
loader reads them (:func:`~bayes_concepts.scenes.io.check_relational_scene`): from its
``relationships``, or computed from the objects' ``3d_coords`` (CLEVR's rule) where it has none.
"""
from __future__ import annotations

from ..lot.grammar import Grammar
from ..lot.operators import PresuppositionFailure, operator_of
from ..lot.program import Node, Program
from ..lot.relational_operators import SAME_ATTRIBUTE
from ..scenes.io import check_relational_scene


def _object_codes(scene: dict, grammar: Grammar) -> list:
    """Per object: {attribute name: code}."""
    schema = grammar.schema
    return [{a.name: a.values.index(obj[a.name]) for a in schema.attributes} for obj in scene["objects"]]


class World:
    """What the operators' interpreter semantics read of one scene."""

    def __init__(self, scene: dict, grammar: Grammar):
        self.grammar = grammar
        self.objects = _object_codes(scene, grammar)
        self.n_objects = len(self.objects)
        self.scene = scene
        self._relations = None

    def code(self, i: int, attribute: str) -> int:
        return self.objects[i][attribute]

    def attribute_of(self, token: str) -> str:
        return SAME_ATTRIBUTE[token]

    def related(self, relation: str, a: int, b: int) -> bool:
        """Object a is ``relation`` of object b (CLEVR: a in ``relationships[relation][b]``, or
        computed from the objects' ``3d_coords``, as the executor's scene bank has them)."""
        schema = self.grammar.schema
        if relation not in schema.relations:
            raise ValueError(f"the scene schema has no relation {relation!r}")
        if self._relations is None:
            self._relations = check_relational_scene(self.scene, schema, "scene")[2]
        return a != b and bool(self._relations[schema.relations.index(relation), a, b])

    def n_values(self, type_name: str) -> int:
        return len(self.grammar.value_types[type_name].values)


def _unique_nodes(root: Node) -> list:
    out, todo = [], [root]
    while todo:
        node = todo.pop()
        if node.kind == "unique":
            out.append(node)
        todo.extend(node.children)
    return out


def evaluate(program: Program | str, scene: dict, grammar: Grammar | None = None) -> bool:
    """Truth value of ``program`` on ``scene`` (a dict in the JSON Lines scene format): false
    outside the concept's domain."""
    in_domain, value = evaluate_with_domain(program, scene, grammar)
    return in_domain and value


def evaluate_with_domain(program: Program | str, scene: dict, grammar: Grammar | None = None) -> tuple:
    """``(in_domain, value)`` of ``program`` on ``scene``: ``in_domain`` is False when a
    ``unique`` of the program or of a constraint finds no object or several, or a constraint
    is false; ``value`` is the program's truth value there (False when ``in_domain`` is)."""
    if isinstance(program, str):
        program = Program.parse(program, grammar)
    grammar = grammar or program.grammar
    world = World(scene, grammar)
    if not world.n_objects:
        raise ValueError("a scene needs at least one object")
    props = grammar.properties
    every = list(range(world.n_objects))

    def ev(node: Node, env: dict):
        op, kind, ch = node.op, node.kind, node.children
        if kind == "constant":
            return grammar.constant_code(node)
        if kind == "variable":
            if op == "S":
                return every
            if op == "non-x-S":
                return [i for i in every if i != env["x"]]
            return env[op]
        if kind == "property":
            arg = ev(ch[0], env)
            attr = props[op].attribute
            if isinstance(arg, list):
                return [world.code(i, attr) for i in arg]
            return world.code(arg, attr)
        return operator_of(op).interpret(ev, node, env, world)

    def holds(root: Node) -> bool:
        # the unique-referent rule: every unique's set names no bound variable, so each is
        # evaluated here once on its own -- a unique inside a binder over an empty set (whose
        # body is never evaluated) puts the scene outside the domain all the same
        for node in _unique_nodes(root):
            ev(node, {})
        return bool(ev(root, {}))

    try:
        for _, root in program.constraints:
            if not holds(root):
                return False, False
        return True, holds(program.root)
    except PresuppositionFailure:
        return False, False
