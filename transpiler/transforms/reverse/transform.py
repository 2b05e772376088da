"""Reverse-mode AD as a source transform: ANF code in, forward + backward Python out.

The generated function runs the user's statements (SSA-renamed) and then, in reverse
order, the adjoint of every *active* statement -- one that depends on a differentiated
input. Adjoints come from the primitives' VJP templates, from structural rules (copies,
tuples, indexing), or, for calls of other Python functions (``transpiler.numpy``
composites and the user's helpers), from a call to that function's own generated VJP.

Every generated function has the signature of the original plus a keyword-only
``_out_bar`` (the output cotangent; ``None`` asks for ``grad``'s seed, which checks that
the output is a real scalar) and returns ``(out, bars)``: the output, and one cotangent per
positional parameter (``None`` where nothing flows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, cast

import libcst as cst
from transpiler.frontend.cst_templates import parse_template_expression, parse_template_statement

from transpiler.errors import TranspileError
from transpiler.transforms.common import classify as cl
from transpiler.transforms.common.statements import (
    RenameModules,
    _drops,
    _is_copy,
    _reads,
    _top_assigned,
    dropped_derivative,
    _all_assigned,
    _assign,
    _block,
    _deferred_error,
    transform_namespace,
    _param_names,
    _source_line,
    _with_out_bar,
    closure_reads,
    positional_params,
)
from transpiler.transforms.common.rename import SSA, assigned_names, loop_assigned
from transpiler.transforms.ad.calls import needs_primal
from transpiler.errors import _PACKAGE_DIR
from transpiler.transforms.common.generated import aliases
from transpiler.transforms import ad as adjoint_helpers
from transpiler.transforms.reverse.adjoints import adjoint_of
from transpiler.transforms.reverse.lists import MUTATORS, lists_built_here, rewrite_appends, walk_in_loops


@dataclass
class Generated:
    """A generated function before codegen: its CST, extra names it needs, its source map."""

    func: cst.FunctionDef
    namespace: dict[str, Any]
    origin: dict[cst.CSTNode, Any] = field(default_factory=dict)  # stmt -> SourceLocation
    out_bar: str = "_out_bar"  # the keyword-only cotangent parameter
    callees: dict[str, tuple[Any, frozenset]] = field(default_factory=dict)  # extra -> (fn, active)


class ReverseAD:
    """Builds ``vjp_<name>`` for one function and one set of active parameters."""

    def __init__(self, parsed: Any, active_params: frozenset[str], has_aux: bool,
                 vjp_of: Callable[[Any, frozenset[str]], tuple[str, Any]]) -> None:
        self.parsed = parsed
        self.func: cst.FunctionDef = parsed.func
        self.namespace: dict[str, Any] = transform_namespace(parsed)
        self.has_aux = has_aux
        self.vjp_of = vjp_of  # (callee, active param names) -> (name, generated function)
        self.params = _param_names(self.func)
        taken = set(self.params) | _all_assigned(self.func.body.body)
        # Cotangents are `x_bar`; in generated code (grad of grad) that suffix is taken.
        self.suffix = next(f for f in (f"_bar{k or ''}" for k in range(100))
                           if not any(n.endswith(f) for n in taken))
        # The cotangent parameter; a derivative of generated code already has `_out_bar`.
        self.out_bar = next(n for n in (f"_out_bar{k or ''}" for k in range(100))
                            if n not in self.params)
        self.active_params = active_params
        self.backward_origin: dict[cst.CSTNode, Any] = {}
        self.callees: dict[str, tuple[Any, frozenset]] = {}
        self.extra: dict[str, Any] = {}
        self.counter = 0
        self.local_names = set(self.params) | _all_assigned(self.func.body.body)
        self.origin: dict[cst.CSTNode, Any] = {}
        self.user_code = not str(parsed.filename).startswith(_PACKAGE_DIR)
        self.last_comment: Optional[str] = None
        self.renamed = {name.lstrip("_"): name for name in aliases(self.namespace)
                        if name.startswith("_")}  # e.g. {"ad": "_ad"} (see generated.aliases)

    # --- helpers -------------------------------------------------------------------------
    def bar(self, name: str) -> str:
        """The name of `name`'s cotangent variable."""
        return f"{name}{self.suffix}"

    def bar_node(self, name: str) -> cst.Name:
        return cst.Name(self.bar(name))

    def tmp(self, stem: str = "g") -> str:
        while True:
            self.counter += 1
            name = f"_{stem}{self.counter}"
            if name not in self.local_names:
                break
        self.local_names.add(name)
        return name

    def error(self, stmt: cst.CSTNode, message: str, hint: str = "") -> TranspileError:
        return TranspileError(message, self.location(stmt), hint)

    def location(self, stmt: cst.CSTNode) -> Any:
        original = self.ssa.origin.get(stmt, stmt)
        return self.parsed.locations.get(original)

    # --- the pipeline ------------------------------------------------------------------
    def run(self) -> Generated:
        body = _block(self.func.body)
        ret = body[-1]
        if not (isinstance(ret, cst.SimpleStatementLine) and isinstance(ret.body[0], cst.Return)):
            raise self.error(ret, "internal: ANF function does not end with a return")
        body = self.functional_appends(body)
        self.ssa = SSA(self.local_names)
        env = {p: p for p in self.params}
        forward = self.ssa.body(body[:-1], env, set(self.params))
        self.versions = set(self.params) | _all_assigned(forward)  # (the names after SSA)
        if self.ssa.late_bound:
            closure, name = self.ssa.late_bound[0]
            what = "the lambda" if closure.name.value.startswith("_lambda") else \
                f"the nested function `{closure.name.value}`"
            raise self.error(closure, f"{what} reads `{name}`, which is assigned again "
                             "before the function is called: Python's closure sees the new "
                             "value, which reverse mode cannot differentiate yet",
                             f"pass `{name}` to the function as an argument, or define the "
                             f"function after the last assignment of `{name}`")
        self.local_names |= self.ssa.taken
        out_expr = ret.body[0].value
        assert out_expr is not None  # ANF returns always carry a value (a name)
        out_name = env.get(out_expr.value, out_expr.value) if isinstance(out_expr, cst.Name) \
            else None
        self.active: set[str] = set(self.active_params)
        self.active_statements: set[cst.Assign] = set()
        self.name_tuples: dict[str, list[str]] = {}  # _t = ("a", "b"): the names ad.defined reads
        self.closures: dict[cst.FunctionDef, list[str]] = {}  # nested def -> what it reads
        self.definitions: dict[str, cst.Assign] = {}
        self.refused: dict[cst.BaseStatement, TranspileError] = {}  # errors where reached
        self.analyze(forward)
        self.mutated: set[str] = set()  # containers a refused (library) mutation changed
        self.refuse_mutations(forward)
        if self.mutated - self.active:  # what they flow into reaches the refused statement:
            self.active |= self.mutated  # an error if that path runs, never a dropped term
            self.analyze(forward)
        self.tapes: dict[cst.CSTNode, tuple[str, list[str], list[tuple[str, str]]]] = {}
        forward = self.add_tapes(forward)
        backward: list[cst.BaseStatement] = []
        self.has_bar: set[str] = set()
        self.maybe_none: set[str] = set()  # bars that may hold None (zero) at run time
        # Names assigned again in every iteration of an enclosing loop whose cotangent
        # outlives one iteration of its adjoint: once the adjoint of their assignment is
        # done, the cotangent starts over (the earlier iteration's value is another value).
        self.resets: set[str] = set()
        if out_name is not None and out_name in self.active:
            seed = "ad.seed(" + self.out_bar + ", {out}, has_aux={aux})"
            backward.append(parse_template_statement(
                "{bar} = " + seed, bar=self.bar_node(out_name), out=cst.Name(out_name),
                aux=cst.Name(str(self.has_aux))))
            self.has_bar.add(out_name)
            nothing = self.return_statement(out_name, out_expr, empty=True)
            backward.append(cst.If(  # no cotangent reached the output: nothing flows back
                test=parse_template_expression("{bar} is None", bar=self.bar_node(out_name)),
                body=cst.IndentedBlock(body=[nothing])))
            backward.extend(self.backward(forward))
        elif out_name is not None:  # a constant output: grad still checks what it is
            backward.append(parse_template_statement(
                "ad.seed(" + self.out_bar + ", {out}, has_aux={aux})",
                out=cst.Name(out_name), aux=cst.Name(str(self.has_aux))))
        if out_name is not None and out_name in self.active and any(
                out_name in _taped_names(saved) for _, saved, _ in self.tapes.values()):
            # a loop's backward pass rebinds the names its tape saved: the output is read
            # before (value_and_grad returned the loop variable's first value)
            kept = self.tmp("out")
            backward.insert(0, parse_template_statement("{k} = {o}", k=cst.Name(kept),
                                                        o=cst.Name(out_name)))
            out_name = kept
        result = self.return_statement(out_name, out_expr)
        if self.renamed:  # the function's own globals use `ad`, `jnp` ... for other things
            renamer = RenameModules(self.renamed)
            backward = [cast(cst.BaseStatement, stmt.visit(renamer)) for stmt in backward]
            result = cast(cst.BaseStatement, result.visit(renamer))
        forward = self.functional_primals(forward)
        func = self.func.with_changes(
            name=cst.Name(f"vjp_{self.func.name.value}"),
            params=_with_out_bar(self.func.params, self.out_bar),
            body=self.func.body.with_changes(body=[*forward, *backward, result]),
            decorators=[])
        origin = {new: self.location(new) for new in self.ssa.origin}
        origin.update(self.backward_origin)
        return Generated(func, self.extra, origin, self.out_bar, self.callees)

    def functional_primals(self, stmts: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """The forward pass with each call of a user's function that updates arrays in
        place (``y[0] = v``, which Python cannot run on immutable arrays) made through
        ``ad.primal(f)``: the function as the transforms rewrite it."""
        namespace, gen = self.namespace, self

        class Primals(cst.CSTTransformer):
            def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
                parts = cl.dotted(updated.func)
                if not parts or parts[0] not in namespace or parts[0] in gen.local_names:
                    return updated
                try:
                    callee = cl.resolve(parts, namespace)
                except AttributeError:
                    return updated
                if not needs_primal(callee):
                    return updated
                return updated.with_changes(func=parse_template_expression(
                    "ad.primal({f})", f=updated.func))

            def on_leave(self, original: Any, updated: Any) -> Any:
                result = super().on_leave(original, updated)
                if result is not original and isinstance(original, cst.BaseStatement):
                    # only calls are rewritten: a statement stays a statement (no sentinel)
                    gen.ssa.origin[cast(cst.CSTNode, result)] = gen.ssa.origin.get(original, original)
                return result

        return [cast(cst.BaseStatement, stmt.visit(Primals())) for stmt in stmts]

    def bar_text(self, name: str) -> str:
        return self.bar(name) if name in self.has_bar and name in self.active else "None"

    def returned_bar(self, name: str, empty: bool) -> str:
        """A requested parameter's cotangent is never None: callers use it as an array."""
        if name not in self.active_params:
            return "None"
        if not empty and name in self.has_bar and name not in self.maybe_none:
            return self.bar(name)
        bar = "None" if empty or name not in self.has_bar else self.bar(name)
        return f"ad.or_zeros({bar}, {name})"

    def return_statement(self, out_name: Optional[str], out_expr: cst.BaseExpression,
                         empty: bool = False) -> cst.BaseStatement:
        """``return out, (p0_bar, p1_bar, *spread(args_bar))`` over the positional params
        (all None when `empty`: no cotangent reached the output)."""
        bars = [self.returned_bar(p, empty) for p in positional_params(self.func)]
        star = self.func.params.star_arg
        if isinstance(star, cst.Param):
            name = star.name.value
            bars.append(f"*ad.spread({'None' if empty else self.bar_text(name)}, {name})")
        out_text = out_name if out_name is not None else cst.Module([]).code_for_node(out_expr)
        trailing = "," if len(bars) == 1 else ""
        keyword_only = [p.name.value for p in self.func.params.kwonly_params
                        if p.name.value in self.active_params]
        extra = ""
        if keyword_only:  # see adjoints.function_rule: a dict of their cotangents
            extra = ", {" + ", ".join(
                f"{n!r}: {self.returned_bar(n, empty)}" for n in keyword_only) + "}"
        return cst.parse_statement(f"return {out_text}, ({', '.join(bars)}{trailing}){extra}")

    def functional_appends(self, stmts: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """``xs.append(v)`` on a list this function builds becomes ``xs = ad.appended(xs, v)``
        (in every block): then the list is a value like any other, its versions on the loop
        tapes, its cotangent a list. A list that came from elsewhere, or that another name
        also refers to, is appended to in place as written."""
        alias = "ad" if self.namespace.get("ad", adjoint_helpers) is adjoint_helpers else "_ad"
        self.namespace[alias] = adjoint_helpers
        built = lists_built_here(stmts, set(self.params))
        return rewrite_appends(stmts, built, alias, self.parsed.locations)

    def refuse_mutations(self, stmts: list[cst.BaseStatement]) -> None:
        """A differentiated value put into a container in place (``xs.append(v)`` on a list
        `functional_appends` could not rewrite, ``d.update(...)``): reverse mode does not see
        the container change, so this is an error, never a dropped derivative."""
        for stmt, _ in walk_in_loops(stmts, ()):
            small = stmt.body[0]  # type: ignore[attr-defined]
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) and \
                    small.value.value in self.active and any(
                        isinstance(t.target, cst.Subscript) for t in small.targets):
                err = self.error(stmt, "an element of a container is set to a differentiated "
                                 "value in place, which reverse mode cannot follow",
                                 "build a new container instead (a dict or list display, "
                                 "or a comprehension), or use x.at[i].set(v) on arrays")
                if self.user_code:
                    raise err
                self.refused[stmt] = err
                continue
            value = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
            if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                    and isinstance(value.func.value, cst.Name)
                    and value.func.attr.value in MUTATORS
                    and value.func.value.value in self.local_names):
                continue
            if any(isinstance(a.value, cst.Name) and a.value.value in self.active
                   for a in value.args):
                receiver, method = value.func.value.value, value.func.attr.value
                err = self.error(stmt, f"`{receiver}.{method}(...)` puts a differentiated "
                                 f"value into `{receiver}` in place, which reverse mode cannot "
                                 "follow here (the list comes from elsewhere, or another name "
                                 "refers to it)", f"build the list in this function "
                                 f"(`{receiver} = []` before appending) and do not share it "
                                 "while appending, or collect the values with a comprehension")
                if self.user_code:
                    raise err
                self.refused[stmt] = err  # the library's: an error if that path runs
                self.mutated.add(receiver)

    # --- activity analysis -------------------------------------------------------------
    def analyze(self, stmts: list[cst.BaseStatement]) -> None:
        for stmt in stmts:
            if isinstance(stmt, (cst.For, cst.While)):
                for _ in range(2):  # values carried around the loop: reach a fixpoint
                    self.analyze(_block(stmt.body))
                continue
            if isinstance(stmt, cst.If):
                self.analyze(_block(stmt.body))
                if isinstance(stmt.orelse, cst.Else):
                    self.analyze(_block(stmt.orelse.body))
                continue
            if isinstance(stmt, cst.Try):  # (library code: the fence refuses user `try`s)
                self.analyze_try(stmt)
                continue
            if isinstance(stmt, cst.With):  # (library code) its adjoint runs in it too
                self.analyze(_block(stmt.body))
                continue
            if isinstance(stmt, cst.FunctionDef):  # a function value carries its closure
                free = self.closures[stmt] = closure_reads(stmt, self.local_names)
                if any(n in self.active for n in free):
                    self.active.add(stmt.name.value)
                continue
            assign = _assign(stmt)
            if assign is None:
                continue
            for t in assign.targets:
                if isinstance(t.target, cst.Name):
                    self.definitions[t.target.value] = assign
            op = self.op_of(assign)
            target = assign.targets[0].target
            strings = cl.string_tuple(assign.value)
            if isinstance(target, cst.Name) and strings is not None:
                self.name_tuples[target.value] = strings
            defined = cl.defined_names(op, self.name_tuples)
            if defined is not None:  # ad.defined(locals(), names): a tape's entry (generated
                if any(n in self.active for n in defined):  # code): active through the names
                    self.active_statements.add(assign)
                    self.active.update(assigned_names(target))
                continue
            source = self.definitions.get(assign.value.value) \
                if isinstance(assign.value, cst.Name) else None
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(source, cst.Assign) \
                    and isinstance(source.value, (cst.Tuple, cst.List)) and \
                    len(source.value.elements) == len(assigned_names(target)):
                # a, b = (x, y): each name is as active as its own element
                elements = [e.value.value if isinstance(e.value, cst.Name) else None
                            for e in source.value.elements]
                names = assigned_names(target)
                if any(e in self.active for e in elements):
                    self.active_statements.add(assign)
                    self.active.update(n for n, e in zip(names, elements) if e in self.active)
                continue
            if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and \
                    isinstance(assign.value, cst.Name) and assign.value.value in self.active:
                # `xs[i] = v` in place: xs now holds a derivative (refuse_mutations makes
                # this an error where the derivative would flow, never a dropped one)
                self.active.add(target.value.value)
                continue
            reads = cl.reads(op)  # ad.seed(out_bar, out): only the cotangent flows
            if any(n in self.active for n in reads) and self.propagates(op) and \
                    not cl.static_comprehension(assign.value, self.namespace, self.local_names):
                self.active_statements.add(assign)
                for t in assign.targets:
                    self.active.update(assigned_names(t.target))
            elif any(n in self.active for n in reads) and self.user_code and _drops(op):
                raise dropped_derivative(self, stmt)

    def analyze_try(self, stmt: cst.Try) -> None:
        """A `try` block is not differentiated: a value it computes from differentiated
        ones is refused (an error where its derivative would flow), never a dropped one."""
        before = set(self.active)
        blocks = [_block(stmt.body), *(_block(h.body) for h in stmt.handlers)]
        if stmt.orelse is not None:
            blocks.append(_block(stmt.orelse.body))
        for block in blocks:
            self.analyze(block)
        if self.active - before:
            self.refused[stmt] = self.error(stmt, "a `try` statement computes a value from "
                                            "differentiated ones, which reverse mode cannot "
                                            "differentiate", "move that computation out of "
                                            "the `try`")

    def op_of(self, assign: cst.Assign) -> cl.Op:
        return cl.classify(assign.value, self.namespace, self.local_names)

    def propagates(self, op: cl.Op) -> bool:
        return cl.propagates(op)

    # --- the backward pass -------------------------------------------------------------
    def backward(self, stmts: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """Adjoints of `stmts` in reverse (`self.resets`: cotangents that start over once
        the adjoint of their assignment is done)."""
        out: list[cst.BaseStatement] = []
        for stmt in reversed(stmts):
            if isinstance(stmt, cst.If):
                out.extend(self.backward_if(stmt))
                continue
            if isinstance(stmt, cst.With):  # the body's adjoints inside the same context
                lines = self.backward(_block(stmt.body))
                if lines:
                    out.append(stmt.with_changes(body=stmt.body.with_changes(body=lines)))
                continue
            if stmt in self.tapes:
                out.extend(self.backward_loop(stmt))
                continue
            if isinstance(stmt, cst.FunctionDef):
                out.extend(self.backward_closure(stmt))
                continue
            if stmt in self.refused:
                out.append(_deferred_error(self.refused[stmt], self.location(stmt)))
                continue
            assign = _assign(stmt)
            if assign is None:
                continue
            targets = [n for t in assign.targets for n in assigned_names(t.target)]
            if assign not in self.active_statements or not any(
                    t in self.active and t in self.has_bar for t in targets):
                # (a constant such as `items = []` still ends a cotangent that starts over)
                out.extend(parse_template_statement("{b} = None", b=self.bar_node(n))
                           for n in targets if n in self.resets and n in self.has_bar)
                continue
            # Skip the adjoint when its cotangent is None (zero) at run time: when every
            # target's cotangent may be None, it runs if any of them is not.
            with_bar = [t for t in targets if t in self.active and t in self.has_bar]
            guarded = with_bar if all(t in self.maybe_none for t in with_bar) else []
            had = set(self.has_bar)
            try:
                lines = adjoint_of(self, stmt, assign)
            except TranspileError as err:  # raised if (and only if) this path runs
                lines = [_deferred_error(err, self.location(stmt))]
            if guarded and lines:  # its cotangent may be None (zero): skip the adjoint then
                fresh = sorted(self.has_bar - had)
                self.maybe_none.update(fresh)
                out.extend(parse_template_statement("{b} = None", b=self.bar_node(n)) for n in fresh)
                test = " or ".join(f"{self.bar(t)} is not None" for t in guarded)
                lines = [cst.If(test=cst.parse_expression(test), body=cst.IndentedBlock(body=lines))]
            for name in targets:
                if name in self.resets:
                    lines.append(parse_template_statement("{b} = None", b=self.bar_node(name)))
            if lines:
                loc = self.location(stmt)
                comment = f"# grad of: {_source_line(loc)}" if loc is not None else None
                if comment and comment != self.last_comment:
                    self.last_comment = comment
                    lines[0] = lines[0].with_changes(leading_lines=[cst.EmptyLine(
                        comment=cst.Comment(comment))])
                for line in lines:  # errors in an adjoint point at the user's statement
                    self.backward_origin[line] = loc
                out.extend(lines)
        return out

    def backward_if(self, stmt: cst.If) -> list[cst.BaseStatement]:
        """Both branches' adjoints under the same test; bars they touch start as None."""
        before = set(self.has_bar)
        branches = [_block(stmt.body)]
        branches.append(_block(stmt.orelse.body) if isinstance(stmt.orelse, cst.Else) else [])
        touched: set[str] = set()
        results = []
        for branch in branches:
            self.has_bar = set(before)
            results.append(self.backward(branch))
            touched |= self.has_bar - before
        # Names defined before the if that received contributions inside it.
        pre = sorted(n for n in touched if n not in _all_assigned(branches[0] + branches[1]))
        init = [parse_template_statement("{b} = None", b=self.bar_node(n)) for n in pre]
        self.maybe_none.update(pre)
        self.has_bar = before | touched
        body = stmt.body.with_changes(body=results[0] or [cst.parse_statement("pass")])
        orelse = cst.Else(body=cst.IndentedBlock(body=results[1])) if results[1] else None
        return [*init, stmt.with_changes(body=body, orelse=orelse)]

    def accumulate(self, name: str, value: cst.BaseExpression) -> list[cst.BaseStatement]:
        """``name_bar += value``, where a first contribution is a plain assignment."""
        if name not in self.active:
            return []
        if name not in self.has_bar:
            self.has_bar.add(name)
            return [parse_template_statement("{b} = {v}", b=self.bar_node(name), v=value)]
        return [parse_template_statement("{b} = ad.add({b}, {v})", b=self.bar_node(name), v=value)]

    # --- loops and nested functions -------------------------------------------------------
    # A loop that computes differentiated values records each iteration's values on a tape
    # (a Python list; under jit Python loops unroll and the list holds tracers, and a loop
    # on a traced condition is converted by autograph/convert.py, which asks for a bound);
    # the backward pass replays the tape in reverse. A nested ``def``'s cotangent is the
    # dict of its closure's cotangents, which flows back into the closed-over variables.

    def add_tapes(self, stmts: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """Loops that compute differentiated values record each iteration's values on a
        tape (a Python list: under jit, Python loops unroll and the list holds tracers)."""
        out: list[cst.BaseStatement] = []
        for stmt in stmts:
            if isinstance(stmt, cst.If):
                if_body = stmt.body.with_changes(body=self.add_tapes(_block(stmt.body)))
                orelse = stmt.orelse
                if isinstance(orelse, cst.Else):
                    orelse = orelse.with_changes(body=orelse.body.with_changes(
                        body=self.add_tapes(_block(orelse.body))))
                new_if = stmt.with_changes(body=if_body, orelse=orelse)
                self.ssa.origin[new_if] = self.ssa.origin.get(stmt, stmt)
                out.append(new_if)
                continue
            if isinstance(stmt, cst.With):
                new_with = stmt.with_changes(body=stmt.body.with_changes(
                    body=self.add_tapes(_block(stmt.body))))
                self.ssa.origin[new_with] = self.ssa.origin.get(stmt, stmt)
                out.append(new_with)
                continue
            if not isinstance(stmt, (cst.For, cst.While)) or not (
                    loop_assigned(stmt) & self.active):
                out.append(stmt)
                continue
            carried = self.ssa.loop_carried.get(stmt, {})
            body = self.add_tapes(_block(stmt.body))
            # The copy-backs SSA appended (a `c = acc` of the user's own, earlier in the
            # body, looks the same but is a statement to differentiate).
            count = self.ssa.copybacks.get(stmt, 0)
            copies = [(c.body[0].targets[0].target.value, c.body[0].value.value)  # type: ignore
                      for c in body[len(body) - count:]]
            assert all(_is_copy(c, carried) for c in body[len(body) - count:])
            core = body[:len(body) - len(copies)]
            top = _top_assigned(core)
            target = stmt.target.value if isinstance(stmt, cst.For) and \
                isinstance(stmt.target, cst.Name) else None
            always = {v for n, v in carried.items() if v != n or n == target}  # defined before
            saved = sorted(always | top)  # (ANF keeps `locals()` inline: no name holds a scope)
            maybe = sorted(_all_assigned(core) - top - set(saved))
            tape = self.tmp("tape")
            items = ", ".join(saved)
            if maybe:  # assigned only on some paths through the body: saved when they exist
                items += f", ad.defined(locals(), {tuple(maybe)!r})"
                saved = saved + [f"({', '.join(maybe)},)"]
            push = cst.parse_statement(f"{tape}.append(({items},))")
            if self.renamed:
                push = cast(cst.SimpleStatementLine, push.visit(RenameModules(self.renamed)))
            new_loop = stmt.with_changes(body=stmt.body.with_changes(
                body=[*core, push, *body[len(core):]]))
            self.ssa.origin[new_loop] = self.ssa.origin.get(stmt, stmt)
            self.tapes[new_loop] = (tape, saved, copies)
            out += [cst.parse_statement(f"{tape} = []"), new_loop]
        return out

    def backward_closure(self, stmt: cst.FunctionDef) -> list[cst.BaseStatement]:
        """A nested ``def``'s cotangent is a dict over the variables it closes over (see
        ad.calls.vjp_call_closure): each entry flows back into its variable."""
        name = stmt.name.value
        if name not in self.active or name not in self.has_bar:
            return []
        lines: list[cst.BaseStatement] = []
        for free in self.closures.get(stmt, []):
            if free in self.active:
                lines += self.accumulate(free, parse_template_expression(
                    "ad.item({b}, {k})", b=self.bar_node(name), k=cst.SimpleString(repr(free))))
                self.maybe_none.add(free)
        loc = self.location(stmt)
        for line in lines:
            self.backward_origin[line] = loc
        return lines

    def backward_loop(self, stmt: cst.CSTNode) -> list[cst.BaseStatement]:
        """Replay the tape in reverse: each iteration's values, then its adjoint."""
        tape, saved, copies = self.tapes[stmt]
        body = list(stmt.body.body)  # type: ignore[attr-defined]
        core = body[:len(body) - len(copies) - 1]
        defined_inside = _all_assigned(core)
        outer = sorted((_reads(core) - defined_inside) | {c for c, _ in copies})
        init = []
        for name in outer:
            if name in self.active and name not in self.has_bar:
                init.append(parse_template_statement("{b} = None", b=self.bar_node(name)))
                self.has_bar.add(name)
                self.maybe_none.add(name)
        before = set(self.has_bar)
        lines: list[cst.BaseStatement] = []
        for carried, version in reversed(copies):  # `carried = version`, then a fresh carry
            if carried in self.active:
                lines += self.accumulate(version, self.bar_node(carried))
                lines.append(parse_template_statement("{b} = None", b=self.bar_node(carried)))
                self.maybe_none |= {carried, version}
        # A value assigned in the body whose cotangent exists before the body's adjoint
        # (one read after the loop) is a new value each iteration: the cotangent reaches
        # the last iteration's only, so it starts over once that assignment's adjoint ran.
        outlives = (defined_inside & before) - set(outer)
        self.maybe_none |= outlives
        enclosing = self.resets
        self.resets = enclosing | outlives | {c for c, _ in copies}
        lines += self.backward(core)
        self.resets = enclosing
        self.has_bar = before | (self.has_bar - defined_inside)
        unpack = cast(cst.For, cst.parse_statement(
            f"for ({', '.join(saved)},) in {tape}[::-1]:\n    pass\n"))
        loop = unpack.with_changes(body=unpack.body.with_changes(
            body=lines or [cst.parse_statement("pass")]))
        return [*init, loop]


__all__ = ["Generated", "ReverseAD", "parse_template_expression", "positional_params"]


def _taped_names(saved: list[str]) -> set[str]:
    """The names a tape entry binds again when the backward loop unpacks it (`saved`
    holds names, and ``"(a, b,)"`` for the values assigned on some paths only)."""
    names: set[str] = set()
    for item in saved:
        names.update(n.strip() for n in item.strip("()").split(",") if n.strip())
    return names
