"""What lowering rules use to emit StableHLO: types, constants, broadcasting, conversion.

Every rule receives a `LoweringContext` whose insertion point and location are already
set to the user's line, so ``ctx.op("stablehlo.add", [x, y])`` is all a rule writes.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
from iree.compiler import ir

from transpiler import dtypes
from transpiler.primitives.core import ShapedArray


def element_type(dtype: np.dtype) -> ir.Type:
    """The MLIR element type of a NumPy dtype (signless for signed ints, ``ui`` for unsigned)."""
    if dtype == dtypes.bool_:
        return ir.IntegerType.get_signless(1)
    if dtype.kind == "i":
        return ir.IntegerType.get_signless(dtype.itemsize * 8)
    if dtype.kind == "u":
        return ir.IntegerType.get_unsigned(dtype.itemsize * 8)
    if dtypes.is_complex(dtype):
        return ir.ComplexType.get(element_type(dtypes.real_dtype(dtype)))
    factory = {dtypes.float16: ir.F16Type, dtypes.bfloat16: ir.BF16Type,
               dtypes.float32: ir.F32Type, dtypes.float64: ir.F64Type}.get(dtype)
    if factory is None:
        raise TypeError(f"dtype {dtype} cannot be lowered to StableHLO")
    return factory.get()


def tensor_type(shape: Sequence[int], dtype: np.dtype) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape), element_type(dtype))


def aval_type(aval: ShapedArray) -> ir.RankedTensorType:
    return tensor_type(aval.shape, aval.dtype)


def i64_array(values: Sequence[int]) -> ir.Attribute:
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def bool_array(values: Sequence[bool]) -> ir.Attribute:
    return ir.DenseBoolArrayAttr.get([bool(v) for v in values])


def attr(text: str) -> ir.Attribute:
    """Parse an attribute, e.g. ``attr("#stablehlo<comparison_direction LT>")``."""
    return ir.Attribute.parse(text)


def compare_type(dtype: np.dtype) -> str:
    if dtypes.is_inexact(dtype):
        return "FLOAT"
    if dtype.kind == "u" or dtype == dtypes.bool_:
        return "UNSIGNED"
    return "SIGNED"


_BROADCAST_MARK = "transpiler.broadcast"


def _second_broadcast_of_reduction(value: ir.Value, shape: Sequence[int],
                                   out: Sequence[int]) -> bool:
    """Whether `value` is a reduction's result (through reshapes) that an earlier
    broadcast already broadcast another way (the first way is marked on the reduction)."""
    for _ in range(8):
        if not isinstance(value, ir.OpResult):
            return False
        op = getattr(value.owner, "operation", value.owner)
        if op.name == "stablehlo.reduce":
            way = ir.StringAttr.get(f"{tuple(shape)}->{tuple(out)}")
            if _BROADCAST_MARK not in op.attributes:
                op.attributes[_BROADCAST_MARK] = way
                return False
            return op.attributes[_BROADCAST_MARK] != way
        if op.name != "stablehlo.reshape":
            return False
        value = op.operands[0]
    return False


def constant_expression(value: ir.Value) -> bool:
    """Whether `value` reads no block argument (a function's or a loop's): an expression of
    constants, which IREE hoists into a global and evaluates at compile time. Ops with
    regions count as not constant (their bodies may read enclosing values)."""
    pending, seen = [value], set()
    while pending:
        owner = pending.pop().owner
        if isinstance(owner, ir.Block):
            return False
        operation = getattr(owner, "operation", owner)
        if operation in seen:
            continue
        seen.add(operation)
        if len(operation.regions):
            return False
        pending.extend(operation.operands)
    return True


class LoweringContext:
    """Passed to every ``lower`` rule: the input and output avals plus emit helpers."""

    def __init__(self, avals_in: Sequence[ShapedArray], aval_out: Any) -> None:
        self.avals_in = list(avals_in)
        self.aval_out = aval_out  # a ShapedArray, or a tuple for multiple results

    # --- ops --------------------------------------------------------------------------------
    def op(self, name: str, operands: Sequence[ir.Value], results: Any = None,
           attributes: Optional[dict[str, ir.Attribute]] = None, regions: int = 0) -> Any:
        """Create op `name`; `results` are avals or types (default: ``aval_out``).

        Returns the single result value, or the list of them when there are several."""
        if results is None:
            results = self.aval_out
        many = isinstance(results, (list, tuple))
        types = [r if isinstance(r, ir.Type) else aval_type(r)
                 for r in (results if many else [results])]
        operation = ir.Operation.create(name, results=types, operands=list(operands),
                                        attributes=attributes or {}, regions=regions)
        if regions:
            return operation
        values = list(operation.results)
        return values if many else values[0]

    def barrier(self, value: ir.Value) -> ir.Value:
        """`value` behind an optimization barrier, which keeps its producers out of its
        consumers' dispatches.

        A `constant_expression` comes out as a fresh tensor instead, ``select(<barrier of
        true>, <barrier of value>, value)``: IREE 3.13 hoists the constant into a global,
        and a plain barrier on that global hid it from the copy IREE makes before an op that
        writes its operand in place -- the sort of ``argsort``'s iota then sorted the global
        itself, and every call after the first read the previous call's permutation
        (eigvalsh, svd); with no barrier at all, two sorts of one (CSE'd) iota in a module
        gave zeros. The select of an opaque predicate cannot fold, so it is computed on each
        call into a buffer of its own (tests/test_jit_wrong_answers.py)."""
        wall = "stablehlo.optimization_barrier"
        if not constant_expression(value):
            return self.op(wall, [value], value.type)
        true = self.constant(True, np.dtype(bool))
        return self.op("stablehlo.select", [self.op(wall, [true], true.type),
                                            self.op(wall, [value], value.type), value],
                       value.type)

    def constant(self, value: Any, dtype: np.dtype, shape: Sequence[int] = ()) -> ir.Value:
        """A constant tensor; a scalar `value` is broadcast to `shape`."""
        array = np.array(value, dtype=dtype, order="C")
        if dtypes.is_complex(dtype):
            return self._complex_constant(array, dtype, shape)
        ttype = tensor_type(array.shape, dtype)
        const = ir.Operation.create("stablehlo.constant", results=[ttype], attributes={
            "value": ir.DenseElementsAttr.get(array, type=ttype)}).result
        if array.ndim == 0 and tuple(shape):
            return self.broadcast(const, ShapedArray((), dtype), shape)
        return const

    def _complex_constant(self, array: np.ndarray, dtype: np.dtype,
                          shape: Sequence[int]) -> ir.Value:
        # Built from two real constants: IREE 3.13 hoists a dense complex constant into a
        # global it then fails to initialize ("global ... has no value").
        part = dtypes.real_dtype(dtype)
        real, imag = self.constant(array.real, part, shape), self.constant(array.imag, part, shape)
        out_shape = tuple(shape) if array.ndim == 0 and tuple(shape) else array.shape
        return self.op("stablehlo.complex", [real, imag], tensor_type(out_shape, dtype))

    def complex_parts(self, value: ir.Value, aval: ShapedArray) -> tuple[ir.Value, ir.Value]:
        """(real part, imaginary part) of a complex tensor (the operands of the
        ``stablehlo.complex`` that built it, when one did)."""
        if isinstance(value, ir.OpResult):
            op = getattr(value.owner, "operation", value.owner)
            if op.name == "stablehlo.complex":
                return op.operands[0], op.operands[1]
        part = tensor_type(aval.shape, dtypes.real_dtype(aval.dtype))
        return (self.op("stablehlo.real", [value], part),
                self.op("stablehlo.imag", [value], part))

    def convert(self, value: ir.Value, aval: ShapedArray, dtype: np.dtype) -> ir.Value:
        """Convert `value` (of `aval`) to `dtype` as JAX does: float -> bool is ``!= 0``;
        float -> integer rounds toward zero, saturates at the integer type's bounds and
        takes NaN to 0 (``dtypes.float_to_int`` is the same in NumPy); complex -> real
        keeps the real part; integers become complex through their float type."""
        if aval.dtype == dtype:
            return value
        if dtypes.is_complex(aval.dtype) and not dtypes.is_complex(dtype) \
                and dtype != dtypes.bool_:
            part = dtypes.real_dtype(aval.dtype)
            real = self.op("stablehlo.real", [value], tensor_type(aval.shape, part))
            return self.convert(real, aval.update(dtype=part), dtype)
        if dtypes.is_complex(dtype) and not dtypes.is_complex(aval.dtype):
            part = dtypes.real_dtype(dtype)
            real = self.convert(value, aval, part)
            zero = self.constant(0, part, aval.shape)
            return self.op("stablehlo.complex", [real, zero], tensor_type(aval.shape, dtype))
        if dtype == dtypes.bool_:
            zero = self.constant(0, aval.dtype, aval.shape)
            return self.compare(value, zero, "NE", aval.dtype, aval.shape)
        if dtypes.is_float(aval.dtype) and dtype.kind in "iu":
            return self._float_to_int(value, aval, dtype)
        if aval.dtype == dtypes.bool_:
            # A select, not stablehlo.convert: IREE 3.13 fused the convert of an i1 into a
            # matmul as a signed one, so True became -1 (`(x > 0).astype(f32) @ b` negated;
            # tests/test_jit_wrong_answers.py).
            one = self.constant(1, dtype, aval.shape)
            zero = self.constant(0, dtype, aval.shape)
            return self.op("stablehlo.select", [value, one, zero], tensor_type(aval.shape, dtype))
        return self.op("stablehlo.convert", [value], tensor_type(aval.shape, dtype))

    def _float_to_int(self, value: ir.Value, aval: ShapedArray, dtype: np.dtype) -> ir.Value:
        # stablehlo.convert of NaN or an out-of-range float is undefined (IREE gives INT_MIN)
        shape, source = aval.shape, aval.dtype
        low, high = dtypes.int_bounds_as_floats(dtype)
        with np.errstate(over="ignore"):  # float16 holds neither bound of int32: +-inf
            high_c, low_c = self.constant(high, source, shape), self.constant(low, source, shape)
        boolean = tensor_type(shape, dtypes.bool_)
        above = self.compare(value, high_c, "GE", source, shape)
        below = self.compare(value, low_c, "LE", source, shape)
        nan = self.compare(value, value, "NE", source, shape)
        outside = self.op("stablehlo.or", [self.op("stablehlo.or", [above, below], boolean), nan],
                          boolean)
        safe = self.op("stablehlo.select", [outside, self.constant(0, source, shape), value],
                       tensor_type(shape, source))
        result = self.op("stablehlo.convert", [safe], tensor_type(shape, dtype))
        info = np.iinfo(dtype)
        as_int = tensor_type(shape, dtype)
        result = self.op("stablehlo.select", [below, self.constant(info.min, dtype, shape),
                                              result], as_int)
        return self.op("stablehlo.select", [above, self.constant(info.max, dtype, shape),
                                            result], as_int)

    def signbit(self, value: ir.Value, dtype: np.dtype, shape: Sequence[int]) -> ir.Value:
        """Whether each float's sign bit is set (-0.0 and negative NaNs included)."""
        bits = np.dtype(f"i{dtype.itemsize}")
        as_int = self.op("stablehlo.bitcast_convert", [value], tensor_type(shape, bits))
        return self.compare(as_int, self.constant(0, bits, shape), "LT", bits, shape)

    def broadcast(self, value: ir.Value, aval: ShapedArray, shape: Sequence[int]) -> ir.Value:
        """NumPy-style broadcast of `value` (right-aligned) to `shape`."""
        shape = tuple(shape)
        if aval.shape == shape:
            return value
        offset = len(shape) - aval.ndim
        dims = list(range(offset, len(shape)))
        if _second_broadcast_of_reduction(value, aval.shape, shape):
            # IREE 3.13 miscomputes an elementwise op of two different broadcasts of one
            # reduction's result (`v[:, None] + v[None, :]` with v = x.sum(1) kept only the
            # diagonal; tests/test_jit_wrong_answers.py): a broadcast other than the first
            # one's reads it through a barrier, out of the consumer's dispatch. (A barrier
            # on every broadcast of a reduction cost softmax + layer norm ~40%.)
            value = self.barrier(value)
        return self.op("stablehlo.broadcast_in_dim", [value], tensor_type(shape, aval.dtype),
                       {"broadcast_dimensions": i64_array(dims)})

    def coerce(self, value: ir.Value, aval: ShapedArray, shape: Sequence[int],
               dtype: np.dtype) -> ir.Value:
        """Convert then broadcast: the operand preparation of every elementwise op."""
        value = self.convert(value, aval, dtype)
        return self.broadcast(value, aval.update(dtype=dtype), shape)

    def compare(self, x: ir.Value, y: ir.Value, direction: str, dtype: np.dtype,
                shape: Sequence[int]) -> ir.Value:
        return self.op("stablehlo.compare", [x, y], tensor_type(shape, dtypes.bool_), {
            "comparison_direction": attr(f"#stablehlo<comparison_direction {direction}>"),
            "compare_type": attr(f"#stablehlo<comparison_type {compare_type(dtype)}>")})

    def reshape(self, value: ir.Value, dtype: np.dtype, shape: Sequence[int]) -> ir.Value:
        return self.op("stablehlo.reshape", [value], tensor_type(shape, dtype))

