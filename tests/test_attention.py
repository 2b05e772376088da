"""nn.dot_product_attention against jax.nn.dot_product_attention(implementation="xla") and a
NumPy formula: bias, boolean masks, causal and local-window masks, scale, sequence lengths,
grouped (GQA) and single (MQA) key/value heads, 3-d inputs and the log-sum-exp residual;
eagerly, under jit, with derivatives against JAX and float64 finite differences; and the
errors for malformed inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import transpiler as tj
import transpiler.numpy as jnp
from transpiler import nn

RNG = np.random.default_rng(7)
B, T, S, N, K, H = 2, 5, 6, 4, 2, 8


def normal(*shape: int) -> np.ndarray:
    return RNG.normal(size=shape).astype(np.float32)


Q, KEY, VALUE = normal(B, T, N, H), normal(B, S, K, H), normal(B, S, K, H)
BIAS = normal(B, N, T, S)
HEAD_BIAS = normal(1, N, 1, S)
MASK = RNG.uniform(size=(B, 1, T, S)) > 0.3
MASK[..., 0] = True
Q_LENGTHS = np.array([3, 5], np.int32)
KV_LENGTHS = np.array([6, 2], np.int32)

CASES: dict[str, dict[str, Any]] = {
    "plain": {},
    "scale": {"scale": 0.3},
    "bias": {"bias": BIAS},
    "head_bias": {"bias": HEAD_BIAS},
    "mask": {"mask": MASK},
    "bias_and_mask": {"bias": BIAS, "mask": MASK, "scale": 0.5},
    "causal": {"is_causal": True},
    "causal_mask": {"is_causal": True, "mask": MASK},
    "lengths": {"query_seq_lengths": Q_LENGTHS, "key_value_seq_lengths": KV_LENGTHS},
    "kv_lengths_causal": {"key_value_seq_lengths": KV_LENGTHS, "is_causal": True},
    "window": {"local_window_size": 1},
    "window_pair": {"local_window_size": (2, 0), "bias": HEAD_BIAS},
}


def close(ours: Any, theirs: Any, rtol: float = 2e-5, atol: float = 2e-5) -> None:
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: Any = None, mask: Any = None,
              scale: Any = None, is_causal: bool = False) -> np.ndarray:
    """The formula in float64: softmax(scale q k^T + bias, masked) v per head."""
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    groups = q.shape[2] // k.shape[2]
    k, v = np.repeat(k, groups, axis=2), np.repeat(v, groups, axis=2)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    logits = np.einsum("btnh,bsnh->bnts", q, k) * scale
    if bias is not None:
        logits = logits + bias
    keep = np.ones(logits.shape, bool)
    if mask is not None:
        keep &= mask
    if is_causal:
        keep &= np.tril(np.ones(logits.shape[-2:], bool))
    logits = np.where(keep, logits, -np.inf)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    return np.einsum("bnts,bsnh->btnh", probs, v).astype(np.float32)


def test_formula() -> None:
    for kwargs in [{}, {"bias": BIAS, "scale": 0.5}, {"mask": MASK}, {"is_causal": True}]:
        close(nn.dot_product_attention(Q, KEY, VALUE, **kwargs),
              reference(Q, KEY, VALUE, **kwargs))
    q, k, v = Q[0], KEY[0], VALUE[0]  # 3-d inputs: (T, N, H)
    close(nn.dot_product_attention(q, k, v), reference(Q[:1], KEY[:1], VALUE[:1])[0])
    out, lse = nn.dot_product_attention(q, k, v, return_residual=True)
    assert np.shape(out) == (T, N, H) and np.shape(lse) == (T, N)


@pytest.mark.parametrize("name", list(CASES))
def test_matches_jax(name: str) -> None:
    jax = pytest.importorskip("jax")
    kwargs = CASES[name]
    for key, value in [(KEY, VALUE), (KEY[:, :, :1], VALUE[:, :, :1])]:  # GQA and MQA
        ours = nn.dot_product_attention(Q, key, value, **kwargs)
        theirs = jax.nn.dot_product_attention(Q, key, value, implementation="xla", **kwargs)
        close(ours, theirs)
    ours, lse = nn.dot_product_attention(Q, KEY, VALUE, return_residual=True, **kwargs)
    theirs, their_lse = jax.nn.dot_product_attention(Q, KEY, VALUE, implementation="xla",
                                                     return_residual=True, **kwargs)
    close(ours, theirs)
    close(lse, their_lse)
    if "bias" not in kwargs and "mask" not in kwargs and "query_seq_lengths" not in kwargs \
            and "key_value_seq_lengths" not in kwargs:  # 3-d inputs
        ours, lse = nn.dot_product_attention(Q[1], KEY[1], VALUE[1], return_residual=True,
                                             **kwargs)
        theirs, their_lse = jax.nn.dot_product_attention(
            Q[1], KEY[1], VALUE[1], implementation="xla", return_residual=True, **kwargs)
        close(ours, theirs)
        close(lse, their_lse)


def test_jit_matches_eager_and_jax() -> None:
    jax = pytest.importorskip("jax")

    @tj.jit
    def every_case(q: Any, k: Any, v: Any) -> dict:
        return {name: nn.dot_product_attention(q, k, v, **kwargs) for name, kwargs in CASES.items()}

    out = every_case(Q, KEY, VALUE)
    for name, kwargs in CASES.items():
        close(out[name], nn.dot_product_attention(Q, KEY, VALUE, **kwargs))
        close(out[name], jax.nn.dot_product_attention(Q, KEY, VALUE, implementation="xla",
                                                      **kwargs))


def test_half_precision_keeps_the_dtype() -> None:
    jax = pytest.importorskip("jax")
    for dtype in [np.float16, jax.numpy.bfloat16]:
        q, k, v = (t.astype(dtype) for t in (Q, KEY, VALUE))
        ours = nn.dot_product_attention(q, k, v, bias=BIAS, is_causal=True)
        theirs = jax.nn.dot_product_attention(q, k, v, bias=BIAS, is_causal=True,
                                              implementation="xla")
        assert np.asarray(ours).dtype == np.asarray(theirs).dtype == dtype
        close(np.asarray(ours).astype(np.float32), np.asarray(theirs).astype(np.float32),
              rtol=2e-2, atol=2e-2)


def test_gradients_match_jax() -> None:
    jax = pytest.importorskip("jax")
    cotangent = normal(B, T, N, H)
    for name in ["bias_and_mask", "causal", "lengths", "window_pair"]:
        kwargs = CASES[name]

        def loss(q: Any, k: Any, v: Any, bias: Any) -> Any:
            return jnp.sum(nn.dot_product_attention(q, k, v, bias, **without_bias) * cotangent)

        def their_loss(q: Any, k: Any, v: Any, bias: Any) -> Any:
            out = jax.nn.dot_product_attention(q, k, v, bias, implementation="xla",
                                               **without_bias)
            return jax.numpy.sum(out * cotangent)

        without_bias = {key: value for key, value in kwargs.items() if key != "bias"}
        bias = kwargs.get("bias", HEAD_BIAS)
        ours = tj.grad(loss, argnums=(0, 1, 2, 3))(Q, KEY, VALUE, bias)
        theirs = jax.grad(their_loss, argnums=(0, 1, 2, 3))(Q, KEY, VALUE, bias)
        for a, b in zip(ours, theirs):
            close(a, b, rtol=1e-4, atol=1e-5)
    jitted = tj.jit(tj.grad(loss, argnums=(0, 1, 2, 3)))(Q, KEY, VALUE, bias)
    for a, b in zip(jitted, ours):
        close(a, b, rtol=1e-4, atol=1e-5)


def test_gradients_match_finite_differences(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tj.config, "enable_x64", True)
    q, k, v, bias = (t.astype(np.float64) for t in (Q, KEY, VALUE, HEAD_BIAS))
    cotangent = RNG.normal(size=q.shape)

    def loss(q: Any, k: Any, v: Any, bias: Any) -> Any:
        out = nn.dot_product_attention(q, k, v, bias, mask=MASK, is_causal=True, scale=0.4)
        return jnp.sum(out * cotangent)

    grads = tj.grad(loss, argnums=(0, 1, 2, 3))(q, k, v, bias)
    assert all(np.asarray(g).dtype == np.float64 for g in grads)
    args = [q, k, v, bias]
    # the softmax runs in float32 even for float64 inputs (as in JAX): a step of 1e-3 keeps
    # its rounding (~1e-7) well below the difference quotient's resolution
    h = 1e-3
    for i, g in enumerate(grads):
        direction = RNG.normal(size=args[i].shape)
        plus = [a + h * direction if j == i else a for j, a in enumerate(args)]
        minus = [a - h * direction if j == i else a for j, a in enumerate(args)]
        numeric = (float(loss(*plus)) - float(loss(*minus))) / (2 * h)
        np.testing.assert_allclose(np.sum(np.asarray(g) * direction), numeric, rtol=1e-3,
                                   atol=1e-5)


def test_vmap_over_a_leading_axis() -> None:
    stacked = np.stack([Q, Q * 0.5])
    out = tj.vmap(lambda q: nn.dot_product_attention(q, KEY, VALUE, is_causal=True))(stacked)
    for i in range(2):
        close(out[i], nn.dot_product_attention(stacked[i], KEY, VALUE, is_causal=True))


def test_errors() -> None:
    with pytest.raises(ValueError, match="query ndim should be 4"):
        nn.dot_product_attention(Q[None], KEY, VALUE)
    with pytest.raises(ValueError, match="query shape"):
        nn.dot_product_attention(Q[..., :4], KEY, VALUE)
    with pytest.raises(ValueError, match="value shape"):
        nn.dot_product_attention(Q, KEY, VALUE[:, :4])
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        nn.dot_product_attention(Q[:, :, :3], KEY, VALUE)
    with pytest.raises(ValueError, match="mask dtype should be bool"):
        nn.dot_product_attention(Q, KEY, VALUE, mask=MASK.astype(np.int32))
    with pytest.raises(ValueError, match="value dtype"):
        nn.dot_product_attention(Q, KEY, VALUE.astype(np.float16))
    with pytest.raises(ValueError, match="query_seq_lengths dtype should be int32"):
        nn.dot_product_attention(Q, KEY, VALUE, query_seq_lengths=Q_LENGTHS.astype(np.float32))
    with pytest.raises(ValueError, match="key_value_seq_lengths shape"):
        nn.dot_product_attention(Q, KEY, VALUE, key_value_seq_lengths=np.ones(3, np.int32))
    with pytest.raises(ValueError, match="bias ndim"):
        nn.dot_product_attention(Q, KEY, VALUE, bias=np.ones((1, 1, 1, 1, S), np.float32))
    with pytest.raises(NotImplementedError, match="cudnn"):
        nn.dot_product_attention(Q, KEY, VALUE, implementation="cudnn")
    with pytest.raises(ValueError, match="query ndim"):
        tj.jit(nn.dot_product_attention)(Q[None], KEY, VALUE)
