"""Array creation and conversion: ``array``, ``zeros``, ``arange``, ``linspace``, ``eye`` ..."""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any, Optional

import numpy as np

from transpiler import dtypes
from transpiler.primitives import conversions as conv
from transpiler.primitives import core
from transpiler.errors import located
from transpiler.primitives.core import abstractify


def _is_array(x: Any) -> bool:
    return isinstance(x, (np.ndarray, np.generic, core.Tracer)) or hasattr(x, "aval") \
        or hasattr(x, "block_until_ready")


def _canonical(dtype: Any) -> Optional[np.dtype]:
    return None if dtype is None else dtypes.check_supported(dtypes.canonicalize(dtype), "dtype")


def astype(x: Any, dtype: Any) -> Any:
    """``x.astype(dtype)`` with JAX's canonical dtypes (float64 is float32 without x64)."""
    return conv.convert_element_type(x, dtype=_canonical(dtype))


def asarray(a: Any, dtype: Any = None, order: Optional[str] = None, *, copy: Any = None) -> Any:
    """Convert lists, tuples, scalars and NumPy arrays to an array (no copy when possible)."""
    target = _canonical(dtype)
    if _is_ours(a):
        # our arrays, tracers and device arrays (jit's results) as they are
        return a if target is None or a.dtype == target else astype(a, target)
    if holds_ours(a):
        return _stack_nested(a, target)  # (differentiable: its elements are stacked)
    if isinstance(a, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
        aval = abstractify(a, 0, "asarray")
        value, weak = from_numpy(a, target or aval.dtype), target is None and aval.weak_type
        return conv.convert_element_type(value, dtype=value.dtype, weak_type=weak)
    value = from_numpy(a)
    return conv.convert_element_type(value, dtype=target or value.dtype)


def _is_ours(x: Any) -> bool:
    """An array of ours, a tracer or a device array: a value a derivative may flow in."""
    return isinstance(x, core.Tracer) or hasattr(x, "aval") or hasattr(x, "block_until_ready")


def holds_ours(a: Any) -> bool:
    """Whether a list or tuple holds (at any depth) an array of ours: one to stack,
    differentiably, rather than a constant. (Static to the transforms: a fact of the
    elements' types, the same for every member of a vmapped batch.)"""
    return isinstance(a, (list, tuple)) and any(_is_ours(e) for e in _flat(a))


def from_numpy(a: Any, dtype: Any = None) -> np.ndarray:
    """NumPy's array of `a`, which holds none of ours (NumPy arrays, Python numbers and
    sequences of them), in `dtype` or else JAX's default for it: a constant, as the
    transforms read it (transforms/common/classify.py)."""
    try:
        value = np.asarray(a if not isinstance(a, (list, tuple)) else _to_numpy_nested(a),
                           dtype=dtype)
    except (ValueError, TypeError) as err:
        raise TypeError(f"cannot convert {type(a).__name__} to an array: {err}") from None
    if value.dtype == object or (value.dtype.kind in "USV" and value.dtype != dtypes.bfloat16):
        raise TypeError(f"cannot convert {type(a).__name__} with dtype {value.dtype} to an array; "
                        f"supported dtypes: {dtypes.names_of(dtypes.SUPPORTED)}")
    return value if dtype is not None else value.astype(_default_for(a, value), copy=False)


def _default_for(original: Any, value: np.ndarray) -> np.dtype:
    """Lists of Python numbers get JAX's defaults; NumPy arrays keep (canonical) dtypes."""
    if isinstance(original, (list, tuple)) and value.dtype in (np.float64, np.int64, np.complex128):
        leaves = list(_flat(original))
        if not any(isinstance(e, (np.ndarray, np.generic)) for e in leaves):
            kind = value.dtype.kind
            return {"f": dtypes.default_float(), "i": dtypes.default_int(),
                    "c": dtypes.default_complex()}[kind]
    return dtypes.check_supported(dtypes.canonicalize(value.dtype), "array")


def _flat(seq: Any) -> Any:
    for e in seq:
        if isinstance(e, (list, tuple)):
            yield from _flat(e)
        else:
            yield e


def _to_numpy_nested(a: Any) -> Any:
    return [(_to_numpy_nested(e) if isinstance(e, (list, tuple)) else
             (np.asarray(e) if _is_array(e) else e)) for e in a]


def _stack_nested(a: Any, dtype: Optional[np.dtype]) -> Any:
    from transpiler.numpy import stack  # cycle: transpiler.numpy imports this module first
    parts = []  # (a loop: reverse mode differentiates it, not a conditional comprehension)
    for e in a:
        if isinstance(e, (list, tuple)):
            parts.append(_stack_nested(e, dtype))
        else:
            parts.append(asarray(e, dtype))
    return stack(parts)


def array(object: Any, dtype: Any = None, copy: bool = True, order: Optional[str] = None,
          ndmin: int = 0) -> Any:
    """``jnp.array``: like `asarray`, always a new (immutable) array."""
    out = asarray(object, dtype=dtype)  # arrays are immutable: sharing is a copy
    while ndmin > out.ndim:
        from transpiler.numpy import expand_dims  # cycle: numpy/shape.py imports this module
        out = expand_dims(out, 0)
    return out


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (builtins.int, np.integer)):
        shape = (shape,)
    try:
        out = tuple(builtins.int(operator.index(d)) for d in shape)
    except TypeError:
        raise located(TypeError, f"shape must be a tuple of integers, got {shape!r}",
                      "shapes are static: pass Python ints (under jit, mark the argument "
                      "that gives the size static with static_argnums)") from None
    if any(d < 0 for d in out):
        raise located(ValueError, f"negative dimensions are not allowed: {out}")
    return out


def full(shape: Any, fill_value: Any, dtype: Any = None) -> Any:
    from transpiler.numpy import broadcast_to  # cycle: numpy/shape.py imports this module
    value = asarray(fill_value, dtype=dtype)
    return broadcast_to(value, _shape(shape))


def zeros(shape: Any, dtype: Any = None) -> Any:
    return full(shape, 0, dtype=_canonical(dtype) or dtypes.default_float())


def ones(shape: Any, dtype: Any = None) -> Any:
    return full(shape, 1, dtype=_canonical(dtype) or dtypes.default_float())


def empty(shape: Any, dtype: Any = None) -> Any:
    return zeros(shape, dtype)


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> Any:
    aval = abstractify(a, 0, "full_like")
    return full(aval.shape if shape is None else shape, fill_value,
                dtype=_canonical(dtype) or aval.dtype)


def zeros_like(a: Any, dtype: Any = None, shape: Any = None) -> Any:
    return full_like(a, 0, dtype, shape)


def ones_like(a: Any, dtype: Any = None, shape: Any = None) -> Any:
    return full_like(a, 1, dtype, shape)


def empty_like(a: Any, dtype: Any = None, shape: Any = None) -> Any:
    return zeros_like(a, dtype, shape)


def _static_number(value: Any, name: str, fn: str) -> Any:
    if isinstance(value, core.Tracer):
        raise core.shape_error(f"{fn}: `{name}` must be a concrete Python number, got a traced "
                               "value", "the output shape depends on it; make it static")
    if hasattr(value, "item") and not isinstance(value, (builtins.int, builtins.float)):
        value = value.item()
    if not isinstance(value, (builtins.int, builtins.float)) or isinstance(value, builtins.bool):
        raise located(TypeError, f"{fn}: `{name}` must be a number, got "
                      f"{type(value).__name__} {value!r}")
    return value


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None) -> Any:
    """``jnp.arange`` with static bounds (the length is part of the shape)."""
    start = _static_number(start, "start", "arange")
    stop = _static_number(stop, "stop", "arange") if stop is not None else None
    step = _static_number(step, "step", "arange") if step is not None else None
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if step == 0:
        raise located(ValueError, "arange: step must not be zero")
    length = builtins.max(builtins.int(math.ceil((stop - start) / step)), 0)
    target: Optional[np.dtype]
    if dtype is None:
        is_int = builtins.all(isinstance(v, (builtins.int, np.integer))
                              for v in (start, stop, step))
        target = dtypes.default_int() if is_int else dtypes.default_float()
    else:
        target = _canonical(dtype)
    index = conv.iota(dtype=target if target != dtypes.bool_ else dtypes.int32,
                      shape=(length,), dimension=0)
    if step != 1:
        index = index * step
    if start != 0:
        index = index + start
    return astype(index, target)


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0) -> Any:
    """Evenly spaced numbers; `start` and `stop` may be arrays (traced or not)."""
    from transpiler.numpy import expand_dims, moveaxis  # cycle: numpy/shape.py imports this module
    num = builtins.int(_static_number(num, "num", "linspace"))
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative")
    if dtype is None and builtins.any(dtypes.is_complex(abstractify(v).dtype)
                                      for v in (start, stop)):
        dtype = dtypes.default_complex()
    target = _canonical(dtype) or dtypes.default_float()
    compute = target if dtypes.is_inexact(target) else dtypes.default_float()
    start_a = astype(asarray(start), compute)
    stop_a = astype(asarray(stop), compute)
    div = (num - 1) if endpoint else num
    steps = astype(conv.iota(dtype=dtypes.int32, shape=(num,), dimension=0), compute)
    delta = stop_a - start_a
    shape_extra = start_a.ndim if start_a.ndim >= stop_a.ndim else stop_a.ndim
    for _ in range(shape_extra):
        steps = expand_dims(steps, -1)
    if div > 0:
        step = delta / div
        out = start_a + steps * step
        if endpoint and num > 1:
            from transpiler.numpy import where  # cycle: transpiler.numpy imports this module first
            out = where(steps == num - 1, stop_a + 0 * out, out)
    else:
        step = delta * np.nan
        out = start_a + steps * delta
    if axis != 0 and out.ndim > 1:
        out = moveaxis(out, 0, axis)
    out = astype(out, target)
    return (out, step) if retstep else out


def eye(N: int, M: Optional[int] = None, k: int = 0, dtype: Any = None) -> Any:
    M = N if M is None else M
    target = _canonical(dtype) or dtypes.default_float()
    rows = conv.iota(dtype=dtypes.int32, shape=(N, M), dimension=0)
    cols = conv.iota(dtype=dtypes.int32, shape=(N, M), dimension=1)
    return astype(rows + k == cols, target)


def identity(n: int, dtype: Any = None) -> Any:
    return eye(n, dtype=dtype)


def tri(N: int, M: Optional[int] = None, k: int = 0, dtype: Any = None) -> Any:
    M = N if M is None else M
    rows = conv.iota(dtype=dtypes.int32, shape=(N, M), dimension=0)
    cols = conv.iota(dtype=dtypes.int32, shape=(N, M), dimension=1)
    return astype(cols <= rows + k, _canonical(dtype) or dtypes.default_float())


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             base: Any = 10.0, dtype: Any = None, axis: int = 0) -> Any:
    """``base ** linspace(start, stop, num)`` (differentiable in start, stop and base)."""
    from transpiler.numpy.math import power  # math builds on this module
    target = _canonical(dtype) or dtypes.to_inexact(
        dtypes.promote((abstractify(start).dtype, False), (abstractify(stop).dtype, False))[0])
    compute = dtypes.to_inexact(target)
    lin = linspace(astype(asarray(start), compute), astype(asarray(stop), compute), num,
                   endpoint=endpoint, dtype=compute, axis=axis)
    return astype(power(base, lin), target)


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
              dtype: Any = None, axis: int = 0) -> Any:
    """Numbers spaced evenly on a log scale from `start` to `stop` (of one sign)."""
    from transpiler.numpy.math import log10, sign  # math builds on this module
    from transpiler.numpy.shape import moveaxis  # cycle: numpy/shape.py imports this module
    target = _canonical(dtype) or dtypes.to_inexact(
        dtypes.promote((abstractify(start).dtype, False), (abstractify(stop).dtype, False))[0])
    compute = dtypes.to_inexact(target)
    start_a, stop_a = astype(asarray(start), compute), astype(asarray(stop), compute)
    s = sign(start_a)
    out = s * logspace(log10(start_a / s), log10(stop_a / s), num, endpoint=endpoint,
                       base=10.0, dtype=compute, axis=0)
    if axis != 0 and out.ndim > 1:
        out = moveaxis(out, 0, axis)
    return astype(out, target)


def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0) -> Any:
    """An array of the values in a bytes-like `buffer` (copied; NumPy reads it)."""
    return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Any:
    """An array of the numbers in a text `string` separated by `sep`."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromiter(*args: Any, **kwargs: Any) -> Any:
    """Not provided, as in JAX: consuming an iterator is a side effect."""
    raise located(
        NotImplementedError,
        "jnp.fromiter() is not implemented because it may be non-pure and thus unsafe for "
        "use with JIT and other JAX transformations. Consider using "
        "jnp.asarray(np.fromiter(...)) instead.")


def from_dlpack(x: Any, /, *, device: Any = None, copy: Any = None) -> Any:
    """An array from an object with the DLPack protocol (``__dlpack__``), read on the
    host."""
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} does not support the DLPack "
                        "protocol (no __dlpack__ method)")
    return asarray(np.from_dlpack(x))
