"""``ad`` helpers for shapes and dtypes: undoing broadcasts and reductions, casting a
cotangent to its operand's dtype. Re-exported by the ``ad`` package (transforms/ad/__init__.py)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import transpiler.numpy as jnp
from transpiler import dtypes
from transpiler.primitives import conversions as conv
from transpiler.primitives import reductions as red_p
from transpiler.primitives import shape as sp
from transpiler.primitives.core import abstractify

Shape = Sequence[int]


# --- shapes and dtypes ---------------------------------------------------------------------

def unbroadcast(g: Any, shape: Shape) -> Any:
    """Sum `g` over the axes that broadcasting added or stretched, then reshape to `shape`."""
    shape = tuple(shape)
    g_shape = abstractify(g).shape
    if g_shape == shape:
        return g
    lead = len(g_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and g_shape[lead + i] != 1)
    summed = red_p.reduce_sum(g, axes=axes) if axes else g
    return sp.reshape(summed, new_sizes=shape)


def cast_like(g: Any, x: Any) -> Any:
    """Convert cotangent `g` to the dtype of the floating operand `x` (no-op otherwise)."""
    aval, g_aval = abstractify(x), abstractify(g)
    if not dtypes.is_inexact(aval.dtype) or g_aval.dtype == aval.dtype:
        return g
    return conv.convert_element_type(g, dtype=aval.dtype, weak_type=aval.weak_type)


def unbroadcast_like(g: Any, x: Any) -> Any:
    """`unbroadcast` to the shape of operand `x`, in the dtype of `x`; None (a zero
    cotangent, as a Python int's derived from a differentiated tuple gets) stays None."""
    if g is None:
        return None
    return cast_like(unbroadcast(g, abstractify(x).shape), x)


def convert_cotangent(g: Any, out: Any, x: Any) -> Any:
    """convert_element_type's adjoint: back to `x`'s dtype; an integer/bool result carries
    no derivative, so its operand gets zeros (as in JAX)."""
    if not dtypes.is_inexact(abstractify(out).dtype):
        return jnp.zeros_like(x)
    return cast_like(g, x)


def expand_reduced(g: Any, shape: Shape, axes: Sequence[int]) -> Any:
    """Undo a reduction's shape: reinsert `axes` with size 1, broadcast to `shape`."""
    shape = tuple(shape)
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    return sp.broadcast_to(sp.reshape(g, new_sizes=kept), shape=shape)


def inverse_permutation(permutation: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argsort(permutation))


def zeros_cotangent(x: Any) -> Any:
    """A zero cotangent for `x` (floor, sign, ...: piecewise constant functions)."""
    return jnp.zeros_like(x)
