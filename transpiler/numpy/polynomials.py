"""Polynomials as 1-d coefficient arrays, highest power first (NumPy's ``poly1d``
convention): poly, polyadd, polysub, polymul, polydiv, polyder, polyint, polyval, polyfit,
roots, and the Vandermonde matrix `vander`.

Coefficient counts are static (they are shapes); the arithmetic is convolution, Horner's
rule and least squares, and roots are the eigenvalues of the companion matrix
(`linalg.eigvals`, as JAX), so everything also runs under ``jit`` and differentiates --
but `roots` with ``strip_zeros=True`` (the default), whose leading zeros decide the
result's length: concrete coefficients only, as in JAX.
"""

from __future__ import annotations

import operator
from typing import Any, Optional

import numpy as np

from transpiler import dtypes
# The package, for jnp.linalg: attached on first use (numpy/__init__.py's __getattr__), as
# it is built on transpiler.lax, which imports jnp -- importing it here would entangle them.
from transpiler import numpy as jnp
from transpiler.numpy.convolution import convolve
from transpiler.numpy.creation import arange, asarray, full, ones, zeros
from transpiler.numpy.math import where
from transpiler.numpy.matrices import diag
from transpiler.numpy.reductions import all as all_
from transpiler.numpy.reductions import argmin
from transpiler.numpy.sorting import argsort
from transpiler.numpy.elementwise_functions import _promote, _promote_inexact
from transpiler.numpy.joining import concatenate, pad
from transpiler.numpy.math import power, sqrt, true_divide
from transpiler.numpy.reductions import sum
from transpiler.numpy.shape import _slice_axis, atleast_1d, expand_dims, reshape
from transpiler.primitives import core
from transpiler.primitives.core import abstractify

__all__ = ["poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul",
           "polysub", "polyval", "roots", "vander"]


def _length(p: Any) -> int:
    return abstractify(p).shape[0]


def _concrete(p: Any, fn: str, why: str) -> np.ndarray:
    if isinstance(p, core.Tracer):
        raise core.shape_error(f"{fn} needs a concrete argument: {why}",
                               "call it outside jit/grad/vmap")
    return np.asarray(p)


def vander(x: Any, N: Optional[int] = None, increasing: bool = False) -> Any:
    """The Vandermonde matrix: columns are powers of `x` (decreasing unless `increasing`)."""
    x = asarray(x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array")
    N = x.shape[0] if N is None else operator.index(N)
    if N < 0:
        raise ValueError("N must be nonnegative")
    exponents = np.arange(N) if increasing else np.arange(N - 1, -1, -1)
    return power(reshape(x, (x.shape[0], 1)), asarray(exponents.astype(x.dtype)))


def poly(seq_of_zeros: Any) -> Any:
    """The coefficients of the monic polynomial with the given roots (of a square
    matrix: of its characteristic polynomial, through its complex eigenvalues, as JAX)."""
    zeros_ = atleast_1d(asarray(seq_of_zeros))
    shape = zeros_.shape
    if len(shape) == 2 and shape[0] == shape[1] and shape[0] != 0:
        zeros_ = jnp.linalg.eigvals(_promote_inexact(zeros_)[0])
    elif len(shape) == 1:
        zeros_ = _promote_inexact(zeros_)[0]
    else:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    dtype = zeros_.dtype
    n = shape[0]
    if n == 0:
        return ones((), dtype=dtype)
    a = ones((1,), dtype=dtype)
    for k in range(n):
        root = reshape(_slice_axis(zeros_, 0, k, k + 1), (1,))
        a = convolve(a, concatenate([ones((1,), dtype=dtype), -root]), mode="full")
    return a


def _align(a1: Any, a2: Any) -> tuple[Any, Any]:
    """Both coefficient arrays zero-padded at the front to one length."""
    n1, n2 = _length(a1), _length(a2)
    if n1 < n2:
        a1 = pad(a1, (n2 - n1, 0))
    elif n2 < n1:
        a2 = pad(a2, (n1 - n2, 0))
    return a1, a2


def _coefficients(*ps: Any, inexact: bool, fn: str) -> list:
    arrays = _promote_inexact(*ps) if inexact else _promote(*ps)
    out = []
    for p in arrays:
        if abstractify(p).ndim != 1:
            raise ValueError(f"{fn}: coefficients must be a 1-d array, got shape "
                             f"{abstractify(p).shape}")
        out.append(p)
    return out


def polyadd(a1: Any, a2: Any) -> Any:
    """The sum of two polynomials."""
    a1, a2 = _coefficients(atleast_1d(asarray(a1)), atleast_1d(asarray(a2)), inexact=False,
                           fn="polyadd")
    a1, a2 = _align(a1, a2)
    return a1 + a2


def polysub(a1: Any, a2: Any) -> Any:
    """The difference of two polynomials."""
    a1, a2 = _coefficients(atleast_1d(asarray(a1)), atleast_1d(asarray(a2)), inexact=False,
                           fn="polysub")
    a1, a2 = _align(a1, a2)
    return a1 - a2


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Any:
    """The product of two polynomials (a convolution of the coefficients)."""
    a1, a2 = _coefficients(atleast_1d(asarray(a1)), atleast_1d(asarray(a2)), inexact=True,
                           fn="polymul")
    if trim_leading_zeros and (_length(a1) > 1 or _length(a2) > 1):
        from transpiler.numpy.array_editing import trim_zeros  # it builds on this module
        a1, a2 = trim_zeros(a1, trim="f"), trim_zeros(a2, trim="f")
    if _length(a1) == 0:
        a1 = zeros((1,), dtype=a2.dtype)
    if _length(a2) == 0:
        a2 = zeros((1,), dtype=a1.dtype)
    return convolve(a1, a2, mode="full")


def polydiv(u: Any, v: Any, *, trim_leading_zeros: bool = False) -> tuple[Any, Any]:
    """Quotient and remainder of polynomial division (the remainder keeps `u`'s length
    unless `trim_leading_zeros`, which needs concrete values)."""
    u, v = _coefficients(atleast_1d(asarray(u)), atleast_1d(asarray(v)), inexact=True,
                         fn="polydiv")
    m, n = _length(u) - 1, _length(v) - 1
    scale = 1.0 / reshape(_slice_axis(v, 0, 0, 1), ())
    q = zeros((max(m - n + 1, 1),), dtype=u.dtype)
    for k in range(0, m - n + 1):
        d = scale * reshape(_slice_axis(u, 0, k, k + 1), ())
        q = q.at[k].set(d)
        u = u.at[k:k + n + 1].add(-d * v)
    if trim_leading_zeros:
        from transpiler.numpy.array_editing import trim_zeros  # it builds on this module
        return q, trim_zeros(u, trim="f")
    return q, u


def polyder(p: Any, m: int = 1) -> Any:
    """The `m`-th derivative of a polynomial."""
    p = _coefficients(atleast_1d(asarray(p)), inexact=True, fn="polyder")[0]
    m = operator.index(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    if m == 0:
        return p
    n = _length(p)
    coeff = np.prod(np.arange(m, n)[np.newaxis] - np.arange(m)[:, np.newaxis], axis=0)
    return _slice_axis(p, 0, 0, max(n - m, 0)) * asarray(coeff[::-1].astype(p.dtype))


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """The `m`-th antiderivative of a polynomial, with integration constants `k` (a
    scalar for all, or one per integration)."""
    m = operator.index(m)
    p, k_arr = _promote_inexact(atleast_1d(asarray(p)), 0 if k is None else k)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k_arr = atleast_1d(k_arr)
    if k_arr.shape == (1,):
        k_arr = full((m,), reshape(k_arr, ()), dtype=k_arr.dtype)
    if k_arr.shape != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    if m == 0:
        return p
    n = _length(p)
    grid = np.arange(n + m)[np.newaxis] - np.arange(m)[:, np.newaxis]
    coeff = np.prod(np.maximum(1, grid), axis=0)[::-1]
    return true_divide(concatenate((p, k_arr)), asarray(coeff.astype(p.dtype)))


def polyval(p: Any, x: Any, *, unroll: int = 16) -> Any:
    """The polynomial `p` at `x`, by Horner's rule (`unroll` is accepted for JAX's
    signature; the loop is unrolled in full)."""
    p, x = _promote(asarray(p), x)
    if abstractify(p).ndim < 1:
        raise ValueError(f"polyval: p must have at least one dimension, got shape "
                         f"{abstractify(p).shape}")
    del unroll
    y = x * 0
    for i in range(_length(p)):
        coefficient = reshape(_slice_axis(p, 0, i, i + 1), abstractify(p).shape[1:])
        y = y * x + coefficient
    return y


def polyfit(x: Any, y: Any, deg: int, rcond: Optional[float] = None, full: bool = False,
            w: Any = None, cov: Any = False) -> Any:
    """The least-squares polynomial fit of degree `deg` (NumPy's scaling of the
    Vandermonde columns, so values agree with JAX)."""
    x, y = _promote_inexact(asarray(x), asarray(y))
    deg = operator.index(deg)
    order = deg + 1
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if x.shape[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = x.shape[0] * float(dtypes.finfo(x.dtype).eps)
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        w = _promote_inexact(asarray(w))[0]
        if w.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if w.shape[0] != y.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * expand_dims(w, 1)
        rhs = rhs * (expand_dims(w, 1) if rhs.ndim == 2 else w)
    scale = sqrt(sum(lhs * lhs, axis=0))
    lhs = lhs / expand_dims(scale, 0)
    c, resids, rank, s = jnp.linalg.lstsq(lhs, rhs, rcond)
    c = c / (expand_dims(scale, 1) if c.ndim == 2 else scale)
    if full:
        return c, resids, rank, s, asarray(rcond)
    if cov:
        vbase = jnp.linalg.inv(lhs.T @ lhs) / (expand_dims(scale, 1) * expand_dims(scale, 0))
        if cov == "unscaled":
            fac: Any = 1.0
        else:
            if x.shape[0] <= order:
                raise ValueError("the number of data points must exceed order to scale the "
                                 "covariance matrix")
            fac = resids / (x.shape[0] - order)
            fac = reshape(_slice_axis(fac, 0, 0, 1), fac.shape[1:]) if y.ndim == 1 else fac
        if y.ndim == 1:
            return c, vbase * fac
        return c, expand_dims(vbase, 2) * fac
    return c


def roots(p: Any, *, strip_zeros: bool = True) -> Any:
    """The roots of a polynomial, as complex numbers: the eigenvalues of its companion
    matrix (JAX's and NumPy's algorithm), zero roots last. Leading zero coefficients are
    stripped with `strip_zeros` (concrete coefficients only: they decide the length);
    without it each root they lose is NaN, and the coefficients may be traced."""
    p = atleast_1d(_promote_inexact(asarray(p))[0])
    if p.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    if strip_zeros:
        values = _concrete(p, "roots", "pass strip_zeros=False to trace the coefficients")
        nonzero = np.flatnonzero(values)
        p = p[int(nonzero[0]):] if nonzero.size else p[:0]
    dtype = dtypes.complex_dtype(p.dtype)
    if p.shape[0] < 2:
        return zeros((0,), dtype=dtype)
    n = p.shape[0]
    is_zero = p == 0
    leading = where(all_(is_zero), n, argmin(is_zero))
    p = where(leading == n, 1.0, p)  # all zero: every root is NaN below, none is divided by 0
    p = p[(arange(n) + leading) % n]  # the leading zeros rolled to the end
    companion = diag(ones((p.shape[0] - 2,), p.dtype), -1)
    companion = companion.at[0, :].set(-p[1:] / p[0])
    found = jnp.linalg.eigvals(companion)
    found = found[argsort(found == 0, stable=True)]  # zero roots last
    return where(arange(found.shape[0]) < found.shape[0] - leading, found,
                 complex(np.nan, np.nan))
