"""Set operations on 1-d arrays with JAX's signatures: isin, union1d, intersect1d,
setdiff1d and setxor1d, and sort_complex.

Results are sorted unique values. Their length depends on the values, so without
``size=`` the inputs must be concrete; with it, everything runs under ``jit``: the first
`size` results, then `fill_value` (JAX's default: the smallest result). The sized forms
work on unique values padded to a static length, with a mask of the real ones.
"""

from __future__ import annotations

import operator
from typing import Any, Optional

from transpiler import dtypes
from transpiler.numpy.counting import unique
from transpiler.numpy.creation import arange, asarray, astype, full, full_like, ones, zeros
from transpiler.numpy.elementwise_functions import _promote
from transpiler.numpy.complex_numbers import imag, real
from transpiler.numpy.indexing_functions import nonzero, take, take_along_axis
from transpiler.numpy.joining import concatenate
from transpiler.numpy.math import equal, logical_and, logical_not, where
from transpiler.numpy.reductions import any as any_
from transpiler.numpy.reductions import argmax, max, min, sum
from transpiler.numpy.shape import _slice_axis, ravel, reshape
from transpiler.numpy.sorting import argsort, lexsort, sort
from transpiler.primitives import core

__all__ = ["intersect1d", "isin", "setdiff1d", "setxor1d", "sort_complex", "union1d"]

_METHODS = ("auto", "compare_all", "binary_search", "sort")


def _in1d(ar1: Any, ar2: Any, invert: bool) -> Any:
    """Whether each element of the flattened `ar1` is in `ar2` (every pair compared)."""
    arr1, arr2 = _promote(ravel(asarray(ar1)), ravel(asarray(ar2)))
    n1, n2 = arr1.shape[0], arr2.shape[0]
    if n1 == 0 or n2 == 0:
        return (ones if invert else zeros)((n1,), dtype=dtypes.bool_)
    pairs = equal(reshape(arr1, (n1, 1)), reshape(arr2, (1, n2)))
    return logical_not(any_(pairs, axis=-1)) if invert else any_(pairs, axis=-1)


def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
         *, method: str = "auto") -> Any:
    """Elementwise, whether `element` occurs in `test_elements` (``invert``: does not)."""
    if method not in _METHODS:
        raise ValueError(f"method={method!r} is not implemented; options are 'compare_all', "
                         "'binary_search', 'sort', and 'auto'")
    element = asarray(element)
    return reshape(_in1d(element, test_elements, invert), element.shape)


def _static_size(size: Any, fn: str) -> int:
    if isinstance(size, core.Tracer):
        raise core.shape_error(f"{fn}: size must be static")
    return operator.index(size)


def _need_concrete(fn: str, *arrays: Any) -> None:
    if any(isinstance(a, core.Tracer) for a in arrays):
        raise core.shape_error(f"{fn}: traced inputs need a static size= argument",
                               "the number of results depends on the values")


def _unique_masked(a: Any, assume_unique: bool) -> tuple[Any, Any, Any]:
    """`a`'s unique values sorted and padded to `a`'s length, the index of each one's first
    occurrence, and which of them are real (not padding)."""
    n = a.shape[0]
    if assume_unique:
        order = argsort(a)
        return take(a, order), order, ones((n,), dtype=dtypes.bool_)
    values, first = unique(a, return_index=True, size=n)
    repeats_of_first = sum(equal(values, _slice_axis(values, 0, 0, 1)))
    return values, first, arange(n) < n + 1 - repeats_of_first


def _fill_results(vals: Any, count: Any, fill_value: Any) -> Any:
    """`vals` past the first `count` replaced by `fill_value` (None: JAX's default)."""
    valid = arange(vals.shape[0]) < count
    if fill_value is None:
        vals = where(valid, vals, max(vals))
        return where(valid, vals, min(vals))
    return where(valid, vals, asarray(fill_value, dtype=vals.dtype))


def _pick(values: Any, mask: Any, size: Optional[int], fill_value: Any, fn: str) -> Any:
    """The `values` where `mask` is set, in order: all of them (concrete), or the first
    `size` padded with `fill_value`."""
    count = sum(mask)
    if size is None:
        return values[mask]
    positions = nonzero(mask, size=size, fill_value=values.shape[0])[0]
    vals = take(values, positions, mode="fill", fill_value=0)
    return _fill_results(vals, count, fill_value)


def union1d(ar1: Any, ar2: Any, *, size: Optional[int] = None, fill_value: Any = None) -> Any:
    """The sorted unique values of both arrays."""
    if size is None:
        _need_concrete("union1d", ar1, ar2)
    else:
        size = _static_size(size, "union1d")
    return unique(concatenate((asarray(ar1), asarray(ar2)), axis=None), size=size,
                  fill_value=fill_value)


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: Optional[int] = None,
              fill_value: Any = None) -> Any:
    """The sorted unique values of `ar1` that are not in `ar2`."""
    arr1, arr2 = ravel(asarray(ar1)), ravel(asarray(ar2))
    if size is None:
        _need_concrete("setdiff1d", arr1)
    else:
        size = _static_size(size, "setdiff1d")
    fill = full_like(arr1, 0 if fill_value is None else fill_value, shape=())
    if arr1.shape[0] == 0:
        return full_like(arr1, fill, shape=(size or 0,))
    if not assume_unique:
        arr1 = unique(arr1, size=size and arr1.shape[0])
    mask = _in1d(arr1, arr2, invert=True)
    if size is None:
        return arr1[mask]
    if not assume_unique:  # the padding of `unique` is not a result
        n_unique = arr1.shape[0] + 1 - sum(equal(arr1, _slice_axis(arr1, 0, 0, 1)))
        mask = where(arange(arr1.shape[0]) < n_unique, mask, False)
    positions = nonzero(mask, size=size)[0]
    return where(arange(size) < sum(mask), take(arr1, positions), fill)


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False,
                *, size: Optional[int] = None, fill_value: Any = None) -> Any:
    """The sorted unique values in both arrays (with ``return_indices``, also where each
    first occurs in `ar1` and in `ar2`; padding indices are out of range)."""
    arr1, arr2 = _promote(ravel(asarray(ar1)), ravel(asarray(ar2)))
    if size is None:
        _need_concrete("intersect1d", arr1, arr2)
    else:
        size = _static_size(size, "intersect1d")
    n1, n2 = arr1.shape[0], arr2.shape[0]
    values, first1, real = _unique_masked(arr1, assume_unique)
    mask = logical_and(real, _in1d(values, arr2, invert=False))
    count = sum(mask)
    if size is None:
        found = values[mask]
        if not return_indices:
            return found
        index1 = first1[mask]
    else:
        positions = nonzero(mask, size=size, fill_value=n1)[0]
        found = _fill_results(take(values, positions, mode="fill", fill_value=0), count,
                              fill_value)
        if not return_indices:
            return found
        index1 = where(arange(size) < count,
                       take(first1, positions, mode="fill", fill_value=n1), n1)
    k = found.shape[0]
    if n2 == 0:
        return found, index1, full((k,), n2, dtype=dtypes.default_int())
    hits = equal(reshape(found, (k, 1)), reshape(arr2, (1, n2)))
    index2 = astype(argmax(hits, axis=1), dtypes.default_int())
    index2 = where(arange(k) < count, index2, n2) if size is not None else index2
    return found, astype(index1, dtypes.default_int()), index2


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: Optional[int] = None,
             fill_value: Any = None) -> Any:
    """The sorted unique values in exactly one of the arrays."""
    arr1, arr2 = _promote(ravel(asarray(ar1)), ravel(asarray(ar2)))
    if size is None:
        _need_concrete("setxor1d", arr1, arr2)
    else:
        size = _static_size(size, "setxor1d")
    values1, _, real1 = _unique_masked(arr1, assume_unique)
    values2, _, real2 = _unique_masked(arr2, assume_unique)
    only1 = logical_and(real1, _in1d(values1, values2, invert=True))
    only2 = logical_and(real2, _in1d(values2, values1, invert=True))
    values = concatenate((values1, values2))
    mask = concatenate((only1, only2))
    if values.shape[0] == 0:
        return values if size is None else full((size,), 0 if fill_value is None
                                                else fill_value, dtype=values.dtype)
    order = lexsort((values, logical_not(mask)))  # the results first, sorted
    values, mask = take(values, order), take(mask, order)
    return _pick(values, mask, size, fill_value, "setxor1d")


def sort_complex(a: Any) -> Any:
    """`a` sorted (by real part, then imaginary part) as a complex array."""
    a = asarray(a)
    if a.ndim == 0:
        raise ValueError("sort_complex: the argument must be at least 1-dimensional")
    if dtypes.is_complex(a.dtype):
        order = lexsort((imag(a), real(a)), axis=-1)
        return take_along_axis(a, order, axis=-1)
    return astype(sort(a), dtypes.complex_dtype(dtypes.to_inexact(a.dtype)))

