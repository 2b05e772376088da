"""Node kinds, type dispatch, registration, key path entries, node helpers."""

from __future__ import annotations

import collections
import dataclasses
import operator
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, Sequence, TypeVar

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

_BUILTIN_KINDS: dict[type, int] = {
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


def register_dataclass(nodetype: type, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> type:
    """Register a dataclass-like ``nodetype`` whose ``data_fields`` are its children and
    whose ``meta_fields`` are static node data (JAX's signature; usable as a bare
    decorator on a dataclass, whose fields are data unless ``field(metadata={"static":
    True})``). Unflattening calls ``nodetype(**fields)``; the key entries are
    ``GetAttrKey(name)``."""
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError("register_dataclass: data_fields and meta_fields must both be "
                            "specified when either is specified. Got "
                            f"{data_fields=} {meta_fields=}.")
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError("register_dataclass: data_fields and meta_fields are required "
                            f"when nodetype is not a dataclass. Got {nodetype=}.")
        fields = dataclasses.fields(nodetype)
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data = tuple(data_fields)
    meta = tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init}
        init_fields.difference_update(drop_fields)
        if {*meta, *data} != init_fields:
            msg = ("data_fields and meta_fields must include all dataclass fields with "
                   "``init=True`` and only them.")
            if missing := init_fields - {*meta, *data}:
                msg += (f" Missing fields: {missing}. Add them to drop_fields to suppress "
                        "this error.")
            if unexpected := {*meta, *data} - init_fields:
                msg += f" Unexpected fields: {unexpected}."
            raise ValueError(msg)
    if overlap := set(data) & set(meta):
        raise ValueError("data_fields and meta_fields must not overlap. Overlapping "
                         f"fields: {overlap}.")
    keys = tuple(GetAttrKey(name) for name in data)

    def flatten_with_keys(x):
        aux = tuple(getattr(x, name) for name in meta)
        return [(key, getattr(x, name)) for key, name in zip(keys, data)], aux

    def flatten(x):
        return [getattr(x, name) for name in data], tuple(getattr(x, name) for name in meta)

    def unflatten(aux, children):
        return nodetype(**dict(zip(meta, aux)), **dict(zip(data, children)))

    register_pytree_with_keys(nodetype, flatten_with_keys, unflatten, flatten)
    return nodetype


def register_static(cls: type) -> type:
    """Register ``cls`` (hashable) as a pytree node with no children: its instances are
    node data, static under ``jit``. Returns ``cls``, so it is usable as a decorator."""
    register_pytree_with_keys(cls, _static_flatten_with_keys, _static_unflatten,
                              _static_flatten)
    return cls


def _static_flatten_with_keys(obj):
    return (), obj


def _static_flatten(obj):
    return (), obj


def _static_unflatten(obj, children):
    return obj


def is_tree_node(typ: type) -> bool:
    """True for a pytree node type: a builtin container, None's type, a namedtuple type or
    a registered type."""
    return _kind_of(typ) != _K_LEAF


# ---------------------------------------------------------------------------
# Key path entries
# ---------------------------------------------------------------------------

KeyEntry = TypeVar("KeyEntry", bound=Any)
KeyPath = tuple[KeyEntry, ...]



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


def node_children(x) -> "tuple[list, Callable[[list], Any]] | None":
    """The children of a pytree node `x` one level down, and a function that builds a node
    of the same type and metadata from new children; None for a leaf (or None itself).
    The transforms use it to send a cotangent into one attribute of a NamedTuple, a
    dataclass or a registered class."""
    k = _kind_of(type(x))
    if k == _K_LEAF or k == _K_NONE:
        return None
    aux, children = _node_parts(x, k)
    t = type(x)
    return list(children), lambda new: _build(t, aux, list(new))


def flatten_one_level(tree) -> tuple[Iterable[Any], Any]:
    """The children of pytree node `tree` one level down and its node data, as JAX gives
    them; a ValueError for a leaf."""
    k = _kind_of(type(tree))
    if k == _K_LEAF:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    aux, children = _node_parts(tree, k)
    if k == _K_DICT:
        return tuple(children), aux
    if k == _K_NAMEDTUPLE:
        return list(children), type(tree)
    return children, aux


def flatten_one_level_with_keys(tree) -> tuple[Iterable[tuple[Any, Any]], Any]:
    """Like :func:`flatten_one_level`, the children paired with their key entries."""
    k = _kind_of(type(tree))
    if k == _K_LEAF:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    aux, children, keys = _node_parts_with_keys(tree, k)
    if k == _K_NAMEDTUPLE:
        aux = type(tree)
    return list(zip(keys, children)), aux


def sequence_like(x, items) -> Any:
    """A tuple, list or NamedTuple of `x`'s type holding `items`."""
    t = type(x)
    return t._make(items) if hasattr(t, "_fields") else t(items)
