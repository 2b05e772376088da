"""``run``: a function built by ``transpiler build``, on the runtime alone. A deployed model
needs no compiler: this module imports neither ``transpiler`` nor ``iree.compiler``
(``python -m runtime run ...``); the ``transpiler`` command (transpiler/cli) adds this
subcommand next to ``show``, ``build`` and ``cache``."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

import runtime

MANIFEST = "manifest.json"
FORMAT = "transpiler-build/1"
# The artifact a device kind runs.
DEVICE_TARGETS = {"local-sync": "llvm-cpu", "local-task": "llvm-cpu", "vulkan": "vulkan-spirv",
                  "cuda": "cuda", "hip": "rocm"}


class CliError(Exception):
    """A user mistake: printed as one line, exit status 2."""


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m runtime run BUILD NAME ...``: the runtime-only command (the ``transpiler``
    command, transpiler/cli, offers the same ``run`` next to ``show``/``build``/``cache``)."""
    parser = argparse.ArgumentParser(
        prog="python -m runtime", description="Run a function built by `transpiler build` "
        "with the IREE runtime alone (no compiler needed).")
    add_run_parser(parser.add_subparsers(dest="command", metavar="{run}", required=True))
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    return run_command(args)


def run_command(args: argparse.Namespace) -> int:
    try:
        return run(args)
    except CliError as err:
        print(f"transpiler run: error: {err}", file=sys.stderr)
        return 2


def add_run_parser(sub: Any) -> None:
    """The ``run`` subcommand's arguments, on `sub` (an argparse subparsers object)."""
    run_p = sub.add_parser("run", help="run a built function with the runtime alone")
    run_p.add_argument("build_dir", help="a folder written by `transpiler build`")
    run_p.add_argument("name", help="the function to run")
    run_p.add_argument("--input", nargs="*", default=[], metavar="FILE.npy",
                       help="one .npy file per argument, in order")
    run_p.add_argument("--device", default="local-task",
                       help=f"device kind: {', '.join(DEVICE_TARGETS)} (default local-task)")
    run_p.add_argument("--output", metavar="DIR", default=".",
                       help="where to write <name>.out.npy (default: here)")
    run_p.add_argument("--print", action="store_true", help="print the outputs instead")
    run_p.set_defaults(handler=run_command)


def read_manifest(build_dir: Path) -> dict:
    path = build_dir / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise CliError(f"{path}: no such file; is {build_dir} a `transpiler build` folder?")
    except (OSError, ValueError) as err:
        raise CliError(f"{path}: not a readable manifest ({err})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CliError(f"{path}: not a transpiler build manifest (format "
                       f"{manifest.get('format') if isinstance(manifest, dict) else None!r}, "
                       f"expected {FORMAT!r})")
    return manifest


class Built:
    """One built function: its manifest entry and its loaded artifact for a device."""

    def __init__(self, build_dir: Path, name: str, device: str) -> None:
        manifest = read_manifest(build_dir)
        functions = manifest.get("functions", {})
        entry = functions.get(name)
        if entry is None:
            raise CliError(f"no function {name!r} in {build_dir / MANIFEST}; built: "
                           f"{', '.join(sorted(functions)) or 'none'}")
        target = DEVICE_TARGETS.get(device)
        if target is None:
            raise CliError(f"unknown device {device!r}; choose from "
                           f"{', '.join(DEVICE_TARGETS)}")
        artifact = entry.get("artifacts", {}).get(target)
        if artifact is None:
            raise CliError(f"{name} was not built for {target} (device {device}); built for: "
                           f"{', '.join(sorted(entry.get('artifacts', {}))) or 'nothing'}")
        path = build_dir / artifact["path"]
        try:
            data = path.read_bytes()
        except OSError as err:
            raise CliError(f"{path}: {err.strerror}") from None
        if hashlib.sha256(data).hexdigest() != artifact.get("sha256"):
            raise CliError(f"{path}: its hash does not match the manifest (a corrupt or "
                           "foreign file); rebuild it")
        # A pmap's multi-device module (llvm-cpu, vulkan-spirv): shard k on device k.
        self.pmap = entry.get("pmap") if target in ("llvm-cpu", "vulkan-spirv") else None
        try:
            if self.pmap is not None:  # a multi-device module: shard k on device k
                shards = self.pmap["shards"]
                available = runtime.devices(device)
                if len(available) < shards:
                    raise CliError(f"{name} runs on {shards} {device} devices, but "
                                   f"{len(available)} exist; set TRANSPILER_CPU_DEVICES="
                                   f"{shards}")
                module = runtime.load(data, devices=available[:shards])
            else:
                module = runtime.load(data, device)
        except ValueError as err:
            raise CliError(f"{path}: {err}") from None
        except runtime.DeviceNotFoundError as err:  # no such driver or hardware here
            why = str(err).split(". Drivers", 1)[0].rstrip(": ")
            raise CliError(f"{why}; run it where that device exists, or build for llvm-cpu "
                           "and run with --device local-task") from None
        self.name, self.entry, self.function = name, entry, module[entry["entry"]]

    def check(self, values: Sequence[Any], where: Sequence[str]) -> None:
        specs = self.entry["inputs"]
        if len(values) != len(specs):
            raise CliError(f"{self.name} takes {len(specs)} inputs ({_signature(specs)}), "
                           f"got {len(values)}")
        for i, (value, spec, w) in enumerate(zip(values, specs, where)):
            want = (spec["dtype"], tuple(spec["shape"]))
            got = (getattr(value, "dtype", type(value)).name if hasattr(value, "dtype")
                   else type(value).__name__, tuple(getattr(value, "shape", ())))
            if got != want:
                raise CliError(f"input {i}{w} is {_spec(*got)}, but {self.name} takes "
                               f"{_spec(*want)}")

    def __call__(self, *values: Any) -> list:
        if self.pmap is not None:
            return self._sharded(values)
        outputs = self.function(*values)
        return list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]

    def _sharded(self, values: Sequence[Any]) -> list:
        """A pmap's module: shard k of each mapped input (a copy of each replicated one)
        in, each output's shards stacked along its out axis (shard 0's where None)."""
        pmap: dict = self.pmap or {}
        shards, in_axes = pmap["shards"], pmap["in_axes"]
        inputs = [v if a is None else np.take(v, k, axis=a)
                  for k in range(shards) for v, a in zip(values, in_axes)]
        outs = self.function(*inputs)
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        count = len(pmap["out_axes"])
        return [np.asarray(outs[j]) if axis is None else
                np.stack([np.asarray(outs[k * count + j]) for k in range(shards)], axis=axis)
                for j, axis in enumerate(pmap["out_axes"])]


_BUILT: dict[tuple, Built] = {}


def call_built(module_file: str, name: str, args: tuple, device: str) -> Any:
    """What the generated ``<stem>_transpiled.py`` functions call: the built artifact next
    to that module, loaded once per device, run on `args` (checked against the manifest)."""
    key = (module_file, name, device)
    built = _BUILT.get(key)
    if built is None:
        built = _BUILT[key] = Built(Path(module_file).parent, name, device)
    values = [np.asarray(a) for a in args]
    built.check(values, [""] * len(values))
    outputs = [np.asarray(o).copy() for o in built(*values)]
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def run(args: Any) -> int:
    built = Built(Path(args.build_dir), args.name, args.device)
    inputs = []
    for i, file in enumerate(args.input):
        try:
            inputs.append(np.load(file, allow_pickle=False))
        except (OSError, ValueError) as err:
            raise CliError(f"input {i} ({file}): not a readable .npy file ({err})") from None
    built.check(inputs, [f" ({file})" for file in args.input])
    outputs = built(*inputs)
    for k, out in enumerate(outputs):
        value = np.asarray(out).copy()
        if args.print:
            print(f"{_spec(value.dtype.name, value.shape)}\n{value}")
            continue
        name = f"{args.name}.out.npy" if len(outputs) == 1 else f"{args.name}.out{k}.npy"
        path = Path(args.output) / name
        _save_atomic(path, value)
        print(f"{_spec(value.dtype.name, value.shape)}  written to {path}")
    return 0


def _save_atomic(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, value, allow_pickle=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _spec(dtype: str, shape: Sequence[int]) -> str:
    return f"{dtype}[{', '.join(map(str, shape))}]"


def _signature(specs: list) -> str:
    return ", ".join(_spec(s["dtype"], s["shape"]) for s in specs)


if __name__ == "__main__":
    sys.exit(main())
