"""Colour for `transpiler show` in a terminal, by Pygments: its Python lexer, and a small
MLIR lexer of ours (Pygments has none) for StableHLO, linalg and flow."""

from __future__ import annotations

from pygments import highlight as _pygments_highlight
from pygments.formatters import TerminalFormatter
from pygments.lexer import RegexLexer, bygroups
from pygments.lexers import PythonLexer
from pygments.token import (Comment, Keyword, Name, Number, Operator, Punctuation, String,
                            Text, Whitespace)


class MlirLexer(RegexLexer):
    """MLIR's textual form: ``%ssa = dialect.op %a, %b : tensor<4xf32>``."""

    name = "MLIR"
    aliases = ["mlir"]
    tokens = {
        "root": [
            (r"//.*?$", Comment.Single),
            (r'"(\\\\.|[^"\\\\])*"', String),
            (r"(func\.func|module|return)\b", Keyword),
            (r"([a-z_]+)(\.)([a-z_][\w.]*)", bygroups(Name.Namespace, Punctuation,
                                                      Name.Function)),
            (r"%[\w#.]+(:\d+)?", Name.Variable),
            (r"\^[\w]+", Name.Label),
            (r"@[\w.$]+", Name.Entity),
            (r"#[\w.]+", Name.Decorator),
            (r"(tensor|vector|memref|complex)(?=<)", Keyword.Type),
            (r"(?:\d+|\?)x(?=[\d?a-z])", Number),  # a shape's dimensions: 4x3xf32
            (r"(?:[iuf]|ui|si|bf)\d+\b|\bindex\b", Keyword.Type),
            (r"-?\d+(\.\d+)?([eE][-+]?\d+)?", Number),
            (r"->|=|:|<|>|\*", Operator),
            (r"[(){}\[\],]", Punctuation),
            (r"\s+", Whitespace),
            (r".", Text),
        ],
    }


def highlight(text: str, kind: str) -> str:
    """`text` (``kind`` ``"python"`` or ``"mlir"``) with terminal colours."""
    lexer = PythonLexer() if kind == "python" else MlirLexer()
    return _pygments_highlight(text, lexer, TerminalFormatter())
