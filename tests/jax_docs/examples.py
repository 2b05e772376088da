"""Which of JAX's example programs run on transpiler with only the imports changed.

    TRANSPILER_CACHE_DIR=/work/main/.cache/docs \
        .venv/bin/python tests/jax_docs/examples.py [--only NAME] [--timeout 300] [--no-jax]

Not a test (pytest does not collect it, `make test` does not run it): a measurement.
Each program of jax_examples/ (copied from JAX by extract.py; Copyright The JAX Authors,
Apache License 2.0) runs twice in a child process: with real JAX (to check the harness) and
with its imports rewritten by measure.rewrite_imports (the one jax -> transpiler mapping).
The run reports where each stops: the line of the example and the error, or "completed".

What the harness changes, the same for both runs (nothing else is edited):
  * MNIST cannot be downloaded: ``examples.datasets`` / ``datasets`` are replaced by a module
    whose ``mnist()`` / ``mnist_raw()`` return small synthetic arrays of MNIST's shapes
    (a few batches), so an epoch is a few steps;
  * the loop lengths are cut to a couple of steps (STEPS: textual replacements of a literal
    that keep the line numbers);
  * matplotlib is a do-nothing stub; absl-py, dp-accounting and onnx (not dependencies of
    the project) come from $TRANSPILER_CACHE_DIR/extra when installed there
    (``pip install --target <that dir> absl-py dp-accounting onnx``);
  * onnx2xla downloads a model: ``urllib.request.urlopen`` returns a synthetic ONNX model
    with the MNIST model's structure (Conv/Add/Relu/MaxPool/Reshape/MatMul, old-style
    broadcast Add) and the checksum test compares with that model's own digest.
"""

import argparse
import json
import os
import runpy
import subprocess
import sys
import tempfile
import time
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "jax_examples")
CACHE_ROOT = os.environ.get("TRANSPILER_CACHE_DIR", os.path.join(HERE, "..", "..", ".cache", "docs"))
EXTRA = os.path.join(CACHE_ROOT, "extra")

# name -> (argv, [(old, new)] line-preserving replacements that cut the run short)
PROGRAMS = {
    "mnist_classifier_fromscratch.py": ([], [("num_epochs = 10", "num_epochs = 2")]),
    "mnist_classifier.py": ([], [("num_epochs = 10", "num_epochs = 2")]),
    "mnist_vae.py": ([], [("num_epochs = 100", "num_epochs = 2")]),
    "differentially_private_sgd.py": (["--epochs=2", "--batch_size=64"], []),
    "advi.py": ([], [("for t in range(100):", "for t in range(3):")]),
    "kernel_lsq.py": ([], [("num_steps=10000", "num_steps=3")]),
    "gaussian_process_regression.py": ([], [("for i in range(1000):", "for i in range(3):")]),
    "onnx2xla.py": ([], [("!= 'bc8ad9bd19c5a058055dc18d0f089dad'", "!= _SYNTHETIC_MD5")]),
    "spmd_mnist_classifier_fromscratch.py": ([], [("num_epochs = 10", "num_epochs = 2")]),
}
N_TRAIN, N_TEST = 256, 128


def synthetic_datasets():
    import numpy as np
    mod = types.ModuleType("datasets")
    rng = np.random.RandomState(0)

    def mnist_raw():
        return (rng.randint(0, 256, (N_TRAIN, 28, 28)).astype(np.uint8),
                rng.randint(0, 10, N_TRAIN).astype(np.uint8),
                rng.randint(0, 256, (N_TEST, 28, 28)).astype(np.uint8),
                rng.randint(0, 10, N_TEST).astype(np.uint8))

    def mnist(permute_train=False):
        tri, trl, tei, tel = mnist_raw()
        one_hot = lambda y: np.array(y[:, None] == np.arange(10), np.float32)
        tri = tri.reshape(N_TRAIN, -1).astype(np.float32) / 255.
        tei = tei.reshape(N_TEST, -1).astype(np.float32) / 255.
        trl, tel = one_hot(trl), one_hot(tel)
        if permute_train:
            perm = np.random.RandomState(0).permutation(N_TRAIN)
            tri, trl = tri[perm], trl[perm]
        return tri, trl, tei, tel

    mod.mnist_raw, mod.mnist = mnist_raw, mnist
    return mod


def synthetic_onnx_model():
    """Bytes of an ONNX model shaped like JAX's onnx2xla MNIST example model."""
    import numpy as np
    from onnx import helper, numpy_helper, TensorProto
    rng = np.random.RandomState(0)
    t = lambda name, shape: numpy_helper.from_array((rng.randn(*shape) * 0.1).astype(np.float32), name)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[5, 5], strides=[1, 1],
                         auto_pad="SAME_UPPER"),
        helper.make_node("Add", ["c1", "b1"], ["a1"], broadcast=1, axis=1),
        helper.make_node("Relu", ["a1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], kernel_shape=[5, 5], strides=[1, 1],
                         auto_pad="SAME_UPPER"),
        helper.make_node("Add", ["c2", "b2"], ["a2"], broadcast=1, axis=1),
        helper.make_node("Relu", ["a2"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[3, 3], strides=[3, 3]),
        helper.make_node("Reshape", ["p2"], ["f"], shape=[1, 256]),
        helper.make_node("MatMul", ["f", "w3"], ["m"]),
        helper.make_node("Add", ["m", "b3"], ["y"], broadcast=1, axis=1),
    ]
    graph = helper.make_graph(
        nodes, "mnist",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 28, 28])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [t("w1", (8, 1, 5, 5)), t("b1", (8,)), t("w2", (16, 8, 5, 5)), t("b2", (16,)),
         t("w3", (256, 10)), t("b3", (10,))])
    return helper.make_model(graph).SerializeToString()


def child(backend, name, out_path):
    sys.path.append(EXTRA)
    sys.path.insert(0, HERE)
    from measure import install_matplotlib_stub, rewrite_imports
    install_matplotlib_stub()
    ds = synthetic_datasets()
    pkg = types.ModuleType("examples")
    pkg.__path__ = []
    pkg.datasets = ds
    sys.modules.update({"examples": pkg, "examples.datasets": ds, "datasets": ds})
    argv, patches = PROGRAMS[name]
    with open(os.path.join(SRC, name)) as f:
        src = f.read()
    for old, new in patches:
        assert old in src, (name, old)
        src = src.replace(old, new)
    if backend == "transpiler":
        src = rewrite_imports(src)
    rundir = os.path.join(CACHE_ROOT, "jax_examples_run", backend)
    os.makedirs(rundir, exist_ok=True)
    path = os.path.join(rundir, name)
    with open(path, "w") as f:
        f.write(src)
    init = {}
    if name == "onnx2xla.py":
        import hashlib
        import io
        import urllib.request
        model = synthetic_onnx_model()
        urllib.request.urlopen = lambda url, *a, **k: io.BytesIO(model)
        init["_SYNTHETIC_MD5"] = hashlib.md5(model).hexdigest()
    sys.argv = [path] + argv
    rec = {"name": name, "backend": backend}
    t0 = time.time()
    try:
        runpy.run_path(path, init_globals=init, run_name="__main__")
        rec["status"] = "completed"
    except SystemExit as e:
        rec["status"] = "completed" if e.code in (0, None) else f"exit {e.code}"
    except BaseException as e:  # noqa: BLE001
        tb = traceback.extract_tb(e.__traceback__)
        mine = [fr for fr in tb if fr.filename == path]
        rec["status"] = "error"
        rec["error"] = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:300]}"
        if mine:
            fr = mine[-1]
            rec["where"] = f"{name}:{fr.lineno}: {fr.line.strip() if fr.line else ''}"
        if tb and tb[-1].filename != path:
            fr = tb[-1]
            fn = fr.filename
            if fn.startswith("/work/main/"):
                fn = fn[len("/work/main/"):]
            rec["raised_at"] = f"{fn}:{fr.lineno} in {fr.name}"
        rec["traceback"] = traceback.format_exc()[-4000:]
    rec["seconds"] = round(time.time() - t0, 1)
    with open(out_path, "w") as f:
        json.dump(rec, f)


def run(backend, name, timeout, verbose):
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    env = dict(os.environ)
    env.setdefault("TRANSPILER_CACHE_DIR", CACHE_ROOT)
    if backend == "jax":
        env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", backend, name, out],
                           env=env, timeout=timeout, cwd=HERE,
                           capture_output=True, text=True)
        with open(out) as f:
            text = f.read()
        rec = json.loads(text) if text else {"status": f"crashed (exit {p.returncode})",
                                             "error": p.stderr.strip()[-300:]}
        rec["stdout"] = p.stdout[-2000:]
    except subprocess.TimeoutExpired as e:
        rec = {"status": f"timeout after {timeout} s",
               "stdout": (e.stdout or b"")[-2000:].decode() if isinstance(e.stdout, bytes) else (e.stdout or "")}
    finally:
        os.unlink(out)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="run only programs whose name contains NAME")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--no-jax", action="store_true", help="skip the JAX run")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--json", help="write the records to this file")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    records = []
    ok = 0
    names = [n for n in PROGRAMS if not args.only or args.only in n]
    for name in names:
        line = f"{name:40s}"
        jrec = None
        if not args.no_jax:
            jrec = run("jax", name, args.timeout, args.verbose)
            line += f" jax: {jrec['status']:10s}"
        trec = run("transpiler", name, args.timeout, args.verbose)
        ok += trec["status"] == "completed"
        line += f" transpiler: {trec['status']}"
        print(line, flush=True)
        for label, rec in (("jax", jrec), ("transpiler", trec)):
            if rec and rec["status"] != "completed":
                print(f"    {label}: stops at {rec.get('where', '?')}")
                print(f"    {' ' * len(label)}  {rec.get('error', '')}"
                      + (f"  (raised at {rec['raised_at']})" if rec.get("raised_at") else ""))
            if args.verbose and rec:
                print("    " + rec.get("stdout", "").strip().replace("\n", "\n    "))
        records.append({"name": name, "jax": jrec, "transpiler": trec})
    print(f"\n{ok}/{len(names)} example programs complete on transpiler with only the imports changed")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
