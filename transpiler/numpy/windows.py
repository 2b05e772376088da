"""Window functions for signal processing: bartlett, blackman, hamming, hanning and
kaiser, in the default float dtype with JAX's formulas (the length `M` is static)."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from transpiler import dtypes
from transpiler.numpy.creation import arange, ones
from transpiler.numpy.elementwise_functions import i0
from transpiler.numpy.math import abs, cos, sqrt
from transpiler.primitives import core

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser"]


def _length(M: Any, fn: str) -> int:
    if isinstance(M, core.Tracer):
        raise core.shape_error(f"{fn}: M must be static, got a traced value",
                               "it is the length of the window")
    return operator.index(M)


def _positions(M: int) -> Any:
    return arange(M, dtype=dtypes.default_float())


def bartlett(M: int) -> Any:
    """The triangular window."""
    M = _length(M, "bartlett")
    if M <= 1:
        return ones(max(M, 0), dtypes.default_float())
    n = _positions(M)
    return 1 - abs(2 * n + 1 - M) / (M - 1)


def blackman(M: int) -> Any:
    """The Blackman window."""
    M = _length(M, "blackman")
    if M <= 1:
        return ones(max(M, 0), dtypes.default_float())
    n = _positions(M)
    return 0.42 - 0.5 * cos(2 * np.pi * n / (M - 1)) + 0.08 * cos(4 * np.pi * n / (M - 1))


def hamming(M: int) -> Any:
    """The Hamming window."""
    M = _length(M, "hamming")
    if M <= 1:
        return ones(max(M, 0), dtypes.default_float())
    n = _positions(M)
    return 0.54 - 0.46 * cos(2 * np.pi * n / (M - 1))


def hanning(M: int) -> Any:
    """The Hann window."""
    M = _length(M, "hanning")
    if M <= 1:
        return ones(max(M, 0), dtypes.default_float())
    n = _positions(M)
    return 0.5 * (1 - cos(2 * np.pi * n / (M - 1)))


def kaiser(M: int, beta: Any) -> Any:
    """The Kaiser window with shape parameter `beta` (differentiable in `beta`)."""
    M = _length(M, "kaiser")
    if M <= 1:
        return ones(max(M, 0), dtypes.default_float())
    n = _positions(M)
    alpha = 0.5 * (M - 1)
    return i0(beta * sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)
