"""The primitive registry: importing this package registers every primitive, each with all
of its rules (its family's module declares them together).

``REGISTRY`` maps names to `Primitive` objects; tests iterate it so that a primitive
without a rule fails loudly.
"""

from transpiler.primitives import (conversions, convolution, dot, elementwise,  # noqa: F401
                                   indexing, reductions, shape, sorting, windows)
from transpiler.primitives.core import REGISTRY, Primitive, ShapedArray, bind

__all__ = ["REGISTRY", "Primitive", "ShapedArray", "bind"]
