"""Programs in ordinary JAX style, each with example arguments and the arguments to
differentiate. Every transformation test runs the whole corpus."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import transpiler.numpy as jnp
from transpiler import nn

rng = np.random.default_rng(0)


def normal(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


@dataclass
class Program:
    name: str
    fn: Callable[..., Any]
    args: tuple
    argnums: Any = 0
    has_aux: bool = False
    pending: str = ""   # a capability the transforms lack yet: the test expects its error


def sum_of_squares(x):
    return jnp.sum(x ** 2)


def sin_cos(x):
    return jnp.sum(jnp.sin(x) * jnp.cos(x))


def mlp_loss(params, x, y):
    h = jnp.tanh(x @ params["w"] + params["b"])
    return jnp.mean((h - y) ** 2)


def cross_entropy(w, x, labels):
    logits = x @ w
    logp = nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.sum(logp * nn.one_hot(labels, 3), axis=-1))


def layer(w, x):
    return jnp.tanh(x @ w)


def two_layers(w1, w2, x):
    h = layer(w1, x)
    return jnp.sum(layer(w2, h))


SCALE = 3.0


def uses_global(x):
    return jnp.sum(SCALE * jnp.exp(-x * x))


def make_closure(scale):
    def closure(x):
        return jnp.sum(jnp.sin(x) * scale)
    return closure


exp_half = lambda x: jnp.sum(jnp.exp(x) / 2)  # noqa: E731


def static_branch(x, n):
    if n > 2:
        y = jnp.sin(x) * n
    else:
        y = jnp.cos(x)
    return jnp.sum(y)


def slicing(x):
    return jnp.sum(x[1:, ::2] ** 2) + x[0, 0] * 3.0


def gather(x):
    return jnp.sum(x[np.array([0, 2, 2])] ** 2)


def at_update(x):
    y = x.at[1].set(0.0)
    z = y.at[2].add(x[0])
    return jnp.sum(z * x)


def normalize_rows(x):
    return jnp.sum((x / jnp.sum(x, axis=1, keepdims=True)) ** 2)


def einsum_pair(a, b):
    return jnp.sum(jnp.einsum("ij,jk->ik", a, b) ** 2)


def variance(x):
    return jnp.var(x) + jnp.mean(x)


def maximum_value(x):
    return jnp.max(x, axis=0).sum()


def log_sum_exp(x):
    return nn.logsumexp(x, axis=1).sum()


def leaky(x):
    return jnp.sum(jnp.where(x > 0, x, 0.1 * x))


def relu_sum(x):
    return jnp.sum(jnp.maximum(x, 0.0) ** 2)


def joining(x, y):
    return jnp.sum(jnp.concatenate([x, y * 2], axis=0) ** 2) + jnp.sum(jnp.stack([x, y]))


def reshape_transpose(x, w):
    return jnp.sum(x.reshape(2, -1).T @ w)


def pairwise(x, y):
    return jnp.sum((x[:, None] - y[None, :]) ** 2)


def rational(x):
    return jnp.sum(1.0 / (1.0 + x ** 2))


def softplus_sum(x):
    return jnp.sum(jnp.log(1 + jnp.exp(x)))


def norm(x):
    return jnp.linalg.norm(x)


def with_aux(x):
    loss = jnp.sum(x ** 2)
    return loss, {"mean": jnp.mean(x)}


def reassigned(x):
    x = x * 2
    x = jnp.sin(x)
    return x.sum()


def sigmoid_mix(x):
    return jnp.sum(nn.sigmoid(x) * nn.softplus(x))


def cumulative(x):
    return jnp.sum(jnp.cumsum(x) ** 2)


def batched_matmul(a, b):
    return jnp.sum(jnp.matmul(a, b) ** 2)


def clipped(x):
    return jnp.sum(jnp.clip(x, -0.5, 0.5) ** 2)


def absolute(x):
    return jnp.sum(jnp.abs(x))


def list_params(params, x):
    w1, b1 = params[0]
    w2, b2 = params[1]
    h = jnp.tanh(x @ w1 + b1)
    return jnp.sum((h @ w2 + b2) ** 2)


def rnn(w, x):
    h = x
    for _ in range(4):
        h = jnp.tanh(h @ w) + 0.1 * h
    return jnp.sum(h)


def loop_over_rows(x):
    total = 0.0
    for row in x:
        total = total + jnp.sum(jnp.sin(row) * row)
    return total


def newton_sqrt(a):
    x = a
    steps = 0
    while steps < 5:
        x = 0.5 * (x + a / x)
        steps = steps + 1
    return jnp.sum(x)


def nested_loops(w, x):
    out = 0.0
    for i in range(2):
        h = x * (i + 1)
        for j in range(2):
            h = jnp.tanh(h * w)
        out = out + jnp.sum(h)
    return out


def early_return(x, flag):
    if flag:
        return jnp.sum(x * 2.0)
    return jnp.sum(x ** 3)


PROGRAMS = [
    Program("sum_of_squares", sum_of_squares, (normal(5),)),
    Program("sin_cos", sin_cos, (normal(3, 4),)),
    Program("mlp_loss", mlp_loss, ({"w": normal(4, 3), "b": normal(3)}, normal(5, 4), normal(5, 3))),
    Program("cross_entropy", cross_entropy, (normal(4, 3), normal(6, 4), np.array([0, 1, 2, 1, 0, 2]))),
    Program("two_layers", two_layers, (normal(4, 5), normal(5, 2), normal(3, 4)), (0, 1)),
    Program("uses_global", uses_global, (normal(6),)),
    Program("closure", make_closure(0.5), (normal(6),)),
    Program("lambda", exp_half, (normal(4),)),
    Program("static_branch", static_branch, (normal(4), 3)),
    Program("slicing", slicing, (normal(4, 5),)),
    Program("gather", gather, (normal(4, 3),)),
    Program("at_update", at_update, (normal(5),)),
    Program("normalize_rows", normalize_rows, (np.abs(normal(3, 4)) + 1.0,)),
    Program("einsum_pair", einsum_pair, (normal(3, 4), normal(4, 2)), (0, 1)),
    Program("variance", variance, (normal(7),)),
    Program("maximum_value", maximum_value, (normal(4, 3),)),
    Program("log_sum_exp", log_sum_exp, (normal(3, 5),)),
    Program("leaky", leaky, (normal(8),)),
    Program("relu_sum", relu_sum, (normal(8),)),
    Program("joining", joining, (normal(3), normal(3)), (0, 1)),
    Program("reshape_transpose", reshape_transpose, (normal(2, 6), normal(2, 3)), (0, 1)),
    Program("pairwise", pairwise, (normal(4), normal(3)), (0, 1)),
    Program("rational", rational, (normal(6),)),
    Program("softplus_sum", softplus_sum, (normal(6),)),
    Program("norm", norm, (normal(5),)),
    Program("with_aux", with_aux, (normal(5),), 0, True),
    Program("reassigned", reassigned, (normal(5),)),
    Program("sigmoid_mix", sigmoid_mix, (normal(6),)),
    Program("cumulative", cumulative, (normal(6),)),
    Program("batched_matmul", batched_matmul, (normal(2, 3, 4), normal(4, 5)), (0, 1)),
    Program("clipped", clipped, (normal(8),)),
    Program("absolute", absolute, (normal(8) + 0.05,)),
    Program("list_params", list_params,
            ([(normal(3, 4), normal(4)), (normal(4, 2), normal(2))], normal(5, 3))),
    Program("early_return", early_return, (normal(4), True)),
    Program("rnn", rnn, (normal(3, 3) * 0.5, normal(3))),
    Program("loop_over_rows", loop_over_rows, (normal(3, 4),)),
    Program("newton_sqrt", newton_sqrt, (np.abs(normal(4)) + 0.5,)),
    Program("nested_loops", nested_loops, (normal(3), normal(3)), (0, 1)),
]
