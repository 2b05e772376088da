"""``transpiler.nn``: ``jax.nn``'s activations and normalizers as composites over jnp ops.

Each function follows ``jax.nn``'s formula (so results, dtypes and the handling of
infinities match), written with numerically stable forms: softmax subtracts the row
maximum, ``logsumexp`` treats all ``-inf`` rows like JAX, ``softplus`` is
``logaddexp(x, 0)``. ``erf`` and ``erf_inv`` come from `transpiler.lax.special`,
``dot_product_attention`` from `transpiler.attention`; the block-scaled products
(``scaled_matmul``) are their documented formula.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence, Union

import ml_dtypes
import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.errors import located
from transpiler.lax.special import const_like, erf, erf_inv, float_operand
from transpiler.primitives import conversions as conv
from transpiler.primitives import dot as dot_p
from transpiler.primitives import elementwise as ew
from transpiler.primitives.core import abstractify, normalize_axes, normalize_axis, shape_error

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


def mish(x: Any) -> Any:
    """``x * tanh(softplus(x))``."""
    x = float_operand(x)
    return x * jnp.tanh(softplus(x))


def glu(x: Any, axis: int = -1) -> Any:
    """Gated linear unit: `x` halved along `axis`, ``first * sigmoid(second)``."""
    aval = abstractify(x, 0, "glu")
    axis = normalize_axis(axis, aval.ndim, "glu")
    if aval.shape[axis] % 2:
        raise shape_error(f"glu: axis {axis} of an array of shape {list(aval.shape)} has odd "
                          f"size {aval.shape[axis]}; it must be divisible by 2")
    first, second = jnp.split(x, 2, axis)
    return first * sigmoid(second)


def soft_sign(x: Any) -> Any:
    """``x / (|x| + 1)``."""
    return x / (jnp.abs(x) + 1)


def squareplus(x: Any, b: Any = 4) -> Any:
    """``(x + sqrt(x^2 + b)) / 2``, a smooth ReLU."""
    x = float_operand(x)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


def sparse_plus(x: Any) -> Any:
    """0 below -1, ``(x + 1)^2 / 4`` between, `x` above 1."""
    x = jnp.asarray(x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_sigmoid(x: Any) -> Any:
    """``clip((x + 1) / 2, 0, 1)``, the derivative of `sparse_plus`."""
    return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


def log1mexp(x: Any) -> Any:
    """``log(1 - exp(-x))`` for ``x >= 0``, stably: ``log(-expm1(-x))`` below log(2),
    ``log1p(-exp(-x))`` above (Maechler's split, JAX's)."""
    x = float_operand(x)
    near = x < const_like(np.log(2.0), x)
    return jnp.where(near, jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


def identity(x: Any) -> Any:
    """`x` unchanged (as an array)."""
    return jnp.asarray(x)


def tanh(x: Any) -> Any:
    """The hyperbolic tangent (``jnp.tanh``)."""
    return jnp.tanh(x)


# --- normalizers and reductions ------------------------------------------------------------

def _restore_dims(x: Any, axes: tuple[int, ...], ndim: int) -> Any:
    """Re-insert reduced `axes` as size-1 dims (``expand_dims``) for broadcasting."""
    shape = list(abstractify(x).shape)
    for axis in axes:
        shape.insert(axis, 1)
    assert len(shape) == ndim
    return jnp.reshape(x, tuple(shape))


def logsumexp(a: Any, axis: Axis = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False, where: Any = None) -> Any:
    """``log(sum(b * exp(a), axis))``, stably: the maximum is factored out (and replaced by
    0 when it is infinite, so all ``-inf`` rows give ``-inf`` as in JAX). With `b`, a
    negative sum gives NaN unless ``return_sign=True`` (then ``(log|sum|, sign)``). Only
    the elements where `where` is True take part (an empty row gives ``-inf``)."""
    a = float_operand(a)
    if where is not None:
        a = jnp.where(where, a, 0)
    if b is not None:
        a, b = jnp.asarray(a), jnp.asarray(b)
        dt = jnp.result_type(a, b)
        dt = dt if dtypes.is_float(dt) else dtypes.default_float()
        a, b = a.astype(dt), b.astype(dt)
        a = jnp.where(b != 0, a, -np.inf)
    ndim = abstractify(a).ndim
    axes = normalize_axes(axis, ndim, "logsumexp")
    if where is not None:
        amax = jnp.max(a, axis=axes, keepdims=keepdims, where=where, initial=-np.inf)
    else:
        amax = jnp.max(a, axis=axes, keepdims=keepdims) if ndim else a
    amax = conv.stop_gradient(jnp.where(jnp.isfinite(amax), amax, 0))
    amax_dims = amax if keepdims else _restore_dims(amax, axes, ndim)
    exp_a = jnp.exp(a - amax_dims)
    if b is not None:
        exp_a = exp_a * b
    if where is not None:
        sumexp = jnp.sum(exp_a, axis=axes, keepdims=keepdims, where=where)
    else:
        sumexp = jnp.sum(exp_a, axis=axes, keepdims=keepdims) if ndim else exp_a
    sign = jnp.sign(sumexp)
    out = jnp.log(jnp.abs(sumexp)) + amax
    if return_sign:
        return out, sign
    if b is not None:
        out = jnp.where(sign < 0, np.nan, out)
    return out


def softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
    """``exp(x) / sum(exp(x), axis)``, computed as ``exp(x - max(x))`` to avoid overflow.
    Only the elements where `where` is True take part; the others give 0."""
    x = float_operand(x)
    if where is None:
        x_max = jnp.max(x, axis=axis, keepdims=True)
        unnormalized = jnp.exp(x - conv.stop_gradient(x_max))
        return unnormalized / jnp.sum(unnormalized, axis=axis, keepdims=True)
    x_max = jnp.max(x, axis=axis, keepdims=True, where=where, initial=-np.inf)
    unnormalized = jnp.exp(jnp.where(where, x, -np.inf) - conv.stop_gradient(x_max))
    result = unnormalized / jnp.sum(unnormalized, axis=axis, keepdims=True, where=where)
    return jnp.where(where, result, 0)


def log_softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
    """``x - logsumexp(x, axis)``, shifted by the maximum for stability (rows that are all
    ``-inf`` or hold ``+inf`` give NaN, as in JAX). Only the elements where `where` is
    True take part; the others give ``-inf``."""
    x = float_operand(x)
    if where is None:
        shifted = x - conv.stop_gradient(jnp.max(x, axis=axis, keepdims=True))
        return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=axis, keepdims=True))
    x_max = jnp.max(x, axis=axis, keepdims=True, where=where, initial=-np.inf)
    shifted = jnp.where(where, x, -np.inf) - conv.stop_gradient(x_max)
    total = jnp.sum(jnp.exp(shifted), axis=axis, keepdims=True, where=where)
    return jnp.where(where, shifted - jnp.log(total), -np.inf)


def standardize(x: Any, axis: Axis = -1, mean: Any = None, variance: Any = None,
                epsilon: float = 1e-5, where: Any = None, *, algorithm: str = "fast") -> Any:
    """``(x - mean) / sqrt(variance + epsilon)`` along `axis`, the statistics over the
    elements where `where` is True. `algorithm` ``"fast"`` takes the variance as
    ``mean(x^2) - mean(x)^2`` (clipped at 0), ``"stable"`` as ``mean((x - mean)^2)``."""
    if algorithm not in ("fast", "stable"):
        raise located(ValueError, f"standardize: unknown algorithm {algorithm!r}; expected "
                      "'fast' or 'stable'")
    x = float_operand(x)
    if mean is None:
        mean = jnp.mean(x, axis=axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = jnp.mean(jnp.square(x - mean), axis=axis, keepdims=True, where=where)
        else:
            variance = jnp.mean(jnp.square(x), axis=axis, keepdims=True, where=where) - \
                jnp.square(mean)
            variance = jnp.clip(variance, 0)
    return (x - mean) * ew.rsqrt(variance + epsilon)


def logmeanexp(x: Any, axis: Axis = None, where: Any = None, keepdims: bool = False) -> Any:
    """``logsumexp(x) - log(n)`` over `axis`, `n` the number of elements reduced (those
    where `where` is True, when given)."""
    x = float_operand(x)
    aval = abstractify(x)
    axes = normalize_axes(axis, aval.ndim, "logmeanexp")
    if where is None:
        count = float(np.prod([aval.shape[a] for a in axes]))
        return logsumexp(x, axis=axes, keepdims=keepdims) - const_like(np.log(count), x)
    where = jnp.broadcast_to(where, aval.shape)
    lse = logsumexp(jnp.where(where, x, -np.inf), axis=axes, keepdims=keepdims)
    count = jnp.sum(where, axis=axes, keepdims=keepdims).astype(aval.dtype)
    return lse - jnp.log(count)


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


# --- block-scaled products -------------------------------------------------------------------

@dataclasses.dataclass
class BlockScaleConfig:
    """How `scaled_dot_general` quantizes an operand: blocks of `block_size` along the
    contracting axis, stored as `data_type` with one `scale_type` scale each."""

    mode: str
    block_size: int
    data_type: Any
    scale_type: Any
    global_scale: Any
    infer_only: bool


def scaled_matmul(lhs: Any, rhs: Any, lhs_scales: Any, rhs_scales: Any,
                  preferred_element_type: Any = np.float32) -> Any:
    """``jax.nn.scaled_matmul``: ``einsum('BMK,BNK->BMN', lhs * lhs_scales, rhs *
    rhs_scales)``, each scale repeated over its block of the contracting axis ``K``
    (block sizes ``K // lhs_scales.shape[-1]`` and ``K // rhs_scales.shape[-1]``),
    computed in float32 and returned as `preferred_element_type`. (JAX runs it only through
    cuDNN on GPUs; this is the formula its documentation gives.)"""
    operands = [jnp.asarray(t) for t in (lhs, rhs, lhs_scales, rhs_scales)]
    shapes = [tuple(abstractify(t).shape) for t in operands]
    if any(len(shape) != 3 for shape in shapes):
        raise located(ValueError, f"scaled_matmul requires all inputs to be 3-dimensional "
                      f"arrays, got shapes {shapes}")
    (b_a, m_a, k_a), (b_b, n_b, k_b), (b_as, m_as, k_as), (b_bs, n_bs, k_bs) = shapes
    if k_a != k_b or b_a != b_b:
        raise located(ValueError, f"scaled_matmul requires inputs a and b to have matching "
                      f"batch (B) and contract (K) dimensions, but got shapes {shapes[0]} and "
                      f"{shapes[1]}")
    if k_as != k_bs or b_as != b_bs:
        raise located(ValueError, f"scaled_matmul requires scales to have matching batch (B) "
                      f"and contract (K) dimensions, but got shapes {shapes[2]} and "
                      f"{shapes[3]}")
    if m_as != m_a or n_bs != n_b or b_as != b_a or k_as == 0 or k_a % k_as:
        raise located(ValueError, f"scaled_matmul requires scales to match non-contract "
                      f"dimensions of inputs and to divide K, but got shapes a: {shapes[0]}, "
                      f"b: {shapes[1]}, a_scales: {shapes[2]}, b_scales: {shapes[3]}")
    a, b, a_scales, b_scales = (t.astype(dtypes.float32) for t in operands)
    a = a * jnp.repeat(a_scales, k_a // k_as, axis=-1)
    b = b * jnp.repeat(b_scales, k_b // k_bs, axis=-1)
    out = jnp.einsum("BMK,BNK->BMN", a, b)
    return out.astype(dtypes.canonicalize(preferred_element_type))


def get_scaled_dot_general_config(mode: str, global_scale: Any = None) -> BlockScaleConfig:
    """``jax.nn.get_scaled_dot_general_config``: the ``"mxfp8"`` (float8_e4m3fn data,
    float8_e8m0fnu scales, blocks of 32) or ``"nvfp4"`` (float4_e2m1fn data, float8_e4m3fn
    scales, blocks of 16, a global scale) quantization of `scaled_dot_general`."""
    if mode == "nvfp4":
        return BlockScaleConfig(
            mode="nvfp4", block_size=16, data_type=ml_dtypes.float4_e2m1fn,
            scale_type=ml_dtypes.float8_e4m3fn, infer_only=False,
            global_scale=jnp.ones((1,), dtypes.float32) if global_scale is None
            else global_scale)
    if mode == "mxfp8":
        return BlockScaleConfig(mode="mxfp8", block_size=32, data_type=ml_dtypes.float8_e4m3fn,
                                scale_type=ml_dtypes.float8_e8m0fnu, global_scale=None,
                                infer_only=False)
    raise located(ValueError, f"Unsupported mode: {mode!r}", "use 'mxfp8' or 'nvfp4'")


def scaled_dot_general(lhs: Any, rhs: Any, dimension_numbers: Any,
                       preferred_element_type: Any = np.float32, configs: Any = None,
                       implementation: Any = None) -> Any:
    """``jax.nn.scaled_dot_general``: without `configs`, ``lax.dot_general`` with
    `preferred_element_type` (as in JAX). Quantizing through `configs` needs float8 and
    float4 arrays, which this library does not have (JAX runs it only on GPUs): an error."""
    if configs is not None:
        raise located(NotImplementedError, "scaled_dot_general with configs quantizes to "
                      "float8/float4 blocks, which are not supported here (JAX runs it only "
                      "through cuDNN on GPUs)", "pass configs=None for lax.dot_general")
    return dot_p.dot_general(
        lhs, rhs, dimension_numbers=dot_p.normalize_dimension_numbers(dimension_numbers),
        preferred_element_type=dtypes.canonicalize(preferred_element_type))


__all__ = ["relu", "relu6", "sigmoid", "log_sigmoid", "softplus", "silu", "swish", "elu",
           "celu", "selu", "leaky_relu", "hard_tanh", "hard_sigmoid", "hard_swish",
           "hard_silu", "gelu", "erf", "erf_inv", "logsumexp", "softmax", "log_softmax",
           "standardize", "one_hot", "initializers", "mish", "glu", "soft_sign", "squareplus",
           "sparse_plus", "sparse_sigmoid", "log1mexp", "identity", "tanh", "logmeanexp",
           "dot_product_attention", "scaled_matmul", "scaled_dot_general",
           "get_scaled_dot_general_config"]

# ``jax.nn.initializers`` (imported last, as the other names are this module's)
from transpiler import initializers  # noqa: E402
from transpiler.attention import dot_product_attention  # noqa: E402
