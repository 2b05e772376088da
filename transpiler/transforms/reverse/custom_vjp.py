"""``custom_vjp``: a function with a hand-written reverse-mode rule, as in JAX.

    @custom_vjp
    def f(x, y):
        return jnp.sin(x) * y

    def f_fwd(x, y):                # same signature as f: (output, residuals)
        return f(x, y), (jnp.cos(x), jnp.sin(x), y)

    def f_bwd(res, g):              # (residuals, output cotangent): one cotangent per argument
        cos_x, sin_x, y = res
        return (cos_x * g * y, sin_x * g)

    f.defvjp(f_fwd, f_bwd)

Calling ``f`` runs the primal function. Under ``grad``/``vjp`` the transform does not read
f's source: a call ``t = f(...)`` gets the adjoint ``ad.custom_vjp_bwd(f, args, kwargs,
t_bar)``, which runs ``f_fwd`` for the residuals and ``f_bwd`` for the cotangents (checked
here against the arguments: their number, container structure and shapes).

With ``nondiff_argnums``, those positional arguments are static (not differentiated): they
come first in ``bwd(*nondiff_args, res, g)``, and bwd returns cotangents for the others only.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional, Sequence

from transpiler.errors import SourceLocation, TranspileError, user_location
from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.primitives.core import abstractify
from transpiler.transforms.common.arguments import finalize


def _name(fn: Any) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def _defined_at(fn: Any) -> Optional[SourceLocation]:
    """Where the user defined `fn` (its ``def`` or lambda line); errors about a rule point
    there. The current user line when `fn` has no Python code."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return user_location()
    return SourceLocation(code.co_filename, code.co_firstlineno)


class CustomVJP:
    """A function with a custom reverse-mode rule (see the module docstring)."""

    # Its methods are plain Python a second derivative differentiates (ad.calls.unbound)
    methods_differentiable = True

    # A function linear in its first argument (the named-axis collectives, whose bwd is the
    # transpose collective): forward mode needs no rule, the tangent is the function of the
    # tangent (``jvp(psum)``), as for JAX's linear primitives.
    linear = False
    # A function with no derivative at all (lax.pmax): its fwd raises the error, in either mode.
    nondifferentiable = False

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun, updated=())  # its own attributes, not fun's
        self.fun = fun
        self.nondiff_argnums: tuple[int, ...] = tuple(sorted({int(i) for i in nondiff_argnums}))
        self.fwd: Optional[Callable] = None
        self.bwd: Optional[Callable] = None

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False) -> None:
        """Set the rule: ``fwd(*args) -> (out, residuals)`` and
        ``bwd(*nondiff_args, residuals, out_bar) -> (cotangent per differentiable arg)``."""
        if self.fwd is not None:
            raise TranspileError(
                f"custom_vjp function {_name(self)}: defvjp was already called", user_location(),
                "define the rule once; to change it, decorate a new function")
        if symbolic_zeros:
            raise TranspileError("custom_vjp: defvjp(symbolic_zeros=True) is not supported",
                                 user_location(), "bwd receives zeros for unused outputs")
        if not (callable(fwd) and callable(bwd)):
            raise TranspileError(f"custom_vjp function {_name(self)}: defvjp needs two "
                                 "callables, fwd and bwd", user_location())
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fun(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<custom_vjp({_name(self)})>"

    # --- used by the reverse-mode transform (ad.custom_vjp_bwd) ------------------------------
    def positional(self, args: tuple, kwargs: dict) -> tuple:
        """The call's arguments as one positional tuple (keywords and defaults resolved)."""
        # (bound on markers by `_bind`, the values picked here: a second derivative
        # differentiates this code, and the binding itself is static)
        values = []
        for slot in _bind(self, len(args), tuple(sorted(kwargs.keys()))):
            if isinstance(slot, _Slot) and isinstance(slot.key, int):
                values.append(args[slot.key])
            elif isinstance(slot, _Slot):
                values.append(kwargs[slot.key])
            else:
                values.append(slot)  # a default
        return tuple(values)

    def forward(self, args: tuple) -> tuple[Any, Any]:
        """``fwd(*args)``: the output and the residuals."""
        if self.fwd is None or self.bwd is None:
            raise TranspileError(
                f"no VJP defined for custom_vjp function {_name(self)} using defvjp",
                _defined_at(self.fun),
                f"call {_name(self)}.defvjp(fwd, bwd) before differentiating")
        rule = self.fwd
        result = rule(*args)
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise TranspileError(
                f"custom_vjp function {_name(self)}: fwd rule {_name(self.fwd)} must return "
                f"a pair (output, residuals), got {type(result).__name__}",
                _defined_at(self.fwd))
        return result[0], result[1]

    def backward(self, args: tuple, residuals: Any, out: Any, out_bar: Any) -> tuple:
        """``bwd(*nondiff, residuals, out_bar)`` checked, as one cotangent (or None) per
        positional argument (None at the nondiff ones)."""
        g = finalize(out_bar, out)  # bwd sees zeros where nothing flowed, as in JAX
        for i in self.nondiff_argnums:
            if i >= len(args):
                raise TranspileError(f"custom_vjp function {_name(self)}: nondiff_argnums "
                                     f"{self.nondiff_argnums} out of range for {len(args)} "
                                     "arguments", user_location())
        nondiff = []  # (a loop, not a comprehension: second derivatives differentiate this)
        for i in self.nondiff_argnums:
            nondiff.append(args[i])
        rule = self.bwd  # (a function value: differentiated like any, for second order)
        cotangents = rule(*nondiff, residuals, g)  # type: ignore[misc]
        diff = []
        for i in range(len(args)):
            if i not in self.nondiff_argnums:
                diff.append(i)
        bwd, loc = _name(self.bwd), _defined_at(self.bwd)
        if not isinstance(cotangents, (tuple, list)):
            raise TranspileError(
                f"custom_vjp function {_name(self)}: bwd rule {bwd} must return a tuple of "
                f"{len(diff)} cotangents (one per differentiable argument), got "
                f"{type(cotangents).__name__}", loc,
                "return a tuple, e.g. `return (x_bar,)` for one argument")
        if len(cotangents) != len(diff):
            raise TranspileError(
                f"custom_vjp function {_name(self)}: bwd rule {bwd} returned {len(cotangents)} "
                f"cotangents, but {_name(self)} has {len(diff)} differentiable positional "
                "arguments", loc, "return one cotangent per argument (None for zero), in order")
        full: list[Any] = []  # (appended: a second derivative differentiates this code)
        for i in range(len(args)):
            if i in diff:
                full.append(_checked(cotangents[diff.index(i)], args[i],
                                     f"{_name(self)} (bwd rule {bwd}), argument {i}", loc))
            else:
                full.append(None)
        return tuple(full)


def _bind(fn: CustomVJP, count: int, names: tuple) -> tuple:
    """How a call with `count` positional arguments and keywords `names` binds to the
    parameters of `fn`: per parameter, the `_Slot` of its argument, or its default."""
    try:
        bound = inspect.signature(fn.fun).bind(*(_Slot(i) for i in range(count)),
                                               **{k: _Slot(k) for k in names})
    except TypeError as err:
        raise TranspileError(f"custom_vjp function {_name(fn)}: {err}",
                             user_location()) from None
    bound.apply_defaults()
    if bound.kwargs:
        raise TranspileError(
            f"custom_vjp function {_name(fn)}: keyword-only arguments "
            f"{sorted(bound.kwargs)} cannot be differentiated through", user_location(),
            "make them positional parameters (nondiff_argnums for static ones)")
    return bound.args


class _Slot:
    """Where an argument of a call goes, while its signature binds it (`positional`)."""

    def __init__(self, key: Any) -> None:
        self.key = key


def _checked(ct: Any, primal: Any, where: str, loc: Optional[SourceLocation]) -> Any:
    """`ct` with the container structure and leaf shapes of `primal` (None is zero)."""
    if ct is None:
        return None
    if isinstance(primal, dict):
        if not isinstance(ct, dict) or set(ct) != set(primal):
            raise _mismatch(where, f"a dict with keys {sorted(primal)}", ct, loc)
        return {k: _checked(ct[k], primal[k], f"{where}[{k!r}]", loc) for k in primal}
    if isinstance(primal, (tuple, list)):
        if not isinstance(ct, (tuple, list)) or len(ct) != len(primal):
            raise _mismatch(where, f"a {type(primal).__name__} of {len(primal)}", ct, loc)
        items = [_checked(c, p, f"{where}[{i}]", loc) for i, (c, p) in enumerate(zip(ct, primal))]
        if hasattr(primal, "_fields"):  # namedtuple
            return type(primal)(*items)
        return items if isinstance(primal, list) else tuple(items)
    want, got = abstractify(primal), _aval(ct, where, loc)
    if got.shape != want.shape:
        raise TranspileError(
            f"custom_vjp function {where}: the cotangent has shape {got.shape}, but the "
            f"argument has shape {want.shape}", loc,
            "the bwd rule must return cotangents shaped like the arguments")
    if got.dtype != want.dtype and dtypes.is_inexact(want.dtype):
        return jnp.astype(ct, want.dtype)
    return ct


def _aval(ct: Any, where: str, loc: Optional[SourceLocation]) -> Any:
    try:
        return abstractify(ct)
    except TypeError:
        raise _mismatch(where, "an array", ct, loc) from None


def _mismatch(where: str, want: str, ct: Any, loc: Optional[SourceLocation]) -> TranspileError:
    return TranspileError(f"custom_vjp function {where}: the bwd rule returned a "
                          f"{type(ct).__name__} where {want} was expected", loc,
                          "cotangents must have the structure of the arguments")


def custom_vjp(fun: Optional[Callable] = None, nondiff_argnums: Sequence[int] = ()) -> Any:
    """``jax.custom_vjp``: decorate a function, then give its rule with ``f.defvjp(fwd,
    bwd)``. Also usable as ``functools.partial(custom_vjp, nondiff_argnums=(1,))``."""
    if fun is None:
        return lambda f: CustomVJP(f, nondiff_argnums)
    return CustomVJP(fun, nondiff_argnums)


def vjp_of_custom(fn: CustomVJP, has_aux: bool) -> Callable:
    """The ``vjp_<name>(*args, _out_bar=None, **kwargs) -> (out, bars)`` of a custom_vjp
    function itself (``grad(f)`` with f custom): fwd once, then bwd from the seed."""
    from transpiler.transforms.ad import cotangents as ad  # cycle: transforms.ad imports this module

    def vjp_custom(*args: Any, _out_bar: Any = None, **kwargs: Any) -> tuple[Any, tuple]:
        positional = fn.positional(args, kwargs)
        out, residuals = fn.forward(positional)
        g = ad.seed(_out_bar, out, has_aux)
        if g is None:
            return out, (None,) * len(positional)
        return out, fn.backward(positional, residuals, out, g)

    vjp_custom.__name__ = f"vjp_{_name(fn)}"
    vjp_custom.source = (  # type: ignore[attr-defined]
        f"# {_name(fn)} is a custom_vjp function: reverse mode runs its own rule\n"
        f"#   forward:  {_where(fn.fwd)}\n#   backward: {_where(fn.bwd)}\n")
    return vjp_custom


def _where(fn: Any) -> str:
    code = getattr(fn, "__code__", None)
    if fn is None:
        return "(not defined yet: call defvjp)"
    if code is None:
        return _name(fn)
    return f"{_name(fn)}  ({code.co_filename}:{code.co_firstlineno})"
