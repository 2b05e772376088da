"""What the distributions of `transpiler.scipy.stats` share: JAX's promotion of their
arguments to one inexact dtype (scipy/promotion.py), and ``-inf`` outside a support."""

from __future__ import annotations

from typing import Any

import numpy as np

from transpiler import numpy as jnp
from transpiler.scipy.promotion import promote_inexact  # noqa: F401 (re-exported)


def outside(condition: Any, value: Any, fill: float = -np.inf) -> Any:
    """`value`, with `fill` where `condition` holds."""
    return jnp.where(condition, jnp.full_like(value, fill), value)
