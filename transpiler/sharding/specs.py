"""``PartitionSpec`` and the shardings: how an array's dimensions split over a mesh.

``P("batch", None)`` splits dimension 0 over mesh axis ``batch`` and keeps dimension 1
whole; ``P(("x", "y"))`` splits dimension 0 over both axes, ``x`` major; mesh axes a spec
does not name hold the whole (replicated) array. `NamedSharding(mesh, spec)` is a spec
on a mesh; `SingleDeviceSharding(device)` one device's whole array.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

import runtime
from transpiler.errors import located
from transpiler.sharding.mesh import Mesh


class _Unconstrained:
    def __repr__(self) -> str:
        return "UNCONSTRAINED"


class PartitionSpec:
    """``P(*partitions)``: one entry per array dimension -- None (not split), a mesh axis
    name, or a tuple of names (split over their product, the first major); dimensions
    beyond the entries are not split."""

    UNCONSTRAINED: Any = _Unconstrained()
    __match_args__ = ()

    def __init__(self, *partitions: Any, unreduced: Any = frozenset(),
                 reduced: Any = frozenset()) -> None:
        for p in partitions:
            ok = p is None or p is PartitionSpec.UNCONSTRAINED or isinstance(p, str) or \
                isinstance(p, (tuple, list)) and all(isinstance(n, str) for n in p)
            if not ok:
                raise located(TypeError, f"PartitionSpec entries are None, a mesh axis name or "
                              f"a tuple of names; got {p!r}")
        self._partitions = tuple(tuple(p) if isinstance(p, list) else p for p in partitions)
        self.unreduced = frozenset(unreduced)
        self.reduced = frozenset(reduced)

    def __len__(self) -> int:
        return len(self._partitions)

    def __iter__(self) -> Any:
        return iter(self._partitions)

    def __getitem__(self, index: Any) -> Any:
        return self._partitions[index]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartitionSpec) and \
            _normalized(self._partitions) == _normalized(other._partitions)

    def __hash__(self) -> int:
        return hash(_normalized(self._partitions))

    def __repr__(self) -> str:
        inner = ", ".join(repr(p) for p in self._partitions)
        return f"P({inner},)" if len(self._partitions) == 1 else f"P({inner})"

    def axes_of(self, dim: int) -> tuple[str, ...]:
        """The mesh axes dimension `dim` splits over, major first."""
        p = self._partitions[dim] if dim < len(self._partitions) else None
        if p is None or p is PartitionSpec.UNCONSTRAINED:
            return ()
        return (p,) if isinstance(p, str) else tuple(p)

    def mesh_axes(self) -> list[str]:
        """Every mesh axis this spec names, in order."""
        return [n for d in range(len(self)) for n in self.axes_of(d)]


def _normalized(partitions: tuple) -> tuple:
    out = [(p,) if isinstance(p, str) else p for p in partitions]
    while out and out[-1] is None:  # P("x") == P("x", None)
        out.pop()
    return tuple(out)


P = PartitionSpec


def check_spec(spec: PartitionSpec, mesh: Mesh, what: str) -> None:
    """`spec`'s axes exist in `mesh` and none is used twice; else a ValueError naming
    `what` (the argument), the axis and the mesh's axes."""
    named = spec.mesh_axes()
    for name in named:
        if name not in mesh.axis_names:
            raise located(ValueError, f"{what}: the PartitionSpec {spec!r} names mesh axis "
                          f"{name!r}, which is not in the mesh (its axes: {mesh.axis_names})",
                          "name one of the mesh's axes, or None for a dimension that is "
                          "not split")
    repeated = sorted({n for n in named if named.count(n) > 1})
    if repeated:
        raise located(ValueError, f"{what}: the PartitionSpec {spec!r} uses mesh axis "
                      f"{repeated[0]!r} for more than one dimension")


def check_divisible(spec: PartitionSpec, mesh: Mesh, shape: Sequence[int], what: str) -> None:
    """Each dimension of `shape` divides by the product of its mesh axes' sizes, and `spec`
    has no more entries than `shape` dimensions; else a ValueError naming `what`."""
    if len(spec) > len(shape):
        raise ValueError(f"{what} has shape {tuple(shape)}, {len(shape)} dimensions, but its "
                         f"PartitionSpec {spec!r} has {len(spec)} entries")
    for d, size in enumerate(shape):
        axes = spec.axes_of(d)
        parts = math.prod(mesh.shape[a] for a in axes)
        if size % parts:
            sizes = " x ".join(f"{a!r} ({mesh.shape[a]})" for a in axes)
            raise ValueError(f"{what} has shape {tuple(shape)}: its dimension {d} (size "
                             f"{size}) splits over mesh axis {sizes} into {parts} parts, "
                             f"but {parts} does not divide {size}")


class Sharding:
    """How an array is laid out over devices."""

    @property
    def device_set(self) -> set:
        return set(self._device_list())

    @property
    def addressable_devices(self) -> set:
        return self.device_set

    @property
    def num_devices(self) -> int:
        return len(self._device_list())

    @property
    def is_fully_addressable(self) -> bool:
        return True

    @property
    def memory_kind(self) -> str:
        return "device"

    def _device_list(self) -> list:
        raise NotImplementedError(type(self).__name__)  # each sharding lists its devices

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict:
        raise NotImplementedError(type(self).__name__)  # each sharding places its pieces

    def replica_ids(self) -> dict:
        raise NotImplementedError(type(self).__name__)  # and numbers their copies

    @property
    def is_fully_replicated(self) -> bool:
        raise NotImplementedError(type(self).__name__)

    def shard_shape(self, global_shape: Sequence[int]) -> tuple[int, ...]:
        """The shape of each device's piece of an array of `global_shape`."""
        index = next(iter(self.devices_indices_map(global_shape).values()))
        return tuple(len(range(*s.indices(n))) for s, n in zip(index, global_shape))


class NamedSharding(Sharding):
    """``NamedSharding(mesh, spec)``: `spec` (a PartitionSpec) over `mesh`'s named axes."""

    def __init__(self, mesh: Mesh, spec: Optional[PartitionSpec] = None, *,
                 memory_kind: Optional[str] = None) -> None:
        if not isinstance(mesh, Mesh):
            raise located(TypeError, f"NamedSharding: expected a Mesh, got {type(mesh).__name__}")
        spec = PartitionSpec() if spec is None else spec
        if not isinstance(spec, PartitionSpec):
            raise located(TypeError, f"NamedSharding: expected a PartitionSpec, got {spec!r}")
        check_spec(spec, mesh, "NamedSharding")
        self.mesh, self.spec = mesh, spec

    def _device_list(self) -> list:
        return list(self.mesh.devices.flat)

    @property
    def is_fully_replicated(self) -> bool:
        return all(self.mesh.shape[a] == 1 for a in self.spec.mesh_axes())

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict:
        """Each device's piece of an array of `global_shape`: a tuple of slices."""
        check_divisible(self.spec, self.mesh, global_shape, f"an array under {self!r}")
        mesh_shape = self.mesh.shape
        out = {}
        for coords in np.ndindex(*self.mesh.axis_sizes):
            at = dict(zip(self.mesh.axis_names, coords))
            index = []
            for d, size in enumerate(global_shape):
                axes = self.spec.axes_of(d)
                if not axes:
                    index.append(slice(None))
                    continue
                parts = math.prod(mesh_shape[a] for a in axes)
                k = 0
                for a in axes:  # the first axis major
                    k = k * mesh_shape[a] + at[a]
                step = size // parts
                index.append(slice(k * step, (k + 1) * step))
            out[self.mesh.devices[coords]] = tuple(index)
        return out

    def replica_ids(self) -> dict:
        """Each device's replica number among the devices holding the same piece."""
        unused = [i for i, n in enumerate(self.mesh.axis_names)
                  if n not in self.spec.mesh_axes()]
        out = {}
        for coords in np.ndindex(*self.mesh.axis_sizes):
            k = 0
            for i in unused:
                k = k * self.mesh.axis_sizes[i] + coords[i]
            out[self.mesh.devices[coords]] = k
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NamedSharding) and self.mesh == other.mesh and \
            self.spec == other.spec

    def __hash__(self) -> int:
        return hash((self.mesh, self.spec))

    def __repr__(self) -> str:
        axes = ", ".join(f"{n!r}: {s}" for n, s in self.mesh.shape.items())
        return f"NamedSharding(mesh=Mesh({axes}), spec={self.spec!r})"


class SingleDeviceSharding(Sharding):
    """``SingleDeviceSharding(device)``: the whole array on one device."""

    def __init__(self, device: Any, *, memory_kind: Optional[str] = None) -> None:
        if not isinstance(device, runtime.Device):
            raise located(TypeError, f"SingleDeviceSharding: expected a Device, got {device!r}")
        self.device = device

    def _device_list(self) -> list:
        return [self.device]

    @property
    def is_fully_replicated(self) -> bool:
        return True

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict:
        return {self.device: tuple(slice(None) for _ in global_shape)}

    def replica_ids(self) -> dict:
        return {self.device: 0}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SingleDeviceSharding) and self.device is other.device

    def __hash__(self) -> int:
        return hash(id(self.device))

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self.device!r})"


def make_single_device_sharding(device: Any) -> SingleDeviceSharding:
    return SingleDeviceSharding(device)


class Shard:
    """One device's piece of an array: ``device``, ``index`` (a tuple of slices of the
    global array), ``replica_id`` and ``data`` (the piece, on that device)."""

    __slots__ = ("device", "index", "replica_id", "data")

    def __init__(self, device: Any, index: tuple, replica_id: int, data: Any) -> None:
        self.device, self.index, self.replica_id, self.data = device, index, replica_id, data

    def __repr__(self) -> str:
        return f"Shard(device={self.device!r}, index={self.index}, " \
               f"replica_id={self.replica_id}, data={self.data!r})"
