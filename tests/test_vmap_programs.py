"""The programs corpus through vmap: every program batched over its array arguments,
per-example gradients (``vmap(grad(f))``), and two nested batches, each against a Python
loop over the batch members; eager and under jit."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
from transpiler import tree_util
from tests.programs.corpus import PROGRAMS, Program

B = 3
_rng = np.random.default_rng(7)


def _batched(x, size: int = B):
    """`x` stacked `size` times along a new axis 0, each member perturbed."""
    return tree_util.tree_map(lambda a: np.stack([a + (0.1 * k if a.dtype.kind == "f" else 0)
                                                  for k in range(size)]).astype(a.dtype), x)


def _is_data(x) -> bool:
    leaves = tree_util.tree_leaves(x)
    return bool(leaves) and all(isinstance(a, np.ndarray) for a in leaves)


def _member(tree, i):
    return tree_util.tree_map(lambda a: a[i], tree)


def _stack(outs):
    return tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *outs)


def _close(got, want, tol=2e-4):
    got_leaves, got_tree = tree_util.tree_flatten(got)
    want_leaves, want_tree = tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)


def _setup(p: Program):
    if p.pending:
        pytest.skip(f"pending: {p.pending}")
    axes = tuple(0 if _is_data(a) else None for a in p.args)
    args = tuple(_batched(a) if ax == 0 else a for a, ax in zip(p.args, axes))
    return axes, args


def _loop(fn, axes, args, size=B):
    import transpiler.numpy as jnp
    arrays = tuple(tree_util.tree_map(jnp.asarray, a) if ax == 0 else a
                   for a, ax in zip(args, axes))
    return _stack([fn(*(_member(a, i) if ax == 0 else a for a, ax in zip(arrays, axes)))
                   for i in range(size)])


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_vmap_matches_loop(program):
    axes, args = _setup(program)
    want = _loop(program.fn, axes, args)
    batched = tp.vmap(program.fn, in_axes=axes)
    _close(batched(*args), want)
    static = [i for i, ax in enumerate(axes) if ax is None]
    _close(tp.jit(batched, static_argnums=static)(*args), want)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_per_example_gradients(program):
    """vmap(grad(f)) over the arguments that are not differentiated."""
    axes, args = _setup(program)
    nums = (program.argnums,) if isinstance(program.argnums, int) else program.argnums
    axes = tuple(None if i in nums else ax for i, ax in enumerate(axes))
    if all(ax is None for ax in axes):
        axes = (0,) + axes[1:]  # nothing else to batch: batch the differentiated one
    args = tuple(a if ax == 0 else p for a, p, ax in zip(args, program.args, axes))
    grad = tp.grad(program.fn, argnums=program.argnums, has_aux=program.has_aux)
    want = _loop(grad, axes, args)
    batched = tp.vmap(grad, in_axes=axes)
    _close(batched(*args), want)
    static = [i for i, a in enumerate(args) if not _is_data(a)]
    _close(tp.jit(batched, static_argnums=static)(*args), want)


@pytest.mark.parametrize("program", PROGRAMS[:12], ids=lambda p: p.name)
def test_nested_vmap(program):
    axes, _ = _setup(program)
    args = tuple(_batched(_batched(a, 2)) if ax == 0 else a for a, ax in zip(program.args, axes))
    inner = tp.vmap(program.fn, in_axes=axes)
    want = _stack([_loop(program.fn, axes, tuple(_member(a, i) if ax == 0 else a
                                                 for a, ax in zip(args, axes)), 2)
                   for i in range(B)])
    outer = tp.vmap(inner, in_axes=axes)
    _close(outer(*args), want)
    static = [i for i, ax in enumerate(axes) if ax is None]
    _close(tp.jit(outer, static_argnums=static)(*args), want)
