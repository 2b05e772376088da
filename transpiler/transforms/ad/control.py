"""Derivatives of ``lax`` control flow: run-time rules built from the other control flow.

Generated code calls ``ad.vjp_call(lax.cond, args, kwargs, g)`` / ``ad.jvp_call(...)`` for
these (classify: kind "control"); the rules below differentiate the branch and body
functions with the transforms themselves (closures included, see common/closures.py) and
assemble the derivative from `cond` / `switch` / `scan` / `while_loop` again, so it runs
eagerly and stages into ``stablehlo.if`` / ``case`` / ``while`` under jit.

Forward mode, reverse mode and vmap read the rules marked ``@read_by(FORWARD, REVERSE,
BATCH)`` (transpiler/rule_code.py): the reverse and forward rules of `cond`, `switch`,
`fori_loop`, `scan`, `map` and `while_loop`, written with loops rather than comprehensions
and without star-arguments for it. So each transform has one rule per control-flow
function and composes through the others': hessian = jacfwd(jacrev(f)), grad(grad(f)),
jacfwd(jacfwd(f)) and jacrev(jacfwd(f)) are a transform of the branch's or body's generated
derivative code, inside a `cond` or `scan` again; ``vmap(grad(f))`` and
``vmap(hessian(f))`` are the rules (and their generated derivatives) batched by vmap, whose
`cond` / `scan` / `while_loop` batch as any (bt/control.py). The helpers they call that the transforms do not
read are linear and have tangent and cotangent rules of their own (`fill`, `_where`:
ad/helper_tangents.py, reverse/adjoints.py's linear_helper_rule) or are static
(`_traced`, `_any`); `_primal` passes its function through; vmap batches them by
bt/control_helpers.py. A bounded `while_loop` under jit is read by reverse mode and vmap
only (forward mode over it fails in IREE, see there). No derivative reads a rule's
generated derivative (a third derivative): a clear error (common/generated.py's
`refuse_rule_code`, frontend's parse_function). vmap does not read the checkpointed
reverse rule of an unbounded `while_loop` under jit: a vmapped function whose derivative
reaches it is mapped member by member as ``lax.map`` (batch/api.py's
`Vmapped.member_by_member`).

Reverse mode recomputes what it needs: a branch's adjoint re-runs the branch's forward
code inside the backward `cond`; a loop's backward pass stores each iteration's carry (a
``[trip_count, ...]`` buffer under jit, by a forward `scan`) and re-runs one iteration's
forward code to differentiate it. A `while_loop`'s trip count is only known when it runs:
under jit its reverse mode stores a checkpoint per block of steps and computes each
block's carries again (`_checkpointed_while_vjp`).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from transpiler import tree_util
from transpiler.errors import TranspileError, user_location
from transpiler.tree_util._registry import sequence_like
from transpiler.transforms.ad.calls import vjp_call_closure
from transpiler.transforms.ad.forward import _filled, jvp_call
from transpiler import numpy as jnp
from transpiler.transforms.common.closures import carries_derivative, closure_items, is_closure
from transpiler.transforms.ad.cotangents import add
from transpiler.primitives.core import Tracer
from transpiler.transforms.common.generated import for_jit
from transpiler.lax.control import selecting_in_loops
from transpiler import debug, lax
from transpiler.rule_code import read_by
from transpiler.lax.loops import _index_dtype
from transpiler.lowering.regions import probe_with_size


# The transforms that read the rules marked for them.
FORWARD = "forward mode"
REVERSE = "reverse mode"
BATCH = "vmap"


@read_by(FORWARD, REVERSE, BATCH)
def _vjp(fn: Any, args: tuple, g: Any) -> tuple[tuple, Any]:
    """(cotangents of `args`, cotangent of `fn`'s closure) for ``fn(*args)`` and `g`."""
    *bars, fn_bar = vjp_call_closure(fn, args, {}, g)
    return tuple(bars), fn_bar


@read_by(FORWARD, REVERSE, BATCH)
def _jvp(fn: Any, primals: tuple, tangents: tuple, fn_dot: Any) -> tuple[Any, Any]:
    out, out_dot = jvp_call(fn, primals, tangents, {}, fn_dot)
    return out, _filled(out_dot, out)


def fill(bar: Any, primal: Any) -> Any:
    """`bar` with `primal`'s full structure: zeros where nothing flowed (None) for values
    that carry derivatives, None for the others (ints, static values). A function's
    cotangent is the dict over its closure (common/closures.py)."""
    if is_closure(primal):  # (loops, not comprehensions: see _branches_vjp)
        filled = {}
        for n, v in closure_items(primal):
            if carries_derivative(v):
                filled[n] = fill(bar.get(n) if bar else None, v)
        return filled
    if isinstance(primal, dict):
        filled = {}
        for k in primal:
            filled[k] = fill(bar.get(k) if bar is not None else None, primal[k])
        return filled
    if isinstance(primal, (tuple, list)):
        parts = []
        for i in range(len(primal)):
            parts.append(fill(bar[i] if bar is not None else None, primal[i]))
        return sequence_like(primal, parts)
    if primal is None or not carries_derivative(primal):
        return None
    return jnp.zeros_like(primal) if bar is None else bar


def _where(keep: Any, new: Any, old: Any) -> Any:
    """`new` where `keep` holds, else `old`, leaf by leaf."""
    return tree_util.tree_map(lambda a, b: jnp.where(keep, a, b), new, old)


# The transposes of `fill` and `_where`, which reverse mode over these rules calls
# (reverse/adjoints.py's control_helper_rule).

def unfill(bar: Any, given: Any) -> Any:
    """The cotangent of `given` from that of ``fill(given, primal)``: `bar` where `given`
    has values, None where it had none (`fill` made those zeros)."""
    if bar is None or given is None:
        return None
    if isinstance(given, dict):
        return {k: unfill(bar.get(k), v) for k, v in given.items()}
    if isinstance(given, (tuple, list)):
        return sequence_like(given, [unfill(b, v) for b, v in zip(bar, given)])
    return bar


def where_bar(keep: Any, bar: Any, side: Any, taken: bool) -> Any:
    """The cotangent of ``_where(keep, new, old)``'s `new` (`taken`) or `old` operand."""
    if bar is None:
        return None

    def part(b: Any, x: Any) -> Any:
        if b is None:
            return None
        zero = jnp.zeros_like(b)
        return jnp.where(keep, b, zero) if taken else jnp.where(keep, zero, b)
    return tree_util.tree_map(part, bar, side, is_leaf=lambda v: v is None)


@read_by(FORWARD, REVERSE, BATCH)
def _add(a: Any, b: Any) -> Any:
    return add(a, b)


def _traced(x: Any) -> bool:
    return isinstance(x, Tracer)


def _any(running: Any) -> bool:
    """Whether a loop's condition holds (for any member of a vmapped batch)."""
    return bool(jnp.any(running))


def _primal(fn: Any) -> Any:
    """A user's branch or body as the rules run it (converted under jit, see common/generated.py's for_jit)."""
    return for_jit(fn)


# --- reverse mode --------------------------------------------------------------------------

@read_by(FORWARD, REVERSE, BATCH)
def _branches_vjp(select: Callable[..., Any], selector: Any, fns: tuple, ops: tuple,
                  g: Any) -> tuple[tuple, tuple]:
    """(cotangents of the branch functions, of the operands) through `cond`/`switch`:
    each branch of the backward `select` runs that branch's VJP; every branch returns
    every cotangent (zeros for the other branches' closures), so their types agree."""
    # (Written with loops, not comprehensions: forward mode reads it, see the docstring.)
    def branch(k: int) -> Callable[..., Any]:
        def run(operands: tuple) -> tuple:  # (one operand: no star-arguments to read)
            bars, fn_bar = _vjp(fns[k], operands, g)
            fn_bars = []
            for j in range(len(fns)):
                fn_bars.append(fill(fn_bar if j == k else None, fns[j]))
            op_bars = []
            for i in range(len(operands)):
                op_bars.append(fill(bars[i], operands[i]))
            return tuple(fn_bars), tuple(op_bars)
        return run
    branches = []
    for k in range(len(fns)):
        branches.append(branch(k))
    with selecting_in_loops():  # an IREE 3.13 bug (see there)
        fn_bars, op_bars = select(selector, branches, ops)
    return fn_bars, op_bars


@read_by(FORWARD, REVERSE, BATCH)
def cond_vjp(args: tuple, kwargs: dict, g: Any) -> tuple:
    if g is None:
        return (None,) * len(args)
    pred, true_fun, false_fun, *ops = args

    def select(p: Any, bs: list, o: tuple) -> Any:  # (named: generated code keeps the name)
        return lax.cond(p, bs[0], bs[1], o)
    fn_bars, op_bars = _branches_vjp(select, pred, (true_fun, false_fun), tuple(ops), g)
    return (None, *fn_bars, *op_bars)


@read_by(FORWARD, REVERSE, BATCH)
def switch_vjp(args: tuple, kwargs: dict, g: Any) -> tuple:
    if g is None:
        return (None,) * len(args)
    index, branches, *ops = args

    def select(i: Any, bs: list, o: tuple) -> Any:
        return lax.switch(i, bs, o)
    fn_bars, op_bars = _branches_vjp(select, index, tuple(branches), tuple(ops), g)
    return (None, list(fn_bars) if isinstance(branches, list) else fn_bars, *op_bars)


@read_by(FORWARD, REVERSE, BATCH)
def fori_loop_vjp(args: tuple, kwargs: dict, g: Any) -> tuple:
    """The forward loop as a `scan` that stores each iteration's carry, then a reverse
    `scan` that differentiates one iteration at a time."""
    lower, upper, body, init = args
    if g is None:
        return (None,) * 4
    if _traced(lower) or _traced(upper):
        raise TranspileError(
            "reverse-mode differentiation of lax.fori_loop needs a static trip count, but "
            "its bounds are traced values", user_location(),
            "pass Python ints as lower and upper (mark them static with "
            "jit(..., static_argnums=...)), or differentiate in forward mode (jvp, jacfwd)")
    if int(upper) <= int(lower):
        return (None, None, None, g)
    index = jnp.arange(int(lower), int(upper), dtype=_index_dtype(lower, upper))

    primal = _primal(body)

    def forward(carry: Any, i: Any) -> tuple:
        return primal(i, carry), carry

    _, carries = lax.scan(forward, init, index)

    def backward(acc: tuple, step: tuple) -> tuple:
        carry_bar, body_bar = acc
        i, carry = step
        (_, bar), fn_bar = _vjp(body, (i, carry), carry_bar)
        return (fill(bar, carry), _add(body_bar, fill(fn_bar, body))), None

    (init_bar, body_bar), _ = lax.scan(backward, (fill(g, init), fill(None, body)),
                                       (index, carries), reverse=True)
    return (None, None, body_bar, init_bar)


@read_by(FORWARD, REVERSE, BATCH)
def _scan_args(args: tuple) -> tuple:
    f, init = args[0], args[1]
    xs = args[2] if len(args) > 2 else None
    length = args[3] if len(args) > 3 else None
    reverse = bool(args[4]) if len(args) > 4 else False
    return f, init, xs, length, reverse


@read_by(FORWARD, REVERSE, BATCH)
def scan_vjp(args: tuple, kwargs: dict, g: Any) -> tuple:
    if g is None:
        return (None,) * len(args)
    f, init, xs, length, reverse = _scan_args(args)
    carry_bar, ys_bar = g

    primal = _primal(f)

    def forward(carry: Any, x: Any) -> tuple:
        new, _ = primal(carry, x)  # (a pair: lax.scan checked f)
        return new, carry

    _, carries = lax.scan(forward, init, xs, length=length, reverse=reverse)

    def backward(acc: tuple, step: tuple) -> tuple:
        c_bar, f_bar = acc
        carry, x, y_bar = step
        (bar, x_bar), fn_bar = _vjp(f, (carry, x), (c_bar, y_bar))
        return (fill(bar, carry), _add(f_bar, fill(fn_bar, f))), fill(x_bar, x)

    (init_bar, f_bar), xs_bar = lax.scan(backward, (fill(carry_bar, init), fill(None, f)),
                                         (carries, xs, ys_bar), length=length,
                                         reverse=not reverse)
    return (f_bar, init_bar, xs_bar, *(None,) * (len(args) - 3))


@read_by(FORWARD, REVERSE, BATCH)
def map_vjp(args: tuple, kwargs: dict, g: Any) -> tuple:
    f, xs = args
    if g is None:
        return (None, None)

    def backward(f_bar: Any, step: tuple) -> tuple:
        x, y_bar = step
        (x_bar,), fn_bar = _vjp(f, (x,), y_bar)
        return _add(f_bar, fill(fn_bar, f)), fill(x_bar, x)

    f_bar, xs_bar = lax.scan(backward, fill(None, f), (xs, g))
    return (f_bar, xs_bar)


@read_by(FORWARD, REVERSE, BATCH)
def while_loop_vjp(args: tuple, kwargs: dict, g: Any) -> tuple:
    """Eagerly the trip count is known: the carries go on a Python list. Under jit it is
    not: with ``max_iters`` the loop runs as a `scan` of that many masked steps (a step
    after the condition failed keeps the carry); without it, with checkpoints."""
    cond_fun, body_fun, init = args[:3]
    max_iters = args[3] if len(args) > 3 else kwargs.get("max_iters")
    if g is None:
        return (None,) * len(args)
    traced = _traced(g) or any(_traced(x) for x in tree_util.tree_leaves(init))
    if traced and max_iters is not None:
        return (None, *_bounded_while_vjp(cond_fun, body_fun, init, int(max_iters), g),
                *(None,) * (len(args) - 3))
    if traced:
        return (None, *_checkpointed_while_vjp(cond_fun, body_fun, init, g),
                *(None,) * (len(args) - 3))
    # Each stored step keeps whether it ran: always, for one loop; under vmap the members
    # stop at different trips, and a member's steps after its condition failed keep its
    # carry (the loop runs while any member's condition holds).
    steps: list[Any] = []
    val = init
    running = cond_fun(val)
    while _any(running) and (max_iters is None or len(steps) < max_iters):
        steps.append((val, running))
        val = _where(running, body_fun(val), val)
        running = jnp.logical_and(running, cond_fun(val))
    bar, body_bar = fill(g, init), fill(None, body_fun)
    for i in range(len(steps) - 1, -1, -1):
        carry, ran = steps[i]
        (new_bar,), fn_bar = _vjp(body_fun, (carry,), bar)
        bar = _where(ran, fill(new_bar, carry), bar)
        body_bar = _add(body_bar, _where(ran, fill(fn_bar, body_fun), fill(None, body_fun)))
    return (None, body_bar, bar, *(None,) * (len(args) - 3))


# (Not read by forward mode: jit(hessian) through it compiles, but IREE 3.13 fails to run
# the module -- "ref is null" creating a result buffer view -- unless the loops' results
# kept alive for lax/control.py's workaround are dropped.)
@read_by(REVERSE, BATCH)
def _bounded_while_vjp(cond_fun: Any, body_fun: Any, init: Any, max_iters: int,
                       g: Any) -> tuple:
    test, step = _primal(cond_fun), _primal(body_fun)

    def forward(state: tuple, _: Any) -> tuple:
        carry, running = state
        keep = jnp.logical_and(running, test(carry))
        return (_where(keep, step(carry), carry), keep), (carry, keep)

    _, (carries, kept) = lax.scan(forward, (init, jnp.asarray(True)), None, length=max_iters)

    def backward(acc: tuple, step: tuple) -> tuple:
        bar, body_bar = acc
        carry, keep = step
        (new_bar,), fn_bar = _vjp(body_fun, (carry,), bar)
        return (_where(keep, fill(new_bar, carry), bar),
                _add(body_bar, _where(keep, fill(fn_bar, body_fun),
                                     fill(None, body_fun)))), None

    (bar, body_bar), _ = lax.scan(backward, (fill(g, init), fill(None, body_fun)),
                                  (carries, kept), reverse=True)
    return body_bar, bar


# A while loop's checkpoints under jit (see _checkpointed_while_vjp) fill at most this many
# bytes: 32 x 32 blocks of steps while the carry is up to 64 KiB, fewer past that.
CHECKPOINT_BYTES = 1 << 26


def _checkpoint_layout(carry: Any, body_size: int) -> tuple[int, int, int]:
    """(steps per block, blocks per group, groups) for `_checkpointed_while_vjp`: a small
    body runs 8 steps a block, unrolled (fewer for larger bodies, as lax/loops.py does)."""
    size = sum(leaf.dtype.itemsize * int(np.prod(leaf.shape))
               for leaf in tree_util.tree_leaves(carry))
    steps = 8 if body_size <= 24 else 4 if body_size <= 96 else 2
    blocks, groups = 32, 32
    while groups > 2 and blocks * groups * max(size, 1) > CHECKPOINT_BYTES:
        if groups >= blocks:
            groups //= 2
        else:
            blocks //= 2
    return steps, blocks, groups


def _checkpointed_while_vjp(cond_fun: Any, body_fun: Any, init: Any, g: Any) -> tuple:
    """Reverse mode through a `while_loop` whose trip count only the run knows, with no
    bound given. The forward loop runs in blocks of `steps` steps (unrolled; a step after
    the condition failed keeps the carry) and stores the carry at the start of each block:
    in a buffer of `blocks` checkpoints per group, copied into a buffer of `groups` groups
    when a group is full. (IREE 3.13 copies a loop-carried buffer on every iteration that
    writes it, lax/loops.py: two small buffers, each written once per block or group,
    copy far less than one large one.) The backward loop visits the blocks last first:
    each computes its carries again from its checkpoint and differentiates its steps in
    reverse. In all: two forward passes and one backward one, in buffers of a static size,
    for up to ``steps * blocks * groups`` trips (more stops the run with an error, never
    a wrong derivative)."""
    test, step = _primal(cond_fun), _primal(body_fun)
    carry_avals, body_size = probe_with_size(step, init)
    steps, blocks, groups = _checkpoint_layout(carry_avals, body_size)
    structure = tree_util.tree_structure(carry_avals)

    def buffer(*rows: int) -> list[Any]:
        return [jnp.zeros(rows + tuple(a.shape), a.dtype) for a in tree_util.tree_leaves(
            carry_avals)]

    def at(buffers: list[Any], *index: Any) -> Any:
        leaves = buffers
        for i in index:
            leaves = [lax.dynamic_index_in_dim(b, i, 0, keepdims=False) for b in leaves]
        return tree_util.tree_unflatten(structure, leaves)

    def put(buffers: list[Any], i: Any, leaves: list[Any]) -> list[Any]:
        return [lax.dynamic_update_index_in_dim(b, jnp.astype(v, b.dtype), i, 0)
                for b, v in zip(buffers, leaves)]

    def block(state: tuple) -> tuple:
        k, carry, running, trips, saved = state
        saved = put(saved, k, tree_util.tree_leaves(carry))
        for _ in range(steps):
            running = jnp.logical_and(running, test(carry))
            carry = _where(running, step(carry), carry)
            trips = trips + jnp.astype(running, jnp.int32)
        return k + 1, carry, running, trips, saved

    def group(state: tuple) -> tuple:
        j, carry, running, trips, groups_saved = state
        _, carry, running, trips, saved = lax.while_loop(
            lambda s: jnp.logical_and(s[2], s[0] < blocks), block,
            (jnp.asarray(0, jnp.int32), carry, running, trips, buffer(blocks)))
        return j + 1, carry, running, trips, put(groups_saved, j, saved)

    _, last, running, trips, saved = lax.while_loop(
        lambda s: jnp.logical_and(s[2], s[0] < groups), group,
        (jnp.asarray(0, jnp.int32), init, jnp.asarray(True), jnp.asarray(0, jnp.int32),
         buffer(groups, blocks)))
    _stop_beyond(jnp.logical_and(running, test(last)), steps * blocks * groups)
    used = (trips + (steps - 1)) // steps

    def backward(i: Any, acc: tuple) -> tuple:
        bar, body_bar = acc
        b = used - 1 - i
        carries = [at(saved, b // blocks, b % blocks)]
        for t in range(steps - 1):
            live = b * steps + t < trips
            carries.append(_where(live, step(carries[-1]), carries[-1]))
        for t in range(steps - 1, -1, -1):
            live = b * steps + t < trips
            (new_bar,), fn_bar = _vjp(body_fun, (carries[t],), bar)
            bar = _where(live, fill(new_bar, carries[t]), bar)
            body_bar = _where(live, _add(body_bar, fill(fn_bar, body_fun)), body_bar)
        return bar, body_bar

    bar, body_bar = lax.fori_loop(0, used, backward, (fill(g, init), fill(None, body_fun)))
    return body_bar, bar


def _stop_beyond(unfinished: Any, capacity: int) -> None:
    """Stops the run (an error raised from the host) when the loop still ran after the
    trips its checkpoints hold."""
    where = user_location()

    def fail(_: Any) -> None:
        raise RuntimeError(
            f"reverse-mode differentiation of a while loop under jit: the loop ran more than "
            f"the {capacity} trips its checkpoints hold (at {where}); give it a bound, "
            "lax.while_loop(cond, body, init, max_iters=N), or use lax.scan / lax.fori_loop")

    def report(flag: Any) -> Any:
        debug.callback(fail, flag)
        return flag

    lax.cond(unfinished, report, lambda flag: flag, unfinished)


VJP_RULES: dict[str, Callable[[tuple, dict, Any], tuple]] = {
    "cond": cond_vjp, "switch": switch_vjp, "fori_loop": fori_loop_vjp, "scan": scan_vjp,
    "map": map_vjp, "while_loop": while_loop_vjp}


def reverse_rule(fn: Any) -> Any:
    """The reverse rule of lax control flow `fn`, or None for any other callee. (Static
    to the transforms, which read the run-time dispatch calling it.)"""
    return _rule(VJP_RULES, fn)


def forward_rule(fn: Any) -> Any:
    """The forward rule of lax control flow `fn`, or None for any other callee."""
    return _rule(JVP_RULES, fn)


def _rule(rules: dict, fn: Any) -> Any:
    from transpiler.transforms.common.classify import CONTROL_MODULES  # lazy: classify imports libcst (and this)
    if getattr(fn, "__module__", None) not in CONTROL_MODULES:
        return None
    return rules.get(getattr(fn, "__qualname__", ""))


# --- forward mode --------------------------------------------------------------------------
# (Read by forward and reverse mode as the reverse rules are -- jacfwd(jacfwd(f)),
# jacrev(jacfwd(f)) -- so written the same way: loops, one operand tuple, no star-arguments.)

@read_by(FORWARD, REVERSE, BATCH)
def _branch_jvp(fn: Any, fn_dot: Any, ops_dot: tuple) -> Callable[..., Any]:
    """A branch of the forward `cond`/`switch`: `fn`'s JVP on the operand tuple."""
    def run(operands: tuple) -> tuple:
        return _jvp(fn, operands, ops_dot, fn_dot)
    return run


@read_by(FORWARD, REVERSE, BATCH)
def cond_jvp(primals: tuple, tangents: tuple, kwargs: dict) -> tuple:
    ops, ops_dot = tuple(primals[3:]), tuple(tangents[3:])
    return lax.cond(primals[0], _branch_jvp(primals[1], tangents[1], ops_dot),
                    _branch_jvp(primals[2], tangents[2], ops_dot), ops)


@read_by(FORWARD, REVERSE, BATCH)
def switch_jvp(primals: tuple, tangents: tuple, kwargs: dict) -> tuple:
    index, branches = primals[0], primals[1]
    ops, ops_dot = tuple(primals[2:]), tuple(tangents[2:])
    fns = []
    for k in range(len(branches)):
        fns.append(_branch_jvp(branches[k], None if tangents[1] is None else tangents[1][k],
                               ops_dot))
    return lax.switch(index, fns, ops)


@read_by(FORWARD, REVERSE, BATCH)
def fori_loop_jvp(primals: tuple, tangents: tuple, kwargs: dict) -> tuple:
    lower, upper, body, init = primals
    body_dot, init_dot = tangents[2], tangents[3]

    def step(i: Any, state: tuple) -> tuple:
        carry, carry_dot = state
        return _jvp(body, (i, carry), (None, carry_dot), body_dot)

    return lax.fori_loop(lower, upper, step, (init, _filled(init_dot, init)))


@read_by(FORWARD, REVERSE, BATCH)
def while_loop_jvp(primals: tuple, tangents: tuple, kwargs: dict) -> tuple:
    cond_fun, body, init = primals[0], primals[1], primals[2]
    body_dot, init_dot = tangents[1], tangents[2]
    max_iters = primals[3] if len(primals) > 3 else kwargs.get("max_iters")

    def step(state: tuple) -> tuple:
        carry, carry_dot = state
        return _jvp(body, (carry,), (carry_dot,), body_dot)

    test = _primal(cond_fun)

    def running(state: tuple) -> Any:
        return test(state[0])
    return lax.while_loop(running, step, (init, _filled(init_dot, init)), max_iters=max_iters)


@read_by(FORWARD, REVERSE, BATCH)
def scan_jvp(primals: tuple, tangents: tuple, kwargs: dict) -> tuple:
    f, init, xs, length, reverse = _scan_args(primals)
    f_dot = tangents[0]
    init_dot = tangents[1]
    xs_dot = tangents[2] if len(tangents) > 2 else None

    def step(state: tuple, x_and_dot: tuple) -> tuple:
        carry, carry_dot = state
        x, x_dot = x_and_dot
        (new, y), (new_dot, y_dot) = _jvp(f, (carry, x), (carry_dot, x_dot), f_dot)
        return (new, new_dot), (y, y_dot)

    (carry, carry_dot), (ys, ys_dot) = lax.scan(
        step, (init, _filled(init_dot, init)), (xs, _filled(xs_dot, xs)), length=length,
        reverse=reverse)
    return (carry, ys), (carry_dot, ys_dot)


@read_by(FORWARD, REVERSE, BATCH)
def map_jvp(primals: tuple, tangents: tuple, kwargs: dict) -> tuple:
    f, xs = primals
    f_dot, xs_dot = tangents

    def step(pair: tuple) -> tuple:
        return _jvp(f, (pair[0],), (pair[1],), f_dot)
    return lax.map(step, (xs, _filled(xs_dot, xs)))


JVP_RULES: dict[str, Callable[[tuple, tuple, dict], tuple]] = {
    "cond": cond_jvp, "switch": switch_jvp, "fori_loop": fori_loop_jvp, "scan": scan_jvp,
    "map": map_jvp, "while_loop": while_loop_jvp}
