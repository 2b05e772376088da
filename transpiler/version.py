"""The package version (one place: pyproject.toml reads it, caches key on it)."""

__version__ = "0.1.0"
