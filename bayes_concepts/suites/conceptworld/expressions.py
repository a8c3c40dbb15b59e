"""ConceptWorld's definition expressions compiled to functions over grid points (the file's
``point``, ``color`` and ``relation`` entries, and the bodies of its concepts)."""
from __future__ import annotations

import ast

import numpy as np

from ...errors import BayesConceptsError

#: the parameters of each table's entries
_PARAMS = {"point": ("a", "b"), "color": ("p",), "relation": ("X", "Y")}


class DefinitionsError(BayesConceptsError):
    """A ConceptWorld definitions file that cannot be used; names the file and the entry."""


def points_of(v) -> list:
    """The points of an object (nested tuples of points flattened), or ``[v]`` for a point."""
    if isinstance(v, tuple) and len(v) == 3 and not isinstance(v[0], tuple):
        return [v]
    out = []
    for e in v:
        out += points_of(e)
    return out


def _is_point(v) -> bool:
    return isinstance(v, tuple) and len(v) == 3 and not isinstance(v[0], tuple)


_CMP = {ast.Eq: np.equal, ast.NotEq: np.not_equal, ast.Lt: np.less, ast.Gt: np.greater, ast.LtE: np.less_equal,
        ast.GtE: np.greater_equal}
_ATTR = {"x": 0, "y": 1, "color": 2}


def compile_expr(text: str, defs, where: str, parts: dict | None = None):
    """A closure ``f(env) -> bool or bool array`` of the expression ``text`` (Python syntax).

    ``env`` maps variable names to points / objects.  ``parts``: ``{name: object name}`` of a
    shape's parts that are shapes (so ``A.p2`` means point p2 of part A).  A construct
    outside the language is a :class:`DefinitionsError` naming ``where``."""
    try:
        tree = ast.parse(" ".join(text.split()), mode="eval").body
    except SyntaxError as exc:
        raise DefinitionsError(f"{where}: not an expression ({exc.msg}): {text!r}") from None
    return _compile(tree, defs, where, parts or {})


def _compile(node, defs, where, parts):
    def bad(what):
        return DefinitionsError(f"{where}: {what} is not part of the language ({ast.unparse(node)!r})")

    if isinstance(node, ast.BoolOp):
        subs = [_compile(v, defs, where, parts) for v in node.values]
        if isinstance(node.op, ast.And):
            def f(env):
                out = subs[0](env)
                for s in subs[1:]:
                    if out is False or (isinstance(out, (bool, np.bool_)) and not out):
                        return False
                    out = np.logical_and(out, s(env))
                return out
        else:
            def f(env):
                out = subs[0](env)
                for s in subs[1:]:
                    if isinstance(out, (bool, np.bool_)) and out:
                        return True
                    out = np.logical_or(out, s(env))
                return out
        return f
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        sub = _compile(node.operand, defs, where, parts)
        return lambda env: np.logical_not(sub(env))
    if isinstance(node, ast.Compare):
        if len(node.ops) != 1 or type(node.ops[0]) not in _CMP:
            raise bad("this comparison")
        op = _CMP[type(node.ops[0])]
        lhs = _compile(node.left, defs, where, parts)
        rhs = _compile(node.comparators[0], defs, where, parts)
        return lambda env: op(lhs(env), rhs(env))
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        lhs, rhs = _compile(node.left, defs, where, parts), _compile(node.right, defs, where, parts)
        if isinstance(node.op, ast.Add):
            return lambda env: lhs(env) + rhs(env)
        return lambda env: lhs(env) - rhs(env)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, str)):
            raise bad("this constant")
        if isinstance(node.value, str):
            if node.value not in defs.colors:
                raise DefinitionsError(f"{where}: colour {node.value!r} is not in the grid's colours "
                                       f"({', '.join(defs.colors)})")
            value = defs.colors.index(node.value)
        else:
            value = node.value
        return lambda env: value
    if isinstance(node, ast.Name):
        name = node.id
        return lambda env: env[name]
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id in parts:
            shape = defs.objects.get(parts[node.value.id])
            if shape is None or node.attr not in shape.get("point_parts", ()):
                raise DefinitionsError(f"{where}: {ast.unparse(node)!r}: part {node.value.id} "
                                       f"({parts[node.value.id]}) has no point {node.attr}")
            k = shape["point_parts"].index(node.attr)
            name = node.value.id
            return lambda env: env[name][k]
        if node.attr not in _ATTR:
            raise bad(f"attribute .{node.attr}")
        sub, k = _compile(node.value, defs, where, parts), _ATTR[node.attr]
        return lambda env: sub(env)[k]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        fname = node.func.id
        if fname in ("all", "any"):
            return _compile_quantifier(node, fname, defs, where, parts)
        args = [_compile(a, defs, where, parts) for a in node.args]
        if node.keywords:
            raise bad("a keyword argument")
        return _compile_call(fname, args, defs, where)
    raise bad(type(node).__name__)


def _compile_quantifier(node, fname, defs, where, parts):
    if len(node.args) != 1 or not isinstance(node.args[0], ast.GeneratorExp):
        raise DefinitionsError(f"{where}: {fname}(...) takes one generator, e.g. {fname}(r(x, y) for x in X for y in Y)")
    gen = node.args[0]
    loops = []
    for comp in gen.generators:
        if not isinstance(comp.target, ast.Name) or comp.ifs or comp.is_async:
            raise DefinitionsError(f"{where}: {ast.unparse(gen)!r}: write 'for v in V' without conditions")
        loops.append((comp.target.id, _compile(comp.iter, defs, where, parts)))
    body = _compile(gen.elt, defs, where, parts)
    is_all = fname == "all"

    def f(env):
        acc = is_all
        stack = [(0, dict(env))]

        def rec(level, e):
            nonlocal acc
            if level == len(loops):
                v = body(e)
                acc = np.logical_and(acc, v) if is_all else np.logical_or(acc, v)
                return
            name, it = loops[level]
            for p in points_of(it(e)):
                e2 = dict(e)
                e2[name] = p
                rec(level + 1, e2)
        rec(*stack[0])
        return acc
    return f


def _compile_call(fname, args, defs, where):
    kind = defs.kind_of(fname)
    if kind is None:
        raise DefinitionsError(f"{where}: {fname!r} is not defined (define it in an earlier table)")
    if kind == "color":
        if len(args) != 1:
            raise DefinitionsError(f"{where}: colour predicate {fname} takes one argument, got {len(args)}")
        a = args[0]

        def f(env):
            v = a(env)
            if _is_point(v):
                return defs.fn(fname)({"p": v})
            out = True
            for p in points_of(v):
                out = np.logical_and(out, defs.fn(fname)({"p": p}))
            return out
        return f
    if kind in ("point", "relation"):
        if len(args) != 2:
            raise DefinitionsError(f"{where}: {kind} relation {fname} takes two arguments, got {len(args)}")
        names = _PARAMS[kind]
        a, b = args
        return lambda env: defs.fn(fname)({names[0]: a(env), names[1]: b(env)})
    # an object predicate: one object argument, or its parts one by one
    if len(args) == 1:
        a = args[0]
        return lambda env: defs.object_holds(fname, a(env))
    return lambda env: defs.object_holds(fname, tuple(x(env) for x in args))
