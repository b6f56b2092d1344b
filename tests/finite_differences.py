"""The twin's gradients against central finite differences, one helper for the training tests."""

from __future__ import annotations

from typing import Any

from symroof.numeric import loss_and_grads
from symroof.numeric.optimizer import _get, _leaves


def assert_gradients_match(params: Any, cfg: Any, tokens: Any, targets: Any, grads: Any,
                           rng: Any, *, per_leaf: int = 1, rel: float = 1e-5) -> None:
    """At ``per_leaf`` entries of every parameter drawn from ``rng``, the central difference
    of the loss (step 1e-6) equals ``grads`` within 1e-7 + ``rel`` of its size."""
    h = 1e-6
    for path, array in _leaves(params):
        for _ in range(per_leaf):
            i = tuple(int(rng.integers(n)) for n in array.shape)
            old = array[i]
            array[i] = old + h
            up, _ = loss_and_grads(params, cfg, tokens, targets)
            array[i] = old - h
            down, _ = loss_and_grads(params, cfg, tokens, targets)
            array[i] = old
            fd = (up - down) / (2 * h)
            assert abs(fd - _get(grads, path)[i]) < 1e-7 + rel * abs(fd), (path, i)
