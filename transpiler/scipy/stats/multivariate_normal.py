"""``jax.scipy.stats.multivariate_normal``: the log-density of a multivariate normal, by a
Cholesky factorization of `cov` (batched over leading dimensions of `x`)."""

from __future__ import annotations

import math
from typing import Any

from transpiler import numpy as jnp
from transpiler.errors import located
from transpiler.lax import linalg as la
from transpiler.scipy.stats.common import promote_inexact


def logpdf(x: Any, mean: Any, cov: Any, allow_singular: Any = None) -> Any:
    """``log N(x; mean, cov)`` over the last axis of `x`; `cov` a matrix, a vector (its
    diagonal) or a scalar (times the identity), as in JAX."""
    if allow_singular is not None:
        raise located(NotImplementedError, "multivariate_normal.logpdf: allow_singular is not "
                      "supported (as in JAX)", "leave allow_singular unset")
    x, mean, cov = promote_inexact(x, mean, cov)
    if mean.ndim == 0 and cov.ndim == 0:  # one dimension
        return -0.5 * (x - mean) ** 2 / cov - 0.5 * (math.log(2 * math.pi) + jnp.log(cov))
    n = mean.shape[-1]
    if cov.ndim < 2:  # a scalar or a diagonal
        diagonal = jnp.broadcast_to(cov, (n,))
        y = (x - mean) / jnp.sqrt(diagonal)
        return (-0.5 * jnp.sum(y * y, axis=-1) - 0.5 * n * math.log(2 * math.pi)
                - 0.5 * jnp.sum(jnp.log(diagonal), axis=-1))
    if cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal.logpdf: cov of shape {list(cov.shape)} does "
                         f"not match mean of shape {list(mean.shape)}")
    factor = la.cholesky(cov)
    lead = jnp.broadcast_shapes(x.shape[:-1], mean.shape[:-1], factor.shape[:-2])
    residual = jnp.broadcast_to(x - mean, (*lead, n))
    factor = jnp.broadcast_to(factor, (*lead, n, n))
    y = la.triangular_solve(factor, residual[..., None], left_side=True, lower=True)[..., 0]
    return (-0.5 * jnp.sum(y * y, axis=-1) - 0.5 * n * math.log(2 * math.pi)
            - jnp.sum(jnp.log(jnp.diagonal(factor, axis1=-2, axis2=-1)), axis=-1))


def pdf(x: Any, mean: Any, cov: Any) -> Any:
    return jnp.exp(logpdf(x, mean, cov))
