"""The Box-Cox power transforms of ``jax.scipy.special``: `boxcox` and `boxcox1p`.

``(y^lambda - 1) / lambda`` as ``expm1(lambda log y) / lambda`` (accurate for small
lambda), ``log y`` at ``lambda == 0``; written with `transpiler.numpy`, so that they are
differentiable and batchable as the code they are. As in JAX, the derivative in ``lambda``
at ``lambda == 0`` is 0 (the branch there is ``log y``, which does not depend on it)."""

from __future__ import annotations

from typing import Any

from transpiler import numpy as jnp
from transpiler.scipy.promotion import promote_inexact


def _power_branch(log_y: Any, lmbda: Any) -> Any:
    """``(y^lambda - 1) / lambda`` from ``log y``; ``log y`` where ``lambda == 0`` (the
    power branch is computed with lambda = 1 there, so that it never divides by 0)."""
    zero = lmbda == 0
    safe = jnp.where(zero, jnp.ones_like(lmbda), lmbda)
    return jnp.where(zero, log_y, jnp.expm1(safe * log_y) / safe)


def boxcox(x: Any, lmbda: Any) -> Any:
    """The Box-Cox transform ``(x^lambda - 1) / lambda`` (``log x`` at ``lambda == 0``);
    NaN for ``x < 0``."""
    x, lmbda = promote_inexact(x, lmbda)
    return _power_branch(jnp.log(x), lmbda)


def boxcox1p(x: Any, lmbda: Any) -> Any:
    """The Box-Cox transform of ``1 + x``: ``((1 + x)^lambda - 1) / lambda`` (``log1p(x)``
    at ``lambda == 0``); NaN for ``x < -1``."""
    x, lmbda = promote_inexact(x, lmbda)
    return _power_branch(jnp.log1p(x), lmbda)


__all__ = ["boxcox", "boxcox1p"]
