"""Choosing elements by conditions and indices: select, piecewise, choose, compress and
extract, with JAX's semantics (select: the first true condition wins; piecewise: the
last). Without ``size=``, compress and extract need concrete conditions (the result's
length depends on them); with it, they run under ``jit`` too and pad with `fill_value`.
"""

from __future__ import annotations

import operator
from typing import Any, Optional, Sequence

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import asarray, astype, full_like
from transpiler.numpy.indexing_functions import take_along_axis
from transpiler.numpy.joining import stack
from transpiler.numpy.math import clip, remainder, where
from transpiler.numpy.reductions import any as any_
from transpiler.numpy.shape import (_as_array, _slice_axis, broadcast_arrays, expand_dims,
                                    moveaxis, ravel, reshape)
from transpiler.numpy.sorting import argsort
from transpiler.primitives import core

__all__ = ["choose", "compress", "extract", "piecewise", "select"]


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    """Elementwise, the choice of the first true condition (`default` where none is)."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                         f"{len(choicelist)})")
    if len(condlist) == 0:
        raise ValueError("condlist must be non-empty")
    out = asarray(default)
    for cond, choice in zip(reversed(list(condlist)), reversed(list(choicelist))):
        out = where(cond, choice, out)
    return out


def piecewise(x: Any, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Any:
    """Elementwise, ``funclist[i](x)`` where ``condlist[i]`` is true (the last true one
    wins); one extra function (or value) is the default. Every function is evaluated on
    all of `x`, in `x`'s dtype."""
    x = _as_array(x)
    nc, nf = len(condlist), len(funclist)
    if nf == nc + 1:
        funcs = list(funclist[-1:]) + list(funclist[:-1])
    elif nf == nc:
        funcs = [0] + list(funclist)
    else:
        raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are "
                         f"expected; got {nf}")
    out = _piece(funcs[0], x, args, kw)
    for i in range(nc):
        cond = astype(asarray(condlist[i]), dtypes.bool_)
        out = where(cond, _piece(funcs[i + 1], x, args, kw), out)
    return out


def _piece(f: Any, x: Any, args: tuple, kw: dict) -> Any:
    """The value of one piece over all of `x`, in `x`'s dtype."""
    if callable(f):
        return astype(f(x, *args, **kw), x.dtype)
    return full_like(x, f)


def choose(a: Any, choices: Any, out: None = None, mode: str = "raise") -> Any:
    """Elementwise, ``choices[a]`` (all broadcast together); ``mode`` "raise" (concrete
    `a` only), "wrap" or "clip" for indices out of range."""
    if out is not None:
        raise located(NotImplementedError, "The 'out' argument to jnp.choose is not supported.",
                      "use the returned value (arrays are immutable)")
    arr = asarray(a)
    options = [asarray(c) for c in choices]
    if not dtypes.is_int(arr.dtype):
        raise ValueError("`a` array must be integer typed")
    n = len(options)
    if mode == "raise":
        if isinstance(arr, core.Tracer):
            raise core.shape_error("jnp.choose with mode='raise' needs a concrete `a`",
                                   "use mode='wrap' or mode='clip' under jit")
        if bool(any_((arr < 0) | (arr >= n))):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        arr = remainder(arr, n)
    elif mode == "clip":
        arr = clip(arr, 0, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    arr, *options = broadcast_arrays(arr, *options)
    picked = take_along_axis(stack(options), expand_dims(arr, 0), axis=0)
    return reshape(picked, arr.shape)


def compress(condition: Any, a: Any, axis: Optional[int] = None, *,
             size: Optional[int] = None, fill_value: Any = 0, out: None = None) -> Any:
    """The slices of `a` along `axis` (None: flattened) where the 1-d `condition` is
    true; with `size`, the first `size` of them, padded with `fill_value`."""
    if out is not None:
        raise located(NotImplementedError, "The 'out' argument to jnp.compress is not "
                      "supported.", "use the returned value (arrays are immutable)")
    cond = astype(asarray(condition), dtypes.bool_)
    if cond.ndim != 1:
        raise ValueError("condition must be a 1D array")
    if axis is None:
        arr, axis = ravel(_as_array(a)), 0
    else:
        arr = moveaxis(_as_array(a), operator.index(axis), 0)
    n = arr.shape[0]
    extra = _slice_axis(cond, 0, min(n, cond.shape[0]), cond.shape[0])
    cond = _slice_axis(cond, 0, 0, min(n, cond.shape[0]))
    arr = _slice_axis(arr, 0, 0, cond.shape[0])
    if size is None:
        if isinstance(cond, core.Tracer):
            raise core.shape_error("compress: a traced condition needs a static size=",
                                   "the number of selected slices must be known")
        if bool(any_(extra)):
            raise ValueError("condition contains entries that are out of bounds")
        result = arr[cond]
    elif not 0 <= size <= arr.shape[0]:
        raise ValueError("size must be positive and not greater than the size of the array "
                         f"axis; got size={size} for a.shape[axis]={arr.shape[0]}")
    else:
        mask = reshape(cond, (cond.shape[0],) + (1,) * (arr.ndim - 1))
        arr = where(mask, arr, asarray(fill_value, dtype=arr.dtype))
        order = argsort(cond, stable=True, descending=True)
        result = _slice_axis(arr[order], 0, 0, size)
    return moveaxis(result, 0, axis)


def extract(condition: Any, arr: Any, *, size: Optional[int] = None,
            fill_value: Any = 0) -> Any:
    """The elements of the flattened `arr` where the flattened `condition` is true."""
    return compress(ravel(asarray(condition)), ravel(_as_array(arr)), size=size,
                    fill_value=fill_value)

