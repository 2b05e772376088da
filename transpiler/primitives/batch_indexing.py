"""Batching rules of the indexing primitives (see batching.py for the rule contract).

The rules follow JAX's ``_gather_batching_rule`` and friends, adapted to our simpler
primitives (``gather``/``scatter`` index the *leading* ``k`` axes of the operand; the rest
are window axes taken whole):

- only the operand (and, for scatter, the updates) batched: the batch axis is moved just
  behind the indexed axes, where it becomes one more whole window axis;
- indices batched: the operand gets its batch axis first and every index vector gets a
  leading column ``b`` (an iota over the batch), so member ``b`` reads/writes its own slab;
- ``dynamic_slice``/``dynamic_update_slice`` with unbatched starts: one more start index
  (0) and the whole batch axis as slice/update size; with batched starts they become a
  ``gather``/``scatter`` over the explicit grid of window positions (clamped like
  StableHLO clamps start indices, so results agree with the unbatched primitive).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.primitives import conversions as cv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import indexing as ip
from transpiler.primitives import shape as sp
from transpiler.primitives.batching import batch_size, materialize, move_to_front
from transpiler.primitives.core import abstractify

Dim = Optional[int]


# --- helpers ------------------------------------------------------------------------------
def _move(x: Any, src: int, dst: int) -> Any:
    """`x` with axis `src` moved to position `dst` (the other axes keep their order)."""
    if src == dst:
        return x
    perm = [i for i in range(abstractify(x).ndim) if i != src]
    perm.insert(dst, src)
    return sp.transpose(x, permutation=tuple(perm))


def _batch_at(x: Any, dim: Dim, size: int, pos: int) -> Any:
    """`x` with its batch axis (broadcast there when `x` is unbatched) at `pos`."""
    if dim is not None:
        return _move(x, dim, pos)
    return _move(materialize(x, None, size), 0, pos)


def _index_dtype(avals: Sequence[Any]) -> np.dtype:
    """One signed index type wide enough for the batch iota and the given indices."""
    return dtypes.int64 if any(a.dtype.itemsize == 8 for a in avals) else dtypes.int32


def _as_dtype(x: Any, dtype: np.dtype) -> Any:
    aval = abstractify(x)
    if aval.dtype == dtype and not aval.weak_type:
        return x
    return cv.convert_element_type(x, dtype=dtype, weak_type=False)


def _with_batch_column(indices: Any, size: int) -> Any:
    """Batch-first index vectors ``(B, ..., k)`` -> ``(B, ..., k + 1)`` led by ``b``."""
    aval = abstractify(indices)
    dtype = _index_dtype([aval])
    indices = _as_dtype(indices, dtype)
    column = cv.iota(dtype=dtype, shape=(size, *aval.shape[1:-1], 1), dimension=0)
    return sp.concatenate(column, indices, axis=aval.ndim - 1)


def _window_indices(shape: Sequence[int], sizes: Sequence[int], starts: Sequence[Any],
                    dims: Sequence[Dim], size: int) -> Any:
    """Index vectors ``(B, *sizes, 1 + len(shape))`` of every element of the windows
    ``[start_j, start_j + sizes[j])`` of each batch member, led by the member's index ``b``.
    Starts are clamped so the window fits (``dynamic_slice``'s rule), per member."""
    dtype = _index_dtype([abstractify(s) for s in starts])
    grid = (size, *sizes, 1)
    columns = [cv.iota(dtype=dtype, shape=grid, dimension=0)]
    for j, (start, dim) in enumerate(zip(starts, dims)):
        start = _as_dtype(start, dtype)
        high = np.array(shape[j] - sizes[j], dtype=dtype)
        start = ew.maximum(ew.minimum(start, high), np.zeros((), dtype))
        if dim is not None:  # a batched scalar: shape (B,)
            start = sp.reshape(start, new_sizes=(size,) + (1,) * (len(grid) - 1))
        columns.append(ew.add(cv.iota(dtype=dtype, shape=grid, dimension=j + 1), start))
    return sp.concatenate(*columns, axis=len(grid) - 1)


def _zero_start(starts: Sequence[Any]) -> np.ndarray:
    return np.zeros((), _index_dtype([abstractify(s) for s in starts]))


# --- dynamic_slice(operand, *starts, slice_sizes) -------------------------------------------
def _dynamic_slice_batch(args: Sequence[Any], dims: Sequence[Dim], *,
                         slice_sizes: tuple[int, ...]) -> tuple[Any, Dim]:
    operand, *starts = args
    odim, *sdims = dims
    if all(d is None for d in dims):
        return ip.dynamic_slice(*args, slice_sizes=slice_sizes), None
    size = batch_size(args, dims)
    if all(d is None for d in sdims):  # the batch axis is one more axis, sliced whole
        assert odim is not None
        new_starts = [*starts[:odim], _zero_start(starts), *starts[odim:]]
        new_sizes = (*slice_sizes[:odim], size, *slice_sizes[odim:])
        return ip.dynamic_slice(operand, *new_starts, slice_sizes=new_sizes), odim
    shape = abstractify(operand).shape
    if odim is not None:
        shape = shape[:odim] + shape[odim + 1:]
    indices = _window_indices(shape, slice_sizes, starts, sdims, size)
    return ip.gather(materialize(operand, odim, size), indices), 0


# --- dynamic_update_slice(operand, update, *starts) -----------------------------------------
def _dynamic_update_slice_batch(args: Sequence[Any],
                                dims: Sequence[Dim]) -> tuple[Any, Dim]:
    operand, update, *starts = args
    odim, udim, *sdims = dims
    if all(d is None for d in dims):
        return ip.dynamic_update_slice(*args), None
    size = batch_size(args, dims)
    if all(d is None for d in sdims):  # the batch axis is one more axis, updated whole
        pos = odim if odim is not None else 0
        operand = _batch_at(operand, odim, size, pos)
        update = _batch_at(update, udim, size, pos)
        new_starts = [*starts[:pos], _zero_start(starts), *starts[pos:]]
        return ip.dynamic_update_slice(operand, update, *new_starts), pos
    operand = materialize(operand, odim, size)
    update = materialize(update, udim, size)
    shape, sizes = abstractify(operand).shape[1:], abstractify(update).shape[1:]
    indices = _window_indices(shape, sizes, starts, sdims, size)
    return ip.scatter(operand, indices, update, mode="set"), 0


# --- gather(operand, indices) ---------------------------------------------------------------
def _gather_batch(args: Sequence[Any], dims: Sequence[Dim]) -> tuple[Any, Dim]:
    operand, indices = args
    odim, idim = dims
    if odim is None and idim is None:
        return ip.gather(operand, indices), None
    idx = abstractify(indices)
    if idim is None:  # the batch axis becomes the first (whole) window axis
        k = idx.shape[-1]
        assert odim is not None
        return ip.gather(_move(operand, odim, k), indices), idx.ndim - 1
    indices = move_to_front(indices, idim)
    if odim is None:  # the batch is one more leading axis of the index array
        return ip.gather(operand, indices), 0
    size = batch_size(args, dims)
    return ip.gather(move_to_front(operand, odim), _with_batch_column(indices, size)), 0


# --- scatter(operand, indices, updates, mode) -----------------------------------------------
def _scatter_batch(args: Sequence[Any], dims: Sequence[Dim], *,
                   mode: str) -> tuple[Any, Dim]:
    operand, indices, updates = args
    odim, idim, udim = dims
    if all(d is None for d in dims):
        return ip.scatter(operand, indices, updates, mode=mode), None
    size = batch_size(args, dims)
    if idim is None:  # the batch axis becomes the first (whole) window axis
        idx = abstractify(indices)
        k, lead = idx.shape[-1], idx.ndim - 1
        operand = _batch_at(operand, odim, size, k)
        updates = _batch_at(updates, udim, size, lead)
        return ip.scatter(operand, indices, updates, mode=mode), k
    operand = materialize(operand, odim, size)
    updates = materialize(updates, udim, size)
    indices = _with_batch_column(move_to_front(indices, idim), size)
    return ip.scatter(operand, indices, updates, mode=mode), 0


ip.dynamic_slice.def_rules(batch=_dynamic_slice_batch)
ip.dynamic_update_slice.def_rules(batch=_dynamic_update_slice_batch)
ip.gather.def_rules(batch=_gather_batch)
ip.scatter.def_rules(batch=_scatter_batch)

__all__: list[str] = []
