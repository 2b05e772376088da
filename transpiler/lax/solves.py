"""``lax.custom_root`` and ``lax.custom_linear_solve``: solutions whose derivatives come
from implicit differentiation at the solution, not from differentiating the solver.

    x = custom_root(f, x0, solve, tangent_solve)   # solve(f, x0), with f(x) == 0
    x = custom_linear_solve(matvec, b, solve)      # solve(matvec, b), with matvec(x) == b

The derivatives flow to the values `f` (or `matvec`) closes over and, for a linear solve,
to `b`. Each is a `custom_jvp` function (`ImplicitSolve`, in `_implicit`) that takes the user's function
as a differentiated argument: the transforms give a closure's derivative as the dict of
its cells' derivatives (transforms/common/closures.py), and the rules here turn it into
the derivative of the function's value with the run-time helpers the generated code calls
(``ad.jvp_call``, ``ad.vjp_call_closure``):

* forward mode (`_root_jvp`, `_linear_jvp`): with ``θ`` the closed-over values,
  ``x_dot = -tangent_solve(∂f/∂x, ∂f/∂θ · θ_dot)``, and for a linear solve
  ``x_dot = solve(matvec, b_dot - matvec_dot(x))`` (as JAX's rules);
* reverse mode (`_root_transpose`, `_linear_transpose`): the transpose of those maps,
  written out rather than generated from the rules (which call the user's solvers, loops
  that reverse mode cannot transpose): ``λ = tangent_solve((∂f/∂x)ᵀ, x_bar)`` and
  ``θ_bar = -(∂f/∂θ)ᵀ λ``; for a linear solve ``b_bar = transpose_solve(vecmat, x_bar)``
  and ``θ_bar = -(∂matvec/∂θ)ᵀ b_bar``. (`tangent_solve` solves for any linear map it is
  given, so it solves the transposed system too.) The solution is recomputed there:
  reverse mode of a custom_jvp function gets its arguments, not its output.

The linear maps handed to the solvers (`_linearized`, `_transposed`) are linear custom_jvp
functions too (`_LINEAR_MAP`), each the other's transpose, so a solver may take their
Jacobian in either mode (``jnp.linalg.solve(jacobian(g)(y), y)``, as JAX's docs suggest).

The solvers themselves (`solve`, `tangent_solve`, `transpose_solve`) are never
differentiated, and what they close over gets no derivative (as in JAX). A function
argument whose derivative the transforms cannot follow is an error, never a dropped
derivative.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable, Optional

from transpiler import dtypes, tree_util
from transpiler import numpy as jnp
from transpiler.errors import TranspileError, located, user_location
from transpiler.primitives.core import abstractify


def custom_root(f: Callable, initial_guess: Any, solve: Callable[[Callable, Any], Any],
                tangent_solve: Callable[[Callable, Any], Any], has_aux: bool = False) -> Any:
    """``lax.custom_root``: ``solve(f, initial_guess)``, a root of `f` (``f(x) == 0``, not
    checked), differentiated with respect to the values `f` closes over by the implicit
    function theorem: ``tangent_solve(g, y)`` solves ``g(x) == y`` for the linear map `g`
    (`f` linearized at the root). With `has_aux`, `solve` returns ``(solution, aux)``
    and so does this (aux gets no derivative)."""
    return _ROOT(f, initial_guess, solve, tangent_solve, has_aux)


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable[[Callable, Any], Any],
                        transpose_solve: Optional[Callable[[Callable, Any], Any]] = None,
                        symmetric: bool = False, has_aux: bool = False) -> Any:
    """``lax.custom_linear_solve``: ``solve(matvec, b)``, the `x` with ``matvec(x) == b``
    (not checked), differentiated with respect to `b` and the values `matvec` closes over
    by implicit differentiation. Reverse mode needs ``transpose_solve(vecmat, y)`` (`vecmat`
    the transpose of `matvec`), or ``symmetric=True`` to use `solve` for it. With
    `has_aux`, the solvers return ``(x, aux)`` and so does this."""
    return _LINEAR(matvec, b, solve, transpose_solve, symmetric, has_aux)


# --- values -----------------------------------------------------------------------------------

def _root_value(f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable,
                has_aux: bool) -> Any:
    out = solve(f, initial_guess)
    _check_output("custom_root", "solve", "initial_guess", out, initial_guess, has_aux)
    return out


def _linear_value(matvec: Callable, b: Any, solve: Callable, transpose_solve: Any,
                  symmetric: bool, has_aux: bool) -> Any:
    out = solve(matvec, b)
    _check_output("custom_linear_solve", "solve", "b", out, b, has_aux)
    return out


# --- forward mode -----------------------------------------------------------------------------

def _root_jvp(solve: Callable, tangent_solve: Callable, has_aux: bool, primals: tuple,
              tangents: tuple) -> tuple:
    f, initial_guess = primals
    f_dot = tangents[0]  # (the guess's tangent: no derivative flows from it)
    out = _root_value(f, initial_guess, solve, tangent_solve, has_aux)
    solution = out[0] if has_aux else out
    rhs = _closure_tangent("custom_root", "f", f, f_dot, solution)
    if rhs is None:
        solution_dot = _zeros(solution)
    else:
        step = tangent_solve(_linearized(f, solution), rhs)
        _check_tree("custom_root", "tangent_solve", "x", step, solution)
        solution_dot = tree_util.tree_map(jnp.negative, step)
    return out, _with_aux(solution_dot, out, has_aux)


def _linear_jvp(solve: Callable, transpose_solve: Any, symmetric: bool, has_aux: bool,
                primals: tuple, tangents: tuple) -> tuple:
    matvec, b = primals
    matvec_dot, b_dot = tangents
    out = _linear_value(matvec, b, solve, transpose_solve, symmetric, has_aux)
    x = out[0] if has_aux else out
    rhs = _filled(b_dot, b)
    matvec_tangent = _closure_tangent("custom_linear_solve", "matvec", matvec, matvec_dot, x)
    if matvec_tangent is not None:
        rhs = tree_util.tree_map(jnp.subtract, rhs, matvec_tangent)
    x_dot = solve(matvec, rhs)
    _check_output("custom_linear_solve", "solve", "b", x_dot, b, has_aux)
    return out, _with_aux(x_dot[0] if has_aux else x_dot, out, has_aux)


# --- reverse mode: the transposes of the forward rules ------------------------------------------
# Called as ``transpose(static, primals, tangents, _out_bar=g)`` by reverse mode through a
# custom_jvp function (ad.forward.custom_jvp_vjp), which reads the tangents' cotangents:
# one per differentiated argument, in `primals` order.

def _root_transpose(static: tuple, primals: tuple, tangents: tuple, _out_bar: Any) -> tuple:
    solve, tangent_solve, has_aux = static
    f, initial_guess = primals
    out = _root_value(f, initial_guess, solve, tangent_solve, has_aux)
    solution = out[0] if has_aux else out
    solution_bar = _out_bar[0] if has_aux and _out_bar is not None else _out_bar
    f_bar = None
    if solution_bar is not None and _carries("custom_root", "f", f):
        solution_bar = _filled(solution_bar, solution)
        transposed = _transposed(f, solution)
        lam = tangent_solve(transposed, solution_bar)
        _check_tree("custom_root", "tangent_solve", "x", lam, solution)
        f_bar = _closure_cotangent(f, solution, tree_util.tree_map(jnp.negative, lam))
    return None, (None, None, (f_bar, None))


def _linear_transpose(static: tuple, primals: tuple, tangents: tuple, _out_bar: Any) -> tuple:
    solve, transpose_solve, symmetric, has_aux = static
    matvec, b = primals
    x_bar = _out_bar[0] if has_aux and _out_bar is not None else _out_bar
    if x_bar is None:
        return None, (None, None, (None, None))
    if transpose_solve is None and not symmetric:
        raise located(TypeError, "transpose_solve required for backwards mode automatic "
                      "differentiation of custom_linear_solve",
                      "pass transpose_solve=..., or symmetric=True when matvec is symmetric")
    x_bar = _filled(x_bar, b)
    if symmetric:
        vecmat, transposed_solve = matvec, transpose_solve or solve
    else:
        vecmat, transposed_solve = _transposed(matvec, b), transpose_solve
    result = transposed_solve(vecmat, x_bar)
    _check_output("custom_linear_solve", "transpose_solve", "b", result, b, has_aux)
    b_bar = result[0] if has_aux else result
    matvec_bar = None
    if _carries("custom_linear_solve", "matvec", matvec):
        out = _linear_value(matvec, b, solve, transpose_solve, symmetric, has_aux)
        x = out[0] if has_aux else out
        matvec_bar = _closure_cotangent(matvec, x, tree_util.tree_map(jnp.negative, b_bar))
    return None, (None, None, (matvec_bar, b_bar))


# --- the derivatives of the user's functions ----------------------------------------------------

def _jvp(fn: Callable, x: Any, v: Any) -> Any:
    """``fn``'s derivative at `x` in direction `v` (its closed-over values held fixed)."""
    from transpiler.transforms.forward.api import jvp  # upward: the transforms
    return jvp(fn, (x,), (v,))[1]


def _vjp(fn: Callable, x: Any, w: Any) -> Any:
    """The transpose of `fn`'s derivative at `x`, applied to `w`."""
    from transpiler.transforms.ad.calls import vjp_call  # upward: the transforms' helper
    return _filled(vjp_call(fn, (x,), {}, w)[0], x)


def _linearized(fn: Callable, x: Any) -> Callable:
    """``v -> (∂fn/∂x) v``, what `tangent_solve` solves with: a linear function whose
    derivatives are itself and its transpose, so a solver may take its Jacobian in
    either mode (``jacobian(g)(y)``)."""
    return _linear_map(functools.partial(_jvp, fn, x), functools.partial(_vjp, fn, x))


def _transposed(fn: Callable, x: Any) -> Callable:
    """``w -> (∂fn/∂x)ᵀ w``: the transpose of `_linearized`, what the transposed system
    is solved with."""
    return _linear_map(functools.partial(_vjp, fn, x), functools.partial(_jvp, fn, x))


def _linear_map(apply: Callable, transpose: Callable) -> Callable:
    """`apply` as a function of one argument whose derivatives are `apply` itself and
    `transpose` (a linear custom_jvp function: `_LINEAR_MAP`, the maps bound first)."""
    return functools.partial(_apply_map, apply, transpose)


def _apply_map(apply: Callable, transpose: Callable, v: Any) -> Any:
    return _LINEAR_MAP(apply, transpose, v)


def _map_value(apply: Callable, transpose: Callable, v: Any) -> Any:
    return apply(v)


def _map_jvp(apply: Callable, transpose: Callable, primals: tuple, tangents: tuple) -> tuple:
    return apply(primals[0]), apply(tangents[0])


def _map_transpose(static: tuple, primals: tuple, tangents: tuple, _out_bar: Any) -> tuple:
    transpose = static[1]
    return None, (None, None, (None if _out_bar is None else transpose(_out_bar),))


def _closure_tangent(op: str, name: str, fn: Callable, fn_dot: Any, x: Any) -> Any:
    """``∂fn(x)/∂θ · θ_dot``: the tangent of ``fn(x)`` from the tangent `fn_dot` of the
    values θ `fn` closes over (None: zero)."""
    if not (_plain(fn) or getattr(type(fn), "runtime_transform", False)):
        _refuse_hidden(op, name, fn, fn_dot)
    if fn_dot is None:
        return None
    from transpiler.transforms.ad.forward import jvp_call  # upward: the transforms' helper
    out, out_dot = jvp_call(fn, (x,), (None,), {}, fn_dot)
    _check_tree(op, name, _input_name(op), out, x)
    return None if out_dot is None else _filled(out_dot, out)


def _closure_cotangent(fn: Callable, x: Any, g: Any) -> Any:
    """``(∂fn(x)/∂θ)ᵀ g``: the cotangent of the values θ `fn` closes over, in the form
    the transforms route back to them (a closure's: the dict of its cells')."""
    from transpiler.transforms.ad.calls import vjp_call_closure  # upward: the helper
    return vjp_call_closure(fn, (x,), {}, g)[-1]


def _carries(op: str, name: str, fn: Any) -> bool:
    """Whether reverse mode gives the function value `fn` a cotangent (a function or
    partial that closes over floats); an error where it holds one it cannot give."""
    from transpiler.transforms.ad.cotangents import differentiable_value  # upward
    if _plain(fn):
        return bool(differentiable_value(fn))
    _refuse_hidden(op, name, fn, None)
    return False


def _plain(fn: Any) -> bool:
    """A Python function or partial: the transforms follow the derivatives of the values
    it closes over or binds."""
    return isinstance(fn, (types.FunctionType, functools.partial))


def _refuse_hidden(op: str, name: str, fn: Any, fn_dot: Any) -> None:
    """Refuse a callable whose derivative would be lost: an object holding arrays, or a
    function wrapped in jit, vmap, ... that closes over floats (the transforms do not route
    a derivative back through the wrapper)."""
    from transpiler.transforms.ad.cotangents import differentiable_value  # upward
    from transpiler.transforms.common.closures import carries_derivative  # upward
    hidden, inner = fn_dot is not None or differentiable_value(fn), fn
    for _ in range(8):
        inner = getattr(inner, "__wrapped__", None)
        if inner is None or hidden:
            break
        hidden = carries_derivative(inner) or differentiable_value(inner)
    if hidden:
        raise TranspileError(
            f"{op}: cannot differentiate with respect to the values {name} closes over or "
            f"holds: it is a {type(fn).__name__}, through which their derivative would be "
            "lost", user_location(),
            f"pass {name} as a plain function (a def or lambda) that closes over those values "
            "itself, not wrapped in jit or vmap, nor an object holding them")


# --- checks and helpers ---------------------------------------------------------------------------

def _input_name(op: str) -> str:
    return "initial_guess" if op == "custom_root" else "b"


def _check_output(op: str, fn_name: str, expected: str, out: Any, like: Any,
                  has_aux: bool) -> None:
    """`fn_name`'s output has the structure of `like` (with `has_aux`, a pair whose first
    element does), as JAX checks."""
    if has_aux:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise located(ValueError, f"{op}: {fn_name}() produced a pytree with structure "
                          f"{tree_util.tree_structure(out)}, but a pytree tuple with "
                          "auxiliary output was expected because has_aux was set to True.")
        out = out[0]
    _check_tree(op, fn_name, expected, out, like)


def _check_tree(op: str, fn_name: str, expected: str, out: Any, like: Any) -> None:
    got, want = tree_util.tree_structure(out), tree_util.tree_structure(like)
    if got != want:
        raise located(TypeError, f"{op}: {fn_name}() output pytree structure must match "
                      f"{expected}, got {got} and {want}.")
    shapes = [tuple(abstractify(leaf).shape) for leaf in tree_util.tree_leaves(out)]
    expected_shapes = [tuple(abstractify(leaf).shape) for leaf in tree_util.tree_leaves(like)]
    if shapes != expected_shapes:
        raise located(ValueError, f"{op}: {fn_name}() output shapes must match {expected}, "
                      f"got {shapes} and {expected_shapes}")


def _filled(value: Any, like: Any) -> Any:
    """`value` with zeros where it (or a leaf of it) is None; shaped and typed like `like`."""
    if value is None:
        return _zeros(like)
    from transpiler.transforms.common.arguments import finalize  # upward: the transforms
    return finalize(value, like)


def _zeros(like: Any) -> Any:
    return tree_util.tree_map(jnp.zeros_like, like)


def _with_aux(tangent: Any, out: Any, has_aux: bool) -> Any:
    """The output's tangent: `tangent`, and zero for the aux (None at non-float leaves)."""
    if not has_aux:
        return tangent

    def zero(leaf: Any) -> Any:
        aval = abstractify(leaf)
        return jnp.zeros_like(leaf) if dtypes.is_inexact(aval.dtype) else None
    return (tangent, tree_util.tree_map(zero, out[1]))


def _implicit() -> tuple[Any, Any, Any]:
    """The custom_jvp functions (root, linear solve, linear map), each with its own
    transpose for reverse mode. Module-level values, so that the transforms read a call of
    one as a custom_jvp call when they read `custom_root`'s code."""
    from transpiler.transforms.forward.custom_jvp import CustomJVP  # upward: the transforms

    class ImplicitSolve(CustomJVP):
        """A custom_jvp function whose reverse mode is the hand-written transpose of its
        rule, not one generated from the rule's source."""

        def __init__(self, fun: Callable, nondiff_argnums: tuple, rule: Callable,
                     transpose: Callable) -> None:
            super().__init__(fun, nondiff_argnums)
            self.defjvp(rule)
            self.transpose = transpose

        def transposed(self) -> Callable:
            return self.transpose

    return (ImplicitSolve(_root_value, (2, 3, 4), _root_jvp, _root_transpose),
            ImplicitSolve(_linear_value, (2, 3, 4, 5), _linear_jvp, _linear_transpose),
            ImplicitSolve(_map_value, (0, 1), _map_jvp, _map_transpose))


_ROOT, _LINEAR, _LINEAR_MAP = _implicit()
