"""Cotangents of containers, as generated derivative code handles them (the ``ad.``
namespace; run-time call dispatch is in calls.py).

Cotangents are arrays, containers of cotangents (tuple, list, dict), or ``None`` for
"zero, nothing flowed here", which keeps generated code free of zero arrays.
"""

from __future__ import annotations

from typing import Any, Optional

import collections.abc
import functools
import types

import numpy as np

from transpiler import dtypes, tree_util
from transpiler import numpy as jnp
from transpiler.codegen.disk_cache import local_path
from transpiler.errors import _PACKAGE_DIR, SourceLocation, TranspileError, user_location
from transpiler.primitives.core import abstractify
from transpiler.transforms.common import arguments
from transpiler.transforms.common.closures import carries_derivative, closure_items, is_closure
from transpiler.transforms.common.generated import Unbatchable
from transpiler.tree_util._registry import node_children


def add(a: Any, b: Any) -> Any:
    """Sum of two cotangents; None is zero; containers (NamedTuples, dataclasses and other
    registered pytrees too) add element by element."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, dict):
        keys = list(a) + [k for k in b if k not in a]
        return {k: add(a.get(k), b.get(k)) for k in keys}
    node = node_of(a)
    if node is not None:
        children, rebuild = node
        return rebuild([add(x, y) for x, y in zip(children, node_of(b)[0])])  # type: ignore[index]
    return jnp.add(a, b)


def node_of(x: Any) -> Any:
    """(children, rebuild) of a container cotangent: a tuple, list, NamedTuple, dataclass
    or registered pytree; None for an array."""
    if hasattr(x, "aval") or hasattr(x, "shape"):
        return None
    return node_children(x)


def items_bar(d: dict, g: Any) -> Any:
    """The cotangent of `d` from ``d.items()`` (`g`: one (key, value) cotangent each)."""
    if g is None:
        return None
    return {k: (pair[1] if pair is not None else None) for k, pair in zip(d, g)}


def values_bar(d: dict, g: Any) -> Any:
    """The cotangent of `d` from ``d.values()``."""
    return None if g is None else dict(zip(d, g))


def items_tangent(d: dict, d_dot: Any) -> Any:
    """The tangent of ``d.items()``: (None, tangent) per entry."""
    return None if d_dot is None else [(None, d_dot.get(k)) for k in d]


def values_tangent(d: dict, d_dot: Any) -> Any:
    """The tangent of ``d.values()``."""
    return None if d_dot is None else [d_dot.get(k) for k in d]


def without_item(g: Any, key: Any) -> Any:
    """The cotangent of `d` from ``with_item(d, key, v)``: `g` without `key`'s entry."""
    return None if g is None else {k: v for k, v in g.items() if k != key}


def repeat_bar(g: Any, size: int) -> Any:
    """The cotangent of a tuple or list `xs` of `size` elements from that of ``xs * n``:
    each element's, summed over the copies."""
    if g is None:
        return None
    out = []
    for i in range(size):
        total = None
        for k in range(i, len(g), size):
            total = add(total, g[k])
        out.append(total)
    return type(g)(out) if isinstance(g, (tuple, list)) else out


def set_item_tangent(x: Any, x_dot: Any, key: Any, value_dot: Any) -> Any:
    """The tangent of dict or list `x` after ``x[key] = value`` in place (the library's
    code: forward mode follows the element set)."""
    if isinstance(x, dict):
        return with_item_tangent(x, x_dot, key, value_dot)
    if not isinstance(x, list):
        raise TranspileError(f"cannot differentiate setting an element of a "
                             f"{type(x).__name__} in place in forward mode", user_location())
    tangent = list(x_dot) if isinstance(x_dot, list) else [None] * len(x)
    tangent[key] = value_dot
    return tangent


def with_item_tangent(d: Any, d_dot: Any, key: Any, value_dot: Any) -> Any:
    """The tangent of ``with_item(d, key, v)`` (None: zero)."""
    if d_dot is None and value_dot is None:
        return None
    return {**(d_dot if d_dot is not None else {k: None for k in d}), key: value_dot}


def attribute_bar(obj: Any, name: str, g: Any) -> Any:
    """The cotangent of ``obj`` from ``y = obj.<name>`` with ``y_bar = g``: `obj`'s structure
    (a NamedTuple, a dataclass or a registered pytree) with `g` in that attribute's place."""
    if g is None or obj is None:
        return None
    node = node_of(obj)
    index = child_index(obj, name, node)
    children, rebuild = node
    return rebuild([g if i == index else None for i in range(len(children))])


def attribute_tangent(obj_dot: Any, name: str) -> Any:
    """The tangent of ``obj.<name>``: that attribute of the tangent (None: zero)."""
    return None if obj_dot is None else getattr(obj_dot, name)


def child_index(obj: Any, name: str, node: Any) -> int:
    """Which pytree child of `obj` its attribute `name` is (raises when it is none)."""
    fields = getattr(type(obj), "_fields", None)
    if isinstance(obj, tuple) and fields is not None and name in fields:
        return fields.index(name)
    value = getattr(obj, name)
    if node is not None:
        for i, child in enumerate(node[0]):
            if child is value:
                return i
    raise TranspileError(
        f"cannot differentiate through the attribute `.{name}` of a {type(obj).__name__}: "
        "it is not one of its pytree children", user_location(),
        "register the class as a pytree (tree_util.register_pytree_node_class or "
        "register_dataclass) with the attribute among its children")


def unpacked_cotangent(bars: tuple, source: Any) -> Any:
    """The cotangent of `source` unpacked into a target (``a, b = source``) from its parts'
    cotangents `bars` (a tuple nested like the target): a tuple when `source` is a tuple or
    list, and the parts stacked along the first axis (zeros where None) when it is an
    array, so that unpacking ``loc, scale = params`` gives ``params`` an array cotangent."""
    parts = tuple([_unpacked_part(b, s) for b, s in zip(bars, source)])
    if isinstance(source, (tuple, list)) or not hasattr(source, "shape"):
        return parts
    if all(p is None for p in parts):
        return None
    return jnp.stack([_or_zeros_like(p, s) for p, s in zip(parts, source)])


def unpacked_parts(g: Any, bars: tuple, source: Any) -> Any:
    """The transpose of `unpacked_cotangent`: the parts' cotangents (nested like `bars`)
    from the cotangent `g` of the whole."""
    if g is None:
        return None
    if not isinstance(source, (tuple, list)) and hasattr(source, "shape"):
        g = tuple([g[i] for i in range(len(bars))])
    return tuple([unpacked_parts(gi, b, s) if isinstance(b, tuple) else gi
                  for gi, b, s in zip(g, bars, source)])


def _unpacked_part(bar: Any, source: Any) -> Any:
    return unpacked_cotangent(bar, source) if isinstance(bar, tuple) else bar


def _or_zeros_like(bar: Any, primal: Any) -> Any:
    return jnp.zeros_like(primal) if bar is None else bar


def item(g: Any, key: Any) -> Any:
    """``g[key]`` of a container cotangent, None when nothing flowed."""
    if g is None:
        return None
    if isinstance(g, dict):
        return g.get(key)
    return g[key]


def unpacked_dict_bar(g: Any, part: dict, later: Any) -> Any:
    """The cotangent of `part`, a dict unpacked into a dict literal (``{**part, k: v}``)
    whose cotangent is `g`: the entries of `g` at `part`'s keys, but for those a later
    entry of the literal (keys `later`) replaced, which took none of it."""
    if g is None:
        return None
    replaced = set(later)
    return {k: g.get(k) for k in part if k not in replaced}


def appended(xs: Any, value: Any) -> list:
    """``xs.append(value)`` as a new list: reverse mode rewrites appends into this, so that a
    list built in a loop is an ordinary value whose cotangent is a list (the last entry's
    for `value`, the others' for `xs`)."""
    return [*xs, value]


def appended_tangent(xs: Any, xs_dot: Any, value_dot: Any) -> Any:
    """The tangent of ``appended(xs, value)``: a list of tangents (None: zero)."""
    if xs_dot is None and value_dot is None:
        return None
    return [*(xs_dot if xs_dot is not None else [None] * len(xs)), value_dot]


def rows_tangent(t: Any, kind: type) -> Any:
    """The tangent of ``list(x)`` or ``tuple(x)``: of a sequence, the same; of an array, its
    rows (None: zero)."""
    return None if t is None else kind(t)


def rows_bar(g: Any, x: Any) -> Any:
    """The cotangent of `x` from ``list(x)``/``tuple(x)``: of an array, the rows' cotangents
    stacked back (zeros where none flowed)."""
    if g is None or not (hasattr(x, "shape") and isinstance(g, (tuple, list))):
        return g
    if all(r is None for r in g):
        return None
    rows = []
    for i in range(len(g)):  # (a loop: forward mode differentiates it, for second order)
        if g[i] is None:
            rows.append(jnp.zeros_like(x[i]))
        else:
            rows.append(g[i])
    return jnp.stack(rows)


def basis_of(x: Any) -> Any:
    """The one-hot arrays of `x`'s elements, stacked: shape ``(x.size, *x.shape)`` (the
    tangents, or cotangents, a Jacobian maps). Static: built from the shape alone."""
    if isinstance(x, (dict, list, tuple)) or node_children(x) is not None:
        raise Unbatchable(f"a Jacobian with respect to a {type(x).__name__} (a pytree) "
                          "cannot be differentiated or batched again yet", user_location(),
                          "take it with respect to one array (transpiler.flatten_util."
                          "ravel_pytree flattens a pytree into one)")
    aval = abstractify(x)
    size = int(np.prod(aval.shape, dtype=np.int64))
    return jnp.reshape(jnp.eye(size, dtype=aval.dtype), (size, *aval.shape))


def forward_jacobian(columns: Any, x: Any) -> Any:
    """``(x.size, *out.shape)`` columns (one jvp per input element) as the Jacobian
    ``(*out.shape, *x.shape)``."""
    moved = jnp.moveaxis(columns, 0, -1)
    return jnp.reshape(moved, (*jnp.shape(moved)[:-1], *abstractify(x).shape))


def reverse_jacobian(rows: Any, out: Any, x: Any) -> Any:
    """``(out.size, *x.shape)`` rows (one vjp per output element) as the Jacobian
    ``(*out.shape, *x.shape)``."""
    return jnp.reshape(rows, (*abstractify(out).shape, *abstractify(x).shape))


def spread(bar: Any, args: tuple) -> tuple:
    """The cotangents of ``*args`` as a tuple of one entry per argument."""
    return tuple(bar) if bar is not None else (None,) * len(args)


def index_bar(container: Any, index: Any, g: Any) -> Any:
    """The cotangent of ``container`` from ``y = container[index]`` with ``y_bar = g``."""
    if g is None or container is None:  # nothing flowed, or a zero (None) container
        return None
    if isinstance(container, dict):
        return {k: (g if k == index else None) for k in container}
    if isinstance(container, (tuple, list)):
        bars: list[Any] = [None] * len(container)
        if isinstance(index, slice):
            for i, gi in zip(range(*index.indices(len(container))), g):
                bars[i] = gi
        else:
            bars[index] = g
        return type(container)(bars) if isinstance(container, list) else tuple(bars)
    index, g = _without_new_axes(index, g, jnp.ndim(container))
    return jnp.zeros_like(container, dtype=jnp.result_type(g)).at[index].add(g)


def _without_new_axes(index: Any, g: Any, ndim: int) -> tuple[Any, Any]:
    """A basic index (ints, slices, ``...``) with ``None`` entries, and the cotangent of
    what it selected, as the index without them and the cotangent without the unit axes
    they added (``x[None]``'s cotangent is ``g[0]``); any other index as it is."""
    items = index if isinstance(index, tuple) else (index,)
    basic = all(i is None or i is Ellipsis or isinstance(i, slice) or (
        isinstance(i, (int, np.integer)) and not isinstance(i, bool)) for i in items)
    if not basic or not any(i is None for i in items):
        return index, g
    consumed = sum(1 for i in items if i is not None and i is not Ellipsis)
    axis, new, kept = 0, [], []
    for i in items:
        if i is None:
            new.append(axis)
            axis += 1
            continue
        kept.append(i)
        if i is Ellipsis:
            axis += ndim - consumed
        elif isinstance(i, slice):
            axis += 1
    shape = jnp.shape(g)
    return tuple(kept), jnp.reshape(g, tuple(d for k, d in enumerate(shape) if k not in new))


class _Seed:
    """``_out_bar=ad.SEED`` asks for grad's seed; ``None`` means no cotangent (zero)."""

    def __repr__(self) -> str:
        return "ad.SEED"


SEED = _Seed()


class _SeedIfScalar:
    """``_out_bar=ad.SEED_IF_SCALAR``: grad's seed for a real scalar output, else no
    cotangent (a Jacobian's code then maps a basis of cotangents instead)."""

    def __repr__(self) -> str:
        return "ad.SEED_IF_SCALAR"


SEED_IF_SCALAR = _SeedIfScalar()


def is_scalar(out: Any) -> bool:
    """Whether `out` is a real scalar array (static: its aval only)."""
    try:
        aval = abstractify(out)
    except TypeError:
        return False
    return aval.shape == () and dtypes.is_float(aval.dtype)


def seed(out_bar: Any, out: Any, has_aux: bool) -> Any:
    """The output cotangent: the caller's (vjp), or ``grad``'s 1.0 for a real scalar."""
    if has_aux and not (isinstance(out, (tuple, list)) and len(out) == 2):
        got = f"{type(out).__name__} of {len(out)}" if isinstance(out, (tuple, list)) \
            else type(out).__name__
        raise TranspileError(f"with has_aux=True the function must return a pair (output, "
                             f"aux), got {got}", user_location(),
                             "return (loss, aux), or drop has_aux=True")
    if out_bar is SEED_IF_SCALAR:
        out_bar = SEED if is_scalar(out[0] if has_aux else out) else None
    if out_bar is not SEED:
        return (out_bar, None) if has_aux and out_bar is not None else out_bar
    value = out[0] if has_aux else out
    try:
        aval = abstractify(value)
    except TypeError:
        raise TranspileError(f"grad requires the function to return a scalar array, got "
                             f"{type(value).__name__}", user_location(),
                             "with has_aux=True return (loss, aux)") from None
    if aval.shape != () or not dtypes.is_float(aval.dtype):
        raise TranspileError(
            f"grad requires a real scalar output, got {aval}", user_location(),
            "reduce the output (e.g. jnp.sum or jnp.mean), or use vjp/jacrev for "
            "non-scalar outputs")
    one = jnp.ones_like(value)
    return (one, None) if has_aux else one


def sequence_derivative(d: Any, xs: Any) -> Any:
    """Through ``_sequence(xs)`` (a lowered loop's iterable), the tangent of its result
    from that of `xs`, or the cotangent of `xs` from that of its result: itself, but none
    for a dict or set (its keys or elements)."""
    return None if isinstance(xs, (dict, set, frozenset)) else d


def keyword_bars(bars: Optional[dict], d: dict) -> Any:
    """The cotangent of a dict passed as ``**d``: its keys' entries of the keyword cotangents.
    (Linear in `bars`, a restriction: its own tangent and transpose, helper_tangents.py and
    reverse/adjoints.py.)"""
    if bars is None:
        return None
    picked = {k: bars.get(k) for k in d}
    return None if all(v is None for v in picked.values()) else picked


def differentiable_value(value: Any) -> bool:
    """Whether a run-time argument can carry a cotangent (floating arrays, and containers
    that hold one)."""
    if isinstance(value, (tuple, list, dict)):
        return any(differentiable_value(v) for v in (value.values() if isinstance(value, dict)
                                                     else value))
    if isinstance(value, float):
        return True
    if isinstance(value, types.ModuleType):  # ``l=lax`` passed along (its ``dtype`` is a function)
        return False
    if is_closure(value):  # the dict of its cells' (transforms/common/closures.py)
        return carries_derivative(value)
    if isinstance(value, collections.abc.Iterator):  # what it yields is unseen: the traced
        return True                                  # fallback refuses it (transforms/common/traced.py)
    if isinstance(value, functools.partial):  # its bound values' (transforms/common/partials.py)
        return any(differentiable_value(v) for v in (*value.args, *value.keywords.values()))
    dtype = getattr(value, "dtype", None)
    if dtype is None:  # a dataclass or registered pytree: when it has a float leaf
        return node_of(value) is not None and any(
            differentiable_value(leaf) for leaf in tree_util.tree_leaves(value))
    return dtypes.is_inexact(dtypes.canonicalize(dtype))


def fail(message: str, hint: str, file: Any, line: int, col: int) -> None:
    """Raise the TranspileError the transform found for a statement, when it is reached."""
    loc = SourceLocation(local_path(file), line, col) if file is not None else None
    if loc is not None and loc.file.startswith(_PACKAGE_DIR):
        # inside the library (a derivative of its own helpers): say where the user's code
        # asked for it, and which line of the library could not be differentiated
        message = f"{message} (in {loc.file}:{loc.line})"
        loc = user_location()
    raise TranspileError(message, loc, hint)


def defined(scope: dict, names: tuple) -> tuple:
    """The values of `names` in `scope` (a loop iteration's locals), None where unassigned:
    names a loop body assigns on some paths only."""
    return tuple(scope.get(n) for n in names)


def finalize(bar: Any, primal: Any) -> Any:
    """The gradient of one argument: `bar` with the primal's structure and dtypes, zeros
    where nothing flowed. Differentiated as the identity in `bar` (classify: "pass")."""
    return arguments.finalize(bar, primal)


def or_zeros(bar: Any, primal: Any) -> Any:
    """`bar`, or zeros shaped like `primal` (containers too) when nothing flowed."""
    if bar is not None:
        return bar
    if not isinstance(primal, (dict, list, tuple)) and not differentiable_value(primal):
        return None  # ints, strings, shapes: nothing flows into them
    if isinstance(primal, dict):
        parts = {k: or_zeros(None, v) for k, v in primal.items()}
        return None if all(p is None for p in parts.values()) else parts
    if is_closure(primal):  # the dict of its cells' (transforms/common/closures.py)
        cells = {n: or_zeros(None, v) for n, v in closure_items(primal)}
        return {n: v for n, v in cells.items() if v is not None} or None
    node = node_of(primal)
    if node is not None:  # tuples, lists, NamedTuples, registered pytrees
        items = [or_zeros(None, v) for v in node[0]]
        return None if all(p is None for p in items) else node[1](items)
    return jnp.zeros_like(primal)
