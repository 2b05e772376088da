"""Differences, derivatives and interpolation along an axis: diff, ediff1d, gradient,
cross, interp and unwrap, with JAX's formulas (so values and gradients agree with it).

All are slices and elementwise arithmetic over static shapes, so they run eagerly, stage
under ``jit``, batch under ``vmap`` and differentiate.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any, Optional

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import asarray, zeros_like
from transpiler.numpy.elementwise_functions import _promote_inexact
from transpiler.numpy.indexing_functions import take
from transpiler.numpy.joining import concatenate, stack
from transpiler.numpy.math import abs, clip, not_equal, remainder, subtract, where
from transpiler.numpy.reductions import cumsum
from transpiler.numpy.shape import _slice_axis, broadcast_to, moveaxis, ravel, reshape
from transpiler.numpy.sorting import argsort, searchsorted
from transpiler.primitives import core
from transpiler.primitives.core import abstractify, normalize_axis

__all__ = ["cross", "diff", "ediff1d", "gradient", "interp", "unwrap"]


def _static_int(value: Any, what: str) -> int:
    if isinstance(value, core.Tracer):
        raise core.shape_error(f"{what} must be static, got a traced value")
    return operator.index(value)


def _slice(x: Any, axis: int, start: Optional[int], stop: Optional[int]) -> Any:
    """``x[..., start:stop, ...]`` on `axis`, negative bounds counting from the end."""
    n = abstractify(x).shape[axis]
    start, stop, _ = builtins.slice(start, stop).indices(n)
    return _slice_axis(x, axis, start, builtins.max(start, stop))


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """The `n`-th discrete difference along `axis` (``a[1:] - a[:-1]``, repeated; for
    booleans, ``!=``), after joining `prepend` and `append` to `a`."""
    arr = asarray(a)
    n = _static_int(n, "diff: 'n'")
    axis = _static_int(axis, "diff: 'axis'")
    if n == 0:
        return arr
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if arr.ndim == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    axis = normalize_axis(axis, arr.ndim, "diff")
    edge = list(arr.shape)
    edge[axis] = 1
    combined = []
    if prepend is not None:
        prepend = asarray(prepend)
        combined.append(broadcast_to(prepend, tuple(edge)) if prepend.ndim == 0 else prepend)
    combined.append(arr)
    if append is not None:
        append = asarray(append)
        combined.append(broadcast_to(append, tuple(edge)) if append.ndim == 0 else append)
    if len(combined) > 1:
        arr = concatenate(combined, axis)
    boolean = arr.dtype == dtypes.bool_
    for _ in range(n):
        upper, lower = _slice(arr, axis, 1, None), _slice(arr, axis, None, -1)
        arr = not_equal(upper, lower) if boolean else subtract(upper, lower)
    return arr


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """The differences of the flattened `ary`, with `to_begin` and `to_end` (cast to its
    dtype) joined at the ends."""
    arr = ravel(asarray(ary))
    result = subtract(_slice(arr, 0, 1, None), _slice(arr, 0, None, -1))
    if to_begin is not None:
        result = concatenate((ravel(asarray(to_begin, dtype=arr.dtype)), result))
    if to_end is not None:
        result = concatenate((result, ravel(asarray(to_end, dtype=arr.dtype))))
    return result


def _gradient_along(a: Any, h: Any, axis: int) -> Any:
    """Central differences inside, one-sided ones at the two edges (first order)."""
    upper_edge = _slice(a, axis, 1, 2) - _slice(a, axis, 0, 1)
    lower_edge = _slice(a, axis, -1, None) - _slice(a, axis, -2, -1)
    h_ndim = abstractify(h).ndim
    if h_ndim == 0:
        inner = (_slice(a, axis, 2, None) - _slice(a, axis, None, -2)) * 0.5 / h
        return concatenate((upper_edge / h, inner, lower_edge / h), axis=axis)
    if h_ndim != 1:
        raise ValueError("Spacing arrays must be 1D arrays or scalars.")
    n = abstractify(a).shape[axis]
    if abstractify(h).shape[0] != n:
        raise ValueError("Spacing arrays must have the same length as the dimension along "
                         "which the gradient is calculated.")
    h_shape = [1] * abstractify(a).ndim
    h_shape[axis] = n
    h = reshape(h, tuple(h_shape))
    upper_edge = upper_edge / (_slice(h, axis, 1, 2) - _slice(h, axis, 0, 1))
    lower_edge = lower_edge / (_slice(h, axis, -1, None) - _slice(h, axis, -2, -1))
    dx1 = _slice(h, axis, 1, -1) - _slice(h, axis, 0, -2)
    dx2 = _slice(h, axis, 2, None) - _slice(h, axis, 1, -1)
    c0 = -dx2 / (dx1 * (dx1 + dx2))
    c1 = (dx2 - dx1) / (dx1 * dx2)
    c2 = dx1 / (dx2 * (dx1 + dx2))
    inner = c0 * _slice(a, axis, 0, -2) + c1 * _slice(a, axis, 1, -1) + \
        c2 * _slice(a, axis, 2, None)
    return concatenate((upper_edge, inner, lower_edge), axis=axis)


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: Optional[int] = None) -> Any:
    """The gradient of sampled `f` along each axis (central differences inside, first
    order at the edges); `varargs` are scalar spacings or 1-d coordinates, one for all
    axes or one per axis. One axis gives an array, several a list."""
    if edge_order is not None:
        raise located(NotImplementedError, "The 'edge_order' argument to jnp.gradient is not "
                      "supported.", "leave edge_order unset (first-order differences at the "
                      "edges)")
    a, *spacing = _promote_inexact(f, *varargs)
    ndim = abstractify(a, 0, "gradient").ndim
    if axis is None:
        axes = tuple(range(ndim))
    elif isinstance(axis, (builtins.int, np.integer)):
        axes = (normalize_axis(builtins.int(axis), ndim, "gradient"),)
    else:
        axes = tuple(normalize_axis(builtins.int(ax), ndim, "gradient") for ax in axis)
    if not axes:
        return []
    shape = abstractify(a).shape
    if builtins.min(shape[ax] for ax in axes) < 2:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                         "least (edge_order + 1) elements are required.")
    if not spacing:
        dx: list = [1.0] * len(axes)
    elif len(spacing) == 1:
        dx = list(spacing) * len(axes)
    elif len(spacing) == len(axes):
        dx = list(spacing)
    else:
        raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for axis={axis}")
    grads = []
    for ax, h in zip(axes, dx):
        grads.append(_gradient_along(a, h, ax))
    return grads[0] if len(axes) == 1 else grads


def _component(v: Any, i: int) -> Any:
    """``v[..., i]``."""
    shape = abstractify(v).shape
    return reshape(_slice_axis(v, len(shape) - 1, i, i + 1), shape[:-1])


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: Optional[int] = None) -> Any:
    """The cross product of 3-vectors (or 2-vectors, taken with a zero third component;
    two 2-vectors give the scalar z component) along the given axes."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a = moveaxis(asarray(a), axisa, -1)
    b = moveaxis(asarray(b), axisb, -1)
    na, nb = abstractify(a).shape[-1], abstractify(b).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    if na == 2 and nb == 2:
        return _component(a, 0) * _component(b, 1) - _component(a, 1) * _component(b, 0)
    a0, a1, b0, b1 = _component(a, 0), _component(a, 1), _component(b, 0), _component(b, 1)
    a2 = _component(a, 2) if na == 3 else zeros_like(a0)
    b2 = _component(b, 2) if nb == 3 else zeros_like(b0)
    c = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])
    return moveaxis(c, 0, axisc)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
    """Piecewise-linear interpolation of the points ``(xp, fp)`` (`xp` increasing) at `x`;
    `left`/`right` (default: the end values, or "extrapolate") outside, or `period`ic."""
    x_arr, xp_arr = _promote_inexact(x, xp)
    fp_arr = _promote_inexact(fp)[0]
    extrapolate = []
    for name, value in (("left", left), ("right", right)):
        if isinstance(value, str) and value != "extrapolate":
            raise ValueError(f"the only valid string value of `{name}` is 'extrapolate', "
                             f"got: {name}={value!r}")
        extrapolate.append(isinstance(value, str))
    if dtypes.is_complex(abstractify(x_arr).dtype):
        raise ValueError("jnp.interp: complex x values not supported.")
    if abstractify(xp_arr).ndim != 1 or abstractify(fp_arr).ndim != 1:
        raise ValueError("xp and fp must be one-dimensional arrays")
    if abstractify(xp_arr).shape != abstractify(fp_arr).shape:
        raise ValueError("xp and fp must have the same length")
    if period is not None:
        if np.ndim(period) != 0:
            raise ValueError(f"period must be a scalar; got {period}")
        period = abs(period)
        x_arr = remainder(x_arr, period)
        xp_arr = remainder(xp_arr, period)
        order = argsort(xp_arr)
        xp_arr, fp_arr = take(xp_arr, order), take(fp_arr, order)
        xp_arr = concatenate([_slice(xp_arr, 0, -1, None) - period, xp_arr,
                              _slice(xp_arr, 0, None, 1) + period])
        fp_arr = concatenate([_slice(fp_arr, 0, -1, None), fp_arr, _slice(fp_arr, 0, None, 1)])
    n = abstractify(xp_arr).shape[0]
    i = clip(searchsorted(xp_arr, x_arr, side="right"), 1, n - 1)
    f_lo, f_hi = take(fp_arr, i - 1), take(fp_arr, i)
    x_lo, x_hi = take(xp_arr, i - 1), take(xp_arr, i)
    df = f_hi - f_lo
    dx = x_hi - x_lo
    delta = x_arr - x_lo
    epsilon = float(np.spacing(dtypes.finfo(abstractify(xp_arr).dtype).eps))
    dx0 = abs(dx) <= epsilon  # no NaN gradients where the points coincide
    f = where(dx0, f_lo, f_lo + (delta / where(dx0, 1, dx)) * df)
    if not extrapolate[0] and period is None:
        first = _component(_slice(fp_arr, 0, None, 1), 0)
        f = where(x_arr < _component(_slice(xp_arr, 0, None, 1), 0),
                  first if left is None else left, f)
    if not extrapolate[1] and period is None:
        last = _component(_slice(fp_arr, 0, -1, None), 0)
        f = where(x_arr > _component(_slice(xp_arr, 0, -1, None), 0),
                  last if right is None else right, f)
    return f


def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Any:
    """`p` with jumps larger than `discont` (default ``period / 2``) between neighbours
    along `axis` replaced by their complement modulo `period`."""
    p = asarray(p)
    if dtypes.is_complex(p.dtype):
        raise ValueError("jnp.unwrap does not support complex inputs.")
    axis = normalize_axis(builtins.int(axis), p.ndim, "unwrap")
    if p.shape[axis] == 0:
        return _promote_inexact(p)[0]
    if discont is None:
        discont = period / 2
    interval = period / 2
    dd = diff(p, axis=axis)
    ddmod = remainder(dd + interval, period) - interval
    ddmod = where((ddmod == -interval) & (dd > 0), interval, ddmod)
    correction = where(abs(dd) < discont, 0, ddmod - dd)
    return concatenate((_slice(p, axis, 0, 1), _slice(p, axis, 1, None) +
                        cumsum(correction, axis=axis)), axis=axis)

