"""Shape manipulation: reshape, transpose, joining, splitting, padding, flips and diagonals.

Every function here is a composite over the shape primitives (reshape, broadcast_to,
transpose, concatenate, pad, rev, slice) and works alike on eager arrays and tracers; all
shapes, axes, repeats and widths are static Python values.
"""

from __future__ import annotations

import builtins
from typing import Any, Optional, Sequence

import numpy as np

from transpiler.errors import located
from transpiler.numpy.creation import asarray
from transpiler.primitives import core
from transpiler.primitives import shape as sp
from transpiler.primitives.core import (abstractify, normalize_axes, normalize_axis,
                                        shape_error)
from transpiler.primitives.core import broadcast_shapes as broadcast_shapes_of

__all__ = [
    "reshape", "broadcast_to", "broadcast_shapes", "transpose", "ravel", "expand_dims", "squeeze", "atleast_1d",
    "atleast_2d", "atleast_3d", "broadcast_arrays", "moveaxis", "swapaxes", "flip", "fliplr",
    "flipud", "roll", "rot90",
]


def _as_array(a: Any) -> Any:
    """Arrays and tracers as they are; lists, tuples and scalars through `asarray`."""
    return a if isinstance(a, core.Tracer) or hasattr(a, "aval") else asarray(a)


def _static_ints(value: Any, fn: str, name: str) -> tuple[int, ...]:
    """A static int or sequence of ints; a traced value is a clear error."""
    if isinstance(value, core.Tracer):
        raise shape_error(f"{fn}: `{name}` must be static, got a traced value",
                          "it determines the output shape; pass Python ints")
    return tuple(builtins.int(v) for v in np.asarray(value).reshape(-1))


def _axes_list(axis: Any, ndim: int, fn: str) -> list[int]:
    axes = [axis] if isinstance(axis, (builtins.int, np.integer)) else list(axis)
    return [normalize_axis(builtins.int(a), ndim, fn) for a in axes]


def _slice_axis(x: Any, axis: int, start: int, stop: int, step: int = 1) -> Any:
    """``x[..., start:stop:step, ...]`` on one axis (0 <= start <= stop <= size)."""
    shape = abstractify(x).shape
    starts = [0] * len(shape)
    limits = list(shape)
    strides = [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, stop, step
    return sp.slice_(x, start_indices=tuple(starts), limit_indices=tuple(limits),
                     strides=tuple(strides))


def _shape_arg(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (builtins.int, np.integer)):
        return (builtins.int(shape),)
    return tuple(builtins.int(d) for d in shape)


def reshape(a: Any, newshape: Any = None, order: str = "C", *, shape: Any = None) -> Any:
    """``jnp.reshape``; one dimension may be -1."""
    if order != "C":
        raise located(NotImplementedError, "reshape: only order='C' is supported",
                      "for Fortran order, reshape the transpose: reshape(a.T, shape[::-1]).T")
    target = _shape_arg(shape if shape is not None else newshape)
    aval = abstractify(a, 0, "reshape")
    if target.count(-1) > 1:
        raise shape_error(f"reshape: can only specify one unknown dimension, got {list(target)}")
    if -1 in target:
        known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
        if known == 0 or aval.size % known:
            raise shape_error(f"cannot reshape array of shape {list(aval.shape)} "
                              f"(size {aval.size}) into shape {list(target)}")
        target = tuple(aval.size // known if d == -1 else d for d in target)
    return sp.reshape(a, new_sizes=target)


def broadcast_to(array: Any, shape: Any) -> Any:
    return sp.broadcast_to(array, shape=_shape_arg(shape))


def transpose(a: Any, axes: Optional[Sequence[int]] = None) -> Any:
    aval = abstractify(a, 0, "transpose")
    perm = tuple(reversed(range(aval.ndim))) if axes is None else \
        tuple(normalize_axis(builtins.int(x), aval.ndim, "transpose") for x in axes)
    return sp.transpose(a, permutation=perm)


def ravel(a: Any, order: str = "C") -> Any:
    """Flatten to 1-d (row-major)."""
    return reshape(a, (-1,), order=order)


# --- adding and removing axes ------------------------------------------------------------

def expand_dims(a: Any, axis: Any) -> Any:
    """Insert size-1 axes at `axis` (an int or a tuple, positions in the result)."""
    aval = abstractify(a, 0, "expand_dims")
    axes = (axis,) if isinstance(axis, (builtins.int, np.integer)) else tuple(axis)
    out_ndim = aval.ndim + len(axes)
    positions = normalize_axes(axes, out_ndim, "expand_dims")
    dims = iter(aval.shape)
    shape = tuple(1 if d in positions else next(dims) for d in range(out_ndim))
    return sp.reshape(a, new_sizes=shape)


def squeeze(a: Any, axis: Any = None) -> Any:
    """Remove size-1 axes; an explicit axis whose size is not 1 is an error."""
    aval = abstractify(a, 0, "squeeze")
    if axis is None:
        axes = tuple(d for d, n in enumerate(aval.shape) if n == 1)
    else:
        axes = normalize_axes(axis, aval.ndim, "squeeze")
        for d in axes:
            if aval.shape[d] != 1:
                raise shape_error(f"squeeze: cannot squeeze axis {d} of an array of shape "
                                  f"{list(aval.shape)}: it has size {aval.shape[d]}, not 1")
    shape = tuple(n for d, n in enumerate(aval.shape) if d not in axes)
    return sp.reshape(a, new_sizes=shape)


def _atleast(arys: tuple, ndim: int) -> Any:
    out = []
    for a in arys:
        x = _as_array(a)
        if x.ndim < ndim:
            x = sp.reshape(x, new_sizes=_atleast_shape(x.shape, ndim))
        out.append(x)
    return out[0] if len(out) == 1 else out


def _atleast_shape(shape: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    if not shape:
        return (1,) * ndim
    if ndim == 3:  # NumPy: (N,) -> (1, N, 1) and (M, N) -> (M, N, 1)
        return (1, shape[0], 1) if len(shape) == 1 else (*shape, 1)
    return (1,) * (ndim - len(shape)) + shape


def atleast_1d(*arys: Any) -> Any:
    return _atleast(arys, 1)


def atleast_2d(*arys: Any) -> Any:
    return _atleast(arys, 2)


def atleast_3d(*arys: Any) -> Any:
    """0-d -> (1, 1, 1), (N,) -> (1, N, 1), (M, N) -> (M, N, 1), as in NumPy."""
    return _atleast(arys, 3)


def broadcast_arrays(*args: Any) -> list:
    shape = broadcast_shapes_of("broadcast_arrays",
                             *[abstractify(a, i, "broadcast_arrays").shape
                               for i, a in enumerate(args)])
    return [sp.broadcast_to(a, shape=shape) for a in args]


# --- reordering axes and elements --------------------------------------------------------

def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    """The shape that arrays of `shapes` broadcast to (NumPy's rule)."""
    return broadcast_shapes_of("broadcast_shapes", *(
        (builtins.int(s),) if isinstance(s, (builtins.int, np.integer)) else
        tuple(builtins.int(d) for d in s) for s in shapes))


def moveaxis(a: Any, source: Any, destination: Any) -> Any:
    aval = abstractify(a, 0, "moveaxis")
    src = _axes_list(source, aval.ndim, "moveaxis")
    dst = _axes_list(destination, aval.ndim, "moveaxis")
    if len(src) != len(dst):
        raise shape_error(f"moveaxis: source {source} and destination {destination} must "
                          "have the same number of elements")
    order = [d for d in range(aval.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    if order == list(range(aval.ndim)):
        # No move: the operand itself, as JAX gives. (A copy under jit also made two equal
        # Jacobi loops of `norm(a, 2) + cond(a)`, which IREE 3.13 merged wrongly.)
        return asarray(a)
    return sp.transpose(a, permutation=tuple(order))


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    aval = abstractify(a, 0, "swapaxes")
    perm = list(range(aval.ndim))
    i, j = (normalize_axis(builtins.int(x), aval.ndim, "swapaxes") for x in (axis1, axis2))
    perm[i], perm[j] = perm[j], perm[i]
    return sp.transpose(a, permutation=tuple(perm))


def flip(m: Any, axis: Any = None) -> Any:
    aval = abstractify(m, 0, "flip")
    return sp.rev(m, dimensions=normalize_axes(axis, aval.ndim, "flip"))


def fliplr(m: Any) -> Any:
    if abstractify(m, 0, "fliplr").ndim < 2:
        raise shape_error("fliplr: the input must be at least 2-d")
    return flip(m, 1)


def flipud(m: Any) -> Any:
    if abstractify(m, 0, "flipud").ndim < 1:
        raise shape_error("flipud: the input must be at least 1-d")
    return flip(m, 0)


def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    """Roll elements along `axis` by a static `shift` (int or tuple, paired with axes)."""
    shifts = _static_ints(shift, "roll", "shift")
    shape = abstractify(a, 0, "roll").shape
    out = a
    if axis is None:  # roll the flattened array (not a call of roll: AD reads this source)
        out, shifts, axis = ravel(a), (builtins.sum(shifts),), 0
    aval = abstractify(out, 0, "roll")
    axes = (axis,) if isinstance(axis, (builtins.int, np.integer)) else tuple(axis)
    pairs = list(np.broadcast(np.asarray(shifts), np.asarray(axes)))
    for s, ax in pairs:
        ax = normalize_axis(builtins.int(ax), aval.ndim, "roll")
        n = aval.shape[ax]
        s = builtins.int(s) % n if n else 0
        if s:
            out = sp.concatenate(_slice_axis(out, ax, n - s, n), _slice_axis(out, ax, 0, n - s),
                                 axis=ax)
    return reshape(out, shape)


def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    """Rotate by 90 degrees `k` times in the plane of `axes` (from the first towards the second)."""
    aval = abstractify(m, 0, "rot90")
    if len(axes) != 2:
        raise ValueError("rot90: len(axes) must be 2")
    ax0, ax1 = (normalize_axis(builtins.int(x), aval.ndim, "rot90") for x in axes)
    if ax0 == ax1:
        raise shape_error(f"rot90: axes {tuple(axes)} must be different")
    k = builtins.int(k) % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, ax0), ax1)
    if k == 1:
        return swapaxes(flip(m, ax1), ax0, ax1)
    return flip(swapaxes(m, ax0, ax1), ax1)
