"""Expressions in code converted by `autograph.py`: calls, conditions, ``a if c else b``.

- a call of a function of the user's that has control flow (or of a local whose value is
  only known at run time) -> ``_cf.call(f, ...)``; calls of transpiler's, NumPy's and
  Python's own functions, and methods of local values, stay direct;
- ``and`` / ``or`` / ``not`` in a condition -> ``_cf.and_(lambda: a, lambda: b)`` ...
  (elementwise on traced values, Python's short circuit otherwise);
- ``a if c else b`` -> ``_cf.if_exp(c, lambda: a, lambda: b, _cf_info[N])``;
- ``locals()`` -> ``_cf.bound(locals())`` (derivative code reads a loop iteration's locals);
- a condition that is a Python bool whatever the values (``x is None``) keeps its ``if``.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

import libcst as cst

from transpiler.frontend.passes import PassContext

if TYPE_CHECKING:
    from transpiler.transforms.autograph import ConversionOptions

_MISSING = object()


def parsed(code: str) -> cst.BaseExpression:
    """An expression parsed from `code`."""
    return cst.parse_expression(code)


class ConvertExpressions:
    """The expression half of ``ConvertControlFlow`` (a mixin: it shares its state)."""

    ctx: PassContext
    opts: ConversionOptions
    local_names: set[str]

    def reserve(self) -> int:
        raise NotImplementedError

    def info(self, index: int, **fields: Any) -> cst.BaseExpression:
        raise NotImplementedError

    def runtime(self, fn: str, *args: cst.BaseExpression) -> cst.Call:
        return cst.Call(func=parsed(f"{self.opts.cf_name}.{fn}"),
                        args=[cst.Arg(value) for value in args])

    def expressions(self, line: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
        new = line.visit(RewriteCalls(self))
        assert isinstance(new, cst.SimpleStatementLine)
        return self.ctx.relocate(new, line)

    def expression(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        new = expr.visit(RewriteCalls(self))
        assert isinstance(new, cst.BaseExpression)
        return new

    def test(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """A condition: calls rewritten, then ``and``/``or``/``not`` on the runtime."""
        return self.boolean(self.expression(expr))

    def boolean(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        if isinstance(expr, cst.BooleanOperation):
            op = "and_" if isinstance(expr.operator, cst.And) else "or_"
            operands = self.chain(expr, type(expr.operator))
            return self.runtime(op, *[cst.Lambda(params=cst.Parameters(), body=self.boolean(x))
                                      for x in operands])
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return self.runtime("not_", self.boolean(expr.expression))
        return expr

    def chain(self, expr: cst.BaseExpression, op: type) -> list[cst.BaseExpression]:
        """``a and b and c`` -> [a, b, c] (same operator, no parentheses in between)."""
        if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, op) \
                and not expr.lpar:
            return [*self.chain(expr.left, op), *self.chain(expr.right, op)]
        return [expr.with_changes(lpar=[], rpar=[]) if isinstance(
            expr, cst.BooleanOperation) else expr]

    def wraps(self, func: cst.BaseExpression) -> bool:
        """Whether a call of `func` goes through ``_cf.call``: a function of the user's
        that needs converting, or a callee only known at run time (a local variable,
        ``grad(f)(x)``, ``layers[0](x)``)."""
        from transpiler.transforms.autograph_runtime import needs_conversion
        if isinstance(func, (cst.Call, cst.Subscript)):
            return True
        chain: list[str] = []
        root = func
        while isinstance(root, cst.Attribute):
            chain.append(root.attr.value)
            root = root.value
        if not isinstance(root, cst.Name) or root.value == self.opts.cf_name:
            return False
        if root.value in self.local_names:
            return not chain  # `f(x)` with a local `f`; methods of local values stay direct
        value = self.opts.namespace.get(root.value, _MISSING)
        for attr in reversed(chain):
            value = getattr(value, attr, _MISSING)
        return value is not _MISSING and needs_conversion(value)

    def is_static_test(self, test: cst.BaseExpression) -> bool:
        """Whether a condition is a Python bool whatever the values: ``x is None``,
        ``isinstance(...)`` (derivative code guards with ``if x_bar is not None:``)."""
        if isinstance(test, cst.Comparison):
            return all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in test.comparisons)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self.is_static_test(test.expression)
        if isinstance(test, cst.BooleanOperation):
            return self.is_static_test(test.left) and self.is_static_test(test.right)
        if isinstance(test, cst.Call) and isinstance(test.func, cst.Name):
            name = test.func.value
            return (name in ("isinstance", "hasattr", "callable") and name not in
                    self.local_names and self.opts.namespace.get(name) is getattr(builtins, name))
        return isinstance(test, cst.Name) and test.value in ("True", "False")


class RewriteCalls(cst.CSTTransformer):
    """Calls to convert -> ``_cf.call(f, ...)``; ``a if c else b`` -> ``_cf.if_exp``;
    ``locals()`` -> ``_cf.bound(locals())``. Nested ``def``s and ``lambda``s are skipped."""

    def __init__(self, owner: ConvertExpressions) -> None:
        super().__init__()
        self.owner = owner

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        owner = self.owner
        func = updated_node.func
        if (isinstance(func, cst.Name) and func.value == "locals" and not updated_node.args
                and "locals" not in owner.local_names):
            return owner.runtime("bound", updated_node)
        if owner.wraps(func):
            return updated_node.with_changes(func=parsed(f"{owner.opts.cf_name}.call"),
                                             args=[cst.Arg(func), *updated_node.args])
        return updated_node

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.Call:
        owner = self.owner
        code = cst.Module(body=[]).code_for_node(original_node).strip()
        info = owner.info(owner.reserve(), kind="conditional expression",
                          loc=owner.ctx.location_of(original_node), names=(), outs=(code,),
                          assigned=({}, {}))
        branches = [cst.Lambda(params=cst.Parameters(), body=x)
                    for x in (updated_node.body, updated_node.orelse)]
        return owner.runtime("if_exp", owner.boolean(updated_node.test), *branches, info)
