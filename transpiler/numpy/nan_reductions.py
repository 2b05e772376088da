"""NaN-ignoring reductions: nansum, nanprod, nanmean, nanmax, nanmin, nanvar, nanstd,
nanargmax, nanargmin, nancumsum, nancumprod. NaNs are replaced by the reduction's neutral value first."""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import dtypes
from transpiler.numpy.reductions import (
    _axes, _canonical, _cast, _no_out, all, argmax, argmin, cumprod, cumsum, max, mean, min, prod,
    sum, var)
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import reductions as red
from transpiler.primitives.core import abstractify

__all__ = ["nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmin",
           "nanprod", "nanstd", "nansum", "nanvar"]


# --- NaN-ignoring variants ---------------------------------------------------------------

def _without_nan(a: Any, fill: Any) -> Any:
    dtype = abstractify(a).dtype
    if not dtypes.is_float(dtype):
        return a
    return conv.select(ew.isnan(a), conv.convert_element_type(np.asarray(fill, dtype),
                                                              dtype=dtype), a)


def nansum(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
           keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    return sum(_without_nan(a, 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    return prod(_without_nan(a, 1), axis, dtype, out, keepdims, initial, where)


def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, *, where: Any = None) -> Any:
    """Mean of the non-NaN elements (NaN where there are none)."""
    aval = abstractify(a, 0, "nanmean")
    if not dtypes.is_float(aval.dtype):
        return mean(a, axis, dtype, out, keepdims, where=where)
    valid = ew.logical_not(ew.isnan(a))
    if where is not None:
        valid = ew.logical_and(valid, _cast(where, dtypes.bool_))
    return mean(a, axis, dtype, out, keepdims, where=valid)


def _nan_extreme(kind: str, fn: str, a: Any, axis: Any, keepdims: bool, initial: Any,
                 where: Any) -> Any:
    aval = abstractify(a, 0, fn)
    reducer = max if kind == "max" else min
    if not dtypes.is_float(aval.dtype):
        return reducer(a, axis, None, keepdims, initial, where)
    filled = _without_nan(a, red.identity(kind, aval.dtype))
    out = reducer(filled, axis, None, keepdims, initial, where)
    all_nan = all(ew.isnan(a), axis=axis, keepdims=keepdims)
    return conv.select(all_nan, conv.convert_element_type(np.asarray(np.nan, aval.dtype),
                                                          dtype=aval.dtype), out)


def nanmax(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    """Maximum ignoring NaNs (NaN where a slice is all NaN)."""
    _no_out(out, "nanmax")
    return _nan_extreme("max", "nanmax", a, axis, keepdims, initial, where)


def nanmin(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    """Minimum ignoring NaNs (NaN where a slice is all NaN)."""
    _no_out(out, "nanmin")
    return _nan_extreme("min", "nanmin", a, axis, keepdims, initial, where)


def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False) -> Any:
    """Variance of the non-NaN elements."""
    _no_out(out, "nanvar")
    aval = abstractify(a, 0, "nanvar")
    if not dtypes.is_float(aval.dtype):
        return var(a, axis, dtype, None, ddof, keepdims)
    axes = _axes(axis, aval.ndim, "nanvar")
    target = _canonical(dtype) or aval.dtype
    work = ew.compute_dtype(target)
    x = _cast(a, work)
    valid = ew.logical_not(ew.isnan(x))
    centered = _without_nan(ew.subtract(x, nanmean(x, axis=axes, keepdims=True)), 0)
    squares = sum(ew.multiply(centered, centered), axis=axes, keepdims=keepdims)
    count = sum(valid, axis=axes, dtype=work, keepdims=keepdims)
    return _cast(ew.true_divide(squares, ew.maximum(ew.subtract(count, float(ddof)), 0.0)),
                 target)


def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False) -> Any:
    return ew.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims))


def _nan_arg(kind: str, fn: str, a: Any, axis: Any, keepdims: bool) -> Any:
    x = a
    if dtypes.is_float(abstractify(a, 0, fn).dtype):  # a NaN becomes the worst value
        x = _without_nan(a, -np.inf if kind == "max" else np.inf)
    return (argmax if kind == "max" else argmin)(x, axis=axis, keepdims=keepdims)


def nanargmax(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    """argmax ignoring NaNs (an all-NaN slice gives 0; NumPy raises there)."""
    _no_out(out, "nanargmax")
    return _nan_arg("max", "nanargmax", a, axis, keepdims)


def nanargmin(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    """argmin ignoring NaNs (an all-NaN slice gives 0; NumPy raises there)."""
    _no_out(out, "nanargmin")
    return _nan_arg("min", "nanargmin", a, axis, keepdims)


def nancumsum(a: Any, axis: Any = None, dtype: Any = None, out: None = None) -> Any:
    """The cumulative sum along `axis` (None: flattened), NaNs counting as 0."""
    return cumsum(_without_nan(a, 0), axis, dtype, out)


def nancumprod(a: Any, axis: Any = None, dtype: Any = None, out: None = None) -> Any:
    """The cumulative product along `axis` (None: flattened), NaNs counting as 1."""
    return cumprod(_without_nan(a, 1), axis, dtype, out)
