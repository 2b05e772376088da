"""Batching of the derivative rules of ``lax`` control flow (ad/control.py): what
``vmap(grad(f))`` and ``vmap(jvp(f))`` run for an `f` with `cond`, `switch`, `while_loop`,
`fori_loop`, `scan` or `map`, built from the combinators of bt/control.py (the forward
mode rules are in bt/control_jvp.py)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from transpiler import tree_util
from transpiler.errors import TranspileError, user_location
from transpiler.primitives.core import abstractify
from transpiler.transforms import bt
from transpiler.transforms.bt.control import active, branching, scan
from transpiler.transforms.bt.control_leaves import (Bound, Step, _traced, bind, conformed,
                                                  flatten, part, placed, select, unflatten, user)
from transpiler.tree_util._registry import sequence_like
from transpiler.transforms.common import closures
from transpiler.transforms.reverse.generate import vjp_function
from transpiler.transforms.ad import forward as fh
from transpiler.transforms.forward.api import jvp_function
from transpiler import numpy as jnp
from transpiler.transforms.common.closures import carries_derivative, closure_items, is_closure
from transpiler.transforms.ad import cotangents as rh
from transpiler.lax.control import selecting_in_loops
from transpiler.lax.loops import _index_dtype
from transpiler.lax.loops import _pair
from transpiler.lax import control as lax_control, loops as lax_scan


# --- derivatives (ad/control.py's rules) under vmap ---------------------------------------------
# ``vmap(grad(f))``: the derivative code of `f` calls ``ad.vjp_call(lax.cond, args, kwargs, g)``
# (``ad.jvp_call`` in forward mode), which reaches `vjp` / `jvp` below with batched operands.
# They follow ad/control.py step by step, with the combinators above in place of the lax
# functions and the user's functions differentiated by their generated derivative code run
# batched (``bt.call``), closures converted (common/closures.py).

def vjp_step(fn: Any, fn_dims: Any, args: tuple, arg_dims: tuple, g: Any,
             g_dims: Any) -> tuple:
    """``ad.control._vjp`` batched: ``((bars, fn_bar), (bar_dims, fn_bar_dims))``, one
    cotangent per argument and the dict of `fn`'s closure's."""
    import types

    n = len(args)
    if g is None:
        return ((None,) * n, None), ((None,) * n, None)
    if not isinstance(fn, types.FunctionType):  # a transform object, a primitive ...
        from transpiler.transforms.ad.calls import vjp_call
        out, out_dims = bt.call(vjp_call, (fn, tuple(args), {}, g),
                                (fn_dims, tuple(arg_dims), None, g_dims))
        return (tuple(out), None), (tuple(part(out_dims, i) for i in range(n)), None)
    free = closures.closure_params(fn) if closures.is_closure(fn) else []
    names = [name for name, _ in free] + closures.arg_names(fn, n)
    values = [v for _, v in free] + list(args)
    dims = [part(fn_dims, name) for name, _ in free] + list(arg_dims)
    active = frozenset(m for m, v in zip(names, values) if closures.carries_derivative(v))
    if not active:
        return ((None,) * n, None), ((None,) * n, None)
    generated = closures.closure_vjp_function(fn, active) if closures.is_closure(fn) \
        else vjp_function(fn, active)[1]
    keyword = getattr(generated, "cotangent_param", "_out_bar")
    out, out_dims = bt.call(generated, tuple(values), tuple(dims), {keyword: g},
                            {keyword: g_dims})
    bars, bar_dims, k = out[1], part(out_dims, 1), len(free)
    fn_bar = {m: bars[i] for i, (m, _) in enumerate(free) if m in active and bars[i] is not None}
    return (tuple(bars[k:k + n]), fn_bar or None), (
        tuple(part(bar_dims, i) for i in range(k, k + n)),
        {m: part(bar_dims, i) for i, (m, _) in enumerate(free) if m in fn_bar} or None)


def jvp_step(fn: Any, fn_dims: Any, primals: tuple, primal_dims: tuple, tangents: tuple,
             tangent_dims: tuple, fn_dot: Any, fn_dot_dims: Any) -> tuple:
    """``ad.control._jvp`` batched: ``((out, out_dot), (out_dims, out_dot_dims))`` with
    the output tangent filled (zeros where nothing flowed)."""
    import types

    if not isinstance(fn, types.FunctionType):
        (out, dot), (out_dims, dot_dims) = bt.call(
            fh.jvp_call, (fn, tuple(primals), tuple(tangents), {}, fn_dot),
            (fn_dims, tuple(primal_dims), tuple(tangent_dims), None, fn_dot_dims))
        return (out, dot), (out_dims, dot_dims)
    free = closures.closure_params(fn) if closures.is_closure(fn) else []
    names = [name for name, _ in free] + closures.arg_names(fn, len(primals))
    values = [v for _, v in free] + list(primals)
    dims = [part(fn_dims, name) for name, _ in free] + list(primal_dims)
    dots = [(fn_dot or {}).get(name) for name, _ in free] + list(tangents)
    dot_dims = [part(fn_dot_dims, name) for name, _ in free] + list(tangent_dims)
    active = [i for i, t in enumerate(dots) if t is not None]
    if not active:
        out, out_dims = bt.call(fn, tuple(primals), tuple(primal_dims), {}, {}, fn_dims)
        dot, dot_dims_out = None, None
    else:
        chosen = frozenset(names[i] for i in active)
        generated = closures.closure_jvp_function(fn, chosen) if closures.is_closure(fn) \
            else jvp_function(fn, chosen)[1]
        suffix = getattr(generated, "tangent_suffix", "_dot")
        (out, dot), both = bt.call(generated, tuple(values), tuple(dims),
                                   {f"{names[i]}{suffix}": dots[i] for i in active},
                                   {f"{names[i]}{suffix}": dot_dims[i] for i in active})
        out_dims, dot_dims_out = part(both, 0), part(both, 1)
    dot, dot_dims_out = fill(dot, dot_dims_out, out, out_dims, forward=True)
    return (out, dot), (out_dims, dot_dims_out)


def fill(bar: Any, bar_dims: Any, primal: Any, primal_dims: Any,
         forward: bool = False) -> tuple[Any, Any]:
    """``ad.control.fill`` (``ad.forward._filled`` when `forward`) batched: `bar` with
    `primal`'s full structure, zeros (one member's shape, unbatched) where nothing flowed."""

    def sub(key: Any, value: Any) -> tuple[Any, Any]:
        inner = None if bar is None else (bar.get(key) if isinstance(bar, dict) else bar[key])
        return fill(inner, part(bar_dims, key), value, part(primal_dims, key), forward)

    if is_closure(primal) and not forward:
        pairs = {m: sub(m, v) for m, v in closure_items(primal) if carries_derivative(v)}
        return {m: p[0] for m, p in pairs.items()}, {m: p[1] for m, p in pairs.items()}
    if isinstance(primal, dict):
        pairs = {k: sub(k, v) for k, v in primal.items()}
        return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
    if isinstance(primal, (tuple, list)):
        parts = [sub(i, v) for i, v in enumerate(primal)]
        items = [p[0] for p in parts]
        value = sequence_like(primal, items)
        return value, tuple(p[1] for p in parts)
    if bar is not None:
        return bar, bar_dims
    if primal is None or (forward and (isinstance(primal, (str, bytes, type)) or callable(
            primal))) or (not forward and not carries_derivative(primal)):
        return None, None
    member = bt.view(primal, primal_dims) if primal_dims is not None else abstractify(primal)
    return jnp.zeros(member.shape, member.dtype), None


def add(a: Any, a_dims: Any, b: Any, b_dims: Any) -> tuple[Any, Any]:
    return bt.call(rh.add, (a, b), (a_dims, b_dims))


def _reverse_error(what: str) -> TranspileError:
    return TranspileError(
        f"reverse-mode differentiation of {what}", user_location(),
        "give the loop static bounds (lax.fori_loop with Python ints, lax.scan) or a bound "
        "(lax.while_loop(cond, body, init, max_iters=N)), or differentiate in forward mode")


def _branches_vjp(op: str, b: Bound, fns: list[tuple[Any, Any]],
                  names: tuple, g: Any, g_dims: Any) -> tuple:
    """Each branch returns every branch function's cotangent (zeros for the others') and
    the operands': `branching` of these (a batched selector selects per member)."""

    def branch(k: int) -> Step:
        def run(operands: tuple, operand_dims: tuple) -> tuple:
            (bars, fn_bar), (bar_dims, fn_bar_dims) = vjp_step(
                *fns[k], operands, operand_dims, g, g_dims)
            fn_parts = [fill(fn_bar if j == k else None, fn_bar_dims if j == k else None, *f)
                        for j, f in enumerate(fns)]
            op_parts = [fill(bars[i], part(bar_dims, i), o, part(operand_dims, i))
                        for i, o in enumerate(operands)]
            return ((tuple(p[0] for p in fn_parts), tuple(p[0] for p in op_parts)),
                    (tuple(p[1] for p in fn_parts), tuple(p[1] for p in op_parts)))
        return run

    selector = b["pred"] if op == "cond" else b["index"]
    with selecting_in_loops():  # an IREE 3.13 bug (see there)
        (fn_bars, op_bars), (fn_dims, op_dims) = branching(
            op, *selector, [branch(k) for k in range(len(fns))], *b["operands"], names)
    ops = [(bar, part(op_dims, i)) for i, bar in enumerate(op_bars)]
    return [(bar, part(fn_dims, i)) for i, bar in enumerate(fn_bars)], ops


def cond_vjp(b: Bound, g: Any, g_dims: Any) -> dict:
    fns, ops = _branches_vjp("cond", b, [b["true_fun"], b["false_fun"]],
                             ("true_fun", "false_fun"), g, g_dims)
    return {"true_fun": fns[0], "false_fun": fns[1], "operands": ops}


def switch_vjp(b: Bound, g: Any, g_dims: Any) -> dict:
    branches, dims = b["branches"]
    fns, ops = _branches_vjp("switch", b, [(f, part(dims, i)) for i, f in enumerate(branches)],
                             tuple(f"branches[{i}]" for i in range(len(branches))), g, g_dims)
    return {"branches": (type(branches)(f for f, _ in fns) if isinstance(branches, list)
                         else tuple(f for f, _ in fns), tuple(d for _, d in fns)),
            "operands": ops}


def _loop_backward(fn: Any, fn_dims: Any, args_of: Callable, carry_index: int) -> Callable:
    """The backward step of a loop's VJP (ad/control.py's `backward`): ``((carry_bar,
    fn_bar), step) -> ((carry_bar', fn_bar'), x_bar)``, `args_of(step)` giving the body's
    arguments, their companions and the output cotangent's position."""
    def backward(acc: Any, acc_dims: Any, step: Any, step_dims: Any) -> tuple:
        args, arg_dims, g, g_dims = args_of(acc[0], part(acc_dims, 0), step, step_dims)
        (bars, fn_bar), (bar_dims, fn_bar_dims) = vjp_step(fn, fn_dims, args, arg_dims, g,
                                                           g_dims)
        new = fill(bars[carry_index], part(bar_dims, carry_index), args[carry_index],
                   arg_dims[carry_index])
        total = add(acc[1], part(acc_dims, 1), *fill(fn_bar, fn_bar_dims, fn, fn_dims))
        others = [fill(bars[i], part(bar_dims, i), a, d)
                  for i, (a, d) in enumerate(zip(args, arg_dims)) if i != carry_index]
        x_bar = others[0] if others else (None, None)
        return ((new[0], total[0]), x_bar[0]), ((new[1], total[1]), x_bar[1])
    return backward


def fori_loop_vjp(b: Bound, g: Any, g_dims: Any) -> dict:
    (lower, lower_dims), (upper, upper_dims) = b["lower"], b["upper"]
    body, body_dims = b["body_fun"]
    init, init_dims = b["init_val"]
    if bt.batched((lower_dims, upper_dims)) or _traced(lower) or _traced(upper):
        raise _reverse_error("lax.fori_loop needs a static trip count, but its bounds are "
                             "traced or differ across the vmapped batch")
    if int(upper) <= int(lower):
        return {"init_val": (g, g_dims)}
    index = jnp.arange(int(lower), int(upper), dtype=_index_dtype(lower, upper))
    step = user(body, body_dims)

    def forward(c: Any, cd: Any, i: Any, i_dims: Any) -> tuple:
        new, new_dims = step((i, c), (i_dims, cd))
        return (new, c), (new_dims, cd)

    (_, carries), (_, carry_dims) = scan(forward, init, init_dims, index, None)
    backward = _loop_backward(body, body_dims, lambda bar, bar_dims, s, sd: (
        (s[0], s[1]), (part(sd, 0), part(sd, 1)), bar, bar_dims), 1)
    start, zero = fill(g, g_dims, init, init_dims), fill(None, None, body, body_dims)
    ((init_bar, body_bar), _), ((init_bar_dims, body_bar_dims), _) = scan(
        backward, (start[0], zero[0]), (start[1], zero[1]), (index, carries),
        (None, carry_dims), reverse=True)
    return {"body_fun": (body_bar, body_bar_dims), "init_val": (init_bar, init_bar_dims)}


def scan_vjp(b: Bound, g: Any, g_dims: Any) -> dict:
    f, f_dims = b["f"]
    init, init_dims = b["init"]
    xs, xs_dims = b["xs"]
    length, reverse = b["length"][0], bool(b["reverse"][0])
    carry_bar, ys_bar = (None, None) if g is None else g
    step = user(f, f_dims)

    def forward(c: Any, cd: Any, x: Any, xd: Any) -> tuple:
        out, out_dims = step((c, x), (cd, xd))
        return (_pair(out)[0], c), (part(out_dims, 0), cd)

    (_, carries), (_, carry_dims) = scan(forward, init, init_dims, xs, xs_dims, length, reverse)
    backward = _loop_backward(f, f_dims, lambda bar, bar_dims, s, sd: (
        (s[0], s[1]), (part(sd, 0), part(sd, 1)), (bar, s[2]), (bar_dims, part(sd, 2))), 0)
    start, zero = fill(carry_bar, part(g_dims, 0), init, init_dims), fill(None, None, f, f_dims)
    ((init_bar, f_bar), xs_bar), ((init_bar_dims, f_bar_dims), xs_bar_dims) = scan(
        backward, (start[0], zero[0]), (start[1], zero[1]), (carries, xs, ys_bar),
        (carry_dims, xs_dims, part(g_dims, 1)), length, not reverse)
    return {"f": (f_bar, f_bar_dims), "init": (init_bar, init_bar_dims),
            "xs": (xs_bar, xs_bar_dims)}


def map_vjp(b: Bound, g: Any, g_dims: Any) -> dict:
    f, f_dims = b["f"]
    xs, xs_dims = b["xs"]

    def backward(acc: Any, acc_dims: Any, s: Any, sd: Any) -> tuple:
        (bars, fn_bar), (bar_dims, fn_bar_dims) = vjp_step(f, f_dims, (s[0],), (part(sd, 0),),
                                                           s[1], part(sd, 1))
        total = add(acc, acc_dims, *fill(fn_bar, fn_bar_dims, f, f_dims))
        x_bar = fill(bars[0], part(bar_dims, 0), s[0], part(sd, 0))
        return (total[0], x_bar[0]), (total[1], x_bar[1])

    zero = fill(None, None, f, f_dims)
    (f_bar, xs_bar), (f_bar_dims, xs_bar_dims) = scan(backward, *zero, (xs, g), (xs_dims, g_dims))
    return {"f": (f_bar, f_bar_dims), "xs": (xs_bar, xs_bar_dims)}


def while_loop_vjp(b: Bound, g: Any, g_dims: Any) -> dict:
    """Every carry leaf batched; each member runs while its condition holds (a step after
    that keeps its carry). The trip count is the batch's longest: counted eagerly, or
    ``max_iters`` under jit; then ad/control.py's bounded algorithm, masked per member."""
    body, body_dims = b["body_fun"]
    init, init_dims = b["init_val"]
    max_iters = b["max_iters"][0]
    test, step = user(*b["cond_fun"]), user(body, body_dims)
    traced = any(_traced(x) for x in tree_util.tree_leaves((init, g)))
    if traced and max_iters is None:
        raise _reverse_error("a batched while loop under jit (vmap of its gradient): its "
                             "trip count depends on traced values")
    leaves, leaf_dims, spec = flatten(init, init_dims)
    start, dims = unflatten(spec, placed(leaves, leaf_dims, [0] * len(leaves)),
                            [0] * len(leaves))
    tree = tree_util.tree_structure(init)
    size = bt.batch_size()

    def advance(c: Any, running: Any) -> tuple:
        keep = jnp.logical_and(running, active(lambda v, d: test((v,), (d,)), c, dims))
        new = conformed(*step((c,), (dims,)), [0] * len(leaves), tree, "lax.while_loop")
        return select(keep, new, dims, c, dims)[0], keep

    n = max_iters
    if not traced:  # eagerly: the batch's trip count
        c, running, count = start, jnp.ones((size,), jnp.bool_), 0
        while (max_iters is None or count < max_iters) and bool(jnp.any(running)):
            c, running = advance(c, running)
            count += 1
        n = count - 1 if count and not bool(jnp.any(running)) else count

    def forward(state: Any, sd: Any, _: Any, __: Any) -> tuple:
        c, keep = advance(*state)
        return ((c, keep), (state[0], keep)), ((dims, 0), (dims, 0))

    (_, (carries, kept)), (_, (carry_dims, _)) = scan(
        forward, (start, jnp.ones((size,), jnp.bool_)), (dims, 0), None, None, n)

    def backward(acc: Any, acc_dims: Any, s: Any, sd: Any) -> tuple:
        c, keep = s
        (bars, fn_bar), (bar_dims, fn_bar_dims) = vjp_step(
            body, body_dims, (c,), (part(sd, 0),), acc[0], part(acc_dims, 0))
        bar = select(keep, *fill(bars[0], part(bar_dims, 0), c, part(sd, 0)), acc[0],
                     part(acc_dims, 0))
        zero = fill(None, None, body, body_dims)
        flowed = select(keep, *fill(fn_bar, fn_bar_dims, body, body_dims), *zero)
        total = add(acc[1], part(acc_dims, 1), *flowed)
        return ((bar[0], total[0]), None), ((bar[1], total[1]), None)

    start_bar, zero = fill(g, g_dims, init, init_dims), fill(None, None, body, body_dims)
    ((bar, body_bar), _), ((bar_dims, body_bar_dims), _) = scan(
        backward, (start_bar[0], zero[0]), (start_bar[1], zero[1]), (carries, kept),
        (carry_dims, 1), n, True)
    return {"body_fun": (body_bar, body_bar_dims), "init_val": (bar, bar_dims)}


_VJPS = {"cond": cond_vjp, "switch": switch_vjp, "fori_loop": fori_loop_vjp, "scan": scan_vjp,
         "map": map_vjp, "while_loop": while_loop_vjp}


def handles(fn: Any) -> bool:
    """Whether `fn` is lax control flow whose derivative rules `vjp` / `jvp` batch."""
    return getattr(fn, "__module__", None) in ("transpiler.lax.control", "transpiler.lax.loops") \
        and getattr(fn, "__name__", None) in _VJPS


def vjp(fn: Any, args: tuple, dims: Any, kwargs: dict, kwdims: Any, g: Any,
        g_dims: Any) -> tuple[tuple, tuple]:
    """``ad.vjp_call(fn, args, kwargs, g)`` batched, for lax control flow `fn`: one
    cotangent per positional argument, and their companions."""
    if g is None:
        return (None,) * len(args), (None,) * len(args)
    by_name = _VJPS[fn.__name__](bind(fn, args, dims, kwargs, kwdims), g, g_dims)
    out: list = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            out.extend(by_name.get(p.name, ()))
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            out.append(by_name.get(p.name, (None, None)))
    out = (out + [(None, None)] * len(args))[:len(args)]
    return tuple(v for v, _ in out), tuple(d for _, d in out)


def _lax(rule: Any) -> Any:
    name = rule.__name__.rsplit("_", 1)[0]
    return getattr(lax_control, name, None) or getattr(lax_scan, name)


def _vjp_rule(rule: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """A call of ad/control.py's ``<name>_vjp(args, kwargs, g)`` (from ``ad.vjp_call``)."""
    (call_args, call_kwargs, g), d = args, tuple(dims) + (None,) * 3
    return vjp(_lax(rule), tuple(call_args), d[0], call_kwargs, d[1], g, d[2])


def _jvp_rule(rule: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """A call of ad/control.py's ``<name>_jvp(primals, tangents, kwargs)``."""
    from transpiler.transforms.bt.control_jvp import jvp
    (primals, tangents, call_kwargs), d = args, tuple(dims) + (None,) * 3
    return jvp(_lax(rule), tuple(primals), d[0], tuple(tangents), d[1], call_kwargs, d[2])


RULES: dict[str, Any] = {**{f"{name}_vjp": _vjp_rule for name in _VJPS},
                         **{f"{name}_jvp": _jvp_rule for name in _VJPS}}  # the same names
