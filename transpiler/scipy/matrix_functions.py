"""Functions of a matrix and the equations of one (``jax.scipy.linalg``'s `sqrtm`, `funm`,
`polar`, `solve_sylvester`), with JAX's signatures and results.

JAX computes `sqrtm`, `funm` and `solve_sylvester` from a Schur form (LAPACK, CPU only);
here they go through the eigendecomposition (`lax.linalg.eig`, LAPACK on the host too):
``f(A) = V f(w) V^-1`` and ``X = U (U^-1 C W / (w_A + w_B)) W^-1``, the same matrices for a
diagonalizable `A` (the answer is unique), and NaN for a defective one, where the Schur
method still gives a result. Being compositions of primitives with derivative rules, all
of them differentiate (to any order) and batch over leading dimensions. `polar` is the
SVD's (for ``method='qdwh'`` too: the same factors).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.errors import located
from transpiler.lax.linalg import nonsymmetric as ns
from transpiler.numpy import linalg as jla

__all__ = ["funm", "polar", "solve_sylvester", "sqrtm"]


def _inexact(x: Any) -> Any:
    x = jnp.asarray(x)
    return x if dtypes.is_inexact(x.dtype) else x.astype(dtypes.default_float())


def _square(a: Any, message: str) -> Any:
    a = _inexact(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise located(ValueError, f"{message}, got shape {tuple(a.shape)}")
    return a


def _of_eigenvalues(a: Any, func: Callable[[Any], Any]) -> Any:
    """``V func(w) V^-1``: `func` of the diagonalizable matrices `a` (complex)."""
    w, v, inverse = ns.eigensystem(a)
    return (v * jnp.expand_dims(func(w), -2)) @ inverse


def sqrtm(A: Any, blocksize: int = 1) -> Any:
    """``jax.scipy.linalg.sqrtm``: the principal square root of each matrix (complex), its
    eigenvalues' principal roots (`jnp.sqrt` of the complex eigenvalues)."""
    if blocksize > 1:
        raise located(NotImplementedError, "Blocked version is not implemented yet.")
    return _of_eigenvalues(_square(A, "sqrtm: expected a square matrix"), jnp.sqrt)


def funm(A: Any, func: Callable[[Any], Any], disp: bool = True) -> Any:
    """``jax.scipy.linalg.funm``: ``func`` of the square matrix `A` (complex), `func`
    applied to its eigenvalues (an elementwise function of a complex array); with
    ``disp=False`` also JAX's (and SciPy's) estimate of the relative error."""
    a = _square(A, "expected square array_like input")
    if a.ndim != 2:
        raise located(ValueError, f"expected square array_like input, got shape {a.shape}")
    f = _of_eigenvalues(a, func)
    if disp:
        return f
    # The estimate reads the complex Schur form T = Q^H A Q (Q: V's columns made
    # orthonormal in order, the Schur vectors up to phases, which |T| does not see):
    # min(1, max(eps, eps / minden * ||triu(T, 1)||_1)), minden the smallest gap between
    # eigenvalues (and |T[0, 0]|).
    w, v, _ = ns.eigensystem(a)
    t = _schur_from_vectors(v)
    t = jnp.conj(t.T) @ a.astype(t.dtype) @ t
    n = a.shape[-1]
    gaps = jnp.abs(w[None, :] - w[:, None]) + jnp.where(jnp.eye(n, dtype=bool), np.inf, 0.0)
    minden = jnp.minimum(jnp.abs(w[0]), jnp.min(gaps)) if n > 1 else jnp.abs(w[0])
    eps = float(np.finfo(np.float32 if f.dtype == np.complex64 else np.float64).eps)
    minden = jnp.where(minden == 0.0, eps, minden)
    upper = jnp.max(jnp.sum(jnp.abs(jnp.triu(t, 1)), axis=0))
    err = jnp.where(jnp.any(jnp.isinf(f)), np.inf,
                    jnp.minimum(1, jnp.maximum(eps, (eps / minden) * upper)))
    return f, err


def _schur_from_vectors(v: Any) -> Any:
    """The columns of `v` made orthonormal in order (modified Gram-Schmidt)."""
    columns: list = []
    for j in range(v.shape[-1]):
        q = v[:, j]
        for done in columns:
            q = q - jnp.sum(jnp.conj(done) * q) * done
        columns.append(q / jnp.sqrt(jnp.sum(jnp.real(jnp.conj(q) * q))))
    return jnp.stack(columns, axis=-1)


def polar(a: Any, side: str = "right", *, method: str = "qdwh", eps: Any = None,
          max_iterations: Any = None) -> tuple[Any, Any]:
    """``jax.scipy.linalg.polar``: ``(u, p)`` with ``a = u p`` (`side` ``'right'``) or
    ``a = p u`` (``'left'``) for each matrix, `u` with orthonormal columns (rows, for a
    wide `a`) and `p` positive semi-definite; from the SVD ``a = W S Vh``: ``u = W Vh``
    (QDWH's factors too, for the shapes JAX's QDWH takes)."""
    a = _inexact(a)
    if a.ndim < 2:
        raise located(ValueError, "The input `a` must be at least a 2-D array.")
    if side not in ("right", "left"):
        raise located(ValueError, "The argument `side` must be either 'right' or 'left'.")
    if method not in ("qdwh", "svd"):
        raise located(ValueError, f"Unknown polar decomposition method {method}.")
    m, n = a.shape[-2:]
    if method == "qdwh" and not ((m >= n and side == "right") or (m < n and side == "left")):
        raise located(NotImplementedError, "method='qdwh' only supports mxn matrices where "
                      "m >= n with side='right' and m < n with side='left', got "
                      f"{tuple(a.shape[-2:])} with side={side!r}", "use method='svd'")
    w, s, vh = jla.svd(a, full_matrices=False)
    s = jnp.expand_dims(s, -2)
    unitary = w @ vh
    if side == "right":
        posdef = (_adjoint(vh) * s) @ vh
    else:
        posdef = (w * s) @ _adjoint(w)
    return unitary, posdef


def _adjoint(x: Any) -> Any:
    return jnp.conj(jnp.swapaxes(x, -1, -2))


def solve_sylvester(A: Any, B: Any, C: Any, *, method: str = "schur",
                    tol: float = 1e-8) -> Any:
    """``jax.scipy.linalg.solve_sylvester``: `X` with ``A X + X B = C`` for each set of
    matrices; NaN when an eigenvalue of `A` and one of `B` sum to less than `tol` in
    magnitude (no unique solution), as in JAX. Both methods go through the
    eigendecompositions (JAX's ``'eigen'``; the solution is the same)."""
    a, b, c = _inexact(A), _inexact(B), _inexact(C)
    dtype = jnp.result_type(a, b, c)
    a, b, c = a.astype(dtype), b.astype(dtype), c.astype(dtype)
    if c.ndim < 2:
        raise located(ValueError, f"Incompatible shapes for Sylvester equation:\nA: {a.shape}"
                      f"\nB: {b.shape}\nC: {c.shape}")
    m, n = c.shape[-2:]
    if a.shape[-2:] != (m, m) or b.shape[-2:] != (n, n):
        raise located(ValueError, f"Incompatible shapes for Sylvester equation:\nA: {a.shape}"
                      f"\nB: {b.shape}\nC: {c.shape}")
    if method not in ("schur", "eigen"):
        raise located(ValueError, f'Unrecognized method {method}. The two valid methods are '
                      'either "schur" or "eigen".')
    wa, ua, ua_inverse = ns.eigensystem(a)
    wb, ub, ub_inverse = ns.eigensystem(b)
    sums = jnp.expand_dims(wa, -1) + jnp.expand_dims(wb, -2)
    x = ua @ ((ua_inverse @ c.astype(ua.dtype) @ ub) / sums) @ ub_inverse
    if not dtypes.is_complex(c.dtype):
        x = jnp.real(x)
    singular = jnp.any(jnp.abs(sums) < tol, axis=(-2, -1), keepdims=True)
    return jnp.where(singular, jnp.full_like(x, np.nan), x)
