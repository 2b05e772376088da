"""Batching rules of structural code: pytree utilities and the run-time helpers of
generated derivative code (``ad.add`` ...), which rearrange containers whose leaves carry
batch axes. A structural function moves leaves without computing on them, so the
companions follow the same rearrangement: the function runs once on the values and once on
the companions (each companion a leaf)."""

from __future__ import annotations

import builtins
import inspect
import types
from typing import Any

from transpiler import tree_util
from transpiler.transforms import bt
from transpiler.tree_util._registry import sequence_like
from transpiler.rewritten import with_item
from transpiler.transforms.ad import forward as fh
from transpiler.transforms.ad import calls, cotangents as rh
from transpiler.transforms.ad import remat, vmapped
from transpiler import rewritten
from transpiler import numpy as jnp
from transpiler.transforms.common.arguments import leaves_like
from transpiler.primitives.batching import move_to_front
from transpiler.errors import TranspileError, user_location
from transpiler.primitives.core import Primitive
from transpiler.transforms.common import closures
from transpiler.transforms.common import traced
from transpiler.transforms.common.generated import TransformedFunction, closed_over, target
from transpiler.transforms.forward.custom_jvp import CustomJVP
from transpiler.transforms.reverse.custom_vjp import CustomVJP
from transpiler.transforms.reverse.generate import vjp_function
from transpiler.transforms.ad import control
from transpiler.transforms.bt import control_helpers
from transpiler.transforms.common import partials
from transpiler.transforms.batch.api import Vmapped


class _Dim:
    """A companion as a pytree leaf (None and ints are not leaves of every pytree API)."""

    __slots__ = ("dim",)

    def __init__(self, dim: Any) -> None:
        self.dim = dim


def full_dims(x: Any, dims: Any) -> Any:
    """`x`'s structure with a `_Dim` at every leaf (expanding None and int prefixes)."""
    if isinstance(dims, (dict, tuple, list)):
        if isinstance(x, dict):
            return {k: full_dims(v, dims.get(k) if isinstance(dims, dict) else None)
                    for k, v in x.items()}
        if isinstance(x, (tuple, list)):
            parts = [full_dims(v, d) for v, d in zip(x, dims)]
            return sequence_like(x, parts)
        return _Dim(None)
    return tree_util.tree_map(lambda _: _Dim(dims), x)


def plain(tree: Any) -> Any:
    """`_Dim` leaves back to companions (ints and None)."""
    if isinstance(tree, _Dim):
        return tree.dim
    if isinstance(tree, dict):
        return {k: plain(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(plain(v) for v in tree) if not hasattr(tree, "_fields") else \
            tuple(plain(v) for v in tree)
    return None  # anything else a structural function returns (a treedef): unbatched


def structural(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    out = fn(*args, **kwargs)
    shadow = fn(*(_shadow(a, d) for a, d in zip(args, dims)),
                **{k: _shadow(v, kwdims.get(k)) for k, v in kwargs.items()})
    return out, plain(shadow)


def _shadow(x: Any, dims: Any) -> Any:
    """An argument of a structural function as its companions: values (and containers of
    values) become `_Dim` leaves; other objects (a treedef, a key, an int) stay."""
    if dims is None and not isinstance(x, (dict, tuple, list)) and not hasattr(x, "shape"):
        return x
    return full_dims(x, dims)


def _treedef_rule(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``treedef.unflatten(leaves)`` (a bound method)."""
    out = fn(*args, **kwargs)
    leaves, leaf_dims = args[0], dims[0]
    shadow = fn([_Dim(d) for d in _per_leaf(leaves, leaf_dims)])
    return out, plain(shadow)


def _per_leaf(leaves: Any, dims: Any) -> list:
    if isinstance(dims, (list, tuple)):
        return list(dims)
    return [dims] * len(leaves)


def tree_map(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``tree_map(f, tree, *rest)``: f batched at each leaf."""
    f, tree, *rest = args
    f_dims = dims[0]
    leaves, treedef = tree_util.tree_flatten(tree, kwargs.get("is_leaf"))
    dim_leaves = treedef.flatten_up_to(full_dims(tree, dims[1]))
    others = [treedef.flatten_up_to(r) for r in rest]
    other_dims = [treedef.flatten_up_to(full_dims(r, d)) for r, d in zip(rest, dims[2:])]
    outs, out_dims = [], []
    for i, leaf in enumerate(leaves):
        values = (leaf, *(o[i] for o in others))
        ds = tuple(plain(x) for x in (dim_leaves[i], *(o[i] for o in other_dims)))
        out, d = bt.call(f, values, ds, {}, {}, f_dims)
        outs.append(out)
        out_dims.append(_Dim(d))
    return treedef.unflatten(outs), plain(treedef.unflatten(out_dims))


def rules() -> dict[int, Any]:
    """id(function) -> rule, for the functions above."""
    table: dict[int, Any] = {id(tree_util.tree_map): tree_map}
    for fn in (tree_util.tree_flatten, tree_util.tree_unflatten, tree_util.tree_leaves,
               rh.spread, fh.tangents_of, rh.attribute_bar, rh.attribute_tangent,
               with_item, remat.recompute, remat.checkpoint_name):
        table[id(fn)] = structural
    table[id(rh.index_bar)] = _index_bar
    table[id(rh.item)] = _item
    table[id(calls.with_element)] = _with_element
    table[id(calls.unstaged)] = _unstaged
    table.update({id(builtins.zip): _zip, id(builtins.enumerate): _enumerate,
                  id(builtins.reversed): _reversed, id(builtins.dict): _dict,
                  id(builtins.iter): _iter, id(rewritten.zip_list): _zip,
                  id(rewritten.enumerate_list): _enumerate,
                  id(rewritten.reversed_list): _reversed,
                  id(rewritten.sequence): _sequence})
    table[id(calls.vjp_call)] = _vjp_call
    table[id(calls.vjp_call_closure)] = _vjp_call_closure
    table[id(calls.custom_vjp_bwd)] = _custom_vjp_bwd
    table[id(rh.add)] = _add
    table[id(rh.finalize)] = _finalize
    table.update({id(fn): rule for fn, rule in control_helpers.RULES.items()})
    return table


def _index_bar(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``ad.index_bar(container, index, g)``: structural for containers, else
    ``zeros_like(container).at[index].add(g)`` batched."""
    container, index, g = args
    if g is None or container is None or isinstance(container, (dict, tuple, list)):
        return structural(fn, args, dims, kwargs, kwdims)
    return bt.call(_index_bar_array, args, dims)


def _item(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``ad.item(g, key)``: structural for a container cotangent, an index of an array
    one (the cotangent of an array's element, batched)."""
    g = args[0]
    if g is None or isinstance(g, (dict, tuple, list)) or not hasattr(g, "shape"):
        return structural(fn, args, dims, kwargs, kwdims)
    return bt.call(_getitem, args, dims)


def _getitem(g: Any, key: Any) -> Any:
    return g[key]


def _index_bar_array(container: Any, index: Any, g: Any) -> Any:
    return jnp.zeros_like(container, dtype=jnp.result_type(g)).at[index].add(g)



def _add(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``ad.add(a, b)``: cotangents summed leaf by leaf (None is zero)."""
    (a, b), (da, db) = args, dims
    if a is None:
        return b, db
    if b is None:
        return a, da
    if isinstance(a, dict):
        keys = list(a) + [k for k in b if k not in a]
        parts = {k: _add(fn, (a.get(k), b.get(k)), (_sub(da, k), _sub(db, k)), {}, {})
                 for k in keys}
        return {k: p[0] for k, p in parts.items()}, {k: p[1] for k, p in parts.items()}
    if isinstance(a, (tuple, list)):
        pairs = [_add(fn, (x, y), (_sub(da, i), _sub(db, i)), {}, {})
                 for i, (x, y) in enumerate(zip(a, b))]
        return (sequence_like(a, [p[0] for p in pairs]),
                sequence_like(a, [p[1] for p in pairs]))
    return bt.call(jnp.add, (a, b), (da, db))


def _sub(dims: Any, k: Any) -> Any:
    if isinstance(dims, dict):
        return dims.get(k)
    if isinstance(dims, (tuple, list)):
        return dims[k]
    return dims


def _finalize(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``ad.finalize(bar, primal)``: the gradient with the primal's structure and dtypes."""
    (bar, primal), (dbar, dprimal) = args, dims
    leaves, tree = tree_util.tree_flatten(primal)
    primal_dims = tree.flatten_up_to(full_dims(primal, dprimal))
    bars = leaves_like(bar, primal, len(leaves))
    bar_dims = leaves_like(full_dims(bar, dbar) if bar is not None else None, primal,
                            len(leaves))
    out, out_dims = [], []
    for b, db, p, dp in zip(bars, bar_dims, leaves, primal_dims):
        member = bt.view(p, plain(dp))
        if not hasattr(member, "shape"):  # a Python scalar primal: an array like JAX's
            member = jnp.asarray(member)
        if b is None:
            out.append(jnp.zeros(member.shape, member.dtype))
            out_dims.append(_Dim(None))
            continue
        db = plain(db)
        b, db = bt.call(jnp.broadcast_to, (b, member.shape), (db, None))
        b, db = bt.call(jnp.astype, (b, member.dtype), (db, None))
        out.append(b)
        out_dims.append(_Dim(db))
    return tree.unflatten(out), plain(tree.unflatten(out_dims))


def einsum(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``jnp.einsum(spec, *operands)``: the batch axis becomes one more index (a letter the
    spec does not use), leading in each batched operand and in the output."""
    spec, operands, operand_dims = args[0], args[1:], dims[1:]
    if not isinstance(spec, str) or bt.batched(dims[0]) or bt.batched(kwdims):
        raise TypeError("vmap of einsum needs the subscripts string form")
    inputs, arrow, output = spec.replace(" ", "").partition("->")
    terms = inputs.split(",")
    if not arrow:  # the implicit output: the letters used once, in order
        letters = [c for c in inputs if c.isalpha()]
        output = ("..." if "..." in inputs else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    free = next(c for c in "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA"
                if c not in spec)
    moved = []
    for i, (x, d) in enumerate(zip(operands, operand_dims)):
        if d is not None:
            terms[i] = free + terms[i]
            x = move_to_front(x, d)
        moved.append(x)
    return fn(f"{','.join(terms)}->{free}{output}", *moved, **kwargs), 0


def _unstaged(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``ad.unstaged(f)``: jit's function, with the jitted value's companions (a closure's)."""
    return fn(args[0]), dims[0]


def _with_element(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``ad.with_element(args, x)``: x's companion goes where x goes."""
    (call_args, x), (args_dims, x_dims) = args, dims
    listed = list(args_dims) if isinstance(args_dims, (tuple, list)) else \
        [None] * len(call_args)
    return fn(call_args, x), tuple(x_dims if a is calls.ELEMENT else d
                                   for a, d in zip(call_args, listed))


def _vjp_call(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``ad.vjp_call(f, args, kwargs, g)`` (a callee of derivative code known at run time)
    with batched operands: the VJP f would get, batched."""
    f, call_args, call_kwargs, g = args[:4]
    activity = args[4] if len(args) > 4 else None  # (the caller's static activity)
    f_dims, a_dims, k_dims, g_dims = dims[:4]
    a_dims = tuple(a_dims) if isinstance(a_dims, (tuple, list)) else (a_dims,) * len(call_args)
    k_dims = k_dims if isinstance(k_dims, dict) else {k: k_dims for k in call_kwargs}
    if partials.is_partial(f):  # its function, on the bound arguments first
        k = len(f.args)
        bound_dims, keyword_dims, func_dims = partials.pair(
            f, f_dims if isinstance(f_dims, tuple) else None)
        full_args, full_kwargs = partials.bound(f, call_args, call_kwargs)
        bars, bars_dims = _vjp_call(fn, (f.func, full_args, full_kwargs, g),
                                    (func_dims, (*bound_dims, *a_dims),
                                     {**keyword_dims, **k_dims}, g_dims), {}, {})
        return tuple(bars)[k:], (None if bars_dims is None else tuple(bars_dims)[k:])
    rule = control.reverse_rule(f)
    if rule is not None and g is not None:  # lax control flow: its rule, batched (read)
        bars, bar_dims = bt.call(rule, (call_args, call_kwargs, g), (a_dims, k_dims, g_dims))
        return tuple(bars), (None if bar_dims is None else tuple(bar_dims))
    if isinstance(f, Vmapped) and g is not None:  # an inner vmap's derivative, under this one
        return _vmapped_vjp(f, call_args, a_dims, call_kwargs, k_dims, g, g_dims, f_dims)[:2]
    if getattr(type(f), "batched_vjp", None) is not None and g is not None:  # shard_map
        if call_kwargs or bt.batched(f_dims):
            raise TranspileError(f"vmap of the derivative of {f!r} with keyword arguments or "
                                 "over values its function closes over is not supported",
                                 user_location(), "pass those values positionally")
        return f.batched_vjp(call_args, a_dims, g, g_dims)
    f = calls.unstaged(f)
    if g is not None and _carries_closure(f):  # its code, its closed-over values first
        return _closure_vjp(f, f_dims, call_args, a_dims, call_kwargs, k_dims, g, g_dims)[:2]
    if isinstance(f, TransformedFunction) and not bt.batched(f_dims):
        f = target(f)  # grad(u) (a PINN's residual): its generated code, differentiated again
    if g is None or bt.batched(f_dims):
        if g is None:
            return (None,) * len(call_args), None
    elif isinstance(f, Primitive) and f.vjp is not None and f.differentiable:
        out, out_dims = bt.call(f, call_args, a_dims, call_kwargs, k_dims)
        rule = calls.vjp_rule(f, call_args, call_kwargs, activity)
        return bt.call(rule, (out, g, *call_args), (out_dims, g_dims, *a_dims), call_kwargs,
                       k_dims)
    elif isinstance(f, CustomVJP):  # its own rules, batched
        return _custom_vjp_bwd(calls.custom_vjp_bwd, (f, call_args, call_kwargs, g),
                               (None, a_dims, k_dims, g_dims), {}, {})
    elif not isinstance(f, (Primitive, CustomJVP)) and not traced.readable(target(f)):
        return traced.batched_vjp(f, call_args, a_dims, call_kwargs, k_dims, g, g_dims)
    elif isinstance(f, (types.FunctionType, CustomJVP)):  # (a custom_jvp: its rule's VJP)
        active = calls.active_params(f, calls.active_flags(call_args, activity))
        if not active:
            return (None,) * len(call_args), None
        generated = vjp_function(f, active, False)[1]
        keyword = getattr(generated, "cotangent_param", "_out_bar")
        out, out_dims = bt.call(generated, call_args, a_dims, {**call_kwargs, keyword: g},
                                {**k_dims, keyword: g_dims})
        bars, bars_dims = bt.getitem(out, out_dims, 1, None)
        n = len(call_args)
        return tuple(bars)[:n], tuple(_sub(bars_dims, i) for i in range(n))
    raise TranspileError(f"vmap of the derivative of a call of {f!r} (known only at run time) "
                         "is not supported", user_location(),
                         "call a transpiler.numpy function or a plain Python function there")


def _carries_closure(f: Any) -> bool:
    """A closure, or a transform of one whose closed-over values carry derivatives."""
    return closures.is_closure(f) or closed_over(f) is not None


def _closure_vjp(f: Any, f_dims: Any, call_args: tuple, a_dims: tuple, call_kwargs: dict,
                 k_dims: dict, g: Any, g_dims: Any) -> tuple:
    """(arguments' cotangents, their companions, the closure's cotangent -- a dict by name
    -- and its companions) of a call of closure `f`, whose closed-over values may be batched
    (`f_dims`: their companions by name): its generated VJP, values first, batched. For
    ``f = grad(closure)``, the VJP of its closure-converted code."""
    transformed = closed_over(f) is not None
    inner = closed_over(f) if transformed else f
    free = closures.closure_params(inner)
    names = closures.free_names(free) + closures.arg_names(inner, len(call_args))
    values = closures.free_values(free, call_args)
    active = closures.active_names(names, values)
    k, n = len(free), len(call_args)
    if not active:
        return (None,) * n, None, None, None
    free_dims = tuple(f_dims.get(name) if isinstance(f_dims, dict) else None
                      for name, _ in free)
    if transformed:
        bars, bars_dims = _vjp_call(calls.vjp_call, (f.converted(), tuple(values), call_kwargs, g),
                                    (None, free_dims + tuple(a_dims), k_dims, g_dims), {}, {})
    else:
        generated = closures.closure_vjp_function(inner, active)
        keyword = getattr(generated, "cotangent_param", "_out_bar")
        out, out_dims = bt.call(generated, tuple(values), free_dims + tuple(a_dims),
                                {**call_kwargs, keyword: g}, {**k_dims, keyword: g_dims})
        bars, bars_dims = bt.getitem(out, out_dims, 1, None)
    fn_bar = closures.free_bars(free, tuple(bars)[:k], active)
    fn_bar_dims = None if fn_bar is None else {
        name: _sub(bars_dims, i) for i, (name, _) in enumerate(free) if name in fn_bar}
    return (tuple(bars)[k:k + n], tuple(_sub(bars_dims, i) for i in range(k, k + n)),
            fn_bar, fn_bar_dims)


def _vjp_call_closure(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``ad.vjp_call_closure(f, args, kwargs, g)`` batched: for an inner vmap of a closure,
    its arguments' cotangents and its closed-over values' (`_vmapped_vjp`); for a closure,
    the same from its generated VJP (`_closure_vjp`); else the function's code, batched."""
    f, call_args, call_kwargs, g = args
    f = calls.unstaged(f)
    if _carries_closure(f) and g is not None:
        a_dims = dims[1] if isinstance(dims[1], (tuple, list)) else (dims[1],) * len(call_args)
        k_dims = dims[2] if isinstance(dims[2], dict) else {k: dims[2] for k in call_kwargs}
        bars, bars_dims, fn_bar, fn_bar_dims = _closure_vjp(
            f, dims[0], call_args, tuple(a_dims), call_kwargs, k_dims, g, dims[3])
        return (*bars, fn_bar), (*(bars_dims or (None,) * len(bars)), fn_bar_dims)
    if isinstance(f, Vmapped) and g is not None:
        a_dims = dims[1] if isinstance(dims[1], (tuple, list)) else (dims[1],) * len(call_args)
        k_dims = dims[2] if isinstance(dims[2], dict) else {k: dims[2] for k in call_kwargs}
        bars, bars_dims, fn_bar, fn_bar_dims = _vmapped_vjp(
            f, call_args, tuple(a_dims), call_kwargs, k_dims, g, dims[3], dims[0])
        return (*bars, fn_bar), (*(bars_dims or (None,) * len(bars)), fn_bar_dims)
    return bt.function_call(fn, args, dims, kwargs, kwdims, None)


def _vmapped_vjp(v: Any, args: tuple, a_dims: tuple, kwargs: dict, k_dims: dict, g: Any,
                 g_dims: Any, v_dims: Any = None) -> tuple:
    """The cotangents of an inner ``v = vmap(f)`` called with batched operands: v's VJP
    (f's VJP vmapped, ad/vmapped.py) called as a vmap nested in this one, then each
    cotangent from its inner batch axis to its argument's layout, the outer batch axis
    first; `v_dims`, a dict by name, says which values a closure closes over carry this
    vmap's axis. Returns (bars, their dims, the dict of a closure's cotangents, its dims)."""
    plan = vmapped.vjp_plan(v, args)
    if plan is None:
        return (None,) * len(args), None, None, None
    batched, values, axes, names = plan
    k = len(values) - len(args)
    free_dims = tuple(v_dims.get(n) if isinstance(v_dims, dict) else None for n in names[:k])
    bars, bars_dims = bt.call(batched, (tuple(values), g, kwargs),
                              (free_dims + tuple(a_dims), g_dims, k_dims), {}, {})
    out = [_inner_unbatched(bars[i], _sub(bars_dims, i), axes[i]) for i in range(len(values))]
    fn_bar = {n: o[0] for n, o in zip(names[:k], out[:k]) if o[0] is not None}
    fn_bar_dims = {n: o[1] for n, o in zip(names[:k], out[:k]) if o[0] is not None}
    return tuple(o[0] for o in out[k:]), tuple(o[1] for o in out[k:]), fn_bar or None, \
        fn_bar_dims or None


def _inner_unbatched(bar: Any, dims: Any, axes: Any) -> tuple[Any, Any]:
    """`vmapped._unbatch` of a cotangent that also carries this vmap's axis (`dims`): the
    inner batch axis (first, or second after the outer one) summed for an argument the
    inner batch shared, else moved to the argument's axis."""
    if bar is None:
        return None, None
    if isinstance(bar, (dict, tuple, list)):
        keys = list(bar) if isinstance(bar, dict) else range(len(bar))
        parts = {key: _inner_unbatched(
            bar[key], dims[key] if isinstance(dims, (dict, tuple, list)) else dims,
            axes[key] if isinstance(axes, (dict, tuple, list)) else axes) for key in keys}
        if isinstance(bar, dict):
            return {key: p[0] for key, p in parts.items()}, {key: p[1] for key, p in parts.items()}
        return sequence_like(bar, [p[0] for p in parts.values()]), \
            sequence_like(bar, [p[1] for p in parts.values()])
    if dims is None:  # (this vmap's axis did not reach it)
        return (jnp.sum(bar, axis=0) if axes is None else jnp.moveaxis(bar, 0, axes)), None
    bar = move_to_front(bar, dims)
    if axes is None:
        return jnp.sum(bar, axis=1), 0
    return jnp.moveaxis(bar, 1, axes + 1 if axes >= 0 else axes), 0


def _elements(x: Any, dims: Any) -> tuple[list, list]:
    """The elements of a sequence and their companions (a dict's or set's: its keys,
    which no batch axis reaches)."""
    if isinstance(x, (dict, set, frozenset)):
        return list(x), [None] * len(x)
    values, element_dims = bt.unpack(x, dims, len(bt.view(x, dims)))
    return list(values), list(element_dims)


def _zip(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    parts = [_elements(a, d) for a, d in zip(args, dims)]
    return list(zip(*(p[0] for p in parts))), list(zip(*(p[1] for p in parts)))


def _enumerate(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    values, element_dims = _elements(args[0], dims[0])
    start = args[1] if len(args) > 1 else kwargs.get("start", 0)
    return list(enumerate(values, start)), [(None, d) for d in element_dims]


def _reversed(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    values, element_dims = _elements(args[0], dims[0])
    return values[::-1], element_dims[::-1]


def _sequence(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``_sequence(xs)`` (a lowered loop's iterable): a dict's keys, a set's elements are
    static; anything else is itself."""
    out = fn(args[0])
    return (args[0], dims[0]) if out is args[0] else (out, [None] * len(out))


def _dict(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``dict(pairs, **kw)``: the companions keyed alike."""
    out = dict(*args, **kwargs)
    companions: dict = {}
    if args:
        source, d = args[0], dims[0]
        if isinstance(source, dict):
            companions.update(d if isinstance(d, dict) else dict.fromkeys(source, d))
        else:
            pairs, pair_dims = _elements(source, d)
            for (key, _), pd in zip(pairs, pair_dims):
                companions[key] = pd[1] if isinstance(pd, (tuple, list)) else pd
    companions.update({k: kwdims.get(k) for k in kwargs})
    return out, companions


def _iter(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``iter(xs)`` (a lowered generator): the elements, as a list."""
    return _elements(args[0], dims[0])


def _custom_vjp_bwd(helper: Any, args: tuple, dims: tuple, kwargs: dict,
                    kwdims: dict) -> tuple:
    """``ad.custom_vjp_bwd(f, args, kwargs, g)`` on batched values: f's fwd and bwd rules
    run batched (from their source, so a collective in bwd sees the whole batch); the
    arguments are bound to positions here, not by batching the helper's `inspect` calls."""
    f, f_args, f_kwargs, g = args
    _, a_dims, k_dims, g_dims = dims
    if f.fwd is None or f.bwd is None:
        return helper(*args, **kwargs), None  # its "no VJP defined" error
    if not isinstance(a_dims, (tuple, list)):
        a_dims = (a_dims,) * len(f_args)
    signature = inspect.signature(f.fun)
    bound = signature.bind(*f_args, **f_kwargs)
    bound.apply_defaults()
    bound_dims = signature.bind(*a_dims, **{k: _sub(k_dims, k) for k in f_kwargs})
    positional = f.positional(f_args, f_kwargs)  # (its keyword-only error)
    pos_dims = tuple(bound_dims.arguments.get(name) for name in bound.arguments)
    result, result_dims = bt.call(f.fwd, positional, pos_dims)
    (out, residuals), (out_dims, res_dims) = bt.unpack(result, result_dims, 2)
    if g is None:
        return (None,) * len(positional), None
    g, g_dims = _finalize(rh.finalize, (g, out), (g_dims, out_dims), {}, {})
    nondiff = f.nondiff_argnums
    cts, ct_dims = bt.call(f.bwd, (*(positional[i] for i in nondiff), residuals, g),
                           (*(pos_dims[i] for i in nondiff), res_dims, g_dims))
    diff = [i for i in range(len(positional)) if i not in nondiff]
    cts, ct_dims = bt.unpack(cts, ct_dims, len(diff))
    full, full_d = [None] * len(positional), [None] * len(positional)
    for i, ct, d in zip(diff, cts, ct_dims):
        full[i], full_d[i] = ct, d
    return tuple(full), tuple(full_d)
