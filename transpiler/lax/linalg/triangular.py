"""Cholesky factorization and triangular solves, as primitives.

- ``cholesky(a)``: the lower factor ``L`` with ``L @ L^T == (a + a^T) / 2`` (the
  symmetric part, so that its derivative is one in every direction); a matrix that is not
  positive definite gives NaN (JAX's answer).
- ``triangular_solve(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal)``:
  ``op(a) @ x == b`` (or ``x @ op(a) == b``), reading the `lower` or upper triangle of
  `a`; a zero on the diagonal gives inf/NaN as LAPACK does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler.errors import located
from transpiler.lax.linalg.common import (check_square, column_loop, define_factorization,
                                         in_float32, index_grid, matmul, swap_last,
                                         symmetrized, window)
from transpiler.primitives.batching import leading_batch_rule
from transpiler.numpy.creation import asarray
from transpiler.numpy.matrices import tril
from transpiler.numpy.reductions import any as any_
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import indexing as idx_p
from transpiler.primitives import shape as sp
from transpiler.primitives.core import ShapedArray, abstractify, dtype_error, shape_error
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template



# --- cholesky -------------------------------------------------------------------------------

def _cholesky_eval(a: ShapedArray) -> ShapedArray:
    check_square("cholesky", a)
    return a.update(weak_type=False)


def _cholesky_impl(a: np.ndarray) -> np.ndarray:
    flat = a.reshape(-1, *a.shape[-2:])
    out = np.empty_like(flat)
    for k, m in enumerate(flat):
        try:
            out[k] = np.linalg.cholesky((m + m.T) / 2)
        except np.linalg.LinAlgError:
            out[k] = np.nan
    return out.reshape(a.shape)


def _cholesky_composite(a: Any) -> Any:
    """Left-looking, one column per step: ``v = a[:, j] - L @ L[j, :]``; the columns of
    `L` not yet computed are zero, so the product only reads the finished ones."""
    a = conv.optimization_barrier(symmetrized(a))  # (see _lu)
    aval = abstractify(a)
    lead, n = aval.shape[:-2], aval.shape[-1]
    zeros = [0] * len(lead)
    rows = index_grid(n, len(lead), len(lead) + 2)  # (1.., n, 1)

    def column(j: Any, factor: Any) -> Any:
        row = window(factor, [*zeros, j, 0], [*lead, 1, n])
        col = window(a, [*zeros, 0, j], [*lead, n, 1])
        v = ew.subtract(col, matmul(factor, swap_last(row)))
        pivot = ew.sqrt(window(v, [*zeros, j, 0], [*lead, 1, 1]))
        below = ew.greater_equal(rows, j)
        new = conv.select(sp.broadcast_to(below, shape=(*lead, n, 1)), ew.true_divide(v, pivot),
                          conv.convert_element_type(np.zeros((), aval.dtype), dtype=aval.dtype))
        return idx_p.dynamic_update_slice(factor, new, *zeros, 0, j)

    start = conv.convert_element_type(np.zeros(aval.shape, aval.dtype), dtype=aval.dtype)
    factor = column_loop(n, column, start)
    # LAPACK stops at the first non-positive pivot and JAX returns NaN for the whole matrix.
    failed = any_(ew.isnan(factor), axis=(-2, -1), keepdims=True)
    nan = conv.convert_element_type(np.full((), np.nan, aval.dtype), dtype=aval.dtype)
    return conv.select(sp.broadcast_to(failed, shape=aval.shape), nan, factor)


cholesky_p = define_factorization("cholesky", impl=in_float32(_cholesky_impl),
                                  abstract_eval=_cholesky_eval,
                                  composite=_cholesky_composite,
                    doc="The lower Cholesky factor of the symmetric part of `a`.")


# --- triangular_solve -----------------------------------------------------------------------

def _solve_eval(a: ShapedArray, b: ShapedArray, *, left_side: bool = False,
                lower: bool = False, transpose_a: bool = False, conjugate_a: bool = False,
                unit_diagonal: bool = False) -> ShapedArray:
    check_square("triangular_solve", a)
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2]:
        raise shape_error(f"triangular_solve: a of shape {list(a.shape)} and b of shape "
                          f"{list(b.shape)} need the same batch dimensions and rank")
    n = a.shape[-1]
    if (b.shape[-2] if left_side else b.shape[-1]) != n:
        side = "rows" if left_side else "columns"
        raise shape_error(f"triangular_solve: b of shape {list(b.shape)} needs {n} {side} to "
                          f"match a of shape {list(a.shape)}")
    if b.dtype != a.dtype:
        raise dtype_error(f"triangular_solve: a ({a.dtype}) and b ({b.dtype}) need one dtype")
    return b.update(weak_type=False)


def _normalized(a: Any, b: Any, left_side: bool, lower: bool, transpose_a: bool,
                swap: Any) -> tuple[Any, Any, bool]:
    """(t, c, lower'): the system ``t @ x' == c`` equivalent to the one asked, with
    ``x == x'`` (left side) or ``x == x'^T`` (right side)."""
    if not left_side:  # x @ op(a) == b  <=>  op(a)^T @ x^T == b^T
        b = swap(b)
        transpose_a = not transpose_a
    if transpose_a:
        a = swap(a)
        lower = not lower
    return a, b, lower


def _substitution_order(n: int, lower: bool) -> list[int]:
    return list(range(n)) if lower else list(range(n - 1, -1, -1))


def solve_impl(a: np.ndarray, b: np.ndarray, *, left_side: bool = False, lower: bool = False,
                transpose_a: bool = False, conjugate_a: bool = False,
                unit_diagonal: bool = False) -> np.ndarray:
    swap = lambda m: np.swapaxes(m, -1, -2)  # noqa: E731
    t, c, low = _normalized(a, b, left_side, lower, transpose_a, swap)
    n = t.shape[-1]
    t = np.tril(t) if low else np.triu(t)
    x = np.zeros(c.shape, c.dtype)
    with np.errstate(all="ignore"):
        if unit_diagonal or np.all(np.diagonal(t, axis1=-2, axis2=-1) != 0):
            _solve_in_blocks(t, c, x, low, unit_diagonal)
        else:  # a zero on the diagonal: LAPACK's inf/NaN, row by row
            for i in _substitution_order(n, low):
                rest = c[..., i, :] - np.einsum("...k,...kj->...j", t[..., i, :], x)
                x[..., i, :] = rest if unit_diagonal else rest / t[..., i, i][..., None]
    return x if left_side else swap(x)


_BLOCK = 64


def _solve_in_blocks(t: np.ndarray, c: np.ndarray, x: np.ndarray, low: bool,
                     unit_diagonal: bool) -> None:
    """Substitution by blocks of rows into `x` (zeros): each block's right-hand side less
    the rows solved so far (one matrix product), then its triangular diagonal block by
    LAPACK -- a Python step per 64 rows, not per row."""
    n = t.shape[-1]
    starts = list(range(0, n, _BLOCK))
    for start in starts if low else starts[::-1]:
        rows = slice(start, min(start + _BLOCK, n))
        rest = c[..., rows, :] - t[..., rows, :] @ x
        block = t[..., rows, rows]
        if unit_diagonal:
            block = block.copy()
            diagonal = np.arange(block.shape[-1])
            block[..., diagonal, diagonal] = 1
        x[..., rows, :] = np.linalg.solve(block, rest)


def _solve_composite(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
    """Forward (lower) or back (upper) substitution, one row of x per step."""
    t, c, low = _normalized(a, b, left_side, lower, transpose_a, swap_last)
    t, c = conv.optimization_barrier(t), conv.optimization_barrier(c)  # (see _lu)
    aval, cval = abstractify(t), abstractify(c)
    lead, n, k = aval.shape[:-2], aval.shape[-1], cval.shape[-1]
    zeros = [0] * len(lead)
    cols = index_grid(n, len(lead) + 1, len(lead) + 2)  # (1.., 1, n)

    def row(step: Any, x: Any) -> Any:
        i = step if low else ew.subtract(np.int32(n - 1), step)
        t_row = window(t, [*zeros, i, 0], [*lead, 1, n])
        inside = ew.less_equal(cols, i) if low else ew.greater_equal(cols, i)
        zero = conv.convert_element_type(np.zeros((), aval.dtype), dtype=aval.dtype)
        t_row = conv.select(sp.broadcast_to(inside, shape=(*lead, 1, n)), t_row, zero)
        rest = ew.subtract(window(c, [*zeros, i, 0], [*lead, 1, k]), matmul(t_row, x))
        if not unit_diagonal:
            rest = ew.true_divide(rest, window(t, [*zeros, i, i], [*lead, 1, 1]))
        return idx_p.dynamic_update_slice(x, rest, *zeros, i, 0)

    start = conv.optimization_barrier(conv.convert_element_type(np.zeros(cval.shape, cval.dtype),
                                                                dtype=cval.dtype))
    x = column_loop(n, row, start)
    return x if left_side else swap_last(x)


triangular_solve_p = define_factorization(
    "triangular_solve", impl=in_float32(solve_impl), abstract_eval=_solve_eval,
    composite=_solve_composite,
    doc="`x` with ``op(a) @ x == b`` (or ``x @ op(a) == b``), `a` triangular.")


# --- rules (JAX's: arXiv 1602.07527 for Cholesky; triangular solves are linear in b) -------

_SOLVE_PARAMS = "left_side, lower, transpose_a, unit_diagonal"
cholesky_p.def_rules(
    jvp=jvp_template(("a",), a="ad.cholesky_tangent(a_dot, out)"),
    vjp=vjp_template(("a",), "a_bar = ad.cholesky_cotangent(out_bar, out)"),
    batch=leading_batch_rule(cholesky_p))
triangular_solve_p.def_rules(
    jvp=jvp_template(
        ("a", "b"),
        a=f"ad.triangular_solve_a_tangent(a_dot, a, out, {_SOLVE_PARAMS})",
        b="lax.linalg.triangular_solve(a, b_dot, left_side=left_side, lower=lower, "
          "transpose_a=transpose_a, unit_diagonal=unit_diagonal)"),
    vjp=vjp_template(("a", "b"), f"""
g = ad.triangular_solve_b_cotangent(out_bar, a, {_SOLVE_PARAMS})
a_bar = ad.triangular_solve_a_cotangent(g, a, out, {_SOLVE_PARAMS})
b_bar = g
"""),
    batch=leading_batch_rule(triangular_solve_p))


# --- the lax.linalg functions ---------------------------------------------------------------

def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """``lax.linalg.cholesky``: the lower Cholesky factor of each matrix in `x` (``(..., n,
    n)``), of ``(x + x^T) / 2`` when `symmetrize_input`, else of the symmetric matrix its
    lower triangle holds; NaN where one is not positive definite."""
    x = asarray(x)
    if not symmetrize_input:
        x = ew.add(tril(x), swap_last(tril(x, -1)))
    return cholesky_p(x)



def triangular_solve(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
    """``lax.linalg.triangular_solve``: `x` with ``op(a) @ x == b`` when `left_side`, else
    ``x @ op(a) == b``, where ``op(a)`` is `a` or its transpose (`transpose_a`) and only
    the `lower` (or upper) triangle of `a` is read. Batched over leading dimensions."""
    a, b = asarray(a), asarray(b)
    if conjugate_a and abstractify(a).dtype.kind == "c":
        raise located(NotImplementedError, "triangular_solve: conjugate_a=True is not supported "
                      "yet for complex matrices", "pass jnp.conj(a) with conjugate_a=False")
    return triangular_solve_p(a, b, left_side=bool(left_side), lower=bool(lower),
                                   transpose_a=bool(transpose_a), conjugate_a=False,
                                   unit_diagonal=bool(unit_diagonal))
