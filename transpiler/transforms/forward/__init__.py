"""Forward mode as a source transform: ``jvp``, ``linearize``, ``jacfwd``, ``jacrev``,
``hessian`` (api.py), the generated ``jvp_<name>`` code (transform.py, with activity.py and
tangents.py), JVP templates and ``custom_jvp``."""
