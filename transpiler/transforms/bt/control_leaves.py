"""Values with their companions, leaf by leaf: the pieces bt/control.py builds the
batched control flow from (flattening a carry with its batch
axes, moving leaves to the axes a loop needs, selecting per member, binding a call's
arguments with their companions, running a user's function batched)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from transpiler import tree_util
from transpiler.errors import TranspileError, user_location
from transpiler.primitives.batching import materialize
from transpiler.primitives.core import abstractify
from transpiler.transforms import bt
from transpiler import numpy as jnp
from transpiler.lowering.regions import probe
from transpiler.lax.control import _traced as traced

Step = Callable[[Any, Any], tuple[Any, Any]]  # (value, companion) -> (out, out companion)
Bound = dict[str, tuple[Any, Any]]  # a call's parameters: (value, companion)


# --- values with their companions, leaf by leaf ------------------------------------------------
def flatten(x: Any, dims: Any) -> tuple[list, list, Any]:
    """The leaves of `x`, each leaf's batch axis (int or None), and the structure (for
    `unflatten`). Tuples, lists and dicts are walked with their companions; any other
    value (an array, a scalar, None, a custom pytree) is a group of leaves sharing one."""
    leaves: list = []
    leaf_dims: list = []

    def walk(v: Any, d: Any) -> Any:
        if isinstance(v, dict):  # keys sorted, as tree_util orders them
            try:
                keys = sorted(v)
            except TypeError:
                keys = list(v)
            return ("dict", type(v), keys, [walk(v[k], part(d, k)) for k in keys])
        if isinstance(v, (tuple, list)):
            return ("seq", type(v), [walk(e, part(d, i)) for i, e in enumerate(v)])
        if d is not None and not isinstance(d, int):
            raise TypeError(f"internal: companion {d!r} does not match a {type(v).__name__}")
        group, treedef = tree_util.tree_flatten(v)
        leaves.extend(group)
        leaf_dims.extend([d] * len(group))
        return ("node", treedef, len(group))

    spec = walk(x, dims)
    return leaves, leaf_dims, spec


def unflatten(spec: Any, leaves: list, dims: list) -> tuple[Any, Any]:
    """`flatten` undone: the value and its companion (dicts, tuples, lists mirrored)."""
    values, axes = iter(leaves), iter(dims)

    def build(s: Any) -> tuple[Any, Any]:
        if s[0] == "dict":
            parts = [build(c) for c in s[3]]
            value = dict(zip(s[2], (p[0] for p in parts)))
            return (value if s[1] is dict else s[1](value)), \
                {k: p[1] for k, p in zip(s[2], parts)}
        if s[0] == "seq":
            parts = [build(c) for c in s[2]]
            kind, items = s[1], [p[0] for p in parts]
            value = kind(*items) if hasattr(kind, "_fields") else kind(items)
            return value, (list if kind is list else tuple)(p[1] for p in parts)
        group = [next(values) for _ in range(s[2])]
        group_dims = [next(axes) for _ in range(s[2])]
        if len(set(group_dims)) > 1:  # a custom pytree's leaves: one companion for all
            group = [materialize(v, d, bt.batch_size()) for v, d in zip(group, group_dims)]
            group_dims = [0]
        return tree_util.tree_unflatten(s[1], group), (group_dims[0] if group_dims else None)

    return build(spec)


def part(dims: Any, key: Any) -> Any:
    """The companion of ``x[key]`` from `x`'s (None and ints cover a whole container)."""
    if isinstance(dims, dict):
        return dims.get(key)
    if isinstance(dims, (tuple, list)):
        return dims[key]
    return dims


def placed(leaves: list, dims: list, want: list) -> list:
    """Each leaf with its batch axis at 0 where `want` says 0 (broadcast if unbatched)."""
    size = bt.batch_size()
    out = []
    for leaf, d, w in zip(leaves, dims, want):
        if w is None:
            if d is not None:
                raise TranspileError("internal: a loop carry or branch output became batched "
                                     "after its companion was fixed", user_location())
            out.append(leaf)
        else:
            out.append(materialize(leaf, d, size))
    return out


def conformed(value: Any, dims: Any, want: list, tree: Any, what: str) -> Any:
    """`value` (with companion `dims`) with its leaves placed as `want`; `tree` is the
    structure it must have."""
    check_tree(value, tree, what)
    leaves, leaf_dims, spec = flatten(value, dims)
    return unflatten(spec, placed(leaves, leaf_dims, want), want)[0]


def check_tree(value: Any, tree: Any, what: str) -> None:
    got = tree_util.tree_structure(value)
    if got != tree:
        raise TranspileError(f"{what} must return the structure {tree}, got {got}",
                             user_location(), "return the same tuple/dict of arrays as the "
                             "initial value")


def select(keep: Any, new: Any, new_dims: Any, old: Any, old_dims: Any) -> tuple[Any, Any]:
    """Per member, `new` where `keep` (shape ``(batch,)``) else `old`: the value and its
    companion (every leaf batched at 0)."""
    size = bt.batch_size()
    new_leaves, new_leaf_dims, spec = flatten(new, new_dims)
    old_leaves, old_leaf_dims, _ = flatten(old, old_dims)
    picked = []
    for n, nd, o, od in zip(new_leaves, new_leaf_dims, old_leaves, old_leaf_dims):
        n, o = materialize(n, nd, size), materialize(o, od, size)
        test = jnp.reshape(keep, (size,) + (1,) * (abstractify(n).ndim - 1))
        picked.append(jnp.where(test, n, o))
    return unflatten(spec, picked, [0] * len(picked))


def probed(thunk: Callable[[], Any]) -> Any:
    """What `thunk` returns (companions, structures), computed without emitting anything."""
    box: list = []
    probe(lambda: box.append(thunk()))
    return box[0]


def bind(fn: Any, args: tuple, dims: Any, kwargs: dict, kwdims: Any) -> Bound:
    """{parameter: (value, companion)} of a call of lax function `fn`, defaults filled."""
    signature = inspect.signature(fn)
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,) * len(args)
    params = list(signature.parameters.values())
    room = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    if len(args) > room and not any(p.kind == p.VAR_POSITIONAL for p in params):
        # derivative code passes keyword-only arguments (max_iters) positionally
        extra = [p.name for p in params if p.kind == p.KEYWORD_ONLY][:len(args) - room]
        kwargs = {**kwargs, **dict(zip(extra, args[room:]))}
        kwdims = {**({k: part(kwdims, k) for k in kwargs}), **dict(zip(extra, dims[room:]))}
        args, dims = args[:room], dims[:room]
    try:
        values = signature.bind(*args, **kwargs)
        companions = signature.bind(*dims, **{k: part(kwdims, k) for k in kwargs})
    except TypeError as err:
        raise TranspileError(f"lax.{fn.__name__}: {err}", user_location()) from None
    values.apply_defaults()
    return {k: (v, companions.arguments.get(k)) for k, v in values.arguments.items()}


def static(bound: dict, names: tuple, op: str) -> None:
    for name in names:
        if name in bound and bt.batched(bound[name][1]):
            raise TranspileError(f"lax.{op}: `{name}` differs across the vmapped batch; it "
                                 "must be static", user_location())


def user(fn: Any, fn_dims: Any) -> Step:
    """The user's function batched: ``(args, arg_dims) -> (out, out_dims)``."""
    return lambda args, arg_dims: bt.call(fn, tuple(args), tuple(arg_dims), {}, {}, fn_dims)


def _traced(x: Any) -> bool:
    return traced(x)
