"""``_cf``: what code converted by the control-flow transform (`autograph/convert.py`) calls.

Each construct dispatches at run time on its condition or bounds:

- a plain Python value or an eager array: plain Python (``true_fn(*state) if test else
  false_fn(*state)``, a Python ``while``, ``for i in range(...)``), so a converted function
  runs eagerly exactly like the original, and under `jit` a static condition or a static
  ``range`` is specialized at trace time (a static ``for`` of 4 iterations unrolls);
- a `Tracer`: ``lax.cond`` / ``lax.while_loop`` / ``lax.fori_loop``, after checking the
  carried state (`autograph/state.py`) so that errors name the user's variable and lines.
  A ``while`` whose condition is concrete at first runs Python iterations until it
  becomes traced, then continues as one ``lax.while_loop`` from that state.

Calls to the user's functions go through `call` (AutoGraph's ``converted_call``), which
converts a callee with control flow once (cached per function) and calls anything else
as it is. `convert(fn)` is the public entry point: the converted function, with ``.source``;
``jit(f).converted_source`` shows the code `jit` traces.
"""

from __future__ import annotations

import dis
import functools
import operator
import sys
import types
import weakref
from typing import Any, Callable, Optional, Sequence

from transpiler.codegen import disk_cache
from transpiler.errors import TracerError, TranspileError
from transpiler.primitives.core import Tracer
from transpiler.transforms.autograph.errors import append_error, predicate_error, step_error
from transpiler.transforms.autograph.state import (
    ConstructInfo,
    Undefined,
    arrays,
    conform,
    describe_all,
    has_arrays,
    join_branches,
    join_loop,
    materialize,
    rebuild,
)
from transpiler import lax
from transpiler import numpy as jnp
from transpiler.transforms.reverse.api import Transformed
from transpiler.primitives import elementwise as ew

State = Sequence[Any]

__all__ = ["ConstructInfo", "Undefined", "if_stmt", "while_stmt", "for_range", "if_exp",
           "and_", "or_", "not_", "call", "bound", "convert", "convert_for_jit"]


def _lax() -> Any:
    return lax


# --- if ------------------------------------------------------------------------------------

def if_stmt(test: Any, true_fn: Callable, false_fn: Callable, state: State,
            info: ConstructInfo) -> tuple:
    """``if test:`` with branches ``fn(*state) -> outs``; `lax.cond` when `test` is traced."""
    if not isinstance(test, Tracer):
        return true_fn(*state) if test else false_fn(*state)
    return _traced_if(test, true_fn, false_fn, tuple(state), info)


def _traced_if(test: Any, true_fn: Callable, false_fn: Callable, state: tuple,
               info: ConstructInfo) -> tuple:
    lax = _lax()
    pred = _predicate(test, info)
    if info.appends:
        raise append_error(info, info.appends[0])
    plan = join_branches(lax.probe(true_fn, *state), lax.probe(false_fn, *state), info)
    if not has_arrays(plan):  # nothing the branches compute is used afterwards
        return rebuild([], plan)

    def branch(fn: Callable) -> Callable[[], list]:
        return lambda: conform(fn(*state), plan)

    return rebuild(lax.cond(pred, branch(true_fn), branch(false_fn)), plan)


def if_exp(test: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any],
           info: ConstructInfo) -> Any:
    """``a if test else b`` (``true_fn() if test else false_fn()``)."""
    if not isinstance(test, Tracer):
        return true_fn() if test else false_fn()
    return _traced_if(test, lambda: (true_fn(),), lambda: (false_fn(),), (), info)[0]


def _predicate(test: Any, info: ConstructInfo) -> Any:
    """A traced condition as a boolean scalar (Python truthiness: nonzero is true)."""
    aval = test.aval if isinstance(test, Tracer) else None
    if aval is None:
        return test
    if aval.shape != ():
        raise predicate_error(info, aval)
    if aval.dtype.kind != "b":
        return ew.not_equal(test, 0)
    return test


# --- while ---------------------------------------------------------------------------------

def while_stmt(cond_fn: Callable, body_fn: Callable, state: State,
               info: ConstructInfo) -> tuple:
    """``while cond_fn(*state): state = body_fn(*state)``; Python iterations while the
    condition is concrete, then one `lax.while_loop` once it is traced."""
    state = tuple(state)
    while True:
        test = cond_fn(*state)
        if isinstance(test, Tracer):
            return _traced_loop(cond_fn, body_fn, state, info)
        if not test:
            return state
        state = tuple(body_fn(*state))


def _loop_plan(body: Callable, state: tuple, info: ConstructInfo) -> list:
    """The carried state one more iteration keeps: weak types promoted to a fixpoint."""
    if info.appends:
        raise append_error(info, info.appends[0])
    lax = _lax()
    plan = describe_all(state)
    for _ in range(len(plan) + 2):
        new = join_loop(plan, lax.probe(body, *materialize(state, plan)), info)
        if new == plan:
            return plan
        plan = new
    return plan


def _traced_loop(cond_fn: Callable, body_fn: Callable, state: tuple,
                 info: ConstructInfo) -> tuple:
    lax = _lax()
    plan = _loop_plan(body_fn, state, info)
    init = arrays(materialize(state, plan), plan)

    def cond(carry: list) -> Any:
        return _predicate(cond_fn(*rebuild(carry, plan)), info)

    def body(carry: list) -> list:
        return conform(body_fn(*rebuild(carry, plan)), plan)

    return rebuild(lax.while_loop(cond, body, init), plan)


# --- for i in range(...) -------------------------------------------------------------------

def for_range(start: Any, stop: Any, step: Any, body_fn: Callable, state: State,
              info: ConstructInfo) -> tuple:
    """``for i in range(start, stop, step): state = body_fn(i, *state)``; one
    `lax.fori_loop` when a bound is traced, a Python loop (unrolled under jit) otherwise."""
    state = tuple(state)
    if not any(isinstance(b, Tracer) for b in (start, stop, step)):
        for i in range(operator.index(start), operator.index(stop), operator.index(step)):
            state = tuple(body_fn(i, *state))
        return state
    if isinstance(step, Tracer):
        raise step_error(info)
    step = operator.index(step)
    if step == 0:
        raise TranspileError("range() arg 3 must not be zero", info.loc)
    lower, upper = start, stop
    if step != 1:  # iterate k over the trip count; the index is start + k * step
        lower, upper = 0, jnp.maximum((stop - start + step - (1 if step > 0 else -1)) // step, 0)

    def index(k: Any) -> Any:
        return k if step == 1 else start + k * step

    first = jnp.asarray(lower, dtype=jnp.int32) if not isinstance(lower, Tracer) else lower
    plan = _loop_plan(lambda *s: body_fn(index(first), *s), state, info)
    init = arrays(materialize(state, plan), plan)

    def body(k: Any, carry: list) -> list:
        return conform(body_fn(index(k), *rebuild(carry, plan)), plan)

    return rebuild(_lax().fori_loop(lower, upper, body, init), plan)


# --- and / or / not ------------------------------------------------------------------------

def not_(value: Any) -> Any:
    """``not value``; elementwise on a traced value."""
    if isinstance(value, Tracer):
        return jnp.logical_not(value)
    return not value


def and_(*operands: Callable[[], Any]) -> Any:
    """``a and b and ...`` with lazy operands; once a value is traced, the rest are all
    evaluated and combined with ``logical_and``."""
    return _bool_op(operands, stop_on=False)


def or_(*operands: Callable[[], Any]) -> Any:
    """``a or b or ...`` with lazy operands (see `and_`)."""
    return _bool_op(operands, stop_on=True)


def _bool_op(operands: Sequence[Callable[[], Any]], stop_on: bool) -> Any:
    value = operands[0]()
    for operand in operands[1:]:
        if isinstance(value, Tracer):
            combine = jnp.logical_or if stop_on else jnp.logical_and
            value = combine(value, operand())
        elif bool(value) == stop_on:
            return value
        else:
            value = operand()
    return value


def bound(scope: dict) -> dict:
    """``locals()`` without the variables that are still `Undefined` (generated code reads
    a loop iteration's locals with ``ad.defined(locals(), names)``)."""
    return {k: v for k, v in scope.items() if not isinstance(v, Undefined)}


# --- calls ---------------------------------------------------------------------------------

# function -> (what its free names were bound to, its converted version): converted again
# when a global it reads is rebound or first defined (jit traces again then, _bindings)
_CONVERTED: "weakref.WeakKeyDictionary[Callable, tuple[tuple, Callable]]" = \
    weakref.WeakKeyDictionary()
_NEEDS: "weakref.WeakKeyDictionary[Callable, bool]" = weakref.WeakKeyDictionary()
_HAS_CONTROL_FLOW: dict[types.CodeType, bool] = {}
# Why a function was called unconverted (conversion raised): function -> the error.
FAILURES: "weakref.WeakKeyDictionary[Callable, TranspileError]" = weakref.WeakKeyDictionary()
# What conversion rewrites: control flow, and element updates (``y[i] = v``, canonicalized
# to ``y = y.at[i].set(v)`` on arrays the function makes)
_BRANCH_OPS = frozenset(op for name, op in dis.opmap.items()
                        if name.startswith(("POP_JUMP", "JUMP_IF", "FOR_ITER", "JUMP_BACKWARD",
                                            "STORE_SUBSCR")))
_SCANNED_ITEMS = 64
_NOT_CONVERTED = "Python control flow was not converted to lax control flow in"
_FOREIGN = frozenset({"numpy", "scipy", "jax", "jaxlib", "iree", "libcst", "runtime"})


def call(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, through `fn`'s converted version when it has control flow."""
    return callee(fn)(*args, **kwargs)


def callee(fn: Any) -> Callable:
    """What converted code calls for `fn`: its converted version, or `fn` itself."""
    if type(fn) is types.FunctionType:
        converted = _converted(fn)
        if converted is not None:
            return converted
        return _convert_or_self(fn) if needs_conversion(fn) else fn
    if _is_transformed(fn):
        converted = _converted(fn)
        if converted is None:
            converted = _convert_transformed(fn)
            _CONVERTED[fn] = (disk_cache.bindings(fn), converted)
        return converted
    if isinstance(fn, functools.partial) and needs_conversion(fn.func):
        return functools.partial(callee(fn.func), *fn.args, **fn.keywords)
    if isinstance(fn, types.MethodType) and needs_conversion(fn.__func__):
        return types.MethodType(callee(fn.__func__), fn.__self__)
    return fn


def is_user_function(fn: Any) -> bool:
    """A Python function of the user's (not transpiler's own, NumPy's or the stdlib's)."""
    if type(fn) is not types.FunctionType or getattr(fn, "_cf_converted", False):
        return False
    root = (getattr(fn, "__module__", None) or "").split(".")[0]
    return root != "transpiler" and root not in _FOREIGN and root not in sys.stdlib_module_names


def needs_conversion(fn: Any) -> bool:
    """Whether `fn` has ``if``/``while``/``for`` (or calls a function of the user's that
    has): a bytecode scan, cached; converting costs a libcst parse, skipping it costs none."""
    if _is_transformed(fn):
        return True
    if isinstance(fn, functools.partial):
        return needs_conversion(fn.func)
    if isinstance(fn, types.MethodType):
        return needs_conversion(fn.__func__)
    if not is_user_function(fn):
        return False
    known = _NEEDS.get(fn)
    if known is not None:
        return known
    _NEEDS[fn] = False  # while deciding: recursion does not by itself need conversion
    result = _has_control_flow(fn.__code__) or any(
        needs_conversion(g) for g in _referenced(fn))
    _NEEDS[fn] = result
    return result


def _has_control_flow(code: types.CodeType) -> bool:
    found = _HAS_CONTROL_FLOW.get(code)
    if found is None:
        found = _HAS_CONTROL_FLOW[code] = any(op in _BRANCH_OPS for op in code.co_code[::2])
    return found


def _referenced(fn: types.FunctionType) -> list[Any]:
    """The functions `fn` may call by a global or closed-over name (or that a list, tuple or
    dict so named holds)."""
    values = [fn.__globals__.get(name) for name in fn.__code__.co_names]
    for cell in fn.__closure__ or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:
            continue
    out: list[Any] = []
    for value in values:
        items = value.values() if isinstance(value, dict) else value if isinstance(
            value, (list, tuple)) else (value,)
        if len(items) <= _SCANNED_ITEMS:  # a table of functions, not a data list
            out.extend(item for item in items
                       if type(item) is types.FunctionType or _is_transformed(item))
    return out


def _is_transformed(fn: Any) -> bool:
    return isinstance(fn, Transformed)


def _convert_transformed(fn: Any) -> Callable:
    """A grad / value_and_grad: its generated wrapper, whose calls into the generated
    derivative code go through `call` (so that code is converted too)."""
    try:
        wrapper = fn.differentiable()
    except TranspileError as error:
        FAILURES[fn] = error
        return fn
    return _convert_or_self(wrapper)


def _convert_or_self(fn: Callable) -> Callable:
    """`fn` converted, or `fn` itself (recorded in `FAILURES`) when its source cannot be
    converted (no source, syntax the frontend rejects): its Python control flow then runs
    as it is, which works whenever that control flow is on static values."""
    try:
        return convert(fn)
    except TranspileError as error:
        FAILURES[fn] = error
        unconverted = _unconverted(fn, error)
        _CONVERTED[fn] = (disk_cache.bindings(fn), unconverted)
        return unconverted


def _unconverted(fn: Callable, why: TranspileError) -> Callable:
    """`fn` as it is; a `TracerError` it raises says why its control flow is not converted."""
    @functools.wraps(fn)
    def call_unconverted(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TracerError as error:
            if _NOT_CONVERTED in error.hint:
                raise
            note = f"{_NOT_CONVERTED} `{getattr(fn, '__name__', fn)}`: {why.message}"
            raise type(error)(error.message, error.loc, f"{error.hint}\n  ({note})"
                              ).with_traceback(error.__traceback__) from None

    call_unconverted._cf_converted = True  # type: ignore[attr-defined]
    return call_unconverted


def convert(fn: Callable) -> Callable:
    """`fn` with its ``if``/``while``/``for`` converted (cached); the result has ``.source``
    and runs eagerly like `fn`. Raises `TranspileError` when `fn` cannot be converted."""
    if getattr(fn, "_cf_converted", False):
        return fn
    converted = _converted(fn)
    if converted is None:
        from transpiler.transforms.autograph.cache import converted_function  # cycle: it imports this module
        converted = converted_function(fn)
        converted._cf_converted = True  # type: ignore[attr-defined]
        _CONVERTED[fn] = (disk_cache.bindings(fn), converted)
    return converted


def _converted(fn: Callable) -> Optional[Callable]:
    """`fn`'s converted version, if made while its free names were bound as they are now
    (its generated code holds what they were bound to then)."""
    entry = _CONVERTED.get(fn)
    if entry is None or entry[0] != disk_cache.bindings(fn):
        return None
    return entry[1]


def convert_for_jit(fun: Callable) -> Callable:
    """The function `jit` traces for `fun`: converted when it (or a user function it
    calls) has control flow, a grad/value_and_grad through its generated wrapper, partials
    and bound methods through their function; `fun` itself otherwise (and then libcst is
    not imported)."""
    return callee(fun)
