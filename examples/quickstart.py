"""Quickstart: jit a NumPy-style function, look at its StableHLO, compare with NumPy;
then differentiate it with grad and read the derivative code it generates.

Run with `make demo` (creates .venv and installs on first use).
"""

import time

import numpy as np

import transpiler as jax
import transpiler.numpy as jnp


def predict(w, b, x):
    """A small MLP layer followed by a softmax-like normalisation, written with jnp."""
    h = jnp.tanh(x @ w + b)
    scores = jnp.exp(h - jnp.max(h, axis=-1, keepdims=True))
    return scores / jnp.sum(scores, axis=-1, keepdims=True)


def loss(w, b, x, labels):
    """Cross-entropy of predict's probabilities against one-hot labels."""
    probs = predict(w, b, x)
    return -jnp.mean(jnp.sum(labels * jnp.log(probs), axis=-1))


def predict_numpy(w, b, x):
    h = np.tanh(x @ w + b)
    scores = np.exp(h - h.max(axis=-1, keepdims=True))
    return scores / scores.sum(axis=-1, keepdims=True)


def main() -> None:
    rng = np.random.default_rng(0)
    w = rng.normal(size=(16, 4)).astype(np.float32)
    b = rng.normal(size=(4,)).astype(np.float32)
    x = rng.normal(size=(8, 16)).astype(np.float32)

    fast_predict = jax.jit(predict)
    print("StableHLO of predict:\n")
    print(fast_predict.lower(w, b, x).as_text())

    start = time.perf_counter()
    out = fast_predict(w, b, x)          # traces, compiles with IREE (or hits the disk cache)
    first = time.perf_counter() - start
    start = time.perf_counter()
    out = fast_predict(w, b, x)          # runs the compiled module
    second = time.perf_counter() - start

    eager = predict(w, b, x)             # the same code, eagerly on NumPy
    expected = predict_numpy(w, b, x)
    print(f"first call {first * 1e3:.1f} ms (trace + compile or cache), "
          f"second call {second * 1e6:.0f} us")
    print(f"result: {out.dtype}{list(out.shape)} on {out.device}")
    print("max |jit - numpy|   =", float(np.max(np.abs(np.asarray(out) - expected))))
    print("max |eager - numpy| =", float(np.max(np.abs(np.asarray(eager) - expected))))
    assert np.allclose(out, expected, rtol=1e-5, atol=1e-6)
    assert np.allclose(eager, expected, rtol=1e-5, atol=1e-6)
    print("OK: jit, eager and NumPy agree")

    # grad rewrites the function's own source into an explicit derivative function.
    labels = np.eye(4, dtype=np.float32)[rng.integers(0, 4, size=8)]
    grad_loss = jax.grad(loss)
    print("\nThe generated derivative code (grad(loss).source):\n")
    print(grad_loss.source)
    g_eager = grad_loss(w, b, x, labels)                 # runs the generated code on NumPy
    g_jit = jax.jit(grad_loss)(w, b, x, labels)          # the same code, compiled by IREE
    step = 1e-3
    w_plus, w_minus = w.copy(), w.copy()
    w_plus[0, 0] += step
    w_minus[0, 0] -= step
    fd = (float(loss(w_plus, b, x, labels)) - float(loss(w_minus, b, x, labels))) / (2 * step)
    print(f"d loss / d w[0,0]: grad {float(g_eager[0, 0]):.5f}, jit(grad) "
          f"{float(g_jit[0, 0]):.5f}, finite difference {fd:.5f}")
    assert np.allclose(g_eager, g_jit, rtol=1e-4, atol=1e-6)
    assert abs(float(g_eager[0, 0]) - fd) < 1e-2
    print("OK: grad, jit(grad) and finite differences agree")

    # vmap rewrites a per-example function into a batched one: per-example gradients.
    def example_loss(w, b, xi, label):
        return loss(w, b, xi[None, :], label[None, :])

    per_example = jax.vmap(jax.grad(example_loss), in_axes=(None, None, 0, 0))
    print("\nThe batched code (vmap(example_loss).source):\n")
    print(jax.vmap(example_loss, in_axes=(None, None, 0, 0)).source)
    grads = jax.jit(per_example)(w, b, x, labels)        # [8, *w.shape]: one per example
    loop = np.stack([np.asarray(jax.grad(example_loss)(w, b, x[i], labels[i]))
                     for i in range(len(x))])
    assert np.allclose(grads, loop, rtol=1e-4, atol=1e-6)
    assert np.allclose(np.asarray(grads).mean(0), g_eager, rtol=1e-4, atol=1e-6)
    print(f"OK: jit(vmap(grad)) gives {np.asarray(grads).shape[0]} per-example gradients; "
          "they match a Python loop, and their mean is the batch gradient")


if __name__ == "__main__":
    main()
