"""``lax.stop_gradient`` and ``custom_vjp`` under grad/vjp, eagerly and under jit."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler import lax

X = np.array([1.0, -2.0, 3.0, 0.25], np.float32)
Y = np.array([0.5, 1.5, -1.0, 2.0], np.float32)


def _close(got, want, rtol=1e-6):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=1e-6)


# --- stop_gradient ---------------------------------------------------------------------------

def times_stopped(x):
    return jnp.sum(x * lax.stop_gradient(x))


def only_stopped(x):
    return jnp.sum(lax.stop_gradient(x) ** 2)


def stopped_pytree(p):
    frozen = lax.stop_gradient(p)
    return jnp.sum(p["w"] * frozen["w"]) + jnp.sum(frozen["b"] * p["b"] * p["b"])


def test_stop_gradient_value_and_grad():
    _close(lax.stop_gradient(X), X)
    _close(tp.grad(times_stopped)(X), X)  # d/dx x * c = c, with c = stop_gradient(x) = x
    assert "stop_gradient" in tp.grad(times_stopped).source
    _close(tp.grad(only_stopped)(X), np.zeros_like(X))
    g = tp.grad(stopped_pytree)({"w": X, "b": Y})
    _close(g["w"], X)
    _close(g["b"], 2 * Y * Y)


def test_stop_gradient_keeps_ints_and_weak_types():
    ints = np.arange(3, dtype=np.int32)
    assert lax.stop_gradient(ints) is ints  # integers are never differentiated: unchanged
    weak = lax.stop_gradient(2.0)
    assert weak.dtype == np.float32 and weak.aval.weak_type


# --- custom_vjp --------------------------------------------------------------------------------

@tp.custom_vjp
def clip_gradient(x):
    """The identity, whose cotangent is clipped to [-1, 1]."""
    return x


def clip_fwd(x):
    return x, None


def clip_bwd(res, g):
    return (jnp.clip(g, -1.0, 1.0),)


clip_gradient.defvjp(clip_fwd, clip_bwd)


def clipped_loss(x):
    return jnp.sum(clip_gradient(x) * 3.0)


@tp.custom_vjp
def sin_times(x, y):
    return jnp.sin(x) * y


def sin_times_fwd(x, y):
    return sin_times(x, y), (jnp.cos(x), jnp.sin(x), y)


def sin_times_bwd(res, g):
    cos_x, sin_x, y = res
    return (cos_x * g * y * 2.0, sin_x * g)  # x's rule doubled on purpose: provably used


sin_times.defvjp(sin_times_fwd, sin_times_bwd)


def helper(a, b):
    return sin_times(a * b, b) + 1.0


def uses_helper(x, y):
    return jnp.sum(helper(x, y) * x)


def test_custom_rule_replaces_the_derivative():
    _close(clip_gradient(X), X)  # calling it runs the primal function
    _close(tp.grad(clipped_loss)(X), np.ones_like(X))  # 3 clipped to 1, not 3
    assert "ad.custom_vjp_bwd(clip_gradient" in tp.grad(clipped_loss).source
    _close(tp.grad(lambda x: jnp.sum(clip_gradient(x) * 0.5))(X), np.full_like(X, 0.5))


def test_custom_function_inside_a_helper():
    gx, gy = tp.grad(uses_helper, argnums=(0, 1))(X, Y)
    a = X * Y
    s = np.sin(a) * Y + 1.0
    # d/dx [sum(s * x)] = s + x * ds/da * y with ds/da = 2 cos(a) y (the doubled rule)
    _close(gx, s + X * 2 * np.cos(a) * Y * Y, rtol=1e-5)
    # ds/dy = ds/da * x + sin(a) (the rule's y cotangent)
    _close(gy, X * (2 * np.cos(a) * Y * X + np.sin(a)), rtol=1e-5)


def test_grad_of_a_custom_function_itself():
    x, y = np.float32(0.7), np.float32(1.3)
    gx, gy = tp.grad(sin_times, argnums=(0, 1))(x, y)
    _close(gx, 2 * np.cos(x) * y)
    _close(gy, np.sin(x))
    value, g = tp.value_and_grad(clip_gradient)(np.float32(2.0))
    _close(value, 2.0)
    _close(g, 1.0)
    assert "custom_vjp" in tp.grad(sin_times).source
    out, vjp_fn = tp.vjp(sin_times, X, Y)
    bx, by = vjp_fn(np.full_like(X, 3.0))
    _close(out, np.sin(X) * Y)
    _close(bx, 2 * np.cos(X) * 3.0 * Y, rtol=1e-5)
    _close(by, np.sin(X) * 3.0, rtol=1e-5)


@functools.partial(tp.custom_vjp, nondiff_argnums=(1,))
def scaled(x, k, y):
    return x * k + y


def scaled_fwd(x, k, y):
    return scaled(x, k, y), None


def scaled_bwd(k, res, g):
    return (g * k * 10.0, None)  # y gets no cotangent (None is zero)


scaled.defvjp(scaled_fwd, scaled_bwd)


def uses_scaled(x, y):
    return jnp.sum(scaled(x, 2.0, y=y))  # keyword argument: resolved to its position


def test_nondiff_argnums_and_keywords():
    gx, gy = tp.grad(uses_scaled, argnums=(0, 1))(X, Y)
    _close(gx, np.full_like(X, 20.0))
    _close(gy, np.zeros_like(Y))


@tp.custom_vjp
def half_norm(p):
    return 0.5 * jnp.sum(p["w"] ** 2) + p["b"]


half_norm.defvjp(lambda p: (half_norm(p), p["w"]),
                 lambda w, g: ({"w": g * w * 3.0, "b": None},))


def test_pytree_arguments():
    g = tp.grad(lambda p: half_norm(p) * 2.0)({"w": X, "b": np.float32(1.0)})
    _close(g["w"], 6.0 * X)
    _close(g["b"], 0.0)


def pair(x):
    return jnp.sin(x), jnp.cos(x)


custom_pair = tp.custom_vjp(pair)
custom_pair.defvjp(lambda x: (pair(x), x),
                   lambda x, g: (g[0] * jnp.cos(x) - g[1] * jnp.sin(x),))


def uses_first_of_pair(x):
    s, _ = custom_pair(x)
    return jnp.sum(s)


def apply_fn(fn, x):
    return jnp.sum(fn(x) * 2.0)


def test_unused_outputs_get_zero_cotangents_and_runtime_callees():
    _close(tp.grad(uses_first_of_pair)(X), np.cos(X), rtol=1e-5)  # bwd saw g[1] = zeros
    _close(tp.grad(apply_fn, argnums=1)(clip_gradient, X), np.ones_like(X))  # ad.vjp_call


def test_under_jit():
    grad_helper = tp.jit(tp.grad(uses_helper, argnums=(0, 1)))
    for got, want in zip(grad_helper(X, Y), tp.grad(uses_helper, argnums=(0, 1))(X, Y)):
        _close(got, want, rtol=1e-5)
    _close(tp.jit(tp.grad(clipped_loss))(X), np.ones_like(X))
    _close(tp.jit(tp.grad(times_stopped))(X), X)
    _close(tp.jit(tp.grad(sin_times))(np.float32(0.7), np.float32(1.3)),
           2 * np.cos(0.7) * 1.3, rtol=1e-5)


# --- errors ------------------------------------------------------------------------------------

@tp.custom_vjp
def no_rule(x):
    return x * 2.0


def uses_no_rule(x):
    return jnp.sum(no_rule(x))


@tp.custom_vjp
def two_args(x, y):
    return x * y


two_args.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (g * res[1],))


@tp.custom_vjp
def bad_shape(x):
    return x


bad_shape.defvjp(lambda x: (x, None), lambda res, g: (jnp.ones(7),))


@tp.custom_vjp
def not_a_tuple(x):
    return x


not_a_tuple.defvjp(lambda x: (x, None), lambda res, g: g)


def differentiates_nondiff(x):
    return jnp.sum(scaled(x, x, x))


def test_errors():
    assert np.allclose(np.asarray(no_rule(X)), X * 2)  # calling it needs no rule
    with pytest.raises(tp.TranspileError, match="no VJP defined for custom_vjp function "
                                                "no_rule"):
        tp.grad(uses_no_rule)(X)
    with pytest.raises(tp.TranspileError, match="defvjp was already called"):
        clip_gradient.defvjp(clip_fwd, clip_bwd)
    with pytest.raises(tp.TranspileError, match="two_args.*returned 1 cotangents, but "
                                                "two_args has 2") as info:
        tp.grad(two_args)(np.float32(1.0), np.float32(2.0))
    assert info.value.file == __file__  # at the bwd rule's definition
    with pytest.raises(tp.TranspileError, match=r"bad_shape.*shape \(7,\).*shape \(4,\)"):
        tp.grad(lambda x: jnp.sum(bad_shape(x)))(X)
    with pytest.raises(tp.TranspileError, match="not_a_tuple.*must return a tuple"):
        tp.grad(not_a_tuple)(np.float32(1.0))
    with pytest.raises(tp.TranspileError, match="nondiff_argnums") as info:
        tp.grad(differentiates_nondiff)(X)
    assert info.value.line is not None


# --- against JAX -------------------------------------------------------------------------------

def test_matches_jax():
    jax = pytest.importorskip("jax")
    jjnp = jax.numpy

    @jax.custom_vjp
    def j_sin_times(x, y):
        return jjnp.sin(x) * y

    j_sin_times.defvjp(lambda x, y: (j_sin_times(x, y), (jjnp.cos(x), jjnp.sin(x), y)),
                       lambda res, g: (res[0] * g * res[2] * 2.0, res[1] * g))

    def j_uses_helper(x, y):
        return jjnp.sum((j_sin_times(x * y, y) + 1.0) * x)

    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def j_scaled(x, k, y):
        return x * k + y

    j_scaled.defvjp(lambda x, k, y: (j_scaled(x, k, y), None),
                    lambda k, res, g: (g * k * 10.0, None))

    def j_uses_scaled(x, y):
        return jjnp.sum(j_scaled(x, 2.0, y))

    def j_times_stopped(x):
        return jjnp.sum(x * jax.lax.stop_gradient(x))

    checks = [(tp.grad(uses_helper, (0, 1)), jax.grad(j_uses_helper, (0, 1)), (X, Y)),
              (tp.grad(uses_scaled, (0, 1)), jax.grad(j_uses_scaled, (0, 1)), (X, Y)),
              (tp.grad(times_stopped, (0,)), jax.grad(j_times_stopped, (0,)), (X,))]
    for ours, theirs, args in checks:
        for got, want in zip(ours(*args), theirs(*args)):
            assert np.asarray(got).dtype == want.dtype
            _close(got, want, rtol=1e-5)
    got = lax.stop_gradient(2.0)
    want = jjnp.asarray(jax.lax.stop_gradient(2.0))
    assert got.dtype == want.dtype and got.aval.weak_type == want.weak_type


def test_custom_jvp_of_a_pytree_argument_in_reverse_mode():
    """A custom_jvp rule over a tuple or NamedTuple argument (the custom derivative rules
    page's `Point`): reverse mode gets each leaf's cotangent, never zeros."""
    import collections

    @tp.custom_jvp
    def g(d):
        return d[0] ** 2 * d[1]

    @g.defjvp
    def g_jvp(primals, tangents):
        (d,), (dd,) = primals, tangents
        return g(d), 2 * d[0] * d[1] * dd[0] + d[0] ** 2 * dd[1]

    Point = collections.namedtuple("Point", "x y")
    outer = lambda d: g(d) * 3.0  # noqa: E731  (called inside a differentiated function)
    for arg in ((1.5, 2.0), Point(1.5, 2.0)):
        for transform, scale in ((tp.grad(g), 1.0), (tp.grad(outer), 3.0),
                                 (tp.jit(tp.grad(g)), 1.0)):
            grads = transform(arg)
            np.testing.assert_allclose([float(v) for v in grads], [6.0 * scale, 2.25 * scale],
                                       rtol=1e-6)
            assert type(grads) is type(arg)
