"""Elementwise functions beyond `math.py`, with JAX's signatures and dtypes: integer
arithmetic (fmod, divmod, gcd, lcm), float decomposition (modf, frexp, ldexp, spacing,
nextafter), float_power, fabs, logaddexp2, heaviside, sinc, i0 and bitwise_count.

Written over the primitives and `math.py` (the lax library builds on this package, so
C's remainder, nextafter, the bit count and I0 are composed here as `transpiler.lax`
composes them).

Functions of floats promote integer and boolean operands to the default float, keeping
JAX's weak types (``jnp.float_power(2, 3)`` is a weak float32 without x64).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import asarray
from transpiler.numpy.math import (abs, ceil, exp, exp2, floor, floor_divide, isinf, isnan,
                                   log1p, maximum, minimum, power, remainder, sin, sqrt,
                                   where)
from transpiler.numpy.shape import broadcast_arrays
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives.core import abstractify, dtype_error

__all__ = ["bitwise_count", "divmod", "fabs", "float_power", "fmod", "frexp", "gcd",
           "heaviside", "i0", "lcm", "ldexp", "logaddexp2", "modf", "nextafter", "sinc",
           "spacing"]

_SIGNED: dict[int, np.dtype] = {2: np.dtype(np.int16), 4: np.dtype(np.int32),
                               8: np.dtype(np.int64)}


def _promote_inexact(*args: Any) -> list:
    """The arguments in their promoted inexact dtype (JAX's ``promote_args_inexact``)."""
    dtype, weak = dtypes.promote(*[(abstractify(a).dtype, abstractify(a).weak_type)
                                   for a in args])
    dtype = dtypes.to_inexact(dtype)
    return [conv.convert_element_type(a, dtype=dtype, weak_type=weak) for a in args]


def _promote(*args: Any) -> list:
    """The arguments in their promoted dtype (JAX's ``promote_args``)."""
    dtype, weak = dtypes.promote(*[(abstractify(a).dtype, abstractify(a).weak_type)
                                   for a in args])
    return [conv.convert_element_type(a, dtype=dtype, weak_type=weak) for a in args]


def _real_float(x: Any, fn: str) -> Any:
    """`x` promoted to an inexact dtype; complex input is a TypeError."""
    x = _promote_inexact(x)[0]
    if dtypes.is_complex(abstractify(x).dtype):
        raise dtype_error(f"{fn} does not support complex-valued inputs")
    return x


# --- integer arithmetic ------------------------------------------------------------------

def fmod(x1: Any, x2: Any, /) -> Any:
    """C's ``fmod``: the remainder of ``x1 / x2`` with the sign of `x1` (an integer
    remainder by zero is 0 here, as in JAX)."""
    x1, x2 = _promote(x1, x2)
    if dtypes.is_int(abstractify(x1).dtype):
        x2 = where(ew.equal(x2, 0), conv.convert_element_type(1, dtype=abstractify(x2).dtype),
                   x2)
    return _rem(x1, x2)


def _rem(x: Any, y: Any) -> Any:
    """C's remainder: the sign of `x` (`remainder` takes `y`'s); by an integer zero, `x`."""
    if dtypes.is_float(abstractify(x).dtype):
        r = remainder(abs(x), abs(y))
        return where(ew.less(x, 0), -r, r)
    r = remainder(x, y)
    fix = ew.not_equal(r, 0) & ew.not_equal(ew.less(r, 0), ew.less(x, 0))
    return where(ew.equal(y, 0), x, where(fix, r - y, r))


def divmod(x1: Any, x2: Any, /) -> tuple[Any, Any]:
    """``(x1 // x2, x1 % x2)``, NumPy's floored division and remainder."""
    return floor_divide(x1, x2), remainder(x1, x2)


def gcd(x1: Any, x2: Any) -> Any:
    """The greatest common divisor of integers (Euclid's algorithm, run for as many steps
    as the dtype's worst case needs: consecutive Fibonacci numbers)."""
    x1, x2 = _promote(x1, x2)
    dtype = abstractify(x1).dtype
    if not dtypes.is_int(dtype):
        raise TypeError("Arguments to jax.numpy.gcd must be integers.")
    x1, x2 = broadcast_arrays(abs(x1), abs(x2))
    golden = (1 + 5 ** 0.5) / 2
    for _ in range(int(np.ceil(8 * dtype.itemsize * np.log(2) / np.log(golden))) + 2):
        nonzero = ew.not_equal(x2, 0)
        x1, x2 = where(nonzero, x2, x1), where(nonzero, _rem(x1, where(nonzero, x2, 1)), 0)
    return x1


def lcm(x1: Any, x2: Any) -> Any:
    """The least common multiple of integers (0 when either is 0)."""
    x1, x2 = _promote(x1, x2)
    if not dtypes.is_int(abstractify(x1).dtype):
        raise TypeError("Arguments to jax.numpy.lcm must be integers.")
    d = gcd(x1, x2)
    safe = where(ew.equal(d, 0), 1, d)
    return where(ew.equal(d, 0), 0, abs(x1 * floor_divide(x2, safe)))


def bitwise_count(x: Any, /) -> Any:
    """The number of set bits in ``abs(x)``, as uint8."""
    x = asarray(x)
    if not (dtypes.is_int(x.dtype) or x.dtype == dtypes.bool_):
        raise dtype_error(f"bitwise_count requires integer or boolean input, got {x.dtype}")
    if x.dtype == dtypes.bool_:
        x = conv.convert_element_type(x, dtype=np.dtype(np.uint8))
    return conv.convert_element_type(_population_count(abs(x)), dtype=np.dtype(np.uint8))


def _population_count(x: Any) -> Any:
    """The number of set bits of each integer (the bytes' counts summed, SWAR style)."""
    dtype = abstractify(x).dtype
    unsigned = np.dtype(f"uint{8 * dtype.itemsize}")
    u = conv.bitcast_convert_type(x, dtype=unsigned) if dtype != unsigned else x

    def mask(pattern: int) -> np.ndarray:
        return np.array(int.from_bytes(bytes([pattern]) * unsigned.itemsize, "little"),
                        unsigned)

    one, two, four = (np.array(k, unsigned) for k in (1, 2, 4))
    u = u - ew.bitwise_and(ew.right_shift(u, one), mask(0x55))
    u = ew.bitwise_and(u, mask(0x33)) + ew.bitwise_and(ew.right_shift(u, two), mask(0x33))
    u = ew.bitwise_and(u + ew.right_shift(u, four), mask(0x0F))
    if unsigned.itemsize > 1:  # add up the bytes into the top byte
        u = ew.right_shift(u * mask(0x01), np.array(8 * (unsigned.itemsize - 1), unsigned))
    return u


# --- float decomposition -----------------------------------------------------------------

def modf(x: Any, /, out: None = None) -> tuple[Any, Any]:
    """The fractional and integral parts of `x`, both with `x`'s sign."""
    if out is not None:
        raise located(NotImplementedError, "The 'out' argument to jnp.modf is not supported.",
                      "use the returned values (arrays are immutable)")
    x = _real_float(x, "modf")
    whole = where(ew.greater_equal(x, 0), floor(x), ceil(x))
    return x - whole, whole


def frexp(x: Any, /) -> tuple[Any, Any]:
    """Mantissa in ``[0.5, 1)`` and int32 exponent with ``x = m * 2**e`` (read from the
    bits; zeros, infinities and NaN give themselves and exponent 0)."""
    x = _real_float(x, "frexp")
    dtype = abstractify(x).dtype
    info = dtypes.finfo(dtype)
    nmant, bias = int(info.nmant), 1 - int(info.minexp)
    ints = _SIGNED[dtype.itemsize]
    mask = (1 << int(info.nexp)) - 1
    subnormal = ew.less(abs(x), float(info.tiny))
    scaled = where(subnormal, x * float(1 << nmant), x)
    bits = conv.bitcast_convert_type(scaled, dtype=ints)
    exponent = where(subnormal, np.array(-nmant, ints), np.array(0, ints))
    biased = ew.bitwise_and(ew.right_shift(bits, np.array(nmant, ints)), np.array(mask, ints))
    exponent = exponent + biased - np.array(bias - 1, ints)
    bits = ew.bitwise_and(bits, np.array(~(mask << nmant), ints))
    bits = ew.bitwise_or(bits, np.array((bias - 1) << nmant, ints))
    mantissa = conv.bitcast_convert_type(bits, dtype=dtype)
    special = isinf(x) | isnan(x) | ew.equal(x, 0)
    exponent = where(special, np.array(0, ints), exponent)
    return where(special, x, mantissa), conv.convert_element_type(exponent,
                                                                   dtype=np.dtype(np.int32))


def _exact_pow2(e: Any, dtype: np.dtype) -> Any:
    """``2.0 ** e`` for integers `e` in the normal range of `dtype`, built from the bits."""
    info = dtypes.finfo(dtype)
    ints = _SIGNED[dtype.itemsize]
    e = conv.convert_element_type(e, dtype=ints)
    biased = ew.left_shift(e + np.array(1 - int(info.minexp), ints),
                           np.array(int(info.nmant), ints))
    return conv.bitcast_convert_type(biased, dtype=dtype)


def ldexp(x1: Any, x2: Any, /) -> Any:
    """``x1 * 2**x2`` for an integer `x2`, exact over the whole range (subnormal results
    too: the power of two is applied in two steps)."""
    d1, d2 = abstractify(x1).dtype, abstractify(x2).dtype
    if dtypes.is_complex(d1) or dtypes.is_inexact(d2):
        raise ValueError(f"ldexp not supported for input types {(d1, d2)}")
    x1 = _promote_inexact(x1)[0]
    dtype = abstractify(x1).dtype
    info = dtypes.finfo(dtype)
    lo, hi = int(info.minexp) - int(info.nmant) - 2, int(info.maxexp) + 2
    m, e = frexp(x1)
    ints = np.dtype(np.int32)
    shift = ew.maximum(ew.minimum(conv.convert_element_type(x2, dtype=ints), hi - lo), lo - hi)
    total = e + shift
    half = floor_divide(total, 2)
    rest = total - half
    half = ew.maximum(ew.minimum(half, int(info.maxexp) - 1), int(info.minexp))
    rest = ew.maximum(ew.minimum(rest, int(info.maxexp) - 1), int(info.minexp))
    out = m * _exact_pow2(half, dtype) * _exact_pow2(rest, dtype)
    return where(isinf(x1) | isnan(x1) | ew.equal(x1, 0), x1, out)


def nextafter(x: Any, y: Any, /) -> Any:
    """The next float after `x` in the direction of `y`."""
    x, y = _promote_inexact(x, y)
    dtype = abstractify(x).dtype
    if not dtypes.is_float(dtype):
        raise dtype_error(f"nextafter requires floating-point operands, got {dtype}")
    ints = _SIGNED[dtype.itemsize]
    bits = conv.bitcast_convert_type(x, dtype=ints)
    one = np.array(1, ints)
    away = ew.equal(ew.greater(y, x), ew.greater(x, 0))  # one more unit in the magnitude
    stepped = where(away, bits + one, bits - one)
    tiny = where(ew.less(y, 0), np.array(np.iinfo(ints).min + 1, ints), one)
    out = conv.bitcast_convert_type(where(ew.equal(x, 0), tiny, stepped), dtype=dtype)
    out = where(ew.equal(x, y), y, out)
    return where(isnan(x) | isnan(y), np.array(np.nan, dtype), out)


def spacing(x: Any, /) -> Any:
    """The distance from `x` to the next float away from zero (negative for negative
    `x`)."""
    x = _real_float(x, "spacing")
    dtype = abstractify(x).dtype
    away = where(ew.less(x, 0), np.array(-np.inf, dtype), np.array(np.inf, dtype))
    return nextafter(x, away) - x


# --- other functions of floats ---------------------------------------------------------

def float_power(x: Any, y: Any, /) -> Any:
    """``x ** y`` in an inexact dtype (integers promote to the default float)."""
    x, y = _promote_inexact(x, y)
    return power(x, y)


def fabs(x: Any, /) -> Any:
    """The absolute value as a float (integers promote; complex input is a TypeError)."""
    return abs(_real_float(x, "fabs"))


def logaddexp2(x1: Any, x2: Any, /) -> Any:
    """``log2(2**x1 + 2**x2)`` without overflow (at a tie each argument gets half the
    derivative, as in JAX)."""
    x1, x2 = _promote_inexact(x1, x2)
    amax = maximum(x1, x2)
    delta = x1 - x2
    return where(isnan(delta), x1 + x2,
                 amax + log1p(exp2(minimum(x1, x2) - amax)) / np.log(2.0).item())


def heaviside(x1: Any, x2: Any, /) -> Any:
    """The step function: 0 below zero, 1 above, `x2` at zero."""
    x1, x2 = _promote_inexact(x1, x2)
    return where(ew.less(x1, 0), 0.0, where(ew.greater(x1, 0), 1.0, x2))


def sinc(x: Any, /) -> Any:
    """``sin(pi x) / (pi x)``, 1 at 0 (where its derivative is 0)."""
    x = _promote_inexact(x)[0]
    zero = ew.equal(x, 0)
    safe = where(zero, 1.0, x * np.pi)
    return where(zero, 1.0, sin(safe) / safe)


def i0(x: Any) -> Any:
    """The modified Bessel function of the first kind, order 0."""
    x = _promote_inexact(x)[0]
    if not dtypes.is_float(abstractify(x).dtype):
        raise ValueError(f"Unsupported input type to jax.numpy.i0: {abstractify(x).dtype}")
    double = dtypes.finfo(abstractify(x).dtype).eps < 1e-10
    series_terms, asymptotic_terms = (60, 25) if double else (40, 12)
    ax = abs(x)
    small = ew.less_equal(ax, 20.0)
    square = where(small, ax, 0.0) ** 2 / 4
    term = square * 0 + 1
    series = term
    for k in range(1, series_terms):  # the power series, for |x| <= 20
        term = term * square / (k * k)
        series = series + term
    big = where(small, 40.0, ax)
    term = big * 0 + 1
    expansion = term
    for k in range(1, asymptotic_terms):  # the asymptotic expansion beyond
        term = term * ((2 * k - 1) ** 2) / (8 * k * big)
        expansion = expansion + term
    expansion = expansion * exp(big) / sqrt(2 * np.pi * big)
    return where(small, series, expansion)
