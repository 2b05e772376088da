"""Indexing functions built on ``getitem`` and the gather/scatter primitives: take,
take_along_axis, nonzero (and argwhere, flatnonzero)."""

from __future__ import annotations

import builtins
from typing import Any, Optional

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import asarray
from transpiler.numpy.indexing import getitem
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import indexing as ip
from transpiler.primitives import shape as sp
from transpiler.primitives.core import Tracer, abstractify, normalize_axis, shape_error


def _default_fill(dtype: np.dtype) -> Any:
    """JAX's fill for out-of-range gathers: NaN, the most negative signed int, the largest
    unsigned int, or True."""
    if dtypes.is_inexact(dtype):
        return np.nan
    if dtype == dtypes.bool_:
        return True
    info = np.iinfo(dtype)
    return info.min if dtype.kind == "i" else info.max


def _index_array(indices: Any) -> Any:
    value = indices if isinstance(indices, Tracer) else asarray(indices)
    if not dtypes.is_int(abstractify(value).dtype):
        raise shape_error(f"indices must be integers, got {abstractify(value).dtype}")
    return conv.convert_element_type(value, dtype=dtypes.int32)


def _prepare_indices(indices: Any, n: int, mode: Optional[str]) -> tuple[Any, Any]:
    """(indices to gather with, validity mask or None) for ``mode`` fill/clip/wrap."""
    if mode == "raise":
        raise located(NotImplementedError, "mode='raise' is not supported (values are only "
                      "known at run time); use 'fill', 'clip' or 'wrap'")
    if mode not in (None, "fill", "clip", "wrap", "promise_in_bounds"):
        raise ValueError(f"invalid mode {mode!r}; expected 'fill', 'clip' or 'wrap'")
    if mode == "clip" or mode == "promise_in_bounds":
        return ew.minimum(ew.maximum(indices, 0), builtins.max(n - 1, 0)), None
    if mode == "wrap":
        return ew.remainder(indices, builtins.max(n, 1)), None
    wrapped = conv.select(ew.less(indices, 0), ew.add(indices, n), indices)
    valid = ew.logical_and(ew.greater_equal(wrapped, 0), ew.less(wrapped, n))
    return wrapped, valid


def _fill(result: Any, valid: Any, lead: int, fill_value: Any) -> Any:
    """Replace entries where `valid` (placed at output axis `lead`) is False by the fill."""
    out = abstractify(result)
    vshape = abstractify(valid).shape
    view = (1,) * lead + vshape + (1,) * (out.ndim - lead - len(vshape))
    fill = _default_fill(out.dtype) if fill_value is None else fill_value
    fill = conv.convert_element_type(np.asarray(fill), dtype=out.dtype)
    return conv.select(sp.reshape(valid, new_sizes=view), result, fill)


def take(a: Any, indices: Any, axis: Optional[int] = None, out: None = None,
         mode: Optional[str] = None, unique_indices: bool = False,
         indices_are_sorted: bool = False, fill_value: Any = None) -> Any:
    """``jnp.take``; out-of-range indices give `fill_value` by default (JAX's mode='fill'),
    or are clipped (``mode='clip'``) or wrapped (``mode='wrap'``)."""
    if out is not None:
        raise located(NotImplementedError, "take: the `out` argument is not supported",
                      "use the returned value (arrays are immutable)")
    if axis is None:
        a = sp.reshape(a, new_sizes=(abstractify(a).size,))
        axis = 0
    shape = abstractify(a, 0, "take").shape
    axis = normalize_axis(axis, len(shape), "take")
    indices, valid = _prepare_indices(_index_array(indices), shape[axis], mode)
    result = getitem(a, (builtins.slice(None),) * axis + (indices,))
    return result if valid is None else _fill(result, valid, axis, fill_value)


def take_along_axis(arr: Any, indices: Any, axis: Optional[int], mode: Optional[str] = None,
                    fill_value: Any = None) -> Any:
    """``jnp.take_along_axis``: ``arr[..., indices, ...]`` paired up along the other axes."""
    if axis is None:
        arr = sp.reshape(arr, new_sizes=(abstractify(arr).size,))
        indices = sp.reshape(indices, new_sizes=(abstractify(indices).size,))
        axis = 0
    shape = abstractify(arr, 0, "take_along_axis").shape
    ishape = abstractify(indices, 1, "take_along_axis").shape
    if len(ishape) != len(shape):
        raise shape_error(f"take_along_axis: indices of rank {len(ishape)} do not match an "
                          f"array of rank {len(shape)}", "the arrays need the same rank")
    axis = normalize_axis(axis, len(shape), "take_along_axis")
    others = list(shape[:axis]) + list(shape[axis + 1:])
    ind_others = list(ishape[:axis]) + list(ishape[axis + 1:])
    try:
        common = list(np.broadcast_shapes(tuple(others), tuple(ind_others)))
    except ValueError:
        raise shape_error(f"take_along_axis: shapes {list(shape)} and {list(ishape)} do not "
                          f"broadcast outside axis {axis}") from None
    out_shape = tuple(common[:axis] + [ishape[axis]] + common[axis:])
    index, valid = _prepare_indices(_index_array(indices), shape[axis], mode)
    items: list[Any] = []
    for d, n in enumerate(shape):
        if d == axis:
            items.append(sp.broadcast_to(index, shape=out_shape))
        else:  # size-1 axes of arr broadcast: always index 0 there
            line = np.arange(out_shape[d], dtype=np.int32) if n != 1 else \
                np.zeros(out_shape[d], np.int32)
            view = [1] * len(shape)
            view[d] = out_shape[d]
            items.append(line.reshape(view))
    result = getitem(arr, tuple(items)) if shape else arr
    if valid is None:
        return result
    return _fill(result, sp.broadcast_to(valid, shape=out_shape), 0, fill_value)


# --- nonzero ---------------------------------------------------------------------------------
def _inclusive_count(flags: Any, n: int) -> Any:
    """Prefix sums of a 1-d int32 array by log2(n) shifted adds (static shapes only)."""
    shift = 1
    while shift < n:
        shifted = sp.pad(flags, np.int32(0), low=(shift,), high=(-shift,), interior=(0,))
        flags = ew.add(flags, shifted)
        shift *= 2
    return flags


def nonzero(a: Any, *, size: Optional[int] = None, fill_value: Any = None) -> tuple:
    """Indices of the nonzero elements, one int32 array per axis.

    Concrete inputs use NumPy; traced ones need a static ``size=``: the first `size` indices
    are kept and missing ones are `fill_value` (default 0)."""
    aval = abstractify(a, 0, "nonzero")
    if aval.ndim == 0:
        raise shape_error("nonzero: calling nonzero on 0-d arrays is not allowed",
                          "use jnp.atleast_1d(x).nonzero() instead")
    fills = fill_value if isinstance(fill_value, (tuple, list)) else \
        (0 if fill_value is None else fill_value,) * aval.ndim
    if not isinstance(a, Tracer):
        found = np.nonzero(np.asarray(a))
        if size is not None:
            found = tuple(np.concatenate([f[:size], np.full(builtins.max(size - len(f), 0), v)])
                          for f, v in zip(found, fills))
        return tuple(asarray(np.asarray(f, np.int32)) for f in found)
    if size is None:
        raise shape_error(f"nonzero of a traced array ({aval}) inside jit: the number of "
                          "nonzero elements, and so the result's shape, depends on the values",
                          "pass a static size=N (and fill_value=) to jnp.nonzero/argwhere/"
                          "flatnonzero, or use jnp.where(mask, x, y) to keep the shape")
    n = aval.size
    flags = conv.convert_element_type(
        ew.not_equal(sp.reshape(a, new_sizes=(n,)), np.zeros((), aval.dtype)), dtype=dtypes.int32)
    slot = ew.subtract(_inclusive_count(flags, n), 1)  # the output slot of each nonzero
    slot = conv.select(ew.equal(flags, 1), slot, size)  # zeros go out of range: dropped
    positions = conv.iota(dtype=dtypes.int32, shape=(n,), dimension=0)
    empty = sp.broadcast_to(np.int32(-1), shape=(size,))
    flat = ip.scatter(empty, sp.reshape(slot, new_sizes=(n, 1)), positions, mode="set")
    missing = ew.less(flat, 0)
    coords = []
    stride = n
    for dim, fill in zip(aval.shape, fills):
        stride //= builtins.max(dim, 1)
        coord = ew.remainder(ew.floor_divide(flat, builtins.max(stride, 1)), builtins.max(dim, 1))
        coords.append(conv.select(missing, np.int32(fill), coord))
    return tuple(coords)


def flatnonzero(a: Any, *, size: Optional[int] = None, fill_value: Any = None) -> Any:
    """Indices of the nonzero elements of ``ravel(a)``."""
    flat = sp.reshape(a, new_sizes=(abstractify(a, 0, "flatnonzero").size,))
    return nonzero(flat, size=size, fill_value=fill_value)[0]


def argwhere(a: Any, *, size: Optional[int] = None, fill_value: Any = None) -> Any:
    """``(N, a.ndim)`` array of the indices of the nonzero elements."""
    aval = abstractify(a, 0, "argwhere")
    if aval.ndim == 0:
        found = nonzero(sp.reshape(a, new_sizes=(1,)), size=size, fill_value=fill_value)[0]
        count = abstractify(found).shape[0]
        return sp.broadcast_to(np.zeros((), np.int32), shape=(count, 0))
    coords = nonzero(a, size=size, fill_value=fill_value)
    count = abstractify(coords[0]).shape[0]
    columns = [sp.reshape(c, new_sizes=(count, 1)) for c in coords]
    return columns[0] if len(columns) == 1 else sp.concatenate(*columns, axis=1)
