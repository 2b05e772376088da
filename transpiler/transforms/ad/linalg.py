"""``ad`` helpers for the linear-algebra primitives (transpiler/lax/linalg/): JAX's
rules. Re-exported by the ``ad`` package (transforms/ad/__init__.py)."""

from __future__ import annotations

from typing import Any


import transpiler.numpy as jnp
from transpiler import lax
from transpiler.errors import located
from transpiler.lax import linalg as la
from transpiler.lax.linalg import nonsymmetric as ns, spectral


def _mT(x: Any) -> Any:
    return jnp.swapaxes(x, -1, -2)


def _phi(x: Any) -> Any:
    """The lower triangle of `x` with its diagonal halved."""
    n = jnp.shape(x)[-1]
    return jnp.tril(x) - 0.5 * x * jnp.eye(n, dtype=jnp.result_type(x))


def _sym(x: Any) -> Any:
    return (x + _mT(x)) * 0.5


def cholesky_tangent(a_dot: Any, factor: Any) -> Any:
    """``L phi(L^-1 s L^-T)`` with ``s`` the symmetric part of `a_dot` (arXiv 1602.07527;
    the primitive factors the symmetric part of its operand)."""
    inner = la.triangular_solve(factor, _sym(a_dot), left_side=False, lower=True,
                                transpose_a=True)
    inner = la.triangular_solve(factor, inner, left_side=True, lower=True)
    return factor @ _phi(inner)


def cholesky_cotangent(g: Any, factor: Any) -> Any:
    """The transpose of `cholesky_tangent`: the symmetric part of ``L^-T phi(L^T g) L^-1``."""
    inner = _phi(_mT(factor) @ g)
    inner = la.triangular_solve(factor, inner, left_side=True, lower=True, transpose_a=True)
    return _sym(la.triangular_solve(factor, inner, left_side=False, lower=True))


def _triangle(x: Any, lower: bool, unit_diagonal: bool) -> Any:
    """The part of a matrix a triangular solve reads: its triangle, less the diagonal for a
    unit diagonal."""
    if unit_diagonal:
        return jnp.tril(x, -1) if lower else jnp.triu(x, 1)
    return jnp.tril(x) if lower else jnp.triu(x)


def _op(x: Any, transpose_a: bool) -> Any:
    return _mT(x) if transpose_a else x


def triangular_solve_a_tangent(a_dot: Any, a: Any, x: Any, left_side: bool, lower: bool,
                               transpose_a: bool, unit_diagonal: bool) -> Any:
    """``-op(a)^-1 op(a_dot) x`` (or ``-x op(a_dot) op(a)^-1`` on the right)."""
    change = _op(_triangle(a_dot, lower, unit_diagonal), transpose_a)
    rhs = -(change @ x) if left_side else -(x @ change)
    return la.triangular_solve(a, rhs, left_side=left_side, lower=lower,
                               transpose_a=transpose_a, unit_diagonal=unit_diagonal)


def triangular_solve_b_cotangent(g: Any, a: Any, left_side: bool, lower: bool,
                                 transpose_a: bool, unit_diagonal: bool) -> Any:
    """``op(a)^-T g`` (or ``g op(a)^-T``): b's cotangent."""
    return la.triangular_solve(a, g, left_side=left_side, lower=lower,
                               transpose_a=not transpose_a, unit_diagonal=unit_diagonal)


def triangular_solve_a_cotangent(b_bar: Any, a: Any, x: Any, left_side: bool, lower: bool,
                                 transpose_a: bool, unit_diagonal: bool) -> Any:
    """``-b_bar x^T`` (or ``-x^T b_bar``) as the cotangent of ``op(a)``, moved back to `a`
    and kept to the triangle the solve reads."""
    op_bar = -(b_bar @ _mT(x)) if left_side else -(_mT(x) @ b_bar)
    return _triangle(_op(op_bar, transpose_a), lower, unit_diagonal)


def linear_solve_a_tangent(a_dot: Any, a: Any, x: Any) -> Any:
    """``-a^-1 a_dot x``."""
    return la.linear_solve(a, -(a_dot @ x))


def logabsdet_tangent(a_dot: Any, a: Any) -> Any:
    """``trace(a^-1 a_dot)``."""
    return jnp.trace(la.linear_solve(a, a_dot), axis1=-2, axis2=-1)


def logabsdet_cotangent(g: Any, a: Any) -> Any:
    """``g a^-T``: the inverse transposed, ``(a^T)^-1``, scaled by each cotangent."""
    n = jnp.shape(a)[-1]
    eye = jnp.broadcast_to(jnp.eye(n, dtype=jnp.result_type(a)), jnp.shape(a))
    return jnp.expand_dims(g, (-1, -2)) * la.linear_solve(_mT(a), eye)


# --- eigh, svd, qr (transpiler/lax/linalg/spectral.py, qr.py) ---------------------------------

def _inverse_gaps(w: Any) -> Any:
    """``F[i, j] = 1 / (w[j] - w[i])``, 0 on the diagonal (JAX's; infinite where two values
    are equal, as in JAX)."""
    eye = jnp.eye(jnp.shape(w)[-1], dtype=jnp.result_type(w))
    return 1 / (eye + jnp.expand_dims(w, -2) - jnp.expand_dims(w, -1)) - eye


def _scaled(f: Any, p: Any) -> Any:
    """``f * p`` with 0 where ``p`` is 0: a zero cotangent (vectors the program does not
    read) contributes nothing even where ``f`` is infinite, as JAX's symbolic zeros do."""
    return jnp.where(p == 0, jnp.zeros_like(p), f * p)


def eigh_values_tangent(a_dot: Any, a: Any) -> Any:
    """``diag(V^T s V)``, ``s`` the symmetric part of `a_dot`."""
    v = spectral.eigh_vectors_p(a)
    return jnp.sum(v * (_sym(a_dot) @ v), axis=-2)


def eigh_values_cotangent(g: Any, a: Any) -> Any:
    """``V diag(g) V^T``."""
    v = spectral.eigh_vectors_p(a)
    return (v * jnp.expand_dims(g, -2)) @ _mT(v)


def eigh_vectors_tangent(a_dot: Any, a: Any, v: Any) -> Any:
    """``V (F * (V^T s V))``."""
    f = _inverse_gaps(spectral.eigh_values_p(a))
    return v @ (f * (_mT(v) @ _sym(a_dot) @ v))


def eigh_vectors_cotangent(g: Any, a: Any, v: Any) -> Any:
    """The transpose of `eigh_vectors_tangent`: the symmetric part of
    ``V (F * (V^T g)) V^T``."""
    f = _inverse_gaps(spectral.eigh_values_p(a))
    return _sym(v @ _scaled(f, _mT(v) @ g) @ _mT(v))


def _left_singular(a: Any) -> tuple[Any, Any]:
    """(``u``, ``v``) of the tall `a`: ``u`` orthonormal even where a singular value is 0
    or tiny (``a v / s`` is not), as LAPACK's is."""
    v = spectral.svd_vectors_p(a)
    return spectral.longer_side_vectors(a, v, full_matrices=False), v


def singular_values_tangent(a_dot: Any, a: Any) -> Any:
    """``diag(U^T a_dot V)``."""
    u, v = _left_singular(a)
    return jnp.sum(u * (a_dot @ v), axis=-2)


def singular_values_cotangent(g: Any, a: Any) -> Any:
    """``U diag(g) V^T``."""
    u, v = _left_singular(a)
    return (u * jnp.expand_dims(g, -2)) @ _mT(v)


def svd_vectors_tangent(a_dot: Any, a: Any, v: Any) -> Any:
    """``V`` are the eigenvectors of ``a^T a`` (eigenvalues ``s^2``):
    ``V (F * (K + K^T))`` with ``K = (a V)^T a_dot V``."""
    s = spectral.singular_values_p(a)
    k = _mT(a @ v) @ a_dot @ v
    return v @ (_inverse_gaps(s * s) * (k + _mT(k)))


def svd_vectors_cotangent(g: Any, a: Any, v: Any) -> Any:
    """The transpose of `svd_vectors_tangent`: ``(a V) (M + M^T) V^T``, ``M = F * (V^T g)``."""
    s = spectral.singular_values_p(a)
    m = _scaled(_inverse_gaps(s * s), _mT(v) @ g)
    return (a @ v) @ (m + _mT(m)) @ _mT(v)


def _qr_r(a: Any, q: Any) -> Any:
    shape, k = jnp.shape(a), jnp.shape(q)[-1]
    if shape[-2] < shape[-1] or k != shape[-1]:
        raise located(
            NotImplementedError,
            f"qr: the derivative of Q is implemented for matrices with at least as many rows "
            f"as columns, with full_matrices=False unless square (as in JAX); got shape "
            f"{list(shape)} and Q with {k} columns",
            "for a wide matrix, differentiate the QR of its transpose; else pass "
            "full_matrices=False")
    return jnp.triu(_mT(q) @ a)


def qr_q_tangent(a_dot: Any, a: Any, q: Any) -> Any:
    """JAX's: ``x = a_dot R^-1``, ``c = Q^T x``, ``dQ = Q (omega - c) + x`` with the skew
    ``omega = tril(c, -1) - tril(c, -1)^T``."""
    r = _qr_r(a, q)
    x = la.triangular_solve(r, a_dot, left_side=False, lower=False)
    c = _mT(q) @ x
    low = jnp.tril(c, -1)
    return q @ (low - _mT(low) - c) + x


def qr_q_cotangent(g: Any, a: Any, q: Any) -> Any:
    """The transpose of `qr_q_tangent`: ``(g + Q (tril(p - p^T, -1) - p)) R^-T`` with
    ``p = Q^T g``."""
    r = _qr_r(a, q)
    p = _mT(q) @ g
    x_bar = g + q @ (jnp.tril(p - _mT(p), -1) - p)
    return la.triangular_solve(r, x_bar, left_side=False, lower=False, transpose_a=True)


# --- eig of a general matrix (lax/linalg/nonsymmetric.py): complex, JAX's convention (cotangents
# are transposes without conjugation; a real operand's is the real part) ----------------------

def _as_operand(a_bar: Any, a: Any) -> Any:
    return a_bar if jnp.iscomplexobj(a) else jnp.real(a_bar)


def _in_basis(a_dot: Any, a: Any) -> Any:
    """``V^-1 a_dot V``: the perturbation in the eigenvector basis."""
    _, v, inverse = ns.eigensystem(a)
    return inverse @ _complex_like(a_dot, v) @ v


def _from_basis(p_bar: Any, a: Any) -> Any:
    """The transpose of `_in_basis`: ``V^-T p_bar V^T``."""
    _, v, inverse = ns.eigensystem(a)
    return _as_operand(_mT(inverse) @ p_bar @ _mT(v), a)


def eig_values_tangent(a_dot: Any, a: Any) -> Any:
    """``diag(V^-1 a_dot V)`` (arXiv 1701.00392, eq. 4.60)."""
    return jnp.diagonal(_in_basis(a_dot, a), axis1=-2, axis2=-1)


def eig_values_cotangent(g: Any, a: Any) -> Any:
    """``V^-T diag(g) V^T``."""
    p_bar = jnp.expand_dims(g, -1) * jnp.eye(jnp.shape(g)[-1], dtype=jnp.result_type(g))
    return _from_basis(p_bar, a)


def _refuse_vectors(enabled: bool) -> None:
    if not enabled:
        raise located(NotImplementedError,
                      "derivatives of non-symmetric eigenvectors are only valid under "
                      "assumptions on the input that cannot be checked (distinct eigenvalues)",
                      "pass enable_eigvec_derivs=True to lax.linalg.eig to opt in (JAX's "
                      "rule), or differentiate the eigenvalues only")


def _largest_mask(v: Any) -> Any:
    """1 at each column's largest-magnitude component (LAPACK's normalization fixes it real)."""
    k = jnp.argmax(jnp.abs(v), axis=-2)
    rows = jnp.arange(jnp.shape(v)[-2])[:, None]
    return (rows == jnp.expand_dims(k, -2)).astype(jnp.result_type(v))


def _vectors_tangent(da: Any, w: Any, v: Any, inverse: Any) -> Any:
    """JAX's ``_eig_vec_jvp``: ``dV = U + V diag(c)``, ``U = V (F * P)`` with
    ``P = V^-1 da V``; ``c`` keeps each column of unit norm with its largest component real
    (Giles 2008, 3.1), for eigenvalues `w`, eigenvectors `v` and ``inverse = V^-1``."""
    u = v @ (_inverse_gaps(w) * (inverse @ da @ v))
    mask = _largest_mask(v)
    c = lax.complex(-jnp.sum(jnp.real(jnp.conj(v) * u), axis=-2),
                    -jnp.sum(jnp.imag(mask * u), axis=-2)
                    / jnp.sum(jnp.real(mask * v), axis=-2))
    return u + v * jnp.expand_dims(c, -2)


def _vectors_cotangent(g: Any, w: Any, v: Any, inverse: Any) -> Any:
    """The transpose of `_vectors_tangent` in `da` (complex, before a real operand's real
    part is taken)."""
    mask = _largest_mask(v)
    c_bar = jnp.sum(v * g, axis=-2)  # c = complex(r, s): r_bar = Re(c_bar), s_bar = -Im(c_bar)
    s_bar = -jnp.imag(c_bar) / jnp.sum(jnp.real(mask * v), axis=-2)
    u_bar = (g - jnp.conj(v) * jnp.expand_dims(jnp.real(c_bar), -2)
             + mask * jnp.expand_dims(lax.complex(jnp.zeros_like(s_bar), s_bar), -2))
    p_bar = _scaled(_inverse_gaps(w), _mT(v) @ u_bar)
    return _mT(inverse) @ p_bar @ _mT(v)


def _left(a: Any, vl: Any) -> tuple[Any, Any, Any]:
    """(conj(w), VL, VL^-1): the left eigenvectors are the right ones of ``a^H``. Columns
    of VL are those of ``V^-H`` rescaled, ``VL = V^-H diag(d)`` with ``d = diag(V^H VL)``,
    so ``VL^-1 = diag(1/d) V^H``."""
    w, v, _ = ns.eigensystem(a)
    vh = jnp.conj(_mT(v))
    d = jnp.diagonal(vh @ vl, axis1=-2, axis2=-1)
    return jnp.conj(w), vl, vh / jnp.expand_dims(d, -1)


def _complex_like(a_dot: Any, v: Any) -> Any:
    return jnp.asarray(a_dot).astype(jnp.result_type(v))


def eig_vectors_tangent(a_dot: Any, a: Any, v: Any, enabled: bool) -> Any:
    """The right eigenvectors' tangent (`_vectors_tangent`)."""
    _refuse_vectors(enabled)
    w, _, inverse = ns.eigensystem(a)
    return _vectors_tangent(_complex_like(a_dot, v), w, v, inverse)


def eig_vectors_cotangent(g: Any, a: Any, v: Any, enabled: bool) -> Any:
    """The transpose of `eig_vectors_tangent`."""
    _refuse_vectors(enabled)
    w, _, inverse = ns.eigensystem(a)
    return _as_operand(_vectors_cotangent(g, w, v, inverse), a)


def eig_left_vectors_tangent(a_dot: Any, a: Any, vl: Any, enabled: bool) -> Any:
    """The left eigenvectors' tangent: the right ones' of ``a^H`` along ``a_dot^H``."""
    _refuse_vectors(enabled)
    da = jnp.conj(_mT(_complex_like(a_dot, vl)))
    return _vectors_tangent(da, *_left(a, vl))


def eig_left_vectors_cotangent(g: Any, a: Any, vl: Any, enabled: bool) -> Any:
    """The transpose of `eig_left_vectors_tangent` (of ``x -> x^H``: ``g -> g^H``)."""
    _refuse_vectors(enabled)
    return _as_operand(jnp.conj(_mT(_vectors_cotangent(g, *_left(a, vl)))), a)


def eig_vectors_inverse_tangent(a_dot: Any, a: Any, inverse: Any) -> Any:
    """``-V^-1 dV V^-1``."""
    v = ns.eig_vectors_p(a, enable_eigvec_derivs=True)
    return -(inverse @ eig_vectors_tangent(a_dot, a, v, True) @ inverse)


def eig_vectors_inverse_cotangent(g: Any, a: Any, inverse: Any) -> Any:
    """The transpose of `eig_vectors_inverse_tangent`."""
    v = ns.eig_vectors_p(a, enable_eigvec_derivs=True)
    return eig_vectors_cotangent(-(_mT(inverse) @ g @ _mT(inverse)), a, v, True)
