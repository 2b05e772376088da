"""Trace-time constant folding: a primitive whose operands are all known while `jit` traces
is computed there, by its eager NumPy rule, and staged as a constant.

Why: IREE 3.13 miscompiles a reduction whose input is an elementwise op of a broadcast
constant. Its dispatch formation (``iree-dispatch-creation-elementwise-op-fusion``) fuses
``negate(broadcast(1.0))`` into the reduction as a body that adds a constant and ignores
its input (``addf %out, %cst``), and the CPU vectorizer (``iree-codegen-generic-
vectorization``) then emits one addition per vector tile instead of one per element:
``jnp.sum(-jnp.ones(8))`` gave -1.0, ``jnp.prod(-2 * jnp.ones(8))`` gave -2.0, and every
``jit(grad)`` whose cotangent is a constant that gets unbroadcast (a scalar subtracted from
a vector) was wrong. No compiler flag avoids it (const-eval off and every opt level give
the same result). Folding here means IREE never sees a computation on constants alone, and
it takes that work out of every call too.

A `Tracer` computed from constants alone carries its NumPy value (``Tracer.known``). A
splat (every element equal: ``jnp.ones``, ``jnp.full``, a seed cotangent) is kept as a
zero-stride view of one element, whatever its size, and elementwise and structural
primitives on splats are computed on that one element, so ``jnp.zeros((10000, 10000)) + 1``
costs nothing here. Anything else is folded only while it is small (`FOLD_SIZE`); larger
computations on constants are staged as usual (their reductions read real inputs, which
IREE compiles correctly).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from transpiler.primitives.core import Primitive, ShapedArray

# Operands and results up to this many elements are computed at trace time.
FOLD_SIZE = 1 << 14
# Folded results up to this many elements are staged as dense constants; larger ones are
# staged as the operation itself (a splat is always a scalar constant and a broadcast).
DENSE_CONSTANT_SIZE = 1024


def is_splat(value: np.ndarray) -> bool:
    """Whether `value` is a zero-stride view of one element (or has at most one)."""
    return value.size <= 1 or not any(value.strides)


def first_element(value: np.ndarray) -> np.ndarray:
    """The first element of a non-empty array, as a 0-d array of its dtype."""
    return np.asarray(value[(0,) * value.ndim])


def splat(element: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """A read-only view of `element` (0-d) repeated to `shape`, costing one element."""
    return np.broadcast_to(element, tuple(shape))


def evaluate(prim: Primitive, values: Sequence[np.ndarray], out_aval: Any,
             params: dict[str, Any]) -> Optional[list[np.ndarray]]:
    """The results of `prim` on the known operand `values` (one per result), or None when
    computing them here would cost more than staging the operation."""
    if prim.family == "barrier":
        return None
    outs: list[ShapedArray] = list(out_aval) if prim.multiple_results else [out_aval]
    empty = any(v.size == 0 for v in values) or any(o.size == 0 for o in outs)
    if all(is_splat(v) for v in values) and not empty:
        if prim.family == "elementwise":
            result = prim.impl(*[first_element(v) for v in values], **params)
            return _as_results(prim, result, outs, broadcast=True)
        if prim.family == "structural":
            (out,) = outs
            return [splat(first_element(values[0]).astype(out.dtype), out.shape)]

    def cheap(value: np.ndarray) -> bool:
        # NumPy reduces a zero-stride view in place; other rules may copy it whole.
        return value.size <= FOLD_SIZE or (is_splat(value) and prim.family == "reduction")

    if all(map(cheap, values)) and all(o.size <= FOLD_SIZE for o in outs):
        with np.errstate(all="ignore"):
            result = prim.impl(*values, **params)
        return _as_results(prim, result, outs, broadcast=False)
    return None


def _as_results(prim: Primitive, result: Any, outs: list[ShapedArray],
                broadcast: bool) -> Optional[list[np.ndarray]]:
    results = list(result) if prim.multiple_results else [result]
    arrays = []
    for value, out in zip(results, outs):
        array = np.asarray(value)
        if array.dtype != out.dtype:
            array = array.astype(out.dtype)
        if broadcast:
            array = splat(array.reshape(()), out.shape)
        if array.shape != out.shape:  # a rule whose impl and abstract eval disagree: stage it
            return None
        arrays.append(array)
    return arrays


def stageable_as_constant(value: np.ndarray) -> bool:
    """Whether a folded result is staged as a constant (else as the operation itself)."""
    return is_splat(value) or value.size <= DENSE_CONSTANT_SIZE


# IREE's own folders turn some operations on unknown values into constants, and a reduction
# of those is miscompiled as above (``jnp.sum(x == x)`` on integers gave 1, a select with a
# constant predicate gave one element). These are known here too, so they fold first.
_SAME_OPERANDS = {"equal": True, "less_equal": True, "greater_equal": True,
                  "not_equal": False, "less": False, "greater": False,
                  "logical_xor": False, "subtract": 0, "bitwise_xor": 0}
_OF_INTEGERS = {"isnan": False, "isfinite": True}


def known_without_operands(prim: Primitive, args: Sequence[Any], avals: Sequence[ShapedArray],
                           out_aval: Any) -> Optional[np.ndarray]:
    """The result of `prim` when it is known whatever the unknown operands hold."""
    exact = all(a.dtype.kind in "biu" for a in avals)
    if not exact:
        return None
    if prim.name in _SAME_OPERANDS and len(args) == 2 and args[0] is args[1]:
        element = np.asarray(_SAME_OPERANDS[prim.name], dtype=out_aval.dtype)
    elif prim.name in _OF_INTEGERS:
        element = np.asarray(_OF_INTEGERS[prim.name], dtype=out_aval.dtype)
    else:
        return None
    return splat(element, out_aval.shape)


def chosen_operand(prim: Primitive, knowns: Sequence[Optional[np.ndarray]],
                   avals: Sequence[ShapedArray], out_aval: Any) -> Optional[int]:
    """A select whose predicate is a known splat is the operand it chooses (when that one
    already has the result's type): its index, else None."""
    pred = knowns[0] if prim.name == "select" else None
    if pred is None or not is_splat(pred) or pred.size == 0:
        return None
    index = 1 if bool(first_element(pred)) else 2
    return index if avals[index] == out_aval else None
