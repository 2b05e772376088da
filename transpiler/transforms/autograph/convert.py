"""Control flow on traced values: Python ``if``/``while``/``for`` -> ``lax`` control flow.

The ``convert-control-flow`` pass (AutoGraph's functional form) rewrites each construct of
a canonical function (see `convert_function` for the pipeline) into nested functions that
take the variables it carries and return them, and one call into the runtime
(`autograph/runtime.py`, ``_cf`` in the generated code), which runs plain Python when the
condition or the bounds are concrete and ``lax.cond`` / ``while_loop`` / ``fori_loop`` when
they are traced::

    if x > 0:                         def _if_true_0(y):
        y = jnp.sin(x)                    y = jnp.sin(x)
    else:                      ->         return (y,)
        y = x * x                     def _if_false_0(y):
                                          y = x * x
                                          return (y,)
                                      (y,) = _cf.if_stmt(x > 0, _if_true_0, _if_false_0,
                                                         (_cf.Undefined('y'),), _cf_info[0])

- ``while test: body`` -> ``_while_cond_N`` / ``_while_body_N`` and ``_cf.while_stmt``;
- ``for i in range(a, b, c): body`` -> ``_for_body_N(i, ...)`` and ``_cf.for_range``; other
  ``for`` loops (over lists, tuples, dicts) stay Python loops;
- ``and``/``or``/``not`` in conditions and ``a if c else b`` anywhere -> ``_cf.and_`` ...;
- calls to the user's functions -> ``_cf.call(f, ...)``, which converts `f` when needed;
  calls to transpiler's, NumPy's and Python's own functions stay direct;
- ``locals()`` -> ``_cf.bound(locals())`` (derivative code reads a loop iteration's locals);
- a condition that is a Python bool whatever the values (``x is None``) keeps its ``if``.

A construct carries the variables it assigns that are live after it (or, for a loop, at
its header); the static facts the runtime needs for its checks and errors (names, the
lines where each is set) are a `ConstructInfo` per construct, ``_cf_info[N]``. Nested
``def``s and ``lambda``s of the user are left as they are (a nested function with control
flow is converted when the converted code calls it, through ``_cf.call``).

Using it: `jit` traces the converted function (transpiler/jit.py); ``jit(f).converted_source``
prints it, and ``autograph.runtime.convert(f)`` returns it (with ``.source``; it also runs
eagerly, exactly like `f`).
"""

from __future__ import annotations

import builtins
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Optional

import libcst as cst

from transpiler.errors import GENERATED_SOURCE_MAPS, SourceLocation
from transpiler.frontend import REWRITE_BUILTINS, read_function
from transpiler.rewritten import INTRODUCED
from transpiler.transforms.autograph.cache import CONVERSIONS, is_generated
from transpiler.frontend.canonicalize import CANONICALIZE_PASSES
from transpiler.frontend.passes import (
    LocatedTransformer,
    PassContext,
    Stage,
    iter_statements,
    run_stages,
)
from transpiler.transforms.autograph import analysis as a
from transpiler.transforms.autograph.state import ConstructInfo
from transpiler.codegen import emit
from transpiler.transforms.autograph import runtime as autograph_runtime
from transpiler.transforms.autograph.runtime import needs_conversion

Statements = list[cst.BaseStatement]
# ``for x in xs`` stays a Python loop here (LowerForLoops would index a dict by position).
_CANONICAL = [stage for stage in CANONICALIZE_PASSES if stage.name != "lower-for-loops"]


@dataclass
class ConversionOptions:
    """What the pass needs to know about the function it converts (and what it records)."""

    name: str                                 # the converted function's name
    namespace: dict[str, Any]                 # the function's free names, resolved
    generated: bool = False                   # transform-generated code (derivatives)
    cf_name: str = "_cf"                      # chosen by the pass: the runtime module
    info_name: str = "_cf_info"               # chosen by the pass: the ConstructInfo tuple
    infos: list[ConstructInfo] = field(default_factory=list)


_MISSING = object()


def parsed(code: str) -> cst.BaseExpression:
    """An expression parsed from `code`."""
    return cst.parse_expression(code)


def _tuple(items: list[cst.BaseExpression]) -> cst.Tuple:
    return cst.Tuple(elements=[cst.Element(item) for item in items])


def _names(names: list[str]) -> cst.Tuple:
    return _tuple([cst.Name(n) for n in names])


def _def(name: str, params: list[str], body: Statements,
         result: Optional[cst.BaseExpression]) -> cst.FunctionDef:
    tail: Statements = []
    if result is not None:
        tail = [cst.SimpleStatementLine(body=[cst.Return(value=result)])]
    return cst.FunctionDef(
        name=cst.Name(name),
        params=cst.Parameters(params=[cst.Param(cst.Name(p)) for p in params]),
        body=cst.IndentedBlock(body=[*body, *tail] or [cst.SimpleStatementLine([cst.Pass()])]))


class ConvertControlFlow(LocatedTransformer):
    """Stage ``convert-control-flow``: see the module docstring."""

    options: ClassVar[ConversionOptions]

    def __init__(self, ctx: PassContext) -> None:
        super().__init__(ctx)
        self.opts = self.options
        self.opts.cf_name = ctx.names.fresh_plain("_cf")
        self.opts.info_name = ctx.names.fresh_plain("_cf_info")
        self.local_names: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # the whole function is converted when leaving it

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        func = updated_node
        params = a.parameter_names(func)
        body = a.loop_body(func)  # type: ignore[arg-type]
        self.local_names = set(params) | a.assigned(body)
        here = self.ctx.location_of(original_node)
        converted = self.block(body, set(), {p: here for p in params})
        return func.with_changes(name=cst.Name(self.opts.name),
                                 body=func.body.with_changes(body=converted))

    # --- blocks ----------------------------------------------------------------------------
    def block(self, stmts: Statements, live_out: set[str],
              defined: dict[str, Optional[SourceLocation]]) -> Statements:
        """`stmts` converted; `defined` (names that may be bound here -> where) is updated."""
        out: Statements = []
        for stmt, after in zip(stmts, a.live_after_each(stmts, live_out)):
            if isinstance(stmt, cst.If):
                new, bound = self.convert_if(stmt, after, defined)
            elif isinstance(stmt, cst.While) and stmt.orelse is None:
                new, bound = self.convert_while(stmt, after, defined)
            elif isinstance(stmt, cst.For) and self.is_range_loop(stmt):
                new, bound = self.convert_for(stmt, after, defined)
            elif isinstance(stmt, (cst.For, cst.While)):
                new, bound = self.python_loop(stmt, after, defined), a.assigned_in_order([stmt])
            elif isinstance(stmt, cst.SimpleStatementLine):
                new, bound = [self.expressions(stmt)], a.assigned_in_order([stmt])
            else:
                new, bound = [stmt], a.assigned_in_order([stmt])
            out.extend(new)
            here = a.last_assignments([stmt])
            for name in bound:
                defined[name] = self.loc(here.get(name, stmt))
        return out

    def loc(self, node: cst.CSTNode) -> Optional[SourceLocation]:
        return self.ctx.location_of(getattr(node, "value", None), node)

    def state(self, names: list[str], defined: dict) -> cst.Tuple:
        """The values passed in: each name, or ``_cf.Undefined('name')`` when unbound."""
        return _tuple([cst.Name(n) if n in defined else
                       parsed(f"{self.opts.cf_name}.Undefined({n!r})") for n in names])

    def reserve(self) -> int:
        """The index of the next construct's `ConstructInfo` (numbered in source order)."""
        self.opts.infos.append(None)  # type: ignore[arg-type]
        return len(self.opts.infos) - 1

    def info(self, index: int, **fields: Any) -> cst.BaseExpression:
        self.opts.infos[index] = ConstructInfo(generated=self.opts.generated, **fields)
        return parsed(f"{self.opts.info_name}[{index}]")

    def fresh(self, prefix: str) -> str:
        return self.ctx.names.fresh(prefix)

    def result_line(self, outs: list[str], call: cst.BaseExpression,
                    node: cst.CSTNode) -> cst.SimpleStatementLine:
        small: cst.BaseSmallStatement = (
            cst.Assign(targets=[cst.AssignTarget(_names(outs))], value=call) if outs
            else cst.Expr(call))
        line = cst.SimpleStatementLine(body=[small])
        self.ctx.locate_line(line, self.ctx.location_of(node))
        return line

    def placed(self, stmts: Statements, node: cst.CSTNode) -> Statements:
        """Locate generated statements at `node`; the first keeps `node`'s comments."""
        for stmt in stmts:
            self.ctx.locate(stmt, self.ctx.location_of(node))
        first = stmts[0]
        if isinstance(first, cst.FunctionDef):
            stmts[0] = first.with_changes(leading_lines=node.leading_lines)  # type: ignore
            self.ctx.locate(stmts[0], self.ctx.location_of(node))
        return stmts

    def assignments(self, stmts: Statements) -> dict[str, Optional[SourceLocation]]:
        return {name: self.loc(node) for name, node in a.last_assignments(stmts).items()}

    # --- if --------------------------------------------------------------------------------
    def convert_if(self, node: cst.If, after: set[str],
                   defined: dict) -> tuple[Statements, list[str]]:
        true_stmts, false_stmts = a.branches(node)
        if self.is_static_test(node.test):
            return self.python_if(node, after, defined)
        index = self.reserve()
        order = a.assigned_in_order([*true_stmts, *false_stmts])
        read = a.live_in(true_stmts, after) | a.live_in(false_stmts, after) | after
        ins = [n for n in order if n in read]
        outs = [n for n in ins if n in after]
        inner = {**defined, **{n: defined.get(n) for n in ins}}
        true_name, false_name = self.fresh("_if_true_"), self.fresh("_if_false_")
        true_def = _def(true_name, ins, self.block(true_stmts, set(outs), dict(inner)),
                        _names(outs))
        false_def = _def(false_name, ins, self.block(false_stmts, set(outs), dict(inner)),
                         _names(outs))
        info = self.info(index, kind="if", loc=self.ctx.location_of(node), names=tuple(ins),
                         outs=tuple(outs), assigned=(self.assignments(true_stmts),
                                                     self.assignments(false_stmts)),
                         defined={n: defined[n] for n in ins if n in defined},
                         appends=tuple(a.appended_lists([*true_stmts, *false_stmts])))
        call = self.runtime("if_stmt", self.test(node.test), cst.Name(true_name),
                            cst.Name(false_name), self.state(ins, defined), info)
        return self.placed([true_def, false_def, self.result_line(outs, call, node)], node), outs

    def python_if(self, node: cst.If, after: set[str],
                  defined: dict) -> tuple[Statements, list[str]]:
        """An ``if`` on a static condition stays Python: its branches converted in place.
        Variables it may leave unbound that a later construct reads start as undefined."""
        true_stmts, false_stmts = a.branches(node)
        bound = a.assigned_in_order([*true_stmts, *false_stmts])
        pre = self.undefined_first([n for n in bound if n in after and n not in defined], node)
        scopes = [dict(defined), dict(defined)]
        body = node.body.with_changes(body=self.block(true_stmts, after, scopes[0]))
        orelse = node.orelse
        if orelse is not None:
            orelse = orelse.with_changes(body=orelse.body.with_changes(
                body=self.block(false_stmts, after, scopes[1])))
        new = self.ctx.relocate(node.with_changes(test=self.expression(node.test), body=body,
                                                  orelse=orelse), node)
        for scope in scopes:
            defined.update({n: loc for n, loc in scope.items() if n not in defined})
        return [*pre, new], []

    def undefined_first(self, names: list[str], node: cst.CSTNode) -> Statements:
        """``name = _cf.Undefined('name')`` for each of `names`, located at `node`."""
        lines: Statements = []
        for name in names:
            line = cst.SimpleStatementLine([cst.Assign(
                [cst.AssignTarget(cst.Name(name))], self.state([name], {}).elements[0].value)])
            self.ctx.locate_line(line, self.ctx.location_of(node))
            lines.append(line)
        return lines

    # --- while -----------------------------------------------------------------------------
    def convert_while(self, node: cst.While, after: set[str],
                      defined: dict) -> tuple[Statements, list[str]]:
        body = a.loop_body(node)
        header = a.loop_header_live(node, after)
        carried = [n for n in a.assigned_in_order(body) if n in header]
        inner = {**defined, **{n: defined.get(n) for n in carried}}
        index = self.reserve()
        cond_name, body_name = self.fresh("_while_cond_"), self.fresh("_while_body_")
        cond_def = _def(cond_name, carried, [], self.test(node.test))
        body_def = _def(body_name, carried, self.block(body, set(carried), dict(inner)),
                        _names(carried))
        info = self.loop_info(index, "while", node, body, carried, defined)
        call = self.runtime("while_stmt", cst.Name(cond_name), cst.Name(body_name),
                            self.state(carried, defined), info)
        return self.placed([cond_def, body_def, self.result_line(carried, call, node)],
                           node), carried

    def loop_info(self, index: int, kind: str, node: cst.CSTNode, body: Statements,
                  carried: list[str], defined: dict) -> cst.BaseExpression:
        return self.info(index, kind=kind, loc=self.ctx.location_of(node), names=tuple(carried),
                         outs=tuple(carried), assigned=(self.assignments(body),),
                         defined={n: defined[n] for n in carried if n in defined},
                         appends=tuple(a.appended_lists(body)))

    # --- for i in range(...) ---------------------------------------------------------------
    def is_range_loop(self, node: cst.For) -> bool:
        iterable = node.iter
        return (isinstance(node.target, cst.Name) and node.orelse is None
                and isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name)
                and iterable.func.value == "range" and "range" not in self.local_names
                and self.opts.namespace.get("range", builtins.range) is builtins.range
                and 1 <= len(iterable.args) <= 3
                and all(arg.keyword is None and not arg.star for arg in iterable.args))

    def convert_for(self, node: cst.For, after: set[str],
                    defined: dict) -> tuple[Statements, list[str]]:
        target = node.target.value  # type: ignore[attr-defined]
        body = a.loop_body(node)
        header = a.loop_header_live(node, after)
        carried = [n for n in a.assigned_in_order(body) if n in header and n != target]
        index = target
        if target in after:  # Python leaves the last index bound after the loop
            index = self.fresh("_itr")
            bind = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(target))],
                                                       cst.Name(index))])
            self.ctx.locate_line(bind, self.ctx.location_of(node))
            body, carried = [bind, *body], [target, *carried]
        inner = {**defined, **{n: defined.get(n) for n in carried}, index: None}
        number = self.reserve()
        body_name = self.fresh("_for_body_")
        body_def = _def(body_name, [index, *carried],
                        self.block(body, set(carried), dict(inner)), _names(carried))
        args = [self.expression(arg.value) for arg in node.iter.args]  # type: ignore
        start, stop, step = ([cst.Integer("0"), args[0], cst.Integer("1")] if len(args) == 1
                             else [*args, cst.Integer("1")] if len(args) == 2 else args)
        info = self.loop_info(number, "for", node, body, carried, defined)
        call = self.runtime("for_range", start, stop, step, cst.Name(body_name),
                            self.state(carried, defined), info)
        return self.placed([body_def, self.result_line(carried, call, node)], node), carried

    def python_loop(self, node: cst.For | cst.While, after: set[str],
                    defined: dict) -> Statements:
        """A loop that stays Python: its body converted in place. Variables it carries
        that have no value yet start as ``_cf.Undefined`` (an inner construct reads them)."""
        body = a.loop_body(node)
        header = a.loop_header_live(node, after)
        pre = self.undefined_first([n for n in a.assigned_in_order(body)
                                    if n in header and n not in defined], node)
        inner = {**defined, **{n: None for n in a.assigned(body) & header}}
        if isinstance(node, cst.For):
            inner.update({n: None for n in a.target_names(node.target)})
            changes: dict[str, Any] = {"iter": self.expression(node.iter)}
        else:
            changes = {"test": self.test(node.test)}
        new_body = node.body.with_changes(body=self.block(body, header, inner))
        loop = self.ctx.relocate(node.with_changes(body=new_body, **changes), node)
        defined.update(inner)
        return [*pre, loop]

# --- driver --------------------------------------------------------------------------------

    # --- expressions: calls, conditions, `a if c else b`
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

    def __init__(self, owner: ConvertControlFlow) -> None:
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


def conversion_stage(options: ConversionOptions) -> Stage:
    """The ``convert-control-flow`` stage for one function (the pass reads `options`)."""
    transformer = type("ConvertControlFlow", (ConvertControlFlow,), {"options": options})
    return Stage("convert-control-flow", transformer)


def convert_function(fn: Callable) -> Callable:
    """`fn` with its control flow converted: get-source, fence, resolve-names, the
    canonicalize passes (but ``lower-for-loops``), ``convert-control-flow``, emit."""
    source, namespace = read_function(fn)
    for name in REWRITE_BUILTINS:
        namespace.setdefault(name, getattr(builtins, name))
    for name, function in INTRODUCED.items():  # (_zip ...)
        namespace.setdefault(name, function)
    generated = is_generated(fn)
    locations = source.locations
    mapped = GENERATED_SOURCE_MAPS.get(source.filename)
    if mapped:  # positions in generated code -> the user's lines they came from
        locations = {node: mapped.get(loc.line, loc) for node, loc in locations.items()}
    options = ConversionOptions(name=f"cf_{source.name}", namespace=namespace,
                                generated=generated)
    func, origin = run_stages(source.func, source.filename, locations,
                              [*_CANONICAL, conversion_stage(options)])
    namespace = {**namespace, options.cf_name: autograph_runtime,
                 options.info_name: tuple(options.infos)}
    CONVERSIONS[fn] = (options.cf_name, options.info_name, tuple(options.infos))
    # The source map takes each generated line from the first node that covers it: the
    # statements, innermost first (a compound statement covers its whole body).
    statements = [*reversed(iter_statements(func)), func]
    origin = {node: origin[node] for node in statements if node in origin}
    file, first = _header_location(origin, source.filename)
    return emit(func, namespace, origin, transform="control flow", name=source.name,
                file=file, line=first,
                module_name=getattr(fn, "__module__", None) or "__transpiler_generated__")


def _header_location(origin: dict[cst.CSTNode, SourceLocation], filename: str
                     ) -> tuple[str, int]:
    """The file most of the code comes from (the user's, for derivative code) and its
    first line there (for the generated file's header)."""
    files = Counter(loc.file for loc in origin.values() if loc is not None)
    if not files:
        return filename, 0
    file = files.most_common(1)[0][0]
    return file, min(loc.line for loc in origin.values() if loc is not None and loc.file == file)
