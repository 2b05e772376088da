"""Batching (`vmap`) as a source transform: ANF code in, the batched Python program out.

Every variable that may depend on a batched input gets a companion, ``x_b``: the axis of
``x`` that is the batch axis (an int), None when the value is the same for every member of
the batch, or -- for tuples, lists, dicts and closures -- the same structure of axes. Each
statement that reads a batched value becomes its batched form (``# vmap of: <line>``):

    y = jnp.sin(x)        ->    y, y_b = bt.call(jnp.sin, (x,), (x_b,))
    n = x.shape[0]        ->    n = bt.view(x, x_b).shape[0]      (one member's shape)
    w = params['w']       ->    w, w_b = bt.getitem(params, params_b, 'w', None)

``bt.call`` (bt/__init__.py) applies a primitive's batching rule, or the batched code of
a Python function (a ``transpiler.numpy`` composite, the user's helper), generated the same
way on first use. Statements that read no batched value stay as written. A Python ``if``
or ``while`` on a batched value is an error at run time (use ``jnp.where`` / ``lax.cond``).

Generated functions keep the original signature plus one keyword-only companion per
batched parameter (``x_b=None``) and return ``(out, out_b)``.
"""

from __future__ import annotations

import builtins
import re
from typing import Any, Optional

import libcst as cst

from transpiler.errors import TranspileError
from transpiler.primitives.core import Primitive
from transpiler.transforms.ad import control  # (whether a batch is traced or runs)
from transpiler.transforms.common import classify as cl
from transpiler.transforms.common.statements import (TIGHT_EQUAL, _all_assigned, _append, _assign,
                                            _block, _code, _deferred_error, transform_namespace,
                                            _param_names, _source_line, atom_text, closure_reads,
                                            fixpoint, index_text, nested_blocks, renamed_line,
                                            split_return)
from transpiler.transforms.common.rename import assigned_names
from transpiler.transforms.reverse.transform import Generated
from transpiler.transforms.reverse.structural_rules import AT_METHODS
from transpiler import lax
from transpiler.transforms.common.generated import aliases
from transpiler.codegen.disk_cache import portable_path

BATCHED_AT_METHODS = AT_METHODS | {"min", "max"}  # (bt.at_update batches these too)

_COMPARE = {cst.LessThan: "less", cst.LessThanEqual: "less_equal", cst.GreaterThan: "greater",
            cst.GreaterThanEqual: "greater_equal", cst.Equal: "equal", cst.NotEqual: "not_equal"}
_BITWISE = {cst.BitAnd: "bitwise_and", cst.BitOr: "bitwise_or", cst.BitXor: "bitwise_xor",
            cst.LeftShift: "left_shift", cst.RightShift: "right_shift"}
_MODULE_PREFIX = re.compile(r"(?<![\w.])(bt|jnp|lax|np)\.")


def _computing() -> frozenset:
    return frozenset({lax.stop_gradient, builtins.abs, builtins.zip, builtins.enumerate,
                      builtins.reversed, builtins.sorted, builtins.iter, control._any,
                      control._traced})


_COMPUTING: frozenset = frozenset()  # "static" to the AD transforms, batched values here


def _always(op: cl.Op) -> bool:
    """A call whose value depends on the batch even with no batched operand: the named-axis
    collectives (``lax.axis_index('i')``, ``lax.psum(1, 'i')``) mark themselves
    ``batch_always``, so they run through ``bt.call`` and their rules."""
    return op.kind == "call" and getattr(op.callee, "batch_always", False) is True


class Vectorize:
    """Builds ``vmap_<name>`` for one function and one set of batched parameters."""

    def __init__(self, parsed: Any, batched_params: frozenset[str], library: bool) -> None:
        self.parsed = parsed
        self.func: cst.FunctionDef = parsed.func
        self.namespace: dict[str, Any] = transform_namespace(parsed)
        self.params = _param_names(self.func)
        keywords = self.func.params.star_kwarg
        if isinstance(keywords, cst.Param):  # `**kwargs`: its companion is a dict of dims
            self.params.append(keywords.name.value)
        self.local_names = set(self.params) | _all_assigned(self.func.body.body)
        self.suffix = next(f for f in (f"_b{k or ''}" for k in range(100))
                           if not any(n.endswith(f) for n in self.local_names))
        self.batched_params = batched_params
        self.library = library
        self.origin: dict[cst.CSTNode, Any] = {}
        self.counter = 0
        self.last_comment: Optional[str] = None
        self.at_parts: dict[str, tuple[str, Optional[str], Optional[cst.Subscript]]] = {}
        self.name_tuples: dict[str, list[str]] = {}  # t = ("a", "b") (ad.defined reads)
        self.closures: dict[cst.FunctionDef, list[str]] = {}
        self.closure_dims: dict[str, list[str]] = {}
        self.pending: list[cst.BaseStatement] = []  # after an unpacking: list elements' dims
        self.renamed = {name.lstrip("_"): name for name in aliases(self.namespace)
                        if name.startswith("_")}

    # --- helpers ---------------------------------------------------------------------------
    def b(self, name: str) -> str:
        return f"{name}{self.suffix}"

    def dim(self, node: Optional[cst.CSTNode]) -> str:
        """The companion of an operand (an atom): its variable, or None."""
        if isinstance(node, cst.Name) and node.value in self.batched:
            return self.b(node.value)
        return "None"

    def is_batched(self, node: Optional[cst.CSTNode]) -> bool:
        return isinstance(node, cst.Name) and node.value in self.batched

    def error(self, stmt: cst.CSTNode, message: str, hint: str = "") -> TranspileError:
        return TranspileError(message, self.parsed.locations.get(stmt), hint)

    def where(self, stmt: cst.CSTNode) -> str:
        loc = self.parsed.locations.get(stmt)
        return repr(f"{loc.file}:{loc.line}" if loc is not None else self.parsed.name)

    def line(self, text: str) -> cst.BaseStatement:
        return renamed_line(text, self.renamed, _MODULE_PREFIX)

    def op_of(self, assign: cst.Assign) -> cl.Op:
        return cl.classify(assign.value, self.namespace, self.local_names)

    # --- the pipeline ----------------------------------------------------------------------
    def run(self) -> Generated:
        stmts, ret = split_return(self, self.func)
        self.batched: set[str] = set(self.batched_params)
        fixpoint(lambda: self.analyze(stmts), self.batched)
        statements = [self.line(f"{self.b(p)} = None") for p in self.params  # batched
                      if p in self.batched and p not in self.batched_params]  # later only
        statements += self.block(stmts)
        out = ret.body[0].value
        assert out is not None
        result: Any = cst.parse_statement(f"return {atom_text(out)}, {self.dim(out)}")
        self.origin[result] = self.parsed.locations.get(ret)
        if not self.library:  # what the reader needs first: which arguments are batched
            shared = [p for p in self.params if p not in self.batched_params]
            text = "# batched: " + ", ".join(
                f"{p} (axis {self.b(p)})" for p in self.params if p in self.batched_params)
            text += f"; the same for every member: {', '.join(shared)}" if shared else ""
            statements = statements or [result]
            first: Any = statements[0]
            statements[0] = first.with_changes(leading_lines=[
                cst.EmptyLine(comment=cst.Comment(text)), *getattr(first, "leading_lines", ())])
            self.origin[statements[0]] = self.origin.get(first)
            if first is result:
                result = statements.pop()
        params = self.func.params
        companions = [cst.Param(cst.Name(self.b(p)), default=cst.Name("None"), equal=TIGHT_EQUAL)
                      for p in self.params if p in self.batched_params]
        star = params.star_arg if isinstance(params.star_arg, cst.Param) or not \
            (companions or params.kwonly_params) else cst.ParamStar()  # (no bare `*`)
        func = self.func.with_changes(
            name=cst.Name(f"vmap_{self.func.name.value}"),
            params=params.with_changes(kwonly_params=[*params.kwonly_params, *companions],
                                       star_arg=star),
            body=self.func.body.with_changes(body=[*statements, result]), decorators=[])
        return Generated(func, {}, self.origin, self.suffix, {})

    # --- which values are batched ------------------------------------------------------------
    def analyze(self, stmts: list[cst.BaseStatement]) -> None:
        for stmt in stmts:
            if isinstance(stmt, cst.FunctionDef):
                if any(n in self.batched for n in self.closure(stmt)):
                    self.batched.add(stmt.name.value)
                continue
            if isinstance(stmt, cst.For) and self.is_batched(stmt.iter):
                self.batched.update(assigned_names(stmt.target))
            if isinstance(stmt, cst.BaseCompoundStatement):
                for block in nested_blocks(stmt):
                    self.analyze(block)
                continue
            append = _append(stmt)
            if append is not None:
                if append[1] in self.batched:
                    self.batched.add(append[0])
                continue
            assign = _assign(stmt)
            if assign is None:
                continue
            op = self.op_of(assign)
            self.at_chain(assign, op)
            strings = cl.string_tuple(assign.value)
            if strings is not None and isinstance(assign.targets[0].target, cst.Name):
                self.name_tuples[assign.targets[0].target.value] = strings
            defined = cl.defined_names(op, self.name_tuples)
            if defined is not None:  # ad.defined(locals(), names): batched as the names
                if any(n in self.batched for n in defined):
                    self.batched.update(assigned_names(assign.targets[0].target))
                continue
            if op.kind == "compare" and _identity_test(assign.value):
                continue
            if (any(n in self.batched for n in cl.names_in(assign.value)) or _always(op)) \
                    and self.propagates(op):
                for t in assign.targets:
                    self.batched.update(assigned_names(t.target))
                    self.batched.update(_element_bases(t.target))  # xs[k] = v

    def at_chain(self, assign: cst.Assign, op: cl.Op) -> None:
        """Record ``r = x.at`` and ``s = r[idx]`` (ANF's pieces of ``x.at[idx].set(v)``)."""
        target = assign.targets[0].target
        if not isinstance(target, cst.Name):
            return
        if op.kind == "attribute" and op.attr == "at":
            base = assign.value.value if isinstance(assign.value, cst.Attribute) else None
            x = op.operands[0] if op.operands else \
                base.value if isinstance(base, cst.Name) else None  # (a global array)
            if x is not None:
                self.at_parts[target.value] = (x, None, None)
        elif op.kind == "index" and isinstance(assign.value, cst.Subscript) and \
                isinstance(assign.value.value, cst.Name) and \
                assign.value.value.value in self.at_parts:
            x = self.at_parts[assign.value.value.value][0]
            self.at_parts[target.value] = (x, index_text(assign.value), assign.value)

    @staticmethod
    def propagates(op: cl.Op) -> bool:
        global _COMPUTING
        if not _COMPUTING:
            _COMPUTING = _computing()
        """Whether the value depends on the batch (not: shapes, dtypes, static calls)."""
        if op.kind == "const":
            return False
        if op.kind == "attribute":
            return op.attr not in cl.STATIC_ATTRIBUTES
        if op.kind == "call":  # (non-differentiable primitives compute batched values too)
            return cl.callee_kind(op.callee) != "static" or isinstance(op.callee, Primitive) \
                or op.callee in _COMPUTING
        return True

    def closure(self, stmt: cst.FunctionDef) -> list[str]:
        if stmt not in self.closures:
            self.closures[stmt] = closure_reads(stmt, self.local_names)
        return self.closures[stmt]

    # --- emission ----------------------------------------------------------------------------
    def block(self, stmts: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        out: list[cst.BaseStatement] = []
        for stmt in stmts:
            try:
                emitted = self.statement(stmt)
            except TranspileError as err:
                if not self.library:
                    raise
                emitted = [stmt, _deferred_error(err, self.parsed.locations.get(stmt))]
            if isinstance(stmt, cst.SimpleStatementLine):
                for function, free in self.closure_dims.items():  # late binding
                    emitted += [self.line(f"{self.b(function)}[{n!r}] = {self.b(n)}")
                                for n in _targets(stmt) if n in free]
                self.comment(emitted, stmt)
            for new in emitted:
                self.origin.setdefault(new, self.parsed.locations.get(stmt))
            out.extend(emitted)
        return out

    def comment(self, emitted: list[cst.BaseStatement], stmt: cst.BaseStatement) -> None:
        loc = self.parsed.locations.get(stmt)
        if loc is None or self.library or not emitted or emitted == [stmt]:
            return
        text = f"# vmap of: {_source_line(loc)}"
        if text == self.last_comment:
            return
        self.last_comment = text
        first = emitted[0]
        emitted[0] = first.with_changes(leading_lines=[
            *getattr(first, "leading_lines", ()), cst.EmptyLine(comment=cst.Comment(text))])

    def statement(self, stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
        if isinstance(stmt, cst.FunctionDef):
            out: list[cst.BaseStatement] = [stmt]
            name = stmt.name.value
            if name in self.batched:
                free = [n for n in self.closure(stmt) if n in self.batched]
                items = ", ".join(f"{n!r}: {self.b(n)}" for n in free)
                out.append(self.line(f"{self.b(name)} = {{{items}}}"))
                self.closure_dims[name] = free
            return out
        if isinstance(stmt, (cst.If, cst.While)):
            new = self.compound(stmt)
            if self.is_batched(stmt.test):
                test = atom_text(stmt.test)
                new = new.with_changes(test=cst.parse_expression(
                    f"bt.branch({test}, {self.b(test)}, {self.where(stmt)})"))
            return [new]
        if isinstance(stmt, cst.For):
            new = self.compound(stmt)
            unbatched = [n for n in assigned_names(stmt.target) if n in self.batched]
            if unbatched and not self.is_batched(stmt.iter):  # `i` is batched elsewhere
                first = [self.line(f"{self.b(n)} = None") for n in unbatched]
                new = new.with_changes(body=new.body.with_changes(body=[*first,
                                                                       *new.body.body]))
            if self.is_batched(stmt.iter):
                target = _code(stmt.target)
                dims = self.pattern(stmt.target)
                new = new.with_changes(  # type: ignore[attr-defined]
                    target=cst.parse_expression(f"({target}, {dims})"),
                    iter=cst.parse_expression(
                        f"bt.iterate({atom_text(stmt.iter)}, {self.dim(stmt.iter)})"))
            return [new]
        if isinstance(stmt, cst.Try):
            return [self.compound(stmt)]
        if isinstance(stmt, cst.With):  # (library code) its body batched in the same context
            if any(n in self.batched for item in stmt.items for n in cl.names_in(item.item)):
                raise TranspileError(f"internal: vmap of {self.func.name.value}: a `with` "
                                     "block over batched values", self.parsed.locations.get(stmt))
            return [self.compound(stmt)]
        append = _append(stmt)
        if append is not None and append[0] in self.batched:
            xs, v = append
            value = self.b(v) if v in self.batched else "None"
            return [self.line(f"{self.b(xs)} = bt.appended({xs}, {self.b(xs)}, {value})"), stmt]
        assign = _assign(stmt)
        if assign is None:
            if isinstance(stmt, cst.SimpleStatementLine) and any(
                    n in self.batched for n in cl.names_in(stmt)):
                return [self.viewed(stmt)]  # assert/print/raise on a batched value
            return [stmt]
        targets = [n for t in assign.targets for n in assigned_names(t.target)]
        op = self.op_of(assign)
        defined = cl.defined_names(op, self.name_tuples)
        if defined is not None and targets[0] in self.batched:  # the names' batch axes
            defined_dims = tuple(self.b(n) if n in self.batched else "" for n in defined)
            # (locals() in the call itself: autograph reads the names only from that form,
            # and a converted branch's scope is its own)
            return [self.line(f"{targets[0]} = ad.defined(locals(), {tuple(defined)!r})"),
                    self.line(f"{self.b(targets[0])} = ad.defined(locals(), {defined_dims!r})")]
        reads = [n for n in cl.names_in(assign.value) if n in self.batched]
        if not reads and not _always(self.op_of(assign)):
            if isinstance(assign.value, cst.List) and targets[0] in self.batched:
                return [stmt, self.line(f"{self.b(targets[0])} = [None] * len({targets[0]})")]
            extra = [self.line(f"{self.b(n)} = None") for n in targets if n in self.batched]
            return [stmt, *extra]
        return self.batched_assign(stmt, assign)

    def compound(self, stmt: Any) -> Any:
        new = stmt.with_changes(body=stmt.body.with_changes(body=self.block(_block(stmt.body))))
        orelse = getattr(stmt, "orelse", None)
        if isinstance(orelse, cst.Else):
            new = new.with_changes(orelse=orelse.with_changes(
                body=orelse.body.with_changes(body=self.block(_block(orelse.body)))))
        if isinstance(stmt, cst.Try):
            new = new.with_changes(handlers=[h.with_changes(body=h.body.with_changes(
                body=self.block(_block(h.body)))) for h in stmt.handlers])
        self.origin[new] = self.parsed.locations.get(stmt)
        return new

    def pattern(self, target: cst.BaseExpression) -> str:
        """The companions of an assignment target: ``a, (b, c)`` -> ``(a_b, (b_b, c_b))``."""
        if isinstance(target, cst.Name):
            return self.b(target.value)
        if isinstance(target, (cst.Tuple, cst.List)):
            items = [self.pattern(e.value) for e in target.elements]  # type: ignore
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) and \
                len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
            self.counter += 1  # xs[k] = v of a Python list: its companion's element too
            temp, xs = f"_d{self.counter}", target.value.value
            self.pending.append(self.line(
                f"{self.b(xs)} = bt.set_element({xs}, {self.dim(target.value)}, "
                f"{_code(target.slice[0].slice.value)}, {temp})"))
            return temp
        raise TranspileError("cannot batch an assignment to this target")

    def viewed(self, stmt: cst.BaseStatement) -> cst.BaseStatement:
        """`stmt` with each batched operand read as one member's view (static facts)."""
        bound: set[str] = set()  # a comprehension's own variables

        class Bound(cst.CSTVisitor):
            def visit_CompFor(inner, node: cst.CompFor) -> None:
                bound.update(assigned_names(node.target))

        stmt.visit(Bound())

        class Views(cst.CSTTransformer):
            def leave_Name(inner, original: cst.Name, updated: cst.Name) -> Any:
                if original.value in self.batched and original.value not in bound:
                    return cst.parse_expression(f"bt.view({original.value}, "
                                                f"{self.b(original.value)})")
                return updated

            def leave_Attribute(inner, original: cst.Attribute, updated: cst.Attribute) -> Any:
                return updated.with_changes(attr=original.attr)

            def leave_Arg(inner, original: cst.Arg, updated: cst.Arg) -> Any:
                return updated.with_changes(keyword=original.keyword)

        assign = _assign(stmt)
        if assign is not None:  # the value only: targets stay names
            new = assign.with_changes(value=assign.value.visit(Views()))
            return stmt.with_changes(body=[new])  # type: ignore[attr-defined]
        return stmt.visit(Views())  # type: ignore[return-value]

    # --- the rules of batched statements
    def batched_assign(self, stmt: cst.BaseStatement, assign: cst.Assign) -> list[cst.BaseStatement]:
        target = assign.targets[0].target
        value = assign.value
        if isinstance(target, (cst.Tuple, cst.List)):  # a, b = t
            if not isinstance(value, cst.Name):
                raise self.error(stmt, "cannot batch this unpacking", "assign to a name first")
            self.pending = []
            line = self.line(f"({_code(target)}), {self.pattern(target)} = "
                             f"bt.unpack({value.value}, {self.b(value.value)}, "
                             f"{_shape(target)})")
            return [line, *self.pending]
        if isinstance(target, cst.Subscript):
            self.pending = []
            temp = self.pattern(target)
            return [stmt, self.line(f"{temp} = {self.dim(value)}"), *self.pending]
        if not isinstance(target, cst.Name):
            raise self.error(stmt, "cannot batch an assignment to an attribute",
                             "assign to a variable")
        t = target.value
        op = self.op_of(assign)
        if not self.propagates(op):  # shapes, dtypes, static calls: one member's facts
            return [self.viewed(stmt), *self.unbatched(t)]
        if op.kind == "copy":
            return [stmt, self.line(f"{self.b(t)} = {self.b(op.operands[0])}")]
        if op.kind == "index":
            return self.index(stmt, t, value)  # type: ignore[arg-type]
        if op.kind in ("pack", "dict"):
            if isinstance(value, cst.Dict):
                items = ", ".join(  # (`**d`: the entries' own companions)
                    f"**bt.keyword_dims({atom_text(e.value)}, {self.dim(e.value)})"
                    if isinstance(e, cst.StarredDictElement) else
                    f"{_code(e.key)}: {self.dim(e.value)}"  # type: ignore[attr-defined]
                    for e in value.elements)
                return [stmt, self.line(f"{self.b(t)} = {{{items}}}")]
            elements = value.elements  # type: ignore[attr-defined]
            items = ", ".join(f"*bt.star_dims({atom_text(e.value)}, {self.dim(e.value)})"
                              if isinstance(e, cst.StarredElement) else self.dim(e.value)
                              for e in elements)
            close = "," if len(elements) == 1 and isinstance(value, cst.Tuple) else ""
            brackets = "[]" if isinstance(value, cst.List) else "()"
            return [stmt, self.line(f"{self.b(t)} = {brackets[0]}{items}{close}{brackets[1]}")]
        if op.kind == "attribute":
            if op.attr == "at":
                return [stmt, self.line(f"{self.b(t)} = {self.b(op.operands[0])}")]
            fn_name = cl.ATTRIBUTE_TO_FUNCTION.get(op.attr)
            if fn_name is None:  # a field of a NamedTuple, a dataclass, a registered pytree
                obj = value.value  # type: ignore[attr-defined]
                return [self.line(f"{t}, {self.b(t)} = bt.getattribute({atom_text(obj)}, "
                                  f"{self.dim(obj)}, {op.attr!r})")]
            return [self.call_line(t, f"jnp.{fn_name}", [cst.Arg(value.value)])]  # type: ignore
        if op.kind in ("binop", "unary"):
            operator = type(value.operator)  # type: ignore[attr-defined]
            if operator is cst.Not:  # `not xs` of a container is a fact about it
                x = value.expression  # type: ignore[attr-defined]
                return [self.line(f"{t}, {self.b(t)} = bt.logical_not({atom_text(x)}, "
                                  f"{self.dim(x)})")]
            name = op.callee or _BITWISE.get(operator) or (
                "invert" if operator is cst.BitInvert else None)
            if name is None:
                raise self.error(stmt, f"cannot batch the operator in `{_code(value)}`")
            args = [value.left, value.right] if op.kind == "binop" else [value.expression]  # type: ignore
            return [self.call_line(t, f"jnp.{name}", [cst.Arg(a) for a in args])]
        if op.kind == "compare":
            return [self.compare(stmt, t, value)]
        if op.kind == "call":
            return self.call(stmt, t, op, value)  # type: ignore[arg-type]
        if self.static_comprehension(value):
            return [self.viewed(stmt), *self.unbatched(t)]
        if isinstance(value, cst.ListComp):
            try:
                return self.comprehension(stmt, t, value)
            except TranspileError as err:
                return self.guarded(stmt, t, err)
        return self.guarded(stmt, t, self.error(
            stmt, "cannot batch this statement", "rewrite it with transpiler.numpy functions "
            "(a comprehension over a batched value: jnp.stack, or lax.map)"))

    def guarded(self, stmt: cst.BaseStatement, t: str,
                err: TranspileError) -> list[cst.BaseStatement]:
        """A statement the transform cannot batch: it runs as written when, at run time,
        none of its operands turns out batched (the analysis is flow-insensitive), else
        the error is raised there."""
        reads = sorted({n for n in cl.names_in(_assign(stmt).value) if n in self.batched})  # type: ignore
        dims = ", ".join(self.b(n) for n in reads)
        loc = err.loc
        where = f"{portable_path(loc.file)!r}, {loc.line}, {loc.col}" if loc is not None \
            else "None, 0, 0"
        return [self.line(f"bt.unbatched_or_fail(({dims},), {err.message!r}, {err.hint!r}, "
                          f"{where})"), stmt, *self.unbatched(t)]

    def static_comprehension(self, value: cst.BaseExpression) -> bool:
        """``{p.shape for p in parts}``, ``[abstractify(x) for x in xs]``: static facts."""
        if not isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return False
        elt = value.elt
        if isinstance(elt, cst.Attribute):
            return elt.attr.value in cl.STATIC_ATTRIBUTES
        if isinstance(elt, cst.Call):
            op = cl.classify(elt, self.namespace, self.local_names)
            return op.kind == "call" and not self.propagates(op)
        return _identity_test(elt)

    def comprehension(self, stmt: cst.BaseStatement, t: str,
                      comp: cst.ListComp) -> list[cst.BaseStatement]:
        """``t = [elt for a in xs]`` as the loop it stands for, each element batched."""
        loop = comp.for_in
        if loop.ifs or loop.inner_for_in is not None or not isinstance(loop.target, cst.Name):
            raise self.error(stmt, "cannot batch this list comprehension",
                             "write it as a loop, or use jnp.stack / lax.map")
        var = loop.target.value
        atoms = (cst.Name, cst.Integer, cst.Float, cst.SimpleString)
        if not (isinstance(comp.elt, atoms) or isinstance(comp.elt, cst.Call) and all(
                isinstance(a.value, atoms) for a in comp.elt.args)):
            raise self.error(stmt, "cannot batch this list comprehension",
                             "write it as a loop, or use jnp.stack / lax.map")
        self.counter += 1
        e = f"_e{self.counter}"
        self.batched.update((var, e))
        self.local_names.update((var, e))
        inner = self.statement(cst.parse_statement(f"{e} = {_code(comp.elt)}\n"))
        if isinstance(loop.iter, cst.Name):
            head = f"for {var}, {self.b(var)} in bt.iterate({atom_text(loop.iter)}, " \
                   f"{self.dim(loop.iter)}):"
            first: list[str] = []
        elif not any(n in self.batched for n in cl.names_in(loop.iter)):
            head, first = f"for {var} in {_code(loop.iter)}:", [f"{self.b(var)} = None"]
        else:
            raise self.error(stmt, "cannot batch this list comprehension",
                             "iterate over a name, or write it as a loop")
        body = "\n".join(f"    {line}" for line in [
            *first, *(cst.Module([]).code_for_node(s).strip() for s in inner),
            f"{t}.append({e})", f"{self.b(t)}.append({self.b(e)})"])
        return [self.line(f"{t} = []"), self.line(f"{self.b(t)} = []"),
                cst.parse_statement(f"{head}\n{body}\n")]

    def unbatched(self, t: str) -> list[cst.BaseStatement]:
        return [self.line(f"{self.b(t)} = None")] if t in self.batched else []

    def index(self, stmt: cst.BaseStatement, t: str, value: cst.Subscript) -> list[cst.BaseStatement]:
        base = value.value
        if isinstance(base, cst.Name) and base.value in self.at_parts:  # x.at[i]
            _, key_dims = self.key(value)
            if key_dims.strip("()").replace("None", "").strip(", ") == "":  # unbatched key
                return [stmt, self.line(f"{self.b(t)} = {self.dim(base)}")]
            return [stmt, self.line(f"{self.b(t)} = bt.at_ref({self.dim(base)}, {key_dims})")]
        key, key_dims = self.key(value)
        return [self.line(f"{t}, {self.b(t)} = bt.getitem({atom_text(base)}, {self.dim(base)}, "
                          f"{key}, {key_dims})")]

    def key(self, value: cst.Subscript) -> tuple[str, str]:
        """The index of ``a[...]`` as a value, and its companions (one per element)."""
        key = index_text(value)
        dims = []
        for element in value.slice:
            s = element.slice
            dims.append(self.dim(s.value) if isinstance(s, cst.Index) else "None")
        if not key.startswith("(") or len(value.slice) == 1 and key == _code(
                value.slice[0].slice.value if isinstance(value.slice[0].slice, cst.Index)
                else value.slice[0].slice):
            return key, dims[0]
        return key, "(" + ", ".join(dims) + ",)"

    def compare(self, stmt: cst.BaseStatement, t: str, value: Any) -> cst.BaseStatement:
        if isinstance(value, cst.Comparison) and len(value.comparisons) == 1:
            c = value.comparisons[0]
            name = _COMPARE.get(type(c.operator))
            if name is not None:
                return self.call_line(t, f"jnp.{name}", [cst.Arg(value.left), cst.Arg(c.comparator)])
            if isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
                return self.line(f"{t} = {_code(value)}" + "".join(  # not batched
                    f"; {self.b(t)} = None" for _ in self.unbatched(t)))
        raise self.error(stmt, f"cannot batch `{_code(value)}`: `and`, `or`, `not` and chained "
                         "comparisons ask for one truth value for the whole batch",
                         "use jnp.logical_and / jnp.logical_or / jnp.logical_not")

    def call(self, stmt: cst.BaseStatement, t: str, op: cl.Op,
             call: cst.Call) -> list[cst.BaseStatement]:
        kind = cl.callee_kind(op.callee)
        args = list(call.args)
        if kind == "method":
            receiver, method = cl.method_call(op)
            if method in BATCHED_AT_METHODS and op.method_self in self.at_parts:
                return [self.at_update(stmt, t, op, args)]
            if method in cl.METHOD_OWN:
                return [self.call_line(t, f"bt.ArrayMethods.{method}", [receiver, *args])]
            name = cl.METHOD_TO_FUNCTION.get(method)
            if name is not None:
                return [self.call_line(t, f"jnp.{name}", [receiver, *args])]
            return [self.call_line(t, f"bt.Method({method!r})", [receiver, *args])]
        fn_dims = None
        if isinstance(call.func, cst.Name) and call.func.value in self.batched:  # a closure
            fn_dims = self.b(call.func.value)
        return [self.call_line(t, atom_text(call.func), args, fn_dims)]

    def call_line(self, t: str, fn: str, args: list[cst.Arg],
                  fn_dims: Optional[str] = None) -> cst.BaseStatement:
        """``t, t_b = bt.call(fn, (args...), (dims...), {kw: v}, {kw: dim})``."""
        positional, dims, kwargs, kwdims = [], [], [], []
        for a in args:
            if a.star == "**":
                kwargs.append(f"**{atom_text(a.value)}")
                kwdims.append(f"**bt.keyword_dims({atom_text(a.value)}, {self.dim(a.value)})")
            elif a.keyword is not None:
                kwargs.append(f"{a.keyword.value!r}: {atom_text(a.value)}")
                if self.is_batched(a.value):
                    kwdims.append(f"{a.keyword.value!r}: {self.dim(a.value)}")
            elif a.star == "*":
                positional.append(f"*{atom_text(a.value)}")
                dims.append(f"*bt.star_dims({atom_text(a.value)}, {self.dim(a.value)})")
            else:
                positional.append(atom_text(a.value))
                dims.append(self.dim(a.value))
        close = "," if len(positional) == 1 else ""
        text = f"{t}, {self.b(t)} = bt.call({fn}, ({', '.join(positional)}{close}), " \
               f"({', '.join(dims)}{close})"
        if kwargs or fn_dims:
            text += f", {{{', '.join(kwargs)}}}, {{{', '.join(kwdims)}}}"
        if fn_dims:
            text += f", {fn_dims}"
        return self.line(text + ")")

    def at_update(self, stmt: cst.BaseStatement, t: str, op: cl.Op,
                  args: list[cst.Arg]) -> cst.BaseStatement:
        receiver = op.method_self or ""
        parts = self.at_parts.get(receiver)
        if parts is None or parts[2] is None:
            raise self.error(stmt, f"cannot batch `.{op.callee[1]}()` here",
                             "write the update as x.at[index].set(value) in one expression")
        x, _, sub = parts
        assert sub is not None  # (parts[2], checked above)
        key, key_dims = self.key(sub)
        method = op.callee[1]
        values = [a for a in args if a.keyword is None]
        value = atom_text(values[0].value) if values else "None"
        value_dim = self.dim(values[0].value) if values else "None"
        kwargs = ", ".join(f"{a.keyword.value!r}: {atom_text(a.value)}"  # type: ignore[union-attr]
                           for a in args if a.keyword is not None)
        return self.line(f"{t}, {self.b(t)} = bt.at_update({x}, {self.dim(cst.Name(x))}, {key}, "
                         f"{key_dims}, {method!r}, {value}, {value_dim}, {{{kwargs}}})")


def _element_bases(target: cst.BaseExpression) -> list[str]:
    """The lists and dicts an assignment target stores into: ``xs[k], (a, ys[j])``."""
    if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
        return [target.value.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _element_bases(e.value)]
    return []


def _targets(stmt: cst.BaseStatement) -> list[str]:
    assign = _assign(stmt)
    if assign is None:
        return []
    return [n for t in assign.targets for n in assigned_names(t.target)]


def _shape(target: cst.BaseExpression) -> str:
    """An unpacking target's nesting: ``a, (b, c)`` -> ``(None, (None, None,),)``."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return "(" + "".join(f"{_shape(e.value)}, " for e in target.elements) + ")"
    return "None"


def _identity_test(value: cst.BaseExpression) -> bool:
    """``x is None``, ``k in d``: facts about objects, the same for the whole batch."""
    return isinstance(value, cst.Comparison) and all(
        isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in value.comparisons)
