"""Shape primitives: reshape, broadcast_to, transpose, concatenate, pad, rev, slice.

Each is linear: its JVP applies it to the tangent and its VJP is its transpose
(derivative_forms.linear). Every batching rule moves the batch axis of its operand to the
front (`move_to_front`), applies the primitive with its axis parameters shifted by one and
the batch size prepended to its shape parameters, and reports the batch axis of the result
as 0. The rules use primitives only, so they run eagerly and stage under jit.
"""

from __future__ import annotations

import builtins
from typing import Any, Optional, Sequence

import numpy as np
from iree.compiler import ir

from transpiler import dtypes
from transpiler.lowering.builder import LoweringContext, i64_array, tensor_type
from transpiler.primitives import conversions as cv
from transpiler.primitives.batching import batch_size, materialize, move_to_front
from transpiler.primitives.core import (ShapedArray, abstractify, define, promote_avals,
                                        shape_error)
from transpiler.primitives.derivative_forms import linear
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template


# reshape(x, new_sizes): row-major, sizes fully static (no -1 here; jnp.reshape resolves it).
def _reshape_eval(x: ShapedArray, *, new_sizes: tuple[int, ...]) -> ShapedArray:
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise shape_error(f"cannot reshape array of shape {list(x.shape)} (size {x.size}) "
                          f"into shape {list(new_sizes)}")
    return x.update(shape=tuple(new_sizes))


reshape = define(
    "reshape",
    impl=lambda x, *, new_sizes: np.reshape(x, new_sizes),
    abstract_eval=_reshape_eval,
    lower=lambda ctx, x, *, new_sizes: ctx.reshape(x, ctx.aval_out.dtype, new_sizes),
    family="structural")


# broadcast_to(x, shape): NumPy broadcasting to an explicit shape.
def _broadcast_eval(x: ShapedArray, *, shape: tuple[int, ...]) -> ShapedArray:
    ok = len(shape) >= x.ndim and all(
        d == s or d == 1 for d, s in zip(x.shape[::-1], tuple(shape)[::-1]))
    if not ok:
        raise shape_error(f"cannot broadcast an array of shape {list(x.shape)} to shape "
                          f"{list(shape)}", "dimensions must match or be 1, aligned from "
                          "the right")
    return x.update(shape=tuple(shape))


broadcast_to = define(
    "broadcast_to",
    impl=lambda x, *, shape: np.broadcast_to(x, shape),
    abstract_eval=_broadcast_eval,
    lower=lambda ctx, x, *, shape: ctx.broadcast(x, ctx.avals_in[0], shape),
    family="structural")


# transpose(x, permutation)
def _transpose_eval(x: ShapedArray, *, permutation: tuple[int, ...]) -> ShapedArray:
    if sorted(permutation) != list(range(x.ndim)):
        raise shape_error(f"transpose: axes {tuple(permutation)} are not a permutation of "
                          f"the {x.ndim} axes of an array of shape {list(x.shape)}")
    return x.update(shape=tuple(x.shape[p] for p in permutation))


def _transpose_lower(ctx: LoweringContext, x: Any, *, permutation: Sequence[int]) -> Any:
    if list(permutation) == list(range(len(permutation))):
        return x
    return ctx.op("stablehlo.transpose", [x], attributes={"permutation": i64_array(permutation)})


transpose = define(
    "transpose",
    impl=lambda x, *, permutation: np.transpose(x, permutation),
    abstract_eval=_transpose_eval,
    lower=_transpose_lower,
    family="structural")



# concatenate(*operands, axis): join along an existing axis; dtypes are promoted like JAX.
def _concatenate_eval(*xs: ShapedArray, axis: int) -> ShapedArray:
    if not xs:
        raise shape_error("concatenate: need at least one array to concatenate")
    first = xs[0]
    if first.ndim == 0:
        raise shape_error("concatenate: zero-dimensional arrays cannot be concatenated",
                          "use jnp.stack, or reshape the scalars to shape (1,) first")
    if not 0 <= axis < first.ndim:
        raise shape_error(f"concatenate: axis {axis} is out of bounds for arrays of rank "
                          f"{first.ndim}")
    for x in xs[1:]:
        same = x.ndim == first.ndim and all(
            a == b for i, (a, b) in enumerate(zip(x.shape, first.shape)) if i != axis)
        if not same:
            raise shape_error(f"concatenate: cannot concatenate arrays of shapes "
                              f"{list(first.shape)} and {list(x.shape)} along axis {axis}",
                              "all dimensions except the concatenation axis must match")
    dtype, weak = promote_avals(*xs)
    shape = list(first.shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return ShapedArray(tuple(shape), dtype, weak)


def _concatenate_impl(*xs: np.ndarray, axis: int) -> np.ndarray:
    dtype = _concatenate_eval(*[ShapedArray(x.shape, x.dtype) for x in xs], axis=axis).dtype
    return np.concatenate([x.astype(dtype, copy=False) for x in xs], axis=axis)


def _concatenate_lower(ctx: LoweringContext, *xs: Any, axis: int) -> Any:
    out = ctx.aval_out
    xs = tuple(ctx.convert(x, aval, out.dtype) for x, aval in zip(xs, ctx.avals_in))
    if len(xs) == 1:
        return xs[0]
    return ctx.op("stablehlo.concatenate", list(xs), attributes={"dimension": _i64(axis)})


concatenate = define("concatenate", impl=_concatenate_impl, abstract_eval=_concatenate_eval,
                     lower=_concatenate_lower)


# pad(x, padding_value, low, high, interior): lax.pad; negative low/high crop. The result
# has x's dtype (the padding value is converted to it).
def _pad_eval(x: ShapedArray, value: ShapedArray, *, low: tuple[int, ...],
              high: tuple[int, ...], interior: tuple[int, ...]) -> ShapedArray:
    if value.ndim != 0:
        raise shape_error(f"pad: the padding value must be a scalar, got shape {list(value.shape)}")
    if not len(low) == len(high) == len(interior) == x.ndim:
        raise shape_error(f"pad: low {tuple(low)}, high {tuple(high)} and interior "
                          f"{tuple(interior)} must each have one entry per axis of an array "
                          f"of shape {list(x.shape)}")
    if any(i < 0 for i in interior):
        raise shape_error(f"pad: interior padding must be non-negative, got {tuple(interior)}")
    shape = tuple(lo + hi + n + max(n - 1, 0) * it
                  for n, lo, hi, it in zip(x.shape, low, high, interior))
    if any(d < 0 for d in shape):
        raise shape_error(f"pad: padding {tuple(zip(low, high))} of an array of shape "
                          f"{list(x.shape)} gives a negative size {list(shape)}")
    return x.update(shape=shape)


def _pad_impl(x: np.ndarray, value: np.ndarray, *, low: tuple[int, ...],
              high: tuple[int, ...], interior: tuple[int, ...]) -> np.ndarray:
    value = value.astype(x.dtype)
    # 1. interior padding: scatter x with strides into an array filled with `value`
    spread = tuple(n + max(n - 1, 0) * it for n, it in zip(x.shape, interior))
    out = np.full(spread, value, dtype=x.dtype)
    out[tuple(slice(None, None, it + 1) for it in interior)] = x
    # 2. positive edges by np.pad, then negative edges by slicing
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high)]
    out = np.pad(out, widths, constant_values=value)
    crop = tuple(slice(-min(lo, 0), out.shape[d] + min(hi, 0))
                 for d, (lo, hi) in enumerate(zip(low, high)))
    return out[crop]


def _pad_lower(ctx: LoweringContext, x: Any, value: Any, *, low: tuple[int, ...],
               high: tuple[int, ...], interior: tuple[int, ...]) -> Any:
    aval, out = ctx.avals_in[0], ctx.aval_out
    value = ctx.convert(value, ctx.avals_in[1], out.dtype)
    attributes = {"edge_padding_low": i64_array(low), "edge_padding_high": i64_array(high),
                  "interior_padding": i64_array(interior)}
    if dtypes.is_complex(out.dtype):
        # One pad per part: IREE 3.13 materializes a complex pad value as a splat it cannot
        # build for complex128 ("'stream.async.splat' op operand ... got 'i128'").
        part = out.update(dtype=dtypes.real_dtype(out.dtype))
        pads = [ctx.op("stablehlo.pad", [p, v], part, attributes) for p, v in
                zip(ctx.complex_parts(x, aval), ctx.complex_parts(value, ShapedArray((), out.dtype)))]
        return ctx.op("stablehlo.complex", pads)
    return ctx.op("stablehlo.pad", [x, value], attributes=attributes)


pad = define("pad", impl=_pad_impl, abstract_eval=_pad_eval, lower=_pad_lower)


# rev(x, dimensions): reverse the order of elements along `dimensions`.
def _rev_eval(x: ShapedArray, *, dimensions: tuple[int, ...]) -> ShapedArray:
    if len(set(dimensions)) != len(dimensions) or any(
            not 0 <= d < x.ndim for d in dimensions):
        raise shape_error(f"rev: dimensions {tuple(dimensions)} must be distinct axes of an "
                          f"array of shape {list(x.shape)}")
    return x


def _rev_lower(ctx: LoweringContext, x: Any, *, dimensions: tuple[int, ...]) -> Any:
    if not dimensions:
        return x
    return ctx.op("stablehlo.reverse", [x], attributes={"dimensions": i64_array(dimensions)})


rev = define("rev", impl=lambda x, *, dimensions: np.flip(x, tuple(dimensions)),
             abstract_eval=_rev_eval, lower=_rev_lower, family="structural")


# slice(x, start_indices, limit_indices, strides): a static strided window (lax.slice).
# Registered as "slice"; the Python name is `slice_` so as not to shadow the builtin.
def _slice_eval(x: ShapedArray, *, start_indices: tuple[int, ...],
                limit_indices: tuple[int, ...],
                strides: Optional[tuple[int, ...]] = None) -> ShapedArray:
    strides = tuple(strides) if strides is not None else (1,) * x.ndim
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        raise shape_error(f"slice: start_indices {tuple(start_indices)}, limit_indices "
                          f"{tuple(limit_indices)} and strides {strides} must each have one "
                          f"entry per axis of an array of shape {list(x.shape)}")
    for n, start, limit, stride in zip(x.shape, start_indices, limit_indices, strides):
        if not 0 <= start <= limit <= n or stride < 1:
            raise shape_error(f"slice: start_indices {tuple(start_indices)}, limit_indices "
                              f"{tuple(limit_indices)}, strides {strides} do not fit an array "
                              f"of shape {list(x.shape)}",
                              "need 0 <= start <= limit <= size and stride >= 1 on every axis")
    shape = tuple(-(-(limit - start) // stride)
                  for start, limit, stride in zip(start_indices, limit_indices, strides))
    return x.update(shape=shape)


def _slice_impl(x: np.ndarray, *, start_indices: tuple[int, ...],
                limit_indices: tuple[int, ...],
                strides: Optional[tuple[int, ...]] = None) -> np.ndarray:
    strides = tuple(strides) if strides is not None else (1,) * x.ndim
    return x[tuple(builtins.slice(s, e, k)
                   for s, e, k in zip(start_indices, limit_indices, strides))]


def _slice_lower(ctx: LoweringContext, x: Any, *, start_indices: tuple[int, ...],
                 limit_indices: tuple[int, ...],
                 strides: Optional[tuple[int, ...]] = None) -> Any:
    aval = ctx.avals_in[0]
    strides = tuple(strides) if strides is not None else (1,) * aval.ndim
    if ctx.aval_out.shape == aval.shape and all(s == 0 for s in start_indices):
        return x
    return ctx.op("stablehlo.slice", [x], attributes={
        "start_indices": i64_array(start_indices), "limit_indices": i64_array(limit_indices),
        "strides": i64_array(strides)})


slice_ = define("slice", impl=_slice_impl, abstract_eval=_slice_eval, lower=_slice_lower,
                family="structural")


def _i64(value: int) -> Any:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))


# --- batching rules -------------------------------------------------------------------------

Dims = Sequence[Optional[int]]
Result = tuple[Any, Optional[int]]


def _unbatched(dims: Dims) -> bool:
    return all(d is None for d in dims)


def _reshape_rule(args: Sequence[Any], dims: Dims, *, new_sizes: tuple[int, ...]) -> Result:
    (x,), (d,) = args, dims
    if d is None:
        return reshape(x, new_sizes=new_sizes), None
    size = batch_size(args, dims)
    return reshape(move_to_front(x, d), new_sizes=(size, *new_sizes)), 0


def _broadcast_to_rule(args: Sequence[Any], dims: Dims, *, shape: tuple[int, ...]) -> Result:
    (x,), (d,) = args, dims
    if d is None:
        return broadcast_to(x, shape=shape), None
    size = batch_size(args, dims)
    x = move_to_front(x, d)
    inner = abstractify(x).shape[1:]
    extra = len(shape) - len(inner)
    if extra > 0:  # singleton axes after the batch axis keep `inner` right-aligned
        x = reshape(x, new_sizes=(size, *(1,) * extra, *inner))
    return broadcast_to(x, shape=(size, *shape)), 0


def _transpose_rule(args: Sequence[Any], dims: Dims, *,
                    permutation: tuple[int, ...]) -> Result:
    (x,), (d,) = args, dims
    if d is None:
        return transpose(x, permutation=permutation), None
    # fold the move of the batch axis to the front into the one transpose
    ndim = abstractify(x).ndim
    rest = [i for i in range(ndim) if i != d]
    perm = (d, *(rest[p] for p in permutation))
    return transpose(x, permutation=perm), 0


def _concatenate_rule(args: Sequence[Any], dims: Dims, *, axis: int) -> Result:
    if _unbatched(dims):
        return concatenate(*args, axis=axis), None
    size = batch_size(args, dims)
    xs = [materialize(x, d, size) for x, d in zip(args, dims)]
    return concatenate(*xs, axis=axis + 1), 0


def _pad_rule(args: Sequence[Any], dims: Dims, *, low: tuple[int, ...],
              high: tuple[int, ...], interior: tuple[int, ...]) -> Result:
    (x, value), (dx, dv) = args, dims
    if dx is None and dv is None:
        return pad(x, value, low=low, high=high, interior=interior), None
    size = batch_size(args, dims)
    low1, high1, interior1 = (0, *low), (0, *high), (0, *interior)
    if dv is None:  # one padding value for the whole batch
        return pad(move_to_front(x, dx), value, low=low1, high=high1,
                      interior=interior1), 0
    # a padding value per batch member: pad x with anything, then select the members'
    # values where a padded mask of x's (unbatched) shape is False
    x = materialize(x, dx, size)
    aval = abstractify(x)
    inner = aval.shape[1:]
    padded = pad(x, np.zeros((), aval.dtype), low=low1, high=high1, interior=interior1)
    mask = broadcast_to(np.bool_(True), shape=inner)
    mask = pad(mask, np.bool_(False), low=low, high=high, interior=interior)
    values = cv.convert_element_type(value, dtype=aval.dtype, weak_type=aval.weak_type)
    values = reshape(values, new_sizes=(size, *(1,) * len(inner)))
    return cv.select(mask, padded, values), 0


def _rev_rule(args: Sequence[Any], dims: Dims, *, dimensions: tuple[int, ...]) -> Result:
    (x,), (d,) = args, dims
    if d is None:
        return rev(x, dimensions=dimensions), None
    return rev(move_to_front(x, d), dimensions=tuple(a + 1 for a in dimensions)), 0


def _slice_rule(args: Sequence[Any], dims: Dims, *, start_indices: tuple[int, ...],
                limit_indices: tuple[int, ...],
                strides: Optional[tuple[int, ...]] = None) -> Result:
    (x,), (d,) = args, dims
    if d is None:
        return slice_(x, start_indices=start_indices, limit_indices=limit_indices,
                         strides=strides), None
    size = batch_size(args, dims)
    return slice_(move_to_front(x, d), start_indices=(0, *start_indices),
                     limit_indices=(size, *limit_indices),
                     strides=None if strides is None else (1, *strides)), 0


# --- the rules of each primitive: derivatives (linear) and batching ------------------------

reshape.def_rules(batch=_reshape_rule,
                  **linear("jnp.reshape({t}, new_sizes)", "jnp.reshape({t}, jnp.shape(x))"))
broadcast_to.def_rules(batch=_broadcast_to_rule,
                       **linear("jnp.broadcast_to({t}, shape)", "ad.unbroadcast_like({t}, x)"))
transpose.def_rules(batch=_transpose_rule,
                    **linear("jnp.transpose({t}, permutation)",
                             "jnp.transpose({t}, ad.inverse_permutation(permutation))"))
rev.def_rules(batch=_rev_rule, **linear("ad.rev({t}, dimensions)", "ad.rev({t}, dimensions)"))
slice_.def_rules(batch=_slice_rule,
                 **linear("ad.slice_tangent({t}, start_indices, limit_indices, strides)",
                          "ad.unslice({t}, jnp.shape(x), start_indices, limit_indices, strides)"))
concatenate.def_rules(
    batch=_concatenate_rule,
    jvp=jvp_template(("*xs",), xs="ad.concatenate_tangents(xs_dot, xs, axis)"),
    vjp=vjp_template(("*xs",), "xs_bar = ad.split_concatenated(out_bar, xs, axis)"))
pad.def_rules(
    batch=_pad_rule,
    jvp=jvp_template(("x", "value"), x="ad.pad_tangent(x_dot, None, low, high, interior)",
                     value="ad.pad_value_tangent(value_dot, x, low, high, interior)"),
    vjp=vjp_template(("x", "value"), """
x_bar = ad.unpad(out_bar, low, high, interior)
value_bar = ad.pad_value_cotangent(out_bar, low, high, interior, value)
"""))

__all__ = ["reshape", "broadcast_to", "transpose", "concatenate", "pad", "rev", "slice_",
           "tensor_type"]
