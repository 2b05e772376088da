"""Python control flow on traced values as ``lax`` control flow (``jit``): the conversion
(convert.py, analysis.py, state.py), its errors, its disk cache and what converted code
calls at run time (runtime.py, ``_cf``)."""
