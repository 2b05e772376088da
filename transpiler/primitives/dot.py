"""``dot_general``: the one contraction primitive (matmul, einsum, tensordot build on it).

``dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`` as in
``jax.lax.dot_general``. The result's dimensions are the batch dimensions, then lhs's free
dimensions, then rhs's free dimensions, each group in operand order.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
from iree.compiler import ir

from transpiler import dtypes
from transpiler.lowering.builder import LoweringContext, attr, tensor_type
from transpiler.primitives.batching import batch_axis, shift_axes
from transpiler.primitives.core import (ShapedArray, abstractify, define, dtype_error,
                                        promote_avals, shape_error)
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template

DimensionNumbers = tuple[tuple[tuple[int, ...], tuple[int, ...]],
                         tuple[tuple[int, ...], tuple[int, ...]]]


def normalize_dimension_numbers(dimension_numbers: Any) -> DimensionNumbers:
    """Turn any nesting of lists/ints into the hashable tuple form used as a param."""
    (lc, rc), (lb, rb) = dimension_numbers
    as_tuple = lambda dims: tuple(int(d) for d in dims)  # noqa: E731
    return (as_tuple(lc), as_tuple(rc)), (as_tuple(lb), as_tuple(rb))


def _free_dims(ndim: int, *used: Sequence[int]) -> list[int]:
    taken = {d for group in used for d in group}
    return [d for d in range(ndim) if d not in taken]


def _check_dims(side: str, aval: ShapedArray, kind: str, dims: Sequence[int]) -> None:
    for d in dims:
        if not 0 <= d < aval.ndim:
            raise shape_error(f"dot_general: {side} {kind} dimension {d} is out of range for "
                              f"{side} {aval.str_short()} of rank {aval.ndim}")


def check_dot_shapes(op: str, lhs: ShapedArray, rhs: ShapedArray,
                     dimension_numbers: DimensionNumbers) -> tuple[int, ...]:
    """Validate `dimension_numbers` for `lhs`/`rhs`; returns the result shape.

    `op` is the user-facing name in the messages ("matmul", "einsum", "dot_general")."""
    (lc, rc), (lb, rb) = dimension_numbers
    for side, aval, kind, dims in (("lhs", lhs, "contracting", lc), ("rhs", rhs, "contracting", rc),
                                   ("lhs", lhs, "batch", lb), ("rhs", rhs, "batch", rb)):
        _check_dims(side, aval, kind, dims)
    for side, aval, cdims, bdims in (("lhs", lhs, lc, lb), ("rhs", rhs, rc, rb)):
        if len(set(cdims) | set(bdims)) != len(cdims) + len(bdims):
            raise shape_error(f"{op}: {side} dimensions repeat among contracting {list(cdims)} "
                              f"and batch {list(bdims)} for {side} {aval.str_short()}")
    for kind, ldims, rdims in (("contracting", lc, rc), ("batch", lb, rb)):
        if len(ldims) != len(rdims):
            raise shape_error(f"{op}: lhs and rhs need the same number of {kind} dimensions, "
                              f"got {list(ldims)} for lhs {lhs.str_short()} and {list(rdims)} "
                              f"for rhs {rhs.str_short()}")
        for ld, rd in zip(ldims, rdims):
            if lhs.shape[ld] != rhs.shape[rd]:
                raise shape_error(
                    f"{op}: {kind} dimensions differ: lhs {lhs.str_short()} dim {ld} "
                    f"({lhs.shape[ld]}) vs rhs {rhs.str_short()} dim {rd} ({rhs.shape[rd]})",
                    "contracted and batch dimensions must have equal sizes")
    batch = tuple(lhs.shape[d] for d in lb)
    lhs_free = tuple(lhs.shape[d] for d in _free_dims(lhs.ndim, lc, lb))
    rhs_free = tuple(rhs.shape[d] for d in _free_dims(rhs.ndim, rc, rb))
    return batch + lhs_free + rhs_free


def _result_dtype(lhs: ShapedArray, rhs: ShapedArray,
                  preferred_element_type: Optional[np.dtype]) -> tuple[np.dtype, np.dtype, bool]:
    """(operand dtype, result dtype, weak) of a dot_general."""
    dtype, weak = promote_avals(lhs, rhs)
    if preferred_element_type is None:
        return dtype, dtype, weak
    preferred = dtypes.check_supported(dtypes.canonicalize(preferred_element_type),
                                       "preferred_element_type")
    if dtypes.is_float(dtype) and not dtypes.is_float(preferred):
        raise dtype_error(f"dot_general: preferred_element_type {preferred} is not allowed for "
                          f"{dtype} operands", "use a floating preferred_element_type")
    return dtype, preferred, False


def _compute_dtype(operand: np.dtype, result: np.dtype) -> np.dtype:
    """The dtype the contraction runs in: half floats and bools go through wider types."""
    if operand in (dtypes.float16, dtypes.bfloat16):
        return dtypes.float32
    if operand == dtypes.bool_:
        return dtypes.int32 if result == dtypes.bool_ else result
    if dtypes.is_float(result) and not dtypes.is_float(operand):
        return result  # int operands with a float preferred type
    if result.itemsize > operand.itemsize and result.kind == operand.kind:
        return result  # e.g. int8 x int8 -> int32 accumulates in int32
    return operand


def _dot_eval(lhs: ShapedArray, rhs: ShapedArray, *, dimension_numbers: DimensionNumbers,
              preferred_element_type: Optional[np.dtype] = None) -> ShapedArray:
    shape = check_dot_shapes("dot_general", lhs, rhs, dimension_numbers)
    _, result, weak = _result_dtype(lhs, rhs, preferred_element_type)
    return ShapedArray(shape, result, weak)


def _dot_impl(lhs: np.ndarray, rhs: np.ndarray, *, dimension_numbers: DimensionNumbers,
              preferred_element_type: Optional[np.dtype] = None) -> np.ndarray:
    """Eager contraction through one batched ``np.matmul`` (B, M, K) @ (B, K, N)."""
    operand, result, _ = _result_dtype(ShapedArray(lhs.shape, lhs.dtype),
                                       ShapedArray(rhs.shape, rhs.dtype), preferred_element_type)
    work = _compute_dtype(operand, result)
    (lc, rc), (lb, rb) = dimension_numbers
    lf, rf = _free_dims(lhs.ndim, lc, lb), _free_dims(rhs.ndim, rc, rb)
    size = lambda x, dims: int(np.prod([x.shape[d] for d in dims], dtype=np.int64))  # noqa: E731
    b, m, k, n = size(lhs, lb), size(lhs, lf), size(lhs, lc), size(rhs, rf)
    lhs3 = np.transpose(lhs.astype(operand).astype(work), (*lb, *lf, *lc)).reshape(b, m, k)
    rhs3 = np.transpose(rhs.astype(operand).astype(work), (*rb, *rc, *rf)).reshape(b, k, n)
    with np.errstate(all="ignore"):
        out = np.matmul(lhs3, rhs3)
    shape = tuple(lhs.shape[d] for d in lb) + tuple(lhs.shape[d] for d in lf) + \
        tuple(rhs.shape[d] for d in rf)
    out = out.reshape(shape)
    if result == dtypes.bool_:
        return out != 0
    return out.astype(result)


def _dims_attr(dimension_numbers: DimensionNumbers) -> Any:
    (lc, rc), (lb, rb) = dimension_numbers
    show = lambda dims: "[" + ", ".join(str(d) for d in dims) + "]"  # noqa: E731
    return attr("#stablehlo.dot<"
                f"lhs_batching_dimensions = {show(lb)}, rhs_batching_dimensions = {show(rb)}, "
                f"lhs_contracting_dimensions = {show(lc)}, "
                f"rhs_contracting_dimensions = {show(rc)}>")


def _to_compute(ctx: LoweringContext, value: Any, aval: ShapedArray, operand: np.dtype,
                work: np.dtype) -> Any:
    """Convert an operand to the promoted dtype, then to the compute dtype. Bools become
    ``select(x, 1, 0)``: IREE's CPU data tiling cannot pack a converted i1 tensor."""
    value = ctx.convert(value, aval, operand)
    if operand == dtypes.bool_ and work != dtypes.bool_:
        return ctx.op("stablehlo.select", [value, ctx.constant(1, work, aval.shape),
                                           ctx.constant(0, work, aval.shape)],
                      tensor_type(aval.shape, work))
    return ctx.convert(value, aval.update(dtype=operand), work)


# How far back `_computed_by_reduction` looks through an operand's producers.
_PRODUCERS_SEEN = 32


def _computed_by_reduction(value: Any) -> bool:
    """Whether a `stablehlo.reduce` is among the ops that compute `value` (within
    `_PRODUCERS_SEEN` of them, in this region)."""
    pending, seen = [value], 0
    while pending and seen < _PRODUCERS_SEEN:
        current = pending.pop()
        owner = current.owner
        if not isinstance(owner, (ir.Operation, ir.OpView)):  # an argument of a block
            continue
        seen += 1
        if owner.name == "stablehlo.reduce":
            return True
        pending.extend(owner.operands)
    return False


def _unfused(ctx: LoweringContext, value: Any) -> Any:
    """`value` behind an optimization barrier. IREE 3.13 with data tiling miscompiles a
    batched dot_general whose operand a reduction computes in the same dispatch (a
    [3,4,2] x [3,2] batch from a max over axis 1 was off by up to 3.7; tests/
    test_jit_wrong_answers.py): the barrier keeps the producers in a dispatch of their own."""
    return ctx.barrier(value)


def _dot_lower(ctx: LoweringContext, lhs: Any, rhs: Any, *, dimension_numbers: DimensionNumbers,
               preferred_element_type: Optional[np.dtype] = None) -> Any:
    lhs_aval, rhs_aval = ctx.avals_in
    out = ctx.aval_out
    operand, result, _ = _result_dtype(lhs_aval, rhs_aval, preferred_element_type)
    work = _compute_dtype(operand, result)
    lhs = _to_compute(ctx, lhs, lhs_aval, operand, work)
    rhs = _to_compute(ctx, rhs, rhs_aval, operand, work)
    if dimension_numbers[1][0]:  # batched
        lhs, rhs = (_unfused(ctx, v) if _computed_by_reduction(v) else v for v in (lhs, rhs))
    product = lambda a, b, dtype: ctx.op(  # noqa: E731
        "stablehlo.dot_general", [a, b], tensor_type(out.shape, dtype),
        {"dot_dimension_numbers": _dims_attr(dimension_numbers)})
    if dtypes.is_complex(work):
        value = _complex_product(ctx, lhs, rhs, lhs_aval.update(dtype=work),
                                 rhs_aval.update(dtype=work), product)
    else:
        value = product(lhs, rhs, work)
    return ctx.convert(value, ShapedArray(out.shape, work), result)


def _complex_product(ctx: LoweringContext, lhs: Any, rhs: Any, lhs_aval: ShapedArray,
                     rhs_aval: ShapedArray, product: Any) -> Any:
    """A complex dot_general as four real ones, ``(a + ib)(c + id) = (ac - bd) + i(ad + bc)``:
    IREE 3.13 computed wrong values for complex dot_generals in unrolled Hessians (rows
    of ``jit(jacrev(grad(lambda x: sum(real(x @ w) ** 3))))`` past the first were wrong at
    every optimization level; tests/test_complex.py)."""
    part = dtypes.real_dtype(lhs_aval.dtype)
    (a, b), (c, d) = ctx.complex_parts(lhs, lhs_aval), ctx.complex_parts(rhs, rhs_aval)
    ac, bd, ad, bc = (product(x, y, part) for x, y in ((a, c), (b, d), (a, d), (b, c)))
    real = ctx.op("stablehlo.subtract", [ac, bd], ac.type)
    imag = ctx.op("stablehlo.add", [ad, bc], ac.type)
    return ctx.op("stablehlo.complex", [real, imag], tensor_type(
        ac.type.shape, lhs_aval.dtype))


# --- batching: with both operands batched, the two batch axes become a new leading pair of
# batch dimensions, so the result's batch axis is 0. With one operand batched, its batch
# axis is a free (non-contracting, non-batch) dimension of that operand; the result lists
# batch dims, then lhs free dims, then rhs free dims (each in operand order), which gives
# the result's batch axis.

def _free(ndim: int, contracting: Sequence[int], batch: Sequence[int]) -> list[int]:
    used = set(contracting) | set(batch)
    return [i for i in range(ndim) if i not in used]


def _dot_general_rule(args: Sequence[Any], dims: Sequence[Optional[int]], *,
                      dimension_numbers: Any, **params: Any) -> tuple[Any, Optional[int]]:
    lhs, rhs = args
    ld, rd = dims
    (lc, rc), (lb, rb) = normalize_dimension_numbers(dimension_numbers)
    if ld is None and rd is None:
        return dot_general(lhs, rhs, dimension_numbers=((lc, rc), (lb, rb)), **params), None
    if ld is not None:
        ld = batch_axis(lhs, ld)
        lc, lb = shift_axes(lc, ld), shift_axes(lb, ld)
    if rd is not None:
        rd = batch_axis(rhs, rd)
        rc, rb = shift_axes(rc, rd), shift_axes(rb, rd)
    out_dim: int
    if ld is not None and rd is not None:  # a new leading batch pair
        lb, rb = (ld, *lb), (rd, *rb)
        out_dim = 0
    elif ld is not None:  # a free dimension of lhs
        lhs_free = _free(abstractify(lhs).ndim, lc, lb)
        out_dim = len(lb) + lhs_free.index(ld)
    else:  # a free dimension of rhs
        assert rd is not None
        lhs_free = _free(abstractify(lhs).ndim, lc, lb)
        rhs_free = _free(abstractify(rhs).ndim, rc, rb)
        out_dim = len(lb) + len(lhs_free) + rhs_free.index(rd)
    out = dot_general(lhs, rhs, dimension_numbers=((lc, rc), (lb, rb)), **params)
    return out, out_dim


# Tangents are computed in the output's dtype (which a preferred_element_type param sets,
# when given). Cotangents contract out_bar with the other operand, transposed back to the
# operand's layout (JAX's _dot_general_transpose_lhs/rhs), cast to the operand's dtype
# (which also undoes a preferred_element_type).
dot_general = define(
    "dot_general", impl=_dot_impl, abstract_eval=_dot_eval, lower=_dot_lower,
    doc=__doc__ or "", batch=_dot_general_rule,
    jvp=jvp_template(("lhs", "rhs"),
                     lhs="ad.dot_general_tangent(lhs_dot, rhs, dimension_numbers, out)",
                     rhs="ad.dot_general_tangent(lhs, rhs_dot, dimension_numbers, out)"),
    vjp=vjp_template(("lhs", "rhs"), """
lhs_bar = ad.dot_transpose_lhs(out_bar, lhs, rhs, dimension_numbers)
rhs_bar = ad.dot_transpose_rhs(out_bar, lhs, rhs, dimension_numbers)
"""))

__all__ = ["dot_general", "check_dot_shapes", "normalize_dimension_numbers"]
