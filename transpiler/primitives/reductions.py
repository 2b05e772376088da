"""Reduction primitives: reduce_<kind> over axes, argmax/argmin, and cumulative scans.

=====================  ==============================  ====================================
primitive              params                          result
=====================  ==============================  ====================================
``reduce_<kind>``      ``axes`` (sorted, >= 0)         the input dtype; those axes dropped
``argmax``/``argmin``  ``axis``, ``index_dtype``       ``index_dtype``; `axis` dropped
``cum<kind>``          ``axis``, ``reverse``           same shape and dtype as the input
=====================  ==============================  ====================================

``kind`` is one of sum, prod, max, min (and/or for reduce). Half types (float16, bfloat16)
sum and multiply through float32, eagerly and compiled alike, as XLA does on CPU.

Lowering notes:

- A float sum or product over more than `REDUCE_BLOCK` elements is a tree of blocks:
  adjacent reduced axes are merged, and each long one is split into blocks that are
  reduced first, ``(n,) -> (n/128, 128) -> (n/128,) -> ...``. IREE accumulates a reduction
  in a vector of partial sums, each adding its share of the elements one after the other,
  so float32 sums lost accuracy in proportion to their length (relative error 6e-3 at 1e7
  elements); in blocks it grows with log(n) instead (about 1 ulp at 1e7, as NumPy's
  pairwise sum and XLA's tree reduction), and the many blocks of the first level use
  every core. Other reductions are exact in any order: one ``stablehlo.reduce``.
- argmax/argmin are a variadic ``stablehlo.reduce`` over (value, iota) pairs whose body is
  commutative: NaN beats numbers, equal values (or two NaNs) keep the smaller index.
- Cumulative ops use ``stablehlo.reduce_window`` (window n, padding n-1 on one side). IREE
  recognizes it as a scan: a 1e6-element cumsum takes 8 ms, against 109 ms for a doubling
  scan. IREE cannot compile reduce_window on i1 or unsigned types, so bools scan as int8,
  unsigned sums/products as the signed type of the same bits, and unsigned max/min use a
  doubling scan (log2(n) combines with shifts made by ``stablehlo.pad``).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np
from iree.compiler import ir

from transpiler import dtypes
from transpiler.lowering.builder import LoweringContext, i64_array, tensor_type
from transpiler.primitives.batching import batch_axis, shift_axes
from transpiler.primitives.core import (Primitive, ShapedArray, define, dtype_error,
                                        shape_error)
from transpiler.primitives.derivative_forms import linear
from transpiler.primitives.elementwise import compute_dtype
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template

# Float sums and products over more than REDUCE_BLOCK elements are reduced in blocks (see
# module doc): the largest of _EXACT_BLOCKS that divides the length, else REDUCE_BLOCK
# after padding with the identity. Multiples of 16 (a vector of float32 here): blocks of
# 80, 400 or 2000 ran as fast as one reduce, blocks of 40, 200 or 1000 3-4x slower.
REDUCE_BLOCK = 128
_EXACT_BLOCKS = (128, 112, 96, 80, 64)

_NP_UFUNC = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
             "and": np.bitwise_and, "or": np.bitwise_or}
_HLO_COMBINE = {"sum": "stablehlo.add", "prod": "stablehlo.multiply",
                "max": "stablehlo.maximum", "min": "stablehlo.minimum",
                "and": "stablehlo.and", "or": "stablehlo.or"}
# On bool, max is `or` and min is `and` (a signed i1 maximum would rank True = -1 lowest).
_BOOL_COMBINE = {"max": "stablehlo.or", "min": "stablehlo.and",
                 "and": "stablehlo.and", "or": "stablehlo.or"}


def identity(kind: str, dtype: np.dtype) -> Any:
    """The identity element of `kind` in `dtype`: the init value of every reduce."""
    dtype = np.dtype(dtype)
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if dtype == dtypes.bool_:
        return kind in ("min", "and")
    if kind in ("and", "or"):
        return (-1 if dtype.kind == "i" else np.iinfo(dtype).max) if kind == "and" else 0
    if dtypes.is_float(dtype):
        return -np.inf if kind == "max" else np.inf
    info = np.iinfo(dtype)
    return info.min if kind == "max" else info.max


def _work_dtype(kind: str, dtype: np.dtype) -> np.dtype:
    """Sums and products of half types are computed in float32."""
    return compute_dtype(dtype) if kind in ("sum", "prod") else dtype


def _check_dtype(name: str, kind: str, dtype: np.dtype) -> None:
    if kind in ("sum", "prod") and dtype == dtypes.bool_:
        raise dtype_error(f"{name} does not accept boolean operands",
                          "convert to an integer dtype first (jnp.sum does this for you)")
    if kind in ("and", "or") and dtypes.is_inexact(dtype):
        raise dtype_error(f"{name} requires boolean or integer operands, got {dtype}")
    if kind in ("max", "min") and dtypes.is_complex(dtype):
        raise complex_order_error(name, dtype)


def complex_order_error(name: str, dtype: np.dtype) -> Exception:
    return dtype_error(f"{name} of {dtype}: complex numbers are not ordered here",
                       "compare jnp.real(x) or jnp.abs(x) instead")


def _combine(ctx: LoweringContext, kind: str, dtype: np.dtype, a: Any, b: Any,
             shape: Sequence[int] = ()) -> Any:
    hlo = _BOOL_COMBINE[kind] if dtype == dtypes.bool_ else _HLO_COMBINE[kind]
    return ctx.op(hlo, [a, b], tensor_type(shape, dtype))


def _region_body(op: Any, dtypes_in: Sequence[np.dtype],
                 body: Callable[[list[Any]], list[Any]]) -> None:
    """Fill the body of a reduce/reduce_window: ``(accumulators..., elements...) -> ...``."""
    scalars = [tensor_type((), d) for d in dtypes_in]
    block = op.regions[0].blocks.append(*scalars, *scalars)
    with ir.InsertionPoint(block):
        results = body(list(block.arguments))
        ir.Operation.create("stablehlo.return", operands=results)


def emit_reduce(ctx: LoweringContext, inputs: Sequence[Any], inits: Sequence[Any],
                in_shape: Sequence[int], in_dtypes: Sequence[np.dtype], axes: Sequence[int],
                body: Callable[[list[Any]], list[Any]]) -> list[Any]:
    """A (variadic) ``stablehlo.reduce`` of `inputs` over `axes`; returns its results."""
    out_shape = [d for i, d in enumerate(in_shape) if i not in axes]
    op = ctx.op("stablehlo.reduce", [*inputs, *inits],
                [tensor_type(out_shape, d) for d in in_dtypes],
                {"dimensions": i64_array(axes)}, regions=1)
    _region_body(op, in_dtypes, body)
    return list(op.results)


def pad(ctx: LoweringContext, x: Any, fill: Any, dtype: np.dtype, shape: Sequence[int],
        low: Sequence[int], high: Sequence[int]) -> Any:
    """``stablehlo.pad`` (negative amounts crop); `fill` is a 0-d value."""
    out_shape = [d + lo + hi for d, lo, hi in zip(shape, low, high)]
    return ctx.op("stablehlo.pad", [x, fill], tensor_type(out_shape, dtype), {
        "edge_padding_low": i64_array(low), "edge_padding_high": i64_array(high),
        "interior_padding": i64_array([0] * len(shape))})


# --- reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and, reduce_or ----------------

def _reduce_eval(name: str, kind: str) -> Callable:
    def abstract_eval(x: ShapedArray, *, axes: tuple[int, ...]) -> ShapedArray:
        _check_dtype(name, kind, x.dtype)
        if list(axes) != sorted(set(axes)) or any(not 0 <= a < x.ndim for a in axes):
            raise shape_error(f"{name}: axes {tuple(axes)} must be sorted, distinct and in "
                              f"range for an array of rank {x.ndim}")
        if kind in ("max", "min") and any(x.shape[a] == 0 for a in axes):
            raise shape_error(f"{name}: zero-size array to reduction operation {kind}imum "
                              "which has no identity", "pass initial=... to jnp.max/jnp.min")
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, x.dtype, x.weak_type)
    return abstract_eval


def _reduce_impl(kind: str) -> Callable:
    def impl(x: np.ndarray, *, axes: tuple[int, ...]) -> np.ndarray:
        work = _work_dtype(kind, x.dtype)
        # Float sums accumulate in float64 and round once: NumPy sums pairwise only along
        # the innermost axis, and adds rows one after the other along the others (20x
        # XLA's error for a column mean of 10^4 rows); the compiled sums are trees of blocks.
        acc = np.dtype(np.float64) if kind == "sum" and work.kind == "f" else work
        with np.errstate(all="ignore"):
            out = _NP_UFUNC[kind].reduce(x.astype(acc, copy=False), axis=tuple(axes),
                                         dtype=acc, initial=identity(kind, acc))
        return np.asarray(out).astype(work, copy=False)
    return impl


def _reduce_lower(kind: str) -> Callable:
    def lower(ctx: LoweringContext, x: Any, *, axes: tuple[int, ...]) -> Any:
        (aval,), out = ctx.avals_in, ctx.aval_out
        work = _work_dtype(kind, aval.dtype)
        x = ctx.convert(x, aval, work)
        if not axes:
            result = x
        elif kind in ("sum", "prod") and dtypes.is_float(work):
            result = _reduce_in_blocks(ctx, kind, x, work, aval.shape, axes)
        else:  # exact whatever the order
            result = _reduce_axes(ctx, kind, x, work, aval.shape, axes)
        return ctx.convert(result, ShapedArray(out.shape, work), out.dtype)
    return lower


def _reduce_axes(ctx: LoweringContext, kind: str, x: Any, dtype: np.dtype,
                 shape: Sequence[int], axes: Sequence[int]) -> Any:
    init = ctx.constant(identity(kind, dtype), dtype)
    (result,) = emit_reduce(ctx, [x], [init], shape, [dtype], axes,
                            lambda args: [_combine(ctx, kind, dtype, args[0], args[1])])
    return result


def _reduce_in_blocks(ctx: LoweringContext, kind: str, x: Any, dtype: np.dtype,
                      shape: Sequence[int], axes: Sequence[int]) -> Any:
    """Reduce `axes` of `x` as a tree of blocks of at most `REDUCE_BLOCK` (see module doc)."""
    # Merge each run of adjacent reduced axes into one axis (a free reshape).
    merged: list[int] = []
    reduced: list[int] = []
    for axis, extent in enumerate(shape):
        if axis in axes and axis - 1 in axes:
            merged[-1] *= extent
            continue
        if axis in axes:
            reduced.append(len(merged))
        merged.append(extent)
    if list(merged) != list(shape):
        x = ctx.reshape(x, dtype, merged)
    for axis in reduced:  # splitting and reducing a block leaves the axis numbers as they were
        while merged[axis] > REDUCE_BLOCK:
            x, merged[axis] = _reduce_one_level(ctx, kind, x, dtype, merged, axis)
    return _reduce_axes(ctx, kind, x, dtype, merged, reduced)


def _reduce_one_level(ctx: LoweringContext, kind: str, x: Any, dtype: np.dtype,
                      shape: list[int], axis: int) -> tuple[Any, int]:
    """Split `axis` into blocks and reduce each: its new value and the axis' new length."""
    extent = shape[axis]
    block = next((b for b in _EXACT_BLOCKS if extent % b == 0), None)
    if block is None:  # pad with the identity up to a whole number of blocks
        block = REDUCE_BLOCK
        extra = -extent % block
        fill = ctx.constant(identity(kind, dtype), dtype)
        x = pad(ctx, x, fill, dtype, shape, [0] * len(shape),
                [extra if a == axis else 0 for a in range(len(shape))])
        extent += extra
    split = [*shape[:axis], extent // block, block, *shape[axis + 1:]]
    x = ctx.reshape(x, dtype, split)
    return _reduce_axes(ctx, kind, x, dtype, split, [axis + 1]), extent // block


def _def_reduce(kind: str) -> Primitive:
    name = f"reduce_{kind}"
    return define(name, impl=_reduce_impl(kind), abstract_eval=_reduce_eval(name, kind),
                  lower=_reduce_lower(kind), differentiable=kind not in ("and", "or"),
                  family="reduction")


reduce_sum = _def_reduce("sum")
reduce_prod = _def_reduce("prod")
reduce_max = _def_reduce("max")
reduce_min = _def_reduce("min")
reduce_and = _def_reduce("and")
reduce_or = _def_reduce("or")


# --- argmax, argmin ---------------------------------------------------------------------

def _arg_eval(name: str) -> Callable:
    def abstract_eval(x: ShapedArray, *, axis: int, index_dtype: np.dtype) -> ShapedArray:
        if not 0 <= axis < x.ndim:
            raise shape_error(f"{name}: axis {axis} is out of range for an array of rank "
                              f"{x.ndim}")
        if x.shape[axis] == 0:
            raise shape_error(f"{name}: attempt to get {name} of an empty sequence")
        if not dtypes.is_int(np.dtype(index_dtype)):
            raise dtype_error(f"{name}: index_dtype must be an integer type, got {index_dtype}")
        shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
        return ShapedArray(shape, np.dtype(index_dtype))
    return abstract_eval


def _arg_impl(np_fn: Callable) -> Callable:
    def impl(x: np.ndarray, *, axis: int, index_dtype: np.dtype) -> np.ndarray:
        return np.asarray(np_fn(x, axis=axis)).astype(index_dtype)  # NumPy: first NaN wins
    return impl


def _arg_lower(kind: str) -> Callable:
    direction = "GT" if kind == "max" else "LT"

    def lower(ctx: LoweringContext, x: Any, *, axis: int, index_dtype: np.dtype) -> Any:
        (aval,) = ctx.avals_in
        vdt, idt = aval.dtype, np.dtype(index_dtype)
        index = ctx.op("stablehlo.iota", [], tensor_type(aval.shape, idt),
                       {"iota_dimension": ir.IntegerAttr.get(
                           ir.IntegerType.get_signless(64), axis)})
        inits = [ctx.constant(identity(kind, vdt), vdt),
                 ctx.constant(np.iinfo(idt).max, idt)]

        def body(args: list[Any]) -> list[Any]:
            a, a_i, b, b_i = args
            better = ctx.compare(a, b, direction, vdt, ())
            same = ctx.compare(a, b, "EQ", vdt, ())
            if dtypes.is_float(vdt):  # NaN beats every number; two NaNs tie
                a_nan, b_nan = ctx.compare(a, a, "NE", vdt, ()), ctx.compare(b, b, "NE", vdt, ())
                b_not_nan = ctx.op("stablehlo.not", [b_nan], tensor_type((), dtypes.bool_))
                only_a_nan = _bool(ctx, "and", a_nan, b_not_nan)
                better = _bool(ctx, "or", better, only_a_nan)
                same = _bool(ctx, "or", same, _bool(ctx, "and", a_nan, b_nan))
            first = _bool(ctx, "and", same, ctx.compare(a_i, b_i, "LT", idt, ()))
            pick_a = _bool(ctx, "or", better, first)
            return [ctx.op("stablehlo.select", [pick_a, a, b], tensor_type((), vdt)),
                    ctx.op("stablehlo.select", [pick_a, a_i, b_i], tensor_type((), idt))]

        _, result = emit_reduce(ctx, [x, index], inits, aval.shape, [vdt, idt], (axis,), body)
        return result
    return lower


def _bool(ctx: LoweringContext, kind: str, a: Any, b: Any) -> Any:
    return ctx.op(f"stablehlo.{kind}", [a, b], tensor_type((), dtypes.bool_))


argmax = define("argmax", impl=_arg_impl(np.argmax), abstract_eval=_arg_eval("argmax"),
                lower=_arg_lower("max"), differentiable=False, family="reduction")
argmin = define("argmin", impl=_arg_impl(np.argmin), abstract_eval=_arg_eval("argmin"),
                lower=_arg_lower("min"), differentiable=False, family="reduction")


# --- cumsum, cumprod, cummax, cummin ----------------------------------------------------

def _cum_eval(name: str, kind: str) -> Callable:
    def abstract_eval(x: ShapedArray, *, axis: int, reverse: bool = False) -> ShapedArray:
        _check_dtype(name, kind, x.dtype)
        if not 0 <= axis < x.ndim:
            raise shape_error(f"{name}: axis {axis} is out of range for an array of rank "
                              f"{x.ndim}")
        return x
    return abstract_eval


def _cum_impl(kind: str) -> Callable:
    def impl(x: np.ndarray, *, axis: int, reverse: bool = False) -> np.ndarray:
        work = _work_dtype(kind, x.dtype)
        data = x.astype(work, copy=False)
        if reverse:
            data = np.flip(data, axis)
        with np.errstate(all="ignore"):
            out = _NP_UFUNC[kind].accumulate(data, axis=axis, dtype=work)
        return np.flip(out, axis) if reverse else out
    return impl


def _cum_lower(kind: str) -> Callable:
    def lower(ctx: LoweringContext, x: Any, *, axis: int, reverse: bool = False) -> Any:
        (aval,) = ctx.avals_in
        work = _work_dtype(kind, aval.dtype)
        if work == dtypes.bool_:  # IREE rejects i1 reduce_window bodies: scan 0/1 as int8
            work = dtypes.int8
        x = ctx.convert(x, aval, work)
        scan_dtype = work
        if work.kind == "u" and kind in ("sum", "prod"):  # wrapping arithmetic: same bits
            scan_dtype = np.dtype(f"i{work.itemsize}")
            x = ctx.op("stablehlo.bitcast_convert", [x], tensor_type(aval.shape, scan_dtype))
        # IREE cannot compile reduce_window on unsigned types (unsigned max/min here).
        scan = _doubling_scan if scan_dtype.kind == "u" else _window_scan
        result = scan(ctx, kind, x, scan_dtype, aval.shape, axis, reverse)
        if scan_dtype != work:
            result = ctx.op("stablehlo.bitcast_convert", [result], tensor_type(aval.shape, work))
        return ctx.convert(result, aval.update(dtype=work), aval.dtype)
    return lower


def _window_scan(ctx: LoweringContext, kind: str, x: Any, dtype: np.dtype,
                 shape: Sequence[int], axis: int, reverse: bool) -> Any:
    """Each output reduces a window of n elements that ends (or starts) at its position."""
    n = shape[axis]
    window = [n if i == axis else 1 for i in range(len(shape))]
    padding = np.zeros((len(shape), 2), np.int64)
    padding[axis] = (0, n - 1) if reverse else (n - 1, 0)
    init = ctx.constant(identity(kind, dtype), dtype)
    op = ctx.op("stablehlo.reduce_window", [x, init], tensor_type(shape, dtype), {
        "window_dimensions": i64_array(window),
        "window_strides": i64_array([1] * len(shape)),
        "padding": ir.DenseElementsAttr.get(padding)}, regions=1)
    _region_body(op, [dtype], lambda args: [_combine(ctx, kind, dtype, args[0], args[1])])
    return op.result


def _doubling_scan(ctx: LoweringContext, kind: str, x: Any, dtype: np.dtype,
                   shape: Sequence[int], axis: int, reverse: bool) -> Any:
    """Hillis-Steele: ``x = x (+) shift(x, d)`` for d = 1, 2, 4, ... (log2(n) steps)."""
    fill = ctx.constant(identity(kind, dtype), dtype)
    step = 1
    while step < shape[axis]:
        low = [0] * len(shape)
        high = [0] * len(shape)
        low[axis], high[axis] = (-step, step) if reverse else (step, -step)
        shifted = pad(ctx, x, fill, dtype, shape, low, high)
        x = _combine(ctx, kind, dtype, x, shifted, shape)
        step *= 2
    return x


def _def_cumulative(kind: str) -> Primitive:
    name = f"cum{kind}"
    return define(name, impl=_cum_impl(kind), abstract_eval=_cum_eval(name, kind),
                  lower=_cum_lower(kind), family="reduction")


cumsum = _def_cumulative("sum")
cumprod = _def_cumulative("prod")
cummax = _def_cumulative("max")
cummin = _def_cumulative("min")


# --- batching rules: no data moves; the batch axis stays where it is and the axis params
# are renumbered around it (`shift_axes`). reduce_<kind>: the renumbered axes are reduced,
# the batch axis lands after the surviving axes that precede it; argmax/argmin: the
# renumbered axis is dropped, the batch axis moves down by one when the reduced axis
# precedes it; cum<kind>: same shape as the input, the batch axis stays put. Operands that
# are not batched at all are applied as they are (``out_dim`` None).

def _reduce_rule(prim: Primitive) -> Any:
    def rule(args: Sequence[Any], dims: Sequence[Optional[int]], *,
             axes: Sequence[int], **params: Any) -> tuple[Any, Optional[int]]:
        (x,), (d,) = args, dims
        if d is None:
            return prim.bind(x, axes=tuple(axes), **params), None
        d = batch_axis(x, d)
        new_axes = shift_axes(axes, d)
        out_dim = d - sum(1 for a in new_axes if a < d)
        return prim.bind(x, axes=new_axes, **params), out_dim
    return rule


def _axis_rule(prim: Primitive, removes_axis: bool) -> Any:
    def rule(args: Sequence[Any], dims: Sequence[Optional[int]], *,
             axis: int, **params: Any) -> tuple[Any, Optional[int]]:
        (x,), (d,) = args, dims
        if d is None:
            return prim.bind(x, axis=axis, **params), None
        d = batch_axis(x, d)
        (new_axis,) = shift_axes((axis,), d)
        out_dim = d - 1 if removes_axis and new_axis < d else d
        return prim.bind(x, axis=new_axis, **params), out_dim
    return rule


# --- the rules of each primitive: derivatives and batching ---------------------------------

reduce_sum.def_rules(batch=_reduce_rule(reduce_sum),
                     **linear("ad.reduce_sum_tangent({t}, axes)",
                              "ad.expand_reduced({t}, jnp.shape(x), axes)"))
reduce_prod.def_rules(batch=_reduce_rule(reduce_prod),
                      jvp=jvp_template(("x",), x="ad.prod_tangent(x_dot, x, out, axes)"),
                      vjp=vjp_template(("x",), "x_bar = ad.prod_cotangent(out_bar, x, axes)"))
# Ties share the derivative equally (JAX's chooser rule).
for _prim in (reduce_max, reduce_min):
    _prim.def_rules(
        batch=_reduce_rule(_prim),
        jvp=jvp_template(("x",), x="ad.chooser_tangent(x_dot, x, out, axes)"),
        vjp=vjp_template(("x",), "x_bar = ad.chooser_cotangent(out_bar, x, out, axes)"))
for _prim in (reduce_and, reduce_or):
    _prim.def_rules(batch=_reduce_rule(_prim))
for _prim in (argmax, argmin):
    _prim.def_rules(batch=_axis_rule(_prim, removes_axis=True))
cumsum.def_rules(batch=_axis_rule(cumsum, removes_axis=False),
                 **linear("ad.cumsum({t}, axis, reverse)", "ad.cumsum({t}, axis, not reverse)"))
cumprod.def_rules(
    batch=_axis_rule(cumprod, removes_axis=False),
    jvp=jvp_template(("x",), x="ad.cumprod_tangent(x_dot, x, axis, reverse)"),
    vjp=vjp_template(("x",), "x_bar = ad.cumprod_cotangent(out_bar, x, out, axis, reverse)"))
for _prim in (cummax, cummin):
    _prim.def_rules(
        batch=_axis_rule(_prim, removes_axis=False),
        jvp=jvp_template(("x",), x="ad.cumulative_chooser_tangent(x_dot, x, out, axis, reverse)"),
        vjp=vjp_template(("x",), """
x_bar = ad.cumulative_chooser_cotangent(out_bar, x, out, axis, reverse)
"""))
