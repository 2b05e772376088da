"""`transpiler.example_libraries` (stax, optimizers), `nn.initializers`, `device_put` and
`scipy.special`: what JAX's example programs are written with. Oracles: JAX's own
`example_libraries` where JAX is installed (skipped otherwise), float64 finite differences
for gradients through stax networks, and the optimizers' update formulas."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tp
import transpiler.numpy as jnp
from transpiler import lax, random
from transpiler.example_libraries import optimizers, stax
from transpiler.nn import initializers

F32 = np.float32
PARAMS = {"w": np.array([[0.5, -1.0], [2.0, 0.25]], F32), "b": (np.array([0.1, -0.2], F32),)}
GRADS = [{"w": np.array([[0.3, 0.1], [-0.2, 0.4]], F32) * (k + 1),
          "b": (np.array([0.05, -0.5], F32) / (k + 1),)} for k in range(3)]
OPTIMIZERS = {
    "sgd": lambda o: o.sgd(0.1),
    "sgd_schedule": lambda o: o.sgd(o.exponential_decay(0.1, 2, 0.5)),
    "momentum": lambda o: o.momentum(0.1, mass=0.9),
    "nesterov": lambda o: o.nesterov(0.1, 0.9),
    "adagrad": lambda o: o.adagrad(0.1),
    "rmsprop": lambda o: o.rmsprop(0.05),
    "rmsprop_momentum": lambda o: o.rmsprop_momentum(0.05),
    "adam": lambda o: o.adam(1e-2),
    "adamax": lambda o: o.adamax(1e-2),
    "sm3": lambda o: o.sm3(0.1),
}


def _jax_optimizers():
    pytest.importorskip("jax")
    from jax.example_libraries import optimizers as jax_optimizers
    return jax_optimizers


def _run(library, name, jitted):
    init, update, get_params = OPTIMIZERS[name](library)
    step = update
    if jitted:
        step = (tp.jit if library is optimizers else __import__("jax").jit)(update)
    state = init(PARAMS)
    for i, g in enumerate(GRADS):
        state = step(i, g, state)
    return get_params(state)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizers_against_jax(name):
    jax_optimizers = _jax_optimizers()
    want = _run(jax_optimizers, name, jitted=False)
    for jitted in (False, True):
        got = _run(optimizers, name, jitted)
        assert tp.tree_util.tree_structure(got) == tp.tree_util.tree_structure(PARAMS)
        for g, w in zip(tp.tree_util.tree_leaves(got), tp.tree_util.tree_leaves(
                {"w": want["w"], "b": tuple(want["b"])})):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-6)


def test_sgd_and_momentum_follow_their_formulas():
    init, update, get_params = optimizers.momentum(0.5, mass=0.9)
    x, g = np.array([1.0, -2.0], F32), np.array([0.2, 0.4], F32)
    state = update(1, g, update(0, g, init(x)))
    velocity = 0.9 * g + g
    np.testing.assert_allclose(get_params(state), x - 0.5 * g - 0.5 * velocity, rtol=1e-6)


def test_schedules_and_utilities():
    assert float(optimizers.polynomial_decay(1.0, 10, 0.1)(5)) == pytest.approx(0.55)
    assert float(optimizers.inverse_time_decay(1.0, 2, 1.0, staircase=True)(3)) == 0.5
    schedule = optimizers.piecewise_constant([2, 4], [1.0, 0.5, 0.1])
    assert [float(schedule(i)) for i in (0, 2, 3, 5)] == pytest.approx([1.0, 1.0, 0.5, 0.1])
    with pytest.raises(ValueError):
        optimizers.piecewise_constant([2, 4], [1.0, 0.5])
    with pytest.raises(TypeError):
        optimizers.make_schedule([0.1, 0.2])
    tree = {"a": np.array([3.0, 4.0], F32)}
    assert float(optimizers.l2_norm(tree)) == pytest.approx(5.0)
    np.testing.assert_allclose(optimizers.clip_grads(tree, 1.0)["a"], [0.6, 0.8], rtol=1e-6)
    state = optimizers.adam(0.1)[0](PARAMS)
    again = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(state))
    assert again.tree_def == state.tree_def and again.subtree_defs == state.subtree_defs
    with pytest.raises(TypeError, match="structure"):
        optimizers.sgd(0.1)[1](0, {"w": PARAMS["w"]}, optimizers.sgd(0.1)[0](PARAMS))


# --- stax -------------------------------------------------------------------------------------

def _mlp():
    return stax.serial(stax.Dense(4), stax.Relu, stax.FanOut(2),
                       stax.parallel(stax.Dense(3), stax.serial(stax.Dense(3), stax.Softplus)),
                       stax.FanInConcat(), stax.Dense(2), stax.LogSoftmax)


def _loss(apply, params, x):
    return -jnp.mean(jnp.sum(apply(params, x) * jnp.array([1.0, 0.0]), axis=-1))


def test_stax_shapes_and_gradients_against_finite_differences():
    init, apply = _mlp()
    out_shape, params = init(random.key(0), (5, 3))
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(F32)
    assert out_shape == (5, 2) and apply(params, x).shape == (5, 2)
    grads = tp.grad(lambda p: _loss(apply, p, x))(params)
    assert tp.tree_util.tree_structure(grads) == tp.tree_util.tree_structure(params)
    leaves, tree = tp.tree_util.tree_flatten(params)
    w = np.asarray(leaves[0], np.float64)
    eps = 1e-3

    def loss_at(w0):
        moved = tp.tree_util.tree_unflatten(tree, [w0.astype(F32), *leaves[1:]])
        return float(_loss(apply, moved, x))
    fd = np.zeros_like(w)
    for idx in np.ndindex(*w.shape):
        e = np.zeros_like(w)
        e[idx] = eps
        fd[idx] = (loss_at(w + e) - loss_at(w - e)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(tp.tree_util.tree_leaves(grads)[0]), fd, atol=2e-3)
    jitted = tp.jit(tp.grad(lambda p: _loss(apply, p, x)))(params)
    for a, b in zip(tp.tree_util.tree_leaves(jitted), tp.tree_util.tree_leaves(grads)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_stax_against_jax():
    jax = pytest.importorskip("jax")
    from jax.example_libraries import stax as jax_stax
    init, apply = _mlp()
    jax_init, jax_apply = jax_stax.serial(
        jax_stax.Dense(4), jax_stax.Relu, jax_stax.FanOut(2),
        jax_stax.parallel(jax_stax.Dense(3), jax_stax.serial(jax_stax.Dense(3),
                                                             jax_stax.Softplus)),
        jax_stax.FanInConcat(), jax_stax.Dense(2), jax_stax.LogSoftmax)
    _, params = init(random.key(0), (5, 3))
    x = np.random.default_rng(1).standard_normal((5, 3)).astype(F32)
    host = jax.tree_util.tree_map(np.asarray, params)
    np.testing.assert_allclose(np.asarray(apply(params, x)), np.asarray(jax_apply(host, x)),
                               rtol=1e-5, atol=1e-6)
    jax_shape, _ = jax_init(jax.random.key(0), (5, 3))
    assert tuple(jax_shape) == init(random.key(0), (5, 3))[0]


def _conv_net(stax):
    return stax.serial(stax.Conv(4, (3, 3), padding="SAME"), stax.Relu,
                       stax.MaxPool((2, 2), strides=(2, 2)),
                       stax.ConvTranspose(2, (3, 3), strides=(2, 2), padding="SAME"),
                       stax.Flatten, stax.Dense(3), stax.LogSoftmax)


def test_stax_convolution_layers():
    init, apply = stax.Conv(2, (3, 2), strides=(1, 2))
    out_shape, (W, b) = init(random.key(0), (1, 5, 6, 3))
    assert out_shape == (1, 3, 3, 2) and W.shape == (3, 2, 3, 2) and b.shape == (1, 1, 1, 2)
    x = np.random.default_rng(0).standard_normal((1, 5, 6, 3)).astype(F32)
    want = np.zeros(out_shape, np.float64)
    for i, j in np.ndindex(3, 3):  # a correlation of each window with the kernel
        window = x[0, i:i + 3, 2 * j:2 * j + 2, :]
        want[0, i, j] = np.einsum("hwc,hwco->o", window, np.asarray(W)) + np.asarray(b)[0, 0, 0]
    np.testing.assert_allclose(np.asarray(apply((W, b), x)), want, rtol=1e-5, atol=1e-5)
    init, apply = _conv_net(stax)
    out_shape, params = init(random.key(1), (2, 8, 8, 1))
    assert out_shape == (2, 3)
    images = np.random.default_rng(1).standard_normal((2, 8, 8, 1)).astype(F32)
    grads = tp.grad(lambda p: jnp.sum(apply(p, images)[:, 0]))(params)
    jitted = tp.jit(tp.grad(lambda p: jnp.sum(apply(p, images)[:, 0])))(params)
    for a, b in zip(tp.tree_util.tree_leaves(jitted), tp.tree_util.tree_leaves(grads)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def test_stax_convolution_layers_against_jax():
    jax = pytest.importorskip("jax")
    from jax.example_libraries import stax as jax_stax
    (init, apply), (jax_init, jax_apply) = _conv_net(stax), _conv_net(jax_stax)
    shape, params = init(random.key(0), (2, 8, 8, 1))
    jax_shape, jax_params = jax_init(jax.random.key(0), (2, 8, 8, 1))
    assert tuple(jax_shape) == shape
    for a, b in zip(tp.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(jax_params)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    images = np.random.default_rng(2).standard_normal((2, 8, 8, 1)).astype(F32)
    np.testing.assert_allclose(np.asarray(tp.jit(apply)(params, images)),
                               np.asarray(jax_apply(jax_params, images)), rtol=1e-5, atol=1e-5)
    layer = lambda s: s.GeneralConv(("NCHW", "OIHW", "NCHW"), 3, (2, 2),  # noqa: E731
                                    strides=(1, 2), padding=((1, 0), (0, 1)))
    (init, apply), (jax_init, jax_apply) = layer(stax), layer(jax_stax)
    _, params = init(random.key(3), (2, 2, 6, 6))
    x = np.random.default_rng(3).standard_normal((2, 2, 6, 6)).astype(F32)
    host = jax.tree_util.tree_map(np.asarray, params)
    np.testing.assert_allclose(np.asarray(apply(params, x)), np.asarray(jax_apply(host, x)),
                               rtol=1e-5, atol=1e-5)


def test_dropout_batchnorm_flatten():
    init, apply = stax.serial(stax.Flatten, stax.Dropout(0.5), stax.Dense(2))
    shape, params = init(random.key(0), (4, 2, 3))
    assert shape == (4, 2)
    x = np.ones((4, 2, 3), F32)
    with pytest.raises(ValueError, match="rng"):
        apply(params, x)
    kept = apply(params, x, rng=random.key(1))
    assert kept.shape == (4, 2)
    np.testing.assert_allclose(apply(params, x, mode="test"),
                               apply(params, x, mode="test"), rtol=0)
    bn_init, bn_apply = stax.BatchNorm(axis=(0,))
    _, bn_params = bn_init(random.key(0), (6, 3))
    y = bn_apply(bn_params, np.random.default_rng(2).standard_normal((6, 3)).astype(F32))
    np.testing.assert_allclose(np.asarray(jnp.mean(y, axis=0)), 0, atol=1e-5)


# --- initializers, device_put, scipy.special ------------------------------------------------

@pytest.mark.parametrize("name, variance", [("glorot_normal", 2 / (40 + 60)),
                                            ("glorot_uniform", 2 / (40 + 60)),
                                            ("he_normal", 2 / 40), ("lecun_uniform", 1 / 40)])
def test_variance_scaling(name, variance):
    w = getattr(initializers, name)()(random.key(3), (40, 60))
    assert w.shape == (40, 60) and w.dtype == np.float32
    assert np.var(np.asarray(w)) == pytest.approx(variance, rel=0.1)
    with pytest.raises(ValueError, match="2 dimensions"):
        getattr(initializers, name)()(random.key(3), (5,))


def test_initializers_against_jax():
    jax = pytest.importorskip("jax")
    for name in ("glorot_normal", "he_uniform", "lecun_normal"):
        ours = getattr(initializers, name)()(random.key(7), (4, 5))
        theirs = getattr(jax.nn.initializers, name)()(jax.random.key(7), (4, 5))
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(initializers.normal(0.5)(random.key(1), (3,))),
                               np.asarray(jax.nn.initializers.normal(0.5)(jax.random.key(1),
                                                                          (3,))), rtol=1e-5)


def test_device_put_and_get():
    tree = {"a": np.arange(3.0), "b": [np.int64(2)]}
    on_device = tp.device_put(tree)
    assert isinstance(on_device["a"], tp.DeviceArray) and on_device["a"].dtype == np.float32
    assert tp.device_put(on_device)["a"] is on_device["a"]
    back = tp.device_get(on_device)
    assert isinstance(back["a"], np.ndarray) and back["b"][0].dtype == np.int32
    with pytest.raises(TypeError, match="Device"):
        tp.device_put(tree, "cpu:0")


def test_scipy_special():
    x = np.array([0.2, 0.5, 0.9], F32)
    from transpiler.scipy import special
    np.testing.assert_allclose(special.logit(special.expit(x)), x, rtol=1e-5)
    np.testing.assert_allclose(special.logsumexp(x), np.log(np.sum(np.exp(x))), rtol=1e-6)
    np.testing.assert_allclose(special.erfc(x) + special.erf(x), 1.0, rtol=1e-6)


# --- what running the examples found ------------------------------------------------------

def _repeated(x):
    return jnp.sum(jnp.stack([x] * 3) * jnp.arange(3.0)[:, None])


def _concatenated(x):
    return jnp.sum(jnp.stack([x] + [x * 2]))


@pytest.mark.parametrize("fn, slope", [(_repeated, 3.0), (_concatenated, 3.0)])
def test_sequence_repetition_and_concatenation_are_differentiated(fn, slope):
    """``[x] * n`` and ``xs + ys`` (stax.FanOut): once the arithmetic rule, a crash."""
    x = np.array([1.0, 2.0], F32)
    np.testing.assert_allclose(tp.grad(fn)(x), [slope, slope])
    assert float(tp.jvp(fn, (x,), (x,))[1]) == pytest.approx(slope * 3)
    np.testing.assert_allclose(tp.vmap(tp.grad(fn))(np.stack([x, -x])), slope)


def test_an_unsigned_conversion_of_a_loop_counter_compiles():
    """random.fold_in(key, i) in a fori_loop (mnist_vae): IREE 3.13 failed on the
    int32 -> uint32 convert of the counter; it is a bitcast now."""
    step = tp.jit(lambda k: lax.fori_loop(0, 3, lambda i, kk: random.fold_in(kk, i), k))
    want = random.key(0)
    for i in range(3):
        want = random.fold_in(want, i)
    np.testing.assert_array_equal(np.asarray(step(random.key(0))), np.asarray(want))


def test_cnn_digits_example_learns(tmp_path):
    """examples/cnn_digits.py (stax convolutions and pooling, adam, jit(value_and_grad)),
    a few epochs: the held-out accuracy climbs well past chance and the plot is written."""
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
    try:
        import cnn_digits
    finally:
        sys.path.pop(0)
    plot = tmp_path / "curves.png"
    assert cnn_digits.main(epochs=4, plot_path=plot) > 0.85
    assert plot.stat().st_size > 1000


def test_per_example_gradients_of_a_stax_network():
    """vmap(grad(loss)) where the loss calls stax's layer closures (functions known at run
    time that close over their own functions), as differentially_private_sgd.py does:
    against a Python loop, eagerly and under jit."""
    init, apply = stax.serial(stax.Dense(4), stax.Relu, stax.Dense(2), stax.LogSoftmax)
    _, params = init(random.key(0), (-1, 3))

    def loss(params, x, y):
        return -jnp.sum(apply(params, x[None]) * y)

    x = np.random.default_rng(0).standard_normal((5, 3)).astype(F32)
    y = np.eye(2, dtype=F32)[[0, 1, 0, 1, 1]]
    loop = [tp.grad(loss)(params, x[i], y[i]) for i in range(5)]
    for per_example in (tp.vmap(tp.grad(loss), (None, 0, 0)),
                        tp.jit(tp.vmap(tp.grad(loss), (None, 0, 0)))):
        got = tp.tree_util.tree_leaves(per_example(params, x, y))
        for i in range(5):
            for a, b in zip(got, tp.tree_util.tree_leaves(loop[i])):
                np.testing.assert_allclose(np.asarray(a)[i], np.asarray(b), rtol=1e-5,
                                           atol=1e-6)
