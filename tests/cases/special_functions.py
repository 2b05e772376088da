"""Cases for the special-function primitives (lax/gamma_functions.py, incomplete_gamma.py,
incomplete_beta.py, bessel.py), against SciPy where it is installed.

Operands without a derivative (polygamma's order, igamma_grad_a's and random_gamma_grad's
shape, betainc's a and b) are integers here, so that the derivative-rule tests, which
differentiate every floating operand of a recorded call, leave them alone."""

import numpy as np

from transpiler import lax
from tests.cases import Case, floats, positives

try:
    import scipy.special as ss
except ImportError:  # the values are checked eager vs jit only
    ss = None


def _ref(name: str) -> object:
    return None if ss is None else getattr(ss, name)


def _rgg(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """d sample / d a by implicit differentiation of P(a, x) = u, from SciPy's values."""
    step = 1e-6 * np.maximum(a, 1)
    dp_da = (ss.gammainc(a + step, x) - ss.gammainc(a - step, x)) / (2 * step)
    density = np.exp((a - 1) * np.log(x) - x - ss.gammaln(a))
    return -dp_da / density


x = floats(2, 5, low=-6.0, high=6.0)
wide = floats(3, 4, low=-30.0, high=30.0, seed=1)
pos = positives(2, 5) * 3
shape = np.array([[1, 2, 3, 5, 9], [2, 4, 1, 7, 3]], np.int32)
order = np.array([0, 1, 2, 3, 4], np.int32)
unit = floats(2, 5, low=0.02, high=0.98, seed=2)

CASES = [
    Case("lgamma", lax.lgamma, (x,), _ref("gammaln"), rtol=1e-4, atol=1e-4),
    Case("digamma", lax.digamma, (x,), _ref("digamma"), rtol=1e-4, atol=1e-4),
    Case("polygamma", lax.polygamma, (order, pos), lambda m, v: ss.polygamma(m, v),
         rtol=1e-4, atol=1e-4),
    Case("zeta", lax.zeta, (pos + 1.5, pos), _ref("zeta"), rtol=1e-4, atol=1e-4),
    Case("igamma", lax.igamma, (pos, pos[::-1] * 2), _ref("gammainc"), rtol=1e-4, atol=1e-5),
    Case("igammac", lax.igammac, (pos, pos[::-1] * 2), _ref("gammaincc"),
         rtol=1e-4, atol=1e-5),
    Case("igamma_grad_a", lax.igamma_grad_a, (shape, pos * 2),
         None if ss is None else lambda a, v: (ss.gammainc(a + 1e-6, v)
                                               - ss.gammainc(a - 1e-6, v)) / 2e-6,
         rtol=1e-3, atol=1e-4),
    Case("random_gamma_grad", lax.random_gamma_grad, (shape, pos * 2),
         None if ss is None else _rgg, rtol=1e-3, atol=1e-4),
    Case("bessel_i0e", lax.bessel_i0e, (wide,), _ref("i0e"), rtol=1e-5, atol=1e-6),
    Case("bessel_i1e", lax.bessel_i1e, (wide,), _ref("i1e"), rtol=1e-5, atol=1e-6),
    Case("regularized_incomplete_beta", lax.betainc, (shape, shape[::-1], unit),
         _ref("betainc"), rtol=1e-4, atol=1e-5),
]
