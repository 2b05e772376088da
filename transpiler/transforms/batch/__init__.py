"""Batching as a source transform: ``vmap`` (api.py) and the generated ``vmap_<name>`` code
(transform.py); what that code calls at run time is the ``bt`` package."""
