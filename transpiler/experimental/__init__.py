"""``jax.experimental``: the names of it JAX programs use."""

from transpiler.host_callbacks import io_callback

__all__ = ["io_callback"]
