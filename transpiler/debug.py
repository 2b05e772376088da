"""``jax.debug`` (as ``transpiler.debug``): ``print`` and ``callback`` on the values a
function computes.

Eagerly, and in a jitted function run under ``disable_jit()``, they run at once on the
concrete arrays. Inside ``jit`` JAX stages a host callback that runs each time the
compiled function does; IREE modules here have no host callbacks, so there they are an
error that says so, never a print of the tracers at trace time.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable

from transpiler import tree_util
from transpiler.errors import located
from transpiler.primitives import core

__all__ = ["print", "callback"]


def _check_eager(fn: str) -> None:
    if core.trace_stack:
        raise located(NotImplementedError, f"jax.debug.{fn} inside jit: a compiled function "
                      "here cannot call back into Python while it runs",
                      "run the function under `with transpiler.disable_jit():` to print its "
                      "values, or return them from the jitted function")


def print(fmt: str, *args: Any, ordered: bool = False, partitioned: bool = False,  # noqa: A001
          **kwargs: Any) -> None:
    """``jax.debug.print``: ``print(fmt.format(*args, **kwargs))`` (arrays formatted as
    NumPy formats them)."""
    _check_eager("print")
    if not isinstance(fmt, str):
        raise located(TypeError, f"jax.debug.print: the format must be a str, got "
                      f"{type(fmt).__name__}")
    args, kwargs = tree_util.tree_map(_as_numpy, (args, kwargs))
    builtins.print(fmt.format(*args, **kwargs))


def callback(callback: Callable, *args: Any, ordered: bool = False,
             partitioned: bool = False, **kwargs: Any) -> None:
    """``jax.debug.callback``: ``callback(*args, **kwargs)`` on the arrays as NumPy arrays;
    its result is discarded."""
    _check_eager("callback")
    if not callable(callback):
        raise located(TypeError, f"jax.debug.callback expects a callable, got "
                      f"{type(callback).__name__}")
    args, kwargs = tree_util.tree_map(_as_numpy, (args, kwargs))
    callback(*args, **kwargs)


def _as_numpy(leaf: Any) -> Any:
    to_numpy = getattr(leaf, "__array__", None)
    return to_numpy() if to_numpy is not None and hasattr(leaf, "aval") else leaf
