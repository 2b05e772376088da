"""Key paths, prefix matching (flatten_up_to), mapping and reductions."""

from __future__ import annotations

import functools
from typing import Any, Callable

from ._registry import (
    _K_CUSTOM,
    _K_DDICT,
    _K_DICT,
    _K_LEAF,
    _K_LIST,
    _K_NAMEDTUPLE,
    _K_NONE,
    _K_ODICT,
    _K_TUPLE,
    DictKey,
    GetAttrKey,
    SequenceKey,
    _kind_of,
    _node_parts_with_keys,
    keystr,
)
from ._treedef import PyTreeDef, tree_flatten, tree_leaves, tree_structure

# ---------------------------------------------------------------------------
# Key paths
# ---------------------------------------------------------------------------


def _flatten_with_path(x, path, is_leaf, out):
    if is_leaf is not None and is_leaf(x):
        out.append((path, x))
        return None
    k = _kind_of(type(x))
    if k == _K_LEAF:
        out.append((path, x))
        return None
    aux, children, keys = _node_parts_with_keys(x, k)
    kids = tuple(
        _flatten_with_path(c, path + (key,), is_leaf, out)
        for key, c in zip(keys, children)
    )
    return (type(x), aux, kids)


def tree_flatten_with_path(tree, is_leaf: Callable[[Any], bool] | None = None):
    """Like :func:`tree_flatten` but leaves are ``(key_path, leaf)`` pairs."""
    out: list[Any] = []
    node = _flatten_with_path(tree, (), is_leaf, out)
    return out, PyTreeDef(node, len(out))


def tree_leaves_with_path(tree, is_leaf: Callable[[Any], bool] | None = None):
    return tree_flatten_with_path(tree, is_leaf)[0]


# ---------------------------------------------------------------------------
# Prefix matching
# ---------------------------------------------------------------------------


def _where(path) -> str:
    return f"key path {keystr(path)}" if path else "the root"


def _type_name(t) -> str:
    qualname: str | None = getattr(t, "__qualname__", None)
    if qualname:
        return qualname
    return getattr(t, "__name__", repr(t))


def _short_repr(x, limit=80) -> str:
    try:
        r = repr(x)
    except Exception:  # pragma: no cover
        r = f"<{type(x).__name__} object>"
    return r if len(r) <= limit else r[: limit - 3] + "..."


def _aux_equal(a, b) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


def _up_to(node, x, path, out):
    if node is None:
        out.append(x)
        return
    t, aux, kids = node
    if type(x) is not t:
        raise ValueError(
            f"pytree structure mismatch at {_where(path)}: expected "
            f"{_type_name(t)} node but got {_type_name(type(x))} "
            f"{_short_repr(x)}"
        )
    k = _kind_of(t)
    if k == _K_TUPLE or k == _K_LIST or k == _K_NAMEDTUPLE:
        if len(x) != len(kids):
            raise ValueError(
                f"pytree structure mismatch at {_where(path)}: {_type_name(t)} "
                f"arity mismatch: expected length {len(kids)}, got {len(x)} "
                f"({_short_repr(x)})"
            )
        children = x
        keys = (
            [GetAttrKey(f) for f in t._fields]
            if k == _K_NAMEDTUPLE
            else [SequenceKey(i) for i in range(len(kids))]
        )
    elif k == _K_NONE:
        return
    elif k == _K_DICT or k == _K_ODICT or k == _K_DDICT:
        keys_expected = aux[1] if k == _K_DDICT else aux
        if k == _K_ODICT:
            ok = tuple(x) == keys_expected
        else:
            ok = len(x) == len(keys_expected) and all(
                key in x for key in keys_expected
            )
        if not ok:
            raise ValueError(
                f"pytree structure mismatch at {_where(path)}: {_type_name(t)} "
                f"key mismatch: expected keys {list(keys_expected)!r}, got "
                f"{list(x)!r}"
            )
        if k == _K_DDICT and not _aux_equal(x.default_factory, aux[0]):
            raise ValueError(
                f"pytree structure mismatch at {_where(path)}: defaultdict "
                f"default_factory mismatch: expected {aux[0]!r}, got "
                f"{x.default_factory!r}"
            )
        children = [x[key] for key in keys_expected]
        keys = [DictKey(key) for key in keys_expected]
    elif k == _K_CUSTOM:
        other_aux, children, keys = _node_parts_with_keys(x, k)
        if not _aux_equal(other_aux, aux):
            raise ValueError(
                f"pytree structure mismatch at {_where(path)}: {_type_name(t)} "
                f"node data mismatch: expected {aux!r}, got {other_aux!r}"
            )
        if len(children) != len(kids):
            raise ValueError(
                f"pytree structure mismatch at {_where(path)}: {_type_name(t)} "
                f"expected {len(kids)} children, got {len(children)}"
            )
    else:  # pragma: no cover
        raise TypeError(f"{t} is no longer a registered pytree node type")
    for key, c, sub in zip(keys, children, kids):
        if sub is None:
            out.append(c)
        else:
            _up_to(sub, c, path + (key,), out)


def flatten_up_to(treedef: PyTreeDef, tree) -> list:
    """Subtrees of ``tree`` at the positions of ``treedef``'s leaves.

    ``treedef`` must be a prefix of ``tree``'s structure: every node of
    ``treedef`` must match the corresponding node of ``tree`` (same type and
    node data), while ``tree`` may be arbitrarily deeper below the positions
    of ``treedef``'s leaves. Raises ``ValueError`` on mismatch.
    """
    node = treedef._node
    if node is None:
        return [tree]
    # Fast path: flat tuple/list prefix.
    t, aux, kids = node
    if aux is None and type(tree) is t and (t is tuple or t is list):
        if len(tree) == len(kids) and all(c is None for c in kids):
            return list(tree)
    out: list[Any] = []
    _up_to(node, tree, (), out)
    return out


# ---------------------------------------------------------------------------
# Mapping and reductions
# ---------------------------------------------------------------------------


def _rest_leaves(fn_name, treedef, rest):
    all_leaves_ = []
    for i, r in enumerate(rest, 1):
        try:
            all_leaves_.append(flatten_up_to(treedef, r))
        except ValueError as e:
            try:
                other = repr(tree_structure(r))
            except Exception:  # pragma: no cover
                other = "<unflattenable>"
            raise ValueError(
                f"{fn_name}: tree {i} has structure {other} but tree 0 has "
                f"{treedef!r}; {e}"
            ) from None
    return all_leaves_


def tree_map(f: Callable[..., Any], tree, *rest, is_leaf=None):
    """Map ``f`` over the leaves of ``tree`` (and corresponding subtrees of
    ``rest``, whose structure must have ``tree``'s structure as a prefix)."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    others = _rest_leaves("tree_map", treedef, rest)
    return treedef.unflatten([f(*xs) for xs in zip(leaves, *others)])


def tree_map_with_path(f: Callable[..., Any], tree, *rest, is_leaf=None):
    """Like :func:`tree_map` but ``f`` is called as ``f(key_path, x, *ys)``."""
    path_leaves, treedef = tree_flatten_with_path(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(p, x) for p, x in path_leaves])
    others = _rest_leaves("tree_map_with_path", treedef, rest)
    return treedef.unflatten(
        [f(p, x, *ys) for (p, x), *ys in zip(path_leaves, *others)]
    )


_NO_INIT = object()


def tree_reduce(function: Callable[[Any, Any], Any], tree, initializer=_NO_INIT,
                is_leaf=None):
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INIT:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree, is_leaf=None) -> bool:
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose):
    """Transform a tree of structure ``outer(inner)`` into ``inner(outer)``."""
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    inner_size = inner_treedef.num_leaves
    outer_size = outer_treedef.num_leaves
    expected = outer_treedef.compose(inner_treedef)
    if treedef.num_leaves != inner_size * outer_size or treedef != expected:
        raise TypeError(f"Mismatch\n{treedef}\n != \n{expected}")
    lol = [flat[i * inner_size:(i + 1) * inner_size] for i in range(outer_size)]
    subtrees = [outer_treedef.unflatten(col) for col in zip(*lol)]
    if not lol:
        subtrees = [outer_treedef.unflatten([]) for _ in range(inner_size)]
    return inner_treedef.unflatten(subtrees)


def _parallel_reduce(sequence: list, operation: Callable[[Any, Any], Any], identity: Any):
    if not sequence:
        if identity is _NO_INIT:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    if len(sequence) == 1:
        return sequence[0]
    half = len(sequence) // 2
    return operation(_parallel_reduce(sequence[:half], operation, identity),
                     _parallel_reduce(sequence[half:], operation, identity))


def tree_reduce_associative(operation: Callable[[Any, Any], Any], tree, *,
                            identity=_NO_INIT, is_leaf=None):
    """Reduce the leaves of `tree` with the associative `operation`, as a balanced tree
    of calls (JAX's order); `identity` is the result for a tree with no leaves."""
    return _parallel_reduce(tree_leaves(tree, is_leaf), operation, identity)


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """`full_tree`'s structure with each leaf of `prefix_tree` (a prefix of it) repeated
    over the corresponding subtree."""
    leaves: list[Any] = []

    def add_leaves(x, subtree):
        leaves.extend([x] * tree_structure(subtree).num_leaves)

    try:
        tree_map(add_leaves, prefix_tree, full_tree, is_leaf=is_leaf)
    except ValueError as e:
        raise ValueError(f"broadcast_prefix prefix_tree: {e}") from None
    return tree_structure(full_tree).unflatten(leaves)
