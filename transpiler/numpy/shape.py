"""Shape manipulation: reshape, transpose, broadcasting, joining and splitting."""

from __future__ import annotations

import builtins
from typing import Any, Optional, Sequence

import numpy as np

from transpiler.primitives import shape as sp
from transpiler.primitives.core import abstractify, normalize_axis, shape_error


def _shape_arg(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (builtins.int, np.integer)):
        return (builtins.int(shape),)
    return tuple(builtins.int(d) for d in shape)


def reshape(a: Any, newshape: Any = None, order: str = "C", *, shape: Any = None) -> Any:
    """``jnp.reshape``; one dimension may be -1."""
    if order != "C":
        raise NotImplementedError("reshape: only order='C' is supported")
    target = _shape_arg(shape if shape is not None else newshape)
    aval = abstractify(a, 0, "reshape")
    if target.count(-1) > 1:
        raise shape_error(f"reshape: can only specify one unknown dimension, got {list(target)}")
    if -1 in target:
        known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
        if known == 0 or aval.size % known:
            raise shape_error(f"cannot reshape array of shape {list(aval.shape)} "
                              f"(size {aval.size}) into shape {list(target)}")
        target = tuple(aval.size // known if d == -1 else d for d in target)
    return sp.reshape(a, new_sizes=target)


def broadcast_to(array: Any, shape: Any) -> Any:
    return sp.broadcast_to(array, shape=_shape_arg(shape))


def transpose(a: Any, axes: Optional[Sequence[int]] = None) -> Any:
    aval = abstractify(a, 0, "transpose")
    perm = tuple(reversed(range(aval.ndim))) if axes is None else \
        tuple(normalize_axis(builtins.int(x), aval.ndim, "transpose") for x in axes)
    return sp.transpose(a, permutation=perm)
