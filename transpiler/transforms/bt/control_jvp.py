"""Forward mode of ``lax`` control flow under vmap: what ``vmap(jvp(f))`` runs for an `f`
with `cond`, `switch`, `while_loop`, `fori_loop`, `scan` or `map` (the reverse mode and
the shared steps are in bt/control_ad.py)."""

from __future__ import annotations

from typing import Any

from transpiler.transforms.bt.control import branching, fori, scan, while_
from transpiler.transforms.bt.control_ad import fill, jvp_step
from transpiler.transforms.bt.control_leaves import Bound, Step, bind, part, user
from transpiler.lax.loops import _pair


def _tangents(fn: Any, tangents: tuple, tangent_dims: Any, kwargs: dict) -> dict:
    return bind(fn, tangents, tangent_dims, dict.fromkeys(kwargs), {})


def cond_jvp(b: Bound, t: Bound) -> tuple:
    fns, dots = [b["true_fun"], b["false_fun"]], [t["true_fun"], t["false_fun"]]
    return _branches_jvp("cond", b["pred"], fns, dots, b, t, ("true_fun", "false_fun"))


def switch_jvp(b: Bound, t: Bound) -> tuple:
    (branches, dims), (dots, dot_dims) = b["branches"], t["branches"]
    fns = [(f, part(dims, i)) for i, f in enumerate(branches)]
    fn_dots = [(None if dots is None else dots[i], part(dot_dims, i))
               for i in range(len(branches))]
    return _branches_jvp("switch", b["index"], fns, fn_dots, b, t,
                         tuple(f"branches[{i}]" for i in range(len(branches))))


def _branches_jvp(op: str, selector: tuple[Any, Any], fns: list[tuple[Any, Any]],
                  fn_dots: list[tuple[Any, Any]], b: Bound, t: Bound, names: tuple) -> tuple:
    ops_dot, ops_dot_dims = t["operands"]
    ops_dot = tuple(ops_dot) if ops_dot is not None else (None,) * len(b["operands"][0])
    dot_dims = tuple(part(ops_dot_dims, i) for i in range(len(ops_dot)))

    def branch(k: int) -> Step:
        return lambda operands, operand_dims: jvp_step(*fns[k], operands, operand_dims, ops_dot,
                                                       dot_dims, *fn_dots[k])
    return branching(op, *selector, [branch(k) for k in range(len(fns))], *b["operands"], names)


def fori_loop_jvp(b: Bound, t: Bound) -> tuple:
    body, body_dims = b["body_fun"]
    init, init_dims = b["init_val"]
    start = fill(*t["init_val"], init, init_dims, forward=True)

    def step(i: Any, i_dims: Any, s: Any, sd: Any) -> tuple:
        return jvp_step(body, body_dims, (i, s[0]), (i_dims, part(sd, 0)), (None, s[1]),
                        (None, part(sd, 1)), *t["body_fun"])
    return fori(*b["lower"], *b["upper"], step, (init, start[0]), (init_dims, start[1]),
                "lax.fori_loop: body_fun")


def while_loop_jvp(b: Bound, t: Bound) -> tuple:
    body, body_dims = b["body_fun"]
    init, init_dims = b["init_val"]
    start = fill(*t["init_val"], init, init_dims, forward=True)
    test = user(*b["cond_fun"])

    def step(s: Any, sd: Any) -> tuple:
        return jvp_step(body, body_dims, (s[0],), (part(sd, 0),), (s[1],), (part(sd, 1),),
                        *t["body_fun"])
    return while_(lambda s, sd: test((s[0],), (part(sd, 0),)), step, (init, start[0]),
                  (init_dims, start[1]), b["max_iters"][0], "lax.while_loop: body_fun")


def scan_jvp(b: Bound, t: Bound) -> tuple:
    f, f_dims = b["f"]
    (init, init_dims), (xs, xs_dims) = b["init"], b["xs"]
    start = fill(*t["init"], init, init_dims, forward=True)
    xs_dot = fill(*t["xs"], xs, xs_dims, forward=True)

    def step(c: Any, cd: Any, x: Any, xd: Any) -> tuple:
        (out, dot), (out_dims, dot_dims) = jvp_step(
            f, f_dims, (c[0], x[0]), (part(cd, 0), part(xd, 0)), (c[1], x[1]),
            (part(cd, 1), part(xd, 1)), *t["f"])
        (new, y), (new_dot, y_dot) = _pair(out), _pair(dot)
        return ((new, new_dot), (y, y_dot)), ((part(out_dims, 0), part(dot_dims, 0)),
                                              (part(out_dims, 1), part(dot_dims, 1)))

    ((c, c_dot), (ys, ys_dot)), ((cd, c_dot_dims), (ys_dims, ys_dot_dims)) = scan(
        step, (init, start[0]), (init_dims, start[1]), (xs, xs_dot[0]), (xs_dims, xs_dot[1]),
        b["length"][0], bool(b["reverse"][0]), b["unroll"][0])
    return ((c, ys), (c_dot, ys_dot)), ((cd, ys_dims), (c_dot_dims, ys_dot_dims))


def map_jvp(b: Bound, t: Bound) -> tuple:
    f, f_dims = b["f"]
    xs, xs_dims = b["xs"]
    xs_dot = fill(*t["xs"], xs, xs_dims, forward=True)

    def step(c: Any, cd: Any, x: Any, xd: Any) -> tuple:
        out, dims = jvp_step(f, f_dims, (x[0],), (part(xd, 0),), (x[1],), (part(xd, 1),),
                             *t["f"])
        return (None, out), (None, dims)

    (_, (ys, ys_dot)), (_, dims) = scan(step, None, None, (xs, xs_dot[0]), (xs_dims, xs_dot[1]))
    return (ys, ys_dot), (part(dims, 0), part(dims, 1))


JVPS = {"cond": cond_jvp, "switch": switch_jvp, "fori_loop": fori_loop_jvp, "scan": scan_jvp,
        "map": map_jvp, "while_loop": while_loop_jvp}


def jvp(fn: Any, primals: tuple, primal_dims: Any, tangents: tuple, tangent_dims: Any,
        kwargs: dict, kwdims: Any) -> tuple:
    """``ad.jvp_call(fn, primals, tangents, kwargs)`` batched, for lax control flow `fn`:
    ``((out, out_dot), (out_dims, out_dot_dims))``."""
    return JVPS[fn.__name__](bind(fn, primals, primal_dims, kwargs, kwdims),
                             _tangents(fn, tuple(tangents), tangent_dims, kwargs))
