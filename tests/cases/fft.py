"""Cases for the FFT primitive: every FftType, one to three axes, IREE's native lengths
(power-of-two, single precision) and the composite ones (DFT matrix, four-step, Bluestein)."""

import numpy as np

from transpiler import lax
from tests.cases import Case, floats
from tests.cases.complex_numbers import complexes

z, x = complexes(2, 8), floats(2, 12)
z3 = complexes(2, 3, 5, seed=2)


def _fft(fft_type: str, lengths: tuple) -> object:
    return lambda a: lax.fft(a, fft_type, lengths)


CASES = [
    Case("fft", _fft("FFT", (8,)), (z,), lambda a: np.fft.fft(a), rtol=1e-5, atol=1e-5),
    Case("fft", _fft("IFFT", (2, 8)), (z,), lambda a: np.fft.ifft2(a), rtol=1e-5, atol=1e-5),
    Case("fft", _fft("RFFT", (12,)), (x,), lambda a: np.fft.rfft(a), rtol=1e-5, atol=1e-5),
    Case("fft", _fft("IRFFT", (2, 3, 8)), (z3,), lambda a: np.fft.irfftn(a, s=(2, 3, 8)),
         rtol=1e-5, atol=1e-5),
    Case("fft", _fft("FFT", (300,)), (complexes(300, seed=3),), lambda a: np.fft.fft(a),
         rtol=1e-4, atol=1e-4, name="four-step"),
    Case("fft", _fft("RFFT", (257,)), (floats(257, seed=4),), lambda a: np.fft.rfft(a),
         rtol=1e-4, atol=1e-4, name="Bluestein"),
]
