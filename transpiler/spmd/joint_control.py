"""Control flow with a collective inside, under pmap's devices strategy: one construct for
all shards.

Without a collective, each shard runs its own copy of a loop or cond
(`ShardTrace.per_shard`). A collective needs every shard's value at the same point, so:

- a while loop (``fori_loop``/``scan`` too) carries every shard's values (shard-major), its
  body is traced once with `Sharded` values (shard k's operations on device k, the
  collectives between them as anywhere else), and it runs while any shard's condition
  holds; a shard whose condition is false keeps its values (as a batched while loop under
  vmap does). The condition the loop reads is shard 0's, or-ed on device 0 with the
  others' moved there.
- a cond/switch runs every branch for all shards and selects each shard's result by its
  own predicate (as a batched cond under vmap does, so the collectives in every branch see
  every shard).
"""

from __future__ import annotations

from typing import Any, Callable

from transpiler import tree_util
from transpiler.lowering.regions import Regions
from transpiler.lowering.tracer import Tracer
from transpiler.primitives import core
from transpiler.primitives.core import ShapedArray, abstractify
from transpiler import numpy as jnp
from transpiler.lax.control import _condition, _converted, _same_structure, check_carry, join_avals
from transpiler.primitives import conversions as conv
from transpiler.spmd.multi_device import Sharded, ShardTrace, transfer


def joint_while(shards: Any, cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    cond_fun, body_fun = _condition(_converted(cond_fun)), _converted(body_fun)
    leaves, tree = tree_util.tree_flatten(init_val)
    avals = [abstractify(leaf, i, "lax.while_loop") for i, leaf in enumerate(leaves)]
    size, base = shards.size, shards.base

    def as_sharded(values: list) -> list:  # the region's block arguments, leaf by leaf
        n = len(avals)
        return [Sharded([values[k * n + j] for k in range(size)], a)
                for j, a in enumerate(avals)]

    def in_region(fn: Callable[[list], Any]) -> Callable[..., Any]:
        def traced(*values: Any) -> Any:
            inner = ShardTrace(core.trace_stack[-1], size)
            core.trace_stack.append(inner)
            try:
                return fn(as_sharded(list(values)))
            finally:
                core.trace_stack.pop()
        return traced

    def test(carry: list) -> Any:
        pred = cond_fun(tree_util.tree_unflatten(tree, carry))
        parts = pred.parts if type(pred) is Sharded else [pred] * size
        either = parts[0]
        for part in parts[1:]:
            either = jnp.logical_or(either, transfer(part, 0))
        return either

    def body(carry: list) -> Any:
        state = tree_util.tree_unflatten(tree, carry)
        new = body_fun(state)
        running = cond_fun(state)  # a shard whose loop is over keeps its values
        new_leaves, new_tree = tree_util.tree_flatten(new)
        traced: Any = _Traced(new_tree, [abstractify(leaf) for leaf in new_leaves])
        promoted = check_carry(avals, traced, tree, "while_loop", "body_fun")
        if promoted is not None:
            raise _Promote(promoted)
        kept = [jnp.where(running, n, c) for n, c in zip(new_leaves, carry)]
        inner = core.trace_stack[-1]
        return [inner.on(k, leaf) if isinstance(leaf, Tracer) else leaf
                for k in range(size) for leaf in kept]

    for _ in range(len(avals) + 1):  # each retry promotes at least one weak leaf
        operands = [base.operand(_on_device(shards, k, conv.convert_element_type(
            leaf, dtype=a.dtype) if abstractify(leaf).dtype != a.dtype else leaf, a), a)
            for k in range(size) for leaf, a in zip(leaves, avals)]
        carry = avals * size
        core.trace_stack.append(base)  # the regions' parent is the module's own trace
        try:
            with Regions(2, loop=True) as regions:
                test_region = regions.trace(0, in_region(test), carry)
                body_region = regions.trace(1, in_region(body), carry)
                results = regions.finish("stablehlo.while", operands, carry,
                                         [(test_region, test_region.avals),
                                          (body_region, carry)])
        except _Promote as promote:
            avals = promote.avals
            continue
        finally:
            core.trace_stack.pop()
        break
    else:
        raise AssertionError("unreachable: weak-type promotion did not settle")
    outputs = [Tracer(base, v, a) for v, a in zip(results, carry)]
    n = len(avals)
    # As lax/control.py does for its loops (an IREE 3.13 workaround): results kept alive.
    shards.kept_on.extend((t, i // n) for i, t in enumerate(outputs) if t.aval.ndim > 0)
    out = [Sharded([outputs[k * n + j] for k in range(size)], a)
           for j, a in enumerate(avals)]
    return tree_util.tree_unflatten(tree, out)


class _Traced:
    """What check_carry reads of a traced body: its output structure and shard 0's avals."""

    def __init__(self, tree: Any, avals: list[ShapedArray]) -> None:
        self.tree, self.avals = tree, avals


class _Promote(Exception):
    """A weak carry leaf took the body's dtype: trace the loop again with it."""

    def __init__(self, avals: list[ShapedArray]) -> None:
        super().__init__()
        self.avals = avals


def _on_device(shards: Any, k: int, leaf: Any, aval: ShapedArray) -> Tracer:
    """Shard k's initial value of a carry leaf, placed on device k."""
    if type(leaf) is Sharded:
        return leaf.parts[k]
    if not isinstance(leaf, Tracer):
        leaf = Tracer(shards.base, shards.base.operand(leaf, aval), aval)
    return shards.moved(leaf, k)


def joint_branches(shards: Any, selector: Any, branches: Any, operands: tuple, op: str,
                   names: Any) -> Any:
    """``lax.cond`` (`selector` a bool) or ``lax.switch`` (an int32 index) with a collective
    in a branch: every branch traced for all shards, each shard's result selected."""
    outs = [_converted(branch)(*operands) for branch in branches]
    flat = [tree_util.tree_flatten(out) for out in outs]
    _same_structure([tree for _, tree in flat], op, names)
    count = len(flat[0][0])
    avals = [join_avals([abstractify(leaves[k]) for leaves, _ in flat], op, names, k)
             for k in range(count)]
    if op == "cond":  # branches are (true_fun, false_fun)
        chosen = [jnp.where(selector, t, f) for t, f in zip(flat[0][0], flat[1][0])]
    else:
        chosen = list(flat[0][0])
        for i, (leaves, _) in enumerate(flat[1:], 1):
            chosen = [jnp.where(selector == i, x, c) for x, c in zip(leaves, chosen)]
    chosen = [jnp.asarray(c).astype(a.dtype) for c, a in zip(chosen, avals)]
    return tree_util.tree_unflatten(flat[0][1], chosen)
