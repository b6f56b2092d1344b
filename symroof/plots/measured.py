"""The plot of a :class:`symroof.measured.MeasureResult` (what
:func:`symroof.surfaces.measure.measure` returns): the NumPy model's ops, timed, under the
machine's measured roofs (matplotlib's object API, imported only here; no pyplot, so no
backend is switched).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..measured import MeasureResult

__all__ = ["plot_measured", "measured_figure"]

_DTYPE_COLOR = {"fp32": "C1", "fp64": "C2"}


def _clusters(points: list[tuple[float, float, str, str]]) -> list[list]:
    """Points within 0.25 decades of a cluster's first point (in both axes) join it."""
    clusters: list[list] = []
    for p in sorted(points, key=lambda p: (p[0], p[1])):
        for c in clusters:
            if max(abs(np.log10(c[0][0] / p[0])), abs(np.log10(c[0][1] / p[1]))) < 0.25:
                c.append(p)
                break
        else:
            clusters.append([p])
    return clusters


def plot_measured(result: MeasureResult, path: str) -> str:
    """Save :func:`measured_figure` as ``path`` (PNG or SVG by the suffix); return ``path``."""
    fig = measured_figure(result)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path


def measured_figure(result: MeasureResult):
    """Measured points (achieved GFLOP/s against intensity) under the measured roofs; ops
    with no FLOPs (embed, kv_write) have no place on it. Each cluster of nearby ops carries
    one label, right beside it, its names stacked; labels move apart (a few lines at most)
    until none overlaps another or a marker."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazily; no pyplot
    from matplotlib.figure import Figure

    from .roofline import plain_log_ticks, unclash

    points = [op for op in [*result.matmuls, *result.ops] if op.flops > 0 and op.bytes > 0]
    x, W = np.logspace(-2, 4, 200), float(result.chip.hbm_bw)
    fig = Figure(figsize=(8, 5))
    FigureCanvasAgg(fig)  # a renderer to measure the labels with
    ax = fig.subplots()
    for dtype, style in (("fp64", "-"), ("fp32", "--")):
        C = float(result.chip.peak(dtype))
        ax.plot(x, np.minimum(C, W * x), style, color="k",
                label=f"{dtype} roof: {C / 1e9:,.1f} GFLOP/s, {W / 1e9:,.1f} GB/s")
    labelled = []
    for op in points:
        rate, intensity = op.flops / op.measured, op.flops / op.bytes
        if op.key.startswith("matmul"):  # standalone: one legend entry per dtype, no label
            dtype = op.key.split()[1]
            ax.scatter([intensity], [rate], marker="s", s=22, color=_DTYPE_COLOR[dtype],
                       label=f"standalone {dtype} matmuls (n = 512, 1024, 2048)")
            continue
        color = "C3" if op.bound == "overhead" else "C0"
        ax.scatter([intensity], [rate], s=18, color=color)
        labelled.append((intensity, rate, op.key, color))
    ax.set(xscale="log", yscale="log", xlabel="intensity (FLOP / byte)",
           ylabel="achieved GFLOP/s")
    ax.set_title("The NumPy model's ops under this machine's measured roofs"
                 + (" (red: overhead-bound)" if any(op.bound == "overhead" for op in points)
                    else ""), fontsize=10)
    plain_log_ticks(ax.xaxis)
    plain_log_ticks(ax.yaxis, 1e9)
    from matplotlib.transforms import Bbox

    marks = [(op.flops / op.bytes, op.flops / op.measured) for op in points]
    boxes: list = [Bbox.from_bounds(px - 4, py - 4, 8, 8)  # labels keep off every marker
                   for px, py in ax.transData.transform(marks)]
    for c in _clusters(labelled):  # right of the cluster's rightmost point, at its middle
        right = max(p[0] for p in c)
        middle = float(np.exp(np.mean([np.log(p[1]) for p in c])))
        text = ax.annotate("\n".join(p[2] for p in c), (right, middle), fontsize=6,
                           xytext=(5, 0), textcoords="offset points", va="center",
                           color=c[0][3])
        unclash(fig, text, boxes, sign=0, step=3, tries=15)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))  # one entry per label
    ax.legend(unique.values(), unique.keys(), loc="upper left", bbox_to_anchor=(1.01, 1),
              fontsize=7)
    return fig
