"""``transpiler.random``: JAX's counter-based PRNG, bit for bit, eagerly and under ``jit``.

Keys are JAX's raw keys, uint32 arrays of shape (2,) (``PRNGKey(42)`` is ``[0, 42]``), or
its typed keys (``key(42)``, a `KeyArray` over that data; keys.py): every function takes
either, and `split`/`fold_in` give keys of the kind they were given. Every function is a
composite over existing primitives (``+`` wraps on uint32, ``^``, ``|``, shifts,
reshape/slice/concatenate, bitcasts), so eager NumPy and the compiled StableHLO compute
the same bits -- and the same bits as ``jax.random``:

- the threefry2x32 hash (20 rounds) is ``jax._src.random.threefry2x32``'s;
- ``split``/``bits`` follow JAX's default *partitionable* scheme (the default since JAX
  0.5), or the original scheme when ``config.threefry_partitionable`` is False (JAX's
  ``jax_threefry_partitionable=False``);
- the samplers (``uniform``, ``normal``, ``randint``, ...) are JAX's algorithms, and
  ``erf_inv`` is XLA's float32 polynomial.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.config import config
from transpiler.errors import located
from transpiler.primitives import conversions as conv
from transpiler.primitives import shape as sp
from transpiler.lax.special import erf, erf_inv
from transpiler.primitives.core import (Tracer, abstractify, broadcast_shapes,
                                        dtype_error, shape_error)
from transpiler.lax.parallel import AXES
from transpiler.lax.sorting import top_k
from transpiler.prng import (_hash_shape, _partitionable, _prefix,
                             _row, _threefry_2x32, threefry2x32)
from transpiler.random.keys import KeyArray, check_impl, raw_key, wrap_like

Shape = Union[int, Sequence[int]]
_U32 = dtypes.uint32


# --- argument checks ---------------------------------------------------------------------

def static_shape(name: str, shape: Any) -> tuple[int, ...]:
    """`shape` as a tuple of Python ints; a traced shape is an error naming the fix."""
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    if any(isinstance(d, Tracer) for d in dims):
        raise shape_error(f"random.{name}: `shape` must be static (Python ints), got a traced "
                          "value", "mark the shape argument static: jit(f, static_argnums=...)")
    try:
        out = tuple(int(np.asarray(d).item()) if not isinstance(d, int) else d for d in dims)
    except (TypeError, ValueError):
        raise TypeError(f"random.{name}: shape must be a tuple of integers, "
                        f"got {shape!r}") from None
    if any(d < 0 for d in out):
        raise ValueError(f"random.{name}: negative dimensions are not allowed: {out}")
    return out


def check_param_shape(name: str, shape: tuple[int, ...], *params: Any) -> None:
    """Parameters (minval, p, ...) must broadcast to exactly `shape`, as in JAX."""
    for param in params:
        pshape = abstractify(param, 0, name).shape
        ok = len(pshape) <= len(shape) and all(
            p in (1, s) for p, s in zip(pshape[::-1], shape[::-1]))
        if not ok:
            raise shape_error(f"random.{name}: parameter shape {list(pshape)} does not "
                              f"broadcast to the shape argument {list(shape)}")


def float_dtype(name: str, dtype: Any) -> np.dtype:
    dt = dtypes.default_float() if dtype is None else dtypes.canonicalize(dtype)
    if not dtypes.is_float(dt):
        raise dtype_error(f"random.{name}: dtype must be a float dtype, got {dt}")
    return dt


# --- keys ----------------------------------------------------------------------------------

def PRNGKey(seed: Any, *, impl: Any = None) -> Any:
    """A raw key from an integer seed: ``[seed >> 32, seed & 0xFFFFFFFF]`` (high word 0
    without x64, where the seed is first wrapped to int32, as in JAX)."""
    check_impl("PRNGKey", impl)
    if isinstance(seed, KeyArray):
        raise TypeError("PRNGKey accepts a scalar seed, but was given a PRNG key.")
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError("PRNGKey: the seed must be an integer, got a bool")
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, np.ndarray):
        if not -(2**63) <= int(seed) < 2**64:
            raise OverflowError(f"PRNGKey: seed {seed} does not fit in 64 bits")
        value = int(seed) & 0xFFFFFFFFFFFFFFFF
        high: Any = value >> 32 if config.enable_x64 else 0
        return jnp.asarray(np.array([high, value & 0xFFFFFFFF], _U32))
    aval = abstractify(seed, 0, "PRNGKey")
    if aval.shape:
        raise TypeError(f"PRNGKey accepts a scalar seed, but was given an array of shape "
                        f"{aval.shape} != (). Use jax.vmap for batching")
    if not dtypes.is_int(aval.dtype):
        raise dtype_error(f"PRNGKey: the seed must be an integer, got {aval.dtype}")
    wide = dtypes.int64 if aval.dtype.itemsize == 8 else dtypes.int32
    seed = conv.convert_element_type(seed, dtype=wide)
    low = conv.convert_element_type(seed, dtype=_U32)
    high = conv.convert_element_type(seed >> 32, dtype=_U32) if wide == dtypes.int64 \
        else np.uint32(0)
    return sp.concatenate(sp.reshape(high, new_sizes=(1,)), sp.reshape(low, new_sizes=(1,)),
                          axis=0)


def key(seed: Any, *, impl: Any = None, dtype: Any = None) -> Any:
    """A typed key (shape ``()``, dtype ``key<fry>``) from an integer seed: `PRNGKey`'s
    data, wrapped (a raw key while a `vmap` runs; see keys.py)."""
    if dtype is not None and impl is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to random.key")
    check_impl("key", impl if dtype is None else dtype)
    if isinstance(seed, KeyArray):
        raise TypeError("key accepts a scalar seed, but was given a PRNG key.")
    data = PRNGKey(seed)
    if AXES:  # (keys are raw while a vmap runs)
        return data
    return KeyArray(data)


def split(key: Any, num: Shape = 2) -> Any:
    """`num` new keys (shape ``(*num,)``, or ``(*num, 2)`` for a raw key) from `key`."""
    data = raw_key("split", key)
    shape = static_shape("split", num)
    if _partitionable():
        bits1, bits2 = _hash_shape(data, shape)
        out = sp.concatenate(sp.reshape(bits1, new_sizes=shape + (1,)),
                             sp.reshape(bits2, new_sizes=shape + (1,)), axis=len(shape))
    else:
        size = math.prod(shape)
        counts = conv.iota(dtype=_U32, shape=(2 * size,), dimension=0)
        out = sp.reshape(_threefry_2x32(data, counts, 2 * size), new_sizes=shape + (2,))
    return wrap_like(key, out)


def fold_in(key: Any, data: Any) -> Any:
    """A new key that is a deterministic function of `key` and the 32-bit integer `data`."""
    words = raw_key("fold_in", key)
    if isinstance(data, int) and not isinstance(data, bool):
        data = np.uint32(data & 0xFFFFFFFF)
    aval = abstractify(data, 1, "fold_in")
    if aval.shape:
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                        f"{aval.shape} != (). Use jax.vmap for batching.")
    word = sp.reshape(conv.convert_element_type(data, dtype=_U32), new_sizes=(1,))
    out = _threefry_2x32(words, sp.concatenate(np.zeros((1,), _U32), word, axis=0), 2)
    return wrap_like(key, out)


# --- bits ----------------------------------------------------------------------------------

_UINT = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}


def random_bits(key: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    """JAX's ``threefry_random_bits``: unsigned ints of `bit_width` bits with `shape`."""
    dtype = _UINT[bit_width]
    if _partitionable():
        bits1, bits2 = _hash_shape(key, shape)
        if bit_width == 64:
            high = conv.convert_element_type(bits1, dtype=dtype)
            return (high << np.uint64(32)) | conv.convert_element_type(bits2, dtype=dtype)
        return conv.convert_element_type(bits1 ^ bits2, dtype=dtype)
    size = math.prod(shape)
    count = -(-bit_width * size // 32)
    if count >= 2**32 - 1:
        raise located(NotImplementedError, "random: arrays of 2**32 or more words are not "
                      "supported", "draw several smaller arrays and concatenate them")
    bits = _threefry_2x32(key, conv.iota(dtype=_U32, shape=(count,), dimension=0), count)
    if bit_width == 64:
        half = count // 2
        high = conv.convert_element_type(_prefix(bits, half), dtype=dtype)
        low = sp.slice_(bits, start_indices=(half,), limit_indices=(count,))
        bits = (high << np.uint64(32)) | conv.convert_element_type(low, dtype=dtype)
    elif bit_width < 32:  # each word gives 32 // bit_width values, low bits first
        per_word = 32 // bit_width
        offsets = conv.iota(dtype=_U32, shape=(1, per_word), dimension=1) * np.uint32(bit_width)
        words = sp.reshape(bits, new_sizes=(count, 1)) >> offsets
        flat = sp.reshape(words, new_sizes=(count * per_word,))
        bits = _prefix(conv.convert_element_type(flat, dtype=dtype), size)
    return sp.reshape(bits, new_sizes=shape)


def bits(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Uniform random bits: unsigned ints of `dtype` (default uint32; uint64 with x64)."""
    key = raw_key("bits", key)
    dt = (dtypes.uint64 if config.enable_x64 else _U32) if dtype is None \
        else dtypes.canonicalize(dtype)
    if dt.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
    return random_bits(key, dt.itemsize * 8, static_shape("bits", shape))


# --- continuous samplers ---------------------------------------------------------------------

def uniform(key: Any, shape: Shape = (), dtype: Any = None, minval: Any = 0.0,
            maxval: Any = 1.0) -> Any:
    """Uniform floats in ``[minval, maxval)``: random mantissa bits under exponent 0."""
    key = raw_key("uniform", key)
    shape = static_shape("uniform", shape)
    dt = float_dtype("uniform", dtype)
    check_param_shape("uniform", shape, minval, maxval)
    minval = conv.convert_element_type(minval, dtype=dt)
    maxval = conv.convert_element_type(maxval, dtype=dt)
    info = dtypes.finfo(dt)
    nbits, nmant = info.bits, info.nmant
    rng_bits = 8 if nmant < 8 else nbits
    uint = _UINT[nbits]
    raw = conv.convert_element_type(random_bits(key, rng_bits, shape), dtype=uint)
    one_bits = np.array(1.0, dt).view(uint)
    float_bits = (raw >> uint.type(rng_bits - nmant)) | one_bits
    floats = conv.bitcast_convert_type(float_bits, dtype=dt) - np.array(1.0, dt)
    return jnp.maximum(minval, floats * (maxval - minval) + minval)


def normal(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Standard normal samples: ``sqrt(2) * erf_inv(uniform(-1, 1))``, as in JAX."""
    key = raw_key("normal", key)
    dt = float_dtype("normal", dtype)
    shape = static_shape("normal", shape)
    lo = np.nextafter(np.array(-1.0, dt), np.array(0.0, dt), dtype=dt) if dt.itemsize >= 4 \
        else np.nextafter(np.float32(-1.0), np.float32(0.0)).astype(dt)
    u = uniform(key, shape, dt, lo, np.array(1.0, dt))
    return np.array(np.sqrt(2), dt) * erf_inv(u)


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Optional[Shape] = None,
                     dtype: Any = None) -> Any:
    """Normal samples conditioned on ``lower < x < upper`` (inverse-CDF method)."""
    key = raw_key("truncated_normal", key)
    dt = float_dtype("truncated_normal", dtype)
    if shape is None:
        shape = broadcast_shapes("truncated_normal", abstractify(lower).shape,
                                 abstractify(upper).shape)
    shape = static_shape("truncated_normal", shape)
    check_param_shape("truncated_normal", shape, lower, upper)
    sqrt2 = np.array(np.sqrt(2), dt)
    lower = conv.convert_element_type(lower, dtype=dt)
    upper = conv.convert_element_type(upper, dtype=dt)
    u = uniform(key, shape, dt, minval=erf(lower / sqrt2), maxval=erf(upper / sqrt2))
    out = sqrt2 * erf_inv(u)
    return jnp.clip(out, _next_float(lower, up=True), _next_float(upper, up=False))


def _next_float(x: Any, up: bool) -> Any:
    """``nextafter(x, +-inf)`` for finite float32/float64 values, by stepping the bits."""
    dt = abstractify(x).dtype
    uint = _UINT[dt.itemsize * 8]
    bits_ = conv.bitcast_convert_type(x, dtype=uint)
    one = uint.type(1)
    increment = x > 0 if up else x < 0  # moving away from zero: the bits grow
    stepped = jnp.where(increment, bits_ + one, bits_ - one)
    tiny = np.array(np.nextafter(dt.type(0), dt.type(1)), dt)
    zero_step = tiny if up else -tiny
    out = conv.bitcast_convert_type(stepped, dtype=dt)
    return jnp.where(x == 0, zero_step, jnp.where(jnp.isfinite(x), out, x))


def gumbel(key: Any, shape: Shape = (), dtype: Any = None, mode: Optional[str] = None) -> Any:
    """Gumbel samples ``-log(-log(u))`` (JAX's 'low' mode, the default, and its 'high'
    mode: a second uniform draw refines ``u`` below 1/2)."""
    key = raw_key("gumbel", key)
    dt = float_dtype("gumbel", dtype)
    shape = static_shape("gumbel", shape)
    info = dtypes.finfo(dt)
    mode = "low" if mode is None else mode
    if mode == "highest":
        raise located(NotImplementedError, "random.gumbel: mode='highest' is not implemented yet "
                      "(it needs a count-leading-zeros operation)", "use mode='high'")
    if mode not in ("low", "high"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    if mode == "low":
        return -jnp.log(-jnp.log(uniform(key, shape, dt, minval=float(info.tiny), maxval=1.0)))
    both = uniform(key, (2,) + shape, dt)
    high, low = _row(both, 0), _row(both, 1)
    x = jnp.where(high >= 0.5, high, high + 2.0 ** -info.nmant * low + float(info.tiny))
    return -jnp.log(-jnp.log1p(-x))


# --- discrete samplers ---------------------------------------------------------------------

def _rem(x: Any, span: Any) -> Any:
    """Unsigned ``x % span`` with XLA's ``x % 0 == x`` (randint relies on it)."""
    return jnp.where(span == 0, x, jnp.remainder(x, jnp.where(span == 0, 1, span)))


def _clip_to(value: Any, dtype: np.dtype) -> Any:
    """Convert an integer array to `dtype`, clipping to its range instead of wrapping."""
    src = abstractify(value).dtype
    lo = max(int(dtypes.iinfo(dtype).min), int(dtypes.iinfo(src).min))
    hi = min(int(dtypes.iinfo(dtype).max), int(dtypes.iinfo(src).max))
    clipped = jnp.clip(value, np.array(lo, src), np.array(hi, src))
    return conv.convert_element_type(clipped, dtype=dtype)


def randint(key: Any, shape: Shape, minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Integers in ``[minval, maxval)``: JAX's two-words-per-value modulus method."""
    key = raw_key("randint", key)
    shape = static_shape("randint", shape)
    dt = dtypes.default_int() if dtype is None else dtypes.canonicalize(dtype)
    if not dtypes.is_int(dt):
        raise dtype_error(f"random.randint: dtype must be an integer dtype, got {dt}")
    check_param_shape("randint", shape, minval, maxval)
    minval, maxval = jnp.asarray(minval), jnp.asarray(maxval)
    if dt.itemsize < 4:  # sample in 32 bits to avoid bias, then cast
        info = dtypes.iinfo(dt)
        minval = jnp.clip(minval.astype(dtypes.int32), int(info.min), int(info.max))
        maxval = jnp.clip(maxval.astype(dtypes.int32), int(info.min), int(info.max) + 1)
        return _randint(key, shape, minval, maxval, dtypes.int32).astype(dt)
    return _randint(key, shape, minval, maxval, dt)


def _randint(key: Any, shape: tuple[int, ...], minval: Any, maxval: Any,
             dtype: np.dtype) -> Any:
    if not dtypes.is_int(minval.dtype):
        minval = minval.astype(dtypes.default_int())
    if not dtypes.is_int(maxval.dtype):
        maxval = maxval.astype(dtypes.default_int())
    top = np.array(dtypes.iinfo(dtype).max, dtype)
    maxval_out_of_range = maxval > _clip_to(top, maxval.dtype)
    minval, maxval = _clip_to(minval, dtype), _clip_to(maxval, dtype)
    nbits = dtype.itemsize * 8
    keys = split(key)
    k1, k2 = _row(keys, 0), _row(keys, 1)
    higher_bits = random_bits(k1, nbits, shape)
    lower_bits = random_bits(k2, nbits, shape)
    unsigned = _UINT[nbits]
    span = conv.convert_element_type(maxval - minval, dtype=unsigned)
    span = jnp.where(maxval <= minval, unsigned.type(1), span)  # empty range -> minval
    span = jnp.where(maxval_out_of_range & (maxval > minval), span + unsigned.type(1), span)
    multiplier = _rem(jnp.full_like(span, 2 ** (nbits // 2)), span)
    multiplier = _rem(multiplier * multiplier, span)
    offset = _rem(higher_bits, span) * multiplier + _rem(lower_bits, span)
    offset = _rem(offset, span)
    return minval + conv.convert_element_type(offset, dtype=dtype)


def bernoulli(key: Any, p: Any = 0.5, shape: Optional[Shape] = None,
              mode: str = "low") -> Any:
    """Booleans that are True with probability `p`: ``uniform(key, shape) < p``, or with
    mode 'high' ``u2 * 2^-nmant < p - u1`` (twice the bits, right for tiny `p`)."""
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    key = raw_key("bernoulli", key)
    aval = abstractify(p, 1, "bernoulli")
    if not dtypes.is_float(aval.dtype):
        raise dtype_error(f"bernoulli probability `p` must have a floating dtype, "
                          f"got {aval.dtype}")
    shape = aval.shape if shape is None else static_shape("bernoulli", shape)
    check_param_shape("bernoulli", shape, p)
    if mode == "low":
        return uniform(key, shape, aval.dtype) < p
    both = uniform(key, (2, *shape), aval.dtype)
    u1, u2 = _row(both, 0), _row(both, 1)
    u2 = u2 * np.array(2.0 ** -dtypes.finfo(aval.dtype).nmant, aval.dtype)
    return u2 < p - u1


def categorical(key: Any, logits: Any, axis: int = -1, shape: Optional[Shape] = None,
                replace: bool = True, mode: Optional[str] = None) -> Any:
    """Samples of category indices with probabilities ``softmax(logits, axis)``: the
    Gumbel-max trick ``argmax(logits + gumbel)``, or without replacement the Gumbel top-k
    trick (the leading `shape` axes are the draws, distinct for each batch element)."""
    key = raw_key("categorical", key)
    logits = jnp.asarray(logits)
    ndim = logits.ndim
    axis = axis % ndim if ndim else 0
    batch_shape = tuple(d for i, d in enumerate(logits.shape) if i != axis)
    shape = batch_shape if shape is None else static_shape("categorical", shape)
    check_param_shape("categorical", shape, np.empty(batch_shape, np.int8))
    prefix = shape[:len(shape) - len(batch_shape)]
    if not replace:
        return _categorical_without_replacement(key, logits, axis, shape, prefix, mode)
    logits_shape = list(shape[len(shape) - len(batch_shape):])
    logits_shape.insert(axis, logits.shape[axis])
    noise = gumbel(key, prefix + tuple(logits_shape), logits.dtype, mode=mode)
    expanded = jnp.reshape(logits, (1,) * len(prefix) + logits.shape)
    return jnp.argmax(noise + expanded, axis=axis + len(prefix))


def _categorical_without_replacement(key: Any, logits: Any, axis: int,
                                     shape: tuple[int, ...], prefix: tuple[int, ...],
                                     mode: Optional[str]) -> Any:
    """The top ``prod(prefix)`` of ``logits + gumbel`` along `axis`, draws first."""
    perturbed = logits + gumbel(key, logits.shape, logits.dtype, mode=mode)
    k = math.prod(prefix)
    if k > logits.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number "
                         f"of categories ({logits.shape[axis]}).")
    indices = top_k(jnp.moveaxis(perturbed, axis, -1), k)[1]
    last = indices.ndim - 1
    return jnp.reshape(jnp.transpose(indices, (last, *range(last))), shape)


__all__ = ["PRNGKey", "key", "split", "fold_in", "bits", "uniform", "normal", "randint",
           "bernoulli", "gumbel", "categorical", "truncated_normal",
           "threefry2x32"]
