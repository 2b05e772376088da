"""``lax.gather`` and the ``lax.scatter`` family with XLA's dimension numbers
(``GatherDimensionNumbers``, ``ScatterDimensionNumbers``: offset/window, collapsed/inserted,
start-index maps and batching dimensions) and ``GatherScatterMode``, over the indexing
primitives' one form (primitives/indexing.py: NumPy indexing of leading axes).

Each window is written out as the operand positions it covers: per indexed operand axis,
the window's (clamped) start plus an iota over the window, stacked into one integer index
array of shape ``batch + window + (axes,)`` (operand axes at the end that the windows take
whole are left out of it). One gather (or scatter) of that array then does the work, so
derivatives and batching are the primitives' own. Out-of-bounds windows follow `mode`:
``"clip"`` and ``"promise_in_bounds"`` clamp the start into bounds (``gather``'s default),
``"fill"``/``"drop"`` (``scatter``'s default) fill a gathered window with `fill_value`
(NaN, the lowest signed or highest unsigned integer, True by default, as in JAX) or
drop a scattered one. ``"one_hot"`` is not supported here.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple, Sequence

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.errors import located
from transpiler.lax.shape_ops import concatenate, expand_dims
from transpiler.numpy.creation import asarray
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import indexing as idx_p
from transpiler.primitives import shape as sp
from transpiler.primitives.core import Tracer, abstractify, dtype_error, shape_error

__all__ = ["GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode", "gather",
           "scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
           "scatter_max", "index_take"]


class GatherDimensionNumbers(NamedTuple):
    """``lax.GatherDimensionNumbers``: which result axes are window (offset) axes, which
    operand axes the windows drop (size 1), which operand axis each index component
    starts, and the operand/indices axes that are batch axes of both."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """``lax.ScatterDimensionNumbers``: which update axes are window axes, which operand
    axes the windows lack (size 1), which operand axis each index component starts, and
    the operand/indices axes that are batch axes of both."""

    update_window_dims: Sequence[int]
    inserted_window_dims: Sequence[int]
    scatter_dims_to_operand_dims: Sequence[int]
    operand_batching_dims: Sequence[int] = ()
    scatter_indices_batching_dims: Sequence[int] = ()


class GatherScatterMode(enum.Enum):
    """``lax.GatherScatterMode``: what an out-of-bounds index does."""

    CLIP = 1
    FILL_OR_DROP = 2
    PROMISE_IN_BOUNDS = 3
    ONE_HOT = 4

    @staticmethod
    def from_any(s: Any) -> "GatherScatterMode":
        """A mode from a mode, a name (``"clip"``, ``"fill"``, ``"drop"``,
        ``"promise_in_bounds"``, ``"one_hot"``) or None (``FILL_OR_DROP``)."""
        if isinstance(s, GatherScatterMode):
            return s
        names = {None: GatherScatterMode.FILL_OR_DROP, "clip": GatherScatterMode.CLIP,
                 "fill": GatherScatterMode.FILL_OR_DROP, "drop": GatherScatterMode.FILL_OR_DROP,
                 "promise_in_bounds": GatherScatterMode.PROMISE_IN_BOUNDS,
                 "one_hot": GatherScatterMode.ONE_HOT}
        if s not in names:
            raise located(ValueError, f"Unknown gather mode {s!r}",
                          "use 'clip', 'fill', 'drop' or 'promise_in_bounds'")
        return names[s]


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _default_fill(dtype: np.dtype) -> Any:
    if dtypes.is_inexact(dtype):
        return np.array(np.nan, dtype)
    if dtype == dtypes.bool_:
        return np.array(True)
    info = np.iinfo(dtype)
    return np.array(info.min if dtype.kind == "i" else info.max, dtype)


class _Windows:
    """The operand positions that the windows of one gather or scatter cover."""

    def __init__(self, op: str, operand_shape: tuple[int, ...], indices: Any,
                 window: tuple[int, ...], start_map: tuple[int, ...],
                 operand_batching: tuple[int, ...], indices_batching: tuple[int, ...]) -> None:
        self.op = op
        aval = abstractify(indices, 1, op)
        if not dtypes.is_int(aval.dtype):
            raise dtype_error(f"lax.{op}: indices must be integers, got {aval.dtype}",
                              "convert them with .astype(jnp.int32)")
        if aval.ndim == 0 or aval.shape[-1] != len(start_map):
            raise shape_error(f"lax.{op}: indices of shape {list(aval.shape)} must end in an "
                              f"axis of size {len(start_map)} (one start per entry of the "
                              f"start index map {start_map})")
        rank = len(operand_shape)
        for name, dims in (("start index map", start_map), ("operand batching dims",
                                                              operand_batching)):
            if len(set(dims)) != len(dims) or any(not 0 <= d < rank for d in dims):
                raise shape_error(f"lax.{op}: {name} {dims} must be distinct axes of the "
                                  f"operand (rank {rank})")
        if set(start_map) & set(operand_batching):
            raise shape_error(f"lax.{op}: the start index map {start_map} and the operand "
                              f"batching dims {operand_batching} must not share an axis")
        self.batch = tuple(aval.shape[:-1])
        if len(indices_batching) != len(operand_batching) or any(
                not 0 <= d < len(self.batch) for d in indices_batching):
            raise shape_error(f"lax.{op}: indices batching dims {indices_batching} must be "
                              f"{len(operand_batching)} axes of the indices' batch shape "
                              f"{list(self.batch)}")
        for od, bd in zip(operand_batching, indices_batching):
            if operand_shape[od] != self.batch[bd]:
                raise shape_error(f"lax.{op}: operand batching axis {od} (size "
                                  f"{operand_shape[od]}) and indices batching axis {bd} "
                                  f"(size {self.batch[bd]}) differ")
        for d, (n, w) in enumerate(zip(operand_shape, window)):
            if not 0 <= w <= n:
                raise shape_error(f"lax.{op}: the window size {w} of operand axis {d} must "
                                  f"be between 0 and its size {n}")
        self.shape, self.window = operand_shape, window
        self.start_map, self.operand_batching = start_map, operand_batching
        self.indices_batching = indices_batching
        self.dtype = aval.dtype
        self.indices = indices
        # operand axes at the end, taken whole and not indexed, stay out of the index array
        indexed = set(start_map) | set(operand_batching)
        k = rank
        while k > 0 and k - 1 not in indexed and window[k - 1] == operand_shape[k - 1]:
            k -= 1
        self.k = k

    def starts(self, clamp: bool) -> list:
        """Per indexed operand axis, the windows' start (shape `batch`), clamped into
        bounds when `clamp`."""
        starts = []
        for d in range(self.k):
            if d in self.start_map:
                i = self.start_map.index(d)
                s = sp.reshape(sp.slice_(self.indices, start_indices=(0,) * len(self.batch) + (i,),
                                         limit_indices=self.batch + (i + 1,), strides=None),
                               new_sizes=self.batch)
                if clamp:
                    upper = np.array(self.shape[d] - self.window[d], self.dtype)
                    s = ew.minimum(ew.maximum(s, np.array(0, self.dtype)), upper)
            elif d in self.operand_batching:
                axis = self.indices_batching[self.operand_batching.index(d)]
                s = conv.iota(dtype=self.dtype, shape=self.batch, dimension=axis)
            else:
                s = np.zeros(self.batch, self.dtype)
            starts.append(s)
        return starts

    def in_bounds(self) -> Any:
        """Whether each window (shape `batch`) lies inside the operand."""
        ok = None
        for d in self.start_map:
            i = self.start_map.index(d)
            s = sp.reshape(sp.slice_(self.indices, start_indices=(0,) * len(self.batch) + (i,),
                                     limit_indices=self.batch + (i + 1,), strides=None),
                           new_sizes=self.batch)
            upper = np.array(self.shape[d] - self.window[d], self.dtype)
            inside = ew.logical_and(ew.greater_equal(s, np.array(0, self.dtype)),
                                    ew.less_equal(s, upper))
            ok = inside if ok is None else ew.logical_and(ok, inside)
        return ok

    def positions(self, starts: list) -> Any:
        """The index array: shape ``batch + window[:k] + (k,)``."""
        nb, window = len(self.batch), self.window[:self.k]
        full = self.batch + window
        columns = []
        for d, s in enumerate(starts):
            start = sp.broadcast_to(sp.reshape(asarray(s, self.dtype),
                                               new_sizes=self.batch + (1,) * self.k),
                                    shape=full)
            offset = conv.iota(dtype=self.dtype, shape=full, dimension=nb + d)
            columns.append(sp.reshape(ew.add(start, offset), new_sizes=full + (1,)))
        return concatenate(columns, len(full)) if len(columns) > 1 else columns[0]


def gather(operand: Any, start_indices: Any, dimension_numbers: GatherDimensionNumbers,
           slice_sizes: Sequence[int], *, unique_indices: bool = False,
           indices_are_sorted: bool = False, mode: Any = None, fill_value: Any = None) -> Any:
    """``lax.gather``: XLA's gather. `start_indices` has the index vector on its last
    axis; `mode` None clamps out-of-bounds starts (the values JAX gives on CPU; JAX's
    derivative then drops such a window, ours is that of the clamped window), ``"fill"``
    gives `fill_value` for a window that does not fit."""
    x = operand if isinstance(operand, Tracer) or hasattr(operand, "aval") else asarray(operand)
    indices = asarray(start_indices)
    aval = abstractify(x, 0, "gather")
    dn = dimension_numbers
    offset_dims, collapsed = _ints(dn.offset_dims), _ints(dn.collapsed_slice_dims)
    start_map, operand_batching = _ints(dn.start_index_map), _ints(dn.operand_batching_dims)
    indices_batching = _ints(dn.start_indices_batching_dims)
    sizes = _ints(slice_sizes)
    chosen = GatherScatterMode.CLIP if mode is None else GatherScatterMode.from_any(mode)
    if chosen == GatherScatterMode.ONE_HOT:
        raise located(NotImplementedError, "lax.gather: mode='one_hot' is not supported; use "
                      "'clip' or 'fill'")
    if len(sizes) != aval.ndim:
        raise shape_error(f"lax.gather: slice_sizes {sizes} must have one entry per axis of "
                          f"the operand of shape {list(aval.shape)}")
    for d in collapsed + operand_batching:
        if not 0 <= d < aval.ndim or sizes[d] != 1:
            raise shape_error(f"lax.gather: collapsed and operand batching axis {d} must be "
                              f"an operand axis whose slice size is 1, got slice_sizes {sizes}")
    window_axes = [d for d in range(aval.ndim) if d not in collapsed and d not in operand_batching]
    if len(offset_dims) != len(window_axes) or list(offset_dims) != sorted(set(offset_dims)):
        raise shape_error(f"lax.gather: offset_dims {offset_dims} must be {len(window_axes)} "
                          f"sorted result axes, one per operand axis that is neither collapsed "
                          f"{collapsed} nor a batching axis {operand_batching}")
    windows = _Windows("gather", aval.shape, indices, sizes, start_map, operand_batching,
                       indices_batching)
    out_rank = len(windows.batch) + len(offset_dims)
    if any(not 0 <= d < out_rank for d in offset_dims):
        raise shape_error(f"lax.gather: offset_dims {offset_dims} must be axes of the result "
                          f"(rank {out_rank})")

    if windows.k == 0:  # every window is the whole operand
        picked = sp.broadcast_to(x, shape=windows.batch + aval.shape)
    else:
        positions = windows.positions(windows.starts(clamp=True))
        picked = idx_p.gather(x, positions)  # batch + window[:k] + shape[k:]
    kept = windows.batch + tuple(sizes[d] for d in window_axes)
    picked = sp.reshape(picked, new_sizes=kept)
    perm, ok_shape = _gather_layout(out_rank, offset_dims, windows.batch)
    out = sp.transpose(picked, permutation=perm)
    if chosen != GatherScatterMode.FILL_OR_DROP or not start_map:
        return out
    fill = _default_fill(aval.dtype) if fill_value is None else \
        np.array(fill_value).astype(aval.dtype)
    ok = windows.in_bounds()
    return jnp.where(sp.reshape(ok, new_sizes=ok_shape), out, fill)


def _gather_layout(out_rank: int, offset_dims: tuple[int, ...],
                   batch: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Where the axes of ``batch + window`` go in the result (the batch axes fill the
    positions that are not offset dims, in order), and the shape that puts a per-window
    value of shape `batch` on the result's batch positions."""
    batch_positions = [p for p in range(out_rank) if p not in offset_dims]
    source = {p: j for j, p in enumerate(batch_positions)}
    source.update({p: len(batch) + j for j, p in enumerate(offset_dims)})
    sizes = {p: batch[j] for j, p in enumerate(batch_positions)}
    return (tuple(source[p] for p in range(out_rank)),
            tuple(sizes.get(p, 1) for p in range(out_rank)))


def _scatter(kind: str, operand: Any, scatter_indices: Any, updates: Any,
             dimension_numbers: ScatterDimensionNumbers, mode: Any) -> Any:
    x = operand if isinstance(operand, Tracer) or hasattr(operand, "aval") else asarray(operand)
    indices = asarray(scatter_indices)
    u = updates if isinstance(updates, Tracer) or hasattr(updates, "aval") else asarray(updates)
    aval = abstractify(x, 0, f"scatter_{kind}")
    u_aval = abstractify(u, 2, f"scatter_{kind}")
    op = "scatter" if kind == "set" else f"scatter_{kind}"
    if u_aval.dtype != aval.dtype:
        if not u_aval.weak_type:
            raise dtype_error(f"lax.{op}: updates of dtype {u_aval.dtype} differ from the "
                              f"operand's {aval.dtype}", "convert them with .astype")
        u = conv.convert_element_type(u, dtype=aval.dtype)
    dn = dimension_numbers
    window_dims, inserted = _ints(dn.update_window_dims), _ints(dn.inserted_window_dims)
    start_map, operand_batching = _ints(dn.scatter_dims_to_operand_dims), \
        _ints(dn.operand_batching_dims)
    indices_batching = _ints(dn.scatter_indices_batching_dims)
    chosen = GatherScatterMode.from_any(mode)
    if chosen == GatherScatterMode.ONE_HOT:
        raise located(NotImplementedError, f"lax.{op}: mode='one_hot' is not supported; use "
                      "'clip' or 'drop'")
    window_axes = [d for d in range(aval.ndim) if d not in inserted and d not in operand_batching]
    if len(window_dims) != len(window_axes) or list(window_dims) != sorted(set(window_dims)) \
            or any(not 0 <= d < u_aval.ndim for d in window_dims):
        raise shape_error(f"lax.{op}: update_window_dims {window_dims} must be "
                          f"{len(window_axes)} sorted axes of the updates (shape "
                          f"{list(u_aval.shape)}), one per operand axis that is neither "
                          f"inserted {inserted} nor a batching axis {operand_batching}")
    for d in inserted:
        if not 0 <= d < aval.ndim:
            raise shape_error(f"lax.{op}: inserted_window_dims {inserted} must be operand axes")
    sizes = [1] * aval.ndim
    for d, w in zip(window_axes, window_dims):
        sizes[d] = u_aval.shape[w]
    windows = _Windows(op, aval.shape, indices, tuple(sizes), start_map, operand_batching,
                       indices_batching)
    update_batch = tuple(n for p, n in enumerate(u_aval.shape) if p not in window_dims)
    if update_batch != windows.batch:
        raise shape_error(f"lax.{op}: updates of shape {list(u_aval.shape)} do not match the "
                          f"indices' batch shape {list(windows.batch)} (update axes that are "
                          f"not window axes {window_dims})")
    # updates as batch + window (size-1 axes where the windows lack operand axes)
    batch_positions = [p for p in range(u_aval.ndim) if p not in window_dims]
    u = sp.transpose(u, permutation=tuple(batch_positions) + tuple(window_dims))
    u = sp.reshape(u, new_sizes=windows.batch + tuple(sizes))
    if windows.k == 0:
        raise located(NotImplementedError, f"lax.{op}: a scatter whose windows cover the whole "
                      "operand is not supported", "index at least one operand axis "
                      "(scatter_dims_to_operand_dims), or combine the update with the operand "
                      "directly")
    starts = windows.starts(clamp=chosen != GatherScatterMode.FILL_OR_DROP)
    if chosen == GatherScatterMode.FILL_OR_DROP and start_map:
        ok = windows.in_bounds()  # a window that does not fit is dropped whole
        starts = [jnp.where(ok, s, np.array(-1, windows.dtype)) if d in start_map else s
                  for d, s in enumerate(starts)]
    return idx_p.scatter(x, windows.positions(starts), u, mode=kind)


def scatter(operand: Any, scatter_indices: Any, updates: Any,
            dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: Any = None) -> Any:
    """``lax.scatter``: `updates` written into `operand`'s windows (with duplicate
    windows, which write lands is unspecified under ``jit``, as in XLA). `mode` None drops
    windows that do not fit; ``"clip"`` clamps them into bounds."""
    return _scatter("set", operand, scatter_indices, updates, dimension_numbers, mode)


def scatter_add(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: Any = None) -> Any:
    """``lax.scatter_add``: `updates` added into `operand`'s windows."""
    return _scatter("add", operand, scatter_indices, updates, dimension_numbers, mode)


def scatter_sub(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: Any = None) -> Any:
    """``lax.scatter_sub``: `updates` subtracted from `operand`'s windows."""
    return _scatter("add", operand, scatter_indices, ew.negative(updates), dimension_numbers,
                    mode)


def scatter_mul(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: Any = None) -> Any:
    """``lax.scatter_mul``: `operand`'s windows multiplied by `updates`."""
    return _scatter("multiply", operand, scatter_indices, updates, dimension_numbers, mode)


def scatter_min(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: Any = None) -> Any:
    """``lax.scatter_min``: the minimum of `operand`'s windows and `updates`."""
    return _scatter("min", operand, scatter_indices, updates, dimension_numbers, mode)


def scatter_max(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: Any = None) -> Any:
    """``lax.scatter_max``: the maximum of `operand`'s windows and `updates`."""
    return _scatter("max", operand, scatter_indices, updates, dimension_numbers, mode)


def index_take(src: Any, idxs: Sequence[Any], axes: Sequence[int]) -> Any:
    """``lax.index_take``: ``src`` indexed on `axes` by the 1-d index arrays `idxs` (taken
    modulo the axes' sizes); the indexed axes become one leading axis."""
    x = src if isinstance(src, Tracer) or hasattr(src, "aval") else asarray(src)
    shape = abstractify(x, 0, "index_take").shape
    axes = _ints(axes)
    if len(idxs) != len(axes):
        raise shape_error(f"lax.index_take: {len(idxs)} index arrays for {len(axes)} axes")
    columns = [expand_dims(asarray(i), (1,)) for i in idxs]
    indices = concatenate(columns, 1) if len(columns) > 1 else columns[0]
    dtype = abstractify(indices).dtype
    indices = ew.remainder(indices, np.array([shape[a] for a in axes], dtype))
    sizes = [1 if d in axes else n for d, n in enumerate(shape)]
    dn = GatherDimensionNumbers(offset_dims=tuple(range(1, len(shape) - len(axes) + 1)),
                                collapsed_slice_dims=tuple(sorted(axes)),
                                start_index_map=axes)
    return gather(x, indices, dn, sizes)
