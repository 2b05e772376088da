"""The programs corpus through grad: eager against float64 finite differences, and
jit(grad) against eager grad."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
from transpiler import tree_util
from tests.programs.corpus import PROGRAMS, Program


def _nums(p: Program) -> tuple:
    return (p.argnums,) if isinstance(p.argnums, int) else tuple(p.argnums)


def _scalar(p: Program, args: tuple) -> float:
    import transpiler.numpy as jnp
    arrays = tree_util.tree_map(lambda x: jnp.asarray(x) if isinstance(x, np.ndarray) else x,
                                args)
    out = p.fn(*arrays)
    return float(np.asarray(out[0] if p.has_aux else out))


def _to64(x):
    if isinstance(x, np.ndarray) and x.dtype == np.float32:
        return x.astype(np.float64)
    return x


def finite_differences(p: Program, args: tuple, i: int, eps: float = 1e-6) -> list:
    leaves, tree = tree_util.tree_flatten(args[i])
    grads = []
    for k, leaf in enumerate(leaves):
        g = np.zeros(leaf.shape)
        for idx in np.ndindex(leaf.shape):
            vals = []
            for sign in (1, -1):
                moved = [l.copy() for l in leaves]
                moved[k][idx] += sign * eps
                new_args = list(args)
                new_args[i] = tree_util.tree_unflatten(tree, moved)
                vals.append(_scalar(p, tuple(new_args)))
            g[idx] = (vals[0] - vals[1]) / (2 * eps)
        grads.append(g)
    return grads


def _pending(program: Program) -> None:
    """Programs that need a capability not built yet fail with a clear TranspileError."""
    if program.pending:
        with pytest.raises(tp.TranspileError, match=program.pending):
            tp.grad(program.fn, argnums=program.argnums)(*program.args)
        pytest.skip(f"pending: {program.pending}")


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_grad_matches_finite_differences(program, monkeypatch):
    _pending(program)
    monkeypatch.setattr(tp.config, "enable_x64", True)
    args = tree_util.tree_map(_to64, program.args)
    g = tp.grad(program.fn, argnums=program.argnums, has_aux=program.has_aux)(*args)
    if program.has_aux:
        g, _ = g
    grads = (g,) if isinstance(program.argnums, int) else g
    for i, gi in zip(_nums(program), grads):
        want = finite_differences(program, args, i)
        got = [np.asarray(leaf) for leaf in tree_util.tree_leaves(gi)]
        assert len(got) == len(want)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=program.name)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_jit_grad_matches_eager(program):
    _pending(program)
    static = tuple(i for i, a in enumerate(program.args)
                   if isinstance(a, (bool, int)) and not isinstance(a, float))
    grad_fn = tp.grad(program.fn, argnums=program.argnums, has_aux=program.has_aux)
    eager = grad_fn(*program.args)
    staged = tp.jit(grad_fn, static_argnums=static)(*program.args)
    for a, b in zip(tree_util.tree_leaves(eager), tree_util.tree_leaves(staged)):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=2e-5, atol=1e-6,
                                   err_msg=program.name)
