"""Tracebacks that show the user's code: the library's own frames are hidden (as JAX does).

Where a call leaves the library -- ``jit(f)(x)``, ``grad(f)(x)``, ``vmap(f)(x)``,
``jacfwd(f)(x)``, ``pmap(f)(x)`` -- an exception's traceback keeps the frames of the user's files
and of the generated code (``vjp_f``, ``vmap_f``: the user's code, transformed) and drops
those of `transpiler` and `runtime`; a note under it says how to see everything
(``TRANSPILER_TRACEBACK_FILTERING=off`` or ``config.update("traceback_filtering",
"off")``). A traceback with no frame outside the library (an internal error) is kept
whole. The boundaries filter only when an exception passes: a call costs nothing more. (``jvp``,
``vjp`` and ``linearize`` are functions the transforms read as code -- reverse mode over
``jvp`` -- so they are no boundaries: a wrapper would hide their signature.)
"""

from __future__ import annotations

import functools
import os
import types
from typing import Any, Callable, TypeVar

from transpiler.config import config
from transpiler.errors import _PACKAGE_DIR

F = TypeVar("F", bound=Callable[..., Any])

_LIBRARY = (_PACKAGE_DIR + os.sep, os.path.join(os.path.dirname(_PACKAGE_DIR), "runtime") + os.sep)
NOTE = ("(transpiler's own frames are hidden from this traceback; "
        "TRANSPILER_TRACEBACK_FILTERING=off or "
        "transpiler.config.update('traceback_filtering', 'off') shows them)")


def filtered(error: BaseException) -> BaseException:
    """`error` with the library's frames taken out of its traceback (and the note added)."""
    if config.traceback_filtering == "off" or not isinstance(error, Exception):
        return error
    entries = []
    tb = error.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    kept = [e for e in entries if not e.tb_frame.f_code.co_filename.startswith(_LIBRARY)]
    if not kept or len(kept) == len(entries):
        return error
    new = None
    for entry in reversed(kept):
        new = types.TracebackType(new, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    error.__traceback__ = new
    if NOTE not in getattr(error, "__notes__", ()):
        error.add_note(NOTE)
    return error


def api_boundary(fn: F) -> F:
    """`fn` (a public entry point) raising with a filtered traceback."""
    @functools.wraps(fn)
    def boundary(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as error:
            raise filtered(error)  # noqa: B904 (the same exception, its traceback filtered)
    return boundary  # type: ignore[return-value]
