"""pmap's ``devices`` strategy: one IREE module holding every shard's program, each on its
own device.

The per-shard function is traced once with `Sharded` values: each stands for the N
shards of one value of the function, one SSA value per shard. `ShardTrace` emits every
primitive once per shard, on that shard's operands, so shard k's operations depend only
on the arguments placed on device k (``iree.abi.affinity = #hal.device.promise<@devk>``)
and IREE runs them there. A collective is where shards meet (`DeviceAxis`): each shard's
value is moved to the devices that need it (``flow.tensor.transfer``) and combined there
by ordinary operations, in the same order on every device, so all shards get bitwise
identical results. IREE 3.13's CPU runtime has no collective channels; transfers and
local math is what its multi-device support offers.

Control flow (``lax.cond``/``while_loop``/... and Python control flow that jit converts)
is traced once per shard: while shard k's copy is traced, `Sharded` values read as their
shard k (`ShardTrace.per_shard`). A loop or cond with a collective inside is traced again
as one construct for all shards (joint_control.py).
"""

from __future__ import annotations

from collections import ChainMap
from typing import Any, Callable, Optional, Sequence

import numpy as np
from iree.compiler import ir

from transpiler import tree_util
from transpiler.errors import (CONCRETE_ERRORS, TracerError, TranspileError, located,
                               user_location)
from transpiler.lax.spmd import SPMD, SpmdAxis
from transpiler.lowering.builder import aval_type
from transpiler.lowering.trace import StagedModule, _verify, new_function
from transpiler.lowering.tracer import Trace, Tracer, mlir_location
from transpiler.primitives import core
from transpiler.primitives.core import ShapedArray
from transpiler.per_thread import PerThreadList
from transpiler.lowering.regions import Regions, _aval_or_value
import transpiler.numpy as jnp

# The shard whose copy of a control-flow construct is being traced (ShardTrace.per_shard).
_PROJECTION: PerThreadList[Optional[int]] = PerThreadList("shard_projection", [None])


class CollectiveInControlFlow(TranspileError):
    """A collective met while one shard's copy of a construct was traced."""


class Sharded(Tracer):
    """One value of the per-shard function: its shards, one traced value per device."""

    __slots__ = ("parts",)

    def __init__(self, parts: Sequence[Tracer], aval: ShapedArray) -> None:
        self.parts = list(parts)
        self.aval = aval
        self.known = None  # each shard's value is its device's, never folded

    # Read as one shard only while that shard's copy of control flow is traced.
    @property  # type: ignore[override]
    def value(self) -> ir.Value:
        return self.parts[self._shard()].value

    @property
    def trace(self) -> Trace:  # type: ignore[override]
        return self.parts[self._shard()].trace

    def _shard(self) -> int:
        shard = _PROJECTION[0]
        if shard is None:
            raise TranspileError("a value of pmap's per-shard function was used where one "
                                 "device's value was expected", user_location(),
                                 "run this pmap with strategy='emulated'")
        return shard

    def __repr__(self) -> str:
        return f"Sharded<{self.aval} x{len(self.parts)}>"

    def _concrete(self, what: str, hint: str, kind: str) -> TracerError:
        error = located(CONCRETE_ERRORS[kind], f"{what} on a traced value ({self.aval}) "
                        "inside pmap", hint)
        return error  # type: ignore[return-value]


class ShardTrace:
    """Sits on ``core.trace_stack`` above the module's `Trace` while the per-shard function
    is traced: emits each primitive once per shard."""

    def __init__(self, base: Trace, size: int) -> None:
        self.base, self.size = base, size
        self.block, self.keep_alive, self.in_loop = base.block, base.keep_alive, False
        self.kept_on: list[tuple[Tracer, int]] = []  # (kept loop result, its shard)
        self._moved: dict[tuple[int, int], tuple[Tracer, Tracer]] = {}

    def emit(self, prim: core.Primitive, args: Sequence[Any], avals: Sequence[ShapedArray],
             out_aval: Any, params: dict[str, Any]) -> Any:
        if not any(type(a) is Sharded for a in args):
            # Computed from constants alone: no device owns it. It is folded into a
            # constant or computed once, and moved to each shard that uses it (`on`).
            return self.base.emit(prim, args, avals, out_aval, params)
        outs = [self.base.emit(prim, [self.on(k, a) for a in args], avals, out_aval, params)
                for k in range(self.size)]
        if prim.multiple_results:
            return tuple(Sharded([o[j] for o in outs], a) for j, a in enumerate(out_aval))
        return Sharded(outs, out_aval)

    def on(self, device: int, value: Any) -> Any:
        """`value` as shard `device` uses it: its shard, or a value no shard owns (computed
        from constants) moved there."""
        if type(value) is Sharded:
            return value.parts[device]
        if isinstance(value, Tracer):  # of this block or, captured, of an enclosing one
            return self.moved(value, device)
        return value

    def moved(self, value: Tracer, device: int) -> Tracer:
        """`value` transferred to `device`, once per value and device."""
        key = (id(value), device)
        hit = self._moved.get(key)
        if hit is None:
            hit = self._moved[key] = (transfer(value, device, self.base), value)  # pins id
        return hit[0]

    def per_shard(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` traced once per shard, `Sharded` values reading as that shard's;
        the shards' outputs zipped back into `Sharded` values."""
        outs = [self._as_shard(k, fn, args) for k in range(self.size)]
        return tree_util.tree_map(lambda *parts: self._zip(parts), *outs)

    def while_loop(self, staged: Callable[..., Any], cond_fun: Callable, body_fun: Callable,
                   init_val: Any) -> Any:
        """A while loop: a copy per shard, or one loop for all shards when its body has a
        collective (joint_control.py)."""
        try:
            return self.per_shard(staged, cond_fun, body_fun, init_val)
        except CollectiveInControlFlow:
            from transpiler.spmd.joint_control import joint_while  # cycle: it imports this module
            return joint_while(self, cond_fun, body_fun, init_val)

    def branches(self, staged: Callable[..., Any], op_name: str, selector: Any,
                 branches: Any, operands: tuple, op: str, names: Any) -> Any:
        """A cond/switch: a copy per shard, or every branch for all shards and a select
        when a branch has a collective (joint_control.py)."""
        try:
            return self.per_shard(staged, op_name, selector, branches, operands, op, names)
        except CollectiveInControlFlow:
            from transpiler.spmd.joint_control import joint_branches  # cycle: it imports this module
            return joint_branches(self, selector, branches, operands, op, names)

    def probe(self, fn: Callable[..., Any], *args: Any) -> tuple[Any, int]:
        """regions.probe_with_size: ``fn(*args)`` traced for all shards in a throwaway
        region (collectives included); its avals, and how many operations it emitted."""
        with Regions(1) as regions:
            block = ir.Block.create_at_start(regions.holder.regions[0], [])
            trace = Trace(block, self.base)
            core.trace_stack.extend([trace, ShardTrace(trace, self.size)])
            try:
                out = fn(*args)
            finally:
                del core.trace_stack[-2:]
            return tree_util.tree_map(_aval_or_value, out), len(list(block.operations))

    def _as_shard(self, k: int, fn: Callable[..., Any], args: tuple) -> Any:
        saved = self.base.memo
        _PROJECTION[0] = k
        self.base.memo = ChainMap({}, saved)  # nothing shared between the shards' copies
        kept = len(self.keep_alive)
        core.trace_stack.append(self.base)
        try:
            return fn(*args)
        finally:
            core.trace_stack.pop()
            self.base.memo = saved
            _PROJECTION[0] = None
            # Loop results kept alive as extra results of the function (lax/control.py): on
            # the device of the shard whose copy made them.
            self.kept_on.extend((t, k) for t in self.keep_alive[kept:])
            del self.keep_alive[kept:]

    def _zip(self, parts: Sequence[Any]) -> Any:
        """One output of the shards' copies of a construct, as one value."""
        first = parts[0]
        if all(p is first for p in parts) and (type(first) is Sharded or
                                               not isinstance(first, Tracer)):
            return first  # the same on every shard: a static value, or one passed through
        aval = core.abstractify(first)
        return Sharded([self._own(k, p, aval) for k, p in enumerate(parts)], aval)

    def _own(self, k: int, part: Any, aval: ShapedArray) -> Tracer:
        if type(part) is Sharded:
            return part.parts[k]
        if isinstance(part, Tracer):
            return part  # computed by shard k's copy, on device k
        return self.moved(Tracer(self.base, self.base.operand(part, aval), aval), k)


def device_attr(device: int) -> ir.Attribute:
    return ir.Attribute.parse(f"#hal.device.promise<@dev{device}>")


def transfer(value: Tracer, device: int, trace: Optional[Trace] = None) -> Tracer:
    """``flow.tensor.transfer`` of a traced value to device `device`, emitted in `trace`
    (the innermost one being built; by default the value's own)."""
    trace = trace or value.trace
    with mlir_location(), ir.InsertionPoint(trace.block):
        op = ir.Operation.create("flow.tensor.transfer", results=[aval_type(value.aval)],
                                 operands=[value.value],
                                 attributes={"target": device_attr(device)})
    return Tracer(trace, op.result, value.aval)


class DeviceAxis(SpmdAxis):
    """Collectives as transfers between the devices plus local math."""

    def __init__(self, name: Any, size: int, trace: ShardTrace) -> None:
        super().__init__(name, size)
        self.outer = trace

    @property
    def shards(self) -> ShardTrace:
        """The innermost per-shard trace (a joint loop's body has its own): transfers go
        into the block being built."""
        top = core.trace_stack[-1] if core.trace_stack else None
        return top if isinstance(top, ShardTrace) else self.outer

    def _parts(self, x: Any, op: str) -> list[Any]:
        if _PROJECTION[0] is not None:  # the construct is traced again for all shards
            raise CollectiveInControlFlow(f"lax.{op} over pmap axis {self.name!r} inside one "
                                          "shard's copy of a control-flow construct",
                                          user_location())
        if type(x) is Sharded:
            return x.parts
        return [self.shards.on(k, x) for k in range(self.size)]  # the same on every shard

    def _everywhere(self, x: Any, op: str) -> list[list[Any]]:
        """For each device, every shard's `x` moved onto it, in shard order."""
        parts = self._parts(x, op)
        return [[p if j == k else self.shards.moved(p, k) for j, p in enumerate(parts)]
                for k in range(self.size)]

    def _combine(self, x: Any, op: str, fn: Callable[[Any, Any], Any]) -> Sharded:
        outs = []
        for row in self._everywhere(x, op):
            acc = row[0]
            for p in row[1:]:
                acc = fn(acc, p)
            outs.append(acc)
        return Sharded(outs, outs[0].aval)

    def psum(self, x: Any) -> Any:
        return self._combine(x, "psum", jnp.add)

    def psum_leaves(self, leaves: list) -> list:
        """The leaves of each dtype summed as one flat array: one transfer per pair of
        devices instead of one per leaf."""
        out: list = list(leaves)
        groups: dict[Any, list[int]] = {}
        for i, leaf in enumerate(leaves):
            groups.setdefault(core.abstractify(leaf).dtype, []).append(i)
        for members in groups.values():
            if len(members) == 1:
                out[members[0]] = self.psum(leaves[members[0]])
                continue
            flat = jnp.concatenate([jnp.reshape(leaves[i], (-1,)) for i in members])
            total, start = self.psum(flat), 0
            for i in members:
                shape = core.abstractify(leaves[i]).shape
                size = int(np.prod(shape))
                out[i] = jnp.reshape(total[start:start + size], shape)
                start += size
        return out

    def pmax(self, x: Any) -> Any:
        return self._combine(x, "pmax", jnp.maximum)

    def pmin(self, x: Any) -> Any:
        return self._combine(x, "pmin", jnp.minimum)

    def all_gather(self, x: Any, axis: int, tiled: bool) -> Any:
        ndim = x.aval.ndim if hasattr(x, "aval") else 0
        bound = ndim if tiled else ndim + 1
        if not -bound <= axis < bound:
            raise TranspileError(f"lax.all_gather: axis {axis} is out of range for a value of "
                                 f"rank {ndim}{' (tiled)' if tiled else ''}", user_location())
        join = jnp.concatenate if tiled else jnp.stack
        outs = [join(row, axis=axis) for row in self._everywhere(x, "all_gather")]
        return Sharded(outs, outs[0].aval)

    def psum_scatter(self, x: Any, dimension: int, tiled: bool) -> Any:
        parts = self._parts(x, "psum_scatter")
        shape = parts[0].aval.shape
        dim = dimension + len(shape) if dimension < 0 else dimension
        if not 0 <= dim < len(shape) or shape[dim] % self.size or \
                (not tiled and shape[dim] != self.size):
            want = f"a multiple of {self.size}" if tiled else f"{self.size}"
            raise TranspileError(f"lax.psum_scatter: dimension {dimension} of a value of shape "
                                 f"{shape} must have size {want} (pmap axis {self.name!r})",
                                 user_location())
        block = shape[dim] // self.size
        outs = []
        for k in range(self.size):  # only block k travels to device k
            # A static slice: IREE 3.13 computed a wrong result when this was a gather with
            # constant indices next to the transfers (tests/test_pmap.py, from vmapped code).
            window = (slice(None),) * dim + (slice(k * block, (k + 1) * block),)
            pieces = [p[window] for p in parts]
            row = [p if j == k else self.shards.moved(p, k) for j, p in enumerate(pieces)]
            acc = row[0]
            for p in row[1:]:
                acc = jnp.add(acc, p)
            outs.append(acc if tiled else jnp.squeeze(acc, axis=dim))
        return Sharded(outs, outs[0].aval)

    def ppermute(self, x: Any, sources: list[int | None]) -> Any:
        parts = self._parts(x, "ppermute")
        outs = [jnp.zeros_like(parts[k]) if src is None else
                parts[k] if src == k else self.shards.moved(parts[src], k)
                for k, src in enumerate(sources)]
        return Sharded(outs, outs[0].aval)

    def axis_index(self) -> Any:
        aval = ShapedArray((), np.dtype(np.int32))
        base = self.shards.base
        outs = [Tracer(base, base.operand(np.int32(k), aval), aval) for k in range(self.size)]
        return Sharded(outs, aval)


def trace_devices(flat_fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray],
                  size: int, axis_name: Any, name: str = "main") -> StagedModule:
    """Build ``func.func @name`` taking each shard's arguments on its device (shard-major:
    all of shard 0's, then shard 1's...) and returning each shard's outputs there."""
    context = ir.Context()
    with context, ir.Location.unknown():
        module = ir.Module.create()
        arg_types = [aval_type(a) for a in in_avals] * size
        func, block = new_function(module, name, arg_types)
        base = Trace(block)
        shards = ShardTrace(base, size)
        n = len(in_avals)
        args = [Sharded([Tracer(base, block.arguments[k * n + j], aval)
                         for k in range(size)], aval)
                for j, aval in enumerate(in_avals)]
        core.trace_stack.append(shards)
        SPMD.append(DeviceAxis(axis_name, size, shards))
        try:
            outputs = list(flat_fun(*args))
        finally:
            SPMD.pop()
            core.trace_stack.pop()
        out_avals = [core.abstractify(o, i, "pmap output") for i, o in enumerate(outputs)]
        values = [[_placed(shards, k, o, a) for o, a in zip(outputs, out_avals)]
                  for k in range(size)]
        kept = [(t, k) for t, k in shards.kept_on if t.trace is base]
        with ir.InsertionPoint(block):
            results = [v for row in values for v in row] + [t.value for t, _ in kept]
            ir.Operation.create("func.return", operands=results)
        func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
            arg_types, [aval_type(a) for a in out_avals] * size +
            [aval_type(t.aval) for t, _ in kept]))
        func.attributes["arg_attrs"] = _placements(size, n)
        func.attributes["res_attrs"] = ir.ArrayAttr.get(
            list(_placements(size, len(out_avals))) +
            [ir.DictAttr.get({"iree.abi.affinity": device_attr(k)}) for _, k in kept])
        _verify(module)
    return StagedModule(module, context, out_avals, name)


def _placed(shards: ShardTrace, device: int, output: Any, aval: ShapedArray) -> ir.Value:
    """Shard `device`'s output as a value placed on that device (a constant output is
    moved there too: every result of the module has a device)."""
    value = shards.on(device, output)
    if not isinstance(value, Tracer):
        base = shards.base
        value = transfer(Tracer(base, base.operand(value, aval), aval), device)
    return value.value


def _placements(size: int, per_shard: int) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([ir.DictAttr.get({"iree.abi.affinity": device_attr(k)})
                             for k in range(size) for _ in range(per_shard)])
