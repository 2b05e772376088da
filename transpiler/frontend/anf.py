"""A-normal form: one operation per statement, operands are names or literal constants.

Runs after canonicalization (single final ``return``, ``for`` loops over ``range``, no
``elif``/``break``/``continue``). Every call, operator, comparison, subscript, attribute
access and container literal is hoisted, in evaluation order, into ``_tN = ...``
(``_t0, _t1, ...`` per function, skipping the user's names). Conditional expressions,
``and``/``or`` and chained comparisons become ``if`` statements (short-circuit kept).
``if``/``while`` tests become a single name; a ``while`` test is computed before the loop
and recomputed as the last statements of its body. The exact output grammar is in
/work/notes/ad_brief.md ("Frontend output contract").

Callees stay inline when they are a name or a dotted chain rooted at a non-local name
(``jnp.sum``, ``jnp.linalg.norm``) or a method on a local name (``x.sum``); a method on
anything else is called on a temporary (``_t0 = x.T`` then ``_t0.sum()``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import libcst as cst
import transpiler.frontend.match as m

from transpiler.errors import SourceLocation
from transpiler.frontend.passes import (LocatedTransformer, Locations, Stage, run_stages,
                                       walk_statements)

from transpiler.frontend.anf_nodes import (_BRANCHING, Linearized, Statements, _assign,
                                           _bare, _if, _is_constant, _is_variable,
                                           _local_names, _root_name)


class ToAnf(LocatedTransformer):
    """Hoist every operation of every statement into its own ``_tN = ...`` assignment."""

    opaque = False  # True: keep unsupported expressions and statements whole (library code)

    def __init__(self, ctx) -> None:  # type: ignore[no-untyped-def]
        super().__init__(ctx)
        self._tests: dict[cst.CSTNode, tuple[Statements, cst.BaseExpression]] = {}
        self._locals: set[str] = set()
        self._simple: dict[type, Callable[[Any], Linearized]] = {
            cst.Call: self._call, cst.BinaryOperation: self._binary,
            cst.UnaryOperation: self._unary, cst.Comparison: self._compare,
            cst.Attribute: self._attribute, cst.Subscript: self._subscript,
            cst.Tuple: self._sequence, cst.List: self._sequence, cst.Set: self._sequence,
            cst.Dict: self._dict, cst.Lambda: self._lambda,
            # kept whole, the value of a statement of their own: a list comprehension is
            # transformed as one (transforms/common/classify.py), an f-string is a static string
            cst.ListComp: self._whole, cst.DictComp: self._whole, cst.SetComp: self._whole,
            cst.FormattedString: self._whole,
        }
        self._outer_locals: list[set[str]] = []

    # ------------------------------------------------------------------ statements
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._outer_locals.append(self._locals)
        self._locals = _local_names(node)
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._locals = self._outer_locals.pop()  # a nested def: back to the enclosing one
        return updated_node

    def visit_If(self, node: cst.If) -> bool:
        self._tests[node] = self._test(node.test)
        return True

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.FlattenSentinel:
        pre, test = self._tests.pop(original_node)
        self._locate_all(pre, original_node)
        return cst.FlattenSentinel([*pre, updated_node.with_changes(test=test)])

    def visit_While(self, node: cst.While) -> bool:
        self._tests[node] = self._test(node.test)
        return True

    def leave_While(self, original_node: cst.While, updated_node: cst.While) -> cst.FlattenSentinel:
        pre, test = self._tests.pop(original_node)
        body = list(updated_node.body.body)
        if pre:  # recompute the condition at the end of every iteration
            assert isinstance(test, cst.Name)
            recompute = self._into(test.value, original_node.test)
            self._locate_all(recompute, original_node)
            body.extend(recompute)
        self._locate_all(pre, original_node)
        loop = updated_node.with_changes(test=test, body=updated_node.body.with_changes(body=body))
        return cst.FlattenSentinel([*pre, loop])

    def visit_For(self, node: cst.For) -> bool:
        if not (m.matches(node.iter, m.Call(func=m.Name("range"))) and isinstance(node.target, cst.Name)):
            raise self.ctx.error("internal: ANF expects `for NAME in range(...)` loops", node)
        self._tests[node] = self._call(node.iter)  # type: ignore[arg-type]
        return True

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.FlattenSentinel:
        pre, iterable = self._tests.pop(original_node)
        self._locate_all(pre, original_node)
        return cst.FlattenSentinel([*pre, updated_node.with_changes(iter=iterable)])

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine,
                                  updated_node: cst.SimpleStatementLine) -> cst.FlattenSentinel:
        out: Statements = []
        for small in updated_node.body:
            statements = self._statement(small)
            for statement in statements:
                self.ctx.locate(statement, self.ctx.location_of(small, original_node))
            self._locate_all(statements, original_node)
            out.extend(statements)
        return cst.FlattenSentinel(out)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                            updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        if updated_node.body:
            return updated_node
        return updated_node.with_changes(body=[cst.SimpleStatementLine(body=[cst.Pass()])])

    def _statement(self, small: cst.BaseSmallStatement) -> Statements:
        """ANF statements for one small statement."""
        if isinstance(small, cst.Assign):
            return self._assignment([t.target for t in small.targets], small.value, small)
        if isinstance(small, cst.AnnAssign):
            return self._assignment([small.target], small.value, small) if small.value else []
        if isinstance(small, cst.Return):
            value = small.value if small.value is not None else cst.Name("None")
            pre, name = self._variable(value)
            return [*pre, cst.SimpleStatementLine(body=[cst.Return(value=name)])]
        if isinstance(small, cst.Expr):
            if _is_constant(small.value):  # docstrings and bare constants do nothing
                return []
            return self._into(self.ctx.names.fresh("_t"), small.value)
        if isinstance(small, (cst.Pass, cst.Assert)) or self.opaque:  # an assert: a check
            return [cst.SimpleStatementLine(body=[small])]           # that computes nothing
        raise self.ctx.error(f"`{type(small).__name__.lower()}` statements are not supported here", small)

    def _assignment(self, targets: Sequence[cst.BaseExpression], value: cst.BaseExpression,
                    node: cst.CSTNode) -> Statements:
        if len(targets) == 1 and isinstance(targets[0], cst.Name):
            return self._into(targets[0].value, value)
        pre, source = self._variable(value)
        out = list(pre)
        for target in targets:
            if isinstance(target, (cst.Tuple, cst.List, cst.Name)):
                out.append(cst.SimpleStatementLine(body=[cst.Assign(
                    targets=[cst.AssignTarget(target=target)], value=source)]))
            elif isinstance(target, (cst.Subscript, cst.Attribute)):
                stmts, place = self._simple_of(target)  # `a[i] = v`: base and index as atoms
                out.extend(stmts)
                out.append(cst.SimpleStatementLine(body=[cst.Assign(
                    targets=[cst.AssignTarget(target=cast(cst.BaseAssignTargetExpression, place))],
                    value=source)]))
            else:
                raise self.ctx.error("unsupported assignment target", node)
        return out

    # ----------------------------------------------------------------- expressions
    def _whole(self, expr: cst.BaseExpression) -> Linearized:
        return [], expr

    def _lambda(self, expr: cst.Lambda) -> Linearized:
        """``lambda a: e`` -> a nested ``def _lambdaN(a): ...; return _tK`` (ANF inside),
        so the transforms see one kind of local function (closures included)."""
        if self.opaque:
            return [], expr
        name = self.ctx.names.fresh("_lambda")
        pre, value = self._variable(expr.body)
        ret = cst.SimpleStatementLine(body=[cst.Return(value=value)])
        func = cst.FunctionDef(name=cst.Name(name), params=expr.params,
                               body=cst.IndentedBlock(body=[*pre, ret]))
        loc = self.ctx.locations.get(expr)
        if loc is not None:
            for statement in (func, ret, *pre):
                self.ctx.locate(statement, loc)
        return [func], cst.Name(name)

    def _into(self, target: str, expr: cst.BaseExpression) -> Statements:
        """Statements that compute ``expr`` and assign it to ``target``."""
        if m.matches(expr, _BRANCHING):
            if any(n.value == target for n in m.findall(expr, m.Name()) if isinstance(n, cst.Name)):
                temp = self.ctx.names.fresh("_t")
                return [*self._branching(temp, expr), _assign(target, cst.Name(temp))]
            return self._branching(target, expr)
        pre, simple = self._simple_of(expr)
        return [*pre, _assign(target, simple)]

    def _atom(self, expr: cst.BaseExpression) -> Linearized:
        """(statements, a name or literal constant holding ``expr``)."""
        if isinstance(expr, cst.Name) or _is_constant(expr):
            return [], _bare(expr)
        return self._to_temp(expr)

    def _variable(self, expr: cst.BaseExpression) -> Linearized:
        """(statements, a variable name, never a constant, holding ``expr``)."""
        if _is_variable(expr):
            return [], _bare(expr)
        return self._to_temp(expr)

    def _to_temp(self, expr: cst.BaseExpression) -> Linearized:
        """``_tN = expr``, numbered after the temporaries of its operands."""
        if m.matches(expr, _BRANCHING) or _is_constant(expr) or isinstance(expr, cst.Name):
            temp = self.ctx.names.fresh("_t")
            return self._into(temp, expr), cst.Name(temp)
        pre, simple = self._simple_of(expr)
        temp = self.ctx.names.fresh("_t")
        return [*pre, _assign(temp, simple)], cst.Name(temp)

    def _test(self, expr: cst.BaseExpression) -> Linearized:
        return self._variable(expr)

    def _simple_of(self, expr: cst.BaseExpression) -> Linearized:
        """(statements, one operation on atoms) for ``expr``."""
        if isinstance(expr, cst.Name) or _is_constant(expr):
            return [], expr
        if m.matches(expr, _BRANCHING):
            return self._atom(expr)
        handler = self._simple.get(type(expr))
        if handler is None and self.opaque:  # library code: keep it whole; it is static
            return [], expr
        if handler is None:
            raise self.ctx.error(f"`{type(expr).__name__}` expressions are not supported "
                                 "in transformed functions", expr)
        pre, simple = handler(expr)
        if expr in self.ctx.locations:
            self.ctx.locate(simple, self.ctx.locations[expr])
        return pre, _bare(simple)

    def _atoms(self, exprs: Sequence[cst.BaseExpression]) -> tuple[Statements, list[cst.BaseExpression]]:
        pre: Statements = []
        atoms = []
        for expr in exprs:
            stmts, atom = self._atom(expr)
            pre.extend(stmts)
            atoms.append(atom)
        return pre, atoms

    def _call(self, expr: cst.Call) -> Linearized:  # type: ignore[override]
        pre, func = self._callee(expr.func)
        stmts: Statements = []
        values = []
        for arg in expr.args:
            if m.matches(arg.value, m.Call(func=m.Name("locals"), args=[])):
                values.append(arg.value)  # (generated code's scope: never held by a name,
                continue                  # or the next scope would hold itself)
            more, value = self._atom(arg.value)
            stmts.extend(more)
            values.append(value)
        args = [arg.with_changes(value=v) for arg, v in zip(expr.args, values)]
        for arg in args:
            if arg.star and not _is_variable(arg.value):
                raise self.ctx.error("unpack a named variable with `*` in calls", expr)
        return [*pre, *stmts], expr.with_changes(func=func, args=args)

    def _callee(self, func: cst.BaseExpression) -> Linearized:
        root = _root_name(func)
        if isinstance(func, cst.Name) or (root is not None and root not in self._locals):
            return [], func  # `f`, `jnp.sum`, `jnp.linalg.norm`
        if isinstance(func, cst.Attribute):  # method call: `x.sum`, `_t0.sum`
            pre, base = self._variable(func.value)
            return pre, func.with_changes(value=base)
        return self._variable(func)

    def _binary(self, expr: cst.BinaryOperation) -> Linearized:  # type: ignore[override]
        pre, (left, right) = self._atoms([expr.left, expr.right])
        if isinstance(expr.operator, cst.Power) and m.matches(left, m.UnaryOperation()):
            left = left.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return pre, expr.with_changes(left=left, right=right, operator=_one_line(expr.operator))

    def _unary(self, expr: cst.UnaryOperation) -> Linearized:  # type: ignore[override]
        pre, operand = self._atom(expr.expression)
        return pre, expr.with_changes(expression=operand)

    def _compare(self, expr: cst.Comparison) -> Linearized:  # type: ignore[override]
        (target,) = expr.comparisons
        pre, (left, right) = self._atoms([expr.left, target.comparator])
        return pre, expr.with_changes(left=left, comparisons=[_compared(target, right)])

    def _attribute(self, expr: cst.Attribute) -> Linearized:  # type: ignore[override]
        root = _root_name(expr)
        if root is not None and root not in self._locals:
            return [], expr  # a module constant: `jnp.float32`, `np.pi`
        pre, base = self._variable(expr.value)
        return pre, expr.with_changes(value=base)

    def _subscript(self, expr: cst.Subscript) -> Linearized:  # type: ignore[override]
        pre, base = self._variable(expr.value)
        elements = []
        for element in expr.slice:
            index = element.slice
            if isinstance(index, cst.Index):
                stmts, value = ([], index.value) if m.matches(index.value, m.Ellipsis()) else self._atom(index.value)
                index = index.with_changes(value=value)
            else:
                assert isinstance(index, cst.Slice)
                bounds = {k: getattr(index, k) for k in ("lower", "upper", "step") if getattr(index, k)}
                stmts, values = self._atoms(list(bounds.values()))
                index = index.with_changes(**dict(zip(bounds, values)))
            pre.extend(stmts)
            elements.append(element.with_changes(slice=index))
        return pre, expr.with_changes(value=base, slice=elements)

    def _sequence(self, expr: cst.BaseExpression) -> Linearized:
        pre: Statements = []
        elements = []
        for element in expr.elements:  # type: ignore[attr-defined]
            stmts, value = (self._variable(element.value) if isinstance(element, cst.StarredElement)
                            else self._atom(element.value))
            pre.extend(stmts)
            elements.append(element.with_changes(value=value))
        return pre, expr.with_changes(elements=elements)

    def _dict(self, expr: cst.Dict) -> Linearized:  # type: ignore[override]
        pre: Statements = []
        elements: list[cst.BaseDictElement] = []
        for element in expr.elements:
            if not isinstance(element, cst.DictElement):  # `**mapping`
                stmts, value = self._variable(element.value)
                pre.extend(stmts)
                elements.append(element.with_changes(value=value))
                continue
            key_stmts, key = self._atom(element.key)
            value_stmts, value = self._atom(element.value)
            pre.extend([*key_stmts, *value_stmts])
            elements.append(element.with_changes(key=key, value=value))
        return pre, expr.with_changes(elements=elements)

    # ---------------------------------------------------- short-circuit expressions
    def _branching(self, target: str, expr: cst.BaseExpression) -> Statements:
        """``target = expr`` for ``x if c else y``, ``a and b``, ``a or b``, ``a < b < c``."""
        if isinstance(expr, cst.IfExp):
            pre, test = self._test(expr.test)
            return [*pre, _if(test, self._into(target, expr.body),  # type: ignore[arg-type]
                              self._into(target, expr.orelse))]
        if isinstance(expr, cst.BooleanOperation):
            out = self._into(target, expr.left)
            rest = self._into(target, expr.right)
            if isinstance(expr.operator, cst.And):
                return [*out, _if(cst.Name(target), rest)]
            return [*out, _if(cst.Name(target), [cst.SimpleStatementLine(body=[cst.Pass()])], rest)]
        assert isinstance(expr, cst.Comparison)
        return self._chain(target, expr.left, list(expr.comparisons))

    def _chain(self, target: str, left: cst.BaseExpression,
               comparisons: list[cst.ComparisonTarget]) -> Statements:
        """``a < b < c`` as ``t = a < b`` then, if t, ``t = b < c`` (b evaluated once)."""
        pre, (left_atom, right_atom) = self._atoms([left, comparisons[0].comparator])
        first = cst.Comparison(left=left_atom, comparisons=[_compared(comparisons[0], right_atom)])
        out = [*pre, _assign(target, first)]
        if len(comparisons) > 1:
            rest = self._chain_rest(target, right_atom, comparisons[1:])
            out.append(_if(cst.Name(target), rest))
        return out

    def _chain_rest(self, target: str, left_atom: cst.BaseExpression,
                    comparisons: list[cst.ComparisonTarget]) -> Statements:
        pre, right_atom = self._atom(comparisons[0].comparator)
        step = cst.Comparison(left=left_atom, comparisons=[_compared(comparisons[0], right_atom)])
        out = [*pre, _assign(target, step)]
        if len(comparisons) > 1:
            out.append(_if(cst.Name(target), self._chain_rest(target, right_atom, comparisons[1:])))
        return out

    # ------------------------------------------------------------------- locations
    def _locate_all(self, statements: Statements, owner: cst.CSTNode) -> None:
        """Locate ``statements`` and the statements nested in them at ``owner``'s location."""
        loc: SourceLocation | None = self.ctx.location_of(owner)
        if loc is None:
            return
        ctx = self.ctx

        for statement in walk_statements(*statements):
            ctx.locate(statement, loc)


ANF_PASSES: list[Stage] = [Stage("to-anf", ToAnf)]


class ToAnfOpaque(ToAnf):
    """ANF for the library's own composites: constructs outside the contract (comprehensions,
    lambdas, raise, assert ...) stay whole -- they compute static values, which the
    transforms copy unchanged; one that reads a differentiated value is rejected there."""

    opaque = True


ANF_PASSES_OPAQUE: list[Stage] = [Stage("to-anf", ToAnfOpaque)]


def _one_line(operator: Any) -> Any:
    """An operator with single spaces around it: its own whitespace may hold the newline of
    a parenthesized expression that spanned lines, invalid once the expression is a
    statement of its own."""
    changes = {name: cst.SimpleWhitespace(" ") for name in
               ("whitespace_before", "whitespace_after", "whitespace_between")
               if hasattr(operator, name)}
    return operator.with_changes(**changes)


def _compared(target: cst.ComparisonTarget, comparator: cst.BaseExpression) -> cst.ComparisonTarget:
    return target.with_changes(comparator=comparator, operator=_one_line(target.operator))


def to_anf(func: cst.FunctionDef, filename: str, locations: Locations,
           opaque: bool = False) -> tuple[cst.FunctionDef, Locations]:
    """Put a canonicalized function in A-normal form; returns it and its source map."""
    return run_stages(func, filename, locations, ANF_PASSES_OPAQUE if opaque else ANF_PASSES)
