"""Dtype conversion, selection, integer powers and iota, with their rules.

Each maps elements independently (iota has no operand), so vmap batches them all with
the elementwise rule (batching.py).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from iree.compiler import ir

from transpiler import dtypes
from transpiler.lowering.builder import LoweringContext, tensor_type
from transpiler.primitives.batching import define_elementwise
from transpiler.primitives.core import (ShapedArray, broadcast_shapes, dtype_error, promote_avals, shape_error)
from transpiler.primitives.derivative_forms import elementwise, linear
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template


# convert_element_type(x, dtype, weak_type): NumPy's astype; float -> bool is x != 0.
def _convert_eval(x: ShapedArray, *, dtype: np.dtype, weak_type: bool = False) -> ShapedArray:
    return ShapedArray(x.shape, dtypes.check_supported(dtype, "astype target"), weak_type)


def _convert_impl(x: np.ndarray, *, dtype: np.dtype, weak_type: bool = False) -> np.ndarray:
    target = np.dtype(dtype)
    if dtypes.is_complex(x.dtype) and not dtypes.is_complex(target) and target != dtypes.bool_:
        x = np.real(x)  # JAX keeps the real part (NumPy warns, then does the same)
    if dtypes.is_float(x.dtype) and dtypes.is_int(target):
        return dtypes.float_to_int(x, target)
    with np.errstate(all="ignore"):
        return x.astype(dtype)


def _convert_lower(ctx: LoweringContext, x: Any, *, dtype: np.dtype,
                   weak_type: bool = False) -> Any:
    source, target = np.dtype(ctx.avals_in[0].dtype), np.dtype(dtype)
    if source.kind in "iu" and target.kind in "iu" and source != target and \
            source.itemsize == target.itemsize:
        # int32 <-> uint32 keeps the bits: a bitcast (IREE 3.13 miscompiles stablehlo.convert
        # between them on a loop's counter: tensor.from_elements of mismatched types)
        return ctx.op("stablehlo.bitcast_convert", [x])
    return ctx.convert(x, ctx.avals_in[0], dtype)


convert_element_type = define_elementwise(
    "convert_element_type", impl=_convert_impl, abstract_eval=_convert_eval,
    lower=_convert_lower, family="elementwise",
    jvp=jvp_template(("x",), x="ad.convert_tangent(x_dot, out)"),
    vjp=vjp_template(("x",), "x_bar = ad.convert_cotangent(out_bar, out, x)"))


# bitcast_convert_type(x, dtype): reinterpret bits between types of equal width.
def _bitcast_eval(x: ShapedArray, *, dtype: np.dtype) -> ShapedArray:
    if x.dtype.itemsize != np.dtype(dtype).itemsize:
        raise dtype_error(f"bitcast_convert_type: {x.dtype} and {dtype} have different widths")
    return ShapedArray(x.shape, np.dtype(dtype))


bitcast_convert_type = define_elementwise(
    "bitcast_convert_type", impl=lambda x, *, dtype: x.view(dtype),
    abstract_eval=_bitcast_eval,
    lower=lambda ctx, x, *, dtype: ctx.op("stablehlo.bitcast_convert", [x]),
    differentiable=False)


# select(pred, on_true, on_false): jnp.where with a boolean predicate.
def _select_eval(pred: ShapedArray, x: ShapedArray, y: ShapedArray) -> ShapedArray:
    if pred.dtype != dtypes.bool_:
        raise dtype_error(f"where: the condition must be boolean, got {pred.dtype}")
    shape = broadcast_shapes("where", pred.shape, x.shape, y.shape)
    dtype, weak = promote_avals(x, y)
    return ShapedArray(shape, dtype, weak)


def _select_impl(pred: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = np.asarray(x), np.asarray(y)
    if dtypes.is_complex(x.dtype) or dtypes.is_complex(y.dtype):
        dtype = dtypes.promote_types(x.dtype, y.dtype)
        x, y = x.astype(dtype), y.astype(dtype)
    elif x.dtype != y.dtype and not dtypes.is_float(x.dtype) and dtypes.is_float(y.dtype):
        x = x.astype(y.dtype)  # a weak Python number against bfloat16, which NumPy cannot
    elif x.dtype != y.dtype and not dtypes.is_float(y.dtype) and dtypes.is_float(x.dtype):
        y = y.astype(x.dtype)  # promote with integers
    return np.where(pred, x, y)


def _select_lower(ctx: LoweringContext, pred: Any, x: Any, y: Any) -> Any:
    ap, ax, ay = ctx.avals_in
    out = ctx.aval_out
    pred = ctx.broadcast(pred, ap, out.shape)
    x = ctx.coerce(x, ax, out.shape, out.dtype)
    y = ctx.coerce(y, ay, out.shape, out.dtype)
    return ctx.op("stablehlo.select", [pred, x, y])


# The predicate is boolean: never differentiated.
select = define_elementwise(
    "select", impl=_select_impl, abstract_eval=_select_eval, lower=_select_lower,
    family="elementwise",
    jvp=jvp_template(("pred", "x", "y"), x="jnp.where(pred, x_dot, 0.0)",
                     y="jnp.where(pred, 0.0, y_dot)"),
    vjp=vjp_template(("pred", "x", "y"), """
x_bar = ad.unbroadcast_like(jnp.where(pred, out_bar, 0.0), x)
y_bar = ad.unbroadcast_like(jnp.where(pred, 0.0, out_bar), y)
"""))


# integer_pow(x, y): x ** y for a static Python int y, by repeated squaring (exact for ints,
# and defined for negative floats, unlike pow(x, 2.0) through exp/log).
def _integer_pow_eval(x: ShapedArray, *, y: int) -> ShapedArray:
    if y < 0 and not dtypes.is_inexact(x.dtype):
        raise dtype_error(f"integers to negative integer powers are not allowed ({x.dtype} ** {y})")
    return x


def _integer_pow_impl(x: np.ndarray, *, y: int) -> np.ndarray:
    with np.errstate(all="ignore"):
        work = x.astype(np.float32) if x.dtype in (dtypes.float16, dtypes.bfloat16) else x
        return np.power(work, y) if y >= 0 else 1 / np.power(work, -y)


def _integer_pow_lower(ctx: LoweringContext, x: Any, *, y: int) -> Any:
    (aval,) = ctx.avals_in
    result = None
    base, n = x, abs(y)
    while n:
        if n & 1:
            result = base if result is None else ctx.op("stablehlo.multiply", [result, base])
        n >>= 1
        if n:
            base = ctx.op("stablehlo.multiply", [base, base])
    if result is None:
        return ctx.constant(1, aval.dtype, aval.shape)
    if y < 0:
        result = ctx.op("stablehlo.divide", [ctx.constant(1, aval.dtype, aval.shape), result])
    return result


integer_pow = define_elementwise(
    "integer_pow", impl=_integer_pow_impl, abstract_eval=_integer_pow_eval,
    lower=_integer_pow_lower, family="elementwise",
    **elementwise(x="{g} * ad.integer_pow_derivative(x, y)"))


# iota(dtype, shape, dimension): 0, 1, 2, ... along `dimension` (jnp.arange, eye, masks).
def _iota_eval(*, dtype: np.dtype, shape: Sequence[int], dimension: int) -> ShapedArray:
    if not 0 <= dimension < max(len(shape), 1):
        raise shape_error(f"iota: dimension {dimension} out of range for shape {tuple(shape)}")
    return ShapedArray(tuple(shape), np.dtype(dtype))


def _iota_impl(*, dtype: np.dtype, shape: Sequence[int], dimension: int) -> np.ndarray:
    index = np.arange(shape[dimension], dtype=dtype) if shape else np.zeros((), dtype)
    view = [1] * len(shape)
    if shape:
        view[dimension] = shape[dimension]
    return np.broadcast_to(index.reshape(view), tuple(shape)).copy()


def _iota_lower(ctx: LoweringContext, *, dtype: np.dtype, shape: Sequence[int],
                dimension: int) -> Any:
    return ctx.op("stablehlo.iota", [], tensor_type(shape, dtype),
                  {"iota_dimension": ir_i64(dimension)})


def ir_i64(value: int) -> Any:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


iota = define_elementwise("iota", impl=_iota_impl, abstract_eval=_iota_eval,
                          lower=_iota_lower, differentiable=False)



# optimization_barrier(x): the identity, which neither trace-time folding nor the compiler
# looks through (``lax.optimization_barrier``; stablehlo.optimization_barrier). Linear.
optimization_barrier = define_elementwise(
    "optimization_barrier", impl=lambda x: x, abstract_eval=lambda x: x,
    lower=lambda ctx, x: ctx.barrier(x),
    family="barrier", doc="The identity, opaque to folding and to the compiler's fusion.",
    **linear("lax.optimization_barrier({t})", "lax.optimization_barrier({t})"))


# stop_gradient(x): the identity, whose output the transforms treat as a constant (it is
# not differentiable, so no cotangent flows back through it; ``lax.stop_gradient``).
stop_gradient = define_elementwise(
    "stop_gradient", impl=lambda x: x, abstract_eval=lambda x: x, lower=lambda ctx, x: x,
    differentiable=False, family="elementwise",
    doc="The identity; reverse mode treats its output as a constant.")
