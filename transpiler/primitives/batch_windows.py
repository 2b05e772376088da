"""Batching rules of the windowed reductions (primitives/windows.py; see batching.py for
the rule contract).

The batch axis becomes one more window axis of size 1: window dimension, stride and
dilations 1, no padding, so each window stays inside one batch member.

* ``reduce_window_<kind>``: the batch axis stays where it is.
* ``select_and_gather_add``/``select_and_scatter_add``: both operands get the batch axis
  first (an unbatched one is broadcast along it), and so does the result.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from transpiler.primitives import windows
from transpiler.primitives.batching import batch_size, materialize
from transpiler.primitives.core import Primitive, abstractify


def with_batch_axis(params: dict[str, Any], dim: int) -> dict[str, Any]:
    """The window params of an operand with a batch axis inserted at `dim`."""
    inserted = {"window_dimensions": 1, "window_strides": 1, "padding": (0, 0),
                "base_dilation": 1, "window_dilation": 1}
    out = dict(params)
    for name, value in inserted.items():
        values = list(params[name])
        out[name] = tuple(values[:dim] + [value] + values[dim:])
    return out


def _reduce_window_rule(prim: Primitive) -> Any:
    def rule(args: Sequence[Any], dims: Sequence[Optional[int]],
             **params: Any) -> tuple[Any, Optional[int]]:
        (x,), (d,) = args, dims
        if d is None:
            return prim.bind(x, **params), None
        d = d % abstractify(x).ndim
        return prim.bind(x, **with_batch_axis(params, d)), d
    return rule


def _select_rule(prim: Primitive) -> Any:
    def rule(args: Sequence[Any], dims: Sequence[Optional[int]],
             **params: Any) -> tuple[Any, Optional[int]]:
        if all(d is None for d in dims):
            return prim.bind(*args, **params), None
        size = batch_size(args, dims)
        moved = [materialize(a, None if d is None else d % abstractify(a).ndim, size)
                 for a, d in zip(args, dims)]
        return prim.bind(*moved, **with_batch_axis(params, 0)), 0
    return rule


for _prim in windows.REDUCE_WINDOW.values():
    _prim.def_rules(batch=_reduce_window_rule(_prim))
for _prim in (windows.select_and_gather_add, windows.select_and_scatter_add):
    _prim.def_rules(batch=_select_rule(_prim))
