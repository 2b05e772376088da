"""transpiler: JAX's composable transformations as a source-to-source compiler on IREE.

    import transpiler as jax
    import transpiler.numpy as jnp
"""

from transpiler import (  # noqa: F401
    dtypes, example_libraries, lax, nn, primitives, random, scipy, tree, tree_util
)
from transpiler.array import Array, DeviceArray, ShapeDtypeStruct, device_get, device_put
from transpiler.config import config
from transpiler.errors import TranspileError
from transpiler.import_hook import install_import_hook
from transpiler.jit import jit
from transpiler.transforms.reverse.api import grad, value_and_grad, vjp
from transpiler.transforms.reverse.custom_vjp import custom_vjp
from transpiler.transforms.forward.custom_jvp import custom_jvp
from transpiler.transforms.forward.api import hessian, jacfwd, jacrev, jvp, linearize
from transpiler.transforms.batch.api import vmap
from transpiler.sharding.pmap_api import pmap
from runtime import Device, devices, local_device_count
from transpiler.version import __version__  # noqa: F401 (transpiler.__version__)


__all__ = ["Array", "DeviceArray", "Device", "ShapeDtypeStruct", "TranspileError", "config", "custom_jvp",
           "custom_vjp", "device_get", "device_put", "devices", "grad", "hessian", "install_import_hook", "jacfwd",
           "jacrev", "jit", "jvp", "linearize", "local_device_count", "pmap", "tree", "tree_util",
           "dtypes",
           "value_and_grad", "vjp", "vmap"]
