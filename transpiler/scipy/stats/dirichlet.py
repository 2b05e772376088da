"""``jax.scipy.stats.dirichlet``: the Dirichlet density of `x` on the simplex (its first
axis), with concentrations `alpha`."""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import numpy as jnp
from transpiler.scipy.special import gammaln, xlogy
from transpiler.scipy.stats.common import promote_inexact


def logpdf(x: Any, alpha: Any) -> Any:
    x, alpha = promote_inexact(x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"dirichlet.logpdf: alpha must be one-dimensional, got shape "
                         f"{list(alpha.shape)}")
    if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError(f"dirichlet.logpdf: x's first axis has {x.shape[0]} entries; alpha "
                         f"has {alpha.shape[0]}")
    if x.shape[0] != alpha.shape[0]:  # the last coordinate is 1 - sum of the others
        x = jnp.concatenate([x, 1 - jnp.sum(x, axis=0, keepdims=True)], axis=0)
    shape = (alpha.shape[0],) + (1,) * (x.ndim - 1)
    a = jnp.reshape(alpha, shape)
    normalizer = jnp.sum(gammaln(alpha)) - gammaln(jnp.sum(alpha))
    value = jnp.sum(xlogy(a - 1, x), axis=0) - normalizer
    on_simplex = jnp.all(x >= 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1) < 1e-4)
    return jnp.where(on_simplex, value, jnp.full_like(value, -np.inf))


def pdf(x: Any, alpha: Any) -> Any:
    return jnp.exp(logpdf(x, alpha))
