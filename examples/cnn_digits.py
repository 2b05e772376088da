"""A LeNet-style convolutional network on scikit-learn's 8x8 handwritten digits.

The 1797 images ship with scikit-learn (``load_digits``: nothing is downloaded). The
network is JAX's stax, imports changed: two 3x3 convolutions with ReLU, each followed by
a 2x2 max-pool (``lax.conv_general_dilated`` and ``lax.reduce_window`` underneath), then
two dense layers and a log-softmax::

    (N, 8, 8, 1) -> conv 16 -> pool -> (N, 4, 4, 16) -> conv 32 -> pool -> (N, 2, 2, 32)
                 -> flatten 128 -> dense 64 -> dense 10

One training step, ``value_and_grad`` of the cross-entropy and an Adam update, is a
single ``jit``-compiled IREE module. The script prints each epoch's mean training loss
and the test accuracy, then saves both curves to cnn_digits.png next to this file (or
to the path given as the first argument).

Run: ``python examples/cnn_digits.py [plot.png] [--epochs N]`` (needs the ``examples``
extra: scikit-learn and matplotlib).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import transpiler as jax
import transpiler.numpy as jnp
from transpiler import random
from transpiler.example_libraries import optimizers, stax

BATCH = 64
SEED = 0

init_params, predict = stax.serial(
    stax.Conv(16, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), strides=(2, 2)),
    stax.Conv(32, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), strides=(2, 2)),
    stax.Flatten, stax.Dense(64), stax.Relu, stax.Dense(10), stax.LogSoftmax)

opt_init, opt_update, get_params = optimizers.adam(3e-3)


def loss(params, images, labels):
    """Mean cross-entropy of the predicted log-probabilities against one-hot labels."""
    return -jnp.mean(jnp.sum(predict(params, images) * labels, axis=-1))


@jax.jit
def update(i, opt_state, images, labels):
    """One Adam step on a batch: returns the batch loss and the new optimizer state."""
    value, grads = jax.value_and_grad(loss)(get_params(opt_state), images, labels)
    return value, opt_update(i, grads, opt_state)


@jax.jit
def accuracy(params, images, labels):
    """The fraction of `images` whose most likely class is `labels` (integers)."""
    return jnp.mean(jnp.argmax(predict(params, images), axis=-1) == labels)


def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Train and test images as NHWC float32 in [0, 1], with integer labels (a 75/25
    split, stratified, with a fixed seed)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[..., None]  # (1797, 8, 8, 1)
    return train_test_split(images, digits.target.astype(np.int32), test_size=0.25,
                            random_state=SEED, stratify=digits.target)


def plot(losses: list[float], accuracies: list[float], path: Path) -> None:
    """The training loss and test accuracy per epoch, side by side."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    epochs = np.arange(1, len(losses) + 1)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    left.plot(epochs, losses, "o-")
    left.set(xlabel="epoch", ylabel="mean training loss", yscale="log",
             title="cross-entropy")
    right.plot(epochs, 100 * np.asarray(accuracies), "o-", color="C1")
    right.set(xlabel="epoch", ylabel="test accuracy (%)", title="held-out digits")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(epochs: int = 20, plot_path: Path | None = None) -> float:
    """Train for `epochs`, print the curves and save their plot; returns the final test
    accuracy."""
    x_train, x_test, y_train, y_test = load_data()
    print(f"digits: {len(x_train)} training and {len(x_test)} test images, "
          f"{x_train.shape[1]}x{x_train.shape[2]} pixels")
    _, params = init_params(random.PRNGKey(SEED), (-1, *x_train.shape[1:]))
    sizes = [int(np.prod(np.shape(leaf))) for leaf in jax.tree_util.tree_leaves(params)]
    print(f"network: {sum(sizes)} parameters in {len(sizes)} arrays")
    opt_state = opt_init(params)
    one_hot_train = np.eye(10, dtype=np.float32)[y_train]
    rng = np.random.default_rng(SEED)
    batches = len(x_train) // BATCH  # the remainder is dropped: one shape, one compile
    losses, accuracies, step = [], [], 0
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(x_train))
        total = 0.0
        for b in range(batches):
            idx = order[b * BATCH:(b + 1) * BATCH]
            value, opt_state = update(step, opt_state, x_train[idx], one_hot_train[idx])
            total += float(value)
            step += 1
        losses.append(total / batches)
        accuracies.append(float(accuracy(get_params(opt_state), x_test, y_test)))
        print(f"  epoch {epoch:2d}  loss {losses[-1]:.4f}  test accuracy "
              f"{100 * accuracies[-1]:5.1f}%")
    seconds = time.perf_counter() - start
    print(f"trained {step} steps of batch {BATCH} in {seconds:.1f} s (compiling included); "
          f"test accuracy {100 * accuracies[-1]:.1f}% on {len(x_test)} held-out digits")
    path = plot_path or Path(__file__).resolve().with_suffix(".png")
    plot(losses, accuracies, path)
    print(f"saved {path}")
    return accuracies[-1]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plot", nargs="?", type=Path, help="where to save the curves")
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()
    main(args.epochs, args.plot)
