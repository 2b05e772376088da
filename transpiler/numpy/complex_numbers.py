"""Complex numbers: parts, conjugate, angle, and the tests of complexness."""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import dtypes
from transpiler.numpy.creation import asarray, zeros_like
from transpiler.primitives import elementwise as ew
from transpiler.primitives.core import abstractify


def _is_complex(x: Any) -> bool:
    return dtypes.is_complex(abstractify(x).dtype)


def real(val: Any) -> Any:
    """The real part (a real array is its own)."""
    return ew.real(val) if _is_complex(val) else asarray(val)


def imag(val: Any) -> Any:
    """The imaginary part (zeros for a real array)."""
    return ew.imag(val) if _is_complex(val) else zeros_like(val)


def conjugate(x: Any) -> Any:
    """The complex conjugate (a real array is its own)."""
    return ew.conj(x) if _is_complex(x) else asarray(x)


conj = conjugate


def angle(z: Any, deg: bool = False) -> Any:
    """The argument of each element, in radians (degrees with ``deg=True``)."""
    result = ew.arctan2(imag(z), real(z))
    return ew.multiply(result, 180 / np.pi) if deg else result


def iscomplex(x: Any) -> Any:
    """Elementwise: whether the imaginary part is nonzero."""
    return ew.not_equal(imag(x), 0)


def isreal(x: Any) -> Any:
    """Elementwise: whether the imaginary part is zero."""
    return ew.equal(imag(x), 0)


def iscomplexobj(x: Any) -> bool:
    """Whether `x` has a complex dtype (whatever its values)."""
    return _is_complex(x)


def isrealobj(x: Any) -> bool:
    return not _is_complex(x)
