"""Adjoints with their own structure: ``x.at[i].set(v)`` updates, star-argument calls of
variadic primitives, and list comprehensions over a differentiated list."""

from __future__ import annotations

from typing import Any

import libcst as cst
from transpiler.frontend.cst_templates import parse_template_expression

from transpiler.primitives.core import Primitive
from transpiler.transforms.common import classify as cl
from transpiler.transforms.common.statements import (
    _active_name,
    _substitute,
    _targets,
    index_text,
)

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
    bar = cst.Name(gen.bar(t))
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
    # Any: the keyword arguments must not be taken for parse_template_expression's `config`.
    used: dict[str, Any] = {k: v for k, v in values.items() if "{" + k + "}" in template}
    return parse_template_expression(template, **used)


def star_rule(gen: Any, prim: Primitive, operands: cst.BaseExpression, args: list,
              t: str) -> list[cst.BaseStatement]:
    """``prim(*xs, ...)`` for a variadic primitive: the list's cotangent is a list."""
    name = _active_name(gen, operands)
    if name is None:
        return []
    template = prim.vjp
    assert template is not None  # call_rule only calls this for a primitive with a VJP
    params = {a.keyword.value: a.value for a in args if a.keyword is not None}
    temp = gen.tmp()
    operand = template.operands[0]
    mapping = {"out": cst.Name(t), "out_bar": cst.Name(gen.bar(t)), operand: operands}
    out: list[cst.BaseStatement] = []
    helpers: dict[str, str] = {}
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
        g=cst.Name(gen.bar(t)), args=cst.Tuple(args) if args else cst.parse_expression("()"),
        kwargs=kwargs))
