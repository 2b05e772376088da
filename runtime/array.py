"""DeviceArray: an immutable array living in an IREE device buffer.

A :class:`DeviceArray` holds a ``HalBufferView`` plus the :class:`Device`
that owns it, so the buffer stays valid after every module, function or
context that produced it is gone.  Reading it back always produces a host
*copy* (IREE's zero-copy mapped views must not outlive their buffer).

Operators and indexing here follow NumPy semantics on the host copy and
return NumPy arrays; this is the fallback when only ``runtime`` is installed.
The transpiler package subclasses :class:`DeviceArray` to override them.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import numpy.lib.mixins
import iree.runtime as rt

if TYPE_CHECKING:  # pragma: no cover
    from .device import Device

__all__ = [
    "DeviceArray",
    "SUPPORTED_DTYPES",
    "MLIR_ELEMENT_TYPES",
    "element_type_for",
    "host_to_buffer_view",
    "native_host",
    "buffer_view_to_host",
]

_ET = rt.HalElementType

# numpy dtype -> HAL element type.
_ELEMENT_TYPES: dict[np.dtype, Any] = {
    np.dtype(np.bool_): _ET.BOOL_8,
    np.dtype(np.int8): _ET.SINT_8,
    np.dtype(np.int16): _ET.SINT_16,
    np.dtype(np.int32): _ET.SINT_32,
    np.dtype(np.int64): _ET.SINT_64,
    np.dtype(np.uint8): _ET.UINT_8,
    np.dtype(np.uint16): _ET.UINT_16,
    np.dtype(np.uint32): _ET.UINT_32,
    np.dtype(np.uint64): _ET.UINT_64,
    np.dtype(np.float16): _ET.FLOAT_16,
    np.dtype(np.float32): _ET.FLOAT_32,
    np.dtype(np.float64): _ET.FLOAT_64,
    np.dtype(np.complex64): _ET.COMPLEX_64,
    np.dtype(np.complex128): _ET.COMPLEX_128,
}

# Dtypes whose bytes are moved as another (same-size) numpy dtype.
_STORAGE: dict[np.dtype, np.dtype] = {np.dtype(np.bool_): np.dtype(np.uint8)}

# MLIR element type name -> numpy dtype (used to parse function signatures).
MLIR_ELEMENT_TYPES: dict[str, np.dtype] = {
    "i1": np.dtype(np.bool_),
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "complex<f32>": np.dtype(np.complex64),
    "complex<f64>": np.dtype(np.complex128),
}
for _bits in (8, 16, 32, 64):
    MLIR_ELEMENT_TYPES[f"i{_bits}"] = np.dtype(f"int{_bits}")
    MLIR_ELEMENT_TYPES[f"si{_bits}"] = np.dtype(f"int{_bits}")
    MLIR_ELEMENT_TYPES[f"ui{_bits}"] = np.dtype(f"uint{_bits}")

try:  # bfloat16 is optional: only available with ml_dtypes.
    import ml_dtypes as _ml_dtypes

    _BF16 = np.dtype(_ml_dtypes.bfloat16)
    _ELEMENT_TYPES[_BF16] = _ET.BFLOAT_16
    _STORAGE[_BF16] = np.dtype(np.uint16)
    MLIR_ELEMENT_TYPES["bf16"] = _BF16
except ImportError:  # pragma: no cover - ml_dtypes is normally installed
    pass

SUPPORTED_DTYPES: tuple[np.dtype, ...] = tuple(_ELEMENT_TYPES)


def _supported_names() -> str:
    return ", ".join(str(d) for d in SUPPORTED_DTYPES)


def element_type_for(dtype: np.dtype) -> Any:
    """Return the HAL element type of ``dtype``; TypeError if unsupported."""
    et = _ELEMENT_TYPES.get(dtype)
    if et is None:
        raise TypeError(
            f"dtype {dtype} is not supported on IREE devices; "
            f"supported dtypes: {_supported_names()}"
        )
    return et


_DTYPES_BY_CODE: dict[int, np.dtype] = {int(et): d for d, et in _ELEMENT_TYPES.items()}
# Signless integers (how a compiled module types i8...i64 it computes) read as signed.
_DTYPES_BY_CODE.update({int(getattr(_ET, f"INT_{bits}")): np.dtype(f"int{bits}")
                        for bits in (8, 16, 32, 64)})


def dtype_for_element_type(element_type: Any) -> np.dtype:
    """The NumPy dtype of a HAL element type; TypeError if it has none here."""
    found = _DTYPES_BY_CODE.get(int(element_type))
    if found is None:
        raise TypeError(f"HAL element type {int(element_type):#x} has no NumPy dtype here; "
                        f"supported dtypes: {_supported_names()}")
    return found


def native_host(host: np.ndarray) -> np.ndarray:
    """Return ``host`` in native byte order and C-contiguous layout."""
    if host.dtype.byteorder == ">":  # IREE buffers are little-endian / native.
        host = host.astype(host.dtype.newbyteorder("="))
    if not host.flags.c_contiguous:
        host = np.ascontiguousarray(host)
    return host


def host_to_buffer_view(hal: rt.HalDevice, host: np.ndarray) -> rt.HalBufferView:
    """Copy a host ndarray into a new device-local buffer on ``hal``."""
    host = native_host(host)
    dtype = host.dtype
    et = element_type_for(dtype)
    storage = _STORAGE.get(dtype)
    if storage is not None:
        host = host.view(storage)
    return hal.allocator.allocate_buffer_copy(
        memory_type=rt.MemoryType.DEVICE_LOCAL,
        allowed_usage=rt.BufferUsage.DEFAULT,
        device=hal,
        buffer=host,
        element_type=et,
    )


def buffer_view_to_host(
    bv: rt.HalBufferView, hal: rt.HalDevice, dtype: np.dtype, shape: tuple[int, ...]
) -> np.ndarray:
    """Return a fresh host copy (never a mapped view) of a buffer view."""
    storage = _STORAGE.get(dtype, dtype)
    try:
        mapped = bv.map()
        out = np.array(mapped.asarray(list(shape), storage), copy=True)
        del mapped
    except Exception:
        # Not host-mappable (e.g. GPU memory): let IREE stage a copy.
        staged = rt.DeviceArray(hal, bv, override_dtype=storage).to_host()
        out = np.array(staged, dtype=storage, copy=True).reshape(shape)
    if storage is not dtype:
        out = out.astype(np.bool_) if dtype == np.bool_ else out.view(dtype)
    return out


def _to_host(x: Any) -> Any:
    return x._host_array() if isinstance(x, DeviceArray) else x


class DeviceArray(numpy.lib.mixins.NDArrayOperatorsMixin):
    """An immutable n-d array stored in an IREE device buffer.

    Create one with ``Device.put`` or receive it from a compiled function.
    ``np.asarray(a)`` returns a read-only cached host copy; ``a.to_numpy()``
    returns a fresh writable copy.
    """

    __slots__ = ("_bv", "_device", "_dtype", "_shape", "_host", "__weakref__")
    __array_priority__ = 100
    __hash__ = None  # type: ignore[assignment]

    _bv: rt.HalBufferView
    _device: "Device"
    _dtype: np.dtype
    _shape: tuple[int, ...]
    _host: np.ndarray | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "DeviceArray cannot be constructed directly; use Device.put(...)"
        )

    @classmethod
    def _wrap(
        cls,
        bv: rt.HalBufferView,
        device: "Device",
        dtype: np.dtype,
        shape: tuple[int, ...],
    ) -> "DeviceArray":
        """Wrap an existing buffer view without any validation (hot path)."""
        self = cls.__new__(cls)
        self._bv = bv
        self._device = device
        self._dtype = dtype
        self._shape = shape
        self._host = None
        return self

    # ----------------------------------------------------------- metadata
    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self._shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.itemsize

    @property
    def device(self) -> "Device":
        return self._device

    @property
    def buffer_view(self) -> rt.HalBufferView:
        return self._bv

    def block_until_ready(self) -> "DeviceArray":
        """Wait for the value to be computed (invocations are synchronous)."""
        return self

    # ----------------------------------------------------- host transfer
    def _host_array(self) -> np.ndarray:
        """The cached, read-only host copy."""
        host = self._host
        if host is None:
            host = buffer_view_to_host(
                self._bv, self._device.hal, self._dtype, self._shape
            )
            host.flags.writeable = False
            self._host = host
        return host

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        host = self._host_array()
        if dtype is not None and np.dtype(dtype) != host.dtype:
            if copy is False:
                raise ValueError("a dtype conversion requires a copy")
            return host.astype(dtype)
        return host.copy() if copy else host

    def to_numpy(self) -> np.ndarray:
        """Return a fresh, writable host copy."""
        return self._host_array().copy()

    def item(self, *args: Any) -> Any:
        return self._host_array().item(*args)

    def tolist(self) -> Any:
        return self._host_array().tolist()

    # ----------------------------------------------------- Python protocol
    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of unsized object")
        return self._shape[0]

    def __iter__(self) -> Iterator[Any]:
        if not self._shape:
            raise TypeError("iteration over a 0-d array")
        return iter(self._host_array())

    def __float__(self) -> float:
        return float(self._host_array())

    def __int__(self) -> int:
        return int(self._host_array())

    def __complex__(self) -> complex:
        return complex(self._host_array())

    def __bool__(self) -> bool:
        return bool(self._host_array())

    def __index__(self) -> int:
        if self._shape or self._dtype.kind not in "iub":
            raise TypeError(
                f"only 0-d integer arrays can be used as an index, "
                f"got {self._dtype}{list(self._shape)}"
            )
        return operator.index(self._host_array()[()])

    def __getitem__(self, index: Any) -> Any:
        return self._host_array()[_to_host_index(index)]

    def __setitem__(self, index: Any, value: Any) -> None:
        raise TypeError(f"{type(self).__name__} is immutable")

    def __repr__(self) -> str:
        prefix = f"{type(self).__name__}("
        body = np.array2string(
            self._host_array(), separator=", ", prefix=prefix
        )
        return f"{prefix}{body}, dtype={self._dtype})"

    def __str__(self) -> str:
        return str(self._host_array())

    def __format__(self, spec: str) -> str:
        host = self._host_array()
        return format(host[()] if host.ndim == 0 else host, spec)

    # ------------------------------------------------- NumPy interop
    def __array_ufunc__(
        self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any
    ) -> Any:
        inputs = tuple(_to_host(x) for x in inputs)
        out = kwargs.get("out")
        if out is not None:
            if any(isinstance(o, DeviceArray) for o in out):
                raise TypeError("DeviceArray is immutable; cannot be used as out=")
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Pickles as a plain numpy array (device buffers cannot be pickled).
        return (np.asarray, (self.to_numpy(),))


def _to_host_index(index: Any) -> Any:
    if isinstance(index, DeviceArray):
        return index._host_array()
    if isinstance(index, tuple):
        return tuple(_to_host(i) for i in index)
    return index
