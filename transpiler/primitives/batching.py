"""Batching rules (the ``batch`` slot of every primitive), for `vmap`.

A rule maps a primitive applied to operands that carry a batch axis to the same
computation over the whole batch, written with primitives (so it runs eagerly and stages
under jit):

    rule(args, dims, **params) -> (out, out_dim)

``args`` are the operands as `bind` receives them; ``dims[i]`` is the axis of ``args[i]``
that is the batch axis (a non-negative int), or None when the operand is the same for the
whole batch (then it has its unbatched shape). The result has its batch axis at
``out_dim`` (an int, or None when the result does not depend on the batch). Rules for
primitives with ``multiple_results`` return a tuple of outputs and a tuple of dims.

Each family module declares its primitives' rules next to their definitions (``batch=``
of `define`, or ``prim.def_rules(batch=rule)`` right after it); this module holds what the
rules share: moving and materializing batch axes, renumbering axis params around a batch
axis, and the two rules many primitives have -- `elementwise_rule` (NumPy broadcasting)
and `leading_batch_rule` (primitives that map over leading dimensions already).
tests/test_batch_rules.py checks every rule against a Python loop over the batch, with the
batch axis at 0, 1 and -1 and with some operands unbatched.

The helpers move axes with shape.py's primitives, looked up in the registry when a rule
runs: shape.py's own rules use these helpers, so this module imports only the core.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from transpiler.primitives.core import REGISTRY, Primitive, abstractify, define

BatchRule = Callable[..., tuple[Any, Any]]


def batch_size(args: Sequence[Any], dims: Sequence[Optional[int]]) -> int:
    """The size of the batch axis (every batched operand agrees)."""
    sizes = {abstractify(a).shape[d] for a, d in zip(args, dims) if d is not None}
    if len(sizes) != 1:
        raise ValueError(f"batched operands disagree on the batch size: {sorted(sizes)}")
    return sizes.pop()


def move_to_front(x: Any, dim: Optional[int]) -> Any:
    """`x` with its batch axis first (unchanged when it already is, or is unbatched)."""
    if dim is None or dim == 0:
        return x
    ndim = abstractify(x).ndim
    perm = (dim, *[i for i in range(ndim) if i != dim])
    return REGISTRY["transpose"].bind(x, permutation=perm)


def materialize(x: Any, dim: Optional[int], size: int) -> Any:
    """`x` with a batch axis first: moved there, or (unbatched) broadcast along it."""
    if dim is not None:
        return move_to_front(x, dim)
    aval = abstractify(x)
    return REGISTRY["broadcast_to"].bind(x, shape=(size, *aval.shape))


def leading_batch_rule(prim: Any) -> BatchRule:
    """The rule of a primitive that already maps over its operands' leading dimensions
    (linear algebra, FFT): batched operands get the batch axis first, unbatched ones are
    broadcast along it."""
    def rule(args: Any, dims: Any, **params: Any) -> tuple[Any, Any]:
        if all(d is None for d in dims):
            return prim(*args, **params), None
        size = batch_size(args, dims)
        moved = [materialize(a, None if d is None else d % abstractify(a).ndim, size)
                 for a, d in zip(args, dims)]
        return prim(*moved, **params), 0
    return rule


def batch_axis(x: Any, dim: int) -> int:
    """`dim` as a non-negative axis of `x`."""
    ndim = abstractify(x).ndim
    return dim % ndim if ndim else dim


def shift_axes(axes: Sequence[int], dim: int) -> tuple[int, ...]:
    """Axes of the unbatched operand renumbered for the operand with a batch axis at `dim`
    (an axis ``a`` is axis ``a + 1`` when ``a >= dim``, which keeps sorted axes sorted)."""
    return tuple(int(a) + 1 if int(a) >= dim else int(a) for a in axes)


# --- elementwise primitives -----------------------------------------------------------------
# An elementwise primitive maps each element (or each aligned tuple of elements, with NumPy
# broadcasting) independently, so one rule serves them all:
#
# * nothing batched (``iota``, or only unbatched operands): apply the primitive as it is,
#   ``out_dim`` None;
# * every operand batched at the same axis with the full rank, or an unbatched scalar:
#   apply as it is, the batch axis stays where it is (no data movement);
# * otherwise move each batched operand's batch axis to the front and insert singleton
#   axes after it, so that it has the rank of the (unbatched) result plus one. Unbatched
#   operands keep their shape: broadcasting aligns them from the right, i.e. with the
#   trailing (non-batch) axes. The result has its batch axis at 0.
#
# Python scalars are always unbatched and are passed through untouched, so they stay weak
# operands and dtype promotion matches the unbatched application exactly.

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
    return REGISTRY["reshape"].bind(x, new_sizes=(shape[0], *(1,) * missing, *shape[1:]))


def elementwise_rule(prim: Primitive) -> BatchRule:
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


def define_elementwise(name: str, **kwargs: Any) -> Primitive:
    """`define` a primitive that maps elements independently, batched by `elementwise_rule`."""
    prim = define(name, **kwargs)
    return prim.def_rules(batch=elementwise_rule(prim))
