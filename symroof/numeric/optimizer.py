"""Adam, counted, and one whole training step (loss, gradients, update).

Adam per parameter (docs/accounting.md, "Training"): m = b1 m + (1 - b1) g (3 FLOPs),
v = b2 v + (1 - b2) g^2 (4), m / (1 - b1^t) and v / (1 - b2^t) (2), sqrt, + eps, divide
(3), p - lr * update (2): 14 FLOPs. The bias corrections are scalars of the step, computed
once in Python and not counted. Reads the parameter (or its master copy), gradient and both
moments; writes them back (and, with a master copy, the parameter cast from it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .config import Config
from .counter import Counter
from .primitives import PLAIN
from .train import loss_and_grads

__all__ = ["Adam", "train_step"]


def _leaves(tree: Any, path: tuple = ()) -> Iterator[tuple[tuple, np.ndarray]]:
    """(path, array) for every array of nested dicts and lists, in a fixed order."""
    if isinstance(tree, np.ndarray):
        yield path, tree
    elif isinstance(tree, dict):
        for key, value in tree.items():
            yield from _leaves(value, path + (key,))
    else:
        for i, value in enumerate(tree):
            yield from _leaves(value, path + (i,))


def _get(tree: Any, path: tuple) -> Any:
    for key in path:
        tree = tree[key]
    return tree


def _set(tree: Any, path: tuple, value: np.ndarray) -> None:
    _get(tree, path[:-1])[path[-1]] = value


class Adam:
    """Adam's state for ``params``: two moments per parameter (float64), the step count
    and, with ``master=True``, a float64 master copy of the parameters.

    >>> from symroof.numeric import TINY, count_params, init_params
    >>> params = init_params(TINY)
    >>> opt, counter = Adam(params, lr=1e-2), Counter(w_bytes=2, grad_bytes=2, moment_bytes=4)
    >>> opt.step(params, init_params(TINY, seed=1), counter)   # any tree shaped like params
    >>> row = counter.rows["optimizer/adam"]
    >>> row["flops"] == 14 * count_params(params), row["weight_bytes"] // count_params(params)
    (True, 22)
    """

    def __init__(self, params: dict[str, Any], lr: float = 1e-3, b1: float = 0.9,
                 b2: float = 0.999, eps: float = 1e-8, master: bool = False):
        self.lr, self.b1, self.b2, self.eps, self.t = lr, b1, b2, eps, 0
        leaves = list(_leaves(params))
        self.m = {path: np.zeros_like(p, dtype=np.float64) for path, p in leaves}
        self.v = {path: np.zeros_like(p, dtype=np.float64) for path, p in leaves}
        self.master = ({path: p.astype(np.float64) for path, p in leaves} if master else None)

    def step(self, params: dict[str, Any], grads: dict[str, Any],
             counter: Counter | None = None) -> None:
        """Update ``params`` in place from ``grads`` (counted under ``optimizer/adam``)."""
        self.t += 1
        b1, b2, lr, eps = self.b1, self.b2, self.lr, self.eps
        bc1, bc2 = 1 - b1**self.t, 1 - b2**self.t  # scalars of the step: not counted
        with (PLAIN if counter is None else counter.op("optimizer/adam")) as ops:
            for path, p in list(_leaves(params)):
                g, m, v = _get(grads, path), self.m[path], self.v[path]
                src = p if self.master is None else self.master[path]
                ops.read(src, "weight" if self.master is None else "master")
                ops.read(g, "grad")
                ops.read(m, "moment")
                ops.read(v, "moment")
                m = ops.add(ops.mul(m, b1), ops.mul(g, 1 - b1))  # 3
                v = ops.add(ops.mul(v, b2), ops.mul(ops.mul(g, g), 1 - b2))  # 4
                update = ops.div(ops.div(m, bc1), ops.add(ops.sqrt(ops.div(v, bc2)), eps))  # 5
                new = ops.sub(src, ops.mul(update, lr))  # 2
                self.m[path], self.v[path] = m, v
                ops.write(m, "moment")
                ops.write(v, "moment")
                if self.master is not None:
                    self.master[path] = new
                    ops.write(new, "master")
                new = new.astype(p.dtype)  # the parameter (cast from the master): 0 FLOPs
                _set(params, path, new)
                ops.write(new, "weight")


def train_step(params: dict[str, Any], cfg: Config, tokens: Any, targets: Any, opt: Adam,
               remat: str = "none", counter: Counter | None = None,
               trace: list | None = None) -> float:
    """One step: loss and gradients (:func:`loss_and_grads`), then ``opt.step``; returns
    the loss before the update (``trace``: the MoE routing, as loss_and_grads gives it).

    >>> from symroof.numeric import TINY, init_params
    >>> params = init_params(TINY)
    >>> opt = Adam(params, lr=1e-2)
    >>> tokens = np.arange(8).reshape(1, 8)
    >>> first = train_step(params, TINY, tokens, tokens + 1, opt, remat="full")
    >>> train_step(params, TINY, tokens, tokens + 1, opt) < first
    True
    """
    loss, grads = loss_and_grads(params, cfg, tokens, targets, remat=remat, counter=counter,
                                 trace=trace)
    opt.step(params, grads, counter)
    return loss
