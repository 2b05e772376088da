"""Rendering generated code while recording the lines of chosen nodes (see `render`)."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Optional

import libcst as cst
from libcst._nodes.internal import CodegenState  # the hook libcst's own PositionProvider uses


@dataclass
class _LineState(CodegenState):
    """A codegen state that counts lines and records the syntactic line span of `wanted`."""

    wanted: Collection[Any] = ()
    line: int = 1
    spans: dict[Any, tuple[int, int]] = field(default_factory=dict)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.line += value.count("\n")

    @contextmanager
    def record_syntactic_position(self, node: Any, *, start_node: Optional[Any] = None,
                                  end_node: Optional[Any] = None) -> Iterator[None]:
        if node not in self.wanted:
            yield
            return
        start = self.line
        yield
        end = self.line
        if end > start and self.tokens and self.tokens[-1].endswith("\n"):
            end -= 1  # the statement's own newline ends it
        self.spans[node] = (start, end)


def render_with_lines(module: cst.Module, nodes: Collection[Any]
                      ) -> tuple[str, dict[Any, tuple[int, int]]]:
    state = _LineState(default_indent=module.default_indent,
                       default_newline=module.default_newline, wanted=nodes)
    module._codegen(state)
    return "".join(state.tokens), state.spans


@dataclass
class _PositionState(CodegenState):
    """A codegen state that records every node's range as ``((line, col), (line, col))``:
    the same ranges as libcst's `PositionProvider` (syntactic where a node reports one,
    else whitespace-inclusive), without its per-token regex and position objects."""

    line: int = 1
    column: int = 0
    ranges: dict[Any, tuple[tuple[int, int], tuple[int, int]]] = field(default_factory=dict)
    _starts: list[tuple[int, int]] = field(default_factory=list)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        newline = value.rfind("\n")
        if newline < 0:
            self.column += len(value)
        else:
            self.line += value.count("\n")
            self.column = len(value) - newline - 1

    def before_codegen(self, node: Any) -> None:
        self._starts.append((self.line, self.column))

    def after_codegen(self, node: Any) -> None:
        start = self._starts.pop()
        if node not in self.ranges:
            self.ranges[node] = (start, (self.line, self.column))

    @contextmanager
    def record_syntactic_position(self, node: Any, *, start_node: Optional[Any] = None,
                                  end_node: Optional[Any] = None) -> Iterator[None]:
        start = (self.line, self.column)
        yield
        end = (self.line, self.column)
        if start_node is not None:
            start = self.ranges[start_node][0]
        if end_node is not None:
            end = self.ranges[end_node][1]
        self.ranges[node] = (start, end)


def node_ranges(module: cst.Module) -> dict[Any, tuple[tuple[int, int], tuple[int, int]]]:
    """Every node of `module` -> ``((line, col), (end_line, end_col))``, 1-based lines and
    0-based columns, as libcst's `PositionProvider` reports them."""
    state = _PositionState(default_indent=module.default_indent,
                           default_newline=module.default_newline)
    module._codegen(state)
    return state.ranges
