"""``jax.nn.dot_product_attention`` (as ``transpiler.nn.dot_product_attention``): scaled
dot-product attention over ``(batch, length, heads, head_dim)`` arrays, JAX's ``"xla"``
implementation written with ``jnp``: grouped query heads, an additive bias, a boolean
mask, causal and local-window masks and per-example sequence lengths. Logits are float32
(or wider), the softmax float32, the probabilities cast back to the key's dtype, as in JAX.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.errors import located
from transpiler.primitives import conversions as conv
from transpiler.primitives.core import abstractify

__all__ = ["dot_product_attention"]


def _ensure_4d(t: Any) -> Any:
    t = jnp.asarray(t)
    ndim = abstractify(t).ndim
    return jnp.reshape(t, (1,) * (4 - ndim) + tuple(abstractify(t).shape)) if ndim < 4 else t


def _check(t: Any, shape: Sequence[int], dtype: Optional[np.dtype], name: str) -> None:
    if t is None:
        return
    aval = abstractify(t)
    if aval.ndim != len(shape):
        raise located(ValueError, f"dot_product_attention: {name} ndim should be "
                      f"{len(shape)}, but got {aval.ndim}")
    if dtype is not None and aval.dtype != dtype:
        raise located(ValueError, f"dot_product_attention: {name} dtype should be {dtype}, "
                      f"but got {aval.dtype}")
    for want, got in zip(shape, aval.shape):
        if want != -1 and want != got:
            raise located(ValueError, f"dot_product_attention: {name} shape should be "
                          f"{list(shape)}, but got {list(aval.shape)}")


def _grouped(t: Any, k: int, g: int) -> Any:
    """A ``(B|1, N|1, T|1, S|1)`` bias or mask as ``(B|1, K|1, G|1, T|1, S|1)``."""
    tb, tn, tt, ts = abstractify(t).shape
    if tn == 1:
        return jnp.reshape(t, (tb, 1, 1, tt, ts))
    return jnp.reshape(t, (tb, k, g, tt, ts))


def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None, mask: Any = None,
                          *, scale: Optional[float] = None, is_causal: bool = False,
                          query_seq_lengths: Any = None, key_value_seq_lengths: Any = None,
                          local_window_size: Union[None, int, tuple[int, int]] = None,
                          implementation: Optional[str] = None,
                          return_residual: bool = False) -> Any:
    """``softmax(scale * Q K^T + bias, masked) V`` per head. `query` is ``(B, T, N, H)``,
    `key` and `value` ``(B, S, K, H)`` with `N` a multiple of `K` (grouped-query
    attention); leading axes may be left out (3-d inputs). `bias` and `mask` broadcast to
    ``(B, N, T, S)``; `mask` (boolean) keeps the True logits, `is_causal` the keys at or
    before each query, `local_window_size` ``(left, right)`` those within the window,
    the sequence lengths (int32, one per example) the real positions (padded queries give
    zeros). `scale` defaults to ``1 / sqrt(H)``. With `return_residual`, also the
    log-sum-exp of each query's logits, ``(B, T, N)``. `implementation` may be None or
    ``"xla"`` (this is that algorithm); ``"cudnn"`` is a clear error."""
    if implementation not in (None, "xla"):
        raise located(NotImplementedError, f"dot_product_attention: implementation "
                      f"{implementation!r} is not available; use None or 'xla'")
    output_shape = tuple(abstractify(jnp.asarray(query)).shape)
    q, k, v = _ensure_4d(query), _ensure_4d(key), _ensure_4d(value)
    bias = _ensure_4d(bias) if bias is not None else None
    mask = _ensure_4d(mask) if mask is not None else None
    if query_seq_lengths is not None:
        query_seq_lengths = jnp.asarray(query_seq_lengths)
    if key_value_seq_lengths is not None:
        key_value_seq_lengths = jnp.asarray(key_value_seq_lengths)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    b, s, kh, h = abstractify(k).shape
    key_dtype = abstractify(k).dtype
    _check(v, [b, s, kh, h], key_dtype, "value")
    _check(q, [b, -1, -1, h], key_dtype, "query")
    _check(mask, [-1] * 4, dtypes.bool_, "mask")
    _check(bias, [-1] * 4, None, "bias")
    _check(query_seq_lengths, [b], dtypes.int32, "query_seq_lengths")
    _check(key_value_seq_lengths, [b], dtypes.int32, "key_value_seq_lengths")
    t, n = abstractify(q).shape[1], abstractify(q).shape[2]
    if n % kh:
        raise located(ValueError, f"dot_product_attention: the number of query heads must "
                      f"be a multiple of key/value heads, but got {n} vs {kh}")
    g = n // kh
    scale_value = 1.0 / np.sqrt(h) if scale is None else scale

    logits_dtype = jnp.promote_types(key_dtype, dtypes.float32)
    grouped_q = jnp.reshape(q, (b, t, kh, g, h)).astype(logits_dtype)
    logits = jnp.einsum("BTKGH,BSKH->BKGTS", grouped_q, k.astype(logits_dtype))
    logits = logits * jnp.asarray(scale_value, logits_dtype)
    if bias is not None:
        logits = (logits + _grouped(bias, kh, g)).astype(logits_dtype)

    keep = None
    if mask is not None:
        keep = _grouped(mask, kh, g)
    if is_causal:
        keep = _and(keep, jnp.tril(jnp.ones((t, s), dtypes.bool_)))
    if local_window_size is not None:
        left, right = local_window_size
        query_pos = conv.iota(dtype=dtypes.int32, shape=(t, s), dimension=0)
        key_pos = conv.iota(dtype=dtypes.int32, shape=(t, s), dimension=1)
        keep = _and(keep, (query_pos <= key_pos + left) & (query_pos >= key_pos - right))
    if query_seq_lengths is not None:
        query_pos = conv.iota(dtype=dtypes.int32, shape=(1, 1, 1, t, 1), dimension=3)
        lengths = jnp.reshape(query_seq_lengths, (b, 1, 1, 1, 1))
        keep = _and(keep, query_pos < lengths)
    if key_value_seq_lengths is not None:
        key_pos = conv.iota(dtype=dtypes.int32, shape=(1, 1, 1, 1, s), dimension=4)
        lengths = jnp.reshape(key_value_seq_lengths, (b, 1, 1, 1, 1))
        keep = _and(keep, key_pos < lengths)
    if keep is not None:
        big = min(float(np.finfo(logits_dtype).max), float(np.finfo(np.float32).max))
        logits = jnp.where(keep, logits, jnp.asarray(-0.7 * big, logits_dtype))

    logits = logits.astype(dtypes.float32)  # the softmax is float32, even for float64
    row_max = conv.stop_gradient(jnp.max(logits, axis=-1, keepdims=True))  # shift-invariant
    unnormalized = jnp.exp(logits - row_max)
    row_sum = jnp.sum(unnormalized, axis=-1, keepdims=True)
    probs = (unnormalized / row_sum).astype(key_dtype)
    encoded = jnp.einsum("BKGTS,BSKH->BTKGH", probs, v)
    encoded = jnp.reshape(encoded, (b, t, n, h))
    if query_seq_lengths is not None:
        positions = conv.iota(dtype=dtypes.int32, shape=(1, t, 1, 1), dimension=1)
        padded = positions < jnp.reshape(query_seq_lengths, (b, 1, 1, 1))
        encoded = encoded * padded.astype(abstractify(encoded).dtype)
    encoded = jnp.reshape(encoded, output_shape)
    if not return_residual:
        return encoded
    lse = (jnp.log(row_sum) + row_max)[..., 0].astype(key_dtype)  # B K G T
    lse = jnp.transpose(jnp.reshape(lse, (b, n, t)), (0, 2, 1))
    return encoded, conv.stop_gradient(jnp.reshape(lse, output_shape[:-1]))


def _and(keep: Any, more: Any) -> Any:
    return more if keep is None else jnp.logical_and(keep, more)
