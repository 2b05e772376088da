"""How many code cells of JAX's documentation give JAX's output when run on transpiler.

    TRANSPILER_CACHE_DIR=/work/main/.cache/docs \
        .venv/bin/python tests/jax_docs/measure.py [--page NAME] [--group core|101|all]
                                                   [--verbose] [--timeout 60] [--refresh-jax]

Not a test (pytest does not collect it, `make test` does not run it): a measurement.
The cells (cells.json, extracted by extract.py from JAX's documentation at the commit it
records; Copyright The JAX Authors, Apache License 2.0) run page by page, in order, in one
namespace per page, once with real JAX and once with the imports rewritten to transpiler
(``rewrite_imports``: the one place that maps ``jax`` to ``transpiler``). Each page runs in
a child process per backend, each cell with a timeout. JAX's results are cached under
$TRANSPILER_CACHE_DIR/jax_docs (keyed by the cell text and the JAX version); --refresh-jax
reruns them.

What "matches" means (``compare``):
  * both ran: the printed output plus the repr of a trailing expression agree: the numbers
    parsed out of the text agree within rtol 1e-4 / atol 1e-5 (nan == nan), and the text
    between the numbers agrees after normalisation (object addresses, the cell's file path,
    ``DeviceArray`` -> ``Array``, whitespace). Numbers that agree with other text are
    "text differs"; different numbers are "VALUE DIFFERS" (a silent wrong value).
  * JAX raised: the cell matches when transpiler raises too (the gotchas, tagged
    ``raises-exception``) and printed the same numbers before raising; JAX errors in cells
    not meant to raise (environment: no TPU/GPU, no network) exclude the cell.
  * EXCLUDED cells (nondeterministic output, see ``EXCLUDED``) count as matching when both
    run without error; their output is not compared.
IPython magics are dropped, except ``%timeit stmt`` / ``%%timeit``, whose statement runs
once (so the code is exercised); matplotlib is replaced by a do-nothing stub in both runs.
"""

import argparse
import ast
import contextlib
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
CELLS = os.path.join(HERE, "cells.json")
CACHE = os.path.join(os.environ.get("TRANSPILER_CACHE_DIR",
                                    os.path.join(HERE, "..", "..", ".cache", "docs")), "jax_docs")

# Cells whose output cannot be compared: (page path suffix, cell index) -> reason.
# They count as matching when both backends run them without error.
EXCLUDED = {
    ("random-numbers.md", 0): "seeds NumPy from the clock / prints a random draw",
    ("101/pytrees.md", 9): "trains on unseeded np.random.normal data (cell 6 too): the loss "
                           "differs from run to run, in JAX as here",
}
# Cells compared with a loose tolerance: (page path suffix, cell index) -> (rtol, reason).
LOOSE = {
    ("automatic-differentiation.md", 9): (1e-2, "float32 finite differences with eps=1e-4 amplify 1-ulp differences of the loss 1e4 times"),
    ("autodiff_cookbook.md", 7): (1e-2, "float32 finite differences with eps=1e-4 amplify 1-ulp differences of the loss 1e4 times"),
    ("101/transformations.md", 7): (1e-2, "float32 finite differences with eps=1e-4 amplify 1-ulp differences of the loss 1e4 times"),
    ("thinking_in_jax.md", 19): (1e-2, "float32 finite differences with eps=1e-3 amplify 1-ulp differences of the sum 1e3 times"),
}
# Text patterns that mark output as nondeterministic (timings): such cells are compared
# on "ran without error" only.
NONDETERMINISTIC = re.compile(r"time\.(time|perf_counter)|timeit\.|datetime\.now")


# ---------------------------------------------------------------------------------------
# The import mapping: every jax module path maps to the same path under transpiler.

def map_module(name):
    return "transpiler" + name[3:] if name == "jax" or name.startswith("jax.") else name


def rewrite_imports(src):
    """``import jax`` -> ``import transpiler as jax``; ``import jax.numpy as jnp`` ->
    ``import transpiler.numpy as jnp``; ``from jax.X import Y`` -> ``from transpiler.X
    import Y``; ``import jax.X`` -> ``import transpiler.X, transpiler as jax``. Attribute
    paths (``jax.numpy.sum``, ``jax.lax.scan``) then resolve on the transpiler package."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return src
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "jax" for a in node.names):
            parts = []
            for a in node.names:
                if a.name.split(".")[0] != "jax":
                    parts.append(a.name + (f" as {a.asname}" if a.asname else ""))
                elif a.asname:
                    parts.append(f"{map_module(a.name)} as {a.asname}")
                elif a.name == "jax":
                    parts.append("transpiler as jax")
                else:
                    parts.append(f"{map_module(a.name)}, transpiler as jax")
            edits.append((node, "import " + ", ".join(parts)))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.split(".")[0] == "jax":
            names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in node.names)
            edits.append((node, f"from {map_module(node.module)} import {names}"))
    if not edits:
        return src
    lines = src.splitlines(True)
    # offsets of line starts
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    out = src
    for node, text in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        a = starts[node.lineno - 1] + len(lines[node.lineno - 1].encode()[:node.col_offset].decode())
        b = starts[node.end_lineno - 1] + len(lines[node.end_lineno - 1].encode()[:node.end_col_offset].decode())
        # keep the line count, so that line numbers in errors are the original ones
        out = out[:a] + text + "\n" * (node.end_lineno - node.lineno) + out[b:]
    return out


# ---------------------------------------------------------------------------------------
# Cell preparation

def strip_magics(src):
    """Drop IPython magics and shell lines; ``%timeit [opts] stmt`` keeps ``stmt`` and a
    ``%%timeit`` cell keeps its body, run once."""
    lines = src.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        if lines[0].lstrip().startswith("%%timeit"):
            lines = lines[1:]
        else:
            return ""
    out = []
    for ln in lines:
        s = ln.lstrip()
        ind = ln[:len(ln) - len(s)]
        if s.startswith("%timeit") or s.startswith("%time "):
            toks = s.split()[1:]
            while toks and toks[0].startswith("-"):
                toks = toks[1:]
            out.append(ind + " ".join(toks))
        elif s.startswith("%") or s.startswith("!"):
            continue
        else:
            out.append(ln)
    return "\n".join(out).rstrip() + "\n" if any(l.strip() for l in out) else ""


def page_slug(path):
    return re.sub(r"[^\w]+", "_", path).strip("_")


def load():
    with open(CELLS) as f:
        return json.load(f)


# ---------------------------------------------------------------------------------------
# Worker: runs one page's cells with one backend and writes a JSON line per cell.

class CellTimeout(BaseException):
    pass


class _Stub:
    """matplotlib stand-in: every attribute, call and index gives another stub."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub()

    def __call__(self, *a, **k):
        return _Stub()

    def __getitem__(self, k):
        return _Stub()

    def __iter__(self):
        return iter([_Stub(), _Stub()])


def install_matplotlib_stub():
    for name in ("matplotlib", "matplotlib.pyplot", "matplotlib.cm", "matplotlib.colors",
                 "mpl_toolkits", "mpl_toolkits.mplot3d"):
        mod = types.ModuleType(name)
        mod.__getattr__ = lambda attr: _Stub()
        sys.modules[name] = mod
    sys.modules["matplotlib"].pyplot = sys.modules["matplotlib.pyplot"]


def run_worker(backend, page_index, start, out_path, timeout):
    install_matplotlib_stub()
    data = load()
    page = data["pages"][page_index]
    celldir = os.path.join(CACHE, "cells", backend, page_slug(page["path"]))
    os.makedirs(celldir, exist_ok=True)
    ns = {"__name__": "__main__", "__builtins__": __builtins__}

    def on_alarm(signum, frame):
        raise CellTimeout(f"cell timed out after {timeout} s")

    signal.signal(signal.SIGALRM, on_alarm)
    out = open(out_path, "a")
    for cell in page["cells"][start:]:
        src = strip_magics(cell["source"])
        rec = {"index": cell["index"]}
        if not src:
            rec["skipped"] = "magic-only cell"
            out.write(json.dumps(rec) + "\n")
            out.flush()
            continue
        if backend == "transpiler":
            src = rewrite_imports(src)
        fname = os.path.join(celldir, f"cell_{cell['index']:03d}.py")
        with open(fname, "w") as f:
            f.write(src)
        buf = io.StringIO()
        t0 = time.time()
        try:
            tree = ast.parse(src, fname)
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr) and \
                    not src.rstrip().endswith(";"):
                last = ast.Expression(tree.body.pop().value)
            signal.alarm(timeout)
            with contextlib.redirect_stdout(buf):
                exec(compile(tree, fname, "exec"), ns)
                if last is not None:
                    value = eval(compile(last, fname, "eval"), ns)
                    if value is not None:
                        print(repr(value))
                if backend == "jax" and "jax" in sys.modules:
                    sys.modules["jax"].effects_barrier()
            signal.alarm(0)
            rec["ok"] = True
        except BaseException as e:  # noqa: BLE001 - a cell may raise anything
            signal.alarm(0)
            if isinstance(e, KeyboardInterrupt):
                raise
            tb = traceback.extract_tb(e.__traceback__)
            in_cell = [fr for fr in tb if fr.filename == fname]
            where = None
            last_in_cell = max((k for k, fr in enumerate(tb) if fr.filename == fname), default=-1)
            lib = tb[last_in_cell + 1:]
            if lib:
                fr = lib[-1]
                where = f"{os.path.relpath(fr.filename) if fr.filename.startswith('/work/main') else fr.filename}:{fr.lineno}"
            msg = str(e).strip().splitlines()
            rec.update(ok=False, error=type(e).__name__,
                       message=msg[0][:300] if msg else "",
                       cell_line=in_cell[-1].lineno if in_cell else None,
                       raised_at=where,
                       name=getattr(e, "name", None) if isinstance(e, (NameError, AttributeError, ImportError)) else None)
            rec["timeout"] = isinstance(e, CellTimeout)
        rec["stdout"] = buf.getvalue()[:20000]
        rec["seconds"] = round(time.time() - t0, 2)
        out.write(json.dumps(rec) + "\n")
        out.flush()
    out.close()


# ---------------------------------------------------------------------------------------
# Parent: run both backends for a page, with a watchdog.

def run_page(backend, page_index, page, timeout, verbose):
    """Returns {cell index: record}. A worker that stops answering (stuck in native code) is
    killed; the cell it was in is a timeout and the worker restarts after it (with a fresh
    namespace, so later cells may fail for that reason: recorded as cascade)."""
    results = {}
    ncells = len(page["cells"])
    start = 0
    env = dict(os.environ)
    env.setdefault("TRANSPILER_CACHE_DIR", os.path.dirname(CACHE))
    env["PYTHONHASHSEED"] = "0"
    while start < ncells:
        fd, path = tempfile.mkstemp(suffix=".jsonl")
        os.close(fd)
        proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", backend, str(page_index),
             str(start), path, "--timeout", str(timeout)],
            stdout=subprocess.DEVNULL if not verbose else None,
            stderr=subprocess.DEVNULL if not verbose else None, env=env, cwd=HERE)
        seen = 0
        deadline = time.time() + timeout + 60
        while True:
            time.sleep(0.2)
            with open(path) as f:
                lines = [l for l in f.read().splitlines() if l.strip()]
            if len(lines) > seen:
                seen = len(lines)
                deadline = time.time() + timeout + 60
            if proc.poll() is not None:
                with open(path) as f:
                    lines = [l for l in f.read().splitlines() if l.strip()]
                break
            if time.time() > deadline:
                proc.kill()
                proc.wait()
                break
        os.unlink(path)
        for l in lines:
            rec = json.loads(l)
            results[rec["index"]] = rec
        done = start + len(lines)
        if done < ncells and proc.returncode != 0 or done < ncells and len(lines) == 0:
            idx = page["cells"][done]["index"]
            why = ("worker killed: no answer within the timeout" if proc.returncode in (-9, None)
                   else f"worker process died (exit {proc.returncode})")
            results[idx] = {"index": idx, "ok": False, "error": "Timeout" if proc.returncode == -9 else "Crash",
                            "message": why, "timeout": proc.returncode == -9, "stdout": "",
                            "restarted": True}
            done += 1
        start = done
    return results


# ---------------------------------------------------------------------------------------
# Comparison

NUM = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w])|(?<![\w])-?(?:nan|inf)(?![\w])")


def normalise(text, backend):
    text = re.sub(r"0x[0-9a-fA-F]+", "0x?", text)
    text = re.sub(r"\S*/cells/(jax|transpiler)/\w+/cell_(\d+)\.py", r"<cell \2>", text)
    if backend == "transpiler":
        text = text.replace("DeviceArray(", "Array(")
    return text


def numbers(text):
    out = []
    for m in NUM.findall(text):
        try:
            out.append(float(m))
        except ValueError:
            pass
    return out


def skeleton(text):
    return "".join(NUM.sub("#", text).split())


def numbers_agree(a, b, rtol=1e-4):
    import numpy as np
    if len(a) != len(b):
        return False
    if not a:
        return True
    return bool(np.allclose(np.array(a), np.array(b), rtol=rtol, atol=1e-5, equal_nan=True))


def compare(page, cell, j, t):
    """Returns (status, detail). Statuses counting as matching: match, raises-both,
    excluded-ran."""
    key = next((r for (p, i), r in EXCLUDED.items() if page["path"].endswith(p) and i == cell["index"]), None)
    if key is None and NONDETERMINISTIC.search(cell["source"]):
        key = "prints timings"
    loose = next((r for (p, i), r in LOOSE.items() if page["path"].endswith(p) and i == cell["index"]), None)
    if j.get("ok") and t.get("ok"):
        if key:
            return "excluded-ran", key
        jo, to = normalise(j["stdout"], "jax"), normalise(t["stdout"], "transpiler")
        jn, tn = numbers(jo), numbers(to)
        if numbers_agree(jn, tn, loose[0] if loose else 1e-4):
            if skeleton(jo) == skeleton(to):
                return "match", ""
            return "text-differs", first_diff(jo, to)
        if len(jn) == len(tn) and skeleton(jo) == skeleton(to):
            return "VALUE-DIFFERS", first_diff(jo, to)
        return "output-differs", first_diff(jo, to)
    if not j.get("ok"):
        expected = "raises-exception" in cell["tags"]
        if not expected:
            # JAX itself fails in a cell not meant to raise (no TPU/GPU, several devices):
            # the cell is excluded
            return "jax-fails", f"JAX: {j['error']}: {j['message'][:160]}"
        if not t.get("ok"):
            if t.get("timeout"):
                return "error", fmt_err(t)
            jn = numbers(normalise(j["stdout"], "jax"))
            tn = numbers(normalise(t["stdout"], "transpiler"))
            if numbers_agree(jn, tn):
                return "raises-both", f"JAX {j['error']} / transpiler {t['error']}"
            return "output-differs", "both raise, different output before: " + first_diff(j["stdout"], t["stdout"])
        return "no-error", f"JAX raises {j['error']}: {j['message'][:120]}"
    return "error", fmt_err(t)


def fmt_err(t):
    s = f"{t.get('error')}: {t.get('message', '')}"
    if t.get("cell_line"):
        s += f" [cell line {t['cell_line']}"
        if t.get("raised_at"):
            s += f", raised at {t['raised_at']}"
        s += "]"
    return s


def first_diff(a, b):
    al, bl = a.splitlines(), b.splitlines()
    for x, y in zip(al, bl):
        if x != y:
            return f"jax {x.strip()[:100]!r} vs transpiler {y.strip()[:100]!r}"
    if len(al) != len(bl):
        return f"{len(al)} lines (jax) vs {len(bl)} (transpiler)"
    return "whitespace"


MATCHING = {"match", "raises-both", "excluded-ran"}


def cause(status, detail, t):
    """A key grouping failing cells by cause."""
    if status in ("error", "error-cascade"):
        msg = re.sub(r"\S*/(cells|generated)/\S*?:\d+:\d+: ", "", t.get("message", ""))
        msg = re.sub(r"\d+", "N", msg)[:110]
        return f"{status}: {t.get('error')}: {msg}"
    if status == "no-error":
        return "no-error: JAX raises " + detail.split(":")[0].replace("JAX raises ", "")
    return status


def jax_cached(page_index, page, timeout, refresh, verbose):
    import importlib.metadata
    ver = importlib.metadata.version("jax")
    import inspect
    code = "".join(inspect.getsource(f) for f in (run_worker, strip_magics, install_matplotlib_stub))
    h = hashlib.sha256((ver + json.dumps(page["cells"]) + code).encode()).hexdigest()[:16]
    path = os.path.join(CACHE, "jax_results", f"{page_slug(page['path'])}-{h}.json")
    if not refresh and os.path.exists(path):
        with open(path) as f:
            return {int(k): v for k, v in json.load(f).items()}
    res = run_page("jax", page_index, page, timeout, verbose)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(res, f)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--page", help="run only pages whose path contains NAME")
    ap.add_argument("--group", default="all", choices=["core", "101", "all"])
    ap.add_argument("--verbose", action="store_true", help="show each cell's status and the outputs")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per cell (default 60)")
    ap.add_argument("--refresh-jax", action="store_true", help="rerun JAX instead of using its cached results")
    ap.add_argument("--json", help="write every cell's records and status to this file")
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        backend, pi, start, out = args.worker
        run_worker(backend, int(pi), int(start), out, args.timeout)
        return

    data = load()
    print(f"JAX docs at {data['jax_commit'][:12]}; {data['attribution']}")
    totals = {}
    failures = []
    report = []
    for pi, page in enumerate(data["pages"]):
        if args.page and args.page not in page["path"]:
            continue
        if args.group != "all" and page["group"] != args.group:
            continue
        t0 = time.time()
        jres = jax_cached(pi, page, args.timeout, args.refresh_jax, False)
        tres = run_page("transpiler", pi, page, args.timeout, False)
        n = m = 0
        page_failed = False
        for cell in page["cells"]:
            j, t = jres.get(cell["index"], {}), tres.get(cell["index"], {})
            if j.get("skipped") or not j:
                continue
            status, detail = compare(page, cell, j, t)
            if status == "jax-fails":
                rec_status = "excluded (JAX fails)"
            else:
                rec_status = status
            if status == "error" and t.get("error") == "NameError" and page_failed:
                status = "error-cascade"
            report.append({"page": page["path"], "index": cell["index"], "status": status,
                           "detail": detail, "jax": j, "transpiler": t})
            if status == "jax-fails":
                if args.verbose:
                    print(f"  [{cell['index']:3d}] excluded: {detail}")
                continue
            n += 1
            if status in MATCHING:
                m += 1
            else:
                if status in ("error", "output-differs", "VALUE-DIFFERS") or t.get("ok") is False:
                    page_failed = page_failed or not t.get("ok", True)
                failures.append((page["path"], cell["index"], status, detail, cell["source"],
                                 cause(status, detail, t)))
            if args.verbose:
                print(f"  [{cell['index']:3d}] {rec_status:14s} {detail[:160]}")
                if status not in MATCHING:
                    print("      jax:        " + j.get("stdout", "")[:400].replace("\n", "\n                  "))
                    print("      transpiler: " + t.get("stdout", "")[:400].replace("\n", "\n                  "))
        a = m + sum(1 for f in failures if f[0] == page["path"] and f[2] == "text-differs")
        g = totals.setdefault(page["group"], [0, 0, 0])
        g[0] += n
        g[1] += m
        g[2] += a
        pct = 100.0 * m / n if n else 0.0
        print(f"{page['path']:60s} {m:3d}/{n:3d} match ({pct:5.1f}%)  "
              f"[{a} with the numbers agreeing; {time.time() - t0:.0f} s]", flush=True)
    print()
    N = sum(v[0] for v in totals.values())
    M = sum(v[1] for v in totals.values())
    A = sum(v[2] for v in totals.values())
    for gname, (n, m, a) in totals.items():
        print(f"group {gname:5s}: {m}/{n} cells match ({100.0 * m / max(n, 1):.1f}%); "
              f"{a} ({100.0 * a / max(n, 1):.1f}%) with the numbers agreeing (text may differ)")
    print(f"overall    : {M}/{N} cells match ({100.0 * M / max(N, 1):.1f}%); "
          f"{A} ({100.0 * A / max(N, 1):.1f}%) with the numbers agreeing")
    if failures:
        print("\nFailing cells by cause:")
        groups = {}
        for f in failures:
            groups.setdefault(f[5], []).append(f)
        for c, fs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            print(f"  {len(fs):3d}  {c}")
            for path, idx, status, detail, src, _ in fs:
                print(f"         {path} [{idx}]" + (f": {detail[:150]}" if status not in ("error", "error-cascade") else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
