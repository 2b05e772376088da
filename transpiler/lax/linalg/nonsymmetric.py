"""The eigendecomposition of a general (non-symmetric) matrix, as primitives.

``A V = V diag(w)`` and ``VL^H A = diag(w) VL^H``: eigenvalues `w` and right and left
eigenvectors (columns), complex even for a real `a`. Each eigenvector has unit 2-norm and
its largest-magnitude component real (LAPACK's ``geev`` convention, JAX's answer on CPU).

Like JAX, which has ``eig`` on CPU only and calls LAPACK there, this calls LAPACK (NumPy)
on the host: eagerly at once, and under a trace through one host call per operand
(`pure_callback`) that every primitive reading the decomposition shares. There is no
compiled form: a QR iteration with complex shifts is not written here yet.

Four primitives read that one decomposition: ``eig_values``, ``eig_vectors`` (right),
``eig_left_vectors`` and ``eig_vectors_inverse`` (``V^-1``, which the derivative rules
read). Derivatives are JAX's (arXiv 1701.00392, eq. 4.60; Giles 2008, sec. 3.1 for the
vectors): the eigenvalues' always; the eigenvectors' (right and left) only when asked for
with ``enable_eigvec_derivs=True`` (they hold under assumptions JAX cannot check, distinct
eigenvalues among them), otherwise an error.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import dtypes
from transpiler.lax.linalg.common import host_call, traced_once
from transpiler.numpy.creation import asarray
from transpiler.primitives.batching import leading_batch_rule
from transpiler.primitives.core import ShapedArray, abstractify, define, dtype_error, shape_error
from transpiler.primitives.jvp_template import jvp_template
from transpiler.primitives.vjp_template import vjp_template

_PIECES = ("values", "left", "right", "inverse")


def _check(name: str, a: ShapedArray) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise shape_error(f"{name}: expected a square matrix (or a batch of them, shape "
                          f"(..., n, n)), got shape {list(a.shape)}")
    if a.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise dtype_error(f"{name}: expected a float32, float64, complex64 or complex128 "
                          f"matrix, got {a.dtype}", "convert it with .astype(jnp.float32) first")


def _complex(dtype: np.dtype) -> np.dtype:
    return np.dtype(dtypes.complex_dtype(dtypes.real_dtype(np.dtype(dtype))))


def _largest_real(v: np.ndarray) -> np.ndarray:
    """Columns scaled to unit norm with their largest-magnitude component real (positive)."""
    v = v / np.linalg.norm(v, axis=-2, keepdims=True)
    k = np.argmax(np.abs(v), axis=-2)[..., None, :]
    top = np.take_along_axis(v, k, axis=-2)
    return v * (np.conj(top) / np.where(top == 0, 1, np.abs(top)))


def decomposition(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(w, VL, VR, VR^-1) of each matrix of `a`, in `a`'s complex type, by LAPACK; NaN
    for a matrix holding inf or NaN (LAPACK refuses it; JAX's answer)."""
    out = _complex(a.dtype)
    finite = np.isfinite(a).all(axis=(-2, -1))[..., None, None]
    w, vr = np.linalg.eig(np.where(finite, a, 0))
    nan = complex(np.nan, np.nan)
    w = np.where(finite[..., 0], w, nan).astype(out)
    vr = np.where(finite, vr, nan).astype(out)
    with np.errstate(all="ignore"):
        try:
            inverse = np.linalg.inv(vr)
        except np.linalg.LinAlgError:  # a defective matrix: no basis of eigenvectors
            inverse = np.full(vr.shape, np.nan, out)
        left = _largest_real(np.conj(np.swapaxes(inverse, -1, -2)))
    return w, left, vr, inverse


def _staged(a: Any) -> tuple[Any, ...]:
    aval = abstractify(a)
    out = _complex(aval.dtype)
    return tuple(host_call(decomposition, [ShapedArray(aval.shape[:-1], out),
                                           *(ShapedArray(aval.shape, out) for _ in range(3))],
                           a))


def _piece(name: str, a: Any) -> Any:
    return traced_once("eig", _staged, a)[_PIECES.index(name)]


def _define(name: str, piece: str, doc: str) -> Any:
    # (the vectors have a param, ``enable_eigvec_derivs``, that only their rules read)
    def abstract_eval(a: ShapedArray, **params: Any) -> ShapedArray:
        _check("eig", a)
        shape = a.shape[:-1] if piece == "values" else a.shape
        return ShapedArray(shape, _complex(a.dtype))

    def impl(a: np.ndarray, **params: Any) -> np.ndarray:
        return decomposition(a)[_PIECES.index(piece)]

    prim = define(name, impl=impl, abstract_eval=abstract_eval,
                  composite=lambda a, **params: _piece(piece, a), doc=doc)
    return prim.def_rules(batch=leading_batch_rule(prim))


eig_values_p = _define("eig_values", "values", "The eigenvalues of a general `a` (complex).")
eig_vectors_p = _define("eig_vectors", "right",
                        "The right eigenvectors (columns) of a general `a`, LAPACK's.")
eig_left_vectors_p = _define("eig_left_vectors", "left",
                             "The left eigenvectors (columns) of a general `a`.")
eig_vectors_inverse_p = _define("eig_vectors_inverse", "inverse",
                                "The inverse of the matrix of right eigenvectors of `a`.")


# --- rules (JAX's; the vectors' have 1 / (w_j - w_i), infinite when repeated) -------------

eig_values_p.def_rules(
    jvp=jvp_template(("a",), a="ad.eig_values_tangent(a_dot, a)"),
    vjp=vjp_template(("a",), "a_bar = ad.eig_values_cotangent(out_bar, a)"))
eig_vectors_p.def_rules(
    jvp=jvp_template(("a",), a="ad.eig_vectors_tangent(a_dot, a, out, enable_eigvec_derivs)"),
    vjp=vjp_template(("a",), """
a_bar = ad.eig_vectors_cotangent(out_bar, a, out, enable_eigvec_derivs)
"""))
eig_vectors_inverse_p.def_rules(
    jvp=jvp_template(("a",), a="ad.eig_vectors_inverse_tangent(a_dot, a, out)"),
    vjp=vjp_template(("a",), "a_bar = ad.eig_vectors_inverse_cotangent(out_bar, a, out)"))
eig_left_vectors_p.def_rules(
    jvp=jvp_template(("a",), a="ad.eig_left_vectors_tangent(a_dot, a, out, "
                               "enable_eigvec_derivs)"),
    vjp=vjp_template(("a",), """
a_bar = ad.eig_left_vectors_cotangent(out_bar, a, out, enable_eigvec_derivs)
"""))


def eigensystem(a: Any) -> tuple[Any, Any, Any]:
    """(w, V, V^-1) of `a`, each differentiable to any order (the vectors' derivatives
    enabled): what the derivative rules and the functions of a matrix are written in."""
    return (eig_values_p(a), eig_vectors_p(a, enable_eigvec_derivs=True),
            eig_vectors_inverse_p(a))


# --- the lax.linalg function ----------------------------------------------------------------

def eig(x: Any, *, compute_left_eigenvectors: bool = True,
        compute_right_eigenvectors: bool = True, enable_eigvec_derivs: bool = False,
        implementation: Any = None, use_magma: Any = None) -> list:
    """``lax.linalg.eig``: ``[w, vl, vr]`` of each matrix of `x` (shape ``(..., n, n)``),
    without the vectors not asked for. Eigenvector derivatives need
    ``enable_eigvec_derivs=True`` (JAX's rule)."""
    x = asarray(x)
    out = [eig_values_p(x)]
    if compute_left_eigenvectors:
        out.append(eig_left_vectors_p(x, enable_eigvec_derivs=bool(enable_eigvec_derivs)))
    if compute_right_eigenvectors:
        out.append(eig_vectors_p(x, enable_eigvec_derivs=bool(enable_eigvec_derivs)))
    return out
