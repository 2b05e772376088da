"""``ad`` helpers for dot_general, the indexing primitives (dynamic slices, gather,
scatter) and sort. Re-exported by the ``ad`` package (transforms/ad/__init__.py)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import transpiler.numpy as jnp
from transpiler import dtypes
from transpiler.primitives import conversions as conv
from transpiler.primitives import dot as dot_p
from transpiler.primitives import elementwise as ew
from transpiler.primitives import indexing as idx_p
from transpiler.primitives import shape as sp
from transpiler.primitives.core import abstractify
from transpiler.transforms.ad.shapes import Shape, cast_like, inverse_permutation

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


# --- sort -----------------------------------------------------------------------------------

def sort_order(x: Any, dimension: int, descending: bool) -> Any:
    """The permutation by which the `sort` primitive moved the elements of `x`: the stable
    ascending order, reversed when `descending` (JAX sorts descending as the reverse of
    ascending, so tied elements take their derivatives in reverse order)."""
    perm = jnp.argsort(x, axis=dimension)
    return jnp.flip(perm, dimension) if descending else perm


def sorted_tangent(t: Any, x: Any, dimension: int, descending: bool) -> Any:
    """The tangent of ``sort(x)``: `t` in the order the sort put `x` (None: zero). Linear
    in `t` and constant in `x` almost everywhere, which is how the transforms differentiate
    it and `unsorted_cotangent` (transforms/ad/helper_tangents.py, reverse/adjoints.py)."""
    if t is None:
        return None
    return jnp.take_along_axis(t, sort_order(x, dimension, descending), axis=dimension)


def unsorted_cotangent(g: Any, x: Any, dimension: int, descending: bool) -> Any:
    """The cotangent of `x` from that of ``sort(x)``: `g` moved back by the inverse
    permutation (None: zero)."""
    if g is None:
        return None
    inverse = jnp.argsort(sort_order(x, dimension, descending), axis=dimension)
    return jnp.take_along_axis(g, inverse, axis=dimension)
