"""Values placed by shardings: ``jax.sharding.reshard`` (eagerly or inside a trace), and
``jax.make_array_from_callback`` / ``_single_device_arrays`` / ``_process_local_data``."""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import array, tree_util
from transpiler.errors import located
from transpiler.lowering.tracer import Tracer
from transpiler.sharding.mesh import get_mesh
from transpiler.sharding.specs import NamedSharding, PartitionSpec, Sharding, check_divisible


def as_sharding(spec: Any, where: str) -> Any:
    """A Sharding as it is, a PartitionSpec on the current mesh (``set_mesh``)."""
    if isinstance(spec, PartitionSpec):
        mesh = get_mesh()
        if mesh is None:
            raise located(ValueError, f"{where}: a PartitionSpec ({spec!r}) needs a mesh, and "
                          "none is set", "pass NamedSharding(mesh, spec), or set one with "
                          "`with jax.set_mesh(mesh):`")
        return NamedSharding(mesh, spec)
    if spec is None or isinstance(spec, Sharding):
        return spec
    raise located(TypeError, f"{where}: expected a Sharding or a PartitionSpec, got "
                  f"{type(spec).__name__}")


def _is_spec(value: Any) -> bool:
    return value is None or isinstance(value, (Sharding, PartitionSpec))


def check_shardings(shardings: Any, where: str) -> None:
    """`shardings` is a pytree of Shardings, PartitionSpecs and Nones."""
    for leaf in tree_util.tree_leaves(shardings, is_leaf=_is_spec):
        if not _is_spec(leaf):
            raise located(TypeError, f"{where}: expected Shardings or PartitionSpecs (or a "
                          f"pytree of them), got {leaf!r}", "write NamedSharding(mesh, "
                          "P('axis')), or P('axis') inside `with jax.set_mesh(mesh):`")


def check_placement(xs: Any, shardings: Any, where: str) -> None:
    """Each array of `xs` fits its sharding (`shardings` a pytree prefix of `xs`): the
    mesh axes exist and divide the dimensions they split."""
    treedef = tree_util.tree_structure(shardings, is_leaf=_is_spec)
    try:
        subtrees = treedef.flatten_up_to(xs)
    except (ValueError, TypeError) as err:
        raise located(ValueError, f"{where} does not match the structure of the values: "
                      f"{err}", "give a pytree prefix of the values (one sharding for all of "
                      "them, or one per argument)") from None
    specs = [as_sharding(s, where) for s in tree_util.tree_leaves(shardings, is_leaf=_is_spec)]
    for spec, sub in zip(specs, subtrees):
        if not isinstance(spec, NamedSharding):
            continue
        for leaf in tree_util.tree_leaves(sub):
            try:
                check_divisible(spec.spec, spec.mesh, np.shape(leaf), f"{where}: a value")
            except ValueError as err:
                raise located(ValueError, str(err), "give the value a shape its mesh axes "
                              "divide, or a PartitionSpec that splits other dimensions") \
                    from None


def leaf_shardings(shardings: Any, xs: Any, where: str) -> list:
    """The sharding of each leaf of `xs` (None where `shardings`, a pytree prefix of `xs`,
    gives none); PartitionSpecs on the current mesh."""
    if shardings is None:
        return [None] * len(tree_util.tree_leaves(xs))
    treedef = tree_util.tree_structure(shardings, is_leaf=_is_spec)
    specs = [as_sharding(s, where) for s in tree_util.tree_leaves(shardings, is_leaf=_is_spec)]
    return [spec for spec, sub in zip(specs, treedef.flatten_up_to(xs))
            for _ in tree_util.tree_leaves(sub)]


def reshard(xs: Any, out_shardings: Any) -> Any:
    """``jax.sharding.reshard``: each array of pytree `xs` placed by its sharding (a
    Sharding or a PartitionSpec on the current mesh; a pytree prefix of `xs`). Under
    `jit` the values pass through unchanged, their shapes checked against the specs: the
    program runs on one device."""
    check_shardings(out_shardings, "reshard")
    check_placement(xs, out_shardings, "reshard")
    treedef = tree_util.tree_structure(out_shardings, is_leaf=_is_spec)
    specs = [as_sharding(s, "reshard") for s in
             tree_util.tree_leaves(out_shardings, is_leaf=_is_spec)]
    out = []
    for spec, sub in zip(specs, treedef.flatten_up_to(xs)):
        out.append(tree_util.tree_map(
            lambda x, spec=spec: x if isinstance(x, Tracer) else array.device_put(x, spec), sub))
    return tree_util.tree_unflatten(treedef, out)


def make_array_from_callback(shape: Any, sharding: Sharding, data_callback: Any,
                             dtype: Any = None) -> Any:
    """``jax.make_array_from_callback``: the array of `shape` whose block on each device
    of `sharding` is ``data_callback(index)`` (its tuple of slices of the global array)."""
    pieces = sharding.devices_indices_map(tuple(shape))
    blocks = {device: np.asarray(data_callback(index)) for device, index in pieces.items()}
    return _assembled(tuple(shape), sharding, pieces, blocks, dtype,
                      "make_array_from_callback")


def make_array_from_single_device_arrays(shape: Any, sharding: Sharding, arrays: Any, *,
                                         dtype: Any = None) -> Any:
    """``jax.make_array_from_single_device_arrays``: the array of `shape` whose block on
    each device of `sharding` (in the order of its devices) is the matching array."""
    pieces = sharding.devices_indices_map(tuple(shape))
    if len(arrays) != len(pieces):
        raise located(ValueError, f"make_array_from_single_device_arrays: {len(arrays)} "
                      f"arrays for a sharding over {len(pieces)} devices",
                      "give one array per device of the sharding, in its devices' order")
    blocks = {device: np.asarray(a) for device, a in zip(pieces, arrays)}
    return _assembled(tuple(shape), sharding, pieces, blocks, dtype,
                      "make_array_from_single_device_arrays")


def make_array_from_process_local_data(sharding: Sharding, local_data: Any,
                                       global_shape: Any = None) -> Any:
    """``jax.make_array_from_process_local_data``: with one process, its data is the whole
    array, placed by `sharding`."""
    if global_shape is not None and tuple(global_shape) != np.shape(local_data):
        raise located(ValueError, f"make_array_from_process_local_data: global_shape "
                      f"{tuple(global_shape)} differs from the data's {np.shape(local_data)}, "
                      "and this is the one process")
    return array.device_put(local_data, sharding)


def _assembled(shape: tuple, sharding: Sharding, pieces: dict, blocks: dict, dtype: Any,
               where: str) -> Any:
    first = next(iter(blocks.values()), None)
    kind = np.dtype(dtype) if dtype is not None else first.dtype if first is not None \
        else np.dtype(np.float32)
    value = np.zeros(shape, kind)
    for device, index in pieces.items():
        block = blocks[device]
        want = value[index].shape
        if block.shape != want:
            raise located(ValueError, f"{where}: the block for {device} has shape "
                          f"{block.shape}, but its index {index} of shape {shape} needs {want}")
        value[index] = block
    return array.device_put(value, sharding)
