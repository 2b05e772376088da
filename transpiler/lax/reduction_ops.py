"""``lax``'s reductions with JAX's signatures: ``reduce_sum``/``prod``/``max``/``min``/
``and``/``or``/``xor`` over `axes` and ``argmax``/``argmin`` with an `index_dtype`, over
the reduction primitives (``reduce_xor``, which has none, as a tree of pairwise
``bitwise_xor``). ``lax.reduce`` and ``cumlogsumexp`` are in lax/windows.py.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.lax.shape_ops import concatenate, full, slice_in_dim
from transpiler.primitives import elementwise as ew
from transpiler.primitives import reductions as red_p
from transpiler.primitives import shape as sp
from transpiler.primitives.core import (abstractify, dtype_error, normalize_axis,
                                        shape_error)

__all__ = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
           "reduce_or", "reduce_xor", "argmax", "argmin"]


def _axes(operand: Any, axes: Sequence[int], fn: str) -> tuple[int, ...]:
    ndim = abstractify(operand, 0, fn).ndim
    if isinstance(axes, (int, np.integer)):
        axes = (int(axes),)
    normalized = tuple(sorted({normalize_axis(int(a), ndim, f"lax.{fn}") for a in axes}))
    if len(normalized) != len(tuple(axes)):
        raise shape_error(f"lax.{fn}: repeated axes {tuple(axes)}")
    return normalized


def reduce_sum(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """``lax.reduce_sum``: the sum over `axes`, in `operand`'s dtype."""
    return red_p.reduce_sum(operand, axes=_axes(operand, axes, "reduce_sum"))


def reduce_prod(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """``lax.reduce_prod``: the product over `axes`, in `operand`'s dtype."""
    return red_p.reduce_prod(operand, axes=_axes(operand, axes, "reduce_prod"))


def reduce_max(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """``lax.reduce_max``: the maximum over `axes` (NaN wins)."""
    return red_p.reduce_max(operand, axes=_axes(operand, axes, "reduce_max"))


def reduce_min(operand: Any, axes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """``lax.reduce_min``: the minimum over `axes` (NaN wins)."""
    return red_p.reduce_min(operand, axes=_axes(operand, axes, "reduce_min"))


def reduce_and(operand: Any, axes: Sequence[int]) -> Any:
    """``lax.reduce_and``: logical (bool) or bitwise (integers) and over `axes`."""
    return red_p.reduce_and(operand, axes=_axes(operand, axes, "reduce_and"))


def reduce_or(operand: Any, axes: Sequence[int]) -> Any:
    """``lax.reduce_or``: logical (bool) or bitwise (integers) or over `axes`."""
    return red_p.reduce_or(operand, axes=_axes(operand, axes, "reduce_or"))


def reduce_xor(operand: Any, axes: Sequence[int]) -> Any:
    """``lax.reduce_xor``: logical (bool) or bitwise (integers) exclusive or over `axes`,
    as a tree of pairwise ``bitwise_xor`` (there is no xor reduction primitive)."""
    dtype = abstractify(operand, 0, "reduce_xor").dtype
    if not (dtypes.is_int(dtype) or dtype == dtypes.bool_):
        raise dtype_error(f"lax.reduce_xor requires boolean or integer operands, got {dtype}")
    zero = np.array(0, dtype)
    return _tree_reduce([operand], [zero], lambda a, b: [ew.bitwise_xor(a[0], b[0])],
                        _axes(operand, axes, "reduce_xor"))[0]


def _arg(prim: Any, fn: str, operand: Any, axis: int, index_dtype: Any) -> Any:
    ndim = abstractify(operand, 0, fn).ndim
    if index_dtype is None:
        raise dtype_error(f"lax.{fn}: index_dtype is required (e.g. jnp.int32)")
    return prim(operand, axis=normalize_axis(int(axis), ndim, f"lax.{fn}"),
                index_dtype=dtypes.canonicalize(index_dtype))


def argmax(operand: Any, axis: int, index_dtype: Any) -> Any:
    """``lax.argmax``: the index of the first maximum along `axis`, as `index_dtype`
    (NaN counts as the maximum)."""
    return _arg(red_p.argmax, "argmax", operand, axis, index_dtype)


def argmin(operand: Any, axis: int, index_dtype: Any) -> Any:
    """``lax.argmin``: the index of the first minimum along `axis`, as `index_dtype`
    (NaN counts as the minimum)."""
    return _arg(red_p.argmin, "argmin", operand, axis, index_dtype)


# --- a tree of pairwise combinations ------------------------------------------------------

def _tree_reduce(leaves: list, inits: list, combine: Callable, axes: tuple[int, ...]) -> list:
    """`leaves` reduced over `axes` by `combine` (lists of arrays to a list of arrays),
    halving the length each step; an odd length is padded with the `inits`."""
    shape = abstractify(leaves[0]).shape
    kept = [d for d in range(len(shape)) if d not in axes]
    out_shape = tuple(shape[d] for d in kept)
    n = int(np.prod([shape[d] for d in axes], dtype=np.int64))
    rows = []
    for x in leaves:  # the reduced axes first, merged into one
        moved = sp.transpose(x, permutation=tuple(axes) + tuple(kept))
        rows.append(sp.reshape(moved, new_sizes=(n,) + out_shape))
    if n == 0:
        return [full(out_shape, v, abstractify(x).dtype) for v, x in zip(inits, leaves)]
    while n > 1:
        if n % 2:
            rows = [concatenate([r, full((1,) + out_shape, v, abstractify(r).dtype)], 0)
                    for r, v in zip(rows, inits)]
            n = n + 1
        half = n // 2
        rows = combine([slice_in_dim(r, 0, half) for r in rows],
                       [slice_in_dim(r, half, n) for r in rows])
        n = half
    return [sp.reshape(r, new_sizes=out_shape) for r in rows]
