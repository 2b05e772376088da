"""Our public names against JAX 0.10.2's (the lists are data in tests/jax_public_names.py,
so this runs without JAX): every name JAX has is here, or listed below with the reason it
is left out. A new gap fails, and so does a listed name that now exists (take it off the
list)."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "jax_public_names", Path(__file__).with_name("jax_public_names.py"))
assert _spec is not None and _spec.loader is not None
_names = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_names)
JAX_NAMES: dict[str, tuple[str, ...]] = _names.NAMES

OURS = {"jax": "transpiler", "jax.numpy": "transpiler.numpy",
        "jax.numpy.linalg": "transpiler.numpy.linalg", "jax.numpy.fft": "transpiler.numpy.fft",
        "jax.lax": "transpiler.lax", "jax.nn": "transpiler.nn",
        "jax.nn.initializers": "transpiler.initializers", "jax.tree_util": "transpiler.tree_util",
        "jax.tree": "transpiler.tree", "jax.random": "transpiler.random",
        "jax.debug": "transpiler.debug", "jax.scipy.special": "transpiler.scipy.special",
        "jax.scipy.linalg": "transpiler.scipy.linalg",
        "jax.scipy.stats.norm": "transpiler.scipy.stats.norm",
        "jax.flatten_util": "transpiler.flatten_util",
        "jax.example_libraries.stax": "transpiler.example_libraries.stax",
        "jax.example_libraries.optimizers": "transpiler.example_libraries.optimizers",
        "jax.errors": "transpiler.errors", "jax.ad_checkpoint": "transpiler.ad_checkpoint"}


def _reasons(reason: str, names: str) -> dict[str, str]:
    return {name: reason for name in names.split()}


SPMD = "Mesh/NamedSharding/shard_map SPMD: issue 23"
CONFIG = "a JAX config flag as a context manager: not yet (config.update covers ours)"
INTERNAL = "JAX's internals or its interfaces to XLA/jaxlib, not a user API here"
REFS = "JAX's experimental mutable array references: no counterpart in generated code yet"
NOT_YET = "not built yet"
LOW_PRECISION = "sub-byte and 8-bit float dtypes: IREE 3.13 has no arithmetic on them here"
FILES = "NumPy file I/O (np.load/np.save work on our arrays as NumPy arrays)"
COMPOSITE = ("built here from other primitives or as control flow, so there is no such "
             "Primitive object to export (transpiler/lax/primitive_objects.py)")
UNSUPPORTED_LAX = "not built here: tokens, XLA's stateful RNG, ragged collectives, staging"

LEFT_OUT: dict[str, dict[str, str]] = {
    "jax": {
        **_reasons(SPMD, "remove_size_one_mesh_axis_from_type auto_pcast distributed"),
        **_reasons(REFS, "Ref new_ref empty_ref free_ref freeze ref"),
        **_reasons(CONFIG, "allow_f16_reductions array_garbage_collection_guard "
                           "check_tracer_leaks checking_leaks debug_infs debug_key_reuse "
                           "debug_nans default_device default_prng_impl enable_checks "
                           "enable_custom_prng explain_cache_misses legacy_prng_key "
                           "log_compiles no_execution no_tracing numpy_dtype_promotion "
                           "numpy_rank_promotion threefry_partitionable transfer_guard "
                           "transfer_guard_device_to_device transfer_guard_device_to_host "
                           "transfer_guard_host_to_device jax2tf_associative_scan_reductions "
                           "softmax_custom_jvp thread_guard"),
        **_reasons(INTERNAL, "ad api_util core interpreters lib stages typing ops "
                             "export ffi dlpack profiler monitoring memory "
                             "custom_batching custom_derivatives make_user_context "
                             "live_arrays effects_barrier"),
        **_reasons(NOT_YET, "closure_convert custom_gradient float0 "
                            "copy_to_host_async fwd_and_bwd ds image"),
    },
    "jax.numpy": {
        **_reasons(LOW_PRECISION, "float4_e2m1fn float6_e2m3fn float6_e3m2fn float8_e3m4 "
                                  "float8_e4m3 float8_e4m3b11fnuz float8_e4m3fn "
                                  "float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz float8_e8m0fnu "
                                  "int1 int2 int4 uint1 uint2 uint4"),
        **_reasons(FILES, "fromfile load save savez"),
    },
    "jax.lax": {
        **_reasons(COMPOSITE, "acos_p acosh_p asin_p asinh_p atanh_p cosh_p sinh_p "
                              "broadcast_in_dim_p clamp_p clz_p cond_p cumlogsumexp_p "
                              "erf_inv_p erf_p erfc_p exp2_p gather_p linear_solve_p "
                              "mulhi_p nextafter_p population_count_p reduce_p "
                              "reduce_precision_p reduce_window_p reduce_xor_p rem_p round_p "
                              "scan_p scatter_add_p scatter_max_p scatter_min_p "
                              "scatter_mul_p scatter_p scatter_sub_p select_and_scatter_p "
                              "select_n_p shift_right_arithmetic_p shift_right_logical_p "
                              "split_p square_p squeeze_p stack_p tile_p top_k_p unstack_p "
                              "while_p all_gather_p axis_index_p pmax_p pmin_p ppermute_p "
                              "psum_p eq_to_p le_to_p lt_to_p approx_top_k_p"),
        **_reasons(UNSUPPORTED_LAX, "after_all after_all_p create_token create_token_p "
                                    "rng_bit_generator rng_bit_generator_p rng_uniform "
                                    "rng_uniform_p ragged_all_to_all ragged_all_to_all_p "
                                    "ragged_dot_general stage stage_p dce_sink dce_sink_p "
                                    "copy_p device_put_p sharding_constraint_p"),
        **_reasons(COMPOSITE, "all_to_all_p"),
        **_reasons(SPMD, "pbroadcast pcast precv psend pshuffle "
                         "pswapaxes"),
        **_reasons(NOT_YET, "AccuracyMode ConvGeneralDilatedDimensionNumbers DotAlgorithm "
                            "RaggedDotDimensionNumbers RandomAlgorithm Tolerance "
                            "scaled_dot scatter_apply"),
    },
    "jax.random": {"random_gamma_p": COMPOSITE},
    "jax.debug": {
        **_reasons(NOT_YET, "breakpoint log"),
        **_reasons(INTERNAL, "DebugEffect OrderedDebugEffect"),
    },
    "jax.scipy.linalg": _reasons("a real Schur form (LAPACK's gees, CPU only in JAX): not "
                                 "built yet; sqrtm, funm and solve_sylvester go through eig",
                                 "hessenberg rsf2csf schur"),
    "jax.errors": _reasons("an error kind we do not raise (yet): JAX's runtime, index, "
                           "jaxpr and key-reuse errors", "InconclusiveDimensionOperation "
                           "JAXIndexError JAXTypeError JaxRuntimeError JaxprTypeError "
                           "KeyReuseError NonConcreteBooleanIndexError"),
    "jax.ad_checkpoint": _reasons("checkpoint policies' internal markers: not used by our "
                                  "recomputation (transpiler/ad_checkpoint.py)",
                                  "Offloadable Recompute Saveable print_saved_residuals"),
}


def _ours(name: str):
    module = importlib.import_module(name)
    return module


@pytest.mark.parametrize("jax_module", sorted(JAX_NAMES))
def test_every_jax_name_is_here_or_left_out_with_a_reason(jax_module):
    ours = _ours(OURS[jax_module])
    left_out = LEFT_OUT.get(jax_module, {})
    missing = sorted(n for n in JAX_NAMES[jax_module] if not hasattr(ours, n)
                     and n not in left_out)
    assert not missing, f"{OURS[jax_module]} lacks JAX's {missing}: add them, or list them " \
                        "in LEFT_OUT with the reason"
    built = sorted(n for n in left_out if hasattr(ours, n))
    assert not built, f"{built} exist now in {OURS[jax_module]}: take them off LEFT_OUT"
    unknown = sorted(n for n in left_out if n not in JAX_NAMES[jax_module])
    assert not unknown, f"LEFT_OUT lists {unknown}, which JAX's {jax_module} does not have"


def test_the_coverage():
    """What share of each module's names we have (printed with -s; asserted above)."""
    for jax_module, names in sorted(JAX_NAMES.items()):
        ours = _ours(OURS[jax_module])
        have = sum(hasattr(ours, n) for n in names)
        print(f"{jax_module:36} {have:4}/{len(names):4} ({100 * have / len(names):.0f}%)")
        assert have >= len(names) - len(LEFT_OUT.get(jax_module, {}))
