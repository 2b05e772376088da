"""Host callbacks from a running module, two ways.

- Traced values: IREE's ``flow.tensor.trace "key" = [values]`` op hands the values to the
  HAL module's debug sink while the module runs, in program order. The compiler stages
  ``jax.debug.print`` and ``jax.debug.callback`` under ``jit`` as such ops and registers,
  at trace time, what to do with each key's values (``register``); a module built
  elsewhere (``transpiler build``) whose keys nobody registered prints its values under
  their key instead.
- Host functions: a module may import functions of the module ``transpiler_host``
  (``func.call @transpiler_host.NAME(tensors) -> tensors``); the compiler stages
  ``jax.pure_callback`` and ``io_callback`` so and registers, at trace time, the Python
  function behind each NAME (``register_function``). Every module loaded afterwards gets
  a ``transpiler_host`` VM module (``host_module``) exporting the registered functions: the
  compiled code calls them synchronously with its tensors as buffer views, and they return
  new buffer views. A module whose imports nobody registered in this process (one built
  ahead of time) fails to load, naming them.
"""

from __future__ import annotations

import atexit
import gc
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np
import iree.runtime as rt

from .array import buffer_view_to_host, dtype_for_element_type, host_to_buffer_view

__all__ = ["HOST_MODULE", "register", "debug_sink", "register_function", "host_module",
           "raised_in_host_function"]

HOST_MODULE = "transpiler_host"

_HANDLERS: dict[str, Callable[[list[np.ndarray]], None]] = {}


def register(key: str, handler: Callable[[list[np.ndarray]], None]) -> None:
    """Run ``handler(arrays)`` when a module traces the values of `key`."""
    _HANDLERS[key] = handler


def debug_sink(hal: rt.HalDevice) -> rt.HalModuleDebugSink:
    """The sink of the HAL module of `hal`: each traced value read back to the host."""

    def on_trace(key: str, views: Sequence[rt.HalBufferView]) -> None:
        arrays = [_to_host(v, hal) for v in views]
        handler = _HANDLERS.get(key)
        if handler is None:
            print(f"{key}: {', '.join(map(_text, arrays))}", file=sys.stdout)
            return
        try:
            handler(arrays)
        except BaseException as error:  # (raised again as it is by the call that ran it)
            _RAISED.error = error
            raise

    return rt.HalModuleDebugSink(on_trace)


@dataclass(frozen=True)
class HostFunction:
    """A function a compiled module calls: NumPy arrays in, NumPy arrays out (as many as
    ``results``, each converted to the dtype the module declared for it)."""

    call: Callable[[list[np.ndarray]], Sequence[np.ndarray]]
    arity: int
    results: tuple[np.dtype, ...]


_FUNCTIONS: dict[str, HostFunction] = {}


def register_function(name: str, function: HostFunction) -> None:
    """Export `function` as ``transpiler_host.NAME`` to modules loaded from now on."""
    _FUNCTIONS[name] = function


def host_module(hal: rt.HalDevice) -> Optional[rt.VmModule]:
    """The ``transpiler_host`` module of the functions registered so far, its buffers on
    `hal`; None when there are none."""
    if not _FUNCTIONS:
        return None
    interface = rt.PyModuleInterface(HOST_MODULE, lambda _interface: hal)
    for name, function in _FUNCTIONS.items():
        cconv = "0" + ("r" * function.arity or "v") + "_" + ("r" * len(function.results)
                                                           or "v")
        interface.export(name, cconv, _exported(name))
    return interface.create()


def _exported(name: str) -> Callable[..., Any]:
    def call(hal: rt.HalDevice, *refs: Any) -> Any:
        function = _FUNCTIONS[name]
        arrays = [_to_host(ref.deref(rt.HalBufferView), hal) for ref in refs]
        try:
            results = list(function.call(arrays))
        except Exception as error:  # raised again, as it is, by the module's caller
            _RAISED.error = error
            raise
        if len(results) != len(function.results):
            raise ValueError(f"host function {name} returned {len(results)} arrays, its "
                             f"module expects {len(function.results)}")
        views = [host_to_buffer_view(hal, np.asarray(r, dtype))
                 for r, dtype in zip(results, function.results)]
        if len(views) == 1:
            return views[0].ref
        return tuple(v.ref for v in views) or None

    return call


@atexit.register
def _release_functions() -> None:
    """Drop the registered functions and handlers before the bindings shut down. A loaded
    module's context refers, through IREE's C++ objects the garbage collector cannot see,
    to the exported functions and the debug sink; through a registered function's globals
    the module may be reachable from them again, a cycle only this breaks."""
    _FUNCTIONS.clear()
    _HANDLERS.clear()
    gc.collect()


_RAISED = threading.local()


def raised_in_host_function() -> Optional[BaseException]:
    """The exception a host function or a traced-value handler raised during the last
    failed call on this thread (IREE reports it as a RuntimeError with its text), once;
    None if none did."""
    error = getattr(_RAISED, "error", None)
    _RAISED.error = None
    return error


def _to_host(view: rt.HalBufferView, hal: rt.HalDevice) -> np.ndarray:
    return buffer_view_to_host(view, hal, dtype_for_element_type(view.element_type),
                               tuple(view.shape))


def _text(array: Any) -> str:
    return np.array2string(np.asarray(array))
