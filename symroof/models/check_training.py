"""``check_training``: run one counted NumPy training step and compare it with
:func:`~symroof.models.training.train_ops` and the kept activations with
:func:`~symroof.models.training_memory.saved_activations`, exactly.

The NumPy side (:mod:`symroof.numeric`: forward, loss, hand-written backward, remat, Adam)
counts from the arrays it touches and never sees a formula. Kept activations appear as rows
``saved/<key>`` whose activation bytes are compared (their other quantities are 0).

>>> import symroof as sr
>>> report = sr.check_training(sr.model("tiny"), batch=2, seq=4, remat="selective")
>>> report.ok, report.rows[:2], report.rows[-1]
(True, ['fwd/embed', 'fwd/attn_norm'], 'saved/loss')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..conventions import using
from ..cost import as_dimension
from .check import QUANTITIES, CheckReport, _int, _numeric_config, _widths, mismatches_of
from .training import train_ops
from .training_memory import _policy
from .transformer import Transformer

__all__ = ["check_training"]


def _float64_bytes(cfg: Any, B: int, S: int) -> int:
    """Rough peak memory of the NumPy step in float64: parameters with their gradient, two
    moments and a master copy; every layer's activations with the S x S matrices."""
    params = cfg.L * (cfg.D * (cfg.H + 2 * cfg.G) * cfg.d_h + cfg.H * cfg.d_h * cfg.D
                      + 3 * cfg.D * cfg.F) + 2 * cfg.V * cfg.D
    if cfg.moe is not None:  # every routed expert's and the shared one's matrices
        params += cfg.L * 3 * cfg.D * (cfg.moe.E * cfg.moe.F + cfg.moe.shared_F)
    per_layer = B * S * (6 * cfg.D + 3 * cfg.F + 3 * (cfg.H + cfg.G) * cfg.d_h)
    acts = cfg.L * (per_layer + 3 * B * cfg.H * S * S) + 4 * B * S * (cfg.D + cfg.V)
    return 8 * (5 * params + acts)


def _width(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
        raise ValueError(f"check_training counts whole bytes per element; {name} must be a "
                         f"positive integer, got {value!r}")
    return int(value)


def check_training(model: Transformer, batch: int, seq: int,
                   remat: str | tuple[str, ...] = "none", *,
                   grad_bytes: int | None = None, moment_bytes: int = 4,
                   master_bytes: int = 0, seed: int = 0,
                   max_bytes: int = 2**31) -> CheckReport:
    """Run one NumPy training step (``batch`` random sequences of ``seq`` tokens, random
    targets, naive attention, Adam) and compare every row's five figures with
    ``train_ops(model, batch, seq, remat, ...)``, and every kept activation with
    ``saved_activations(model, batch, seq, remat)``, by exact integer equality (under
    symroof's own conventions, the accounting the twin executes).

    ``remat``: a policy name or a tuple of kept tensors (both sides derive what to rerun
    on their own). ``grad_bytes`` defaults to the model's ``w_bytes``; ``master_bytes`` = 0
    runs Adam
    without a master copy. A run estimated to need more than ``max_bytes`` (float64) is
    refused with the estimate.

    >>> import symroof as sr
    >>> check_training(sr.model("tiny"), batch=2, seq=8, remat="full").ok
    True
    """
    from ..numeric import Adam, Counter, init_params, train_step
    from .training_memory import saved_activations

    B = int(as_dimension(batch, "batch"))
    S = int(as_dimension(seq, "seq"))
    remat = _policy(remat, "naive")  # a policy name or a tuple of kept tensors
    cfg = _numeric_config(model)
    widths = _widths(model)
    gb = widths["w_bytes"] if grad_bytes is None else _width(grad_bytes, "grad_bytes")
    mb = _width(moment_bytes, "moment_bytes")
    if isinstance(master_bytes, bool) or not isinstance(master_bytes, int) or master_bytes < 0:
        raise ValueError(f"master_bytes must be 0 (no master copy) or a positive integer, "
                         f"got {master_bytes!r}")
    need = _float64_bytes(cfg, B, S)
    if need > max_bytes:
        raise ValueError(f"check_training({model.name}, batch={B}, seq={S}) would need about "
                         f"{need / 2**30:.1f} GiB in float64 (limit {max_bytes / 2**30:.1f} "
                         "GiB; raise it with max_bytes=...): use a smaller model or step")
    params = init_params(cfg, seed=seed)
    rng = np.random.default_rng(seed)
    tokens, targets = rng.integers(0, cfg.V, size=(2, B, S))
    counter = Counter(**widths, grad_bytes=gb, moment_bytes=mb, master_bytes=master_bytes or None)
    opt = Adam(params, master=master_bytes > 0)
    trace = [] if model.moe is not None else None  # the twin's routing, per MoE layer
    train_step(params, cfg, tokens, targets, opt, remat=remat, counter=counter, trace=trace)

    with using("symroof"):  # the accounting the twin executes, whatever is in force
        rows = train_ops(model, B, S, remat, grad_bytes=gb, moment_bytes=mb,
                         master_bytes=master_bytes,
                         tokens_per_expert=None if trace is None else [
                             [int(t) for t in layer] for layer in trace])
        saved = saved_activations(model, B, S, remat)
    symbolic = {op: {q: _int(getattr(cost, q), f"{op}.{q}") for q in QUANTITIES}
                for op, cost in rows.items()}
    counted = {op: {q: int(r[q]) for q in QUANTITIES} for op, r in counter.rows.items()}
    zero = dict.fromkeys(QUANTITIES, 0)
    for key, value in saved.items():
        symbolic[f"saved/{key}"] = zero | {"act_bytes": _int(value, f"saved/{key}")}
    for key, value in counter.saved.items():
        counted[f"saved/{key}"] = zero | {"act_bytes": int(value)}
    for side in (symbolic, counted):  # a tensor one side does not keep: 0 bytes there
        for key in [k for k in [*symbolic, *counted] if k.startswith("saved/")]:
            side.setdefault(key, zero)
    mismatches = mismatches_of(counted, symbolic)
    label = (f"{model.name} training step: batch={B}, seq={S}, remat={remat}, "
             f"grad_bytes={gb}, moment_bytes={mb}, master_bytes={master_bytes}")
    return CheckReport(label=label, counted=counted, symbolic=symbolic, mismatches=mismatches)
