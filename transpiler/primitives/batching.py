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

The family modules (``batch_elementwise.py`` ...) define the rules and attach them with
``prim.def_rules(batch=rule)`` (primitives/core.py, as the derivative rules are);
tests/test_batch_rules.py checks each against a Python loop over the batch, with the
batch axis at 0, 1 and -1 and with some operands unbatched.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from transpiler.primitives.core import abstractify
from transpiler.primitives import shape as sp

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
    return sp.transpose(x, permutation=perm)


def materialize(x: Any, dim: Optional[int], size: int) -> Any:
    """`x` with a batch axis first: moved there, or (unbatched) broadcast along it."""
    if dim is not None:
        return move_to_front(x, dim)
    aval = abstractify(x)
    return sp.broadcast_to(x, shape=(size, *aval.shape))


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
