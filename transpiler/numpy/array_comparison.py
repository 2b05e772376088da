"""Whole-array comparisons: array_equal (same shape and elements) and array_equiv
(elements equal after broadcasting). Both give a boolean array scalar, as in JAX."""

from __future__ import annotations

from typing import Any

from transpiler.numpy.creation import asarray
from transpiler.numpy.math import equal, isnan, logical_and, logical_or
from transpiler.numpy.reductions import all as all_
from transpiler.primitives.core import broadcast_shapes

__all__ = ["array_equal", "array_equiv"]


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    """Whether `a1` and `a2` have one shape and equal elements (NaNs equal with
    `equal_nan`)."""
    try:
        a1, a2 = asarray(a1), asarray(a2)
    except TypeError:
        return asarray(False)
    if a1.shape != a2.shape:
        return asarray(False)
    eq = equal(a1, a2)
    if equal_nan:
        eq = logical_or(eq, logical_and(isnan(a1), isnan(a2)))
    return all_(eq)


def array_equiv(a1: Any, a2: Any) -> Any:
    """Whether `a1` and `a2` broadcast together with equal elements."""
    try:
        a1, a2 = asarray(a1), asarray(a2)
        broadcast_shapes("array_equiv", a1.shape, a2.shape)
    except (TypeError, ValueError):
        return asarray(False)
    return all_(equal(a1, a2))
