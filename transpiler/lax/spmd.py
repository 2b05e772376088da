"""The axes of the running pmaps, as the collectives see them.

While pmap's per-shard function is traced for several devices (the devices and
collectives strategies, transpiler/spmd/), each shard is a program of its own: a
collective over a pmap axis is emitted by the strategy's `SpmdAxis` (transfers between
devices, or StableHLO collectives), which ``lax.psum`` and the others find here by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from transpiler.errors import TranspileError, user_location
from transpiler.per_thread import PerThreadList


class SpmdAxis(ABC):
    """The axis of a `pmap` whose per-shard function is being traced for several devices
    (transpiler/spmd/): each shard is a program of its own, so a collective over this
    axis is emitted by the strategy (transfers between devices, or StableHLO collectives).
    Each method takes one leaf as one shard sees it and returns that shard's result."""

    def __init__(self, name: Any, size: int) -> None:
        self.name, self.size = name, size

    @abstractmethod
    def psum(self, x: Any) -> Any:
        ...

    def psum_leaves(self, leaves: list) -> list:
        """``psum`` of several leaves at once (a strategy may combine their transfers)."""
        return [self.psum(x) for x in leaves]

    @abstractmethod
    def pmax(self, x: Any) -> Any:
        ...

    @abstractmethod
    def pmin(self, x: Any) -> Any:
        ...

    @abstractmethod
    def all_gather(self, x: Any, axis: int, tiled: bool) -> Any:
        """Every shard's `x` stacked along a new `axis` (merged into it when `tiled`)."""
        ...

    @abstractmethod
    def psum_scatter(self, x: Any, dimension: int, tiled: bool) -> Any:
        """Shard k's block of ``psum(x)`` along `dimension` (removed unless `tiled`)."""
        ...

    @abstractmethod
    def ppermute(self, x: Any, sources: list[int | None]) -> Any:
        """Shard k gets the `x` of shard ``sources[k]`` (zeros where that is None)."""
        ...

    @abstractmethod
    def axis_index(self) -> Any:
        ...


# The axes of the pmaps being traced per shard, outermost first; vmap's names shadow them.
SPMD: PerThreadList[SpmdAxis] = PerThreadList("pmap_axes")


def spmd_axis(axis_name: Any, op: str, axis_index_groups: Any = None) -> SpmdAxis | None:
    """The pmap axis a collective over `axis_name` runs across, or None (then it is a vmap's
    axis, or unbound: see `resolve`)."""
    from transpiler.lax.parallel import AXES, lookup  # (lazy: parallel.py imports this module)
    if not SPMD:
        return None
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    found = [a for a in SPMD if a.name in names and lookup(a.name, AXES) is None]
    if not found:
        return None
    if len(names) > 1:
        raise TranspileError(f"lax.{op} over the axes {axis_name!r}: a collective over a "
                             "pmap axis and other axes at once is not supported",
                             user_location(), "apply one collective per axis")
    if axis_index_groups is not None:
        raise TranspileError(f"lax.{op}: axis_index_groups is not supported", user_location())
    return found[-1]
