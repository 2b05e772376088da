"""Structured control flow under `jit`: Python functions traced into the regions of
``stablehlo.if`` / ``stablehlo.case`` / ``stablehlo.while``.

A region is traced by a child `Trace` whose block lives in the region; values of the
enclosing blocks are used directly (StableHLO regions capture them implicitly), so branch
and loop functions may close over traced values. The op that owns the regions is created
after its regions are traced -- its result types are only known then -- so tracing
happens inside a placeholder op whose blocks are then moved into the real one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from iree.compiler import ir

from transpiler import tree_util
from transpiler.errors import TranspileError, located
from transpiler.lowering.builder import LoweringContext, aval_type
from transpiler.lowering.tracer import Trace, Tracer, mlir_location
from transpiler.primitives import core
from transpiler.primitives.core import ShapedArray, abstractify
from transpiler.primitives import conversions as conv


def active_trace() -> Any:
    """The innermost trace being built, or None when running eagerly."""
    return core.trace_stack[-1] if core.trace_stack else None


@dataclass
class Region:
    """One traced block: its trace, and the flattened outputs of the traced function."""

    block: ir.Block
    trace: Trace
    leaves: list[Any]
    tree: Any
    avals: list[ShapedArray]


class Regions:
    """Blocks traced before the op that will own them exists.

    ``with Regions(n) as regions:`` creates a placeholder op with `n` regions at the end of
    the current block; `trace` fills them; `finish` creates the real op in its place and
    moves the blocks into it; leaving the ``with`` without `finish` (`probe`, errors)
    erases everything that was traced."""

    def __init__(self, count: int, loop: bool = False) -> None:
        self.parent: Trace = active_trace()
        self.loop = loop  # the regions are a loop's: code traced in them runs repeatedly
        with ir.InsertionPoint(self.parent.block), mlir_location():
            self.holder = ir.Operation.create("stablehlo.case", regions=count)
        self.blocks: list[ir.Block] = []

    def __enter__(self) -> "Regions":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.holder is not None:
            self.holder.erase()
            self.holder = None

    def trace(self, index: int, fn: Callable[..., Any], arg_avals: Sequence[ShapedArray],
              unflatten: Callable[[list[Any]], Sequence[Any]] = lambda xs: xs) -> Region:
        """Run ``fn(*unflatten(block arguments))`` in region `index`; flatten its output."""
        block = ir.Block.create_at_start(self.holder.regions[index],
                                         [aval_type(a) for a in arg_avals])
        trace = Trace(block, self.parent)
        trace.in_loop = self.loop or getattr(self.parent, "in_loop", False)
        args = [Tracer(trace, v, a) for v, a in zip(block.arguments, arg_avals)]
        core.trace_stack.append(trace)
        try:
            out = fn(*unflatten(args))
        finally:
            core.trace_stack.pop()
        leaves, tree = tree_util.tree_flatten(out)
        avals = [_output_aval(leaf, i) for i, leaf in enumerate(leaves)]
        self.blocks.append(block)
        return Region(block, trace, leaves, tree, avals)

    def finish(self, name: str, operands: Sequence[ir.Value], results: Sequence[ShapedArray],
               terminators: Sequence[tuple[Region, Sequence[ShapedArray]]],
               attributes: dict[str, ir.Attribute] | None = None) -> list[ir.Value]:
        """Terminate each region (``stablehlo.return`` of its leaves converted to the given
        avals), create op `name` in the placeholder's place, move the blocks into it."""
        for i, (region, avals) in enumerate(terminators):
            # (a while's body is its last region)
            _terminate(region, avals, reads_every_argument=name == "stablehlo.while" and
                       i == len(terminators) - 1)
        with ir.InsertionPoint(self.holder), mlir_location():
            op = ir.Operation.create(name, results=[aval_type(a) for a in results],
                                     operands=list(operands), attributes=attributes or {},
                                     regions=len(self.blocks))
        for block, region in zip(self.blocks, op.regions):
            block.append_to(region)
        self.holder.erase()
        self.holder = None
        return list(op.results)


def _output_aval(leaf: Any, index: int) -> ShapedArray:
    try:
        return abstractify(leaf, index, "control flow output")
    except (TypeError, TranspileError):
        raise located(TypeError, f"a branch or loop body returned {type(leaf).__name__} "
                      f"(output leaf {index}); control flow outputs must be arrays or "
                      "Python scalars", "return arrays (jnp.asarray(...)), or keep the "
                      "value outside the branch or loop") from None


def _terminate(region: Region, avals: Sequence[ShapedArray],
               reads_every_argument: bool = False) -> None:
    """End `region` with ``stablehlo.return`` of its leaves as `avals`. With
    `reads_every_argument` (a while body) a carry the body replaces without reading it is
    returned as ``select(<barrier of false>, <the carry>, <its new value>)``: IREE 3.13
    crashed (signal 11 in ConvertToStreamPass) on a while whose body replaced a carry --
    a ``done`` flag -- that the condition read, dropping the argument but not the result."""
    trace = region.trace
    core.trace_stack.append(trace)
    try:
        values = []
        for leaf, have, want in zip(region.leaves, region.avals, avals):
            if have.dtype != want.dtype:
                leaf = conv.convert_element_type(leaf, dtype=want.dtype)
            if have.shape != want.shape:
                from transpiler import numpy as jnp  # upward: the array library
                leaf = jnp.broadcast_to(leaf, want.shape)
            values.append(trace.operand(leaf, want))
        with ir.InsertionPoint(region.block), mlir_location():
            if reads_every_argument:
                values = _reading_every_argument(region.block, values)
            ir.Operation.create("stablehlo.return", operands=values)
    finally:
        core.trace_stack.pop()


def _reading_every_argument(block: ir.Block, values: list) -> list:
    """`values`, each one whose block argument nothing reads made to read it (see
    `_terminate`)."""
    unread = [i for i, arg in enumerate(block.arguments)
              if i < len(values) and not list(arg.uses)]
    if not unread:
        return values
    ctx = LoweringContext([], None)
    false = ctx.constant(False, np.dtype(bool))
    never = ctx.op("stablehlo.optimization_barrier", [false], false.type)
    values = list(values)
    for i in unread:
        values[i] = ctx.op("stablehlo.select", [never, block.arguments[i], values[i]],
                           values[i].type)
    return values


def probe(fn: Callable[..., Any], *args: Any) -> Any:
    """The output of ``fn(*args)`` with every array leaf replaced by its `ShapedArray`
    (non-array leaves as they are), without emitting anything: inside a trace `fn` runs
    in a throwaway region; eagerly it simply runs."""
    return probe_with_size(fn, *args)[0]


def probe_with_size(fn: Callable[..., Any], *args: Any) -> tuple[Any, int]:
    """`probe`, and the number of operations `fn` emits (0 eagerly)."""
    if active_trace() is None:
        out = fn(*args)
        return tree_util.tree_map(_aval_or_value, out), 0
    if hasattr(active_trace(), "per_shard"):  # pmap's per-device tracing: all shards
        return active_trace().probe(fn, *args)
    with Regions(1) as regions:
        block = ir.Block.create_at_start(regions.holder.regions[0], [])
        trace = Trace(block, regions.parent)
        trace.in_loop = getattr(regions.parent, "in_loop", False)
        core.trace_stack.append(trace)
        try:
            out = fn(*args)
        finally:
            core.trace_stack.pop()
        return tree_util.tree_map(_aval_or_value, out), len(list(block.operations))


def _aval_or_value(leaf: Any) -> Any:
    try:
        return abstractify(leaf)
    except (TypeError, TranspileError):
        return leaf
