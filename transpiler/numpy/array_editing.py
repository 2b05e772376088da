"""Functional edits of arrays with NumPy's names and JAX's results: append, insert, delete,
resize, trim_zeros, rollaxis, block, diagflat, fill_diagonal, put, place, put_along_axis.

Arrays are immutable, so the functions NumPy runs in place take ``inplace=False`` and
return the edited array (``inplace=True``, NumPy's default, is an error, as in JAX).
Output shapes are static: `insert` and `delete` take static positions or, where JAX
does, traced ones of a static count; `trim_zeros` needs concrete values.
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any, Optional

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import arange, array, asarray, ones, zeros
from transpiler.numpy.index_tricks import diag_indices, unravel_index
from transpiler.numpy.indexing_functions import nonzero
from transpiler.numpy.joining import concatenate, tile
from transpiler.numpy.math import clip, remainder, where
from transpiler.numpy.matrices import diag
from transpiler.numpy.reductions import sum
from transpiler.numpy.shape import (_as_array, _slice_axis, broadcast_shapes, moveaxis,
                                    ravel, reshape)
from transpiler.numpy.sorting import argsort, sort
from transpiler.primitives import core
from transpiler.primitives.core import abstractify, normalize_axis

__all__ = ["append", "block", "delete", "diagflat", "fill_diagonal", "insert", "place",
           "put", "put_along_axis", "resize", "rollaxis", "trim_zeros"]


def _no_inplace(fn: str, inplace: bool) -> None:
    if inplace:
        raise ValueError(f"jax.numpy.{fn} cannot modify arrays in-place, because JAX arrays "
                         f"are immutable. Pass inplace=False to instead return an updated "
                         f"array.")


def _tile_to_size(arr: Any, size: int) -> Any:
    """The 1-d `arr` repeated and cut to `size` elements."""
    n = abstractify(arr).shape[0]
    if n == size:
        return arr
    return _slice_axis(tile(arr, -(-size // n)), 0, 0, size)


def append(arr: Any, values: Any, axis: Optional[int] = None) -> Any:
    """`values` joined after `arr` (both flattened when `axis` is None)."""
    if axis is None:
        return concatenate([ravel(_as_array(arr)), ravel(_as_array(values))], 0)
    return concatenate([arr, values], axis=axis)


def insert(arr: Any, obj: Any, values: Any, axis: Optional[int] = None) -> Any:
    """`values` inserted before the positions `obj` (an int, a slice or a 1-d array of
    ints, possibly traced) along `axis` (None: the flattened array)."""
    a = _as_array(arr)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(operator.index(axis), a.ndim, "insert")
    n_input = a.shape[axis]
    indices = arange(*obj.indices(n_input)) if isinstance(obj, builtins.slice) else asarray(obj)
    if indices.ndim > 1:
        raise ValueError("jnp.insert(): obj must be a slice, a one-dimensional array, or a "
                         "scalar")
    if not dtypes.is_int(indices.dtype):
        if indices.size == 0 and not isinstance(obj, core.Tracer):
            indices = asarray(np.zeros((0,), dtypes.default_int()))
        else:
            raise ValueError(f"jnp.insert(): index array must be integer typed; got {obj}")
    values_arr = array(values, ndmin=a.ndim, dtype=a.dtype)
    if indices.size == 1:
        index = reshape(indices, ())
        if indices.ndim == 0:
            values_arr = moveaxis(values_arr, 0, axis)
        indices = reshape(index, (1,)) + zeros((values_arr.shape[axis],), indices.dtype)
    n_insert = broadcast_shapes(indices.shape, (values_arr.shape[axis],))[0]
    out_shape = list(a.shape)
    out_shape[axis] += n_insert
    out = zeros(tuple(out_shape), dtype=a.dtype)
    indices = clip(where(indices < 0, indices + n_input, indices), 0, n_input)
    values_ind = indices.at[argsort(indices)].add(arange(n_insert, dtype=indices.dtype))
    arr_mask = ones(n_input + n_insert, dtype=dtypes.bool_).at[values_ind].set(False)
    arr_ind = nonzero(arr_mask, size=n_input)[0]
    lead = (builtins.slice(None),) * axis
    out = out.at[lead + (values_ind,)].set(values_arr)
    return out.at[lead + (arr_ind,)].set(a)


def delete(arr: Any, obj: Any, axis: Optional[int] = None, *,
           assume_unique_indices: bool = False) -> Any:
    """`arr` without the entries `obj` (an int, a slice, concrete ints or a boolean mask;
    traced ints with ``assume_unique_indices=True``) along `axis` (None: flattened)."""
    a = _as_array(arr)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis(operator.index(axis), a.ndim, "delete")
    n = a.shape[axis]
    if isinstance(obj, (builtins.int, np.integer)):
        i = normalize_axis(builtins.int(obj), n, "delete")
        return concatenate([_slice_axis(a, axis, 0, i), _slice_axis(a, axis, i + 1, n)], axis)
    lead = (builtins.slice(None),) * axis
    if isinstance(obj, builtins.slice):
        return a[lead + (np.delete(np.arange(n), obj),)]
    if assume_unique_indices:
        positions = asarray(obj)
        if not dtypes.is_int(positions.dtype) or positions.ndim != 1:
            raise ValueError("jnp.delete(arr, obj, assume_unique_indices=True): obj must be a "
                             "1-d integer array")
        positions = sort(where(positions < 0, positions + n, positions))
        k = positions.shape[0]
        positions = positions - arange(k, dtype=positions.dtype)
        kept = arange(n - k, dtype=positions.dtype)
        kept = kept + sum(reshape(kept, (1, n - k)) >= reshape(positions, (k, 1)), axis=0,
                          dtype=positions.dtype)
        return a[lead + (kept,)]
    if isinstance(obj, core.Tracer):
        raise core.shape_error("jnp.delete: a traced 'obj' needs assume_unique_indices=True",
                               "the output size must be known")
    positions = np.asarray(obj)
    if positions.dtype == np.bool_:
        if positions.shape != (n,):
            raise ValueError(f"np.delete(arr, obj): for boolean obj, must have obj.shape == "
                             f"(arr.shape[axis],); got obj.shape={positions.shape}, "
                             f"arr.shape[axis]={n}")
        mask = ~positions
    elif positions.dtype.kind in "iu":
        mask = np.ones(n, dtype=bool)
        mask[positions] = False
    else:
        raise ValueError(f"np.delete(arr, obj): got obj.dtype={positions.dtype}; must be "
                         f"integer or bool.")
    return a[lead + (np.flatnonzero(mask),)]


def resize(a: Any, new_shape: Any) -> Any:
    """`a` flattened, repeated as often as needed and cut to `new_shape`."""
    shape = (operator.index(new_shape),) if isinstance(new_shape, (builtins.int, np.integer)) \
        else tuple(operator.index(d) for d in new_shape)
    if builtins.any(d < 0 for d in shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    flat = ravel(_as_array(a))
    new_size = math.prod(shape)
    if flat.shape[0] == 0 or new_size == 0:
        return zeros(shape, dtype=flat.dtype)
    return reshape(_tile_to_size(flat, new_size), shape)


def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Any:
    """`filt` without its leading ("f") and/or trailing ("b") zeros along `axis` (None:
    every axis); the result's shape depends on the values, so they must be concrete."""
    if isinstance(filt, core.Tracer):
        raise core.shape_error("trim_zeros: the argument must be concrete (the result's shape "
                               "depends on its values)", "call it outside jit/vmap/grad")
    a = _as_array(filt)
    if a.ndim == 0:
        raise ValueError("trim_zeros: the argument must be at least 1-dimensional")
    trim = trim.lower()
    axes = range(a.ndim) if axis is None else \
        [normalize_axis(operator.index(ax), a.ndim, "trim_zeros")
         for ax in ((axis,) if isinstance(axis, (builtins.int, np.integer)) else axis)]
    values = np.asarray(a) != 0
    for ax in axes:
        other = tuple(d for d in range(a.ndim) if d != ax)
        found = np.flatnonzero(values.any(axis=other)) if other else np.flatnonzero(values)
        n = a.shape[ax]
        start = (found[0] if found.size else n) if "f" in trim else 0
        stop = (found[-1] + 1 if found.size else 0) if "b" in trim else n
        stop = builtins.max(start, stop)
        a = _slice_axis(a, ax, builtins.int(start), builtins.int(stop))
        values = np.take(values, np.arange(start, stop), axis=ax)
    return a


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """Move `axis` to sit before position `start` (NumPy's older form of `moveaxis`)."""
    ndim = abstractify(_as_array(a), 0, "rollaxis").ndim
    axis = normalize_axis(operator.index(axis), ndim, "rollaxis")
    start = operator.index(start)
    if not -ndim <= start <= ndim:
        raise ValueError(f"start={start} must satisfy {-ndim}<=start<={ndim}")
    if start < 0:
        start += ndim
    if start > axis:
        start -= 1
    return moveaxis(a, axis, start)


def _block(xs: Any) -> tuple[Any, int]:
    if isinstance(xs, tuple):
        raise ValueError(f"jax.numpy.block does not allow tuples, got {xs}")
    if isinstance(xs, list):
        if not xs:
            raise ValueError("jax.numpy.block does not allow empty list arguments")
        parts, depths = [], []
        for x in xs:
            part, depth = _block(x)
            parts.append(part)
            depths.append(depth)
        if builtins.any(d != depths[0] for d in depths[1:]):
            raise ValueError("Mismatched list depths in jax.numpy.block")
        rank = builtins.max(depths[0], builtins.max(p.ndim for p in parts))
        parts = [reshape(p, (1,) * (rank - p.ndim) + tuple(p.shape)) for p in parts]
        return concatenate(parts, axis=-depths[0]), depths[0] + 1
    return _as_array(xs), 1


def block(arrays: Any) -> Any:
    """An array assembled from nested lists of blocks (the innermost lists join along the
    last axis, the next ones along the one before ...)."""
    return _block(arrays)[0]


def diagflat(v: Any, k: int = 0) -> Any:
    """A matrix with the flattened `v` on diagonal `k`."""
    return diag(ravel(_as_array(v)), k)


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    """`a` with its main diagonal set to `val` (repeated as needed); ``inplace=False`` is
    required."""
    if inplace:
        raise located(NotImplementedError, "JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise located(NotImplementedError, "wrap=True is not implemented, must use wrap=False")
    a, val = _as_array(a), _as_array(val)
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim > 2 and not builtins.all(n == a.shape[0] for n in a.shape[1:]):
        raise ValueError("All dimensions of input must be of equal length")
    n = builtins.min(a.shape)
    values = val if val.ndim == 0 else _tile_to_size(ravel(val), n)
    return a.at[diag_indices(n, a.ndim)].set(values)


def put(a: Any, ind: Any, v: Any, mode: Optional[str] = None, *,
        inplace: bool = True) -> Any:
    """`a` with the flat positions `ind` set to `v` (repeated as needed); ``mode``:
    None (JAX's: out-of-range indices clipped), "clip" or "wrap"."""
    _no_inplace("put", inplace)
    arr = _as_array(a)
    ind_arr = ravel(asarray(ind))
    v_arr = ravel(_as_array(v))
    if not arr.size or not ind_arr.size or not v_arr.size:
        return arr
    if not dtypes.is_int(ind_arr.dtype):
        raise TypeError(f"put: indices must be integers, got {ind_arr.dtype}")
    v_arr = _tile_to_size(v_arr, ind_arr.shape[0])
    if mode == "clip":
        ind_arr = clip(ind_arr, 0, arr.size - 1)
    elif mode == "wrap":
        ind_arr = remainder(ind_arr, arr.size)
    elif mode == "raise":
        raise located(NotImplementedError, "The 'raise' mode to jnp.put is not supported.",
                      "use mode='clip' or mode='wrap' (indices are only known at run time)")
    elif mode is not None:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
    return arr.at[unravel_index(ind_arr, arr.shape)].set(v_arr)


def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True) -> Any:
    """`arr` with the positions where `mask` is true set to `vals` in order (repeated as
    needed)."""
    _no_inplace("place", inplace)
    data = _as_array(arr)
    mask_arr = ravel(asarray(mask))
    vals_arr = ravel(_as_array(vals))
    if mask_arr.shape[0] != data.size:
        raise ValueError(f"place: mask and data must be the same size, got {mask_arr.shape[0]} "
                         f"and {data.size}")
    if vals_arr.shape[0] == 0:
        raise ValueError("Cannot place values from an empty array")
    n = data.size
    if n == 0:
        return data
    positions = nonzero(mask_arr, size=n, fill_value=n)[0]
    vals_arr = _tile_to_size(vals_arr, n)
    return reshape(ravel(data).at[positions].set(vals_arr, mode="drop"), data.shape)


def put_along_axis(arr: Any, indices: Any, values: Any, axis: Optional[int],
                   inplace: bool = True, *, mode: Optional[str] = None) -> Any:
    """`arr` with ``arr[..., indices, ...] = values`` along `axis` (the counterpart of
    `take_along_axis`)."""
    _no_inplace("put_along_axis", inplace)
    a = _as_array(arr)
    original_shape = a.shape
    indices = asarray(indices)
    if axis is None:
        a, axis = ravel(a), 0
    if a.ndim != indices.ndim:
        raise ValueError("put_along_axis arguments 'arr' and 'indices' must have same ndim. "
                         f"Got arr.ndim={a.ndim} indices.ndim={indices.ndim}")
    axis = normalize_axis(operator.index(axis), a.ndim, "put_along_axis")
    index = []
    for d, n in enumerate(a.shape):
        if d == axis:
            index.append(indices)
        else:
            shape = [1] * a.ndim
            shape[d] = n
            index.append(reshape(arange(n), tuple(shape)))
    out = a.at[tuple(index)].set(values, mode=mode)
    return reshape(out, original_shape)
