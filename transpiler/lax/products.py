"""``lax.dot``, ``lax.batch_matmul``, ``lax.ragged_dot`` and ``lax.Precision`` (with
``DotAlgorithmPreset`` and the ``DotDimensionNumbers``/``PrecisionLike`` types) over the
``dot_general`` primitive. A `precision` is accepted and checked, and changes nothing:
IREE's CPU products are float32 (float64 with x64) at every precision, which is
``HIGHEST``."""

from __future__ import annotations

import enum
from typing import Any, Optional, Sequence, Union

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.errors import located
from transpiler.primitives import conversions as conv
from transpiler.primitives import dot as dot_p
from transpiler.primitives.core import abstractify, dtype_error, shape_error

__all__ = ["Precision", "DotAlgorithmPreset", "DotDimensionNumbers", "PrecisionLike", "dot",
           "batch_matmul", "ragged_dot"]

# ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]


class Precision(enum.Enum):
    """``lax.Precision``: the precision of a product on an accelerator (``DEFAULT``,
    ``HIGH``, ``HIGHEST``; also by name, ``Precision("highest")``, or by JAX's aliases
    ``"bfloat16"``, ``"tensorfloat32"``, ``"float32"``)."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object) -> Optional["Precision"]:
        if not isinstance(value, str):
            return None
        aliases = {"default": cls.DEFAULT, "fastest": cls.DEFAULT, "bfloat16": cls.DEFAULT,
                   "high": cls.HIGH, "bfloat16_3x": cls.HIGH, "tensorfloat32": cls.HIGH,
                   "highest": cls.HIGHEST, "float32": cls.HIGHEST}
        return aliases.get(value.lower())

    def __str__(self) -> str:
        return self.name


class DotAlgorithmPreset(enum.Enum):
    """``lax.DotAlgorithmPreset``: the operand, accumulation and output types of a product
    on an accelerator, accepted as a `precision`; here every product runs in its operands'
    type (float32 or wider), so a preset changes nothing."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __str__(self) -> str:
        return self.name


PrecisionLike = Union[None, str, Precision, tuple[str, str], tuple[Precision, Precision],
                      DotAlgorithmPreset]


def _check_precision(precision: Any) -> None:
    """None, a `Precision` (or its name), or a pair of them, as JAX accepts."""
    pair = precision if isinstance(precision, (tuple, list)) else (precision,)
    for p in pair:
        if p is None or isinstance(p, (Precision, DotAlgorithmPreset)):
            continue
        try:
            Precision(p)
        except ValueError:
            raise located(ValueError, f"precision argument must be None, a string in "
                          f"{[p.name for p in Precision]}, a lax.Precision value or a tuple "
                          f"of two of them; got {precision!r}") from None


def dot(lhs: Any, rhs: Any, *, dimension_numbers: Any = None, precision: Any = None,
        preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """``lax.dot``: vector-vector, matrix-vector, vector-matrix or matrix-matrix product
    (the last axis of `lhs` with the first of `rhs`); with `dimension_numbers`, the
    general contraction of ``lax.dot_general``."""
    _check_precision(precision)
    preferred = None if preferred_element_type is None else \
        dtypes.canonicalize(preferred_element_type)
    if dimension_numbers is None:
        lhs_nd = abstractify(lhs, 0, "dot").ndim
        rhs_nd = abstractify(rhs, 1, "dot").ndim
        if lhs_nd not in (1, 2) or rhs_nd not in (1, 2):
            raise shape_error(f"lax.dot: dimension_numbers must be given for anything but "
                              f"vector and matrix products; got operands of rank {lhs_nd} "
                              f"and {rhs_nd}", "use lax.dot_general or jnp.matmul")
        dimension_numbers = (((lhs_nd - 1,), (0,)), ((), ()))
    return dot_p.dot_general(
        lhs, rhs, dimension_numbers=dot_p.normalize_dimension_numbers(dimension_numbers),
        preferred_element_type=preferred)


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Any:
    """``lax.batch_matmul``: matrix products over the leading (batch) axes, which must
    match: ``(..., m, k) @ (..., k, n) -> (..., m, n)``."""
    _check_precision(precision)
    lhs_shape = abstractify(lhs, 0, "batch_matmul").shape
    rhs_shape = abstractify(rhs, 1, "batch_matmul").shape
    if len(lhs_shape) != len(rhs_shape) or len(lhs_shape) < 2 or \
            lhs_shape[:-2] != rhs_shape[:-2]:
        raise shape_error(f"lax.batch_matmul: operands of shapes {list(lhs_shape)} and "
                          f"{list(rhs_shape)} need one rank >= 2 and the same batch axes")
    batch = tuple(range(len(lhs_shape) - 2))
    return dot_p.dot_general(lhs, rhs, dimension_numbers=(
        ((len(lhs_shape) - 1,), (len(rhs_shape) - 2,)), (batch, batch)),
        preferred_element_type=None)


def ragged_dot(lhs: Any, rhs: Any, group_sizes: Any, precision: Any = None,
               preferred_element_type: Any = None, group_offset: Any = None) -> Any:
    """``lax.ragged_dot``: `lhs` ``(m, k)`` has its rows in consecutive groups of
    `group_sizes` ``(g,)`` rows; each group is multiplied by its matrix of `rhs`
    ``(g, k, n)``, giving ``(m, n)`` (rows after the last group are zeros). Written as one
    product per group, masked to its rows: ``g`` times the work of a grouped kernel."""
    _check_precision(precision)
    if group_offset is not None:
        raise located(NotImplementedError, "lax.ragged_dot: group_offset is not supported "
                      "(nor is it in JAX)")
    lhs_aval = abstractify(lhs, 0, "ragged_dot")
    rhs_aval = abstractify(rhs, 1, "ragged_dot")
    sizes_aval = abstractify(group_sizes, 2, "ragged_dot")
    if lhs_aval.ndim != 2 or rhs_aval.ndim != 3 or sizes_aval.ndim != 1 or \
            lhs_aval.shape[1] != rhs_aval.shape[1] or sizes_aval.shape[0] != rhs_aval.shape[0]:
        raise shape_error(f"lax.ragged_dot: expected lhs (m, k), rhs (g, k, n) and "
                          f"group_sizes (g,), got {list(lhs_aval.shape)}, "
                          f"{list(rhs_aval.shape)} and {list(sizes_aval.shape)}")
    if not dtypes.is_int(sizes_aval.dtype):
        raise dtype_error(f"lax.ragged_dot: group_sizes must be integers, got "
                          f"{sizes_aval.dtype}")
    m, g = lhs_aval.shape[0], rhs_aval.shape[0]
    ends = jnp.cumsum(group_sizes)
    starts = ends - group_sizes
    rows = conv.iota(dtype=abstractify(ends).dtype, shape=(g, m), dimension=1)
    member = (rows >= jnp.reshape(starts, (g, 1))) & (rows < jnp.reshape(ends, (g, 1)))
    preferred = None if preferred_element_type is None else \
        dtypes.canonicalize(preferred_element_type)
    # (g, m, n): every row by every group's matrix, then each row keeps its own group's
    per_group = dot_p.dot_general(lhs, rhs, dimension_numbers=(((1,), (1,)), ((), ())),
                                  preferred_element_type=preferred)  # (m, g, n)
    per_group = jnp.transpose(per_group, (1, 0, 2))
    zero = jnp.zeros((), abstractify(per_group).dtype)
    return jnp.sum(jnp.where(member[:, :, None], per_group, zero), axis=0)
