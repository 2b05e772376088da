"""The batching rule of ``conv_general_dilated`` (JAX's; see batching.py for the contract).

A convolution has one batch dimension and one feature dimension per operand, so a vmapped
axis folds into them and unfolds from the result:

* lhs batched: the vmapped axis joins the lhs batch dimension (major), the result's
  batch dimension splits back. With batch groups the lhs batch is ``(groups, n)``, so the
  vmapped axis goes between the two to keep each group's members together.
* rhs batched: the vmapped axis joins the kernel's output features and splits out of the
  result's features; with groups it goes inside each group's block of output features.
* both: the vmapped axis becomes extra feature groups (or, with batch groups, extra batch
  groups) -- member ``b`` of the lhs meets only member ``b`` of the kernel.

Empty batches are answered with zeros (the folds would build convolutions of size 0).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from transpiler.primitives import conversions as conv
from transpiler.primitives import shape as sp
from transpiler.primitives.convolution import (conv_general_dilated, reshape_axis_into,
                                               reshape_axis_out_of)
from transpiler.primitives.core import abstractify


def _conv_rule(args: Sequence[Any], dims: Sequence[Optional[int]], *,
               dimension_numbers: Any, feature_group_count: int, batch_group_count: int,
               **params: Any) -> tuple[Any, Optional[int]]:
    (lhs, rhs), (lhs_dim, rhs_dim) = args, dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    groups = dict(dimension_numbers=dimension_numbers, feature_group_count=feature_group_count,
                  batch_group_count=batch_group_count)
    if lhs_dim is None and rhs_dim is None:
        return conv_general_dilated(lhs, rhs, **groups, **params), None
    lhs_aval, rhs_aval = abstractify(lhs), abstractify(rhs)
    if lhs_dim is not None:
        lhs_dim %= lhs_aval.ndim
    if rhs_dim is not None:
        rhs_dim %= rhs_aval.ndim
    if lhs_dim is not None:
        size = lhs_aval.shape[lhs_dim]
    else:
        assert rhs_dim is not None
        size = rhs_aval.shape[rhs_dim]
    if size == 0:
        return _empty(lhs_aval, rhs_aval, lhs_dim, rhs_dim, groups, params), 0

    if lhs_dim is not None and rhs_dim is not None:
        if batch_group_count > 1:
            new_lhs = reshape_axis_into(lhs_dim, lhs_spec[0], lhs)
            groups["batch_group_count"] = batch_group_count * size
        else:
            new_lhs = reshape_axis_into(lhs_dim, lhs_spec[1], lhs)
            groups["feature_group_count"] = feature_group_count * size
        new_rhs = reshape_axis_into(rhs_dim, rhs_spec[0], rhs)
        out = conv_general_dilated(new_lhs, new_rhs, **groups, **params)
        return reshape_axis_out_of(out_spec[1], size, out), out_spec[1]

    if lhs_dim is not None:
        if batch_group_count == 1:
            new_lhs = reshape_axis_into(lhs_dim, lhs_spec[0], lhs)
        else:  # (groups, n) batch: the vmapped axis goes inside each group
            new_lhs = reshape_axis_out_of(lhs_spec[0] + int(lhs_dim <= lhs_spec[0]),
                                          batch_group_count, lhs)
            new_lhs = reshape_axis_into(lhs_dim + int(lhs_spec[0] < lhs_dim),
                                        lhs_spec[0] + 1, new_lhs)
            new_lhs = reshape_axis_into(lhs_spec[0], lhs_spec[0], new_lhs)
        out = conv_general_dilated(new_lhs, rhs, **groups, **params)
        return reshape_axis_out_of(out_spec[0], size, out), out_spec[0]

    assert rhs_dim is not None
    count = max(feature_group_count, batch_group_count)
    if count == 1:
        new_rhs = reshape_axis_into(rhs_dim, rhs_spec[0], rhs)
        out = conv_general_dilated(lhs, new_rhs, **groups, **params)
        return reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    # groups stay outermost in the output features: the vmapped axis goes inside them
    new_rhs = reshape_axis_out_of(rhs_spec[0] + int(rhs_dim <= rhs_spec[0]), count, rhs)
    new_rhs = reshape_axis_into(rhs_dim + int(rhs_spec[0] < rhs_dim), rhs_spec[0] + 1, new_rhs)
    new_rhs = reshape_axis_into(rhs_spec[0], rhs_spec[0], new_rhs)
    out = conv_general_dilated(lhs, new_rhs, **groups, **params)
    out = reshape_axis_out_of(out_spec[1], count, out)
    out = reshape_axis_out_of(out_spec[1] + 1, size, out)
    out = reshape_axis_into(out_spec[1], out_spec[1] + 1, out)
    return out, out_spec[1]


def _empty(lhs_aval: Any, rhs_aval: Any, lhs_dim: Optional[int], rhs_dim: Optional[int],
           groups: dict, params: dict) -> Any:
    """Zeros of the batched result's shape, batch axis first, for a batch of size 0."""
    unbatched = [aval.update(shape=tuple(s for i, s in enumerate(aval.shape) if i != d))
                 if d is not None else aval
                 for aval, d in ((lhs_aval, lhs_dim), (rhs_aval, rhs_dim))]
    out = conv_general_dilated.abstract_eval(*unbatched, **groups, **params)
    zero = conv.convert_element_type(np.zeros((), out.dtype), dtype=out.dtype)
    return sp.broadcast_to(zero, shape=(0, *out.shape))


conv_general_dilated.def_rules(batch=_conv_rule)
