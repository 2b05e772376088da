"""``lax``'s elementwise operations with JAX's names: the arithmetic, comparison,
rounding and transcendental ones over the elementwise primitives and ``jnp``, and the
integer bit operations (``population_count``, ``clz``, the right shifts) and
``nextafter``, ``rem`` as composites of integer arithmetic on the bits.

Every function is code the transforms read, so ``grad``, ``jvp`` and ``vmap`` follow it:
derivatives are those of the pieces (JAX's rules where those agree; ``clamp`` and ``round``
are written so that they do).
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.errors import located
from transpiler.lax.special import erfc, float_operand
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives.core import abstractify, dtype_error

__all__ = ["RoundingMethod", "neg", "abs", "sign", "floor", "ceil", "round", "is_finite",
           "exp2", "log1p", "expm1", "tan", "atan", "asin", "acos", "sinh", "cosh", "asinh",
           "acosh", "atanh", "atan2", "pow", "cbrt", "square", "reciprocal", "rem",
           "nextafter", "eq", "ne", "lt", "le", "gt", "ge", "clamp", "select_n",
           "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "population_count",
           "clz", "shift_right_arithmetic", "shift_right_logical", "erfc", "mulhi",
           "reduce_precision"]


class RoundingMethod(enum.IntEnum):
    """``lax.RoundingMethod``: how ``lax.round`` breaks ties."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


# --- arithmetic and transcendental functions -----------------------------------------------

neg = ew.negative
abs = ew.abs_  # noqa: A001
sign = ew.sign
floor, ceil = ew.floor, ew.ceil
is_finite = ew.isfinite
log1p, expm1, tan, atan, cbrt = ew.log1p, ew.expm1, ew.tan, ew.arctan, ew.cbrt
asin, acos, sinh, cosh = jnp.arcsin, jnp.arccos, jnp.sinh, jnp.cosh
asinh, acosh, atanh = jnp.arcsinh, jnp.arccosh, jnp.arctanh
eq, ne, lt, le, gt, ge = ew.equal, ew.not_equal, ew.less, ew.less_equal, ew.greater, \
    ew.greater_equal
bitwise_and, bitwise_or, bitwise_xor, bitwise_not = ew.bitwise_and, ew.bitwise_or, \
    ew.bitwise_xor, ew.invert


def atan2(x: Any, y: Any) -> Any:
    """``lax.atan2(x, y)``: the angle of the point ``(y, x)``, ``arctan(x / y)`` in the
    right quadrant (C's signed zeros)."""
    return ew.arctan2(x, y)


def pow(x: Any, y: Any) -> Any:  # noqa: A001
    """``lax.pow``: ``x ** y`` elementwise (an integer `y` array raises a float `x` to
    integer powers)."""
    return ew.power(x, y)


def exp2(x: Any) -> Any:
    """``lax.exp2``: ``2 ** x``, computed as ``exp(x * log(2))`` as XLA does."""
    x = float_operand(x)
    return ew.exp(x * np.array(np.log(2.0), abstractify(x).dtype))


def square(x: Any) -> Any:
    """``lax.square``: ``x * x``."""
    return conv.integer_pow(x, y=2)


def reciprocal(x: Any) -> Any:
    """``lax.reciprocal``: ``1 / x``."""
    return conv.integer_pow(x, y=-1)


def round(x: Any, rounding_method: Any = RoundingMethod.AWAY_FROM_ZERO) -> Any:  # noqa: A001
    """``lax.round``: the nearest integer, ties away from zero (the default) or to even
    (``RoundingMethod.TO_NEAREST_EVEN``, or 1). Its derivative is zero."""
    method = RoundingMethod(int(rounding_method))
    if not dtypes.is_float(abstractify(x, 0, "round").dtype):
        raise dtype_error(f"lax.round requires a floating-point operand, got "
                          f"{abstractify(x).dtype}")
    if method == RoundingMethod.TO_NEAREST_EVEN:
        return ew.round_(x)
    truncated = jnp.where(x < 0, ew.ceil(x), ew.floor(x))
    # x - truncated is exact, so ties are recognized exactly (no x + 0.5 rounding)
    return jnp.where(ew.abs_(x - truncated) >= 0.5, truncated + ew.sign(x), truncated)


def rem(x: Any, y: Any) -> Any:
    """``lax.rem``: C's ``fmod``, the remainder of ``x / y`` truncated toward zero, with
    the sign of `x` (``jnp.remainder`` takes `y`'s). An integer remainder by zero is `x`,
    a float one NaN, as in XLA."""
    aval = abstractify(x, 0, "rem")
    if dtypes.is_float(aval.dtype):
        # |x| mod |y| is computed exactly (both non-negative); the sign is then x's. (A
        # zero result is +0 where C gives -0 for negative x.)
        r = ew.remainder(ew.abs_(x), ew.abs_(y))
        return jnp.where(x < 0, -r, r)
    r = ew.remainder(x, y)  # y's sign: move it to x's side when they differ
    fix = (r != 0) & ((r < 0) != (x < 0))
    return jnp.where(y == 0, x, jnp.where(fix, r - y, r))


def clamp(min: Any, x: Any, max: Any) -> Any:  # noqa: A002
    """``lax.clamp``: XLA's ``min(max(x, min), max)`` (`min` and `max` scalars or `x`'s
    shape; where ``min > max`` that is `max`). Derivatives are JAX's: `x` has one strictly
    inside, `min` strictly below it (when ``min < max``), `max` strictly above it, none at
    ties; NaN stays NaN."""
    inside = (x > min) & (x < max)
    min_wins = (x < min) & (min < max)
    rest = lax_stop_gradient(jnp.where(min > max, max, x))  # ties, NaN, min > max
    return jnp.where(inside, x, jnp.where(min_wins, min, jnp.where(x > max, max, rest)))


def lax_stop_gradient(x: Any) -> Any:
    """`x` as a constant to differentiation (floating values only)."""
    dtype = abstractify(x).dtype
    return conv.stop_gradient(x) if dtypes.is_inexact(dtype) else x


def select_n(which: Any, *cases: Any) -> Any:
    """``lax.select_n``: per element, ``cases[which]``; `which` is boolean (two cases) or
    an integer in ``[0, len(cases))``, a scalar or the cases' shape."""
    if not cases:
        raise located(ValueError, "lax.select_n: needs at least one case")
    which_dtype = abstractify(which, 0, "select_n").dtype
    if which_dtype == dtypes.bool_:
        if len(cases) != 2:
            raise located(ValueError, f"lax.select_n: a boolean `which` selects between 2 "
                          f"cases, got {len(cases)}")
        return conv.select(which, cases[1], cases[0])
    if not dtypes.is_int(which_dtype):
        raise dtype_error(f"lax.select_n: `which` must be boolean or integer, got {which_dtype}")
    out = cases[0]
    for i in range(1, len(cases)):
        out = conv.select(ew.equal(which, i), cases[i], out)
    return out


# --- bits ----------------------------------------------------------------------------------

def _unsigned(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"uint{dtype.itemsize * 8}")


def _signed(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"int{dtype.itemsize * 8}")


def _integer(x: Any, fn: str) -> np.dtype:
    dtype = abstractify(x, 0, fn).dtype
    if not dtypes.is_int(dtype):
        raise dtype_error(f"lax.{fn} requires an integer operand, got {dtype}")
    return dtype


def _as(x: Any, dtype: np.dtype) -> Any:
    """The same bits as another integer type of the same width."""
    if abstractify(x).dtype == dtype:
        return x
    return conv.bitcast_convert_type(x, dtype=dtype)


def _mask(pattern: int, dtype: np.dtype) -> Any:
    """`pattern` (a byte) repeated to the width of `dtype`."""
    return np.array(int.from_bytes(bytes([pattern]) * dtype.itemsize, "little"), dtype)


def population_count(x: Any) -> Any:
    """``lax.population_count``: the number of set bits of each element, in its dtype."""
    dtype = _integer(x, "population_count")
    unsigned = _unsigned(dtype)
    u = _as(x, unsigned)
    one, two, four = (np.array(k, unsigned) for k in (1, 2, 4))
    u = u - ew.bitwise_and(ew.right_shift(u, one), _mask(0x55, unsigned))
    u = ew.bitwise_and(u, _mask(0x33, unsigned)) + \
        ew.bitwise_and(ew.right_shift(u, two), _mask(0x33, unsigned))
    u = ew.bitwise_and(u + ew.right_shift(u, four), _mask(0x0F, unsigned))
    if dtype.itemsize > 1:  # add up the bytes into the top byte
        u = ew.right_shift(u * _mask(0x01, unsigned),
                           np.array(8 * (dtype.itemsize - 1), unsigned))
    return _as(u, dtype)


def clz(x: Any) -> Any:
    """``lax.clz``: the number of leading zero bits of each element, in its dtype."""
    dtype = _integer(x, "clz")
    unsigned = _unsigned(dtype)
    u = _as(x, unsigned)
    width = 8 * dtype.itemsize
    shift = 1
    while shift < width:  # smear the highest set bit into every lower one
        u = ew.bitwise_or(u, ew.right_shift(u, np.array(shift, unsigned)))
        shift *= 2
    return _as(np.array(width, unsigned) - _as(population_count(u), unsigned), dtype)


def _shift_amount(y: Any, dtype: np.dtype) -> tuple[Any, Any]:
    """`y` in the shifted type, and where it is out of range (negative or >= the width)."""
    y = conv.convert_element_type(y, dtype=dtype)
    width = np.array(8 * dtype.itemsize, dtype)
    return y, (y < 0) | (y >= width)


def shift_right_logical(x: Any, y: Any) -> Any:
    """``lax.shift_right_logical``: `x`'s bits moved right by `y`, zeros shifted in (also
    for signed types); a shift by the width or more gives 0."""
    dtype = _integer(x, "shift_right_logical")
    unsigned = _unsigned(dtype)
    amount, out_of_range = _shift_amount(y, unsigned)
    safe = jnp.where(out_of_range, np.array(0, unsigned), amount)
    shifted = ew.right_shift(_as(x, unsigned), safe)
    return _as(jnp.where(out_of_range, np.array(0, unsigned), shifted), dtype)


def shift_right_arithmetic(x: Any, y: Any) -> Any:
    """``lax.shift_right_arithmetic``: `x`'s bits moved right by `y`, copies of the sign
    bit shifted in (also for unsigned types); a shift by the width or more fills every bit
    with the sign bit."""
    dtype = _integer(x, "shift_right_arithmetic")
    signed = _signed(dtype)
    amount, out_of_range = _shift_amount(y, signed)
    safe = jnp.where(out_of_range, np.array(8 * dtype.itemsize - 1, signed), amount)
    return _as(ew.right_shift(_as(x, signed), safe), dtype)


def reduce_precision(operand: Any, exponent_bits: int, mantissa_bits: int) -> Any:
    """``lax.reduce_precision``: each float rounded to the nearest value (ties to even) of
    a format with `exponent_bits` and `mantissa_bits`, in `operand`'s dtype: XLA's
    algorithm on the bits (``EmitReducePrecisionIR``): too large overflows to infinity,
    too small (subnormals of the narrow format included) flushes to a signed zero, NaN
    stays NaN. Its derivative is 1 where the result is a normal number, 0 where it is
    zero, subnormal or infinite (JAX's rounds the tangent to the same format)."""
    dtype = abstractify(operand, 0, "reduce_precision").dtype
    if not dtypes.is_float(dtype):
        raise dtype_error(f"lax.reduce_precision requires a floating-point operand, got "
                          f"{dtype}")
    exponent_bits, mantissa_bits = int(exponent_bits), int(mantissa_bits)
    if exponent_bits < 1 or mantissa_bits < 0:
        raise located(ValueError, f"lax.reduce_precision: exponent_bits must be >= 1 and "
                      f"mantissa_bits >= 0, got {exponent_bits} and {mantissa_bits}")
    info = dtypes.finfo(dtype)
    src_mantissa, src_exponent = int(info.nmant), int(info.nexp)
    unsigned = _unsigned(dtype)

    def const(v: int) -> Any:
        return np.array(v, unsigned)

    bits = conv.bitcast_convert_type(operand, dtype=unsigned)
    if mantissa_bits < src_mantissa:
        shift = src_mantissa - mantissa_bits
        last_mantissa_bit = 1 << shift
        last_bit = ew.right_shift(ew.bitwise_and(bits, const(last_mantissa_bit)), const(shift))
        bias = last_bit + const((last_mantissa_bit >> 1) - 1)
        truncation_mask = ~(last_mantissa_bit - 1) & ((1 << (8 * dtype.itemsize)) - 1)
        bits = ew.bitwise_and(bits + bias, const(truncation_mask))
    if exponent_bits < src_exponent:
        sign_mask = 1 << (8 * dtype.itemsize - 1)
        exponent_mask = ((1 << src_exponent) - 1) << src_mantissa
        exponent_bias = (1 << (src_exponent - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        exponent = ew.bitwise_and(bits, const(exponent_mask))
        overflows = exponent > const((exponent_bias + reduced_bias) << src_mantissa)
        underflows = exponent <= const((exponent_bias - reduced_bias) << src_mantissa)
        signed_zero = ew.bitwise_and(bits, const(sign_mask))
        signed_inf = ew.bitwise_or(signed_zero, const(exponent_mask))
        bits = jnp.where(overflows, signed_inf, bits)
        bits = jnp.where(underflows, signed_zero, bits)
    # NaN stays NaN (rounding can carry its mantissa into the exponent), also with no
    # mantissa bits left, as XLA's CPU backend gives it
    rounded = jnp.where(jnp.isnan(operand), operand,
                        conv.bitcast_convert_type(bits, dtype=dtype))
    # The derivative is 1 (the bit operations have none): a normal result plus `operand`
    # minus itself, exactly zero. Zeros (their sign), subnormals (flushed by arithmetic
    # under jit) and infinities are taken as they are.
    normal = jnp.isfinite(rounded) & (jnp.abs(rounded) >= np.array(info.tiny, dtype))
    finite_operand = jnp.where(normal, operand, jnp.zeros_like(operand))
    return jnp.where(normal, rounded + (finite_operand - conv.stop_gradient(finite_operand)),
                     rounded)


def nextafter(x1: Any, x2: Any) -> Any:
    """``lax.nextafter``: the float next to `x1` in the direction of `x2` (`x2` when they
    are equal, NaN when either is; from zero, the smallest subnormal with `x2`'s sign)."""
    dtype = abstractify(x1, 0, "nextafter").dtype
    if not dtypes.is_float(dtype):
        raise dtype_error(f"lax.nextafter requires floating-point operands, got {dtype}")
    x1 = conv.convert_element_type(x1, dtype=dtype)
    x2 = conv.convert_element_type(x2, dtype=dtype)
    signed = _signed(dtype)
    bits = _as(x1, signed)
    one = np.array(1, signed)
    away = (x2 > x1) == (x1 > 0)  # away from zero: one more unit in the magnitude
    stepped = jnp.where(away, bits + one, bits - one)
    tiny = jnp.where(x2 < 0, np.array(np.iinfo(signed).min + 1, signed), one)
    stepped = jnp.where(x1 == 0, tiny, stepped)
    out = _as(stepped, dtype)
    out = jnp.where(x1 == x2, x2, out)
    return jnp.where(ew.isnan(x1) | ew.isnan(x2), np.array(np.nan, dtype), out)


def mulhi(x: Any, y: Any) -> Any:
    """``lax.mulhi``: the high half of the double-width product of two integers of one
    type (``(x * y) >> width``, computed from the products of their half-width pieces, so
    no wider type is needed)."""
    dtype = _integer(x, "mulhi")
    if abstractify(y, 1, "mulhi").dtype != dtype:
        raise dtype_error(f"lax.mulhi requires operands of one integer type, got {dtype} and "
                          f"{abstractify(y).dtype}")
    unsigned = _unsigned(dtype)
    a, b = _as(x, unsigned), _as(y, unsigned)
    half = np.array(4 * dtype.itemsize, unsigned)
    low = np.array((1 << (4 * dtype.itemsize)) - 1, unsigned)
    a_lo, a_hi = ew.bitwise_and(a, low), ew.right_shift(a, half)
    b_lo, b_hi = ew.bitwise_and(b, low), ew.right_shift(b, half)
    hi_lo = a_hi * b_lo
    # each term is below 2^width, and so is their sum
    cross = ew.right_shift(a_lo * b_lo, half) + ew.bitwise_and(hi_lo, low) + a_lo * b_hi
    high = a_hi * b_hi + ew.right_shift(hi_lo, half) + ew.right_shift(cross, half)
    if dtype == unsigned:
        return high
    # two's complement: a signed operand is its unsigned bits minus 2^width when negative
    zero = np.array(0, unsigned)
    high = high - jnp.where(x < 0, b, zero) - jnp.where(y < 0, a, zero)
    return _as(high, dtype)
