"""``Partial``: a ``functools.partial`` that is a pytree, its bound arguments the leaves."""

from __future__ import annotations

import functools
from typing import Any

from ._registry import register_pytree_node


class _HashableCallableShim:
    """Delegates ``__call__``, ``__hash__`` and ``__eq__`` to the partial it wraps."""

    def __init__(self, fun: Any) -> None:
        self.fun = fun

    def __call__(self, *args: Any, **kw: Any) -> Any:
        return self.fun(*args, **kw)

    def __hash__(self) -> int:
        return hash(self.fun)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _HashableCallableShim):
            return bool(self.fun == other.fun)
        return bool(self.fun == other)

    def __repr__(self) -> str:
        return f"_HashableCallableShim({self.fun!r})"


class Partial(functools.partial):
    """A ``functools.partial`` that works in pytrees: ``Partial(func, *args, **kwargs)``.

    Its bound positional and keyword arguments are its children and ``func`` its node
    data, so it can be passed to a ``jit``-compiled function (its arguments are traced
    there) and through ``tree_map``; being a ``functools.partial``, the transforms call it
    as one (``transforms/common/partials.py``). ``Partial(func)`` with no arguments wraps
    a function as a pytree with no leaves.
    """

    def __new__(cls, func: Any, *args: Any, **kw: Any) -> "Partial":
        # functools.partial merges a partial `func`'s own arguments into the new one; box
        # it so that exactly the arguments given here are this pytree's children (JAX's).
        if isinstance(func, functools.partial):
            original = func
            shim = _HashableCallableShim(original)
            out = super().__new__(cls, shim, *args, **kw)
            shim.func = original.func  # type: ignore[attr-defined]
            shim.args = original.args  # type: ignore[attr-defined]
            shim.keywords = original.keywords  # type: ignore[attr-defined]
            return out
        return super().__new__(cls, func, *args, **kw)


def _flatten_partial(p: Partial) -> tuple[tuple, Any]:
    return (p.args, p.keywords), p.func


def _unflatten_partial(func: Any, children: Any) -> Partial:
    args, keywords = children
    return Partial(func, *args, **keywords)


register_pytree_node(Partial, _flatten_partial, _unflatten_partial)
