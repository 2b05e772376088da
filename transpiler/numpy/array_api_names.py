"""The Python array API standard's names for what NumPy spells otherwise (acos, concat,
permute_dims, bitwise_left_shift ...), its new functions (matrix_transpose, unstack), and
the type queries around arrays and dtypes: ndarray, isdtype, can_cast, isscalar, iterable.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.array_methods import ArrayMethods
from transpiler.numpy.creation import array
from transpiler.numpy.joining import concatenate
from transpiler.numpy.math import (arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh,
                                   invert, left_shift, right_shift)
from transpiler.numpy.shape import _as_array, _slice_axis, reshape, swapaxes, transpose
from transpiler.primitives import core
from transpiler.primitives.core import abstractify, normalize_axis

__all__ = ["acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_invert",
           "bitwise_left_shift", "bitwise_right_shift", "can_cast", "concat", "copy",
           "isdtype", "isscalar", "iterable", "matrix_transpose", "ndarray", "permute_dims",
           "unstack"]

acos, acosh, asin, asinh = arccos, arccosh, arcsin, arcsinh
atan, atan2, atanh = arctan, arctan2, arctanh
bitwise_invert, bitwise_left_shift, bitwise_right_shift = invert, left_shift, right_shift


class _ArrayType(type):
    """Makes ``isinstance(x, jnp.ndarray)`` true for every array this library hands out:
    eager `Array`s, `jit`'s `DeviceArray`s and the tracers of `jit` and the transforms
    (all of them have the array methods, or are tracers)."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, (ArrayMethods, core.Tracer))

    def __subclasscheck__(cls, subclass: type) -> bool:
        return subclass is cls or issubclass(subclass, (ArrayMethods, core.Tracer))


class Array(metaclass=_ArrayType):
    """``jax.Array`` (``jnp.ndarray``): the type of arrays, for ``isinstance`` checks and
    annotations -- eager arrays, jit's device arrays and tracers; it is not instantiated."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("jax.Array cannot be instantiated; use jnp.array or jnp.asarray")


ndarray = Array


def concat(arrays: Sequence[Any], /, *, axis: Optional[int] = 0) -> Any:
    """``concatenate`` under the array API's name."""
    return concatenate(arrays, axis=axis)


def permute_dims(a: Any, /, axes: tuple[int, ...]) -> Any:
    """``transpose`` under the array API's name (`axes` is required)."""
    return transpose(a, axes)


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes (a stack of matrices transposed)."""
    ndim = abstractify(x, 0, "matrix_transpose").ndim
    if ndim < 2:
        raise ValueError(f"x must be at least two-dimensional for matrix_transpose; "
                         f"got ndim={ndim}")
    return swapaxes(x, -1, -2)


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """The slices of `x` along `axis`, as a tuple."""
    x = _as_array(x)
    shape = abstractify(x, 0, "unstack").shape
    if not shape:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was "
                         "passed.")
    axis = normalize_axis(int(axis), len(shape), "unstack")
    rest = shape[:axis] + shape[axis + 1:]
    return tuple(reshape(_slice_axis(x, axis, i, i + 1), rest) for i in range(shape[axis]))


def copy(a: Any, order: Optional[str] = None) -> Any:
    """A copy of `a` (arrays are immutable, so this is `array`)."""
    return array(a, copy=True, order=order)


_KINDS = {
    "bool": lambda d: d == dtypes.bool_,
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": dtypes.is_float,
    "complex floating": dtypes.is_complex,
    "numeric": lambda d: d.kind in "iu" or dtypes.is_inexact(d),
}


def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether `dtype` is of `kind`: one of the array API's kind names ("bool",
    "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
    "numeric"), a dtype, or a tuple of them."""
    dtype = np.dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str) and k in _KINDS:
            if _KINDS[k](dtype):
                return True
            continue
        try:
            wanted = np.dtype(k)
        except TypeError:
            raise ValueError(f"Unrecognized kind={k!r} expected one of {list(_KINDS)}, or a "
                             "compatible input for jnp.dtype()") from None
        if dtype == wanted:
            return True
    return False


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    """NumPy's casting rules between dtypes (an array stands for its dtype; Python scalars
    are a TypeError, as in NumPy 2)."""
    if hasattr(from_, "dtype") and not isinstance(from_, (type, np.dtype, str)):
        from_ = from_.dtype
    return bool(np.can_cast(from_, to, casting=casting))  # type: ignore[arg-type]


def isscalar(element: Any) -> bool:
    """True for Python and NumPy scalars and for 0-d arrays (JAX's rule, broader than
    NumPy's)."""
    if np.isscalar(element):
        return True
    if isinstance(element, (np.ndarray, ndarray)):
        return bool(getattr(element, "ndim") == 0)
    return False


def iterable(y: Any) -> bool:
    """Whether ``iter(y)`` works."""
    return bool(np.iterable(y))
