"""Roofline charts with matplotlib (imported only when a plot is made).

Every function returns the matplotlib ``Figure`` (notebooks show it) and, given ``path``,
saves it (PNG or SVG by the suffix).

>>> import symroof as sr
>>> from symroof.symbols import B, D, F
>>> fig = roofline_plot(sr.chip("tpu-v5e"),
...                     {"matmul B=64": sr.matmul(64, 4096, 4096)})
>>> fig.axes[0].get_xscale()
'log'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["roofline_plot", "batch_plot", "plain_log_ticks", "unclash", "place_label"]


def _pyplot():
    import matplotlib

    # the backend as chosen so far, without resolving an automatic one (get_backend() would
    # try the GUI backends first: a third of a second, for a figure that is only saved)
    chosen = getattr(matplotlib.rcParams, "_get_backend_or_none", matplotlib.get_backend)()
    if (chosen or "").lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _ticker():
    from matplotlib import ticker

    return ticker


def _intensity(value: Any) -> float:
    intensity = value.intensity if hasattr(value, "intensity") else value
    try:
        return float(intensity)
    except TypeError:
        raise ValueError(f"cannot place a symbolic intensity on a plot: {intensity} "
                         "(substitute numbers first)") from None


def _tick(v: float) -> str:
    """A tick label a reader reads at once: 0.01, 0.5, 20, 1,000, 20,000."""
    if v >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def plain_log_ticks(axis: Any, scale: float = 1.0) -> None:
    """Label a log axis with plain numbers divided by ``scale`` (1e12 for TFLOP/s): 0.1, 1, 10,
    100, 1,000 instead of 10^-1 ... 10^3; 1, 2, 5 per decade on a narrow axis."""
    from matplotlib import ticker

    lo, hi = sorted(axis.get_view_interval())
    subs = (1.0, 2.0, 5.0) if hi / max(lo, 1e-300) < 1e4 else (1.0,)
    axis.set_major_locator(ticker.LogLocator(subs=subs))
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: _tick(v / scale)))
    axis.set_minor_formatter(ticker.NullFormatter())


def unclash(fig: Any, label: Any, boxes: list, sign: int = 1, step: float = 6,
            tries: int = 40) -> None:
    """Move the annotation ``label`` up (``sign`` 1), down (-1) or to the nearer side of
    either (0) in steps of ``step`` points until it overlaps no box in ``boxes`` (after
    ``tries`` steps without a free place it stays where it was), then add its box to them."""
    renderer = fig.canvas.get_renderer()
    dx, dy = label.xyann
    moves = [k * step * sign for k in range(tries)] if sign else \
        [(k + 1) // 2 * step * (-1) ** k for k in range(tries)]  # 0, -1, +1, -2, +2, ...
    for move in moves:
        label.xyann = (dx, dy + move)
        box = label.get_window_extent(renderer).expanded(1.02, 1.05)
        if not any(box.overlaps(other) for other in boxes):
            break
    else:
        label.xyann = (dx, dy + moves[0])
    boxes.append(label.get_window_extent(renderer))


def place_label(fig: Any, ax: Any, text: str, xy: tuple, offset: tuple, drops: Sequence,
                boxes: list, sign: int = -1, **style: Any) -> Any:
    """Annotate ``text`` at the point ``xy`` (data), ``offset`` points from it (``(6, -12)``:
    below and right, ``sign`` -1; mirrored above and left, ``sign`` 1), off every ridge's
    drop line (``drops``: ``(x, y_top)`` in data, drawn from the axis up to ``y_top``): a
    line close to the label's inner edge pushes it outwards past the line (up to ``_PUSH``
    pixels), a line further in sends it to the mirrored side, the roof's other side; then
    :func:`unclash` moves it off the labels already placed (``boxes``).

    >>> plt = _pyplot()
    >>> fig, ax = plt.subplots()
    >>> _ = ax.set(xscale="log", yscale="log", xlim=(1, 1e4), ylim=(1, 1e4))
    >>> _ = ax.plot([240, 240], [1, 200], ls=":")   # a ridge's line up to its knee
    >>> far = place_label(fig, ax, "a long op name", (30, 30), (6, -12), [(240, 200)], [])
    >>> far.get_ha(), far.xyann   # across the line below: above and left instead
    ('right', (-6, 12))
    >>> near = place_label(fig, ax, "B=256", (250, 200), (6, -12), [(300, 1e3)], [])
    >>> near.get_ha(), bool(near.xyann[0] > 6)   # the line beside it: pushed right, past it
    ('left', True)
    >>> plt.close(fig)
    """
    renderer = fig.canvas.get_renderer()
    tops = [ax.transData.transform(drop) for drop in drops]
    (dx, dy), first = offset, sign
    for _ in range(3):
        label = ax.annotate(text, xy, textcoords="offset points", xytext=(-dx * sign, dy * -sign),
                            ha="left" if sign < 0 else "right",
                            va="top" if sign < 0 else "bottom", **style)
        box = label.get_window_extent(renderer)
        across = [x for x, y in tops if box.x0 < x < box.x1 and box.y0 < y]
        if not across or sign != first:
            break
        label.remove()
        push = max(across) - box.x0 + 3 if sign < 0 else box.x1 - min(across) + 3
        if dx == offset[0] and push < _PUSH:
            dx += push * 72 / fig.dpi
        else:
            (dx, dy), sign = offset, -first
    unclash(fig, label, boxes, sign)
    return label


_PUSH = 30  # pixels: how far a label moves right to clear a drop line beside its point


def roofline_plot(chips: Any, points: Mapping[str, Any] | None = None, *, dtype: str = "bf16",
                  network: bool = False, against: Any = None, path: str | None = None,
                  title: str | None = None, roof: str = "hbm"):
    """Log-log roofline: attainable TFLOP/s against arithmetic intensity.

    ``chips`` is a chip or a sequence of chips, each drawn in one colour: its HBM roof (and,
    if ``network``, its per-link network roof, dashed), its ridge marked and labelled, its
    peak and ridge in the legend. ``points`` maps labels to Costs (or intensities); each sits
    on the HBM roof of one chip, ``against`` (a chip or its name; default the first), and the
    legend says which. ``roof`` draws another level instead of HBM (``hardware.internals.
    ROOFS``: "vmem", "l2", "vpu", "pcie"), as ``sr.time(..., roof=)`` reads it.

    >>> import symroof as sr
    >>> fig = roofline_plot([sr.chip("h100"), sr.chip("tpu-v5e")], {"B=64": 64.0},
    ...                     against="tpu-v5e")
    >>> [t.get_text() for t in fig.legends[0].get_texts()][-1]
    'ops, on the tpu-v5e roof'
    >>> fig = roofline_plot(sr.chip("tpu-v5e"), dtype="int8", roof="vmem")
    >>> fig.legends[0].get_texts()[0].get_text()
    'tpu-v5e VMEM roof: peak 394 TFLOP/s, ridge 22 FLOP/B'
    """
    plt = _pyplot()
    from ..hardware import as_chip
    from ..hardware.internals import roof as roof_of

    chips = [as_chip(c) for c in
             (chips if isinstance(chips, Sequence) and not isinstance(chips, str) else [chips])]
    levels = [roof_of(c, roof, dtype) for c in chips]  # (peak, bandwidth) of the roof drawn
    for c in chips:
        if not c.critical_intensity(dtype).is_number:
            raise ValueError(f"roofline_plot needs chips with numbers; {c.name} is symbolic")
    names = [c.name for c in chips]
    ref = 0 if against is None else names.index(as_chip(against).name) \
        if as_chip(against).name in names else None
    if ref is None:
        raise ValueError(f"against={against!r} is not one of the chips plotted: {names}")
    points = dict(points or {})
    intensities = [_intensity(v) for v in points.values()]
    ridges = [float(peak / bw) for peak, bw in levels]
    lo = min([0.1, *intensities, *ridges]) / 2
    hi = max([1e4, *intensities, *ridges]) * 2
    x = np.logspace(np.log10(lo), np.log10(hi), 400)
    fig, ax = plt.subplots(figsize=(7.5, 5.2 + 0.2 * len(chips) * (1 + network)),
                           layout="constrained")
    for i, (c, ridge, (top, feed)) in enumerate(zip(chips, ridges, levels)):
        colour, peak = f"C{i}", float(top)
        ax.plot(x, np.minimum(peak, x * float(feed)), color=colour, lw=1.6,
                label=f"{c.name} {roof.upper()} roof: peak {_tick(peak / 1e12)} TFLOP/s, "
                      f"ridge {ridge:,.0f} FLOP/B")
        if network:
            ax.plot(x, np.minimum(peak, x * float(c.link_bw)), color=colour, lw=1, ls="--",
                    label=f"{c.name} network-link roof")
        ax.plot([ridge], [peak], "D", color=colour, ms=4)
        ax.annotate(f"{ridge:,.0f}", (ridge, peak), textcoords="offset points", xytext=(0, 4),
                    ha="center", va="bottom", fontsize=7, color=colour)
    peak_ref, bw_ref = (float(v) for v in levels[ref])
    ax.set(xscale="log", yscale="log", xlim=(lo, hi))
    ax.set_ylim(ax.get_ylim())  # the roofs' limits, kept: the labels are placed in them
    drops = [(ridge, float(top)) for ridge, (top, _) in zip(ridges, levels)]
    for i, (ridge, top) in enumerate(drops):  # each ridge's line from the axis to its knee
        ax.plot([ridge, ridge], [ax.get_ylim()[0], top], ls=":", lw=0.8, color=f"C{i}")
    boxes: list = []
    for n, ((label, _), i) in enumerate(zip(points.items(), intensities)):
        y = min(peak_ref, i * bw_ref)
        ax.plot([i], [y], "o", ms=6, color=f"C{ref}", mec="k", zorder=3,
                label=f"ops, on the {chips[ref].name} roof" if n == 0 else None)
        place_label(fig, ax, label, (i, y), (6, -12), drops, boxes, fontsize=8)
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), xlabel="arithmetic intensity (FLOP / byte)",
           ylabel=f"attainable {dtype} TFLOP/s")
    plain_log_ticks(ax.xaxis)
    plain_log_ticks(ax.yaxis, 1e12)
    ax.set_title(title or ("Roofline" if len(chips) == 1 else "Rooflines: "
                           + ", ".join(names) + " (ridges marked)"), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    fig.legend(fontsize=7, loc="outside lower center", ncol=2)  # below: the roofs stay clear
    if path:
        fig.savefig(path, dpi=120)
    return fig


def batch_plot(chip: Any, widths: Sequence[int] = (4096, 1024), *, batches: Any = None,
               dtype: str = "bf16", x_bytes: int = 2, w_bytes: int = 1,
               path: str | None = None):
    """Attainable FLOP/s of X[B,D] @ W[D,F] against B, for each D = F in ``widths``, with
    exact bytes (the book's problem 3: bf16 activations, int8 weights by default).

    >>> import symroof as sr
    >>> fig = batch_plot(sr.chip("tpu-v5e"), (4096,), batches=range(1, 9))
    >>> len(fig.axes[0].lines)
    1
    """
    from ..analysis import time as roof_time
    from ..evaluate import evaluate
    from ..hardware import as_chip
    from ..ops import matmul
    from ..symbols import B

    chip = as_chip(chip)
    plt = _pyplot()
    bs = np.arange(1, 512) if batches is None else np.asarray(list(batches))
    fig, ax = plt.subplots(figsize=(8, 4))
    for width in widths:
        cost = matmul(B, width, width, x_bytes=x_bytes, w_bytes=w_bytes)
        bound = roof_time(cost, chip, dtype)
        t, flops = (evaluate(x, B=bs.astype(float)) for x in (bound.lower, cost.flops))
        ax.plot(bs, flops / t, label=f"D = F = {width}")
    peak = float(chip.peak(dtype))
    ax.set_xlabel("batch size B")
    ax.set_ylabel(f"attainable {dtype} TFLOP/s")
    ax.yaxis.set_major_formatter(_ticker().FuncFormatter(lambda v, _: _tick(v / 1e12)))
    ax.set_ylim(0, peak * 1.08)
    ax.set_title(f"X[B,D] · W[D,F] on {chip.name} (peak {_tick(peak / 1e12)} TFLOP/s): "
                 f"{x_bytes}-byte activations, {w_bytes}-byte weights", fontsize=10)
    ax.grid(True)
    ax.legend()
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig
