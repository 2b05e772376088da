"""The tangent of one ANF assignment: which rule applies, and the statements it emits.

Structural values (copies, indexing, tuples, dicts, attributes) get their tangents in
place. Calls go by what the callee is: a primitive's JVP template, summed over the active
operands (``t_dot = ad.tangent_like(<contributions>, t)``); a Python function's own
generated ``jvp_<name>``, which returns the value and its tangent together; a
``custom_jvp`` rule (``ad.custom_jvp_call``); a callee known only at run time
(``ad.jvp_call``); an ``x.at[i].set(v)`` update, applied to the tangents as well; and the
linear helpers of generated reverse-mode code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import libcst as cst

from transpiler.array_methods import ArrayMethods
from transpiler.primitives.core import Primitive
from transpiler.rewritten import sequence
from transpiler.transforms.ad import helper_tangents
from transpiler.transforms.common import classify as cl
from transpiler.transforms.common.rename import assigned_names
from transpiler.transforms.common.signature import source_signature
from transpiler.transforms.common.statements import (
    _assign,
    _code,
    _expression_pieces,
    _jnp,
    atom_text,
    index_text,
)
from transpiler.transforms.forward.custom_jvp import CustomJVP
from transpiler.transforms.reverse.adjoints import normalized_args
from transpiler.transforms.reverse.structural_rules import AT_METHODS

if TYPE_CHECKING:  # (the emitter calls these rules; they call back its naming helpers)
    from transpiler.transforms.forward.transform import ForwardAD


def tangent_of(gen: ForwardAD, stmt: cst.BaseStatement, assign: cst.Assign) -> list[cst.BaseStatement]:
    """The statement itself (or its replacement) and the statements of its tangent."""
    target = assign.targets[0].target
    value = assign.value
    if isinstance(target, (cst.Tuple, cst.List)):  # a, b = t   (or (a, b), c = t)
        dots, spec = _unpacked_dots(gen, target)
        return [stmt, cst.parse_statement(
            f"{dots[1:-1]} = ad.unpack_tangents({gen.tangent(value)}, {atom_text(value)}, "
            f"{spec})")]
    t = target.value  # type: ignore[attr-defined]
    op = gen.activity.op_of(assign)
    defined = cl.defined_names(op, gen.activity.name_tuples)
    if defined is not None:  # the tangents of the names, where they were assigned
        defined_dots = tuple(gen.dot(n) if n in gen.activity.active else "" for n in defined)
        return [gen.line(f"{t} = ad.defined(locals(), {tuple(defined)!r})"),  # (see batch's)
                gen.line(f"{gen.dot(t)} = ad.defined(locals(), {defined_dots!r})")]
    if not (any(n in gen.activity.active for n in cl.reads(op)) and cl.propagates(op)):
        return [stmt, gen.line(f"{gen.dot(t)} = ad.zeros_like_tree({t})")]
    if gen.activity.definitions.get(t) in ("at", "at_index"):  # x.at, x.at[i]: see at_rule
        return [stmt]
    if op.kind == "copy":
        return [stmt, gen.line(f"{gen.dot(t)} = {gen.dot(op.operands[0])}")]
    if op.kind == "index":
        return [stmt, gen.line(f"{gen.dot(t)} = ad.index_tangent("
                               f"{gen.tangent(value.value)}, {index_text(value)}, {t})")]  # type: ignore
    if op.kind == "pack":
        items = ", ".join(  # (`*xs`: the tangents of its items, in their places)
            f"*ad.tangents_of({gen.tangent(e.value)}, {atom_text(e.value)})"
            if isinstance(e, cst.StarredElement) else gen.tangent(e.value)
            for e in value.elements)  # type: ignore[attr-defined]
        close = "," if len(value.elements) == 1 else ""  # type: ignore[attr-defined]
        brackets = "[]" if isinstance(value, cst.List) else "()"
        return [stmt, gen.line(
            f"{gen.dot(t)} = {brackets[0]}{items}{close}{brackets[1]}")]
    if op.kind == "dict":
        items = ", ".join(  # (`**d`: its entries' tangents, None where it has none)
            f"**({gen.tangent(e.value)} or dict.fromkeys({atom_text(e.value)}))"
            if isinstance(e, cst.StarredDictElement) else
            f"{atom_text(e.key)}: {gen.tangent(e.value)}"  # type: ignore[attr-defined]
            for e in value.elements)  # type: ignore[attr-defined]
        return [stmt, gen.line(f"{gen.dot(t)} = {{{items}}}")]
    if op.kind == "attribute":
        fn_name = cl.ATTRIBUTE_TO_FUNCTION.get(op.attr)
        if fn_name is None:  # a field of a NamedTuple, a dataclass, a registered pytree
            obj = value.value  # type: ignore[attr-defined]
            return [stmt, gen.line(f"{gen.dot(t)} = ad.attribute_tangent("
                                   f"{gen.tangent(obj)}, {op.attr!r})")]
        return call_rule(gen, stmt, t, _jnp(fn_name), [cst.Arg(value.value)])  # type: ignore
    if op.kind in ("binop", "unary"):
        args = [value.left, value.right] if op.kind == "binop" else [value.expression]  # type: ignore
        return call_rule(gen, stmt, t, _jnp(op.callee), [cst.Arg(a) for a in args])
    if op.kind == "call":
        return call_tangent(gen, stmt, t, op, value)  # type: ignore[arg-type]
    if isinstance(value, cst.ListComp):
        return [comprehension_rule(gen, stmt, t, value)]
    raise gen.error(stmt, "cannot differentiate this statement in forward mode",
                    "rewrite it with transpiler.numpy functions")


def _unpacked_dots(gen: ForwardAD, target: cst.BaseExpression) -> tuple[str, str]:
    """The tangents' target for an unpacking target, with its nesting, and the spec
    `ad.unpack_tangents` reads it by: a count, or per element None (a name) or the
    nested element's spec."""
    if not isinstance(target, (cst.Tuple, cst.List)):
        names = assigned_names(cast(cst.BaseAssignTargetExpression, target))  # an assignment's target
        return (gen.dot(names[0]) if names else "_"), "None"
    parts = [_unpacked_dots(gen, e.value) for e in target.elements]
    dots = "(" + "".join(d + ", " for d, _ in parts) + ")"
    nested = any(spec != "None" for _, spec in parts)
    spec = ("(" + "".join(sp + ", " for _, sp in parts) + ")") if nested else str(len(parts))
    return dots, spec


def comprehension_rule(gen: ForwardAD, stmt: cst.BaseStatement, t: str,
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
            or any(gen.is_active(a.value) for a in others):
        raise gen.error(stmt, "cannot differentiate this list comprehension",
                        "only `[f(x, ...) for x in xs]` is supported for differentiated "
                        "values; write the elements out, or use jnp.stack over an axis")
    positional = ", ".join("ad.ELEMENT" if i == slots[0] else atom_text(a.value)
                           for i, a in enumerate(args) if a.keyword is None)
    kwargs = ", ".join(f"{a.keyword.value!r}: {atom_text(a.value)}"  # type: ignore[union-attr]
                       for a in args if a.keyword is not None)
    xs = loop.iter.value  # type: ignore[attr-defined]
    return gen.line(f"{t}, {gen.dot(t)} = ad.map_jvp({atom_text(elt.func)}, {xs}, "  # type: ignore
                    f"{gen.tangent(loop.iter)}, ({positional},), {{{kwargs}}})")


def call_tangent(gen: ForwardAD, stmt: cst.BaseStatement, t: str, op: cl.Op,
                 call: cst.Call) -> list[cst.BaseStatement]:
    """``t = f(...)`` and its tangent, by the kind of callee `f` is (classify.callee_kind)."""
    kind = cl.callee_kind(op.callee)
    args = list(call.args)
    if kind == "method":
        receiver, method = cl.method_call(op)
        if method in cl.METHOD_OWN:
            return call_rule(gen, stmt, t, getattr(ArrayMethods, method), [receiver, *args])
        if method in ("items", "values"):  # a dict's entries
            d = op.method_self
            return [stmt, gen.line(f"{gen.dot(t)} = ad.{method}_tangent({d}, "
                                   f"{gen.tangent(cst.Name(d))})")]  # type: ignore
        if method == "keys":
            return [stmt, gen.line(f"{gen.dot(t)} = None")]
        if method in AT_METHODS:
            return at_rule(gen, stmt, t, op, args)
        name = cl.METHOD_TO_FUNCTION.get(method)
        if name is None:  # a method of a Python class: its function, the receiver first
            func, args = cl.unbound_method(op.method_self, method, args)  # type: ignore
            return runtime_rule(gen, stmt, t, call.with_changes(func=func, args=args), args)
        return call_rule(gen, stmt, t, _jnp(name), [receiver, *args])
    if kind == "seed":  # ad.seed(out_bar, out): the cotangent passes (the seed is constant)
        return [stmt, gen.line(f"{gen.dot(t)} = {gen.tangent(args[0].value)}")]
    if kind == "pass":  # tuple(x), list(x), ad.finalize(bar, x) ...: the identity
        if not gen.is_active(args[0].value):  # (active through another argument)
            return [stmt, gen.line(f"{gen.dot(t)} = ad.zeros_like_tree({t})")]
        if op.callee in (tuple, list):  # (of an array: its rows)
            return [stmt, gen.line(f"{gen.dot(t)} = ad.rows_tangent("
                                   f"{gen.tangent(args[0].value)}, {op.callee.__name__})")]
        if op.callee is sequence:  # (of a dict: its keys, which take no tangent)
            return [stmt, gen.line(f"{gen.dot(t)} = ad.sequence_derivative("
                                   f"{gen.tangent(args[0].value)}, "
                                   f"{cast(cst.Name, args[0].value).value})")]  # (ANF: a name)
        return [stmt, gen.line(f"{gen.dot(t)} = {gen.tangent(args[0].value)}")]
    rule = helper_tangents.RULES.get(kind)
    if rule is not None:  # a run-time helper of generated code: linear in its derivatives
        texts = [atom_text(a.value) for a in args]
        dots = [gen.tangent(a.value) for a in args]
        return [stmt, gen.line(f"{gen.dot(t)} = {rule(t, texts, dots)}")]
    if kind == "jitted":
        return call_rule(gen, stmt, t, op.callee._fun, args)
    if kind == "custom_jvp":
        return custom_rule(gen, stmt, t, op.callee, args)
    if kind == "custom" and (op.callee.linear or op.callee.nondifferentiable):
        # linear: its tangent is itself on the tangent; no derivative: its own error
        return runtime_rule(gen, stmt, t, call, args)
    if kind == "custom":
        raise gen.error(stmt, "can't apply forward-mode autodiff (jvp) to a custom_vjp "
                        "function", "give it a custom_jvp rule, or differentiate it in "
                        "reverse mode (grad/vjp)")
    if kind == "function" and any(a.star for a in args):  # f(*args, **kwargs): bound at
        return runtime_rule(gen, stmt, t, call, args)         # run time (ad.jvp_call)
    if kind in ("primitive", "function"):
        return call_rule(gen, stmt, t, op.callee, args)
    if kind in ("local", "runtime"):
        return runtime_rule(gen, stmt, t, call, args)
    if kind == "control":  # lax.cond, fori_loop, scan ...: rules of their own (ad/control.py)
        return runtime_rule(gen, stmt, t, call, normalized_args(gen, stmt, op.callee, args))
    return runtime_rule(gen, stmt, t, call, args)  # no source: traced (transforms/common/traced.py)


def call_rule(gen: ForwardAD, stmt: cst.BaseStatement, t: str, fn: Any,
              args: list[cst.Arg]) -> list[cst.BaseStatement]:
    stars = [a for a in args if a.star]
    variadic = isinstance(fn, Primitive) and getattr(fn.jvp, "variadic", False)
    if stars and not (variadic and len(stars) == 1 and stars[0].star == "*"
                      and stars[0] is [a for a in args if a.keyword is None][-1]):
        raise gen.error(stmt, "star-arguments in a call differentiated in forward mode are "
                        "not supported yet", "pass the arguments one by one")
    if isinstance(fn, CustomJVP):
        return custom_rule(gen, stmt, t, fn, args)
    if isinstance(fn, Primitive):
        return template_rule(gen, stmt, t, fn, args)
    return function_rule(gen, stmt, t, fn, args)


def template_rule(gen: ForwardAD, stmt: cst.BaseStatement, t: str, prim: Primitive,
                  args: list[cst.Arg]) -> list[cst.BaseStatement]:
    """``t_dot = ad.tangent_like(<sum of the active operands' contributions>, t)``."""
    template = getattr(prim, "jvp", None)
    if template is None:
        raise gen.error(stmt, f"the primitive `{prim.name}` has no JVP rule")
    positional = [a for a in args if a.keyword is None]
    # `x = f(x)`: the tangent reads the old x, so the new value waits in a temporary.
    reassigned = t in {atom_text(a.value) for a in args}
    out = gen.tmp() if reassigned else t
    names: dict[str, str] = {"out": out}
    names.update({a.keyword.value: atom_text(a.value) for a in args if a.keyword is not None})
    fixed = template.operands[:-1] if template.variadic else template.operands
    terms: list[str] = []
    for operand, a in zip(fixed, positional):
        names[operand] = atom_text(a.value)
        names[f"{operand}_dot"] = gen.tangent(a.value)
    for operand, a in zip(fixed, positional):  # (an operand with no contribution is
        if gen.is_active(a.value) and operand in template.contributions:  # integral)
            terms.append(substitute_operands(template.contribution(operand), names))
    if template.variadic:
        rest = positional[len(fixed):]
        operand = template.operands[-1]
        if rest and rest[-1].star:  # prim(*xs): the list itself, its tangents a list
            xs = rest[-1].value
            names[operand] = f"list({atom_text(xs)})"
            names[f"{operand}_dot"] = f"list(ad.tangents_of({gen.tangent(xs)}, {atom_text(xs)}))"
            active = gen.is_active(xs)
        else:
            names[operand] = "[" + ", ".join(atom_text(a.value) for a in rest) + "]"
            names[f"{operand}_dot"] = "[" + ", ".join(gen.tangent(a.value)
                                                      for a in rest) + "]"
            active = any(gen.is_active(a.value) for a in rest)
        if active:
            terms.append(substitute_operands(template.contribution(operand), names))
    total = " + ".join(f"({term})" if len(terms) > 1 else term for term in terms) \
        if terms else f"ad.zeros_like_tree({out})"  # only integral operands were active
    tangent = gen.line(f"{gen.dot(t)} = ad.tangent_like({total}, {out})")
    if not reassigned:
        return [stmt, tangent]
    assign = _assign(stmt)
    assert assign is not None
    first = stmt.with_changes(body=[assign.with_changes(  # type: ignore[attr-defined]
        targets=[cst.AssignTarget(cst.Name(out))])])
    return [first, tangent, gen.line(f"{t} = {out}")]


def function_rule(gen: ForwardAD, stmt: cst.BaseStatement, t: str, fn: Any,
                  args: list[cst.Arg]) -> list[cst.BaseStatement]:
    """``t, t_dot = jvp_g(<args>, <param>_dot=<tangent>, ...)``: value and tangent."""
    positional = [a for a in args if a.keyword is None]
    try:
        signature = source_signature(fn)
        bound = signature.bind_partial(*range(len(positional)), **{
            a.keyword.value: -1 - i for i, a in enumerate(args) if a.keyword is not None})
    except (TypeError, ValueError) as err:
        raise gen.error(stmt, f"cannot match this call to {getattr(fn, '__name__', fn)}: "
                        f"{err}") from None
    tangents: dict[str, str] = {}
    for pname, slot in bound.arguments.items():
        if isinstance(slot, tuple):  # *args of the callee: a tuple of tangents
            if any(gen.is_active(positional[s].value) for s in slot):
                items = ", ".join(gen.tangent(positional[s].value) for s in slot)
                tangents[pname] = f"({items},)"
            continue
        if isinstance(slot, dict):  # **kwargs of the callee: a dict of tangents
            nodes = {k: args[-1 - s].value for k, s in slot.items()}
            if any(gen.is_active(n) for n in nodes.values()):
                items = ", ".join(f"{k!r}: {gen.tangent(n)}" for k, n in nodes.items())
                tangents[pname] = f"{{{items}}}"
            continue
        node = positional[slot].value if slot >= 0 else args[-1 - slot].value
        if gen.is_active(node):
            tangents[pname] = gen.tangent(node)
    if not tangents:
        return [stmt]
    base, jvp_fn = gen.jvp_of(fn, frozenset(tangents))
    name = gen.callee_name(base, jvp_fn)
    gen.callees[name] = (fn, frozenset(tangents))
    suffix = getattr(jvp_fn, "tangent_suffix", "_dot")
    call_args = [_code(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in args]
    call_args += [f"{p}{suffix}={v}" for p, v in tangents.items()]
    return [gen.line(f"{t}, {gen.dot(t)} = {name}({', '.join(call_args)})")]


def custom_rule(gen: ForwardAD, stmt: cst.BaseStatement, t: str, fn: Any,
                args: list[cst.Arg]) -> list[cst.BaseStatement]:
    """A `custom_jvp` function: its own rule, run by ``ad.custom_jvp_call``."""
    if any(a.keyword is not None for a in args):
        raise gen.error(stmt, "keyword arguments in a call of a custom_jvp function are "
                        "not supported", "pass the arguments positionally")
    name = gen.callee_name(f"_custom_{getattr(fn, '__name__', 'f')}", fn)
    positional = [a for a in args if a.star != "**"]
    primals = ", ".join(("*" if a.star else "") + atom_text(a.value) for a in positional)
    tangents = ", ".join(
        (f"*ad.tangents_of({gen.tangent(a.value)}, {atom_text(a.value)})" if a.star
         else gen.tangent(a.value)) for a in positional)
    close = "," if positional else ""
    kwargs = "".join(f", {atom_text(a.value)}" for a in args if a.star == "**")  # (must be {})
    return [gen.line(f"{t}, {gen.dot(t)} = ad.custom_jvp_call({name}, ({primals}{close}), "
                     f"({tangents}{close}){kwargs})")]


def runtime_rule(gen: ForwardAD, stmt: cst.BaseStatement, t: str, call: cst.Call,
                 args: list[cst.Arg]) -> list[cst.BaseStatement]:
    """A callee known only at run time (a function passed in): ``ad.jvp_call``."""
    kw_dots = ", ".join(  # (the tangents of differentiated keyword arguments)
        f"**({gen.tangent(a.value)} or {{}})" if a.star == "**" else
        f"{a.keyword.value!r}: {gen.tangent(a.value)}"  # type: ignore[union-attr]
        for a in args if (a.keyword is not None or a.star == "**") and gen.is_active(a.value))
    positional = [a for a in args if a.keyword is None and a.star != "**"]
    primals = ", ".join(("*" if a.star else "") + atom_text(a.value) for a in positional)
    tangents = ", ".join(
        (f"*ad.tangents_of({gen.tangent(a.value)}, {atom_text(a.value)})" if a.star
         else gen.tangent(a.value)) for a in positional)
    close = "," if positional else ""
    kwargs = ", ".join(f"**{atom_text(a.value)}" if a.star == "**" else
                       f"{a.keyword.value!r}: {atom_text(a.value)}"  # type: ignore[union-attr]
                       for a in args if a.keyword is not None or a.star == "**")
    fn_dot = ""
    if isinstance(call.func, cst.Name) and call.func.value in gen.activity.active:  # a closure
        fn_dot = f", {gen.dot(call.func.value)}"
    if kw_dots:
        fn_dot += f", kwargs_dot={{{kw_dots}}}"
    return [gen.line(f"{t}, {gen.dot(t)} = ad.jvp_call({atom_text(call.func)}, "
                     f"({primals}{close}), ({tangents}{close}), {{{kwargs}}}{fn_dot})")]


def at_rule(gen: ForwardAD, stmt: cst.BaseStatement, t: str, op: cl.Op,
            args: list[cst.Arg]) -> list[cst.BaseStatement]:
    """``t = x.at[idx].set/add/multiply/get(v)`` (ANF: ``r = x.at; s = r[idx]; ...``):
    the same update of the tangents, which is linear in (x, v) except for multiply."""
    receiver = op.method_self or ""
    if gen.activity.definitions.get(receiver) != "at_index":
        raise gen.error(stmt, f"cannot differentiate `.{op.callee[1]}()` here",
                        "write the update as x.at[index].set(value) in one expression")
    x, index = gen.activity.at_parts[receiver]
    method = "multiply" if op.callee[1] == "mul" else op.callee[1]
    x_dot = gen.tangent(cst.Name(x)) if x in gen.activity.active else f"ad.zeros_like_tree({x})"
    if method == "get":
        return [stmt, gen.line(f"{gen.dot(t)} = ad.at({x_dot})[{index}].get()")]
    value = args[0].value
    v = atom_text(value)
    v_dot = gen.tangent(value) if gen.is_active(value) else None
    if method == "set":
        rule = f"ad.at({x_dot})[{index}].set({v_dot if v_dot else 0})"
    elif method == "add":
        rule = f"ad.at({x_dot})[{index}].add({v_dot})" if v_dot else x_dot
    else:  # multiply: d(x * v) at idx = x_dot * v + x * v_dot
        rule = f"ad.at({x_dot})[{index}].multiply({v})"
        if v_dot:
            rule += f" + ad.at(ad.zeros_like_tree({x}))[{index}].add({x}[{index}] * {v_dot})"
    return [stmt, gen.line(f"{gen.dot(t)} = ad.tangent_like({rule}, {t})")]


def substitute_operands(expression: str, names: dict[str, str]) -> str:
    """`expression` with its value Names replaced through `names` (see statements._pieces)."""
    parts = []
    for literal, name in _expression_pieces(" ".join(expression.split("\n")).strip()):
        parts.append(literal)
        parts.append(names.get(name, name))
    return "".join(parts)
