"""``jax.scipy.special.bessel_jn``: the Bessel functions of the first kind ``J_0 ... J_v``
of integer order and real argument, by JAX's algorithm (Zhang and Jin's BJNDD): Miller's
backward recurrence ``f_k = 2 (k + 1) f_{k+1} / z - f_{k+2}`` from ``k = n_iter`` down to
0, started at ``(0, 1e-16)`` and normalized by ``J_0 + 2 J_2 + 2 J_4 + ... = 1``.

The recurrence is elementwise in ``z``, so it runs as one ``lax.scan`` over the orders on
arrays of ``z``'s shape (JAX vmaps a scan of scalars): differentiable and batchable as the
code it is. As in JAX, the start overflows for small ``|z|`` (NaN at 0 and, in float32,
below about 2)."""

from __future__ import annotations

import operator
from typing import Any

from transpiler import dtypes, lax
from transpiler import numpy as jnp
from transpiler.errors import located
from transpiler.primitives.conversions import convert_element_type
from transpiler.primitives.core import abstractify


def _static_int(value: Any, convert: Any, what: str) -> int:
    try:
        return int(convert(value))
    except TypeError:
        raise located(TypeError, f"bessel_jn: Argument {what} of bessel_jn must be a static "
                      f"integer, got {value!r}", "pass a Python int") from None


def bessel_jn(z: Any, *, v: int, n_iter: int = 50) -> Any:
    """``J_0(z) ... J_v(z)`` stacked on a new leading axis (shape ``(v + 1, *z.shape)``,
    at most ``n_iter + 1`` orders), in ``z``'s float dtype. `v` and `n_iter` are static
    ints; `n_iter` should satisfy ``0.5 log10(6.28 + n) - n log10(1.36 + |z| / n) > 20``
    (the default 50 serves ``|z|`` up to about 25)."""
    z = jnp.asarray(z)
    dtype = dtypes.to_inexact(abstractify(z).dtype)
    if dtypes.is_complex(dtype):
        raise located(ValueError, "complex input not supported.")
    z = convert_element_type(z, dtype=dtype)
    v = _static_int(v, operator.index, "v")
    n_iter = _static_int(n_iter, int, "n_iter")

    def step(carry: tuple, k: Any) -> tuple:
        f0, f1, total = carry  # f_{k+2}, f_{k+1} and 2 (f_0 + f_2 + ...) above k
        f = 2.0 * (k + 1.0) * f1 / z - f0
        total = jnp.where(k % 2 == 0, total + 2.0 * f, total)
        return (f1, f, total), f

    start = (jnp.zeros_like(z), jnp.full_like(z, 1e-16), jnp.zeros_like(z))
    orders = jnp.arange(n_iter + 1, dtype=dtype)
    (_, _, total), f = lax.scan(step, start, orders, reverse=True)
    return f[:v + 1] / (total - f[0])  # total counts f_0 twice


__all__ = ["bessel_jn"]
