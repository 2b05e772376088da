"""Sorting primitives: the values of one array in order, and the permutation that sorts
several keys.

=====================  ========================================  ==========================
primitive              params                                    result
=====================  ========================================  ==========================
``sort``               ``dimension``, ``descending``             `x`'s aval, sorted along
                                                                 `dimension`
``sort_permutation``   ``dimension``, ``descending``,            ``index_dtype``, the
                       ``index_dtype``                           operands' shape
=====================  ========================================  ==========================

``sort_permutation(*keys)`` is the stable, lexicographic order of its keys (the first key
decides, the next breaks its ties, ...) along `dimension`: ``take_along_axis(k, perm)``
sorts every operand, so `lax.sort` of several operands, `argsort`, `lexsort` and `top_k`
are gathers by it. `sort` (values only) is a primitive of its own because it is the common
case and costs half: its derivative gathers the tangent by the permutation of `x`
(declared with it below), which is where the order of ties -- JAX's: stable -- matters.

The order is NumPy's and JAX's total order: NaN after every number (first when
descending), -0.0 equal to 0.0; bools sort False first; integers by value.

Lowering: IREE 3.13 lowers ``stablehlo.sort`` to a quadratic loop on CPU (a 16,000-element
sort took 180 ms, 4,000 took 16 ms), so an axis longer than `NATIVE_SORT_MAX` sorts by a
bitonic network of compare-exchange steps (``log2(n) * (log2(n) + 1) / 2`` elementwise
steps over the whole array, each a reshape, two slices, a compare and selects), padded to a
power of two with elements that sort last. The permutation compares the operand index
after the keys, in both, which makes the order total and so equal to the stable one
(IREE's sort ignores ``is_stable``).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
from iree.compiler import ir

from transpiler import dtypes
from transpiler.lowering.builder import LoweringContext, i64_array, tensor_type
from transpiler.primitives.batching import batch_axis, batch_size, materialize, shift_axes
from transpiler.primitives.core import ShapedArray, define, dtype_error, shape_error
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template

# Axes up to this length use IREE's own sort (quadratic, but one dispatch); longer ones
# the bitonic network.
NATIVE_SORT_MAX = 128


# --- abstract evaluation --------------------------------------------------------------------

def _check(name: str, aval: ShapedArray, dimension: int) -> None:
    if aval.ndim == 0:
        raise shape_error(f"{name}: cannot sort a 0-d array", "sort an array of rank 1 or more")
    if not 0 <= dimension < aval.ndim:
        raise shape_error(f"{name}: dimension {dimension} is out of range for an array of "
                          f"rank {aval.ndim}")
    if aval.dtype.kind == "c":
        raise dtype_error(f"{name}: sorting {aval.dtype} is not supported",
                          "sort the real and imaginary parts as two keys (lexsort)")


def _sort_eval(x: ShapedArray, *, dimension: int, descending: bool = False) -> ShapedArray:
    _check("sort", x, dimension)
    return x


def _permutation_eval(*keys: ShapedArray, dimension: int, descending: bool = False,
                      index_dtype: np.dtype = dtypes.int32) -> ShapedArray:
    if not keys:
        raise shape_error("sort_permutation needs at least one key")
    shapes = {k.shape for k in keys}
    if len(shapes) != 1:
        raise shape_error(f"sort_permutation: the keys must have one shape, got "
                          f"{[list(k.shape) for k in keys]}")
    for key in keys:
        _check("sort_permutation", key, dimension)
    if not dtypes.is_int(np.dtype(index_dtype)):
        raise dtype_error(f"sort_permutation: index_dtype must be an integer type, got "
                          f"{index_dtype}")
    return ShapedArray(keys[0].shape, np.dtype(index_dtype))


# --- eager ----------------------------------------------------------------------------------

def _permutation_impl(*keys: np.ndarray, dimension: int, descending: bool = False,
                      index_dtype: np.dtype = dtypes.int32) -> np.ndarray:
    """np.lexsort (stable, NaN last); descending as JAX: sort the reversed keys, reverse
    the result and count positions from the other end, so ties keep their order."""
    moved = [np.moveaxis(k, dimension, -1) for k in keys]
    if descending:
        moved = [k[..., ::-1] for k in moved]
    perm = np.lexsort(moved[::-1], axis=-1)
    if descending:
        perm = moved[0].shape[-1] - 1 - perm[..., ::-1]
    return np.moveaxis(perm, -1, dimension).astype(index_dtype)


def _sort_impl(x: np.ndarray, *, dimension: int, descending: bool = False) -> np.ndarray:
    out = np.sort(x, axis=dimension, kind="stable")
    return np.flip(out, dimension) if descending else out


# --- lowering -------------------------------------------------------------------------------

def _scalar_ops(ctx: LoweringContext, dtype: np.dtype, shape: Sequence[int]) -> tuple:
    """(before, equal) for one key of `dtype`: ``before(a, b, descending)`` -- `a` sorts
    strictly before `b` -- and ``equal(a, b)``, as bool tensors of `shape`."""
    boolean = tensor_type(shape, dtypes.bool_)

    def both(kind: str, a: Any, b: Any) -> Any:
        return ctx.op(f"stablehlo.{kind}", [a, b], boolean)

    def nan(a: Any) -> Any:
        return ctx.compare(a, a, "NE", dtype, shape)

    def before(a: Any, b: Any, descending: bool) -> Any:
        plain = ctx.compare(a, b, "GT" if descending else "LT", dtype, shape)
        if not dtypes.is_float(dtype):
            return plain
        first, second = (a, b) if descending else (b, a)  # the NaN goes `first` ... second
        not_nan = ctx.op("stablehlo.not", [nan(second)], boolean)
        return both("or", plain, both("and", nan(first), not_nan))

    def equal(a: Any, b: Any) -> Any:
        same = ctx.compare(a, b, "EQ", dtype, shape)
        return both("or", same, both("and", nan(a), nan(b))) if dtypes.is_float(dtype) else same

    return before, equal


def _before(ctx: LoweringContext, lhs: Sequence[Any], rhs: Sequence[Any],
            key_dtypes: Sequence[np.dtype], descending: Sequence[bool],
            shape: Sequence[int]) -> Any:
    """Whether `lhs` sorts strictly before `rhs` in the lexicographic order of the keys."""
    boolean = tensor_type(shape, dtypes.bool_)
    result = None
    for a, b, dtype, down in reversed(list(zip(lhs, rhs, key_dtypes, descending))):
        before, equal = _scalar_ops(ctx, dtype, shape)
        strictly = before(a, b, down)
        if result is None:
            result = strictly
        else:
            tied = ctx.op("stablehlo.and", [equal(a, b), result], boolean)
            result = ctx.op("stablehlo.or", [strictly, tied], boolean)
    return result


def _native(ctx: LoweringContext, operands: Sequence[Any], op_dtypes: Sequence[np.dtype],
            shape: Sequence[int], dimension: int, directions: Sequence[bool]) -> list:
    """One ``stablehlo.sort`` by the first ``len(directions)`` operands, each descending or
    not (IREE: quadratic in the axis length; ``is_stable`` is not kept: ties come out in any
    order, so a stable result compares the index last)."""
    num_keys = len(directions)
    # IREE 3.13 fails to compile a sort whose operand is a slice of a larger array (the
    # slice fused into the sort's dispatch, or into a gather reading the sort's result:
    # "LLVM Translation failed for operation: builtin.unrealized_conversion_cast");
    # barriers keep the sort's producers and consumers out of its dispatch.
    operands = [ctx.barrier(x) for x in operands]
    op = ctx.op("stablehlo.sort", list(operands), [tensor_type(shape, d) for d in op_dtypes],
                {"dimension": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dimension),
                 "is_stable": ir.BoolAttr.get(True)}, regions=1)
    scalars = [tensor_type((), d) for d in op_dtypes for _ in (0, 1)]
    block = op.regions[0].blocks.append(*scalars)
    with ir.InsertionPoint(block):
        args = list(block.arguments)
        lhs, rhs = args[0:2 * num_keys:2], args[1:2 * num_keys:2]
        less = _before(ctx, lhs, rhs, op_dtypes[:num_keys], directions, ())
        ir.Operation.create("stablehlo.return", operands=[less])
    return [ctx.barrier(x) for x in op.results]


def _last_value(dtype: np.dtype, descending: bool) -> Any:
    """An element that sorts after every other (or ties with the last)."""
    if dtype == dtypes.bool_:
        return not descending
    if dtypes.is_float(dtype):
        return -np.inf if descending else np.nan
    info = np.iinfo(dtype)
    return info.min if descending else info.max


def _i64(value: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def _bitonic(ctx: LoweringContext, operands: Sequence[Any], op_dtypes: Sequence[np.dtype],
             shape: Sequence[int], dimension: int, directions: Sequence[bool]) -> list:
    """The operands sorted along `dimension` by a bitonic network (see the module doc),
    ordered by the first ``len(directions)`` of them, each descending or not. Pads sort
    last on every key; a result is stable only where the keys make the order total."""
    ndim = len(shape)
    order = [d for d in range(ndim) if d != dimension] + [dimension]
    rows = int(np.prod([shape[d] for d in order[:-1]], dtype=np.int64))
    n = shape[dimension]
    m = 1 << (n - 1).bit_length()
    originals = list(op_dtypes)
    operands, op_dtypes = list(operands), list(op_dtypes)
    for i, dtype in enumerate(originals):
        if dtype.kind == "u":
            operands[i], op_dtypes[i] = _signed_order(ctx, operands[i], dtype, shape)
    flat = []
    for i, (x, dtype) in enumerate(zip(operands, op_dtypes)):
        if order != list(range(ndim)):
            x = ctx.op("stablehlo.transpose", [x], tensor_type([shape[d] for d in order], dtype),
                       {"permutation": i64_array(order)})
        x = ctx.reshape(x, dtype, (rows, n))
        if m != n:
            # IREE 3.13 fails to compile ("stream.yield op used resource not listed in
            # explicit captures") when one padded network's sliced result is padded for
            # the next (argsort of an argsort): the barrier keeps the two apart.
            x = ctx.barrier(x)
            last = _last_value(dtype, directions[i]) if i < len(directions) else 0
            x = ctx.op("stablehlo.pad", [x, ctx.constant(last, dtype)],
                       tensor_type((rows, m), dtype), {
                "edge_padding_low": i64_array((0, 0)), "edge_padding_high": i64_array((0, m - n)),
                "interior_padding": i64_array((0, 0))})
        flat.append(x)
    block = 2
    while block <= m:
        flat = _exchange(ctx, flat, op_dtypes, rows * m, block // 2, True, directions)
        half = block // 4
        while half >= 1:
            flat = _exchange(ctx, flat, op_dtypes, rows * m, half, False, directions)
            half //= 2
        block *= 2
    inverse = list(np.argsort(order))
    results = []
    for x, dtype in zip(flat, op_dtypes):
        x = ctx.reshape(x, dtype, (rows, m))
        if m != n:
            x = ctx.op("stablehlo.slice", [x], tensor_type((rows, n), dtype), {
                "start_indices": i64_array((0, 0)), "limit_indices": i64_array((rows, n)),
                "strides": i64_array((1, 1))})
        x = ctx.reshape(x, dtype, [shape[d] for d in order])
        if order != list(range(ndim)):
            x = ctx.op("stablehlo.transpose", [x], tensor_type(shape, dtype),
                       {"permutation": i64_array(inverse)})
        results.append(x)
    return [_unsigned_back(ctx, x, original, shape) if original.kind == "u" else x
            for x, original in zip(results, originals)]


def _exchange(ctx: LoweringContext, flat: list, op_dtypes: Sequence[np.dtype], size: int,
              half: int, flip: bool, directions: Sequence[bool]) -> list:
    """One step of the network: in every block of ``2 * half`` elements, element i of the
    first half is compared with element i of the second (with its mirror image, when
    `flip`) and the pair put in order."""
    groups = size // (2 * half)
    part = (groups, 1, half)
    lo_hi = []
    for x, dtype in zip(flat, op_dtypes):
        x = ctx.reshape(x, dtype, (groups, 2, half))
        lo, hi = (ctx.op("stablehlo.slice", [x], tensor_type(part, dtype), {
            "start_indices": i64_array((0, s, 0)),
            "limit_indices": i64_array((groups, s + 1, half)),
            "strides": i64_array((1, 1, 1))}) for s in (0, 1))
        if flip:
            hi = ctx.op("stablehlo.reverse", [hi], tensor_type(part, dtype),
                        {"dimensions": i64_array((2,))})
        lo_hi.append((lo, hi))
    keys = len(directions)
    swap = _before(ctx, [hi for _, hi in lo_hi[:keys]], [lo for lo, _ in lo_hi[:keys]],
                   op_dtypes[:keys], directions, part)
    out = []
    for (lo, hi), dtype in zip(lo_hi, op_dtypes):
        new_lo = ctx.op("stablehlo.select", [swap, hi, lo], tensor_type(part, dtype))
        new_hi = ctx.op("stablehlo.select", [swap, lo, hi], tensor_type(part, dtype))
        if flip:
            new_hi = ctx.op("stablehlo.reverse", [new_hi], tensor_type(part, dtype),
                            {"dimensions": i64_array((2,))})
        joined = ctx.op("stablehlo.concatenate", [new_lo, new_hi],
                        tensor_type((groups, 2, half), dtype), {"dimension": _i64(1)})
        out.append(ctx.reshape(joined, dtype, (size,)))
    return out


def _signed_order(ctx: LoweringContext, x: Any, dtype: np.dtype,
                  shape: Sequence[int]) -> tuple[Any, np.dtype]:
    """An unsigned `x` as the signed integers of its width in the same order (the bits with
    the top one flipped: ``u - 2^(w-1)``): IREE 3.13 cannot compile the network's compares
    and selects on unsigned tensors, and a 32-bit key shifted into the high half of an
    int64 must not overflow."""
    signed = np.dtype(f"i{dtype.itemsize}")
    bits = ctx.op("stablehlo.bitcast_convert", [x], tensor_type(shape, signed))
    flip = ctx.constant(np.iinfo(signed).min, signed, shape)
    return ctx.op("stablehlo.xor", [bits, flip], tensor_type(shape, signed)), signed


def _unsigned_back(ctx: LoweringContext, x: Any, dtype: np.dtype,
                   shape: Sequence[int]) -> Any:
    """The inverse of `_signed_order`."""
    signed = np.dtype(f"i{dtype.itemsize}")
    flip = ctx.constant(np.iinfo(signed).min, signed, shape)
    bits = ctx.op("stablehlo.xor", [x, flip], tensor_type(shape, signed))
    return ctx.op("stablehlo.bitcast_convert", [bits], tensor_type(shape, dtype))


def _ordered_key(ctx: LoweringContext, x: Any, dtype: np.dtype, shape: Sequence[int],
                 descending: bool) -> Any:
    """`x` as int64 whose order is the sort order: floats with -0.0 made 0.0 and every NaN
    the positive quiet NaN (JAX's canonical sort keys), their bits read as a signed integer
    with a negative's other bits flipped; integers and bools by value; negated (``~k``)
    when descending. (Signed: IREE 3.13 cannot compile some unsigned 64-bit ops.)"""
    i64 = np.dtype(np.int64)
    if dtype.kind == "u":
        x, dtype = _signed_order(ctx, x, dtype, shape)
    if dtypes.is_float(dtype):
        signed = np.dtype(f"i{dtype.itemsize}")
        st = tensor_type(shape, signed)
        zero = ctx.constant(0, dtype, shape)
        x = ctx.op("stablehlo.select", [ctx.compare(x, zero, "EQ", dtype, shape), zero, x],
                   tensor_type(shape, dtype))
        nan = ctx.compare(x, x, "NE", dtype, shape)
        x = ctx.op("stablehlo.select", [nan, ctx.constant(np.nan, dtype, shape), x],
                   tensor_type(shape, dtype))
        bits = ctx.op("stablehlo.bitcast_convert", [x], st)
        negative = ctx.compare(bits, ctx.constant(0, signed, shape), "LT", signed, shape)
        flipped = ctx.op("stablehlo.xor", [bits, ctx.constant(np.iinfo(signed).max, signed,
                                                              shape)], st)
        x, dtype = ctx.op("stablehlo.select", [negative, flipped, bits], st), signed
    key = ctx.op("stablehlo.convert", [x], tensor_type(shape, i64))
    return ctx.op("stablehlo.not", [key], tensor_type(shape, i64)) if descending else key


def _sort_lower(ctx: LoweringContext, x: Any, *, dimension: int,
                descending: bool = False) -> Any:
    (aval,) = ctx.avals_in
    if aval.shape[dimension] <= 1:
        return x
    if aval.shape[dimension] <= NATIVE_SORT_MAX:
        return _native(ctx, [x], [aval.dtype], aval.shape, dimension, [descending])[0]
    return _bitonic(ctx, [x], [aval.dtype], aval.shape, dimension, [descending])[0]


def _permutation_lower(ctx: LoweringContext, *keys: Any, dimension: int,
                       descending: bool = False, index_dtype: np.dtype = dtypes.int32) -> Any:
    avals, out = ctx.avals_in, ctx.aval_out
    shape, idt = out.shape, out.dtype
    key_dtypes = [a.dtype for a in avals]
    n = shape[dimension]
    if n <= 1:
        return ctx.constant(0, idt, shape)
    index = ctx.op("stablehlo.iota", [], tensor_type(shape, dtypes.int32),
                   {"iota_dimension": _i64(dimension)})
    if n > NATIVE_SORT_MAX and len(keys) == 1 and key_dtypes[0].itemsize <= 4:
        # One key of 32 bits or less: key and index packed into one int64 (key high, index
        # low) whose order is the stable order -- the network moves and compares one
        # operand instead of two (4x faster at 10^6 elements).
        i64 = np.dtype(np.int64)
        t64 = tensor_type(shape, i64)
        key = _ordered_key(ctx, keys[0], key_dtypes[0], shape, descending)
        high = ctx.op("stablehlo.shift_left", [key, ctx.constant(32, i64, shape)], t64)
        packed = ctx.op("stablehlo.or", [high, ctx.op("stablehlo.convert", [index], t64)], t64)
        (packed,) = _bitonic(ctx, [packed], [i64], shape, dimension, [False])
        low = ctx.op("stablehlo.and", [packed, ctx.constant(0xFFFFFFFF, i64, shape)], t64)
        return ctx.op("stablehlo.convert", [low], tensor_type(shape, idt))
    operands, op_dtypes = [*keys, index], [*key_dtypes, dtypes.int32]
    directions = [descending] * len(keys) + [False]  # the index breaks ties: a stable order
    if n <= NATIVE_SORT_MAX:
        result = _native(ctx, operands, op_dtypes, shape, dimension, directions)[-1]
    else:
        result = _bitonic(ctx, operands, op_dtypes, shape, dimension, directions)[-1]
    return ctx.convert(result, ShapedArray(shape, dtypes.int32), idt)


# --- batching: along the renumbered dimension; the keys of a permutation are all given the
# batch axis first (unbatched ones broadcast along it).

def _sort_rule(args: Sequence[Any], dims: Sequence[Optional[int]], *, dimension: int,
               **params: Any) -> tuple[Any, Optional[int]]:
    (x,), (d,) = args, dims
    if d is None:
        return sort(x, dimension=dimension, **params), None
    d = batch_axis(x, d)
    (new_dimension,) = shift_axes((dimension,), d)
    return sort(x, dimension=new_dimension, **params), d


def _permutation_rule(args: Sequence[Any], dims: Sequence[Optional[int]], *, dimension: int,
                      **params: Any) -> tuple[Any, Optional[int]]:
    if all(d is None for d in dims):
        return sort_permutation(*args, dimension=dimension, **params), None
    size = batch_size(args, dims)
    keys = [materialize(k, None if d is None else batch_axis(k, d), size)
            for k, d in zip(args, dims)]
    return sort_permutation(*keys, dimension=dimension + 1, **params), 0


# The tangent is put in the order the sort put x (stable: tied elements keep their order,
# reversed when descending -- JAX's rule); the cotangent is moved back.
sort = define(
    "sort", impl=_sort_impl, abstract_eval=_sort_eval, lower=_sort_lower, batch=_sort_rule,
    jvp=jvp_template(("x",), x="ad.sorted_tangent(x_dot, x, dimension, descending)"),
    vjp=vjp_template(("x",), "x_bar = ad.unsorted_cotangent(out_bar, x, dimension, descending)"),
    doc="`x` sorted along `dimension` (NaN last; first when descending).")
sort_permutation = define(
    "sort_permutation", impl=_permutation_impl, abstract_eval=_permutation_eval,
    lower=_permutation_lower, differentiable=False, batch=_permutation_rule,
    doc="The stable permutation that sorts the keys lexicographically along `dimension`.")
