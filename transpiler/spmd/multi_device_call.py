"""Running a `Pmapped` by the ``devices`` strategy, and staging it (``pmap(f).lower``).

One specialization per argument structure, per-shard shapes and dtypes, static arguments
and devices: traced once (multi_device.py), compiled once for that many CPU devices,
loaded on them. Each call uploads shard k of every mapped argument, and a copy of every
replicated one, to device k, and stacks the shards' outputs along `out_axes`.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

import runtime
from transpiler import tree_util
from transpiler.compiler import compile_vmfb, lower_to_stage, module_flags
from transpiler.errors import TranspileError, user_location
from transpiler.lowering.trace import StagedModule
from transpiler.primitives.core import ShapedArray, abstractify
from transpiler.spmd.pmap_api import Pmapped, _leaf_axes, sharded_value
from transpiler.transforms.autograph.runtime import convert_for_jit
from transpiler.spmd.multi_device import trace_devices
from transpiler.spmd.native import NativeAxis, trace_spmd


class DevicesExecutable:
    """One compiled specialization: its module loaded on the shards' devices."""

    def __init__(self, staged: StagedModule, devices: list[runtime.Device], out_tree: Any,
                 shard_avals: list[ShapedArray]) -> None:
        kinds = {d.kind for d in devices}
        target = "llvm-cpu" if all(d.platform == "cpu" for d in devices) else \
            "vulkan-spirv" if kinds == {"vulkan"} else None
        if target is None:
            raise TranspileError(f"pmap's devices strategy runs on CPU or Vulkan devices; got "
                                 f"{devices}", user_location(),
                                 "use strategy='emulated', or export StableHLO with native "
                                 "collectives (pmap(f).export(...)) for CUDA/ROCm/TPU runtimes")
        self.staged, self.devices, self.out_tree = staged, devices, out_tree
        self.shard_avals = shard_avals
        extra = module_flags(staged.text()) if target == "llvm-cpu" else []
        vmfb = compile_vmfb(staged.bytecode(), target, extra_flags=extra, devices=len(devices))
        self.module = runtime.load(vmfb, devices=devices)
        self.function = self.module[staged.name]

    def __call__(self, leaves: Sequence[Any], axes: Sequence[Optional[int]]) -> list:
        hosts = [_host(leaf, aval) for leaf, aval in zip(leaves, self.shard_avals)]
        inputs = [h if a is None else np.take(h, k, axis=a)
                  for k in range(len(self.devices)) for h, a in zip(hosts, axes)]
        outs = self.function(*inputs)
        return list(outs) if isinstance(outs, tuple) else [outs]


def _host(leaf: Any, aval: ShapedArray) -> np.ndarray:
    value = getattr(leaf, "_value", None)
    return value if isinstance(value, np.ndarray) and value.dtype == aval.dtype else \
        np.asarray(leaf, dtype=aval.dtype)


def _shard_aval(leaf: Any, axis: Optional[int]) -> ShapedArray:
    aval = abstractify(leaf)
    if axis is None:
        return aval
    shape = aval.shape[:axis] + aval.shape[axis + 1:]
    return ShapedArray(shape, aval.dtype, aval.weak_type)


def _per_shard_fun(pm: Pmapped, tree: Any, statics: dict,
                   out_box: list) -> Callable[..., list]:

    def flat_fun(*values: Any) -> list:
        dynamic, kwargs = tree_util.tree_unflatten(tree, list(values))
        it = iter(dynamic)
        count = len(dynamic) + len(statics)
        args = [statics[i] if i in statics else next(it) for i in range(count)]
        out = convert_for_jit(pm.fun)(*args, **kwargs)
        leaves, out_tree = tree_util.tree_flatten(out)
        out_box.append(out_tree)
        return leaves
    return flat_fun


def _specialize(pm: Pmapped, args: tuple, kwargs: dict, check_devices: bool = True) -> tuple:
    leaves, axes, tree, statics, size = pm.split(args, kwargs)
    # The collectives strategy exports for other machines: it needs no device here.
    devices = pm.devices_for(size) if check_devices else []
    shard_avals = [_shard_aval(leaf, a) for leaf, a in zip(leaves, axes)]
    return leaves, axes, tree, statics, size, devices, shard_avals


def call_on_devices(pm: Pmapped, args: tuple, kwargs: dict) -> Any:
    leaves, axes, tree, statics, size, devices, shard_avals = _specialize(pm, args, kwargs)
    key = (tree, tuple(shard_avals), tuple(axes), tuple(sorted(statics.items())),
           tuple(devices))
    executable = pm._compiled.get(key)
    if executable is None:
        out_box: list = []
        staged = trace_devices(_per_shard_fun(pm, tree, statics, out_box), shard_avals, size,
                               pm.axis_name, name=_symbol(pm.fname))
        executable = pm._compiled[key] = DevicesExecutable(staged, devices, out_box[0],
                                                           shard_avals)
    outs = executable(leaves, axes)
    avals = executable.staged.out_avals
    count = len(avals)
    out_axes = _out_axes(pm, executable.out_tree, avals)
    values = [sharded_value([outs[k * count + j] for k in range(size)], aval, axis)
              for j, (aval, axis) in enumerate(zip(avals, out_axes))]
    return tree_util.tree_unflatten(executable.out_tree, values)


def _out_axes(pm: Pmapped, out_tree: Any, avals: list[ShapedArray]) -> list[Optional[int]]:
    template = tree_util.tree_unflatten(out_tree, list(range(len(avals))))
    pairs = _leaf_axes(pm.out_axes, template, "the output", pm.fname)
    axes: list[Optional[int]] = [None] * len(avals)
    for index, axis in pairs:
        if axis is not None:
            ndim = avals[index].ndim + 1
            if not -ndim <= axis < ndim:
                raise TranspileError(f"pmap({pm.fname}): out_axes {axis} is out of range for "
                                     f"output {index} (rank {ndim} with the mapped axis)",
                                     user_location())
            axis %= ndim
        axes[index] = axis
    return axes


def _symbol(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"f_{cleaned}"


class LoweredShards:
    """``pmap(f).lower(*args)``: the staged per-shard program of one specialization."""

    def __init__(self, staged: StagedModule, strategy: str, size: int) -> None:
        self.staged, self.strategy, self.size = staged, strategy, size
        self.in_axes: list[Optional[int]] = []  # each flat argument's mapped axis
        self.out_axes: list[Optional[int]] = []  # each flat output's

    @property
    def out_avals(self) -> list[ShapedArray]:
        """One shard's outputs."""
        return self.staged.out_avals

    def as_text(self, stage: str = "stablehlo", debug_info: bool = False) -> str:
        """MLIR text at `stage` (``stablehlo``, or IREE's ``linalg``/``flow`` for the devices
        strategy's module)."""
        if stage == "stablehlo":
            return self.staged.text(debug_info)
        if self.strategy == "collectives":
            raise ValueError("the collectives strategy's module is StableHLO for XLA/PJRT; "
                             "IREE's CPU pipeline has no collectives to lower it with")
        return lower_to_stage(self.staged.bytecode(), stage, devices=self.size)


def lower(pm: Pmapped, args: tuple, kwargs: dict,
          strategy: Optional[str] = None) -> LoweredShards:
    """The per-shard program of `strategy` (pmap's own by default)."""
    strategy = strategy or pm.strategy
    leaves, axes, tree, statics, size, devices, shard_avals = _specialize(
        pm, args, kwargs, check_devices=strategy != "collectives")
    out_box: list = []
    flat_fun = _per_shard_fun(pm, tree, statics, out_box)
    # `main`, as jit(f).lower names it (and as XLA/PJRT requires of a module's entry).
    lowered = _lower(pm, flat_fun, shard_avals, size, "main", strategy)
    lowered.out_axes = _out_axes(pm, out_box[0], lowered.staged.out_avals)
    lowered.in_axes = list(axes)
    return lowered


def _lower(pm: Pmapped, flat_fun: Callable, shard_avals: list, size: int, name: str,
           strategy: Optional[str]) -> LoweredShards:
    if strategy == "collectives":
        staged = trace_spmd(flat_fun, shard_avals, NativeAxis(pm.axis_name, size), name=name)
        return LoweredShards(staged, "collectives", size)
    return LoweredShards(trace_devices(flat_fun, shard_avals, size, pm.axis_name, name=name),
                         "devices", size)
