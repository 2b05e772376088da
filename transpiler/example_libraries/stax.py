"""``jax.example_libraries.stax``: neural-network layers as pairs of functions.

A layer is ``(init_fun, apply_fun)``: ``init_fun(rng, input_shape) -> (output_shape,
params)`` and ``apply_fun(params, inputs, **kwargs) -> outputs`` (``rng=`` for the layers
that draw, ``mode=`` for Dropout). Combinators build networks from layers::

    init_random_params, predict = stax.serial(stax.Dense(1024), stax.Relu,
                                              stax.Dense(10), stax.LogSoftmax)

Plain `transpiler.numpy` code, so networks run eagerly, under `jit`, `grad` and `vmap`.
The convolution and pooling layers (``Conv``, ``MaxPool`` ...) need
``lax.conv_general_dilated`` and ``lax.reduce_window``, which transpiler does not have
yet; they are not defined here.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from transpiler import nn
from transpiler import numpy as jnp
from transpiler import random
from transpiler.initializers import glorot_normal, normal, ones, zeros

Layer = tuple[Callable, Callable]

# Functions JAX's stax exports under these names (nn's, for use inside layers)
logsoftmax = nn.log_softmax
softmax = nn.softmax
relu = nn.relu
sigmoid = nn.sigmoid
elu = nn.elu
leaky_relu = nn.leaky_relu
selu = nn.selu
gelu = nn.gelu
softplus = nn.softplus


def Dense(out_dim: int, W_init: Callable = glorot_normal(), b_init: Callable = normal()
          ) -> Layer:
    """A fully connected layer: ``inputs @ W + b``."""
    def init_fun(rng: Any, input_shape: Sequence[int]) -> tuple:
        k1, k2 = random.split(rng)
        W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return (*input_shape[:-1], out_dim), (W, b)

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        W, b = params
        return jnp.dot(inputs, W) + b
    return init_fun, apply_fun


def elementwise(fun: Callable, **fun_kwargs: Any) -> Layer:
    """A layer without parameters applying ``fun(inputs, **fun_kwargs)``."""
    def init_fun(rng: Any, input_shape: Sequence[int]) -> tuple:
        return input_shape, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return fun(inputs, **fun_kwargs)
    return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(nn.relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(nn.log_softmax, axis=-1)
Softmax = elementwise(nn.softmax, axis=-1)
Softplus = elementwise(nn.softplus)
Sigmoid = elementwise(nn.sigmoid)
Elu = elementwise(nn.elu)
LeakyRelu = elementwise(nn.leaky_relu)
Selu = elementwise(nn.selu)
Gelu = elementwise(nn.gelu)


def _identity_init(rng: Any, input_shape: Sequence[int]) -> tuple:
    return input_shape, ()


def _identity_apply(params: Any, inputs: Any, **kwargs: Any) -> Any:
    return inputs


Identity: Layer = (_identity_init, _identity_apply)


def _flatten_init(rng: Any, input_shape: Sequence[int]) -> tuple:
    size = 1
    for n in input_shape[1:]:
        size *= n
    return (input_shape[0], size), ()


def _flatten_apply(params: Any, inputs: Any, **kwargs: Any) -> Any:
    return jnp.reshape(inputs, (inputs.shape[0], -1))


Flatten: Layer = (_flatten_init, _flatten_apply)


def FanOut(num: int) -> Layer:
    """``num`` copies of the input (for `parallel`)."""
    def init_fun(rng: Any, input_shape: Sequence[int]) -> tuple:
        return [input_shape] * num, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return [inputs] * num
    return init_fun, apply_fun


def _fan_in_sum_init(rng: Any, input_shape: Sequence[Any]) -> tuple:
    return input_shape[0], ()


def _fan_in_sum_apply(params: Any, inputs: Sequence[Any], **kwargs: Any) -> Any:
    return functools.reduce(jnp.add, inputs)


FanInSum: Layer = (_fan_in_sum_init, _fan_in_sum_apply)


def FanInConcat(axis: int = -1) -> Layer:
    """The inputs concatenated along `axis`."""
    def init_fun(rng: Any, input_shape: Sequence[Any]) -> tuple:
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        return (*input_shape[0][:ax], size, *input_shape[0][ax + 1:]), ()

    def apply_fun(params: Any, inputs: Sequence[Any], **kwargs: Any) -> Any:
        return jnp.concatenate(inputs, axis)
    return init_fun, apply_fun


def Dropout(rate: float, mode: str = "train") -> Layer:
    """Keeps each input with probability `rate` (scaled by ``1 / rate``) when
    ``mode='train'`` (JAX's convention: `rate` is the keep rate); the identity otherwise.
    Its apply function needs ``rng=`` in training."""
    def init_fun(rng: Any, input_shape: Sequence[int]) -> tuple:
        return input_shape, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        if kwargs.get("mode", mode) != "train":
            return inputs
        rng = kwargs.get("rng")
        if rng is None:
            raise ValueError("Dropout's apply function needs rng= (a PRNG key) in training "
                             "mode, e.g. apply_fun(params, inputs, rng=key)")
        keep = random.bernoulli(rng, rate, inputs.shape)
        return jnp.where(keep, inputs / rate, 0)
    return init_fun, apply_fun


def BatchNorm(axis: Any = (0, 1, 2), epsilon: float = 1e-5, center: bool = True,
              scale: bool = True, beta_init: Callable = zeros,
              gamma_init: Callable = ones) -> Layer:
    """Batch normalization over `axis` (the batch statistics of each call)."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)

    def init_fun(rng: Any, input_shape: Sequence[int]) -> tuple:
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axes)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params: Any, x: Any, **kwargs: Any) -> Any:
        beta, gamma = params
        # the parameters broadcast over the normalized axes
        index = tuple(None if i in axes else slice(None) for i in range(jnp.ndim(x)))
        z = nn.standardize(x, axes, epsilon=epsilon)
        if center and scale:
            return gamma[index] * z + beta[index]
        if center:
            return z + beta[index]
        if scale:
            return gamma[index] * z
        return z
    return init_fun, apply_fun


def serial(*layers: Layer) -> Layer:
    """The layers one after another."""
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng: Any, input_shape: Sequence[int]) -> tuple:
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, len(layers)) if rng is not None else (None,) * len(layers)
        for fun, param, layer_rng in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=layer_rng, **kwargs)
        return inputs
    return init_fun, apply_fun


def parallel(*layers: Layer) -> Layer:
    """The layers side by side, the i-th on the i-th input (a list)."""
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng: Any, input_shape: Sequence[Any]) -> tuple:
        rngs = random.split(rng, len(init_funs))
        shapes, params = [], []
        for init, layer_rng, shape in zip(init_funs, rngs, input_shape):
            out_shape, param = init(layer_rng, shape)
            shapes.append(out_shape)
            params.append(param)
        return shapes, params

    def apply_fun(params: Any, inputs: Sequence[Any], **kwargs: Any) -> Any:
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, len(layers)) if rng is not None else (None,) * len(layers)
        outputs = []  # (a loop: the transforms differentiate the library's own code)
        for k in range(len(apply_funs)):
            outputs.append(apply_funs[k](params[k], inputs[k], rng=rngs[k], **kwargs))
        return outputs
    return init_fun, apply_fun


def shape_dependent(make_layer: Callable[[Sequence[int]], Layer]) -> Layer:
    """A layer built from its input's shape, when it is known (`make_layer(shape)`)."""
    def init_fun(rng: Any, input_shape: Sequence[int]) -> tuple:
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)
    return init_fun, apply_fun
