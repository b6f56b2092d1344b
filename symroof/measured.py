"""Measured time against the roofline: the records a measurement of this machine returns.

``symroof measure`` (:mod:`symroof.surfaces.measure`, NumPy on this CPU, and
:mod:`symroof.surfaces.measure_jax`, JAX on its device) times ops and compares each with
``max(FLOPs / C, bytes / W) + t_overhead``; the plot of :mod:`symroof.plots.measured` draws
the result. The records they share live here, below all three: the sizes measured, one op's
timing (``OpTiming``) and a whole measurement (``MeasureResult``).

>>> t = OpTiming("matmul fp64 n=64", flops=2 * 64**3, bytes=3 * 64**2 * 8, measured=4e-5,
...              t_math=1e-5, t_mem=2e-5, t_overhead=0.0)
>>> t.roofline, t.bound, t.ratio
(2e-05, 'memory', 2.0)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .analysis import time as roofline_time
from .cost import Cost
from .hardware import Chip
from .numeric import Config
from .numeric.config import TINY

__all__ = ["SIZES", "OpTiming", "MeasureResult", "blas_threads"]

MID = Config(D=1024, F=2816, L=4, H=16, G=4, d_h=64, V=8192, name="mid")

#: size -> matmul sizes n (n x n @ n x n), bytes copied, model, batch, tokens, repetitions
SIZES: dict[str, dict[str, Any]] = {
    "tiny": dict(matmuls=(64, 128), copy_bytes=2**22, cfg=TINY, batch=2, tokens=16, repeats=3),
    "mid": dict(matmuls=(512, 1024, 2048), copy_bytes=2**28, cfg=MID, batch=1, tokens=128,
                repeats=7),  # one 128-token prompt: 128-row matmuls, most of the time
}


def _round3(x: float) -> int:  # a measured figure, 3 significant digits (the noise is larger)
    return max(1, int(float(f"{x:.3g}")))


@dataclass(frozen=True)
class OpTiming:
    """One timed piece of work: counted FLOPs and bytes, measured and predicted seconds."""

    key: str
    flops: int
    bytes: int
    measured: float
    t_math: float
    t_mem: float
    t_overhead: float

    @property
    def roofline(self) -> float:  # max(FLOPs / C, bytes / W)
        return max(self.t_math, self.t_mem)

    @property
    def predicted(self) -> float:  # roofline + per-call overhead
        return self.roofline + self.t_overhead

    @property
    def ratio(self) -> float:  # measured / predicted: 1 on the model, > 1 slower
        return self.measured / self.predicted

    @property
    def bound(self) -> str:  # the largest term: compute, memory or overhead
        terms = {"compute": self.t_math, "memory": self.t_mem, "overhead": self.t_overhead}
        return max(terms, key=terms.__getitem__)


def _timing(key: str, cost: Cost, measured: float, chip: Chip, overhead: float,
            dtype: str) -> OpTiming:
    t = roofline_time(cost, chip, dtype)  # exact; hardware substituted here, not in formulas
    return OpTiming(key, int(cost.flops), int(cost.bytes), measured, float(t.t_math),
                    float(t.t_mem), overhead)


@dataclass(frozen=True)
class MeasureResult:
    """Roofs, the chip record, the per-op and matmul timings, and the whole forward."""

    size: str
    chip: Chip
    t_call: float
    matmuls: list[OpTiming]
    ops: list[OpTiming]
    forward_measured: float
    forward_overhead: float
    plot_path: str | None

    @property
    def forward_predicted(self) -> float:  # the ops' rooflines + the miniature's forward
        return sum(op.roofline for op in self.ops) + self.forward_overhead

    @property
    def forward_ratio(self) -> float:  # measured / predicted, whole uncounted forward
        return self.forward_measured / self.forward_predicted

    def roofs_text(self) -> str:
        c = self.chip
        return (f"roofs of this machine ({self.size}): fp32 {float(c.peak('fp32')) / 1e9:.1f} "
                f"GFLOP/s, fp64 {float(c.peak('fp64')) / 1e9:.1f} GFLOP/s, memory "
                f"{float(c.hbm_bw) / 1e9:.1f} GB/s, per-call overhead {self.t_call * 1e9:.0f} ns; "
                f"{blas_threads()}")

    def table(self) -> str:
        head = (f"{'op':<22}{'GFLOP':>9}{'MB':>9}{'measured':>11}{'roofline':>11}"
                f"{'overhead':>11}{'predicted':>11}{'ratio':>7}  bound")
        lines = [head, "-" * len(head)]
        for op in [*self.matmuls, *self.ops]:
            lines.append(f"{op.key:<22}{op.flops / 1e9:>9.3f}{op.bytes / 1e6:>9.2f}"
                         f"{_ms(op.measured)}{_ms(op.roofline)}{_ms(op.t_overhead)}"
                         f"{_ms(op.predicted)}{op.ratio:>7.2f}  {op.bound}")
        rooflines = sum(op.roofline for op in self.ops)
        lines += ["-" * len(head), f"{'forward (uncounted)':<40}{_ms(self.forward_measured)}"
                  f"{_ms(rooflines)}{_ms(self.forward_overhead)}{_ms(self.forward_predicted)}"
                  f"{self.forward_ratio:>7.2f}"]
        return "\n".join(lines)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:>9.3f}ms"


_PINNED = "SYMROOF_MEASURE_THREADS"  # set in the child: its threads were pinned at start


def blas_threads() -> str:
    """How many BLAS threads this process's timings use, as the sources record it.

    >>> blas_threads().startswith("BLAS threads")
    True
    """
    pinned = os.environ.get(_PINNED)
    return f"BLAS threads pinned to {pinned}" if pinned else "BLAS threads not pinned"
