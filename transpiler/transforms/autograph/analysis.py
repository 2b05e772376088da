"""Name analysis for the control-flow conversion (`autograph/convert.py`): reads, bindings, liveness.

The conversion turns each ``if``/``while``/``for`` into nested functions that take and
return the variables the construct carries; which variables those are is decided here,
on canonical code (one ``return`` at the end, no ``break``/``continue``, no ``try``/``with``,
the fence having rejected the rest):

- `uses` -- the local names an expression or small statement reads (attribute names and
  keywords left out; a nested ``def``/``lambda`` reads its free names where it is defined;
  ``ad.defined(locals(), ("a", "b"))`` in generated code reads ``a`` and ``b``);
- `binds` / `assigned` -- the names a statement / a block binds (nested constructs
  included, nested functions' own locals not);
- `live_in` / `live_after_each` -- backward liveness over structured statements, loops to
  a fixpoint: a variable is carried when the construct assigns it and it is live after it
  (or, for a loop, live at its header);
- `last_assignments` -- where each name is last bound in a block (for error messages);
- `appended_lists` -- lists a block appends to without binding them (tapes, user lists).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import libcst as cst

from transpiler.frontend.passes import child_nodes

Statements = Sequence[cst.BaseStatement]
_LIST_MUTATORS = frozenset({"append", "extend", "insert"})


# --- reads ---------------------------------------------------------------------------------

def uses(node: cst.CSTNode | None) -> set[str]:
    """The names `node` reads (an expression or a small statement; targets excluded)."""
    found: set[str] = set()
    if node is not None:
        _collect_uses(node, found)
    return found


def _collect_uses(root: cst.CSTNode, found: set[str]) -> None:
    stack: list[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            found.add(node.value)
        elif isinstance(node, cst.Attribute):
            stack.append(node.value)  # `x.attr`: reads `x`, not `attr`
        elif isinstance(node, cst.Arg):
            stack.append(node.value)  # `f(axis=1)`: `axis` is not a variable
        elif isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            stack.extend(_target_reads(node))
            if node.value is not None:
                stack.append(node.value)
        elif isinstance(node, cst.Lambda):
            found.update(_function_free_uses(node.params, node.body))
        elif isinstance(node, cst.FunctionDef):
            found.update(_function_free_uses(node.params, node.body))
            stack.extend(d.decorator for d in node.decorators)
        elif isinstance(node, cst.Call) and _reads_locals(node):
            found.update(_string_constants(node))
            stack.extend(child_nodes(node))
        else:
            stack.extend(child_nodes(node))


def _target_reads(node: cst.Assign | cst.AnnAssign | cst.AugAssign) -> list[cst.CSTNode]:
    """What an assignment reads on its left side (a subscript's value and index)."""
    targets = ([t.target for t in node.targets] if isinstance(node, cst.Assign)
               else [node.target])
    reads: list[cst.CSTNode] = []
    for target in targets:
        for leaf in _target_leaves(target):
            if not isinstance(leaf, cst.Name):
                reads.append(leaf)
    if isinstance(node, cst.AugAssign):
        reads.extend(targets)
    return reads


def _function_free_uses(params: cst.Parameters, body: cst.CSTNode) -> set[str]:
    """Names a nested function or lambda reads from the enclosing scope."""
    inner = uses(body)
    local = {p.name.value for p in _all_params(params)}
    if isinstance(body, cst.BaseSuite):
        local |= assigned(body.body) if isinstance(body, cst.IndentedBlock) else set()
    defaults = set().union(*(uses(p.default) for p in _all_params(params)))
    return (inner - local) | defaults


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    out = [*params.posonly_params, *params.params, *params.kwonly_params]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            out.append(star)
    return out


def parameter_names(func: cst.FunctionDef) -> list[str]:
    return [p.name.value for p in _all_params(func.params)]


def _reads_locals(call: cst.Call) -> bool:
    return any(isinstance(a.value, cst.Call) and isinstance(a.value.func, cst.Name)
               and a.value.func.value == "locals" and not a.value.args for a in call.args)


def _string_constants(call: cst.Call) -> set[str]:
    """``ad.defined(locals(), ("a", "b"))`` reads the variables named by the strings."""
    names: set[str] = set()
    for arg in call.args:
        elements = arg.value.elements if isinstance(arg.value, (cst.Tuple, cst.List)) else []
        for element in elements:
            if isinstance(element.value, cst.SimpleString):
                text = element.value.evaluated_value
                if isinstance(text, str) and text.isidentifier():
                    names.add(text)
    return names


# --- bindings ------------------------------------------------------------------------------

def _target_leaves(target: cst.BaseExpression) -> Iterable[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_leaves(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_leaves(target.value)
    else:
        yield target


def target_names(target: cst.BaseExpression) -> list[str]:
    """The plain names an assignment target binds, in order."""
    return [leaf.value for leaf in _target_leaves(target) if isinstance(leaf, cst.Name)]


def binds(node: cst.CSTNode) -> list[str]:
    """The names a small statement (or a nested ``def``) binds, in order."""
    if isinstance(node, cst.Assign):
        return [name for t in node.targets for name in target_names(t.target)]
    if isinstance(node, (cst.AnnAssign, cst.AugAssign)):
        if isinstance(node, cst.AnnAssign) and node.value is None:
            return []
        return target_names(node.target)
    if isinstance(node, cst.FunctionDef):
        return [node.name.value]
    return []


def assigned(stmts: Statements) -> set[str]:
    """Every name `stmts` may bind, nested constructs included (in no particular order)."""
    return set(assigned_in_order(stmts))


def assigned_in_order(stmts: Statements) -> list[str]:
    """The names `stmts` may bind, each once, in the order of their first binding."""
    return list(dict.fromkeys(name for name, _ in _bindings(stmts)))


def last_assignments(stmts: Statements) -> dict[str, cst.CSTNode]:
    """Each name `stmts` binds -> the statement (small statement, ``for`` or ``def``) of
    its textually last binding."""
    return dict(_bindings(stmts))


def _bindings(stmts: Statements) -> Iterable[tuple[str, cst.CSTNode]]:
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                for name in binds(small):
                    yield name, small
        elif isinstance(stmt, cst.FunctionDef):
            yield stmt.name.value, stmt
        elif isinstance(stmt, cst.For):
            for name in target_names(stmt.target):
                yield name, stmt
            yield from _bindings(_block(stmt.body))
            yield from _bindings(_else_block(stmt.orelse))
        elif isinstance(stmt, (cst.If, cst.While)):
            yield from _bindings(_block(stmt.body))
            yield from _bindings(_else_block(stmt.orelse))


def _block(suite: cst.BaseSuite) -> list[cst.BaseStatement]:
    if isinstance(suite, cst.IndentedBlock):
        return list(suite.body)
    return [cst.SimpleStatementLine(body=suite.body)]  # type: ignore[attr-defined, arg-type]


def _else_block(orelse: cst.CSTNode | None) -> list[cst.BaseStatement]:
    if orelse is None:
        return []
    if isinstance(orelse, cst.If):  # `elif`
        return [orelse]
    return _block(orelse.body)  # type: ignore[attr-defined]


def branches(node: cst.If) -> tuple[list[cst.BaseStatement], list[cst.BaseStatement]]:
    """The statements of an ``if``'s two branches (the else branch may be empty)."""
    return _block(node.body), _else_block(node.orelse)


def loop_body(node: cst.While | cst.For) -> list[cst.BaseStatement]:
    return _block(node.body)


# --- liveness ------------------------------------------------------------------------------

def live_after_each(stmts: Statements, live_out: set[str]) -> list[set[str]]:
    """For each statement of `stmts`, the names live right after it."""
    lives: list[set[str]] = []
    live = set(live_out)
    for stmt in reversed(stmts):
        lives.append(live)
        live = _live_in_statement(stmt, live)
    lives.reverse()
    return lives


def live_in(stmts: Statements, live_out: set[str]) -> set[str]:
    """The names live before `stmts` when `live_out` are live after them."""
    live = set(live_out)
    for stmt in reversed(stmts):
        live = _live_in_statement(stmt, live)
    return live


def loop_header_live(node: cst.While | cst.For, live_out: set[str]) -> set[str]:
    """The names live at a loop's header: after the loop, in its test, or read by an
    iteration before the iteration assigns them (a fixpoint over the back edge)."""
    body = loop_body(node)
    exit_live = live_in(_else_block(node.orelse), live_out)
    if isinstance(node, cst.While):
        base = exit_live | uses(node.test)
        killed: set[str] = set()
    else:
        base, killed = exit_live, set(target_names(node.target))
    header = set(base)
    while True:
        new = base | (live_in(body, header) - killed)
        if new == header:
            return header
        header = new


def _live_in_statement(stmt: cst.BaseStatement, live: set[str]) -> set[str]:
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in reversed(stmt.body):
            if isinstance(small, (cst.Return, cst.Raise)):
                live = uses(small)
            else:
                live = (live - set(binds(small))) | uses(small)
        return live
    if isinstance(stmt, cst.If):
        body, orelse = branches(stmt)
        return uses(stmt.test) | live_in(body, live) | live_in(orelse, live)
    if isinstance(stmt, cst.While):
        return loop_header_live(stmt, live)
    if isinstance(stmt, cst.For):
        return uses(stmt.iter) | loop_header_live(stmt, live)
    if isinstance(stmt, cst.FunctionDef):
        return (live - {stmt.name.value}) | uses(stmt)
    return live | uses(stmt)  # anything else: conservatively, everything it mentions


# --- lists appended to ---------------------------------------------------------------------

def appended_lists(stmts: Statements) -> list[str]:
    """Names ``xs`` with ``xs.append(...)`` (extend, insert) in `stmts` that `stmts` do not
    bind: lists defined outside that an iteration or a branch would grow."""
    bound = assigned(stmts)
    found: list[str] = []
    for stmt in stmts:
        for node in _preorder_outside_functions(stmt):
            if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                    and isinstance(node.func.value, cst.Name)
                    and node.func.attr.value in _LIST_MUTATORS
                    and node.func.value.value not in bound):
                found.append(node.func.value.value)
    return list(dict.fromkeys(found))


def _preorder_outside_functions(root: cst.CSTNode) -> Iterable[cst.CSTNode]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (cst.FunctionDef, cst.Lambda)):
            stack.extend(reversed(child_nodes(node)))
