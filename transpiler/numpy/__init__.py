"""``transpiler.numpy``: NumPy's API with JAX's semantics, eager and under ``jit`` alike.

Use it as ``import transpiler.numpy as jnp``.
"""

from __future__ import annotations

import importlib as _importlib
import sys as _sys

import numpy as _np

from transpiler import dtypes as _dtypes
from transpiler.numpy.creation import *  # noqa: F401,F403
from transpiler.numpy.math import *  # noqa: F401,F403
from transpiler.numpy.complex_numbers import *  # noqa: F401,F403
from transpiler.numpy.shape import *  # noqa: F401,F403
from transpiler.numpy.joining import *  # noqa: F401,F403
from transpiler.numpy.matrices import *  # noqa: F401,F403
from transpiler.numpy.reductions import *  # noqa: F401,F403
from transpiler.numpy.nan_reductions import *  # noqa: F401,F403
from transpiler.numpy.products import *  # noqa: F401,F403
from transpiler.numpy.indexing import *  # noqa: F401,F403
from transpiler.numpy.sorting import *  # noqa: F401,F403
from transpiler.numpy.quantiles import *  # noqa: F401,F403
from transpiler.numpy.counting import *  # noqa: F401,F403
from transpiler.numpy.convolution import *  # noqa: F401,F403
from transpiler.numpy.elementwise_functions import *  # noqa: F401,F403
from transpiler.numpy.array_api_names import *  # noqa: F401,F403
from transpiler.numpy.index_tricks import *  # noqa: F401,F403
from transpiler.numpy.differences import *  # noqa: F401,F403
from transpiler.numpy.polynomials import *  # noqa: F401,F403
from transpiler.numpy.windows import *  # noqa: F401,F403
from transpiler.numpy.array_editing import *  # noqa: F401,F403
from transpiler.numpy.selection import *  # noqa: F401,F403
from transpiler.numpy.bit_packing import *  # noqa: F401,F403
from transpiler.numpy.array_comparison import *  # noqa: F401,F403
from transpiler.numpy.set_ops import *  # noqa: F401,F403
from transpiler.numpy.statistics import *  # noqa: F401,F403
from transpiler.numpy.functional import *  # noqa: F401,F403
from transpiler import array_methods
from transpiler.primitives.core import abstractify

bool_ = _dtypes.bool_.type
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float16, float32, float64 = _np.float16, _np.float32, _np.float64
complex64, complex128 = _np.complex64, _np.complex128
bfloat16 = _dtypes.bfloat16.type
dtype = _np.dtype
pi, e, inf, nan, newaxis = _np.pi, _np.e, _np.inf, _np.nan, None
euler_gamma = _np.euler_gamma
finfo, iinfo = _dtypes.finfo, _dtypes.iinfo
promote_types, issubdtype = _dtypes.promote_types, _dtypes.issubdtype
integer, floating, number, inexact, signedinteger, unsignedinteger, complexfloating = (
    _np.integer, _np.floating, _np.number, _np.inexact, _np.signedinteger, _np.unsignedinteger,
    _np.complexfloating)
generic = _np.generic
character, flexible = _np.character, _np.flexible
bool = bool_  # noqa: A001 -- JAX's name, as in NumPy 2
single, double = float32, float64
csingle, cdouble = complex64, complex128
float_, int_, uint, complex_ = float64, int64, uint64, complex128
object_ = _np.object_
ComplexWarning = _np.exceptions.ComplexWarning


def result_type(*args):  # type: ignore[no-untyped-def]
    """The dtype JAX gives to an operation on `args` (arrays, scalars or dtypes)."""
    typed = []
    for a in args:
        if isinstance(a, (_np.dtype, type)) or isinstance(a, str):
            typed.append((_dtypes.canonicalize(a), False))
        else:
            aval = abstractify(a)
            typed.append((aval.dtype, aval.weak_type))
    return _dtypes.promote(*typed)[0]


def ndim(x):  # type: ignore[no-untyped-def]
    return _np.ndim(x) if not hasattr(x, "ndim") else x.ndim


def shape(x):  # type: ignore[no-untyped-def]
    return tuple(x.shape) if hasattr(x, "shape") else _np.shape(x)


def size(x):  # type: ignore[no-untyped-def]
    return int(_np.prod(shape(x)))


array_repr, array_str = _np.array_repr, _np.array_str
printoptions, get_printoptions, set_printoptions = (_np.printoptions, _np.get_printoptions,
                                                    _np.set_printoptions)


def __dir__():  # type: ignore[no-untyped-def]
    return sorted([*globals(), "fft", "linalg"])


def __getattr__(name):  # type: ignore[no-untyped-def]
    """``jnp.linalg`` and ``jnp.fft`` on first use: they are built on transpiler.lax, which
    imports this package."""
    if name in ("linalg", "fft"):
        return _importlib.import_module(f"transpiler.numpy.{name}")
    raise AttributeError(f"module 'transpiler.numpy' has no attribute {name!r}")


def _install_array_methods() -> None:
    array_methods.jnp = _sys.modules[__name__]


_install_array_methods()
