"""Functions the frontend's rewriting introduces calls to, besides builtins (no imports: the
disk cache resolves these names when it loads generated code, without libcst): a dict
comprehension's step, and Python's iterator-returning builtins as lists."""

from __future__ import annotations

import builtins
from typing import Any
from transpiler.errors import located

# The name a lowered dict comprehension calls `with_item` by (frontend/comprehensions.py)
WITH_ITEM = "_with_item"


def with_item(d: dict, key: Any, value: Any) -> dict:
    """``{**d, key: value}``: a dict comprehension's dict, one entry more (the transforms
    have rules for it: transforms/common/classify.py)."""
    return {**d, key: value}


def zip_list(*iterables: Any) -> list:
    """``zip(a, b, ...)``, evaluated at once into a list of tuples (the builtin's one-pass
    iterator would hide its elements, and their derivatives, from the transforms)."""
    seqs = []
    for xs in iterables:
        seqs.append(list(xs))
    out = []
    for i in range(builtins.min([builtins.len(xs) for xs in seqs])):  # (static lengths)
        items = []
        for xs in seqs:
            items.append(xs[i])
        out.append(tuple(items))
    return out


def enumerate_list(iterable: Any, start: int = 0) -> list:
    """``enumerate(xs, start)``, evaluated at once into a list of ``(index, x)`` pairs."""
    seq = list(iterable)
    out = []
    for i in range(builtins.len(seq)):
        out.append((start + i, seq[i]))
    return out


def reversed_list(seq: Any) -> list:
    """``reversed(xs)``, evaluated at once into a list."""
    items = list(seq)
    out = []
    for i in range(builtins.len(items) - 1, -1, -1):
        out.append(items[i])
    return out


def sorted_list(iterable: Any, key: Any = None, reverse: bool = False) -> list:
    """``sorted(xs, key=..., reverse=...)``: a stable sort whose elements keep their
    derivatives (the order itself is static: comparing traced values under `jit` is an
    error, as in JAX)."""
    items = list(iterable)
    if key is None:
        order = sort_order(items, reverse)
    else:
        keys = []
        for item in items:
            keys.append(key(item))
        order = sort_order(keys, reverse)
    out = []
    for i in order:
        out.append(items[i])
    return out


def sort_order(keys: list, reverse: bool) -> list:
    """The positions of `keys` in sorted order (stable, as Python's ``sorted``); static."""
    try:
        return builtins.sorted(builtins.range(builtins.len(keys)), key=keys.__getitem__,
                               reverse=reverse)
    except TypeError as error:  # batched values (vmap) have no single order
        raise located(TypeError, f"sorted(): {error}: the values differ across the batch, so "
                      "they have no single order", "sort arrays with jnp.sort / jnp.argsort, "
                      "or sort by static values (names, shapes)") from None


# The name lowered loops call `sequence` by (frontend/canonicalize.py, lower-for-loops)
SEQUENCE = "_sequence"


def sequence(xs: Any) -> Any:
    """What ``for x in xs`` iterates, as something to index: a dict's keys and a set's
    elements as a list; lists, tuples and arrays as they are. (A lowered loop reads
    ``xs[i]``: on a dict that would be a value, or a `KeyError`.)"""
    if isinstance(xs, dict):
        return list(xs.keys())
    if isinstance(xs, (set, frozenset)):
        return list(xs)
    return xs


# The builtins that return one-pass iterators, and the names transformed code calls instead:
# the lists above (frontend/__init__.py renames the calls), whose elements keep their
# derivatives and batch axes where an iterator would hide them from the transforms.
LISTED = {"zip": zip_list, "enumerate": enumerate_list, "reversed": reversed_list,
          "sorted": sorted_list}
LISTED_NAMES = {name: f"_{name}" for name in LISTED}

MISSING = object()


# The name a parameter's default value is bound to when its expression reads a variable
# of the scope that defined the function (``lambda v, k=k: ...`` made in a loop).
DEFAULT_PREFIX = "_default_"


def default_value(fn: Any, name: str) -> Any:
    """The default value of `fn`'s parameter ``name[len(DEFAULT_PREFIX):]`` (what the
    function holds, not its expression re-evaluated), or `MISSING`. (The frontend binds
    these names: frontend/resolve_names.py, bind_defaults.)"""
    param = name[len(DEFAULT_PREFIX):]
    code = getattr(fn, "__code__", None)
    if code is None:
        return MISSING
    kwdefaults = getattr(fn, "__kwdefaults__", None) or {}
    if param in kwdefaults:
        return kwdefaults[param]
    defaults = getattr(fn, "__defaults__", None) or ()
    positional = code.co_varnames[:code.co_argcount]  # (positional-only ones included)
    if param in positional:
        index = positional.index(param) - (len(positional) - len(defaults))
        if 0 <= index < len(defaults):
            return defaults[index]
    return MISSING



# name -> function, for every name rewritten code may call
INTRODUCED = {WITH_ITEM: with_item, SEQUENCE: sequence,
              **{LISTED_NAMES[n]: f for n, f in LISTED.items()}}
