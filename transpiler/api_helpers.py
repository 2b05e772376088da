"""JAX's small top-level helpers: ``block_until_ready``, ``eval_shape``, ``typeof``,
``named_call``/``named_scope``, ``ensure_compile_time_eval``, ``linear_transpose``,
``default_matmul_precision`` and the backend and process queries (one CPU backend, one
process)."""

from __future__ import annotations

import contextlib
import platform
import sys
from importlib import metadata
from typing import Any, Callable, Iterator, Optional

import numpy as np

import runtime
from runtime.device import CPU_KINDS, GPU_KINDS
from transpiler import tree_util
from transpiler.array import ShapeDtypeStruct
from transpiler.config import config
from transpiler.errors import located
from transpiler.jit import jit
from transpiler.primitives import core
from transpiler.primitives.core import ShapedArray, abstractify
from transpiler.transforms.reverse.api import vjp
from transpiler.version import __version__

__all__ = ["block_until_ready", "eval_shape", "typeof", "named_call", "named_scope",
           "ensure_compile_time_eval", "default_backend", "device_count", "local_devices",
           "process_count", "process_index", "process_indices", "host_count", "host_id",
           "host_ids", "linear_transpose", "default_matmul_precision", "enable_x64"]


def block_until_ready(x: Any) -> Any:
    """``jax.block_until_ready``: wait until every array of pytree `x` is computed; `x`
    itself is returned."""
    for leaf in tree_util.tree_leaves(x):
        wait = getattr(leaf, "block_until_ready", None)
        if wait is not None:
            wait()
    return x


def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """``jax.eval_shape``: the shapes and dtypes of ``fun(*args, **kwargs)`` as a pytree of
    `ShapeDtypeStruct`s, computed by tracing `fun` (as `jit` does; nothing is compiled or
    run). Arguments may be arrays or `ShapeDtypeStruct`s."""
    if not callable(fun):
        raise located(TypeError, f"eval_shape expects a callable, got {type(fun).__name__}")
    lowered = jit(fun).lower(*args, **kwargs)
    structs = [ShapeDtypeStruct(aval.shape, aval.dtype) for aval in lowered.out_avals]
    return tree_util.tree_unflatten(lowered.out_tree, structs)


def typeof(x: Any) -> ShapedArray:
    """``jax.typeof``: the abstract value (shape, dtype, weak type) of an array or scalar."""
    return abstractify(x, 0, "typeof")


def named_call(fun: Callable, *, name: Optional[str] = None) -> Callable:
    """``jax.named_call``: JAX names the function's region in its jaxpr and profiles;
    there is no such region here, so `fun` itself is returned (the same results under every
    transform)."""
    if not callable(fun):
        raise located(TypeError, f"named_call expects a callable, got {type(fun).__name__}")
    if name is not None and not isinstance(name, str):
        raise located(TypeError, f"named_call: name must be a str, got {type(name).__name__}")
    return fun


@contextlib.contextmanager
def named_scope(name: str) -> Iterator[None]:
    """``jax.named_scope``: JAX prefixes the names of the operations staged inside with
    `name` for profilers; here it only checks `name` (our operations carry your
    file:line:col instead)."""
    if not isinstance(name, str):
        raise located(TypeError, f"named_scope name must be a string, got "
                      f"{type(name).__name__}")
    yield


@contextlib.contextmanager
def ensure_compile_time_eval() -> Iterator[None]:
    """``jax.ensure_compile_time_eval``: inside it, operations whose operands are all
    concrete run eagerly even while `jit` traces, so their results are concrete arrays
    (``int(jnp.sum(jnp.arange(3)))`` works under jit); operations on traced values are
    staged as usual."""
    core.compile_time_eval.append(True)
    try:
        yield
    finally:
        core.compile_time_eval.pop()


def linear_transpose(fun: Callable, *primals: Any, reduce_axes: Any = ()) -> Callable:
    """``jax.linear_transpose``: the transpose of the linear function `fun`, whose
    arguments have the shapes and dtypes of `primals` (arrays or `ShapeDtypeStruct`s): a
    function from a cotangent of `fun`'s output to the tuple of cotangents of its
    arguments. It is `fun`'s `vjp` at zeros (a linear function's derivative is itself)."""
    if not callable(fun):
        raise located(TypeError, f"linear_transpose expects a callable, got "
                      f"{type(fun).__name__}")

    def zeros(leaf: Any) -> Any:
        aval = leaf if isinstance(leaf, ShapeDtypeStruct) else abstractify(leaf, 0,
                                                                          "linear_transpose")
        if not np.issubdtype(aval.dtype, np.inexact):
            raise located(TypeError, f"linear_transpose only supports float and complex "
                          f"inputs, got {aval.dtype}")
        return np.zeros(aval.shape, aval.dtype)
    _, pullback = vjp(fun, *tree_util.tree_map(zeros, primals))
    return pullback


@contextlib.contextmanager
def default_matmul_precision(precision: Optional[str] = None) -> Iterator[None]:
    """``jax.default_matmul_precision``: the default precision of products inside it.
    Every product here runs in its operands' type (``"highest"``), so the name is checked
    and changes nothing."""
    names = {None, "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
             "bfloat16_3x", "fastest", "ANY_F8_ANY_F8_F32", "F32_F32_F32", "F16_F16_F32",
             "BF16_BF16_F32", "TF32_TF32_F32", "F64_F64_F64"}
    if precision not in names:
        raise located(ValueError, f"default_matmul_precision: unknown precision "
                      f"{precision!r}", "use 'default', 'high', 'highest', 'bfloat16', "
                      "'tensorfloat32' or 'float32'")
    yield


@contextlib.contextmanager
def enable_x64(new_val: bool = True) -> Iterator[None]:
    """``jax.enable_x64``: 64-bit types on (or off, with False) inside it, as
    ``config.update("jax_enable_x64", new_val)`` would set them; the setting is restored
    on exit. (The setting is process-wide, not per thread.)"""
    previous = config.enable_x64
    config.update("jax_enable_x64", bool(new_val))
    try:
        yield
    finally:
        config.update("jax_enable_x64", previous)


def default_backend() -> str:
    """``jax.default_backend``: ``"cpu"`` (IREE's CPU drivers)."""
    return "cpu"


# JAX's backend names, as IREE device kinds (IREE's own kind names are accepted too)
_BACKENDS = {"cpu": "local-task", "gpu": "cuda", "cuda": "cuda", "rocm": "hip",
             "vulkan": "vulkan", "hip": "hip"}


def devices(backend: Optional[str] = None) -> list:
    """``jax.devices``: the devices of `backend` -- ``"cpu"`` (the default: the
    ``TRANSPILER_CPU_DEVICES`` host devices), ``"gpu"``/``"cuda"``, ``"rocm"``, or an IREE
    device kind (``"local-sync"``, ``"vulkan"`` ...)."""
    if backend is None:
        return runtime.devices()
    kind = _BACKENDS.get(backend, backend)
    if kind not in CPU_KINDS + GPU_KINDS:
        raise located(RuntimeError, f"backend {backend!r} is not available: the backends here "
                      "are IREE's drivers, 'cpu', 'gpu'/'cuda', 'rocm' and 'vulkan'",
                      "for TPUs, export the StableHLO (jit(f).lower(*args).as_text()) and "
                      "run it through XLA/PJRT")
    return runtime.devices(kind)


def device_count(backend: Optional[str] = None) -> int:
    """``jax.device_count``: the number of devices of `backend` (default: the host's,
    ``TRANSPILER_CPU_DEVICES``)."""
    return len(devices(backend))


def local_devices(process_index: Optional[int] = None, backend: Optional[str] = None) -> list:
    """``jax.local_devices``: this process's devices (all of them: there is one process)."""
    return devices(backend)


def process_count(backend: Optional[str] = None) -> int:
    """``jax.process_count``: 1 (no multi-process runs)."""
    return 1


def process_index(backend: Optional[str] = None) -> int:
    """``jax.process_index``: 0 (no multi-process runs)."""
    return 0


def process_indices(backend: Optional[str] = None) -> list[int]:
    """``jax.process_indices``: ``[0]``."""
    return [0]


host_count, host_id, host_ids = process_count, process_index, process_indices


def print_environment_info(return_string: bool = False) -> Optional[str]:
    """``jax.print_environment_info``: the versions of this library, Python, NumPy and
    IREE, and the devices."""

    def version(package: str) -> str:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return "not installed"

    text = "\n".join([
        f"transpiler:          {__version__}",
        f"numpy:               {np.__version__}",
        f"iree-base-compiler:  {version('iree-base-compiler')}",
        f"iree-base-runtime:   {version('iree-base-runtime')}",
        f"python:              {sys.version.split()[0]}",
        f"device info:         {', '.join(map(str, runtime.devices()))}",
        f"platform:            {platform.platform()}"]) + "\n"
    if return_string:
        return text
    print(text, end="")
    return None
