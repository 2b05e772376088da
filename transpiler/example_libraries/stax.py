"""``jax.example_libraries.stax``: neural-network layers as pairs of functions.

A layer is ``(init_fun, apply_fun)``: ``init_fun(rng, input_shape) -> (output_shape,
params)`` and ``apply_fun(params, inputs, **kwargs) -> outputs`` (``rng=`` for the layers
that draw, ``mode=`` for Dropout). Combinators build networks from layers::

    init_random_params, predict = stax.serial(stax.Dense(1024), stax.Relu,
                                              stax.Dense(10), stax.LogSoftmax)

Plain `transpiler.numpy` code, so networks run eagerly, under `jit`, `grad` and `vmap`.
The convolution layers (``GeneralConv``, ``Conv``, ``ConvTranspose`` ...) are
``lax.conv_general_dilated`` and ``lax.conv_transpose``; the pooling layers (``MaxPool``,
``SumPool``, ``AvgPool``) are ``lax.reduce_window``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from transpiler import lax, nn
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
log_softmax = nn.log_softmax
standardize = nn.standardize
glorot, randn = glorot_normal, normal  # (JAX's older names)


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


def _conv_layer(dimension_numbers: tuple[str, str, str], out_chan: int,
                filter_shape: Sequence[int], W_init: Any, b_init: Callable,
                shape_of: Callable, apply: Callable) -> Layer:
    """A convolution layer: a kernel laid out as `dimension_numbers` says (its input
    channels read from the input shape) and a bias broadcast along the output's channels;
    `shape_of` gives the output shape, `apply` the convolution."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng: Any, input_shape: Sequence[int]) -> tuple:
        spatial = iter(filter_shape)
        kernel_shape = [out_chan if c == "O" else input_shape[lhs_spec.index("C")]
                        if c == "I" else next(spatial) for c in rhs_spec]
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        return shape_of(input_shape, kernel_shape), (W_init(k1, kernel_shape),
                                                     b_init(k2, bias_shape))

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        W, b = params
        return apply(inputs, W) + b

    return init_fun, apply_fun


def GeneralConv(dimension_numbers: tuple[str, str, str], out_chan: int,
                filter_shape: Sequence[int], strides: Any = None, padding: Any = "VALID",
                W_init: Any = None, b_init: Callable = normal(1e-6)) -> Layer:
    """A convolution (``lax.conv_general_dilated``) with a bias; `dimension_numbers` are
    the (input, kernel, output) layouts, such as ``("NHWC", "HWIO", "NHWC")``."""
    one = (1,) * len(filter_shape)
    strides = strides or one
    return _conv_layer(
        dimension_numbers, out_chan, filter_shape, W_init, b_init,
        lambda shape, kernel: lax.conv_general_shape_tuple(shape, kernel, strides, padding,
                                                           dimension_numbers),
        lambda x, W: lax.conv_general_dilated(x, W, strides, padding, one, one,
                                              dimension_numbers=dimension_numbers))


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(dimension_numbers: tuple[str, str, str], out_chan: int,
                         filter_shape: Sequence[int], strides: Any = None,
                         padding: Any = "VALID", W_init: Any = None,
                         b_init: Callable = normal(1e-6)) -> Layer:
    """A transposed convolution (``lax.conv_transpose``) with a bias."""
    strides = strides or (1,) * len(filter_shape)
    return _conv_layer(
        dimension_numbers, out_chan, filter_shape, W_init, b_init,
        lambda shape, kernel: lax.conv_transpose_shape_tuple(shape, kernel, strides, padding,
                                                             dimension_numbers),
        lambda x, W: lax.conv_transpose(x, W, strides, padding,
                                        dimension_numbers=dimension_numbers))


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


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


# --- pooling (JAX's `_pooling_layer`): lax.reduce_window over the spatial axes -------------

def _pooling_layer(reducer: Callable, init_val: float,
                   rescaler: Callable | None = None) -> Callable[..., Layer]:
    def PoolingLayer(window_shape: tuple, strides: tuple | None = None,
                     padding: Any = "VALID", spec: str | None = None) -> Layer:
        """A pooling layer: `window_shape` and `strides` over the spatial axes, the batch
        and feature axes (`spec`'s N and C; first and last by default) untouched."""
        strides = strides or (1,) * len(window_shape)
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        if spec is None:
            non_spatial_axes: tuple[int, int] = (0, len(window_shape) + 1)
        else:
            non_spatial_axes = (spec.index("N"), spec.index("C"))
        for i in sorted(non_spatial_axes):
            window_shape = window_shape[:i] + (1,) + window_shape[i:]
            strides = strides[:i] + (1,) + strides[i:]

        def init_fun(rng: Any, input_shape: Sequence[int]) -> tuple:
            padding_vals = lax.padtype_to_pads(input_shape, window_shape, strides, padding) \
                if isinstance(padding, str) else padding
            ones = (1,) * len(window_shape)
            out_shape = lax.reduce_window_shape_tuple(input_shape, window_shape, strides,
                                                      padding_vals, ones, ones)
            return out_shape, ()

        def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
            out = lax.reduce_window(inputs, init_val, reducer, window_shape, strides, padding)
            return rescale(out, inputs, spec) if rescale else out
        return init_fun, apply_fun
    return PoolingLayer


def _normalize_by_window_size(dims: tuple, strides: tuple, padding: Any) -> Callable:
    def rescale(outputs: Any, inputs: Any, spec: str | None) -> Any:
        if spec is None:
            non_spatial_axes: tuple[int, int] = (0, inputs.ndim - 1)
        else:
            non_spatial_axes = (spec.index("N"), spec.index("C"))
        spatial_shape = tuple(inputs.shape[i] for i in range(inputs.ndim)
                              if i not in non_spatial_axes)
        one = jnp.ones(spatial_shape, dtype=inputs.dtype)
        window_sizes = lax.reduce_window(one, 0., lax.add, dims, strides, padding)
        for i in sorted(non_spatial_axes):
            window_sizes = jnp.expand_dims(window_sizes, i)
        return outputs / window_sizes
    return rescale


MaxPool = _pooling_layer(lax.max, -float("inf"))
SumPool = _pooling_layer(lax.add, 0.)
AvgPool = _pooling_layer(lax.add, 0., _normalize_by_window_size)
