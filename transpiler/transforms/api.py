"""``grad``, ``value_and_grad`` and ``vjp`` with JAX's signatures, built on generated code."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional, Sequence, Union

from transpiler import tree_util
from transpiler.errors import TranspileError, user_location
from transpiler.transforms.callables import as_function
from transpiler.transforms.signature import source_signature, star_name

_GENERATED: dict[tuple, tuple[str, Callable]] = {}
_PARSED: dict[tuple, Any] = {}  # (function, disk_cache.bindings) -> frontend output


def primitive_function(fun: Any) -> Any:
    """A primitive (``jnp.sin``) as the Python function ``def sin(x): return _p(x)``, which
    the transforms can read (``grad(jnp.sin)``, ``vmap(jnp.sin)``); anything else as it is."""
    from transpiler.primitives.core import Primitive
    template = getattr(fun, "jvp", None) if isinstance(fun, Primitive) else None
    if template is None or template.variadic:
        return fun
    hit = _PRIMITIVE_FUNCTIONS.get(fun.name)
    if hit is not None:
        return hit
    import libcst as cst

    from transpiler.codegen import emit
    names = ", ".join(template.operands)
    func = cst.parse_module(f"def {fun.name}({names}):\n"
                            f"    return _p({names})\n").body[0]
    hit = _PRIMITIVE_FUNCTIONS[fun.name] = emit(
        func, {"_p": fun}, {}, transform="primitive", name=fun.name,  # type: ignore[arg-type]
        file="<primitive>", line=0)
    return hit


_PRIMITIVE_FUNCTIONS: dict[str, Callable] = {}


def _target(fn: Any) -> Any:
    """The Python function to transform behind our own wrappers: a jit's function, or a
    grad's generated derivative (so grad(grad(f)) differentiates the derivative code)."""
    from transpiler.transforms.forward_api import Jacobian
    while True:
        if isinstance(fn, (Transformed, Jacobian)) or getattr(type(fn), "runtime_transform",
                                                              False):
            return fn.differentiable()
        inner = getattr(fn, "_fun", None)
        if inner is None:  # partials, bound methods, callable objects: as plain functions
            return as_function(primitive_function(fn))
        fn = inner


def vjp_function(fn: Callable, active: frozenset, has_aux: bool = False) -> tuple[str, Callable]:
    """The generated ``vjp_<name>(*args, _out_bar=None) -> (out, bars)`` of `fn` (cached)."""
    fn = _target(fn)
    from transpiler.transforms.custom import CustomVJP, vjp_of_custom
    from transpiler.transforms.custom_jvp import CustomJVP, vjp_of_custom_jvp
    # Their own rules, not their source (not cached: defvjp/defjvp may follow)
    if isinstance(fn, CustomVJP):
        return f"vjp_{getattr(fn, '__name__', 'custom')}", vjp_of_custom(fn, has_aux)
    if isinstance(fn, CustomJVP):
        return f"vjp_{getattr(fn, '__name__', 'custom')}", vjp_of_custom_jvp(fn, has_aux)
    from transpiler.codegen import disk_cache
    # A global rebound (or a helper redefined) since: the code is generated again
    key = (fn, active, has_aux, disk_cache.bindings(fn))
    hit = _GENERATED.get(key)
    if hit is not None:
        return hit
    disk_key = disk_cache.key(fn, active, has_aux)
    loaded = _load_cached(fn, disk_key) if disk_key else None
    if loaded is not None:
        loaded[1].vjp_of = key  # type: ignore[attr-defined]
        _GENERATED[key] = loaded
        return loaded
    from transpiler.transforms.reverse_ad import ReverseAD
    parsed = parsed_function(fn)
    from transpiler.transforms import classify
    with classify.generating(fn):
        generated = ReverseAD(parsed, active, has_aux, vjp_function).run()
    function = emit_generated(fn, parsed, generated, "reverse mode")
    function.cotangent_param = generated.out_bar  # type: ignore[attr-defined]
    # What it is the code of: a record of code that calls it (forward mode over it, as
    # in hessian) names that, since generated code cannot be imported back.
    function.vjp_of = key  # type: ignore[attr-defined]
    result = (generated.func.name.value, function)
    _GENERATED[key] = result
    if disk_key:
        _store_cached(disk_key, fn, parsed, generated, function)
    return result


def for_jit(generated: Callable) -> Callable:
    """Generated code as it runs: inside a jit trace, with its Python control flow on traced
    values converted to lax control flow (transforms/autograph.py)."""
    from transpiler.primitives.core import trace_stack
    if not trace_stack:
        return generated
    from transpiler.transforms.autograph_runtime import callee
    return callee(generated)


def parsed_function(fn: Callable) -> Any:
    """The frontend's output for `fn`: one parse per function, whichever transform or
    arguments are differentiated."""
    from transpiler.codegen import disk_cache
    key = (fn, disk_cache.bindings(fn))  # its namespace is read when it is parsed
    parsed = _PARSED.get(key)
    if parsed is None:
        from transpiler.frontend import parse_function
        parsed = _PARSED[key] = parse_function(fn)
    return parsed


def emit_generated(fn: Callable, parsed: Any, generated: Any, transform: str) -> Callable:
    """Write and load a generated function in `fn`'s namespace (plus the helper modules
    and the generated callees it names)."""
    from transpiler.codegen import emit
    namespace = dict(parsed.namespace)
    namespace.update(_aliases(parsed.namespace))
    namespace.update(generated.namespace)
    first = min((loc.line for loc in parsed.locations.values() if loc is not None), default=0)
    return emit(generated.func, namespace, generated.origin, transform=transform,
                name=parsed.name, file=parsed.filename, line=first,
                module_name=getattr(fn, "__module__", None) or "__transpiler_generated__")


def _store_cached(disk_key: str, fn: Callable, parsed: Any, generated: Any,
                  function: Callable) -> None:
    """Record generated code for the next process (skipped if a callee can't be imported)."""
    from transpiler.codegen import disk_cache
    callees = {}
    for name, (callee, active) in generated.callees.items():
        target = _target(callee)
        origin = getattr(target, "vjp_of", None)  # generated reverse-mode code: its function
        path = disk_cache.import_path(origin[0] if origin else target)
        if path is None:
            return
        callees[name] = {"module": path[0], "qualname": path[1], "active": sorted(active)}
        if origin:
            callees[name]["vjp_of"] = [sorted(origin[1]), origin[2]]
    disk_cache.write(disk_key, {
        "name": generated.func.name.value, "source": function.source,  # type: ignore
        "out_bar": generated.out_bar, "names": sorted(parsed.namespace),
        "callees": callees, "module": getattr(fn, "__module__", None),
        "source_map": disk_cache.encode_map(getattr(function, "source_map", {}))})


def _load_cached(fn: Callable, disk_key: str, callee_code: Optional[Callable] = None
                 ) -> Optional[tuple[str, Callable]]:
    """Generated code from the disk cache; its generated callees come from `callee_code`
    (``(fn, active) -> function``; reverse mode's by default)."""
    from transpiler.codegen import disk_cache, load_source
    record = disk_cache.read(disk_key, ("names", "callees", "source", "name", "source_map",
                                        "module", "out_bar"))
    if record is None:
        return None
    namespace = disk_cache.namespace_of(fn, record["names"])
    if namespace is None:
        return None
    namespace.update(_aliases(namespace))
    for name, entry in record["callees"].items():
        callee = disk_cache.resolve_path(entry["module"], entry["qualname"])
        if callee is None:
            return None
        if "vjp_of" in entry:
            callee = vjp_function(callee, frozenset(entry["vjp_of"][0]), entry["vjp_of"][1])[1]
        active = frozenset(entry["active"])
        namespace[name] = callee_code(callee, active) if callee_code is not None else \
            vjp_function(callee, active, False)[1]
    function = load_source(record["source"], record["name"], namespace,
                           disk_cache.decode_map(record["source_map"]),
                           record["module"] or "__transpiler_generated__")
    function.cotangent_param = record["out_bar"]  # type: ignore[attr-defined]
    return record["name"], function


def _aliases(namespace: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    from transpiler import lax
    from transpiler import numpy as jnp
    from transpiler.transforms import adjoint_helpers as ad
    from transpiler.transforms import batch_runtime as bt
    out = {}
    for alias, module in (("jnp", jnp), ("lax", lax), ("np", np), ("ad", ad), ("bt", bt)):
        out[alias if namespace.get(alias, module) is module else f"_{alias}"] = module
    return out


def _as_arrays(tree: Any, floats: bool = False) -> Any:
    """NumPy values in `tree` as arrays (and Python floats too, with `floats`)."""
    import numpy as np

    from transpiler import numpy as jnp
    kinds: tuple = (np.ndarray, np.generic, float, complex) if floats else (np.ndarray, np.generic)
    return tree_util.tree_map(lambda x: jnp.asarray(x) if isinstance(x, kinds) else x, tree)


def _positional_names(fn: Callable) -> list[str]:
    params = source_signature(_target(fn)).parameters.values()
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _argnums(argnums: Union[int, Sequence[int]], nargs: int, fname: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not -nargs <= i < nargs:
            raise TypeError(f"grad({fname}): argnums {argnums} out of range for a function "
                            f"called with {nargs} positional arguments")
    return tuple(i % nargs for i in nums)


def _check_options(fun: Any, argnums: Any, has_aux: Any, fname: str) -> None:
    """grad's options, checked when it is created (as JAX does)."""
    from transpiler.errors import located
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
    from transpiler import dtypes
    from transpiler.primitives.core import abstractify
    for i in nums:
        for leaf in tree_util.tree_leaves(args[i]):
            aval = abstractify(leaf, i, fname)
            if not dtypes.is_float(aval.dtype):
                raise TranspileError(
                    f"grad({fname}) requires real-valued (floating) inputs, but argument {i} "
                    f"has dtype {aval.dtype}", user_location(),
                    "pass floats (e.g. x.astype(jnp.float32)), or leave the argument out of "
                    "argnums")


def _finalize(bar: Any, primal: Any) -> Any:
    """A full cotangent with the primal's structure: None -> zeros, primal dtypes. (An
    integer primal is an error, as for grad's own argument check: grad's wrapper runs this
    under vmap and jit too.)"""
    from transpiler import dtypes
    from transpiler import numpy as jnp
    from transpiler.primitives.core import abstractify
    leaves, tree = tree_util.tree_flatten(primal)
    for leaf in leaves:
        dtype = abstractify(leaf).dtype
        if not dtypes.is_float(dtype):
            raise TranspileError(f"grad requires real-valued (floating) inputs, but got "
                                 f"dtype {dtype}", user_location(),
                                 "pass floats (e.g. x.astype(jnp.float32)), or leave the "
                                 "argument out of argnums")
    bar_leaves = _leaves_like(bar, primal, len(leaves))
    out = []
    for b, p in zip(bar_leaves, leaves):
        zero_like = jnp.zeros_like(p)
        out.append(zero_like if b is None else jnp.astype(jnp.broadcast_to(b, jnp.shape(p)),
                                                          zero_like.dtype))
    return tree_util.tree_unflatten(tree, out)


def _leaves_like(bar: Any, primal: Any, n: int) -> list[Any]:
    if bar is None:
        return [None] * n
    if isinstance(primal, dict):
        return [x for k in sorted(primal) for x in _leaves_like(
            bar.get(k) if isinstance(bar, dict) else None, primal[k],
            len(tree_util.tree_leaves(primal[k])))]
    from transpiler.tree_util._registry import node_children
    node = node_children(primal) if not hasattr(primal, "shape") else None
    if node is not None:  # tuples, lists, NamedTuples, dataclasses, registered pytrees
        bars = node_children(bar)
        return [x for b, p in zip(bars[0] if bars else [None] * len(node[0]), node[0])
                for x in _leaves_like(b, p, len(tree_util.tree_leaves(p)))]
    return [bar]


class Transformed:
    """A transformed function: call it, or read ``.source`` (the generated code that runs)."""

    def __init__(self, call: Callable, fun: Callable, active_of: Callable[[], frozenset],
                 has_aux: bool, kind: str, argnums: Any = 0) -> None:
        functools.update_wrapper(self, fun, updated=())  # its own attributes, not fun's
        self._call, self._original, self._active_of = call, fun, active_of
        self._has_aux, self._kind, self._argnums = has_aux, kind, argnums
        self._wrapper: Optional[Callable] = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    @property
    def source(self) -> str:
        """The generated Python that runs (written to a file in the cache directory)."""
        return vjp_function(self._original, self._active_of(), self._has_aux)[1].source  # type: ignore

    def __repr__(self) -> str:
        return f"<{self._kind}({getattr(self._original, '__name__', self._original)})>"

    def differentiable(self) -> Callable:
        """This transform as plain generated Python that the transforms can take as input:
        ``def grad_f(x, y): _out, _bars = vjp_f(x, y, _out_bar=ad.SEED); return ...``."""
        if self._wrapper is None:
            self._wrapper = _wrapper_function(self)
        return self._wrapper


def _wrapper_function(t: Transformed) -> Callable:
    """Write and load ``grad_<name>`` for a grad/value_and_grad transform (see above)."""
    from transpiler.codegen import emit_text
    from transpiler.transforms import adjoint_helpers as ad
    fun = _target(t._original)
    params = _positional_names(fun)
    vjp_name, generated = vjp_function(fun, t._active_of(), t._has_aux)
    nums = (t._argnums,) if isinstance(t._argnums, int) else tuple(t._argnums)
    star = star_name(fun)
    keywords = next((p.name for p in source_signature(fun).parameters.values()
                     if p.kind == p.VAR_KEYWORD), None)
    nums = tuple(i + len(params) if i < 0 else i for i in nums)
    grads = [f"ad.finalize(_bars[{i}], {params[i]})" if i < len(params) else
             f"ad.finalize(_bars[{i}], {star}[{i - len(params)}])" for i in nums]
    grad_expr = grads[0] if isinstance(t._argnums, int) else f"({', '.join(grads)},)"
    if t._has_aux:
        grad_expr = f"({grad_expr}, _out[1])" if t._kind == "grad" else grad_expr
    result = grad_expr if t._kind == "grad" else f"(_out, {grad_expr})"
    name = f"{t._kind}_{getattr(fun, '__name__', 'f')}".replace("<lambda>", "lambda")
    defaults = {p.name: p.default for p in inspect.signature(fun).parameters.values()
                if p.name in params and p.default is not p.empty}
    rest = ([f"*{star}"] if star else []) + ([f"**{keywords}"] if keywords else [])
    signature = ", ".join([f"{p}=_default_{p}" if p in defaults else p for p in params] + rest)
    source = (f"def {name}({signature}):\n"
              f"    _out, _bars = {vjp_name}({', '.join(params + rest)}, "
              f"{getattr(generated, 'cotangent_param', '_out_bar')}=ad.SEED)\n"
              f"    return {result}\n")
    namespace = {vjp_name: generated, "ad": ad, **{f"_default_{p}": v for p, v in defaults.items()}}
    return emit_text(source, name, namespace, transform=t._kind,
                     name=getattr(fun, "__name__", "f"), file=getattr(
                         getattr(fun, "__code__", None), "co_filename", "?"), line=0)


def _active_names(fun: Callable, argnums: Union[int, Sequence[int]]) -> frozenset:
    names = _positional_names(fun)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    star = star_name(_target(fun)) if any(i >= len(names) for i in nums) else None
    return frozenset([names[i] for i in nums if -len(names) <= i < len(names)] +
                     ([star] if star else []))


def value_and_grad(fun: Callable, argnums: Union[int, Sequence[int]] = 0,
                   has_aux: bool = False) -> Transformed:
    """``jax.value_and_grad``: ``f(*args) -> (value, grads)`` (``((value, aux), grads)``)."""
    fname = getattr(fun, "__name__", "function")
    _check_options(fun, argnums, has_aux, fname)

    def value_and_grad_f(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(argnums, len(args), fname)
        _check_differentiable(args, nums, fname)
        names = _positional_names(fun)
        active = frozenset(names[i] for i in nums if i < len(names))
        if max(nums) >= len(names):  # into *args: the generated code differentiates it all
            star = star_name(_target(fun))
            if star is None:
                raise TypeError(f"grad({fname}): argnums {argnums} out of range for "
                                f"{len(names)} positional parameters")
            active |= {star}
        _, generated = vjp_function(fun, active, has_aux)
        from transpiler.transforms.runtime_helpers import SEED
        # like JAX: NumPy inputs become arrays, and so do the Python floats differentiated
        # (weakly typed), so the function computes on arrays wherever JAX traces
        args = tuple(_as_arrays(a, floats=i in nums) for i, a in enumerate(args))
        out, bars = for_jit(generated)(*args, **kwargs, **{_cotangent(generated): SEED})
        grads = tuple(_finalize(bars[i], args[i]) for i in nums)
        return out, (grads[0] if isinstance(argnums, int) else grads)

    from transpiler.import_hook import at_creation
    return at_creation(Transformed(value_and_grad_f, fun, lambda: _active_names(fun, argnums),
                                   has_aux, "value_and_grad", argnums))


def grad(fun: Callable, argnums: Union[int, Sequence[int]] = 0,
         has_aux: bool = False) -> Transformed:
    """``jax.grad``: the gradient of a real scalar function, as generated Python."""
    vg = value_and_grad(fun, argnums, has_aux)

    def grad_f(*args: Any, **kwargs: Any) -> Any:
        out, grads = vg(*args, **kwargs)
        return (grads, out[1]) if has_aux else grads

    from transpiler.import_hook import at_creation
    return at_creation(Transformed(grad_f, fun, lambda: _active_names(fun, argnums), has_aux,
                                   "grad", argnums))


def vjp(fun: Callable, *primals: Any, has_aux: bool = False) -> Any:
    """``jax.vjp``: ``(out, vjp_fn)`` (``(out, vjp_fn, aux)`` with has_aux)."""
    names = _positional_names(fun)
    if len(primals) > len(names):
        raise TypeError(f"vjp: {len(primals)} primals for a function with {len(names)} "
                        "positional parameters")
    active = frozenset(names[:len(primals)])
    _, generated = vjp_function(fun, active, has_aux)
    primals = tuple(_as_arrays(p, floats=True) for p in primals)  # as value_and_grad does
    result = fun(*primals)
    out, aux = (result[0], result[1]) if has_aux else (result, None)

    def vjp_fn(cotangent: Any) -> tuple:
        _check_cotangent(cotangent, out, getattr(fun, "__name__", "function"))
        _, bars = for_jit(generated)(*primals, **{_cotangent(generated): cotangent})
        return tuple(_finalize(b, p) for b, p in zip(bars, primals))

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _cotangent(generated: Callable) -> str:
    return getattr(generated, "cotangent_param", "_out_bar")


def _check_cotangent(cotangent: Any, out: Any, fname: str) -> None:
    """JAX's rule: the cotangent has the output's structure, shapes and dtypes."""
    from transpiler.primitives.core import abstractify
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
