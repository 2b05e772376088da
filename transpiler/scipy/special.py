"""``jax.scipy.special``: the special functions built from `transpiler.numpy` and
`transpiler.nn` (each differentiable and batchable as the code it is)."""

from __future__ import annotations

from typing import Any

from transpiler import numpy as jnp
from transpiler.nn import erf, erf_inv, logsumexp, sigmoid, softmax

erfinv = erf_inv
expit = sigmoid


def erfc(x: Any) -> Any:
    """``1 - erf(x)``."""
    return 1 - erf(x)


def logit(x: Any) -> Any:
    """``log(x / (1 - x))``, the inverse of `expit`."""
    return jnp.log(x / (1 - x))


__all__ = ["erf", "erfc", "erfinv", "expit", "logit", "logsumexp", "softmax"]
