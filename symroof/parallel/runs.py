"""Whole training runs (book ch. 6 "Training LLaMA 3 on TPUs", ch. 12): total FLOPs and wall
time at a given MFU, and the smallest slice whose HBM holds a run's state.

- FLOPs: the run's training rows (:func:`symroof.train_ops`, the same rows a one-chip
  ``train_plan`` sums: forward, backward, causal attention, elementwise ops; no
  recompute), in steps of ``batch_tokens`` with one Adam update each (without a batch, the
  rows that grow with the tokens only). The book's model FLOPs, 6 x params x tokens (every
  parameter, the embedding table included, as if it were a matmul; a mixture of experts
  counts its active parameters, k of E experts, ch. 4), are ``model_flops``, and the
  attention core's executed FLOPs (12 L H d_h seq a token: all seq x seq scores) are
  reported beside them, not in them.
- Wall time = model FLOPs / (chips x C x MFU), C the chip's dense peak for ``dtype`` (MFU
  counts model FLOPs, as the book does).
- Memory: :func:`symroof.models.training_memory.train_memory` of the whole model (params,
  grads, master, moments, activations at the batch), over HBM per chip, rounded up to a
  slice that exists (:func:`training_slices`: the power-of-two slices of
  :func:`symroof.parallel.sizing.slices`, then the whole pod).

>>> import symroof as sr
>>> run = sr.training_run("llama-3.1-70b", 15 * 10**12, sr.mesh("tpu-v5p", "16x20x28"),
...                       mfu=0.4)
>>> print(run)
llama-3.1-70b, 15 T tokens: 6.35e+24 FLOPs (attention: 4.83e+23 more at seq 4096)
  on 8960 tpu-v5p at 40% MFU: 44.7 days
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..cost import as_dimension, as_exact
from ..hardware.chip import as_chip
from ..hardware.mesh import Mesh
from ..models.training import ATTENTION_MATMUL_KEYS
from ..models.training_memory import train_memory
from ..models.transformer import Transformer
from ..render import fmt_si
from ..workload import TrainStep
from .inverse import MinSlice, min_chips, training_slices
from .train_rows import rows_at

__all__ = ["TrainingRun", "training_run", "MinSlice", "min_training_slice", "training_slices",
           "mfu"]

_DAY = 86400


def _model(model: Any) -> Any:
    from ..models import model as by_name

    return by_name(model) if isinstance(model, str) else model


@dataclass(frozen=True)
class TrainingRun:
    """A run's FLOPs (its training rows), its model FLOPs (6 P tokens), the attention
    core's FLOPs beside them, and its wall time."""

    model: Any
    tokens: sp.Expr
    chip: Any
    chips: Any
    mfu: sp.Expr
    seq: Any
    dtype: str = "bf16"
    batch_tokens: Any = None

    def _rows(self) -> dict[str, Any]:
        """The rows of one step (of ``batch_tokens``, or of the whole run without one)."""
        return rows_at(self.model, self.seq, "none",
                       (self.batch_tokens or self.tokens) / self.seq)

    @property
    def flops(self) -> sp.Expr:
        """FLOPs of the run as its training rows count them (module docstring)."""
        rows = self._rows()
        if self.batch_tokens is None:
            return sum(c.flops for k, c in rows.items() if not k.startswith("optimizer/"))
        return self.tokens / self.batch_tokens * sum(c.flops for c in rows.values())

    @property
    def model_flops(self) -> sp.Expr:
        """The book's 6 x active params x tokens (what MFU counts)."""
        return 6 * self.model.active_params * self.tokens

    @property
    def attention_flops(self) -> sp.Expr:
        """The attention core's executed FLOPs (its six matmuls, forward and backward)."""
        rows = self._rows()
        steps = 1 if self.batch_tokens is None else self.tokens / self.batch_tokens
        return steps * sum(rows[k].flops for k in ATTENTION_MATMUL_KEYS if k in rows)

    @property
    def seconds(self) -> sp.Expr:
        """Wall time of the model FLOPs at this MFU, seconds (exact)."""
        return self.model_flops / (self.chips * self.chip.peak(self.dtype) * self.mfu)

    @property
    def days(self) -> sp.Expr:
        return self.seconds / _DAY

    def __str__(self) -> str:
        return (f"{self.model.name}, {fmt_si(self.tokens)} tokens: "
                f"{float(self.model_flops):.3g} FLOPs (attention: "
                f"{float(self.attention_flops):.3g} more at seq {self.seq})"
                f"\n  on {self.chips} {self.chip.name} at {float(self.mfu):.0%} MFU: "
                f"{float(self.days):.3g} days")


def training_run(model: Transformer | str, tokens: Any, mesh: Mesh | Any, *, mfu: Any,
                 chips: int | None = None, seq: int = 4096, dtype: str = "bf16",
                 batch_tokens: Any = None) -> TrainingRun:
    """A training run of ``tokens`` on ``mesh`` (or on ``chips`` of a chip) at ``mfu``, in
    steps of ``batch_tokens`` (optional: only ``flops`` reads it, for Adam's updates).

    >>> import symroof as sr
    >>> run = sr.training_run("llama-3.1-70b", 15 * 10**12, "h100", chips=4096, mfu=0.45)
    >>> round(float(run.days), 1)
    40.3
    >>> round(float(run.flops / run.model_flops), 3)     # + causal attention, elementwise
    1.062
    """
    if isinstance(mesh, Mesh):
        if chips is not None:
            raise ValueError("give a mesh or chips=, not both")
        chip, chips = mesh.chip, mesh.n_chips
    else:
        chip = as_chip(mesh)
        if chips is None:
            raise ValueError(f"training_run() on a chip ({chip.name}) needs chips=")
        chips = as_dimension(chips, "chips")
    mfu = as_exact(mfu, "mfu")
    if mfu.is_number and not 0 < mfu <= 1:
        raise ValueError(f"mfu must be in (0, 1], got {mfu}")
    batch = None if batch_tokens is None else as_dimension(batch_tokens, "batch_tokens")
    return TrainingRun(_model(model), as_dimension(tokens, "tokens"), chip, chips, mfu,
                       as_dimension(seq, "seq"), dtype, batch)


def min_training_slice(model: Transformer | str, chip: Any, *,
                       step: TrainStep | None = None, batch_tokens: Any = 0,
                       seq: int = 4096, remat: Any = "full",
                       widths: Mapping[str, Any] | None = None) -> MinSlice:
    """The smallest slice of ``chip`` whose HBM holds params, grads, master and moments
    (and the activations of ``batch_tokens`` under ``remat``, a policy name or n
    checkpoints of width D per layer), everything sharded; a clear error where no slice
    on record holds it (:func:`min_chips` of its bytes, by part). ``remat`` may also be a
    tuple of kept tensors (:mod:`symroof.models.training_memory`). The batch: a
    :class:`~symroof.TrainStep`, or ``batch_tokens`` in sequences of ``seq``. Symbolic where
    the batch is a symbol (the chips a ``ceiling``, no slice chosen).

    >>> import symroof as sr
    >>> print(sr.min_training_slice("llama-3.1-70b", "h100", widths={"grad_bytes": 0}))
    706 GB needs 9 h100 (80 GB each): slice 16 (16 chips)
    """
    m, chip = _model(model), as_chip(chip)
    widths = dict(widths or {})
    if step is not None:
        if batch_tokens:
            raise ValueError("give a TrainStep or batch_tokens=, not both")
        batch_tokens, seq = step.tokens, step.seq
    if batch_tokens:
        B, s = as_dimension(batch_tokens, "batch_tokens"), as_dimension(seq, "seq")
        policy = "full" if isinstance(remat, int) else remat
        mem = train_memory(m, B / s, s, policy, **widths)
        if isinstance(remat, int):
            mem["activations"] = m.act_bytes * m.D * B * remat * m.L
    else:
        mem = train_memory(m, 1, 1, "full", **widths)
        mem["activations"] = sp.Integer(0)
    need = min_chips(mem, chip)
    if need.slice is None and need.chips.is_number and chip.network is not None:
        raise ValueError(f"does not fit: {m.name} needs {fmt_si(need.total, 'B')}, at "
                         f"least {need.chips} {chip.name} chips, more than the largest slice "
                         f"on record ({training_slices(chip)[-1][1]})")
    return need


def mfu(run: TrainingRun, chip_hours: Any) -> sp.Expr:
    """The MFU a run achieved if it took ``chip_hours`` chip-hours: its model FLOPs over
    chip-hours x 3600 x C (the inverse of :func:`training_run`'s wall time), exact.

    >>> import symroof as sr
    >>> run = sr.training_run("llama-3.1-70b", 15 * 10**12, "tpu-v5p", chips=8960, mfu=1)
    >>> round(float(sr.mfu(run, 8960 * 3.8e6 / 3600)), 2)   # ch. 6: 3.8e6 s on the pod
    0.41
    """
    if not isinstance(run, TrainingRun):
        raise TypeError(f"mfu() takes a TrainingRun (sr.training_run(...)), got {run!r}")
    hours = as_exact(chip_hours, "chip_hours")
    if hours.is_number and not hours > 0:
        raise ValueError(f"chip_hours must be positive, got {chip_hours!r}")
    return run.model_flops / (hours * 3600 * run.chip.peak(run.dtype))
