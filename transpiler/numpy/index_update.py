"""``x.at[index]``: JAX's functional updates (``set``, ``add``, ``multiply``, ``min``,
``max``, ``divide``, ``power``, ``apply``, ``get``) as one ``scatter`` each; updates at
out-of-range positions are dropped, as in JAX."""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import asarray
from transpiler.numpy.indexing import (Entry, _advanced_layout, _as_advanced,
                                       _broadcast_index_shapes, _stack_last, getitem,
                                       parse_index, wrap_negative)
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import indexing as ip
from transpiler.primitives import shape as sp
from transpiler.primitives.core import abstractify


# --- x.at[index]: functional updates ---------------------------------------------------------
def _scatter_indices(shape: tuple[int, ...], entries: list[Entry],
                     clip: bool) -> tuple[Any, tuple[int, ...]]:
    """Coordinates (out_shape..., ndim) of every element of ``x[index]``, unclamped."""
    entries = _as_advanced(entries)  # also right without an index array: no dims to place
    arrays = [e for e in entries if e.kind == "array"]
    batch = _broadcast_index_shapes([abstractify(e.value).shape for e in arrays])
    tokens: list[Any] = _advanced_layout(entries) if arrays else \
        [e.axis if e.kind == "slice" else "new" for e in entries]
    by_axis = {e.axis: e for e in entries if e.kind in ("slice", "array")}
    out_shape: list[int] = []
    place: dict[Any, int] = {}  # token -> its first output axis
    for t in tokens:
        place[t] = len(out_shape)
        out_shape += batch if t == "B" else [1] if t == "new" else [by_axis[t].value[2]]
    out = tuple(out_shape)
    coords = []
    for axis in range(len(shape)):
        e = by_axis[axis]
        if e.kind == "slice":
            start, step, length = e.value
            line = conv.iota(dtype=dtypes.int32, shape=(length,), dimension=0) * step + start
            view = [1] * len(out)
            view[place[axis]] = length
            coord = sp.reshape(line, new_sizes=tuple(view))
        else:
            value = wrap_negative(e.value, shape[axis])
            value = sp.broadcast_to(value, shape=batch)
            lead = place["B"]
            coord = sp.reshape(value, new_sizes=(1,) * lead + batch + (1,) * (
                len(out) - lead - len(batch)))
            if clip:
                coord = ew.minimum(ew.maximum(coord, 0), shape[axis] - 1)
        coords.append(coord)
    return _stack_last(coords, out), out


class _IndexUpdateRef:
    """``x.at[index]``: ``set``, ``add``, ``multiply``, ``min``, ``max``, ``get`` ... ."""

    def __init__(self, array: Any, index: Any) -> None:
        self.array, self.index = array, index

    def _scatter(self, values: Any, mode: str, where: Optional[str] = None) -> Any:
        return update(self.array, self.index, values, mode, where)

    def get(self, *, mode: Optional[str] = None, **_: Any) -> Any:
        """``x[index]`` (out-of-range array indices are clamped)."""
        if mode not in (None, "clip", "promise_in_bounds"):
            raise located(NotImplementedError, f".at[].get(mode={mode!r}) is not supported",
                          "leave mode unset (indices are clamped), or pass 'promise_in_bounds'")
        return getitem(self.array, self.index)

    def set(self, values: Any, *, mode: Optional[str] = None, **_: Any) -> Any:
        """A copy with ``x[index] = values``; duplicate indices: one of them wins."""
        return self._scatter(values, "set", mode)

    def add(self, values: Any, *, mode: Optional[str] = None, **_: Any) -> Any:
        """``x[index] += values``; duplicate indices accumulate."""
        return self._scatter(values, "add", mode)

    def multiply(self, values: Any, *, mode: Optional[str] = None, **_: Any) -> Any:
        return self._scatter(values, "multiply", mode)

    mul = multiply

    def min(self, values: Any, *, mode: Optional[str] = None, **_: Any) -> Any:
        return self._scatter(values, "min", mode)

    def max(self, values: Any, *, mode: Optional[str] = None, **_: Any) -> Any:
        return self._scatter(values, "max", mode)

    def divide(self, values: Any, *, mode: Optional[str] = None, **_: Any) -> Any:
        """``x / ones.at[index].multiply(values)`` (JAX's definition; ints become floats)."""
        ones = _IndexUpdateRef(_ones_like(self.array), self.index)
        return ew.true_divide(self.array, ones.multiply(values, mode=mode))

    def power(self, values: Any, *, mode: Optional[str] = None, **_: Any) -> Any:
        ones = _IndexUpdateRef(_ones_like(self.array), self.index)
        return ew.power(self.array, ones.multiply(values, mode=mode))

    def apply(self, func: Any, *, mode: Optional[str] = None, **_: Any) -> Any:
        """``x[index] = func(x[index])`` for an elementwise `func`."""
        return self.set(func(self.get()), mode=mode)


def _ones_like(x: Any) -> Any:
    aval = abstractify(x)
    return sp.broadcast_to(np.ones((), aval.dtype), shape=aval.shape)


def update(array: Any, index: Any, values: Any, mode: str, where: Optional[str] = None) -> Any:
    """``array.at[index].<mode>(values)`` (mode: set, add, multiply, min, max; `where`: the
    out-of-bounds mode)."""
    if where not in (None, "drop", "fill", "promise_in_bounds", "clip"):
        raise ValueError(f".at[]: unsupported mode {where!r}")
    aval = abstractify(array, 0, "at")
    updates = conv.convert_element_type(asarray(values), dtype=aval.dtype)
    if aval.ndim == 0:  # no axis to scatter along: combine elementwise
        parse_index(aval.shape, index)
        return _combine_whole(array, updates, mode)
    if _whole_mask(index, aval.shape) and abstractify(updates).shape == ():
        # x.at[mask].set(v), a mask as large as x: elementwise, so a traced mask works
        # under jit as well (the update's shape does not depend on the mask's values)
        return conv.select(index, _combine_whole(array, updates, mode), array)
    indices, out_shape = _scatter_indices(aval.shape, parse_index(aval.shape, index),
                                          clip=where == "clip")
    updates = sp.broadcast_to(updates, shape=out_shape)
    return ip.scatter(array, indices, updates, mode=mode)


def _whole_mask(index: Any, shape: tuple[int, ...]) -> bool:
    """Whether `index` is a boolean array of exactly `shape`."""
    if isinstance(index, (bool, np.bool_, tuple, list, slice)) or index is None:
        return False
    try:
        aval = abstractify(index)
    except Exception:
        return False
    return aval.dtype == dtypes.bool_ and aval.shape == tuple(shape)


def _combine_whole(x: Any, updates: Any, mode: str) -> Any:
    aval = abstractify(x)
    updates = sp.broadcast_to(updates, shape=aval.shape)
    if aval.dtype == dtypes.bool_ and mode in ("add", "multiply"):
        mode = "max" if mode == "add" else "min"
    ops: dict[str, Callable[[Any, Any], Any]] = {
        "set": lambda a, b: b, "add": ew.add, "multiply": ew.multiply,
        "min": ew.minimum, "max": ew.maximum}
    return conv.convert_element_type(ops[mode](x, updates), dtype=aval.dtype)


class _IndexUpdateHelper:
    def __init__(self, array: Any) -> None:
        self.array = array

    def __getitem__(self, index: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)


def index_update_ref(x: Any) -> _IndexUpdateHelper:
    """What ``x.at`` returns: ``x.at[index].set(v)`` and friends."""
    return _IndexUpdateHelper(x)
