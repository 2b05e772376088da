"""The signature of the code a transform generates from (no libcst: imported by the public
API at start-up)."""

from __future__ import annotations

import inspect
import types
from typing import Any, Optional


def source_signature(fn: Any) -> inspect.Signature:
    """A Python function's own signature -- a `functools.wraps` decorator's wrapper is
    transformed from the wrapper's source, not the wrapped function's -- and our wrapper
    objects' (jit, grad ...) through to what they wrap."""
    return inspect.signature(fn, follow_wrapped=not isinstance(fn, types.FunctionType))


def star_name(fn: Any) -> Optional[str]:
    """The name of `fn`'s ``*args`` parameter, if it has one."""
    params = source_signature(fn).parameters.values()
    return next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
