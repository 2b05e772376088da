"""Windowed reductions (``lax.reduce_window``) and the two primitives of max pooling's
derivatives, with JAX's names and params.

=============================  ===================  ========================================
primitive                      operands             result
=============================  ===================  ========================================
``reduce_window_<kind>``       x                    per window, its elements combined
``select_and_gather_add``      tangents, operand    per window, `tangents` at the position
                                                    of `operand`'s first max (min)
``select_and_scatter_add``     source, operand      `operand`'s shape: each window's
                                                    `source` value added at the position
                                                    of its first max (min)
=============================  ===================  ========================================

``kind`` is sum, prod, max or min; the two select primitives take ``kind`` (max or min) as
a param. Every primitive takes the window params of ``lax.reduce_window``, one entry per
operand axis: ``window_dimensions``, ``window_strides``, ``padding`` (``(low, high)``
pairs, non-negative), ``base_dilation`` and ``window_dilation``. The operand, dilated
(``base_dilation - 1`` holes between elements) and padded, is covered by windows of
``window_dimensions`` elements spaced ``window_dilation`` apart, ``window_strides`` apart.
Holes and padding hold no element: a window reduces the elements it covers (the
identity when none). ``select_and_*`` choose the first maximal (minimal) element in the
window's row-major order, NaN above (below) every number; a window with no element
selects nothing. Half floats sum and multiply through float32, as the reductions do.

Lowering notes (IREE 3.13):

- ``reduce_window_<kind>`` is one ``stablehlo.reduce_window``, with its padding and base
  dilation given to it as ``stablehlo.pad`` first (``pad_ahead``: the identity fills
  the holes, the reduce_window keeps the strides and window dilation). Like the
  cumulative reductions, bools reduce as int8, unsigned sums and products as the signed
  type of the same bits, unsigned max/min as signed values with the sign bit flipped
  (which keeps their order): IREE compiles no reduce_window on i1 or unsigned types.
  Complex sums are two real ones; complex products are the window's elements multiplied
  one slice at a time (`_by_slices`).
- The select primitives are composites of slices, selects and pads, one slice of the
  operand per window position: the first max is a running comparison, the scatter a sum
  of one padded (interior padding for the strides) array per window position.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Optional, Sequence

import numpy as np
from iree.compiler import ir

from transpiler import dtypes
from transpiler.lowering.builder import LoweringContext, i64_array, tensor_type
from transpiler.primitives import conversions as conv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import shape as sp
from transpiler.primitives.core import (Primitive, ShapedArray, abstractify, define,
                                        dtype_error, shape_error)
from transpiler.primitives.batching import batch_size, materialize
from transpiler.primitives.derivative_forms import linear
from transpiler.primitives.elementwise import compute_dtype
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template
from transpiler.primitives.reductions import (_NP_UFUNC, _combine, _region_body,
                                              complex_order_error, identity)

Pairs = Sequence[tuple[int, int]]
WINDOW_PARAMS = ("window_dimensions", "window_strides", "padding", "base_dilation",
                 "window_dilation")


# --- window geometry ------------------------------------------------------------------------

def dilate(size: int, dilation: int) -> int:
    """The extent of `size` elements with ``dilation - 1`` holes between neighbours."""
    return 0 if size == 0 else (size - 1) * dilation + 1


def check_window(name: str, aval: ShapedArray, window_dimensions: Sequence[int],
                 window_strides: Sequence[int], padding: Pairs, base_dilation: Sequence[int],
                 window_dilation: Sequence[int]) -> tuple[int, ...]:
    """Validate the window params for `aval`; returns the shape of the windowed result."""
    counts: dict[str, Sequence[int]] = {
        "window_dimensions": window_dimensions, "window_strides": window_strides,
        "base_dilation": base_dilation, "window_dilation": window_dilation}
    for label, values in (*counts.items(), ("padding", padding)):
        if len(values) != aval.ndim:
            raise shape_error(f"{name}: {label} {tuple(values)} has {len(values)} entries "
                              f"for an operand {aval.str_short()} of rank {aval.ndim}",
                              "give one entry per axis of the operand")
    for label, sizes in counts.items():
        if any(v < 1 for v in sizes):
            raise shape_error(f"{name}: {label} must be positive, got {tuple(sizes)}")
    if any(len(pair) != 2 or min(pair) < 0 for pair in padding):
        raise shape_error(f"{name}: padding must be non-negative (low, high) pairs, got "
                          f"{tuple(padding)}")
    shape = []
    for n, w, s, (lo, hi), b, d in zip(aval.shape, window_dimensions, window_strides,
                                       padding, base_dilation, window_dilation):
        room = lo + dilate(n, b) + hi - dilate(w, d)
        shape.append(0 if room < 0 else room // s + 1)
    return tuple(shape)


def spread_shape(shape: Sequence[int], padding: Pairs,
                 base_dilation: Sequence[int]) -> tuple[int, ...]:
    """The shape of the operand once dilated and padded."""
    return tuple(lo + dilate(n, b) + hi for n, (lo, hi), b in zip(shape, padding, base_dilation))


def window_starts(window_dimensions: Sequence[int],
                  window_dilation: Sequence[int]) -> list[tuple[int, ...]]:
    """Where each position of a window sits relative to its corner, row-major."""
    return [tuple(k * d for k, d in zip(offset, window_dilation))
            for offset in itertools.product(*(range(w) for w in window_dimensions))]


def _slicing(start: Sequence[int], out_shape: Sequence[int],
             strides: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(start, limit) of the strided slice that reads one window position of every window."""
    return tuple(start), tuple(s + dilate(o, k) for s, o, k in zip(start, out_shape, strides))


# --- eager: NumPy --------------------------------------------------------------------------

def _np_spread(x: np.ndarray, fill: Any, padding: Pairs, base_dilation: Sequence[int]) -> np.ndarray:
    out = np.full(spread_shape(x.shape, padding, base_dilation), fill, dtype=x.dtype)
    out[tuple(slice(lo, lo + dilate(n, b), b)
              for n, (lo, _), b in zip(x.shape, padding, base_dilation))] = x
    return out


def _np_patches(x: np.ndarray, fill: Any, out_shape: Sequence[int], params: dict) -> np.ndarray:
    """``out_shape + (window size,)``: every window's elements (`fill` where none)."""
    spread = _np_spread(x, fill, params["padding"], params["base_dilation"])
    strides = params["window_strides"]
    patches = []
    for start in window_starts(params["window_dimensions"], params["window_dilation"]):
        first, limit = _slicing(start, out_shape, strides)
        patches.append(spread[tuple(slice(a, b, k) for a, b, k in zip(first, limit, strides))])
    return np.stack(patches, axis=-1)


def _np_choice(operand: np.ndarray, kind: str, out_shape: Sequence[int],
               params: dict) -> tuple[np.ndarray, np.ndarray]:
    """(the window position of each window's first max/min, whether it has an element)."""
    values = _np_patches(operand, 0, out_shape, params)
    real = _np_patches(np.ones(operand.shape, bool), False, out_shape, params)
    masked = np.where(real, values, identity(kind, operand.dtype))
    best = (np.max if kind == "max" else np.min)(masked, axis=-1, keepdims=True)
    hits = real & (masked == best)
    if dtypes.is_float(operand.dtype):  # NaN beats every number; the first NaN wins
        hits |= real & np.isnan(best) & np.isnan(masked)
    return np.argmax(hits, axis=-1), hits.any(axis=-1)


# --- lowering helpers ----------------------------------------------------------------------

def _window_attributes(window_dimensions: Sequence[int], window_strides: Sequence[int],
                       window_dilation: Sequence[int]) -> dict[str, Any]:
    rank = len(window_dimensions)
    return {"window_dimensions": i64_array(window_dimensions),
            "window_strides": i64_array(window_strides),
            "base_dilations": i64_array([1] * rank),
            "window_dilations": i64_array(window_dilation),
            "padding": ir.DenseElementsAttr.get(np.zeros((rank, 2), np.int64))}


def pad_ahead(ctx: LoweringContext, x: Any, fill: Any, dtype: np.dtype, shape: Sequence[int],
              padding: Pairs, base_dilation: Sequence[int]) -> Any:
    """`x` dilated and padded with the 0-d `fill` (a no-op when there is neither)."""
    if all(b == 1 for b in base_dilation) and not any(lo or hi for lo, hi in padding):
        return x
    out = spread_shape(shape, padding, base_dilation)
    return ctx.op("stablehlo.pad", [x, fill], tensor_type(out, dtype), {
        "edge_padding_low": i64_array([lo for lo, _ in padding]),
        "edge_padding_high": i64_array([hi for _, hi in padding]),
        "interior_padding": i64_array([b - 1 for b in base_dilation])})


def _by_slices(ctx: LoweringContext, kind: str, spread: Any, dtype: np.dtype,
               out_shape: Sequence[int], params: dict) -> Any:
    """The windows combined one window position at a time: a strided slice per position."""
    strides = params["window_strides"]
    result = None
    for start in window_starts(params["window_dimensions"], params["window_dilation"]):
        first, limit = _slicing(start, out_shape, strides)
        piece = ctx.op("stablehlo.slice", [spread], tensor_type(out_shape, dtype), {
            "start_indices": i64_array(first), "limit_indices": i64_array(limit),
            "strides": i64_array(strides)})
        result = piece if result is None else _combine(ctx, kind, dtype, result, piece,
                                                       out_shape)
    return result


def _reduce_window(ctx: LoweringContext, kind: str, x: Any, dtype: np.dtype,
                   out_shape: Sequence[int], params: dict) -> Any:
    """One ``stablehlo.reduce_window`` (padding and base dilation done by a pad first)."""
    op = ctx.op("stablehlo.reduce_window", [x, ctx.constant(identity(kind, dtype), dtype)],
                tensor_type(out_shape, dtype), _window_attributes(
                    params["window_dimensions"], params["window_strides"],
                    params["window_dilation"]), regions=1)
    _region_body(op, [dtype], lambda args: [_combine(ctx, kind, dtype, args[0], args[1])])
    return op.result


def _ordered_as_signed(ctx: LoweringContext, x: Any, dtype: np.dtype, shape: Sequence[int],
                       back: bool) -> Any:
    """Unsigned values as signed ones of the same order (the sign bit flipped), or back."""
    signed = np.dtype(f"i{dtype.itemsize}")
    top = 1 << (8 * dtype.itemsize - 1)
    if back:
        x = ctx.op("stablehlo.bitcast_convert", [x], tensor_type(shape, dtype))
    flipped = ctx.op("stablehlo.xor", [x, ctx.constant(top, dtype, shape)],
                     tensor_type(shape, dtype))
    if back:
        return flipped
    return ctx.op("stablehlo.bitcast_convert", [flipped], tensor_type(shape, signed))


# --- reduce_window_sum, reduce_window_prod, reduce_window_max, reduce_window_min ------------

def _work_dtype(kind: str, dtype: np.dtype) -> np.dtype:
    return compute_dtype(dtype) if kind in ("sum", "prod") else dtype


def _window_eval(name: str, kind: str) -> Callable:
    def abstract_eval(x: ShapedArray, **params: Any) -> ShapedArray:
        if kind in ("sum", "prod") and x.dtype == dtypes.bool_:
            raise dtype_error(f"{name} does not accept boolean operands",
                              "convert to an integer dtype first")
        if kind in ("max", "min") and dtypes.is_complex(x.dtype):
            raise complex_order_error(name, x.dtype)
        return x.update(shape=check_window(name, x, **params))
    return abstract_eval


def _window_impl(name: str, kind: str) -> Callable:
    def impl(x: np.ndarray, **params: Any) -> np.ndarray:
        out_shape = check_window(name, ShapedArray(x.shape, x.dtype), **params)
        work = _work_dtype(kind, x.dtype)
        acc = np.dtype(np.float64) if kind == "sum" and work.kind == "f" else work
        patches = _np_patches(x.astype(acc), identity(kind, acc), out_shape, params)
        with np.errstate(all="ignore"):
            out = _NP_UFUNC[kind].reduce(patches, axis=-1, dtype=acc,
                                         initial=identity(kind, acc))
        return np.asarray(out).astype(work).astype(x.dtype)
    return impl


def _window_lower(kind: str) -> Callable:
    def lower(ctx: LoweringContext, x: Any, **params: Any) -> Any:
        (aval,), out = ctx.avals_in, ctx.aval_out
        work = _work_dtype(kind, aval.dtype)
        x = ctx.convert(x, aval, work)
        if dtypes.is_complex(work) and kind == "sum":  # two real sums
            real = aval.update(dtype=dtypes.real_dtype(work))
            parts = [_lower_real(ctx, kind, p, real, out.shape, params)
                     for p in ctx.complex_parts(x, aval.update(dtype=work))]
            return ctx.op("stablehlo.complex", parts, tensor_type(out.shape, work))
        result = _lower_real(ctx, kind, x, aval.update(dtype=work), out.shape, params)
        return ctx.convert(result, ShapedArray(out.shape, work), out.dtype)
    return lower


def _lower_real(ctx: LoweringContext, kind: str, x: Any, aval: ShapedArray,
                out_shape: Sequence[int], params: dict) -> Any:
    """reduce_window of `x` (`aval`, in its work dtype): the dtypes IREE lacks mapped."""
    dtype = aval.dtype
    if dtype == dtypes.bool_:
        x = ctx.convert(x, aval, dtypes.int8)
        result = _lower_real(ctx, kind, x, aval.update(dtype=dtypes.int8), out_shape, params)
        return ctx.convert(result, ShapedArray(tuple(out_shape), dtypes.int8), dtype)
    if dtype.kind == "u":
        signed = np.dtype(f"i{dtype.itemsize}")
        if kind in ("sum", "prod"):  # wrapping arithmetic: the same bits
            x = ctx.op("stablehlo.bitcast_convert", [x], tensor_type(aval.shape, signed))
        else:
            x = _ordered_as_signed(ctx, x, dtype, aval.shape, back=False)
        result = _lower_real(ctx, kind, x, aval.update(dtype=signed), out_shape, params)
        if kind in ("sum", "prod"):
            return ctx.op("stablehlo.bitcast_convert", [result], tensor_type(out_shape, dtype))
        return _ordered_as_signed(ctx, result, dtype, out_shape, back=True)
    fill = ctx.constant(identity(kind, dtype), dtype)
    spread = pad_ahead(ctx, x, fill, dtype, aval.shape, params["padding"],
                       params["base_dilation"])
    if any(d == 0 for d in out_shape):
        return ctx.constant(identity(kind, dtype), dtype, out_shape)
    if dtypes.is_complex(dtype):
        return _by_slices(ctx, kind, spread, dtype, out_shape, params)
    return _reduce_window(ctx, kind, spread, dtype, out_shape, params)


def _def_window(kind: str) -> Primitive:
    name = f"reduce_window_{kind}"
    return define(name, impl=_window_impl(name, kind), abstract_eval=_window_eval(name, kind),
                  lower=_window_lower(kind), doc=f"``{name}``: see the module docstring.")


reduce_window_sum = _def_window("sum")
reduce_window_prod = _def_window("prod")
reduce_window_max = _def_window("max")
reduce_window_min = _def_window("min")
REDUCE_WINDOW = {"sum": reduce_window_sum, "prod": reduce_window_prod,
                 "max": reduce_window_max, "min": reduce_window_min}


# --- select_and_gather_add, select_and_scatter_add ----------------------------------------

def _select_eval(name: str, scatter: bool) -> Callable:
    def abstract_eval(values: ShapedArray, operand: ShapedArray, *, kind: str,
                      **params: Any) -> ShapedArray:
        if kind not in ("max", "min"):
            raise ValueError(f"{name}: kind must be 'max' or 'min', got {kind!r}")
        if dtypes.is_complex(operand.dtype):
            raise complex_order_error(name, operand.dtype)
        out_shape = check_window(name, operand, **params)
        want = out_shape if scatter else operand.shape
        if values.shape != want:
            role = "source" if scatter else "tangents"
            raise shape_error(f"{name}: {role} {values.str_short()} must have the shape "
                              f"{list(want)} for operand {operand.str_short()}")
        return values.update(shape=operand.shape if scatter else out_shape)
    return abstract_eval


def _gather_impl(tangents: np.ndarray, operand: np.ndarray, *, kind: str,
                 **params: Any) -> np.ndarray:
    out_shape = check_window("select_and_gather_add",
                             ShapedArray(operand.shape, operand.dtype), **params)
    choice, some = _np_choice(operand, kind, out_shape, params)
    patches = _np_patches(tangents, 0, out_shape, params)
    picked = np.take_along_axis(patches, choice[..., None], axis=-1)[..., 0]
    return np.where(some, picked, np.zeros((), tangents.dtype))


def _scatter_impl(source: np.ndarray, operand: np.ndarray, *, kind: str,
                  **params: Any) -> np.ndarray:
    out_shape = check_window("select_and_scatter_add",
                             ShapedArray(operand.shape, operand.dtype), **params)
    choice, some = _np_choice(operand, kind, out_shape, params)
    padding, base_dilation, strides = (params["padding"], params["base_dilation"],
                                       params["window_strides"])
    acc = np.zeros(spread_shape(operand.shape, padding, base_dilation), source.dtype)
    for k, start in enumerate(window_starts(params["window_dimensions"],
                                            params["window_dilation"])):
        first, limit = _slicing(start, out_shape, strides)
        acc[tuple(slice(a, b, s) for a, b, s in zip(first, limit, strides))] += np.where(
            some & (choice == k), source, np.zeros((), source.dtype))
    return acc[tuple(slice(lo, lo + dilate(n, b), b)
                     for n, (lo, _), b in zip(operand.shape, padding, base_dilation))]


def _beats(kind: str, value: Any, best: Any, floating: bool) -> Any:
    """Whether `value` beats `best`: strictly greater (less), or NaN against a number."""
    better = (ew.greater if kind == "max" else ew.less)(value, best)
    if not floating:
        return better
    return ew.logical_or(better, ew.logical_and(ew.isnan(value),
                                                ew.logical_not(ew.isnan(best))))


def _choice(operand: Any, aval: ShapedArray, kind: str, out_shape: Sequence[int],
            params: dict) -> list[Any]:
    """Per window position, where it holds its window's first max (min): boolean arrays
    of `out_shape`, at most one true at each index."""
    padding, base_dilation, strides = (params["padding"], params["base_dilation"],
                                       params["window_strides"])
    low, high = [lo for lo, _ in padding], [hi for _, hi in padding]
    interior = [b - 1 for b in base_dilation]
    fill = np.array(identity(kind, aval.dtype), aval.dtype)
    spread = sp.pad(operand, fill, low=tuple(low), high=tuple(high), interior=tuple(interior))
    real = sp.pad(sp.broadcast_to(np.array(True), shape=aval.shape), np.array(False),
                  low=tuple(low), high=tuple(high), interior=tuple(interior))
    floating = dtypes.is_float(aval.dtype)
    best = have = where = None
    starts = window_starts(params["window_dimensions"], params["window_dilation"])
    for k, start in enumerate(starts):
        first, limit = _slicing(start, out_shape, strides)
        value, inside = (sp.slice_(a, start_indices=first, limit_indices=limit,
                                   strides=tuple(strides)) for a in (spread, real))
        if best is None:
            best, have, where = value, inside, sp.broadcast_to(np.int32(0), shape=tuple(out_shape))
            continue
        take = ew.logical_and(inside, ew.logical_or(ew.logical_not(have),
                                                    _beats(kind, value, best, floating)))
        best = conv.select(take, value, best)
        where = conv.select(take, np.int32(k), where)
        have = ew.logical_or(have, inside)
    return [ew.logical_and(have, ew.equal(where, np.int32(k))) for k in range(len(starts))]


def _gather_composite(tangents: Any, operand: Any, *, kind: str, **params: Any) -> Any:
    aval, t_aval = abstractify(operand), abstractify(tangents)
    out_shape = check_window("select_and_gather_add", aval, **params)
    zero = np.zeros((), t_aval.dtype)
    if 0 in out_shape or 0 in aval.shape:
        return sp.broadcast_to(zero, shape=out_shape)
    chosen = _choice(operand, aval, kind, out_shape, params)
    spread = sp.pad(tangents, zero, low=tuple(lo for lo, _ in params["padding"]),
                    high=tuple(hi for _, hi in params["padding"]),
                    interior=tuple(b - 1 for b in params["base_dilation"]))
    strides = tuple(params["window_strides"])
    result = sp.broadcast_to(zero, shape=out_shape)
    starts = window_starts(params["window_dimensions"], params["window_dilation"])
    for pick, start in zip(chosen, starts):
        first, limit = _slicing(start, out_shape, strides)
        piece = sp.slice_(spread, start_indices=first, limit_indices=limit, strides=strides)
        result = conv.select(pick, piece, result)
    return result


def _scatter_composite(source: Any, operand: Any, *, kind: str, **params: Any) -> Any:
    aval, s_aval = abstractify(operand), abstractify(source)
    out_shape = check_window("select_and_scatter_add", aval, **params)
    zero = np.zeros((), s_aval.dtype)
    if 0 in out_shape or 0 in aval.shape:
        return sp.broadcast_to(zero, shape=aval.shape)
    chosen = _choice(operand, aval, kind, out_shape, params)
    padding, base_dilation = params["padding"], params["base_dilation"]
    strides = tuple(params["window_strides"])
    spread = spread_shape(aval.shape, padding, base_dilation)
    total = None
    starts = window_starts(params["window_dimensions"], params["window_dilation"])
    for pick, start in zip(chosen, starts):
        first, limit = _slicing(start, out_shape, strides)
        placed = sp.pad(conv.select(pick, source, sp.broadcast_to(zero, shape=out_shape)),
                        zero, low=first, high=tuple(n - b for n, b in zip(spread, limit)),
                        interior=tuple(s - 1 for s in strides))
        total = placed if total is None else ew.add(total, placed)
    return sp.slice_(total, start_indices=tuple(lo for lo, _ in padding),
                     limit_indices=tuple(lo + dilate(n, b) for n, (lo, _), b in
                                         zip(aval.shape, padding, base_dilation)),
                     strides=tuple(base_dilation))


select_and_gather_add = define(
    "select_and_gather_add", impl=_gather_impl,
    abstract_eval=_select_eval("select_and_gather_add", scatter=False),
    composite=_gather_composite, doc="``select_and_gather_add``: see the module docstring.")
select_and_scatter_add = define(
    "select_and_scatter_add", impl=_scatter_impl,
    abstract_eval=_select_eval("select_and_scatter_add", scatter=True),
    composite=_scatter_composite, doc="``select_and_scatter_add``: see the module docstring.")


# --- batching rules: the batch axis becomes one more window axis of size 1 (window
# dimension, stride and dilations 1, no padding), so each window stays inside one batch
# member. reduce_window_<kind>: the batch axis stays where it is;
# select_and_gather_add/select_and_scatter_add: both operands get the batch axis first (an
# unbatched one is broadcast along it), and so does the result.

def with_batch_axis(params: dict[str, Any], dim: int) -> dict[str, Any]:
    """The window params of an operand with a batch axis inserted at `dim`."""
    inserted = {"window_dimensions": 1, "window_strides": 1, "padding": (0, 0),
                "base_dilation": 1, "window_dilation": 1}
    out = dict(params)
    for name, value in inserted.items():
        values = list(params[name])
        out[name] = tuple(values[:dim] + [value] + values[dim:])
    return out


def _reduce_window_rule(prim: Primitive) -> Any:
    def rule(args: Sequence[Any], dims: Sequence[Optional[int]],
             **params: Any) -> tuple[Any, Optional[int]]:
        (x,), (d,) = args, dims
        if d is None:
            return prim.bind(x, **params), None
        d = d % abstractify(x).ndim
        return prim.bind(x, **with_batch_axis(params, d)), d
    return rule


def _select_rule(prim: Primitive) -> Any:
    def rule(args: Sequence[Any], dims: Sequence[Optional[int]],
             **params: Any) -> tuple[Any, Optional[int]]:
        if all(d is None for d in dims):
            return prim.bind(*args, **params), None
        size = batch_size(args, dims)
        moved = [materialize(a, None if d is None else d % abstractify(a).ndim, size)
                 for a, d in zip(args, dims)]
        return prim.bind(*moved, **with_batch_axis(params, 0)), 0
    return rule


# --- the rules of each primitive: derivatives and batching ---------------------------------
# A window sum is linear: its transpose sums windows of the spread-out cotangent (JAX's
# rule). Max/min pooling route the derivative to each window's first max/min, JAX's
# select_and_gather_add (tangent) and select_and_scatter_add (cotangent), which are each
# other's transposes and have zero derivative in the operand they select by. The helpers
# are in transforms/ad/windows.py.

_WINDOW = "window_dimensions, window_strides, padding, base_dilation, window_dilation"
reduce_window_sum.def_rules(
    batch=_reduce_window_rule(reduce_window_sum),
    **linear(f"ad.reduce_window_sum({{t}}, {_WINDOW})",
             f"ad.window_sum_transpose({{t}}, x, {_WINDOW})"))
reduce_window_prod.def_rules(
    batch=_reduce_window_rule(reduce_window_prod),
    jvp=jvp_template(("x",), x=f"ad.window_prod_tangent(x_dot, x, {_WINDOW})"),
    vjp=vjp_template(("x",), f"x_bar = ad.window_prod_cotangent(out_bar, x, {_WINDOW})"))
for _kind, _prim in (("max", reduce_window_max), ("min", reduce_window_min)):
    _prim.def_rules(
        batch=_reduce_window_rule(_prim),
        jvp=jvp_template(("x",), x=f"ad.select_and_gather_add(x_dot, x, {_kind!r}, {_WINDOW})"),
        vjp=vjp_template(("x",), f"""
x_bar = ad.select_and_scatter_add(out_bar, x, {_kind!r}, {_WINDOW})
"""))
select_and_gather_add.def_rules(
    batch=_select_rule(select_and_gather_add),
    jvp=jvp_template(("tangents", "operand"),
                     tangents=f"ad.select_and_gather_add(tangents_dot, operand, kind, {_WINDOW})",
                     operand="ad.zeros_tangent(out)"),
    vjp=vjp_template(("tangents", "operand"), f"""
tangents_bar = ad.select_and_scatter_add(out_bar, operand, kind, {_WINDOW})
operand_bar = ad.zeros_cotangent(operand)
"""))
select_and_scatter_add.def_rules(
    batch=_select_rule(select_and_scatter_add),
    jvp=jvp_template(("source", "operand"),
                     source=f"ad.select_and_scatter_add(source_dot, operand, kind, {_WINDOW})",
                     operand="ad.zeros_tangent(out)"),
    vjp=vjp_template(("source", "operand"), f"""
source_bar = ad.select_and_gather_add(out_bar, operand, kind, {_WINDOW})
operand_bar = ad.zeros_cotangent(operand)
"""))


__all__ = ["REDUCE_WINDOW", "WINDOW_PARAMS", "check_window", "dilate", "reduce_window_max",
           "reduce_window_min", "reduce_window_prod", "reduce_window_sum",
           "select_and_gather_add", "select_and_scatter_add", "spread_shape", "window_starts"]
