"""The package's layering, read from its imports (those inside functions included; see
tests/programs/architecture.py, which also prints the sizes issue notes quote).

Layers, lowest first: the runtime; the core (config, errors, dtypes, pytrees); primitives,
their lowering and the compiler; the array library (numpy, lax, nn, random ...); the
frontend and code generation; the transforms; jit, pmap, the import hook and scipy (built
on the transforms); the CLI and the public package. A module imports only from its own
layer or lower ones, except for the few upward imports listed below, each with its reason."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "programs"))

import architecture  # noqa: E402

LAYERS = [
    ("runtime",),
    ("transpiler.config", "transpiler.errors", "transpiler.dtypes", "transpiler.per_thread",
     "transpiler.cache_files", "transpiler.tree_util", "transpiler.tree", "transpiler.rewritten",
     "transpiler.rule_code", "transpiler.version", "transpiler.tracebacks"),
    ("transpiler.primitives", "transpiler.lowering", "transpiler.compiler"),
    ("transpiler.array", "transpiler.array_methods", "transpiler.numpy", "transpiler.lax",
     "transpiler.nn", "transpiler.random", "transpiler.prng", "transpiler.initializers",
     "transpiler.example_libraries", "transpiler.builtin_functions",
     "transpiler.attention", "transpiler.debug", "transpiler.host_callbacks",
     "transpiler.sharding"),
    ("transpiler.frontend", "transpiler.codegen"),
    ("transpiler.transforms",),
    # scipy is built on the transforms: custom_jvp rules, minimize's gradients
    ("transpiler.spmd", "transpiler.jit", "transpiler.compile_log",
     "transpiler.import_hook", "transpiler.scipy"),
    ("transpiler.cli", "transpiler.__main__", "transpiler"),
]

# (importer, imported): why the lower layer reaches up. All are imports inside functions.
UPWARD = {
    ("transpiler.lowering.tracer", "transpiler.array_methods"):
        "a Tracer has the array methods (x.sum(), x.T ...) that Array has",
    ("transpiler.lowering.tracer", "transpiler.numpy"):
        "those methods are the jnp functions of the same name",
    ("transpiler.lowering.regions", "transpiler.numpy"):
        "a region's results are cast with jnp where branches disagree on weak types",
    ("transpiler.lax.control", "transpiler.transforms.autograph.runtime"):
        "under jit a branch or body runs with its own Python control flow converted",
    ("transpiler.lax.solves", "transpiler.transforms.forward.custom_jvp"):
        "custom_root and custom_linear_solve are custom_jvp functions (implicit derivatives)",
    ("transpiler.lax.solves", "transpiler.transforms.forward.api"):
        "their rules differentiate the user's function (jvp of f at the solution)",
    ("transpiler.lax.solves", "transpiler.transforms.ad.calls"):
        "their transposes call reverse mode's run-time helpers (vjp of f at the solution)",
    ("transpiler.lax.solves", "transpiler.transforms.ad.forward"):
        "and forward mode's (the tangent of a closure's value)",
    ("transpiler.lax.solves", "transpiler.transforms.ad.cotangents"):
        "whether a function value carries a derivative",
    ("transpiler.lax.solves", "transpiler.transforms.common.closures"):
        "a closure's derivative is its cells' (refusing wrappers that would hide it)",
    ("transpiler.lax.solves", "transpiler.transforms.common.arguments"):
        "a cotangent shaped like its primal",
    ("transpiler.random.distributions", "transpiler.transforms.forward.custom_jvp"):
        "gamma draws are a custom_jvp: JAX's implicit reparameterization in the shape",
    ("transpiler.lax.parallel", "transpiler.transforms.reverse.custom_vjp"):
        "the collectives are custom_vjp functions (their bwd is the transpose collective)",
}


def _layer(module: str) -> int:
    best = max(((len(name), index) for index, group in enumerate(LAYERS) for name in group
                if module == name or module.startswith(name + ".")), default=None)
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[1]


def _edges() -> list[tuple[str, str, bool]]:
    files = architecture.module_files()
    edges = []
    for imp in architecture.imports(files):
        for name in imp.names or (None,):
            target = architecture._project_target(imp.target, name, files)
            if target and target != imp.source:
                edges.append((imp.source, target, imp.lazy))
    return edges


def test_every_module_has_a_layer():
    for module in architecture.module_files():
        _layer(module)


def test_the_runtime_imports_nothing_of_the_compiler_package():
    assert [(s, t) for s, t, _ in _edges()
            if s.startswith("runtime") and t.startswith("transpiler")] == []


def test_lower_layers_do_not_import_higher_ones():
    upward = {(s, t) for s, t, _ in _edges()
              if t != "transpiler" and _layer(t) > _layer(s)}
    assert upward == set(UPWARD), "an import from a lower layer to a higher one: move the " \
        "code to the layer it belongs to, or pass the higher layer's function down"


def test_the_listed_upward_imports_are_lazy():
    eager = [(s, t) for s, t, lazy in _edges() if (s, t) in UPWARD and not lazy]
    assert eager == [("transpiler.lowering.tracer", "transpiler.array_methods")] * len(eager)


def test_import_cycles_stay_inside_a_package():
    """A cycle (imports inside functions counted) stays among one package's own modules --
    except the transforms, which call one another at run time (forward over reverse, vmap
    of grad ...) and the lax library whose control flow and collectives they differentiate
    and batch, and Array's methods with the jnp functions they are; the compiler,
    primitives, frontend, code generation, jit, pmap and the CLI are in no cycle with
    anything outside their own package."""
    files = architecture.module_files()
    for component in architecture.cycles(architecture.graph(files, architecture.imports(files))):
        packages = {str(files[m].parent) for m in component}
        if len(packages) == 1:
            continue
        assert all(m.startswith(("transpiler.transforms", "transpiler.lax")) for m in component) \
            or set(component) <= {"transpiler.array_methods"} | {
                m for m in component if m.startswith("transpiler.numpy")}, component
