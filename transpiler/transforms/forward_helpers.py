"""Run-time helpers that generated forward-mode code calls (part of the ``ad.`` namespace).

Tangents are arrays or containers of them; ``None`` inside a container means zero (an
integer result, a value that does not depend on the differentiated inputs).
"""

from __future__ import annotations

from typing import Any


def zeros_like_tree(value: Any) -> Any:
    """Zeros with `value`'s structure, shapes and dtypes (None stays None)."""
    from transpiler import numpy as jnp
    if value is None or isinstance(value, (str, bytes, type)) or callable(value):
        return None  # a zero cotangent of generated code, or a static value: no tangent
    if isinstance(value, dict):
        return {k: zeros_like_tree(v) for k, v in value.items()}
    from transpiler.transforms.runtime_helpers import _node
    node = _node(value)
    if node is not None:  # tuples, lists, NamedTuples, dataclasses, registered pytrees
        return node[1]([zeros_like_tree(v) for v in node[0]])
    return jnp.zeros_like(value)


def _filled(tangent: Any, value: Any) -> Any:
    """`tangent`, with zeros where it (or a part of it) is None."""
    if tangent is None:
        return zeros_like_tree(value)
    if isinstance(value, dict) and isinstance(tangent, dict):
        return {k: _filled(tangent.get(k), v) for k, v in value.items()}
    from transpiler.transforms.runtime_helpers import _node
    node, parts = _node(value), _node(tangent)
    if node is not None and parts is not None:  # tuples, NamedTuples, registered pytrees
        return node[1]([_filled(t, v) for t, v in zip(parts[0], node[0])])
    return tangent


def unpack_tangents(tangent: Any, value: Any, n: int) -> tuple:
    """The tangents of ``a, b, ... = value`` (a container, or an array along axis 0)."""
    if isinstance(value, (tuple, list, dict)):
        parts = list(value.values()) if isinstance(value, dict) else list(value)
        tangents = [None] * n if tangent is None else (
            list(tangent.values()) if isinstance(tangent, dict) else list(tangent))
        return tuple(_filled(t, v) for t, v in zip(tangents, parts))
    tangent = _filled(tangent, value)
    return tuple(tangent[i] for i in range(n))


def tangents_of(tangent: Any, values: Any) -> tuple:
    """The tangents of the items of a tuple passed as ``*values`` (None: all zero)."""
    if tangent is None:
        return (None,) * len(values)
    return tuple(tangent)


def at(tangent: Any) -> Any:
    """``tangent.at`` (a tangent may be a NumPy array the user passed)."""
    from transpiler import numpy as jnp
    return jnp.asarray(tangent).at


def index_tangent(tangent: Any, index: Any, out: Any) -> Any:
    """The tangent of ``out = value[index]``: the same indexing of the tangent."""
    if tangent is None:
        return zeros_like_tree(out)
    if isinstance(tangent, dict):
        return _filled(tangent.get(index), out)
    return _filled(tangent[index], out)


def jvp_call(fn: Any, primals: tuple, tangents: tuple, kwargs: dict,
             fn_dot: Any = None) -> tuple:
    """``(out, out_dot)`` of ``fn(*primals, **kwargs)`` for a callee only known at run time;
    `fn_dot` is the tangent of a closure's closed-over values (see transforms/closures.py)."""
    from transpiler.primitives.core import Primitive
    from transpiler.transforms.closures import closure_jvp, is_closure
    from transpiler.transforms.control_ad import JVP_RULES
    from transpiler.transforms.custom import CustomVJP
    from transpiler.transforms.custom_jvp import CustomJVP
    from transpiler.transforms.classify import CONTROL_MODULES
    rule = JVP_RULES.get(getattr(fn, "__qualname__", "")) \
        if getattr(fn, "__module__", None) in CONTROL_MODULES else None
    if rule is not None:
        return rule(primals, tangents, kwargs)
    if getattr(type(fn), "runtime_transform", False):  # vmap(f): vmap of f's JVP
        return fn.jvp(primals, tangents, kwargs, fn_dot)
    if is_closure(fn):
        return closure_jvp(fn, primals, tangents, kwargs, fn_dot)
    if isinstance(fn, CustomJVP):
        return fn.apply(primals, tangents)
    if isinstance(fn, CustomVJP):
        from transpiler.errors import TranspileError, user_location
        raise TranspileError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.",
                             user_location(), "give it a custom_jvp rule instead")
    if isinstance(fn, Primitive):
        out = fn(*primals, **kwargs)
        if not fn.differentiable or all(t is None for t in tangents):
            return out, None
        rule = jvp_rule(fn, primals, tangents, kwargs)
        return out, rule(out, primals, tangents, **kwargs)
    import inspect

    from transpiler.transforms.forward_api import jvp_function
    names = list(inspect.signature(fn).parameters)[:len(primals)]
    active = frozenset(n for n, t in zip(names, tangents) if t is not None)
    if not active:
        return fn(*primals, **kwargs), None
    _, generated = jvp_function(fn, active)
    suffix = getattr(generated, "tangent_suffix", "_dot")
    from transpiler.transforms.api import for_jit
    return for_jit(generated)(*primals, **kwargs, **{f"{n}{suffix}": t for n, t in zip(names, tangents)
                                            if t is not None})


def map_jvp(fn: Any, xs: Any, xs_dot: Any, args: tuple, kwargs: dict) -> tuple:
    """``ys = [fn(..., x, ...) for x in xs]`` and its tangent; `args` holds ``ELEMENT``
    where ``x`` goes (see runtime_helpers.map_bar, its reverse-mode twin)."""
    from transpiler.transforms.runtime_helpers import ELEMENT
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
    from transpiler.transforms.jvp_templates import JVPTemplate
    template = fn.jvp
    assert isinstance(template, JVPTemplate)
    if template.variadic:  # evaluated directly (not differentiable a second time)
        def evaluate(out: Any, operands: tuple, dots: tuple, **params: Any) -> Any:
            return template.evaluate(list(operands), list(dots), params, out)
        return evaluate
    active = tuple(t is not None and op in template.contributions
                   for op, t in zip(template.operands, tangents))
    key = (fn.name, active, tuple(sorted(kwargs)), len(primals))
    if key not in _RULES:
        from transpiler.codegen import load_source
        from transpiler.transforms.forward_ad import _substitute
        from transpiler.transforms.templates import template_namespace
        operands = list(template.operands[:len(primals)])
        dots = [f"{op}_dot" for op in operands]
        terms = [f"({template.contribution(op)})" for op, on in zip(operands, active) if on]
        signature = "out, operands, dots"
        if kwargs:
            signature += ", *, " + ", ".join(sorted(kwargs))
        body = " + ".join(_substitute(t, {}) for t in terms) if terms else "None"
        func = f"jvp_rule_{fn.name}"
        source = (f"# Generated by transpiler (the JVP template of `{fn.name}`); do not edit.\n"
                  f"def {func}({signature}):\n"
                  f"    {', '.join(operands)}, = operands\n"
                  f"    {', '.join(dots)}, = dots\n"
                  f"    return ad.tangent_like({body}, out)\n")
        _RULES[key] = load_source(source, func, template_namespace(), {},
                                  "transpiler.transforms.jvp_templates")
    return _RULES[key]


def custom_jvp_call(fn: Any, primals: tuple, tangents: tuple) -> tuple:
    """``(out, out_dot)`` of a `custom_jvp` function, from its own rule."""
    return fn.apply(primals, tangents)


def custom_jvp_vjp(fn: Any, args: tuple, kwargs: dict, g: Any) -> tuple:
    """Reverse mode through a `custom_jvp` function: its rule is linear in the tangents, so
    the cotangent of each argument is ``<g, rule(e_i)>`` over the basis tangents e_i."""
    from transpiler import numpy as jnp
    from transpiler.transforms.runtime_helpers import _differentiable
    if kwargs:
        from transpiler.errors import TranspileError, user_location
        raise TranspileError("keyword arguments in a call of a custom_jvp function are not "
                             "supported", user_location(), "pass them positionally")
    bars: list[Any] = []
    for i, x in enumerate(args):
        if g is None or i in fn.nondiff_argnums or not _differentiable(x) \
                or isinstance(x, (tuple, list, dict)):
            bars.append(None)
            continue
        x = jnp.asarray(x)
        flat = []
        for k in range(x.size):
            basis = jnp.zeros(x.size, x.dtype).at[k].set(1).reshape(x.shape)
            tangents = tuple(basis if j == i else None for j in range(len(args)))
            _, out_dot = fn.apply(args, tangents)
            flat.append(jnp.sum(out_dot * g))
        bars.append(jnp.stack(flat).reshape(x.shape) if flat else jnp.zeros_like(x))
    return tuple(bars)
