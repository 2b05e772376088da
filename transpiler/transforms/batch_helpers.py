"""Batching rules of structural code: pytree utilities and the run-time helpers of
generated derivative code (``ad.add`` ...), which rearrange containers whose leaves carry
batch axes. A structural function moves leaves without computing on them, so the
companions follow the same rearrangement: the function runs once on the values and once on
the companions (each companion a leaf)."""

from __future__ import annotations

from typing import Any

from transpiler import tree_util
from transpiler.transforms import batch_runtime as bt


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
            return type(x)(*parts) if hasattr(x, "_fields") else type(x)(parts)
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
    return tree


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
    from transpiler.transforms import forward_helpers as fh
    from transpiler.transforms import runtime_helpers as rh
    table: dict[int, Any] = {id(tree_util.tree_map): tree_map}
    for fn in (tree_util.tree_flatten, tree_util.tree_unflatten, tree_util.tree_leaves,
               rh.spread, rh.item, fh.tangents_of):
        table[id(fn)] = structural
    table[id(rh.index_bar)] = _index_bar
    table[id(rh.add)] = _add
    table[id(rh.finalize)] = _finalize
    return table


def _index_bar(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``ad.index_bar(container, index, g)``: structural for containers, else
    ``zeros_like(container).at[index].add(g)`` batched."""
    container, index, g = args
    if g is None or container is None or isinstance(container, (dict, tuple, list)):
        return structural(fn, args, dims, kwargs, kwdims)
    return bt.call(_index_bar_array, args, dims)


def _index_bar_array(container: Any, index: Any, g: Any) -> Any:
    from transpiler import numpy as jnp
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
        return type(a)(p[0] for p in pairs), type(a)(p[1] for p in pairs)
    from transpiler import numpy as jnp
    return bt.call(jnp.add, (a, b), (da, db))


def _sub(dims: Any, k: Any) -> Any:
    if isinstance(dims, dict):
        return dims.get(k)
    if isinstance(dims, (tuple, list)):
        return dims[k]
    return dims


def _finalize(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``ad.finalize(bar, primal)``: the gradient with the primal's structure and dtypes."""
    from transpiler import numpy as jnp
    from transpiler.transforms.api import _leaves_like
    (bar, primal), (dbar, dprimal) = args, dims
    leaves, tree = tree_util.tree_flatten(primal)
    primal_dims = tree.flatten_up_to(full_dims(primal, dprimal))
    bars = _leaves_like(bar, primal, len(leaves))
    bar_dims = _leaves_like(full_dims(bar, dbar) if bar is not None else None, primal,
                            len(leaves))
    out, out_dims = [], []
    for b, db, p, dp in zip(bars, bar_dims, leaves, primal_dims):
        member = bt.view(p, plain(dp))
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
