"""Indexing primitives: dynamic_slice, dynamic_update_slice, gather and scatter.

Out-of-bounds semantics follow JAX (and are identical eagerly and under ``jit``):

- ``dynamic_slice`` / ``dynamic_update_slice`` clamp their start indices so that the
  window fits inside the operand (StableHLO's own rule).
- ``gather`` clamps every index into ``[0, size - 1]``.
- ``scatter`` drops updates whose index is out of bounds (JAX's ``mode="drop"``).

None of them wraps negative indices: ``transpiler.numpy`` normalizes ``i < 0 -> i + n``
before binding them, exactly like ``jax.numpy`` does.

``gather(operand, indices)`` is NumPy advanced indexing of the *leading* ``k`` axes of
`operand` by an integer array of shape ``(..., k)``: the result has shape
``indices.shape[:-1] + operand.shape[k:]``. ``scatter(operand, indices, updates, mode=)``
is its inverse (``updates.shape == indices.shape[:-1] + operand.shape[k:]``) with the
combiner `mode` in ``"set" | "add" | "multiply" | "min" | "max"``.

With duplicate indices ``"set"`` keeps the *last* update eagerly (NumPy's rule), while the
order is unspecified under ``jit`` (XLA and IREE may apply updates in any order); the
other modes combine all duplicates, so they agree up to floating-point rounding.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
from iree.compiler import ir

from transpiler import dtypes
from transpiler.lowering.builder import LoweringContext, attr, i64_array, tensor_type
from transpiler.primitives import conversions as cv
from transpiler.primitives import elementwise as ew
from transpiler.primitives import shape as sp
from transpiler.primitives.batching import batch_size, materialize, move_to_front
from transpiler.primitives.core import ShapedArray, abstractify, define, dtype_error, shape_error
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template

SCATTER_MODES = ("set", "add", "multiply", "min", "max")


def _check_index_dtype(aval: ShapedArray, op: str, what: str = "indices") -> None:
    if not dtypes.is_int(aval.dtype):
        raise dtype_error(f"{op}: {what} must be integers, got {aval.dtype}",
                          "convert them with .astype(jnp.int32)")


def _index_type(avals: Sequence[ShapedArray]) -> np.dtype:
    """One integer type for a list of scalar indices (StableHLO wants them all alike)."""
    return dtypes.int64 if any(a.dtype.itemsize == 8 for a in avals) else dtypes.int32


# --- dynamic_slice(operand, *start_indices, slice_sizes) ------------------------------------
def _dynamic_slice_eval(operand: ShapedArray, *starts: ShapedArray,
                        slice_sizes: tuple[int, ...]) -> ShapedArray:
    if len(starts) != operand.ndim or len(slice_sizes) != operand.ndim:
        raise shape_error(f"dynamic_slice: an array of shape {list(operand.shape)} needs "
                          f"{operand.ndim} start indices and slice sizes, got {len(starts)} "
                          f"and {len(slice_sizes)}")
    for start in starts:
        _check_index_dtype(start, "dynamic_slice", "start indices")
        if start.ndim:
            raise shape_error(f"dynamic_slice: start indices must be scalars, got shape "
                              f"{list(start.shape)}")
    if any(not 0 <= s <= d for s, d in zip(slice_sizes, operand.shape)):
        raise shape_error(f"dynamic_slice: slice sizes {list(slice_sizes)} do not fit an "
                          f"array of shape {list(operand.shape)}")
    return operand.update(shape=tuple(slice_sizes))


def _clamped_starts(shape: Sequence[int], sizes: Sequence[int],
                    starts: Sequence[np.ndarray]) -> tuple[int, ...]:
    return tuple(int(np.clip(int(s), 0, d - n)) for s, d, n in zip(starts, shape, sizes))


def _dynamic_slice_impl(operand: np.ndarray, *starts: np.ndarray,
                        slice_sizes: tuple[int, ...]) -> np.ndarray:
    begin = _clamped_starts(operand.shape, slice_sizes, starts)
    return operand[tuple(slice(b, b + n) for b, n in zip(begin, slice_sizes))]


def _convert_indices(ctx: LoweringContext, values: Sequence[Any],
                     avals: Sequence[ShapedArray]) -> list[Any]:
    target = _index_type(avals)
    return [ctx.convert(v, a, target) for v, a in zip(values, avals)]


def _dynamic_slice_lower(ctx: LoweringContext, operand: Any, *starts: Any,
                         slice_sizes: tuple[int, ...]) -> Any:
    if ctx.aval_out.size == 0 or not starts:
        return ctx.constant(0, ctx.aval_out.dtype, ctx.aval_out.shape) if starts else operand
    starts_ = _convert_indices(ctx, starts, ctx.avals_in[1:])
    return ctx.op("stablehlo.dynamic_slice", [operand, *starts_],
                  attributes={"slice_sizes": i64_array(slice_sizes)})


dynamic_slice = define("dynamic_slice", impl=_dynamic_slice_impl,
                       abstract_eval=_dynamic_slice_eval, lower=_dynamic_slice_lower,
                       family="structural")


# --- dynamic_update_slice(operand, update, *start_indices) ---------------------------------
def _dynamic_update_slice_eval(operand: ShapedArray, update: ShapedArray,
                               *starts: ShapedArray) -> ShapedArray:
    if update.ndim != operand.ndim or len(starts) != operand.ndim or any(
            u > d for u, d in zip(update.shape, operand.shape)):
        raise shape_error(f"dynamic_update_slice: an update of shape {list(update.shape)} "
                          f"with {len(starts)} start indices does not fit an array of shape "
                          f"{list(operand.shape)}", "the update needs the operand's rank, "
                          "no larger sizes, and one scalar start index per axis")
    if update.dtype != operand.dtype:
        raise dtype_error(f"dynamic_update_slice: update dtype {update.dtype} differs from "
                          f"the operand's {operand.dtype}", "convert the update with .astype")
    for start in starts:
        _check_index_dtype(start, "dynamic_update_slice", "start indices")
        if start.ndim:
            raise shape_error("dynamic_update_slice: start indices must be scalars")
    return operand


def _dynamic_update_slice_impl(operand: np.ndarray, update: np.ndarray,
                               *starts: np.ndarray) -> np.ndarray:
    begin = _clamped_starts(operand.shape, update.shape, starts)
    out = operand.copy()
    out[tuple(slice(b, b + n) for b, n in zip(begin, update.shape))] = update
    return out


def _dynamic_update_slice_lower(ctx: LoweringContext, operand: Any, update: Any,
                                *starts: Any) -> Any:
    if ctx.avals_in[1].size == 0 or not starts:
        return operand if starts else update
    starts_ = _convert_indices(ctx, starts, ctx.avals_in[2:])
    return ctx.op("stablehlo.dynamic_update_slice", [operand, update, *starts_])


dynamic_update_slice = define("dynamic_update_slice", impl=_dynamic_update_slice_impl,
                              abstract_eval=_dynamic_update_slice_eval,
                              lower=_dynamic_update_slice_lower)


# --- gather(operand, indices): operand[indices[..., 0], ..., indices[..., k-1]] -------------
def _leading_index_count(operand: ShapedArray, indices: ShapedArray, op: str) -> int:
    _check_index_dtype(indices, op)
    if indices.ndim == 0 or not 1 <= indices.shape[-1] <= operand.ndim:
        raise shape_error(f"{op}: indices of shape {list(indices.shape)} must end in an axis "
                          f"of size 1..{operand.ndim} (one entry per indexed leading axis of "
                          f"an array of shape {list(operand.shape)})")
    k = indices.shape[-1]
    if indices.size and any(d == 0 for d in operand.shape[:k]):
        raise shape_error(f"{op}: cannot index into a zero-size axis of an array of shape "
                          f"{list(operand.shape)}")
    return k


def _gather_eval(operand: ShapedArray, indices: ShapedArray) -> ShapedArray:
    k = _leading_index_count(operand, indices, "gather")
    return operand.update(shape=indices.shape[:-1] + operand.shape[k:])


def _gather_impl(operand: np.ndarray, indices: np.ndarray) -> np.ndarray:
    k = indices.shape[-1]
    upper = np.array(operand.shape[:k], dtype=np.int64) - 1
    clamped = np.clip(indices.astype(np.int64), 0, np.maximum(upper, 0))
    return operand[tuple(np.moveaxis(clamped, -1, 0))]


def _dims(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _index_bounds(ctx: LoweringContext, idx: ShapedArray, sizes: Sequence[int],
                  offset: int = 0) -> Any:
    """``sizes[j] + offset`` broadcast along the last axis of an index array `idx`."""
    bounds = ctx.constant(np.array(sizes, dtype=np.int64) + offset, idx.dtype)
    return ctx.broadcast(bounds, ShapedArray((len(sizes),), idx.dtype), idx.shape)


def _computed(value: Any) -> bool:
    """Whether the MLIR `value` is computed (not a block argument or a constant)."""
    owner = getattr(value, "owner", None)
    name = getattr(getattr(owner, "operation", owner), "name", None)
    return isinstance(name, str) and name not in ("stablehlo.constant",
                                                  "stablehlo.optimization_barrier")


def _gather_lower(ctx: LoweringContext, operand: Any, indices: Any) -> Any:
    aval, idx = ctx.avals_in
    out = ctx.aval_out
    if out.size == 0:
        return ctx.constant(0, out.dtype, out.shape)
    k, batch = idx.shape[-1], idx.ndim - 1
    # StableHLO clamps gather indices, but IREE's CPU backend reads out of bounds: clamp here.
    indices = ctx.op("stablehlo.clamp", [ctx.constant(0, idx.dtype, idx.shape), indices,
                                         _index_bounds(ctx, idx, aval.shape[:k], -1)], idx)
    if _computed(operand):
        # IREE 3.13 fails to compile a gather whose operand is computed from a slice of a
        # larger array (``take_along_axis(x[..., 0] * 2, i)``: "LLVM Translation failed for
        # operation: builtin.unrealized_conversion_cast"); a barrier keeps the producers
        # out of the gather's dispatch.
        operand = ctx.barrier(operand)
    fields = []
    offset_dims = list(range(batch, batch + aval.ndim - k))
    if offset_dims:
        fields.append(f"offset_dims = {_dims(offset_dims)}")
    fields += [f"collapsed_slice_dims = {_dims(range(k))}",
               f"start_index_map = {_dims(range(k))}", f"index_vector_dim = {batch}"]
    return ctx.op("stablehlo.gather", [operand, indices], attributes={
        "dimension_numbers": attr(f"#stablehlo.gather<{', '.join(fields)}>"),
        "slice_sizes": i64_array((1,) * k + aval.shape[k:]),
        "indices_are_sorted": ir.BoolAttr.get(False)})


gather = define("gather", impl=_gather_impl, abstract_eval=_gather_eval, lower=_gather_lower)


# --- scatter(operand, indices, updates, mode): the inverse of gather ------------------------
_SCATTER_UFUNCS = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}
# StableHLO combiners; booleans combine with logic ops (add = or, multiply = and, ...).
_COMBINERS = {"add": ("stablehlo.add", "stablehlo.or"),
              "multiply": ("stablehlo.multiply", "stablehlo.and"),
              "min": ("stablehlo.minimum", "stablehlo.and"),
              "max": ("stablehlo.maximum", "stablehlo.or")}


def _scatter_eval(operand: ShapedArray, indices: ShapedArray, updates: ShapedArray, *,
                  mode: str) -> ShapedArray:
    if mode not in SCATTER_MODES:
        raise shape_error(f"scatter: unknown mode {mode!r}; expected one of {SCATTER_MODES}")
    k = _leading_index_count(operand, indices, "scatter")
    expected = indices.shape[:-1] + operand.shape[k:]
    if updates.shape != expected:
        raise shape_error(f"scatter: updates of shape {list(updates.shape)} do not match "
                          f"the indexed shape {list(expected)}")
    if updates.dtype != operand.dtype:
        raise dtype_error(f"scatter: updates dtype {updates.dtype} differs from the "
                          f"operand's {operand.dtype}", "convert the updates with .astype")
    if dtypes.is_complex(operand.dtype) and mode not in ("set", "add"):
        raise dtype_error(f"scatter {mode} of {operand.dtype} is not supported (set and add "
                          "are)", "scatter the real and imaginary parts separately")
    return operand


def _scatter_impl(operand: np.ndarray, indices: np.ndarray, updates: np.ndarray, *,
                  mode: str) -> np.ndarray:
    k = indices.shape[-1]
    work = np.float32 if operand.dtype in (dtypes.float16, dtypes.bfloat16) else operand.dtype
    out = operand.astype(work)  # a copy
    flat = indices.reshape(-1, k).astype(np.int64)
    values = updates.reshape((-1,) + operand.shape[k:]).astype(work)
    in_bounds = np.all((flat >= 0) & (flat < np.array(operand.shape[:k])), axis=1)
    where = tuple(flat[in_bounds].T)
    if mode == "set":
        out[where] = values[in_bounds]  # NumPy: the last of duplicate indices wins
    else:
        _SCATTER_UFUNCS[mode].at(out, where, values[in_bounds])
    return out


def _scatter_lower(ctx: LoweringContext, operand: Any, indices: Any, updates: Any, *,
                   mode: str) -> Any:
    """Scatter into a copy padded by one slot per indexed axis; out-of-bounds indices are
    redirected into the padding, which is sliced off again. StableHLO leaves out-of-bounds
    scatter to the implementation, so this makes "drop" explicit and portable."""
    aval, idx, upd = ctx.avals_in
    if upd.size == 0:
        return operand
    if dtypes.is_complex(aval.dtype):
        return _complex_scatter_lower(ctx, operand, indices, updates, mode)
    k, batch, rest = idx.shape[-1], idx.ndim - 1, aval.ndim - idx.shape[-1]
    bounds = _index_bounds(ctx, idx, aval.shape[:k])
    zero = ctx.constant(0, idx.dtype, idx.shape)
    outside = ctx.op("stablehlo.or", [ctx.compare(indices, zero, "LT", idx.dtype, idx.shape),
                                      ctx.compare(indices, bounds, "GE", idx.dtype, idx.shape)],
                     tensor_type(idx.shape, dtypes.bool_))
    indices = ctx.op("stablehlo.select", [outside, bounds, indices], idx)

    padded = aval.update(shape=tuple(d + 1 for d in aval.shape[:k]) + aval.shape[k:])
    high = (1,) * k + (0,) * rest
    operand = ctx.op("stablehlo.pad", [operand, ctx.constant(0, aval.dtype)], padded, {
        "edge_padding_low": i64_array((0,) * aval.ndim), "edge_padding_high": i64_array(high),
        "interior_padding": i64_array((0,) * aval.ndim)})

    fields = []
    window_dims = list(range(batch, batch + rest))
    if window_dims:
        fields.append(f"update_window_dims = {_dims(window_dims)}")
    fields += [f"inserted_window_dims = {_dims(range(k))}",
               f"scatter_dims_to_operand_dims = {_dims(range(k))}",
               f"index_vector_dim = {batch}"]
    op = ctx.op("stablehlo.scatter", [operand, indices, updates], padded, {
        "scatter_dimension_numbers": attr(f"#stablehlo.scatter<{', '.join(fields)}>"),
        "indices_are_sorted": ir.BoolAttr.get(False),
        "unique_indices": ir.BoolAttr.get(False)}, regions=1)
    scalar = tensor_type((), aval.dtype)
    block = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        old, new = block.arguments
        if mode != "set":
            name = _COMBINERS[mode][aval.dtype == dtypes.bool_]
            new = ir.Operation.create(name, results=[scalar], operands=[old, new]).result
        ir.Operation.create("stablehlo.return", operands=[new])
    return ctx.op("stablehlo.slice", [op.result], aval, {
        "start_indices": i64_array((0,) * aval.ndim), "limit_indices": i64_array(aval.shape),
        "strides": i64_array((1,) * aval.ndim)})


def _complex_scatter_lower(ctx: LoweringContext, operand: Any, indices: Any, updates: Any,
                           mode: str) -> Any:
    """A complex set or add as two real scatters, one per part: IREE 3.13 fails to compile
    a complex stablehlo.scatter ("'stream.yield' op used resource not listed in explicit
    captures")."""
    aval, idx, upd = ctx.avals_in
    part = dtypes.real_dtype(aval.dtype)
    inner = LoweringContext([aval.update(dtype=part), idx, upd.update(dtype=part)],
                            aval.update(dtype=part))
    parts = [_scatter_lower(inner, x, indices, u, mode=mode) for x, u in
             zip(ctx.complex_parts(operand, aval), ctx.complex_parts(updates, upd))]
    return ctx.op("stablehlo.complex", parts)


scatter = define("scatter", impl=_scatter_impl, abstract_eval=_scatter_eval,
                 lower=_scatter_lower)


# --- batching rules: JAX's ``_gather_batching_rule`` and friends, adapted to our simpler
# primitives (``gather``/``scatter`` index the *leading* ``k`` axes of the operand; the rest
# are window axes taken whole):
#
# - only the operand (and, for scatter, the updates) batched: the batch axis is moved just
#   behind the indexed axes, where it becomes one more whole window axis;
# - indices batched: the operand gets its batch axis first and every index vector gets a
#   leading column ``b`` (an iota over the batch), so member ``b`` reads/writes its own slab;
# - ``dynamic_slice``/``dynamic_update_slice`` with unbatched starts: one more start index
#   (0) and the whole batch axis as slice/update size; with batched starts they become a
#   ``gather``/``scatter`` over the explicit grid of window positions (clamped like
#   StableHLO clamps start indices, so results agree with the unbatched primitive).

Dim = Optional[int]


# --- helpers ------------------------------------------------------------------------------
def _move(x: Any, src: int, dst: int) -> Any:
    """`x` with axis `src` moved to position `dst` (the other axes keep their order)."""
    if src == dst:
        return x
    perm = [i for i in range(abstractify(x).ndim) if i != src]
    perm.insert(dst, src)
    return sp.transpose(x, permutation=tuple(perm))


def _batch_at(x: Any, dim: Dim, size: int, pos: int) -> Any:
    """`x` with its batch axis (broadcast there when `x` is unbatched) at `pos`."""
    if dim is not None:
        return _move(x, dim, pos)
    return _move(materialize(x, None, size), 0, pos)


def _index_dtype(avals: Sequence[Any]) -> np.dtype:
    """One signed index type wide enough for the batch iota and the given indices."""
    return dtypes.int64 if any(a.dtype.itemsize == 8 for a in avals) else dtypes.int32


def _as_dtype(x: Any, dtype: np.dtype) -> Any:
    aval = abstractify(x)
    if aval.dtype == dtype and not aval.weak_type:
        return x
    return cv.convert_element_type(x, dtype=dtype, weak_type=False)


def _with_batch_column(indices: Any, size: int) -> Any:
    """Batch-first index vectors ``(B, ..., k)`` -> ``(B, ..., k + 1)`` led by ``b``."""
    aval = abstractify(indices)
    dtype = _index_dtype([aval])
    indices = _as_dtype(indices, dtype)
    column = cv.iota(dtype=dtype, shape=(size, *aval.shape[1:-1], 1), dimension=0)
    return sp.concatenate(column, indices, axis=aval.ndim - 1)


def _window_indices(shape: Sequence[int], sizes: Sequence[int], starts: Sequence[Any],
                    dims: Sequence[Dim], size: int) -> Any:
    """Index vectors ``(B, *sizes, 1 + len(shape))`` of every element of the windows
    ``[start_j, start_j + sizes[j])`` of each batch member, led by the member's index ``b``.
    Starts are clamped so the window fits (``dynamic_slice``'s rule), per member."""
    dtype = _index_dtype([abstractify(s) for s in starts])
    grid = (size, *sizes, 1)
    columns = [cv.iota(dtype=dtype, shape=grid, dimension=0)]
    for j, (start, dim) in enumerate(zip(starts, dims)):
        start = _as_dtype(start, dtype)
        high = np.array(shape[j] - sizes[j], dtype=dtype)
        start = ew.maximum(ew.minimum(start, high), np.zeros((), dtype))
        if dim is not None:  # a batched scalar: shape (B,)
            start = sp.reshape(start, new_sizes=(size,) + (1,) * (len(grid) - 1))
        columns.append(ew.add(cv.iota(dtype=dtype, shape=grid, dimension=j + 1), start))
    return sp.concatenate(*columns, axis=len(grid) - 1)


def _zero_start(starts: Sequence[Any]) -> np.ndarray:
    return np.zeros((), _index_dtype([abstractify(s) for s in starts]))


# --- dynamic_slice(operand, *starts, slice_sizes) -------------------------------------------
def _dynamic_slice_batch(args: Sequence[Any], dims: Sequence[Dim], *,
                         slice_sizes: tuple[int, ...]) -> tuple[Any, Dim]:
    operand, *starts = args
    odim, *sdims = dims
    if all(d is None for d in dims):
        return dynamic_slice(*args, slice_sizes=slice_sizes), None
    size = batch_size(args, dims)
    if all(d is None for d in sdims):  # the batch axis is one more axis, sliced whole
        assert odim is not None
        new_starts = [*starts[:odim], _zero_start(starts), *starts[odim:]]
        new_sizes = (*slice_sizes[:odim], size, *slice_sizes[odim:])
        return dynamic_slice(operand, *new_starts, slice_sizes=new_sizes), odim
    shape = abstractify(operand).shape
    if odim is not None:
        shape = shape[:odim] + shape[odim + 1:]
    indices = _window_indices(shape, slice_sizes, starts, sdims, size)
    return gather(materialize(operand, odim, size), indices), 0


# --- dynamic_update_slice(operand, update, *starts) -----------------------------------------
def _dynamic_update_slice_batch(args: Sequence[Any],
                                dims: Sequence[Dim]) -> tuple[Any, Dim]:
    operand, update, *starts = args
    odim, udim, *sdims = dims
    if all(d is None for d in dims):
        return dynamic_update_slice(*args), None
    size = batch_size(args, dims)
    if all(d is None for d in sdims):  # the batch axis is one more axis, updated whole
        pos = odim if odim is not None else 0
        operand = _batch_at(operand, odim, size, pos)
        update = _batch_at(update, udim, size, pos)
        new_starts = [*starts[:pos], _zero_start(starts), *starts[pos:]]
        return dynamic_update_slice(operand, update, *new_starts), pos
    operand = materialize(operand, odim, size)
    update = materialize(update, udim, size)
    shape, sizes = abstractify(operand).shape[1:], abstractify(update).shape[1:]
    indices = _window_indices(shape, sizes, starts, sdims, size)
    return scatter(operand, indices, update, mode="set"), 0


# --- gather(operand, indices) ---------------------------------------------------------------
def _gather_batch(args: Sequence[Any], dims: Sequence[Dim]) -> tuple[Any, Dim]:
    operand, indices = args
    odim, idim = dims
    if odim is None and idim is None:
        return gather(operand, indices), None
    idx = abstractify(indices)
    if idim is None:  # the batch axis becomes the first (whole) window axis
        k = idx.shape[-1]
        assert odim is not None
        return gather(_move(operand, odim, k), indices), idx.ndim - 1
    indices = move_to_front(indices, idim)
    if odim is None:  # the batch is one more leading axis of the index array
        return gather(operand, indices), 0
    size = batch_size(args, dims)
    return gather(move_to_front(operand, odim), _with_batch_column(indices, size)), 0


# --- scatter(operand, indices, updates, mode) -----------------------------------------------
def _scatter_batch(args: Sequence[Any], dims: Sequence[Dim], *,
                   mode: str) -> tuple[Any, Dim]:
    operand, indices, updates = args
    odim, idim, udim = dims
    if all(d is None for d in dims):
        return scatter(operand, indices, updates, mode=mode), None
    size = batch_size(args, dims)
    if idim is None:  # the batch axis becomes the first (whole) window axis
        idx = abstractify(indices)
        k, lead = idx.shape[-1], idx.ndim - 1
        operand = _batch_at(operand, odim, size, k)
        updates = _batch_at(updates, udim, size, lead)
        return scatter(operand, indices, updates, mode=mode), k
    operand = materialize(operand, odim, size)
    updates = materialize(updates, udim, size)
    indices = _with_batch_column(move_to_front(indices, idim), size)
    return scatter(operand, indices, updates, mode=mode), 0


# --- the rules of each primitive: derivatives (index operands are never differentiated) and
# batching ------------------------------------------------------------------------------------

dynamic_slice.def_rules(
    batch=_dynamic_slice_batch,
    jvp=jvp_template(("operand", "*starts"),
                     operand="ad.dynamic_slice_tangent(operand_dot, starts, slice_sizes)"),
    vjp=vjp_template(("operand", "*starts"), """
operand_bar = ad.dynamic_slice_cotangent(out_bar, operand, starts)
"""))
dynamic_update_slice.def_rules(
    batch=_dynamic_update_slice_batch,
    jvp=jvp_template(
        ("operand", "update", "*starts"),
        operand="ad.dynamic_update_slice_tangent(operand_dot, jnp.zeros_like(update), starts)",
        update="ad.dynamic_update_slice_tangent(jnp.zeros_like(operand), update_dot, starts)"),
    vjp=vjp_template(("operand", "update", "*starts"), """
operand_bar = ad.dynamic_update_slice_operand_cotangent(out_bar, update, starts)
update_bar = ad.dynamic_update_slice_update_cotangent(out_bar, update, starts)
"""))
gather.def_rules(
    batch=_gather_batch,
    jvp=jvp_template(("operand", "indices"), operand="ad.gather_tangent(operand_dot, indices)"),
    vjp=vjp_template(("operand", "indices"), """
operand_bar = ad.gather_cotangent(out_bar, operand, indices)
"""))
# set: overwritten positions lose the operand's derivative, the updates that won bring
# theirs; add: both pass through; multiply: product rule (exact with zero updates);
# min/max: ties share equally.
scatter.def_rules(
    batch=_scatter_batch,
    jvp=jvp_template(
        ("operand", "indices", "updates"),
        operand="ad.scatter_operand_tangent(operand_dot, operand, indices, updates, out, mode)",
        updates="ad.scatter_updates_tangent(updates_dot, operand, indices, updates, out, mode)"),
    vjp=vjp_template(("operand", "indices", "updates"), """
operand_bar = ad.scatter_operand_cotangent(out_bar, operand, indices, updates, out, mode)
updates_bar = ad.scatter_updates_cotangent(out_bar, operand, indices, updates, out, mode)
"""))

__all__ = ["dynamic_slice", "dynamic_update_slice", "gather", "scatter", "SCATTER_MODES"]
