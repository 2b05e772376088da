"""Compile feedback for `jit`: what was compiled, how long it took, and why again.

``config.update("log_compiles", True)`` (or ``TRANSPILER_LOG_COMPILES=1``) logs each
compile of a jitted function on the ``transpiler`` logger at WARNING, as JAX's
``jax_log_compiles`` does, so it shows with no logging set up::

    compiling f (/home/me/demo.py:4) for (x: float32[3], y: float32[] weak): traced in
    3.1 ms, compiled by IREE in 412.0 ms

A compile of a function already compiled for other arguments names what changed since
the closest earlier specialization -- a shape, a dtype, a weak type, a static value, a
rebound global -- like JAX's "TRACING CACHE MISS ... because" explanations.

In an interactive terminal, a compile that runs past `STATUS_AFTER_SECONDS` shows
"compiling f (x: float32[128,784], ...) ..." on stderr until it is done
(``config.update("compile_status", False)`` turns that off). ``jit(f).cache_info()`` lists
the `Specialization`s compiled so far.
"""

from __future__ import annotations

import inspect
import logging
import reprlib
import shutil
import sys
import threading
import types
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, TextIO

from transpiler import tree_util
from transpiler.config import config
from transpiler.primitives.core import ShapedArray

log = logging.getLogger("transpiler")

# How long a compile runs before the status line shows (tests set it to 0).
STATUS_AFTER_SECONDS = 1.0

# A jitted function's cache key: (argument tree, avals, static values, bindings).
Key = tuple[Any, tuple[ShapedArray, ...], tuple, tuple]


@dataclass(frozen=True)
class Specialization:
    """One compiled specialization of a jitted function, as `Jitted.cache_info` lists it."""

    signature: str  # "(x: float32[3], y: float32[] weak, n=4)"
    trace_seconds: float
    compile_seconds: float  # IREE's compile (or the disk cache's load) and the module's load
    from_disk_cache: bool
    reason: str  # "first compile", or what changed since the closest earlier specialization


class ArgumentLabels:
    """Names for a jitted function's arguments as its signature spells them: ``x``,
    ``params['w1']``, ``args[2]`` for one gathered by ``*args``."""

    def __init__(self, fun: Callable, static_nums: frozenset, static_names: frozenset) -> None:
        self._static_nums, self._static_names = static_nums, static_names
        try:
            params = list(inspect.signature(fun).parameters.values())
        except (TypeError, ValueError):
            params = []
        self._positional = [p.name for p in params
                            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self._varargs = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), "args")

    def positional(self, i: int) -> str:
        n = len(self._positional)
        return self._positional[i] if i < n else f"{self._varargs}[{i - n}]"

    def static(self, key: Any) -> str:
        """A static argument's name: `key` is its position or its keyword."""
        return self.positional(key) if isinstance(key, int) else str(key)

    def leaves(self, args: Sequence[Any], kwargs: dict) -> list[str]:
        """One name per leaf of the dynamic arguments, in `Jitted._signature`'s order."""
        positions = [i for i in range(len(args)) if i not in self._static_nums]
        dyn_args = tuple(args[i] for i in positions)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_names}
        names = []
        for path, _ in tree_util.tree_flatten_with_path((dyn_args, dyn_kwargs))[0]:
            top, arg, *rest = path
            base = self.positional(positions[arg.idx]) if top.idx == 0 else str(arg.key)
            names.append(base + tree_util.keystr(tuple(rest)))
        return names


def describe(aval: ShapedArray) -> str:
    """``float32[3]``; ``float32[] weak`` for a weakly typed one (a Python scalar)."""
    return aval.str_short() + (" weak" if aval.weak_type else "")


def signature(leaf_names: Sequence[str], avals: Sequence[ShapedArray], statics: tuple,
              labels: ArgumentLabels) -> str:
    """``(x: float32[3], y: float32[] weak, n=4)``: the avals, then the static values."""
    parts = [f"{name}: {describe(aval)}" for name, aval in zip(leaf_names, avals)]
    parts += [f"{labels.static(key)}={_short(value)}" for key, value in statics]
    return "(" + ", ".join(parts) + ")"


def explain_miss(key: Key, earlier: Sequence[Key], leaf_names: Sequence[str],
                 labels: ArgumentLabels, free_names: Sequence[str]) -> str:
    """Why `key` is compiled although `earlier` keys were: what differs from the closest
    (the fewest changed shapes, dtypes, weak types, statics and bindings; the latest on a
    tie)."""
    if not earlier:
        return "first compile"
    closest = min((_differences(key, old, leaf_names, labels, free_names)
                   for old in reversed(earlier)), key=lambda found: sum(n for n, _ in found))
    text = "; ".join(what for _, what in closest) or "its cache key differs"
    if len(earlier) > 1:
        text += f" -- compared with the closest of the {len(earlier)} earlier specializations"
    return text


def _differences(new: Key, old: Key, leaf_names: Sequence[str], labels: ArgumentLabels,
                 free_names: Sequence[str]) -> list[tuple[int, str]]:
    """What changed from `old` to `new`: (how many things, what) for each argument."""
    tree, avals, statics, bindings = new
    old_tree, old_avals, old_statics, old_bindings = old
    found = []
    if tree != old_tree:
        found.append((len(avals) + 1, f"the arguments' structure changed: {_clip(str(tree))}"
                      f", was {_clip(str(old_tree))}"))
    else:
        found += [_aval_change(name, a, b)
                  for name, a, b in zip(leaf_names, avals, old_avals) if a != b]
    now, before = dict(statics), dict(old_statics)
    for k in [*now, *(k for k in before if k not in now)]:
        label = labels.static(k)
        if k not in before:
            found.append((1, f"static argument {label} is given now: {_short(now[k])}"))
        elif k not in now:
            found.append((1, f"static argument {label} is not given now (was "
                          f"{_short(before[k])})"))
        elif now[k] != before[k]:
            found.append((1, f"static argument {label} has a new value: {_short(now[k])}, "
                          f"was {_short(before[k])}"))
    for name, a, b in zip(free_names, bindings, old_bindings):
        if a != b:
            found.append((1, f"{name} was rebound: {_short(a.obj)}, was {_short(b.obj)}"))
    return found


def _aval_change(name: str, new: ShapedArray, old: ShapedArray) -> tuple[int, str]:
    shape, dtype = new.shape != old.shape, new.dtype != old.dtype
    change = f"{describe(new)}, was {describe(old)}"
    if shape and dtype:
        return 2, f"{name} has a new shape and dtype: {change}"
    if shape or dtype:
        return 1, f"{name} has a new {'shape' if shape else 'dtype'}: {change}"
    if new.weak_type:
        return 1, f"{name} is weakly typed now (a Python scalar): {change}"
    return 1, f"{name} is strongly typed now: {change} (a Python scalar)"


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 40


def _short(value: Any) -> str:
    if isinstance(value, types.FunctionType):
        return f"function {value.__qualname__} ({where(value)})"
    return _REPR.repr(value)


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def where(fun: Any) -> str:
    """``file:line`` of the Python function `fun` is or wraps (a grad's, a partial's)."""
    for _ in range(8):
        if hasattr(fun, "__code__"):
            return f"{fun.__code__.co_filename}:{fun.__code__.co_firstlineno}"
        fun = getattr(fun, "_fun", None) or getattr(fun, "func", None) or \
            getattr(fun, "__wrapped__", None)
    return "<unknown location>"


def seconds(t: float) -> str:
    return f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s"


def log_compile(name: str, fun: Any, spec: Specialization, count: int) -> None:
    """The log line of one compile: the `count`-th specialization of `name`."""
    how = "loaded from the disk cache" if spec.from_disk_cache else "compiled by IREE"
    message = (f"{'compiling' if count == 1 else 'recompiling'} {name} ({where(fun)}) for "
               f"{spec.signature}: traced in {seconds(spec.trace_seconds)}, {how} in "
               f"{seconds(spec.compile_seconds)}")
    if count > 1:
        message += f"; specialization {count}, because {spec.reason}"
    log.warning("%s", message)


class StatusLine:
    """``with StatusLine(text):`` shows `text` on stderr once the block has run for
    `STATUS_AFTER_SECONDS`, when stderr is an interactive terminal and
    ``config.compile_status`` is on, and erases it (``\\r``, spaces, ``\\r``) at the end."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._lock = threading.Lock()
        self._stream: Optional[TextIO] = None
        self._shown = ""
        self._done = False
        self._timer: Optional[threading.Timer] = None

    def __enter__(self) -> "StatusLine":
        stream = sys.stderr
        if not config.compile_status or not _interactive(stream):
            return self
        self._stream = stream
        if STATUS_AFTER_SECONDS <= 0:
            self._show()
        else:
            self._timer = threading.Timer(STATUS_AFTER_SECONDS, self._show)
            self._timer.daemon = True
            self._timer.start()
        return self

    def _show(self) -> None:
        with self._lock:
            if self._done or self._stream is None:
                return
            line = _clip(self._text, max(20, shutil.get_terminal_size().columns - 1))
            _write(self._stream, "\r" + line)
            self._shown = line

    def __exit__(self, *exc: Any) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._done = True
            if self._shown and self._stream is not None:
                _write(self._stream, "\r" + " " * len(self._shown) + "\r")


def _interactive(stream: Any) -> bool:
    try:
        return stream is not None and bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _write(stream: TextIO, text: str) -> None:
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):  # a closed or broken terminal: the status is a courtesy
        pass
