"""Forward-mode AD as a source transform: ANF code in, primal and tangent Python out.

Every statement that computes a differentiated value is followed by the statement computing
its tangent, ``t_dot`` (``# jvp of: <line>`` comments point at the user's source); calls of
other Python functions (``transpiler.numpy`` composites, the user's helpers) become calls of
their own generated ``jvp_<name>``, which return the value and its tangent together. There
is no tape and no recomputation: control flow stays as written.

Generated functions keep the original signature plus one keyword-only tangent per
differentiated parameter (``x_dot=None``) and return ``(out, out_dot)``.

Which variables carry tangents is the activity analysis's (activity.py); the tangent of each
assignment comes from its rule (tangents.py). This module walks the function and puts the
pieces together.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Optional

import libcst as cst

from transpiler.errors import _PACKAGE_DIR, TranspileError
from transpiler.transforms.common.generated import aliases
from transpiler.transforms.common.rename import assigned_names
from transpiler.transforms.common.statements import (
    TIGHT_EQUAL,
    _all_assigned,
    _append,
    _assign,
    _block,
    _deferred_error,
    _param_names,
    _source_line,
    atom_text,
    callee_name,
    renamed_line,
    split_return,
    transform_namespace,
)
from transpiler.transforms.forward.activity import ActivityAnalysis, item_set
from transpiler.transforms.forward.tangents import tangent_of
from transpiler.transforms.reverse.transform import Generated

_MODULE_PREFIX = re.compile(r"(?<![\w.])(ad|jnp|lax|np)\.")


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
        self.closure_tangents: dict[str, list[str]] = {}  # emitted def -> its active reads
        self.renamed = {name.lstrip("_"): name for name in aliases(self.namespace)
                        if name.startswith("_")}  # e.g. {"ad": "_ad"} (see generated.aliases)
        self.activity = ActivityAnalysis(active_params, self.namespace, self.local_names,
                                         self.user_code, self.error)

    # --- names and generated lines, for the tangent rules ---------------------------------
    def dot(self, name: str) -> str:
        """The name of `name`'s tangent variable."""
        return f"{name}{self.suffix}"

    def tangent(self, node: cst.BaseExpression) -> str:
        """The tangent of an operand (an atom): its variable, or None for a constant."""
        if isinstance(node, cst.Name) and node.value in self.activity.active:
            return self.dot(node.value)
        return "None"

    def is_active(self, node: Optional[cst.BaseExpression]) -> bool:
        return isinstance(node, cst.Name) and node.value in self.activity.active

    def tmp(self, stem: str = "j") -> str:
        while True:
            self.counter += 1
            name = f"_{stem}{self.counter}"
            if name not in self.local_names:
                self.local_names.add(name)
                return name

    def error(self, stmt: cst.CSTNode, message: str, hint: str = "") -> TranspileError:
        return TranspileError(message, self.parsed.locations.get(stmt), hint)

    def line(self, text: str) -> cst.BaseStatement:
        """A generated statement; the helper modules (``ad.``, ``jnp.`` ...) under their
        ``_ad`` ... names when the function's own globals use those names otherwise."""
        return renamed_line(text, self.renamed, _MODULE_PREFIX)

    def callee_name(self, base: str, fn: Any) -> str:
        return callee_name(self, base, fn, f"jvp_{self.func.name.value}")

    # --- the pipeline ------------------------------------------------------------------
    def run(self) -> Generated:
        stmts, ret = split_return(self, self.func)
        out = ret.body[0].value
        assert out is not None  # ANF returns always carry a value (a name)
        self.activity.run(stmts, out)
        active = self.activity.active
        # A parameter that is not differentiated but is reassigned from a differentiated
        # value (``axis = _axis(x, axis)``) is read with a zero tangent before that.
        statements = [self.line(f"{self.dot(p)} = None") for p in self.params
                      if p in active and p not in self.active_params]
        statements += self.block(stmts)
        # An output that does not depend on the differentiated inputs (say, x is only read
        # for its shape) still returns zeros: callers keep every active value's tangent.
        tangent = self.tangent(out)
        if tangent == "None":
            tangent = f"ad.zeros_like_tree({atom_text(out)})"
        result = cst.parse_statement(f"return {atom_text(out)}, {tangent}")
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

    # --- the walk: each statement, and after it its tangent's ----------------------------
    def block(self, stmts: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        active = self.activity.active
        out: list[cst.BaseStatement] = []
        for stmt in stmts:
            if isinstance(stmt, cst.FunctionDef):  # its tangent: its closure's tangents
                self.origin[stmt] = self.parsed.locations.get(stmt)
                out.append(stmt)
                name = stmt.name.value
                if name in active:
                    free = [n for n in self.activity.closure(stmt) if n in active]
                    items = ", ".join(f"{n!r}: {self.dot(n)}" for n in free)
                    out.append(self.line(f"{self.dot(name)} = {{{items}}}"))
                    self.closure_tangents[name] = free
                continue
            if isinstance(stmt, (cst.For, cst.While, cst.If, cst.Try, cst.With)):
                body = self.block(_block(stmt.body))
                if isinstance(stmt, cst.For) and isinstance(stmt.target, cst.Name) and \
                        stmt.target.value in active:  # a loop index read as active
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
            if append is not None and append[0] in active:
                xs, v = append
                value = self.dot(v) if v in active else "None"
                out.extend([stmt, self.line(f"{self.dot(xs)}.append({value})")])
                continue
            assign = _assign(stmt)
            item = item_set(assign) if assign is not None else None
            if item is not None and item[0] in active:  # d[k] = v, in place (library)
                base, key, value = item
                out.extend([stmt, self.line(
                    f"{self.dot(base)} = ad.set_item_tangent({base}, {self.dot(base)}, {key}, "
                    f"{self.dot(value) if value in active else 'None'})")])
                continue
            targets = assigned_names(assign.targets[0].target) if assign is not None else []
            if assign is None or not any(n in active for n in targets):
                self.origin[stmt] = self.parsed.locations.get(stmt)
                out.append(stmt)
                continue
            try:
                emitted = tangent_of(self, stmt, assign)
            except TranspileError as err:
                if self.user_code:
                    raise
                emitted = [stmt, _deferred_error(err, self.parsed.locations.get(stmt))]
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
