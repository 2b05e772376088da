"""Compile StableHLO to IREE modules (.vmfb), with a persistent, self-checking disk cache.

The cache key is the SHA-256 of the MLIR bytecode, the target, the flags, the compiler
version and (when compiling for ``host``) the host CPU. Entries carry a checksum of their
content: a corrupt entry is detected, reported once, and rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import platform
import re
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional, Sequence

from iree.compiler import CompilerToolError, compile_str
from iree.compiler import version as iree_version

from transpiler.cache_files import read_sealed, reject, write_sealed
from transpiler.config import config
from transpiler.errors import TranspileError
from transpiler.lowering.trace import error_at_mlir_location

log = logging.getLogger("transpiler.compiler")

_VMFB = "VMFB1"  # the format of a compiled-module entry (transpiler/cache_files.py)

# Flags measured to matter on CPU (see DESIGN.md): O3 and data tiling give 3-7x.
CPU_FLAGS = ("--iree-opt-level=O3", "--iree-opt-data-tiling")
LARGE_VECTOR_FLAG = "--iree-llvmcpu-fail-on-large-vector=false"


@dataclass(frozen=True)
class Target:
    name: str
    backend: str
    flags: tuple[str, ...] = ()


TARGETS = {
    "llvm-cpu": Target("llvm-cpu", "llvm-cpu", CPU_FLAGS),
    # Cross targets compile here without the hardware (checked by tests/test_cli.py):
    "vulkan-spirv": Target("vulkan-spirv", "vulkan-spirv"),
    # IREE 3.13 cannot target sm_90 directly (the compile fails); sm_80 code runs on H100s.
    "cuda": Target("cuda", "cuda", ("--iree-cuda-target=sm_80",)),
    "rocm": Target("rocm", "rocm", ("--iree-rocm-target=gfx942",)),
}

STAGES = {"stablehlo": None, "linalg": "input", "input": "input", "flow": "flow",
          "stream": "stream", "hal": "hal"}


def target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; available targets: "
                         f"{', '.join(TARGETS)}") from None


@lru_cache(maxsize=1)
def compiler_version() -> str:
    return str(getattr(iree_version, "VERSION", "unknown"))


@lru_cache(maxsize=1)
def host_cpu_id() -> str:
    """Identifies the host CPU, so a cache shared between machines never runs foreign code."""
    text = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "flags")):
                    text += line
                if line.strip() == "":
                    break
    except OSError:
        text += platform.processor()
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def compile_flags(tgt: Target, cpu: str = "host") -> list[str]:
    flags = list(tgt.flags)
    if tgt.backend == "llvm-cpu":
        flags.append(f"--iree-llvmcpu-target-cpu={cpu}")
    if config.enable_x64:
        flags.append("--iree-input-demote-f64-to-f32=false")
    return flags


def cache_key(bytecode: bytes, tgt: Target, flags: Sequence[str], cpu: str) -> str:
    h = hashlib.sha256(bytecode)
    h.update("\0".join([tgt.name, *flags, compiler_version()]).encode())
    if cpu == "host":
        h.update(host_cpu_id().encode())
    return h.hexdigest()


def _cache_path(key: str) -> Path:
    return Path(config.cache_dir) / "vmfb" / key[:2] / f"{key}.vmfb"


def read_cache(key: str) -> Optional[bytes]:
    path = _cache_path(key)
    vmfb = read_sealed(path, _VMFB)
    if vmfb is not None and not _is_module(vmfb):  # sealed, yet no module: rebuilt
        reject(path, "not a compiled module")
        return None
    return vmfb


def _is_module(vmfb: bytes) -> bool:
    """Whether `vmfb` looks like IREE's module format: a FlatBuffer with the ``IREE`` file
    identifier, bare or in the zip archive that carries its embedded libraries."""
    return vmfb[4:8] == b"IREE" or (vmfb.startswith(b"PK\x03\x04") and b"IREE" in vmfb[:4096])


def write_cache(key: str, vmfb: bytes) -> None:
    try:
        write_sealed(_cache_path(key), _VMFB, vmfb)
    except OSError as err:  # a read-only cache must not stop the program
        log.warning("could not write the compile cache (%s): %s", config.cache_dir, err)


class CompileStats:
    compiles = 0
    cache_hits = 0
    seconds = 0.0


_DOT = re.compile(r"stablehlo\.dot_general .*?(?:batching_dims = \[([\d, ]*)\] x \[([\d, ]*)\], )?"
                  r"contracting_dims = \[([\d, ]*)\] x \[([\d, ]*)\].*?: \(tensor<([^>]*)>, "
                  r"tensor<([^>]*)>\)")


def module_flags(module_text: str) -> list[str]:
    """The CPU flags a module's contents call for: `_data_tiling_flags`, and aggressive
    fusion off for a module with loops (`LOOP_FLAGS`)."""
    flags = _data_tiling_flags(module_text)
    if "stablehlo.while" in module_text:
        flags += LOOP_FLAGS
    if "complex<" in module_text:
        flags += COMPLEX_FLAGS
    return flags


# IREE 3.13 at O3 computed wrong values in programs on complex numbers (rows of the
# Hessian ``jit(jacfwd(grad(f)))`` of ``f = sum(real(sum(x[:, None] * w, 0)) ** 3)`` with a
# complex w; tests/test_complex.py); at O1 they are right. No real-valued module is affected.
COMPLEX_FLAGS = ["--iree-opt-level=O1"]


# IREE 3.13's aggressive dispatch fusion built programs with loops that fail at run time
# ("indirect buffer reference slot 0 is out range of the declared binding capacity":
# solving against a constant right-hand side, a vmapped slogdet gradient); without it
# they run, and loops ran as fast (1000-step fori_loop 2.05 vs 2.02 ms, 200-step RNN
# scan 1.29 vs 1.26 ms, its gradient 6.45 vs 6.34 ms).
LOOP_FLAGS = ["--iree-dispatch-creation-enable-aggressive-fusion=false"]


def _data_tiling_flags(module_text: str) -> list[str]:
    """Data tiling pays off for matrix-matrix products (3x on a 1024^2 matmul) but slows
    matrix-vector ones (2x at n=100, 15x at n=4096, measured with IREE 3.13): it stays on
    only when some ``dot_general`` has free dimensions on both sides."""
    def dims(text: str) -> list[int]:
        return [int(d) for d in text.split(",") if d.strip()]

    for m in _DOT.finditer(module_text):
        batch_l, batch_r, con_l, con_r, lhs, rhs = m.groups()
        sizes = []
        for shape, used in ((lhs, dims(batch_l or "") + dims(con_l)),
                            (rhs, dims(batch_r or "") + dims(con_r))):
            extents = [int(e) for e in shape.split("x")[:-1] if e.isdigit()]
            free = 1
            for axis, e in enumerate(extents):
                free *= e if axis not in used else 1
            sizes.append(free)
        if min(sizes) > 1:
            return []
    return ["--iree-opt-data-tiling=false"]


def device_flags(tgt: Target, devices: int) -> list[str]:
    """A module placed on `devices` devices of the target (its ``@dev0``, ``@dev1``...,
    pmap's multi-device strategy): one ``--iree-hal-target-device`` each."""
    if devices <= 0:
        return []
    kind = MULTI_DEVICE_KINDS.get(tgt.backend)
    if kind is None:
        raise ValueError(f"multi-device modules are built for {', '.join(MULTI_DEVICE_KINDS)}"
                         f", not {tgt.name}")
    flags = [f"--iree-hal-target-device=dev{i}={kind}[{i}]" for i in range(devices)]
    if kind == "local":
        flags.append("--iree-hal-local-target-device-backends=llvm-cpu")
    # Const-eval JITs hoisted constants for one device; with several, IREE 3.13 crashes in
    # its device analysis (corpus programs `gather`, `at_update`).
    flags.append("--iree-opt-const-eval=false")
    return flags


# The IREE device of each backend that multi-device modules (pmap's devices strategy) use.
MULTI_DEVICE_KINDS = {"llvm-cpu": "local", "vulkan-spirv": "vulkan"}


def compile_vmfb(bytecode: bytes, target_name: str = "llvm-cpu", cpu: str = "host",
                 extra_flags: Sequence[str] = (), devices: int = 0) -> bytes:
    """StableHLO bytecode -> .vmfb bytes, through the disk cache. With ``devices`` (a
    module whose values carry device affinities ``@dev0``...) it is built for that many."""
    return compile_or_load(bytecode, target_name, cpu, extra_flags, devices)[0]


def compile_or_load(bytecode: bytes, target_name: str = "llvm-cpu", cpu: str = "host",
                    extra_flags: Sequence[str] = (), devices: int = 0) -> tuple[bytes, bool]:
    """`compile_vmfb`, and whether the module came from the disk cache (for `jit`'s
    compile log)."""
    tgt = target(target_name)
    flags = _with_flags(compile_flags(tgt, cpu), [*extra_flags, *device_flags(tgt, devices)])
    key = cache_key(bytecode, tgt, flags, cpu)
    if config.disk_cache:
        cached = read_cache(key)
        if cached is not None:
            CompileStats.cache_hits += 1
            return cached, True
    vmfb = _compile_with_fallbacks(bytecode, tgt, flags)
    if config.disk_cache:
        write_cache(key, vmfb)
    return vmfb, False


# Known failures of IREE 3.13's CPU backend, each fixed by one flag, tried in turn:
# - data-tiled codegen rejects some fusions (a dot_general fused with an elementwise op in
#   MLP gradients, JAX's own StableHLO included) with "large vector sizes"; the same code
#   compiles, with the same results, when that check is lifted;
# - float64 sin/cos/tanh/atan2 lower to libm calls that the embedded linker cannot resolve
#   ("undefined symbol: tanh"): a system shared library links them from the C library.
# - O3's global optimizations break dominance in some large programs (unrolled Hessians:
#   "operand #2 does not dominate this use"); those compile at O1;
# - O3 also fuses some batched softmax gradients (a broadcast product feeding a reduction,
#   per-example gradients of a cross-entropy) into a dispatch that fails verification
#   ("'vector.store' op write affecting operations on global resources are restricted to
#   workgroup distributed contexts"); O1 compiles it.
CPU_FALLBACKS = (("large vector sizes", LARGE_VECTOR_FLAG),
                 # data tiling fuses a matmul into a big outer-product write (per-example
                 # MLP gradients, JAX's StableHLO too) past the 32 KiB stack limit
                 ("exceeded stack allocation limit", "--iree-opt-data-tiling=false"),
                 ("undefined symbol", "--iree-llvmcpu-link-embedded=false"),
                 # ... and the same in a constant expression IREE evaluates while compiling
                 # (a "jit_eval" dispatch: the float64 sin of digamma's reflection at a
                 # constant point), whose JIT the flag above does not reach
                 ("jit_eval", "--iree-opt-const-eval=false"),
                 ("does not dominate this use", "--iree-opt-level=O1"),
                 ("restricted to workgroup distributed contexts", "--iree-opt-level=O1"))


# Flag sets tried in turn when IREE crashes on or rejects a module for a reason no entry
# above names, from the cheapest in speed to the safest: data tiling off avoided a
# segfault in PackOp::getResultShape (a jit(grad) of a sum of a matmul times its input),
# O1 the dominance and verification failures above.
SAFE_FLAG_SETS = (("--iree-opt-data-tiling=false",),
                  ("--iree-opt-level=O1",),
                  ("--iree-opt-level=O1", "--iree-opt-data-tiling=false"),
                  ("--iree-opt-level=O0", "--iree-opt-data-tiling=false"))


def _with_flags(flags: list[str], extra: Sequence[str]) -> list[str]:
    """`flags` with each of `extra` replacing any flag that sets the same option."""
    options = {flag.split("=")[0] for flag in extra}
    return [f for f in flags if f.split("=")[0] not in options] + list(extra)


def _compile_with_fallbacks(bytecode: bytes, tgt: Target, flags: list[str]) -> bytes:
    """Compile; when IREE crashes or fails, retry with the flag that fixes a known failure,
    then with each of `SAFE_FLAG_SETS`. The first error is raised if none compiles."""
    first: Optional[TranspileError] = None
    tried = [flags]
    safe_sets = iter(SAFE_FLAG_SETS)
    while True:
        try:
            vmfb = _invoke_compiler(bytecode, tgt, flags)
        except TranspileError as err:
            first = first or err
            fix = next((flag for text, flag in CPU_FALLBACKS
                        if text in str(err) and flag not in flags), None)
            if tgt.backend == "llvm-cpu" and fix is not None:
                flags = _with_flags(flags, [fix])
            else:
                safe = next((_with_flags(flags, s) for s in safe_sets
                             if _with_flags(flags, s) not in tried), None)
                if safe is None:
                    raise _failure(first, tgt, tried) from None
                flags = safe
            log.info("IREE failed (%s); retrying the compile with %s",
                     _summary(str(err)), " ".join(flags))
            tried.append(flags)
            continue
        if first is not None:
            log.info("compiled for %s with %s", tgt.name, " ".join(flags))
        return vmfb


def _summary(message: str) -> str:
    """What went wrong, in the words of the first line of an IREE error that says it."""
    signal = re.search(r"Error code: -(\d+)", message)
    if signal:
        return f"iree-compile crashed with signal {signal[1]}"
    boilerplate = ("IREE failed to compile", "Error invoking", "Error code", "Diagnostics:")
    lines = [line.strip() for line in _without_crash_dump(message).splitlines()]
    useful = [line for line in lines if line and not line.startswith(boilerplate)]
    return useful[0] if useful else "no diagnostics"


def _without_crash_dump(message: str) -> str:
    """An IREE message without a crash's backtrace (frames, "Stack dump:", the request to
    report it): what is left is what the compiler said before it crashed."""
    kept = []
    for line in message.splitlines():
        if re.match(r"\s*#\d+ 0x[0-9a-f]+", line) or line.startswith(
                ("Stack dump:", "Please report issues to", "PLEASE submit a bug report")) or \
                re.match(r"\d+\.\s+Program arguments:", line.strip()):
            continue
        kept.append(line)
    return "\n".join(kept)


def _failure(first: TranspileError, tgt: Target, tried: list[list[str]]) -> TranspileError:
    crashed = "Error code: -" in str(first)
    what = "crashed on" if crashed else "failed to compile"
    sets = "; ".join(" ".join(f for f in flags if f not in tried[0]) or "the usual flags"
                     for flags in tried)
    return TranspileError(
        f"IREE {compiler_version()} {what} this module for {tgt.name} with every flag set "
        f"tried ({sets}):\n{_without_crash_dump(first.message).strip()}",
        first.loc,
        "this is a compiler bug, not an error in your program: see the module with "
        "jit(f).lower(...).as_text() and report it, or rewrite the operation named above")


def _invoke_compiler(source: bytes, tgt: Target, flags: Sequence[str]) -> bytes:
    start = time.perf_counter()
    multi = any(f.startswith("--iree-hal-target-device=") for f in flags)
    warnings = io.StringIO()  # iree-compile's warnings (perf remarks): logged, not printed
    try:
        with contextlib.redirect_stderr(warnings):
            out = compile_str(source, target_backends=[] if multi else [tgt.backend],
                              input_type="stablehlo", extra_args=list(flags))
    except CompilerToolError as err:
        text = str(err).split("Invoked with:")[0]
        raise error_at_mlir_location(text, f"IREE failed to compile for {tgt.name}") from None
    if warnings.getvalue().strip():
        log.info("iree-compile: %s", warnings.getvalue().strip())
    CompileStats.compiles += 1
    CompileStats.seconds += time.perf_counter() - start
    return out


def lower_to_stage(bytecode: bytes, stage: str, target_name: str = "llvm-cpu",
                   cpu: str = "host", devices: int = 0) -> str:
    """The module as MLIR text after IREE's `stage` phase (``linalg`` is the input phase);
    `devices` as for `compile_vmfb`."""
    if stage not in STAGES or STAGES[stage] is None:
        raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
    tgt = target(target_name)
    flags = compile_flags(tgt, cpu) + device_flags(tgt, devices) + \
        [f"--compile-to={STAGES[stage]}"]
    return _invoke_compiler(bytecode, tgt, flags).decode()


def cache_info() -> dict:
    root = Path(config.cache_dir) / "vmfb"
    files = list(root.glob("*/*.vmfb")) if root.exists() else []
    return {"path": str(root), "entries": len(files),
            "bytes": sum(f.stat().st_size for f in files)}


def cache_clear() -> int:
    root = Path(config.cache_dir) / "vmfb"
    removed = 0
    for f in root.glob("*/*.vmfb") if root.exists() else []:
        f.unlink(missing_ok=True)
        removed += 1
    return removed
