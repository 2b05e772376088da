"""Cotangents of the FFT (JAX's transposes): FFT and IFFT are symmetric matrices, so each
is its own transpose; RFFT's is the FFT of the zero-padded cotangent, real part kept;
IRFFT's is the RFFT of the cotangent with the bins that stand for two (all but the zero
and Nyquist ones) doubled, scaled by ``1 / prod(fft_lengths)`` and conjugated."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from transpiler import lax
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import shape as sp
from transpiler.primitives.core import abstractify


def fft_cotangent(g: Any, x: Any, fft_type: str, fft_lengths: Sequence[int]) -> Any:
    lengths = tuple(fft_lengths)
    if fft_type in ("FFT", "IFFT"):
        return lax.fft(g, fft_type, lengths)
    aval = abstractify(g)
    n = lengths[-1]
    if fft_type == "RFFT":
        high = (0,) * (aval.ndim - 1) + (n - aval.shape[-1],)
        zero = conv.convert_element_type(np.zeros((), aval.dtype), dtype=aval.dtype)
        padded = sp.pad(g, zero, low=(0,) * aval.ndim, high=high, interior=(0,) * aval.ndim)
        return ew.real(lax.fft(padded, "FFT", lengths))
    spectrum = lax.fft(g, "RFFT", lengths)  # IRFFT
    bins = n // 2 + 1
    weights = np.full(bins, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    dtype = abstractify(spectrum).dtype
    scale = conv.convert_element_type(np.asarray(weights / math.prod(lengths), dtype), dtype=dtype)
    return ew.conj(ew.multiply(spectrum, scale))
