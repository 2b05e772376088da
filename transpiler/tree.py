"""``jax.tree``: the pytree functions of `transpiler.tree_util` under JAX's short names
(``jax.tree.map(f, params)``, ``jax.tree.leaves(params)`` ...)."""

import dataclasses as _dataclasses
from typing import Any as _Any

from transpiler.tree_util import tree_all as all  # noqa: A001
from transpiler.tree_util import tree_broadcast as broadcast
from transpiler.tree_util import tree_flatten as flatten
from transpiler.tree_util import tree_flatten_with_path as flatten_with_path
from transpiler.tree_util import tree_leaves as leaves
from transpiler.tree_util import tree_leaves_with_path as leaves_with_path
from transpiler.tree_util import tree_map as map  # noqa: A001
from transpiler.tree_util import tree_map_with_path as map_with_path
from transpiler.tree_util import tree_reduce as reduce
from transpiler.tree_util import tree_reduce_associative as reduce_associative
from transpiler.tree_util import tree_structure as structure
from transpiler.tree_util import tree_transpose as transpose
from transpiler.tree_util import tree_unflatten as unflatten

__all__ = ["all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path",
           "map", "map_with_path", "reduce", "reduce_associative", "static", "structure",
           "transpose", "unflatten"]


def static(**kwargs: _Any) -> _Any:
    """``dataclasses.field(**kwargs)`` marked ``static`` in its metadata, a static (node
    data) field for :func:`transpiler.tree_util.register_dataclass`."""
    metadata = {"static": True, **(kwargs.pop("metadata", {}) or {})}
    return _dataclasses.field(metadata=metadata, **kwargs)
