"""State that each thread keeps to itself: the stacks that tracing and the transforms push
while they run (the active traces, the vmap and pmap axes).

Were they shared, a thread tracing a new `jit` specialization would capture another
thread's eager `jnp` calls into its module, and that thread's operations would land in a
trace whose MLIR context it does not hold. Each `contextvars` context (each thread, and
each asyncio task) sees its own list.
"""

from __future__ import annotations

import contextvars
from typing import Any, Generic, Iterable, Iterator, TypeVar

T = TypeVar("T")


class PerThreadList(Generic[T]):
    """A list, one per thread: the usual list operations on the calling thread's copy."""

    def __init__(self, name: str, initial: Iterable[T] = ()) -> None:
        self._var: contextvars.ContextVar[list[T]] = contextvars.ContextVar(name)
        self._initial = tuple(initial)

    def _items(self) -> list[T]:
        try:
            return self._var.get()
        except LookupError:  # this thread's first use
            items = list(self._initial)
            self._var.set(items)
            return items

    def append(self, item: T) -> None:
        self._items().append(item)

    def extend(self, items: Iterable[T]) -> None:
        self._items().extend(items)

    def pop(self, index: int = -1) -> T:
        return self._items().pop(index)

    def __getitem__(self, index: Any) -> Any:
        return self._items()[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        self._items()[index] = value

    def __delitem__(self, index: Any) -> None:
        del self._items()[index]

    def __len__(self) -> int:
        return len(self._items())

    def __bool__(self) -> bool:
        return bool(self._items())

    def __iter__(self) -> Iterator[T]:
        return iter(self._items())

    def __reversed__(self) -> Iterator[T]:
        return reversed(self._items())

    def __contains__(self, item: object) -> bool:
        return item in self._items()

    def __repr__(self) -> str:
        return f"PerThreadList({self._items()!r})"
