"""Data-parallel training of an MLP over the CPU devices with ``pmap``.

Each device gets one shard of every batch and a copy of the parameters; it computes the
gradients of its shard's loss, ``lax.pmean`` averages them across the devices, and every
device applies the same update, so the parameters stay identical on all of them. The run
is checked against the same training on one device (the whole batch, no pmap).

    python examples/data_parallel.py          # TRANSPILER_CPU_DEVICES=<n> for n devices
    transpiler build examples/data_parallel.py -o build/ --target llvm-cpu,stablehlo
"""

import numpy as np

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import lax

LEARNING_RATE = 0.1


def predict(params, x):
    w1, b1, w2, b2 = params
    h = jnp.tanh(x @ w1 + b1)
    return jax.nn.log_softmax(h @ w2 + b2, axis=-1)


def loss(params, x, labels):
    return -jnp.mean(jnp.sum(predict(params, x) * labels, axis=-1))


def update(params, grads):
    return tuple(p - LEARNING_RATE * g for p, g in zip(params, grads))


def shard_step(params, x, labels):
    """One device's step: its shard's gradients, averaged with the other devices'."""
    grads = jax.grad(loss)(params, x, labels)
    grads = lax.pmean(grads, axis_name="devices")
    return update(params, grads), lax.pmean(loss(params, x, labels), axis_name="devices")


parallel_step = jax.pmap(shard_step, axis_name="devices", in_axes=(None, 0, 0),
                         out_axes=(None, None))


def _sgd_shard_step(w1: "f32[784,128]", b1: "f32[128]", w2: "f32[128,10]", b2: "f32[10]",
                    x: "f32[2,64,784]", labels: "f32[2,64,10]"):
    """`shard_step` with flat arguments, for `transpiler build examples/data_parallel.py`
    (the annotations are the whole arrays: x and labels hold one shard per device)."""
    return shard_step((w1, b1, w2, b2), x, labels)


# Built ahead of time: the multi-device module for llvm-cpu, per-replica StableHLO with
# native collectives for stablehlo (XLA/PJRT) and cuda/rocm.
sgd_step = jax.pmap(_sgd_shard_step, axis_name="devices", in_axes=(None,) * 4 + (0, 0),
                    out_axes=None)


@jax.jit
def single_step(params, x, labels):
    return update(params, jax.grad(loss)(params, x, labels)), loss(params, x, labels)


def init(key_seed=0, sizes=(784, 128, 10)):
    rng = np.random.default_rng(key_seed)
    w1 = rng.normal(0, 1 / np.sqrt(sizes[0]), sizes[:2]).astype(np.float32)
    w2 = rng.normal(0, 1 / np.sqrt(sizes[1]), sizes[1:]).astype(np.float32)
    return (w1, np.zeros(sizes[1], np.float32), w2, np.zeros(sizes[2], np.float32))


def data(steps, batch, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(steps, batch, 784)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, size=(steps, batch))]
    return x, labels


def shard(a, devices):
    """(batch, ...) -> (devices, batch / devices, ...)."""
    return a.reshape(devices, a.shape[0] // devices, *a.shape[1:])


def main(steps=20, batch=128):
    n = jax.local_device_count()
    xs, ys = data(steps, batch)
    parallel, single = init(), init()
    for step in range(steps):
        parallel, parallel_loss = parallel_step(parallel, shard(xs[step], n), shard(ys[step], n))
        single, single_loss = single_step(single, xs[step], ys[step])
        if step % 5 == 0 or step == steps - 1:
            print(f"step {step:2d}  loss over {n} devices {float(parallel_loss):.5f}  "
                  f"on one device {float(single_loss):.5f}")
    worst = max(float(np.max(np.abs(np.asarray(p) - np.asarray(s))))
                for p, s in zip(parallel, single))
    print(f"largest parameter difference after {steps} steps: {worst:.2e}")
    return worst


if __name__ == "__main__":
    assert main() < 1e-4
