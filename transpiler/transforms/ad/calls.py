"""Run-time call dispatch of generated reverse-mode code: the cotangents of a call whose
callee is only known when it runs (``ad.vjp_call(fn, args, kwargs, g)``), and what that
needs -- which arguments carry a derivative, a callee's active parameters, a primitive's
rule as a function, a custom VJP's backward pass, the functional form of a function that
updates arrays in place.

The callee decides the rule: a ``functools.partial``, a NamedTuple class, a `custom_vjp`
function, a run-time transform (``vmap(f)``), a ``lax`` control-flow function, a closure,
a primitive, or a readable Python function whose reverse-mode code is generated for the
arguments that carry a derivative; anything else is traced.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import functools
import inspect
import types

from transpiler.rewritten import with_item
from transpiler import dtypes
from transpiler.errors import TranspileError, user_location
from transpiler.primitives.core import Primitive, abstractify
from transpiler.transforms.ad.cotangents import differentiable_value
from transpiler.transforms.ad.templates import evaluate_vjp, vjp_rule_function
from transpiler.transforms.common import partials, traced
from transpiler.transforms.common.arguments import positional_names
from transpiler.transforms.common.closures import (active_names, arg_names, closure_params,
                                                   closure_vjp, derivative_closure, free_bars,
                                                   free_names, free_values, is_closure)
from transpiler.transforms.common.generated import Staged, closed_over, converted, for_jit, target
from transpiler.transforms.common.signature import source_signature, star_name
from transpiler.transforms.common.traced import holds_arrays, readable
from transpiler.transforms.forward.custom_jvp import CustomJVP
from transpiler.transforms.reverse.custom_vjp import CustomVJP
from transpiler.transforms.reverse.generate import vjp_function


_IN_PLACE: dict[Any, bool] = {}


def needs_primal(fn: Any) -> bool:
    """Whether the user's function `fn` updates arrays in place (``y[0] = v``): Python
    cannot run it as is on immutable arrays, so reverse mode's forward pass calls
    ``primal(fn)`` instead (static: the answer depends on the source only)."""
    code = getattr(fn, "__code__", None)
    if not isinstance(fn, types.FunctionType) or code is None:
        return False
    known = _IN_PLACE.get(code)
    if known is None:
        # libcst stays unloaded until a function is read (generated code runs without it)
        from transpiler.frontend import is_library, read_function
        from transpiler.frontend.fence import updates_in_place  # lazy: as above (libcst)
        try:
            known = not is_library(fn) and readable(fn) and \
                updates_in_place(read_function(fn)[0].func)
        except TranspileError:  # code no transform reads (NumPy's own np.eye ...): as it is
            known = False
        _IN_PLACE[code] = known
    return known


def primal(fn: Any) -> Any:
    """`fn` as the transforms rewrite it (its in-place updates functional): its reverse-mode
    code with nothing differentiated, which computes the value alone."""
    _, generated = vjp_function(fn, frozenset(), False)
    return functools.partial(_value_of, for_jit(generated))


def _value_of(generated: Any, *args: Any, **kwargs: Any) -> Any:
    return generated(*args, **kwargs)[0]


def unbound(obj: Any, name: str) -> Any:
    """The function behind ``obj.<name>(...)`` that takes `obj` first: a method written in a
    Python class (so ``m.loss(w)`` is differentiated as ``Model.loss(m, w)``)."""
    attr = inspect.getattr_static(obj, name, None)
    library = type(obj).__module__.split(".")[0] == "transpiler" and not getattr(
        type(obj), "methods_differentiable", False)  # (the library's methods have rules)
    if isinstance(attr, types.FunctionType) and not library:
        return attr
    if isinstance(obj, (str, bytes, int)):  # ``k.startswith("w")`` on a dict's key: static
        return getattr(type(obj), name)
    if isinstance(obj, types.ModuleType):  # ``lax.sin(x)`` with the module a parameter
        return functools.partial(_without_module, getattr(obj, name))
    raise TranspileError(f"cannot differentiate the method `.{name}()` of a "
                         f"{type(obj).__name__}: it is not a function written in a Python "
                         "class", user_location(),
                         "call the transpiler.numpy function of the same name, or a plain "
                         "function")


def _without_module(fn: Any, module: Any, *args: Any, **kwargs: Any) -> Any:
    """``module.fn(*args)`` called as ``unbound(module, "fn")(module, *args)``."""
    return fn(*args, **kwargs)


def is_namedtuple_class(fn: Any) -> bool:
    return isinstance(fn, type) and issubclass(fn, tuple) and hasattr(fn, "_fields")


def field_cotangents(g: Any, n: int) -> tuple:
    """The cotangents of the `n` positional fields of a NamedTuple whose cotangent is `g`
    (None, or a tuple of the fields' cotangents). Read as code by forward mode, so a
    NamedTuple built in a differentiated function (``EighResult(w, v)``) is a structure
    at any order, not a call traced as an opaque class."""
    if g is None:
        return (None,) * n
    return tuple(g)[:n]


def vjp_call(fn: Any, args: tuple, kwargs: dict, g: Any,
             activity: Optional[Sequence[bool]] = None) -> tuple:
    """Cotangents of ``fn(*args, **kwargs)`` for a callee only known at run time; `activity`
    (from the caller's analysis) marks the arguments that carry a derivative, where not
    all do -- the others are constants to a Python callee even when they hold floats."""
    fn = unstaged(fn)  # jit(f), checkpoint(f): f's derivative (its custom rule included)
    if fn is functools.partial:  # making one, or calling one (transforms/common/partials.py)
        return partials.make_vjp(args, kwargs, g)[0]
    if partials.is_partial(fn):
        return partials.call_vjp(fn, args, kwargs, g)[:-1]
    if is_namedtuple_class(fn) and not kwargs:  # a structure: its fields' cotangents
        return field_cotangents(g, len(args))
    from transpiler.transforms.ad.control import reverse_rule  # (ad.control calls vjp_call)
    if isinstance(fn, CustomVJP):
        return custom_vjp_bwd(fn, args, kwargs, g)
    if getattr(type(fn), "runtime_transform", False):  # vmap(f): vmap of f's VJP
        return fn.vjp(args, kwargs, g)
    rule = reverse_rule(fn)
    if rule is not None:
        return rule(args, kwargs, g)
    if is_closure(fn):
        return closure_vjp(fn, args, kwargs, g)[0]
    if g is None or (isinstance(fn, Primitive) and not fn.differentiable):
        return (None,) * len(args)
    if isinstance(fn, Primitive):
        if fn.vjp is None:
            raise TranspileError(f"the primitive `{fn.name}` has no VJP rule", user_location())
        out = fn(*args, **kwargs)
        rule = vjp_rule(fn, args, kwargs, activity)
        return rule(out, g, *args, **kwargs)
    if not any(differentiable_value(a) for a in args):
        return (None,) * len(args)
    if not isinstance(fn, CustomJVP) and not traced.readable(target(fn)):
        return traced.vjp(fn, args, kwargs, g)  # a builtin, C function, class: traced
    flags = active_flags(args, activity)
    active = active_params(fn, flags)
    _, generated = vjp_function(fn, active, False)
    keyword = getattr(generated, "cotangent_param", "_out_bar")
    bars = for_jit(generated)(*args, **kwargs, **{keyword: g})[1][:len(args)]
    if activity is None:
        return bars
    kept = []  # (loops, not comprehensions: this code is differentiated again)
    for i in range(len(flags)):
        kept.append(bars[i] if flags[i] else None)
    return tuple(kept)


def active_flags(args: tuple, activity: Optional[Sequence[bool]]) -> list:
    """Which run-time arguments carry a derivative: the differentiable ones, of those
    `activity` marks where given."""
    flags = []
    for i in range(len(args)):
        flags.append(differentiable_value(args[i]) and (activity is None or bool(activity[i])))
    return flags


def vjp_call_closure(fn: Any, args: tuple, kwargs: dict, g: Any) -> tuple:
    """`vjp_call`, plus the cotangent of `fn` itself as the last entry: the dict of its
    closure's cotangents (see transforms/common/closures.py), None when `fn` is no closure."""
    fn = unstaged(fn)  # jit(closure): the closure's derivative is what flows
    if g is not None and closed_over(fn) is not None:  # g = grad(closure): its code's, again
        return closed_over_vjp(fn, args, kwargs, g)
    if g is not None and _custom_rule_over_a_closure(fn):
        raise TranspileError(
            f"cannot differentiate {getattr(fn, '__name__', 'a custom_vjp/custom_jvp function')}"
            " with respect to the values its function closes over: its rule defines the "
            "derivative of its arguments only (JAX refuses this for custom_vjp)", user_location(),
            "pass those values as arguments (nondiff_argnums for non-differentiated ones), or "
            "define the function outside the differentiated one")
    if is_closure(fn):
        bars, fn_bar = closure_vjp(fn, args, kwargs, g)
        return (*bars, fn_bar)
    if partials.is_partial(fn):
        return partials.call_vjp(fn, args, kwargs, g)
    if getattr(type(fn), "runtime_transform", False):  # vmap(closure)
        bars, fn_bar = fn.vjp(args, kwargs, g, with_closure=True)
        return (*bars, fn_bar)
    bars = vjp_call(fn, args, kwargs, g)
    if g is not None and holds_arrays(fn):  # a partial or bound method over arrays
        raise TranspileError(
            f"cannot differentiate through {getattr(fn, '__name__', type(fn).__name__)}: "
            "it binds differentiated arrays (a functools.partial or a bound method made "
            "inside the differentiated function), and their derivative would be lost",
            user_location(), "pass those arrays as arguments of the call instead")
    return (*bars, None)


def vjp_call_keywords(fn: Any, args: tuple, kwargs: dict, g: Any) -> tuple:
    """(positional cotangents, dict of keyword cotangents) of ``fn(*args, **kwargs)`` for a
    Python function known at run time whose keyword arguments are differentiated."""
    if fn is functools.partial:  # partial(f, scale=s) (transforms/common/partials.py)
        return partials.make_vjp(args, kwargs, g)
    differentiated = differentiated_keywords(kwargs)
    if g is None or not differentiated and not any(differentiable_value(a) for a in args):
        return (None,) * len(args), {}
    fn_target = target(fn)
    if not traced.readable(fn_target) or is_closure(fn) or \
            getattr(type(fn), "runtime_transform", False):
        raise TranspileError(f"cannot differentiate the keyword arguments "
                             f"({', '.join(sorted(differentiated))}) of a call of "
                             f"{getattr(fn, '__name__', type(fn).__name__)}", user_location(),
                             "pass the differentiated values positionally")
    params = source_signature(fn_target).parameters
    positional = [n for n, p in params.items() if p.kind in (p.POSITIONAL_ONLY,
                                                             p.POSITIONAL_OR_KEYWORD)]
    active = active_params(fn, [differentiable_value(a) for a in args]) | set(differentiated)
    _, generated = vjp_function(fn, frozenset(active), False)
    keyword = getattr(generated, "cotangent_param", "_out_bar")
    result = for_jit(generated)(*args, **kwargs, **{keyword: g})
    bars = result[1]
    kw_bars = dict(result[2]) if len(result) > 2 and isinstance(result[2], dict) else {}
    for k in differentiated:  # (a new dict, not set in place: reverse over reverse reads this)
        if k in positional:
            kw_bars = with_item(kw_bars, k, bars[positional.index(k)])
    return tuple(bars[:len(args)]), kw_bars


def vjp_call_closure_keywords(fn: Any, args: tuple, kwargs: dict, g: Any) -> tuple:
    """(positional cotangents, dict of keyword cotangents, cotangent of `fn`) of
    ``fn(*args, **kwargs)`` for a local function value that carries derivatives (a closure,
    a partial): `vjp_call_keywords` and `vjp_call_closure` in one."""
    fn = unstaged(fn)
    if not is_closure(fn) and not partials.is_partial(fn) and \
            not getattr(type(fn), "runtime_transform", False):
        bars, keyword_bars = vjp_call_keywords(fn, args, kwargs, g)
        return bars, keyword_bars, None
    carried = differentiated_keywords(kwargs)
    if carried and g is not None:
        raise TranspileError(f"cannot differentiate the keyword arguments "
                             f"({', '.join(carried)}) of a call of a function that closes "
                             "over differentiated values", user_location(),
                             "pass the differentiated values positionally")
    result = vjp_call_closure(fn, args, kwargs, g)
    return tuple(result[:-1]), {}, result[-1]


def closed_over_vjp(fn: Any, args: tuple, kwargs: dict, g: Any) -> tuple:
    """(cotangents of `args`..., cotangent of the closure) of a call of ``grad(closure)``
    (a transform whose closure carries derivatives): reverse mode of its closure-converted
    code, whose first parameters are the closed-over values."""
    inner = closed_over(fn)
    free = closure_params(inner)
    names = free_names(free) + arg_names(inner, len(args))
    values = free_values(free, args)
    bars = vjp_call(converted(fn), tuple(values), kwargs, g)
    k = len(free)
    return (*bars[k:], free_bars(free, bars[:k], active_names(names, values)))


def _custom_rule_over_a_closure(fn: Any) -> bool:
    """A custom_vjp/custom_jvp function made from a closure whose values carry a derivative
    (made inside the differentiated function)."""
    return isinstance(fn, (CustomVJP, CustomJVP)) and \
        derivative_closure(getattr(fn, "fun", None)) is not None


def unstaged(fn: Any) -> Any:
    """The function a ``jit`` stages (jit is the identity to differentiation): a closure's
    closed-over values then get their cotangents, not a zero for the opaque wrapper."""
    while isinstance(fn, Staged):
        fn = fn._fun
    return fn


def differentiated_keywords(kwargs: dict) -> list:
    """The keywords whose values carry a derivative, in order (static)."""
    return [k for k, v in kwargs.items() if differentiable_value(v)]


def active_params(fn: Any, active: list) -> frozenset:
    """The parameter names of Python callee `fn` (its own signature, not a wrapped
    function's: the wrapper's code is what is transformed) that the positional arguments
    marked in `active` bind; the ``*args`` name when an active one goes there."""
    params = positional_names(fn)
    names = {n for n, on in zip(params, active) if on}
    if any(active[len(params):]):
        star = star_name(target(fn))
        if star is None:
            raise TranspileError(f"{getattr(fn, '__name__', fn)}() takes {len(params)} "
                                 f"positional arguments but {len(active)} were given",
                                 user_location())
        names.add(star)
    return frozenset(names)


def vjp_rule(fn: Any, args: tuple, kwargs: dict,
             activity: Optional[Sequence[bool]] = None) -> Any:
    """The VJP rule of primitive `fn` for these operands as a Python function
    ``rule(out, out_bar, *args, **params) -> (bar or None per arg)``.

    Rules come from the primitive's template as generated source (see
    `ad.templates.vjp_rule_function`), so a derivative that calls one -- `vjp_call` does, for
    callees known only at run time -- can itself be differentiated. Operands with a
    floating dtype are the active ones, unless `activity` says otherwise. (Static: it
    inspects dtypes only.)"""
    template = fn.vjp
    floating = [dtypes.is_inexact(abstractify(a).dtype) and
                (activity is None or bool(activity[i])) for i, a in enumerate(args)]
    if template.variadic:  # evaluated directly (not differentiable a second time)
        def evaluate(out: Any, g: Any, *operands: Any, **params: Any) -> tuple:
            return tuple(evaluate_vjp(template, list(operands), params, out, g))
        return evaluate
    active = frozenset(op for op, is_float in zip(template.operands, floating) if is_float)
    return vjp_rule_function(template, fn.name, active, tuple(sorted(kwargs)))


def custom_vjp_bwd(fn: Any, args: tuple, kwargs: dict, g: Any) -> tuple:
    """Cotangents of ``fn(*args, **kwargs)`` for a `custom_vjp` function: its fwd rule
    recomputes the residuals, its bwd rule maps ``g`` to one cotangent per positional
    argument (keywords resolved to positions; None at nondiff_argnums and for zeros)."""
    positional = fn.positional(args, kwargs)
    out, residuals = fn.forward(positional)  # also: "no VJP defined" before anything flows
    if g is None:
        return (None,) * len(positional)
    return fn.backward(positional, residuals, out, g)


ELEMENT = object()  # marks the slot of the comprehension's element in map_bar's args


def with_element(args: tuple, x: Any) -> tuple:
    """`args` with the comprehension's element `x` in the ``ELEMENT`` slot (structural:
    vmap moves the companions the same way)."""
    out = []
    for a in args:  # (a loop, not a comprehension: forward mode differentiates it too)
        if a is ELEMENT:
            out.append(x)
        else:
            out.append(a)
    return tuple(out)


def map_bar(fn: Any, xs: Any, g: Any, args: tuple = (ELEMENT,), kwargs: Any = None) -> Any:
    """Cotangent of ``xs`` from ``ys = [fn(..., x, ...) for x in xs]`` with ``ys_bar = g``;
    `args` gives the call's positional arguments with ``ELEMENT`` where ``x`` goes."""
    if g is None:
        return None
    slot = args.index(ELEMENT)
    bars = []
    for x, gi in zip(xs, g):
        call_args = with_element(args, x)
        bars.append(vjp_call(fn, call_args, kwargs or {}, gi)[slot])
    if all(b is None for b in bars):
        return None
    return tuple(bars) if isinstance(xs, tuple) else bars


