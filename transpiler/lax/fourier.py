"""``lax.fft``: the fast Fourier transform as one primitive over the trailing 1-3 axes.

Eagerly it is NumPy's pocketfft. Staged, IREE 3.13's own ``stablehlo.fft`` is used where
it works -- one axis of a power-of-two length in single precision; it fails to compile
float64 (``arith.mulf`` of mismatched types) and rejects other lengths and several axes --
and elsewhere the transform is written with other primitives, one axis at a time:

- lengths up to 256: a product with the DFT matrix (twiddles computed in float64);
- other composite lengths ``n = n1 * n2``: the four-step (Cooley-Tukey) split -- DFTs of
  length n1 down the columns, twiddles, DFTs of length n2 along the rows -- recursively;
- prime lengths: Bluestein's chirp-z, a convolution done with power-of-two transforms.

RFFT is the complex transform of the real input cut to ``n // 2 + 1`` bins; IRFFT
rebuilds the Hermitian spectrum and keeps the real part of its inverse (the imaginary
parts of the zero and Nyquist bins are ignored, as by pocketfft). The derivative rules
are JAX's transposes (transforms/ad/fft.py).
"""

from __future__ import annotations

import enum
import math
from typing import Any, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.lowering.builder import LoweringContext, attr, i64_array
from transpiler.primitives import conversions as conv
from transpiler.primitives import dot as dot_p
from transpiler.primitives import elementwise as ew
from transpiler.primitives import shape as sp
from transpiler.primitives.batching import leading_batch_rule
from transpiler.primitives.core import ShapedArray, abstractify, define, dtype_error, shape_error
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template


class FftType(enum.IntEnum):
    """``lax.FftType``: which transform ``lax.fft`` computes."""
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


DIRECT = 256  # lengths up to this are one product with the DFT matrix


def fft_type_name(fft_type: Any) -> str:
    """The name of an FftType given as the enum, its name or its value."""
    if isinstance(fft_type, str) and fft_type.upper() in FftType.__members__:
        return fft_type.upper()
    try:
        return FftType(fft_type).name
    except ValueError:
        raise dtype_error(f"fft: unknown fft_type {fft_type!r}; use one of "
                          f"{', '.join(FftType.__members__)}") from None


# --- the primitive: fft(x, fft_type, fft_lengths) ------------------------------------------

def _fft_eval(x: ShapedArray, *, fft_type: str, fft_lengths: tuple[int, ...]) -> ShapedArray:
    k = len(fft_lengths)
    if not 1 <= k <= 3 or x.ndim < k:
        raise shape_error(f"fft: transforms 1 to 3 trailing axes, got fft_lengths "
                          f"{list(fft_lengths)} for an operand of shape {list(x.shape)}")
    if any(n < 1 for n in fft_lengths):
        raise shape_error(f"fft: invalid fft_lengths {list(fft_lengths)}; each must be >= 1")
    lead, last = x.shape[:-k], fft_lengths[-1]
    if fft_type == "RFFT":
        if not dtypes.is_float(x.dtype) or x.dtype in (dtypes.float16, dtypes.bfloat16):
            raise dtype_error(f"fft: RFFT takes a float32 or float64 operand, got {x.dtype}",
                              "jnp.fft.rfft converts for you; use FFT for complex input")
        expected, shape = fft_lengths, (*lead, *fft_lengths[:-1], last // 2 + 1)
        dtype = dtypes.complex_dtype(x.dtype)
    else:
        if not dtypes.is_complex(x.dtype):
            raise dtype_error(f"fft: {fft_type} takes a complex operand, got {x.dtype}",
                              "jnp.fft converts for you (x.astype(jnp.complex64))")
        if fft_type == "IRFFT":
            expected = (*fft_lengths[:-1], last // 2 + 1)
            shape, dtype = (*lead, *fft_lengths), dtypes.real_dtype(x.dtype)
        else:
            expected, shape, dtype = fft_lengths, x.shape, x.dtype
    if x.shape[-k:] != tuple(expected):
        raise shape_error(f"fft: {fft_type} with fft_lengths {list(fft_lengths)} needs trailing "
                          f"axes {list(expected)}, got an operand of shape {list(x.shape)}")
    return ShapedArray(tuple(shape), dtype)


def _fft_impl(x: np.ndarray, *, fft_type: str, fft_lengths: tuple[int, ...]) -> np.ndarray:
    out = _fft_eval(ShapedArray(x.shape, x.dtype), fft_type=fft_type, fft_lengths=fft_lengths)
    axes = tuple(range(-len(fft_lengths), 0))
    result: np.ndarray
    if fft_type == "IRFFT":
        result = np.fft.irfftn(x, s=fft_lengths, axes=axes)
    else:
        transform = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn}[fft_type]
        result = transform(x, axes=axes)
    return np.asarray(result, out.dtype)


def _native(x: ShapedArray, fft_type: str, fft_lengths: tuple[int, ...]) -> bool:
    """Whether IREE's stablehlo.fft compiles this transform (see the module docstring)."""
    (n,) = fft_lengths if len(fft_lengths) == 1 else (0,)
    single = x.dtype in (dtypes.float32, dtypes.complex64)
    return single and n >= 2 and n & (n - 1) == 0


def _fft_lower(ctx: LoweringContext, x: Any, *, fft_type: str,
               fft_lengths: tuple[int, ...]) -> Any:
    # Behind barriers, in a dispatch of its own: fused with its producers or consumers
    # (a gradient's pad, a Hessian's products), IREE 3.13 failed to compile it ("write
    # affecting operations on global resources are restricted to workgroup distributed
    # contexts") at every optimization level.
    x = ctx.barrier(x)
    y = ctx.op("stablehlo.fft", [x], attributes={
        "fft_type": attr(f"#stablehlo<fft_type {fft_type}>"),
        "fft_length": i64_array(fft_lengths)})
    return ctx.barrier(y)


def _fft_composite(x: Any, *, fft_type: str, fft_lengths: tuple[int, ...]) -> Any:
    aval = abstractify(x)
    if _native(aval, fft_type, fft_lengths):
        return NotImplemented
    k = len(fft_lengths)
    if fft_type in ("FFT", "IFFT"):
        for axis in range(aval.ndim - k, aval.ndim):
            x = _along(x, axis, fft_type == "IFFT")
        return x
    last = aval.ndim - 1
    n = fft_lengths[-1]
    if fft_type == "RFFT":
        x = conv.convert_element_type(x, dtype=dtypes.complex_dtype(aval.dtype))
        x = _slice_last(_along(x, last, False), 0, n // 2 + 1)
        for axis in range(aval.ndim - k, last):
            x = _along(x, axis, False)
        return x
    for axis in range(aval.ndim - k, last):  # IRFFT
        x = _along(x, axis, True)
    bins = n // 2 + 1
    mirrored = ew.conj(sp.rev(_slice_last(x, 1, n - bins + 1), dimensions=(last,)))
    full = sp.concatenate(x, mirrored, axis=last) if n > bins else x
    return ew.real(_along(full, last, True))


fft_p = define("fft", impl=_fft_impl, abstract_eval=_fft_eval, lower=_fft_lower,
               composite=_fft_composite,
               doc="The FFT of the trailing len(fft_lengths) axes (FftType: FFT, IFFT, RFFT, "
                   "IRFFT).")


# --- the transform of one axis, written with primitives --------------------------------------

def _constant(value: np.ndarray, dtype: np.dtype) -> Any:
    return conv.convert_element_type(np.asarray(value, dtype), dtype=dtype)


def _slice_last(x: Any, start: int, stop: int) -> Any:
    shape = abstractify(x).shape
    return sp.slice_(x, start_indices=(0,) * (len(shape) - 1) + (start,),
                     limit_indices=(*shape[:-1], stop), strides=None)


def _swap(x: Any, a: int, b: int) -> Any:
    perm = list(range(abstractify(x).ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return sp.transpose(x, permutation=tuple(perm)) if a != b else x


def _along(x: Any, axis: int, inverse: bool) -> Any:
    """The (normalized, for `inverse`) DFT of complex `x` along `axis`."""
    last = abstractify(x).ndim - 1
    x = _swap(x, axis, last)
    n = abstractify(x).shape[-1]
    if inverse:  # ifft(x) = conj(fft(conj(x))) / n
        y = ew.conj(_dft_last(ew.conj(x), n))
        y = ew.multiply(y, _constant(np.asarray(1.0 / n), dtypes.real_dtype(abstractify(y).dtype)))
    else:
        y = _dft_last(x, n)
    return _swap(y, axis, last)


def _dft_last(x: Any, n: int) -> Any:
    """The unnormalized forward DFT of complex `x` along its last axis, of length `n`."""
    if n == 1:
        return x
    if n <= DIRECT:
        return _matrix_dft(x, n)
    n1 = _balanced_factor(n)
    if n1 == 1:
        return _bluestein(x, n)
    return _four_step(x, n1, n // n1)


def _twiddles(rows: np.ndarray, cols: np.ndarray, n: int) -> np.ndarray:
    """``exp(-2 pi i r c / n)`` over the grid of `rows` x `cols`, reduced mod n exactly."""
    return np.exp(-2j * np.pi * (np.multiply.outer(rows, cols) % n) / n)


def _matrix_dft(x: Any, n: int) -> Any:
    dtype = abstractify(x).dtype
    k = np.arange(n, dtype=np.int64)
    matrix = _constant(_twiddles(k, k, n), dtype)
    ndim = abstractify(x).ndim
    return dot_p.dot_general(x, matrix, dimension_numbers=(((ndim - 1,), (0,)), ((), ())),
                             preferred_element_type=None)


def _balanced_factor(n: int) -> int:
    """The largest divisor of `n` not above its square root (1 for a prime)."""
    for d in range(math.isqrt(n), 1, -1):
        if n % d == 0:
            return d
    return 1


def _four_step(x: Any, n1: int, n2: int) -> Any:
    """``n = n1 n2``, ``j = j1 n2 + j2``, ``k = k1 + n1 k2``:
    ``X[k] = sum_j2 w_n2^(j2 k2) w_n^(j2 k1) sum_j1 x[j] w_n1^(j1 k1)``."""
    aval = abstractify(x)
    lead, ndim = aval.shape[:-1], aval.ndim
    grid = sp.reshape(x, new_sizes=(*lead, n1, n2))                 # [..., j1, j2]
    columns = _dft_last(_swap(grid, ndim - 1, ndim), n1)            # [..., j2, k1]
    twiddle = _twiddles(np.arange(n2), np.arange(n1), n1 * n2)
    columns = ew.multiply(columns, _constant(twiddle, aval.dtype))
    rows = _dft_last(_swap(columns, ndim - 1, ndim), n2)            # [..., k1, k2]
    return sp.reshape(_swap(rows, ndim - 1, ndim), new_sizes=(*lead, n1 * n2))  # k1 + n1 k2


def _bluestein(x: Any, n: int) -> Any:
    """``X[k] = c[k] sum_j (x[j] c[j]) conj(c[k - j])`` with ``c[m] = exp(-pi i m^2 / n)``:
    a convolution, done by power-of-two transforms of length ``m >= 2n - 1``."""
    aval = abstractify(x)
    m = 1 << (2 * n - 2).bit_length()
    j = np.arange(n, dtype=np.int64)
    chirp = np.exp(-1j * np.pi * ((j * j) % (2 * n)) / n)
    kernel = np.zeros(m, np.complex128)
    kernel[:n] = np.conj(chirp)
    kernel[m - n + 1:] = np.conj(chirp[1:])[::-1]
    chirp_c = _constant(chirp, aval.dtype)
    a = ew.multiply(x, chirp_c)
    a = sp.pad(a, _constant(np.asarray(0), aval.dtype), low=(0,) * aval.ndim,
               high=(0,) * (aval.ndim - 1) + (m - n,), interior=(0,) * aval.ndim)
    spectrum = ew.multiply(_dft_last(a, m), _constant(np.fft.fft(kernel), aval.dtype))
    last = aval.ndim - 1
    convolved = _along(spectrum, last, True)
    return ew.multiply(_slice_last(convolved, 0, n), chirp_c)


# --- rules and the public function -------------------------------------------------------------

fft_p.def_rules(
    jvp=jvp_template(("x",), x="lax.fft(x_dot, fft_type, fft_lengths)"),
    vjp=vjp_template(("x",), "x_bar = ad.fft_cotangent(out_bar, x, fft_type, fft_lengths)"),
    batch=leading_batch_rule(fft_p))


def fft(x: Any, fft_type: Any, fft_lengths: Sequence[int]) -> Any:
    """``lax.fft(x, fft_type, fft_lengths)``: the transform of the trailing
    ``len(fft_lengths)`` axes. FFT and IFFT take complex input (real input is converted),
    RFFT real input, IRFFT the ``n // 2 + 1`` bins of a Hermitian spectrum."""
    name = fft_type_name(fft_type)
    aval = abstractify(x, 0, "fft")
    lengths = tuple(int(n) for n in (fft_lengths if isinstance(fft_lengths, (tuple, list))
                                     else (fft_lengths,)))
    if name == "RFFT" and dtypes.is_complex(aval.dtype):
        raise dtype_error(f"fft: RFFT takes a real operand, got {aval.dtype}",
                          "use FftType.FFT for complex input")
    base = aval.dtype if dtypes.is_inexact(aval.dtype) else dtypes.default_float()
    if name == "RFFT":
        target = dtypes.float64 if base == dtypes.float64 else dtypes.float32
    else:
        target = dtypes.complex_dtype(base)
    if aval.dtype != target:
        x = conv.convert_element_type(x, dtype=target)
    return fft_p(x, fft_type=name, fft_lengths=lengths)
