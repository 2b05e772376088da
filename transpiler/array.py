"""The array types users hold.

- `Array`: an eager value. It wraps an immutable NumPy array; every operation on it runs
  the primitives' NumPy rules with JAX's dtype semantics.
- `DeviceArray`: a `jit` result. It stays in IREE device memory between calls and has the
  same operators and methods (operations on it run eagerly on a host copy).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

import runtime
from transpiler.array_methods import ArrayMethods, AvalProperties
from transpiler.primitives import core
from transpiler.primitives.core import ShapedArray
from transpiler import dtypes, tree_util
from transpiler.errors import located
from transpiler import numpy as jnp


class Array(AvalProperties, ArrayMethods):
    """An eager array: an immutable NumPy value plus JAX's weak-type bit."""

    __slots__ = ("_value", "aval", "__weakref__")

    def __init__(self, value: Any, dtype: Any = None) -> None:
        other = jnp.asarray(value, dtype=dtype)
        self._value = other._value
        self.aval = other.aval

    @classmethod
    def _new(cls, value: np.ndarray, aval: ShapedArray) -> "Array":
        self = cls.__new__(cls)
        value.flags.writeable = False
        self._value = value
        self.aval = aval
        return self

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if copy:
            return np.array(self._value, dtype=dtype, copy=True)
        return self._value if dtype is None else self._value.astype(dtype)

    def block_until_ready(self) -> "Array":
        return self

    def item(self) -> Any:
        return self._value.item()

    def tolist(self) -> Any:
        return self._value.tolist()

    def __bool__(self) -> bool:
        return bool(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __complex__(self) -> complex:
        return complex(self._value)

    def __index__(self) -> int:
        if self.aval.shape or self.dtype.kind not in "iu":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self._value)

    def __format__(self, spec: str) -> str:
        return format(self._value.item(), spec) if not self.aval.shape else format(str(self), spec)

    def __repr__(self) -> str:
        return _array_repr("Array", self._value, self.aval)

    def __str__(self) -> str:
        return str(self._value)

    def __reduce__(self) -> Any:
        return (_rebuild, (np.array(self._value), self.aval.weak_type))

    def __deepcopy__(self, memo: Any) -> "Array":
        return self


def _rebuild(value: np.ndarray, weak: bool) -> Array:
    return Array._new(value, ShapedArray(value.shape, value.dtype, weak))


def _array_repr(name: str, value: np.ndarray, aval: ShapedArray) -> str:
    body = np.array2string(value, separator=", ", prefix=name + "(")
    extra = ", weak_type=True" if aval.weak_type else ""
    return f"{name}({body}, dtype={aval.dtype.name}{extra})"


class DeviceArray(ArrayMethods, runtime.DeviceArray):
    """A `jit` result in device memory, with JAX-semantics operators and methods."""

    __slots__ = ("_key",)
    _key: tuple  # (shape, dtype, device): jit's dispatch key, computed once

    @classmethod
    def _wrap(cls, bv: Any, device: Any, dtype: np.dtype, shape: tuple) -> "DeviceArray":
        self = cast(DeviceArray, super()._wrap(bv, device, dtype, shape))
        self._key = (shape, dtype, device)
        return self

    def __repr__(self) -> str:
        return _array_repr("DeviceArray", np.asarray(self), ShapedArray(self.shape, self.dtype))


def _wrap(value: Any, aval: ShapedArray) -> Array:
    out = np.asarray(value)
    if out.dtype != aval.dtype:
        with np.errstate(over="ignore", invalid="ignore"):  # casts wrap silently, as in JAX
            out = out.astype(aval.dtype)
    if out.shape != aval.shape:  # a rule's impl and abstract_eval disagree: our bug
        raise AssertionError(f"impl gave shape {out.shape}, abstract_eval {aval.shape}")
    if _aliases_writeable(out):  # a view of the user's mutable array: Arrays are immutable
        out = out.copy()
    return Array._new(out, aval)


def _aliases_writeable(value: np.ndarray) -> bool:
    base = value.base
    while isinstance(base, np.ndarray):
        if base.flags.writeable:
            return True
        base = base.base
    return base is not None and not isinstance(base, np.ndarray)


core._hooks["wrap"] = _wrap


class ShapeDtypeStruct:
    """An argument's shape and dtype without data (``jax.ShapeDtypeStruct``): for
    ``jit(f).lower(...)`` and ``jit(f, example_args=...)`` (ahead-of-time builds)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: Any, dtype: Any) -> None:
        from transpiler import dtypes
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtypes.canonicalize(np.dtype(dtype))

    @property
    def aval(self) -> Any:
        return ShapedArray(self.shape, self.dtype, False)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype) == \
            (other.shape, other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"


def device_put(x: Any, device: Any = None) -> Any:
    """``jax.device_put``: the arrays of pytree `x` copied into device memory, as
    `DeviceArray`s on `device` (default: the default device). Values keep their dtype but
    for the 64-bit ones JAX narrows without ``jax_enable_x64``; arrays already there are
    returned as they are."""
    target = runtime.default_device() if device is None else device
    if not isinstance(target, runtime.Device):
        raise located(TypeError, f"device_put: expected a Device, got {type(target).__name__}",
                      "shardings (jax.sharding) are not supported yet; pass a device from "
                      "transpiler.devices(), or nothing for the default device")

    def put(leaf: Any) -> Any:
        if isinstance(leaf, DeviceArray) and leaf._device == target:
            return leaf
        host = np.asarray(leaf)
        placed = target.put(host, dtype=dtypes.canonicalize(host.dtype))
        return DeviceArray._wrap(placed._bv, target, placed.dtype, placed.shape)
    return tree_util.tree_map(put, x)


def device_get(x: Any) -> Any:
    """``jax.device_get``: the arrays of pytree `x` as NumPy arrays on the host."""
    from transpiler import tree_util
    return tree_util.tree_map(
        lambda leaf: np.asarray(leaf) if isinstance(leaf, (runtime.DeviceArray, Array))
        else leaf, x)
