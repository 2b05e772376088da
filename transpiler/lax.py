"""``transpiler.lax``: JAX's lower-level operations (a first few; control flow comes later)."""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import dtypes
from transpiler.primitives import conversions as conv
from transpiler.primitives import dot as dot_p
from transpiler.primitives import elementwise as ew

add, sub, mul, div = ew.add, ew.subtract, ew.multiply, ew.true_divide
max, min = ew.maximum, ew.minimum  # noqa: A001
exp, log, sin, cos, tanh, sqrt, rsqrt = ew.exp, ew.log, ew.sin, ew.cos, ew.tanh, ew.sqrt, ew.rsqrt
logistic, integer_pow_p = ew.logistic, conv.integer_pow
shift_left, shift_right_logical = ew.left_shift, ew.right_shift


def convert_element_type(operand: Any, new_dtype: Any) -> Any:
    return conv.convert_element_type(operand, dtype=dtypes.canonicalize(new_dtype))


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    return conv.bitcast_convert_type(operand, dtype=np.dtype(new_dtype))


def integer_pow(x: Any, y: int) -> Any:
    return conv.integer_pow(x, y=y)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    return conv.select(pred, on_true, on_false)


def iota(dtype: Any, size: int) -> Any:
    return conv.iota(dtype=dtypes.canonicalize(dtype), shape=(size,), dimension=0)


def broadcasted_iota(dtype: Any, shape: Any, dimension: int) -> Any:
    return conv.iota(dtype=dtypes.canonicalize(dtype), shape=tuple(shape), dimension=dimension)


def dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: Any = None) -> Any:
    """``lax.dot_general``: contraction over explicit contracting and batch dimensions."""
    return dot_p.dot_general(
        lhs, rhs, dimension_numbers=dot_p.normalize_dimension_numbers(dimension_numbers),
        preferred_element_type=None if preferred_element_type is None
        else dtypes.canonicalize(preferred_element_type))
