"""Elementwise math: the primitives under their NumPy names, plus composites over them."""

from __future__ import annotations

import builtins
from typing import Any, Optional

import numpy as np

from transpiler import dtypes
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives.core import abstractify

# Primitives exposed under their NumPy names.
exp, log, log1p, expm1, sqrt = ew.exp, ew.log, ew.log1p, ew.expm1, ew.sqrt
cbrt, sin, cos, tan, tanh, arctan = ew.cbrt, ew.sin, ew.cos, ew.tan, ew.tanh, ew.arctan
floor, ceil, negative, sign = ew.floor, ew.ceil, ew.negative, ew.sign
absolute = abs = ew.abs_
isnan, isfinite, logical_not, invert = ew.isnan, ew.isfinite, ew.logical_not, ew.invert
bitwise_not = invert
add, subtract, multiply = ew.add, ew.subtract, ew.multiply
true_divide = divide = ew.true_divide
floor_divide, remainder = ew.floor_divide, ew.remainder
mod = remainder
maximum, minimum, arctan2 = ew.maximum, ew.minimum, ew.arctan2
equal, not_equal, less, less_equal = ew.equal, ew.not_equal, ew.less, ew.less_equal
greater, greater_equal = ew.greater, ew.greater_equal
logical_and, logical_or, logical_xor = ew.logical_and, ew.logical_or, ew.logical_xor
bitwise_and, bitwise_or, bitwise_xor = ew.bitwise_and, ew.bitwise_or, ew.bitwise_xor
left_shift, right_shift = ew.left_shift, ew.right_shift


def positive(x: Any) -> Any:
    return conv.convert_element_type(x, dtype=abstractify(x).dtype,
                                     weak_type=abstractify(x).weak_type)


def power(x: Any, y: Any) -> Any:
    """``x ** y``; a Python int exponent uses exact repeated multiplication (like JAX)."""
    if isinstance(y, builtins.int) and not isinstance(y, builtins.bool):
        x_aval = abstractify(x, 0, "power")
        if y >= 0 or dtypes.is_float(x_aval.dtype):
            return conv.integer_pow(x, y=y)
    return ew.power(x, y)


pow = power


def square(x: Any) -> Any:
    return conv.integer_pow(x, y=2)


def reciprocal(x: Any) -> Any:
    return conv.integer_pow(x, y=-1)


def round(a: Any, decimals: int = 0) -> Any:
    """Round half to even, like NumPy; `decimals` scales first."""
    if decimals == 0:
        return ew.round_(a)
    factor = 10.0 ** decimals
    return ew.round_(a * factor) / factor


around = round


def rint(x: Any) -> Any:
    return ew.round_(x)


def trunc(x: Any) -> Any:
    return where(less(x, 0), ceil(x), floor(x))


def fix(x: Any) -> Any:
    return trunc(x)


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """``jnp.where(c, x, y)``; the one-argument form needs a concrete condition."""
    if x is None and y is None:
        from transpiler.numpy import nonzero  # cycle: transpiler.numpy imports this module first
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("where: either both or neither of x and y must be given")
    cond = condition if abstractify(condition, 0, "where").dtype == dtypes.bool_ else \
        conv.convert_element_type(condition, dtype=dtypes.bool_)
    return conv.select(cond, x, y)


def clip(a: Any, a_min: Any = None, a_max: Any = None, *, min: Any = None,
         max: Any = None) -> Any:
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    out = a
    if lo is not None:
        out = maximum(out, lo)
    if hi is not None:
        out = minimum(out, hi)
    return out


def exp2(x: Any) -> Any:
    return power(2.0, x) if not dtypes.is_float(abstractify(x).dtype) else exp(x * np.log(2.0))


def log2(x: Any) -> Any:
    return log(x) / np.log(2.0).item()


def log10(x: Any) -> Any:
    return log(x) / np.log(10.0).item()


def logaddexp(x: Any, y: Any) -> Any:
    """``log(exp(x) + exp(y))`` as ``max + log1p(exp(min - max))``: written with `minimum`
    rather than ``-abs(x - y)`` so that at a tie each argument gets half the derivative
    (JAX's 0.5; abs's derivative of 1 at 0 gave 1 and 0)."""
    amax = maximum(x, y)
    delta = subtract(x, y)
    return where(isnan(delta), add(x, y), amax + log1p(exp(minimum(x, y) - amax)))


def sinh(x: Any) -> Any:
    return (exp(x) - exp(-x)) * 0.5


def cosh(x: Any) -> Any:
    return (exp(x) + exp(-x)) * 0.5


def arcsin(x: Any) -> Any:
    return arctan2(x, sqrt((1 - x) * (1 + x)))


def arccos(x: Any) -> Any:
    return arctan2(sqrt((1 - x) * (1 + x)), x)


def arcsinh(x: Any) -> Any:
    return log(x + sqrt(x * x + 1))


def arccosh(x: Any) -> Any:
    return log(x + sqrt(x * x - 1))


def arctanh(x: Any) -> Any:
    return 0.5 * log1p(2 * x / (1 - x))


def deg2rad(x: Any) -> Any:
    return x * (np.pi / 180.0)


def rad2deg(x: Any) -> Any:
    return x * (180.0 / np.pi)


radians, degrees = deg2rad, rad2deg


def hypot(x: Any, y: Any) -> Any:
    return sqrt(x * x + y * y)


def signbit(x: Any) -> Any:
    return less(x, 0)


def copysign(x: Any, y: Any) -> Any:
    return where(signbit(y), -abs(x), abs(x))


def fmax(x: Any, y: Any) -> Any:
    return where(isnan(y), x, where(isnan(x), y, maximum(x, y)))


def fmin(x: Any, y: Any) -> Any:
    return where(isnan(y), x, where(isnan(x), y, minimum(x, y)))


def isinf(x: Any) -> Any:
    return logical_and(logical_not(isfinite(x)), logical_not(isnan(x)))


def isposinf(x: Any) -> Any:
    return logical_and(isinf(x), greater(x, 0))


def isneginf(x: Any) -> Any:
    return logical_and(isinf(x), less(x, 0))


def nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: Optional[float] = None,
               neginf: Optional[float] = None) -> Any:
    aval = abstractify(x)
    if not dtypes.is_float(aval.dtype):
        return x
    info = dtypes.finfo(aval.dtype)
    hi = float(info.max) if posinf is None else posinf
    lo = float(info.min) if neginf is None else neginf
    out = where(isnan(x), nan, x)
    out = where(isposinf(out), hi, out)
    return where(isneginf(out), lo, out)


def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Any:
    close = less_equal(abs(subtract(a, b)), atol + rtol * abs(b))
    close = logical_or(close, equal(a, b))  # equal infinities
    if equal_nan:
        close = logical_or(close, logical_and(isnan(a), isnan(b)))
    return close


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> Any:
    from transpiler.numpy import all as all_  # cycle: transpiler.numpy imports this module first
    return all_(isclose(a, b, rtol, atol, equal_nan))
