"""Stage a function into a StableHLO module by running it on Tracers."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from iree.compiler import ir

from transpiler.errors import SourceLocation, TranspileError
from transpiler.lowering.builder import LoweringContext, aval_type
from transpiler.lowering.tracer import Trace, Tracer
from transpiler.primitives import core
from transpiler.primitives.core import ShapedArray


@dataclass
class StagedModule:
    """A traced function: its MLIR module and its flat output avals."""

    module: ir.Module
    context: ir.Context
    out_avals: list[ShapedArray]
    name: str

    def text(self, debug_info: bool = False) -> str:
        with self.context:
            return self.module.operation.get_asm(enable_debug_info=debug_info,
                                                 large_elements_limit=64)

    def bytecode(self) -> bytes:
        with self.context:
            buffer = io.BytesIO()
            self.module.operation.write_bytecode(buffer)
            return buffer.getvalue()


def trace_to_module(flat_fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray],
                    name: str = "main") -> StagedModule:
    """Run ``flat_fun(*tracers) -> list of outputs`` and build ``func.func @name``."""
    context = ir.Context()
    with context, ir.Location.unknown():
        module = ir.Module.create()
        arg_types = [aval_type(a) for a in in_avals]
        func, block = new_function(module, name, arg_types)
        trace = Trace(block)
        tracers = [Tracer(trace, arg, aval) for arg, aval in zip(block.arguments, in_avals)]
        core.trace_stack.append(trace)
        try:
            outputs = list(flat_fun(*tracers))
        finally:
            core.trace_stack.pop()
        out_avals = [core.abstractify(o, i, "jit output") for i, o in enumerate(outputs)]
        # (Each kept loop result once, and not one the function returns anyway: IREE 3.13
        # failed at run time, "indirect buffer reference slot 0 is out range", on a module
        # returning one buffer twice.)
        returned = {id(o) for o in outputs}
        kept = list({id(t): t for t in trace.keep_alive
                     if t.trace is trace and id(t) not in returned}.values())
        with ir.InsertionPoint(block):
            values = [trace.operand(o, a) for o, a in zip(outputs, out_avals)]
            values += [t.value for t in kept]
            ir.Operation.create("func.return", operands=values)
        func.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(arg_types, [aval_type(a) for a in out_avals] +
                                [aval_type(t.aval) for t in kept]))
        _verify(module)
    return StagedModule(module, context, out_avals, name)


def new_function(module: ir.Module, name: str, arg_types: list) -> tuple[ir.Operation, ir.Block]:
    """An empty ``func.func @name`` in `module` (its results are set once traced), and its
    entry block."""
    with ir.InsertionPoint(module.body):
        func = ir.Operation.create("func.func", regions=1, attributes={
            "sym_name": ir.StringAttr.get(name),
            "function_type": ir.TypeAttr.get(ir.FunctionType.get(arg_types, [])),
        })
    return func, func.regions[0].blocks.append(*arg_types)


_LOC = re.compile(r'loc\("(?P<file>[^"]+)":(?P<line>\d+):(?P<col>\d+)\)')


def _verify(module: ir.Module) -> None:
    try:
        module.operation.verify()
    except ir.MLIRError as err:
        raise error_at_mlir_location(str(err), "the staged module failed to verify "
                                     "(a bug in a lowering rule)") from None


def error_at_mlir_location(text: str, summary: str) -> TranspileError:
    """A TranspileError at the first user location mentioned in an MLIR/IREE message."""
    match = _LOC.search(text) or re.search(r"(?P<file>/[^\s:]+\.py):(?P<line>\d+):(?P<col>\d+)",
                                          text)
    loc = None
    if match:
        loc = SourceLocation(match["file"], int(match["line"]), int(match["col"]) - 1)
    return TranspileError(f"{summary}:\n{text.strip()}", loc)


__all__ = ["StagedModule", "trace_to_module", "LoweringContext", "error_at_mlir_location"]
