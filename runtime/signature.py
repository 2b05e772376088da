"""The signatures IREE records for exported functions (``iree.abi.declaration``), parsed:
each input's and output's shape, dtype and device."""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from .array import MLIR_ELEMENT_TYPES

__all__ = ["TensorSpec", "parse_declaration"]


class TensorSpec(NamedTuple):
    """Expected shape (``None`` for a dynamic dim) and dtype of one tensor."""

    name: str
    shape: tuple[int | None, ...]
    dtype: np.dtype | None  # None: unknown element type (no dtype checks)
    # Which of the module's devices holds it (``iree.abi.affinity = #hal.device.promise<
    # @devK>`` in a multi-device module: K); None in a single-device module.
    placement: int | None = None

    def describe(self) -> str:
        dims = ",".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype if self.dtype is not None else '?'}[{dims}]"

    def matches(self, shape: tuple[int, ...]) -> bool:
        if len(shape) != len(self.shape):
            return False
        return all(e is None or e == g for e, g in zip(self.shape, shape))


# ------------------------------------------------------ signature parsing
def _split_top(text: str) -> list[str]:
    """Split on commas that are not nested inside <>, (), [] or {}."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def _matching_paren(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced parentheses")


def _parse_tensor(type_text: str) -> tuple[tuple[int | None, ...], np.dtype | None]:
    type_text = type_text.strip()
    if not (type_text.startswith("tensor<") and type_text.endswith(">")):
        raise ValueError(f"unsupported ABI type {type_text!r}")
    parts = type_text[len("tensor<"):-1].split("x")
    dims: list[int | None] = []
    while len(parts) > 1 and (parts[0] == "?" or parts[0].isdigit()):
        dims.append(None if parts[0] == "?" else int(parts[0]))
        parts.pop(0)
    return tuple(dims), MLIR_ELEMENT_TYPES.get("x".join(parts))


def _parse_value(text: str, default_name: str) -> TensorSpec:
    """Parse ``%name: tensor<...> {iree.abi.encoding = tensor<...>}``."""
    name = default_name
    if text.startswith("%") and ":" in text:
        name, text = text[1:].split(":", 1)
    type_text, attrs = text.strip(), ""
    placement = None
    if "{" in type_text:
        type_text, attrs = type_text.split("{", 1)
    for attr in _split_top(attrs.rstrip("}")):
        key, _, value = attr.partition("=")
        if key.strip() == "iree.abi.encoding":
            type_text = value  # e.g. ui32 hidden behind a signless i32
        elif key.strip() == "iree.abi.affinity":
            found = _DEVICE_ORDINAL.search(value)
            placement = int(found.group(1)) if found else None
    shape, dtype = _parse_tensor(type_text)
    return TensorSpec(name.strip(), shape, dtype, placement)


_DEVICE_ORDINAL = re.compile(r"promise<@[A-Za-z_]*?(\d+)>")


def parse_declaration(decl: str) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """Parse an ``iree.abi.declaration`` into (inputs, outputs).

    Example: ``sync func @f(%input0: tensor<2x3xf32>) -> (%output0: tensor<i1>)``.
    Raises ValueError for anything other than a sync all-tensor signature.
    """
    if not decl.startswith("sync func @"):
        raise ValueError(f"unsupported function kind: {decl!r}")
    open_at = decl.index("(")
    close_at = _matching_paren(decl, open_at)
    inputs = [
        _parse_value(p, f"input{i}")
        for i, p in enumerate(_split_top(decl[open_at + 1:close_at]))
    ]
    rest = decl[close_at + 1:].strip()
    outputs: list[TensorSpec] = []
    if rest.startswith("->"):
        rest = rest[2:].strip()
        if rest.startswith("("):
            rest = rest[1:_matching_paren(rest, 0)]
        outputs = [
            _parse_value(p, f"output{i}") for i, p in enumerate(_split_top(rest))
        ]
    return inputs, outputs
