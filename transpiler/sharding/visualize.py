"""``jax.debug.visualize_array_sharding`` / ``visualize_sharding`` /
``inspect_array_sharding``: which device holds which block of an array, drawn as a grid
of boxes (rows and columns of a 1-D or 2-D array), each labelled with its devices."""

from __future__ import annotations

import builtins
from typing import Any, Callable, Sequence

import runtime
from transpiler.errors import located
from transpiler.lowering.tracer import Tracer
from transpiler.sharding.specs import Sharding, SingleDeviceSharding


def visualize_sharding(shape: Sequence[int], sharding: Sharding, *, use_color: bool = False,
                       scale: float = 1.0, min_width: int = 9, max_width: int = 80,
                       color_map: Any = None) -> None:
    """Print the blocks of an array of `shape` under `sharding` and their devices."""
    shape = tuple(shape)
    if len(shape) not in (1, 2):
        raise located(ValueError, f"visualize_sharding: an array of {len(shape)} dimensions "
                      f"(shape {shape}); only 1-D and 2-D arrays are drawn")
    pieces = sharding.devices_indices_map(shape)
    dims = shape if len(shape) == 2 else (1, shape[0])

    def bounds(s: slice, n: int) -> tuple[int, int]:
        return s.indices(n)[:2]

    cells: dict[tuple, list] = {}
    for device, index in pieces.items():
        rows = bounds(index[0], dims[0]) if len(shape) == 2 else (0, 1)
        cols = bounds(index[-1], dims[1])
        cells.setdefault((rows, cols), []).append(device)
    row_keys = sorted({r for r, _ in cells})
    col_keys = sorted({c for _, c in cells})
    width = max(min_width, min(max_width // max(len(col_keys), 1), 24))
    label = {key: f"{_kind(devs[0])} {','.join(str(d.index) for d in devs)}"
             for key, devs in cells.items()}
    lines = ["┌" + "┬".join("─" * width for _ in col_keys) + "┐"]
    for i, r in enumerate(row_keys):
        lines.append("│" + "│".join(label.get((r, c), "").center(width) for c in col_keys)
                     + "│")
        closing = ("├", "┼", "┤") if i < len(row_keys) - 1 else ("└", "┴", "┘")
        lines.append(closing[0] + closing[1].join("─" * width for _ in col_keys) + closing[2])
    builtins.print("\n".join(lines))


def visualize_array_sharding(arr: Any, **kwargs: Any) -> None:
    """``visualize_sharding`` of an array's own shape and sharding."""
    visualize_sharding(arr.shape, _sharding_of(arr), **kwargs)


def inspect_array_sharding(value: Any, *, callback: Callable[[Sharding], None]) -> None:
    """`callback` called with the value's sharding (under jit, where the program runs on
    one device, that device's)."""
    callback(_sharding_of(value))


def _sharding_of(value: Any) -> Sharding:
    if isinstance(value, Tracer):
        return SingleDeviceSharding(runtime.default_device())
    sharding = getattr(value, "sharding", None)
    if not isinstance(sharding, Sharding):
        return SingleDeviceSharding(runtime.default_device())
    return sharding


def _kind(device: Any) -> str:
    return "CPU" if device.platform == "cpu" else device.kind.upper()
