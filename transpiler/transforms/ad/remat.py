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

A checkpoint with a policy names it: ``ad.recompute(x, "dots_saveable")``. The barrier's
outputs are then marked as recomputing ``x`` under that policy, and the trace takes from
the primal pass, instead of computing again, each result the policy saves
(lowering/tracer.py, ``Trace.recomputed``).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from transpiler import tree_util
from transpiler.errors import located
from transpiler.primitives import conversions as conv
from transpiler.primitives.core import Tracer

# The policies generated code names: name -> predicate ``policy(prim, *avals, **params)``.
POLICIES: dict[str, Callable[..., bool]] = {}


def policy_name(policy: Callable[..., bool]) -> str:
    """The name generated code calls `policy` by: its ``policy_name`` (the
    ``checkpoint_policies`` entries: the same in every process), else one of this process."""
    name = getattr(policy, "policy_name", None) or \
        f"{getattr(policy, '__qualname__', type(policy).__qualname__)}@{id(policy):x}"
    POLICIES[name] = policy
    return name


def recompute(value: Any, policy: Optional[str] = None) -> Any:
    """`value` (a pytree) with each traced array behind an optimization barrier; with a
    `policy`, marked as recomputing the array under it."""
    rule = POLICIES[policy] if policy is not None else None

    def barrier(leaf: Any) -> Any:
        if not isinstance(leaf, Tracer):
            return leaf
        out = conv.optimization_barrier(leaf)
        trace: Any = getattr(out, "trace", None)  # (jit's Trace, lowering/tracer.py)
        if rule is not None and hasattr(trace, "mark_recomputed"):
            trace.mark_recomputed(out, leaf, rule)
        return out

    return tree_util.tree_map(barrier, value)


def checkpoint_name(x: Any, name: str) -> Any:
    """``jax.ad_checkpoint.checkpoint_name``: `x` itself, named for the ``*_names``
    policies -- in a recomputation, the primal pass's `x` where the policy saves `name`."""
    if not isinstance(name, str):
        raise located(TypeError, f"checkpoint_name: name must be a str, got "
                      f"{type(name).__name__}")
    trace: Any = getattr(x, "trace", None)  # (jit's Trace, lowering/tracer.py)
    found = trace.primal_of(x) if hasattr(trace, "primal_of") else None
    if found is not None and found[1](NAME, x.aval, name=name):
        return trace.saved(*found)
    return x


class _Name:
    """What policies see for ``checkpoint_name`` (JAX's ``name_p``): a value named by it."""

    name = "name"

    def __repr__(self) -> str:
        return "name"


NAME = _Name()
