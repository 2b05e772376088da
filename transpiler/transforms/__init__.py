"""Program transformations on Python source, one package per transform.

The pipeline: the frontend (transpiler/frontend) turns a function into canonical ANF code;
a transform rewrites that code into the Python of its derivative or batched program, and
the generated code calls a small run-time namespace of its own:

- ``reverse/``: ``grad``/``vjp`` (reverse mode: SSA, activity, adjoint rules, tapes) -> ``vjp_<name>``
- ``forward/``: ``jvp``/``jacfwd``/``jacrev``/``hessian`` (forward mode) -> ``jvp_<name>``
- ``batch/``: ``vmap`` -> ``vmap_<name>``
- ``autograph/``: Python ``if``/``while``/``for`` on traced values -> ``lax`` control flow (``jit``)
- ``ad/``: the ``ad.`` namespace generated derivative code calls (and the run-time rules of
  ``lax`` control flow and of batched functions under differentiation)
- ``bt/``: the ``bt.`` namespace generated batched code calls (batching rules dispatched at
  run time: primitives, control flow, collectives, structural helpers)
- ``common/``: what the transforms share (statement classification, SSA renaming,
  closures, partials, callables, tracing what has no source)

Submodules are imported on demand: importing this package loads nothing heavy, so
``import transpiler`` stays fast.
"""
