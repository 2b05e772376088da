"""``ad``: the helpers VJP templates call (``ad.unbroadcast(g, shape)``, ...).

Everything here is plain `transpiler.numpy`/primitive code on static shapes, so it runs
eagerly, stages under ``jit`` and is itself differentiable (all it binds are primitives
with VJP templates). Shapes, axes and params are Python values; cotangents are arrays.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import transpiler.numpy as jnp
from transpiler import dtypes
from transpiler.primitives import conversions as conv
from transpiler.primitives import dot as dot_p
from transpiler.primitives import elementwise as ew
from transpiler.primitives import indexing as idx_p
from transpiler.primitives import reductions as red_p
from transpiler.primitives import shape as sp
from transpiler.primitives.core import abstractify

Shape = Sequence[int]


# --- shapes and dtypes ---------------------------------------------------------------------

def unbroadcast(g: Any, shape: Shape) -> Any:
    """Sum `g` over the axes that broadcasting added or stretched, then reshape to `shape`."""
    shape = tuple(shape)
    g_shape = abstractify(g).shape
    if g_shape == shape:
        return g
    lead = len(g_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and g_shape[lead + i] != 1)
    summed = red_p.reduce_sum(g, axes=axes) if axes else g
    return sp.reshape(summed, new_sizes=shape)


def cast_like(g: Any, x: Any) -> Any:
    """Convert cotangent `g` to the dtype of the floating operand `x` (no-op otherwise)."""
    aval, g_aval = abstractify(x), abstractify(g)
    if not dtypes.is_float(aval.dtype) or g_aval.dtype == aval.dtype:
        return g
    return conv.convert_element_type(g, dtype=aval.dtype, weak_type=aval.weak_type)


def unbroadcast_like(g: Any, x: Any) -> Any:
    """`unbroadcast` to the shape of operand `x`, in the dtype of `x`."""
    return cast_like(unbroadcast(g, abstractify(x).shape), x)


def convert_cotangent(g: Any, out: Any, x: Any) -> Any:
    """convert_element_type's adjoint: back to `x`'s dtype; an integer/bool result carries
    no derivative, so its operand gets zeros (as in JAX)."""
    if not dtypes.is_float(abstractify(out).dtype):
        return jnp.zeros_like(x)
    return cast_like(g, x)


def expand_reduced(g: Any, shape: Shape, axes: Sequence[int]) -> Any:
    """Undo a reduction's shape: reinsert `axes` with size 1, broadcast to `shape`."""
    shape = tuple(shape)
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    return sp.broadcast_to(sp.reshape(g, new_sizes=kept), shape=shape)


def inverse_permutation(permutation: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argsort(permutation))


def zeros_cotangent(x: Any) -> Any:
    """A zero cotangent for `x` (floor, sign, ...: piecewise constant functions)."""
    return jnp.zeros_like(x)


# --- elementwise -------------------------------------------------------------------------

def balanced_eq(x: Any, z: Any, y: Any) -> Any:
    """1 where ``x == z != y``, 0.5 where ``x == y == z``, else 0: how maximum/minimum
    share a cotangent (JAX's ``_balanced_eq``)."""
    return jnp.where(x == z, jnp.where(y == z, 0.5, 1.0), 0.0)


def integer_pow_derivative(x: Any, y: int) -> Any:
    """``d(x**y)/dx`` for a static int `y`."""
    if y == 0:
        return jnp.zeros_like(x)
    return y * conv.integer_pow(x, y=y - 1)


# --- shape primitives --------------------------------------------------------------------

def slice_axis(g: Any, start: int, stop: int, axis: int) -> Any:
    shape = abstractify(g).shape
    starts = tuple(start if d == axis else 0 for d in range(len(shape)))
    limits = tuple(stop if d == axis else n for d, n in enumerate(shape))
    return sp.slice_(g, start_indices=starts, limit_indices=limits, strides=None)


def split_concatenated(g: Any, xs: Sequence[Any], axis: int) -> list[Any]:
    """concatenate's adjoint: the piece of `g` each operand of `xs` became."""
    pieces, start = [], 0
    for x in xs:
        stop = start + abstractify(x).shape[axis]
        pieces.append(cast_like(slice_axis(g, start, stop, axis), x))
        start = stop
    return pieces


def unpad(g: Any, low: Shape, high: Shape, interior: Shape) -> Any:
    """pad's adjoint w.r.t. the operand: crop the edges, keep every (interior+1)-th element
    (negative edges, which cropped, pad with zeros instead)."""
    g_aval = abstractify(g)
    rank = g_aval.ndim
    if rank == 0:  # nothing to crop (and the pad primitive's eager impl rejects 0-d)
        return g
    zero = np.zeros((), g_aval.dtype)
    unpadded = sp.pad(g, zero, low=tuple(-lo for lo in low), high=tuple(-hi for hi in high),
                      interior=(0,) * rank)
    shape = abstractify(unpadded).shape
    return sp.slice_(unpadded, start_indices=(0,) * rank, limit_indices=shape,
                     strides=tuple(i + 1 for i in interior))


def pad_value_cotangent(g: Any, low: Shape, high: Shape, interior: Shape, value: Any) -> Any:
    """pad's adjoint w.r.t. the padding value: the sum over every padded position."""
    total = red_p.reduce_sum(g, axes=tuple(range(abstractify(g).ndim)))
    inside = unpad(g, low, high, interior)
    kept = red_p.reduce_sum(inside, axes=tuple(range(abstractify(inside).ndim)))
    return cast_like(total - kept, value)


def unslice(g: Any, shape: Shape, start_indices: Shape, limit_indices: Shape,
            strides: Any) -> Any:
    """slice's adjoint: zeros of `shape` with `g` written back at the sliced positions
    (JAX's ``_slice_transpose_rule``: a pad with interior padding for strides)."""
    g_aval = abstractify(g)
    if not shape:  # a 0-d slice is the whole operand
        return g
    strides = tuple(strides) if strides is not None else (1,) * len(shape)
    real_limits = tuple(s + (0 if n == 0 else 1 + (n - 1) * k)
                        for s, n, k in zip(start_indices, g_aval.shape, strides))
    return sp.pad(g, np.zeros((), g_aval.dtype), low=tuple(start_indices),
                  high=tuple(d - r for d, r in zip(shape, real_limits)),
                  interior=tuple(k - 1 for k in strides))


def rev(g: Any, dimensions: Sequence[int]) -> Any:
    return sp.rev(g, dimensions=tuple(dimensions))


# --- reductions and scans ----------------------------------------------------------------

def chooser_cotangent(g: Any, x: Any, out: Any, axes: Sequence[int]) -> Any:
    """reduce_max/min's adjoint: `g` split equally among the elements equal to the result
    (JAX's ``_reduce_chooser_jvp_rule``)."""
    shape = abstractify(x).shape
    hits = conv.convert_element_type(x == expand_reduced(out, shape, axes),
                                     dtype=abstractify(g).dtype)
    counts = expand_reduced(red_p.reduce_sum(hits, axes=tuple(axes)), shape, axes)
    return hits * expand_reduced(g, shape, axes) / counts


def prod_cotangent(g: Any, x: Any, axes: Sequence[int]) -> Any:
    """reduce_prod's adjoint without dividing by `x` (right where `x` has zeros): each
    element gets the product of the others, as exclusive products from both sides."""
    aval = abstractify(x)
    axes = tuple(axes)
    kept = tuple(d for d in range(aval.ndim) if d not in axes)
    n = int(np.prod([aval.shape[d] for d in axes], dtype=np.int64))
    if n == 0 or aval.size == 0:
        return jnp.zeros_like(x)
    perm = kept + axes
    rows = sp.reshape(sp.transpose(x, permutation=perm),
                      new_sizes=tuple(aval.shape[d] for d in kept) + (n,))
    others = exclusive_cumprod(rows, reverse=False) * exclusive_cumprod(rows, reverse=True)
    others = sp.reshape(others, new_sizes=tuple(aval.shape[d] for d in perm))
    others = sp.transpose(others, permutation=inverse_permutation(perm))
    return expand_reduced(g, aval.shape, axes) * others


def exclusive_cumprod(x: Any, reverse: bool) -> Any:
    """Products of the elements strictly before (after, if `reverse`) each one, last axis."""
    rank = abstractify(x).ndim
    one = np.ones((), abstractify(x).dtype)
    shift = (1, -1) if not reverse else (-1, 1)
    shifted = sp.pad(x, one, low=(0,) * (rank - 1) + (shift[0],),
                     high=(0,) * (rank - 1) + (shift[1],), interior=(0,) * rank)
    return red_p.cumprod(shifted, axis=rank - 1, reverse=reverse)


def cumsum(g: Any, axis: int, reverse: bool) -> Any:
    return red_p.cumsum(g, axis=axis, reverse=reverse)


def cumprod_cotangent(g: Any, x: Any, out: Any, axis: int, reverse: bool) -> Any:
    """cumprod's adjoint, ``x_bar[i] = sum_{j >= i} g[j] * prod_{k <= j, k != i} x[k]``,
    in O(n) and exact with zeros: before the first zero it is ``rcumsum(g * out) / x``;
    at the first zero, the same with that zero replaced by 1; after it, 0."""
    is_zero = x == 0
    earlier = red_p.cumsum(conv.convert_element_type(is_zero, dtype=dtypes.int32),
                           axis=axis, reverse=reverse)
    first_zero = ew.logical_and(is_zero, earlier == 1)
    safe_x = jnp.where(is_zero, 1.0, x)
    before = red_p.cumsum(g * out, axis=axis, reverse=not reverse) / safe_x
    out_at_zero = red_p.cumprod(jnp.where(first_zero, 1.0, x), axis=axis, reverse=reverse)
    at_zero = red_p.cumsum(g * out_at_zero, axis=axis, reverse=not reverse)
    return jnp.where(first_zero, at_zero, jnp.where(is_zero, 0.0, before))


def cumulative_chooser_cotangent(g: Any, x: Any, out: Any, axis: int, reverse: bool) -> Any:
    """cummax/cummin's adjoint: each ``g[j]`` goes to the element the running extreme
    came from, the latest ``i <= j`` with ``x[i] == out[i] == out[j]`` (of tied values the
    later one takes over; JAX's scan-tree rule splits ties differently). Computed as
    ``S[i] - S[next(i)]`` with ``S`` the reverse cumsum of `g` and ``next(i)`` the next
    position where the running extreme is attained again."""
    if reverse:
        flip = lambda a: sp.rev(a, dimensions=(axis,))  # noqa: E731
        return flip(cumulative_chooser_cotangent(flip(g), flip(x), flip(out), axis, False))
    g, x, out = (jnp.moveaxis(a, axis, -1) for a in (g, x, out))
    shape = abstractify(x).shape
    n = shape[-1]
    attained = x == out
    position = conv.iota(dtype=dtypes.int32, shape=shape, dimension=len(shape) - 1)
    upcoming = red_p.cummin(jnp.where(attained, position, n), axis=len(shape) - 1, reverse=True)
    nxt = sp.pad(upcoming, np.int32(n), low=(0,) * (len(shape) - 1) + (-1,),
                 high=(0,) * (len(shape) - 1) + (1,), interior=(0,) * len(shape))
    suffix = red_p.cumsum(g, axis=len(shape) - 1, reverse=True)
    padded = sp.pad(suffix, np.zeros((), abstractify(g).dtype),
                    low=(0,) * len(shape), high=(0,) * (len(shape) - 1) + (1,),
                    interior=(0,) * len(shape))
    after = jnp.take_along_axis(padded, nxt, axis=-1)
    return jnp.moveaxis(jnp.where(attained, suffix - after, 0.0), -1, axis)


# --- dot_general (JAX's _dot_general_transpose_lhs / _rhs) -------------------------------

def _ranges_like(*groups: Sequence[int]) -> list[list[int]]:
    start, out = 0, []
    for group in groups:
        out.append(list(range(start, start + len(group))))
        start += len(group)
    return out


def _remaining(ndim: int, *used: Sequence[int]) -> list[int]:
    taken = {d for group in used for d in group}
    return [d for d in range(ndim) if d not in taken]


def dot_transpose_lhs(g: Any, x: Any, y: Any, dimension_numbers: Any,
                      swap_ans: bool = False) -> Any:
    """The cotangent of dot_general's lhs `x`: `g` contracted with `y`, transposed back."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_kept = _remaining(abstractify(x).ndim, x_contract, x_batch)
    y_kept = _remaining(abstractify(y).ndim, y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = dot_p.normalize_dimension_numbers(((ans_y, y_kept), (ans_batch, y_batch)))
    x_contract_sorted_by_y = [x_contract[i] for i in np.argsort(y_contract)]
    out_axes = inverse_permutation(list(x_batch) + x_kept + x_contract_sorted_by_y)
    result = dot_p.dot_general(g, y, dimension_numbers=dims, preferred_element_type=None)
    return cast_like(sp.transpose(result, permutation=out_axes), x)


def dot_transpose_rhs(g: Any, x: Any, y: Any, dimension_numbers: Any) -> Any:
    """The cotangent of dot_general's rhs `y` (the lhs rule with the operands swapped)."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    swapped = ((y_contract, x_contract), (y_batch, x_batch))
    return dot_transpose_lhs(g, y, x, swapped, swap_ans=True)


# --- indexing ----------------------------------------------------------------------------

def dynamic_slice_cotangent(g: Any, operand: Any, starts: Sequence[Any]) -> Any:
    """dynamic_slice's adjoint: `g` written into zeros at the (same, clamped) starts."""
    return idx_p.dynamic_update_slice(jnp.zeros_like(operand), cast_like(g, operand), *starts)


def dynamic_update_slice_operand_cotangent(g: Any, update: Any, starts: Sequence[Any]) -> Any:
    """The overwritten window receives nothing."""
    return idx_p.dynamic_update_slice(g, jnp.zeros_like(g, shape=abstractify(update).shape),
                                      *starts)


def dynamic_update_slice_update_cotangent(g: Any, update: Any, starts: Sequence[Any]) -> Any:
    return idx_p.dynamic_slice(g, *starts, slice_sizes=abstractify(update).shape)


def clamp_indices(indices: Any, shape: Shape) -> Any:
    """Clamp the index vectors (last axis) into ``[0, size - 1]``, as gather does."""
    aval = abstractify(indices)
    upper = np.maximum(np.array(shape[:aval.shape[-1]]) - 1, 0).astype(aval.dtype)
    return jnp.clip(indices, np.zeros((), aval.dtype), upper)


def _in_bounds(indices: Any, shape: Shape, rest: int) -> Any:
    """Which index vectors scatter applies (the others are dropped), shaped to broadcast
    against updates (`rest` trailing window axes)."""
    aval = abstractify(indices)
    sizes = np.array(shape[:aval.shape[-1]]).astype(aval.dtype)
    ok = jnp.all(ew.logical_and(indices >= 0, indices < sizes), axis=-1)
    return sp.reshape(ok, new_sizes=aval.shape[:-1] + (1,) * rest)


def gather_cotangent(g: Any, operand: Any, indices: Any) -> Any:
    """gather's adjoint: scatter-add `g` at the clamped indices gather read from."""
    shape = abstractify(operand).shape
    return idx_p.scatter(jnp.zeros_like(operand), clamp_indices(indices, shape),
                         cast_like(g, operand), mode="add")


def _gathered(g: Any, indices: Any) -> Any:
    """``g`` at each update's position; 0 for updates that scatter dropped."""
    shape = abstractify(g).shape
    rest = len(shape) - abstractify(indices).shape[-1]
    values = idx_p.gather(g, clamp_indices(indices, shape))
    return jnp.where(_in_bounds(indices, shape, rest), values, 0.0)


def _update_ids(indices: Any, updates: Any) -> Any:
    """1, 2, 3, ... per index vector, broadcast over the update window (int32)."""
    batch = abstractify(indices).shape[:-1]
    shape = abstractify(updates).shape
    ids = jnp.arange(1, int(np.prod(batch, dtype=np.int64)) + 1, dtype=dtypes.int32)
    ids = sp.reshape(ids, new_sizes=batch + (1,) * (len(shape) - len(batch)))
    return sp.broadcast_to(ids, shape=shape)


def _winners(operand: Any, indices: Any, updates: Any) -> tuple[Any, Any]:
    """For mode "set": (positions some update overwrote, updates that were kept). Ids are
    scattered like the updates, so duplicates resolve exactly as in the forward pass."""
    ids = _update_ids(indices, updates)
    written = idx_p.scatter(jnp.zeros_like(operand, dtype=dtypes.int32), indices, ids,
                            mode="set")
    kept = idx_p.gather(written, clamp_indices(indices, abstractify(operand).shape)) == ids
    return written != 0, kept


def _extremal_shares(g: Any, operand: Any, indices: Any, updates: Any,
                     out: Any) -> tuple[Any, Any, Any]:
    """For modes "min"/"max": `g` split equally among the values equal to the result (the
    operand's own and every update's), like reduce_max. Returns (share of g per position,
    operand kept its value, update won)."""
    shape = abstractify(operand).shape
    rest = len(shape) - abstractify(indices).shape[-1]
    retained = operand == out
    won = ew.logical_and(_in_bounds(indices, shape, rest),
                         updates == idx_p.gather(out, clamp_indices(indices, shape)))
    dtype = abstractify(g).dtype
    counts = conv.convert_element_type(retained, dtype=dtype) + idx_p.scatter(
        jnp.zeros_like(g), indices, conv.convert_element_type(won, dtype=dtype), mode="add")
    return g / counts, retained, won


def scatter_operand_cotangent(g: Any, operand: Any, indices: Any, updates: Any, out: Any,
                              mode: str) -> Any:
    """scatter's adjoint w.r.t. the operand, for each `mode`."""
    if mode == "add":
        return g
    if mode == "set":
        overwritten, _ = _winners(operand, indices, updates)
        return jnp.where(overwritten, 0.0, g)
    if mode == "multiply":  # out = operand * (product of its updates): linear in operand
        factors = idx_p.scatter(jnp.ones_like(operand), indices, updates, mode="multiply")
        return g * factors
    share, retained, _ = _extremal_shares(g, operand, indices, updates, out)
    return jnp.where(retained, share, 0.0)


def scatter_updates_cotangent(g: Any, operand: Any, indices: Any, updates: Any, out: Any,
                              mode: str) -> Any:
    """scatter's adjoint w.r.t. the updates, for each `mode`; dropped updates get 0."""
    if mode == "add":
        return _gathered(g, indices)
    if mode == "set":
        _, kept = _winners(operand, indices, updates)
        return jnp.where(kept, _gathered(g, indices), 0.0)
    if mode == "multiply":
        return _gathered(g * operand, indices) * _scatter_mul_others(operand, indices, updates)
    share, _, won = _extremal_shares(g, operand, indices, updates, out)
    return jnp.where(won, _gathered(share, indices), 0.0)


def _scatter_mul_others(operand: Any, indices: Any, updates: Any) -> Any:
    """For each update, the product of the *other* updates at its position, without
    dividing by zero: with Z zeros and P the product of the nonzero updates there, it is
    P / u (u != 0, Z == 0), P (u == 0, Z == 1), else 0."""
    shape = abstractify(operand).shape
    zero = updates == 0
    zeros_at = idx_p.scatter(jnp.zeros_like(operand), indices,
                             conv.convert_element_type(zero, dtype=abstractify(updates).dtype),
                             mode="add")
    nonzero_product = idx_p.scatter(jnp.ones_like(operand), indices,
                                    jnp.where(zero, 1.0, updates), mode="multiply")
    clamped = clamp_indices(indices, shape)
    count, product = idx_p.gather(zeros_at, clamped), idx_p.gather(nonzero_product, clamped)
    return jnp.where(zero, jnp.where(count == 1, product, 0.0),
                     jnp.where(count == 0, product / jnp.where(zero, 1.0, updates), 0.0))


# Helpers the reverse-mode transform emits around the templates (None-aware accumulation,
# grad's seed, container cotangents, run-time dispatch).
from transpiler.transforms.runtime_helpers import (ELEMENT, SEED, add, defined, fail, index_bar, item, seed,  # noqa: E402,F401
                                                   map_bar, spread, vjp_call, custom_vjp_bwd)
