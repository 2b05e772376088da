"""Devices: thin, cached wrappers around IREE HAL devices.

One :class:`iree.runtime.VmInstance` is shared by the whole process.  Each
``(kind, index)`` pair maps to exactly one :class:`Device` object, which owns
one ``HalDevice``.  CPU "devices" (``local-task`` / ``local-sync``) are
logical: each index is a separate ``HalDevice`` created from the same driver,
and their number is ``$TRANSPILER_CPU_DEVICES`` (default 2).

Only ``iree.runtime``, numpy and the standard library are imported here.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

import numpy as np
import iree.runtime as rt

from .array import DeviceArray, host_to_buffer_view, native_host

__all__ = [
    "CPU_KINDS",
    "GPU_KINDS",
    "Device",
    "DeviceNotFoundError",
    "default_device",
    "devices",
    "local_device_count",
    "vm_instance",
]

CPU_KINDS: tuple[str, ...] = ("local-task", "local-sync")
GPU_KINDS: tuple[str, ...] = ("vulkan", "cuda", "hip")
DEFAULT_KIND = "local-task"

_lock = threading.RLock()
_instance: rt.VmInstance | None = None
_devices: dict[tuple[str, int], "Device"] = {}
_drivers: dict[str, rt.HalDriver] = {}


class DeviceNotFoundError(RuntimeError):
    """The requested device kind or index is not available on this machine."""


def vm_instance() -> rt.VmInstance:
    """Return the process-wide ``VmInstance`` (created on first use)."""
    global _instance
    if _instance is None:
        with _lock:
            if _instance is None:
                _instance = rt.VmInstance()
    return _instance


def _available_drivers() -> list[str]:
    try:
        return sorted(rt.query_available_drivers())
    except Exception:  # pragma: no cover - defensive
        return []


def _not_found(kind: str, detail: str) -> DeviceNotFoundError:
    return DeviceNotFoundError(
        f"device {kind!r} is not available: {detail}. "
        f"Drivers compiled into this IREE runtime: {_available_drivers()} "
        f"(a listed driver may still lack its system library or hardware); "
        f"known kinds: {list(CPU_KINDS + GPU_KINDS)}"
    )


def _driver(kind: str) -> rt.HalDriver:
    """Return the (cached) HAL driver for ``kind`` or raise DeviceNotFoundError."""
    drv = _drivers.get(kind)
    if drv is not None:
        return drv
    if kind not in CPU_KINDS + GPU_KINDS:
        raise _not_found(kind, "unknown device kind")
    if kind not in _available_drivers():
        raise _not_found(kind, "driver not compiled into this IREE runtime")
    try:
        drv = rt.get_driver(kind)
    except Exception as e:  # IREE raises ValueError/RuntimeError here.
        raise _not_found(kind, _first_line(e)) from e
    _drivers[kind] = drv
    return drv


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _cpu_device_count() -> int:
    try:
        return max(0, int(os.environ.get("TRANSPILER_CPU_DEVICES", "2")))
    except ValueError:
        return 2


def _device_count(kind: str) -> int:
    if kind in CPU_KINDS:
        _driver(kind)
        return _cpu_device_count()
    drv = _driver(kind)
    try:
        return len(drv.query_available_devices())
    except Exception as e:
        raise _not_found(kind, _first_line(e)) from e


def _keep_host_memory() -> None:
    """Let glibc reuse freed large blocks instead of returning them to the OS.

    IREE's CPU devices allocate every call's result buffers with malloc; glibc maps each
    large one afresh (mmap) and unmaps it when freed, so every call pays a page fault per
    4 KiB written: 67,000 faults and ~220 ms of a 290 ms per-example-gradient step over a
    262 MiB result (measured here; JAX pays the same). Serving large blocks from the heap
    and trimming it only above 1 GiB made that step 4x faster. Freed memory then stays with
    the process (up to the trim threshold): ``TRANSPILER_HOST_MEMORY=release`` keeps
    glibc's defaults."""
    global _memory_tuned
    if _memory_tuned or os.environ.get("TRANSPILER_HOST_MEMORY", "keep") == "release":
        return
    _memory_tuned = True
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc: nothing to tune
        return
    m_trim_threshold, m_mmap_max = -1, -4
    mallopt(m_trim_threshold, 1 << 30)
    mallopt(m_mmap_max, 0)


_memory_tuned = False


def _create_hal_device(kind: str, index: int) -> rt.HalDevice:
    count = _device_count(kind)
    if not 0 <= index < count:
        raise _not_found(
            f"{kind}:{index}", f"index out of range ({count} {kind} device(s))"
        )
    drv = _driver(kind)
    try:
        if kind in CPU_KINDS:
            _keep_host_memory()
            # Each logical CPU device is its own HalDevice (and task pool).
            return drv.create_default_device()
        infos = drv.query_available_devices()
        return drv.create_device(infos[index]["device_id"], None)
    except Exception as e:
        raise _not_found(f"{kind}:{index}", _first_line(e)) from e


class Device:
    """A cached handle to one IREE HAL device.

    ``Device(kind, index)`` always returns the same object for the same
    arguments.  Attributes: ``kind``, ``index``, ``platform`` (``"cpu"`` or
    ``"gpu"``), ``hal`` (the ``HalDevice``) and ``instance`` (the shared
    ``VmInstance``).
    """

    __slots__ = ("kind", "index", "platform", "hal", "instance", "__weakref__")

    kind: str
    index: int
    platform: str
    hal: rt.HalDevice
    instance: rt.VmInstance

    def __new__(cls, kind: str = DEFAULT_KIND, index: int = 0) -> "Device":
        key = (kind, int(index))
        dev = _devices.get(key)
        if dev is not None:
            return dev
        with _lock:
            dev = _devices.get(key)
            if dev is None:
                if not isinstance(kind, str):
                    raise TypeError(f"device kind must be a str, got {kind!r}")
                hal = _create_hal_device(kind, key[1])
                dev = object.__new__(cls)
                dev.kind = kind
                dev.index = key[1]
                dev.platform = "cpu" if kind in CPU_KINDS else "gpu"
                dev.hal = hal
                dev.instance = vm_instance()
                _devices[key] = dev
        return dev

    def __repr__(self) -> str:
        return f"Device({self.kind}:{self.index})"

    def __reduce__(self) -> tuple[Any, tuple[str, int]]:
        return (Device, (self.kind, self.index))

    def put(self, array_like: Any, dtype: Any = None) -> DeviceArray:
        """Copy a host array into a new buffer on this device.

        The array keeps its exact dtype (``dtype`` casts it first).  Raises
        TypeError for dtypes IREE cannot hold (object, str, ...).
        """
        host = native_host(np.asarray(array_like, dtype=dtype))
        bv = host_to_buffer_view(self.hal, host)
        return DeviceArray._wrap(bv, self, host.dtype, host.shape)


def devices(kind: str | None = None) -> list[Device]:
    """All devices of ``kind`` (default: the host ``local-task`` devices)."""
    kind = DEFAULT_KIND if kind is None else kind
    return [Device(kind, i) for i in range(_device_count(kind))]


def local_device_count(kind: str | None = None) -> int:
    """Number of devices of ``kind`` (default: host ``local-task`` devices)."""
    return _device_count(DEFAULT_KIND if kind is None else kind)


def default_device() -> Device:
    """The default device, ``Device("local-task", 0)``."""
    return Device(DEFAULT_KIND, 0)
