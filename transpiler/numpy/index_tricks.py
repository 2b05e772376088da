"""Building index arrays and grids: meshgrid, indices, ix_, the grid and concatenation
helpers (mgrid, ogrid, r_, c_, s_, index_exp), the index sets of diagonals and triangles
(diag_indices, tril_indices, triu_indices, mask_indices), and conversions between flat
and multi-dimensional indices (unravel_index, ravel_multi_index).

Shapes and sizes are static; the index arrays of triangles and masks are computed once,
concretely, as in JAX. Grids from slices follow NumPy: an imaginary step ``5j`` is a
number of points (endpoint included), a real step is `arange`'s.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, Optional, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import arange, array, asarray, linspace, ones
from transpiler.numpy.indexing_functions import nonzero
from transpiler.numpy.joining import concatenate, stack
from transpiler.numpy.math import clip, floor_divide, remainder, where
from transpiler.numpy.shape import broadcast_to, expand_dims, reshape, transpose
from transpiler.primitives import conversions as conv
from transpiler.primitives import core
from transpiler.primitives.core import abstractify

__all__ = ["c_", "diag_indices", "diag_indices_from", "index_exp", "indices", "ix_",
           "mask_indices", "meshgrid", "mgrid", "ogrid", "r_", "ravel_multi_index", "s_",
           "tril_indices", "tril_indices_from", "triu_indices", "triu_indices_from",
           "unravel_index"]

s_ = np.s_
index_exp = np.index_exp


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False,
             indexing: str = "xy") -> list:
    """Coordinate arrays from 1-d vectors (``indexing="xy"``: the first two axes swapped,
    NumPy's Cartesian default; ``sparse``: each keeps length 1 on the other axes)."""
    args = [asarray(x) for x in xi]
    if not copy:
        raise ValueError("jax.numpy.meshgrid only supports copy=True")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    if builtins.any(a.ndim != 1 for a in args):
        raise ValueError("Arguments to jax.numpy.meshgrid must be 1D, got shapes "
                         f"{[a.shape for a in args]}")
    if indexing == "xy" and len(args) >= 2:
        args[0], args[1] = args[1], args[0]
    sizes = [a.shape[0] for a in args]
    output = []
    for i, a in enumerate(args):
        alone = [1] * len(args)
        alone[i] = sizes[i]
        a = reshape(a, tuple(alone))
        output.append(a if sparse else broadcast_to(a, tuple(sizes)))
    if indexing == "xy" and len(args) >= 2:
        output[0], output[1] = output[1], output[0]
    return output


def indices(dimensions: Sequence[int], dtype: Any = None, sparse: bool = False) -> Any:
    """The index of each position of a grid of shape `dimensions`, stacked (or, with
    `sparse`, a tuple of broadcastable vectors)."""
    dims = tuple(builtins.int(d) for d in dimensions)
    dtype = dtypes.default_int() if dtype is None else dtypes.canonicalize(dtype)
    output = []
    for i, n in enumerate(dims):
        alone = [1] * len(dims)
        alone[i] = n
        idx = reshape(arange(n, dtype=dtype), tuple(alone))
        output.append(idx if sparse else broadcast_to(idx, dims))
    if sparse:
        return tuple(output)
    return stack(output, 0) if output else asarray(np.zeros((0,), dtype))


def ix_(*args: Any) -> tuple:
    """Open-mesh index arrays from 1-d sequences (a boolean one stands for its nonzero
    positions): the i-th has shape 1 everywhere but axis i."""
    out = []
    for i, a in enumerate(args):
        a = asarray(a)
        if a.ndim != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                             f"{a.shape}")
        if a.dtype == dtypes.bool_:
            raise located(NotImplementedError, "Boolean arguments to jax.numpy.ix_ are not "
                          "implemented; pass jnp.nonzero(mask)[0] instead")
        shape = [1] * len(args)
        shape[i] = a.shape[0]
        out.append(reshape(a, tuple(shape)))
    return tuple(out)


def _grid_axis(s: builtins.slice, fn: str) -> Any:
    """The 1-d grid of one slice of `mgrid`, `ogrid` or `r_`."""
    for part in (s.start, s.stop, s.step):
        if isinstance(part, core.Tracer):
            raise core.shape_error(f"{fn}: slice bounds must be static, got a traced value")
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if s.stop is None:
        raise ValueError(f"{fn}: a slice needs a stop value")
    if isinstance(step, builtins.complex) or np.iscomplexobj(step):
        return linspace(start, s.stop, builtins.int(builtins.abs(step)))
    return arange(start, s.stop, step)


class _Grid:
    """``mgrid`` (dense) and ``ogrid`` (open): ``grid[0:2, 0:3]``."""

    def __init__(self, sparse: bool, name: str) -> None:
        self.sparse, self.name = sparse, name

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, builtins.slice):
            return _grid_axis(key, self.name)
        axes = [_grid_axis(k, self.name) for k in key]
        if not axes:
            return [] if self.sparse else asarray(np.zeros((0,), dtypes.default_int()))
        dtype = dtypes.promote(*[(abstractify(a).dtype, False) for a in axes])[0]
        axes = [conv.convert_element_type(a, dtype=dtype) for a in axes]
        grids = meshgrid(*axes, indexing="ij", sparse=self.sparse)
        return grids if self.sparse else stack(grids, 0)

    def __repr__(self) -> str:
        return f"jnp.{self.name}"


mgrid = _Grid(sparse=False, name="mgrid")
ogrid = _Grid(sparse=True, name="ogrid")


class _AxisConcat:
    """``r_`` and ``c_``: concatenation with slices as grids and NumPy's string
    directives (``"r"``, ``"c"``, ``"axis,ndmin,trans1d"``)."""

    def __init__(self, axis: int, ndmin: int, trans1d: int, name: str) -> None:
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        params = [self.axis, self.ndmin, self.trans1d, -1]
        directive = items[0] if items else None
        if isinstance(directive, str):
            items = items[1:]
            if directive == "r":
                params[-1] = 0
            elif directive == "c":
                params[-1] = 1
            else:
                vec: list = directive.split(",")
                vec = vec + params[len(vec):] if len(vec) < 4 else vec[:3] + [params[-1]]
                try:
                    params = [builtins.int(v) for v in vec]
                except ValueError:
                    raise ValueError(f"could not understand directive {directive!r}") from None
        axis, ndmin, trans1d, matrix = params
        output = []
        for item in items:
            if isinstance(item, builtins.slice):
                obj, item_ndim = _grid_axis(item, self.name), 0
            elif isinstance(item, str):
                raise ValueError("string directive must be placed at the beginning")
            else:
                obj = asarray(item)
                item_ndim = obj.ndim
            obj = array(obj, ndmin=ndmin)
            if trans1d != -1 and ndmin - item_ndim > 0:
                order = tuple(range(ndmin))
                shifts = ndmin - builtins.abs(ndmin + trans1d + 1) % ndmin
                obj = transpose(obj, order[shifts:] + order[:shifts])
            output.append(obj)
        out = concatenate(output, axis=axis)
        if matrix != -1 and out.ndim == 1:
            out = expand_dims(out, matrix)
        return out

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"jnp.{self.name}"


r_ = _AxisConcat(axis=0, ndmin=1, trans1d=-1, name="r_")
c_ = _AxisConcat(axis=-1, ndmin=2, trans1d=0, name="c_")


# --- index sets of diagonals and triangles -----------------------------------------------

def _index_tuple(found: tuple) -> tuple:
    return tuple(asarray(np.asarray(i, dtype=dtypes.default_int())) for i in found)


def diag_indices(n: int, ndim: int = 2) -> tuple:
    """The indices of the main diagonal of an ``(n,) * ndim`` array."""
    n, ndim = builtins.int(n), builtins.int(ndim)
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    return (arange(n),) * ndim


def diag_indices_from(arr: Any) -> tuple:
    """`diag_indices` of a square array."""
    shape = tuple(abstractify(arr, 0, "diag_indices_from").shape)
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(shape[0], len(shape))


def tril_indices(n: int, k: int = 0, m: Optional[int] = None) -> tuple:
    """Row and column indices of the lower triangle (diagonal `k` and below) of an
    ``(n, m)`` matrix."""
    return _index_tuple(np.tril_indices(builtins.int(n), builtins.int(k),
                                        None if m is None else builtins.int(m)))


def triu_indices(n: int, k: int = 0, m: Optional[int] = None) -> tuple:
    """Row and column indices of the upper triangle (diagonal `k` and above)."""
    return _index_tuple(np.triu_indices(builtins.int(n), builtins.int(k),
                                        None if m is None else builtins.int(m)))


def _matrix_shape(arr: Any, fn: str) -> tuple[int, int]:
    shape = tuple(abstractify(arr, 0, fn).shape) if not hasattr(arr, "shape") else \
        tuple(arr.shape)
    if len(shape) != 2:
        raise ValueError(f"{fn} requires a 2-dimensional input, got shape {shape}")
    return shape[0], shape[1]


def tril_indices_from(arr: Any, k: int = 0) -> tuple:
    n, m = _matrix_shape(arr, "tril_indices_from")
    return tril_indices(n, k, m)


def triu_indices_from(arr: Any, k: int = 0) -> tuple:
    n, m = _matrix_shape(arr, "triu_indices_from")
    return triu_indices(n, k, m)


def mask_indices(n: int, mask_func: Callable[[Any, int], Any], k: int = 0, *,
                 size: Optional[int] = None) -> tuple:
    """The indices where ``mask_func(ones((n, n)), k)`` is nonzero (e.g. ``jnp.triu``)."""
    mask = mask_func(ones((builtins.int(n), builtins.int(n)), dtype=dtypes.bool_), k)
    return nonzero(mask, size=size)


# --- flat and multi-dimensional indices --------------------------------------------------

def _shape_ints(shape: Any, fn: str) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, (builtins.int, np.integer)) else tuple(shape)
    if builtins.any(isinstance(d, core.Tracer) for d in dims):
        raise core.shape_error(f"{fn}: the shape must be static")
    dims = tuple(builtins.int(d) for d in dims)
    if builtins.any(d < 0 for d in dims):
        raise ValueError(f"{fn}: shape dimensions must be non-negative, got {dims}")
    return dims


def unravel_index(indices: Any, shape: Any) -> tuple:
    """The multi-index of flat `indices` in an array of `shape` (negative ones count from
    the end; out-of-range ones are clipped, as in JAX)."""
    dims = _shape_ints(shape, "unravel_index")
    idx = asarray(indices)
    if not dtypes.is_int(idx.dtype):
        raise TypeError(f"unravel_index: indices must be integers, got {idx.dtype}")
    total = builtins.int(np.prod(dims, dtype=np.int64))
    idx = where(idx < 0, idx + total, idx)
    idx = clip(idx, 0, builtins.max(total - 1, 0))
    out = []
    for d in reversed(dims):
        out.append(remainder(idx, d) if d > 0 else idx)
        idx = floor_divide(idx, d) if d > 0 else idx
    return tuple(reversed(out))


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise",
                      order: str = "C", *, dtype: Any = None) -> Any:
    """The flat index of a multi-index in an array of shape `dims`. ``mode="raise"``
    needs concrete indices; ``"wrap"`` and ``"clip"`` also work on traced ones."""
    dims = _shape_ints(dims, "ravel_multi_index")
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: length of multi_index ({len(multi_index)}) must "
                         f"match length of dims ({len(dims)})")
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', or 'clip'")
    parts = [asarray(i) for i in multi_index]
    for p in parts:
        if not dtypes.is_int(p.dtype):
            raise TypeError(f"only int indices permitted, got {p.dtype}")
    if mode == "raise":
        for p, d in zip(parts, dims):
            if isinstance(p, core.Tracer):
                raise core.shape_error("ravel_multi_index: mode='raise' needs concrete "
                                       "indices", "pass mode='wrap' or mode='clip' under jit")
            if np.any((np.asarray(p) < 0) | (np.asarray(p) >= d)):
                raise ValueError("invalid entry in coordinates array")
    elif mode == "wrap":
        parts = [remainder(p, d) for p, d in zip(parts, dims)]
    else:
        parts = [clip(p, 0, d - 1) for p, d in zip(parts, dims)]
    strides = np.cumprod((1,) + dims[::-1][:-1])[::-1] if order == "C" else \
        np.cumprod((1,) + dims[:-1])
    target = dtypes.default_int() if dtype is None else dtypes.canonicalize(dtype)
    out = asarray(0, dtype=target)
    for p, s in zip(parts, strides):
        out = out + conv.convert_element_type(p, dtype=target) * builtins.int(s)
    return out
