"""Pytree utilities: a reimplementation of the core of ``jax.tree_util``.

Semantics follow JAX:

* Container nodes: ``tuple``, ``list``, ``dict`` (keys sorted; unflatten
  rebuilds the dict in sorted-key order), ``None`` (a node with no children,
  *not* a leaf), namedtuples (type preserved), ``collections.OrderedDict``
  (insertion order kept), ``collections.defaultdict`` (keys sorted,
  ``default_factory`` kept), and any type registered with
  :func:`register_pytree_node` / :func:`register_pytree_node_class`.
* Node types are matched on the *exact* type (subclasses of ``dict`` or
  ``list`` are leaves unless registered), except namedtuples, which are
  recognised as any ``tuple`` subclass with a ``_fields`` attribute.
* Everything else (numpy arrays, scalars, strings, arbitrary objects) is a
  leaf.

Implementation notes (performance): a treedef is an immutable nested tuple
``(node_type, aux_data, children)`` where a leaf is represented by ``None``.
Node kind dispatch is a single ``dict`` lookup on ``type(x)`` (cached per
type), leaves are appended inline without a recursive call, and common flat
containers (tuple/list/dict of leaves) take a non-recursive fast path.
"""

from __future__ import annotations

import collections
import functools
import operator
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable

__all__ = [
    "PyTreeDef",
    "tree_flatten",
    "tree_unflatten",
    "tree_leaves",
    "tree_structure",
    "tree_map",
    "tree_flatten_with_path",
    "tree_leaves_with_path",
    "tree_map_with_path",
    "tree_reduce",
    "tree_all",
    "tree_transpose",
    "treedef_is_leaf",
    "treedef_children",
    "all_leaves",
    "flatten_up_to",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_pytree_with_keys_class",
    "DictKey",
    "SequenceKey",
    "GetAttrKey",
    "FlattenedIndexKey",
    "keystr",
]

# ---------------------------------------------------------------------------
# Node kinds and type dispatch
# ---------------------------------------------------------------------------

_K_LEAF = 0
_K_TUPLE = 1
_K_LIST = 2
_K_DICT = 3
_K_NONE = 4
_K_NAMEDTUPLE = 5
_K_ODICT = 6
_K_DDICT = 7
_K_CUSTOM = 8

_NoneType = type(None)
_OrderedDict = collections.OrderedDict
_defaultdict = collections.defaultdict

_BUILTIN_KINDS = {
    tuple: _K_TUPLE,
    list: _K_LIST,
    dict: _K_DICT,
    _NoneType: _K_NONE,
    _OrderedDict: _K_ODICT,
    _defaultdict: _K_DDICT,
}

# type -> kind; a cache filled lazily for leaf types and namedtuple types.
_kinds: dict[type, int] = dict(_BUILTIN_KINDS)
for _t in (int, float, complex, bool, str, bytes):
    _kinds[_t] = _K_LEAF
del _t
_kinds_get = _kinds.get


class _Registration:
    __slots__ = ("nodetype", "flatten", "unflatten", "flatten_with_keys")

    def __init__(self, nodetype, flatten, unflatten, flatten_with_keys):
        self.nodetype = nodetype
        self.flatten = flatten
        self.unflatten = unflatten
        self.flatten_with_keys = flatten_with_keys


_registry: dict[type, _Registration] = {}


def _classify(t: type) -> int:
    """Compute (and cache) the node kind of type ``t``."""
    if t in _registry:
        k = _K_CUSTOM
    elif t in _BUILTIN_KINDS:
        k = _BUILTIN_KINDS[t]
    elif issubclass(t, tuple) and hasattr(t, "_fields"):
        k = _K_NAMEDTUPLE
    else:
        k = _K_LEAF
    _kinds[t] = k
    return k


def _kind_of(t: type) -> int:
    k = _kinds_get(t)
    if k is None:
        k = _classify(t)
    return k


# ---------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------


def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], Any],
    flatten_with_keys_func: Callable | None = None,
) -> None:
    """Register ``nodetype`` as a pytree node.

    ``flatten_func(x) -> (children, aux_data)``; ``unflatten_func(aux_data,
    children) -> x`` (children are passed as a tuple). ``aux_data`` must be
    hashable and comparable with ``==`` for treedef hashing/equality.
    """
    if not isinstance(nodetype, type):
        raise TypeError(f"register_pytree_node expects a type, got {nodetype!r}")
    if nodetype in _registry or nodetype in _BUILTIN_KINDS:
        raise ValueError(
            f"Duplicate custom PyTreeDef type registration for {nodetype}."
        )
    _registry[nodetype] = _Registration(
        nodetype, flatten_func, unflatten_func, flatten_with_keys_func
    )
    _kinds[nodetype] = _K_CUSTOM


def register_pytree_with_keys(
    nodetype: type,
    flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], Any],
    flatten_func: Callable | None = None,
) -> None:
    """Register a node whose flatten function also reports key-path entries.

    ``flatten_with_keys(x) -> ([(key, child), ...], aux_data)``.
    """
    if flatten_func is None:

        def flatten_func(x):
            key_children, aux = flatten_with_keys(x)
            return [c for _, c in key_children], aux

    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls):
    """Class decorator: register ``cls`` using its ``tree_flatten`` method and
    ``tree_unflatten`` classmethod."""
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls):
    """Class decorator using ``tree_flatten_with_keys`` / ``tree_unflatten``
    (and ``tree_flatten`` if the class defines it)."""
    flatten_func = (
        operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    )
    register_pytree_with_keys(
        cls,
        operator.methodcaller("tree_flatten_with_keys"),
        cls.tree_unflatten,
        flatten_func,
    )
    return cls


# ---------------------------------------------------------------------------
# Key path entries
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DictKey:
    key: Hashable

    def __str__(self):
        return f"[{self.key!r}]"


@dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"


@dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self):
        return f".{self.name}"


@dataclass(frozen=True)
class FlattenedIndexKey:
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


def _simple_key_str(k) -> str:
    if isinstance(k, DictKey):
        return str(k.key)
    if isinstance(k, SequenceKey):
        return str(k.idx)
    if isinstance(k, GetAttrKey):
        return k.name
    if isinstance(k, FlattenedIndexKey):
        return str(k.key)
    return str(k)


def keystr(keys, *, simple: bool = False, separator: str = "") -> str:
    """Render a key path, e.g. ``"['a'][1].y"``."""
    if simple:
        return separator.join(_simple_key_str(k) for k in keys)
    return separator.join(str(k) for k in keys)


# ---------------------------------------------------------------------------
# Node helpers
# ---------------------------------------------------------------------------


def _sorted_keys(d) -> tuple:
    try:
        return tuple(sorted(d))
    except TypeError as e:
        raise ValueError(
            "Comparator raised exception while sorting pytree dictionary keys "
            f"{list(d)!r}: {e}"
        ) from None


def _node_parts(x, k):
    """Return ``(aux_data, children)`` for a non-leaf ``x`` of kind ``k``."""
    if k == _K_TUPLE or k == _K_LIST or k == _K_NAMEDTUPLE:
        return None, x
    if k == _K_DICT:
        keys = _sorted_keys(x)
        return keys, [x[key] for key in keys]
    if k == _K_NONE:
        return None, ()
    if k == _K_CUSTOM:
        children, aux = _registry[type(x)].flatten(x)
        return aux, children
    if k == _K_ODICT:
        return tuple(x), list(x.values())
    if k == _K_DDICT:
        keys = _sorted_keys(x)
        return (x.default_factory, keys), [x[key] for key in keys]
    raise AssertionError(k)


def _node_parts_with_keys(x, k):
    """Return ``(aux_data, children, key_entries)``."""
    if k == _K_TUPLE or k == _K_LIST:
        return None, x, [SequenceKey(i) for i in range(len(x))]
    if k == _K_NAMEDTUPLE:
        return None, x, [GetAttrKey(f) for f in type(x)._fields]
    if k == _K_DICT or k == _K_DDICT:
        aux, children = _node_parts(x, k)
        keys = aux if k == _K_DICT else aux[1]
        return aux, children, [DictKey(key) for key in keys]
    if k == _K_ODICT:
        keys = tuple(x)
        return keys, list(x.values()), [DictKey(key) for key in keys]
    if k == _K_NONE:
        return None, (), []
    if k == _K_CUSTOM:
        reg = _registry[type(x)]
        if reg.flatten_with_keys is not None:
            key_children, aux = reg.flatten_with_keys(x)
            key_children = list(key_children)
            return aux, [c for _, c in key_children], [kk for kk, _ in key_children]
        children, aux = reg.flatten(x)
        children = list(children)
        return aux, children, [FlattenedIndexKey(i) for i in range(len(children))]
    raise AssertionError(k)


def _build(t, aux, children):
    """Rebuild a node of type ``t`` from ``aux`` and a list of children."""
    k = _kind_of(t)
    if k == _K_TUPLE:
        return tuple(children)
    if k == _K_LIST:
        return list(children)
    if k == _K_DICT:
        return dict(zip(aux, children))
    if k == _K_NONE:
        return None
    if k == _K_NAMEDTUPLE:
        return t(*children)
    if k == _K_CUSTOM:
        return _registry[t].unflatten(aux, tuple(children))
    if k == _K_ODICT:
        return _OrderedDict(zip(aux, children))
    if k == _K_DDICT:
        return _defaultdict(aux[0], zip(aux[1], children))
    raise TypeError(f"{t} is no longer a registered pytree node type")


# ---------------------------------------------------------------------------
# PyTreeDef
# ---------------------------------------------------------------------------
#
# A node is either ``None`` (a leaf) or a tuple ``(type, aux_data, children)``
# where ``children`` is a tuple of nodes.  Nested tuples give structural
# equality and hashing for free, implemented in C.


def _count_leaves(node) -> int:
    if node is None:
        return 1
    n = 0
    for c in node[2]:
        n += 1 if c is None else _count_leaves(c)
    return n


def _count_nodes(node) -> int:
    if node is None:
        return 1
    n = 1
    for c in node[2]:
        n += 1 if c is None else _count_nodes(c)
    return n


def _node_repr(node) -> str:
    if node is None:
        return "*"
    t, aux, kids = node
    k = _kind_of(t)
    parts = [_node_repr(c) for c in kids]
    if k == _K_TUPLE:
        if len(parts) == 1:
            return f"({parts[0]},)"
        return "(" + ", ".join(parts) + ")"
    if k == _K_LIST:
        return "[" + ", ".join(parts) + "]"
    if k == _K_DICT:
        return "{" + ", ".join(f"{key!r}: {p}" for key, p in zip(aux, parts)) + "}"
    if k == _K_NONE:
        return "None"
    if k == _K_NAMEDTUPLE:
        name = f"namedtuple[{t.__name__}]"
    else:
        name = f"{t.__name__}[{aux}]"
    return f"CustomNode({name}, [{', '.join(parts)}])"


def _unflatten_node(node, it):
    t, aux, kids = node
    children = [next(it) if c is None else _unflatten_node(c, it) for c in kids]
    return _build(t, aux, children)


class PyTreeDef:
    """The structure of a pytree (immutable, hashable)."""

    __slots__ = ("_node", "_nl", "_hash", "_flat")

    def __init__(self, node, num_leaves: int = -1):
        self._node = node
        self._nl = num_leaves
        self._hash = None
        self._flat = None  # lazily: True if the root's children are all leaves

    @property
    def num_leaves(self) -> int:
        nl = self._nl
        if nl < 0:
            nl = self._nl = _count_leaves(self._node)
        return nl

    @property
    def num_nodes(self) -> int:
        return _count_nodes(self._node)

    def children(self) -> list["PyTreeDef"]:
        node = self._node
        if node is None:
            return []
        return [PyTreeDef(c) for c in node[2]]

    def node_data(self):
        """``(node_type, aux_data)`` of the root, or ``None`` for a leaf."""
        node = self._node
        if node is None:
            return None
        return node[0], node[1]

    def is_leaf(self) -> bool:
        return self._node is None

    def unflatten(self, leaves):
        if type(leaves) is not list and type(leaves) is not tuple:
            leaves = list(leaves)
        n = self.num_leaves
        if len(leaves) != n:
            which = "few" if len(leaves) < n else "many"
            raise ValueError(
                f"Too {which} leaves for PyTreeDef; expected {n}, got {len(leaves)}"
                f" (treedef: {self!r})"
            )
        node = self._node
        if node is None:
            return leaves[0]
        flat = self._flat
        if flat is None:
            flat = self._flat = all(c is None for c in node[2])
        if flat:
            t = node[0]
            if t is tuple:
                return tuple(leaves)
            if t is list:
                return list(leaves)
            if t is dict:
                return dict(zip(node[1], leaves))
        return _unflatten_node(node, iter(leaves))

    def flatten_up_to(self, tree) -> list:
        return flatten_up_to(self, tree)

    def compose(self, inner: "PyTreeDef") -> "PyTreeDef":
        """Treedef obtained by replacing every leaf of ``self`` with ``inner``."""
        inner_node = inner._node

        def sub(node):
            if node is None:
                return inner_node
            t, aux, kids = node
            return (t, aux, tuple(sub(c) for c in kids))

        nl = -1
        if self._nl >= 0 and inner._nl >= 0:
            nl = self._nl * inner._nl
        return PyTreeDef(sub(self._node), nl)

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        return self._node == other._node

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        h = self._hash
        if h is None:
            h = self._hash = hash(self._node)
        return h

    def __repr__(self):
        return f"PyTreeDef({_node_repr(self._node)})"

    def __reduce__(self):
        return (PyTreeDef, (self._node, self._nl))


_LEAF_TREEDEF = PyTreeDef(None, 1)
_seq_treedef_cache: dict[tuple[type, int], PyTreeDef] = {}
# sorted-keys tuple -> treedef of a flat dict of leaves (bounded in size).
_dict_treedef_cache: dict[tuple, PyTreeDef] = {}


def _flat_seq_treedef(t, n) -> PyTreeDef:
    key = (t, n)
    td = _seq_treedef_cache.get(key)
    if td is None:
        td = PyTreeDef((t, None, (None,) * n), n)
        if n <= 256:
            _seq_treedef_cache[key] = td
    return td


# ---------------------------------------------------------------------------
# Flattening
# ---------------------------------------------------------------------------


def _flatten_fast(x, k, append):
    """Flatten non-leaf ``x`` of kind ``k``; leaves go to ``append``."""
    aux, children = _node_parts(x, k)
    kids = []
    kids_append = kids.append
    kinds_get = _kinds_get
    for c in children:
        ck = kinds_get(type(c))
        if ck is None:
            ck = _classify(type(c))
        if ck == 0:  # _K_LEAF
            append(c)
            kids_append(None)
        else:
            kids_append(_flatten_fast(c, ck, append))
    return (type(x), aux, tuple(kids))


def _flatten_is_leaf(x, k, is_leaf, append):
    aux, children = _node_parts(x, k)
    kids = []
    for c in children:
        if is_leaf(c):
            append(c)
            kids.append(None)
            continue
        ck = _kind_of(type(c))
        if ck == _K_LEAF:
            append(c)
            kids.append(None)
        else:
            kids.append(_flatten_is_leaf(c, ck, is_leaf, append))
    return (type(x), aux, tuple(kids))


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None):
    """Flatten ``tree`` into ``(leaves, treedef)``."""
    if is_leaf is not None:
        if is_leaf(tree):
            return [tree], _LEAF_TREEDEF
        k = _kind_of(type(tree))
        if k == _K_LEAF:
            return [tree], _LEAF_TREEDEF
        leaves = []
        node = _flatten_is_leaf(tree, k, is_leaf, leaves.append)
        return leaves, PyTreeDef(node, len(leaves))

    t = type(tree)
    kinds_get = _kinds_get
    k = kinds_get(t)
    if k is None:
        k = _classify(t)
    if k == 0:  # leaf
        return [tree], _LEAF_TREEDEF
    if k == 1 or k == 2:  # tuple / list: fast path when all children are leaves
        for c in tree:
            if kinds_get(type(c)) != 0:
                break
        else:
            return list(tree), _flat_seq_treedef(t, len(tree))
    elif k == 3:  # dict
        keys = _sorted_keys(tree)
        leaves = [tree[key] for key in keys]
        for c in leaves:
            if kinds_get(type(c)) != 0:
                break
        else:
            # Cache treedefs of flat dicts with plain-str keys only, so that
            # equal-but-distinct keys (1 vs True vs 1.0) never alias.
            for key in keys:
                if type(key) is not str:
                    n = len(leaves)
                    return leaves, PyTreeDef((dict, keys, (None,) * n), n)
            td = _dict_treedef_cache.get(keys)
            if td is None:
                n = len(leaves)
                td = PyTreeDef((dict, keys, (None,) * n), n)
                if len(_dict_treedef_cache) < 4096:
                    _dict_treedef_cache[keys] = td
            return leaves, td
    leaves = []
    node = _flatten_fast(tree, k, leaves.append)
    return leaves, PyTreeDef(node, len(leaves))


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]):
    """Rebuild a pytree with structure ``treedef`` from ``leaves``."""
    return treedef.unflatten(leaves)


def tree_leaves(tree, is_leaf: Callable[[Any], bool] | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef._node is None


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return treedef.children()


def all_leaves(iterable, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if every element of ``iterable`` is a leaf."""
    if is_leaf is None:
        return all(_kind_of(type(x)) == _K_LEAF for x in iterable)
    return all(is_leaf(x) or _kind_of(type(x)) == _K_LEAF for x in iterable)


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
    out = []
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
    return getattr(t, "__qualname__", None) or getattr(t, "__name__", repr(t))


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
    out = []
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
