"""``lax`` control flow: `cond`, `switch`, `while_loop` (and, in lax/loops.py, `fori_loop`,
`scan`, `map`).

JAX's signatures and semantics. Eagerly they run as the Python they stand for (one branch,
a Python loop), so they can be stepped through. Under `jit` a traced predicate, index or
loop becomes ``stablehlo.if`` / ``case`` / ``while`` whose regions are traced from the
Python functions (see lowering/regions.py); a predicate or index that is a plain Python
value picks its branch at trace time. Branches and bodies may close over outer values and
may be lambdas. Their derivatives are rules of their own (transforms/ad/control.py).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from transpiler import dtypes, tree_util
from transpiler.errors import located
from transpiler.lowering.regions import Region, Regions, active_trace, probe
from transpiler.lowering.tracer import Tracer
from transpiler.primitives.core import ShapedArray, abstractify
from transpiler.primitives import elementwise as ew
from transpiler import numpy as jnp
from transpiler.primitives import conversions as conv

__all__ = ["cond", "switch", "while_loop", "probe"]


def _traced(x: Any) -> bool:
    return isinstance(x, Tracer)


def _converted(fn: Any) -> Any:
    """A branch or body as traced: with its own Python ``if``/``while``/``for`` on traced
    values converted to control flow (transforms/autograph/convert.py), as jit does for the
    function it traces."""
    from transpiler.transforms.autograph.runtime import callee  # upward: the transforms
    return callee(fn)


def _check_callable(fn: Any, what: str, op: str) -> None:
    if not callable(fn):
        raise located(TypeError, f"lax.{op}: {what} must be callable, got "
                      f"{type(fn).__name__}")


def _scalar(x: Any, op: str, what: str) -> ShapedArray:
    aval = abstractify(x, 0, f"lax.{op}")
    if aval.shape != ():
        raise located(TypeError, f"lax.{op}: {what} must be a scalar, got an array of shape "
                      f"{list(aval.shape)}", "reduce it first (e.g. jnp.all / jnp.any)")
    return aval


# --- cond / switch -----------------------------------------------------------------------

def cond(pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any],
         *operands: Any) -> Any:
    """``true_fun(*operands) if pred else false_fun(*operands)``; under jit with a traced
    `pred`, both branches are traced into one ``stablehlo.if`` and must return the same
    structure, shapes and dtypes."""
    _check_callable(true_fun, "true_fun", "cond")
    _check_callable(false_fun, "false_fun", "cond")
    aval = _scalar(pred, "cond", "pred")
    if not _traced(pred):
        return true_fun(*operands) if bool(pred) else false_fun(*operands)
    if aval.dtype != dtypes.bool_:
        pred = ew.not_equal(pred, 0)
    return _branches("stablehlo.if", pred, (true_fun, false_fun), operands, "cond",
                     ("true_fun", "false_fun"))


def switch(index: Any, branches: Sequence[Callable[..., Any]], *operands: Any) -> Any:
    """``branches[clamp(index, 0, n - 1)](*operands)``; a traced `index` gives one
    ``stablehlo.case``."""
    branches = tuple(branches)
    if not branches:
        raise located(ValueError, "lax.switch: branches must be a non-empty sequence")
    for i, branch in enumerate(branches):
        _check_callable(branch, f"branches[{i}]", "switch")
    aval = _scalar(index, "switch", "index")
    if not (aval.dtype.kind in "iu" or aval.dtype == dtypes.bool_):
        raise located(TypeError, f"lax.switch: index must be an integer scalar, got {aval}")
    if not _traced(index):
        return branches[min(max(int(index), 0), len(branches) - 1)](*operands)
    if len(branches) == 1:
        return branches[0](*operands)
    index = jnp.clip(jnp.asarray(index).astype(jnp.int32), 0, len(branches) - 1)
    return _branches("stablehlo.case", index, branches, operands, "switch",
                     tuple(f"branches[{i}]" for i in range(len(branches))))


def _branches(op_name: str, selector: Any, branches: Sequence[Callable[..., Any]],
              operands: tuple, op: str, names: Sequence[str]) -> Any:
    parent = active_trace()
    if hasattr(parent, "per_shard"):  # pmap's per-device tracing (spmd/multi_device.py)
        return parent.branches(_branches, op_name, selector, branches, operands, op, names)
    branches = [_converted(b) for b in branches]
    if _SELECTING[0] and getattr(parent, "in_loop", False):
        return _selected(selector, branches, operands, op, names)
    selector_value = parent.operand(selector, abstractify(selector))
    with Regions(len(branches)) as regions:
        traced = [regions.trace(i, lambda b=b: b(*operands), []) for i, b in enumerate(branches)]
        first = traced[0]
        _same_structure([r.tree for r in traced], op, names)
        avals = [join_avals([r.avals[k] for r in traced], op, names, k)
                 for k in range(len(first.avals))]
        results = regions.finish(op_name, [selector_value], avals,
                                 [(region, avals) for region in traced])
    return _outputs(parent, results, avals, first.tree)


_SELECTING = [0]


@contextmanager
def selecting_in_loops() -> Iterator[None]:
    """Within this block, a traced `cond`/`switch` inside a loop body computes every branch
    and selects the result instead of emitting ``stablehlo.if``/``case``. The derivative
    rules use it for their backward branches: IREE 3.13 miscompiles an ``if`` inside a
    ``while`` that reduces into a loop-carried value while the loop reads a buffer written
    by an earlier loop (the reverse pass of a loop: "indirect buffer reference slot 0 is
    out range" on local-sync, "transient buffer has not been committed" on local-task)."""
    _SELECTING[0] += 1
    try:
        yield
    finally:
        _SELECTING[0] -= 1


def _selected(selector: Any, branches: Sequence[Callable[..., Any]], operands: tuple, op: str,
              names: Sequence[str]) -> Any:
    """Every branch computed, the result picked by ``select``."""
    outs = [b(*operands) for b in branches]
    flat = [tree_util.tree_flatten(o) for o in outs]
    _same_structure([tree for _, tree in flat], op, names)
    leaves = []
    for k in range(len(flat[0][0])):
        values = [f[0][k] for f in flat]
        aval = join_avals([abstractify(v) for v in values], op, names, k)
        values = [jnp.astype(v, aval.dtype) for v in values]
        if len(values) == 2:  # cond: selector is the predicate
            leaves.append(jnp.where(selector, values[0], values[1]))
        else:  # switch: selector is the (clamped) index
            picked = values[-1]
            for i in range(len(values) - 2, -1, -1):
                picked = jnp.where(selector == i, values[i], picked)
            leaves.append(picked)
    return tree_util.tree_unflatten(flat[0][1], leaves)


def _same_structure(trees: Sequence[Any], op: str, names: Sequence[str]) -> None:
    for name, tree in zip(names[1:], trees[1:]):
        if tree != trees[0]:
            raise located(TypeError, f"lax.{op}: {names[0]} and {name} must return the "
                          f"same structure, got {trees[0]} and {tree}",
                          "return the same tuple/dict of arrays from every branch")


def join_avals(avals: Sequence[ShapedArray], op: str, names: Sequence[str],
               leaf: int) -> ShapedArray:
    """The common aval of one output leaf across branches: equal shapes, equal dtypes up to
    weak types (a weak Python scalar takes the other branch's dtype)."""
    shapes = {a.shape for a in avals}
    strong = {a.dtype for a in avals if not a.weak_type}
    if len(shapes) > 1 or len(strong) > 1 or (not strong and len({a.dtype for a in avals}) > 1):
        shown = ", ".join(f"{a.str_short()} ({n})" for a, n in zip(avals, names))
        raise located(TypeError, f"lax.{op}: the branches return different types for output "
                      f"leaf {leaf}: {shown}", "every branch must return arrays of the same "
                      "shape and dtype (cast with .astype, or broadcast)")
    if strong:
        return ShapedArray(avals[0].shape, strong.pop(), False)
    return avals[0]


def _outputs(parent: Any, values: Sequence[Any], avals: Sequence[ShapedArray], tree: Any) -> Any:
    return tree_util.tree_unflatten(tree, [Tracer(parent, v, a) for v, a in zip(values, avals)])


# --- while_loop -----------------------------------------------------------------------

def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any],
               init_val: Any, *, max_iters: Optional[int] = None) -> Any:
    """``while cond_fun(val): val = body_fun(val)``. Under jit it is one ``stablehlo.while``
    (never unrolled); the body must keep the carry's structure, shapes and dtypes (a weak
    Python scalar in `init_val` takes the dtype the body gives it).

    `max_iters` (an extension of JAX's signature) stops the loop after at most that many
    iterations; with it, reverse mode under jit runs a masked loop of `max_iters` steps
    (without it, a checkpointed one: transforms/ad/control.py)."""
    _check_callable(cond_fun, "cond_fun", "while_loop")
    _check_callable(body_fun, "body_fun", "while_loop")
    if max_iters is not None:
        bound = _max_iters(max_iters)
        counted = while_loop(lambda s: jnp.logical_and(s[0] < bound, cond_fun(s[1])),
                             lambda s: (s[0] + 1, body_fun(s[1])),
                             (jnp.asarray(0, dtype=jnp.int32), init_val))
        return counted[1]
    if active_trace() is None:
        val = init_val
        while _truth(cond_fun(val)):
            val = body_fun(val)
        return val
    return _staged_while(cond_fun, body_fun, init_val)


def _max_iters(max_iters: Any) -> int:
    if isinstance(max_iters, Tracer) or not isinstance(max_iters, (int, np.integer)) \
            or isinstance(max_iters, bool) or max_iters < 0:
        raise located(TypeError, f"lax.while_loop: max_iters must be a non-negative Python "
                      f"int, got {max_iters!r}")
    return int(max_iters)


def _truth(pred: Any) -> bool:
    aval = abstractify(pred, 0, "lax.while_loop")
    if aval.shape != () or aval.dtype != dtypes.bool_:
        raise located(TypeError, f"lax.while_loop: cond_fun must return a boolean scalar, "
                      f"got {aval}")
    return bool(pred)


def _staged_while(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    parent = active_trace()
    if hasattr(parent, "per_shard"):  # pmap's per-device tracing (spmd/multi_device.py)
        return parent.while_loop(_staged_while, cond_fun, body_fun, init_val)
    cond_fun, body_fun = _converted(cond_fun), _converted(body_fun)
    leaves, tree = tree_util.tree_flatten(init_val)
    carry = [abstractify(leaf, i, "lax.while_loop") for i, leaf in enumerate(leaves)]

    def unflatten(args: list[Any]) -> tuple:
        return (tree_util.tree_unflatten(tree, list(args)),)

    for _ in range(len(carry) + 1):  # each retry promotes at least one weak leaf
        values = [parent.operand(conv.convert_element_type(leaf, dtype=a.dtype)
                                 if abstractify(leaf).dtype != a.dtype else leaf, a)
                  for leaf, a in zip(leaves, carry)]
        with Regions(2, loop=True) as regions:
            test = regions.trace(0, _condition(cond_fun), carry, unflatten)
            if len(test.avals) != 1 or test.avals[0].shape != () or \
                    test.avals[0].dtype != dtypes.bool_:
                shown = ", ".join(str(a) for a in test.avals)
                raise located(TypeError, "lax.while_loop: cond_fun must return a boolean "
                              f"scalar, got {shown or test.tree}")
            body = regions.trace(1, body_fun, carry, unflatten)
            promoted = check_carry(carry, body, tree, "while_loop", "body_fun")
            if promoted is not None:
                carry = promoted
                continue
            results = regions.finish("stablehlo.while", values, carry,
                                     [(test, test.avals), (body, carry)])
        outputs = [Tracer(parent, v, a) for v, a in zip(results, carry)]
        # IREE 3.13 miscomputes a loop result that only a later loop reads while it is a
        # transient (function-internal) buffer: it reuses the memory too early (wrong
        # values on local-sync, "transient buffer has not been committed" on local-task).
        # Returned as extra results of the function (dropped by jit), the loop's results
        # are external buffers, which it keeps alive.
        parent.keep_alive.extend(t for t in outputs if t.aval.ndim > 0)
        return tree_util.tree_unflatten(tree, outputs)
    raise AssertionError("unreachable: weak-type promotion did not settle")


def _condition(cond_fun: Callable) -> Callable:
    """`cond_fun` for the loop's cond region. A condition that is a carried value itself
    (``while flag: ...; flag = ...``, as converted loops are) goes through an integer
    compare: IREE 3.13 miscompiles a cond region that returns its block argument unchanged
    ("region branch point has 4 operands, but region successor needs 6 inputs")."""
    def condition(*args: Any) -> Any:
        out = cond_fun(*args)
        leaves = tree_util.tree_leaves(args)
        if isinstance(out, Tracer) and any(out is leaf for leaf in leaves):
            return jnp.astype(out, jnp.int32) != 0
        return out
    return condition


def check_carry(carry: list[ShapedArray], body: Region, tree: Any, op: str,
                what: str) -> Optional[list[ShapedArray]]:
    """None when `body` returns the carry's types; the promoted carry when only weak
    leaves changed dtype; a TypeError naming the leaf otherwise."""
    if body.tree != tree:
        raise located(TypeError, f"lax.{op}: {what} must return the carry's structure "
                      f"{tree}, got {body.tree}", "return the same tuple/dict of arrays as "
                      "the initial value")
    promoted = list(carry)
    changed = False
    for k, (before, after) in enumerate(zip(carry, body.avals)):
        if before.shape != after.shape:
            raise located(TypeError, f"lax.{op}: {what} changes the shape of carry leaf {k} "
                          f"from {before.str_short()} to {after.str_short()}",
                          "the carry must keep its shape across iterations; preallocate it "
                          "with its final shape, or use lax.scan to stack per-step results")
        if before.dtype != after.dtype:
            if before.weak_type:
                promoted[k] = ShapedArray(before.shape, after.dtype, after.weak_type)
                changed = True
            elif not after.weak_type:
                raise located(TypeError, f"lax.{op}: {what} changes the dtype of carry leaf "
                              f"{k} from {before.str_short()} to {after.str_short()}",
                              "cast the new value back (.astype) or start the carry with "
                              "the dtype the loop produces")
    return promoted if changed else None
