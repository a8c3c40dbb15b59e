"""The slow twin of the program parser: ``Program._parse_given`` and the functions it calls as
they were before the one-pass parser (commit 5da678b), copied verbatim except that
``_parse_given`` is a plain function here (``parse_given(given, grammar)``).

The product has one parser (:mod:`bayes_concepts.lot.program`); this copy is what
``tests/test_parse_twin.py`` and ``benchmarks/parse_speed.py`` compare it with: the same
:class:`~bayes_concepts.lot.program.Program` (tokens, constraints, syntax trees field by field)
for every valid input, the same exception (type, message, program shown, position) for every
invalid one.  Do not edit it to follow the product: it is the reference.
"""
from __future__ import annotations

from bayes_concepts.errors import ProgramError
from bayes_concepts.lot.grammar import IGNORED, NUM, Grammar
from bayes_concepts.lot.operators import CURI_OPERATORS, OperatorTypeError, operator_of, operators, split_binder
from bayes_concepts.lot.program import (BOOL, INT, MAX_PROGRAM_NESTING, MAX_PROGRAM_TOKENS, OBJ, QUANTIFIERS, SET,
                                        WHERE, _SHOWN_CHARS, Node, Program, element_type, list_of)


def parse_given(given: list, grammar: Grammar) -> Program:
    """The reference ``Program._parse_given(given, grammar)``."""
    return _parse_given(Program, list(given), grammar)


def _parse_given(cls, given: list, grammar: Grammar) -> "Program":
    """:meth:`parse` of the tokens ``given``, without the memo."""
    shown = _abbreviate(given)
    positions = [i for i, t in enumerate(given) if t not in IGNORED]
    longest = max(len(seg.split()) for seg in " ".join(given[i] for i in positions).split(f" {WHERE} ")) \
        if WHERE in given else len(positions)
    if longest > MAX_PROGRAM_TOKENS:
        raise ProgramError(f"{longest:,} tokens: programs (and each domain constraint) may have at most "
                           f"{MAX_PROGRAM_TOKENS} (bayes_concepts.lot.program.MAX_PROGRAM_TOKENS)", shown, None)
    aliases = grammar.aliases
    tokens = tuple(aliases.get(given[i], given[i]) for i in positions)
    if WHERE not in tokens:
        return cls(tokens, _parse_postfix(tokens, positions, grammar, shown), grammar)
    if not grammar.is_relational:
        raise ProgramError(f"{WHERE!r}: domain constraints are for relational languages (a grammar with "
                           "binders and unique), not this one", shown, positions[tokens.index(WHERE)])
    cuts = [k for k, t in enumerate(tokens) if t == WHERE] + [len(tokens)]
    parts = []
    for lo, hi in zip([0] + [c + 1 for c in cuts[:-1]], cuts):
        if lo == hi:
            at = positions[cuts[len(parts)] if len(parts) < len(cuts) - 1 else lo - 1]
            raise ProgramError(f"{WHERE!r} needs a program before it and a BOOL constraint after it", shown, at)
        seg = tokens[lo:hi]
        parts.append((seg, _parse_postfix(seg, positions[lo:hi], grammar, shown)))
    (main, root), constraints = parts[0], tuple(parts[1:])
    return cls(main, root, grammar, constraints)


def _abbreviate(tokens: list) -> str:
    """The program as given, for error messages: whole, or its start and end with the
    number of tokens when it is longer than ``_SHOWN_CHARS`` characters."""
    text = " ".join(tokens)
    if len(text) <= _SHOWN_CHARS:
        return text
    head, tail, used = [], [], 0
    for t in tokens:
        if used + len(t) > _SHOWN_CHARS // 2 and head:
            break
        head.append(t[:_SHOWN_CHARS // 2])
        used += len(t) + 1
    used = 0
    for t in reversed(tokens[len(head):]):
        if used + len(t) > _SHOWN_CHARS // 4 and tail:
            break
        tail.append(t[-(_SHOWN_CHARS // 4):])
        used += len(t) + 1
    return f"{' '.join(head)} … {' '.join(reversed(tail))} ({len(tokens):,} tokens)"


def _describe(t: str) -> str:
    if t == INT:
        return "an integer"
    if t.startswith("LIST["):
        return f"a list of {element_type(t)}"
    return {BOOL: "a BOOL", OBJ: "an object", SET: "a set"}.get(t, f"a {t}")


def _describe_in(t: str, grammar: Grammar) -> str:
    """As :func:`_describe`; CURI's language has one object, x."""
    return "the object x" if t == OBJ and not grammar.is_relational else _describe(t)


def _unify(a: Node, b: Node, grammar: Grammar):
    """Type shared by two compared operands, or None.  An integer literal takes the
    type of the other side (LOC if it is a LOC value, NUM)."""
    ta, tb = a.type, b.type
    if ta == tb:
        return NUM if ta == INT else ta
    if ta == INT:
        a, b, ta, tb = b, a, tb, ta
    if tb == INT and _int_fits(b.op, ta, grammar):
        return ta
    return None


def _int_fits(token: str, t: str, grammar: Grammar) -> bool:
    if t == NUM:
        return True
    vt = grammar.value_types.get(t)
    return vt is not None and token in vt.values


def _retype(node: Node, t: str) -> Node:
    if node.type == INT:
        return Node(node.op, node.children, t, node.kind, node.position)
    return node


def _height(root: Node) -> int:
    """Height of the syntax tree (a leaf: 1), without recursion."""
    best, todo = 0, [(root, 1)]
    while todo:
        node, h = todo.pop()
        best = max(best, h)
        todo.extend((c, h + 1) for c in node.children)
    return best


def postorder_nodes(root: Node) -> list:
    """The nodes of a syntax tree in postfix order (the order of the program's tokens), without
    recursion."""
    out, todo = [], [(root, False)]
    while todo:
        node, expanded = todo.pop()
        if expanded or not node.children:
            out.append(node)
            continue
        todo.append((node, True))
        todo.extend((c, False) for c in reversed(node.children))
    return out


def _binder_var(node: Node) -> str | None:
    if node.kind == "quantifier":
        return "x"
    return split_binder(node.op)[1] if node.kind == "binder" else None


def free_variables(root: Node) -> dict:
    """Map node id -> frozenset of the object variables free in that subtree (``non-x-S``
    counts as a use of x), computed bottom-up without recursion."""
    free = {}
    for node in postorder_nodes(root):
        if node.kind == "variable":
            here = frozenset() if node.op == "S" else frozenset({"x" if node.op == "non-x-S" else node.op})
        else:
            here = frozenset().union(*(free[id(c)] for c in node.children))
            var = _binder_var(node)
            if var is not None:
                here = free[id(node.children[0])] if node.kind == "binder" else frozenset()
                body = free[id(node.children[-1])] - {var}
                here = here | body
        free[id(node)] = here
    return free


def _check_scopes(root: Node, grammar: Grammar, tokens, positions, shown):
    """Every variable is bound by an enclosing binder (x: by the final quantifier or a binder
    of x); no binder binds a variable an enclosing binder already binds; ``unique`` takes a
    set that names no bound variable."""
    todo = [(root, frozenset())]
    free = None
    while todo:
        node, bound = todo.pop()
        var = _binder_var(node)
        if node.kind == "variable" and node.op != "S":
            used = "x" if node.op == "non-x-S" else node.op
            if used not in bound:
                if used == "x" and not grammar.is_relational:
                    raise ProgramError(f"{node.op!r} used without a quantifier (end the program with exists= or "
                                       "for-all= to bind x)", shown, positions[node.position])
                binders = " or ".join(f"{b}:{used}" for b in grammar.operators if operators.get(b).binds)
                how = f"{binders}" + (" or a final exists=/for-all=" if used == "x" else "")
                raise ProgramError(f"{node.op!r}: variable {used} is not bound here (no {how} encloses it)",
                                   shown, positions[node.position])
        if node.kind == "unique":
            free = free or free_variables(root)
            names = sorted(free[id(node.children[0])])
            if names:
                raise ProgramError(f"{tokens[node.position]!r}: unique needs a set that names no bound variable, "
                                   f"this one depends on {', '.join(names)}", shown, positions[node.position])
        if var is not None:
            if var in bound:
                raise ProgramError(f"{tokens[node.position]!r}: binds {var} again inside a binder of {var} "
                                   "(shadowing; use another variable)", shown, positions[node.position])
            if node.kind == "binder":
                todo.append((node.children[0], bound))
            todo.append((node.children[-1], bound | {var}))
            continue
        todo.extend((c, bound) for c in node.children)


def _list_and_value(lst: Node, v: Node, i, fail, grammar):
    et = element_type(lst.type)
    if et is None:
        fail(f"expects a list (a property of S or non-x-S) and a value, got {_describe_in(lst.type, grammar)} "
             f"and {_describe_in(v.type, grammar)}", i)
    if v.type == et or (v.type == INT and _int_fits(v.op, et, grammar)):
        return (lst, _retype(v, et))
    fail(f"expects a {et} value to compare the list's elements with, got {_describe_in(v.type, grammar)}", i)


def _unknown_token(tok: str, grammar: Grammar) -> str:
    """Why a token is not in the grammar's vocabulary."""
    name, var = split_binder(tok)
    if name in operators:
        op = operators.get(name)
        if op.binds and var is None:
            return (f"the binder {name} needs a variable: write {name}:VAR with VAR one of "
                    f"{' '.join(grammar.variables)}")
        if name not in grammar.operators:
            return f"operator {name!r} is not declared by this grammar (its operators: {' '.join(grammar.operators)})"
        if var is not None:
            return f"{var!r} is not a variable of this grammar (its variables: {' '.join(grammar.variables)})"
    listed = {"exists=": 0, "for-all=": 1, "count=": 2}  # CURI's eight as CURI lists them
    shown = sorted((t for t in grammar.operators if not operators.get(t).binds), key=lambda t: listed.get(t, -1))
    ops = " ".join(shown)
    binders = " ".join(f"{t}:VAR" for t in grammar.operators if operators.get(t).binds)
    variables = " ".join(grammar.variables[1:])
    return ("unknown token (expected a value, a property such as color?, an operator "
            f"({ops}{' ' + binders if binders else ''}), x{', ' + variables if variables else ''}, S or non-x-S)")


def _parse_postfix(tokens, positions, grammar: Grammar, shown: str) -> Node:
    if not tokens:
        raise ProgramError("empty program (expected a postfix program such as 'x color? red = exists=')", shown, None)
    kinds = grammar.token_kinds
    stack: list[Node] = []
    n = len(tokens)

    def fail(msg, i):
        tok = tokens[i] if len(tokens[i]) <= 40 else tokens[i][:40] + "…"
        raise ProgramError(f"{tok!r}: {msg}", shown, positions[i])

    def pop(i, how_many, what):
        if len(stack) < how_many:
            fail(f"stack underflow: expects {what}, but only {len(stack)} "
                 f"value{'s' if len(stack) != 1 else ''} precede{'s' if len(stack) == 1 else ''} it", i)
        args = stack[-how_many:]
        del stack[-how_many:]
        return args

    for i, tok in enumerate(tokens):
        kind = kinds.get(tok)
        if kind is None and grammar.is_integer(tok):
            kind = "integer"
        if kind is None:
            fail(_unknown_token(tok, grammar), i)
        if kind == "value":
            stack.append(Node(tok, (), grammar.value_of[tok], "constant", i))
        elif kind == "integer":
            stack.append(Node(tok, (), INT, "constant", i))
        elif kind == "variable":
            stack.append(Node(tok, (), SET if tok in ("S", "non-x-S") else OBJ, "variable", i))
        elif kind == "operator" and tok not in CURI_OPERATORS:
            op = operator_of(tok)
            args = pop(i, op.arity, f"{op.arity} operand{'s' if op.arity != 1 else ''} ({op.signature})")
            try:
                result = op.check(args, grammar, tok)
            except OperatorTypeError as exc:
                fail(f"{exc} ({op.name}: {op.signature})", i)
            if result == INT:
                result = NUM
            stack.append(Node(tok, tuple(args), result, op.kind, i))
        elif kind == "property":
            (arg,) = pop(i, 1, "one operand (an object or a set)" if grammar.is_relational else "one operand (x or a set)")
            vtype = grammar.properties[tok].type
            if arg.type == OBJ:
                stack.append(Node(tok, (arg,), vtype, "property", i))
            elif arg.type == SET:
                stack.append(Node(tok, (arg,), list_of(vtype), "property", i))
            else:
                fail(f"expects an object or a set, got {_describe_in(arg.type, grammar)}" if grammar.is_relational else
                     f"expects x or a set (S, non-x-S), got {_describe_in(arg.type, grammar)}", i)
        elif tok in ("=", ">"):
            a, b = pop(i, 2, "two operands")
            t = _unify(a, b, grammar)
            if t is None and INT in (a.type, b.type) and a.type != b.type:
                lit, other = (a, b) if a.type == INT else (b, a)
                vt = grammar.value_types.get(other.type)
                if vt is not None:
                    fail(f"integer {lit.op} is not a {other.type} value (expected one of "
                         f"{' '.join(vt.values)})", i)
            if t is None or t in (BOOL, OBJ, SET) or t.startswith("LIST["):
                fail(f"cannot compare {_describe_in(a.type, grammar)} with {_describe_in(b.type, grammar)} "
                     "(expected two values of the same type)", i)
            if tok == ">" and not (t == NUM or grammar.value_types[t].ordered):
                ordered = sorted([NUM] + [v.name for v in grammar.value_types.values() if v.ordered])
                fail(f"'>' needs an ordered type ({', '.join(ordered)}), got {t}", i)
            stack.append(Node(tok, (_retype(a, t), _retype(b, t)), BOOL, "compare", i))
        elif tok in ("and", "or"):
            a, b = pop(i, 2, "two BOOL operands")
            for arg in (a, b):
                if arg.type != BOOL:
                    fail(f"expects BOOL operands, got {_describe_in(arg.type, grammar)}", i)
            stack.append(Node(tok, (a, b), BOOL, "logic", i))
        elif tok == "not":
            (a,) = pop(i, 1, "one BOOL operand")
            if a.type != BOOL:
                fail(f"expects a BOOL operand, got {_describe_in(a.type, grammar)}", i)
            stack.append(Node(tok, (a,), BOOL, "logic", i))
        elif tok == "count=":
            lst, v = pop(i, 2, "a list and a value")
            stack.append(Node(tok, _list_and_value(lst, v, i, fail, grammar), NUM, "count", i))
        elif tok in QUANTIFIERS:
            if len(stack) >= 2 and element_type(stack[-2].type) is not None:
                lst, v = pop(i, 2, "a list and a value")
                stack.append(Node(tok, _list_and_value(lst, v, i, fail, grammar), BOOL, "set_quantifier", i))
                continue
            if len(stack) == 0:
                fail("stack underflow: expects a BOOL body (quantifier over x∈S) or a list and a value", i)
            top = stack[-1]
            if top.type != BOOL:
                fail(f"quantifier over a non-boolean: expects a BOOL body, got {_describe_in(top.type, grammar)}", i)
            if i != n - 1:
                fail("a quantifier over x∈S must be the last token (a set quantifier expects a list and a value)", i)
            if len(stack) != 1:
                fail(f"quantifier leaves {len(stack) - 1} more value{'s' if len(stack) > 2 else ''} on the stack "
                     "(expected exactly one BOOL body)", i)
            stack.pop()
            stack.append(Node(tok, (top,), BOOL, "quantifier", i))
        else:  # pragma: no cover - every kind is handled above
            fail("unsupported token", i)

    for node in stack:
        height = _height(node)
        if height > MAX_PROGRAM_NESTING:
            raise ProgramError(f"{tokens[node.position]!r}: operators nested {height} levels deep; programs may nest "
                               f"at most {MAX_PROGRAM_NESTING} (bayes_concepts.lot.program.MAX_PROGRAM_NESTING)",
                               shown, positions[node.position])
    if len(stack) > 1:
        extra = stack[1]
        first = min(node.position for node in extra.walk())
        span = " ".join(tokens[first:extra.position + 1])
        raise ProgramError(
            f"leftover values: the program leaves {len(stack)} values on the stack (expected exactly one BOOL); "
            f"nothing uses the {_describe_in(extra.type, grammar).split(' ', 1)[-1]} computed by {span!r}",
            shown, positions[first])
    root = stack[0]
    if root.type != BOOL:
        raise ProgramError(f"{tokens[-1]!r}: the program computes {_describe_in(root.type, grammar)}, expected a BOOL",
                           shown, positions[-1])
    _check_scopes(root, grammar, tokens, positions, shown)
    return root
