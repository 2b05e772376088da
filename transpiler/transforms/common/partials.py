"""``functools.partial`` objects made inside transformed code, binding values that carry a
derivative or a batch axis (``act = partial(scaled_tanh, scale=s)``, then ``act(h)``).

A partial is data: its function, its bound positional arguments and its bound keywords.
Its derivative (tangent or cotangent) and its batch axes have that shape too, as the
triple ``(args, keywords, function)``: a tuple with one entry per bound argument, a dict
with one per bound keyword (None where nothing flows), and the function's own (a
closure's: the dict of its cells', see closures.py; None for a plain function). Making a
partial packs its arguments' and its function's into the triple; calling one unpacks it
and calls the function with the bound arguments first, as ``functools.partial`` does. A
partial of a partial is flattened by Python itself; its derivative is split back between
the two where it was made.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

Pair = tuple  # (bound arguments' derivatives, dict of the bound keywords', the function's)


def is_partial(fn: Any) -> bool:
    return isinstance(fn, functools.partial)


def bound(fn: functools.partial, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The arguments ``fn(*args, **kwargs)`` calls ``fn.func`` with."""
    return (*fn.args, *args), {**fn.keywords, **kwargs}


def pair(fn: functools.partial, derivative: Optional[Pair]) -> Pair:
    """`derivative` of partial `fn`, with an entry for each bound argument and keyword."""
    if derivative is None:
        return (None,) * len(fn.args), {}, None
    return derivative


def _split(func: Any, func_derivative: Any, args: tuple, kwargs: dict) -> Pair:
    """The derivative of ``partial(func, *args, **kwargs)`` from those of its parts, before
    Python flattens a partial `func` into it: `func`'s own bound arguments first."""
    if is_partial(func):
        inner_args, inner_kwargs, inner_func = pair(func, func_derivative)
        return (*inner_args, *args), {**inner_kwargs, **kwargs}, inner_func
    return tuple(args), dict(kwargs), func_derivative


# --- forward mode (ad.forward.jvp_call) --------------------------------------------

def make_jvp(primals: tuple, tangents: tuple, kwargs: dict, kwargs_dot: dict) -> tuple:
    """``(partial(func, *args, **kwargs), its tangent)``."""
    func, *args = primals
    func_dot, *args_dot = tangents
    out = functools.partial(func, *args, **kwargs)
    dot = _split(func, func_dot, tuple(args_dot), {k: kwargs_dot.get(k) for k in kwargs})
    return out, (None if _empty(dot) else dot)


def call_jvp(fn: functools.partial, primals: tuple, tangents: tuple, kwargs: dict,
             fn_dot: Optional[Pair], kwargs_dot: dict) -> tuple:
    """``(fn(*primals, **kwargs), its tangent)``: the function on the bound arguments."""
    from transpiler.transforms.ad.forward import jvp_call  # cycle: ad.forward imports this module
    args_dot, keywords_dot, func_dot = pair(fn, fn_dot)
    args, full_kwargs = bound(fn, primals, kwargs)
    return jvp_call(fn.func, args, (*args_dot, *tangents), full_kwargs, func_dot,
                    {**keywords_dot, **(kwargs_dot or {})})


# --- reverse mode (ad.calls.vjp_call*) --------------------------------------------

def make_vjp(args: tuple, kwargs: dict, g: Optional[Pair]) -> tuple[tuple, dict]:
    """The cotangents of ``partial(func, *args, **kwargs)``'s arguments from the partial's
    `g`: (positional ones, func's first; keyword ones)."""
    func, *rest = args
    if g is None:
        return (None,) * len(args), {}
    args_bar, keywords_bar, function_bar = g
    if is_partial(func):  # flattened: func's share goes back to func
        k = len(func.args)
        own = {key for key in kwargs}
        func_bar = (tuple(args_bar[:k]), {key: b for key, b in keywords_bar.items()
                                          if key in func.keywords and key not in own},
                    function_bar)
        func_share = None if _empty(func_bar) else func_bar
        return (func_share, *args_bar[k:]), {key: keywords_bar.get(key) for key in kwargs}
    return (function_bar, *args_bar), {key: keywords_bar.get(key) for key in kwargs}


def call_vjp(fn: functools.partial, args: tuple, kwargs: dict, g: Any) -> tuple:
    """The cotangents of ``fn(*args, **kwargs)``'s positional arguments, then that of the
    partial itself (its pair, None where nothing flowed)."""
    # cycle: ad.calls and ad.cotangents (via transforms.ad) import this module
    from transpiler.transforms.ad.calls import vjp_call_closure, vjp_call_keywords
    from transpiler.transforms.ad.cotangents import differentiable_value  # cycle: as above
    full_args, full_kwargs = bound(fn, args, kwargs)
    k, func = arity(fn), function(fn)
    function_bar = None
    if any(differentiable_value(v) for v in full_kwargs.values()):
        bars, keyword_bars = vjp_call_keywords(func, full_args, full_kwargs, g)
    else:
        result = vjp_call_closure(func, full_args, full_kwargs, g)
        bars, keyword_bars, function_bar = result[:-1], {}, result[-1]
    return (*bars[k:], own_bars(fn, bars, keyword_bars, function_bar))


def arity(fn: functools.partial) -> int:
    """The number of arguments `fn` binds (static)."""
    return len(fn.args)


def function(fn: functools.partial) -> Any:
    """The function `fn` calls (static: the derivative is the bound arguments')."""
    return fn.func


def own_bars(fn: functools.partial, bars: tuple, keyword_bars: dict,
             function_bar: Any = None) -> Optional[Pair]:
    """The partial's cotangent from those of the call of its function: the bound
    arguments', keywords' and the function's own (linear in all three)."""
    own = (tuple(bars[:len(fn.args)]), {key: keyword_bars.get(key) for key in fn.keywords},
           function_bar)
    return None if _empty(own) else own


# Forward mode of the helpers above (second derivatives through a partial): each is linear
# in the derivatives it is given (transforms/common/classify.py: "partial_*" kinds).

def bound_tangent(fn: functools.partial, fn_dot: Optional[Pair], args_dot: Any,
                  kwargs_dot: Any, args: tuple) -> tuple[tuple, dict]:
    """The tangent of ``bound(fn, args, kwargs)``."""
    own_args, own_keywords, _ = pair(fn, fn_dot)
    return ((*own_args, *(args_dot if args_dot is not None else (None,) * len(args))),
            {**own_keywords, **(kwargs_dot or {})})


def _empty(derivative: Pair) -> bool:
    args, keywords, function = derivative
    return all(a is None for a in args) and all(v is None for v in keywords.values()) \
        and function is None


# --- vmap (bt.rules.dispatch) -----------------------------------------------------------

def make_batched(args: tuple, dims: tuple, kwargs: dict, kwdims: dict) -> tuple:
    """``partial(func, *args, **kwargs)`` under vmap: the partial, and its batch axes."""
    func, *rest = args
    out = functools.partial(func, *rest, **kwargs)
    out_dims = _split(func, dims[0], tuple(dims[1:]), {k: kwdims.get(k) for k in kwargs})
    return out, out_dims


def call_batched(fn: functools.partial, args: tuple, dims: tuple, kwargs: dict,
                 kwdims: dict, fn_dims: Any) -> tuple:
    """A call of a partial under vmap: its function on the bound arguments."""
    from transpiler.transforms.bt import rules as batch_rules  # cycle: bt.rules imports this module
    args_dims, keyword_dims, func_dims = pair(fn, fn_dims if isinstance(fn_dims, tuple)
                                              else None)
    full_args, full_kwargs = bound(fn, args, kwargs)
    return batch_rules.dispatch(fn.func, full_args, (*args_dims, *dims), full_kwargs,
                                {**keyword_dims, **kwdims}, func_dims)
