"""Host callbacks from a running module: IREE's ``flow.tensor.trace "key" = [values]`` op
hands the values to the HAL module's debug sink while the module runs, in program order.
The compiler stages ``jax.debug.print`` and ``jax.debug.callback`` under ``jit`` as such
ops and registers, at trace time, what to do with each key's values (``register``); a
module built elsewhere (``transpiler build``) whose keys nobody registered prints its
values under their key instead."""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

import numpy as np
import iree.runtime as rt

from .array import SUPPORTED_DTYPES, buffer_view_to_host, element_type_for

__all__ = ["register", "debug_sink"]

_HANDLERS: dict[str, Callable[[list[np.ndarray]], None]] = {}
_DTYPES = {int(element_type_for(d)): np.dtype(d) for d in SUPPORTED_DTYPES}
# Signless integers (how the compiler traces i8...i64) read as signed.
_DTYPES.update({int(getattr(rt.HalElementType, f"INT_{bits}")): np.dtype(f"int{bits}")
                for bits in (8, 16, 32, 64)})


def register(key: str, handler: Callable[[list[np.ndarray]], None]) -> None:
    """Run ``handler(arrays)`` when a module traces the values of `key`."""
    _HANDLERS[key] = handler


def debug_sink(hal: rt.HalDevice) -> rt.HalModuleDebugSink:
    """The sink of the HAL module of `hal`: each traced value read back to the host."""

    def on_trace(key: str, views: Sequence[rt.HalBufferView]) -> None:
        arrays = [buffer_view_to_host(v, hal, _dtype(v), tuple(v.shape)) for v in views]
        handler = _HANDLERS.get(key)
        if handler is None:
            print(f"{key}: {', '.join(map(_text, arrays))}", file=sys.stdout)
            return
        handler(arrays)

    return rt.HalModuleDebugSink(on_trace)


def _dtype(view: rt.HalBufferView) -> np.dtype:
    code = int(view.element_type)
    found = _DTYPES.get(code)
    if found is None:
        raise TypeError(f"a traced value of HAL element type {code:#x}, which has no NumPy "
                        "dtype here")
    return found


def _text(array: Any) -> str:
    return np.array2string(np.asarray(array))
