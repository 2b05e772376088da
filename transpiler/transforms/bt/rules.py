"""Which rule batches a call (`bt.call`): primitives, lax control flow and
collectives, nested `vmap`, transform objects (``grad(f)`` ...), containers' methods, and
Python functions from their source."""

from __future__ import annotations

import functools
import types
from typing import Any

from transpiler.array import ShapeDtypeStruct
from transpiler.errors import TranspileError, user_location
from transpiler.primitives.core import Primitive
from transpiler.transforms import bt
from transpiler.transforms.common import partials
from transpiler.transforms.batch.api import Vmapped, nested_call
from transpiler.transforms.common import closures
from transpiler.transforms.common.generated import closed_over, is_wrapper, target
from transpiler.transforms.reverse.custom_vjp import CustomVJP
from transpiler.transforms.forward.custom_jvp import CustomJVP
from transpiler.transforms.common.traced import readable
from transpiler import numpy as jnp
from transpiler.primitives.batching import materialize
from transpiler.transforms.ad import cotangents as rh
from transpiler.tree_util._registry import sequence_like
from transpiler.transforms.bt import control as control_batch
from transpiler.transforms.batch import api as vmap_api
from transpiler.transforms.bt.structural import _elements, full_dims
from transpiler import tree_util
from transpiler.tree_util import PyTreeDef
from transpiler.transforms.bt.structural import einsum
from transpiler.transforms.bt.structural import rules
from transpiler.transforms.bt import collectives as collective_batch
from transpiler.transforms.bt.structural import _treedef_rule
from transpiler.transforms.ad.calls import unbound


def dispatch(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict,
             fn_dims: Any) -> tuple[Any, Any]:
    if any(isinstance(a, (list, tuple)) for a in args) and _sequence_op(fn) is not None:
        return _sequence_op(fn)(args, dims)  # `xs + ys`, `xs * n` on Python sequences
    if isinstance(fn, Primitive):
        return bt.primitive_call(fn, args, dims, kwargs, kwdims)
    if fn is functools.partial:  # making or calling one (transforms/common/partials.py)
        return partials.make_batched(args, dims, kwargs, kwdims)
    if partials.is_partial(fn):
        return partials.call_batched(fn, args, dims, kwargs, kwdims, fn_dims)
    if isinstance(fn, Vmapped):
        return nested_call(fn, args, dims, kwargs, kwdims, fn_dims)
    if getattr(type(fn), "batched_call", None) is not None:  # shard_map: shard_map(vmap(f))
        if bt.batched(fn_dims):
            raise TranspileError(f"vmap of {fn!r} over values its function closes over is "
                                 "not supported", user_location(),
                                 "pass those values as arguments")
        return fn.batched_call(args, dims, kwargs, kwdims)
    if is_wrapper(fn) and args:  # f = jit(g): g's companions (its closure's) ride along
        return fn(*args, **kwargs), dims[0]
    from transpiler.builtin_functions import stand_in  # (imports transpiler.numpy)
    fn = stand_in(fn)  # Python's max, min, sum: their batchable forms
    special = _special(fn)
    if special is not None:
        return special(fn, args, dims, kwargs, kwdims)
    if closed_over(fn) is not None:
        return _closed_over_call(fn, args, dims, kwargs, kwdims, fn_dims)
    fn = target(fn)
    while isinstance(fn, (CustomVJP, CustomJVP)):  # batched: the function itself
        fn = target(fn.fun)
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
        return dispatch(fn.__func__, (fn.__self__, *args), (None, *dims), kwargs, kwdims,
                        fn_dims)
    if isinstance(fn, types.FunctionType) and readable(fn):
        return bt.function_call(fn, args, dims, kwargs, kwdims, fn_dims)
    method = getattr(type(fn), "__call__", None)
    if isinstance(method, types.FunctionType) and not isinstance(fn, type):  # jacrev(f) ...
        return dispatch(method, (fn, *args), (None, *dims), kwargs, kwdims, None)
    from transpiler.transforms.common import (  # no source: traced (transforms/common/traced.py)
        traced
    )
    return traced.batch(fn, args, dims, kwargs, kwdims)


_HELPERS: dict[int, Any] = {}


def _array_of_sequence(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``jnp.array([x0, x1 * 2])`` with batched elements: each element with the batch axis
    first (unbatched ones broadcast), stacked along the nesting axes, which then move
    after the batch axis."""
    if not args or not isinstance(args[0], (list, tuple)) or bt.batched(kwdims) \
            or not bt.batched(dims[0]):
        return bt.function_call(target(fn), args, dims, kwargs, kwdims, None)
    size = bt.batch_size()

    def front(x: Any, d: Any) -> Any:
        if isinstance(x, (list, tuple)):
            items = [front(v, d[i] if isinstance(d, (list, tuple)) else d)
                     for i, v in enumerate(x)]
            return jnp.stack(items, axis=1)  # the nesting axis, after the batch axis
        return materialize(jnp.asarray(x, dtype=kwargs.get("dtype")), d, size)

    out = front(args[0], dims[0])
    dtype = kwargs.get("dtype")
    return (out if dtype is None else jnp.asarray(out, dtype=dtype)), 0


def _array_of_sequence_vjp(fn: Any, args: tuple, dims: tuple, kwargs: dict,
                           kwdims: dict) -> tuple:
    """The generated VJP of ``jnp.array(sequence)`` with batched elements or cotangent:
    each element's cotangent is its slice of the cotangent (batch axis first)."""
    keyword = getattr(fn, "cotangent_param", "_out_bar")
    g, gd = kwargs.get(keyword), kwdims.get(keyword)
    if not args or not isinstance(args[0], (list, tuple)) or not (bt.batched(dims) or
                                                                  bt.batched(gd)):
        return bt.function_call(fn, args, dims, kwargs, kwdims, None)
    out, out_d = _array_of_sequence(jnp.array, args[:1], dims[:1], {}, {})
    g = None if g is None or g is rh.SEED else materialize(g, gd, bt.batch_size())

    def split(x: Any, bar: Any) -> tuple[Any, Any]:
        if isinstance(x, (list, tuple)):
            parts = [split(v, None if bar is None else bar[:, i]) for i, v in enumerate(x)]
            return sequence_like(x, [p[0] for p in parts]), sequence_like(x, [p[1] for p in parts])
        if bar is None:
            return None, None
        return jnp.asarray(bar, dtype=jnp.result_type(x)), 0

    bars, bar_dims = split(args[0], g)
    rest = (None,) * (len(args) - 1)
    return (out, (bars, *rest)), (out_d, (bar_dims, *rest))


def _getitem(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``getitem(x, key)`` called as a function (the library's take_along_axis ...): as
    ``x[key]`` is batched."""
    (x, key), (x_dims, key_dims) = args, dims
    return bt.getitem(x, x_dims, key, key_dims)


def _per_element(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """A host callback batched: called once per batch element, as JAX calls it."""
    def element(x: Any, d: Any, b: int) -> Any:
        leaves, tree = tree_util.tree_flatten(x)
        dim_leaves = tree.flatten_up_to(full_dims(x, d))
        return tree.unflatten([leaf if leaf_dim.dim is None else
                               jnp.take(leaf, b, axis=leaf_dim.dim)
                               for leaf, leaf_dim in zip(leaves, dim_leaves)])

    for b in range(bt.batch_size()):
        fn(*(element(a, d, b) for a, d in zip(args, dims)),
           **{k: element(v, kwdims.get(k), b) for k, v in kwargs.items()})
    return None, None


def _host_call(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``pure_callback`` batched by its ``vmap_method``, as JAX batches it: once per batch
    element (``sequential``), or once with the batch axis first and the unbatched arguments
    given a size-1 axis (``expand_dims``), broadcast (``broadcast_all``) or left as they
    are (``legacy_vectorized``). An unordered ``io_callback`` runs once per element."""
    if bt.batched(dims[0]):
        raise TranspileError(f"{fn.__name__}: the callback cannot be batched",
                             user_location(), "close over the batched values instead")
    method = kwargs.get("vmap_method", "sequential" if fn.__name__ == "io_callback" else None)
    if fn.__name__ == "io_callback" and kwargs.get("ordered"):
        raise TranspileError("io_callback(ordered=True) cannot be batched: vmap has no order "
                             "among its elements", user_location(), "use ordered=False")
    if method is None:
        raise TranspileError(f"{fn.__name__} under vmap needs a vmap_method: how the "
                             "callback takes a batch", user_location(),
                             "pass vmap_method='sequential' (one call per element), "
                             "'expand_dims' or 'broadcast_all' (one call, batch axis first)")
    callback = args[0]
    shapes = tree_util.tree_map(  # (a batched array stands for one element's shape)
        lambda a, d: ShapeDtypeStruct(a.shape if d.dim is None else
                                      a.shape[:d.dim] + a.shape[d.dim + 1:], a.dtype),
        args[1], full_dims(args[1], dims[1]))
    keys = [k for k in kwargs if k not in ("vmap_method", "sharding", "ordered")]
    values, value_dims = (args[2:], {k: kwargs[k] for k in keys}), \
        (dims[2:], {k: kwdims.get(k) for k in keys})
    leaves, tree = tree_util.tree_flatten(values)
    leaf_dims = [d.dim for d in tree.flatten_up_to(full_dims(values, value_dims))]
    size = bt.batch_size()
    options = {k: v for k, v in kwargs.items() if k not in keys}
    shape_leaves, shape_tree = tree_util.tree_flatten(shapes)

    def call(leaves: list, shapes: Any) -> list:
        args, kwargs = tree.unflatten(leaves)
        return tree_util.tree_leaves(fn(callback, shapes, *args, **kwargs, **options))

    if method.startswith("sequential"):
        per_element = [call([leaf if d is None else jnp.take(leaf, b, axis=d)
                             for leaf, d in zip(leaves, leaf_dims)], shapes)
                       for b in range(size)]
        outs = [jnp.stack(parts) for parts in zip(*per_element)] if per_element else []
    else:
        def front(leaf: Any, d: Any) -> Any:
            if d is not None:
                return jnp.moveaxis(leaf, d, 0)
            if method == "legacy_vectorized":
                return leaf
            leaf = jnp.asarray(leaf)
            return leaf[None] if method == "expand_dims" else \
                jnp.broadcast_to(leaf, (size, *jnp.shape(leaf)))
        batched_shapes = shape_tree.unflatten([ShapeDtypeStruct((size, *s.shape), s.dtype)
                                               for s in shape_leaves])
        outs = call([front(leaf, d) for leaf, d in zip(leaves, leaf_dims)], batched_shapes)
    return shape_tree.unflatten(outs), shape_tree.unflatten([0] * len(outs))


def _special(fn: Any) -> Any:
    if isinstance(fn, bt.Method):
        return _method
    if fn in (tuple, list):
        return _container
    if fn is abs:
        return _abs
    if fn in (jnp.array, jnp.asarray):
        return _array_of_sequence
    vjp_of = getattr(fn, "vjp_of", None)  # the generated VJP of jnp.array / asarray
    if isinstance(vjp_of, tuple) and vjp_of[0] in (jnp.array, jnp.asarray):
        return _array_of_sequence_vjp
    if fn is jnp.einsum:
        return einsum
    if fn is bt.array_getitem:
        return _getitem
    if fn is vmap_api.vmap:
        return _vmap_of_closure
    if getattr(fn, "host_callback", False):  # jax.debug.print, debug.callback
        return _per_element
    if getattr(fn, "host_call", False):  # jax.pure_callback, io_callback
        return _host_call
    global _HELPERS
    if not _HELPERS:
        _HELPERS = rules()
    rule = _HELPERS.get(id(fn))
    if rule is not None:
        return rule
    module = getattr(fn, "__module__", None)
    if module in control_batch.MODULES:
        name = getattr(fn, "__name__", "")
        return control_batch.RULES.get(name)  # (their derivative rules are read)
    if module == "transpiler.lax.parallel":
        return collective_batch.RULES.get(getattr(fn, "__name__", ""))
    return None


def _closed_over_call(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict,
                      fn_dims: Any) -> tuple[Any, Any]:
    """A call of ``g = grad(closure)`` whose closed-over values may be batched (`fn_dims`,
    their companions by name): its closure-converted code, batched."""
    free = closures.closure_params(closed_over(fn))
    free_dims = tuple(fn_dims.get(name) if isinstance(fn_dims, dict) else None
                      for name, _ in free)
    return bt.call(fn.converted(), tuple(closures.free_values(free, args)),
                   free_dims + tuple(dims), kwargs, kwdims)


def _container(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``tuple(x)`` / ``list(x)``: a container keeps its elements' companions; an array is
    iterated along its first member axis; a dict gives its keys."""
    values, element_dims = _elements(args[0], dims[0])
    return fn(values), fn(element_dims)


_CONTAINER_METHODS = frozenset({"keys", "values", "items", "get", "copy", "index", "count"})


def _method(m: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    obj, d = args[0], dims[0]
    if isinstance(obj, dict) and m.name in _CONTAINER_METHODS and not bt.batched(dims[1:]):
        dd = d if isinstance(d, dict) else {k: d for k in obj}
        if m.name == "keys":
            return obj.keys(), None
        if m.name == "values":
            return list(obj.values()), [dd.get(k) for k in obj]
        if m.name == "items":
            return list(obj.items()), [(None, dd.get(k)) for k in obj]
        if m.name == "get":
            return obj.get(*args[1:]), dd.get(args[1])
        return obj.copy(), dict(dd)
    if isinstance(obj, (list, tuple)) and m.name == "copy":
        return obj.copy(), d  # type: ignore[union-attr]
    if isinstance(obj, PyTreeDef) and not bt.batched(d):
        return _treedef_rule(getattr(obj, m.name), args[1:], dims[1:], kwargs, kwdims)
    if not bt.batched(d) and (isinstance(obj, types.ModuleType) or not hasattr(obj, "shape")):
        # an object's method, or a module's function (``l.sin(x)`` with ``l=jnp`` passed)
        return dispatch(getattr(obj, m.name), args[1:], dims[1:], kwargs, kwdims, None)
    if not hasattr(obj, "shape"):  # a batched pytree's method: its function, `obj` first
        return dispatch(unbound(obj, m.name), args, dims, kwargs, kwdims, None)
    name = type(obj).__name__
    raise TranspileError(f"vmap cannot batch the method `.{m.name}()` of a batched {name}",
                         user_location(), "use the transpiler.numpy function of that name")


def _abs(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    return bt.call(jnp.abs, args, dims)


def _sequence_op(fn: Any) -> Any:
    """``xs + ys`` and ``xs * n`` on Python lists and tuples (not arrays)."""
    if fn is jnp.add:
        return _concat
    if fn is jnp.multiply:
        return _repeat
    return None


def _listed(x: Any, d: Any) -> list:
    return list(d) if isinstance(d, (list, tuple)) else [d] * len(x)


def _concat(args: tuple, dims: tuple) -> tuple:
    (a, b), (da, db) = args, dims
    if isinstance(a, list) and not isinstance(b, list):  # `xs += ys` (canonicalized)
        b = list(b)
    out = a + b
    return out, type(out)(_listed(a, da) + _listed(b, db))


def _repeat(args: tuple, dims: tuple) -> tuple:
    (a, b), (da, db) = args, dims
    if isinstance(b, (list, tuple)):
        (a, b), (da, db) = (b, a), (db, da)
    if bt.batched(db):
        raise TranspileError("a sequence is repeated a batched number of times",
                             user_location(), "the repeat count must be static")
    out = a * b
    return out, type(out)(_listed(a, da) * b)


def _vmap_of_closure(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``vmap(g)`` of a closure over batched values: the Vmapped carries g's companion."""
    if bt.batched(dims[1:]) or bt.batched(kwdims):
        raise TranspileError("vmap's in_axes / out_axes must not depend on the batch",
                             user_location())
    return fn(*args, **kwargs), dims[0]
