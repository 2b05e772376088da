"""The arguments and results of a transformed call: which parameters are differentiated,
NumPy inputs as arrays, and a cotangent completed to its primal's structure and dtypes."""

from __future__ import annotations

from typing import Any, Callable, Sequence, Union

import numpy as np

from transpiler import tree_util
from transpiler.errors import TranspileError, user_location
from transpiler.transforms.common.generated import target
from transpiler.transforms.common.signature import source_signature, star_name
from transpiler.tree_util._registry import node_children
from transpiler import numpy as jnp
from transpiler import dtypes
from transpiler.primitives.core import abstractify


def as_arrays(tree: Any, floats: bool = False) -> Any:
    """NumPy values in `tree` as arrays (and Python floats too, with `floats`)."""
    kinds: tuple = (np.ndarray, np.generic, float, complex) if floats else (np.ndarray, np.generic)
    return tree_util.tree_map(lambda x: jnp.asarray(x) if isinstance(x, kinds) else x, tree)


def positional_names(fn: Callable) -> list[str]:
    params = source_signature(target(fn)).parameters.values()
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def argnums_of(argnums: Union[int, Sequence[int]], nargs: int, fname: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not -nargs <= i < nargs:
            raise TypeError(f"grad({fname}): argnums {argnums} out of range for a function "
                            f"called with {nargs} positional arguments")
    return tuple(i % nargs for i in nums)


def active_names(fun: Callable, argnums: Union[int, Sequence[int]]) -> frozenset:
    names = positional_names(fun)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    star = star_name(target(fun)) if any(i >= len(names) for i in nums) else None
    return frozenset([names[i] for i in nums if -len(names) <= i < len(names)] +
                     ([star] if star else []))


def finalize(bar: Any, primal: Any) -> Any:
    """A full cotangent with the primal's structure: None -> zeros, primal dtypes. (An
    integer primal is an error, as for grad's own argument check: grad's wrapper runs this
    under vmap and jit too.)"""
    leaves, tree = tree_util.tree_flatten(primal)
    for leaf in leaves:
        dtype = abstractify(leaf).dtype
        if not dtypes.is_inexact(dtype):
            raise TranspileError(f"grad requires floating or complex inputs, but got "
                                 f"dtype {dtype}", user_location(),
                                 "pass floats (e.g. x.astype(jnp.float32)), or leave the "
                                 "argument out of argnums")
    bar_leaves = leaves_like(bar, primal, len(leaves))
    out = []
    for b, p in zip(bar_leaves, leaves):
        zero_like = jnp.zeros_like(p)
        out.append(zero_like if b is None else jnp.astype(jnp.broadcast_to(b, jnp.shape(p)),
                                                          zero_like.dtype))
    return tree_util.tree_unflatten(tree, out)


def leaves_like(bar: Any, primal: Any, n: int) -> list[Any]:
    if bar is None:
        return [None] * n
    if isinstance(primal, dict):
        return [x for k in sorted(primal) for x in leaves_like(
            bar.get(k) if isinstance(bar, dict) else None, primal[k],
            len(tree_util.tree_leaves(primal[k])))]
    node = node_children(primal) if not hasattr(primal, "shape") else None
    if node is not None:  # tuples, lists, NamedTuples, dataclasses, registered pytrees
        bars = node_children(bar)
        return [x for b, p in zip(bars[0] if bars else [None] * len(node[0]), node[0])
                for x in leaves_like(b, p, len(tree_util.tree_leaves(p)))]
    return [bar]
