"""Order statistics with NumPy's signatures and JAX's results: quantile, percentile, median
and their NaN-ignoring forms.

The reduced axes move last and merge into one, which is sorted (NaN last); each quantile
is read at ``q * (n - 1)`` by gathers (JAX's formulas, so results match it bit for bit):
``linear`` interpolates, ``lower``/``higher`` take a neighbour, ``midpoint`` averages the
two, ``nearest`` rounds half down, ``inverted_cdf`` takes the first element whose
cumulative weight reaches ``q``. Without ``nan``, any NaN makes its result NaN; the
``nan*`` forms count only the numbers. Gradients flow through the sort and the gathers.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import asarray
from transpiler.numpy.indexing_functions import take_along_axis
from transpiler.numpy.reductions import any as any_
from transpiler.numpy.reductions import cumsum, sum
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import shape as sp
from transpiler.primitives import sorting as sort_p
from transpiler.primitives.core import (abstractify, dtype_error, normalize_axes,
                                        promote_avals, shape_error)

__all__ = ["median", "nanmedian", "nanpercentile", "nanquantile", "percentile", "quantile"]

METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _inexact(dtype: np.dtype) -> np.dtype:
    """The dtype quantiles are computed in: `dtype` (the operands' promoted one), or the
    default float for integers. (Computed from avals, so the transforms see it static.)"""
    if dtype.kind == "c":
        raise dtype_error("quantile does not support complex input, as the operation is "
                          "poorly defined.")
    return dtype if dtypes.is_float(dtype) else dtypes.default_float()


def _merge_last(a: Any, axes: tuple[int, ...]) -> Any:
    """`a` with `axes` moved last and merged into one."""
    shape = abstractify(a).shape
    kept = [d for d in range(len(shape)) if d not in axes]
    a = sp.transpose(a, permutation=(*kept, *axes))
    n = int(np.prod([shape[d] for d in axes], dtype=np.int64))
    return sp.reshape(a, new_sizes=(*[shape[d] for d in kept], n))


def _gather_last(a: Any, index: Any, q_ndim: int) -> Any:
    """``a[..., index]`` per position: `a` is ``(*rest, n)``, `index` ``q_shape + rest``."""
    a = sp.reshape(a, new_sizes=(1,) * q_ndim + abstractify(a).shape)
    index = sp.reshape(index, new_sizes=(*abstractify(index).shape, 1))
    picked = take_along_axis(a, index, axis=-1)
    return sp.reshape(picked, new_sizes=abstractify(picked).shape[:-1])


def _expand_q(q: Any, rest_ndim: int) -> Any:
    return sp.reshape(q, new_sizes=(*abstractify(q).shape, *(1,) * rest_ndim))


def _quantile(a: Any, q: Any, axis: Any, method: str, keepdims: bool, squash_nans: bool,
              weights: Any = None, fn: str = "quantile") -> Any:
    if method not in METHODS:
        raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', "
                         "'nearest' or 'inverted_cdf'")
    a, q = asarray(a), asarray(q)
    avals = [abstractify(a), abstractify(q)]
    if weights is not None:
        avals.append(abstractify(asarray(weights)))
    dtype = _inexact(promote_avals(*avals)[0])
    a = conv.convert_element_type(a, dtype=dtype)
    q = conv.convert_element_type(q, dtype=dtype)
    shape = abstractify(a, 0, fn).shape
    q_shape = abstractify(q).shape
    if len(q_shape) > 1:
        raise shape_error(f"{fn}: q must be have rank <= 1, got shape {list(q_shape)}")
    axes = normalize_axes(axis, len(shape), fn)
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis")
    if weights is not None:
        if method != "inverted_cdf":
            raise located(NotImplementedError, f"{method} doesn't support weights. Only method "
                          "'inverted_cdf' supports weights.")
        weights = conv.convert_element_type(asarray(weights), dtype=dtype)
        if abstractify(weights).shape != shape:
            raise shape_error(f"{fn}: weights of shape {list(abstractify(weights).shape)} "
                              f"must have the shape of a, {list(shape)}")
    kept_shape = tuple(1 if d in axes else s for d, s in enumerate(shape))
    a = _merge_last(a, axes)
    n = abstractify(a).shape[-1]
    rest = abstractify(a).shape[:-1]
    last = len(rest)
    nan = conv.convert_element_type(np.asarray(np.nan, dtype), dtype=dtype)
    if not squash_nans:  # one NaN makes its whole slice NaN
        a = conv.select(any_(ew.isnan(a), axis=-1, keepdims=True), nan, a)
    else:
        a = conv.select(ew.isnan(a), nan, a)  # one NaN bit pattern: they sort last
    if weights is not None:
        w = _merge_last(weights, axes)
        perm = sort_p.sort_permutation(a, dimension=last, descending=False,
                                       index_dtype=dtypes.int32)
        a, w = take_along_axis(a, perm, axis=last), take_along_axis(w, perm, axis=last)
    else:
        a = sort_p.sort(a, dimension=last, descending=False)
        w = None
    if method == "inverted_cdf":
        result = _inverted_cdf(a, w, q, n, last, squash_nans, dtype)
    else:
        result = _interpolated(a, q, n, last, squash_nans, method, dtype)
    if keepdims:
        result = sp.reshape(result, new_sizes=(*q_shape, *kept_shape))
    return conv.convert_element_type(result, dtype=dtype)


def _interpolated(a: Any, q: Any, n: int, last: int, squash_nans: bool, method: str,
                  dtype: np.dtype) -> Any:
    q_ndim = abstractify(q).ndim
    one = conv.convert_element_type(np.asarray(1, dtype), dtype=dtype)
    if squash_nans:
        counts = sum(ew.logical_not(ew.isnan(a)), axis=-1, dtype=dtype)
        counts = sp.reshape(counts, new_sizes=(1,) * q_ndim + abstractify(counts).shape)
        position = ew.multiply(_expand_q(q, last), ew.subtract(counts, one))
        top = ew.subtract(counts, one)
    else:
        position = _expand_q(q, last)
        position = ew.multiply(position, conv.convert_element_type(np.asarray(n - 1, dtype),
                                                                   dtype=dtype))
        top = conv.convert_element_type(np.asarray(n - 1, dtype), dtype=dtype)
    low, high = ew.floor(position), ew.ceil(position)
    high_weight = ew.subtract(position, low)
    low_weight = ew.subtract(one, high_weight)
    zero = conv.convert_element_type(np.asarray(0, dtype), dtype=dtype)
    low = ew.maximum(zero, ew.minimum(low, top))
    high = ew.maximum(zero, ew.minimum(high, top))
    full = (*abstractify(q).shape, *abstractify(a).shape[:-1])
    # Positions are integers: stop_gradient says so to the transforms (no cotangent).
    low_index = sp.broadcast_to(conv.convert_element_type(conv.stop_gradient(low),
                                                          dtype=dtypes.int32), shape=full)
    high_index = sp.broadcast_to(conv.convert_element_type(conv.stop_gradient(high),
                                                           dtype=dtypes.int32), shape=full)
    low_value = _gather_last(a, low_index, q_ndim)
    high_value = _gather_last(a, high_index, q_ndim)
    if method == "linear":
        return ew.add(ew.multiply(low_value, low_weight), ew.multiply(high_value, high_weight))
    if method == "lower":
        return low_value
    if method == "higher":
        return high_value
    if method == "nearest":
        half = conv.convert_element_type(np.asarray(0.5, dtype), dtype=dtype)
        return conv.select(sp.broadcast_to(ew.less_equal(high_weight, half), shape=full),
                           low_value, high_value)
    half = conv.convert_element_type(np.asarray(0.5, dtype), dtype=dtype)
    return ew.multiply(ew.add(low_value, high_value), half)  # midpoint


def _inverted_cdf(a: Any, w: Optional[Any], q: Any, n: int, last: int, squash_nans: bool,
                  dtype: np.dtype) -> Any:
    """The first element whose cumulative weight reaches ``q`` times the total (JAX's)."""
    q_ndim = abstractify(q).ndim
    zero = conv.convert_element_type(np.asarray(0, dtype), dtype=dtype)
    nan_data = ew.isnan(a)
    if w is None:
        w = conv.convert_element_type(np.ones(abstractify(a).shape, dtype), dtype=dtype)
    bad_weights = ew.logical_or(ew.less(w, zero), ew.isnan(w))
    clean = conv.select(ew.logical_or(bad_weights, nan_data), zero, w)
    cum = cumsum(clean, axis=-1)
    total = sp.slice_(cum, start_indices=(0,) * last + (n - 1,),
                      limit_indices=abstractify(cum).shape, strides=None)
    target = ew.multiply(sp.reshape(q, new_sizes=(*abstractify(q).shape, *(1,) * (last + 1))),
                         sp.reshape(total, new_sizes=(1,) * q_ndim + abstractify(total).shape))
    cum_b = sp.reshape(cum, new_sizes=(1,) * q_ndim + abstractify(cum).shape)
    index = sum(ew.less(cum_b, target), axis=-1, dtype=dtypes.int32)
    if squash_nans:
        valid = sum(ew.logical_not(nan_data), axis=-1, dtype=dtypes.int32)
    else:
        valid = conv.convert_element_type(np.full(abstractify(a).shape[:-1], n, np.int32),
                                          dtype=dtypes.int32)
    limit = ew.subtract(sp.reshape(valid, new_sizes=(1,) * q_ndim + abstractify(valid).shape),
                        np.int32(1))
    index = ew.maximum(np.int32(0), ew.minimum(index, limit))
    result = _gather_last(a, index, q_ndim)
    any_bad = any_(bad_weights, axis=-1)
    if squash_nans:
        force_nan = ew.logical_or(any_bad, ew.equal(valid, np.int32(0)))
    else:
        force_nan = ew.logical_or(any_bad, any_(nan_data, axis=-1))
    force_nan = sp.broadcast_to(sp.reshape(force_nan, new_sizes=(1,) * q_ndim + abstractify(
        force_nan).shape), shape=abstractify(result).shape)
    nan = conv.convert_element_type(np.asarray(np.nan, dtype), dtype=dtype)
    return conv.select(force_nan, nan, result)


def _no_out(fn: str, out: Any) -> None:
    if out is not None:
        raise ValueError(f"{fn}: the out argument is not supported")


def quantile(a: Any, q: Any, axis: Any = None, out: None = None,
             overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
             *, weights: Any = None) -> Any:
    """``jnp.quantile``: the `q`-th quantiles (``0 <= q <= 1``, a scalar or 1-d) over
    `axis`; a 1-d `q` gives its quantiles along a new first axis."""
    _no_out("quantile", out)
    return _quantile(a, q, axis, method, keepdims, False, weights, "quantile")


def nanquantile(a: Any, q: Any, axis: Any = None, out: None = None,
                overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, *, weights: Any = None) -> Any:
    """``jnp.nanquantile``: `quantile` of the numbers only (NaN when a slice has none)."""
    _no_out("nanquantile", out)
    return _quantile(a, q, axis, method, keepdims, True, weights, "nanquantile")


def _percent(q: Any, a: Any) -> Any:
    q = asarray(q)
    dtype = _inexact(promote_avals(abstractify(a), abstractify(q))[0])
    return ew.true_divide(conv.convert_element_type(q, dtype=dtype),
                          conv.convert_element_type(np.asarray(100, dtype), dtype=dtype))


def percentile(a: Any, q: Any, axis: Any = None, out: None = None,
               overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
               *, weights: Any = None) -> Any:
    """``jnp.percentile``: `quantile` with `q` in percent."""
    _no_out("percentile", out)
    return _quantile(a, _percent(q, a), axis, method, keepdims, False, weights, "percentile")


def nanpercentile(a: Any, q: Any, axis: Any = None, out: None = None,
                  overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights: Any = None) -> Any:
    """``jnp.nanpercentile``: `nanquantile` with `q` in percent."""
    _no_out("nanpercentile", out)
    return _quantile(a, _percent(q, a), axis, method, keepdims, True, weights,
                     "nanpercentile")


def median(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
    """``jnp.median``: the middle value (the mean of the two middle ones for an even
    count); NaN where a slice holds NaN."""
    _no_out("median", out)
    return _quantile(a, 0.5, axis, "midpoint", keepdims, False, None, "median")


def nanmedian(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Any:
    """``jnp.nanmedian``: `median` of the numbers only."""
    _no_out("nanmedian", out)
    return _quantile(a, 0.5, axis, "midpoint", keepdims, True, None, "nanmedian")
