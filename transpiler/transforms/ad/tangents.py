"""``ad`` helpers for JVP templates: shaping a tangent like the output, zero tangents, and
the tangent maps of the primitives whose rule is more than one line.

Re-exported by the ``ad`` package (transforms/ad/__init__.py), so templates call them as
``ad.<name>``. Like the VJP helpers, everything here is plain `transpiler.numpy`/primitive
code on static shapes: it runs eagerly, stages under ``jit`` and is itself differentiable.
Tangents are arrays of their primal's shape and dtype; shapes, axes and params are Python
values.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

import transpiler.numpy as jnp
from transpiler import dtypes
from transpiler.primitives import conversions as conv
from transpiler.primitives import dot as dot_p
from transpiler.primitives import indexing as idx_p
from transpiler.primitives import reductions as red_p
from transpiler.primitives import shape as sp
from transpiler.primitives.core import abstractify
from transpiler.transforms.ad.indexing import (_extremal_shares, _scatter_mul_others,
                                               _winners, clamp_indices,
                                               scatter_operand_cotangent)
from transpiler.transforms.ad.shapes import Shape, expand_reduced

__all__ = ["tangent_like", "tangents_or_zeros", "zeros_tangent", "convert_tangent",
           "slice_tangent", "pad_tangent", "pad_value_tangent", "concatenate_tangents",
           "reduce_sum_tangent", "chooser_tangent", "prod_tangent", "cumprod_tangent",
           "cumulative_chooser_tangent", "dot_general_tangent", "dynamic_slice_tangent",
           "dynamic_update_slice_tangent", "gather_tangent", "scatter_operand_tangent",
           "scatter_updates_tangent"]

# --- shaping tangents --------------------------------------------------------------------


def tangent_like(t: Optional[Any], out: Any) -> Optional[Any]:
    """`t` broadcast to the shape of the primal output `out` and, when `out` is floating,
    converted to its dtype; None (a zero tangent) stays None."""
    if t is None:
        return None
    if isinstance(out, (tuple, list)):  # `+` or `*` of Python sequences (a concatenation)
        return _sequence_tangent(t, out)
    aval, t_aval = abstractify(out), abstractify(t)
    if t_aval.shape != aval.shape:
        t = sp.broadcast_to(t, shape=aval.shape)
    if dtypes.is_inexact(aval.dtype) and t_aval.dtype != aval.dtype:
        t = conv.convert_element_type(t, dtype=aval.dtype, weak_type=aval.weak_type)
    return t


def _sequence_tangent(t: Any, out: tuple[Any, ...] | list[Any]) -> Optional[Any]:
    """The tangent of a tuple or list built by concatenation: the operands' tangents
    concatenated, element for element; a sequence of integral values (indices, slices:
    an index tuple built with `+`) carries none."""
    if isinstance(t, (tuple, list)) and len(t) == len(out):
        return type(out)(tangent_like(ti, oi) for ti, oi in zip(t, out))
    if not any(isinstance(v, float) or (hasattr(v, "dtype") and dtypes.is_inexact(
            abstractify(v).dtype)) for v in out):
        return None
    raise TypeError("cannot differentiate `+` or `*` of a tuple or list when only one "
                    "operand carries a derivative; build the sequence with a literal "
                    "(`(a, b, c)`) or use jnp.concatenate")


def tangents_or_zeros(ts: Sequence[Optional[Any]], xs: Sequence[Any]) -> list[Any]:
    """The tangents of a variadic operand with zeros (``jnp.zeros_like(x)``) for None."""
    return [jnp.zeros_like(x) if t is None else t for t, x in zip(ts, xs)]


def zeros_tangent(out: Any) -> Any:
    """A zero tangent for `out` (floor, sign, floor_divide: piecewise constant)."""
    return jnp.zeros_like(out)


def convert_tangent(t: Any, out: Any) -> Any:
    """convert_element_type's tangent: `t` in `out`'s dtype; an integer or boolean result
    carries no derivative (JAX's float0), so its tangent is zeros in `t`'s dtype."""
    if not dtypes.is_inexact(abstractify(out).dtype):
        return jnp.zeros_like(t)
    return t


# --- shape primitives --------------------------------------------------------------------

def slice_tangent(t: Any, start_indices: Shape, limit_indices: Shape,
                  strides: Optional[Shape]) -> Any:
    return sp.slice_(t, start_indices=tuple(start_indices), limit_indices=tuple(limit_indices),
                     strides=None if strides is None else tuple(strides))


def pad_tangent(t: Any, value_t: Optional[Any], low: Shape, high: Shape,
                interior: Shape) -> Any:
    """``pad(t, value_t)``: the tangent of pad is pad of the tangents (it is linear in
    both). A None `value_t` pads with zeros; a 0-d operand is returned as it is."""
    aval = abstractify(t)
    if aval.ndim == 0:
        return t
    value = np.zeros((), aval.dtype) if value_t is None else value_t
    return sp.pad(t, value, low=tuple(low), high=tuple(high), interior=tuple(interior))


def pad_value_tangent(value_t: Any, x: Any, low: Shape, high: Shape, interior: Shape) -> Any:
    """pad's tangent w.r.t. the padding value: `value_t` at every padded position."""
    return pad_tangent(jnp.zeros_like(x), value_t, low, high, interior)


def concatenate_tangents(ts: Sequence[Optional[Any]], xs: Sequence[Any], axis: int) -> Any:
    """concatenate's tangent: the operands' tangents (zeros for None) concatenated."""
    return sp.concatenate(*tangents_or_zeros(ts, xs), axis=axis)


# --- reductions and scans ----------------------------------------------------------------

def reduce_sum_tangent(t: Any, axes: Sequence[int]) -> Any:
    return red_p.reduce_sum(t, axes=tuple(axes))


def chooser_tangent(t: Any, x: Any, out: Any, axes: Sequence[int]) -> Any:
    """reduce_max/min's tangent: the mean tangent of the elements equal to the result
    (JAX's ``_reduce_chooser_jvp_rule``; the transpose of `chooser_cotangent`)."""
    shape = abstractify(x).shape
    hits = conv.convert_element_type(x == expand_reduced(out, shape, axes),
                                     dtype=abstractify(t).dtype)
    counts = red_p.reduce_sum(hits, axes=tuple(axes))
    return red_p.reduce_sum(t * hits, axes=tuple(axes)) / counts


def prod_tangent(t: Any, x: Any, out: Any, axes: Sequence[int]) -> Any:
    """reduce_prod's tangent, ``sum_i t[i] * prod_{k != i} x[k]``, without dividing by `x`
    (exact where `x` has zeros; the products of the others come from `prod_cotangent`)."""
    from transpiler.transforms.ad import prod_cotangent  # it imports this module
    ones = jnp.ones_like(out, dtype=abstractify(t).dtype)
    return red_p.reduce_sum(t * prod_cotangent(ones, x, axes), axes=tuple(axes))


def cumprod_tangent(t: Any, x: Any, axis: int, reverse: bool) -> Any:
    """cumprod's tangent as a scan of dual numbers ``(p, d)`` combined by the product rule
    ``(p1, d1) * (p2, d2) = (p1 p2, d1 p2 + p1 d2)``: Hillis-Steele doubling steps
    (log2(n) pads and products), exact with zeros, like JAX's associative-scan JVP."""
    aval = abstractify(x)
    n = aval.shape[axis]
    p, d = x, t
    step = 1
    while step < n:
        p_before = _shift(p, step, axis, reverse, 1)
        d_before = _shift(d, step, axis, reverse, 0)
        p, d = p_before * p, d_before * p + p_before * d
        step *= 2
    return d


def _shift(a: Any, step: int, axis: int, reverse: bool, fill: int) -> Any:
    """`a` moved `step` places along `axis` (towards the end, or the start if `reverse`),
    the vacated places filled with `fill`: element i gets ``a[i - step]``."""
    aval = abstractify(a)
    low = [0] * aval.ndim
    high = [0] * aval.ndim
    low[axis], high[axis] = (-step, step) if reverse else (step, -step)
    return sp.pad(a, np.full((), fill, aval.dtype), low=tuple(low), high=tuple(high),
                  interior=(0,) * aval.ndim)


def cumulative_chooser_tangent(t: Any, x: Any, out: Any, axis: int, reverse: bool) -> Any:
    """cummax/cummin's tangent: each output takes the tangent of the element the running
    extreme came from, the latest ``i <= j`` with ``x[i] == out[i]`` (of tied values the
    later one takes over; the transpose of `cumulative_chooser_cotangent`)."""
    if reverse:
        flip = lambda a: sp.rev(a, dimensions=(axis,))  # noqa: E731
        return flip(cumulative_chooser_tangent(flip(t), flip(x), flip(out), axis, False))
    shape = abstractify(x).shape
    position = conv.iota(dtype=dtypes.int32, shape=shape, dimension=axis)
    attained = jnp.where(x == out, position, 0)  # position 0 always holds its own extreme
    source = red_p.cummax(attained, axis=axis, reverse=False)
    return jnp.take_along_axis(t, source, axis=axis)


# --- dot_general and indexing ------------------------------------------------------------

def dot_general_tangent(lhs: Any, rhs: Any, dimension_numbers: Any, out: Any) -> Any:
    """dot_general applied to one tangent and the other primal (it is bilinear), with the
    primal output's dtype as preferred element type (so a preferred_element_type param,
    which may be absent from a call, is honoured without naming it)."""
    dtype = abstractify(out).dtype
    return dot_p.dot_general(lhs, rhs, dimension_numbers=dimension_numbers,
                             preferred_element_type=dtype if dtypes.is_float(dtype) else None)


def dynamic_slice_tangent(t: Any, starts: Sequence[Any], slice_sizes: Shape) -> Any:
    return idx_p.dynamic_slice(t, *starts, slice_sizes=tuple(slice_sizes))


def dynamic_update_slice_tangent(operand_t: Any, update_t: Any, starts: Sequence[Any]) -> Any:
    """dynamic_update_slice of the tangents (it is linear in operand and update jointly);
    pass ``jnp.zeros_like`` of the primal for the one whose tangent is zero."""
    return idx_p.dynamic_update_slice(operand_t, update_t, *starts)


def gather_tangent(t: Any, indices: Any) -> Any:
    return idx_p.gather(t, indices)


def scatter_operand_tangent(t: Any, operand: Any, indices: Any, updates: Any, out: Any,
                            mode: str) -> Any:
    """scatter's tangent from the operand's tangent `t`: the map is elementwise (each
    position keeps, scales, splits or drops its own value), so it is its own transpose,
    `scatter_operand_cotangent`."""
    return scatter_operand_cotangent(t, operand, indices, updates, out, mode)


def scatter_updates_tangent(t: Any, operand: Any, indices: Any, updates: Any, out: Any,
                            mode: str) -> Any:
    """scatter's tangent from the updates' tangent `t`, for each `mode`: each position
    sums the tangents of the updates that count there (dropped ones count nowhere)."""
    zeros = jnp.zeros_like(operand, dtype=abstractify(t).dtype)
    if mode == "add":
        return idx_p.scatter(zeros, indices, t, mode="add")
    if mode == "set":
        _, kept = _winners(operand, indices, updates)
        return idx_p.scatter(zeros, indices, jnp.where(kept, t, 0.0), mode="add")
    if mode == "multiply":
        at = idx_p.gather(operand, clamp_indices(indices, abstractify(operand).shape))
        scaled = t * at * _scatter_mul_others(operand, indices, updates)
        return idx_p.scatter(zeros, indices, scaled, mode="add")
    share, _, won = _extremal_shares(jnp.ones_like(zeros), operand, indices, updates, out)
    return share * idx_p.scatter(zeros, indices, jnp.where(won, t, 0.0), mode="add")
