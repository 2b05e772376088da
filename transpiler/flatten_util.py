"""``jax.flatten_util``: :func:`ravel_pytree`, a pytree of arrays as one flat vector.

The leaves are promoted to one dtype (JAX's promotion of the leaves' dtypes; a Python
scalar counts as its default dtype) and concatenated; the returned ``unravel`` splits a
vector of that length back into the pytree, each leaf in its own shape and dtype. When
all leaves already have that dtype nothing is converted and ``unravel`` accepts a vector
of any dtype, as JAX's does (jax#7809).

``unravel`` is a ``custom_vjp`` function: the AD transforms do not differentiate
``tree_unflatten``, so its cotangent rule is written here: the cotangents of the leaves,
converted back to the flat dtype and concatenated (a zero cotangent, None, gives zeros).
It works under ``jit``, ``grad`` and ``vmap``; forward mode (``jvp``, ``hessian``) of
``unravel`` is not supported (a custom_vjp function has no forward-mode rule).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import numpy as np

from transpiler import numpy as jnp
from transpiler import tree_util
from transpiler.lax import convert_element_type
from transpiler.transforms.reverse.custom_vjp import custom_vjp

__all__ = ["ravel_pytree"]

Shapes = tuple[tuple[int, ...], ...]


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """Ravel (flatten) a pytree of arrays and scalars down to one 1-D array.

    Returns ``(flat, unravel)``: the leaves' values concatenated in ``tree_leaves`` order
    with the promoted dtype of the leaves, and a function that builds the pytree back from
    a vector of the same length. With no leaves, ``flat`` is an empty float32 vector.
    """
    leaves, treedef = tree_util.tree_flatten(pytree)
    if not leaves:
        return jnp.zeros((0,), np.float32), functools.partial(_unravel_empty, treedef)
    from_dtypes = tuple(np.dtype(jnp.result_type(leaf)) for leaf in leaves)
    to_dtype = np.dtype(jnp.result_type(*from_dtypes))
    shapes = tuple(tuple(np.shape(leaf)) for leaf in leaves)
    flat = jnp.concatenate([jnp.ravel(convert_element_type(leaf, to_dtype))
                            for leaf in leaves])
    if all(dtype == to_dtype for dtype in from_dtypes):
        return flat, functools.partial(_unravel, treedef, shapes, None, to_dtype)
    return flat, functools.partial(_unravel, treedef, shapes, from_dtypes, to_dtype)


def _unravel_empty(treedef: tree_util.PyTreeDef, flat: Any) -> Any:
    return tree_util.tree_unflatten(treedef, [])


def _unravel_leaves(shapes: Shapes, from_dtypes: Optional[tuple], to_dtype: np.dtype,
                    flat: Any) -> list:
    """The leaves of `flat` in `shapes`, each converted to its dtype of `from_dtypes`
    (None: kept in `flat`'s dtype, whatever it is)."""
    if from_dtypes is not None and np.dtype(jnp.result_type(flat)) != to_dtype:
        raise TypeError(f"unravel function given array of dtype {jnp.result_type(flat)}, "
                        f"but expected dtype {to_dtype}")
    sizes = [int(np.prod(shape)) for shape in shapes]
    chunks = jnp.split(flat, np.cumsum(sizes)[:-1].tolist())
    leaves = [chunk.reshape(shape) for chunk, shape in zip(chunks, shapes)]
    if from_dtypes is None:
        return leaves
    return [convert_element_type(leaf, dtype) for leaf, dtype in zip(leaves, from_dtypes)]


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3))
def _unravel(treedef: tree_util.PyTreeDef, shapes: Shapes, from_dtypes: Optional[tuple],
             to_dtype: np.dtype, flat: Any) -> Any:
    return tree_util.tree_unflatten(treedef, _unravel_leaves(shapes, from_dtypes, to_dtype,
                                                             flat))


def _unravel_fwd(treedef: tree_util.PyTreeDef, shapes: Shapes,
                 from_dtypes: Optional[tuple], to_dtype: np.dtype, flat: Any) -> tuple:
    return _unravel(treedef, shapes, from_dtypes, to_dtype, flat), None


def _unravel_bwd(treedef: tree_util.PyTreeDef, shapes: Shapes,
                 from_dtypes: Optional[tuple], to_dtype: np.dtype, residual: None,
                 g: Any) -> tuple:
    """The leaves' cotangents raveled, in the flat vector's dtype (with no conversions,
    the leaves' own: the vector's)."""
    leaf_bars = _cotangent_leaves(treedef, g)
    dtype = to_dtype
    if from_dtypes is None:
        dtype = next((jnp.result_type(x) for x in leaf_bars if x is not None), to_dtype)
    parts = [jnp.zeros((int(np.prod(shape)),), dtype) if leaf_bar is None
             else jnp.ravel(convert_element_type(leaf_bar, dtype))
             for leaf_bar, shape in zip(leaf_bars, shapes)]
    return (jnp.concatenate(parts),)


def _cotangent_leaves(treedef: tree_util.PyTreeDef, g: Any) -> list:
    """The leaf cotangents of a `treedef`-shaped cotangent `g`, None for a zero one (a None
    anywhere in `g` stands for zeros of that whole subtree)."""
    if g is None:
        return [None] * treedef.num_leaves
    if tree_util.treedef_is_leaf(treedef):
        return [g]
    children, _ = tree_util.flatten_one_level(g)
    out: list = []
    for child_def, child in zip(treedef.children(), children):
        out += _cotangent_leaves(child_def, child)
    return out


_unravel.defvjp(_unravel_fwd, _unravel_bwd)
