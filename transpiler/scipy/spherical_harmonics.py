"""``jax.scipy.special.sph_harm_y``: the spherical harmonics ``Y_n^m(theta, phi)`` (theta
the colatitude), by JAX's algorithm: the fully normalized associated Legendre functions of
``cos theta`` up to a static degree ``n_max`` by their three recurrences (the diagonal
``P_l^l``, then ``P_l^m`` from ``P_{l-1}^m`` and ``P_{l-2}^m``), picked at ``(|m|, n)``
(a negative degree counted from the end, then clipped to the table, as JAX's gather),
times ``e^{i |m| phi}``; for ``m < 0``, ``(-1)^m`` times the conjugate. Differentiable
in ``theta`` and ``phi`` as the code it is.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from transpiler import dtypes, lax
from transpiler import numpy as jnp
from transpiler.errors import ConcretizationTypeError, located
from transpiler.primitives.core import Tracer, abstractify


def _recurrence_coefficients(l_max: int) -> tuple[np.ndarray, np.ndarray]:
    """``d0[l, m]`` and ``d1[l, m]`` of ``P_l^m = d0 x P_{l-1}^m - d1 P_{l-2}^m`` for the
    normalized functions (0 where the recurrence does not apply: ``m >= l``, and ``d1`` for
    ``m = l - 1``, where it is ``sqrt(2l + 1) x P_{l-1}^{l-1}``)."""
    l, m = np.meshgrid(np.arange(l_max + 1.0), np.arange(l_max + 1.0), indexing="ij")
    with np.errstate(divide="ignore", invalid="ignore"):
        d0 = np.sqrt((4 * l * l - 1) / (l * l - m * m))
        d1 = np.sqrt((2 * l + 1) * ((l - 1) ** 2 - m * m) / ((2 * l - 3) * (l * l - m * m)))
    return np.where(m < l, d0, 0.0), np.where(m < l - 1, d1, 0.0)


def _normalized_legendre(l_max: int, x: Any) -> Any:
    """``P_l^m(x)`` normalized so that the harmonics are orthonormal on the sphere, as an
    ``(l_max + 1, l_max + 1, len(x))`` table indexed ``[l, m, i]`` (0 for ``m > l``)."""
    dtype = abstractify(x).dtype
    d0, d1 = (c.astype(dtype)[:, :, None] for c in _recurrence_coefficients(l_max))
    sine = jnp.sqrt(1.0 - x * x)
    diagonal = jnp.full_like(x, 0.5 / math.sqrt(math.pi))  # P_0^0
    unit = np.eye(l_max + 1, dtype=dtype)[:, :, None]
    rows = [unit[0] * diagonal]
    previous = jnp.zeros_like(rows[0])
    for l in range(1, l_max + 1):
        diagonal = diagonal * -math.sqrt(1.0 + 0.5 / l) * sine  # P_l^l from P_{l-1}^{l-1}
        row = d0[l] * x * rows[-1] - d1[l] * previous + unit[l] * diagonal
        previous = rows[-1]
        rows.append(row)
    return jnp.stack(rows)


def _static_n_max(n: Any, n_max: Any) -> int:
    if n_max is None:
        if isinstance(n, Tracer):
            raise located(ConcretizationTypeError, "The `n_max` argument of "
                          "`jnp.scipy.special.sph_harm` must be statically specified to use "
                          "`sph_harm` within JAX transformations.", "pass n_max=<int>, the "
                          "largest degree in n")
        n_max = np.max(np.asarray(n))
    if isinstance(n_max, Tracer):
        raise located(ConcretizationTypeError, "The `n_max` argument of sph_harm_y must be a "
                      "static int", "pass a Python int")
    return int(n_max)


def sph_harm_y(n: Any, m: Any, theta: Any, phi: Any, diff_n: Any = None,
               n_max: Any = None) -> Any:
    """``Y_n^m(theta, phi)`` for 1-D arrays `n` (degrees), `m` (orders, ``|m| <= n``) and
    `theta` (colatitudes in ``[0, pi]``; a scalar is taken as one point), `phi` (longitudes)
    broadcast against them: a complex array of their length. `n_max` (JAX's extra
    argument) is the static largest degree, ``max(n)`` when omitted (then `n` must be
    concrete); degrees above it are clipped to it. ``diff_n`` is not supported (JAX)."""
    if diff_n is not None:
        raise located(NotImplementedError, "The 'diff_n' argument to "
                      "jax.scipy.special.sph_harm_y is not supported.")
    theta = jnp.asarray(theta)
    if abstractify(theta).ndim == 0:
        theta = jnp.reshape(theta, (1,))
    l_max = _static_n_max(n, n_max)
    n, m = jnp.asarray(n), jnp.asarray(m)
    if abstractify(n).ndim != 1:
        raise located(TypeError, f"sph_harm_y: n must be a 1-D array (len() of it is the "
                      f"number of points), got shape {abstractify(n).shape}")
    dtype = dtypes.to_inexact(abstractify(theta).dtype)
    theta = lax.convert_element_type(theta, dtype)
    table = _normalized_legendre(l_max, jnp.cos(theta))
    degree = jnp.clip(jnp.where(n < 0, n + (l_max + 1), n), 0, l_max)  # JAX's gather
    order = jnp.clip(jnp.abs(m), 0, l_max)
    value = table[degree, order, jnp.arange(abstractify(n).shape[0])]
    angle = jnp.abs(m) * phi
    harmonics = lax.complex(value * jnp.cos(angle), value * jnp.sin(angle))
    sign = jnp.where(jnp.abs(m) % 2 == 0, 1.0, -1.0).astype(dtype)
    return jnp.where(m < 0, sign * jnp.conjugate(harmonics), harmonics)


__all__ = ["sph_harm_y"]
