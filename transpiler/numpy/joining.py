"""Joining, splitting, repeating and padding arrays."""

from __future__ import annotations

import builtins
from typing import Any, Optional, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import astype, zeros_like
from transpiler.numpy.math import where
from transpiler.numpy.shape import (atleast_1d, atleast_2d, atleast_3d, _as_array, _slice_axis,
                                    _static_ints, expand_dims, moveaxis, ravel, reshape,
                                    flip)
from transpiler.primitives import conversions as conv
from transpiler.primitives import core
from transpiler.primitives import shape as sp
from transpiler.primitives.core import (abstractify, normalize_axis, shape_error)

__all__ = ["concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "split",
           "array_split", "hsplit", "vsplit", "dsplit", "tile", "repeat", "pad"]


# --- joining and splitting ---------------------------------------------------------------

def concatenate(arrays: Sequence[Any], axis: Optional[int] = 0, dtype: Any = None) -> Any:
    """Join arrays along an existing axis (``axis=None`` flattens them first)."""
    parts = [_as_array(a) for a in arrays]
    if not parts:
        raise ValueError("concatenate: need at least one array to concatenate")
    if axis is None:
        parts, axis = [ravel(p) for p in parts], 0
    if parts[0].ndim == 0:
        raise shape_error("concatenate: zero-dimensional arrays cannot be concatenated",
                          "use jnp.stack, or jnp.atleast_1d on the inputs")
    axis = normalize_axis(builtins.int(axis), parts[0].ndim, "concatenate")
    out = sp.concatenate(*parts, axis=axis)
    return out if dtype is None else astype(out, dtype)


def stack(arrays: Sequence[Any], axis: int = 0, dtype: Any = None) -> Any:
    """Join arrays of one shape along a new axis."""
    parts = [_as_array(a) for a in arrays]
    if not parts:
        raise ValueError("stack: need at least one array to stack")
    shapes = {p.shape for p in parts}
    if len(shapes) > 1:
        shown = " and ".join(str(list(s)) for s in sorted(shapes))
        raise shape_error(f"stack: all input arrays must have the same shape, got {shown}")
    axis = normalize_axis(builtins.int(axis), parts[0].ndim + 1, "stack")
    return concatenate([expand_dims(p, axis) for p in parts], axis=axis, dtype=dtype)


def hstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    parts = [atleast_1d(a) for a in tup]
    axis = 0 if parts and parts[0].ndim == 1 else 1
    return concatenate(parts, axis=axis, dtype=dtype)


def vstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    return concatenate([atleast_2d(a) for a in tup], axis=0, dtype=dtype)


def dstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    return concatenate([atleast_3d(a) for a in tup], axis=2, dtype=dtype)


def column_stack(tup: Sequence[Any]) -> Any:
    """Stack 1-d arrays as columns (2-d arrays are joined as they are)."""
    parts = [_as_array(a) for a in tup]
    parts = [reshape(p, (-1, 1)) if p.ndim < 2 else p for p in parts]
    return concatenate(parts, axis=1)


def _split(ary: Any, indices_or_sections: Any, axis: int, fn: str, even: bool) -> list:
    aval = abstractify(ary, 0, fn)
    axis = normalize_axis(builtins.int(axis), aval.ndim, fn)
    n = aval.shape[axis]
    if isinstance(indices_or_sections, (builtins.int, np.integer)):
        sections = builtins.int(indices_or_sections)
        if sections <= 0:
            raise ValueError(f"{fn}: number of sections must be larger than 0")
        if even and n % sections:
            raise ValueError(f"{fn}: array split does not result in an equal division: axis "
                             f"{axis} of size {n} into {sections} sections")
        size, extra = divmod(n, sections)
        sizes = [size + 1] * extra + [size] * (sections - extra)
        bounds = list(np.cumsum([0] + sizes))
    else:
        bounds = [0] + list(_static_ints(indices_or_sections, fn, "indices")) + [n]
    out = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        start, stop, _ = builtins.slice(builtins.int(start), builtins.int(stop)).indices(n)
        out.append(_slice_axis(ary, axis, start, builtins.max(start, stop)))
    return out


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """Split into equal sections (an int) or at static indices; uneven sections are an error."""
    return _split(ary, indices_or_sections, axis, "split", even=True)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """Like `split`, but sections may differ in size by one."""
    return _split(ary, indices_or_sections, axis, "array_split", even=False)


def hsplit(ary: Any, indices_or_sections: Any) -> list:
    axis = 0 if abstractify(ary, 0, "hsplit").ndim == 1 else 1
    return _split(ary, indices_or_sections, axis, "hsplit", even=True)


def vsplit(ary: Any, indices_or_sections: Any) -> list:
    return _split(ary, indices_or_sections, 0, "vsplit", even=True)


def dsplit(ary: Any, indices_or_sections: Any) -> list:
    return _split(ary, indices_or_sections, 2, "dsplit", even=True)


# --- repeating -----------------------------------------------------------------------------

def tile(A: Any, reps: Any) -> Any:
    """Repeat the whole array `reps` times along each axis."""
    a = _as_array(A)
    reps = _static_ints(reps, "tile", "reps")
    ndim = builtins.max(a.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    shape = (1,) * (ndim - a.ndim) + a.shape
    # (s0, s1, ...) -> (1, s0, 1, s1, ...) -> broadcast (r0, s0, r1, s1, ...) -> merge pairs
    spread = tuple(d for s in shape for d in (1, s))
    wide = tuple(d for r, s in zip(reps, shape) for d in (r, s))
    out = sp.broadcast_to(sp.reshape(a, new_sizes=spread), shape=wide)
    return sp.reshape(out, new_sizes=tuple(r * s for r, s in zip(reps, shape)))


def _repeat_uniform(a: Any, count: int, axis: int) -> Any:
    """Each element along `axis` repeated `count` times (broadcast on a new axis, merge)."""
    shape = abstractify(a).shape
    wide = shape[:axis + 1] + (count,) + shape[axis + 1:]
    out = sp.broadcast_to(expand_dims(a, axis + 1), shape=wide)
    merged = shape[:axis] + (shape[axis] * count,) + shape[axis + 1:]
    return sp.reshape(out, new_sizes=merged)


def repeat(a: Any, repeats: Any, axis: Optional[int] = None, *,
           total_repeat_length: Optional[int] = None) -> Any:
    """Repeat each element; `repeats` is a static int or a static sequence (one per element).

    Traced `repeats` need ``total_repeat_length`` (the static output length)."""
    if axis is None:
        a, axis = ravel(a), 0
    aval = abstractify(a, 0, "repeat")
    axis = normalize_axis(builtins.int(axis), aval.ndim, "repeat")
    n = aval.shape[axis]
    if isinstance(repeats, core.Tracer):
        if total_repeat_length is None:
            raise shape_error("repeat: `repeats` is a traced value, so the output size is "
                              "unknown at trace time", "pass a static `repeats`, or give "
                              "total_repeat_length= (the static output length)")
        return _repeat_traced(a, repeats, axis, builtins.int(total_repeat_length))
    counts = np.asarray(repeats).astype(np.int64).reshape(-1)
    if counts.size == 1:
        counts = np.broadcast_to(counts, (n,))
    if counts.size != n:
        raise shape_error(f"repeat: {counts.size} repeats for axis {axis} of size {n}")
    if (counts < 0).any():
        raise ValueError("repeat: repeats may not contain negative values")
    if n and (counts == counts[0]).all():
        out = _repeat_uniform(a, builtins.int(counts[0]), axis)
    else:  # runs of equal counts: one slice + uniform repeat per run
        pieces, start = [], 0
        for stop in range(1, n + 1):
            if stop == n or counts[stop] != counts[start]:
                if counts[start]:
                    piece = _slice_axis(a, axis, start, stop)
                    pieces.append(_repeat_uniform(piece, builtins.int(counts[start]), axis))
                start = stop
        out = sp.concatenate(*pieces, axis=axis) if pieces else \
            _slice_axis(a, axis, 0, 0)
    if total_repeat_length is not None:
        out = _fit_length(out, axis, builtins.int(total_repeat_length))
    return out


def _fit_length(x: Any, axis: int, length: int) -> Any:
    """Truncate, or pad with the last element, to `length` along `axis` (as JAX does)."""
    n = abstractify(x).shape[axis]
    if n >= length:
        return _slice_axis(x, axis, 0, length)
    if n == 0:
        raise ValueError("repeat: cannot extend an empty result to total_repeat_length")
    last = _repeat_uniform(_slice_axis(x, axis, n - 1, n), length - n, axis)
    return sp.concatenate(x, last, axis=axis)


def _repeat_traced(a: Any, repeats: Any, axis: int, length: int) -> Any:
    """Traced repeats without gather: out[j] = a[i] where i = #{k : cumsum(repeats)[k] <= j}."""
    from transpiler.numpy import sum as sum_  # reductions family; imported when used
    n = abstractify(a).shape[axis]
    counts = sp.broadcast_to(astype(repeats, np.int32), shape=(n,))
    lower_tri = astype(conv.iota(dtype=dtypes.int32, shape=(n, n), dimension=1) <=
                       conv.iota(dtype=dtypes.int32, shape=(n, n), dimension=0), np.int32)
    ends = sum_(lower_tri * counts, axis=1)                       # inclusive cumsum, (n,)
    j = conv.iota(dtype=dtypes.int32, shape=(length, 1), dimension=0)
    source = sum_(astype(ends <= j, np.int32), axis=1)            # (length,)
    source = source - astype(source >= n, np.int32)               # past the end: last element
    onehot = source.reshape(length, 1) == conv.iota(dtype=dtypes.int32, shape=(length, n),
                                                    dimension=1)  # (length, n)
    moved = moveaxis(a, axis, -1)                                 # (..., n)
    picked = where(onehot, expand_dims(moved, -2), zeros_like(expand_dims(moved, -2)))
    if picked.dtype == np.bool_:
        out = sum_(astype(picked, np.int32), axis=-1) > 0
    else:
        out = astype(sum_(picked, axis=-1), picked.dtype)
    return moveaxis(out, -1, axis)


# --- padding -------------------------------------------------------------------------------

def _pad_widths(pad_width: Any, ndim: int) -> np.ndarray:
    if isinstance(pad_width, core.Tracer):
        raise shape_error("pad: pad_width must be static", "it determines the output shape")
    widths = np.asarray(pad_width)
    if widths.dtype.kind not in "iu" and widths.size:
        raise TypeError(f"pad: pad_width must be integers, got {pad_width!r}")
    try:
        widths = np.broadcast_to(widths.astype(np.int64), (ndim, 2))
    except ValueError:
        raise shape_error(f"pad: pad_width {pad_width!r} does not fit an array of rank "
                          f"{ndim}", "give an int, (before, after), or one pair per axis") from None
    if (widths < 0).any():
        raise ValueError(f"pad: pad_width must be non-negative, got {pad_width!r}")
    return widths


def _periodic_block(x: Any, axis: int, mode: str) -> Any:
    """One period of the infinite extension that `mode` implies, starting at index 0."""
    n = abstractify(x).shape[axis]
    if mode == "wrap":
        return x
    if mode == "symmetric":
        return sp.concatenate(x, flip(x, axis), axis=axis)
    if n <= 2:  # reflect: [a] and [a, b] are already a period
        return x
    return sp.concatenate(x, flip(_slice_axis(x, axis, 1, n - 1), axis), axis=axis)


def _pad_axis(x: Any, axis: int, before: int, after: int, mode: str) -> Any:
    n = abstractify(x).shape[axis]
    if not before and not after:
        return x
    if n == 0:
        raise ValueError(f"pad: can't extend an empty axis {axis} with mode {mode!r}")
    if mode == "edge":
        parts = [_repeat_uniform(_slice_axis(x, axis, 0, 1), before, axis), x,
                 _repeat_uniform(_slice_axis(x, axis, n - 1, n), after, axis)]
        return sp.concatenate(*parts, axis=axis)
    block = _periodic_block(x, axis, mode)
    period = abstractify(block).shape[axis]
    total = before + n + after
    start = (-before) % period
    copies = -(-(start + total) // period)
    reps = [1] * abstractify(x).ndim
    reps[axis] = copies
    return _slice_axis(tile(block, reps), axis, start, start + total)


def pad(array: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0,
        **kwargs: Any) -> Any:
    """``jnp.pad`` for modes constant, edge, reflect, symmetric and wrap (static widths)."""
    x = _as_array(array)
    widths = _pad_widths(pad_width, x.ndim)
    if mode == "constant":
        values = constant_values
        if isinstance(values, core.Tracer) or np.ndim(np.asarray(values)) == 0 or \
                np.size(np.asarray(values)) == 1:
            value = astype(reshape(_as_array(values), ()), x.dtype)
            zeros = (0,) * x.ndim
            return sp.pad(x, value, low=tuple(widths[:, 0].tolist()),
                          high=tuple(widths[:, 1].tolist()), interior=zeros)
        pairs = np.broadcast_to(np.asarray(values), (x.ndim, 2))
        for axis in range(x.ndim):
            for side, value in enumerate(pairs[axis]):
                low = [0] * x.ndim
                high = [0] * x.ndim
                (low if side == 0 else high)[axis] = builtins.int(widths[axis, side])
                x = sp.pad(x, astype(_as_array(value), x.dtype), low=tuple(low),
                           high=tuple(high), interior=(0,) * x.ndim)
        return x
    if mode not in ("edge", "reflect", "symmetric", "wrap"):
        raise located(NotImplementedError, f"pad: mode {mode!r} is not supported; supported modes "
                      "are 'constant', 'edge', 'reflect', 'symmetric' and 'wrap'")
    if kwargs.get("reflect_type", "even") != "even":
        raise located(NotImplementedError, "pad: only reflect_type='even' is supported",
                      "leave reflect_type unset")
    for axis in range(x.ndim):
        x = _pad_axis(x, axis, builtins.int(widths[axis, 0]), builtins.int(widths[axis, 1]), mode)
    return x
