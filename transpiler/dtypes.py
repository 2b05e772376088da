"""JAX's dtype semantics: canonical dtypes, weak Python scalars, and the promotion lattice.

Without x64 (the default) 64-bit types are canonicalized to 32-bit ones, as in JAX.
Python scalars are *weakly typed*: ``x_f16 * 2.0`` stays float16, ``x_i32 + 1.5`` is float32.
Promotion follows JAX's type lattice (not NumPy's value-based tables), so eager mode and
``jit`` agree and both agree with JAX.
"""

from __future__ import annotations

import builtins
from functools import lru_cache
from typing import Any, Iterable, Optional

import ml_dtypes
import numpy as np

from transpiler.config import config
from transpiler.errors import located

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
bfloat16 = np.dtype(ml_dtypes.bfloat16)
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

SUPPORTED = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
             float16, bfloat16, float32, float64, complex64, complex128)

# The lattice: each node lists the nodes directly above it. "i*", "f*", "c*" are the weak
# types of Python int, float and complex. Mirrors jax._src.dtypes._type_promotion_lattice.
_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX = "i*", "f*", "c*"
_LATTICE: dict[Any, list[Any]] = {
    bool_: [_WEAK_INT],
    _WEAK_INT: [uint8, int8],
    uint8: [uint16, int16], uint16: [uint32, int32], uint32: [uint64, int64], uint64: [_WEAK_FLOAT],
    int8: [int16], int16: [int32], int32: [int64], int64: [_WEAK_FLOAT],
    _WEAK_FLOAT: [_WEAK_COMPLEX, float16, bfloat16],
    float16: [float32], bfloat16: [float32], float32: [float64], float64: [complex128],
    _WEAK_COMPLEX: [complex64], complex64: [complex128], complex128: [],
}


def _upper_bounds(node: Any) -> frozenset:
    seen = {node}
    stack = [node]
    while stack:
        for parent in _LATTICE[stack.pop()]:
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return frozenset(seen)


_UPPER = {node: _upper_bounds(node) for node in _LATTICE}


def _join(a: Any, b: Any) -> Any:
    common = _UPPER[a] & _UPPER[b]
    for candidate in common:  # the least upper bound: the one below all others
        if common <= _UPPER[candidate]:
            return candidate
    raise TypeError(f"no common type for {a} and {b}")  # unreachable in a lattice


def _weak_node(dtype: np.dtype) -> Any:
    if dtype.kind in "iu":
        return _WEAK_INT
    if dtype.kind == "f" or dtype == bfloat16:
        return _WEAK_FLOAT
    if dtype.kind == "c":
        return _WEAK_COMPLEX
    return dtype


def default_int() -> np.dtype:
    return int64 if config.enable_x64 else int32


def default_float() -> np.dtype:
    return float64 if config.enable_x64 else float32


def default_complex() -> np.dtype:
    return complex128 if config.enable_x64 else complex64


_NARROW = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


def canonicalize(dtype: Any) -> np.dtype:
    """The dtype JAX would use: 64-bit types narrow to 32-bit unless x64 is enabled."""
    try:
        dt = np.dtype(dtype) if not isinstance(dtype, np.dtype) else dtype
    except TypeError:
        raise located(TypeError, f"unknown dtype {dtype!r}; use one of "
                       f"{names_of(SUPPORTED)}") from None
    if dt.kind in "OUSVMm" and dt != bfloat16:
        raise located(TypeError, f"dtype {dt} is not supported; use one of "
                       f"{names_of(SUPPORTED)}")
    if not config.enable_x64:
        return _NARROW.get(dt, dt)
    return dt


def names_of(dtypes: Iterable[np.dtype]) -> str:
    return ", ".join(str(d) for d in dtypes)


def _weak_default(node: Any) -> np.dtype:
    return {_WEAK_INT: default_int(), _WEAK_FLOAT: default_float(),
            _WEAK_COMPLEX: default_complex()}[node]


@lru_cache(maxsize=4096)
def _promote(pairs: tuple[tuple[np.dtype, bool], ...], x64: bool) -> tuple[np.dtype, bool]:
    node = None
    for dtype, weak in pairs:
        n = _weak_node(dtype) if weak else dtype
        node = n if node is None else _join(node, n)
    if isinstance(node, str):
        return _weak_default(node), True
    return canonicalize(node), False


def promote(*typed: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
    """Join (dtype, weak_type) pairs on the lattice; returns the result's (dtype, weak)."""
    return _promote(tuple(typed), config.enable_x64)


def promote_types(a: Any, b: Any) -> np.dtype:
    """``jnp.promote_types``: the promoted dtype of two (strong) dtypes."""
    return promote((np.dtype(a), False), (np.dtype(b), False))[0]


def scalar_dtype(value: Any) -> tuple[np.dtype, bool]:
    """(dtype, weak) of a Python or NumPy scalar."""
    if isinstance(value, (bool, np.bool_)):
        return bool_, False
    if isinstance(value, builtins.int):
        return default_int(), True
    if isinstance(value, builtins.float):
        return default_float(), True
    if isinstance(value, builtins.complex):
        return default_complex(), True
    if isinstance(value, np.generic):
        return canonicalize(value.dtype), False
    raise TypeError(f"{type(value).__name__} is not a valid scalar")


def is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype == bfloat16


def is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


def is_inexact(dtype: np.dtype) -> bool:
    """Floating or complex: the dtypes that carry derivatives."""
    return is_float(dtype) or is_complex(dtype)


def to_inexact(dtype: Any) -> np.dtype:
    """`dtype` if floating or complex, else the default float (how inexact functions
    promote integer and boolean arguments)."""
    dtype = np.dtype(dtype)
    return dtype if is_inexact(dtype) else default_float()


def real_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of a complex dtype's parts (other dtypes are their own)."""
    return {complex64: float32, complex128: float64}.get(dtype, dtype)


def complex_dtype(dtype: np.dtype) -> np.dtype:
    """The complex dtype whose parts have `dtype` (complex64 for float types below 64 bits)."""
    if is_complex(dtype):
        return dtype
    return complex128 if dtype == float64 else complex64


def is_int(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def int_bounds_as_floats(dtype: np.dtype) -> tuple[float, float]:
    """(low, high): a float at or below `low` converts to the integer type's minimum, one at
    or above `high` to its maximum (JAX's saturating conversion). `high` is the maximum plus
    one, a power of two that every float type holds exactly (or overflows to inf)."""
    info = np.iinfo(dtype)
    return float(info.min) - 1.0, float(info.max) + 1.0


def float_to_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Floats to an integer type as JAX converts them: toward zero, saturating at the
    type's bounds, NaN to 0 (NumPy's astype leaves those cases undefined: INT_MIN on x86)."""
    low, high = int_bounds_as_floats(dtype)
    info = np.iinfo(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        wide = x.astype(np.float64)
        above, below = wide >= high, wide <= low
        inside = np.where(above | below | np.isnan(wide), 0.0, wide).astype(dtype)
    return np.where(above, info.max, np.where(below, info.min, inside)).astype(dtype)


def issubdtype(a: Any, b: Any) -> bool:
    """``jnp.issubdtype`` that knows bfloat16 is a floating type."""
    if _is_dtype_like(a) and np.dtype(a) == bfloat16:
        if isinstance(b, type) and issubclass(b, np.generic):
            return b in (np.floating, np.inexact, np.number, np.generic)
        return np.dtype(b) == bfloat16
    return bool(np.issubdtype(a, b))


def _is_dtype_like(a: Any) -> bool:
    try:
        np.dtype(a)
        return True
    except TypeError:
        return False


def finfo(dtype: Any) -> Any:
    """``jnp.finfo``: machine limits, bfloat16 included."""
    return ml_dtypes.finfo(np.dtype(dtype))


def iinfo(dtype: Any) -> Any:
    return ml_dtypes.iinfo(np.dtype(dtype))


def check_supported(dtype: np.dtype, what: str = "value") -> np.dtype:
    if dtype not in SUPPORTED:
        raise TypeError(f"{what} has dtype {dtype}, which is not supported; "
                        f"supported dtypes: {names_of(SUPPORTED)}")
    return dtype


def dtype_of(value: Any) -> Optional[np.dtype]:
    """The canonical dtype of any array-like, scalar or Tracer (None if it has none)."""
    dt = getattr(value, "dtype", None)
    if dt is not None:
        return canonicalize(dt)
    try:
        return scalar_dtype(value)[0]
    except TypeError:
        return None
