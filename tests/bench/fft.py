"""FFTs under jit against NumPy (pocketfft) and jax.jit (ducc on CPU): a real FFT of 2^20
points (IREE's own stablehlo.fft), a batch of complex FFTs of a power-of-two length, a
composite length (1000 = 25 x 40, the four-step split over DFT-matrix products), a prime
one (Bluestein) and a 2-D transform (one axis at a time, since IREE takes one).

Run directly (``python tests/bench/fft.py``) or as part of ``run.py``. Rows are checked
against NumPy before timing.
"""

from __future__ import annotations

import numpy as np

import transpiler.numpy as tnp
from run import bench, jax

if jax is not None:
    import jax.numpy as jjnp


def main() -> None:
    rng = np.random.default_rng(0)
    signal = rng.standard_normal(1 << 20).astype(np.float32)
    bench("rfft 2^20 (IREE stablehlo.fft)", np.fft.rfft, (signal,), tnp.fft.rfft,
          jjnp.fft.rfft if jax else None)
    batch = (rng.standard_normal((64, 1024)) + 1j * rng.standard_normal((64, 1024))
             ).astype(np.complex64)
    bench("fft 64 x 1024 complex", np.fft.fft, (batch,), tnp.fft.fft,
          jjnp.fft.fft if jax else None)
    for n, how in ((1000, "four-step 25 x 40"), (1009, "prime: Bluestein")):
        x = rng.standard_normal((64, n)).astype(np.float32)
        bench(f"rfft 64 x {n} ({how})", np.fft.rfft, (x,), tnp.fft.rfft,
              jjnp.fft.rfft if jax else None)
    image = rng.standard_normal((256, 256)).astype(np.float32)
    bench("rfft2 256 x 256", np.fft.rfft2, (image,), tnp.fft.rfft2,
          jjnp.fft.rfft2 if jax else None)


if __name__ == "__main__":
    main()
