"""``ad`` helpers for the linear-algebra primitives (transpiler/lax/linalg.py): JAX's
rules. Re-exported by the ``ad`` package (transforms/ad/__init__.py)."""

from __future__ import annotations

from typing import Any


import transpiler.numpy as jnp
from transpiler.lax import linalg as la


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
