"""``jax.random.permutation`` and ``choice``: JAX's sort-based shuffle (rounds of sorting
by fresh random 32-bit keys, stable, so that a key gives JAX's order) and its sampling with
and without replacement, with and without probabilities."""

from __future__ import annotations

import math
import operator
from typing import Any, Optional, Sequence

import numpy as np

from transpiler import dtypes
from transpiler import numpy as jnp
from transpiler.lax.sorting import sort_key_val, top_k
from transpiler.primitives.core import abstractify, normalize_axis
from transpiler.random.core import gumbel, randint, random_bits, split, uniform
from transpiler.random.keys import raw_key


def _shuffle(key: Any, x: Any, axis: int) -> Any:
    """`x` shuffled along `axis`: ``ceil(3 log(size) / log(2^32 - 1))`` rounds, each a
    stable sort by 32 random bits per element (JAX's)."""
    size = math.prod(abstractify(x).shape)
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        keys = split(key)
        key, subkey = keys[0], keys[1]
        _, x = sort_key_val(random_bits(subkey, 32, abstractify(x).shape), x, axis)
    return x


def _population(name: str, x: Any) -> int:
    """The static int `x` stands for (``permutation(key, 10)``)."""
    if not dtypes.is_int(abstractify(x).dtype):
        raise TypeError(f"random.{name}: x must be an integer or at least 1-dimensional")
    try:
        return operator.index(x) if not hasattr(x, "shape") else int(np.asarray(x))
    except Exception:
        raise TypeError(f"random.{name}: an integer x must be a static value, not a traced "
                        "one; pass the array to permute instead") from None


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of ``arange(x)`` (an int `x`) or of `x` along `axis` (every
    slice alike, unless `independent`)."""
    key = raw_key("permutation", key)
    x_aval = abstractify(x, 1, "permutation")
    if x_aval.ndim == 0:
        return _shuffle(key, jnp.arange(_population("permutation", x)), 0)
    axis = normalize_axis(axis, x_aval.ndim, "permutation")
    x = jnp.asarray(x)
    if independent or x_aval.ndim == 1:
        return _shuffle(key, x, axis)
    order = _shuffle(key, jnp.arange(x_aval.shape[axis]), 0)
    return jnp.take(x, order, axis)


def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True,
           p: Optional[Any] = None, axis: int = 0, mode: Optional[str] = None) -> Any:
    """Samples from ``arange(a)`` (an int `a`) or from `a` along `axis`: uniform or with
    probabilities `p`, with or without replacement (JAX's algorithms: randint, a
    permutation's prefix, an inverse-CDF search, or the Gumbel top-k)."""
    key = raw_key("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"random.choice: shape must be a sequence, got {shape!r}")
    arr = jnp.asarray(a)
    if arr.ndim == 0:
        n_inputs = _population("choice", a)
    else:
        axis = normalize_axis(axis, arr.ndim, "choice")
        n_inputs = arr.shape[axis]
    shape = tuple(operator.index(d) for d in shape)
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("random.choice: a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"random.choice: cannot take a larger sample (size {n_draws}) than "
                         f"the population (size {n_inputs}) when replace=False")
    if p is None:
        if replace:
            index = randint(key, shape, 0, n_inputs)
            result = index if arr.ndim == 0 else jnp.take(arr, index, axis)
        else:
            shuffled = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)
            result = jnp.take(shuffled, jnp.arange(n_draws), axis if arr.ndim else 0)
    else:
        p = jnp.asarray(p)
        if not dtypes.is_float(p.dtype):
            p = p.astype(dtypes.default_float())
        if p.shape != (n_inputs,):
            raise ValueError(f"random.choice: p must be None or a 1-d vector with the same "
                             f"size as a.shape[axis]; p has shape {tuple(p.shape)} and "
                             f"a.shape[axis] is {n_inputs}")
        if replace:
            cumulative = jnp.cumsum(p)
            r = cumulative[-1] * (1 - uniform(key, shape, dtype=cumulative.dtype))
            index = jnp.searchsorted(cumulative, r).astype(dtypes.default_int())
        else:
            g = gumbel(key, (n_inputs,), dtype=p.dtype, mode=mode or "low") + jnp.log(p)
            index = top_k(g, k=n_draws)[1].astype(dtypes.default_int())
        result = index if arr.ndim == 0 else jnp.take(arr, index, axis)
    out_shape = shape if arr.ndim == 0 else arr.shape[:axis] + shape + arr.shape[axis + 1:]
    return jnp.reshape(result, out_shape)


__all__ = ["choice", "permutation"]
