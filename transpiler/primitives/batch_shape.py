"""Batching rules of the shape primitives (see batching.py for the rule contract).

Every rule moves the batch axis of its operand to the front (`move_to_front`), applies the
primitive with its axis parameters shifted by one and the batch size prepended to its shape
parameters, and reports the batch axis of the result as 0. The rules use primitives only,
so they run eagerly and stage under jit.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from transpiler.primitives import conversions as cv
from transpiler.primitives import shape as sp
from transpiler.primitives.batching import batch_size, materialize, move_to_front
from transpiler.primitives.core import abstractify

Dims = Sequence[Optional[int]]
Result = tuple[Any, Optional[int]]


def _unbatched(dims: Dims) -> bool:
    return all(d is None for d in dims)


def _reshape_rule(args: Sequence[Any], dims: Dims, *, new_sizes: tuple[int, ...]) -> Result:
    (x,), (d,) = args, dims
    if d is None:
        return sp.reshape(x, new_sizes=new_sizes), None
    size = batch_size(args, dims)
    return sp.reshape(move_to_front(x, d), new_sizes=(size, *new_sizes)), 0


def _broadcast_to_rule(args: Sequence[Any], dims: Dims, *, shape: tuple[int, ...]) -> Result:
    (x,), (d,) = args, dims
    if d is None:
        return sp.broadcast_to(x, shape=shape), None
    size = batch_size(args, dims)
    x = move_to_front(x, d)
    inner = abstractify(x).shape[1:]
    extra = len(shape) - len(inner)
    if extra > 0:  # singleton axes after the batch axis keep `inner` right-aligned
        x = sp.reshape(x, new_sizes=(size, *(1,) * extra, *inner))
    return sp.broadcast_to(x, shape=(size, *shape)), 0


def _transpose_rule(args: Sequence[Any], dims: Dims, *,
                    permutation: tuple[int, ...]) -> Result:
    (x,), (d,) = args, dims
    if d is None:
        return sp.transpose(x, permutation=permutation), None
    # fold the move of the batch axis to the front into the one transpose
    ndim = abstractify(x).ndim
    rest = [i for i in range(ndim) if i != d]
    perm = (d, *(rest[p] for p in permutation))
    return sp.transpose(x, permutation=perm), 0


def _concatenate_rule(args: Sequence[Any], dims: Dims, *, axis: int) -> Result:
    if _unbatched(dims):
        return sp.concatenate(*args, axis=axis), None
    size = batch_size(args, dims)
    xs = [materialize(x, d, size) for x, d in zip(args, dims)]
    return sp.concatenate(*xs, axis=axis + 1), 0


def _pad_rule(args: Sequence[Any], dims: Dims, *, low: tuple[int, ...],
              high: tuple[int, ...], interior: tuple[int, ...]) -> Result:
    (x, value), (dx, dv) = args, dims
    if dx is None and dv is None:
        return sp.pad(x, value, low=low, high=high, interior=interior), None
    size = batch_size(args, dims)
    low1, high1, interior1 = (0, *low), (0, *high), (0, *interior)
    if dv is None:  # one padding value for the whole batch
        return sp.pad(move_to_front(x, dx), value, low=low1, high=high1,
                      interior=interior1), 0
    # a padding value per batch member: pad x with anything, then select the members'
    # values where a padded mask of x's (unbatched) shape is False
    x = materialize(x, dx, size)
    aval = abstractify(x)
    inner = aval.shape[1:]
    padded = sp.pad(x, np.zeros((), aval.dtype), low=low1, high=high1, interior=interior1)
    mask = sp.broadcast_to(np.bool_(True), shape=inner)
    mask = sp.pad(mask, np.bool_(False), low=low, high=high, interior=interior)
    values = cv.convert_element_type(value, dtype=aval.dtype, weak_type=aval.weak_type)
    values = sp.reshape(values, new_sizes=(size, *(1,) * len(inner)))
    return cv.select(mask, padded, values), 0


def _rev_rule(args: Sequence[Any], dims: Dims, *, dimensions: tuple[int, ...]) -> Result:
    (x,), (d,) = args, dims
    if d is None:
        return sp.rev(x, dimensions=dimensions), None
    return sp.rev(move_to_front(x, d), dimensions=tuple(a + 1 for a in dimensions)), 0


def _slice_rule(args: Sequence[Any], dims: Dims, *, start_indices: tuple[int, ...],
                limit_indices: tuple[int, ...],
                strides: Optional[tuple[int, ...]] = None) -> Result:
    (x,), (d,) = args, dims
    if d is None:
        return sp.slice_(x, start_indices=start_indices, limit_indices=limit_indices,
                         strides=strides), None
    size = batch_size(args, dims)
    return sp.slice_(move_to_front(x, d), start_indices=(0, *start_indices),
                     limit_indices=(size, *limit_indices),
                     strides=None if strides is None else (1, *strides)), 0


sp.reshape.def_rules(batch=_reshape_rule)
sp.broadcast_to.def_rules(batch=_broadcast_to_rule)
sp.transpose.def_rules(batch=_transpose_rule)
sp.concatenate.def_rules(batch=_concatenate_rule)
sp.pad.def_rules(batch=_pad_rule)
sp.rev.def_rules(batch=_rev_rule)
sp.slice_.def_rules(batch=_slice_rule)
