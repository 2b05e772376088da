"""Counting numbers of ``jax.scipy.special``: the binomial coefficient `comb` and the
Bernoulli numbers `bernoulli`, with JAX's algorithms (``comb`` through `gammaln`, so that
it is a float, differentiable in ``N`` and ``k``; ``bernoulli`` from the Chowla-Hartung
series of the Riemann zeta function at the even integers)."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from transpiler import dtypes, lax
from transpiler import numpy as jnp
from transpiler.errors import located
from transpiler.primitives.core import abstractify
from transpiler.scipy.promotion import promote_inexact


def comb(N: Any, k: Any, *, repetition: bool = False) -> Any:
    """``N choose k = N! / (k! (N - k)!)`` as a float, through ``gammaln``; 0 where
    ``N < 0``, ``k < 0`` or ``k > N``. With `repetition`, the number of multisets:
    ``comb(N + k - 1, k)`` (1 where ``k == 0`` and ``N >= 0``)."""
    N, k = promote_inexact(N, k)
    if dtypes.is_complex(abstractify(N).dtype):
        raise located(TypeError, f"comb: lgamma does not accept dtype {abstractify(N).dtype}; "
                      "N and k must be real")
    if repetition:
        multisets = comb(N + k - 1, k, repetition=False)
        return jnp.where((k == 0) & (N >= 0), jnp.ones_like(multisets), multisets)
    inside = (k <= N) & (N >= 0) & (k >= 0)
    safe_N = jnp.where(inside, N, jnp.zeros_like(N))  # 0 choose 0 where the value is 0
    safe_k = jnp.where(inside, k, jnp.zeros_like(k))
    value = jnp.exp(lax.lgamma(safe_N + 1) - lax.lgamma(safe_k + 1)
                    - lax.lgamma(safe_N + 1 - safe_k))
    return jnp.where(inside, value, jnp.zeros_like(value))


_ZETA_TERMS = 50  # sum_{j=2}^{49} j^-m: 2^-50 < 1e-15


def bernoulli(n: int) -> Any:
    """The Bernoulli numbers ``B_0 ... B_n`` (``B_1 = -1/2``) for a static int `n`, in the
    default float dtype: ``B_m = (-1)^(m/2+1) 2 m! zeta(m) / (2 pi)^m`` for even ``m >= 4``,
    the products as a cumulative product and ``zeta(m) = 1 + sum_{j>=2} j^-m``; 0 at the odd
    ``m >= 3``."""
    try:
        n = operator.index(n)
    except TypeError:
        raise located(TypeError, f"bernoulli: Argument n of bernoulli must be a static "
                      f"integer, got {n!r}", "pass a Python int (it sets the output's "
                      "length)") from None
    if n < 0:
        raise located(ValueError, "n must be a non-negative integer.")
    first = jnp.array([1, -1 / 2, 1 / 6])
    if n < 3:
        return first[:n + 1]
    dtype = abstractify(first).dtype
    m = jnp.arange(4, n + 1, 2, dtype=dtype)
    # 2 m! / (2 pi)^m with its sign, as JAX builds it: (1/pi^2) prod_{i<=m/2} -(2i-1)(2i)/(4 pi^2)
    scale = (1. / np.pi ** 2) * jnp.cumprod(-(m - 1) * m / 4 / np.pi ** 2)
    j = jnp.arange(2, _ZETA_TERMS, dtype=dtype)
    zeta_tail = jnp.sum(j[:, None] ** -m[None, :], axis=0)
    return jnp.zeros(n + 1, dtype).at[:3].set(first).at[4::2].set(scale * (1 + zeta_tail))


__all__ = ["bernoulli", "comb"]
