"""The generated ``vjp_<name>`` of a function: from this process's table, from the disk
cache (records name their generated callees by import path), or from the reverse-mode
transform (transform.py)."""

from __future__ import annotations

from typing import Any, Callable, Optional

from transpiler.transforms.common.generated import (aliases, emit_generated, parsed_function,
                                                    refuse_rule_code, target)
from transpiler.transforms.reverse.custom_vjp import CustomVJP, vjp_of_custom
from transpiler.codegen import disk_cache, load_source

_GENERATED: dict[tuple, tuple[str, Callable]] = {}


def vjp_function(fn: Callable, active: frozenset, has_aux: bool = False) -> tuple[str, Callable]:
    """The generated ``vjp_<name>(*args, _out_bar=None) -> (out, bars)`` of `fn` (cached)."""
    fn = target(fn)
    from transpiler.transforms.forward.custom_jvp import CustomJVP, vjp_of_custom_jvp  # cycle: it imports this module
    # Their own rules, not their source (not cached: defvjp/defjvp may follow)
    if isinstance(fn, CustomVJP):
        return f"vjp_{getattr(fn, '__name__', 'custom')}", vjp_of_custom(fn, has_aux)
    if isinstance(fn, CustomJVP):
        return f"vjp_{getattr(fn, '__name__', 'custom')}", vjp_of_custom_jvp(fn, has_aux)
    refuse_rule_code(fn, "reverse mode")
    # A global rebound (or a helper redefined) since: the code is generated again
    key = (fn, active, has_aux, disk_cache.bindings(fn))
    hit = _GENERATED.get(key)
    if hit is not None:
        return hit
    disk_key = disk_cache.key(fn, active, has_aux)
    loaded = load_cached(fn, disk_key) if disk_key else None
    if loaded is not None:
        loaded[1].vjp_of = key  # type: ignore[attr-defined]
        _GENERATED[key] = loaded
        return loaded
    from transpiler.transforms.reverse.transform import ReverseAD  # lazy: imports libcst (and this module)
    parsed = parsed_function(fn)
    from transpiler.transforms.common import classify  # lazy: as above
    with classify.generating(fn):
        generated = ReverseAD(parsed, active, has_aux, vjp_function).run()
    function = emit_generated(fn, parsed, generated, "reverse mode")
    function.cotangent_param = generated.out_bar  # type: ignore[attr-defined]
    # What it is the code of: a record of code that calls it (forward mode over it, as
    # in hessian) names that, since generated code cannot be imported back.
    function.vjp_of = key  # type: ignore[attr-defined]
    result = (generated.func.name.value, function)
    _GENERATED[key] = result
    if disk_key:
        store_cached(disk_key, fn, parsed, generated, function)
    return result


def store_cached(disk_key: str, fn: Callable, parsed: Any, generated: Any,
                  function: Callable) -> None:
    """Record generated code for the next process (skipped if a callee can't be imported)."""
    callees = {}
    for name, (callee, active) in generated.callees.items():
        code = target(callee)
        origin = getattr(code, "vjp_of", None)  # generated reverse-mode code: its function
        path = disk_cache.import_path(origin[0] if origin else code)
        if path is None:
            return
        callees[name] = {"module": path[0], "qualname": path[1], "active": sorted(active)}
        if origin:
            callees[name]["vjp_of"] = [sorted(origin[1]), origin[2]]
    disk_cache.write(disk_key, {
        "name": generated.func.name.value, "source": function.source,  # type: ignore
        "out_bar": generated.out_bar, "names": sorted(parsed.namespace),
        "callees": callees, "module": getattr(fn, "__module__", None),
        "source_map": disk_cache.encode_map(getattr(function, "source_map", {}))})


def load_cached(fn: Callable, disk_key: str, callee_code: Optional[Callable] = None
                 ) -> Optional[tuple[str, Callable]]:
    """Generated code from the disk cache; its generated callees come from `callee_code`
    (``(fn, active) -> function``; reverse mode's by default)."""
    record = disk_cache.read(disk_key, ("names", "callees", "source", "name", "source_map",
                                        "module", "out_bar"))
    if record is None:
        return None
    namespace = disk_cache.namespace_of(fn, record["names"])
    if namespace is None:
        return None
    namespace.update(aliases(namespace))
    for name, entry in record["callees"].items():
        callee = disk_cache.resolve_path(entry["module"], entry["qualname"])
        if callee is None:
            return None
        if "vjp_of" in entry:
            callee = vjp_function(callee, frozenset(entry["vjp_of"][0]), entry["vjp_of"][1])[1]
        active = frozenset(entry["active"])
        namespace[name] = callee_code(callee, active) if callee_code is not None else \
            vjp_function(callee, active, False)[1]
    function = load_source(record["source"], record["name"], namespace,
                           disk_cache.decode_map(record["source_map"]),
                           record["module"] or "__transpiler_generated__")
    function.cotangent_param = record["out_bar"]  # type: ignore[attr-defined]
    return record["name"], function
