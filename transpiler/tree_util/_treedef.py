"""PyTreeDef, flattening / unflattening and treedef helpers."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from ._registry import (
    _K_DICT,
    _K_LEAF,
    _K_LIST,
    _K_NAMEDTUPLE,
    _K_NONE,
    _K_TUPLE,
    _build,
    _classify,
    _kind_of,
    _kinds_get,
    _node_parts,
    _sorted_keys,
)

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
        from ._ops import flatten_up_to  # cycle: _ops imports this module

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
            try:
                h = hash(self._node)
            except TypeError:  # unhashable aux data (a dict, as JAX's docs use): its shape
                h = hash(_frozen(self._node))
            self._hash = h
        return h

    def __repr__(self):
        return f"PyTreeDef({_node_repr(self._node)})"

    def __reduce__(self):
        return (PyTreeDef, (self._node, self._nl))


def _frozen(value):
    """A hashable stand-in for a node with unhashable parts (equal values, equal results)."""
    if isinstance(value, dict):
        return ("dict", tuple((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_frozen(v) for v in value))
    try:
        hash(value)
        return value
    except TypeError:
        return (type(value).__name__, id(value))


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
        k: int | None = _kind_of(type(tree))
        if k == _K_LEAF:
            return [tree], _LEAF_TREEDEF
        leaves: list[Any] = []
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


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The treedef of a tuple whose children have the structures `treedefs`."""
    treedefs = list(treedefs)
    nl = sum(td.num_leaves for td in treedefs)
    return PyTreeDef((tuple, None, tuple(td._node for td in treedefs)), nl)
