"""Packing the truth of elements into the bits of uint8 (packbits) and back
(unpackbits), along an axis, with NumPy's bit orders."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from transpiler import dtypes
from transpiler.numpy.creation import asarray, astype
from transpiler.numpy.joining import pad
from transpiler.numpy.math import bitwise_and, greater, left_shift, not_equal
from transpiler.numpy.reductions import sum
from transpiler.numpy.shape import _slice_axis, ravel, reshape, swapaxes

__all__ = ["packbits", "unpackbits"]

_UINT8 = np.dtype(np.uint8)


def _bits(bitorder: str) -> np.ndarray:
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    bits = np.arange(8, dtype=np.uint8)
    return bits[::-1].copy() if bitorder == "big" else bits


def packbits(a: Any, axis: Optional[int] = None, bitorder: str = "big") -> Any:
    """Each run of 8 elements along `axis` (None: flattened; zero-padded at the end) as the
    bits of one uint8, nonzero elements being 1s."""
    arr = asarray(a)
    if not (dtypes.is_int(arr.dtype) or arr.dtype == dtypes.bool_):
        raise TypeError("Expected an input array of integer or boolean data type")
    bits = _bits(bitorder)
    arr = astype(not_equal(arr, 0), _UINT8)
    if axis is None:
        arr, axis = ravel(arr), 0
    arr = swapaxes(arr, axis, -1)
    extra = arr.shape[-1] % 8
    if extra:
        arr = pad(arr, [(0, 0)] * (arr.ndim - 1) + [(0, 8 - extra)])
    arr = reshape(arr, arr.shape[:-1] + (arr.shape[-1] // 8, 8))
    packed = astype(sum(left_shift(arr, asarray(bits)), axis=-1), _UINT8)
    return swapaxes(packed, axis, -1)


def unpackbits(a: Any, axis: Optional[int] = None, count: Optional[int] = None,
               bitorder: str = "big") -> Any:
    """The bits of uint8 elements as uint8 0s and 1s along `axis` (None: flattened), cut
    or zero-padded to `count`."""
    arr = asarray(a)
    if arr.dtype != _UINT8:
        raise TypeError("Expected an input array of unsigned byte data type")
    bits = np.left_shift(np.uint8(1), _bits(bitorder))
    if axis is None:
        arr, axis = ravel(arr), 0
    arr = swapaxes(arr, axis, -1)
    unpacked = astype(greater(bitwise_and(reshape(arr, arr.shape + (1,)), asarray(bits)), 0),
                      _UINT8)
    unpacked = reshape(unpacked, unpacked.shape[:-2] + (unpacked.shape[-2] * 8,))
    if count is not None:
        n = unpacked.shape[-1]
        if count > n:
            unpacked = pad(unpacked, [(0, 0)] * (unpacked.ndim - 1) + [(0, count - n)])
        else:
            unpacked = _slice_axis(unpacked, unpacked.ndim - 1, 0, max(count, 0) if count >= 0
                                   else max(n + count, 0))
    return swapaxes(unpacked, axis, -1)
