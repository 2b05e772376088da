"""Runtime for transpiled programs: IREE devices, device arrays and modules.

This package depends only on ``iree.runtime`` (never ``iree.compiler``),
numpy and the standard library (plus ``ml_dtypes`` for bfloat16, if present).

Typical use::

    import runtime
    dev = runtime.Device("local-sync")
    mod = runtime.load("model.vmfb", dev)
    out = mod.main(dev.put(x), y)      # -> DeviceArray
    np.asarray(out)
"""

from .array import SUPPORTED_DTYPES, DeviceArray
from .device import (
    Device,
    DeviceNotFoundError,
    default_device,
    devices,
    local_device_count,
)
from .module import Function, Module, TensorSpec, load

__all__ = [
    "Device",
    "DeviceArray",
    "DeviceNotFoundError",
    "Function",
    "Module",
    "SUPPORTED_DTYPES",
    "TensorSpec",
    "default_device",
    "devices",
    "load",
    "local_device_count",
]
