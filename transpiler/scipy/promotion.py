"""JAX's ``promote_args_inexact`` for the functions of `transpiler.scipy`: their arguments
as arrays of one floating dtype."""

from __future__ import annotations

from typing import Any

from transpiler import dtypes
from transpiler.primitives import conversions as conv
from transpiler.primitives.core import abstractify


def promote_inexact(*args: Any) -> tuple:
    """The arguments as arrays of one inexact dtype (JAX's ``promote_args_inexact``:
    integers and bools promote to the default float, complex stays complex, Python scalars
    stay weak)."""
    dtype = dtypes.promote(*[_dtype_and_weakness(a) for a in args])[0]
    if not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float()
    return tuple([as_dtype(a, dtype) for a in args])


def _dtype_and_weakness(x: Any) -> tuple:
    aval = abstractify(x)
    return aval.dtype, aval.weak_type


def as_dtype(x: Any, dtype: Any) -> Any:
    """`x` converted to `dtype`. A function whose arguments do not all have derivatives
    (betainc's a and b) converts each with this, its dtype from the static
    ``dtypes.to_inexact(jnp.result_type(...))``: unpacking ``a, x = promote_inexact(a, x)``
    would make each depend on the other, so differentiating one would differentiate both.
    (convert_element_type, not jnp.asarray: a differentiated NumPy scalar would reach
    NumPy's conversion, which reverse mode can only trace.)"""
    return conv.convert_element_type(x, dtype=dtype)
