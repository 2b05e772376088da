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
from typing import Any, Callable, Optional

import libcst as cst

from transpiler.errors import TranspileError
from transpiler.transforms import classify as cl
from transpiler.transforms.ad_utils import (
    TIGHT_EQUAL,
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
from transpiler.transforms.forward_rules import CallRules, _text
from transpiler.transforms.rename import assigned_names
from transpiler.transforms.ad_utils import _append, _drops, closure_reads, dropped_derivative
from transpiler.transforms.reverse_ad import Generated


class ForwardAD(CallRules):
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
        from transpiler.errors import _PACKAGE_DIR
        # The library's composites, and code generated from them, fail lazily (at run
        # time, if the unsupported statement is reached); the user's code fails now.
        self.user_code = not library and not str(parsed.filename).startswith(_PACKAGE_DIR)
        self.last_comment: Optional[str] = None
        self.definitions: dict[str, str] = {}  # name -> "at" | "at_index" (x.at, x.at[i])
        self.at_parts: dict[str, tuple[str, Optional[str]]] = {}  # name -> (x, index text)
        self.packs: dict[str, list[Optional[str]]] = {}  # t = (a, b): t -> ["a", "b"]
        self.closures: dict[cst.FunctionDef, list[str]] = {}  # nested def -> what it reads
        self.closure_tangents: dict[str, list[str]] = {}  # emitted def -> its active reads
        from transpiler.transforms.api import _aliases
        self.renamed = {name.lstrip("_"): name for name in _aliases(self.namespace)
                        if name.startswith("_")}  # e.g. {"ad": "_ad"} (see api._aliases)

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
        statements = self.block(stmts)
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
        if not isinstance(stmt, (cst.For, cst.While, cst.If, cst.Try)):
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
            if isinstance(target, cst.Name) and op.kind == "pack":
                self.packs[target.value] = [  # element-wise activity through `a, b = (x, y)`
                    e.value.value if isinstance(e.value, cst.Name) else None
                    for e in assign.value.elements]  # type: ignore[attr-defined]
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
            targets = [n for t in assign.targets for n in assigned_names(t.target)]
            source = assign.value.value if isinstance(assign.value, cst.Name) else None
            if len(targets) > 1 and source in self.packs and \
                    len(self.packs[source]) == len(targets):  # a, b = (x, y): element-wise
                for n, e in zip(targets, self.packs[source]):
                    if n in useful and e is not None:
                        useful.update((e, source))
                continue
            op = self.op_of(assign)
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
            if isinstance(stmt, (cst.For, cst.While, cst.If, cst.Try)):
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

    def tangent_rule(self, stmt: cst.BaseStatement, assign: cst.Assign) -> list[cst.BaseStatement]:
        """The statement itself (or its replacement) and the statements of its tangent."""
        target = assign.targets[0].target
        value = assign.value
        if isinstance(target, (cst.Tuple, cst.List)):  # a, b = t
            names = assigned_names(target)
            dots = ", ".join(self.dot(n) for n in names)
            source = _text(value)
            return [stmt, cst.parse_statement(
                f"{dots}, = ad.unpack_tangents({self.tangent(value)}, {source}, {len(names)})")]
        t = target.value  # type: ignore[attr-defined]
        op = self.op_of(assign)
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
            items = ", ".join(self.tangent(e.value) for e in value.elements)  # type: ignore
            close = "," if len(value.elements) == 1 else ""  # type: ignore[attr-defined]
            brackets = "[]" if isinstance(value, cst.List) else "()"
            return [stmt, self.line(
                f"{self.dot(t)} = {brackets[0]}{items}{close}{brackets[1]}")]
        if op.kind == "dict":
            items = ", ".join(f"{_text(e.key)}: {self.tangent(e.value)}"  # type: ignore
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

def positional_tangent_names(func: cst.FunctionDef, suffix: str) -> list[str]:
    return [f"{p}{suffix}" for p in positional_params(func)]


_MODULE_PREFIX = re.compile(r"(?<![\w.])(ad|jnp|lax|np)\.")
