"""`lax.scan` under jit runs several steps per loop iteration (JAX's `unroll` hint, or by
the body's size when it is not given): the results, the stacked outputs' order and
dtypes, and the derivatives must be those of the rolled loop, of a Python loop and of
float64 finite differences, for every split of the steps into iterations and a
remainder, forward and reversed."""

from __future__ import annotations

import re

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler import lax, tree_util
from tests.oracles import finite_differences


def _step(c, x):
    """A carry pair and pytree outputs of three dtypes (one weakly typed)."""
    h, k = c
    h = jnp.tanh(h * 0.9 + x["a"]) + 0.1 * x["b"]
    return (h, k + 1), {"h": h, "k": k, "w": jnp.sum(h) * 2.0}


def _python_loop(c, xs, reverse):
    n = len(xs["a"])
    ys = [None] * n
    for i in (range(n - 1, -1, -1) if reverse else range(n)):
        c, ys[i] = _step(c, {"a": xs["a"][i], "b": xs["b"][i]})
    stacked = {k: np.stack([np.asarray(y[k]) for y in ys]) for k in ys[0]}
    return c, stacked


def _inputs(n):
    rng = np.random.default_rng(n)
    xs = {"a": rng.normal(size=(n, 3)).astype(np.float32),
          "b": rng.normal(size=(n, 3)).astype(np.float32)}
    return (np.zeros(3, np.float32), np.int32(0)), xs


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("n,unroll", [(17, 1), (40, 1), (17, 3), (40, 8), (19, True),
                                      (17, 100), (20, 5), (18, False), (16, 0)])
def test_unrolled_scan_matches_the_python_loop(n, unroll, reverse):
    init, xs = _inputs(n)

    def f(init, xs):
        return lax.scan(_step, init, xs, reverse=reverse, unroll=unroll)

    (h, k), ys = tp.jit(f)(init, xs)
    (h_ref, k_ref), ys_ref = _python_loop(init, xs, reverse)
    np.testing.assert_allclose(np.asarray(h), np.asarray(h_ref), rtol=1e-5, atol=1e-6)
    assert int(k) == n
    for key in ("h", "k", "w"):
        got, want = np.asarray(ys[key]), np.asarray(ys_ref[key])
        assert got.shape == want.shape and got.dtype == want.dtype, key
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    eager = f(init, xs)
    for a, b in zip(tree_util.tree_leaves(eager), tree_util.tree_leaves(((h, k), ys))):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n,unroll,iterations", [(40, 8, 5), (43, 8, 5), (40, 1, 5),
                                                 (12, 1, 12), (40, False, 40)])
def test_the_loop_runs_steps_per_iteration(n, unroll, iterations):
    """The while loop's trip count is ``n // steps`` (the body is small: 8 steps by
    default from 16 steps on); ``unroll=True`` leaves no loop at all."""
    init, xs = _inputs(n)
    text = tp.jit(lambda i, x: lax.scan(_step, i, x, unroll=unroll)).lower(init, xs).as_text()
    assert len(re.findall(r"stablehlo\.while", text)) == 1
    cond = text.split("cond {")[1].split("}")[0]
    assert f"dense<{iterations}>" in cond
    full = tp.jit(lambda i, x: lax.scan(_step, i, x, unroll=True)).lower(init, xs).as_text()
    assert "stablehlo.while" not in full


def _rnn_loss(w, xs, unroll, reverse):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h * h
    h, ys = lax.scan(step, jnp.zeros(w.shape[0], w.dtype), xs, unroll=unroll,
                     reverse=reverse)
    return jnp.sum(ys) + jnp.sum(h)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [1, 4, False])
def test_gradient_of_an_unrolled_scan_matches_finite_differences(unroll, reverse):
    rng = np.random.default_rng(0)
    w = (rng.normal(size=(4, 4)) * 0.5).astype(np.float32)
    xs = rng.normal(size=(21, 4)).astype(np.float32)
    grad = tp.jit(tp.grad(_rnn_loss, argnums=(0, 1)), static_argnums=(2, 3))
    gw, gx = grad(w, xs, unroll, reverse)
    rolled = tp.jit(tp.grad(_rnn_loss, argnums=(0, 1)), static_argnums=(2, 3))(
        w, xs, False, reverse)

    def loss64(w, xs):
        h, total = np.zeros(4), 0.0
        for t in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
            h = np.tanh(h @ w + xs[t])
            total += np.sum(h * h)
        return total + np.sum(h)

    want_w = finite_differences(lambda v: loss64(v, xs.astype(np.float64)),
                                w.astype(np.float64))
    want_x = finite_differences(lambda v: loss64(w.astype(np.float64), v),
                                xs.astype(np.float64))
    np.testing.assert_allclose(np.asarray(gw), want_w, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(np.asarray(gx), want_x, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(np.asarray(gw), np.asarray(rolled[0]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(rolled[1]), rtol=1e-5, atol=1e-6)


def test_hessian_and_vmap_through_an_unrolled_scan_match_eager():
    rng = np.random.default_rng(1)
    w = (rng.normal(size=(3, 3)) * 0.5).astype(np.float32)
    xs = rng.normal(size=(18, 3)).astype(np.float32)
    hess = tp.hessian(lambda w: _rnn_loss(w, xs, 1, False))
    np.testing.assert_allclose(np.asarray(tp.jit(hess)(w)), np.asarray(hess(w)),
                               rtol=1e-4, atol=1e-5)
    batched = tp.vmap(lambda x: _rnn_loss(w, x, 1, True))
    stack = np.stack([xs, xs * 0.5])
    np.testing.assert_allclose(np.asarray(tp.jit(batched)(stack)),
                               [_rnn_loss(w, x, False, True) for x in stack], rtol=1e-5)


def test_jax_agrees_on_an_unrolled_reverse_scan_gradient():
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(2)
    w = (rng.normal(size=(4, 4)) * 0.5).astype(np.float32)
    xs = rng.normal(size=(30, 4)).astype(np.float32)

    def jax_loss(w, xs):
        def step(h, x):
            h = jax.numpy.tanh(h @ w + x)
            return h, h * h
        h, ys = jax.lax.scan(step, jax.numpy.zeros(4), xs, reverse=True, unroll=4)
        return jax.numpy.sum(ys) + jax.numpy.sum(h)

    ours = tp.jit(tp.grad(_rnn_loss, argnums=(0, 1)), static_argnums=(2, 3))(w, xs, 4, True)
    theirs = jax.grad(jax_loss, argnums=(0, 1))(w, xs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def test_unrolled_scan_without_xs_counts_its_steps():
    f = tp.jit(lambda c: lax.scan(lambda c, _: (c + 1, c * 2), c, None, length=21))
    carry, ys = f(np.int32(3))
    assert int(carry) == 24
    np.testing.assert_array_equal(np.asarray(ys), 2 * np.arange(3, 24))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("n,width", [(96, 600), (256, 1000), (34, 1200)])
def test_scans_with_large_outputs_split_into_levels_and_keep_their_order(n, width, reverse):
    """Stacked outputs over 64 KiB run as a short outer scan of inner scans (lax/loops.py's
    `_segment_length`: 96 = 4 x 24, 256 = 4 x 4 x 16, 34 = 2 x 17): the values and their
    order are a Python loop's, the gradient the rolled scan's."""
    rng = np.random.default_rng(n)
    xs = rng.normal(size=(n, width)).astype(np.float32)

    def f(h0, xs, unroll):
        def step(h, x):
            h = jnp.tanh(0.9 * h + x)
            return h, h * 2.0
        return lax.scan(step, h0, xs, reverse=reverse, unroll=unroll)

    h0 = np.zeros(width, np.float32)
    h, ys = tp.jit(f, static_argnums=2)(h0, xs, 1)
    want, rows = h0.astype(np.float64), [None] * n
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        want = np.tanh(0.9 * want + xs[t])
        rows[t] = want * 2.0
    np.testing.assert_allclose(np.asarray(h), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ys), np.stack(rows), rtol=1e-5, atol=1e-6)

    def loss(xs, unroll):
        return jnp.sum(f(h0, xs, unroll)[1] ** 2)

    split = tp.jit(tp.grad(loss), static_argnums=1)(xs, 1)
    rolled = tp.jit(tp.grad(loss), static_argnums=1)(xs[:], False)
    np.testing.assert_allclose(np.asarray(split), np.asarray(rolled), rtol=1e-5, atol=1e-6)
