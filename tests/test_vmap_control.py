"""`vmap` of lax control flow (transforms/bt/control.py): `cond`, `switch`,
`while_loop`, `fori_loop`, `scan`, `map`, with batched and unbatched selectors, loop
bounds and carries, closures over batched values, and per-example derivatives through
them, each against a Python loop over the batch members running the unbatched function;
eagerly and under ``jit(vmap(...))``. Several cases share one jitted function (each jit
compile costs about a second)."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import lax, tree_util
from transpiler.errors import TranspileError

B = 3
_rng = np.random.default_rng(11)
X = _rng.normal(size=(B, 4)).astype(np.float32)


def _loop(f, args, in_axes):
    """The oracle: `f` on each member, the results stacked."""
    def member(a, axis, i):
        return a if axis is None else np.take(a, i, axis=axis)
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*[member(a, ax, i) for a, ax in zip(args, in_axes)]) for i in range(size)]
    return tree_util.tree_map(lambda *o: np.stack([np.asarray(v) for v in o]), *outs)


def _close(got, want, tol=1e-4):
    got_leaves, got_tree = tree_util.tree_flatten(got)
    want_leaves, want_tree = tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(np.asarray(g), w, rtol=tol, atol=tol)


def _check(f, *args, in_axes=0, jit=True):
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    want = _loop(f, args, axes)
    _close(jax.vmap(f, in_axes=in_axes)(*args), want)
    if jit:
        _close(jax.jit(jax.vmap(f, in_axes=in_axes))(*args), want)


# --- cond / switch --------------------------------------------------------------------------
def _cond_shared_pred(x, p):
    """Unbatched predicate: the branches disagree on which outputs are batched."""
    a = lax.cond(p > 0, lambda v: (v * 2, 1.0, jnp.ones(4)), lambda v: (-v, 2.0, v), x)
    b = lax.cond(True, lambda v: v + 1, lambda v: v - 1, x)  # a Python predicate
    y = x * 3
    c = lax.cond(p > 0, lambda: y + 1, lambda: y - x)  # closures over batched values
    return a, b, c


def test_cond_unbatched_predicate():
    _check(_cond_shared_pred, X, np.float32(1.0), in_axes=(0, None))
    _check(_cond_shared_pred, X, np.float32(-1.0), in_axes=(0, None))


def _cond_batched_pred(x):
    a = lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: -v, x)
    y = x * 3
    b = lax.cond(x[0] > 0, lambda: (y + 1, x[1]), lambda: (y * x, 2.0))  # closures
    c = lax.cond(x[1], lambda v: v.sum(), lambda v: v.max(), x)  # a float predicate
    return a, b, c


def test_cond_batched_predicate():
    _check(_cond_batched_pred, X)


def _switch(x, i):
    branches = [lambda v: v * 2, lambda v: -v, lambda v: v + 10]
    k = jnp.astype(x[0] > 0, jnp.int32) + jnp.astype(x[1] > 0, jnp.int32)
    return lax.switch(i, branches, x), lax.switch(k, branches, x)


def test_switch():
    _check(_switch, X, np.int32(2), in_axes=(0, None))  # unbatched (traced) index
    _check(_switch, X, np.array([-1, 1, 7], np.int32))  # batched index, clamped


# --- loops ----------------------------------------------------------------------------------
def _while(x):
    n = jnp.floor(jnp.abs(x[0]) * 3) + 1  # a different trip count for each member
    a = lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.5), (0.0, x))
    b = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 1.5 + c[0]), (0, x))
    step = jnp.abs(x[1]) + 0.5  # the body makes an unbatched carry batched
    c = lax.while_loop(lambda c: c < 5.0, lambda c: c + step, 0.0)
    d = lax.while_loop(lambda c: c[0] < n * 10, lambda c: (c[0] + 1, c[1] + x),
                       (0.0, jnp.zeros(4)), max_iters=4)
    return a, b, c, d


def test_while_loop():
    _check(_while, X)


def _fori(x, n):
    a = lax.fori_loop(0, 4, lambda i, c: c * 0.5 + i, x)
    b = lax.fori_loop(0, 5, lambda i, c: c + x[i % 4] * i, 0.0)  # a closure over x
    c = lax.fori_loop(1, n, lambda i, c: c * 0.5 + x[0] * i, x)  # batched upper bound
    return a, b, c


def test_fori_loop():
    _check(_fori, X, np.array([0, 3, 5], np.int32))


def _scan(x, init):
    c1, ys1 = lax.scan(lambda c, xi: (c * 0.5 + xi, c * xi), 0.0, x)
    c2, ys2 = lax.scan(lambda c, xi: (c * xi, (c + 1, xi)), init, jnp.arange(4.0),
                       reverse=True)
    ys3 = lax.map(lambda v: jnp.sin(v) * init, x)
    return c1, ys1, c2, ys2, ys3


def test_scan_and_map():
    # x batched along axis 1 (scan iterates over axis 0 of each member's x)
    _check(_scan, np.ascontiguousarray(X.T), np.array([1.0, 2.0, 3.0], np.float32),
           in_axes=(1, 0))


def test_nested_vmap():
    xs = _rng.normal(size=(2, B, 4)).astype(np.float32)

    def f(x):
        return lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: -v, x), \
            lax.fori_loop(0, 3, lambda i, c: c * 0.5 + x, x)

    want = tree_util.tree_map(lambda *o: np.stack(o), *[_loop(f, (xs[i],), (0,))
                                                         for i in range(2)])
    _close(jax.vmap(jax.vmap(f))(xs), want)


# --- derivatives ----------------------------------------------------------------------------
def _loss(w):
    a = lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * w + c, w).sum()
    v = w * 2
    b = lax.cond(w[0] > 0, lambda: (v ** 2).sum(), lambda: jnp.sin(v).sum() * w[1])
    return a + b


def _loss_loops(w):
    c, ys = lax.scan(lambda c, xi: (c * xi + 1.0, c * w[0]), 1.0, w)
    k = jnp.astype(w[0] > 0, jnp.int32) + jnp.astype(w[1] > 0, jnp.int32)
    s = lax.switch(k, [lambda u: (u ** 2).sum(), lambda u: jnp.sin(u).sum(),
                       lambda u: u.sum() * 3], w)
    m = lax.map(lambda u: jnp.sin(u) * w[0], w).sum()
    return c + ys.sum() + s + m + _loss_while(w)


def _loss_while(w):
    """A different trip count per member, bounded (reverse mode under jit needs it)."""
    return lax.while_loop(lambda c: c[1].sum() < 10.0, lambda c: (c[0] + 1, c[1] * 1.5 + w),
                          (0, jnp.abs(w)), max_iters=20)[1].sum()


def _per_example(loss, jit):
    want = _loop(jax.grad(loss), (X,), (0,))
    got = jax.vmap(jax.grad(loss))(X)
    _close(got, want)
    if jit:
        _close(jax.jit(jax.vmap(jax.grad(loss)))(X), want)




def test_per_example_gradients():
    _per_example(_loss, jit=True)
    _per_example(_loss_while, jit=True)
    _per_example(_loss_loops, jit=False)


def test_per_example_gradient_of_unbounded_while():
    def loss(w):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * w),
                              (0, w))[1].sum()
    _per_example(loss, jit=False)  # eagerly: the batch's trip count is known


def test_forward_mode():
    def tangent(loss):
        return lambda w: jax.jvp(loss, (w,), (jnp.ones_like(w),))[1]
    _check(tangent(_loss), X)

    def loops(w):
        s = lax.switch(jnp.astype(w[0] > 0, jnp.int32), [lambda u: u * 2, jnp.sin], w)
        m = lax.map(lambda u: jnp.sin(u) * w[0], w)
        n = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * w), (0, w))[1]
        c, ys = lax.scan(lambda c, xi: (c * xi + 1.0, c * w[0]), 1.0, w)
        return s + m + n + c + ys
    _check(tangent(loops), X, jit=False)


# --- errors ---------------------------------------------------------------------------------
def test_errors():
    with pytest.raises(TranspileError, match="pred must be a scalar"):
        jax.vmap(lambda x: lax.cond(x > 0, lambda v: v, lambda v: -v, x))(X)
    with pytest.raises(TranspileError, match="must return the structure"):
        jax.vmap(lambda x: lax.fori_loop(0, 2, lambda i, c: (c, c), x))(X)
    with pytest.raises(TypeError, match="same structure"):
        jax.vmap(lambda x: lax.cond(x[0] > 0, lambda v: v, lambda v: (v, v), x))(X)
