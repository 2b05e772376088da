"""``transpiler.numpy.linalg``: norms, and the factorizations and solvers of
`transpiler.lax.linalg` with NumPy's signatures (cholesky, solve, inv, det, slogdet,
matrix_power). Every function maps over leading batch dimensions.

``norm`` follows NumPy: vector norms for ``ord`` in ``None/2, 1, inf, -inf, 0`` or any
number p; matrix norms for ``None/'fro', 1, -1, inf, -inf``. Integer and boolean inputs
give the default float, like JAX. Norms needing an SVD (``'nuc'``, ``2``, ``-2`` on
matrices) raise NotImplementedError.
"""

from __future__ import annotations

import builtins
from typing import Any, NamedTuple, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.numpy.creation import asarray, astype, identity
from transpiler.numpy.math import abs, conj, exp, multiply, not_equal, power, real, sqrt
from transpiler.numpy.reductions import max, min, sum
from transpiler.numpy.shape import broadcast_to, reshape, swapaxes
from transpiler.primitives.core import abstractify, normalize_axes, normalize_axis, shape_error
from transpiler.primitives.core import broadcast_shapes as core_broadcast
from transpiler.numpy.products import matmul, outer, tensordot, trace
from transpiler.lax import linalg as la

__all__ = ["cholesky", "det", "inv", "matmul", "matrix_norm", "matrix_power", "norm",
           "outer", "slogdet", "solve", "tensordot", "trace", "vecdot", "vector_norm"]


def _as_inexact(x: Any, op: str) -> Any:
    aval = abstractify(x, 0, op)
    if dtypes.is_float(aval.dtype) or aval.dtype.kind == "c":
        return x
    return astype(x, dtypes.default_float())


def _abs_squared(x: Any) -> Any:
    if abstractify(x).dtype.kind == "c":
        return real(multiply(x, conj(x)))
    return multiply(x, x)


def _vector_norm(x: Any, ord: Any, axes: tuple[int, ...]) -> Any:
    """The vector norm over `axes`, keeping them as size-1 dimensions."""
    if ord is None or ord == 2:
        return sqrt(sum(_abs_squared(x), axis=axes, keepdims=True))
    if ord == np.inf:
        return max(abs(x), axis=axes, keepdims=True)
    if ord == -np.inf:
        return min(abs(x), axis=axes, keepdims=True)
    if ord == 0:
        dtype = abstractify(x).dtype
        count = astype(not_equal(x, 0), dtype if dtype.kind != "c" else dtypes.default_float())
        return sum(count, axis=axes, keepdims=True)
    if ord == 1:
        return sum(abs(x), axis=axes, keepdims=True)
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
    p = builtins.float(ord)
    return power(sum(power(abs(x), p), axis=axes, keepdims=True), 1.0 / p)


def _matrix_norm(x: Any, ord: Any, row: int, col: int) -> Any:
    """The matrix norm over axes (`row`, `col`), keeping them as size-1 dimensions."""
    if ord is None or ord == "fro":
        return sqrt(sum(_abs_squared(x), axis=(row, col), keepdims=True))
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(f"norm: ord={ord!r} needs singular values (an SVD), which "
                                  "is not implemented yet")
    if ord in (1, -1):  # max/min over columns of the column sums
        column_sums = sum(abs(x), axis=row, keepdims=True)
        return (max if ord == 1 else min)(column_sums, axis=col, keepdims=True)
    if ord in (np.inf, -np.inf):  # max/min over rows of the row sums
        row_sums = sum(abs(x), axis=col, keepdims=True)
        return (max if ord == np.inf else min)(row_sums, axis=row, keepdims=True)
    raise ValueError(f"norm: invalid norm order {ord!r} for matrices")


def _drop_axes(x: Any, axes: Sequence[int], keepdims: bool) -> Any:
    if keepdims:
        return x
    shape = abstractify(x).shape
    return reshape(x, tuple(d for i, d in enumerate(shape) if i not in axes))


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """Matrix or vector norm with NumPy's choice between them (see the module docstring)."""
    x = _as_inexact(x, "norm")
    ndim = abstractify(x).ndim
    if axis is None:
        if ord is None:  # the 2-norm of the flattened array, any rank
            axes = tuple(range(ndim))
            return _drop_axes(_vector_norm(x, None, axes), axes, keepdims)
        if ndim not in (1, 2):
            raise shape_error(f"norm: ord={ord!r} with axis=None needs a 1-d or 2-d array, got "
                              f"rank {ndim}", "pass axis= to pick the vector or matrix axes")
        axis = tuple(range(ndim))
    if isinstance(axis, (builtins.int, np.integer)):
        axis = (builtins.int(axis),)
    axes = tuple(normalize_axis(builtins.int(a), ndim, "norm") for a in axis)
    if len(set(axes)) != len(axes):
        raise shape_error(f"norm: repeated axis in {tuple(axis)}")
    if len(axes) == 1:
        return _drop_axes(_vector_norm(x, ord, axes), axes, keepdims)
    if len(axes) == 2:
        return _drop_axes(_matrix_norm(x, ord, axes[0], axes[1]), axes, keepdims)
    raise shape_error(f"norm: axis must name 1 or 2 axes, got {tuple(axis)}")


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """The vector norm over `axis` (all axes when None, any number of them)."""
    x = _as_inexact(x, "vector_norm")
    axes = normalize_axes(axis, abstractify(x).ndim, "vector_norm")
    return _drop_axes(_vector_norm(x, ord, axes), axes, keepdims)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """The matrix norm over the last two axes."""
    x = _as_inexact(x, "matrix_norm")
    ndim = abstractify(x).ndim
    if ndim < 2:
        raise shape_error(f"matrix_norm: needs an array of rank >= 2, got rank {ndim}")
    axes = (ndim - 2, ndim - 1)
    return _drop_axes(_matrix_norm(x, ord, *axes), axes, keepdims)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Dot product over `axis`, broadcasting the other axes (conjugating `x1`)."""
    return sum(multiply(conj(x1), x2), axis=axis)


# --- factorizations and solvers -------------------------------------------------------------

def _square(a: Any, op: str) -> Any:
    a = _as_inexact(asarray(a), op)
    shape = abstractify(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise shape_error(f"{op}: expected a square matrix or a stack of them (shape (..., n, "
                          f"n)), got shape {list(shape)}")
    return a


def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    """``jnp.linalg.cholesky``: the lower factor ``L`` (``L @ L^T == a``), or the upper one
    ``U = L^T`` with `upper`; NaN where `a` is not positive definite."""
    factor = la.cholesky(_square(a, "cholesky"), symmetrize_input=symmetrize_input)
    return swapaxes(factor, -1, -2) if upper else factor


def solve(a: Any, b: Any) -> Any:
    """``jnp.linalg.solve``: `x` with ``a @ x == b``. A 1-d `b` is one right-hand side;
    otherwise `b` is a stack of matrices ``(..., n, k)`` (NumPy 2's rule), broadcast
    against `a`'s batch dimensions."""
    a = _square(a, "solve")
    b = asarray(b)
    dtype = dtypes.promote((abstractify(a).dtype, False), (abstractify(b).dtype,
                                                          abstractify(b).weak_type))[0]
    a, b = astype(a, dtype), astype(b, dtype)
    a_shape, b_shape = abstractify(a).shape, abstractify(b).shape
    n = a_shape[-1]
    vector = len(b_shape) == 1
    if vector:
        if b_shape[0] != n:
            raise shape_error(f"solve: b of shape {list(b_shape)} does not match a of shape "
                              f"{list(a_shape)}")
        b = reshape(b, (n, 1))
        b_shape = (n, 1)
    if b_shape[-2] != n:
        raise shape_error(f"solve: b of shape {list(b_shape)} needs {n} rows for a of shape "
                          f"{list(a_shape)}")
    lead = core_broadcast("solve", a_shape[:-2], b_shape[:-2])
    a = broadcast_to(a, (*lead, n, n))
    b = broadcast_to(b, (*lead, *b_shape[-2:]))
    x = la.linear_solve(a, b)
    return reshape(x, (*lead, n)) if vector else x


def inv(a: Any) -> Any:
    """``jnp.linalg.inv``: the inverse of each matrix (inf/NaN where singular)."""
    a = _square(a, "inv")
    shape = abstractify(a).shape
    eye = broadcast_to(identity(shape[-1], abstractify(a).dtype), shape)
    return la.linear_solve(a, eye)


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


def slogdet(a: Any, *, method: Any = None) -> SlogdetResult:
    """``jnp.linalg.slogdet``: (sign, log|det|) of each matrix, from its LU factors (sign 0
    and -inf when singular)."""
    a = _square(a, "slogdet")
    return SlogdetResult(la.det_sign(a), la.logabsdet(a))


def det(a: Any) -> Any:
    """``jnp.linalg.det``: ``sign * exp(log|det|)`` of each matrix (0 when singular)."""
    a = _square(a, "det")
    return multiply(la.det_sign(a), exp(la.logabsdet(a)))


def matrix_power(a: Any, n: int) -> Any:
    """``jnp.linalg.matrix_power``: `a` multiplied by itself `n` times by repeated squaring
    (the identity for 0, powers of the inverse for negative `n`)."""
    if not isinstance(n, (builtins.int, np.integer)) or isinstance(n, builtins.bool):
        raise TypeError(f"matrix_power: the exponent must be a static int, got {n!r}")
    a = asarray(a)
    shape = abstractify(a, 0, "matrix_power").shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise shape_error(f"matrix_power: expected a square matrix or a stack of them, got "
                          f"shape {list(shape)}")
    if n == 0:
        return broadcast_to(identity(shape[-1], abstractify(a).dtype), shape)
    if n < 0:
        a, n = inv(a), -n
    result = None
    square = a
    while n:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if n:
            square = matmul(square, square)
    return result
