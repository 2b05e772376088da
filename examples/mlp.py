"""A small MLP to build ahead of time: ``transpiler build examples/mlp.py -o build/``.

String annotations give each function's argument signatures (dtype[dims]); the build
writes one .mlir and one .vmfb per function and target, and a manifest.json that
``transpiler run build/ predict --input x.npy ...`` reads with the runtime alone."""

import transpiler as jax
import transpiler.numpy as jnp


def predict(w1: "f32[784,128]", b1: "f32[128]", w2: "f32[128,10]", b2: "f32[10]",
            x: "f32[128,784]"):
    h = jnp.tanh(x @ w1 + b1)
    return jax.nn.log_softmax(h @ w2 + b2, axis=-1)


def loss(w1, b1, w2, b2, x, labels):
    return -jnp.mean(jnp.sum(predict(w1, b1, w2, b2, x) * labels, axis=-1))


def train_step(w1: "f32[784,128]", b1: "f32[128]", w2: "f32[128,10]", b2: "f32[10]",
               x: "f32[128,784]", labels: "f32[128,10]"):
    grads = jax.grad(loss, argnums=(0, 1, 2, 3))(w1, b1, w2, b2, x, labels)
    return tuple(p - 0.1 * g for p, g in zip((w1, b1, w2, b2), grads))
