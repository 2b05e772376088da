"""``jax.random``'s counting samplers -- poisson, binomial and multinomial -- by JAX's
algorithms (those of TensorFlow and NumPy), so that a key gives JAX's counts:

- poisson: Knuth's multiplication method for ``lam < 10``, Hormann's transformed rejection
  (PTRS) otherwise;
- binomial: inversion by summed geometric draws for ``n * min(p, 1 - p) <= 10``,
  Kachitvichyanukul and Schmeiser's BTRS otherwise;
- multinomial: a binomial draw per category from what the earlier ones left.

Each method is one `lax.while_loop` over the whole sample array (every element draws each
round; the loop ends when the last one is done), run for every element -- JAX evaluates
both methods and selects. JAX also bounds the loops by the dtype's largest value; that
bound is never reached and is left out here.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.lax import lgamma
from transpiler.lax.control import while_loop
from transpiler.primitives import conversions as conv
from transpiler.primitives.core import abstractify, broadcast_shapes, dtype_error
from transpiler.random.core import (Shape, check_param_shape, float_dtype, split,
                                    static_shape, uniform)
from transpiler.random.keys import raw_key


def _int_dtype(name: str, dtype: Any) -> np.dtype:
    dt = dtypes.default_int() if dtype is None else dtypes.canonicalize(dtype)
    if not dtypes.is_int(dt):
        raise dtype_error(f"random.{name}: dtype must be an integer dtype, got {dt}")
    return dt


def _inexact(x: Any) -> Any:
    """`x` as an array of its float dtype (integers and bools become the default float)."""
    x = jnp.asarray(x)
    return x if dtypes.is_float(x.dtype) else x.astype(dtypes.default_float())


# --- poisson -------------------------------------------------------------------------------------

def _poisson_knuth(key: Any, lam: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """Multiply uniforms until the product falls below ``exp(-lam)``: the count of factors
    before that, minus one (in log space: add logs until below ``-lam``)."""
    def running(carry: tuple) -> Any:
        return jnp.any(carry[2] > -lam)

    def step(carry: tuple) -> tuple:
        k, key, log_prod = carry
        keys = split(key)
        k = jnp.where(log_prod > -lam, k + 1, k)
        u = uniform(keys[1], shape, np.float32)
        return k, keys[0], log_prod + jnp.log(u)

    init = (jnp.zeros(shape, dtype), key, jnp.zeros(shape, np.float32))
    return (while_loop(running, step, init)[0] - 1).astype(dtype)


def _poisson_rejection(key: Any, lam: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """Hormann's transformed rejection with squeeze (PTRS): a candidate from a uniform pair,
    accepted quickly inside the squeeze, else by comparing log densities."""
    log_lam = jnp.log(lam)
    b = 0.931 + 2.53 * jnp.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def running(carry: tuple) -> Any:
        return jnp.any(~carry[1])

    def step(carry: tuple) -> tuple:
        k_out, accepted, key = carry
        keys = split(key, 3)
        u = uniform(keys[1], shape, lam.dtype) - 0.5
        v = uniform(keys[2], shape, lam.dtype)
        u_shifted = 0.5 - jnp.abs(u)
        k = jnp.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = jnp.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lam + k * log_lam - lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept = accept1 | (~reject & (s <= t))
        return jnp.where(accept, k, k_out), accepted | accept, keys[0]

    init = (jnp.full(shape, -1, lam.dtype), jnp.zeros(shape, bool), key)
    return while_loop(running, step, init)[0].astype(dtype)


def poisson(key: Any, lam: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Poisson(lam) counts (integers; default int32, int64 with x64): Knuth's method for
    ``lam < 10``, transformed rejection otherwise, computed in float32 as in JAX. A
    negative or NaN `lam` gives -1 (JAX's value)."""
    key = raw_key("poisson", key)
    dt = _int_dtype("poisson", dtype)
    lam_shape = abstractify(lam, 1, "poisson").shape
    shape = lam_shape if shape is None else static_shape("poisson", shape)
    lam = conv.convert_element_type(jnp.broadcast_to(lam, shape), dtype=dtypes.float32)
    use_knuth = jnp.isnan(lam) | (lam < 10)
    lam_knuth = jnp.where(use_knuth, lam, np.float32(0))
    lam_rejection = jnp.where(use_knuth, np.float32(1e5), lam)  # (a value quick to accept)
    result = jnp.where(use_knuth, _poisson_knuth(key, lam_knuth, shape, dt),
                       _poisson_rejection(key, lam_rejection, shape, dt))
    return jnp.where(lam == 0, jnp.zeros_like(result), result)


# --- binomial ------------------------------------------------------------------------------------

_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_approx_tail(k: Any) -> Any:
    """``log k! - (log sqrt(2 pi) + (k + 1/2) log(k + 1) - (k + 1))``: tabulated for
    ``k <= 9``, a series beyond."""
    table = np.asarray(_STIRLING_TAIL, abstractify(k).dtype)
    tabulated = k <= 9
    k = jnp.clip(k, 0.0, 9.0)
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    return jnp.where(tabulated, jnp.take(table, jnp.floor(k).astype(np.int32)), approx)


def _binomial_inversion(key: Any, count: Any, prob: Any, shape: tuple[int, ...],
                        dtype: np.dtype) -> Any:
    """The number of geometric(prob) waiting times that fit in `count` trials."""
    log1minusprob = jnp.log1p(-prob)

    def running(carry: tuple) -> Any:
        return jnp.any(carry[1] <= count)

    def step(carry: tuple) -> tuple:
        num_geom, geom_sum, key = carry
        keys = split(key)  # (JAX's order: the draw's key first)
        num_geom = jnp.where(geom_sum <= count, num_geom + 1, num_geom)
        u = uniform(keys[0], shape, prob.dtype)
        geom = jnp.ceil(jnp.log(u) / log1minusprob)
        return num_geom, geom_sum + geom, keys[1]

    zeros = jnp.zeros(shape, prob.dtype)
    k = while_loop(running, step, (zeros, zeros, key))[0]
    return (k - 1).astype(dtype)


def _btrs(key: Any, count: Any, prob: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """Transformed rejection with squeeze (BTRS), for ``count * prob > 10``."""
    stddev = jnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((count + 1) * prob)

    def running(carry: tuple) -> Any:
        return jnp.any(~carry[1])

    def step(carry: tuple) -> tuple:
        k_out, accepted, key = carry
        keys = split(key, 3)
        u = uniform(keys[1], shape, prob.dtype)
        v = uniform(keys[2], shape, prob.dtype)
        u = u - 0.5
        us = 0.5 - jnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = jnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = jnp.log(v * alpha / (a / (us * us) + b))
        upper = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
                 + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
                 + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
                 + _stirling_approx_tail(m) + _stirling_approx_tail(count - m)
                 - _stirling_approx_tail(k) - _stirling_approx_tail(count - k))
        accept = accept1 | (~reject & (v <= upper))
        return jnp.where(accept, k, k_out), accepted | accept, keys[0]

    init = (jnp.full(shape, -1, prob.dtype), jnp.zeros(shape, bool), key)
    return while_loop(running, step, init)[0].astype(dtype)


def binomial(key: Any, n: Any, p: Any, shape: Optional[Shape] = None,
             dtype: Any = None) -> Any:
    """Binomial(n, p) counts as floats (JAX's dtype; `n` is floored): inversion for
    ``n * min(p, 1 - p) <= 10``, BTRS otherwise, on ``min(p, 1 - p)`` and reflected. NaN
    for ``p < 0``, NaN `p`, NaN or negative `n`; ``inf`` for infinite `n`; `n` for
    ``p > 1`` (JAX's values)."""
    key = raw_key("binomial", key)
    dt = float_dtype("binomial", dtype)
    n_shape = abstractify(n, 1, "binomial").shape
    p_shape = abstractify(p, 2, "binomial").shape
    if shape is None:
        shape = broadcast_shapes("binomial", n_shape, p_shape)
    else:
        shape = static_shape("binomial", shape)
        check_param_shape("binomial", shape, n, p)
    prob = _inexact(p)
    count = jnp.broadcast_to(conv.convert_element_type(n, dtype=prob.dtype), shape)
    prob = jnp.broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = jnp.where(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = jnp.isnan(count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_is_nan = jnp.isnan(q)
    q_l_0 = q < 0.0
    q = jnp.where(q_is_nan | q_l_0, jnp.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = jnp.floor(count)  # (NumPy's binomial with a float count)
    count_inv = jnp.where(use_inversion, count, jnp.zeros_like(count))
    count_btrs = jnp.where(use_inversion, jnp.full_like(count, 1e4), count)
    q_btrs = jnp.where(use_inversion, jnp.full_like(q, 0.5), q)
    samples = jnp.where(use_inversion, _binomial_inversion(key, count_inv, q, shape, dt),
                        _btrs(key, count_btrs, q_btrs, shape, dt))
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = jnp.where(invalid, jnp.full_like(samples, np.nan), samples)
    samples = jnp.where(count_inf & ~invalid, jnp.full_like(samples, np.inf), samples)
    reflected = count.astype(dt) - samples
    return jnp.where(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples, reflected)


# --- multinomial ---------------------------------------------------------------------------------

def multinomial(key: Any, n: Any, p: Any, *, shape: Optional[Shape] = None,
                dtype: Any = None, unroll: Any = 1) -> Any:
    """Multinomial(n, p) counts over the last axis of `p` (floats by default; `dtype` may
    be any dtype): a binomial draw per category, of the trials the earlier categories left,
    with probability ``p_i / (p_i + ... + p_last)``. `shape` is the result's shape (p's by
    default). The categories are a Python loop (JAX's is a `scan`, and `unroll` has no
    effect here), so that each binomial's loops stay unnested under jit."""
    key = raw_key("multinomial", key)
    dt = dtypes.default_float() if dtype is None else dtypes.canonicalize(dtype)
    n, p = jnp.asarray(n), jnp.asarray(p)
    common = jnp.result_type(n, p)
    if not dtypes.is_float(common):
        common = dtypes.default_float()
    n, p = n.astype(common), p.astype(common)
    if p.ndim < 1:
        raise ValueError("random.multinomial: p must have at least one axis (the "
                         "categories)")
    shape = tuple(p.shape) if shape is None else static_shape("multinomial", shape)
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.moveaxis(jnp.broadcast_to(p, shape), -1, 0)
    remaining = jnp.flip(jnp.cumsum(jnp.flip(p, 0), axis=0), 0)
    ratios = p / jnp.where(remaining == 0, 1, remaining)
    keys = split(key, shape[-1])
    remainder, counts = n, []
    for i in range(shape[-1]):
        count = binomial(keys[i], remainder, jnp.clip(ratios[i], 0, 1), dtype=common)
        remainder = remainder - count
        counts.append(count)
    return jnp.stack(counts, axis=-1).astype(dt)


__all__ = ["binomial", "multinomial", "poisson"]
