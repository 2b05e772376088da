"""Forward mode's rules for calls: primitives (JVP templates), composites and the user's
helpers (their own generated ``jvp_<name>``), custom_jvp functions, callees known only at
run time, ``.at[]`` updates, list comprehensions, and the linear helpers of generated
reverse-mode code. A mixin of `ForwardAD` (forward_ad.py), which owns the state."""

from __future__ import annotations

import inspect
from typing import Any

import libcst as cst

from transpiler.primitives.core import Primitive
from transpiler.transforms import classify as cl
from transpiler.transforms.signature import source_signature
from transpiler.transforms.ad_utils import _assign, _jnp, callee_name
from transpiler.transforms.structural_rules import AT_METHODS

_code = cst.Module(body=[]).code_for_node


def _text(node: cst.CSTNode) -> str:
    """The code of an ANF atom; a negative constant parenthesized (it may become an operand)."""
    if type(node) is cst.Name:
        return node.value  # type: ignore[attr-defined]
    code = _code(node)
    return f"({code})" if code.startswith("-") else code


class CallRules:
    """The call rules of `ForwardAD` (see the module docstring)."""

    # Provided by ForwardAD.
    active: set[str]
    definitions: dict[str, str]
    at_parts: dict[str, Any]
    extra: dict[str, Any]
    callees: dict[str, Any]
    namespace: dict[str, Any]
    local_names: set[str]
    func: cst.FunctionDef
    jvp_of: Any

    def dot(self, name: str) -> str:
        raise NotImplementedError  # ForwardAD's

    def tangent(self, node: cst.BaseExpression) -> str:
        raise NotImplementedError

    def is_active(self, node: Any) -> bool:
        raise NotImplementedError

    def tmp(self, stem: str = "j") -> str:
        raise NotImplementedError

    def error(self, stmt: cst.CSTNode, message: str, hint: str = "") -> Any:
        raise NotImplementedError

    def line(self, text: str) -> cst.BaseStatement:
        raise NotImplementedError

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
            return [stmt, self.line(f"{self.dot(t)} = {self.tangent(args[0].value)}")]
        if kind.startswith("cotangent_"):
            return [stmt, self.helper_tangent(kind, t, args)]
        if kind == "jitted":
            return self.call(stmt, t, op.callee._fun, args)
        if kind == "custom_jvp":
            return self.custom_call(stmt, t, op.callee, args)
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
        if kind == "control":  # lax.cond, fori_loop, scan ...: rules of their own (control_ad)
            from transpiler.transforms.adjoints import normalized_args
            return self.runtime_call(stmt, t, call, normalized_args(self, stmt, op.callee, args))
        what = _code(call.func)
        raise self.error(stmt, f"cannot differentiate through `{what}`: it is not a transpiler "
                         "primitive and has no Python source to transform",
                         "use transpiler.numpy functions, or give it a rule with custom_jvp")

    def call(self, stmt: cst.BaseStatement, t: str, fn: Any,
             args: list[cst.Arg]) -> list[cst.BaseStatement]:
        stars = [a for a in args if a.star]
        variadic = isinstance(fn, Primitive) and getattr(fn.jvp, "variadic", False)
        if stars and not (variadic and len(stars) == 1 and stars[0].star == "*"
                          and stars[0] is [a for a in args if a.keyword is None][-1]):
            raise self.error(stmt, "star-arguments in a call differentiated in forward mode are "
                             "not supported yet", "pass the arguments one by one")
        from transpiler.transforms.custom_jvp import CustomJVP
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
        for operand, a in zip(fixed, positional):
            if self.is_active(a.value):
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
        total = " + ".join(f"({term})" if len(terms) > 1 else term for term in terms)
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
        primals = ", ".join(_text(a.value) for a in args)
        tangents = ", ".join(self.tangent(a.value) for a in args)
        close = "," if len(args) == 1 else ""
        return [self.line(f"{t}, {self.dot(t)} = ad.custom_jvp_call({name}, ({primals}{close}), "
                          f"({tangents}{close}))")]

    def runtime_call(self, stmt: cst.BaseStatement, t: str, call: cst.Call,
                     args: list[cst.Arg]) -> list[cst.BaseStatement]:
        """A callee known only at run time (a function passed in): ``ad.jvp_call``."""
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

    def helper_tangent(self, kind: str, t: str, args: list[cst.Arg]) -> cst.BaseStatement:
        """The linear helpers of generated reverse-mode code, in forward mode."""
        texts = [_text(a.value) for a in args]
        dots = [self.tangent(a.value) for a in args]
        if kind == "cotangent_add":
            return self.line(f"{self.dot(t)} = ad.add({dots[0]}, {dots[1]})")
        if kind == "cotangent_item":
            return self.line(f"{self.dot(t)} = ad.item({dots[0]}, {texts[1]})")
        if kind == "cotangent_appended":
            return self.line(f"{self.dot(t)} = ad.appended_tangent({texts[0]}, {dots[0]}, "
                             f"{dots[1]})")
        if kind == "cotangent_with_item":
            return self.line(f"{self.dot(t)} = ad.with_item_tangent({texts[0]}, {dots[0]}, "
                             f"{texts[1]}, {dots[2]})")
        if kind == "cotangent_attribute_bar":
            return self.line(f"{self.dot(t)} = ad.attribute_bar({texts[0]}, {texts[1]}, "
                             f"{dots[2]})")
        if kind == "cotangent_attribute_tangent":
            return self.line(f"{self.dot(t)} = ad.attribute_tangent({dots[0]}, {texts[1]})")
        return self.line(f"{self.dot(t)} = ad.index_bar({texts[0]}, {texts[1]}, {dots[2]})")



def _substitute(expression: str, names: dict[str, str]) -> str:
    """`expression` with its value Names replaced through `names` (see ad_utils._pieces)."""
    from transpiler.transforms.ad_utils import _expression_pieces
    parts = []
    for literal, name in _expression_pieces(" ".join(expression.split("\n")).strip()):
        parts.append(literal)
        parts.append(names.get(name, name))
    return "".join(parts)


