"""``lax.erf``, ``lax.erfc`` and ``lax.erf_inv``: XLA's float32 approximations (not StableHLO ops), as
composites of elementwise operations. Below `transpiler.nn` and `transpiler.random`, which
both draw on them."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.primitives import conversions as conv
from transpiler.primitives.core import abstractify


def float_operand(x: Any) -> Any:
    """`x` as an inexact array (ints and bools promote to the default float, like JAX)."""
    aval = abstractify(x)
    if dtypes.is_float(aval.dtype):
        return conv.convert_element_type(x, dtype=aval.dtype, weak_type=aval.weak_type)
    return conv.convert_element_type(x, dtype=dtypes.default_float(), weak_type=aval.weak_type)


def const_like(value: float, like: Any) -> Any:
    """A scalar constant in `like`'s dtype (so float16 inputs stay float16)."""
    return np.array(value, abstractify(like).dtype)


_ERF_ALPHA = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
              -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
              -1.60960333262415e-02)
_ERF_BETA = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
             -7.37332916720468e-03, -1.42647390514189e-02)


def _horner(x: Any, coefficients: Sequence[float]) -> Any:
    p = const_like(coefficients[0], x)
    for c in coefficients[1:]:
        p = p * x + const_like(c, x)
    return p


def erf(x: Any) -> Any:
    """The error function: XLA's float32 rational approximation ``x P(x^2) / Q(x^2)`` on
    ``[-4, 4]`` (erf is +-1 to float32 precision beyond), accurate to a few float32 ulps.
    Half types compute in float32; float64 inputs get float32 accuracy."""
    x = float_operand(x)
    dt = abstractify(x).dtype
    work = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt
    xw = jnp.clip(conv.convert_element_type(x, dtype=work), -4.0, 4.0)
    x2 = xw * xw
    out = xw * _horner(x2, _ERF_ALPHA) / _horner(x2, _ERF_BETA)
    return conv.convert_element_type(out, dtype=dt)


def _polynomial(x: Any, coefficients: Sequence[Any]) -> Any:
    """Horner's rule, highest-degree coefficient first."""
    p = coefficients[0]
    for c in coefficients[1:]:
        p = c + p * x
    return p


_ERFC_P = (2.326819970068386e-2, -1.387039388740657e-1, 3.687424674597105e-1,
           -5.824733027278666e-1, 6.210004621745983e-1, -4.944515323274145e-1,
           3.404879937665872e-1, -2.741127028184656e-1, 5.638259427386472e-1)
_ERFC_R = (-1.047766399936249e1, 1.297719955372516e1, -7.495518717768503e0,
           2.921019019210786e0, -1.015265279202700e0, 4.218463358204948e-1,
           -2.820767439740514e-1, 5.641895067754075e-1)


def erfc(x: Any) -> Any:
    """``1 - erf(x)``, accurate in the tails (XLA's float32 form: ``exp(-x^2) / x`` times a
    rational function of ``1/x^2`` for ``|x| >= 1``)."""
    x = float_operand(x)
    ax = jnp.abs(x)
    tail = ax >= 1
    safe = jnp.where(tail, ax, jnp.ones_like(ax))
    q = 1 / safe
    y = q * q
    p = jnp.where(safe < 2, _polynomial(y, _ERFC_P), _polynomial(y, _ERFC_R))
    far = jnp.exp(-safe * safe) * q * p
    far = jnp.where(x < 0, 2 - far, far)
    return jnp.where(tail, far, 1 - erf(x))


_ERFINV_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def erf_inv(x: Any) -> Any:
    """Inverse error function: XLA's float32 approximation (Giles), as ``lax.erf_inv``."""
    dt = abstractify(x, 0, "erf_inv").dtype
    dt = dt if dtypes.is_float(dt) else dtypes.default_float()
    work = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt
    x = conv.convert_element_type(x, dtype=work)
    w = -jnp.log1p(-(x * x))
    small = w < 5.0
    w = jnp.where(small, w - 2.5, jnp.sqrt(w) - 3.0)
    coefficients = [jnp.where(small, np.array(a, work), np.array(b, work))
                    for a, b in zip(_ERFINV_SMALL, _ERFINV_LARGE)]
    result = _polynomial(w, coefficients) * x
    result = jnp.where(jnp.abs(x) == 1.0, x * np.array(np.inf, work), result)
    return conv.convert_element_type(result, dtype=dt)


__all__ = ["erf", "erfc", "erf_inv"]
