"""``jax.sharding.Mesh``: devices laid out in a named n-d grid, and the current mesh.

A mesh names the axes that `PartitionSpec`s (specs.py) split arrays over and that
`shard_map`'s collectives reduce over. ``make_mesh((2,), ("batch",))`` takes the first
devices of ``transpiler.devices()``; ``set_mesh(mesh)`` makes it the current mesh for
`shard_map`, `reshard` and `NamedSharding`-less specs (as a context manager, or for the
rest of the program).
"""

from __future__ import annotations

import contextlib
import enum
import math
from collections import OrderedDict
from typing import Any, Iterator, Optional, Sequence

import numpy as np

import runtime
from transpiler.errors import located


class AxisType(enum.Enum):
    """How the compiler may treat a mesh axis (JAX's sharding-in-types). Here every axis
    behaves as ``Auto``: values are resharded where a spec asks, never refused."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self) -> str:
        return self.name


class Mesh:
    """``Mesh(devices, axis_names, axis_types=None)``: `devices` an n-d array (or nested
    list) of devices, one name per dimension."""

    def __init__(self, devices: Any, axis_names: Any,
                 axis_types: Optional[Sequence[AxisType]] = None) -> None:
        grid = np.empty(np.shape(np.array(devices, dtype=object)), dtype=object)
        grid[...] = np.array(devices, dtype=object)
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if grid.ndim != len(names):
            raise located(ValueError, f"Mesh: {len(names)} axis names {names} for a device "
                          f"array of {grid.ndim} dimensions (shape {grid.shape})")
        if len(set(names)) != len(names) or not all(isinstance(n, str) for n in names):
            raise located(ValueError, f"Mesh: axis names must be distinct strings, got {names}")
        flat = list(grid.flat)
        if not all(isinstance(d, runtime.Device) for d in flat):
            raise located(TypeError, "Mesh: devices must be transpiler devices "
                          "(transpiler.devices())")
        if len({id(d) for d in flat}) != len(flat):
            raise located(ValueError, f"Mesh: a device appears twice in {flat}")
        types = tuple(axis_types) if axis_types is not None else (AxisType.Explicit,) * len(names)
        if len(types) != len(names) or not all(isinstance(t, AxisType) for t in types):
            raise located(ValueError, f"Mesh: axis_types must be one AxisType per axis, got "
                          f"{axis_types}")
        self.devices = grid
        self.axis_names: tuple[str, ...] = names
        self.axis_types: tuple[AxisType, ...] = types

    @property
    def shape(self) -> "OrderedDict[str, int]":
        return OrderedDict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def shape_tuple(self) -> tuple[tuple[str, int], ...]:
        return tuple(zip(self.axis_names, self.devices.shape))

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def empty(self) -> bool:
        return self.size == 0

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.index, otypes=[int])(self.devices)

    @property
    def local_devices(self) -> list:
        return list(self.devices.flat)

    @property
    def abstract_mesh(self) -> "Mesh":
        return self

    def axis_size(self, name: str) -> int:
        return self.shape[name]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mesh) and self.axis_names == other.axis_names and \
            self.devices.shape == other.devices.shape and \
            all(a is b for a, b in zip(self.devices.flat, other.devices.flat))

    def __hash__(self) -> int:
        return hash((self.axis_names, self.devices.shape, tuple(map(id, self.devices.flat))))

    def __repr__(self) -> str:
        types = ", ".join(t.name for t in self.axis_types)
        return f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names}, " \
               f"axis_types=({types},))"

    def __enter__(self) -> "Mesh":  # ``with mesh:`` (JAX's older form of set_mesh)
        _STACK.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _STACK.pop()


AbstractMesh = Mesh  # the shape of a mesh is all that is read here


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str],
              axis_types: Optional[Sequence[AxisType]] = None, *,
              devices: Optional[Sequence[Any]] = None) -> Mesh:
    """``jax.make_mesh``: a mesh of the first ``prod(axis_shapes)`` devices."""
    shape = tuple(int(s) for s in axis_shapes)
    available = list(devices) if devices is not None else runtime.devices()
    need = math.prod(shape)
    if need > len(available):
        raise located(ValueError, f"make_mesh: the mesh {dict(zip(axis_names, shape))} needs "
                      f"{need} devices, and {len(available)} are available",
                      "raise the number of CPU devices with TRANSPILER_CPU_DEVICES=<n> (set "
                      "before the first use of a device)")
    grid = np.empty(need, dtype=object)
    grid[:] = available[:need]
    return Mesh(grid.reshape(shape), tuple(axis_names), axis_types)


_STACK: list[Mesh] = []  # set_mesh's context managers, innermost last
_GLOBAL: list[Optional[Mesh]] = [None]


class _MeshSetting:
    """What ``set_mesh(mesh)`` returns: it has set `mesh` already; as a context manager it
    restores the previous mesh on exit."""

    def __init__(self, previous: Optional[Mesh]) -> None:
        self.previous = previous

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        _GLOBAL[0] = self.previous


def set_mesh(mesh: Optional[Mesh]) -> _MeshSetting:
    """``jax.set_mesh``: `mesh` is the current mesh -- inside ``with set_mesh(mesh):``, or
    from now on when called alone."""
    if mesh is not None and not isinstance(mesh, Mesh):
        raise located(TypeError, f"set_mesh: expected a Mesh, got {type(mesh).__name__}")
    previous = _GLOBAL[0]
    _GLOBAL[0] = mesh
    return _MeshSetting(previous)


@contextlib.contextmanager
def use_mesh(mesh: Mesh) -> Iterator[None]:
    """`mesh` is the current mesh inside the ``with`` block."""
    with set_mesh(mesh):
        yield


def get_mesh() -> Optional[Mesh]:
    """The current mesh (``set_mesh``, ``with mesh:``), or None."""
    return _STACK[-1] if _STACK else _GLOBAL[0]


get_abstract_mesh = get_mesh
use_abstract_mesh = use_mesh
