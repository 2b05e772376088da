"""pmap by native collectives: one per-replica StableHLO program run on N replicas.

Each collective over the pmap axis becomes the StableHLO collective that XLA/PJRT and
IREE's GPU targets implement (``all_reduce``, ``all_gather``, ``reduce_scatter``,
``collective_permute``, ``replica_id``), emitted straight into the current trace: they are
no primitives of the registry, because only this strategy's per-replica trace has them.

The module is a cross-replica program (``mhlo.num_replicas = N``, one partition), the
replica-mode lowering of JAX's pmap: the ops carry ``replica_groups`` over replica ids and
no ``channel_handle`` (with a channel, XLA reads the groups as partition ids instead).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from iree.compiler import ir

from transpiler.errors import TranspileError, user_location
from transpiler.lowering.builder import LoweringContext, aval_type, tensor_type
from transpiler.lowering.trace import StagedModule, trace_to_module
from transpiler.lowering.tracer import Trace, Tracer, mlir_location
from transpiler.primitives import core
from transpiler.primitives.core import ShapedArray
from transpiler.lax import spmd
from transpiler.lax.spmd import SpmdAxis

# The scalar op combining two members' elements, per reducing collective.
REDUCERS = {"psum": "stablehlo.add", "pmax": "stablehlo.maximum", "pmin": "stablehlo.minimum"}


class NativeAxis(SpmdAxis):
    """A pmap axis whose collectives are StableHLO collectives over all N replicas."""

    def psum(self, x: Any) -> Any:
        return self._reduce("psum", x)

    def pmax(self, x: Any) -> Any:
        return self._reduce("pmax", x)

    def pmin(self, x: Any) -> Any:
        return self._reduce("pmin", x)

    def all_gather(self, x: Any, axis: int, tiled: bool) -> Any:
        trace, value, aval = _operand(x, "all_gather")
        shape = list(aval.shape)
        bound = len(shape) if tiled else len(shape) + 1
        if not -bound <= axis < bound:
            raise TranspileError(f"lax.all_gather: axis {axis} is out of range for a value of "
                                 f"rank {len(shape)}{' (tiled)' if tiled else ''}",
                                 user_location())
        axis %= bound
        with mlir_location(), ir.InsertionPoint(trace.block):
            if not tiled:  # gather along a new size-1 axis
                shape.insert(axis, 1)
                value = LoweringContext([], aval).reshape(value, aval.dtype, shape)
            shape[axis] *= self.size
            out = aval.update(shape=tuple(shape))
            result = _create("stablehlo.all_gather", value, out, {
                "all_gather_dim": _i64(axis), "replica_groups": self._groups()})
        return Tracer(trace, result.result, out)

    def psum_scatter(self, x: Any, dimension: int, tiled: bool) -> Any:
        trace, value, aval = _operand(x, "psum_scatter")
        shape = list(aval.shape)
        if not -len(shape) <= dimension < len(shape):
            raise TranspileError(f"lax.psum_scatter: dimension {dimension} is out of range "
                                 f"for a value of shape {aval.shape}", user_location())
        dimension %= len(shape)
        size = shape[dimension]
        if (size % self.size if tiled else size != self.size):
            need = f"a multiple of {self.size}" if tiled else f"the axis size {self.size}"
            raise TranspileError(f"lax.psum_scatter: dimension {dimension} of a value of "
                                 f"shape {aval.shape} must have {need}", user_location())
        shape[dimension] = size // self.size
        block = aval.update(shape=tuple(shape))
        with mlir_location(), ir.InsertionPoint(trace.block):
            op = _create("stablehlo.reduce_scatter", value, block, {
                "scatter_dimension": _i64(dimension), "replica_groups": self._groups()},
                regions=1)
            _reducer(op, REDUCERS["psum"], aval.dtype)
            result, out = op.result, block
            if not tiled:
                out = aval.update(shape=tuple(shape[:dimension] + shape[dimension + 1:]))
                result = LoweringContext([], block).reshape(result, aval.dtype, out.shape)
        return Tracer(trace, result, out)

    def ppermute(self, x: Any, sources: list[int | None]) -> Any:
        trace, value, aval = _operand(x, "ppermute")
        pairs = [[src, dst] for dst, src in enumerate(sources) if src is not None]
        with mlir_location(), ir.InsertionPoint(trace.block):
            if not pairs:  # nobody sends: every replica receives zeros
                result = LoweringContext([], aval).constant(0, aval.dtype, aval.shape)
            else:  # a replica no pair sends to receives zeros
                result = _create("stablehlo.collective_permute", value, aval, {
                    "source_target_pairs": _dense(pairs)}).result
        return Tracer(trace, result, aval)

    def axis_index(self) -> Any:
        trace = _current_trace("axis_index")
        out = ShapedArray((), np.dtype(np.int32))
        index = ShapedArray((), np.dtype(np.uint32))
        with mlir_location(), ir.InsertionPoint(trace.block):
            replica = ir.Operation.create("stablehlo.replica_id",
                                          results=[aval_type(index)]).result
            result = LoweringContext([], out).convert(replica, index, out.dtype)
        return Tracer(trace, result, out)

    def _reduce(self, op_name: str, x: Any) -> Any:
        trace, value, aval = _operand(x, op_name)
        with mlir_location(), ir.InsertionPoint(trace.block):
            op = _create("stablehlo.all_reduce", value, aval,
                         {"replica_groups": self._groups()}, regions=1)
            _reducer(op, REDUCERS[op_name], aval.dtype)
        return Tracer(trace, op.result, aval)

    def _groups(self) -> ir.Attribute:
        """One group of every replica: ``dense<[[0, ..., N-1]]> : tensor<1xNxi64>``."""
        return _dense([list(range(self.size))])


def trace_spmd(flat_fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray],
               axis: SpmdAxis, name: str = "main") -> StagedModule:
    """Stage ``flat_fun(*per-replica tracers) -> outputs`` as the program every replica
    runs, its collectives over `axis` emitted by `axis` (a `NativeAxis` here)."""
    if any(isinstance(a, NativeAxis) for a in spmd.SPMD):
        raise TranspileError("nested pmaps with native collectives are not supported: "
                             "replica ids number the replicas of one axis", user_location(),
                             "use the emulated or devices strategy for the inner pmap")
    spmd.SPMD.append(axis)
    try:
        staged = trace_to_module(flat_fun, in_avals, name)
    finally:
        spmd.SPMD.pop()
    with staged.context:
        attributes = staged.module.operation.attributes
        i32 = ir.IntegerType.get_signless(32)
        attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, axis.size)
        attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, 1)
    return staged


# --- helpers ----------------------------------------------------------------------------------------
def _current_trace(op: str) -> Trace:
    trace = core.trace_stack[-1] if core.trace_stack else None
    if not isinstance(trace, Trace):
        raise TranspileError(f"lax.{op} over a pmap axis with native collectives runs only "
                             "while the per-replica program is traced", user_location())
    return trace


def _operand(x: Any, op: str) -> tuple[Trace, ir.Value, ShapedArray]:
    """The current trace, the SSA value of `x` in it, and its aval."""
    trace = _current_trace(op)
    aval = x.aval if isinstance(x, Tracer) else core.abstractify(x)
    with mlir_location():
        value = trace.operand(x, aval)
    return trace, value, aval


def _create(name: str, operand: ir.Value, out: ShapedArray, attributes: dict[str, ir.Attribute],
            regions: int = 0) -> ir.Operation:
    return ir.Operation.create(name, results=[aval_type(out)], operands=[operand],
                               attributes=attributes, regions=regions)


def _reducer(op: ir.Operation, scalar_op: str, dtype: np.dtype) -> None:
    """Fill the region of `op` with ``return scalar_op(a, b)`` on 0-d tensors."""
    scalar = tensor_type((), dtype)
    block = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        combined = ir.Operation.create(scalar_op, results=[scalar],
                                       operands=list(block.arguments)).result
        ir.Operation.create("stablehlo.return", operands=[combined])


def _i64(value: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def _dense(rows: list[list[int]]) -> ir.Attribute:
    array = np.asarray(rows, dtype=np.int64)
    return ir.DenseElementsAttr.get(array, type=tensor_type(array.shape, array.dtype))


__all__ = ["NativeAxis", "trace_spmd"]
