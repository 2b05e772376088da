"""transpiler.nn: values vs NumPy formulas and jax.nn, extreme inputs, eager vs one jit."""

from __future__ import annotations

import numpy as np
import pytest

import transpiler as tj
from transpiler import nn

# Rows with extreme values: huge magnitudes, all -inf, and a +inf.
X = np.array([[-1e30, -3.0, -0.5, 0.0, 0.5, 3.0, 80.0, 1e30],
              [-np.inf] * 8,
              [1.0, 2.0, np.inf, 3.0, 4.0, 5.0, 6.0, 7.0],
              [-100.0, -90.0, -50.0, -20.0, 20.0, 50.0, 90.0, 100.0]], np.float32)
FINITE = X[[0, 3]]
LABELS = np.array([[0, 2, 5], [1, -1, 3]], np.int32)

UNARY = ["relu", "relu6", "sigmoid", "softplus", "silu", "swish", "elu", "leaky_relu", "celu",
         "selu", "log_sigmoid", "hard_tanh", "hard_sigmoid", "hard_swish", "softmax",
         "log_softmax", "standardize"]


def close(ours, theirs, rtol: float = 1e-5, atol: float = 1e-6) -> None:  # type: ignore[no-untyped-def]
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def test_formulas_vs_numpy() -> None:
    x = FINITE.astype(np.float64)
    with np.errstate(all="ignore"):
        close(nn.relu(FINITE), np.maximum(FINITE, 0))
        close(nn.relu6(FINITE), np.clip(FINITE, 0, 6))
        close(nn.sigmoid(FINITE), (1 / (1 + np.exp(-x))).astype(np.float32))
        close(nn.softplus(FINITE), np.logaddexp(x, 0).astype(np.float32))
        close(nn.leaky_relu(FINITE, 0.1), np.where(x >= 0, x, 0.1 * x).astype(np.float32))
        close(nn.elu(FINITE), np.where(x > 0, x, np.expm1(x)).astype(np.float32))
        e = np.exp(x - x.max(-1, keepdims=True))
        close(nn.softmax(FINITE), (e / e.sum(-1, keepdims=True)).astype(np.float32))
        lse = np.log(e.sum(-1, keepdims=True)) + x.max(-1, keepdims=True)
        close(nn.log_softmax(FINITE), (x - lse).astype(np.float32))
        close(nn.logsumexp(FINITE, axis=1), lse[:, 0].astype(np.float32))
        y = np.linspace(-6, 6, 49)
        tanh_cdf = 0.5 * (1 + np.tanh(np.sqrt(2 / np.pi) * (y + 0.044715 * y**3)))
        close(nn.gelu(y.astype(np.float32)), (y * tanh_cdf).astype(np.float32))
    close(nn.one_hot(np.array([0, 3, 1]), 4), np.eye(4, dtype=np.float32)[[0, 3, 1]])


def test_stability_and_infinities() -> None:
    s = np.asarray(nn.softmax(X[[0, 3]]))
    assert np.isfinite(s).all() and np.allclose(s.sum(-1), 1.0)
    assert np.isnan(np.asarray(nn.softmax(X[1]))).all()          # all -inf row: NaN like JAX
    lse = np.asarray(nn.logsumexp(X, axis=-1))
    assert lse[0] == np.float32(1e30) and lse[1] == -np.inf and lse[2] == np.inf
    assert np.asarray(nn.softplus(np.float32(1e30))) == np.float32(1e30)
    assert np.asarray(nn.softplus(np.float32(-1e30))) == 0.0
    assert np.asarray(nn.log_sigmoid(np.float32(-200.0))) == np.float32(-200.0)


def test_matches_jax() -> None:
    jax = pytest.importorskip("jax")
    for name in UNARY:
        close(getattr(nn, name)(X), getattr(jax.nn, name)(X))
    for kwargs in [{}, {"axis": 1}, {"axis": (0, 1)}, {"axis": 0, "keepdims": True},
                   {"b": np.float32(2.0)}]:
        close(nn.logsumexp(X, **kwargs), jax.nn.logsumexp(X, **kwargs))
    signs = np.array([1, -1, 1, 1, 1, 1, 1, 1], np.float32)
    for ours, theirs in zip(nn.logsumexp(FINITE, axis=-1, b=signs, return_sign=True),
                            jax.nn.logsumexp(FINITE, axis=-1, b=signs, return_sign=True)):
        close(ours, theirs)
    y = np.linspace(-8, 8, 101).astype(np.float32)
    for approximate in [True, False]:
        close(nn.gelu(y, approximate), jax.nn.gelu(y, approximate), rtol=1e-5, atol=1e-6)
    close(nn.erf(y / 4), jax.scipy.special.erf(y / 4), atol=3e-7)
    for axis in [-1, 0, 1]:
        close(nn.one_hot(LABELS, 4, axis=axis), jax.nn.one_hot(LABELS, 4, axis=axis))
    close(nn.one_hot(LABELS, 4, dtype=np.int32), jax.nn.one_hot(LABELS, 4, dtype=np.int32))
    for dtype in [np.float16, jax.numpy.bfloat16]:  # dtypes are preserved, as in jax.nn
        h = X[3].astype(dtype)
        for name in ["sigmoid", "gelu", "softmax", "silu"]:
            close(getattr(nn, name)(h), getattr(jax.nn, name)(h), rtol=1e-2, atol=1e-2)
    close(nn.relu(LABELS), jax.nn.relu(LABELS))


def everything(x, labels):  # type: ignore[no-untyped-def]
    out = {name: getattr(nn, name)(x) for name in UNARY}
    out.update(logsumexp=nn.logsumexp(x, axis=1), logsumexp_all=nn.logsumexp(x),
               gelu_tanh=nn.gelu(x), gelu_erf=nn.gelu(x, approximate=False),
               one_hot=nn.one_hot(labels, 4, axis=0), relu_int=nn.relu(labels))
    return out


def test_jit_matches_eager() -> None:
    staged, eager = tj.jit(everything)(X, LABELS), everything(X, LABELS)
    for name, value in eager.items():
        a, b = np.asarray(staged[name]), np.asarray(value)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6, equal_nan=True, err_msg=name)


def test_errors() -> None:
    with pytest.raises(TypeError, match="num_classes"):
        tj.jit(lambda x, n: nn.one_hot(x, n))(LABELS, 3)
