"""Operators and methods shared by every array kind: eager `Array`, jit results
(`DeviceArray`) and `Tracer`. Each one forwards to `transpiler.numpy`, so all three follow
JAX's semantics and the same code runs eagerly and under `jit`."""

from __future__ import annotations

import builtins
from typing import Any, Callable

import numpy as np
from transpiler.errors import located


# `transpiler.numpy`, set when it finishes importing (it imports this module first). Methods
# that the transforms differentiate from source refer to it as a plain global.
jnp: Any = None


def _jnp() -> Any:
    from transpiler import numpy as jnp  # cycle: transpiler.numpy imports this module first
    return jnp


_OPERAND_TYPES = (builtins.int, builtins.float, builtins.bool, builtins.complex,
                  np.ndarray, np.generic)


def _accepts(other: Any) -> bool:
    return isinstance(other, _OPERAND_TYPES) or isinstance(other, ArrayMethods) \
        or hasattr(other, "block_until_ready")


def _binary(name: str, reflected: bool = False) -> Any:
    def method(self: Any, other: Any) -> Any:
        if not _accepts(other):
            return NotImplemented
        fn = getattr(_jnp(), name)
        return fn(other, self) if reflected else fn(self, other)
    method.__name__ = name
    return method


def _unary(name: str) -> Any:
    def method(self: Any) -> Any:
        return getattr(_jnp(), name)(self)
    method.__name__ = name
    return method


def _forward(name: str) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(_jnp(), name)(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"Same as ``jnp.{name}(self, ...)``."
    return method


class Abstract:
    """An array whose values are unknown while it stands in for one (a recorded or
    abstractly traced value): asking for a concrete value raises the error its class's
    ``_concrete(what)`` builds."""

    __slots__ = ()

    # Each stand-in's error for `what`, of the `errors.CONCRETE_ERRORS` class of `kind`.
    _concrete: Callable[[str, str], Exception]

    def __bool__(self) -> bool:
        raise self._concrete("Python `if`/`while`/`and`/`or` (bool())", "bool")

    def __float__(self) -> float:
        raise self._concrete("float()", "float")

    def __int__(self) -> int:
        raise self._concrete("int()", "int")

    def __index__(self) -> int:
        raise self._concrete("use as a Python index", "index")

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise self._concrete("conversion to a NumPy array", "array")


class AvalProperties:
    """``shape``, ``dtype`` and ``weak_type`` of arrays that carry a `ShapedArray` ``aval``."""

    __slots__ = ()
    aval: Any

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    def __len__(self) -> int:
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    def __iter__(self) -> Any:
        """The rows (an abstract array's too: its shape is known)."""
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.aval.shape[0]))  # type: ignore[index]


class ArrayMethods:
    """Mixin: NumPy's operator and method surface with JAX semantics."""

    __slots__ = ()
    __array_priority__ = 100

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("subtract"), _binary("subtract", True)
    __mul__, __rmul__ = _binary("multiply"), _binary("multiply", True)
    __truediv__, __rtruediv__ = _binary("true_divide"), _binary("true_divide", True)
    __floordiv__, __rfloordiv__ = _binary("floor_divide"), _binary("floor_divide", True)
    __mod__, __rmod__ = _binary("remainder"), _binary("remainder", True)
    __pow__, __rpow__ = _binary("power"), _binary("power", True)
    __matmul__, __rmatmul__ = _binary("matmul"), _binary("matmul", True)
    __and__, __rand__ = _binary("bitwise_and"), _binary("bitwise_and", True)
    __or__, __ror__ = _binary("bitwise_or"), _binary("bitwise_or", True)
    __xor__, __rxor__ = _binary("bitwise_xor"), _binary("bitwise_xor", True)
    __lshift__, __rlshift__ = _binary("left_shift"), _binary("left_shift", True)
    __rshift__, __rrshift__ = _binary("right_shift"), _binary("right_shift", True)
    __lt__, __le__ = _binary("less"), _binary("less_equal")
    __gt__, __ge__ = _binary("greater"), _binary("greater_equal")
    __eq__, __ne__ = _binary("equal"), _binary("not_equal")  # type: ignore[assignment]
    __hash__ = None  # type: ignore[assignment]
    __neg__, __pos__ = _unary("negative"), _unary("positive")
    __abs__, __invert__ = _unary("abs"), _unary("invert")

    sum, mean, prod = _forward("sum"), _forward("mean"), _forward("prod")
    max, min = _forward("max"), _forward("min")
    any, all = _forward("any"), _forward("all")
    argmax, argmin = _forward("argmax"), _forward("argmin")
    cumsum, cumprod = _forward("cumsum"), _forward("cumprod")
    var, std = _forward("var"), _forward("std")
    ravel, squeeze = _forward("ravel"), _forward("squeeze")
    swapaxes, clip, round = _forward("swapaxes"), _forward("clip"), _forward("round")
    dot, take, repeat = _forward("dot"), _forward("take"), _forward("repeat")
    conj, conjugate = _forward("conj"), _forward("conj")
    nonzero, sort, argsort = _forward("nonzero"), _forward("sort"), _forward("argsort")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy ufuncs on our arrays run as `transpiler.numpy` functions (JAX semantics):
        ``np_array + x`` and ``np.sin(x)`` work eagerly, on device results and under jit."""
        fn = getattr(_jnp(), ufunc.__name__, None)
        if method != "__call__" or fn is None or kwargs:
            host = [np.asarray(i) if isinstance(i, ArrayMethods) else i for i in inputs]
            return getattr(ufunc, method)(*host, **kwargs)
        return fn(*inputs)

    def __getitem__(self, index: Any) -> Any:
        return _jnp().getitem(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        raise located(TypeError, f"{type(self).__name__} does not support item assignment: "
                      "transpiler arrays are immutable, as JAX's are",
                      "write `x = x.at[index].set(value)`; inside a function that jit, grad "
                      "or vmap transforms, `y[i] = v` works on an array the function creates")

    def astype(self, dtype: Any) -> Any:
        return _jnp().astype(self, dtype)

    def reshape(self, *shape: Any, order: str = "C") -> Any:
        if len(shape) == 1 and not isinstance(shape[0], (builtins.int, np.integer)):
            shape = tuple(shape[0])
        return jnp.reshape(self, shape, order=order)

    def transpose(self, *axes: Any) -> Any:
        if len(axes) == 1 and not isinstance(axes[0], (builtins.int, np.integer)):
            axes = tuple(axes[0]) if axes[0] is not None else ()
        return jnp.transpose(self, axes or None)

    def flatten(self) -> Any:
        return _jnp().ravel(self)

    def copy(self) -> Any:
        return _jnp().array(self, copy=True)

    @property
    def T(self) -> Any:
        return _jnp().transpose(self)

    @property
    def mT(self) -> Any:
        return _jnp().swapaxes(self, -1, -2)

    @property
    def real(self) -> Any:
        return _jnp().real(self)

    @property
    def imag(self) -> Any:
        return _jnp().imag(self)

    @property
    def at(self) -> Any:
        """Functional updates: ``x.at[i].set(v)``, ``.add``, ``.multiply``, ``.get`` ..."""
        return _jnp().index_update_ref(self)

    @property
    def ndim(self) -> int:
        return len(self.shape)  # type: ignore[attr-defined]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))  # type: ignore[attr-defined]

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize  # type: ignore[attr-defined]

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize
