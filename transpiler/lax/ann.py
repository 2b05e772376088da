"""``lax.approx_max_k`` and ``lax.approx_min_k`` with JAX's signatures. JAX's approximate
search is a TPU algorithm; elsewhere (its CPU and GPU fallback, and here) the result is
the exact top `k` along `reduction_dimension`: values and their int32 indices, ties in
index order, from the stable sorting permutation (primitives/sorting.py), so derivatives
and batching come from the gather, as in ``lax.top_k``.
"""

from __future__ import annotations

from typing import Any

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import asarray
from transpiler.numpy.indexing_functions import take_along_axis
from transpiler.primitives import shape as sp
from transpiler.primitives import sorting as sort_p
from transpiler.primitives.core import abstractify, dtype_error, normalize_axis, shape_error

__all__ = ["approx_max_k", "approx_min_k"]


def _approx_top_k(operand: Any, k: int, reduction_dimension: int, is_max_k: bool,
                  aggregate_to_topk: bool) -> tuple[Any, Any]:
    fn = "approx_max_k" if is_max_k else "approx_min_k"
    x = asarray(operand)
    aval = abstractify(x, 0, fn)
    if aval.ndim == 0:
        raise shape_error(f"lax.{fn}: the operand must have rank 1 or more")
    if not dtypes.is_float(aval.dtype):
        raise dtype_error(f"lax.{fn}: the operand must be floating point, got {aval.dtype}")
    axis = normalize_axis(reduction_dimension, aval.ndim, f"lax.{fn}")
    n = aval.shape[axis]
    if not isinstance(k, int) or not 0 < k <= n:
        raise shape_error(f"lax.{fn}: k={k!r} must be a positive int at most the size {n} "
                          f"of the reduction dimension")
    if not aggregate_to_topk:
        raise located(NotImplementedError, f"lax.{fn}: aggregate_to_topk=False returns TPU "
                      "partial results of an XLA-chosen size, which is not available here",
                      "use aggregate_to_topk=True (the default)")
    perm = sort_p.sort_permutation(x, dimension=axis, descending=is_max_k,
                                   index_dtype=dtypes.int32)
    limit = list(aval.shape)
    limit[axis] = k
    indices = sp.slice_(perm, start_indices=(0,) * aval.ndim, limit_indices=tuple(limit),
                        strides=None)
    return take_along_axis(x, indices, axis=axis), indices


def approx_max_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> tuple[Any, Any]:
    """``lax.approx_max_k``: the `k` largest entries along `reduction_dimension`, largest
    first (NaN above every number), and their int32 indices; exact, so any
    `recall_target` is met."""
    return _approx_top_k(operand, k, reduction_dimension, True, aggregate_to_topk)


def approx_min_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> tuple[Any, Any]:
    """``lax.approx_min_k``: the `k` smallest entries along `reduction_dimension`, smallest
    first (NaN after every number), and their int32 indices; exact."""
    return _approx_top_k(operand, k, reduction_dimension, False, aggregate_to_topk)
