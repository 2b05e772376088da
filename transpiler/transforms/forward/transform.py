"""Forward-mode AD as a source transform: ANF code in, primal and tangent Python out.

Every statement that computes a differentiated value is followed by the statement computing
its tangent, ``t_dot`` (``# jvp of: <line>`` comments point at the user's source); calls of
other Python functions (``transpiler.numpy`` composites, the user's helpers) become calls of
their own generated ``jvp_<name>``, which return the value and its tangent together. There
is no tape and no recomputation: control flow stays as written.

Generated functions keep the original signature plus one keyword-only tangent per
differentiated parameter (``x_dot=None``) and return ``(out, out_dot)``.

Activity is flow-insensitive: a variable is active if any assignment to it depends on a
differentiated input; every assignment to an active variable then sets its tangent (zeros
when that particular value is constant), so an active variable always has a tangent array.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Optional, cast

import libcst as cst

from transpiler.errors import TranspileError
from transpiler.primitives.core import Primitive
from transpiler.rewritten import sequence
from transpiler.transforms.common import classify as cl
from transpiler.transforms.ad import helper_tangents
from transpiler.transforms.common.statements import (
    TIGHT_EQUAL,
    callee_name,
    _all_assigned,
    _assign,
    _block,
    _deferred_error,
    _jnp,
    transform_namespace,
    _param_names,
    _source_line,
    index_text,
    fixpoint,
    positional_params,
    renamed_line,
    split_return,
)
from transpiler.transforms.common.rename import assigned_names
from transpiler.transforms.common.statements import (_append, _drops, bindings, closure_reads,
                                                     dropped_derivative)
from transpiler.transforms.reverse.transform import Generated
from transpiler.transforms.common.signature import source_signature
from transpiler.transforms.reverse.structural_rules import AT_METHODS
from transpiler.transforms.common.statements import _expression_pieces
from transpiler.errors import _PACKAGE_DIR
from transpiler.transforms.common.generated import aliases
from transpiler.transforms.forward.custom_jvp import CustomJVP


_code = cst.Module(body=[]).code_for_node


def _text(node: cst.CSTNode) -> str:
    """The code of an ANF atom; a negative constant parenthesized (it may become an operand)."""
    if type(node) is cst.Name:
        return node.value  # type: ignore[attr-defined]
    code = _code(node)
    return f"({code})" if code.startswith("-") else code


class ForwardAD:
    """Builds ``jvp_<name>`` for one function and one set of differentiated parameters."""

    def __init__(self, parsed: Any, active_params: frozenset[str],
                 jvp_of: Callable[[Any, frozenset[str]], tuple[str, Any]],
                 library: bool = False) -> None:
        self.parsed = parsed
        self.func: cst.FunctionDef = parsed.func
        self.namespace: dict[str, Any] = transform_namespace(parsed)
        self.jvp_of = jvp_of  # (callee, active param names) -> (name, generated function)
        self.params = _param_names(self.func)
        self.local_names = set(self.params) | _all_assigned(self.func.body.body)
        # Tangents are `x_dot`; in generated code (jvp of jvp) that suffix is taken.
        self.suffix = next(f for f in (f"_dot{k or ''}" for k in range(100))
                           if not any(n.endswith(f) for n in self.local_names))
        self.active_params = active_params
        self.extra: dict[str, Any] = {}
        self.callees: dict[str, tuple[Any, frozenset]] = {}
        self.origin: dict[cst.CSTNode, Any] = {}
        self.counter = 0
        # The library's composites, and code generated from them, fail lazily (at run
        # time, if the unsupported statement is reached); the user's code fails now.
        self.user_code = not library and not str(parsed.filename).startswith(_PACKAGE_DIR)
        self.last_comment: Optional[str] = None
        self.definitions: dict[str, str] = {}  # name -> "at" | "at_index" (x.at, x.at[i])
        self.at_parts: dict[str, tuple[str, Optional[str]]] = {}  # name -> (x, index text)
        self.packs: dict[str, list[Optional[str]]] = {}  # t = (a, b): t -> ["a", "b"]
        # t = ("a", "b"): the names ``ad.defined(locals(), t)`` reads (a loop's tape)
        self.name_tuples: dict[str, list[str]] = {}
        self.closures: dict[cst.FunctionDef, list[str]] = {}  # nested def -> what it reads
        self.closure_tangents: dict[str, list[str]] = {}  # emitted def -> its active reads
        self.renamed = {name.lstrip("_"): name for name in aliases(self.namespace)
                        if name.startswith("_")}  # e.g. {"ad": "_ad"} (see generated.aliases)

    # --- helpers -------------------------------------------------------------------------
    def dot(self, name: str) -> str:
        """The name of `name`'s tangent variable."""
        return f"{name}{self.suffix}"

    def tangent(self, node: cst.BaseExpression) -> str:
        """The tangent of an operand (an atom): its variable, or None for a constant."""
        if isinstance(node, cst.Name) and node.value in self.active:
            return self.dot(node.value)
        return "None"

    def is_active(self, node: Optional[cst.BaseExpression]) -> bool:
        return isinstance(node, cst.Name) and node.value in self.active

    def tmp(self, stem: str = "j") -> str:
        while True:
            self.counter += 1
            name = f"_{stem}{self.counter}"
            if name not in self.local_names:
                self.local_names.add(name)
                return name

    def error(self, stmt: cst.CSTNode, message: str, hint: str = "") -> TranspileError:
        return TranspileError(message, self.parsed.locations.get(stmt), hint)

    def op_of(self, assign: cst.Assign) -> cl.Op:
        return cl.classify(assign.value, self.namespace, self.local_names)

    # --- the pipeline ------------------------------------------------------------------
    def run(self) -> Generated:
        stmts, ret = split_return(self, self.func)
        self.active: set[str] = set(self.active_params)
        self.bound = bindings(stmts)
        fixpoint(lambda: self.analyze(stmts), self.active)
        out = ret.body[0].value
        assert out is not None  # ANF returns always carry a value (a name)
        # Tangents only for values that both depend on the inputs and reach the output:
        # library code computes many static things from arrays (dtypes, shapes, flags).
        useful = {out.value} if isinstance(out, cst.Name) else set()
        while True:
            before = len(useful)
            self.reaching(stmts, useful)
            if len(useful) == before:
                break
        self.active &= useful | set(self.active_params)
        # A parameter that is not differentiated but is reassigned from a differentiated
        # value (``axis = _axis(x, axis)``) is read with a zero tangent before that.
        statements = [self.line(f"{self.dot(p)} = None") for p in self.params
                      if p in self.active and p not in self.active_params]
        statements += self.block(stmts)
        # An output that does not depend on the differentiated inputs (say, x is only read
        # for its shape) still returns zeros: callers keep every active value's tangent.
        tangent = self.tangent(out)
        if tangent == "None":
            tangent = f"ad.zeros_like_tree({_text(out)})"
        result = cst.parse_statement(f"return {_text(out)}, {tangent}")
        self.origin[result] = self.parsed.locations.get(ret)
        func = self.func.with_changes(
            name=cst.Name(f"jvp_{self.func.name.value}"), params=self.signature(),
            body=self.func.body.with_changes(body=[*statements, result]), decorators=[])
        return Generated(func, self.extra, self.origin, self.suffix, self.callees)

    def signature(self) -> cst.Parameters:
        """The original parameters plus ``<p>_dot=None`` for each differentiated one."""
        params = self.func.params
        tangents = [cst.Param(cst.Name(self.dot(p)), default=cst.Name("None"), equal=TIGHT_EQUAL)
                    for p in self.params if p in self.active_params]
        star = params.star_arg if isinstance(params.star_arg, cst.Param) else cst.ParamStar()
        return params.with_changes(kwonly_params=[*params.kwonly_params, *tangents],
                                   star_arg=star)

    # --- activity --------------------------------------------------------------------------
    @staticmethod
    def nested(stmt: cst.BaseStatement) -> list[list[cst.BaseStatement]]:
        """The statement blocks inside a compound statement (if/else, loops, and the
        try/except of library code), or [] for a simple statement."""
        if not isinstance(stmt, (cst.For, cst.While, cst.If, cst.Try, cst.With)):
            return []
        blocks = [_block(stmt.body)]
        orelse = getattr(stmt, "orelse", None)
        if isinstance(orelse, cst.Else):
            blocks.append(_block(orelse.body))
        for handler in getattr(stmt, "handlers", ()):
            blocks.append(_block(handler.body))
        return blocks

    def analyze(self, stmts: list[cst.BaseStatement]) -> None:
        for stmt in stmts:
            if isinstance(stmt, cst.FunctionDef):  # a function value carries its closure
                if any(n in self.active for n in self.closure(stmt)):
                    self.active.add(stmt.name.value)
                continue
            if isinstance(stmt, cst.BaseCompoundStatement):
                for block in self.nested(stmt):
                    self.analyze(block)
                continue
            append = _append(stmt)
            if append is not None:  # xs.append(v) (a tape of generated reverse code)
                if append[1] in self.active:
                    self.active.add(append[0])
                continue
            assign = _assign(stmt)
            if assign is None:
                continue
            item = _item_set(assign)
            if item is not None:  # d[k] = v: d carries v's derivative from here on
                if item[2] in self.active:
                    self.active.add(item[0])
                continue
            op = self.op_of(assign)
            target = assign.targets[0].target
            if isinstance(target, cst.Name):  # `.at` chains, for at_update
                if op.kind == "attribute" and op.attr == "at":
                    self.definitions[target.value] = "at"
                    self.at_parts[target.value] = (op.operands[0], None)
                elif op.kind == "index" and op.operands and \
                        self.definitions.get(op.operands[0]) == "at":
                    self.definitions[target.value] = "at_index"
                    self.at_parts[target.value] = (self.at_parts[op.operands[0]][0],
                                                   index_text(assign.value))  # type: ignore
            if isinstance(target, cst.Name) and op.kind == "pack" and \
                    self.bound[target.value] == 1:  # (bound once: else per value, below)
                self.packs[target.value] = [  # element-wise activity through `a, b = (x, y)`
                    e.value.value if isinstance(e.value, cst.Name) else None
                    for e in assign.value.elements]  # type: ignore[attr-defined]
            strings = cl.string_tuple(assign.value)
            if isinstance(target, cst.Name) and strings is not None:
                self.name_tuples[target.value] = strings
            defined = cl.defined_names(op, self.name_tuples)
            if defined is not None:  # ad.defined(locals(), names): active through the names
                if any(n in self.active for n in defined):
                    self.active.update(assigned_names(target))
                continue
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(assign.value, cst.Name) \
                    and assign.value.value in self.packs:
                elements = self.packs[assign.value.value]
                names = assigned_names(target)
                if len(names) == len(elements):
                    self.active.update(n for n, e in zip(names, elements) if e in self.active)
                    continue
            reads = self.reads(op)
            if any(n in self.active for n in reads) and self.propagates(op) \
                    and not self.static_comprehension(assign.value):
                for t in assign.targets:
                    self.active.update(assigned_names(t.target))
            elif any(n in self.active for n in reads) and self.user_code and _drops(op):
                raise dropped_derivative(self, stmt)

    def static_comprehension(self, value: cst.BaseExpression) -> bool:
        return cl.static_comprehension(value, self.namespace, self.local_names)

    def reaching(self, stmts: list[cst.BaseStatement], useful: set[str]) -> None:
        """Add to `useful` the operands of statements whose results are useful."""
        for stmt in stmts:
            if isinstance(stmt, cst.FunctionDef):
                if stmt.name.value in useful:
                    useful.update(self.closure(stmt))
                continue
            if isinstance(stmt, cst.BaseCompoundStatement):
                for block in self.nested(stmt):
                    self.reaching(block, useful)
                continue
            append = _append(stmt)
            if append is not None and append[0] in useful:
                useful.add(append[1])
            assign = _assign(stmt)
            if assign is None:
                continue
            item = _item_set(assign)
            if item is not None:  # d[k] = v: v's derivative is useful where d's is
                if item[0] in useful:
                    useful.add(item[2])
                continue
            targets = [n for t in assign.targets for n in assigned_names(t.target)]
            source = assign.value.value if isinstance(assign.value, cst.Name) else None
            if len(targets) > 1 and source in self.packs and \
                    len(self.packs[source]) == len(targets):  # a, b = (x, y): element-wise
                for n, e in zip(targets, self.packs[source]):
                    if n in useful and e is not None:
                        useful.update((e, source))
                continue
            op = self.op_of(assign)
            defined = cl.defined_names(op, self.name_tuples)
            if defined is not None:
                if any(n in useful for n in targets):
                    useful.update(defined)
                continue
            if any(n in useful for n in targets) and self.propagates(op) \
                    and not self.static_comprehension(assign.value):
                useful.update(self.reads(op))
                if op.kind == "call" and op.method_self:  # x.at[i].set(v): the chain
                    useful.add(op.method_self)

    def closure(self, stmt: cst.FunctionDef) -> list[str]:
        """The enclosing function's variables a nested ``def`` reads."""
        if stmt not in self.closures:
            self.closures[stmt] = closure_reads(stmt, self.local_names)
        return self.closures[stmt]

    @staticmethod
    def reads(op: cl.Op) -> list[str]:
        return cl.reads(op)

    def propagates(self, op: cl.Op) -> bool:
        return cl.propagates(op)

    # --- emission ----------------------------------------------------------------------
    def block(self, stmts: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        out: list[cst.BaseStatement] = []
        for stmt in stmts:
            if isinstance(stmt, cst.FunctionDef):  # its tangent: its closure's tangents
                self.origin[stmt] = self.parsed.locations.get(stmt)
                out.append(stmt)
                name = stmt.name.value
                if name in self.active:
                    free = [n for n in self.closure(stmt) if n in self.active]
                    items = ", ".join(f"{n!r}: {self.dot(n)}" for n in free)
                    out.append(self.line(f"{self.dot(name)} = {{{items}}}"))
                    self.closure_tangents[name] = free
                continue
            if isinstance(stmt, (cst.For, cst.While, cst.If, cst.Try, cst.With)):
                body = self.block(_block(stmt.body))
                if isinstance(stmt, cst.For) and isinstance(stmt.target, cst.Name) and \
                        stmt.target.value in self.active:  # a loop index read as active
                    index = stmt.target.value
                    body.insert(0, self.line(f"{self.dot(index)} = ad.zeros_like_tree({index})"))
                new: cst.BaseStatement = stmt.with_changes(body=stmt.body.with_changes(
                    body=body))
                orelse = getattr(stmt, "orelse", None)
                if isinstance(orelse, cst.Else):
                    new = new.with_changes(orelse=orelse.with_changes(
                        body=orelse.body.with_changes(body=self.block(_block(orelse.body)))))
                if isinstance(stmt, cst.Try):
                    new = new.with_changes(handlers=[h.with_changes(body=h.body.with_changes(
                        body=self.block(_block(h.body)))) for h in stmt.handlers])
                self.origin[new] = self.parsed.locations.get(stmt)
                out.append(new)
                continue
            append = _append(stmt)
            if append is not None and append[0] in self.active:
                xs, v = append
                value = self.dot(v) if v in self.active else "None"
                out.extend([stmt, self.line(f"{self.dot(xs)}.append({value})")])
                continue
            assign = _assign(stmt)
            item = _item_set(assign) if assign is not None else None
            if item is not None and item[0] in self.active:  # d[k] = v, in place (library)
                base, key, value = item
                out.extend([stmt, self.line(
                    f"{self.dot(base)} = ad.set_item_tangent({base}, {self.dot(base)}, {key}, "
                    f"{self.dot(value) if value in self.active else 'None'})")])
                continue
            targets = assigned_names(assign.targets[0].target) if assign is not None else []
            if assign is None or not any(n in self.active for n in targets):
                self.origin[stmt] = self.parsed.locations.get(stmt)
                out.append(stmt)
                continue
            try:
                emitted = self.tangent_rule(stmt, assign)
            except TranspileError as err:
                if self.user_code:
                    raise
                emitted = [stmt, _deferred_error(err)]  # library code: fail if it runs
            for function, free in self.closure_tangents.items():  # late binding: a closure
                emitted += [self.line(f"{self.dot(function)}[{n!r}] = {self.dot(n)}")  # sees
                            for n in targets if n in free]  # the variable's new value
            self.comment(emitted, stmt)
            for new in emitted:
                self.origin[new] = self.parsed.locations.get(stmt)
            out.extend(emitted)
        return out

    def comment(self, emitted: list[cst.BaseStatement], stmt: cst.BaseStatement) -> None:
        """``# jvp of: <the user's line>`` above the first statement of a user line."""
        loc = self.parsed.locations.get(stmt)
        if loc is None or not self.user_code or len(emitted) < 2:
            return
        text = f"# jvp of: {_source_line(loc)}"
        if text == self.last_comment:
            return
        self.last_comment = text
        first = emitted[0]
        emitted[0] = first.with_changes(leading_lines=[
            *getattr(first, "leading_lines", ()), cst.EmptyLine(comment=cst.Comment(text))])

    def unpacked_dots(self, target: cst.BaseExpression) -> tuple[str, str]:
        """The tangents' target for an unpacking target, with its nesting, and the spec
        `ad.unpack_tangents` reads it by: a count, or per element None (a name) or the
        nested element's spec."""
        if not isinstance(target, (cst.Tuple, cst.List)):
            names = assigned_names(cast(cst.BaseAssignTargetExpression, target))  # an assignment's target
            return (self.dot(names[0]) if names else "_"), "None"
        parts = [self.unpacked_dots(e.value) for e in target.elements]
        dots = "(" + "".join(d + ", " for d, _ in parts) + ")"
        nested = any(spec != "None" for _, spec in parts)
        spec = ("(" + "".join(sp + ", " for _, sp in parts) + ")") if nested else str(len(parts))
        return dots, spec

    def tangent_rule(self, stmt: cst.BaseStatement, assign: cst.Assign) -> list[cst.BaseStatement]:
        """The statement itself (or its replacement) and the statements of its tangent."""
        target = assign.targets[0].target
        value = assign.value
        if isinstance(target, (cst.Tuple, cst.List)):  # a, b = t   (or (a, b), c = t)
            dots, spec = self.unpacked_dots(target)
            return [stmt, cst.parse_statement(
                f"{dots[1:-1]} = ad.unpack_tangents({self.tangent(value)}, {_text(value)}, "
                f"{spec})")]
        t = target.value  # type: ignore[attr-defined]
        op = self.op_of(assign)
        defined = cl.defined_names(op, self.name_tuples)
        if defined is not None:  # the tangents of the names, where they were assigned
            defined_dots = tuple(self.dot(n) if n in self.active else "" for n in defined)
            return [stmt, self.line(f"{self.dot(t)} = ad.defined({op.operands[0]}, {defined_dots!r})")]
        if not (any(n in self.active for n in self.reads(op)) and self.propagates(op)):
            return [stmt, self.line(f"{self.dot(t)} = ad.zeros_like_tree({t})")]
        if self.definitions.get(t) in ("at", "at_index"):  # x.at, x.at[i]: see at_update
            return [stmt]
        if op.kind == "copy":
            return [stmt, self.line(f"{self.dot(t)} = {self.dot(op.operands[0])}")]
        if op.kind == "index":
            return [stmt, self.line(f"{self.dot(t)} = ad.index_tangent("
                                    f"{self.tangent(value.value)}, {index_text(value)}, {t})")]  # type: ignore
        if op.kind == "pack":
            items = ", ".join(  # (`*xs`: the tangents of its items, in their places)
                f"*ad.tangents_of({self.tangent(e.value)}, {_text(e.value)})"
                if isinstance(e, cst.StarredElement) else self.tangent(e.value)
                for e in value.elements)  # type: ignore[attr-defined]
            close = "," if len(value.elements) == 1 else ""  # type: ignore[attr-defined]
            brackets = "[]" if isinstance(value, cst.List) else "()"
            return [stmt, self.line(
                f"{self.dot(t)} = {brackets[0]}{items}{close}{brackets[1]}")]
        if op.kind == "dict":
            items = ", ".join(  # (`**d`: its entries' tangents, None where it has none)
                f"**({self.tangent(e.value)} or dict.fromkeys({_text(e.value)}))"
                if isinstance(e, cst.StarredDictElement) else
                f"{_text(e.key)}: {self.tangent(e.value)}"  # type: ignore[attr-defined]
                for e in value.elements)  # type: ignore[attr-defined]
            return [stmt, self.line(f"{self.dot(t)} = {{{items}}}")]
        if op.kind == "attribute":
            fn_name = cl.ATTRIBUTE_TO_FUNCTION.get(op.attr)
            if fn_name is None:  # a field of a NamedTuple, a dataclass, a registered pytree
                obj = value.value  # type: ignore[attr-defined]
                return [stmt, self.line(f"{self.dot(t)} = ad.attribute_tangent("
                                        f"{self.tangent(obj)}, {op.attr!r})")]
            return self.call(stmt, t, _jnp(fn_name), [cst.Arg(value.value)])  # type: ignore
        if op.kind in ("binop", "unary"):
            args = [value.left, value.right] if op.kind == "binop" else [value.expression]  # type: ignore
            return self.call(stmt, t, _jnp(op.callee), [cst.Arg(a) for a in args])
        if op.kind == "call":
            return self.call_kind(stmt, t, op, value)  # type: ignore[arg-type]
        if isinstance(value, cst.ListComp):
            return [self.comprehension(stmt, t, value)]
        raise self.error(stmt, "cannot differentiate this statement in forward mode",
                         "rewrite it with transpiler.numpy functions")

    def line(self, text: str) -> cst.BaseStatement:
        """A generated statement; the helper modules (``ad.``, ``jnp.`` ...) under their
        ``_ad`` ... names when the function's own globals use those names otherwise."""
        return renamed_line(text, self.renamed, _MODULE_PREFIX)

    # --- call rules: primitives (JVP templates), composites and helpers (their own
    # generated jvp_<name>), custom_jvp, callees known at run time, .at[] updates, list
    # comprehensions, the linear helpers of generated reverse-mode code
    def comprehension(self, stmt: cst.BaseStatement, t: str,
                      comp: cst.ListComp) -> cst.BaseStatement:
        """``t = [f(..., a, ...) for a in xs]``: ``t, t_dot = ad.map_jvp(f, xs, xs_dot, ...)``."""
        loop, elt = comp.for_in, comp.elt
        var = loop.target.value if isinstance(loop.target, cst.Name) else None
        ok = (var is not None and loop.inner_for_in is None and not loop.ifs
              and isinstance(loop.iter, cst.Name) and isinstance(elt, cst.Call))
        args = list(elt.args) if ok else []  # type: ignore[attr-defined]
        slots = [i for i, a in enumerate(args) if isinstance(a.value, cst.Name)
                 and a.value.value == var and a.keyword is None]
        others = [a for i, a in enumerate(args) if i not in slots]
        if not ok or len(slots) != 1 or any(var in cl.names_in(a.value) for a in others) \
                or any(self.is_active(a.value) for a in others):
            raise self.error(stmt, "cannot differentiate this list comprehension",
                             "only `[f(x, ...) for x in xs]` is supported for differentiated "
                             "values; write the elements out, or use jnp.stack over an axis")
        positional = ", ".join("ad.ELEMENT" if i == slots[0] else _text(a.value)
                               for i, a in enumerate(args) if a.keyword is None)
        kwargs = ", ".join(f"{a.keyword.value!r}: {_text(a.value)}"  # type: ignore[union-attr]
                           for a in args if a.keyword is not None)
        xs = loop.iter.value  # type: ignore[attr-defined]
        return self.line(f"{t}, {self.dot(t)} = ad.map_jvp({_text(elt.func)}, {xs}, "  # type: ignore
                         f"{self.tangent(loop.iter)}, ({positional},), {{{kwargs}}})")

    # --- calls --------------------------------------------------------------------------
    def call_kind(self, stmt: cst.BaseStatement, t: str, op: cl.Op,
                  call: cst.Call) -> list[cst.BaseStatement]:
        kind = cl.callee_kind(op.callee)
        args = list(call.args)
        if kind == "method":
            receiver = cst.Arg(cst.Name(op.method_self))  # type: ignore[arg-type]
            method = op.callee[1]
            if method in cl.METHOD_OWN:
                from transpiler.array_methods import ArrayMethods
                return self.call(stmt, t, getattr(ArrayMethods, method), [receiver, *args])
            if method in ("items", "values"):  # a dict's entries
                d = op.method_self
                return [stmt, self.line(f"{self.dot(t)} = ad.{method}_tangent({d}, "
                                        f"{self.tangent(cst.Name(d))})")]  # type: ignore
            if method == "keys":
                return [stmt, self.line(f"{self.dot(t)} = None")]
            if method in AT_METHODS:
                return self.at_update(stmt, t, op, args)
            name = cl.METHOD_TO_FUNCTION.get(method)
            if name is None:  # a method of a Python class: its function, the receiver first
                func, args = cl.unbound_method(op.method_self, method, args)  # type: ignore
                return self.runtime_call(stmt, t, call.with_changes(func=func, args=args), args)
            return self.call(stmt, t, _jnp(name), [receiver, *args])
        if kind == "seed":  # ad.seed(out_bar, out): the cotangent passes (the seed is constant)
            return [stmt, self.line(f"{self.dot(t)} = {self.tangent(args[0].value)}")]
        if kind == "pass":  # tuple(x), list(x), ad.finalize(bar, x) ...: the identity
            if not self.is_active(args[0].value):  # (active through another argument)
                return [stmt, self.line(f"{self.dot(t)} = ad.zeros_like_tree({t})")]
            if op.callee in (tuple, list):  # (of an array: its rows)
                return [stmt, self.line(f"{self.dot(t)} = ad.rows_tangent("
                                        f"{self.tangent(args[0].value)}, {op.callee.__name__})")]
            if op.callee is sequence:  # (of a dict: its keys, which take no tangent)
                return [stmt, self.line(f"{self.dot(t)} = ad.sequence_derivative("
                                        f"{self.tangent(args[0].value)}, "
                                        f"{cast(cst.Name, args[0].value).value})")]  # (ANF: a name)
            return [stmt, self.line(f"{self.dot(t)} = {self.tangent(args[0].value)}")]
        rule = helper_tangents.RULES.get(kind)
        if rule is not None:  # a run-time helper of generated code: linear in its derivatives
            texts = [_text(a.value) for a in args]
            dots = [self.tangent(a.value) for a in args]
            return [stmt, self.line(f"{self.dot(t)} = {rule(t, texts, dots)}")]
        if kind == "jitted":
            return self.call(stmt, t, op.callee._fun, args)
        if kind == "custom_jvp":
            return self.custom_call(stmt, t, op.callee, args)
        if kind == "custom" and (op.callee.linear or op.callee.nondifferentiable):
            # linear: its tangent is itself on the tangent; no derivative: its own error
            return self.runtime_call(stmt, t, call, args)
        if kind == "custom":
            raise self.error(stmt, "can't apply forward-mode autodiff (jvp) to a custom_vjp "
                             "function", "give it a custom_jvp rule, or differentiate it in "
                             "reverse mode (grad/vjp)")
        if kind == "function" and any(a.star for a in args):  # f(*args, **kwargs): bound at
            return self.runtime_call(stmt, t, call, args)         # run time (ad.jvp_call)
        if kind in ("primitive", "function"):
            return self.call(stmt, t, op.callee, args)
        if kind in ("local", "runtime"):
            return self.runtime_call(stmt, t, call, args)
        if kind == "control":  # lax.cond, fori_loop, scan ...: rules of their own (ad/control.py)
            from transpiler.transforms.reverse.adjoints import normalized_args
            return self.runtime_call(stmt, t, call, normalized_args(self, stmt, op.callee, args))
        return self.runtime_call(stmt, t, call, args)  # no source: traced (transforms/common/traced.py)

    def call(self, stmt: cst.BaseStatement, t: str, fn: Any,
             args: list[cst.Arg]) -> list[cst.BaseStatement]:
        stars = [a for a in args if a.star]
        variadic = isinstance(fn, Primitive) and getattr(fn.jvp, "variadic", False)
        if stars and not (variadic and len(stars) == 1 and stars[0].star == "*"
                          and stars[0] is [a for a in args if a.keyword is None][-1]):
            raise self.error(stmt, "star-arguments in a call differentiated in forward mode are "
                             "not supported yet", "pass the arguments one by one")
        if isinstance(fn, CustomJVP):
            return self.custom_call(stmt, t, fn, args)
        if isinstance(fn, Primitive):
            return self.primitive(stmt, t, fn, args)
        return self.function(stmt, t, fn, args)

    def primitive(self, stmt: cst.BaseStatement, t: str, prim: Primitive,
                  args: list[cst.Arg]) -> list[cst.BaseStatement]:
        """``t_dot = ad.tangent_like(<sum of the active operands' contributions>, t)``."""
        template = getattr(prim, "jvp", None)
        if template is None:
            raise self.error(stmt, f"the primitive `{prim.name}` has no JVP rule")
        positional = [a for a in args if a.keyword is None]
        # `x = f(x)`: the tangent reads the old x, so the new value waits in a temporary.
        reassigned = t in {_text(a.value) for a in args}
        out = self.tmp() if reassigned else t
        names: dict[str, str] = {"out": out}
        names.update({a.keyword.value: _text(a.value) for a in args if a.keyword is not None})
        fixed = template.operands[:-1] if template.variadic else template.operands
        terms: list[str] = []
        for operand, a in zip(fixed, positional):
            names[operand] = _text(a.value)
            names[f"{operand}_dot"] = self.tangent(a.value)
        for operand, a in zip(fixed, positional):  # (an operand with no contribution is
            if self.is_active(a.value) and operand in template.contributions:  # integral)
                terms.append(_substitute(template.contribution(operand), names))
        if template.variadic:
            rest = positional[len(fixed):]
            operand = template.operands[-1]
            if rest and rest[-1].star:  # prim(*xs): the list itself, its tangents a list
                xs = rest[-1].value
                names[operand] = f"list({_text(xs)})"
                names[f"{operand}_dot"] = f"list(ad.tangents_of({self.tangent(xs)}, {_text(xs)}))"
                active = self.is_active(xs)
            else:
                names[operand] = "[" + ", ".join(_text(a.value) for a in rest) + "]"
                names[f"{operand}_dot"] = "[" + ", ".join(self.tangent(a.value)
                                                          for a in rest) + "]"
                active = any(self.is_active(a.value) for a in rest)
            if active:
                terms.append(_substitute(template.contribution(operand), names))
        total = " + ".join(f"({term})" if len(terms) > 1 else term for term in terms) \
            if terms else f"ad.zeros_like_tree({out})"  # only integral operands were active
        tangent = self.line(f"{self.dot(t)} = ad.tangent_like({total}, {out})")
        if not reassigned:
            return [stmt, tangent]
        assign = _assign(stmt)
        assert assign is not None
        first = stmt.with_changes(body=[assign.with_changes(  # type: ignore[attr-defined]
            targets=[cst.AssignTarget(cst.Name(out))])])
        return [first, tangent, self.line(f"{t} = {out}")]

    def function(self, stmt: cst.BaseStatement, t: str, fn: Any,
                 args: list[cst.Arg]) -> list[cst.BaseStatement]:
        """``t, t_dot = jvp_g(<args>, <param>_dot=<tangent>, ...)``: value and tangent."""
        positional = [a for a in args if a.keyword is None]
        try:
            signature = source_signature(fn)
            bound = signature.bind_partial(*range(len(positional)), **{
                a.keyword.value: -1 - i for i, a in enumerate(args) if a.keyword is not None})
        except (TypeError, ValueError) as err:
            raise self.error(stmt, f"cannot match this call to {getattr(fn, '__name__', fn)}: "
                             f"{err}") from None
        tangents: dict[str, str] = {}
        for pname, slot in bound.arguments.items():
            if isinstance(slot, tuple):  # *args of the callee: a tuple of tangents
                if any(self.is_active(positional[s].value) for s in slot):
                    items = ", ".join(self.tangent(positional[s].value) for s in slot)
                    tangents[pname] = f"({items},)"
                continue
            if isinstance(slot, dict):  # **kwargs of the callee: a dict of tangents
                nodes = {k: args[-1 - s].value for k, s in slot.items()}
                if any(self.is_active(n) for n in nodes.values()):
                    items = ", ".join(f"{k!r}: {self.tangent(n)}" for k, n in nodes.items())
                    tangents[pname] = f"{{{items}}}"
                continue
            node = positional[slot].value if slot >= 0 else args[-1 - slot].value
            if self.is_active(node):
                tangents[pname] = self.tangent(node)
        if not tangents:
            return [stmt]
        base, jvp_fn = self.jvp_of(fn, frozenset(tangents))
        name = self.callee_name(base, jvp_fn)
        self.callees[name] = (fn, frozenset(tangents))
        suffix = getattr(jvp_fn, "tangent_suffix", "_dot")
        call_args = [_code(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in args]
        call_args += [f"{p}{suffix}={v}" for p, v in tangents.items()]
        return [self.line(f"{t}, {self.dot(t)} = {name}({', '.join(call_args)})")]

    def callee_name(self, base: str, fn: Any) -> str:
        return callee_name(self, base, fn, f"jvp_{self.func.name.value}")

    def custom_call(self, stmt: cst.BaseStatement, t: str, fn: Any,
                    args: list[cst.Arg]) -> list[cst.BaseStatement]:
        """A `custom_jvp` function: its own rule, run by ``ad.custom_jvp_call``."""
        if any(a.keyword is not None for a in args):
            raise self.error(stmt, "keyword arguments in a call of a custom_jvp function are "
                             "not supported", "pass the arguments positionally")
        name = self.callee_name(f"_custom_{getattr(fn, '__name__', 'f')}", fn)
        positional = [a for a in args if a.star != "**"]
        primals = ", ".join(("*" if a.star else "") + _text(a.value) for a in positional)
        tangents = ", ".join(
            (f"*ad.tangents_of({self.tangent(a.value)}, {_text(a.value)})" if a.star
             else self.tangent(a.value)) for a in positional)
        close = "," if positional else ""
        kwargs = "".join(f", {_text(a.value)}" for a in args if a.star == "**")  # (must be {})
        return [self.line(f"{t}, {self.dot(t)} = ad.custom_jvp_call({name}, ({primals}{close}), "
                          f"({tangents}{close}){kwargs})")]

    def runtime_call(self, stmt: cst.BaseStatement, t: str, call: cst.Call,
                     args: list[cst.Arg]) -> list[cst.BaseStatement]:
        """A callee known only at run time (a function passed in): ``ad.jvp_call``."""
        kw_dots = ", ".join(  # (the tangents of differentiated keyword arguments)
            f"**({self.tangent(a.value)} or {{}})" if a.star == "**" else
            f"{a.keyword.value!r}: {self.tangent(a.value)}"  # type: ignore[union-attr]
            for a in args if (a.keyword is not None or a.star == "**") and self.is_active(a.value))
        positional = [a for a in args if a.keyword is None and a.star != "**"]
        primals = ", ".join(("*" if a.star else "") + _text(a.value) for a in positional)
        tangents = ", ".join(
            (f"*ad.tangents_of({self.tangent(a.value)}, {_text(a.value)})" if a.star
             else self.tangent(a.value)) for a in positional)
        close = "," if positional else ""
        kwargs = ", ".join(f"**{_text(a.value)}" if a.star == "**" else
                           f"{a.keyword.value!r}: {_text(a.value)}"  # type: ignore[union-attr]
                           for a in args if a.keyword is not None or a.star == "**")
        fn_dot = ""
        if isinstance(call.func, cst.Name) and call.func.value in self.active:  # a closure
            fn_dot = f", {self.dot(call.func.value)}"
        if kw_dots:
            fn_dot += f", kwargs_dot={{{kw_dots}}}"
        return [self.line(f"{t}, {self.dot(t)} = ad.jvp_call({_text(call.func)}, "
                          f"({primals}{close}), ({tangents}{close}), {{{kwargs}}}{fn_dot})")]

    def at_update(self, stmt: cst.BaseStatement, t: str, op: cl.Op,
                  args: list[cst.Arg]) -> list[cst.BaseStatement]:
        """``t = x.at[idx].set/add/multiply/get(v)`` (ANF: ``r = x.at; s = r[idx]; ...``):
        the same update of the tangents, which is linear in (x, v) except for multiply."""
        receiver = op.method_self or ""
        if self.definitions.get(receiver) != "at_index":
            raise self.error(stmt, f"cannot differentiate `.{op.callee[1]}()` here",
                             "write the update as x.at[index].set(value) in one expression")
        x, index = self.at_parts[receiver]
        method = "multiply" if op.callee[1] == "mul" else op.callee[1]
        x_dot = self.tangent(cst.Name(x)) if x in self.active else f"ad.zeros_like_tree({x})"
        if method == "get":
            return [stmt, self.line(f"{self.dot(t)} = ad.at({x_dot})[{index}].get()")]
        value = args[0].value
        v = _text(value)
        v_dot = self.tangent(value) if self.is_active(value) else None
        if method == "set":
            rule = f"ad.at({x_dot})[{index}].set({v_dot if v_dot else 0})"
        elif method == "add":
            rule = f"ad.at({x_dot})[{index}].add({v_dot})" if v_dot else x_dot
        else:  # multiply: d(x * v) at idx = x_dot * v + x * v_dot
            rule = f"ad.at({x_dot})[{index}].multiply({v})"
            if v_dot:
                rule += f" + ad.at(ad.zeros_like_tree({x}))[{index}].add({x}[{index}] * {v_dot})"
        return [stmt, self.line(f"{self.dot(t)} = ad.tangent_like({rule}, {t})")]


def _item_set(assign: cst.Assign) -> Optional[tuple[str, str, str]]:
    """``d[k] = v`` (a container's element set in place, in the library's code): (d, the
    key's text, v), for a Name `d` and an atom `v`; else None."""
    target = assign.targets[0].target
    if len(assign.targets) != 1 or not isinstance(target, cst.Subscript) or \
            not isinstance(target.value, cst.Name) or not isinstance(assign.value, cst.Name) \
            or len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return None
    return target.value.value, _text(target.slice[0].slice.value), assign.value.value


def positional_tangent_names(func: cst.FunctionDef, suffix: str) -> list[str]:
    return [f"{p}{suffix}" for p in positional_params(func)]


_MODULE_PREFIX = re.compile(r"(?<![\w.])(ad|jnp|lax|np)\.")


def _substitute(expression: str, names: dict[str, str]) -> str:
    """`expression` with its value Names replaced through `names` (see statements._pieces)."""
    parts = []
    for literal, name in _expression_pieces(" ".join(expression.split("\n")).strip()):
        parts.append(literal)
        parts.append(names.get(name, name))
    return "".join(parts)
