"""Applying Python functions over arrays: vectorize, apply_along_axis, apply_over_axes,
fromfunction, and frompyfunc with its `ufunc` type.

Like JAX, these map the function with `vmap` (one `vmap` over the flattened batch
dimensions), so it sees the core slices of the arrays, and the result stages under
``jit`` and differentiates; the function must be one the transforms can read. `vmap`
belongs to a higher layer, which hands it down with `install_vmap` when it is imported.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from typing import Any, Callable, Collection, Optional, Sequence

import numpy as np

from transpiler import dtypes
from transpiler.errors import located
from transpiler.numpy.creation import asarray
from transpiler.numpy.index_tricks import indices
from transpiler.numpy.joining import stack
from transpiler.numpy.shape import (_slice_axis, broadcast_shapes, broadcast_to, expand_dims,
                                    moveaxis, ravel, reshape)
from transpiler.primitives.core import abstractify, normalize_axis

__all__ = ["apply_along_axis", "apply_over_axes", "frompyfunc", "fromfunction", "ufunc",
           "vectorize"]

_VMAP: list[Callable] = []  # [transpiler.vmap], installed by transpiler.transforms.batch.api


def install_vmap(vmap: Callable) -> None:
    """Hand down the batching transform (a higher layer than this package)."""
    _VMAP[:] = [vmap]


_DIMENSION = r"\w+"
_CORE = rf"(?:{_DIMENSION}(?:,{_DIMENSION})*)?"
_ARGUMENT = rf"\({_CORE}\)"
_ARGUMENTS = rf"{_ARGUMENT}(?:,{_ARGUMENT})*"
_SIGNATURE = rf"^{_ARGUMENTS}->{_ARGUMENTS}$"


def _parse_signature(signature: str) -> tuple[list, list]:
    """NumPy's generalized-ufunc signature ``"(m,n),(n)->(m)"`` as core dimension names."""
    signature = signature.replace(" ", "")
    if not re.match(_SIGNATURE, signature):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    inputs, outputs = signature.split("->")
    parse = lambda part: [tuple(re.findall(_DIMENSION, arg))  # noqa: E731
                          for arg in re.findall(_ARGUMENT, part)]
    return parse(inputs), parse(outputs)


def _reshape_leading(out: Any, batch: tuple[int, ...]) -> Any:
    """The outputs' leading (flattened batch) axis as `batch`."""
    if isinstance(out, (tuple, list)):
        return type(out)(_reshape_leading(o, batch) for o in out)
    shape = abstractify(out).shape
    return reshape(out, batch + tuple(shape[1:]))


def vectorize(pyfunc: Callable, *, excluded: Collection[Any] = frozenset(),
              signature: Optional[str] = None) -> Callable:
    """`pyfunc` made to broadcast over its array arguments: it is called on elements (or,
    with a `signature`, on core slices), the other axes being mapped with `vmap`.
    `excluded` names positions or keywords passed through unmapped."""
    if any(not isinstance(e, (str, int)) for e in excluded):
        raise TypeError("jax.numpy.vectorize can only exclude integer or string arguments, "
                        f"but excluded={excluded!r}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"excluded={excluded!r} contains negative numbers")
    core = _parse_signature(signature) if signature is not None else None

    @functools.wraps(pyfunc)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return _vectorized_call(pyfunc, excluded, signature, core, args, kwargs)

    return wrapped


def _vectorized_call(pyfunc: Callable, excluded: Collection[Any], signature: Optional[str],
                     core: Optional[tuple[list, list]], args: tuple, kwargs: dict) -> Any:
    """A call of ``vectorize(pyfunc, ...)``."""
    context = f"on vectorized function with excluded={excluded!r} and " \
              f"signature={signature!r}"
    static_kwargs = {k: v for k, v in kwargs.items() if k in excluded}
    if len(static_kwargs) != len(kwargs):
        raise TypeError(f"keyword arguments of a vectorized function must be excluded, "
                        f"got {sorted(set(kwargs) - set(static_kwargs))} {context}")
    # None and Python scalars go to the function as they are: they broadcast already
    mapped = [i for i, a in enumerate(args) if i not in excluded and a is not None
              and not isinstance(a, (bool, int, float, complex))]
    input_core = core[0] if core is not None else [()] * len(mapped)
    if core is not None and len(input_core) != len(mapped):
        raise TypeError(f"wrong number of positional arguments: expected "
                        f"{len(input_core)}, got {len(mapped)} {context}")
    arrays = []
    for i in mapped:
        arrays.append(asarray(args[i]))
    sizes: dict[str, int] = {}
    batch_shapes = []
    for k, dims in enumerate(input_core):
        shape = arrays[k].shape
        if len(dims) > len(shape):
            raise ValueError(f"input with shape {shape} does not have enough dimensions "
                             f"for all core dimensions {dims} {context}")
        for name, size in zip(dims, shape[len(shape) - len(dims):]):
            if sizes.setdefault(name, size) != size:
                raise ValueError(f"inconsistent size for core dimension {name!r}: {size} "
                                 f"vs {sizes[name]} {context}")
        batch_shapes.append(shape[:len(shape) - len(dims)])
    batch = broadcast_shapes(*batch_shapes) if batch_shapes else ()
    call = functools.partial(pyfunc, **static_kwargs) if static_kwargs else pyfunc
    if not batch:
        return call(*args)
    n = math.prod(batch)
    full_args = []
    in_axes: list[Optional[int]] = []
    for i in range(len(args)):
        if i in mapped:
            k = mapped.index(i)
            dims = input_core[k]
            core_shape = arrays[k].shape[arrays[k].ndim - len(dims):]
            flat = broadcast_to(arrays[k], batch + core_shape)
            full_args.append(reshape(flat, (n,) + core_shape))
            in_axes.append(0)
        else:
            full_args.append(args[i])
            in_axes.append(None)
    vmap = _VMAP[0]
    out = vmap(call, in_axes=tuple(in_axes))(*full_args)
    return _reshape_leading(out, batch)


def apply_along_axis(func1d: Callable, axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    """``func1d`` applied to each 1-d slice of `arr` along `axis`; the slices' results
    take the place of that axis."""
    arr = asarray(arr)
    axis = normalize_axis(operator.index(axis), arr.ndim, "apply_along_axis")
    moved = moveaxis(arr, axis, -1)
    batch, n = moved.shape[:-1], moved.shape[-1]
    call = functools.partial(func1d, **kwargs) if kwargs else func1d
    if not batch:
        return call(arr, *args)
    flat = reshape(moved, (math.prod(batch), n))
    vmap = _VMAP[0]
    out = vmap(call, in_axes=(0,) + (None,) * len(args))(flat, *args)
    out = reshape(out, batch + tuple(abstractify(out).shape[1:]))
    core = abstractify(out).ndim - len(batch)
    # the result's core axes go where `axis` was
    return moveaxis(out, tuple(range(len(batch), len(batch) + core)),
                    tuple(range(axis, axis + core)))


def apply_over_axes(func: Callable, a: Any, axes: Sequence[int]) -> Any:
    """``func(a, axis)`` applied for each axis in turn, the reduced axis kept as size 1."""
    a_arr = asarray(a)
    for axis in ((axes,) if isinstance(axes, int) else axes):
        b = asarray(func(a_arr, axis))
        if b.ndim == a_arr.ndim:
            a_arr = b
        elif b.ndim == a_arr.ndim - 1:
            a_arr = expand_dims(b, axis)
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return a_arr


def fromfunction(function: Callable, shape: Any, *, dtype: Any = float, **kwargs: Any) -> Any:
    """The array of ``function(i, j, ...)`` at every index of `shape` (the function is
    mapped over scalar indices of `dtype`)."""
    shape = (operator.index(shape),) if isinstance(shape, (int, np.integer)) else \
        tuple(operator.index(d) for d in shape)
    target = dtypes.canonicalize(dtype)
    grids = indices(shape, dtype=target, sparse=False) if shape else None
    call = functools.partial(function, **kwargs) if kwargs else function
    if not shape:
        return call()
    flat = [ravel(reshape(_slice_axis(grids, 0, i, i + 1), shape)) for i in range(len(shape))]
    vmap = _VMAP[0]
    out = vmap(call)(*flat)
    return _reshape_leading(out, shape)


class ufunc:
    """``jnp.ufunc``: a universal function from a Python scalar function (`frompyfunc`):
    calls broadcast over the arguments (with `vectorize`); binary ones also have
    `outer`, `reduce` and `accumulate`."""

    def __init__(self, func: Callable, /, nin: int, nout: int, *, name: Optional[str] = None,
                 nargs: Optional[int] = None, identity: Any = None) -> None:
        self._func = func
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs = self.nin if nargs is None else nargs
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self._vectorized = vectorize(func)

    def __repr__(self) -> str:
        return f"<jnp.ufunc '{self.__name__}'>"

    def __call__(self, *args: Any, out: None = None, where: None = None) -> Any:
        if out is not None:
            raise located(NotImplementedError, f"out argument of {self}",
                          "use the returned value (arrays are immutable)")
        if where is not None:
            raise located(NotImplementedError, f"where argument of {self}",
                          "select from the result with jnp.where(where, result, other)")
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} positional argument(s) but "
                            f"{len(args)} were given")
        return self._vectorized(*args)

    def _binary(self, method: str) -> None:
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{method} only supported for binary ufuncs with a single "
                             f"output; {self} has nin={self.nin} and nout={self.nout}")

    def outer(self, A: Any, B: Any, /) -> Any:
        """``func(a, b)`` for every pair of elements of `A` and `B`."""
        self._binary("outer")
        A, B = asarray(A), asarray(B)
        return self(reshape(A, A.shape + (1,) * B.ndim), B)

    def reduce(self, a: Any, axis: Optional[int] = 0, dtype: Any = None, out: None = None,
               keepdims: bool = False, initial: Any = None, where: None = None) -> Any:
        """`a` reduced along `axis` (None: flattened) by folding `func` from the left."""
        self._binary("reduce")
        if out is not None or where is not None:
            raise located(NotImplementedError, "out and where arguments of ufunc.reduce",
                          "use the returned value; select the elements to reduce first")
        arr = asarray(a, dtype=dtype)
        if axis is None:
            arr, axis = ravel(arr), 0
        axis = normalize_axis(operator.index(axis), arr.ndim, "reduce")
        n = arr.shape[axis]
        start = initial if initial is not None else self.identity
        if n == 0 and start is None:
            raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                             "which has no identity")
        slices = [reshape(_slice_axis(arr, axis, i, i + 1),
                          arr.shape[:axis] + arr.shape[axis + 1:]) for i in range(n)]
        result = asarray(start, dtype=arr.dtype) if start is not None else slices.pop(0)
        for s in slices:
            result = self(result, s)
        if start is not None and n == 0:
            result = broadcast_to(result, arr.shape[:axis] + arr.shape[axis + 1:])
        return expand_dims(result, axis) if keepdims else result

    def accumulate(self, a: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Any:
        """The running reductions of `a` along `axis`."""
        self._binary("accumulate")
        if out is not None:
            raise located(NotImplementedError, "out argument of ufunc.accumulate",
                          "use the returned value (arrays are immutable)")
        arr = asarray(a, dtype=dtype)
        axis = normalize_axis(operator.index(axis), arr.ndim, "accumulate")
        rest = arr.shape[:axis] + arr.shape[axis + 1:]
        running: list[Any] = []
        for i in range(arr.shape[axis]):
            s = reshape(_slice_axis(arr, axis, i, i + 1), rest)
            running.append(s if not running else self(running[-1], s))
        return stack(running, axis=axis)


def frompyfunc(func: Callable, /, nin: int, nout: int, *, identity: Any = None) -> ufunc:
    """A `ufunc` from a Python function of `nin` scalars returning `nout` values."""
    return ufunc(func, nin, nout, identity=identity)
