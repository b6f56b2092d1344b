"""The XLA oracle (optional extra ``jax``)."""
