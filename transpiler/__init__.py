"""transpiler: JAX's composable transformations as a source-to-source compiler on IREE.

    import transpiler as jax
    import transpiler.numpy as jnp
"""

from transpiler import (  # noqa: F401
    dtypes, errors, example_libraries, lax, nn, primitives, random, scipy, tree, tree_util
)
from transpiler.array import DeviceArray, ShapeDtypeStruct, device_get, device_put
from transpiler.numpy import ndarray as Array  # jax.Array: every array's type
from transpiler.config import config
from transpiler.errors import TranspileError
from transpiler.import_hook import install_import_hook
from transpiler.jit import clear_caches, disable_jit, jit
from transpiler.api_helpers import (block_until_ready, default_backend,
                                    default_matmul_precision, device_count, devices,
                                    enable_x64,
                                    ensure_compile_time_eval, eval_shape, host_count, host_id,
                                    host_ids, linear_transpose, local_devices, named_call,
                                    named_scope, print_environment_info, process_count,
                                    process_index, process_indices, typeof)
from transpiler.jaxpr import make_jaxpr
from transpiler.host_callbacks import pure_callback
from transpiler import ad_checkpoint, debug, experimental, flatten_util  # noqa: F401
from transpiler.ad_checkpoint import checkpoint, checkpoint_policies, remat
from transpiler.transforms.reverse.api import grad, value_and_grad, vjp
from transpiler.transforms.reverse.custom_vjp import custom_vjp
from transpiler.transforms.forward.custom_jvp import custom_jvp
from transpiler.transforms.forward.api import hessian, jacfwd, jacrev, jvp, linearize
from transpiler.transforms.batch.api import vmap
from transpiler.spmd.pmap_api import pmap
from transpiler.spmd.shard_map import shard_map, smap
from transpiler import sharding  # noqa: F401
from transpiler.sharding import NamedSharding, P, Shard, make_mesh, reshard, set_mesh
from transpiler.sharding.placement import (make_array_from_callback,
                                          make_array_from_process_local_data,
                                          make_array_from_single_device_arrays)
from runtime import Device, local_device_count
from transpiler.version import __version__  # noqa: F401 (transpiler.__version__)

jacobian = jacrev  # jax.jacobian is jacrev


__all__ = ["Array", "DeviceArray", "Device", "ShapeDtypeStruct", "TranspileError", "config", "custom_jvp",
           "custom_vjp", "device_get", "device_put", "devices", "grad", "hessian", "install_import_hook", "jacfwd",
           "jacrev", "jit", "jvp", "linearize", "local_device_count", "pmap", "tree", "tree_util",
           "dtypes",
           "value_and_grad", "vjp", "vmap", "block_until_ready", "default_backend", "device_count",
           "disable_jit", "ensure_compile_time_eval", "eval_shape", "host_count", "host_id",
           "host_ids", "jacobian", "local_devices", "named_call", "named_scope", "process_count",
           "process_index", "process_indices", "typeof", "ad_checkpoint", "checkpoint",
           "checkpoint_policies", "clear_caches", "debug", "default_matmul_precision", "enable_x64",
           "linear_transpose", "remat", "errors", "make_jaxpr", "print_environment_info", "flatten_util",
           "pure_callback", "experimental", "shard_map", "smap", "sharding", "NamedSharding", "P",
           "Shard", "make_mesh", "reshard", "set_mesh", "make_array_from_callback",
           "make_array_from_process_local_data", "make_array_from_single_device_arrays"]
