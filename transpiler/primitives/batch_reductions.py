"""Batching rules of the reductions primitives and of ``dot_general`` (see batching.py for
the rule contract).

No rule moves data: the batch axis stays where it is and the axis params are renumbered
around it (an unbatched axis ``a`` is axis ``a + 1`` of the batched operand when
``a >= dim``), which keeps ``axes`` sorted.

* ``reduce_<kind>``: the renumbered axes are reduced; the batch axis lands after the
  surviving axes that precede it.
* ``argmax``/``argmin``: the renumbered axis is dropped; the batch axis moves down by one
  when the reduced axis precedes it.
* ``cum<kind>``: same shape as the input, so the batch axis stays put.
* ``sort``/``sort_permutation``: along the renumbered dimension; the keys of a
  permutation are all given the batch axis first (unbatched ones broadcast along it).
* ``dot_general``: with both operands batched, the two batch axes become a new leading
  pair of batch dimensions, so the result's batch axis is 0. With one operand batched, its
  batch axis is a free (non-contracting, non-batch) dimension of that operand; the result
  lists batch dims, then lhs free dims, then rhs free dims (each in operand order), which
  gives the result's batch axis.

Operands that are not batched at all are applied as they are (``out_dim`` None).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from transpiler.primitives import dot, reductions, sorting
from transpiler.primitives.batching import batch_size, materialize
from transpiler.primitives.core import Primitive, abstractify


def _shift(axes: Sequence[int], dim: int) -> tuple[int, ...]:
    """Axes of the unbatched operand renumbered for the operand with a batch axis at `dim`."""
    return tuple(int(a) + 1 if int(a) >= dim else int(a) for a in axes)


def _batch_dim(x: Any, dim: int) -> int:
    """`dim` as a non-negative axis of `x`."""
    ndim = abstractify(x).ndim
    return dim % ndim if ndim else dim


# --- reduce_<kind> ------------------------------------------------------------------------

def _reduce_rule(prim: Primitive) -> Any:
    def rule(args: Sequence[Any], dims: Sequence[Optional[int]], *,
             axes: Sequence[int], **params: Any) -> tuple[Any, Optional[int]]:
        (x,), (d,) = args, dims
        if d is None:
            return prim.bind(x, axes=tuple(axes), **params), None
        d = _batch_dim(x, d)
        new_axes = _shift(axes, d)
        out_dim = d - sum(1 for a in new_axes if a < d)
        return prim.bind(x, axes=new_axes, **params), out_dim
    return rule


# --- argmax, argmin (the axis goes away), cumsum ... cummin (it stays) -------------------

def _axis_rule(prim: Primitive, removes_axis: bool) -> Any:
    def rule(args: Sequence[Any], dims: Sequence[Optional[int]], *,
             axis: int, **params: Any) -> tuple[Any, Optional[int]]:
        (x,), (d,) = args, dims
        if d is None:
            return prim.bind(x, axis=axis, **params), None
        d = _batch_dim(x, d)
        (new_axis,) = _shift((axis,), d)
        out_dim = d - 1 if removes_axis and new_axis < d else d
        return prim.bind(x, axis=new_axis, **params), out_dim
    return rule


def _sort_rule(args: Sequence[Any], dims: Sequence[Optional[int]], *, dimension: int,
               **params: Any) -> tuple[Any, Optional[int]]:
    (x,), (d,) = args, dims
    if d is None:
        return sorting.sort(x, dimension=dimension, **params), None
    d = _batch_dim(x, d)
    (new_dimension,) = _shift((dimension,), d)
    return sorting.sort(x, dimension=new_dimension, **params), d


def _permutation_rule(args: Sequence[Any], dims: Sequence[Optional[int]], *, dimension: int,
                      **params: Any) -> tuple[Any, Optional[int]]:
    if all(d is None for d in dims):
        return sorting.sort_permutation(*args, dimension=dimension, **params), None
    size = batch_size(args, dims)
    keys = [materialize(k, None if d is None else _batch_dim(k, d), size)
            for k, d in zip(args, dims)]
    return sorting.sort_permutation(*keys, dimension=dimension + 1, **params), 0


# --- dot_general --------------------------------------------------------------------------

def _free(ndim: int, contracting: Sequence[int], batch: Sequence[int]) -> list[int]:
    used = set(contracting) | set(batch)
    return [i for i in range(ndim) if i not in used]


def _dot_general_rule(args: Sequence[Any], dims: Sequence[Optional[int]], *,
                      dimension_numbers: Any, **params: Any) -> tuple[Any, Optional[int]]:
    lhs, rhs = args
    ld, rd = dims
    (lc, rc), (lb, rb) = dot.normalize_dimension_numbers(dimension_numbers)
    if ld is None and rd is None:
        return dot.dot_general(lhs, rhs, dimension_numbers=((lc, rc), (lb, rb)), **params), None
    if ld is not None:
        ld = _batch_dim(lhs, ld)
        lc, lb = _shift(lc, ld), _shift(lb, ld)
    if rd is not None:
        rd = _batch_dim(rhs, rd)
        rc, rb = _shift(rc, rd), _shift(rb, rd)
    out_dim: int
    if ld is not None and rd is not None:  # a new leading batch pair
        lb, rb = (ld, *lb), (rd, *rb)
        out_dim = 0
    elif ld is not None:  # a free dimension of lhs
        lhs_free = _free(abstractify(lhs).ndim, lc, lb)
        out_dim = len(lb) + lhs_free.index(ld)
    else:  # a free dimension of rhs
        assert rd is not None
        lhs_free = _free(abstractify(lhs).ndim, lc, lb)
        rhs_free = _free(abstractify(rhs).ndim, rc, rb)
        out_dim = len(lb) + len(lhs_free) + rhs_free.index(rd)
    out = dot.dot_general(lhs, rhs, dimension_numbers=((lc, rc), (lb, rb)), **params)
    return out, out_dim


# --- registration -------------------------------------------------------------------------

for _prim in (reductions.reduce_sum, reductions.reduce_prod, reductions.reduce_max,
              reductions.reduce_min, reductions.reduce_and, reductions.reduce_or):
    _prim.def_rules(batch=_reduce_rule(_prim))
for _prim in (reductions.argmax, reductions.argmin):
    _prim.def_rules(batch=_axis_rule(_prim, removes_axis=True))
for _prim in (reductions.cumsum, reductions.cumprod, reductions.cummax, reductions.cummin):
    _prim.def_rules(batch=_axis_rule(_prim, removes_axis=False))
sorting.sort.def_rules(batch=_sort_rule)
sorting.sort_permutation.def_rules(batch=_permutation_rule)
dot.dot_general.def_rules(batch=_dot_general_rule)
