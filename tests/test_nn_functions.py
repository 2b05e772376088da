"""The rest of ``jax.nn``: every name JAX exports is here; the newer activations, the `where`
masks of softmax/log_softmax/logsumexp/standardize, logmeanexp, the block-scaled products and
the orthogonal initializers against NumPy formulas and jax.nn, eagerly and under one jit,
and the derivatives of every differentiable function against float64 finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tj
from transpiler import nn

RNG = np.random.default_rng(20)
# Values away from every kink (0, +-1, 6, -3, 3) so finite differences see smooth functions.
X = np.array([[-7.3, -3.4, -2.2, -1.3, -0.6, -0.2, 0.3, 0.7, 1.4, 2.6, 4.1, 7.7],
              [-30.0, -5.5, -2.7, -1.8, -0.9, -0.4, 0.15, 0.45, 1.2, 2.1, 5.2, 30.0]],
             np.float32)
W = RNG.uniform(size=X.shape) > 0.35
W[:, 0] = True  # no empty row
POSITIVE = np.abs(X) + np.float32(0.05)



def table(m):  # type: ignore[no-untyped-def]
    """name -> function of (x, where-mask) through the nn module `m` (ours or jax.nn)."""
    return {
        "mish": lambda x, w: m.mish(x),
        "glu": lambda x, w: m.glu(x),
        "glu_axis0": lambda x, w: m.glu(x, axis=0),
        "soft_sign": lambda x, w: m.soft_sign(x),
        "squareplus": lambda x, w: m.squareplus(x),
        "squareplus_b": lambda x, w: m.squareplus(x, 0.5),
        "sparse_plus": lambda x, w: m.sparse_plus(x),
        "sparse_sigmoid": lambda x, w: m.sparse_sigmoid(x),
        "tanh": lambda x, w: m.tanh(x),
        "identity": lambda x, w: m.identity(x),
        "celu": lambda x, w: m.celu(x, 0.7),
        "selu": lambda x, w: m.selu(x),
        "elu": lambda x, w: m.elu(x, 1.3),
        "silu": lambda x, w: m.silu(x),
        "gelu": lambda x, w: m.gelu(x),
        "gelu_erf": lambda x, w: m.gelu(x, approximate=False),
        "relu6": lambda x, w: m.relu6(x),
        "hard_tanh": lambda x, w: m.hard_tanh(x),
        "hard_sigmoid": lambda x, w: m.hard_sigmoid(x),
        "hard_silu": lambda x, w: m.hard_silu(x),
        "log_sigmoid": lambda x, w: m.log_sigmoid(x),
        "softmax_where": lambda x, w: m.softmax(x, where=w),
        "softmax_where_axis0": lambda x, w: m.softmax(x, axis=0, where=w),
        "log_softmax_where": lambda x, w: m.log_softmax(x, where=w),
        "logsumexp_where": lambda x, w: m.logsumexp(x, axis=-1, where=w),
        "logsumexp_where_keepdims": lambda x, w: m.logsumexp(x, axis=0, where=w, keepdims=True),
        "logmeanexp": lambda x, w: m.logmeanexp(x, axis=-1),
        "logmeanexp_all": lambda x, w: m.logmeanexp(x),
        "logmeanexp_where": lambda x, w: m.logmeanexp(x, axis=1, where=w, keepdims=True),
        "standardize_where": lambda x, w: m.standardize(x, where=w, algorithm="stable"),
        "standardize_stable": lambda x, w: m.standardize(x, axis=0, algorithm="stable"),
        "log1mexp": lambda x, w: m.log1mexp(abs(x) + 0.05),
    }


OURS = table(nn)


def close(ours, theirs, rtol: float = 2e-6, atol: float = 2e-6) -> None:  # type: ignore[no-untyped-def]
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def test_every_jax_nn_name_is_here() -> None:
    jax = pytest.importorskip("jax")
    public = lambda module: {n for n in dir(module) if not n.startswith("_")}  # noqa: E731
    assert public(jax.nn) - public(nn) == set()
    assert public(jax.nn.initializers) - public(nn.initializers) == set()


def test_formulas_vs_numpy() -> None:
    x = X.astype(np.float64)
    softplus = np.logaddexp(x, 0)
    cases = {
        "mish": x * np.tanh(softplus),
        "soft_sign": x / (np.abs(x) + 1),
        "squareplus": (x + np.sqrt(x * x + 4)) / 2,
        "sparse_plus": np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
        "sparse_sigmoid": np.clip((x + 1) / 2, 0, 1),
        "log1mexp": np.log(-np.expm1(-(np.abs(x) + 0.05))),
        "glu": x[:, :6] / (1 + np.exp(-x[:, 6:])),
    }
    for name, expected in cases.items():
        close(OURS[name](X, W), expected.astype(np.float32), rtol=2e-6, atol=1e-6)
    masked = np.where(W, x, -np.inf)
    e = np.exp(masked - masked.max(-1, keepdims=True))
    close(nn.softmax(X, where=W), (e / e.sum(-1, keepdims=True)).astype(np.float32))
    lse = np.log(e.sum(-1)) + masked.max(-1)
    close(nn.logsumexp(X, axis=-1, where=W), lse.astype(np.float32))
    close(nn.log_softmax(X, where=W), np.where(W, masked - lse[:, None], -np.inf)
          .astype(np.float32))
    close(nn.logmeanexp(X, axis=-1, where=W), (lse - np.log(W.sum(-1))).astype(np.float32))
    mean = np.sum(x * W, -1, keepdims=True) / W.sum(-1, keepdims=True)
    var = np.sum((x - mean) ** 2 * W, -1, keepdims=True) / W.sum(-1, keepdims=True)
    close(nn.standardize(X, where=W, algorithm="stable"),
          ((x - mean) / np.sqrt(var + 1e-5)).astype(np.float32), rtol=1e-5, atol=1e-5)


def test_matches_jax() -> None:
    jax = pytest.importorskip("jax")
    theirs = table(jax.nn)
    for name, f in OURS.items():
        close(f(X, W), theirs[name](X, W), rtol=3e-6, atol=3e-6)
    # the "fast" variance of standardize cancels: compare where the rows are well scaled
    close(nn.standardize(X[:, 4:8]), jax.nn.standardize(X[:, 4:8]), rtol=1e-5, atol=1e-5)
    close(nn.standardize(X, axis=0, where=W), jax.nn.standardize(X, axis=0, where=W),
          rtol=1e-4, atol=1e-4)
    for dtype in [np.float16, jax.numpy.bfloat16]:  # dtypes are kept, as in jax.nn
        h = X.astype(dtype)
        for name in ["mish", "glu", "squareplus", "soft_sign", "sparse_plus"]:
            ours, expected = OURS[name](h, W), theirs[name](h, W)
            assert np.asarray(ours).dtype == np.asarray(expected).dtype == h.dtype, name
    assert np.asarray(nn.log1mexp(np.array([1, 2], np.int32))).dtype == np.float32


def test_jit_matches_eager() -> None:
    run_all = tj.jit(lambda x, w: {name: f(x, w) for name, f in OURS.items()})
    out = run_all(X, W)
    for name, f in OURS.items():
        close(out[name], f(X, W), rtol=1e-5, atol=1e-5)


DIFFERENTIABLE = [name for name in OURS if name != "identity"]


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradients_match_finite_differences(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tj.config, "enable_x64", True)
    import transpiler.numpy as jnp
    f = OURS[name]
    x = np.clip(X.astype(np.float64), -9.0, 9.0)  # (log_sigmoid/softplus saturate beyond)
    if name == "gelu_erf":
        x = np.clip(x, -3.5, 3.5)
    weights = RNG.normal(size=np.shape(f(x, W)))

    def loss(x):
        y = f(x, W)
        return jnp.sum(jnp.where(jnp.isfinite(y), y * weights, 0.0))

    g = np.asarray(tj.grad(loss)(x))
    assert g.dtype == np.float64
    direction = RNG.normal(size=x.shape)
    h = 1e-6
    numeric = (float(loss(x + h * direction)) - float(loss(x - h * direction))) / (2 * h)
    np.testing.assert_allclose(np.sum(g * direction), numeric, rtol=1e-6, atol=1e-7)


def test_gradients_match_jax() -> None:
    jax = pytest.importorskip("jax")
    theirs = table(jax.nn)
    for name in ["mish", "squareplus", "sparse_plus", "log1mexp", "softmax_where",
                 "logsumexp_where", "standardize_where", "glu", "celu"]:
        f, g = OURS[name], theirs[name]
        weights = RNG.normal(size=np.shape(f(X, W))).astype(np.float32)
        ours = tj.grad(lambda x: tj.numpy.sum(f(x, W) * weights))(X)
        expected = jax.grad(lambda x: jax.numpy.sum(g(x, W) * weights))(X)
        close(ours, expected, rtol=2e-5, atol=2e-5)


def test_scaled_products() -> None:
    a = RNG.normal(size=(2, 3, 8)).astype(np.float32)
    b = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    a_scales = RNG.uniform(0.5, 2, size=(2, 3, 2)).astype(np.float32)
    b_scales = RNG.uniform(0.5, 2, size=(2, 5, 2)).astype(np.float32)
    expected = np.einsum("BMK,BNK->BMN", a * np.repeat(a_scales, 4, -1),
                         b * np.repeat(b_scales, 4, -1))
    close(nn.scaled_matmul(a, b, a_scales, b_scales), expected, rtol=1e-5, atol=1e-5)
    close(tj.jit(nn.scaled_matmul)(a, b, a_scales, b_scales), expected, rtol=1e-5, atol=1e-5)
    assert np.asarray(nn.scaled_matmul(a, b, a_scales, b_scales, np.float16)).dtype == np.float16
    dn = (((2,), (2,)), ((0,), (0,)))
    close(nn.scaled_dot_general(a, b, dn), np.einsum("BMK,BNK->BMN", a, b), rtol=1e-5,
          atol=1e-5)
    with pytest.raises(ValueError, match="3-dimensional"):
        nn.scaled_matmul(a[0], b, a_scales, b_scales)
    with pytest.raises(ValueError, match="matching batch"):
        nn.scaled_matmul(a, b[:, :, :4], a_scales, b_scales)
    config = nn.get_scaled_dot_general_config("mxfp8")
    with pytest.raises(NotImplementedError, match="float8"):
        nn.scaled_dot_general(a, b, dn, configs=[config] * 3)
    with pytest.raises(ValueError, match="Unsupported mode"):
        nn.get_scaled_dot_general_config("int4")
    jax = pytest.importorskip("jax")
    for mode in ["mxfp8", "nvfp4"]:
        ours, theirs = nn.get_scaled_dot_general_config(mode), \
            jax.nn.get_scaled_dot_general_config(mode)
        for field in ["mode", "block_size", "data_type", "scale_type", "infer_only"]:
            assert getattr(ours, field) == getattr(theirs, field), (mode, field)


def test_orthogonal_initializers_match_jax() -> None:
    jax = pytest.importorskip("jax")
    from transpiler import random
    for shape, axis in [((3, 5), -1), ((5, 3), -1), ((2, 3, 4), 0), ((4, 4), 1)]:
        ours = nn.initializers.orthogonal(2.0, axis)(random.PRNGKey(1), shape)
        theirs = jax.nn.initializers.orthogonal(2.0, axis)(jax.random.PRNGKey(1), shape)
        close(ours, theirs, rtol=1e-5, atol=1e-5)
    for shape in [(3, 2, 4), (3, 3, 4, 4), (2, 3, 3, 2, 2)]:
        ours = nn.initializers.delta_orthogonal()(random.PRNGKey(2), shape)
        theirs = jax.nn.initializers.delta_orthogonal()(jax.random.PRNGKey(2), shape)
        close(ours, theirs, rtol=1e-5, atol=1e-5)
    q = np.asarray(nn.initializers.orthogonal()(random.PRNGKey(3), (6, 4)))
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-5)
    with pytest.raises(ValueError, match="at least a 2D"):
        nn.initializers.orthogonal()(random.PRNGKey(0), (4,))
    with pytest.raises(ValueError, match="fan_in"):
        nn.initializers.delta_orthogonal()(random.PRNGKey(0), (3, 5, 4))


def test_errors() -> None:
    with pytest.raises(ValueError, match="odd size 3"):
        nn.glu(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="odd size 5"):
        tj.jit(lambda x: nn.glu(x, axis=0))(np.ones((5, 4), np.float32))
    with pytest.raises(ValueError, match="unknown algorithm"):
        nn.standardize(X, algorithm="exact")
