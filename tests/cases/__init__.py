"""Sample calls for every primitive, grouped by family, checked by tests/test_registry.py.

Each family module exports ``CASES: list[Case]``. A case names the primitive it exercises
(``prim``), a `transpiler.numpy`-level function, its arguments (NumPy values) and a NumPy
reference. The registry test checks, for every case:

- eager result == NumPy reference (values),
- jit result (IREE llvm-cpu) == eager result (values, dtype, shape) -- all cases of a family
  compiled into ONE module so the suite compiles little,
- every registered primitive has at least one case.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np


@dataclass
class Case:
    prim: str
    fn: Callable[..., Any]
    args: tuple
    ref: Optional[Callable[..., Any]] = None
    rtol: float = 1e-5
    atol: float = 1e-6
    name: str = ""
    jit: bool = True          # False only when the case cannot be staged (say why in name)
    kwargs: dict = field(default_factory=dict)

    def label(self) -> str:
        shapes = ",".join(f"{np.asarray(a).dtype}{list(np.shape(a))}" for a in self.args)
        return f"{self.prim}:{self.name or shapes}"


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def floats(*shape: int, dtype: Any = np.float32, low: float = -2.0, high: float = 2.0,
           seed: int = 0) -> np.ndarray:
    return rng(seed).uniform(low, high, size=shape).astype(dtype)


def positives(*shape: int, dtype: Any = np.float32, seed: int = 0) -> np.ndarray:
    return rng(seed).uniform(0.1, 3.0, size=shape).astype(dtype)


def ints(*shape: int, dtype: Any = np.int32, low: int = -5, high: int = 6,
         seed: int = 0) -> np.ndarray:
    return rng(seed).integers(low, high, size=shape).astype(dtype)


def bools(*shape: int, seed: int = 0) -> np.ndarray:
    return rng(seed).integers(0, 2, size=shape).astype(bool)
