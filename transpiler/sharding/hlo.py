"""Shardings in XLA's notation, on an exported StableHLO module: what XLA's partitioner
(GSPMD) reads to split a ``jit(f, in_shardings=..., out_shardings=...)`` program over a
mesh on TPU-class and multi-host systems. IREE 3.13 ignores these attributes.

``NamedSharding(mesh, P("b", None))`` on a 2-device mesh is ``{devices=[2,1]0,1}``: the
tile counts of each dimension, then the device (partition) of each tile, major first; mesh
axes the spec does not name add a last tile dimension of replicas
(``last_tile_dim_replicate``). A device's partition number is its position in the mesh's
devices, row-major.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np
from iree.compiler import ir

from transpiler.sharding.specs import NamedSharding


def hlo_sharding(sharding: Any, ndim: int) -> Optional[str]:
    """XLA's sharding string of a value of `ndim` dimensions (None: unspecified)."""
    if not isinstance(sharding, NamedSharding):
        return None
    mesh, spec = sharding.mesh, sharding.spec
    sizes = mesh.shape
    tiles = [math.prod(sizes[a] for a in spec.axes_of(d)) for d in range(ndim)]
    if all(t == 1 for t in tiles):
        return "{replicated}"
    unused = [a for a in mesh.axis_names if a not in spec.mesh_axes()]
    replicas = math.prod(sizes[a] for a in unused)
    assignment = np.empty((*tiles, replicas), dtype=np.int64)
    for flat, coords in enumerate(np.ndindex(*mesh.axis_sizes)):
        at = dict(zip(mesh.axis_names, coords))
        index = []
        for d in range(ndim):
            k = 0
            for a in spec.axes_of(d):  # the first axis major
                k = k * sizes[a] + at[a]
            index.append(k)
        r = 0
        for a in unused:
            r = r * sizes[a] + at[a]
        assignment[(*index, r)] = flat
    dims = tiles + ([replicas] if replicas > 1 else [])
    ids = ",".join(str(int(i)) for i in assignment.ravel())
    last = " last_tile_dim_replicate" if replicas > 1 else ""
    return f"{{devices=[{','.join(map(str, dims))}]{ids}{last}}}"


def annotate(module: ir.Module, context: ir.Context, arg_shardings: Sequence[Any],
             result_shardings: Sequence[Any], partitions: int) -> None:
    """Put each argument's and result's sharding on the module's ``main`` (as
    ``mhlo.sharding``) and mark it a program of `partitions` partitions, one replica."""
    with context:
        main = next(op for op in module.body.operations
                    if op.operation.name == "func.func" and
                    ir.StringAttr(op.attributes["sym_name"]).value == "main")
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)

        def attrs(shardings: Sequence[Any], types: Sequence[Any]) -> ir.ArrayAttr:
            entries = []
            for sharding, t in zip(shardings, types):
                text = hlo_sharding(sharding, ir.RankedTensorType(t).rank)
                entries.append(ir.DictAttr.get(
                    {} if text is None else {"mhlo.sharding": ir.StringAttr.get(text)}))
            return ir.ArrayAttr.get(entries)

        main.attributes["arg_attrs"] = attrs(arg_shardings, ftype.inputs)
        main.attributes["res_attrs"] = attrs(result_shardings, ftype.results)
        i32 = ir.IntegerType.get_signless(32)
        module.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, partitions)
        module.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, 1)
