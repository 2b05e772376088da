"""``transpiler.lax``: JAX's lower-level operations, control flow included (lax/control.py,
lax/loops.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import dtypes, tree_util
from transpiler.primitives import conversions
from transpiler.primitives import dot as dot_p
from transpiler.primitives import indexing as idx_p
from transpiler.primitives import reductions as red_p
from transpiler.primitives.core import abstractify, normalize_axis
from transpiler.primitives import elementwise as ew

add, sub, mul, div = ew.add, ew.subtract, ew.multiply, ew.true_divide
max, min = ew.maximum, ew.minimum  # noqa: A001
exp, log, sin, cos, tanh, sqrt, rsqrt = ew.exp, ew.log, ew.sin, ew.cos, ew.tanh, ew.sqrt, ew.rsqrt
logistic, integer_pow_p = ew.logistic, conversions.integer_pow
shift_left = ew.left_shift  # (shift_right_logical: lax/elementwise_ops.py)
real, imag, conj, complex = ew.real, ew.imag, ew.conj, ew.complex_  # noqa: A001


def stop_gradient(x: Any) -> Any:
    """``lax.stop_gradient``: `x` unchanged, but a constant to differentiation (grad and vjp
    see no dependence on the inputs through it). Maps over the leaves of a pytree; only
    floating leaves go through the primitive, others are returned as they are (as in JAX)."""
    def stop(leaf: Any) -> Any:
        dtype = abstractify(leaf, 0, "stop_gradient").dtype
        return conversions.stop_gradient(leaf) if dtypes.is_inexact(dtype) else leaf
    return tree_util.tree_map(stop, x)


def optimization_barrier(operand: Any) -> Any:
    """``lax.optimization_barrier``: `operand` (a pytree) unchanged, but neither trace-time
    folding nor the compiler moves computation across it."""
    return tree_util.tree_map(conversions.optimization_barrier, operand)


def convert_element_type(operand: Any, new_dtype: Any) -> Any:
    return conversions.convert_element_type(operand, dtype=dtypes.canonicalize(new_dtype))


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    return conversions.bitcast_convert_type(operand, dtype=np.dtype(new_dtype))


def integer_pow(x: Any, y: int) -> Any:
    return conversions.integer_pow(x, y=y)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    return conversions.select(pred, on_true, on_false)


def iota(dtype: Any, size: int) -> Any:
    return conversions.iota(dtype=dtypes.canonicalize(dtype), shape=(size,), dimension=0)


def broadcasted_iota(dtype: Any, shape: Any, dimension: int) -> Any:
    return conversions.iota(dtype=dtypes.canonicalize(dtype), shape=tuple(shape), dimension=dimension)


def dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: Any = None) -> Any:
    """``lax.dot_general``: contraction over explicit contracting and batch dimensions."""
    return dot_p.dot_general(
        lhs, rhs, dimension_numbers=dot_p.normalize_dimension_numbers(dimension_numbers),
        preferred_element_type=None if preferred_element_type is None
        else dtypes.canonicalize(preferred_element_type))


def _wrap_start(index: Any, size: int) -> Any:
    """Negative start indices count from the end, as in JAX (the primitive then clamps)."""
    if isinstance(index, (int, np.integer)):
        return int(index) + size if index < 0 else int(index)
    return ew.add(index, conversions.select(ew.less(index, 0), size, 0))


def dynamic_slice(operand: Any, start_indices: Any, slice_sizes: Any) -> Any:
    """``lax.dynamic_slice``: a static-size window at traced start indices (clamped to fit)."""
    shape = abstractify(operand, 0, "dynamic_slice").shape
    starts = [_wrap_start(i, d) for i, d in zip(start_indices, shape)]
    return idx_p.dynamic_slice(operand, *starts, slice_sizes=tuple(int(s) for s in slice_sizes))


def dynamic_update_slice(operand: Any, update: Any, start_indices: Any) -> Any:
    """``lax.dynamic_update_slice``: write `update` at traced start indices (clamped to fit)."""
    shape = abstractify(operand, 0, "dynamic_update_slice").shape
    starts = [_wrap_start(i, d) for i, d in zip(start_indices, shape)]
    return idx_p.dynamic_update_slice(operand, update, *starts)


def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: int, axis: int = 0) -> Any:
    shape = abstractify(operand, 0, "dynamic_slice_in_dim").shape
    starts = [0] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes)


def _cumulative(prim: Any) -> Any:
    def op(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
        ndim = len(abstractify(operand, 0, prim.name).shape)
        return prim(operand, axis=normalize_axis(axis, ndim, prim.name), reverse=reverse)
    op.__name__ = prim.name
    op.__doc__ = f"``lax.{prim.name}(operand, axis=0, reverse=False)``"
    return op


cumsum, cumprod = _cumulative(red_p.cumsum), _cumulative(red_p.cumprod)
cummax, cummin = _cumulative(red_p.cummax), _cumulative(red_p.cummin)


# Control flow builds on the above.
from transpiler.lax.control import cond, probe, switch, while_loop  # noqa: E402,F401
from transpiler.lax.loops import fori_loop, map, scan  # noqa: E402,F401
from transpiler.lax.sorting import sort, sort_key_val, top_k  # noqa: E402,F401
from transpiler.lax.solves import custom_linear_solve, custom_root  # noqa: E402,F401
from transpiler.lax.special import erf, erf_inv  # noqa: E402,F401
from transpiler.lax.gamma_functions import digamma, lgamma, polygamma, zeta  # noqa: E402,F401
from transpiler.lax.bessel import bessel_i0e, bessel_i1e  # noqa: E402,F401
from transpiler.lax.incomplete_beta import betainc  # noqa: E402,F401
from transpiler.lax.incomplete_gamma import (igamma, igamma_grad_a, igammac,  # noqa: E402,F401
                                             random_gamma_grad)
from transpiler.lax.fourier import FftType, fft  # noqa: E402,F401
from transpiler.lax import linalg  # noqa: E402,F401
from transpiler.lax.parallel import (all_gather, all_to_all, axis_index,  # noqa: E402,F401
                                     pmax, pmean, pmin, ppermute, psum, psum_scatter)
from transpiler.lax.windows import (associative_scan, cumlogsumexp,  # noqa: E402,F401
                                    padtype_to_pads, reduce, reduce_window,
                                    reduce_window_shape_tuple)
from transpiler.lax.shape_ops import (broadcast, broadcast_in_dim, broadcast_like,  # noqa: E402,F401
                                      broadcast_shapes, broadcast_to_rank, collapse,
                                      concatenate, dynamic_index_in_dim,
                                      dynamic_update_index_in_dim, dynamic_update_slice_in_dim,
                                      empty, expand_dims, full, full_like, index_in_dim, pad,
                                      reshape, rev, shape_as_value, slice, slice_in_dim,
                                      split, squeeze, stack, tile, transpose, unstack)
from transpiler.lax.elementwise_ops import (RoundingMethod, abs, acos, acosh, asin,  # noqa: E402,F401
                                            asinh, atan, atan2, atanh, bitwise_and,
                                            bitwise_not, bitwise_or, bitwise_xor, cbrt, ceil,
                                            clamp, clz, cosh, eq, erfc, exp2, expm1, floor, ge,
                                            gt, is_finite, le, log1p, lt, ne, neg, nextafter,
                                            population_count, pow, reciprocal,
                                            reduce_precision, rem, round,
                                            mulhi, select_n, shift_right_arithmetic,
                                            shift_right_logical, sign, sinh, square, tan)
from transpiler.lax.reduction_ops import (argmax, argmin, reduce_and, reduce_max,  # noqa: E402,F401
                                          reduce_min, reduce_or, reduce_prod, reduce_sum,
                                          reduce_xor)
from transpiler.lax.products import (DotAlgorithmPreset, DotDimensionNumbers,  # noqa: E402,F401
                                     Precision, PrecisionLike, batch_matmul, dot, ragged_dot)
from transpiler.lax.ann import approx_max_k, approx_min_k  # noqa: E402,F401
from transpiler.lax import staging  # noqa: E402
from transpiler.lax.staging import (axis_size, composite,  # noqa: E402,F401
                                    platform_dependent, with_sharding_constraint)
dtype = staging.dtype  # bound, not imported: functions above have parameters named dtype
from transpiler.lax.gather_scatter import (GatherDimensionNumbers,  # noqa: E402,F401
                                           GatherScatterMode, ScatterDimensionNumbers, gather,
                                           index_take, scatter, scatter_add, scatter_max,
                                           scatter_min, scatter_mul, scatter_sub)
from transpiler.lax.convolution import (ConvDimensionNumbers, conv,  # noqa: E402,F401
                                        conv_dimension_numbers, conv_general_dilated,
                                        conv_general_dilated_local,
                                        conv_general_dilated_patches, conv_general_permutations,
                                        conv_general_shape_tuple, conv_shape_tuple,
                                        conv_transpose, conv_transpose_shape_tuple,
                                        conv_with_general_padding)
from transpiler.lax.primitive_objects import *  # noqa: E402,F401,F403
