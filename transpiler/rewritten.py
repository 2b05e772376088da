"""Functions the frontend's rewriting introduces calls to, besides builtins (no imports: the
disk cache resolves these names when it loads generated code, without libcst)."""

from __future__ import annotations

from typing import Any

# The name a lowered dict comprehension calls `with_item` by (frontend/comprehensions.py)
WITH_ITEM = "_with_item"


def with_item(d: dict, key: Any, value: Any) -> dict:
    """``{**d, key: value}``: a dict comprehension's dict, one entry more (the transforms
    have rules for it: transforms/classify.py)."""
    return {**d, key: value}


# name -> function, for every name rewritten code may call
INTRODUCED = {WITH_ITEM: with_item}
