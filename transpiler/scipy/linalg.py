"""``jax.scipy.linalg``: SciPy's linear-algebra signatures over `transpiler.lax.linalg`
(Cholesky, triangular solves, LU, QR, eigh, SVD) and `transpiler.numpy.linalg`; batched over leading
dimensions like JAX's."""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.errors import located
from transpiler.lax.loops import fori_loop
from transpiler.lax import linalg as la
from transpiler.numpy.linalg import det, inv  # noqa: F401  (re-exported)
from transpiler.numpy import linalg as jla
from transpiler.scipy.matrix_functions import (  # noqa: F401  (re-exported)
    funm, polar, solve_sylvester, sqrtm)
from transpiler.scipy.special_matrices import (  # noqa: F401  (re-exported)
    circulant, companion, convolution_matrix, dft, fiedler, fiedler_companion, hadamard, hankel,
    helmert, hilbert, invhilbert, invpascal, leslie, pascal, toeplitz)

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh",
           "eigh_tridiagonal", "expm", "expm_frechet", "funm", "inv", "lu", "lu_factor",
           "lu_solve", "polar", "qr", "qr_multiply", "solve", "solve_sylvester",
           "solve_triangular", "sqrtm", "svd", "circulant",
           "companion", "convolution_matrix", "dft", "fiedler", "fiedler_companion",
           "hadamard", "hankel", "helmert", "hilbert", "invhilbert", "invpascal", "leslie",
           "pascal", "toeplitz"]


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Any:
    """The Cholesky factor: upper (``U^T @ U == a``) unless `lower`."""
    return jla.cholesky(a, upper=not lower)


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Any, bool]:
    """(the Cholesky factor, `lower`): the input of `cho_solve`."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:
    """`x` with ``a @ x == b`` from ``cho_factor(a)``; `b` a vector or ``(..., n, k)``."""
    c, lower = c_and_lower
    c, b = jnp.asarray(c), jnp.asarray(b)
    vector = b.ndim == 1
    rhs = b[:, None] if vector else b
    lead = c.shape[:-2]
    rhs = jnp.broadcast_to(rhs, (*lead, *rhs.shape[-2:])) if rhs.ndim < c.ndim else rhs
    # a = L L^T: solve L y = b, then L^T x = y (with U = L^T when upper).
    y = la.triangular_solve(c, rhs, left_side=True, lower=lower, transpose_a=not lower)
    x = la.triangular_solve(c, y, left_side=True, lower=lower, transpose_a=lower)
    return x[..., 0] if vector else x


def solve_triangular(a: Any, b: Any, trans: Any = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False,
                     debug: Any = None, check_finite: bool = True) -> Any:
    """`x` with ``op(a) @ x == b``: ``op`` is the identity for ``trans`` 0 / 'N', the
    transpose for 1 / 'T' (and 2 / 'C', real matrices); `b` a vector or ``(..., n, k)``."""
    if trans not in (0, 1, 2, "N", "T", "C"):
        raise ValueError(f"solve_triangular: invalid trans={trans!r}")
    a, b = jnp.asarray(a), jnp.asarray(b)
    vector = b.ndim == a.ndim - 1
    rhs = b[..., None] if vector else b
    x = la.triangular_solve(a, rhs.astype(a.dtype), left_side=True, lower=lower,
                            transpose_a=trans in (1, 2, "T", "C"), unit_diagonal=unit_diagonal)
    return x[..., 0] if vector else x


def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False,
       check_finite: bool = True) -> Any:
    """(p, l, u) with ``a == p @ l @ u`` (or (p @ l, u) with `permute_l`)."""
    a = jnp.asarray(a)
    packed, _, perm = la.lu(a)
    n = a.shape[-1]
    eye = np.eye(n, dtype=a.dtype)
    lower = jnp.tril(packed, -1) + eye
    upper = jnp.triu(packed)
    p = jnp.swapaxes(jnp.asarray(eye)[perm], -1, -2)  # a[perm] == l @ u: p = P^T
    return (p @ lower, upper) if permute_l else (p, lower, upper)


def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, Any]:
    """(the packed factors, LAPACK-style pivots): the input of `lu_solve`."""
    packed, pivots, _ = la.lu(jnp.asarray(a))
    return packed, pivots


def _permutation_of_pivots(pivots: Any, n: int) -> Any:
    """The row permutation that LAPACK-style `pivots` (row i swapped with pivots[i], in
    order) apply."""
    perm = np.arange(n)
    pivots = np.asarray(pivots)
    if pivots.ndim != 1:
        raise located(NotImplementedError, "lu_solve: batched pivots are not supported; "
                      "use jnp.linalg.solve")
    for i, p in enumerate(pivots):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


def lu_solve(lu_and_piv: tuple[Any, Any], b: Any, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> Any:
    """`x` with ``a @ x == b`` (``a^T @ x == b`` for `trans` 1) from ``lu_factor(a)``. The
    pivots are read as concrete values."""
    packed, pivots = lu_and_piv
    packed, b = jnp.asarray(packed), jnp.asarray(b)
    n = packed.shape[-1]
    perm = _permutation_of_pivots(pivots, n)
    vector = b.ndim == 1
    rhs = b[:, None] if vector else b
    if trans == 0:
        y = la.triangular_solve(packed, rhs[perm], left_side=True, lower=True,
                                unit_diagonal=True)
        x = la.triangular_solve(packed, y, left_side=True, lower=False)
    else:  # a^T = U^T L^T P
        y = la.triangular_solve(packed, rhs, left_side=True, lower=False, transpose_a=True)
        z = la.triangular_solve(packed, y, left_side=True, lower=True, transpose_a=True,
                                unit_diagonal=True)
        x = z[np.argsort(perm)]
    return x[:, 0] if vector else x


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, debug: bool = False, check_finite: bool = True,
          assume_a: str = "gen") -> Any:
    """`x` with ``a @ x == b``; ``assume_a='pos'`` solves by Cholesky."""
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"solve: unknown assume_a={assume_a!r}")
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower=lower), b)
    return jla.solve(a, b)


def block_diag(*arrs: Any) -> Any:
    """The matrices (scalars and vectors as 1-row matrices) on the diagonal of one matrix."""
    if not arrs:
        return jnp.zeros((1, 0))
    mats = [jnp.atleast_2d(jnp.asarray(x)) for x in arrs]
    dtype = jnp.result_type(*mats)
    rows = sum(m.shape[0] for m in mats)
    cols = sum(m.shape[1] for m in mats)
    out = jnp.zeros((rows, cols), dtype)
    r = c = 0
    for m in mats:
        out = out.at[r:r + m.shape[0], c:c + m.shape[1]].set(m.astype(dtype))
        r, c = r + m.shape[0], c + m.shape[1]
    return out


def eigh(a: Any, b: Any = None, lower: bool = True, eigvals_only: bool = False,
         overwrite_a: bool = False, overwrite_b: bool = False, turbo: bool = True,
         eigvals: Any = None, type: int = 1, check_finite: bool = True) -> Any:
    """(ascending eigenvalues, eigenvectors as columns) of the symmetric `a`, reading its
    `lower` (or upper) triangle; only the eigenvalues with `eigvals_only`."""
    if b is not None:
        raise located(NotImplementedError, "eigh: the generalized problem (b=...) is not "
                      "supported yet", "reduce it to a standard one with the Cholesky factor L "
                      "of b: the eigenvectors y of L^-1 a L^-T give v = L^-T y")
    if eigvals is not None:
        raise located(NotImplementedError, "eigh: eigvals= (a subset) is not supported yet; "
                      "slice the result instead")
    w, v = jla.eigh(a, UPLO="L" if lower else "U")  # symmetrized, as JAX does
    return w if eigvals_only else (w, v)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True,
        overwrite_a: bool = False, check_finite: bool = True,
        lapack_driver: str = "gesdd") -> Any:
    """``(U, s, Vh)`` with ``a == U @ diag(s) @ Vh`` (or only ``s``)."""
    out = jla.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


def qr(a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full",
       pivoting: bool = False, check_finite: bool = True) -> Any:
    """``(Q, R)`` for `mode` ``'full'`` (square ``Q``) or ``'economic'``, ``(R,)`` for
    ``'r'``."""
    if pivoting:
        raise located(NotImplementedError, "qr: pivoting=True is not supported yet",
                      "use pivoting=False")
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"qr: unsupported mode {mode!r}; expected 'full', 'economic' or 'r'")
    q, r = la.qr(a, full_matrices=mode != "economic")
    return (r,) if mode == "r" else (q, r)


def qr_multiply(a: Any, c: Any, mode: str = "right", pivoting: bool = False,
                conjugate: bool = False, overwrite_a: bool = False,
                overwrite_c: bool = False) -> tuple[Any, Any]:
    """``(Q @ c, R)`` (`mode` ``'left'``) or ``(c @ Q, R)`` (``'right'``) with the economic
    ``a = Q R``; `c` 1-d is a column (left) or a row (right); `conjugate` uses conj(Q)."""
    if pivoting:
        raise located(NotImplementedError, "qr_multiply: pivoting=True is not supported yet",
                      "use pivoting=False")
    if mode not in ("right", "left"):
        raise located(ValueError, f"mode must be 'right' or 'left', got {mode!r}")
    a, c = jnp.asarray(a), jnp.asarray(c)
    dtype = dtypes.to_inexact(jnp.result_type(a, c))
    a, c = a.astype(dtype), c.astype(dtype)
    onedim = c.ndim == 1
    if onedim:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = a.shape[-2:]
    k = min(m, n)
    if mode == "left" and c.shape[-2] != k:
        raise located(ValueError, f"Array shapes are not compatible for Q @ c operation: a has "
                      f"shape {tuple(a.shape)} so Q has {k} columns, but c has "
                      f"{c.shape[-2]} rows (expected {k}).")
    if mode == "right" and c.shape[-1] != m:
        raise located(ValueError, f"Array shapes are not compatible for c @ Q operation: a has "
                      f"shape {tuple(a.shape)} so Q has {m} rows, but c has {c.shape[-1]} "
                      f"columns (expected {m}).")
    q, r = la.qr(a, full_matrices=False)
    if conjugate:
        q = jnp.conj(q)
    out = q @ c if mode == "left" else c @ q
    return (jnp.ravel(out) if onedim else out), r


def eigh_tridiagonal(d: Any, e: Any, *, eigvals_only: bool = False, select: str = "a",
                     select_range: Any = None, tol: Any = None, key: Any = None) -> Any:
    """The (ascending) eigenvalues, and eigenvectors as columns unless `eigvals_only`, of
    the symmetric tridiagonal matrix with diagonal `d` and off-diagonal `e`; `select`
    ``'i'`` keeps those with indices ``select_range[0] <= i <= select_range[1]``. The
    eigenvectors are `eigh`'s of the whole matrix (JAX's come from inverse iteration:
    the same up to sign)."""
    d, e = jnp.asarray(d), jnp.asarray(e)
    if d.dtype != e.dtype:
        raise located(TypeError, "diagonal and off-diagonal values must have same dtype, "
                      f"got {d.dtype} and {e.dtype}")
    if d.dtype not in (np.float32, np.float64):
        raise located(TypeError, "Only float32 and float64 inputs are supported as inputs to "
                      f"jax.scipy.linalg.eigh_tridiagonal, got {d.dtype}")
    n = d.shape[-1]
    if d.ndim != 1 or e.shape != (max(n - 1, 0),):
        raise located(ValueError, f"eigh_tridiagonal: expected a diagonal of shape (n,) and an "
                      f"off-diagonal of shape (n - 1,), got {tuple(d.shape)} and {tuple(e.shape)}")
    if select == "v":
        raise located(NotImplementedError, "Calculation of eigenvalues in a specific range "
                      "is not implemented")
    if select not in ("a", "i"):
        raise located(ValueError, f"select must be 'a', 'i' or 'v', got {select!r}")
    matrix = jnp.diag(d) + jnp.diag(e, 1) + jnp.diag(e, -1)
    w, v = jla.eigh(matrix)
    if select == "i":
        low, high = (int(i) for i in select_range)
        w, v = w[low:high + 1], v[:, low:high + 1]
    return w if eigvals_only else (w, v)


# --- the matrix exponential -------------------------------------------------------------------
# Higham's scaling and squaring (SIAM J. Matrix Anal. Appl. 26, 2005), as JAX and SciPy do:
# scale A by 2^-s until its 1-norm is below the Pade approximant's bound, take the [m/m]
# Pade approximant r(A) = q(A)^-1 p(A), square s times. JAX picks the degree m from the
# norm (3/5/7 in float32, 3/5/7/9/13 in float64) with a `switch`; here the highest degree
# always serves (equally accurate at every norm below the bound, and every operation maps
# over leading batch dimensions, where a switch per matrix would not).

_PADE7 = (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.)
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
           129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
           40840800., 960960., 16380., 182., 1.)


def _pade7(a: Any, eye: Any) -> tuple[Any, Any]:
    b = _PADE7
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    return u, v


def _pade13(a: Any, eye: Any) -> tuple[Any, Any]:
    b = _PADE13
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4
             + b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 \
        + b[0] * eye
    return u, v


def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Any:
    """The matrix exponential of each matrix in `A` (``(..., n, n)``); NaN where more than
    `max_squarings` squarings would be needed, as in JAX."""
    a = jnp.asarray(A)
    if not dtypes.is_float(a.dtype):
        a = a.astype(dtypes.default_float())
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"expm: expected a (batched) square matrix, got shape {a.shape}")
    if a.dtype not in (np.float32, np.float64):
        raise TypeError(f"expm: A.dtype={a.dtype} is not supported (float32 and float64 are)")
    wide = a.dtype == np.float64
    bound = 5.371920351148152 if wide else 3.925724783138660
    norm1 = jnp.max(jnp.sum(jnp.abs(a), axis=-2), axis=-1)
    squarings = jnp.maximum(0.0, jnp.floor(jnp.log2(norm1 / bound)))
    a = a / jnp.expand_dims(2.0 ** squarings, (-1, -2)).astype(a.dtype)
    eye = jnp.eye(a.shape[-1], dtype=a.dtype)
    u, v = _pade13(a, eye) if wide else _pade7(a, eye)
    p, q = u + v, v - u
    if upper_triangular:
        r = la.triangular_solve(q, p, left_side=True, lower=False)
    else:
        r = jla.solve(q, p)

    def square(i: Any, m: Any) -> Any:
        return jnp.where(jnp.expand_dims(i < squarings, (-1, -2)), m @ m, m)

    r = fori_loop(0, max_squarings, square, r)
    too_many = jnp.expand_dims(squarings > max_squarings, (-1, -2))
    return jnp.where(too_many, jnp.full_like(r, np.nan), r)


def expm_frechet(A: Any, E: Any, *, method: Any = None, compute_expm: bool = True) -> Any:
    """``jax.scipy.linalg.expm_frechet``: the Frechet derivative of the matrix exponential
    at `A` in direction `E` (and ``expm(A)`` first, with `compute_expm`): the upper right
    block of ``expm([[A, E], [0, A]])``, which is that derivative exactly."""
    a, e = jnp.asarray(A), jnp.asarray(E)
    if not dtypes.is_inexact(a.dtype):
        a = a.astype(dtypes.default_float())
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise located(ValueError, "expected A to be a square matrix")
    if e.ndim != 2 or e.shape[0] != e.shape[1]:
        raise located(ValueError, "expected E to be a square matrix")
    if a.shape != e.shape:
        raise located(ValueError, "expected A and E to be the same shape")
    if method not in ("SPS", None):
        raise located(ValueError, f"only method='SPS' is supported, got {method!r}")
    n = a.shape[0]
    dtype = jnp.result_type(a, e)
    block = jnp.concatenate([jnp.concatenate([a, e], axis=1),
                             jnp.concatenate([jnp.zeros_like(a), a], axis=1)], axis=0)
    whole = expm(block.astype(dtype))
    frechet = whole[:n, n:]
    return (whole[:n, :n], frechet) if compute_expm else frechet
