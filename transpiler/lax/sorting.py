"""``lax.sort``, ``lax.sort_key_val`` and ``lax.top_k``: gathers by the stable permutation of
the sorting primitives (transpiler/primitives/sorting.py), so several operands sort by
their keys, and derivatives and batching come from the gather."""

from __future__ import annotations

from typing import Any

from transpiler import dtypes
from transpiler.numpy.creation import asarray
from transpiler.numpy.indexing_functions import take_along_axis
from transpiler.primitives import shape as sp
from transpiler.primitives import sorting as sort_p
from transpiler.primitives.core import abstractify, normalize_axis, shape_error

__all__ = ["sort", "sort_key_val", "top_k"]


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """``lax.sort``: one array sorted along `dimension`, or a sequence of arrays of one
    shape sorted together by the first `num_keys` of them (lexicographically), returned as
    a tuple. Always stable."""
    if not isinstance(operand, (tuple, list)):
        x = asarray(operand)
        axis = normalize_axis(dimension, abstractify(x, 0, "sort").ndim, "sort")
        return sort_p.sort(x, dimension=axis, descending=False)
    operands = [asarray(o) for o in operand]
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort: num_keys={num_keys} must be between 1 and the number of "
                         f"operands ({len(operands)})")
    shapes = {abstractify(o).shape for o in operands}
    if len(shapes) != 1:
        raise shape_error(f"sort: the operands must have one shape, got "
                          f"{[list(abstractify(o).shape) for o in operands]}")
    axis = normalize_axis(dimension, len(shapes.pop()), "sort")
    if len(operands) == 1:
        return (sort_p.sort(operands[0], dimension=axis, descending=False),)
    perm = sort_p.sort_permutation(*operands[:num_keys], dimension=axis, descending=False,
                                   index_dtype=dtypes.int32)
    return tuple(take_along_axis(o, perm, axis=axis) for o in operands)


def sort_key_val(keys: Any, values: Any, dimension: int = -1,
                 is_stable: bool = True) -> tuple[Any, Any]:
    """``lax.sort_key_val``: `keys` sorted along `dimension`, and `values` in the same
    order."""
    return sort((keys, values), dimension=dimension, is_stable=is_stable, num_keys=1)


def top_k(operand: Any, k: int, *, axis: int = -1) -> tuple[Any, Any]:
    """``lax.top_k``: the `k` largest entries along the last axis (or `axis`), largest
    first, and their int32 indices; equal entries in index order, NaN above every number."""
    x = asarray(operand)
    aval = abstractify(x, 0, "top_k")
    if aval.ndim == 0:
        raise shape_error("top_k: the operand must have rank 1 or more")
    axis = normalize_axis(axis, aval.ndim, "top_k")
    n = aval.shape[axis]
    if not isinstance(k, int) or not 0 <= k <= n:
        raise shape_error(f"top_k: k={k!r} must be an int between 0 and the axis length {n}")
    perm = sort_p.sort_permutation(x, dimension=axis, descending=True,
                                   index_dtype=dtypes.int32)
    start = [0] * aval.ndim
    limit = list(aval.shape)
    limit[axis] = k
    indices = sp.slice_(perm, start_indices=tuple(start), limit_indices=tuple(limit),
                        strides=None)
    return take_along_axis(x, indices, axis=axis), indices
