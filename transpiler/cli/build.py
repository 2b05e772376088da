"""`transpiler build`'s work: each function traced once, its artifacts compiled, and the
Python module of the build written (transpiler/cli.py parses the command and reports)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.cli import CliError
from transpiler.cli import _examples, _first_line, _jitted
from transpiler.cache_files import write_atomic
from transpiler.spmd.pmap_api import Pmapped
from transpiler.compiler import MULTI_DEVICE_KINDS
from transpiler.transforms.common.arguments import positional_names
from transpiler.compiler import compile_vmfb, module_flags


def python_module(path: Path, chosen: dict, manifest: dict) -> str:
    """``<stem>_transpiled.py``: the built functions as Python functions that run their
    artifacts with the runtime alone, and (as comments) the generated Python of each
    transformed one -- what the compiled code computes, readable."""
    lines = [f'"""Built by `transpiler build {path.name}`: each function runs its compiled',
             "artifact with the runtime alone (`import runtime`, no compiler). Generated Python",
             '(derivative, batched code) is shown above the function it was compiled from."""',
             "", "from runtime.cli import call_built", ""]
    for fname, entry in manifest["functions"].items():
        fn = chosen[fname][0]
        source = getattr(fn, "source", None) if not hasattr(fn, "_fun") else \
            getattr(fn._fun, "source", None)  # jit(f): the code of f, when transformed
        lines.append("")
        if isinstance(source, str):
            lines += ["# " + line if line else "#" for line in source.rstrip().split("\n")]
        names = _param_names(fn, len(entry["inputs"]))
        sig = ", ".join(f"{d['dtype']}[{', '.join(map(str, d['shape']))}]"
                        for d in entry["inputs"])
        params = ", ".join([*names, "*", "device='local-task'"])
        lines += [f"def {fname}({params}):",
                  f'    """{fname}({sig}) on the built artifacts."""',
                  f"    return call_built(__file__, {fname!r}, ({', '.join(names)}"
                  f"{',' if len(names) == 1 else ''}), device)", ""]
    return "\n".join(lines) + "\n"


def lower_all(chosen: dict, targets: list, out: Path, manifest: dict) -> tuple[list, list]:
    """Trace each function once (tracing is not thread-safe): its .mlir, its manifest
    entry, and the compile jobs; a function that fails to trace fails all its targets."""
    jobs, failures = [], []
    for fname, (fn, specs) in chosen.items():
        try:
            if isinstance(fn, Pmapped):
                lows, entry = _lower_pmap(fn, specs, targets)
            else:
                low = _jitted(fn).lower(*_examples(specs))
                lows = {t: low for t in targets}
                entry = {"outputs": _specs(low.out_avals)}
            portable = lows.get("stablehlo", next(iter(lows.values())))
            write_atomic(out / f"{fname}.mlir", portable.as_text().encode())
        except Exception as err:
            failures += [(fname, t, _first_line(err)) for t in targets]
            continue
        manifest["functions"][fname] = {
            "entry": portable.staged.name,
            "inputs": [{"dtype": d, "shape": list(s)} for d, s in specs], **entry,
            "artifacts": {}}
        jobs += [(fname, t, lows[t]) for t in targets]
    return jobs, failures


def _specs(avals: Any) -> list[dict]:
    return [{"dtype": a.dtype.name, "shape": list(a.shape)} for a in avals]


def _lower_pmap(fn: Any, specs: list, targets: list) -> tuple[dict, dict]:
    """A pmap's programs: the multi-device module for llvm-cpu (run here, the shards on
    the CPU devices), the per-replica StableHLO with native collectives for the rest
    (``stablehlo`` for XLA/PJRT; IREE's GPU targets run it with NCCL/RCCL channels)."""
    examples = _examples(specs)
    replicas = fn.export(*examples)
    local = [t for t in targets if t in MULTI_DEVICE_KINDS]
    devices = fn.lower(*examples) if local and fn.strategy != "collectives" else None
    lows = {t: devices if t in local and devices is not None else replicas for t in targets}
    outputs = []
    for aval, axis in zip(replicas.out_avals, replicas.out_axes):
        shape = list(aval.shape)
        if axis is not None:
            shape.insert(axis, replicas.size)
        outputs.append({"dtype": aval.dtype.name, "shape": shape})
    entry = {"outputs": outputs,
             "pmap": {"axis_name": str(fn.axis_name), "shards": replicas.size,
                      "in_axes": replicas.in_axes, "out_axes": replicas.out_axes,
                      "replica_outputs": _specs(replicas.out_avals)}}
    return lows, entry


def _param_names(fn: Any, count: int) -> list[str]:
    """The function's own parameter names (a0, a1 ... where they cannot be read)."""
    try:
        names = positional_names(getattr(fn, "_fun", fn))
    except (TypeError, ValueError):
        names = []
    return names if len(names) == count else [f"a{i}" for i in range(count)]


def compile_artifact(lowered: Any, target: str, cpu: str) -> bytes:
    extra = module_flags(lowered.staged.text()) if target == "llvm-cpu" else []
    if getattr(lowered, "strategy", None) == "collectives" and target == "llvm-cpu":
        raise CliError("a pmap with native collectives cannot run on IREE's CPU devices "
                       "(they have no collective channels); build it for llvm-cpu with "
                       "pmap's default strategy, or for stablehlo/cuda/rocm")
    if getattr(lowered, "strategy", None) == "collectives" and target == "vulkan-spirv":
        raise CliError("IREE's Vulkan runtime has no collective channels: build this pmap "
                       "for vulkan-spirv with pmap's default strategy")
    devices = lowered.size if getattr(lowered, "strategy", None) == "devices" else 0
    return compile_vmfb(lowered.staged.bytecode(), target, cpu=cpu, extra_flags=extra,
                        devices=devices)
