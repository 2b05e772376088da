"""``transpiler.numpy.linalg``: norms, and the factorizations and solvers of
`transpiler.lax.linalg` with NumPy's signatures (cholesky, solve, inv, det, slogdet,
matrix_power, eigh, eigvalsh, eig, eigvals, svd, svdvals, qr, pinv, lstsq, matrix_rank,
cond). Every function but `lstsq` (2-d, as in JAX) maps over leading batch dimensions.

``norm`` follows NumPy: vector norms for ``ord`` in ``None/2, 1, inf, -inf, 0`` or any
number p; matrix norms for ``None/'fro', 1, -1, inf, -inf, 2, -2, 'nuc'`` (the last three
from the singular values). Integer and boolean inputs give the default float, like JAX.
"""

from __future__ import annotations

import builtins
from typing import Any, NamedTuple, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import asarray, astype, identity
from transpiler.numpy.differences import cross as cross_product
from transpiler.numpy.matrices import diagonal as diagonal_of
from transpiler.numpy.complex_numbers import conj, real
from transpiler.numpy.math import abs, exp, isnan, multiply, not_equal, power, sqrt, where
from transpiler.numpy.reductions import any as any_
from transpiler.numpy.reductions import max, min, sum
from transpiler.numpy.shape import broadcast_to, expand_dims, moveaxis, reshape, swapaxes
from transpiler.primitives import core
from transpiler.primitives.core import abstractify, normalize_axes, normalize_axis, shape_error
from transpiler.primitives.core import broadcast_shapes as core_broadcast
from transpiler.numpy.products import matmul, outer, tensordot, trace
from transpiler.lax import linalg as la

__all__ = ["cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh",
           "inv", "lstsq",
           "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose",
           "multi_dot", "norm", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals",
           "tensordot", "tensorinv", "tensorsolve", "trace", "vecdot", "vector_norm"]


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
        s = la.svd(moveaxis(x, (row, col), (-2, -1)), compute_uv=False)
        value = sum(s, axis=-1) if ord == "nuc" else (max if ord == 2 else min)(s, axis=-1)
        return expand_dims(value, tuple(sorted((row, col))))
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


# --- eigenvalues, singular values, QR -------------------------------------------------------

class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


def _uplo_lower(UPLO: Any, op: str) -> bool:
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"{op}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO != "U"


def eigh(a: Any, UPLO: Any = None, symmetrize_input: bool = True) -> EighResult:
    """``jnp.linalg.eigh``: (ascending eigenvalues, eigenvectors as columns) of each
    symmetric matrix; with ``symmetrize_input=False`` only the `UPLO` triangle is read."""
    a = _square(a, "eigh")
    v, w = la.eigh(a, lower=_uplo_lower(UPLO, "eigh"), symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a: Any, UPLO: Any = "L", *, symmetrize_input: bool = True) -> Any:
    """``jnp.linalg.eigvalsh``: the ascending eigenvalues of each symmetric matrix."""
    return eigh(a, UPLO, symmetrize_input).eigenvalues


class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


def eig(a: Any) -> EigResult:
    """``jnp.linalg.eig``: (eigenvalues, right eigenvectors as columns) of each general
    matrix, complex, in LAPACK's order and normalization (unit norm, largest component
    real); computed by LAPACK on the host, as JAX does on CPU. The eigenvalues are
    differentiable, the eigenvectors are not (JAX's rule: see `lax.linalg.eig`)."""
    w, v = la.eig(_square(a, "eig"), compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a: Any) -> Any:
    """``jnp.linalg.eigvals``: the (complex) eigenvalues of each general matrix."""
    return la.eig(_square(a, "eigvals"), compute_left_eigenvectors=False,
                  compute_right_eigenvectors=False)[0]


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: Any = None) -> Any:
    """``jnp.linalg.svd``: ``(U, S, Vh)`` with ``a == U @ diag(S) @ Vh`` for each matrix
    (singular values descending), or only ``S`` without `compute_uv`. `hermitian` is
    accepted and ignored (the general algorithm gives the same answer)."""
    a = _as_inexact(asarray(a), "svd")
    out = la.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                 subset_by_index=subset_by_index)
    return SVDResult(*out) if compute_uv else out


def svdvals(x: Any, /) -> Any:
    """``jnp.linalg.svdvals``: the descending singular values of each matrix."""
    return svd(x, compute_uv=False)


def qr(a: Any, mode: str = "reduced") -> Any:
    """``jnp.linalg.qr``: ``(Q, R)`` for `mode` ``'reduced'`` (``Q`` of ``(m, min(m, n))``)
    or ``'complete'`` (``(m, m)``), or only ``R`` for ``'r'``."""
    if mode not in ("reduced", "complete", "r"):
        if mode == "raw":
            raise located(NotImplementedError, "qr: mode='raw' (LAPACK's Householder vectors) is "
                          "not supported; use 'reduced', 'complete' or 'r'")
        raise ValueError(f"qr: unsupported mode {mode!r}; expected 'reduced', 'complete' or "
                         f"'r'")
    q, r = la.qr(_as_inexact(asarray(a), "qr"), full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def _eps(x: Any) -> float:
    return builtins.float(np.finfo(abstractify(x).dtype).eps)


def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Any:
    """``jnp.linalg.pinv``: the Moore-Penrose pseudo-inverse of each matrix, from its SVD;
    singular values at most ``rtol`` times the largest count as zero (default
    ``10 max(m, n) eps``)."""
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: only one of rtol and rcond may be specified")
        rtol = rcond
    a = _as_inexact(asarray(a), "pinv")
    m, n = abstractify(a).shape[-2:]
    if rtol is None:
        rtol = 10.0 * builtins.max(m, n) * _eps(a)
    u, s, vh = la.svd(a, full_matrices=False)
    cutoff = multiply(expand_dims(asarray(rtol, dtype=abstractify(s).dtype), -1),
                      s[..., 0:1])
    keep = s > cutoff
    inverse = where(keep, 1 / where(keep, s, 1), 0)
    return matmul(swapaxes(vh, -1, -2) * expand_dims(inverse, -2), swapaxes(u, -1, -2))


def matrix_rank(M: Any, rtol: Any = None, *, hermitian: bool = False, tol: Any = None) -> Any:
    """``jnp.linalg.matrix_rank``: the number of singular values above ``rtol`` (default
    ``max(s) max(m, n) eps``) of each matrix; for a vector, 1 unless it is all zeros."""
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified")
        rtol = tol
    M = _as_inexact(asarray(M), "matrix_rank")
    if abstractify(M).ndim < 2:
        return astype(any_(not_equal(M, 0)), dtypes.int32)
    s = svd(M, full_matrices=False, compute_uv=False)
    if rtol is None:
        rtol = max(s, axis=-1) * (builtins.max(abstractify(M).shape[-2:]) * _eps(s))
    return sum(s > expand_dims(asarray(rtol), -1), axis=-1)


def cond(x: Any, p: Any = None) -> Any:
    """``jnp.linalg.cond``: the condition number of each matrix in the norm `p` (the ratio
    of its extreme singular values for None, 2 and -2; inf where it is singular)."""
    x = _as_inexact(asarray(x), "cond")
    shape = abstractify(x).shape
    if len(shape) < 2:
        raise shape_error(f"cond: input array must be at least 2D; got shape {list(shape)}")
    if p is None or p == 2 or p == -2:
        s = svd(x, compute_uv=False)
        return s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    if shape[-1] != shape[-2]:
        raise shape_error(f"cond: for p={p!r} the matrix must be square; got shape "
                          f"{list(shape)}")
    r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
    return where(isnan(r) & ~any_(isnan(x), axis=(-2, -1)), np.inf, r)


def lstsq(a: Any, b: Any, rcond: Any = None, *, numpy_resid: bool = False) -> tuple:
    """``jnp.linalg.lstsq``: (`x` minimizing ``|a x - b|``, squared residuals per column,
    rank, singular values) for a 2-d `a` and a 1-d or 2-d `b`, through the SVD with
    singular values below ``rcond * max(s)`` dropped (default ``eps max(m, n)``)."""
    a = _as_inexact(asarray(a), "lstsq")
    b = asarray(b)
    dtype = dtypes.promote((abstractify(a).dtype, False), (abstractify(b).dtype,
                                                          abstractify(b).weak_type))[0]
    a, b = astype(a, dtype), astype(b, dtype)
    a_shape, b_shape = abstractify(a).shape, abstractify(b).shape
    if len(a_shape) != 2:
        raise TypeError(f"lstsq: {len(a_shape)}-dimensional array given; a must be 2-d")
    if len(b_shape) not in (1, 2):
        raise TypeError(f"lstsq: {len(b_shape)}-dimensional array given; b must be 1-d or 2-d")
    if a_shape[0] != b_shape[0]:
        raise shape_error(f"lstsq: a of shape {list(a_shape)} and b of shape {list(b_shape)} "
                          "need the same number of rows")
    vector = len(b_shape) == 1
    if vector:
        b = reshape(b, (b_shape[0], 1))
    m, n = a_shape
    if rcond is None:
        rcond = _eps(a) * builtins.max(m, n)
    u, s, vh = la.svd(a, full_matrices=False)
    keep = (s > 0) & (s >= asarray(rcond, dtype=dtype) * s[0])
    rank = sum(keep)
    inverse = where(keep, 1 / where(keep, s, 1), 0)
    x = matmul(swapaxes(vh, -1, -2), expand_dims(inverse, -1) * matmul(swapaxes(u, -1, -2), b))
    resid = sum((b - matmul(a, x)) ** 2, axis=0)
    if numpy_resid:
        if core.trace_stack:
            raise TypeError("lstsq: numpy_resid=True needs the rank as a Python value, which "
                            "is not known under jit; call it outside jit")
        if builtins.int(np.asarray(rank)) < n or m <= n:
            resid = asarray(np.zeros(0, dtype))
    return (reshape(x, (n,)) if vector else x), resid, rank, s


# --- the array API's and NumPy's small linalg functions ------------------------------------

def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """``linalg.cross``: the cross product of 3-vectors along `axis`."""
    for x in (x1, x2):
        shape = abstractify(x, 0, "linalg.cross").shape
        if not shape or shape[normalize_axis(axis, len(shape), "linalg.cross")] != 3:
            raise shape_error(f"linalg.cross: both inputs need size 3 along axis {axis}, got "
                              f"shapes {abstractify(x1).shape} and {abstractify(x2).shape}")
    return cross_product(x1, x2, axis=axis)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """``linalg.diagonal``: the diagonal of the last two axes."""
    if abstractify(x, 0, "linalg.diagonal").ndim < 2:
        raise shape_error("linalg.diagonal: needs at least 2 dimensions, got "
                          f"{abstractify(x).shape}")
    return diagonal_of(x, offset, axis1=-2, axis2=-1)


def matrix_transpose(x: Any, /) -> Any:
    """``linalg.matrix_transpose``: the last two axes swapped."""
    if abstractify(x, 0, "linalg.matrix_transpose").ndim < 2:
        raise shape_error("linalg.matrix_transpose: needs at least 2 dimensions, got "
                          f"{abstractify(x).shape}")
    return swapaxes(x, -1, -2)


def multi_dot(arrays: Sequence[Any], *, precision: Any = None) -> Any:
    """``linalg.multi_dot``: the product of the matrices, left to right (a 1-d first
    array is a row, a 1-d last one a column, as in NumPy)."""
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError(f"linalg.multi_dot: needs at least 2 arrays, got {len(arrays)}")
    ndims = [abstractify(a, i, "linalg.multi_dot").ndim for i, a in enumerate(arrays)]
    if builtins.any(n != 2 for n in ndims[1:-1]) or ndims[0] not in (1, 2) \
            or ndims[-1] not in (1, 2):
        raise shape_error(f"linalg.multi_dot: the arrays must be 2-d (1-d at the ends), got "
                          f"ranks {ndims}")
    out = arrays[0]
    for a in arrays[1:]:
        out = matmul(out, a)
    return out


def tensorinv(a: Any, ind: int = 2) -> Any:
    """``linalg.tensorinv``: the inverse of `a` as a map from its first `ind` axes to the
    rest."""
    shape = abstractify(a, 0, "linalg.tensorinv").shape
    if not isinstance(ind, int) or ind <= 0:
        raise ValueError(f"linalg.tensorinv: ind must be a positive integer, got {ind!r}")
    rows, cols = int(np.prod(shape[:ind])), int(np.prod(shape[ind:]))
    if rows != cols:
        raise shape_error(f"linalg.tensorinv: the first {ind} axes of {shape} hold {rows} "
                          f"elements and the rest {cols}; they must be equal")
    return reshape(inv(reshape(a, (rows, cols))), (*shape[ind:], *shape[:ind]))


def tensorsolve(a: Any, b: Any, axes: Any = None) -> Any:
    """``linalg.tensorsolve``: `x` with ``tensordot(a, x, x.ndim) == b``."""
    a_shape = abstractify(a, 0, "linalg.tensorsolve").shape
    if axes is not None:
        axes = normalize_axes(axes, len(a_shape), "linalg.tensorsolve")
        a = moveaxis(a, axes, tuple(range(len(a_shape) - len(axes), len(a_shape))))
        a_shape = abstractify(a).shape
    b_shape = abstractify(b, 1, "linalg.tensorsolve").shape
    out_shape = a_shape[len(b_shape):]
    rows, cols = int(np.prod(b_shape)), int(np.prod(out_shape))
    if a_shape[:len(b_shape)] != b_shape or rows != cols:
        raise shape_error(f"linalg.tensorsolve: a {a_shape} must start with b's shape "
                          f"{b_shape} and be square as a matrix ({rows} x {cols})")
    return reshape(solve(reshape(a, (rows, cols)), reshape(b, (rows,))), out_shape)
