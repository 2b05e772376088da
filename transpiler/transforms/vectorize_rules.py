"""The batched forms of single statements, for `Vectorize` (vectorize.py), which owns the
state: assignments by kind (copies, containers, indexing, operators, comparisons, calls,
``.at[]`` updates, comprehensions), and the run-time guard for what cannot be batched."""

from __future__ import annotations

from typing import Any, Optional

import libcst as cst

from transpiler.errors import TranspileError
from transpiler.transforms import classify as cl
from transpiler.transforms.ad_utils import _assign, index_text
from transpiler.transforms.forward_rules import _code, _text
from transpiler.transforms.structural_rules import AT_METHODS

_COMPARE = {cst.LessThan: "less", cst.LessThanEqual: "less_equal", cst.GreaterThan: "greater",
            cst.GreaterThanEqual: "greater_equal", cst.Equal: "equal", cst.NotEqual: "not_equal"}
_BITWISE = {cst.BitAnd: "bitwise_and", cst.BitOr: "bitwise_or", cst.BitXor: "bitwise_xor",
            cst.LeftShift: "left_shift", cst.RightShift: "right_shift"}



class StatementRules:
    """A mixin of `Vectorize`: the rules of batched statements."""

    batched: set[str]
    at_parts: dict[str, Any]
    pending: list[cst.BaseStatement]
    namespace: dict[str, Any]
    local_names: set[str]
    counter: int
    library: bool
    parsed: Any

    # Provided by Vectorize.
    def b(self, name: str) -> str:
        raise NotImplementedError

    def dim(self, node: Optional[cst.CSTNode]) -> str:
        raise NotImplementedError

    def is_batched(self, node: Optional[cst.CSTNode]) -> bool:
        raise NotImplementedError

    def error(self, stmt: cst.CSTNode, message: str, hint: str = "") -> TranspileError:
        raise NotImplementedError

    def line(self, text: str) -> cst.BaseStatement:
        raise NotImplementedError

    def op_of(self, assign: cst.Assign) -> cl.Op:
        raise NotImplementedError

    def propagates(self, op: cl.Op) -> bool:
        raise NotImplementedError

    def statement(self, stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
        raise NotImplementedError

    def pattern(self, target: cst.BaseExpression) -> str:
        raise NotImplementedError

    def viewed(self, stmt: cst.BaseStatement) -> cst.BaseStatement:
        raise NotImplementedError

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
                items = ", ".join(f"{_code(e.key)}: {self.dim(e.value)}"  # type: ignore
                                  for e in value.elements)
                return [stmt, self.line(f"{self.b(t)} = {{{items}}}")]
            elements = value.elements  # type: ignore[attr-defined]
            items = ", ".join(f"*bt.star_dims({_text(e.value)}, {self.dim(e.value)})"
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
                return [self.line(f"{t}, {self.b(t)} = bt.getattribute({_text(obj)}, "
                                  f"{self.dim(obj)}, {op.attr!r})")]
            return [self.call_line(t, f"jnp.{fn_name}", [cst.Arg(value.value)])]  # type: ignore
        if op.kind in ("binop", "unary"):
            operator = type(value.operator)  # type: ignore[attr-defined]
            if operator is cst.Not:  # `not xs` of a container is a fact about it
                x = value.expression  # type: ignore[attr-defined]
                return [self.line(f"{t}, {self.b(t)} = bt.logical_not({_text(x)}, "
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
        from transpiler.codegen.disk_cache import portable_path
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
            head = f"for {var}, {self.b(var)} in bt.iterate({_text(loop.iter)}, " \
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
            return [stmt, self.line(f"{self.b(t)} = {self.dim(base)}")]
        key, key_dims = self.key(value)
        return [self.line(f"{t}, {self.b(t)} = bt.getitem({_text(base)}, {self.dim(base)}, "
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
            receiver = cst.Arg(cst.Name(op.method_self))  # type: ignore[arg-type]
            method = op.callee[1]
            if method in AT_METHODS and op.method_self in self.at_parts:
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
        return [self.call_line(t, _text(call.func), args, fn_dims)]

    def call_line(self, t: str, fn: str, args: list[cst.Arg],
                  fn_dims: Optional[str] = None) -> cst.BaseStatement:
        """``t, t_b = bt.call(fn, (args...), (dims...), {kw: v}, {kw: dim})``."""
        positional, dims, kwargs, kwdims = [], [], [], []
        for a in args:
            if a.star == "**":
                kwargs.append(f"**{_text(a.value)}")
                kwdims.append(f"**bt.keyword_dims({_text(a.value)}, {self.dim(a.value)})")
            elif a.keyword is not None:
                kwargs.append(f"{a.keyword.value!r}: {_text(a.value)}")
                if self.is_batched(a.value):
                    kwdims.append(f"{a.keyword.value!r}: {self.dim(a.value)}")
            elif a.star == "*":
                positional.append(f"*{_text(a.value)}")
                dims.append(f"*bt.star_dims({_text(a.value)}, {self.dim(a.value)})")
            else:
                positional.append(_text(a.value))
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
        key, key_dims = self.key(sub)
        method = op.callee[1]
        values = [a for a in args if a.keyword is None]
        value = _text(values[0].value) if values else "None"
        value_dim = self.dim(values[0].value) if values else "None"
        kwargs = ", ".join(f"{a.keyword.value!r}: {_text(a.value)}"  # type: ignore[union-attr]
                           for a in args if a.keyword is not None)
        return self.line(f"{t}, {self.b(t)} = bt.at_update({x}, {self.dim(cst.Name(x))}, {key}, "
                         f"{key_dims}, {method!r}, {value}, {value_dim}, {{{kwargs}}})")





def _shape(target: cst.BaseExpression) -> str:
    """An unpacking target's nesting: ``a, (b, c)`` -> ``(None, (None, None,),)``."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return "(" + "".join(f"{_shape(e.value)}, " for e in target.elements) + ")"
    return "None"


def _identity_test(value: cst.BaseExpression) -> bool:
    """``x is None``, ``k in d``: facts about objects, the same for the whole batch."""
    return isinstance(value, cst.Comparison) and all(
        isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in value.comparisons)
