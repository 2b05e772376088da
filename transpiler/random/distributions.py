"""More of ``jax.random``'s samplers, each JAX's algorithm over `core`'s uniform and normal
draws, so that a key gives JAX's values: exponential, laplace, logistic, cauchy, pareto,
lognormal, weibull_min, rayleigh, wald, triangular, maxwell, double_sided_maxwell,
rademacher, geometric, multivariate_normal and orthogonal (through `jnp.linalg`'s
Cholesky/eigh/SVD and QR), and the gamma family: gamma and loggamma (Marsaglia and
Tsang's rejection method, one draw per element in a `lax.map`), beta, dirichlet,
chisquare, t and f, generalized_normal and ball. (The counting samplers -- poisson,
binomial, multinomial -- are in counts.py.) Not yet: the derivative of a gamma sample with
respect to its shape (JAX's implicit reparameterization).
"""

from __future__ import annotations

import operator
from typing import Any, Optional

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.lax import stop_gradient
from transpiler.lax.control import while_loop
from transpiler.lax.incomplete_gamma import random_gamma_grad
from transpiler.lax.loops import map as lax_map
from transpiler.numpy import linalg as jla
from transpiler.primitives import conversions as conv
from transpiler.primitives.core import abstractify, broadcast_shapes, dtype_error, shape_error
from transpiler.random.core import (Shape, bernoulli, check_param_shape, float_dtype, normal,
                                    split, static_shape, uniform)
from transpiler.random.keys import raw_key


def _shape_of(name: str, shape: Optional[Shape], *params: Any) -> tuple[int, ...]:
    """`shape`, or the parameters' broadcast shape when it is None; the parameters must
    broadcast to it (JAX's ``_check_broadcast_shapes``)."""
    if shape is None:
        return broadcast_shapes(name, *(abstractify(p, 0, name).shape for p in params))
    shape = static_shape(name, shape)
    check_param_shape(name, shape, *params)
    return shape


def _static_shape_checked(name: str, shape: Any, *param_shapes: tuple) -> tuple[int, ...]:
    shape = static_shape(name, shape)
    broadcast_shapes(name, shape, *param_shapes)
    return shape


def _eps(dtype: np.dtype) -> float:
    return float(dtypes.finfo(dtype).eps)


def _two_keys(key: Any) -> tuple[Any, Any]:
    keys = split(key)
    return keys[0], keys[1]


# --- transforms of one uniform draw ---------------------------------------------------------

def exponential(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Exponential samples ``-log1p(-u)``."""
    key = raw_key("exponential", key)
    return -jnp.log1p(-uniform(key, shape, float_dtype("exponential", dtype)))


def laplace(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Laplace samples ``sign(u) log1p(-|u|)`` with ``u`` uniform on ``(-1, 1)``."""
    key = raw_key("laplace", key)
    dt = float_dtype("laplace", dtype)
    u = uniform(key, shape, dt, minval=-1.0 + float(dtypes.finfo(dt).epsneg), maxval=1.0)
    return jnp.sign(u) * jnp.log1p(-jnp.abs(u))


def logistic(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Logistic samples ``log(u) - log1p(-u)``."""
    key = raw_key("logistic", key)
    dt = float_dtype("logistic", dtype)
    x = uniform(key, shape, dt, minval=float(dtypes.finfo(dt).tiny), maxval=1.0)
    return jnp.log(x) - jnp.log1p(-x)


def cauchy(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Cauchy samples ``tan(pi (u - 1/2))``."""
    key = raw_key("cauchy", key)
    dt = float_dtype("cauchy", dtype)
    u = uniform(key, shape, dt, minval=_eps(dt), maxval=1.0)
    return jnp.tan(np.array(np.pi, dt) * (u - np.array(0.5, dt)))


def pareto(key: Any, b: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Pareto samples ``exp(e / b)`` with ``e`` exponential."""
    key = raw_key("pareto", key)
    dt = float_dtype("pareto", dtype)
    shape = _shape_of("pareto", shape, b)
    return jnp.exp(exponential(key, shape, dt) / conv.convert_element_type(b, dtype=dt))


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Shape = (),
                dtype: Any = None) -> Any:
    """Weibull samples ``scale (-log1p(-u))^(1 / concentration)``."""
    key = raw_key("weibull_min", key)
    dt = float_dtype("weibull_min", dtype)
    u = uniform(key, static_shape("weibull_min", shape), dt, minval=0, maxval=1)
    return jnp.power(-jnp.log1p(-u), 1.0 / concentration) * scale


def rayleigh(key: Any, scale: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Rayleigh samples ``scale sqrt(-2 log u)``."""
    key = raw_key("rayleigh", key)
    dt = float_dtype("rayleigh", dtype)
    shape = _shape_of("rayleigh", shape, scale)
    u = uniform(key, shape, dt)
    scale = jnp.broadcast_to(conv.convert_element_type(scale, dtype=dt), shape)
    return scale * jnp.sqrt(jnp.log(u) * np.array(-2, dt))


def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Optional[Shape] = None,
               dtype: Any = None) -> Any:
    """Triangular samples on ``[left, right]`` peaking at `mode` (inverse CDF)."""
    key = raw_key("triangular", key)
    dt = float_dtype("triangular", dtype)
    shape = _shape_of("triangular", shape, left, mode, right)
    left, mode, right = (jnp.broadcast_to(conv.convert_element_type(v, dtype=dt), shape)
                         for v in (left, mode, right))
    split_at = (mode - left) / (right - left)
    u = uniform(key, shape, dt)
    below = left + jnp.sqrt(u * (right - left) * (mode - left))
    above = right - jnp.sqrt((1 - u) * (right - left) * (right - mode))
    return jnp.where(u < split_at, below, above)


def geometric(key: Any, p: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """The number of Bernoulli(p) trials up to the first success: ``floor(log u /
    log1p(-p)) + 1``."""
    key = raw_key("geometric", key)
    dt = dtypes.default_int() if dtype is None else dtypes.canonicalize(dtype)
    if not dtypes.is_int(dt):
        raise dtype_error(f"random.geometric: dtype must be an integer dtype, got {dt}")
    shape = _shape_of("geometric", shape, p)
    p = jnp.asarray(p)
    if not dtypes.is_float(p.dtype):
        p = p.astype(dtypes.default_float())
    u = uniform(key, shape, p.dtype)
    u = jnp.where(u == 0, np.array(1, p.dtype), u)
    trials = jnp.floor(jnp.log(u) / jnp.broadcast_to(jnp.log1p(-p), shape)) + 1
    return trials.astype(dt)


# --- transforms of normal draws -------------------------------------------------------------

def lognormal(key: Any, sigma: Any = 1.0, shape: Optional[Shape] = None,
              dtype: Any = None) -> Any:
    """Log-normal samples ``exp(sigma z)``."""
    key = raw_key("lognormal", key)
    dt = float_dtype("lognormal", dtype)
    shape = _shape_of("lognormal", shape, sigma)
    return jnp.exp(normal(key, shape, dt) * conv.convert_element_type(sigma, dtype=dt))


def wald(key: Any, mean: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Wald (inverse Gaussian) samples by Michael, Schucany and Haas' transformation."""
    key = raw_key("wald", key)
    dt = float_dtype("wald", dtype)
    shape = _shape_of("wald", shape, mean)
    k1, k2 = _two_keys(key)
    mean = jnp.broadcast_to(conv.convert_element_type(mean, dtype=dt), shape)
    v = normal(k1, shape, dt)
    z = uniform(k2, shape, dt)
    y = v * v
    mean_sq = mean * mean
    root = jnp.sqrt(4 * mean * y + mean_sq * (y * y))
    x = mean + mean_sq * y / 2 - mean / 2 * root
    return jnp.where(z <= mean / (mean + x), x, mean_sq / x)


def maxwell(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Maxwell samples: the length of a standard normal 3-vector."""
    key = raw_key("maxwell", key)
    dt = float_dtype("maxwell", dtype)
    shape = static_shape("maxwell", shape)
    return jla.norm(normal(key, shape + (3,), dt), axis=-1)


def rademacher(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """-1 or +1 with equal probability."""
    key = raw_key("rademacher", key)
    dt = dtypes.default_int() if dtype is None else dtypes.canonicalize(dtype)
    samples = bernoulli(key, 0.5, static_shape("rademacher", shape)).astype(dt)
    return (2 * samples - 1).astype(dt)


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Shape = (),
                         dtype: Any = None) -> Any:
    """A Maxwell sample with a random sign, scaled and shifted."""
    key = raw_key("double_sided_maxwell", key)
    dt = float_dtype("double_sided_maxwell", dtype)
    params = broadcast_shapes("double_sided_maxwell", abstractify(loc).shape,
                              abstractify(scale).shape)
    shape = static_shape("double_sided_maxwell", shape) or params
    shape = shape + params
    maxwell_key, sign_key = _two_keys(key)
    return rademacher(sign_key, shape, dt) * maxwell(maxwell_key, shape, dt) * scale + loc


def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Optional[Shape] = None,
                        dtype: Any = None, method: str = "cholesky") -> Any:
    """Samples ``mean + factor @ z`` with ``factor factor^T == cov`` by `method`
    ('cholesky', 'eigh' or 'svd')."""
    key = raw_key("multivariate_normal", key)
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError(f"random.multivariate_normal: method must be one of 'svd', 'eigh' "
                         f"or 'cholesky', got {method!r}")
    dt = float_dtype("multivariate_normal", dtype)
    mean = jnp.asarray(mean).astype(dt)
    cov = jnp.asarray(cov).astype(dt)
    if mean.ndim < 1:
        raise shape_error("random.multivariate_normal requires mean.ndim >= 1, got "
                          f"mean.ndim == {mean.ndim}")
    if cov.ndim < 2:
        raise shape_error("random.multivariate_normal requires cov.ndim >= 2, got "
                          f"cov.ndim == {cov.ndim}")
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise shape_error(f"random.multivariate_normal requires cov.shape == (..., n, n) for "
                          f"n={n}, but got cov.shape == {tuple(cov.shape)}")
    if shape is None:
        shape = broadcast_shapes("multivariate_normal", mean.shape[:-1], cov.shape[:-2])
    else:
        shape = static_shape("multivariate_normal", shape)
        broadcast_shapes("multivariate_normal", shape, mean.shape[:-1], cov.shape[:-2])
    if method == "svd":
        u, s, _ = jla.svd(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = jla.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = jla.cholesky(cov)
    z = normal(key, shape + (n,), dt)
    return mean + jnp.einsum("...ij,...j->...i", factor, z)


def orthogonal(key: Any, n: int, shape: Shape = (), dtype: Any = None,
               m: Optional[int] = None) -> Any:
    """Uniformly (Haar) distributed ``(n, m)`` matrices with orthonormal columns (or rows):
    the Q of a normal matrix's QR with R's diagonal signs folded in."""
    key = raw_key("orthogonal", key)
    dt = float_dtype("orthogonal", dtype)
    shape = static_shape("orthogonal", shape)
    n = operator.index(n)
    m = n if m is None else operator.index(m)
    z = normal(key, (*shape, max(n, m), min(n, m)), dt)
    q, r = jla.qr(z)
    d = jnp.diagonal(r, axis1=-2, axis2=-1)
    x = q * jnp.expand_dims(jnp.sign(d), -2)
    return jnp.swapaxes(x, -1, -2) if n < m else x


# --- the gamma family -------------------------------------------------------------------------

def _gamma_one(key: Any, alpha: Any, log_space: bool) -> Any:
    """One Gamma(alpha) draw by Marsaglia and Tsang's method, JAX's exactly: rejection
    rounds of a normal and a uniform draw (three-way key splits), alpha < 1 boosted to
    alpha + 1 and scaled by ``u^(1/alpha)`` (added as ``log(u) / alpha`` in log space)."""
    dtype = abstractify(alpha).dtype
    one = np.array(1, dtype)
    boost_mask = alpha >= one
    alpha_orig = alpha
    alpha = jnp.where(boost_mask, alpha, alpha + one)
    d = alpha - np.array(1 / 3, dtype)
    c = np.array(1 / 3, dtype) / jnp.sqrt(d)

    def rejected(x2: Any, v3: Any, u: Any) -> Any:
        squeeze = u >= one - np.array(0.0331, dtype) * (x2 * x2)
        return squeeze & (jnp.log(u) >= x2 * np.array(0.5, dtype) + d * (one - v3 + jnp.log(v3)))

    # JAX nests a loop of normal draws (until v > 0) in the rejection loop; nested loops
    # drawing random bits crashed IREE 3.13, so one loop runs both: `inner` says whether a
    # round's normal draws are under way, and each step computes every candidate and
    # selects, so the keys advance exactly as in JAX's two loops.
    def unfinished(state: tuple) -> Any:
        _, _, _, _, x2, v3, u, inner = state
        return inner | rejected(x2, v3, u)

    def step(state: tuple) -> tuple:
        key, x_key, u_key, v, x2, v3, u, inner = state
        fresh = split(key, 3)  # a new round: key, the normal draws' key, the uniform's
        key = jnp.where(inner, key, fresh[0])
        x_key = jnp.where(inner, x_key, fresh[1])
        u_key = jnp.where(inner, u_key, fresh[2])
        pair = split(x_key)
        x_key = pair[0]
        x = normal(pair[1], (), dtype)
        v = one + x * c
        done = v > 0
        x2 = jnp.where(done, x * x, x2)
        v3 = jnp.where(done, v * v * v, v3)
        u = jnp.where(done, uniform(u_key, (), dtype), u)
        return key, x_key, u_key, v, x2, v3, u, ~done

    keys = split(key)
    zero_key = jnp.zeros((2,), dtypes.uint32)
    state = (keys[0], zero_key, zero_key, -one, np.array(0, dtype), one, np.array(2, dtype),
             np.array(False))
    v = while_loop(unfinished, step, state)[5]
    if log_space:
        log_samples = -exponential(keys[1], (), dtype)
        log_boost = jnp.where(boost_mask | (log_samples == 0), np.array(0, dtype),
                              log_samples * (one / alpha_orig))
        return jnp.log(d) + jnp.log(v) + log_boost
    samples = 1 - uniform(keys[1], (), dtype)
    boost = jnp.where(boost_mask, one, jnp.power(samples, one / alpha_orig))
    return d * v * boost


def _draws(keys: Any, alphas: Any, log_space: bool) -> Any:
    """One Gamma(alpha) draw (or its log) per key and shape; differentiable in `alphas`
    (`_reparameterized` below)."""
    return lax_map(lambda pair: _gamma_one(pair[0], pair[1], log_space), (keys, alphas))


def _draws_jvp(log_space: bool, primals: tuple, tangents: tuple) -> tuple:
    """JAX's implicit reparameterization: a sample ``x`` with ``P(a, x) = u`` (u fixed by
    the key) moves by ``dx/da = -(dP/da) / (dP/dx)`` (``lax.random_gamma_grad``); a log
    sample by that over ``x`` (``x`` at least the smallest normal float)."""
    keys, alphas = primals
    alpha_dot = tangents[1]
    out = _draws(keys, alphas, log_space)
    if log_space:
        samples = jnp.exp(out)
        tiny = np.array(dtypes.finfo(abstractify(out).dtype).tiny, abstractify(out).dtype)
        samples = jnp.where(samples == 0, tiny, samples)
        slope = random_gamma_grad(alphas, samples) / samples
    else:
        slope = random_gamma_grad(alphas, out)
    return out, slope * alpha_dot


def _reparameterized() -> None:
    """Make `_draws` a custom_jvp with `_draws_jvp` as its rule (reverse mode transposes
    it): without it, the transforms would differentiate the rejection loop with its draws
    held fixed, a different (biased) estimator from JAX's -- a silent wrong answer."""
    from transpiler.transforms.forward.custom_jvp import CustomJVP  # upward: the transforms
    wrapped = CustomJVP(_draws, nondiff_argnums=(2,))
    wrapped.defjvp(_draws_jvp)
    globals()["_draws"] = wrapped


_reparameterized()


def _gamma(name: str, key: Any, a: Any, shape: Optional[Shape], dtype: Any,
           log_space: bool) -> Any:
    key = raw_key(name, key)
    dt = float_dtype(name, dtype)
    shape = _shape_of(name, shape, stop_gradient(a))  # (its shape only: no derivative)
    a = jnp.broadcast_to(conv.convert_element_type(a, dtype=dt), shape)
    size = int(np.prod(shape, dtype=np.int64))
    if size == 0:
        return jnp.zeros(shape, dt)
    keys = jnp.reshape(split(key, size), (size, 2))
    return jnp.reshape(_draws(keys, jnp.reshape(a, (size,)), log_space), shape)


def gamma(key: Any, a: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Gamma(a) samples (unit scale): Marsaglia and Tsang's rejection method, one draw per
    element (JAX's algorithm and key splitting); differentiable in `a` by implicit
    reparameterization, as JAX's."""
    return _gamma("gamma", key, a, shape, dtype, log_space=False)


def loggamma(key: Any, a: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """``log`` of Gamma(a) samples, computed in log space (accurate for small `a`)."""
    return _gamma("loggamma", key, a, shape, dtype, log_space=True)


def beta(key: Any, a: Any, b: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Beta(a, b) samples ``G_a / (G_a + G_b)`` from two log-gamma draws."""
    key = raw_key("beta", key)
    dt = float_dtype("beta", dtype)
    shape = _shape_of("beta", shape, a, b)
    key_a, key_b = _two_keys(key)
    a = jnp.broadcast_to(conv.convert_element_type(a, dtype=dt), shape)
    b = jnp.broadcast_to(conv.convert_element_type(b, dtype=dt), shape)
    log_a = loggamma(key_a, a, shape, dt)
    log_b = loggamma(key_b, b, shape, dt)
    log_max = jnp.maximum(log_a, log_b)
    scaled_a, scaled_b = jnp.exp(log_a - log_max), jnp.exp(log_b - log_max)
    return scaled_a / (scaled_a + scaled_b)


def dirichlet(key: Any, alpha: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Dirichlet(alpha) samples over the last axis: a softmax of log-gamma draws."""
    key = raw_key("dirichlet", key)
    dt = float_dtype("dirichlet", dtype)
    alpha_shape = abstractify(alpha, 1, "dirichlet").shape
    if len(alpha_shape) < 1:
        raise shape_error(f"random.dirichlet requires alpha.ndim >= 1, got alpha.ndim == "
                          f"{len(alpha_shape)}")
    if shape is None:
        shape = alpha_shape[:-1]
    else:
        shape = _static_shape_checked("dirichlet", shape, alpha_shape[:-1])
    alpha = conv.convert_element_type(alpha, dtype=dt)
    log_gamma = loggamma(key, alpha, shape + alpha_shape[-1:], dt)
    unnormalized = jnp.exp(log_gamma - jnp.max(log_gamma, axis=-1, keepdims=True))
    return unnormalized / jnp.sum(unnormalized, axis=-1, keepdims=True)  # (a softmax)


def chisquare(key: Any, df: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Chi-squared samples ``2 exp(loggamma(df / 2))``."""
    key = raw_key("chisquare", key)
    dt = float_dtype("chisquare", dtype)
    shape = _shape_of("chisquare", shape, df)
    half = conv.convert_element_type(df, dtype=dt) / np.array(2, dt)
    return jnp.exp(loggamma(key, half, shape, dt)) * np.array(2, dt)


def t(key: Any, df: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Student's t samples ``z sqrt((df / 2) / G(df / 2))``."""
    key = raw_key("t", key)
    dt = float_dtype("t", dtype)
    shape = _shape_of("t", shape, df)
    key_n, key_g = _two_keys(key)
    n = normal(key_n, shape, dt)
    half = conv.convert_element_type(df, dtype=dt) / np.array(2, dt)
    return n * jnp.sqrt(half / gamma(key_g, half, shape, dt))


def f(key: Any, dfnum: Any, dfden: Any, shape: Optional[Shape] = None,
      dtype: Any = None) -> Any:
    """F(dfnum, dfden) samples: the ratio of two chi-squared draws, each over its degrees
    of freedom."""
    key = raw_key("f", key)
    dt = float_dtype("f", dtype)
    shape = _shape_of("f", shape, dfnum, dfden)
    dfnum = conv.convert_element_type(dfnum, dtype=dt)
    dfden = conv.convert_element_type(dfden, dtype=dt)
    key_dfd, key_dfn = _two_keys(key)
    num = chisquare(key_dfn, dfnum, shape, dt) / dfnum
    den = chisquare(key_dfd, dfden, shape, dt) / dfden
    return num / den


def generalized_normal(key: Any, p: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Samples of density proportional to ``exp(-|x|^p)``: ``G^(1/p)`` with a random sign,
    ``G`` a Gamma(1/p) draw."""
    key = raw_key("generalized_normal", key)
    dt = float_dtype("generalized_normal", dtype)
    shape = static_shape("generalized_normal", shape)
    key_g, key_r = _two_keys(key)
    g = gamma(key_g, 1 / p, shape, dt)
    r = rademacher(key_r, shape, dt)
    return r * g ** (1 / p)


def ball(key: Any, d: int, p: Any = 2, shape: Shape = (), dtype: Any = None) -> Any:
    """Points uniform in the unit Lp ball of dimension `d` (shape ``(*shape, d)``):
    generalized normal coordinates over ``(sum |g|^p + e)^(1/p)``, ``e`` exponential
    (Barthe, Guedon, Mendelson and Naor)."""
    key = raw_key("ball", key)
    dt = float_dtype("ball", dtype)
    shape = static_shape("ball", shape)
    d = operator.index(d)
    key_g, key_e = _two_keys(key)
    g = generalized_normal(key_g, p, (*shape, d), dt)
    e = exponential(key_e, shape, dt)
    return g / ((jnp.sum(jnp.abs(g) ** p, axis=-1) + e) ** (1 / p))[..., None]


__all__ = ["ball", "beta", "cauchy", "chisquare", "dirichlet", "double_sided_maxwell",
           "exponential", "f", "gamma", "generalized_normal", "geometric", "laplace",
           "loggamma", "logistic", "lognormal", "maxwell", "multivariate_normal", "orthogonal",
           "pareto", "rademacher", "rayleigh", "t", "triangular", "wald", "weibull_min"]
