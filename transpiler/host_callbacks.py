"""``jax.pure_callback`` and ``jax.experimental.io_callback``: Python (NumPy, SciPy...)
called on the values of a computation, its results flowing back into it.

Eagerly, the callback runs at once on NumPy arrays. Inside ``jit`` the call is staged as a
call of a host function, ``func.call @transpiler_host.NAME(tensors) -> tensors``: the
compiled module calls back into this process each time it reaches the call (inside loop
bodies and branches too), and runtime/callbacks.py runs the callback there. Arguments that
are not traced (Python numbers, NumPy arrays) stay with the registered function.

Neither is differentiable (JAX's rule): wrap the callback in ``custom_jvp``/``custom_vjp``
with a derivative rule to differentiate through it. Under ``vmap``, ``pure_callback``
follows its ``vmap_method``: ``"sequential"`` calls it once per batch element,
``"expand_dims"``, ``"broadcast_all"`` and ``"legacy_vectorized"`` once with the batch axis
leading (unbatched arguments with a size-1 axis, broadcast, or as they are).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np
from iree.compiler import ir

import runtime.callbacks
from transpiler import dtypes, tree_util
from transpiler import numpy as jnp
from transpiler.errors import SourceLocation, located, located_type, user_location
from transpiler.lowering.builder import aval_type
from transpiler.lowering.tracer import Trace, Tracer, mlir_location
from transpiler.primitives import core
from transpiler.primitives.core import ShapedArray

__all__ = ["pure_callback", "io_callback", "HostCall"]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized")


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  sharding: Any = None, vmap_method: Optional[str] = None,
                  vectorized: Any = None, **kwargs: Any) -> Any:
    """``jax.pure_callback``: ``callback(*args, **kwargs)`` on NumPy arrays, its result
    the arrays `result_shape_dtypes` describes (a pytree of ``ShapeDtypeStruct`` or
    arrays). The callback must be pure: a compiled program may call it any number of
    times."""
    if vmap_method is not None and vmap_method not in VMAP_METHODS:
        raise located(ValueError, f"pure_callback: vmap_method must be one of "
                      f"{', '.join(map(repr, VMAP_METHODS))} or None, got {vmap_method!r}")
    if vectorized is not None:
        vmap_method = vmap_method or ("legacy_vectorized" if vectorized else "sequential")
    return HostCall.of(callback, result_shape_dtypes, "pure_callback", vmap_method).run(
        args, kwargs)


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                sharding: Any = None, ordered: bool = False, **kwargs: Any) -> Any:
    """``jax.experimental.io_callback``: as `pure_callback`, for a callback with side
    effects; under ``jit`` it runs once each time the program reaches it, in program
    order. It cannot be batched or differentiated."""
    return HostCall.of(callback, result_shape_dtypes, "io_callback", None).run(args, kwargs)


@dataclass(frozen=True)
class HostCall:
    """One callback and the results it promises: ``results`` holds each leaf's shape and
    dtype, ``tree`` their structure."""

    callback: Callable[..., Any]
    results: tuple[tuple[tuple[int, ...], np.dtype], ...]
    tree: Any
    api: str
    vmap_method: Optional[str]

    @classmethod
    def of(cls, callback: Callable[..., Any], result_shape_dtypes: Any, api: str,
           vmap_method: Optional[str]) -> "HostCall":
        if not callable(callback):
            raise located(TypeError, f"{api} expects a callable, got "
                          f"{type(callback).__name__}")
        leaves, tree = tree_util.tree_flatten(result_shape_dtypes)
        results = []
        for i, leaf in enumerate(leaves):
            shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
            if shape is None or dtype is None:
                raise located(TypeError, f"{api}: result_shape_dtypes leaf {i} is a "
                              f"{type(leaf).__name__}, not something with a shape and a "
                              "dtype", "describe each result as jax.ShapeDtypeStruct(shape, "
                              "dtype)")
            results.append((tuple(int(d) for d in shape),
                            dtypes.check_supported(dtypes.canonicalize(np.dtype(dtype)),
                                                   f"{api} result")))
        return cls(callback, tuple(results), tree, api, vmap_method)

    @property
    def name(self) -> str:
        return getattr(self.callback, "__qualname__", type(self.callback).__qualname__)

    def run(self, args: tuple, kwargs: dict) -> Any:
        """The call: at once eagerly, staged inside ``jit``."""
        trace = core.trace_stack[-1] if core.trace_stack else None
        if trace is None:
            return self._unflatten([_our_array(a) for a in self.call(args, kwargs)])
        if not isinstance(trace, Trace):
            raise located(NotImplementedError, f"{self.api} inside a trace that is not "
                          "jit's (a callee traced for its derivative or batching)",
                          "call it in the jitted function itself, or eagerly")
        return self._unflatten(stage(trace, self, args, kwargs))

    def call(self, args: Any, kwargs: Any, where: Optional[SourceLocation] = None
             ) -> list[np.ndarray]:
        """The callback on NumPy arrays; its results checked against the promised ones
        (errors located at `where`, the call's line, else the user's line now)."""
        where = where or user_location()
        leaves, tree = tree_util.tree_flatten((args, kwargs))
        args, kwargs = tree_util.tree_unflatten(tree, [as_numpy(leaf) for leaf in leaves])
        out = self.callback(*args, **kwargs)
        out_leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != self.tree:
            raise located_type(TypeError)(f"{self.api}: {self.name} returned {out_tree}, "
                                          f"result_shape_dtypes promised {self.tree}", where)
        return [self._checked(i, leaf, where) for i, leaf in enumerate(out_leaves)]

    def _checked(self, i: int, leaf: Any, where: Optional[SourceLocation]) -> np.ndarray:
        shape, dtype = self.results[i]
        array = np.asarray(as_numpy(leaf))
        if array.shape != shape:
            raise located_type(ValueError)(
                f"{self.api}: {self.name} returned an array of shape {array.shape} for "
                f"result {i}, result_shape_dtypes promised {shape}", where)
        if array.dtype != dtype:
            weak = not isinstance(leaf, (np.ndarray, np.generic)) and not hasattr(leaf, "aval")
            same_kind = np.dtype(dtype).kind == array.dtype.kind or \
                array.dtype.kind in "biu" and np.dtype(dtype).kind in "biuf"
            if not (weak and same_kind) and dtypes.canonicalize(array.dtype) != dtype:
                raise located_type(TypeError)(
                    f"{self.api}: {self.name} returned {array.dtype} for result {i}, "
                    f"result_shape_dtypes promised {dtype}", where,
                    f"return .astype({np.dtype(dtype).name}) from the callback")
            array = array.astype(dtype)
        return array

    def _unflatten(self, leaves: list) -> Any:
        return tree_util.tree_unflatten(self.tree, leaves)


def stage(trace: Any, host_call: HostCall, args: tuple, kwargs: dict) -> list:
    """``func.call @transpiler_host.NAME(traced args)`` in the block being traced, NAME
    bound (for modules loaded in this process) to the callback and the untraced args."""

    leaves, tree = tree_util.tree_flatten((args, kwargs))
    traced = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tracer)]
    kept = {i: as_numpy(leaf) for i, leaf in enumerate(leaves) if i not in traced}
    in_avals = [leaves[i].aval for i in traced]
    out_avals = [ShapedArray(shape, dtype, False) for shape, dtype in host_call.results]

    def call(arrays: list[np.ndarray]) -> list[np.ndarray]:
        values = dict(kept)
        values.update(zip(traced, (a.astype(v.dtype, copy=False)
                                   for a, v in zip(arrays, in_avals))))
        args, kwargs = tree_util.tree_unflatten(tree, [values[i] for i in range(len(leaves))])
        return host_call.call(args, kwargs, where)

    where = user_location()
    name = _function_name(host_call, tree, traced, in_avals, kept)
    runtime.callbacks.register_function(name, runtime.callbacks.HostFunction(
        call, len(traced), tuple(_storage(a.dtype) for a in out_avals)))
    with mlir_location():
        in_types = [aval_type(_host_aval(a)) for a in in_avals]
        out_types = [aval_type(_host_aval(a)) for a in out_avals]
        symbol = f"{runtime.callbacks.HOST_MODULE}.{name}"
        _declare(trace.block, symbol, ir.FunctionType.get(in_types, out_types))
        with ir.InsertionPoint(trace.block):
            operands = [_to_host_type(trace.operand(leaves[i], a), a, t)
                        for i, a, t in zip(traced, in_avals, in_types)]
            op = ir.Operation.create("func.call", results=out_types, operands=operands,
                                     attributes={"callee": ir.FlatSymbolRefAttr.get(symbol)})
            values = [_from_host_type(r, a) for r, a in zip(op.results, out_avals)]
    return [Tracer(trace, v, a) for v, a in zip(values, out_avals)]


# Names of the host functions of this process: each (callback, signature, untraced
# arguments) its own, numbered in the order they are first traced -- so a second process
# tracing the same program names them alike and finds its compiled module in the cache.
_NAMES: dict[Any, str] = {}
_COUNT = itertools.count()


def _function_name(host_call: HostCall, tree: Any, traced: list, in_avals: list,
                   kept: dict) -> str:
    key = (id(host_call.callback), digest((host_call.api, host_call.name, host_call.results,
                                           host_call.tree, tree, traced, in_avals), kept))
    name = _NAMES.get(key)
    if name is None:
        readable = "".join(c if c.isalnum() else "_" for c in host_call.name)[:40]
        name = _NAMES[key] = f"{host_call.api}_{next(_COUNT)}_{readable}"
        _KEEP.append(host_call.callback)  # (its id stays its own while the name exists)
    return name


_KEEP: list[Any] = []


def digest(signature: Any, kept: dict[int, Any]) -> str:
    """A digest of a staged call: its `signature` and the values of its untraced
    arguments, `kept` by position."""
    found = hashlib.sha256(repr(signature).encode())
    for i, value in sorted(kept.items(), key=lambda kv: kv[0]):
        array = np.asarray(value) if isinstance(value, np.ndarray) else None
        found.update(repr((i, value) if array is None or array.dtype == object else
                          (i, array.dtype.str, array.shape)).encode())
        if array is not None and array.dtype != object:
            found.update(array.tobytes())
    return found.hexdigest()


def _declare(block: Any, symbol: str, function_type: Any) -> None:
    """``func.func private @symbol`` at the top of the module `block` belongs to, once."""
    op = block.owner
    while op.name != "builtin.module":
        op = op.parent
    module_block = op.regions[0].blocks[0]
    for existing in module_block.operations:
        if "sym_name" in existing.attributes and \
                ir.StringAttr(existing.attributes["sym_name"]).value == symbol:
            return
    with ir.InsertionPoint.at_block_begin(module_block):
        ir.Operation.create("func.func", regions=1, attributes={
            "sym_name": ir.StringAttr.get(symbol),
            "sym_visibility": ir.StringAttr.get("private"),
            "function_type": ir.TypeAttr.get(function_type)})


# Booleans cross to the host as bytes (an i1 tensor has no host layout of its own).
def _storage(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.uint8) if dtype == np.bool_ else dtype


def _host_aval(aval: Any) -> Any:
    return aval if aval.dtype != np.bool_ else ShapedArray(aval.shape, np.dtype(np.uint8),
                                                         False)


def _to_host_type(value: Any, aval: Any, host_type: Any) -> Any:
    if aval.dtype != np.bool_:
        return value
    return ir.Operation.create("stablehlo.convert", results=[host_type],
                               operands=[value]).result


def _from_host_type(value: Any, aval: Any) -> Any:
    if aval.dtype != np.bool_:
        return value
    zero = ir.Operation.create("stablehlo.constant", results=[value.type], attributes={
        "value": ir.DenseElementsAttr.get_splat(value.type, ir.IntegerAttr.get(
            ir.IntegerType.get_unsigned(8), 0))}).result
    return ir.Operation.create("stablehlo.compare", results=[aval_type(aval)],
                               operands=[value, zero], attributes={
                                   "comparison_direction": ir.Attribute.parse(
                                       "#stablehlo<comparison_direction NE>")}).result


def as_numpy(leaf: Any) -> Any:
    """One of our arrays as a NumPy array; anything else as it is."""
    to_numpy = getattr(leaf, "__array__", None)
    return to_numpy() if to_numpy is not None and hasattr(leaf, "aval") else leaf


def _our_array(array: np.ndarray) -> Any:
    return jnp.asarray(array)




class _HostCallAPI:
    """`pure_callback` and `io_callback` as the transforms see them: vmap batches them by
    its own rule (transforms/bt/rules.py, ``host_call``), and the AD transforms, which call
    a ``runtime_transform`` callee's ``jvp``/``vjp`` where a derivative flows through it
    (as they call ``vmap(f)``'s), find that none can."""

    runtime_transform = True
    host_call = True
    __name__: str

    def __init__(self, fun: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fun)
        self._fun = fun

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fun(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<function {self.__name__}>"

    def jvp(self, primals: tuple, tangents: tuple, kwargs: dict, fn_dot: Any = None) -> tuple:
        if any(t is not None for t in tangents[2:]):
            raise self._not_differentiable()
        return self(*primals, **kwargs), None

    def vjp(self, args: tuple, kwargs: dict, g: Any, with_closure: bool = False) -> Any:
        if g is not None:
            raise self._not_differentiable()
        bars = (None,) * len(args)
        return (bars, None) if with_closure else bars

    def _not_differentiable(self) -> Exception:
        return located(ValueError, f"{self.__name__} is not differentiable: a value being "
                       "differentiated flows into the callback, Python the transforms "
                       "cannot read", "wrap the function that calls it in jax.custom_jvp "
                       "(or custom_vjp) and give it a derivative rule")


pure_callback = _HostCallAPI(pure_callback)  # type: ignore[assignment]
io_callback = _HostCallAPI(io_callback)  # type: ignore[assignment]
