"""The adjoint of one ANF assignment: which rule applies, and the statements it emits."""

from __future__ import annotations

import inspect
from typing import Any

import libcst as cst
from libcst.helpers import parse_template_expression, parse_template_statement

from transpiler.primitives.core import Primitive
from transpiler.transforms import classify as cl
from transpiler.transforms.rename import assigned_names

_MODULE_ALIASES = ("jnp", "lax", "np", "ad")
TIGHT_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                              whitespace_after=cst.SimpleWhitespace(""))


def adjoint_of(gen: Any, stmt: cst.BaseStatement, assign: cst.Assign) -> list[cst.BaseStatement]:
    target = assign.targets[0].target
    value = assign.value
    if isinstance(target, (cst.Tuple, cst.List)):  # a, b = t
        names = assigned_names(target)
        parts = ", ".join(gen.bar_text(n) for n in names)
        source = value.value if isinstance(value, cst.Name) else None
        if source is None:
            raise gen.error(stmt, "internal: unpacking from a non-name in ANF code")
        return gen.accumulate(source, parse_template_expression(f"({parts},)"))
    t = target.value  # type: ignore[attr-defined]
    bar = cst.Name(f"{t}_bar")
    op = gen.op_of(assign)
    if op.kind == "copy":
        return gen.accumulate(op.operands[0], bar)
    if op.kind == "index":
        array = value.value.value  # type: ignore[attr-defined]
        index = parse_template_expression(index_text(value))  # type: ignore[arg-type]
        return gen.accumulate(array, parse_template_expression(
            "ad.index_bar({a}, {i}, {g})", a=cst.Name(array), i=index, g=bar))
    if op.kind in ("pack", "dict"):
        out: list[cst.BaseStatement] = []
        for i, element in enumerate(value.elements):  # type: ignore[attr-defined]
            key = cst.Integer(str(i)) if op.kind == "pack" else element.key
            item = element.value
            if isinstance(element, (cst.StarredElement, cst.StarredDictElement)):
                raise gen.error(stmt, "unpacking (*x) of a differentiated value in a "
                                "container literal is not supported yet")
            if isinstance(item, cst.Name):
                out += gen.accumulate(item.value, parse_template_expression(
                    "ad.item({g}, {k})", g=bar, k=key))
        return out
    if op.kind == "attribute":
        fn_name = cl.ATTRIBUTE_TO_FUNCTION.get(op.attr)
        if fn_name is None:
            raise gen.error(stmt, f"cannot differentiate through the attribute `.{op.attr}`")
        return call_rule(gen, stmt, _jnp(fn_name), [cst.Arg(value.value)], t)  # type: ignore
    if op.kind in ("binop", "unary"):
        args = [value.left, value.right] if op.kind == "binop" else [value.expression]  # type: ignore
        return call_rule(gen, stmt, _jnp(op.callee), [cst.Arg(a) for a in args], t)
    if op.kind == "call":
        return call_adjoint(gen, stmt, op, value, t)  # type: ignore[arg-type]
    if isinstance(value, cst.ListComp):
        return comprehension_rule(gen, stmt, value, t)
    raise gen.error(stmt, "cannot differentiate this statement",
                    "rewrite it with transpiler.numpy functions")


def call_adjoint(gen: Any, stmt: cst.BaseStatement, op: cl.Op, call: cst.Call,
                 t: str) -> list[cst.BaseStatement]:
    kind = cl.callee_kind(op.callee)
    args = list(call.args)
    if kind == "method" and op.callee[1] in cl.METHOD_OWN:
        from transpiler.array_methods import ArrayMethods
        method = getattr(ArrayMethods, op.callee[1])
        return call_rule(gen, stmt, method, [cst.Arg(cst.Name(op.method_self)), *args], t)
    if kind == "method" and op.callee[1] in AT_METHODS:
        return at_rule(gen, stmt, op, args, t)
    if kind == "method":
        name = cl.METHOD_TO_FUNCTION.get(op.callee[1])
        if name is None:
            raise gen.error(stmt, f"cannot differentiate the method `.{op.callee[1]}()`",
                            "use the transpiler.numpy function of the same name")
        return call_rule(gen, stmt, _jnp(name), [cst.Arg(cst.Name(op.method_self)), *args], t)
    if kind == "pass":
        return gen.accumulate(args[0].value.value, cst.Name(f"{t}_bar"))  # type: ignore
    if kind == "jitted":
        return call_rule(gen, stmt, op.callee._fun, args, t)
    if kind == "local":
        return runtime_rule(gen, stmt, call, args, t)
    if kind == "custom":
        return custom_rule(gen, stmt, op.callee, call, args, t)
    if kind in ("primitive", "function"):
        return call_rule(gen, stmt, op.callee, args, t)
    what = cst.Module([]).code_for_node(call.func)
    raise gen.error(stmt, f"cannot differentiate through `{what}`: it is not a transpiler "
                    "primitive and has no Python source to transform",
                    "use transpiler.numpy functions, or give it a rule with custom_vjp")


def call_rule(gen: Any, stmt: cst.BaseStatement, fn: Any, args: list[cst.Arg],
              t: str) -> list[cst.BaseStatement]:
    positional = [a for a in args if a.keyword is None]
    if any(a.star for a in args):
        if isinstance(fn, Primitive) and fn.vjp is not None and fn.vjp.variadic and \
                len(fn.vjp.operands) == 1 and len(positional) == 1 and positional[0].star == "*":
            return star_rule(gen, fn, positional[0].value, args, t)
        raise gen.error(stmt, "star-arguments in a differentiated call are not supported yet")
    if isinstance(fn, Primitive):
        return template_rule(gen, stmt, fn, positional, args, t)
    return function_rule(gen, stmt, fn, positional, args, t)


def _active_name(gen: Any, node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name) and node.value in gen.active:
        return node.value
    return None


def template_rule(gen: Any, stmt: cst.BaseStatement, prim: Primitive, positional: list,
                  args: list, t: str) -> list[cst.BaseStatement]:
    template = prim.vjp
    if template is None:
        raise gen.error(stmt, f"the primitive `{prim.name}` has no VJP rule")
    params = {a.keyword.value: a.value for a in args if a.keyword is not None}
    mapping: dict[str, cst.BaseExpression] = {"out": cst.Name(t), "out_bar": cst.Name(f"{t}_bar")}
    contributions: list[tuple[str, str]] = []  # (variable, temp holding its cotangent)
    keep_targets: dict[str, str] = {}
    fixed = template.operands[:-1] if template.variadic else template.operands
    used = [_active_name(gen, a.value) for a in positional]
    for operand, a in zip(fixed, positional):
        mapping[operand] = a.value
        name = _active_name(gen, a.value)
        if name and name not in gen.has_bar and used.count(name) == 1:
            keep_targets[f"{operand}_bar"] = f"{name}_bar"  # the first contribution
            gen.has_bar.add(name)
        elif name:
            temp = gen.tmp()
            keep_targets[f"{operand}_bar"] = temp
            contributions.append((name, temp))
    if template.variadic:  # the rest of the operands form one list
        operand = template.operands[-1]
        rest = positional[len(fixed):]
        mapping[operand] = cst.List([cst.Element(a.value) for a in rest])
        if any(_active_name(gen, a.value) for a in rest):
            temp = gen.tmp()
            keep_targets[f"{operand}_bar"] = temp
            for i, a in enumerate(rest):
                name = _active_name(gen, a.value)
                if name:
                    contributions.append((name, f"{temp}[{i}]"))
    out: list[cst.BaseStatement] = []
    helpers: dict[str, str] = {}
    for line in template.statements:
        targets = _targets(line)
        if any(n.endswith("_bar") and n not in keep_targets for n in targets):
            continue  # the cotangent of an inactive operand
        for n in targets:
            if n not in keep_targets and n not in helpers:
                helpers[n] = gen.tmp("h")
        out.append(_substitute(gen, line, mapping, {**keep_targets, **helpers}, params, stmt,
                               prim))
    for name, temp in contributions:
        out += gen.accumulate(name, parse_template_expression(temp))
    return out


def function_rule(gen: Any, stmt: cst.BaseStatement, fn: Any, positional: list, args: list,
                  t: str) -> list[cst.BaseStatement]:
    try:
        signature = inspect.signature(fn)
        bound = signature.bind_partial(*range(len(positional)), **{
            a.keyword.value: -1 - i for i, a in enumerate(args) if a.keyword is not None})
    except (TypeError, ValueError) as err:
        raise gen.error(stmt, f"cannot match this call to {getattr(fn, '__name__', fn)}: {err}")
    names = list(signature.parameters)
    active: set[str] = set()
    for pname, slot in bound.arguments.items():
        slots = slot if isinstance(slot, tuple) else (slot,)
        for s in slots:
            if not isinstance(s, int):
                continue
            node = positional[s].value if s >= 0 else args[-1 - s].value
            if _active_name(gen, node):
                active.add(pname)
    if not active:
        return []
    base, vjp_fn = gen.vjp_of(fn, frozenset(active))
    vjp_name, k = base, 1
    own_name = f"vjp_{gen.func.name.value}"
    while (gen.extra.get(vjp_name, vjp_fn) is not vjp_fn or vjp_name in gen.namespace
           or vjp_name in gen.local_names or vjp_name == own_name):
        k += 1
        vjp_name = f"{base}_{k}"
    gen.extra[vjp_name] = vjp_fn
    temp = gen.tmp()
    call = cst.Call(func=cst.Name(vjp_name), args=[
        *[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args],
        cst.Arg(cst.Name(f"{t}_bar"), keyword=cst.Name("_out_bar"), equal=TIGHT_EQUAL)])
    out = [parse_template_statement("{g} = {c}[1]", g=cst.Name(temp), c=call)]
    positional_names = [n for n, p in signature.parameters.items()
                        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for i, a in enumerate(positional):
        name = _active_name(gen, a.value)
        if name:
            out += gen.accumulate(name, parse_template_expression(f"{temp}[{i}]"))
    for a in args:
        name = _active_name(gen, a.value) if a.keyword is not None else None
        if name:
            if a.keyword.value not in positional_names:
                raise gen.error(stmt, f"a differentiated value passed as keyword-only argument "
                                f"`{a.keyword.value}` is not supported yet")
            index = positional_names.index(a.keyword.value)
            out += gen.accumulate(name, parse_template_expression(f"{temp}[{index}]"))
    del names
    return out


def runtime_rule(gen: Any, stmt: cst.BaseStatement, call: cst.Call, args: list, t: str,
                 helper: str = "vjp_call", slots: Any = None) -> list[cst.BaseStatement]:
    """A callee only known at run time (a function passed as an argument): the cotangents
    come from ``ad.<helper>(f, args, kwargs, t_bar)``, one per positional argument; `slots`
    ((variable, index) pairs) says which to accumulate (default: the active positional)."""
    positional = [a for a in args if a.keyword is None]
    pos = cst.Tuple([cst.Element(a.value) for a in positional]) if positional else \
        cst.parse_expression("()")
    kw = cst.Dict([cst.DictElement(cst.SimpleString(repr(a.keyword.value)), a.value)
                   for a in args if a.keyword is not None])
    temp = gen.tmp()
    out = [parse_template_statement(f"{{g}} = ad.{helper}({{f}}, {{p}}, {{k}}, {{b}})",
                                    g=cst.Name(temp), f=call.func, p=pos, k=kw,
                                    b=cst.Name(f"{t}_bar"))]
    if slots is None:
        slots = [(_active_name(gen, a.value), i) for i, a in enumerate(positional)]
    for name, index in slots:
        if name:
            out += gen.accumulate(name, parse_template_expression(f"{temp}[{index}]"))
    return out


def custom_rule(gen: Any, stmt: cst.BaseStatement, fn: Any, call: cst.Call, args: list,
                t: str) -> list[cst.BaseStatement]:
    """``t = f(...)`` for a `custom_vjp` function: its own fwd/bwd rules, run by
    ``ad.custom_vjp_bwd``, give one cotangent per positional parameter."""
    if any(a.star for a in args):
        raise gen.error(stmt, "star-arguments in a call of a custom_vjp function are not "
                        "supported yet", "pass the arguments one by one")
    params = [n for n, p in inspect.signature(fn.fun).parameters.items()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    slots: list[tuple[str, int]] = []  # (active variable, index of its cotangent)
    for i, a in enumerate(args):
        name = _active_name(gen, a.value)
        if name is None:
            continue
        index = i if a.keyword is None else (
            params.index(a.keyword.value) if a.keyword.value in params else -1)
        if index < 0:
            raise gen.error(stmt, f"a differentiated value passed as keyword-only argument "
                            f"`{a.keyword.value}` of a custom_vjp function is not supported")
        if index in fn.nondiff_argnums:
            raise gen.error(stmt, f"argument {index} of the custom_vjp function "
                            f"{fn.__name__} is in nondiff_argnums, but it depends on a "
                            "differentiated value",
                            "nondiff_argnums is for static arguments; remove it from "
                            "nondiff_argnums, or wrap the value in lax.stop_gradient")
        slots.append((name, index))
    return runtime_rule(gen, stmt, call, args, t, "custom_vjp_bwd", slots)


def _jnp(name: str) -> Any:
    from transpiler import numpy as jnp
    return getattr(jnp, name)


def _targets(line: cst.BaseStatement) -> list[str]:
    if isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Assign):
        return [n for t in line.body[0].targets for n in assigned_names(t.target)]
    return []


class _Substitute(cst.CSTTransformer):
    def __init__(self, values: dict[str, cst.BaseExpression], names: dict[str, str]) -> None:
        self.values, self.names = values, names

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if original.value in self.names:
            return updated.with_changes(value=self.names[original.value])
        return self.values.get(original.value, updated)


def _substitute(gen: Any, line: cst.BaseStatement, mapping: dict, names: dict, params: dict,
                stmt: cst.BaseStatement, prim: Primitive) -> cst.BaseStatement:
    values = dict(params)
    values.update(mapping)
    for alias in _MODULE_ALIASES:
        if alias in gen.namespace and gen.namespace[alias] is not _module(alias):
            names.setdefault(alias, f"_{alias}")
    return line.visit(_Substitute(values, names))  # type: ignore[return-value]


def _module(alias: str) -> Any:
    import numpy as np

    from transpiler import lax
    from transpiler import numpy as jnp
    from transpiler.transforms import adjoint_helpers as ad
    return {"jnp": jnp, "lax": lax, "np": np, "ad": ad}[alias]


def index_text(sub: cst.Subscript) -> str:
    """The index of ``a[...]`` as a Python expression: ``(slice(1, n), 0, None)``."""
    code = cst.Module([]).code_for_node
    parts = []
    for element in sub.slice:
        s = element.slice
        if isinstance(s, cst.Slice):
            parts.append("slice({}, {}, {})".format(
                *[code(x) if x is not None else "None" for x in (s.lower, s.upper, s.step)]))
        else:
            parts.append(code(s.value))  # type: ignore[attr-defined]
    if len(parts) == 1 and not (len(sub.slice) == 1 and sub.slice[0].comma != cst.MaybeSentinel.DEFAULT):
        return parts[0]
    return "(" + ", ".join(parts) + ",)"


AT_METHODS = frozenset({"set", "add", "multiply", "mul", "get"})


def at_rule(gen: Any, stmt: cst.BaseStatement, op: cl.Op, args: list,
            t: str) -> list[cst.BaseStatement]:
    """``t = x.at[idx].set(v)`` (ANF: ``r = x.at; s = r[idx]; t = s.set(v)``)."""
    ref = gen.definitions.get(op.method_self)
    at = gen.definitions.get(ref.value.value.value) if isinstance(ref, cst.Assign) and \
        isinstance(ref.value, cst.Subscript) and isinstance(ref.value.value, cst.Name) else None
    if not (isinstance(at, cst.Assign) and isinstance(at.value, cst.Attribute)
            and at.value.attr.value == "at" and isinstance(at.value.value, cst.Name)):
        raise gen.error(stmt, f"cannot differentiate `.{op.callee[1]}()` here",
                        "write the update as x.at[index].set(value) in one expression")
    x = at.value.value.value
    index = parse_template_expression(index_text(ref.value))
    bar = cst.Name(f"{t}_bar")
    method = "multiply" if op.callee[1] == "mul" else op.callee[1]
    value = args[0].value if args else None
    out: list[cst.BaseStatement] = []
    if method == "get":
        return gen.accumulate(x, parse_template_expression(
            "ad.index_bar({x}, {i}, {g})", x=cst.Name(x), i=index, g=bar))
    x_rule = {"set": "{g}.at[{i}].set(0)", "add": "{g}",
              "multiply": "{g}.at[{i}].multiply({v})"}[method]
    v_rule = {"set": "ad.unbroadcast_like({g}[{i}], {v})", "add": "ad.unbroadcast_like({g}[{i}], {v})",
              "multiply": "ad.unbroadcast_like({g}[{i}] * {x}[{i}], {v})"}[method]
    fills = {"g": bar, "i": index, "v": value or cst.Name("None"), "x": cst.Name(x)}
    out += gen.accumulate(x, _fill(x_rule, fills))
    name = _active_name(gen, value) if value is not None else None
    if name:
        out += gen.accumulate(name, _fill(v_rule, fills))
    return out


def _fill(template: str, values: dict[str, cst.BaseExpression]) -> cst.BaseExpression:
    """`parse_template_expression` with just the placeholders the template uses."""
    return parse_template_expression(template, **{
        k: v for k, v in values.items() if "{" + k + "}" in template})


def star_rule(gen: Any, prim: Primitive, operands: cst.BaseExpression, args: list,
              t: str) -> list[cst.BaseStatement]:
    """``prim(*xs, ...)`` for a variadic primitive: the list's cotangent is a list."""
    name = _active_name(gen, operands)
    if name is None:
        return []
    template = prim.vjp
    params = {a.keyword.value: a.value for a in args if a.keyword is not None}
    temp = gen.tmp()
    operand = template.operands[0]
    mapping = {"out": cst.Name(t), "out_bar": cst.Name(f"{t}_bar"), operand: operands}
    out, helpers = [], {}
    for line in template.statements:
        for n in _targets(line):
            if n != f"{operand}_bar":
                helpers.setdefault(n, gen.tmp("h"))
        out.append(_substitute(gen, line, mapping, {f"{operand}_bar": temp, **helpers}, params,
                               line, prim))
    return out + gen.accumulate(name, cst.Name(temp))


def comprehension_rule(gen: Any, stmt: cst.BaseStatement, comp: cst.ListComp,
                       t: str) -> list[cst.BaseStatement]:
    """``t = [f(a) for a in xs]``: each element's cotangent through f's own VJP."""
    loop = comp.for_in
    elt = comp.elt
    var = loop.target.value if isinstance(loop.target, cst.Name) else None
    ok = (var is not None and loop.inner_for_in is None and not loop.ifs
          and isinstance(loop.iter, cst.Name) and isinstance(elt, cst.Call))
    slots = [i for i, a in enumerate(elt.args) if isinstance(a.value, cst.Name)  # type: ignore
             and a.value.value == var] if ok else []
    others = [a for a in elt.args if a not in [elt.args[i] for i in slots]] if ok else []  # type: ignore
    if not ok or len(slots) != 1 or elt.args[slots[0]].keyword is not None or any(  # type: ignore
            var in cl.names_in(a.value) for a in others):
        raise gen.error(stmt, "cannot differentiate this list comprehension",
                        "only `[f(x, ...) for x in xs]` is supported for differentiated values; "
                        "write the elements out, or use jnp.stack over an axis")
    args = [cst.Element(cst.parse_expression("ad.ELEMENT") if i == slots[0] else a.value)
            for i, a in enumerate(elt.args) if a.keyword is None]  # type: ignore
    kwargs = cst.Dict([cst.DictElement(cst.SimpleString(repr(a.keyword.value)), a.value)
                       for a in elt.args if a.keyword is not None])  # type: ignore
    return gen.accumulate(loop.iter.value, parse_template_expression(  # type: ignore
        "ad.map_bar({f}, {xs}, {g}, {args}, {kwargs})", f=elt.func, xs=loop.iter,  # type: ignore
        g=cst.Name(f"{t}_bar"), args=cst.Tuple(args) if args else cst.parse_expression("()"),
        kwargs=kwargs))
