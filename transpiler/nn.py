"""``transpiler.nn``: ``jax.nn``'s activations and normalizers as composites over jnp ops.

Each function follows ``jax.nn``'s formula (so results, dtypes and the handling of
infinities match), written with numerically stable forms: softmax subtracts the row
maximum, ``logsumexp`` treats all ``-inf`` rows like JAX, ``softplus`` is
``logaddexp(x, 0)``. ``erf`` and ``erf_inv`` come from `transpiler.lax.special`.
"""

from __future__ import annotations

from typing import Any, Sequence, Union

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.lax.special import const_like, erf, erf_inv, float_operand
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives.core import abstractify, normalize_axes, normalize_axis

Axis = Union[None, int, Sequence[int]]


# --- activations ---------------------------------------------------------------------------

def relu(x: Any) -> Any:
    """``max(x, 0)``, whose derivative at 0 is 0 (JAX's convention; a maximum would split
    the tie, 0.5). NaN stays NaN."""
    return jnp.where(x > 0, x, jnp.where(jnp.isnan(x), x, 0))


def relu6(x: Any) -> Any:
    """``min(max(x, 0), 6)``, whose derivative is 0 at 0 and at 6 (JAX's convention)."""
    return jnp.where(x > 0, jnp.where(x < 6, x, 6.0), jnp.where(jnp.isnan(x), x, 0))


def sigmoid(x: Any) -> Any:
    """The logistic function ``1 / (1 + exp(-x))`` (``lax.logistic``)."""
    return ew.logistic(x)


def log_sigmoid(x: Any) -> Any:
    """``log(sigmoid(x))`` computed stably as ``-softplus(-x)``."""
    return -softplus(-float_operand(x))


def softplus(x: Any) -> Any:
    """``log(1 + exp(x))`` computed stably as ``logaddexp(x, 0)``."""
    return jnp.logaddexp(float_operand(x), 0)


def silu(x: Any) -> Any:
    """``x * sigmoid(x)`` (also called swish)."""
    x = float_operand(x)
    return x * sigmoid(x)


swish = silu


def elu(x: Any, alpha: Any = 1.0) -> Any:
    """``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)``; exp only sees non-positive values."""
    x = float_operand(x)
    safe_x = jnp.where(x > 0, 0.0, x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(safe_x))


def celu(x: Any, alpha: Any = 1.0) -> Any:
    """``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
    x = float_operand(x)
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


def selu(x: Any) -> Any:
    """Scaled ELU with the self-normalizing constants."""
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
    """``x`` if ``x >= 0`` else ``negative_slope * x``."""
    return jnp.where(jnp.greater_equal(x, 0), x, negative_slope * x)


def hard_tanh(x: Any) -> Any:
    """``clip(x, -1, 1)``."""
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


def hard_sigmoid(x: Any) -> Any:
    """``relu6(x + 3) / 6``."""
    return relu6(x + 3.0) / 6.0


def hard_swish(x: Any) -> Any:
    """``x * hard_sigmoid(x)``."""
    return x * hard_sigmoid(x)


hard_silu = hard_swish


def gelu(x: Any, approximate: bool = True) -> Any:
    """Gaussian error linear unit: the tanh approximation, or ``x * Phi(x)`` through erf."""
    x = float_operand(x)
    if approximate:
        sqrt_2_over_pi = const_like(np.sqrt(2 / np.pi), x)
        cdf = 0.5 * (1.0 + jnp.tanh(sqrt_2_over_pi * (x + const_like(0.044715, x) * (x ** 3))))
        return x * cdf
    return x * (0.5 * (1.0 + erf(x * const_like(np.sqrt(0.5), x))))


# --- normalizers and reductions ------------------------------------------------------------

def _restore_dims(x: Any, axes: tuple[int, ...], ndim: int) -> Any:
    """Re-insert reduced `axes` as size-1 dims (``expand_dims``) for broadcasting."""
    shape = list(abstractify(x).shape)
    for axis in axes:
        shape.insert(axis, 1)
    assert len(shape) == ndim
    return jnp.reshape(x, tuple(shape))


def logsumexp(a: Any, axis: Axis = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False) -> Any:
    """``log(sum(b * exp(a), axis))``, stably: the maximum is factored out (and replaced by
    0 when it is infinite, so all ``-inf`` rows give ``-inf`` as in JAX). With `b`, a
    negative sum gives NaN unless ``return_sign=True`` (then ``(log|sum|, sign)``)."""
    a = float_operand(a)
    if b is not None:
        a, b = jnp.asarray(a), jnp.asarray(b)
        dt = jnp.result_type(a, b)
        dt = dt if dtypes.is_float(dt) else dtypes.default_float()
        a, b = a.astype(dt), b.astype(dt)
        a = jnp.where(b != 0, a, -np.inf)
    ndim = abstractify(a).ndim
    axes = normalize_axes(axis, ndim, "logsumexp")
    amax = jnp.max(a, axis=axes, keepdims=keepdims) if ndim else a
    amax = jnp.where(jnp.isfinite(amax), amax, 0)
    amax_dims = amax if keepdims else _restore_dims(amax, axes, ndim)
    exp_a = jnp.exp(a - amax_dims)
    if b is not None:
        exp_a = exp_a * b
    sumexp = jnp.sum(exp_a, axis=axes, keepdims=keepdims) if ndim else exp_a
    sign = jnp.sign(sumexp)
    out = jnp.log(jnp.abs(sumexp)) + amax
    if return_sign:
        return out, sign
    if b is not None:
        out = jnp.where(sign < 0, np.nan, out)
    return out


def softmax(x: Any, axis: Axis = -1) -> Any:
    """``exp(x) / sum(exp(x), axis)``, computed as ``exp(x - max(x))`` to avoid overflow."""
    x = float_operand(x)
    x_max = jnp.max(x, axis=axis, keepdims=True)
    unnormalized = jnp.exp(x - x_max)
    return unnormalized / jnp.sum(unnormalized, axis=axis, keepdims=True)


def log_softmax(x: Any, axis: Axis = -1) -> Any:
    """``x - logsumexp(x, axis)``, shifted by the maximum for stability (rows that are all
    ``-inf`` or hold ``+inf`` give NaN, as in JAX)."""
    x = float_operand(x)
    shifted = x - jnp.max(x, axis=axis, keepdims=True)
    return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=axis, keepdims=True))


def standardize(x: Any, axis: Axis = -1, mean: Any = None, variance: Any = None,
                epsilon: float = 1e-5) -> Any:
    """``(x - mean) / sqrt(variance + epsilon)`` along `axis`."""
    x = float_operand(x)
    if mean is None:
        mean = jnp.mean(x, axis=axis, keepdims=True)
    if variance is None:
        variance = jnp.mean(jnp.square(x), axis=axis, keepdims=True) - jnp.square(mean)
    return (x - mean) * ew.rsqrt(variance + epsilon)


def one_hot(x: Any, num_classes: int, dtype: Any = None, axis: int = -1) -> Any:
    """``x[..., None] == arange(num_classes)`` as `dtype` (default float), the class axis
    inserted at `axis`. Out-of-range entries give all-zero rows."""
    if not isinstance(num_classes, (int, np.integer)):
        raise TypeError("one_hot: num_classes must be a static Python int, got "
                        f"{type(num_classes).__name__}; mark it static in jit")
    aval = abstractify(x, 0, "one_hot")
    position = normalize_axis(axis, aval.ndim + 1, "one_hot")
    lhs_shape = list(aval.shape)
    lhs_shape.insert(position, 1)
    rhs_shape = [1] * aval.ndim
    rhs_shape.insert(position, int(num_classes))
    classes = conv.iota(dtype=aval.dtype, shape=tuple(rhs_shape), dimension=position)
    hits = jnp.equal(jnp.reshape(x, tuple(lhs_shape)), classes)
    target = dtypes.default_float() if dtype is None else dtypes.canonicalize(dtype)
    return conv.convert_element_type(hits, dtype=target)


__all__ = ["relu", "relu6", "sigmoid", "log_sigmoid", "softplus", "silu", "swish", "elu",
           "celu", "selu", "leaky_relu", "hard_tanh", "hard_sigmoid", "hard_swish",
           "hard_silu", "gelu", "erf", "erf_inv", "logsumexp", "softmax", "log_softmax",
           "standardize", "one_hot", "initializers"]

# ``jax.nn.initializers`` (imported last, as the other names are this module's)
from transpiler import initializers  # noqa: E402
