"""Reverse mode as a source transform: ``grad``, ``value_and_grad``, ``vjp`` (api.py), the
generated ``vjp_<name>`` code (transform.py, adjoints.py), VJP templates and ``custom_vjp``."""
