"""Forward mode and Jacobians: ``jvp``, ``linearize``, ``jacfwd``, ``jacrev``, ``hessian``.

``jvp`` runs the generated ``jvp_<name>`` of a function (see forward/transform.py). Jacobians loop
over basis vectors in Python -- one ``jvp`` per input element (``jacfwd``) or one ``vjp``
per output element (``jacrev``) -- and stack the results; under ``jit`` the loop unrolls.
(They will batch the basis through ``vmap`` once it exists.) ``hessian`` is forward over
reverse: ``jacfwd`` of the generated ``grad`` code, as JAX's ``jacfwd(jacrev(f))``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Sequence, Union

from transpiler import tree_util
from transpiler.errors import TranspileError, user_location
from transpiler.transforms.common.arguments import active_names, argnums_of, positional_names
from transpiler.transforms.common.generated import (TransformedFunction, at_creation,
                                                    carries_its_function, for_jit, target)
from transpiler.transforms.reverse.generate import load_cached, store_cached, vjp_function
from transpiler.transforms.common.signature import star_name
from transpiler.transforms.forward.custom_jvp import CustomJVP, jvp_of_custom_jvp
from transpiler.codegen import disk_cache
from transpiler.transforms.common.generated import (emit_generated, parsed_function,
                                                    refuse_rule_code)
from transpiler.transforms.common.arguments import as_arrays
from transpiler import dtypes
from transpiler.primitives.core import abstractify
from transpiler import numpy as jnp
from transpiler.codegen import emit_text
from transpiler.transforms.common.arguments import finalize
from transpiler.transforms.reverse.api import grad
from transpiler.tracebacks import api_boundary

_GENERATED: dict[tuple, tuple[str, Callable]] = {}


def jvp_function(fn: Callable, active: frozenset) -> tuple[str, Callable]:
    """The generated ``jvp_<name>(*args, <p>_dot=None ...) -> (out, out_dot)`` (cached)."""
    fn = target(fn)
    if isinstance(fn, CustomJVP):  # its own rule, not its source (not cached: see vjp_function)
        return f"jvp_{getattr(fn, '__name__', 'custom')}", jvp_of_custom_jvp(fn)
    refuse_rule_code(fn, "forward mode")
    key = (fn, active, disk_cache.bindings(fn))  # see reverse/generate.py's vjp_function
    hit = _GENERATED.get(key)
    if hit is not None:
        return hit
    # On disk like reverse mode's code, keyed apart by a marker in the name set.
    disk_key = disk_cache.key(fn, active | {"<jvp>"}, False)
    loaded = load_cached(fn, disk_key, lambda c, a: jvp_function(c, a)[1]) \
        if disk_key else None
    if loaded is not None:
        loaded[1].tangent_suffix = loaded[1].cotangent_param  # type: ignore[attr-defined]
        _GENERATED[key] = loaded
        return loaded
    # lazy: the frontend, forward.transform and classify import libcst (and reach this module)
    from transpiler.frontend import is_library
    from transpiler.transforms.forward.transform import ForwardAD  # lazy: as above
    parsed = parsed_function(fn)
    from transpiler.transforms.common import classify  # lazy: as above
    with classify.generating(fn):
        generated = ForwardAD(parsed, active, jvp_function, library=is_library(fn)).run()
    function = emit_generated(fn, parsed, generated, "forward mode")
    function.tangent_suffix = generated.out_bar  # type: ignore[attr-defined]
    result = (generated.func.name.value, function)
    _GENERATED[key] = result
    if disk_key and set(generated.namespace) <= set(generated.callees):  # (custom_jvp
        store_cached(disk_key, fn, parsed, generated, function)  # rules: not on disk)
    return result


def _differentiable_target(fun: Callable) -> Callable:
    """A transform object (``grad(f)``) as the generated Python it runs, else `fun`."""
    differentiable = getattr(fun, "differentiable", None)
    return differentiable() if callable(differentiable) else fun


# --- jvp ---------------------------------------------------------------------------------

class JVP:
    """``jvp(f)``: call it with ``(primals, tangents)``, or read ``.source``."""

    def __init__(self, fun: Callable, has_aux: bool) -> None:
        functools.update_wrapper(self, fun, updated=())  # its own attributes, not fun's
        self.fun, self.has_aux = fun, has_aux

    def __call__(self, primals: Any, tangents: Any) -> Any:
        return jvp(self.fun, primals, tangents, has_aux=self.has_aux)

    @property
    def source(self) -> str:
        target = _differentiable_target(self.fun)
        return jvp_function(target, frozenset(positional_names(target)))[1].source  # type: ignore


def jvp(fun: Callable, primals: Any = None, tangents: Any = None,
        has_aux: bool = False) -> Any:
    """``jax.jvp``: ``(out, out_dot)`` (``(out, out_dot, aux)`` with has_aux); ``jvp(f)``
    alone is the transform object (``jvp(f).source`` shows the generated code)."""
    if primals is None and tangents is None:
        return JVP(fun, has_aux)
    fname = getattr(fun, "__name__", "function")
    _check_tangents(primals, tangents, fname)
    primals = tuple(as_arrays(tuple(primals), floats=True))  # arrays, as JAX's tracers are
    tangents = tuple(as_arrays(tuple(tangents), floats=True))
    target = _differentiable_target(fun)
    names = positional_names(target)
    star = star_name(target)
    if len(primals) > len(names) and star is None:
        raise TypeError(f"jvp({fname}): {len(primals)} primals for a function with "
                        f"{len(names)} positional parameters")
    active = [n for n, t in zip(names, tangents) if t is not None]
    if len(primals) > len(names) and star is not None and any(
            t is not None for t in tangents[len(names):]):
        active.append(star)
    from transpiler.transforms.ad.forward import _filled  # cycle: ad.forward imports this module
    if not active:  # every tangent None: nothing is differentiated, the output tangent is 0
        out, out_dot = fun(*primals), None
    else:
        _, generated = jvp_function(target, frozenset(active))
        suffix = getattr(generated, "tangent_suffix", "_dot")
        given = {f"{n}{suffix}": t for n, t in zip(names, tangents) if t is not None}
        if star in active:  # the rest go to *args: one tuple of tangents
            given[f"{star}{suffix}"] = tuple(tangents[len(names):])
        out, out_dot = for_jit(generated)(*primals, **given)
    if has_aux:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(f"jvp({fname}, has_aux=True): the function must return a pair "
                            f"(out, aux), got {type(out).__name__}")
        main_dot = out_dot[0] if isinstance(out_dot, (tuple, list)) else None
        return out[0], _filled(main_dot, out[0]), out[1]
    return out, _filled(out_dot, out)


def _check_tangents(primals: Any, tangents: Any, fname: str) -> None:
    """JAX's rules: tuples or lists of equal length, pytrees of equal structure, equal
    shapes and dtypes; integer primals have no tangent space here."""
    for what, value in (("primal", primals), ("tangent", tangents)):
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"jvp({fname}): {what} arguments must be a tuple or a list, "
                            f"found {type(value).__name__}")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp({fname}): {len(primals)} primals but {len(tangents)} tangents; "
                         "pass one tangent per primal")
    for i, (p, t) in enumerate(zip(primals, tangents)):
        if t is None:  # an extension of JAX's API: None = this argument is not differentiated
            continue
        p_leaves, p_tree = tree_util.tree_flatten(p)
        t_leaves, t_tree = tree_util.tree_flatten(t)
        if p_tree != t_tree:
            raise TypeError(f"jvp({fname}): primal {i} has structure {p_tree} but its tangent "
                            f"has structure {t_tree}")
        for pl, tl in zip(p_leaves, t_leaves):
            pa, ta = abstractify(pl), abstractify(tl)
            if not dtypes.is_inexact(pa.dtype):
                raise TranspileError(
                    f"jvp({fname}): primal {i} has dtype {pa.dtype}; forward mode "
                    "differentiates floating inputs only", user_location(),
                    "close over the integer argument (functools.partial) or pass it as float")
            if pa.shape != ta.shape:
                raise ValueError(f"jvp({fname}): primal {i} has shape {pa.shape} but its "
                                 f"tangent has shape {ta.shape}")
            if pa.dtype != ta.dtype and not (pa.weak_type or ta.weak_type):
                raise TypeError(f"jvp({fname}): primal {i} has dtype {pa.dtype} but its "
                                f"tangent has dtype {ta.dtype}; dtypes must be equal")


def linearize(fun: Callable, *primals: Any, has_aux: bool = False) -> Any:
    """``jax.linearize``: ``(out, f_jvp)`` (``(out, f_jvp, aux)``); ``f_jvp(*tangents)``
    runs the generated jvp at the saved primals (the primal is recomputed on each call)."""
    fname = getattr(fun, "__name__", "function")
    zeros = tuple(tree_util.tree_map(_zeros_like, p) for p in primals)
    result = jvp(fun, primals, zeros, has_aux=has_aux)

    def f_jvp(*tangents: Any) -> Any:
        _check_tangents(primals, tangents, fname)
        return jvp(fun, primals, tangents, has_aux=has_aux)[1]

    f_jvp.source = JVP(fun, has_aux).source  # type: ignore[attr-defined]
    return (result[0], f_jvp, result[2]) if has_aux else (result[0], f_jvp)


def _zeros_like(x: Any) -> Any:
    return jnp.zeros_like(x)


# --- Jacobians ------------------------------------------------------------------------

class Jacobian(TransformedFunction):
    """``jacfwd(f)`` / ``jacrev(f)`` / ``hessian(f)``: call it, or read ``.source``."""

    def __init__(self, fun: Callable, argnums: Union[int, Sequence[int]], has_aux: bool,
                 kind: str) -> None:
        functools.update_wrapper(self, fun, updated=())  # its own attributes, not fun's
        self.fun, self.argnums, self.has_aux, self.kind = fun, argnums, has_aux, kind

    def generate_code(self, module_name: str) -> None:
        if getattr(self.fun, "__module__", None) != module_name:
            return
        active = active_names(self.fun, self.argnums)
        if self.kind == "jacrev":
            vjp_function(self.fun, active, self.has_aux)
        elif self.kind == "jacfwd":
            jvp_function(self.fun, active)
        else:  # hessian: forward mode over the generated reverse code
            self.source  # noqa: B018 (generates both)

    @api_boundary
    def __call__(self, *args: Any) -> Any:
        fname = getattr(self.fun, "__name__", "function")
        nums = argnums_of(self.argnums, len(args), fname)
        _check_inexact(args, nums, self.kind)
        # like JAX: the differentiated inputs are arrays while the function runs
        args = tuple(as_arrays(a, floats=i in nums) for i, a in enumerate(args))
        if self.kind == "jacrev":
            return _jacrev(self.fun, args, nums, self.argnums, self.has_aux, fname)
        if self.kind == "hessian":  # jacfwd(jacrev(f)), as JAX defines it
            if self.has_aux or not isinstance(self.argnums, int):
                inner: Any = grad(self.fun, argnums=self.argnums, has_aux=self.has_aux)
            else:
                inner = jacrev(self.fun, self.argnums)
            return _jacfwd(inner, args, nums, self.argnums, self.has_aux, fname)
        return _jacfwd(self.fun, args, nums, self.argnums, self.has_aux, fname)

    def differentiable(self) -> Callable:
        """As input to another transform: the Jacobian as generated Python the transforms
        read, JAX's construction -- ``vmap`` of the generated jvp over the input's basis
        (jacfwd), or of the generated vjp over the output's basis (jacrev)::

            def jacfwd_f(x):
                _out, _columns = vmap(jvp_f, in_axes=(None,))(x, x_dot=ad.basis_of(x))
                return ad.forward_jacobian(_columns, x)

        (one differentiated argument, no aux; others cannot be nested yet)."""
        if getattr(self, "_wrapper", None) is None:
            self._wrapper = _jacobian_function(self)
        return self._wrapper

    def closed_over(self) -> Optional[Callable]:
        from transpiler.transforms.common import closures  # (closures imports this module)
        return None if self.kind == "hessian" else closures.derivative_closure(target(self.fun))

    def converted(self) -> Callable:
        if getattr(self, "_converted", None) is None:
            self._converted = _jacobian_function(self, closed_over=True)
        return self._converted

    @property
    def source(self) -> str:
        fn = target(self.fun)
        nums = (self.argnums,) if isinstance(self.argnums, int) else tuple(self.argnums)
        active = active_names(fn, nums)
        if self.kind == "jacrev":
            return vjp_function(fn, active, self.has_aux)[1].source  # type: ignore
        if self.kind == "hessian":  # (as __call__ computes it)
            inner: Any = jacrev(self.fun, self.argnums) if isinstance(self.argnums, int) and \
                not self.has_aux else grad(self.fun, argnums=self.argnums, has_aux=self.has_aux)
            fn = inner.differentiable()
        return jvp_function(fn, active)[1].source  # type: ignore


def _jacobian_function(j: Jacobian, closed_over: bool = False) -> Callable:
    """Write and load ``jacfwd_<f>``/``jacrev_<f>`` (see `Jacobian.differentiable`); with
    `closed_over`, of the closure's code with its closed-over values as first parameters."""
    # cycle: transforms.ad and batch.api reach this module through common.closures
    from transpiler.transforms import ad
    from transpiler.transforms.batch.api import vmap  # cycle: as above
    from transpiler.transforms.common import closures  # (closures imports this module)
    if not isinstance(j.argnums, int) or j.has_aux:
        raise TranspileError(f"a {j.kind} with several argnums or has_aux cannot be "
                             "differentiated again yet", user_location(),
                             "differentiate with respect to one argument")
    kind, fun = j.kind, j.fun
    if kind == "hessian":  # jacfwd(jacrev(f))
        kind, fun = "jacfwd", jacrev(fun, j.argnums)
    target = _differentiable_target(fun)
    params = positional_names(target)
    if not -len(params) <= j.argnums < len(params):
        raise TranspileError(f"{j.kind}: argnums {j.argnums} is out of range", user_location())
    x = params[j.argnums]
    free = list(closures.converted(target)[0]) if closed_over else []
    args = ", ".join(free + params)
    none = ", ".join(["None"] * (len(free) + len(params))) + ","
    if kind == "jacfwd" and closed_over:
        generated = closures.closure_jvp_function(target, frozenset({x}))
        callee = generated.__name__
    elif kind == "jacfwd":
        callee, generated = jvp_function(target, frozenset({x}))
    if kind == "jacfwd":
        suffix = getattr(generated, "tangent_suffix", "_dot")
        body = (f"    _out, _columns = vmap({callee}, in_axes=({none}))({args}, "
                f"{x}{suffix}=ad.basis_of({x}))\n"
                f"    return ad.forward_jacobian(_columns, {x})\n")
    else:
        if closed_over:
            generated = closures.closure_vjp_function(target, frozenset({x}))
            callee = generated.__name__
        else:
            callee, generated = vjp_function(target, frozenset({x}), False)
        bar = getattr(generated, "cotangent_param", "_out_bar")
        i = len(free) + params.index(x)  # a scalar output: its gradient, else vmap over rows
        body = (f"    _out, _bars = {callee}({args}, {bar}=ad.SEED_IF_SCALAR)\n"
                f"    if ad.is_scalar(_out):\n"
                f"        return ad.finalize(_bars[{i}], {x})\n"
                f"    _bars = vmap({callee}, in_axes=({none}))({args}, "
                f"{bar}=ad.basis_of(_out))[1]\n"
                f"    return ad.reverse_jacobian(_bars[{i}], _out, {x})\n")
    name = f"{kind}_{getattr(target, '__name__', 'f')}".replace("<lambda>", "lambda")
    source = f"def {name}({args}):\n" + body
    return emit_text(source, name, {callee: generated, "ad": ad, "vmap": vmap},
                     transform=kind, name=getattr(target, "__name__", "f"),
                     file=getattr(getattr(target, "__code__", None), "co_filename", "?"),
                     line=0)


def jacfwd(fun: Callable, argnums: Union[int, Sequence[int]] = 0,
           has_aux: bool = False) -> Jacobian:
    """``jax.jacfwd``: the Jacobian by forward mode, one jvp per input element."""
    return at_creation(Jacobian(fun, argnums, has_aux, "jacfwd"))


def jacrev(fun: Callable, argnums: Union[int, Sequence[int]] = 0,
           has_aux: bool = False) -> Jacobian:
    """``jax.jacrev``: the Jacobian by reverse mode, one vjp per output element."""
    return at_creation(Jacobian(fun, argnums, has_aux, "jacrev"))


def hessian(fun: Callable, argnums: Union[int, Sequence[int]] = 0,
            has_aux: bool = False) -> Jacobian:
    """``jax.hessian``: ``jacfwd(jacrev(f))``, forward over the generated reverse code."""
    return at_creation(Jacobian(fun, argnums, has_aux, "hessian"))


def _check_inexact(args: Sequence[Any], nums: Sequence[int], kind: str) -> None:
    for i in nums:
        for leaf in tree_util.tree_leaves(args[i]):
            dtype = abstractify(leaf).dtype
            if not dtypes.is_inexact(dtype):
                raise TypeError(f"{kind} requires real- or complex-valued inputs (input dtype "
                                f"that is a sub-dtype of np.inexact), but got {dtype.name} "
                                f"for argument {i}")


def _basis(tree: Any) -> list[Any]:
    """One tangent per element of `tree`'s leaves: one-hot pytrees, leaf by leaf."""
    leaves, treedef = tree_util.tree_flatten(tree)
    out = []
    for j, leaf in enumerate(leaves):
        leaf = jnp.asarray(leaf)
        for k in range(leaf.size):
            parts = [jnp.zeros_like(x) for x in leaves]
            parts[j] = jnp.zeros(leaf.size, leaf.dtype).at[k].set(1).reshape(leaf.shape)
            out.append(tree_util.tree_unflatten(treedef, parts))
    return out


def _blocks(columns: list[Any], in_tree: Any, out: Any) -> Any:
    """Stack per-input-element tangents into JAX's Jacobian layout: for each output leaf,
    an `in_tree`-shaped pytree of arrays of shape ``out_leaf.shape + in_leaf.shape``."""
    in_leaves, in_def = tree_util.tree_flatten(in_tree)
    out_leaves, out_def = tree_util.tree_flatten(out)
    result_leaves = []
    for o, out_leaf in enumerate(out_leaves):
        out_shape = tuple(jnp.shape(out_leaf))
        blocks, start = [], 0
        for in_leaf in in_leaves:
            in_shape, size = tuple(jnp.shape(in_leaf)), int(jnp.size(in_leaf))
            part = [jnp.reshape(columns[start + k][o], (-1,)) for k in range(size)]
            block = jnp.stack(part, axis=-1) if part else jnp.zeros((int(jnp.size(out_leaf)), 0))
            blocks.append(jnp.reshape(block, out_shape + in_shape))
            start += size
        result_leaves.append(tree_util.tree_unflatten(in_def, blocks))
    return tree_util.tree_unflatten(out_def, result_leaves)


def _tangent_keywords(target: Callable, names: list[str], count: int, nums: tuple,
                      tangent: tuple, suffix: str) -> dict[str, Any]:
    """The ``<param><suffix>=`` keywords of generated forward code for the positional
    arguments `nums` (of `count`): the ``*args`` parameter's is a tuple, None where an
    argument is not differentiated."""
    keywords: dict[str, Any] = {}
    star: list[Any] = [None] * max(0, count - len(names))
    for i, t in zip(nums, tangent):
        if i < len(names):
            keywords[f"{names[i]}{suffix}"] = t
        else:
            star[i - len(names)] = t
    if any(t is not None for t in star):
        keywords[f"{star_name(target)}{suffix}"] = tuple(star)
    return keywords


def _jacfwd(fun: Callable, args: tuple, nums: tuple, argnums: Any, has_aux: bool,
            fname: str) -> Any:
    from transpiler.transforms.ad.forward import _filled  # cycle: ad.forward imports this module
    target = _differentiable_target(fun)
    names = positional_names(target)
    _, generated = jvp_function(target, active_names(target, nums))
    suffix = getattr(generated, "tangent_suffix", "_dot")
    diff_args = tuple(args[i] for i in nums)
    columns: list[Any] = []
    out: Any = None
    for tangent in _basis(diff_args):
        result, result_dot = for_jit(generated)(*args, **_tangent_keywords(
            target, names, len(args), nums, tangent, suffix))
        out = result[0] if has_aux else result
        dot = result_dot[0] if has_aux and result_dot is not None else result_dot
        columns.append(tree_util.tree_leaves(_filled(dot, out)))
    if out is None:  # no input elements: evaluate once for the output's shape
        out = target(*args)
        out = out[0] if has_aux else out
    _check_array_output(out, "jacfwd", fname)
    in_tree = diff_args[0] if isinstance(argnums, int) else diff_args
    jac = _blocks(columns, in_tree, out)
    if has_aux:
        aux = (target(*args) if not columns else result)[1]  # type: ignore[index]
        return jac, aux
    return jac


def _jacrev(fun: Callable, args: tuple, nums: tuple, argnums: Any, has_aux: bool,
            fname: str) -> Any:
    fn = target(fun)
    _, generated = vjp_function(fn, active_names(fn, nums), has_aux)
    cotangent = getattr(generated, "cotangent_param", "_out_bar")
    result = for_jit(generated)(*args)[0]  # (no cotangent: the value alone, as transformed)
    out, aux = (result[0], result[1]) if has_aux else (result, None)
    _check_array_output(out, "jacrev", fname)
    rows: list[list[Any]] = []
    for out_leaf_basis in _output_basis(out):
        row = []
        for g in out_leaf_basis:
            _, bars = for_jit(generated)(*args, **{cotangent: g})[:2]
            finals = []
            for i in nums:
                finals.append(finalize(bars[i], args[i]))
            row.append(tree_util.tree_leaves(tuple(finals)))
        rows.append(row)
    diff_args = tuple(args[i] for i in nums)
    in_tree = diff_args[0] if isinstance(argnums, int) else diff_args
    jac = _blocks_rev(rows, in_tree, out)
    return (jac, aux) if has_aux else jac


def _output_basis(out: Any) -> list[list[Any]]:
    """For each output leaf, the one-hot cotangents (pytrees like `out`) of its elements."""
    leaves, treedef = tree_util.tree_flatten(out)
    result = []
    for j, leaf in enumerate(leaves):
        leaf = jnp.asarray(leaf)
        items = []
        for k in range(leaf.size):
            parts = [jnp.zeros_like(x) for x in leaves]
            parts[j] = jnp.zeros(leaf.size, leaf.dtype).at[k].set(1).reshape(leaf.shape)
            items.append(tree_util.tree_unflatten(treedef, parts))
        result.append(items)
    return result


def _blocks_rev(rows: list[list[Any]], in_tree: Any, out: Any) -> Any:
    in_leaves, in_def = tree_util.tree_flatten(in_tree)
    out_leaves, out_def = tree_util.tree_flatten(out)
    result_leaves = []
    for o, out_leaf in enumerate(out_leaves):
        out_shape = tuple(jnp.shape(out_leaf))
        blocks = []
        for i, in_leaf in enumerate(in_leaves):
            in_shape = tuple(jnp.shape(in_leaf))
            part = [jnp.reshape(row[i], (-1,)) for row in rows[o]]
            block = jnp.stack(part, axis=0) if part else jnp.zeros((0, int(jnp.size(in_leaf))))
            blocks.append(jnp.reshape(block, out_shape + in_shape))
        result_leaves.append(tree_util.tree_unflatten(in_def, blocks))
    return tree_util.tree_unflatten(out_def, result_leaves)


def _check_array_output(out: Any, kind: str, fname: str) -> None:
    for leaf in tree_util.tree_leaves(out):
        try:
            aval = abstractify(leaf)
        except Exception:
            raise TypeError(f"{kind}({fname}): the output must be an array or a pytree of "
                            f"arrays, got {type(leaf).__name__}") from None
        if not dtypes.is_float(aval.dtype):
            raise TypeError(f"{kind}({fname}): the output must have a floating dtype, got "
                            f"{aval.dtype}")


# j = jacfwd(closure) inside a transformed function: the closure's derivative passes through
# (hessian is not: its closure-converted form is not built, and the error stays).
carries_its_function(jacfwd)
carries_its_function(jacrev)

__all__ = ["jvp", "linearize", "jacfwd", "jacrev", "hessian", "jvp_function"]
