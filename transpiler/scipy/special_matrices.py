"""``jax.scipy.linalg``'s named special matrices (Toeplitz, Hankel, circulant, companion,
Fiedler, Leslie, convolution, DFT, Hadamard, Helmert, Hilbert, Pascal and inverses), with
JAX's signatures, dtypes and batching.

The matrices built from arrays are gathers from a vector of their entries through an index
matrix computed from the (static) shapes, so grad, vmap and jit go through them; leading
dimensions of the inputs broadcast and batch, as in JAX. The matrices that depend only on
static integers are computed with NumPy (exact integers where SciPy has ``exact=True``, so
the results are the correctly rounded values JAX's floating-point formulas approximate)."""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.primitives.core import abstractify

__all__ = ["circulant", "companion", "convolution_matrix", "dft", "fiedler",
           "fiedler_companion", "hadamard", "hankel", "helmert", "hilbert", "invhilbert",
           "invpascal", "leslie", "pascal", "toeplitz"]


# --- matrices built from arrays ----------------------------------------------------------------

def _broadcast_leading(a: Any, b: Any) -> tuple[Any, Any]:
    """`a` and `b` with their leading (batch) dimensions broadcast together and one dtype
    (JAX's promotion, weak Python scalars included); the last axis of each is kept."""
    lead = jnp.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    dtype = jnp.result_type(a, b)
    a = jnp.broadcast_to(a, (*lead, a.shape[-1])).astype(dtype)
    b = jnp.broadcast_to(b, (*lead, b.shape[-1])).astype(dtype)
    return a, b


def _check_arraylike(name: str, *args: Any) -> None:
    """JAX's ``check_arraylike``: arrays and scalars only (a list is a TypeError); None is
    an omitted optional argument."""
    for position, arg in enumerate(args):
        if arg is not None:
            abstractify(arg, position, name)


def _gather(values: Any, index: np.ndarray) -> Any:
    """``out[..., i, j] = values[..., index[i, j]]``: a matrix per vector of entries."""
    return jnp.take(values, index, axis=-1)


def _as_inexact(a: Any) -> Any:
    """`a` as an array of at least one dimension, integers and bools promoted to the
    default float (JAX's ``promote_args_inexact``; complex stays complex)."""
    a = jnp.atleast_1d(jnp.asarray(a))
    return a.astype(dtypes.to_inexact(a.dtype))


def toeplitz(c: Any, r: Any = None) -> Any:
    """The Toeplitz matrix ``A[..., i, j] = c[..., i - j]`` for ``i >= j`` and
    ``r[..., j - i]`` above the diagonal (``r[..., 0]`` is ignored); `r` defaults to
    ``conj(c)``. Shape ``(..., N, M)`` for `c` ``(..., N)`` and `r` ``(..., M)``."""
    _check_arraylike("toeplitz", c, r)
    c = jnp.atleast_1d(jnp.asarray(c))
    r = jnp.conjugate(c) if r is None else jnp.atleast_1d(jnp.asarray(r))
    c, r = _broadcast_leading(c, r)
    m, n = c.shape[-1], r.shape[-1]
    if m == 0 or n == 0:
        return jnp.zeros((*c.shape[:-1], m, n), c.dtype)
    entries = jnp.concatenate([jnp.flip(c, axis=-1), r[..., 1:]], axis=-1)
    index = (m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :]
    return _gather(entries, index)


def hankel(c: Any, r: Any = None) -> Any:
    """The Hankel matrix ``H[..., i, j] = v[..., i + j]`` with ``v = concatenate([c,
    r[..., 1:]])`` (`c` the first column, `r` the last row, zeros by default). Shape
    ``(..., N, M)``."""
    _check_arraylike("hankel", c, r)
    c = jnp.asarray(c)
    r = jnp.zeros_like(c) if r is None else jnp.asarray(r)
    if c.ndim == 0:
        raise ValueError("hankel: c must be at least 1-dimensional, got a scalar.")
    if r.ndim == 0:
        raise ValueError("hankel: r must be at least 1-dimensional, got a scalar.")
    c, r = _broadcast_leading(c, r)
    m, n = c.shape[-1], r.shape[-1]
    if m == 0 or n == 0:
        return jnp.zeros((*c.shape[:-1], m, n), c.dtype)
    entries = jnp.concatenate([c, r[..., 1:]], axis=-1)
    index = np.arange(m)[:, None] + np.arange(n)[None, :]
    return _gather(entries, index)


def circulant(c: Any) -> Any:
    """The circulant matrix ``A[..., i, j] = c[..., (i - j) % N]`` (`c` its first column).
    Shape ``(..., N, N)``."""
    _check_arraylike("circulant", c)
    c = jnp.atleast_1d(jnp.asarray(c))
    n = c.shape[-1]
    index = (np.arange(n)[:, None] - np.arange(n)[None, :]) % max(n, 1)
    return _gather(c, index)


def leslie(f: Any, s: Any) -> Any:
    """The Leslie matrix: the fecundities `f` (``(..., N)``, ``N >= 2``) as its first row,
    the survival coefficients `s` (``(..., N - 1)``) on its first subdiagonal, zeros
    elsewhere. Shape ``(..., N, N)``."""
    _check_arraylike("leslie", f, s)
    f = jnp.atleast_1d(jnp.asarray(f))
    s = jnp.atleast_1d(jnp.asarray(s))
    n = f.shape[-1]
    if n < 2:
        raise ValueError("The length of f along the last axis must be at least 2; "
                         f"got shape {f.shape}.")
    if s.shape[-1] != n - 1:
        raise ValueError("Incorrect lengths for f and s. The length of s along the last axis "
                         f"must be one less than the length of f; got f shape {f.shape} "
                         f"and s shape {s.shape}.")
    f, s = _broadcast_leading(f, s)
    zero = jnp.zeros((*f.shape[:-1], 1), f.dtype)
    entries = jnp.concatenate([zero, f, s], axis=-1)  # 0, then f at 1.., then s at 1 + n..
    rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
    index = np.where(rows == 0, 1 + cols, np.where(cols == rows - 1, n + rows, 0))
    return _gather(entries, index)


def companion(a: Any) -> Any:
    """The companion matrix of the polynomial with coefficients `a` (``(..., N)``, ``N >=
    2``, highest degree first): first row ``-a[..., 1:] / a[..., :1]``, ones on the first
    subdiagonal. Shape ``(..., N - 1, N - 1)``; integers promote to the default float. As in
    JAX, a zero leading coefficient gives ``inf``/``nan`` rather than an error."""
    _check_arraylike("companion", a)
    a = _as_inexact(a)
    if a.shape[-1] < 2:
        raise ValueError("The length of `a` along the last axis must be at least 2; "
                         f"got shape {a.shape}.")
    m = a.shape[-1] - 1
    first_row = -a[..., 1:] / a[..., :1]
    constants = jnp.broadcast_to(jnp.asarray([0, 1], a.dtype), (*a.shape[:-1], 2))
    entries = jnp.concatenate([first_row, constants], axis=-1)  # row, then 0 at m, 1 at m + 1
    rows, cols = np.arange(m)[:, None], np.arange(m)[None, :]
    index = np.where(rows == 0, cols, np.where(cols == rows - 1, m + 1, m))
    return _gather(entries, index)


def fiedler(a: Any) -> Any:
    """The symmetric Fiedler matrix ``F[..., i, j] = |a[..., i] - a[..., j]|``. Shape
    ``(..., N, N)``, the dtype of `a`."""
    _check_arraylike("fiedler", a)
    a = jnp.atleast_1d(jnp.asarray(a))
    return jnp.abs(a[..., :, None] - a[..., None, :])


def _fiedler_companion_index(n: int) -> np.ndarray:
    """Where each entry of the ``n x n`` Fiedler companion matrix comes from: ``k - 1`` for
    ``-a[k] / a[0]``, ``n`` for 0 and ``n + 1`` for 1 (JAX's pentadiagonal layout)."""
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    even, odd = i % 2 == 0, i % 2 == 1
    conditions = [(i == 0) & (j == 0), (i == 1) & (j == 0), (j == i + 1) & even,
                  (j == i + 2) & even, (j == i - 1) & even & (i >= 2),
                  (j == i - 2) & odd & (i >= 3)]
    choices = [np.zeros_like(i), np.full_like(i, n + 1), np.minimum(i + 2, n) - 1,
               np.full_like(i, n + 1), np.minimum(i + 1, n) - 1, np.full_like(i, n + 1)]
    return np.select(conditions, [np.broadcast_to(c, (n, n)) for c in choices], default=n)


def fiedler_companion(a: Any) -> Any:
    """The Fiedler companion matrix of the polynomial with coefficients `a` (``(..., N)``,
    ``N >= 1``, highest degree first): pentadiagonal, with the polynomial's roots as its
    eigenvalues. Shape ``(..., N - 1, N - 1)``; integers promote to the default float."""
    _check_arraylike("fiedler_companion", a)
    a = _as_inexact(a)
    if a.shape[-1] == 0:
        raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero "
                         f"length, but got an array of shape {a.shape}.")
    n = a.shape[-1] - 1
    if n == 0:
        return jnp.zeros((*a.shape[:-1], 0, 0), a.dtype)
    coefficients = -a[..., 1:] / a[..., :1]
    constants = jnp.broadcast_to(jnp.asarray([0, 1], a.dtype), (*a.shape[:-1], 2))
    entries = jnp.concatenate([coefficients, constants], axis=-1)
    return _gather(entries, _fiedler_companion_index(n))


def convolution_matrix(a: Any, n: int, mode: str = "full") -> Any:
    """The Toeplitz matrix ``A`` (``n`` columns) with ``A @ v == jnp.convolve(a, v, mode)``
    for `a` of shape ``(..., m)``: ``m + n - 1`` rows for ``'full'``, ``max(m, n)`` for
    ``'same'``, ``max(m, n) - min(m, n) + 1`` for ``'valid'``."""
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"n must be a positive integer; got {n}.")
    _check_arraylike("convolution_matrix", a)
    a = jnp.asarray(a)
    if a.ndim == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
    m = a.shape[-1]
    if m < 1:
        raise ValueError(f"len(a) must be at least 1; got shape {a.shape}.")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
    widths = [(0, 0)] * (a.ndim - 1) + [(0, n - 1)]
    padded = jnp.pad(a, widths)
    reversed_padded = jnp.pad(jnp.flip(a, axis=-1), widths)
    length = m + n - 1
    if mode == "same":
        trim = min(n, m) - 1
        begin, end = trim // 2, trim - trim // 2
    elif mode == "valid":
        begin = end = min(n, m) - 1
    else:
        begin = end = 0
    first_column = padded[..., begin:length - end]
    first_row = reversed_padded[..., length - n - begin:length - begin]
    return toeplitz(first_column, first_row)


# --- matrices of static integers ---------------------------------------------------------------

def _exact_to_float(values: np.ndarray, dtype: Any) -> np.ndarray:
    """Python integers (an object array) rounded to `dtype`; +-inf past its range, as the
    floating-point formulas overflow."""
    def one(x: int) -> float:
        return float(x) if x.bit_length() < 1024 else math.copysign(math.inf, x)

    if values.size == 0:
        return np.zeros(values.shape, dtype)
    with np.errstate(over="ignore"):  # past float32's range: inf, as intended
        return np.vectorize(one, otypes=[np.float64])(values).astype(dtype)


def hilbert(n: int) -> Any:
    """The Hilbert matrix ``H[i, j] = 1 / (i + j + 1)`` of order `n`, in the default float
    dtype."""
    a = np.arange(n, dtype=dtypes.default_float())
    one = a.dtype.type(1)
    return jnp.asarray(one / (a[:, None] + a[None, :] + one))


def invhilbert(n: int) -> Any:
    """The inverse of the Hilbert matrix of order `n`, in the default float dtype: the
    exact integers, rounded (``inf`` once they overflow it)."""
    out = np.empty((n, n), dtype=object)
    for i in range(n):
        for j in range(n):
            s = i + j
            out[i, j] = ((-1) ** s * (s + 1) * math.comb(n + i, n - j - 1)
                         * math.comb(n + j, n - i - 1) * math.comb(s, i) ** 2)
    return jnp.asarray(_exact_to_float(out, dtypes.default_float()))


_PASCAL_KINDS = ["symmetric", "lower", "upper"]


def _lower_pascal(n: int, signed: bool) -> np.ndarray:
    """``binom(i, j)`` (times ``(-1)^(i - j)`` when `signed`) as Python integers."""
    out = np.zeros((n, n), dtype=object)
    for i in range(n):
        for j in range(i + 1):
            out[i, j] = math.comb(i, j) * (-1 if signed and (i - j) % 2 else 1)
    return out


def pascal(n: int, kind: str | None = None) -> Any:
    """The Pascal matrix of order `n`: ``kind`` ``'lower'`` (``binom(i, j)``), ``'upper'``
    (its transpose) or ``'symmetric'`` (``binom(i + j, i)``, the default). float32, as in
    JAX, with the exact binomials rounded to it."""
    kind = "symmetric" if kind is None else kind
    if kind not in _PASCAL_KINDS:
        raise ValueError(f"Expected kind to be on of: {_PASCAL_KINDS}; got {kind}")
    lower = _lower_pascal(n, signed=False)
    exact = {"lower": lower, "upper": lower.T, "symmetric": lower.dot(lower.T)}[kind]
    return jnp.asarray(_exact_to_float(exact, np.float32))


def invpascal(n: int, kind: str | None = None) -> Any:
    """The inverse of ``pascal(n, kind)`` in the default float dtype: ``(-1)^(i - j)
    binom(i, j)`` for ``'lower'``, its transpose for ``'upper'``, their product
    ``U^-1 L^-1`` for ``'symmetric'`` (exact integers, rounded)."""
    kind = "symmetric" if kind is None else kind
    if kind not in _PASCAL_KINDS:
        raise ValueError(f"Expected kind to be one of: {_PASCAL_KINDS}; got {kind}")
    lower = _lower_pascal(n, signed=True)
    exact = {"lower": lower, "upper": lower.T, "symmetric": lower.T.dot(lower)}[kind]
    return jnp.asarray(_exact_to_float(exact, dtypes.default_float()))


def helmert(n: int, full: bool = False) -> Any:
    """The Helmert matrix of order `n` (a positive integer): row ``k - 1`` is ``(1, ..., 1,
    -k, 0, ..., 0) / sqrt(k (k + 1))`` with `k` ones; with `full`, a first row of ``1 /
    sqrt(n)``. Shape ``(n - 1, n)``, or ``(n, n)`` with `full`; the default float dtype."""
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"n must be a positive integer; got {n}.")
    dtype = dtypes.default_float()
    i, j = np.arange(n - 1)[:, None], np.arange(n)[None, :]
    k = (i + 1).astype(dtype)
    denominator = np.sqrt(k * (k + 1))
    out = np.where(j <= i, 1 / denominator, np.where(j == i + 1, -k / denominator, 0))
    out = out.astype(dtype)
    if full:
        first_row = np.full((1, n), 1 / np.sqrt(dtype.type(n)), dtype)
        out = np.concatenate([first_row, out], axis=0)
    return jnp.asarray(out)


def hadamard(n: int, dtype: Any = int) -> Any:
    """The Sylvester-construction Hadamard matrix of order `n` (a positive power of 2), of
    `dtype` (the default integer for ``int``)."""
    n = operator.index(n)
    if n < 1 or n & (n - 1):
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    out = np.ones((1, 1), np.int64)
    while out.shape[0] < n:
        out = np.block([[out, out], [out, -out]])
    return jnp.asarray(out, dtype=dtype)


def dft(n: int, scale: str | None = None, *, dtype: Any = None) -> Any:
    """The discrete Fourier transform matrix ``W[i, j] = exp(-2 pi i j / n)`` of order `n`,
    divided by ``sqrt(n)`` for `scale` ``'sqrtn'`` or by ``n`` for ``'n'``; `dtype` a
    complex dtype (the default complex one by default)."""
    if scale is not None and scale not in ("sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
    if dtype is None:
        dtype = dtypes.default_complex()
    else:
        dtype = dtypes.canonicalize(dtype)
        if not dtypes.is_complex(dtype):
            raise ValueError(f"dtype must be a complex floating-point type; got {dtype}.")
    a = np.arange(n)
    turns = (a[:, None] * a[None, :]) % max(n, 1)  # exact: the angle's whole turns removed
    out = np.exp(-2j * np.pi * turns / max(n, 1))
    if scale == "sqrtn":
        out = out / np.sqrt(n)
    elif scale == "n":
        out = out / n
    return jnp.asarray(out.astype(dtype))
