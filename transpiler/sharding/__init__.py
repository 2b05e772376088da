"""``jax.sharding``: meshes of devices, partition specs, shardings, and `reshard`.

Arrays placed with a `NamedSharding` (``device_put(x, sharding)``) carry it as
``x.sharding`` and show each device's piece as ``x.addressable_shards``. `shard_map`
(transpiler/spmd/shard_map.py) runs a function per shard over a mesh's axes.
"""

from transpiler.sharding.mesh import (AbstractMesh, AxisType, Mesh, get_abstract_mesh,
                                      get_mesh, make_mesh, set_mesh, use_abstract_mesh,
                                      use_mesh)
from transpiler.sharding.specs import (NamedSharding, P, PartitionSpec, Shard, Sharding,
                                       SingleDeviceSharding, make_single_device_sharding)
from transpiler.sharding.placement import reshard

__all__ = ["AbstractMesh", "AxisType", "Mesh", "NamedSharding", "P", "PartitionSpec", "Shard",
           "Sharding", "SingleDeviceSharding", "get_abstract_mesh", "get_mesh",
           "make_mesh", "make_single_device_sharding", "reshard", "set_mesh",
           "use_abstract_mesh", "use_mesh"]
