"""``jnp.fft``: NumPy's FFT functions over `lax.fft` (JAX's signatures, dtypes and norms).

Axes are moved to the end (the primitive transforms trailing axes), the input is cropped or
zero-padded to the requested lengths, and the result is scaled for ``norm``: "backward"
(the default: the inverse divides by n), "ortho" (both by sqrt(n)) or "forward".
"""

from __future__ import annotations

import math
import operator
from typing import Any, Optional, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.lax.fourier import fft as lax_fft
from transpiler.numpy.complex_numbers import conj
from transpiler.numpy.creation import arange, asarray, astype
from transpiler.numpy.joining import pad
from transpiler.numpy.shape import moveaxis, roll
from transpiler.primitives import elementwise as ew
from transpiler.primitives.core import abstractify, normalize_axis

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _norm_factor(lengths: Sequence[int], name: str, norm: Optional[str]) -> Optional[float]:
    """The factor `norm` applies on top of lax.fft's (which divides the inverse by n)."""
    size = math.prod(lengths)
    inverse = name.startswith("i")
    if norm is None or norm == "backward":
        return None
    if norm == "ortho":
        return math.sqrt(size) if inverse else 1 / math.sqrt(size)
    if norm == "forward":
        return size if inverse else 1 / size
    raise ValueError(f'jnp.fft.{name}: invalid norm value {norm!r}; should be "backward", '
                     '"ortho" or "forward"')


def _core(name: str, fft_type: str, a: Any, s: Optional[Sequence[int]],
          axes: Optional[Sequence[int]], norm: Optional[str]) -> Any:
    """JAX's ``_fft_core``: transform `a` over `axes` with lengths `s`."""
    full = f"jnp.fft.{name}"
    x = asarray(a)
    ndim = abstractify(x).ndim
    if s is not None:
        s = tuple(operator.index(n) for n in s)
        if any(n < 0 for n in s):
            raise ValueError(f"{full}: shape should be non-negative, got s={s}")
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError(f"{full}: shape s={s} and axes={tuple(axes)} have different lengths")
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    axes = tuple(normalize_axis(ax, ndim, name) for ax in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{full} does not support repeated axes, got axes {axes}")
    if not axes:
        return x  # nothing to transform
    trailing = tuple(range(ndim - len(axes), ndim))
    x = moveaxis(x, axes, trailing)
    shape = list(abstractify(x).shape)
    if s is not None:
        wanted = list(shape)
        for axis, n in zip(trailing, s):
            wanted[axis] = n
        if fft_type == "IRFFT":
            wanted[-1] = wanted[-1] // 2 + 1
        x = x[tuple(slice(0, n) for n in wanted)]
        cropped = abstractify(x).shape
        if tuple(cropped) != tuple(wanted):
            x = pad(x, [(0, w - c) for w, c in zip(wanted, cropped)])
        lengths = list(s)
    elif fft_type == "IRFFT":
        lengths = [shape[axis] for axis in trailing[:-1]] + [max(0, 2 * (shape[-1] - 1))]
    else:
        lengths = [shape[axis] for axis in trailing]
    if any(n < 1 for n in lengths):
        raise ValueError(f"{full}: invalid number of FFT data points {tuple(lengths)}")
    # lax.fft transforms up to 3 axes at once; more are done 3 at a time (FFT and IFFT
    # are separable; RFFT and IRFFT keep their real axis in the last group).
    out = _transform(x, fft_type, lengths)
    factor = _norm_factor(lengths, name, norm)
    if factor is not None:
        out = ew.multiply(out, factor)
    return moveaxis(out, trailing, axes)


def _transform(x: Any, fft_type: str, lengths: list[int]) -> Any:
    if len(lengths) <= 3:
        return lax_fft(x, fft_type, tuple(lengths))
    ndim = abstractify(x).ndim
    head, tail = lengths[:-3], lengths[-3:]
    if fft_type == "IRFFT":  # the complex axes first, then the real one
        x = _transform_leading(x, "IFFT", head, ndim)
        return lax_fft(x, fft_type, tuple(tail))
    x = lax_fft(x, fft_type, tuple(tail))
    return _transform_leading(x, "IFFT" if fft_type == "IFFT" else "FFT", head, ndim)


def _transform_leading(x: Any, fft_type: str, lengths: list[int], ndim: int) -> Any:
    """The transform of the `len(lengths)` axes just before the last three."""
    axes = tuple(range(ndim - 3 - len(lengths), ndim - 3))
    trailing = tuple(range(ndim - len(lengths), ndim))
    x = moveaxis(x, axes, trailing)
    return moveaxis(_transform(x, fft_type, lengths), trailing, axes)


def _one(name: str, fft_type: str, a: Any, n: Optional[int], axis: int,
         norm: Optional[str]) -> Any:
    if isinstance(axis, (tuple, list)):
        raise ValueError(f"jnp.fft.{name}: axis must be an int, got {axis!r}; use "
                         f"jnp.fft.{name}n for several axes")
    return _core(name, fft_type, a, None if n is None else [n], [axis], norm)


def fft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None) -> Any:
    return _one("fft", "FFT", a, n, axis, norm)


def ifft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None) -> Any:
    return _one("ifft", "IFFT", a, n, axis, norm)


def rfft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None) -> Any:
    return _one("rfft", "RFFT", a, n, axis, norm)


def irfft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None) -> Any:
    return _one("irfft", "IRFFT", a, n, axis, norm)


def hfft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None) -> Any:
    """The FFT of a signal with Hermitian symmetry (a real spectrum)."""
    conjugated = conj(asarray(a))
    size = abstractify(conjugated).shape[normalize_axis(axis, abstractify(conjugated).ndim,
                                                        "hfft")]
    length = (size - 1) * 2 if n is None else n
    return ew.multiply(_one("hfft", "IRFFT", conjugated, n, axis, norm), length)


def ihfft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None) -> Any:
    """The inverse of `hfft`."""
    x = asarray(a)
    length = abstractify(x).shape[normalize_axis(axis, abstractify(x).ndim, "ihfft")] \
        if n is None else n
    return ew.multiply(conj(_one("ihfft", "RFFT", x, n, axis, norm)), 1 / length)


def fftn(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
         norm: Optional[str] = None) -> Any:
    return _core("fftn", "FFT", a, s, axes, norm)


def ifftn(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
          norm: Optional[str] = None) -> Any:
    return _core("ifftn", "IFFT", a, s, axes, norm)


def rfftn(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
          norm: Optional[str] = None) -> Any:
    return _core("rfftn", "RFFT", a, s, axes, norm)


def irfftn(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
           norm: Optional[str] = None) -> Any:
    return _core("irfftn", "IRFFT", a, s, axes, norm)


def fft2(a: Any, s: Optional[Sequence[int]] = None, axes: Sequence[int] = (-2, -1),
         norm: Optional[str] = None) -> Any:
    return _core("fft2", "FFT", a, s, axes, norm)


def ifft2(a: Any, s: Optional[Sequence[int]] = None, axes: Sequence[int] = (-2, -1),
          norm: Optional[str] = None) -> Any:
    return _core("ifft2", "IFFT", a, s, axes, norm)


def rfft2(a: Any, s: Optional[Sequence[int]] = None, axes: Sequence[int] = (-2, -1),
          norm: Optional[str] = None) -> Any:
    return _core("rfft2", "RFFT", a, s, axes, norm)


def irfft2(a: Any, s: Optional[Sequence[int]] = None, axes: Sequence[int] = (-2, -1),
           norm: Optional[str] = None) -> Any:
    return _core("irfft2", "IRFFT", a, s, axes, norm)


def _frequency_dtype(dtype: Any) -> np.dtype:
    return dtypes.default_float() if dtype is None else dtypes.canonicalize(dtype)


def _check_static(name: str, n: Any, d: Any) -> None:
    if isinstance(n, (list, tuple)) or isinstance(d, (list, tuple)):
        raise ValueError(f"jnp.fft.{name}: n and d must be scalars, got n={n!r}, d={d!r}")


def fftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of `fft`: ``[0, 1, ..., n/2-1, -n/2, ..., -1] / (d n)``."""
    _check_static("fftfreq", n, d)
    target = _frequency_dtype(dtype)
    k = np.fft.fftfreq(operator.index(n), 1 / n) if n else np.zeros(0)
    return ew.true_divide(asarray(k, target), astype(ew.multiply(asarray(d), n), target))


def rfftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of `rfft`: ``[0, 1, ..., n//2] / (d n)``."""
    _check_static("rfftfreq", n, d)
    target = _frequency_dtype(dtype)
    k = arange(0, operator.index(n) // 2 + 1, dtype=target)
    return ew.true_divide(k, astype(ew.multiply(asarray(d), n), target))


def _shift(name: str, x: Any, axes: Any, sign: int) -> Any:
    x = asarray(x)
    shape = abstractify(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
    elif isinstance(axes, int):
        axes = (axes,)
    axes = tuple(normalize_axis(ax, len(shape), name) for ax in axes)
    if not axes:
        return x
    return roll(x, tuple(sign * (shape[ax] // 2) for ax in axes), axes)


def fftshift(x: Any, axes: Any = None) -> Any:
    """Move the zero frequency to the middle."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x: Any, axes: Any = None) -> Any:
    """The inverse of `fftshift`."""
    return _shift("ifftshift", x, axes, -1)
