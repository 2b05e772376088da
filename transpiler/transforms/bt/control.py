"""Batching rules of ``lax`` control flow: `cond`, `switch`, `while_loop`, `fori_loop`,
`scan`, `map` (JAX's semantics). Their derivative rules (ad/control.py) have none here:
vmap reads those as code, so ``vmap(grad(f))`` and ``vmap(hessian(f))`` through control
flow are the rules batched, their `cond` / `scan` / `while_loop` by the rules below.

``bt.call`` (bt/__init__.py) sends a call of one of these with a batched operand here:

    rule(fn, args, dims, kwargs, kwdims) -> (out, out_dims)

with the call's arguments as written and their companions (a branch's or body's companion
is the dict over its closure, or None). Each rule rebuilds the computation from the lax
functions themselves, with the user's branch and body functions batched inside (by
``bt.call``), so it runs eagerly as Python and stages into ``stablehlo.if`` / ``while``
under jit.

* A selector (predicate, index) the same for every member keeps its control flow; the
  branches must agree on which output leaves carry the batch axis, so a leaf batched in
  any branch is batched (at axis 0) in all.
* A batched selector runs every branch and picks each member's result (``select``).
* A loop's carry leaf that the body makes batched is batched from the start: the carry's
  companion is a fixed point, found by probing the body (lowering/regions.probe: eagerly
  it runs, under jit it traces into a region that is thrown away).
* A batched loop condition runs the loop while any member is active; the members that are
  done keep their carry (JAX's rule). Every carry leaf is then batched.

The combinators below (`branching`, `while_`, `fori`, `scan`) take *batched steps*,
``(values, companions) -> (out, out_companions)``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from transpiler import tree_util
from transpiler.errors import TranspileError, user_location
from transpiler.primitives.batching import materialize, move_to_front
from transpiler.primitives.core import ShapedArray, abstractify
from transpiler.transforms import bt
from transpiler.transforms.bt.control_leaves import (Step, flatten, unflatten, part, placed,
    conformed, check_tree, select, probed, bind, static, user, _traced)
from transpiler import lax
from transpiler import numpy as jnp
from transpiler.lax.control import _same_structure
from transpiler.lax.control import join_avals
from transpiler.lax.loops import _index_dtype
from transpiler.lax.loops import _scan_length
from transpiler.primitives import shape as sp
from transpiler.lax.loops import _pair
from transpiler.lax.control import _scalar

MODULES = frozenset({"transpiler.lax.control", "transpiler.lax.loops",
                     "transpiler.transforms.ad.control"})



# --- cond / switch ------------------------------------------------------------------------------
def branching(op: str, selector: Any, selector_dims: Any, branches: list, operands: tuple,
              operand_dims: Any, names: tuple) -> tuple:
    """``cond`` (op "cond", two branches: true, false) or ``switch`` of batched steps."""
    operand_dims = tuple(part(operand_dims, i) for i in range(len(operands)))
    if bt.batched(selector_dims):
        member = bt.view(selector, selector_dims)
        what = "pred" if op == "cond" else "index"
        if member.shape != ():
            raise TranspileError(f"lax.{op}: {what} must be a scalar, got an array of shape "
                                 f"{list(member.shape)}", user_location(),
                                 "reduce it first (e.g. jnp.all / jnp.any)")
        front = move_to_front(selector, selector_dims)
        if op == "cond":
            front = front if member.dtype == jnp.bool_ else jnp.not_equal(front, 0)
        elif member.dtype.kind in "iub":
            front = jnp.clip(jnp.astype(front, jnp.int32), 0, len(branches) - 1)
        else:
            raise TranspileError(f"lax.switch: index must be an integer scalar, got "
                                 f"{member.dtype}", user_location())
        return _select(op, front, branches, operands, operand_dims, names)
    if not _traced(selector) or len(branches) == 1:
        _scalar(selector, op, "pred" if op == "cond" else "index")
        if op == "cond":
            return branches[0 if bool(selector) else 1](operands, operand_dims)
        pick = min(max(int(selector), 0), len(branches) - 1) if len(branches) > 1 else 0
        return branches[pick](operands, operand_dims)
    if op == "cond":
        def run(bs: list, ops: tuple) -> Any:
            return lax.cond(selector, bs[0], bs[1], *ops)
    else:
        def run(bs: list, ops: tuple) -> Any:
            return lax.switch(selector, bs, *ops)
    return _staged(run, branches, operands, operand_dims, op, names)


def _outputs(branches: list, operands: tuple, operand_dims: tuple, op: str,
             names: tuple) -> list[tuple[list, list, Any, Any]]:
    """Each branch run batched: (leaves, leaf companions, structure spec, value)."""
    outs = [branch(operands, operand_dims) for branch in branches]
    _same_structure([tree_util.tree_structure(o) for o, _ in outs], op, names)
    return [(*flatten(o, d), o) for o, d in outs]


def _select(op: str, selector: Any, branches: list, operands: tuple, operand_dims: tuple,
            names: tuple) -> tuple:
    """Every branch run, each member's result picked by its predicate or index."""
    flat = _outputs(branches, operands, operand_dims, op, names)
    size = bt.batch_size()
    leaves = []
    for k in range(len(flat[0][0])):
        values = [materialize(f[0][k], f[1][k], size) for f in flat]
        member = [ShapedArray(a.shape[1:], a.dtype, a.weak_type)
                  for a in (abstractify(v) for v in values)]
        aval = join_avals(member, op, names, k)
        values = [jnp.astype(v, aval.dtype) for v in values]
        test = jnp.reshape(selector, (size,) + (1,) * aval.ndim)
        if op == "cond":
            leaves.append(jnp.where(test, values[0], values[1]))
            continue
        picked = values[-1]
        for i in range(len(values) - 2, -1, -1):
            picked = jnp.where(test == i, values[i], picked)
        leaves.append(picked)
    return unflatten(flat[0][2], leaves, [0] * len(leaves))


def _staged(run: Callable[[list, tuple], Any], branches: list, operands: tuple,
            operand_dims: tuple, op: str, names: tuple) -> tuple:
    """A traced selector the same for all members: one ``if``/``case`` whose branches agree
    on the batched leaves (batched in any branch: at axis 0 in every one)."""
    flat = probed(lambda: [(f[1], tree_util.tree_structure(f[3]))
                           for f in _outputs(branches, operands, operand_dims, op, names)])
    want = [0 if any(dims[k] is not None for dims, _ in flat) else None
            for k in range(len(flat[0][0]))]
    tree = flat[0][1]

    def staged(branch: Step) -> Callable[..., Any]:
        def run_branch(*ops: Any) -> Any:
            out, dims = branch(ops, operand_dims)
            return conformed(out, dims, want, tree, f"lax.{op}: every branch")
        return run_branch

    out = run([staged(b) for b in branches], operands)
    leaves, _, spec = flatten(out, None)
    return unflatten(spec, leaves, want)


def cond_rule(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    b = bind(fn, args, dims, kwargs, kwdims)
    return branching("cond", *b["pred"], [user(*b["true_fun"]), user(*b["false_fun"])],
                     *b["operands"], ("true_fun", "false_fun"))


def switch_rule(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    b = bind(fn, args, dims, kwargs, kwdims)
    fns, fns_dims = b["branches"]
    if not len(fns):
        raise TranspileError("lax.switch: branches must be a non-empty sequence",
                             user_location())
    branches = [user(f, part(fns_dims, i)) for i, f in enumerate(fns)]
    return branching("switch", *b["index"], branches, *b["operands"],
                     tuple(f"branches[{i}]" for i in range(len(fns))))


# --- loops --------------------------------------------------------------------------------------
def carry(init: Any, init_dims: Any, probe_step: Callable[[Any, Any], tuple], what: str,
          all_batched_is_stable: bool = True) -> tuple[list, Callable, Any, Any]:
    """The loop carry's companion, a fixed point: a leaf batched in `init` or made batched
    by the body is batched (at axis 0) from the start. ``probe_step(carry, dims)`` runs
    the body, giving ``((out, out_dims), extra)``; the result is the carry's leaf
    companions `want`, ``at(want) -> (carry, carry_dims)`` (the initial carry placed),
    its structure, and the `extra` of the last probe."""
    leaves, leaf_dims, spec = flatten(init, init_dims)
    tree = tree_util.tree_structure(init)

    def at(want: list) -> tuple[Any, Any]:
        return unflatten(spec, placed(leaves, leaf_dims, want), want)

    def run(want: list) -> tuple[list, Any]:
        (out, dims), extra = probe_step(*at(want))
        check_tree(out, tree, what)
        return flatten(out, dims)[1], extra

    want: list = [None if d is None else 0 for d in leaf_dims]
    extra = None
    while not (all_batched_is_stable and all(w == 0 for w in want)):
        out_dims, extra = probed(functools.partial(run, want))
        joined = [0 if w is not None or d is not None else None for w, d in zip(want, out_dims)]
        if joined == want:
            break
        want = joined
    return want, at, tree, extra


def while_(test: Step, step: Step, init: Any, init_dims: Any, max_iters: Any,
           what: str) -> tuple:
    """``while_loop`` of batched steps `test` and `step` (on the carry)."""
    want, at, tree, _ = carry(init, init_dims, lambda c, d: (step(c, d), None), what)
    test_batched = probed(lambda: bt.batched(test(*at(want))[1]))
    if test_batched:
        want = [0] * len(want)
    start, carry_dims = at(want)
    bound = {} if max_iters is None else {"max_iters": max_iters}

    def body_fun(c: Any) -> Any:
        return conformed(*step(c, carry_dims), want, tree, what)

    if not test_batched:
        def cond_fun(c: Any) -> Any:
            pred, pred_dims = test(c, carry_dims)
            if bt.batched(pred_dims):
                raise TranspileError("internal: the loop condition became batched after the "
                                     "carry's companion was fixed", user_location())
            return pred
        return lax.while_loop(cond_fun, body_fun, start, **bound), carry_dims

    def masked(c: Any) -> Any:
        return select(active(test, c, carry_dims), body_fun(c), carry_dims, c, carry_dims)[0]

    return lax.while_loop(lambda c: jnp.any(active(test, c, carry_dims)), masked, start,
                          **bound), carry_dims


def active(test: Step, c: Any, dims: Any) -> Any:
    """The members whose loop condition holds: a boolean array of shape ``(batch,)``."""
    size = bt.batch_size()
    pred, pred_dims = test(c, dims)
    pred = materialize(pred, pred_dims, size)
    aval = abstractify(pred)
    if aval.shape != (size,) or aval.dtype != jnp.bool_:
        raise TranspileError("lax.while_loop: cond_fun must return a boolean scalar, got "
                             f"{ShapedArray(aval.shape[1:], aval.dtype)}", user_location())
    return pred


def fori(lower: Any, lower_dims: Any, upper: Any, upper_dims: Any,
         body: Callable[..., tuple[Any, Any]],
         init: Any, init_dims: Any, what: str) -> tuple:
    """``fori_loop`` of a batched step ``body(i, i_dims, carry, carry_dims)``."""
    dtype = _index_dtype(bt.view(lower, lower_dims), bt.view(upper, upper_dims))
    if not bt.batched(lower_dims) and not bt.batched(upper_dims):
        def probe_step(c: Any, d: Any) -> tuple:
            return body(jnp.asarray(lower, dtype=dtype), None, c, d), None
        want, at, tree, _ = carry(init, init_dims, probe_step, what)
        start, carry_dims = at(want)
        out = lax.fori_loop(lower, upper, lambda i, c: conformed(
            *body(i, None, c, carry_dims), want, tree, what), start)
        return out, carry_dims
    # batched bounds: a while loop over (i, carry) whose condition differs across members
    hi = jnp.asarray(upper, dtype=dtype)  # elementwise: the batch axis stays

    def test(state: Any, d: Any) -> tuple:
        return bt.call(jnp.less, (state[0], hi), (d[0], upper_dims))

    def step(state: Any, d: Any) -> tuple:
        new, new_dims = body(state[0], d[0], state[1], d[1])
        i, i_dims = bt.call(jnp.add, (state[0], jnp.asarray(1, dtype=dtype)), (d[0], None))
        return (i, new), (i_dims, new_dims)

    (_, out), (_, out_dims) = while_(test, step, (jnp.asarray(lower, dtype=dtype), init),
                                     (lower_dims, init_dims), None, what)
    return out, out_dims


def scan(f: Callable[[Any, Any, Any, Any], tuple], init: Any, init_dims: Any, xs: Any,
         xs_dims: Any, length: Any = None, reverse: bool = False, unroll: Any = 1) -> tuple:
    """``scan`` of a batched step ``f(carry, carry_dims, x, x_dims) -> ((carry, y), dims)``:
    the batch axis of each batched leaf of `xs` moves to position 1 (scan slices axis 0),
    so every step's slice is batched at axis 0; stacked outputs come back batched at 1."""
    x_leaves, x_dims, x_spec = flatten(xs, xs_dims)
    moved = [x if d is None else _axis_to_1(x, d) for x, d in zip(x_leaves, x_dims)]
    slice_dims = [None if d is None else 0 for d in x_dims]
    xs_moved, slice_tree = unflatten(x_spec, moved, slice_dims)
    n = _scan_length(moved, length)

    def pair(out: Any, dims: Any) -> tuple[tuple, tuple]:
        return _pair(out), (part(dims, 0), part(dims, 1))

    def probe_step(c: Any, d: Any) -> tuple:
        slices = [x[0] if n else jnp.zeros(abstractify(x).shape[1:], abstractify(x).dtype)
                  for x in moved]
        (new, y), (new_dims, y_dims) = pair(*f(c, d, unflatten(x_spec, slices, slice_dims)[0],
                                                slice_tree))
        return (new, new_dims), [None if yd is None else 0 for yd in flatten(y, y_dims)[1]]

    want, at, tree, y_want = carry(init, init_dims, probe_step, "lax.scan: f", False)
    start, carry_dims = at(want)

    def step(c: Any, x: Any) -> tuple:
        (new, y), (new_dims, y_dims) = pair(*f(c, carry_dims, x, slice_tree))
        y_leaves, y_leaf_dims, y_spec = flatten(y, y_dims)
        y = unflatten(y_spec, placed(y_leaves, y_leaf_dims, y_want), y_want)[0]
        return conformed(new, new_dims, want, tree, "lax.scan: f"), y

    out, ys = lax.scan(step, start, xs_moved, length=length, reverse=reverse, unroll=unroll)
    ys_leaves, _, ys_spec = flatten(ys, None)
    ys_dims = unflatten(ys_spec, ys_leaves, [None if w is None else 1 for w in y_want])[1]
    return (out, ys), (carry_dims, ys_dims)


def _axis_to_1(x: Any, dim: int) -> Any:
    if dim == 1:
        return x
    front = move_to_front(x, dim)
    ndim = abstractify(front).ndim
    if ndim < 2:
        raise TranspileError("lax.scan: an xs leaf is a scalar for each member; every leaf "
                             "of xs needs a leading axis to scan over", user_location())
    return sp.transpose(front, permutation=(1, 0, *range(2, ndim)))


def while_loop_rule(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    b = bind(fn, args, dims, kwargs, kwdims)
    static(b, ("max_iters",), "while_loop")
    test, body = user(*b["cond_fun"]), user(*b["body_fun"])
    return while_(lambda c, d: test((c,), (d,)), lambda c, d: body((c,), (d,)),
                  *b["init_val"], b["max_iters"][0], "lax.while_loop: body_fun")


def fori_loop_rule(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    b = bind(fn, args, dims, kwargs, kwdims)
    body = user(*b["body_fun"])
    return fori(*b["lower"], *b["upper"], lambda i, i_d, c, c_d: body((i, c), (i_d, c_d)),
                *b["init_val"], "lax.fori_loop: body_fun")


def scan_rule(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    b = bind(fn, args, dims, kwargs, kwdims)
    static(b, ("length", "reverse", "unroll", "_split_transpose"), "scan")
    f = user(*b["f"])
    return scan(lambda c, cd, x, xd: f((c, x), (cd, xd)), *b["init"], *b["xs"],
                b["length"][0], bool(b["reverse"][0]), b["unroll"][0])


def map_rule(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    b = bind(fn, args, dims, kwargs, kwdims)
    f = user(*b["f"])

    def step(c: Any, cd: Any, x: Any, xd: Any) -> tuple:
        y, y_dims = f((x,), (xd,))
        return (None, y), (None, y_dims)

    (_, ys), (_, ys_dims) = scan(step, None, None, *b["xs"])
    return ys, ys_dims


RULES: dict[str, Any] = {"cond": cond_rule, "switch": switch_rule, "while_loop": while_loop_rule,
                         "fori_loop": fori_loop_rule, "scan": scan_rule, "map": map_rule}
