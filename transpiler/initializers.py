"""``jax.nn.initializers`` (as ``transpiler.nn.initializers``): functions that make the
initial value of a parameter, ``init(key, shape, dtype=float32) -> array``.

The variance-scaling family (Glorot/Xavier, He/Kaiming, LeCun) draws with a variance of
``scale / fan``, where ``fan`` counts the inputs, the outputs or their mean of a weight of
that shape (`in_axis`/`out_axis` name those dimensions; the others are receptive field,
`batch_axis` dimensions excepted). Random draws come from `transpiler.random`, so a key
gives JAX's values where JAX's own samplers agree with ours.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence, Union

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler import random

Initializer = Callable[..., Any]

# The standard deviation of a standard normal truncated to (-2, 2): dividing by it makes
# the truncated draw's variance the one asked for.
_TRUNCATED_STDDEV = 0.87962566103423978


def _dtype(dtype: Any) -> Any:
    return dtypes.canonicalize(jnp.float32 if dtype is None else dtype)


def zeros(key: Any, shape: Sequence[int], dtype: Any = None) -> Any:
    return jnp.zeros(shape, _dtype(dtype))


def ones(key: Any, shape: Sequence[int], dtype: Any = None) -> Any:
    return jnp.ones(shape, _dtype(dtype))


def constant(value: Any, dtype: Any = None) -> Initializer:
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        return jnp.full(shape, value, _dtype(dtype))
    return init


def uniform(scale: float = 1e-2, dtype: Any = None) -> Initializer:
    """Uniform in ``[0, scale)``."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        return random.uniform(key, tuple(shape), _dtype(dtype)) * jnp.asarray(scale, _dtype(dtype))
    return init


def normal(stddev: float = 1e-2, dtype: Any = None) -> Initializer:
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        return random.normal(key, tuple(shape), _dtype(dtype)) * jnp.asarray(stddev, _dtype(dtype))
    return init


def truncated_normal(stddev: float = 1e-2, dtype: Any = None, lower: float = -2.0,
                     upper: float = 2.0) -> Initializer:
    """Normal with standard deviation `stddev` before truncation to ``[lower, upper]``
    standard deviations."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        draw = random.truncated_normal(key, lower, upper, tuple(shape), _dtype(dtype))
        return draw * jnp.asarray(stddev, _dtype(dtype))
    return init


def _fans(shape: Sequence[int], in_axis: Union[int, Sequence[int]],
          out_axis: Union[int, Sequence[int]],
          batch_axis: Union[int, Sequence[int]]) -> tuple[float, float]:
    if len(shape) < 2:
        raise ValueError(f"cannot compute the fans of a weight of shape {tuple(shape)}: "
                         "variance scaling needs at least 2 dimensions")

    def axes(a: Union[int, Sequence[int]]) -> list[int]:
        return [k % len(shape) for k in ((a,) if isinstance(a, int) else a)]
    ins, outs, batch = axes(in_axis), axes(out_axis), axes(batch_axis)
    in_size = math.prod(shape[k] for k in ins)
    out_size = math.prod(shape[k] for k in outs)
    receptive = math.prod(shape[k] for k in range(len(shape)) if k not in {*ins, *outs, *batch})
    return in_size * receptive, out_size * receptive


def variance_scaling(scale: float, mode: str, distribution: str,
                     in_axis: Union[int, Sequence[int]] = -2,
                     out_axis: Union[int, Sequence[int]] = -1,
                     batch_axis: Union[int, Sequence[int]] = (),
                     dtype: Any = None) -> Initializer:
    """Draws with variance ``scale / fan``: `mode` ``"fan_in"``, ``"fan_out"`` or
    ``"fan_avg"``; `distribution` ``"truncated_normal"``, ``"normal"`` or ``"uniform"``."""
    if mode not in ("fan_in", "fan_out", "fan_avg"):
        raise ValueError(f"variance_scaling: mode must be fan_in, fan_out or fan_avg, got {mode!r}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError("variance_scaling: distribution must be truncated_normal, normal or "
                         f"uniform, got {distribution!r}")

    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        shape, dt = tuple(shape), _dtype(dtype)
        fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
        variance = scale / fan
        if distribution == "truncated_normal":
            draw = random.truncated_normal(key, -2.0, 2.0, shape, dt)
            return draw * jnp.asarray(math.sqrt(variance) / _TRUNCATED_STDDEV, dt)
        if distribution == "normal":
            return random.normal(key, shape, dt) * jnp.asarray(math.sqrt(variance), dt)
        draw = random.uniform(key, shape, dt, -1.0, 1.0)
        return draw * jnp.asarray(math.sqrt(3 * variance), dt)
    return init


def _variance_scaling_family(name: str, scale: float, mode: str,
                             distribution: str) -> Callable[..., Initializer]:
    def make(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Any = (),
             dtype: Any = None) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis, dtype)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = f"``variance_scaling({scale}, {mode!r}, {distribution!r})``."
    return make


glorot_uniform = _variance_scaling_family("glorot_uniform", 1.0, "fan_avg", "uniform")
glorot_normal = _variance_scaling_family("glorot_normal", 1.0, "fan_avg", "truncated_normal")
lecun_uniform = _variance_scaling_family("lecun_uniform", 1.0, "fan_in", "uniform")
lecun_normal = _variance_scaling_family("lecun_normal", 1.0, "fan_in", "truncated_normal")
he_uniform = _variance_scaling_family("he_uniform", 2.0, "fan_in", "uniform")
he_normal = _variance_scaling_family("he_normal", 2.0, "fan_in", "truncated_normal")
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale: float = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """Uniformly distributed orthogonal matrices (``random.orthogonal``), times `scale`:
    the entries along `column_axis` are the columns, the other axes flattened into rows;
    a non-square matrix has orthonormal rows or columns, whichever are fewer."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        shape, dt = tuple(shape), _dtype(dtype)
        if len(shape) < 2:
            raise ValueError(f"orthogonal initializer requires at least a 2D shape, got "
                             f"{shape}")
        if 0 in shape:
            return jnp.zeros(shape, dt)
        axis = column_axis % len(shape)
        n_cols = shape[axis]
        rows_shape = shape[:axis] + shape[axis + 1:]
        q = random.orthogonal(key, math.prod(shape) // n_cols, (), dt, n_cols)
        q = jnp.moveaxis(jnp.reshape(q, rows_shape + (n_cols,)), -1, axis)
        return jnp.asarray(scale, dt) * q
    return init


def delta_orthogonal(scale: float = 1.0, column_axis: int = -1,
                     dtype: Any = None) -> Initializer:
    """Delta-orthogonal convolution kernels (Xiao et al. 2018): zero but at the spatial
    center, which holds an `orthogonal` ``(in, out)`` matrix. The shape is 3-, 4- or 5-d,
    spatial axes first, with ``in <= out``."""
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype) -> Any:
        shape, dt = tuple(shape), _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"delta orthogonal initializer requires a 3D, 4D or 5D shape, "
                             f"got {shape}")
        if shape[-1] < shape[-2]:
            raise ValueError(f"delta orthogonal initializer: fan_in {shape[-2]} must be at "
                             f"most fan_out {shape[-1]}")
        center = tuple((k - 1) // 2 for k in shape[:-2])
        matrix = orthogonal(scale, column_axis, dt)(key, shape[-2:])
        return jnp.zeros(shape, dt).at[center].set(matrix)
    return init
