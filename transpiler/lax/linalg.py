"""``lax.linalg``: Cholesky and LU factorizations, triangular and general solves, and
log-determinants, as primitives.

IREE has no LAPACK, so each is a primitive with two forms: eagerly its ``impl`` runs
NumPy (LAPACK, or a vectorized substitution), and under a trace its ``composite`` stages
the same algorithm as a `lax.fori_loop` over columns (or rows) of matrix-vector products,
batched over leading dimensions. Being primitives, they carry their own derivative rules
(JAX's formulas, declared here next to them: this layer sits above the primitives, whose
derivatives.py cannot import it) and batching rules.

- ``cholesky(a)``: the lower factor ``L`` with ``L @ L^T == (a + a^T) / 2`` (the
  symmetric part, so that its derivative is one in every direction); a matrix that is not
  positive definite gives NaN (JAX's answer).
- ``triangular_solve(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal)``:
  ``op(a) @ x == b`` (or ``x @ op(a) == b``), reading the `lower` or upper triangle of
  `a`; a zero on the diagonal gives inf/NaN as LAPACK does.
- ``linear_solve(a, b)``: ``a @ x == b`` for ``b`` of shape ``(..., n, k)``, by LU with
  partial pivoting (`lu`) and two triangular solves; singular `a` gives inf/NaN.
- ``logabsdet(a)`` and ``det_sign(a)``: ``log|det a|`` and the sign of ``det a`` (0 when
  singular) from the LU factors; the sign has no derivative.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import dtypes
from transpiler.lax.loops import fori_loop
from transpiler.numpy.creation import asarray
from transpiler.numpy.indexing_functions import take_along_axis
from transpiler.numpy.matrices import diagonal, tril
from transpiler.numpy.reductions import any as any_
from transpiler.primitives import conversions as conv
from transpiler.primitives import dot as dot_p
from transpiler.primitives import elementwise as ew
from transpiler.primitives import indexing as idx_p
from transpiler.primitives import reductions as red
from transpiler.primitives import shape as sp
from transpiler.primitives.batching import batch_size, materialize
from transpiler.primitives import core
from transpiler.primitives.core import ShapedArray, abstractify, define, dtype_error, shape_error
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template

__all__ = ["cholesky", "lu", "triangular_solve"]


# --- shared helpers -------------------------------------------------------------------------

def _check_square(name: str, a: ShapedArray) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise shape_error(f"{name}: expected a square matrix (or a batch of them, shape "
                          f"(..., n, n)), got shape {list(a.shape)}")
    if not dtypes.is_float(a.dtype):
        raise dtype_error(f"{name}: expected a floating-point matrix, got {a.dtype}",
                          "convert it with .astype(jnp.float32) first")


def _matmul(x: Any, y: Any) -> Any:
    """``x @ y`` over leading batch dimensions (both of rank r >= 2, same batch shape)."""
    ndim = abstractify(x).ndim
    batch = tuple(range(ndim - 2))
    return dot_p.dot_general(x, y, dimension_numbers=(((ndim - 1,), (ndim - 2,)),
                                                      (batch, batch)),
                             preferred_element_type=None)


def _swap_last(x: Any) -> Any:
    ndim = abstractify(x).ndim
    return sp.transpose(x, permutation=(*range(ndim - 2), ndim - 1, ndim - 2))


def _window(x: Any, starts: list, sizes: list) -> Any:
    return idx_p.dynamic_slice(x, *starts, slice_sizes=tuple(sizes))


def _index_grid(n: int, axis: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = n
    return np.arange(n, dtype=np.int32).reshape(shape)


def _in_float32(impl: Any) -> Any:
    """An eager rule run in float32 for half types (NumPy's LAPACK has none), the result
    cast back."""
    def run(*args: np.ndarray, **params: Any) -> np.ndarray:
        dtype = args[0].dtype
        if dtype.itemsize >= 4:
            return impl(*args, **params)
        wide = [x.astype(np.float32) if x.dtype == dtype else x for x in args]
        return impl(*wide, **params).astype(dtype)
    return run


def _column_loop(n: int, body: Any, init: Any) -> Any:
    """``fori_loop(0, n, body, init)``, never unrolled: its start is a traced value (an
    optimization barrier). Unrolling probes the body first, and two chained substitution
    loops of 16 or more steps then failed in IREE 3.13 with "operand does not dominate this
    use" (not understood yet); each step is a matrix-vector product anyway, too large for
    unrolling to pay."""
    start = conv.optimization_barrier(conv.convert_element_type(np.asarray(0, np.int32),
                                                                dtype=dtypes.int32))
    return fori_loop(start, n, body, init)


def _batch_rule(prim: Any) -> Any:
    """Batched operands get the batch axis first (unbatched ones broadcast along it): the
    primitive already maps over leading dimensions."""
    def rule(args: Any, dims: Any, **params: Any) -> tuple[Any, Any]:
        if all(d is None for d in dims):
            return prim(*args, **params), None
        size = batch_size(args, dims)
        moved = [materialize(a, None if d is None else d % abstractify(a).ndim, size)
                 for a, d in zip(args, dims)]
        return prim(*moved, **params), 0
    return rule


# --- cholesky -------------------------------------------------------------------------------

def _cholesky_eval(a: ShapedArray) -> ShapedArray:
    _check_square("cholesky", a)
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
    a = conv.optimization_barrier(_symmetrized(a))  # (see _lu)
    aval = abstractify(a)
    lead, n = aval.shape[:-2], aval.shape[-1]
    zeros = [0] * len(lead)
    rows = _index_grid(n, len(lead), len(lead) + 2)  # (1.., n, 1)

    def column(j: Any, factor: Any) -> Any:
        row = _window(factor, [*zeros, j, 0], [*lead, 1, n])
        col = _window(a, [*zeros, 0, j], [*lead, n, 1])
        v = ew.subtract(col, _matmul(factor, _swap_last(row)))
        pivot = ew.sqrt(_window(v, [*zeros, j, 0], [*lead, 1, 1]))
        below = ew.greater_equal(rows, j)
        new = conv.select(sp.broadcast_to(below, shape=(*lead, n, 1)), ew.true_divide(v, pivot),
                          conv.convert_element_type(np.zeros((), aval.dtype), dtype=aval.dtype))
        return idx_p.dynamic_update_slice(factor, new, *zeros, 0, j)

    start = conv.convert_element_type(np.zeros(aval.shape, aval.dtype), dtype=aval.dtype)
    factor = _column_loop(n, column, start)
    # LAPACK stops at the first non-positive pivot and JAX returns NaN for the whole matrix.
    failed = any_(ew.isnan(factor), axis=(-2, -1), keepdims=True)
    nan = conv.convert_element_type(np.full((), np.nan, aval.dtype), dtype=aval.dtype)
    return conv.select(sp.broadcast_to(failed, shape=aval.shape), nan, factor)


cholesky_p = define("cholesky", impl=_in_float32(_cholesky_impl),
                    abstract_eval=_cholesky_eval,
                    composite=_cholesky_composite,
                    doc="The lower Cholesky factor of the symmetric part of `a`.")


# --- triangular_solve -----------------------------------------------------------------------

def _solve_eval(a: ShapedArray, b: ShapedArray, *, left_side: bool = False,
                lower: bool = False, transpose_a: bool = False, conjugate_a: bool = False,
                unit_diagonal: bool = False) -> ShapedArray:
    _check_square("triangular_solve", a)
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


def _solve_impl(a: np.ndarray, b: np.ndarray, *, left_side: bool = False, lower: bool = False,
                transpose_a: bool = False, conjugate_a: bool = False,
                unit_diagonal: bool = False) -> np.ndarray:
    swap = lambda m: np.swapaxes(m, -1, -2)  # noqa: E731
    t, c, low = _normalized(a, b, left_side, lower, transpose_a, swap)
    n = t.shape[-1]
    t = np.tril(t) if low else np.triu(t)
    x = np.zeros(c.shape, c.dtype)
    with np.errstate(all="ignore"):
        for i in _substitution_order(n, low):
            rest = c[..., i, :] - np.einsum("...k,...kj->...j", t[..., i, :], x)
            x[..., i, :] = rest if unit_diagonal else rest / t[..., i, i][..., None]
    return x if left_side else swap(x)


def _solve_composite(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
    """Forward (lower) or back (upper) substitution, one row of x per step."""
    t, c, low = _normalized(a, b, left_side, lower, transpose_a, _swap_last)
    t, c = conv.optimization_barrier(t), conv.optimization_barrier(c)  # (see _lu)
    aval, cval = abstractify(t), abstractify(c)
    lead, n, k = aval.shape[:-2], aval.shape[-1], cval.shape[-1]
    zeros = [0] * len(lead)
    cols = _index_grid(n, len(lead) + 1, len(lead) + 2)  # (1.., 1, n)

    def row(step: Any, x: Any) -> Any:
        i = step if low else ew.subtract(np.int32(n - 1), step)
        t_row = _window(t, [*zeros, i, 0], [*lead, 1, n])
        inside = ew.less_equal(cols, i) if low else ew.greater_equal(cols, i)
        zero = conv.convert_element_type(np.zeros((), aval.dtype), dtype=aval.dtype)
        t_row = conv.select(sp.broadcast_to(inside, shape=(*lead, 1, n)), t_row, zero)
        rest = ew.subtract(_window(c, [*zeros, i, 0], [*lead, 1, k]), _matmul(t_row, x))
        if not unit_diagonal:
            rest = ew.true_divide(rest, _window(t, [*zeros, i, i], [*lead, 1, 1]))
        return idx_p.dynamic_update_slice(x, rest, *zeros, i, 0)

    start = conv.optimization_barrier(conv.convert_element_type(np.zeros(cval.shape, cval.dtype),
                                                                dtype=cval.dtype))
    x = _column_loop(n, row, start)
    return x if left_side else _swap_last(x)


triangular_solve_p = define(
    "triangular_solve", impl=_in_float32(_solve_impl), abstract_eval=_solve_eval,
    composite=_solve_composite,
    doc="`x` with ``op(a) @ x == b`` (or ``x @ op(a) == b``), `a` triangular.")


# --- rules (JAX's: arXiv 1602.07527 for Cholesky; triangular solves are linear in b) -------

_SOLVE_PARAMS = "left_side, lower, transpose_a, unit_diagonal"
cholesky_p.def_rules(
    jvp=jvp_template(("a",), a="ad.cholesky_tangent(a_dot, out)"),
    vjp=vjp_template(("a",), "a_bar = ad.cholesky_cotangent(out_bar, out)"),
    batch=_batch_rule(cholesky_p))
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
    batch=_batch_rule(triangular_solve_p))


# --- the lax.linalg functions ---------------------------------------------------------------

def _symmetrized(x: Any) -> Any:
    half = conv.convert_element_type(np.asarray(0.5, abstractify(x).dtype),
                                     dtype=abstractify(x).dtype)
    return ew.multiply(ew.add(x, _swap_last(x)), half)


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """``lax.linalg.cholesky``: the lower Cholesky factor of each matrix in `x` (``(..., n,
    n)``), of ``(x + x^T) / 2`` when `symmetrize_input`, else of the symmetric matrix its
    lower triangle holds; NaN where one is not positive definite."""
    x = asarray(x)
    if not symmetrize_input:
        x = ew.add(tril(x), _swap_last(tril(x, -1)))
    return cholesky_p(x)



def triangular_solve(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
    """``lax.linalg.triangular_solve``: `x` with ``op(a) @ x == b`` when `left_side`, else
    ``x @ op(a) == b``, where ``op(a)`` is `a` or its transpose (`transpose_a`) and only
    the `lower` (or upper) triangle of `a` is read. Batched over leading dimensions."""
    a, b = asarray(a), asarray(b)
    if conjugate_a and abstractify(a).dtype.kind == "c":
        raise NotImplementedError("triangular_solve: complex matrices are not supported yet")
    return triangular_solve_p(a, b, left_side=bool(left_side), lower=bool(lower),
                                   transpose_a=bool(transpose_a), conjugate_a=False,
                                   unit_diagonal=bool(unit_diagonal))


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
    _check_square("lu", abstractify(a))
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
    rows = _index_grid(n, len(lead), len(lead) + 2)       # (1.., n, 1)
    cols = _index_grid(m, len(lead) + 1, len(lead) + 2)   # (1.., 1, m)
    zeros = [0] * len(lead)
    zero = conv.convert_element_type(np.zeros((), aval.dtype), dtype=aval.dtype)
    full = (*lead, n, m)

    def step(k: Any, carry: tuple) -> tuple:
        factors, perm, swaps, pivots = carry
        column = _window(factors, [*zeros, 0, k], [*lead, n, 1])
        candidates = conv.select(sp.broadcast_to(ew.greater_equal(rows, k), shape=(*lead, n, 1)),
                                 ew.abs_(column), sp.broadcast_to(
                                     conv.convert_element_type(np.full((), -1, aval.dtype),
                                                               dtype=aval.dtype),
                                     shape=(*lead, n, 1)))
        p = red.argmax(candidates, axis=len(lead), index_dtype=dtypes.int32)  # (..., 1)
        is_k, is_p = ew.equal(rows, k), ew.equal(rows, sp.reshape(p, new_sizes=(*lead, 1, 1)))
        row_k = _window(factors, [*zeros, k, 0], [*lead, 1, m])
        row_p = _rows_at(factors, p, lead, m)
        swapped = conv.select(sp.broadcast_to(is_k, shape=full), sp.broadcast_to(row_p, shape=full),
                              conv.select(sp.broadcast_to(is_p, shape=full),
                                          sp.broadcast_to(row_k, shape=full), factors))
        flat_rows = sp.reshape(rows, new_sizes=(n,))
        perm_k = _window(perm, [*zeros, k], [*lead, 1])
        perm_p = _take_last(perm, p)
        perm = conv.select(sp.broadcast_to(ew.equal(flat_rows, k), shape=(*lead, n)), perm_p,
                           conv.select(sp.broadcast_to(ew.equal(flat_rows, p), shape=(*lead, n)),
                                       perm_k, perm))
        swaps = ew.add(swaps, conv.convert_element_type(ew.not_equal(
            sp.reshape(p, new_sizes=lead), k), dtype=dtypes.int32))
        pivots = idx_p.dynamic_update_slice(pivots, p, *zeros, k)
        pivot_row = _window(swapped, [*zeros, k, 0], [*lead, 1, m])
        pivot = _window(swapped, [*zeros, k, k], [*lead, 1, 1])
        # A zero pivot (its whole column below is zero) scales nothing, as in LAPACK.
        below = sp.broadcast_to(ew.logical_and(ew.greater(rows, k), ew.not_equal(pivot, zero)),
                                shape=(*lead, n, 1))
        multipliers = conv.select(below, ew.true_divide(
            _window(swapped, [*zeros, 0, k], [*lead, n, 1]), pivot), zero)
        right = sp.broadcast_to(ew.greater(cols, k), shape=full)
        update = conv.select(right, _matmul(multipliers, pivot_row), zero)
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
    return _column_loop(n, step, start)


def _lu_once(a: Any) -> tuple[Any, Any, Any, Any]:
    """`_lu` of `a`, staged once per trace and operand: slogdet's sign and log|det| (two
    primitives) read one factorization. (Two identical loops also broke IREE 3.13: it
    merged them and then returned one buffer twice.)"""
    memo = getattr(core.trace_stack[-1], "memo", None) if core.trace_stack else None
    if memo is None:
        return _lu(a)
    key = ("lax.linalg.lu", id(a))
    if key not in memo:
        memo[key] = (_lu(a), (a,))  # (the operand pins its id)
    return memo[key][0]


def _rows_at(x: Any, index: Any, lead: tuple, n: int) -> Any:
    """Row ``index[b]`` of each matrix ``x[b]`` (``index`` of shape ``(..., 1)``)."""
    where = sp.broadcast_to(sp.reshape(index, new_sizes=(*lead, 1, 1)), shape=(*lead, 1, n))
    return take_along_axis(x, where, axis=len(lead))


def _take_last(x: Any, index: Any) -> Any:
    return sp.broadcast_to(take_along_axis(x, index, axis=abstractify(x).ndim - 1),
                           shape=abstractify(x).shape)


# --- linear_solve, logabsdet, det_sign ------------------------------------------------------

def _linear_solve_eval(a: ShapedArray, b: ShapedArray) -> ShapedArray:
    _check_square("solve", a)
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
        y = _solve_impl(packed, pb, left_side=True, lower=True, unit_diagonal=True)
        return _solve_impl(packed, y, left_side=True, lower=False).astype(b.dtype)


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
    _check_square("det", a)
    return ShapedArray(a.shape[:-2], a.dtype)


def _logabsdet_composite(a: Any) -> Any:
    packed = _lu_once(a)[0]
    return red.reduce_sum(ew.log(ew.abs_(diagonal(packed, axis1=-2, axis2=-1))),
                          axes=(abstractify(a).ndim - 2,))


def _det_sign_composite(a: Any) -> Any:
    packed, _, swaps, _ = _lu_once(a)
    signs = red.reduce_prod(ew.sign(diagonal(packed, axis1=-2, axis2=-1)), axes=(abstractify(a).ndim - 2,))
    odd = ew.equal(ew.remainder(swaps, np.int32(2)), np.int32(1))
    return conv.select(odd, ew.negative(signs), signs)


linear_solve_p = define("linear_solve", impl=_in_float32(_linear_solve_impl),
                        abstract_eval=_linear_solve_eval,
                        composite=_linear_solve_composite,
                        doc="`x` with ``a @ x == b`` (LU with partial pivoting).")
logabsdet_p = define("logabsdet", abstract_eval=_det_eval, composite=_logabsdet_composite,
                     impl=_in_float32(lambda a: np.linalg.slogdet(a)[1].astype(a.dtype)),
                     doc="``log|det a|`` of each matrix.")
det_sign_p = define("det_sign", abstract_eval=_det_eval, composite=_det_sign_composite,
                    impl=_in_float32(lambda a: np.linalg.slogdet(a)[0].astype(a.dtype)),
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
    batch=_batch_rule(linear_solve_p))
logabsdet_p.def_rules(
    jvp=jvp_template(("a",), a="ad.logabsdet_tangent(a_dot, a)"),
    vjp=vjp_template(("a",), "a_bar = ad.logabsdet_cotangent(out_bar, a)"),
    batch=_batch_rule(logabsdet_p))
det_sign_p.def_rules(batch=_batch_rule(det_sign_p))


def linear_solve(a: Any, b: Any) -> Any:
    """`x` with ``a @ x == b``; `b` of shape ``(..., n, k)`` (batched like `a`)."""
    return linear_solve_p(asarray(a), asarray(b))


def logabsdet(a: Any) -> Any:
    return logabsdet_p(asarray(a))


def det_sign(a: Any) -> Any:
    return det_sign_p(asarray(a))
