"""Which derivative rules the transforms may read as code.

The run-time rules of ``lax`` control flow (transforms/ad/control.py, lax/control.py,
lax/loops.py) are run by the transforms, not read by them: reading one differentiates the
derivative machinery itself. A rule written so that a transform can read it (loops rather
than comprehensions, no star-arguments, see ad/control.py) says so with `read_by`; second
derivatives through ``cond`` / ``switch`` / ``fori_loop`` / ``scan`` are forward or reverse
mode over those rules, batched derivatives vmap of them. Both the frontend and each
transform's entry ask `readers`.
"""

from __future__ import annotations

import functools
import sys
import types
from typing import Any, Callable, Optional, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# The derivative rules of lax control flow; with the control flow itself (which the rules
# call and the transforms dispatch on), the modules whose code is run, never read unmarked.
DERIVATIVE_RULE_MODULES = frozenset({"transpiler.transforms.ad.control"})
RULE_MODULES = DERIVATIVE_RULE_MODULES | {"transpiler.lax.control", "transpiler.lax.loops"}

# The prefixes of generated code (``jvp_cond_vjp``) and of its closures.
_GENERATED_PREFIXES = ("jvp_", "vjp_", "vmap_")


def read_by(*transforms: str) -> Callable[[F], F]:
    """Mark a module-level rule (and the closures it defines) as readable by `transforms`
    ("forward mode", "reverse mode", "vmap")."""
    def mark(fn: F) -> F:
        fn.__transpiler_read_by__ = frozenset(transforms)  # type: ignore[attr-defined]
        return fn
    return mark


def is_rule_code(fn: Any, derivative_rules_only: bool = False) -> bool:
    modules = DERIVATIVE_RULE_MODULES if derivative_rules_only else RULE_MODULES
    return getattr(fn, "__module__", None) in modules


def readers(fn: Any, derivative_rules_only: bool = False) -> Optional[frozenset[str]]:
    """The transforms that may read rule code `fn`: the mark of its module-level function,
    or of the marked function whose code defines it (a closure, or generated code of one,
    whose own name is all it keeps); None for code that is not a rule's (with
    `derivative_rules_only`: not a derivative rule's -- lax.cond itself is none)."""
    if not is_rule_code(fn, derivative_rules_only):
        return None
    root = getattr(fn, "__qualname__", "").split(".")[0]
    while root.startswith(_GENERATED_PREFIXES):
        root = root[len(root.split("_")[0]) + 1:]
    owner = getattr(sys.modules.get(fn.__module__), root, None)
    if callable(owner):
        return getattr(owner, "__transpiler_read_by__", frozenset())
    return _nested_marks(fn.__module__).get(root, frozenset())


def is_generated_rule(fn: Any) -> bool:
    """Whether `fn` is a derivative rule's own generated derivative (``jvp_cond_vjp``): code
    a derivative reads only for a third derivative through lax control flow (vmap reads it
    for a batch of second derivatives). (The closures such code defines are read at second
    order already.)"""
    qualname = getattr(fn, "__qualname__", "")
    return is_rule_code(fn, derivative_rules_only=True) and "<locals>" not in qualname and \
        qualname.startswith(_GENERATED_PREFIXES)


@functools.cache
def _nested_marks(module: str) -> dict[str, frozenset[str]]:
    """Name of each function defined inside a marked function of `module` -> its marks."""
    marks: dict[str, frozenset[str]] = {}
    for value in vars(sys.modules[module]).values():
        read_by = getattr(value, "__transpiler_read_by__", None)
        code = getattr(value, "__code__", None)
        if read_by is None or code is None:
            continue
        stack = [code]
        while stack:
            for const in stack.pop().co_consts:
                if isinstance(const, types.CodeType):
                    marks[const.co_name] = marks.get(const.co_name, frozenset()) | read_by
                    stack.append(const)
    return marks
