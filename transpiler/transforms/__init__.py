"""Program transformations on Python source (reverse-mode AD first).

Submodules are imported on demand: ``templates`` (per-primitive VJP templates) and
``adjoint_helpers`` (the ``ad`` namespace those templates call). Importing this package
loads nothing heavy, so ``import transpiler`` stays fast.
"""
