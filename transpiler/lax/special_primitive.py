"""Elementwise special-function primitives (``lax.lgamma``, ``lax.igamma``,
``lax.bessel_i0e`` ...) defined from one algorithm.

Each algorithm is written once against an array namespace ``xp`` -- NumPy for eager calls,
`transpiler.numpy` for the composite a trace stages -- so that eager and compiled results
come from the same arithmetic. Where StableHLO's CHLO dialect has the function (``chlo.lgamma``
and others, which IREE expands as XLA does) the trace lowers to that op instead and the
algorithm serves eager calls only.

Operands broadcast against each other and promote as NumPy's do, integers to the default
float. Eagerly they compute in float64, then round; under a trace in the operands' type
(half types in float32, as XLA's CPU does). Loops over series or continued
fractions (`loop`) run until every element has converged: a Python loop eagerly, one
``stablehlo.while`` under a trace.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.lax.control import while_loop
from transpiler.lowering.builder import LoweringContext
from transpiler.primitives import conversions as conv
from transpiler.primitives.batching import define_elementwise
from transpiler.primitives.core import (Primitive, ShapedArray, abstractify, broadcast_shapes,
                                        dtype_error, promote_avals)
from transpiler.primitives.elementwise import compute_dtype


def loop(xp: Any, cond: Callable[[tuple], Any], body: Callable[[tuple], tuple],
         state: tuple) -> tuple:
    """``while cond(state): state = body(state)`` in namespace `xp`."""
    if xp is np:
        while bool(cond(state)):
            state = body(state)
        return state
    return tuple(while_loop(cond, body, state))


def finfo(x: Any) -> Any:
    """The float limits of `x`'s dtype (a NumPy or a traced array)."""
    return dtypes.finfo(x.dtype if isinstance(x, np.ndarray) else abstractify(x).dtype)


def _result(name: str, avals: tuple[ShapedArray, ...]) -> ShapedArray:
    shape = broadcast_shapes(name, *[a.shape for a in avals])
    dtype, weak = promote_avals(*avals)
    if dtypes.is_complex(dtype):
        raise dtype_error(f"{name} does not accept complex arguments, got {dtype}")
    if not dtypes.is_float(dtype):
        dtype = dtypes.default_float()
    return ShapedArray(shape, dtype, weak)


def define_special(name: str, algorithm: Callable, *, chlo: Optional[str] = None,
                   doc: str = "") -> Primitive:
    """The elementwise primitive `name` computing ``algorithm(xp, *operands)``; under a
    trace it lowers to the CHLO op `chlo` where given, else to the algorithm's composite.
    Batching is elementwise; derivative rules are declared by the caller."""

    def abstract_eval(*avals: ShapedArray) -> ShapedArray:
        return _result(name, avals)

    def impl(*arrays: np.ndarray) -> np.ndarray:
        out = abstract_eval(*[ShapedArray(a.shape, a.dtype) for a in arrays])
        operands = [np.broadcast_to(a.astype(np.float64), out.shape) for a in arrays]
        with np.errstate(all="ignore"):
            return np.asarray(algorithm(np, *operands), np.float64).astype(out.dtype)

    def composite(*args: Any) -> Any:
        out = abstract_eval(*[abstractify(a) for a in args])
        work = compute_dtype(out.dtype)
        operands = [jnp.broadcast_to(conv.convert_element_type(a, dtype=work), out.shape)
                    for a in args]
        return conv.convert_element_type(algorithm(jnp, *operands), dtype=out.dtype,
                                         weak_type=out.weak_type)

    def lower(ctx: LoweringContext, *xs: Any) -> Any:
        out = ctx.aval_out
        work = compute_dtype(out.dtype)
        operands = [ctx.coerce(x, aval, out.shape, work) for x, aval in zip(xs, ctx.avals_in)]
        result = ctx.op(chlo, operands, ShapedArray(out.shape, work))  # type: ignore[arg-type]
        return ctx.convert(result, ShapedArray(out.shape, work), out.dtype)

    return define_elementwise(name, impl=impl, abstract_eval=abstract_eval,
                              lower=lower if chlo else None,
                              composite=None if chlo else composite, family="elementwise",
                              doc=doc)
