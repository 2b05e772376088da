"""Helpers shared by the linear-algebra primitives of `transpiler.lax.linalg`: checks,
batched matrix products over leading dimensions, dynamic windows, the eager float32
fallback for half types, the never-unrolled column loop, and the batching rule they all
use (the primitives already map over leading dimensions)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from transpiler import dtypes
from transpiler.lax.loops import fori_loop
from transpiler.numpy.creation import asarray, astype
from transpiler.primitives import conversions as conv
from transpiler.primitives import core
from transpiler.primitives import dot as dot_p
from transpiler.primitives import elementwise as ew
from transpiler.primitives import indexing as idx_p
from transpiler.primitives import shape as sp
from transpiler.primitives.core import ShapedArray, abstractify, dtype_error, shape_error


def check_square(name: str, a: ShapedArray) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise shape_error(f"{name}: expected a square matrix (or a batch of them, shape "
                          f"(..., n, n)), got shape {list(a.shape)}")
    if not dtypes.is_float(a.dtype):
        raise dtype_error(f"{name}: expected a floating-point matrix, got {a.dtype}",
                          "convert it with .astype(jnp.float32) first")


def matmul(x: Any, y: Any) -> Any:
    """``x @ y`` over leading batch dimensions (both of rank r >= 2, same batch shape)."""
    ndim = abstractify(x).ndim
    batch = tuple(range(ndim - 2))
    return dot_p.dot_general(x, y, dimension_numbers=(((ndim - 1,), (ndim - 2,)),
                                                      (batch, batch)),
                             preferred_element_type=None)


def swap_last(x: Any) -> Any:
    ndim = abstractify(x).ndim
    return sp.transpose(x, permutation=(*range(ndim - 2), ndim - 1, ndim - 2))


def window(x: Any, starts: list, sizes: list) -> Any:
    return idx_p.dynamic_slice(x, *starts, slice_sizes=tuple(sizes))


def index_grid(n: int, axis: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = n
    return np.arange(n, dtype=np.int32).reshape(shape)


def in_float32(impl: Any) -> Any:
    """An eager rule run in float32 for half types (NumPy's LAPACK has none), the result
    cast back."""
    def run(*args: np.ndarray, **params: Any) -> np.ndarray:
        dtype = args[0].dtype
        if dtype.itemsize >= 4:
            return impl(*args, **params)
        wide = [x.astype(np.float32) if x.dtype == dtype else x for x in args]
        return impl(*wide, **params).astype(dtype)
    return run


def column_loop(n: int, body: Any, init: Any) -> Any:
    """``fori_loop(0, n, body, init)``, never unrolled: its start is a traced value (an
    optimization barrier). Unrolling probes the body first, and two chained substitution
    loops of 16 or more steps then failed in IREE 3.13 with "operand does not dominate this
    use" (not understood yet); each step is a matrix-vector product anyway, too large for
    unrolling to pay."""
    start = conv.optimization_barrier(conv.convert_element_type(np.asarray(0, np.int32),
                                                                dtype=dtypes.int32))
    return fori_loop(start, n, body, init)



def symmetrized(x: Any) -> Any:
    half = conv.convert_element_type(np.asarray(0.5, abstractify(x).dtype),
                                     dtype=abstractify(x).dtype)
    return ew.multiply(ew.add(x, swap_last(x)), half)


def traced_once(name: str, compute: Callable[[Any], Any], a: Any) -> Any:
    """``compute(a)``, staged once per trace and operand: two primitives reading one
    factorization (slogdet's sign and log|det|, eigh's vectors and values) share its
    loop. (Two identical loops also broke IREE 3.13: it merged them and then returned one
    buffer twice.) Eagerly, ``compute(a)``."""
    memo = getattr(core.trace_stack[-1], "memo", None) if core.trace_stack else None
    if memo is None:
        return compute(a)
    key = (f"lax.linalg.{name}", id(a))
    if key not in memo:
        memo[key] = (compute(a), (a,))  # (the operand pins its id)
    return memo[key][0]


def as_float_matrix(x: Any, name: str) -> Any:
    """`x` as an array of matrices ``(..., m, n)`` (integers converted to the default float,
    as JAX's `jnp.linalg` does)."""
    x = asarray(x)
    aval = abstractify(x, 0, name)
    if aval.ndim < 2:
        raise shape_error(f"{name}: expected a matrix (or a batch of them, shape (..., m, n)), "
                          f"got shape {list(aval.shape)}")
    if not dtypes.is_float(aval.dtype):
        if aval.dtype.kind == "c":
            raise dtype_error(f"{name}: complex matrices are not supported yet")
        x = astype(x, dtypes.default_float())
    return x


def widened(x: Any) -> Any:
    """`x` in float32 when it is a half type: the factorizations' loops need its range and
    precision (NumPy's LAPACK has no half types either)."""
    if abstractify(x).dtype.itemsize < 4:
        return conv.convert_element_type(x, dtype=np.dtype(np.float32))
    return x


def narrowed(y: Any, like: Any) -> Any:
    """`y` back in the dtype of `like` (undoes `widened`)."""
    dtype = abstractify(like).dtype
    return y if abstractify(y).dtype == dtype else conv.convert_element_type(y, dtype=dtype)
