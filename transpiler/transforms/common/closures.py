"""Derivatives of functions that close over values (nested ``def``s and lambdas).

A closure is differentiated by *closure conversion*: its free variables
(``co_freevars``) become leading parameters of the generated code, so

* the generated code depends on the code object alone -- a lambda created afresh on every
  call (a loop body, a branch) is transformed once, not once per call;
* derivatives flow into the closed-over values: the cotangent of a function value is a
  dict ``{free variable: cotangent}`` (its tangent, a dict of tangents), which the
  transforms route back to the variables where the ``def`` or ``lambda`` is evaluated.
"""

from __future__ import annotations

import types
from typing import Any, Callable, Optional
from transpiler.transforms.common.signature import source_signature, star_name
from transpiler.primitives.core import Primitive
from transpiler.transforms.common.generated import emit_generated, refuse_rule_code
from transpiler.transforms.reverse.generate import vjp_function
from transpiler.transforms.forward.api import jvp_function
from transpiler.errors import TranspileError, user_location
from transpiler.transforms.common.generated import for_jit
from transpiler.rewritten import with_item

_GENERATED: dict[tuple, tuple[str, Callable]] = {}
_PARSED: dict[Any, Any] = {}


def is_closure(fn: Any) -> bool:
    return isinstance(fn, types.FunctionType) and bool(fn.__code__.co_freevars)


def closure_items(fn: Any) -> list[tuple[str, Any]]:
    """(name, value) of each variable `fn` closes over; None for a cell not yet bound."""
    items = []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            items.append((name, cell.cell_contents))
        except ValueError:  # an empty cell (assigned later in the enclosing function)
            items.append((name, None))
    return items


def derivative_closure(fn: Any) -> Any:
    """`fn` when it is a closure whose closed-over values carry a derivative, else None."""
    return fn if is_closure(fn) and carries_derivative(fn) else None


def carries_derivative(value: Any, depth: int = 0) -> bool:
    """Whether a value can carry a derivative: floating arrays, containers, and functions
    closing over such values."""
    if is_closure(value):
        return depth < 8 and any(carries_derivative(v, depth + 1)
                                 for _, v in closure_items(value))
    if isinstance(value, (tuple, list)):
        return depth < 8 and any(carries_derivative(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return depth < 8 and any(carries_derivative(v, depth + 1) for v in value.values())
    if isinstance(value, float):
        return True
    if isinstance(value, types.ModuleType) or not hasattr(value, "shape"):
        return False  # modules, functions, ints, strings, other objects: constants
    from transpiler.transforms.ad.cotangents import differentiable_value  # cycle: it imports this module
    return differentiable_value(value)


def is_static(value: Any) -> bool:
    """Closed-over values the generated code keeps as constants (by identity): modules,
    classes, primitives, builtins and the library's functions never carry derivatives."""
    from transpiler.frontend import is_library  # lazy: the frontend imports libcst
    return isinstance(value, (types.ModuleType, type, Primitive, types.BuiltinFunctionType)) \
        or (isinstance(value, types.FunctionType) and not value.__code__.co_freevars
            and is_library(value))


def converted(fn: Any) -> tuple[tuple[str, ...], tuple]:
    """The closure's variables that become parameters, and the key of the generated code
    (the code object and the identity of the variables kept as constants)."""
    params, constants = [], []
    for name, value in closure_items(fn):
        if is_static(value):
            constants.append((name, id(value)))
        else:
            params.append(name)
    return tuple(params), (fn.__code__, tuple(constants))


def _parsed(fn: Any, lower_comprehensions: bool = False) -> Any:
    params, key = converted(fn)
    parsed = _PARSED.get((key, lower_comprehensions))
    if parsed is None:
        from transpiler.frontend import parse_function  # lazy: the frontend imports libcst
        parsed = _PARSED[(key, lower_comprehensions)] = parse_function(
            fn, closure_params=params, lower_comprehensions=lower_comprehensions)
    return parsed


def closure_vjp_function(fn: Any, active: frozenset) -> Callable:
    """``vjp_<name>(*free, *args, _out_bar=...)`` for the code of closure `fn`."""
    return _generated(fn, active, "reverse mode")


def closure_jvp_function(fn: Any, active: frozenset) -> Callable:
    """``jvp_<name>(*free, *args, <p>_dot=...)`` for the code of closure `fn`."""
    return _generated(fn, active, "forward mode")


def _generated(fn: Any, active: frozenset, mode: str) -> Callable:
    key = (mode, converted(fn)[1], active)
    hit = _GENERATED.get(key)
    if hit is None:
        refuse_rule_code(fn, mode)
        parsed = _parsed(fn, lower_comprehensions=mode == "vmap")
        if mode == "reverse mode":
            # lazy: the transform classes import libcst (and reach this module: a cycle)
            from transpiler.transforms.reverse.transform import ReverseAD
            generated = ReverseAD(parsed, active, False, vjp_function).run()
        elif mode == "vmap":
            # lazy: as above (libcst; a cycle)
            from transpiler.frontend import is_library
            from transpiler.transforms.batch.transform import Vectorize  # lazy: as above
            generated = Vectorize(parsed, active, library=is_library(fn)).run()
        else:
            # lazy: as above (libcst; a cycle)
            from transpiler.frontend import is_library
            from transpiler.transforms.forward.transform import ForwardAD  # lazy: as above
            generated = ForwardAD(parsed, active, jvp_function, library=is_library(fn)).run()
        function = emit_generated(fn, parsed, generated, mode)
        # the keyword of the output cotangent, or the suffix of the tangents
        setattr(function, {"reverse mode": "cotangent_param", "vmap": "batch_suffix"}.get(
            mode, "tangent_suffix"), generated.out_bar)
        hit = _GENERATED[key] = (generated.func.name.value, function)
    return hit[1]


def closure_params(fn: Any) -> list[tuple[str, Any]]:
    """(name, value) of the closed-over variables the generated code takes as parameters."""
    params = set(converted(fn)[0])
    free = []
    for n, v in closure_items(fn):  # (a loop: forward mode differentiates it, for second order)
        if n in params:
            free.append((n, v))
    return free


def arg_names(fn: Any, count: int) -> list[str]:
    """The parameter each of `count` positional arguments binds (the closure's own
    signature, not a wrapped function's); arguments past them, its ``*args`` name."""
    params = list(source_signature(fn).parameters.values())
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(names) < count:
        star = star_name(fn)
        if star is None:
            raise TranspileError(f"cannot differentiate a call of {fn.__name__} with {count} "
                                 f"positional arguments: it takes {len(names)}", user_location())
        return names + [star] * (count - len(names))
    return names[:count]


def closure_vjp(fn: Any, args: tuple, kwargs: dict, g: Any) -> tuple[tuple, Optional[dict]]:
    """Cotangents of ``fn(*args, **kwargs)`` with output cotangent `g` for closure `fn`:
    one per positional argument, and the dict of its closure's (None: nothing flowed)."""
    if g is None:
        return (None,) * len(args), None
    free = closure_params(fn)
    names = free_names(free) + arg_names(fn, len(args))
    values = free_values(free, args)
    active = active_names(names, values)
    if not active:
        return (None,) * len(args), None
    generated = closure_vjp_function(fn, active)
    keyword = getattr(generated, "cotangent_param", "_out_bar")
    _, bars = for_jit(generated)(*values, **kwargs, **{keyword: g})
    k = len(free)
    return tuple(bars[k:k + len(args)]), free_bars(free, bars[:k], active)


# Each a helper the transforms differentiate as the linear map it is (classify: a closure's
# derivative is the dict of its cells' derivatives; second order runs through these).

def free_names(free: list) -> list:
    """The names of `closure_params`' pairs (static)."""
    return [n for n, _ in free]


def free_values(free: list, args: tuple = ()) -> list:
    """The values of `closure_params`' pairs, then `args`: what the generated code of the
    closure is called with."""
    return [v for _, v in free] + list(args)


def free_values_tangent(free_dot: Optional[list], args_dot: Optional[tuple], free: list,
                        args: tuple) -> list:
    """The tangent of ``free_values(free, args)``."""
    return ([None] * len(free) if free_dot is None else [d for _, d in free_dot]) + \
        ([None] * len(args) if args_dot is None else list(args_dot))


def active_names(names: list, values: list) -> frozenset:
    """The names whose values carry a derivative (static)."""
    return frozenset(n for n, v in zip(names, values) if carries_derivative(v))


def free_params_tangent(free: list, fn_dot: Optional[dict]) -> list:
    """The tangent of `closure_params(fn)` from `fn`'s (the dict of its cells' tangents)."""
    return [(None, None if fn_dot is None else fn_dot.get(n)) for n, _ in free]


def free_bars(free: list, bars: Any, active: frozenset) -> Optional[dict]:
    """The closure's derivative: its cells' cotangents by name (None: nothing flowed)."""
    fn_bar = {n: b for (n, _), b in zip(free, bars) if n in active and b is not None}
    return fn_bar or None


# Their transposes, which reverse mode over generated code calls (second derivatives through
# lax control flow: reverse/adjoints.py's linear_helper_rule).

def free_params_bar(free: list, bar: Any) -> Optional[dict]:
    """The cotangent of `fn` (the dict of its cells') from that of ``closure_params(fn)``."""
    if bar is None:
        return None
    fn_bar = {}
    for (n, _), pair in zip(free, bar):
        if pair is not None and pair[1] is not None:
            fn_bar[n] = pair[1]
    return fn_bar or None


def free_values_bar(free: list, bar: Any) -> tuple[Optional[list], Optional[tuple]]:
    """The cotangents of `free` and `args` from that of ``free_values(free, args)``."""
    if bar is None:
        return None, None
    k = len(free)
    return [(None, b) for b in bar[:k]], tuple(bar[k:])


def free_bars_bar(free: list, bar: Optional[dict]) -> Optional[list]:
    """The cotangent of `bars` from that of ``free_bars(free, bars, active)``."""
    if bar is None:
        return None
    return [bar.get(n) for n, _ in free]


def closure_jvp(fn: Any, primals: tuple, tangents: tuple, kwargs: dict,
                fn_dot: Optional[dict], kwargs_dot: Optional[dict] = None) -> tuple[Any, Any]:
    """``(out, out_dot)`` of ``fn(*primals, **kwargs)`` for closure `fn` whose closed-over
    values have the tangents in `fn_dot` (and its keyword arguments those in `kwargs_dot`)."""
    # (Loops over indices and helpers with rules, not comprehensions or in-place dict
    # updates: the transforms read this code for jacrev(jacfwd(f)) through a lax loop.)
    free = closure_params(fn)
    keywords = kwargs_dot or {}
    keys = list(keywords)
    names = free_names(free) + arg_names(fn, len(primals)) + keys
    values = free_values(free, primals)
    dots = []
    cells = cell_tangents(free, fn_dot)
    for i in range(len(cells)):
        dots.append(cells[i])
    for i in range(len(tangents)):
        dots.append(tangents[i])
    for i in range(len(keys)):
        dots.append(keywords[keys[i]])
    active = given_names(names, dots)
    if not active:
        return fn(*primals, **kwargs), None
    generated = closure_jvp_function(fn, active)
    suffix = tangent_suffix(generated)
    star = star_name(fn)
    given: dict[str, Any] = {}
    star_dots = []  # *args: every argument's tangent, zeros as None
    for i in range(len(names)):
        if names[i] == star:
            star_dots.append(dots[i])
        elif dots[i] is not None:
            given = with_item(given, f"{names[i]}{suffix}", dots[i])
    if star in names:
        given = with_item(given, f"{star}{suffix}", tuple(star_dots))
    return for_jit(generated)(*values, **kwargs, **given)


def cell_tangents(free: list, fn_dot: Optional[dict]) -> list:
    """The tangents of `closure_params`' cells, in order, from `fn`'s (the dict of its
    cells'); None where none is given. (Linear: its transpose is `free_bars`.)"""
    return [None if fn_dot is None else fn_dot.get(n) for n, _ in free]


def given_names(names: list, dots: list) -> frozenset:
    """The names whose tangents are given (static)."""
    return frozenset(n for n, d in zip(names, dots) if d is not None)


def tangent_suffix(generated: Any) -> str:
    """The suffix of a generated jvp's tangent keywords (static)."""
    return getattr(generated, "tangent_suffix", "_dot")
