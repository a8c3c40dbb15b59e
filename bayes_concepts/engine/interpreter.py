"""The slow, obvious interpreter: one program on one scene, by the semantics table.

This is the executable specification of the language; the
bit-sliced executor is tested against it.  Values are attribute *codes* (index in
the value list, so ordered types compare by code), counts are ints, lists are
Python lists, sets are lists of object indices.
"""
from __future__ import annotations

from ..lot.grammar import NUM, Grammar
from ..lot.program import Node, Program


def _constant(node: Node, grammar: Grammar):
    if node.type == NUM:
        return int(node.op)
    return grammar.value_types[node.type].values.index(node.op)


def _object_codes(scene: dict, grammar: Grammar) -> list:
    """Per object: {attribute name: code}."""
    schema = grammar.schema
    return [{a.name: a.values.index(obj[a.name]) for a in schema.attributes} for obj in scene["objects"]]


def evaluate(program: Program | str, scene: dict, grammar: Grammar | None = None) -> bool:
    """Truth value of ``program`` on ``scene`` (a dict in the JSON Lines scene format)."""
    if isinstance(program, str):
        program = Program.parse(program, grammar)
    grammar = grammar or program.grammar
    objects = _object_codes(scene, grammar)
    if not objects:
        raise ValueError("a scene needs at least one object")
    props = grammar.properties

    def ev(node: Node, x: int | None):
        op, kind, ch = node.op, node.kind, node.children
        if kind == "constant":
            return _constant(node, grammar)
        if kind == "variable":
            if op == "x":
                return x
            return [i for i in range(len(objects)) if op == "S" or i != x]
        if kind == "property":
            arg = ev(ch[0], x)
            attr = props[op].attribute
            if isinstance(arg, list):
                return [objects[i][attr] for i in arg]
            return objects[arg][attr]
        if kind == "compare":
            a, b = ev(ch[0], x), ev(ch[1], x)
            return a == b if op == "=" else a > b
        if kind == "logic":
            if op == "not":
                return not ev(ch[0], x)
            a, b = ev(ch[0], x), ev(ch[1], x)
            return (a and b) if op == "and" else (a or b)
        if kind in ("set_quantifier", "count"):
            values, v = ev(ch[0], x), ev(ch[1], x)
            matches = [e == v for e in values]
            if op == "count=":
                return sum(matches)
            if op == "exists=":
                return any(matches)
            return len(matches) > 0 and all(matches)  # for-all= is False on an empty list
        if kind == "quantifier":
            truths = [ev(ch[0], i) for i in range(len(objects))]
            return any(truths) if op == "exists=" else all(truths)
        raise AssertionError(f"unknown node kind {kind}")

    return bool(ev(program.root, None))
