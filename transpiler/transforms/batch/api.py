"""``vmap`` with JAX's signature, built on generated batched code (batch/transform.py).

``vmap(f, in_axes, out_axes)(*args)`` reads each argument's batch axis from `in_axes` (a
pytree prefix of the arguments), checks that the mapped axes agree on one size, runs the
generated ``vmap_<name>`` of `f` (through `bt.call`, which also takes
transform objects, closures and jitted functions), and moves each output's batch axis to
where `out_axes` puts it. Keyword arguments are mapped over axis 0.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

from transpiler.errors import TranspileError, located, user_location
from transpiler.primitives.core import abstractify
from transpiler.transforms import bt
from transpiler.transforms.common.generated import (TransformedFunction, Unbatchable, at_creation,
                                                    refuse_rule_code)
from transpiler.transforms.common.arguments import positional_names
from transpiler.tree_util._registry import node_children, sequence_like
from transpiler.codegen import disk_cache
from transpiler.transforms.common.generated import emit_generated
from transpiler.primitives.core import Primitive
from transpiler.primitives.batching import materialize
from transpiler.primitives import shape as sp
from transpiler.transforms.common import closures
from transpiler.primitives.batching import move_to_front
from transpiler.transforms.common.generated import primitive_function
from transpiler import lax, tree_util
from transpiler import numpy as jnp
from transpiler.codegen import emit_text
from transpiler.transforms.common.arguments import as_arrays
from transpiler.transforms.common.generated import target
from transpiler.transforms.reverse.generate import load_cached, store_cached
from transpiler.tracebacks import filtered

_GENERATED: dict[tuple, Callable] = {}
_PARSED: dict[tuple, Any] = {}  # vmap's frontend: comprehensions lowered to loops


def batch_function(fn: Callable, batched: frozenset) -> Callable:
    """The generated ``vmap_<name>(*args, <p>_b=None ...) -> (out, out_b)`` (cached)."""
    refuse_rule_code(fn, "vmap")
    key = (fn, batched, disk_cache.bindings(fn))  # see reverse/generate.py's vjp_function
    hit = _GENERATED.get(key)
    if hit is not None:
        return hit
    # On disk like reverse mode's code (api.py), keyed apart by a marker in the name set;
    # batched code has no generated callees (bt.call finds them at run time).
    disk_key = disk_cache.key(fn, batched | {"<vmap>"}, False)
    loaded = load_cached(fn, disk_key) if disk_key else None
    if loaded is not None:
        hit = loaded[1]
        hit.batch_suffix = hit.cotangent_param  # type: ignore[attr-defined]
    else:
        # lazy: the frontend and batch.transform import libcst (import transpiler stays fast)
        from transpiler.frontend import is_library, parse_function
        from transpiler.transforms.batch.transform import Vectorize  # lazy: as above (libcst)
        parse_key = (fn, key[2])  # its namespace is read when it is parsed
        parsed = _PARSED.get(parse_key)
        if parsed is None:
            parsed = _PARSED[parse_key] = parse_function(fn, lower_comprehensions=True)
        generated = Vectorize(parsed, batched, library=is_library(fn)).run()
        hit = emit_generated(fn, parsed, generated, "vmap")
        hit.batch_suffix = generated.out_bar  # type: ignore[attr-defined]
        if disk_key:
            store_cached(disk_key, fn, parsed, generated, hit)
    _GENERATED[key] = hit
    return hit


class Vmapped(TransformedFunction):
    """``vmap(f, ...)``: call it, or read ``.source`` (the generated batched code)."""

    def __init__(self, fun: Callable, in_axes: Any, out_axes: Any, axis_name: Any,
                 axis_size: Optional[int]) -> None:
        functools.update_wrapper(self, fun, updated=())  # (not fun's __dict__: a primitive's)
        fun = primitive_function(fun)
        self.fun, self.in_axes, self.out_axes = fun, in_axes, out_axes
        self.axis_name, self.axis_size = axis_name, axis_size
        self.fname = getattr(fun, "__name__", "function")

    runtime_transform = True  # the AD transforms call it through ad.vjp_call / jvp_call

    def __repr__(self) -> str:
        return f"<vmap({self.fname})>"

    def generate_code(self, module_name: str) -> None:
        """Its first level of batched code."""
        target = getattr(self.fun, "_fun", self.fun)
        mapped = any(a is not None for a in tree_util.tree_leaves(
            self.in_axes, is_leaf=lambda a: a is None))
        if getattr(target, "__module__", None) == module_name and mapped:
            self.source  # noqa: B018 (generates it)

    def vjp(self, args: tuple, kwargs: dict, g: Any, with_closure: bool = False) -> Any:
        from transpiler.transforms.ad.vmapped import vmap_vjp  # cycle: it imports this module
        bars, fn_bar = vmap_vjp(self, args, kwargs, g)
        return (bars, fn_bar) if with_closure else bars

    def jvp(self, primals: tuple, tangents: tuple, kwargs: dict, fn_dot: Any = None) -> tuple:
        from transpiler.transforms.ad.vmapped import vmap_jvp  # cycle: it imports this module
        return vmap_jvp(self, primals, tangents, kwargs, fn_dot)

    def differentiable(self) -> Callable:
        """As input to grad/jvp: ``def vmap_f(x, y): return _vmapped(x, y)``, whose call the
        AD transforms differentiate by the rules of ad/vmapped.py."""
        if getattr(self, "_wrapper", None) is None:
            params = [p for p in _arg_names(self.fun, 64) if not p.isdigit()]
            name = f"vmap_{self.fname}".replace("<lambda>", "lambda")
            source = f"def {name}({', '.join(params)}):\n" \
                     f"    return _vmapped({', '.join(params)})\n"
            code = getattr(target(self.fun), "__code__", None)
            self._wrapper = emit_text(source, name, {"_vmapped": self}, transform="vmap",
                                      name=self.fname, file=getattr(code, "co_filename", "?"),
                                      line=0)
        return self._wrapper  # type: ignore

    @property
    def source(self) -> str:
        """The generated Python of the batched function (its first level)."""
        params = positional_names(self.fun)
        axes = self.in_axes
        if isinstance(axes, (tuple, list)):
            names = {p for p, a in zip(params, axes) if a is not None}
        else:
            names = set(params) if axes is not None else set()
        return batch_function(target(self.fun), frozenset(names)).source  # type: ignore[attr-defined]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            args = tuple(as_arrays(a) for a in args)  # like JAX: NumPy inputs become arrays
            kwargs = {k: as_arrays(v) for k, v in kwargs.items()}
            dims, kwdims, size = self.prepare(args, kwargs)
            bt.AXES.append(((self.axis_name, size),))
            try:
                out, out_dims = bt.call(self.fun, args, dims, kwargs, kwdims)
            except Unbatchable:
                if self.axis_name is not None or bt.AXES[:-1]:
                    raise  # (collectives over the batch need it batched as one)
                out, out_dims = self.member_by_member(args, dims, kwargs, kwdims, size), 0
            finally:
                bt.AXES.pop()
            return place(out, out_dims, self.out_axes, size, self.fname)
        except Exception as error:
            raise filtered(error)  # noqa: B904 (the user's frames: transpiler/tracebacks.py)

    def member_by_member(self, args: tuple, dims: tuple, kwargs: dict, kwdims: dict,
                         size: int) -> Any:
        """`f` run once per batch member, as ``lax.map`` (one loop under jit), its outputs
        stacked on axis 0: the batching of a derivative vmap cannot batch as one computation
        (`Unbatchable`: the checkpointed reverse rule of an unbounded while_loop under jit, a
        Jacobian with respect to a pytree), exact and slower."""
        from transpiler.transforms.bt.structural import full_dims  # (it imports this module)
        leaves, tree = tree_util.tree_flatten((args, kwargs))
        leaf_dims = [d.dim for d in tree.flatten_up_to(full_dims((args, kwargs), (dims, kwdims)))]
        mapped = [i for i, d in enumerate(leaf_dims) if d is not None]

        def member(xs: Any) -> Any:
            parts = list(leaves)
            for i, x in zip(mapped, xs[1]):
                parts[i] = x
            member_args, member_kwargs = tree.unflatten(parts)
            return self.fun(*member_args, **member_kwargs)
        fronts = tuple(move_to_front(leaves[i], leaf_dims[i]) for i in mapped)
        return lax.map(member, (jnp.arange(size), fronts))

    def axes_for(self, args: tuple) -> Any:
        """The in_axes of a call with `args` (pmap unmaps its static arguments)."""
        return self.in_axes

    def prepare(self, args: tuple, kwargs: dict) -> tuple[tuple, dict, int]:
        """Each argument's companion (its batch axes) and the batch size; clear errors."""
        names = _arg_names(self.fun, len(args))
        axes = self.axes_for(args)
        if isinstance(axes, list):
            axes = tuple(axes)
        if isinstance(axes, tuple):
            if len(axes) != len(args):
                raise TranspileError(
                    f"vmap({self.fname}): in_axes has {len(axes)} entries but the function "
                    f"was called with {len(args)} positional arguments", user_location(),
                    "give one entry per positional argument (None for an unmapped one)")
        else:
            axes = (axes,) * len(args)
        sizes: list[tuple[str, int, int]] = []
        dims = tuple(_expand(a, x, f"argument `{n}`", sizes, self.fname)
                     for a, x, n in zip(axes, args, names))
        kwdims = {k: _expand(0, v, f"keyword argument `{k}`", sizes, self.fname)
                  for k, v in kwargs.items()}
        found = {s for _, _, s in sizes}
        if self.axis_size is not None:
            found.add(self.axis_size)
        if len(found) > 1:
            listed = "; ".join(f"{w} axis {a} has size {s}" for w, a, s in sizes)
            extra = f"; axis_size={self.axis_size}" if self.axis_size is not None else ""
            raise TranspileError(f"vmap({self.fname}): the mapped axes have different sizes: "
                                 f"{listed}{extra}", user_location(),
                                 "every mapped axis must have the batch size")
        if not found:
            raise TranspileError(f"vmap({self.fname}): no argument is mapped (in_axes "
                                 f"{self.in_axes!r}) and no axis_size was given",
                                 user_location(), "map at least one argument, or pass "
                                 "axis_size=")
        return dims, kwdims, found.pop()


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Any = None,
         axis_size: Optional[int] = None, spmd_axis_name: Any = None) -> Vmapped:
    """``jax.vmap``: `fun` mapped over the batch axes `in_axes` of its arguments."""
    if not callable(fun):
        raise located(TypeError, f"vmap: expected a function, got {type(fun).__name__}")
    check_axes("vmap", in_axes=in_axes, out_axes=out_axes)
    return at_creation(Vmapped(fun, in_axes, out_axes, axis_name, axis_size))


def check_axes(transform: str, **specs: Any) -> None:
    """`in_axes`/`out_axes` hold ints, None, or pytrees of them (vmap and pmap)."""
    for name, axes in specs.items():
        for leaf in _axis_leaves(axes):
            if leaf is not None and not isinstance(leaf, int) or isinstance(leaf, bool):
                raise located(TypeError, f"{transform}: {name} must be ints, None, or pytrees "
                              f"of them; got {leaf!r}")


def _axis_leaves(axes: Any) -> list:
    if isinstance(axes, (tuple, list)):
        return [leaf for a in axes for leaf in _axis_leaves(a)]
    if isinstance(axes, dict):
        return [leaf for a in axes.values() for leaf in _axis_leaves(a)]
    node = _registered(axes)
    if node is not None:  # a dataclass or registered pytree of axes
        return [leaf for a in node for leaf in _axis_leaves(a)]
    return [axes]


def _registered(axes: Any) -> Optional[list]:
    """The children of `axes` when it is a registered pytree node (not a tuple, list or
    dict), else None."""
    if axes is None or isinstance(axes, (int, tuple, list, dict)):
        return None
    node = node_children(axes)
    return None if node is None else node[0]


def _arg_names(fun: Callable, count: int) -> list[str]:
    fn_target = target(fun)
    template = getattr(fn_target, "jvp", None) if isinstance(fn_target, Primitive) else None
    if template is not None and not template.variadic:  # jnp.sin: the operands' names
        params = list(template.operands)
    else:
        try:
            params = positional_names(fn_target)
        except (TypeError, ValueError):
            params = []
    return [params[i] if i < len(params) else str(i) for i in range(count)]


def _is_container(x: Any) -> bool:
    return isinstance(x, (tuple, list, dict))


def _expand(axes: Any, x: Any, where: str, sizes: list, fname: str) -> Any:
    """`axes` (a prefix of `x`'s structure) as `x`'s companion; records each mapped size."""
    if axes is None:
        return None
    if isinstance(axes, int):
        if isinstance(x, dict):
            return {k: _expand(axes, v, f"{where}[{k!r}]", sizes, fname) for k, v in x.items()}
        if isinstance(x, (tuple, list)):
            return tuple(_expand(axes, v, f"{where}[{i}]", sizes, fname) for i, v in enumerate(x))
        if x is None:
            return None
        node = node_children(x) if not hasattr(x, "shape") else None
        if node is not None:  # a dataclass or registered pytree: a tuple of its children's
            return tuple(_expand(axes, v, f"{where}.{i}", sizes, fname)
                         for i, v in enumerate(node[0]))
        try:
            aval = abstractify(x)
        except Exception:
            raise TranspileError(f"vmap({fname}): {where} is mapped (axis {axes}) but is a "
                                 f"{type(x).__name__}, not an array", user_location(),
                                 "give it in_axes None") from None
        axis = axes + aval.ndim if axes < 0 else axes
        if not 0 <= axis < aval.ndim:
            raise TranspileError(f"vmap({fname}): in_axes {axes} is out of range for {where} "
                                 f"of shape {aval.shape} (rank {aval.ndim})", user_location(),
                                 f"use an axis in [-{aval.ndim}, {aval.ndim})" if aval.ndim
                                 else "a scalar has no axis to map; give it in_axes None")
        sizes.append((where, axis, aval.shape[axis]))
        return axis
    kind = type(axes).__name__
    children = _registered(axes)
    if children is not None:  # in_axes=Affine(None, 0): x must be that node, child by child
        x_node = node_children(x) if type(x) is type(axes) else None
        if x_node is None or len(x_node[0]) != len(children):
            raise TranspileError(f"vmap({fname}): in_axes for {where} is a {kind}, but {where} "
                                 f"is a {type(x).__name__}", user_location(),
                                 "in_axes must be a prefix of the arguments' structure")
        return tuple(_expand(a, v, f"{where}.{i}", sizes, fname)
                     for i, (a, v) in enumerate(zip(children, x_node[0])))
    if isinstance(axes, dict):
        if not isinstance(x, dict) or set(x) != set(axes):
            got = f"a dict with keys {sorted(x)}" if isinstance(x, dict) else \
                f"a {type(x).__name__}"
            raise TranspileError(f"vmap({fname}): in_axes for {where} is a dict with keys "
                                 f"{sorted(axes)}, but {where} is {got}", user_location(),
                                 "in_axes must be a prefix of the arguments' structure")
        return {k: _expand(axes[k], x[k], f"{where}[{k!r}]", sizes, fname) for k in x}
    if not isinstance(x, (tuple, list)) or len(x) != len(axes):
        got = f"a {type(x).__name__} of length {len(x)}" if isinstance(x, (tuple, list)) \
            else f"a {type(x).__name__}"
        raise TranspileError(f"vmap({fname}): in_axes for {where} is a {kind} of length "
                             f"{len(axes)}, but {where} is {got}", user_location(),
                             "in_axes must be a prefix of the arguments' structure")
    return tuple(_expand(a, v, f"{where}[{i}]", sizes, fname) for i, (a, v) in
                 enumerate(zip(axes, x)))


def place(out: Any, dims: Any, axes: Any, size: int, fname: str, where: str = "output") -> Any:
    """Move each output's batch axis to `axes` (broadcasting an unbatched one)."""
    if _is_container(out) and not hasattr(out, "shape"):
        keys = list(out) if isinstance(out, dict) else list(range(len(out)))

        def sub(tree: Any, k: Any) -> Any:
            return tree[k] if _is_container(tree) else tree
        if _is_container(axes) and (type(axes) is not type(out) and not (
                isinstance(axes, tuple) and isinstance(out, (tuple, list))) or len(axes) != len(out)):
            raise TranspileError(f"vmap({fname}): out_axes {axes!r} does not match the "
                                 f"structure of the {where}", user_location())
        placed = [place(out[k], sub(dims, k), sub(axes, k), size, fname, f"{where}[{k!r}]")
                  for k in keys]
        if isinstance(out, dict):
            return dict(zip(keys, placed))
        if hasattr(out, "_fields"):
            return type(out)(*placed)
        return type(out)(placed)
    if out is None:
        return None
    if _is_container(axes):
        raise TranspileError(f"vmap({fname}): out_axes {axes!r} does not match the structure "
                             f"of the {where}, a single array", user_location(),
                             "out_axes must be a prefix of the output's structure")
    if axes is None:
        if bt.batched(dims):
            raise TranspileError(f"vmap({fname}): the {where} differs across the batch, but "
                                 "its out_axes is None", user_location(),
                                 "give it an out_axes, or make it independent of the batch")
        return out
    aval = abstractify(out)
    ndim = aval.ndim + (0 if dims is not None else 1)
    axis = axes + ndim if axes < 0 else axes
    if not 0 <= axis < ndim:
        raise TranspileError(f"vmap({fname}): out_axes {axes} is out of range for the {where} "
                             f"(rank {ndim} with the batch axis)", user_location())
    front = materialize(out, dims, size)
    return _move(front, 0, axis)


def _move(x: Any, src: int, dst: int) -> Any:
    if src == dst:
        return x
    order = [i for i in range(abstractify(x).ndim) if i != src]
    order.insert(dst, src)
    return sp.transpose(x, permutation=tuple(order))


def nested_call(inner: Vmapped, args: tuple, dims: tuple, kwargs: dict, kwdims: dict,
                fn_dims: Any = None) -> tuple:
    """An inner ``vmap`` called on values batched by an outer one: one batch of both sizes
    (outer-major), run by the inner function's batched code, split again on the way out."""
    frame = bt.AXES[-1]
    outer = bt.batch_size()
    views = tuple(bt.view(x, d) for x, d in zip(args, dims))
    kw_views = {k: bt.view(v, kwdims.get(k)) for k, v in kwargs.items()}
    inner_dims, inner_kw, size = inner.prepare(views, kw_views)

    def merge(x: Any, d_out: Any, d_in: Any) -> tuple[Any, Any]:
        if isinstance(x, dict):
            return _zip_dict({k: merge(v, _sub(d_out, k), _sub(d_in, k)) for k, v in x.items()})
        if isinstance(x, (tuple, list)):
            pairs = [merge(v, _sub(d_out, i), _sub(d_in, i)) for i, v in enumerate(x)]
            return sequence_like(x, [p[0] for p in pairs]), tuple(p[1] for p in pairs)
        if d_out is None and d_in is None:
            return x, None
        front = materialize(x, d_out, outer)  # (outer, ...member)
        if d_in is None:
            shape = abstractify(front).shape
            both = sp.broadcast_to(sp.reshape(front, new_sizes=(outer, 1, *shape[1:])),
                                   shape=(outer, size, *shape[1:]))
        else:
            both = _move(front, d_in + 1, 1)
        shape = abstractify(both).shape
        return sp.reshape(both, new_sizes=(outer * size, *shape[2:])), 0

    merged = [merge(x, d, i) for x, d, i in zip(args, dims, inner_dims)]
    kw_merged = {k: merge(v, kwdims.get(k), inner_kw.get(k)) for k, v in kwargs.items()}
    call_args = (tuple(m[0] for m in merged), tuple(m[1] for m in merged),
                 {k: m[0] for k, m in kw_merged.items()}, {k: m[1] for k, m in kw_merged.items()})
    bt.AXES.append((*frame, (inner.axis_name, size)))
    try:
        if bt.batched(fn_dims) and not closures.is_closure(inner.fun):
            raise TranspileError(
                "vmap of a vmap of a transformed function (vmap(grad(f)) ...) whose f closes "
                "over values of the outer batch is not supported yet", user_location(),
                "pass those values to f as arguments")
        if bt.batched(fn_dims):  # a closure over values of the outer batch: merged too
            free = dict(closures.closure_items(inner.fun))
            both = {n: merge(free[n], d, None) for n, d in fn_dims.items() if n in free}
            out, out_dims = bt.function_call(inner.fun, *call_args,
                                             {n: m[1] for n, m in both.items()},
                                             {n: m[0] for n, m in both.items()})
        else:
            out, out_dims = bt.call(inner.fun, *call_args)
    finally:
        bt.AXES.pop()
    return _split(out, out_dims, inner.out_axes, outer, size, inner.fname)


def _split(out: Any, dims: Any, axes: Any, outer: int, size: int, fname: str) -> tuple:
    if _is_container(out) and not hasattr(out, "shape"):
        keys = list(out) if isinstance(out, dict) else list(range(len(out)))
        parts = [_split(out[k], _sub(dims, k), _sub(axes, k), outer, size, fname) for k in keys]
        if isinstance(out, dict):
            return dict(zip(keys, (p[0] for p in parts))), dict(zip(keys, (p[1] for p in parts)))
        return sequence_like(out, [p[0] for p in parts]), tuple(p[1] for p in parts)
    if dims is None:  # the same for both batches: the inner vmap broadcasts it
        return place(out, None, axes, size, fname), None
    front = move_to_front(out, dims)
    shape = abstractify(front).shape
    split = sp.reshape(front, new_sizes=(outer, size, *shape[1:]))
    if axes is None:
        raise TranspileError(f"vmap({fname}): the output differs across the batch, but its "
                             "out_axes is None", user_location())
    ndim = len(shape)
    axis = axes + ndim if axes < 0 else axes
    return _move(split, 1, axis + 1), 0


def _sub(tree: Any, k: Any) -> Any:
    if isinstance(tree, dict):
        return tree.get(k)
    if isinstance(tree, (tuple, list)):
        return tree[k]
    return tree


def _zip_dict(pairs: dict) -> tuple[dict, dict]:
    return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}


# jnp.vectorize, apply_along_axis and fromfunction map with vmap, as JAX's do; the array
# library sits below the transforms, so it is handed the function here
from transpiler.numpy import functional as _numpy_functional  # noqa: E402

_numpy_functional.install_vmap(vmap)
