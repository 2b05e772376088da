"""Typed PRNG keys: JAX's ``jax.random.key(0)``, an array of dtype ``key<fry>`` whose
elements are whole threefry2x32 keys (shape ``()`` for one key, ``(4,)`` for four).

A `KeyArray` holds the raw ``uint32`` key data, of shape ``(*key_shape, 2)``. It is a pytree
node with that data as its one leaf (registered with `tree_util`), so `jit` passes it in and
out like any pytree -- keys stay typed through a jitted function -- and `lax.scan` over
a batch of keys slices the data along its leading axis. To everything that abstracts values
(`abstractify`, hence `vmap`'s `in_axes`) it shows the data's aval, so ``vmap(f)(keys)``
maps the key axis. Every sampler begins with `raw_key`, which takes the data out of a
typed key (`tree_util.tree_leaves`, which `vmap` batches) or checks a raw key; `wrap_like`
wraps a result back when the argument was typed.

While a `vmap` runs, keys are raw (``uint32[2]``) arrays: the values `vmap` batches are
arrays and Python containers, so a key made or split inside a vmapped function
(``k1, k2 = random.split(k)``) is the raw key of the same data -- the same bits, taken by
every sampler -- and a vmapped function returns keys as their data.

Beyond JAX: ``np.asarray(keys)`` is the key data (JAX refuses to convert typed keys).
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

import numpy as np

from transpiler import dtypes, tree_util
from transpiler import numpy as jnp
from transpiler.errors import located
from transpiler.lax.parallel import AXES
from transpiler.primitives.core import ShapedArray, Tracer, abstractify, dtype_error

IMPL = "threefry2x32"  # the one implementation (JAX's default)
_U32 = dtypes.uint32
_KEY_MESSAGE = "a PRNG key is a uint32 array of shape (2,) or a typed key (random.key)"


class KeyDType:
    """The dtype of typed threefry2x32 keys, ``key<fry>`` (JAX's ``key_dtype()``)."""

    name = "key<fry>"
    impl = IMPL

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, KeyDType) or other == self.name

    def __hash__(self) -> int:
        return hash(self.name)


KEY_DTYPE = KeyDType()


@tree_util.register_pytree_node_class
class KeyArray:
    """An array of typed keys: shape ``data.shape[:-1]``, dtype ``key<fry>``."""

    __slots__ = ("_base",)

    def __init__(self, data: Any) -> None:
        self._base = data

    # --- the pytree node and the aval the machinery sees ------------------------------------
    def tree_flatten(self) -> tuple[tuple[Any], None]:
        return (self._base,), None

    @classmethod
    def tree_unflatten(cls, aux: Any, children: Any) -> "KeyArray":
        return cls(children[0])  # (no checks: transforms unflatten other leaves too)

    @property
    def aval(self) -> ShapedArray:
        """The key data's aval (``uint32[..., 2]``): what `jit` and `vmap` map and stage."""
        return abstractify(self._base)

    # --- JAX's typed-key array ----------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._base.shape[:-1])

    @property
    def dtype(self) -> KeyDType:
        return KEY_DTYPE

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Iterator["KeyArray"]:
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (KeyArray(self._base[i]) for i in range(self.shape[0]))

    def __getitem__(self, index: Any) -> "KeyArray":
        """Indexes the key axes (the data's trailing axis of 2 words stays whole)."""
        index = index if isinstance(index, tuple) else (index,)
        return KeyArray(self._base[(*index, slice(None))])

    def reshape(self, *shape: Any) -> "KeyArray":
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return KeyArray(jnp.reshape(self._base, (*shape, 2)))

    def ravel(self) -> "KeyArray":
        return self.reshape(-1)

    flatten = ravel

    def squeeze(self, axis: Any = None) -> "KeyArray":
        if axis is None:
            axis = tuple(i for i, d in enumerate(self.shape) if d == 1)
        axes = axis if isinstance(axis, tuple) else (axis,)
        return KeyArray(jnp.squeeze(self._base, tuple(a % self.ndim for a in axes)))

    def transpose(self, *axes: Any) -> "KeyArray":
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        order = tuple(a % self.ndim for a in axes) if axes else tuple(reversed(range(self.ndim)))
        return KeyArray(jnp.transpose(self._base, (*order, self.ndim)))

    @property
    def T(self) -> "KeyArray":
        return self.transpose()

    def swapaxes(self, axis1: int, axis2: int) -> "KeyArray":
        order = list(range(self.ndim))
        order[axis1], order[axis2] = order[axis2], order[axis1]
        return self.transpose(order)

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        if not isinstance(other, KeyArray):
            return NotImplemented
        return jnp.all(self._base == other._base, axis=-1)

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        if not isinstance(other, KeyArray):
            return NotImplemented
        return jnp.any(self._base != other._base, axis=-1)

    # Unhashable, as JAX's keys are (they define an elementwise ==).
    __hash__ = None  # type: ignore[assignment]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The key data (as `key_data`) -- where JAX refuses to convert typed keys, so that
        NumPy code written for raw keys reads typed ones too."""
        if isinstance(self._base, Tracer):
            raise TypeError("typed PRNG keys are not arrays that transpiler.numpy functions "
                            "take under jit; use random.key_data(keys) for their uint32 data")
        data = np.asarray(self._base)
        return data if dtype is None else data.astype(dtype)

    def __repr__(self) -> str:
        data = self._base if isinstance(self._base, Tracer) else np.asarray(self)
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{data}"

    __str__ = __repr__


# --- what the samplers call ---------------------------------------------------------------------

def raw_key(name: str, key: Any) -> Any:
    """The raw ``uint32[2]`` key data of `key`, a typed key or a raw key; anything else
    (a batch of keys, a float array, an int) is an error naming `name`."""
    if isinstance(key, KeyArray) and key.shape:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{key.shape} != (). Use jax.vmap for batching.")
    if key is None or isinstance(key, (tuple, list, dict)):
        _bad_key(name, key, None)
    data = tree_util.tree_leaves(key)[0]  # a typed key's data, a raw key itself (vmap too)
    try:
        aval = abstractify(data, 0, name)
    except TypeError:
        aval = None
    if aval is None or aval.shape != (2,) or aval.dtype != _U32:
        _bad_key(name, key, aval)
    return data


def _bad_key(name: str, key: Any, aval: Optional[ShapedArray]) -> None:
    got = f"{aval}" if aval is not None else type(key).__name__
    raise dtype_error(f"random.{name}: {_KEY_MESSAGE}, got {got}",
                      "make keys with random.key(seed) or random.PRNGKey(seed), "
                      "random.split or random.fold_in")


def is_typed(key: Any) -> bool:
    """Whether results made from `key` are typed keys: `key` is one, and no `vmap` runs."""
    return isinstance(key, KeyArray) and not AXES


def wrap_like(key: Any, data: Any) -> Any:
    """`data` (new key data) as typed keys when `key` is typed, else as it is."""
    if is_typed(key):
        return KeyArray(data)
    return data


# --- the public key functions ------------------------------------------------------------------

def check_impl(name: str, impl: Any) -> None:
    if impl is None or impl == IMPL or isinstance(impl, KeyDType):
        return
    if isinstance(impl, str) and impl in ("rbg", "unsafe_rbg", "threefry4x32", "philox2x32",
                                          "philox4x32"):
        raise located(NotImplementedError, f"random.{name}: only the threefry2x32 PRNG is "
                      f"implemented, not {impl!r}", "leave impl unset (or pass 'threefry2x32')")
    raise ValueError(f"random.{name}: unrecognized PRNG implementation {impl!r}; the one "
                     f"implemented is {IMPL!r}")


def key_data(keys: Any) -> Any:
    """The ``uint32`` data of `keys` (shape ``(*keys.shape, 2)``); a raw key array is its
    own data."""
    if not isinstance(keys, KeyArray):
        _check_data("key_data", keys)
    data = tree_util.tree_leaves(keys)[0]  # (what vmap batches, typed or not)
    return jnp.asarray(data) if isinstance(data, np.ndarray) else data


def wrap_key_data(key_bits_array: Any, *, impl: Any = None, dtype: Any = None) -> Any:
    """Typed keys from their ``uint32`` data (trailing axis of 2 words)."""
    if dtype is not None and impl is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                         "random.wrap_key_data")
    check_impl("wrap_key_data", impl if dtype is None else dtype)
    if isinstance(key_bits_array, KeyArray):
        raise TypeError("random.wrap_key_data: expected uint32 key data, got typed keys "
                        "(they are already wrapped)")
    data = jnp.asarray(key_bits_array) if isinstance(key_bits_array, np.ndarray) \
        else key_bits_array
    _check_data("wrap_key_data", data)
    if AXES:  # (keys are raw while a vmap runs)
        return data
    return KeyArray(data)


def _check_data(name: str, data: Any) -> None:
    try:
        aval = abstractify(data, 0, name)
    except TypeError:
        raise TypeError(f"random.{name}: expected uint32 key data (an array with a trailing "
                        f"axis of 2), got {type(data).__name__}") from None
    if aval.dtype != _U32 or aval.shape[-1:] != (2,):
        raise TypeError(f"random.{name}: expected uint32 key data with a trailing axis of 2, "
                        f"got {aval}")


def key_impl(keys: Any) -> str:
    """The name of the PRNG implementation of `keys`: ``'threefry2x32'``."""
    if not isinstance(keys, KeyArray):
        _check_data("key_impl", keys)
    return IMPL


def key_dtype(impl_spec: Any = None) -> KeyDType:
    """The dtype of typed keys of `impl_spec` (``key<fry>``)."""
    check_impl("key_dtype", impl_spec)
    return KEY_DTYPE


def clone(key: Any) -> Any:
    """`key` itself (JAX's ``clone`` matters only to its key-reuse checker)."""
    return key


__all__ = ["KeyArray", "KeyDType", "clone", "is_typed", "key_data", "raw_key",
           "key_dtype", "key_impl", "wrap_key_data", "wrap_like"]
