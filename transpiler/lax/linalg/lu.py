"""LU factorization with partial pivoting, general solves and log-determinants, as
primitives.

- ``lu(a)``: packed factors, pivots and permutation (``lax.linalg.lu``).
- ``linear_solve(a, b)``: ``a @ x == b`` for ``b`` of shape ``(..., n, k)``, by LU with
  partial pivoting and a triangular solve; singular `a` gives inf/NaN.
- ``logabsdet(a)`` and ``det_sign(a)``: ``log|det a|`` and the sign of ``det a`` (0 when
  singular) from the LU factors; the sign has no derivative.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import dtypes
from transpiler.lax.linalg.common import (check_square, column_loop, define_factorization,
                                          in_float32, index_grid, matmul, traced_once, window)
from transpiler.primitives.batching import leading_batch_rule
from transpiler.lax.linalg.triangular import solve_impl, triangular_solve_p
from transpiler.numpy.creation import asarray
from transpiler.numpy.indexing_functions import take_along_axis
from transpiler.numpy.matrices import diagonal
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import indexing as idx_p
from transpiler.primitives import reductions as red
from transpiler.primitives import shape as sp
from transpiler.primitives.core import ShapedArray, abstractify, dtype_error, shape_error
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template


# --- LU with partial pivoting ---------------------------------------------------------------

def _lu_numpy(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(packed factors, permutation, number of row swaps) of each matrix in `a`: the
    algorithm of `lu` (below) in NumPy, for the eager forms."""
    lu_, n = np.array(a, copy=True), a.shape[-1]
    perm = np.broadcast_to(np.arange(n, dtype=np.int32), a.shape[:-1]).copy()
    swaps = np.zeros(a.shape[:-2], np.int32)
    index = np.indices(a.shape[:-2])
    with np.errstate(all="ignore"):
        for k in range(n):
            p = k + np.argmax(np.abs(lu_[..., k:, k]), axis=-1)
            swaps += p != k
            row_k, row_p = lu_[(*index, k)].copy(), lu_[(*index, p)].copy()
            lu_[(*index, k)], lu_[(*index, p)] = row_p, row_k
            perm_k, perm_p = perm[..., k].copy(), perm[(*index, p)].copy()
            perm[..., k], perm[(*index, p)] = perm_p, perm_k
            pivot = lu_[..., k, k][..., None]
            lu_[..., k + 1:, k] = np.where(pivot != 0, lu_[..., k + 1:, k] / pivot, 0)
            lu_[..., k + 1:, k + 1:] -= lu_[..., k + 1:, k, None] * lu_[..., k, None, k + 1:]
    return lu_, perm, swaps


def lu(a: Any) -> tuple[Any, Any, Any]:
    """``lax.linalg.lu``: (the packed factors -- unit-lower L below the diagonal, U on and
    above it --, the LAPACK-style pivots (row i was swapped with row ``pivots[i]``), the
    permutation (``a[..., perm, :] == L @ U``)) of each matrix in `a`, by Gaussian
    elimination with partial pivoting: a `fori_loop` over columns under a trace."""
    a = asarray(a)
    check_square("lu", abstractify(a))
    packed, perm, _, pivots = _lu(a)
    return packed, pivots, perm


def _lu(a: Any) -> tuple[Any, Any, Any, Any]:
    """Gaussian elimination with partial pivoting on the ``(..., n, m)`` `a` (``m >= n``:
    columns past n, a right-hand side, are eliminated along): (packed factors, permutation,
    number of swaps, LAPACK-style pivots)."""
    # The loop's input behind a barrier: IREE 3.13's aggressive fusion of a constant into
    # it (`solve(a, b)` with b a constant of the program) failed at run time ("indirect
    # buffer reference slot 0 is out range"); likewise the substitution's operands.
    a = conv.optimization_barrier(a)
    aval = abstractify(a, 0, "lu")
    lead, n, m = aval.shape[:-2], aval.shape[-2], aval.shape[-1]
    rows = index_grid(n, len(lead), len(lead) + 2)       # (1.., n, 1)
    cols = index_grid(m, len(lead) + 1, len(lead) + 2)   # (1.., 1, m)
    zeros = [0] * len(lead)
    zero = conv.convert_element_type(np.zeros((), aval.dtype), dtype=aval.dtype)
    full = (*lead, n, m)

    def step(k: Any, carry: tuple) -> tuple:
        factors, perm, swaps, pivots = carry
        column = window(factors, [*zeros, 0, k], [*lead, n, 1])
        candidates = conv.select(sp.broadcast_to(ew.greater_equal(rows, k), shape=(*lead, n, 1)),
                                 ew.abs_(column), sp.broadcast_to(
                                     conv.convert_element_type(np.full((), -1, aval.dtype),
                                                               dtype=aval.dtype),
                                     shape=(*lead, n, 1)))
        p = red.argmax(candidates, axis=len(lead), index_dtype=dtypes.int32)  # (..., 1)
        is_k, is_p = ew.equal(rows, k), ew.equal(rows, sp.reshape(p, new_sizes=(*lead, 1, 1)))
        row_k = window(factors, [*zeros, k, 0], [*lead, 1, m])
        row_p = _rows_at(factors, p, lead, m)
        swapped = conv.select(sp.broadcast_to(is_k, shape=full), sp.broadcast_to(row_p, shape=full),
                              conv.select(sp.broadcast_to(is_p, shape=full),
                                          sp.broadcast_to(row_k, shape=full), factors))
        flat_rows = sp.reshape(rows, new_sizes=(n,))
        perm_k = window(perm, [*zeros, k], [*lead, 1])
        perm_p = _take_last(perm, p)
        perm = conv.select(sp.broadcast_to(ew.equal(flat_rows, k), shape=(*lead, n)), perm_p,
                           conv.select(sp.broadcast_to(ew.equal(flat_rows, p), shape=(*lead, n)),
                                       perm_k, perm))
        swaps = ew.add(swaps, conv.convert_element_type(ew.not_equal(
            sp.reshape(p, new_sizes=lead), k), dtype=dtypes.int32))
        pivots = idx_p.dynamic_update_slice(pivots, p, *zeros, k)
        pivot_row = window(swapped, [*zeros, k, 0], [*lead, 1, m])
        pivot = window(swapped, [*zeros, k, k], [*lead, 1, 1])
        # A zero pivot (its whole column below is zero) scales nothing, as in LAPACK.
        below = sp.broadcast_to(ew.logical_and(ew.greater(rows, k), ew.not_equal(pivot, zero)),
                                shape=(*lead, n, 1))
        multipliers = conv.select(below, ew.true_divide(
            window(swapped, [*zeros, 0, k], [*lead, n, 1]), pivot), zero)
        right = sp.broadcast_to(ew.greater(cols, k), shape=full)
        update = conv.select(right, matmul(multipliers, pivot_row), zero)
        factors = ew.subtract(swapped, update)
        on_column = sp.broadcast_to(ew.logical_and(ew.greater(rows, k), ew.equal(cols, k)),
                                    shape=full)
        factors = conv.select(on_column, sp.broadcast_to(multipliers, shape=full), factors)
        return factors, perm, swaps, pivots

    start = (a, conv.convert_element_type(
                 np.broadcast_to(np.arange(n, dtype=np.int32), (*lead, n)).copy(),
                 dtype=dtypes.int32),
             conv.convert_element_type(np.zeros(lead, np.int32), dtype=dtypes.int32),
             conv.convert_element_type(np.zeros((*lead, n), np.int32), dtype=dtypes.int32))
    return column_loop(n, step, start)


def _rows_at(x: Any, index: Any, lead: tuple, n: int) -> Any:
    """Row ``index[b]`` of each matrix ``x[b]`` (``index`` of shape ``(..., 1)``)."""
    where = sp.broadcast_to(sp.reshape(index, new_sizes=(*lead, 1, 1)), shape=(*lead, 1, n))
    return take_along_axis(x, where, axis=len(lead))


def _take_last(x: Any, index: Any) -> Any:
    return sp.broadcast_to(take_along_axis(x, index, axis=abstractify(x).ndim - 1),
                           shape=abstractify(x).shape)


# --- linear_solve, logabsdet, det_sign ------------------------------------------------------

def _linear_solve_eval(a: ShapedArray, b: ShapedArray) -> ShapedArray:
    check_square("solve", a)
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2] or b.shape[-2] != a.shape[-1]:
        raise shape_error(f"solve: a of shape {list(a.shape)} and b of shape {list(b.shape)} "
                          "do not match", "b needs the shape (..., n, k) for a of (..., n, n)")
    if b.dtype != a.dtype:
        raise dtype_error(f"solve: a ({a.dtype}) and b ({b.dtype}) need one dtype")
    return b.update(weak_type=False)


def _linear_solve_impl(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.solve(a, b).astype(b.dtype)
    except np.linalg.LinAlgError:  # singular: LAPACK's inf/NaN, as JAX gives
        packed, perm, _ = _lu_numpy(a)
        pb = np.take_along_axis(b, perm[..., None], axis=-2)
        y = solve_impl(packed, pb, left_side=True, lower=True, unit_diagonal=True)
        return solve_impl(packed, y, left_side=True, lower=False).astype(b.dtype)


def _linear_solve_composite(a: Any, b: Any) -> Any:
    """Elimination on ``[a | b]`` (which leaves ``[U | L^-1 P b]``), then back substitution.
    (The row permutation is applied by the elimination itself: IREE 3.13 failed at run time
    on a substitution loop reading both the factors and a permuted constant `b`.)"""
    n = abstractify(a).shape[-1]
    lead = abstractify(a).shape[:-2]
    k = abstractify(b).shape[-1]
    both = _lu(sp.concatenate(a, b, axis=len(lead) + 1))[0]
    upper = sp.slice_(both, start_indices=(0,) * (len(lead) + 2), limit_indices=(*lead, n, n),
                      strides=None)
    y = sp.slice_(both, start_indices=(0,) * (len(lead) + 1) + (n,),
                  limit_indices=(*lead, n, n + k), strides=None)
    return triangular_solve_p(upper, y, left_side=True, lower=False, transpose_a=False,
                              conjugate_a=False, unit_diagonal=False)


def _det_eval(a: ShapedArray) -> ShapedArray:
    check_square("det", a)
    return ShapedArray(a.shape[:-2], a.dtype)


def _logabsdet_composite(a: Any) -> Any:
    packed = traced_once("lu", _lu, a)[0]
    return red.reduce_sum(ew.log(ew.abs_(diagonal(packed, axis1=-2, axis2=-1))),
                          axes=(abstractify(a).ndim - 2,))


def _det_sign_composite(a: Any) -> Any:
    packed, _, swaps, _ = traced_once("lu", _lu, a)
    signs = red.reduce_prod(ew.sign(diagonal(packed, axis1=-2, axis2=-1)), axes=(abstractify(a).ndim - 2,))
    odd = ew.equal(ew.remainder(swaps, np.int32(2)), np.int32(1))
    return conv.select(odd, ew.negative(signs), signs)


linear_solve_p = define_factorization("linear_solve", impl=in_float32(_linear_solve_impl),
                        abstract_eval=_linear_solve_eval,
                        composite=_linear_solve_composite,
                        doc="`x` with ``a @ x == b`` (LU with partial pivoting).")
logabsdet_p = define_factorization("logabsdet", abstract_eval=_det_eval, composite=_logabsdet_composite,
                     impl=in_float32(lambda a: np.linalg.slogdet(a)[1].astype(a.dtype)),
                     doc="``log|det a|`` of each matrix.")
det_sign_p = define_factorization("det_sign", abstract_eval=_det_eval, composite=_det_sign_composite,
                    impl=in_float32(lambda a: np.linalg.slogdet(a)[0].astype(a.dtype)),
                    differentiable=False,
                    doc="The sign of ``det a`` (0 when singular).")

linear_solve_p.def_rules(
    jvp=jvp_template(("a", "b"), a="ad.linear_solve_a_tangent(a_dot, a, out)",
                     b="lax.linalg.linear_solve(a, b_dot)"),
    vjp=vjp_template(("a", "b"), """
g = lax.linalg.linear_solve(jnp.swapaxes(a, -1, -2), out_bar)
a_bar = -(g @ jnp.swapaxes(out, -1, -2))
b_bar = g
"""),
    batch=leading_batch_rule(linear_solve_p))
logabsdet_p.def_rules(
    jvp=jvp_template(("a",), a="ad.logabsdet_tangent(a_dot, a)"),
    vjp=vjp_template(("a",), "a_bar = ad.logabsdet_cotangent(out_bar, a)"),
    batch=leading_batch_rule(logabsdet_p))
det_sign_p.def_rules(batch=leading_batch_rule(det_sign_p))


def linear_solve(a: Any, b: Any) -> Any:
    """`x` with ``a @ x == b``; `b` of shape ``(..., n, k)`` (batched like `a`)."""
    return linear_solve_p(asarray(a), asarray(b))


def logabsdet(a: Any) -> Any:
    return logabsdet_p(asarray(a))


def det_sign(a: Any) -> Any:
    return det_sign_p(asarray(a))
