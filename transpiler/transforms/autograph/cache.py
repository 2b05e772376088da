"""Converted control flow on disk: `jit`'s conversion of a user function (autograph/convert.py)
is stored like reverse mode's generated code (keyed by the code object and what its names
refer to), so a later process -- or a module the import hook rewrote -- loads it without
the frontend (and without importing libcst). Derivative code (generated, converted with
source maps of its own) is converted afresh each time."""

from __future__ import annotations

import builtins
import dataclasses
from typing import Any, Callable, Optional

from transpiler.errors import SourceLocation
from transpiler.errors import GENERATED_SOURCE_MAPS
from transpiler.codegen import disk_cache, load_source
from transpiler.rewritten import INTRODUCED
from transpiler.transforms.autograph import runtime as autograph_runtime
from transpiler.codegen.disk_cache import portable_path
from transpiler.codegen.disk_cache import local_path
from transpiler.transforms.autograph.state import ConstructInfo

_MARK = frozenset({"<autograph>"})


# What the disk cache stores besides the code (filled by autograph.convert_function): the
# names the generated code reads its runtime and its constructs' facts under, and the facts.
CONVERSIONS: dict[Callable, tuple[str, str, tuple]] = {}


def is_generated(fn: Callable) -> bool:
    """Code a transform generated (derivatives): written by `codegen` and source-mapped."""
    code = getattr(fn, "__code__", None)
    return (hasattr(fn, "source") and code is not None
            and code.co_filename in GENERATED_SOURCE_MAPS) or \
        getattr(fn, "__name__", "").startswith(("vjp_", "jvp_"))


def converted_function(fn: Callable) -> Callable:
    """`autograph.convert_function(fn)`, through the disk cache."""
    disk_key = None if is_generated(fn) else disk_cache.key(fn, _MARK, False)
    if disk_key:
        loaded = _load(fn, disk_key)
        if loaded is not None:
            return loaded
    from transpiler.transforms.autograph.convert import convert_function  # cycle: it imports this module
    converted = convert_function(fn)
    entry = CONVERSIONS.pop(fn, None)
    if disk_key and entry is not None:
        _store(fn, disk_key, converted, entry)
    return converted


def _store(fn: Callable, disk_key: str, converted: Callable, entry: tuple) -> None:
    # libcst stays unloaded while converted functions load from the disk cache
    from transpiler.frontend import REWRITE_BUILTINS, read_function
    cf_name, info_name, infos = entry
    _, namespace = read_function(fn)
    disk_cache.write(disk_key, {
        "name": converted.__name__, "source": converted.source,  # type: ignore[attr-defined]
        "names": sorted(namespace), "builtins": list(REWRITE_BUILTINS),
        "module": getattr(fn, "__module__", None),
        "cf_name": cf_name, "info_name": info_name, "infos": [_encode(i) for i in infos],
        "source_map": disk_cache.encode_map(getattr(converted, "source_map", {}))})


def _load(fn: Callable, disk_key: str) -> Optional[Callable]:
    record = disk_cache.read(disk_key, ("names", "builtins", "cf_name", "info_name", "infos",
                                        "source", "name", "source_map", "module"))
    if record is None:
        return None
    namespace = disk_cache.namespace_of(fn, record["names"])
    if namespace is None:
        return None
    for name in record["builtins"]:
        namespace.setdefault(name, getattr(builtins, name))
    for name, function in INTRODUCED.items():  # (_zip ...)
        namespace.setdefault(name, function)
    namespace[record["cf_name"]] = autograph_runtime
    namespace[record["info_name"]] = tuple(_decode(i) for i in record["infos"])
    return load_source(record["source"], record["name"], namespace,
                       disk_cache.decode_map(record["source_map"]),
                       record["module"] or "__transpiler_generated__")


def _loc(loc: Optional[SourceLocation]) -> Any:
    return None if loc is None else [portable_path(loc.file), loc.line, loc.col, loc.end_col]


def _unloc(data: Any) -> Optional[SourceLocation]:
    return None if data is None else SourceLocation(local_path(data[0]), *data[1:])


def _encode(info: Any) -> Any:
    if info is None:
        return None
    fields = {f.name: getattr(info, f.name) for f in dataclasses.fields(info)}
    fields["loc"] = _loc(fields["loc"])
    fields["assigned"] = [{k: _loc(v) for k, v in d.items()} for d in fields["assigned"]]
    fields["defined"] = {k: _loc(v) for k, v in fields["defined"].items()}
    return fields


def _decode(data: Any) -> Any:
    if data is None:
        return None
    return ConstructInfo(
        kind=data["kind"], loc=_unloc(data["loc"]), names=tuple(data["names"]),
        outs=tuple(data["outs"]), assigned=tuple({k: _unloc(v) for k, v in d.items()}
                                                 for d in data["assigned"]),
        defined={k: _unloc(v) for k, v in data["defined"].items()},
        appends=tuple(data["appends"]), generated=data["generated"])
