"""On-disk cache of generated derivative code, so a second process does not re-run libcst.

An entry is keyed by the function's code object (``marshal``: its bytecode, constants and
names, nested code included), the transform's parameters, and a description of every name
the code refers to (modules by name, functions by module, qualname and code hash,
primitives by name, other values by type). Anything that would change the generated code
changes the key; values (constants, arrays) are looked up afresh when an entry is loaded.
Callees' generated functions are recorded by import path and loaded through their own
entries; a function whose callees cannot be imported (closures, lambdas) is not cached.
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import importlib
import json
import marshal
import types
from pathlib import Path
from typing import Any, Callable, Optional

from transpiler.cache_files import read_sealed, reject, write_sealed
from transpiler.config import config
from transpiler.errors import SourceLocation
from transpiler.per_thread import PerThreadList
from transpiler.rewritten import DEFAULT_PREFIX, INTRODUCED, MISSING, default_value
from transpiler.version import __version__
from transpiler.primitives.core import Primitive

FORMAT = "1"
_RECORD = "AD1"  # the header of a record on disk (transpiler/cache_files.py)
_MISSING = object()


def _referenced_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _referenced_names(const)
    return names


class Same:
    """An object compared by identity and kept alive: in a cache key, it changes when the
    name it was read from is bound to something else."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Same) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


@functools.lru_cache(maxsize=4096)
def _rebindable_names(code: types.CodeType, modules: frozenset) -> tuple[str, ...]:
    return tuple(sorted(_referenced_names(code) - modules))


def free_names(fn: Callable) -> tuple[str, ...]:
    """The free names `fn` reads (globals, closure cells) that may be rebound: all but the
    modules."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return ()
    spaces = getattr(fn, "__globals__", {})
    modules = frozenset(n for n in code.co_names if isinstance(spaces.get(n), types.ModuleType))
    return _rebindable_names(code, modules)


def bindings(fn: Callable, names: Optional[tuple[str, ...]] = None) -> tuple:
    """What the `free_names` of `fn` refer to now. In-memory caches of generated code and
    of traces key on it, so that code generated or traced for `fn` is made again when a
    global it reads, or a helper it calls, is bound to something new, as a new trace sees
    it."""
    return tuple(Same(lookup(fn, name)) for name in (free_names(fn) if names is None else names))


def lookup(fn: Callable, name: str) -> Any:
    """A free name of `fn` as the function sees it: closure cell, global, builtin."""
    code = getattr(fn, "__code__", None)
    closure = getattr(fn, "__closure__", None) or ()
    if code is not None and name in code.co_freevars:
        try:
            return closure[code.co_freevars.index(name)].cell_contents
        except ValueError:  # empty cell
            return _MISSING
    found = getattr(fn, "__globals__", {}).get(name, _MISSING)
    if found is _MISSING:
        found = getattr(builtins, name, _MISSING)
    if found is _MISSING:  # a function the frontend's rewriting calls
        found = INTRODUCED.get(name, _MISSING)
    if found is _MISSING and name.startswith(DEFAULT_PREFIX):  # a default value it holds
        found = default_value(fn, name)
        found = _MISSING if found is MISSING else found
    return found


def namespace_of(fn: Callable, names: Any) -> Optional[dict[str, Any]]:
    """What `names` refer to for `fn` now (a stored record's names), or None when one of
    them is gone (the record is then stale)."""
    namespace: dict[str, Any] = {}
    for name in names:
        value = lookup(fn, name)
        if value is _MISSING:
            return None
        namespace[name] = value
    return namespace


def describe(value: Any) -> str:
    """What the transforms see in a name: its kind and identity, not its data."""
    if isinstance(value, types.ModuleType):
        return "module:" + value.__name__
    if isinstance(value, Primitive):
        return "primitive:" + value.name
    if isinstance(value, types.FunctionType):
        digest = hashlib.sha256(code_bytes(value.__code__)).hexdigest()[:16]
        return f"function:{value.__module__}.{value.__qualname__}:{digest}"
    if isinstance(value, type):
        return f"type:{value.__module__}.{value.__qualname__}"
    inner = getattr(value, "_fun", None) or getattr(value, "_original", None)
    if inner is not None:  # (and the options a wrapper's callers are generated with)
        options = getattr(value, "code_options", "")
        return f"wrapper:{type(value).__qualname__}{options}({describe(inner)})"
    if callable(value):
        return f"callable:{type(value).__module__}.{type(value).__qualname__}:" \
               f"{getattr(value, '__qualname__', '')}"
    return "value:" + type(value).__qualname__


PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)  # .../transpiler
_PACKAGE_TAG = "<transpiler>"


_GENERATED_TAG = "<generated>"


def _generated_root() -> str:
    return str(Path(config.cache_dir) / "generated")


def portable_path(filename: str) -> str:
    """`filename`, with the transpiler package's own directory as ``<transpiler>`` and the
    cache's folder of generated files (named by their content) as ``<generated>``: keys and
    source maps are then the same in every installation and with every cache directory
    (a wrapper generated over generated code keys the same in a fresh process)."""
    if filename.startswith(PACKAGE_ROOT):
        return _PACKAGE_TAG + filename[len(PACKAGE_ROOT):]
    generated = _generated_root()
    if filename.startswith(generated):
        return _GENERATED_TAG + filename[len(generated):]
    return filename


def local_path(filename: str) -> str:
    """The inverse of `portable_path` in this installation."""
    if filename.startswith(_PACKAGE_TAG):
        return PACKAGE_ROOT + filename[len(_PACKAGE_TAG):]
    if filename.startswith(_GENERATED_TAG):
        return _generated_root() + filename[len(_GENERATED_TAG):]
    return filename


def code_bytes(code: types.CodeType) -> bytes:
    """``marshal`` of `code` with every file name made portable (nested code included)."""
    return marshal.dumps(_portable_code(code))


def _portable_code(code: types.CodeType) -> types.CodeType:
    consts = tuple(_portable_code(c) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return code.replace(co_filename=portable_path(code.co_filename), co_consts=consts)


_FINGERPRINT: list[str] = []
# The code that decides what gets generated: a change to any of it changes every key.
# The primitives' modules hold their derivative templates, next to their definitions.
_GENERATOR_SOURCES = ("frontend/*.py", "transforms/**/*.py", "codegen/*.py", "primitives/*.py")


def transforms_fingerprint() -> str:
    """A hash of the transforms' own source (and the package version), once per process."""
    if not _FINGERPRINT:
        h = hashlib.sha256(__version__.encode())
        root = Path(PACKAGE_ROOT)
        for pattern in _GENERATOR_SOURCES:
            for path in sorted(root.glob(pattern)):
                h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
        _FINGERPRINT.append(h.hexdigest()[:16])
    return _FINGERPRINT[0]


def key(fn: Callable, active: frozenset, has_aux: bool) -> Optional[str]:
    code = getattr(fn, "__code__", None)
    if code is None or not config.disk_cache:
        return None
    h = hashlib.sha256(code_bytes(code))
    h.update(f"{FORMAT}|{transforms_fingerprint()}|{sorted(active)}|{has_aux}|"
             f"{portable_path(code.co_filename)}".encode())
    for name in sorted(_referenced_names(code)):
        value = lookup(fn, name)
        if value is not _MISSING:
            h.update(f"|{name}={describe(value)}".encode())
    return h.hexdigest()


def import_path(obj: Any) -> Optional[tuple[str, str]]:
    """(module, qualname) that imports back to `obj` itself, or None."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        return None
    return (module, qualname) if resolve_path(module, qualname) is obj else None


def resolve_path(module: str, qualname: str) -> Any:
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        return obj
    except (ImportError, AttributeError):
        return None


# Where generated code goes instead of the user cache while the import hook rewrites a
# module (``<package>/__transpiler__/``, like ``__pycache__``; see transpiler/import_hook.py).
LOCAL_DIRS: PerThreadList[Path] = PerThreadList("generated_code_dirs")


def _path(entry_key: str) -> Path:
    root = LOCAL_DIRS[-1] if LOCAL_DIRS else Path(config.cache_dir) / "ad"
    return root / entry_key[:2] / f"{entry_key}.json"


# Derivatives of the library's own composites, generated ahead of time and shipped with
# the package (``make derivatives``): a fresh installation transforms only user code.
BUNDLE_DIR = Path(PACKAGE_ROOT) / "data" / "derivatives"


def read(entry_key: str, required: tuple[str, ...] = ()) -> Optional[dict]:
    """The record of `entry_key`, from the cache or the package's bundle; a damaged or
    foreign cache entry (or one without the `required` keys) is reported once and deleted."""
    path = _path(entry_key)
    record = load_entry(path)
    if record is not None and any(k not in record for k in required):
        reject(path, "a record without " + ", ".join(k for k in required if k not in record))
        record = None
    if record is None and config.bundled_derivatives:
        try:  # shipped as plain JSON (readable, diffable; checked by make derivatives)
            record = json.loads((BUNDLE_DIR / f"{entry_key}.json").read_text())
        except (OSError, ValueError):
            return None
    if not isinstance(record, dict) or record.get("format") != FORMAT or any(
            k not in record for k in required):
        return None
    return record


def load_entry(path: Path) -> Optional[dict]:
    """The record in the cache entry at `path`, None if there is none or it is damaged."""
    data = read_sealed(path, _RECORD)
    if data is None:
        return None
    try:
        record = json.loads(data)
    except ValueError:
        record = None
    if isinstance(record, dict) and record.get("format") == FORMAT:
        return record
    reject(path, "not a record of this version")
    return None


def write(entry_key: str, record: dict) -> None:
    record = dict(record, format=FORMAT)
    try:
        write_sealed(_path(entry_key), _RECORD, json.dumps(record).encode())
    except OSError:
        pass  # a read-only cache only costs the next process a transform


def encode_map(source_map: dict[int, SourceLocation]) -> dict[str, list]:
    return {str(k): [portable_path(v.file), v.line, v.col] for k, v in source_map.items()}


def decode_map(data: dict[str, list]) -> dict[int, SourceLocation]:
    return {int(k): SourceLocation(local_path(v[0]), v[1], v[2]) for k, v in data.items()}
