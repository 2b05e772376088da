"""The state converted control flow carries through a traced ``if``/``while``/``for``.

A construct's state is a tuple of variables (see `ConstructInfo.names`). Before it is handed
to ``lax.cond`` / ``while_loop`` / ``fori_loop``, each variable is described by a `Slot`:
its pytree structure (``None`` and `Undefined` count as leaves) and, per leaf, either the
`ShapedArray` it must have (arrays and Python scalars, which become weak-typed arrays) or a
`Static` value that is the same on every path and stays a Python value. Joining the slots
of two branches, or of a loop's state before and after one iteration, is where the user's
mistakes are found, and reported with the variable's name and lines:

- shapes must agree; dtypes too, except that a weak type (a Python scalar) takes the other
  side's dtype (a Python ``0`` carried into a loop that makes it float32 is promoted);
- a variable set in only one branch (`Undefined` in the other) and used after the ``if``;
- non-array values (None, strings, ...) must be equal on every path.

Code the transforms generated (derivative code, ``ConstructInfo.generated``) uses ``None``
for a zero cotangent and defines residuals in one branch only: there the missing side
becomes zeros of the present side's shape and dtype.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

import numpy as np

from transpiler import dtypes, tree_util
from transpiler.errors import SourceLocation, TranspileError
from transpiler.primitives.core import ShapedArray, Tracer, abstractify
from transpiler import numpy as jnp


class Undefined:
    """A variable that has no value yet on this path (AutoGraph's ``Undefined``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<undefined {self.name}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Undefined)

    def __hash__(self) -> int:
        return hash(Undefined)

    def _unbound(self, *args: Any, **kwargs: Any) -> Any:
        raise UnboundLocalError(f"local variable {self.name!r} is used before it is assigned")

    __bool__ = __call__ = __iter__ = __len__ = __getitem__ = __array__ = _unbound
    __neg__ = __pos__ = __abs__ = __invert__ = _unbound
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _unbound
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _unbound
    __pow__ = __rpow__ = __matmul__ = __rmatmul__ = __lt__ = __le__ = __gt__ = __ge__ = _unbound


@dataclass(frozen=True)
class ConstructInfo:
    """What converted code knows statically about one construct (for checks and errors)."""

    kind: str                                  # "if", "while", "for", "conditional expression"
    loc: Optional[SourceLocation]              # the construct, in the user's file
    names: tuple[str, ...]                     # the state passed in, in order
    outs: tuple[str, ...]                      # the state returned (an if's: part of `names`)
    # Per branch (if: true, false) or body (loops): name -> where it is last assigned.
    assigned: tuple[dict[str, Optional[SourceLocation]], ...] = ()
    defined: dict[str, Optional[SourceLocation]] = field(default_factory=dict)  # before it
    appends: tuple[str, ...] = ()              # lists it appends to without binding them
    generated: bool = False                    # derivative code: None / undefined -> zeros

    @property
    def traced(self) -> str:
        """How messages name the construct: "`while` on a traced value" ..."""
        if self.kind == "for":
            return "`for` over a traced range"
        if self.kind == "conditional expression":
            return "a conditional expression on a traced value"
        return f"`{self.kind}` on a traced value"


@dataclass(frozen=True)
class Static:
    """A non-array leaf: the same Python value on every path."""

    value: Any

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Static):
            return False
        if self.value is other.value:
            return True
        try:
            return bool(type(self.value) is type(other.value) and self.value == other.value)
        except Exception:  # e.g. objects whose == is elementwise
            return False

    def __hash__(self) -> int:
        return id(type(self.value))


Leaf = Union[ShapedArray, Static]


@dataclass(frozen=True)
class Slot:
    """One carried variable: its structure and what each leaf must be."""

    tree: Any
    leaves: tuple[Leaf, ...]

    @property
    def missing(self) -> bool:
        """The whole variable is None or undefined."""
        return len(self.leaves) == 1 and isinstance(self.leaves[0], Static) and \
            _is_missing(self.leaves[0].value) and tree_util.treedef_is_leaf(self.tree)


Plan = list[Slot]


def _is_missing(value: Any) -> bool:
    return value is None or isinstance(value, Undefined)


def _flatten(value: Any) -> tuple[list[Any], Any]:
    return tree_util.tree_flatten(value, is_leaf=_is_missing)


def _describe_leaf(leaf: Any) -> Leaf:
    if isinstance(leaf, ShapedArray):  # already abstract (a probe's output)
        return leaf
    if isinstance(leaf, (Tracer, np.ndarray, np.generic, bool, int, float, complex)) or \
            hasattr(leaf, "aval"):
        try:
            return abstractify(leaf)
        except (TypeError, OverflowError, TranspileError):
            return Static(leaf)
    return Static(leaf)


def describe(value: Any) -> Slot:
    leaves, tree = _flatten(value)
    return Slot(tree, tuple(_describe_leaf(leaf) for leaf in leaves))


def describe_all(values: Sequence[Any]) -> Plan:
    return [describe(v) for v in values]


def has_arrays(plan: Plan) -> bool:
    return any(isinstance(leaf, ShapedArray) for slot in plan for leaf in slot.leaves)


# --- joining -------------------------------------------------------------------------------

def join_branches(true_out: Sequence[Any], false_out: Sequence[Any],
                  info: ConstructInfo) -> Plan:
    """The state after a traced ``if``: what both branches can return alike."""
    return [_join(name, describe(a), describe(b), info, loop=False)
            for name, a, b in zip(info.outs, true_out, false_out)]


def join_loop(before: Plan, after: Sequence[Any], info: ConstructInfo) -> Plan:
    """The loop state that one more iteration keeps (weak types promoted)."""
    return [_join(name, slot, describe(value), info, loop=True)
            for name, slot, value in zip(info.outs, before, after)]


def _join(name: str, a: Slot, b: Slot, info: ConstructInfo, loop: bool) -> Slot:
    if a.missing or b.missing:
        if a.missing and b.missing:
            if a == b:
                return a
            if info.generated:  # None (a zero cotangent) on one side, undefined on the other
                return Slot(a.tree, (Static(None),))
            raise _errors(info, name, loop).one_sided(a, b)
        present = b if a.missing else a
        if info.generated and any(isinstance(x, ShapedArray) for x in present.leaves):
            return present  # the missing side becomes zeros
        raise _errors(info, name, loop).one_sided(a, b)
    if a.tree != b.tree:
        raise _errors(info, name, loop).structure(a, b)
    leaves = tuple(_join_leaf(name, x, y, info, loop) for x, y in zip(a.leaves, b.leaves))
    return Slot(a.tree, leaves)


def _join_leaf(name: str, x: Leaf, y: Leaf, info: ConstructInfo, loop: bool) -> Leaf:
    errors = _errors(info, name, loop)
    if isinstance(x, Static) and isinstance(y, Static):
        if x == y:
            return x
        if info.generated and _is_missing(x.value) and _is_missing(y.value):
            return Static(None)
        raise errors.static(x.value, y.value)
    if isinstance(x, Static) or isinstance(y, Static):
        static, array = (x, y) if isinstance(x, Static) else (y, x)
        if info.generated and _is_missing(static.value):  # type: ignore[union-attr]
            return array
        raise errors.static(getattr(x, "value", x), getattr(y, "value", y))
    if x.shape != y.shape:
        raise errors.shape(x, y)
    if x.dtype == y.dtype:
        return ShapedArray(x.shape, x.dtype, x.weak_type and y.weak_type)
    if loop:  # x: before the iteration, y: after it
        if x.weak_type:
            return ShapedArray(x.shape, y.dtype, y.weak_type)
        if y.weak_type:
            return x
        raise errors.dtype(x, y)
    if x.weak_type or y.weak_type:  # JAX's promotion of a weak type (a Python scalar)
        dtype, weak = dtypes.promote((x.dtype, x.weak_type), (y.dtype, y.weak_type))
        return ShapedArray(x.shape, dtype, weak)
    raise errors.dtype(x, y)


# --- values to and from the flat arrays lax carries -----------------------------------------

def _zeros(aval: ShapedArray) -> Any:
    return jnp.zeros(aval.shape, aval.dtype)


def _as_array(leaf: Any, aval: ShapedArray) -> Any:
    """`leaf` as an array of `aval`'s dtype (a Python scalar stays weak when `aval` is)."""
    if _is_missing(leaf):
        return _zeros(aval)
    have = abstractify(leaf)
    if have.dtype == aval.dtype:
        return leaf if isinstance(leaf, Tracer) else jnp.asarray(leaf)
    return jnp.asarray(leaf, dtype=aval.dtype)


def _leaves_for(value: Any, slot: Slot) -> list[Any]:
    """The leaves of `value` matched to `slot`'s (all missing when `value` is)."""
    if _is_missing(value) and not slot.missing:
        return [None] * len(slot.leaves)
    leaves, tree = _flatten(value)
    if tree != slot.tree:
        raise TranspileError(f"internal: a carried value changed structure between the "
                             f"probe and the trace ({tree} vs {slot.tree})")
    return leaves


def materialize(values: Sequence[Any], plan: Plan) -> list[Any]:
    """The variables as the plan has them: arrays (weak Python scalars as weak arrays,
    missing leaves as zeros), static leaves as they are."""
    out = []
    for value, slot in zip(values, plan):
        leaves = [_as_array(leaf, spec) if isinstance(spec, ShapedArray) else spec.value
                  for leaf, spec in zip(_leaves_for(value, slot), slot.leaves)]
        out.append(tree_util.tree_unflatten(slot.tree, leaves))
    return out


def arrays(values: Sequence[Any], plan: Plan) -> list[Any]:
    """The array leaves of `values` (already materialized), in plan order."""
    out = []
    for value, slot in zip(values, plan):
        for leaf, spec in zip(_leaves_for(value, slot), slot.leaves):
            if isinstance(spec, ShapedArray):
                out.append(leaf)
    return out


def conform(values: Sequence[Any], plan: Plan) -> list[Any]:
    """A branch's or an iteration's results as the flat arrays of the plan: missing leaves
    become zeros, dtypes are cast to the plan's."""
    out = []
    for value, slot in zip(values, plan):
        for leaf, spec in zip(_leaves_for(value, slot), slot.leaves):
            if isinstance(spec, ShapedArray):
                out.append(_as_array(leaf, spec))
    return out


def rebuild(flat: Sequence[Any], plan: Plan) -> tuple:
    """The variables back from the flat arrays of the plan (static leaves filled in)."""
    it = iter(flat)
    out = []
    for slot in plan:
        leaves = [next(it) if isinstance(spec, ShapedArray) else spec.value
                  for spec in slot.leaves]
        out.append(tree_util.tree_unflatten(slot.tree, leaves))
    return tuple(out)


def _errors(info: ConstructInfo, name: str, loop: bool) -> Any:
    from transpiler.transforms.autograph.errors import StateErrors  # cycle: it imports this module
    return StateErrors(info, name, loop)
