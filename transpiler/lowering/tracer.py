"""Tracers: stand-ins for arrays while `jit` stages a function into a StableHLO module.

Each primitive applied to a `Tracer` appends its lowering to the trace's block at the
user's ``file:line:col`` and returns new Tracers. Using a Tracer where Python needs a
concrete value (``if``, ``float()``, ``np.asarray``) is a `TranspileError` at the user's line.
"""

from __future__ import annotations

from collections import ChainMap
from typing import Any, Optional, Sequence, cast

import numpy as np
from iree.compiler import ir

from transpiler.array_methods import ArrayMethods, AvalProperties
from transpiler.errors import (CONCRETE_ERRORS, TracerError, UnexpectedTracerError,
                               located, user_location)
from transpiler.lowering import fold
from transpiler.lowering.builder import LoweringContext
from transpiler.primitives import core
from transpiler.primitives.core import Primitive, ShapedArray


class Tracer(AvalProperties, ArrayMethods, core.Tracer):
    """An abstract array (shape, dtype) inside a trace; its value is an MLIR SSA value."""

    __slots__ = ("aval", "_value", "trace", "known")

    def __init__(self, trace: "Trace", value: Optional[ir.Value], aval: ShapedArray,
                 known: Optional[np.ndarray] = None) -> None:
        self.trace = trace
        self._value = value  # None: a known value not staged until an operation uses it
        self.aval = aval
        # Its NumPy value when it was computed from constants alone (lowering/fold.py).
        # Nothing but folding reads it: to Python a Tracer stays a value of the future.
        self.known = known

    @property
    def value(self) -> ir.Value:
        """Its SSA value; a folded constant is staged the first time it is used, so
        constants that only fed other folded operations never appear in the module."""
        if self._value is None:
            assert self.known is not None  # a Tracer without an SSA value is a known one
            self._value = self.trace.stage_constant(self.known, self.aval)
        return self._value

    def __repr__(self) -> str:
        return f"Traced<{self.aval}>"

    def _concrete(self, what: str, hint: str, kind: str) -> TracerError:
        return located(CONCRETE_ERRORS[kind], f"{what} on a traced value ({self.aval}) "  # type: ignore[return-value]
                       "inside jit", hint)

    def __bool__(self) -> bool:
        raise self._concrete(
            "Python `if`/`while`/`and`/`or` (bool())",
            "the value is only known when the compiled function runs. jit turns `if`/"
            "`while`/`for` statements on traced values into lax.cond / lax.while_loop / "
            "lax.fori_loop, but not this use (an `assert`, `bool()`, `and`/`or` outside a "
            "condition, or code jit could not convert); select with jnp.where(...), call "
            "lax.cond / lax.while_loop yourself, or mark the argument static with "
            "jit(..., static_argnums=...)", "bool")

    def __float__(self) -> float:
        raise self._concrete("float()", "keep the value as an array, or make it static",
                             "float")

    def __int__(self) -> int:
        raise self._concrete("int()", "keep the value as an array, or make it static", "int")

    def __index__(self) -> int:
        raise self._concrete("use as a Python index", "index with the array itself, or "
                             "make the argument static with static_argnums", "index")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise self._concrete("conversion to a NumPy array", "use transpiler.numpy (jnp) "
                             "functions on traced values instead of numpy (np) ones", "array")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """``np.dot(x, w)`` on a traced value: `transpiler.numpy`'s function of the name
        (as the transforms read NumPy's functions in transformed code), where it has one."""
        from transpiler import numpy as jnp  # upward: the array library
        module = getattr(func, "__module__", "") or ""
        namespace = next((getattr(jnp, sub) for sub in ("linalg", "fft")
                          if module.endswith(sub) and hasattr(jnp, sub)), jnp)
        ours = getattr(namespace, func.__name__, None)
        if not callable(ours):
            raise self._concrete(f"numpy.{func.__name__}", "use transpiler.numpy (jnp) "
                                 "functions on traced values instead of numpy (np) ones", "array")
        return ours(*args, **kwargs)

    def item(self) -> Any:
        raise self._concrete(".item()", "return the array from the jitted function instead",
                             "float")

    def tolist(self) -> Any:
        raise self._concrete(".tolist()", "return the array from the jitted function instead",
                             "array")


def mlir_location() -> ir.Location:
    loc = user_location()
    if loc is None:
        return ir.Location.unknown()
    return ir.Location.file(loc.file, loc.line, loc.col + 1)


class Trace:
    """Appends operations to one block of the module being built.

    Primitives are pure, so an application identical to an earlier one (same primitive,
    same operands, same parameters) returns the earlier result instead of a second op. This
    is common subexpression elimination at trace time: it removes the forward computations
    that generated derivative code repeats (a callee's ``vjp_*`` recomputes its primal
    output) before IREE sees them. An application whose operands are all known is computed
    here and staged as a constant (constant folding, lowering/fold.py).

    Recomputation (``jax.checkpoint``): the derivative code of a checkpointed function runs
    it again on its arguments behind an optimization barrier, so none of this sharing
    happens and its intermediates are computed twice instead of stored. With a policy
    (``checkpoint_policies.dots_saveable`` ...) each barrier output is `recomputed`, paired
    with the primal pass's value; an operation on such values is paired the same way with
    the primal pass's application, and where the policy saves that primitive the primal
    pass's result is used instead of a second computation: the value is stored.
    """

    def __init__(self, block: ir.Block, parent: "Optional[Trace]" = None,
                 folds: bool = True) -> None:
        self.block = block
        self.parent = parent  # the trace of the enclosing region (control flow), if any
        # Whether operations on known values are folded (regions as their parent does).
        self.folds: bool = folds if parent is None else parent.folds
        self.in_loop = False  # whether this block is (inside) a loop body
        # Values returned as extra (dropped) results of the function: see lax/control.py.
        self.keep_alive: list[Tracer] = [] if parent is None else parent.keep_alive
        # (prim, operands, params) -> result; keeps operands alive. A region sees (and may
        # reuse) what its enclosing blocks computed; what it computes stays its own.
        self.memo: Any = {} if parent is None else ChainMap({}, parent.memo)
        # id(recomputed value) -> (it, the primal pass's value, the checkpoint's policy)
        self.recomputed: dict[int, tuple[Tracer, Any, Any]] = \
            {} if parent is None else parent.recomputed

    def emit(self, prim: Primitive, args: Sequence[Any], avals: Sequence[ShapedArray],
             out_aval: Any, params: dict[str, Any]) -> Any:
        key = _cse_key(prim, args, avals, params)
        if key is not None:
            found = self.memo.get(key)
            if found is not None:
                return found[0]
        primal = self._primal_application(prim, args, avals, params) \
            if self.recomputed else None
        if primal is not None and primal[1](prim, *avals, **params):
            return self.saved(*primal)  # saved by the policy: the primal pass's value
        out = self._fold(prim, args, avals, out_aval, params) if self.folds else None
        if out is None:
            out = self._emit(prim, args, avals, out_aval, params)
        if primal is not None:
            self.mark_recomputed(out, *primal)
        if key is not None:
            self.memo[key] = (out, args)  # `args` pins the operands whose ids are in `key`
        return out

    def mark_recomputed(self, value: Any, primal: Any, policy: Any) -> None:
        """`value` (a Tracer, or a tuple of them) computes again what `primal` is, under
        the checkpoint `policy`."""
        pairs = zip(value, primal) if isinstance(value, tuple) else [(value, primal)]
        for tracer, primal_tracer in pairs:
            if isinstance(tracer, Tracer):
                self.recomputed[id(tracer)] = (tracer, primal_tracer, policy)

    def saved(self, primal: Any, policy: Any) -> Any:
        """The primal pass's `primal` (a Tracer or a tuple of them) as a recomputation
        reads it when `policy` saves it: stored, behind a barrier, so that what the
        recomputation computes from it is computed again and not shared with the primal
        pass (which would store it too, more than the policy says)."""
        if isinstance(primal, tuple):
            return tuple(self.saved(p, policy) for p in primal)
        if not isinstance(primal, Tracer):
            return primal
        with ir.Location.unknown(), ir.InsertionPoint(self.block):
            value = ir.Operation.create("stablehlo.optimization_barrier",
                                        results=[primal.value.type],
                                        operands=[primal.value]).result
        out = Tracer(self, value, primal.aval)
        self.mark_recomputed(out, primal, policy)
        return out

    def primal_of(self, value: Any) -> Optional[tuple[Any, Any]]:
        """(the primal pass's value, the policy) of a recomputed value; None for others."""
        entry = self.recomputed.get(id(value)) if isinstance(value, Tracer) else None
        return None if entry is None else (entry[1], entry[2])

    def _primal_application(self, prim: Primitive, args: Sequence[Any],
                            avals: Sequence[ShapedArray], params: dict[str, Any]
                            ) -> Optional[tuple[Any, Any]]:
        """For an application on recomputed values: the primal pass's result of it and the
        policy, when the primal pass applied it (else None)."""
        policy, primal_args = None, []
        for a in args:
            found = self.primal_of(a)
            if found is not None:
                policy = policy or found[1]
            primal_args.append(a if found is None else found[0])
        if policy is None:
            return None
        key = _cse_key(prim, primal_args, avals, params)
        found = self.memo.get(key) if key is not None else None
        return None if found is None else (found[0], policy)

    def _fold(self, prim: Primitive, args: Sequence[Any], avals: Sequence[ShapedArray],
              out_aval: Any, params: dict[str, Any]) -> Any:
        """The result of `prim` when folding knows it (see lowering/fold.py), else None."""
        if any(isinstance(a, Tracer) and not self.sees(a) for a in args):
            return None  # a tracer of another trace: _emit says so
        knowns = [a.known if isinstance(a, Tracer) else core.to_numpy(a, aval)
                  for a, aval in zip(args, avals)]
        if all(k is not None for k in knowns):
            results = fold.evaluate(prim, cast(list[np.ndarray], knowns), out_aval, params)
        elif (chosen := fold.chosen_operand(prim, knowns, avals, out_aval)) is not None:
            chosen_known = knowns[chosen]
            if chosen_known is None:
                return args[chosen]
            results = [chosen_known]
        else:
            found = fold.known_without_operands(prim, args, avals, out_aval)
            results = None if found is None else [found]
        if results is None:
            return None
        if not all(map(fold.stageable_as_constant, results)):
            outs = self._emit(prim, args, avals, out_aval, params)
            for tracer, value in zip(outs if prim.multiple_results else [outs], results):
                tracer.known = value
            return outs
        outs = [self.constant(value, aval) for value, aval in zip(
            results, out_aval if prim.multiple_results else [out_aval])]
        return tuple(outs) if prim.multiple_results else outs[0]

    def sees(self, tracer: Tracer) -> bool:
        """Whether `tracer` is a value of this block or of one enclosing it."""
        return tracer.trace is self or self.encloses(tracer.trace)

    def constant(self, value: np.ndarray, aval: ShapedArray) -> Tracer:
        """A Tracer of a known value, staged when first used (`Tracer.value`)."""
        return Tracer(self, None, aval, known=value)

    def stage_constant(self, value: np.ndarray, aval: ShapedArray) -> ir.Value:
        """`value` as a constant at the start of this block, where every later use of it,
        in this block or a region nested in it, sees it; a splat as one element broadcast."""
        with ir.Location.unknown(), ir.InsertionPoint.at_block_begin(self.block):
            ctx = LoweringContext([], aval)
            if fold.is_splat(value) and value.size:
                return ctx.constant(fold.first_element(value), aval.dtype, aval.shape)
            return ctx.constant(value, aval.dtype)

    def _emit(self, prim: Primitive, args: Sequence[Any], avals: Sequence[ShapedArray],
              out_aval: Any, params: dict[str, Any]) -> Any:
        if prim.composite is not None:  # staged as the primitives its composite binds
            staged = prim.composite(*args, **params)
            if staged is not NotImplemented:
                return staged
        with mlir_location(), ir.InsertionPoint(self.block):
            operands = [self.operand(a, aval) for a, aval in zip(args, avals)]
            ctx = LoweringContext(avals, out_aval)
            assert prim.lower is not None  # (a composite declines only with a lowering)
            out = prim.lower(ctx, *operands, **params)
        if prim.multiple_results:
            return tuple(Tracer(self, v, av) for v, av in zip(out, out_aval))
        return Tracer(self, out, out_aval)

    def operand(self, value: Any, aval: ShapedArray) -> ir.Value:
        """The SSA value of an operand: a Tracer's own, or a new constant."""
        if isinstance(value, Tracer):
            if not self.sees(value):
                raise located(UnexpectedTracerError, f"a traced value ({value.aval}) escaped "
                              "from the jit trace that created it and was used in another",
                              "return values from jitted functions instead of storing "
                              "tracers in globals or closures")
            return value.value
        array = core.to_numpy(value, aval)
        with ir.InsertionPoint(self.block):
            return LoweringContext([], aval).constant(array, aval.dtype)

    def encloses(self, other: "Trace") -> bool:
        """Whether `other` is the trace of a block enclosing this one (its values are
        visible here: regions capture them implicitly)."""
        trace = self.parent
        while trace is not None:
            if trace is other:
                return True
            trace = trace.parent
        return False


# Constants up to this many elements take part in trace-time CSE (keyed by their bytes).
_CSE_CONSTANT_SIZE = 64


def _cse_key(prim: Primitive, args: Sequence[Any], avals: Sequence[ShapedArray],
             params: dict[str, Any]) -> Any:
    """A hashable key identifying this application, or None when it cannot be shared."""
    try:
        operands = tuple(_operand_key(a, aval) for a, aval in zip(args, avals))
        key = (prim, operands, tuple(sorted((k, _param_key(v)) for k, v in params.items())))
        hash(key)
    except _NoKey:
        return None
    except TypeError:  # an unhashable parameter
        return None
    return key


class _NoKey(Exception):
    pass


def _operand_key(value: Any, aval: ShapedArray) -> Any:
    if isinstance(value, Tracer):
        return id(value)
    if isinstance(value, (bool, int, float, complex)):
        return (type(value), repr(value), aval)  # repr: 0.0 and -0.0 differ
    array = np.asarray(value)
    if array.size > _CSE_CONSTANT_SIZE or array.dtype == object:
        raise _NoKey
    return (aval, array.tobytes())


def _param_key(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_param_key(v) for v in value))
    if isinstance(value, np.ndarray):
        raise _NoKey
    if isinstance(value, (float, complex, np.floating)):
        return (type(value), repr(value))
    return (type(value), value)
