"""``default_registry``: the pytree registry as an object with the methods of JAX's
``PyTreeRegistry``, over the module-level registry of ``_registry.py``."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from ._ops import tree_flatten_with_path
from ._registry import (
    flatten_one_level,
    flatten_one_level_with_keys,
    is_tree_node,
    register_dataclass,
    register_pytree_node,
)
from ._treedef import PyTreeDef, tree_flatten


class PyTreeRegistry:
    """The registry ``transpiler.tree_util`` flattens with (there is one)."""

    def flatten(self, tree: Any, leaf_predicate: Callable[[Any], bool] | None = None
                ) -> tuple[list, PyTreeDef]:
        return tree_flatten(tree, leaf_predicate)

    def flatten_with_path(self, tree: Any,
                          leaf_predicate: Callable[[Any], bool] | None = None
                          ) -> tuple[list, PyTreeDef]:
        return tree_flatten_with_path(tree, leaf_predicate)

    def flatten_one_level(self, tree: Any) -> tuple[Iterable[Any], Any] | None:
        """None for a leaf (the module-level function raises there, as JAX's does)."""
        if not is_tree_node(type(tree)):
            return None
        return flatten_one_level(tree)

    def flatten_one_level_with_keys(self, tree: Any
                                    ) -> tuple[Iterable[tuple[Any, Any]], Any] | None:
        if not is_tree_node(type(tree)):
            return None
        return flatten_one_level_with_keys(tree)

    def is_node(self, typ: type) -> bool:
        return is_tree_node(typ)

    def register_node(self, nodetype: type, flatten_func: Callable,
                      unflatten_func: Callable,
                      flatten_with_keys_func: Callable | None = None) -> None:
        register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)

    def register_dataclass_node(self, nodetype: type, data_fields: Sequence[str],
                                meta_fields: Sequence[str]) -> None:
        register_dataclass(nodetype, data_fields, meta_fields)

    def __repr__(self) -> str:
        return "transpiler.tree_util.default_registry"


default_registry = PyTreeRegistry()
