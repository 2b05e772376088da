"""Run-time helpers that generated forward-mode code calls (part of the ``ad.`` namespace).

Tangents are arrays or containers of them; ``None`` inside a container means zero (an
integer result, a value that does not depend on the differentiated inputs).
"""

from __future__ import annotations

import functools
import types
from typing import Any

from transpiler.transforms.common import partials
from transpiler import numpy as jnp
from transpiler.transforms.ad.cotangents import node_of
from transpiler.primitives.core import Primitive
from transpiler.transforms.common.closures import (closure_jvp, closure_params, free_values,
                                                   is_closure)
from transpiler.transforms.reverse.custom_vjp import CustomVJP
from transpiler.transforms.forward.custom_jvp import CustomJVP
from transpiler.transforms.common import traced
from transpiler.transforms.common.generated import closed_over, converted, for_jit, target
from transpiler.transforms.ad.cotangents import differentiable_value, item
from transpiler.errors import TranspileError, user_location
from transpiler.transforms.forward.api import jvp_function
from transpiler.transforms.ad.calls import active_params, unstaged
from transpiler.transforms.common.signature import source_signature, star_name
from transpiler.transforms.ad.calls import ELEMENT
from transpiler.primitives.jvp_template import JVPTemplate
from transpiler.transforms.ad.templates import evaluate_jvp, template_namespace
from transpiler.codegen import load_source
from transpiler.rewritten import with_item


def zeros_like_tree(value: Any) -> Any:
    """Zeros with `value`'s structure, shapes and dtypes (None stays None)."""
    if value is None or isinstance(value, (str, bytes, type)) or callable(value):
        return None  # a zero cotangent of generated code, or a static value: no tangent
    if isinstance(value, dict):
        return {k: zeros_like_tree(v) for k, v in value.items()}
    node = node_of(value)
    if node is not None:  # tuples, lists, NamedTuples, dataclasses, registered pytrees
        return node[1]([zeros_like_tree(v) for v in node[0]])
    return jnp.zeros_like(value)


def _filled(tangent: Any, value: Any) -> Any:
    """`tangent`, with zeros where it (or a part of it) is None."""
    if tangent is None:
        return zeros_like_tree(value)
    if isinstance(value, dict) and isinstance(tangent, dict):
        return {k: _filled(tangent.get(k), v) for k, v in value.items()}
    node, parts = node_of(value), node_of(tangent)
    if node is not None and parts is not None:  # tuples, NamedTuples, registered pytrees
        return node[1]([_filled(t, v) for t, v in zip(parts[0], node[0])])
    return tangent


def unpack_tangents(tangent: Any, value: Any, n: Any) -> tuple:
    """The tangents of ``a, b, ... = value`` (a container, or an array along axis 0); for a
    nested target ``(a, b), c = value``, `n` gives each element's spec (None: a name)."""
    # (Loops, not comprehensions: reverse mode reads this for jacrev(jacfwd(f)).)
    out = []
    if isinstance(n, tuple):
        flat = unpack_tangents(tangent, value, len(n))
        items = list(value.values()) if isinstance(value, dict) else list(value)
        for i in range(len(n)):
            out.append(flat[i] if n[i] is None else unpack_tangents(flat[i], items[i], n[i]))
        return tuple(out)
    if isinstance(value, (tuple, list, dict)):
        parts = list(value.values()) if isinstance(value, dict) else list(value)
        tangents = [None] * n if tangent is None else (
            list(tangent.values()) if isinstance(tangent, dict) else list(tangent))
        for i in range(min(len(tangents), len(parts))):
            out.append(_filled(tangents[i], parts[i]))
        return tuple(out)
    tangent = _filled(tangent, value)
    for i in range(n):
        out.append(tangent[i])
    return tuple(out)


def tangents_of(tangent: Any, values: Any) -> tuple:
    """The tangents of the items of a tuple passed as ``*values`` (None: all zero)."""
    if tangent is None:
        return (None,) * len(values)
    return tuple(tangent)


def at(tangent: Any) -> Any:
    """``tangent.at`` (a tangent may be a NumPy array the user passed)."""
    return jnp.asarray(tangent).at


def index_tangent(tangent: Any, index: Any, out: Any) -> Any:
    """The tangent of ``out = value[index]``: the same indexing of the tangent."""
    if tangent is None:
        return zeros_like_tree(out)
    if isinstance(tangent, dict):
        return _filled(tangent.get(index), out)
    return _filled(tangent[index], out)


def jvp_call(fn: Any, primals: tuple, tangents: tuple, kwargs: dict,
             fn_dot: Any = None, kwargs_dot: Any = None) -> tuple:
    """``(out, out_dot)`` of ``fn(*primals, **kwargs)`` for a callee only known at run time;
    `fn_dot` is the tangent of a closure's closed-over values (see transforms/common/closures.py),
    `kwargs_dot` those of keyword arguments (a Python function's, or a closure's, only)."""
    fn = unstaged(fn)  # jit(closure): the closure's derivative is what flows
    if fn is functools.partial or partials.is_partial(fn):  # (transforms/common/partials.py)
        if fn is functools.partial:
            return partials.make_jvp(primals, tangents, kwargs, kwargs_dot or {})
        return partials.call_jvp(fn, primals, tangents, kwargs, fn_dot, kwargs_dot or {})
    kwargs_dot = {k: d for k, d in (kwargs_dot or {}).items() if d is not None}
    if kwargs_dot:
        return _keyword_jvp_call(fn, primals, tangents, kwargs, fn_dot, kwargs_dot)
    from transpiler.transforms.ad.control import forward_rule  # (ad.control calls jvp_call)
    rule = forward_rule(fn)
    if rule is not None:
        return rule(primals, tangents, kwargs)
    if getattr(type(fn), "runtime_transform", False):  # vmap(f): vmap of f's JVP
        return fn.jvp(primals, tangents, kwargs, fn_dot)
    inner = closed_over(fn)
    if inner is not None:  # g = grad(closure): its closure-converted code's JVP
        free = closure_params(inner)
        free_dots = tuple(None if fn_dot is None else fn_dot.get(n) for n, _ in free)
        return jvp_call(converted(fn), tuple(free_values(free, primals)),
                        free_dots + tuple(tangents), kwargs)
    if is_closure(fn):
        return closure_jvp(fn, primals, tangents, kwargs, fn_dot)
    if isinstance(fn, CustomJVP):
        return fn.apply(primals, tangents)
    if isinstance(fn, CustomVJP) and fn.nondifferentiable:
        fn.forward(primals)  # raises its error
    if isinstance(fn, CustomVJP) and fn.linear:
        out = fn(*primals, **kwargs)
        return out, None if tangents[0] is None else fn(tangents[0], *primals[1:], **kwargs)
    if isinstance(fn, CustomVJP):
        raise TranspileError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.",
                             user_location(), "give it a custom_jvp rule instead")
    if isinstance(fn, Primitive):
        out = fn(*primals, **kwargs)
        if not fn.differentiable or all(t is None for t in tangents):
            return out, None
        rule = jvp_rule(fn, primals, tangents, kwargs)
        return out, rule(out, primals, tangents, **kwargs)
    if all(t is None or not differentiable_value(p) for p, t in zip(primals, tangents)):
        return fn(*primals, **kwargs), None  # (integer values carry no derivative)
    if not traced.readable(target(fn)):  # a builtin, C function, class: traced
        return traced.jvp(fn, primals, tangents, kwargs)
    return _generated_jvp_call(fn, primals, tangents, kwargs, {})


def _keyword_jvp_call(fn: Any, primals: tuple, tangents: tuple, kwargs: dict, fn_dot: Any,
                      kwargs_dot: dict) -> tuple:
    """`jvp_call` with differentiated keyword arguments: Python functions and closures
    take their tangents as ``<name>_dot`` keywords of the generated code."""
    fn_target = target(fn)
    if is_closure(fn):
        return closure_jvp(fn, primals, tangents, kwargs, fn_dot, kwargs_dot)
    if not isinstance(fn_target, types.FunctionType) or not traced.readable(fn_target) \
            or getattr(type(fn), "runtime_transform", False):
        raise TranspileError(f"cannot differentiate the keyword arguments "
                             f"({', '.join(kwargs_dot)}) of a call of "
                             f"{getattr(fn, '__name__', type(fn).__name__)}", user_location(),
                             "pass the differentiated values positionally")
    return _generated_jvp_call(fn, primals, tangents, kwargs, kwargs_dot)


def _generated_jvp_call(fn: Any, primals: tuple, tangents: tuple, kwargs: dict,
                        kwargs_dot: dict) -> tuple:
    """Python function `fn`'s generated jvp, called with the tangents of its positional
    arguments (a tuple for ``*args``) and of its keyword arguments `kwargs_dot`."""
    active = active_params(fn, [t is not None for t in tangents]) | set(kwargs_dot)
    if not active:
        return fn(*primals, **kwargs), None
    _, generated = jvp_function(fn, frozenset(active))
    suffix = getattr(generated, "tangent_suffix", "_dot")
    fn_target = target(fn)
    params = [p.name for p in source_signature(fn_target).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    # (Loops over indices, not comprehensions or dict.update: the transforms read this
    # code for the derivatives of control-flow rules, jacfwd(jacfwd(f)) through a scan.)
    given: dict = {}
    for i in range(min(len(params), len(tangents))):
        if tangents[i] is not None:
            given = with_item(given, f"{params[i]}{suffix}", tangents[i])
    star = star_name(fn_target)
    if star in active:  # the rest go to *args: one tuple of tangents
        given = with_item(given, f"{star}{suffix}", tuple(tangents[len(params):]))
    keys = list(kwargs_dot)
    for i in range(len(keys)):
        given = with_item(given, f"{keys[i]}{suffix}", kwargs_dot[keys[i]])
    return for_jit(generated)(*primals, **kwargs, **given)


def map_jvp(fn: Any, xs: Any, xs_dot: Any, args: tuple, kwargs: dict) -> tuple:
    """``ys = [fn(..., x, ...) for x in xs]`` and its tangent; `args` holds ``ELEMENT``
    where ``x`` goes (see calls.map_bar, its reverse-mode twin)."""
    slot = args.index(ELEMENT)
    outs, dots = [], []
    tangents = [None] * len(xs) if xs_dot is None else list(xs_dot)
    for x, x_dot in zip(xs, tangents):
        call = tuple(x if a is ELEMENT else a for a in args)
        call_dots = tuple(x_dot if i == slot else None for i in range(len(args)))
        out, out_dot = jvp_call(fn, call, call_dots, kwargs)
        outs.append(out)
        dots.append(out_dot)
    return outs, dots


_RULES: dict[tuple, Any] = {}


def jvp_rule(fn: Any, primals: tuple, tangents: tuple, kwargs: dict) -> Any:
    """Primitive `fn`'s JVP template as a generated Python function
    ``rule(out, operands, tangents, **params) -> out_dot`` for the operands whose
    tangents are given: a derivative that calls it (through `jvp_call`) can itself be
    differentiated. (Static: it inspects which tangents are None.)"""
    template = fn.jvp
    assert isinstance(template, JVPTemplate)
    if template.variadic:  # evaluated directly (not differentiable a second time)
        def evaluate(out: Any, operands: tuple, dots: tuple, **params: Any) -> Any:
            return evaluate_jvp(template, list(operands), list(dots), params, out)
        return evaluate
    active = tuple(t is not None and op in template.contributions
                   for op, t in zip(template.operands, tangents))
    key = (fn.name, active, tuple(sorted(kwargs)), len(primals))
    if key not in _RULES:
        # lazy: forward.tangents imports libcst (and, via transpiler.transforms.ad, this module)
        from transpiler.transforms.forward.tangents import substitute_operands
        operands = list(template.operands[:len(primals)])
        dots = [f"{op}_dot" for op in operands]
        terms = [f"({template.contribution(op)})" for op, on in zip(operands, active) if on]
        signature = "out, operands, dots"
        if kwargs:
            signature += ", *, " + ", ".join(sorted(kwargs))
        body = " + ".join(substitute_operands(t, {}) for t in terms) if terms else "None"
        func = f"jvp_rule_{fn.name}"
        source = (f"# Generated by transpiler (the JVP template of `{fn.name}`); do not edit.\n"
                  f"def {func}({signature}):\n"
                  f"    {', '.join(operands)}, = operands\n"
                  f"    {', '.join(dots)}, = dots\n"
                  f"    return ad.tangent_like({body}, out)\n")
        _RULES[key] = load_source(source, func, template_namespace(), {},
                                  "transpiler.transforms.ad.templates")
    return _RULES[key]


def custom_jvp_call(fn: Any, primals: tuple, tangents: tuple, kwargs: Any = None) -> tuple:
    """``(out, out_dot)`` of a `custom_jvp` function, from its own rule."""
    if kwargs:
        raise TranspileError("keyword arguments in a call of a custom_jvp function are not "
                             "supported", user_location(), "pass them positionally")
    return fn.apply(primals, tangents)


def custom_jvp_vjp(fn: Any, args: tuple, kwargs: dict, g: Any) -> tuple:
    """Reverse mode through a `custom_jvp` function: its rule is linear in the tangents, so
    the cotangents of the inputs are the transpose of that linear map applied to `g` --
    reverse mode of the rule's tangent output with respect to its tangents (one call of
    generated code, itself differentiable: a second derivative goes through the rule)."""
    if kwargs:
        raise TranspileError("keyword arguments in a call of a custom_jvp function are not "
                             "supported", user_location(), "pass them positionally")
    if g is None:
        return (None,) * len(args)
    keep = []  # (loops, not comprehensions: this code is differentiated again)
    static = []
    primals = []
    tangents = []
    for i in range(len(args)):
        if i in fn.nondiff_argnums:
            static.append(args[i])
        else:
            keep.append(i)
            primals.append(args[i])
            tangents.append(zeros_like_tree(args[i]))  # (any point: the map is linear)
    transpose = fn.transposed()
    tangents_bar = transpose(tuple(static), tuple(primals), tuple(tangents), _out_bar=g)[1][2]
    bars: list[Any] = []
    for i in range(len(args)):
        if i in keep and differentiable_value(args[i]):
            bars.append(item(tangents_bar, keep.index(i)))
        else:
            bars.append(None)
    return tuple(bars)
