"""``jax.scipy.stats.poisson``: ``mu^k exp(-mu) / k!`` for integers ``k >= loc``."""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.scipy.special import entr, gammaincc, gammaln, xlogy
from transpiler.scipy.promotion import as_dtype
from transpiler.scipy.stats.common import outside, promote_inexact


def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    k, mu, loc = promote_inexact(k, mu, loc)
    x = k - loc
    bad = (x < 0) | (x != jnp.round(x))
    inside = jnp.where(bad, jnp.zeros_like(x), x)
    return outside(bad, xlogy(inside, mu) - gammaln(inside + 1) - mu)


def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    return jnp.exp(logpmf(k, mu, loc))


def cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """``Q(floor(k - loc) + 1, mu)``, 0 below `loc`. (Each argument is converted on its own,
    so that differentiating `mu` keeps `k` constant.)"""
    dtype = dtypes.to_inexact(jnp.result_type(k, mu, loc))
    x = as_dtype(k, dtype) - as_dtype(loc, dtype)
    below = x < 0
    p = gammaincc(jnp.floor(1 + jnp.where(below, 0, x)), as_dtype(mu, dtype))
    return jnp.where(below, jnp.zeros_like(p), p)


_ENTROPY_TERMS = 250  # k = 0 ... 249 covers mu + 10 sqrt(mu) + 20 for every mu below 100


def entropy(mu: Any, loc: Any = 0) -> Any:
    """``-sum_k pmf(k) log pmf(k)``: summed over ``k < mu + 10 sqrt(mu) + 20`` below
    ``mu = 100``, ``log(2 pi e mu) / 2 - 1 / (12 mu)`` above (JAX's regimes); `loc` moves
    the support only."""
    mu, loc = promote_inexact(mu, loc)
    shape = jnp.broadcast_shapes(jnp.shape(mu), jnp.shape(loc))
    mu = jnp.broadcast_to(mu, shape)
    small = mu < 100
    safe = jnp.where(small, mu, jnp.ones_like(mu))
    k = jnp.arange(_ENTROPY_TERMS, dtype=safe.dtype).reshape((_ENTROPY_TERMS,) + (1,) * len(shape))
    probs = pmf(k, safe)
    probs = jnp.where(k < jnp.ceil(safe + 10 * jnp.sqrt(safe) + 20), probs, 0)
    summed = jnp.sum(entr(probs), axis=0)
    large = jnp.where(small, jnp.full_like(mu, 100.0), mu)
    asymptotic = 0.5 * jnp.log(2 * np.pi * np.e * large) - 1 / (12 * large)
    return jnp.where(mu == 0, jnp.zeros_like(mu), jnp.where(small, summed, asymptotic))

