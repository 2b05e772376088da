"""``jax.scipy.integrate``: `trapezoid`, the composite trapezoidal rule (``jnp.trapezoid``
under SciPy's name; differentiable in `y`, `x` and `dx`)."""

from __future__ import annotations

from transpiler.numpy.reductions import trapezoid

__all__ = ["trapezoid"]
