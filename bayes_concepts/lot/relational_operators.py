"""Relational operators: set filters and quantifiers over new variables, unique referents,
counts of sets, set union and intersection, relations between two objects, offsets.

Registered as built-ins of :data:`~bayes_concepts.lot.operators.operators`; a grammar uses
them by naming them on its ``operators`` line.  Semantics (the interpreter's, which the
bit-sliced kernels equal):

=================  =========================  ==============================================
token              signature                  meaning
=================  =========================  ==============================================
``filter:v``       SET BOOL -> SET            the objects v of the set for which the body holds
``exists:v``       SET BOOL -> BOOL           some object v of the set has the body
``forall:v``       SET BOOL -> BOOL           every object v of the set has the body (true on
                                              an empty set, as in logic)
``exist``          SET -> BOOL                the set is not empty (CLEVR's ``exist``)
``count``          SET -> NUM                 the number of objects in the set
``union``          SET SET -> SET             objects in either set
``intersect``      SET SET -> SET             objects in both sets
``unique``         SET -> OBJ                 the one object of the set (CLEVR's ``unique``)
``left`` …         OBJ OBJ -> BOOL            ``a b left``: a is left of b (CLEVR's
                                              ``relationships["left"][b]`` holds a); ``right``,
                                              ``front``, ``behind`` likewise
``same_color`` …   OBJ OBJ -> BOOL            two different objects with the same colour
                                              (``same_shape``, ``same_material``, ``same_size``)
``+``              T INT -> T (T a location)  the location k steps further; past the type's
                                              last value it is no value, and every comparison
                                              with it is false
=================  =========================  ==============================================

**The unique-referent rule.**  ``unique`` needs a set that names no bound variable (a
referring expression, as in CLEVR).  A concept is false on every scene where some
``unique`` in it finds no object or more than one -- whatever ``not`` or ``or`` surrounds
it: the concept presupposes its referents.
"""
from __future__ import annotations

from .operators import Operator, OperatorTypeError, PresuppositionFailure, latex_text, operators

BOOL, OBJ, SET, INT, NUM = "BOOL", "OBJ", "SET", "INT", "NUM"
SPATIAL_RELATIONS = ("left", "right", "front", "behind")
SAME_ATTRIBUTE = {"same_color": "color", "same_shape": "shape", "same_material": "material", "same_size": "size"}


def _describe(t):
    return {BOOL: "a BOOL", OBJ: "an object", SET: "a set", INT: "an integer"}.get(t, f"a {t}")


def _expect(args, types, token):
    for i, (arg, want) in enumerate(zip(args, types)):
        if arg.type != want:
            which = f"operand {i + 1} " if len(types) > 1 else ""
            raise OperatorTypeError(f"{which}must be {_describe(want)}, got {_describe(arg.type)}")


def _typed(types, result):
    def check(args, grammar, token=None):
        _expect(args, types, token)
        return result
    return check


def _members(evaluate, node, env):
    return evaluate(node.children[0], env)


# ------------------------------------------------------------------ interpreter semantics
def _i_filter(evaluate, node, env, world):
    var = node.op.split(":", 1)[1]
    return [o for o in evaluate(node.children[0], env) if evaluate(node.children[1], {**env, var: o})]


def _i_exists(evaluate, node, env, world):
    var = node.op.split(":", 1)[1]
    return any(evaluate(node.children[1], {**env, var: o}) for o in evaluate(node.children[0], env))


def _i_forall(evaluate, node, env, world):
    var = node.op.split(":", 1)[1]
    return all(evaluate(node.children[1], {**env, var: o}) for o in evaluate(node.children[0], env))


def _i_exist(evaluate, node, env, world):
    return len(_members(evaluate, node, env)) > 0


def _i_count(evaluate, node, env, world):
    return len(_members(evaluate, node, env))


def _i_union(evaluate, node, env, world):
    a, b = (evaluate(c, env) for c in node.children)
    return sorted(set(a) | set(b))


def _i_intersect(evaluate, node, env, world):
    a, b = (evaluate(c, env) for c in node.children)
    return sorted(set(a) & set(b))


def _i_unique(evaluate, node, env, world):
    members = _members(evaluate, node, env)
    if len(members) != 1:
        raise PresuppositionFailure(f"{len(members)} objects")
    return members[0]


def _i_relation(evaluate, node, env, world):
    a, b = (evaluate(c, env) for c in node.children)
    return world.related(node.op, a, b)


def _i_same(evaluate, node, env, world):
    a, b = (evaluate(c, env) for c in node.children)
    attribute = world.attribute_of(node.op)
    return a != b and world.code(a, attribute) == world.code(b, attribute)


def _i_offset(evaluate, node, env, world):
    v, k = (evaluate(c, env) for c in node.children)
    if v is None:
        return None
    shifted = v + k
    return shifted if 0 <= shifted < world.n_values(node.type) else None


# ------------------------------------------------------------------ type rules
def _check_relation(args, grammar, token=None):
    _expect(args, (OBJ, OBJ), token)
    relations = grammar.schema.relations
    if token in SPATIAL_RELATIONS and token not in relations:
        raise OperatorTypeError(f"the scene schema has no relation {token!r} (its relations: "
                                f"{', '.join(relations) or 'none'})")
    return BOOL


def _check_same(args, grammar, token=None):
    _expect(args, (OBJ, OBJ), token)
    attribute = SAME_ATTRIBUTE[token]
    if attribute not in grammar.schema.names:
        raise OperatorTypeError(f"the scene schema has no attribute {attribute!r} to compare")
    return BOOL


def _check_offset(args, grammar, token=None):
    value, k = args
    vt = grammar.value_types.get(value.type)
    if vt is None or not (vt.ordered and vt.integer):
        raise OperatorTypeError(f"operand 1 must be a location (an ordered integer type), got {_describe(value.type)}")
    if k.type != INT:
        raise OperatorTypeError(f"operand 2 must be an integer literal, got {_describe(k.type)}")
    return value.type


# ------------------------------------------------------------------ readable forms
def _binder_form(symbol):
    def form(args, var=None):
        return f"{symbol}{var}∈{args[0]}: {args[1]}"
    return form


def _latex_binder(symbol):
    def form(args, var=None):
        return rf"{symbol} {var} \in {args[0]}:\ {args[1]}"
    return form


def _call(name, latex=False):
    shown = rf"\operatorname{{{latex_text(name)}}}" if latex else name
    return lambda args, var=None: f"{shown}({', '.join(args)})"


_DEFS = [
    ("filter", 2, "binder", "SET BOOL -> SET", _typed((SET, BOOL), SET), _i_filter, "filter",
     lambda a, v=None: f"{{{v}∈{a[0]} | {a[1]}}}", lambda a, v=None: rf"\{{{v} \in {a[0]} \mid {a[1]}\}}", True,
     "the objects of the set for which the body holds"),
    ("exists", 2, "binder", "SET BOOL -> BOOL", _typed((SET, BOOL), BOOL), _i_exists, "exists",
     _binder_form("∃"), _latex_binder(r"\exists"), True, "some object of the set has the body"),
    ("forall", 2, "binder", "SET BOOL -> BOOL", _typed((SET, BOOL), BOOL), _i_forall, "forall",
     _binder_form("∀"), _latex_binder(r"\forall"), True, "every object of the set has the body (true on an empty set)"),
    ("exist", 1, "set_test", "SET -> BOOL", _typed((SET,), BOOL), _i_exist, "exist",
     lambda a, v=None: f"{a[0]} ≠ ∅", lambda a, v=None: rf"{a[0]} \neq \emptyset", False, "the set is not empty"),
    ("count", 1, "set_count", "SET -> NUM", _typed((SET,), NUM), _i_count, "count",
     lambda a, v=None: f"|{a[0]}|", lambda a, v=None: rf"\lvert {a[0]} \rvert", False, "number of objects in the set"),
    ("union", 2, "set_op", "SET SET -> SET", _typed((SET, SET), SET), _i_union, "union",
     lambda a, v=None: f"({a[0]} ∪ {a[1]})", lambda a, v=None: rf"({a[0]} \cup {a[1]})", False, "objects in either set"),
    ("intersect", 2, "set_op", "SET SET -> SET", _typed((SET, SET), SET), _i_intersect, "intersect",
     lambda a, v=None: f"({a[0]} ∩ {a[1]})", lambda a, v=None: rf"({a[0]} \cap {a[1]})", False, "objects in both sets"),
    ("unique", 1, "unique", "SET -> OBJ", _typed((SET,), OBJ), _i_unique, "unique",
     lambda a, v=None: f"ι{a[0]}", lambda a, v=None: rf"\iota {a[0]}", False,
     "the one object of the set (a concept is false where it finds none or several)"),
    ("+", 2, "offset", "LOC INT -> LOC", _check_offset, _i_offset, "offset",
     lambda a, v=None: f"({a[0]} + {a[1]})", lambda a, v=None: f"({a[0]} + {a[1]})", False,
     "a location k steps further (no value past the last)"),
]
for _name in SPATIAL_RELATIONS:
    _DEFS.append((_name, 2, "relation", "OBJ OBJ -> BOOL", _check_relation, _i_relation, "relation",
                  _call(_name), _call(_name, True), False, f"a b {_name}: a is {_name} of b (CLEVR's rule)"))
for _name, _attr in SAME_ATTRIBUTE.items():
    _DEFS.append((_name, 2, "relation", "OBJ OBJ -> BOOL", _check_same, _i_same, "same",
                  _call(_name), _call(_name, True), False, f"two different objects with the same {_attr}"))


def _compiler(method):
    def compile_(builder, node, operands):
        return getattr(builder, method)(node, *operands)
    compile_.__name__ = f"compile_{method}"
    return compile_


for _name, _arity, _kind, _sig, _check, _interp, _method, _uni, _tex, _binds, _summary in _DEFS:
    operators.register(_name, Operator(_name, _arity, _kind, _sig, check=_check, interpret=_interp,
                                       compile=_compiler(_method), unicode=_uni, latex=_tex, binds=_binds,
                                       summary=_summary))

__all__ = ["SPATIAL_RELATIONS", "SAME_ATTRIBUTE", "PresuppositionFailure"]
