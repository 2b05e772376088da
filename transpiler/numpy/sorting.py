"""Sorting and searching with NumPy's signatures and JAX's results: sort, argsort, lexsort,
partition, argpartition, searchsorted, digitize.

Everything is a gather by the permutation of `transpiler.primitives.sorting` (or the `sort`
primitive itself for values), so it runs eagerly, stages under ``jit``, batches, and
differentiates through the gather: the gradient of a sort permutes the cotangent back.
The order is JAX's total order: NaN last, -0.0 equal to 0.0, ties stable.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import asarray
from transpiler.numpy.indexing import getitem
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import shape as sp
from transpiler.primitives import sorting as sort_p
from transpiler.primitives.core import (abstractify, dtype_error, normalize_axis,
                                        promote_avals, shape_error)

__all__ = ["argpartition", "argsort", "digitize", "lexsort", "partition", "searchsorted",
           "sort"]


def _no_kind(fn: str, kind: Any, order: Any) -> None:
    if kind is not None:
        raise TypeError(f"'kind' argument to {fn} is not supported. Use stable=True or "
                        "stable=False to specify sort stability.")
    if order is not None:
        raise TypeError(f"'order' argument to {fn} is not supported.")


def _along(a: Any, axis: Optional[int], fn: str) -> Any:
    """`a` as an array, flattened when `axis` is None. (Arrays and axes come from separate
    helpers: a tuple mixing them would make the axis look differentiated.)"""
    a = asarray(a)
    aval = abstractify(a, 0, fn)
    if axis is None:
        return sp.reshape(a, new_sizes=(aval.size,))
    if aval.ndim == 0:
        raise shape_error(f"{fn}: axis {axis} is out of bounds for a 0-d array",
                          "pass axis=None, or an array of rank 1 or more")
    return a


def _axis(a: Any, axis: Optional[int], fn: str) -> int:
    """`axis` of `_along(a, axis)` as a non-negative int."""
    return 0 if axis is None else normalize_axis(axis, abstractify(a).ndim, fn)


def sort(a: Any, axis: Optional[int] = -1, *, kind: None = None, order: None = None,
         stable: bool = True, descending: bool = False) -> Any:
    """``jnp.sort``: `a` sorted along `axis` (None: flattened), NaN last (first when
    `descending`)."""
    _no_kind("sort", kind, order)
    a = _along(a, axis, "sort")
    return sort_p.sort(a, dimension=_axis(a, axis, "sort"), descending=bool(descending))


def argsort(a: Any, axis: Optional[int] = -1, *, kind: None = None, order: None = None,
            stable: bool = True, descending: bool = False, dtype: Any = None) -> Any:
    """``jnp.argsort``: the indices that sort `a` along `axis`; stable (equal elements keep
    their order, also when `descending`)."""
    _no_kind("argsort", kind, order)
    a = _along(a, axis, "argsort")
    index_dtype = dtypes.default_int() if dtype is None else dtypes.canonicalize(dtype)
    return sort_p.sort_permutation(a, dimension=_axis(a, axis, "argsort"),
                                   descending=bool(descending),
                                   index_dtype=index_dtype)


def lexsort(keys: Sequence[Any], axis: int = -1) -> Any:
    """``jnp.lexsort``: the stable permutation sorting by the last key, then the one
    before ... (NumPy's order of keys)."""
    arrays = [asarray(k) for k in keys]
    if not arrays:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    shapes = {abstractify(k).shape for k in arrays}
    if len(shapes) > 1:
        raise shape_error(f"lexsort: all keys need to be the same shape, got "
                          f"{[list(abstractify(k).shape) for k in arrays]}")
    (shape,) = shapes
    if not shape:
        return conv.convert_element_type(np.asarray(0), dtype=dtypes.default_int())
    axis = normalize_axis(axis, len(shape), "lexsort")
    return sort_p.sort_permutation(*arrays[::-1], dimension=axis, descending=False,
                                   index_dtype=dtypes.default_int())


def _kth(kth: Any, n: int, fn: str) -> int:
    if not isinstance(kth, (int, np.integer)) or isinstance(kth, bool):
        raise TypeError(f"{fn}: kth must be a static int, got {type(kth).__name__}")
    if not -n <= int(kth) < n:
        raise shape_error(f"{fn}: kth {kth} is out of bounds for an axis of length {n}")
    return int(kth) % n


def _partition_axis(a: Any, axis: int, fn: str) -> int:
    aval = abstractify(a, 0, fn)
    if aval.dtype.kind == "c":
        raise located(NotImplementedError, f"jnp.{fn} for complex dtype is not implemented.",
                      "partition a real key (jnp.real(a) or jnp.abs(a)) with jnp.argpartition, "
                      "and gather with jnp.take_along_axis")
    if aval.ndim == 0:
        raise shape_error(f"{fn}: a 0-d array cannot be partitioned")
    return normalize_axis(axis, aval.ndim, fn)


def _swap(a: Any, axis: int) -> Any:
    ndim = abstractify(a).ndim
    if axis == ndim - 1:
        return a
    perm = list(range(ndim))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return sp.transpose(a, permutation=tuple(perm))


def _slice_last(x: Any, start: int, stop: int) -> Any:
    shape = abstractify(x).shape
    return sp.slice_(x, start_indices=(0,) * (len(shape) - 1) + (start,),
                     limit_indices=(*shape[:-1], stop), strides=None)


def partition(a: Any, kth: int, axis: int = -1) -> Any:
    """``jnp.partition``: the ``kth + 1`` smallest elements first (ascending), then the rest
    (descending) -- JAX's arrangement, from two `top_k`s."""
    a = asarray(a)
    dimension = _partition_axis(a, axis, "partition")
    arr, n = _swap(a, dimension), abstractify(a).shape[dimension]
    kth = _kth(kth, n, "partition")
    ascending = sort_p.sort(arr, dimension=abstractify(arr).ndim - 1, descending=False)
    bottom = _slice_last(ascending, 0, kth + 1)
    top = sp.rev(_slice_last(ascending, kth + 1, n), dimensions=(abstractify(arr).ndim - 1,))
    return _swap(sp.concatenate(bottom, top, axis=abstractify(arr).ndim - 1), dimension)


def argpartition(a: Any, kth: int, axis: int = -1) -> Any:
    """``jnp.argpartition``: the indices of the ``kth + 1`` smallest elements first (in
    order), then the other indices in increasing order (JAX's arrangement)."""
    a = asarray(a)
    dimension = _partition_axis(a, axis, "argpartition")
    arr, n = _swap(a, dimension), abstractify(a).shape[dimension]
    kth = _kth(kth, n, "argpartition")
    last = abstractify(arr).ndim - 1
    perm = sort_p.sort_permutation(arr, dimension=last, descending=False,
                                   index_dtype=dtypes.int32)
    bottom = _slice_last(perm, 0, kth + 1)
    # The rest in index order: positions not among the bottom, found by sorting a 0/1 mask.
    rank = sort_p.sort_permutation(perm, dimension=last, descending=False,
                                   index_dtype=dtypes.int32)
    in_bottom = ew.less(rank, kth + 1)
    rest = sort_p.sort_permutation(in_bottom, dimension=last, descending=True,
                                   index_dtype=dtypes.int32)
    top = _slice_last(rest, kth + 1, n)
    out = sp.concatenate(bottom, top, axis=last)
    return conv.convert_element_type(_swap(out, dimension), dtype=dtypes.default_int())


# --- searching ------------------------------------------------------------------------------

def _before(x: Any, y: Any, dtype: np.dtype) -> Any:
    """``x < y`` in the sort order (NaN last, -0.0 == 0.0)."""
    less = ew.less(x, y)
    if not dtypes.is_float(dtype):
        return less
    return ew.logical_or(less, ew.logical_and(ew.isnan(y), ew.logical_not(ew.isnan(x))))


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *,
                 method: str = "scan") -> Any:
    """``jnp.searchsorted``: where each element of `v` goes in the sorted 1-d `a` to keep
    it sorted (before equal elements with ``side='left'``, after them with 'right'). A
    binary search of ``ceil(log2(len(a) + 1))`` gather steps, whatever `method` says."""
    if side not in ("left", "right"):
        raise ValueError(f"{side!r} is an invalid value for keyword 'side'")
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(f"method={method!r} not recognized")
    a, v = asarray(a), asarray(v)
    a_aval, v_aval = abstractify(a, 0, "searchsorted"), abstractify(v, 1, "searchsorted")
    if a_aval.ndim != 1:
        raise shape_error(f"searchsorted: a should be 1-dimensional, got shape "
                          f"{list(a_aval.shape)}")
    dtype, _ = promote_avals(a_aval, v_aval)
    if dtype.kind == "c":
        raise dtype_error("searchsorted: complex values are not supported")
    a = conv.convert_element_type(a, dtype=dtype)
    v = conv.convert_element_type(v, dtype=dtype)
    if sorter is not None:
        a = getitem(a, asarray(sorter))
    n = a_aval.shape[0]
    count = conv.convert_element_type(np.zeros(v_aval.shape, np.int32), dtype=dtypes.int32)
    step = 1 << (n.bit_length() - 1) if n else 0
    while step:
        candidate = ew.add(count, np.int32(step))
        fits = ew.less_equal(candidate, np.int32(n))
        probe = getitem(a, ew.subtract(ew.minimum(candidate, np.int32(n)), np.int32(1)))
        # left: a[candidate - 1] < v; right: a[candidate - 1] <= v, i.e. not v < a[...]
        goes_after = _before(probe, v, dtype) if side == "left" else \
            ew.logical_not(_before(v, probe, dtype))
        count = conv.select(ew.logical_and(fits, goes_after), candidate, count)
        step //= 2
    return count


def digitize(x: Any, bins: Any, right: bool = False, *, method: Optional[str] = None) -> Any:
    """``jnp.digitize``: the bin of each element of `x` (bins increasing or decreasing)."""
    x, bins = asarray(x), asarray(bins)
    b_aval = abstractify(bins, 1, "digitize")
    if b_aval.ndim != 1:
        raise shape_error(f"digitize: bins must be a 1-dimensional array; got shape "
                          f"{list(b_aval.shape)}")
    n = b_aval.shape[0]
    if n == 0:
        return conv.convert_element_type(np.zeros(abstractify(x).shape, np.int32),
                                          dtype=dtypes.int32)
    side = "left" if right else "right"
    kwargs = {} if method is None else {"method": method}
    increasing = ew.greater_equal(getitem(bins, -1), getitem(bins, 0))
    forward = searchsorted(bins, x, side=side, **kwargs)
    backward = ew.subtract(np.int32(n), searchsorted(sp.rev(bins, dimensions=(0,)), x,
                                                     side=side, **kwargs))
    return conv.select(increasing, forward, backward)
