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
from transpiler.sharding.specs import NamedSharding, Shard, Sharding, SingleDeviceSharding


class _HostExchange:
    """DLPack export (``np.from_dlpack(x)``, ``torch.from_dlpack(x)``) of the value on the
    host: a device array's host copy."""

    __slots__ = ()

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:
        host = np.asarray(self)
        kwargs = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device),
                                    ("copy", copy)) if v is not None}
        try:
            return host.__dlpack__(**kwargs)
        except BufferError:  # a read-only value for a consumer of DLPack < 1.0: a copy
            return host.copy().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU, device 0


class Array(_HostExchange, AvalProperties, ArrayMethods):
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

    @property
    def sharding(self) -> Sharding:
        """An eager value is on the host: the default device's sharding."""
        return SingleDeviceSharding(runtime.default_device())

    def devices(self) -> set:
        return {runtime.default_device()}

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


class DeviceArray(_HostExchange, ArrayMethods, runtime.DeviceArray):
    """A `jit` result in device memory, with JAX-semantics operators and methods."""

    __slots__ = ("_key", "_sharding")
    _key: tuple  # (shape, dtype, device): jit's dispatch key, computed once
    _sharding: Any  # a NamedSharding it was placed with, else None (its one device's)

    @classmethod
    def _wrap(cls, bv: Any, device: Any, dtype: np.dtype, shape: tuple) -> "DeviceArray":
        self = cast(DeviceArray, super()._wrap(bv, device, dtype, shape))
        self._key = (shape, dtype, device)
        self._sharding = None
        return self

    @property
    def sharding(self) -> Sharding:
        """``device_put(x, NamedSharding(...))``'s sharding, else its device's. The global
        value is held in one buffer on the mesh's first device (jit runs there); each
        device's piece is in `addressable_shards`."""
        return self._sharding or SingleDeviceSharding(self._device)

    @property
    def addressable_shards(self) -> list[Shard]:
        """Each device's piece: ``Shard(device, index, replica_id, data)``, the data on
        that device."""
        sharding = self.sharding
        replicas = sharding.replica_ids()
        host = np.asarray(self)
        return [Shard(device, index, replicas[device],
                      device_put(host[index], device) if device is not self._device or
                      any(s != slice(None) for s in index) else self)
                for device, index in sharding.devices_indices_map(self.shape).items()]

    def devices(self) -> set:
        return self.sharding.device_set

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


def device_put(x: Any, device: Any = None, *, src: Any = None, donate: Any = False,
               may_alias: Any = None) -> Any:
    """``jax.device_put``: the arrays of pytree `x` copied into device memory, as
    `DeviceArray`s on `device` (default: the default device), a `Sharding`, or a pytree
    prefix of `x` of them. Values keep their dtype but for the 64-bit ones JAX narrows
    without ``jax_enable_x64``; arrays already there are returned as they are. A
    `NamedSharding` puts the global value on the mesh's first device and records the
    sharding (``x.sharding``, ``x.addressable_shards``); a dimension its mesh axes do not
    divide is an error."""
    if device is None or isinstance(device, (runtime.Device, Sharding)):
        return tree_util.tree_map(lambda leaf: _put(leaf, device), x)
    try:
        pairs = tree_util.tree_structure(device, is_leaf=_is_placement).flatten_up_to(x)
    except (ValueError, TypeError):
        raise located(TypeError, f"device_put: expected a Device or a Sharding (or a pytree "
                      f"of them shaped like the value), got {type(device).__name__}",
                      "pass a device from transpiler.devices(), a NamedSharding, or nothing "
                      "for the default device") from None
    targets = tree_util.tree_leaves(device, is_leaf=_is_placement)
    placed = [tree_util.tree_map(lambda leaf, t=t: _put(leaf, t), sub)
              for t, sub in zip(targets, pairs)]
    return tree_util.tree_unflatten(tree_util.tree_structure(device, is_leaf=_is_placement),
                                    placed)


def _is_placement(value: Any) -> bool:
    return value is None or isinstance(value, (runtime.Device, Sharding))


def _put(leaf: Any, where: Any) -> Any:
    """One array on a device, or placed by a sharding."""
    if where is None or isinstance(where, runtime.Device):
        return _on_device(leaf, runtime.default_device() if where is None else where, None)
    if not isinstance(where, Sharding):
        raise located(TypeError, f"device_put: expected a Device or a Sharding, got "
                      f"{type(where).__name__}", "pass a device from transpiler.devices(), a "
                      "NamedSharding, or nothing for the default device")
    if isinstance(where, SingleDeviceSharding):
        return _on_device(leaf, where.device, None)
    assert isinstance(where, NamedSharding)
    shape = np.shape(leaf)
    try:
        where.devices_indices_map(shape)  # the spec fits the shape
    except ValueError as err:
        raise located(ValueError, f"device_put: {err}", "give the array a shape its mesh "
                      "axes divide, or a PartitionSpec that splits other dimensions") from None
    return _on_device(leaf, where.mesh.devices.flat[0], where)


def _on_device(leaf: Any, target: Any, sharding: Any) -> "DeviceArray":
    """`leaf` on `target`, recording `sharding` (None: just that device)."""
    if isinstance(leaf, DeviceArray) and leaf._device == target:
        if leaf._sharding == sharding:
            return leaf
        out = DeviceArray._wrap(leaf._bv, target, leaf._dtype, leaf._shape)  # the same buffer
    else:
        host = np.asarray(leaf)
        placed = target.put(host, dtype=dtypes.canonicalize(host.dtype))
        out = DeviceArray._wrap(placed._bv, target, placed.dtype, placed.shape)
    out._sharding = sharding
    return out


def device_get(x: Any) -> Any:
    """``jax.device_get``: the arrays of pytree `x` as NumPy arrays on the host."""
    return tree_util.tree_map(
        lambda leaf: np.asarray(leaf) if isinstance(leaf, (runtime.DeviceArray, Array))
        else leaf, x)
