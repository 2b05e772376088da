"""The primitive registry: importing this package registers every primitive.

``REGISTRY`` maps names to `Primitive` objects; tests iterate it so that a primitive
without a rule fails loudly.
"""

from transpiler.primitives import (conversions, dot, elementwise, indexing,  # noqa: F401
                                   reductions, shape, sorting)
from transpiler.primitives.core import REGISTRY, Primitive, ShapedArray, bind

__all__ = ["REGISTRY", "Primitive", "ShapedArray", "bind"]

from transpiler.primitives import derivatives  # noqa: E402,F401  (prim.jvp, prim.vjp)
from transpiler.primitives import (  # noqa: E402,F401  (fill prim.batch)
    batch_elementwise, batch_indexing, batch_reductions, batch_shape)
from transpiler.primitives import windows, batch_windows  # noqa: E402,F401  (reduce_window)
from transpiler.primitives import (  # noqa: E402,F401  (conv_general_dilated)
    batch_convolution, convolution)
