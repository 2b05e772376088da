"""vmap's API: in_axes / out_axes as pytree prefixes, keyword arguments, axis_size,
composition with grad / jvp / jacfwd / jacrev / jit, the generated source, and the errors
for bad input (naming the argument and the sizes)."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import lax, random, tree_util

rng = np.random.default_rng(3)
X = rng.standard_normal((4, 3)).astype(np.float32)
W = rng.standard_normal((3, 2)).astype(np.float32)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def predict(w, x):
    return jnp.tanh(x @ w)


def test_in_axes_none_and_out_axes():
    want = np.tanh(X @ W)
    close(jax.vmap(predict, in_axes=(None, 0))(W, X), want)
    close(jax.vmap(predict, in_axes=(None, 1))(W, X.T.copy()), want)
    close(jax.vmap(predict, in_axes=(None, -1), out_axes=1)(W, X.T.copy()), want.T)
    close(jax.vmap(predict, in_axes=[None, 0])(W, X), want)


def test_pytree_prefixes_and_kwargs():
    params = {"w": W, "b": np.ones((4, 2), np.float32)}

    def f(p, x, scale=1.0):
        return (x @ p["w"] + p["b"]) * scale, x.sum()

    out, total = jax.vmap(f, in_axes=({"w": None, "b": 0}, 0))(params, X)
    close(out, X @ W + 1.0)
    close(total, X.sum(1))
    scaled, _ = jax.vmap(f, in_axes=({"w": None, "b": 0}, 0))(
        params, X, scale=np.arange(4, dtype=np.float32))
    close(scaled, (X @ W + 1.0) * np.arange(4)[:, None])


def test_unbatched_output_is_broadcast_and_axis_size():
    close(jax.vmap(lambda x: 1.0)(X), np.ones(4))
    close(jax.vmap(lambda x: x * 2, in_axes=None, axis_size=3)(X[0]), np.stack([X[0] * 2] * 3))
    out = jax.vmap(lambda x: (x, jnp.zeros(2)), out_axes=(0, None))(X)
    close(out[1], np.zeros(2))


def test_composition_with_transforms():
    f = lambda w, x: jnp.sum(predict(w, x) ** 2)
    per_example = jax.vmap(jax.grad(f), in_axes=(None, 0))(W, X)
    close(per_example, np.stack([np.asarray(jax.grad(f)(W, x)) for x in X]))
    # grad, jvp, jacfwd, jacrev of a vmapped function
    g = lambda w: jnp.sum(jax.vmap(predict, in_axes=(None, 0))(w, X))
    close(jax.grad(g)(W), jax.grad(lambda w: jnp.sum(predict(w, X)))(W))
    out, tangent = jax.jvp(jax.vmap(jnp.sin), (X,), (np.ones_like(X),))
    close(out, np.sin(X))
    close(tangent, np.cos(X))
    close(jax.jacfwd(jax.vmap(jnp.sin))(X[0]), np.diag(np.cos(X[0])))
    close(jax.jacrev(jax.vmap(jnp.sin))(X[0]), np.diag(np.cos(X[0])))
    # vmap of jvp, of jacrev (scalar function), of a jitted function, under jit
    lin = jax.vmap(lambda t: jax.jvp(jnp.sin, (X[0],), (t,))[1])(np.eye(3, dtype=np.float32))
    close(lin, np.diag(np.cos(X[0])))
    close(jax.vmap(jax.jacrev(lambda x: jnp.sum(x ** 3)))(X), 3 * X ** 2)
    close(jax.vmap(jax.jit(jnp.cos))(X), np.cos(X))
    close(jax.jit(jax.vmap(jax.grad(f), in_axes=(None, 0)))(W, X), per_example)
    close(jax.jit(jax.grad(g))(W), jax.grad(g)(W))


def test_vmap_of_jacrev_vector_output():
    f = lambda x: jnp.sin(x) * x[0]
    want = np.stack([np.asarray(jax.jacrev(f)(x)) for x in X])
    close(jax.vmap(jax.jacrev(f))(X), want)
    close(jax.vmap(jax.jacfwd(f))(X), want)


def test_closures_and_nested_vmap():
    def outer(x):
        inner = jax.vmap(lambda y: jnp.sum(x * y))  # closes over the outer batch member
        return inner(X)
    want = X @ X.T
    close(jax.vmap(outer)(X), want)
    close(jax.jit(jax.vmap(outer))(X), want)


def test_tree_map_and_random_keys():
    def update(p, g):
        return tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)
    params = {"w": W, "b": np.zeros(2, np.float32)}
    grads = {"w": np.stack([W] * 4), "b": np.ones((4, 2), np.float32)}
    out = jax.vmap(update, in_axes=(None, 0))(params, grads)
    close(out["w"], np.stack([W * 0.9] * 4))
    close(out["b"], np.full((4, 2), -0.1))
    keys = random.split(random.PRNGKey(0), 4)
    samples = jax.vmap(lambda k: random.normal(k, (3,)))(keys)
    close(samples, np.stack([np.asarray(random.normal(k, (3,))) for k in keys]))


def test_source_reads_as_the_batched_program():
    src = jax.vmap(predict, in_axes=(None, 0)).source
    assert "def vmap_predict(w, x, *, x_b=None):" in src
    assert "# vmap of: test_vmap_api.py:" in src and "jnp.tanh(x @ w)" in src
    assert "bt.call(jnp.matmul, (x, w), (x_b, None))" in src


# --- bad input ------------------------------------------------------------------------------
def test_in_axes_structure_mismatch():
    with pytest.raises(jax.TranspileError, match=r"in_axes has 1 entries but the function was "
                                                 r"called with 2 positional arguments"):
        jax.vmap(predict, in_axes=(0,))(W, X)
    with pytest.raises(jax.TranspileError, match=r"argument `p` is a dict with keys \['b', 'w'\]"):
        jax.vmap(lambda p: p["w"], in_axes=({"w": 0},))({"w": W, "b": W})
    with pytest.raises(jax.TranspileError, match=r"in_axes for argument `p` is a tuple of "
                                                 r"length 2, but argument `p` is a dict"):
        jax.vmap(lambda p: p["w"], in_axes=((0, 0),))({"w": W})


def test_mapped_sizes_differ():
    with pytest.raises(jax.TranspileError, match=r"argument `w` axis 0 has size 3; argument "
                                                 r"`x` axis 0 has size 4"):
        jax.vmap(predict)(W, X)


def test_axis_out_of_range():
    with pytest.raises(jax.TranspileError, match=r"in_axes 2 is out of range for argument `x` "
                                                 r"of shape \(4, 3\) \(rank 2\)"):
        jax.vmap(predict, in_axes=(None, 2))(W, X)
    with pytest.raises(jax.TranspileError, match="a scalar has no axis to map"):
        jax.vmap(lambda s: s)(np.float32(1.0))


def test_batched_output_with_out_axes_none():
    with pytest.raises(jax.TranspileError, match=r"the output differs across the batch, but "
                                                 r"its out_axes is None"):
        jax.vmap(jnp.sin, out_axes=None)(X)


def test_python_if_on_batched_value():
    def f(x):
        if x.sum() > 0:
            return x
        return -x
    with pytest.raises(jax.TranspileError, match=r"a Python `if` or `while` at .*test_vmap_api"
                                                 r"\.py:\d+ tests a value that differs across"):
        jax.vmap(f)(X)
    close(jax.vmap(lambda x: lax.cond(x.sum() > 0, lambda v: v, lambda v: -v, x))(X),
          np.where(X.sum(1, keepdims=True) > 0, X, -X))


def test_no_mapped_argument():
    with pytest.raises(jax.TranspileError, match="no argument is mapped"):
        jax.vmap(predict, in_axes=None)(W, X)


def test_per_example_gradients_with_a_python_scalar_parameter():
    """JAX's "101/transformations" cell: vmap(grad(loss, (0, 1))) where b is a Python float
    and in_axes leaves the parameters unbatched."""
    x = np.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30]], np.float32)
    y = np.array([1.0, 1.0, 0.0], np.float32)
    w, b = np.array([1.0, 2.0, -1.0], np.float32), 0.5

    def loss(w, b, x, y):
        p = 1 / (1 + jnp.exp(-(jnp.dot(x, w) + b)))
        return -jnp.log(p * y + (1 - p) * (1 - y))
    w_grads, b_grads = jax.vmap(jax.grad(loss, (0, 1)), in_axes=(None, None, 0, 0))(w, b, x, y)
    for i in range(3):
        gw, gb = jax.grad(loss, (0, 1))(w, b, x[i], y[i])
        np.testing.assert_allclose(w_grads[i], gw, rtol=1e-5)
        np.testing.assert_allclose(b_grads[i], gb, rtol=1e-5)
    assert b_grads.shape == (3,) and b_grads.dtype == np.float32
