"""Batching rules of lax control flow and the named-axis collectives (filled below)."""

from __future__ import annotations

from typing import Any

MODULES = frozenset({"transpiler.lax_control", "transpiler.lax_scan"})
RULES: dict[str, Any] = {}
