"""Batching of the run-time helpers the control-flow derivative rules call (ad/control.py).

vmap reads those rules as code (``@read_by(..., BATCH)``), so ``vmap(grad(f))`` and
``vmap(hessian(f))`` through ``cond`` / ``scan`` / ``while_loop`` are the rules batched by
the transform itself. The helpers they call are not read (they dispatch on the structure
of their arguments); these are their batched forms: each returns ``(value, companions)``.
"""

from __future__ import annotations

from typing import Any

from transpiler import numpy as jnp
from transpiler.primitives.core import abstractify
from transpiler.transforms import bt
from transpiler.transforms.ad import control
from transpiler.transforms.bt.control_leaves import part
from transpiler.transforms.common import closures, traced
from transpiler.transforms.common.closures import carries_derivative, closure_items, is_closure
from transpiler.tree_util._registry import sequence_like


def fill(bar: Any, bar_dims: Any, primal: Any, primal_dims: Any) -> tuple[Any, Any]:
    """``ad.control.fill`` batched: `bar` with `primal`'s full structure, zeros (one
    member's shape, unbatched) where nothing flowed."""

    def sub(key: Any, value: Any) -> tuple[Any, Any]:
        inner = None if bar is None else (bar.get(key) if isinstance(bar, dict) else bar[key])
        return fill(inner, part(bar_dims, key), value, part(primal_dims, key))

    if is_closure(primal):
        pairs = {m: sub(m, v) for m, v in closure_items(primal) if carries_derivative(v)}
        return {m: p[0] for m, p in pairs.items()}, {m: p[1] for m, p in pairs.items()}
    if isinstance(primal, dict):
        pairs = {k: sub(k, v) for k, v in primal.items()}
        return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
    if isinstance(primal, (tuple, list)):
        parts = [sub(i, v) for i, v in enumerate(primal)]
        return sequence_like(primal, [p[0] for p in parts]), tuple(p[1] for p in parts)
    if bar is not None:
        return bar, bar_dims
    if primal is None or not carries_derivative(primal):
        return None, None
    member = bt.view(primal, primal_dims) if primal_dims is not None else abstractify(primal)
    return jnp.zeros(member.shape, member.dtype), None


def _fill(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    return fill(args[0], dims[0], args[1], dims[1])


def _where(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``_where(keep, new, old)``: `jnp.where` leaf by leaf, batched."""
    (keep, new, old), (keep_dims, new_dims, old_dims) = args, dims
    return _leafwise(lambda a, da, b, db: bt.call(jnp.where, (keep, a, b), (keep_dims, da, db)),
                     new, new_dims, old, old_dims)


def _leafwise(rule: Any, x: Any, x_dims: Any, y: Any, y_dims: Any) -> tuple:
    """``rule(x_leaf, its dims, y_leaf, its dims) -> (out, out_dims)`` over two values of
    one structure (dicts, sequences, leaves; None where `x` has none stays None)."""
    if x is None:
        return None, None
    if isinstance(x, dict):
        keyed = {k: _leafwise(rule, v, part(x_dims, k), y[k], part(y_dims, k))
                 for k, v in x.items()}
        return {k: p[0] for k, p in keyed.items()}, {k: p[1] for k, p in keyed.items()}
    if isinstance(x, (tuple, list)):
        pairs = [_leafwise(rule, v, part(x_dims, i), y[i], part(y_dims, i))
                 for i, v in enumerate(x)]
        return sequence_like(x, [p[0] for p in pairs]), tuple(p[1] for p in pairs)
    return rule(x, x_dims, y, y_dims)


def _unfill(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``unfill(bar, given)``: `bar` where `given` has values; structural in `bar`."""
    (bar, given), (bar_dims, given_dims) = args, dims
    if bar is None or given is None:
        return None, None
    if isinstance(given, dict):
        keyed = {k: _unfill(fn, (bar.get(k), v), (part(bar_dims, k), part(given_dims, k)),
                            {}, {}) for k, v in given.items()}
        return {k: p[0] for k, p in keyed.items()}, {k: p[1] for k, p in keyed.items()}
    if isinstance(given, (tuple, list)):
        pairs = [_unfill(fn, (b, v), (part(bar_dims, i), part(given_dims, i)), {}, {})
                 for i, (b, v) in enumerate(zip(bar, given))]
        return sequence_like(given, [p[0] for p in pairs]), tuple(p[1] for p in pairs)
    return bar, bar_dims


def _where_bar(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``where_bar(keep, bar, side, taken)``: the cotangent routed to one side of a
    `jnp.where`, leaf by leaf, batched."""
    keep, bar, side, taken = args
    keep_dims, bar_dims = dims[0], dims[1]
    return _leafwise(lambda b, d, _, __: bt.call(_routed_leaf, (keep, b, taken),
                                                 (keep_dims, d, None)),
                     bar, bar_dims, bar, bar_dims)


def _routed_leaf(keep: Any, b: Any, taken: bool) -> Any:
    zero = jnp.zeros_like(b)
    return jnp.where(keep, b, zero) if taken else jnp.where(keep, zero, b)


def _passed(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``_primal(fn)``: the function (converted for staging), its companions unchanged."""
    return fn(*args), dims[0]


def _static(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    return fn(*args, **kwargs), None


def _getattr(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``getattr(f, "__qualname__", "")`` of a function the rules dispatch on (its closure
    may be batched): its metadata, unbatched. Other attributes are traced as before."""
    value = getattr(*args)
    if callable(args[0]) and isinstance(value, (str, type(None))) and not bt.batched(dims[1:]):
        return value, None
    return traced.batch(fn, args, dims, kwargs, kwdims)


def _closure_pairs(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``closure_items(f)`` / ``closure_params(f)``: (name, value) pairs, each value's
    companions those of `f`'s closure under that name."""
    pairs = fn(*args)
    return pairs, [(None, part(dims[0], name)) for name, _ in pairs]


def _cell_tangents(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``cell_tangents(free, fn_dot)``: each cell's tangent, by the cell's name."""
    (free, fn_dot), fn_dot_dims = args, dims[1]
    return fn(free, fn_dot), [None if fn_dot is None else part(fn_dot_dims, n) for n, _ in free]


def _free_values(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``free_values(free, args)``: the cells' values, then the arguments."""
    free, free_dims = args[0], dims[0]
    rest = tuple(args[1]) if len(args) > 1 else ()
    rest_dims = [part(dims[1], i) for i in range(len(rest))] if len(args) > 1 else []
    return fn(*args), [part(part(free_dims, i), 1) for i in range(len(free))] + rest_dims


def _free_bars(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``free_bars(free, bars, active)``: the cells' cotangents by name."""
    (free, bars, active), bar_dims = args, dims[1]
    out = fn(free, bars, active)
    if out is None:
        return None, None
    index = {n: i for i, (n, _) in enumerate(free)}
    return out, {n: part(bar_dims, index[n]) for n in out}


RULES: dict[Any, Any] = {closures.closure_items: _closure_pairs,
                         closures.closure_params: _closure_pairs,
                         closures.free_values: _free_values, closures.free_bars: _free_bars,
                         closures.cell_tangents: _cell_tangents,
                         getattr: _getattr, control.fill: _fill, control._where: _where, control.unfill: _unfill,
                         control.where_bar: _where_bar, control._primal: _passed,
                         control._traced: _static, control._any: _static}
