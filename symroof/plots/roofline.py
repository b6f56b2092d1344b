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

__all__ = ["roofline_plot", "batch_plot"]


def _pyplot():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _intensity(value: Any) -> float:
    intensity = value.intensity if hasattr(value, "intensity") else value
    try:
        return float(intensity)
    except TypeError:
        raise ValueError(f"cannot place a symbolic intensity on a plot: {intensity} "
                         "(substitute numbers first)") from None


def roofline_plot(chips: Any, points: Mapping[str, Any] | None = None, *, dtype: str = "bf16",
                  network: bool = False, path: str | None = None, title: str | None = None):
    """Log-log roofline: attainable FLOP/s against arithmetic intensity.

    ``chips`` is a chip or a sequence of chips (one roof per bandwidth: HBM, and the
    per-link network if ``network``). ``points`` maps labels to Costs (or intensities) and
    places each on the lowest roof at its intensity.
    """
    plt = _pyplot()
    from ..hardware import as_chip

    chips = [as_chip(c) for c in
             (chips if isinstance(chips, Sequence) and not isinstance(chips, str) else [chips])]
    for c in chips:
        if not c.critical_intensity(dtype).is_number:
            raise ValueError(f"roofline_plot needs chips with numbers; {c.name} is symbolic")
    points = dict(points or {})
    intensities = [_intensity(v) for v in points.values()]
    ridges = [float(c.critical_intensity(dtype)) for c in chips]
    lo = min([0.1, *intensities, *ridges]) / 2
    hi = max([1e4, *intensities, *ridges]) * 2
    x = np.logspace(np.log10(lo), np.log10(hi), 400)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for c in chips:
        peak = float(c.peak(dtype))
        roofs = [("HBM", float(c.hbm_bw))]
        if network:
            roofs.append(("network link", float(c.link_bw)))
        for label, bw in roofs:
            ax.plot(x, np.minimum(peak, x * bw), label=f"{c.name} {label} ({dtype})")
        ax.axvline(float(c.critical_intensity(dtype)), ls=":", lw=0.8, color="grey")
    low_peak = min(float(c.peak(dtype)) for c in chips)
    low_bw = min(float(c.hbm_bw) for c in chips)
    for (label, _), i in zip(points.items(), intensities):
        y = min(low_peak, i * low_bw)
        ax.plot([i], [y], "o", ms=5)
        ax.annotate(label, (i, y), textcoords="offset points", xytext=(4, -12), fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("attainable FLOP/s")
    ax.set_title(title or "Roofline")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
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
    import sympy as sp

    from ..analysis import time as roof_time
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
        t = sp.lambdify(B, bound.lower, "numpy")(bs.astype(float))
        flops = sp.lambdify(B, cost.flops, "numpy")(bs.astype(float))
        ax.plot(bs, flops / t, label=f"F=D={width}")
    ax.set_xlabel("batch size B")
    ax.set_ylabel(f"attainable {dtype} FLOP/s on {chip.name}")
    ax.set_title(f"X[B,D] @ W[D,F] on {chip.name}: {x_bytes}-byte activations, {w_bytes}-byte "
                 "weights", fontsize=10)
    ax.grid(True)
    ax.legend()
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig
