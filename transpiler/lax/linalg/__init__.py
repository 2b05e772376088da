"""``lax.linalg``: matrix factorizations and solvers, as primitives.

IREE has no LAPACK, so each is a primitive with two forms: eagerly its ``impl`` runs
NumPy (LAPACK, or a vectorized substitution), and under a trace its ``composite`` stages
the algorithm as `lax` loops of matrix-vector products or plane rotations, batched over
leading dimensions. Being primitives, they carry their own derivative rules (JAX's
formulas) and batching rules, declared next to them as every primitive's are.

- triangular.py: ``cholesky``, ``triangular_solve``;
- lu.py: ``lu`` (partial pivoting), ``linear_solve``, ``logabsdet``, ``det_sign``;
- qr.py: ``qr`` (Householder);
- spectral.py: ``eigh`` and ``svd`` (Jacobi rotations);
- nonsymmetric.py: ``eig`` of a general matrix, by LAPACK on the host (as JAX, on CPU only).
"""

from transpiler.lax.linalg.nonsymmetric import eig
from transpiler.lax.linalg.lu import det_sign, linear_solve, logabsdet, lu
from transpiler.lax.linalg.qr import qr
from transpiler.lax.linalg.spectral import eigh, svd
from transpiler.lax.linalg.triangular import cholesky, triangular_solve

__all__ = ["cholesky", "det_sign", "eig", "eigh", "linear_solve", "logabsdet", "lu", "qr", "svd",
           "triangular_solve"]
