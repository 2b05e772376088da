"""Covariance and correlation (cov, corrcoef) and multi-dimensional histograms
(histogramdd, histogram2d), with JAX's formulas and dtypes.

The number of bins is static; bin edges and counts are computed with `searchsorted` and
`bincount` over a static length, so the histograms run under ``jit`` as well.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Optional, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.numpy.complex_numbers import conj, imag, real
from transpiler.numpy.counting import bincount, histogram_bin_edges
from transpiler.numpy.creation import asarray, astype, full, zeros
from transpiler.numpy.differences import diff
from transpiler.numpy.elementwise_functions import _promote_inexact
from transpiler.numpy.index_tricks import ix_, ravel_multi_index
from transpiler.numpy.joining import concatenate, stack
from transpiler.numpy.math import abs, clip, sqrt, true_divide, where
from transpiler.numpy.matrices import diag
from transpiler.numpy.products import dot
from transpiler.numpy.reductions import average, sum
from transpiler.numpy.shape import _slice_axis, atleast_2d, reshape, squeeze, transpose
from transpiler.numpy.sorting import searchsorted
from transpiler.primitives import conversions as conv

__all__ = ["corrcoef", "cov", "histogram2d", "histogramdd"]


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False,
        ddof: Optional[int] = None, fweights: Any = None, aweights: Any = None,
        dtype: Any = None) -> Any:
    """The covariance matrix of the variables in the rows of `m` (columns, without
    `rowvar`) and `y`, with optional frequency and analytic weights."""
    if y is not None:
        m, y = _promote_inexact(asarray(m), asarray(y))
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    else:
        m = _promote_inexact(asarray(m))[0]
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if dtype is not None and not dtypes.is_inexact(dtypes.canonicalize(dtype)):
        raise ValueError(f"cov: dtype must be a subclass of float or complex; got dtype={dtype}")
    X = atleast_2d(m)
    if not rowvar and m.ndim != 1:
        X = transpose(X)
    if X.shape[0] == 0:
        return zeros((0, 0), dtype=dtypes.default_float())
    if y is not None:
        y_arr = atleast_2d(y)
        if not rowvar and y_arr.shape[0] != 1:
            y_arr = transpose(y_arr)
        X = concatenate((X, y_arr), axis=0)
    if X.shape[1] == 0:
        shape = () if X.shape[0] == 1 else (X.shape[0], X.shape[0])
        return full(shape, np.nan, dtype=X.dtype)
    if ddof is None:
        ddof = 1 if not bias else 0
    w = None
    if fweights is not None:
        fweights = asarray(fweights)
        if fweights.ndim > 1:
            raise ValueError("cannot handle multidimensional fweights")
        if fweights.shape[0] != X.shape[1]:
            raise ValueError("incompatible numbers of samples and fweights")
        if not dtypes.is_int(fweights.dtype):
            raise TypeError("fweights must be integer.")
        w = abs(fweights)
    if aweights is not None:
        aweights = asarray(aweights)
        if aweights.ndim > 1:
            raise ValueError("cannot handle multidimensional aweights")
        if aweights.shape[0] != X.shape[1]:
            raise ValueError("incompatible numbers of samples and aweights")
        aweights = abs(aweights)
        w = aweights if w is None else w * aweights
    if dtype is not None:
        X = astype(X, dtype)
        w = astype(w, dtype) if w is not None else w
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    w_sum = reshape(_slice_axis(w_sum, 0, 0, 1), ())
    if w is None:
        f: Any = X.shape[1] - ddof
    elif ddof == 0:
        f = w_sum
    elif aweights is None:
        f = w_sum - ddof
    else:
        f = w_sum - ddof * sum(w * aweights) / w_sum
    X = X - reshape(avg, (X.shape[0], 1))
    X_T = transpose(X) if w is None else transpose(X * reshape(w, (1, X.shape[1])))
    return squeeze(true_divide(dot(X, conj(X_T)), f))


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, dtype: Any = None) -> Any:
    """The Pearson correlation coefficients (`cov` normalized by the standard deviations,
    clipped to [-1, 1])."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return true_divide(c, c)  # NaN for 0/0 and inf/inf, 1 otherwise
    d = diag(c)
    stddev = astype(sqrt(real(d)), c.dtype)
    c = c / reshape(stddev, (-1, 1)) / reshape(stddev, (1, -1))
    real_part = clip(real(c), -1, 1)
    if dtypes.is_complex(c.dtype):
        return conv.convert_element_type(real_part, dtype=c.dtype) + \
            1j * clip(imag(c), -1, 1)
    return real_part


def histogramdd(sample: Any, bins: Any = 10, range: Optional[Sequence[Any]] = None,
                weights: Any = None, density: Optional[bool] = None) -> tuple[Any, list]:
    """The D-dimensional histogram of `sample` (N points, shape ``(N, D)``): counts (or
    summed `weights`, or a density) per bin, and each dimension's bin edges."""
    if weights is None:
        sample = _promote_inexact(asarray(sample))[0]
    else:
        sample, weights = _promote_inexact(asarray(sample), asarray(weights))
        if weights.shape != sample.shape[:1]:
            raise ValueError("should have one weight for each sample.")
    if sample.ndim != 2:
        raise ValueError(f"histogramdd: sample must be 2-dimensional (N, D), got shape "
                         f"{sample.shape}")
    N, D = sample.shape
    if range is not None and (len(range) != D or builtins.any(
            r is not None and np.shape(r)[0] != 2 for r in range)):
        raise ValueError(f"For sample.shape={(N, D)}, range must be a sequence of {D} pairs "
                         f"or Nones; got range={range}")
    try:
        per_dimension = list(bins)
    except TypeError:
        per_dimension = D * [bins]
    else:
        if len(per_dimension) != D:
            raise ValueError("should be a bin for each dimension.")
    indices, edges = [], []
    for i in builtins.range(D):
        column = reshape(_slice_axis(sample, 1, i, i + 1), (N,))
        bin_edges = histogram_bin_edges(column, per_dimension[i],
                                        None if range is None else range[i], weights)
        last = reshape(_slice_axis(bin_edges, 0, bin_edges.shape[0] - 1, bin_edges.shape[0]),
                       ())
        index = searchsorted(bin_edges, column, side="right")
        indices.append(where(column == last, index - 1, index))
        edges.append(bin_edges)
    nbins = tuple(e.shape[0] + 1 for e in edges)
    flat = ravel_multi_index(tuple(indices), nbins, mode="clip")
    hist = reshape(bincount(flat, weights, length=math.prod(nbins)), nbins)
    for axis, n in enumerate(nbins):
        hist = _slice_axis(hist, axis, 1, n - 1)
    if density:
        hist = astype(hist, sample.dtype)
        hist = hist / sum(hist)
        for norm in ix_(*[diff(e) for e in edges]):
            hist = hist / norm
    return hist, edges


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Optional[Sequence[Any]] = None,
                weights: Any = None, density: Optional[bool] = None) -> tuple[Any, Any, Any]:
    """The 2-d histogram of the points ``(x, y)``, with the edges of each axis."""
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n not in (1, 2):
        bins = [asarray(bins), asarray(bins)]
    sample = transpose(stack(_promote_inexact(asarray(x), asarray(y))))
    hist, edges = histogramdd(sample, bins, range, weights, density)
    return hist, edges[0], edges[1]
