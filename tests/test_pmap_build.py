"""`transpiler build` of a pmap (examples/data_parallel.py's `sgd_step`): the multi-device
module run by `transpiler run` with the runtime alone, and the per-replica StableHLO run by
jaxlib's PJRT client on 2 host devices (skipped without jax); both against pmap in Python."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.test_cli import cli
from tests.test_pmap_native import run_on_replicas

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "data_parallel.py"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pmap_build")
    result = cli("build", str(EXAMPLE), "-o", str(out), "--target", "llvm-cpu,stablehlo,cuda,vulkan-spirv")
    assert result.returncode == 0, result.stderr + result.stdout
    return out


def _inputs():
    sys.path.insert(0, str(EXAMPLE.parent))
    try:
        import data_parallel as dp
    finally:
        sys.path.pop(0)
    params = dp.init(0)
    x, labels = dp.data(1, 128)
    return dp, [*params, dp.shard(x[0], 2), dp.shard(labels[0], 2)]


def test_manifest_describes_the_shards(built):
    entry = json.loads((built / "manifest.json").read_text())["functions"]["sgd_step"]
    assert entry["pmap"]["shards"] == 2 and entry["pmap"]["in_axes"] == [None] * 4 + [0, 0]
    assert set(entry["artifacts"]) == {"llvm-cpu", "cuda", "vulkan-spirv"}
    text = (built / "sgd_step.mlir").read_text()
    assert "stablehlo.all_reduce" in text and "flow.tensor.transfer" not in text


def test_run_built_module_matches_pmap(built, tmp_path):
    dp, inputs = _inputs()
    files = []
    for i, a in enumerate(inputs):
        files.append(str(tmp_path / f"in{i}.npy"))
        np.save(files[-1], a)
    result = cli("run", str(built), "sgd_step", "--input", *files, "--output", str(tmp_path))
    assert result.returncode == 0, result.stderr
    want = dp.sgd_step(*inputs)
    for k, w in enumerate(want[0] + (want[1],)):
        got = np.load(tmp_path / f"sgd_step.out{k}.npy")
        np.testing.assert_allclose(got, np.asarray(w), rtol=1e-5, atol=1e-6)


class _Text:
    def __init__(self, text: str) -> None:
        self._text = text

    def text(self) -> str:
        return self._text


def test_exported_stablehlo_runs_on_pjrt_replicas(built, tmp_path):
    dp, inputs = _inputs()
    replicas = [np.stack([a, a]) for a in inputs[:4]] + inputs[4:]
    results = run_on_replicas(tmp_path, {"step": (_Text((built / "sgd_step.mlir").read_text()),
                                                  replicas)})
    want = dp.sgd_step(*inputs)[0][0]  # the first output (w1), the same on both replicas
    for k in range(2):
        np.testing.assert_allclose(results["step"][k], np.asarray(want), rtol=1e-5, atol=1e-6)
