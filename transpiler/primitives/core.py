"""Primitives: one definition per operation, with all of its rules side by side.

A `Primitive` carries the rules every transformation needs:

==================  ==========================================================
``impl``            the eager NumPy computation (inputs already in their dtypes)
``abstract_eval``   output `ShapedArray` from input ones; errors at the user's line
``lower``           emits StableHLO through ``iree.compiler.ir`` (see lowering/); or
``composite``       the same computation written with other primitives (and lax loops),
                    which is what a trace stages -- linear algebra, where the eager
                    ``impl`` calls LAPACK and the compiled form is a loop. A primitive
                    may have both: its composite returns NotImplemented for the operands
                    its ``lower`` handles (FFT: IREE's own only for some lengths)
``jvp``             forward-mode rule (a source template, jvp_template.py)
``vjp``             reverse-mode rule (a source template, vjp_template.py)
``batch``           vmap rule (batching.py)
==================  ==========================================================

All of them are declared in one place, the module of the primitive's family: given to
`define`, or, for a rule that refers to the primitive itself (a batching rule that binds
it), attached right after it with `Primitive.def_rules`; each rule once.
derivative_forms.py writes the JVP and VJP of the common cases from one formula (an
elementwise factor, a linear map and its transpose); batching.py holds what batching
rules share.

`bind` runs a primitive: with NumPy values it computes eagerly and wraps the result in an
`Array`; when any operand is a `Tracer` it appends the operation to the trace instead. The
output dtype always comes from ``abstract_eval``, so eager and staged results agree.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.errors import DTypeError, ShapeError, TranspileError, located
from transpiler.per_thread import PerThreadList


@dataclass(frozen=True)
class ShapedArray:
    """The abstract value of an array: shape, dtype and JAX's weak-type bit."""

    shape: tuple[int, ...]
    dtype: np.dtype
    weak_type: bool = False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def update(self, **changes: Any) -> "ShapedArray":
        return dataclasses.replace(self, **changes)

    def str_short(self) -> str:
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"

    __str__ = str_short


class Primitive:
    """A primitive operation and its table of rules (see the module docstring)."""

    def __init__(self, name: str, *, impl: Callable, abstract_eval: Callable,
                 lower: Optional[Callable] = None, composite: Optional[Callable] = None,
                 multiple_results: bool = False, differentiable: bool = True,
                 family: Optional[str] = None, doc: str = "") -> None:
        if lower is None and composite is None:
            raise ValueError(f"primitive {name!r}: give a lower rule or a composite")
        self.name = name
        self.impl = impl
        self.abstract_eval = abstract_eval
        self.lower = lower
        self.composite = composite
        self.multiple_results = multiple_results
        self.differentiable = differentiable
        # What the result's elements are, for rules that work on one element of a splat
        # (trace-time constant folding): "elementwise" (each a function of the operands'
        # elements at its position), "structural" (elements of the first operand, moved:
        # reshape, transpose, slicing), "reduction" (combinations along axes), or None.
        self.family = family
        self.__doc__ = doc or f"The `{name}` primitive."
        # The transformation rules, attached by `def_rules`.
        self.jvp: Optional[Any] = None
        self.vjp: Optional[Any] = None
        self.batch: Optional[Any] = None

    def def_rules(self, *, jvp: Any = None, vjp: Any = None, batch: Any = None) -> "Primitive":
        """Attach transformation rules: a JVP template, a VJP template, a batching rule.
        Each is declared once; a second declaration of the same rule is an error."""
        for slot, rule in (("jvp", jvp), ("vjp", vjp), ("batch", batch)):
            if rule is None:
                continue
            if getattr(self, slot) is not None:
                raise ValueError(f"primitive {self.name!r}: its {slot} rule is declared twice")
            setattr(self, slot, rule)
        return self

    def bind(self, *args: Any, **params: Any) -> Any:
        return bind(self, args, params)

    __call__ = bind

    def __repr__(self) -> str:
        return f"Primitive({self.name})"


REGISTRY: dict[str, Primitive] = {}


def register(prim: Primitive) -> Primitive:
    if prim.name in REGISTRY:
        raise ValueError(f"primitive {prim.name!r} registered twice")
    REGISTRY[prim.name] = prim
    return prim


def define(name: str, *, impl: Callable, abstract_eval: Callable, jvp: Any = None,
           vjp: Any = None, batch: Any = None, **kwargs: Any) -> Primitive:
    """Create and register a primitive in one call: its computation (give `lower`,
    `composite` or both) and whichever of its transformation rules need not refer to it."""
    prim = register(Primitive(name, impl=impl, abstract_eval=abstract_eval, **kwargs))
    return prim.def_rules(jvp=jvp, vjp=vjp, batch=batch)


# --- values: what bind accepts ------------------------------------------------------------

class Tracer:
    """Marker base class; the real Tracer lives in lowering/tracer.py."""

    __slots__ = ()
    aval: ShapedArray


_INT32_RANGE = (-(2**31), 2**31 - 1)


def abstractify(value: Any, position: int = 0, prim: str = "") -> ShapedArray:
    """The `ShapedArray` of an operand, with JAX's canonical dtypes and weak scalars."""
    if isinstance(value, Tracer):
        return value.aval
    aval = getattr(value, "aval", None)  # eager Array
    if aval is not None:
        return aval
    if isinstance(value, (bool, int, float, complex)):
        dtype, weak = dtypes.scalar_dtype(value)
        if isinstance(value, int) and not isinstance(value, bool) and dtype == dtypes.int32:
            if not _INT32_RANGE[0] <= value <= _INT32_RANGE[1]:
                raise located(OverflowError, f"Python int {value} is too large for int32; "
                              "enable x64 or pass an explicit dtype")
        return ShapedArray((), dtype, weak)
    if isinstance(value, (np.ndarray, np.generic)) or hasattr(value, "block_until_ready"):
        dt = dtypes.canonicalize(value.dtype)
        dtypes.check_supported(dt, f"argument {position} of {prim}" if prim else "array")
        return ShapedArray(tuple(value.shape), dt, False)
    where = f"{prim} requires" if prim else "expected"
    raise located(DTypeError, f"{where} ndarray or scalar arguments, got "
                  f"{type(value).__name__} at position {position}",
                  "convert lists and tuples with jnp.array(...) first")


def to_numpy(value: Any, aval: ShapedArray) -> np.ndarray:
    """The NumPy value of a concrete operand, in its aval's dtype."""
    if isinstance(value, Tracer):
        raise located(TranspileError, f"a traced value ({value.aval}) escaped from the jit "
                      "trace that created it", "return values from jitted functions instead "
                      "of storing them in globals or closures")
    raw = getattr(value, "_value", None)  # eager Array: already immutable
    if raw is None:
        raw = np.asarray(value)
        if raw.flags.writeable:  # the user's array: give rules a read-only view of it
            raw = raw.view()
            raw.flags.writeable = False
    if raw.dtype != aval.dtype:
        raw = raw.astype(aval.dtype)
    return raw


# Installed by transpiler/array.py (it imports this module): wraps eager results.
_hooks: dict[str, Callable] = {}

# The traces being built, innermost last (see lowering/trace.py). While one is active every
# primitive is staged into it -- including those whose operands are all concrete, so
# ``jnp.zeros((1000, 1000))`` inside ``jit`` is a broadcast op, not a 4 MB constant.
trace_stack: PerThreadList[Any] = PerThreadList("trace_stack")
# ``ensure_compile_time_eval()`` (transpiler/api_helpers.py): while this thread holds one
# (innermost entry True), an operation whose operands are all concrete runs eagerly even
# inside a trace, so its result is a concrete array (``int()`` of it works under jit).
compile_time_eval: PerThreadList[bool] = PerThreadList("compile_time_eval")


def bind(prim: Primitive, args: Sequence[Any], params: dict[str, Any]) -> Any:
    """Run `prim` eagerly, or stage it into the innermost active trace."""
    avals = [abstractify(a, i, prim.name) for i, a in enumerate(args)]
    out_aval = prim.abstract_eval(*avals, **params)
    if trace_stack and not (compile_time_eval and compile_time_eval[-1] and
                            not any(isinstance(a, Tracer) for a in args)):
        return trace_stack[-1].emit(prim, args, avals, out_aval, params)
    values = [to_numpy(a, aval) for a, aval in zip(args, avals)]
    out = prim.impl(*values, **params)
    wrap = _hooks["wrap"]
    if prim.multiple_results:
        return tuple(wrap(o, av) for o, av in zip(out, out_aval))
    return wrap(out, out_aval)


# --- helpers for abstract_eval rules -----------------------------------------------------

def shape_error(message: str, hint: str = "") -> ShapeError:
    return located(ShapeError, message, hint)  # type: ignore[return-value]


def dtype_error(message: str, hint: str = "") -> DTypeError:
    return located(DTypeError, message, hint)  # type: ignore[return-value]


def broadcast_shapes(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy broadcasting of shapes; the error names the operation and the shapes."""
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for dims in zip(*[(1,) * (ndim - len(s)) + tuple(s) for s in shapes]):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            shown = " and ".join(str(list(s)) for s in shapes)
            raise shape_error(f"{op}: shapes {shown} cannot be broadcast together",
                              "shapes must be equal or 1 in each dimension, aligned from the right")
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def promote_avals(*avals: ShapedArray) -> tuple[np.dtype, bool]:
    return dtypes.promote(*[(a.dtype, a.weak_type) for a in avals])


def normalize_axis(axis: int, ndim: int, op: str) -> int:
    if not -ndim <= axis < ndim:
        raise shape_error(f"{op}: axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim


def normalize_axes(axis: Any, ndim: int, op: str) -> tuple[int, ...]:
    """``axis=None|int|tuple`` -> a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (int(axis),)
    if not isinstance(axis, (tuple, list)) or not all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axis):
        raise located(TypeError, f"{op}: axis must be None, an int or a tuple of ints, got "
                      f"{axis!r}", "axes are static: pass Python ints (under jit, mark a "
                      "traced axis argument static with static_argnums)")
    axes = tuple(sorted(normalize_axis(int(a), ndim, op) for a in axis))
    if len(set(axes)) != len(axes):
        raise shape_error(f"{op}: repeated axis in {tuple(axis)}")
    return axes
