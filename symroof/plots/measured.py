"""The plot of a :class:`symroof.measured.MeasureResult` (what
:func:`symroof.surfaces.measure.measure` returns): the NumPy model's ops, timed, under the
machine's measured roofs (matplotlib's object API, imported only here; no pyplot, so no
backend is switched).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..measured import MeasureResult

__all__ = ["plot_measured", "measured_figure"]

_DTYPE_COLOR = {"fp32": "C1", "fp64": "C2"}


def _clusters(points: list[tuple[float, float, str, str]]) -> list[list]:
    """Points of one colour within 0.25 decades of a cluster's first point (in both axes)
    join it (a label has its points' colour: an overhead-bound op is never named in a
    bandwidth-bound one's label)."""
    clusters: list[list] = []
    for p in sorted(points, key=lambda p: (p[0], p[1])):
        for c in clusters:
            if c[0][3] == p[3] and max(abs(np.log10(c[0][0] / p[0])),
                                       abs(np.log10(c[0][1] / p[1]))) < 0.25:
                c.append(p)
                break
        else:
            clusters.append([p])
    return clusters


def _place(fig: Any, ax: Any, cluster: list, boxes: list, labels: list,
           roofs: list) -> None:
    """Label a cluster of ops (names stacked) right of its rightmost point or left of its
    leftmost, at its middle, or a few lines up or down with a leader line: the first place
    inside the axes that overlaps no marker or roof and no other label (``boxes``), else the
    first that overlaps no roof and no other label (``roofs``: a label may cover a marker,
    never cross a line), else the first that overlaps no other label (``labels``), else
    right beside the points; a leader line crosses no label, and later labels keep off it."""
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    middle = float(np.exp(np.mean([np.log(p[1]) for p in cluster])))
    ends = {"left": max(p[0] for p in cluster), "right": min(p[0] for p in cluster)}
    names, color = "\n".join(p[2] for p in cluster), cluster[0][3]
    probe = ax.text(0, 0, names, fontsize=6)  # its size, measured once
    size = probe.get_window_extent(renderer)
    w, h, pt = size.width, size.height, fig.dpi / 72
    probe.remove()
    anchors = {ha: ax.transData.transform((ends[ha], middle)) for ha in ends}
    # (side, points out, points up): beside the points first, then up or down, then
    # further out (a label moved off its points has a leader line)
    places = [(ha, dx, dy) for dx in (5, 25, 50) for k in range(16)
              for dy in ((0,) if k == 0 else (4 * k, -4 * k)) for ha in ("left", "right")]

    def box(ha: str, dx: int, dy: int) -> tuple[float, float, float, float]:
        x, y = anchors[ha]
        x0 = x + dx * pt if ha == "left" else x - dx * pt - w
        y0 = y + dy * pt - h / 2
        return x0, y0, x0 + w, y0 + h

    def leader(ha: str, dx: int, dy: int) -> list[tuple[float, float, float, float]]:
        """Small boxes every pixel or two along the leader line of a label moved off its
        points (none beside them), from the points to the middle of the label's near edge."""
        if (dx, dy) == (5, 0):
            return []
        (x, y), (x0, y0, x1, _) = anchors[ha], box(ha, dx, dy)
        ends = np.array([(x, y), (x0 if ha == "left" else x1, y0 + h / 2)])
        length = float(np.hypot(*(ends[1] - ends[0])))
        start = min(0.5, 4 / max(length, 1e-9))  # 4 pixels off the points (a label may
        # sit over its neighbours' markers, and a leader out of them must stay possible)
        at = [ends[0] + t * (ends[1] - ends[0])
              for t in np.linspace(start, 1.0, int(length // 1.5) + 2)]
        return [(px - 1, py - 1, px + 1, py + 1) for px, py in at]

    def clear(rect: tuple, avoid: list, pad_x: float = 0.0, pad_y: float = 0.0) -> bool:
        x0, y0, x1, y1 = rect
        b = np.asarray(avoid or [(0, 0, 0, 0)])
        return not np.any((b[:, 0] < x1 + pad_x) & (b[:, 2] > x0 - pad_x)
                          & (b[:, 1] < y1 + pad_y) & (b[:, 3] > y0 - pad_y))

    def free(ha: str, dx: int, dy: int, avoid: list) -> bool:
        x0, y0, x1, y1 = box(ha, dx, dy)
        if not (frame.x0 <= x0 and x1 <= frame.x1 and frame.y0 <= y0 and y1 <= frame.y1):
            return False  # inside the axes, off ``avoid``, and its leader through no label
        return clear((x0, y0, x1, y1), avoid, 0.02 * w, 0.05 * h) and all(
            clear(seg, labels) for seg in leader(ha, dx, dy))

    # off every marker, roof and label; else off every roof and label; else off every
    # label; else right beside the points
    ha, dx, dy = next((p for p in places if free(*p, boxes)), None) or next(
        (p for p in places if free(*p, roofs)), None) or next(
        (p for p in places if free(*p, labels)), ("left", 5, 0))
    ax.annotate(names, (ends[ha], middle), xytext=(dx if ha == "left" else -dx, dy),
                textcoords="offset points", fontsize=6, ha=ha, va="center", color=color,
                arrowprops=None if (dx, dy) == (5, 0) else {
                    "arrowstyle": "-", "lw": 0.4, "color": color, "shrinkA": 0, "shrinkB": 3,
                    # from the middle of the label's near edge, as ``leader`` checked it
                    "relpos": (0, 0.5) if ha == "left" else (1, 0.5)})
    for avoid in (boxes, labels, roofs):  # later labels keep off this one and its leader
        avoid += [box(ha, dx, dy), *leader(ha, dx, dy)]


def plot_measured(result: MeasureResult, path: str) -> str:
    """Save :func:`measured_figure` as ``path`` (PNG or SVG by the suffix); return ``path``."""
    fig = measured_figure(result)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path


def measured_figure(result: MeasureResult):
    """Measured points (achieved GFLOP/s against intensity) under the measured roofs; ops
    with no FLOPs (embed, kv_write) have no place on it. Each cluster of nearby ops carries
    one label beside it, its names stacked, placed where it overlaps no other label and no
    marker (``_place``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazily; no pyplot
    from matplotlib.figure import Figure

    from .roofline import plain_log_ticks

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
    sizes = ", ".join(dict.fromkeys(op.key.split("n=")[1] for op in result.matmuls))
    for op in points:
        rate, intensity = op.flops / op.measured, op.flops / op.bytes
        if op.key.startswith("matmul"):  # standalone: one legend entry per dtype, no label
            dtype = op.key.split()[1]
            ax.scatter([intensity], [rate], marker="s", s=22, color=_DTYPE_COLOR[dtype],
                       label=f"standalone {dtype} matmuls (n = {sizes})")
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
    marks = [(op.flops / op.bytes, op.flops / op.measured) for op in points]
    # labels keep off every marker (x0, y0, x1, y1 in pixels) and off the roofs (a small
    # box every pixel or two along each)
    boxes: list = [(px - 5, py - 5, px + 5, py + 5) for px, py in ax.transData.transform(marks)]
    roofs: list = []
    for line in ax.get_lines():
        xy = ax.transData.transform(line.get_xydata())
        n = int(np.hypot(*np.diff(xy, axis=0).T).sum() // 1.5) + 2
        t = np.linspace(0, len(xy) - 1, n)
        px, py = np.interp(t, np.arange(len(xy)), xy[:, 0]), np.interp(t, np.arange(len(xy)),
                                                                      xy[:, 1])
        roofs += list(zip(px - 1.5, py - 1.5, px + 1.5, py + 1.5))
    boxes += roofs
    placed: list = []  # the labels' boxes
    for c in _clusters(labelled):
        _place(fig, ax, c, boxes, placed, roofs)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))  # one entry per label
    ax.legend(unique.values(), unique.keys(), loc="upper left", bbox_to_anchor=(1.01, 1),
              fontsize=7)
    return fig
