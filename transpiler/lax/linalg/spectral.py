"""Symmetric eigendecomposition and singular value decomposition, as primitives.

- ``eigh_vectors(a)`` / ``eigh_values(a)``: the eigenvectors (columns, in the order of
  their eigenvalues) and the ascending eigenvalues of the symmetric part of each matrix;
- ``svd_vectors(a)`` / ``singular_values(a)``: the right singular vectors (columns, in
  the order of their singular values) and the descending singular values of each matrix
  of shape ``(..., m, n)`` with ``m >= n`` (the public functions transpose wide ones).

Vectors and values are separate primitives so that a program reading only the values
differentiates without the vectors' ``1 / (w_j - w_i)`` terms, which are infinite for
repeated eigenvalues (JAX's eigenvalue derivative is finite there too); under a trace
both read one staged decomposition (`traced_once`).

Eagerly they run LAPACK through NumPy. Under a trace they are cyclic Jacobi methods in
the round-robin ("chess tournament") ordering: each round rotates ``n / 2`` disjoint
pairs of rows/columns at once, as whole-array arithmetic on the two halves of the
matrix, then moves the positions one step around the tournament (a fixed permutation of
static slices), so that ``n - 1`` rounds meet every pair once; sweeps repeat until the
off-diagonal part is below rounding (``stablehlo.while`` around a loop of rounds).
Two-sided rotations diagonalize ``a`` (eigh); one-sided rotations orthogonalize the
columns of ``a`` (Hestenes' method for the SVD, accurate for small singular values).
An odd size gets one zero row/column that no rotation touches.

Each vector's entry of largest magnitude (the first, when tied) is made positive in both
forms, so that eager and compiled results agree (LAPACK's signs are arbitrary).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.lax.control import while_loop
from transpiler.lax.linalg.common import (as_float_matrix, check_square, column_loop,
                                          host_call, in_float32, matmul, narrowed, on_host,
                                          swap_last, symmetrized, traced_once, widened)
from transpiler.primitives.batching import leading_batch_rule
from transpiler.lax.linalg.qr import householder_q_p
from transpiler.numpy.indexing_functions import take_along_axis
from transpiler.numpy.matrices import diagonal, tril, triu
from transpiler.numpy.sorting import argsort
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import reductions as red
from transpiler.primitives import shape as sp
from transpiler.primitives.core import ShapedArray, abstractify, define, dtype_error, shape_error
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template

_MAX_SWEEPS = 30  # Jacobi converges quadratically: 5-10 sweeps in float32 and float64


# --- the round-robin Jacobi machinery --------------------------------------------------------

def _constant(value: Any, dtype: Any) -> Any:
    return conv.convert_element_type(np.asarray(value, dtype), dtype=dtype)


def _part(x: Any, axis: int, start: int, stop: int) -> Any:
    """``x[..., start:stop, :]`` (axis -2) or ``x[..., start:stop]`` (axis -1)."""
    shape = abstractify(x).shape
    axis %= len(shape)
    starts = [0] * len(shape)
    limits = list(shape)
    starts[axis], limits[axis] = start, stop
    return sp.slice_(x, start_indices=tuple(starts), limit_indices=tuple(limits), strides=None)


def _along(v: Any, axis: int) -> Any:
    """A per-pair vector ``(..., h)`` shaped to scale the halves of a matrix along `axis`."""
    lead = abstractify(v).shape
    shape = (*lead, 1) if axis % 2 == 0 else (*lead[:-1], 1, lead[-1])
    return sp.reshape(v, new_sizes=shape)


def _rotate(x: Any, c: Any, s: Any, axis: int) -> Any:
    """Rotate pair ``i`` -- rows (axis -2) or columns (-1) ``i`` and ``h + i`` -- by
    ``[[c, s], [-s, c]]``: ``top' = c top - s bottom``, ``bottom' = s top + c bottom``."""
    size = abstractify(x).shape[axis]
    h = size // 2
    top, bottom = _part(x, axis, 0, h), _part(x, axis, h, size)
    c, s = _along(c, axis), _along(s, axis)
    return sp.concatenate(ew.subtract(ew.multiply(c, top), ew.multiply(s, bottom)),
                          ew.add(ew.multiply(s, top), ew.multiply(c, bottom)),
                          axis=abstractify(x).ndim + axis)


def _next_round(x: Any, axis: int) -> Any:
    """The tournament's next pairing: position 0 stays, the others move one step around
    the circle ``1 -> 2 -> ... -> h-1 -> n-1 -> n-2 -> ... -> h -> 1``."""
    size = abstractify(x).shape[axis]
    h = size // 2
    if h < 2:
        return x
    pieces = [(0, 1), (h, h + 1), (1, h - 1), (h + 1, size), (h - 1, h)]
    return sp.concatenate(*[_part(x, axis, a, b) for a, b in pieces if b > a],
                          axis=abstractify(x).ndim + axis)


def _rotation(app: Any, aqq: Any, apq: Any) -> tuple[Any, Any, Any]:
    """(c, s, t = s / c) of the rotation that zeroes ``apq`` of ``[[app, apq], [apq, aqq]]`` (the
    smaller of the two angles; none where ``apq`` is 0)."""
    dtype = abstractify(app).dtype
    one, zero = _constant(1, dtype), _constant(0, dtype)
    flat = ew.equal(apq, zero)
    theta = ew.true_divide(ew.subtract(aqq, app),
                           ew.multiply(_constant(2, dtype), conv.select(flat, one, apq)))
    sign = conv.select(ew.less(theta, zero), _constant(-1, dtype), one)
    t = ew.true_divide(sign, ew.add(ew.abs_(theta), ew.sqrt(ew.add(ew.multiply(theta, theta),
                                                                   one))))
    t = conv.select(flat, zero, t)
    c = ew.rsqrt(ew.add(ew.multiply(t, t), one))
    return c, ew.multiply(t, c), t


def _padded(x: Any, axes: tuple[int, ...]) -> Any:
    """`x` with one zero row/column appended along each of `axes` whose size is odd."""
    for axis in axes:
        shape = list(abstractify(x).shape)
        if shape[axis] % 2:
            shape[axis] = 1
            zeros = _constant(np.zeros(shape), abstractify(x).dtype)
            x = sp.concatenate(x, zeros, axis=len(shape) + axis)
    return x


def _identity(lead: tuple, n: int, dtype: Any) -> Any:
    return sp.broadcast_to(_constant(np.eye(n), dtype), shape=(*lead, n, n))


def _sweeps(one_sweep: Any, converged: Any, state: tuple) -> tuple:
    """``one_sweep`` until `converged` holds for every matrix (at most `_MAX_SWEEPS`
    times), and once more."""
    def unfinished(carry: tuple) -> Any:
        *rest, count = carry
        return ew.logical_and(ew.less(count, np.int32(_MAX_SWEEPS)),
                              ew.logical_not(converged(*rest)))

    def sweep(carry: tuple) -> tuple:
        *rest, count = carry
        return (*one_sweep(*rest), ew.add(count, np.int32(1)))

    start = conv.convert_element_type(np.asarray(0, np.int32), dtype=dtypes.int32)
    # One sweep past the test: convergence is quadratic, so it takes the off-diagonal part
    # from the tolerance (n eps) down to rounding, which the eigenvectors need.
    return tuple(one_sweep(*while_loop(unfinished, sweep, (*state, start))[:-1]))


def _off_diagonal_small(g: Any, relative: bool) -> Any:
    """Whether every matrix `g` is diagonal to rounding: the squares of its off-diagonal
    entries sum to at most ``(n eps)^2`` times those of ``sqrt(g_ii g_jj)`` (`relative`:
    Hestenes' test on ``b^T b``, whose diagonal is the squared column norms) or of all
    entries (eigh, whose diagonal can hold zeros)."""
    dtype = abstractify(g).dtype
    shape = abstractify(g).shape
    ndim, n = len(shape), shape[-1]
    square = ew.multiply(g, g)
    total = red.reduce_sum(square, axes=(ndim - 2, ndim - 1))
    d = diagonal(g, axis1=-2, axis2=-1)
    diag = red.reduce_sum(ew.multiply(d, d), axes=(ndim - 2,))
    if relative:
        norms = red.reduce_sum(ew.abs_(d), axes=(ndim - 2,))
        scale = ew.subtract(ew.multiply(norms, norms), diag)
    else:
        scale = total
    tol = float(np.finfo(dtype).eps) * n
    small = ew.less_equal(ew.subtract(total, diag), ew.multiply(_constant(tol * tol, dtype), scale))
    return red.reduce_and(small, axes=tuple(range(ndim - 2)))


def _sorted_columns(values: Any, vectors: Any, descending: bool) -> tuple[Any, Any]:
    key = ew.negative(values) if descending else values
    order = argsort(key, axis=-1, stable=True)
    values = take_along_axis(values, order, axis=-1)
    lead = abstractify(vectors).shape
    where = sp.broadcast_to(sp.reshape(order, new_sizes=(*lead[:-2], 1, lead[-1])), shape=lead)
    return values, _signs_fixed(take_along_axis(vectors, where, axis=-1))


def _signs_fixed(vectors: Any) -> Any:
    """Each column with its entry of largest magnitude (the first, when tied) positive."""
    ndim = abstractify(vectors).ndim
    at = red.argmax(ew.abs_(vectors), axis=ndim - 2, index_dtype=dtypes.int32)
    lead = abstractify(at).shape
    pick = take_along_axis(vectors, sp.reshape(at, new_sizes=(*lead[:-1], 1, lead[-1])),
                           axis=-2)
    dtype = abstractify(vectors).dtype
    sign = conv.select(ew.less(pick, _constant(0, dtype)), _constant(-1, dtype),
                       _constant(1, dtype))
    return ew.multiply(vectors, sign)


def _signs_fixed_numpy(vectors: np.ndarray) -> np.ndarray:
    at = np.argmax(np.abs(vectors), axis=-2)[..., None, :]
    return vectors * np.where(np.take_along_axis(vectors, at, axis=-2) < 0, -1, 1)


# --- eigh: two-sided Jacobi -------------------------------------------------------------------

def _jacobi_eigh(a: Any) -> tuple[Any, Any]:
    """(ascending eigenvalues, eigenvectors as columns) of the symmetric `a`."""
    aval = abstractify(a)
    lead, n, dtype = aval.shape[:-2], aval.shape[-1], aval.dtype
    a = conv.optimization_barrier(_padded(a, (-2, -1)))  # (see lu._lu)
    size = abstractify(a).shape[-1]
    h = size // 2

    # The entries a round sets exactly instead of rotating them (rounding would otherwise
    # accumulate there): the diagonal and the pairs' off-diagonal entries.
    diagonal_mask = np.eye(size, dtype=bool)
    pair_mask = np.zeros((size, size), dtype=bool)
    pair_mask[np.arange(h), np.arange(h) + h] = pair_mask[np.arange(h) + h, np.arange(h)] = True

    def one_round(_: Any, carry: tuple) -> tuple:
        m, v = carry
        d = diagonal(m, axis1=-2, axis2=-1)
        app, aqq = _part(d, -1, 0, h), _part(d, -1, h, size)
        apq = diagonal(_part(_part(m, -2, 0, h), -1, h, size), axis1=-2, axis2=-1)
        c, s, t = _rotation(app, aqq, apq)
        m = _rotate(_rotate(m, c, s, -2), c, s, -1)
        shift = ew.multiply(t, apq)  # app' = app - t apq, aqq' = aqq + t apq
        d = sp.concatenate(ew.subtract(app, shift), ew.add(aqq, shift), axis=len(lead))
        d = ew.multiply(sp.reshape(d, new_sizes=(*lead, size, 1)), _constant(np.eye(size), dtype))
        m = conv.select(sp.broadcast_to(diagonal_mask, shape=(*lead, size, size)), d,
                        conv.select(sp.broadcast_to(pair_mask, shape=(*lead, size, size)),
                                    _constant(np.zeros((size, size)), dtype), m))
        v = _rotate(v, c, s, -1)
        return _next_round(_next_round(m, -2), -1), _next_round(v, -1)

    def one_sweep(m: Any, v: Any) -> tuple:
        return column_loop(size - 1, one_round, (m, v))

    def converged(m: Any, v: Any) -> Any:
        return _off_diagonal_small(m, relative=False)

    m, v = _sweeps(one_sweep, converged, (a, _identity(lead, size, dtype)))
    # Whole sweeps bring every position back: the padding is the last row and column.
    values = _part(diagonal(m, axis1=-2, axis2=-1), -1, 0, n)
    return _sorted_columns(values, _part(_part(v, -2, 0, n), -1, 0, n), descending=False)


def _eigh(a: Any) -> tuple[Any, Any]:
    """(values, vectors) of the symmetric part of `a`, staged once per operand: by LAPACK
    on the host (one call for both) within `lapack_on_host`, else by Jacobi sweeps."""
    return traced_once("eigh", _eigh_staged, a)


def _eigh_staged(a: Any) -> tuple[Any, Any]:
    if on_host():
        aval = abstractify(a)
        w, v = host_call(in_float32(_eigh_numpy), [_eigh_values_eval(aval), aval], a)
        return w, v
    return _jacobi_eigh(symmetrized(a))


def _eigh_eval(a: ShapedArray) -> ShapedArray:
    check_square("eigh", a)
    return a.update(weak_type=False)


def _eigh_values_eval(a: ShapedArray) -> ShapedArray:
    check_square("eigh", a)
    return ShapedArray(a.shape[:-1], a.dtype)


def _eigh_numpy(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w, v = np.linalg.eigh((a + np.swapaxes(a, -1, -2)) / 2)
    return w.astype(a.dtype), _signs_fixed_numpy(v).astype(a.dtype)


eigh_vectors_p = define(
    "eigh_vectors", impl=in_float32(lambda a: _eigh_numpy(a)[1]), abstract_eval=_eigh_eval,
    composite=lambda a: _eigh(a)[1],
    doc="The eigenvectors (columns, ascending eigenvalues) of the symmetric part of `a`.")
eigh_values_p = define(
    "eigh_values", impl=in_float32(lambda a: _eigh_numpy(a)[0]),
    abstract_eval=_eigh_values_eval, composite=lambda a: _eigh(a)[0],
    doc="The ascending eigenvalues of the symmetric part of `a`.")


# --- svd: one-sided (Hestenes) Jacobi --------------------------------------------------------

def _jacobi_svd(a: Any) -> tuple[Any, Any]:
    """(descending singular values, right singular vectors as columns) of the tall `a`."""
    aval = abstractify(a)
    lead, n, dtype = aval.shape[:-2], aval.shape[-1], aval.dtype
    a = conv.optimization_barrier(_padded(a, (-1,)))
    size = abstractify(a).shape[-1]
    h = size // 2
    ndim = aval.ndim

    def one_round(_: Any, carry: tuple) -> tuple:
        b, v = carry
        top, bottom = _part(b, -1, 0, h), _part(b, -1, h, size)
        app = red.reduce_sum(ew.multiply(top, top), axes=(ndim - 2,))
        aqq = red.reduce_sum(ew.multiply(bottom, bottom), axes=(ndim - 2,))
        apq = red.reduce_sum(ew.multiply(top, bottom), axes=(ndim - 2,))
        c, s, _ = _rotation(app, aqq, apq)
        b, v = _rotate(b, c, s, -1), _rotate(v, c, s, -1)
        return _next_round(b, -1), _next_round(v, -1)

    def one_sweep(b: Any, v: Any) -> tuple:
        return column_loop(size - 1, one_round, (b, v))

    def converged(b: Any, v: Any) -> Any:
        return _off_diagonal_small(matmul(swap_last(b), b), relative=True)

    b, v = _sweeps(one_sweep, converged, (a, _identity(lead, size, dtype)))
    norms = ew.sqrt(red.reduce_sum(ew.multiply(b, b), axes=(ndim - 2,)))
    return _sorted_columns(_part(norms, -1, 0, n), _part(_part(v, -2, 0, n), -1, 0, n),
                           descending=True)


def _svd(a: Any) -> tuple[Any, Any]:
    """(singular values, right vectors) of the tall `a`, staged once per operand: by LAPACK
    on the host (one call for both) within `lapack_on_host`, else by Jacobi sweeps."""
    return traced_once("svd", _svd_staged, a)


def _svd_staged(a: Any) -> tuple[Any, Any]:
    if on_host():
        aval = abstractify(a)
        s, v = host_call(in_float32(_svd_numpy), [_singular_values_eval(aval),
                                                  _svd_vectors_eval(aval)], a)
        return s, v
    return _jacobi_svd(a)


def _svd_check(a: ShapedArray) -> None:
    if a.ndim < 2 or a.shape[-2] < a.shape[-1]:
        raise shape_error(f"svd: expected a matrix with at least as many rows as columns "
                          f"(shape (..., m, n), m >= n), got shape {list(a.shape)}")
    if not dtypes.is_float(a.dtype):
        raise dtype_error(f"svd: expected a floating-point matrix, got {a.dtype}",
                          "convert it with .astype(jnp.float32) first")


def _svd_vectors_eval(a: ShapedArray) -> ShapedArray:
    _svd_check(a)
    return ShapedArray((*a.shape[:-2], a.shape[-1], a.shape[-1]), a.dtype)


def _singular_values_eval(a: ShapedArray) -> ShapedArray:
    _svd_check(a)
    return ShapedArray((*a.shape[:-2], a.shape[-1]), a.dtype)


def _svd_numpy(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    _, s, vh = np.linalg.svd(a, full_matrices=False)
    return s.astype(a.dtype), _signs_fixed_numpy(np.swapaxes(vh, -1, -2)).astype(a.dtype)


svd_vectors_p = define(
    "svd_vectors", impl=in_float32(lambda a: _svd_numpy(a)[1]), abstract_eval=_svd_vectors_eval,
    composite=lambda a: _svd(a)[1],
    doc="The right singular vectors (columns, descending singular values) of a tall `a`.")
singular_values_p = define(
    "singular_values",
    impl=in_float32(lambda a: np.linalg.svd(a, compute_uv=False).astype(a.dtype)),
    abstract_eval=_singular_values_eval, composite=lambda a: _svd(a)[0],
    doc="The descending singular values of a tall `a`.")


# --- rules (JAX's formulas; the vectors' have 1 / (w_j - w_i), infinite when repeated) ------

eigh_values_p.def_rules(
    jvp=jvp_template(("a",), a="ad.eigh_values_tangent(a_dot, a)"),
    vjp=vjp_template(("a",), "a_bar = ad.eigh_values_cotangent(out_bar, a)"),
    batch=leading_batch_rule(eigh_values_p))
eigh_vectors_p.def_rules(
    jvp=jvp_template(("a",), a="ad.eigh_vectors_tangent(a_dot, a, out)"),
    vjp=vjp_template(("a",), "a_bar = ad.eigh_vectors_cotangent(out_bar, a, out)"),
    batch=leading_batch_rule(eigh_vectors_p))
singular_values_p.def_rules(
    jvp=jvp_template(("a",), a="ad.singular_values_tangent(a_dot, a)"),
    vjp=vjp_template(("a",), "a_bar = ad.singular_values_cotangent(out_bar, a)"),
    batch=leading_batch_rule(singular_values_p))
svd_vectors_p.def_rules(
    jvp=jvp_template(("a",), a="ad.svd_vectors_tangent(a_dot, a, out)"),
    vjp=vjp_template(("a",), "a_bar = ad.svd_vectors_cotangent(out_bar, a, out)"),
    batch=leading_batch_rule(svd_vectors_p))


# --- the lax.linalg functions -----------------------------------------------------------------

def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: Any = None) -> tuple[Any, Any]:
    """``lax.linalg.eigh``: (eigenvectors as columns, ascending eigenvalues) of each
    symmetric matrix in `x`: of ``(x + x^T) / 2`` when `symmetrize_input`, else of the
    symmetric matrix its `lower` (or upper) triangle holds."""
    if subset_by_index is not None:
        raise located(NotImplementedError, "eigh: subset_by_index is not supported yet; slice "
                      "the eigenvalues and eigenvectors it returns")
    x = as_float_matrix(x, "eigh")
    check_square("eigh", abstractify(x))
    work = widened(x)
    if not symmetrize_input:
        part = tril(work) if lower else triu(work)
        strict = tril(work, -1) if lower else triu(work, 1)
        work = ew.add(part, swap_last(strict))
    return narrowed(eigh_vectors_p(work), x), narrowed(eigh_values_p(work), x)


def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: Any = None, algorithm: Any = None) -> Any:
    """``lax.linalg.svd``: ``(u, s, vh)`` with ``x == u @ diag(s) @ vh`` for each matrix
    ``(..., m, n)``, singular values descending -- or only ``s`` without `compute_uv`.

    The vectors of the shorter side come from the Jacobi primitive; those of the longer
    side are the Householder ``Q`` of ``x v`` (whose columns are orthogonal), with signs
    making ``u^T x v`` nonnegative: orthonormal even where a singular value is 0, and
    completed to a square matrix when `full_matrices`."""
    if subset_by_index is not None:
        raise located(NotImplementedError, "svd: subset_by_index is not supported yet; slice "
                      "the result instead")
    x = as_float_matrix(x, "svd")
    work = widened(x)
    m, n = abstractify(work).shape[-2:]
    tall = swap_last(work) if m < n else work
    s = singular_values_p(tall)
    if not compute_uv:
        return narrowed(s, x)
    v = svd_vectors_p(tall)
    u = longer_side_vectors(tall, v, bool(full_matrices))
    if m < n:
        u, v = v, u
    return narrowed(u, x), narrowed(s, x), narrowed(swap_last(v), x)


def longer_side_vectors(tall: Any, v: Any, full_matrices: bool) -> Any:
    """The left singular vectors of the tall matrix whose right ones are `v`: orthonormal
    columns (also where a singular value is 0 or tiny), ``u^T tall v`` nonnegative."""
    b = matmul(tall, v)
    q = householder_q_p(b, full_matrices=full_matrices)
    k = abstractify(v).shape[-1]
    lead, rows = abstractify(q).shape[:-2], abstractify(q).shape[-2]
    first = q if abstractify(q).shape[-1] == k else sp.slice_(
        q, start_indices=(0,) * (len(lead) + 2), limit_indices=(*lead, rows, k), strides=None)
    dtype = abstractify(q).dtype
    projections = red.reduce_sum(ew.multiply(first, b), axes=(len(lead),))
    signs = conv.select(ew.less(projections, _constant(0, dtype)), _constant(-1, dtype),
                        _constant(1, dtype))
    extra = abstractify(q).shape[-1] - k
    if extra:
        signs = sp.concatenate(signs, _constant(np.ones((*lead, extra)), dtype), axis=len(lead))
    return ew.multiply(q, sp.reshape(signs, new_sizes=(*lead, 1, abstractify(q).shape[-1])))
