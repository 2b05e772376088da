"""Quickstart: jit a NumPy-style function, look at its StableHLO, compare with NumPy.

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


if __name__ == "__main__":
    main()
