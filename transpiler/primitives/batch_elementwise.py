"""Batching rules of the elementwise and conversion primitives (see batching.py for the
rule contract).

Every primitive of elementwise.py and conversions.py maps each element (or each aligned
tuple of elements, with NumPy broadcasting) independently, so one rule serves them all:

* nothing batched (``iota``, or only unbatched operands): apply the primitive as it is,
  ``out_dim`` None;
* every operand batched at the same axis with the full rank, or an unbatched scalar:
  apply as it is, the batch axis stays where it is (no data movement);
* otherwise move each batched operand's batch axis to the front and insert singleton
  axes after it, so that it has the rank of the (unbatched) result plus one. Unbatched
  operands keep their shape: broadcasting aligns them from the right, i.e. with the
  trailing (non-batch) axes. The result has its batch axis at 0.

Python scalars are always unbatched and are passed through untouched, so they stay weak
operands and dtype promotion matches the unbatched application exactly.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from transpiler.primitives import conversions, elementwise
from transpiler.primitives.batching import move_to_front
from transpiler.primitives.core import Primitive, abstractify
from transpiler.primitives import shape as sp


def _rank(x: Any, dim: Optional[int]) -> int:
    """The rank of operand `x` without its batch axis."""
    ndim = abstractify(x).ndim
    return ndim if dim is None else ndim - 1


def _batch_at_front(x: Any, dim: int, rank: int) -> Any:
    """`x` with its batch axis first and singleton axes after it, up to ``rank + 1`` axes."""
    x = move_to_front(x, dim)
    shape = abstractify(x).shape
    missing = rank + 1 - len(shape)
    if missing == 0:
        return x
    return sp.reshape(x, new_sizes=(shape[0], *(1,) * missing, *shape[1:]))


def elementwise_rule(prim: Primitive) -> Any:
    """The batching rule of elementwise (n-ary, broadcasting) primitive `prim`."""

    def rule(args: Sequence[Any], dims: Sequence[Optional[int]], **params: Any
             ) -> tuple[Any, Optional[int]]:
        batched = {d for d in dims if d is not None}
        if not batched:
            return prim.bind(*args, **params), None
        rank = max(_rank(x, d) for x, d in zip(args, dims))
        if len(batched) == 1 and all(
                _rank(x, d) == (rank if d is not None else 0) for x, d in zip(args, dims)):
            return prim.bind(*args, **params), batched.pop()
        moved = [x if d is None else _batch_at_front(x, d, rank) for x, d in zip(args, dims)]
        return prim.bind(*moved, **params), 0

    rule.__name__ = f"batch_{prim.name}"
    rule.__qualname__ = rule.__name__
    return rule


def _primitives() -> list[Primitive]:
    """Every primitive the elementwise and conversions modules define."""
    found: dict[str, Primitive] = {}
    for module in (elementwise, conversions):
        for value in vars(module).values():
            if isinstance(value, Primitive):
                found[value.name] = value
    return list(found.values())


PRIMITIVES = _primitives()
for _prim in PRIMITIVES:
    _prim.def_rules(batch=elementwise_rule(_prim))
