"""The plot of :func:`symroof.surfaces.measure.measure`: the NumPy model's ops, timed, under the
machine's measured roofs (matplotlib's object API, imported only here; no pyplot, so no
backend is switched).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..surfaces.measure import MeasureResult

__all__ = ["plot_measured"]

_DTYPE_COLOR = {"fp32": "C1", "fp64": "C2"}


def plot_measured(result: MeasureResult, path: str) -> str:
    """Measured points (achieved FLOP/s against intensity) under the measured roofs; ops
    with no FLOPs (embed, kv_write) have no place on it. Returns ``path``."""
    from matplotlib.figure import Figure  # lazily; no pyplot, so no backend is switched

    points = [op for op in [*result.matmuls, *result.ops] if op.flops > 0 and op.bytes > 0]
    x, W = np.logspace(-2, 4, 200), float(result.chip.hbm_bw)
    ax = (fig := Figure(figsize=(8, 5))).subplots()
    for dtype, style in (("fp64", "-"), ("fp32", "--")):
        C = float(result.chip.peak(dtype))
        ax.plot(x, np.minimum(C, W * x), style, color="k", label=f"{dtype} roof")
    clusters: list[list[tuple[float, float, str]]] = []  # nearby ops share one label
    for op in points:
        rate, intensity = op.flops / op.measured, op.flops / op.bytes
        if op.key.startswith("matmul"):  # standalone: one legend entry per dtype, no label
            dtype = op.key.split()[1]
            ax.scatter([intensity], [rate], marker="s", s=22, color=_DTYPE_COLOR[dtype],
                       label=f"standalone {dtype} matmuls (n = 512, 1024, 2048)")
            continue
        ax.scatter([intensity], [rate], s=18, color="C3" if op.bound == "overhead" else "C0")
        for c in clusters:
            if max(abs(np.log10(c[0][0] / intensity)), abs(np.log10(c[0][1] / rate))) < 0.25:
                c.append((intensity, rate, op.key))
                break
        else:
            clusters.append([(intensity, rate, op.key)])
    for c in clusters:
        ax.annotate("\n".join(k for _, _, k in c), (c[0][0], c[0][1]), fontsize=6,
                    xytext=(4, -4), textcoords="offset points", va="top")
    overhead = any(op.bound == "overhead" for op in points)
    ax.set(xscale="log", yscale="log", xlabel="intensity (FLOP / byte)",
           ylabel="achieved FLOP/s", title="the NumPy model's ops (labelled) under this machine's "
           "measured roofs" + (" (red: overhead-bound)" if overhead else ""))
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))  # one entry per label
    ax.legend(unique.values(), unique.keys(), loc="lower right", fontsize=7)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path
