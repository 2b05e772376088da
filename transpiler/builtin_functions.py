"""Python's ``max``, ``min``, ``sum``, ``abs`` and ``map`` as the transforms see them.

A transformed function that calls ``max(x[0], x[1])`` on differentiated or batched values
reaches one of these instead of the builtin (transforms/common/classify.py): each computes what
the builtin computes, written so that `grad`, `jvp` and `vmap` can be generated from its
source. ``max(a, b)`` is ``a`` unless ``b > a`` (the first of equal values, as Python
picks), so its derivative follows the value picked, as JAX's tracing of ``max`` does.
Arrays with more than one element have no truth value: comparing them is a `TypeError`,
as it is in Python.
"""

from __future__ import annotations

import builtins
from typing import Any

from transpiler import numpy as jnp
from transpiler import rewritten
from transpiler.primitives.core import abstractify


def _candidates(name: str, args: tuple) -> Any:
    values = args[0] if len(args) == 1 else args
    if builtins.len(values) == 0:
        raise ValueError(f"{name}() arg is an empty sequence")
    for value in values:
        if abstractify(value).size != 1:
            raise TypeError(f"{name}(): the truth value of an array with more than one "
                            "element is ambiguous", )
    return values


def max(*args: Any) -> Any:
    """``max(a, b, ...)`` or ``max(iterable)``: the first largest."""
    values = _candidates("max", args)
    best = values[0]
    for value in values[1:]:
        best = jnp.where(value > best, value, best)
    return best


def min(*args: Any) -> Any:
    """``min(a, b, ...)`` or ``min(iterable)``: the first smallest."""
    values = _candidates("min", args)
    best = values[0]
    for value in values[1:]:
        best = jnp.where(value < best, value, best)
    return best


def sum(values: Any, start: Any = 0) -> Any:
    """``sum(iterable, start=0)``: ``start + v0 + v1 + ...`` in order."""
    total = start
    for value in values:
        total = total + value
    return total


def map(function: Any, *iterables: Any) -> Any:
    """``map(f, xs, ...)``, evaluated at once into a list (a one-pass iterator either way)."""
    out = []
    if builtins.len(iterables) == 1:  # (a closure's derivative needs its arguments by
        for x in iterables[0]:        # position, not by a star; one loop, whose derivative
            out.append(function(x))   # reverse mode differentiates again)
    else:  # (zip's derivative keeps a tape per row, inside the loop's: reverse over reverse
        # of it is an error, "puts a differentiated value into _tape in place")
        rows = list(zip(*iterables))
        for i in range(builtins.len(rows)):
            out.append(function(*rows[i]))
    return out


abs = jnp.abs

# The builtins these stand in for, in transformed code.
REPLACES = {builtins.max: max, builtins.min: min, builtins.sum: sum, builtins.abs: abs,
            builtins.map: map, **{getattr(builtins, name): listed
                                  for name, listed in rewritten.LISTED.items()}}


def stand_in(fn: Any, numpy: bool = True) -> Any:
    """What the transforms differentiate or batch for a call of `fn`: the builtins above,
    and (with `numpy`: in the user's code, not in the library's own, which calls NumPy on
    static values) NumPy's functions as `transpiler.numpy`'s of the same name
    (``np.sum(x)`` in a transformed function is ``jnp.sum(x)``, as NumPy would dispatch
    it on an array type of its own)."""
    try:
        replaced = REPLACES.get(fn)
    except TypeError:  # unhashable: not a builtin
        return fn
    if replaced is not None:
        return replaced
    module = getattr(fn, "__module__", None) or ""
    if numpy and (module == "numpy" or module.startswith("numpy.")) and callable(fn):
        ours = getattr(jnp, getattr(fn, "__name__", ""), None)
        if ours is not None and callable(ours):
            return ours
    return fn
