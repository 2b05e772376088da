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

import types

from ._default_registry import PyTreeRegistry, default_registry
from ._ops import (
    flatten_up_to,
    tree_all,
    tree_broadcast,
    tree_flatten_with_path,
    tree_leaves_with_path,
    tree_map,
    tree_map_with_path,
    tree_reduce,
    tree_reduce_associative,
    tree_transpose,
)
from ._partial import Partial
from ._registry import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyEntry,
    KeyPath,
    SequenceKey,
    flatten_one_level,
    flatten_one_level_with_keys,
    is_tree_node,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_pytree_with_keys_class,
    register_static,
)
from ._treedef import (
    PyTreeDef,
    all_leaves,
    tree_flatten,
    tree_leaves,
    tree_structure,
    tree_unflatten,
    treedef_children,
    treedef_is_leaf,
    treedef_tuple,
)

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
    "Partial",
    "register_dataclass",
    "register_static",
    "tree_broadcast",
    "tree_reduce_associative",
    "flatten_one_level",
    "flatten_one_level_with_keys",
    "is_tree_node",
    "treedef_tuple",
    "default_registry",
    "KeyEntry",
    "KeyPath",
]

# Report the public API as living in ``transpiler.tree_util`` (as before the
# split into submodules), e.g. for pickling, reprs and help().
for _name in __all__:
    if isinstance(globals()[_name], (type, types.FunctionType)):
        globals()[_name].__module__ = __name__
PyTreeRegistry.__module__ = __name__
del _name
