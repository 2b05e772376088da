"""Derivative helpers of complex arguments (JAX's conventions: a VJP is the transpose of
the JVP over the reals, with no conjugation, so ``grad(lambda z: jnp.abs(z) ** 2)(z)`` is
``2 * conj(z)``)."""

from __future__ import annotations

from typing import Any

import transpiler.numpy as jnp
from transpiler import dtypes
from transpiler.primitives import elementwise as ew
from transpiler.primitives.core import abstractify


def complex_sign(x: Any) -> Any:
    """``x / |x|``, and 0 where x is 0."""
    magnitude = ew.abs_(x)
    nonzero = magnitude != 0
    safe = jnp.where(nonzero, magnitude, 1.0)
    return jnp.where(nonzero, x / safe, 0)


def abs_tangent(t: Any, x: Any) -> Any:
    """abs's tangent: ``t * sign(x)`` (+1 at 0) for real x; ``Re(t conj(x) / |x|)`` for
    complex x."""
    if not dtypes.is_complex(abstractify(x).dtype):
        return jnp.where(x >= 0, t, -t)
    return ew.real(t * complex_sign(ew.conj(x)))


def abs_cotangent(g: Any, x: Any) -> Any:
    """abs's cotangent: the transpose of `abs_tangent` (a real `g` to x's dtype)."""
    if not dtypes.is_complex(abstractify(x).dtype):
        return jnp.where(x >= 0, g, -g)
    return ew.complex_(g, jnp.zeros_like(g)) * complex_sign(ew.conj(x))
