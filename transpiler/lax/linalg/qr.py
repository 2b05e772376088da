"""QR factorization by Householder reflections, as a primitive.

``householder_q(a, full_matrices)`` is the orthogonal factor ``Q`` of ``a = Q R`` for each
matrix ``(..., m, n)``: ``(m, m)`` when `full_matrices`, else ``(m, min(m, n))``. ``R`` is
not a second primitive: the public `qr` reads it as ``triu(Q^T a)``, which holds exactly
on every path, so its derivative follows from ``Q``'s.

Eagerly LAPACK (NumPy); under a trace one reflection per column in a `lax` loop, with
LAPACK's conventions (``v = x - beta e_j``, ``beta = -sign(x_j) |x|``, no reflection where
the column is already zero below the diagonal), so that both forms give the same signs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler.errors import located
from transpiler.lax.linalg.common import (as_float_matrix, column_loop, define_factorization,
                                          in_float32, index_grid, matmul, narrowed, swap_last,
                                          widened, window)
from transpiler.primitives.batching import leading_batch_rule
from transpiler.numpy.matrices import triu
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import reductions as red
from transpiler.primitives import shape as sp
from transpiler.primitives.core import ShapedArray, abstractify, dtype_error, shape_error
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template
from transpiler import dtypes


def _constant(value: Any, dtype: Any) -> Any:
    return conv.convert_element_type(np.asarray(value, dtype), dtype=dtype)


def _householder(a: Any, full_matrices: bool) -> Any:
    a = conv.optimization_barrier(a)  # (see lu._lu)
    aval = abstractify(a)
    lead, m, n, dtype = aval.shape[:-2], aval.shape[-2], aval.shape[-1], aval.dtype
    zeros = [0] * len(lead)
    rows = index_grid(m, len(lead), len(lead) + 2)  # (1.., m, 1)
    zero, one = _constant(0, dtype), _constant(1, dtype)
    column_shape = (*lead, m, 1)
    ndim = aval.ndim

    def reflect(j: Any, carry: tuple) -> tuple:
        r, q = carry
        column = window(r, [*zeros, 0, j], [*lead, m, 1])
        alpha = window(r, [*zeros, j, j], [*lead, 1, 1])
        below = conv.select(sp.broadcast_to(ew.greater(rows, j), shape=column_shape), column,
                            zero)
        below_squared = red.reduce_sum(ew.multiply(below, below), axes=(ndim - 2,))
        below_squared = sp.reshape(below_squared, new_sizes=(*lead, 1, 1))
        norm = ew.sqrt(ew.add(ew.multiply(alpha, alpha), below_squared))
        beta = ew.multiply(conv.select(ew.less(alpha, zero), one, _constant(-1, dtype)), norm)
        v = conv.select(sp.broadcast_to(ew.equal(rows, j), shape=column_shape),
                        sp.broadcast_to(ew.subtract(alpha, beta), shape=column_shape), below)
        vv = red.reduce_sum(ew.multiply(v, v), axes=(ndim - 2,))
        vv = sp.reshape(vv, new_sizes=(*lead, 1, 1))
        reflects = ew.greater(below_squared, zero)
        scale = conv.select(reflects, ew.true_divide(_constant(2, dtype),
                                                     conv.select(reflects, vv, one)), zero)
        r = ew.subtract(r, matmul(v, ew.multiply(scale, matmul(swap_last(v), r))))
        q = ew.subtract(q, matmul(matmul(q, v), ew.multiply(scale, swap_last(v))))
        return r, q

    eye = sp.broadcast_to(_constant(np.eye(m), dtype), shape=(*lead, m, m))
    _, q = column_loop(min(m, n), reflect, (a, eye))
    if full_matrices or m <= n:
        return q
    return sp.slice_(q, start_indices=(0,) * ndim, limit_indices=(*lead, m, n), strides=None)


def _householder_eval(a: ShapedArray, *, full_matrices: bool) -> ShapedArray:
    if a.ndim < 2:
        raise shape_error(f"qr: expected a matrix (or a batch of them, shape (..., m, n)), "
                          f"got shape {list(a.shape)}")
    if not dtypes.is_float(a.dtype):
        raise dtype_error(f"qr: expected a floating-point matrix, got {a.dtype}",
                          "convert it with .astype(jnp.float32) first")
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    return ShapedArray((*a.shape[:-2], m, k), a.dtype)


def _householder_numpy(a: np.ndarray, *, full_matrices: bool) -> np.ndarray:
    return np.linalg.qr(a, mode="complete" if full_matrices else "reduced")[0].astype(a.dtype)


householder_q_p = define_factorization(
    "householder_q", impl=in_float32(_householder_numpy), abstract_eval=_householder_eval,
    composite=_householder,
    doc="The orthogonal factor Q of the QR factorization of `a` (Householder, LAPACK's signs).")

householder_q_p.def_rules(
    jvp=jvp_template(("a",), a="ad.qr_q_tangent(a_dot, a, out)"),
    vjp=vjp_template(("a",), "a_bar = ad.qr_q_cotangent(out_bar, a, out)"),
    batch=leading_batch_rule(householder_q_p))


# --- the lax.linalg function ------------------------------------------------------------------

def qr(x: Any, *, pivoting: bool = False, full_matrices: bool = True,
       use_magma: Any = None) -> tuple[Any, Any]:
    """``lax.linalg.qr``: (``q``, ``r``) with ``x == q @ r`` for each matrix ``(..., m, n)``,
    ``q`` orthogonal (``(m, m)`` when `full_matrices`, else ``(m, min(m, n))``) and ``r``
    upper triangular, with LAPACK's signs."""
    if pivoting:
        raise located(NotImplementedError, "qr: pivoting=True (column-pivoted QR) is not "
                      "supported yet", "use pivoting=False")
    x = as_float_matrix(x, "qr")
    work = widened(x)
    q = householder_q_p(work, full_matrices=bool(full_matrices))
    r = triu(matmul(swap_last(q), work))
    return narrowed(q, x), narrowed(r, x)
