"""Parallelism: sharding notation and sharded ops on a mesh."""
