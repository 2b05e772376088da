"""What a statement of ANF code does, for the transforms: its kind, operands and callee.

Callees are resolved at transform time through the function's namespace (globals and
closure cells), so ``jnp.sum`` is the real function whatever the module calls it. The
answer drives activity analysis (which values depend on differentiated inputs) and rule
selection (primitive template, recursive transform of a composite, or a structural rule).
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import types
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

import libcst as cst

from transpiler.per_thread import PerThreadList
from transpiler.primitives.core import Primitive
from transpiler.transforms.reverse.custom_vjp import CustomVJP
from transpiler import lax
from transpiler import numpy as jnp
from transpiler import rewritten
from transpiler.builtin_functions import stand_in
from transpiler.numpy import creation
from transpiler.rewritten import sequence, with_item
from transpiler.primitives import core
from transpiler.transforms.reverse import custom_vjp as custom
from transpiler.transforms.reverse.generate import vjp_function
from transpiler.transforms.forward import api as forward_api
from transpiler.transforms.ad import calls, forward as forward_helpers, cotangents as runtime_helpers
from transpiler.transforms.ad import control, indexing, remat
from transpiler.transforms.batch.api import vmap
from transpiler.transforms.common import closures, partials, signature
from transpiler.transforms.common.arguments import as_arrays, finalize
from transpiler.transforms.common.callables import as_function
from transpiler.transforms.common.traced import readable
from transpiler.transforms.forward.custom_jvp import CustomJVP
from transpiler.transforms.common import generated
from transpiler.transforms.common.generated import Staged, is_wrapper
from transpiler.transforms.ad.cotangents import defined

# The functions whose derivative code is being generated, on this thread: a call to one
# of them (recursion, direct or through a helper) is resolved at run time instead
# (``ad.jvp_call``/``ad.vjp_call``), by which time its generated code exists -- so a
# recursion with a static depth runs as deep as its arguments take it.
GENERATING: PerThreadList[Any] = PerThreadList("generating")


@contextlib.contextmanager
def generating(fn: Any) -> Iterator[None]:
    GENERATING.append(fn)
    try:
        yield
    finally:
        GENERATING.pop()


# A key of a transform's namespace (statements.transform_namespace): whether the function is
# the user's code, not the library's
USER_CODE = "__user_code__"

# Binary and unary operators, as the `transpiler.numpy` functions they stand for.
BINOP_TO_FUNCTION = {
    cst.Add: "add", cst.Subtract: "subtract", cst.Multiply: "multiply",
    cst.Divide: "true_divide", cst.FloorDivide: "floor_divide", cst.Modulo: "remainder",
    cst.Power: "power", cst.MatrixMultiply: "matmul",
}
UNARY_TO_FUNCTION = {cst.Minus: "negative", cst.Plus: "positive"}

# Array methods, as the `transpiler.numpy` functions they forward to (self first).
METHOD_TO_FUNCTION = {m: m for m in (
    "sum", "mean", "prod", "max", "min", "cumsum", "cumprod", "var", "std", "ravel", "squeeze",
    "swapaxes", "clip", "round", "dot", "take", "repeat", "astype", "conj", "conjugate")}
METHOD_TO_FUNCTION["flatten"] = "ravel"
# Methods whose signature differs from the function's (``x.reshape(2, -1)``): the method.
METHOD_OWN = frozenset({"reshape", "transpose"})

# Attributes of arrays that are static metadata, never differentiable values.
STATIC_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "size", "itemsize", "nbytes",
                               "weak_type", "aval"})
ATTRIBUTE_TO_FUNCTION = {"T": "transpose", "mT": "matrix_transpose", "real": "real"}

# Callables whose results never carry a derivative (they inspect, they don't compute).
STATIC_BUILTINS = frozenset({len, isinstance, type, range, int, bool, str, print,
                             repr, hasattr, callable, id, hash, slice,
                             builtins.all, builtins.any, frozenset, set})
PASS_THROUGH = frozenset({tuple, list})
# Modules of the library whose functions only inspect shapes, dtypes and axes.
STATIC_MODULES = frozenset({"transpiler.dtypes", "transpiler.errors", "transpiler.config"})


def _static_functions() -> frozenset:
    # ... and the transforms' own machinery, reached through the run-time helpers of
    # generated code (a derivative of a derivative): it returns functions, never values.
    return frozenset({jnp.shape, jnp.ndim, jnp.size, jnp.result_type, core.abstractify,
                      lax.stop_gradient, calls.vjp_rule, vjp_function,
                      creation.from_numpy,  # (NumPy's values in: constants)
                      creation.holds_ours,
                      forward_api.jvp_function, runtime_helpers.differentiable_value,
                      forward_helpers.jvp_rule, runtime_helpers.basis_of, custom._bind,
                      runtime_helpers.is_scalar, rewritten.sort_order, calls.unbound,
                      calls.needs_primal, calls.differentiated_keywords,
                      inspect.signature, signature.star_name, signature.source_signature,
                      control.reverse_rule, control.forward_rule,
                      core.normalize_axis, core.normalize_axes, core.broadcast_shapes,
                      core.promote_avals, core.shape_error, core.dtype_error})


STATIC_FUNCTIONS: frozenset = frozenset()  # filled on first use (import order)


@dataclass
class Op:
    """The right-hand side of one ANF assignment, classified."""

    kind: str                       # copy | const | call | binop | unary | compare | index |
                                    # attribute | pack | dict | other
    operands: list[str] = field(default_factory=list)   # Names read by the value
    callee: Any = None              # resolved object (call), or function name (binop ...)
    callee_expr: Optional[cst.BaseExpression] = None
    method_self: Optional[str] = None   # for a method call: the receiver Name
    attr: str = ""


def names_in(node: cst.CSTNode) -> list[str]:
    """The Names a value reads, in order (attribute names and keywords excluded)."""
    found: list[str] = []
    _collect_names(node, found)
    return found


_CONSTANTS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis)


def _collect_names(node: cst.CSTNode, found: list[str]) -> None:
    """`names_in` for the expressions ANF produces, walked directly (a visitor costs ~20x
    more); anything else goes through a generic visitor."""
    kind = type(node)
    if kind is cst.Name:
        if node.value not in ("True", "False", "None"):  # type: ignore[attr-defined]
            found.append(node.value)  # type: ignore[attr-defined]
    elif kind is cst.Attribute:
        _collect_names(node.value, found)  # type: ignore[attr-defined]
    elif kind is cst.Call:
        _collect_names(node.func, found)  # type: ignore[attr-defined]
        for arg in node.args:  # type: ignore[attr-defined]
            _collect_names(arg.value, found)
    elif kind is cst.BinaryOperation:
        _collect_names(node.left, found)  # type: ignore[attr-defined]
        _collect_names(node.right, found)  # type: ignore[attr-defined]
    elif kind is cst.UnaryOperation:
        _collect_names(node.expression, found)  # type: ignore[attr-defined]
    elif kind in (cst.Tuple, cst.List):
        for element in node.elements:  # type: ignore[attr-defined]
            _collect_names(element.value, found)
    elif kind is cst.Subscript:
        _collect_names(node.value, found)  # type: ignore[attr-defined]
        for element in node.slice:  # type: ignore[attr-defined]
            index = element.slice
            if type(index) is cst.Index:
                _collect_names(index.value, found)
            else:  # a Slice
                for part in (index.lower, index.upper, index.step):
                    if part is not None:
                        _collect_names(part, found)
    elif kind is cst.Comparison:
        _collect_names(node.left, found)  # type: ignore[attr-defined]
        for target in node.comparisons:  # type: ignore[attr-defined]
            _collect_names(target.comparator, found)
    elif kind in _CONSTANTS:
        pass
    else:
        _visit_names(node, found)


def _visit_names(node: cst.CSTNode, found: list[str]) -> None:
    class Collect(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            if node.value not in ("True", "False", "None"):
                found.append(node.value)

    node.visit(Collect())


def dotted(node: cst.BaseExpression) -> Optional[list[str]]:
    """``a.b.c`` -> ["a", "b", "c"]; None for anything else."""
    if isinstance(node, cst.Name):
        return [node.value]
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return None if base is None else base + [node.attr.value]
    return None


def resolve(parts: list[str], namespace: dict[str, Any]) -> Any:
    obj = namespace[parts[0]]
    for part in parts[1:]:
        obj = getattr(obj, part)
    return obj


_MISSING = object()


def static_comprehension(value: cst.BaseExpression, namespace: dict[str, Any],
                         local_names: set[str]) -> bool:
    """``[abstractify(x) for x in xs]``: a list of static facts about arrays, inactive
    whatever `xs` holds."""
    if not (isinstance(value, cst.ListComp) and isinstance(value.elt, cst.Call)):
        return False
    op = classify(value.elt, namespace, local_names)
    return op.kind == "call" and callee_kind(op.callee) == "static"


def method_call(op: Op) -> tuple[cst.Arg, str]:
    """A method call ``x.method(...)``: its receiver, as the first argument of the function
    the call becomes, and the method's name."""
    assert op.method_self is not None  # classify records the receiver of every method call
    return cst.Arg(cst.Name(op.method_self)), op.callee[1]


def unbound_method(receiver: str, method: str, args: list) -> tuple[cst.BaseExpression, list]:
    """``x.method(*args)`` as ``ad.unbound(x, "method")(x, *args)``: the call of a method of
    a Python class as a call of its function (transforms/ad/cotangents.py)."""
    func = cst.parse_expression(f"ad.unbound({receiver}, {method!r})")
    return func, [cst.Arg(cst.Name(receiver)), *args]


def classify(value: cst.BaseExpression, namespace: dict[str, Any], local_names: set[str]) -> Op:
    """Classify the value of `name = value` (ANF: operands are Names or literals)."""
    operands = names_in(value)
    local_operands = [n for n in operands if n in local_names]
    if isinstance(value, cst.Name):
        return Op("copy" if value.value in local_names else "const", local_operands)
    if isinstance(value, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString,
                          cst.FormattedString)):
        return Op("const")
    if isinstance(value, cst.UnaryOperation) and isinstance(value.expression,
                                                           (cst.Integer, cst.Float)):
        return Op("const")
    if isinstance(value, cst.Call):
        parts = dotted(value.func)
        if parts is not None and parts[0] in local_names:
            if len(parts) == 2:  # method call on a value: x.sum(axis=1)
                return Op("call", local_operands, callee=("method", parts[1]),
                          callee_expr=value.func, method_self=parts[0])
            return Op("call", local_operands, callee=("local", parts[0]), callee_expr=value.func)
        callee = resolve(parts, namespace) if parts is not None and parts[0] in namespace \
            else _MISSING
        # Python's max, min, sum, abs, and NumPy's functions: their differentiable forms
        callee = stand_in(callee, numpy=namespace.get(USER_CODE, True))
        callee = as_function(callee)  # m.loss, partials, callable objects: their functions
        return Op("call", local_operands, callee=callee, callee_expr=value.func)
    if isinstance(value, cst.BinaryOperation):
        return Op("binop", local_operands, callee=BINOP_TO_FUNCTION.get(type(value.operator)))
    if isinstance(value, cst.UnaryOperation):
        return Op("unary", local_operands, callee=UNARY_TO_FUNCTION.get(type(value.operator)))
    if isinstance(value, (cst.Comparison, cst.BooleanOperation)):
        return Op("compare", local_operands)
    if isinstance(value, cst.Subscript):
        return Op("index", local_operands)
    if isinstance(value, cst.Attribute):
        return Op("attribute", local_operands, attr=value.attr.value)
    if isinstance(value, (cst.Tuple, cst.List)):
        return Op("pack", local_operands)
    if isinstance(value, cst.Dict):
        return Op("dict", local_operands)
    return Op("other", local_operands)


# lax control flow: differentiated by run-time rules (transforms/ad/control.py).
_CONTROL_FLOW = frozenset({"cond", "switch", "while_loop", "fori_loop", "scan", "map"})
CONTROL_MODULES = frozenset({"transpiler.lax.control", "transpiler.lax.loops"})

_HELPER_KINDS: dict[int, str] = {}



def _cotangent_helpers() -> dict[int, str]:
    """The run-time helpers of generated code (``ad.add`` ...) that differentiate as the
    linear maps they are -- second-order derivatives run through them, and their source
    walks containers in ways the transforms do not take apart (comprehensions)."""
    if not _HELPER_KINDS:
        rh = runtime_helpers
        _HELPER_KINDS.update({id(as_arrays): "pass", id(forward_helpers._filled): "pass",
                              id(finalize): "pass",
                              id(forward_helpers.zeros_like_tree): "static",
                              id(rh.add): "cotangent_add", id(rh.item): "cotangent_item",
                              id(rh.unpacked_dict_bar): "cotangent_unpacked_dict",
                              id(rh.index_bar): "cotangent_index_bar",
                              id(rh.attribute_bar): "cotangent_attribute_bar",
                              id(with_item): "cotangent_with_item",
                              id(rh.without_item): "cotangent_without_item",
                              id(rh.items_bar): "cotangent_items_bar",
                              id(rh.values_bar): "cotangent_values_bar",
                              id(rh.keyword_bars): "cotangent_keyword_bars",
                              id(rh.attribute_tangent): "cotangent_attribute_tangent",
                              id(rh.appended): "cotangent_appended",
                              id(rh.unpacked_cotangent): "cotangent_unpacked",
                              id(rh.finalize): "pass", id(rh.or_zeros): "pass",
                              id(rh.spread): "pass", id(sequence): "pass",
                              id(calls.unstaged): "pass"})  # (jit is the identity)
        _HELPER_KINDS[id(vmap)] = "pass"  # vmap(g) carries g's closure (its derivative)
        # a closure's derivative: its cells'
        _HELPER_KINDS.update({id(closures.closure_params): "closure_free_params",
                              id(closures.free_values): "closure_free_values",
                              id(closures.free_bars): "closure_free_bars",
                              id(closures.free_names): "static",
                              id(closures.is_closure): "static",
                              id(closures.carries_derivative): "static",
                              id(closures.cell_tangents): "closure_cell_tangents",
                              id(closures.given_names): "static",
                              id(closures.tangent_suffix): "static",
                              id(closures.arg_names): "static",
                              id(generated.closed_over): "pass",  # (its derivative: fn's)
                              id(generated.converted): "static",
                              id(closures.active_names): "static",
                              id(closures.closure_vjp_function): "static",
                              id(closures.closure_jvp_function): "static"})
        # a checkpoint's barrier: the identity
        _HELPER_KINDS[id(remat.recompute)] = "pass"
        _HELPER_KINDS[id(remat.checkpoint_name)] = "pass"  # a name for the policies
        # sort's derivatives: permutations
        _HELPER_KINDS.update({id(indexing.sorted_tangent): "sort_permuted",
                              id(indexing.unsorted_cotangent): "sort_unpermuted"})
        # the rules forward mode reads
        _HELPER_KINDS.update({id(control.fill): "control_fill",
                              id(control._where): "control_where",
                              id(control._primal): "pass",  # (conversion is staging only)
                              id(control._traced): "static",
                              id(control._any): "static",
                              id(control._index_dtype): "static"})
        # a partial's derivative: its arguments'
        _HELPER_KINDS.update({id(partials.bound): "partial_bound",
                              id(partials.pair): "partial_pair",
                              id(partials.own_bars): "partial_own_bars",
                              id(partials.make_vjp): "partial_make_vjp",
                              id(partials._empty): "static", id(partials.is_partial): "static",
                              id(partials.arity): "static", id(partials.function): "static"})
    return _HELPER_KINDS


def callee_kind(callee: Any) -> str:
    """primitive | static | pass | function | jitted | custom | unknown (see the module
    docstring); "custom" is a `custom_vjp` function, differentiated by its own rule."""
    global STATIC_FUNCTIONS
    if not STATIC_FUNCTIONS:
        STATIC_FUNCTIONS = _static_functions()
    if isinstance(callee, Primitive):
        return "primitive" if callee.differentiable else "static"
    if isinstance(callee, CustomVJP):
        return "custom"
    if isinstance(callee, CustomJVP):
        return "custom_jvp"
    if callee is _MISSING:
        return "unknown"
    if getattr(callee, "__module__", None) in CONTROL_MODULES and \
            getattr(callee, "__name__", "") in _CONTROL_FLOW:
        return "control"
    if isinstance(callee, tuple):
        return callee[0]  # ("method", name) or ("local", name)
    if getattr(type(callee), "runtime_transform", False):  # vmap(f): rules at run time
        return "runtime"
    if callee is runtime_helpers.seed:  # identity in the cotangent, constant in the output
        return "seed"
    if is_wrapper(callee):  # f = jit(g): g's derivative
        return "pass"
    helper = _cotangent_helpers().get(id(callee))
    if helper is not None:
        return helper
    try:
        if callee in STATIC_BUILTINS or callee in STATIC_FUNCTIONS:
            return "static"
        if callee in PASS_THROUGH:
            return "pass"
    except TypeError:  # unhashable callee
        pass
    if getattr(callee, "__module__", "") in STATIC_MODULES:
        return "static"
    if isinstance(callee, types.FunctionType):
        return "runtime" if callee in GENERATING or not readable(callee) else "function"
    if isinstance(callee, Staged):
        return "jitted"
    if isinstance(callee, type):
        return "static" if issubclass(callee, (int, float, bool, str)) else "unknown"
    return "unknown"


def string_tuple(value: cst.BaseExpression) -> Optional[list[str]]:
    """The strings of a tuple of string literals (the names ``ad.defined`` reads)."""
    if isinstance(value, cst.Tuple) and all(isinstance(e.value, cst.SimpleString)
                                            for e in value.elements):
        return [e.value.evaluated_value for e in value.elements]  # type: ignore
    return None


def defined_names(op: Op, name_tuples: dict[str, list[str]]) -> Optional[list[str]]:
    """For ``ad.defined(locals(), names)`` in generated reverse code (the values a loop's
    tape saves where the body assigned them), the names it reads; else None. Its
    derivative and batch axes are those of the names, which the transforms follow."""
    if op.kind == "call" and op.callee is defined and op.operands:  # (`locals()` stays inline)
        return name_tuples.get(op.operands[-1])
    return None


def propagates(op: Op) -> bool:
    """Whether a derivative flows through the value `op` computes (not: constants,
    comparisons, static attributes such as ``.shape``, static calls)."""
    if op.kind in ("const", "compare"):
        return False
    if op.kind == "attribute":
        return op.attr not in STATIC_ATTRIBUTES
    if op.kind == "call":
        return callee_kind(op.callee) != "static"
    if op.kind in ("binop", "unary"):
        return op.callee is not None
    return True


def reads(op: Op) -> list[str]:
    """The operands a derivative flows from: ``ad.seed(out_bar, out)`` (generated reverse
    code) passes its cotangent on and reads `out` only for its shape."""
    if op.kind == "call" and callee_kind(op.callee) == "seed":
        return op.operands[:1]
    return op.operands
