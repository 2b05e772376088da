"""``jax.shard_map``: a function run on every shard of its arguments over a mesh's axes.

``shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(a)`` splits `a` by its spec
into one block per device of the mesh, runs `f` on each block with the collectives
(``lax.psum(v, "x")`` ...) over the mesh's named axes, and joins the blocks of each
output by its spec. It is `pmap` over the mesh, with the splitting and joining explicit:

- each argument is reshaped so that the mesh axes its spec names lead, in mesh order
  (`split`): dimension d of a leaf with spec axes (a, b) becomes (|a|, |b|, d/(|a||b|));
- one map per mesh axis, outer to inner in mesh order, runs `f` on the blocks: a leaf
  is mapped by the levels of the axes its spec names and shared by the others. A mesh
  of one axis is a `Pmapped` (pmap_api.py: its ``devices`` strategy, shard k on device
  k, when called on its own; vmap over the shards inside jit, grad and vmap); a mesh of
  several axes is nested `vmap`s (one device);
- every output comes back with every mesh axis leading; an axis its out spec does not
  name is one the output must not differ along (JAX's ``check_vma``): its first block is
  taken after a check of the values (eagerly, or from the host under jit), and the
  named axes are joined into the dimensions the spec puts them on (`merge`).

Reverse and forward mode are the maps' (vmap's rules) between the reshapes, whose
transposes are reshapes: gradients through shard_map are the single-device gradients.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Optional

import numpy as np

import transpiler.numpy as jnp
from transpiler import debug, lax, tree_util
from transpiler.errors import TranspileError, located, user_location
from transpiler.lowering.tracer import Tracer
from transpiler.sharding.mesh import Mesh, get_mesh
from transpiler.sharding.specs import (NamedSharding, PartitionSpec, check_divisible,
                                       check_spec)
from transpiler.spmd.per_shard_source import per_shard_source
from transpiler.spmd.pmap_api import Pmapped, per_shard_code
from transpiler.codegen import emit_text
from transpiler.primitives.batching import materialize, move_to_front
from transpiler.transforms import bt
from transpiler.transforms.batch.api import Vmapped
from transpiler.transforms.common.arguments import positional_names
from transpiler.transforms.common.generated import (TransformedFunction, at_creation,
                                                    carries_its_function, target)
from transpiler.sharding.placement import reshard
from transpiler.tracebacks import api_boundary

STRATEGIES = ("devices", "emulated")


class _Infer:
    def __repr__(self) -> str:
        return "Infer"


Infer: Any = _Infer()  # in_specs from the arguments' shardings


class MappedAxis:
    """`smap`'s ``in_axes``/``out_axes`` entry: dimension `axis` of each leaf (negative:
    from the end) split over mesh axis `name`."""

    def __init__(self, axis: int, name: str) -> None:
        self.axis, self.name = axis, name

    def at(self, ndim: int) -> PartitionSpec:
        axis = self.axis + ndim if self.axis < 0 else self.axis
        if not 0 <= axis < max(ndim, 1):
            raise TranspileError(f"smap: axis {self.axis} is out of range for a value of "
                                 f"{ndim} dimensions", user_location(),
                                 "give in_axes/out_axes within [-ndim, ndim), or None")
        return PartitionSpec(*([None] * axis), self.name)

    def __repr__(self) -> str:
        return f"{self.axis} over {self.name!r}"


def _is_spec(value: Any) -> bool:
    return value is None or isinstance(value, (PartitionSpec, MappedAxis))


def _leaf_spec(spec: Any, ndim: int) -> PartitionSpec:
    """A leaf's PartitionSpec (smap's axes resolved with its number of dimensions)."""
    if spec is None:
        return PartitionSpec()
    return spec.at(ndim) if isinstance(spec, MappedAxis) else spec


class ShardMapped(TransformedFunction):
    """``shard_map(f, ...)``: call it, or read ``.source`` (the per-shard code)."""

    runtime_transform = True  # grad and jvp reach it through .vjp / .jvp

    def __init__(self, fun: Callable, mesh: Optional[Mesh], in_specs: Any, out_specs: Any,
                 axis_names: frozenset, check_vma: bool, strategy: Optional[str]) -> None:
        functools.update_wrapper(self, fun, updated=())
        self.fun, self.mesh, self.in_specs, self.out_specs = fun, mesh, in_specs, out_specs
        self.axis_names, self.check_vma, self.strategy = axis_names, check_vma, strategy
        self.fname = getattr(fun, "__name__", "function")
        self._maps: dict[Any, Any] = {}  # see _Plan._maps

    def __repr__(self) -> str:
        return f"<shard_map({self.fname})>"

    def generate_code(self, module_name: str) -> None:
        per_shard_code(self.fun, module_name)

    # --- calls -----------------------------------------------------------------------------
    @api_boundary
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        plan = self._plan(args, kwargs)
        out = plan.per_shard(*plan.split_args(args))
        return plan.join(out, check=self.check_vma)

    def vjp(self, args: tuple, kwargs: dict, g: Any, with_closure: bool = False) -> Any:
        """Cotangents of the arguments: the maps' VJP between the reshapes' transposes."""
        plan = self._plan(args, kwargs)
        split = plan.split_args(args)
        g_split = None if g is None else plan.split_cotangent(g)
        result = plan.per_shard.vjp(split, {}, g_split, with_closure=with_closure)
        bars, fn_bar = result if with_closure else (result, None)
        bars = tuple(plan.merge_arg(i, b) for i, b in enumerate(bars))
        return (bars, fn_bar) if with_closure else bars

    def jvp(self, primals: tuple, tangents: tuple, kwargs: dict, fn_dot: Any = None) -> tuple:
        """(outputs, their tangents): the maps' JVP between the reshapes."""
        plan = self._plan(primals, kwargs)
        split = plan.split_args(primals)
        dots = tuple(None if t is None else plan.split_arg(i, t) for i, t in enumerate(tangents))
        out, out_dot = plan.per_shard.jvp(split, dots, {}, fn_dot)
        return plan.join(out, check=self.check_vma), \
            None if out_dot is None else plan.join(out_dot, check=False)

    def differentiable(self) -> Callable:
        """As input to grad/jvp/vmap: ``def shard_map_f(a, w): return _shard_mapped(a, w)``,
        whose call they reach through `vjp`/`jvp`/`batched_call`."""
        if getattr(self, "_wrapper", None) is None:
            params = [p for p in positional_names(self.fun) if p.isidentifier()] or ["x"]
            name = f"shard_map_{self.fname}".replace("<lambda>", "lambda")
            source = f"def {name}({', '.join(params)}):\n" \
                     f"    return _shard_mapped({', '.join(params)})\n"
            code = getattr(target(self.fun), "__code__", None)
            self._wrapper = emit_text(source, name, {"_shard_mapped": self},
                                      transform="shard_map", name=self.fname,
                                      file=getattr(code, "co_filename", "?"), line=0)
        return self._wrapper

    def batched_call(self, args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
        """vmap of this shard_map: ``shard_map(vmap(f))``, each batched argument's batch
        axis first and unsplit (its specs shifted by one dimension), every output batched
        at its first dimension."""
        if kwargs:
            self._plan(args, kwargs)  # (raises: positional arguments only)
        batched, moved = self._batched(args, dims, every=False)
        out = batched(*moved)
        return out, tree_util.tree_map(lambda _: 0, out)

    def batched_vjp(self, args: tuple, dims: tuple, g: Any, g_dims: Any) -> tuple:
        """vmap of this shard_map's VJP: the VJP of ``shard_map(vmap(f))`` with every
        argument batched (a shared one broadcast, so each member gets its cotangent)."""
        batched, moved = self._batched(args, dims, every=True)
        size = bt.batch_size()
        g = tree_util.tree_map(lambda b, d: None if b is None else materialize(b, d, size),
                               g, _companion(g_dims, g), is_leaf=lambda b: b is None)
        bars = batched.vjp(tuple(moved), {}, g)
        return bars, tuple(tree_util.tree_map(lambda _: 0, b) for b in bars)

    def _batched(self, args: tuple, dims: tuple, every: bool) -> tuple["ShardMapped", list]:
        """``shard_map(vmap(f))`` with specs for the arguments' batch axes moved first
        (all of them batched when `every`), and those arguments."""
        factors = bt.AXES[-1] if bt.AXES else ()
        names = [name for name, _ in factors if name is not None]
        if len(factors) > 1 and names:
            raise TranspileError(f"vmap of shard_map({self.fname}) inside nested named vmaps "
                                 f"({', '.join(map(str, names))}) is not supported",
                                 user_location(), "name only the innermost vmap's axis")
        mesh, size = self._mesh(), bt.batch_size()
        pairs = arg_specs(self, mesh, args)
        moved, in_specs, in_axes = [], [], []
        for i, (arg, d) in enumerate(zip(args, dims)):
            leaves, treedef = tree_util.tree_flatten(arg)
            leaf_dims = _leaf_dims(d, arg, len(leaves))
            if every:
                leaves = [materialize(leaf, ld, size) for leaf, ld in zip(leaves, leaf_dims)]
                leaf_dims = [0] * len(leaves)
            specs = [spec for _, spec in pairs[i]]
            moved.append(tree_util.tree_unflatten(treedef, [
                leaf if ld is None else move_to_front(leaf, ld)
                for leaf, ld in zip(leaves, leaf_dims)]))
            in_specs.append(tree_util.tree_unflatten(treedef, [
                spec if ld is None else PartitionSpec(None, *spec)
                for spec, ld in zip(specs, leaf_dims)]))
            in_axes.append(tree_util.tree_unflatten(treedef, [
                None if ld is None else 0 for ld in leaf_dims]))
        inner = Vmapped(self.fun, tuple(in_axes), 0, names[0] if names else None, size)
        out_specs = tree_util.tree_map(_shifted, self.out_specs, is_leaf=_is_spec)
        return ShardMapped(inner, mesh, tuple(in_specs), out_specs, self.axis_names,
                           self.check_vma, self.strategy), moved

    def lower(self, *args: Any) -> Any:
        """The per-block program of a one-axis mesh for these arguments, as pmap's: the
        multi-device IREE module (``.as_text()``), its arguments the blocks split by
        in_specs, stacked along a leading mesh axis."""
        return self._one_axis(args, "lower").lower(*self._plan(args, {}).split_args(args))

    def export(self, *args: Any) -> Any:
        """The per-block program with native collectives (``all_reduce``...) that every
        device of a one-axis mesh runs, for XLA/PJRT and IREE's GPU targets, as
        ``pmap(f).export``: ``shard_map(f, ...).export(*args).as_text()``."""
        return self._one_axis(args, "export").export(*self._plan(args, {}).split_args(args))

    def _one_axis(self, args: tuple, what: str) -> Pmapped:
        plan = self._plan(args, {})
        if not isinstance(plan.per_shard, Pmapped):
            raise TranspileError(f"shard_map({self.fname}).{what}: a mesh of "
                                 f"{len(plan.mesh.axis_names)} axes runs emulated, as one "
                                 "program on one device", user_location(),
                                 "stage it with jax.jit(shard_map(...)).lower(*args), or use "
                                 "a mesh of one axis")
        return plan.per_shard

    @property
    def source(self) -> str:
        """The code each shard runs, under a header saying how the arguments are split."""
        mesh = self._mesh()
        header = [f"# shard_map of {self.fname} over mesh "
                  f"{dict(mesh.shape)}: each device runs the function below on its block",
                  f"# in_specs {self.in_specs!r}; out_specs {self.out_specs!r}"]
        inner = Pmapped(self.fun, mesh.axis_names[0], 0, 0, (), list(mesh.devices.flat),
                        None, self.strategy if len(mesh.axis_names) == 1 else "emulated")
        shown = per_shard_source(inner).splitlines()
        return "\n".join(header + [line for line in shown if not line.startswith("# pmap of")
                                   and not line.startswith("# sharded:")]) + "\n"

    # --- the plan of a call ---------------------------------------------------------------
    def _mesh(self) -> Mesh:
        mesh = self.mesh if self.mesh is not None else get_mesh()
        if mesh is None:
            raise TranspileError(f"shard_map({self.fname}): no mesh", user_location(),
                                 "pass mesh=jax.make_mesh(...), or call it inside "
                                 "`with jax.set_mesh(mesh):`")
        return mesh

    def _plan(self, args: tuple, kwargs: dict) -> "_Plan":
        if kwargs:
            raise TranspileError(f"shard_map({self.fname}) was called with keyword arguments "
                                 f"({', '.join(sorted(kwargs))})", user_location(),
                                 "pass them positionally: in_specs gives one spec per "
                                 "positional argument")
        return _Plan(self, self._mesh(), args)


class _Plan:
    """How one call splits its arguments, maps `f` over the mesh, and joins its outputs."""

    def __init__(self, sm: ShardMapped, mesh: Mesh, args: tuple) -> None:
        self.sm, self.mesh = sm, mesh
        name = sm.fname
        self.arg_specs = arg_specs(sm, mesh, args)
        for i, (arg, specs) in enumerate(zip(args, self.arg_specs)):
            for leaf, spec in specs:
                what = f"shard_map({name}): argument {i}"
                check_spec(spec, mesh, f"{what} (in_specs)")
                self._check_manual(spec, f"{what} (in_specs)")
                try:
                    check_divisible(spec, mesh, np.shape(leaf), f"{what}")
                except ValueError as err:
                    raise located(ValueError, str(err), "give the argument a shape its mesh "
                                  "axes divide, or change its in_specs") from None
        self.per_shard = self._maps(args)

    def _check_manual(self, spec: PartitionSpec, what: str) -> None:
        manual = self.sm.axis_names
        outside = [a for a in spec.mesh_axes() if manual and a not in manual]
        if outside:
            raise located(ValueError, f"{what}: {spec!r} names mesh axis {outside[0]!r}, which "
                          f"is not among axis_names {sorted(manual)}")

    def _maps(self, args: tuple) -> Any:
        """One map per mesh axis, outer to inner in mesh order (see the module's text);
        kept per mesh and per layout of the arguments' specs (a pmap keeps its compiled
        per-shard programs)."""
        key = (self.mesh, tuple((tree_util.tree_structure(arg), tuple(s for _, s in specs))
                                for arg, specs in zip(args, self.arg_specs)))
        maps = self.sm._maps.get(key)
        if maps is None:
            maps = self.sm._maps[key] = self._new_maps(args)
        return maps

    def _new_maps(self, args: tuple) -> Any:
        mesh = self.mesh
        names = mesh.axis_names
        fn: Any = self.sm.fun
        for level in reversed(range(len(names))):
            axis = names[level]
            in_axes = tuple(_axes_tree(arg, specs, axis)
                            for arg, specs in zip(args, self.arg_specs))
            size = mesh.shape[axis]
            if len(names) == 1:
                fn = Pmapped(fn, axis, in_axes, 0, (), list(mesh.devices.flat), size,
                             self.sm.strategy)
            else:
                fn = Vmapped(fn, in_axes, 0, axis, size)
        return fn

    # arguments: split (and the transpose, merge)
    def split_args(self, args: tuple) -> tuple:
        return tuple(self.split_arg(i, a) for i, a in enumerate(args))

    def split_arg(self, i: int, value: Any) -> Any:
        return _map_specs(self.arg_specs[i], value, lambda x, s: split(x, s, self.mesh))

    def merge_arg(self, i: int, bar: Any) -> Any:
        if bar is None:
            return None
        return _map_specs(self.arg_specs[i], bar, lambda b, s: merge(b, s, self.mesh))

    # outputs: join (and the transpose for cotangents)
    def out_specs(self, out: Any) -> list[tuple[Any, PartitionSpec]]:
        sm = self.sm
        return _prefix_pairs(sm.out_specs, out, f"shard_map({sm.fname}): out_specs")

    def join(self, out: Any, check: bool) -> Any:
        """Each output's blocks (every mesh axis leading) joined by its out spec."""
        names = self.mesh.axis_names
        pairs = self.out_specs(out)
        leaves = []
        for k, (sub, spec) in enumerate(pairs):
            def one(y: Any, spec: Any = spec, k: int = k) -> Any:
                if y is None:
                    return None
                spec = _leaf_spec(spec, jnp.ndim(y) - len(names))
                check_spec(spec, self.mesh, f"shard_map({self.sm.fname}): out_specs")
                self._check_manual(spec, f"shard_map({self.sm.fname}): out_specs")
                named = spec.mesh_axes()
                _check_rank(spec, jnp.ndim(y) - len(names), self.sm.fname, k)
                for i, axis in enumerate(names):
                    if axis not in named and check:
                        _check_replicated(y, i, axis, spec, self.sm.fname, k)
                y = y[tuple(slice(None) if a in named else 0 for a in names)]
                return merge(y, spec, self.mesh)
            leaves.append(tree_util.tree_map(one, sub))
        return _rebuild(self.sm.out_specs, leaves)

    def split_cotangent(self, g: Any) -> Any:
        """The transpose of `join`: each output's cotangent split by its spec, the first
        block of an axis the spec does not name getting it (the others zero)."""
        names = self.mesh.axis_names
        pairs = _prefix_pairs(self.sm.out_specs, g, f"shard_map({self.sm.fname}): out_specs")
        leaves = []
        for sub, spec in pairs:
            def one(b: Any, spec: Any = spec) -> Any:
                if b is None:
                    return None
                spec = _leaf_spec(spec, jnp.ndim(b))
                y = split(b, spec, self.mesh)
                named = spec.mesh_axes()
                for i, axis in enumerate(names):
                    if axis not in named:
                        y = jnp.expand_dims(y, i)
                        pad = [(0, 0)] * jnp.ndim(y)
                        pad[i] = (0, self.mesh.shape[axis] - 1)
                        y = jnp.pad(y, pad)
                return y
            leaves.append(tree_util.tree_map(one, sub))
        return _rebuild(self.sm.out_specs, leaves)


# --- the reshapes ----------------------------------------------------------------------------
def split(x: Any, spec: PartitionSpec, mesh: Mesh) -> Any:
    """`x` with the mesh axes `spec` names leading, in mesh order, each dimension keeping
    its block: dimension d over axes (a, b) becomes (|a|, |b|, d/(|a||b|))."""
    shape = jnp.shape(x)
    sizes: list[int] = []
    labels: list[Any] = []  # a mesh axis name, or the dimension a block keeps
    for d, n in enumerate(shape):
        axes = spec.axes_of(d)
        for a in axes:
            sizes.append(mesh.shape[a])
            labels.append(a)
        sizes.append(n // math.prod(mesh.shape[a] for a in axes))
        labels.append(d)
    named = [a for a in mesh.axis_names if a in labels]
    if not named:
        return x
    order = [labels.index(a) for a in named] + [i for i, l in enumerate(labels)
                                                 if isinstance(l, int)]
    return jnp.transpose(jnp.reshape(x, sizes), order)


def merge(y: Any, spec: PartitionSpec, mesh: Mesh) -> Any:
    """The inverse of `split`: `y` leads with the mesh axes `spec` names (mesh order)."""
    named = [a for a in mesh.axis_names if a in spec.mesh_axes()]
    if not named:
        return y
    local = jnp.shape(y)[len(named):]
    order: list[int] = []
    shape: list[int] = []
    for d, n in enumerate(local):
        axes = spec.axes_of(d)
        order.extend(named.index(a) for a in axes)
        order.append(len(named) + d)
        shape.append(n * math.prod(mesh.shape[a] for a in axes))
    return jnp.reshape(jnp.transpose(y, order), shape)


# --- checks ----------------------------------------------------------------------------------
def _check_rank(spec: PartitionSpec, ndim: int, fname: str, k: int) -> None:
    if len(spec) > ndim:
        raise TranspileError(f"shard_map({fname}): output {k} has {ndim} dimensions per shard "
                             f"but its out_specs {spec!r} has {len(spec)} entries",
                             user_location(), "give one entry per dimension at most")


def _replicated_error(axis: str, spec: PartitionSpec, fname: str, k: int, where: str) -> str:
    return (f"shard_map({fname}): out_specs {spec!r} of output {k} says it is the same on "
            f"every shard along mesh axis {axis!r} (the spec does not name it), but it "
            f"differs across {axis!r}{where}. Name {axis!r} in its out_specs to join the "
            f"shards' blocks, make it the same (lax.psum / pmean / all_gather over "
            f"{axis!r}), or pass check_vma=False to take the first shard's block")


def _check_replicated(y: Any, i: int, axis: str, spec: PartitionSpec, fname: str,
                      k: int) -> None:
    """`y` is the same along its axis `i` (mesh axis `axis`): checked on the values, here
    or, under jit, from the host when the program runs."""
    if not isinstance(y, Tracer):
        values = np.asarray(y)
        first = np.broadcast_to(np.take(values, [0], axis=i), values.shape)
        same = bool((first == values).all()) or np.array_equal(
            first, values, equal_nan=values.dtype.kind in "fc")  # (NaNs: a second look)
        if not same:
            raise TranspileError(_replicated_error(axis, spec, fname, k, ""), user_location())
        return
    first = jnp.take(y, jnp.array([0]), axis=i)
    differs = y != first
    if jnp.issubdtype(y.dtype, jnp.inexact):
        differs = differs & ~(jnp.isnan(y) & jnp.isnan(first))
    differs = jnp.any(differs)
    message = _replicated_error(axis, spec, fname, k, f" (at {user_location()})")

    def fail(_: Any) -> None:
        raise ValueError(message)

    def report(flag: Any) -> Any:
        debug.callback(fail, flag)
        return flag

    lax.cond(differs, report, lambda flag: flag, differs)


# --- specs over pytrees ----------------------------------------------------------------------
def arg_specs(sm: ShardMapped, mesh: Mesh, args: tuple) -> list[list[tuple[Any, Any]]]:
    """Per argument, (leaf, spec) of each of its leaves."""
    in_specs = sm.in_specs
    if in_specs is Infer:
        in_specs = tuple(_inferred(a, mesh) for a in args)
    return [_arg_specs(in_specs, args, i, sm.fname) for i in range(len(args))]


def _inferred(arg: Any, mesh: Mesh) -> Any:
    """An argument's specs from its shardings (in_specs not given): a leaf placed with a
    NamedSharding on `mesh` is split as placed, anything else is shared."""
    def spec(leaf: Any) -> PartitionSpec:
        sharding = getattr(leaf, "sharding", None)
        if isinstance(sharding, NamedSharding) and sharding.mesh == mesh:
            return sharding.spec
        return PartitionSpec()
    return tree_util.tree_map(spec, arg)


def _arg_specs(in_specs: Any, args: tuple, i: int, fname: str) -> list[tuple[Any, Any]]:
    """(leaf, spec) of each array leaf of argument `i`; in_specs is a prefix of args."""
    if _is_spec(in_specs):
        per_arg = in_specs
    else:
        specs = tuple(in_specs) if isinstance(in_specs, list) else in_specs
        if not isinstance(specs, tuple) or len(specs) != len(args):
            count = len(specs) if isinstance(specs, tuple) else 1
            raise TranspileError(f"shard_map({fname}): in_specs has {count} entries but the "
                                 f"function was called with {len(args)} arguments",
                                 user_location(), "give one spec (a PartitionSpec, or a "
                                 "pytree of them) per positional argument")
        per_arg = specs[i]
    pairs = _prefix_pairs(per_arg, args[i], f"shard_map({fname}): in_specs of argument {i}")
    return [(leaf, _leaf_spec(spec, np.ndim(leaf)))
            for sub, spec in pairs for leaf in tree_util.tree_leaves(sub)]


def _prefix_pairs(specs: Any, value: Any, what: str) -> list[tuple[Any, PartitionSpec]]:
    """(subtree of `value`, its spec) for each spec leaf of the prefix `specs`."""
    treedef = tree_util.tree_structure(specs, is_leaf=_is_spec)
    try:
        subtrees = treedef.flatten_up_to(value)
    except (ValueError, TypeError) as err:
        raise TranspileError(f"{what} does not match the structure of the values: {err}",
                             user_location(), "specs must be a pytree prefix of the "
                             "arguments (or outputs)") from None
    specs_flat = tree_util.tree_leaves(specs, is_leaf=_is_spec)
    return list(zip(subtrees, specs_flat))


def _rebuild(specs: Any, subtrees: list) -> Any:
    treedef = tree_util.tree_structure(specs, is_leaf=_is_spec)
    return tree_util.tree_unflatten(treedef, subtrees)


def _map_specs(pairs: list[tuple[Any, PartitionSpec]], value: Any,
               op: Callable[[Any, PartitionSpec], Any]) -> Any:
    """`op(leaf, spec)` on each leaf of `value` (an argument, or its tangent/cotangent,
    whose None leaves stay None), with the specs `pairs` gives its leaves in order."""
    leaves, treedef = tree_util.tree_flatten(value, is_leaf=lambda v: v is None)
    if len(leaves) != len(pairs):
        raise TranspileError(f"shard_map: a derivative's structure ({treedef}) differs from "
                             "its argument's", user_location())
    return tree_util.tree_unflatten(treedef, [None if leaf is None else op(leaf, spec)
                                              for leaf, (_, spec) in zip(leaves, pairs)])


def _axes_tree(arg: Any, specs: list[tuple[Any, PartitionSpec]], axis: str) -> Any:
    """in_axes of one level for one argument: 0 for the leaves its specs split over
    `axis` (split moved that axis to the front of the remaining ones), else None."""
    leaves, treedef = tree_util.tree_flatten(arg)
    flags = [0 if axis in spec.mesh_axes() else None for _, spec in specs]
    if tree_util.treedef_is_leaf(treedef):
        return flags[0] if flags else None
    return tree_util.tree_unflatten(treedef, flags)


def _leaf_dims(dims: Any, arg: Any, count: int) -> list[Optional[int]]:
    """The batch axis of each leaf of `arg` from its companion (one for all, or a tree)."""
    if dims is None or isinstance(dims, int):
        return [dims] * count
    flat = tree_util.tree_leaves(dims, is_leaf=lambda d: d is None)
    if len(flat) != count:
        raise TranspileError("vmap of shard_map: an argument's batch axes do not match its "
                             "structure", user_location())
    return flat


def _shifted(spec: Any) -> Any:
    """An output's spec with a new unsplit first dimension (vmap's batch axis)."""
    if isinstance(spec, MappedAxis):
        return MappedAxis(spec.axis + 1 if spec.axis >= 0 else spec.axis, spec.name)
    return PartitionSpec(None, *(spec or ()))


def _companion(dims: Any, value: Any) -> Any:
    """A batch companion spread over `value`'s structure (one int or None for all)."""
    if dims is None or isinstance(dims, int):
        return tree_util.tree_map(lambda _: dims, value, is_leaf=lambda v: v is None)
    return dims


# Placing a value changes nothing the transforms see: the derivative and the batch of its
# first argument pass through (classify's "pass"), and its code is never transformed.
carries_its_function(reshard)
carries_its_function(lax.with_sharding_constraint)


def shard_map(f: Optional[Callable] = None, /, *, out_specs: Any, in_specs: Any = Infer,
              mesh: Optional[Mesh] = None, axis_names: Any = frozenset(),
              check_vma: bool = True, strategy: Optional[str] = None) -> Any:
    """``jax.shard_map``: `f` run on each device's block of its arguments over `mesh`
    (default: the current mesh, ``set_mesh``), the blocks split by `in_specs` (default:
    the arguments' own shardings) and the outputs joined by `out_specs`. ``strategy``
    (our extension, one-axis meshes) is pmap's: ``"devices"`` (default) or
    ``"emulated"``; meshes of several axes run emulated, on one device."""
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                 axis_names=axis_names, check_vma=check_vma, strategy=strategy)
    if not callable(f):
        raise located(TypeError, f"shard_map: expected a function, got {type(f).__name__}")
    if mesh is not None and not isinstance(mesh, Mesh):
        raise located(TypeError, f"shard_map: mesh must be a Mesh, got {type(mesh).__name__}",
                      "make one with jax.make_mesh((n,), ('name',))")
    if strategy is not None and strategy not in STRATEGIES:
        raise located(ValueError, f"shard_map: unknown strategy {strategy!r}; choose one of "
                      f"{', '.join(STRATEGIES)}")
    for spec in tree_util.tree_leaves((in_specs if in_specs is not Infer else None, out_specs),
                                      is_leaf=_is_spec):
        if not _is_spec(spec):
            raise located(TypeError, f"shard_map: specs must be PartitionSpecs (or pytrees of "
                          f"them), got {spec!r}", "write P('axis'), P() or P(None, 'axis')")
    if mesh is not None:
        for spec in tree_util.tree_leaves((in_specs if in_specs is not Infer else None,
                                           out_specs), is_leaf=_is_spec):
            if spec is not None:
                check_spec(spec, mesh, f"shard_map({getattr(f, '__name__', 'f')})")
    return at_creation(ShardMapped(f, mesh, in_specs, out_specs, frozenset(axis_names),
                                   check_vma, strategy))



def smap(f: Optional[Callable] = None, /, *, in_axes: Any = Infer, out_axes: Any,
         axis_name: str) -> Any:
    """``jax.smap``: `shard_map` over one axis of the current mesh (``set_mesh``),
    with vmap-style axes: ``in_axes``/``out_axes`` say which dimension of each
    argument/output is split over mesh axis `axis_name` (None: not split)."""
    if f is None:
        return functools.partial(smap, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
    if not isinstance(axis_name, str):
        raise located(TypeError, f"smap: axis_name must be a mesh axis name, got {axis_name!r}")

    def specs(axes: Any, what: str) -> Any:
        def one(a: Any) -> Any:
            if a is None:
                return None
            if isinstance(a, int) and not isinstance(a, bool):
                return MappedAxis(a, axis_name)
            raise located(TypeError, f"smap: {what} must be ints, None, or containers of "
                          f"them; got {a!r}")
        return tree_util.tree_map(one, axes, is_leaf=lambda a: a is None)
    in_specs = in_axes if in_axes is Infer else specs(
        tuple(in_axes) if isinstance(in_axes, list) else in_axes, "in_axes")
    return at_creation(ShardMapped(f, None, in_specs, specs(out_axes, "out_axes"),
                                   frozenset({axis_name}), True, None))
