"""Reverse mode through `lax.while_loop` under jit with no bound (JAX has none): the
forward loop stores a checkpoint per block of steps, the backward loop computes each
block's carries again (transforms/ad/control.py's `_checkpointed_while_vjp`). Checked
against the eager gradient (whose trip count is known), float64 finite differences, the
bounded (`max_iters`) and the static (`fori_loop`) algorithms, at trip counts around the
block boundaries and across many checkpoint groups; a loop longer than the checkpoints
hold stops with an error, never a wrong derivative."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler import lax, tree_util
from tests.oracles import finite_differences


def _loss(x, a, n):
    """A carry pair (array, int count) whose trip count `n` is a traced value; the body
    closes over the differentiated `a`."""
    def body(c):
        return c[0] * a + 0.05 * jnp.cos(c[0]), c[1] + 1
    x_out, count = lax.while_loop(lambda c: c[1] < n, body, (x, 0))
    return jnp.sum(x_out ** 2) + 0.0 * count


def _loss64(x, a, n):
    for _ in range(n):
        x = x * a + 0.05 * np.cos(x)
    return float(np.sum(x ** 2))


@pytest.mark.parametrize("trips", [0, 1, 7, 8, 9, 64, 300, 1100])
def test_gradient_matches_eager_and_finite_differences(trips):
    x = np.array([0.3, -0.5, 0.8], np.float32)
    a = np.float32(0.999)
    grad = tp.jit(tp.grad(_loss, argnums=(0, 1)))
    gx, ga = grad(x, a, np.int32(trips))
    ex, ea = tp.grad(_loss, argnums=(0, 1))(x, a, trips)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(ex), rtol=2e-4, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ga), np.asarray(ea), rtol=2e-4, atol=1e-6)
    x64, a64 = x.astype(np.float64), float(a)
    want_x = finite_differences(lambda v: _loss64(v, a64, trips), x64)
    want_a = finite_differences(lambda v: _loss64(x64, float(v), trips), np.float64(a64))
    np.testing.assert_allclose(np.asarray(gx), want_x, rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose(float(ga), want_a, rtol=2e-3, atol=1e-4)


def test_condition_on_the_carry_and_pytree_carries():
    """The trip count depends on the differentiated value itself; the carry is a dict
    with an integer leaf. The derivative is that of the loop that ran."""
    def f(x):
        def body(c):
            return {"v": c["v"] * 1.5 + jnp.sin(c["v"]), "k": c["k"] + 2}
        out = lax.while_loop(lambda c: jnp.sum(c["v"]) < 40.0, body, {"v": x, "k": 0})
        return jnp.sum(out["v"] ** 2) / out["k"]

    x = np.array([0.2, 0.4], np.float32)
    np.testing.assert_allclose(np.asarray(tp.jit(tp.grad(f))(x)), np.asarray(tp.grad(f)(x)),
                               rtol=2e-4, atol=1e-6)
    value, grads = tp.jit(tp.value_and_grad(f))(x)
    assert np.isfinite(float(value)) and np.all(np.isfinite(np.asarray(grads)))


def test_agrees_with_the_bounded_and_the_static_algorithms():
    x = np.linspace(-1.0, 1.0, 50).astype(np.float32)
    a = np.float32(1.002)

    def body(c):
        return c[0] * a + 0.01 * jnp.cos(c[0]), c[1] + 1

    def unbounded(x, n):
        return jnp.sum(lax.while_loop(lambda c: c[1] < n, body, (x, 0))[0] ** 2)

    def bounded(x, n):
        return jnp.sum(lax.while_loop(lambda c: c[1] < n, body, (x, 0),
                                      max_iters=500)[0] ** 2)

    def static(x):
        return jnp.sum(lax.fori_loop(0, 437, lambda i, c: body(c), (x, 0))[0] ** 2)

    n = np.int32(437)
    ours = np.asarray(tp.jit(tp.grad(unbounded))(x, n))
    np.testing.assert_allclose(ours, np.asarray(tp.jit(tp.grad(bounded))(x, n)), rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(ours, np.asarray(tp.jit(tp.grad(static))(x)), rtol=1e-4,
                               atol=1e-6)


def test_a_loop_longer_than_the_checkpoints_hold_stops_with_an_error(monkeypatch):
    from transpiler.transforms.ad import control
    monkeypatch.setattr(control, "CHECKPOINT_BYTES", 1)  # 2 groups of 4 blocks of 8 steps

    def f(x):
        return lax.while_loop(lambda v: v < 1e30, lambda v: v * 2.0, x)

    grad = tp.jit(tp.grad(f))
    assert float(grad(jnp.asarray(2.0 ** 90))) == 2.0 ** 10  # 10 trips fit
    with pytest.raises(RuntimeError, match="more than the 64 trips its checkpoints hold"):
        grad(jnp.asarray(1.5))  # 100 trips do not


def test_higher_orders_are_clear_errors():
    x, a = np.array([0.3, 0.5], np.float32), np.float32(1.01)
    with pytest.raises(tp.TranspileError, match="not read by reverse mode"):
        tp.jit(tp.grad(tp.grad(_loss, argnums=1), argnums=1))(x, a, np.int32(5))
    with pytest.raises(tp.TranspileError, match="not read by forward mode"):
        tp.jit(tp.hessian(_loss))(x, a, np.int32(5))
    with pytest.raises(tp.TranspileError, match="give the loop a bound"):
        tp.jit(tp.vmap(tp.grad(_loss), (0, None, None), axis_name="i"))(
            np.stack([x, x]), a, np.int32(5))
    leaves = tree_util.tree_leaves(tp.grad(tp.grad(_loss, argnums=1), argnums=1)(x, a, 5))
    assert np.all(np.isfinite(np.asarray(leaves[0])))  # eagerly a second order works


@pytest.mark.parametrize("argnums", [0, 1])
def test_vmap_of_the_gradient_under_jit(argnums):
    """Per-example gradients through a while loop whose trip count is traced (each member
    differentiated with its checkpoints, one member at a time) equal a loop of gradients."""
    x, a = np.array([0.3, 0.5], np.float32), np.float32(1.01)
    xs = np.stack([x, x * 0.5, -x])
    got = tp.jit(tp.vmap(tp.grad(_loss, argnums=argnums), (0, None, None)))(xs, a, np.int32(5))
    want = np.stack([np.asarray(tp.grad(_loss, argnums=argnums)(r, a, np.int32(5)))
                     for r in xs])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_a_refusal_names_the_line_of_each_call():
    """Generated code is cached and shared: a refusal the transform found while generating
    it names the line that reaches it in each run, not the first caller's."""
    x, a = np.array([0.3, 0.5], np.float32), np.float32(1.01)
    with pytest.raises(tp.TranspileError) as first:
        tp.jit(tp.hessian(_loss))(x, a, np.int32(5))
    with pytest.raises(tp.TranspileError) as second:
        tp.jit(tp.hessian(_loss))(x, a, np.int32(5))
    assert first.value.file == second.value.file == __file__
    assert second.value.line == first.value.line + 2
