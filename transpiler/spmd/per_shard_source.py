"""``pmap(f).source``: the per-shard function, under a header saying how it is sharded."""

from __future__ import annotations

import ast
import inspect
import os
import textwrap
from typing import Any
from transpiler.transforms.autograph.runtime import convert_for_jit
from transpiler.transforms.common.generated import target

COLLECTIVES = ("psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute",
               "all_to_all", "axis_index")


def per_shard_source(pm: Any) -> str:
    """The code each device runs on its shard: the transformed function's generated code
    (``pmap(grad(f))``), the control-flow conversion jit traces, or the function itself."""
    fun = pm.fun
    body = getattr(fun, "source", None) if not inspect.isfunction(fun) else None
    fn_target = target(fun)
    if not isinstance(body, str):
        body = getattr(convert_for_jit(fun), "source", None)
    where = None  # the user's file and the line the shown code starts at
    if not isinstance(body, str):
        lines, first = inspect.getsourcelines(fn_target)
        decorators = _decorator_lines(lines)
        body = textwrap.dedent("".join(lines[decorators:]))
        where = (inspect.getsourcefile(fn_target) or "?", first + decorators)
    return "\n".join(_header(pm, fn_target, body, where)) + "\n" + body.rstrip() + "\n"


def _decorator_lines(lines: list[str]) -> int:
    """How many of a definition's source lines are its decorators (which may span lines:
    ``@functools.partial(shard_map, mesh=mesh,\n    out_specs=P())``)."""
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return 0
    node = tree.body[0] if tree.body else None
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
        return node.lineno - 1
    return 0


def _header(pm: Any, target: Any, body: str, where: Any) -> list[str]:
    try:
        params = [p.name for p in inspect.signature(target).parameters.values()]
    except (TypeError, ValueError):
        params = []
    axes = pm.in_axes
    per_param = list(axes) if isinstance(axes, (tuple, list)) else [axes] * len(params)
    mapped, replicated, static = [], [], []
    for i, (name, axis) in enumerate(zip(params, per_param)):
        if i in pm.static_argnums:
            static.append(name)
        elif axis is None:
            replicated.append(name)
        else:
            mapped.append(f"{name} (axis {axis})" if isinstance(axis, int) else
                          f"{name} (in_axes {axis!r})")
    strategy = pm.strategy or "devices"
    how = {"devices": "one IREE module, shard k on device k; collectives are transfers "
                      "between devices plus local math",
           "emulated": "vmap over the shards on one device; collectives reduce the batch axis",
           "collectives": "one per-replica StableHLO program; collectives are StableHLO "
                          "all_reduce / all_gather / collective_permute"}[strategy]
    lines = [f"# pmap of {pm.fname} over axis {pm.axis_name!r}: each device runs the "
             "function below on its shard",
             f"# sharded: {', '.join(mapped) or '(none)'}; replicated on every shard: "
             f"{', '.join(replicated) or '(none)'}" + (f"; static: {', '.join(static)}"
                                                      if static else "")]
    found = _collectives(body)
    if found:
        at = (lambda line: f"{os.path.basename(where[0])}:{where[1] + line - 1}") if where \
            else (lambda line: f"line {line}")
        lines.append("# collectives across the shards: " +
                     ", ".join(f"{name} ({at(line)})" for name, line in found))
    lines.append(f"# strategy {strategy}: {how}")
    return lines


def _collectives(body: str) -> list[tuple[str, int]]:
    try:
        tree = ast.parse(body)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else \
                func.id if isinstance(func, ast.Name) else None
            if name in COLLECTIVES:
                found.append((f"lax.{name}", node.lineno))
    return sorted(found, key=lambda item: item[1])
