"""Helpers shared by the linear-algebra primitives of `transpiler.lax.linalg`: checks,
batched matrix products over leading dimensions, dynamic windows, the eager float32
fallback for half types, the never-unrolled column loop, and LAPACK on the host for a jit
called in this process (`host_or_composite`)."""

from __future__ import annotations

import contextlib
import contextvars
import functools
from typing import Any, Callable, Iterator

import numpy as np

from transpiler import dtypes
from transpiler.array import ShapeDtypeStruct
from transpiler.host_callbacks import pure_callback
from transpiler.lax.loops import fori_loop
from transpiler.numpy.creation import asarray, astype
from transpiler.primitives import conversions as conv
from transpiler.primitives import core
from transpiler.primitives import dot as dot_p
from transpiler.primitives import elementwise as ew
from transpiler.primitives import indexing as idx_p
from transpiler.primitives import shape as sp
from transpiler.primitives.core import ShapedArray, abstractify, dtype_error, shape_error


def check_square(name: str, a: ShapedArray) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise shape_error(f"{name}: expected a square matrix (or a batch of them, shape "
                          f"(..., n, n)), got shape {list(a.shape)}")
    if not dtypes.is_float(a.dtype):
        raise dtype_error(f"{name}: expected a floating-point matrix, got {a.dtype}",
                          "convert it with .astype(jnp.float32) first")


def matmul(x: Any, y: Any) -> Any:
    """``x @ y`` over leading batch dimensions (both of rank r >= 2, same batch shape)."""
    ndim = abstractify(x).ndim
    batch = tuple(range(ndim - 2))
    return dot_p.dot_general(x, y, dimension_numbers=(((ndim - 1,), (ndim - 2,)),
                                                      (batch, batch)),
                             preferred_element_type=None)


def swap_last(x: Any) -> Any:
    ndim = abstractify(x).ndim
    return sp.transpose(x, permutation=(*range(ndim - 2), ndim - 1, ndim - 2))


def window(x: Any, starts: list, sizes: list) -> Any:
    return idx_p.dynamic_slice(x, *starts, slice_sizes=tuple(sizes))


def index_grid(n: int, axis: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = n
    return np.arange(n, dtype=np.int32).reshape(shape)


def in_float32(impl: Any) -> Any:
    """An eager rule run in float32 for half types (NumPy's LAPACK has none), the result
    (or each of a tuple of results) cast back."""
    def run(*args: np.ndarray, **params: Any) -> Any:
        dtype = args[0].dtype
        if dtype.itemsize >= 4:
            return impl(*args, **params)
        wide = [x.astype(np.float32) if x.dtype == dtype else x for x in args]
        out = impl(*wide, **params)
        if isinstance(out, tuple):
            return tuple(o.astype(dtype) for o in out)
        return out.astype(dtype)
    return run


def column_loop(n: int, body: Any, init: Any) -> Any:
    """``fori_loop(0, n, body, init)``, never unrolled: its start is a traced value (an
    optimization barrier). Unrolling probes the body first, and two chained substitution
    loops of 16 or more steps then failed in IREE 3.13 with "operand does not dominate this
    use" (not understood yet); each step is a matrix-vector product anyway, too large for
    unrolling to pay."""
    start = conv.optimization_barrier(conv.convert_element_type(np.asarray(0, np.int32),
                                                                dtype=dtypes.int32))
    return fori_loop(start, n, body, init)



def symmetrized(x: Any) -> Any:
    half = conv.convert_element_type(np.asarray(0.5, abstractify(x).dtype),
                                     dtype=abstractify(x).dtype)
    return ew.multiply(ew.add(x, swap_last(x)), half)


def traced_once(name: str, compute: Callable[[Any], Any], a: Any) -> Any:
    """``compute(a)``, staged once per trace and operand: two primitives reading one
    factorization (slogdet's sign and log|det|, eigh's vectors and values) share its
    loop. (Two identical loops also broke IREE 3.13: it merged them and then returned one
    buffer twice.) Eagerly, ``compute(a)``."""
    memo = getattr(core.trace_stack[-1], "memo", None) if core.trace_stack else None
    if memo is None:
        return compute(a)
    key = (f"lax.linalg.{name}", id(a))
    if key not in memo:
        memo[key] = (compute(a), (a,))  # (the operand pins its id)
    return memo[key][0]


def as_float_matrix(x: Any, name: str) -> Any:
    """`x` as an array of matrices ``(..., m, n)`` (integers converted to the default float,
    as JAX's `jnp.linalg` does)."""
    x = asarray(x)
    aval = abstractify(x, 0, name)
    if aval.ndim < 2:
        raise shape_error(f"{name}: expected a matrix (or a batch of them, shape (..., m, n)), "
                          f"got shape {list(aval.shape)}")
    if not dtypes.is_float(aval.dtype):
        if aval.dtype.kind == "c":
            raise dtype_error(f"{name}: complex matrices are not supported yet")
        x = astype(x, dtypes.default_float())
    return x


def widened(x: Any) -> Any:
    """`x` in float32 when it is a half type: the factorizations' loops need its range and
    precision (NumPy's LAPACK has no half types either)."""
    if abstractify(x).dtype.itemsize < 4:
        return conv.convert_element_type(x, dtype=np.dtype(np.float32))
    return x


def narrowed(y: Any, like: Any) -> Any:
    """`y` back in the dtype of `like` (undoes `widened`)."""
    dtype = abstractify(like).dtype
    return y if abstractify(y).dtype == dtype else conv.convert_element_type(y, dtype=dtype)


# --- LAPACK on the host ----------------------------------------------------------------------
# A factorization staged as a loop of matrix-vector steps runs 20-100x slower than LAPACK's
# blocked kernels (tests/bench/linalg.py: a 512x512 solve took 1.3 s compiled against 14 ms
# on the host). So a jit called in this process -- on the CPU, where JAX's own lowering
# calls LAPACK too -- stages a call of the primitive's eager rule on the host instead
# (`pure_callback`: the compiled module calls back into this process). What may leave the
# process -- `lower()` and what is built from it (saved and cross-compiled modules, the
# CLI's builds, exported StableHLO), pmap and shard_map programs -- stages the loops.

_ON_HOST: contextvars.ContextVar[bool] = contextvars.ContextVar("lapack_on_host", default=False)


@contextlib.contextmanager
def lapack_on_host(enabled: bool = True) -> Iterator[None]:
    """Within it, the factorizations a trace stages call LAPACK on the host."""
    token = _ON_HOST.set(enabled)
    try:
        yield
    finally:
        _ON_HOST.reset(token)


def on_host() -> bool:
    """Whether the factorizations staged now call LAPACK on the host."""
    return _ON_HOST.get()


def host_call(impl: Callable, out_avals: list, *operands: Any, **params: Any) -> list:
    """``impl(*operands, **params)`` run on the host by the staged module: its results, of
    `out_avals` (one host function per rule, dtypes and params)."""
    dtypes_out = tuple(np.dtype(a.dtype) for a in out_avals)
    return pure_callback(_host_function(impl, dtypes_out, _frozen(params)),
                         [ShapeDtypeStruct(a.shape, a.dtype) for a in out_avals], *operands,
                         vmap_method="legacy_vectorized")


def host_or_composite(impl: Callable, abstract_eval: Callable,
                      composite: Callable) -> Callable:
    """The staged form of a primitive: a host call of its eager rule `impl` within
    `lapack_on_host`, else its `composite`."""
    def staged(*operands: Any, **params: Any) -> Any:
        if not on_host():
            return composite(*operands, **params)
        out = abstract_eval(*[abstractify(x) for x in operands], **params)
        return host_call(impl, [out], *operands, **params)[0]
    return staged


def define_factorization(name: str, *, impl: Callable, abstract_eval: Callable,
                         composite: Callable, **kwargs: Any) -> core.Primitive:
    """`define` a linear-algebra primitive whose staged form is `host_or_composite`."""
    return core.define(name, impl=impl, abstract_eval=abstract_eval,
                       composite=host_or_composite(impl, abstract_eval, composite), **kwargs)


def _frozen(params: dict) -> tuple:
    return tuple(sorted(params.items()))


@functools.lru_cache(maxsize=None)
def _host_function(impl: Callable, dtypes_out: tuple, params: tuple) -> Callable:
    """One function object per rule, result dtypes and params: host calls are named by
    their function, so a retrace stages the same module (and finds it in the disk cache)."""
    kwargs = dict(params)

    def lapack(*arrays: np.ndarray) -> list:
        out = impl(*arrays, **kwargs)
        out = out if isinstance(out, tuple) else (out,)
        return [np.asarray(o).astype(d, copy=False) for o, d in zip(out, dtypes_out)]

    lapack.__name__ = lapack.__qualname__ = getattr(impl, "__name__", "lapack")
    return lapack
