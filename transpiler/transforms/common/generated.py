"""Generated code of a user function, shared by every transform: the Python function a
transform reads behind our own wrappers (`target`), the frontend's parse of it (one per
function), writing and loading the generated function in its namespace, and running it
inside a jit trace (`for_jit`)."""

from __future__ import annotations

import abc
from typing import Any, Callable, Optional

import numpy as np

from transpiler.config import config
from transpiler.errors import TranspileError, user_location
from transpiler.rule_code import is_generated_rule, readers
from transpiler.transforms.common.callables import as_function
from transpiler.primitives.core import Primitive
from transpiler.codegen import emit
from transpiler.primitives.core import trace_stack
from transpiler.codegen import disk_cache
from transpiler import lax
from transpiler import numpy as jnp

_PARSED: dict[tuple, Any] = {}  # (function, disk_cache.bindings) -> frontend output


class ModuleCode(abc.ABC):
    """A transform object (``grad(f)``, ``jit(f)``, ``vmap(f)``, ``pmap(f)`` ...) whose code
    can be generated as soon as it is created: decorators rewrite at import (`at_creation`),
    and so does the import hook for a module's top-level objects (transpiler/import_hook.py)."""

    @abc.abstractmethod
    def generate_code(self, module_name: str) -> None:
        """Generate (and cache) the code this object runs, if it transforms a function
        of the module `module_name`; a transform of a transform passes it on inwards."""


def at_creation(value: ModuleCode) -> Any:
    """`value` (a transform object just created), its code generated now unless
    ``config.rewrite_on_import`` is off (then at first call)."""
    if config.rewrite_on_import:
        inner = next((getattr(value, a) for a in ("_original", "fun", "_fun")
                      if hasattr(value, a)), None)
        module = getattr(getattr(inner, "_fun", inner), "__module__", None)
        if module is not None:
            value.generate_code(module)
    return value


class Staged(ModuleCode):
    """A function staged for compilation (``jit(f)``): the transforms see through it to
    the function it stages (``_fun``), which they transform in its place."""

    _fun: Callable


class TransformedFunction(ModuleCode):
    """What a transform returns (``grad(f)``, ``jacfwd(f)``, ``vmap(f)``): callable, and
    transformable again through the plain generated Python it stands for."""

    # Rules at run time: the AD transforms reach it through ad.vjp_call / ad.jvp_call
    # instead of reading `differentiable()`'s source (vmap's batched functions).
    runtime_transform = False

    @abc.abstractmethod
    def differentiable(self) -> Callable:
        """This transform as plain generated Python that the transforms can take as input."""

    def closed_over(self) -> Optional[Callable]:
        """The closure this transforms, where it closes over values that carry a derivative
        and the transform can give their derivative (through `converted()`); else None."""
        return None

    def converted(self) -> Callable:
        """This transform of `closed_over()` as plain generated Python taking the closed-over
        values first, then the arguments: what the transforms differentiate or batch, so
        ``g = grad(lambda x: x * a)`` inside a transformed function passes `a`'s derivative."""
        raise NotImplementedError(f"{type(self).__name__} has no closure-converted form")


def closed_over(fn: Any) -> Optional[Callable]:
    """`fn.closed_over()` for a transform, else None. A function, so that the transforms can
    read the code that calls it (at higher orders): to them it is the identity on the
    derivative (classify: "pass"), the closure's being the transform's."""
    return fn.closed_over() if isinstance(fn, TransformedFunction) else None


def converted(fn: TransformedFunction) -> Callable:
    """`fn.converted()`: a function, as `closed_over`; static to the transforms (the converted
    code holds no derivative, its closed-over values being its parameters)."""
    return fn.converted()


_WRAPPERS: set[int] = set()  # registered where each wrapper is defined (jit, grad, ...)


def carries_its_function(wrapper: Callable) -> Callable:
    """Register `wrapper` (``jit``) as making a value whose derivative is its first
    argument's: ``f = jit(g)`` passes the tangent, cotangent or batch companions of `g`'s
    closure through, as ``vmap(g)`` does (classify: "pass"; vmap: the companions ride
    along). A registry, so that jit and checkpoint, above the transforms, can join it."""
    _WRAPPERS.add(id(wrapper))
    return wrapper


def is_wrapper(fn: Any) -> bool:
    """Whether `fn` was registered by `carries_its_function`."""
    return id(fn) in _WRAPPERS


class Unbatchable(TranspileError):
    """vmap met derivative code it cannot batch as one computation (a control-flow rule it
    does not read, `refuse_rule_code`; a Jacobian with respect to a pytree): `Vmapped`
    catches it and maps the function over the batch one member at a time."""


def refuse_rule_code(fn: Any, transform: str) -> None:
    """A transform reads only the control-flow rules marked for it (transpiler/rule_code.py):
    forward mode, reverse mode and vmap read the forward and reverse rules of cond/switch/
    fori_loop/scan/map/while_loop (second and batched derivatives compose through them; a
    bounded while_loop's reverse rule under jit is not read by forward mode, an unbounded
    one's by reverse mode or vmap: `Unbatchable`, mapped member by member). A derivative
    of a rule's generated derivative (a third derivative) is refused; vmap reads it."""
    if is_generated_rule(fn) and transform != "vmap":  # (vmap reads derivative code)
        raise TranspileError(
            "third-order differentiation through lax control flow (cond, switch, while_loop, "
            "fori_loop, scan, map) is not supported yet: the second-order rule "
            f"(`{getattr(fn, '__qualname__', fn)}`) cannot be differentiated again",
            user_location(), "second derivatives (grad(grad(f)), hessian, jacrev(jacrev(f))) "
            "run through it; for a third, write the loop or branch as Python control flow "
            "(it unrolls)")
    marks = readers(fn, derivative_rules_only=True)
    if marks is None or transform in marks:
        return
    rule = getattr(fn, '__qualname__', fn)
    if transform == "forward mode":
        raise TranspileError(
            "second-order differentiation through this lax control flow is not supported in "
            f"forward mode yet: its rule (`{rule}`) is not read by forward mode",
            user_location(), "use reverse over reverse (jacrev(jacrev(f)), grad(grad(f))) "
            "for it, or write the loop as Python control flow (it unrolls)")
    if transform == "vmap":
        raise Unbatchable(
            "vmap of the gradient of a while_loop with no bound under jit, inside another "
            f"vmap or with an axis_name, is not supported yet: its rule (`{rule}`) is not "
            "read by vmap", user_location(), "give the loop a bound, lax.while_loop(cond, "
            "body, init, max_iters=N), or use lax.fori_loop / lax.scan")
    raise TranspileError(
        f"{transform} of a derivative through lax control flow (cond, switch, while_loop, "
        f"fori_loop, scan, map) is not supported yet: its rule (`{rule}`) is not read by "
        f"{transform}", user_location(), "second derivatives through cond/switch/fori_loop/"
        "scan/map run as forward over reverse (hessian, jvp(grad(f))) and reverse over "
        "reverse (grad(grad(f)), jacrev(jacrev(f))); or write the branch or loop as Python "
        "control flow (it unrolls)")


def primitive_function(fun: Any) -> Any:
    """A primitive (``jnp.sin``) as the Python function ``def sin(x): return _p(x)``, which
    the transforms can read (``grad(jnp.sin)``, ``vmap(jnp.sin)``); anything else as it is."""
    template = getattr(fun, "jvp", None) if isinstance(fun, Primitive) else None
    if template is None or template.variadic:
        return fun
    hit = _PRIMITIVE_FUNCTIONS.get(fun.name)
    if hit is not None:
        return hit
    import libcst as cst  # lazy: libcst loads on first transform (import transpiler stays fast)

    names = ", ".join(template.operands)
    func = cst.parse_module(f"def {fun.name}({names}):\n"
                            f"    return _p({names})\n").body[0]
    hit = _PRIMITIVE_FUNCTIONS[fun.name] = emit(
        func, {"_p": fun}, {}, transform="primitive", name=fun.name,  # type: ignore[arg-type]
        file="<primitive>", line=0)
    return hit


_PRIMITIVE_FUNCTIONS: dict[str, Callable] = {}


def target(fn: Any) -> Any:
    """The Python function to transform behind our own wrappers: a jit's function, or a
    grad's generated derivative (so grad(grad(f)) differentiates the derivative code)."""
    while True:
        if isinstance(fn, TransformedFunction):
            return fn.differentiable()
        inner = getattr(fn, "_fun", None)
        if inner is None:  # partials, bound methods, callable objects: as plain functions
            return as_function(primitive_function(fn))
        fn = inner


def for_jit(generated: Callable) -> Callable:
    """Generated code as it runs: inside a jit trace, with its Python control flow on traced
    values converted to lax control flow (transforms/autograph/convert.py)."""
    if not trace_stack:
        return generated
    from transpiler.transforms.autograph.runtime import callee  # cycle: it reaches this module
    return callee(generated)


def parsed_function(fn: Callable) -> Any:
    """The frontend's output for `fn`: one parse per function, whichever transform or
    arguments are differentiated."""
    key = (fn, disk_cache.bindings(fn))  # its namespace is read when it is parsed
    parsed = _PARSED.get(key)
    if parsed is None:
        from transpiler.frontend import parse_function  # lazy: the frontend imports libcst
        parsed = _PARSED[key] = parse_function(fn)
    return parsed


def emit_generated(fn: Callable, parsed: Any, generated: Any, transform: str) -> Callable:
    """Write and load a generated function in `fn`'s namespace (plus the helper modules
    and the generated callees it names)."""
    namespace = dict(parsed.namespace)
    namespace.update(aliases(parsed.namespace))
    namespace.update(generated.namespace)
    first = min((loc.line for loc in parsed.locations.values() if loc is not None), default=0)
    return emit(generated.func, namespace, generated.origin, transform=transform,
                name=parsed.name, file=parsed.filename, line=first,
                module_name=getattr(fn, "__module__", None) or "__transpiler_generated__")


def aliases(namespace: dict[str, Any]) -> dict[str, Any]:
    # cycle: transforms.ad and transforms.bt import this module
    from transpiler.transforms import ad, bt
    out = {}
    for alias, module in (("jnp", jnp), ("lax", lax), ("np", np), ("ad", ad), ("bt", bt)):
        out[alias if namespace.get(alias, module) is module else f"_{alias}"] = module
    return out
