"""Windowed and monoid reductions with JAX's signatures: ``lax.reduce_window``,
``lax.reduce``, ``lax.associative_scan``, ``lax.cumlogsumexp``, and the padding helpers
``padtype_to_pads`` and ``reduce_window_shape_tuple``.

``reduce_window`` and ``reduce`` read their `computation` as JAX does, by running it once
on two abstract scalars of the operand's dtype (`read_computation`, the analogue of JAX's
jaxpr of it):

- one addition, multiplication, maximum or minimum of its two arguments (``lax.add``,
  ``jnp.maximum``, ``operator.mul``, ``lambda a, b: b + a`` ...; for ``reduce`` also
  ``bitwise_and``/``or`` and their logical forms) is that monoid: the window or axes
  reduce with its primitive (primitives/windows.py, reductions.py), whose derivatives are
  JAX's (max pooling's goes to each window's first maximum, `select_and_scatter_add`).
  An `init_value` other than the monoid's identity is combined with each result once;
- any other computation made of elementwise operations, on arrays or on pytrees of them
  (JAX's variadic form), runs generically on whole arrays: ``reduce_window`` folds the
  window's elements into `init_value` one window position at a time, in row-major order,
  as XLA does on the CPU; ``reduce`` combines adjacent pairs in a tree (log2(n) levels,
  order kept; XLA asks for an associative computation) and then `init_value` with the
  result. Every transform goes through the computation itself;
- a computation that does anything else on its arguments (a reduction, a reshape, Python
  ``if`` on them) cannot run on whole arrays: that is an error at the user's line.

In both forms padding and base-dilation holes hold no element (XLA on the CPU: they
are not `init_value`).

``associative_scan`` is JAX's parallel prefix algorithm, written with slices, pads and
concatenations so that every transform goes through it; ``cumlogsumexp`` is that scan of
``jnp.logaddexp``.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any, Callable, Optional, Sequence

import numpy as np

from transpiler import dtypes, tree_util
from transpiler import numpy as jnp
from transpiler.array_methods import Abstract, ArrayMethods, AvalProperties
from transpiler.errors import CONCRETE_ERRORS, TracerError, located
from transpiler.primitives import conversions as conv
from transpiler.primitives import core
from transpiler.primitives import elementwise as ew
from transpiler.primitives import reductions as red_p
from transpiler.primitives import shape as sp
from transpiler.primitives import windows as win_p
from transpiler.primitives.core import (Primitive, ShapedArray, abstractify, normalize_axes,
                                        normalize_axis, shape_error)

# The monoids, by the primitive a computation applies to its two arguments.
MONOID_OF = {ew.add: "sum", ew.multiply: "prod", ew.maximum: "max", ew.minimum: "min",
             ew.bitwise_and: "and", ew.logical_and: "and", ew.bitwise_or: "or",
             ew.logical_or: "or"}
COMBINE = {"sum": ew.add, "prod": ew.multiply, "max": ew.maximum, "min": ew.minimum,
           "and": ew.bitwise_and, "or": ew.bitwise_or}


# --- reading the computation: run once on abstract scalars ---------------------------------

class _Scalar(Abstract, AvalProperties, ArrayMethods, core.Tracer):
    """A 0-d stand-in for one argument of a computation, while `read_computation` runs it."""

    __slots__ = ("aval", "tape")

    def __init__(self, tape: "_Tape", aval: ShapedArray) -> None:
        self.tape, self.aval = tape, aval

    def __repr__(self) -> str:
        return f"Traced<{self.aval}>"

    def _concrete(self, what: str, kind: str) -> TracerError:
        error = located(CONCRETE_ERRORS[kind], f"{what} on an argument of a reduction's computation "
                        f"({self.aval}): the computation is traced on abstract scalars, as "
                        "JAX traces it", "select with jnp.where or lax.select instead")
        return error  # type: ignore[return-value]


class _Tape:
    """A trace that writes down the primitives applied to its `_Scalar`s; operations on
    other values (constants of the computation) run in the trace below it."""

    def __init__(self) -> None:
        self.ops: list[tuple[Primitive, tuple[Any, ...], list[_Scalar]]] = []

    def emit(self, prim: Primitive, args: Sequence[Any], avals: Sequence[ShapedArray],
             out_aval: Any, params: dict[str, Any]) -> Any:
        if not any(isinstance(a, _Scalar) and a.tape is self for a in args):
            core.trace_stack.pop()
            try:
                return prim.bind(*args, **params)
            finally:
                core.trace_stack.append(self)
        outs = [_Scalar(self, aval) for aval in (out_aval if prim.multiple_results
                                                 else [out_aval])]
        self.ops.append((prim, tuple(args), outs))
        return tuple(outs) if prim.multiple_results else outs[0]


def _shown(computation: Callable) -> str:
    return getattr(computation, "__qualname__", None) or repr(computation)


def read_computation(computation: Callable, dtypes_in: Sequence[np.dtype], tree: Any,
                     op: str) -> Optional[str]:
    """Run `computation` on two abstract scalars of `dtypes_in` (values of structure `tree`,
    see `_split`): the monoid of `MONOID_OF` it is, or None for a computation of
    elementwise operations that runs generically; any other is an error."""
    if not callable(computation):
        raise located(TypeError, f"{op}: computation must be callable, got {computation!r}")
    if tree is None and isinstance(computation, Primitive) and computation in MONOID_OF:
        return MONOID_OF[computation]  # lax.add ...: nothing to read
    tape = _Tape()
    left = [_Scalar(tape, ShapedArray((), np.dtype(d))) for d in dtypes_in]
    right = [_Scalar(tape, ShapedArray((), np.dtype(d))) for d in dtypes_in]
    core.trace_stack.append(tape)
    try:
        out = computation(_build(tree, left), _build(tree, right))
    finally:
        core.trace_stack.pop()
    out_tree = _split(out)[1] if isinstance(out, (tuple, list, dict)) else None
    if out_tree != tree or len(_parts(tree, out)) != len(left):
        raise located(TypeError, f"{op}: the computation {_shown(computation)} must return "
                      f"what it takes, {_shown_structure(tree, len(left))}; it returned "
                      f"{out!r}")
    outs = _parts(tree, out)
    for value, dtype in zip(outs, dtypes_in):
        aval = abstractify(value, 0, op)
        if aval.shape != () or aval.dtype != dtype:
            raise located(TypeError, f"{op}: the computation {_shown(computation)} must "
                          f"return a {np.dtype(dtype).name} scalar for {np.dtype(dtype).name} "
                          f"operands, got {aval.str_short()}",
                          "convert its result, or give operands of the dtype it computes in")
    for prim, _, _ in tape.ops:
        if prim.family != "elementwise":
            raise located(NotImplementedError, f"{op}: the computation {_shown(computation)} "
                          f"applies {prim.name} to its arguments, which is not an elementwise "
                          "operation, so it cannot be applied to whole windows or axes at "
                          "once", "write the computation with elementwise operations "
                          "(jnp.where for choices), or the reduction with lax.scan")
    if len(tape.ops) == 1 and len(outs) == 1:
        prim, args, results = tape.ops[0]
        pair = sorted(id(a) for a in args)
        if outs[0] is results[0] and pair == sorted((id(left[0]), id(right[0]))):
            return MONOID_OF.get(prim)
    return None


# --- operands and init values ---------------------------------------------------------------
# A structure is None (one array), `tuple` or `list` (a flat sequence of arrays, taken
# apart and rebuilt with tuple() and list(), which the derivative transforms follow), or
# the PyTreeDef of any other pytree.

def _split(operands: Any) -> tuple[list[Any], Any]:
    """The arrays of `operands` and their structure."""
    if not isinstance(operands, (tuple, list, dict)):
        return [operands], None
    if type(operands) in (tuple, list) and not any(isinstance(o, (tuple, list, dict))
                                                   for o in operands):
        return list(operands), type(operands)
    return tree_util.tree_flatten(operands)


def _build(tree: Any, leaves: list[Any]) -> Any:
    """The value of structure `tree` holding `leaves`."""
    if tree is None:
        return leaves[0]
    if tree is tuple:
        return tuple(leaves)
    if tree is list:
        return list(leaves)
    return tree_util.tree_unflatten(tree, leaves)


def _parts(tree: Any, value: Any) -> list[Any]:
    """The arrays of `value`, of structure `tree`."""
    if tree is None:
        return [value]
    if tree is tuple or tree is list:
        return list(value)
    return tree_util.tree_leaves(value)


def _shown_structure(tree: Any, count: int) -> str:
    if tree is None:
        return "one array"
    if tree is tuple or tree is list:
        return f"a {tree.__name__} of {count} arrays"
    return str(tree)


def _check_operands(avals: list[ShapedArray], tree: Any, init_avals: list[ShapedArray],
                    init_tree: Any, op: str) -> None:
    """Operands of one shape, scalar init values of their structure."""
    if init_tree != tree or len(init_avals) != len(avals):
        raise located(ValueError, f"{op}: the init values must have the operands' structure, "
                      f"{_shown_structure(tree, len(avals))}; got "
                      f"{_shown_structure(init_tree, len(init_avals))}")
    if not avals:
        raise located(ValueError, f"{op}: there must be at least one operand")
    if len({aval.shape for aval in avals}) != 1:
        raise shape_error(f"{op}: every operand must have the same shape, got "
                          f"{[aval.str_short() for aval in avals]}")
    for aval in init_avals:
        if aval.shape != ():
            raise shape_error(f"{op}: init values must be scalars, got {aval.str_short()}")


def _check_init_dtypes(init_avals: list[ShapedArray], types: list[np.dtype], op: str) -> None:
    """Init values that are combined with the operands have their dtypes (as in JAX)."""
    for aval, dtype in zip(init_avals, types):
        if aval.dtype != dtype:
            raise located(TypeError, f"{op}: an init value of dtype {aval.dtype.name} for an "
                          f"operand of dtype {np.dtype(dtype).name}: they must match",
                          "give the init value in the operand's dtype, as JAX requires")


def _is_identity(value: Any, kind: str) -> bool:
    """Whether `value` is known to be the identity of `kind` in its own dtype (as JAX
    decides: -inf is max's identity for an integer operand too)."""
    if isinstance(value, core.Tracer):
        return False
    return bool(np.asarray(value) == red_p.identity(kind, abstractify(value).dtype))


def _with_init(out: Any, init_value: Any, kind: str, dtype: np.dtype, op: str) -> Any:
    """`out` combined once with `init_value`, unless that is the identity (then it may
    have any dtype); a combined one has the operand's dtype."""
    if _is_identity(init_value, kind):
        return out
    _check_init_dtypes([abstractify(init_value)], [dtype], op)
    return COMBINE[kind](out, init_value)


def _ints(values: Any, label: str, op: str) -> tuple[int, ...]:
    try:
        return tuple(int(operator.index(v)) for v in values)
    except TypeError:
        raise located(TypeError, f"{op}: {label} must be a sequence of ints, got "
                      f"{values!r}") from None


# --- padding helpers -----------------------------------------------------------------------

def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: str) -> list[tuple[int, int]]:
    """``lax.padtype_to_pads``: 'VALID', 'SAME' or 'SAME_LOWER' as (low, high) pairs; SAME
    gives ``ceil(n / stride)`` outputs, the odd pad high (low for SAME_LOWER)."""
    kind = padding.upper() if isinstance(padding, str) else padding
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise located(ValueError, f"unrecognized padding {padding!r}",
                      "give 'VALID', 'SAME', 'SAME_LOWER' or a sequence of (low, high) pairs")
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        total = builtins.max((-(-n // s) - 1) * s + w - n, 0)
        half = total // 2
        pads.append((half, total - half) if kind == "SAME" else (total - half, half))
    return pads


def reduce_window_shape_tuple(operand_shape: Sequence[int], window_dimensions: Sequence[int],
                              window_strides: Sequence[int], padding: Sequence[Any],
                              base_dilation: Optional[Sequence[int]] = None,
                              window_dilation: Optional[Sequence[int]] = None) -> tuple[int, ...]:
    """``lax.reduce_window_shape_tuple``: the shape `reduce_window` gives."""
    rank = len(operand_shape)
    aval = ShapedArray(tuple(operand_shape), np.dtype(np.float32))
    return win_p.check_window(
        "reduce_window", aval, tuple(window_dimensions), tuple(window_strides),
        tuple((int(lo), int(hi)) for lo, hi in padding),
        tuple(base_dilation or (1,) * rank), tuple(window_dilation or (1,) * rank))


def _window_params(shape: Sequence[int], window_dimensions: Sequence[int],
                   window_strides: Optional[Sequence[int]], padding: Any,
                   base_dilation: Optional[Sequence[int]],
                   window_dilation: Optional[Sequence[int]]) -> dict[str, Any]:
    """The primitives' window params from `reduce_window`'s arguments, as JAX reads them: a
    padding string pads for the dilated window over the undilated operand."""
    op = "reduce_window"
    window = _ints(window_dimensions, "window_dimensions", op)
    ones = (1,) * len(window)
    strides = ones if window_strides is None else _ints(window_strides, "window_strides", op)
    base = ones if base_dilation is None else _ints(base_dilation, "base_dilation", op)
    dilation = ones if window_dilation is None else _ints(window_dilation, "window_dilation",
                                                          op)
    if isinstance(padding, str):
        dilated = tuple(win_p.dilate(w, d) for w, d in zip(window, dilation))
        pads = tuple(padtype_to_pads(shape, dilated, strides, padding))
    else:
        try:
            pads = tuple((int(operator.index(lo)), int(operator.index(hi)))
                         for lo, hi in padding)
        except (TypeError, ValueError):
            raise located(ValueError, f"{op}: padding must be 'VALID', 'SAME', 'SAME_LOWER' "
                          f"or a sequence of (low, high) int pairs, got {padding!r}") from None
    return {"window_dimensions": window, "window_strides": strides, "padding": pads,
            "base_dilation": base, "window_dilation": dilation}


# --- reduce_window -------------------------------------------------------------------------
# (The functions below are differentiated from their source, so they call each primitive
# by its name with its params spelled out: the transforms resolve callees by name.)

def reduce_window(operand: Any, init_value: Any, computation: Callable,
                  window_dimensions: Sequence[int],
                  window_strides: Optional[Sequence[int]] = None, padding: Any = "VALID",
                  base_dilation: Optional[Sequence[int]] = None,
                  window_dilation: Optional[Sequence[int]] = None) -> Any:
    """``lax.reduce_window``: `computation` over windows of `operand` (an array or a
    pytree of arrays of one shape, with a matching pytree of scalar init values); see the
    module docstring for the computations and how each runs."""
    leaves, tree = _split(operand)
    inits, init_tree = _split(init_value)
    avals = [abstractify(leaf, 0, "reduce_window") for leaf in leaves]
    init_avals = [abstractify(init, 0, "reduce_window") for init in inits]
    _check_operands(avals, tree, init_avals, init_tree, "reduce_window")
    shape, types = avals[0].shape, [aval.dtype for aval in avals]
    params = _window_params(shape, window_dimensions, window_strides, padding, base_dilation,
                            window_dilation)
    kind = read_computation(computation, types, tree, "reduce_window")
    if len(leaves) == 1 and kind in win_p.REDUCE_WINDOW and _fits(kind, types[0]):
        out = _window_monoid(kind, leaves[0], params)
        return _build(tree, [_with_init(out, inits[0], kind, types[0], "reduce_window")])
    _check_init_dtypes(init_avals, types, "reduce_window")
    return _build(tree, _window_fold(computation, tree, leaves, inits, params))


def _fits(kind: str, dtype: np.dtype) -> bool:
    """Whether the windowed primitive of `kind` takes `dtype` (sums of bools do not)."""
    return not (dtype == dtypes.bool_ and kind in ("sum", "prod"))


def _window_monoid(kind: str, x: Any, params: dict[str, Any]) -> Any:
    window, strides = params["window_dimensions"], params["window_strides"]
    pads, base, dilation = params["padding"], params["base_dilation"], params["window_dilation"]
    if kind == "sum":
        return win_p.reduce_window_sum(x, window_dimensions=window, window_strides=strides,
                                       padding=pads, base_dilation=base,
                                       window_dilation=dilation)
    if kind == "prod":
        return win_p.reduce_window_prod(x, window_dimensions=window, window_strides=strides,
                                        padding=pads, base_dilation=base,
                                        window_dilation=dilation)
    if kind == "max":
        return win_p.reduce_window_max(x, window_dimensions=window, window_strides=strides,
                                       padding=pads, base_dilation=base,
                                       window_dilation=dilation)
    return win_p.reduce_window_min(x, window_dimensions=window, window_strides=strides,
                                   padding=pads, base_dilation=base, window_dilation=dilation)


def _apply(computation: Callable, tree: Any, a: list[Any], b: list[Any]) -> list[Any]:
    """`computation` on the values of structure `tree` holding `a` and `b`: its arrays."""
    return _parts(tree, computation(_build(tree, a), _build(tree, b)))


def _fold_geometry(shape: tuple[int, ...], params: dict[str, Any]) -> tuple:
    """(result shape, pad low, high, interior, strides, window positions) of a window fold."""
    out_shape = win_p.check_window("reduce_window", ShapedArray(shape, np.dtype(np.float32)),
                                   **params)
    return (out_shape, tuple(lo for lo, _ in params["padding"]),
            tuple(hi for _, hi in params["padding"]),
            tuple(b - 1 for b in params["base_dilation"]), tuple(params["window_strides"]),
            win_p.window_starts(params["window_dimensions"], params["window_dilation"]))


def _position(shape: tuple[int, ...], start: tuple[int, ...], out_shape: tuple[int, ...],
              params: dict[str, Any]) -> tuple[tuple[int, ...], np.ndarray]:
    """The slice limit that reads window position `start` (in the dilated, padded operand)
    of every window, and per window whether that position holds an element: a static
    mask, False in padding and dilation holes."""
    strides = params["window_strides"]
    limit = tuple(a + win_p.dilate(o, s) for a, o, s in zip(start, out_shape, strides))
    mask = np.ones(out_shape, bool)
    for d, (n, o, s, (lo, _), b) in enumerate(zip(shape, out_shape, strides, params["padding"],
                                                 params["base_dilation"])):
        at = np.arange(o) * s + start[d] - lo
        real = (at >= 0) & (at < win_p.dilate(n, b)) & (at % b == 0)
        mask &= real.reshape([o if axis == d else 1 for axis in range(len(shape))])
    return limit, mask


def _window_fold(computation: Callable, tree: Any, leaves: list[Any], inits: list[Any],
                 params: dict[str, Any]) -> list[Any]:
    """`reduce_window` of any elementwise `computation`: each init value broadcast to the
    result's shape, combined with the windows' elements one window position at a time
    (a strided slice of the padded operand holds that position of every window). Windows
    without an element at a position keep their value (a select)."""
    shape = abstractify(leaves[0]).shape
    out_shape, low, high, interior, strides, starts = _fold_geometry(shape, params)
    # (holes hold the init value; what the computation makes of them is discarded)
    spread = _padded(leaves, inits, low, high, interior)
    accumulated = _broadcast_inits(leaves, inits, out_shape)
    for start in starts:
        limit, inside = _position(shape, start, out_shape, params)
        if inside.any():
            pieces = []
            for k in range(len(spread)):
                pieces.append(sp.slice_(spread[k], start_indices=start, limit_indices=limit,
                                        strides=strides))
            combined = _apply(computation, tree, accumulated, pieces)
            accumulated = combined if inside.all() else _select(inside, combined, accumulated)
    return accumulated


def _padded(leaves: list[Any], inits: list[Any], low: tuple[int, ...], high: tuple[int, ...],
            interior: tuple[int, ...]) -> list[Any]:
    """Each operand padded and dilated with its init value."""
    padded = []
    for k in range(len(leaves)):
        init = conv.convert_element_type(inits[k], dtype=abstractify(leaves[k]).dtype)
        padded.append(sp.pad(leaves[k], init, low=low, high=high, interior=interior))
    return padded


def _broadcast_inits(leaves: list[Any], inits: list[Any], shape: tuple[int, ...]) -> list[Any]:
    """Each init value, in its operand's dtype, broadcast to `shape`."""
    broadcast = []
    for k in range(len(leaves)):
        init = conv.convert_element_type(inits[k], dtype=abstractify(leaves[k]).dtype)
        broadcast.append(sp.broadcast_to(init, shape=shape))
    return broadcast


def _select(mask: np.ndarray, on_true: list[Any], on_false: list[Any]) -> list[Any]:
    chosen = []
    for k in range(len(on_true)):
        chosen.append(conv.select(mask, on_true[k], on_false[k]))
    return chosen


# --- reduce --------------------------------------------------------------------------------

def reduce(operands: Any, init_values: Any, computation: Callable,
           dimensions: Sequence[int]) -> Any:
    """``lax.reduce``: `computation` over the axes `dimensions` of `operands` (an array or
    a pytree of arrays of one shape, with a matching pytree of scalar init values); see
    the module docstring for the computations and how each runs."""
    leaves, tree = _split(operands)
    inits, init_tree = _split(init_values)
    avals = [abstractify(leaf, 0, "reduce") for leaf in leaves]
    init_avals = [abstractify(init, 0, "reduce") for init in inits]
    _check_operands(avals, tree, init_avals, init_tree, "reduce")
    shape, types = avals[0].shape, [aval.dtype for aval in avals]
    axes = normalize_axes(_ints(dimensions, "dimensions", "reduce"), len(shape), "reduce")
    kind = read_computation(computation, types, tree, "reduce")
    if len(leaves) == 1 and kind is not None and _fits(kind, types[0]):
        out = _reduce_monoid(kind, leaves[0], axes)
        return _build(tree, [_with_init(out, inits[0], kind, types[0], "reduce")])
    _check_init_dtypes(init_avals, types, "reduce")
    return _build(tree, _tree_reduce(computation, tree, leaves, inits, axes))


def _reduce_monoid(kind: str, x: Any, axes: tuple[int, ...]) -> Any:
    if kind == "sum":
        return red_p.reduce_sum(x, axes=axes)
    if kind == "prod":
        return red_p.reduce_prod(x, axes=axes)
    if kind == "max":
        return red_p.reduce_max(x, axes=axes)
    if kind == "min":
        return red_p.reduce_min(x, axes=axes)
    if kind == "and":
        return red_p.reduce_and(x, axes=axes)
    return red_p.reduce_or(x, axes=axes)


def _rows_layout(shape: tuple[int, ...],
                 axes: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(the permutation moving `axes` last, the kept shape, the number of reduced elements)."""
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    return kept + axes, tuple(shape[d] for d in kept), int(np.prod([shape[d] for d in axes],
                                                                   dtype=np.int64))


def _tree_reduce(computation: Callable, tree: Any, leaves: list[Any], inits: list[Any],
                 axes: tuple[int, ...]) -> list[Any]:
    """`reduce` of any elementwise `computation`: the reduced axes moved last and
    flattened into one, reduced by `_pairwise`, then combined with the init values."""
    permutation, kept_shape, n = _rows_layout(abstractify(leaves[0]).shape, axes)
    rows = []
    for leaf in leaves:
        moved = sp.transpose(leaf, permutation=permutation)
        rows.append(sp.reshape(moved, new_sizes=kept_shape + (n,)))
    starts = _broadcast_inits(leaves, inits, kept_shape)
    if n == 0:
        return starts
    totals = []
    for row in _pairwise(computation, tree, rows, len(kept_shape)):
        totals.append(sp.reshape(row, new_sizes=kept_shape))
    return _apply(computation, tree, starts, totals)


def _pairwise(computation: Callable, tree: Any, rows: list[Any], axis: int) -> list[Any]:
    """Rows reduced along `axis` (their last) to length 1 by combining adjacent pairs,
    an odd last element carried to the next level: the order of the elements is kept."""
    n = abstractify(rows[0]).shape[axis]
    if n == 1:
        return rows
    half = n // 2
    evens = []
    odds = []
    for row in rows:
        evens.append(_slice_in_dim(row, 0, 2 * half - 1, 2, axis))
        odds.append(_slice_in_dim(row, 1, 2 * half, 2, axis))
    pairs = _apply(computation, tree, evens, odds)
    if n % 2 == 0:
        return _pairwise(computation, tree, pairs, axis)
    carried = []
    for k in range(len(rows)):
        last = _slice_in_dim(rows[k], n - 1, n, 1, axis)
        carried.append(sp.concatenate(pairs[k], last, axis=axis))
    return _pairwise(computation, tree, carried, axis)


# --- associative_scan, cumlogsumexp -------------------------------------------------------

def associative_scan(fn: Callable, elems: Any, reverse: bool = False, axis: int = 0) -> Any:
    """``lax.associative_scan``: the inclusive scan of the associative `fn` along `axis`
    of every leaf of `elems`, by JAX's parallel prefix algorithm (log2(n) levels of
    pairwise combines). `fn` sees values of the structure of `elems`."""
    if not callable(fn):
        raise located(TypeError, f"associative_scan: fn must be callable, got {fn!r}")
    leaves, tree = _split(elems)
    if not leaves:
        raise located(ValueError, "associative_scan: elems has no arrays")
    return _build(tree, _scan_leaves(fn, tree, leaves, reverse, axis))


def _scan_leaves(fn: Callable, tree: Any, leaves: list[Any], reverse: bool,
                 axis: int) -> list[Any]:
    ndim = abstractify(leaves[0], 0, "associative_scan").ndim
    axis = normalize_axis(axis, ndim, "associative_scan")
    shapes = [abstractify(leaf).shape for leaf in leaves]
    if len({shape[axis] if len(shape) > axis else None for shape in shapes}) != 1:
        raise shape_error("associative_scan: every array of elems needs the same size along "
                          f"axis {axis}, got shapes {[list(shape) for shape in shapes]}")
    if not reverse:
        return _scan(fn, tree, leaves, axis)
    flipped = []
    for leaf in leaves:
        flipped.append(sp.rev(leaf, dimensions=(axis,)))
    scans = _scan(fn, tree, flipped, axis)
    back = []
    for leaf in scans:
        back.append(sp.rev(leaf, dimensions=(axis,)))
    return back


def _slice_in_dim(x: Any, start: int, stop: int, stride: int, axis: int) -> Any:
    shape = abstractify(x).shape
    starts = tuple(start if d == axis else 0 for d in range(len(shape)))
    limits = tuple(stop if d == axis else n for d, n in enumerate(shape))
    strides = tuple(stride if d == axis else 1 for d in range(len(shape)))
    return sp.slice_(x, start_indices=starts, limit_indices=limits, strides=strides)


def _scan(fn: Callable, tree: Any, elems: list[Any], axis: int) -> list[Any]:
    """Odd positions: the scan of the combines of adjacent pairs (a recursion on half the
    length); even positions: those combined with the next element of `elems` (JAX's
    `_scan`). (Loops, not comprehensions: the transforms differentiate through them.)"""
    n = abstractify(elems[0]).shape[axis]
    if n < 2:
        return elems
    evens = []
    odds = []
    rest = []
    for e in elems:
        evens.append(_slice_in_dim(e, 0, n - 1, 2, axis))
        odds.append(_slice_in_dim(e, 1, n, 2, axis))
        rest.append(_slice_in_dim(e, 2, n, 2, axis))
    odd = _scan(fn, tree, _apply(fn, tree, evens, odds), axis)
    if n % 2 == 0:
        earlier = []
        for e in odd:
            earlier.append(_slice_in_dim(e, 0, n // 2 - 1, 1, axis))
        even = _apply(fn, tree, earlier, rest)
    else:
        even = _apply(fn, tree, odd, rest)
    scanned = []
    for k in range(len(elems)):
        first = _slice_in_dim(elems[k], 0, 1, 1, axis)
        scanned.append(_interleave(sp.concatenate(first, even[k], axis=axis), odd[k], axis))
    return scanned


def _interleave(a: Any, b: Any, axis: int) -> Any:
    """`a` at the even positions along `axis`, `b` at the odd ones (JAX's: pads and a sum,
    an `or` for booleans)."""
    a_aval, b_aval = abstractify(a), abstractify(b)
    same = a_aval.shape[axis] == b_aval.shape[axis]
    rank = a_aval.ndim
    zeros = (0,) * rank
    a_wide = sp.pad(a, np.zeros((), a_aval.dtype), low=zeros,
                    high=_at(axis, rank, 1 if same else 0), interior=_at(axis, rank, 1))
    b_wide = sp.pad(b, np.zeros((), b_aval.dtype), low=_at(axis, rank, 1),
                    high=_at(axis, rank, 0 if same else 1), interior=_at(axis, rank, 1))
    if a_aval.dtype == dtypes.bool_:
        return ew.bitwise_or(a_wide, b_wide)
    return ew.add(a_wide, b_wide)


def _at(axis: int, rank: int, value: int) -> tuple[int, ...]:
    """`value` at `axis`, 0 elsewhere."""
    return tuple(value if d == axis else 0 for d in range(rank))


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """``lax.cumlogsumexp``: ``log(cumsum(exp(x)))`` without overflow, an associative scan
    of ``jnp.logaddexp``."""
    return associative_scan(jnp.logaddexp, operand, reverse=reverse, axis=axis)


__all__ = ["associative_scan", "cumlogsumexp", "padtype_to_pads", "reduce", "reduce_window",
           "reduce_window_shape_tuple"]
