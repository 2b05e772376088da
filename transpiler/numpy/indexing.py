"""Indexing: ``x[...]``, ``x.at[...]`` updates, take, take_along_axis, nonzero, diagonal.

``x[index]`` follows NumPy's rules (basic slicing, ``None``, ``...``, integer and boolean
arrays, where the advanced-index dimensions go) with JAX's semantics for values that are
only known at run time:

- a static Python int out of range is an ``IndexError`` (like NumPy; JAX would clamp);
- integer *arrays* and traced scalars wrap negative indices once and are then clamped
  into range on reads; ``.at[...]`` updates at out-of-range positions are dropped;
- boolean masks must be concrete (the result shape depends on them); a traced mask is a
  shape error naming ``jnp.where`` as the fix.

Basic indexing lowers to ``slice``/``rev``/``dynamic_slice``/``reshape``; advanced indexing
to one ``gather`` (the indexed axes are transposed to the front), updates to one ``scatter``.
"""

from __future__ import annotations

import builtins
import operator
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.errors import TranspileError, located
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import indexing as ip
from transpiler.primitives import shape as sp
from transpiler.primitives.core import Tracer, abstractify, shape_error

__all__ = ["getitem", "index_update_ref", "take", "take_along_axis", "nonzero", "argwhere",
           "flatnonzero", "IndexingError"]


class IndexingError(TranspileError, IndexError):
    """An invalid index (too many indices, a static int out of range ...), at the user's line."""


# --- parsing an index into one entry per output/operand axis ---------------------------------
@dataclass(frozen=True)
class Entry:
    """One parsed index item.

    kind ``"slice"``: value (start, step, length); ``"int"``: a static in-range int;
    ``"scalar"``: a 0-d integer array (concrete or traced); ``"array"``: an integer array
    (NumPy int32 when concrete, else a Tracer); ``"new"``: ``None``. `axis` is the operand
    axis the entry consumes (-1 for ``"new"``)."""

    kind: str
    value: Any
    axis: int


def _is_arraylike(item: Any) -> bool:
    return isinstance(item, (np.ndarray, Tracer, list, tuple)) or hasattr(item, "aval") \
        or hasattr(item, "block_until_ready")


def _classify(item: Any) -> tuple[str, Any, int]:
    """(kind, value, number of operand axes consumed) of one raw index item."""
    if item is None:
        return "new", None, 0
    if item is Ellipsis:
        return "ellipsis", None, 0
    if isinstance(item, builtins.slice):
        return "slice", item, 1
    if isinstance(item, (builtins.bool, np.bool_)):
        raise located(IndexingError, "boolean scalar indices are not supported",
                      "index with a boolean array (a mask) instead")
    if isinstance(item, (builtins.int, np.integer)):
        return "int", builtins.int(item), 1
    if not _is_arraylike(item):
        raise located(IndexingError, f"only integers, slices (`:`), ellipsis (`...`), None "
                      f"and integer or boolean arrays are valid indices, got "
                      f"{type(item).__name__}")
    value: Any
    if isinstance(item, Tracer):
        if item.aval.dtype == dtypes.bool_:
            raise shape_error(
                f"boolean mask indexing with a traced mask of shape {list(item.aval.shape)} inside "
                "jit: the result's shape would depend on the mask's values",
                "use jnp.where(mask, x, 0) to keep the shape, x.at[mask].set(...) with a "
                "concrete mask, or jnp.nonzero(mask, size=N) for a fixed number of indices")
        value = item
    else:
        value = np.asarray(item)
        if value.dtype == np.bool_:
            return "mask", value, builtins.max(value.ndim, 1)
        if value.size == 0 and value.dtype.kind == "f":
            value = value.astype(np.int32)  # x[[]] indexes nothing
    dtype = abstractify(value).dtype
    if not dtypes.is_int(dtype):
        raise located(IndexingError, f"arrays used as indices must be of integer (or boolean) "
                      f"type, got {dtype}")
    return ("scalar" if abstractify(value).ndim == 0 else "array"), value, 1


def parse_index(shape: tuple[int, ...], index: Any) -> list[Entry]:
    """Parse `index` for an array of `shape`: ellipsis expanded, masks turned into integer
    arrays, trailing axes filled with ``:``; static ints checked against the bounds."""
    items = index if isinstance(index, tuple) else (index,)
    classified = [_classify(item) for item in items]
    kinds = [c[0] for c in classified]
    if kinds.count("ellipsis") > 1:
        raise located(IndexingError, "an index can only have a single ellipsis ('...')")
    used = builtins.sum(c[2] for c in classified)
    if used > len(shape):
        raise located(IndexingError, f"too many indices for array: array is "
                      f"{len(shape)}-dimensional, but {used} were indexed")
    fill = [("slice", builtins.slice(None), 1)] * (len(shape) - used)
    if "ellipsis" in kinds:
        at = kinds.index("ellipsis")
        classified = classified[:at] + fill + classified[at + 1:]
    else:
        classified = classified + fill
    entries: list[Entry] = []
    axis = 0
    for kind, value, width in classified:
        if kind == "new":
            entries.append(Entry("new", None, -1))
        elif kind == "slice":
            start, stop, step = _static_slice(value).indices(shape[axis])
            entries.append(Entry("slice", (start, step, len(range(start, stop, step))), axis))
        elif kind == "int":
            n = shape[axis]
            if not -n <= value < n:
                raise located(IndexingError, f"index {value} is out of bounds for axis "
                              f"{axis} with size {n}")
            entries.append(Entry("int", value % n, axis))
        elif kind == "mask":
            entries += _mask_entries(value, shape, axis)
        else:
            entries.append(Entry(kind, value, axis))
        axis += width
    return entries


def _static_slice(item: builtins.slice) -> builtins.slice:
    parts = []
    for part in (item.start, item.stop, item.step):
        if isinstance(part, Tracer):
            raise located(IndexingError, "slice bounds must be static Python ints inside jit, "
                          f"got a traced value ({part.aval})", "use lax.dynamic_slice(x, "
                          "starts, sizes) for a window of static size at a traced position")
        parts.append(None if part is None else operator.index(part))
    if parts[2] == 0:
        raise located(IndexingError, "slice step cannot be zero")
    return builtins.slice(*parts)


def _mask_entries(mask: np.ndarray, shape: tuple[int, ...], axis: int) -> list[Entry]:
    if mask.ndim == 0:
        raise located(IndexingError, "0-d boolean masks are not supported",
                      "use jnp.where(mask, x, ...) instead")
    if mask.shape != shape[axis:axis + mask.ndim]:
        raise located(IndexingError, f"boolean index of shape {list(mask.shape)} does not "
                      f"match the indexed axes {list(shape[axis:axis + mask.ndim])}")
    return [Entry("array", coords.astype(np.int32), axis + i)
            for i, coords in enumerate(np.nonzero(mask))]


def wrap_negative(value: Any, n: int) -> Any:
    """Integer index array -> int32 with negative entries wrapped once (``i + n``)."""
    if not isinstance(value, Tracer):
        value = np.asarray(value)
        return np.where(value < 0, value + n, value).astype(np.int32)
    value = conv.convert_element_type(value, dtype=dtypes.int32)
    return conv.select(ew.less(value, 0), ew.add(value, n), value)



# --- x[index] --------------------------------------------------------------------------------
def getitem(x: Any, index: Any) -> Any:
    """``x[index]`` with NumPy's indexing rules and JAX's out-of-bounds semantics."""
    shape = abstractify(x, 0, "getitem").shape
    entries = parse_index(shape, index)
    if any(e.kind == "array" for e in entries):
        return _advanced_getitem(x, shape, entries)
    return _basic_getitem(x, shape, entries)


def _static_window(x: Any, shape: tuple[int, ...], entries: list[Entry]) -> Any:
    """Apply the static slices and ints of `entries` (other axes stay whole)."""
    starts, limits, strides, flips = [0] * len(shape), list(shape), [1] * len(shape), []
    for e in entries:
        if e.kind == "slice":
            start, step, length = e.value
            if length == 0:
                starts[e.axis] = limits[e.axis] = 0
            elif step > 0:
                starts[e.axis], limits[e.axis] = start, start + (length - 1) * step + 1
            else:  # reverse the axis first, then slice forwards (in the reversed axis)
                begin = shape[e.axis] - 1 - start
                starts[e.axis], limits[e.axis] = begin, begin + (length - 1) * -step + 1
                flips.append(e.axis)
            strides[e.axis] = builtins.abs(step)
        elif e.kind == "int":
            starts[e.axis], limits[e.axis] = e.value, e.value + 1
    # rev before slice: IREE's CPU backend miscompiles reverse after a strided slice.
    if flips:
        x = sp.rev(x, dimensions=tuple(flips))
    if (starts, limits, strides) != ([0] * len(shape), list(shape), [1] * len(shape)):
        x = sp.slice_(x, start_indices=tuple(starts), limit_indices=tuple(limits),
                      strides=tuple(strides))
    return x


def _basic_getitem(x: Any, shape: tuple[int, ...], entries: list[Entry]) -> Any:
    x = _static_window(x, shape, entries)
    window = abstractify(x).shape
    dynamic = [e for e in entries if e.kind == "scalar"]
    if dynamic:
        starts: list[Any] = [0] * len(shape)
        sizes = list(window)
        for e in dynamic:
            starts[e.axis], sizes[e.axis] = wrap_negative(e.value, shape[e.axis]), 1
        x = ip.dynamic_slice(x, *starts, slice_sizes=tuple(sizes))
    out_shape = []
    for e in entries:
        if e.kind == "slice":
            out_shape.append(window[e.axis])
        elif e.kind == "new":
            out_shape.append(1)
    if tuple(out_shape) != abstractify(x).shape:
        x = sp.reshape(x, new_sizes=tuple(out_shape))
    return x


def _stack_last(arrays: Sequence[Any], shape: tuple[int, ...]) -> Any:
    """Broadcast integer index arrays to `shape` and stack them on a new last axis."""
    columns = [sp.reshape(sp.broadcast_to(a, shape=shape), new_sizes=shape + (1,))
               for a in arrays]
    return columns[0] if len(columns) == 1 else sp.concatenate(*columns, axis=len(shape))


def _advanced_layout(entries: list[Entry]) -> list[Any]:
    """Output tokens per NumPy: "B" (the broadcast index dims), an operand axis, or "new".
    "B" sits where the index arrays are if they are adjacent, else in front."""
    positions = [i for i, e in enumerate(entries) if e.kind == "array"]
    adjacent = positions == list(range(positions[0], positions[-1] + 1))
    tokens: list[Any] = [] if adjacent else ["B"]
    for i, e in enumerate(entries):
        if e.kind == "array" and adjacent and i == positions[0]:
            tokens.append("B")
        elif e.kind in ("slice", "new"):
            tokens.append(e.axis if e.kind == "slice" else "new")
    return tokens


def _as_advanced(entries: list[Entry]) -> list[Entry]:
    """With an index array present, NumPy treats ints as 0-d index arrays (this moves the
    advanced dims to the front in ``x[0, :, [1, 2]]``)."""
    return [replace(e, kind="array") if e.kind in ("int", "scalar") else e for e in entries]


def _advanced_getitem(x: Any, shape: tuple[int, ...], entries: list[Entry]) -> Any:
    entries = _as_advanced(entries)
    x = _static_window(x, shape, entries)
    window = abstractify(x).shape
    arrays = [e for e in entries if e.kind == "array"]
    batch = _broadcast_index_shapes([abstractify(e.value).shape for e in arrays])
    indexed = [e.axis for e in arrays]
    rest = [a for a in range(len(shape)) if a not in indexed]
    x = sp.transpose(x, permutation=tuple(indexed + rest))
    indices = _stack_last([wrap_negative(e.value, shape[e.axis]) for e in arrays], batch)
    out = ip.gather(x, indices)
    # out has dims: batch..., then `rest` axes in order; arrange them as NumPy would.
    tokens = _advanced_layout(entries)
    perm: list[int] = []
    final: list[int] = []
    for t in tokens:
        if t == "B":
            perm += list(range(len(batch)))
            final += list(batch)
        elif t == "new":
            final.append(1)
        else:
            perm.append(len(batch) + rest.index(t))
            final.append(window[t])
    out = sp.transpose(out, permutation=tuple(perm))
    if tuple(final) != abstractify(out).shape:
        out = sp.reshape(out, new_sizes=tuple(final))
    return out


def _broadcast_index_shapes(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        shown = " ".join(str(list(s)) for s in shapes)
        raise located(IndexingError, "shape mismatch: indexing arrays could not be broadcast "
                      f"together with shapes {shown}") from None


from transpiler.numpy.index_update import index_update_ref  # noqa: E402
from transpiler.numpy.indexing_functions import (argwhere, flatnonzero,  # noqa: E402
                                              nonzero, take, take_along_axis)
