"""``lax.bessel_i0e`` and ``lax.bessel_i1e``: the exponentially scaled modified Bessel
functions of the first kind, ``i_nu e(x) = exp(-|x|) I_nu(x)``, as primitives
(special_primitive.py).

Both come from the power series ``I_nu(x) = sum_k (x/2)^(2k+nu) / (k! (k+nu)!)`` for
``|x| <= 20`` and Hankel's asymptotic expansion ``e^x / sqrt(2 pi x) sum_k (-1)^k
a_k(nu) / x^k`` beyond (accurate to a few float64 ulps on both sides of the switch);
``i1e`` is odd, ``i0e`` even. Under a trace ``i1e`` lowers to ``chlo.bessel_i1e``
(XLA's); ``i0e`` to the algorithm's composite, with fewer terms in float32.
Derivatives (JAX's): ``i0e' = i1e - sign(x) i0e``, ``i1e' = i0e - i1e (sign(x) + 1/x)``
(1/2 at 0).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler.lax.special_primitive import define_special, finfo
from transpiler.primitives.derivative_forms import elementwise

_SWITCH = 20.0


def _scaled_bessel(xp: Any, x: Any, nu: int) -> Any:
    """``exp(-|x|) I_nu(x)`` for ``nu`` 0 or 1."""
    double = finfo(x).eps < 1e-10
    series_terms, asymptotic_terms = (60, 25) if double else (40, 12)
    ax = xp.abs(x)
    small = ax <= _SWITCH
    s = xp.where(small, ax, xp.zeros_like(ax))
    half = s / 2
    square = half * half
    term = xp.ones_like(s) if nu == 0 else half
    series = term
    for k in range(1, series_terms):
        term = term * square / (k * (k + nu))
        series = series + term
    series = series * xp.exp(-s)

    big = xp.where(small, xp.full_like(ax, 2 * _SWITCH), ax)
    term = xp.ones_like(big)
    expansion = term
    mu = 4.0 * nu * nu
    for k in range(1, asymptotic_terms):
        term = term * ((2 * k - 1) ** 2 - mu) / (8 * k * big)
        expansion = expansion + term
    expansion = expansion / xp.sqrt(2 * np.pi * big)
    out = xp.where(small, series, expansion)
    return out if nu == 0 else xp.where(x < 0, -out, out)


def i0e_algorithm(xp: Any, x: Any) -> Any:
    return _scaled_bessel(xp, x, 0)


def i1e_algorithm(xp: Any, x: Any) -> Any:
    return _scaled_bessel(xp, x, 1)


bessel_i0e = define_special("bessel_i0e", i0e_algorithm,
                            doc="``exp(-|x|) I0(x)``, elementwise.")
bessel_i1e = define_special("bessel_i1e", i1e_algorithm, chlo="chlo.bessel_i1e",
                            doc="``exp(-|x|) I1(x)``, elementwise.")

bessel_i0e.def_rules(**elementwise(x="{g} * (lax.bessel_i1e(x) - jnp.sign(x) * out)"))
bessel_i1e.def_rules(**elementwise(x="{g} * ad.bessel_i1e_slope(x, out)"))
