"""``pmap`` with JAX's signature.

``pmap(f, axis_name)(*args)`` splits each mapped argument along its `in_axes` axis into one
shard per device, runs `f` on every shard with the collectives over `axis_name` combining
the shards, and stacks each shard's outputs along `out_axes`. A `Pmapped` is a `Vmapped`
whose batch is the shards: wherever a vmap would run (inside `jit`, `vmap`, `grad`, or
with ``strategy="emulated"``) it runs as one, which is the semantic oracle; called on
its own it runs by the ``devices`` strategy (multi_device.py): one IREE module with every
shard's program on its own device.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional, Sequence

import numpy as np

import runtime
from transpiler import tree_util
from transpiler.errors import TranspileError, located, user_location
from transpiler.primitives import core
from transpiler.primitives.core import ShapedArray, abstractify
from transpiler.transforms import bt
from transpiler.transforms.batch.api import Vmapped
from transpiler.transforms.common.generated import ModuleCode, at_creation
from transpiler.spmd.per_shard_source import per_shard_source
from transpiler.transforms.batch.api import check_axes
from transpiler.array import Array
from transpiler.transforms.autograph.runtime import convert_for_jit
from transpiler.transforms.batch.api import _arg_names as names
from transpiler.tracebacks import api_boundary

STRATEGIES = ("devices", "emulated", "collectives")


class Pmapped(Vmapped):
    """``pmap(f, ...)``: call it, or read ``.source`` (the per-shard code)."""

    def __init__(self, fun: Callable, axis_name: Any, in_axes: Any, out_axes: Any,
                 static_argnums: tuple[int, ...], devices: Optional[Sequence[runtime.Device]],
                 axis_size: Optional[int], strategy: Optional[str]) -> None:
        super().__init__(fun, in_axes, out_axes, axis_name, axis_size)
        self.static_argnums = static_argnums
        self.devices = list(devices) if devices is not None else None
        self.strategy = strategy
        self._compiled: dict[Any, Any] = {}

    def generate_code(self, module_name: str) -> None:
        per_shard_code(self.fun, module_name)

    def __repr__(self) -> str:
        return f"<pmap({self.fname})>"

    @api_boundary
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if core.trace_stack or bt.AXES or self.strategy == "emulated":
            return super().__call__(*args, **kwargs)  # emulated: vmap over the shards
        if self.strategy == "collectives":
            raise TranspileError(
                f"pmap({self.fname}, strategy='collectives') builds a per-replica StableHLO "
                "program for XLA/PJRT and IREE's GPU targets; it does not run here",
                user_location(), "export it with pmap(f).export(*args).as_text(), or call "
                "pmap with strategy='devices' or 'emulated'")
        from transpiler.spmd.multi_device_call import call_on_devices  # cycle: it imports this module
        return call_on_devices(self, args, kwargs)

    def axes_for(self, args: tuple) -> Any:
        """As vmap's, with the static arguments unmapped."""
        axes = self.in_axes
        if not self.static_argnums:
            return axes
        per_arg = tuple(axes) if isinstance(axes, (tuple, list)) else (axes,) * len(args)
        return tuple(None if i in self.static_argnums else a for i, a in enumerate(per_arg))

    # --- what the strategies share ------------------------------------------------------
    def split(self, args: tuple, kwargs: dict) -> tuple[list, list, Any, dict, int]:
        """(each dynamic leaf, its mapped axis or None, the tree of the dynamic arguments,
        the static arguments by position, the number of shards); pmap's checks."""
        statics = {i: args[i] for i in self.static_argnums if i < len(args)}
        for i, value in statics.items():
            try:
                hash(value)
            except TypeError:
                raise TypeError(f"pmap({self.fname}): static_broadcasted_argnums argument {i} "
                                f"must be hashable, got {type(value).__name__}") from None
        dynamic = tuple(a for i, a in enumerate(args) if i not in statics)
        axes = self.in_axes
        if isinstance(axes, list):
            axes = tuple(axes)
        if isinstance(axes, tuple):
            if len(axes) != len(args):
                raise TranspileError(f"pmap({self.fname}): in_axes has {len(axes)} entries but "
                                     f"the function was called with {len(args)} positional "
                                     "arguments", user_location(),
                                     "give one entry per positional argument (None for a "
                                     "replicated one)")
            axes = tuple(a for i, a in enumerate(axes) if i not in statics)
        else:
            axes = (axes,) * len(dynamic)
        leaves, leaf_axes, sizes = [], [], []
        names = _arg_names(self.fun, len(args), statics)
        for name, a, x in [*zip(names, axes, dynamic), *((f"keyword argument `{k}`", 0, v)
                                                          for k, v in sorted(kwargs.items()))]:
            for leaf, axis in _leaf_axes(a, x, name, self.fname):
                if axis is not None:
                    aval = abstractify(leaf)
                    axis = axis + aval.ndim if axis < 0 else axis
                    if not 0 <= axis < aval.ndim:
                        raise TranspileError(
                            f"pmap({self.fname}): in_axes {axis} is out of range for {name} of "
                            f"shape {aval.shape}", user_location(),
                            "a scalar has no axis to map; give it in_axes None")
                    sizes.append((name, aval.shape[axis]))
                leaves.append(leaf)
                leaf_axes.append(axis)
        tree = tree_util.tree_structure((dynamic, kwargs))
        found = {s for _, s in sizes} | ({self.axis_size} if self.axis_size else set())
        if len(found) > 1:
            listed = "; ".join(f"{w} has {s} along its mapped axis" for w, s in sizes)
            raise TranspileError(f"pmap({self.fname}): the mapped axes have different sizes: "
                                 f"{listed}", user_location(),
                                 "every mapped axis must have one entry per device")
        if not found:
            raise TranspileError(f"pmap({self.fname}): no argument is mapped", user_location(),
                                 "map at least one argument (in_axes), or pass axis_size=")
        return leaves, leaf_axes, tree, statics, found.pop()

    def devices_for(self, size: int) -> list[runtime.Device]:
        """The devices of `size` shards; an error naming the counts when they do not fit."""
        available = self.devices if self.devices is not None else runtime.devices()
        if self.devices is not None and len(available) != size:
            raise TranspileError(f"pmap({self.fname}): the mapped axis has size {size} but "
                                 f"{len(available)} devices were given", user_location(),
                                 "give one device per shard")
        if size > len(available):
            raise TranspileError(
                f"pmap({self.fname}): the mapped axis {self.axis_name!r} has size {size}, but "
                f"only {len(available)} devices are available", user_location(),
                "give a leading axis of at most local_device_count() entries, or raise the "
                "number of CPU devices with TRANSPILER_CPU_DEVICES=<n> (set before the first "
                "use of a device)")
        return list(available[:size])

    @property
    def source(self) -> str:
        """The per-shard code: the function each device runs on its shard, with its
        collectives explicit, under a header saying how arguments are sharded."""
        return per_shard_source(self)

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        """Stage the per-shard program for these arguments: with ``strategy="collectives"``
        one per-replica StableHLO module (XLA/PJRT, ``transpiler build --target stablehlo``),
        else the multi-device module of the ``devices`` strategy."""
        from transpiler.spmd.multi_device_call import lower  # cycle: it imports this module
        return lower(self, args, kwargs)

    def export(self, *args: Any, **kwargs: Any) -> Any:
        """The per-replica StableHLO program (native collectives) for these arguments,
        whatever the strategy: ``pmap(f).export(*args).as_text()`` for XLA/PJRT."""
        from transpiler.spmd.multi_device_call import lower  # cycle: it imports this module
        return lower(self, args, kwargs, strategy="collectives")


def per_shard_code(fun: Callable, module_name: str) -> None:
    """What a per-shard function runs as (pmap's and shard_map's ``generate_code``): its
    control flow converted, as jit's; pmap(grad(f)), pmap(vmap(f)): the inner code."""
    if isinstance(fun, ModuleCode):
        fun.generate_code(module_name)
    elif inspect.isfunction(fun) and fun.__module__ == module_name:
        convert_for_jit(fun)


def _arg_names(fun: Callable, count: int, statics: dict) -> list[str]:
    return [f"argument `{n}`" for i, n in enumerate(names(fun, count)) if i not in statics]


def _leaf_axes(axes: Any, x: Any, where: str, fname: str) -> list[tuple[Any, Optional[int]]]:
    """Each array leaf of `x` with the axis `axes` (a prefix of `x`'s structure) maps."""
    if axes is None or isinstance(axes, int) and not isinstance(axes, bool):
        return [(leaf, axes) for leaf in tree_util.tree_leaves(x)]
    prefix = tree_util.tree_structure(axes, is_leaf=lambda a: a is None)
    try:
        subtrees = prefix.flatten_up_to(x)
    except ValueError as err:
        raise TranspileError(f"pmap({fname}): in_axes for {where} does not match its "
                             f"structure: {err}", user_location(),
                             "in_axes must be a prefix of the arguments' structure") from None
    leaves = tree_util.tree_leaves(axes, is_leaf=lambda a: a is None)
    return [pair for a, sub in zip(leaves, subtrees) for pair in _leaf_axes(a, sub, where, fname)]


def pmap(fun: Optional[Callable] = None, axis_name: Any = None, *, in_axes: Any = 0,
         out_axes: Any = 0, static_broadcasted_argnums: Any = (), devices: Any = None,
         backend: Optional[str] = None, axis_size: Optional[int] = None,
         donate_argnums: Any = (), strategy: Optional[str] = None) -> Any:
    """``jax.pmap``: `fun` run on shards of its mapped arguments, one per device, with the
    collectives over `axis_name` combining them. ``strategy`` (our extension) picks
    ``"devices"`` (the default: one multi-device IREE module), ``"emulated"`` (vmap on
    one device) or ``"collectives"`` (per-replica StableHLO: ``pmap(f).export(*args)``)."""
    if fun is None:
        return functools.partial(pmap, axis_name=axis_name, in_axes=in_axes, out_axes=out_axes,
                                 static_broadcasted_argnums=static_broadcasted_argnums,
                                 devices=devices, backend=backend, axis_size=axis_size,
                                 donate_argnums=donate_argnums, strategy=strategy)
    if not callable(fun):
        raise located(TypeError, f"pmap: expected a function, got {type(fun).__name__}")
    check_axes("pmap", in_axes=in_axes, out_axes=out_axes)
    if strategy is not None and strategy not in STRATEGIES:
        raise ValueError(f"pmap: unknown strategy {strategy!r}; choose one of "
                         f"{', '.join(STRATEGIES)}")
    if backend not in (None, "cpu"):
        raise ValueError(f"pmap: backend {backend!r} is not available; pass devices= (e.g. "
                         "transpiler.devices('vulkan')) to choose devices")
    statics = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
        else tuple(static_broadcasted_argnums)
    n_params = _positional_count(fun)
    for i in statics:
        if not isinstance(i, int) or n_params is not None and not -n_params <= i < n_params:
            raise ValueError(f"pmap({getattr(fun, '__name__', 'fun')}): "
                             f"static_broadcasted_argnums {i!r} is not a positional "
                             "parameter's index")
    statics = tuple(i % n_params if n_params and i < 0 else i for i in statics)
    if devices is not None and not all(isinstance(d, runtime.Device) for d in devices):
        raise TypeError("pmap: devices must be a list of transpiler.Device, e.g. "
                        "transpiler.devices()")
    return at_creation(Pmapped(fun, axis_name, in_axes, out_axes, statics, devices, axis_size,
                               strategy))


def _positional_count(fun: Callable) -> Optional[int]:
    try:
        params = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def sharded_value(parts: Sequence[Any], aval: ShapedArray, axis: Optional[int]) -> Any:
    """The shards' outputs as one array: stacked along `axis` (shard 0's when None)."""
    if axis is None:  # the same on every shard (out_axes None): shard 0's
        return Array._new(np.array(parts[0]), aval)
    values = [np.asarray(p) for p in parts]
    stacked = np.stack(values, axis=axis)
    return Array._new(stacked, ShapedArray(stacked.shape, aval.dtype, aval.weak_type))
