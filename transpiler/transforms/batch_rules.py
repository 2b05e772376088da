"""Which rule batches a call (`batch_runtime.call`): primitives, lax control flow and
collectives, nested `vmap`, transform objects (``grad(f)`` ...), containers' methods, and
Python functions from their source."""

from __future__ import annotations

import types
from typing import Any

from transpiler.errors import TranspileError, user_location
from transpiler.primitives.core import Primitive
from transpiler.transforms import batch_runtime as bt


def dispatch(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict,
             fn_dims: Any) -> tuple[Any, Any]:
    if isinstance(fn, Primitive):
        return bt.primitive_call(fn, args, dims, kwargs, kwdims)
    if any(isinstance(a, (list, tuple)) for a in args) and _sequence_op(fn) is not None:
        return _sequence_op(fn)(args, dims)
    from transpiler.transforms.vmap_api import Vmapped, nested_call
    if isinstance(fn, Vmapped):
        return nested_call(fn, args, dims, kwargs, kwdims, fn_dims)
    from transpiler.builtin_functions import stand_in  # (imports transpiler.numpy)
    fn = stand_in(fn)  # Python's max, min, sum: their batchable forms
    special = _special(fn)
    if special is not None:
        return special(fn, args, dims, kwargs, kwdims)
    from transpiler.transforms.api import _target
    from transpiler.transforms.custom import CustomVJP
    from transpiler.transforms.custom_jvp import CustomJVP
    fn = _target(fn)
    while isinstance(fn, (CustomVJP, CustomJVP)):  # batched: the function itself
        fn = _target(fn.fun)
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
        return dispatch(fn.__func__, (fn.__self__, *args), (None, *dims), kwargs, kwdims,
                        fn_dims)
    if isinstance(fn, types.FunctionType):
        return bt.function_call(fn, args, dims, kwargs, kwdims, fn_dims)
    method = getattr(type(fn), "__call__", None)
    if isinstance(method, types.FunctionType) and not isinstance(fn, type):  # jacrev(f) ...
        return dispatch(method, (fn, *args), (None, *dims), kwargs, kwdims, None)
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    raise TranspileError(f"vmap cannot batch a call of `{name}`: it is not a transpiler "
                         "primitive and has no Python source to transform", user_location(),
                         "use transpiler.numpy / transpiler.lax functions on batched values")


_HELPERS: dict[int, Any] = {}


def _special(fn: Any) -> Any:
    from transpiler.transforms import control_batch, vmap_api
    if isinstance(fn, bt.Method):
        return _method
    if fn in (tuple, list):
        return _container
    if fn is abs:
        return _abs
    from transpiler import numpy as jnp
    if fn is jnp.einsum:
        from transpiler.transforms.batch_helpers import einsum
        return einsum
    if fn is vmap_api.vmap:
        return _vmap_of_closure
    global _HELPERS
    if not _HELPERS:
        from transpiler.transforms.batch_helpers import rules
        _HELPERS = rules()
    rule = _HELPERS.get(id(fn))
    if rule is not None:
        return rule
    module = getattr(fn, "__module__", None)
    if module in control_batch.MODULES:
        from transpiler.transforms import control_batch_ad
        name = getattr(fn, "__name__", "")
        return control_batch.RULES.get(name) or control_batch_ad.RULES.get(name)
    if module == "transpiler.lax_parallel":
        from transpiler.transforms import collective_batch
        return collective_batch.RULES.get(getattr(fn, "__name__", ""))
    return None


def _container(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``tuple(x)`` / ``list(x)``: a container keeps its elements' companions; an array is
    iterated along its first member axis."""
    (x,), (d,) = args, dims
    values, element_dims = bt.unpack(x, d, len(bt.view(x, d)))
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
    from transpiler.tree_util import PyTreeDef
    if isinstance(obj, PyTreeDef) and not bt.batched(d):
        from transpiler.transforms.batch_helpers import _treedef_rule
        return _treedef_rule(getattr(obj, m.name), args[1:], dims[1:], kwargs, kwdims)
    if not bt.batched(d) and not hasattr(obj, "shape"):  # an object's method: its source
        return dispatch(getattr(obj, m.name), args[1:], dims[1:], kwargs, kwdims, None)
    if not hasattr(obj, "shape"):  # a batched pytree's method: its function, `obj` first
        from transpiler.transforms.runtime_helpers import unbound
        return dispatch(unbound(obj, m.name), args, dims, kwargs, kwdims, None)
    name = type(obj).__name__
    raise TranspileError(f"vmap cannot batch the method `.{m.name}()` of a batched {name}",
                         user_location(), "use the transpiler.numpy function of that name")


def _abs(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    from transpiler import numpy as jnp
    return bt.call(jnp.abs, args, dims)


def _sequence_op(fn: Any) -> Any:
    """``xs + ys`` and ``xs * n`` on Python lists and tuples (not arrays)."""
    from transpiler import numpy as jnp
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
