"""``convolve`` and ``correlate`` of 1-D arrays: one ``conv_general_dilated`` each, with
JAX's promotion (to an inexact dtype unless a preferred_element_type is given), its
modes ('full', 'same', 'valid') and its handling of complex inputs (correlate conjugates
its second argument)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.complex_numbers import conjugate
from transpiler.numpy.creation import asarray, astype
from transpiler.numpy.shape import flip, reshape
from transpiler.primitives import convolution as conv_p
from transpiler.primitives.core import abstractify, promote_avals

__all__ = ["convolve", "correlate"]


def convolve(a: Any, v: Any, mode: str = "full", *, precision: Any = None,
             preferred_element_type: Any = None) -> Any:
    """Discrete linear convolution of two 1-D arrays (the shorter slides over the longer)."""
    return _convolve(a, v, mode, "convolve", preferred_element_type)


def correlate(a: Any, v: Any, mode: str = "valid", *, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    """Cross-correlation of two 1-D arrays, ``c[k] = sum_n a[n + k] * conj(v[n])``."""
    return _convolve(a, v, mode, "correlate", preferred_element_type)


def _convolve(x: Any, y: Any, mode: str, op: str, preferred_element_type: Any) -> Any:
    x, y = asarray(x), asarray(y)
    x_aval, y_aval = abstractify(x, 0, op), abstractify(y, 1, op)
    if x_aval.ndim != 1 or y_aval.ndim != 1:
        raise located(ValueError, f"{op}() only support 1-dimensional inputs, got shapes "
                      f"{x_aval.shape} and {y_aval.shape}")
    dtype, _ = promote_avals(x_aval, y_aval)
    preferred: Optional[np.dtype] = None
    if preferred_element_type is None:
        dtype = dtypes.to_inexact(dtype)
    else:
        preferred = dtypes.check_supported(dtypes.canonicalize(preferred_element_type),
                                           "preferred_element_type")
    if x_aval.dtype != dtype:
        x = astype(x, dtype)
    if y_aval.dtype != dtype:
        y = astype(y, dtype)
    if x_aval.shape[0] == 0 or y_aval.shape[0] == 0:
        raise located(ValueError, f"{op}: inputs cannot be empty, got shapes {x_aval.shape} "
                      f"and {y_aval.shape}")
    reverse = False
    if op == "correlate":
        y = conjugate(y)
        if x_aval.shape[0] < y_aval.shape[0]:
            x, y, reverse = y, x, True
    else:
        if x_aval.shape[0] < y_aval.shape[0]:
            x, y = y, x
        y = flip(y)
    k = abstractify(y).shape[0]
    pads = {"valid": (0, 0), "same": (k // 2, k - k // 2 - 1), "full": (k - 1, k - 1)}
    if mode not in pads:
        raise located(ValueError, f"{op}: mode must be one of ['full', 'same', 'valid'], got "
                      f"{mode!r}")
    out = conv_p.conv_general_dilated(
        reshape(x, (1, 1, -1)), reshape(y, (1, 1, -1)), window_strides=(1,),
        padding=(pads[mode],), lhs_dilation=(1,), rhs_dilation=(1,),
        dimension_numbers=((0, 1, 2), (0, 1, 2), (0, 1, 2)), feature_group_count=1,
        batch_group_count=1, preferred_element_type=preferred)
    out = reshape(out, (-1,))
    return flip(out) if reverse else out
