"""One error family for everything the user can get wrong, located at the user's line.

`TranspileError` carries ``file:line:col`` and prints a caret excerpt of the user's
source, whether it comes from the frontend (syntax), from tracing (shapes, dtypes,
Python control flow on traced values) or from the compiler.
"""

from __future__ import annotations

import linecache
import os
import sys
from dataclasses import dataclass
from types import FrameType
from typing import Optional

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class SourceLocation:
    """A position in the user's source: 1-based line, 0-based column, optional end column."""

    file: str
    line: int
    col: int = 0
    end_col: Optional[int] = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


class TranspileError(Exception):
    """An error in the user's program, reported at the user's ``file:line:col``."""

    def __init__(self, message: str, loc: Optional[SourceLocation] = None, hint: str = "") -> None:
        self.message = message
        self.loc = loc
        self.hint = hint
        super().__init__(self._render())

    @property
    def file(self) -> Optional[str]:
        return self.loc.file if self.loc else None

    @property
    def line(self) -> Optional[int]:
        return self.loc.line if self.loc else None

    @property
    def col(self) -> Optional[int]:
        return self.loc.col if self.loc else None

    def _render(self) -> str:
        if self.loc is None:
            return self.message + (f"\n  {self.hint}" if self.hint else "")
        text = f"{self.loc}: {self.message}"
        source = linecache.getline(self.loc.file, self.loc.line).rstrip("\n")
        if source:
            stripped = source.lstrip()
            indent = len(source) - len(stripped)
            start = max(self.loc.col - indent, 0)
            end = self.loc.end_col if self.loc.end_col is not None else len(source)
            width = max(min(end, len(source)) - max(self.loc.col, indent), 1)
            text += f"\n    {stripped}\n    {' ' * start}{'^' * width}"
        if self.hint:
            text += f"\n  {self.hint}"
        return text


class TracerError(TranspileError, TypeError):
    """A traced value was used where a concrete Python value is needed."""


# JAX's names for the kinds of TracerError (``jax.errors``), so that code which catches
# them catches ours.
class ConcretizationTypeError(TracerError):
    """A concrete value was needed from a traced one (``float(x)``, a static shape)."""


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` of a traced value: Python ``if``/``while``/``and``/``or`` on it."""


class TracerIntegerConversionError(TracerError):
    """``int()`` or ``__index__`` of a traced value (a Python index, ``range``)."""


class TracerArrayConversionError(TracerError):
    """A traced value converted to a NumPy array (``np.asarray(x)``)."""


class UnexpectedTracerError(TracerError):
    """A traced value used outside the trace that made it (stored in a global)."""


# Which error each concrete-value request raises (see `Abstract` in array_methods.py).
CONCRETE_ERRORS = {"bool": TracerBoolConversionError, "float": ConcretizationTypeError,
                   "int": TracerIntegerConversionError, "index": TracerIntegerConversionError,
                   "array": TracerArrayConversionError}


def unwrapped_tracer_error(error: BaseException) -> BaseException:
    """The TracerError behind `error` when NumPy wrapped it (``a[0] = x`` into a NumPy array
    calls ``float(x)`` and re-raises a ValueError "setting an array element with a
    sequence" from ours): ours names the user's line and what to do; else `error`."""
    cause = error.__cause__
    if not isinstance(error, (ValueError, TypeError)) or isinstance(error, TranspileError) \
            or not isinstance(cause, TracerError):
        return error
    if "array element" in str(error):
        return type(cause)(f"{cause.message}, stored into a NumPy array", cause.loc,
                           "a NumPy array holds values, not traced ones: build the array "
                           "with transpiler.numpy (``jnp.zeros(3).at[0].set(x)``) instead")
    return cause


class ShapeError(TranspileError, ValueError):
    """Operands whose shapes do not fit the operation."""


class DTypeError(TranspileError, TypeError):
    """Operands whose dtypes do not fit the operation."""


# Generated files (see codegen/) -> {generated line: the user's original location}.
GENERATED_SOURCE_MAPS: dict[str, dict[int, "SourceLocation"]] = {}


def internal_file(filename: str) -> bool:
    """A file of this package (or Python's frozen modules): not the user's."""
    return filename.startswith(_PACKAGE_DIR) or filename.startswith("<frozen")



def user_frame(start: Optional[FrameType] = None) -> Optional[FrameType]:
    """The innermost stack frame that belongs to user code, not to this package."""
    frame: Optional[FrameType] = start if start is not None else sys._getframe(1)
    while frame is not None and internal_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def frame_location(frame: FrameType) -> SourceLocation:
    """The precise position of the instruction a frame is executing."""
    code = frame.f_code
    mapped = GENERATED_SOURCE_MAPS.get(code.co_filename)
    if mapped is not None and frame.f_lineno in mapped:  # generated code: the user's line
        return mapped[frame.f_lineno]
    line, col, end_col = frame.f_lineno, 0, None
    positions = list(code.co_positions())
    index = frame.f_lasti // 2
    if 0 <= index < len(positions):
        pline, _, pcol, pend = positions[index]
        if pline is not None:
            line = pline
        if pcol is not None:
            col, end_col = pcol, pend
    return SourceLocation(code.co_filename, line, col, end_col)


def user_location() -> Optional[SourceLocation]:
    """Where in the user's code we are now (None when called from nowhere user-visible).
    Generated code stands for the line it was generated from; code generated from the
    library's own functions is passed over for the user's line that called them."""
    frame = user_frame(sys._getframe(1))
    first = None
    while frame is not None:
        loc = frame_location(frame)
        if not internal_file(loc.file) and loc.file not in GENERATED_SOURCE_MAPS:
            return loc  # (a generated line that maps to no line of the user's is passed over)
        first = first or loc
        frame = user_frame(frame.f_back)
    return first


def located(error_type: type, message: str, hint: str = "") -> TranspileError:
    """Build a `TranspileError` of `error_type` at the user's current line (a builtin
    `error_type` such as TypeError becomes a TranspileError that is also one)."""
    return located_type(error_type)(message, user_location(), hint)


_LOCATED_TYPES: dict[type, type] = {}


def located_type(error_type: type) -> type:
    """`error_type` if it is a TranspileError, else a TranspileError subclass that is also an
    `error_type` (so ``except TypeError`` still catches it, and it prints as a message)."""
    if issubclass(error_type, TranspileError):
        return error_type
    mixed = _LOCATED_TYPES.get(error_type)
    if mixed is None:
        mixed = _LOCATED_TYPES[error_type] = type(
            error_type.__name__, (TranspileError, error_type),
            {"__module__": __name__, "__doc__": f"A {error_type.__name__} at the user's line."})
    return mixed
