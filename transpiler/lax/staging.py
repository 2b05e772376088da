"""``lax``'s functions about where and how a computation runs rather than what it computes:
``with_sharding_constraint`` (one device here: the value itself), ``platform_dependent``
(the ``cpu`` branch), ``composite`` (its decomposition), ``axis_size`` (the size of a named
vmap/pmap axis) and ``dtype`` (the canonical dtype of a value or type).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import numpy as np

from transpiler import dtypes, tree_util
from transpiler.errors import located
from transpiler.lax.parallel import group_size, resolve
from transpiler.lax.spmd import spmd_axis
from transpiler.numpy.creation import asarray
from transpiler.primitives.core import abstractify
from transpiler.sharding.placement import as_sharding, check_shardings

__all__ = ["with_sharding_constraint", "platform_dependent", "composite", "axis_size", "dtype"]


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """``lax.with_sharding_constraint``: `x` (a pytree) itself -- a constraint on how a
    value is laid out across devices, and a jitted function here runs on one device. The
    shardings are checked (Shardings, or PartitionSpecs on the current mesh, naming its
    axes); the transforms pass derivatives and batches straight through it
    (transpiler/spmd/shard_map.py registers it)."""
    check_shardings(shardings, "lax.with_sharding_constraint")
    for spec in tree_util.tree_leaves(shardings, is_leaf=lambda s: not isinstance(s, (
            tuple, list, dict))):
        as_sharding(spec, "lax.with_sharding_constraint")
    return tree_util.tree_map(asarray, x)


def platform_dependent(*args: Any, default: Optional[Callable] = None,
                       **per_platform: Callable) -> Any:
    """``lax.platform_dependent``: ``per_platform["cpu"](*args)`` (the platform every
    function runs on here), else ``default(*args)``."""
    unknown = set(per_platform) - {"cpu", "cuda", "rocm", "tpu", "gpu", "METAL"}
    if unknown:
        raise located(ValueError, f"lax.platform_dependent: unknown platforms "
                      f"{sorted(unknown)}", "use cpu, cuda, rocm, gpu or tpu")
    branch = per_platform.get("cpu", default)
    if branch is None:
        raise located(NotImplementedError, "lax.platform_dependent: no branch for the 'cpu' "
                      f"platform (given {sorted(per_platform)}) and no default")
    return branch(*args)


def composite(decomposition: Callable, name: str, version: int = 0) -> Callable:
    """``lax.composite``: a function that JAX stages as a named ``stablehlo.composite``
    around `decomposition`, which backends may replace with a kernel of that name. IREE
    runs the decomposition, so that is what is returned (called with its keyword
    attributes as JAX passes them)."""
    if not isinstance(name, str) or not name:
        raise located(ValueError, f"lax.composite: name must be a non-empty str, got {name!r}")

    @functools.wraps(decomposition)
    def call(*args: Any, **kwargs: Any) -> Any:
        return decomposition(*args, **kwargs)
    return call


def axis_size(axis_name: Any) -> int:
    """``lax.axis_size``: the number of members of the named vmap/pmap axes (their
    product, for a tuple of names), a Python int."""
    spmd = spmd_axis(axis_name, "axis_size")
    if spmd is not None:
        return int(spmd.size)
    return group_size(resolve(axis_name, "axis_size"))


def dtype(x: Any, *, canonicalize: bool = True) -> np.dtype:
    """``lax.dtype``: the dtype of a value (an array, a scalar, a Python number's default
    type), or a dtype-like itself, canonicalized (float64 is float32 without x64)."""
    if isinstance(x, (type, np.dtype, str)):
        found = np.dtype(x)
    else:
        found = abstractify(x, 0, "dtype").dtype
    return dtypes.canonicalize(found) if canonicalize else found
