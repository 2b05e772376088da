"""``jax.example_libraries``: the small neural-network (`stax`) and optimizer
(`optimizers`) libraries JAX's example programs are written with."""
