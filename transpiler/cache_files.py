"""Files of the on-disk caches: written atomically, sealed, and checked before they are trusted.

Every cache entry (compiled modules, generated code's compiled form, generated-code records
and control-flow facts) starts with a header naming what it is and its format version,
then the SHA-256 of the rest. An entry that is truncated, corrupted, empty, from another
format version or not ours at all is reported once (a warning on the ``transpiler.cache``
logger), deleted, and rebuilt by the caller; writes go to a temporary file renamed into
place, so a concurrent reader sees the old entry or the new one, never half of one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Optional

log = logging.getLogger("transpiler.cache")

_REPORTED: set[str] = set()


def _umask() -> int:
    mask = os.umask(0o022)  # (reading it sets it: set it back at once)
    os.umask(mask)
    return mask


_MODE = 0o666 & ~_umask()  # what open() would give a new file: the user's umask


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never half;
    the file gets the mode a plain ``open(path, "wb")`` would (mkstemp's is 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), _MODE)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _header(kind: str) -> bytes:
    return f"TP{kind}\n".encode()


def sealed(kind: str, data: bytes) -> bytes:
    """`data` behind the header of `kind` (a name with its format version) and its checksum."""
    return _header(kind) + hashlib.sha256(data).digest() + data


def unsealed(kind: str, raw: bytes) -> Optional[bytes]:
    """The data `sealed(kind, ...)` wrapped, or None when `raw` is not such an entry intact."""
    head = _header(kind)
    body = raw[len(head) + 32:]
    if raw.startswith(head) and hashlib.sha256(body).digest() == raw[len(head):len(head) + 32]:
        return body
    return None


def write_sealed(path: Path, kind: str, data: bytes) -> None:
    write_atomic(path, sealed(kind, data))


def read_sealed(path: Path, kind: str, *, discard: bool = True) -> Optional[bytes]:
    """The entry at `path` if it is intact; None if there is none. A damaged or foreign one
    is reported once and (with `discard`, for entries the cache owns) deleted."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    body = unsealed(kind, raw)
    if body is None:
        if not raw:
            reject(path, "empty", discard=discard)
        elif raw.startswith(b"TP") and not raw.startswith(_header(kind)):
            reject(path, "from another version of transpiler", discard=discard, quiet=True)
        else:
            reject(path, "corrupt, truncated or not transpiler's", discard=discard)
    return body


def reject(path: Path, why: str, *, discard: bool = True, quiet: bool = False) -> None:
    """Report a cache entry that cannot be trusted (once per path; `quiet`: only in the
    debug log) and delete it."""
    if str(path) not in _REPORTED:
        _REPORTED.add(str(path))
        (log.debug if quiet else log.warning)(
            "cache entry %s is %s: %s", path, why,
            "deleting and rebuilding it" if discard else "ignoring it")
    if discard:
        try:
            path.unlink()
        except OSError:
            pass


__all__ = ["read_sealed", "reject", "sealed", "unsealed", "write_atomic", "write_sealed"]
