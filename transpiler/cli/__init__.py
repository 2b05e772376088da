"""The ``transpiler`` command: ``show``, ``build`` and ``cache`` compile (here and in
build.py); ``run`` is runtime/cli.py's, which needs the runtime alone (also as
``python -m runtime run``)."""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import inspect
import json
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional, Sequence

from runtime.cli import FORMAT, MANIFEST, CliError, add_run_parser
from transpiler.cache_files import write_atomic
from transpiler.config import config
from transpiler.primitives.core import abstractify
from transpiler import dtypes
from transpiler.array import ShapeDtypeStruct
import transpiler as tp
from transpiler.jit import Jitted
from transpiler.compiler import TARGETS
import transpiler
from transpiler.compiler import compiler_version

STAGES = ("python", "stablehlo", "linalg", "flow")
_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
           "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
           "u32": "uint32", "bool": "bool", "pred": "bool"}


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if not argv:
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except CliError as err:
        print(f"transpiler {args.command}: error: {err}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="transpiler", description="JAX's transformations as a source-to-source compiler: "
        "show generated code, build artifacts ahead of time, run them with the runtime alone.")
    sub = parser.add_subparsers(dest="command", metavar="{show,build,run,cache}", required=True)
    show = sub.add_parser("show", help="print a function's generated Python or its MLIR")
    show.add_argument("target", metavar="FILE.py::name")
    show.add_argument("--stage", choices=STAGES, default=None,
                      help="default: a transform's generated Python, a plain function's "
                      "StableHLO")
    show.add_argument("--args", help='argument signatures, e.g. "f32[128,784] f32[784]" '
                      "(default: the parameters' string annotations)")
    show.set_defaults(handler=show_command)
    build = sub.add_parser("build", help="build a file's functions ahead of time")
    build.add_argument("file", metavar="FILE.py[::name]")
    build.add_argument("-o", "--output", required=True, metavar="OUT/")
    build.add_argument("--target", default="llvm-cpu",
                       help="comma-separated: llvm-cpu, vulkan-spirv, cuda, rocm, stablehlo")
    build.add_argument("--cpu", choices=("host", "generic"), default="host")
    build.add_argument("--args", help="argument signatures for a single FILE.py::name")
    build.add_argument("--jobs", type=int, default=1, metavar="N",
                       help="compile N artifacts at a time (default 1)")
    build.set_defaults(handler=build_command)
    cache = sub.add_parser("cache", help="inspect or clear the caches")
    cache.add_argument("action", choices=("info", "clear"))
    cache.set_defaults(handler=cache_command)
    add_run_parser(sub)
    return parser


# --- signatures and functions --------------------------------------------------------------------
def parse_signature(text: str) -> tuple[str, tuple[int, ...]]:
    """``f32[128,784]`` -> ("float32", (128, 784)); ``f32`` or ``f32[]`` is a scalar."""
    spec = text.strip().strip("'\"")
    name, _, rest = spec.partition("[")
    dtype = _DTYPES.get(name.strip())
    if dtype is None or (rest and not rest.endswith("]")):
        raise CliError(f"cannot parse the signature {text!r}: write dtype[dims], e.g. "
                       f"f32[128,784] (dtypes: {', '.join(_DTYPES)})")
    try:
        dims = tuple(int(d) for d in rest[:-1].split(",") if d.strip()) if rest else ()
    except ValueError:
        raise CliError(f"cannot parse the dimensions of {text!r}: integers, e.g. f32[128,784]"
                       ) from None
    return dtype, dims


def load_function(target: str) -> tuple[Path, Any, str, Any]:
    """``FILE.py::name`` -> (path, module, name, the object); ``FILE.py`` -> name ""."""
    file, _, name = target.partition("::")
    path = Path(file)
    if not path.is_file():
        raise CliError(f"{file}: no such file")
    module = _import(path)
    if not name:
        return path, module, "", None
    obj = module
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            names = sorted(n for n, v in vars(module).items()
                           if callable(v) and not n.startswith("_") and not inspect.isclass(v)
                           and getattr(v, "__module__", module.__name__) == module.__name__)
            raise CliError(f"{file} has no function {name!r}; it defines: "
                           f"{', '.join(names) or 'none'}")
    return path, module, name, obj


def _import(path: Path) -> Any:
    name = f"_transpiler_cli_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        raise CliError(f"{err.filename}:{err.lineno}:{err.offset}: {err.msg}") from None
    finally:
        sys.path.pop(0)
    return module


def signatures(fn: Any, text: Optional[str]) -> list[tuple[str, tuple[int, ...]]]:
    """Argument signatures from `--args`, else from the parameters' string annotations."""
    if text is not None:
        return [parse_signature(t) for t in text.split()]
    examples = getattr(fn, "example_args", None)
    if examples is not None:  # jit(f, example_args=(ShapeDtypeStruct(...), ...))
        return [(abstractify(a).dtype.name, tuple(abstractify(a).shape)) for a in examples]
    target = _annotated_function(fn)
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        params = []
    found = [p.annotation for p in params if isinstance(p.annotation, str)]
    if not params or len(found) != len(params):
        raise CliError(f"{getattr(fn, '__name__', fn)}: no argument signatures; annotate the "
                       'parameters (x: "f32[128,784]") or pass --args')
    return [parse_signature(a) for a in found]


def _annotated_function(fn: Any) -> Any:
    """The user's function whose annotations give `fn`'s argument signatures: through
    jit, grad, vmap, pmap, shard_map ... (``dloss = grad(loss)``: loss's parameters)."""
    for _ in range(32):
        inner = next((getattr(fn, a) for a in ("_fun", "fun", "_original")
                      if getattr(fn, a, None) is not None), None)
        if inner is None or inner is fn:
            break
        fn = inner
    return fn


def _examples(specs: list) -> list[Any]:
    return [ShapeDtypeStruct(shape, dtypes.bfloat16 if dtype == "bfloat16" else dtype)
            for dtype, shape in specs]


def _jitted(fn: Any) -> Any:
    return fn if hasattr(fn, "lower") else tp.jit(fn)


# --- show --------------------------------------------------------------------------------------------
def show_command(args: Any) -> int:
    path, _, name, fn = load_function(args.target)
    if not name:
        raise CliError("name the function: FILE.py::name")
    stage = args.stage
    if stage is None:  # a transform's generated code; a plain function's StableHLO
        generated = getattr(fn, "source", None) is not None or isinstance(fn, Jitted)
        stage = "python" if generated else "stablehlo"
        if not generated:
            try:
                signatures(fn, args.args)
            except CliError:  # no signatures: its own code, and how to see more
                _print(f"# {name}: a plain function without argument signatures; annotate "
                       'its parameters (x: "f32[128,784]") or pass --args to see its '
                       "StableHLO\n" + inspect.getsource(fn), "python")
                return 0
    if stage == "python":
        source = getattr(fn, "source", None)
        if source is None:
            if isinstance(fn, Jitted):
                source = fn.converted_source
            else:
                raise CliError(f"{name} is a plain function: it has no generated code; show a "
                               "transformed one (grad(f), vmap(f), jit(f)) or --stage stablehlo")
        _print(str(source), "python")
        return 0
    lowered = _jitted(fn).lower(*_examples(signatures(fn, args.args)))
    _print(lowered.as_text(stage), "mlir")
    return 0


def _print(text: str, kind: str) -> None:
    if sys.stdout.isatty():  # colour in a terminal only
        from transpiler.cli.highlight import highlight  # (Pygments: only when shown)
        text = highlight(text, kind)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


# --- build -------------------------------------------------------------------------------------------
def build_command(args: Any) -> int:
    # cycle: transpiler.cli.build imports this module
    from transpiler.cli.build import compile_artifact, lower_all, python_module
    targets = [t.strip() for t in args.target.split(",") if t.strip()]
    unknown = [t for t in targets if t not in TARGETS and t != "stablehlo"]
    if unknown:
        raise CliError(f"unknown target {unknown[0]!r}; available targets: "
                       f"{', '.join([*TARGETS, 'stablehlo'])}")
    path, module, name, fn = load_function(args.file)
    if name:
        chosen = {name.rsplit('.', 1)[-1]: (fn, signatures(fn, args.args))}
    else:
        if args.args is not None:
            raise CliError("--args needs one function: FILE.py::name")
        chosen, skipped = _annotated(module)
        for fname, why in skipped.items():
            print(f"skipped {fname}: {why}", flush=True)
        if not chosen:
            raise CliError(f"{path}: no function has annotated argument signatures "
                           '(x: "f32[128,784]"); name one with FILE.py::name --args "..."')
    out = Path(args.output)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{time.time_ns()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        raise CliError(f"cannot write to {out}: {err.strerror}") from None
    manifest: dict = {"format": FORMAT, "source": str(path),
                      "source_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                      "tools": _versions(), "functions": {}}
    jobs, failures = lower_all(chosen, targets, out, manifest)
    failed = len(failures)
    total = len(jobs) + failed
    for k, (fname, tgt, message) in enumerate(failures, 1):
        print(f"[{k}/{total}] {fname:<12} {tgt:<14} FAILED  {message}", flush=True)
    done = failed

    def compile_one(job: tuple) -> tuple:
        fname, tgt, low = job
        start = time.perf_counter()
        if tgt == "stablehlo":
            return fname, tgt, out / f"{fname}.mlir", None, time.perf_counter() - start
        artifact = out / f"{fname}.{tgt}.vmfb"
        data = compile_artifact(low, tgt, args.cpu)
        write_atomic(artifact, data)
        return fname, tgt, artifact, hashlib.sha256(data).hexdigest(), \
            time.perf_counter() - start

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(compile_one, job): job for job in jobs}
        for future in futures:  # in order, so the progress reads like the job list
            fname, tgt, _ = futures[future]
            done += 1
            try:
                fname, tgt, artifact, digest, seconds = future.result()
            except Exception as err:  # one artifact's failure does not stop the others
                failed += 1
                print(f"[{done}/{total}] {fname:<12} {tgt:<14} FAILED  {_first_line(err)}",
                      flush=True)
                continue
            if digest is not None:
                manifest["functions"][fname]["artifacts"][tgt] = {"path": artifact.name,
                                                                  "sha256": digest}
            print(f"[{done}/{total}] {fname:<12} {tgt:<14} {seconds:5.2f} s  {artifact}",
                  flush=True)
    write_atomic(out / MANIFEST, json.dumps(manifest, indent=2).encode())
    module_path = out / f"{path.stem}_transpiled.py"
    write_atomic(module_path, python_module(path, chosen, manifest).encode())
    print(f"wrote {module_path}, {out / MANIFEST}" +
          (f" ({failed} artifact(s) failed)" if failed else ""))
    return 1 if failed else 0


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _annotated(module: Any) -> tuple[dict[str, tuple[Any, list]], dict[str, str]]:
    """The module's own functions whose parameters all carry signature annotations, and
    the others with the reason each is skipped."""
    chosen: dict[str, tuple[Any, list]] = {}
    skipped: dict[str, str] = {}
    for name, value in vars(module).items():
        fn = _annotated_function(value)
        if name.startswith("_") or not callable(value) or inspect.isclass(value) or \
                getattr(fn, "__module__", getattr(value, "__module__", None)) != module.__name__:
            continue
        try:
            chosen[name] = (value, signatures(value, None))
        except CliError as err:
            skipped[name] = str(err).split(": ", 1)[-1]
    return chosen, skipped


def _versions() -> dict:
    return {"transpiler": transpiler.__version__, "iree-compiler": compiler_version(),
            "python": sys.version.split()[0]}


# --- cache -------------------------------------------------------------------------------------------
def cache_command(args: Any) -> int:
    root = Path(config.cache_dir)
    if args.action == "clear":
        removed = 0
        if root.is_dir():
            for child in root.iterdir():
                removed += _size(child)
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        print(f"cleared {root} ({removed / 2**20:.1f} MiB)")
        return 0
    print(f"cache folder: {root}")
    if not root.is_dir():
        print("  (empty)")
        return 0
    for child in sorted(root.iterdir()):
        files = sum(1 for f in child.rglob("*") if f.is_file()) if child.is_dir() else 1
        print(f"  {child.name:<12} {files:6d} files  {_size(child) / 2**20:8.1f} MiB")
    return 0


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


