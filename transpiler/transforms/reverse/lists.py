"""Lists in reverse mode: which lists a function builds itself (``xs = []`` and appends,
never shared while appended to), whose ``xs.append(v)`` becomes ``xs = ad.appended(xs, v)``
so that the list is a value like any other (its versions on the loop tapes, its cotangent a
list); appends to any other list stay in place, and ReverseAD refuses them where a
derivative would flow (`MUTATORS`)."""

from __future__ import annotations

from typing import Any, cast

import libcst as cst

from transpiler.transforms.common.rename import assigned_names
from transpiler.transforms.common.statements import _append, _assign, _block


MUTATORS = frozenset({"append", "extend", "insert", "setdefault", "__setitem__"})


def lists_built_here(stmts: list[cst.BaseStatement], params: set[str]) -> set[str]:
    """Names only ever assigned list displays (``xs = []``) and not copied to another name
    (``ys = xs``) while they are still appended to: appending to them in place or
    functionally is then the same. (A copy after the last append -- a comprehension's
    result, ``_t0 = _c1`` -- sees the finished list either way.)"""
    displays: set[str] = set()
    other: set[str] = set(params)
    # per list: the loops every one of its displays is inside (each iteration a new list)
    display_loops: dict[str, set[int]] = {}
    last_append: dict[str, int] = {}
    append_loops: dict[str, set[int]] = {}
    copies: list[tuple[str, int, tuple[int, ...]]] = []
    for position, (stmt, loops) in enumerate(walk_in_loops(stmts, ())):
        append = _append(stmt)
        if append is not None:
            last_append[append[0]] = position
            append_loops.setdefault(append[0], set()).update(loops)
            continue
        assign = _assign(stmt)
        if assign is None:
            continue
        if isinstance(assign.value, cst.Name):
            copies.append((assign.value.value, position, loops))
        for target in assign.targets:
            pairs = [(target.target, assign.value)]
            if isinstance(target.target, cst.Tuple) and isinstance(assign.value, cst.Tuple) \
                    and len(target.target.elements) == len(assign.value.elements):
                pairs = [(cast(cst.BaseAssignTargetExpression, t.value), v.value)
                         for t, v in zip(target.target.elements, assign.value.elements)]
            for target_node, value in pairs:  # (`xs, start = [], 0` too)
                for name in assigned_names(target_node):
                    display = isinstance(value, cst.List) and isinstance(target_node, cst.Name)
                    (displays if display else other).add(name)
                    if display:
                        display_loops[name] = display_loops.get(name, set(loops)) & set(loops)
    for name, position, loops in copies:  # another name that may see later appends
        # (appends in a later iteration of a loop that makes the list anew each time go to
        # the new list: a comprehension in a loop body, its result copied after it)
        later = append_loops.get(name, set()) & set(loops) - display_loops.get(name, set())
        if position < last_append.get(name, -1) or later:
            other.add(name)
    return displays - other


def walk_in_loops(stmts: list[cst.BaseStatement], loops: tuple[int, ...]) -> Any:
    """Every simple statement of `stmts` with the loops around it (as ids)."""
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield stmt, loops
        elif isinstance(stmt, cst.BaseCompoundStatement) and not isinstance(stmt, cst.FunctionDef):
            inner = loops + (id(stmt),) if isinstance(stmt, (cst.For, cst.While)) else loops
            yield from walk_in_loops(_block(stmt.body), inner)
            orelse = getattr(stmt, "orelse", None)
            while orelse is not None:
                yield from walk_in_loops(_block(orelse.body), inner)
                orelse = getattr(orelse, "orelse", None)


def rewrite_appends(stmts: list[cst.BaseStatement], built: set[str], alias: str,
                     locations: dict) -> list[cst.BaseStatement]:
    out: list[cst.BaseStatement] = []
    for stmt in stmts:
        append = _append(stmt)
        if append is not None and append[0] in built:
            new = cst.parse_statement(f"{append[0]} = {alias}.appended({append[0]}, {append[1]})")
            if stmt in locations:
                locations[new] = locations[stmt]
            out.append(new)
            continue
        if isinstance(stmt, cst.BaseCompoundStatement) and not isinstance(stmt, cst.FunctionDef):
            stmt = _rewrite_blocks(stmt, built, alias, locations)
        out.append(stmt)
    return out


def _rewrite_blocks(stmt: Any, built: set[str], alias: str, locations: dict) -> Any:
    body = stmt.body.with_changes(body=rewrite_appends(_block(stmt.body), built, alias,
                                                        locations))
    changes: dict[str, Any] = {"body": body}
    orelse = getattr(stmt, "orelse", None)
    if orelse is not None:
        changes["orelse"] = _rewrite_blocks(orelse, built, alias, locations)
    new = stmt.with_changes(**changes)
    if stmt in locations:
        locations[new] = locations[stmt]
    return new
