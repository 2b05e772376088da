"""The errors of converted control flow on traced values, at the user's lines.

Each names the variable, the construct (``if``/``while``/``for`` on a traced value) and
the lines involved (where the variable is set before the construct and inside it, or in
each branch), and says what to write instead. The first line of the message is the
construct's or the assignment's ``file:line:col`` with a caret excerpt (`TranspileError`).
"""

from __future__ import annotations

import os
from typing import Any, Optional

from transpiler.errors import SourceLocation, TranspileError
from transpiler.primitives.core import ShapedArray
from transpiler.transforms.autograph.state import ConstructInfo, Slot, Static, Undefined


def _short(loc: SourceLocation) -> str:
    return f"{os.path.basename(loc.file)}:{loc.line}"


def _at(loc: Optional[SourceLocation]) -> str:
    return f" (set at {_short(loc)})" if loc is not None else ""


def _loop_op(info: ConstructInfo) -> str:
    return "lax.fori_loop" if info.kind == "for" else "lax.while_loop"


def _kind_of(slot: Slot) -> str:
    if slot.missing:
        value = slot.leaves[0].value  # type: ignore[union-attr]
        return "undefined" if isinstance(value, Undefined) else "None"
    if len(slot.leaves) == 1 and isinstance(slot.leaves[0], ShapedArray):
        return f"an array ({slot.leaves[0]})"
    if len(slot.leaves) == 1:
        return f"{slot.leaves[0].value!r}"  # type: ignore[union-attr]
    return f"a container with structure {slot.tree}"


class StateErrors:
    """The errors about one carried variable `name` of one construct."""

    def __init__(self, info: ConstructInfo, name: str, loop: bool) -> None:
        self.info, self.name, self.loop = info, name, loop

    # where the variable is set: before the loop / in the loop, or in each branch
    def _first(self) -> Optional[SourceLocation]:
        if self.loop:
            return self.info.defined.get(self.name)
        return self._assigned(0)

    def _second(self) -> Optional[SourceLocation]:
        return self._assigned(0 if self.loop else 1)

    def _assigned(self, k: int) -> Optional[SourceLocation]:
        maps = self.info.assigned
        return maps[k].get(self.name) if k < len(maps) else None

    def _lines(self) -> str:
        """`` `x` is set at f.py:3 before the loop and at f.py:5 in it.`` (what is known)."""
        before, inside = self._first(), self._second()
        parts = [f"at {_short(before)} before the loop" if before else "",
                 f"at {_short(inside)} in it" if inside else ""]
        said = " and ".join(p for p in parts if p)
        return f" `{self.name}` is set {said}." if said else ""

    def _in_loop(self) -> str:
        loc = self._second()
        return f" (at {_short(loc)})" if loc is not None else ""

    def _sides(self, x: Any, y: Any) -> str:
        if self.loop:
            return (f"`{self.name}` is {x} before the loop{_at(self._first())} and {y} after "
                    f"one iteration{_at(self._second())}")
        return (f"`{self.name}` is {x} in the true branch{self._branch_at(0)} and {y} in the "
                f"false branch{self._branch_at(1)}")

    def _branch_at(self, k: int) -> str:
        """Where a branch sets the variable, or since where it is unchanged."""
        loc = self._assigned(k)
        if loc is not None:
            return _at(loc)
        before = self.info.defined.get(self.name)
        return f" (unchanged since {_short(before)})" if before is not None else ""

    def _error(self, message: str, hint: str, at_assignment: bool = True) -> TranspileError:
        loc = (self._second() if self.loop and at_assignment else None) or self.info.loc
        return TranspileError(message, loc, hint)

    def shape(self, x: ShapedArray, y: ShapedArray) -> TranspileError:
        traced, name = self.info.traced, self.name
        if self.loop:
            return self._error(
                f"{traced} changes the shape of `{name}`",
                f"carried variables must keep their shape across iterations ({x} before, "
                f"{y} after); preallocate `{name}` with its final shape, or use lax.scan to "
                f"stack per-step results.{self._lines()}")
        return self._error(
            f"{traced} gives `{name}` different shapes in its branches",
            f"{self._sides(x, y)}; both branches run as one lax.cond and must give "
            f"`{name}` the same shape and dtype (broadcast or pad one of them, or compute "
            f"`{name}` outside the `if`).")

    def dtype(self, x: ShapedArray, y: ShapedArray) -> TranspileError:
        traced, name = self.info.traced, self.name
        if self.loop:
            return self._error(
                f"{traced} changes the dtype of `{name}`",
                f"{self._sides(x, y)}; carried variables must keep their dtype: cast the "
                f"new value back (`.astype(jnp.{x.dtype.name})`) or start `{name}` with the "
                "dtype the loop gives it.")
        return self._error(
            f"{traced} gives `{name}` different dtypes in its branches",
            f"{self._sides(x, y)}; both branches run as one lax.cond: cast one of them "
            f"(e.g. `.astype(jnp.{y.dtype.name})`) so both give the same dtype.")

    def structure(self, a: Slot, b: Slot) -> TranspileError:
        verb = "changes the structure of" if self.loop else "gives different structures to"
        return self._error(
            f"{self.info.traced} {verb} `{self.name}`",
            f"{self._sides(_kind_of(a), _kind_of(b))}; tuples, lists and dicts carried "
            "through it must keep their structure (to collect per-step results use lax.scan).")

    def static(self, x: Any, y: Any) -> TranspileError:
        verb = "changes" if self.loop else "gives different values to"
        return self._error(
            f"{self.info.traced} {verb} `{self.name}`, which is not an array",
            f"{self._sides(repr(x), repr(y))}; only arrays can differ between the paths of "
            f"a traced construct: make `{self.name}` an array (jnp.asarray) or compute it "
            "outside.")

    def one_sided(self, a: Slot, b: Slot) -> TranspileError:
        name, traced = self.name, self.info.traced
        if not self.loop:
            missing, present = (a, b) if a.missing else (b, a)
            branch = "true" if missing is b else "false"
            where = self._assigned(0 if branch == "true" else 1)
            at = f" (at {_short(where)})" if where else ""
            if _kind_of(missing) == "undefined" and _kind_of(present) != "None":
                return self._error(
                    f"`{name}` is assigned in only one branch of an {traced}, but is used "
                    "after it",
                    f"it is set only in the {branch} branch{at}; under jit both branches "
                    f"run as one lax.cond and must both give `{name}` a value: assign it in "
                    "the other branch too, or before the `if`.")
            return self._error(
                f"{traced} gives `{name}` a value in one branch and {_kind_of(missing)} in "
                "the other",
                f"{self._sides(_kind_of(a), _kind_of(b))}; both branches must give `{name}` "
                "an array of the same shape and dtype (use zeros instead of None).")
        if a.missing and _kind_of(a) == "undefined":
            return self._error(
                f"{traced} needs a value for `{name}` before the loop",
                f"`{name}` is first set inside the loop{self._in_loop()} and read after it "
                f"or by the next iteration; under jit the loop is one {_loop_op(self.info)} whose "
                f"carried variables need a value before the first iteration: assign `{name}` "
                "before the loop (e.g. zeros of its final shape).")
        return self._error(
            f"{traced} changes `{name}` between None and an array",
            f"{self._sides(_kind_of(a), _kind_of(b))}; carried variables must be arrays of "
            f"one shape and dtype: start `{name}` as zeros (jnp.zeros(...)), not None.")


def predicate_error(info: ConstructInfo, aval: ShapedArray) -> TranspileError:
    return TranspileError(
        f"{info.traced}: the condition is an array of shape {list(aval.shape)}, whose truth "
        "value is ambiguous", info.loc,
        "reduce it to one boolean with jnp.any(...) or jnp.all(...), or select elementwise "
        "with jnp.where(...)")


def append_error(info: ConstructInfo, name: str) -> TranspileError:
    """A list appended to inside a traced construct: a reverse-mode tape, or the user's."""
    if name.startswith("_tape"):
        loop = "`for` over a traced range" if info.kind == "for" else f"`{info.kind}`"
        what = ("whose trip count depends on a traced value" if info.kind != "if"
                else "on a traced value that records a tape")
        return TranspileError(
            f"reverse-mode differentiation of a {loop} {what} needs a static bound",
            info.loc,
            f"the derivative code records one tape entry per iteration (`{name}`), so the "
            "number of iterations must be known when tracing: loop over a static range "
            "(Python ints), write the loop as lax.while_loop(cond, body, init) (differentiated "
            "under jit with checkpoints), or use lax.fori_loop with static bounds or lax.scan.")
    if info.kind == "if":
        hint = ("under jit both branches run as one lax.cond, so a Python list cannot grow in "
                "only one of them; append after the `if`, or select values with jnp.where.")
    else:
        hint = (f"under jit the loop runs as one {_loop_op(info)} and a Python list would need "
                "one entry per iteration; use lax.scan to stack per-step results, or "
                "preallocate an array and write into it with `.at[i].set(...)`.")
    return TranspileError(f"`{name}.append(...)` inside {info.traced}", info.loc, hint)


def step_error(info: ConstructInfo) -> TranspileError:
    return TranspileError(f"{info.traced} with a traced step", info.loc,
                          "make the step of range(...) a Python int (the bounds may be traced)")


__all__ = ["StateErrors", "append_error", "predicate_error", "step_error", "Static"]
