"""``lax``'s shape operations with JAX's signatures: reshape (with `dimensions`), pad with
``(low, high, interior)`` triples, concatenate, the broadcasts, static and dynamic slices
along one axis, squeeze/expand_dims, rev, transpose, collapse, split, tile, full.

Each is a thin composite over the shape and indexing primitives (primitives/shape.py,
primitives/indexing.py), so it runs eagerly, under ``jit``, ``grad`` and ``vmap`` like
them. Shapes, axes and static indices are Python values; `lax` does not promote dtypes
between operands (``concatenate`` of float32 and int32 is an error, as in JAX).
"""

from __future__ import annotations

import builtins
from typing import Any, Optional, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import asarray
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import shape as sp
from transpiler.primitives.core import (Tracer, abstractify, broadcast_shapes as
                                        broadcast_shapes_of, dtype_error, normalize_axis,
                                        shape_error)

__all__ = ["reshape", "pad", "concatenate", "broadcast", "broadcast_in_dim", "broadcast_to_rank",
           "broadcast_like", "broadcast_shapes", "slice", "slice_in_dim", "index_in_dim",
           "dynamic_index_in_dim", "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim",
           "squeeze", "expand_dims", "rev", "transpose", "collapse", "split", "tile", "full",
           "full_like", "empty", "stack", "unstack", "shape_as_value"]


def _ints(value: Any, fn: str, name: str) -> tuple[int, ...]:
    """A static sequence of ints (a traced value is a clear error)."""
    if isinstance(value, Tracer):
        raise shape_error(f"lax.{fn}: `{name}` must be static, got a traced value",
                          "it determines the output shape; pass Python ints")
    if isinstance(value, (int, np.integer)):
        raise located(TypeError, f"lax.{fn}: `{name}` must be a sequence of ints, got "
                      f"{value!r}", f"e.g. {name}=({value},)")
    return tuple(builtins.int(v) for v in value)


def _operand(x: Any) -> Any:
    return x if isinstance(x, Tracer) or hasattr(x, "aval") else asarray(x)


# --- reshape, transpose, squeeze, expand_dims, collapse ------------------------------------

def reshape(operand: Any, new_sizes: Sequence[int], dimensions: Optional[Sequence[int]] = None,
            *, out_sharding: Any = None) -> Any:
    """``lax.reshape``: `operand` (its axes first permuted by `dimensions`, when given)
    read in row-major order into shape `new_sizes`. No -1 entries, as in JAX."""
    x = _operand(operand)
    sizes = _ints(new_sizes, "reshape", "new_sizes")
    aval = abstractify(x, 0, "reshape")
    if any(d < 0 for d in sizes) or int(np.prod(sizes, dtype=np.int64)) != aval.size:
        raise shape_error(f"lax.reshape: cannot reshape an array of shape {list(aval.shape)} "
                          f"(size {aval.size}) into shape {list(sizes)}",
                          "lax.reshape takes no -1; jnp.reshape infers one dimension")
    if dimensions is not None:
        x = transpose(x, dimensions)
    return sp.reshape(x, new_sizes=sizes)


def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    """``lax.transpose``: axis ``i`` of the result is axis ``permutation[i]`` of `operand`."""
    x = _operand(operand)
    perm = _ints(permutation, "transpose", "permutation")
    ndim = abstractify(x, 0, "transpose").ndim
    if sorted(perm) != list(range(ndim)):
        raise shape_error(f"lax.transpose: permutation {perm} is not a permutation of the "
                          f"{ndim} axes of the operand")
    return sp.transpose(x, permutation=perm)


def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    """``lax.squeeze``: remove the size-1 axes `dimensions` (negative ones count from the end)."""
    x = _operand(array)
    aval = abstractify(x, 0, "squeeze")
    dims = {normalize_axis(d, aval.ndim, "lax.squeeze")
            for d in _ints(dimensions, "squeeze", "dimensions")}
    for d in sorted(dims):
        if aval.shape[d] != 1:
            raise shape_error(f"lax.squeeze: axis {d} of an array of shape {list(aval.shape)} "
                              f"has size {aval.shape[d]}, not 1")
    shape = tuple(n for d, n in enumerate(aval.shape) if d not in dims)
    return sp.reshape(x, new_sizes=shape)


def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
    """``lax.expand_dims``: insert size-1 axes at `dimensions` (positions in the result)."""
    x = _operand(array)
    aval = abstractify(x, 0, "expand_dims")
    dims = _ints(dimensions, "expand_dims", "dimensions")
    out_ndim = aval.ndim + len(dims)
    positions = {normalize_axis(d, out_ndim, "lax.expand_dims") for d in dims}
    if len(positions) != len(dims):
        raise shape_error(f"lax.expand_dims: repeated dimensions {dims}")
    sizes = iter(aval.shape)
    shape = tuple(1 if d in positions else next(sizes) for d in range(out_ndim))
    return sp.reshape(x, new_sizes=shape)


def collapse(operand: Any, start_dimension: int, stop_dimension: Optional[int] = None) -> Any:
    """``lax.collapse``: axes ``start_dimension:stop_dimension`` merged into one."""
    x = _operand(operand)
    shape = abstractify(x, 0, "collapse").shape
    lo, hi, _ = builtins.slice(start_dimension, stop_dimension).indices(len(shape))
    if lo > hi:
        raise shape_error(f"lax.collapse: start_dimension {start_dimension} is after "
                          f"stop_dimension {stop_dimension} for an array of rank {len(shape)}")
    merged = int(np.prod(shape[lo:hi], dtype=np.int64))
    return sp.reshape(x, new_sizes=shape[:lo] + (merged,) + shape[hi:])


def rev(operand: Any, dimensions: Sequence[int]) -> Any:
    """``lax.rev``: `operand` reversed along `dimensions`."""
    x = _operand(operand)
    ndim = abstractify(x, 0, "rev").ndim
    dims = tuple(normalize_axis(d, ndim, "lax.rev") for d in _ints(dimensions, "rev", "dimensions"))
    return sp.rev(x, dimensions=dims)


# --- broadcasts ----------------------------------------------------------------------------

def broadcast_in_dim(operand: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int],
                     *, out_sharding: Any = None) -> Any:
    """``lax.broadcast_in_dim``: axis ``i`` of `operand` becomes axis
    ``broadcast_dimensions[i]`` of the result, of shape `shape`; the other axes are new.
    Each operand axis has size 1 or its result axis's size."""
    x = _operand(operand)
    aval = abstractify(x, 0, "broadcast_in_dim")
    target = _ints(shape, "broadcast_in_dim", "shape")
    dims = _ints(broadcast_dimensions, "broadcast_in_dim", "broadcast_dimensions")
    if len(dims) != aval.ndim or len(set(dims)) != len(dims) or \
            any(not 0 <= d < len(target) for d in dims) or list(dims) != sorted(dims):
        raise shape_error(f"lax.broadcast_in_dim: broadcast_dimensions {dims} must be "
                          f"{aval.ndim} strictly increasing axes of the result shape "
                          f"{list(target)} (one per operand axis)")
    for n, d in zip(aval.shape, dims):
        if n != 1 and n != target[d]:
            raise shape_error(f"lax.broadcast_in_dim: operand of shape {list(aval.shape)} "
                              f"cannot be broadcast to {list(target)} with "
                              f"broadcast_dimensions {dims}: axis size {n} is neither 1 "
                              f"nor {target[d]}")
    kept = [1] * len(target)
    for n, d in zip(aval.shape, dims):
        kept[d] = n
    return sp.broadcast_to(sp.reshape(x, new_sizes=tuple(kept)), shape=target)


def broadcast(operand: Any, sizes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """``lax.broadcast``: new leading axes of `sizes` in front of `operand`'s."""
    x = _operand(operand)
    aval = abstractify(x, 0, "broadcast")
    lead = _ints(sizes, "broadcast", "sizes")
    return broadcast_in_dim(x, lead + aval.shape,
                            tuple(range(len(lead), len(lead) + aval.ndim)))


def broadcast_to_rank(x: Any, rank: int) -> Any:
    """``lax.broadcast_to_rank``: leading size-1 axes up to rank `rank`."""
    x = _operand(x)
    shape = abstractify(x, 0, "broadcast_to_rank").shape
    if rank <= len(shape):
        return x
    return sp.reshape(x, new_sizes=(1,) * (rank - len(shape)) + shape)


def broadcast_like(arr: Any, like_arr: Any) -> Any:
    """``lax.broadcast_like``: `arr` broadcast to the shape of `like_arr`."""
    return sp.broadcast_to(_operand(arr), shape=tuple(abstractify(like_arr).shape))


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """``lax.broadcast_shapes``: NumPy's broadcast of shapes."""
    return broadcast_shapes_of("lax.broadcast_shapes",
                               *(tuple(builtins.int(d) for d in s) for s in shapes))


# --- padding, joining, splitting -----------------------------------------------------------

def pad(operand: Any, padding_value: Any, padding_config: Sequence[Sequence[int]]) -> Any:
    """``lax.pad``: per axis a ``(low, high, interior)`` triple; negative `low`/`high` crop.
    `padding_value` is a scalar of `operand`'s dtype."""
    x = _operand(operand)
    aval = abstractify(x, 0, "pad")
    config = [tuple(builtins.int(v) for v in c) for c in padding_config]
    if len(config) != aval.ndim or any(len(c) != 3 for c in config):
        raise shape_error(f"lax.pad: padding_config {config} must hold one (low, high, "
                          f"interior) triple per axis of an array of shape {list(aval.shape)}")
    value = _operand(padding_value)
    value_aval = abstractify(value, 1, "pad")
    if value_aval.dtype != aval.dtype and not value_aval.weak_type:
        raise dtype_error(f"lax.pad: padding_value of dtype {value_aval.dtype} differs from "
                          f"the operand's {aval.dtype}", "convert it with .astype")
    if not config:  # a scalar: nothing to pad
        return x
    return sp.pad(x, value, low=tuple(c[0] for c in config), high=tuple(c[1] for c in config),
                  interior=tuple(c[2] for c in config))


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    """``lax.concatenate``: `operands` (one dtype, equal shapes but along `dimension`)
    joined along `dimension`."""
    xs = [_operand(o) for o in operands]
    if not xs:
        raise located(ValueError, "lax.concatenate: needs at least one operand")
    avals = [abstractify(x, i, "concatenate") for i, x in enumerate(xs)]
    if len({a.dtype for a in avals}) != 1:
        raise dtype_error(f"lax.concatenate: operands must have one dtype, got "
                          f"{[str(a.dtype) for a in avals]}", "convert them with .astype")
    axis = normalize_axis(dimension, avals[0].ndim, "lax.concatenate")
    if len(xs) == 1:
        return xs[0]
    return sp.concatenate(*xs, axis=axis)


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> list:
    """``lax.split``: `operand` cut along `axis` into pieces of `sizes` (summing to the
    axis's length)."""
    x = _operand(operand)
    shape = abstractify(x, 0, "split").shape
    axis = normalize_axis(axis, len(shape), "lax.split")
    lengths = _ints(sizes, "split", "sizes")
    if sum(lengths) != shape[axis] or any(n < 0 for n in lengths):
        raise shape_error(f"lax.split: sizes {lengths} must be non-negative and sum to the "
                          f"length {shape[axis]} of axis {axis}")
    pieces = []
    start = 0
    for n in lengths:
        pieces.append(slice_in_dim(x, start, start + n, axis=axis))
        start = start + n
    return pieces


def tile(operand: Any, reps: Sequence[int]) -> Any:
    """``lax.tile``: `operand` repeated `reps[i]` times along axis ``i`` (one rep per axis)."""
    x = _operand(operand)
    shape = abstractify(x, 0, "tile").shape
    counts = _ints(reps, "tile", "reps")
    if len(counts) != len(shape):
        raise shape_error(f"lax.tile: reps {counts} must have one entry per axis of an "
                          f"array of shape {list(shape)}")
    # (r0, n0, r1, n1, ...) by broadcasting, then merged pairwise
    spread = []
    dims = []
    for i, (r, n) in enumerate(zip(counts, shape)):
        spread += [r, n]
        dims.append(2 * i + 1)
    grown = broadcast_in_dim(x, tuple(spread), tuple(dims))
    return sp.reshape(grown, new_sizes=tuple(r * n for r, n in zip(counts, shape)))


def stack(operands: Sequence[Any], axis: int = 0) -> Any:
    """``lax.stack``: `operands` (one shape and dtype) along a new axis `axis`."""
    xs = [_operand(o) for o in operands]
    if not xs:
        raise located(ValueError, "lax.stack: needs at least one operand")
    ndim = abstractify(xs[0], 0, "stack").ndim
    position = normalize_axis(axis, ndim + 1, "lax.stack")
    return concatenate([expand_dims(x, (position,)) for x in xs], position)


def unstack(x: Any, axis: int = 0) -> tuple:
    """``lax.unstack``: the slices of `x` along `axis`, that axis removed."""
    x = _operand(x)
    shape = abstractify(x, 0, "unstack").shape
    axis = normalize_axis(axis, len(shape), "lax.unstack")
    return tuple(index_in_dim(x, i, axis, keepdims=False) for i in range(shape[axis]))


# --- static slices -------------------------------------------------------------------------

def slice(operand: Any, start_indices: Sequence[int], limit_indices: Sequence[int],  # noqa: A001
          strides: Optional[Sequence[int]] = None) -> Any:
    """``lax.slice``: the static window ``start:limit:stride`` on every axis."""
    x = _operand(operand)
    return sp.slice_(x, start_indices=_ints(start_indices, "slice", "start_indices"),
                     limit_indices=_ints(limit_indices, "slice", "limit_indices"),
                     strides=None if strides is None else _ints(strides, "slice", "strides"))


def slice_in_dim(operand: Any, start_index: Optional[int], limit_index: Optional[int],
                 stride: int = 1, axis: int = 0) -> Any:
    """``lax.slice_in_dim``: ``start_index:limit_index:stride`` on axis `axis` (None means
    the start or the end; negative indices count from the end)."""
    x = _operand(operand)
    shape = abstractify(x, 0, "slice_in_dim").shape
    axis = normalize_axis(axis, len(shape), "lax.slice_in_dim")
    n = shape[axis]
    start = 0 if start_index is None else builtins.int(start_index)
    limit = n if limit_index is None else builtins.int(limit_index)
    start = start + n if start < 0 else start
    limit = limit + n if limit < 0 else limit
    starts = [0] * len(shape)
    limits = list(shape)
    strides = [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, limit, builtins.int(stride)
    return sp.slice_(x, start_indices=tuple(starts), limit_indices=tuple(limits),
                     strides=tuple(strides))


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    """``lax.index_in_dim``: entry `index` (static; negative counts from the end) along
    `axis`, that axis kept with size 1 unless ``keepdims=False``."""
    x = _operand(operand)
    shape = abstractify(x, 0, "index_in_dim").shape
    axis = normalize_axis(axis, len(shape), "lax.index_in_dim")
    n = shape[axis]
    i = builtins.int(index)
    if not -n <= i < n:
        raise located(IndexError, f"lax.index_in_dim: index {i} is out of bounds for axis "
                      f"{axis} of size {n}")
    i = i + n if i < 0 else i
    picked = slice_in_dim(x, i, i + 1, axis=axis)
    return picked if keepdims else squeeze(picked, (axis,))


# --- dynamic slices along one axis ---------------------------------------------------------

def _start(index: Any, size: int, allow_negative: bool) -> Any:
    """A start index as the indexing primitives take it: negative ones counted from the end
    when `allow_negative` (the primitives then clamp the window into bounds)."""
    if isinstance(index, (int, np.integer)):
        i = builtins.int(index)
        if i < 0 and not allow_negative:
            raise located(ValueError, f"lax: index {i} is out of bounds for an axis of size "
                          f"{size} with allow_negative_indices=False")
        return i + size if i < 0 else i
    index = _operand(index)
    aval = abstractify(index, 0, "dynamic index")
    if aval.ndim or not dtypes.is_int(aval.dtype):
        raise dtype_error(f"lax: a dynamic index must be an integer scalar, got "
                          f"{aval.dtype}{list(aval.shape)}")
    if not allow_negative:
        return index
    return ew.add(index, conv.select(ew.less(index, 0), size, 0))


def _along(axis: int, index: Any) -> tuple:
    """The index expression ``[:, ..., :, index]`` that puts `index` on `axis`."""
    return (builtins.slice(None),) * axis + (index,)


def dynamic_index_in_dim(operand: Any, index: Any, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True) -> Any:
    """``lax.dynamic_index_in_dim``: entry `index` (traced or not; clamped into bounds)
    along `axis`."""
    x = _operand(operand)
    shape = abstractify(x, 0, "dynamic_index_in_dim").shape
    axis = normalize_axis(axis, len(shape), "lax.dynamic_index_in_dim")
    if isinstance(index, (int, np.integer)) and index < 0 and not allow_negative_indices:
        index = 0  # clamped, as JAX does here (its dynamic slices raise instead)
    start = _start(index, shape[axis], allow_negative_indices)
    if isinstance(start, builtins.int):
        start = builtins.min(builtins.max(start, 0), shape[axis] - 1)
    else:  # jnp indexing counts a negative index from the end: clamp those to 0 first
        start = ew.maximum(start, np.array(0, abstractify(start).dtype))
    picked = x[_along(axis, start)]  # a dynamic_slice, clamped into bounds
    return expand_dims(picked, (axis,)) if keepdims else picked


def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    """``lax.dynamic_update_slice_in_dim``: `update` written into `operand` from
    `start_index` along `axis` (at 0 along the others; clamped to fit)."""
    x = _operand(operand)
    u = _operand(update)
    shape = abstractify(x, 0, "dynamic_update_slice_in_dim").shape
    u_shape = abstractify(u, 1, "dynamic_update_slice_in_dim").shape
    axis = normalize_axis(axis, len(shape), "lax.dynamic_update_slice_in_dim")
    if len(u_shape) != len(shape) or any(n > m for n, m in zip(u_shape, shape)):
        raise shape_error(f"lax.dynamic_update_slice_in_dim: an update of shape "
                          f"{list(u_shape)} does not fit an operand of shape {list(shape)}")
    if u_shape[axis] == 0:
        return x
    start = _start(start_index, shape[axis], allow_negative_indices)
    last = shape[axis] - u_shape[axis]  # clamped to fit, as dynamic_update_slice does
    if isinstance(start, builtins.int):
        start = builtins.min(builtins.max(start, 0), last)
    else:
        dtype = abstractify(start).dtype
        start = ew.minimum(ew.maximum(start, np.array(0, dtype)), np.array(last, dtype))
    # the window's positions along `axis`: one scatter (the indexing update) writes them
    positions = ew.add(conv.iota(dtype=dtypes.int32, shape=(u_shape[axis],), dimension=0),
                       conv.convert_element_type(start, dtype=dtypes.int32))
    rest = tuple(builtins.slice(0, n) for n in u_shape[axis + 1:])
    lead = tuple(builtins.slice(0, n) for n in u_shape[:axis])
    return x.at[lead + (positions,) + rest].set(u)


def dynamic_update_index_in_dim(operand: Any, update: Any, index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    """``lax.dynamic_update_index_in_dim``: `update` written at entry `index` of `axis`; an
    `update` without that axis gets it (size 1)."""
    x = _operand(operand)
    u = _operand(update)
    shape = abstractify(x, 0, "dynamic_update_index_in_dim").shape
    axis = normalize_axis(axis, len(shape), "lax.dynamic_update_index_in_dim")
    if abstractify(u).ndim == len(shape) - 1:
        u = expand_dims(u, (axis,))
    return dynamic_update_slice_in_dim(x, u, index, axis,
                                       allow_negative_indices=allow_negative_indices)


# --- filled arrays -------------------------------------------------------------------------

def full(shape: Sequence[int], fill_value: Any, dtype: Any = None, *, sharding: Any = None) -> Any:
    """``lax.full``: an array of `shape` filled with the scalar `fill_value`, of `dtype`
    (default: `fill_value`'s, a Python float giving float32 and an int int32)."""
    dims = (builtins.int(shape),) if isinstance(shape, (int, np.integer)) else \
        _ints(shape, "full", "shape")
    value = _operand(fill_value)
    aval = abstractify(value, 1, "full")
    if aval.ndim:
        raise shape_error(f"lax.full: fill_value must be a scalar, got shape {list(aval.shape)}")
    target = aval.dtype if dtype is None else dtypes.canonicalize(dtype)
    value = conv.convert_element_type(value, dtype=target,
                                      weak_type=dtype is None and aval.weak_type)
    return sp.broadcast_to(value, shape=dims)


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Any = None,
              sharding: Any = None) -> Any:
    """``lax.full_like``: `fill_value` in `x`'s shape and dtype (or `shape`/`dtype`)."""
    aval = abstractify(x, 0, "full_like")
    return full(aval.shape if shape is None else shape, fill_value,
                aval.dtype if dtype is None else dtype)


def empty(shape: Sequence[int], dtype: Any, *, out_sharding: Any = None) -> Any:
    """``lax.empty``: an array of `shape` and `dtype` whose values are unspecified (zeros)."""
    return full(shape, 0, dtype)


def shape_as_value(shape: Sequence[int]) -> np.ndarray:
    """``lax.shape_as_value``: a shape as a constant integer vector, int32 (int64 where a
    dimension does not fit), as JAX gives it for a shape without symbolic dimensions."""
    dims = [builtins.int(d) for d in shape]
    wide = builtins.any(d > np.iinfo(np.int32).max for d in dims)
    return np.asarray(dims, dtype=np.int64 if wide else np.int32)
