"""Process-wide configuration flags, settable like JAX's ``jax.config.update``.

Flags can also come from the environment:

- ``TRANSPILER_ENABLE_X64=1`` keeps 64-bit types (JAX's ``jax_enable_x64``).
- ``TRANSPILER_CACHE_DIR`` moves the on-disk cache (default ``~/.cache/transpiler``).
- ``TRANSPILER_REWRITE_ON_IMPORT=1`` generates a transform's code when it is created
  (``@grad`` at import), not at its first call; errors then surface at the decorator.
- ``TRANSPILER_DEVICE`` picks the default IREE driver for ``jit``
  (``auto`` chooses ``local-sync`` for small work and ``local-task`` for large).
- ``TRANSPILER_TRACEBACK_FILTERING=off`` shows the library's own frames in tracebacks
  (transpiler/tracebacks.py hides them by default, as JAX does).
- ``TRANSPILER_LOG_COMPILES=1`` logs every compile of a jitted function, and why a
  function is compiled again (JAX's ``jax_log_compiles``; see transpiler/compile_log.py).
- ``TRANSPILER_COMPILE_STATUS=0`` turns off the one-line status a compile taking more
  than a second shows in an interactive terminal.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def _env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


class Config:
    """Holds the flags. Use ``config.update(name, value)`` or attribute access."""

    _ALIASES = {"jax_enable_x64": "enable_x64",
                "jax_threefry_partitionable": "threefry_partitionable",
                "jax_traceback_filtering": "traceback_filtering",
                "jax_log_compiles": "log_compiles"}

    def __init__(self) -> None:
        self.enable_x64: bool = _env_flag("TRANSPILER_ENABLE_X64", False)
        self.cache_dir: Path = Path(
            os.environ.get("TRANSPILER_CACHE_DIR", Path.home() / ".cache" / "transpiler")
        )
        # JAX's default since 0.5: random bits computed so that they shard (same bits as JAX).
        self.threefry_partitionable: bool = _env_flag("TRANSPILER_THREEFRY_PARTITIONABLE", True)
        self.disk_cache: bool = _env_flag("TRANSPILER_DISK_CACHE", True)
        # Read the library's shipped derivative code (off only to regenerate it).
        self.bundled_derivatives: bool = _env_flag("TRANSPILER_BUNDLED_DERIVATIVES", True)
        self.default_device: str = os.environ.get("TRANSPILER_DEVICE", "auto")
        # Generate code when a transform is created (as the import hook does for its
        # packages) instead of at first call.
        self.rewrite_on_import: bool = _env_flag("TRANSPILER_REWRITE_ON_IMPORT", True)
        # Work (in elements touched per call) above which `auto` picks local-task.
        self.multithread_threshold: int = int(os.environ.get("TRANSPILER_MT_THRESHOLD", 1 << 16))
        # "auto" hides the library's frames from tracebacks of user errors; "off" shows all.
        self.traceback_filtering: str = os.environ.get("TRANSPILER_TRACEBACK_FILTERING", "auto")
        # Each compile of a jitted function logged (logger "transpiler", WARNING), with why.
        self.log_compiles: bool = _env_flag("TRANSPILER_LOG_COMPILES", False)
        # "compiling f (...) ..." on an interactive stderr while a compile takes over 1 s.
        self.compile_status: bool = _env_flag("TRANSPILER_COMPILE_STATUS", True)
        # Under a jit called in this process, linear algebra calls LAPACK on the host (as
        # JAX's CPU backend does) instead of the compiled loops that lower() stages.
        self.lapack_on_host: bool = _env_flag("TRANSPILER_LAPACK_ON_HOST", True)

    def update(self, name: str, value: Any) -> None:
        name = self._ALIASES.get(name, name)
        if not hasattr(self, name) or name.startswith("_"):
            raise AttributeError(f"unknown config flag {name!r}; known: {sorted(vars(self))}")
        if name == "cache_dir":
            value = Path(value)
        setattr(self, name, value)

    @property
    def jax_enable_x64(self) -> bool:
        return self.enable_x64

    def config_with_absl(self) -> None:
        """JAX reads its flags from absl's command line with this; the flags here come
        from ``update`` and the TRANSPILER_* environment variables, so it does nothing."""

    def parse_flags_with_absl(self) -> None:
        """(as `config_with_absl`)"""


config = Config()
