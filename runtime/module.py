"""Loading compiled IREE modules (.vmfb) and calling their functions.

``load(path_or_bytes, device)`` returns a :class:`Module`; each exported
function is a :class:`Function` that checks its arguments against the
signature IREE records in the ``iree.abi.declaration`` reflection string,
uploads host inputs, invokes synchronously and wraps results as
:class:`DeviceArray` objects.

Lifetimes: a Function keeps its Module alive, a Module keeps its
``VmContext`` alive, and results keep only their buffer and device, so they
outlive everything else.
"""

from __future__ import annotations

import errno
import os
from typing import Any, Sequence, cast

import numpy as np
import iree.runtime as rt

from .array import (
    DeviceArray,
    dtype_for_element_type,
    host_to_buffer_view,
)
from .callbacks import HOST_MODULE, debug_sink, host_module, raised_in_host_function
from .device import Device, default_device
from .signature import TensorSpec, parse_declaration

__all__ = ["Function", "Module", "TensorSpec", "load", "parse_declaration"]

_PY_SCALARS = (bool, int, float, complex)


# ------------------------------------------------------------- Function
class Function:
    """A callable exported function of a loaded :class:`Module`."""

    __slots__ = ("name", "module", "input_specs", "output_specs", "_vm_function",
                 "_context", "_device", "_array_class", "_n_out", "_out_static",
                 "_in_devices", "_out_devices")

    def __init__(self, module: "Module", vm_function: rt.VmFunction) -> None:
        self.name: str = vm_function.name
        self.module = module
        self._vm_function = vm_function
        self._context = module._context
        self._device = module.device
        self._array_class = module.array_class
        decl = (vm_function.reflection or {}).get("iree.abi.declaration", "")
        try:
            inputs, outputs = parse_declaration(decl)
        except ValueError:
            inputs, outputs = None, None  # unknown signature: no checks
        self.input_specs: list[TensorSpec] | None = inputs
        self.output_specs: list[TensorSpec] | None = outputs
        self._n_out = len(outputs) if outputs is not None else 8
        # Where each input is uploaded and each output lives (multi-device modules).
        devices = module.devices
        self._in_devices = [devices[s.placement or 0] for s in inputs or ()]
        self._out_devices = [devices[s.placement or 0] for s in outputs or ()]
        # Per output: (dtype, static shape or None) when fully known.
        self._out_static: list[tuple[np.dtype | None, tuple[int, ...] | None]] = [
            (s.dtype, cast("tuple[int, ...]", s.shape) if None not in s.shape else None)
            for s in outputs or ()
        ]

    @property
    def input_signature(self) -> list[tuple[tuple[int | None, ...], np.dtype | None]]:
        """``[(shape, dtype), ...]`` of the inputs (``None`` dims are dynamic)."""
        return [(s.shape, s.dtype) for s in self.input_specs or ()]

    @property
    def output_signature(self) -> list[tuple[tuple[int | None, ...], np.dtype | None]]:
        """``[(shape, dtype), ...]`` of the outputs."""
        return [(s.shape, s.dtype) for s in self.output_specs or ()]

    def _signature_text(self) -> str:
        specs = self.input_specs or ()
        return ", ".join(f"{s.name}: {s.describe()}" for s in specs)

    def __repr__(self) -> str:
        outs = ", ".join(s.describe() for s in self.output_specs or ())
        return f"<Function {self.name}({self._signature_text()}) -> ({outs})>"

    # ------------------------------------------------------ invocation
    def invoke_flat(self, buffer_views: Sequence[rt.HalBufferView]) -> list[rt.HalBufferView]:
        """Invoke with raw buffer views; no checks. Returns raw buffer views."""
        args = rt.VmVariantList(len(buffer_views))
        for bv in buffer_views:
            args.push_ref(bv)
        rets = rt.VmVariantList(self._n_out)
        self._invoke(args, rets)
        get = rets.get_as_object
        return [get(i, rt.HalBufferView) for i in range(rets.size)]

    def _invoke(self, args: rt.VmVariantList, rets: rt.VmVariantList) -> None:
        try:
            self._context.invoke(self._vm_function, args, rets)
        except Exception as e:
            raised = raised_in_host_function()  # (a callback's own error, as it is)
            if raised is not None:
                raise raised from None
            raise RuntimeError(f"{self.name}() failed in IREE: {e}") from e

    def __call__(self, *args: Any) -> Any:
        specs = self.input_specs
        if specs is not None and len(args) != len(specs):
            raise TypeError(
                f"{self.name}() takes {len(specs)} argument"
                f"{'' if len(specs) == 1 else 's'} ({self._signature_text()}), "
                f"got {len(args)}"
            )
        arglist = rt.VmVariantList(len(args))
        for i, arg in enumerate(args):
            if isinstance(arg, DeviceArray):
                if specs is not None:
                    spec = specs[i]
                    if arg._shape != spec.shape and not spec.matches(arg._shape):
                        raise self._shape_error(i, spec, arg._shape)
                    if arg._dtype != spec.dtype and spec.dtype is not None:
                        raise TypeError(
                            f"{self.name}(): argument {i} ({spec.name}) expects "
                            f"dtype {spec.dtype}, got a DeviceArray of dtype "
                            f"{arg._dtype}; device arrays are never cast "
                            f"implicitly, convert it explicitly first"
                        )
                arglist.push_ref(arg._bv)
            else:
                arglist.push_ref(self._upload(i, arg))
        rets = rt.VmVariantList(self._n_out)
        self._invoke(arglist, rets)
        return self._wrap_results(rets)

    def _shape_error(self, i: int, spec: TensorSpec, got: tuple[int, ...]) -> ValueError:
        return ValueError(
            f"{self.name}(): argument {i} ({spec.name}) expects shape "
            f"{spec.describe()}, got shape {tuple(got)}"
        )

    def _upload(self, i: int, arg: Any) -> rt.HalBufferView:
        """Convert a host value to a device buffer matching input ``i``."""
        spec = self.input_specs[i] if self.input_specs is not None else None
        want = spec.dtype if spec is not None else None
        if type(arg) in _PY_SCALARS and want is not None:
            host = np.asarray(arg, dtype=want)  # Python scalars always cast.
        else:
            host = np.asarray(arg)
            if want is not None and host.dtype != want:
                if not np.can_cast(host.dtype, want, casting="same_kind"):
                    assert spec is not None  # `want` comes from it
                    raise TypeError(
                        f"{self.name}(): argument {i} ({spec.name}) expects "
                        f"dtype {want}, got {host.dtype} (not castable under "
                        f"'same_kind' rules)"
                    )
                host = host.astype(want)
        if spec is not None and not spec.matches(host.shape):
            raise self._shape_error(i, spec, host.shape)
        device = self._in_devices[i] if i < len(self._in_devices) else self._device
        return host_to_buffer_view(device.hal, host)

    def _wrap_results(self, rets: rt.VmVariantList) -> Any:
        n = rets.size
        if n == 0:
            return None
        wrap = self._array_class._wrap
        get = rets.get_as_object
        static = self._out_static
        placed = self._out_devices
        results = []
        for i in range(n):
            device = placed[i] if i < len(placed) else self._device
            bv = get(i, rt.HalBufferView)
            dtype, shape = static[i] if i < len(static) else (None, None)
            if shape is None:
                shape = tuple(bv.shape)
            if dtype is None:
                dtype = dtype_for_element_type(bv.element_type)
            results.append(wrap(bv, device, dtype, shape))
        return results[0] if n == 1 else tuple(results)


# --------------------------------------------------------------- Module
_hal_modules: dict[tuple[Device, ...], rt.VmModule] = {}
_sinks: dict[tuple[Device, ...], rt.HalModuleDebugSink] = {}


def _hal_module(devices: tuple[Device, ...]) -> rt.VmModule:
    mod = _hal_modules.get(devices)
    if mod is None:
        instance = devices[0].instance
        sink = _sinks[devices] = debug_sink(devices[0].hal)  # (runtime/callbacks.py)
        mod = _hal_modules[devices] = (
            rt.create_hal_module(instance, devices[0].hal, debug_sink=sink)
            if len(devices) == 1 else
            rt.create_hal_module(instance, devices=[d.hal for d in devices], debug_sink=sink))
    return mod


class Module:
    """A loaded IREE module bound to one device, or to several (``devices``: a module
    compiled with one ``--iree-hal-target-device`` per device, ``@dev0``, ``@dev1``...).

    Functions are available as attributes (``module.main``) and by name
    (``module["main"]``).
    """

    def __init__(
        self,
        vm_module: rt.VmModule,
        device: Device,
        source: str,
        array_class: type[DeviceArray] = DeviceArray,
        devices: Sequence[Device] = (),
    ) -> None:
        self.device = device
        self.devices: tuple[Device, ...] = tuple(devices) or (device,)
        self.source = source
        self.array_class = array_class
        self._vm_module = vm_module
        modules = [_hal_module(self.devices), vm_module]
        host = host_module(device.hal)  # (runtime/callbacks.py)
        if host is not None:
            modules.insert(1, host)
        try:
            self._context = rt.VmContext(device.instance, modules)
        except Exception as e:
            where = device if len(self.devices) == 1 else list(self.devices)
            hint = ""
            if HOST_MODULE in str(e):
                hint = ("; it calls a host function (jax.pure_callback / io_callback) that "
                        "only the process which traced it can provide: build and run it "
                        "in one process with jit")
            raise ValueError(
                f"IREE module {source} cannot be loaded on {where!r}: {e}{hint}"
            ) from e
        self._names = tuple(
            n for n in vm_module.function_names if not n.startswith("__")
        )
        self._functions: dict[str, Function] = {}

    @property
    def function_names(self) -> tuple[str, ...]:
        """Names of the exported functions."""
        return self._names

    def __getitem__(self, name: str) -> Function:
        fn = self._functions.get(name)
        if fn is None:
            vm_fn = self._vm_module.lookup_function(name) if name in self._names else None
            if vm_fn is None:
                raise KeyError(self._missing(name))
            fn = self._functions[name] = Function(self, vm_fn)
        return fn

    def __getattr__(self, name: str) -> Function:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(self._missing(name)) from None

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._names))

    def _missing(self, name: str) -> str:
        return (
            f"module {self.source} has no function {name!r}; "
            f"available: {', '.join(self._names) or '(none)'}"
        )

    def __repr__(self) -> str:
        return (
            f"Module({self.source}, device={self.device!r}, "
            f"functions=[{', '.join(self._names)}])"
        )


def load(
    path_or_bytes: str | os.PathLike | bytes | bytearray | memoryview,
    device: Device | str | None = None,
    *,
    array_class: type[DeviceArray] = DeviceArray,
    devices: Sequence[Device] = (),
) -> Module:
    """Load a compiled IREE module from a ``.vmfb`` path or raw bytes.

    ``device`` is a :class:`Device`, a kind string (``"local-sync"``) or
    ``None`` for :func:`default_device`. ``array_class`` (a DeviceArray
    subclass) is the type of returned results. A multi-device module (pmap's) is
    loaded on ``devices``, its ``@devK`` being ``devices[K]``.
    """
    if devices:
        device = devices[0]
    if device is None:
        device = default_device()
    elif isinstance(device, str):
        device = Device(device)
    elif not isinstance(device, Device):
        raise TypeError(f"device must be a Device, a str or None, got {device!r}")

    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data, source = bytes(path_or_bytes), "<bytes>"
    elif isinstance(path_or_bytes, (str, os.PathLike)):
        path = os.fspath(path_or_bytes)
        if not os.path.isfile(path):
            raise FileNotFoundError(errno.ENOENT, "no such IREE module file", path)
        # Read (rather than mmap) so later edits to the file cannot fault us.
        with open(path, "rb") as f:
            data, source = f.read(), path
    else:
        raise TypeError(
            f"load() expects a path or bytes, got {type(path_or_bytes).__name__}"
        )
    try:
        vm_module = rt.VmModule.copy_buffer(device.instance, data)
    except Exception as e:
        raise ValueError(f"not a valid IREE module (.vmfb): {source}: {e}") from e
    return Module(vm_module, device, source, array_class, devices)
