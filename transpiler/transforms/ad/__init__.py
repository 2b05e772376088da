"""``ad``: the helpers VJP templates call (``ad.unbroadcast(g, shape)``, ...).

Everything here is plain `transpiler.numpy`/primitive code on static shapes, so it runs
eagerly, stages under ``jit`` and is itself differentiable (all it binds are primitives
with VJP templates). Shapes, axes and params are Python values; cotangents are arrays.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import transpiler.numpy as jnp
from transpiler import dtypes
from transpiler.errors import located
from transpiler.lax.bessel import bessel_i0e
from transpiler.lax.gamma_functions import zeta_s_derivative  # noqa: F401
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import reductions as red_p
from transpiler.primitives import shape as sp
from transpiler.primitives.core import abstractify

# Families kept in their own modules; generated code reaches each name as ``ad.<name>``.
from transpiler.transforms.ad.complex_numbers import (  # noqa: F401
    abs_cotangent, abs_tangent, complex_sign)
from transpiler.transforms.ad.fft import fft_cotangent  # noqa: F401
from transpiler.transforms.ad.convolution import (  # noqa: F401
    conv_lhs_cotangent, conv_rhs_cotangent, conv_tangent)
from transpiler.transforms.ad.indexing import (  # noqa: F401
    _extremal_shares, _gathered, _in_bounds, _ranges_like, _remaining, _scatter_mul_others,
    _update_ids, _winners, clamp_indices, dot_p, dot_transpose_lhs, dot_transpose_rhs,
    dynamic_slice_cotangent, dynamic_update_slice_operand_cotangent,
    dynamic_update_slice_update_cotangent, gather_cotangent, idx_p, scatter_operand_cotangent,
    scatter_updates_cotangent, sort_order, sorted_tangent, unsorted_cotangent)
from transpiler.transforms.ad.linalg import (  # noqa: F401
    cholesky_cotangent, cholesky_tangent, eig_left_vectors_cotangent,
    eig_left_vectors_tangent, eig_values_cotangent,
    eig_values_tangent, eig_vectors_cotangent, eig_vectors_inverse_cotangent,
    eig_vectors_inverse_tangent, eig_vectors_tangent, eigh_values_cotangent, eigh_values_tangent,
    eigh_vectors_cotangent, eigh_vectors_tangent, linear_solve_a_tangent, logabsdet_cotangent,
    logabsdet_tangent, qr_q_cotangent, qr_q_tangent, singular_values_cotangent,
    singular_values_tangent, svd_vectors_cotangent, svd_vectors_tangent,
    triangular_solve_a_cotangent, triangular_solve_a_tangent, triangular_solve_b_cotangent)
from transpiler.transforms.ad.remat import recompute  # noqa: F401
from transpiler.transforms.ad.shapes import (  # noqa: F401
    Shape, cast_like, convert_cotangent, expand_reduced, inverse_permutation, unbroadcast,
    unbroadcast_like, zeros_cotangent)
from transpiler.transforms.ad.windows import (  # noqa: F401
    reduce_window_sum, select_and_gather_add, select_and_scatter_add, window_prod_cotangent,
    window_prod_tangent, window_sum_transpose)


# --- elementwise -------------------------------------------------------------------------

def no_derivative(function: str, operand: str, tangent: Any) -> Any:
    """Raise: `function` has no derivative with respect to `operand` (polygamma's order,
    betainc's a and b ...; JAX refuses them too). A rule's contribution for that operand, so
    it runs only when the operand carries a tangent or needs a cotangent."""
    raise located(ValueError, f"{function} has no derivative with respect to its argument "
                  f"`{operand}` (JAX's has none either)", "differentiate with respect to the "
                  f"other arguments only (argnums=), or pass `{operand}` through "
                  "lax.stop_gradient")


def bessel_i1e_slope(x: Any, out: Any) -> Any:
    """``d i1e / dx = i0e(x) - i1e(x) (sign(x) + 1/x)``, 1/2 where ``|x|`` is below
    epsilon (JAX's rule)."""
    eps = float(dtypes.finfo(abstractify(x).dtype).eps)
    tiny = jnp.abs(x) <= eps
    safe = jnp.where(tiny, eps, x)
    slope = bessel_i0e(safe) - out * (jnp.sign(safe) + 1 / safe)
    return jnp.where(tiny, 0.5, slope)


def balanced_eq(x: Any, z: Any, y: Any) -> Any:
    """1 where ``x == z != y``, 0.5 where ``x == y == z``, else 0: how maximum/minimum
    share a cotangent (JAX's ``_balanced_eq``)."""
    return jnp.where(x == z, jnp.where(y == z, 0.5, 1.0), 0.0)


def integer_pow_derivative(x: Any, y: int) -> Any:
    """``d(x**y)/dx`` for a static int `y`."""
    if y == 0:
        return jnp.zeros_like(x)
    return y * conv.integer_pow(x, y=y - 1)


# --- shape primitives --------------------------------------------------------------------

def slice_axis(g: Any, start: int, stop: int, axis: int) -> Any:
    shape = abstractify(g).shape
    starts = tuple(start if d == axis else 0 for d in range(len(shape)))
    limits = tuple(stop if d == axis else n for d, n in enumerate(shape))
    return sp.slice_(g, start_indices=starts, limit_indices=limits, strides=None)


def split_concatenated(g: Any, xs: Sequence[Any], axis: int) -> list[Any]:
    """concatenate's adjoint: the piece of `g` each operand of `xs` became."""
    pieces = []  # (built here: reverse mode follows the appends, for second derivatives)
    start = 0
    for x in xs:
        stop = start + abstractify(x).shape[axis]
        pieces.append(cast_like(slice_axis(g, start, stop, axis), x))
        start = stop
    return pieces


def unpad(g: Any, low: Shape, high: Shape, interior: Shape) -> Any:
    """pad's adjoint w.r.t. the operand: crop the edges, keep every (interior+1)-th element
    (negative edges, which cropped, pad with zeros instead)."""
    g_aval = abstractify(g)
    rank = g_aval.ndim
    if rank == 0:  # nothing to crop (and the pad primitive's eager impl rejects 0-d)
        return g
    zero = np.zeros((), g_aval.dtype)
    unpadded = sp.pad(g, zero, low=tuple(-lo for lo in low), high=tuple(-hi for hi in high),
                      interior=(0,) * rank)
    shape = abstractify(unpadded).shape
    return sp.slice_(unpadded, start_indices=(0,) * rank, limit_indices=shape,
                     strides=tuple(i + 1 for i in interior))


def pad_value_cotangent(g: Any, low: Shape, high: Shape, interior: Shape, value: Any) -> Any:
    """pad's adjoint w.r.t. the padding value: the sum over every padded position."""
    total = red_p.reduce_sum(g, axes=tuple(range(abstractify(g).ndim)))
    inside = unpad(g, low, high, interior)
    kept = red_p.reduce_sum(inside, axes=tuple(range(abstractify(inside).ndim)))
    return cast_like(total - kept, value)


def unslice(g: Any, shape: Shape, start_indices: Shape, limit_indices: Shape,
            strides: Any) -> Any:
    """slice's adjoint: zeros of `shape` with `g` written back at the sliced positions
    (JAX's ``_slice_transpose_rule``: a pad with interior padding for strides)."""
    g_aval = abstractify(g)
    if not shape:  # a 0-d slice is the whole operand
        return g
    strides = tuple(strides) if strides is not None else (1,) * len(shape)
    real_limits = tuple(s + (0 if n == 0 else 1 + (n - 1) * k)
                        for s, n, k in zip(start_indices, g_aval.shape, strides))
    return sp.pad(g, np.zeros((), g_aval.dtype), low=tuple(start_indices),
                  high=tuple(d - r for d, r in zip(shape, real_limits)),
                  interior=tuple(k - 1 for k in strides))


def rev(g: Any, dimensions: Sequence[int]) -> Any:
    return sp.rev(g, dimensions=tuple(dimensions))


# --- reductions and scans ----------------------------------------------------------------

def chooser_cotangent(g: Any, x: Any, out: Any, axes: Sequence[int]) -> Any:
    """reduce_max/min's adjoint: `g` split equally among the elements equal to the result
    (JAX's ``_reduce_chooser_jvp_rule``)."""
    shape = abstractify(x).shape
    hits = conv.convert_element_type(x == expand_reduced(out, shape, axes),
                                     dtype=abstractify(g).dtype)
    counts = expand_reduced(red_p.reduce_sum(hits, axes=tuple(axes)), shape, axes)
    return hits * expand_reduced(g, shape, axes) / counts


def prod_cotangent(g: Any, x: Any, axes: Sequence[int]) -> Any:
    """reduce_prod's adjoint without dividing by `x` (right where `x` has zeros): each
    element gets the product of the others, as exclusive products from both sides."""
    aval = abstractify(x)
    axes = tuple(axes)
    kept = tuple(d for d in range(aval.ndim) if d not in axes)
    n = int(np.prod([aval.shape[d] for d in axes], dtype=np.int64))
    if n == 0 or aval.size == 0:
        return jnp.zeros_like(x)
    perm = kept + axes
    rows = sp.reshape(sp.transpose(x, permutation=perm),
                      new_sizes=tuple(aval.shape[d] for d in kept) + (n,))
    others = exclusive_cumprod(rows, reverse=False) * exclusive_cumprod(rows, reverse=True)
    others = sp.reshape(others, new_sizes=tuple(aval.shape[d] for d in perm))
    others = sp.transpose(others, permutation=inverse_permutation(perm))
    return expand_reduced(g, aval.shape, axes) * others


def exclusive_cumprod(x: Any, reverse: bool) -> Any:
    """Products of the elements strictly before (after, if `reverse`) each one, last axis."""
    rank = abstractify(x).ndim
    one = np.ones((), abstractify(x).dtype)
    shift = (1, -1) if not reverse else (-1, 1)
    shifted = sp.pad(x, one, low=(0,) * (rank - 1) + (shift[0],),
                     high=(0,) * (rank - 1) + (shift[1],), interior=(0,) * rank)
    return red_p.cumprod(shifted, axis=rank - 1, reverse=reverse)


def cumsum(g: Any, axis: int, reverse: bool) -> Any:
    return red_p.cumsum(g, axis=axis, reverse=reverse)


def cumprod_cotangent(g: Any, x: Any, out: Any, axis: int, reverse: bool) -> Any:
    """cumprod's adjoint, ``x_bar[i] = sum_{j >= i} g[j] * prod_{k <= j, k != i} x[k]``,
    in O(n) and exact with zeros: before the first zero it is ``rcumsum(g * out) / x``;
    at the first zero, the same with that zero replaced by 1; after it, 0."""
    is_zero = x == 0
    earlier = red_p.cumsum(conv.convert_element_type(is_zero, dtype=dtypes.int32),
                           axis=axis, reverse=reverse)
    first_zero = ew.logical_and(is_zero, earlier == 1)
    safe_x = jnp.where(is_zero, 1.0, x)
    before = red_p.cumsum(g * out, axis=axis, reverse=not reverse) / safe_x
    out_at_zero = red_p.cumprod(jnp.where(first_zero, 1.0, x), axis=axis, reverse=reverse)
    at_zero = red_p.cumsum(g * out_at_zero, axis=axis, reverse=not reverse)
    return jnp.where(first_zero, at_zero, jnp.where(is_zero, 0.0, before))


def cumulative_chooser_cotangent(g: Any, x: Any, out: Any, axis: int, reverse: bool) -> Any:
    """cummax/cummin's adjoint: each ``g[j]`` goes to the element the running extreme
    came from, the latest ``i <= j`` with ``x[i] == out[i] == out[j]`` (of tied values the
    later one takes over; JAX's scan-tree rule splits ties differently). Computed as
    ``S[i] - S[next(i)]`` with ``S`` the reverse cumsum of `g` and ``next(i)`` the next
    position where the running extreme is attained again."""
    if reverse:
        flip = lambda a: sp.rev(a, dimensions=(axis,))  # noqa: E731
        return flip(cumulative_chooser_cotangent(flip(g), flip(x), flip(out), axis, False))
    g, x, out = (jnp.moveaxis(a, axis, -1) for a in (g, x, out))
    shape = abstractify(x).shape
    n = shape[-1]
    attained = x == out
    position = conv.iota(dtype=dtypes.int32, shape=shape, dimension=len(shape) - 1)
    upcoming = red_p.cummin(jnp.where(attained, position, n), axis=len(shape) - 1, reverse=True)
    nxt = sp.pad(upcoming, np.int32(n), low=(0,) * (len(shape) - 1) + (-1,),
                 high=(0,) * (len(shape) - 1) + (1,), interior=(0,) * len(shape))
    suffix = red_p.cumsum(g, axis=len(shape) - 1, reverse=True)
    padded = sp.pad(suffix, np.zeros((), abstractify(g).dtype),
                    low=(0,) * len(shape), high=(0,) * (len(shape) - 1) + (1,),
                    interior=(0,) * len(shape))
    after = jnp.take_along_axis(padded, nxt, axis=-1)
    return jnp.moveaxis(jnp.where(attained, suffix - after, 0.0), -1, axis)


# Helpers the reverse-mode transform emits around the templates (None-aware accumulation,
# grad's seed, container cotangents) and its run-time call dispatch.
from transpiler.transforms.ad.cotangents import (  # noqa: E402,F401
    SEED, SEED_IF_SCALAR, add, appended, appended_tangent, attribute_bar, attribute_tangent,
    basis_of, defined, fail, finalize, forward_jacobian, index_bar, is_scalar, item, items_bar,
    items_tangent, keyword_bars, or_zeros, repeat_bar, reverse_jacobian, rows_bar, rows_tangent,
    seed, sequence_derivative, set_item_tangent, spread, unpacked_cotangent, unpacked_dict_bar,
    unpacked_parts, values_bar, values_tangent, with_item_tangent, without_item)
from transpiler.transforms.ad.calls import (  # noqa: E402,F401
    ELEMENT, custom_vjp_bwd, map_bar, primal, unbound, vjp_call, vjp_call_closure,
    vjp_call_closure_keywords, vjp_call_keywords)
from transpiler.transforms.ad.tangents import *  # noqa: E402,F401,F403  (JVP helpers)
from transpiler.transforms.common.closures import (  # noqa: E402,F401  (a closure's derivative)
    cell_tangents, free_bars, free_bars_bar, free_names, free_params_bar, free_params_tangent,
    free_values, free_values_bar, free_values_tangent)
from transpiler.transforms.common.partials import (  # noqa: E402,F401  (a partial's derivative)
    bound_tangent as partial_bound_tangent, make_vjp as partial_make_vjp,
    own_bars as partial_own_bars, pair as partial_pair)
from transpiler.transforms.ad.forward import (  # noqa: E402,F401  (forward mode)
    at, custom_jvp_call, custom_jvp_vjp, index_tangent, jvp_call, map_jvp, tangents_of,
    unpack_tangents,
    zeros_like_tree)
from transpiler.transforms.ad.control import (  # noqa: E402,F401  (second order through lax)
    _where as control_where, fill as control_fill, unfill as control_unfill,
    where_bar as control_where_bar)
