"""The run-time helpers of batched code (``bt.`` in generated ``vmap_<name>`` functions).

A value's companion (its *dims*) says where its batch axis is: an int for an array, None
for a value the same for every member, and the value's own structure for tuples, lists,
dicts (a prefix: None covers a whole container) and closures (``{free variable: dims}``).

`call` is the one entry: a primitive applies its batching rule (primitives/batching.py),
lax control flow and collectives their run-time rules, and a Python function runs its
generated batched code (batch/transform.py), made on first use.
"""

from __future__ import annotations

import operator as op
import types

import numpy as np
from typing import Any, Iterator, Optional

from transpiler.array_methods import ArrayMethods  # noqa: F401  (bt.ArrayMethods.reshape)
from transpiler.errors import TranspileError, user_location
from transpiler.primitives.batching import materialize, move_to_front
from transpiler.primitives.core import Primitive, ShapedArray, abstractify
from transpiler.transforms.common.signature import source_signature
from transpiler.tree_util._registry import sequence_like

from transpiler.lax.parallel import AXES  # noqa: E402,F401  (the vmaps now running; bt.AXES)
from transpiler.transforms.common import closures
from transpiler import numpy as jnp
from transpiler.numpy.indexing import getitem as array_getitem
from transpiler.primitives import shape as sp
from transpiler.transforms.common.generated import for_jit, refuse_rule_code


class _AtRefWithBatchedIndex:
    """The companion of ``r = x.at[i]`` with `i` batched: the update it stands for is only
    batched as one expression (``x.at[i].set(v)``, transform.py's `at_update`); any other
    use of `r` is an error (the index's batch would otherwise be lost)."""

    def __repr__(self) -> str:
        return "<x.at[batched index]>"


AT_REF_WITH_BATCHED_INDEX = _AtRefWithBatchedIndex()


def at_ref(x_dims: Any, key_dims: Any) -> Any:
    """The companion of ``x.at[key]``: `x`'s, unless `key` is batched (see above)."""
    return AT_REF_WITH_BATCHED_INDEX if batched(key_dims) else x_dims


def batched(dims: Any) -> bool:
    """Whether any part of a value carries a batch axis."""
    if dims is None:
        return False
    if isinstance(dims, int):
        return True
    if dims is AT_REF_WITH_BATCHED_INDEX:
        raise TranspileError(
            "vmap cannot batch `x.at[index]` with a batched index used other than by calling "
            "its method in the same expression (getattr, or the reference stored and used "
            "later)", user_location(), "write x.at[index].set(value) (or .add, .get, ...) "
            "as one expression")
    if isinstance(dims, dict):
        return any(batched(d) for d in dims.values())
    return any(batched(d) for d in dims)


def batch_size() -> int:
    """The size of the batch axis of the innermost running vmap."""
    size = 1
    for _, n in AXES[-1]:
        size *= n
    return size


# --- one member's view: static facts ---------------------------------------------------------
class ExampleView(ShapedArray):
    """What one member of the batch looks like (shape, dtype): what static code reads."""

    @property
    def aval(self) -> ShapedArray:
        return ShapedArray(self.shape, self.dtype, self.weak_type)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def _concrete(self, *_: Any) -> Any:
        raise TranspileError("a batched value has no single Python value (it differs across "
                             "the batch)", user_location(),
                             "keep it an array: use jnp.where / lax.cond instead of Python "
                             "`if`, and array operations instead of int()/float()/bool()")

    __bool__ = __int__ = __float__ = __index__ = _concrete  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"batched {self.str_short()}"


def view(x: Any, dims: Any) -> Any:
    """`x` as one member of the batch sees it: batched arrays become `ExampleView`s."""
    if dims is None:
        return x
    if isinstance(dims, int):
        aval = abstractify(x)
        shape = aval.shape[:dims] + aval.shape[dims + 1:]
        return ExampleView(shape, aval.dtype, aval.weak_type)
    if isinstance(x, dict):
        return {k: view(v, dims.get(k) if isinstance(dims, dict) else None) for k, v in x.items()}
    if isinstance(x, (tuple, list)) and isinstance(dims, (tuple, list)):
        return sequence_like(x, [view(v, d) for v, d in zip(x, dims)])
    return x


# --- structure ---------------------------------------------------------------------------------
def unpack(x: Any, dims: Any, shape: Any) -> tuple[tuple, tuple]:
    """``a, (b, c) = x``: the values and their companions, nested like the target
    (`shape`: ``(None, (None, None))``, or the number of names of a flat target)."""
    n = shape if isinstance(shape, int) else len(shape)
    if isinstance(dims, int):  # iterating a batched array: along its first member axis
        front = move_to_front(x, dims)
        values = tuple(front[:, i] for i in range(view(x, dims).shape[0]))
        out_dims: Any = (0,) * len(values)
    else:
        values = tuple(x)
        out_dims = (None,) * len(values) if dims is None or isinstance(x, dict) \
            else tuple(dims)  # (a dict's elements are its keys)
    if len(values) != n:
        raise ValueError(f"expected {n} values to unpack, got {len(values)}")
    if isinstance(shape, tuple):
        out_dims = tuple(d if s is None else unpack(v, d, s)[1]
                         for v, d, s in zip(values, out_dims, shape))
    return values, out_dims


def iterate(xs: Any, dims: Any) -> Iterator[tuple[Any, Any]]:
    """``for x in xs`` over a batched value: each element and its companion."""
    values, element_dims = unpack(xs, dims, len(view(xs, dims)))
    return iter(zip(values, element_dims))


def star_dims(xs: Any, dims: Any) -> list:
    """The companions of the elements of `xs` in ``f(*xs)``."""
    return list(unpack(xs, dims, len(view(xs, dims)))[1])


def keyword_dims(kwargs: dict, dims: Any) -> dict:
    return {k: (dims.get(k) if isinstance(dims, dict) else None) for k in kwargs}


def appended(xs: list, dims: Any, value_dims: Any) -> list:
    """The companion of list `xs` once ``xs.append(v)`` has run (before it runs)."""
    if not isinstance(dims, list):
        dims = [dims if isinstance(dims, int) else None] * len(xs)
    dims.append(value_dims)
    return dims


def unbatched_or_fail(dims: tuple, message: str, hint: str, file: Any, line: int,
                      col: int) -> None:
    """Before a statement the transform could not batch: fine when nothing it reads is
    batched after all, else the transform's error, at the statement."""
    if batched(dims):
        from transpiler.transforms.ad.cotangents import fail  # cycle: transforms.ad reaches this module
        fail(message, hint, file, line, col)


def set_element(xs: Any, dims: Any, key: Any, value_dims: Any) -> Any:
    """The companion of Python list `xs` after ``xs[key] = v`` (v's companion
    `value_dims`); a batched array cannot be assigned to (use ``x.at[key].set(v)``)."""
    if not batched(dims) and not batched(value_dims):
        return None
    if isinstance(xs, dict):
        out = dict(dims) if isinstance(dims, dict) else {k: dims for k in xs}
        out[key] = value_dims
        return out
    if not isinstance(xs, list):
        raise TranspileError("cannot assign to an element of a batched array", user_location(),
                             "use x.at[index].set(value)")
    listed = list(dims) if isinstance(dims, (list, tuple)) else [dims] * len(xs)
    listed[key] = value_dims
    return listed


def logical_not(x: Any, dims: Any) -> tuple[Any, Any]:
    """``not x``: a fact about a container, or the batched logical not of an array."""
    if not isinstance(dims, int) or isinstance(x, (list, tuple, dict)):
        return not x, None
    return call(jnp.logical_not, (x,), (dims,))


def branch(test: Any, dims: Any, where: str) -> Any:
    """The test of a Python ``if``/``while``: it must be the same for the whole batch (a
    container's truth is its length: the same)."""
    if isinstance(test, (list, tuple, dict)):
        return test
    if batched(dims):
        raise TranspileError(f"a Python `if` or `while` at {where} tests a value that differs "
                             "across the vmapped batch", user_location(),
                             "use jnp.where(cond, a, b) or lax.cond / lax.while_loop, which "
                             "vmap batches (both branches run and the results are selected)")
    return test


def getattribute(x: Any, dims: Any, name: str) -> tuple[Any, Any]:
    """``x.<name>`` of a NamedTuple, dataclass or registered pytree whose leaves are batched
    (`dims` has its structure)."""
    value = getattr(x, name)
    if dims is None:
        return value, None
    from transpiler.transforms.ad.cotangents import child_index, node_of  # cycle: transforms.ad reaches this module
    node = node_of(x)
    dim_node = node_of(dims)
    if node is None or dim_node is None:
        raise TranspileError(f"cannot batch the attribute `.{name}` of a batched "
                             f"{type(x).__name__}", user_location(),
                             "pass the object's arrays as arguments")
    return value, dim_node[0][child_index(x, name, node)]


def getitem(x: Any, dims: Any, key: Any, key_dims: Any) -> tuple[Any, Any]:
    """``x[key]``: an element of a container, or an index of a batched array."""
    if isinstance(x, (dict, list, tuple)):
        if batched(key_dims):
            raise TranspileError("a Python container is indexed with a batched value",
                                 user_location(), "stack the elements into an array first")
        if dims is None or isinstance(dims, int) and isinstance(x, dict):
            return x[key], None
        return x[key], dims[key]
    if not batched(dims) and not batched(key_dims):
        return x[key], None
    if not batched(key_dims) and _static_key(key):
        front = move_to_front(x, dims) if dims is not None else None
        if front is not None:
            key = key if isinstance(key, tuple) else (key,)
            return front[(slice(None), *key)], 0
    if _integer_arrays(key):
        return _gather_rows(x, dims, key, key_dims), 0
    if _slices_and_scalars(key, key_dims):
        return _gather_scalars(x, dims, key, key_dims), 0
    # getitem's own code, batched (not `call`: its rule for getitem is this function)
    return function_call(array_getitem, (x, key), (dims, key_dims), {}, {}, None)


def _integer_arrays(key: Any) -> bool:
    """Whether every item of `key` is an int or an integer array (NumPy's advanced
    indexing with nothing else: no slice, None, Ellipsis or mask)."""
    parts = key if isinstance(key, tuple) else (key,)
    for part in parts:
        if isinstance(part, bool):
            return False
        if isinstance(part, int):
            continue
        if not hasattr(part, "dtype") or np.dtype(part.dtype).kind not in "iu":
            return False
    return bool(parts)


def _gather_rows(x: Any, dims: Any, key: Any, key_dims: Any) -> Any:
    """``x[i0, i1, ...]`` with integer-array items, some batched: one advanced index whose
    first item picks each member's row (`arange(size)`), the others broadcast against it
    with their batch axis first (the result's batch axis is 0)."""
    parts = key if isinstance(key, tuple) else (key,)
    part_dims = key_dims if isinstance(key, tuple) and isinstance(key_dims, (tuple, list)) \
        else (key_dims,) * len(parts)
    size = _size(((x, dims), *zip(parts, part_dims)))
    items = [materialize(jnp.asarray(p), d if isinstance(d, int) else None, size)
             for p, d in zip(parts, part_dims)]
    rank = max(abstractify(i).ndim for i in items) - 1
    items = [sp.reshape(i, new_sizes=(size, *(1,) * (rank + 1 - abstractify(i).ndim),
                                      *abstractify(i).shape[1:])) for i in items]
    rows = np.arange(size, dtype=np.int32).reshape((size,) + (1,) * rank)
    return array_getitem(materialize(x, dims, size), (rows, *items))


def _slices_and_scalars(key: Any, key_dims: Any) -> bool:
    """`key` is a tuple of whole slices (``:``) and scalar integer indices, some batched:
    ``x[:, i]`` with a member's `i` a scalar."""
    if not isinstance(key, tuple) or not isinstance(key_dims, (tuple, list)):
        return False
    for part, d in zip(key, key_dims):
        if isinstance(part, slice):
            if part != slice(None) or batched(d):
                return False
        elif isinstance(part, bool) or not (isinstance(part, int) or hasattr(part, "dtype")
                                            and np.dtype(part.dtype).kind in "iu"
                                            and abstractify(part).ndim == (d is not None)):
            return False
    return True


def _gather_scalars(x: Any, dims: Any, key: Any, key_dims: Any) -> Any:
    """``x[:, i]`` with scalar indices, some batched (the result's batch axis is 0)."""
    size = _size(((x, dims), *zip(key, key_dims)))
    return array_getitem(materialize(x, dims, size),
                         _scalars_as_arrays(view(x, dims).shape, key, key_dims, size))


def _scalars_as_arrays(member: tuple, key: tuple, key_dims: Any, size: int) -> tuple:
    """`key` (whole slices and scalars, some batched) as one advanced index of the batched
    array: rows picking each member, each whole slice an `arange` along its own axis of
    the result (after the batch's), each scalar one value per member."""
    slices = [j for j, part in enumerate(key) if isinstance(part, slice)]
    lead = (size,) + (1,) * len(slices)
    items: list[Any] = [np.arange(size, dtype=np.int32).reshape(lead)]
    for j, (part, d) in enumerate(zip(key, key_dims)):
        if isinstance(part, slice):
            t = slices.index(j)
            items.append(np.arange(member[j], dtype=np.int32).reshape(
                (1,) * (1 + t) + (member[j],) + (1,) * (len(slices) - t - 1)))
        elif d is None:
            items.append(part)
        else:
            items.append(sp.reshape(move_to_front(jnp.asarray(part), d), new_sizes=lead))
    return tuple(items)


def _static_key(key: Any) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return all(p is None or p is Ellipsis or isinstance(p, (int, slice)) for p in parts)


def at_update(x: Any, dims: Any, key: Any, key_dims: Any, method: str, value: Any,
              value_dims: Any, kwargs: dict) -> tuple[Any, Any]:
    """``x.at[key].<method>(value)`` on batched operands."""
    if method == "get":
        return getitem(x, dims, key, key_dims)
    if not batched(key_dims) and _static_key(key):
        size = _size(((x, dims), (value, value_dims)))
        front = jnp.asarray(materialize(x, dims, size))
        key = key if isinstance(key, tuple) else (key,)
        if value_dims is not None:  # line the member axes up with the indexed ones
            target = ShapedArray(view(x, dims).shape, front.aval.dtype)
            value = _batch_first(value, value_dims, len(_indexed_shape(target, key)))
        method = "multiply" if method == "mul" else method
        return getattr(front.at[(slice(None), *key)], method)(value, **kwargs), 0
    mode = "multiply" if method == "mul" else method
    if _slices_and_scalars(key, key_dims) and mode in ("set", "add", "multiply", "min",
                                                        "max"):  # x.at[:, i]
        size = _size(((x, dims), (value, value_dims), *zip(key, key_dims)))
        front = jnp.asarray(materialize(x, dims, size))
        index = _scalars_as_arrays(view(x, dims).shape, key, key_dims, size)
        if value_dims is not None:  # its member axes lined up after the batch's
            value = _batch_first(value, value_dims, sum(isinstance(p, slice) for p in key))
        return getattr(front.at[index], mode)(value, **kwargs), 0
    from transpiler.numpy.index_update import update  # a batched key: batch the update
    if mode not in ("set", "add", "multiply", "min", "max"):
        raise TranspileError(f"vmap cannot batch `.at[...].{method}()` with a batched index",
                             user_location(), "use .set, .add, .multiply, .min or .max")
    return call(update, (x, key, value, mode), (dims, key_dims, value_dims, None), {}, {})


def _batch_first(value: Any, value_dims: int, rank: int) -> Any:
    """A batched update's value with its batch axis first and its member axes aligned to
    the last of the `rank` indexed axes (size-1 axes in between), as it broadcasts."""
    v = move_to_front(value, value_dims)
    shape = abstractify(v).shape
    extra = rank - (len(shape) - 1)
    if extra > 0:
        v = sp.reshape(v, new_sizes=(shape[0], *(1,) * extra, *shape[1:]))
    return v


def _indexed_shape(aval: ShapedArray, key: tuple) -> tuple:
    return np.empty(aval.shape, dtype=bool)[key].shape


def _size(pairs: Any) -> int:
    for x, d in pairs:
        if isinstance(d, int):
            return abstractify(x).shape[d]
    return batch_size()


class Method:
    """``obj.<name>(...)`` for a method with no transpiler.numpy function (containers')."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, obj: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(obj, self.name)(*args, **kwargs)


# --- calls -------------------------------------------------------------------------------------
def call(fn: Any, args: tuple, dims: tuple, kwargs: Optional[dict] = None,
         kwdims: Optional[dict] = None, fn_dims: Any = None) -> tuple[Any, Any]:
    """``fn(*args, **kwargs)`` batched: ``(out, out_dims)``."""
    kwargs = kwargs or {}
    if not batched(dims) and not batched(kwdims) and not batched(fn_dims) and \
            not getattr(fn, "batch_always", False):  # (collectives: lax.axis_index ...)
        operator = _operators().get(id(fn))
        if operator is not None:  # `a + b` on values the batch shares: as Python runs it
            return operator(*args), None
        target = for_jit(fn) if isinstance(fn, types.FunctionType) else fn
        return target(*args, **kwargs), None
    from transpiler.transforms.bt import rules as batch_rules  # cycle: bt.rules imports this package
    return batch_rules.dispatch(fn, tuple(args), tuple(dims), kwargs, kwdims or {}, fn_dims)


def function_call(fn: Any, args: tuple, dims: tuple, kwargs: dict, kwdims: dict,
                  fn_dims: Any, free_values: Optional[dict] = None) -> tuple[Any, Any]:
    """A Python function with source: its generated ``vmap_<name>`` (a closure's
    closed-over values replaced by `free_values` where given)."""
    from transpiler.transforms.batch.api import batch_function  # cycle: batch.api imports this package
    for arg in args:  # the derivative machinery running a lax control-flow rule (ad/control.py)
        if callable(arg):
            refuse_rule_code(arg, "vmap")
    signature = source_signature(fn)
    try:
        signature.bind(*args, **kwargs)  # (the arguments must fit)
        bound_dims = signature.bind(*dims, **{k: kwdims.get(k) for k in kwargs})
    except TypeError as err:
        raise TypeError(f"{getattr(fn, '__name__', fn)}(): {err}") from None
    companions = {name: d for name, d in bound_dims.arguments.items() if batched(d)}
    free: list[Any] = []
    if closures.is_closure(fn):
        params, _ = closures.converted(fn)
        values = {**dict(closures.closure_items(fn)), **(free_values or {})}
        free = [values[n] for n in params]
        for n in params:
            d = fn_dims.get(n) if isinstance(fn_dims, dict) else None
            if batched(d):
                companions[n] = d
        generated = closures._generated(fn, frozenset(companions), "vmap")
    else:
        generated = batch_function(fn, frozenset(companions))
    suffix = generated.batch_suffix  # type: ignore[attr-defined]
    return for_jit(generated)(*free, *args, **kwargs,
                              **{f"{n}{suffix}": d for n, d in companions.items()})


def primitive_call(prim: Primitive, args: tuple, dims: tuple, kwargs: dict,
                   kwdims: dict) -> tuple[Any, Any]:
    if batched(kwdims):
        raise TranspileError(f"the parameters of the primitive `{prim.name}` "
                             f"({', '.join(k for k in kwdims if batched(kwdims[k]))}) differ "
                             "across the vmapped batch; they must be static", user_location())
    rule = prim.batch
    if rule is None:
        raise TranspileError(f"the primitive `{prim.name}` has no batching rule",
                             user_location())
    for d in dims:
        if d is not None and not isinstance(d, int):
            raise TypeError(f"primitive `{prim.name}` got a batched container")
    return rule(list(args), list(dims), **kwargs)


_OPERATORS: dict[int, Any] = {}


def _operators() -> dict[int, Any]:
    """The transpiler.numpy functions generated code calls for Python operators
    (batch/transform.py), as the operators themselves."""
    if not _OPERATORS:
        # cycle (and libcst): common.classify reaches this package through transforms.ad
        from transpiler.transforms.common import classify as cl
        names = {**{v: k for k, v in cl.BINOP_TO_FUNCTION.items()},
                 **{v: k for k, v in cl.UNARY_TO_FUNCTION.items()}}
        table = {"add": op.add, "subtract": op.sub, "multiply": op.mul,
                 "true_divide": op.truediv, "floor_divide": op.floordiv, "remainder": op.mod,
                 "power": op.pow, "matmul": op.matmul, "negative": op.neg, "positive": op.pos,
                 "less": op.lt, "less_equal": op.le, "greater": op.gt, "greater_equal": op.ge,
                 "equal": op.eq, "not_equal": op.ne, "bitwise_and": op.and_,
                 "bitwise_or": op.or_, "bitwise_xor": op.xor, "left_shift": op.lshift,
                 "right_shift": op.rshift, "invert": op.invert}
        assert set(names) <= set(table)
        _OPERATORS.update({id(getattr(jnp, name)): fn for name, fn in table.items()})
    return _OPERATORS
