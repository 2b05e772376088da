"""``jax.debug`` (as ``transpiler.debug``): ``print`` and ``callback`` on the values a
function computes.

Eagerly, and in a jitted function run under ``disable_jit()``, they run at once on the
concrete arrays. Inside ``jit`` they are staged, as JAX stages a host callback: the traced
values go to a ``flow.tensor.trace`` op, which the compiled module hands back to the host
each time it runs it, in program order -- inside ``lax.scan``, ``fori_loop``, ``while``
bodies and ``cond`` branches too, once per iteration or branch taken -- and the handler
registered for it (runtime/callbacks.py) formats the values or calls the callback with them
as NumPy arrays. Arguments that are not traced (Python numbers, NumPy arrays) are kept
with the handler.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable

import numpy as np
from iree.compiler import ir

import runtime.callbacks
from transpiler import tree_util
from transpiler.errors import located
from transpiler.host_callbacks import as_numpy, digest
from transpiler.lowering.tracer import Trace, Tracer, mlir_location
from transpiler.primitives import core
from transpiler.sharding.visualize import (inspect_array_sharding,  # noqa: F401
                                           visualize_array_sharding, visualize_sharding)

__all__ = ["print", "callback", "inspect_array_sharding", "visualize_array_sharding",
           "visualize_sharding"]


def print(fmt: str, *args: Any, ordered: bool = False, partitioned: bool = False,  # noqa: A001
          **kwargs: Any) -> None:
    """``jax.debug.print``: ``print(fmt.format(*args, **kwargs))`` (arrays formatted as
    NumPy formats them)."""
    if not isinstance(fmt, str):
        raise located(TypeError, f"jax.debug.print: the format must be a str, got "
                      f"{type(fmt).__name__}")

    def formatted(args: Any, kwargs: Any) -> None:
        builtins.print(fmt.format(*args, **kwargs))

    _run_or_stage(formatted, args, kwargs, f"jax.debug.print {fmt!r}")


def callback(callback: Callable, *args: Any, ordered: bool = False,
             partitioned: bool = False, **kwargs: Any) -> None:
    """``jax.debug.callback``: ``callback(*args, **kwargs)`` on the arrays as NumPy arrays;
    its result is discarded."""
    if not callable(callback):
        raise located(TypeError, f"jax.debug.callback expects a callable, got "
                      f"{type(callback).__name__}")

    def called(args: Any, kwargs: Any) -> None:
        callback(*args, **kwargs)

    name = getattr(callback, "__qualname__", type(callback).__qualname__)
    _run_or_stage(called, args, kwargs, f"jax.debug.callback {name} {id(callback):x}")


# vmap calls them once per batch element (transforms/bt/rules.py), as JAX does.
print.host_callback = True  # type: ignore[attr-defined]
callback.host_callback = True  # type: ignore[attr-defined]


def _run_or_stage(handler: Callable[[Any, Any], None], args: tuple, kwargs: dict,
                  label: str) -> None:
    leaves, tree = tree_util.tree_flatten((args, kwargs))
    trace = core.trace_stack[-1] if core.trace_stack else None
    if trace is None:
        handler(*tree_util.tree_unflatten(tree, [as_numpy(leaf) for leaf in leaves]))
        return
    if not isinstance(trace, Trace):
        raise located(NotImplementedError, f"{label.split(' ')[0]} inside a trace that "
                      "is not jit's (a callee traced for its derivative or batching)",
                      "call it in the jitted function itself, or eagerly")
    traced = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tracer)]
    kept = {i: as_numpy(leaf) for i, leaf in enumerate(leaves) if i not in traced}
    dtypes = [leaves[i].aval.dtype for i in traced]

    def run(arrays: list[np.ndarray]) -> None:
        values = dict(kept)  # (a bool comes back as an integer type)
        values.update(zip(traced, (a.astype(d, copy=False) for a, d in zip(arrays, dtypes))))
        handler(*tree_util.tree_unflatten(tree, [values[i] for i in range(len(leaves))]))

    key = f"{label} #{digest((tree, traced, dtypes), kept)[:16]}"
    runtime.callbacks.register(key, run)
    _stage_trace(trace, key, [leaves[i] for i in traced])


def _stage_trace(trace: Any, key: str, tracers: list) -> None:
    """``flow.tensor.trace "key" = [tracers]`` in the block being traced."""
    with mlir_location(), ir.InsertionPoint(trace.block):
        operands = [trace.operand(t, t.aval) for t in tracers]
        if operands:  # (else IREE's fusion computes a value later, and its trace with it:
            # out of program order, measured at O2/O3 with a compare fused into a reduction)
            operands = list(ir.Operation.create(
                "stablehlo.optimization_barrier", results=[v.type for v in operands],
                operands=operands).results)
        ir.Operation.create("flow.tensor.trace", operands=operands, attributes={
            "key": ir.StringAttr.get(key),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(operands), 0])})
