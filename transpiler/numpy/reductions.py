"""Reductions with NumPy's signatures and JAX's dtype rules: sum, mean, max, argmax, var,
trapezoid ...

Every function works the same on eager arrays and on Tracers: axes, keepdims and dtypes are
static Python; values only flow through the primitives in `transpiler.primitives.reductions`.

Dtype rules (JAX's): sums and products of bools and narrow integers accumulate in the
default integer (``int8 -> int32``, ``uint8 -> uint32``, ``bool -> int32``); means and
variances of integers are floats; half-precision inputs are computed in float32 and the
result is cast back; argmax/argmin return the default integer.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, Optional

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import asarray
from transpiler.numpy.shape import expand_dims, moveaxis
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import reductions as red
from transpiler.primitives import shape as sp
from transpiler.primitives.core import (abstractify, dtype_error, normalize_axes, normalize_axis,
                                        shape_error)

__all__ = ["all", "amax", "amin", "any", "argmax", "argmin", "average", "count_nonzero",
           "cumprod", "cumsum", "cumulative_prod", "cumulative_sum", "max", "mean", "min",
           "prod", "product", "ptp", "std", "sum", "trapezoid", "var"]

_REDUCE = {"sum": red.reduce_sum, "prod": red.reduce_prod, "max": red.reduce_max,
           "min": red.reduce_min, "and": red.reduce_and, "or": red.reduce_or}
_COMBINE = {"sum": ew.add, "prod": ew.multiply, "max": ew.maximum, "min": ew.minimum,
            "and": ew.logical_and, "or": ew.logical_or}


# --- helpers ----------------------------------------------------------------------------

def _cast(x: Any, dtype: np.dtype) -> Any:
    aval = abstractify(x)
    if aval.dtype == dtype and not aval.weak_type:  # JAX's reductions drop weak types
        return x
    return conv.convert_element_type(x, dtype=dtype)


def _canonical(dtype: Any) -> Optional[np.dtype]:
    if dtype is None:
        return None
    return dtypes.check_supported(dtypes.canonicalize(dtype), "dtype")


def _accumulating_dtype(dtype: np.dtype) -> np.dtype:
    """JAX's sum/prod dtype: bools and narrow ints widen to the default (unsigned) int."""
    narrow = dtype.itemsize < dtypes.default_int().itemsize
    if dtype == dtypes.bool_ or (dtype.kind == "i" and narrow):
        return dtypes.default_int()
    if dtype.kind == "u" and dtype.itemsize < dtypes.default_int().itemsize:
        return dtypes.canonicalize(np.uint64)
    return dtype


def _float_dtype(dtype: np.dtype) -> np.dtype:
    return dtype if dtypes.is_inexact(dtype) else dtypes.default_float()


def _axes(axis: Any, ndim: int, fn: str) -> tuple[int, ...]:
    """Normalized axes; a 0-d array accepts axis 0 or -1 and reduces nothing."""
    axes = normalize_axes(axis, ndim, fn)
    return axes if ndim else ()


def _kept_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _keep(out: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> Any:
    return sp.reshape(out, new_sizes=_kept_shape(shape, axes)) if keepdims else out


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


def _reduce(kind: str, a: Any, axis: Any, dtype: Optional[np.dtype], keepdims: bool,
            initial: Any, where: Any, fn: str) -> Any:
    """The shared body of sum/prod/max/min/any/all."""
    aval = abstractify(a, 0, fn)
    axes = _axes(axis, aval.ndim, fn)
    target = dtype or aval.dtype
    x = _cast(a, target)
    if where is not None:
        if initial is None and kind in ("max", "min"):
            raise ValueError(f"{fn}: reduction operation {kind}imum does not have an identity, "
                             "so to use a where mask one has to specify 'initial'")
        fill = red.identity(kind, target)
        x = conv.select(_cast(where, dtypes.bool_), x, conv.convert_element_type(
            np.asarray(fill, target), dtype=target))
    empty = builtins.any(aval.shape[i] == 0 for i in axes)
    if initial is None and kind in ("max", "min") and empty:
        raise ValueError(f"{fn}: zero-size array to reduction operation {kind}imum which has "
                         "no identity; pass initial=...")
    if initial is not None and kind in ("max", "min") and empty:
        out_shape = tuple(d for i, d in enumerate(aval.shape) if i not in axes)
        out = sp.broadcast_to(_cast(np.asarray(initial), target), shape=out_shape)
    else:
        out = _REDUCE[kind](x, axes=axes)
        if initial is not None:
            out = _cast(_COMBINE[kind](out, _cast(np.asarray(initial), target)), target)
    return _keep(out, aval.shape, axes, keepdims)


# --- sum, prod, max, min, any, all ----------------------------------------------------------

def sum(a: Any, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False,
        initial: Any = None, where: Any = None) -> Any:
    """Sum over `axis` (None: all); bools and narrow ints accumulate in the default int."""
    _no_out(out, "sum")
    target = _canonical(dtype) or _accumulating_dtype(abstractify(a, 0, "sum").dtype)
    return _reduce("sum", a, axis, target, keepdims, initial, where, "sum")


def prod(a: Any, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False,
         initial: Any = None, where: Any = None) -> Any:
    """Product over `axis`, with the dtype rules of `sum`."""
    _no_out(out, "prod")
    target = _canonical(dtype) or _accumulating_dtype(abstractify(a, 0, "prod").dtype)
    return _reduce("prod", a, axis, target, keepdims, initial, where, "prod")


product = prod


def max(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
        initial: Any = None, where: Any = None) -> Any:
    """Maximum over `axis`; NaN propagates. An empty axis needs `initial`."""
    _no_out(out, "max")
    return _reduce("max", a, axis, None, keepdims, initial, where, "max")


def min(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
        initial: Any = None, where: Any = None) -> Any:
    """Minimum over `axis`; NaN propagates. An empty axis needs `initial`."""
    _no_out(out, "min")
    return _reduce("min", a, axis, None, keepdims, initial, where, "min")


amax, amin = max, min


def any(a: Any, axis: Any = None, out: None = None, keepdims: bool = False, *,
        where: Any = None) -> Any:
    _no_out(out, "any")
    return _reduce("or", a, axis, dtypes.bool_, keepdims, None, where, "any")


def all(a: Any, axis: Any = None, out: None = None, keepdims: bool = False, *,
        where: Any = None) -> Any:
    _no_out(out, "all")
    return _reduce("and", a, axis, dtypes.bool_, keepdims, None, where, "all")


def _no_out(out: Any, fn: str) -> None:
    if out is not None:
        raise located(NotImplementedError, f"{fn}: arrays are immutable, so out= is not "
                      "supported; use the returned value")


# --- mean, var, std, average ------------------------------------------------------------

def mean(a: Any, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False,
         *, where: Any = None) -> Any:
    """Arithmetic mean; integers and bools give the default float."""
    _no_out(out, "mean")
    aval = abstractify(a, 0, "mean")
    axes = _axes(axis, aval.ndim, "mean")
    target = _canonical(dtype) or _float_dtype(aval.dtype)
    work = ew.compute_dtype(_float_dtype(target))
    total = sum(_cast(a, work), axis=axes, dtype=work, keepdims=keepdims, where=where)
    if where is None:
        count: Any = float(_count(aval.shape, axes))
    else:
        mask = sp.broadcast_to(_cast(where, dtypes.bool_), shape=aval.shape)
        count = sum(mask, axis=axes, dtype=work, keepdims=keepdims)
    return _cast(ew.true_divide(total, count), target)


def var(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, correction: Any = None) -> Any:
    """Variance ``mean(|a - mean(a)|**2) * n / (n - ddof)``; ints give the default float,
    complex numbers their real dtype."""
    _no_out(out, "var")
    if where is not None:
        raise located(NotImplementedError, "var: where= is not supported yet",
                      "select the elements first, or compute it with jnp.mean(..., where=...)")
    if correction is not None:
        ddof = correction
    aval = abstractify(a, 0, "var")
    axes = _axes(axis, aval.ndim, "var")
    target = _canonical(dtype) or _float_dtype(aval.dtype)
    work = ew.compute_dtype(_float_dtype(target))
    x = _cast(a, work)
    centered = ew.subtract(x, mean(x, axis=axes, keepdims=True))
    if dtypes.is_complex(work):
        target = dtypes.real_dtype(target)
        squares = ew.real(ew.multiply(centered, ew.conj(centered)))
    else:
        squares = ew.multiply(centered, centered)
    squares = sum(squares, axis=axes, keepdims=keepdims)
    divisor = builtins.max(_count(aval.shape, axes) - ddof, 0)
    return _cast(ew.true_divide(squares, float(divisor)), target)


def std(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, correction: Any = None) -> Any:
    """Standard deviation: the square root of `var`."""
    v = var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, where=where,
            correction=correction)
    return ew.sqrt(v)


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False,
            keepdims: bool = False) -> Any:
    """Weighted mean; 1-d `weights` apply along a single `axis`."""
    aval = abstractify(a, 0, "average")
    if weights is None:
        avg = mean(a, axis=axis, keepdims=keepdims)
        if not returned:
            return avg
        axes = _axes(axis, aval.ndim, "average")
        count = conv.convert_element_type(np.asarray(_count(aval.shape, axes)),
                                          dtype=abstractify(avg).dtype)
        return avg, sp.broadcast_to(count, shape=abstractify(avg).shape)
    w_aval = abstractify(weights, 1, "average")
    axes = _axes(axis, aval.ndim, "average")
    w = weights
    if w_aval.shape != aval.shape:
        if w_aval.ndim != 1 or len(axes) != 1 or w_aval.shape[0] != aval.shape[axes[0]]:
            raise shape_error(f"average: weights of shape {list(w_aval.shape)} do not fit an "
                              f"array of shape {list(aval.shape)} with axis={axis}",
                              "pass weights of the array's shape, or 1-d weights with one axis")
        view = [1] * aval.ndim
        view[axes[0]] = w_aval.shape[0]
        w = sp.reshape(weights, new_sizes=tuple(view))
    dtype, _ = dtypes.promote((_float_dtype(aval.dtype), False), (w_aval.dtype, False))
    dtype = _float_dtype(dtype)
    w = sp.broadcast_to(_cast(w, dtype), shape=aval.shape)
    scale = sum(w, axis=axes, keepdims=keepdims)
    avg = ew.true_divide(sum(ew.multiply(_cast(a, dtype), w), axis=axes, keepdims=keepdims),
                         scale)
    return (avg, scale) if returned else avg


# --- argmax, argmin, ptp, count_nonzero ------------------------------------------------

def _arg(prim: Any, fn: str, a: Any, axis: Any, keepdims: bool) -> Any:
    aval = abstractify(a, 0, fn)
    if axis is None:
        if aval.size == 0:
            raise ValueError(f"{fn}: attempt to get {fn} of an empty sequence")
        flat = sp.reshape(a, new_sizes=(aval.size,))
        out = prim(flat, axis=0, index_dtype=dtypes.default_int())
        return sp.reshape(out, new_sizes=(1,) * aval.ndim) if keepdims else out
    ax = normalize_axis(int(axis), aval.ndim, fn)
    if aval.ndim == 0:
        return conv.convert_element_type(np.asarray(0), dtype=dtypes.default_int())
    if aval.shape[ax] == 0:
        raise ValueError(f"{fn}: attempt to get {fn} of an empty sequence")
    out = prim(a, axis=ax, index_dtype=dtypes.default_int())
    return _keep(out, aval.shape, (ax,), keepdims)


def argmax(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    """Index of the maximum (the first one on ties; the first NaN if there is one)."""
    _no_out(out, "argmax")
    return _arg(red.argmax, "argmax", a, axis, keepdims)


def argmin(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    """Index of the minimum (the first one on ties; the first NaN if there is one)."""
    _no_out(out, "argmin")
    return _arg(red.argmin, "argmin", a, axis, keepdims)


def ptp(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    """Peak to peak: ``max - min`` along `axis`."""
    _no_out(out, "ptp")
    if abstractify(a, 0, "ptp").dtype == dtypes.bool_:
        raise dtype_error("ptp does not accept boolean arrays (max - min is a subtraction)",
                          "convert with .astype(int) first")
    return ew.subtract(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


def count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The number of non-zero elements, as the default int."""
    return sum(_cast(a, dtypes.bool_), axis=axis, dtype=dtypes.default_int(), keepdims=keepdims)


# --- cumulative -------------------------------------------------------------------------

def _cumulative(prim: Any, fn: str, a: Any, axis: Any, dtype: Any, reverse: bool = False) -> Any:
    aval = abstractify(a, 0, fn)
    # Unlike sum, JAX's cumsum keeps narrow ints (int8 -> int8); only bool widens.
    target = _canonical(dtype) or (dtypes.default_int() if aval.dtype == dtypes.bool_
                                   else aval.dtype)
    x = _cast(a, target)
    if axis is None or aval.ndim == 0:
        if axis is not None:
            normalize_axis(int(axis), aval.ndim, fn)
        x = sp.reshape(x, new_sizes=(aval.size,))
        ax = 0
    else:
        ax = normalize_axis(int(axis), aval.ndim, fn)
    return prim(x, axis=ax, reverse=reverse)


def cumsum(a: Any, axis: Any = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative sum (flattened when `axis` is None); bools accumulate in the default int."""
    _no_out(out, "cumsum")
    return _cumulative(red.cumsum, "cumsum", a, axis, dtype)


def cumprod(a: Any, axis: Any = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative product (flattened when `axis` is None); bools give the default int."""
    _no_out(out, "cumprod")
    return _cumulative(red.cumprod, "cumprod", a, axis, dtype)


def _array_api_cumulative(fn: Callable, name: str, x: Any, axis: Any, dtype: Any,
                          include_initial: bool) -> Any:
    if include_initial:
        raise located(NotImplementedError, f"{name}: include_initial=True is not supported yet",
                      "prepend the initial value (0 for a sum, 1 for a product) with "
                      "jnp.concatenate")
    if axis is None and abstractify(x, 0, name).ndim > 1:
        raise shape_error(f"{name}: axis must be given for arrays of rank > 1")
    return fn(x, axis=0 if axis is None else axis, dtype=dtype)


def cumulative_sum(x: Any, /, *, axis: Any = None, dtype: Any = None,
                   include_initial: bool = False) -> Any:
    """Array API ``cumulative_sum`` (``include_initial=False`` only)."""
    return _array_api_cumulative(cumsum, "cumulative_sum", x, axis, dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: Any = None, dtype: Any = None,
                    include_initial: bool = False) -> Any:
    """Array API ``cumulative_prod`` (``include_initial=False`` only)."""
    return _array_api_cumulative(cumprod, "cumulative_prod", x, axis, dtype, include_initial)


# --- integration ------------------------------------------------------------------------

def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """The integral of `y` along `axis` by the composite trapezoidal rule, at sample points
    `x` (1-d, or `y`'s shape) or spaced `dx` apart (JAX's: integers integrate as the
    default float, and a constant spacing sums `y` once and corrects its two ends)."""
    if x is None:
        y = asarray(_cast(y, _inexact_dtype("trapezoid", y)))
        spacing = asarray(dx)
        if spacing.ndim > 0:
            leading = tuple(range(y.ndim - spacing.ndim))
            spacing = moveaxis(expand_dims(spacing, leading), axis, -1)
    else:
        dtype = _inexact_dtype("trapezoid", y, x)
        y, x = asarray(_cast(y, dtype)), asarray(_cast(x, dtype))
        x = x if x.ndim == 1 else moveaxis(x, axis, -1)
        spacing = x[..., 1:] - x[..., :-1]
    y = moveaxis(y, axis, -1)
    if spacing.ndim == 0 or spacing.shape[-1] == 1:
        step = spacing if spacing.ndim == 0 else spacing[..., 0]
        return step * (sum(y, axis=-1) - 0.5 * (y[..., 0] + y[..., -1]))
    return 0.5 * sum(spacing * (y[..., 1:] + y[..., :-1]), axis=-1)


def _inexact_dtype(fn: str, *args: Any) -> np.dtype:
    """The dtype `args` promote to, the default float for integers and bools."""
    avals = [abstractify(a, i, fn) for i, a in enumerate(args)]
    return _float_dtype(dtypes.promote(*[(a.dtype, a.weak_type) for a in avals])[0])
