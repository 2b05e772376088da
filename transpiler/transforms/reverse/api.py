"""``grad``, ``value_and_grad`` and ``vjp`` with JAX's signatures, built on generated code."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional, Sequence, Union

from transpiler import tree_util
from transpiler.errors import TranspileError, user_location
from transpiler.transforms.common.arguments import (active_names, argnums_of, as_arrays,
                                                    finalize, positional_names)
from transpiler.transforms.common.generated import (TransformedFunction, at_creation,
                                                    carries_its_function, for_jit, target)
from transpiler.transforms.common.signature import source_signature, star_name
from transpiler.transforms.reverse.generate import vjp_function
from transpiler.errors import located
from transpiler import dtypes
from transpiler.primitives.core import abstractify
from transpiler.codegen import emit_text
from transpiler.tracebacks import filtered


def _check_options(fun: Any, argnums: Any, has_aux: Any, fname: str) -> None:
    """grad's options, checked when it is created (as JAX does)."""
    if not callable(fun):
        raise located(TypeError, f"grad: expected a function, got {type(fun).__name__}",
                      "pass the function itself: grad(f), not grad(f(x))")
    if not isinstance(has_aux, bool):
        raise located(TypeError, f"grad({fname}): has_aux must be True or False, got "
                      f"{has_aux!r}")
    nums = (argnums,) if isinstance(argnums, int) else argnums
    if isinstance(argnums, bool) or not isinstance(nums, (tuple, list)) or not nums or \
            not all(isinstance(i, int) and not isinstance(i, bool) for i in nums):
        raise located(TypeError, f"grad({fname}): argnums must be an int or a non-empty tuple "
                      f"of ints, got {argnums!r}", "e.g. argnums=0 or argnums=(0, 1)")


def _check_differentiable(args: Sequence[Any], nums: Sequence[int], fname: str) -> None:
    for i in nums:
        for leaf in tree_util.tree_leaves(args[i]):
            aval = abstractify(leaf, i, fname)
            if not dtypes.is_inexact(aval.dtype):
                raise TranspileError(
                    f"grad({fname}) requires floating or complex inputs, but argument {i} "
                    f"has dtype {aval.dtype}", user_location(),
                    "pass floats (e.g. x.astype(jnp.float32)), or leave the argument out of "
                    "argnums")


class Transformed(TransformedFunction):
    """A transformed function: call it, or read ``.source`` (the generated code that runs)."""

    def __init__(self, call: Callable, fun: Callable, active_of: Callable[[], frozenset],
                 has_aux: bool, kind: str, argnums: Any = 0) -> None:
        functools.update_wrapper(self, fun, updated=())  # its own attributes, not fun's
        self._call, self._original, self._active_of = call, fun, active_of
        self._has_aux, self._kind, self._argnums = has_aux, kind, argnums
        self._wrapper: Optional[Callable] = None
        self._converted: Optional[Callable] = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._call(*args, **kwargs)
        except Exception as error:
            raise filtered(error)  # noqa: B904 (the user's frames: transpiler/tracebacks.py)

    @property
    def source(self) -> str:
        """The generated Python that runs (written to a file in the cache directory)."""
        return vjp_function(self._original, self._active_of(), self._has_aux)[1].source  # type: ignore

    def __repr__(self) -> str:
        return f"<{self._kind}({getattr(self._original, '__name__', self._original)})>"

    def generate_code(self, module_name: str) -> None:
        fun = self._original
        if getattr(getattr(fun, "_fun", fun), "__module__", None) == module_name:
            vjp_function(fun, self._active_of(), self._has_aux)

    def differentiable(self) -> Callable:
        """This transform as plain generated Python that the transforms can take as input:
        ``def grad_f(x, y): _out, _bars = vjp_f(x, y, _out_bar=ad.SEED); return ...``."""
        if self._wrapper is None:
            self._wrapper = _wrapper_function(self)
        return self._wrapper

    def closed_over(self) -> Optional[Callable]:
        from transpiler.transforms.common import closures  # (closures imports forward/api)
        return closures.derivative_closure(target(self._original))

    def converted(self) -> Callable:
        if self._converted is None:
            self._converted = _wrapper_function(self, closed_over=True)
        return self._converted


def _wrapper_function(t: Transformed, closed_over: bool = False) -> Callable:
    """Write and load ``grad_<name>`` for a grad/value_and_grad transform (see above); with
    `closed_over`, of the closure's code with its closed-over values as first parameters."""
    from transpiler.transforms import ad  # cycle: transforms.ad reaches this module via common.closures
    from transpiler.transforms.common import closures  # (closures imports forward/api)
    fun = target(t._original)
    params = positional_names(fun)
    free: list[str] = []
    if closed_over:
        if t._has_aux:
            raise TranspileError("differentiating through grad(f, has_aux=True) with respect "
                                 "to values f closes over is not supported yet",
                                 user_location(), "pass those values as arguments of f")
        free = list(closures.converted(fun)[0])
        generated = closures.closure_vjp_function(fun, t._active_of())
        vjp_name = generated.__name__
    else:
        vjp_name, generated = vjp_function(fun, t._active_of(), t._has_aux)
    nums = (t._argnums,) if isinstance(t._argnums, int) else tuple(t._argnums)
    star = star_name(fun)
    keywords = next((p.name for p in source_signature(fun).parameters.values()
                     if p.kind == p.VAR_KEYWORD), None)
    nums = tuple(i + len(params) if i < 0 else i for i in nums)
    if free and (star or keywords):
        raise TranspileError("differentiating through grad(f) with respect to values f closes "
                             "over is not supported when f takes *args or **kwargs",
                             user_location(), "pass those values as arguments of f")
    k = len(free)
    grads = [f"ad.finalize(_bars[{k + i}], {params[i]})" if i < len(params) else
             f"ad.finalize(_bars[{i}], {star}[{i - len(params)}])" for i in nums]
    grad_expr = grads[0] if isinstance(t._argnums, int) else f"({', '.join(grads)},)"
    if t._has_aux:
        grad_expr = f"({grad_expr}, _out[1])" if t._kind == "grad" else grad_expr
    result = grad_expr if t._kind == "grad" else f"(_out, {grad_expr})"
    name = f"{t._kind}_{getattr(fun, '__name__', 'f')}".replace("<lambda>", "lambda")
    defaults = {p.name: p.default for p in inspect.signature(fun).parameters.values()
                if p.name in params and p.default is not p.empty}
    rest = ([f"*{star}"] if star else []) + ([f"**{keywords}"] if keywords else [])
    signature = ", ".join(free + [f"{p}=_default_{p}" if p in defaults else p for p in params]
                          + rest)
    source = (f"def {name}({signature}):\n"
              f"    _out, _bars = {vjp_name}({', '.join(free + params + rest)}, "
              f"{getattr(generated, 'cotangent_param', '_out_bar')}=ad.SEED)\n"
              f"    return {result}\n")
    namespace = {vjp_name: generated, "ad": ad, **{f"_default_{p}": v for p, v in defaults.items()}}
    return emit_text(source, name, namespace, transform=t._kind,
                     name=getattr(fun, "__name__", "f"), file=getattr(
                         getattr(fun, "__code__", None), "co_filename", "?"), line=0)


def value_and_grad(fun: Callable, argnums: Union[int, Sequence[int]] = 0,
                   has_aux: bool = False) -> Transformed:
    """``jax.value_and_grad``: ``f(*args) -> (value, grads)`` (``((value, aux), grads)``)."""
    fname = getattr(fun, "__name__", "function")
    _check_options(fun, argnums, has_aux, fname)

    def value_and_grad_f(*args: Any, **kwargs: Any) -> Any:
        nums = argnums_of(argnums, len(args), fname)
        _check_differentiable(args, nums, fname)
        names = positional_names(fun)
        active = frozenset(names[i] for i in nums if i < len(names))
        if max(nums) >= len(names):  # into *args: the generated code differentiates it all
            star = star_name(target(fun))
            if star is None:
                raise TypeError(f"grad({fname}): argnums {argnums} out of range for "
                                f"{len(names)} positional parameters")
            active |= {star}
        _, generated = vjp_function(fun, active, has_aux)
        from transpiler.transforms.ad.cotangents import SEED  # cycle: as in _wrapper_function
        # like JAX: NumPy inputs become arrays, and so do the Python floats differentiated
        # (weakly typed), so the function computes on arrays wherever JAX traces
        args = tuple(as_arrays(a, floats=i in nums) for i, a in enumerate(args))
        out, bars = for_jit(generated)(*args, **kwargs, **{_cotangent(generated): SEED})
        grads = tuple(finalize(bars[i], args[i]) for i in nums)
        return out, (grads[0] if isinstance(argnums, int) else grads)

    return at_creation(Transformed(value_and_grad_f, fun, lambda: active_names(fun, argnums),
                                   has_aux, "value_and_grad", argnums))


def grad(fun: Callable, argnums: Union[int, Sequence[int]] = 0,
         has_aux: bool = False) -> Transformed:
    """``jax.grad``: the gradient of a real scalar function, as generated Python."""
    vg = value_and_grad(fun, argnums, has_aux)

    def grad_f(*args: Any, **kwargs: Any) -> Any:
        out, grads = vg(*args, **kwargs)
        return (grads, out[1]) if has_aux else grads

    return at_creation(Transformed(grad_f, fun, lambda: active_names(fun, argnums), has_aux,
                                   "grad", argnums))


def vjp(fun: Callable, *primals: Any, has_aux: bool = False) -> Any:
    """``jax.vjp``: ``(out, vjp_fn)`` (``(out, vjp_fn, aux)`` with has_aux)."""
    names = positional_names(fun)
    if len(primals) > len(names):
        raise TypeError(f"vjp: {len(primals)} primals for a function with {len(names)} "
                        "positional parameters")
    active = frozenset(names[:len(primals)])
    _, generated = vjp_function(fun, active, has_aux)
    primals = tuple(as_arrays(p, floats=True) for p in primals)  # as value_and_grad does
    result = fun(*primals)
    out, aux = (result[0], result[1]) if has_aux else (result, None)

    def vjp_fn(cotangent: Any) -> tuple:
        _check_cotangent(cotangent, out, getattr(fun, "__name__", "function"))
        _, bars = for_jit(generated)(*primals, **{_cotangent(generated): cotangent})
        return tuple(finalize(b, p) for b, p in zip(bars, primals))

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _cotangent(generated: Callable) -> str:
    return getattr(generated, "cotangent_param", "_out_bar")


def _check_cotangent(cotangent: Any, out: Any, fname: str) -> None:
    """JAX's rule: the cotangent has the output's structure, shapes and dtypes."""
    ct_leaves, ct_tree = tree_util.tree_flatten(cotangent)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    if ct_tree != out_tree:
        raise TypeError(f"vjp({fname}): the cotangent must have the output's structure "
                        f"{out_tree}, got {ct_tree}")
    for i, (c, o) in enumerate(zip(ct_leaves, out_leaves)):
        ca, oa = abstractify(c, i, "vjp"), abstractify(o, i, "vjp")
        if ca.shape != oa.shape:
            raise ValueError(f"vjp({fname}): cotangent {i} has shape {list(ca.shape)}, but the "
                             f"output has shape {list(oa.shape)}; they must match")


# g = grad(closure) inside a transformed function: the closure's derivative passes through
carries_its_function(grad)
carries_its_function(value_and_grad)
