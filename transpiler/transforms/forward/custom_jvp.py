"""``custom_jvp``: a function with a hand-written forward-mode rule (JAX's conventions).

    @transpiler.custom_jvp
    def f(x, y):
        return jnp.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        x_dot, y_dot = tangents
        return f(x, y), jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot

Calling ``f`` runs the function. ``jvp`` (and everything built on it) uses the rule;
``grad``/``vjp`` use it too, as JAX does: the rule is linear in the tangents, so the
cotangents of the inputs are its transpose applied to the output cotangent -- reverse mode
of the rule's tangent output with respect to the tangents (`CustomJVP.transposed`), which a
second derivative differentiates again. With
``nondiff_argnums``, those arguments are static and come first: ``rule(*nondiff, primals,
tangents)``, where primals and tangents cover the other arguments.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

from transpiler.errors import TranspileError, user_location
from transpiler.codegen import emit_text
from transpiler.transforms.reverse.generate import vjp_function


class CustomJVP:
    """A function with a custom forward-mode rule; see the module docstring."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun, updated=())  # its own attributes, not fun's
        self.fun = fun
        self.nondiff_argnums: tuple[int, ...] = tuple(sorted({int(i) for i in nondiff_argnums}))
        self.rule: Callable | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fun(*args, **kwargs)

    def defjvp(self, jvp: Callable) -> Callable:
        """Set the rule ``jvp(primals, tangents) -> (primal_out, tangent_out)``; returns it
        (so ``@f.defjvp`` works as a decorator)."""
        self.rule = jvp
        return jvp

    def transposed(self) -> Callable:
        """The generated VJP, with respect to `tangents`, of the rule's tangent output::

            def tangent_map_f(static, primals, tangents):
                return _rule(*static, primals, tangents)[1]

        (reverse mode through this function uses it: see ad.forward.custom_jvp_vjp)."""
        if self.rule is None:
            raise TranspileError(f"No JVP defined for custom_jvp function {_name(self)} using "
                                 "defjvp.", user_location(),
                                 "call f.defjvp(rule) before differentiating")
        cached = getattr(self, "_transposed", None)
        if cached is None or cached[0] is not self.rule:
            name = f"tangent_map_{_name(self)}".replace("<lambda>", "lambda")
            source = (f"def {name}(static, primals, tangents):\n"
                      f"    return _rule(*static, primals, tangents)[1]\n")
            code = getattr(self.rule, "__code__", None)
            tangent_map = emit_text(source, name, {"_rule": self.rule}, transform="custom_jvp",
                                    name=_name(self), file=getattr(code, "co_filename", "?"),
                                    line=getattr(code, "co_firstlineno", 0))
            cached = self._transposed = (self.rule, vjp_function(
                tangent_map, frozenset({"tangents"}), False)[1])
        return cached[1]

    def defjvps(self, *rules: Callable | None) -> None:
        """One rule per argument, ``rule(tangent, primal_out, *primals)``; None = zero."""
        fun = self.fun  # (a function value: the rule is differentiated again for grad)

        def jvp(primals: tuple, tangents: tuple) -> tuple:
            out = fun(*primals)
            total = None
            for rule, t in zip(rules, tangents):
                if rule is not None and t is not None:
                    term = rule(t, out, *primals)
                    total = term if total is None else total + term
            return out, total
        self.rule = jvp

    def apply(self, primals: tuple, tangents: tuple) -> tuple:
        """``(out, out_dot)`` from the rule (zeros for missing tangents, as JAX passes)."""
        from transpiler.transforms.ad.forward import zeros_like_tree  # cycle: ad.forward imports this module
        if self.rule is None:
            raise TranspileError(f"No JVP defined for custom_jvp function "
                                 f"{getattr(self.fun, '__name__', 'f')} using defjvp.",
                                 user_location(), "call f.defjvp(rule) before differentiating")
        tangents = tuple(zeros_like_tree(p) if t is None else t
                         for p, t in zip(primals, tangents))
        static = tuple(primals[i] for i in self.nondiff_argnums)
        keep = [i for i in range(len(primals)) if i not in self.nondiff_argnums]
        result = self.rule(*static, tuple(primals[i] for i in keep),
                           tuple(tangents[i] for i in keep))
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise TranspileError(
                f"the custom_jvp rule of {getattr(self.fun, '__name__', 'f')} must return a "
                f"pair (primal_out, tangent_out), got {type(result).__name__}", user_location())
        return result[0], result[1]

    def __repr__(self) -> str:
        return f"custom_jvp({getattr(self.fun, '__name__', self.fun)!r})"


def custom_jvp(fun: Callable | None = None, *, nondiff_argnums: Sequence[int] = ()) -> Any:
    """``jax.custom_jvp``: ``@custom_jvp`` or ``@partial(custom_jvp, nondiff_argnums=(0,))``."""
    if fun is None:
        return lambda f: CustomJVP(f, nondiff_argnums)
    return CustomJVP(fun, nondiff_argnums)


def _positional_names(fn: CustomJVP) -> list[str]:
    return [p.name for p in inspect.signature(fn.fun).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _name(fn: CustomJVP) -> str:
    return getattr(fn.fun, "__name__", "custom")


def _rule_comment(fn: CustomJVP) -> str:
    code = getattr(fn.rule, "__code__", None)
    where = f"  ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    return f"# {_name(fn)} is a custom_jvp function: its own rule{where} gives the derivative\n"


def jvp_of_custom_jvp(fn: CustomJVP) -> Callable:
    """``jvp_<name>(*args, <param>_dot=...) -> (out, out_dot)`` of a custom_jvp function
    itself (``jvp(f)`` with f custom): its rule, never its source."""
    names = _positional_names(fn)

    def jvp_custom(*args: Any, **dots: Any) -> tuple:
        return fn.apply(args, tuple(dots.get(f"{n}_dot") for n in names[:len(args)]))

    jvp_custom.__name__ = f"jvp_{_name(fn)}"
    jvp_custom.tangent_suffix = "_dot"  # type: ignore[attr-defined]
    jvp_custom.source = _rule_comment(fn)  # type: ignore[attr-defined]
    return jvp_custom


def vjp_of_custom_jvp(fn: CustomJVP, has_aux: bool) -> Callable:
    """``vjp_<name>(*args, _out_bar=None) -> (out, bars)`` of a custom_jvp function itself
    (``grad(f)`` with f custom): reverse mode from its rule, as when it is called inside a
    differentiated function (ad.forward.custom_jvp_vjp)."""
    # cycle: ad.forward and ad.cotangents (via transforms.ad) import this module
    from transpiler.transforms.ad import cotangents as ad
    from transpiler.transforms.ad.forward import custom_jvp_vjp  # cycle: as above

    def vjp_custom(*args: Any, _out_bar: Any = None, **kwargs: Any) -> tuple:
        out = fn(*args, **kwargs)
        g = ad.seed(_out_bar, out, has_aux)
        if g is None:
            return out, (None,) * len(args)
        return out, custom_jvp_vjp(fn, args, kwargs, g)

    vjp_custom.__name__ = f"vjp_{_name(fn)}"
    vjp_custom.source = _rule_comment(fn)  # type: ignore[attr-defined]
    return vjp_custom

