"""Benchmarks of whole training steps of two networks, ours against ``jax.jit``.

Run directly (``python tests/bench/nets.py``) or as part of ``run.py``. The same code runs
on both libraries: each network is built by a function taking the modules (``jnp``,
``lax`` and the top-level ``jax``) as parameters. Rows:

1. A LeNet-style CNN training step (Caffe's LeNet: 5x5 convolutions to 20 and 50
   channels, each with ReLU and a 2x2 max-pool, dense 800-500-10), NHWC images
   28x28x1, batch 128: ``jit`` of ``value_and_grad`` of the softmax cross-entropy and an
   SGD update of every parameter. Also the forward pass alone, and the first convolution
   alone, to say where the time goes.
2. A transformer forward and backward: 4 pre-LayerNorm blocks (multi-head self-attention
   with a softmax, 4 heads; an MLP 256-1024-256 with gelu) on a sequence of 128 tokens of
   width 256: ``jit`` of ``value_and_grad`` of a squared-error loss with respect to every
   parameter.

Values are checked against JAX (rtol 2e-3) before timing; the two systems are timed in
alternating rounds, best of each. For the two training steps a third program is timed in
the same rounds: JAX's own StableHLO for the step, compiled and run by IREE as ours is --
what IREE's code generation makes of the same program on this machine, which tells
whether a gap to ``jax.jit`` is our lowering's or IREE's. It is no floor for
convolutions: IREE 3.13 compiles most of the layouts JAX's cotangent convolutions use to
slow code, and our lowering transposes to the fast ones (primitives/convolution.py).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import runtime
import transpiler as tp
import transpiler.numpy as tnp
from transpiler import compiler
from transpiler import lax as tlax
from run import best_time, ready  # tests/bench/run.py (this script's folder is on the path)

try:  # optional: the `test` extra
    import jax
except ImportError:  # pragma: no cover
    jax = None

BATCH = 128
SEQ, WIDTH, HEADS, LAYERS, HIDDEN = 128, 256, 4, 4, 1024


# --- the networks, written once over the modules they are given ---------------------------

def lenet(jnp: Any, lax: Any, jx: Any) -> dict[str, Callable]:
    """The CNN's forward pass, its first convolution and its SGD training step."""
    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "VALID",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def max_pool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def predict(params, x):
        h = max_pool(jnp.maximum(conv(x, params["conv1"]["w"]) + params["conv1"]["b"], 0.0))
        h = max_pool(jnp.maximum(conv(h, params["conv2"]["w"]) + params["conv2"]["b"], 0.0))
        h = jnp.reshape(h, (h.shape[0], -1))
        h = jnp.maximum(h @ params["fc1"]["w"] + params["fc1"]["b"], 0.0)
        return h @ params["fc2"]["w"] + params["fc2"]["b"]

    def loss(params, x, labels):
        logp = jx.nn.log_softmax(predict(params, x), axis=-1)
        return -jnp.mean(jnp.sum(logp * labels, axis=-1))

    def step(params, x, labels):
        value, grads = jx.value_and_grad(loss)(params, x, labels)
        new = {name: {k: params[name][k] - 0.01 * grads[name][k] for k in params[name]}
               for name in params}
        return value, new

    return {"step": step, "forward": predict, "conv": lambda params, x: conv(x, params["conv1"]["w"])}


def lenet_inputs(seed: int = 0) -> tuple[dict, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)

    def layer(shape: tuple[int, ...], fan_in: int) -> dict:
        return {"w": (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32),
                "b": (0.01 * rng.standard_normal(shape[-1])).astype(np.float32)}
    params = {"conv1": layer((5, 5, 1, 20), 25), "conv2": layer((5, 5, 20, 50), 500),
              "fc1": layer((800, 500), 800), "fc2": layer((500, 10), 500)}
    x = rng.uniform(0, 1, (BATCH, 28, 28, 1)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, BATCH)]
    return params, x, labels


def transformer(jnp: Any, lax: Any, jx: Any) -> dict[str, Callable]:
    """A stack of pre-LayerNorm transformer blocks and its value_and_grad."""
    def layer_norm(x, p):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
        return (x - mean) * lax.rsqrt(var + 1e-5) * p["scale"] + p["bias"]

    def attention(x, p):
        qkv = x @ p["qkv"] + p["qkv_bias"]
        q, k, v = jnp.split(qkv, 3, axis=-1)
        q = jnp.transpose(jnp.reshape(q, (SEQ, HEADS, WIDTH // HEADS)), (1, 0, 2))
        k = jnp.transpose(jnp.reshape(k, (SEQ, HEADS, WIDTH // HEADS)), (1, 0, 2))
        v = jnp.transpose(jnp.reshape(v, (SEQ, HEADS, WIDTH // HEADS)), (1, 0, 2))
        scores = q @ jnp.transpose(k, (0, 2, 1)) / np.sqrt(WIDTH // HEADS).astype(np.float32)
        weights = jx.nn.softmax(scores, axis=-1)
        out = jnp.reshape(jnp.transpose(weights @ v, (1, 0, 2)), (SEQ, WIDTH))
        return out @ p["out"] + p["out_bias"]

    def block(x, p):
        x = x + attention(layer_norm(x, p["ln1"]), p)
        h = jx.nn.gelu(layer_norm(x, p["ln2"]) @ p["mlp1"] + p["mlp1_bias"])
        return x + h @ p["mlp2"] + p["mlp2_bias"]

    def forward(params, x):
        for p in params:
            x = block(x, p)
        return x

    def loss(params, x, target):
        return jnp.mean((forward(params, x) - target) ** 2)

    return {"step": jx.value_and_grad(loss), "forward": forward}


def transformer_inputs(seed: int = 0) -> tuple[list, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)

    def dense(fan_in: int, fan_out: int) -> np.ndarray:
        return (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)

    def bias(n: int) -> np.ndarray:
        return (0.01 * rng.standard_normal(n)).astype(np.float32)

    def norm() -> dict:
        return {"scale": np.ones(WIDTH, np.float32), "bias": bias(WIDTH)}
    params = [{"ln1": norm(), "qkv": dense(WIDTH, 3 * WIDTH), "qkv_bias": bias(3 * WIDTH),
               "out": dense(WIDTH, WIDTH), "out_bias": bias(WIDTH), "ln2": norm(),
               "mlp1": dense(WIDTH, HIDDEN), "mlp1_bias": bias(HIDDEN),
               "mlp2": dense(HIDDEN, WIDTH), "mlp2_bias": bias(WIDTH)} for _ in range(LAYERS)]
    x = rng.standard_normal((SEQ, WIDTH)).astype(np.float32)
    target = rng.standard_normal((SEQ, WIDTH)).astype(np.float32)
    return params, x, target


# --- timing --------------------------------------------------------------------------------

def _leaves(tree: Any) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in tp.tree_util.tree_leaves(tree)]


def compare(name: str, ours_fn: Callable, jax_fn: Callable, args: tuple, rounds: int = 3,
            floor: bool = False) -> tuple[float, float]:
    """Check ours against JAX on `args`, then time both (alternating rounds, best of each)
    and print a row, with JAX's StableHLO run by IREE (`floor`) as a second line; returns
    (ours, jax) seconds per call."""
    to_device = tp.jit(lambda a: a)
    ours_args = tp.tree_util.tree_map(to_device, args)
    ours = tp.jit(ours_fn)
    got = ours(*ours_args)
    jf = jax.jit(jax_fn)
    jax_args = jax.tree_util.tree_map(jax.device_put, args)
    want = jf(*jax_args)
    for a, b in zip(_leaves(got), jax.tree_util.tree_leaves(want)):
        scale = float(np.max(np.abs(np.asarray(b)))) or 1.0
        np.testing.assert_allclose(a, np.asarray(b), rtol=2e-3, atol=2e-4 * scale)

    def first_leaf(out: Any) -> Any:
        return out[0] if isinstance(out, tuple) else out
    if floor:
        device = runtime.Device("local-task")
        jax_in_iree = runtime.load(compiler.compile_vmfb(
            jf.lower(*jax_args).as_text().encode()), device).main
        iree_args = [device.put(np.asarray(a)) for a in jax.tree_util.tree_leaves(args)]
    times: dict[str, list[float]] = {"ours": [], "jax": [], "floor": []}
    for _ in range(rounds):
        times["ours"].append(best_time(lambda: ready(first_leaf(ours(*ours_args)))))
        times["jax"].append(best_time(lambda: first_leaf(jf(*jax_args)).block_until_ready()))
        if floor:
            times["floor"].append(best_time(lambda: ready(jax_in_iree(*iree_args)[0])))
    t_ours, t_jax = min(times["ours"]), min(times["jax"])
    print(f"{name:<34}  transpiler {t_ours * 1e3:9.3f} ms  jax {t_jax * 1e3:9.3f} ms  "
          f"(ours/jax {t_ours / t_jax:5.2f}x)  values agree with JAX", flush=True)
    if floor:
        t_floor = min(times["floor"])
        print(f"{'  jax StableHLO run by IREE':<34}  {t_floor * 1e3:9.3f} ms  (its/jax "
              f"{t_floor / t_jax:5.2f}x, ours/it {t_ours / t_floor:5.2f}x)",
              flush=True)
    return t_ours, t_jax


def main() -> None:
    """The CNN and transformer rows (skipped without JAX, the reference)."""
    if jax is None:  # pragma: no cover
        print(f"{'LeNet / transformer steps':<34}  (jax absent)", flush=True)
        return
    ours_cnn, jax_cnn = lenet(tnp, tlax, tp), lenet(jax.numpy, jax.lax, jax)
    params, x, labels = lenet_inputs()
    compare("LeNet step (grad + SGD), b=128", ours_cnn["step"], jax_cnn["step"],
            (params, x, labels), floor=True)
    compare("  LeNet forward alone", ours_cnn["forward"], jax_cnn["forward"], (params, x))
    compare("  first conv alone (5x5, 1->20)", ours_cnn["conv"], jax_cnn["conv"], (params, x))
    ours_tf = transformer(tnp, tlax, tp)
    jax_tf = transformer(jax.numpy, jax.lax, jax)
    params_tf, x_tf, target = transformer_inputs()
    compare("transformer 4 layers, value_and_grad", ours_tf["step"], jax_tf["step"],
            (params_tf, x_tf, target), floor=True)
    compare("  transformer forward alone", ours_tf["forward"], jax_tf["forward"],
            (params_tf, x_tf))


if __name__ == "__main__":
    main()
