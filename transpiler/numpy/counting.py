"""Counting with NumPy's signatures and JAX's results: unique (and the array API's
unique_values / unique_counts / unique_inverse / unique_all), bincount, histogram,
histogram_bin_edges.

Sizes that depend on the data need concrete values: eagerly they are read; under ``jit``
(or any transform) ``unique`` needs a static ``size=`` -- the first `size` sorted unique
values, padded with `fill_value` (default: the smallest) -- and ``bincount`` a static
``length=``, as in JAX.
"""

from __future__ import annotations

import builtins
from typing import Any, NamedTuple, Optional

import numpy as np

from transpiler import dtypes
from transpiler.errors import TracerError, located
from transpiler.numpy.creation import asarray, linspace
from transpiler.numpy.indexing import getitem
from transpiler.numpy.indexing_functions import nonzero
from transpiler.numpy.index_update import update
from transpiler.numpy.reductions import any as any_
from transpiler.numpy.reductions import cumsum, max, min, sum
from transpiler.numpy.sorting import searchsorted
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import shape as sp
from transpiler.primitives import sorting as sort_p
from transpiler.primitives.core import Tracer, abstractify, dtype_error, normalize_axis, \
    shape_error

__all__ = ["bincount", "histogram", "histogram_bin_edges", "unique", "unique_all",
           "unique_counts", "unique_inverse", "unique_values"]

UNIQUE_SIZE_HINT = ("pass a static size= (the number of unique values to return; missing "
                    "ones are fill_value), as JAX requires under jit")


def _int(values: Any) -> Any:
    return conv.convert_element_type(np.asarray(values, np.int32), dtype=dtypes.default_int())


def _sorted_mask(arr: Any, axis: int, equal_nan: bool) -> tuple[Any, Any, Any]:
    """(the slices along `axis` sorted, moved first; the mask of first occurrences; the
    permutation that sorted them)."""
    shape = abstractify(arr).shape
    n = shape[axis]
    aux = sp.transpose(arr, permutation=(axis, *[d for d in range(len(shape)) if d != axis]))
    rest = int(np.prod(shape, dtype=np.int64)) // n if n else 0
    rows = sp.reshape(aux, new_sizes=(n, rest))
    columns = [getitem(rows, (builtins.slice(None), j)) for j in range(rest)]
    perm = sort_p.sort_permutation(*columns, dimension=0, descending=False,
                                   index_dtype=dtypes.int32) if columns else _int(np.arange(n))
    aux = getitem(aux, perm)
    if n == 0:
        return aux, _int(np.zeros(0)) != 0, perm
    later, earlier = getitem(aux, builtins.slice(1, None)), getitem(aux, builtins.slice(None, -1))
    differ = ew.not_equal(later, earlier)
    if equal_nan and dtypes.is_float(abstractify(arr).dtype):
        both_nan = ew.logical_and(ew.isnan(later), ew.isnan(earlier))
        differ = ew.logical_and(differ, ew.logical_not(both_nan))
    if abstractify(aux).ndim > 1:
        differ = any_(differ, axis=tuple(range(1, abstractify(aux).ndim)))
    first = conv.convert_element_type(np.ones(1, bool), dtype=dtypes.bool_)
    return aux, sp.concatenate(first, differ, axis=0), perm


def _unique(arr: Any, axis: int, return_index: bool, return_inverse: bool,
            return_counts: bool, equal_nan: bool, size: Optional[int],
            fill_value: Any) -> tuple:
    n = abstractify(arr).shape[axis]
    if n == 0 and size and fill_value is None:
        raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, "
                         "fill_value must be specified")
    aux, mask, perm = _sorted_mask(arr, axis, equal_nan)
    if size is None:
        if isinstance(mask, Tracer):
            raise located(TracerError, "jnp.unique: the number of unique "
                          "values depends on the data, which is unknown under jit",
                          UNIQUE_SIZE_HINT)
        ind = _int(np.flatnonzero(np.asarray(mask)))
    else:
        ind = nonzero(mask, size=size)[0]
    result = getitem(aux, ind) if n else aux
    if size is not None and fill_value is not None:
        fill = conv.convert_element_type(asarray(fill_value), dtype=abstractify(result).dtype)
        if n:
            count = sum(mask, dtype=dtypes.int32)
            valid = ew.less(_int(np.arange(size)), count)
            valid = sp.reshape(valid, new_sizes=(size,) + (1,) * (abstractify(result).ndim - 1))
            result = conv.select(sp.broadcast_to(valid, shape=abstractify(result).shape),
                                 result, sp.broadcast_to(fill, shape=abstractify(result).shape))
        else:
            result = sp.broadcast_to(fill, shape=(size, *abstractify(result).shape[1:]))
    ndim = abstractify(result).ndim
    back = [*range(1, axis + 1), 0, *range(axis + 1, ndim)]
    out: tuple = (sp.transpose(result, permutation=tuple(back)),)
    if return_index:
        out += (getitem(perm, ind) if n else perm,)
    if return_inverse:
        if n:
            rank = ew.subtract(cumsum(mask, dtype=dtypes.default_int()), 1)
            out += (update(_int(np.zeros(n)), perm, rank, "set"),)
        else:
            out += (_int(np.zeros(0)),)
    if return_counts:
        if size is None:
            starts = np.flatnonzero(np.asarray(mask)) if n else np.zeros(0, np.int64)
            out += (_int(np.diff(np.append(starts, n))),)
        else:
            idx = nonzero(mask, size=size + 1)[0]
            tail = getitem(idx, builtins.slice(1, None))
            tail = conv.select(ew.not_equal(tail, 0), tail, _int(np.full(size, n)))
            ends = sp.concatenate(getitem(idx, builtins.slice(None, 1)), tail, axis=0)
            out += (ew.subtract(getitem(ends, builtins.slice(1, None)),
                                getitem(ends, builtins.slice(None, -1))),)
    return out


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: Optional[int] = None, *, equal_nan: bool = True,
           size: Optional[int] = None, fill_value: Any = None, sorted: bool = True) -> Any:
    """``jnp.unique``: the sorted unique values (slices along `axis`), with the indices of
    their first occurrences, the inverse (positions of every input element among them)
    and their counts when asked. Under jit: give a static `size`."""
    if size is not None and (not isinstance(size, (int, np.integer)) or size < 0):
        raise TypeError(f"jnp.unique: size must be a static non-negative int, got {size!r}")
    arr = asarray(ar)
    shape = abstractify(arr, 0, "unique").shape
    if axis is None:
        arr = sp.reshape(arr, new_sizes=(int(np.prod(shape, dtype=np.int64)),))
        axis_int = 0
    else:
        axis_int = normalize_axis(axis, len(shape), "unique")
    result = _unique(arr, axis_int, return_index, return_inverse, return_counts, equal_nan,
                     None if size is None else int(size), fill_value)
    if return_inverse and axis is None:
        at = 2 if return_index else 1
        result = (*result[:at], sp.reshape(result[at], new_sizes=shape), *result[at + 1:])
    return result[0] if len(result) == 1 else result


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def unique_values(x: Any, /, *, size: Optional[int] = None, fill_value: Any = None) -> Any:
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


def unique_counts(x: Any, /, *, size: Optional[int] = None,
                  fill_value: Any = None) -> UniqueCountsResult:
    return UniqueCountsResult(*unique(x, return_counts=True, equal_nan=False, size=size,
                                      fill_value=fill_value))


def unique_inverse(x: Any, /, *, size: Optional[int] = None,
                   fill_value: Any = None) -> UniqueInverseResult:
    return UniqueInverseResult(*unique(x, return_inverse=True, equal_nan=False, size=size,
                                       fill_value=fill_value))


def unique_all(x: Any, /, *, size: Optional[int] = None,
               fill_value: Any = None) -> UniqueAllResult:
    return UniqueAllResult(*unique(x, return_index=True, return_inverse=True,
                                   return_counts=True, equal_nan=False, size=size,
                                   fill_value=fill_value))


# --- bincount, histogram --------------------------------------------------------------------

def bincount(x: Any, weights: Any = None, minlength: int = 0, *,
             length: Optional[int] = None) -> Any:
    """``jnp.bincount``: how often each value ``0 .. length - 1`` occurs in the 1-d integer
    `x` (summing `weights` instead when given); negative values count as 0 and values
    past `length` are dropped (JAX's rule). `length` defaults to ``max(x) + 1`` (at
    least `minlength`), which needs concrete `x`; under jit pass a static ``length=``."""
    x = asarray(x)
    aval = abstractify(x, 0, "bincount")
    if aval.dtype == dtypes.bool_:
        x = conv.convert_element_type(x, dtype=dtypes.int32)
    elif not dtypes.is_int(aval.dtype):
        raise dtype_error(f"x argument to bincount must have an integer type; got {aval.dtype}")
    if aval.ndim != 1:
        raise shape_error(f"bincount: only 1-dimensional input supported, got shape "
                          f"{list(aval.shape)}")
    if not isinstance(minlength, (int, np.integer)) or minlength < 0:
        raise ValueError(f"minlength must be a non-negative static int, got {minlength!r}")
    if length is None:
        if isinstance(x, Tracer):
            raise located(TracerError, "bincount: the number of bins depends "
                          "on max(x), which is unknown under jit",
                          "pass a static length= (the number of bins)")
        data = np.asarray(x)
        length = builtins.max(int(minlength), int(data.max()) + 1 if data.size else 0)
    length = int(length)
    if weights is None:
        weights = conv.convert_element_type(np.ones(aval.shape, np.int32),
                                            dtype=dtypes.default_int())
    else:
        weights = asarray(weights)
        if abstractify(weights).shape != aval.shape:
            raise shape_error(f"bincount: weights of shape "
                              f"{list(abstractify(weights).shape)} must match x's "
                              f"{list(aval.shape)}")
    zeros = conv.convert_element_type(np.zeros(length, abstractify(weights).dtype),
                                      dtype=abstractify(weights).dtype)
    x = ew.maximum(x, conv.convert_element_type(np.asarray(0), dtype=abstractify(x).dtype))
    return update(zeros, x, weights, "add", where="drop")


def _inexact(dtype: np.dtype) -> np.dtype:
    return dtype if dtypes.is_float(dtype) or dtype.kind == "c" else dtypes.default_float()


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Any:
    """``jnp.histogram_bin_edges``: `bins` + 1 evenly spaced edges over `range` (default:
    the data's min to max, widened by 0.5 either side when they are equal), or `bins`
    itself when it is an array of edges."""
    if isinstance(bins, str):
        raise located(NotImplementedError, "string values for `bins` not implemented.",
                      "pass the number of bins, or their edges as an array")
    a = asarray(a)
    dtype = _inexact(abstractify(a).dtype)
    if np.ndim(bins) == 1 or (hasattr(bins, "ndim") and bins.ndim == 1):
        return conv.convert_element_type(asarray(bins), dtype=dtype)
    a = conv.convert_element_type(a, dtype=dtype)
    if range is None:
        low, high = min(a), max(a)
    else:
        low = conv.convert_element_type(asarray(range[0]), dtype=dtype)
        high = conv.convert_element_type(asarray(range[1]), dtype=dtype)
    half = conv.convert_element_type(np.asarray(0.5, dtype), dtype=dtype)
    same = ew.equal(low, high)
    low = conv.select(same, ew.subtract(low, half), low)
    high = conv.select(same, ew.add(high, half), high)
    return linspace(low, high, int(bins) + 1, dtype=dtype)


def histogram(a: Any, bins: Any = 10, range: Any = None, weights: Any = None,
              density: Optional[bool] = None) -> tuple[Any, Any]:
    """``jnp.histogram``: (counts, edges) of `a` (flattened) in `bins` bins; the last bin
    includes its right edge; values outside the edges are not counted. With `density`,
    counts are normalized so that they integrate to 1 over the range."""
    a = asarray(a)
    dtype = _inexact(abstractify(a).dtype)
    if weights is None:
        weights = conv.convert_element_type(np.ones(abstractify(a).shape, dtype), dtype=dtype)
    else:
        weights = asarray(weights)
        if abstractify(weights).shape != abstractify(a).shape:
            raise shape_error("histogram: weights should have the same shape as a.")
        dtype = _inexact(dtypes.promote((dtype, False),
                                        (abstractify(weights).dtype, False))[0])
        weights = conv.convert_element_type(weights, dtype=dtype)
    a = conv.convert_element_type(a, dtype=dtype)
    edges = conv.convert_element_type(histogram_bin_edges(a, bins, range, weights), dtype=dtype)
    count = abstractify(edges).shape[0]
    a = sp.reshape(a, new_sizes=(abstractify(a).size,))
    weights = sp.reshape(weights, new_sizes=(abstractify(weights).size,))
    index = searchsorted(edges, a, side="right")
    index = conv.select(ew.equal(a, getitem(edges, -1)), np.int32(count - 1), index)
    zeros = conv.convert_element_type(np.zeros(count, dtype), dtype=dtype)
    counts = getitem(update(zeros, index, weights, "add", where="drop"),
                     builtins.slice(1, None))
    if density:
        widths = ew.subtract(getitem(edges, builtins.slice(1, None)),
                             getitem(edges, builtins.slice(None, -1)))
        counts = ew.true_divide(ew.true_divide(counts, widths), sum(counts))
    return counts, edges
