"""``jax.make_jaxpr``: the program ``jit`` traces, printed in JAX's readable form.

JAX prints a jaxpr: typed variables and one primitive application per line. Here the traced
program is the StableHLO module ``jit(f).lower(*args)`` builds, so `make_jaxpr` prints
that module in the same shape -- ``c:f32[2,4] = dot_general a b`` -- with the user's
``file:line`` of each operation, loops and branches as indented sub-programs::

    { lambda ; a:f32[2,3] b:f32[3,4]. let
        c:f32[2,4] = dot_general a b  dot_dimension_numbers=...  # model.py:3
        d:f32[2,4] = tanh c  # model.py:3
      in (d,) }

Constants are literals (small) or shapes (large). ``.lower(...).as_text()`` gives the
StableHLO itself, and ``grad(f).source`` the generated Python a transform runs.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

from iree.compiler import ir

from transpiler import tree_util
from transpiler.array import ShapeDtypeStruct
from transpiler.errors import located
from transpiler.jit import jit
from transpiler.primitives.core import ShapedArray

__all__ = ["make_jaxpr", "ClosedJaxpr"]

_ELEMENTS = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "i1": "bool",
             "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "ui8": "u8",
             "ui16": "u16", "ui32": "u32", "ui64": "u64", "complex<f32>": "c64",
             "complex<f64>": "c128"}
# Attributes that only restate the types, or that say nothing to a reader.
_QUIET = {"operandSegmentSizes", "resultSegmentSizes", "compare_type"}
_SMALL = 8  # constants of up to this many elements print their values


class ClosedJaxpr:
    """A traced program: its input and output avals, and its readable text (``str()``)."""

    def __init__(self, lowered: Any) -> None:
        self.lowered = lowered
        self.in_avals: list[ShapedArray] = list(lowered.in_avals)
        self.out_avals: list[ShapedArray] = list(lowered.out_avals)
        self.consts: list[Any] = []  # (constants are literals of the program)
        with lowered.staged.context:
            self._lines = list(_Printer().function(_main(lowered.staged),
                                                    len(self.out_avals)))

    @property
    def jaxpr(self) -> "ClosedJaxpr":
        return self

    @property
    def eqns(self) -> list[str]:
        """The program's top-level operations, one line each."""
        return [line.strip() for line in self._lines[1:-1] if line.startswith("    ")
                and not line.startswith("     ")]

    def pretty_print(self) -> str:
        return "\n".join(self._lines)

    def __str__(self) -> str:
        return self.pretty_print()

    def __repr__(self) -> str:
        return self.pretty_print()


def make_jaxpr(fun: Callable, static_argnums: Any = (), axis_env: Any = None,
               return_shape: bool = False, abstracted_axes: Any = None) -> Callable:
    """``jax.make_jaxpr``: a function of `fun`'s arguments that returns the program `jit`
    traces for them (a `ClosedJaxpr`; with ``return_shape=True`` also the output's
    `ShapeDtypeStruct` pytree)."""
    if not callable(fun):
        raise located(TypeError, f"make_jaxpr expects a callable, got {type(fun).__name__}")
    if axis_env or abstracted_axes is not None:
        raise located(NotImplementedError, "make_jaxpr: axis_env and abstracted_axes are not "
                      "supported", "trace the function inside vmap/pmap with its axis name")

    def traced(*args: Any, **kwargs: Any) -> Any:
        lowered = jit(fun, static_argnums=static_argnums).lower(*args, **kwargs)
        jaxpr = ClosedJaxpr(lowered)
        if not return_shape:
            return jaxpr
        shapes = [ShapeDtypeStruct(a.shape, a.dtype) for a in lowered.out_avals]
        return jaxpr, tree_util.tree_unflatten(lowered.out_tree, shapes)

    return traced


def _main(staged: Any) -> Any:
    for op in staged.module.body.operations:
        if op.operation.name == "func.func" and \
                ir.StringAttr(op.attributes["sym_name"]).value == staged.name:
            return op
    raise ValueError(f"no function {staged.name} in the traced module")


class _Printer:
    """Names values a, b, ..., z, ba, bb ... as JAX does, and prints operations."""

    def __init__(self) -> None:
        self.names: dict[Any, str] = {}

    def name(self, value: ir.Value) -> str:
        found = self.names.get(value)
        if found is None:
            found = self.names[value] = _letters(len(self.names))
        return found

    def typed(self, value: ir.Value) -> str:
        return f"{self.name(value)}:{_type(value.type)}"

    def function(self, func: Any, outputs: int) -> Iterator[str]:
        """`func`'s body; of what it returns, the first `outputs` values (the rest are
        loop results kept alive for IREE, lowering/trace.py)."""
        block = func.regions[0].blocks[0]
        params = " ".join(self.typed(a) for a in block.arguments)
        yield f"{{ lambda ; {params}. let"
        yield from self.block(block, "    ", outputs)
        yield "  }"

    def block(self, block: Any, indent: str, outputs: Optional[int] = None) -> Iterator[str]:
        for op in block.operations:
            op = op.operation
            if op.name in ("func.return", "stablehlo.return"):
                values = list(op.operands)[:outputs]
                returned = ", ".join(self.name(v) for v in values)
                yield f"{indent[:-2]}in ({returned}{',' if len(values) == 1 else ''})"
                continue
            yield from self.operation(op, indent)

    def operation(self, op: Any, indent: str) -> Iterator[str]:
        results = " ".join(self.typed(r) for r in op.results)
        head = f"{results} = " if results else ""
        name = op.name.split(".", 1)[-1]
        monoid = _monoid(op)
        if monoid is not None:  # reduce_sum, reduce_max ...: the body says nothing more
            name, op_regions = f"{name}_{monoid}", []
        else:
            op_regions = list(op.regions)
        operands = " ".join(self.name(v) for v in op.operands)
        params = "  ".join(p for p in (_param(op, k) for k in _attribute_names(op)) if p)
        where = _location(op.location)
        line = f"{indent}{head}{name} {operands}".rstrip()
        if params:
            line += "  " + params
        yield line + (f"  # {where}" if where else "")
        for i, region in enumerate(op_regions):
            for block in region.blocks:
                args = " ".join(self.typed(a) for a in block.arguments)
                yield f"{indent}  {_region_name(op.name, i)}: {{ lambda ; {args}. let"
                yield from self.block(block, indent + "    ")
                yield f"{indent}  }}"


_MONOIDS = {"stablehlo.add": "sum", "stablehlo.multiply": "prod", "stablehlo.maximum": "max",
            "stablehlo.minimum": "min", "stablehlo.and": "and", "stablehlo.or": "or"}


def _monoid(op: Any) -> Optional[str]:
    """For a reduce (or reduce_window) whose body is one add/multiply/max/min of its two
    arguments, that monoid's name."""
    if op.name not in ("stablehlo.reduce", "stablehlo.reduce_window") or len(op.regions) != 1:
        return None
    body = list(op.regions[0].blocks[0].operations)
    if len(body) != 2 or len(op.results) != 1:
        return None
    return _MONOIDS.get(body[0].operation.name)


def _attribute_names(op: Any) -> list[str]:
    return [op.attributes[i].name for i in range(len(op.attributes))]


def _param(op: Any, key: str) -> Optional[str]:
    if key in _QUIET:
        return None
    attr = op.attributes[key]
    if op.name == "stablehlo.constant" and key == "value":
        return _constant(attr)
    if isinstance(attr, ir.DenseI64ArrayAttr) or str(attr).startswith("array<i64"):
        values = [int(v) for v in ir.DenseI64ArrayAttr(attr)]
        return f"{key}=({''.join(f'{v},' if len(values) == 1 else f'{v}, ' for v in values)})" \
            .replace(", )", ")")
    text = str(attr)
    if text.startswith("#stablehlo<") and text.endswith(">"):  # an enum: its value
        text = text[len("#stablehlo<"):-1].split(" ")[-1]
    elif text.startswith("#stablehlo."):
        text = text[len("#stablehlo."):]
    return f"{key}={text}"


def _constant(attr: Any) -> str:
    try:
        dense = ir.DenseElementsAttr(attr)
    except (ValueError, TypeError):
        return f"value={attr}"
    if dense.is_splat:
        return f"value={_scalar_text(str(dense.get_splat_value()))}"
    if len(dense) <= _SMALL:
        text = str(attr)
        return "value=" + text[text.index("<") + 1:text.rindex(">")]
    return f"value=<{len(dense)} elements>"


def _scalar_text(text: str) -> str:
    return text.split(":")[0].strip()


def _region_name(op: str, index: int) -> str:
    if op == "stablehlo.while":
        return ("cond", "body")[index]
    if op in ("stablehlo.if", "stablehlo.case"):
        return f"branch{index}"
    return "computation" if index == 0 else f"region{index}"


def _type(t: ir.Type) -> str:
    text = str(t)
    if text.startswith("tensor<"):
        inner = text[len("tensor<"):-1]
        parts = inner.split("x")
        # complex<f32> has no 'x'; a shape is the leading integer parts
        dims = []
        while parts and parts[0].isdigit():
            dims.append(parts.pop(0))
        element = "x".join(parts)
        return f"{_ELEMENTS.get(element, element)}[{','.join(dims)}]"
    return text


def _location(loc: Any) -> str:
    text = str(loc)
    if not text.startswith('loc("'):
        return ""
    file, _, rest = text[5:].partition('"')
    line = rest.strip(":").split(":")[0]
    return f"{file.rsplit('/', 1)[-1]}:{line}"


def _letters(n: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    text = letters[n % 26]
    n //= 26
    while n:
        text = letters[n % 26] + text
        n //= 26
    return text
