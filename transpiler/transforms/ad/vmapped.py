"""Derivatives through ``vmap``: the VJP of a batched function is the batched VJP, and its
JVP the batched JVP (JAX's rules). A `Vmapped` called inside differentiated code runs
these at run time (``ad.vjp_call`` / ``ad.jvp_call`` reach them). A vmapped closure's
closed-over values are shared by the batch: their cotangents are summed over it."""

from __future__ import annotations

from typing import Any, Optional

from transpiler import tree_util
from transpiler.tree_util._registry import sequence_like
from transpiler.errors import TranspileError, user_location
from transpiler.transforms.common import closures
from transpiler.transforms.common.generated import closed_over, converted, target
from transpiler.transforms.batch.api import _arg_names
from transpiler.transforms.reverse.generate import vjp_function
from transpiler.transforms.ad.cotangents import differentiable_value
from transpiler.transforms.batch.api import Vmapped
from transpiler import numpy as jnp
from transpiler.transforms.forward.api import jvp_function


def _axes_per_arg(v: Any, n: int) -> tuple:
    axes = v.in_axes
    if isinstance(axes, list):
        axes = tuple(axes)
    return axes if isinstance(axes, tuple) else (axes,) * n


def _parts(v: Any, n: int) -> tuple[Any, list, list, list]:
    """The function to differentiate, and (names, values, axes) of the closed-over values
    (closure conversion, transforms/common/closures.py) followed by the arguments'. For
    ``vmap(grad(closure))``, the closure-converted code of the inner transform: a plain
    function whose first parameters are the closed-over values."""
    inner = closed_over(v.fun)
    if inner is not None:
        free = closures.closure_params(inner)
        return converted(v.fun), [name for name, _ in free] + _arg_names(inner, n), \
            [value for _, value in free], [None] * len(free)
    fn_target = target(v.fun)
    if not closures.is_closure(fn_target) and _hides_a_closure(v.fun):
        raise TranspileError(
            "differentiating vmap of a transformed function (vmap(vmap(f)), vmap(grad(f)) "
            "...) with respect to values f closes over is not supported yet", user_location(),
            "pass those values to f as arguments (in_axes=None for the vmap)")
    free = closures.closure_params(fn_target) if closures.is_closure(fn_target) else []
    names = [name for name, _ in free] + _arg_names(v.fun, n)
    return fn_target, names, [value for _, value in free], [None] * len(free)


def _hides_a_closure(fn: Any) -> bool:
    """Whether `fn` transforms (vmap, grad, jacfwd ... of ...) a closure whose values carry
    derivatives, which its batched code holds as constants."""
    for _ in range(16):
        inner = getattr(fn, "fun", None) or getattr(fn, "_original", None) or \
            getattr(fn, "_fun", None)
        if inner is None:
            return False
        if closures.is_closure(inner):
            return closures.carries_derivative(inner)
        fn = inner
    return False


def vmap_vjp(v: Any, args: tuple, kwargs: dict, g: Any) -> tuple[tuple, Any]:
    """Cotangents of ``v(*args, **kwargs)`` (one per argument, and the dict of a closure's):
    f's VJP vmapped over the same axes; a value the batch shares (in_axes None, closed
    over) gets the sum over the batch."""
    plan = vjp_plan(v, args) if g is not None else None
    if plan is None:
        return (None,) * len(args), None
    batched, values, axes, names = plan
    bars = [_unbatch(b, a) for b, a in zip(batched(tuple(values), g, kwargs), axes)]
    k = len(values) - len(args)
    fn_bar = {n: b for n, b in zip(names[:k], bars[:k]) if b is not None}
    return tuple(bars[k:]), (fn_bar or None)


def vjp_plan(v: Any, args: tuple) -> Optional[tuple[Vmapped, list, tuple, list]]:
    """How `vmap_vjp` differentiates ``v(*args)``: f's VJP batched, called on (values, g,
    kwargs) -- the closed-over values then the arguments -- with the in_axes of each value
    (its cotangent comes back with the batch axis first) and their names; None when no
    value is differentiated."""
    target, names, free, free_axes = _parts(v, len(args))
    values = [*free, *args]
    active = frozenset(n for n, a in zip(names, values)
                       if any(differentiable_value(x) for x in tree_util.tree_leaves(a)))
    if not active:
        return None
    if free and closures.is_closure(target):
        generated = closures.closure_vjp_function(target, active)
    else:
        generated = vjp_function(target, active, False)[1]
    keyword = getattr(generated, "cotangent_param", "_out_bar")

    def per_member(member_args: Any, member_g: Any, member_kwargs: Any) -> Any:
        return generated(*member_args, **member_kwargs, **{keyword: member_g})[1]

    axes = (*free_axes, *_axes_per_arg(v, len(args)))
    return Vmapped(per_member, (axes, v.out_axes, 0), 0, v.axis_name, v.axis_size), values, \
        axes, names


def _unbatch(bar: Any, axes: Any) -> Any:
    """A batched cotangent (batch axis 0) to the argument's layout `axes` (a prefix)."""
    if bar is None:
        return None
    if isinstance(bar, dict):
        return {k: _unbatch(b, axes.get(k) if isinstance(axes, dict) else axes)
                for k, b in bar.items()}
    if isinstance(bar, (tuple, list)):
        parts = [_unbatch(b, axes[i] if isinstance(axes, (tuple, list)) else axes)
                 for i, b in enumerate(bar)]
        return sequence_like(bar, parts)
    if axes is None:
        return jnp.sum(bar, axis=0)
    return jnp.moveaxis(bar, 0, axes)


def vmap_jvp(v: Any, primals: tuple, tangents: tuple, kwargs: dict,
             fn_dot: Any = None) -> tuple:
    """``(out, out_dot)`` of ``v(*primals)``: f's JVP vmapped over the same axes (the
    tangent of a value the batch shares is shared too)."""
    target, names, free, free_axes = _parts(v, len(primals))
    free_dots = [(fn_dot or {}).get(n) for n in names[:len(free)]]
    values, dots_all = [*free, *primals], [*free_dots, *tangents]
    active = frozenset(n for n, t in zip(names, dots_all) if t is not None)
    if not active:
        return v(*primals, **kwargs), None
    if free and closures.is_closure(target):
        generated = closures.closure_jvp_function(target, active)
    else:
        generated = jvp_function(target, active)[1]
    suffix = getattr(generated, "tangent_suffix", "_dot")
    axes = (*free_axes, *_axes_per_arg(v, len(primals)))
    dot_axes = {k: a for k, a, t in zip(keys_all(names, suffix), axes, dots_all) if t is not None}
    dots = {k: t for k, t in zip(keys_all(names, suffix), dots_all) if t is not None}

    def per_member(member_args: Any, member_dots: Any, member_kwargs: Any) -> Any:
        return generated(*member_args, **member_kwargs, **member_dots)

    batched = Vmapped(per_member, (axes, dot_axes, 0), (v.out_axes, v.out_axes),
                      v.axis_name, v.axis_size)
    return batched(tuple(values), dots, kwargs)


def keys_all(names: list, suffix: str) -> list:
    return [f"{n}{suffix}" for n in names]
