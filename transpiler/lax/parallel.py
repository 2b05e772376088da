"""JAX's named-axis collectives: ``lax.psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``,
``axis_index``, ``psum_scatter``, ``ppermute`` and ``all_to_all``.

A collective combines the values of every member of a named batch. The named axes are
those of the running `vmap`s (``AXES``, innermost last), whose members all
live in one array axis, so a collective is an ordinary array operation over that axis.

In batched code (``vmap_<name>``) the calls reach the rules of
transforms/bt/collectives.py: each function here is marked ``batch_always``, because
``axis_index`` has no batched operand but a batched result, and ``psum`` of an unbatched
value still depends on the batch size. Called directly, the functions here see values
that do not carry the batch (a helper called only on unbatched values, a jitted function
traced inside the vmap), so they compute what each member gets from a value that is the
same for every member: ``psum`` is ``x * size``, ``pmax`` is ``x``, ``all_gather`` repeats
``x``. Outside any vmap every axis name is unbound (eagerly there is no axis): a
`TranspileError` names it.

Under grad each is a custom_vjp whose bwd is the transpose collective (see the end of the
file); being linear, each is its own forward-mode rule (``jvp(psum)`` is ``psum`` of the
tangent). pmax and pmin are not differentiable.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import numpy as np

from transpiler import tree_util
from transpiler.errors import TranspileError, user_location
from transpiler.primitives import indexing as idx_p
from transpiler.primitives import shape as sp
from transpiler.primitives.core import abstractify
from transpiler.lax.spmd import SPMD, SpmdAxis, spmd_axis  # noqa: F401 (re-exported)
from transpiler.per_thread import PerThreadList
import transpiler.numpy as jnp

# The batches of the vmaps now running, innermost last (pushed by batched code, see
# transforms/bt). Each is a tuple of (axis_name, size) factors, outer-major: a nested vmap
# called on values batched by an outer one runs one batch of both (batch/api.py's
# nested_call), whose batch axis has the product of the sizes.
AXES: PerThreadList[tuple[tuple[Any, int], ...]] = PerThreadList("vmap_axes")


class Axis(NamedTuple):
    """One named axis a collective runs over."""

    name: Any
    size: int
    # Its position among the factors of the innermost batch (batch/api.py's nested_call merges
    # nested vmaps into one batch axis); None for the axis of an enclosing vmap that is not
    # merged into it, along which the values here are all the same.
    factor: int | None


def bound_names() -> list:
    """The axis names of the running vmaps, outermost first."""
    return [axis.name for axis in SPMD] + \
        [name for entry in AXES for name, _ in entry if name is not None]


def resolve(axis_name: Any, op: str, axis_index_groups: Any = None) -> list[Axis]:
    """The axes `axis_name` (a name or a tuple of names) names, in its order; the innermost
    binding of a name wins. Unbound names raise a `TranspileError` at the user's line."""
    if axis_index_groups is not None:
        raise TranspileError(f"lax.{op}: axis_index_groups is not supported", user_location(),
                             "reduce over whole named axes (nest vmaps to split a batch)")
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    found: list[Axis] = []
    for name in names:
        axis = lookup(name, AXES)
        if axis is None:
            hint = (f"lax.{op} runs only inside vmap/pmap(..., axis_name=...): eagerly there "
                    "is no axis to reduce over") if not AXES and not SPMD else \
                f"name the axis: vmap(f, axis_name={name!r})"
            raise TranspileError(f"unbound axis name {name!r}: the enclosing vmap/pmap bind "
                                 f"{bound_names()}", user_location(), hint)
        if any(a.name == name for a in found):
            raise TranspileError(f"lax.{op}: axis name {name!r} is given twice in "
                                 f"{axis_name!r}", user_location())
        found.append(axis)
    return found


class _AxisStack(Protocol):
    """What `lookup` reads of a stack of bound axes: a list, or a `PerThreadList`."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int, /) -> Any: ...


def lookup(name: Any, stack: _AxisStack) -> Axis | None:
    if name is None:
        return None
    for depth in range(len(stack) - 1, -1, -1):
        entry = stack[depth]
        for position in range(len(entry) - 1, -1, -1):  # the innermost vmap shadows
            bound, size = entry[position]
            if bound is not None and bound == name:
                return Axis(name, size, position if depth == len(stack) - 1 else None)
    return None


def group_size(axes: list[Axis]) -> int:
    """How many members a collective over `axes` combines."""
    return math.prod(a.size for a in axes)


def varying(op: str, axis_name: Any) -> TranspileError:
    """The error of a collective whose result would differ across members where the values
    carry no batch axis to hold the difference."""
    return TranspileError(
        f"lax.{op} over {axis_name!r} gives each member of the batch a different value, but "
        "here it runs where the values carry no batch axis (in a function called only with "
        "unbatched arguments, in a jitted function, or in an inner vmap over an axis of an "
        "enclosing vmap that does not batch its arguments)", user_location(),
        "call it in the vmapped function itself, or pass the helper a batched argument")


def place_gathered(y: Any, lead: int, axis: int, tiled: bool) -> Any:
    """`y` of shape ``(*lead axes, G, *member)``: the gathered axis G moved to position
    `axis` of the member (``all_gather``), or merged into the member's axis `axis` (tiled)."""
    shape = abstractify(y).shape
    ndim = len(shape) - lead - 1
    bound = ndim if tiled else ndim + 1
    if not -bound <= axis < bound:
        raise TranspileError(f"lax.all_gather: axis {axis} is out of range for a value of "
                             f"rank {ndim}{' (tiled)' if tiled else ''}", user_location())
    axis = axis + bound if axis < 0 else axis
    order = list(range(len(shape)))
    order.insert(lead + axis, order.pop(lead))
    if order != sorted(order):
        y = sp.transpose(y, permutation=tuple(order))
        shape = tuple(shape[i] for i in order)
    if tiled:
        at = lead + axis
        y = sp.reshape(y, new_sizes=(*shape[:at], shape[at] * shape[at + 1], *shape[at + 2:]))
    return y


def sources(perm: Any, size: int) -> list[int | None]:
    """For each destination member of ``ppermute``, its source (None: it receives zeros)."""
    result: list[int | None] = [None] * size
    seen: set[int] = set()
    for pair in perm:
        src, dst = (int(i) for i in pair)
        if not (0 <= src < size and 0 <= dst < size):
            raise TranspileError(f"lax.ppermute: the pair {tuple(pair)} is out of range for "
                                 f"an axis of size {size}", user_location())
        if src in seen or result[dst] is not None:
            raise TranspileError(f"lax.ppermute: perm {list(perm)} sends from or to a "
                                 "member twice", user_location(), "perm must be a partial "
                                 "permutation: distinct sources and distinct destinations")
        seen.add(src)
        result[dst] = src
    return result


# --- the collectives ----------------------------------------------------------------------------
def psum(x: Any, axis_name: Any, axis_index_groups: Any = None) -> Any:
    """``lax.psum``: the sum of `x` (a pytree) over the members of the named axes; every
    member gets the same result. Here `x` is the same for every member: ``x * size``."""
    spmd = spmd_axis(axis_name, "psum", axis_index_groups)
    if spmd is not None:
        leaves, tree = tree_util.tree_flatten(x)
        return tree_util.tree_unflatten(tree, spmd.psum_leaves([jnp.asarray(v) for v in leaves]))
    axes = resolve(axis_name, "psum", axis_index_groups)
    if not axes:
        return x
    n = group_size(axes)
    return tree_util.tree_map(lambda leaf: jnp.multiply(leaf, n), x)


def pmean(x: Any, axis_name: Any, axis_index_groups: Any = None) -> Any:
    """``lax.pmean``: ``psum(x) / size`` (true division, as in JAX)."""
    spmd = spmd_axis(axis_name, "pmean", axis_index_groups)
    if spmd is not None:
        leaves, tree = tree_util.tree_flatten(x)
        sums = spmd.psum_leaves([jnp.asarray(v) for v in leaves])
        return tree_util.tree_unflatten(tree, [jnp.true_divide(v, spmd.size) for v in sums])
    axes = resolve(axis_name, "pmean", axis_index_groups)
    if not axes:
        return x
    n = group_size(axes)
    return tree_util.tree_map(lambda leaf: jnp.true_divide(jnp.multiply(leaf, n), n), x)


def pmax(x: Any, axis_name: Any, axis_index_groups: Any = None) -> Any:
    """``lax.pmax``: the elementwise maximum over the members (here: `x` itself)."""
    spmd = spmd_axis(axis_name, "pmax", axis_index_groups)
    if spmd is not None:
        return tree_util.tree_map(lambda leaf: spmd.pmax(jnp.asarray(leaf)), x)
    resolve(axis_name, "pmax", axis_index_groups)
    return tree_util.tree_map(jnp.asarray, x)


def pmin(x: Any, axis_name: Any, axis_index_groups: Any = None) -> Any:
    """``lax.pmin``: the elementwise minimum over the members (here: `x` itself)."""
    spmd = spmd_axis(axis_name, "pmin", axis_index_groups)
    if spmd is not None:
        return tree_util.tree_map(lambda leaf: spmd.pmin(jnp.asarray(leaf)), x)
    resolve(axis_name, "pmin", axis_index_groups)
    return tree_util.tree_map(jnp.asarray, x)


def all_gather(x: Any, axis_name: Any, axis_index_groups: Any = None, axis: int = 0,
               tiled: bool = False) -> Any:
    """``lax.all_gather``: every member's `x` stacked along a new axis `axis` (of the group
    size), or concatenated along the existing axis `axis` when `tiled`; every member gets
    the same result. Here `x` is the same for every member: it is repeated."""
    spmd = spmd_axis(axis_name, "all_gather", axis_index_groups)
    if spmd is not None:
        return tree_util.tree_map(lambda leaf: spmd.all_gather(jnp.asarray(leaf), axis, tiled),
                                  x)
    axes = resolve(axis_name, "all_gather", axis_index_groups)
    n = group_size(axes)

    def gather(leaf: Any) -> Any:
        a = jnp.asarray(leaf)
        shape = abstractify(a).shape
        copies = sp.broadcast_to(sp.reshape(a, new_sizes=(1, *shape)), shape=(n, *shape))
        return place_gathered(copies, 0, axis, tiled)
    return tree_util.tree_map(gather, x)


def axis_index(axis_name: Any) -> Any:
    """``lax.axis_index``: each member's position along the named axes (int32; for several
    names, row-major in the order given). It differs across members, so it needs the
    batched code of vmap (its rule); here only an axis of size 1 has an index."""
    spmd = spmd_axis(axis_name, "axis_index")
    if spmd is not None:
        return spmd.axis_index()
    axes = resolve(axis_name, "axis_index")
    if group_size(axes) != 1:
        raise varying("axis_index", axis_name)
    return jnp.zeros((), np.int32)


def psum_scatter(x: Any, axis_name: Any, scatter_dimension: int = 0,
                 axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """``lax.psum_scatter``: ``psum(x)`` split along `scatter_dimension` among the members
    (member k gets block k; without `tiled` that dimension has the group size and is
    removed). The blocks differ across members, so it needs vmap's batched code (its rule)."""
    spmd = spmd_axis(axis_name, "psum_scatter", axis_index_groups)
    if spmd is not None:
        return tree_util.tree_map(
            lambda leaf: spmd.psum_scatter(jnp.asarray(leaf), scatter_dimension, tiled), x)
    axes = resolve(axis_name, "psum_scatter", axis_index_groups)
    if group_size(axes) != 1:
        raise varying("psum_scatter", axis_name)
    if tiled:
        return psum(x, axis_name)
    return tree_util.tree_map(lambda leaf: _drop_axis(leaf, scatter_dimension), x)


def _drop_axis(leaf: Any, axis: int) -> Any:
    shape = abstractify(leaf).shape
    if not -len(shape) <= axis < len(shape) or shape[axis] != 1:
        raise TranspileError(f"lax.psum_scatter: dimension {axis} of a value of shape {shape} "
                             "must have the axis size 1", user_location())
    axis %= len(shape)
    return sp.reshape(leaf, new_sizes=shape[:axis] + shape[axis + 1:])


def ppermute(x: Any, axis_name: Any, perm: Any) -> Any:
    """``lax.ppermute``: member ``dst`` gets the `x` of member ``src`` for each ``(src,
    dst)`` pair of `perm`; members no pair sends to get zeros. Here `x` is the same for every
    member, so the result is `x` when every member receives."""
    spmd = spmd_axis(axis_name, "ppermute")
    if spmd is not None:
        src = sources(perm, spmd.size)
        return tree_util.tree_map(lambda leaf: spmd.ppermute(jnp.asarray(leaf), src), x)
    axes = resolve(axis_name, "ppermute")
    if any(s is None for s in sources(perm, group_size(axes))):
        raise varying("ppermute", axis_name)
    return tree_util.tree_map(jnp.asarray, x)


def all_to_all(x: Any, axis_name: Any, split_axis: int, concat_axis: int, *,
               axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """``lax.all_to_all``: member i gets block i of every member's `x` along `split_axis`
    (of size the group size, removed; a multiple of it when `tiled`), stacked along a new
    axis `concat_axis` in member order (concatenated along `concat_axis` when `tiled`).
    Composed from ``all_gather`` and ``axis_index``, so every strategy runs it and the
    transforms differentiate and batch it as them; it moves each member's whole `x` to
    every member (the group size times what a native all-to-all moves)."""
    return _all_to_all_leaves(x, axis_name, split_axis, concat_axis, axis_index_groups, tiled)


def _all_to_all_leaves(x: Any, axis_name: Any, split_axis: int, concat_axis: int,
                       axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """`all_to_all` with its parameters positional (a custom_vjp, see the end)."""
    if axis_index_groups is not None:
        raise TranspileError("lax.all_to_all: axis_index_groups is not supported",
                             user_location(), "reduce over whole named axes")
    spmd = spmd_axis(axis_name, "all_to_all")
    size = spmd.size if spmd is not None else group_size(resolve(axis_name, "all_to_all"))
    return tree_util.tree_map(
        lambda leaf: _all_to_all(jnp.asarray(leaf), axis_name, size, split_axis, concat_axis,
                                 tiled), x)


def _all_to_all(x: Any, axis_name: Any, size: int, split_axis: int, concat_axis: int,
                tiled: bool) -> Any:
    shape = tuple(x.shape)
    rank = len(shape)
    if not -rank <= split_axis < rank or not -rank <= concat_axis < rank:
        raise TranspileError(f"lax.all_to_all: split_axis {split_axis} and concat_axis "
                             f"{concat_axis} must be dimensions of a value of shape {shape}",
                             user_location())
    split, concat = split_axis % rank, concat_axis % rank
    if (shape[split] % size if tiled else shape[split] != size):
        need = f"a multiple of {size}" if tiled else f"{size}"
        raise TranspileError(f"lax.all_to_all: dimension {split} of a value of shape {shape} "
                             f"must be {need} (the size of {axis_name!r})", user_location())
    gathered = all_gather(x, axis_name)  # (members j, *shape)
    if not tiled:  # block `mine` of every member, the members along `concat`
        return jnp.moveaxis(_block(gathered, axis_name, 1 + split), 0, concat)
    chunk = shape[split] // size
    blocks = jnp.reshape(gathered, (size, *shape[:split], size, chunk, *shape[split + 1:]))
    mine = jnp.moveaxis(_block(blocks, axis_name, 1 + split), 0, concat)
    merged = tuple(mine.shape)  # the members' blocks, member-major, along `concat`
    return jnp.reshape(mine, (*merged[:concat], merged[concat] * merged[concat + 1],
                              *merged[concat + 2:]))


def _block(y: Any, axis_name: Any, axis: int) -> Any:
    """Entry ``axis_index(axis_name)`` of `y` along `axis`, that axis removed."""
    starts = [np.int32(0)] * y.ndim
    starts[axis] = axis_index(axis_name)
    sizes = tuple(1 if d == axis else n for d, n in enumerate(y.shape))
    picked = idx_p.dynamic_slice(y, *starts, slice_sizes=sizes)
    return sp.reshape(picked, new_sizes=sizes[:axis] + sizes[axis + 1:])


# Their values depend on the member even where `x` does not (vmap runs their batched code).
for _fn in (all_to_all, _all_to_all_leaves, _all_to_all, _block):
    _fn.batch_always = True  # type: ignore[attr-defined,union-attr]


# --- reverse mode ---------------------------------------------------------------------------------
# Differentiated from their source, the collectives would be wrong: each member's function
# only sees `x * size`, not how the other members' values flow in. So each is a custom_vjp
# (its non-`x` parameters static, hence no keyword-only parameters here) whose bwd is the
# transpose collective, applied to the cotangents of all members (grad of a vmapped
# function is the vmapped VJP, ad/vmapped.py): psum <-> psum, pmean <-> pmean, all_gather <->
# psum_scatter, ppermute <-> the inverse ppermute, all_to_all <-> all_to_all with its split
# and concat axes swapped. As in JAX, pmax/pmin have no rule. Being linear
# (`CustomVJP.linear`), each is its own forward-mode rule.
def _no_derivative(op: str) -> Any:
    def fwd(*args: Any) -> Any:
        raise TranspileError(f"lax.{op} has no differentiation rule (as in JAX)",
                             user_location(), "stop_gradient its input, or write the "
                             "reduction with psum/all_gather")
    return fwd


def _psum_fwd(x: Any, axis_name: Any, groups: Any = None) -> tuple:
    return psum(x, axis_name, groups), None


def _psum_bwd(axis_name: Any, groups: Any, _: Any, g: Any) -> tuple:
    return (psum(g, axis_name, groups),)


def _pmean_fwd(x: Any, axis_name: Any, groups: Any = None) -> tuple:
    return pmean(x, axis_name, groups), None


def _pmean_bwd(axis_name: Any, groups: Any, _: Any, g: Any) -> tuple:
    return (pmean(g, axis_name, groups),)


def _all_gather_fwd(x: Any, axis_name: Any, groups: Any = None, axis: int = 0,
                    tiled: bool = False) -> tuple:
    return all_gather(x, axis_name, groups, axis, tiled), None


def _all_gather_bwd(axis_name: Any, groups: Any, axis: int, tiled: bool, _: Any,
                    g: Any) -> tuple:
    return (psum_scatter(g, axis_name, axis, groups, tiled),)


def _psum_scatter_fwd(x: Any, axis_name: Any, scatter_dimension: int = 0, groups: Any = None,
                      tiled: bool = False) -> tuple:
    return psum_scatter(x, axis_name, scatter_dimension, groups, tiled), None


def _psum_scatter_bwd(axis_name: Any, scatter_dimension: int, groups: Any, tiled: bool,
                      _: Any, g: Any) -> tuple:
    return (all_gather(g, axis_name, groups, scatter_dimension, tiled),)


def _ppermute_fwd(x: Any, axis_name: Any, perm: Any) -> tuple:
    return ppermute(x, axis_name, perm), None


def _ppermute_bwd(axis_name: Any, perm: Any, _: Any, g: Any) -> tuple:
    return (ppermute(g, axis_name, [(dst, src) for src, dst in perm]),)


def _all_to_all_fwd(x: Any, axis_name: Any, split_axis: int, concat_axis: int,
                    groups: Any = None, tiled: bool = False) -> tuple:
    return _all_to_all_leaves(x, axis_name, split_axis, concat_axis, groups, tiled), None


def _all_to_all_bwd(axis_name: Any, split_axis: int, concat_axis: int, groups: Any,
                    tiled: bool, _: Any, g: Any) -> tuple:
    return (_all_to_all_leaves(g, axis_name, concat_axis, split_axis, groups, tiled),)


def _differentiable() -> None:
    from transpiler.transforms.reverse.custom_vjp import CustomVJP  # upward: the transforms
    rules: dict[Callable[..., Any], tuple[Callable[..., Any], Callable[..., Any] | None]] = {
        psum: (_psum_fwd, _psum_bwd), pmean: (_pmean_fwd, _pmean_bwd),
        all_gather: (_all_gather_fwd, _all_gather_bwd),
        psum_scatter: (_psum_scatter_fwd, _psum_scatter_bwd),
        ppermute: (_ppermute_fwd, _ppermute_bwd),
        _all_to_all_leaves: (_all_to_all_fwd, _all_to_all_bwd),
        pmax: (_no_derivative("pmax"), None), pmin: (_no_derivative("pmin"), None)}
    for fn, (fwd, bwd) in rules.items():
        fn.batch_always = True  # type: ignore[attr-defined]  # bt.call: the rules, always
        wrapped = CustomVJP(fn, nondiff_argnums=range(1, len(inspect.signature(fn).parameters)))
        wrapped.defvjp(fwd, bwd or fwd)
        wrapped.linear = bwd is not None  # in its value: jvp(psum)(x, t) = psum(t)
        wrapped.nondifferentiable = bwd is None
        globals()[fn.__name__] = wrapped


axis_index.batch_always = True  # type: ignore[attr-defined]
_differentiable()
