"""Batching rules of the named-axis collectives (transpiler/lax/parallel.py), for vmap.

``rule(fn, args, dims, kwargs, kwdims) -> (out, out_dims)``, called by
`bt.rules.dispatch` for every call of a collective in batched code.

The innermost running vmap keeps its members in one batch axis. When nested vmaps were
merged (batch/api.py's nested_call) that axis is the outer-major flattening of several named
*factors*. A rule moves the batch axis to the front and reshapes it into its factors (the
*factored form*, shape ``(*factor sizes, *member shape)``), then reduces, gathers or
permutes the factors the collective names, and flattens the factors that remain back into
one batch axis, broadcast along those the result no longer depends on (`_rebatch`). When
every factor is consumed the result is the same for every member: its dims are None, and
vmap broadcasts it on output.

A name bound by an enclosing vmap that is not merged into the innermost batch (an inner
vmap called on values the outer one does not batch) is an axis along which the values
here are all the same: psum scales by its size, pmax/pmin ignore it, all_gather repeats
along it; axis_index, psum_scatter and ppermute, whose results would differ along it,
raise. Everything is written with primitives and transpiler.numpy, so it stages under jit.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

import transpiler.numpy as jnp
from transpiler.lax import parallel as lp
from transpiler import tree_util
from transpiler.errors import TranspileError, user_location
from transpiler.primitives import conversions as conv
from transpiler.primitives import reductions as red_p
from transpiler.primitives import shape as sp
from transpiler.primitives.batching import materialize, move_to_front
from transpiler.primitives.core import abstractify
from transpiler.transforms import bt
from transpiler.tree_util._registry import sequence_like

Rule = Callable[..., tuple[Any, Any]]


# --- plumbing ---------------------------------------------------------------------------------
def _bind(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple[dict, Any]:
    """The call's parameters by name (defaults filled) and the companion of `x`; every
    other parameter (names, axes, perm) must be the same for the whole batch."""
    signature = inspect.signature(fn)
    try:
        bound = signature.bind(*args, **kwargs)
        bound_dims = signature.bind(*dims, **{k: kwdims.get(k) for k in kwargs})
    except TypeError as err:
        raise TypeError(f"lax.{fn.__name__}(): {err}") from None
    bound.apply_defaults()
    for name, d in bound_dims.arguments.items():
        if name != "x" and bt.batched(d):
            raise TranspileError(f"lax.{fn.__name__}: `{name}` differs across the vmapped "
                                 "batch; it must be static", user_location())
    return bound.arguments, bound_dims.arguments.get("x")


def _sub(dims: Any, key: Any) -> Any:
    if isinstance(dims, dict):
        return dims.get(key)
    if isinstance(dims, (tuple, list)):
        return dims[key]
    return None if dims is None else dims


def _map(op: Callable[[Any, Any], tuple[Any, Any]], x: Any, dims: Any) -> tuple[Any, Any]:
    """``op(leaf, leaf_dims) -> (out, out_dims)`` over the pytree `x` and its companion; the
    result's companion has the container structure (tuple for tuples, list for lists)."""
    if isinstance(x, dict):
        pairs = {k: _map(op, v, _sub(dims, k)) for k, v in x.items()}
        return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
    if isinstance(x, (tuple, list)):
        items = [_map(op, v, _sub(dims, i)) for i, v in enumerate(x)]
        values = [p[0] for p in items]
        out = sequence_like(x, values)
        companions = [p[1] for p in items]
        return out, companions if isinstance(x, list) else tuple(companions)
    if x is None:
        return None, None
    leaves, treedef = tree_util.tree_flatten(x)
    if tree_util.treedef_is_leaf(treedef):
        return op(x, dims if isinstance(dims, int) else None)
    outs = [op(leaf, None) for leaf in leaves]  # a registered node: unbatched (view() agrees)
    if any(bt.batched(d) for _, d in outs):
        raise TranspileError(f"a collective's result inside a {type(x).__name__} differs "
                             "across the batch", user_location(),
                             "pass its leaves in a tuple, list or dict")
    return tree_util.tree_unflatten(treedef, [o for o, _ in outs]), None


def _factors() -> tuple[int, ...]:
    """The sizes of the factors of the innermost batch axis, outer-major."""
    return tuple(size for _, size in bt.AXES[-1])


def _factored(leaf: Any, dims: int, factors: tuple[int, ...]) -> Any:
    """A batched leaf in factored form: ``(*factors, *member)``."""
    front = move_to_front(leaf, dims)
    if len(factors) == 1:
        return front
    shape = abstractify(front).shape
    return sp.reshape(front, new_sizes=(*factors, *shape[1:]))


def _rebatch(y: Any, present: list[int], factors: tuple[int, ...]) -> tuple[Any, Any]:
    """`y` leads with the factors `present` (ascending): one batch axis at 0 again,
    broadcast along the absent factors; none present: the same for every member."""
    if not present:
        return y, None
    shape = abstractify(y).shape
    rest = shape[len(present):]
    if len(present) < len(factors):
        spread = tuple(f if p in present else 1 for p, f in enumerate(factors))
        y = sp.broadcast_to(sp.reshape(y, new_sizes=(*spread, *rest)),
                            shape=(*factors, *rest))
    if len(factors) > 1 or len(present) < len(factors):
        y = sp.reshape(y, new_sizes=(math.prod(factors), *rest))
    return y, 0


def _named(axes: list[lp.Axis]) -> list[int]:
    """The innermost batch's factors the collective names, in the order named."""
    return [a.factor for a in axes if a.factor is not None]


def _inner_only(axes: list[lp.Axis], op: str, axis_name: Any) -> None:
    """Collectives whose results differ along an axis need it in the innermost batch."""
    if any(a.factor is None and a.size != 1 for a in axes):
        raise lp.varying(op, axis_name)


# --- psum, pmean, pmax, pmin --------------------------------------------------------------------
_REDUCERS = {"psum": red_p.reduce_sum, "pmean": red_p.reduce_sum,
             "pmax": red_p.reduce_max, "pmin": red_p.reduce_min}


def _reduction_rule(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    params, x_dims = _bind(fn, args, dims, kwargs, kwdims)
    op, axis_name = fn.__name__, params["axis_name"]
    axes = lp.resolve(axis_name, op, params["axis_index_groups"])
    if not axes:
        return params["x"], x_dims
    named = _named(axes)
    outer = math.prod(a.size for a in axes if a.factor is None)

    def leaf_rule(leaf: Any, d: Any) -> tuple[Any, Any]:
        if d is None:  # the same for every member: the direct function knows
            return fn(leaf, axis_name), None
        factors = _factors()
        y = _factored(leaf, d, factors)
        if named:
            y = _REDUCERS[op](y, axes=tuple(sorted(named)))
        if op in ("psum", "pmean") and outer != 1:
            y = jnp.multiply(y, outer)
        if op == "pmean":
            y = jnp.true_divide(y, lp.group_size(axes))
        return _rebatch(y, [p for p in range(len(factors)) if p not in named], factors)
    return _map(leaf_rule, params["x"], x_dims)


# --- all_gather, axis_index ---------------------------------------------------------------------
def _all_gather_rule(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    params, x_dims = _bind(fn, args, dims, kwargs, kwdims)
    axis_name, axis, tiled = params["axis_name"], params["axis"], params["tiled"]
    axes = lp.resolve(axis_name, "all_gather", params["axis_index_groups"])
    named = _named(axes)

    def leaf_rule(leaf: Any, d: Any) -> tuple[Any, Any]:
        if d is None:
            return fn(leaf, axis_name, axis=axis, tiled=tiled), None
        factors = _factors()
        k = len(factors)
        kept = [p for p in range(k) if p not in named]
        y = _factored(leaf, d, factors)
        ndim = abstractify(y).ndim
        order = (*kept, *named, *range(k, ndim))
        if order != tuple(range(ndim)):
            y = sp.transpose(y, permutation=order)
        shape = abstractify(y).shape
        lead, member = shape[:len(kept)], shape[k:]
        groups = tuple(a.size for a in axes)  # gathered in the order named (row-major)
        spread = tuple(a.size if a.factor is not None else 1 for a in axes)
        y = sp.reshape(y, new_sizes=(*lead, *spread, *member))
        if spread != groups:  # axes of enclosing vmaps: the value repeats along them
            y = sp.broadcast_to(y, shape=(*lead, *groups, *member))
        y = sp.reshape(y, new_sizes=(*lead, math.prod(groups), *member))
        return _rebatch(lp.place_gathered(y, len(kept), axis, tiled), kept, factors)
    return _map(leaf_rule, params["x"], x_dims)


def _axis_index_rule(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    params, _ = _bind(fn, args, dims, kwargs, kwdims)
    axis_name = params["axis_name"]
    axes = lp.resolve(axis_name, "axis_index")
    _inner_only(axes, "axis_index", axis_name)
    factors = _factors()
    total, stride = None, 1
    for a in reversed(axes):  # row-major over the names, in the order given
        if a.factor is not None:
            term = conv.iota(dtype=np.dtype(np.int32), shape=factors, dimension=a.factor)
            if stride != 1:
                term = jnp.multiply(term, np.int32(stride))
            total = term if total is None else jnp.add(total, term)
        stride *= a.size
    if total is None:
        return jnp.zeros((), np.int32), None
    return sp.reshape(total, new_sizes=(math.prod(factors),)), 0


# --- psum_scatter, ppermute ---------------------------------------------------------------------
def _psum_scatter_rule(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    params, x_dims = _bind(fn, args, dims, kwargs, kwdims)
    axis_name, tiled = params["axis_name"], params["tiled"]
    axes = lp.resolve(axis_name, "psum_scatter", params["axis_index_groups"])
    _inner_only(axes, "psum_scatter", axis_name)
    named = _named(axes)
    size = lp.group_size(axes)

    def leaf_rule(leaf: Any, d: Any) -> tuple[Any, Any]:
        factors = _factors()
        if d is None:
            y, kept = jnp.multiply(leaf, size), []
        else:
            kept = [p for p in range(len(factors)) if p not in named]
            y = _factored(leaf, d, factors)
            if named:
                y = red_p.reduce_sum(y, axes=tuple(sorted(named)))
        shape = abstractify(y).shape
        lead, member = len(kept), shape[len(kept):]
        sd = params["scatter_dimension"]
        if not -len(member) <= sd < len(member):
            raise TranspileError(f"lax.psum_scatter: scatter_dimension {sd} is out of range "
                                 f"for a value of shape {member}", user_location())
        sd %= len(member)
        if (member[sd] % size if tiled else member[sd] != size):
            need = f"a multiple of {size}" if tiled else f"{size}"
            raise TranspileError(f"lax.psum_scatter: dimension {sd} of a value of shape "
                                 f"{member} must be {need} (the size of {axis_name!r})",
                                 user_location())
        blocks = tuple(factors[p] for p in named)
        chunk = (member[sd] // size,) if tiled else ()
        y = sp.reshape(y, new_sizes=(*shape[:lead + sd], *blocks, *chunk,
                                     *member[sd + 1:]))
        # Block i of the named factors goes to the members at position i of those factors.
        present = sorted(kept + named)
        where = {p: i for i, p in enumerate(kept)}
        where.update({p: lead + sd + i for i, p in enumerate(named)})
        front = [where[p] for p in present]
        order = (*front, *(i for i in range(abstractify(y).ndim) if i not in front))
        if order != tuple(range(len(order))):
            y = sp.transpose(y, permutation=order)
        return _rebatch(y, present, factors)
    return _map(leaf_rule, params["x"], x_dims)


def _ppermute_rule(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    params, x_dims = _bind(fn, args, dims, kwargs, kwdims)
    axis_name = params["axis_name"]
    axes = lp.resolve(axis_name, "ppermute")
    _inner_only(axes, "ppermute", axis_name)
    named = _named(axes)
    source = lp.sources(params["perm"], lp.group_size(axes))

    def leaf_rule(leaf: Any, d: Any) -> tuple[Any, Any]:
        if d is None and all(s is not None for s in source):
            return jnp.asarray(leaf), None  # every member receives the same value
        factors = _factors()
        k = len(factors)
        full = materialize(jnp.asarray(leaf), d, math.prod(factors))
        y = _factored(full, 0, factors)
        ndim = abstractify(y).ndim
        others = [p for p in range(k) if p not in named]
        order = (*named, *others, *range(k, ndim))
        y = sp.transpose(y, permutation=order)
        shape = abstractify(y).shape
        rest = shape[len(named):]
        y = sp.reshape(y, new_sizes=(math.prod(shape[:len(named)]), *rest))
        zero = jnp.zeros(rest, abstractify(y).dtype)
        y = jnp.stack([zero if s is None else y[s] for s in source])
        y = sp.reshape(y, new_sizes=shape)
        y = sp.transpose(y, permutation=tuple(int(i) for i in np.argsort(order)))
        return sp.reshape(y, new_sizes=(math.prod(factors), *shape[k:])), 0
    return _map(leaf_rule, params["x"], x_dims)


# --- over a pmap's axis (pmap(vmap(f)) traced per shard) ---------------------------------------
def _spmd_rule(spmd: lp.SpmdAxis, fn: Any, params: dict, x_dims: Any) -> tuple:
    """Each member of the batch takes part in the shards' collective with its own value:
    the batch axis, moved to the front, is one more axis of the value the shards combine."""
    op = fn.__name__
    if op == "axis_index":
        return spmd.axis_index(), None

    def member_axis(axis: int, ndim: int) -> int:  # `axis` of a member, with the batch first
        return (axis % ndim if ndim else 0) + 1

    def leaf_rule(leaf: Any, d: Any) -> tuple[Any, Any]:
        if d is None:
            return fn(leaf, *[params[k] for k in list(params)[1:]]), None
        y = move_to_front(jnp.asarray(leaf), d)
        ndim = abstractify(y).ndim - 1
        if op in ("psum", "pmax", "pmin"):
            return getattr(spmd, op)(y), 0
        if op == "pmean":
            return jnp.true_divide(spmd.psum(y), spmd.size), 0
        if op == "ppermute":
            return spmd.ppermute(y, lp.sources(params["perm"], spmd.size)), 0
        if op == "all_gather":
            bound = ndim if params["tiled"] else ndim + 1
            return spmd.all_gather(y, member_axis(params["axis"], bound), params["tiled"]), 0
        return spmd.psum_scatter(y, member_axis(params["scatter_dimension"], ndim),
                                 params["tiled"]), 0
    return _map(leaf_rule, params["x"], x_dims)


def _or_spmd(rule: Rule) -> Rule:
    def dispatch(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
        params, x_dims = _bind(fn, args, dims, kwargs, kwdims)
        spmd = lp.spmd_axis(params["axis_name"], fn.__name__, params.get("axis_index_groups"))
        if spmd is not None:
            return _spmd_rule(spmd, fn, params, x_dims)
        return rule(fn, args, dims, kwargs, kwdims)
    return dispatch


RULES: dict[str, Rule] = {name: _or_spmd(rule) for name, rule in {
    "psum": _reduction_rule, "pmean": _reduction_rule, "pmax": _reduction_rule,
    "pmin": _reduction_rule, "all_gather": _all_gather_rule, "axis_index": _axis_index_rule,
    "psum_scatter": _psum_scatter_rule, "ppermute": _ppermute_rule,
}.items()}
