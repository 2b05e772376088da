"""The threefry2x32 counter-based hash behind `transpiler.random` (JAX's, bit for bit),
written with `transpiler.numpy` operations on uint32 arrays so it runs eagerly and under jit.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.config import config
from transpiler.errors import located
from transpiler.primitives import conversions as conv
from transpiler.primitives import shape as sp
from transpiler.primitives.core import abstractify

_U32 = dtypes.uint32


def _partitionable() -> bool:
    """JAX's ``jax_threefry_partitionable`` (True by default, as in JAX >= 0.5)."""
    return config.threefry_partitionable


# --- the threefry2x32 hash ---------------------------------------------------------------

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def _rotate_left(x: Any, d: int) -> Any:
    return (x << np.uint32(d)) | (x >> np.uint32(32 - d))


def threefry2x32(k1: Any, k2: Any, x0: Any, x1: Any) -> tuple[Any, Any]:
    """The threefry2x32 block cipher: key words k1, k2 (scalars) applied to counters x0, x1.

    Five groups of four rounds, each group followed by a key injection -- exactly JAX's
    ``_threefry2x32_lowering``. All arguments are uint32; returns two uint32 arrays."""
    ks = [k1, k2, k1 ^ k2 ^ _PARITY]
    x0 = x0 + ks[0]
    x1 = x1 + ks[1]
    for group in range(5):
        for rotation in _ROTATIONS[group % 2]:
            x0 = x0 + x1
            x1 = _rotate_left(x1, rotation) ^ x0
        x0 = x0 + ks[(group + 1) % 3]
        x1 = x1 + (ks[(group + 2) % 3] + np.uint32(group + 1))
    return x0, x1


def _key_words(key: Any) -> tuple[Any, Any]:
    return _row(key, 0), _row(key, 1)


def _row(x: Any, i: int) -> Any:
    """``x[i]`` for a static `i`."""
    aval = abstractify(x)
    start = (i,) + (0,) * (aval.ndim - 1)
    limit = (i + 1,) + aval.shape[1:]
    return sp.reshape(sp.slice_(x, start_indices=start, limit_indices=limit),
                      new_sizes=aval.shape[1:])


def _prefix(x: Any, n: int) -> Any:
    return sp.slice_(x, start_indices=(0,), limit_indices=(n,))


def _threefry_2x32(key: Any, count: Any, size: int) -> Any:
    """JAX's ``threefry_2x32``: hash a flat uint32 `count` of length `size` as two halves."""
    k1, k2 = _key_words(key)
    if size % 2:
        count = sp.concatenate(count, np.zeros((1,), _U32), axis=0)
    half = (size + 1) // 2
    x0 = _prefix(count, half)
    x1 = sp.slice_(count, start_indices=(half,), limit_indices=(2 * half,))
    y0, y1 = threefry2x32(k1, k2, x0, x1)
    return _prefix(sp.concatenate(y0, y1, axis=0), size)


def _iota_u32(shape: tuple[int, ...]) -> Any:
    """The flat index of each element of `shape` (JAX's iota_2x32_shape low word)."""
    size = math.prod(shape)
    if size >= 2**32:
        raise located(NotImplementedError, "random: arrays of 2**32 or more elements are not "
                      "supported", "draw several smaller arrays and concatenate them")
    return sp.reshape(conv.iota(dtype=_U32, shape=(size,), dimension=0), new_sizes=shape)


def _hash_shape(key: Any, shape: tuple[int, ...]) -> tuple[Any, Any]:
    """The partitionable scheme: hash counters (0, flat index) for every element of `shape`."""
    k1, k2 = _key_words(key)
    return threefry2x32(k1, k2, jnp.zeros(shape, _U32), _iota_u32(shape))
