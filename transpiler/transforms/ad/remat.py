"""``ad.recompute``: the arguments of a checkpointed function (``jax.checkpoint``) as the
derivative code passes them to its recomputation.

Generated reverse code differentiates a call ``y = block(x)`` by calling the block's own
VJP, ``vjp_block(x, _out_bar=y_bar)``, which runs the block forward again before its
backward pass: the caller stores only ``x``. Under ``jit`` the compiler sees that forward
run compute what the primal pass computed already and merges the two (common
subexpression elimination), which stores the block's intermediates after all. For a
checkpointed block the arguments go through an optimization barrier first, so the
recomputation is a computation of its own that the compiler keeps (``prevent_cse``).
Eagerly nothing is merged and the values pass unchanged.
"""

from __future__ import annotations

from typing import Any

from transpiler import tree_util
from transpiler.primitives import conversions as conv
from transpiler.primitives.core import Tracer


def recompute(value: Any) -> Any:
    """`value` (a pytree) with each traced array behind an optimization barrier."""
    return tree_util.tree_map(
        lambda leaf: conv.optimization_barrier(leaf) if isinstance(leaf, Tracer) else leaf,
        value)
