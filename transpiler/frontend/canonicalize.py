"""Canonicalization: rewrite a fenced function into the few shapes the transforms handle.

Ordered, single-purpose passes (``CANONICALIZE_PASSES``):

0. ``expand-one-line-bodies`` ``def f(x): return x`` -> an indented body
   ``generators-to-lists``    ``sum(e for v in xs)`` -> ``sum([e for v in xs])``,
   ``next(e for v in xs)`` -> ``[e for v in xs][0]``
   ``functional-item-updates`` ``y[i] = v`` -> ``y = y.at[i].set(v)`` (arrays made here)
1. ``expand-elif``           ``elif c:`` -> ``else:`` + nested ``if c:``
2. ``expand-aug-assign``     ``x += y`` -> ``x = x + y``
3. ``lower-for-loops``       ``for x in xs`` / ``enumerate`` / ``zip`` -> ``for _i in range(n)``
4. ``remove-break-continue`` ``break``/``continue``/loop ``else`` -> flags and guarded blocks
5. ``remove-early-returns``  a single ``return`` as the last statement (``_ret`` variable)

Conditional expressions, ``and``/``or`` and chained comparisons are turned into ``if``
statements by the ANF pass (`anf.py`), which knows the evaluation order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeGuard, cast

import libcst as cst
import transpiler.frontend.match as m
from transpiler.frontend.cst_templates import parse_template_expression, parse_template_statement

from transpiler.rewritten import LISTED_NAMES, SEQUENCE, WITH_ITEM
from transpiler.frontend.passes import (
    LocatedTransformer,
    Locations,
    Stage,
    parenthesize,
    run_stages,
    walk_statements,
)
from transpiler.frontend.passes import child_nodes
from transpiler.frontend.fence import starred_names
from transpiler.errors import _PACKAGE_DIR
from transpiler.frontend.fence import updatable_arrays, updatable_dicts

Statements = list[cst.BaseStatement]
Loop = cst.For | cst.While


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return parse_template_statement("{name} = {value}", name=cst.Name(name), value=value)  # type: ignore[return-value]


def _guarded(flag: str, body: Sequence[cst.BaseStatement]) -> cst.If:
    """``if not <flag>:`` around ``body``."""
    node = parse_template_statement("if not {flag}:\n    pass\n", flag=cst.Name(flag))
    assert isinstance(node, cst.If)
    return node.with_changes(body=node.body.with_changes(body=list(body)))


def _block_of(node: cst.BaseSuite) -> Statements:
    assert isinstance(node, cst.IndentedBlock), "fence rejects one-line compound statements"
    return list(node.body)


def _contains(node: cst.CSTNode, matcher: m.BaseMatcherNode) -> bool:
    return bool(m.findall(node, matcher))


def _own_returns(node: cst.CSTNode) -> list[cst.Return]:
    """The ``return`` statements under `node` that return from the function at hand (not
    those of a ``def`` nested in it)."""
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Return):
            found.append(current)
        elif not (isinstance(current, cst.FunctionDef) and current is not node):
            stack.extend(reversed(child_nodes(current)))
    return found


def _always_exits(statements: Statements) -> bool:
    """Whether every path through `statements` ends in a ``return`` or a ``raise``."""
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return isinstance(last.body[-1], (cst.Return, cst.Raise))
    if isinstance(last, cst.If) and isinstance(last.orelse, cst.Else):
        return _always_exits(_block_of(last.body)) and _always_exits(_block_of(last.orelse.body))
    return False


def _assigned_names(node: cst.CSTNode) -> set[str]:
    """Names bound anywhere in ``node`` (assignment and loop targets)."""
    names: set[str] = set()
    for target in m.findall(node, m.AssignTarget() | m.For() | m.AugAssign() | m.AnnAssign()):
        expr = target.target  # type: ignore[attr-defined]
        names.update(n.value for n in m.findall(expr, m.Name()) if isinstance(n, cst.Name))
    return names


# --------------------------------------------------------------------------- expand-elif
class ExpandOneLineBodies(LocatedTransformer):
    """``def f(x): return x`` / ``if c: y = 1`` get indented blocks like any other body."""

    def leave_SimpleStatementSuite(self, original_node: cst.SimpleStatementSuite,
                                   updated_node: cst.SimpleStatementSuite) -> cst.IndentedBlock:
        line = cst.SimpleStatementLine(body=updated_node.body)
        if original_node in self.ctx.locations:
            self.ctx.locate(line, self.ctx.locations[original_node])
        return cst.IndentedBlock(body=[line])


class GeneratorsToLists(LocatedTransformer):
    """``sum(v ** 2 for v in xs)`` -> ``sum([v ** 2 for v in xs])``: the elements are computed
    when the generator would be consumed (the consumers numeric code passes one to, such
    as ``sum``, ``max``, ``tuple`` or ``jnp.stack``, iterate it once). For the same reason
    ``map(f, xs)`` is ``list(map(f, xs))``, and ``zip``/``enumerate``/``reversed``/``sorted``
    are ``_zip``/... (transpiler/rewritten.py), which return lists: their values, not a
    one-pass iterator whose elements no transform could see, flow on. (``zip`` and
    ``enumerate`` as a ``for`` loop's own iterable stay: lower-for-loops indexes them.)"""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not hasattr(self, "_local"):  # the function itself: names it binds are its own
            self._local = _assigned_names(node) | {
                p.name.value for p in m.findall(node.params, m.Param())}  # type: ignore[attr-defined]

    def visit_For(self, node: cst.For) -> None:
        self._index(node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._index(node.iter)

    def _index(self, iterable: cst.BaseExpression) -> None:
        """A loop's iterable, and the ``zip``/``enumerate`` nested in it, as indexed."""
        self._indexed = getattr(self, "_indexed", set()) | {iterable}
        if m.matches(iterable, m.Call(func=m.Name("zip") | m.Name("enumerate"))):
            for arg in iterable.args:  # type: ignore[attr-defined]
                self._index(arg.value)

    def leave_GeneratorExp(self, original: cst.GeneratorExp, updated: cst.GeneratorExp
                           ) -> cst.BaseExpression:
        return cst.ListComp(elt=updated.elt, for_in=updated.for_in)

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """``next(e for ...)`` is ``[e for ...][0]``; with a default, ``next(iter([...]),
        default)`` (an iterator)."""
        if m.matches(updated.func, m.Name("map")) and len(updated.args) >= 2 and \
                not any(a.star or a.keyword for a in updated.args):
            return parse_template_expression("list({e})", e=updated)  # (see the docstring)
        listed = updated.func.value if isinstance(updated.func, cst.Name) else None
        if listed in LISTED_NAMES and listed not in getattr(self, "_local", ()) and not (
                listed in ("zip", "enumerate") and original in getattr(self, "_indexed", ())):
            return updated.with_changes(func=cst.Name(LISTED_NAMES[listed]))
        if m.matches(updated.func, m.Name("next")) and updated.args and \
                isinstance(original.args[0].value, cst.GeneratorExp):
            if len(updated.args) == 1:
                return parse_template_expression("{e}[0]", e=updated.args[0].value)
            first = updated.args[0].with_changes(value=parse_template_expression(
                "iter({e})", e=updated.args[0].value))
            return updated.with_changes(args=[first, *updated.args[1:]])
        return updated


# `y[i] op= v` as the `.at[i]` update that does it (others: ``.set(y[i] op v)``)
_AT_UPDATES = {cst.AddAssign: "add", cst.MultiplyAssign: "multiply",
               cst.DivideAssign: "divide", cst.PowerAssign: "power"}


class DictCallsToDisplays(LocatedTransformer):
    """``dict(a=x)`` -> ``{"a": x}``, ``dict({...}, **kw)`` -> ``{**{...}, **kw}``: a dict
    made from keywords and mappings as the display it equals, whose entries the transforms
    follow (the call's keywords they would have to differentiate through ``dict`` itself).
    A positional argument that may be a sequence of pairs (``dict(zip(ks, vs))``) keeps
    the call."""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not hasattr(self, "_shadowed"):  # the function itself: a `dict` of its own?
            self._shadowed = "dict" in _assigned_names(node) | {
                p.name.value for p in m.findall(node.params, m.Param())}  # type: ignore[attr-defined]

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if self._shadowed or not m.matches(updated.func, m.Name("dict")) or not updated.args:
            return updated
        elements: list[cst.BaseDictElement] = []
        for i, arg in enumerate(updated.args):
            if arg.keyword is not None:
                elements.append(cst.DictElement(cst.SimpleString(repr(arg.keyword.value)),
                                                arg.value))
            elif arg.star == "**" or (i == 0 and not arg.star and isinstance(
                    arg.value, (cst.Dict, cst.DictComp))):
                elements.append(cst.StarredDictElement(arg.value))
            else:
                return updated  # dict(pairs): the call
        return cst.Dict(elements)


class FunctionalItemUpdates(LocatedTransformer):
    """``y[i] = v`` -> ``y = y.at[i].set(v)``, ``y[i] += v`` -> ``y = y.at[i].add(v)``: the
    element updates the fence let through (arrays this function made and shares with no
    other name, fence.updatable_arrays), as the functional updates they amount to; of such
    a dict (fence.updatable_dicts), ``d[k] = v`` -> ``d = _with_item(d, k, v)`` (``{**d, k:
    v}``, which the transforms have rules for). (The library's own code is not fenced and
    keeps its NumPy updates.)"""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if not hasattr(self, "updatable"):  # the function itself (not a nested def)
            library = str(self.ctx.filename).startswith(_PACKAGE_DIR)
            self.updatable = set() if library else updatable_arrays(node)
            self.dicts = set() if library else updatable_dicts(node)
        return True

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        target = updated.targets[0].target if len(updated.targets) == 1 else None
        if self.updates(target, self.dicts):
            return _item_update(target, updated.value)
        if not self.updates(target, self.updatable):
            return updated
        return _at_update(target, "set", updated.value)

    def updates(self, target: Any, names: set[str]) -> TypeGuard[cst.Subscript]:
        return isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) \
            and target.value.value in names and (names is self.updatable or all(
                isinstance(element.slice, cst.Index) for element in target.slice))

    def leave_AugAssign(self, original: cst.AugAssign, updated: cst.AugAssign) -> Any:
        target = updated.target
        if self.updates(target, self.dicts):
            binary = AUG_TO_BINARY[type(updated.operator)]()
            return _item_update(target, cst.BinaryOperation(
                left=target, operator=binary, right=parenthesize(updated.value)))
        if not self.updates(target, self.updatable):
            return updated
        method = _AT_UPDATES.get(type(updated.operator))
        if method is not None:
            return _at_update(target, method, updated.value)
        if isinstance(updated.operator, cst.SubtractAssign):
            return _at_update(target, "add", cst.UnaryOperation(
                operator=cst.Minus(), expression=parenthesize(updated.value)))
        binary = AUG_TO_BINARY[type(updated.operator)]()
        return _at_update(target, "set", cst.BinaryOperation(
            left=target, operator=binary, right=parenthesize(updated.value)))


def _item_update(target: cst.Subscript, value: cst.BaseExpression) -> cst.Assign:
    """``d = _with_item(d, key, value)`` for ``d[key] = value`` (one key: a dict's)."""
    name = cast(cst.Name, target.value)  # FunctionalItemUpdates.updates: an updatable name
    keys = [cast(cst.Index, element.slice).value for element in target.slice]
    key = keys[0] if len(keys) == 1 else cst.Tuple([cst.Element(k) for k in keys])
    call = cst.Call(func=cst.Name(WITH_ITEM), args=[cst.Arg(name), cst.Arg(key), cst.Arg(value)])
    return cst.Assign(targets=[cst.AssignTarget(target=name)], value=call)


def _at_update(target: cst.Subscript, method: str, value: cst.BaseExpression) -> cst.Assign:
    name = cast(cst.Name, target.value)  # FunctionalItemUpdates.updates: an updatable name
    at = target.with_changes(value=cst.Attribute(value=name, attr=cst.Name("at")))
    call = cst.Call(func=cst.Attribute(value=at, attr=cst.Name(method)), args=[cst.Arg(value)])
    return cst.Assign(targets=[cst.AssignTarget(target=name)], value=call)


class ExpandElif(LocatedTransformer):
    """``elif c:`` becomes ``else:`` holding ``if c:``, so every ``if`` has one test."""

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        if isinstance(updated_node.orelse, cst.If):
            nested = cst.Else(body=cst.IndentedBlock(body=[updated_node.orelse]))
            return updated_node.with_changes(orelse=nested)
        return updated_node


# ---------------------------------------------------------------------- expand-aug-assign
AUG_TO_BINARY: dict[type, type] = {
    cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide, cst.FloorDivideAssign: cst.FloorDivide,
    cst.ModuloAssign: cst.Modulo, cst.PowerAssign: cst.Power,
    cst.MatrixMultiplyAssign: cst.MatrixMultiply, cst.LeftShiftAssign: cst.LeftShift,
    cst.RightShiftAssign: cst.RightShift, cst.BitAndAssign: cst.BitAnd,
    cst.BitOrAssign: cst.BitOr, cst.BitXorAssign: cst.BitXor,
}


class ExpandStarredTargets(LocatedTransformer):
    """``a, *rest, z = v`` -> ``_unpack = v; a = _unpack[0]; rest = list(_unpack[1:-1]);
    z = _unpack[-1]``: what Python's unpacking gives (the starred name a list; of an array,
    its rows), as indexing the transforms differentiate and batch."""

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine,
                                  updated: cst.SimpleStatementLine) -> Any:
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.Assign) or \
                len(updated.body[0].targets) != 1:
            return updated
        assign = updated.body[0]
        parts = starred_names(assign.targets[0].target)
        if parts is None:
            return updated
        before, star, after = parts
        seq = self.ctx.names.fresh("_unpack")
        stop = f"len({seq}) - {len(after)}" if after else ""
        lines = [f"{seq} = {{v}}"]
        lines += [f"{name} = {seq}[{i}]" for i, name in enumerate(before)]
        lines.append(f"{star} = list({seq}[{len(before)}:{stop}])")
        lines += [f"{name} = {seq}[len({seq}) - {len(after) - i}]" for i, name in enumerate(after)]
        out = [parse_template_statement(lines[0], v=assign.value)]
        out += [cst.parse_statement(line) for line in lines[1:]]
        return cst.FlattenSentinel([self.ctx.relocate(line, original) for line in out])


class ExpandAugAssign(LocatedTransformer):
    """``x op= y`` becomes ``x = x op (y)`` (subscript targets are rejected by the fence)."""

    def leave_AugAssign(self, original_node: cst.AugAssign, updated_node: cst.AugAssign) -> cst.Assign:
        if not m.matches(updated_node.target, m.Name()):
            raise self.ctx.error("augmented assignment is only supported on a plain variable",
                                 original_node, "write `x = x + y` instead")
        operator = AUG_TO_BINARY[type(updated_node.operator)]()
        value = cst.BinaryOperation(left=updated_node.target, operator=operator,
                                    right=parenthesize(updated_node.value))
        return cst.Assign(targets=[cst.AssignTarget(target=updated_node.target)], value=value)


# ------------------------------------------------------------------------ lower-for-loops
_RANGE = m.Call(func=m.Name("range"))
_DICT_VIEW = m.Call(func=m.Attribute(attr=m.Name("items") | m.Name("keys") | m.Name("values")), args=[])


# Values that are lists or tuples (indexed as they are by a lowered loop)
_SEQUENCE = (m.List() | m.Tuple() | m.ListComp()
             | m.Call(func=m.Name("list") | m.Name("tuple") | m.Name("range") | m.Name("map")
                      | m.Name(SEQUENCE) | m.Name(LISTED_NAMES["zip"])
                      | m.Name(LISTED_NAMES["enumerate"]) | m.Name(LISTED_NAMES["reversed"])
                      | m.Name(LISTED_NAMES["sorted"])))


def _sequence_names(func: cst.FunctionDef) -> set[str]:
    """Local names that only ever hold lists or tuples: every assignment to them makes one
    (parameters, loop targets and the rest may be dicts or sets)."""
    made: set[str] = set()
    other: set[str] = set()
    for node in m.findall(func, m.Assign()):
        plain = all(isinstance(t.target, cst.Name) for t in node.targets)  # type: ignore[attr-defined]
        making = plain and m.matches(node.value, _SEQUENCE)  # type: ignore[attr-defined]
        (made if making else other).update(_assigned_names(node))
    for node in m.findall(func, m.Param() | m.AsName() | m.For() | m.CompFor() | m.AugAssign()
                          | m.AnnAssign() | m.NamedExpr()):
        target = node.name if isinstance(node, (cst.Param, cst.AsName)) else node.target  # type: ignore[attr-defined]
        other.update(n.value for n in m.findall(target, m.Name()))  # type: ignore[attr-defined]
    return made - other


class LowerForLoops(LocatedTransformer):
    """``for t in seq`` becomes ``for _i in range(len(seq)): t = seq[_i]``.

    ``range(...)`` loops are kept. ``enumerate(seq[, start])`` and ``zip(a, b, ...)`` unpack
    into one index loop (nested freely); an iterable that is not a plain, loop-invariant
    name is evaluated once before the loop into ``_seqN`` (dict views through ``list``).
    """

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not hasattr(self, "_sequences"):  # the function itself (not a nested def)
            self._sequences = _sequence_names(node)

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For | cst.FlattenSentinel:
        loop = updated_node
        if m.matches(loop.iter, _RANGE) and m.matches(loop.target, m.Name()):
            return loop
        if m.matches(loop.iter, _RANGE):
            raise self.ctx.error("a range loop needs a single variable as its target", original_node)
        self._original = original_node
        self._assigned = _assigned_names(loop.body)
        self._pre: Statements = []
        index = self._index_name(loop)
        length, binds = self._unpack(loop.target, loop.iter, cst.Name(index))
        new_loop = loop.with_changes(
            target=cst.Name(index),
            iter=parse_template_expression("range({n})", n=length),
            body=loop.body.with_changes(body=[*binds, *_block_of(loop.body)]),
        )
        return cst.FlattenSentinel([*self._pre, new_loop]) if self._pre else new_loop

    def _index_name(self, loop: cst.For) -> str:
        """The user's own index of ``for i, x in enumerate(xs)``, else a fresh ``_iN``."""
        if (m.matches(loop.iter, m.Call(func=m.Name("enumerate"), args=[m.Arg(keyword=None)]))
                and m.matches(loop.target, m.Tuple(elements=[m.Element(value=m.Name()), m.Element()]))):
            return loop.target.elements[0].value.value  # type: ignore[attr-defined]
        return self.ctx.names.fresh("_i")

    def _unpack(self, target: cst.BaseExpression, seq: cst.BaseExpression,
                index: cst.Name) -> tuple[cst.BaseExpression, Statements]:
        """(length expression, statements binding ``target`` at ``index``) for ``seq``."""
        call_name = seq.func.value if m.matches(seq, m.Call(func=m.Name())) else None  # type: ignore[attr-defined]
        if call_name == "enumerate":
            return self._unpack_enumerate(target, seq, index)  # type: ignore[arg-type]
        if call_name == "zip":
            return self._unpack_zip(target, seq, index)  # type: ignore[arg-type]
        if m.matches(seq, _DICT_VIEW):
            seq = parse_template_expression("list({view})", view=seq)
        if not (m.matches(seq, m.Name()) and seq.value in self._sequences):  # type: ignore[attr-defined]
            if not m.matches(seq, _SEQUENCE):  # (a dict or set iterates as its elements)
                seq = parse_template_expression(f"{SEQUENCE}({{xs}})", xs=seq)
            seq = self._hoist(seq)
        elif seq.value in self._assigned:  # type: ignore[attr-defined]
            seq = self._hoist(seq)
        length = parse_template_expression("len({seq})", seq=seq)
        bind = parse_template_statement("{t} = {seq}[{i}]", t=target, seq=seq, i=index)
        return length, [bind]  # type: ignore[list-item]

    def _unpack_enumerate(self, target: cst.BaseExpression, seq: cst.Call,
                          index: cst.Name) -> tuple[cst.BaseExpression, Statements]:
        if not m.matches(target, m.Tuple(elements=[m.Element(), m.Element()])):
            raise self.ctx.error("unpack `enumerate` in the loop target: `for i, x in enumerate(xs)`",
                                 self._original)
        counter, rest = (element.value for element in target.elements)  # type: ignore[attr-defined]
        binds: Statements = []
        if len(seq.args) > 1:
            start = seq.args[1].value
            start = start if m.matches(start, m.Name() | m.Integer()) else self._hoist(start)
            value = parse_template_expression("{i} + {start}", i=index, start=start)
            binds.append(parse_template_statement("{t} = {v}", t=counter, v=value))  # type: ignore[arg-type]
        elif not m.matches(counter, m.Name(index.value)):
            binds.append(parse_template_statement("{t} = {i}", t=counter, i=index))  # type: ignore[arg-type]
        length, inner = self._unpack(rest, seq.args[0].value, index)
        return length, [*binds, *inner]

    def _unpack_zip(self, target: cst.BaseExpression, seq: cst.Call,
                    index: cst.Name) -> tuple[cst.BaseExpression, Statements]:
        if not (m.matches(target, m.Tuple() | m.List())
                and len(target.elements) == len(seq.args)):  # type: ignore[attr-defined]
            raise self.ctx.error(f"unpack `zip` into {len(seq.args)} loop variables", self._original)
        lengths, binds = [], []
        for element, arg in zip(target.elements, seq.args):  # type: ignore[attr-defined]
            length, bind = self._unpack(element.value, arg.value, index)
            lengths.append(cst.Arg(value=length))
            binds.extend(bind)
        if len(lengths) == 1:
            return lengths[0].value, binds
        return cst.Call(func=cst.Name("min"), args=lengths), binds

    def _hoist(self, expr: cst.BaseExpression) -> cst.Name:
        """Evaluate ``expr`` once, before the loop, into a fresh ``_seqN``."""
        name = self.ctx.names.fresh("_seq")
        self._pre.append(_assign(name, expr))
        return cst.Name(name)


# ------------------------------------------------------------------- remove-break-continue
_JUMP = m.Break() | m.Continue()


class RemoveBreakContinue(LocatedTransformer):
    """``break``/``continue`` become flags; the code after them runs under ``if not flag``.

    ``break`` sets ``_brkN`` (checked by ``while not _brkN and (test)`` or by an ``if`` around
    a ``for`` body, whose user-visible target is then assigned inside that guard so it keeps
    Python's value after a break); ``continue`` sets ``_contN``, reset at the top of each
    iteration. A loop ``else`` runs after the loop (under ``if not _brkN`` when it breaks).
    Nested loops are rewritten first (bottom-up), so remaining jumps belong to this loop.
    """

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For | cst.FlattenSentinel:
        return self._rewrite(original_node, updated_node)

    def leave_While(self, original_node: cst.While, updated_node: cst.While) -> cst.While | cst.FlattenSentinel:
        return self._rewrite(original_node, updated_node)

    def _rewrite(self, original: Loop, loop: Loop):  # type: ignore[no-untyped-def]
        has_break = _contains(loop.body, m.Break())
        has_continue = _contains(loop.body, m.Continue())
        if not (has_break or has_continue or loop.orelse):
            return loop
        loc = self.ctx.location_of(original)
        brk = self.ctx.names.fresh("_brk") if has_break else None
        cont = self.ctx.names.fresh("_cont") if has_continue else None
        body = self._guard_block(_block_of(loop.body), brk, cont)
        if cont:
            body.insert(0, _assign(cont, cst.Name("False")))
        before: Statements = []
        if brk:
            before.append(_assign(brk, cst.Name("False")))
            loop = self._stop_on_break(loop, brk, body)
        else:
            loop = loop.with_changes(body=loop.body.with_changes(body=body))
        after: Statements = []
        if loop.orelse is not None:
            else_body = _block_of(loop.orelse.body)
            after = [_guarded(brk, else_body)] if brk else else_body
            loop = loop.with_changes(orelse=None)
        for statement in (*before, *after):
            self.ctx.locate(statement, loc)
        return cst.FlattenSentinel([*before, loop, *after])

    def _stop_on_break(self, loop: Loop, brk: str, body: Statements) -> Loop:
        if isinstance(loop, cst.While):
            test = parse_template_expression("not {brk} and {test}", brk=cst.Name(brk),
                                             test=parenthesize(loop.test))
            return loop.with_changes(test=test, body=loop.body.with_changes(body=body))
        target = loop.target
        if not (m.matches(target, m.Name()) and target.value in self.ctx.names.generated):  # type: ignore[attr-defined]
            index = cst.Name(self.ctx.names.fresh("_i"))
            body.insert(0, parse_template_statement("{t} = {i}", t=target, i=index))  # type: ignore[arg-type]
            loop = loop.with_changes(target=index)
        return loop.with_changes(body=loop.body.with_changes(body=[_guarded(brk, body)]))

    def _guard_block(self, statements: Statements, brk: str | None, cont: str | None) -> Statements:
        """``statements`` with jumps replaced by flag assignments and what follows guarded."""
        guard_flag = cont or brk
        assert guard_flag is not None or not any(_contains(s, _JUMP) for s in statements)
        out: Statements = []
        for k, statement in enumerate(statements):
            if isinstance(statement, cst.SimpleStatementLine) and _contains(statement, _JUMP):
                out.append(self._replace_jumps(statement, brk, cont))
                return out  # the rest of this block is unreachable
            if isinstance(statement, cst.If) and _contains(statement, _JUMP):
                out.append(self._guard_if(statement, brk, cont))
                rest = self._guard_block(statements[k + 1:], brk, cont)
                if rest:
                    guard = _guarded(guard_flag, rest)  # type: ignore[arg-type]
                    self.ctx.locate(guard, self.ctx.location_of(statement))
                    out.append(guard)
                return out
            out.append(statement)
        return out

    def _guard_if(self, node: cst.If, brk: str | None, cont: str | None) -> cst.If:
        body = node.body.with_changes(body=self._guard_block(_block_of(node.body), brk, cont))
        orelse = node.orelse
        if orelse is not None:
            else_block = self._guard_block(_block_of(orelse.body), brk, cont)  # type: ignore[arg-type]
            orelse = orelse.with_changes(body=orelse.body.with_changes(body=else_block))
        return self.ctx.relocate(node.with_changes(body=body, orelse=orelse), node)

    def _replace_jumps(self, line: cst.SimpleStatementLine, brk: str | None,
                       cont: str | None) -> cst.SimpleStatementLine:
        kept: list[cst.BaseSmallStatement] = []
        for small in line.body:
            if m.matches(small, _JUMP):
                flags = [cont] if isinstance(small, cst.Continue) else [brk, cont]
                for flag in filter(None, flags):
                    assign = _assign(flag, cst.Name("True")).body[0]
                    self.ctx.locate(assign, self.ctx.location_of(small, line))
                    kept.append(assign)
                break
            kept.append(small)
        return self.ctx.relocate(line.with_changes(body=kept), line)


# -------------------------------------------------------------------- remove-early-returns
class RemoveEarlyReturns(LocatedTransformer):
    """One ``return`` per function, as its last statement.

    A function that can fall off its end gets ``return None``. Code after an ``if`` that
    may return moves into the branches that do not (so each path ends in a return); each
    ``return e`` then becomes ``_ret = e`` and the function ends in ``return _ret``.
    ``return`` inside a loop is a `TranspileError` for now.
    """

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        for loop in m.findall(updated_node.body, m.For() | m.While()):
            for ret in _own_returns(loop):
                raise self.ctx.error(
                    "`return` inside a loop is not supported yet", ret,
                    "restructure the loop: keep the result in a variable (and `break`), "
                    "then return after the loop")
        body = _block_of(updated_node.body)
        returns = _own_returns(updated_node.body)
        if not (body and m.matches(body[-1], m.SimpleStatementLine(body=[m.Return()]))):
            final = cst.SimpleStatementLine(body=[cst.Return(value=cst.Name("None"))])
            self.ctx.locate_line(final, self.ctx.location_of(original_node))
            body.append(final)
            returns = [*returns, cast(cst.Return, final.body[0])]
        if len(returns) > 1:
            result = self.ctx.names.fresh_plain("_ret")
            final = cst.SimpleStatementLine(body=[cst.Return(value=cst.Name(result))])
            self.ctx.locate_line(final, self.ctx.location_of(returns[-1]))
            body = [*self._assign_returns(body, result), final]
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))

    def _assign_returns(self, statements: Statements, result: str) -> Statements:
        out: Statements = []
        for k, statement in enumerate(statements):
            if isinstance(statement, cst.SimpleStatementLine) and _contains(statement, m.Return()):
                out.append(self._replace_return(statement, result))
                return out  # unreachable after a return
            if isinstance(statement, cst.If) and _own_returns(statement):
                rest = statements[k + 1:]
                body = self._assign_returns([*_block_of(statement.body), *rest], result)
                else_block = _block_of(statement.orelse.body) if statement.orelse else []  # type: ignore[arg-type]
                orelse = cst.Else(body=cst.IndentedBlock(
                    body=self._assign_returns([*else_block, *rest], result)))
                out.append(self.ctx.relocate(statement.with_changes(
                    body=statement.body.with_changes(body=body), orelse=orelse), statement))
                return out
            if isinstance(statement, cst.Try) and _own_returns(statement):
                out.append(self._try_returns(statement, statements[k + 1:], result))
                return out
            out.append(statement)
        return out

    def _try_returns(self, statement: cst.Try, rest: Statements, result: str) -> cst.Try:
        """A ``try`` with a ``return`` in its body or handlers. The code after it runs when
        the body completes (it moves into the ``else:`` clause, whose exceptions the
        handlers do not catch, as after the ``try``) or after a handler that completes
        (it moves into that handler); a body that returns on every path leaves it to the
        handlers."""
        body = _block_of(statement.body)
        if statement.orelse is not None or statement.finalbody is not None or (
                _own_returns(statement.body) and not _always_exits(body)):
            raise self.ctx.error(
                "`return` inside this `try` is not supported yet (a `try` with `else:` or "
                "`finally:`, or whose body returns on some paths only)",
                _own_returns(statement)[0],
                "keep the result in a variable and return it after the try")
        handlers = []
        for handler in statement.handlers:
            own = _block_of(handler.body)
            own = own if _always_exits(own) else [*own, *rest]
            handlers.append(handler.with_changes(body=handler.body.with_changes(
                body=self._assign_returns(own, result))))
        new = statement.with_changes(body=statement.body.with_changes(
            body=self._assign_returns(body, result)), handlers=handlers)
        if not _always_exits(body) and rest:
            new = new.with_changes(orelse=cst.Else(body=cst.IndentedBlock(
                body=self._assign_returns(list(rest), result))))
        return self.ctx.relocate(new, statement)

    def _replace_return(self, line: cst.SimpleStatementLine, result: str) -> cst.SimpleStatementLine:
        kept: list[cst.BaseSmallStatement] = []
        for small in line.body:
            if isinstance(small, cst.Return):
                value = small.value if small.value is not None else cst.Name("None")
                assign = _assign(result, value)
                self.ctx.locate_line(assign, self.ctx.location_of(small, line))
                if len(kept) == 0:
                    return assign
                kept.append(assign.body[0])
                break
            kept.append(small)
        return self.ctx.relocate(line.with_changes(body=kept), line)


CANONICALIZE_PASSES: list[Stage] = [
    Stage("expand-one-line-bodies", ExpandOneLineBodies, triggers=(cst.SimpleStatementSuite,)),
    Stage("generators-to-lists", GeneratorsToLists, needed=lambda func, counts: bool(
        counts[cst.GeneratorExp]) or any(m.matches(n, m.Call(func=m.Name()))
                                         and cast(cst.Name, n.func).value in _ITERATOR_CALLS
                                         for n in _calls(func))),
    Stage("dict-calls-to-displays", DictCallsToDisplays, needed=lambda func, counts: any(
        m.matches(n, m.Call(func=m.Name("dict"))) for n in _calls(func))),
    Stage("functional-item-updates", FunctionalItemUpdates, triggers=(cst.Subscript,)),
    Stage("expand-elif", ExpandElif, triggers=(cst.If,), needed=lambda func, counts: any(
        isinstance(s, cst.If) and isinstance(s.orelse, cst.If)
        for s in walk_statements(func.body))),
    Stage("expand-aug-assign", ExpandAugAssign, triggers=(cst.AugAssign,)),
    Stage("expand-starred-targets", ExpandStarredTargets, triggers=(cst.StarredElement,)),
    Stage("lower-for-loops", LowerForLoops, triggers=(cst.For,)),
    Stage("remove-break-continue", RemoveBreakContinue, needed=lambda func, counts: bool(
        counts[cst.Break] or counts[cst.Continue] or any(
            isinstance(s, (cst.For, cst.While)) and s.orelse is not None
            for s in walk_statements(func.body)))),
    Stage("remove-early-returns", RemoveEarlyReturns, needed=lambda func, counts: not (
        counts[cst.Return] == 1 and counts[cst.FunctionDef] == 1 and _ends_in_return(func))),
]


_ITERATOR_CALLS: frozenset[str] = frozenset({"map", *LISTED_NAMES})


def _calls(func: cst.FunctionDef) -> list[cst.Call]:
    return m.findall(func, m.Call())  # type: ignore[return-value]


def _ends_in_return(func: cst.FunctionDef) -> bool:
    """Whether the last statement of `func`'s (indented) body is a lone ``return``."""
    body = func.body.body
    return (isinstance(func.body, cst.IndentedBlock) and bool(body)
            and m.matches(body[-1], m.SimpleStatementLine(body=[m.Return()])))


def canonicalize_function(
    func: cst.FunctionDef, filename: str, locations: Locations
) -> tuple[cst.FunctionDef, Locations]:
    """Run ``CANONICALIZE_PASSES`` on a fenced function; returns it and its source map."""
    return run_stages(func, filename, locations, CANONICALIZE_PASSES)
