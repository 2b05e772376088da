"""``jax.sharding.reshard``: values placed by shardings, eagerly or inside a trace."""

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
