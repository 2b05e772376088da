"""Triangles and diagonals of matrices."""

from __future__ import annotations

import builtins
from typing import Any


from transpiler import dtypes
from transpiler.numpy.creation import astype, zeros_like
from transpiler.numpy.math import where
from transpiler.numpy.shape import (_as_array, _slice_axis,
                                    moveaxis, reshape)
from transpiler.primitives import conversions as conv
from transpiler.primitives import shape as sp
from transpiler.primitives.core import (abstractify, shape_error)

__all__ = ['tril', 'triu', 'diagonal', 'diag']


# --- triangles and diagonals ---------------------------------------------------------------

def _tri_mask(shape: tuple[int, ...], k: int, lower: bool) -> Any:
    rows = conv.iota(dtype=dtypes.int32, shape=shape[-2:], dimension=0)
    cols = conv.iota(dtype=dtypes.int32, shape=shape[-2:], dimension=1)
    return cols <= rows + k if lower else cols >= rows + k


def _triangle(m: Any, k: int, lower: bool, fn: str) -> Any:
    x = _as_array(m)
    if x.ndim == 1:
        x = sp.broadcast_to(x, shape=(x.shape[0], x.shape[0]))
    if x.ndim < 2:
        raise shape_error(f"{fn}: the input must be at least 1-d, got shape {list(x.shape)}")
    return where(_tri_mask(x.shape, builtins.int(k), lower), x, zeros_like(x))


def tril(m: Any, k: int = 0) -> Any:
    """Zero the elements above the k-th diagonal (of the last two axes)."""
    return _triangle(m, k, True, "tril")


def triu(m: Any, k: int = 0) -> Any:
    """Zero the elements below the k-th diagonal (of the last two axes)."""
    return _triangle(m, k, False, "triu")


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The `offset` diagonal of the (axis1, axis2) planes, as the last axis (a strided slice)."""
    aval = abstractify(a, 0, "diagonal")
    if aval.ndim < 2:
        raise shape_error(f"diagonal: the input must be at least 2-d, got shape {list(aval.shape)}")
    x = moveaxis(a, (axis1, axis2), (-2, -1))
    *batch, n, m = abstractify(x).shape
    offset = builtins.int(offset)
    length = builtins.max(0, builtins.min(n, m - offset) if offset >= 0 else
                          builtins.min(n + offset, m))
    flat = reshape(x, (*batch, n * m))
    start = offset if offset >= 0 else -offset * m
    if length == 0:
        start = 0
    stop = start + (length - 1) * (m + 1) + 1 if length else 0
    return _slice_axis(flat, len(batch), start, stop, m + 1)


def diag(v: Any, k: int = 0) -> Any:
    """A 1-d `v` -> a matrix with `v` on diagonal `k`; a 2-d `v` -> its diagonal `k`."""
    x = _as_array(v)
    k = builtins.int(k)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise shape_error(f"diag: the input must be 1-d or 2-d, got shape {list(x.shape)}")
    size = x.shape[0] + builtins.abs(k)
    padded = sp.pad(x, astype(_as_array(0), x.dtype), low=(0,), high=(builtins.abs(k),),
                    interior=(0,))
    # row i holds v[i] when k >= 0 (column i + k); column j holds v[j] when k < 0
    values = reshape(padded, (size, 1) if k >= 0 else (1, size))
    mask = conv.iota(dtype=dtypes.int32, shape=(size, size), dimension=0) + k == \
        conv.iota(dtype=dtypes.int32, shape=(size, size), dimension=1)
    return where(mask, values, zeros_like(values))
