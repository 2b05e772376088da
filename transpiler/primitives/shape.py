"""Shape primitives: reshape, broadcast_to, transpose (more in the same style below)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from transpiler.lowering.builder import LoweringContext, i64_array, tensor_type
from transpiler.primitives.core import ShapedArray, define, shape_error


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
    lower=lambda ctx, x, *, new_sizes: ctx.reshape(x, ctx.aval_out.dtype, new_sizes))


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
    lower=lambda ctx, x, *, shape: ctx.broadcast(x, ctx.avals_in[0], shape))


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
    lower=_transpose_lower)

__all__ = ["reshape", "broadcast_to", "transpose", "tensor_type"]
